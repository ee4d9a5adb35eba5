/* Loss kernels (see loss.h). */
#include "kernels/ref/loss.h"

void pvk_nll_loss_f32(const float *logp, const void *target, pv_dtype target_dtype, const float *weight,
                      int64_t n, int64_t c, int64_t d, bool has_ignore, int64_t ignore,
                      pvk_loss_reduction red, float *out)
{
    double sum = 0.0, wsum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < d; j++) {
            int64_t t = pvc_get_i64(target, target_dtype, i * d + j);
            float w = 0.0f, l = 0.0f;
            if (!has_ignore || t != ignore) {
                w = weight ? weight[t] : 1.0f;
                l = -logp[(i * c + t) * d + j] * w;
            }
            if (red == PVK_LOSS_NONE) out[i * d + j] = l;
            sum += l;
            wsum += w;
        }
    }
    if (red == PVK_LOSS_SUM) out[0] = (float)sum;
    else if (red == PVK_LOSS_MEAN) out[0] = (float)(sum / wsum);
}
