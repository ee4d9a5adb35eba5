/* Reference convolution helpers: im2col / col2im over up to 3 spatial dims, a direct kernel for
 * one-input-channel-per-group (depthwise) convolution, and the bias + activation epilogue.
 * Conv and ConvTranspose share one geometry: ConvTranspose is the adjoint of a Conv whose input
 * is the ConvTranspose output, so its col2im uses the same struct with in/out swapped.
 * 1-D and 2-D problems are 3-D ones with leading spatial dims of 1. */
#ifndef PVK_REF_CONV_H
#define PVK_REF_CONV_H

#include "kernels/kernels.h"

typedef struct pvk_conv_geom {
    int64_t in[3];      /* image spatial dims (the side that is padded) */
    int64_t out[3];     /* output-pixel grid of the Conv (columns of the col matrix) */
    int64_t k[3], stride[3], dil[3];
    int64_t pad[3];     /* begin padding; may be negative for ConvTranspose with output_shape */
} pvk_conv_geom;

static inline int64_t pvk_conv_ksize(const pvk_conv_geom *g) { return g->k[0] * g->k[1] * g->k[2]; }
static inline int64_t pvk_conv_insize(const pvk_conv_geom *g) { return g->in[0] * g->in[1] * g->in[2]; }
static inline int64_t pvk_conv_outsize(const pvk_conv_geom *g) { return g->out[0] * g->out[1] * g->out[2]; }

/* col[r][p - p0] for rows r = c * ksize + kernel offset (c < channels) and output pixels
 * p in [p0, p0 + np): the image value under that kernel tap, 0 in the padding.
 * x: channels images of insize floats. col: row stride np. */
void pvk_im2col_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *x, int64_t channels,
                    int64_t p0, int64_t np, float *col);

/* Adjoint of im2col: adds every col entry into the image position it was read from
 * (positions in the padding are dropped). y must be initialised by the caller. */
void pvk_col2im_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *col, int64_t channels,
                    int64_t p0, int64_t np, float *y);

/* Convolution where every output channel reads one input channel (group == in channels):
 * y[oc] = sum over taps w[oc][tap] * x[oc / mult][...], mult = out channels per group.
 * x: batch * in_ch images, y: batch * in_ch * mult images (overwritten). */
void pvk_conv_depthwise_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *x, const float *w,
                            int64_t batch, int64_t in_ch, int64_t mult, float *y);

/* y[n][c][:] = act(y + bias[c]) over rows of len floats; bias may be NULL, act may be NULL. */
void pvk_bias_act_f32(pvc_pool *pool, float *y, int64_t batch, int64_t channels, int64_t len,
                      const float *bias, const pvg_act *act);

#endif
