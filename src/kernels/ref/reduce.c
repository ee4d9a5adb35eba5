/* Reference reductions (see reduce.h).
 *
 * Reduce: the dims are collapsed into alternating kept/reduced groups (size-1 dims dropped).
 * A task owns one block of at most BLK outputs of one output row (the trailing kept group is
 * the contiguous "inner" run) and walks the reduced groups with an odometer, so every read is
 * a contiguous run or a fixed stride. Per-dtype loops are stamped out by macros. */
#include "kernels/ref/reduce.h"

#include <math.h>
#include <string.h>

#define BLK 256

#define LD_ID(v) (v)
#define LD_H(v) pvc_f16_to_f32(v)
#define LD_B(v) pvc_bf16_to_f32(v)

/* name, storage type, accumulator type, load, sum step */
#define SUM_F(a, v) ((a) += (v))
#define SUM_I(a, v) ((a) = (int64_t)((uint64_t)(a) + (uint64_t)(v)))   /* wraps, no UB */
#define FOR_TYPES(X) \
    X(f32, float, double, LD_ID, SUM_F) X(f16, uint16_t, double, LD_H, SUM_F) \
    X(bf16, uint16_t, double, LD_B, SUM_F) X(i64, int64_t, int64_t, LD_ID, SUM_I) \
    X(i32, int32_t, int64_t, LD_ID, SUM_I) X(i8, int8_t, int64_t, LD_ID, SUM_I) \
    X(u8, uint8_t, int64_t, LD_ID, SUM_I)

/* ---- Reduce{Sum,Mean,Max,Min} ------------------------------------------------------------- */

/* acc[0..m) op= the n rows x, x + stride, ... (m contiguous elements each). */
typedef void (*acc_fn)(void *acc, const void *x, int64_t n, int64_t stride, int64_t m);

/* NaN propagates through max/min (v != v only for float NaN). */
#define MAX_STEP(a, v) do { if ((v) > (a) || (v) != (v)) (a) = (v); } while (0)
#define MIN_STEP(a, v) do { if ((v) < (a) || (v) != (v)) (a) = (v); } while (0)

/* One accumulator function per (op, type). A single contiguous run (m = 1, stride 1: reducing
 * the trailing axes) uses four partial accumulators to break the add/compare dependency chain:
 * extra sum partials start at 0, extra max/min partials at the running value; all fold back
 * with the same step. */
#define PINIT_SUM_F(a) 0
#define PINIT_SUM_I(a) 0
#define PINIT_MAX_STEP(a) (a)
#define PINIT_MIN_STEP(a) (a)
#define DEF_ACC_OP(NAME, T, A, LOAD, STEP) \
    static void NAME(void *accv, const void *xv, int64_t n, int64_t stride, int64_t m) \
    { \
        A *acc = accv; \
        const T *x = xv; \
        if (m == 1 && stride == 1) { \
            A p0 = acc[0], p1 = PINIT_##STEP(acc[0]), p2 = p1, p3 = p1; \
            int64_t r = 0; \
            for (; r + 4 <= n; r += 4) { \
                A v0 = (A)LOAD(x[r]), v1 = (A)LOAD(x[r + 1]), v2 = (A)LOAD(x[r + 2]), v3 = (A)LOAD(x[r + 3]); \
                STEP(p0, v0); STEP(p1, v1); STEP(p2, v2); STEP(p3, v3); \
            } \
            for (; r < n; r++) { A v = (A)LOAD(x[r]); STEP(p0, v); } \
            STEP(p0, p1); STEP(p0, p2); STEP(p0, p3); \
            acc[0] = p0; \
            return; \
        } \
        for (int64_t r = 0; r < n; r++, x += stride) \
            for (int64_t j = 0; j < m; j++) { A v = (A)LOAD(x[j]); STEP(acc[j], v); } \
    }
#define DEF_ACC(TN, T, A, LOAD, SUMSTEP) \
    DEF_ACC_OP(acc_sum_##TN, T, A, LOAD, SUMSTEP) \
    DEF_ACC_OP(acc_max_##TN, T, A, LOAD, MAX_STEP) \
    DEF_ACC_OP(acc_min_##TN, T, A, LOAD, MIN_STEP)
FOR_TYPES(DEF_ACC)

static acc_fn acc_table(pvk_reduce_op op, pv_dtype t)
{
#define ROW(TN) { acc_sum_##TN, acc_max_##TN, acc_min_##TN }
    static const acc_fn tab[PV_DTYPE_COUNT][3] = {
        [PV_F32] = ROW(f32), [PV_F16] = ROW(f16), [PV_BF16] = ROW(bf16), [PV_I64] = ROW(i64),
        [PV_I32] = ROW(i32), [PV_I8] = ROW(i8), [PV_U8] = ROW(u8),
    };
#undef ROW
    int k = op == PVK_REDUCE_MAX ? 1 : op == PVK_REDUCE_MIN ? 2 : 0;
    return (unsigned)t < PV_DTYPE_COUNT ? tab[t][k] : NULL;
}

typedef struct red_ctx {
    acc_fn        fn;
    pvk_reduce_op op;
    pv_dtype      t;
    bool          is_float;
    const char   *x;
    char         *y;
    size_t        es;
    int           nkeep, nred;
    int64_t       kdims[PV_MAX_RANK], kstride[PV_MAX_RANK];  /* kept groups before inner */
    int64_t       rdims[PV_MAX_RANK], rstride[PV_MAX_RANK];  /* reduced groups before the last */
    int64_t       rlen, rstr;       /* the innermost reduced group (walked by fn) */
    int64_t       combos;           /* product of rdims */
    int64_t       inner, nblk, count;
} red_ctx;

static void store_int(void *y, pv_dtype t, int64_t j, int64_t v, bool saturate)
{
    switch (t) {
    case PV_I64: ((int64_t *)y)[j] = v; break;
    case PV_I32:
        if (saturate) v = PVC_MAX(PVC_MIN(v, INT32_MAX), INT32_MIN);
        ((int32_t *)y)[j] = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case PV_I8:
        if (saturate) v = PVC_MAX(PVC_MIN(v, INT8_MAX), INT8_MIN);
        ((int8_t *)y)[j] = (int8_t)(uint8_t)(uint64_t)v;
        break;
    case PV_U8:
        if (saturate) v = PVC_MAX(PVC_MIN(v, UINT8_MAX), 0);
        ((uint8_t *)y)[j] = (uint8_t)(uint64_t)v;
        break;
    default: break;
    }
}

static void store_float(void *y, pv_dtype t, int64_t j, double v)
{
    if (t == PV_F32) ((float *)y)[j] = (float)v;
    else if (t == PV_F16) ((uint16_t *)y)[j] = pvc_f32_to_f16((float)v);
    else ((uint16_t *)y)[j] = pvc_f32_to_bf16((float)v);
}

static void red_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const red_ctx *c = cv;
    union { double d[BLK]; int64_t i[BLK]; } acc;
    for (int64_t t = b; t < e; t++) {
        int64_t row = t / c->nblk, j0 = (t % c->nblk) * BLK;
        int64_t m = PVC_MIN(BLK, c->inner - j0);
        int64_t base = 0, rem = row;
        for (int g = c->nkeep - 1; g >= 0; g--) {
            base += (rem % c->kdims[g]) * c->kstride[g];
            rem /= c->kdims[g];
        }
        for (int64_t j = 0; j < m; j++) {
            if (c->is_float)
                acc.d[j] = c->op == PVK_REDUCE_MAX ? -INFINITY : c->op == PVK_REDUCE_MIN ? INFINITY : 0.0;
            else
                acc.i[j] = c->op == PVK_REDUCE_MAX ? INT64_MIN : c->op == PVK_REDUCE_MIN ? INT64_MAX : 0;
        }
        int64_t idx[PV_MAX_RANK] = { 0 }, off = 0;
        for (int64_t q = 0; q < c->combos; q++) {
            c->fn(&acc, c->x + (size_t)(base + off + j0) * c->es, c->rlen, c->rstr, m);
            for (int g = c->nred - 1; g >= 0; g--) {
                off += c->rstride[g];
                if (++idx[g] < c->rdims[g]) break;
                off -= idx[g] * c->rstride[g];
                idx[g] = 0;
            }
        }
        int64_t o = row * c->inner + j0;
        bool mean = c->op == PVK_REDUCE_MEAN;
        for (int64_t j = 0; j < m; j++) {
            if (c->is_float)
                store_float(c->y, c->t, o + j, mean ? acc.d[j] / (double)c->count : acc.d[j]);
            else if (mean)
                store_int(c->y, c->t, o + j, c->count ? acc.i[j] / c->count : 0, false);
            else
                store_int(c->y, c->t, o + j, acc.i[j], c->op != PVK_REDUCE_SUM);
        }
    }
}

void pvk_reduce(pvc_pool *pool, pvk_reduce_op op, pv_dtype t, int rank, const int64_t *dims,
                unsigned mask, const void *x, void *y)
{
    red_ctx c;
    memset(&c, 0, sizeof c);
    c.fn = acc_table(op, t);
    if (!c.fn) return;
    c.op = op;
    c.t = t;
    c.is_float = pvc_dtype_is_float(t);
    c.x = x;
    c.y = y;
    c.es = pv_dtype_size(t);

    /* Collapse: drop size-1 dims, merge neighbours of the same kind. */
    int64_t gd[PV_MAX_RANK];
    bool gr[PV_MAX_RANK];
    int ng = 0;
    int64_t nout = 1;
    c.count = 1;
    for (int i = 0; i < rank; i++) {
        bool red = (mask >> i) & 1u;
        if (red) c.count *= dims[i];
        else nout *= dims[i];
        if (dims[i] == 1) continue;
        if (ng && gr[ng - 1] == red) gd[ng - 1] *= dims[i];
        else { gd[ng] = dims[i]; gr[ng] = red; ng++; }
    }
    if (nout == 0) return;
    int64_t st[PV_MAX_RANK], s = 1;
    for (int g = ng - 1; g >= 0; g--) { st[g] = s; s *= gd[g]; }

    c.inner = ng && !gr[ng - 1] ? gd[ng - 1] : 1;
    int last = ng && !gr[ng - 1] ? ng - 1 : ng;   /* groups before inner */
    c.rlen = 1;
    c.rstr = 0;
    int lastred = -1;
    for (int g = 0; g < last; g++) if (gr[g]) lastred = g;
    for (int g = 0; g < last; g++) {
        if (!gr[g]) { c.kdims[c.nkeep] = gd[g]; c.kstride[c.nkeep++] = st[g]; }
        else if (g == lastred) { c.rlen = gd[g]; c.rstr = st[g]; }
        else { c.rdims[c.nred] = gd[g]; c.rstride[c.nred++] = st[g]; }
    }
    c.combos = 1;
    for (int g = 0; g < c.nred; g++) c.combos *= c.rdims[g];

    c.nblk = (c.inner + BLK - 1) / BLK;
    int64_t nrow = nout / c.inner;
    int64_t work = PVC_MAX(1, c.count * PVC_MIN(c.inner, BLK));
    pvc_parallel_for(pool, nrow * c.nblk, PVC_MAX(1, 65536 / work), red_task, &c);
}

/* ---- Arg{Max,Min} ------------------------------------------------------------------------- */

typedef void (*arg_fn)(const void *x, int64_t n, int64_t inner, int64_t m, bool is_max, bool last,
                       int64_t *y);

/* The comparison is chosen once per call, outside the loops. */
#define ARG_LOOP(T, A, LOAD, CMP) \
    for (int64_t k = 1; k < n; k++) { \
        const T *row = x + k * inner; \
        for (int64_t j = 0; j < m; j++) { \
            A v = (A)LOAD(row[j]); \
            if (v CMP best[j]) { best[j] = v; y[j] = k; } \
        } \
    }
#define DEF_ARG(TN, T, A, LOAD, SUMSTEP) \
    static void arg_##TN(const void *xv, int64_t n, int64_t inner, int64_t m, bool is_max, \
                         bool last, int64_t *y) \
    { \
        const T *x = xv; \
        A best[BLK]; \
        for (int64_t j = 0; j < m; j++) { best[j] = (A)LOAD(x[j]); y[j] = 0; } \
        if (is_max && !last) ARG_LOOP(T, A, LOAD, >) \
        else if (is_max) ARG_LOOP(T, A, LOAD, >=) \
        else if (!last) ARG_LOOP(T, A, LOAD, <) \
        else ARG_LOOP(T, A, LOAD, <=) \
    }
FOR_TYPES(DEF_ARG)

typedef struct arg_ctx {
    arg_fn      fn;
    bool        is_max, last;
    const char *x;
    int64_t    *y;
    size_t      es;
    int64_t     n, inner, nblk;
} arg_ctx;

static void arg_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const arg_ctx *c = cv;
    for (int64_t t = b; t < e; t++) {
        int64_t o = t / c->nblk, j0 = (t % c->nblk) * BLK;
        int64_t m = PVC_MIN(BLK, c->inner - j0);
        c->fn(c->x + (size_t)(o * c->n * c->inner + j0) * c->es, c->n, c->inner, m, c->is_max,
              c->last, c->y + o * c->inner + j0);
    }
}

void pvk_arg_reduce(pvc_pool *pool, bool is_max, bool last, pv_dtype t, int64_t outer, int64_t n,
                    int64_t inner, const void *x, int64_t *y)
{
    static const arg_fn tab[PV_DTYPE_COUNT] = {
        [PV_F32] = arg_f32, [PV_F16] = arg_f16, [PV_BF16] = arg_bf16, [PV_I64] = arg_i64,
        [PV_I32] = arg_i32, [PV_I8] = arg_i8, [PV_U8] = arg_u8,
    };
    if ((unsigned)t >= PV_DTYPE_COUNT || !tab[t] || n <= 0 || outer * inner == 0) return;
    arg_ctx c = { tab[t], is_max, last, x, y, pv_dtype_size(t), n, inner, (inner + BLK - 1) / BLK };
    int64_t work = PVC_MAX(1, n * PVC_MIN(inner, BLK));
    pvc_parallel_for(pool, outer * c.nblk, PVC_MAX(1, 65536 / work), arg_task, &c);
}

/* ---- TopK --------------------------------------------------------------------------------- */

/* Each task takes a contiguous range of slices and owns one k-entry heap of indices. */
#define TOPK_TASKS 16
#define TOPK_WS_CAP ((int64_t)64 << 20)

static int64_t topk_tasks(int64_t slices, int64_t k)
{
    int64_t t = PVC_MIN(slices, TOPK_TASKS);
    if (k > 0) t = PVC_MIN(t, PVC_MAX(1, TOPK_WS_CAP / (k * (int64_t)sizeof(int64_t))));
    return PVC_MAX(t, 1);
}

size_t pvk_topk_workspace(int64_t outer, int64_t inner, int64_t k)
{
    return (size_t)(topk_tasks(outer * inner, k) * k) * sizeof(int64_t);
}

typedef void (*topk_fn)(const void *x, int64_t n, int64_t inner, int64_t k, bool largest,
                        int64_t *h, void *vals, int64_t *idx);

/* better(a, b): element a ranks before b. NaN ranks as the largest value (as in numpy and
 * torch); ties go to the lower index. The heap keeps the worst kept element at its root. */
#define DEF_TOPK(TN, T, A, LOAD, SUMSTEP) \
    static inline bool better_##TN(const T *x, int64_t inner, bool largest, int64_t a, int64_t b) \
    { \
        A va = (A)LOAD(x[a * inner]), vb = (A)LOAD(x[b * inner]); \
        if (va != va || vb != vb) { \
            if (va != va && vb != vb) return a < b; \
            return (va != va) == largest; \
        } \
        if (va != vb) return largest ? va > vb : va < vb; \
        return a < b; \
    } \
    static void sift_##TN(const T *x, int64_t inner, bool largest, int64_t *h, int64_t i, int64_t size) \
    { \
        for (;;) { \
            int64_t l = 2 * i + 1, w = i; \
            if (l < size && better_##TN(x, inner, largest, h[w], h[l])) w = l; \
            if (l + 1 < size && better_##TN(x, inner, largest, h[w], h[l + 1])) w = l + 1; \
            if (w == i) return; \
            int64_t tmp = h[i]; h[i] = h[w]; h[w] = tmp; \
            i = w; \
        } \
    } \
    static void topk_##TN(const void *xv, int64_t n, int64_t inner, int64_t k, bool largest, \
                          int64_t *h, void *valsv, int64_t *idx) \
    { \
        const T *x = xv; \
        T *vals = valsv; \
        if (k <= 0) return; \
        for (int64_t i = 0; i < k; i++) h[i] = i; \
        for (int64_t i = k / 2 - 1; i >= 0; i--) sift_##TN(x, inner, largest, h, i, k); \
        for (int64_t i = k; i < n; i++) \
            if (better_##TN(x, inner, largest, i, h[0])) { h[0] = i; sift_##TN(x, inner, largest, h, 0, k); } \
        for (int64_t s = k - 1; s > 0; s--) { \
            int64_t tmp = h[0]; h[0] = h[s]; h[s] = tmp; \
            sift_##TN(x, inner, largest, h, 0, s); \
        } \
        for (int64_t j = 0; j < k; j++) { idx[j * inner] = h[j]; vals[j * inner] = x[h[j] * inner]; } \
    }
FOR_TYPES(DEF_TOPK)

typedef struct topk_ctx {
    topk_fn     fn;
    const char *x;
    char       *vals;
    int64_t    *idx, *ws;
    size_t      es;
    int64_t     n, inner, k, slices, ntasks;
    bool        largest;
} topk_ctx;

static void topk_task(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const topk_ctx *c = cv;
    for (int64_t t = b; t < e; t++) {
        int64_t *h = c->ws + t * c->k;
        int64_t s0 = t * c->slices / c->ntasks, s1 = (t + 1) * c->slices / c->ntasks;
        for (int64_t s = s0; s < s1; s++) {
            int64_t o = s / c->inner, i = s % c->inner;
            size_t xo = (size_t)(o * c->n * c->inner + i), yo = (size_t)(o * c->k * c->inner + i);
            c->fn(c->x + xo * c->es, c->n, c->inner, c->k, c->largest, h, c->vals + yo * c->es,
                  c->idx + yo);
        }
    }
}

void pvk_topk(pvc_pool *pool, pv_dtype t, int64_t outer, int64_t n, int64_t inner, int64_t k,
              bool largest, const void *x, void *vals, int64_t *idx, void *ws)
{
    static const topk_fn tab[PV_DTYPE_COUNT] = {
        [PV_F32] = topk_f32, [PV_F16] = topk_f16, [PV_BF16] = topk_bf16, [PV_I64] = topk_i64,
        [PV_I32] = topk_i32, [PV_I8] = topk_i8, [PV_U8] = topk_u8,
    };
    int64_t slices = outer * inner;
    if ((unsigned)t >= PV_DTYPE_COUNT || !tab[t] || slices == 0 || k <= 0 || k > n) return;
    topk_ctx c = { tab[t], x, vals, idx, ws, pv_dtype_size(t), n, inner, k, slices,
                   topk_tasks(slices, k), largest };
    pvc_parallel_for(pool, c.ntasks, 1, topk_task, &c);
}
