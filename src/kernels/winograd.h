/* Winograd F(4x4, 3x3) convolution, fp32: 2-D, 3x3, stride 1, dilation 1, group 1, on the
 * channel-blocked layout nChw16c ([N][ceil(C/16)][H][W][16], what oneDNN calls it; channels past
 * C in the last block are padding, zeros as oneDNN keeps them: read as such, written as zeros).
 * Output tiles of 4x4 read 6x6 input patches; each of the 36 transformed positions is one GEMM
 * [tiles x cin] x [cin x cout]: 36 multiplies where the direct 3x3 needs 144 per 16 outputs.
 * Transforms (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2015): V = B^T d B, U = G g G^T, Y = A^T (U . V) A, from the interpolation points
 * 0, +-a, +-b and infinity. Lavin and Gray use a = 1, b = 2; which points round least is the
 * subject of Barabasz et al. ("Error analysis and improving the accuracy of Winograd convolution
 * for deep neural networks", 2020). Measured here (float32 emulation, one tile of 128 channels,
 * max error / max |y| over 40 draws): a, b = 1, 2: 3.1e-6; 1/2, 2: 1.8e-6; 3/4, 3/2: 1.3e-6.
 *
 * The fast kernel (x86/winograd_avx512.c) works on blocks of tiles sized for the core's L2:
 * input transform of a block -> 36 GEMMs of [tiles x cin] x [cin x cout] against the weights
 * transformed and packed once at create -> output transform with bias and activation, written
 * straight into Y. Blocks are independent (run_blocks splits them over threads), each thread
 * with its own slice of the workspace. pvk_wino_ref_f32 is its plain twin on NCHW tensors: the
 * same arithmetic in scalar loops, the oracle of the tests. */
#ifndef PVK_WINOGRAD_H
#define PVK_WINOGRAD_H

#include "kernels/kernels.h"

#define PVK_WINO_A 0.75   /* the interpolation points 0, +-A, +-B (see above) */
#define PVK_WINO_B 1.5

typedef struct pvk_wino_desc {
    int64_t batch, cin, cout;
    int64_t ih, iw, oh, ow;       /* oh = ih + pad_t + pad_b - 2, likewise ow */
    int64_t pad_t, pad_l;         /* 0..2; the end pads follow from oh / ow */
    bool    bias;
    pvg_act act;                  /* none, relu, leaky relu, clip (GELU is declined) */
} pvk_wino_desc;

typedef struct pvk_wino {
    pvk_wino_desc d;
    int64_t cp, kp;               /* cin, cout rounded up to 16: the blocked layout's channels */
    int64_t th, tw, tiles;        /* tile grid per image, tiles over the batch */
    int64_t block;                /* tiles per block (a multiple of 6, the micro-kernel's rows) */
    int64_t nblocks;
    int     threads;
    float  *u;                    /* transformed weights: [36][kp / 64 panels][cp][panel width]
                                     (zero past cin and cout) */
    size_t  ws_per_thread;        /* bytes: V [36][block][cp] then M [36][block][kp] */
} pvk_wino;

/* Whether the fast kernel takes d here: AVX-512 selected (PERCEIVE_ISA), pads 0..2 with oh / ow
 * consistent, no GELU; with cout not a multiple of 16, an activation that keeps 0 at 0 (the padded
 * output channels stay zero). */
bool pvk_wino_supported(const pvk_wino_desc *d);
/* Whether the kernel is worth taking for d (supported or not): false when the transformed weights
 * (36 cin cout floats, read once per block of tiles) outgrow a last-level cache (16 MiB). */
bool pvk_wino_pays(const pvk_wino_desc *d);
/* w: ONNX [cout][cin][3][3]; threads: the most run_blocks tids that will run (>= 1).
 * *ws: workspace bytes run needs (threads x ws_per_thread, 64-byte aligned slices).
 * PV_EUNSUPPORTED when !pvk_wino_supported(d), PV_ENOMEM. Tiles per block: PERCEIVE_WINO_TILES
 * (a multiple of 6, for benches) or 24 (measured in winograd.c), fewer when that leaves fewer
 * than 4 blocks per thread. */
pv_status pvk_wino_create(const pvk_wino_desc *d, const float *w, int threads, pvk_wino **out, size_t *ws);
void      pvk_wino_free(pvk_wino *k);   /* accepts NULL */
/* Blocks [b0, b1) of Y = act(conv(X, W) + bias), X and Y in nChw16c; tid < threads picks the
 * workspace slice. Blocks write disjoint parts of Y. */
void      pvk_wino_run_blocks(const pvk_wino *k, const float *x, const float *bias, float *y, void *ws,
                              int64_t b0, int64_t b1, int tid);
/* All blocks over the pool (p NULL: inline). */
void      pvk_wino_run(const pvk_wino *k, pvc_pool *p, const float *x, const float *bias, float *y, void *ws);

/* The plain twin: X [batch][cin][ih][iw] and Y [batch][cout][oh][ow] in NCHW, w ONNX order,
 * bias NULL or [cout]. Scalar loops, tile by tile, the transforms as 6x6 matrix products. */
void pvk_wino_ref_f32(const pvk_wino_desc *d, const float *x, const float *w, const float *bias, float *y);

/* The AVX-512 block (x86/winograd_avx512.c): tiles [t0, t0 + nt) with nt <= k->block; buf:
 * this thread's ws_per_thread bytes. */
void pvk_wino_block_avx512(const pvk_wino *k, const float *x, const float *bias, float *y, float *buf,
                           int64_t t0, int64_t nt);

#endif
