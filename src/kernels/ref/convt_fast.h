/* ConvTranspose when every output pixel receives exactly one product sum: kernel == stride on
 * every spatial axis, no padding, no dilation, group 1 (an upsampling, e.g. BEVFusion's neck:
 * 2x2 stride 2). Then Y[n, co, z*kd + a, y*kh + b, x*kw + e] = act(bias[co] +
 * sum_ci X[n, ci, z, y, x] * W[ci, co, a, b, e]): one GEMM col = W^T x X per tile of input
 * pixels whose rows go straight to their output positions, so Y is written once (no memset,
 * no scatter-add, no separate bias / activation pass as in the general col2im path).
 * Prefix pvk_convt_fast_. 1-D and 2-D problems are 3-D ones with leading dims of 1. */
#ifndef PVK_REF_CONVT_FAST_H
#define PVK_REF_CONVT_FAST_H

#include "kernels/kernels.h"

typedef struct pvk_convt_fast_desc {
    int64_t batch, cin, cout;
    int64_t in[3];      /* X spatial dims; Y's are in[i] * k[i] */
    int64_t k[3];       /* kernel dims == strides, >= 1 */
    int64_t tile;       /* X pixels per GEMM (>= 1): pvk_convt_fast_tile's choice */
} pvk_convt_fast_desc;

/* A tile for `threads` threads (>= 1): the col buffer of cout * ks rows stays L2-sized, and a
 * batch is cut into several tiles per thread. d->tile is ignored. */
int64_t pvk_convt_fast_tile(const pvk_convt_fast_desc *d, int threads);

/* Workspace floats for nbuf col buffers (one per thread that may run). */
int64_t pvk_convt_fast_ws_floats(const pvk_convt_fast_desc *d, int nbuf);

/* y = the transposed convolution of x (batch x cin x in) by w (cin x cout x k, ONNX layout),
 * plus bias (cout floats, may be NULL), then act (may be NULL). y: batch x cout x (in * k),
 * fully overwritten (never read). ws: pvk_convt_fast_ws_floats(d, nbuf) floats, any contents.
 * A pool with more than nbuf threads is not used (the work runs on the calling thread). */
void pvk_convt_fast_f32(pvc_pool *pool, const pvk_convt_fast_desc *d, const float *x, const float *w,
                        const float *bias, const pvg_act *act, float *y, float *ws, int nbuf);

/* The same with the weights packed once (constant W): wp = pvk_gemm_packed_create(K = cin,
 * N = cout * ks, W as it is in ONNX (cin x cout*ks row-major), no transpose, alpha 1), in any
 * precision (bf16: the packed bf16 GEMM, operands rounded to bf16, fp32 sums). Per tile the
 * threads compute colT[tile, cout * ks] = X_tile^T W (X's pixels read as rows in place), turn it
 * into col and write it out as pvk_convt_fast_f32 does. ws: pvk_convt_fast_packed_ws_floats. */
typedef struct pvk_gemm_packed pvk_gemm_packed;
int64_t pvk_convt_fast_packed_ws_floats(const pvk_convt_fast_desc *d, int nbuf);
void pvk_convt_fast_packed(pvc_pool *pool, const pvk_convt_fast_desc *d, const float *x, const pvk_gemm_packed *wp,
                           const float *bias, const pvg_act *act, float *y, float *ws, int nbuf);

/* The packed path's output rows for kernel width 2: dst[2w + e] = act(src[w * ld + e] + bias),
 * w < nw, e < 2 (a pixel's two values side by side in colT, pixels ld floats apart). The plain
 * twin and the AVX-512 variant (one 64-bit gather per 8 pixels) are bit-identical; act may be
 * NULL. pvk_convt_pix2_select: the AVX-512 one where this CPU runs it and act is not GELU, else
 * NULL (the caller's own loop). */
typedef void (*pvk_convt_pix2_fn)(float *dst, const float *src, int64_t ld, int64_t nw, float bias, const pvg_act *act);
void pvk_convt_pix2_ref(float *dst, const float *src, int64_t ld, int64_t nw, float bias, const pvg_act *act);
void pvk_convt_pix2_avx512(float *dst, const float *src, int64_t ld, int64_t nw, float bias, const pvg_act *act);
pvk_convt_pix2_fn pvk_convt_pix2_select(const pvg_act *act);

#endif
