/* Comparison and logical operators with numpy broadcasting: Equal Less Greater LessOrEqual
 * GreaterOrEqual (numeric inputs; Equal also bool) and And Or (bool inputs). The output is bool
 * (uint8 0/1) of the broadcast shape; the work is pvk_binary (kernels/ref/eltwise.c). */
#include "graph/ops/broadcast_out.h"
#include "kernels/ref/eltwise.h"

typedef struct compare_params { pvk_binary_op op; } compare_params;

static pv_status compare_common(pvg_prep *p, pvk_binary_op op)
{
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    for (int k = 0; k < 2; k++)
        if (!pvg_has_in(p, k)) return pvg_prep_fail(p, PV_EFORMAT, "input %d is missing", k);
    pv_dtype ta = p->in[0].dtype, tb = p->in[1].dtype;
    if (ta != tb)
        return pvg_prep_fail(p, PV_EFORMAT, "input dtypes differ: %s and %s", pv_dtype_name(ta), pv_dtype_name(tb));
    if (!pvk_binary_supported(op, ta, tb))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input dtype %s is not supported", pv_dtype_name(ta));
    compare_params *cp = p->params;
    cp->op = op;
    return pvg_broadcast_out(p, 2, PV_BOOL);
}

static pv_status compare_run(const pvg_exec *x)
{
    const compare_params *cp = x->params;
    pvk_binary(x->pool, cp->op, &x->in[0], &x->in[1], &x->out[0]);
    return PV_OK;
}

/* In place is legal whenever the planner finds input 0 the same size (bool And/Or, Equal on
 * bool or int8/uint8): every row reads element i before writing it. */
#define COMPARE_OP(NAME, OP)                                                                    \
    static pv_status prep_##NAME(pvg_prep *p) { return compare_common(p, OP); }                 \
    const pvg_op pvg_op_##NAME = { #NAME, "", PVG_OP_INPLACE, prep_##NAME, compare_run };

COMPARE_OP(Equal, PVK_BIN_EQ)
COMPARE_OP(Less, PVK_BIN_LT)
COMPARE_OP(Greater, PVK_BIN_GT)
COMPARE_OP(LessOrEqual, PVK_BIN_LE)
COMPARE_OP(GreaterOrEqual, PVK_BIN_GE)
COMPARE_OP(And, PVK_BIN_AND)
COMPARE_OP(Or, PVK_BIN_OR)
