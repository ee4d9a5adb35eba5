/* Transpose: out dims are in dims permuted by 'perm' (default: reversed). The kernel is the
 * shared strided copy, which tiles when the innermost output dim is strided in the input. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

typedef struct transpose_params { pvk_view view; } transpose_params;

static pv_status transpose_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    const int64_t *perm;
    int64_t n;
    if ((s = pvg_attr_ints(p, "perm", &perm, &n))) return s;
    int pm[PV_MAX_RANK];
    if (!perm) {
        for (int i = 0; i < r; i++) pm[i] = r - 1 - i;
    } else {
        if (n != r) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'perm' has %lld values for rank %d", (long long)n, r);
        bool seen[PV_MAX_RANK] = { false };
        for (int i = 0; i < r; i++) {
            int a;
            if ((s = pvg_axis(p, perm[i], r, "attribute 'perm' value", &a))) return s;
            if (seen[a]) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'perm' repeats axis %d", a);
            seen[a] = true;
            pm[i] = a;
        }
    }
    transpose_params *tp = p->params;
    int64_t st[PV_MAX_RANK], d[PV_MAX_RANK];
    pvk_contig_strides(r, in->dims, st);
    tp->view.rank = r;
    for (int i = 0; i < r; i++) {
        d[i] = in->dims[pm[i]];
        tp->view.dims[i] = d[i];
        tp->view.strides[i] = st[pm[i]];
    }
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

static pv_status transpose_run(const pvg_exec *x)
{
    const transpose_params *tp = x->params;
    pvk_copy_view(x->pool, x->out[0].data, x->in[0].data, pv_dtype_size(x->in[0].dtype), &tp->view);
    return PV_OK;
}

const pvg_op pvg_op_Transpose = { "Transpose", "", 0, transpose_prepare, transpose_run };
