/* CastLike (opset 15): Cast of input 0 to the dtype of input 1 (whose values are not read).
 * Conversions as Cast: float -> int truncates toward zero (saturating, NaN -> 0), anything ->
 * bool is "nonzero". The work is pvk_cast (kernels/ref/eltwise.c). */
#include "graph/graph.h"
#include "kernels/ref/eltwise.h"

typedef struct castlike_params { pv_dtype to; } castlike_params;

static pv_status prep_CastLike(pvg_prep *p)
{
    if (p->opset < 15)
        return pvg_prep_fail(p, PV_EFORMAT, "CastLike is defined from opset 15, the model has opset %d", p->opset);
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s;
    if ((s = pvg_check_dtype(p, 0, PVG_ANY)) != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 1, PVG_ANY)) != PV_OK) return s;
    /* 'saturate' (opset 19) only concerns float8 targets, which perceive does not have. */
    if (pvg_attr_has(p, "saturate"))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'saturate' (opset 19) is not supported");
    castlike_params *cp = p->params;
    cp->to = p->in[1].dtype;
    pvg_out_set(p, 0, cp->to, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

static pv_status run_CastLike(const pvg_exec *x)
{
    const castlike_params *cp = x->params;
    pvk_cast(x->pool, x->in[0].dtype, x->in[0].data, cp->to, x->out[0].data, pvc_numel(&x->in[0]));
    return PV_OK;
}

/* In place is safe for equal element sizes (the kernel stages blocks), as for Cast. */
const pvg_op pvg_op_CastLike = { "CastLike", "", PVG_OP_INPLACE, prep_CastLike, run_CastLike };
