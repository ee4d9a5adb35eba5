/* Cubic Resize (see resample.h): separable, one pass per axis from the first to the last, each
 * pass a plain loop over [outer, n, inner] views. Coordinates in float32 as ONNX Runtime and
 * the linear path; weights and sums in double. */
#include "kernels/ref/resample.h"

#include <math.h>

/* Keys' cubic convolution weights for the taps at -1, 0, 1, 2 around fraction t. */
static void cubic_weights(double t, double a, double w[4])
{
    double d[4] = { 1.0 + t, t, 1.0 - t, 2.0 - t };
    for (int k = 0; k < 4; k++) {
        double x = d[k];
        w[k] = x <= 1.0 ? ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
                        : ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    }
}

static size_t max_intermediate(const pvk_resize_params *p)
{
    size_t best = 0;
    for (int a = 0; a < p->rank - 1; a++) {   /* after pass a: out[0..a], in[a+1..] */
        size_t n = 1;
        for (int k = 0; k < p->rank; k++) n *= (size_t)(k <= a ? p->out[k] : p->in[k]);
        if (n > best) best = n;
    }
    return best;
}

size_t pvk_resize_cubic_workspace(const pvk_resize_params *p)
{
    return 2 * ((max_intermediate(p) * sizeof(float) + 63) & ~(size_t)63);
}

/* One axis: src [outer, n_in, inner] -> dst [outer, n_out, inner]. */
static void cubic_axis(const pvk_resize_params *p, int a, int64_t outer, int64_t inner, const float *src, float *dst)
{
    int64_t n_in = p->in[a], n_out = p->out[a];
    for (int64_t j = 0; j < n_out; j++) {
        float x = pvk_resize_source_coord(p->coord, (float)j, p->scale[a], n_in, n_out);
        double f = floor((double)x), w[4];
        cubic_weights((double)x - f, p->cubic_a, w);
        int64_t idx[4];
        double sum = 0.0;
        for (int k = 0; k < 4; k++) {
            int64_t i = (int64_t)f - 1 + k;
            if (p->exclude_outside && (i < 0 || i >= n_in)) w[k] = 0.0;
            idx[k] = i < 0 ? 0 : i >= n_in ? n_in - 1 : i;
            sum += w[k];
        }
        if (p->exclude_outside && sum != 0.0)
            for (int k = 0; k < 4; k++) w[k] /= sum;
        for (int64_t o = 0; o < outer; o++) {
            const float *s = src + o * n_in * inner;
            float *d = dst + (o * n_out + j) * inner;
            for (int64_t i = 0; i < inner; i++) {
                double v = 0.0;
                for (int k = 0; k < 4; k++) v += w[k] * (double)s[idx[k] * inner + i];
                d[i] = (float)v;
            }
        }
    }
}

void pvk_resize_cubic_f32(const pvk_resize_params *p, const float *x, float *y, void *ws)
{
    size_t half = (max_intermediate(p) * sizeof(float) + 63) & ~(size_t)63;
    float *buf[2] = { ws, (float *)((char *)ws + half) };
    const float *src = x;
    for (int a = 0; a < p->rank; a++) {
        int64_t outer = 1, inner = 1;
        for (int k = 0; k < a; k++) outer *= p->out[k];
        for (int k = a + 1; k < p->rank; k++) inner *= p->in[k];
        float *dst = a == p->rank - 1 ? y : buf[a % 2];
        if (outer * inner == 0 || p->out[a] == 0) { src = dst; continue; }
        cubic_axis(p, a, outer, inner, src, dst);
        src = dst;
    }
}
