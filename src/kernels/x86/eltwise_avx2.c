/* Vectorized memory-bound kernels, AVX2 + FMA (8 lanes): the vocabulary of eltwise_tmpl.h on
 * ymm registers. vmaskmovps does the tails (masked-off lanes are never accessed); exp's 2^n is
 * two exponent-field multiplies so subnormal results round once. */
#include "kernels/ref/eltwise_simd.h"

#include <immintrin.h>

typedef __m256 vf;
typedef __m256 vmask;
#define VW 8

static inline __m256i tail_mask(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* p * 2^n, n integral in [-150, 129]: two factors 2^(n >> 1), 2^(n - (n >> 1)) that are each
 * normal, so the only rounding is the last multiply's. */
static inline __m256 scale2n(__m256 p, __m256 n)
{
    __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
}

static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* lanes 0, 2, .., 14 of a:b: shuffle within 128-bit halves, then put the 64-bit pairs in order */
static inline __m256 even(__m256 a, __m256 b)
{
    __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

#define LD(p)           _mm256_loadu_ps(p)
#define ST(p, v)        _mm256_storeu_ps((p), (v))
#define LDN(p, n)       _mm256_maskload_ps((p), tail_mask(n))
#define STN(p, v, n)    _mm256_maskstore_ps((p), tail_mask(n), (v))
#define ZTAIL(v, n)     _mm256_and_ps((v), _mm256_castsi256_ps(tail_mask(n)))
#define SET1(f)         _mm256_set1_ps(f)
#define ADD(a, b)       _mm256_add_ps((a), (b))
#define SUB(a, b)       _mm256_sub_ps((a), (b))
#define MUL(a, b)       _mm256_mul_ps((a), (b))
#define DIV(a, b)       _mm256_div_ps((a), (b))
#define FMA(a, b, c)    _mm256_fmadd_ps((a), (b), (c))
#define FNMA(a, b, c)   _mm256_fnmadd_ps((a), (b), (c))
#define MAXP(a, b)      _mm256_max_ps((a), (b))
#define MINP(a, b)      _mm256_min_ps((a), (b))
#define CMPLT(a, b)     _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define CMPGE(a, b)     _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define CMPGT(a, b)     _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define ISNAN(a)        _mm256_cmp_ps((a), (a), _CMP_UNORD_Q)
#define BLEND(m, f, t)  _mm256_blendv_ps((f), (t), (m))
#define AND(a, b)       _mm256_and_ps((a), (b))
#define OR(a, b)        _mm256_or_ps((a), (b))
#define ANDNOT(m, a)    _mm256_andnot_ps((m), (a))
#define ROUND(a)        _mm256_round_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE2N(p, n)   scale2n((p), (n))
#define HSUM(v)         hsum(v)
#define HMAX(v)         hmax(v)
#define EVEN(a, b)      even((a), (b))

#define VARIANT_SYM  pvk_vec_avx2
#define VARIANT_NAME "avx2"
#define VARIANT_ISA  PVC_ISA_AVX2

#include "kernels/x86/eltwise_tmpl.h"
