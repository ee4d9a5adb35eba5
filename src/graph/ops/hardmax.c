/* Hardmax: 1 at the first maximum along 'axis' (opset 13+, default -1), 0 elsewhere; before
 * opset 13 the input is coerced to 2-D at 'axis' (default 1) and the maximum is taken over all
 * of the trailing elements at once (one 1 per row of the 2-D view). Float dtypes. The index comes from pvk_arg_reduce (kernels/ref/reduce.c) into the workspace, then
 * pvk_hardmax_fill writes the one-hot output (so the output may share the input's buffer). */
#include "graph/ops/axis_view.h"
#include "kernels/ref/extra.h"
#include "kernels/ref/reduce.h"

typedef struct hardmax_params { int64_t outer, n, inner; } hardmax_params;

static pv_status prep_Hardmax(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t axis;
    int ax;
    if ((s = pvg_attr_int(p, "axis", p->opset >= 13 ? -1 : 1, &axis)) != PV_OK) return s;
    hardmax_params *hp = p->params;
    if (p->opset >= 13) {
        if ((s = pvg_axis_view(p, axis, &ax, &hp->outer, &hp->n, &hp->inner)) != PV_OK) return s;
    } else {
        if ((s = pvg_axis(p, axis, in->rank, "attribute 'axis'", &ax)) != PV_OK) return s;
        hp->outer = hp->n = hp->inner = 1;
        for (int d = 0; d < in->rank; d++) *(d < ax ? &hp->outer : &hp->n) *= in->dims[d];
    }
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    p->workspace = (size_t)(hp->outer * hp->inner) * sizeof(int64_t);
    return PV_OK;
}

static pv_status run_Hardmax(const pvg_exec *x)
{
    const hardmax_params *hp = x->params;
    if (hp->n == 0 || hp->outer * hp->inner == 0) return PV_OK;   /* an empty tensor */
    pv_dtype t = x->in[0].dtype;
    pvk_arg_reduce(x->pool, true, false, t, hp->outer, hp->n, hp->inner, x->in[0].data, x->ws);
    pvk_hardmax_fill(t, hp->outer, hp->n, hp->inner, x->ws, x->out[0].data);
    return PV_OK;
}

const pvg_op pvg_op_Hardmax = { "Hardmax", "", PVG_OP_INPLACE, prep_Hardmax, run_Hardmax };
