/* Attributes shared by Conv and ConvTranspose (read in conv.c): auto_pad, dilations, group,
 * kernel_shape, pads, strides, validated against the weight's spatial dims. */
#ifndef PVG_OPS_CONV_ATTRS_H
#define PVG_OPS_CONV_ATTRS_H

#include "graph/graph.h"
#include "kernels/ref/conv.h"

typedef enum { PVG_PAD_NOTSET, PVG_PAD_VALID, PVG_PAD_SAME_UPPER, PVG_PAD_SAME_LOWER } pvg_auto_pad;

typedef struct pvg_conv_attrs {
    int          nsp;                   /* spatial dims, 1..3 */
    pvg_auto_pad auto_pad;
    int64_t      group;
    int64_t      k[3], stride[3], dil[3], pad_begin[3], pad_end[3];   /* first nsp used */
} pvg_conv_attrs;

/* wk: the weight's nsp spatial dims (kernel_shape, when given, must match them). Explicit pads
 * together with SAME_* / VALID are accepted only when all zero. */
pv_status pvg_conv_attrs_read(pvg_prep *p, int nsp, const int64_t *wk, pvg_conv_attrs *a);

/* Fills the kernel/stride/dilation/begin-pad part of a 3-D geometry from a (leading spatial
 * dims get size 1); image and output dims are set by the caller. */
void pvg_conv_geom_init(const pvg_conv_attrs *a, pvk_conv_geom *g);

/* Index of spatial dim i (of nsp) in the 3-D geometry. */
static inline int pvg_conv_axis(int nsp, int i) { return 3 - nsp + i; }

#endif
