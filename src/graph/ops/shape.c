/* Shape (opset 15 'start'/'end' slice of the dims, clamped) and Size: int64 facts about the
 * input's shape. Both are known at plan time; run writes them from the input descriptor. */
#include "graph/graph.h"

typedef struct shape_params { int start, end; } shape_params;

static pv_status shape_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    int r = p->in[0].rank;
    int64_t start, end;
    if ((s = pvg_attr_int(p, "start", 0, &start))) return s;
    if ((s = pvg_attr_int(p, "end", r, &end))) return s;
    /* negative counts from the back; then clamp into [0, r] */
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = PVC_MAX((int64_t)0, PVC_MIN(start, (int64_t)r));
    end = PVC_MAX((int64_t)0, PVC_MIN(end, (int64_t)r));
    if (end < start) end = start;
    shape_params *sp = p->params;
    sp->start = (int)start;
    sp->end = (int)end;
    int64_t n = end - start;
    pvg_out_set(p, 0, PV_I64, 1, &n);
    return PV_OK;
}

static pv_status shape_run(const pvg_exec *x)
{
    const shape_params *sp = x->params;
    int64_t *o = x->out[0].data;
    for (int i = sp->start; i < sp->end; i++) o[i - sp->start] = x->in[0].dims[i];
    return PV_OK;
}

static pv_status size_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    pvg_out_set(p, 0, PV_I64, 0, NULL);
    return PV_OK;
}

static pv_status size_run(const pvg_exec *x)
{
    *(int64_t *)x->out[0].data = pvc_numel(&x->in[0]);
    return PV_OK;
}

const pvg_op pvg_op_Shape = { "Shape", "", PVG_OP_SHAPE_ONLY, shape_prepare, shape_run };
const pvg_op pvg_op_Size = { "Size", "", PVG_OP_SHAPE_ONLY, size_prepare, size_run };
