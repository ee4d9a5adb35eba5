/* Reference kernels for the coverage operators (see extra.h).
 *
 * Elementwise work is split into chunks of GRAIN elements over the pool; broadcasting binaries
 * ride on pvk_broadcast_rows (broadcast.c). ReduceProd scans x in memory order and multiplies
 * into per-output accumulators, parallel over the outermost kept group when there is one, so
 * every read is sequential. Column-wise work (LpNormalization) takes blocks of BLK columns so
 * the inner loops read contiguous runs. */
#include "kernels/ref/extra.h"
#include "kernels/ref/eltwise.h"

#include <string.h>

#define GRAIN 16384
#define BLK   256

/* ---- parametric unary activations ---------------------------------------------------------- */
bool pvk_xunary_supported(pvk_xunary_op op, pv_dtype t)
{
    if ((unsigned)op >= PVK_XU_COUNT) return false;
    if (t == PV_F32) return true;
    return (op == PVK_XU_SIGN || op == PVK_XU_SHRINK) && pvc_dtype_is_int(t);
}

/* Clamp to [0, 1]; NaN stays NaN (fminf/fmaxf would drop it). */
static inline float clamp01(float t) { return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t; }

static void xunary_f32(pvk_xunary_op op, const float *x, float *y, int64_t n, const pvk_xunary_args *a)
{
    float al = a->alpha, be = a->beta, ga = a->gamma;
#define MAP(EXPR) for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (EXPR); } return
    switch (op) {
    case PVK_XU_SIGN:             MAP(v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? 0.0f : v);
    /* log1p(exp(-|v|)) never overflows; the max(v, 0) term carries large inputs. */
    case PVK_XU_SOFTPLUS:         MAP((v > 0.0f ? v : 0.0f) + log1pf(expf(-fabsf(v))));
    case PVK_XU_SOFTSIGN:         MAP(v / (1.0f + fabsf(v)));
    case PVK_XU_ELU:              MAP(v < 0.0f ? al * expm1f(v) : v);
    case PVK_XU_SELU:             MAP(v <= 0.0f ? ga * al * expm1f(v) : ga * v);
    /* Celu's max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) is x for x > 0 and the second term
     * otherwise, for either sign of alpha; written this way NaN propagates. */
    case PVK_XU_CELU:             MAP(v > 0.0f ? v : al * expm1f(v / al));
    case PVK_XU_HARD_SIGMOID:     MAP(clamp01(al * v + be));
    case PVK_XU_HARD_SWISH:       MAP(v * clamp01(v * (1.0f / 6.0f) + 0.5f));
    case PVK_XU_THRESHOLDED_RELU: MAP(v > al ? v : 0.0f);
    case PVK_XU_SHRINK:           MAP(v < -al ? v + be : v > al ? v - be : 0.0f);
    case PVK_XU_COUNT: return;
    }
#undef MAP
}

/* Truncates toward zero into [lo, hi] (r is never NaN here: the inputs are integers). */
static inline int64_t d2i(double r, int64_t lo, int64_t hi)
{
    if (r <= (double)lo) return lo;
    if (r >= (double)hi) return hi;
    return (int64_t)r;
}

#define XUNARY_INT(NAME, T, LO, HI)                                                             \
    static void NAME(pvk_xunary_op op, const void *xv, void *yv, int64_t n, const pvk_xunary_args *a) \
    {                                                                                           \
        const T *x = xv;                                                                        \
        T *y = yv;                                                                              \
        double l = a->alpha, b = a->beta;                                                       \
        if (op == PVK_XU_SIGN) {                                                                \
            for (int64_t i = 0; i < n; i++) y[i] = (T)(x[i] > 0 ? 1 : x[i] < 0 ? -1 : 0);        \
            return;                                                                             \
        }                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                       \
            double v = (double)x[i], r = v < -l ? v + b : v > l ? v - b : 0.0;                  \
            y[i] = (T)d2i(r, LO, HI);                                                           \
        }                                                                                       \
    }
XUNARY_INT(xunary_i64, int64_t, INT64_MIN, INT64_MAX)
XUNARY_INT(xunary_i32, int32_t, INT32_MIN, INT32_MAX)
XUNARY_INT(xunary_i8, int8_t, INT8_MIN, INT8_MAX)
XUNARY_INT(xunary_u8, uint8_t, 0, UINT8_MAX)

typedef struct xu_job {
    pvk_xunary_op          op;
    pv_dtype               t;
    const char            *x;
    char                  *y;
    const pvk_xunary_args *a;
} xu_job;

static void xu_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const xu_job *j = ctx;
    int64_t es = (int64_t)pv_dtype_size(j->t);
    const void *x = j->x + b * es;
    void *y = j->y + b * es;
    switch (j->t) {
    case PV_F32: xunary_f32(j->op, x, y, e - b, j->a); break;
    case PV_I64: xunary_i64(j->op, x, y, e - b, j->a); break;
    case PV_I32: xunary_i32(j->op, x, y, e - b, j->a); break;
    case PV_I8: xunary_i8(j->op, x, y, e - b, j->a); break;
    case PV_U8: xunary_u8(j->op, x, y, e - b, j->a); break;
    default: break;
    }
}

void pvk_xunary(pvc_pool *pool, pvk_xunary_op op, pv_dtype t, const void *x, void *y, int64_t n,
                const pvk_xunary_args *a)
{
    xu_job j = { op, t, x, y, a };
    pvc_parallel_for(pool, n, GRAIN, xu_chunk, &j);
}

/* ---- float classification ------------------------------------------------------------------ */
typedef struct fc_job {
    pv_dtype    t;
    const void *x;
    uint8_t    *y;
    unsigned    classes;
} fc_job;

static inline uint8_t fc_test(float v, unsigned c)
{
    if (v != v) return (c & PVK_FC_NAN) != 0;
    if (v == INFINITY) return (c & PVK_FC_POS_INF) != 0;
    if (v == -INFINITY) return (c & PVK_FC_NEG_INF) != 0;
    return 0;
}

static void fc_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const fc_job *j = ctx;
    const float *f = j->x;
    const uint16_t *h = j->x;
    for (int64_t i = b; i < e; i++) {
        float v = j->t == PV_F32 ? f[i] : j->t == PV_F16 ? pvc_f16_to_f32(h[i]) : pvc_bf16_to_f32(h[i]);
        j->y[i] = fc_test(v, j->classes);
    }
}

void pvk_float_class(pvc_pool *pool, pv_dtype t, const void *x, uint8_t *y, int64_t n,
                     unsigned classes)
{
    fc_job j = { t, x, y, classes };
    pvc_parallel_for(pool, n, GRAIN, fc_chunk, &j);
}

/* ---- broadcasting binaries ----------------------------------------------------------------- */
/* y has x's shape, so x's stride is 1 except for a single broadcast element. Integer products
 * go through the unsigned type so that overflow wraps. */
#define PRELU_ROW(NAME, T, UT)                                                                  \
    static void NAME(const void *ctx, int64_t n, void *yv, const void *const *in, const int64_t *s) \
    {                                                                                           \
        (void)ctx;                                                                              \
        const T *X = in[0], *S = in[1];                                                         \
        T *Y = yv;                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T v = X[i * s[0]];                                                                  \
            Y[i] = v < 0 ? (T)((UT)v * (UT)S[i * s[1]]) : v;                                    \
        }                                                                                       \
    }
PRELU_ROW(prelu_i64, int64_t, uint64_t)
PRELU_ROW(prelu_i32, int32_t, uint32_t)

static void prelu_f32(const void *ctx, int64_t n, void *yv, const void *const *in, const int64_t *s)
{
    (void)ctx;
    const float *X = in[0], *S = in[1];
    float *Y = yv;
    if (s[0] == 1 && s[1] == 0) {
        float a = S[0];
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] < 0.0f ? X[i] * a : X[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float v = X[i * s[0]];
        Y[i] = v < 0.0f ? v * S[i * s[1]] : v;
    }
}

bool pvk_prelu_supported(pv_dtype t) { return t == PV_F32 || t == PV_I32 || t == PV_I64; }

void pvk_prelu(pvc_pool *pool, const pvc_tensor *x, const pvc_tensor *slope, pvc_tensor *y)
{
    pvk_row_fn fn = x->dtype == PV_F32 ? prelu_f32 : x->dtype == PV_I64 ? prelu_i64 : prelu_i32;
    const pvc_tensor *in[2] = { x, slope };
    pvk_broadcast_rows(pool, 2, in, y, fn, NULL);
}

static void xor_row(const void *ctx, int64_t n, void *yv, const void *const *in, const int64_t *s)
{
    (void)ctx;
    const uint8_t *A = in[0], *B = in[1];
    uint8_t *Y = yv;
    for (int64_t i = 0; i < n; i++) Y[i] = (A[i * s[0]] != 0) != (B[i * s[1]] != 0);
}

void pvk_xor(pvc_pool *pool, const pvc_tensor *a, const pvc_tensor *b, pvc_tensor *y)
{
    const pvc_tensor *in[2] = { a, b };
    pvk_broadcast_rows(pool, 2, in, y, xor_row, NULL);
}

/* ---- ReduceProd ---------------------------------------------------------------------------- */
typedef struct prod_ctx {
    pv_dtype    t;
    const char *x;
    char       *y;
    void       *acc;             /* double (floats) or uint64_t (integers), one per output */
    size_t      es;
    int         first, ng;       /* scanned groups: [first, ng) */
    int64_t     gd[PV_MAX_RANK], ost[PV_MAX_RANK];
    bool        gr[PV_MAX_RANK];
    int64_t     xslice, yslice;  /* elements of x and y per parallel slice */
} prod_ctx;

/* Multiplies one slice of x (memory order) into acc: the last scanned group is a tight loop,
 * the groups before it advance an odometer that tracks the output offset. */
#define DEF_PROD(TN, T, A, LOAD)                                                                \
    static void prod_scan_##TN(const prod_ctx *c, const T *x, A *acc)                           \
    {                                                                                           \
        int last = c->ng - 1;                                                                   \
        int64_t len = last >= c->first ? c->gd[last] : 1;                                       \
        bool red = last >= c->first && c->gr[last];                                             \
        int64_t rows = c->xslice / len, idx[PV_MAX_RANK] = { 0 }, o = 0;                        \
        for (int64_t q = 0; q < rows; q++, x += len) {                                          \
            if (red) {                                                                          \
                A p = acc[o];                                                                   \
                for (int64_t j = 0; j < len; j++) p *= (A)LOAD(x[j]);                           \
                acc[o] = p;                                                                     \
            } else {                                                                            \
                for (int64_t j = 0; j < len; j++) acc[o + j] *= (A)LOAD(x[j]);                  \
            }                                                                                   \
            for (int g = last - 1; g >= c->first; g--) {                                        \
                o += c->ost[g];                                                                 \
                if (++idx[g] < c->gd[g]) break;                                                 \
                o -= idx[g] * c->ost[g];                                                        \
                idx[g] = 0;                                                                     \
            }                                                                                   \
        }                                                                                       \
    }
#define LD_ID(v) (v)
#define LD_H(v) pvc_f16_to_f32(v)
#define LD_B(v) pvc_bf16_to_f32(v)
#define LD_S(v) (uint64_t)(int64_t)(v)     /* sign-extend, then wrap */
DEF_PROD(f32, float, double, LD_ID)
DEF_PROD(f16, uint16_t, double, LD_H)
DEF_PROD(bf16, uint16_t, double, LD_B)
DEF_PROD(i64, int64_t, uint64_t, LD_S)
DEF_PROD(i32, int32_t, uint64_t, LD_S)
DEF_PROD(i8, int8_t, uint64_t, LD_S)
DEF_PROD(u8, uint8_t, uint64_t, LD_ID)

static void prod_store(const prod_ctx *c, int64_t o0, int64_t n)
{
    const double *d = (const double *)c->acc + o0;
    const uint64_t *u = (const uint64_t *)c->acc + o0;
    for (int64_t j = 0; j < n; j++) {
        int64_t o = o0 + j;
        switch (c->t) {
        case PV_F32: ((float *)c->y)[o] = (float)d[j]; break;
        case PV_F16: ((uint16_t *)c->y)[o] = pvc_f32_to_f16((float)d[j]); break;
        case PV_BF16: ((uint16_t *)c->y)[o] = pvc_f32_to_bf16((float)d[j]); break;
        case PV_I64: ((int64_t *)c->y)[o] = (int64_t)u[j]; break;
        case PV_I32: ((int32_t *)c->y)[o] = (int32_t)(uint32_t)u[j]; break;
        case PV_I8: ((int8_t *)c->y)[o] = (int8_t)(uint8_t)u[j]; break;
        case PV_U8: ((uint8_t *)c->y)[o] = (uint8_t)u[j]; break;
        default: break;
        }
    }
}

static void prod_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const prod_ctx *c = cv;
    bool fl = pvc_dtype_is_float(c->t);
    for (int64_t s = b; s < e; s++) {
        int64_t o0 = s * c->yslice;
        double *d = (double *)c->acc + o0;
        uint64_t *u = (uint64_t *)c->acc + o0;
        for (int64_t j = 0; j < c->yslice; j++) {
            if (fl) d[j] = 1.0;
            else u[j] = 1;
        }
        const void *x = c->x + (size_t)(s * c->xslice) * c->es;
        if (c->xslice > 0) {
            switch (c->t) {
            case PV_F32: prod_scan_f32(c, x, d); break;
            case PV_F16: prod_scan_f16(c, x, d); break;
            case PV_BF16: prod_scan_bf16(c, x, d); break;
            case PV_I64: prod_scan_i64(c, x, u); break;
            case PV_I32: prod_scan_i32(c, x, u); break;
            case PV_I8: prod_scan_i8(c, x, u); break;
            case PV_U8: prod_scan_u8(c, x, u); break;
            default: break;
            }
        }
        prod_store(c, o0, c->yslice);
    }
}

size_t pvk_reduce_prod_workspace(int rank, const int64_t *dims, unsigned mask)
{
    int64_t nout = 1;
    for (int i = 0; i < rank; i++) if (!((mask >> i) & 1u)) nout *= dims[i];
    return (size_t)nout * 8;
}

void pvk_reduce_prod(pvc_pool *pool, pv_dtype t, int rank, const int64_t *dims, unsigned mask,
                     const void *x, void *y, void *ws)
{
    prod_ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.x = x;
    c.y = y;
    c.acc = ws;
    c.es = pv_dtype_size(t);
    /* Collapse: drop size-1 dims, merge neighbours of the same kind. */
    int64_t nout = 1, nin = 1;
    for (int i = 0; i < rank; i++) {
        bool red = (mask >> i) & 1u;
        nin *= dims[i];
        if (!red) nout *= dims[i];
        if (dims[i] == 1) continue;
        if (c.ng && c.gr[c.ng - 1] == red) c.gd[c.ng - 1] *= dims[i];
        else { c.gd[c.ng] = dims[i]; c.gr[c.ng] = red; c.ng++; }
    }
    if (nout == 0) return;
    int64_t s = 1;
    for (int g = c.ng - 1; g >= 0; g--) {
        c.ost[g] = c.gr[g] ? 0 : s;
        if (!c.gr[g]) s *= c.gd[g];
    }
    int64_t slices = 1;
    if (c.ng > 0 && !c.gr[0] && nin > 0) {   /* the outermost group is kept: split over it */
        slices = c.gd[0];
        c.first = 1;
    }
    c.xslice = nin / slices;
    c.yslice = nout / slices;
    pvc_parallel_for(pool, slices, PVC_MAX(1, GRAIN / PVC_MAX(c.xslice, 1)), prod_task, &c);
}

/* ---- log-sum-exp steps --------------------------------------------------------------------- */
static void exp_sub_row(const void *ctx, int64_t n, void *yv, const void *const *in, const int64_t *s)
{
    (void)ctx;
    const float *X = in[0], *M = in[1];
    float *Y = yv;
    for (int64_t i = 0; i < n; i++) {
        float m = M[i * s[1]];
        Y[i] = expf(X[i * s[0]] - (isfinite(m) ? m : 0.0f));
    }
}

void pvk_exp_sub_f32(pvc_pool *pool, const pvc_tensor *x, const pvc_tensor *m, pvc_tensor *e)
{
    const pvc_tensor *in[2] = { x, m };
    pvk_broadcast_rows(pool, 2, in, e, exp_sub_row, NULL);
}

void pvk_log_add_f32(const float *s, const float *m, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = logf(s[i]) + (isfinite(m[i]) ? m[i] : 0.0f);
}

/* ---- Trilu --------------------------------------------------------------------------------- */
typedef struct trilu_ctx {
    size_t      es;
    int64_t     rows, cols, k;
    bool        upper;
    const char *x;
    char       *y;
} trilu_ctx;

static void trilu_rows(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const trilu_ctx *c = cv;
    size_t rb = (size_t)c->cols * c->es;
    for (int64_t r = b; r < e; r++) {
        int64_t i = r % c->rows;
        /* kept columns [lo, hi) */
        int64_t lo = c->upper ? PVC_MAX(0, i + c->k) : 0;
        int64_t hi = c->upper ? c->cols : PVC_MIN(c->cols, i + c->k + 1);
        lo = PVC_MIN(lo, c->cols);
        hi = PVC_MAX(hi, lo);
        const char *xr = c->x + (size_t)r * rb;
        char *yr = c->y + (size_t)r * rb;
        memset(yr, 0, (size_t)lo * c->es);
        if (yr != xr) memcpy(yr + (size_t)lo * c->es, xr + (size_t)lo * c->es, (size_t)(hi - lo) * c->es);
        memset(yr + (size_t)hi * c->es, 0, (size_t)(c->cols - hi) * c->es);
    }
}

void pvk_trilu(pvc_pool *pool, size_t esize, int64_t batch, int64_t rows, int64_t cols,
               int64_t k, bool upper, const void *x, void *y)
{
    /* Beyond +-(rows + cols) every k gives the same result; clamping keeps i + k in range. */
    k = PVC_MAX(PVC_MIN(k, cols + 1), -rows - 1);
    trilu_ctx c = { esize, rows, cols, k, upper, x, y };
    pvc_parallel_for(pool, batch * rows, PVC_MAX(1, GRAIN / PVC_MAX(cols, 1)), trilu_rows, &c);
}

/* ---- ReverseSequence ----------------------------------------------------------------------- */
typedef struct revseq_ctx {
    size_t         es;
    int64_t        time, batch, inner;
    bool           batch_major;
    const int64_t *lens;
    const char    *x;
    char          *y;
} revseq_ctx;

static void revseq_rows(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const revseq_ctx *c = cv;
    size_t rb = (size_t)c->inner * c->es;
    for (int64_t r = b; r < e; r++) {
        int64_t t = c->batch_major ? r % c->time : r / c->batch;
        int64_t n = c->batch_major ? r / c->time : r % c->batch;
        int64_t st = t < c->lens[n] ? c->lens[n] - 1 - t : t;
        int64_t src = c->batch_major ? n * c->time + st : st * c->batch + n;
        memcpy(c->y + (size_t)r * rb, c->x + (size_t)src * rb, rb);
    }
}

void pvk_reverse_sequence(pvc_pool *pool, size_t esize, int64_t time, int64_t batch,
                          bool batch_major, int64_t inner, const int64_t *lens, const void *x,
                          void *y)
{
    revseq_ctx c = { esize, time, batch, inner, batch_major, lens, x, y };
    pvc_parallel_for(pool, time * batch, PVC_MAX(1, GRAIN / PVC_MAX(inner, 1)), revseq_rows, &c);
}

/* ---- Hardmax ------------------------------------------------------------------------------- */
void pvk_hardmax_fill(pv_dtype t, int64_t outer, int64_t n, int64_t inner, const int64_t *idx,
                      void *y)
{
    memset(y, 0, (size_t)(outer * n * inner) * pv_dtype_size(t));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            pvc_set_f64(y, t, (o * n + idx[o * inner + i]) * inner + i, 1.0);
}

/* ---- LpNormalization ----------------------------------------------------------------------- */
typedef struct lpn_ctx {
    const float *x;
    float       *y;
    int64_t      n, inner, nblk;
    int          p;
} lpn_ctx;

static void lpn_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const lpn_ctx *c = cv;
    double acc[BLK];
    for (int64_t t = b; t < e; t++) {
        int64_t o = t / c->nblk, j0 = (t % c->nblk) * BLK, m = PVC_MIN(BLK, c->inner - j0);
        const float *x = c->x + o * c->n * c->inner + j0;
        float *y = c->y + o * c->n * c->inner + j0;
        for (int64_t j = 0; j < m; j++) acc[j] = 0.0;
        for (int64_t k = 0; k < c->n; k++) {
            const float *r = x + k * c->inner;
            if (c->p == 1) for (int64_t j = 0; j < m; j++) acc[j] += fabs((double)r[j]);
            else           for (int64_t j = 0; j < m; j++) acc[j] += (double)r[j] * r[j];
        }
        for (int64_t j = 0; j < m; j++) acc[j] = c->p == 1 ? acc[j] : sqrt(acc[j]);
        for (int64_t k = 0; k < c->n; k++) {
            const float *r = x + k * c->inner;
            float *w = y + k * c->inner;
            for (int64_t j = 0; j < m; j++) w[j] = acc[j] == 0.0 ? 0.0f : (float)(r[j] / acc[j]);
        }
    }
}

void pvk_lp_normalize_f32(pvc_pool *pool, const float *x, float *y, int64_t outer, int64_t n,
                          int64_t inner, int p)
{
    if (outer * n * inner == 0) return;
    lpn_ctx c = { x, y, n, inner, (inner + BLK - 1) / BLK, p };
    int64_t work = PVC_MAX(1, n * PVC_MIN(inner, BLK));
    pvc_parallel_for(pool, outer * c.nblk, PVC_MAX(1, 65536 / work), lpn_task, &c);
}
