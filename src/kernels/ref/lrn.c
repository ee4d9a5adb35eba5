/* LRN (see lrn.h): parallel over the n * inner columns, each walked across the channels. */
#include "kernels/ref/lrn.h"

#include <math.h>

typedef struct lrn_ctx {
    const float *x;
    float       *y;
    int64_t      c, inner, size;
    float        alpha, beta, bias;
} lrn_ctx;

static void lrn_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const lrn_ctx *k = ctx;
    int64_t lo = (k->size - 1) / 2, hi = k->size - 1 - lo;
    for (int64_t col = begin; col < end; col++) {
        int64_t b = col / k->inner, i = col % k->inner;
        const float *x = k->x + b * k->c * k->inner + i;
        float *y = k->y + b * k->c * k->inner + i;
        for (int64_t ch = 0; ch < k->c; ch++) {
            int64_t a = ch - lo < 0 ? 0 : ch - lo, e = ch + hi >= k->c ? k->c - 1 : ch + hi;
            double sq = 0.0;
            for (int64_t j = a; j <= e; j++) sq += (double)x[j * k->inner] * x[j * k->inner];
            double den = pow((double)k->bias + (double)k->alpha / (double)k->size * sq, (double)k->beta);
            y[ch * k->inner] = (float)((double)x[ch * k->inner] / den);
        }
    }
}

void pvk_lrn_f32(pvc_pool *pool, const float *x, float *y, int64_t n, int64_t c, int64_t inner, int64_t size,
                 float alpha, float beta, float bias)
{
    lrn_ctx k = { x, y, c, inner, size, alpha, beta, bias };
    pvc_parallel_for(pool, n * inner, 64, lrn_range, &k);
}
