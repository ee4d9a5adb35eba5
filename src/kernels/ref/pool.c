/* Reference pooling kernels (see pool.h). Work is split by output rows (plane, o0, o1); each
 * window's valid kernel range is computed per axis up front, so the inner loops never test
 * bounds. */
#include "kernels/ref/pool.h"
#include "kernels/ref/eltwise_simd.h"

#include <float.h>
#include <math.h>

/* Kernel taps kk in [*lo, *hi) with 0 <= start + kk * dil < in. */
static void tap_range(int64_t start, int64_t k, int64_t dil, int64_t in, int64_t *lo, int64_t *hi)
{
    if (dil == 1) {                         /* the common case, without divisions */
        *lo = PVC_MAX(0, -start);
        *hi = PVC_MAX(*lo, PVC_MIN(k, in - start));
        return;
    }
    int64_t l = start < 0 ? (-start + dil - 1) / dil : 0;
    int64_t h = in - start <= 0 ? 0 : (in - start + dil - 1) / dil;
    *lo = l;
    *hi = PVC_MAX(l, PVC_MIN(k, h));
}

typedef struct pool_ctx {
    const pvk_pool_geom *g;
    const void          *x;
    void                *y;
    int64_t             *ind;
    void (*row)(const struct pool_ctx *c, int64_t plane, int64_t o0, int64_t o1);
} pool_ctx;

static void pool_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const pool_ctx *c = cv;
    const pvk_pool_geom *g = c->g;
    for (int64_t r = b; r < e; r++) {
        int64_t o1 = r % g->out[1], q = r / g->out[1];
        c->row(c, q / g->out[0], q % g->out[0], o1);
    }
}

static void pool_run(pvc_pool *pool, pool_ctx *c)
{
    const pvk_pool_geom *g = c->g;
    int64_t rows = g->planes * g->out[0] * g->out[1];
    int64_t work = PVC_MAX(1, g->out[2] * g->kernel[0] * g->kernel[1] * g->kernel[2]);
    pvc_parallel_for(pool, rows, PVC_MAX(1, 16384 / work), pool_task, c);
}

/* ---- MaxPool ------------------------------------------------------------------------------ */

#define LD_ID(v) (v)
#define LD_H(v) pvc_f16_to_f32(v)
#define LD_B(v) pvc_bf16_to_f32(v)

/* EMPTY: what a window of padding only yields (the type's lowest value, as ONNX Runtime). */
#define DEF_MAXPOOL(TN, T, V, LOAD, EMPTY) \
    static void maxrow_##TN(const pool_ctx *c, int64_t plane, int64_t o0, int64_t o1) \
    { \
        const pvk_pool_geom *g = c->g; \
        int64_t insz = g->in[0] * g->in[1] * g->in[2]; \
        const T *x = (const T *)c->x + plane * insz; \
        int64_t yo = ((plane * g->out[0] + o0) * g->out[1] + o1) * g->out[2]; \
        T *y = (T *)c->y + yo; \
        int64_t s0 = o0 * g->stride[0] - g->pad_begin[0], s1 = o1 * g->stride[1] - g->pad_begin[1]; \
        int64_t lo0, hi0, lo1, hi1; \
        tap_range(s0, g->kernel[0], g->dil[0], g->in[0], &lo0, &hi0); \
        tap_range(s1, g->kernel[1], g->dil[1], g->in[1], &lo1, &hi1); \
        for (int64_t ow = 0; ow < g->out[2]; ow++) { \
            int64_t s2 = ow * g->stride[2] - g->pad_begin[2], lo2, hi2; \
            tap_range(s2, g->kernel[2], g->dil[2], g->in[2], &lo2, &hi2); \
            V best = 0; \
            int64_t bi = -1; \
            for (int64_t a = lo0; a < hi0; a++) { \
                int64_t i0 = s0 + a * g->dil[0]; \
                for (int64_t b = lo1; b < hi1; b++) { \
                    int64_t base = (i0 * g->in[1] + s1 + b * g->dil[1]) * g->in[2]; \
                    for (int64_t k = lo2; k < hi2; k++) { \
                        int64_t off = base + s2 + k * g->dil[2]; \
                        V v = (V)LOAD(x[off]); \
                        if (bi < 0) { best = v; bi = off; continue; } \
                        bool gt = v > best || v != v;   /* select, not branch; NaN sticks */ \
                        best = gt ? v : best; \
                        bi = gt ? off : bi; \
                    } \
                } \
            } \
            y[ow] = bi >= 0 ? x[bi] : (T)(EMPTY); \
            if (!c->ind) continue; \
            int64_t idx = -1; \
            if (bi >= 0 && g->storage_order == 0) idx = plane * insz + bi; \
            else if (bi >= 0) { \
                int64_t i2 = bi % g->in[2], i1 = bi / g->in[2] % g->in[1], i0 = bi / (g->in[1] * g->in[2]); \
                idx = plane * insz + i0 + i1 * g->in[0] + i2 * g->in[0] * g->in[1]; \
            } \
            c->ind[yo + ow] = idx; \
        } \
    }
DEF_MAXPOOL(f32, float, float, LD_ID, -FLT_MAX)
DEF_MAXPOOL(f16, uint16_t, float, LD_H, 0xFBFFu)    /* -65504 */
DEF_MAXPOOL(bf16, uint16_t, float, LD_B, 0xFF7Fu)   /* lowest bfloat16 */
DEF_MAXPOOL(i8, int8_t, int32_t, LD_ID, INT8_MIN)
DEF_MAXPOOL(u8, uint8_t, int32_t, LD_ID, 0)

void pvk_maxpool_ref(pvc_pool *pool, const pvk_pool_geom *g, pv_dtype t, const void *x, void *y,
                     int64_t *indices)
{
    pool_ctx c = { g, x, y, indices, NULL };
    switch (t) {
    case PV_F32: c.row = maxrow_f32; break;
    case PV_F16: c.row = maxrow_f16; break;
    case PV_BF16: c.row = maxrow_bf16; break;
    case PV_I8: c.row = maxrow_i8; break;
    case PV_U8: c.row = maxrow_u8; break;
    default: return;
    }
    pool_run(pool, &c);
}

/* f32 2-D rows through the vector kernel: one task per (plane, output row). */
enum { MP_TMP = 8192 };   /* scratch floats per row on the stack */

typedef struct vmp_ctx { const pvk_pool_geom *g; const float *x; float *y; pvk_vmp_fn fn; } vmp_ctx;

static void vmp_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const vmp_ctx *c = cv;
    const pvk_pool_geom *g = c->g;
    float tmp[MP_TMP];
    for (int64_t r = b; r < e; r++) {
        int64_t plane = r / g->out[1], oh = r % g->out[1];
        int64_t s = oh * g->stride[1] - g->pad_begin[1];
        int64_t r0 = PVC_MAX(s, 0), r1 = PVC_MIN(s + g->kernel[1], g->in[1]);
        c->fn(c->x + plane * g->in[1] * g->in[2], g->in[2], r0, r1, g->kernel[2], g->stride[2], g->pad_begin[2],
              g->out[2], tmp, c->y + r * g->out[2]);
    }
}

/* Every window of axis a holds a real element (dilation 1): the first ends past 0 and the last
 * starts before the input's end (windows move monotonically in between). */
static bool windows_real(const pvk_pool_geom *g, int a)
{
    int64_t first = -g->pad_begin[a], last = (g->out[a] - 1) * g->stride[a] - g->pad_begin[a];
    return first + g->kernel[a] > 0 && last < g->in[a];
}

void pvk_maxpool(pvc_pool *pool, const pvk_pool_geom *g, pv_dtype t, const void *x, void *y,
                 int64_t *indices)
{
    bool vec = t == PV_F32 && !indices && g->in[0] == 1 && g->out[0] == 1 && g->kernel[0] == 1 &&
               g->pad_begin[0] == 0 &&
               g->dil[1] == 1 && g->dil[2] == 1 && g->out[1] > 0 && g->out[2] > 0 && g->planes > 0 &&
               windows_real(g, 1) && windows_real(g, 2) &&
               pvk_vmp_tmp_len(g->kernel[2], g->stride[2], g->out[2]) <= MP_TMP;
    if (!vec) {
        pvk_maxpool_ref(pool, g, t, x, y, indices);
        return;
    }
    vmp_ctx c = { g, x, y, pvk_vec_selected()->maxpool2d_row };
    int64_t work = PVC_MAX(1, g->out[2] * g->kernel[1] * g->kernel[2]);
    pvc_parallel_for(pool, g->planes * g->out[1], PVC_MAX(1, 16384 / work), vmp_task, &c);
}

/* ---- AveragePool -------------------------------------------------------------------------- */

/* One axis of an average window: real taps [*lo, *hi) as input positions; the return value is
 * the window's length clipped to the padded extent (PyTorch's and ONNX Runtime's divisor for
 * count_include_pad, which leaves out ceil_mode's overhang past the end padding). */
static int64_t avg_axis(const pvk_pool_geom *g, int a, int64_t o, int64_t *lo, int64_t *hi)
{
    int64_t s = o * g->stride[a] - g->pad_begin[a];
    int64_t e = PVC_MIN(s + g->kernel[a], g->in[a] + g->pad_end[a]);
    *lo = PVC_MAX(s, 0);
    *hi = PVC_MAX(*lo, PVC_MIN(e, g->in[a]));
    return e - s;
}

static void avgrow(const pool_ctx *c, int64_t plane, int64_t o0, int64_t o1)
{
    const pvk_pool_geom *g = c->g;
    const float *x = (const float *)c->x + plane * g->in[0] * g->in[1] * g->in[2];
    float *y = (float *)c->y + ((plane * g->out[0] + o0) * g->out[1] + o1) * g->out[2];
    int64_t lo0, hi0, lo1, hi1;
    int64_t p0 = avg_axis(g, 0, o0, &lo0, &hi0), p1 = avg_axis(g, 1, o1, &lo1, &hi1);
    for (int64_t ow = 0; ow < g->out[2]; ow++) {
        int64_t lo2, hi2, p2 = avg_axis(g, 2, ow, &lo2, &hi2);
        float sum = 0.0f;
        for (int64_t i0 = lo0; i0 < hi0; i0++)
            for (int64_t i1 = lo1; i1 < hi1; i1++) {
                const float *r = x + (i0 * g->in[1] + i1) * g->in[2];
                for (int64_t i2 = lo2; i2 < hi2; i2++) sum += r[i2];
            }
        int64_t n = g->count_include_pad ? p0 * p1 * p2 : (hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2);
        y[ow] = n > 0 ? sum / (float)n : 0.0f;
    }
}

void pvk_avgpool_f32(pvc_pool *pool, const pvk_pool_geom *g, const float *x, float *y)
{
    pool_ctx c = { g, x, y, NULL, avgrow };
    pool_run(pool, &c);
}

/* ---- GlobalAveragePool -------------------------------------------------------------------- */

double pvk_sum_f64_ref(const float *x, int64_t n)
{
    /* eight running sums: one serial chain of double adds ran at a quarter of the load rate
     * (4-cycle latency per element); the order changes only double rounding */
    double acc[8] = { 0 }, s = 0.0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    for (; i < n; i++) s += x[i];
    return s + (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])));
}

pvk_sum_f64_fn pvk_sum_f64_select(void)
{
#if defined(__x86_64__) || defined(_M_X64)
    if (pvc_isa_selected() >= PVC_ISA_AVX512) return pvk_sum_f64_avx512;
#endif
    return pvk_sum_f64_ref;
}

typedef struct gap_ctx { const float *x; float *y; int64_t size; pvk_sum_f64_fn sum; } gap_ctx;

static void gap_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const gap_ctx *c = cv;
    for (int64_t p = b; p < e; p++)
        c->y[p] = c->size ? (float)(c->sum(c->x + p * c->size, c->size) / (double)c->size) : NAN;
}

void pvk_global_avgpool_f32(pvc_pool *pool, int64_t planes, int64_t plane_size, const float *x,
                            float *y)
{
    gap_ctx c = { x, y, plane_size, pvk_sum_f64_select() };
    pvc_parallel_for(pool, planes, PVC_MAX(1, 65536 / PVC_MAX(1, plane_size)), gap_task, &c);
}
