/* Vectorized memory-bound kernels, AVX-512 (16 lanes): the vocabulary of eltwise_tmpl.h on
 * zmm registers. Masked loads/stores do the tails (nothing past a row is touched); vscalefps
 * does exp's 2^n including overflow and subnormal results. */
#include "kernels/ref/eltwise_simd.h"

#include <immintrin.h>

typedef __m512 vf;
typedef __mmask16 vmask;
#define VW 16

static inline __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1u); }

#define LD(p)           _mm512_loadu_ps(p)
#define ST(p, v)        _mm512_storeu_ps((p), (v))
#define LDN(p, n)       _mm512_maskz_loadu_ps(tail_mask(n), (p))
#define STN(p, v, n)    _mm512_mask_storeu_ps((p), tail_mask(n), (v))
#define ZTAIL(v, n)     _mm512_maskz_mov_ps(tail_mask(n), (v))
#define SET1(f)         _mm512_set1_ps(f)
#define ADD(a, b)       _mm512_add_ps((a), (b))
#define SUB(a, b)       _mm512_sub_ps((a), (b))
#define MUL(a, b)       _mm512_mul_ps((a), (b))
#define DIV(a, b)       _mm512_div_ps((a), (b))
#define FMA(a, b, c)    _mm512_fmadd_ps((a), (b), (c))
#define FNMA(a, b, c)   _mm512_fnmadd_ps((a), (b), (c))
#define MAXP(a, b)      _mm512_max_ps((a), (b))
#define MINP(a, b)      _mm512_min_ps((a), (b))
#define CMPLT(a, b)     _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define CMPGE(a, b)     _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define CMPGT(a, b)     _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define ISNAN(a)        _mm512_cmp_ps_mask((a), (a), _CMP_UNORD_Q)
#define BLEND(m, f, t)  _mm512_mask_blend_ps((m), (f), (t))
#define AND(a, b)       _mm512_and_ps((a), (b))
#define OR(a, b)        _mm512_or_ps((a), (b))
#define ANDNOT(m, a)    _mm512_andnot_ps((m), (a))
#define ROUND(a)        _mm512_roundscale_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE2N(p, n)   _mm512_scalef_ps((p), (n))
#define HSUM(v)         _mm512_reduce_add_ps(v)
#define HMAX(v)         _mm512_reduce_max_ps(v)
#define EVEN(a, b)      _mm512_permutex2var_ps((a), _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, \
                                                                      24, 26, 28, 30), (b))

#define VARIANT_SYM  pvk_vec_avx512
#define VARIANT_NAME "avx512"
#define VARIANT_ISA  PVC_ISA_AVX512

#include "kernels/x86/eltwise_tmpl.h"
