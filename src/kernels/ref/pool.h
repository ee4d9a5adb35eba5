/* Reference pooling kernels: MaxPool (with optional indices), AveragePool, GlobalAveragePool
 * over 1-3 spatial dims of contiguous [N, C, spatial...] tensors. Prefix pvk_. */
#ifndef PVK_REF_POOL_H
#define PVK_REF_POOL_H

#include "core/core.h"

/* Geometry of one pooling; 1-D and 2-D poolings are given as 3-D with leading extent 1
 * (in = out = kernel = stride = dil = 1, pads 0). */
typedef struct pvk_pool_geom {
    int64_t planes;                 /* N * C */
    int64_t in[3], out[3];
    int64_t kernel[3], stride[3], dil[3];
    int64_t pad_begin[3], pad_end[3];
    bool    count_include_pad;      /* AveragePool */
    int     storage_order;          /* MaxPool indices: 0 row-major, 1 column-major */
} pvk_pool_geom;

/* MaxPool; padding never wins; a NaN in a window gives NaN. indices (may be NULL): flat index of
 * the max in x, counting the plane offset (n * C + c) * prod(in), per the ONNX spec; a window of
 * padding only gives the lowest value and index -1. dtypes: F32 F16 BF16 I8 U8. f32 2-D
 * poolings with dilation 1, no indices and no all-padding window run the vectorized rows of
 * eltwise_simd.h (bitwise the same result); pvk_maxpool_ref is the plain kernel. */
void pvk_maxpool(pvc_pool *pool, const pvk_pool_geom *g, pv_dtype t, const void *x, void *y,
                 int64_t *indices);
void pvk_maxpool_ref(pvc_pool *pool, const pvk_pool_geom *g, pv_dtype t, const void *x, void *y,
                     int64_t *indices);

/* AveragePool, float32. Divisor: the window clipped to the padded extent when
 * count_include_pad, else the number of real elements in it (an empty window gives 0). */
void pvk_avgpool_f32(pvc_pool *pool, const pvk_pool_geom *g, const float *x, float *y);

/* Sum of n floats in double: the plain twin (eight running sums) and the AVX-512 variant
 * (32 lanes: four vectors of 8 doubles); they differ only in the order of double additions
 * (tested within 1e-12 of the sum of |x|). pvk_sum_f64_select: the best one this CPU runs. */
typedef double (*pvk_sum_f64_fn)(const float *x, int64_t n);
double pvk_sum_f64_ref(const float *x, int64_t n);
double pvk_sum_f64_avx512(const float *x, int64_t n);
pvk_sum_f64_fn pvk_sum_f64_select(void);

/* y[p] = mean of x[p * plane_size .. + plane_size), float32 (sums in double). */
void pvk_global_avgpool_f32(pvc_pool *pool, int64_t planes, int64_t plane_size, const float *x,
                            float *y);

#endif
