/* Reference Resize and GridSample (see resample.h).
 *
 * Resize is separable: each axis gets a table (two source indices and the weight of the
 * second) for every output coordinate. An output row (all axes but the last) is a weighted sum
 * of at most 2^(rank-1) source rows ("corners"), each interpolated along the last axis with
 * that axis's table; a plain 2-D bilinear upsample is two corners per row. */
#include "kernels/ref/resample.h"
#include "kernels/ref/eltwise_simd.h"

#include <math.h>
#include <string.h>

/* ---- Resize ------------------------------------------------------------------------------- */

static float source_coord(pvk_coord_mode m, float xr, float scale, int64_t in, int64_t out)
{
    switch (m) {
    case PVK_COORD_HALF_PIXEL: return (xr + 0.5f) / scale - 0.5f;
    case PVK_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (xr + 0.5f) / scale - 0.5f : 0.0f;
    case PVK_COORD_ALIGN_CORNERS: return out == 1 ? 0.0f : xr * (float)(in - 1) / (float)(out - 1);
    case PVK_COORD_ASYMMETRIC: return xr / scale;
    case PVK_COORD_TF_HALF_PIXEL_FOR_NN: return (xr + 0.5f) / scale;
    }
    return 0.0f;
}

static int64_t nearest_index(pvk_nearest_mode m, float x, int64_t in)
{
    float r;
    switch (m) {
    case PVK_NEAREST_ROUND_PREFER_FLOOR:
        r = x == floorf(x) + 0.5f ? floorf(x) : roundf(x);
        break;
    case PVK_NEAREST_ROUND_PREFER_CEIL: r = x == floorf(x) + 0.5f ? ceilf(x) : roundf(x); break;
    case PVK_NEAREST_FLOOR: r = floorf(x); break;
    default: r = ceilf(x); break;
    }
    if (!(r > 0.0f)) return 0;                       /* also NaN */
    return r >= (float)(in - 1) ? in - 1 : (int64_t)r;
}

static int64_t table_len(const pvk_resize_params *p)
{
    int64_t n = 0;
    for (int a = 0; a < p->rank; a++) n += p->out[a];
    return n;
}

size_t pvk_resize_workspace(const pvk_resize_params *p)
{
    return (size_t)table_len(p) * (2 * sizeof(int64_t) + sizeof(float));
}

typedef struct resize_ctx {
    const pvk_resize_params *p;
    const char    *x;
    char          *y;
    size_t         es;
    const int64_t *i0[PV_MAX_RANK], *i1[PV_MAX_RANK];
    const float   *w[PV_MAX_RANK];
    int64_t        stride[PV_MAX_RANK];   /* input element strides */
} resize_ctx;

#define MAX_CORNERS (1 << (PV_MAX_RANK - 1))

static void gather_row(size_t es, const char *src, const int64_t *idx, int64_t n, char *dst)
{
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) dst[i] = src[idx[i]]; break;
    case 2: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = ((const uint16_t *)src)[idx[i]]; break;
    case 4: for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = ((const uint32_t *)src)[idx[i]]; break;
    default: for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = ((const uint64_t *)src)[idx[i]]; break;
    }
}

/* A 2-D bilinear output row blends two source rows, each interpolated along the last axis;
 * consecutive output rows mostly share their source rows (an upsample reads each one for
 * about scale output rows), so a task keeps the last two interpolated rows: the gathers run
 * once per source row, and each output row is one vector blend. Same arithmetic per element
 * as the uncached expression (f0 * h0 + f1 * h1, h = s[i0] * (1 - w) + s[i1] * w). */
#define HROW_MAX 1024
typedef struct hcache { int64_t key[2]; int next; float row[2][HROW_MAX], tmp[HROW_MAX]; } hcache;

static const float *hrow(hcache *hc, const float *x, int64_t off, const int64_t *i0, const int64_t *i1,
                         const float *w, int64_t n)
{
    for (int k = 0; k < 2; k++) if (hc->key[k] == off) return hc->row[k];
    int k = hc->next;
    hc->next ^= 1;
    hc->key[k] = off;
    const float *s = x + off;
    float *h = hc->row[k];
    for (int64_t i = 0; i < n; i++) h[i] = s[i0[i]] * (1.0f - w[i]) + s[i1[i]] * w[i];
    return h;
}

/* y = f0 h0 + f1 h1 through the vector rows (eltwise_simd.h: the -O2 build does not vectorize
 * a plain loop of unknown length); the same two products and one sum per element as the
 * scalar expression, so the result is identical. t: n floats of scratch. */
static void blend2(float *y, const float *h0, const float *h1, float f0, float f1, int64_t n, float *t)
{
    pvk_vbin_fn bin = pvk_vec_selected()->binary;
    bin(PVK_VB_MUL, h0, 1, &f0, 0, y, n, NULL);
    bin(PVK_VB_MUL, h1, 1, &f1, 0, t, n, NULL);
    bin(PVK_VB_ADD, y, 1, t, 1, y, n, NULL);
}

static void resize_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const resize_ctx *c = cv;
    const pvk_resize_params *p = c->p;
    int r = p->rank, L = r - 1;
    int64_t W = p->out[L];
    const int64_t *li0 = c->i0[L], *li1 = c->i1[L];
    const float *lw = c->w[L];
    bool linear = p->mode == PVK_RESIZE_LINEAR;
    int64_t co[PV_MAX_RANK] = { 0 }, rem = b;
    for (int a = L - 1; a >= 0; a--) { co[a] = rem % p->out[a]; rem /= p->out[a]; }
    int64_t off[MAX_CORNERS];
    float wt[MAX_CORNERS];
    hcache hc;
    hc.key[0] = hc.key[1] = -1;
    hc.next = 0;
    for (int64_t row = b; row < e; row++) {
        int nc = 1;
        off[0] = 0;
        wt[0] = 1.0f;
        for (int a = 0; a < L; a++) {
            int64_t j = co[a], s0 = c->i0[a][j] * c->stride[a], s1 = c->i1[a][j] * c->stride[a];
            float w = c->w[a][j];
            if (!linear || s0 == s1 || w == 0.0f) {
                for (int k = 0; k < nc; k++) off[k] += s0;
                continue;
            }
            for (int k = 0; k < nc; k++) {
                off[nc + k] = off[k] + s1;
                wt[nc + k] = wt[k] * w;
                off[k] += s0;
                wt[k] *= 1.0f - w;
            }
            nc *= 2;
        }
        if (!linear) {
            gather_row(c->es, c->x + (size_t)off[0] * c->es, li0, W, c->y + (size_t)(row * W) * c->es);
        } else {
            float *y = (float *)c->y + row * W;
            const float *s0 = (const float *)c->x + off[0];
            if (nc == 1) {                  /* only the last axis interpolates here */
                for (int64_t i = 0; i < W; i++) y[i] = s0[li0[i]] * (1.0f - lw[i]) + s0[li1[i]] * lw[i];
            } else if (nc == 2 && W <= HROW_MAX) {   /* 2-D bilinear: cached horizontal rows */
                const float *h0 = hrow(&hc, (const float *)c->x, off[0], li0, li1, lw, W);
                const float *h1 = hrow(&hc, (const float *)c->x, off[1], li0, li1, lw, W);
                blend2(y, h0, h1, wt[0], wt[1], W, hc.tmp);
            } else if (nc == 2) {           /* the 2-D bilinear case, wide rows */
                const float *s1 = (const float *)c->x + off[1];
                float f0 = wt[0], f1 = wt[1];
                for (int64_t i = 0; i < W; i++) {
                    float u = 1.0f - lw[i], v = lw[i];
                    y[i] = f0 * (s0[li0[i]] * u + s0[li1[i]] * v) + f1 * (s1[li0[i]] * u + s1[li1[i]] * v);
                }
            } else {
                for (int k = 0; k < nc; k++) {
                    const float *s = (const float *)c->x + off[k];
                    float f = wt[k];
                    for (int64_t i = 0; i < W; i++) {
                        float v = f * (s[li0[i]] * (1.0f - lw[i]) + s[li1[i]] * lw[i]);
                        y[i] = k ? y[i] + v : v;
                    }
                }
            }
        }
        for (int a = L - 1; a >= 0; a--) {
            if (++co[a] < p->out[a]) break;
            co[a] = 0;
        }
    }
}

void pvk_resize(pvc_pool *pool, const pvk_resize_params *p, pv_dtype t, const void *x, void *y,
                void *ws)
{
    if (p->rank < 1) return;
    int64_t n = 1;
    for (int a = 0; a < p->rank; a++) n *= p->out[a];
    if (n == 0) return;
    if (p->mode == PVK_RESIZE_LINEAR && t != PV_F32) return;
    resize_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = x;
    c.y = y;
    c.es = pv_dtype_size(t);
    int64_t len = table_len(p), cum = 0, s = 1;
    int64_t *i0 = ws, *i1 = i0 + len;
    float *w = (float *)(i1 + len);
    for (int a = p->rank - 1; a >= 0; a--) { c.stride[a] = s; s *= p->in[a]; }
    for (int a = 0; a < p->rank; a++) {
        for (int64_t j = 0; j < p->out[a]; j++) {
            float sx = source_coord(p->coord, (float)j, p->scale[a], p->in[a], p->out[a]);
            if (p->mode == PVK_RESIZE_NEAREST) {
                i0[cum + j] = i1[cum + j] = nearest_index(p->nearest, sx, p->in[a]);
                w[cum + j] = 0.0f;
                continue;
            }
            float cx = sx > 0.0f ? sx : 0.0f;                 /* NaN -> 0 too */
            if (cx > (float)(p->in[a] - 1)) cx = (float)(p->in[a] - 1);
            int64_t k0 = (int64_t)cx;
            i0[cum + j] = k0;
            i1[cum + j] = PVC_MIN(k0 + 1, p->in[a] - 1);
            w[cum + j] = cx - (float)k0;
        }
        c.i0[a] = i0 + cum;
        c.i1[a] = i1 + cum;
        c.w[a] = w + cum;
        cum += p->out[a];
    }
    int64_t rows = n / p->out[p->rank - 1];
    pvc_parallel_for(pool, rows, PVC_MAX(1, 8192 / p->out[p->rank - 1]), resize_task, &c);
}

float pvk_resize_source_coord(pvk_coord_mode m, float xr, float scale, int64_t in, int64_t out)
{
    return source_coord(m, xr, scale, in, out);
}

/* ---- GridSample --------------------------------------------------------------------------- */

/* Folds x back into [lo, hi] by repeated reflection at the borders. */
static float reflect(float x, float lo, float hi)
{
    float range = hi - lo;
    if (!(range > 0.0f)) return lo;
    if (x < lo) {
        float d = lo - x;
        int64_t n = (int64_t)(d / range);
        float r = d - (float)n * range;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        float d = x - hi;
        int64_t n = (int64_t)(d / range);
        float r = d - (float)n * range;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Per output pixel of one batch item: up to four source offsets in the plane (-1 = a zero
 * from padding) and their weights. Computed once, applied to every channel. */
typedef struct gs_tap { int64_t o[4]; float w[4]; } gs_tap;

size_t pvk_grid_sample_workspace(const pvk_grid_sample_params *p)
{
    return (size_t)(p->ho * p->wo) * sizeof(gs_tap);
}

typedef struct gs_ctx {
    const pvk_grid_sample_params *p;
    const float *x, *grid;
    float       *y;
    gs_tap      *plan;
    int64_t      n, npix, chunk;
    float        lo_x, hi_x, lo_y, hi_y;    /* the image's extent in pixel coordinates */
} gs_ctx;

/* Offset of source pixel (iy, ix) after padding; -1 when it reads as zero. */
static int64_t pixel_offset(const gs_ctx *c, int64_t iy, int64_t ix)
{
    const pvk_grid_sample_params *p = c->p;
    switch (p->padding) {
    case PVK_GS_ZEROS:
        if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) return -1;
        break;
    case PVK_GS_BORDER:
        iy = PVC_MAX(0, PVC_MIN(iy, p->h - 1));
        ix = PVC_MAX(0, PVC_MIN(ix, p->w - 1));
        break;
    case PVK_GS_REFLECTION:
        iy = (int64_t)reflect((float)iy, c->lo_y, c->hi_y);
        ix = (int64_t)reflect((float)ix, c->lo_x, c->hi_x);
        iy = PVC_MAX(0, PVC_MIN(iy, p->h - 1));
        ix = PVC_MAX(0, PVC_MIN(ix, p->w - 1));
        break;
    }
    return iy * p->w + ix;
}

static float denormalize(float v, int64_t len, bool align)
{
    return align ? (v + 1.0f) / 2.0f * (float)(len - 1) : ((v + 1.0f) * (float)len - 1.0f) / 2.0f;
}

static void gs_plan_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const gs_ctx *c = cv;
    const pvk_grid_sample_params *p = c->p;
    const float *g = c->grid + c->n * c->npix * 2;
    for (int64_t i = b; i < e; i++) {
        gs_tap *t = &c->plan[i];
        for (int k = 0; k < 4; k++) { t->o[k] = -1; t->w[k] = 0.0f; }
        float fx = denormalize(g[2 * i], p->w, p->align_corners);
        float fy = denormalize(g[2 * i + 1], p->h, p->align_corners);
        if (fx != fx || fy != fy) continue;                  /* NaN: samples nothing (zero) */
        fx = fminf(fmaxf(fx, -1e15f), 1e15f);                /* keep the integer casts defined */
        fy = fminf(fmaxf(fy, -1e15f), 1e15f);
        if (p->mode == PVK_GS_NEAREST) {
            t->o[0] = pixel_offset(c, (int64_t)nearbyintf(fy), (int64_t)nearbyintf(fx));
            t->w[0] = 1.0f;
            continue;
        }
        float x0f = floorf(fx), y0f = floorf(fy);
        int64_t x0 = (int64_t)x0f, y0 = (int64_t)y0f;
        float dx1 = fx - x0f, dx2 = x0f + 1.0f - fx, dy1 = fy - y0f, dy2 = y0f + 1.0f - fy;
        t->o[0] = pixel_offset(c, y0, x0);
        t->o[1] = pixel_offset(c, y0, x0 + 1);
        t->o[2] = pixel_offset(c, y0 + 1, x0);
        t->o[3] = pixel_offset(c, y0 + 1, x0 + 1);
        t->w[0] = dy2 * dx2;
        t->w[1] = dy2 * dx1;
        t->w[2] = dy1 * dx2;
        t->w[3] = dy1 * dx1;
    }
}

static void gs_apply_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const gs_ctx *c = cv;
    const pvk_grid_sample_params *p = c->p;
    int64_t nchunk = (c->npix + c->chunk - 1) / c->chunk;
    for (int64_t t = b; t < e; t++) {
        int64_t ch = t / nchunk, i0 = (t % nchunk) * c->chunk, i1 = PVC_MIN(c->npix, i0 + c->chunk);
        const float *plane = c->x + (c->n * p->c + ch) * p->h * p->w;
        float *y = c->y + (c->n * p->c + ch) * c->npix;
        for (int64_t i = i0; i < i1; i++) {
            const gs_tap *tp = &c->plan[i];
            float v = 0.0f;
            for (int k = 0; k < 4; k++)
                if (tp->o[k] >= 0) v += tp->w[k] * plane[tp->o[k]];
            y[i] = v;
        }
    }
}

/* Cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 around fraction t. */
static void gs_cubic_weights(float t, float w[4])
{
    const float a = -0.75f;
    float d[4] = { t + 1.0f, t, 1.0f - t, 2.0f - t };
    for (int k = 0; k < 4; k++) {
        float v = d[k];
        w[k] = v <= 1.0f ? ((a + 2.0f) * v - (a + 3.0f)) * v * v + 1.0f : ((a * v - 5.0f * a) * v + 8.0f * a) * v - 4.0f * a;
    }
}

/* Bicubic: a plain loop per pixel (16 taps), all channels, batch item c->n. */
static void gs_bicubic(const gs_ctx *c)
{
    const pvk_grid_sample_params *p = c->p;
    const float *g = c->grid + c->n * c->npix * 2;
    for (int64_t i = 0; i < c->npix; i++) {
        float fx = denormalize(g[2 * i], p->w, p->align_corners);
        float fy = denormalize(g[2 * i + 1], p->h, p->align_corners);
        int64_t o[4][4];
        float wx[4], wy[4];
        bool nan = fx != fx || fy != fy;
        if (!nan) {
            fx = fminf(fmaxf(fx, -1e15f), 1e15f);
            fy = fminf(fmaxf(fy, -1e15f), 1e15f);
            float x0 = floorf(fx) - 1.0f, y0 = floorf(fy) - 1.0f;
            gs_cubic_weights(fx - x0 - 1.0f, wx);
            gs_cubic_weights(fy - y0 - 1.0f, wy);
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < 4; w++) o[h][w] = pixel_offset(c, (int64_t)y0 + h, (int64_t)x0 + w);
        }
        for (int64_t ch = 0; ch < p->c; ch++) {
            const float *plane = c->x + (c->n * p->c + ch) * p->h * p->w;
            float v = 0.0f;
            for (int h = 0; !nan && h < 4; h++) {
                float row = 0.0f;
                for (int w = 0; w < 4; w++) row += wx[w] * (o[h][w] >= 0 ? plane[o[h][w]] : 0.0f);
                v += wy[h] * row;
            }
            c->y[(c->n * p->c + ch) * c->npix + i] = v;
        }
    }
}

void pvk_grid_sample_f32(pvc_pool *pool, const pvk_grid_sample_params *p, const float *x,
                         const float *grid, float *y, void *ws)
{
    gs_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = x;
    c.grid = grid;
    c.y = y;
    c.plan = ws;
    c.npix = p->ho * p->wo;
    c.chunk = 4096;
    if (p->align_corners) {
        c.hi_x = (float)(p->w - 1);
        c.hi_y = (float)(p->h - 1);
    } else {
        c.lo_x = c.lo_y = -0.5f;
        c.hi_x = (float)p->w - 0.5f;
        c.hi_y = (float)p->h - 0.5f;
    }
    if (c.npix == 0 || p->n * p->c == 0) return;
    if (p->h == 0 || p->w == 0) {                     /* nothing to sample from */
        memset(y, 0, (size_t)(p->n * p->c * c.npix) * sizeof(float));
        return;
    }
    int64_t nchunk = (c.npix + c.chunk - 1) / c.chunk;
    for (c.n = 0; c.n < p->n; c.n++) {
        if (p->mode == PVK_GS_BICUBIC) {
            gs_bicubic(&c);
            continue;
        }
        pvc_parallel_for(pool, c.npix, 1024, gs_plan_task, &c);
        pvc_parallel_for(pool, p->c * nchunk, 1, gs_apply_task, &c);
    }
}
