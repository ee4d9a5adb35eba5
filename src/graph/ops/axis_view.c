/* The [outer, n, inner] view around an axis (see axis_view.h). */
#include "graph/ops/axis_view.h"

void pvg_axis_outer_inner(int rank, const int64_t *dims, int axis, int64_t *outer, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= dims[d];
    for (int d = axis + 1; d < rank; d++) *inner *= dims[d];
}

pv_status pvg_axis_view(pvg_prep *p, int64_t axis, int *ax, int64_t *outer, int64_t *n, int64_t *inner)
{
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "input must have rank >= 1");
    pv_status s = pvg_axis(p, axis, in->rank, "attribute 'axis'", ax);
    if (s != PV_OK) return s;
    pvg_axis_outer_inner(in->rank, in->dims, *ax, outer, inner);
    *n = in->dims[*ax];
    return PV_OK;
}
