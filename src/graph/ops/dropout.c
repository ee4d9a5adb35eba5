/* Dropout for inference: output = data; the optional mask output is all true from opset 12.
 * Before 12 the spec leaves the inference mask open: it is all false / zero as ONNX Runtime
 * writes it (bool from opset 10, data's type in 7-9). 'ratio' (an attribute before opset 12,
 * then an optional input) only matters in training; 'training_mode' must be absent or a
 * constant false, anything else (training, or a mode known only at run time) is refused.
 * The output is a view of the input (PVG_OP_ALIAS); run copies only when the planner could
 * not share the bytes, and fills the mask. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

typedef struct dropout_params { bool mask_true; } dropout_params;

static pv_status prep_Dropout(pvg_prep *p)
{
    int max_in = p->opset < 12 ? 1 : 3;
    if (p->nin < 1 || p->nin > max_in || p->nout < 1 || p->nout > 2)
        return pvg_prep_fail(p, PV_EFORMAT, "opset %d Dropout takes 1-%d inputs and 1-2 outputs, got %d and %d",
                             p->opset, max_in, p->nin, p->nout);
    pv_status s;
    int64_t seed;
    float ratio;
    if (p->opset < 12 && (s = pvg_attr_float(p, "ratio", 0.5f, &ratio)) != PV_OK) return s;
    /* The seed only drives the random mask of training mode. */
    if ((s = pvg_attr_int(p, "seed", 0, &seed)) != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 0, PVG_FLOATS)) != PV_OK) return s;
    if (pvg_has_in(p, 1)) {
        if ((s = pvg_check_dtype(p, 1, PVG_FLOATS)) != PV_OK) return s;
        if (pvc_numel(&p->in[1]) != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "input 'ratio' must be a scalar, it has %lld elements",
                                 (long long)pvc_numel(&p->in[1]));
    }
    if (pvg_has_in(p, 2)) {
        const pvc_tensor *t = &p->in[2];
        if (t->dtype != PV_BOOL || pvc_numel(t) != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "input 'training_mode' must be a bool scalar");
        if (!t->data)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'training_mode' is computed at run time; only "
                                 "inference (a constant false) is supported");
        if (*(const uint8_t *)t->data)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'training_mode' is true: training-mode dropout is not supported");
    }
    ((dropout_params *)p->params)->mask_true = p->opset >= 12;
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    if (p->nout > 1) pvg_out_set(p, 1, p->opset < 10 ? p->in[0].dtype : PV_BOOL, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

static pv_status run_Dropout(const pvg_exec *x)
{
    if (x->out[0].data && x->out[0].data != x->in[0].data)
        pvk_copy_bytes(x->pool, x->out[0].data, x->in[0].data, pvc_nbytes(&x->in[0]));
    const pvc_tensor *m = &x->out[1];
    if (x->nout > 1 && m->rank >= 0 && m->data) {
        const dropout_params *dp = x->params;
        memset(m->data, dp->mask_true, pvc_nbytes(m));      /* before 12 (any dtype) all zero bytes */
    }
    return PV_OK;
}

const pvg_op pvg_op_Dropout = { "Dropout", "", PVG_OP_ALIAS, prep_Dropout, run_Dropout };
