/* Reference reduction kernels: Reduce{Sum,Mean,Max,Min}, Arg{Max,Min} and TopK, on contiguous
 * tensors of any numeric dtype (F16/BF16 are computed in float). Prefix pvk_. */
#ifndef PVK_REF_REDUCE_H
#define PVK_REF_REDUCE_H

#include "core/core.h"

typedef enum { PVK_REDUCE_SUM, PVK_REDUCE_MEAN, PVK_REDUCE_MAX, PVK_REDUCE_MIN } pvk_reduce_op;

/* Reduces x (dims[rank], dtype t) over the axes whose bit is set in mask; y holds the kept
 * axes in order. Float sums accumulate in double; integer sums in int64 and wrap to the type;
 * an integer mean truncates toward zero. An empty reduction gives 0 (sum), NaN (float mean),
 * and the lowest/highest value (max/min). dtypes: F32 F16 BF16 I64 I32 I8 U8. */
void pvk_reduce(pvc_pool *pool, pvk_reduce_op op, pv_dtype t, int rank, const int64_t *dims,
                unsigned mask, const void *x, void *y);

/* x viewed as [outer, n, inner] (n > 0); y[outer, inner] gets the index along n of the max
 * (is_max) or min, the first one on ties unless last. */
void pvk_arg_reduce(pvc_pool *pool, bool is_max, bool last, pv_dtype t, int64_t outer, int64_t n,
                    int64_t inner, const void *x, int64_t *y);

/* TopK on x viewed as [outer, n, inner]: the k best (largest, or smallest) along n into
 * vals/idx [outer, k, inner], best first; equal values keep the lower index first. O(n log k)
 * per slice with a bounded heap. ws: pvk_topk_workspace bytes. */
size_t pvk_topk_workspace(int64_t outer, int64_t inner, int64_t k);
void   pvk_topk(pvc_pool *pool, pv_dtype t, int64_t outer, int64_t n, int64_t inner, int64_t k,
                bool largest, const void *x, void *vals, int64_t *idx, void *ws);

#endif
