/* LayerNormalization (opset 17): normalises over X.shape[axis:], then Scale and optional B
 * (unidirectionally broadcast to X.shape[axis:]). Optional outputs Mean and InvStdDev have shape
 * X.shape[:axis] + [1, ...] and dtype f32 (stash_type 1, the only one supported). Scale/B that
 * are not already of the normalised shape are expanded into the workspace at run time. */
#include "graph/ops/lowp.h"
#include "kernels/ref/norm.h"

#include <string.h>

typedef struct ln_params {
    int64_t rows, len;
    float   eps;
    int     nr;                       /* normalised rank */
    int64_t ndims[PV_MAX_RANK];       /* normalised dims */
    int64_t str[2][PV_MAX_RANK];      /* element strides of Scale / B over them (0 = broadcast) */
    bool    expand[2];                /* Scale / B need expanding */
    bool    has_bias;
} ln_params;
_Static_assert(sizeof(ln_params) <= PVG_PARAMS_BYTES, "layernorm params");

static pv_status ln_prepare(pvg_prep *p)
{
    pv_status s;
    ln_params *l = p->params;
    memset(l, 0, sizeof *l);
    if (p->nin < 2 || p->nin > 3 || p->nout < 1 || p->nout > 3)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2-3 inputs and 1-3 outputs, got %d and %d", p->nin, p->nout);
    int64_t axis, stash;
    if ((s = pvg_attr_int(p, "axis", -1, &axis)) != PV_OK) return s;
    if ((s = pvg_attr_float(p, "epsilon", 1e-5f, &l->eps)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "stash_type", 1, &stash)) != PV_OK) return s;
    if (stash != 1)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'stash_type'=%lld not supported (only 1, float)", (long long)stash);
    l->has_bias = pvg_has_in(p, 2);
    for (int i = 0; i < (l->has_bias ? 3 : 2); i++)
        if ((s = pvg_check_dtype(p, i, PVG_FLOATS)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0];
    int ax;
    if (X->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "input X must have rank >= 1");
    if ((s = pvg_axis(p, axis, X->rank, "attribute 'axis'", &ax)) != PV_OK) return s;
    l->rows = l->len = 1;
    l->nr = X->rank - ax;
    for (int d = 0; d < X->rank; d++) {
        if (d < ax) l->rows *= X->dims[d];
        else {
            l->len *= X->dims[d];
            l->ndims[d - ax] = X->dims[d];
        }
    }
    for (int k = 0; k < (l->has_bias ? 2 : 1); k++) {
        const pvc_tensor *t = &p->in[1 + k];
        if (t->rank > l->nr)
            return pvg_prep_fail(p, PV_EFORMAT, "%s has rank %d, more than the %d normalised dims", k ? "B" : "Scale", t->rank, l->nr);
        int64_t st = 1;
        for (int d = l->nr - 1; d >= 0; d--) {
            int td = d - (l->nr - t->rank);
            int64_t dim = td >= 0 ? t->dims[td] : 1;
            if (dim != 1 && dim != l->ndims[d])
                return pvg_prep_fail(p, PV_EFORMAT, "%s does not broadcast to the normalised shape (dim %lld vs %lld)",
                                     k ? "B" : "Scale", (long long)dim, (long long)l->ndims[d]);
            l->str[k][d] = dim == 1 ? 0 : st;
            st *= dim;
        }
        l->expand[k] = st != l->len;
    }
    pvg_out_set(p, 0, X->dtype, X->rank, X->dims);
    int64_t sd[PV_MAX_RANK];
    for (int d = 0; d < X->rank; d++) sd[d] = d < ax ? X->dims[d] : 1;
    for (int i = 1; i < p->nout; i++) pvg_out_set(p, i, PV_F32, X->rank, sd);
    p->workspace = pvg_lowp_bytes(p) + (size_t)(l->expand[0] + l->expand[1]) * (size_t)l->len * sizeof(float);
    return PV_OK;
}

/* Writes t broadcast to the normalised shape into dst (len floats). */
static void expand(const ln_params *l, const float *t, const int64_t *str, float *dst)
{
    for (int64_t j = 0; j < l->len; j++) {
        int64_t rem = j, off = 0;
        for (int d = l->nr - 1; d >= 0; d--) {
            off += (rem % l->ndims[d]) * str[d];
            rem /= l->ndims[d];
        }
        dst[j] = t[off];
    }
}

static pv_status ln_run_f32(const pvg_exec *x)
{
    const ln_params *l = x->params;
    const float *sb[2] = { x->in[1].data, l->has_bias ? x->in[2].data : NULL };
    float *ws = x->ws;
    for (int k = 0; k < 2; k++)
        if (sb[k] && l->expand[k]) {
            expand(l, sb[k], l->str[k], ws);
            sb[k] = ws;
            ws += l->len;
        }
    float *mean = x->nout > 1 ? x->out[1].data : NULL, *inv = x->nout > 2 ? x->out[2].data : NULL;
    pvk_layernorm_f32(x->pool, x->in[0].data, sb[0], sb[1], x->out[0].data, mean, inv, l->rows, l->len, l->eps);
    return PV_OK;
}

static pv_status ln_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, ln_run_f32) : ln_run_f32(x);
}

const pvg_op pvg_op_LayerNormalization = { "LayerNormalization", "", PVG_OP_INPLACE, ln_prepare, ln_run };
