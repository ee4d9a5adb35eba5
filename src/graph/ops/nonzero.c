/* NonZero: int64 [rank, nnz] coordinates of the non-zero elements, in row-major order. The
 * output shape depends on the data, so the input must be a constant at plan time (the
 * planner then folds the node). A scalar input counts as one element of a 1-D tensor. */
#include "graph/graph.h"

static bool is_nonzero(const void *d, pv_dtype t, int64_t i)
{
    return pvc_dtype_is_float(t) ? pvc_get_f64(d, t, i) != 0 : pvc_get_i64(d, t, i) != 0;
}

static pv_status nonzero_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    if (!in->data)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input is computed at run time; NonZero's output shape "
                             "depends on its values (data-dependent output shape), so it must be a constant");
    int64_t n = pvc_numel(in), nnz = 0;
    for (int64_t i = 0; i < n; i++) nnz += is_nonzero(in->data, in->dtype, i);
    int64_t d[2] = { in->rank > 0 ? in->rank : 1, nnz };
    pvg_out_set(p, 0, PV_I64, 2, d);
    return PV_OK;
}

static pv_status nonzero_run(const pvg_exec *x)
{
    const pvc_tensor *in = &x->in[0];
    int r = in->rank > 0 ? in->rank : 1;
    int64_t n = pvc_numel(in), nnz = x->out[0].dims[1], k = 0;
    int64_t dims[PV_MAX_RANK] = { 1 }, ci[PV_MAX_RANK] = { 0 };
    for (int i = 0; i < in->rank; i++) dims[i] = in->dims[i];
    int64_t *o = x->out[0].data;
    for (int64_t i = 0; i < n; i++) {
        if (is_nonzero(in->data, in->dtype, i)) {
            if (k == nnz) return pvc_fail(NULL, PV_EINTERNAL, "NonZero: the input changed after planning");
            for (int a = 0; a < r; a++) o[a * nnz + k] = ci[a];
            k++;
        }
        for (int a = r - 1; a >= 0; a--) {              /* odometer */
            if (++ci[a] < dims[a]) break;
            ci[a] = 0;
        }
    }
    return k == nnz ? PV_OK : pvc_fail(NULL, PV_EINTERNAL, "NonZero: the input changed after planning");
}

const pvg_op pvg_op_NonZero = { "NonZero", "", 0, nonzero_prepare, nonzero_run };
