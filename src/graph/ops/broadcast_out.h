/* Output shape of the broadcasting elementwise operators (defined in binary.c; also used by
 * compare.c and binary_extra.c). */
#ifndef PVG_OPS_BROADCAST_OUT_H
#define PVG_OPS_BROADCAST_OUT_H

#include "graph/graph.h"

/* Output 0 = the numpy broadcast of inputs [0, n) (1 <= n <= 64) with dtype t; a clear error
 * naming the shapes when they do not broadcast. */
pv_status pvg_broadcast_out(pvg_prep *p, int n, pv_dtype t);

#endif
