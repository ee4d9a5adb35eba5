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
    case PVG_ACT_GELU:
        for (int64_t i = 0; i < n; i++) y[i] = 0.5f * y[i] * (1.0f + erff(y[i] * 0.70710678118654752f));
        return;
    }
}

/* Broadcast iteration: for out dims (rank r) and an input of rank ri right-aligned to it,
 * element strides (in elements, 0 on broadcast axes). */
void pvk_broadcast_strides(int r, const int64_t *out_dims, int ri, const int64_t *in_dims,
                           int64_t *estrides);

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, used by Conv, ConvTranspose, MatMul,
 * Gemm and Einsum. lda/ldb/ldc are row strides; trans_a/trans_b read A^T / B^T. beta 0 or 1
 * (beta 0 never reads C). C must not overlap A or B. pool may be NULL. pvk_gemm_f32 calls the
 * variant chosen once from pvc_isa_selected(); every variant has this signature. */
typedef void (*pvk_gemm_f32_fn)(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                                const float *A, int64_t lda, bool trans_a,
                                const float *B, int64_t ldb, bool trans_b,
                                float *C, int64_t ldc, float alpha, float beta);
void pvk_gemm_f32(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, bool trans_a,
                  const float *B, int64_t ldb, bool trans_b,
                  float *C, int64_t ldc, float alpha, float beta);
/* Plain blocked C GEMM (ref/gemm.c): the oracle for the SIMD variants. */
void pvk_gemm_f32_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, bool trans_a,
                      const float *B, int64_t ldb, bool trans_b,
                      float *C, int64_t ldc, float alpha, float beta);
/* x86/gemm_f32_avx2.c (6x16 tiles) and x86/gemm_f32_avx512.c (12x32 tiles); call only when
 * pvc_isa_selected() is at least the variant's isa. */
void pvk_gemm_f32_avx2(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                       const float *A, int64_t lda, bool trans_a,
                       const float *B, int64_t ldb, bool trans_b,
                       float *C, int64_t ldc, float alpha, float beta);
void pvk_gemm_f32_avx512(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                         const float *A, int64_t lda, bool trans_a,
                         const float *B, int64_t ldb, bool trans_b,
                         float *C, int64_t ldc, float alpha, float beta);

/* Every GEMM variant built into this binary, lowest isa first (tests and benches iterate it);
 * the dispatcher takes the last one whose isa <= pvc_isa_selected(). */
typedef struct pvk_gemm_variant {
    const char     *name;
    pvc_isa         isa;     /* required instruction set */
    pvk_gemm_f32_fn fn;
} pvk_gemm_variant;
extern const pvk_gemm_variant pvk_gemm_f32_variants[];
extern const int pvk_gemm_f32_nvariants;
const pvk_gemm_variant *pvk_gemm_f32_selected(void);   /* the variant pvk_gemm_f32 runs */

#endif
