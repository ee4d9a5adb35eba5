/* HannWindow, HammingWindow, BlackmanWindow (opset 17): input 'size' (an int32/int64 scalar,
 * constant: it is the output's length), attributes 'periodic' (default 1) and
 * 'output_datatype' (default float). The values depend on the size alone, so a plan evaluates
 * them once. The work is pvk_cosine_window (kernels/ref/window.c). */
#include "graph/ops/dtype_attr.h"
#include "kernels/ref/window.h"

typedef struct window_params { double a[3]; bool periodic; int64_t n; } window_params;

static pv_status window_prepare(pvg_prep *p, double a0, double a1, double a2)
{
    if (p->opset < 17)
        return pvg_prep_fail(p, PV_EFORMAT, "%s is defined from opset 17, the model has opset %d", p->node->op_type,
                             p->opset);
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, (1u << PV_I64) | (1u << PV_I32));
    if (s != PV_OK) return s;
    if (pvc_numel(&p->in[0]) != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "input 'size' must be a scalar, it has %lld elements",
                             (long long)pvc_numel(&p->in[0]));
    window_params *w = p->params;
    int64_t n, cnt;
    if ((s = pvg_in_const_ints(p, 0, &n, 1, &cnt)) != PV_OK) return s;
    if (n < 0 || n > (INT64_C(1) << 26))
        return pvg_prep_fail(p, PV_EFORMAT, "input 'size'=%lld must be in [0, 2^26]", (long long)n);
    int64_t periodic;
    pv_dtype t;
    if ((s = pvg_attr_int(p, "periodic", 1, &periodic)) != PV_OK) return s;
    if (periodic != 0 && periodic != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'periodic'=%lld must be 0 or 1", (long long)periodic);
    if ((s = pvg_attr_dtype(p, "output_datatype", PV_F32, &t)) != PV_OK) return s;
    w->a[0] = a0;
    w->a[1] = a1;
    w->a[2] = a2;
    w->periodic = periodic;
    w->n = n;
    pvg_out_set(p, 0, t, 1, &n);
    return PV_OK;
}

static pv_status window_run(const pvg_exec *x)
{
    const window_params *w = x->params;
    pvk_cosine_window(w->n, w->periodic, w->a, x->out[0].dtype, x->out[0].data);
    return PV_OK;
}

static pv_status prep_HannWindow(pvg_prep *p) { return window_prepare(p, 0.5, 0.5, 0.0); }
static pv_status prep_HammingWindow(pvg_prep *p) { return window_prepare(p, 25.0 / 46.0, 21.0 / 46.0, 0.0); }
static pv_status prep_BlackmanWindow(pvg_prep *p) { return window_prepare(p, 0.42, 0.5, 0.08); }

const pvg_op pvg_op_HannWindow = { "HannWindow", "", 0, prep_HannWindow, window_run };
const pvg_op pvg_op_HammingWindow = { "HammingWindow", "", 0, prep_HammingWindow, window_run };
const pvg_op pvg_op_BlackmanWindow = { "BlackmanWindow", "", 0, prep_BlackmanWindow, window_run };
