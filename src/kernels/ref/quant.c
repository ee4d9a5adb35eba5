/* Quantized kernels (see quant.h): element maps, requantization, 8-bit im2col, the reference
 * integer GEMM, the packed operand forms and the dispatcher over pvk_qgemm_variants. */
#include "kernels/ref/quant.h"
#include "kernels/ref/conv.h"

#include <math.h>
#include <string.h>

static inline int32_t ld8(const void *p, pv_dtype t, int64_t i)
{
    return t == PV_U8 ? (int32_t)((const uint8_t *)p)[i] : (int32_t)((const int8_t *)p)[i];
}

static inline void st8(void *p, pv_dtype t, int64_t i, int32_t v)
{
    if (t == PV_U8) ((uint8_t *)p)[i] = (uint8_t)v;
    else ((int8_t *)p)[i] = (int8_t)v;
}

/* v rounded half to even, plus zp, saturated to t, in ONNX Runtime's order: clamp v to the range
 * left around zp (NaN gives the minimum: ORT's max(v, min) keeps min), round by adding and
 * subtracting 1.5 * 2^23 (exact for |v| < 2^22, the default rounding mode: half to even; no
 * libm call), add zp. The AVX-512 rows (x86/qgemm_avx512.c) compute the same. */
static inline int32_t quant1(float v, int32_t zp, pv_dtype t)
{
    float lo = (float)((t == PV_U8 ? 0 : -128) - zp), hi = (float)((t == PV_U8 ? 255 : 127) - zp);
    if (!(v >= lo)) v = lo;
    if (v > hi) v = hi;
    v = (v + 12582912.0f) - 12582912.0f;
    return (int32_t)v + zp;
}

typedef struct qmap_ctx {
    const void *x;
    void *y;
    pv_dtype t;
    int64_t C, inner;
    const float *scale;
    const int32_t *zp;
} qmap_ctx;

static void quantize_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const qmap_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t ch = r % c->C;
        float s = c->scale[ch];
        int32_t z = c->zp ? c->zp[ch] : 0;
        const float *x = (const float *)c->x + r * c->inner;
#if defined(__x86_64__)
        if (pvc_isa_selected() >= PVC_ISA_AVX512) {
            pvk_quant_row_avx512(x, c->inner, s, z, c->t, (uint8_t *)c->y + r * c->inner);
            continue;
        }
#endif
        for (int64_t i = 0; i < c->inner; i++) st8(c->y, c->t, r * c->inner + i, quant1(x[i] / s, z, c->t));
    }
}

void pvk_quantize_f32(pvc_pool *pool, const float *x, int64_t outer, int64_t C, int64_t inner,
                      const float *scale, const int32_t *zp, pv_dtype yt, void *y)
{
    qmap_ctx c = { x, y, yt, C, inner, scale, zp };
    pvc_parallel_for(pool, outer * C, PVC_MAX(1, 16384 / PVC_MAX(inner, 1)), quantize_rows, &c);
}

static void dequantize_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const qmap_ctx *c = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t ch = r % c->C;
        float s = c->scale[ch];
        int64_t z = c->zp ? c->zp[ch] : 0;
        float *y = (float *)c->y + r * c->inner;
        int64_t o = r * c->inner;
        if (c->t == PV_I32) {
            const int32_t *x = (const int32_t *)c->x + o;
            for (int64_t i = 0; i < c->inner; i++) y[i] = (float)((int64_t)x[i] - z) * s;
        } else {
            for (int64_t i = 0; i < c->inner; i++) y[i] = (float)(ld8(c->x, c->t, o + i) - z) * s;
        }
    }
}

void pvk_dequantize_f32(pvc_pool *pool, const void *x, pv_dtype xt, int64_t outer, int64_t C,
                        int64_t inner, const float *scale, const int32_t *zp, float *y)
{
    qmap_ctx c = { x, y, xt, C, inner, scale, zp };
    pvc_parallel_for(pool, outer * C, PVC_MAX(1, 16384 / PVC_MAX(inner, 1)), dequantize_rows, &c);
}

void pvk_dynquant_params(const float *x, int64_t n, float *scale, uint8_t *zp)
{
    float lo = 0.0f, hi = 0.0f;   /* the range always holds 0 */
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float z = 0.0f - lo / s;
    z = z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z;
    *scale = s;
    *zp = (uint8_t)nearbyintf(z);
}

void pvk_requant_row_scalar(const int32_t *acc, int64_t n, const float *mult, int64_t nmult, int32_t zp, pv_dtype t, void *y)
{
    for (int64_t i = 0; i < n; i++) st8(y, t, i, quant1((float)acc[i] * mult[nmult == 1 ? 0 : i], zp, t));
}

void pvk_quant_row_scalar(const float *x, int64_t n, float scale, int32_t zp, pv_dtype t, void *y)
{
    for (int64_t i = 0; i < n; i++) st8(y, t, i, quant1(x[i] / scale, zp, t));
}

typedef struct requant_ctx {
    const int32_t *acc;
    int64_t N, nmult;
    const float *mult;
    int32_t zp;
    pv_dtype t;
    void *y;
} requant_ctx;

static void requant_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const requant_ctx *c = ctx;
    (void)tid;
    for (int64_t m = begin; m < end; m++) {
#if defined(__x86_64__)
        if (pvc_isa_selected() >= PVC_ISA_AVX512) {
            pvk_requant_row_avx512(c->acc + m * c->N, c->N, c->mult, c->nmult, c->zp, c->t, (uint8_t *)c->y + m * c->N);
            continue;
        }
#endif
        pvk_requant_row_scalar(c->acc + m * c->N, c->N, c->mult, c->nmult, c->zp, c->t, (uint8_t *)c->y + m * c->N);
    }
}

void pvk_requantize(pvc_pool *pool, const int32_t *acc, int64_t M, int64_t N, const float *mult,
                    int64_t nmult, int32_t zp, pv_dtype yt, void *y)
{
    requant_ctx c = { acc, N, nmult, mult, zp, yt, y };
    pvc_parallel_for(pool, M, PVC_MAX(1, 4096 / PVC_MAX(N, 1)), requant_rows, &c);
}

/* ---- reference integer GEMM ----------------------------------------------------------------- */
typedef struct qref_ctx {
    int64_t N, K, ldc;
    const pvk_qmat *a, *b;
    int32_t *C;
} qref_ctx;

/* Rows of C, k outer so B is read along its rows; uint32 sums wrap like the int32 ones ORT keeps. */
static void qref_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const qref_ctx *c = ctx;
    const pvk_qmat *a = c->a, *b = c->b;
    (void)tid;
    for (int64_t m = begin; m < end; m++) {
        uint32_t *crow = (uint32_t *)(c->C + m * c->ldc);
        for (int64_t n = 0; n < c->N; n++) crow[n] = 0;
        int32_t za = a->zp ? a->zp[a->nzp == 1 ? 0 : m] : 0;
        for (int64_t k = 0; k < c->K; k++) {
            int32_t av = ld8(a->data, a->dtype, m * a->ld + k) - za;
            for (int64_t n = 0; n < c->N; n++) {
                int32_t bv = ld8(b->data, b->dtype, k * b->ld + n) - (b->zp ? b->zp[b->nzp == 1 ? 0 : n] : 0);
                crow[n] += (uint32_t)(av * bv);
            }
        }
    }
}

void pvk_qgemm_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const pvk_qmat *a,
                   const pvk_qmat *b, int32_t *C, int64_t ldc)
{
    qref_ctx c = { N, K, ldc, a, b, C };
    pvc_parallel_for(pool, M, 1, qref_rows, &c);
}

/* ---- packed operands ------------------------------------------------------------------------ */
static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
static size_t align64(size_t v) { return (v + 63) & ~(size_t)63; }

size_t pvk_qpack_bytes(int64_t K, int64_t N)
{
    int64_t K4 = round_up(PVC_MAX(K, 1), 4), Np = round_up(PVC_MAX(N, 1), PVK_QNR);
    return align64((size_t)(K4 * Np)) + 2 * align64((size_t)Np * sizeof(int32_t));
}

typedef struct qpack_ctx {
    const pvk_qmat *m;
    int64_t K, N;
    void *pk;
} qpack_ctx;

/* One panel of PVK_QNR columns: int8 values (uint8 shifted by -128), their sums, zero points. */
static void pack_b_panels(void *ctx, int64_t begin, int64_t end, int tid)
{
    const qpack_ctx *c = ctx;
    const pvk_qmat *b = c->m;
    pvk_qpacked *pk = c->pk;
    int32_t shift = b->dtype == PV_U8 ? 128 : 0;
    int64_t G = pk->K4 / 4;
    (void)tid;
    for (int64_t p = begin; p < end; p++) {
        int8_t *dst = pk->data + p * G * PVK_QNR * 4;
        for (int64_t j = 0; j < PVK_QNR; j++) {
            int64_t n = p * PVK_QNR + j;
            uint32_t sum = 0;
            for (int64_t k = 0; k < pk->K4; k++) {
                int32_t v = n < c->N && k < c->K ? ld8(b->data, b->dtype, k * b->ld + n) - shift : 0;
                dst[((k / 4) * PVK_QNR + j) * 4 + k % 4] = (int8_t)v;
                sum += (uint32_t)v;
            }
            pk->colsum[n] = (int32_t)sum;
            pk->zb[n] = n < c->N ? (b->zp ? b->zp[b->nzp == 1 ? 0 : n] : 0) - shift : 0;
        }
    }
}

void pvk_qpack_b(pvc_pool *pool, int64_t K, int64_t N, const pvk_qmat *b, void *mem, pvk_qpacked *pk)
{
    pk->K = K;
    pk->N = N;
    pk->K4 = round_up(PVC_MAX(K, 1), 4);
    pk->Np = round_up(PVC_MAX(N, 1), PVK_QNR);
    char *at = mem;
    pk->data = (int8_t *)at;
    at += align64((size_t)(pk->K4 * pk->Np));
    pk->zb = (int32_t *)at;
    at += align64((size_t)pk->Np * sizeof(int32_t));
    pk->colsum = (int32_t *)at;
    qpack_ctx c = { b, K, N, pk };
    pvc_parallel_for(pool, pk->Np / PVK_QNR, 1, pack_b_panels, &c);
}

size_t pvk_qpack_a_bytes(int64_t M, int64_t K)
{
    int64_t K4 = round_up(PVC_MAX(K, 1), 4), Mp = round_up(PVC_MAX(M, 1), PVK_QMR);
    return align64((size_t)(K4 * Mp)) + 2 * align64((size_t)Mp * sizeof(int32_t));
}

/* Panels of PVK_QMR rows, [K4 / 4][PVK_QMR][4] uint8 (int8 shifted by +128): one 4-byte load per
 * row and k-group, in the order the kernel broadcasts them. */
static void pack_a_panels(void *ctx, int64_t begin, int64_t end, int tid)
{
    const qpack_ctx *c = ctx;
    const pvk_qmat *a = c->m;
    pvk_qpacked_a *pa = c->pk;
    int32_t shift = a->dtype == PV_I8 ? 128 : 0;
    int64_t G = pa->K4 / 4;
    (void)tid;
    for (int64_t p = begin; p < end; p++) {
        uint8_t *dst = pa->data + p * G * PVK_QMR * 4;
        for (int64_t i = 0; i < PVK_QMR; i++) {
            int64_t m = p * PVK_QMR + i;
            uint32_t sum = 0;
            for (int64_t k = 0; k < pa->K4; k++) {
                int32_t v = m < c->N && k < c->K ? ld8(a->data, a->dtype, m * a->ld + k) + shift : 0;
                dst[((k / 4) * PVK_QMR + i) * 4 + k % 4] = (uint8_t)v;
                sum += (uint32_t)v;
            }
            int32_t za = m < c->N ? (a->zp ? a->zp[a->nzp == 1 ? 0 : m] : 0) + shift : 0;
            pa->za[m] = za;
            pa->rfix[m] = (int32_t)(sum - (uint32_t)c->K * (uint32_t)za);
        }
    }
}

void pvk_qpack_a(pvc_pool *pool, int64_t M, int64_t K, const pvk_qmat *a, void *mem, pvk_qpacked_a *pa)
{
    pa->M = M;
    pa->K = K;
    pa->K4 = round_up(PVC_MAX(K, 1), 4);
    pa->Mp = round_up(PVC_MAX(M, 1), PVK_QMR);
    char *at = mem;
    pa->data = (uint8_t *)at;
    at += align64((size_t)(pa->K4 * pa->Mp));
    pa->za = (int32_t *)at;
    at += align64((size_t)pa->Mp * sizeof(int32_t));
    pa->rfix = (int32_t *)at;
    qpack_ctx c = { a, K, M, pa };   /* N carries M here */
    pvc_parallel_for(pool, pa->Mp / PVK_QMR, 1, pack_a_panels, &c);
}

void pvk_qgemm_packed_scalar(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc)
{
    int64_t G = a->K4 / 4;
    (void)pool;
    for (int64_t m = 0; m < a->M; m++)
        for (int64_t n = 0; n < b->N; n++) {
            const uint8_t *ap = a->data + (m / PVK_QMR) * G * PVK_QMR * 4 + (m % PVK_QMR) * 4;
            const int8_t *bp = b->data + (n / PVK_QNR) * G * PVK_QNR * 4 + (n % PVK_QNR) * 4;
            uint32_t raw = 0;
            for (int64_t g = 0; g < G; g++)
                for (int kk = 0; kk < 4; kk++) raw += (uint32_t)((int32_t)ap[g * PVK_QMR * 4 + kk] * (int32_t)bp[g * PVK_QNR * 4 + kk]);
            C[m * ldc + n] = (int32_t)(raw - (uint32_t)b->zb[n] * (uint32_t)a->rfix[m] - (uint32_t)a->za[m] * (uint32_t)b->colsum[n]);
        }
}

/* ---- variants and dispatch ------------------------------------------------------------------ */
static bool always(void) { return true; }
#if defined(__x86_64__)   /* x86/ files are built on x86-64 only (CMakeLists.txt) */
static bool vnni256(void) { return pvc_isa_selected() >= PVC_ISA_AVX2 && pvc_cpu_get()->avx_vnni; }
static bool vnni512(void) { return pvc_isa_selected() >= PVC_ISA_AVX512 && pvc_cpu_get()->avx512_vnni; }
#endif

const pvk_qgemm_variant pvk_qgemm_variants[] = {
    { "scalar", pvk_qgemm_packed_scalar, always },
#if defined(__x86_64__)
    { "avx_vnni", pvk_qgemm_packed_avxvnni, vnni256 },
    { "avx512_vnni", pvk_qgemm_packed_avx512vnni, vnni512 },
#endif
};
const int pvk_qgemm_nvariants = (int)PVC_COUNTOF(pvk_qgemm_variants);

const pvk_qgemm_variant *pvk_qgemm_fast(void)
{
    for (int i = pvk_qgemm_nvariants - 1; i > 0; i--)
        if (pvk_qgemm_variants[i].usable()) return &pvk_qgemm_variants[i];
    return NULL;
}

size_t pvk_qgemm_ws(int64_t M, int64_t N, int64_t K, bool b_packed)
{
    return pvk_qpack_a_bytes(M, K) + (b_packed ? 0 : pvk_qpack_bytes(K, N));
}

void pvk_qgemm(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const pvk_qmat *a, const pvk_qmat *b,
               const pvk_qpacked *bp, int32_t *C, int64_t ldc, void *ws)
{
    const pvk_qgemm_variant *v = pvk_qgemm_fast();
    if (!v || M <= 0 || N <= 0) {
        pvk_qgemm_ref(pool, M, N, K, a, b, C, ldc);
        return;
    }
    pvk_qpacked_a pa;
    pvk_qpacked pb;
    pvk_qpack_a(pool, M, K, a, ws, &pa);
    if (!bp) {
        pvk_qpack_b(pool, K, N, b, (char *)ws + pvk_qpack_a_bytes(M, K), &pb);
        bp = &pb;
    }
    v->fn(pool, &pa, bp, C, ldc);
}

/* ---- 8-bit im2col --------------------------------------------------------------------------- */
typedef struct col8_ctx {
    const pvk_conv_geom *g;
    const uint8_t *x;
    uint8_t *col, pad;
    int64_t p0, np, ks;
} col8_ctx;

static void im2col8_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const col8_ctx *c = ctx;
    const pvk_conv_geom *g = c->g;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t ch = r / c->ks, kk = r % c->ks;
        int64_t kx = kk % g->k[2], ky = (kk / g->k[2]) % g->k[1], kz = kk / (g->k[2] * g->k[1]);
        const uint8_t *img = c->x + ch * pvk_conv_insize(g);
        uint8_t *dst = c->col + r * c->np;
        for (int64_t t = 0; t < c->np; t++) {
            int64_t p = c->p0 + t;
            int64_t ox = p % g->out[2], oy = (p / g->out[2]) % g->out[1], oz = p / (g->out[2] * g->out[1]);
            int64_t iz = oz * g->stride[0] - g->pad[0] + kz * g->dil[0];
            int64_t iy = oy * g->stride[1] - g->pad[1] + ky * g->dil[1];
            int64_t ix = ox * g->stride[2] - g->pad[2] + kx * g->dil[2];
            bool in = iz >= 0 && iz < g->in[0] && iy >= 0 && iy < g->in[1] && ix >= 0 && ix < g->in[2];
            dst[t] = in ? img[(iz * g->in[1] + iy) * g->in[2] + ix] : c->pad;
        }
    }
}

void pvk_im2col_8(pvc_pool *pool, const pvk_conv_geom *g, const uint8_t *x, int64_t channels,
                  int64_t p0, int64_t np, uint8_t pad, uint8_t *col)
{
    col8_ctx c = { g, x, col, pad, p0, np, pvk_conv_ksize(g) };
    pvc_parallel_for(pool, channels * c.ks, PVC_MAX(1, 8192 / PVC_MAX(np, 1)), im2col8_rows, &c);
}
