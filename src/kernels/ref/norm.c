/* Reference normalisation kernels (see norm.h). Sums of a row are kept in double so that long
 * rows lose no accuracy; every element is read before its output is written (in-place safe). */
#include "kernels/ref/norm.h"
#include "kernels/ref/eltwise_simd.h"

enum { SM_BLOCK = 64 };   /* inner positions handled together when the axis is not innermost */

typedef struct sm_ctx {
    const float *x;
    float *y;
    int64_t n, inner, nblocks;
    bool log;
} sm_ctx;

static void softmax_row(const sm_ctx *c, const float *x, float *y)
{
    float mx = x[0];
    for (int64_t i = 1; i < c->n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    if (c->log) {
        for (int64_t i = 0; i < c->n; i++) sum += expf(x[i] - mx);
        float ls = (float)log(sum);
        for (int64_t i = 0; i < c->n; i++) y[i] = x[i] - mx - ls;
    } else {
        for (int64_t i = 0; i < c->n; i++) {
            float e = expf(x[i] - mx);
            y[i] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < c->n; i++) y[i] *= inv;
    }
}

/* Softmax along a strided axis for inner positions [i0, i0 + w): the w positions are walked
 * together so each pass reads contiguous runs. */
static void softmax_block(const sm_ctx *c, const float *x, float *y, int64_t w)
{
    float mx[SM_BLOCK];
    double sum[SM_BLOCK];
    for (int64_t i = 0; i < w; i++) { mx[i] = x[i]; sum[i] = 0.0; }
    for (int64_t k = 1; k < c->n; k++) {
        const float *xk = x + k * c->inner;
        for (int64_t i = 0; i < w; i++) mx[i] = xk[i] > mx[i] ? xk[i] : mx[i];
    }
    for (int64_t k = 0; k < c->n; k++) {
        const float *xk = x + k * c->inner;
        float *yk = y + k * c->inner;
        for (int64_t i = 0; i < w; i++) {
            float e = expf(xk[i] - mx[i]);
            if (!c->log) yk[i] = e;
            sum[i] += e;
        }
    }
    float f[SM_BLOCK];
    for (int64_t i = 0; i < w; i++) f[i] = c->log ? (float)log(sum[i]) : (float)(1.0 / sum[i]);
    for (int64_t k = 0; k < c->n; k++) {
        const float *xk = x + k * c->inner;
        float *yk = y + k * c->inner;
        if (c->log) for (int64_t i = 0; i < w; i++) yk[i] = xk[i] - mx[i] - f[i];
        else        for (int64_t i = 0; i < w; i++) yk[i] *= f[i];
    }
}

static void softmax_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const sm_ctx *c = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / c->nblocks, i0 = (t % c->nblocks) * SM_BLOCK;
        int64_t off = o * c->n * c->inner + i0;
        if (c->inner == 1) softmax_row(c, c->x + off, c->y + off);
        else softmax_block(c, c->x + off, c->y + off, PVC_MIN(SM_BLOCK, c->inner - i0));
    }
}

void pvk_softmax_f32_ref(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, bool log)
{
    if (outer <= 0 || n <= 0 || inner <= 0) return;
    sm_ctx c = { x, y, n, inner, (inner + SM_BLOCK - 1) / SM_BLOCK, log };
    int64_t per = n * PVC_MIN(inner, SM_BLOCK);
    pvc_parallel_for(pool, outer * c.nblocks, PVC_MAX(1, 8192 / per), softmax_range, &c);
}

typedef struct ln_ctx {
    const float *x, *scale, *bias;
    float *y, *mean, *invstd;
    int64_t len;
    float eps;
} ln_ctx;

static void layernorm_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const ln_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        const float *x = c->x + r * c->len;
        float *y = c->y + r * c->len;
        double s = 0.0, v = 0.0;
        for (int64_t i = 0; i < c->len; i++) s += x[i];
        double mean = s / (double)c->len;
        for (int64_t i = 0; i < c->len; i++) {
            double d = x[i] - mean;
            v += d * d;
        }
        float fm = (float)mean, inv = (float)(1.0 / sqrt(v / (double)c->len + (double)c->eps));
        if (c->mean) c->mean[r] = fm;
        if (c->invstd) c->invstd[r] = inv;
        if (c->bias) for (int64_t i = 0; i < c->len; i++) y[i] = (x[i] - fm) * inv * c->scale[i] + c->bias[i];
        else         for (int64_t i = 0; i < c->len; i++) y[i] = (x[i] - fm) * inv * c->scale[i];
    }
}

void pvk_layernorm_f32_ref(pvc_pool *pool, const float *x, const float *scale, const float *bias, float *y,
                           float *mean_out, float *invstd_out, int64_t rows, int64_t len, float eps)
{
    ln_ctx c = { x, scale, bias, y, mean_out, invstd_out, len, eps };
    pvc_parallel_for(pool, rows, PVC_MAX(1, 8192 / PVC_MAX(len, 1)), layernorm_rows, &c);
}

/* ---- vectorized rows (eltwise_simd.h) ------------------------------------------------------- */
typedef struct vrow_ctx {
    const pvk_vec_variant *v;
    const float *x, *scale, *bias;
    float *y, *mean, *invstd;
    int64_t len;
    float eps;
    bool log;
} vrow_ctx;

static void vln_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const vrow_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++)
        c->v->layernorm_row(c->x + r * c->len, c->scale, c->bias, c->y + r * c->len, c->len, c->eps,
                            c->mean ? c->mean + r : NULL, c->invstd ? c->invstd + r : NULL);
}

void pvk_layernorm_f32(pvc_pool *pool, const float *x, const float *scale, const float *bias, float *y,
                       float *mean_out, float *invstd_out, int64_t rows, int64_t len, float eps)
{
    if (len <= 0) {   /* empty rows: the reference's NaN statistics */
        pvk_layernorm_f32_ref(pool, x, scale, bias, y, mean_out, invstd_out, rows, len, eps);
        return;
    }
    if (rows <= 0) return;
    vrow_ctx c = { pvk_vec_selected(), x, scale, bias, y, mean_out, invstd_out, len, eps, false };
    pvc_parallel_for(pool, rows, PVC_MAX(1, 8192 / len), vln_rows, &c);
}

static void vsm_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const vrow_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) c->v->softmax_row(c->x + r * c->len, c->y + r * c->len, c->len, c->log);
}

void pvk_softmax_f32(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, bool log)
{
    if (outer <= 0 || n <= 0 || inner <= 0) return;
    if (inner != 1) {   /* a strided axis: the blocked reference walks it in contiguous runs */
        pvk_softmax_f32_ref(pool, x, y, outer, n, inner, log);
        return;
    }
    vrow_ctx c = { pvk_vec_selected(), x, NULL, NULL, y, NULL, NULL, n, 0.0f, log };
    pvc_parallel_for(pool, outer, PVC_MAX(1, 8192 / n), vsm_rows, &c);
}

typedef struct bn_ctx {
    const float *x, *scale, *bias, *mean, *var;
    float *y;
    int64_t channels, len;
    float eps;
} bn_ctx;

static void batchnorm_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const bn_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t ch = r % c->channels;
        float inv = 1.0f / sqrtf(c->var[ch] + c->eps), a = c->scale[ch] * inv, m = c->mean[ch], b = c->bias[ch];
        const float *x = c->x + r * c->len;
        float *y = c->y + r * c->len;
        for (int64_t i = 0; i < c->len; i++) y[i] = (x[i] - m) * a + b;
    }
}

void pvk_batchnorm_f32(pvc_pool *pool, const float *x, const float *scale, const float *bias,
                       const float *mean, const float *var, float eps, float *y,
                       int64_t batch, int64_t channels, int64_t len)
{
    bn_ctx c = { x, scale, bias, mean, var, y, channels, len, eps };
    pvc_parallel_for(pool, batch * channels, PVC_MAX(1, 16384 / PVC_MAX(len, 1)), batchnorm_rows, &c);
}
