/* Trilu (opset 14): keeps the upper (upper=1, j - i >= k) or lower (j - i <= k) triangle of
 * the last two dims and zeroes the rest; any dtype. The diagonal offset k is the optional
 * scalar input 1, which must be known at plan time (a constant or a shape input). */
#include "graph/graph.h"
#include "kernels/ref/extra.h"

typedef struct trilu_params {
    int64_t batch, rows, cols, k;
    bool    upper;
} trilu_params;

static pv_status prep_Trilu(pvg_prep *p)
{
    if (p->opset < 14)
        return pvg_prep_fail(p, PV_EFORMAT, "Trilu is defined from opset 14, the model has opset %d", p->opset);
    if (p->nin < 1 || p->nin > 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1-2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 2) return pvg_prep_fail(p, PV_EFORMAT, "input must have rank >= 2, it has rank %d", in->rank);
    int64_t upper;
    if ((s = pvg_attr_int(p, "upper", 1, &upper)) != PV_OK) return s;
    if (upper != 0 && upper != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'upper'=%lld must be 0 or 1", (long long)upper);
    trilu_params *tp = p->params;
    tp->k = 0;
    if (pvg_has_in(p, 1)) {
        int64_t n;
        if (pvc_numel(&p->in[1]) != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "input 'k' must be a scalar, it has %lld elements", (long long)pvc_numel(&p->in[1]));
        if ((s = pvg_in_const_ints(p, 1, &tp->k, 1, &n)) != PV_OK) return s;
    }
    tp->upper = upper == 1;
    tp->rows = in->dims[in->rank - 2];
    tp->cols = in->dims[in->rank - 1];
    tp->batch = 1;
    for (int i = 0; i < in->rank - 2; i++) tp->batch *= in->dims[i];
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    return PV_OK;
}

static pv_status run_Trilu(const pvg_exec *x)
{
    const trilu_params *tp = x->params;
    pvk_trilu(x->pool, pv_dtype_size(x->in[0].dtype), tp->batch, tp->rows, tp->cols, tp->k, tp->upper,
              x->in[0].data, x->out[0].data);
    return PV_OK;
}

const pvg_op pvg_op_Trilu = { "Trilu", "", PVG_OP_INPLACE, prep_Trilu, run_Trilu };
