/* Gemm: Y = alpha * op(A) * op(B) + beta * C, op = optional transpose, C optional and
 * unidirectionally broadcast to [M, N]; fused activation. Float only (f16/bf16 through f32);
 * integer Gemm is refused (alpha/beta are floats there, with no exact meaning).
 * f32 with a constant B and A not transposed (a linear layer): alpha * op(B) is packed once in
 * prepare (kernels/gemm_packed.h) or handed to oneDNN's matmul where its measured table takes
 * the shape (kernels/dnnl/matmul_dnnl.h), in p->precision; a C row [N] with beta 1 becomes the
 * kernels' bias, any other C is written as beta * C first and accumulated onto. */
#include "graph/ops/lowp.h"
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/gemm_packed.h"
#include "kernels/ref/conv.h"

#include <string.h>

typedef struct gemm_params {
    int64_t M, N, K;
    bool    ta, tb, has_c;
    float   alpha, beta;
    int64_t c_rs, c_cs;     /* element strides of C over rows / columns (0 = broadcast) */
    bool    c_bias;         /* C is a [N] row with beta 1: the kernels' bias */
    pvk_gemm_packed *packed;   /* constant B, f32, A not transposed: made in prepare (else NULL) */
    pvk_dnnl_matmul *dnnl;     /* ... or oneDNN's matmul, when its table takes the shape */
    int64_t pk_ws;             /* packed: workspace offset of A packed once (-1: none) */
} gemm_params;
_Static_assert(sizeof(gemm_params) <= PVG_PARAMS_BYTES, "gemm params");

static pv_status gemm_prepare(pvg_prep *p)
{
    pv_status s;
    gemm_params *g = p->params;
    if (p->nin < 2 || p->nin > 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 or 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    int64_t ta, tb;
    memset(g, 0, sizeof *g);
    if ((s = pvg_attr_int(p, "transA", 0, &ta)) != PV_OK || (s = pvg_attr_int(p, "transB", 0, &tb)) != PV_OK ||
        (s = pvg_attr_float(p, "alpha", 1.0f, &g->alpha)) != PV_OK || (s = pvg_attr_float(p, "beta", 1.0f, &g->beta)) != PV_OK)
        return s;
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return pvg_prep_fail(p, PV_EFORMAT, "attributes 'transA'=%lld / 'transB'=%lld must be 0 or 1", (long long)ta, (long long)tb);
    for (int i = 0; i < 2; i++)
        if ((s = pvg_check_dtype(p, i, PVG_FLOATS)) != PV_OK) return s;
    const pvc_tensor *A = &p->in[0], *B = &p->in[1];
    g->has_c = pvg_has_in(p, 2);
    if (B->dtype != A->dtype || (g->has_c && p->in[2].dtype != A->dtype))
        return pvg_prep_fail(p, PV_EFORMAT, "A, B and C must share one dtype");
    if (A->rank != 2 || B->rank != 2)
        return pvg_prep_fail(p, PV_EFORMAT, "A and B must be 2-D (got rank %d and %d)", A->rank, B->rank);
    g->ta = ta;
    g->tb = tb;
    g->M = A->dims[ta ? 1 : 0];
    g->K = A->dims[ta ? 0 : 1];
    int64_t kb = B->dims[tb ? 1 : 0];
    g->N = B->dims[tb ? 0 : 1];
    if (kb != g->K)
        return pvg_prep_fail(p, PV_EFORMAT, "inner dims differ: op(A) is [%lld, %lld], op(B) is [%lld, %lld]",
                             (long long)g->M, (long long)g->K, (long long)kb, (long long)g->N);
    if (g->has_c) {
        const pvc_tensor *C = &p->in[2];
        int64_t cr = C->rank == 2 ? C->dims[0] : 1, cc = C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        if (C->rank > 2 || (cr != 1 && cr != g->M) || (cc != 1 && cc != g->N))
            return pvg_prep_fail(p, PV_EFORMAT, "C does not broadcast to [%lld, %lld]", (long long)g->M, (long long)g->N);
        g->c_rs = cr == 1 ? 0 : cc;
        g->c_cs = cc == 1 ? 0 : 1;
    }
    int64_t od[2] = { g->M, g->N };
    pvg_out_set(p, 0, A->dtype, 2, od);
    p->workspace = pvg_lowp_bytes(p);
    int bv = p->g && p->g->share_packed && p->node && p->node->in ? p->node->in[1] : -1;
    if (p->g && p->g->share_packed && A->dtype == PV_F32 && !g->ta && g->M > 0 && g->N > 0 && g->K > 0 && bv >= 0 &&
        p->g->values[bv].is_const) {
        /* one packed copy per weight for every plan of the graph (graph.h: share_packed); oneDNN's
         * matmul objects are made per M, so they are not used here */
        pvc_msg msg = {{0}};
        g->c_bias = g->has_c && g->beta == 1.0f && g->c_rs == 0 && g->c_cs == 1;
        bool dnnl_ok = !g->has_c || g->beta == 0.0f || g->c_bias;
        if (dnnl_ok && pvk_dnnl_matmul_pick(g->M, g->N, g->K, p->precision, p->threads, true)) {
            /* oneDNN's matmul is made per M; its reordered weights are shared when the layout
             * it wants for this M is the one the first plan reordered to (else: packed GEMM) */
            pvk_dnnl_weights *w = pvg_shared_dnnl_find(p->g, bv, g->tb, g->alpha, p->precision);
            s = pvk_dnnl_matmul_create_shared(g->M, g->N, g->K, g->K, B->data, g->tb ? g->K : g->N, g->tb, g->alpha, g->N,
                                              g->c_bias, &p->node->act, p->precision, p->threads, w, &g->dnnl, &p->workspace,
                                              &msg);
            if (s == PV_OK && g->dnnl && !w) s = pvg_shared_dnnl_add(p->g, bv, g->tb, g->alpha, p->precision, pvk_dnnl_matmul_weights(g->dnnl));
            pvk_dnnl_weights_release(w);
            if (s != PV_OK) return pvg_prep_fail(p, s, "%s", msg.text[0] ? msg.text : p->g->msg.text);
            if (g->dnnl) { p->consumed = 1u << 1; return PV_OK; }
        }
        g->packed = pvg_shared_packed_find(p->g, bv, g->tb, g->alpha, p->precision);
        if (!g->packed && B->data) {
            if ((s = pvk_gemm_packed_create(g->K, g->N, B->data, g->tb ? g->K : g->N, g->tb, g->alpha, p->precision, NULL, &g->packed,
                                            &msg)) != PV_OK)
                return pvg_prep_fail(p, s, "%s", msg.text);
            if ((s = pvg_shared_packed_add(p->g, bv, g->tb, g->alpha, p->precision, g->packed)) != PV_OK)
                return pvg_prep_fail(p, s, "%s", p->g->msg.text);
        }
        if (g->packed) {
            p->consumed = 1u << 1;
            g->pk_ws = pvg_ws_append(p, pvk_gemm_packed_ws_bytes(g->packed, g->M));
            return PV_OK;
        }
    }
    if (A->dtype == PV_F32 && B->data && !g->ta && g->M > 0 && g->N > 0 && g->K > 0) {
        pvc_msg msg = {{0}};
        int64_t ldb = g->tb ? g->K : g->N;
        g->c_bias = g->has_c && g->beta == 1.0f && g->c_rs == 0 && g->c_cs == 1;
        bool dnnl_ok = !g->has_c || g->beta == 0.0f || g->c_bias;
        if (dnnl_ok && pvk_dnnl_matmul_pick(g->M, g->N, g->K, p->precision, p->threads, false)) {
            if ((s = pvk_dnnl_matmul_create(g->M, g->N, g->K, g->K, B->data, ldb, g->tb, g->alpha, g->N, g->c_bias,
                                            &p->node->act, p->precision, p->threads, &g->dnnl, &p->workspace, &msg)) != PV_OK)
                return pvg_prep_fail(p, s, "%s", msg.text);
            if (g->dnnl) { p->consumed = 1u << 1; return PV_OK; }   /* B reordered into oneDNN's copy */
        }
        if ((s = pvk_gemm_packed_create(g->K, g->N, B->data, ldb, g->tb, g->alpha, p->precision, NULL, &g->packed, &msg)) != PV_OK)
            return pvg_prep_fail(p, s, "%s", msg.text);
        if (g->packed) p->consumed = 1u << 1;   /* B lives on packed */
        g->pk_ws = pvg_ws_append(p, pvk_gemm_packed_ws_bytes(g->packed, g->M));
    }
    return PV_OK;
}

static void gemm_release(void *params)
{
    gemm_params *g = params;
    pvk_gemm_packed_free(g->packed);
    pvk_dnnl_matmul_free(g->dnnl);
    g->packed = NULL;
    g->dnnl = NULL;
}

static pv_status gemm_run_f32(const pvg_exec *x)
{
    const gemm_params *g = x->params;
    const float *A = x->in[0].data, *B = x->in[1].data;
    float *Y = x->out[0].data;
    float beta = 0.0f;
    if (g->packed && (!g->has_c || g->beta == 0.0f || g->c_bias)) {
        pvk_gemm_epilogue ep = { g->c_bias ? x->in[2].data : NULL, &x->node->act, NULL, NULL, 0 };
        pvk_gemm_packed_run_ws(g->packed, x->pool, g->M, A, g->K, false, Y, g->N, 0.0f, &ep, pvg_ws_at(x, g->pk_ws));
        return PV_OK;
    }
    if (g->has_c && g->beta != 0.0f) {   /* Y = beta * C first, then the GEMM accumulates */
        const float *C = x->in[2].data;
        for (int64_t i = 0; i < g->M; i++)
            for (int64_t j = 0; j < g->N; j++) Y[i * g->N + j] = g->beta * C[i * g->c_rs + j * g->c_cs];
        beta = 1.0f;
    }
    if (g->packed) {
        pvk_gemm_epilogue ep = { NULL, &x->node->act, NULL, NULL, 0 };
        pvk_gemm_packed_run_ws(g->packed, x->pool, g->M, A, g->K, false, Y, g->N, beta, &ep, pvg_ws_at(x, g->pk_ws));
        return PV_OK;
    }
    pvk_gemm_f32(x->pool, g->M, g->N, g->K, A, g->ta ? g->M : g->K, g->ta, B, g->tb ? g->K : g->N, g->tb,
                 Y, g->N, g->alpha, beta);
    pvk_bias_act_f32(x->pool, Y, 1, g->M, g->N, NULL, &x->node->act);
    return PV_OK;
}

static pv_status gemm_run(const pvg_exec *x)
{
    const gemm_params *g = x->params;
    if (g->dnnl) return pvk_dnnl_matmul_run(g->dnnl, x->in[0].data, g->c_bias ? x->in[2].data : NULL, x->out[0].data, x->ws);
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, gemm_run_f32) : gemm_run_f32(x);
}

const pvg_op pvg_op_Gemm = { "Gemm", "", PVG_OP_FUSE_ACT, gemm_prepare, gemm_run, gemm_release };
