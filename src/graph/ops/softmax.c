/* Softmax and LogSoftmax. Opset >= 13: along one axis (default -1). Opset < 13: the input is
 * coerced to 2-D at axis (default 1) and normalised over all trailing elements. Max-subtracted
 * for stability; f16/bf16 through f32. */
#include "graph/ops/lowp.h"
#include "kernels/ref/norm.h"

typedef struct softmax_params { int64_t outer, n, inner; } softmax_params;

static pv_status softmax_prepare(pvg_prep *p)
{
    pv_status s;
    softmax_params *sp = p->params;
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    if ((s = pvg_check_dtype(p, 0, PVG_FLOATS)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0];
    int64_t axis;
    int ax;
    if ((s = pvg_attr_int(p, "axis", p->opset >= 13 ? -1 : 1, &axis)) != PV_OK) return s;
    if ((s = pvg_axis(p, axis, X->rank, "attribute 'axis'", &ax)) != PV_OK) return s;
    sp->outer = sp->n = sp->inner = 1;
    for (int d = 0; d < X->rank; d++) {
        if (d < ax) sp->outer *= X->dims[d];
        else if (d == ax || p->opset < 13) sp->n *= X->dims[d];
        else sp->inner *= X->dims[d];
    }
    pvg_out_set(p, 0, X->dtype, X->rank, X->dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status softmax_run_f32(const pvg_exec *x)
{
    const softmax_params *sp = x->params;
    pvk_softmax_f32(x->pool, x->in[0].data, x->out[0].data, sp->outer, sp->n, sp->inner, false);
    return PV_OK;
}

static pv_status logsoftmax_run_f32(const pvg_exec *x)
{
    const softmax_params *sp = x->params;
    pvk_softmax_f32(x->pool, x->in[0].data, x->out[0].data, sp->outer, sp->n, sp->inner, true);
    return PV_OK;
}

static pv_status softmax_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, softmax_run_f32) : softmax_run_f32(x);
}

static pv_status logsoftmax_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, logsoftmax_run_f32) : logsoftmax_run_f32(x);
}

const pvg_op pvg_op_Softmax = { "Softmax", "", PVG_OP_INPLACE, softmax_prepare, softmax_run };
const pvg_op pvg_op_LogSoftmax = { "LogSoftmax", "", PVG_OP_INPLACE, softmax_prepare, logsoftmax_run };
