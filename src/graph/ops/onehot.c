/* OneHot: out has a new dim of size 'depth' (constant input) at 'axis'; out[.., d, ..] is
 * values[1] where indices[..] (negative counts from depth) == d, else values[0]. Indices
 * outside [-depth, depth) give an all-off line, per the spec. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

typedef struct onehot_params { int axis; int64_t depth; } onehot_params;

static pv_status onehot_prepare(pvg_prep *p)
{
    if (p->nin < 3 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 3 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_INTS | PVG_FLOATS);
    if (s) return s;
    if ((s = pvg_check_dtype(p, 1, PVG_INTS | PVG_FLOATS))) return s;
    if ((s = pvg_check_dtype(p, 2, PVG_ANY))) return s;
    int64_t axis;
    if ((s = pvg_attr_int(p, "axis", -1, &axis))) return s;
    const pvc_tensor *idx = &p->in[0], *dep = &p->in[1], *val = &p->in[2];
    if (pvc_numel(dep) != 1) return pvg_prep_fail(p, PV_EFORMAT, "'depth' must be a scalar");
    if (!dep->data)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'depth' is computed at run time; the output shape "
                             "depends on it, so it must be a constant (data-dependent shape)");
    double dd = pvc_get_f64(dep->data, dep->dtype, 0);
    if (!(dd >= 1 && dd < 1e12)) return pvg_prep_fail(p, PV_EFORMAT, "'depth' %g must be a positive count", dd);
    int64_t depth = pvc_dtype_is_float(dep->dtype) ? (int64_t)dd : pvc_get_i64(dep->data, dep->dtype, 0);
    if (pvc_numel(val) != 2) return pvg_prep_fail(p, PV_EFORMAT, "'values' must hold 2 elements [off, on]");
    int64_t total;
    if (pvc_mul_overflow(pvc_numel(idx), depth, &total)) return pvg_prep_fail(p, PV_EFORMAT, "output size overflows int64");
    int r = idx->rank + 1;
    if (r > PV_MAX_RANK) return pvg_prep_fail(p, PV_EUNSUPPORTED, "output rank %d is above %d", r, PV_MAX_RANK);
    int ax;
    if ((s = pvg_axis(p, axis, r, "attribute 'axis'", &ax))) return s;
    int64_t d[PV_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) d[i] = i == ax ? depth : idx->dims[j++];
    onehot_params *op = p->params;
    op->axis = ax;
    op->depth = depth;
    pvg_out_set(p, 0, val->dtype, r, d);
    return PV_OK;
}

static pv_status onehot_run(const pvg_exec *x)
{
    const onehot_params *op = x->params;
    const pvc_tensor *idx = &x->in[0], *val = &x->in[2];
    size_t es = pv_dtype_size(val->dtype);
    const unsigned char *off = val->data, *on = off + es;
    unsigned char *dst = x->out[0].data;
    int64_t outer = 1, inner = 1, depth = op->depth;
    for (int i = 0; i < op->axis; i++) outer *= idx->dims[i];
    for (int i = op->axis; i < idx->rank; i++) inner *= idx->dims[i];
    pvk_fill(dst, off, es, outer * depth * inner);
    bool fl = pvc_dtype_is_float(idx->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t k, w = o * inner + i;
            if (fl) {
                double v = pvc_get_f64(idx->data, idx->dtype, w);
                if (!(v > -1e12 && v < 1e12)) continue;     /* NaN, inf, huge: off */
                k = (int64_t)v;
            } else k = pvc_get_i64(idx->data, idx->dtype, w);
            if (k < -depth || k >= depth) continue;
            if (k < 0) k += depth;
            memcpy(dst + (size_t)((o * depth + k) * inner + i) * es, on, es);
        }
    return PV_OK;
}

const pvg_op pvg_op_OneHot = { "OneHot", "", 0, onehot_prepare, onehot_run };
