/* What Conv and ConvTranspose share (defined in conv.c): the attributes auto_pad, dilations,
 * group, kernel_shape, pads, strides, validated against the weight's spatial dims; the input
 * checks; the slicing of the im2col / col2im matrix in the workspace. */
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

/* The checks both operators start with: 2 or 3 inputs and 1 output, float X, W (and B) of X's
 * dtype, X and W of one rank in 3..5; then the attributes (pvg_conv_attrs_read), with nsp =
 * X's rank - 2. what names the operator in the rank message ("convolutions"). */
pv_status pvg_conv_prepare_inputs(pvg_prep *p, const char *what, pvg_conv_attrs *a);

/* Output spatial dims of a convolution of X (rank 2 + a->nsp) into odims[2..]; SAME_* pads are
 * resolved into a->pad_begin / pad_end. Fails when a padded input is smaller than the dilated
 * kernel. */
pv_status pvg_conv_out_dims(pvg_prep *p, const pvc_tensor *X, pvg_conv_attrs *a, int64_t *odims);

/* B (input 2), when given, must be 1-D of size cout. */
pv_status pvg_conv_check_bias(pvg_prep *p, int64_t cout);

/* The im2col / col2im matrix is cut into slices of at most this many floats (16 MiB). */
#define PVG_CONV_COL_CAP ((int64_t)4 << 20)

/* Pixels per slice of a col matrix with `rows` rows over `pixels` pixels: all of them when the
 * matrix fits in PVG_CONV_COL_CAP floats, else as many as fit (at least 64). */
int64_t pvg_conv_slice(int64_t rows, int64_t pixels);

/* Fills the kernel/stride/dilation/begin-pad part of a 3-D geometry from a (leading spatial
 * dims get size 1); image and output dims are set by the caller. */
void pvg_conv_geom_init(const pvg_conv_attrs *a, pvk_conv_geom *g);

/* Index of spatial dim i (of nsp) in the 3-D geometry. */
static inline int pvg_conv_axis(int nsp, int i) { return 3 - nsp + i; }

#endif
