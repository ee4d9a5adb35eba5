/* Parametric unary activations and float tests: Sign Softplus Softsign Elu Selu Celu
 * HardSigmoid HardSwish ThresholdedRelu Shrink (kernels/ref/extra.c: pvk_xunary; F16/BF16
 * staged through f32), and IsNaN IsInf (bool output, pvk_float_class). The output has the
 * input's shape. Sign and Shrink also take the integer dtypes. */
#include "graph/ops/lowp.h"
#include "kernels/ref/extra.h"

typedef struct act_params {
    pvk_xunary_op   op;
    pvk_xunary_args args;
} act_params;

typedef struct class_params { unsigned classes; } class_params;

static pv_status check_io(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d inputs and %d outputs",
                             p->nin, p->nout);
    return PV_OK;
}

/* Checks arity and dtype, sets the output and the f16 staging workspace. */
static pv_status act_common(pvg_prep *p, pvk_xunary_op op)
{
    pv_status s = check_io(p);
    if (s != PV_OK) return s;
    if (!pvg_has_in(p, 0)) return pvg_prep_fail(p, PV_EFORMAT, "input 0 is missing");
    pv_dtype t = p->in[0].dtype;
    bool lowp = t == PV_F16 || t == PV_BF16;   /* staged: the kernel sees f32 */
    if (!pvk_xunary_supported(op, lowp ? PV_F32 : t))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input dtype %s is not supported", pv_dtype_name(t));
    act_params *a = p->params;
    a->op = op;
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status act_run_direct(const pvg_exec *x)
{
    const act_params *a = x->params;
    pvk_xunary(x->pool, a->op, x->in[0].dtype, x->in[0].data, x->out[0].data, pvc_numel(&x->in[0]), &a->args);
    return PV_OK;
}

static pv_status act_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, act_run_direct) : act_run_direct(x);
}

#define ACT_OP(NAME) const pvg_op pvg_op_##NAME = { #NAME, "", PVG_OP_INPLACE, prep_##NAME, act_run };

static pv_status prep_Sign(pvg_prep *p) { return act_common(p, PVK_XU_SIGN); }
static pv_status prep_Softplus(pvg_prep *p) { return act_common(p, PVK_XU_SOFTPLUS); }
static pv_status prep_Softsign(pvg_prep *p) { return act_common(p, PVK_XU_SOFTSIGN); }

static pv_status prep_HardSwish(pvg_prep *p)
{
    if (p->opset < 14)
        return pvg_prep_fail(p, PV_EFORMAT, "HardSwish is defined from opset 14, the model has opset %d", p->opset);
    return act_common(p, PVK_XU_HARD_SWISH);
}

static pv_status prep_Elu(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_ELU);
    act_params *a = p->params;
    return s != PV_OK ? s : pvg_attr_float(p, "alpha", 1.0f, &a->args.alpha);
}

static pv_status prep_Selu(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_SELU);
    act_params *a = p->params;
    if (s != PV_OK) return s;
    if ((s = pvg_attr_float(p, "alpha", 1.67326319217681884765625f, &a->args.alpha)) != PV_OK) return s;
    return pvg_attr_float(p, "gamma", 1.05070102214813232421875f, &a->args.gamma);
}

static pv_status prep_Celu(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_CELU);
    act_params *a = p->params;
    if (s != PV_OK) return s;
    if ((s = pvg_attr_float(p, "alpha", 1.0f, &a->args.alpha)) != PV_OK) return s;
    if (a->args.alpha == 0.0f) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'alpha'=0 is invalid (Celu divides by it)");
    return PV_OK;
}

static pv_status prep_HardSigmoid(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_HARD_SIGMOID);
    act_params *a = p->params;
    if (s != PV_OK) return s;
    if ((s = pvg_attr_float(p, "alpha", 0.2f, &a->args.alpha)) != PV_OK) return s;
    return pvg_attr_float(p, "beta", 0.5f, &a->args.beta);
}

static pv_status prep_ThresholdedRelu(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_THRESHOLDED_RELU);
    act_params *a = p->params;
    return s != PV_OK ? s : pvg_attr_float(p, "alpha", 1.0f, &a->args.alpha);
}

static pv_status prep_Shrink(pvg_prep *p)
{
    pv_status s = act_common(p, PVK_XU_SHRINK);
    act_params *a = p->params;
    if (s != PV_OK) return s;
    if ((s = pvg_attr_float(p, "lambd", 0.5f, &a->args.alpha)) != PV_OK) return s;
    return pvg_attr_float(p, "bias", 0.0f, &a->args.beta);
}

ACT_OP(Sign)
ACT_OP(Softplus)
ACT_OP(Softsign)
ACT_OP(HardSwish)
ACT_OP(Elu)
ACT_OP(Selu)
ACT_OP(Celu)
ACT_OP(HardSigmoid)
ACT_OP(ThresholdedRelu)
ACT_OP(Shrink)

/* ---- IsNaN, IsInf -------------------------------------------------------------------------- */
static pv_status class_common(pvg_prep *p, unsigned classes)
{
    pv_status s = check_io(p);
    if (s != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 0, PVG_FLOATS)) != PV_OK) return s;
    class_params *c = p->params;
    c->classes = classes;
    pvg_out_set(p, 0, PV_BOOL, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

static pv_status class_run(const pvg_exec *x)
{
    const class_params *c = x->params;
    pvk_float_class(x->pool, x->in[0].dtype, x->in[0].data, x->out[0].data, pvc_numel(&x->in[0]), c->classes);
    return PV_OK;
}

static pv_status prep_IsNaN(pvg_prep *p) { return class_common(p, PVK_FC_NAN); }

static pv_status read_flag(pvg_prep *p, const char *name, bool *out)
{
    int64_t v;
    pv_status s = pvg_attr_int(p, name, 1, &v);
    if (s != PV_OK) return s;
    if (v != 0 && v != 1) return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s'=%lld must be 0 or 1", name, (long long)v);
    *out = v == 1;
    return PV_OK;
}

static pv_status prep_IsInf(pvg_prep *p)
{
    bool neg = true, pos = true;
    pv_status s;
    if ((s = read_flag(p, "detect_negative", &neg)) != PV_OK) return s;
    if ((s = read_flag(p, "detect_positive", &pos)) != PV_OK) return s;
    return class_common(p, (neg ? PVK_FC_NEG_INF : 0u) | (pos ? PVK_FC_POS_INF : 0u));
}

const pvg_op pvg_op_IsNaN = { "IsNaN", "", 0, prep_IsNaN, class_run };
const pvg_op pvg_op_IsInf = { "IsInf", "", 0, prep_IsInf, class_run };
