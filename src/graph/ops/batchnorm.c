/* BatchNormalization, inference form only: y = (x - mean) / sqrt(var + epsilon) * scale + B
 * per channel (axis 1), input rank >= 2. Opsets 7-8 'spatial'=0 keeps statistics per element
 * of X.shape[1:] (scale etc. shaped C x D1 x ... x Dn): every such element is its own channel. training_mode must be 0 and the running-statistics
 * outputs absent; momentum is read and ignored. f16/bf16 (any mix of T, T1, T2) through f32. */
#include "graph/ops/lowp.h"
#include "kernels/ref/norm.h"

typedef struct bn_params { int64_t batch, channels, len; float eps; } bn_params;

static pv_status bn_prepare(pvg_prep *p)
{
    pv_status s;
    bn_params *b = p->params;
    if (p->nin != 5 || p->nout < 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 5 inputs and at least 1 output, got %d and %d", p->nin, p->nout);
    for (int i = 1; i < p->nout; i++)
        if (!p->node->out || p->node->out[i] >= 0)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "output %d (running statistics) is training-mode only; inference supports output Y alone", i);
    int64_t training, spatial = 1;
    float momentum;
    if (p->opset < 9 && (s = pvg_attr_int(p, "spatial", 1, &spatial)) != PV_OK) return s;
    if (spatial != 0 && spatial != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'spatial'=%lld must be 0 or 1", (long long)spatial);
    if ((s = pvg_attr_float(p, "epsilon", 1e-5f, &b->eps)) != PV_OK) return s;
    if ((s = pvg_attr_float(p, "momentum", 0.9f, &momentum)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "training_mode", 0, &training)) != PV_OK) return s;
    if (training != 0)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'training_mode'=%lld not supported (inference only)", (long long)training);
    for (int i = 0; i < 5; i++)
        if ((s = pvg_check_dtype(p, i, PVG_FLOATS)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0];
    if (X->rank < 2) return pvg_prep_fail(p, PV_EFORMAT, "input X has rank %d, expected >= 2", X->rank);
    b->batch = X->dims[0];
    b->channels = X->dims[1];
    b->len = 1;
    for (int d = 2; d < X->rank; d++) b->len *= X->dims[d];
    static const char *const names[] = { "", "scale", "B", "mean", "var" };
    for (int i = 1; i < 5; i++) {
        const pvc_tensor *t = &p->in[i];
        bool ok = t->rank == 1 && t->dims[0] == b->channels;
        if (!spatial) {
            ok = t->rank == X->rank - 1;
            for (int d = 1; ok && d < X->rank; d++) ok = t->dims[d - 1] == X->dims[d];
        }
        if (!ok)
            return pvg_prep_fail(p, PV_EFORMAT, spatial ? "input %s must be 1-D of size %lld"
                                 : "input %s must have the shape of X without its batch dim (spatial=0; %lld channels)",
                                 names[i], (long long)b->channels);
    }
    if (!spatial) {
        b->channels *= b->len;
        b->len = 1;
    }
    pvg_out_set(p, 0, X->dtype, X->rank, X->dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status bn_run_f32(const pvg_exec *x)
{
    const bn_params *b = x->params;
    pvk_batchnorm_f32(x->pool, x->in[0].data, x->in[1].data, x->in[2].data, x->in[3].data, x->in[4].data,
                      b->eps, x->out[0].data, b->batch, b->channels, b->len);
    return PV_OK;
}

static pv_status bn_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, bn_run_f32) : bn_run_f32(x);
}

const pvg_op pvg_op_BatchNormalization = { "BatchNormalization", "", PVG_OP_INPLACE, bn_prepare, bn_run };
