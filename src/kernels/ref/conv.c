/* Reference convolution helpers (see conv.h): im2col, col2im, direct depthwise convolution and
 * the bias + activation epilogue. Index ranges that stay inside the image are computed up front
 * so the inner loops are plain copies / multiply-adds without per-element bounds tests. */
#include "kernels/ref/conv.h"

#include <string.h>

/* ceil(a / b) for b > 0 and any sign of a. */
static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* For taps ix = ix0 + t * s, t in [0, n): the sub-range [*lo, *hi) with 0 <= ix < size. */
static void valid_range(int64_t ix0, int64_t s, int64_t size, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = ceil_div(-ix0, s), b = ceil_div(size - ix0, s);
    a = PVC_MAX(a, 0);
    b = PVC_MIN(b, n);
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* Iterator over output pixels [p0, p0+np) for one kernel tap, in runs along the innermost
 * axis. Each run covers columns [off, off+run) of the col row; image elements for run positions
 * t in [lo, hi) are img[src + t * stride_x], the rest fall into the padding. Shared by im2col
 * (copy out) and col2im (add back) so both walk exactly the same positions. */
typedef struct tap_runs {
    const pvk_conv_geom *g;
    int64_t kz, ky, kx;
    int64_t p, end, oz, oy, ox;
    int64_t off, run, lo, hi, src;   /* the current run */
} tap_runs;

static void runs_begin(tap_runs *it, const pvk_conv_geom *g, int64_t kk, int64_t p0, int64_t np)
{
    it->g = g;
    it->kx = kk % g->k[2];
    it->ky = (kk / g->k[2]) % g->k[1];
    it->kz = kk / (g->k[2] * g->k[1]);
    it->p = p0;
    it->end = p0 + np;
    it->oz = p0 / (g->out[1] * g->out[2]);
    it->oy = (p0 / g->out[2]) % g->out[1];
    it->ox = p0 % g->out[2];
    it->off = 0;
    it->run = 0;
}

static bool runs_next(tap_runs *it)
{
    const pvk_conv_geom *g = it->g;
    if (it->run) {   /* step past the previous run to the start of the next output row */
        it->p += it->run;
        it->off += it->run;
        it->ox = 0;
        if (++it->oy == g->out[1]) { it->oy = 0; it->oz++; }
    }
    if (it->p >= it->end) return false;
    it->run = PVC_MIN(g->out[2] - it->ox, it->end - it->p);
    int64_t iz = it->oz * g->stride[0] - g->pad[0] + it->kz * g->dil[0];
    int64_t iy = it->oy * g->stride[1] - g->pad[1] + it->ky * g->dil[1];
    int64_t ix0 = it->ox * g->stride[2] - g->pad[2] + it->kx * g->dil[2];
    it->lo = it->hi = 0;
    it->src = 0;
    if (iz >= 0 && iz < g->in[0] && iy >= 0 && iy < g->in[1]) {
        valid_range(ix0, g->stride[2], g->in[2], it->run, &it->lo, &it->hi);
        it->src = (iz * g->in[1] + iy) * g->in[2] + ix0;
    }
    return true;
}

/* Work of im2col (src: images, dst: col) and col2im (src: col, dst: images) over the col
 * columns [p0, p0 + np), ks = kernel taps. */
typedef struct cols_ctx {
    const pvk_conv_geom *g;
    const float *src;
    float *dst;
    int64_t p0, np, ks;
} cols_ctx;

static void im2col_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const cols_ctx *c = ctx;
    int64_t sx = c->g->stride[2];
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        const float *img = c->src + (r / c->ks) * pvk_conv_insize(c->g);
        tap_runs it;
        runs_begin(&it, c->g, r % c->ks, c->p0, c->np);
        while (runs_next(&it)) {
            float *d = c->dst + r * c->np + it.off;
            for (int64_t t = 0; t < it.lo; t++) d[t] = 0.0f;
            if (it.hi > it.lo) {
                if (sx == 1)
                    memcpy(d + it.lo, img + it.src + it.lo, (size_t)(it.hi - it.lo) * sizeof(float));
                else
                    for (int64_t t = it.lo; t < it.hi; t++) d[t] = img[it.src + t * sx];
            }
            for (int64_t t = PVC_MAX(it.hi, it.lo); t < it.run; t++) d[t] = 0.0f;
        }
    }
}

void pvk_im2col_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *x, int64_t channels,
                    int64_t p0, int64_t np, float *col)
{
    cols_ctx c = { g, x, col, p0, np, pvk_conv_ksize(g) };
    pvc_parallel_for(pool, channels * c.ks, PVC_MAX(1, 8192 / PVC_MAX(np, 1)), im2col_rows, &c);
}

/* One channel at a time: all of a channel's rows add into that channel's image only, so
 * channels are independent and the summation order is fixed. */
static void col2im_channels(void *ctx, int64_t begin, int64_t end, int tid)
{
    const cols_ctx *c = ctx;
    int64_t sx = c->g->stride[2];
    (void)tid;
    for (int64_t ch = begin; ch < end; ch++) {
        float *img = c->dst + ch * pvk_conv_insize(c->g);
        for (int64_t kk = 0; kk < c->ks; kk++) {
            const float *srow = c->src + (ch * c->ks + kk) * c->np;
            tap_runs it;
            runs_begin(&it, c->g, kk, c->p0, c->np);
            while (runs_next(&it)) {
                if (it.hi <= it.lo) continue;
                const float *s = srow + it.off;
                for (int64_t t = it.lo; t < it.hi; t++) img[it.src + t * sx] += s[t];
            }
        }
    }
}

void pvk_col2im_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *col, int64_t channels,
                    int64_t p0, int64_t np, float *y)
{
    cols_ctx c = { g, col, y, p0, np, pvk_conv_ksize(g) };
    pvc_parallel_for(pool, channels, 1, col2im_channels, &c);
}

typedef struct dw_ctx {
    const pvk_conv_geom *g;
    const float *x, *w;
    float *y;
    int64_t in_ch, mult;
} dw_ctx;

static void dw_images(void *ctx, int64_t begin, int64_t end, int tid)
{
    const dw_ctx *c = ctx;
    const pvk_conv_geom *g = c->g;
    int64_t ks = pvk_conv_ksize(g), osz = pvk_conv_outsize(g), isz = pvk_conv_insize(g);
    int64_t sx = g->stride[2];
    (void)tid;
    for (int64_t im = begin; im < end; im++) {   /* im = n * out_ch + oc */
        int64_t oc = im % (c->in_ch * c->mult), n = im / (c->in_ch * c->mult);
        const float *x = c->x + (n * c->in_ch + oc / c->mult) * isz;
        const float *w = c->w + oc * ks;
        float *y = c->y + im * osz;
        memset(y, 0, (size_t)osz * sizeof(float));
        for (int64_t kk = 0; kk < ks; kk++) {
            int64_t kx = kk % g->k[2], ky = (kk / g->k[2]) % g->k[1], kz = kk / (g->k[2] * g->k[1]);
            float wv = w[kk];
            for (int64_t oz = 0; oz < g->out[0]; oz++) {
                int64_t iz = oz * g->stride[0] - g->pad[0] + kz * g->dil[0];
                if (iz < 0 || iz >= g->in[0]) continue;
                for (int64_t oy = 0; oy < g->out[1]; oy++) {
                    int64_t iy = oy * g->stride[1] - g->pad[1] + ky * g->dil[1];
                    if (iy < 0 || iy >= g->in[1]) continue;
                    int64_t ix0 = -g->pad[2] + kx * g->dil[2], lo, hi;
                    valid_range(ix0, sx, g->in[2], g->out[2], &lo, &hi);
                    const float *src = x + (iz * g->in[1] + iy) * g->in[2];
                    float *dst = y + (oz * g->out[1] + oy) * g->out[2];
                    if (sx == 1)
                        for (int64_t t = lo; t < hi; t++) dst[t] += wv * src[ix0 + t];
                    else
                        for (int64_t t = lo; t < hi; t++) dst[t] += wv * src[ix0 + t * sx];
                }
            }
        }
    }
}

void pvk_conv_depthwise_f32(pvc_pool *pool, const pvk_conv_geom *g, const float *x, const float *w,
                            int64_t batch, int64_t in_ch, int64_t mult, float *y)
{
    dw_ctx c = { g, x, w, y, in_ch, mult };
    pvc_parallel_for(pool, batch * in_ch * mult, 1, dw_images, &c);
}

typedef struct bias_act_ctx {
    float *y;
    int64_t channels, len;
    const float *bias;
    const pvg_act *act;
} bias_act_ctx;

static void bias_act_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const bias_act_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        float *y = c->y + r * c->len;
        if (c->bias) {
            float b = c->bias[r % c->channels];
            for (int64_t i = 0; i < c->len; i++) y[i] += b;
        }
        if (c->act) pvk_act_apply(c->act, y, c->len);
    }
}

void pvk_bias_act_f32(pvc_pool *pool, float *y, int64_t batch, int64_t channels, int64_t len,
                      const float *bias, const pvg_act *act)
{
    if (act && act->kind == PVG_ACT_NONE) act = NULL;
    if (!bias && !act) return;
    bias_act_ctx c = { y, channels, len, bias, act };
    pvc_parallel_for(pool, batch * channels, PVC_MAX(1, 16384 / PVC_MAX(len, 1)), bias_act_rows, &c);
}
