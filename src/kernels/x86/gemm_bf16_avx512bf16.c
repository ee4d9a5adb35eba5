/* AVX512_BF16 GEMM for kernels/gemm_packed.h: a 12x32 micro-kernel on vdpbf16ps (24 zmm fp32
 * accumulators; per k-pair two zmm of B, 32 columns x 2 bf16, and the 12 rows' bf16 pairs
 * broadcast from memory as 32-bit words), and the A packer that rounds A to bf16 (vcvtne2ps2bf16:
 * nearest even, denormals to zero) while it packs. B arrives packed once at create (layout in
 * gemm_packed.h); C is fp32. Compiled with the AVX-512 flags + -mavx512bf16 (this file only);
 * used only when pvc_isa_selected() >= AVX512_BF16.
 * Blocking: kc 512 k (256 pairs): a B slice is 512 * 32 * 2 = 32 KiB (L1), an A block
 * 192 x 512 bf16 = 192 KiB (L2), the same bytes as the fp32 kernel's kc 256. */
#include "kernels/gemm_packed.h"
#include "kernels/x86/gemm_avx512_util.h"

enum { MR = 12, NR = 32 };

/* rows is a compile-time constant at every call site (see gemm_f32_avx512.c). */
static inline __attribute__((always_inline)) void
tile(const int rows, int64_t kc, const uint32_t *restrict a, const uint16_t *restrict b, float *restrict c,
     int64_t ldc, int nr, bool overwrite, const pvk_gemm_prefetch *pf)
{
    int64_t np = (kc + 1) / 2;
    pvk_pf_cursor pfc = pvk_pf_begin(pf, np);
    __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        acc0[i] = acc1[i] = _mm512_setzero_ps();
        if (i < rows) {
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
        }
    }
    for (int64_t p = 0; p < np; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 32);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
                acc0[i] = _mm512_dpbf16_ps(acc0[i], ai, b0);
                acc1[i] = _mm512_dpbf16_ps(acc1[i], ai, b1);
            }
        }
        a += MR;
        b += 2 * NR;
        pvk_pf_step(&pfc);
    }
    pvk_pf_finish(&pfc);
    __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i < rows) {
            float *ci = c + i * ldc;
            if (overwrite) {
                _mm512_mask_storeu_ps(ci, m0, acc0[i]);
                _mm512_mask_storeu_ps(ci + 16, m1, acc1[i]);
            } else {
                _mm512_mask_storeu_ps(ci, m0, _mm512_add_ps(acc0[i], _mm512_maskz_loadu_ps(m0, ci)));
                _mm512_mask_storeu_ps(ci + 16, m1, _mm512_add_ps(acc1[i], _mm512_maskz_loadu_ps(m1, ci + 16)));
            }
        }
    }
}

static void pvk_bf16_gemm_12x32__avx512bf16(int64_t kc, const void *restrict av, const void *restrict bv,
                                            float *restrict c, int64_t ldc, int mr, int nr, bool overwrite,
                                            const pvk_gemm_prefetch *pf)
{
    const uint32_t *a = av;
    const uint16_t *b = bv;
    switch (mr) {
    case 12: tile(12, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 11: tile(11, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 10: tile(10, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 9:  tile(9, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 8:  tile(8, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 7:  tile(7, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 6:  tile(6, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 5:  tile(5, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 4:  tile(4, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 3:  tile(3, kc, a, b, c, ldc, nr, overwrite, pf); break;
    case 2:  tile(2, kc, a, b, c, ldc, nr, overwrite, pf); break;
    default: tile(1, kc, a, b, c, ldc, nr, overwrite, pf); break;
    }
}

/* A[m0 : m0+mc, k0 : k0+kc] as 12-row panels of k-pairs: per row, 32 consecutive floats become
 * 16 bf16 pairs in one zmm (the pairs are adjacent k already), then a 16x16 transpose of the
 * 32-bit pairs turns rows into the per-pair layout. A missing odd k loads as 0. */
static void pack_a(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, void *restrict dstv)
{
    uint32_t *dst = dstv;
    int64_t np = (kc + 1) / 2;
    for (int64_t p = 0; p < mc; p += MR, dst += MR * np) {
        int rows = (int)PVC_MIN(MR, mc - p);
        const float *src = A + (m0 + p) * lda + k0;
        for (int64_t k = 0; k < kc; k += 32) {
            int w = (int)PVC_MIN(32, kc - k);
            __mmask16 lo = lane_mask(w), hi = lane_mask(w - 16);
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                if (i < rows) {
                    const float *s = src + i * lda + k;
                    __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, s + 16), _mm512_maskz_loadu_ps(lo, s));
                    r[i] = _mm512_castsi512_ps((__m512i)v);
                } else {
                    r[i] = _mm512_setzero_ps();
                }
            }
            transpose16(r);
            int pairs = (w + 1) / 2;
            float *d = (float *)(dst + (k / 2) * MR);
            if (pairs == 16) {
#pragma GCC unroll 16
                for (int t = 0; t < 16; t++) _mm512_mask_storeu_ps(d + t * MR, 0x0fff, r[t]);
            } else {
                for (int t = 0; t < pairs; t++) _mm512_mask_storeu_ps(d + t * MR, 0x0fff, r[t]);
            }
        }
    }
}

/* The same panels from A given transposed (K x M, row stride lda): rows k and k+1 of A hold the
 * pair's two values for consecutive m, so each is rounded as 16 lanes, widened to 32 bits and
 * the odd k's shifted into the high half: word i = bf16(A[k][m+i]) | bf16(A[k+1][m+i]) << 16. */
static void pack_at(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, void *restrict dstv)
{
    uint32_t *dst = dstv;
    int64_t np = (kc + 1) / 2;
    for (int64_t p = 0; p < mc; p += MR, dst += MR * np) {
        __mmask16 m = lane_mask((int)PVC_MIN(MR, mc - p));
        const float *src = A + k0 * lda + m0 + p;
        for (int64_t q = 0; q < np; q++) {
            const float *r0 = src + 2 * q * lda;
            __m512 lo = _mm512_maskz_loadu_ps(m, r0);
            __m512 hi = 2 * q + 1 < kc ? _mm512_maskz_loadu_ps(m, r0 + lda) : _mm512_setzero_ps();
            __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
            __m512i h = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
            _mm512_mask_storeu_epi32(dst + q * MR, 0x0fff, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
        }
    }
}

const pvk_gemm_pk pvk_gemm_pk_bf16_avx512bf16 = { MR, NR, 2, 2, 192, 512, pack_a, pack_at, pvk_bf16_gemm_12x32__avx512bf16 };
