/* LRN (opsets 1/13: one form): local response normalization across channels of X [N, C, ...];
 * 'size' (required, >= 1), 'alpha' (1e-4), 'beta' (0.75), 'bias' (1.0). Float dtypes (F16/BF16
 * staged through f32). The work is pvk_lrn_f32 (kernels/ref/lrn.c). */
#include "graph/ops/lowp.h"
#include "kernels/ref/lrn.h"

typedef struct lrn_params { int64_t n, c, inner, size; float alpha, beta, bias; } lrn_params;

static pv_status prep_LRN(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 2) return pvg_prep_fail(p, PV_EFORMAT, "input has rank %d, it needs [N, C, ...]", in->rank);
    lrn_params *lp = p->params;
    if (!pvg_attr_has(p, "size")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'size' is required");
    if ((s = pvg_attr_int(p, "size", 1, &lp->size)) != PV_OK) return s;
    if (lp->size < 1) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'size'=%lld must be >= 1", (long long)lp->size);
    if ((s = pvg_attr_float(p, "alpha", 1e-4f, &lp->alpha)) != PV_OK) return s;
    if ((s = pvg_attr_float(p, "beta", 0.75f, &lp->beta)) != PV_OK) return s;
    if ((s = pvg_attr_float(p, "bias", 1.0f, &lp->bias)) != PV_OK) return s;
    lp->n = in->dims[0];
    lp->c = in->dims[1];
    lp->inner = 1;
    for (int k = 2; k < in->rank; k++) lp->inner *= in->dims[k];
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status run_f32(const pvg_exec *x)
{
    const lrn_params *lp = x->params;
    pvk_lrn_f32(x->pool, x->in[0].data, x->out[0].data, lp->n, lp->c, lp->inner, lp->size, lp->alpha, lp->beta,
                lp->bias);
    return PV_OK;
}

static pv_status run_LRN(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

/* Not in place: every output reads a window of input channels. */
const pvg_op pvg_op_LRN = { "LRN", "", 0, prep_LRN, run_LRN };
