/* The axes of the Reduce* operators (defined in reduce.c, used by reduce_extra.c too):
 * keepdims, noop_with_empty_axes and the axes, an attribute up to some opset and from then the
 * optional input 1, which must be a constant. */
#ifndef PVG_OPS_REDUCE_AXES_H
#define PVG_OPS_REDUCE_AXES_H

#include "graph/graph.h"

typedef struct pvg_reduce_axes {
    unsigned mask;      /* axes reduced: those given; with none, all of them (none when noop) */
    bool     noop;      /* noop_with_empty_axes=1 and no axes: the output is the input */
} pvg_reduce_axes;

/* Reads keepdims, noop_with_empty_axes (only when read_noop; else it stays 0) and the axes
 * (attribute 'axes' below opset axes_input_since, input 1 from it); sets output 0 to input 0's
 * dtype with the reduced dims dropped, or kept as 1. */
pv_status pvg_reduce_axes_read(pvg_prep *p, int axes_input_since, bool read_noop, pvg_reduce_axes *ra);

#endif
