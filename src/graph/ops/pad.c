/* Pad (opset 11+ form; before 11 'pads' and the float 'value' are attributes): 'pads'
 * (constant input, [begins..., ends...]; negative values crop,
 * applied before padding, so reflect/edge mirror the kept range), an optional run-time
 * 'constant_value', opset 18's optional 'axes' input; modes constant, reflect (mirror without
 * repeating the edge, periodic when the pad exceeds the dim) and edge. Each output coordinate
 * maps to a source coordinate per axis; the middle of every output row is one memcpy. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

/* Negative pads crop first; then each axis pads 'pb' in front
 * of the kept source range [lo, lo + keep). */
typedef struct pad_params {
    int     mode;
    bool    value_attr;             /* opsets < 11: the constant is 'value', not input 2 */
    float   value;
    int64_t pb[PV_MAX_RANK], lo[PV_MAX_RANK], keep[PV_MAX_RANK];
} pad_params;

static pv_status pad_prepare(pvg_prep *p)
{
    if (p->opset < 11 ? p->nin != 1 : p->nin < 2)
        return pvg_prep_fail(p, PV_EFORMAT, "opset %d Pad takes %s inputs, got %d", p->opset, p->opset < 11 ? "1" : "2-4", p->nin);
    if (p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const char *ms;
    if ((s = pvg_attr_string(p, "mode", "constant", &ms))) return s;
    pad_params *pp = p->params;
    if (!strcmp(ms, "constant")) pp->mode = PAD_CONSTANT;
    else if (!strcmp(ms, "reflect")) pp->mode = PAD_REFLECT;
    else if (!strcmp(ms, "edge")) pp->mode = PAD_EDGE;
    else return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'mode'='%s' not supported (constant, reflect, edge)", ms);

    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    int64_t pads[2 * PV_MAX_RANK], np, axes[PV_MAX_RANK], na = r;
    if (p->opset < 11) {
        const int64_t *pa;
        if ((s = pvg_attr_ints(p, "pads", &pa, &np)) || (s = pvg_attr_float(p, "value", 0.0f, &pp->value))) return s;
        if (!pa) return pvg_prep_fail(p, PV_EFORMAT, "opset %d Pad needs the attribute 'pads'", p->opset);
        if (np > 2 * PV_MAX_RANK) return pvg_prep_fail(p, PV_EFORMAT, "'pads' has %lld values for rank %d", (long long)np, r);
        memcpy(pads, pa, (size_t)np * sizeof *pads);
        pp->value_attr = true;
        if (pp->value != 0.0f && (s = pvg_check_dtype(p, 0, PVG_FLOATS))) return s;
        for (int i = 0; i < r; i++) axes[i] = i;
    } else if ((s = pvg_in_const_ints(p, 1, pads, 2 * PV_MAX_RANK, &np))) {
        return s;
    } else if (pvg_has_in(p, 3)) {
        if ((s = pvg_in_const_ints(p, 3, axes, PV_MAX_RANK, &na))) return s;
    } else
        for (int i = 0; i < r; i++) axes[i] = i;
    if (np != 2 * na)
        return pvg_prep_fail(p, PV_EFORMAT, "'pads' has %lld values, expected %lld", (long long)np, (long long)(2 * na));
    if (pvg_has_in(p, 2)) {
        const pvc_tensor *cv = &p->in[2];
        if (cv->dtype != in->dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "'constant_value' is %s, 'data' is %s", pv_dtype_name(cv->dtype), pv_dtype_name(in->dtype));
        if (pvc_numel(cv) > 1) return pvg_prep_fail(p, PV_EFORMAT, "'constant_value' must be a scalar");
    }
    int64_t begin[PV_MAX_RANK] = { 0 }, end[PV_MAX_RANK] = { 0 }, d[PV_MAX_RANK], total = 1;
    bool seen[PV_MAX_RANK] = { false };
    for (int i = 0; i < na; i++) {
        int a;
        if ((s = pvg_axis(p, axes[i], r, "'axes' value", &a))) return s;
        if (seen[a]) return pvg_prep_fail(p, PV_EFORMAT, "axis %d is repeated in 'axes'", a);
        seen[a] = true;
        begin[a] = pads[i];
        end[a] = pads[na + i];
    }
    for (int i = 0; i < r; i++) {
        int64_t dim = in->dims[i], b = begin[i], e = end[i];
        if (b < -dim || e < -dim || b > INT32_MAX || e > INT32_MAX || (d[i] = dim + b + e) < 0)
            return pvg_prep_fail(p, PV_EFORMAT, "pads %lld,%lld do not fit dim %d of size %lld", (long long)b, (long long)e, i, (long long)dim);
        pp->pb[i] = PVC_MAX(b, (int64_t)0);
        pp->lo[i] = PVC_MAX(-b, (int64_t)0);
        pp->keep[i] = dim - pp->lo[i] - PVC_MAX(-e, (int64_t)0);
        if (pp->mode != PAD_CONSTANT && pp->keep[i] == 0 && d[i] > 0)
            return pvg_prep_fail(p, PV_EFORMAT, "mode '%s' cannot pad dim %d of size 0", ms, i);
        if (pvc_mul_overflow(total, d[i], &total)) return pvg_prep_fail(p, PV_EFORMAT, "output size overflows int64");
    }
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

/* Coordinate in the kept range (length dim) for output coordinate o, or -1 for the constant. */
static int64_t src_coord(int mode, int64_t o, int64_t begin, int64_t dim)
{
    int64_t i = o - begin;
    if (i >= 0 && i < dim) return i;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_EDGE || dim == 1) return i < 0 ? 0 : dim - 1;
    int64_t period = 2 * (dim - 1);                 /* reflect: ... 2 1 [0 1 2 3] 2 1 0 1 ... */
    i = (i < 0 ? -i : i) % period;
    return i < dim ? i : period - i;
}

typedef struct pad_ctx {
    const pad_params    *pp;
    const pvc_tensor    *in, *out;
    const unsigned char *cval;      /* one element */
    size_t               es;
    int64_t              cs[PV_MAX_RANK];   /* source strides */
} pad_ctx;

static void pad_rows(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const pad_ctx *c = ctx;
    const pad_params *pp = c->pp;
    const pvc_tensor *out = c->out;
    int r = out->rank, last = r - 1, mode = pp->mode;
    int64_t n = out->dims[last], keep = pp->keep[last], beg = pp->pb[last];
    size_t es = c->es;
    const unsigned char *src = c->in->data;
    for (int64_t w = b; w < e; w++) {
        unsigned char *dst = (unsigned char *)out->data + (size_t)(w * n) * es;
        int64_t rem = w, soff = pp->lo[last];
        bool fill = false;
        for (int i = last - 1; i >= 0; i--) {
            int64_t s = src_coord(mode, rem % out->dims[i], pp->pb[i], pp->keep[i]);
            rem /= out->dims[i];
            if (s < 0) fill = true;
            else soff += (pp->lo[i] + s) * c->cs[i];
        }
        if (fill) {
            pvk_fill(dst, c->cval, es, n);
            continue;
        }
        const unsigned char *row = src + (size_t)soff * es;   /* kept range of this row */
        int64_t lo = beg, hi = PVC_MIN(n, beg + keep);
        if (hi > lo) memcpy(dst + (size_t)lo * es, row, (size_t)(hi - lo) * es);
        else lo = hi = n;                           /* no middle: map every element */
        for (int64_t o = 0; o < n; o++) {
            if (o == lo) { o = hi - 1; continue; }
            int64_t s = src_coord(mode, o, beg, keep);
            memcpy(dst + (size_t)o * es, s < 0 ? c->cval : row + (size_t)s * es, es);
        }
    }
}

static pv_status pad_run(const pvg_exec *x)
{
    pad_ctx c;
    c.pp = x->params;
    c.in = &x->in[0];
    c.out = &x->out[0];
    c.es = pv_dtype_size(c.in->dtype);
    unsigned char zero[8] = { 0 };
    c.cval = zero;
    if (x->nin > 2 && x->in[2].rank >= 0 && x->in[2].data && pvc_numel(&x->in[2]) == 1) c.cval = x->in[2].data;
    if (c.pp->value_attr && c.pp->value != 0.0f) pvc_set_f64(zero, c.in->dtype, 0, c.pp->value);   /* a float dtype */
    int64_t total = pvc_numel(c.out);
    if (total == 0) return PV_OK;
    if (c.out->rank == 0) {                         /* a scalar: nothing to pad */
        memcpy(c.out->data, c.in->data, c.es);
        return PV_OK;
    }
    pvk_contig_strides(c.in->rank, c.in->dims, c.cs);
    int64_t n = c.out->dims[c.out->rank - 1];
    pvc_parallel_for(x->pool, total / n, PVC_MAX((int64_t)1, 16384 / n), pad_rows, &c);
    return PV_OK;
}

const pvg_op pvg_op_Pad = { "Pad", "", 0, pad_prepare, pad_run };
