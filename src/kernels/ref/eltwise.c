/* Reference elementwise kernels (see eltwise.h).
 *
 * Each (op, dtype) pair gets its own plain loop, chosen once per call (or per row), so the
 * compiler sees a simple body it can vectorize. Binary rows come in four stride variants
 * (vector/vector, vector/scalar, scalar/vector, scalar/scalar) from the broadcast iterator.
 * F16/BF16 go through f32 in stack blocks of BLK elements. Signed integer arithmetic is done in
 * the unsigned type of the same width so overflow wraps instead of being undefined. */
#include "kernels/ref/eltwise.h"
#include "kernels/ref/eltwise_simd.h"

#include <string.h>

#define GRAIN 16384      /* elements per parallel chunk */
#define BLK   256        /* f32 staging block for F16/BF16 */

/* ---- f32 staging ---------------------------------------------------------------------------- */
static void load_f32(pv_dtype t, const void *x, int64_t n, float *o)
{
    const uint16_t *h = x;
    if (t == PV_F32) memcpy(o, x, (size_t)n * sizeof(float));
    else if (t == PV_F16) for (int64_t i = 0; i < n; i++) o[i] = pvc_f16_to_f32(h[i]);
    else for (int64_t i = 0; i < n; i++) o[i] = pvc_bf16_to_f32(h[i]);
}

static void store_f32(pv_dtype t, const float *v, int64_t n, void *y)
{
    uint16_t *h = y;
    if (t == PV_F32) memcpy(y, v, (size_t)n * sizeof(float));
    else if (t == PV_F16) for (int64_t i = 0; i < n; i++) h[i] = pvc_f32_to_f16(v[i]);
    else for (int64_t i = 0; i < n; i++) h[i] = pvc_f32_to_bf16(v[i]);
}

/* ---- unary ---------------------------------------------------------------------------------- */
bool pvk_unary_supported(pvk_unary_op op, pv_dtype t)
{
    switch (op) {
    case PVK_UN_NOT: return t == PV_BOOL;
    case PVK_UN_NEG: case PVK_UN_ABS: case PVK_UN_RELU: case PVK_UN_CLIP:
        return pvc_dtype_is_float(t) || pvc_dtype_is_int(t);
    case PVK_UN_COUNT: return false;
    default: return pvc_dtype_is_float(t);
    }
}

/* Clip is min(max(v, lo), hi): when lo > hi every value becomes hi (ONNX); NaN stays NaN. */
static inline float clip_hi(float t, float hi) { return t > hi ? hi : t; }

static void unary_f32(pvk_unary_op op, const float *x, float *y, int64_t n, const pvk_unary_args *a)
{
    float al = a->alpha, lo = a->lo, hi = a->hi;
#define MAP(EXPR) for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (EXPR); } return
    switch (op) {
    case PVK_UN_NEG:        MAP(-v);
    case PVK_UN_ABS:        MAP(fabsf(v));
    case PVK_UN_SQRT:       MAP(sqrtf(v));
    case PVK_UN_RECIPROCAL: MAP(1.0f / v);
    case PVK_UN_EXP:        MAP(expf(v));
    case PVK_UN_LOG:        MAP(logf(v));
    case PVK_UN_SIN:        MAP(sinf(v));
    case PVK_UN_COS:        MAP(cosf(v));
    case PVK_UN_ERF:        MAP(erff(v));
    case PVK_UN_TANH:       MAP(tanhf(v));
    case PVK_UN_SIGMOID:    MAP(1.0f / (1.0f + expf(-v)));
    /* Relu, LeakyRelu and Clip (for lo <= hi) match pvk_act_apply: fused == unfused. */
    case PVK_UN_RELU:       MAP(v > 0.0f ? v : 0.0f);
    case PVK_UN_LEAKY_RELU: MAP(v >= 0.0f ? v : v * al);
    case PVK_UN_CLIP:       MAP(clip_hi(v < lo ? lo : v, hi));
    case PVK_UN_FLOOR:      MAP(floorf(v));
    case PVK_UN_CEIL:       MAP(ceilf(v));
    case PVK_UN_ROUND:      MAP(nearbyintf(v));   /* default rounding mode: half to even */
    case PVK_UN_TAN:        MAP(tanf(v));
    case PVK_UN_ASIN:       MAP(asinf(v));
    case PVK_UN_ACOS:       MAP(acosf(v));
    case PVK_UN_ATAN:       MAP(atanf(v));
    case PVK_UN_SINH:       MAP(sinhf(v));
    case PVK_UN_COSH:       MAP(coshf(v));
    case PVK_UN_ASINH:      MAP(asinhf(v));
    case PVK_UN_ACOSH:      MAP(acoshf(v));
    case PVK_UN_ATANH:      MAP(atanhf(v));
    case PVK_UN_NOT: case PVK_UN_COUNT: return;
    }
#undef MAP
}

#define UNARY_SIGNED(NAME, T, UT)                                                               \
    static void NAME(pvk_unary_op op, const void *xv, void *yv, int64_t n, const pvk_unary_args *a) \
    {                                                                                           \
        const T *x = xv;                                                                        \
        T *y = yv;                                                                              \
        int64_t lo = a->ilo, hi = a->ihi;                                                       \
        switch (op) {                                                                           \
        case PVK_UN_NEG:                                                                        \
            for (int64_t i = 0; i < n; i++) y[i] = (T)(0 - (UT)x[i]);                           \
            break;                                                                              \
        case PVK_UN_ABS:                                                                        \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? (T)(0 - (UT)x[i]) : x[i];         \
            break;                                                                              \
        case PVK_UN_RELU:                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;                         \
            break;                                                                              \
        case PVK_UN_CLIP:                                                                       \
            for (int64_t i = 0; i < n; i++) { int64_t t = x[i] < lo ? lo : x[i]; y[i] = (T)(t > hi ? hi : t); } \
            break;                                                                              \
        default: break;                                                                         \
        }                                                                                       \
    }
UNARY_SIGNED(unary_i64, int64_t, uint64_t)
UNARY_SIGNED(unary_i32, int32_t, uint32_t)
UNARY_SIGNED(unary_i8, int8_t, uint8_t)

static void unary_u8(pvk_unary_op op, const void *xv, void *yv, int64_t n, const pvk_unary_args *a)
{
    const uint8_t *x = xv;
    uint8_t *y = yv;
    int64_t lo = a->ilo, hi = a->ihi;
    switch (op) {
    case PVK_UN_NEG:
        for (int64_t i = 0; i < n; i++) y[i] = (uint8_t)(0 - x[i]);
        break;
    case PVK_UN_ABS: case PVK_UN_RELU:   /* identities on unsigned values */
        if (x != y) memmove(y, x, (size_t)n);
        break;
    case PVK_UN_CLIP:
        for (int64_t i = 0; i < n; i++) {
            int64_t t = x[i] < lo ? lo : x[i];
            y[i] = (uint8_t)(t > hi ? hi : t);
        }
        break;
    default: break;
    }
}

typedef struct un_job {
    pvk_unary_op          op;
    pv_dtype              t;
    const char           *x;
    char                 *y;
    const pvk_unary_args *a;
} un_job;

static void un_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const un_job *j = ctx;
    int64_t es = (int64_t)pv_dtype_size(j->t), n = e - b;
    const void *x = j->x + b * es;
    void *y = j->y + b * es;
    switch (j->t) {
    case PV_F32: unary_f32(j->op, x, y, n, j->a); break;
    case PV_F16: case PV_BF16: {
        float buf[BLK];
        for (int64_t i = 0; i < n; i += BLK) {
            int64_t m = PVC_MIN(BLK, n - i);
            load_f32(j->t, (const uint16_t *)x + i, m, buf);
            unary_f32(j->op, buf, buf, m, j->a);
            store_f32(j->t, buf, m, (uint16_t *)y + i);
        }
        break;
    }
    case PV_I64: unary_i64(j->op, x, y, n, j->a); break;
    case PV_I32: unary_i32(j->op, x, y, n, j->a); break;
    case PV_I8: unary_i8(j->op, x, y, n, j->a); break;
    case PV_U8: unary_u8(j->op, x, y, n, j->a); break;
    case PV_BOOL: {
        const uint8_t *xb = x;
        uint8_t *yb = y;
        for (int64_t i = 0; i < n; i++) yb[i] = xb[i] == 0;   /* only NOT takes bool */
        break;
    }
    default: break;
    }
}

void pvk_unary(pvc_pool *pool, pvk_unary_op op, pv_dtype t, const void *x, void *y, int64_t n,
               const pvk_unary_args *a)
{
    un_job j = { op, t, x, y, a };
    pvc_parallel_for(pool, n, GRAIN, un_chunk, &j);
}

/* ---- binary: scalar helpers ----------------------------------------------------------------- */
/* Integer division truncates toward zero; by zero gives 0; MIN / -1 wraps to MIN. */
static inline int64_t idiv(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    return a / b;
}

/* Remainder with the sign of the divisor (Python %); by zero gives 0. */
static inline int64_t imod(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

/* Remainder with the sign of the dividend (C %); by zero gives 0. */
static inline int64_t ifmod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }

/* Exact integer power by squaring (wrapping); negative exponents give the truncated
 * reciprocal: 1 for base 1, +-1 for base -1, else 0 (0 also for 0 ** negative). */
static inline int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    for (uint64_t k = (uint64_t)e; k; k >>= 1) {
        if (k & 1) r *= b;
        b *= b;
    }
    return (int64_t)r;
}

static inline float fmin_nan(float a, float b) { return a < b || a != a ? a : b; }
static inline float fmax_nan(float a, float b) { return a > b || a != a ? a : b; }

/* ---- binary: typed rows --------------------------------------------------------------------- */
#define ROW2(NAME, TA, TY, EXPR)                                                                  \
    static void NAME(const void *ctx, int64_t n, void *yv, const void *const *x, const int64_t *s) \
    {                                                                                             \
        (void)ctx;                                                                                \
        const TA *A = x[0], *B = x[1];                                                            \
        TY *Y = yv;                                                                               \
        if (s[0] && s[1]) {                                                                       \
            for (int64_t i = 0; i < n; i++) { TA a = A[i], b = B[i]; Y[i] = (TY)(EXPR); }         \
        } else if (s[0]) {                                                                        \
            TA b = B[0];                                                                          \
            for (int64_t i = 0; i < n; i++) { TA a = A[i]; Y[i] = (TY)(EXPR); }                   \
        } else if (s[1]) {                                                                        \
            TA a = A[0];                                                                          \
            for (int64_t i = 0; i < n; i++) { TA b = B[i]; Y[i] = (TY)(EXPR); }                   \
        } else {                                                                                  \
            TA a = A[0], b = B[0];                                                                \
            TY v = (TY)(EXPR);                                                                    \
            for (int64_t i = 0; i < n; i++) Y[i] = v;                                             \
        }                                                                                         \
    }

#define CMP_ROWS(SFX, T)                                                                          \
    ROW2(eq_##SFX, T, uint8_t, a == b)                                                            \
    ROW2(lt_##SFX, T, uint8_t, a < b)                                                             \
    ROW2(gt_##SFX, T, uint8_t, a > b)                                                             \
    ROW2(le_##SFX, T, uint8_t, a <= b)                                                            \
    ROW2(ge_##SFX, T, uint8_t, a >= b)

#define INT_ROWS(SFX, T, UT)                                                                      \
    ROW2(add_##SFX, T, T, (UT)a + (UT)b)                                                          \
    ROW2(sub_##SFX, T, T, (UT)a - (UT)b)                                                          \
    ROW2(mul_##SFX, T, T, (UT)a * (UT)b)                                                          \
    ROW2(div_##SFX, T, T, idiv(a, b))                                                             \
    ROW2(pow_##SFX, T, T, ipow(a, b))                                                             \
    ROW2(mod_##SFX, T, T, imod(a, b))                                                             \
    ROW2(fmod_##SFX, T, T, ifmod(a, b))                                                           \
    ROW2(min_##SFX, T, T, a < b ? a : b)                                                          \
    ROW2(max_##SFX, T, T, a > b ? a : b)                                                          \
    CMP_ROWS(SFX, T)

INT_ROWS(i64, int64_t, uint64_t)
INT_ROWS(i32, int32_t, uint32_t)
INT_ROWS(i8, int8_t, uint8_t)
INT_ROWS(u8, uint8_t, uint8_t)

ROW2(add_f32, float, float, a + b)
ROW2(sub_f32, float, float, a - b)
ROW2(mul_f32, float, float, a * b)
ROW2(div_f32, float, float, a / b)
ROW2(fmod_f32, float, float, fmodf(a, b))
ROW2(min_f32, float, float, fmin_nan(a, b))
ROW2(max_f32, float, float, fmax_nan(a, b))
CMP_ROWS(f32, float)

/* Pow gets its own row: x ** 2 (variance in decomposed LayerNorms) is worth a multiply. */
static void pow_f32(const void *ctx, int64_t n, void *yv, const void *const *x, const int64_t *s)
{
    (void)ctx;
    const float *A = x[0], *B = x[1];
    float *Y = yv;
    if (s[0] && !s[1] && B[0] == 2.0f) {
        for (int64_t i = 0; i < n; i++) Y[i] = A[i] * A[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) Y[i] = powf(A[i * s[0]], B[i * s[1]]);
}

ROW2(eq_b, uint8_t, uint8_t, (a != 0) == (b != 0))
ROW2(and_b, uint8_t, uint8_t, (a != 0) & (b != 0))
ROW2(or_b, uint8_t, uint8_t, (a != 0) | (b != 0))

#define NUM_ROWS(OP) { [PV_F32] = OP##_f32, [PV_I64] = OP##_i64, [PV_I32] = OP##_i32,            \
                       [PV_I8] = OP##_i8, [PV_U8] = OP##_u8 }
#define INTS_ONLY(OP) { [PV_I64] = OP##_i64, [PV_I32] = OP##_i32, [PV_I8] = OP##_i8, [PV_U8] = OP##_u8 }

/* Row per (op, dtype); NULL = not implemented. F16/BF16 use the F32 row through staging. */
static const pvk_row_fn rows[PVK_BIN_COUNT][PV_DTYPE_COUNT] = {
    [PVK_BIN_ADD] = NUM_ROWS(add),
    [PVK_BIN_SUB] = NUM_ROWS(sub),
    [PVK_BIN_MUL] = NUM_ROWS(mul),
    [PVK_BIN_DIV] = NUM_ROWS(div),
    [PVK_BIN_POW] = NUM_ROWS(pow),
    [PVK_BIN_MOD] = INTS_ONLY(mod),
    [PVK_BIN_FMOD] = NUM_ROWS(fmod),
    [PVK_BIN_MIN] = NUM_ROWS(min),
    [PVK_BIN_MAX] = NUM_ROWS(max),
    [PVK_BIN_EQ] = { [PV_F32] = eq_f32, [PV_I64] = eq_i64, [PV_I32] = eq_i32, [PV_I8] = eq_i8,
                     [PV_U8] = eq_u8, [PV_BOOL] = eq_b },
    [PVK_BIN_LT] = NUM_ROWS(lt),
    [PVK_BIN_GT] = NUM_ROWS(gt),
    [PVK_BIN_LE] = NUM_ROWS(le),
    [PVK_BIN_GE] = NUM_ROWS(ge),
    [PVK_BIN_AND] = { [PV_BOOL] = and_b },
    [PVK_BIN_OR] = { [PV_BOOL] = or_b },
};

/* ---- binary: staged and mixed-dtype rows ---------------------------------------------------- */
typedef struct bin_ctx {
    pv_dtype   ta, tb, ty;
    pvk_row_fn f32row;
} bin_ctx;

/* F16/BF16 operands: convert BLK elements (or the one broadcast element) to f32, run the F32
 * row, convert back (predicates write their bool output directly). */
static void row_staged(const void *ctx, int64_t n, void *y, const void *const *x, const int64_t *s)
{
    const bin_ctx *c = ctx;
    size_t ea = pv_dtype_size(c->ta), eb = pv_dtype_size(c->tb), ey = pv_dtype_size(c->ty);
    float a[BLK], b[BLK], o[BLK];
    const void *xs[2] = { a, b };
    for (int64_t i = 0; i < n; i += BLK) {
        int64_t m = PVC_MIN(BLK, n - i);
        load_f32(c->ta, (const char *)x[0] + (size_t)(i * s[0]) * ea, s[0] ? m : 1, a);
        load_f32(c->tb, (const char *)x[1] + (size_t)(i * s[1]) * eb, s[1] ? m : 1, b);
        char *yi = (char *)y + (size_t)i * ey;
        if (c->ty == PV_BOOL) c->f32row(NULL, m, yi, xs, s);
        else {
            c->f32row(NULL, m, o, xs, s);
            store_f32(c->ty, o, m, yi);
        }
    }
}

/* Pow with different base and exponent dtypes: element by element, exact when both are
 * integers, else through double. */
static void row_pow_mixed(const void *ctx, int64_t n, void *y, const void *const *x, const int64_t *s)
{
    const bin_ctx *c = ctx;
    bool ints = pvc_dtype_is_int(c->ta) && pvc_dtype_is_int(c->tb);
    for (int64_t i = 0; i < n; i++) {
        if (ints)
            pvc_set_i64(y, c->ty, i, ipow(pvc_get_i64(x[0], c->ta, i * s[0]), pvc_get_i64(x[1], c->tb, i * s[1])));
        else
            pvc_set_f64(y, c->ty, i, pow(pvc_get_f64(x[0], c->ta, i * s[0]), pvc_get_f64(x[1], c->tb, i * s[1])));
    }
}

bool pvk_binary_is_predicate(pvk_binary_op op) { return op >= PVK_BIN_EQ && op <= PVK_BIN_OR; }

bool pvk_binary_supported(pvk_binary_op op, pv_dtype ta, pv_dtype tb)
{
    if ((unsigned)op >= PVK_BIN_COUNT || (unsigned)ta >= PV_DTYPE_COUNT || (unsigned)tb >= PV_DTYPE_COUNT)
        return false;
    if (ta != tb)
        return op == PVK_BIN_POW && ta != PV_BOOL && tb != PV_BOOL;
    if (ta == PV_F16 || ta == PV_BF16) return rows[op][PV_F32] != NULL;
    return rows[op][ta] != NULL;
}

void pvk_binary(pvc_pool *pool, pvk_binary_op op, const pvc_tensor *a, const pvc_tensor *b,
                pvc_tensor *y)
{
    bin_ctx c = { a->dtype, b->dtype, y->dtype, rows[op][PV_F32] };
    pvk_row_fn fn;
    if (a->dtype != b->dtype) fn = row_pow_mixed;
    else if (a->dtype == PV_F16 || a->dtype == PV_BF16) fn = row_staged;
    else fn = rows[op][a->dtype];
    const pvc_tensor *in[2] = { a, b };
    pvk_broadcast_rows(pool, 2, in, y, fn, &c);
}

/* ---- binary: vectorized f32 rows ------------------------------------------------------------ */
typedef struct vbin_ctx {
    pvk_vbin_fn    fn;
    pvk_vbin_op    op;
    const pvg_act *act;
} vbin_ctx;

static void row_vec(const void *ctx, int64_t n, void *y, const void *const *x, const int64_t *s)
{
    const vbin_ctx *c = ctx;
    c->fn(c->op, x[0], s[0], x[1], s[1], y, n, c->act);
}

bool pvk_binary_f32_fast(pvc_pool *pool, pvk_binary_op op, const pvc_tensor *a, const pvc_tensor *b,
                         pvc_tensor *y, const pvg_act *act)
{
    static const int vop[PVK_BIN_COUNT] = { [PVK_BIN_ADD] = PVK_VB_ADD + 1, [PVK_BIN_SUB] = PVK_VB_SUB + 1,
                                            [PVK_BIN_MUL] = PVK_VB_MUL + 1, [PVK_BIN_DIV] = PVK_VB_DIV + 1 };
    if ((unsigned)op >= PVK_BIN_COUNT || !vop[op] || a->dtype != PV_F32 || b->dtype != PV_F32 || y->dtype != PV_F32)
        return false;
    vbin_ctx c = { pvk_vec_selected()->binary, (pvk_vbin_op)(vop[op] - 1),
                   act && act->kind != PVG_ACT_NONE ? act : NULL };
    const pvc_tensor *in[2] = { a, b };
    pvk_broadcast_rows(pool, 2, in, y, row_vec, &c);
    return true;
}

/* ---- Where ---------------------------------------------------------------------------------- */
#define WHERE_ROW(NAME, T)                                                                        \
    static void NAME(const void *ctx, int64_t n, void *yv, const void *const *x, const int64_t *s) \
    {                                                                                             \
        (void)ctx;                                                                                \
        const uint8_t *c = x[0];                                                                  \
        const T *a = x[1], *b = x[2];                                                             \
        T *y = yv;                                                                                \
        if (s[0] && s[1] && s[2])                                                                 \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? a[i] : b[i];                            \
        else                                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = c[i * s[0]] ? a[i * s[1]] : b[i * s[2]];       \
    }
WHERE_ROW(where_f32, float)
WHERE_ROW(where_u16, uint16_t)
WHERE_ROW(where_i64, int64_t)
WHERE_ROW(where_i32, int32_t)
WHERE_ROW(where_i8, int8_t)
WHERE_ROW(where_u8, uint8_t)

void pvk_where(pvc_pool *pool, const pvc_tensor *cond, const pvc_tensor *x, const pvc_tensor *y,
               pvc_tensor *out)
{
    pvk_row_fn fn;
    switch (x->dtype) {
    case PV_F32: fn = where_f32; break;
    case PV_F16: case PV_BF16: fn = where_u16; break;
    case PV_I64: fn = where_i64; break;
    case PV_I32: fn = where_i32; break;
    case PV_I8: fn = where_i8; break;
    default: fn = where_u8; break;   /* U8, BOOL */
    }
    const pvc_tensor *in[3] = { cond, x, y };
    pvk_broadcast_rows(pool, 3, in, out, fn, NULL);
}

/* ---- Cast ----------------------------------------------------------------------------------- */
/* Values travel through one of two carriers: float (from F32/F16/BF16, exact) or int64 (from
 * the integers and bool). Blocks of BLK keep in-place casts between equal sizes safe. */
static void load_i64(pv_dtype t, const void *x, int64_t n, int64_t *o)
{
    switch (t) {
    case PV_I64: memcpy(o, x, (size_t)n * sizeof *o); break;
    case PV_I32: for (int64_t i = 0; i < n; i++) o[i] = ((const int32_t *)x)[i]; break;
    case PV_I8: for (int64_t i = 0; i < n; i++) o[i] = ((const int8_t *)x)[i]; break;
    case PV_U8: for (int64_t i = 0; i < n; i++) o[i] = ((const uint8_t *)x)[i]; break;
    default: for (int64_t i = 0; i < n; i++) o[i] = ((const uint8_t *)x)[i] != 0; break;   /* BOOL */
    }
}

/* Truncates toward zero into [lo, hi]; NaN -> 0. (float)lo is exact and (float)hi is hi or
 * the power of two above it, so every value that passes both tests converts without overflow. */
static inline int64_t f2i(float v, int64_t lo, int64_t hi)
{
    if (v != v) return 0;
    if (v <= (float)lo) return lo;
    if (v >= (float)hi) return hi;
    return (int64_t)v;
}

static void store_from_f32(pv_dtype t, const float *v, int64_t n, void *y)
{
    switch (t) {
    case PV_F32: case PV_F16: case PV_BF16: store_f32(t, v, n, y); break;
    case PV_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)y)[i] = f2i(v[i], INT64_MIN, INT64_MAX); break;
    case PV_I32: for (int64_t i = 0; i < n; i++) ((int32_t *)y)[i] = (int32_t)f2i(v[i], INT32_MIN, INT32_MAX); break;
    case PV_I8: for (int64_t i = 0; i < n; i++) ((int8_t *)y)[i] = (int8_t)f2i(v[i], INT8_MIN, INT8_MAX); break;
    case PV_U8: for (int64_t i = 0; i < n; i++) ((uint8_t *)y)[i] = (uint8_t)f2i(v[i], 0, UINT8_MAX); break;
    default: for (int64_t i = 0; i < n; i++) ((uint8_t *)y)[i] = v[i] != 0.0f; break;   /* BOOL */
    }
}

static void store_from_i64(pv_dtype t, const int64_t *v, int64_t n, void *y)
{
    switch (t) {
    case PV_F32: for (int64_t i = 0; i < n; i++) ((float *)y)[i] = (float)v[i]; break;
    case PV_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = pvc_f32_to_f16((float)v[i]); break;
    case PV_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = pvc_f32_to_bf16((float)v[i]); break;
    case PV_I64: memcpy(y, v, (size_t)n * sizeof *v); break;
    case PV_I32: for (int64_t i = 0; i < n; i++) ((int32_t *)y)[i] = (int32_t)v[i]; break;
    case PV_I8: for (int64_t i = 0; i < n; i++) ((int8_t *)y)[i] = (int8_t)v[i]; break;
    case PV_U8: for (int64_t i = 0; i < n; i++) ((uint8_t *)y)[i] = (uint8_t)v[i]; break;
    default: for (int64_t i = 0; i < n; i++) ((uint8_t *)y)[i] = v[i] != 0; break;   /* BOOL */
    }
}

typedef struct cast_job {
    pv_dtype    ts, td;
    const char *src;
    char       *dst;
} cast_job;

static void cast_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const cast_job *j = ctx;
    int64_t es = (int64_t)pv_dtype_size(j->ts), ed = (int64_t)pv_dtype_size(j->td);
    bool from_float = pvc_dtype_is_float(j->ts);
    for (int64_t i = b; i < e; i += BLK) {
        int64_t m = PVC_MIN(BLK, e - i);
        if (from_float) {
            float f[BLK];
            load_f32(j->ts, j->src + i * es, m, f);
            store_from_f32(j->td, f, m, j->dst + i * ed);
        } else {
            int64_t v[BLK];
            load_i64(j->ts, j->src + i * es, m, v);
            store_from_i64(j->td, v, m, j->dst + i * ed);
        }
    }
}

void pvk_cast(pvc_pool *pool, pv_dtype ts, const void *src, pv_dtype td, void *dst, int64_t n)
{
    if (n <= 0) return;
    if (ts == td) {
        if (src != dst) memmove(dst, src, (size_t)n * pv_dtype_size(ts));
        return;
    }
    cast_job j = { ts, td, src, dst };
    pvc_parallel_for(pool, n, GRAIN, cast_chunk, &j);
}
