/* MeanVarianceNormalization (opset 13): y = (x - mean) / (sqrt(var) + 1e-9) over 'axes'
 * (default [0, 2, 3]), as the ONNX function body (whose variance E[x^2] - E[x]^2 is computed
 * here as E[(x - mean)^2], equal but without cancellation). Float dtypes, F16/BF16 staged
 * through f32. Built from pvk_reduce and the broadcasting pvk_binary; the workspace holds the
 * per-group statistics and the squared deviations. */
#include "graph/ops/lowp.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/reduce.h"

#include <string.h>

#define MVN_EPS 1e-9f

typedef struct mvn_params {
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    int64_t  kdims[PV_MAX_RANK];    /* the statistics' shape: reduced dims are 1 */
    unsigned mask;
    size_t   sq_off;                /* squared deviations, after the statistics */
} mvn_params;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static pv_status prep_MeanVarianceNormalization(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    static const int64_t def_axes[3] = { 0, 2, 3 };
    const int64_t *axes;
    int64_t na;
    if ((s = pvg_attr_ints(p, "axes", &axes, &na)) != PV_OK) return s;
    if (!axes) { axes = def_axes; na = 3; }
    mvn_params *mp = p->params;
    mp->rank = in->rank;
    memcpy(mp->dims, in->dims, sizeof mp->dims);
    for (int64_t i = 0; i < na; i++) {
        int a;
        if ((s = pvg_axis(p, axes[i], in->rank, "attribute 'axes' value", &a)) != PV_OK) return s;
        if (mp->mask & (1u << a)) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axes' repeats axis %d", a);
        mp->mask |= 1u << a;
    }
    int64_t nstat = 1;
    for (int i = 0; i < in->rank; i++) {
        mp->kdims[i] = (mp->mask >> i) & 1u ? 1 : in->dims[i];
        nstat *= mp->kdims[i];
    }
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    mp->sq_off = align64((size_t)nstat * sizeof(float));
    p->workspace = pvg_lowp_bytes(p) + mp->sq_off + (size_t)pvc_numel(in) * sizeof(float);
    return PV_OK;
}

static pv_status run_f32(const pvg_exec *x)
{
    const mvn_params *mp = x->params;
    const pvc_tensor *in = &x->in[0];
    pvc_tensor *y = &x->out[0];
    pvc_tensor st, sq, eps;
    memset(&st, 0, sizeof st);
    st.dtype = PV_F32;
    st.rank = mp->rank;
    memcpy(st.dims, mp->kdims, sizeof st.dims);
    st.data = x->ws;
    sq = *in;
    sq.data = (char *)x->ws + mp->sq_off;
    float e = MVN_EPS;
    memset(&eps, 0, sizeof eps);
    eps.dtype = PV_F32;
    eps.data = &e;
    pvk_unary_args ua;
    memset(&ua, 0, sizeof ua);
    pvk_reduce(x->pool, PVK_REDUCE_MEAN, PV_F32, mp->rank, mp->dims, mp->mask, in->data, st.data);
    pvk_binary(x->pool, PVK_BIN_SUB, in, &st, y);              /* y = x - mean */
    pvk_binary(x->pool, PVK_BIN_MUL, y, y, &sq);
    pvk_reduce(x->pool, PVK_REDUCE_MEAN, PV_F32, mp->rank, mp->dims, mp->mask, sq.data, st.data);
    pvk_unary(x->pool, PVK_UN_SQRT, PV_F32, st.data, st.data, pvc_numel(&st), &ua);
    pvk_binary(x->pool, PVK_BIN_ADD, &st, &eps, &st);          /* std + 1e-9 */
    pvk_binary(x->pool, PVK_BIN_DIV, y, &st, y);
    return PV_OK;
}

static pv_status run_MeanVarianceNormalization(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

const pvg_op pvg_op_MeanVarianceNormalization = { "MeanVarianceNormalization", "", PVG_OP_INPLACE,
                                                  prep_MeanVarianceNormalization, run_MeanVarianceNormalization };
