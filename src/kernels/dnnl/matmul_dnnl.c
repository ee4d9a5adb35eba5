/* Matrix product through oneDNN's matmul (see matmul_dnnl.h). The primitive, its memory
 * objects, a stream and the reordered weights are made once per plan; run only binds pointers
 * and executes (bf16: a reorder of A into the workspace first). Which shapes go to oneDNN is
 * the measured table below (pvk_dnnl_matmul_pick). */
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/dnnl/dnnl_engine.h"

#include <stdlib.h>
#include <string.h>

#ifdef PV_HAVE_DNNL
#include <stdio.h>

/* The measured table (bench/gemm_bench.c: oneDNN and gemm_packed rows in the same run, against
 * the same peak lines; 1-thread GFLOP/s per busy core in CPU time, the figure a shared 2-vCPU
 * box disturbs least; 2-vCPU Xeon with AVX512_BF16 + AMX, load average 2-4 from other jobs).
 * The first row that matches decides; no match: gemm_packed. */
typedef struct pick_rule {
    pvc_precision precision;
    pvc_isa       min_isa;   /* matches when pvc_isa_selected() >= this */
    int64_t       max_k;     /* ... and K <= max_k (0: any K) */
    int64_t       min_k;     /* ... and K >= min_k */
    bool          unshared;  /* ... and the weights are not shared by several plans */
    bool          dnnl;
    const char   *why;       /* the measurement behind the row */
} pick_rule;

static const pick_rule rules[] = {
    { PVC_PREC_BF16, PVC_ISA_AMX, 0, 0, false, true,
      "bf16 on AMX tiles (brg:avx512_core_amx), 1 thread, load 3-4: 192x3840x1280 643-934, "
      "192x1280x1280 324-931, 192x5120x1280 298, 192x1280x5120 282-616, 500x256x128 359 vs the "
      "vdpbf16ps kernel 67-79, 59-70, 45, 45-81, 57 and fp32 packed 65-145" },
    { PVC_PREC_BF16, PVC_ISA_AVX512_BF16, 0, 0, false, false,
      "bf16 without AMX (PERCEIVE_ISA=avx512_bf16, brg:avx512_core_bf16), 1 thread, load 3.7: 80, 72, "
      "75, 83 vs the own vdpbf16ps kernel 79, 70, 81, 81 (192x3840x1280, 192x1280x1280, "
      "192x1280x5120, 500x256x128): both ~94% of the vdpbf16ps peak, a tie: own kernel" },
    { PVC_PREC_FP32, PVC_ISA_AVX512, 256, 0, false, true,
      "fp32 short K (the BEVFusion decoder FFN), brg:avx512_core, 1 thread, same run, load 3.3-4.4: "
      "500x256x128 125 vs packed avx512_12x32 88, 500x128x256 100 vs 82" },
    { PVC_PREC_FP32, PVC_ISA_AVX512, 0, 4096, true, true,
      "fp32 long K (ViT-H MLP-down 192x1280x5120), brg:avx512_core vs packed avx512_12x32, 2 threads, "
      "Zen 5, 4 alternating rounds: 81.5-84.5 vs 68.5-79.3 % of the FMA peak; vit4's four fc2 "
      "MatMuls (PERCEIVE_PROFILE=nodes, 4 alternating runs) 24.7-31.6 vs 32.2-47.7 ms; the Xeon "
      "of the first round: 90 vs 78 GFLOP/s per core (row below). Weights shared by several plans "
      "stay packed: a plan whose M wants another oneDNN layout would add a packed copy" },
    { PVC_PREC_FP32, PVC_ISA_SCALAR, 0, 0, false, false,
      "fp32 ViT-H shapes, brg:avx512_core vs packed avx512_12x32, 1 thread, same run, load 3.3-4.4: "
      "192x3840x1280 103 vs 100, 192x1280x1280 111 vs 109, 192x5120x1280 82 vs 75, 192x1280x5120 "
      "90 vs 78; an earlier quieter run 137-150 vs 140-145 (per core 84-92% vs 88%): within the "
      "box's noise, own kernel (no OpenMP barrier per call, dynamic slices)" },
};

bool pvk_dnnl_matmul_pick(int64_t M, int64_t N, int64_t K, pvc_precision precision, int threads, bool shared)
{
    (void)M; (void)N; (void)threads;
    if (!pvk_dnnl_engine()) return false;
    const char *e = getenv("PERCEIVE_DNNL_MATMUL");   /* 0 never, 1 always, unset: the table */
    if (e && *e) return strcmp(e, "0") != 0;
    pvc_isa isa = pvc_isa_selected();
    for (size_t i = 0; i < PVC_COUNTOF(rules); i++)
        if (rules[i].precision == precision && isa >= rules[i].min_isa && (!rules[i].max_k || K <= rules[i].max_k) &&
            K >= rules[i].min_k && !(rules[i].unshared && shared))
            return rules[i].dnnl;
    return false;
}

struct pvk_dnnl_weights {
    void               *p;              /* the reordered bytes (pvc_malloc_aligned) */
    dnnl_memory_desc_t  md;             /* their layout */
    int                 refs;
};

pvk_dnnl_weights *pvk_dnnl_weights_retain(pvk_dnnl_weights *w)
{
    if (w) __atomic_add_fetch(&w->refs, 1, __ATOMIC_RELAXED);
    return w;
}

void pvk_dnnl_weights_release(pvk_dnnl_weights *w)
{
    if (!w || __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    pvc_free_aligned(w->p);
    pvc_free(w);
}

struct pvk_dnnl_matmul {
    dnnl_primitive_t mm, a_cvt;         /* a_cvt: A f32 -> bf16 (bf16 only) */
    dnnl_memory_t    a, abf, w, b, c, scratch;
    dnnl_stream_t    stream;
    pvk_dnnl_weights *weights;          /* reordered weights (a reference) */
    size_t           abf_off, ws_bytes; /* workspace: scratchpad | A in bf16 */
    int              threads;
    const void      *bound_a, *bound_b, *bound_c, *bound_ws;
    char             impl[80];
};

enum { BUILD_OK, BUILD_DECLINED, BUILD_NOMEM };

static int build_status(dnnl_status_t e)
{
    return e == dnnl_success ? BUILD_OK : e == dnnl_out_of_memory ? BUILD_NOMEM : BUILD_DECLINED;
}

#define TRY(call) do { dnnl_status_t e_ = (call); if (e_ != dnnl_success) { rc = build_status(e_); goto done; } } while (0)

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static dnnl_status_t reorder_create(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                    dnnl_primitive_t *out)
{
    dnnl_engine_t engine = pvk_dnnl_engine();
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t e = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL);
    if (e == dnnl_success) e = dnnl_primitive_create(out, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return e;
}

static int build(pvk_dnnl_matmul *m, int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                 bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act, pvc_precision prec,
                 pvk_dnnl_weights *share)
{
    dnnl_engine_t engine = pvk_dnnl_engine();
    int rc = BUILD_OK;
    dnnl_data_type_t dt = prec == PVC_PREC_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t wreorder = NULL;
    dnnl_memory_t wuser = NULL;
    float *scaled = NULL;
    dnnl_dims_t ad = { M, K }, astr = { lda, 1 }, wd = { K, N }, cd = { M, N }, cstr = { ldc, 1 }, bd = { 1, N };
    dnnl_dims_t wstr = { trans_b ? 1 : ldb, trans_b ? ldb : 1 };
    dnnl_memory_desc_t a_md, abf_md, w_md, wa_md, c_md, b_md;
    TRY(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_f32, astr));
    TRY(dnnl_memory_desc_init_by_tag(&abf_md, 2, ad, dnnl_bf16, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_strides(&w_md, 2, wd, dnnl_f32, wstr));
    TRY(dnnl_memory_desc_init_by_tag(&wa_md, 2, wd, dt, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cstr));
    TRY(dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    TRY(dnnl_matmul_desc_init(&md, prec == PVC_PREC_BF16 ? &abf_md : &a_md, &wa_md, bias ? &b_md : NULL, &c_md));
    TRY(dnnl_primitive_attr_create(&attr));
    TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (act && act->kind != PVG_ACT_NONE) {
        TRY(dnnl_post_ops_create(&post));
        switch (act->kind) {
        case PVG_ACT_RELU:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f)); break;
        case PVG_ACT_LEAKY_RELU: TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, act->alpha, 0.0f)); break;
        case PVG_ACT_CLIP:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_clip, act->alpha, act->beta)); break;
        case PVG_ACT_GELU:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_gelu_erf, 0.0f, 0.0f)); break;
        case PVG_ACT_NONE:       break;
        }
        TRY(dnnl_primitive_attr_set_post_ops(attr, post));
    }
    TRY(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
    const char *impl = NULL;
    TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    /* oneDNN's reference loops are slower than perceive's own kernels */
    if (!impl || !strncmp(impl, "ref", 3)) { rc = BUILD_DECLINED; goto done; }
    snprintf(m->impl, sizeof m->impl, "%s/%s", impl, prec == PVC_PREC_BF16 ? "bf16" : "fp32");
    TRY(dnnl_primitive_create(&m->mm, pd));
    TRY(dnnl_stream_create(&m->stream, engine, dnnl_stream_default_flags));

    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (share) {
        /* another M's object already holds these weights: use them when the layout agrees */
        if (!dnnl_memory_desc_equal(qw, &share->md)) { rc = BUILD_DECLINED; goto done; }
        m->weights = pvk_dnnl_weights_retain(share);
        TRY(dnnl_memory_create(&m->w, qw, engine, m->weights->p));
        goto rest;
    }
    /* weights: alpha folded first (rare: Gemm alpha != 1), then reordered (and rounded to bf16) */
    const float *wsrc = B;
    if (alpha != 1.0f) {
        scaled = pvc_malloc((size_t)(K * N) * sizeof(float));
        if (!scaled) { rc = BUILD_NOMEM; goto done; }
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++) scaled[k * N + n] = alpha * (trans_b ? B[n * ldb + k] : B[k * ldb + n]);
        dnnl_dims_t dense = { N, 1 };
        TRY(dnnl_memory_desc_init_by_strides(&w_md, 2, wd, dnnl_f32, dense));
        wsrc = scaled;
    }
    if (!(m->weights = pvc_calloc(1, sizeof *m->weights))) { rc = BUILD_NOMEM; goto done; }
    m->weights->refs = 1;
    m->weights->md = *qw;
    m->weights->p = pvc_malloc_aligned(dnnl_memory_desc_get_size(qw) + 1);
    if (!m->weights->p) { rc = BUILD_NOMEM; goto done; }
    TRY(dnnl_memory_create(&m->w, qw, engine, m->weights->p));
    TRY(dnnl_memory_create(&wuser, &w_md, engine, (void *)wsrc));   /* only read */
    TRY(reorder_create(&w_md, qw, &wreorder));
    {
        dnnl_exec_arg_t a[] = { { DNNL_ARG_FROM, wuser }, { DNNL_ARG_TO, m->w } };
        TRY(dnnl_primitive_execute(wreorder, m->stream, 2, a));
        TRY(dnnl_stream_wait(m->stream));
    }
rest:;
    const dnnl_memory_desc_t *qs = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = qs ? dnnl_memory_desc_get_size(qs) : 0;
    if (sbytes) TRY(dnnl_memory_create(&m->scratch, qs, engine, DNNL_MEMORY_NONE));
    m->ws_bytes = align64(sbytes);
    TRY(dnnl_memory_create(&m->a, &a_md, engine, DNNL_MEMORY_NONE));
    TRY(dnnl_memory_create(&m->c, &c_md, engine, DNNL_MEMORY_NONE));
    if (bias) TRY(dnnl_memory_create(&m->b, &b_md, engine, DNNL_MEMORY_NONE));
    if (prec == PVC_PREC_BF16) {
        TRY(reorder_create(&a_md, &abf_md, &m->a_cvt));
        TRY(dnnl_memory_create(&m->abf, &abf_md, engine, DNNL_MEMORY_NONE));
        m->abf_off = m->ws_bytes;
        m->ws_bytes += align64(dnnl_memory_desc_get_size(&abf_md));
    }
done:
    if (wreorder) dnnl_primitive_destroy(wreorder);
    if (wuser) dnnl_memory_destroy(wuser);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (post) dnnl_post_ops_destroy(post);
    if (attr) dnnl_primitive_attr_destroy(attr);
    pvc_free(scaled);
    return rc;
}

pv_status pvk_dnnl_matmul_create(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                 bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                 pvc_precision precision, int threads, pvk_dnnl_matmul **out,
                                 size_t *workspace, pvc_msg *msg)
{
    return pvk_dnnl_matmul_create_shared(M, N, K, lda, B, ldb, trans_b, alpha, ldc, bias, act, precision, threads, NULL, out,
                                         workspace, msg);
}

pvk_dnnl_weights *pvk_dnnl_matmul_weights(const pvk_dnnl_matmul *m) { return m ? pvk_dnnl_weights_retain(m->weights) : NULL; }

pv_status pvk_dnnl_matmul_create_shared(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                        bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                        pvc_precision precision, int threads, pvk_dnnl_weights *share,
                                        pvk_dnnl_matmul **out, size_t *workspace, pvc_msg *msg)
{
    *out = NULL;
    *workspace = 0;
    if (M < 1 || N < 1 || K < 1 || (!B && !share) || lda < K || ldc < N || ldb < (trans_b ? K : N)) return PV_OK;
    /* oneDNN's clip is max(lo, min(hi, x)); pvk_act_apply's differs when lo > hi (or NaN) */
    if (act && act->kind == PVG_ACT_CLIP && !(act->alpha <= act->beta)) return PV_OK;
    if (!pvk_dnnl_engine()) return PV_OK;
    pvk_dnnl_matmul *m = pvc_calloc(1, sizeof *m);
    if (!m) return pvc_fail(msg, PV_ENOMEM, "out of memory creating a oneDNN matmul");
    m->threads = threads > 0 ? threads : pvc_default_threads();
    int saved = pvk_dnnl_team_enter(m->threads);
    int rc = build(m, M, N, K, lda, B, ldb, trans_b, alpha, ldc, bias, act, precision, share);
    pvk_dnnl_team_leave(saved, m->threads);
    if (rc != BUILD_OK) {
        pvk_dnnl_matmul_free(m);
        if (rc == BUILD_NOMEM) return pvc_fail(msg, PV_ENOMEM, "out of memory creating a oneDNN matmul");
        return PV_OK;
    }
    *out = m;
    *workspace = m->ws_bytes;
    return PV_OK;
}

static dnnl_status_t bind(dnnl_memory_t mem, const void **last, const void *p)
{
    if (*last == p) return dnnl_success;
    *last = p;
    return dnnl_memory_set_data_handle(mem, (void *)p);
}

pv_status pvk_dnnl_matmul_run(pvk_dnnl_matmul *m, const float *A, const float *bias, float *C, void *ws)
{
    dnnl_status_t e = bind(m->a, &m->bound_a, A);
    if (e == dnnl_success) e = bind(m->c, &m->bound_c, C);
    if (e == dnnl_success && m->b) e = bind(m->b, &m->bound_b, bias);
    if (e == dnnl_success && m->bound_ws != ws) {
        m->bound_ws = ws;
        if (m->scratch) e = dnnl_memory_set_data_handle(m->scratch, ws);
        if (e == dnnl_success && m->abf) e = dnnl_memory_set_data_handle(m->abf, (char *)ws + m->abf_off);
        if (e != dnnl_success) m->bound_ws = NULL;
    }
    if (e != dnnl_success) return pvc_fail(NULL, PV_EINTERNAL, "oneDNN matmul: binding buffers failed (status %d)", (int)e);
    int saved = pvk_dnnl_team_enter(m->threads);
    if (m->a_cvt) {
        dnnl_exec_arg_t a[] = { { DNNL_ARG_FROM, m->a }, { DNNL_ARG_TO, m->abf } };
        e = dnnl_primitive_execute(m->a_cvt, m->stream, 2, a);
    }
    if (e == dnnl_success) {
        dnnl_exec_arg_t a[5] = { { DNNL_ARG_SRC, m->a_cvt ? m->abf : m->a }, { DNNL_ARG_WEIGHTS, m->w }, { DNNL_ARG_DST, m->c } };
        int na = 3;
        if (m->b) a[na++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, m->b };
        if (m->scratch) a[na++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, m->scratch };
        e = dnnl_primitive_execute(m->mm, m->stream, na, a);
    }
    if (e == dnnl_success) e = dnnl_stream_wait(m->stream);
    pvk_dnnl_team_leave(saved, m->threads);
    if (e != dnnl_success) return pvc_fail(NULL, PV_EINTERNAL, "oneDNN matmul (%s) failed (status %d)", m->impl, (int)e);
    return PV_OK;
}

void pvk_dnnl_matmul_free(pvk_dnnl_matmul *m)
{
    if (!m) return;
    if (m->mm) dnnl_primitive_destroy(m->mm);
    if (m->a_cvt) dnnl_primitive_destroy(m->a_cvt);
    dnnl_memory_t mems[] = { m->a, m->abf, m->w, m->b, m->c, m->scratch };
    for (size_t i = 0; i < PVC_COUNTOF(mems); i++) if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (m->stream) dnnl_stream_destroy(m->stream);
    pvk_dnnl_weights_release(m->weights);
    pvc_free(m);
}

const char *pvk_dnnl_matmul_impl(const pvk_dnnl_matmul *m) { return m ? m->impl : "none"; }

#else /* no oneDNN in this build */

bool pvk_dnnl_matmul_pick(int64_t M, int64_t N, int64_t K, pvc_precision precision, int threads, bool shared)
{
    (void)M; (void)N; (void)K; (void)precision; (void)threads; (void)shared;
    return false;
}

pv_status pvk_dnnl_matmul_create(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                 bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                 pvc_precision precision, int threads, pvk_dnnl_matmul **out,
                                 size_t *workspace, pvc_msg *msg)
{
    (void)M; (void)N; (void)K; (void)lda; (void)B; (void)ldb; (void)trans_b; (void)alpha; (void)ldc;
    (void)bias; (void)act; (void)precision; (void)threads; (void)msg;
    *out = NULL;
    *workspace = 0;
    return PV_OK;
}

pv_status pvk_dnnl_matmul_run(pvk_dnnl_matmul *m, const float *A, const float *bias, float *C, void *ws)
{
    (void)m; (void)A; (void)bias; (void)C; (void)ws;
    return pvc_fail(NULL, PV_EINTERNAL, "oneDNN is not built into this binary");
}

void pvk_dnnl_matmul_free(pvk_dnnl_matmul *m) { (void)m; }

pv_status pvk_dnnl_matmul_create_shared(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                        bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                        pvc_precision precision, int threads, pvk_dnnl_weights *share,
                                        pvk_dnnl_matmul **out, size_t *workspace, pvc_msg *msg)
{
    (void)share;
    return pvk_dnnl_matmul_create(M, N, K, lda, B, ldb, trans_b, alpha, ldc, bias, act, precision, threads, out, workspace, msg);
}

pvk_dnnl_weights *pvk_dnnl_matmul_weights(const pvk_dnnl_matmul *m) { (void)m; return NULL; }
pvk_dnnl_weights *pvk_dnnl_weights_retain(pvk_dnnl_weights *w) { return w; }
void pvk_dnnl_weights_release(pvk_dnnl_weights *w) { (void)w; }

const char *pvk_dnnl_matmul_impl(const pvk_dnnl_matmul *m) { (void)m; return "none"; }

#endif
