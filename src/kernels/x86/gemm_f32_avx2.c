/* AVX2+FMA f32 GEMM: 6x16 micro-kernel (12 ymm accumulators, two ymm of B per k, A values
 * broadcast from memory) and the packers that feed it; the blocking lives in
 * gemm_f32_blocked.c. Compiled with -mavx2 -mfma (this file only); called only when
 * pvc_isa_selected() reports AVX2 or better. */
#include "kernels/x86/gemm_f32.h"
#include "kernels/gemm_packed.h"

#include <immintrin.h>

enum { MR = 6, NR = 16, NB = 2 * NR };

/* All-ones in lanes [0, n) (n may be <= 0 or >= 8), for maskload/maskstore. */
static __m256i lane_mask(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ---- micro-kernel ---------------------------------------------------------------------------- */

/* rows is a compile-time constant at every call site (see the avx512 twin). */
static inline __attribute__((always_inline)) void
tile(const int rows, int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
     int64_t ldc, int nr, float alpha, bool overwrite, const pvk_gemm_prefetch *pf)
{
    pvk_pf_cursor pfc = pvk_pf_begin(pf, kc);
    __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) acc0[i] = acc1[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m256 ai = _mm256_broadcast_ss(a + i);
                acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
                acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
            }
        }
        a += MR;
        b += NR;
        pvk_pf_step(&pfc);
    }
    pvk_pf_finish(&pfc);
    __m256 va = _mm256_set1_ps(alpha);
    if (nr == NR) {
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                float *ci = c + i * ldc;
                if (overwrite) {
                    _mm256_storeu_ps(ci, _mm256_mul_ps(va, acc0[i]));
                    _mm256_storeu_ps(ci + 8, _mm256_mul_ps(va, acc1[i]));
                } else {
                    _mm256_storeu_ps(ci, _mm256_fmadd_ps(va, acc0[i], _mm256_loadu_ps(ci)));
                    _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(va, acc1[i], _mm256_loadu_ps(ci + 8)));
                }
            }
        }
        return;
    }
    __m256i m0 = lane_mask(nr), m1 = lane_mask(nr - 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (i < rows) {
            float *ci = c + i * ldc;
            __m256 r0 = _mm256_mul_ps(va, acc0[i]), r1 = _mm256_mul_ps(va, acc1[i]);
            if (!overwrite) {
                r0 = _mm256_add_ps(r0, _mm256_maskload_ps(ci, m0));
                r1 = _mm256_add_ps(r1, _mm256_maskload_ps(ci + 8, m1));
            }
            _mm256_maskstore_ps(ci, m0, r0);
            _mm256_maskstore_ps(ci + 8, m1, r1);
        }
    }
}

static void pvk_f32_gemm_6x16__avx2(int64_t kc, const float *restrict a, const float *restrict b,
                                    float *restrict c, int64_t ldc, int mr, int nr, float alpha,
                                    bool overwrite, const pvk_gemm_prefetch *pf)
{
    switch (mr) {
    case 6:  tile(6, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 5:  tile(5, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 4:  tile(4, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 3:  tile(3, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 2:  tile(2, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    default: tile(1, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    }
}

/* ---- packing ----------------------------------------------------------------------------------- */

/* In-register transpose of an 8x8 block: r[i] lane j -> r[j] lane i. */
static inline __attribute__((always_inline)) void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], per 128-bit lane l: rows 4g..4g+3 of column c + 4l. */
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* Loads `rows` (<= 8) rows of w (<= 8) floats, ld apart, as 8 vectors (the rest zero),
 * transposes them, and stores vector t (t < w) at dst + t * dstride under mask m. */
static inline __attribute__((always_inline)) void
transpose_rows(const float *src, int64_t ld, int rows, int w, float *dst, int64_t dstride, __m256i m)
{
    __m256 r[8];
    __m256i lm = lane_mask(w);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_maskload_ps(src + i * ld, lm) : _mm256_setzero_ps();
    transpose8(r);
    for (int t = 0; t < w; t++) _mm256_maskstore_ps(dst + t * dstride, m, r[t]);
}

static void pack_a(const float *A, int64_t lda, bool trans, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                   float *restrict dst)
{
    __m256i six = lane_mask(MR);
    for (int64_t p = 0; p < mc; p += MR, dst += MR * kc) {
        int rows = (int)PVC_MIN(MR, mc - p);
        if (trans) {   /* op(A) column k is a contiguous run of row k0+k of A */
            __m256i m = lane_mask(rows);
            const float *src = A + k0 * lda + m0 + p;
            for (int64_t k = 0; k < kc; k++)
                _mm256_maskstore_ps(dst + k * MR, six, _mm256_maskload_ps(src + k * lda, m));
        } else {       /* rows of A are runs along k: transpose 8 k at a time */
            const float *src = A + (m0 + p) * lda + k0;
            for (int64_t k = 0; k < kc; k += 8)
                transpose_rows(src + k, lda, rows, (int)PVC_MIN(8, kc - k), dst + k * MR, MR, six);
        }
    }
}

static void pack_b(const float *B, int64_t ldb, bool trans, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                   float *restrict dst)
{
    int full = (int)(nc / NR), rem = (int)(nc % NR);
    if (!trans) {      /* row by row across all the panels: one long run per row of B */
        __m256i m0 = lane_mask(rem), m1 = lane_mask(rem - 8);
        const float *src = B + k0 * ldb + n0;
        for (int64_t k = 0; k < kc; k++, src += ldb) {
            float *d = dst + k * NR;
            for (int q = 0; q < full; q++, d += NR * kc) {
                _mm256_store_ps(d, _mm256_loadu_ps(src + q * NR));
                _mm256_store_ps(d + 8, _mm256_loadu_ps(src + q * NR + 8));
            }
            if (rem) {
                _mm256_store_ps(d, _mm256_maskload_ps(src + full * NR, m0));
                _mm256_store_ps(d + 8, _mm256_maskload_ps(src + full * NR + 8, m1));
            }
        }
    } else {           /* rows of B are the panels' columns: transpose 8 columns x 8 k at a time */
        __m256i all = _mm256_set1_epi32(-1);
        for (int q = 0; q * NR < nc; q++, dst += NR * kc) {
            const float *src = B + (n0 + q * NR) * ldb + k0;
            int cols = (int)PVC_MIN(NR, nc - q * NR), lo = PVC_MIN(8, cols), hi = PVC_MAX(0, cols - 8);
            for (int64_t k = 0; k < kc; k += 8) {
                int w = (int)PVC_MIN(8, kc - k);
                transpose_rows(src + k, ldb, lo, w, dst + k * NR, NR, all);
                transpose_rows(hi ? src + 8 * ldb + k : src, ldb, hi, w, dst + k * NR + 8, NR, all);
            }
        }
    }
}

static const pvk_gemm_ukernel ukernel = { MR, NR, 192, 320, NB, pack_a, pack_b, pvk_f32_gemm_6x16__avx2 };

void pvk_gemm_f32_avx2(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                       const float *A, int64_t lda, bool trans_a,
                       const float *B, int64_t ldb, bool trans_b,
                       float *C, int64_t ldc, float alpha, float beta)
{
    pvk_gemm_f32_blocked(&ukernel, pool, M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc, alpha, beta);
}

/* The same micro-kernel and A packer for kernels/gemm_packed.h (B packed once at create, in
 * this kernel's panel layout, alpha folded into it): no B packing; the driver hands each call
 * its share of the next packed B slice to prefetch. */
static void pk_pack_a(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, void *restrict dst)
{
    pack_a(A, lda, false, m0, mc, k0, kc, dst);
}

static void pk_kernel(int64_t kc, const void *restrict a, const void *restrict b, float *restrict c, int64_t ldc,
                      int mr, int nr, bool overwrite, const pvk_gemm_prefetch *pf)
{
    pvk_f32_gemm_6x16__avx2(kc, a, b, c, ldc, mr, nr, 1.0f, overwrite, pf);
}

static void pk_pack_at(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, void *restrict dst)
{
    pack_a(A, lda, true, m0, mc, k0, kc, dst);
}

const pvk_gemm_pk pvk_gemm_pk_f32_avx2 = { MR, NR, 1, 4, 192, 320, pk_pack_a, pk_pack_at, pk_kernel };
