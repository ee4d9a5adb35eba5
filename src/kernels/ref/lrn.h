/* Local response normalization across channels (ONNX LRN): a plain reference kernel, the only
 * one. Prefix pvk_. */
#ifndef PVK_REF_LRN_H
#define PVK_REF_LRN_H

#include "core/core.h"

/* x, y: [n, c, inner] (y != x). y = x / (bias + alpha / size * sum of x^2 over channels
 * [ch - (size - 1) / 2, ch + ceil((size - 1) / 2)] within [0, c)) ^ beta. Sums in double. */
void pvk_lrn_f32(pvc_pool *pool, const float *x, float *y, int64_t n, int64_t c, int64_t inner, int64_t size,
                 float alpha, float beta, float bias);

#endif
