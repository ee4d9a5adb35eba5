/* MaxPool (optional Indices output), AveragePool, GlobalAveragePool over 1-3 spatial dims.
 * Output sizes follow the ONNX spec, with PyTorch's and current ONNX Runtime's ceil_mode rule
 * that a window may not start inside the end padding. Spatial geometry is stored as 3-D with
 * leading unit axes, so one kernel serves 1-D, 2-D and 3-D. MaxPool runs f16/bf16/int8/uint8
 * natively; the averages stage f16/bf16 through f32 (graph/ops/lowp.h). */
#include "graph/graph.h"
#include "graph/ops/lowp.h"
#include "kernels/ref/pool.h"

#include <string.h>

typedef struct pool_params { pvk_pool_geom g; } pool_params;
_Static_assert(sizeof(pool_params) <= PVG_PARAMS_BYTES, "pool_params must fit the node's params scratch");

static pv_status read_ints(pvg_prep *p, const char *name, int64_t want, int64_t def, int64_t min,
                           int64_t *out)
{
    const int64_t *v;
    int64_t n;
    pv_status s = pvg_attr_ints(p, name, &v, &n);
    if (s) return s;
    if (!v) {
        for (int64_t i = 0; i < want; i++) out[i] = def;
        return PV_OK;
    }
    if (n != want)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s' has %lld values, expected %lld",
                             name, (long long)n, (long long)want);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < min)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s' value %lld must be >= %lld",
                                 name, (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return PV_OK;
}

/* Reads the shared attributes and fills g and the output dims. */
static pv_status pool_geometry(pvg_prep *p, bool is_max, pvk_pool_geom *g, int64_t *od)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and at least 1 output");
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    if (r < 3 || r > 5)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input rank %d: only 1-D, 2-D and 3-D pooling ([N,C,...] of rank 3-5) is supported", r);
    int nsp = r - 2, o = 3 - nsp;
    pv_status s;
    int64_t k[3], st[3], dil[3], pads[6], ceil_mode;
    const char *auto_pad;
    if (!pvg_attr_has(p, "kernel_shape")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'kernel_shape' is required");
    if ((s = read_ints(p, "kernel_shape", nsp, 1, 1, k))) return s;
    if ((s = read_ints(p, "strides", nsp, 1, 1, st))) return s;
    if ((s = read_ints(p, "dilations", nsp, 1, 1, dil))) return s;
    if ((s = read_ints(p, "pads", 2 * nsp, 0, 0, pads))) return s;
    if ((s = pvg_attr_int(p, "ceil_mode", 0, &ceil_mode))) return s;
    if ((s = pvg_attr_string(p, "auto_pad", "NOTSET", &auto_pad))) return s;
    if (ceil_mode != 0 && ceil_mode != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'ceil_mode'=%lld must be 0 or 1", (long long)ceil_mode);
    if (!is_max)
        for (int i = 0; i < nsp; i++)
            if (dil[i] != 1)
                return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'dilations' other than 1 is not supported for AveragePool");
    enum { NOTSET, VALID, SAME_UPPER, SAME_LOWER } ap;
    if (!strcmp(auto_pad, "NOTSET")) ap = NOTSET;
    else if (!strcmp(auto_pad, "VALID")) ap = VALID;
    else if (!strcmp(auto_pad, "SAME_UPPER")) ap = SAME_UPPER;
    else if (!strcmp(auto_pad, "SAME_LOWER")) ap = SAME_LOWER;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'auto_pad'='%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", auto_pad);

    memset(g, 0, sizeof *g);
    g->planes = in->dims[0] * in->dims[1];
    for (int i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->kernel[i] = g->stride[i] = g->dil[i] = 1;
    }
    od[0] = in->dims[0];
    od[1] = in->dims[1];
    for (int i = 0; i < nsp; i++) {
        int64_t n = in->dims[2 + i], eff = (k[i] - 1) * dil[i] + 1, pb = pads[i], pe = pads[nsp + i], out;
        if (ap == SAME_UPPER || ap == SAME_LOWER) {
            out = (n + st[i] - 1) / st[i];
            int64_t total = PVC_MAX(0, (out - 1) * st[i] + eff - n);
            pb = ap == SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        } else {
            if (ap == VALID) pb = pe = 0;
            int64_t span = n + pb + pe - eff;
            if (span < 0)
                return pvg_prep_fail(p, PV_EFORMAT, "kernel extent %lld is larger than the padded input %lld on spatial axis %d",
                                     (long long)eff, (long long)(n + pb + pe), i);
            out = (ceil_mode ? span + st[i] - 1 : span) / st[i] + 1;
            if (ceil_mode && (out - 1) * st[i] >= n + pb) out--;
        }
        g->in[o + i] = n;
        g->out[o + i] = out;
        g->kernel[o + i] = k[i];
        g->stride[o + i] = st[i];
        g->dil[o + i] = dil[i];
        g->pad_begin[o + i] = pb;
        g->pad_end[o + i] = pe;
        od[2 + i] = out;
    }
    return PV_OK;
}

static pv_status maxpool_prepare(pvg_prep *p)
{
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | (1u << PV_I8) | (1u << PV_U8));
    if (s) return s;
    pool_params *pp = p->params;
    int64_t od[PV_MAX_RANK], order;
    if ((s = pool_geometry(p, true, &pp->g, od))) return s;
    if ((s = pvg_attr_int(p, "storage_order", 0, &order))) return s;
    if (order != 0 && order != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'storage_order'=%lld must be 0 or 1", (long long)order);
    pp->g.storage_order = (int)order;
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, od);
    if (p->nout > 1) pvg_out_set(p, 1, PV_I64, p->in[0].rank, od);
    return PV_OK;
}

static pv_status maxpool_run(const pvg_exec *x)
{
    const pool_params *pp = x->params;
    int64_t *ind = x->nout > 1 ? x->out[1].data : NULL;
    pvk_maxpool(x->pool, &pp->g, x->in[0].dtype, x->in[0].data, x->out[0].data, ind);
    return PV_OK;
}

static pv_status avgpool_prepare(pvg_prep *p)
{
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s) return s;
    pool_params *pp = p->params;
    int64_t od[PV_MAX_RANK], cip;
    if ((s = pool_geometry(p, false, &pp->g, od))) return s;
    if ((s = pvg_attr_int(p, "count_include_pad", 0, &cip))) return s;
    if (cip != 0 && cip != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'count_include_pad'=%lld must be 0 or 1", (long long)cip);
    pp->g.count_include_pad = cip != 0;
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, od);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status avgpool_run_f32(const pvg_exec *x)
{
    const pool_params *pp = x->params;
    pvk_avgpool_f32(x->pool, &pp->g, x->in[0].data, x->out[0].data);
    return PV_OK;
}

static pv_status avgpool_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, avgpool_run_f32) : avgpool_run_f32(x);
}

typedef struct gap_params { int64_t planes, size; } gap_params;
_Static_assert(sizeof(gap_params) <= PVG_PARAMS_BYTES, "gap_params must fit the node's params scratch");

static pv_status gap_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    if (in->rank < 3) return pvg_prep_fail(p, PV_EFORMAT, "input rank %d: expected [N,C,spatial...]", in->rank);
    gap_params *gp = p->params;
    int64_t od[PV_MAX_RANK];
    gp->planes = in->dims[0] * in->dims[1];
    gp->size = 1;
    for (int i = 0; i < in->rank; i++) {
        od[i] = i < 2 ? in->dims[i] : 1;
        if (i >= 2) gp->size *= in->dims[i];
    }
    pvg_out_set(p, 0, in->dtype, in->rank, od);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status gap_run_f32(const pvg_exec *x)
{
    const gap_params *gp = x->params;
    pvk_global_avgpool_f32(x->pool, gp->planes, gp->size, x->in[0].data, x->out[0].data);
    return PV_OK;
}

static pv_status gap_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, gap_run_f32) : gap_run_f32(x);
}

const pvg_op pvg_op_MaxPool = { "MaxPool", "", 0, maxpool_prepare, maxpool_run };
const pvg_op pvg_op_AveragePool = { "AveragePool", "", 0, avgpool_prepare, avgpool_run };
const pvg_op pvg_op_GlobalAveragePool = { "GlobalAveragePool", "", 0, gap_prepare, gap_run };
