/* pvk_sum_f64 for AVX-512 (see kernels/ref/pool.h): 32 floats per step, widened to four vectors
 * of 8 doubles into four accumulators (independent chains cover the add latency). The scalar
 * twin's eight double sums ran at ~2 floats a cycle: GlobalAveragePool's 48 x 5120 planes in
 * the unseen graph took 50 us of its 1.8 ms. */
#include "kernels/ref/pool.h"

#include <immintrin.h>

double pvk_sum_f64_avx512(const float *x, int64_t n)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
        a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)));
        a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24)));
    }
    for (; i + 8 <= n; i += 8) a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
    if (i < n) {
        __mmask8 m = (__mmask8)((1u << (n - i)) - 1u);
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, x + i)));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}
