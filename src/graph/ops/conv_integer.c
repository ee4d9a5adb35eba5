/* ConvInteger (opset 10) and QLinearConv (opset 10): 1-D..3-D convolutions of uint8 / int8 X and
 * W with Conv's attributes (conv_attrs.h).
 *   ConvInteger: int32 Y = conv(X - x_zero_point, W - w_zero_point), exact (wrapping).
 *   QLinearConv: Y = saturate(round((acc + B) * x_scale * w_scale / y_scale) + y_zero_point) of
 *                y_zero_point's dtype (ONNX Runtime's float requantization), B int32 bias.
 * x_zero_point is one value; w_zero_point and w_scale one value or one per output channel.
 * Per image and group: an 8-bit im2col whose padding holds x_zero_point (so it adds nothing),
 * then the integer GEMM (kernels/ref/quant.h) with W as the row operand. */
#include "graph/ops/conv_attrs.h"
#include "graph/ops/qparams.h"
#include "kernels/ref/quant.h"

#include <string.h>

#define U8S8 ((1u << PV_U8) | (1u << PV_I8))

typedef struct qconv_params {
    pvk_conv_geom g;
    int64_t  batch, cin, cout, group, K, P;   /* K = cin / group * taps, P = output pixels */
    bool     direct;                          /* 1x1, stride 1, no padding: X is the col matrix */
    bool     qlinear;
    int      ix, iw, ixz, iwz;                /* input indexes (-1: absent zero point) */
    int64_t  nwz, nws;                        /* w zero point / w scale counts (1 or cout) */
    pv_dtype yt;
    size_t   ws_gemm;
} qconv_params;
_Static_assert(sizeof(qconv_params) <= PVG_PARAMS_BYTES, "qconv params");

static size_t a64(size_t v) { return (v + 63) & ~(size_t)63; }

static pv_status qconv_prepare(pvg_prep *p, bool qlinear)
{
    pv_status s;
    qconv_params *c = p->params;
    memset(c, 0, sizeof *c);
    c->qlinear = qlinear;
    if (qlinear) {
        if (p->nin < 8 || p->nin > 9 || p->nout != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "expects 8 or 9 inputs and 1 output, got %d and %d", p->nin, p->nout);
        c->ix = 0; c->ixz = 2; c->iw = 3; c->iwz = 5;
    } else {
        if (p->nin < 2 || p->nin > 4 || p->nout != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "expects 2 to 4 inputs and 1 output, got %d and %d", p->nin, p->nout);
        c->ix = 0; c->iw = 1;
        c->ixz = p->nin > 2 && pvg_has_in(p, 2) ? 2 : -1;
        c->iwz = p->nin > 3 && pvg_has_in(p, 3) ? 3 : -1;
    }
    if ((s = pvg_check_dtype(p, c->ix, U8S8)) != PV_OK || (s = pvg_check_dtype(p, c->iw, U8S8)) != PV_OK) return s;
    const pvc_tensor *X = &p->in[c->ix], *W = &p->in[c->iw];
    if (X->rank < 3 || X->rank > 5)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input x has rank %d; 1-D, 2-D and 3-D convolutions (rank 3-5) are supported", X->rank);
    if (W->rank != X->rank) return pvg_prep_fail(p, PV_EFORMAT, "w has rank %d, x has rank %d", W->rank, X->rank);
    int nsp = X->rank - 2;
    pvg_conv_attrs a;
    if ((s = pvg_conv_attrs_read(p, nsp, W->dims + 2, &a)) != PV_OK) return s;
    int64_t cin = X->dims[1], cout = W->dims[0];
    if (cin % a.group || cout % a.group || W->dims[1] * a.group != cin)
        return pvg_prep_fail(p, PV_EFORMAT, "channels do not match: x has %lld, w is [%lld, %lld, ...], group %lld",
                             (long long)cin, (long long)cout, (long long)W->dims[1], (long long)a.group);
    int64_t one;
    c->nwz = c->nws = 1;
    if (c->ixz >= 0 && (s = pvg_qparam_check(p, c->ixz, "x_zero_point", 1u << X->dtype, 0, &one)) != PV_OK) return s;
    if (c->iwz >= 0 && (s = pvg_qparam_check(p, c->iwz, "w_zero_point", 1u << W->dtype, cout, &c->nwz)) != PV_OK) return s;
    c->yt = PV_I32;
    if (qlinear) {
        if ((s = pvg_qparam_check(p, 1, "x_scale", 1u << PV_F32, 0, &one)) != PV_OK ||
            (s = pvg_qparam_check(p, 4, "w_scale", 1u << PV_F32, cout, &c->nws)) != PV_OK ||
            (s = pvg_qparam_check(p, 6, "y_scale", 1u << PV_F32, 0, &one)) != PV_OK ||
            (s = pvg_qparam_check(p, 7, "y_zero_point", U8S8, 0, &one)) != PV_OK)
            return s;
        if (!pvg_has_in(p, 1) || !pvg_has_in(p, 4) || !pvg_has_in(p, 6))
            return pvg_prep_fail(p, PV_EFORMAT, "inputs x_scale, w_scale and y_scale are required");
        if (p->nin > 8 && pvg_has_in(p, 8)) {
            if ((s = pvg_check_dtype(p, 8, 1u << PV_I32)) != PV_OK) return s;
            if (p->in[8].rank != 1 || p->in[8].dims[0] != cout)
                return pvg_prep_fail(p, PV_EFORMAT, "B must be 1-D of size %lld", (long long)cout);
        }
        c->yt = pvg_has_in(p, 7) ? p->in[7].dtype : PV_U8;
    }

    int64_t odims[5] = { X->dims[0], cout };
    if ((s = pvg_conv_out_dims(p, X, &a, odims)) != PV_OK) return s;
    pvg_out_set(p, 0, c->yt, X->rank, odims);
    pvg_conv_geom_init(&a, &c->g);
    for (int i = 0; i < nsp; i++) {
        c->g.in[pvg_conv_axis(nsp, i)] = X->dims[2 + i];
        c->g.out[pvg_conv_axis(nsp, i)] = odims[2 + i];
    }
    c->batch = X->dims[0];
    c->cin = cin;
    c->cout = cout;
    c->group = a.group;
    c->K = cin / a.group * pvk_conv_ksize(&c->g);
    c->P = pvk_conv_outsize(&c->g);
    c->direct = pvk_conv_ksize(&c->g) == 1;
    for (int d = 0; d < 3; d++)
        c->direct = c->direct && c->g.stride[d] == 1 && c->g.pad[d] == 0 && c->g.in[d] == c->g.out[d];
    int64_t cog = cout / a.group;
    c->ws_gemm = pvk_qgemm_ws(cog, c->P, c->K, false);
    p->workspace = a64(sizeof(int32_t) * (size_t)c->nwz) + a64(sizeof(float) * (size_t)c->nws) +
                   (c->direct ? 0 : a64((size_t)(c->K * c->P))) +
                   (qlinear ? a64(sizeof(int32_t) * (size_t)(cout * c->P)) : 0) + c->ws_gemm;
    return PV_OK;
}

static pv_status prep_ConvInteger(pvg_prep *p) { return qconv_prepare(p, false); }
static pv_status prep_QLinearConv(pvg_prep *p) { return qconv_prepare(p, true); }

static pv_status qconv_run(const pvg_exec *x)
{
    const qconv_params *c = x->params;
    static const pvc_tensor none = { .rank = -1 };
    char *ws = x->ws;
    int32_t *wz = (int32_t *)ws;
    ws += a64(sizeof(int32_t) * (size_t)c->nwz);
    float *mult = (float *)ws;
    ws += a64(sizeof(float) * (size_t)c->nws);
    uint8_t *col = NULL;
    if (!c->direct) {
        col = (uint8_t *)ws;
        ws += a64((size_t)(c->K * c->P));
    }
    int32_t *acc = NULL;
    if (c->qlinear) {
        acc = (int32_t *)ws;
        ws += a64(sizeof(int32_t) * (size_t)(c->cout * c->P));
    }
    int32_t xz = 0, yz = 0;
    pvg_qzp_read(c->ixz >= 0 ? &x->in[c->ixz] : &none, 1, &xz);
    pvg_qzp_read(c->iwz >= 0 ? &x->in[c->iwz] : &none, c->nwz, wz);
    const int32_t *bias = NULL;
    if (c->qlinear) {
        pvg_qzp_read(&x->in[7], 1, &yz);
        float xs = *(const float *)x->in[1].data, ys = *(const float *)x->in[6].data;
        const float *wsc = x->in[4].data;
        for (int64_t o = 0; o < c->nws; o++) mult[o] = xs * wsc[o] / ys;   /* ORT's order */
        if (x->nin > 8 && x->in[8].data) bias = x->in[8].data;
    }
    const pvc_tensor *X = &x->in[c->ix], *W = &x->in[c->iw];
    int64_t cig = c->cin / c->group, cog = c->cout / c->group, isz = pvk_conv_insize(&c->g);
    for (int64_t n = 0; n < c->batch; n++) {
        int32_t *yn = c->qlinear ? acc : (int32_t *)x->out[0].data + n * c->cout * c->P;
        for (int64_t gi = 0; gi < c->group; gi++) {
            const uint8_t *xg = (const uint8_t *)X->data + (n * c->cin + gi * cig) * isz;
            const uint8_t *bsrc = xg;
            if (!c->direct) {
                pvk_im2col_8(x->pool, &c->g, xg, cig, 0, c->P, (uint8_t)xz, col);
                bsrc = col;
            }
            pvk_qmat am = { (const uint8_t *)W->data + gi * cog * c->K, W->dtype, c->K,
                            c->iwz >= 0 ? wz + (c->nwz > 1 ? gi * cog : 0) : NULL, c->nwz };
            pvk_qmat bm = { bsrc, X->dtype, c->P, c->ixz >= 0 ? &xz : NULL, 1 };
            pvk_qgemm(x->pool, cog, c->P, c->K, &am, &bm, NULL, yn + gi * cog * c->P, c->P, ws);
        }
        if (!c->qlinear) continue;
        uint8_t *yq = (uint8_t *)x->out[0].data + n * c->cout * c->P;
        for (int64_t o = 0; o < c->cout; o++) {
            int32_t *row = acc + o * c->P;
            if (bias)
                for (int64_t i = 0; i < c->P; i++) row[i] = (int32_t)((uint32_t)row[i] + (uint32_t)bias[o]);
            pvk_requantize(x->pool, row, 1, c->P, mult + (c->nws > 1 ? o : 0), 1, yz, c->yt, yq + o * c->P);
        }
    }
    return PV_OK;
}

const pvg_op pvg_op_ConvInteger = { "ConvInteger", "", 0, prep_ConvInteger, qconv_run };
const pvg_op pvg_op_QLinearConv = { "QLinearConv", "", 0, prep_QLinearConv, qconv_run };
