/* Loss kernels for the ONNX training-loss operators read at inference (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss). Plain loops: these are reference kernels and the only ones. Prefix
 * pvk_. */
#ifndef PVK_REF_LOSS_H
#define PVK_REF_LOSS_H

#include "kernels/kernels.h"

typedef enum { PVK_LOSS_NONE, PVK_LOSS_SUM, PVK_LOSS_MEAN } pvk_loss_reduction;

/* Negative log-likelihood of logp [n, c, d] (log-probabilities along the middle axis) at the
 * classes target [n, d] (int64 or int32 values, each in [0, c) or equal to ignore when
 * has_ignore; the caller checks). weight: [c] class weights or NULL (all 1); an ignored target
 * weighs 0. out: [n, d] per-element losses (NONE), or one value: their sum (SUM) or their sum
 * over the sum of the weights taken (MEAN; 0/0 is NaN, as the ONNX reference gives). Sums are
 * accumulated in double. */
void pvk_nll_loss_f32(const float *logp, const void *target, pv_dtype target_dtype, const float *weight,
                      int64_t n, int64_t c, int64_t d, bool has_ignore, int64_t ignore,
                      pvk_loss_reduction red, float *out);

#endif
