/* Reference data-movement kernels: a strided N-D copy, the *Elements index walk and scatter
 * reductions.
 *
 * pvk_copy_view first coalesces the view (drops 1-dims, merges dims that are contiguous in the
 * source), then picks one of three row strategies:
 *   - the innermost source stride is 1 or 0: each destination row is one memcpy or one fill;
 *   - some other dim has source stride 1 (a transpose): copy 32x32 tiles so that both the
 *     reads and the writes stay within a few cache lines;
 *   - otherwise: a plain strided element loop per row.
 * Elements are moved with fixed-size memcpy (1, 2, 4, 8 bytes), which compilers turn into a
 * single load/store and which keeps the code free of type punning. */
#include "kernels/ref/movement.h"

#include <math.h>
#include <string.h>

#define TILE 32
#define ROW_GRAIN_ELEMS 32768

void pvk_contig_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void pvk_axis_walk_begin(pvk_axis_walk *w, int rank, const int64_t *ddims, const int64_t *idims, int axis)
{
    w->rank = rank;
    w->axis = axis;
    w->idims = idims;
    pvk_contig_strides(rank, ddims, w->ds);
    for (int d = 0; d < rank; d++) w->ci[d] = 0;
    w->base = 0;
}

void pvk_axis_walk_next(pvk_axis_walk *w)
{
    for (int d = w->rank - 1; d >= 0; d--) {              /* odometer over the indices' dims */
        if (d != w->axis) w->base += w->ds[d];
        if (++w->ci[d] < w->idims[d]) break;
        if (d != w->axis) w->base -= w->ds[d] * w->idims[d];
        w->ci[d] = 0;
    }
}

void pvk_fill(void *dst, const void *val, size_t esize, int64_t n)
{
    if (n <= 0) return;
    unsigned char *d = dst;
    memcpy(d, val, esize);
    /* Doubling copies: log2(n) memcpy calls instead of n element stores. */
    size_t done = esize, total = (size_t)n * esize;
    while (done < total) {
        size_t k = done < total - done ? done : total - done;
        memcpy(d + done, d, k);
        done += k;
    }
}

typedef struct bytes_ctx { unsigned char *dst; const unsigned char *src; } bytes_ctx;

static void bytes_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    bytes_ctx *c = ctx;
    memcpy(c->dst + b, c->src + b, (size_t)(e - b));
}

void pvk_copy_bytes(pvc_pool *pool, void *dst, const void *src, size_t n)
{
    if (n == 0 || dst == src) return;
    if (!pool || n < (1u << 20)) {
        memcpy(dst, src, n);
        return;
    }
    bytes_ctx c = { dst, src };
    pvc_parallel_for(pool, (int64_t)n, 1 << 18, bytes_chunk, &c);
}

void pvk_copy_rows(pvc_pool *pool, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                   int64_t rows, size_t chunk)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (rows == 1) pvk_copy_bytes(pool, d, s, chunk);
    else
        for (int64_t r = 0; r < rows; r++) memcpy(d + (size_t)r * dst_pitch, s + (size_t)r * src_pitch, chunk);
}

/* ---- strided copy ------------------------------------------------------------------------ */

typedef struct copy_ctx {
    const unsigned char *src;
    unsigned char       *dst;
    size_t               es;
    int                  r;                         /* coalesced rank, >= 1 */
    int64_t              d[PVK_VIEW_MAX_RANK];      /* coalesced dims */
    int64_t              s[PVK_VIEW_MAX_RANK];      /* source strides (elements) */
    int64_t              t[PVK_VIEW_MAX_RANK];      /* destination strides (elements) */
    int                  tj;                        /* tiled mode: dim with source stride 1 */
    int64_t              nbj;                       /* tiled mode: tiles along dim tj */
} copy_ctx;

/* n elements, source stride ss (elements), into contiguous dst. */
static void strided_row(unsigned char *dst, const unsigned char *src, size_t es, int64_t n, int64_t ss)
{
#define ROW_LOOP(SZ) for (int64_t i = 0; i < n; i++) memcpy(dst + i * (SZ), src + i * ss * (SZ), SZ)
    switch (es) {
    case 1: ROW_LOOP(1); break;
    case 2: ROW_LOOP(2); break;
    case 4: ROW_LOOP(4); break;
    case 8: ROW_LOOP(8); break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * es, src + i * ss * (int64_t)es, es);
    }
#undef ROW_LOOP
}

static void copy_row(const copy_ctx *c, unsigned char *dst, const unsigned char *src)
{
    int64_t n = c->d[c->r - 1], ss = c->s[c->r - 1];
    if (ss == 1) memcpy(dst, src, (size_t)n * c->es);
    else if (ss == 0) pvk_fill(dst, src, c->es, n);
    else strided_row(dst, src, c->es, n, ss);
}

static void rows_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const copy_ctx *c = ctx;
    int outer = c->r - 1;
    int64_t idx[PVK_VIEW_MAX_RANK];
    int64_t rem = b, soff = 0;
    for (int i = outer - 1; i >= 0; i--) {
        idx[i] = rem % c->d[i];
        rem /= c->d[i];
        soff += idx[i] * c->s[i];
    }
    int64_t n = c->d[c->r - 1];
    const int64_t es = (int64_t)c->es;
    for (int64_t w = b; w < e; w++) {
        copy_row(c, c->dst + w * n * es, c->src + soff * es);
        for (int i = outer - 1; i >= 0; i--) {          /* odometer step */
            soff += c->s[i];
            if (++idx[i] < c->d[i]) break;
            soff -= c->s[i] * c->d[i];
            idx[i] = 0;
        }
    }
}

/* One tile: rows jj of dim tj (source stride 1) x columns ll of the last dim (source stride sn). */
static void tile_copy(unsigned char *dst, const unsigned char *src, size_t es, int64_t nj, int64_t nl,
                      int64_t dj, int64_t sn)
{
#define TILE_LOOP(SZ)                                                                   \
    for (int64_t jj = 0; jj < nj; jj++)                                                 \
        for (int64_t ll = 0; ll < nl; ll++)                                             \
            memcpy(dst + (jj * dj + ll) * (SZ), src + (jj + ll * sn) * (SZ), SZ)
    switch (es) {
    case 1: TILE_LOOP(1); break;
    case 2: TILE_LOOP(2); break;
    case 4: TILE_LOOP(4); break;
    case 8: TILE_LOOP(8); break;
    default:
        for (int64_t jj = 0; jj < nj; jj++)
            for (int64_t ll = 0; ll < nl; ll++)
                memcpy(dst + (size_t)(jj * dj + ll) * es, src + (jj + ll * sn) * (int64_t)es, es);
    }
#undef TILE_LOOP
}

static void tiles_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const copy_ctx *c = ctx;
    const int last = c->r - 1, j = c->tj;
    const int64_t es = (int64_t)c->es, n = c->d[last], sn = c->s[last];
    for (int64_t w = b; w < e; w++) {
        int64_t jb = w % c->nbj, rem = w / c->nbj, soff = 0, doff = 0;
        for (int i = last - 1; i >= 0; i--) {           /* decode the dims other than j, last */
            if (i == j) continue;
            int64_t k = rem % c->d[i];
            rem /= c->d[i];
            soff += k * c->s[i];
            doff += k * c->t[i];
        }
        int64_t j0 = jb * TILE, nj = PVC_MIN((int64_t)TILE, c->d[j] - j0);
        soff += j0;                                     /* source stride of dim j is 1 */
        doff += j0 * c->t[j];
        for (int64_t l0 = 0; l0 < n; l0 += TILE) {
            int64_t nl = PVC_MIN((int64_t)TILE, n - l0);
            tile_copy(c->dst + (doff + l0) * es, c->src + (soff + l0 * sn) * es, c->es, nj, nl,
                      c->t[j], sn);
        }
    }
}

void pvk_copy_view(pvc_pool *pool, void *dst, const void *src, size_t esize, const pvk_view *v)
{
    copy_ctx c;
    memset(&c, 0, sizeof c);
    c.src = src;
    c.dst = dst;
    c.es = esize;
    /* Coalesce: skip 1-dims; merge an outer dim into the inner one when the source walks them
     * as one (outer stride == inner stride * inner dim); the destination always does. */
    int r = 0;
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] == 0) return;
        if (v->dims[i] == 1) continue;
        if (r > 0 && c.s[r - 1] == v->strides[i] * v->dims[i]) {
            c.d[r - 1] *= v->dims[i];
            c.s[r - 1] = v->strides[i];
            continue;
        }
        c.d[r] = v->dims[i];
        c.s[r] = v->strides[i];
        r++;
    }
    if (r == 0) {                                       /* a single element */
        memcpy(dst, src, esize);
        return;
    }
    c.r = r;
    pvk_contig_strides(r, c.d, c.t);
    int64_t n = c.d[r - 1], total = 1;
    for (int i = 0; i < r; i++) total *= c.d[i];

    c.tj = -1;
    if (c.s[r - 1] != 1 && c.s[r - 1] != 0 && n >= 8)
        for (int i = r - 2; i >= 0; i--)
            if (c.s[i] == 1 && c.d[i] >= 8) { c.tj = i; break; }

    if (c.tj >= 0) {
        c.nbj = (c.d[c.tj] + TILE - 1) / TILE;
        int64_t items = total / c.d[c.tj] / n * c.nbj;
        int64_t per = (int64_t)TILE * n;
        pvc_parallel_for(pool, items, PVC_MAX((int64_t)1, ROW_GRAIN_ELEMS / per), tiles_chunk, &c);
        return;
    }
    int64_t rows = total / n;
    if (rows == 1 && c.s[r - 1] == 1) {
        pvk_copy_bytes(pool, dst, src, (size_t)n * esize);
        return;
    }
    pvc_parallel_for(pool, rows, PVC_MAX((int64_t)1, ROW_GRAIN_ELEMS / n), rows_chunk, &c);
}

/* ---- scatter reductions ------------------------------------------------------------------ */

static const char *const red_names[] = { "none", "add", "mul", "max", "min" };

bool pvk_reduction_parse(const char *s, pvk_reduction *out)
{
    for (size_t i = 0; i < PVC_COUNTOF(red_names); i++)
        if (s && !strcmp(s, red_names[i])) {
            *out = (pvk_reduction)i;
            return true;
        }
    return false;
}

const char *pvk_reduction_name(pvk_reduction r)
{
    return (unsigned)r < PVC_COUNTOF(red_names) ? red_names[r] : "?";
}

static double reduce_f(double a, double b, pvk_reduction op)
{
    switch (op) {
    case PVK_RED_ADD: return a + b;
    case PVK_RED_MUL: return a * b;
    case PVK_RED_MAX: return isnan(a) || isnan(b) ? NAN : (b > a ? b : a);   /* numpy maximum */
    case PVK_RED_MIN: return isnan(a) || isnan(b) ? NAN : (b < a ? b : a);
    default: return b;
    }
}

/* Integers: add/mul in uint64 (wrapping, no signed overflow), then narrowed by the store. */
static int64_t reduce_i(int64_t a, int64_t b, pvk_reduction op)
{
    switch (op) {
    case PVK_RED_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case PVK_RED_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case PVK_RED_MAX: return b > a ? b : a;
    case PVK_RED_MIN: return b < a ? b : a;
    default: return b;
    }
}

void pvk_reduce_elem(void *dst, const void *src, pv_dtype t, pvk_reduction op)
{
    if (op == PVK_RED_NONE) {
        memcpy(dst, src, pv_dtype_size(t));
        return;
    }
    switch (t) {
    case PV_F32: {
        float a, b;
        memcpy(&a, dst, 4);
        memcpy(&b, src, 4);
        a = (float)reduce_f(a, b, op);                  /* float inputs: exact in double */
        memcpy(dst, &a, 4);
        return;
    }
    case PV_F16:
    case PV_BF16:
        pvc_set_f64(dst, t, 0, (float)reduce_f(pvc_get_f64(dst, t, 0), pvc_get_f64(src, t, 0), op));
        return;
    case PV_BOOL: {
        unsigned char a = *(unsigned char *)dst != 0, b = *(const unsigned char *)src != 0;
        /* numpy on bool: add = or, mul = and, max = or, min = and */
        *(unsigned char *)dst = (op == PVK_RED_ADD || op == PVK_RED_MAX) ? (a | b) : (a & b);
        return;
    }
    default:
        pvc_set_i64(dst, t, 0, reduce_i(pvc_get_i64(dst, t, 0), pvc_get_i64(src, t, 0), op));
        return;
    }
}
