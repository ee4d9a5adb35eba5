/* perceive::Gelu: Y = X Phi(X), one pass over the tensor. Made by the GELU fusion pass
 * (src/graph/passes/gelu.c) from the chains exporters write for it; registered under the
 * "perceive" domain by that pass.
 *   input:   X (f32; f16 / bf16 staged through f32)
 *   attrs:   approximate (string): "none" (default) 0.5 X (1 + erf(X / sqrt 2)), or "tanh"
 *            0.5 X (1 + tanh(sqrt(2 / pi) (X + 0.044715 X^3))), as ONNX Gelu-20
 *   output:  Y, X's shape and dtype
 * The work is pvk_vunary (kernels/ref/eltwise_simd.h; erf within 1e-7 absolute). */
#include "graph/ops/lowp.h"
#include "kernels/ref/eltwise_simd.h"

#include <string.h>

typedef struct gelu_params { pvk_vun_op op; } gelu_params;

static pv_status gelu_prepare(pvg_prep *p)
{
    pv_status s;
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    if (!pvg_has_in(p, 0)) return pvg_prep_fail(p, PV_EFORMAT, "input 0 is missing");
    if ((s = pvg_check_dtype(p, 0, PVG_FLOATS)) != PV_OK) return s;
    const char *ap;
    if ((s = pvg_attr_string(p, "approximate", "none", &ap)) != PV_OK) return s;
    gelu_params *gp = p->params;
    if (!strcmp(ap, "none")) gp->op = PVK_VU_GELU;
    else if (!strcmp(ap, "tanh")) gp->op = PVK_VU_GELU_TANH;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'approximate'='%s' must be 'none' or 'tanh'", ap);
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status gelu_run_f32(const pvg_exec *x)
{
    const gelu_params *gp = x->params;
    pvk_vunary(x->pool, gp->op, x->in[0].data, x->out[0].data, pvc_numel(&x->in[0]));
    return PV_OK;
}

static pv_status gelu_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, gelu_run_f32) : gelu_run_f32(x);
}

const pvg_op pvg_op_Gelu = { "Gelu", "perceive", PVG_OP_INPLACE, gelu_prepare, gelu_run };
