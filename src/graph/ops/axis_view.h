/* Tensors seen as [outer, n, inner] around one axis, as the operators that work along an axis
 * do (ArgMax, TopK, Hardmax, LpNormalization, Split, Concat, Gather, CumSum). */
#ifndef PVG_OPS_AXIS_VIEW_H
#define PVG_OPS_AXIS_VIEW_H

#include "graph/graph.h"

/* outer = product of dims[0, axis), inner = product of dims (axis, rank). */
void pvg_axis_outer_inner(int rank, const int64_t *dims, int axis, int64_t *outer, int64_t *inner);

/* In prepare: input 0 must have rank >= 1; axis (the attribute's value) is normalized into *ax
 * and input 0 seen as [*outer, *n, *inner] around it. */
pv_status pvg_axis_view(pvg_prep *p, int64_t axis, int *ax, int64_t *outer, int64_t *n, int64_t *inner);

#endif
