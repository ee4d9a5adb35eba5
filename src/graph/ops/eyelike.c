/* EyeLike (opset 9): a 2-D tensor of the input's shape with ones on diagonal 'k' (default 0,
 * positive above the main one) and zeros elsewhere, of dtype 'dtype' (default the input's).
 * Reads only the input's shape, so a plan evaluates it once. */
#include "graph/ops/dtype_attr.h"

#include <string.h>

typedef struct eyelike_params { int64_t k; } eyelike_params;

static pv_status prep_EyeLike(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    const pvc_tensor *in = &p->in[0];
    if (in->rank != 2) return pvg_prep_fail(p, PV_EFORMAT, "input has rank %d, it must be 2", in->rank);
    pv_dtype t;
    pv_status s = pvg_attr_dtype(p, "dtype", in->dtype, &t);
    if (s != PV_OK) return s;
    if ((s = pvg_attr_int(p, "k", 0, &((eyelike_params *)p->params)->k)) != PV_OK) return s;
    pvg_out_set(p, 0, t, 2, in->dims);
    return PV_OK;
}

static pv_status run_EyeLike(const pvg_exec *x)
{
    const pvc_tensor *o = &x->out[0];
    int64_t k = ((const eyelike_params *)x->params)->k, rows = o->dims[0], cols = o->dims[1];
    memset(o->data, 0, pvc_nbytes(o));
    for (int64_t i = 0; i < rows; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < cols) pvc_set_f64(o->data, o->dtype, i * cols + j, 1.0);
    }
    return PV_OK;
}

const pvg_op pvg_op_EyeLike = { "EyeLike", "", PVG_OP_SHAPE_ONLY, prep_EyeLike, run_EyeLike };
