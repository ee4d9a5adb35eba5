/* kernels: shared helpers for reference and ISA kernels. Prefix pvk_. */
#ifndef PVK_KERNELS_H
#define PVK_KERNELS_H

#include "graph/graph.h"
#include <math.h>

/* Applies a fused activation in place to n floats. */
static inline void pvk_act_apply(const pvg_act *a, float *y, int64_t n)
{
    switch (a->kind) {
    case PVG_ACT_NONE: return;
    case PVG_ACT_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        return;
    case PVG_ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] >= 0.0f ? y[i] : y[i] * a->alpha;
        return;
    case PVG_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] < a->alpha ? a->alpha : (y[i] > a->beta ? a->beta : y[i]);
        return;
    }
}

/* Broadcast iteration: for out dims (rank r) and an input of rank ri right-aligned to it,
 * element strides (in elements, 0 on broadcast axes). */
void pvk_broadcast_strides(int r, const int64_t *out_dims, int ri, const int64_t *in_dims,
                           int64_t *estrides);

/* C[M,N] (+)= A[M,K] * B[K,N] with element strides; plain blocked reference GEMM used by Conv,
 * MatMul and Gemm. lda/ldb/ldc are row strides; trans_a/trans_b read A^T / B^T. beta 0 or 1. */
void pvk_gemm_f32(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, bool trans_a,
                  const float *B, int64_t ldb, bool trans_b,
                  float *C, int64_t ldc, float alpha, float beta);

#endif
