/* LpNormalization: x / ||x||_p along 'axis' (default -1), p = 1 or 2 (default 2); float
 * dtypes (F16/BF16 staged through f32). A zero norm gives 0, as ONNX Runtime. The work is
 * pvk_lp_normalize_f32 (kernels/ref/extra.c). */
#include "graph/ops/axis_view.h"
#include "graph/ops/lowp.h"
#include "kernels/ref/extra.h"

typedef struct lpn_params { int64_t outer, n, inner; int p; } lpn_params;

static pv_status prep_LpNormalization(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t axis, pn;
    int ax;
    if ((s = pvg_attr_int(p, "axis", -1, &axis)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "p", 2, &pn)) != PV_OK) return s;
    if (pn != 1 && pn != 2) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'p'=%lld must be 1 or 2", (long long)pn);
    lpn_params *lp = p->params;
    if ((s = pvg_axis_view(p, axis, &ax, &lp->outer, &lp->n, &lp->inner)) != PV_OK) return s;
    lp->p = (int)pn;
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status run_f32(const pvg_exec *x)
{
    const lpn_params *lp = x->params;
    pvk_lp_normalize_f32(x->pool, x->in[0].data, x->out[0].data, lp->outer, lp->n, lp->inner, lp->p);
    return PV_OK;
}

static pv_status run_LpNormalization(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

const pvg_op pvg_op_LpNormalization = { "LpNormalization", "", PVG_OP_INPLACE, prep_LpNormalization,
                                        run_LpNormalization };
