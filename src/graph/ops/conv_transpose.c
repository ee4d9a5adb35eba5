/* ConvTranspose (1-D, 2-D, 3-D): pads / auto_pad, strides, dilations, group, output_padding,
 * output_shape, optional bias, fused activation.
 * f32 with constant weights: oneDNN's deconvolution where its table takes the shape (made in
 * prepare, freed by release; PERCEIVE_DNNL=0 turns it off). Otherwise the reference path:
 * per batch item and group: col[mg*ks, slice] = W_g^T x X_g[:, slice] (GEMM reading W_g
 * transposed), then col2im adds col into Y; slices of input pixels keep col within
 * PVG_CONV_COL_CAP floats of workspace. The col2im geometry is that of the adjoint Conv: its
 * image is Y.
 * kernel == stride, no padding, no dilation, group 1 (every output pixel gets exactly one
 * product sum: BEVFusion's 2x2 stride-2 neck): kernels/ref/convt_fast, one GEMM per tile of
 * input pixels written straight to the output with bias + activation (no memset, no col2im,
 * no epilogue pass), for f32 and the f16/bf16 staging alike; with f32 X and constant f32 W,
 * W is packed once for the packed GEMM of the plan's precision (pvk_convt_fast_packed). */
#include "graph/ops/conv_attrs.h"
#include "graph/ops/lowp.h"
#include "kernels/dnnl/conv_dnnl.h"
#include "kernels/gemm_packed.h"
#include "kernels/ref/convt_fast.h"

#include <stddef.h>
#include <string.h>

typedef struct convt_params {
    pvk_dnnl_conv *dnnl;   /* made in prepare when oneDNN takes the shape, else NULL; first
                              member: pvk_dnnl_conv_of_params reads it there */
    pvk_conv_geom g;    /* g.in: Y spatial dims, g.out: X spatial dims */
    int64_t batch, cin, cout, group;
    int64_t slice;      /* X pixels per GEMM + col2im slice */
    bool fast;          /* kernel == stride: the pvk_convt_fast path */
    int nbuf;           /* fast: col buffers in the workspace (the threads planned for) */
    pvk_convt_fast_desc fd;
    pvk_gemm_packed *wp;   /* fast, f32, constant W: W packed once in the plan's precision (else NULL) */
} convt_params;
_Static_assert(offsetof(convt_params, dnnl) == 0, "dnnl first");
_Static_assert(sizeof(convt_params) <= PVG_PARAMS_BYTES, "conv_transpose params");

/* The fast path when every output pixel gets one product sum: group 1, and per axis kernel ==
 * stride, no dilation (unless k is 1), no begin pad and the full output (pads or output_shape
 * that crop only the output_padding leave it so). Sets the workspace. */
static void convt_fast_plan(pvg_prep *p, convt_params *c, const pvg_conv_attrs *a, const int64_t *xdims,
                            const int64_t *ydims)
{
    if (c->group != 1) return;
    pvk_convt_fast_desc d = { .batch = c->batch, .cin = c->cin, .cout = c->cout,
                              .in = { 1, 1, 1 }, .k = { 1, 1, 1 } };
    for (int i = 0; i < a->nsp; i++) {
        if (a->k[i] != a->stride[i] || (a->dil[i] != 1 && a->k[i] != 1) || a->pad_begin[i] != 0
            || ydims[i] != xdims[i] * a->k[i])
            return;   /* overlapping, gapped or cropped: the general path */
        d.in[pvg_conv_axis(a->nsp, i)] = xdims[i];
        d.k[pvg_conv_axis(a->nsp, i)] = a->k[i];
    }
    if (c->cout < 1 || c->cin < 1) return;   /* empty: the general path's loops do nothing */
    int threads = p->threads > 0 ? p->threads : pvc_default_threads();
    /* many threads or a huge cout * ks: smaller tiles, within the general path's col cap */
    int64_t per_buf = PVG_CONV_COL_CAP / ((int64_t)threads * c->cout * d.k[0] * d.k[1] * d.k[2]);
    d.tile = PVC_MIN(pvk_convt_fast_tile(&d, threads), per_buf);
    if (d.tile < 1) return;
    int64_t floats = pvk_convt_fast_ws_floats(&d, threads);
    c->fast = true;
    c->nbuf = threads;
    c->fd = d;
    p->workspace = (size_t)floats * sizeof(float) + pvg_lowp_bytes(p);
}

static pv_status convt_prepare(pvg_prep *p)
{
    pv_status s;
    convt_params *c = p->params;
    pvg_conv_attrs a;
    if ((s = pvg_conv_prepare_inputs(p, "transposed convolutions", &a)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[0], *W = &p->in[1];
    int nsp = X->rank - 2;
    int64_t cin = X->dims[1], cout = W->dims[1] * a.group;
    if (cin % a.group || W->dims[0] != cin)
        return pvg_prep_fail(p, PV_EFORMAT, "channels do not match: X has %lld, W is [%lld, %lld, ...], group %lld",
                             (long long)cin, (long long)W->dims[0], (long long)W->dims[1], (long long)a.group);
    if ((s = pvg_conv_check_bias(p, cout)) != PV_OK) return s;

    const int64_t *v;
    int64_t n, opad[3] = { 0, 0, 0 }, oshape[3] = { 0, 0, 0 };
    if ((s = pvg_attr_ints(p, "output_padding", &v, &n)) != PV_OK) return s;
    if (v) {
        if (n != nsp)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'output_padding' has %lld values, expected %d", (long long)n, nsp);
        for (int i = 0; i < nsp; i++) {
            if (v[i] < 0 || (v[i] >= a.stride[i] && v[i] >= a.dil[i]))
                return pvg_prep_fail(p, PV_EFORMAT, "attribute 'output_padding'[%d]=%lld must be >= 0 and below the stride or dilation",
                                     i, (long long)v[i]);
            opad[i] = v[i];
        }
    }
    if ((s = pvg_attr_ints(p, "output_shape", &v, &n)) != PV_OK) return s;
    bool has_oshape = v != NULL;
    if (v) {   /* spatial dims, or (as some exporters write) the full output shape */
        if (n != nsp && n != nsp + 2)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'output_shape' has %lld values, expected %d", (long long)n, nsp);
        for (int i = 0; i < nsp; i++) {
            oshape[i] = v[n - nsp + i];
            if (oshape[i] < 1)
                return pvg_prep_fail(p, PV_EFORMAT, "attribute 'output_shape' value %lld is not positive", (long long)oshape[i]);
        }
    }

    int64_t odims[5] = { X->dims[0], cout };
    for (int i = 0; i < nsp; i++) {
        int64_t in = X->dims[2 + i], ek = (a.k[i] - 1) * a.dil[i] + 1;
        int64_t full = a.stride[i] * (in - 1) + opad[i] + ek, o;
        bool same = a.auto_pad == PVG_PAD_SAME_UPPER || a.auto_pad == PVG_PAD_SAME_LOWER;
        if (a.auto_pad == PVG_PAD_VALID) a.pad_begin[i] = a.pad_end[i] = 0;
        if (has_oshape || same) {
            o = has_oshape ? oshape[i] : in * a.stride[i];
            /* Larger than the full output: the extra end elements only receive the bias. */
            int64_t total = PVC_MAX(0, full - o);
            a.pad_begin[i] = a.auto_pad == PVG_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            a.pad_end[i] = total - a.pad_begin[i];
        } else {
            o = full - a.pad_begin[i] - a.pad_end[i];
        }
        if (o < 1)
            return pvg_prep_fail(p, PV_EFORMAT, "spatial dim %d: output size %lld is not positive", i, (long long)o);
        odims[2 + i] = o;
    }
    pvg_out_set(p, 0, X->dtype, X->rank, odims);

    memset(c, 0, sizeof *c);
    pvg_conv_geom_init(&a, &c->g);
    for (int i = 0; i < nsp; i++) {
        c->g.in[pvg_conv_axis(nsp, i)] = odims[2 + i];
        c->g.out[pvg_conv_axis(nsp, i)] = X->dims[2 + i];
    }
    c->batch = X->dims[0];
    c->cin = cin;
    c->cout = cout;
    c->group = a.group;
    int64_t rows = cout / a.group * pvk_conv_ksize(&c->g), xsz = pvk_conv_outsize(&c->g);
    c->slice = pvg_conv_slice(rows, xsz);
    p->workspace = (size_t)(rows * c->slice) * sizeof(float) + pvg_lowp_bytes(p);
    convt_fast_plan(p, c, &a, X->dims + 2, odims + 2);
    if (X->dtype == PV_F32 && W->data) {
        pvk_dnnl_conv_desc d = { .transposed = true, .nsp = nsp, .batch = c->batch, .cin = cin, .cout = cout,
                                 .group = a.group, .bias = pvg_has_in(p, 2), .act = p->node->act,
                                 .bf16 = p->precision == PVC_PREC_BF16 };
        for (int i = 0; i < nsp; i++) {
            d.in[i] = X->dims[2 + i];
            d.out[i] = odims[2 + i];
            d.k[i] = a.k[i];
            d.stride[i] = a.stride[i];
            d.dil[i] = a.dil[i];
            d.pad_begin[i] = a.pad_begin[i];
            /* output_padding / output_shape: what is left at the end (< 0: declined) */
            d.pad_end[i] = (d.in[i] - 1) * a.stride[i] + (a.k[i] - 1) * a.dil[i] + 1 - a.pad_begin[i] - odims[2 + i];
        }
        pvc_msg m = {{0}};
        size_t ws = 0;
        if ((s = pvk_dnnl_conv_create(&d, W->data, p->threads, pvk_dnnl_mode_get(), &c->dnnl, &ws, &m)) != PV_OK)
            return pvg_prep_fail(p, s, "%s", m.text);
        if (c->dnnl) { p->workspace = ws; p->consumed = 1u << 1; c->fast = false; }   /* W reordered into the primitive's copy */
    }
    if (c->fast && X->dtype == PV_F32 && W->dtype == PV_F32 && W->data) {
        /* W packed once for the packed GEMM of the plan's precision (bf16: vdpbf16ps); W lives on
         * the packed copy. BEV neck 2x2 256->256 at 90x90, 2 threads, three alternating runs:
         * fp32 13.8-14.9 ms against 16.4-18.2 for the per-tile GEMM (which packs W^T per tile),
         * bf16 8.7-10.2 against 15.9-19.9. */
        pvc_msg m = {{0}};
        if ((s = pvk_gemm_packed_create(cin, rows, W->data, rows, false, 1.0f, p->precision, NULL, &c->wp, &m)) != PV_OK)
            return pvg_prep_fail(p, s, "%s", m.text);
        p->consumed = 1u << 1;
        p->workspace = (size_t)pvk_convt_fast_packed_ws_floats(&c->fd, c->nbuf) * sizeof(float) + pvg_lowp_bytes(p);
    }
    return PV_OK;
}

static pv_status convt_run_f32(const pvg_exec *x)
{
    const convt_params *c = x->params;
    const float *X = x->in[0].data, *W = x->in[1].data;
    const float *B = x->nin > 2 && x->in[2].rank >= 0 ? x->in[2].data : NULL;
    float *Y = x->out[0].data, *col = x->ws;
    if (c->wp) {
        pvk_convt_fast_packed(x->pool, &c->fd, X, c->wp, B, &x->node->act, Y, col, c->nbuf);
        return PV_OK;
    }
    if (c->fast) {
        pvk_convt_fast_f32(x->pool, &c->fd, X, W, B, &x->node->act, Y, col, c->nbuf);
        return PV_OK;
    }
    int64_t xsz = pvk_conv_outsize(&c->g), ysz = pvk_conv_insize(&c->g), ks = pvk_conv_ksize(&c->g);
    int64_t cg = c->cin / c->group, mg = c->cout / c->group, rows = mg * ks;
    memset(Y, 0, (size_t)(c->batch * c->cout * ysz) * sizeof(float));
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t gi = 0; gi < c->group; gi++) {
            const float *xg = X + (n * c->cin + gi * cg) * xsz;
            const float *wg = W + gi * cg * rows;
            float *yg = Y + (n * c->cout + gi * mg) * ysz;
            for (int64_t q0 = 0; q0 < xsz; q0 += c->slice) {
                int64_t nq = PVC_MIN(c->slice, xsz - q0);
                pvk_gemm_f32(x->pool, rows, nq, cg, wg, rows, true, xg + q0, xsz, false, col, nq, 1.0f, 0.0f);
                pvk_col2im_f32(x->pool, &c->g, col, mg, q0, nq, yg);
            }
        }
    pvk_bias_act_f32(x->pool, Y, c->batch, c->cout, ysz, B, &x->node->act);
    return PV_OK;
}

static pv_status convt_run(const pvg_exec *x)
{
    const convt_params *c = x->params;
    if (c->dnnl) return pvk_dnnl_conv_exec(c->dnnl, x);
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, convt_run_f32) : convt_run_f32(x);
}

static void convt_release(void *params)
{
    convt_params *c = params;
    pvk_dnnl_conv_free(c->dnnl);
    pvk_gemm_packed_free(c->wp);
    c->dnnl = NULL;
    c->wp = NULL;
}

static const char *convt_describe(const void *params)
{
    const convt_params *c = params;
    if (c->dnnl) return pvk_dnnl_conv_impl(c->dnnl);
    if (c->wp) return pvk_gemm_packed_precision(c->wp) == PVC_PREC_BF16 ? "k == stride packed gemm (bf16)" : "k == stride packed gemm";
    return c->fast ? "k == stride gemm" : "gemm+col2im";
}

const pvg_op pvg_op_ConvTranspose = { "ConvTranspose", "", PVG_OP_FUSE_ACT, convt_prepare, convt_run, convt_release,
                                      pvk_dnnl_conv_link_params, convt_describe };
