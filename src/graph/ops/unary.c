/* Unary elementwise operators: Neg Abs Sqrt Reciprocal Exp Log Sin Cos Erf Tanh Sigmoid Relu
 * LeakyRelu Clip Floor Ceil Round Not, and the trigonometric / hyperbolic Tan Asin Acos Atan
 * Sinh Cosh Asinh Acosh Atanh (opsets 7/9: one form each). The output has the input's shape and dtype; the work is
 * pvk_unary (kernels/ref/eltwise.c), for f32 Exp Erf Tanh Sigmoid Relu the vectorized maps
 * (pvk_vunary, kernels/ref/eltwise_simd.h: within 2-3 ulp of libm, erf 1e-7 absolute). */
#include "graph/graph.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/eltwise_simd.h"

typedef struct unary_params {
    pvk_unary_op   op;
    pvk_unary_args args;
} unary_params;

_Static_assert(sizeof(unary_params) <= PVG_PARAMS_BYTES, "unary_params exceeds the params scratch");

/* Checks the arity and dtype, sets the output, stores default parameters. */
static pv_status unary_common(pvg_prep *p, pvk_unary_op op, int max_in)
{
    if (p->nin < 1 || p->nin > max_in || p->nout != 1) {
        if (max_in == 1)
            return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d inputs and %d outputs",
                                 p->nin, p->nout);
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 to %d inputs and 1 output, got %d inputs and %d outputs",
                             max_in, p->nin, p->nout);
    }
    if (!pvg_has_in(p, 0)) return pvg_prep_fail(p, PV_EFORMAT, "input 0 is missing");
    pv_dtype t = p->in[0].dtype;
    if (!pvk_unary_supported(op, t))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input dtype %s is not supported", pv_dtype_name(t));
    unary_params *u = p->params;
    u->op = op;
    u->args.alpha = 0.0f;
    u->args.lo = -INFINITY;
    u->args.hi = INFINITY;
    u->args.ilo = INT64_MIN;
    u->args.ihi = INT64_MAX;
    pvg_out_set(p, 0, t, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

/* Clip's bounds given as inputs (opset 11+) may be computed at run time, so run reads them. */
static void clip_bounds(const pvg_exec *x, pvk_unary_args *a)
{
    for (int k = 1; k <= 2 && k < x->nin; k++) {
        const pvc_tensor *t = &x->in[k];
        if (t->rank < 0 || !t->data) continue;
        if (pvc_dtype_is_float(t->dtype)) {
            float v = (float)pvc_get_f64(t->data, t->dtype, 0);
            if (k == 1) a->lo = v; else a->hi = v;
        } else {
            int64_t v = pvc_get_i64(t->data, t->dtype, 0);
            if (k == 1) a->ilo = v; else a->ihi = v;
        }
    }
}

static pv_status unary_run(const pvg_exec *x)
{
    const unary_params *u = x->params;
    pvk_unary_args a = u->args;
    if (u->op == PVK_UN_CLIP) clip_bounds(x, &a);
    if (x->in[0].dtype == PV_F32) {
        static const int vop[PVK_UN_COUNT] = { [PVK_UN_EXP] = PVK_VU_EXP + 1, [PVK_UN_ERF] = PVK_VU_ERF + 1,
                                               [PVK_UN_TANH] = PVK_VU_TANH + 1, [PVK_UN_SIGMOID] = PVK_VU_SIGMOID + 1,
                                               [PVK_UN_RELU] = PVK_VU_RELU + 1 };
        if (vop[u->op]) {
            pvk_vunary(x->pool, (pvk_vun_op)(vop[u->op] - 1), x->in[0].data, x->out[0].data, pvc_numel(&x->in[0]));
            return PV_OK;
        }
    }
    pvk_unary(x->pool, u->op, x->in[0].dtype, x->in[0].data, x->out[0].data, pvc_numel(&x->in[0]), &a);
    return PV_OK;
}

#define UNARY_OP(NAME, OP)                                                                      \
    static pv_status prep_##NAME(pvg_prep *p) { return unary_common(p, OP, 1); }                \
    const pvg_op pvg_op_##NAME = { #NAME, "", PVG_OP_INPLACE, prep_##NAME, unary_run };

UNARY_OP(Neg, PVK_UN_NEG)
UNARY_OP(Abs, PVK_UN_ABS)
UNARY_OP(Sqrt, PVK_UN_SQRT)
UNARY_OP(Reciprocal, PVK_UN_RECIPROCAL)
UNARY_OP(Exp, PVK_UN_EXP)
UNARY_OP(Log, PVK_UN_LOG)
UNARY_OP(Sin, PVK_UN_SIN)
UNARY_OP(Cos, PVK_UN_COS)
UNARY_OP(Erf, PVK_UN_ERF)
UNARY_OP(Tanh, PVK_UN_TANH)
UNARY_OP(Sigmoid, PVK_UN_SIGMOID)
UNARY_OP(Relu, PVK_UN_RELU)
UNARY_OP(Floor, PVK_UN_FLOOR)
UNARY_OP(Ceil, PVK_UN_CEIL)
UNARY_OP(Round, PVK_UN_ROUND)
UNARY_OP(Not, PVK_UN_NOT)
UNARY_OP(Tan, PVK_UN_TAN)
UNARY_OP(Asin, PVK_UN_ASIN)
UNARY_OP(Acos, PVK_UN_ACOS)
UNARY_OP(Atan, PVK_UN_ATAN)
UNARY_OP(Sinh, PVK_UN_SINH)
UNARY_OP(Cosh, PVK_UN_COSH)
UNARY_OP(Asinh, PVK_UN_ASINH)
UNARY_OP(Acosh, PVK_UN_ACOSH)
UNARY_OP(Atanh, PVK_UN_ATANH)

static pv_status prep_LeakyRelu(pvg_prep *p)
{
    pv_status s = unary_common(p, PVK_UN_LEAKY_RELU, 1);
    if (s != PV_OK) return s;
    unary_params *u = p->params;
    return pvg_attr_float(p, "alpha", 0.01f, &u->args.alpha);
}
const pvg_op pvg_op_LeakyRelu = { "LeakyRelu", "", PVG_OP_INPLACE, prep_LeakyRelu, unary_run };

static pv_status prep_Clip(pvg_prep *p)
{
    pv_status s = unary_common(p, PVK_UN_CLIP, 3);
    if (s != PV_OK) return s;
    unary_params *u = p->params;
    if (p->opset > 0 && p->opset < 11) {   /* Clip-6: bounds are attributes */
        if ((s = pvg_attr_float(p, "min", -INFINITY, &u->args.lo)) != PV_OK) return s;
        if ((s = pvg_attr_float(p, "max", INFINITY, &u->args.hi)) != PV_OK) return s;
        if (p->nin > 1) return pvg_prep_fail(p, PV_EFORMAT, "opset %d Clip takes 1 input, got %d", p->opset, p->nin);
        return PV_OK;
    }
    static const char *const names[3] = { "input", "min", "max" };
    for (int k = 1; k < p->nin; k++) {
        if (!pvg_has_in(p, k)) continue;
        const pvc_tensor *t = &p->in[k];
        if (t->dtype != p->in[0].dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "input '%s' has dtype %s, the input has %s", names[k],
                                 pv_dtype_name(t->dtype), pv_dtype_name(p->in[0].dtype));
        if (pvc_numel(t) != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "input '%s' must be a scalar, it has %lld elements",
                                 names[k], (long long)pvc_numel(t));
    }
    return PV_OK;
}
const pvg_op pvg_op_Clip = { "Clip", "", PVG_OP_INPLACE, prep_Clip, unary_run };
