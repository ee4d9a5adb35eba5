/* CumSum: running sums along the 'axis' input, 'exclusive' (each element excludes itself) and
 * 'reverse' (from the end). f16/bf16 accumulate in f32; integers wrap (exact modulo 2^n).
 * The axis does not change the output shape, so it may be a run-time value (checked in run). */
#include "graph/ops/axis_view.h"

#include <string.h>

typedef struct cumsum_params { int axis; bool exclusive, reverse; } cumsum_params;   /* axis -1: run time */

static pv_status cumsum_prepare(pvg_prep *p)
{
    if (p->nin < 2 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | (1u << PV_I64) | (1u << PV_I32));
    if (s) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32)))) return s;
    int64_t exclusive, reverse;
    if ((s = pvg_attr_int(p, "exclusive", 0, &exclusive))) return s;
    if ((s = pvg_attr_int(p, "reverse", 0, &reverse))) return s;
    if ((exclusive != 0 && exclusive != 1) || (reverse != 0 && reverse != 1))
        return pvg_prep_fail(p, PV_EFORMAT, "attributes 'exclusive'=%lld and 'reverse'=%lld must be 0 or 1",
                             (long long)exclusive, (long long)reverse);
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'x' must have rank >= 1");
    if (pvc_numel(&p->in[1]) != 1) return pvg_prep_fail(p, PV_EFORMAT, "'axis' must be a scalar");
    cumsum_params *cp = p->params;
    cp->axis = -1;
    cp->exclusive = exclusive;
    cp->reverse = reverse;
    if (p->in[1].data) {
        int ax;
        if ((s = pvg_axis(p, pvc_get_i64(p->in[1].data, p->in[1].dtype, 0), in->rank, "'axis'", &ax))) return s;
        cp->axis = ax;
    }
    /* one accumulator per column: inner elements, at most prod(dims[1:]) for a run-time axis */
    int64_t inner = 1;
    for (int i = (cp->axis < 0 ? 0 : cp->axis) + 1; i < in->rank; i++) inner *= in->dims[i];
    p->workspace = (size_t)PVC_MAX(inner, (int64_t)1) * 8;
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    return PV_OK;
}

static pv_status cumsum_run(const pvg_exec *x)
{
    const cumsum_params *cp = x->params;
    const pvc_tensor *in = &x->in[0];
    int ax = cp->axis, r = in->rank;
    if (ax < 0) {
        int64_t a = pvc_get_i64(x->in[1].data, x->in[1].dtype, 0);
        if (a < -r || a >= r)
            return pvc_fail(NULL, PV_EINPUT, "CumSum: axis %lld out of range [%d,%d) in node '%s'", (long long)a, -r, r,
                            x->node && x->node->name ? x->node->name : "");
        ax = (int)(a < 0 ? a + r : a);
    }
    int64_t outer, n = in->dims[ax], inner;
    pvg_axis_outer_inner(r, in->dims, ax, &outer, &inner);
    pv_dtype t = in->dtype;
    const void *src = in->data;
    void *dst = x->out[0].data;
    /* Walk whole rows of 'inner' elements along the axis, one running sum per column (in the
     * workspace), so every access is contiguous. */
    double *facc = x->ws;
    uint64_t *iacc = x->ws;
    for (int64_t o = 0; o < outer; o++) {
        memset(x->ws, 0, (size_t)inner * 8);            /* 0 and 0.0 alike */
        for (int64_t jj = 0; jj < n; jj++) {
            int64_t row = (o * n + (cp->reverse ? n - 1 - jj : jj)) * inner;
            if (t == PV_F32) {
                const float *a = (const float *)src + row;
                float *b = (float *)dst + row;
                for (int64_t i = 0; i < inner; i++) {
                    float v = a[i];                     /* read first: safe if dst == src */
                    if (cp->exclusive) b[i] = (float)facc[i];
                    facc[i] = (float)(facc[i] + v);     /* rounded like f32 arithmetic */
                    if (!cp->exclusive) b[i] = (float)facc[i];
                }
            } else if (pvc_dtype_is_float(t)) {
                for (int64_t i = 0; i < inner; i++) {
                    double v = pvc_get_f64(src, t, row + i);
                    if (cp->exclusive) pvc_set_f64(dst, t, row + i, facc[i]);
                    facc[i] = (float)(facc[i] + v);     /* f16/bf16 accumulate in f32 */
                    if (!cp->exclusive) pvc_set_f64(dst, t, row + i, facc[i]);
                }
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    uint64_t v = (uint64_t)pvc_get_i64(src, t, row + i);
                    if (cp->exclusive) pvc_set_i64(dst, t, row + i, (int64_t)iacc[i]);
                    iacc[i] += v;                       /* unsigned: wraps, no overflow UB */
                    if (!cp->exclusive) pvc_set_i64(dst, t, row + i, (int64_t)iacc[i]);
                }
            }
        }
    }
    return PV_OK;
}

const pvg_op pvg_op_CumSum = { "CumSum", "", 0, cumsum_prepare, cumsum_run };
