/* Reference kernels for the coverage operators that the shared kernels (eltwise, reduce, norm,
 * movement) do not already provide: parametric activations, float classification (IsNaN,
 * IsInf), PRelu, Xor, ReduceProd, the log-sum-exp steps, Trilu, the Hardmax one-hot,
 * LpNormalization and ReverseSequence. Tensors are contiguous. Float kernels named _f32 take
 * f32 only: their operators stage F16/BF16 through graph/ops/lowp.h. Prefix pvk_. */
#ifndef PVK_REF_EXTRA_H
#define PVK_REF_EXTRA_H

#include "kernels/kernels.h"

/* ---- parametric unary activations ---------------------------------------------------------- */
typedef enum {
    PVK_XU_SIGN,                /* -1, 0, 1 (NaN stays NaN) */
    PVK_XU_SOFTPLUS,            /* log(1 + exp(x)) */
    PVK_XU_SOFTSIGN,            /* x / (1 + |x|) */
    PVK_XU_ELU,                 /* x < 0 ? alpha * (exp(x) - 1) : x */
    PVK_XU_SELU,                /* gamma * (x <= 0 ? alpha * (exp(x) - 1) : x) */
    PVK_XU_CELU,                /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
    PVK_XU_HARD_SIGMOID,        /* max(0, min(1, alpha * x + beta)) */
    PVK_XU_HARD_SWISH,          /* x * max(0, min(1, x / 6 + 1 / 2)) */
    PVK_XU_THRESHOLDED_RELU,    /* x > alpha ? x : 0 */
    PVK_XU_SHRINK,              /* x < -alpha ? x + beta : x > alpha ? x - beta : 0 (alpha = lambd,
                                   beta = bias) */
    PVK_XU_COUNT
} pvk_xunary_op;

typedef struct pvk_xunary_args { float alpha, beta, gamma; } pvk_xunary_args;

/* Does pvk_xunary take dtype t? F32 for all; SIGN and SHRINK also the integers (SIGN exact;
 * SHRINK computes in double and truncates toward zero, saturating at the type's range). */
bool pvk_xunary_supported(pvk_xunary_op op, pv_dtype t);
/* y[i] = op(x[i]) for n elements; y may be x. */
void pvk_xunary(pvc_pool *pool, pvk_xunary_op op, pv_dtype t, const void *x, void *y, int64_t n,
                const pvk_xunary_args *a);

/* ---- float classification ------------------------------------------------------------------ */
enum { PVK_FC_NAN = 1u, PVK_FC_NEG_INF = 2u, PVK_FC_POS_INF = 4u };
/* y[i] (bool) = x[i] is in one of the classes; x is F32, F16 or BF16. */
void pvk_float_class(pvc_pool *pool, pv_dtype t, const void *x, uint8_t *y, int64_t n,
                     unsigned classes);

/* ---- broadcasting binaries ----------------------------------------------------------------- */
/* PRelu: y = x < 0 ? x * slope : x, slope broadcast to x (y has x's shape and dtype). dtypes:
 * F32, I32, I64 (integers wrap). */
bool pvk_prelu_supported(pv_dtype t);
void pvk_prelu(pvc_pool *pool, const pvc_tensor *x, const pvc_tensor *slope, pvc_tensor *y);
/* y = a != b on bools, numpy broadcasting. */
void pvk_xor(pvc_pool *pool, const pvc_tensor *a, const pvc_tensor *b, pvc_tensor *y);

/* ---- reductions ---------------------------------------------------------------------------- */
/* Product of x (dims[rank], dtype t) over the axes in mask into y (the kept axes, in order).
 * Floats multiply in double, integers in uint64 (wrapping to the type); an empty product is 1.
 * ws: pvk_reduce_prod_workspace bytes. dtypes: F32 F16 BF16 I64 I32 I8 U8. */
size_t pvk_reduce_prod_workspace(int rank, const int64_t *dims, unsigned mask);
void   pvk_reduce_prod(pvc_pool *pool, pv_dtype t, int rank, const int64_t *dims, unsigned mask,
                       const void *x, void *y, void *ws);

/* Log-sum-exp in three steps around pvk_reduce: m = max, e = exp(x - m) (this kernel, m
 * broadcast to x; an infinite or NaN m shifts by 0 so that all -inf stays -inf), s = sum(e),
 * then y = log(s) + m (pvk_log_add_f32). */
void pvk_exp_sub_f32(pvc_pool *pool, const pvc_tensor *x, const pvc_tensor *m, pvc_tensor *e);
void pvk_log_add_f32(const float *s, const float *m, float *y, int64_t n);

/* ---- shape-preserving movement ------------------------------------------------------------- */
/* x, y: [batch, rows, cols] of esize-byte elements; keeps (i, j) where j - i >= k (upper) or
 * j - i <= k (lower), zeroes the rest. y may be x. */
void pvk_trilu(pvc_pool *pool, size_t esize, int64_t batch, int64_t rows, int64_t cols,
               int64_t k, bool upper, const void *x, void *y);

/* x, y: [time, batch, inner] (batch_major false) or [batch, time, inner]; for batch b the
 * first lens[b] time steps are reversed, the rest copied. lens[b] must be in [0, time]. y must
 * not overlap x. */
void pvk_reverse_sequence(pvc_pool *pool, size_t esize, int64_t time, int64_t batch,
                          bool batch_major, int64_t inner, const int64_t *lens, const void *x,
                          void *y);

/* ---- normalisation ------------------------------------------------------------------------- */
/* y: [outer, n, inner] of dtype t (F32 F16 BF16) set to one-hot along n at idx[outer, inner]. */
void pvk_hardmax_fill(pv_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                      void *y);

/* x, y: [outer, n, inner]; y = x / ||x||_p along n, p 1 or 2, the norm in double; a zero norm
 * gives 0 (as ONNX Runtime). y may be x. */
void pvk_lp_normalize_f32(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n,
                          int64_t inner, int p);

#endif
