/* AVX-512F f32 GEMM: 12x32 micro-kernel (24 zmm accumulators, two zmm of B per k, A values
 * broadcast from memory) and the packers that feed it; the blocking lives in
 * gemm_f32_blocked.c. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma (this
 * file only); called only when pvc_isa_selected() reports AVX-512. */
#include "kernels/x86/gemm_f32.h"
#include "kernels/gemm_packed.h"

#include "kernels/x86/gemm_avx512_util.h"

enum { MR = 12, NR = 32, NB = NR };


/* ---- micro-kernel ---------------------------------------------------------------------------- */

/* rows is a compile-time constant at every call site, so the unrolled row loops keep exactly
 * 2*rows accumulators in registers and short panels (M edges) do no wasted FMAs. */
static inline __attribute__((always_inline)) void
tile(const int rows, int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
     int64_t ldc, int nr, float alpha, bool overwrite, const pvk_gemm_prefetch *pf)
{
    pvk_pf_cursor pfc = pvk_pf_begin(pf, kc);
    __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        acc0[i] = acc1[i] = _mm512_setzero_ps();
        if (i < rows) {   /* C is merged after kc steps: fetch it meanwhile */
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
        }
    }
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            if (i < rows) {
                __m512 ai = _mm512_set1_ps(a[i]);
                acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
                acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
            }
        }
        a += MR;
        b += NR;
        pvk_pf_step(&pfc);
    }
    pvk_pf_finish(&pfc);
    __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
    __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i < rows) {
            float *ci = c + i * ldc;
            if (overwrite) {
                _mm512_mask_storeu_ps(ci, m0, _mm512_mul_ps(va, acc0[i]));
                _mm512_mask_storeu_ps(ci + 16, m1, _mm512_mul_ps(va, acc1[i]));
            } else {
                _mm512_mask_storeu_ps(ci, m0, _mm512_fmadd_ps(va, acc0[i], _mm512_maskz_loadu_ps(m0, ci)));
                _mm512_mask_storeu_ps(ci + 16, m1, _mm512_fmadd_ps(va, acc1[i], _mm512_maskz_loadu_ps(m1, ci + 16)));
            }
        }
    }
}

static void pvk_f32_gemm_12x32__avx512(int64_t kc, const float *restrict a, const float *restrict b,
                                       float *restrict c, int64_t ldc, int mr, int nr, float alpha,
                                       bool overwrite, const pvk_gemm_prefetch *pf)
{
    switch (mr) {
    case 12: tile(12, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 11: tile(11, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 10: tile(10, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 9:  tile(9, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 8:  tile(8, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 7:  tile(7, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 6:  tile(6, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 5:  tile(5, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 4:  tile(4, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 3:  tile(3, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    case 2:  tile(2, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    default: tile(1, kc, a, b, c, ldc, nr, alpha, overwrite, pf); break;
    }
}

/* ---- packing ----------------------------------------------------------------------------------- */

/* Loads `rows` (<= 16) rows of w (<= 16) floats, ld apart, as 16 vectors (the rest zero),
 * transposes them, and stores vector t (t < w) at dst + t * dstride under mask m. */
static inline __attribute__((always_inline)) void
transpose_rows(const float *src, int64_t ld, int rows, int w, float *dst, int64_t dstride, __mmask16 m)
{
    __m512 r[16];
    __mmask16 lm = lane_mask(w);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_ps(lm, src + i * ld) : _mm512_setzero_ps();
    transpose16(r);
    if (w == 16) {
#pragma GCC unroll 16
        for (int t = 0; t < 16; t++) _mm512_mask_storeu_ps(dst + t * dstride, m, r[t]);
    } else {
        for (int t = 0; t < w; t++) _mm512_mask_storeu_ps(dst + t * dstride, m, r[t]);
    }
}

static void pack_a(const float *A, int64_t lda, bool trans, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                   float *restrict dst)
{
    for (int64_t p = 0; p < mc; p += MR, dst += MR * kc) {
        int rows = (int)PVC_MIN(MR, mc - p);
        if (trans) {   /* op(A) column k is a contiguous run of row k0+k of A */
            __mmask16 m = lane_mask(rows);
            const float *src = A + k0 * lda + m0 + p;
            for (int64_t k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(dst + k * MR, 0x0fff, _mm512_maskz_loadu_ps(m, src + k * lda));
        } else {       /* rows of A are runs along k: transpose 16 k at a time */
            const float *src = A + (m0 + p) * lda + k0;
            int64_t k = 0;
            if (rows == MR)   /* constant rows and width: the 16 vectors stay in registers */
                for (; k + 16 <= kc; k += 16) transpose_rows(src + k, lda, MR, 16, dst + k * MR, MR, 0x0fff);
            for (; k < kc; k += 16)
                transpose_rows(src + k, lda, rows, (int)PVC_MIN(16, kc - k), dst + k * MR, MR, 0x0fff);
        }
    }
}

static void pack_b(const float *B, int64_t ldb, bool trans, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                   float *restrict dst)
{
    int full = (int)(nc / NR), rem = (int)(nc % NR);
    if (!trans) {      /* row by row across all the panels: one long run per row of B */
        __mmask16 m0 = lane_mask(rem), m1 = lane_mask(rem - 16);
        const float *src = B + k0 * ldb + n0;
        for (int64_t k = 0; k < kc; k++, src += ldb) {
            float *d = dst + k * NR;
            for (int q = 0; q < full; q++, d += NR * kc) {
                _mm512_store_ps(d, _mm512_loadu_ps(src + q * NR));
                _mm512_store_ps(d + 16, _mm512_loadu_ps(src + q * NR + 16));
            }
            if (rem) {
                _mm512_store_ps(d, _mm512_maskz_loadu_ps(m0, src + full * NR));
                _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(m1, src + full * NR + 16));
            }
        }
    } else {           /* rows of B are the panels' columns: transpose 16 columns x 16 k at a time */
        for (int q = 0; q * NR < nc; q++, dst += NR * kc) {
            const float *src = B + (n0 + q * NR) * ldb + k0;
            int cols = (int)PVC_MIN(NR, nc - q * NR), lo = PVC_MIN(16, cols), hi = PVC_MAX(0, cols - 16);
            for (int64_t k = 0; k < kc; k += 16) {
                int w = (int)PVC_MIN(16, kc - k);
                transpose_rows(src + k, ldb, lo, w, dst + k * NR, NR, 0xffff);
                transpose_rows(hi ? src + 16 * ldb + k : src, ldb, hi, w, dst + k * NR + 16, NR, 0xffff);
            }
        }
    }
}

static const pvk_gemm_ukernel ukernel = { MR, NR, 192, 256, NB, pack_a, pack_b, pvk_f32_gemm_12x32__avx512 };

void pvk_gemm_f32_avx512(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
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
    pvk_f32_gemm_12x32__avx512(kc, a, b, c, ldc, mr, nr, 1.0f, overwrite, pf);
}

static void pk_pack_at(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, void *restrict dst)
{
    pack_a(A, lda, true, m0, mc, k0, kc, dst);
}

const pvk_gemm_pk pvk_gemm_pk_f32_avx512 = { MR, NR, 1, 4, 192, 256, pk_pack_a, pk_pack_at, pk_kernel };
