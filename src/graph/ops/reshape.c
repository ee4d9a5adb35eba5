/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: views. Each only computes the output shape;
 * the planner lets out[0] share in[0]'s bytes (PVG_OP_ALIAS). run is a plain copy for callers
 * that evaluate the node into a separate buffer (constant folding). */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

static pv_status view_run(const pvg_exec *x)
{
    if (x->out[0].data != x->in[0].data)
        pvk_copy_bytes(x->pool, x->out[0].data, x->in[0].data, pvc_nbytes(&x->in[0]));
    return PV_OK;
}

static pv_status check_io(pvg_prep *p, int nin)
{
    if (p->nin < nin || p->nout < 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expected %d input(s) and 1 output, got %d and %d", nin, p->nin, p->nout);
    return pvg_check_dtype(p, 0, PVG_ANY);
}

/* ---- Reshape ----------------------------------------------------------------------------- */

static pv_status reshape_prepare(pvg_prep *p)
{
    pv_status s = check_io(p, 2);
    if (s) return s;
    int64_t allowzero;
    if ((s = pvg_attr_int(p, "allowzero", 0, &allowzero))) return s;
    if (allowzero != 0 && allowzero != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'allowzero'=%lld must be 0 or 1", (long long)allowzero);
    if (p->in[1].rank > 1)
        return pvg_prep_fail(p, PV_EFORMAT, "input 'shape' must be 1-D, got rank %d", p->in[1].rank);
    int64_t shape[PV_MAX_RANK], n;
    if ((s = pvg_in_const_ints(p, 1, shape, PV_MAX_RANK, &n))) return s;

    const pvc_tensor *in = &p->in[0];
    int64_t numel = pvc_numel(in), known = 1;
    int infer = -1;
    bool has_zero = false;
    for (int i = 0; i < n; i++) {
        int64_t d = shape[i];
        if (d == -1) {
            if (infer >= 0) return pvg_prep_fail(p, PV_EFORMAT, "shape has more than one -1");
            infer = i;
            continue;
        }
        if (d < -1) return pvg_prep_fail(p, PV_EFORMAT, "shape[%d]=%lld is negative", i, (long long)d);
        if (d == 0) {
            has_zero = true;
            if (!allowzero) {                           /* 0 copies the input's dim */
                if (i >= in->rank)
                    return pvg_prep_fail(p, PV_EFORMAT, "shape[%d]=0 copies input dim %d, but the input has rank %d", i, i, in->rank);
                d = shape[i] = in->dims[i];
            }
        }
        if (pvc_mul_overflow(known, d, &known)) return pvg_prep_fail(p, PV_EFORMAT, "shape overflows int64");
    }
    if (allowzero && has_zero && infer >= 0)
        return pvg_prep_fail(p, PV_EFORMAT, "shape has both 0 and -1 with allowzero=1");
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return pvg_prep_fail(p, PV_EFORMAT, "cannot infer the -1 dim: %lld elements into a multiple of %lld",
                                 (long long)numel, (long long)known);
        shape[infer] = numel / known;
        known = numel;
    }
    if (known != numel) {
        char buf[128];
        return pvg_prep_fail(p, PV_EFORMAT, "cannot reshape %s (%lld elements) into %lld elements",
                             pvc_shape_str(in, buf, sizeof buf), (long long)numel, (long long)known);
    }
    pvg_out_set(p, 0, in->dtype, (int)n, shape);
    return PV_OK;
}

/* ---- Flatten ----------------------------------------------------------------------------- */

static pv_status flatten_prepare(pvg_prep *p)
{
    pv_status s = check_io(p, 1);
    if (s) return s;
    int64_t axis;
    if ((s = pvg_attr_int(p, "axis", 1, &axis))) return s;
    const pvc_tensor *in = &p->in[0];
    if (axis < -in->rank || axis > in->rank)            /* axis == rank is legal: [numel, 1] */
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axis'=%lld is out of range [%d,%d]", (long long)axis, -in->rank, in->rank);
    if (axis < 0) axis += in->rank;
    int64_t d[2] = { 1, 1 };
    for (int i = 0; i < in->rank; i++) d[i < axis ? 0 : 1] *= in->dims[i];
    pvg_out_set(p, 0, in->dtype, 2, d);
    return PV_OK;
}

/* ---- Squeeze / Unsqueeze ----------------------------------------------------------------- */

/* Axes from input 1 (opset 13+) or the 'axes' attribute (older opsets). *n = -1 when absent. */
static pv_status read_axes(pvg_prep *p, int64_t *axes, int64_t cap, int64_t *n)
{
    *n = -1;
    if (p->opset < 13) {
        const int64_t *v;
        int64_t k;
        pv_status s = pvg_attr_ints(p, "axes", &v, &k);
        if (s) return s;
        if (!v) return PV_OK;
        if (k > cap) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'axes' has %lld values, at most %lld supported", (long long)k, (long long)cap);
        memcpy(axes, v, (size_t)k * sizeof *v);
        *n = k;
        return PV_OK;
    }
    if (!pvg_has_in(p, 1)) return PV_OK;
    if (p->in[1].rank > 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'axes' must be 1-D, got rank %d", p->in[1].rank);
    return pvg_in_const_ints(p, 1, axes, cap, n);
}

static pv_status squeeze_prepare(pvg_prep *p)
{
    pv_status s = check_io(p, 1);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t axes[PV_MAX_RANK], n;
    if ((s = read_axes(p, axes, PV_MAX_RANK, &n))) return s;
    bool drop[PV_MAX_RANK] = { false };
    if (n < 0) {                                        /* no axes: every 1-dim */
        for (int i = 0; i < in->rank; i++) drop[i] = in->dims[i] == 1;
    } else {
        for (int64_t k = 0; k < n; k++) {
            int a;
            if ((s = pvg_axis(p, axes[k], in->rank, "axes value", &a))) return s;
            if (drop[a]) return pvg_prep_fail(p, PV_EFORMAT, "axis %d is repeated in 'axes'", a);
            if (in->dims[a] != 1)
                return pvg_prep_fail(p, PV_EFORMAT, "cannot squeeze axis %d of size %lld", a, (long long)in->dims[a]);
            drop[a] = true;
        }
    }
    int64_t d[PV_MAX_RANK];
    int r = 0;
    for (int i = 0; i < in->rank; i++)
        if (!drop[i]) d[r++] = in->dims[i];
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

static pv_status unsqueeze_prepare(pvg_prep *p)
{
    pv_status s = check_io(p, 1);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t axes[PV_MAX_RANK], n;
    if ((s = read_axes(p, axes, PV_MAX_RANK, &n))) return s;
    if (n < 0) return pvg_prep_fail(p, PV_EFORMAT, "'axes' is required");
    int r = in->rank + (int)n;
    if (r > PV_MAX_RANK) return pvg_prep_fail(p, PV_EUNSUPPORTED, "output rank %d is above %d", r, PV_MAX_RANK);
    bool ins[PV_MAX_RANK] = { false };
    for (int64_t k = 0; k < n; k++) {
        int a;
        if ((s = pvg_axis(p, axes[k], r, "axes value", &a))) return s;
        if (ins[a]) return pvg_prep_fail(p, PV_EFORMAT, "axis %d is repeated in 'axes'", a);
        ins[a] = true;
    }
    int64_t d[PV_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) d[i] = ins[i] ? 1 : in->dims[j++];
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

/* ---- Identity ---------------------------------------------------------------------------- */

static pv_status identity_prepare(pvg_prep *p)
{
    pv_status s = check_io(p, 1);
    if (s) return s;
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

const pvg_op pvg_op_Reshape = { "Reshape", "", PVG_OP_ALIAS, reshape_prepare, view_run };
const pvg_op pvg_op_Flatten = { "Flatten", "", PVG_OP_ALIAS, flatten_prepare, view_run };
const pvg_op pvg_op_Squeeze = { "Squeeze", "", PVG_OP_ALIAS, squeeze_prepare, view_run };
const pvg_op pvg_op_Unsqueeze = { "Unsqueeze", "", PVG_OP_ALIAS, unsqueeze_prepare, view_run };
const pvg_op pvg_op_Identity = { "Identity", "", PVG_OP_ALIAS, identity_prepare, view_run };
