/* AVX-512 helpers shared by the GEMM files compiled with AVX-512 flags (gemm_f32_avx512.c,
 * gemm_bf16_avx512bf16.c); include it from those only. */
#ifndef PVK_X86_GEMM_AVX512_UTIL_H
#define PVK_X86_GEMM_AVX512_UTIL_H

#include <immintrin.h>

/* Lanes [0, n) set; n may be <= 0 or >= 16. */
static inline __mmask16 lane_mask(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* In-register transpose of a 16x16 block: r[i] lane j -> r[j] lane i. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], per 128-bit lane l: rows 4g..4g+3 of column c + 4l. */
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);       /* columns c, c+8 of rows 0-7 */
        __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);       /* columns c+4, c+12 */
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);  /* the same for rows 8-15 */
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[c + 8] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[c + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[c + 12] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}

#endif
