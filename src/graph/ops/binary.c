/* Binary arithmetic operators with numpy broadcasting: Add Sub Mul Div Pow Mod, and the
 * variadic Min Max (1..N inputs). The output has the broadcast shape and input 0's dtype; the
 * work is pvk_binary (kernels/ref/eltwise.c), for f32 Add/Sub/Mul/Div the vectorized rows
 * (pvk_binary_f32_fast). Add/Sub/Mul/Div apply a fused activation (node->act, set by the
 * passes, e.g. a residual Add -> Relu): in the same pass for f32, else with pvk_unary after. */
#include "graph/ops/broadcast_out.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/eltwise_simd.h"

#include <string.h>

#define MAX_VARIADIC 64

typedef struct binary_params { pvk_binary_op op; } binary_params;

pv_status pvg_broadcast_out(pvg_prep *p, int n, pv_dtype t)
{
    const pvc_tensor *in[MAX_VARIADIC];
    for (int k = 0; k < n; k++) in[k] = &p->in[k];
    int rank;
    int64_t dims[PV_MAX_RANK];
    for (int k = 2; k <= n; k++) {
        if (pvk_broadcast_shape(k, in, &rank, dims)) continue;
        char a[128], b[128];
        if (k == 2)
            return pvg_prep_fail(p, PV_EFORMAT, "input shapes %s and %s are not broadcastable",
                                 pvc_shape_str(in[0], a, sizeof a), pvc_shape_str(in[1], b, sizeof b));
        return pvg_prep_fail(p, PV_EFORMAT, "input %d shape %s does not broadcast with inputs 0..%d",
                             k - 1, pvc_shape_str(in[k - 1], a, sizeof a), k - 2);
    }
    if (n == 1) pvk_broadcast_shape(1, in, &rank, dims);
    pvg_out_set(p, 0, t, rank, dims);
    return PV_OK;
}

/* Checks n inputs of one dtype (Pow's exponent excepted) and one output. */
static pv_status binary_common(pvg_prep *p, pvk_binary_op op, int min_in, int max_in)
{
    if (p->nin < min_in || p->nin > max_in || p->nout != 1) {
        if (min_in == max_in)
            return pvg_prep_fail(p, PV_EFORMAT, "expects %d inputs and 1 output, got %d and %d",
                                 min_in, p->nin, p->nout);
        return pvg_prep_fail(p, PV_EFORMAT, "expects %d to %d inputs and 1 output, got %d and %d",
                             min_in, max_in, p->nin, p->nout);
    }
    for (int k = 0; k < p->nin; k++)
        if (!pvg_has_in(p, k)) return pvg_prep_fail(p, PV_EFORMAT, "input %d is missing", k);
    pv_dtype t = p->in[0].dtype;
    for (int k = 1; k < p->nin; k++) {
        pv_dtype u = p->in[k].dtype;
        if (u != t && op != PVK_BIN_POW)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d has dtype %s, input 0 has %s", k,
                                 pv_dtype_name(u), pv_dtype_name(t));
        if (!pvk_binary_supported(op, t, u))
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "dtype %s%s%s is not supported", pv_dtype_name(t),
                                 u != t ? " with exponent dtype " : "", u != t ? pv_dtype_name(u) : "");
    }
    if (p->nin == 1 && !pvk_binary_supported(op, t, t))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "dtype %s is not supported", pv_dtype_name(t));
    binary_params *bp = p->params;
    bp->op = op;
    pvg_act_kind ak = p->node->act.kind;
    if (ak != PVG_ACT_NONE && !pvc_dtype_is_float(t) && !(ak == PVG_ACT_RELU && pvc_dtype_is_int(t)))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "a fused %s on dtype %s is not supported",
                             ak == PVG_ACT_LEAKY_RELU ? "LeakyRelu" : ak == PVG_ACT_CLIP ? "Clip" : "activation",
                             pv_dtype_name(t));
    return pvg_broadcast_out(p, p->nin, t);
}

/* The fused activation after the fact (dtypes the vector rows do not take), as the unfused
 * Relu / LeakyRelu / Clip operator would compute it. */
static void act_after(const pvg_exec *x, pvc_tensor *y)
{
    const pvg_act *a = &x->node->act;
    pvk_unary_args ua = { .alpha = a->alpha, .lo = -INFINITY, .hi = INFINITY, .ilo = INT64_MIN, .ihi = INT64_MAX };
    pvk_unary_op op = PVK_UN_RELU;
    if (a->kind == PVG_ACT_LEAKY_RELU) op = PVK_UN_LEAKY_RELU;
    else if (a->kind == PVG_ACT_CLIP) { op = PVK_UN_CLIP; ua.lo = a->alpha; ua.hi = a->beta; }
    pvk_unary(x->pool, op, y->dtype, y->data, y->data, pvc_numel(y), &ua);
}

/* Folds the inputs left to right into the output: y = in0 op in1, then y = y op in[k]. y has the
 * full broadcast shape, so from the second step on it is read where it is written. */
static pv_status binary_run(const pvg_exec *x)
{
    const binary_params *bp = x->params;
    pvc_tensor *y = &x->out[0];
    if (x->nin == 1) {
        if (y->data != x->in[0].data) memmove(y->data, x->in[0].data, pvc_nbytes(y));
        return PV_OK;
    }
    const pvg_act *act = &x->node->act;
    if (x->nin == 2 && pvk_binary_f32_fast(x->pool, bp->op, &x->in[0], &x->in[1], y, act)) return PV_OK;
    pvk_binary(x->pool, bp->op, &x->in[0], &x->in[1], y);
    for (int k = 2; k < x->nin; k++) pvk_binary(x->pool, bp->op, y, &x->in[k], y);
    if (act->kind != PVG_ACT_NONE) act_after(x, y);
    return PV_OK;
}

#define BINARY_OP(NAME, OP, MIN_IN, MAX_IN, FLAGS)                                              \
    static pv_status prep_##NAME(pvg_prep *p) { return binary_common(p, OP, MIN_IN, MAX_IN); }  \
    const pvg_op pvg_op_##NAME = { #NAME, "", PVG_OP_INPLACE | (FLAGS), prep_##NAME, binary_run };

BINARY_OP(Add, PVK_BIN_ADD, 2, 2, PVG_OP_FUSE_ACT)
BINARY_OP(Sub, PVK_BIN_SUB, 2, 2, PVG_OP_FUSE_ACT)
BINARY_OP(Mul, PVK_BIN_MUL, 2, 2, PVG_OP_FUSE_ACT)
BINARY_OP(Div, PVK_BIN_DIV, 2, 2, PVG_OP_FUSE_ACT)
BINARY_OP(Pow, PVK_BIN_POW, 2, 2, 0)
BINARY_OP(Min, PVK_BIN_MIN, 1, MAX_VARIADIC, 0)
BINARY_OP(Max, PVK_BIN_MAX, 1, MAX_VARIADIC, 0)

static pv_status prep_Mod(pvg_prep *p)
{
    int64_t fmod;
    pv_status s = pvg_attr_int(p, "fmod", 0, &fmod);
    if (s != PV_OK) return s;
    if (fmod != 0 && fmod != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'fmod'=%lld must be 0 or 1", (long long)fmod);
    if (p->nin >= 1 && pvg_has_in(p, 0) && pvc_dtype_is_float(p->in[0].dtype) && fmod == 0)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'fmod'=0 is invalid for %s inputs (ONNX requires fmod=1 "
                             "for floating point)", pv_dtype_name(p->in[0].dtype));
    return binary_common(p, fmod ? PVK_BIN_FMOD : PVK_BIN_MOD, 2, 2);
}
const pvg_op pvg_op_Mod = { "Mod", "", PVG_OP_INPLACE, prep_Mod, binary_run };
