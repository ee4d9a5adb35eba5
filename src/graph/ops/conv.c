/* Conv (1-D, 2-D, 3-D; opset 11+ semantics): explicit pads or auto_pad, strides, dilations,
 * group (depthwise included), optional bias, fused activation.
 * Paths: f32 with constant weights -> oneDNN where its table takes the shape (kernels/dnnl:
 * primitive made and weights reordered here in prepare, freed by release; PERCEIVE_DNNL=0
 * turns it off). Otherwise the reference path: 1x1 / stride 1 / no padding -> one GEMM per
 * group straight on X; one input channel per group (depthwise) -> direct kernel; otherwise
 * im2col into the workspace in slices of output pixels (at most PVG_CONV_COL_CAP floats) and
 * GEMM W_g[mg, cg*ks] x col[cg*ks, slice].
 * Also holds the attribute parsing and input checks shared with ConvTranspose (conv_attrs.h). */
#include "graph/ops/conv_attrs.h"
#include "graph/ops/lowp.h"
#include "kernels/dnnl/conv_dnnl.h"

#include <stddef.h>
#include <string.h>

enum { CONV_GEMM, CONV_1X1, CONV_DW };

typedef struct conv_params {
    pvk_dnnl_conv *dnnl;   /* made in prepare when oneDNN takes the shape, else NULL; first
                              member: pvk_dnnl_conv_of_params reads it there */
    pvk_conv_geom g;
    int64_t batch, cin, cout, group;
    int64_t slice;      /* output pixels per im2col slice */
    int     mode;
} conv_params;
_Static_assert(offsetof(conv_params, dnnl) == 0, "dnnl first");
_Static_assert(sizeof(conv_params) <= PVG_PARAMS_BYTES, "conv params");

static pv_status read_ints(pvg_prep *p, const char *name, int64_t want, int64_t min, int64_t *dst, int64_t def)
{
    const int64_t *v;
    int64_t n;
    pv_status s = pvg_attr_ints(p, name, &v, &n);
    if (s != PV_OK) return s;
    for (int64_t i = 0; i < want; i++) dst[i] = def;
    if (!v) return PV_OK;
    if (n != want)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s' has %lld values, expected %lld", name, (long long)n, (long long)want);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < min)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s'[%lld]=%lld is below %lld", name, (long long)i, (long long)v[i], (long long)min);
        dst[i] = v[i];
    }
    return PV_OK;
}

pv_status pvg_conv_attrs_read(pvg_prep *p, int nsp, const int64_t *wk, pvg_conv_attrs *a)
{
    pv_status s;
    const char *ap;
    memset(a, 0, sizeof *a);
    a->nsp = nsp;
    if ((s = pvg_attr_string(p, "auto_pad", "NOTSET", &ap)) != PV_OK) return s;
    if (!strcmp(ap, "NOTSET")) a->auto_pad = PVG_PAD_NOTSET;
    else if (!strcmp(ap, "VALID")) a->auto_pad = PVG_PAD_VALID;
    else if (!strcmp(ap, "SAME_UPPER")) a->auto_pad = PVG_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) a->auto_pad = PVG_PAD_SAME_LOWER;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'auto_pad'='%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    if ((s = pvg_attr_int(p, "group", 1, &a->group)) != PV_OK) return s;
    if (a->group < 1) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'group'=%lld must be >= 1", (long long)a->group);
    if ((s = read_ints(p, "kernel_shape", nsp, 1, a->k, 0)) != PV_OK) return s;
    for (int i = 0; i < nsp; i++) {
        if (a->k[i] && a->k[i] != wk[i])
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'kernel_shape'[%d]=%lld does not match the weight's %lld",
                                 i, (long long)a->k[i], (long long)wk[i]);
        a->k[i] = wk[i];
    }
    if ((s = read_ints(p, "strides", nsp, 1, a->stride, 1)) != PV_OK) return s;
    if ((s = read_ints(p, "dilations", nsp, 1, a->dil, 1)) != PV_OK) return s;
    int64_t pads[6];
    if ((s = read_ints(p, "pads", 2 * nsp, 0, pads, 0)) != PV_OK) return s;
    for (int i = 0; i < nsp; i++) {
        a->pad_begin[i] = pads[i];
        a->pad_end[i] = pads[nsp + i];
        if (a->auto_pad != PVG_PAD_NOTSET && (pads[i] || pads[nsp + i]))
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'pads' is non-zero while 'auto_pad'='%s'", ap);
    }
    return PV_OK;
}

void pvg_conv_geom_init(const pvg_conv_attrs *a, pvk_conv_geom *g)
{
    for (int d = 0; d < 3; d++) {
        g->in[d] = g->out[d] = g->k[d] = g->stride[d] = g->dil[d] = 1;
        g->pad[d] = 0;
    }
    for (int i = 0; i < a->nsp; i++) {
        int d = pvg_conv_axis(a->nsp, i);
        g->k[d] = a->k[i];
        g->stride[d] = a->stride[i];
        g->dil[d] = a->dil[i];
        g->pad[d] = a->pad_begin[i];
    }
}

pv_status pvg_conv_prepare_inputs(pvg_prep *p, const char *what, pvg_conv_attrs *a)
{
    pv_status s;
    if (p->nin < 2 || p->nin > 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 or 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    if ((s = pvg_check_dtype(p, 0, PVG_FLOATS)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0], *W = &p->in[1];
    if (!pvg_has_in(p, 1)) return pvg_prep_fail(p, PV_EFORMAT, "input W is missing");
    if (W->dtype != X->dtype || (pvg_has_in(p, 2) && p->in[2].dtype != X->dtype))
        return pvg_prep_fail(p, PV_EFORMAT, "X, W and B must share one dtype");
    if (X->rank < 3 || X->rank > 5)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input X has rank %d; 1-D, 2-D and 3-D %s (rank 3-5) are supported", X->rank, what);
    if (W->rank != X->rank)
        return pvg_prep_fail(p, PV_EFORMAT, "W has rank %d, X has rank %d", W->rank, X->rank);
    return pvg_conv_attrs_read(p, X->rank - 2, W->dims + 2, a);
}

pv_status pvg_conv_check_bias(pvg_prep *p, int64_t cout)
{
    if (pvg_has_in(p, 2) && (p->in[2].rank != 1 || p->in[2].dims[0] != cout))
        return pvg_prep_fail(p, PV_EFORMAT, "B must be 1-D of size %lld", (long long)cout);
    return PV_OK;
}

pv_status pvg_conv_out_dims(pvg_prep *p, const pvc_tensor *X, pvg_conv_attrs *a, int64_t *odims)
{
    for (int i = 0; i < a->nsp; i++) {
        int64_t in = X->dims[2 + i], s_ = a->stride[i], ek = (a->k[i] - 1) * a->dil[i] + 1, o;
        if (a->auto_pad == PVG_PAD_SAME_UPPER || a->auto_pad == PVG_PAD_SAME_LOWER) {
            o = (in + s_ - 1) / s_;
            int64_t total = PVC_MAX(0, (o - 1) * s_ + ek - in);
            a->pad_begin[i] = a->auto_pad == PVG_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            a->pad_end[i] = total - a->pad_begin[i];
        } else {
            int64_t span = in + a->pad_begin[i] + a->pad_end[i];
            if (span < ek)
                return pvg_prep_fail(p, PV_EFORMAT, "spatial dim %d: padded input %lld is smaller than the dilated kernel %lld",
                                     i, (long long)span, (long long)ek);
            o = (span - ek) / s_ + 1;
        }
        odims[2 + i] = o;
    }
    return PV_OK;
}

int64_t pvg_conv_slice(int64_t rows, int64_t pixels)
{
    int64_t slice = rows * pixels <= PVG_CONV_COL_CAP ? pixels : PVC_MAX(64, PVG_CONV_COL_CAP / PVC_MAX(rows, 1));
    return PVC_MAX(1, PVC_MIN(slice, pixels));
}

static pv_status conv_prepare(pvg_prep *p)
{
    pv_status s;
    conv_params *c = p->params;
    pvg_conv_attrs a;
    if ((s = pvg_conv_prepare_inputs(p, "convolutions", &a)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0], *W = &p->in[1];
    int nsp = X->rank - 2;
    int64_t cin = X->dims[1], cout = W->dims[0];
    if (cin % a.group || cout % a.group || W->dims[1] * a.group != cin)
        return pvg_prep_fail(p, PV_EFORMAT, "channels do not match: X has %lld, W is [%lld, %lld, ...], group %lld",
                             (long long)cin, (long long)cout, (long long)W->dims[1], (long long)a.group);
    if ((s = pvg_conv_check_bias(p, cout)) != PV_OK) return s;

    int64_t odims[5] = { X->dims[0], cout };
    if ((s = pvg_conv_out_dims(p, X, &a, odims)) != PV_OK) return s;
    pvg_out_set(p, 0, X->dtype, X->rank, odims);

    memset(c, 0, sizeof *c);
    pvg_conv_geom_init(&a, &c->g);
    for (int i = 0; i < nsp; i++) {
        c->g.in[pvg_conv_axis(nsp, i)] = X->dims[2 + i];
        c->g.out[pvg_conv_axis(nsp, i)] = odims[2 + i];
    }
    c->batch = X->dims[0];
    c->cin = cin;
    c->cout = cout;
    c->group = a.group;
    int64_t ks = pvk_conv_ksize(&c->g), osz = pvk_conv_outsize(&c->g), kdim = cin / a.group * ks;
    bool unit = ks == 1;
    for (int d = 0; d < 3; d++) unit = unit && c->g.stride[d] == 1 && c->g.pad[d] == 0 && c->g.in[d] == c->g.out[d];
    c->mode = unit ? CONV_1X1 : cin == a.group ? CONV_DW : CONV_GEMM;
    p->workspace = 0;
    if (X->dtype == PV_F32 && W->data) {
        pvk_dnnl_conv_desc d = { .nsp = nsp, .batch = c->batch, .cin = cin, .cout = cout, .group = a.group,
                                 .bias = pvg_has_in(p, 2), .act = p->node->act,
                                 .bf16 = p->precision == PVC_PREC_BF16 };
        for (int i = 0; i < nsp; i++) {
            d.in[i] = X->dims[2 + i];
            d.out[i] = odims[2 + i];
            d.k[i] = a.k[i];
            d.stride[i] = a.stride[i];
            d.dil[i] = a.dil[i];
            d.pad_begin[i] = a.pad_begin[i];
            d.pad_end[i] = a.pad_end[i];
        }
        d.winograd = pvk_dnnl_winograd_pick(&d);
        pvc_msg m = {{0}};
        if ((s = pvk_dnnl_conv_create(&d, W->data, p->threads, pvk_dnnl_mode_get(), &c->dnnl, &p->workspace, &m)) != PV_OK)
            return pvg_prep_fail(p, s, "%s", m.text);
        if (c->dnnl) { p->consumed = 1u << 1; return PV_OK; }   /* W reordered into the primitive's copy */
    }
    if (c->mode == CONV_GEMM) {
        c->slice = pvg_conv_slice(kdim, osz);
        p->workspace = (size_t)(kdim * c->slice) * sizeof(float);
    }
    p->workspace += pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status conv_run_f32(const pvg_exec *x)
{
    const conv_params *c = x->params;
    const float *X = x->in[0].data, *W = x->in[1].data;
    const float *B = x->nin > 2 && x->in[2].rank >= 0 ? x->in[2].data : NULL;
    float *Y = x->out[0].data;
    int64_t isz = pvk_conv_insize(&c->g), osz = pvk_conv_outsize(&c->g), ks = pvk_conv_ksize(&c->g);
    int64_t cg = c->cin / c->group, mg = c->cout / c->group, kdim = cg * ks;
    if (c->mode == CONV_DW) {
        pvk_conv_depthwise_f32(x->pool, &c->g, X, W, c->batch, c->cin, c->cout / c->cin, Y);
    } else {
        for (int64_t n = 0; n < c->batch; n++)
            for (int64_t gi = 0; gi < c->group; gi++) {
                const float *xg = X + (n * c->cin + gi * cg) * isz;
                const float *wg = W + gi * mg * kdim;
                float *yg = Y + (n * c->cout + gi * mg) * osz;
                if (c->mode == CONV_1X1) {
                    pvk_gemm_f32(x->pool, mg, osz, cg, wg, cg, false, xg, isz, false, yg, osz, 1.0f, 0.0f);
                    continue;
                }
                float *col = x->ws;
                for (int64_t p0 = 0; p0 < osz; p0 += c->slice) {
                    int64_t np = PVC_MIN(c->slice, osz - p0);
                    pvk_im2col_f32(x->pool, &c->g, xg, cg, p0, np, col);
                    pvk_gemm_f32(x->pool, mg, np, kdim, wg, kdim, false, col, np, false, yg + p0, osz, 1.0f, 0.0f);
                }
            }
    }
    pvk_bias_act_f32(x->pool, Y, c->batch, c->cout, osz, B, &x->node->act);
    return PV_OK;
}

static pv_status conv_run(const pvg_exec *x)
{
    const conv_params *c = x->params;
    if (c->dnnl) return pvk_dnnl_conv_exec(c->dnnl, x);
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, conv_run_f32) : conv_run_f32(x);
}

static void conv_release(void *params)
{
    conv_params *c = params;
    pvk_dnnl_conv_free(c->dnnl);
    c->dnnl = NULL;
}

static const char *conv_describe(const void *params)
{
    const conv_params *c = params;
    if (c->dnnl) return pvk_dnnl_conv_impl(c->dnnl);
    return c->mode == CONV_1X1 ? "gemm 1x1" : c->mode == CONV_DW ? "depthwise" : "im2col+gemm";
}

const pvg_op pvg_op_Conv = { "Conv", "", PVG_OP_FUSE_ACT, conv_prepare, conv_run, conv_release, pvk_dnnl_conv_link_params,
                             conv_describe };
