/* Vectorized memory-bound kernels: transcendental maps (exp, erf, tanh, sigmoid, GELU), Relu,
 * f32 Add/Sub/Mul/Div rows with a fused activation, one LayerNormalization row, one Softmax row
 * and one 2-D MaxPool output row. Every family has a plain C reference twin (eltwise_simd.c, the
 * "ref" variant) and x86 variants (x86/eltwise_avx2.c, x86/eltwise_avx512.c) with the same
 * signatures; a variant table picks the last one whose isa <= pvc_isa_selected(), as the GEMM
 * and attention tables do. Prefix pvk_.
 *
 * Accuracy of the vector maps against libm in double (float32; asserted over dense sweeps in
 * tests/unit/test_eltwise_simd.c, measured maxima in brackets): exp <= 2 ulp [1] over its whole
 * range, subnormal results included; tanh <= 2 ulp [1]; sigmoid <= 3 ulp [2] (0 below -88.7,
 * as 1 / (1 + expf(-x)) gives); erf <= 2 ulp [2] for |x| < 0.875 and <= 1e-7 absolute [5.6e-8]
 * beyond. GELU inherits erf's / tanh's error scaled by 0.5 |x|. NaN in gives NaN; +-Inf give
 * the limits. The binary rows, Relu and MaxPool are exact: the twins' values (NaN where they
 * give NaN; MaxPool's zeros may differ in sign, its taps are visited in another order). */
#ifndef PVK_ELTWISE_SIMD_H
#define PVK_ELTWISE_SIMD_H

#include "kernels/kernels.h"

typedef enum {
    PVK_VU_EXP, PVK_VU_ERF, PVK_VU_TANH, PVK_VU_SIGMOID,
    PVK_VU_GELU,        /* 0.5 x (1 + erf(x / sqrt 2)) */
    PVK_VU_GELU_TANH,   /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    PVK_VU_RELU,        /* x > 0 ? x : 0 (NaN -> 0, as pvk_unary and pvk_act_apply) */
    PVK_VU_COUNT
} pvk_vun_op;

typedef enum { PVK_VB_ADD, PVK_VB_SUB, PVK_VB_MUL, PVK_VB_DIV, PVK_VB_COUNT } pvk_vbin_op;

/* y[i] = f(x[i]) for n elements; y may equal x. */
typedef void (*pvk_vun_fn)(const float *x, float *y, int64_t n);
/* y[i] = act(a[i * sa] op b[i * sb]) with sa, sb in {0, 1}; y may equal a or b when its stride
 * is 1. act may be NULL (none); it is applied as pvk_act_apply does. */
typedef void (*pvk_vbin_fn)(pvk_vbin_op op, const float *a, int64_t sa, const float *b, int64_t sb,
                            float *y, int64_t n, const pvg_act *act);
/* One row of len > 0: y = (x - mean) / sqrt(var + eps) * scale + bias (bias may be NULL);
 * *mean / *invstd receive the statistics when not NULL. y may equal x. */
typedef void (*pvk_vln_fn)(const float *x, const float *scale, const float *bias, float *y, int64_t len,
                           float eps, float *mean, float *invstd);
/* One contiguous row of n > 0: softmax, or log-softmax when log. y may equal x. */
typedef void (*pvk_vsm_fn)(const float *x, float *y, int64_t n, bool log);
/* One output row of a 2-D max pool with dilation 1 on one plane x[in_h][in_w]: input rows
 * [r0, r1) (r0 < r1, all inside the plane) are the vertical window; output column ow covers
 * input columns [ow * sw - pw, + kw), of which at least one is inside the row; out_w outputs.
 * A NaN anywhere in a window gives NaN. tmp: scratch of at least pvk_vmp_tmp_len floats. */
typedef void (*pvk_vmp_fn)(const float *x, int64_t in_w, int64_t r0, int64_t r1, int64_t kw, int64_t sw,
                           int64_t pw, int64_t out_w, float *tmp, float *y);
/* Scratch floats a pvk_vmp_fn needs. */
static inline int64_t pvk_vmp_tmp_len(int64_t kw, int64_t sw, int64_t out_w)
{
    return (out_w - 1) * sw + kw + 64;
}

typedef struct pvk_vec_variant {
    const char *name;
    pvc_isa     isa;                    /* required instruction set */
    pvk_vun_fn  unary[PVK_VU_COUNT];
    pvk_vbin_fn binary;
    pvk_vln_fn  layernorm_row;
    pvk_vsm_fn  softmax_row;
    pvk_vmp_fn  maxpool2d_row;
} pvk_vec_variant;

/* The plain C twins (eltwise_simd.c): libm maps, one loop per family. */
extern const pvk_vec_variant pvk_vec_ref;
/* x86 variants; use only when pvc_isa_selected() >= their isa. */
extern const pvk_vec_variant pvk_vec_avx2;
extern const pvk_vec_variant pvk_vec_avx512;

/* Every variant built into this binary, lowest isa first (tests iterate it). */
extern const pvk_vec_variant *const pvk_vec_variants[];
extern const int pvk_vec_nvariants;
/* The variant the drivers below run. */
const pvk_vec_variant *pvk_vec_selected(void);

/* ---- drivers (parallel over pool, which may be NULL) -------------------------------------- */
void pvk_vunary(pvc_pool *pool, pvk_vun_op op, const float *x, float *y, int64_t n);

#endif
