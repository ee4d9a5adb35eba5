/* Normalisation kernels: softmax / log-softmax over one axis, layer normalisation over trailing
 * elements, inference batch normalisation. All allow y == x (in place). pvk_softmax_f32 (last
 * axis) and pvk_layernorm_f32 run the vectorized rows of eltwise_simd.h; the _ref versions are
 * the plain kernels (sums in double), kept as the tests' oracle. */
#ifndef PVK_REF_NORM_H
#define PVK_REF_NORM_H

#include "kernels/kernels.h"

/* x, y: [outer, n, inner]; (log-)softmax along the middle axis, max-subtracted. */
void pvk_softmax_f32(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, bool log);
void pvk_softmax_f32_ref(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n, int64_t inner,
                         bool log);

/* x, y: [rows, len]; per row y = (x - mean) / sqrt(var + eps) * scale + bias (bias may be NULL).
 * mean_out / invstd_out (may be NULL): per-row mean and 1 / sqrt(var + eps). */
void pvk_layernorm_f32(pvc_pool *pool, const float *x, const float *scale, const float *bias, float *y,
                       float *mean_out, float *invstd_out, int64_t rows, int64_t len, float eps);
void pvk_layernorm_f32_ref(pvc_pool *pool, const float *x, const float *scale, const float *bias, float *y,
                           float *mean_out, float *invstd_out, int64_t rows, int64_t len, float eps);

/* x, y: [batch, channels, len]; y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]. */
void pvk_batchnorm_f32(pvc_pool *pool, const float *x, const float *scale, const float *bias,
                       const float *mean, const float *var, float eps, float *y,
                       int64_t batch, int64_t channels, int64_t len);

#endif
