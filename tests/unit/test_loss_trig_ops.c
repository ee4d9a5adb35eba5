/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss and the trigonometric / hyperbolic unary
 * operators (Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh). Expectations come from naive
 * double-precision references written here (log-softmax, the weighted NLL and its reductions,
 * libm in double), independent of the kernels. Bad targets, attributes and shapes are a clear
 * status, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

enum { NN = 3, NC = 4, ND = 5 };   /* [N, C, d1] with d1 = ND */

/* The loss of logp [NN, NC, ND] (double) at target, weights w (NULL: 1), ignore (has_ign),
 * reduction 0 none / 1 sum / 2 mean; out gets NN * ND values or one. */
static void ref_nll(const double *logp, const int64_t *t, const float *w, bool has_ign, int64_t ign, int red,
                    double *out)
{
    double sum = 0, wsum = 0;
    for (int n = 0; n < NN; n++)
        for (int d = 0; d < ND; d++) {
            int64_t c = t[n * ND + d];
            double wt = 0, l = 0;
            if (!(has_ign && c == ign)) {
                wt = w ? w[c] : 1.0;
                l = -logp[(n * NC + c) * ND + d] * wt;
            }
            out[n * ND + d] = l;
            sum += l;
            wsum += wt;
        }
    if (red == 1) out[0] = sum;
    if (red == 2) out[0] = sum / wsum;
}

static void ref_log_softmax(const float *x, double *y)
{
    for (int n = 0; n < NN; n++)
        for (int d = 0; d < ND; d++) {
            double m = -INFINITY, s = 0;
            for (int c = 0; c < NC; c++) m = fmax(m, x[(n * NC + c) * ND + d]);
            for (int c = 0; c < NC; c++) s += exp(x[(n * NC + c) * ND + d] - m);
            for (int c = 0; c < NC; c++) y[(n * NC + c) * ND + d] = x[(n * NC + c) * ND + d] - m - log(s);
        }
}

static const char *const reds[3] = { "none", "sum", "mean" };

/* Every reduction, with and without weights and ignore_index, int64 and int32 targets, for
 * both operators (SCE also with its log_prob output). */
static void test_losses_match_reference(void **state)
{
    (void)state;
    float x[NN * NC * ND], w[NC];
    int64_t t64[NN * ND];
    int32_t t32[NN * ND];
    for (int i = 0; i < NN * NC * ND; i++) x[i] = (float)rnd(-3, 1);
    for (int i = 0; i < NC; i++) w[i] = (float)rnd(0.2, 2);
    for (int i = 0; i < NN * ND; i++) { t64[i] = (int64_t)rnd(0, NC); t32[i] = (int32_t)t64[i]; }
    t64[3] = t32[3] = -1;   /* ignored when ignore_index = -1 */
    t64[7] = t32[7] = -1;
    double logp[NN * NC * ND], xd[NN * NC * ND], want[NN * ND];
    ref_log_softmax(x, logp);
    for (int i = 0; i < NN * NC * ND; i++) xd[i] = x[i];
    int64_t dx[3] = { NN, NC, ND }, dt[2] = { NN, ND }, dw[1] = { NC };
    for (int sce = 0; sce < 2; sce++)
        for (int red = 0; red < 3; red++)
            for (int weighted = 0; weighted < 2; weighted++)
                for (int i32 = 0; i32 < 2; i32++) {
                    pvc_tensor in[3] = { oph_tensor(PV_F32, 3, dx, x),
                                         i32 ? oph_tensor(PV_I32, 2, dt, t32) : oph_tensor(PV_I64, 2, dt, t64),
                                         oph_tensor(PV_F32, 1, dw, w) };
                    oph_attr at[2] = { OPH_STR("reduction", reds[red]), OPH_INT("ignore_index", -1) };
                    int nout = sce ? 2 : 1;
                    oph_result r = oph_run_ok(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", 13, in,
                                              2 + weighted, 0, nout, at, 2);
                    ref_nll(sce ? logp : xd, t64, weighted ? w : NULL, true, -1, red, want);
                    char what[96];
                    snprintf(what, sizeof what, "%s %s weighted=%d i32=%d", sce ? "sce" : "nll", reds[red], weighted, i32);
                    if (red == 0) oph_expect_shape(&r.out[0], PV_F32, 2, dt);
                    else assert_int_equal(r.out[0].rank, 0);
                    oph_expect_close(r.out[0].data, want, red == 0 ? NN * ND : 1, 1e-5, what);
                    if (sce) oph_expect_close(r.out[1].data, logp, NN * NC * ND, 1e-5, "log_prob");
                    oph_free(&r);
                }
}

/* SCE with its single output (log_prob in the workspace), default reduction mean, no
 * ignore_index: a target of -1 is then out of range and fails the run with a message. */
static void test_sce_single_output_and_bad_target(void **state)
{
    (void)state;
    float x[NN * NC * ND];
    int64_t t[NN * ND];
    for (int i = 0; i < NN * NC * ND; i++) x[i] = (float)rnd(-2, 2);
    for (int i = 0; i < NN * ND; i++) t[i] = i % NC;
    double logp[NN * NC * ND], want[NN * ND];
    ref_log_softmax(x, logp);
    ref_nll(logp, t, NULL, false, 0, 2, want);
    int64_t dx[3] = { NN, NC, ND }, dt[2] = { NN, ND };
    pvc_tensor in[2] = { oph_tensor(PV_F32, 3, dx, x), oph_tensor(PV_I64, 2, dt, t) };
    oph_result r = oph_run_ok("SoftmaxCrossEntropyLoss", 13, in, 2, 0, 1, NULL, 0);
    oph_expect_close(r.out[0].data, want, 1, 1e-5, "sce mean");
    oph_free(&r);
    t[5] = -1;
    r = oph_run("SoftmaxCrossEntropyLoss", 13, in, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "target -1"));
    oph_free(&r);
    t[5] = NC;
    r = oph_run("NegativeLogLikelihoodLoss", 13, in, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    oph_free(&r);
}

static void test_loss_refusals(void **state)
{
    (void)state;
    float x[NN * NC * ND] = { 0 }, w[NC + 1] = { 0 };
    int64_t t[NN * ND] = { 0 };
    int64_t dx[3] = { NN, NC, ND }, dt[2] = { NN, ND }, dbad[2] = { NN, ND + 1 }, dw[1] = { NC + 1 };
    pvc_tensor in[3] = { oph_tensor(PV_F32, 3, dx, x), oph_tensor(PV_I64, 2, dt, t), oph_tensor(PV_F32, 1, dw, w) };
    oph_attr bad_red = OPH_STR("reduction", "median");
    oph_result r = oph_run("NegativeLogLikelihoodLoss", 13, in, 2, 0, 1, &bad_red, 1);
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "median"));
    r = oph_run("NegativeLogLikelihoodLoss", 13, in, 3, 0, 1, NULL, 0);   /* weight of C + 1 */
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "weight"));
    r = oph_run("NegativeLogLikelihoodLoss", 11, in, 2, 0, 1, NULL, 0);   /* before opset 12 */
    assert_int_equal(r.status, PV_EFORMAT);
    in[1] = oph_tensor(PV_I64, 2, dbad, t);
    r = oph_run("SoftmaxCrossEntropyLoss", 13, in, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EFORMAT);
    assert_non_null(strstr(r.msg.text, "labels"));
    in[1] = oph_tensor(PV_F32, 2, dt, x);
    r = oph_run("SoftmaxCrossEntropyLoss", 13, in, 2, 0, 1, NULL, 0);
    assert_int_not_equal(r.status, PV_OK);
}

/* Each trigonometric / hyperbolic op against libm in double over its domain, in f32 and f16. */
static void test_trig_ops(void **state)
{
    (void)state;
    static const struct { const char *op; double (*f)(double); double lo, hi; } ops[] = {
        { "Tan", tan, -1.4, 1.4 },    { "Asin", asin, -1, 1 },      { "Acos", acos, -1, 1 },
        { "Atan", atan, -10, 10 },    { "Sinh", sinh, -5, 5 },      { "Cosh", cosh, -5, 5 },
        { "Asinh", asinh, -10, 10 },  { "Acosh", acosh, 1, 10 },    { "Atanh", atanh, -0.99, 0.99 },
    };
    enum { M = 37 };
    float x[M];
    uint16_t h[M];
    double want[M], want_h[M];
    int64_t d[1] = { M };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        for (int i = 0; i < M; i++) {
            x[i] = (float)(ops[k].lo + (ops[k].hi - ops[k].lo) * i / (M - 1));
            h[i] = pvc_f32_to_f16(x[i]);
            want[i] = ops[k].f(x[i]);
            want_h[i] = ops[k].f(pvc_f16_to_f32(h[i]));
        }
        pvc_tensor in = oph_tensor(PV_F32, 1, d, x);
        oph_result r = oph_run_ok(ops[k].op, 9, &in, 1, 0, 1, NULL, 0);
        oph_expect_close(r.out[0].data, want, M, 2e-6, ops[k].op);
        oph_free(&r);
        in = oph_tensor(PV_F16, 1, d, h);
        r = oph_run_ok(ops[k].op, 9, &in, 1, 0, 1, NULL, 0);
        assert_int_equal(r.out[0].dtype, PV_F16);
        float got[M];
        for (int i = 0; i < M; i++) got[i] = pvc_f16_to_f32(((uint16_t *)r.out[0].data)[i]);
        oph_expect_close(got, want_h, M, 1e-3, ops[k].op);   /* f16 rounding of the result */
        oph_free(&r);
    }
    int64_t iv[2] = { 1, 2 };
    int64_t d2[1] = { 2 };
    pvc_tensor ti = oph_tensor(PV_I64, 1, d2, iv);
    oph_result r = oph_run("Asin", 9, &ti, 1, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EUNSUPPORTED);
    assert_non_null(strstr(r.msg.text, "int64"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_losses_match_reference),
        cmocka_unit_test(test_sce_single_output_and_bad_target),
        cmocka_unit_test(test_loss_refusals),
        cmocka_unit_test(test_trig_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
