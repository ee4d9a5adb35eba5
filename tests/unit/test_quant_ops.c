/* The quantized operators through the op harness, on what the ONNX backend cases leave out:
 * MatMulInteger with batch broadcast (A batched over a 2-D B; a batched B), zero points per row
 * of A and per column of B, B constant (packed at prepare) and at run time; ConvInteger with
 * groups, strides, padding and per-channel weight zero points; QLinearConv with per-channel
 * scales and bias; QuantizeLinear / DequantizeLinear along a negative axis; refusals with their
 * messages. Expected values come from plain loops here; integer outputs must be exact, and the
 * QLinear ones follow ONNX Runtime's float order (acc * (a_scale * b_scale / y_scale)). Runs
 * with garbage-filled outputs and workspace, guards, inline and on a 2-thread pool. */
#include "op_harness.h"

static pvc_pool *pool2;
static uint64_t rng = 0x853c49e6748fea9bull;
static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static int32_t v8(pv_dtype t, const void *p, int64_t i)
{
    return t == PV_U8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

static void test_matmulinteger_batch(void **state)
{
    (void)state;
    static const pv_dtype ts[] = { PV_U8, PV_I8 };
    for (int c = 0; c < 8; c++) {
        pv_dtype at = ts[c & 1], bt = ts[(c >> 1) & 1];
        bool bbatch = c & 4;   /* B [2,5,37] over A [3,5]; else A [2,3,5] over B [5,37] */
        int64_t M = 3, K = 5, N = 37, nb = 2;
        int64_t ad[3] = { nb, M, K }, bd[3] = { nb, K, N }, zad[1] = { M }, zbd[1] = { N };
        uint8_t A[2 * 3 * 5], B[2 * 5 * 37], za[3], zb[37];
        for (size_t i = 0; i < sizeof A; i++) A[i] = (uint8_t)urand();
        for (size_t i = 0; i < sizeof B; i++) B[i] = (uint8_t)urand();
        for (int i = 0; i < 3; i++) za[i] = (uint8_t)urand();
        for (int i = 0; i < 37; i++) zb[i] = (uint8_t)urand();
        pvc_tensor in[4] = { oph_tensor(at, bbatch ? 2 : 3, bbatch ? ad + 1 : ad, A),
                             oph_tensor(bt, bbatch ? 3 : 2, bbatch ? bd : bd + 1, B),
                             oph_tensor(at, 1, zad, za), oph_tensor(bt, 1, zbd, zb) };
        for (int mode = 0; mode < 3; mode++) {   /* B at run time; B constant; B constant + pool */
            oph_opts o = { .garbage = true, .pool = mode == 2 ? pool2 : NULL };
            oph_result r = oph_run_ex("MatMulInteger", 13, in, 4, mode ? 0xeu : 0xcu, 1, NULL, 0, &o);
            if (r.status != PV_OK) fail_msg("MatMulInteger case %d mode %d: %s %s", c, mode, r.msg.text, r.fault);
            int64_t od[3] = { nb, M, N };
            oph_expect_shape(&r.out[0], PV_I32, 3, od);
            const int32_t *y = r.out[0].data;
            for (int64_t b = 0; b < nb; b++)
                for (int64_t m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        int32_t s = 0;
                        for (int64_t k = 0; k < K; k++) {
                            int64_t ai = (bbatch ? 0 : b * M * K) + m * K + k, bi = (bbatch ? b * K * N : 0) + k * N + n;
                            s += (v8(at, A, ai) - v8(at, za, m)) * (v8(bt, B, bi) - v8(bt, zb, n));
                        }
                        if (y[(b * M + m) * N + n] != s)
                            fail_msg("MatMulInteger case %d mode %d: y[%lld][%lld][%lld] = %d, want %d", c, mode,
                                     (long long)b, (long long)m, (long long)n, y[(b * M + m) * N + n], s);
                    }
            oph_free(&r);
        }
    }
}

/* Direct 2-D integer convolution: groups, stride, pads (begin/end), per-channel w zero point. */
static int32_t conv_at(const uint8_t *x, pv_dtype xt, int32_t xz, const uint8_t *w, pv_dtype wt, int32_t wz,
                       int64_t cin_g, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t g, int64_t oc,
                       int64_t oy, int64_t ox, int64_t s, int64_t pad)
{
    int32_t acc = 0;
    for (int64_t ic = 0; ic < cin_g; ic++)
        for (int64_t ky = 0; ky < kh; ky++)
            for (int64_t kx = 0; kx < kw; kx++) {
                int64_t iy = oy * s - pad + ky, ix = ox * s - pad + kx;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                int32_t xv = v8(xt, x, ((g * cin_g + ic) * H + iy) * W + ix) - xz;
                acc += xv * (v8(wt, w, ((oc * cin_g + ic) * kh + ky) * kw + kx) - wz);
            }
    return acc;
}

static void test_conv_integer(void **state)
{
    (void)state;
    enum { CIN = 4, COUT = 6, H = 7, W = 9, KH = 3, KW = 2, G = 2 };
    const int64_t s = 2, pad = 1, OH = (H + 2 * pad - KH) / s + 1, OW = (W + 2 * pad - KW) / s + 1;
    uint8_t x[CIN * H * W], w[COUT * (CIN / G) * KH * KW], xz = 131, wz[COUT];
    int32_t bias[COUT];
    float wsc[COUT];
    for (size_t i = 0; i < sizeof x; i++) x[i] = (uint8_t)urand();
    for (size_t i = 0; i < sizeof w; i++) w[i] = (uint8_t)urand();
    for (int i = 0; i < COUT; i++) {
        wz[i] = (uint8_t)(urand() % 9) - 4;   /* small int8 zero points */
        bias[i] = (int32_t)(urand() % 2001) - 1000;
        wsc[i] = (float)(urand() % 100 + 1) / 2000.0f;
    }
    int64_t xd[4] = { 1, CIN, H, W }, wd[4] = { COUT, CIN / G, KH, KW }, cd[1] = { COUT };
    const int64_t pads[4] = { pad, pad, pad, pad }, strides[2] = { s, s };
    oph_attr at[3] = { OPH_INT("group", G), OPH_INTS("pads", pads, 4), OPH_INTS("strides", strides, 2) };
    pvc_tensor in[4] = { oph_tensor(PV_U8, 4, xd, x), oph_tensor(PV_I8, 4, wd, w), oph_tensor(PV_U8, 0, NULL, &xz),
                         oph_tensor(PV_I8, 1, cd, wz) };
    oph_opts o = { .garbage = true, .pool = pool2 };
    oph_result r = oph_run_ex("ConvInteger", 13, in, 4, 0xeu, 1, at, 3, &o);
    if (r.status != PV_OK) fail_msg("ConvInteger: %s %s", r.msg.text, r.fault);
    int64_t od[4] = { 1, COUT, OH, OW };
    oph_expect_shape(&r.out[0], PV_I32, 4, od);
    for (int64_t oc = 0; oc < COUT; oc++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                int32_t want = conv_at(x, PV_U8, xz, w, PV_I8, (int8_t)wz[oc], CIN / G, H, W, KH, KW,
                                       oc / (COUT / G), oc, oy, ox, s, pad);
                assert_int_equal(((int32_t *)r.out[0].data)[(oc * OH + oy) * OW + ox], want);
            }
    oph_free(&r);

    /* QLinearConv: the same sums + bias, requantized per output channel to int8. */
    float xs = 0.05f, ys = 0.3f;
    int8_t yz = -3;
    pvc_tensor qin[9] = { oph_tensor(PV_U8, 4, xd, x), oph_tensor(PV_F32, 0, NULL, &xs), oph_tensor(PV_U8, 0, NULL, &xz),
                          oph_tensor(PV_I8, 4, wd, w), oph_tensor(PV_F32, 1, cd, wsc), oph_tensor(PV_I8, 1, cd, wz),
                          oph_tensor(PV_F32, 0, NULL, &ys), oph_tensor(PV_I8, 0, NULL, &yz),
                          oph_tensor(PV_I32, 1, cd, bias) };
    r = oph_run_ex("QLinearConv", 13, qin, 9, 0x1feu, 1, at, 3, &o);
    if (r.status != PV_OK) fail_msg("QLinearConv: %s %s", r.msg.text, r.fault);
    oph_expect_shape(&r.out[0], PV_I8, 4, od);
    for (int64_t oc = 0; oc < COUT; oc++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                int32_t acc = conv_at(x, PV_U8, xz, w, PV_I8, (int8_t)wz[oc], CIN / G, H, W, KH, KW, oc / (COUT / G), oc,
                                      oy, ox, s, pad) + bias[oc];
                float mult = xs * wsc[oc] / ys, v = nearbyintf((float)acc * mult) + (float)yz;
                int32_t want = v < -128 ? -128 : v > 127 ? 127 : (int32_t)v;
                assert_int_equal(((int8_t *)r.out[0].data)[(oc * OH + oy) * OW + ox], want);
            }
    oph_free(&r);
}

static void test_qdq_axis(void **state)
{
    (void)state;
    const float x[6] = { 1.0f, -2.0f, 3.0f, 250.0f, -1.25f, 0.75f }, sc[3] = { 0.5f, 1.0f, 0.25f };
    const int8_t z[3] = { 0, 10, -5 };
    int64_t xd[2] = { 2, 3 }, cd[1] = { 3 };
    oph_attr ax = OPH_INT("axis", -1);
    pvc_tensor in[3] = { oph_tensor(PV_F32, 2, xd, (void *)x), oph_tensor(PV_F32, 1, cd, (void *)sc),
                         oph_tensor(PV_I8, 1, cd, (void *)z) };
    oph_result r = oph_run_ok("QuantizeLinear", 13, in, 3, 0x6u, 1, &ax, 1);
    /* 1/.5=2; -2/1+10=8; 3/.25-5=7; 250/.5=500 -> 127; -1.25+10=8.75 -> 9; .75/.25-5=-2 */
    const int8_t want[6] = { 2, 8, 7, 127, 9, -2 };
    assert_memory_equal(r.out[0].data, want, 6);
    pvc_tensor din[3] = { oph_tensor(PV_I8, 2, xd, r.out[0].data), in[1], in[2] };
    oph_result d = oph_run_ok("DequantizeLinear", 13, din, 3, 0x6u, 1, &ax, 1);
    const double back[6] = { 1.0, -2.0, 3.0, 63.5, -1.0, 0.75 };
    oph_expect_close(d.out[0].data, back, 6, 0.0, "DequantizeLinear");
    oph_free(&r);
    oph_free(&d);
}

static void test_refusals(void **state)
{
    (void)state;
    float x[6] = { 0 }, sc[2] = { 1, 1 };
    int64_t xd[2] = { 2, 3 }, cd[1] = { 2 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 2, xd, x), oph_tensor(PV_F32, 1, cd, sc) };
    oph_result r = oph_run("QuantizeLinear", 13, in, 2, 0x2u, 1, NULL, 0);   /* 2 scales, axis 1 has 3 */
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    assert_non_null(strstr(r.msg.text, "scale"));
    oph_free(&r);
    pvc_tensor mm[2] = { oph_tensor(PV_F32, 2, xd, x), oph_tensor(PV_F32, 2, xd, x) };
    r = oph_run("MatMulInteger", 13, mm, 2, 0, 1, NULL, 0);
    assert_int_not_equal(r.status, PV_OK);
    oph_free(&r);
    uint8_t a[6] = { 0 };
    int64_t bd[2] = { 4, 3 };
    pvc_tensor k[2] = { oph_tensor(PV_U8, 2, xd, a), oph_tensor(PV_U8, 2, bd, a) };
    r = oph_run("MatMulInteger", 13, k, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "inner dims"));
    oph_free(&r);
}

static int setup(void **state)
{
    (void)state;
    return pvc_pool_create(2, &pool2) == PV_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pvc_pool_free(pool2);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmulinteger_batch),
        cmocka_unit_test(test_conv_integer),
        cmocka_unit_test(test_qdq_axis),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
