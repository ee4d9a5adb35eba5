/* Elementwise operators: unary math, binary arithmetic with broadcasting, comparisons, Where,
 * Cast. Expectations are hand-computed or come from a naive double-precision / index-math
 * reference written here, independent of the kernels' row iterator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"
#include "kernels/ref/eltwise.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static oph_result run_op(const char *op, int opset, const pvc_tensor *in, int nin, unsigned cmask,
                         const oph_attr *at, int nat)
{
    return oph_run_ok(op, opset, in, nin, cmask, 1, at, nat);
}

static pv_status run_status(const char *op, const pvc_tensor *in, int nin, const oph_attr *at, int nat)
{
    oph_result r = oph_run(op, 17, in, nin, 0, 1, at, nat);
    oph_free(&r);
    return r.status;
}

/* ---- unary ---------------------------------------------------------------------------------- */
static double ref_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
static double ref_neg(double v) { return -v; }
static double ref_recip(double v) { return 1.0 / v; }

static void test_unary_f32(void **state)
{
    (void)state;
    float x[] = { -2.5f, -1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.5f, 3.0f, 7.75f };
    int64_t d[] = { 3, 3 };
    pvc_tensor in = oph_tensor(PV_F32, 2, d, x);
    struct { const char *op; double (*f)(double); } cases[] = {
        { "Neg", ref_neg }, { "Abs", fabs }, { "Sqrt", sqrt }, { "Reciprocal", ref_recip },
        { "Exp", exp }, { "Log", log }, { "Sin", sin }, { "Cos", cos }, { "Erf", erf },
        { "Tanh", tanh }, { "Sigmoid", ref_sigmoid }, { "Floor", floor }, { "Ceil", ceil },
    };
    for (int c = 0; c < N(cases); c++) {
        oph_result r = run_op(cases[c].op, 13, &in, 1, 0, NULL, 0);
        oph_expect_shape(&r.out[0], PV_F32, 2, d);
        double want[9];
        for (int i = 0; i < 9; i++) want[i] = cases[c].f(x[i]);
        oph_expect_close(r.out[0].data, want, 9, 2e-6, cases[c].op);
        oph_free(&r);
    }
}

static void test_unary_relu_leaky_round(void **state)
{
    (void)state;
    float x[] = { -3.0f, -0.5f, 0.0f, 0.5f, 1.5f, 2.5f, -1.5f, -2.5f, 2.4f, -2.6f };
    int64_t d[] = { 10 };
    pvc_tensor in = oph_tensor(PV_F32, 1, d, x);

    oph_result r = run_op("Relu", 14, &in, 1, 0, NULL, 0);
    double relu[] = { 0, 0, 0, 0.5, 1.5, 2.5, 0, 0, 2.4f, 0 };
    oph_expect_close(r.out[0].data, relu, 10, 0, "Relu");
    oph_free(&r);

    r = run_op("LeakyRelu", 16, &in, 1, 0, NULL, 0);   /* alpha defaults to 0.01 */
    double lr[10];
    for (int i = 0; i < 10; i++) lr[i] = x[i] >= 0 ? x[i] : x[i] * 0.01f;
    oph_expect_close(r.out[0].data, lr, 10, 1e-7, "LeakyRelu default");
    oph_free(&r);

    oph_attr a[] = { OPH_FLOAT("alpha", 0.5f) };
    r = run_op("LeakyRelu", 16, &in, 1, 0, a, 1);
    for (int i = 0; i < 10; i++) lr[i] = x[i] >= 0 ? x[i] : x[i] * 0.5;
    oph_expect_close(r.out[0].data, lr, 10, 0, "LeakyRelu 0.5");
    oph_free(&r);

    r = run_op("Round", 11, &in, 1, 0, NULL, 0);     /* half to even */
    double rd[] = { -3, -0.0, 0, 0, 2, 2, -2, -2, 2, -3 };
    oph_expect_close(r.out[0].data, rd, 10, 0, "Round");
    oph_free(&r);
}

static void test_unary_f16_bf16(void **state)
{
    (void)state;
    float v[] = { -4.0f, -1.0f, 0.0f, 0.5f, 2.0f, 3.0f };
    for (int k = 0; k < 2; k++) {
        pv_dtype t = k ? PV_BF16 : PV_F16;
        uint16_t x[6];
        for (int i = 0; i < 6; i++) x[i] = k ? pvc_f32_to_bf16(v[i]) : pvc_f32_to_f16(v[i]);
        int64_t d[] = { 6 };
        pvc_tensor in = oph_tensor(t, 1, d, x);
        oph_result r = run_op("Sigmoid", 13, &in, 1, 0, NULL, 0);
        assert_int_equal(r.out[0].dtype, t);
        const uint16_t *y = r.out[0].data;
        for (int i = 0; i < 6; i++) {
            float got = k ? pvc_bf16_to_f32(y[i]) : pvc_f16_to_f32(y[i]);
            float want = (float)ref_sigmoid(v[i]);
            assert_true(fabsf(got - want) <= (k ? 4e-3f : 1e-3f));
        }
        oph_free(&r);
        r = run_op("Neg", 13, &in, 1, 0, NULL, 0);
        y = r.out[0].data;
        for (int i = 0; i < 6; i++) assert_true((k ? pvc_bf16_to_f32(y[i]) : pvc_f16_to_f32(y[i])) == -v[i]);
        oph_free(&r);
    }
}

static void test_unary_int(void **state)
{
    (void)state;
    int64_t d[] = { 5 };
    int64_t x64[] = { INT64_MIN, -7, 0, 5, INT64_MAX };
    pvc_tensor t64 = oph_tensor(PV_I64, 1, d, x64);
    oph_result r = run_op("Neg", 13, &t64, 1, 0, NULL, 0);
    int64_t neg64[] = { INT64_MIN, 7, 0, -5, -INT64_MAX };
    assert_memory_equal(r.out[0].data, neg64, sizeof neg64);
    oph_free(&r);
    r = run_op("Abs", 13, &t64, 1, 0, NULL, 0);
    int64_t abs64[] = { INT64_MIN, 7, 0, 5, INT64_MAX };
    assert_memory_equal(r.out[0].data, abs64, sizeof abs64);
    oph_free(&r);
    r = run_op("Relu", 14, &t64, 1, 0, NULL, 0);
    int64_t relu64[] = { 0, 0, 0, 5, INT64_MAX };
    assert_memory_equal(r.out[0].data, relu64, sizeof relu64);
    oph_free(&r);

    int32_t x32[] = { INT32_MIN, -7, 0, 5, INT32_MAX };
    pvc_tensor t32 = oph_tensor(PV_I32, 1, d, x32);
    r = run_op("Abs", 13, &t32, 1, 0, NULL, 0);
    int32_t abs32[] = { INT32_MIN, 7, 0, 5, INT32_MAX };
    assert_memory_equal(r.out[0].data, abs32, sizeof abs32);
    oph_free(&r);

    int8_t x8[] = { -128, -7, 0, 5, 127 };
    pvc_tensor t8 = oph_tensor(PV_I8, 1, d, x8);
    r = run_op("Neg", 13, &t8, 1, 0, NULL, 0);
    int8_t neg8[] = { -128, 7, 0, -5, -127 };
    assert_memory_equal(r.out[0].data, neg8, sizeof neg8);
    oph_free(&r);

    uint8_t xu[] = { 0, 1, 7, 200, 255 };
    pvc_tensor tu = oph_tensor(PV_U8, 1, d, xu);
    r = run_op("Abs", 13, &tu, 1, 0, NULL, 0);
    assert_memory_equal(r.out[0].data, xu, sizeof xu);
    oph_free(&r);
    r = run_op("Neg", 13, &tu, 1, 0, NULL, 0);
    uint8_t negu[] = { 0, 255, 249, 56, 1 };
    assert_memory_equal(r.out[0].data, negu, sizeof negu);
    oph_free(&r);

    uint8_t b[] = { 0, 1, 1, 0, 1 };
    pvc_tensor tb = oph_tensor(PV_BOOL, 1, d, b);
    r = run_op("Not", 1, &tb, 1, 0, NULL, 0);
    uint8_t notb[] = { 1, 0, 0, 1, 0 };
    assert_int_equal(r.out[0].dtype, PV_BOOL);
    assert_memory_equal(r.out[0].data, notb, sizeof notb);
    oph_free(&r);
}

static void test_unary_errors(void **state)
{
    (void)state;
    float x[2] = { 1, 2 };
    int32_t xi[2] = { 1, 2 };
    int64_t d[] = { 2 };
    pvc_tensor f = oph_tensor(PV_F32, 1, d, x), i = oph_tensor(PV_I32, 1, d, xi);
    assert_int_equal(run_status("Not", &f, 1, NULL, 0), PV_EUNSUPPORTED);
    assert_int_equal(run_status("Sqrt", &i, 1, NULL, 0), PV_EUNSUPPORTED);
    assert_int_equal(run_status("Erf", &i, 1, NULL, 0), PV_EUNSUPPORTED);
    pvc_tensor two[2] = { f, f };
    assert_int_equal(run_status("Exp", two, 2, NULL, 0), PV_EFORMAT);
    int64_t ints[] = { 1, 2 };
    oph_attr bad[] = { OPH_INTS("alpha", ints, 2) };
    assert_int_equal(run_status("LeakyRelu", &f, 1, bad, 1), PV_EFORMAT);
    oph_attr unknown[] = { OPH_INT("beta", 1) };
    assert_int_equal(run_status("Relu", &f, 1, unknown, 1), PV_EUNSUPPORTED);   /* unread -> refused */
}

/* ---- Clip ----------------------------------------------------------------------------------- */
static void test_clip(void **state)
{
    (void)state;
    float x[] = { -5.0f, -1.0f, 0.0f, 0.5f, 3.0f, 10.0f, NAN };
    int64_t d[] = { 7 }, d0[1] = { 0 };
    pvc_tensor in = oph_tensor(PV_F32, 1, d, x);

    oph_result r = run_op("Clip", 13, &in, 1, 0, NULL, 0);   /* no bounds: identity */
    double same[7];
    for (int i = 0; i < 7; i++) same[i] = x[i];
    oph_expect_close(r.out[0].data, same, 7, 0, "Clip none");
    oph_free(&r);

    float lo = -1.0f, hi = 2.0f;
    pvc_tensor absent = oph_tensor(PV_F32, 0, d0, NULL);
    absent.rank = -1;
    pvc_tensor three[3] = { in, oph_tensor(PV_F32, 0, d0, &lo), absent };
    r = run_op("Clip", 13, three, 3, 0x2, NULL, 0);          /* min only, constant */
    double mn[] = { -1, -1, 0, 0.5, 3, 10, NAN };
    oph_expect_close(r.out[0].data, mn, 7, 0, "Clip min");
    oph_free(&r);

    three[2] = oph_tensor(PV_F32, 0, d0, &hi);
    r = run_op("Clip", 13, three, 3, 0, NULL, 0);            /* both, run-time */
    double both[] = { -1, -1, 0, 0.5, 2, 2, NAN };
    oph_expect_close(r.out[0].data, both, 7, 0, "Clip both");
    oph_free(&r);

    float hi2 = -3.0f;                                        /* min > max: everything = max */
    three[2] = oph_tensor(PV_F32, 0, d0, &hi2);
    r = run_op("Clip", 13, three, 3, 0, NULL, 0);
    const float *y = r.out[0].data;
    for (int i = 0; i < 6; i++) assert_true(y[i] == -3.0f);
    oph_free(&r);

    int64_t xi[] = { -100, -2, 0, 3, 100, INT64_MIN, INT64_MAX };
    int64_t ilo = -2, ihi = 50;
    pvc_tensor ti[3] = { oph_tensor(PV_I64, 1, d, xi), oph_tensor(PV_I64, 0, d0, &ilo), oph_tensor(PV_I64, 0, d0, &ihi) };
    r = run_op("Clip", 13, ti, 3, 0, NULL, 0);
    int64_t wi[] = { -2, -2, 0, 3, 50, -2, 50 };
    assert_memory_equal(r.out[0].data, wi, sizeof wi);
    oph_free(&r);
    pvc_tensor ti_hi[3] = { ti[0], absent, ti[2] };
    r = run_op("Clip", 13, ti_hi, 3, 0, NULL, 0);
    int64_t wh[] = { -100, -2, 0, 3, 50, INT64_MIN, 50 };
    assert_memory_equal(r.out[0].data, wh, sizeof wh);
    oph_free(&r);

    uint8_t xu[] = { 0, 10, 20, 200, 255, 1, 2 }, ulo = 5, uhi = 199;
    pvc_tensor tu[3] = { oph_tensor(PV_U8, 1, d, xu), oph_tensor(PV_U8, 0, d0, &ulo), oph_tensor(PV_U8, 0, d0, &uhi) };
    r = run_op("Clip", 12, tu, 3, 0, NULL, 0);
    uint8_t wu[] = { 5, 10, 20, 199, 199, 5, 5 };
    assert_memory_equal(r.out[0].data, wu, sizeof wu);
    oph_free(&r);

    /* Clip-6 attributes */
    oph_attr at[] = { OPH_FLOAT("min", 0.0f), OPH_FLOAT("max", 6.0f) };
    r = run_op("Clip", 6, &in, 1, 0, at, 2);
    double relu6[] = { 0, 0, 0, 0.5, 3, 6, NAN };
    oph_expect_close(r.out[0].data, relu6, 7, 0, "Clip-6");
    oph_free(&r);

    /* F16 with F16 bounds */
    uint16_t xh[3] = { pvc_f32_to_f16(-2.0f), pvc_f32_to_f16(0.25f), pvc_f32_to_f16(9.0f) };
    uint16_t hlo = pvc_f32_to_f16(0.0f), hhi = pvc_f32_to_f16(6.0f);
    int64_t d3[] = { 3 };
    pvc_tensor th[3] = { oph_tensor(PV_F16, 1, d3, xh), oph_tensor(PV_F16, 0, d0, &hlo), oph_tensor(PV_F16, 0, d0, &hhi) };
    r = run_op("Clip", 13, th, 3, 0, NULL, 0);
    const uint16_t *yh = r.out[0].data;
    assert_true(pvc_f16_to_f32(yh[0]) == 0.0f && pvc_f16_to_f32(yh[1]) == 0.25f && pvc_f16_to_f32(yh[2]) == 6.0f);
    oph_free(&r);

    /* errors: bound dtype differs, bound not a scalar */
    pvc_tensor bad[2] = { in, oph_tensor(PV_I64, 0, d0, &ilo) };
    assert_int_equal(run_status("Clip", bad, 2, NULL, 0), PV_EFORMAT);
    float two[2] = { 0, 1 };
    int64_t d2[] = { 2 };
    bad[1] = oph_tensor(PV_F32, 1, d2, two);
    assert_int_equal(run_status("Clip", bad, 2, NULL, 0), PV_EFORMAT);
    pvc_tensor four[4] = { in, three[1], three[1], three[1] };
    oph_result r4 = oph_run("Clip", 13, four, 4, 0, 1, NULL, 0);
    assert_int_equal(r4.status, PV_EFORMAT);
    assert_non_null(strstr(r4.msg.text, "expects 1 to 3 inputs"));
    oph_free(&r4);
    oph_result r6 = oph_run("Clip", 6, three, 2, 0, 1, NULL, 0);   /* Clip-6 has no bound inputs */
    assert_int_equal(r6.status, PV_EFORMAT);
    oph_free(&r6);
}

/* ---- binary: naive broadcast reference ------------------------------------------------------ */
/* Flat index into t of the element that output index o (of shape y) reads. */
static int64_t bcast_index(const pvc_tensor *y, const pvc_tensor *t, int64_t o)
{
    int64_t idx = 0, mul = 1;
    for (int i = y->rank - 1; i >= 0; i--) {
        int64_t c = o % y->dims[i];
        o /= y->dims[i];
        int j = i - (y->rank - t->rank);
        if (j < 0) continue;
        if (t->dims[j] != 1) idx += c * mul;
        mul *= t->dims[j];
    }
    return idx;
}

static void test_binary_f32_broadcast(void **state)
{
    (void)state;
    /* [2,1,3] op [4,1] -> [2,4,3] */
    float a[6] = { 1, 2, 3, 4, 5, 6 }, b[4] = { 10, -20, 0.5f, 4 };
    int64_t da[] = { 2, 1, 3 }, db[] = { 4, 1 }, dy[] = { 2, 4, 3 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 3, da, a), oph_tensor(PV_F32, 2, db, b) };
    const char *ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max" };
    for (int k = 0; k < N(ops); k++) {
        oph_result r = run_op(ops[k], 14, in, 2, 0, NULL, 0);
        oph_expect_shape(&r.out[0], PV_F32, 3, dy);
        double want[24];
        for (int o = 0; o < 24; o++) {
            double x = a[bcast_index(&r.out[0], &in[0], o)], z = b[bcast_index(&r.out[0], &in[1], o)];
            switch (k) {
            case 0: want[o] = x + z; break;
            case 1: want[o] = x - z; break;
            case 2: want[o] = x * z; break;
            case 3: want[o] = x / z; break;
            case 4: want[o] = pow(x, z); break;
            case 5: want[o] = fmin(x, z); break;
            default: want[o] = fmax(x, z); break;
            }
        }
        oph_expect_close(r.out[0].data, want, 24, 2e-6, ops[k]);
        oph_free(&r);
    }
}

static void test_binary_scalar_paths(void **state)
{
    (void)state;
    float a[5] = { 1, 2, 3, 4, 5 }, s = 2.0f;
    int64_t d[] = { 5 };
    pvc_tensor va = oph_tensor(PV_F32, 1, d, a), sc = oph_tensor(PV_F32, 0, d, &s);
    pvc_tensor vs[2] = { va, sc }, sv[2] = { sc, va }, ss[2] = { sc, sc };
    oph_result r = run_op("Sub", 14, vs, 2, 0, NULL, 0);
    double w1[] = { -1, 0, 1, 2, 3 };
    oph_expect_close(r.out[0].data, w1, 5, 0, "v-s");
    oph_free(&r);
    r = run_op("Sub", 14, sv, 2, 0, NULL, 0);
    double w2[] = { 1, 0, -1, -2, -3 };
    oph_expect_close(r.out[0].data, w2, 5, 0, "s-v");
    oph_free(&r);
    r = run_op("Div", 14, ss, 2, 0, NULL, 0);
    assert_int_equal(r.out[0].rank, 0);
    assert_true(*(float *)r.out[0].data == 1.0f);
    oph_free(&r);
    r = run_op("Pow", 15, vs, 2, 0, NULL, 0);                  /* the x*x path */
    double w3[] = { 1, 4, 9, 16, 25 };
    oph_expect_close(r.out[0].data, w3, 5, 0, "pow2");
    oph_free(&r);
    r = run_op("Pow", 15, sv, 2, 0, NULL, 0);
    double w4[] = { 2, 4, 8, 16, 32 };
    oph_expect_close(r.out[0].data, w4, 5, 1e-7, "2**v");
    oph_free(&r);

    /* same-rank broadcast with a size-1 axis in the middle, against one with a 0 dim */
    int64_t d0[] = { 0, 3 }, d1[] = { 1, 3 };
    float z[3] = { 1, 2, 3 };
    pvc_tensor e[2] = { oph_tensor(PV_F32, 2, d0, NULL), oph_tensor(PV_F32, 2, d1, z) };
    r = run_op("Add", 14, e, 2, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, d0);
    oph_free(&r);
}

static void test_binary_int(void **state)
{
    (void)state;
    int64_t d[] = { 8 };
    int64_t a[] = { 7, -7, 7, -7, 5, INT64_MIN, 0, 9 };
    int64_t b[] = { 2, 2, -2, -2, 0, -1, 3, 3 };
    pvc_tensor in[2] = { oph_tensor(PV_I64, 1, d, a), oph_tensor(PV_I64, 1, d, b) };
    oph_result r = run_op("Div", 14, in, 2, 0, NULL, 0);
    int64_t div[] = { 3, -3, -3, 3, 0, INT64_MIN, 0, 3 };
    assert_memory_equal(r.out[0].data, div, sizeof div);
    oph_free(&r);
    r = run_op("Mod", 13, in, 2, 0, NULL, 0);                  /* sign of the divisor */
    int64_t mod[] = { 1, 1, -1, -1, 0, 0, 0, 0 };
    assert_memory_equal(r.out[0].data, mod, sizeof mod);
    oph_free(&r);
    oph_attr fm[] = { OPH_INT("fmod", 1) };
    r = run_op("Mod", 13, in, 2, 0, fm, 1);                    /* sign of the dividend */
    int64_t fmd[] = { 1, -1, 1, -1, 0, 0, 0, 0 };
    assert_memory_equal(r.out[0].data, fmd, sizeof fmd);
    oph_free(&r);
    r = run_op("Mul", 14, in, 2, 0, NULL, 0);
    int64_t mul[] = { 14, -14, -14, 14, 0, INT64_MIN, 0, 27 };  /* MIN * -1 wraps */
    assert_memory_equal(r.out[0].data, mul, sizeof mul);
    oph_free(&r);

    int32_t a32[] = { INT32_MAX, INT32_MIN, 100, -9 }, b32[] = { 1, 1, 7, 4 };
    int64_t d4[] = { 4 };
    pvc_tensor i32[2] = { oph_tensor(PV_I32, 1, d4, a32), oph_tensor(PV_I32, 1, d4, b32) };
    r = run_op("Add", 14, i32, 2, 0, NULL, 0);
    int32_t add32[] = { INT32_MIN, INT32_MIN + 1, 107, -5 };
    assert_memory_equal(r.out[0].data, add32, sizeof add32);
    oph_free(&r);
    r = run_op("Sub", 14, i32, 2, 0, NULL, 0);
    int32_t sub32[] = { INT32_MAX - 1, INT32_MAX, 93, -13 };
    assert_memory_equal(r.out[0].data, sub32, sizeof sub32);
    oph_free(&r);
    r = run_op("Mod", 13, i32, 2, 0, NULL, 0);
    int32_t mod32[] = { 0, 0, 2, 3 };
    assert_memory_equal(r.out[0].data, mod32, sizeof mod32);
    oph_free(&r);

    uint8_t au[] = { 250, 3, 200, 9 }, bu[] = { 10, 5, 2, 0 };
    pvc_tensor u8[2] = { oph_tensor(PV_U8, 1, d4, au), oph_tensor(PV_U8, 1, d4, bu) };
    r = run_op("Add", 14, u8, 2, 0, NULL, 0);
    uint8_t addu[] = { 4, 8, 202, 9 };
    assert_memory_equal(r.out[0].data, addu, sizeof addu);
    oph_free(&r);
    r = run_op("Sub", 14, u8, 2, 0, NULL, 0);
    uint8_t subu[] = { 240, 254, 198, 9 };
    assert_memory_equal(r.out[0].data, subu, sizeof subu);
    oph_free(&r);
    r = run_op("Div", 14, u8, 2, 0, NULL, 0);
    uint8_t divu[] = { 25, 0, 100, 0 };
    assert_memory_equal(r.out[0].data, divu, sizeof divu);
    oph_free(&r);

    int8_t a8[] = { -128, 100, -7, 7 }, b8[] = { -1, 100, 3, -3 };
    pvc_tensor i8[2] = { oph_tensor(PV_I8, 1, d4, a8), oph_tensor(PV_I8, 1, d4, b8) };
    r = run_op("Div", 14, i8, 2, 0, NULL, 0);
    int8_t div8[] = { -128, 1, -2, -2 };
    assert_memory_equal(r.out[0].data, div8, sizeof div8);
    oph_free(&r);
    r = run_op("Mul", 14, i8, 2, 0, NULL, 0);
    int8_t mul8[] = { -128, 16, -21, -21 };                     /* 100*100 = 10000 = 16 mod 256 */
    assert_memory_equal(r.out[0].data, mul8, sizeof mul8);
    oph_free(&r);
    r = run_op("Mod", 13, i8, 2, 0, NULL, 0);
    int8_t mod8[] = { 0, 0, 2, -2 };
    assert_memory_equal(r.out[0].data, mod8, sizeof mod8);
    oph_free(&r);

    /* shape arithmetic: [N,C,H,W] shape * scalar, broadcast int64 */
    int64_t shp[] = { 1, 3, 224, 224 }, two = 2;
    int64_t d1[] = { 4 };
    pvc_tensor sh[2] = { oph_tensor(PV_I64, 1, d1, shp), oph_tensor(PV_I64, 0, d1, &two) };
    r = run_op("Div", 14, sh, 2, 0x3, NULL, 0);
    int64_t half[] = { 0, 1, 112, 112 };
    assert_memory_equal(r.out[0].data, half, sizeof half);
    oph_free(&r);
}

static void test_mod_float_and_errors(void **state)
{
    (void)state;
    float a[] = { 5.5f, -5.5f, 5.5f, -5.5f }, b[] = { 2, 2, -2, -2 };
    int64_t d[] = { 4 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 1, d, a), oph_tensor(PV_F32, 1, d, b) };
    oph_attr fm1[] = { OPH_INT("fmod", 1) }, fm0[] = { OPH_INT("fmod", 0) }, fm2[] = { OPH_INT("fmod", 2) };
    oph_result r = run_op("Mod", 13, in, 2, 0, fm1, 1);
    double w[] = { 1.5, -1.5, 1.5, -1.5 };
    oph_expect_close(r.out[0].data, w, 4, 0, "fmod");
    oph_free(&r);
    assert_int_equal(run_status("Mod", in, 2, fm0, 1), PV_EFORMAT);
    assert_int_equal(run_status("Mod", in, 2, NULL, 0), PV_EFORMAT);
    int64_t ia[4] = { 1, 2, 3, 4 };
    pvc_tensor ii[2] = { oph_tensor(PV_I64, 1, d, ia), oph_tensor(PV_I64, 1, d, ia) };
    assert_int_equal(run_status("Mod", ii, 2, fm2, 1), PV_EFORMAT);

    /* dtype mismatch, shape mismatch, arity, bool arithmetic */
    pvc_tensor mix[2] = { in[0], ii[0] };
    assert_int_equal(run_status("Add", mix, 2, NULL, 0), PV_EFORMAT);
    int64_t d3[] = { 3 };
    pvc_tensor bad[2] = { in[0], oph_tensor(PV_F32, 1, d3, b) };
    assert_int_equal(run_status("Mul", bad, 2, NULL, 0), PV_EFORMAT);
    assert_int_equal(run_status("Sub", in, 1, NULL, 0), PV_EFORMAT);
    uint8_t bb[4] = { 0 };
    pvc_tensor bools[2] = { oph_tensor(PV_BOOL, 1, d, bb), oph_tensor(PV_BOOL, 1, d, bb) };
    assert_int_equal(run_status("Add", bools, 2, NULL, 0), PV_EUNSUPPORTED);
    pvc_tensor three[3] = { in[0], in[1], in[0] };
    assert_int_equal(run_status("Max", three, 3, NULL, 0), PV_OK);
    pvc_tensor three_bad[3] = { in[0], in[1], bad[1] };
    assert_int_equal(run_status("Max", three_bad, 3, NULL, 0), PV_EFORMAT);
}

static void test_pow_mixed(void **state)
{
    (void)state;
    int64_t d[] = { 4 };
    float x[] = { 2.0f, -3.0f, 0.5f, 10.0f };
    int64_t e[] = { 3, 2, -1, 0 };
    pvc_tensor fe[2] = { oph_tensor(PV_F32, 1, d, x), oph_tensor(PV_I64, 1, d, e) };
    oph_result r = run_op("Pow", 15, fe, 2, 0, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_F32);
    double w[] = { 8, 9, 2, 1 };
    oph_expect_close(r.out[0].data, w, 4, 0, "f32**i64");
    oph_free(&r);

    int64_t bi[] = { 3, -2, 1, -1, 2, 0 }, ei[] = { 39, 63, -5, -3, -1, 0 };
    int64_t d6[] = { 6 };
    pvc_tensor ii[2] = { oph_tensor(PV_I64, 1, d6, bi), oph_tensor(PV_I64, 1, d6, ei) };
    r = run_op("Pow", 15, ii, 2, 0, NULL, 0);
    int64_t wi[] = { 4052555153018976267LL, INT64_MIN, 1, -1, 0, 1 };
    assert_memory_equal(r.out[0].data, wi, sizeof wi);
    oph_free(&r);

    int32_t b32[] = { 4, 9, 2, 7 };
    float ef[] = { 0.5f, 0.5f, 10.0f, 1.0f };
    pvc_tensor i32f[2] = { oph_tensor(PV_I32, 1, d, b32), oph_tensor(PV_F32, 1, d, ef) };
    r = run_op("Pow", 15, i32f, 2, 0, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_I32);
    int32_t w32[] = { 2, 3, 1024, 7 };
    assert_memory_equal(r.out[0].data, w32, sizeof w32);
    oph_free(&r);

    int8_t e8[] = { 2, 3, 1, 0 };
    pvc_tensor i32i8[2] = { oph_tensor(PV_I32, 1, d, b32), oph_tensor(PV_I8, 1, d, e8) };
    r = run_op("Pow", 15, i32i8, 2, 0, NULL, 0);
    int32_t w8[] = { 16, 729, 2, 1 };
    assert_memory_equal(r.out[0].data, w8, sizeof w8);
    oph_free(&r);

    uint8_t bb[4] = { 1, 0, 1, 0 };
    pvc_tensor fb[2] = { fe[0], oph_tensor(PV_BOOL, 1, d, bb) };
    assert_int_equal(run_status("Pow", fb, 2, NULL, 0), PV_EUNSUPPORTED);
}

static void test_min_max_variadic(void **state)
{
    (void)state;
    float a[] = { 1, 5, NAN, -2 }, b[] = { 3 }, c[] = { 0, 9, 1, 4, 2, 2, 2, 2 };
    int64_t da[] = { 4 }, db[] = { 1 }, dc[] = { 2, 4 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 1, da, a), oph_tensor(PV_F32, 1, db, b), oph_tensor(PV_F32, 2, dc, c) };
    oph_result r = run_op("Min", 13, in, 3, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, dc);
    double wmin[] = { 0, 3, NAN, -2, 1, 2, NAN, -2 };
    oph_expect_close(r.out[0].data, wmin, 8, 0, "Min3");
    oph_free(&r);
    r = run_op("Max", 13, in, 3, 0, NULL, 0);
    double wmax[] = { 3, 9, NAN, 4, 3, 5, NAN, 3 };
    oph_expect_close(r.out[0].data, wmax, 8, 0, "Max3");
    oph_free(&r);
    r = run_op("Max", 13, in, 1, 0, NULL, 0);
    double w1[] = { 1, 5, NAN, -2 };
    oph_expect_close(r.out[0].data, w1, 4, 0, "Max1");
    oph_free(&r);

    int32_t ia[] = { -5, 7 }, ib[] = { 3, -9 };
    int64_t d2[] = { 2 };
    pvc_tensor ii[2] = { oph_tensor(PV_I32, 1, d2, ia), oph_tensor(PV_I32, 1, d2, ib) };
    r = run_op("Min", 13, ii, 2, 0, NULL, 0);
    int32_t wi[] = { -5, -9 };
    assert_memory_equal(r.out[0].data, wi, sizeof wi);
    oph_free(&r);
}

/* ---- comparisons and logic ------------------------------------------------------------------ */
static void test_compare(void **state)
{
    (void)state;
    float a[] = { 1, 2, 3, NAN, 1, 2 }, b[] = { 2, 2, 2 };
    int64_t da[] = { 2, 3 }, db[] = { 3 };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 2, da, a), oph_tensor(PV_F32, 1, db, b) };
    struct { const char *op; uint8_t w[6]; } cases[] = {
        { "Equal", { 0, 1, 0, 0, 0, 1 } },        { "Less", { 1, 0, 0, 0, 1, 0 } },
        { "Greater", { 0, 0, 1, 0, 0, 0 } },      { "LessOrEqual", { 1, 1, 0, 0, 1, 1 } },
        { "GreaterOrEqual", { 0, 1, 1, 0, 0, 1 } },
    };
    for (int k = 0; k < N(cases); k++) {
        oph_result r = run_op(cases[k].op, 16, in, 2, 0, NULL, 0);
        oph_expect_shape(&r.out[0], PV_BOOL, 2, da);
        assert_memory_equal(r.out[0].data, cases[k].w, 6);
        oph_free(&r);
    }

    int64_t ia[] = { -1, 5, INT64_MAX }, ib[] = { -1 };
    int64_t d3[] = { 3 }, d1[] = { 1 };
    pvc_tensor ii[2] = { oph_tensor(PV_I64, 1, d3, ia), oph_tensor(PV_I64, 1, d1, ib) };
    oph_result r = run_op("Equal", 13, ii, 2, 0, NULL, 0);
    uint8_t weq[] = { 1, 0, 0 };
    assert_memory_equal(r.out[0].data, weq, 3);
    oph_free(&r);
    r = run_op("Greater", 13, ii, 2, 0, NULL, 0);
    uint8_t wgt[] = { 0, 1, 1 };
    assert_memory_equal(r.out[0].data, wgt, 3);
    oph_free(&r);

    uint16_t ha[3] = { pvc_f32_to_f16(1.0f), pvc_f32_to_f16(2.0f), pvc_f32_to_f16(-1.0f) };
    uint16_t hb[1] = { pvc_f32_to_f16(1.0f) };
    pvc_tensor hh[2] = { oph_tensor(PV_F16, 1, d3, ha), oph_tensor(PV_F16, 1, d1, hb) };
    r = run_op("LessOrEqual", 16, hh, 2, 0, NULL, 0);
    uint8_t wle[] = { 1, 0, 1 };
    assert_int_equal(r.out[0].dtype, PV_BOOL);
    assert_memory_equal(r.out[0].data, wle, 3);
    oph_free(&r);

    uint8_t p[] = { 0, 0, 1, 1 }, q[] = { 0, 1, 0, 1 };
    int64_t d4[] = { 4 };
    pvc_tensor bb[2] = { oph_tensor(PV_BOOL, 1, d4, p), oph_tensor(PV_BOOL, 1, d4, q) };
    r = run_op("And", 7, bb, 2, 0, NULL, 0);
    uint8_t wand[] = { 0, 0, 0, 1 };
    assert_memory_equal(r.out[0].data, wand, 4);
    oph_free(&r);
    r = run_op("Or", 7, bb, 2, 0, NULL, 0);
    uint8_t wor[] = { 0, 1, 1, 1 };
    assert_memory_equal(r.out[0].data, wor, 4);
    oph_free(&r);
    r = run_op("Equal", 13, bb, 2, 0, NULL, 0);
    uint8_t wbe[] = { 1, 0, 0, 1 };
    assert_memory_equal(r.out[0].data, wbe, 4);
    oph_free(&r);

    assert_int_equal(run_status("Less", bb, 2, NULL, 0), PV_EUNSUPPORTED);
    assert_int_equal(run_status("And", in, 2, NULL, 0), PV_EUNSUPPORTED);
    pvc_tensor mix[2] = { in[0], ii[0] };
    assert_int_equal(run_status("Equal", mix, 2, NULL, 0), PV_EFORMAT);
    pvc_tensor shp[2] = { in[0], oph_tensor(PV_F32, 1, d4, a) };
    assert_int_equal(run_status("Less", shp, 2, NULL, 0), PV_EFORMAT);
}

/* ---- Where ---------------------------------------------------------------------------------- */
static void test_where(void **state)
{
    (void)state;
    uint8_t c[] = { 1, 0, 0, 1 };                  /* [2,1,2] */
    float x[] = { 10, 20 };                        /* [2] */
    float y[] = { -1, -2, -3 };                    /* [3,1] */
    int64_t dc[] = { 2, 1, 2 }, dx[] = { 2 }, dy[] = { 3, 1 }, dout[] = { 2, 3, 2 };
    pvc_tensor in[3] = { oph_tensor(PV_BOOL, 3, dc, c), oph_tensor(PV_F32, 1, dx, x), oph_tensor(PV_F32, 2, dy, y) };
    oph_result r = run_op("Where", 16, in, 3, 0, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 3, dout);
    double w[12];
    for (int o = 0; o < 12; o++)
        w[o] = c[bcast_index(&r.out[0], &in[0], o)] ? x[bcast_index(&r.out[0], &in[1], o)]
                                                    : y[bcast_index(&r.out[0], &in[2], o)];
    oph_expect_close(r.out[0].data, w, 12, 0, "Where");
    oph_free(&r);

    int64_t xi[] = { 1, 2, 3, 4 }, yi[] = { -7 };
    int64_t d4[] = { 4 }, d1[] = { 1 };
    uint8_t c4[] = { 0, 1, 0, 1 };
    pvc_tensor ii[3] = { oph_tensor(PV_BOOL, 1, d4, c4), oph_tensor(PV_I64, 1, d4, xi), oph_tensor(PV_I64, 1, d1, yi) };
    r = run_op("Where", 16, ii, 3, 0, NULL, 0);
    int64_t wi[] = { -7, 2, -7, 4 };
    assert_memory_equal(r.out[0].data, wi, sizeof wi);
    oph_free(&r);

    uint16_t hx[4] = { 1, 2, 3, 4 }, hy[4] = { 9, 9, 9, 9 };
    pvc_tensor hh[3] = { ii[0], oph_tensor(PV_F16, 1, d4, hx), oph_tensor(PV_F16, 1, d4, hy) };
    r = run_op("Where", 16, hh, 3, 0, NULL, 0);
    uint16_t wh[] = { 9, 2, 9, 4 };
    assert_memory_equal(r.out[0].data, wh, sizeof wh);
    oph_free(&r);

    pvc_tensor bad[3] = { ii[1], ii[1], ii[1] };                 /* condition not bool */
    assert_int_equal(run_status("Where", bad, 3, NULL, 0), PV_EFORMAT);
    pvc_tensor mix[3] = { ii[0], ii[1], in[1] };
    assert_int_equal(run_status("Where", mix, 3, NULL, 0), PV_EFORMAT);
    int64_t d3[] = { 3 };
    pvc_tensor shp[3] = { ii[0], ii[1], oph_tensor(PV_I64, 1, d3, xi) };
    assert_int_equal(run_status("Where", shp, 3, NULL, 0), PV_EFORMAT);
}

/* ---- Cast ----------------------------------------------------------------------------------- */
static void test_cast(void **state)
{
    (void)state;
    float f[] = { -1.7f, 0.0f, 2.9f, NAN, 1e20f, -1e20f, 300.0f, 0.5f };
    int64_t d[] = { 8 };
    pvc_tensor tf = oph_tensor(PV_F32, 1, d, f);
    oph_attr to_i32[] = { OPH_INT("to", 6) }, to_i64[] = { OPH_INT("to", 7) }, to_bool[] = { OPH_INT("to", 9) },
             to_u8[] = { OPH_INT("to", 2) }, to_i8[] = { OPH_INT("to", 3) }, to_f32[] = { OPH_INT("to", 1) },
             to_f16[] = { OPH_INT("to", 10) }, to_bf16[] = { OPH_INT("to", 16) };

    oph_result r = run_op("Cast", 13, &tf, 1, 0, to_i32, 1);
    assert_int_equal(r.out[0].dtype, PV_I32);
    int32_t w32[] = { -1, 0, 2, 0, INT32_MAX, INT32_MIN, 300, 0 };
    assert_memory_equal(r.out[0].data, w32, sizeof w32);
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_i64, 1);
    int64_t w64[] = { -1, 0, 2, 0, INT64_MAX, INT64_MIN, 300, 0 };
    assert_memory_equal(r.out[0].data, w64, sizeof w64);
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_u8, 1);
    uint8_t wu8[] = { 0, 0, 2, 0, 255, 0, 255, 0 };
    assert_memory_equal(r.out[0].data, wu8, sizeof wu8);
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_bool, 1);
    uint8_t wb[] = { 1, 0, 1, 1, 1, 1, 1, 1 };
    assert_int_equal(r.out[0].dtype, PV_BOOL);
    assert_memory_equal(r.out[0].data, wb, sizeof wb);
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_f32, 1);
    assert_memory_equal(r.out[0].data, f, sizeof f);
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_f16, 1);
    const uint16_t *h = r.out[0].data;
    assert_true(pvc_f16_to_f32(h[2]) == 2.900390625f);    /* nearest f16 of 2.9 */
    assert_true(isinf(pvc_f16_to_f32(h[4])) && isnan(pvc_f16_to_f32(h[3])));
    oph_free(&r);
    r = run_op("Cast", 13, &tf, 1, 0, to_bf16, 1);
    h = r.out[0].data;
    assert_true(pvc_bf16_to_f32(h[6]) == 300.0f && pvc_bf16_to_f32(h[1]) == 0.0f);
    oph_free(&r);

    int64_t iv[] = { -1, 0, 1, 256, 300, -129, (int64_t)1 << 40, 7 };
    pvc_tensor ti = oph_tensor(PV_I64, 1, d, iv);
    r = run_op("Cast", 13, &ti, 1, 0, to_i8, 1);
    int8_t w8[] = { -1, 0, 1, 0, 44, 127, 0, 7 };            /* wraps */
    assert_memory_equal(r.out[0].data, w8, sizeof w8);
    oph_free(&r);
    r = run_op("Cast", 13, &ti, 1, 0, to_f32, 1);
    double wf[] = { -1, 0, 1, 256, 300, -129, 1099511627776.0, 7 };
    oph_expect_close(r.out[0].data, wf, 8, 0, "i64->f32");
    oph_free(&r);
    r = run_op("Cast", 13, &ti, 1, 0, to_bool, 1);
    uint8_t wib[] = { 1, 0, 1, 1, 1, 1, 1, 1 };
    assert_memory_equal(r.out[0].data, wib, sizeof wib);
    oph_free(&r);

    uint8_t bv[] = { 1, 0, 1, 1, 0, 0, 1, 0 };
    pvc_tensor tb = oph_tensor(PV_BOOL, 1, d, bv);
    r = run_op("Cast", 13, &tb, 1, 0, to_f32, 1);
    double wbf[] = { 1, 0, 1, 1, 0, 0, 1, 0 };
    oph_expect_close(r.out[0].data, wbf, 8, 0, "bool->f32");
    oph_free(&r);

    uint16_t hv[8];
    for (int i = 0; i < 8; i++) hv[i] = pvc_f32_to_f16((float)i - 3.5f);
    pvc_tensor th = oph_tensor(PV_F16, 1, d, hv);
    r = run_op("Cast", 13, &th, 1, 0, to_i32, 1);
    int32_t whi[] = { -3, -2, -1, 0, 0, 1, 2, 3 };
    assert_memory_equal(r.out[0].data, whi, sizeof whi);
    oph_free(&r);

    oph_attr dbl[] = { OPH_INT("to", 11) }, str[] = { OPH_INT("to", 8) }, sat[] = { OPH_INT("to", 1), OPH_INT("saturate", 1) };
    assert_int_equal(run_status("Cast", &tf, 1, dbl, 1), PV_EUNSUPPORTED);
    assert_int_equal(run_status("Cast", &tf, 1, str, 1), PV_EUNSUPPORTED);
    assert_int_equal(run_status("Cast", &tf, 1, sat, 2), PV_EUNSUPPORTED);
    assert_int_equal(run_status("Cast", &tf, 1, NULL, 0), PV_EFORMAT);
    oph_attr bad[] = { OPH_FLOAT("to", 1.0f) };
    assert_int_equal(run_status("Cast", &tf, 1, bad, 1), PV_EFORMAT);
}

/* ---- kernels directly: random broadcast shapes, threads, in place -------------------------- */
static uint32_t rng = 12345;
static uint32_t rnd(void) { rng = rng * 1664525u + 1013904223u; return rng >> 8; }

static void test_broadcast_random(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    static float a[4096], b[4096], y[4096];
    for (int i = 0; i < 4096; i++) { a[i] = (float)(rnd() % 1000) / 10.0f; b[i] = (float)(rnd() % 1000) / 7.0f; }
    for (int trial = 0; trial < 300; trial++) {
        int r = 1 + (int)(rnd() % 5);
        int64_t dy[PV_MAX_RANK], da[PV_MAX_RANK], db[PV_MAX_RANK];
        for (int i = 0; i < r; i++) dy[i] = 1 + rnd() % 4;
        int ra = (int)(rnd() % (unsigned)(r + 1)), rb = r;
        if (rnd() & 1) { int t = ra; ra = rb; rb = t; }
        for (int i = 0; i < ra; i++) da[i] = (rnd() % 3 == 0) ? 1 : dy[r - ra + i];
        for (int i = 0; i < rb; i++) db[i] = (rnd() % 3 == 0) ? 1 : dy[r - rb + i];
        pvc_tensor ta = oph_tensor(PV_F32, ra, da, a), tb = oph_tensor(PV_F32, rb, db, b);
        const pvc_tensor *in[2] = { &ta, &tb };
        int rr;
        int64_t dd[PV_MAX_RANK];
        assert_true(pvk_broadcast_shape(2, in, &rr, dd));
        pvc_tensor ty = oph_tensor(PV_F32, rr, dd, y);
        pvk_binary(trial & 1 ? pool : NULL, PVK_BIN_SUB, &ta, &tb, &ty);
        int64_t n = pvc_numel(&ty);
        for (int64_t o = 0; o < n; o++) {
            float w = a[bcast_index(&ty, &ta, o)] - b[bcast_index(&ty, &tb, o)];
            if (y[o] != w) fail_msg("trial %d elem %lld: got %g want %g", trial, (long long)o, y[o], w);
        }
    }
    pvc_pool_free(pool);
}

static void test_large_parallel_inplace(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(4, &pool), PV_OK);
    enum { C = 70, HW = 1000, NB = 3 };
    float *x = malloc(sizeof(float) * NB * C * HW), *ref = malloc(sizeof(float) * NB * C * HW);
    float bias[C];
    for (int i = 0; i < NB * C * HW; i++) x[i] = (float)(i % 97) - 48.0f;
    for (int c = 0; c < C; c++) bias[c] = (float)c * 0.25f;
    for (int i = 0; i < NB * C * HW; i++) ref[i] = x[i] + bias[(i / HW) % C];
    int64_t dx[] = { NB, C, HW }, db[] = { C, 1 };
    pvc_tensor tx = oph_tensor(PV_F32, 3, dx, x), tb = oph_tensor(PV_F32, 2, db, bias);
    pvk_binary(pool, PVK_BIN_ADD, &tx, &tb, &tx);            /* in place, chunks split rows */
    assert_memory_equal(x, ref, sizeof(float) * NB * C * HW);

    pvk_unary_args ua = { 0 };
    pvk_unary(pool, PVK_UN_RELU, PV_F32, x, x, (int64_t)NB * C * HW, &ua);
    for (int i = 0; i < NB * C * HW; i++) assert_true(x[i] == (ref[i] > 0 ? ref[i] : 0));

    int32_t *xi = malloc(sizeof(int32_t) * NB * C * HW);
    pvk_cast(pool, PV_F32, x, PV_I32, xi, (int64_t)NB * C * HW);
    for (int i = 0; i < NB * C * HW; i++) assert_int_equal(xi[i], (int32_t)x[i]);
    pvk_cast(pool, PV_I32, xi, PV_F32, xi, (int64_t)NB * C * HW);   /* in place, same size */
    const float *xf = (const float *)xi;
    for (int i = 0; i < NB * C * HW; i++) assert_true(xf[i] == truncf(x[i]));

    /* F16 binary in place through the staging path */
    uint16_t *h = malloc(sizeof(uint16_t) * 5000), hs = pvc_f32_to_f16(0.5f);
    for (int i = 0; i < 5000; i++) h[i] = pvc_f32_to_f16((float)(i % 64));
    int64_t dh[] = { 5000 };
    pvc_tensor th = oph_tensor(PV_F16, 1, dh, h), ts = oph_tensor(PV_F16, 0, dh, &hs);
    pvk_binary(pool, PVK_BIN_MUL, &th, &ts, &th);
    for (int i = 0; i < 5000; i++) assert_true(pvc_f16_to_f32(h[i]) == (float)(i % 64) * 0.5f);

    free(h);
    free(xi);
    free(x);
    free(ref);
    pvc_pool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_f32),
        cmocka_unit_test(test_unary_relu_leaky_round),
        cmocka_unit_test(test_unary_f16_bf16),
        cmocka_unit_test(test_unary_int),
        cmocka_unit_test(test_unary_errors),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_binary_f32_broadcast),
        cmocka_unit_test(test_binary_scalar_paths),
        cmocka_unit_test(test_binary_int),
        cmocka_unit_test(test_mod_float_and_errors),
        cmocka_unit_test(test_pow_mixed),
        cmocka_unit_test(test_min_max_variadic),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_broadcast_random),
        cmocka_unit_test(test_large_parallel_inplace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
