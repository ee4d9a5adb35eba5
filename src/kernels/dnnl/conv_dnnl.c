/* Convolution through oneDNN (see conv_dnnl.h). The primitive, its memory objects, a stream and
 * the reordered weights are made once per plan; run only binds pointers and executes. The
 * process shares one CPU engine. oneDNN sizes its OpenMP team at creation, so creation and
 * execution run with the calling thread's OpenMP thread count set to the plan's.
 * Which shapes go to oneDNN, and in which layout, is the measured table below (pvk_dnnl_conv_pick). */
#include "kernels/dnnl/conv_dnnl.h"
#include "kernels/dnnl/dnnl_engine.h"
#include "kernels/winograd.h"

#include <stdlib.h>
#include <string.h>

pvk_dnnl_mode pvk_dnnl_mode_get(void)
{
    if (!pvk_dnnl_available()) return PVK_DNNL_OFF;
    const char *e = getenv("PERCEIVE_DNNL");
    if (!e || !*e || !strcmp(e, "1") || !strcmp(e, "auto")) return PVK_DNNL_AUTO;
    if (!strcmp(e, "0") || !strcmp(e, "off")) return PVK_DNNL_OFF;
    if (!strcmp(e, "nchw")) return PVK_DNNL_NCHW;
    if (!strcmp(e, "blocked")) return PVK_DNNL_BLOCKED;
    return PVK_DNNL_AUTO;
}

#ifdef PV_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

/* false under PERCEIVE_ISA=scalar (no engine): every convolution then takes the own path */
bool pvk_dnnl_available(void) { return pvk_dnnl_engine() != NULL; }

struct pvk_dnnl_conv {
    dnnl_primitive_t conv;
    dnnl_primitive_t to_blocked, from_blocked;  /* X and Y reorders; NULL when not needed */
    dnnl_memory_t    x, y;                      /* perceive's NCHW tensors */
    dnnl_memory_t    xb, yb;                    /* the primitive's layouts (== x, y when plain) */
    dnnl_memory_t    w, b, scratch;             /* scratch NULL when oneDNN needs none */
    dnnl_stream_t    stream;
    void            *weights;                   /* reordered weights, owned */
    size_t           xb_off, yb_off, ws_bytes;  /* workspace: scratchpad | X blocked | Y blocked */
    int              threads;
    const void      *bound_x, *bound_y, *bound_b, *bound_ws;   /* handles last given to oneDNN */
    char             impl[64];
    /* for the layout pass */
    pvk_dnnl_conv_desc desc;                    /* as built */
    dnnl_memory_desc_t w_md_q;                  /* layout of weights */
    pvk_dnnl_mode    mode;
    dnnl_memory_desc_t xb_md, yb_md;            /* the primitive's X / Y layouts */
    size_t           x_plain_bytes, y_plain_bytes;
    bool             in_linked, out_linked;
    /* perceive's own Winograd F(4,3) (kernels/winograd.h) in place of the oneDNN primitive:
     * conv NULL, X and Y reordered to / from nChw16c by oneDNN as for a primitive */
    pvk_wino        *own;
    pvc_pool        *pool;
};

/* The measured table (bench/conv_bench.c, 2 AVX-512 cores, GFLOP/s at 1 / 2 threads): per
 * shape class, the layout oneDNN runs best in, or OFF where perceive's im2col + GEMM is as fast.
 * Rows are tried in order; the first that matches decides. NCHW (oneDNN's own im2col + sgemm,
 * "gemm:jit") never won by more than the noise, so no row picks it. */
typedef enum { RULE_ANY, RULE_TRANSPOSED, RULE_DEPTHWISE, RULE_POINTWISE } rule_kind;

typedef struct pick_rule {
    rule_kind     kind;             /* TRANSPOSED: ConvTranspose; DEPTHWISE: one input channel per
                                       group; POINTWISE: all k 1 (these two: convolutions) */
    int64_t       cin_per_cout;     /* matches only when cin >= this * cout (0: always) */
    pvk_dnnl_mode mode;
    const char   *why;              /* the measurement behind the row */
} pick_rule;

static const pick_rule rules[] = {
    { RULE_TRANSPOSED, 0, PVK_DNNL_OFF,
      "oneDNN 2.6's fp32 deconvolution (jit:avx512_core, gemm:jit) is 3-10x slower than perceive's "
      "paths: 2x2 s2 256->256 90x90 7 / 11 vs GEMM + col2im 35 / 75 and the k == stride path 109 "
      "(2 threads), 4x4 s2 128->64 14 / 22 vs 43 / 98; bf16 descs are taken (pick: BLOCKED)" },
    { RULE_DEPTHWISE, 0, PVK_DNNL_BLOCKED,
      "dw 3x3 128ch 180x180: brdgmm_dw 5.8 / 11.4 vs perceive's direct loop 1.3 / 2.5" },
    { RULE_POINTWISE, 8, PVK_DNNL_OFF,
      "1x1 with cin >= 8 cout, at 180x180: reordering X costs more than the small GEMM saves; "
      "256->16 20-25 / 29-40 vs im2col 24-33 / 42, 64->2 3-5 / 4-6 vs 8-11 / 13-21, "
      "256->32 29-34 / 50-69 vs 34-36 / 67-78 (256->64: blocked 46 / 67-78 vs 33 / 65-69)" },
    { RULE_ANY, 0, PVK_DNNL_BLOCKED,
      "brgconv with its reorders: 3x3 128->128 180x180 101 / 210 vs 54 / 109, 3x3 128->5 30 / 56 "
      "vs 16 / 31, 1x1 128->256 57 / 148 vs 27 / 54, ResNet-34 7x7 s2 3->64 68 / 109 vs 21 / 38" },
};

static bool shape_ok(const pvk_dnnl_conv_desc *d);

static bool rule_matches(const pick_rule *r, const pvk_dnnl_conv_desc *d)
{
    bool pointwise = true;
    for (int i = 0; i < d->nsp; i++) pointwise = pointwise && d->k[i] == 1;
    if (r->kind == RULE_TRANSPOSED) return d->transposed;
    if (r->kind != RULE_ANY && d->transposed) return false;
    if (r->kind == RULE_DEPTHWISE && !(d->group == d->cin && d->group > 1)) return false;
    if (r->kind == RULE_POINTWISE && !pointwise) return false;
    return !r->cin_per_cout || d->cin >= r->cin_per_cout * d->cout;
}

pvk_dnnl_mode pvk_dnnl_conv_pick(const pvk_dnnl_conv_desc *d)
{
    if (!shape_ok(d)) return PVK_DNNL_OFF;
    /* oneDNN 2.6's bf16 deconvolution without AMX (jit_bf16:avx512_core_bf16, AMD Zen 5): the
     * BEVFusion neck's 2x2 s2 256->256 90x90 took 119 ms where perceive's k == stride path
     * (bf16-rounded operands, fp32 FMA) takes 14: decline it below AMX */
    if (d->bf16 && d->transposed && pvc_isa_selected() < PVC_ISA_AMX) return PVK_DNNL_OFF;
    if (d->bf16) return PVK_DNNL_BLOCKED;
    for (size_t i = 0; i < PVC_COUNTOF(rules); i++)
        if (rule_matches(&rules[i], d)) return rules[i].mode;
    return PVK_DNNL_OFF;
}

static bool own_wino_wanted(void);
static bool own_wino_takes(const pvk_dnnl_conv_desc *d);

bool pvk_dnnl_winograd_pick(const pvk_dnnl_conv_desc *d)
{
    if (d->transposed || d->nsp != 2 || d->group != 1) return false;
    for (int i = 0; i < 2; i++)
        if (d->k[i] != 3 || d->stride[i] != 1 || d->dil[i] != 1) return false;
    const char *e = getenv("PERCEIVE_WINOGRAD");
    if (d->bf16) {
        /* bf16 precision without AMX: perceive's fp32 Winograd beats oneDNN's bf16 direct kernels
         * (AMD Zen 5, 2 threads, BEV 3x3 128->128 180^2: 7.1 ms against 9.5-10.5 (jit_bf16 /
         * brgconv avx512_core_bf16)) and is the more accurate of the two; with AMX the bf16 tiles
         * win (create then keeps the bf16 desc) */
        if (e && *e && !strcmp(e, "0")) return false;
        return pvc_isa_selected() < PVC_ISA_AMX && own_wino_wanted() && own_wino_takes(d);
    }
    if (e && *e) return strcmp(e, "0") != 0;
    /* bench/conv_bench.c, 2 threads, Xeon (AVX-512) with oneDNN's F(4,3) kernel, GFLOP/s of the
     * direct-equivalent work, Winograd vs direct blocked: 3x3 128->128 180^2 325 vs 192, 512->128
     * 347 vs 219, r34 64->64 108x192 241 vs 124, 256->256 27x48 500 vs 219; but 128->5 39 vs 58,
     * 64->2 21 vs 25 (few output channels: the transforms dominate). Error relative to max |y|:
     * 0.4e-6 - 3e-6 on every shape (direct: 1e-6 - 1.7e-5 absolute), within the fp32 tolerance.
     * Memory: oneDNN keeps F(4,3)-transformed weights, 36/9 = 4x the direct ones, and a larger
     * scratchpad: cam_resnet34_fpn 239 ms / 567 MiB peak RSS; Winograd only at >= 2048 output
     * pixels 294 ms / 345 MiB; none 416 ms / 207 MiB. Speed wins here; PERCEIVE_WINOGRAD=0 is
     * the knob for memory-bound deployments. Down to 16 output channels when cin >= 32: 3x3
     * 72->24 at 64x80 (the unseen graph's decoder, AMD EPYC Zen 5) 244 vs 93 at 1 thread, 270
     * vs 191 at 2, rel error 1.8e-6. */
    return d->cin >= 32 && d->cout >= 16;
}

static bool shape_ok(const pvk_dnnl_conv_desc *d)
{
    if (d->nsp < 1 || d->nsp > 3 || d->batch < 1 || d->cin < 1 || d->cout < 1 || d->group < 1) return false;
    if (d->cin % d->group || d->cout % d->group) return false;
    for (int i = 0; i < d->nsp; i++) {
        if (d->in[i] < 1 || d->out[i] < 1 || d->k[i] < 1 || d->stride[i] < 1 || d->dil[i] < 1 ||
            d->pad_begin[i] < 0 || d->pad_end[i] < 0)
            return false;
        int64_t ek = (d->k[i] - 1) * d->dil[i] + 1;
        int64_t o = d->transposed ? (d->in[i] - 1) * d->stride[i] + ek - d->pad_begin[i] - d->pad_end[i]
                                  : (d->in[i] + d->pad_begin[i] + d->pad_end[i] - ek) / d->stride[i] + 1;
        if (o != d->out[i]) return false;
    }
    /* oneDNN's clip is max(lo, min(hi, x)); pvk_act_apply's differs when lo > hi (or NaN) */
    if (d->act.kind == PVG_ACT_CLIP && !(d->act.alpha <= d->act.beta)) return false;
    return true;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static const dnnl_format_tag_t plain_tags[] = { dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef };
/* ConvTranspose's W [cin, cout, k...] as oneDNN's [cout, cin, k...], by rank (3..5), and
 * grouped [g, cin/g, cout/g, k...] as [g, cout/g, cin/g, k...] (rank 4..6) */
static const dnnl_format_tag_t io_tags[] = { dnnl_bac, dnnl_bacd, dnnl_bacde };
static const dnnl_format_tag_t gio_tags[] = { dnnl_acbd, dnnl_acbde, dnnl_acbdef };

enum { BUILD_OK, BUILD_DECLINED, BUILD_NOMEM };

static int build_status(dnnl_status_t e)
{
    return e == dnnl_success ? BUILD_OK : e == dnnl_out_of_memory ? BUILD_NOMEM : BUILD_DECLINED;
}

#define TRY(call) do { dnnl_status_t e_ = (call); if (e_ != dnnl_success) { rc = build_status(e_); goto done; } } while (0)

static dnnl_status_t reorder_create(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                    dnnl_primitive_t *out)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_engine_t engine = pvk_dnnl_engine();
    dnnl_status_t e = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL);
    if (e == dnnl_success) e = dnnl_primitive_create(out, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return e;
}

/* Everything oneDNN for create; c->threads is the team already set for this thread. */
/* from_md: when not NULL, w is in that layout (another primitive's reordered weights, when the
 * layout pass remakes a producer: the graph's copy may be freed by then); else ONNX order f32. */
/* src_md: the X layout to build for (a consumer remade to read its producer's layout), or NULL
 * (oneDNN's pick in BLOCKED mode). */
static int build(pvk_dnnl_conv *c, const pvk_dnnl_conv_desc *d, const void *w, const dnnl_memory_desc_t *from_md,
                 pvk_dnnl_mode mode, const dnnl_memory_desc_t *src_md)
{
    int rc = BUILD_OK, nd = 2 + d->nsp;
    dnnl_engine_t engine = pvk_dnnl_engine();
    dnnl_dims_t xd = { d->batch, d->cin }, yd = { d->batch, d->cout }, wd, bd = { d->cout };
    dnnl_dims_t st, dl, pl, pr;
    for (int i = 0; i < d->nsp; i++) {
        xd[2 + i] = d->in[i];
        yd[2 + i] = d->out[i];
        st[i] = d->stride[i];
        dl[i] = d->dil[i] - 1;           /* oneDNN counts the gap, ONNX the step */
        pl[i] = d->pad_begin[i];
        pr[i] = d->pad_end[i];
    }
    /* ONNX W [cout, cin/g, k...] is, read contiguously, oneDNN's plain goihw [g, cout/g, cin/g, k...];
     * ConvTranspose's [cin, cout/g, k...] is its giohw */
    int wnd = d->group > 1 ? nd + 1 : nd, o = 0;
    dnnl_format_tag_t wtag = !d->transposed ? plain_tags[wnd - 1]
                           : d->group > 1 ? gio_tags[d->nsp - 1] : io_tags[d->nsp - 1];
    if (d->group > 1) wd[o++] = d->group;
    wd[o++] = d->cout / d->group;
    wd[o++] = d->cin / d->group;
    for (int i = 0; i < d->nsp; i++) wd[o++] = d->k[i];

    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t wreorder = NULL;
    dnnl_memory_t wuser = NULL;
    dnnl_memory_desc_t x_md, y_md, xa_md, ya_md, w_md, wa_md, b_md;
    dnnl_format_tag_t any = dnnl_format_tag_any, plain = plain_tags[nd - 1];
    TRY(dnnl_memory_desc_init_by_tag(&x_md, nd, xd, dnnl_f32, plain));
    TRY(dnnl_memory_desc_init_by_tag(&y_md, nd, yd, dnnl_f32, plain));
    dnnl_data_type_t in_t = d->bf16 ? dnnl_bf16 : dnnl_f32;   /* X and W inside the primitive */
    if (d->bf16) mode = PVK_DNNL_BLOCKED;
    TRY(dnnl_memory_desc_init_by_tag(&xa_md, nd, xd, in_t, mode == PVK_DNNL_NCHW ? plain : any));
    if (src_md) xa_md = *src_md;
    TRY(dnnl_memory_desc_init_by_tag(&ya_md, nd, yd, d->dst_bf16 ? dnnl_bf16 : dnnl_f32, mode == PVK_DNNL_NCHW ? plain : any));
    TRY(dnnl_memory_desc_init_by_tag(&w_md, wnd, wd, dnnl_f32, wtag));
    TRY(dnnl_memory_desc_init_by_tag(&wa_md, wnd, wd, in_t, any));
    TRY(dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_a));
    dnnl_convolution_desc_t cd;   /* dnnl_deconvolution_desc_t is the same struct */
    if (d->transposed)
        TRY(dnnl_dilated_deconvolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                         &xa_md, &wa_md, d->bias ? &b_md : NULL, &ya_md,
                                                         st, dl, pl, pr));
    else
        TRY(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                       d->winograd ? dnnl_convolution_winograd : dnnl_convolution_direct,
                                                       &xa_md, &wa_md, d->bias ? &b_md : NULL, &ya_md,
                                                       st, dl, pl, pr));
    TRY(dnnl_primitive_attr_create(&attr));
    TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (d->act.kind != PVG_ACT_NONE) {
        TRY(dnnl_post_ops_create(&post));
        switch (d->act.kind) {
        case PVG_ACT_RELU:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f)); break;
        case PVG_ACT_LEAKY_RELU: TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, d->act.alpha, 0.0f)); break;
        case PVG_ACT_CLIP:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_clip, d->act.alpha, d->act.beta)); break;
        case PVG_ACT_GELU:       TRY(dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_gelu_erf, 0.0f, 0.0f)); break;
        case PVG_ACT_NONE:       break;
        }
        TRY(dnnl_primitive_attr_set_post_ops(attr, post));
    }
    TRY(dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL));
    const char *impl = NULL;
    TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    /* oneDNN's reference loops are slower than perceive's own path */
    if (!impl || !strncmp(impl, "ref", 3)) { rc = BUILD_DECLINED; goto done; }
    const dnnl_memory_desc_t *qx = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *qy = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qs = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!qx || !qy || !qw || !qs) { rc = BUILD_DECLINED; goto done; }
    bool xplain = dnnl_memory_desc_equal(qx, &x_md), yplain = dnnl_memory_desc_equal(qy, &y_md);
    c->xb_md = *qx;
    c->yb_md = *qy;
    c->x_plain_bytes = dnnl_memory_desc_get_size(&x_md);
    c->y_plain_bytes = dnnl_memory_desc_get_size(&y_md);
    snprintf(c->impl, sizeof c->impl, "%s/%s%s", impl, xplain && yplain ? "nchw" : "blocked", d->bf16 ? "/bf16" : "");
    TRY(dnnl_primitive_create(&c->conv, pd));
    TRY(dnnl_stream_create(&c->stream, engine, dnnl_stream_default_flags));

    /* the weights, once, into the primitive's layout */
    size_t wbytes = dnnl_memory_desc_get_size(qw);
    c->weights = pvc_malloc_aligned(wbytes ? wbytes : 1);
    if (!c->weights) { rc = BUILD_NOMEM; goto done; }
    TRY(dnnl_memory_create(&c->w, qw, engine, c->weights));
    if (!from_md) from_md = &w_md;
    TRY(dnnl_memory_create(&wuser, from_md, engine, (void *)w));   /* only read */
    TRY(reorder_create(from_md, qw, &wreorder));
    c->w_md_q = *qw;
    dnnl_exec_arg_t wargs[] = { { DNNL_ARG_FROM, wuser }, { DNNL_ARG_TO, c->w } };
    TRY(dnnl_primitive_execute(wreorder, c->stream, 2, wargs));
    TRY(dnnl_stream_wait(c->stream));

    /* run-time tensors: handles bound at run; the workspace holds scratchpad and layouts */
    TRY(dnnl_memory_create(&c->x, &x_md, engine, DNNL_MEMORY_NONE));
    TRY(dnnl_memory_create(&c->y, &y_md, engine, DNNL_MEMORY_NONE));
    if (d->bias) TRY(dnnl_memory_create(&c->b, &b_md, engine, DNNL_MEMORY_NONE));
    size_t off = align64(dnnl_memory_desc_get_size(qs));
    if (off) TRY(dnnl_memory_create(&c->scratch, qs, engine, DNNL_MEMORY_NONE));
    c->xb = c->x;
    c->yb = c->y;
    if (!xplain) {
        TRY(dnnl_memory_create(&c->xb, qx, engine, DNNL_MEMORY_NONE));
        TRY(reorder_create(&x_md, qx, &c->to_blocked));
        c->xb_off = off;
        off += align64(dnnl_memory_desc_get_size(qx));
    }
    if (!yplain) {
        TRY(dnnl_memory_create(&c->yb, qy, engine, DNNL_MEMORY_NONE));
        TRY(reorder_create(qy, &y_md, &c->from_blocked));
        c->yb_off = off;
        off += align64(dnnl_memory_desc_get_size(qy));
    }
    c->ws_bytes = off;
done:
    if (wreorder) dnnl_primitive_destroy(wreorder);
    if (wuser) dnnl_memory_destroy(wuser);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (post) dnnl_post_ops_destroy(post);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return rc;
}

/* PERCEIVE_WINOGRAD_OWN: unset or 1, perceive's F(4,3) kernel wherever it takes a Winograd desc
 * (1.3-1.9x oneDNN's F(4,3) and 5x less rounding error; on few channels, 72->24, 1.7x oneDNN's
 * F(2,3), which rounds 4x less, both within the fp32 tolerance: BENCHMARKS.md); 0, oneDNN's
 * everywhere. Read at each create. */
static bool own_wino_wanted(void)
{
    const char *e = getenv("PERCEIVE_WINOGRAD_OWN");
    return !e || !*e || strcmp(e, "0") != 0;
}

static pvk_wino_desc own_wino_desc(const pvk_dnnl_conv_desc *d)
{
    return (pvk_wino_desc){ .batch = d->batch, .cin = d->cin, .cout = d->cout, .ih = d->in[0], .iw = d->in[1],
                            .oh = d->out[0], .ow = d->out[1], .pad_t = d->pad_begin[0], .pad_l = d->pad_begin[1],
                            .bias = d->bias, .act = d->act };
}

static bool own_wino_takes(const pvk_dnnl_conv_desc *d)
{
    pvk_wino_desc wd = own_wino_desc(d);
    return d->nsp == 2 && pvk_wino_supported(&wd) && pvk_wino_pays(&wd);
}

/* The own Winograd kernel for d (a Winograd desc, 2-D), reading and writing nChw16c: the layout
 * oneDNN's Winograd primitive uses too, so the layout pass links it the same way. */
static int build_own(pvk_dnnl_conv *c, const pvk_dnnl_conv_desc *d, const float *w)
{
    pvk_wino_desc wd = own_wino_desc(d);
    if (d->bf16 || d->dst_bf16 || !own_wino_takes(d)) return BUILD_DECLINED;
    int rc = BUILD_OK;
    dnnl_engine_t engine = pvk_dnnl_engine();
    dnnl_dims_t xd = { d->batch, d->cin, d->in[0], d->in[1] }, yd = { d->batch, d->cout, d->out[0], d->out[1] };
    dnnl_memory_desc_t x_md, y_md;
    TRY(dnnl_memory_desc_init_by_tag(&x_md, 4, xd, dnnl_f32, dnnl_abcd));
    TRY(dnnl_memory_desc_init_by_tag(&y_md, 4, yd, dnnl_f32, dnnl_abcd));
    TRY(dnnl_memory_desc_init_by_tag(&c->xb_md, 4, xd, dnnl_f32, dnnl_nChw16c));
    TRY(dnnl_memory_desc_init_by_tag(&c->yb_md, 4, yd, dnnl_f32, dnnl_nChw16c));
    c->x_plain_bytes = dnnl_memory_desc_get_size(&x_md);
    c->y_plain_bytes = dnnl_memory_desc_get_size(&y_md);
    TRY(dnnl_stream_create(&c->stream, engine, dnnl_stream_default_flags));
    TRY(dnnl_memory_create(&c->x, &x_md, engine, DNNL_MEMORY_NONE));
    TRY(dnnl_memory_create(&c->y, &y_md, engine, DNNL_MEMORY_NONE));
    TRY(dnnl_memory_create(&c->xb, &c->xb_md, engine, DNNL_MEMORY_NONE));
    TRY(dnnl_memory_create(&c->yb, &c->yb_md, engine, DNNL_MEMORY_NONE));
    TRY(reorder_create(&x_md, &c->xb_md, &c->to_blocked));
    TRY(reorder_create(&c->yb_md, &y_md, &c->from_blocked));
    size_t ws = 0;
    pv_status s = pvk_wino_create(&wd, w, c->threads, &c->own, &ws);
    if (s == PV_OK) s = pvc_pool_create(c->threads, &c->pool);
    if (s != PV_OK) { rc = s == PV_ENOMEM ? BUILD_NOMEM : BUILD_DECLINED; goto done; }
    size_t off = align64(ws);
    c->xb_off = off;
    off += align64(dnnl_memory_desc_get_size(&c->xb_md));
    c->yb_off = off;
    off += align64(dnnl_memory_desc_get_size(&c->yb_md));
    c->ws_bytes = off;
    snprintf(c->impl, sizeof c->impl, "perceive_wino_4x3:avx512/blocked");
done:
    return rc;
}

static void conv_clear(pvk_dnnl_conv *c);

/* One attempt with d as given: BUILD_OK (c filled), BUILD_DECLINED or BUILD_NOMEM. */
static int try_create(const pvk_dnnl_conv_desc *d, const float *w, int threads, pvk_dnnl_mode mode,
                      pvk_dnnl_conv **out)
{
    if (mode == PVK_DNNL_AUTO || (d->bf16 && mode != PVK_DNNL_OFF)) mode = pvk_dnnl_conv_pick(d);
    if (mode == PVK_DNNL_OFF || !shape_ok(d) || !w || !pvk_dnnl_engine()) return BUILD_DECLINED;
    if (d->winograd && (d->bf16 || d->transposed)) return BUILD_DECLINED;
    pvk_dnnl_conv *c = pvc_calloc(1, sizeof *c);
    if (!c) return BUILD_NOMEM;
    c->threads = threads;
    int saved = pvk_dnnl_team_enter(c->threads);
    int rc = BUILD_DECLINED;
    if (d->winograd && mode == PVK_DNNL_BLOCKED && own_wino_wanted()) {
        rc = build_own(c, d, w);
        if (rc == BUILD_DECLINED) { conv_clear(c); memset(c, 0, sizeof *c); c->threads = threads; }
    }
    if (rc == BUILD_DECLINED) rc = build(c, d, w, NULL, mode, NULL);
    pvk_dnnl_team_leave(saved, c->threads);
    c->desc = *d;
    c->mode = mode;
    if (rc != BUILD_OK) pvk_dnnl_conv_free(c);
    else *out = c;
    return rc;
}

pv_status pvk_dnnl_conv_create(const pvk_dnnl_conv_desc *d, const float *w, int threads,
                               pvk_dnnl_mode mode, pvk_dnnl_conv **out, size_t *workspace,
                               pvc_msg *msg)
{
    *out = NULL;
    *workspace = 0;
    if (threads <= 0) threads = pvc_default_threads();
    /* declined variants fall back in steps: Winograd -> direct, bf16 -> fp32 (by the fp32
     * table), before the caller's own kernel */
    pvk_dnnl_conv_desc t = *d;
    int rc = BUILD_DECLINED;
    if (t.bf16 && t.winograd) {   /* bf16 precision, own fp32 Winograd picked (winograd_pick) */
        t.bf16 = false;
        rc = try_create(&t, w, threads, mode, out);
        if (rc == BUILD_DECLINED) { t.bf16 = true; t.winograd = false; }
    }
    if (rc == BUILD_DECLINED) rc = try_create(&t, w, threads, mode, out);
    if (rc == BUILD_DECLINED && t.winograd) { t.winograd = false; rc = try_create(&t, w, threads, mode, out); }
    if (rc == BUILD_DECLINED && t.bf16) { t.bf16 = false; rc = try_create(&t, w, threads, mode, out); }
    if (rc == BUILD_NOMEM) return pvc_fail(msg, PV_ENOMEM, "out of memory creating a oneDNN convolution");
    if (*out) *workspace = (*out)->ws_bytes;
    return PV_OK;
}

/* Handles change only when the plan's buffers do, so after the first call nothing is rebound. */
static dnnl_status_t bind(dnnl_memory_t m, const void **last, const void *p)
{
    if (*last == p) return dnnl_success;
    *last = p;
    return dnnl_memory_set_data_handle(m, (void *)p);
}

/* Releases everything build made (the object itself stays). */
static void conv_clear(pvk_dnnl_conv *c)
{
    if (c->conv) dnnl_primitive_destroy(c->conv);
    if (c->to_blocked) dnnl_primitive_destroy(c->to_blocked);
    if (c->from_blocked) dnnl_primitive_destroy(c->from_blocked);
    if (c->xb && c->xb != c->x) dnnl_memory_destroy(c->xb);
    if (c->yb && c->yb != c->y) dnnl_memory_destroy(c->yb);
    dnnl_memory_t mems[] = { c->x, c->y, c->w, c->b, c->scratch };
    for (size_t i = 0; i < PVC_COUNTOF(mems); i++) if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (c->stream) dnnl_stream_destroy(c->stream);
    pvc_free_aligned(c->weights);
    pvk_wino_free(c->own);
    pvc_pool_free(c->pool);
}

/* Remakes consumer b to read X in layout md (its producer's output layout) when oneDNN has a JIT
 * kernel for that (build declines its reference loops), within b's planned workspace or, given
 * ws (the planner's slot for b), growing it: a Winograd
 * producer writes nChw16c, while brgconv, left to choose, reads nhwc. oneDNN then runs its
 * blocked direct kernels (jit:avx512_core, jit_1x1:avx512_core), measured no slower than
 * brgconv plus the two reorders they save (AMD Zen 5, 2 threads: BEV 3x3 s2 128->256 13.1-13.6
 * -> 12.2-12.4 ms, 1x1 128->256 8.2-8.9 -> 7.0-7.3 ms; cam_resnet34_fpn 128.2 -> 121.8-124.0 ms).
 * false leaves b as it was. */
static bool read_layout(pvk_dnnl_conv *b, const dnnl_memory_desc_t *md, size_t *ws)
{
    if (b->in_linked || b->out_linked || b->desc.bf16 || b->own || dnnl_memory_desc_get_size(md) > b->x_plain_bytes)
        return false;
    pvk_dnnl_conv t;
    memset(&t, 0, sizeof t);
    t.threads = b->threads;
    int saved = pvk_dnnl_team_enter(t.threads);
    int rc = build(&t, &b->desc, b->weights, &b->w_md_q, b->mode, md);
    pvk_dnnl_team_leave(saved, t.threads);
    bool same = rc == BUILD_OK && t.to_blocked && dnnl_memory_desc_equal(&t.xb_md, md) &&
                (t.ws_bytes <= b->ws_bytes || ws) && (!b->from_blocked) == (!t.from_blocked);
    if (!same) { conv_clear(&t); return false; }
    if (ws && t.ws_bytes > *ws) *ws = t.ws_bytes;
    t.desc = b->desc;
    t.mode = b->mode;
    conv_clear(b);
    *b = t;
    return true;
}

static bool link_one(pvk_dnnl_conv *a, pvk_dnnl_conv *b, size_t *ws)
{
    if (!a || !b || a->out_linked || b->in_linked || !a->from_blocked || !b->to_blocked) return false;
    if (a->desc.bf16 && b->desc.bf16 && !a->desc.dst_bf16) {
        /* remake a to write bf16 into a spare object; keep a as it was if that fails */
        pvk_dnnl_conv t;
        memset(&t, 0, sizeof t);
        t.threads = a->threads;
        pvk_dnnl_conv_desc d = a->desc;
        d.dst_bf16 = true;
        int saved = pvk_dnnl_team_enter(t.threads);
        int rc = build(&t, &d, a->weights, &a->w_md_q, a->mode, a->in_linked ? &a->xb_md : NULL);
        pvk_dnnl_team_leave(saved, t.threads);
        /* a's own input may already be linked to its producer: its X layout must not move */
        bool fits = rc == BUILD_OK && t.from_blocked && dnnl_memory_desc_equal(&t.yb_md, &b->xb_md) &&
                    dnnl_memory_desc_get_size(&t.yb_md) <= t.y_plain_bytes && t.ws_bytes <= a->ws_bytes &&
                    (!a->in_linked || (t.to_blocked && dnnl_memory_desc_equal(&t.xb_md, &a->xb_md)));
        if (!fits) { conv_clear(&t); return false; }
        conv_clear(a);
        t.desc = d;
        t.mode = a->mode;
        t.in_linked = a->in_linked;
        *a = t;
    }
    if (!dnnl_memory_desc_equal(&a->yb_md, &b->xb_md) && !read_layout(b, &a->yb_md, ws)) return false;
    if (dnnl_memory_desc_get_size(&a->yb_md) > a->y_plain_bytes) return false;
    a->out_linked = true;
    b->in_linked = true;
    snprintf(a->impl + strlen(a->impl), sizeof a->impl - strlen(a->impl), "%s", "/linked-out");
    return true;
}

bool pvk_dnnl_conv_link(pvk_dnnl_conv *a, pvk_dnnl_conv *b) { return link_one(a, b, NULL); }

bool pvk_dnnl_conv_link_all(pvk_dnnl_conv *a, pvk_dnnl_conv *const *b, int n, size_t *ws)
{
    if (n == 1) return link_one(a, b[0], ws ? &ws[0] : NULL);
    /* fan-out: the producer is never remade (a bf16 producer would have to write bf16 for all) */
    if (n < 1 || !a || a->out_linked || !a->from_blocked || (a->desc.bf16 && !a->desc.dst_bf16)) return false;
    for (int i = 0; i < n; i++) {
        if (!b[i] || b[i]->in_linked || !b[i]->to_blocked) return false;
        for (int j = 0; j < i; j++) if (b[j] == b[i]) return false;
    }
    /* a consumer remade to read a's layout still works alone (it reorders from NCHW), so a
     * later refusal leaves nothing half-linked */
    for (int i = 0; i < n; i++)
        if (!dnnl_memory_desc_equal(&a->yb_md, &b[i]->xb_md) && !read_layout(b[i], &a->yb_md, ws ? &ws[i] : NULL))
            return false;
    if (dnnl_memory_desc_get_size(&a->yb_md) > a->y_plain_bytes) return false;
    a->out_linked = true;
    snprintf(a->impl + strlen(a->impl), sizeof a->impl - strlen(a->impl), "%s", "/linked-out");
    for (int i = 0; i < n; i++) b[i]->in_linked = true;
    return true;
}

bool pvk_dnnl_conv_linked_in(const pvk_dnnl_conv *c) { return c && c->in_linked; }
bool pvk_dnnl_conv_linked_out(const pvk_dnnl_conv *c) { return c && c->out_linked; }

pv_status pvk_dnnl_conv_run(pvk_dnnl_conv *c, const float *x, const float *bias, float *y, void *ws)
{
    /* linked ends: the plan's tensor holds the primitive's own layout, no reorder */
    dnnl_status_t e = bind(c->in_linked ? c->xb : c->x, &c->bound_x, x);
    if (e == dnnl_success) e = bind(c->out_linked ? c->yb : c->y, &c->bound_y, y);
    if (e == dnnl_success && c->b) e = bind(c->b, &c->bound_b, bias);
    if (e == dnnl_success && c->bound_ws != ws) {
        c->bound_ws = ws;
        if (c->scratch) e = dnnl_memory_set_data_handle(c->scratch, ws);
        if (e == dnnl_success && c->to_blocked && !c->in_linked) e = dnnl_memory_set_data_handle(c->xb, (char *)ws + c->xb_off);
        if (e == dnnl_success && c->from_blocked && !c->out_linked) e = dnnl_memory_set_data_handle(c->yb, (char *)ws + c->yb_off);
        if (e != dnnl_success) c->bound_ws = NULL;
    }
    if (e != dnnl_success) return pvc_fail(NULL, PV_EINTERNAL, "oneDNN convolution: binding buffers failed (status %d)", (int)e);
    int saved = pvk_dnnl_team_enter(c->threads);
    if (c->to_blocked && !c->in_linked) {
        dnnl_exec_arg_t a[] = { { DNNL_ARG_FROM, c->x }, { DNNL_ARG_TO, c->xb } };
        e = dnnl_primitive_execute(c->to_blocked, c->stream, 2, a);
    }
    if (e == dnnl_success && c->own) {
        e = dnnl_stream_wait(c->stream);   /* X's reorder done before the kernel reads it */
        const float *xb = c->in_linked || !c->to_blocked ? x : (const float *)((char *)ws + c->xb_off);
        float *yb = c->out_linked || !c->from_blocked ? y : (float *)((char *)ws + c->yb_off);
        if (e == dnnl_success) pvk_wino_run(c->own, c->pool, xb, bias, yb, ws);
    } else if (e == dnnl_success) {
        dnnl_exec_arg_t a[5] = { { DNNL_ARG_SRC, c->xb }, { DNNL_ARG_WEIGHTS, c->w }, { DNNL_ARG_DST, c->yb } };
        int na = 3;
        if (c->b) a[na++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, c->b };
        if (c->scratch) a[na++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, c->scratch };
        e = dnnl_primitive_execute(c->conv, c->stream, na, a);
    }
    if (e == dnnl_success && c->from_blocked && !c->out_linked) {
        dnnl_exec_arg_t a[] = { { DNNL_ARG_FROM, c->yb }, { DNNL_ARG_TO, c->y } };
        e = dnnl_primitive_execute(c->from_blocked, c->stream, 2, a);
    }
    if (e == dnnl_success) e = dnnl_stream_wait(c->stream);
    pvk_dnnl_team_leave(saved, c->threads);
    if (e != dnnl_success) return pvc_fail(NULL, PV_EINTERNAL, "oneDNN convolution (%s) failed (status %d)", c->impl, (int)e);
    return PV_OK;
}

void pvk_dnnl_conv_free(pvk_dnnl_conv *c)
{
    if (!c) return;
    conv_clear(c);
    pvc_free(c);
}

const char *pvk_dnnl_conv_impl(const pvk_dnnl_conv *c) { return c ? c->impl : "none"; }

#else /* no oneDNN in this build: every convolution takes perceive's own path */

pvk_dnnl_mode pvk_dnnl_conv_pick(const pvk_dnnl_conv_desc *d) { (void)d; return PVK_DNNL_OFF; }

bool pvk_dnnl_winograd_pick(const pvk_dnnl_conv_desc *d) { (void)d; return false; }

bool pvk_dnnl_available(void) { return false; }

pv_status pvk_dnnl_conv_create(const pvk_dnnl_conv_desc *d, const float *w, int threads,
                               pvk_dnnl_mode mode, pvk_dnnl_conv **out, size_t *workspace,
                               pvc_msg *msg)
{
    (void)d; (void)w; (void)threads; (void)mode; (void)msg;
    *out = NULL;
    *workspace = 0;
    return PV_OK;
}

pv_status pvk_dnnl_conv_run(pvk_dnnl_conv *c, const float *x, const float *bias, float *y, void *ws)
{
    (void)c; (void)x; (void)bias; (void)y; (void)ws;
    return pvc_fail(NULL, PV_EINTERNAL, "oneDNN is not built into this binary");
}

void pvk_dnnl_conv_free(pvk_dnnl_conv *c) { (void)c; }

bool pvk_dnnl_conv_link(pvk_dnnl_conv *producer, pvk_dnnl_conv *consumer) { (void)producer; (void)consumer; return false; }
bool pvk_dnnl_conv_link_all(pvk_dnnl_conv *producer, pvk_dnnl_conv *const *consumers, int n, size_t *ws)
{
    (void)producer; (void)consumers; (void)n; (void)ws;
    return false;
}
bool pvk_dnnl_conv_linked_in(const pvk_dnnl_conv *c) { (void)c; return false; }
bool pvk_dnnl_conv_linked_out(const pvk_dnnl_conv *c) { (void)c; return false; }

const char *pvk_dnnl_conv_impl(const pvk_dnnl_conv *c) { (void)c; return "none"; }

#endif
