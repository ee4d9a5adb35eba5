/* Coverage operators: Sum Mean, the parametric activations, IsNaN IsInf, PRelu Xor, CastLike,
 * Dropout, ReduceProd/L1/L2/SumSquare/LogSum/LogSumExp, DepthToSpace SpaceToDepth, Trilu,
 * Hardmax, GlobalMaxPool, InstanceNormalization, LpNormalization, MeanVarianceNormalization,
 * ReverseSequence. Expectations are hand-computed or come from naive double-precision /
 * index-math references written here, independent of the kernels. Error cases check that a
 * bad attribute or shape is a clear status, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"
#include "kernels/ref/extra.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static oph_result run_op(const char *op, int opset, const pvc_tensor *in, int nin, unsigned cmask,
                         const oph_attr *at, int nat)
{
    return oph_run_ok(op, opset, in, nin, cmask, 1, at, nat);
}

static pv_status run_status(const char *op, int opset, const pvc_tensor *in, int nin, unsigned cmask,
                            const oph_attr *at, int nat)
{
    oph_result r = oph_run(op, opset, in, nin, cmask, 1, at, nat);
    /* prepare errors land in r.msg, run errors in the thread's last error */
    const char *m = r.msg.text[0] ? r.msg.text : pv_last_error();
    if (r.status != PV_OK && (!m || !*m)) fail_msg("%s: error without a message", op);
    oph_free(&r);
    return r.status;
}

static uint64_t rng_state = 88172645463325252ull;
static double rnd(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static void fill(float *x, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)rnd(lo, hi);
}

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* ---- Sum, Mean ----------------------------------------------------------------------------- */
static void test_sum_mean(void **state)
{
    (void)state;
    float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 }, c[2] = { 100, 200 };
    int64_t da[2] = { 2, 3 }, db[1] = { 3 }, dc[2] = { 2, 1 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 2, da, a), oph_tensor(PV_F32, 1, db, b), oph_tensor(PV_F32, 2, dc, c) };
    oph_result r = run_op("Sum", 17, in, 3, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, da);
    double ws[6], wm[6];
    for (int i = 0; i < 6; i++) {
        ws[i] = a[i] + b[i % 3] + c[i / 3];
        wm[i] = ws[i] / 3.0;
    }
    oph_expect_close(r.out[0].data, ws, 6, 1e-6, "Sum");
    oph_free(&r);
    r = run_op("Mean", 13, in, 3, 0, NULL, 0);
    oph_expect_close(r.out[0].data, wm, 6, 1e-6, "Mean");
    oph_free(&r);
    /* the output can be larger than input 0: [3] + [2,1] -> [2,3] */
    r = run_op("Mean", 17, &in[1], 2, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, da);
    for (int i = 0; i < 6; i++) wm[i] = (b[i % 3] + c[i / 3]) / 2.0;
    oph_expect_close(r.out[0].data, wm, 6, 1e-6, "Mean bcast");
    oph_free(&r);
    /* one input: a copy */
    r = run_op("Sum", 17, in, 1, 0, NULL, 0);
    for (int i = 0; i < 6; i++) ws[i] = a[i];
    oph_expect_close(r.out[0].data, ws, 6, 0, "Sum one");
    oph_free(&r);

    /* f16 through f32 */
    uint16_t h[3][2];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++) h[k][i] = pvc_f32_to_f16((float)(k * 2 + i) + 0.5f);
    int64_t d2[1] = { 2 };
    pvc_tensor hin[3] = { oph_tensor(PV_F16, 1, d2, h[0]), oph_tensor(PV_F16, 1, d2, h[1]), oph_tensor(PV_F16, 1, d2, h[2]) };
    r = run_op("Mean", 17, hin, 3, 0, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_F16);
    const uint16_t *ho = r.out[0].data;
    assert_true(fabsf(pvc_f16_to_f32(ho[0]) - 2.5f) < 1e-3f);   /* (0.5 + 2.5 + 4.5) / 3 */
    assert_true(fabsf(pvc_f16_to_f32(ho[1]) - 3.5f) < 1e-3f);
    oph_free(&r);

    /* errors: mixed dtypes, shapes that do not broadcast, integers */
    pvc_tensor bad[2] = { in[0], hin[0] };
    assert_int_equal(run_status("Sum", 17, bad, 2, 0, NULL, 0), PV_EFORMAT);
    int64_t d4[1] = { 4 };
    float f4[4] = { 0 };
    pvc_tensor nb[2] = { in[0], oph_tensor(PV_F32, 1, d4, f4) };
    assert_int_equal(run_status("Sum", 17, nb, 2, 0, NULL, 0), PV_EFORMAT);
    int32_t iv[2] = { 1, 2 };
    pvc_tensor ii = oph_tensor(PV_I32, 1, d2, iv);
    assert_int_equal(run_status("Mean", 17, &ii, 1, 0, NULL, 0), PV_EUNSUPPORTED);
}

/* ---- activations ----------------------------------------------------------------------------- */
static double ref_act(const char *op, double v, double al, double be, double ga)
{
    if (!strcmp(op, "Sign")) return v > 0 ? 1 : v < 0 ? -1 : 0;
    if (!strcmp(op, "Softplus")) return log(1.0 + exp(v));
    if (!strcmp(op, "Softsign")) return v / (1.0 + fabs(v));
    if (!strcmp(op, "Elu")) return v < 0 ? al * (exp(v) - 1.0) : v;
    if (!strcmp(op, "Selu")) return v <= 0 ? ga * (al * exp(v) - al) : ga * v;
    if (!strcmp(op, "Celu")) return fmax(0.0, v) + fmin(0.0, al * (exp(v / al) - 1.0));
    if (!strcmp(op, "HardSigmoid")) return fmax(0.0, fmin(1.0, al * v + be));
    if (!strcmp(op, "HardSwish")) return v * fmax(0.0, fmin(1.0, v / 6.0 + 0.5));
    if (!strcmp(op, "ThresholdedRelu")) return v > al ? v : 0.0;
    if (!strcmp(op, "Shrink")) return v < -al ? v + be : v > al ? v - be : 0.0;
    return NAN;
}

static void test_activations_f32(void **state)
{
    (void)state;
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = -6.0f + 0.5f * (float)i;   /* -6 .. 5.5, includes 0 */
    x[3] = 30.0f;                                                 /* large: Softplus stays finite */
    x[4] = -30.0f;
    int64_t d[2] = { 4, 6 };
    pvc_tensor in = oph_tensor(PV_F32, 2, d, x);
    struct {
        const char *op;
        oph_attr at[2];
        int nat;
        double al, be, ga;
    } cases[] = {
        { "Sign", { { 0 } }, 0, 0, 0, 0 },
        { "Softplus", { { 0 } }, 0, 0, 0, 0 },
        { "Softsign", { { 0 } }, 0, 0, 0, 0 },
        { "Elu", { { 0 } }, 0, 1.0, 0, 0 },
        { "Elu", { OPH_FLOAT("alpha", 0.3f) }, 1, 0.3f, 0, 0 },
        { "Selu", { { 0 } }, 0, 1.67326319217681884765625, 0, 1.05070102214813232421875 },
        { "Selu", { OPH_FLOAT("alpha", 2.0f), OPH_FLOAT("gamma", 3.0f) }, 2, 2.0, 0, 3.0 },
        { "Celu", { { 0 } }, 0, 1.0, 0, 0 },
        { "Celu", { OPH_FLOAT("alpha", 2.5f) }, 1, 2.5, 0, 0 },
        { "Celu", { OPH_FLOAT("alpha", -0.5f) }, 1, -0.5, 0, 0 },
        { "HardSigmoid", { { 0 } }, 0, 0.2f, 0.5, 0 },
        { "HardSigmoid", { OPH_FLOAT("alpha", 0.5f), OPH_FLOAT("beta", 0.6f) }, 2, 0.5, 0.6f, 0 },
        { "HardSwish", { { 0 } }, 0, 0, 0, 0 },
        { "ThresholdedRelu", { { 0 } }, 0, 1.0, 0, 0 },
        { "ThresholdedRelu", { OPH_FLOAT("alpha", 2.0f) }, 1, 2.0, 0, 0 },
        { "Shrink", { { 0 } }, 0, 0.5, 0.0, 0 },
        { "Shrink", { OPH_FLOAT("lambd", 1.5f), OPH_FLOAT("bias", 1.5f) }, 2, 1.5, 1.5, 0 },
    };
    for (int c = 0; c < N(cases); c++) {
        oph_result r = run_op(cases[c].op, 17, &in, 1, 0, cases[c].at, cases[c].nat);
        oph_expect_shape(&r.out[0], PV_F32, 2, d);
        double want[24];
        for (int i = 0; i < 24; i++) want[i] = ref_act(cases[c].op, x[i], cases[c].al, cases[c].be, cases[c].ga);
        oph_expect_close(r.out[0].data, want, 24, 2e-6, cases[c].op);
        oph_free(&r);
    }
    /* NaN propagates where the formula keeps it */
    float nanv = NAN;
    int64_t d1[1] = { 1 };
    pvc_tensor nin = oph_tensor(PV_F32, 1, d1, &nanv);
    const char *prop[] = { "Sign", "Softplus", "Softsign", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish" };
    for (int c = 0; c < N(prop); c++) {
        oph_result r = run_op(prop[c], 17, &nin, 1, 0, NULL, 0);
        if (!isnan(((float *)r.out[0].data)[0])) fail_msg("%s(NaN) is not NaN", prop[c]);
        oph_free(&r);
    }
}

static void test_activations_lowp_int(void **state)
{
    (void)state;
    /* bf16 and f16 through f32 */
    float xs[5] = { -2.0f, -0.5f, 0.0f, 0.75f, 3.0f };
    uint16_t hb[5], hh[5];
    for (int i = 0; i < 5; i++) { hb[i] = pvc_f32_to_bf16(xs[i]); hh[i] = pvc_f32_to_f16(xs[i]); }
    int64_t d[1] = { 5 };
    pvc_tensor tb = oph_tensor(PV_BF16, 1, d, hb), th = oph_tensor(PV_F16, 1, d, hh);
    oph_result r = run_op("Elu", 17, &tb, 1, 0, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_BF16);
    for (int i = 0; i < 5; i++) {
        float g = pvc_bf16_to_f32(((uint16_t *)r.out[0].data)[i]);
        double w = ref_act("Elu", xs[i], 1.0, 0, 0);
        if (fabs(g - w) > 1e-2 * fmax(1.0, fabs(w))) fail_msg("Elu bf16[%d]: %g vs %g", i, g, w);
    }
    oph_free(&r);
    r = run_op("HardSwish", 14, &th, 1, 0, NULL, 0);
    for (int i = 0; i < 5; i++) {
        float g = pvc_f16_to_f32(((uint16_t *)r.out[0].data)[i]);
        double w = ref_act("HardSwish", xs[i], 0, 0, 0);
        if (fabs(g - w) > 2e-3 * fmax(1.0, fabs(w))) fail_msg("HardSwish f16[%d]: %g vs %g", i, g, w);
    }
    oph_free(&r);

    /* Sign on integers */
    int32_t i32[5] = { -7, 0, 3, INT32_MIN, INT32_MAX };
    int8_t i8[4] = { -128, -1, 0, 127 };
    uint8_t u8[3] = { 0, 1, 255 };
    int64_t d4[1] = { 4 }, d3[1] = { 3 };
    pvc_tensor t32 = oph_tensor(PV_I32, 1, d, i32), t8 = oph_tensor(PV_I8, 1, d4, i8), tu = oph_tensor(PV_U8, 1, d3, u8);
    r = run_op("Sign", 13, &t32, 1, 0, NULL, 0);
    int32_t w32[5] = { -1, 0, 1, -1, 1 };
    assert_memory_equal(r.out[0].data, w32, sizeof w32);
    oph_free(&r);
    r = run_op("Sign", 13, &t8, 1, 0, NULL, 0);
    int8_t w8[4] = { -1, -1, 0, 1 };
    assert_memory_equal(r.out[0].data, w8, sizeof w8);
    oph_free(&r);
    r = run_op("Sign", 13, &tu, 1, 0, NULL, 0);
    uint8_t wu[3] = { 0, 1, 1 };
    assert_memory_equal(r.out[0].data, wu, sizeof wu);
    oph_free(&r);

    /* Shrink on integers: computed in double, truncated toward zero, saturated */
    int64_t i64[6] = { -5, -1, 0, 1, 5, INT64_MAX };
    int64_t d6[1] = { 6 };
    pvc_tensor t64 = oph_tensor(PV_I64, 1, d6, i64);
    oph_attr sa[2] = { OPH_FLOAT("lambd", 1.5f), OPH_FLOAT("bias", 0.5f) };
    r = run_op("Shrink", 17, &t64, 1, 0, sa, 2);
    int64_t w64[6] = { -4, 0, 0, 0, 4, INT64_MAX };
    assert_memory_equal(r.out[0].data, w64, sizeof w64);
    oph_free(&r);
    uint8_t us[3] = { 0, 2, 255 };
    pvc_tensor tus = oph_tensor(PV_U8, 1, d3, us);
    oph_attr sb[2] = { OPH_FLOAT("lambd", 1.0f), OPH_FLOAT("bias", 5.0f) };
    r = run_op("Shrink", 17, &tus, 1, 0, sb, 2);
    uint8_t wus[3] = { 0, 0, 250 };   /* 2 - 5 = -3 saturates at 0 */
    assert_memory_equal(r.out[0].data, wus, sizeof wus);
    oph_free(&r);

    /* errors */
    assert_int_equal(run_status("Elu", 17, &t32, 1, 0, NULL, 0), PV_EUNSUPPORTED);
    oph_attr c0 = OPH_FLOAT("alpha", 0.0f);
    pvc_tensor tf = oph_tensor(PV_F32, 1, d, xs);
    assert_int_equal(run_status("Celu", 17, &tf, 1, 0, &c0, 1), PV_EFORMAT);
    assert_int_equal(run_status("HardSwish", 13, &tf, 1, 0, NULL, 0), PV_EFORMAT);
    oph_attr wrong = OPH_STR("alpha", "x");
    assert_int_equal(run_status("Elu", 17, &tf, 1, 0, &wrong, 1), PV_EFORMAT);
    oph_attr unknown = OPH_FLOAT("gamma", 1.0f);   /* not an Elu attribute: refused as unused */
    assert_int_equal(run_status("Elu", 17, &tf, 1, 0, &unknown, 1), PV_EUNSUPPORTED);
}

/* ---- IsNaN, IsInf ---------------------------------------------------------------------------- */
static void test_isnan_isinf(void **state)
{
    (void)state;
    float x[6] = { 1.0f, NAN, INFINITY, -INFINITY, 0.0f, -3.0f };
    int64_t d[1] = { 6 };
    pvc_tensor in = oph_tensor(PV_F32, 1, d, x);
    oph_result r = run_op("IsNaN", 13, &in, 1, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_BOOL, 1, d);
    uint8_t wn[6] = { 0, 1, 0, 0, 0, 0 };
    assert_memory_equal(r.out[0].data, wn, 6);
    oph_free(&r);
    r = run_op("IsInf", 17, &in, 1, 0, NULL, 0);
    uint8_t wi[6] = { 0, 0, 1, 1, 0, 0 };
    assert_memory_equal(r.out[0].data, wi, 6);
    oph_free(&r);
    oph_attr neg[1] = { OPH_INT("detect_positive", 0) };
    r = run_op("IsInf", 17, &in, 1, 0, neg, 1);
    uint8_t wneg[6] = { 0, 0, 0, 1, 0, 0 };
    assert_memory_equal(r.out[0].data, wneg, 6);
    oph_free(&r);
    oph_attr pos[1] = { OPH_INT("detect_negative", 0) };
    r = run_op("IsInf", 17, &in, 1, 0, pos, 1);
    uint8_t wpos[6] = { 0, 0, 1, 0, 0, 0 };
    assert_memory_equal(r.out[0].data, wpos, 6);
    oph_free(&r);
    /* f16 */
    uint16_t h[3] = { pvc_f32_to_f16(NAN), pvc_f32_to_f16(-INFINITY), pvc_f32_to_f16(2.0f) };
    int64_t d3[1] = { 3 };
    pvc_tensor th = oph_tensor(PV_F16, 1, d3, h);
    r = run_op("IsNaN", 13, &th, 1, 0, NULL, 0);
    uint8_t whn[3] = { 1, 0, 0 };
    assert_memory_equal(r.out[0].data, whn, 3);
    oph_free(&r);
    r = run_op("IsInf", 13, &th, 1, 0, NULL, 0);
    uint8_t whi[3] = { 0, 1, 0 };
    assert_memory_equal(r.out[0].data, whi, 3);
    oph_free(&r);
    /* errors */
    oph_attr bad = OPH_INT("detect_negative", 2);
    assert_int_equal(run_status("IsInf", 17, &in, 1, 0, &bad, 1), PV_EFORMAT);
    int32_t iv[1] = { 1 };
    int64_t d1[1] = { 1 };
    pvc_tensor ti = oph_tensor(PV_I32, 1, d1, iv);
    assert_int_equal(run_status("IsNaN", 17, &ti, 1, 0, NULL, 0), PV_EUNSUPPORTED);
}

/* ---- PRelu, Xor ---------------------------------------------------------------------------- */
static void test_prelu_xor(void **state)
{
    (void)state;
    float x[2 * 3 * 4];
    fill(x, 24, -2, 2);
    float slope[3] = { 0.1f, -0.5f, 2.0f };
    int64_t dx[3] = { 2, 3, 4 }, ds[2] = { 3, 1 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 3, dx, x), oph_tensor(PV_F32, 2, ds, slope) };
    oph_result r = run_op("PRelu", 16, in, 2, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 3, dx);
    double want[24];
    for (int i = 0; i < 24; i++) want[i] = x[i] < 0 ? x[i] * (double)slope[(i / 4) % 3] : x[i];
    oph_expect_close(r.out[0].data, want, 24, 1e-6, "PRelu");
    oph_free(&r);
    /* scalar slope, same-shape slope */
    float s1 = 0.25f;
    pvc_tensor sc[2] = { in[0], oph_tensor(PV_F32, 0, NULL, &s1) };
    r = run_op("PRelu", 16, sc, 2, 0, NULL, 0);
    for (int i = 0; i < 24; i++) want[i] = x[i] < 0 ? x[i] * 0.25 : x[i];
    oph_expect_close(r.out[0].data, want, 24, 1e-6, "PRelu scalar");
    oph_free(&r);
    float sf[24];
    fill(sf, 24, -1, 1);
    pvc_tensor ss[2] = { in[0], oph_tensor(PV_F32, 3, dx, sf) };
    r = run_op("PRelu", 16, ss, 2, 0, NULL, 0);
    for (int i = 0; i < 24; i++) want[i] = x[i] < 0 ? x[i] * (double)sf[i] : x[i];
    oph_expect_close(r.out[0].data, want, 24, 1e-6, "PRelu full");
    oph_free(&r);
    /* int64 */
    int64_t xi[4] = { -3, 4, -5, 0 }, si[2] = { 2, 3 };
    int64_t d4[1] = { 4 }, d2[2] = { 2, 1 }, d22[2] = { 2, 2 };
    (void)d4;
    pvc_tensor ti[2] = { oph_tensor(PV_I64, 2, d22, xi), oph_tensor(PV_I64, 2, d2, si) };
    r = run_op("PRelu", 16, ti, 2, 0, NULL, 0);
    int64_t wi[4] = { -6, 4, -15, 0 };
    assert_memory_equal(r.out[0].data, wi, sizeof wi);
    oph_free(&r);
    /* slope that would enlarge X is an error */
    float big[5] = { 0 };
    int64_t d5[4] = { 5, 1, 1, 1 };
    pvc_tensor bad[2] = { in[0], oph_tensor(PV_F32, 4, d5, big) };
    assert_int_equal(run_status("PRelu", 16, bad, 2, 0, NULL, 0), PV_EFORMAT);
    pvc_tensor mixed[2] = { in[0], ti[1] };
    assert_int_equal(run_status("PRelu", 16, mixed, 2, 0, NULL, 0), PV_EFORMAT);

    /* Xor with broadcasting */
    uint8_t a[6] = { 0, 1, 1, 0, 1, 0 }, b[3] = { 1, 1, 0 };
    int64_t da[2] = { 2, 3 }, db[1] = { 3 };
    pvc_tensor xb[2] = { oph_tensor(PV_BOOL, 2, da, a), oph_tensor(PV_BOOL, 1, db, b) };
    r = run_op("Xor", 17, xb, 2, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_BOOL, 2, da);
    uint8_t wx[6] = { 1, 0, 1, 1, 0, 0 };
    assert_memory_equal(r.out[0].data, wx, 6);
    oph_free(&r);
    pvc_tensor xf[2] = { in[0], in[0] };
    assert_int_equal(run_status("Xor", 17, xf, 2, 0, NULL, 0), PV_EUNSUPPORTED);
    uint8_t c4[4] = { 0 };
    pvc_tensor xn[2] = { xb[0], oph_tensor(PV_BOOL, 1, d4, c4) };
    assert_int_equal(run_status("Xor", 17, xn, 2, 0, NULL, 0), PV_EFORMAT);
}

/* ---- CastLike, Dropout --------------------------------------------------------------------- */
static void test_castlike(void **state)
{
    (void)state;
    float x[4] = { -2.7f, 0.5f, 3.9f, 1e10f };
    int32_t like[1] = { 0 };
    int64_t d[1] = { 4 }, d1[1] = { 1 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 1, d, x), oph_tensor(PV_I32, 1, d1, like) };
    oph_result r = run_op("CastLike", 15, in, 2, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 1, d);
    int32_t w[4] = { -2, 0, 3, INT32_MAX };
    assert_memory_equal(r.out[0].data, w, sizeof w);
    oph_free(&r);
    uint16_t hl[1] = { 0 };
    pvc_tensor in2[2] = { in[0], oph_tensor(PV_F16, 1, d1, hl) };
    r = run_op("CastLike", 17, in2, 2, 0, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_F16);
    assert_true(fabsf(pvc_f16_to_f32(((uint16_t *)r.out[0].data)[2]) - 3.9f) < 2e-3f);
    oph_free(&r);
    assert_int_equal(run_status("CastLike", 14, in, 2, 0, NULL, 0), PV_EFORMAT);
    oph_attr sat = OPH_INT("saturate", 1);
    assert_int_equal(run_status("CastLike", 17, in, 2, 0, &sat, 1), PV_EUNSUPPORTED);
    assert_int_equal(run_status("CastLike", 17, in, 1, 0, NULL, 0), PV_EFORMAT);
}

static void test_dropout(void **state)
{
    (void)state;
    float x[6] = { 1, -2, 3, -4, 5, -6 }, ratio = 0.7f;
    uint8_t off = 0, on = 1;
    int64_t d[2] = { 2, 3 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 2, d, x), oph_tensor(PV_F32, 0, NULL, &ratio),
                         oph_tensor(PV_BOOL, 0, NULL, &off) };
    oph_attr seed = OPH_INT("seed", 42);
    oph_result r = oph_run("Dropout", 13, in, 3, 0x6u, 2, &seed, 1);
    assert_int_equal(r.status, PV_OK);
    oph_expect_shape(&r.out[0], PV_F32, 2, d);
    oph_expect_shape(&r.out[1], PV_BOOL, 2, d);
    assert_memory_equal(r.out[0].data, x, sizeof x);
    /* the harness treats the view as a copy; run the kernel to see the mask */
    const pvg_op *op = pvg_op_lookup("", "Dropout");
    assert_true(op->flags & PVG_OP_ALIAS);
    float y[6] = { 0 };
    uint8_t mask[6] = { 0 };
    pvc_tensor outs[2] = { oph_tensor(PV_F32, 2, d, y), oph_tensor(PV_BOOL, 2, d, mask) };
    bool mask_true = true;          /* dropout.c's params: { bool mask_true; } (opset >= 12) */
    pvg_exec ex = { NULL, &mask_true, in, 3, outs, 2, NULL, NULL };
    assert_int_equal(op->run(&ex), PV_OK);
    assert_memory_equal(y, x, sizeof x);
    uint8_t ones[6] = { 1, 1, 1, 1, 1, 1 };
    assert_memory_equal(mask, ones, 6);
    oph_free(&r);
    /* opsets 7-11: 'ratio' is an attribute, one input; the mask is data's type before 10 and
     * all zero before 12 (ONNX Runtime's inference mask) */
    oph_attr ratio_attr = OPH_FLOAT("ratio", 0.3f);
    r = oph_run("Dropout", 7, in, 1, 0, 2, &ratio_attr, 1);
    assert_int_equal(r.status, PV_OK);
    oph_expect_shape(&r.out[1], PV_F32, 2, d);
    oph_free(&r);
    r = oph_run("Dropout", 10, in, 1, 0, 2, &ratio_attr, 1);
    assert_int_equal(r.status, PV_OK);
    oph_expect_shape(&r.out[1], PV_BOOL, 2, d);
    oph_free(&r);
    float fmask[6] = { 5, 5, 5, 5, 5, 5 }, fzero[6] = { 0 };
    mask_true = false;
    outs[1] = oph_tensor(PV_F32, 2, d, fmask);
    assert_int_equal(op->run(&ex), PV_OK);
    assert_memory_equal(fmask, fzero, sizeof fzero);
    assert_int_equal(run_status("Dropout", 11, in, 3, 0x6u, &ratio_attr, 1), PV_EFORMAT);
    /* one input, one output */
    r = oph_run("Dropout", 17, in, 1, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_OK);
    oph_free(&r);
    /* training mode: constant true, or not known at plan time */
    in[2].data = &on;
    assert_int_equal(run_status("Dropout", 13, in, 3, 0x6u, NULL, 0), PV_EUNSUPPORTED);
    in[2].data = &off;
    assert_int_equal(run_status("Dropout", 13, in, 3, 0x2u, NULL, 0), PV_EUNSUPPORTED);
    /* ratio must be a scalar */
    float r2[2] = { 0.1f, 0.2f };
    int64_t d2[1] = { 2 };
    pvc_tensor bad[2] = { in[0], oph_tensor(PV_F32, 1, d2, r2) };
    assert_int_equal(run_status("Dropout", 13, bad, 2, 0, NULL, 0), PV_EFORMAT);
}

/* ---- reductions ---------------------------------------------------------------------------- */
typedef enum { R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE } rkind;
static const char *const rnames[] = { "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                      "ReduceLogSum", "ReduceLogSumExp" };

/* Naive reduction in double: every input element is added into its output slot. */
static void ref_reduce(rkind k, const float *x, int rank, const int64_t *dims, unsigned mask, double *y,
                       int64_t ny)
{
    double mx[4096];
    for (int64_t o = 0; o < ny; o++) { y[o] = k == R_PROD ? 1.0 : 0.0; mx[o] = -INFINITY; }
    int64_t nx = numel(rank, dims);
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < nx; i++) {
            int64_t rem = i, o = 0, om = 1;
            for (int d = rank - 1; d >= 0; d--) {
                int64_t c = rem % dims[d];
                rem /= dims[d];
                if (!((mask >> d) & 1u)) { o += c * om; om *= dims[d]; }
            }
            double v = x[i];
            if (pass == 0) { if (v > mx[o]) mx[o] = v; continue; }
            switch (k) {
            case R_PROD: y[o] *= v; break;
            case R_L1: y[o] += fabs(v); break;
            case R_L2: case R_SUMSQ: y[o] += v * v; break;
            case R_LOGSUM: y[o] += v; break;
            case R_LSE: y[o] += exp(v - mx[o]); break;
            }
        }
    }
    for (int64_t o = 0; o < ny; o++) {
        if (k == R_L2) y[o] = sqrt(y[o]);
        else if (k == R_LOGSUM) y[o] = log(y[o]);
        else if (k == R_LSE) y[o] = log(y[o]) + mx[o];
    }
}

static void test_reduce_random(void **state)
{
    (void)state;
    static float x[3 * 4 * 5 * 6];
    int64_t dims[4] = { 3, 4, 5, 6 };
    int64_t nx = numel(4, dims);
    pvc_tensor in = oph_tensor(PV_F32, 4, dims, x);
    int64_t axes_sets[][4] = { { 0 }, { 3 }, { 1, 2 }, { 0, 2 }, { -1, -3 }, { 0, 1, 2, 3 }, { 1, 3 } };
    int naxes[] = { 1, 1, 2, 2, 2, 4, 2 };
    for (int k = 0; k < 6; k++) {
        if (k == R_PROD) fill(x, nx, 0.8, 1.2);
        else if (k == R_LOGSUM) fill(x, nx, 0.1, 2.0);
        else fill(x, nx, -3, 3);
        for (int a = -1; a < N(naxes); a++) {
            for (int keep = 0; keep < 2; keep++) {
                oph_attr at[2];
                int nat = 0;
                unsigned mask = 15;
                if (a >= 0) {
                    at[nat++] = (oph_attr)OPH_INTS("axes", axes_sets[a], naxes[a]);
                    mask = 0;
                    for (int i = 0; i < naxes[a]; i++) mask |= 1u << ((axes_sets[a][i] + 4) % 4);
                }
                at[nat++] = (oph_attr)OPH_INT("keepdims", keep);
                oph_result r = run_op(rnames[k], 13, &in, 1, 0, at, nat);
                int64_t od[4], ny = 1;
                int orank = 0;
                for (int d = 0; d < 4; d++) {
                    if (!((mask >> d) & 1u)) { od[orank++] = dims[d]; ny *= dims[d]; }
                    else if (keep) od[orank++] = 1;
                }
                oph_expect_shape(&r.out[0], PV_F32, orank, od);
                double want[360];
                ref_reduce((rkind)k, x, 4, dims, mask, want, ny);
                char what[64];
                snprintf(what, sizeof what, "%s axes#%d keep=%d", rnames[k], a, keep);
                oph_expect_close(r.out[0].data, want, ny, 2e-5, what);
                oph_free(&r);
            }
        }
    }
}

static void test_reduce_special(void **state)
{
    (void)state;
    /* LogSumExp: large values stay finite, an all -inf row gives -inf, +inf gives +inf */
    float x[6] = { 1000.0f, 1000.0f, -INFINITY, -INFINITY, INFINITY, 1.0f };
    int64_t d[2] = { 3, 2 }, ax1[1] = { 1 };
    pvc_tensor in = oph_tensor(PV_F32, 2, d, x);
    oph_attr at[2] = { OPH_INTS("axes", ax1, 1), OPH_INT("keepdims", 0) };
    oph_result r = run_op("ReduceLogSumExp", 13, &in, 1, 0, at, 2);
    double want[3] = { 1000.0 + log(2.0), -INFINITY, INFINITY };
    oph_expect_close(r.out[0].data, want, 3, 1e-6, "LSE special");
    oph_free(&r);

    /* noop_with_empty_axes: the input unchanged; a scalar still gets each op's map */
    float y[3] = { -2.0f, 3.0f, 4.0f };
    int64_t d3[1] = { 3 };
    pvc_tensor t3 = oph_tensor(PV_F32, 1, d3, y);
    oph_attr noop = OPH_INT("noop_with_empty_axes", 1);
    r = run_op("ReduceL2", 17, &t3, 1, 0, &noop, 1);
    oph_expect_shape(&r.out[0], PV_F32, 1, d3);
    assert_memory_equal(r.out[0].data, y, sizeof y);
    oph_free(&r);
    float s = -3.0f;
    pvc_tensor sc = oph_tensor(PV_F32, 0, NULL, &s);
    r = run_op("ReduceL1", 13, &sc, 1, 0, NULL, 0);
    assert_int_equal(r.out[0].rank, 0);
    assert_true(((float *)r.out[0].data)[0] == 3.0f);
    oph_free(&r);
    r = run_op("ReduceSumSquare", 13, &sc, 1, 0, NULL, 0);
    assert_true(((float *)r.out[0].data)[0] == 9.0f);
    oph_free(&r);

    /* an empty reduction: product 1, sum of squares 0 */
    int64_t de[2] = { 2, 0 };
    float dummy[1];
    pvc_tensor te = oph_tensor(PV_F32, 2, de, dummy);
    oph_attr ka[1] = { OPH_INTS("axes", ax1, 1) };
    r = run_op("ReduceProd", 13, &te, 1, 0, ka, 1);
    assert_true(((float *)r.out[0].data)[0] == 1.0f && ((float *)r.out[0].data)[1] == 1.0f);
    oph_free(&r);

    /* integers: Prod wraps, L1 / SumSquare in the type, L2 is the exact integer root */
    int32_t xi[6] = { 3, -4, 100000, 100000, -7, 2 };
    pvc_tensor ti = oph_tensor(PV_I32, 2, d, xi);
    oph_attr ia[2] = { OPH_INTS("axes", ax1, 1), OPH_INT("keepdims", 0) };
    r = run_op("ReduceProd", 13, &ti, 1, 0, ia, 2);
    int32_t wp[3] = { -12, (int32_t)(uint32_t)(10000000000ull & 0xffffffffu), -14 };
    assert_memory_equal(r.out[0].data, wp, sizeof wp);
    oph_free(&r);
    r = run_op("ReduceL1", 13, &ti, 1, 0, ia, 2);
    int32_t wl1[3] = { 7, 200000, 9 };
    assert_memory_equal(r.out[0].data, wl1, sizeof wl1);
    oph_free(&r);
    r = run_op("ReduceL2", 13, &ti, 1, 0, ia, 2);
    int32_t wl2[3] = { 5, 141421, 7 };   /* floor(sqrt(2e10)) = 141421, floor(sqrt(53)) = 7 */
    assert_memory_equal(r.out[0].data, wl2, sizeof wl2);
    oph_free(&r);
    int8_t x8[4] = { 10, 10, -3, 2 };
    int64_t d22[2] = { 2, 2 };
    pvc_tensor t8 = oph_tensor(PV_I8, 2, d22, x8);
    r = run_op("ReduceSumSquare", 13, &t8, 1, 0, ia, 2);
    int8_t ws8[2] = { (int8_t)(uint8_t)200u, 13 };
    assert_memory_equal(r.out[0].data, ws8, sizeof ws8);
    oph_free(&r);

    /* f16 */
    uint16_t h[4];
    float hv[4] = { 1.5f, -2.0f, 0.25f, 4.0f };
    for (int i = 0; i < 4; i++) h[i] = pvc_f32_to_f16(hv[i]);
    pvc_tensor th = oph_tensor(PV_F16, 2, d22, h);
    r = run_op("ReduceLogSumExp", 13, &th, 1, 0, ia, 2);
    assert_int_equal(r.out[0].dtype, PV_F16);
    const uint16_t *ho = r.out[0].data;
    assert_true(fabs(pvc_f16_to_f32(ho[0]) - log(exp(1.5) + exp(-2.0))) < 2e-3);
    assert_true(fabs(pvc_f16_to_f32(ho[1]) - log(exp(0.25) + exp(4.0))) < 5e-3);
    oph_free(&r);
    r = run_op("ReduceProd", 13, &th, 1, 0, ia, 2);
    ho = r.out[0].data;
    assert_true(pvc_f16_to_f32(ho[0]) == -3.0f && pvc_f16_to_f32(ho[1]) == 1.0f);
    oph_free(&r);

    /* errors */
    assert_int_equal(run_status("ReduceLogSum", 13, &ti, 1, 0, NULL, 0), PV_EUNSUPPORTED);
    int64_t ax9[1] = { 9 }, axdup[2] = { 1, -1 };
    oph_attr e1 = OPH_INTS("axes", ax9, 1), e2 = OPH_INTS("axes", axdup, 2), e3 = OPH_INT("keepdims", 2);
    assert_int_equal(run_status("ReduceL1", 13, &in, 1, 0, &e1, 1), PV_EFORMAT);
    assert_int_equal(run_status("ReduceL1", 13, &in, 1, 0, &e2, 1), PV_EFORMAT);
    assert_int_equal(run_status("ReduceL1", 13, &in, 1, 0, &e3, 1), PV_EFORMAT);
    int64_t axv[1] = { 0 };
    int64_t dax[1] = { 1 };
    pvc_tensor with_axes[2] = { in, oph_tensor(PV_I64, 1, dax, axv) };
    assert_int_equal(run_status("ReduceProd", 13, with_axes, 2, 0x2u, NULL, 0), PV_EFORMAT);
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------ */
static void test_depth_space(void **state)
{
    (void)state;
    enum { NB = 2, C = 8, H = 3, W = 2, B = 2 };
    float x[NB * C * H * W];
    for (int i = 0; i < N(x); i++) x[i] = (float)i;
    int64_t dx[4] = { NB, C, H, W };
    pvc_tensor in = oph_tensor(PV_F32, 4, dx, x);
    for (int crd = 0; crd < 2; crd++) {
        oph_attr at[2] = { OPH_INT("blocksize", B), OPH_STR("mode", crd ? "CRD" : "DCR") };
        oph_result r = run_op("DepthToSpace", 13, &in, 1, 0, at, crd ? 2 : 1);
        int64_t od[4] = { NB, C / (B * B), H * B, W * B };
        oph_expect_shape(&r.out[0], PV_F32, 4, od);
        const float *y = r.out[0].data;
        int c2 = C / (B * B);
        for (int n = 0; n < NB; n++)
            for (int c = 0; c < c2; c++)
                for (int h = 0; h < H * B; h++)
                    for (int w = 0; w < W * B; w++) {
                        int b1 = h % B, b2 = w % B;
                        int ci = crd ? c * B * B + b1 * B + b2 : (b1 * B + b2) * c2 + c;
                        float want = x[((n * C + ci) * H + h / B) * W + w / B];
                        float got = y[((n * c2 + c) * H * B + h) * W * B + w];
                        if (got != want) fail_msg("DepthToSpace %s mismatch at %d,%d,%d,%d", crd ? "CRD" : "DCR", n, c, h, w);
                    }
        oph_free(&r);
    }
    /* SpaceToDepth inverts DepthToSpace DCR */
    int64_t ds[4] = { 1, 2, 4, 6 };
    int16_t xs[48];
    for (int i = 0; i < 48; i++) xs[i] = (int16_t)(i * 3 - 7);
    pvc_tensor ts = oph_tensor(PV_F16, 4, ds, xs);   /* any 2-byte dtype moves the same */
    oph_attr bs = OPH_INT("blocksize", 2);
    oph_result r = run_op("SpaceToDepth", 13, &ts, 1, 0, &bs, 1);
    int64_t sd[4] = { 1, 8, 2, 3 };
    oph_expect_shape(&r.out[0], PV_F16, 4, sd);
    const int16_t *s2d = r.out[0].data;
    for (int c = 0; c < 8; c++)
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 3; w++) {
                int b1 = (c / 2) / 2, b2 = (c / 2) % 2, ci = c % 2;
                assert_int_equal(s2d[(c * 2 + h) * 3 + w], xs[(ci * 4 + h * 2 + b1) * 6 + w * 2 + b2]);
            }
    pvc_tensor back = r.out[0];
    oph_result r2 = run_op("DepthToSpace", 13, &back, 1, 0, &bs, 1);
    assert_memory_equal(r2.out[0].data, xs, sizeof xs);
    oph_free(&r2);
    oph_free(&r);
    /* errors */
    oph_attr b3 = OPH_INT("blocksize", 3), b0 = OPH_INT("blocksize", 0), bm[2] = { OPH_INT("blocksize", 2), OPH_STR("mode", "XYZ") };
    assert_int_equal(run_status("DepthToSpace", 13, &in, 1, 0, &b3, 1), PV_EFORMAT);
    assert_int_equal(run_status("DepthToSpace", 13, &in, 1, 0, &b0, 1), PV_EFORMAT);
    assert_int_equal(run_status("DepthToSpace", 13, &in, 1, 0, bm, 2), PV_EFORMAT);
    assert_int_equal(run_status("DepthToSpace", 13, &in, 1, 0, NULL, 0), PV_EFORMAT);
    assert_int_equal(run_status("SpaceToDepth", 13, &in, 1, 0, &b3, 1), PV_EFORMAT);
    oph_attr mode_s2d[2] = { OPH_INT("blocksize", 1), OPH_STR("mode", "DCR") };   /* no 'mode' there */
    assert_int_equal(run_status("SpaceToDepth", 13, &in, 1, 0, mode_s2d, 2), PV_EUNSUPPORTED);
}

/* ---- Trilu --------------------------------------------------------------------------------- */
static void test_trilu(void **state)
{
    (void)state;
    enum { B = 2, R = 4, C = 5 };
    int64_t x[B * R * C];
    for (int i = 0; i < N(x); i++) x[i] = i + 1;
    int64_t dx[3] = { B, R, C };
    int64_t ks[] = { 0, 1, -1, 3, -2, 7, -9, INT64_MAX, INT64_MIN };
    for (int upper = 0; upper < 2; upper++) {
        for (int kk = -1; kk < N(ks); kk++) {
            int64_t k = kk < 0 ? 0 : ks[kk];
            int64_t dk[1] = { 1 };
            pvc_tensor in[2] = { oph_tensor(PV_I64, 3, dx, x), oph_tensor(PV_I64, kk == 3 ? 1 : 0, dk, &k) };
            oph_attr up = OPH_INT("upper", upper);
            oph_result r = run_op("Trilu", 14, in, kk < 0 ? 1 : 2, 0x2u, &up, 1);
            oph_expect_shape(&r.out[0], PV_I64, 3, dx);
            const int64_t *y = r.out[0].data;
            for (int b = 0; b < B; b++)
                for (int i = 0; i < R; i++)
                    for (int j = 0; j < C; j++) {
                        int idx = (b * R + i) * C + j;
                        bool keep = upper ? (double)j - i >= (double)k : (double)j - i <= (double)k;
                        if (y[idx] != (keep ? x[idx] : 0))
                            fail_msg("Trilu upper=%d k=%lld at %d,%d,%d", upper, (long long)k, b, i, j);
                    }
            oph_free(&r);
        }
    }
    int64_t k = 1;
    pvc_tensor in[2] = { oph_tensor(PV_I64, 3, dx, x), oph_tensor(PV_I64, 0, NULL, &k) };
    assert_int_equal(run_status("Trilu", 14, in, 2, 0, NULL, 0), PV_EUNSUPPORTED);   /* k at run time */
    assert_int_equal(run_status("Trilu", 13, in, 1, 0, NULL, 0), PV_EFORMAT);
    oph_attr up2 = OPH_INT("upper", 2);
    assert_int_equal(run_status("Trilu", 14, in, 1, 0, &up2, 1), PV_EFORMAT);
    int64_t d1[1] = { 4 };
    pvc_tensor v = oph_tensor(PV_I64, 1, d1, x);
    assert_int_equal(run_status("Trilu", 14, &v, 1, 0, NULL, 0), PV_EFORMAT);
}

/* ---- Hardmax, GlobalMaxPool ---------------------------------------------------------------- */
static void test_hardmax_globalmaxpool(void **state)
{
    (void)state;
    float x[2 * 3 * 4];
    fill(x, 24, -1, 1);
    x[5] = x[9] = 5.0f;   /* a tie along axis 1 at (0, 1, 1) and (0, 2, 1): the first wins */
    int64_t dx[3] = { 2, 3, 4 };
    pvc_tensor in = oph_tensor(PV_F32, 3, dx, x);
    for (int axis = -3; axis < 3; axis++) {
        oph_attr at = OPH_INT("axis", axis);
        oph_result r = run_op("Hardmax", 13, &in, 1, 0, &at, 1);
        int ax = (axis + 3) % 3;
        const float *y = r.out[0].data;
        int64_t st[3] = { 12, 4, 1 };
        for (int i = 0; i < 24; i++) {
            int64_t base = i - (i / st[ax] % dx[ax]) * st[ax];
            int64_t best = 0;
            for (int64_t j = 1; j < dx[ax]; j++)
                if (x[base + j * st[ax]] > x[base + best * st[ax]]) best = j;
            float want = (i / st[ax] % dx[ax]) == best ? 1.0f : 0.0f;
            if (y[i] != want) fail_msg("Hardmax axis %d at %d: %g", axis, i, y[i]);
        }
        oph_free(&r);
    }
    oph_result r = run_op("Hardmax", 13, &in, 1, 0, NULL, 0);   /* default axis -1 */
    const float *y = r.out[0].data;
    assert_true(y[5] == 1.0f);
    oph_free(&r);
    uint16_t hb[3] = { pvc_f32_to_bf16(1.0f), pvc_f32_to_bf16(3.0f), pvc_f32_to_bf16(2.0f) };
    int64_t d3[1] = { 3 };
    pvc_tensor tb = oph_tensor(PV_BF16, 1, d3, hb);
    r = run_op("Hardmax", 13, &tb, 1, 0, NULL, 0);
    const uint16_t *yb = r.out[0].data;
    assert_true(pvc_bf16_to_f32(yb[0]) == 0.0f && pvc_bf16_to_f32(yb[1]) == 1.0f && pvc_bf16_to_f32(yb[2]) == 0.0f);
    oph_free(&r);
    oph_attr bad = OPH_INT("axis", 3);
    assert_int_equal(run_status("Hardmax", 13, &in, 1, 0, &bad, 1), PV_EFORMAT);

    /* GlobalMaxPool over [2, 3, 2, 2] */
    float g[24];
    fill(g, 24, -5, 5);
    g[13] = NAN;
    int64_t dg[4] = { 2, 3, 2, 2 };
    pvc_tensor tg = oph_tensor(PV_F32, 4, dg, g);
    r = run_op("GlobalMaxPool", 13, &tg, 1, 0, NULL, 0);
    int64_t og[4] = { 2, 3, 1, 1 };
    oph_expect_shape(&r.out[0], PV_F32, 4, og);
    double want[6];
    for (int pl = 0; pl < 6; pl++) {
        want[pl] = -INFINITY;
        for (int i = 0; i < 4; i++) want[pl] = isnan(g[pl * 4 + i]) || isnan(want[pl]) ? NAN : fmax(want[pl], g[pl * 4 + i]);
    }
    oph_expect_close(r.out[0].data, want, 6, 0, "GlobalMaxPool");
    oph_free(&r);
    int64_t d2[2] = { 2, 3 };
    pvc_tensor t2 = oph_tensor(PV_F32, 2, d2, g);
    assert_int_equal(run_status("GlobalMaxPool", 13, &t2, 1, 0, NULL, 0), PV_EFORMAT);
}

/* ---- InstanceNormalization, LpNormalization, MeanVarianceNormalization --------------------- */
static void test_instancenorm(void **state)
{
    (void)state;
    enum { NB = 2, C = 3, L = 10 };
    float x[NB * C * L], sc[C] = { 1.5f, -0.5f, 2.0f }, bi[C] = { 0.1f, 0.2f, -1.0f };
    fill(x, N(x), -4, 6);
    int64_t dx[4] = { NB, C, 2, 5 }, dc[1] = { C };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 4, dx, x), oph_tensor(PV_F32, 1, dc, sc), oph_tensor(PV_F32, 1, dc, bi) };
    oph_attr eps = OPH_FLOAT("epsilon", 0.01f);
    for (int e = 0; e < 2; e++) {
        oph_result r = run_op("InstanceNormalization", 13, in, 3, 0, &eps, e);
        double want[NB * C * L], ev = e ? 0.01f : 1e-5f;
        for (int pl = 0; pl < NB * C; pl++) {
            double m = 0, v = 0;
            for (int i = 0; i < L; i++) m += x[pl * L + i];
            m /= L;
            for (int i = 0; i < L; i++) v += (x[pl * L + i] - m) * (x[pl * L + i] - m);
            v /= L;
            for (int i = 0; i < L; i++) want[pl * L + i] = (x[pl * L + i] - m) / sqrt(v + ev) * sc[pl % C] + bi[pl % C];
        }
        oph_expect_close(r.out[0].data, want, N(want), 2e-5, "InstanceNormalization");
        oph_free(&r);
    }
    int64_t d2[1] = { 2 };
    pvc_tensor bad[3] = { in[0], oph_tensor(PV_F32, 1, d2, sc), in[2] };
    assert_int_equal(run_status("InstanceNormalization", 13, bad, 3, 0, NULL, 0), PV_EFORMAT);
    assert_int_equal(run_status("InstanceNormalization", 13, in, 2, 0, NULL, 0), PV_EFORMAT);
}

static void test_lpnorm_mvn(void **state)
{
    (void)state;
    float x[3 * 4 * 2];
    fill(x, 24, -3, 3);
    for (int j = 0; j < 4; j++) x[8 + j * 2 + 1] = 0.0f;   /* a zero column along axis 1 */
    int64_t dx[3] = { 3, 4, 2 };
    pvc_tensor in = oph_tensor(PV_F32, 3, dx, x);
    for (int pn = 1; pn <= 2; pn++) {
        for (int axis = -1; axis < 3; axis++) {
            oph_attr at[2] = { OPH_INT("axis", axis), OPH_INT("p", pn) };
            oph_result r = run_op("LpNormalization", 13, &in, 1, 0, at, 2);
            int ax = (axis + 3) % 3;
            int64_t st[3] = { 8, 2, 1 };
            double want[24];
            for (int i = 0; i < 24; i++) {
                int64_t base = i - (i / st[ax] % dx[ax]) * st[ax];
                double nrm = 0;
                for (int64_t j = 0; j < dx[ax]; j++) {
                    double v = x[base + j * st[ax]];
                    nrm += pn == 1 ? fabs(v) : v * v;
                }
                if (pn == 2) nrm = sqrt(nrm);
                want[i] = nrm == 0 ? 0.0 : x[i] / nrm;
            }
            oph_expect_close(r.out[0].data, want, 24, 1e-6, "LpNormalization");
            oph_free(&r);
        }
    }
    oph_attr p3 = OPH_INT("p", 3);
    assert_int_equal(run_status("LpNormalization", 13, &in, 1, 0, &p3, 1), PV_EFORMAT);

    /* MVN: default axes [0, 2, 3] on [2, 3, 2, 2], and custom axes */
    float m[24];
    fill(m, 24, -2, 5);
    int64_t dm[4] = { 2, 3, 2, 2 };
    pvc_tensor tm = oph_tensor(PV_F32, 4, dm, m);
    int64_t ax23[2] = { 2, 3 };
    for (int c = 0; c < 2; c++) {
        oph_attr at = OPH_INTS("axes", ax23, 2);
        oph_result r = run_op("MeanVarianceNormalization", 13, &tm, 1, 0, &at, c);
        unsigned mask = c ? 0xCu : 0xDu;
        double want[24], mean[24] = { 0 }, var[24] = { 0 }, cnt[24] = { 0 };
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < 24; i++) {
                int co[4] = { i / 12, i / 4 % 3, i / 2 % 2, i % 2 }, g = 0;
                for (int d = 0; d < 4; d++) if (!((mask >> d) & 1u)) g = g * (int)dm[d] + co[d];
                if (pass == 0) { mean[g] += m[i]; cnt[g] += 1; }
                else var[g] += (m[i] - mean[g] / cnt[g]) * (m[i] - mean[g] / cnt[g]);
            }
        for (int i = 0; i < 24; i++) {
            int co[4] = { i / 12, i / 4 % 3, i / 2 % 2, i % 2 }, g = 0;
            for (int d = 0; d < 4; d++) if (!((mask >> d) & 1u)) g = g * (int)dm[d] + co[d];
            want[i] = (m[i] - mean[g] / cnt[g]) / (sqrt(var[g] / cnt[g]) + 1e-9);
        }
        oph_expect_close(r.out[0].data, want, 24, 2e-5, "MeanVarianceNormalization");
        oph_free(&r);
    }
    int64_t d2[2] = { 4, 6 };
    pvc_tensor t2 = oph_tensor(PV_F32, 2, d2, m);
    assert_int_equal(run_status("MeanVarianceNormalization", 13, &t2, 1, 0, NULL, 0), PV_EFORMAT);   /* default axes need rank 4 */
}

/* ---- ReverseSequence ----------------------------------------------------------------------- */
static void test_reverse_sequence(void **state)
{
    (void)state;
    enum { T = 4, B = 3, I = 2 };
    int32_t x[T * B * I];
    for (int i = 0; i < N(x); i++) x[i] = i;
    int64_t lens[B] = { 4, 0, 2 };
    int64_t db[1] = { B };
    for (int bm = 0; bm < 2; bm++) {
        int64_t dx[3] = { bm ? B : T, bm ? T : B, I };
        pvc_tensor in[2] = { oph_tensor(PV_I32, 3, dx, x), oph_tensor(PV_I64, 1, db, lens) };
        oph_attr at[2] = { OPH_INT("batch_axis", bm ? 0 : 1), OPH_INT("time_axis", bm ? 1 : 0) };
        for (unsigned cm = 0; cm < 2; cm++) {
            oph_result r = run_op("ReverseSequence", 13, in, 2, cm ? 0x2u : 0u, at, 2);
            const int32_t *y = r.out[0].data;
            for (int t = 0; t < T; t++)
                for (int b = 0; b < B; b++)
                    for (int i = 0; i < I; i++) {
                        int st = t < lens[b] ? (int)lens[b] - 1 - t : t;
                        int o = bm ? (b * T + t) * I + i : (t * B + b) * I + i;
                        int s = bm ? (b * T + st) * I + i : (st * B + b) * I + i;
                        if (y[o] != x[s]) fail_msg("ReverseSequence bm=%d at t=%d b=%d", bm, t, b);
                    }
            oph_free(&r);
        }
    }
    int64_t dx[3] = { T, B, I };
    int64_t badl[B] = { 5, 0, 1 };
    pvc_tensor in[2] = { oph_tensor(PV_I32, 3, dx, x), oph_tensor(PV_I64, 1, db, badl) };
    assert_int_equal(run_status("ReverseSequence", 13, in, 2, 0x2u, NULL, 0), PV_EFORMAT);   /* known at plan time */
    assert_int_equal(run_status("ReverseSequence", 13, in, 2, 0, NULL, 0), PV_EINPUT);       /* found at run */
    oph_attr same[2] = { OPH_INT("batch_axis", 0), OPH_INT("time_axis", 0) };
    in[1].data = lens;
    assert_int_equal(run_status("ReverseSequence", 13, in, 2, 0, same, 2), PV_EFORMAT);
    int64_t d2[1] = { 2 };
    pvc_tensor wrong[2] = { in[0], oph_tensor(PV_I64, 1, d2, lens) };
    assert_int_equal(run_status("ReverseSequence", 13, wrong, 2, 0, NULL, 0), PV_EFORMAT);
}

/* ---- kernels on a thread pool agree with the single-threaded run --------------------------- */
static void test_parallel_kernels(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(4, &pool), PV_OK);
    enum { A = 64, Bd = 33, Cd = 97 };
    static float x[A * Bd * Cd], y1[A * Bd * Cd], y2[A * Bd * Cd];
    static double ws1[A * Cd], ws2[A * Cd];
    fill(x, A * Bd * Cd, 0.99, 1.01);
    int64_t dims[3] = { A, Bd, Cd };
    for (unsigned mask = 1; mask < 8; mask++) {
        pvk_reduce_prod(NULL, PV_F32, 3, dims, mask, x, y1, ws1);
        pvk_reduce_prod(pool, PV_F32, 3, dims, mask, x, y2, ws2);
        int64_t ny = (int64_t)(pvk_reduce_prod_workspace(3, dims, mask) / 8);
        assert_memory_equal(y1, y2, (size_t)ny * sizeof(float));
    }
    pvk_trilu(NULL, 4, A, Bd, Cd, 5, true, x, y1);
    pvk_trilu(pool, 4, A, Bd, Cd, 5, true, x, y2);
    assert_memory_equal(y1, y2, sizeof y1);
    pvk_lp_normalize_f32(NULL, x, y1, A, Bd, Cd, 2);
    pvk_lp_normalize_f32(pool, x, y2, A, Bd, Cd, 2);
    assert_memory_equal(y1, y2, sizeof y1);
    pvk_xunary_args a = { 1.0f, 0.0f, 0.0f };
    pvk_xunary(NULL, PVK_XU_ELU, PV_F32, x, y1, A * Bd * Cd, &a);
    pvk_xunary(pool, PVK_XU_ELU, PV_F32, x, y2, A * Bd * Cd, &a);
    assert_memory_equal(y1, y2, sizeof y1);
    pvc_pool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum_mean),
        cmocka_unit_test(test_activations_f32),
        cmocka_unit_test(test_activations_lowp_int),
        cmocka_unit_test(test_isnan_isinf),
        cmocka_unit_test(test_prelu_xor),
        cmocka_unit_test(test_castlike),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_reduce_random),
        cmocka_unit_test(test_reduce_special),
        cmocka_unit_test(test_depth_space),
        cmocka_unit_test(test_trilu),
        cmocka_unit_test(test_hardmax_globalmaxpool),
        cmocka_unit_test(test_instancenorm),
        cmocka_unit_test(test_lpnorm_mvn),
        cmocka_unit_test(test_reverse_sequence),
        cmocka_unit_test(test_parallel_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
