/* Split: cuts the input along 'axis' into the outputs. Sizes come from input 'split' (opset 13+),
 * the 'split' attribute (older opsets), 'num_outputs' (opset 18: ceil-sized parts, the last one
 * smaller), or equal parts. run reads each part's size back from its output descriptor. */
#include "graph/ops/axis_view.h"
#include "kernels/ref/movement.h"

#include <string.h>

#define MAX_PARTS 256

typedef struct split_params { int axis; } split_params;

static pv_status split_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and at least 1 output");
    if (p->nout > MAX_PARTS) return pvg_prep_fail(p, PV_EUNSUPPORTED, "%d outputs, at most %d supported", p->nout, MAX_PARTS);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t axis, nparts;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    if ((s = pvg_attr_int(p, "num_outputs", 0, &nparts))) return s;
    bool has_num = pvg_attr_has(p, "num_outputs");
    int ax;
    int64_t outer, dim, inner, sizes[MAX_PARTS], n = -1;
    if ((s = pvg_axis_view(p, axis, &ax, &outer, &dim, &inner))) return s;

    if (p->opset < 13) {
        const int64_t *v;
        if ((s = pvg_attr_ints(p, "split", &v, &n))) return s;
        if (v) {
            if (n > MAX_PARTS) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'split' has %lld values", (long long)n);
            memcpy(sizes, v, (size_t)n * sizeof *v);
        } else n = -1;
    } else if (pvg_has_in(p, 1)) {
        if ((s = pvg_in_const_ints(p, 1, sizes, MAX_PARTS, &n))) return s;
    }
    if (n >= 0 && has_num) return pvg_prep_fail(p, PV_EFORMAT, "both 'split' and 'num_outputs' are given");
    if (n >= 0) {
        if (n != p->nout)
            return pvg_prep_fail(p, PV_EFORMAT, "'split' has %lld values for %d outputs", (long long)n, p->nout);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sizes[i] < 0) return pvg_prep_fail(p, PV_EFORMAT, "'split' value %lld is negative", (long long)sizes[i]);
            sum += sizes[i];
            if (sum > dim) break;
        }
        if (sum != dim)
            return pvg_prep_fail(p, PV_EFORMAT, "'split' values do not sum to dim %d = %lld", ax, (long long)dim);
    } else if (has_num) {
        if (nparts != p->nout)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'num_outputs'=%lld but the node has %d outputs", (long long)nparts, p->nout);
        int64_t part = (dim + nparts - 1) / nparts, left = dim;
        for (int i = 0; i < p->nout; i++) {
            sizes[i] = PVC_MIN(part, left);
            left -= sizes[i];
        }
    } else {
        if (dim % p->nout)
            return pvg_prep_fail(p, PV_EFORMAT, "dim %d = %lld does not split into %d equal parts", ax, (long long)dim, p->nout);
        for (int i = 0; i < p->nout; i++) sizes[i] = dim / p->nout;
    }
    for (int i = 0; i < p->nout; i++) {
        int64_t d[PV_MAX_RANK];
        memcpy(d, in->dims, sizeof d);
        d[ax] = sizes[i];
        pvg_out_set(p, i, in->dtype, in->rank, d);
    }
    ((split_params *)p->params)->axis = ax;
    return PV_OK;
}

static pv_status split_run(const pvg_exec *x)
{
    const split_params *sp = x->params;
    const pvc_tensor *in = &x->in[0];
    int ax = sp->axis;
    size_t es = pv_dtype_size(in->dtype);
    int64_t outer, inner;
    pvg_axis_outer_inner(in->rank, in->dims, ax, &outer, &inner);
    size_t irow = (size_t)(in->dims[ax] * inner) * es, off = 0;
    const unsigned char *src = in->data;
    for (int i = 0; i < x->nout; i++) {
        size_t chunk = (size_t)(x->out[i].dims[ax] * inner) * es;
        unsigned char *dst = x->out[i].data;
        if (dst && chunk)                               /* absent outputs have no buffer */
            pvk_copy_rows(x->pool, dst, chunk, src + off, irow, outer, chunk);
        off += chunk;
    }
    return PV_OK;
}

const pvg_op pvg_op_Split = { "Split", "", 0, split_prepare, split_run };
