/* ReduceMean, ReduceSum, ReduceMax, ReduceMin. The axes are the 'axes' attribute up to the
 * opset where they became the optional input 1 (ReduceSum: 13, the others: 18), which must
 * then be a constant; noop_with_empty_axes comes with that input (the axes handling is shared
 * with reduce_extra.c: reduce_axes.h). The kernel collapses the
 * dims into kept/reduced runs and walks them cache-friendly (kernels/ref/reduce.c). */
#include "graph/ops/reduce_axes.h"
#include "kernels/ref/reduce.h"

#include <string.h>

typedef struct reduce_params {
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    unsigned mask;          /* axes reduced; 0 = copy */
} reduce_params;
_Static_assert(sizeof(reduce_params) <= PVG_PARAMS_BYTES, "reduce_params must fit the node's params scratch");

pv_status pvg_reduce_axes_read(pvg_prep *p, int axes_input_since, bool read_noop, pvg_reduce_axes *ra)
{
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    int64_t keepdims, noop = 0, axes[PV_MAX_RANK], na = 0;
    pv_status s;
    if ((s = pvg_attr_int(p, "keepdims", 1, &keepdims))) return s;
    if (keepdims != 0 && keepdims != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'keepdims'=%lld must be 0 or 1", (long long)keepdims);
    if (read_noop) {
        if ((s = pvg_attr_int(p, "noop_with_empty_axes", 0, &noop))) return s;
        if (noop != 0 && noop != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'noop_with_empty_axes'=%lld must be 0 or 1", (long long)noop);
    }
    if (p->opset >= axes_input_since) {
        if (pvg_has_in(p, 1) && (s = pvg_in_const_ints(p, 1, axes, PV_MAX_RANK, &na))) return s;
    } else {
        const int64_t *a;
        if ((s = pvg_attr_ints(p, "axes", &a, &na))) return s;
        if (na > PV_MAX_RANK) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axes' has %lld values for rank %d", (long long)na, r);
        for (int64_t i = 0; i < na; i++) axes[i] = a[i];
        if (pvg_has_in(p, 1))
            return pvg_prep_fail(p, PV_EFORMAT, "input 'axes' exists only from opset %d (model opset %d)", axes_input_since, p->opset);
    }
    unsigned mask = 0;
    for (int64_t i = 0; i < na; i++) {
        int a;
        if ((s = pvg_axis(p, axes[i], r, "axes value", &a))) return s;
        if (mask & (1u << a)) return pvg_prep_fail(p, PV_EFORMAT, "axes repeat axis %d", a);
        mask |= 1u << a;
    }
    if (na == 0 && !noop) mask = r > 0 ? (1u << r) - 1u : 0u;

    int64_t od[PV_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < r; i++) {
        if (!(mask & (1u << i))) od[orank++] = in->dims[i];
        else if (keepdims) od[orank++] = 1;
    }
    pvg_out_set(p, 0, in->dtype, orank, od);
    ra->mask = mask;
    ra->noop = na == 0 && noop;
    return PV_OK;
}

static pv_status reduce_prepare(pvg_prep *p, int axes_input_since)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 or 2 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | PVG_INTS);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    pvg_reduce_axes ra;
    if ((s = pvg_reduce_axes_read(p, axes_input_since, p->opset >= axes_input_since, &ra))) return s;
    reduce_params *rp = p->params;
    rp->rank = r;
    memcpy(rp->dims, in->dims, sizeof rp->dims);
    rp->mask = ra.mask & (r > 0 ? (1u << r) - 1u : 0u);
    return PV_OK;
}

static pv_status reduce_run(const pvg_exec *x, pvk_reduce_op op)
{
    const reduce_params *rp = x->params;
    if (!rp->mask) {
        memcpy(x->out[0].data, x->in[0].data, pvc_nbytes(&x->in[0]));
        return PV_OK;
    }
    pvk_reduce(x->pool, op, x->in[0].dtype, rp->rank, rp->dims, rp->mask, x->in[0].data,
               x->out[0].data);
    return PV_OK;
}

static pv_status mean_prepare(pvg_prep *p) { return reduce_prepare(p, 18); }
static pv_status sum_prepare(pvg_prep *p) { return reduce_prepare(p, 13); }
static pv_status max_prepare(pvg_prep *p) { return reduce_prepare(p, 18); }
static pv_status min_prepare(pvg_prep *p) { return reduce_prepare(p, 18); }
static pv_status mean_run(const pvg_exec *x) { return reduce_run(x, PVK_REDUCE_MEAN); }
static pv_status sum_run(const pvg_exec *x) { return reduce_run(x, PVK_REDUCE_SUM); }
static pv_status max_run(const pvg_exec *x) { return reduce_run(x, PVK_REDUCE_MAX); }
static pv_status min_run(const pvg_exec *x) { return reduce_run(x, PVK_REDUCE_MIN); }

const pvg_op pvg_op_ReduceMean = { "ReduceMean", "", 0, mean_prepare, mean_run };
const pvg_op pvg_op_ReduceSum = { "ReduceSum", "", 0, sum_prepare, sum_run };
const pvg_op pvg_op_ReduceMax = { "ReduceMax", "", 0, max_prepare, max_run };
const pvg_op pvg_op_ReduceMin = { "ReduceMin", "", 0, min_prepare, min_run };
