/* perceive::Linear: a transformer's linear layer with its epilogue in one node. Made by the
 * linear fusion pass (src/graph/passes/linear.c) from MatMul + Add(bias) [+ Gelu] [+ Add] and
 * Gemm [+ Gelu] [+ Add] chains; built in under the "perceive" domain.
 *   inputs:  X [..., K] f32; W constant f32, [K, N] (or [N, K] with transB); bias [N] f32
 *            (optional, "" when absent); R (optional): the residual, any shape that broadcasts
 *            with Y's
 *   attrs:   transB (int, 0), alpha (float, 1: scales W), activation (string): "none" (default),
 *            "gelu" (erf form) or "gelu_tanh"
 *   output:  Y = gelu?(alpha X op(W) + bias) [+ R], shape X.dims[:-1] + [N] broadcast with R's
 * The product runs on the pre-packed GEMM (kernels/gemm_packed.h) with bias, GELU and a residual
 * of Y's own shape applied per C block by its epilogue hook (pvk_gemm_packed_run_ep), or on
 * oneDNN's matmul where its table picks the shape (bias inside, GELU and residual after, over the
 * output). A residual that broadcasts is added after the product, from the workspace when it
 * widens Y. Plans of a graph with share_packed share one packed copy of W (as Gemm does). */
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/gemm_packed.h"
#include "kernels/ref/eltwise_simd.h"

#include <string.h>

typedef struct linear_params {
    int64_t M, N, K;               /* M: rows of X (all of its leading dims) */
    bool    tb, has_bias, has_res;
    float   alpha;
    int     map;                   /* -1 none, else a pvk_vun_op (GELU forms) */
    bool    res_direct;            /* R has Y's shape, and so has the output: epilogue residual */
    bool    widen;                 /* the output is larger than Y: Y goes to the workspace */
    int     orank;
    int64_t odims[PV_MAX_RANK];
    int64_t ystr[PV_MAX_RANK], rstr[PV_MAX_RANK];   /* element strides over the output (0: broadcast) */
    pvk_gemm_packed *packed;
    pvk_dnnl_matmul *dnnl;
    size_t  dnnl_ws;               /* workspace bytes oneDNN needs (Y's copy follows it) */
    int64_t pk_ws;                 /* packed: workspace offset of A packed once (-1: none) */
} linear_params;
_Static_assert(sizeof(linear_params) <= PVG_PARAMS_BYTES, "linear params");

static pv_status make_kernel(pvg_prep *p, linear_params *l, const pvc_tensor *W)
{
    pv_status s;
    pvc_msg msg = {{0}};
    int64_t ldb = l->tb ? l->K : l->N;
    int wv = p->node && p->node->in ? p->node->in[1] : -1;
    bool share = p->g && p->g->share_packed && wv >= 0 && p->g->values[wv].is_const;
    if (pvk_dnnl_matmul_pick(l->M, l->N, l->K, p->precision, p->threads, share)) {
        pvk_dnnl_weights *w = share ? pvg_shared_dnnl_find(p->g, wv, l->tb, l->alpha, p->precision) : NULL;
        s = pvk_dnnl_matmul_create_shared(l->M, l->N, l->K, l->K, W->data, ldb, l->tb, l->alpha, l->N, l->has_bias, NULL,
                                          p->precision, p->threads, w, &l->dnnl, &l->dnnl_ws, &msg);
        if (s == PV_OK && l->dnnl && share && !w)
            s = pvg_shared_dnnl_add(p->g, wv, l->tb, l->alpha, p->precision, pvk_dnnl_matmul_weights(l->dnnl));
        pvk_dnnl_weights_release(w);
        if (s != PV_OK) return pvg_prep_fail(p, s, "%s", msg.text[0] ? msg.text : p->g->msg.text);
        if (l->dnnl) return PV_OK;
    }
    l->packed = share ? pvg_shared_packed_find(p->g, wv, l->tb, l->alpha, p->precision) : NULL;
    if (l->packed) return PV_OK;
    if (!W->data) return pvg_prep_fail(p, PV_EFORMAT, "W must be a constant");
    if ((s = pvk_gemm_packed_create(l->K, l->N, W->data, ldb, l->tb, l->alpha, p->precision, NULL, &l->packed, &msg)) != PV_OK)
        return pvg_prep_fail(p, s, "%s", msg.text);
    if (share && (s = pvg_shared_packed_add(p->g, wv, l->tb, l->alpha, p->precision, l->packed)) != PV_OK)
        return pvg_prep_fail(p, s, "%s", p->g->msg.text);
    return PV_OK;
}

static pv_status linear_prepare(pvg_prep *p)
{
    pv_status s;
    linear_params *l = p->params;
    if (p->nin < 2 || p->nin > 4 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 to 4 inputs and 1 output, got %d and %d", p->nin, p->nout);
    if (!pvg_has_in(p, 0) || !pvg_has_in(p, 1)) return pvg_prep_fail(p, PV_EFORMAT, "X and W are required");
    for (int i = 0; i < p->nin; i++)
        if (pvg_has_in(p, i) && (s = pvg_check_dtype(p, i, 1u << PV_F32)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0], *W = &p->in[1];
    int64_t tb, one = 1;
    const char *act;
    if ((s = pvg_attr_int(p, "transB", 0, &tb)) != PV_OK || (s = pvg_attr_float(p, "alpha", 1.0f, &l->alpha)) != PV_OK ||
        (s = pvg_attr_string(p, "activation", "none", &act)) != PV_OK)
        return s;
    l->tb = tb != 0;
    if (!strcmp(act, "none")) l->map = -1;
    else if (!strcmp(act, "gelu")) l->map = PVK_VU_GELU;
    else if (!strcmp(act, "gelu_tanh")) l->map = PVK_VU_GELU_TANH;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'activation'='%s' must be 'none', 'gelu' or 'gelu_tanh'", act);
    if (X->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "X must have rank >= 1, got %d", X->rank);
    if (W->rank != 2) return pvg_prep_fail(p, PV_EFORMAT, "W must be 2-D, got rank %d", W->rank);
    l->K = X->dims[X->rank - 1];
    l->N = l->tb ? W->dims[0] : W->dims[1];
    int64_t wk = l->tb ? W->dims[1] : W->dims[0];
    if (wk != l->K)
        return pvg_prep_fail(p, PV_EFORMAT, "X has K=%lld but W has K=%lld", (long long)l->K, (long long)wk);
    if (l->K < 1 || l->N < 1) return pvg_prep_fail(p, PV_EFORMAT, "K=%lld and N=%lld must be >= 1", (long long)l->K, (long long)l->N);
    l->M = 1;
    for (int d = 0; d + 1 < X->rank; d++) l->M *= X->dims[d];
    l->has_bias = pvg_has_in(p, 2);
    if (l->has_bias && pvc_numel(&p->in[2]) != l->N)
        return pvg_prep_fail(p, PV_EFORMAT, "bias has %lld values, N is %lld", (long long)pvc_numel(&p->in[2]), (long long)l->N);
    /* Y's shape, then the output's: Y broadcast with R */
    int yrank = X->rank;
    int64_t ydims[PV_MAX_RANK];
    for (int d = 0; d + 1 < X->rank; d++) ydims[d] = X->dims[d];
    ydims[yrank - 1] = l->N;
    l->has_res = p->nin > 3 && pvg_has_in(p, 3);
    l->orank = yrank;
    memcpy(l->odims, ydims, sizeof(int64_t) * (size_t)yrank);
    if (l->has_res) {
        const pvc_tensor *R = &p->in[3];
        l->orank = PVC_MAX(yrank, R->rank);
        for (int d = 0; d < l->orank; d++) {
            int iy = d - (l->orank - yrank), ir = d - (l->orank - R->rank);
            int64_t a = iy >= 0 ? ydims[iy] : one, b = ir >= 0 ? R->dims[ir] : one;
            if (a != b && a != 1 && b != 1)
                return pvg_prep_fail(p, PV_EFORMAT, "residual dim %d is %lld, Y's is %lld: they do not broadcast", d,
                                     (long long)b, (long long)a);
            l->odims[d] = a == 1 ? b : a;
        }
        l->res_direct = R->rank == yrank && !memcmp(R->dims, ydims, sizeof(int64_t) * (size_t)yrank);
        if (!l->res_direct) {
            pvk_broadcast_strides(l->orank, l->odims, yrank, ydims, l->ystr);
            pvk_broadcast_strides(l->orank, l->odims, R->rank, R->dims, l->rstr);
            for (int d = 0; d < l->orank; d++)
                if (l->ystr[d] == 0 && l->odims[d] > 1) l->widen = true;
        }
    }
    pvg_out_set(p, 0, PV_F32, l->orank, l->odims);
    if ((s = make_kernel(p, l, W)) != PV_OK) return s;
    p->consumed = 1u << 1;   /* W lives on the packed / reordered copy */
    p->workspace = (l->dnnl_ws + 63) / 64 * 64 + (l->widen ? (size_t)(l->M * l->N) * sizeof(float) : 0);
    l->pk_ws = l->packed ? pvg_ws_append(p, pvk_gemm_packed_ws_bytes(l->packed, l->M)) : -1;
    return PV_OK;
}

static void linear_release(void *params)
{
    linear_params *l = params;
    pvk_gemm_packed_free(l->packed);
    pvk_dnnl_matmul_free(l->dnnl);
    l->packed = NULL;
    l->dnnl = NULL;
}

/* out[i] += src[offset of i] over the output's index space (src strides 0 on broadcast axes),
 * or out[i] = src[...] when assign. */
static void add_broadcast(float *out, const int64_t *dims, int rank, const float *src, const int64_t *str, bool assign)
{
    int64_t idx[PV_MAX_RANK] = { 0 }, n = 1, off = 0;
    for (int d = 0; d < rank; d++) n *= dims[d];
    for (int64_t i = 0; i < n; i++) {
        out[i] = assign ? src[off] : out[i] + src[off];
        for (int d = rank - 1; d >= 0; d--) {   /* next index, odometer style */
            off += str[d];
            if (++idx[d] < dims[d]) break;
            off -= str[d] * dims[d];
            idx[d] = 0;
        }
    }
}

typedef struct res_rows { float *y; const float *r; int64_t n; } res_rows;

static void res_rows_fn(void *ctx, int64_t begin, int64_t end, int tid)
{
    const res_rows *c = ctx;
    (void)tid;
    for (int64_t i = begin; i < end; i++)
        for (int64_t j = 0; j < c->n; j++) c->y[i * c->n + j] += c->r[i * c->n + j];
}

static pv_status linear_run(const pvg_exec *x)
{
    const linear_params *l = x->params;
    const float *X = x->in[0].data, *bias = l->has_bias ? x->in[2].data : NULL;
    const float *R = l->has_res ? x->in[3].data : NULL;
    float *out = x->out[0].data;
    float *Y = l->widen ? (float *)((char *)x->ws + (l->dnnl_ws + 63) / 64 * 64) : out;
    pvk_gemm_map_fn map = l->map >= 0 ? pvk_vec_selected()->unary[l->map] : NULL;
    if (l->dnnl) {
        pv_status s = pvk_dnnl_matmul_run(l->dnnl, X, bias, Y, x->ws);
        if (s != PV_OK) return s;
        if (l->map >= 0) pvk_vunary(x->pool, (pvk_vun_op)l->map, Y, Y, l->M * l->N);
        if (R && l->res_direct) {
            res_rows c = { Y, R, l->N };
            pvc_parallel_for(x->pool, l->M, 16, res_rows_fn, &c);
        }
    } else {
        pvk_gemm_epilogue ep = { bias, NULL, map, R && l->res_direct ? R : NULL, l->N };
        pvk_gemm_packed_run_ws(l->packed, x->pool, l->M, X, l->K, false, Y, l->N, 0.0f, &ep, pvg_ws_at(x, l->pk_ws));
    }
    if (R && !l->res_direct) {
        if (l->widen) add_broadcast(out, l->odims, l->orank, Y, l->ystr, true);
        add_broadcast(out, l->odims, l->orank, R, l->rstr, false);
    }
    return PV_OK;
}

const pvg_op pvg_op_Linear = { "Linear", "perceive", 0, linear_prepare, linear_run, linear_release };
