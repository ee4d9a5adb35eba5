/* Reference elementwise kernels: unary math, binary arithmetic and comparisons with numpy
 * broadcasting, Where and Cast. Tensors are contiguous; an output may share input 0's buffer
 * (in-place) whenever it has input 0's shape. F16/BF16 are computed through f32. Integer
 * arithmetic is exact and wraps; integer division or modulus by zero gives 0. Prefix pvk_. */
#ifndef PVK_ELTWISE_H
#define PVK_ELTWISE_H

#include "kernels/kernels.h"

/* ---- broadcasting ------------------------------------------------------------------------- */
#define PVK_BCAST_MAX_IN 3

/* Broadcast shape of n tensors into (*rank, dims); false when some dim pair is incompatible. */
bool pvk_broadcast_shape(int n, const pvc_tensor *const *in, int *rank, int64_t *dims);

/* One output row: y[0..n) from inputs x[k], each read with element stride s[k] (0 or 1). */
typedef void (*pvk_row_fn)(const void *ctx, int64_t n, void *y, const void *const *x,
                           const int64_t *s);

/* Calls fn over every row of y with in[0..nin) (nin <= PVK_BCAST_MAX_IN) broadcast to y's
 * shape. Parallel over y when pool is given. */
void pvk_broadcast_rows(pvc_pool *pool, int nin, const pvc_tensor *const *in, pvc_tensor *y,
                        pvk_row_fn fn, const void *ctx);

/* ---- unary -------------------------------------------------------------------------------- */
typedef enum {
    PVK_UN_NEG, PVK_UN_ABS, PVK_UN_SQRT, PVK_UN_RECIPROCAL, PVK_UN_EXP, PVK_UN_LOG, PVK_UN_SIN,
    PVK_UN_COS, PVK_UN_ERF, PVK_UN_TANH, PVK_UN_SIGMOID, PVK_UN_RELU, PVK_UN_LEAKY_RELU,
    PVK_UN_CLIP, PVK_UN_FLOOR, PVK_UN_CEIL, PVK_UN_ROUND, PVK_UN_NOT,
    PVK_UN_TAN, PVK_UN_ASIN, PVK_UN_ACOS, PVK_UN_ATAN, PVK_UN_SINH, PVK_UN_COSH, PVK_UN_ASINH,
    PVK_UN_ACOSH, PVK_UN_ATANH,
    PVK_UN_COUNT
} pvk_unary_op;

/* LeakyRelu: alpha is the slope. Clip: [lo, hi] as floats for float dtypes, [ilo, ihi] for
 * integers (a lower bound above the upper one yields the upper one, as ONNX says). */
typedef struct pvk_unary_args {
    float   alpha, lo, hi;
    int64_t ilo, ihi;
} pvk_unary_args;

/* Does the kernel implement op on dtype t? (NOT: bool; NEG, ABS, RELU, CLIP: floats and
 * integers; the rest: floats.) */
bool pvk_unary_supported(pvk_unary_op op, pv_dtype t);
/* y[i] = op(x[i]) for n elements of dtype t. */
void pvk_unary(pvc_pool *pool, pvk_unary_op op, pv_dtype t, const void *x, void *y, int64_t n,
               const pvk_unary_args *a);

/* ---- binary ------------------------------------------------------------------------------- */
typedef enum {
    PVK_BIN_ADD, PVK_BIN_SUB, PVK_BIN_MUL, PVK_BIN_DIV, PVK_BIN_POW,
    PVK_BIN_MOD,    /* integer mod: the sign of the divisor (Python) */
    PVK_BIN_FMOD,   /* C fmod: the sign of the dividend */
    PVK_BIN_MIN, PVK_BIN_MAX,
    PVK_BIN_EQ, PVK_BIN_LT, PVK_BIN_GT, PVK_BIN_LE, PVK_BIN_GE,   /* -> bool */
    PVK_BIN_AND, PVK_BIN_OR,                                      /* bool -> bool */
    PVK_BIN_COUNT
} pvk_binary_op;

/* True for the comparison and logical ops (bool output). */
bool pvk_binary_is_predicate(pvk_binary_op op);
/* Does the kernel implement op on (ta, tb)? Only POW accepts ta != tb (any numeric exponent). */
bool pvk_binary_supported(pvk_binary_op op, pv_dtype ta, pv_dtype tb);
/* y = a op b with numpy broadcasting; y has the broadcast shape and a's dtype (bool for
 * predicates). Float MIN/MAX propagate NaN. */
void pvk_binary(pvc_pool *pool, pvk_binary_op op, const pvc_tensor *a, const pvc_tensor *b,
                pvc_tensor *y);

/* f32 Add/Sub/Mul/Div with numpy broadcasting through the vectorized rows (eltwise_simd.h), with
 * act (may be NULL) applied as pvk_act_apply does. false (nothing written) when op is not one
 * of the four or a dtype is not F32. */
bool pvk_binary_f32_fast(pvc_pool *pool, pvk_binary_op op, const pvc_tensor *a, const pvc_tensor *b,
                         pvc_tensor *y, const pvg_act *act);

/* ---- Where and Cast ----------------------------------------------------------------------- */
/* out = cond ? x : y, all three broadcast; cond is bool, x, y and out share one dtype. */
void pvk_where(pvc_pool *pool, const pvc_tensor *cond, const pvc_tensor *x, const pvc_tensor *y,
               pvc_tensor *out);

/* dst[i] = (td)src[i] for n elements. float -> int truncates toward zero, saturates at the
 * target's range and maps NaN to 0; int -> int wraps; anything -> bool is "nonzero"; bool
 * reads as 0/1. src and dst may be the same buffer when the element sizes are equal. */
void pvk_cast(pvc_pool *pool, pv_dtype ts, const void *src, pv_dtype td, void *dst, int64_t n);

#endif
