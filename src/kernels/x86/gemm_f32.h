/* The blocked f32 GEMM driver shared by the SIMD variants (gemm_f32_blocked.c) and the
 * interface each ISA file implements for it: a micro-kernel and two packing routines.
 *
 * Packed layouts (the contract between packers and micro-kernels):
 *   A: op(A)[m0 : m0+mc, k0 : k0+kc] as MR-row micro-panels; panel p starts at p*MR*kc and holds,
 *      for each k, the MR values op(A)[m0+p*MR+i][k0+k], i in [0, MR). Rows past mc are zero.
 *   B: op(B)[k0 : k0+kc, n0 : n0+nc] as NR-column micro-panels; panel q starts at q*NR*kc and
 *      holds, for each k, the NR values op(B)[k0+k][n0+q*NR+j]. Columns past nc are zero up to
 *      the next multiple of NR. nc <= nb (several panels per call: fewer, longer row reads).
 * The micro-kernel multiplies one A panel by one B panel over kc and merges the mr x nr valid
 * corner into C: C = alpha*acc when overwrite (C is not read), else C += alpha*acc. While it
 * runs it prefetches its share of the next B panel's source (pvk_gemm_prefetch). */
#ifndef PVK_X86_GEMM_F32_H
#define PVK_X86_GEMM_F32_H

#include "kernels/kernels.h"

typedef void (*pvk_gemm_pack_a_fn)(const float *A, int64_t lda, bool trans, int64_t m0, int64_t mc,
                                   int64_t k0, int64_t kc, float *restrict dst);
typedef void (*pvk_gemm_pack_b_fn)(const float *B, int64_t ldb, bool trans, int64_t k0, int64_t kc,
                                   int64_t n0, int64_t nc, float *restrict dst);
/* Source lines of the next B panel for a micro-kernel to prefetch into L2, spread over its
 * k loop: rows rows of lines 64-byte lines each, the rows stride bytes apart. */
typedef struct pvk_gemm_prefetch {
    const char *base;
    int64_t     stride;
    int         rows, lines;
} pvk_gemm_prefetch;

typedef void (*pvk_gemm_ukernel_fn)(int64_t kc, const float *restrict a, const float *restrict b,
                                    float *restrict c, int64_t ldc, int mr, int nr, float alpha,
                                    bool overwrite, const pvk_gemm_prefetch *pf);

typedef struct pvk_gemm_ukernel {
    int mr, nr;        /* micro-tile */
    int mc, kc;        /* largest A block (rows, multiple of mr) and K slice packed at once */
    int nb;            /* B columns packed at once (multiple of nr) */
    pvk_gemm_pack_a_fn  pack_a;
    pvk_gemm_pack_b_fn  pack_b;
    pvk_gemm_ukernel_fn kernel;
} pvk_gemm_ukernel;

/* A micro-kernel's walk over its pvk_gemm_prefetch share: pvk_pf_step once per k issues one
 * line every `every` steps; pvk_pf_finish issues what is left (kc shorter than the share). */
typedef struct pvk_pf_cursor {
    const char *row;
    int64_t stride, every, count;
    int rows, lines, line;
} pvk_pf_cursor;

static inline __attribute__((always_inline)) pvk_pf_cursor pvk_pf_begin(const pvk_gemm_prefetch *pf, int64_t kc)
{
    int64_t total = (int64_t)pf->rows * pf->lines;
    int64_t every = total > 0 && kc > total ? kc / total : 1;
    pvk_pf_cursor c = { pf->base, pf->stride, every, every, pf->rows, pf->lines, 0 };
    return c;
}

static inline __attribute__((always_inline)) void pvk_pf_step(pvk_pf_cursor *c)
{
    if (--c->count) return;
    c->count = c->every;
    if (c->rows <= 0) return;
    __builtin_prefetch(c->row + 64 * c->line, 0, 2);   /* prefetcht1: into L2 */
    if (++c->line == c->lines) { c->line = 0; c->row += c->stride; c->rows--; }
}

static inline __attribute__((always_inline)) void pvk_pf_finish(pvk_pf_cursor *c)
{
    for (; c->rows > 0; c->rows--, c->row += c->stride, c->line = 0)
        for (int l = c->line; l < c->lines; l++) __builtin_prefetch(c->row + 64 * l, 0, 2);
}

/* Packing buffers live on each participating thread's stack (see gemm_f32_blocked.c for why):
 * mc*kc floats for A and kc*nb for B must fit these caps (the largest variant's needs). */
enum { PVK_GEMM_APACK_FLOATS = 192 * 320, PVK_GEMM_BPACK_FLOATS = 320 * 32 };

/* C = alpha * op(A) * op(B) + beta * C with the given micro-kernel; same contract as
 * pvk_gemm_f32. */
void pvk_gemm_f32_blocked(const pvk_gemm_ukernel *uk, pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                          const float *A, int64_t lda, bool trans_a,
                          const float *B, int64_t ldb, bool trans_b,
                          float *C, int64_t ldc, float alpha, float beta);

#endif
