/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12/13: one form each), as an
 * exported training graph computes them at inference. Input [N, C, d1...], target/labels
 * [N, d1...] (int64/int32), optional class weights [C]; 'reduction' none|sum|mean (default
 * mean), optional 'ignore_index'. SoftmaxCrossEntropyLoss takes the log-softmax of the scores
 * along C first (its optional second output) and then the NLL. Float dtypes (F16/BF16 staged
 * through f32). A target outside [0, C) that is not ignore_index fails the run naming it. The
 * work is pvk_softmax_f32 and pvk_nll_loss_f32 (kernels/ref/loss.c). */
#include "graph/ops/lowp.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/norm.h"

#include <string.h>

typedef struct loss_params {
    int64_t            n, c, d;      /* the input seen as [n, c, d] */
    int64_t            ignore;
    bool               has_ignore;
    pvk_loss_reduction red;
    size_t             logp_bytes;   /* SCE without the log_prob output: workspace for it */
} loss_params;

/* The checks both operators share; what = the name of input 1. */
static pv_status loss_prepare(pvg_prep *p, const char *what, int max_out)
{
    if (p->opset < 12)
        return pvg_prep_fail(p, PV_EFORMAT, "%s is defined from opset 12, the model has opset %d", p->node->op_type,
                             p->opset);
    if (p->nin < 2 || p->nin > 3 || p->nout < 1 || p->nout > max_out)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2-3 inputs and 1-%d outputs, got %d and %d", max_out, p->nin,
                             p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32))) != PV_OK) return s;
    const pvc_tensor *x = &p->in[0], *t = &p->in[1];
    if (x->rank < 2) return pvg_prep_fail(p, PV_EFORMAT, "input 0 has rank %d, it needs [N, C, ...]", x->rank);
    if (t->rank != x->rank - 1)
        return pvg_prep_fail(p, PV_EFORMAT, "input '%s' has rank %d, the input rank %d (it needs %d)", what, t->rank,
                             x->rank, x->rank - 1);
    for (int k = 0; k < t->rank; k++) {
        int64_t want = x->dims[k == 0 ? 0 : k + 1];
        if (t->dims[k] != want)
            return pvg_prep_fail(p, PV_EFORMAT, "input '%s' dim %d is %lld, the input's is %lld", what, k,
                                 (long long)t->dims[k], (long long)want);
    }
    loss_params *lp = p->params;
    lp->n = x->dims[0];
    lp->c = x->dims[1];
    lp->d = 1;
    for (int k = 2; k < x->rank; k++) lp->d *= x->dims[k];
    if (pvg_has_in(p, 2)) {
        const pvc_tensor *w = &p->in[2];
        if (w->dtype != x->dtype || w->rank != 1 || w->dims[0] != lp->c)
            return pvg_prep_fail(p, PV_EFORMAT, "input 'weight' must be [%lld] of dtype %s", (long long)lp->c,
                                 pv_dtype_name(x->dtype));
    }
    const char *red;
    if ((s = pvg_attr_string(p, "reduction", "mean", &red)) != PV_OK) return s;
    if (!strcmp(red, "none")) lp->red = PVK_LOSS_NONE;
    else if (!strcmp(red, "sum")) lp->red = PVK_LOSS_SUM;
    else if (!strcmp(red, "mean")) lp->red = PVK_LOSS_MEAN;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'reduction'='%s' must be none, sum or mean", red);
    lp->has_ignore = pvg_attr_has(p, "ignore_index");
    if ((s = pvg_attr_int(p, "ignore_index", 0, &lp->ignore)) != PV_OK) return s;
    if (lp->red == PVK_LOSS_NONE) pvg_out_set(p, 0, x->dtype, t->rank, t->dims);
    else pvg_out_set(p, 0, x->dtype, 0, NULL);
    return PV_OK;
}

/* Every target is a class index or ignore_index, before any read through it. */
static pv_status check_targets(const pvg_exec *x, const loss_params *lp)
{
    const pvc_tensor *t = &x->in[1];
    int64_t count = pvc_numel(t);
    for (int64_t i = 0; i < count; i++) {
        int64_t v = pvc_get_i64(t->data, t->dtype, i);
        if ((v < 0 || v >= lp->c) && !(lp->has_ignore && v == lp->ignore))
            return pvc_fail(NULL, PV_EINPUT, "%s: target %lld at %lld is outside [0,%lld) in node '%s'",
                            x->node ? x->node->op_type : "loss", (long long)v, (long long)i, (long long)lp->c,
                            x->node && x->node->name ? x->node->name : "");
    }
    return PV_OK;
}

static void nll(const pvg_exec *x, const loss_params *lp, const float *logp)
{
    const float *w = x->nin > 2 && x->in[2].data ? x->in[2].data : NULL;
    pvk_nll_loss_f32(logp, x->in[1].data, x->in[1].dtype, w, lp->n, lp->c, lp->d, lp->has_ignore, lp->ignore, lp->red,
                     x->out[0].data);
}

static pv_status prep_NegativeLogLikelihoodLoss(pvg_prep *p)
{
    pv_status s = loss_prepare(p, "target", 1);
    if (s != PV_OK) return s;
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status run_nll_f32(const pvg_exec *x)
{
    const loss_params *lp = x->params;
    pv_status s = check_targets(x, lp);
    if (s != PV_OK) return s;
    nll(x, lp, x->in[0].data);
    return PV_OK;
}

static pv_status run_NegativeLogLikelihoodLoss(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_nll_f32) : run_nll_f32(x);
}

static pv_status prep_SoftmaxCrossEntropyLoss(pvg_prep *p)
{
    pv_status s = loss_prepare(p, "labels", 2);
    if (s != PV_OK) return s;
    loss_params *lp = p->params;
    bool has_log_prob = p->nout > 1 && (!p->node->out || p->node->out[1] >= 0);   /* no out: the test harness */
    if (has_log_prob) pvg_out_set(p, 1, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    lp->logp_bytes = has_log_prob ? 0 : ((size_t)pvc_numel(&p->in[0]) * sizeof(float) + 63) & ~(size_t)63;
    p->workspace = pvg_lowp_bytes(p) + lp->logp_bytes;
    return PV_OK;
}

static pv_status run_sce_f32(const pvg_exec *x)
{
    const loss_params *lp = x->params;
    pv_status s = check_targets(x, lp);
    if (s != PV_OK) return s;
    float *logp = x->nout > 1 && x->out[1].data ? x->out[1].data : x->ws;
    pvk_softmax_f32(x->pool, x->in[0].data, logp, lp->n, lp->c, lp->d, true);
    nll(x, lp, logp);
    return PV_OK;
}

static pv_status run_SoftmaxCrossEntropyLoss(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_sce_f32) : run_sce_f32(x);
}

const pvg_op pvg_op_NegativeLogLikelihoodLoss = { "NegativeLogLikelihoodLoss", "", 0, prep_NegativeLogLikelihoodLoss,
                                                  run_NegativeLogLikelihoodLoss };
const pvg_op pvg_op_SoftmaxCrossEntropyLoss = { "SoftmaxCrossEntropyLoss", "", 0, prep_SoftmaxCrossEntropyLoss,
                                                run_SoftmaxCrossEntropyLoss };
