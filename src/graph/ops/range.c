/* Range: start, start + delta, ... up to 'limit' (exclusive); n = max(ceil((limit - start) /
 * delta), 0). The length is the output shape, so all three inputs must be constants. Element i
 * is start + i * delta (the spec's formula, not a running sum). */
#include "graph/graph.h"

#include <math.h>

#define RANGE_MAX_ELEMS ((int64_t)1 << 40)

static pv_status range_prepare(pvg_prep *p)
{
    if (p->nin < 3 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 3 inputs and 1 output");
    static const char *const names[3] = { "start", "limit", "delta" };
    pv_status s;
    unsigned mask = (1u << PV_F32) | (1u << PV_I64) | (1u << PV_I32);
    for (int i = 0; i < 3; i++) {
        if ((s = pvg_check_dtype(p, i, mask))) return s;
        if (p->in[i].dtype != p->in[0].dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "'%s' is %s, 'start' is %s", names[i], pv_dtype_name(p->in[i].dtype), pv_dtype_name(p->in[0].dtype));
        if (pvc_numel(&p->in[i]) != 1) return pvg_prep_fail(p, PV_EFORMAT, "'%s' must be a scalar", names[i]);
        if (!p->in[i].data)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "input '%s' is computed at run time; the output length "
                                 "depends on it, so it must be a constant (data-dependent shape)", names[i]);
    }
    pv_dtype t = p->in[0].dtype;
    int64_t n;
    if (t == PV_F32) {
        double a = pvc_get_f64(p->in[0].data, t, 0), b = pvc_get_f64(p->in[1].data, t, 0), d = pvc_get_f64(p->in[2].data, t, 0);
        if (d == 0 || !isfinite(a) || !isfinite(b) || !isfinite(d))
            return pvg_prep_fail(p, PV_EFORMAT, "start %g, limit %g, delta %g do not make a finite range", a, b, d);
        double c = ceil((b - a) / d);
        if (c > (double)RANGE_MAX_ELEMS) return pvg_prep_fail(p, PV_EUNSUPPORTED, "range of %g elements is too large", c);
        n = c > 0 ? (int64_t)c : 0;
    } else {
        int64_t a = pvc_get_i64(p->in[0].data, t, 0), b = pvc_get_i64(p->in[1].data, t, 0), d = pvc_get_i64(p->in[2].data, t, 0);
        if (d == 0) return pvg_prep_fail(p, PV_EFORMAT, "'delta' is 0");
        int64_t span, q;
        if (__builtin_sub_overflow(b, a, &span) || (span == INT64_MIN && d == -1))
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "range from %lld to %lld is too large", (long long)a, (long long)b);
        q = span / d;
        if (span % d != 0 && (span > 0) == (d > 0)) q++;     /* ceil when the signs agree */
        if (q > RANGE_MAX_ELEMS) return pvg_prep_fail(p, PV_EUNSUPPORTED, "range of %lld elements is too large", (long long)q);
        n = q > 0 ? (int64_t)q : 0;
    }
    pvg_out_set(p, 0, t, 1, &n);
    return PV_OK;
}

static pv_status range_run(const pvg_exec *x)
{
    pv_dtype t = x->in[0].dtype;
    int64_t n = x->out[0].dims[0];
    if (t == PV_F32) {
        double a = pvc_get_f64(x->in[0].data, t, 0), d = pvc_get_f64(x->in[2].data, t, 0);
        float *o = x->out[0].data;
        for (int64_t i = 0; i < n; i++) o[i] = (float)(a + (double)i * d);
    } else {
        int64_t a = pvc_get_i64(x->in[0].data, t, 0), d = pvc_get_i64(x->in[2].data, t, 0);
        for (int64_t i = 0; i < n; i++) pvc_set_i64(x->out[0].data, t, i, (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)d));
    }
    return PV_OK;
}

const pvg_op pvg_op_Range = { "Range", "", 0, range_prepare, range_run };
