/* LRN, HannWindow / HammingWindow / BlackmanWindow, EyeLike, Scatter (opsets 9-10), BitShift,
 * Det, MaxUnpool, RoiAlign and the refusals of Upsample / Resize-10. Expectations come from naive double-precision references
 * written here from the ONNX definitions (Hann as sin^2, the Blackman / Hamming constants),
 * independent of the kernels; LRN also runs threaded and must give the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static double rnd(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Odd and even sizes (the window is asymmetric for even ones), several channel counts. */
static void test_lrn(void **state)
{
    (void)state;
    enum { N = 2, H = 3, W = 5, CMAX = 7 };
    static float x[N * CMAX * H * W];
    static double want[N * CMAX * H * W];
    for (int i = 0; i < N * CMAX * H * W; i++) x[i] = (float)rnd(-2, 2);
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    const int64_t sizes[] = { 1, 2, 3, 4, 5, 9 };
    for (int c = 1; c <= CMAX; c += 3)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            int64_t size = sizes[si];
            float alpha = 0.02f, beta = 0.6f, bias = 1.5f;
            int inner = H * W;
            for (int n = 0; n < N; n++)
                for (int ch = 0; ch < c; ch++)
                    for (int i = 0; i < inner; i++) {
                        double sq = 0;
                        for (int j = ch - (int)((size - 1) / 2); j <= ch + (int)((size - 1) - (size - 1) / 2); j++)
                            if (j >= 0 && j < c) sq += (double)x[(n * c + j) * inner + i] * x[(n * c + j) * inner + i];
                        want[(n * c + ch) * inner + i] =
                            x[(n * c + ch) * inner + i] / pow(bias + alpha / (double)size * sq, beta);
                    }
            int64_t d[4] = { N, c, H, W };
            pvc_tensor in = oph_tensor(PV_F32, 4, d, x);
            oph_attr at[4] = { OPH_INT("size", size), OPH_FLOAT("alpha", alpha), OPH_FLOAT("beta", beta),
                               OPH_FLOAT("bias", bias) };
            oph_result r = oph_run_ok("LRN", 13, &in, 1, 0, 1, at, 4);
            oph_expect_close(r.out[0].data, want, N * c * inner, 1e-6, "LRN");
            oph_opts o = { .pool = pool, .garbage = true };
            oph_result rt = oph_run_ex("LRN", 13, &in, 1, 0, 1, at, 4, &o);
            assert_int_equal(rt.status, PV_OK);
            assert_memory_equal(r.out[0].data, rt.out[0].data, pvc_nbytes(&r.out[0]));
            oph_free(&r);
            oph_free(&rt);
        }
    pvc_pool_free(pool);
    int64_t d[4] = { 1, 2, 1, 1 };
    pvc_tensor in = oph_tensor(PV_F32, 4, d, x);
    oph_result r = oph_run("LRN", 13, &in, 1, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "size"));
    oph_attr zero = OPH_INT("size", 0);
    r = oph_run("LRN", 13, &in, 1, 0, 1, &zero, 1);
    assert_int_equal(r.status, PV_EFORMAT);
}

static void test_windows(void **state)
{
    (void)state;
    const int64_t sizes[] = { 1, 2, 7, 10 };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int periodic = 0; periodic < 2; periodic++)
            for (int op = 0; op < 3; op++) {
                int64_t n = sizes[si], d0[1] = { 1 };
                double want[16], den = periodic ? (double)n : (double)(n - 1);
                for (int64_t i = 0; i < n; i++) {
                    double t = den > 0 ? M_PI * (double)i / den : 0.0;   /* half the phase */
                    if (op == 0) want[i] = sin(t) * sin(t);
                    else if (op == 1) want[i] = 0.54347826086956519 - 0.45652173913043481 * cos(2 * t);
                    else want[i] = 0.42 - 0.5 * cos(2 * t) + 0.08 * cos(4 * t);
                }
                static const char *const names[3] = { "HannWindow", "HammingWindow", "BlackmanWindow" };
                pvc_tensor in = oph_tensor(PV_I64, 0, d0, &n);
                oph_attr at = OPH_INT("periodic", periodic);
                oph_result r = oph_run_ok(names[op], 17, &in, 1, 1, 1, &at, 1);
                oph_expect_shape(&r.out[0], PV_F32, 1, &n);
                oph_expect_close(r.out[0].data, want, n, 1e-6, names[op]);
                oph_free(&r);
            }
    int64_t n = 4, d0[1] = { 1 };
    pvc_tensor in = oph_tensor(PV_I64, 0, d0, &n);
    oph_result r = oph_run("HannWindow", 17, &in, 1, 0, 1, NULL, 0);   /* size at run time */
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    oph_attr dbl = OPH_INT("output_datatype", 11);
    r = oph_run("HannWindow", 17, &in, 1, 1, 1, &dbl, 1);
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    assert_non_null(strstr(r.msg.text, "output_datatype"));
    oph_attr i64 = OPH_INT("output_datatype", 7);
    r = oph_run_ok("BlackmanWindow", 17, &in, 1, 1, 1, &i64, 1);   /* truncated toward zero */
    assert_int_equal(r.out[0].dtype, PV_I64);
    oph_free(&r);
    n = -1;
    r = oph_run("HannWindow", 17, &in, 1, 1, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
}

static void test_eyelike(void **state)
{
    (void)state;
    float x[12] = { 0 };
    int64_t d[2] = { 3, 4 };
    pvc_tensor in = oph_tensor(PV_F32, 2, d, x);
    for (int k = -4; k <= 4; k++) {
        oph_attr at = OPH_INT("k", k);
        oph_result r = oph_run_ok("EyeLike", 9, &in, 1, 0, 1, &at, 1);
        oph_expect_shape(&r.out[0], PV_F32, 2, d);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                assert_true(((float *)r.out[0].data)[i * 4 + j] == (j == i + k ? 1.0f : 0.0f));
        oph_free(&r);
    }
    oph_attr ty[2] = { OPH_INT("dtype", 7), OPH_INT("k", 1) };
    oph_result r = oph_run_ok("EyeLike", 9, &in, 1, 0, 1, ty, 2);
    assert_int_equal(r.out[0].dtype, PV_I64);
    assert_int_equal(((int64_t *)r.out[0].data)[1], 1);
    assert_int_equal(((int64_t *)r.out[0].data)[0], 0);
    oph_free(&r);
    int64_t d3[3] = { 1, 3, 4 };
    in = oph_tensor(PV_F32, 3, d3, x);
    r = oph_run("EyeLike", 9, &in, 1, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
}

static void test_scatter_old_name(void **state)
{
    (void)state;
    float data[6] = { 0 }, upd[2] = { 5, 7 };
    int64_t idx[2] = { 2, 0 }, dd[2] = { 2, 3 }, di[2] = { 1, 2 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 2, dd, data), oph_tensor(PV_I64, 2, di, idx), oph_tensor(PV_F32, 2, di, upd) };
    oph_attr ax = OPH_INT("axis", 1);
    oph_result r = oph_run_ok("Scatter", 9, in, 3, 0, 1, &ax, 1);
    const float *y = r.out[0].data;
    assert_true(y[2] == 5 && y[0] == 7 && y[1] == 0 && y[3] == 0);
    oph_free(&r);
    r = oph_run("Scatter", 11, in, 3, 0, 1, &ax, 1);
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "ScatterElements"));
}

/* The pre-11 resampling forms (values are checked against ORT by the op fixtures
 * upsample7_nearest, upsample9_linear, resize10_*): what they refuse. */
static void test_upsample_refusals(void **state)
{
    (void)state;
    float x[16] = { 0 }, mixed[4] = { 1, 1, 2, 0.5f }, up[4] = { 1, 1, 2, 2 };
    int64_t d[4] = { 1, 1, 4, 4 }, d4[1] = { 4 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 4, d, x), oph_tensor(PV_F32, 1, d4, mixed) };
    oph_result r = oph_run("Upsample", 9, in, 2, 3, 1, NULL, 0);
    assert_int_equal(r.status, PV_EUNSUPPORTED);   /* nearest that up- and downsamples */
    oph_attr lin = OPH_STR("mode", "linear");
    r = oph_run_ok("Resize", 10, in, 2, 3, 1, &lin, 1);   /* linear may */
    int64_t want[4] = { 1, 1, 8, 2 };
    oph_expect_shape(&r.out[0], PV_F32, 4, want);
    oph_free(&r);
    in[1] = oph_tensor(PV_F32, 1, d4, up);
    r = oph_run("Upsample", 10, in, 2, 3, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);   /* deprecated at 10 */
    r = oph_run("Upsample", 9, in, 2, 1, 1, NULL, 0);
    assert_int_equal(r.status, PV_EUNSUPPORTED);   /* scales at run time */
    oph_attr cubic = OPH_STR("mode", "cubic");
    r = oph_run("Resize", 10, in, 2, 3, 1, &cubic, 1);
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    oph_attr sc = { .name = "scales", .type = PVG_ATTR_FLOATS, .floats = up, .n = 3 };
    r = oph_run("Upsample", 7, in, 1, 1, 1, &sc, 1);
    assert_int_equal(r.status, PV_EFORMAT);   /* 3 scales for rank 4 */
}

/* uint8 shifts with broadcasting; shifts of 8 or more give 0. */
static void test_bitshift(void **state)
{
    (void)state;
    uint8_t x[6] = { 1, 2, 255, 16, 128, 7 }, k[3] = { 1, 3, 9 };
    int64_t dx[2] = { 2, 3 }, dk[1] = { 3 };
    pvc_tensor in[2] = { oph_tensor(PV_U8, 2, dx, x), oph_tensor(PV_U8, 1, dk, k) };
    oph_attr left = OPH_STR("direction", "LEFT"), right = OPH_STR("direction", "RIGHT");
    oph_result r = oph_run_ok("BitShift", 11, in, 2, 0, 1, &left, 1);
    const uint8_t wl[6] = { 2, 16, 0, 32, 0, 0 }, wr[6] = { 0, 0, 0, 8, 16, 0 };
    assert_memory_equal(r.out[0].data, wl, 6);
    oph_free(&r);
    r = oph_run_ok("BitShift", 11, in, 2, 0, 1, &right, 1);
    assert_memory_equal(r.out[0].data, wr, 6);
    oph_free(&r);
    oph_attr bad = OPH_STR("direction", "UP");
    r = oph_run("BitShift", 11, in, 2, 0, 1, &bad, 1);
    assert_int_equal(r.status, PV_EFORMAT);
    r = oph_run("BitShift", 11, in, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
}

/* Determinants against cofactor expansion in double (sizes 1-4, a batch), singular and empty. */
static double cofactor_det(const double *a, int m)
{
    if (m == 1) return a[0];
    double sum = 0, minor[16];
    for (int c = 0; c < m; c++) {
        int n = 0;
        for (int i = 1; i < m; i++)
            for (int j = 0; j < m; j++) if (j != c) minor[n++] = a[i * m + j];
        sum += (c % 2 ? -1 : 1) * a[c] * cofactor_det(minor, m - 1);
    }
    return sum;
}

static void test_det(void **state)
{
    (void)state;
    for (int m = 1; m <= 4; m++) {
        enum { B = 3 };
        float x[B * 16];
        double want[B], a[16];
        for (int i = 0; i < B * m * m; i++) x[i] = (float)rnd(-2, 2);
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < m * m; i++) a[i] = x[b * m * m + i];
            want[b] = cofactor_det(a, m);
        }
        int64_t d[3] = { B, m, m }, dout[1] = { B };
        pvc_tensor in = oph_tensor(PV_F32, 3, d, x);
        oph_result r = oph_run_ok("Det", 11, &in, 1, 0, 1, NULL, 0);
        oph_expect_shape(&r.out[0], PV_F32, 1, dout);
        oph_expect_close(r.out[0].data, want, B, 1e-5, "Det");
        oph_free(&r);
    }
    float sing[4] = { 1, 2, 2, 4 };
    int64_t d2[2] = { 2, 2 }, d0[2] = { 0, 0 }, d23[2] = { 2, 3 };
    pvc_tensor in = oph_tensor(PV_F32, 2, d2, sing);
    oph_result r = oph_run_ok("Det", 11, &in, 1, 0, 1, NULL, 0);
    assert_int_equal(r.out[0].rank, 0);
    assert_true(((float *)r.out[0].data)[0] == 0.0f);
    oph_free(&r);
    in = oph_tensor(PV_F32, 2, d0, sing);
    r = oph_run_ok("Det", 11, &in, 1, 0, 1, NULL, 0);
    assert_true(((float *)r.out[0].data)[0] == 1.0f);   /* the empty product */
    oph_free(&r);
    in = oph_tensor(PV_F32, 2, d23, sing);
    r = oph_run("Det", 11, &in, 1, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
}

/* Values land at their indices (in the inferred shape); a larger output_shape pads at the end
 * of each axis with coordinates kept; a bad index fails the run; a smaller shape is refused. */
static void test_max_unpool(void **state)
{
    (void)state;
    float x[4] = { 5, 6, 7, 8 };
    int64_t idx[4] = { 5, 7, 13, 15 }, d[4] = { 1, 1, 2, 2 }, ks[2] = { 2, 2 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 4, d, x), oph_tensor(PV_I64, 4, d, idx) };
    oph_attr at[2] = { OPH_INTS("kernel_shape", ks, 2), OPH_INTS("strides", ks, 2) };
    oph_result r = oph_run_ok("MaxUnpool", 11, in, 2, 0, 1, at, 2);
    int64_t want4[4] = { 1, 1, 4, 4 };
    oph_expect_shape(&r.out[0], PV_F32, 4, want4);
    const float *y = r.out[0].data;
    for (int i = 0; i < 16; i++)
        assert_true(y[i] == (i == 5 ? 5 : i == 7 ? 6 : i == 13 ? 7 : i == 15 ? 8 : 0));
    oph_free(&r);
    int64_t shape[4] = { 1, 1, 5, 6 }, d1[1] = { 4 };
    in[2] = oph_tensor(PV_I64, 1, d1, shape);
    r = oph_run_ok("MaxUnpool", 11, in, 3, 4, 1, at, 2);
    oph_expect_shape(&r.out[0], PV_F32, 4, shape);
    y = r.out[0].data;
    for (int i = 0; i < 30; i++)
        assert_true(y[i] == (i == 7 ? 5 : i == 9 ? 6 : i == 19 ? 7 : i == 21 ? 8 : 0));   /* (1,1) (1,3) (3,1) (3,3) */
    oph_free(&r);
    shape[2] = 3;
    r = oph_run("MaxUnpool", 11, in, 3, 4, 1, at, 2);
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    idx[2] = 16;
    r = oph_run("MaxUnpool", 11, in, 2, 0, 1, at, 2);
    assert_int_equal(r.status, PV_EINPUT);
    oph_free(&r);
    r = oph_run("MaxUnpool", 11, in, 2, 0, 1, &at[1], 1);   /* no kernel_shape */
    assert_int_equal(r.status, PV_EFORMAT);
}

/* RoiAlign's values are checked against ORT by the op fixtures roialign16_max_adaptive and
 * roialign10_avg; here: a region inside a constant image averages to the constant, a batch
 * index out of range fails the run, bad attributes and shapes are refused. */
static void test_roi_align(void **state)
{
    (void)state;
    float x[2 * 1 * 6 * 6], rois[8] = { 1, 1, 4, 4, 0, 0, 5, 5 }, *y;
    for (int i = 0; i < 72; i++) x[i] = i < 36 ? 3.0f : -1.0f;
    int64_t bi[2] = { 0, 1 }, dx[4] = { 2, 1, 6, 6 }, dr[2] = { 2, 4 }, db[1] = { 2 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 4, dx, x), oph_tensor(PV_F32, 2, dr, rois), oph_tensor(PV_I64, 1, db, bi) };
    oph_attr at[3] = { OPH_INT("output_height", 2), OPH_INT("output_width", 3), OPH_INT("sampling_ratio", 2) };
    oph_result r = oph_run_ok("RoiAlign", 16, in, 3, 0, 1, at, 3);
    int64_t want[4] = { 2, 1, 2, 3 };
    oph_expect_shape(&r.out[0], PV_F32, 4, want);
    y = r.out[0].data;
    for (int i = 0; i < 6; i++) assert_true(fabsf(y[i] - 3.0f) < 1e-6f && fabsf(y[6 + i] + 1.0f) < 1e-6f);
    oph_free(&r);
    bi[1] = 2;
    r = oph_run("RoiAlign", 16, in, 3, 0, 1, at, 3);
    assert_int_equal(r.status, PV_EINPUT);
    oph_free(&r);
    oph_attr bad = OPH_STR("mode", "median");
    r = oph_run("RoiAlign", 16, in, 3, 0, 1, &bad, 1);
    assert_int_equal(r.status, PV_EFORMAT);
    oph_attr ct = OPH_STR("coordinate_transformation_mode", "half_pixel");
    r = oph_run("RoiAlign", 10, in, 3, 0, 1, &ct, 1);   /* an opset 16 attribute at 10 stays unread */
    assert_int_not_equal(r.status, PV_OK);
    int64_t dr3[2] = { 2, 3 };
    in[1] = oph_tensor(PV_F32, 2, dr3, rois);
    r = oph_run("RoiAlign", 16, in, 3, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_eyelike),
        cmocka_unit_test(test_scatter_old_name),
        cmocka_unit_test(test_upsample_refusals),
        cmocka_unit_test(test_bitshift),
        cmocka_unit_test(test_det),
        cmocka_unit_test(test_max_unpool),
        cmocka_unit_test(test_roi_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
