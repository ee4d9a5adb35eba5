/* TopK: the K (constant input 1; attribute 'k' before opset 10) largest or smallest values
 * along 'axis' with their int64 indices, best first; equal values keep the lower index first
 * (as ONNX Runtime). 'sorted'=0 is allowed: the order is then unspecified, and is sorted. */
#include "graph/ops/axis_view.h"
#include "kernels/ref/reduce.h"

typedef struct topk_params { int64_t outer, n, inner, k; bool largest; size_t idx_off; } topk_params;
_Static_assert(sizeof(topk_params) <= PVG_PARAMS_BYTES, "topk_params must fit the node's params scratch");

static pv_status topk_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 2 outputs");
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | PVG_INTS);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    int64_t axis, largest, sorted, k, nk = 0;
    if ((s = pvg_attr_int(p, "axis", -1, &axis))) return s;
    if ((s = pvg_attr_int(p, "largest", 1, &largest))) return s;
    if ((s = pvg_attr_int(p, "sorted", 1, &sorted))) return s;
    if (largest != 0 && largest != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'largest'=%lld must be 0 or 1", (long long)largest);
    if (sorted != 0 && sorted != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'sorted'=%lld must be 0 or 1", (long long)sorted);
    if (p->opset < 10) {
        if ((s = pvg_attr_int(p, "k", -1, &k))) return s;
    } else {
        if ((s = pvg_in_const_ints(p, 1, &k, 1, &nk))) return s;
        if (nk != 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'K' must hold exactly one value");
    }
    int a;
    topk_params *tp = p->params;
    if ((s = pvg_axis_view(p, axis, &a, &tp->outer, &tp->n, &tp->inner))) return s;
    if (k < 0 || k > tp->n)
        return pvg_prep_fail(p, PV_EFORMAT, "K=%lld is out of range for axis %d of size %lld",
                             (long long)k, a, (long long)tp->n);
    tp->k = k;
    tp->largest = largest != 0;
    int64_t od[PV_MAX_RANK];
    for (int i = 0; i < r; i++) od[i] = i == a ? k : in->dims[i];
    pvg_out_set(p, 0, in->dtype, r, od);
    if (p->nout > 1) pvg_out_set(p, 1, PV_I64, r, od);
    /* heaps, then scratch indices for when the Indices output is not wanted */
    size_t heaps = (pvk_topk_workspace(tp->outer, tp->inner, k) + 63) & ~(size_t)63;
    tp->idx_off = heaps;
    p->workspace = heaps + (size_t)(tp->outer * k * tp->inner) * sizeof(int64_t);
    return PV_OK;
}

static pv_status topk_run(const pvg_exec *x)
{
    const topk_params *tp = x->params;
    int64_t *idx = x->nout > 1 ? x->out[1].data : NULL;
    if (!idx && x->ws) idx = (int64_t *)((char *)x->ws + tp->idx_off);
    if (!idx) return PV_OK;                 /* K = 0 or an empty input: nothing to write */
    pvk_topk(x->pool, x->in[0].dtype, tp->outer, tp->n, tp->inner, tp->k, tp->largest,
             x->in[0].data, x->out[0].data, idx, x->ws);
    return PV_OK;
}

const pvg_op pvg_op_TopK = { "TopK", "", 0, topk_prepare, topk_run };
