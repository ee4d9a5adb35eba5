/* GlobalMaxPool: the maximum over all spatial dims of [N, C, spatial...] (output
 * [N, C, 1, ...]); float dtypes. It is a max reduction over axes 2.. (pvk_reduce). */
#include "graph/graph.h"
#include "kernels/ref/reduce.h"

#include <string.h>

typedef struct gmp_params {
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    unsigned mask;
} gmp_params;

static pv_status prep_GlobalMaxPool(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 3)
        return pvg_prep_fail(p, PV_EFORMAT, "input must be [N, C, spatial...] (rank >= 3), it has rank %d", in->rank);
    gmp_params *g = p->params;
    g->rank = in->rank;
    memcpy(g->dims, in->dims, sizeof g->dims);
    int64_t od[PV_MAX_RANK];
    for (int i = 0; i < in->rank; i++) {
        od[i] = i < 2 ? in->dims[i] : 1;
        if (i >= 2) g->mask |= 1u << i;
    }
    pvg_out_set(p, 0, in->dtype, in->rank, od);
    return PV_OK;
}

static pv_status run_GlobalMaxPool(const pvg_exec *x)
{
    const gmp_params *g = x->params;
    pvk_reduce(x->pool, PVK_REDUCE_MAX, x->in[0].dtype, g->rank, g->dims, g->mask, x->in[0].data, x->out[0].data);
    return PV_OK;
}

const pvg_op pvg_op_GlobalMaxPool = { "GlobalMaxPool", "", 0, prep_GlobalMaxPool, run_GlobalMaxPool };
