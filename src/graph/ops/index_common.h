/* What the index operators share (Gather, GatherElements, GatherND, ScatterElements,
 * ScatterND; defined in index_common.c): their input checks, the scatter 'reduction'
 * attribute, the per-dim bound of the *Elements indices, and the run-time index range check. */
#ifndef PVG_OPS_INDEX_COMMON_H
#define PVG_OPS_INDEX_COMMON_H

#include "graph/graph.h"
#include "kernels/ref/movement.h"

/* nin inputs (data, indices[, updates]) and at least 1 output: data and updates of any dtype,
 * indices int64 or int32. */
pv_status pvg_index_inputs(pvg_prep *p, int nin);

/* Gather / GatherElements: pvg_index_inputs(p, 2), attribute 'axis' (default 0; not yet
 * normalized) and 'data' of rank >= 1. */
pv_status pvg_gather_inputs(pvg_prep *p, int64_t *axis);

/* Reads 'reduction' (none, add, mul, max, min) into *red, then requires 'updates' (input 2) to
 * have the dtype of 'data' (input 0). */
pv_status pvg_scatter_reduction(pvg_prep *p, pvk_reduction *red);

/* GatherElements / ScatterElements: every 'indices' dim but axis fits in the 'data' dim. */
pv_status pvg_index_dims_within(pvg_prep *p, int axis);

/* Run time: value j of idx must lie in [-n, n) with n = lim[j % period] (a negative value
 * counts from the end). The first that does not fails the run with PV_EINPUT naming op, the
 * value and the node; callers check before they write or read through any index. */
pv_status pvg_index_check(const pvg_exec *x, const char *op, const pvc_tensor *idx, const int64_t *lim,
                          int period);

#endif
