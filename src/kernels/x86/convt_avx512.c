/* pvk_convt_pix2 for AVX-512 (see kernels/ref/convt_fast.h): eight pixels per step, their value
 * pairs fetched as 64-bit elements by one gather (the pairs sit ld floats apart in colT), bias
 * and activation on the 16 floats, one store of the finished output run. The scalar twin's two
 * strided loads and stores per pair made the ConvTranspose output pass as long as its bf16
 * GEMM. Same arithmetic as the twin (one add, then the activation): bit-identical. */
#include "kernels/ref/convt_fast.h"

#include <immintrin.h>

static inline __m512 act16(__m512 v, const pvg_act *act)
{
    switch (act ? act->kind : PVG_ACT_NONE) {
    case PVG_ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case PVG_ACT_LEAKY_RELU:
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, _mm512_set1_ps(act->alpha));
    case PVG_ACT_CLIP: {   /* v < lo ? lo : (v > hi ? hi : v) on the input v (also when lo > hi); NaN kept */
        __m512 lo = _mm512_set1_ps(act->alpha), hi = _mm512_set1_ps(act->beta);
        __mmask16 below = _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ);
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), v, hi);
        return _mm512_mask_blend_ps(below, v, lo);
    }
    default: return v;
    }
}

void pvk_convt_pix2_avx512(float *dst, const float *src, int64_t ld, int64_t nw, float bias, const pvg_act *act)
{
    __m512 b = _mm512_set1_ps(bias);
    __m512i idx = _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), _mm512_set1_epi64(ld));
    __m512i step = _mm512_set1_epi64(8 * ld);
    int64_t w = 0;
    for (; w + 8 <= nw; w += 8, idx = _mm512_add_epi64(idx, step)) {
        __m512 v = _mm512_castpd_ps(_mm512_i64gather_pd(idx, (const double *)(const void *)src, 4));
        _mm512_storeu_ps(dst + 2 * w, act16(_mm512_add_ps(v, b), act));
    }
    if (w < nw) {
        __mmask8 m = (__mmask8)((1u << (nw - w)) - 1u);
        __m512 v = _mm512_castpd_ps(_mm512_mask_i64gather_pd(_mm512_setzero_pd(), m, idx, (const double *)(const void *)src, 4));
        _mm512_mask_storeu_ps(dst + 2 * w, (__mmask16)((1u << (2 * (nw - w))) - 1u), act16(_mm512_add_ps(v, b), act));
    }
}
