/* Where: out = condition ? X : Y with all three broadcast (numpy rules). condition is bool,
 * X and Y share any dtype, which the output takes; the work is pvk_where. */
#include "graph/graph.h"
#include "kernels/ref/eltwise.h"

static pv_status prep_Where(pvg_prep *p)
{
    if (p->nin != 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    for (int k = 0; k < 3; k++)
        if (!pvg_has_in(p, k)) return pvg_prep_fail(p, PV_EFORMAT, "input %d is missing", k);
    if (p->in[0].dtype != PV_BOOL)
        return pvg_prep_fail(p, PV_EFORMAT, "input 'condition' must be bool, got %s", pv_dtype_name(p->in[0].dtype));
    pv_dtype t = p->in[1].dtype;
    if (p->in[2].dtype != t)
        return pvg_prep_fail(p, PV_EFORMAT, "inputs 'X' and 'Y' differ in dtype: %s and %s", pv_dtype_name(t),
                             pv_dtype_name(p->in[2].dtype));
    pv_status s = pvg_check_dtype(p, 1, PVG_ANY);
    if (s != PV_OK) return s;
    const pvc_tensor *in[3] = { &p->in[0], &p->in[1], &p->in[2] };
    int rank;
    int64_t dims[PV_MAX_RANK];
    if (!pvk_broadcast_shape(3, in, &rank, dims)) {
        char a[128], b[128], c[128];
        return pvg_prep_fail(p, PV_EFORMAT, "input shapes %s, %s and %s are not broadcastable",
                             pvc_shape_str(in[0], a, sizeof a), pvc_shape_str(in[1], b, sizeof b),
                             pvc_shape_str(in[2], c, sizeof c));
    }
    pvg_out_set(p, 0, t, rank, dims);
    return PV_OK;
}

static pv_status run_Where(const pvg_exec *x)
{
    pvk_where(x->pool, &x->in[0], &x->in[1], &x->in[2], &x->out[0]);
    return PV_OK;
}

const pvg_op pvg_op_Where = { "Where", "", 0, prep_Where, run_Where };
