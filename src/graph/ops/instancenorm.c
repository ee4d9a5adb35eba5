/* InstanceNormalization: for [N, C, spatial...], each (n, c) plane is normalised by its own
 * mean and variance, then scaled and shifted per channel: y = (x - mean) / sqrt(var + epsilon)
 * * scale[c] + B[c]. Float dtypes (F16/BF16 staged through f32). The plane normalisation is
 * pvk_layernorm_f32 with a unit scale and the per-channel affine step is pvk_batchnorm_f32 with
 * mean 0 and variance 1 (kernels/ref/norm.c); the workspace holds those constants. */
#include "graph/ops/lowp.h"
#include "kernels/ref/norm.h"

typedef struct in_params {
    int64_t n, c, len;
    float   eps;
} in_params;

static pv_status prep_InstanceNormalization(pvg_prep *p)
{
    if (p->nin != 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s;
    for (int i = 0; i < 3; i++) {
        if ((s = pvg_check_dtype(p, i, PVG_FLOATS)) != PV_OK) return s;
        if (p->in[i].dtype != p->in[0].dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d has dtype %s, input 0 has %s", i,
                                 pv_dtype_name(p->in[i].dtype), pv_dtype_name(p->in[0].dtype));
    }
    in_params *ip = p->params;
    if ((s = pvg_attr_float(p, "epsilon", 1e-5f, &ip->eps)) != PV_OK) return s;
    if (!(ip->eps >= 0.0f)) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'epsilon'=%g must be >= 0", (double)ip->eps);
    const pvc_tensor *X = &p->in[0];
    if (X->rank < 3)
        return pvg_prep_fail(p, PV_EFORMAT, "input must be [N, C, spatial...] (rank >= 3), it has rank %d", X->rank);
    ip->n = X->dims[0];
    ip->c = X->dims[1];
    ip->len = 1;
    for (int d = 2; d < X->rank; d++) ip->len *= X->dims[d];
    static const char *const names[3] = { "input", "scale", "B" };
    for (int i = 1; i < 3; i++)
        if (p->in[i].rank != 1 || p->in[i].dims[0] != ip->c)
            return pvg_prep_fail(p, PV_EFORMAT, "'%s' must have shape [%lld] (the channels)", names[i], (long long)ip->c);
    pvg_out_set(p, 0, X->dtype, X->rank, X->dims);
    p->workspace = pvg_lowp_bytes(p) + (size_t)(ip->len + 2 * ip->c) * sizeof(float);
    return PV_OK;
}

static pv_status run_f32(const pvg_exec *x)
{
    const in_params *ip = x->params;
    float *ones = x->ws, *zeros_c = ones + ip->len, *ones_c = zeros_c + ip->c;
    for (int64_t i = 0; i < ip->len; i++) ones[i] = 1.0f;
    for (int64_t i = 0; i < ip->c; i++) { zeros_c[i] = 0.0f; ones_c[i] = 1.0f; }
    float *y = x->out[0].data;
    pvk_layernorm_f32(x->pool, x->in[0].data, ones, NULL, y, NULL, NULL, ip->n * ip->c, ip->len, ip->eps);
    pvk_batchnorm_f32(x->pool, y, x->in[1].data, x->in[2].data, zeros_c, ones_c, 0.0f, y, ip->n, ip->c, ip->len);
    return PV_OK;
}

static pv_status run_InstanceNormalization(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

const pvg_op pvg_op_InstanceNormalization = { "InstanceNormalization", "", PVG_OP_INPLACE,
                                              prep_InstanceNormalization, run_InstanceNormalization };
