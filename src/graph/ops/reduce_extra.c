/* ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp. The axes are the
 * 'axes' attribute (opsets 7-17; the optional input 1 from opset 18, which must then be a
 * constant); keepdims; noop_with_empty_axes (opset 18, read whenever present): with no axes it
 * returns the input unchanged, as the spec says (axes handling shared with reduce.c:
 * reduce_axes.h). Floats are computed in f32 (F16/BF16 staged) around pvk_reduce
 * (kernels/ref/reduce.c): an elementwise step into the workspace, the sum (or max), then an
 * elementwise finish. L1, L2, SumSquare and Prod also take the integer
 * dtypes (exact, wrapping like the type; L2 sums squares in int64 and truncates the root). */
#include "graph/ops/lowp.h"
#include "graph/ops/reduce_axes.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/extra.h"
#include "kernels/ref/reduce.h"

#include <math.h>
#include <string.h>

typedef enum { RX_PROD, RX_L1, RX_L2, RX_SUM_SQUARE, RX_LOG_SUM, RX_LOG_SUM_EXP } rx_kind;

typedef struct rx_params {
    rx_kind  kind;
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    unsigned mask;              /* axes reduced (0 for a scalar: each op still applies) */
    bool     copy;              /* noop_with_empty_axes with no axes */
    size_t   ws_b;              /* offset of the per-output scratch in run's workspace */
} rx_params;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static pv_status rx_prepare(pvg_prep *p, rx_kind kind)
{
    if (p->nin < 1 || p->nin > 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 or 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    bool ints = kind != RX_LOG_SUM && kind != RX_LOG_SUM_EXP;
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | (ints ? PVG_INTS : 0u));
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    pvg_reduce_axes ra;
    if ((s = pvg_reduce_axes_read(p, 18, true, &ra))) return s;
    int64_t nout = pvc_numel(&p->out[0]);
    unsigned mask = ra.mask;
    rx_params *rp = p->params;
    rp->kind = kind;
    rp->rank = r;
    memcpy(rp->dims, in->dims, sizeof rp->dims);
    rp->mask = mask;
    rp->copy = ra.noop;

    /* Workspace: [f32 staging][a: elementwise step over x][b: per-output scratch]; run sees
     * x->ws past the staging area, so a and b are offsets from there. */
    bool fl = pvc_dtype_is_float(in->dtype);
    size_t nx = (size_t)pvc_numel(in), ny = (size_t)nout, a = 0, b = 0;
    switch (kind) {
    case RX_PROD: b = pvk_reduce_prod_workspace(r, in->dims, mask); break;
    case RX_L1: case RX_SUM_SQUARE: a = nx * (fl ? sizeof(float) : pv_dtype_size(in->dtype)); break;
    case RX_L2: a = nx * (fl ? sizeof(float) : sizeof(int64_t)); b = fl ? 0 : ny * sizeof(int64_t); break;
    case RX_LOG_SUM: break;
    case RX_LOG_SUM_EXP: a = nx * sizeof(float); b = ny * sizeof(float); break;
    }
    rp->ws_b = align64(a);
    /* Prod reads F16/BF16 directly; the others stage them through f32. */
    p->workspace = (kind == RX_PROD ? 0 : pvg_lowp_bytes(p)) + rp->ws_b + b;
    return PV_OK;
}

/* A tensor of dtype t and the given shape over the workspace at byte offset off. */
static pvc_tensor ws_tensor(const pvg_exec *x, size_t off, pv_dtype t, int rank, const int64_t *dims)
{
    pvc_tensor w;
    memset(&w, 0, sizeof w);
    w.dtype = t;
    w.rank = rank;
    memcpy(w.dims, dims, (size_t)rank * sizeof dims[0]);
    w.data = (char *)x->ws + off;
    return w;
}

/* Integer L1, SumSquare (in the input's dtype: the wrapped sum of wrapped terms is the sum
 * wrapped) and L2 (squares summed in int64, the root truncated). */
static pv_status rx_run_int(const pvg_exec *x)
{
    const rx_params *rp = x->params;
    const pvc_tensor *in = &x->in[0];
    pv_dtype t = in->dtype;
    void *y = x->out[0].data;
    int64_t nx = pvc_numel(in), ny = pvc_numel(&x->out[0]);
    pvk_unary_args ua;
    memset(&ua, 0, sizeof ua);
    if (rp->kind == RX_L1 || rp->kind == RX_SUM_SQUARE) {
        pvc_tensor a = ws_tensor(x, 0, t, in->rank, in->dims);
        if (rp->kind == RX_L1) pvk_unary(x->pool, PVK_UN_ABS, t, in->data, a.data, nx, &ua);
        else pvk_binary(x->pool, PVK_BIN_MUL, in, in, &a);
        pvk_reduce(x->pool, PVK_REDUCE_SUM, t, rp->rank, rp->dims, rp->mask, a.data, y);
        return PV_OK;
    }
    pvc_tensor a = ws_tensor(x, 0, PV_I64, in->rank, in->dims);
    int64_t *b = (int64_t *)((char *)x->ws + rp->ws_b);
    pvk_cast(x->pool, t, in->data, PV_I64, a.data, nx);
    pvk_binary(x->pool, PVK_BIN_MUL, &a, &a, &a);
    pvk_reduce(x->pool, PVK_REDUCE_SUM, PV_I64, rp->rank, rp->dims, rp->mask, a.data, b);
    for (int64_t i = 0; i < ny; i++) {
        int64_t v = b[i] > 0 ? (int64_t)sqrt((double)b[i]) : 0;
        /* exact integer root: correct the double estimate by one step either way */
        while (v > 0 && v > b[i] / v) v--;
        while ((v + 1) <= b[i] / (v + 1)) v++;
        pvc_set_i64(y, t, i, v);
    }
    return PV_OK;
}

static pv_status rx_run_f32(const pvg_exec *x)
{
    const rx_params *rp = x->params;
    const pvc_tensor *in = &x->in[0];
    float *y = x->out[0].data;
    int64_t nx = pvc_numel(in), ny = pvc_numel(&x->out[0]);
    pvk_unary_args ua;
    memset(&ua, 0, sizeof ua);
    switch (rp->kind) {
    case RX_L1: case RX_L2: case RX_SUM_SQUARE: {
        pvc_tensor a = ws_tensor(x, 0, PV_F32, in->rank, in->dims);
        if (rp->kind == RX_L1) pvk_unary(x->pool, PVK_UN_ABS, PV_F32, in->data, a.data, nx, &ua);
        else pvk_binary(x->pool, PVK_BIN_MUL, in, in, &a);
        pvk_reduce(x->pool, PVK_REDUCE_SUM, PV_F32, rp->rank, rp->dims, rp->mask, a.data, y);
        if (rp->kind == RX_L2) pvk_unary(x->pool, PVK_UN_SQRT, PV_F32, y, y, ny, &ua);
        return PV_OK;
    }
    case RX_LOG_SUM:
        pvk_reduce(x->pool, PVK_REDUCE_SUM, PV_F32, rp->rank, rp->dims, rp->mask, in->data, y);
        pvk_unary(x->pool, PVK_UN_LOG, PV_F32, y, y, ny, &ua);
        return PV_OK;
    case RX_LOG_SUM_EXP: {
        int64_t kd[PV_MAX_RANK];   /* the keepdims shape of the max, broadcast against x */
        for (int i = 0; i < rp->rank; i++) kd[i] = (rp->mask >> i) & 1u ? 1 : rp->dims[i];
        pvc_tensor a = ws_tensor(x, 0, PV_F32, in->rank, in->dims);
        pvc_tensor m = ws_tensor(x, rp->ws_b, PV_F32, rp->rank, kd);
        pvk_reduce(x->pool, PVK_REDUCE_MAX, PV_F32, rp->rank, rp->dims, rp->mask, in->data, m.data);
        pvk_exp_sub_f32(x->pool, in, &m, &a);
        pvk_reduce(x->pool, PVK_REDUCE_SUM, PV_F32, rp->rank, rp->dims, rp->mask, a.data, y);
        pvk_log_add_f32(y, m.data, y, ny);
        return PV_OK;
    }
    case RX_PROD: break;
    }
    return PV_EINTERNAL;
}

static pv_status rx_run(const pvg_exec *x)
{
    const rx_params *rp = x->params;
    const pvc_tensor *in = &x->in[0];
    if (rp->copy) {   /* noop_with_empty_axes: the input as is */
        memcpy(x->out[0].data, in->data, pvc_nbytes(in));
        return PV_OK;
    }
    if (rp->kind == RX_PROD) {
        pvk_reduce_prod(x->pool, in->dtype, rp->rank, rp->dims, rp->mask, in->data, x->out[0].data, x->ws);
        return PV_OK;
    }
    if (!pvc_dtype_is_float(in->dtype)) return rx_run_int(x);
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, rx_run_f32) : rx_run_f32(x);
}

#define RX_OP(NAME, KIND)                                                                       \
    static pv_status prep_##NAME(pvg_prep *p) { return rx_prepare(p, KIND); }                   \
    const pvg_op pvg_op_##NAME = { #NAME, "", 0, prep_##NAME, rx_run };

RX_OP(ReduceProd, RX_PROD)
RX_OP(ReduceL1, RX_L1)
RX_OP(ReduceL2, RX_L2)
RX_OP(ReduceSumSquare, RX_SUM_SQUARE)
RX_OP(ReduceLogSum, RX_LOG_SUM)
RX_OP(ReduceLogSumExp, RX_LOG_SUM_EXP)
