/* Expand: broadcasts the input to the (constant) 'shape' input under numpy's bidirectional
 * rules: the output dim is the larger of the two where one of them is 1. The kernel is the
 * strided copy with zero strides on broadcast dims. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

typedef struct expand_params { pvk_view view; } expand_params;

static pv_status expand_prepare(pvg_prep *p)
{
    if (p->nin < 2 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    if (p->in[1].rank > 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'shape' must be 1-D, got rank %d", p->in[1].rank);
    int64_t shape[PV_MAX_RANK], n;
    if ((s = pvg_in_const_ints(p, 1, shape, PV_MAX_RANK, &n))) return s;
    const pvc_tensor *in = &p->in[0];
    int r = PVC_MAX(in->rank, (int)n);
    int64_t d[PV_MAX_RANK], cs[PV_MAX_RANK], total = 1;
    pvk_contig_strides(in->rank, in->dims, cs);
    expand_params *ep = p->params;
    ep->view.rank = r;
    for (int i = 0; i < r; i++) {
        int ii = i - (r - in->rank), si = i - (r - (int)n);     /* right-aligned positions */
        int64_t a = ii >= 0 ? in->dims[ii] : 1, b = si >= 0 ? shape[si] : 1;
        if (b < 0) return pvg_prep_fail(p, PV_EFORMAT, "shape[%d]=%lld is negative", si, (long long)b);
        if (a != b && a != 1 && b != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "input dim %lld does not broadcast to shape value %lld (output dim %d)",
                                 (long long)a, (long long)b, i);
        d[i] = a == 1 ? b : a;
        if (pvc_mul_overflow(total, d[i], &total)) return pvg_prep_fail(p, PV_EFORMAT, "output size overflows int64");
        ep->view.dims[i] = d[i];
        ep->view.strides[i] = a == 1 ? 0 : cs[ii];
    }
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

static pv_status expand_run(const pvg_exec *x)
{
    const expand_params *ep = x->params;
    pvk_copy_view(x->pool, x->out[0].data, x->in[0].data, pv_dtype_size(x->in[0].dtype), &ep->view);
    return PV_OK;
}

const pvg_op pvg_op_Expand = { "Expand", "", 0, expand_prepare, expand_run };
