/* QuantizeLinear (opsets 10, 13+), DequantizeLinear (10, 13+), DynamicQuantizeLinear (11).
 * Scale and zero point are per tensor (one value) or, from opset 13, 1-D along 'axis'
 * (default 1). Quantize: float x -> uint8 / int8 (the zero point's dtype, uint8 without one),
 * round half to even and saturate. Dequantize: uint8 / int8 / int32 -> float. Dynamic: uint8
 * with scale and zero point from x's range widened to hold 0, as ONNX Runtime computes them.
 * Work in kernels/ref/quant.c. */
#include "graph/ops/qparams.h"
#include "kernels/ref/quant.h"

typedef struct quant_params {
    int64_t  outer, C, inner;
    pv_dtype t;           /* the 8-bit side's dtype */
} quant_params;

/* Shared by QuantizeLinear and DequantizeLinear: x (input 0), scale (1), zero point (2). */
static pv_status qdq_prepare(pvg_prep *p, bool quantize)
{
    pv_status s;
    quant_params *q = p->params;
    if (p->nin < 2 || p->nin > 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 or 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    const pvc_tensor *X = &p->in[0];
    unsigned xmask = quantize ? 1u << PV_F32 : (1u << PV_U8) | (1u << PV_I8) | (1u << PV_I32);
    if ((s = pvg_check_dtype(p, 0, xmask)) != PV_OK) return s;
    if (!pvg_has_in(p, 1)) return pvg_prep_fail(p, PV_EFORMAT, "input scale is missing");
    int64_t axis = 1;
    if ((s = pvg_attr_int(p, "axis", 1, &axis)) != PV_OK) return s;
    int ax = 0;
    int64_t per = 0;            /* the per-axis count a 1-D scale may have; axis matters only then */
    if (X->rank > 0 && pvc_numel(&p->in[1]) != 1) {
        if ((s = pvg_axis(p, axis, X->rank, "axis", &ax)) != PV_OK) return s;
        per = X->dims[ax];
    }
    int64_t ns, nz;
    if ((s = pvg_qparam_check(p, 1, "scale", 1u << PV_F32, per, &ns)) != PV_OK) return s;
    unsigned zmask = quantize ? (1u << PV_U8) | (1u << PV_I8) : 1u << X->dtype;
    if ((s = pvg_qparam_check(p, 2, "zero_point", zmask, per, &nz)) != PV_OK) return s;
    if (nz > ns)
        return pvg_prep_fail(p, PV_EFORMAT, "zero_point has %lld values but scale has %lld", (long long)nz, (long long)ns);
    q->t = quantize ? (pvg_has_in(p, 2) ? p->in[2].dtype : PV_U8) : X->dtype;
    q->C = ns;
    q->outer = 1;
    q->inner = 1;
    for (int d = 0; d < X->rank; d++) {
        if (ns > 1 && d < ax) q->outer *= X->dims[d];
        else if (ns == 1 || d > ax) q->inner *= X->dims[d];
    }
    pvg_out_set(p, 0, quantize ? q->t : PV_F32, X->rank, X->dims);
    p->workspace = (size_t)q->C * sizeof(int32_t);
    return PV_OK;
}

static pv_status prep_QuantizeLinear(pvg_prep *p) { return qdq_prepare(p, true); }
static pv_status prep_DequantizeLinear(pvg_prep *p) { return qdq_prepare(p, false); }

static pv_status run_QuantizeLinear(const pvg_exec *x)
{
    const quant_params *q = x->params;
    int32_t *zp = x->ws;
    pvg_qzp_read(x->nin > 2 ? &x->in[2] : &(pvc_tensor){ .rank = -1 }, q->C, zp);
    pvk_quantize_f32(x->pool, x->in[0].data, q->outer, q->C, q->inner, x->in[1].data, zp, q->t, x->out[0].data);
    return PV_OK;
}

static pv_status run_DequantizeLinear(const pvg_exec *x)
{
    const quant_params *q = x->params;
    int32_t *zp = x->ws;
    pvg_qzp_read(x->nin > 2 ? &x->in[2] : &(pvc_tensor){ .rank = -1 }, q->C, zp);
    pvk_dequantize_f32(x->pool, x->in[0].data, q->t, q->outer, q->C, q->inner, x->in[1].data, zp, x->out[0].data);
    return PV_OK;
}

const pvg_op pvg_op_QuantizeLinear = { "QuantizeLinear", "", 0, prep_QuantizeLinear, run_QuantizeLinear };
const pvg_op pvg_op_DequantizeLinear = { "DequantizeLinear", "", 0, prep_DequantizeLinear, run_DequantizeLinear };

static pv_status prep_DynamicQuantizeLinear(pvg_prep *p)
{
    pv_status s;
    if (p->nin != 1 || p->nout < 1 || p->nout > 3)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 3 outputs, got %d and %d", p->nin, p->nout);
    if ((s = pvg_check_dtype(p, 0, 1u << PV_F32)) != PV_OK) return s;
    pvg_out_set(p, 0, PV_U8, p->in[0].rank, p->in[0].dims);
    if (p->nout > 1) pvg_out_set(p, 1, PV_F32, 0, NULL);
    if (p->nout > 2) pvg_out_set(p, 2, PV_U8, 0, NULL);
    return PV_OK;
}

static pv_status run_DynamicQuantizeLinear(const pvg_exec *x)
{
    int64_t n = pvc_numel(&x->in[0]);
    float scale;
    uint8_t zp;
    pvk_dynquant_params(x->in[0].data, n, &scale, &zp);
    int32_t z = zp;
    pvk_quantize_f32(x->pool, x->in[0].data, 1, 1, n, &scale, &z, PV_U8, x->out[0].data);
    if (x->nout > 1 && x->out[1].data) *(float *)x->out[1].data = scale;
    if (x->nout > 2 && x->out[2].data) *(uint8_t *)x->out[2].data = zp;
    return PV_OK;
}

const pvg_op pvg_op_DynamicQuantizeLinear = { "DynamicQuantizeLinear", "", 0, prep_DynamicQuantizeLinear,
                                              run_DynamicQuantizeLinear };
