/* Reductions, pooling and resampling: ReduceMean/Sum/Max/Min, ArgMax/ArgMin, TopK, MaxPool,
 * AveragePool, GlobalAveragePool, Resize, GridSample. Hand-computed cases per attribute, random
 * cases against naive per-element references written in this file, threaded runs against
 * single-threaded ones, and error cases (bad attributes are statuses, not crashes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "op_harness.h"
#include "kernels/ref/pool.h"
#include "kernels/ref/reduce.h"
#include "kernels/ref/resample.h"

#include <math.h>
#include <stdio.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static uint32_t rng_state = 12345u;
static float frand(void)                 /* uniform in [-1, 1) */
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f;
}
static int irand(int n) { return (int)((frand() + 1.0f) * 0.5f * (float)n) % n; }

static pvc_tensor T(pv_dtype t, int rank, const int64_t *dims, void *data) { return oph_tensor(t, rank, dims, data); }
static pvc_tensor absent(void) { pvc_tensor t; memset(&t, 0, sizeof t); t.rank = -1; return t; }

static void check_dims(const pvc_tensor *t, int rank, const int64_t *dims)
{
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(t->dims[i], dims[i]);
}

static void check_f32(const float *got, const float *want, int64_t n, float tol)
{
    for (int64_t i = 0; i < n; i++) {
        float d = fabsf(got[i] - want[i]);
        if (!(d <= tol * (1.0f + fabsf(want[i]))) && !(isnan(got[i]) && isnan(want[i]))) {
            print_error("element %lld: got %.7g want %.7g\n", (long long)i, (double)got[i], (double)want[i]);
            fail();
        }
    }
}

static void check_i64(const int64_t *got, const int64_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            print_error("element %lld: got %lld want %lld\n", (long long)i, (long long)got[i], (long long)want[i]);
            fail();
        }
}

/* Runs op and expects status s (printing the message when it differs). */
static oph_result run_expect(pv_status s, const char *op, int opset, const pvc_tensor *in, int nin,
                             unsigned cmask, int nout, const oph_attr *at, int nat)
{
    oph_result r = oph_run(op, opset, in, nin, cmask, nout, at, nat);
    if (r.status != s) print_error("%s: status %d (want %d): %s\n", op, r.status, s, r.msg.text);
    assert_int_equal(r.status, s);
    if (s != PV_OK) assert_true(strlen(r.msg.text) > 0);
    return r;
}

/* ---- Reduce ------------------------------------------------------------------------------- */

static void test_reduce_hand(void **state)
{
    (void)state;
    float x[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t d[2] = { 2, 3 }, ax1[1] = { 1 }, one = 1;
    pvc_tensor in[2] = { T(PV_F32, 2, d, x), T(PV_I64, 1, &one, ax1) };

    /* ReduceSum opset 13: axes input, keepdims default 1 */
    oph_result r = run_expect(PV_OK, "ReduceSum", 13, in, 2, 3u, 1, NULL, 0);
    int64_t d21[2] = { 2, 1 };
    check_dims(&r.out[0], 2, d21);
    check_f32(r.out[0].data, (float[]){ 6, 15 }, 2, 0);
    oph_free(&r);

    /* ReduceMean: default = all axes */
    r = run_expect(PV_OK, "ReduceMean", 13, in, 1, 1u, 1, NULL, 0);
    int64_t d11[2] = { 1, 1 };
    check_dims(&r.out[0], 2, d11);
    check_f32(r.out[0].data, (float[]){ 3.5f }, 1, 1e-7f);
    oph_free(&r);

    /* ReduceMax opset 13: axes attribute, keepdims 0 */
    int64_t ax0[1] = { 0 };
    oph_attr at[2] = { OPH_INTS("axes", ax0, 1), OPH_INT("keepdims", 0) };
    r = run_expect(PV_OK, "ReduceMax", 13, in, 1, 1u, 1, at, 2);
    int64_t d3[1] = { 3 };
    check_dims(&r.out[0], 1, d3);
    check_f32(r.out[0].data, (float[]){ 4, 5, 6 }, 3, 0);
    oph_free(&r);

    /* ReduceMin opset 18: axes input (negative), keepdims 0 */
    int64_t axm1[1] = { -1 };
    in[1].data = axm1;
    oph_attr kd0[1] = { OPH_INT("keepdims", 0) };
    r = run_expect(PV_OK, "ReduceMin", 18, in, 2, 3u, 1, kd0, 1);
    int64_t d2[1] = { 2 };
    check_dims(&r.out[0], 1, d2);
    check_f32(r.out[0].data, (float[]){ 1, 4 }, 2, 0);
    oph_free(&r);

    /* ReduceMean opset 18 with the axes input */
    r = run_expect(PV_OK, "ReduceMean", 18, in, 2, 3u, 1, NULL, 0);
    check_f32(r.out[0].data, (float[]){ 2, 5 }, 2, 1e-7f);
    oph_free(&r);

    /* keepdims 0 over everything gives a scalar */
    r = run_expect(PV_OK, "ReduceSum", 13, in, 1, 1u, 1, kd0, 1);
    assert_int_equal(r.out[0].rank, 0);
    check_f32(r.out[0].data, (float[]){ 21 }, 1, 0);
    oph_free(&r);
}

static void test_reduce_noop_empty_axes(void **state)
{
    (void)state;
    float x[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t d[2] = { 2, 3 }, zero = 0;
    int64_t none[1] = { 0 };
    pvc_tensor in[2] = { T(PV_F32, 2, d, x), T(PV_I64, 1, &zero, none) };
    oph_attr noop[1] = { OPH_INT("noop_with_empty_axes", 1) };
    oph_result r = run_expect(PV_OK, "ReduceSum", 13, in, 2, 3u, 1, noop, 1);
    check_dims(&r.out[0], 2, d);
    check_f32(r.out[0].data, x, 6, 0);
    oph_free(&r);
    /* noop with the input absent too */
    in[1] = absent();
    r = run_expect(PV_OK, "ReduceMax", 18, in, 2, 1u, 1, noop, 1);
    check_f32(r.out[0].data, x, 6, 0);
    oph_free(&r);
    /* noop_with_empty_axes=0 (default): empty axes reduce everything */
    in[1] = T(PV_I64, 1, &zero, none);
    r = run_expect(PV_OK, "ReduceSum", 13, in, 2, 3u, 1, NULL, 0);
    check_f32(r.out[0].data, (float[]){ 21 }, 1, 0);
    oph_free(&r);
}

/* Naive reduce: every input element adds into the output element with its reduced coordinates
 * zeroed (keepdims layout). */
static void naive_reduce(const char *op, int rank, const int64_t *dims, unsigned mask,
                         const double *x, double *y, int64_t nout)
{
    int64_t n = 1, count = 1;
    for (int i = 0; i < rank; i++) { n *= dims[i]; if (mask >> i & 1u) count *= dims[i]; }
    bool mx = !strcmp(op, "ReduceMax"), mn = !strcmp(op, "ReduceMin");
    for (int64_t o = 0; o < nout; o++) y[o] = mx ? -INFINITY : mn ? INFINITY : 0.0;
    for (int64_t e = 0; e < n; e++) {
        int64_t rem = e, o = 0, st = 1;
        for (int i = rank - 1; i >= 0; i--) {
            int64_t c = rem % dims[i];
            rem /= dims[i];
            if (!(mask >> i & 1u)) { o += c * st; st *= dims[i]; }
        }
        if (mx) y[o] = fmax(y[o], x[e]);
        else if (mn) y[o] = fmin(y[o], x[e]);
        else y[o] += x[e];
    }
    if (!strcmp(op, "ReduceMean"))
        for (int64_t o = 0; o < nout; o++) y[o] /= (double)count;
}

static void test_reduce_random_all_masks(void **state)
{
    (void)state;
    static const char *ops[] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin" };
    static const pv_dtype types[] = { PV_F32, PV_I32, PV_I64, PV_I8, PV_U8, PV_F16 };
    int64_t dims[4] = { 3, 1, 4, 300 };        /* 300 > one 256-element block */
    int64_t n = 3 * 4 * 300;
    double *xd = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    void *x = malloc((size_t)n * 8);
    for (size_t ti = 0; ti < PVC_COUNTOF(types); ti++) {
        pv_dtype t = types[ti];
        for (int64_t i = 0; i < n; i++) {
            if (t == PV_F32) xd[i] = frand();
            else if (t == PV_F16) xd[i] = pvc_f16_to_f32(pvc_f32_to_f16(frand()));
            else if (t == PV_U8) xd[i] = irand(10);      /* small: sums stay exact in u8 */
            else if (t == PV_I8) xd[i] = irand(7) - 3;
            else xd[i] = irand(2000) - 1000;
            pvc_set_f64(x, t, i, xd[i]);
        }
        for (size_t oi = 0; oi < PVC_COUNTOF(ops); oi++) {
            bool integer = pvc_dtype_is_int(t);
            if (integer && !strcmp(ops[oi], "ReduceMean") && t != PV_I32 && t != PV_I64) continue;
            if ((t == PV_I8 || t == PV_U8) && !strcmp(ops[oi], "ReduceSum")) continue;
            for (unsigned mask = 1; mask < 16; mask++) {
                int64_t axes[4], na = 0, nout = 1;
                for (int a = 0; a < 4; a++) {
                    if (mask >> a & 1u) axes[na++] = a - (a & 1 ? 4 : 0);   /* mix negative axes */
                    else nout *= dims[a];
                }
                oph_attr at[1] = { OPH_INTS("axes", axes, na) };
                pvc_tensor in[1] = { T(t, 4, dims, x) };
                /* axes as attribute: ReduceSum before 13, the others before 18 */
                int opset = !strcmp(ops[oi], "ReduceSum") ? 11 : 13;
                oph_result r = run_expect(PV_OK, ops[oi], opset, in, 1, 0u, 1, at, 1);
                naive_reduce(ops[oi], 4, dims, mask, xd, want, nout);
                for (int64_t o = 0; o < nout; o++) {
                    double got = pvc_get_f64(r.out[0].data, t, o), w = want[o];
                    if (integer && !strcmp(ops[oi], "ReduceMean")) w = trunc(w);
                    double tol = t == PV_F32 ? 1e-5 : t == PV_F16 ? 2e-3 * (1 + fabs(w)) : 0;
                    if (fabs(got - w) > tol) {
                        print_error("%s %s mask %u out %lld: got %g want %g\n", ops[oi], pv_dtype_name(t),
                                    mask, (long long)o, got, w);
                        fail();
                    }
                }
                oph_free(&r);
            }
        }
    }
    /* Rank 5, every mask: alternating kept/reduced runs (R K R K R needs the odometer). */
    static const char *fops[] = { "ReduceSum", "ReduceMax" };
    int64_t d5[5] = { 2, 3, 2, 3, 5 }, n5 = 180;
    float *xf = x;
    for (int64_t i = 0; i < n5; i++) { xf[i] = frand(); xd[i] = xf[i]; }
    for (int oi = 0; oi < 2; oi++)
        for (unsigned mask = 1; mask < 32; mask++) {
            int64_t axes[5], na = 0, nout = 1;
            for (int a = 0; a < 5; a++) {
                if (mask >> a & 1u) axes[na++] = a;
                else nout *= d5[a];
            }
            oph_attr at[1] = { OPH_INTS("axes", axes, na) };
            pvc_tensor in[1] = { T(PV_F32, 5, d5, xf) };
            oph_result r = run_expect(PV_OK, fops[oi], oi ? 13 : 11, in, 1, 0u, 1, at, 1);
            naive_reduce(fops[oi], 5, d5, mask, xd, want, nout);
            for (int64_t o = 0; o < nout; o++)
                assert_true(fabs(((float *)r.out[0].data)[o] - want[o]) < 1e-5);
            oph_free(&r);
        }
    free(xd);
    free(want);
    free(x);
}

static void test_reduce_empty_and_threads(void **state)
{
    (void)state;
    /* A zero-size reduced axis: sum 0, max -inf, min +inf, mean NaN. */
    int64_t d[2] = { 2, 0 }, ax[1] = { 1 };
    float dummy[1] = { 0 };
    oph_attr at[1] = { OPH_INTS("axes", ax, 1) };
    pvc_tensor in[1] = { T(PV_F32, 2, d, dummy) };
    oph_result r = run_expect(PV_OK, "ReduceMax", 13, in, 1, 0u, 1, at, 1);
    assert_true(isinf(((float *)r.out[0].data)[0]) && ((float *)r.out[0].data)[0] < 0);
    oph_free(&r);
    r = run_expect(PV_OK, "ReduceMean", 13, in, 1, 0u, 1, at, 1);
    assert_true(isnan(((float *)r.out[0].data)[1]));
    oph_free(&r);

    /* Threaded kernel equals the inline one, for a middle-axis reduction. */
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    int64_t dims[3] = { 5, 37, 1000 };
    int64_t n = 5 * 37 * 1000;
    float *x = malloc(sizeof(float) * (size_t)n), *y1 = calloc(5000, sizeof(float)), *y2 = calloc(5000, sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = frand();
    pvk_reduce(NULL, PVK_REDUCE_SUM, PV_F32, 3, dims, 2u, x, y1);
    pvk_reduce(pool, PVK_REDUCE_SUM, PV_F32, 3, dims, 2u, x, y2);
    check_f32(y2, y1, 5000, 0);
    pvk_reduce(NULL, PVK_REDUCE_MAX, PV_F32, 3, dims, 5u, x, y1);
    pvk_reduce(pool, PVK_REDUCE_MAX, PV_F32, 3, dims, 5u, x, y2);
    check_f32(y2, y1, 37, 0);
    pvc_pool_free(pool);
    free(x);
    free(y1);
    free(y2);
}

static void test_reduce_errors(void **state)
{
    (void)state;
    float x[6] = { 0 };
    int64_t d[2] = { 2, 3 }, one = 1, two = 2;
    int64_t bad[1] = { 2 }, dup[2] = { 1, -1 };
    pvc_tensor in[2] = { T(PV_F32, 2, d, x), T(PV_I64, 1, &one, bad) };
    run_expect(PV_EFORMAT, "ReduceSum", 13, in, 2, 3u, 1, NULL, 0);          /* axis out of range */
    in[1] = T(PV_I64, 1, &two, dup);
    run_expect(PV_EFORMAT, "ReduceSum", 13, in, 2, 3u, 1, NULL, 0);          /* repeated axis */
    run_expect(PV_EUNSUPPORTED, "ReduceSum", 13, in, 2, 1u, 1, NULL, 0);     /* axes not constant */
    run_expect(PV_EFORMAT, "ReduceMean", 13, in, 2, 3u, 1, NULL, 0);         /* axes input before 18 */
    oph_attr kd[1] = { OPH_INT("keepdims", 2) };
    run_expect(PV_EFORMAT, "ReduceMin", 13, in, 1, 1u, 1, kd, 1);
    oph_attr axs[1] = { OPH_INTS("axes", bad, 1) };
    run_expect(PV_EFORMAT, "ReduceMax", 13, in, 1, 1u, 1, axs, 1);
    oph_attr wrongtype[1] = { OPH_STR("axes", "0") };
    run_expect(PV_EFORMAT, "ReduceMax", 13, in, 1, 1u, 1, wrongtype, 1);
    uint8_t b[6] = { 0 };
    in[0] = T(PV_BOOL, 2, d, b);
    run_expect(PV_EUNSUPPORTED, "ReduceMax", 13, in, 1, 1u, 1, NULL, 0);
}

/* ---- ArgMax / ArgMin ---------------------------------------------------------------------- */

static void test_argmax_hand(void **state)
{
    (void)state;
    float x[8] = { 2, 9, 9, 1,
                   5, 5, 0, 0 };
    int64_t d[2] = { 2, 4 };
    pvc_tensor in[1] = { T(PV_F32, 2, d, x) };
    oph_attr a1[1] = { OPH_INT("axis", 1) };
    oph_result r = run_expect(PV_OK, "ArgMax", 13, in, 1, 1u, 1, a1, 1);
    int64_t d21[2] = { 2, 1 };
    check_dims(&r.out[0], 2, d21);
    assert_int_equal(r.out[0].dtype, PV_I64);
    check_i64(r.out[0].data, (int64_t[]){ 1, 0 }, 2);
    oph_free(&r);
    oph_attr last[3] = { OPH_INT("axis", -1), OPH_INT("select_last_index", 1), OPH_INT("keepdims", 0) };
    r = run_expect(PV_OK, "ArgMax", 13, in, 1, 1u, 1, last, 3);
    int64_t d2[1] = { 2 };
    check_dims(&r.out[0], 1, d2);
    check_i64(r.out[0].data, (int64_t[]){ 2, 1 }, 2);
    oph_free(&r);
    r = run_expect(PV_OK, "ArgMin", 13, in, 1, 1u, 1, last, 3);
    check_i64(r.out[0].data, (int64_t[]){ 3, 3 }, 2);
    oph_free(&r);
    r = run_expect(PV_OK, "ArgMin", 13, in, 1, 1u, 1, a1, 1);
    check_i64(r.out[0].data, (int64_t[]){ 3, 2 }, 2);
    oph_free(&r);
    /* axis 0 (default), keepdims */
    r = run_expect(PV_OK, "ArgMax", 13, in, 1, 1u, 1, NULL, 0);
    check_i64(r.out[0].data, (int64_t[]){ 1, 0, 0, 0 }, 4);
    oph_free(&r);
}

static void test_argmax_random(void **state)
{
    (void)state;
    int64_t d[3] = { 3, 70, 300 };
    int64_t n = 3 * 70 * 300;
    int32_t *x = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = irand(50);       /* many ties */
    pvc_tensor in[1] = { T(PV_I32, 3, d, x) };
    for (int axis = 0; axis < 3; axis++)
        for (int last = 0; last < 2; last++)
            for (int is_max = 0; is_max < 2; is_max++) {
                oph_attr at[2] = { OPH_INT("axis", axis), OPH_INT("select_last_index", last) };
                oph_result r = run_expect(PV_OK, is_max ? "ArgMax" : "ArgMin", 13, in, 1, 0u, 1, at, 2);
                int64_t outer = 1, inner = 1, len = d[axis];
                for (int i = 0; i < axis; i++) outer *= d[i];
                for (int i = axis + 1; i < 3; i++) inner *= d[i];
                const int64_t *y = r.out[0].data;
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t i = 0; i < inner; i++) {
                        int64_t best = 0;
                        for (int64_t k = 1; k < len; k++) {
                            int32_t v = x[(o * len + k) * inner + i], b = x[(o * len + best) * inner + i];
                            if (is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
                        }
                        assert_int_equal(y[o * inner + i], best);
                    }
                oph_free(&r);
            }
    free(x);
}

static void test_argmax_errors(void **state)
{
    (void)state;
    float x[4] = { 0 };
    int64_t d[2] = { 2, 2 }, dz[2] = { 2, 0 };
    pvc_tensor in[1] = { T(PV_F32, 2, d, x) };
    oph_attr a5[1] = { OPH_INT("axis", 5) };
    run_expect(PV_EFORMAT, "ArgMax", 13, in, 1, 1u, 1, a5, 1);
    oph_attr sl[1] = { OPH_INT("select_last_index", 3) };
    run_expect(PV_EFORMAT, "ArgMin", 13, in, 1, 1u, 1, sl, 1);
    in[0] = T(PV_F32, 2, dz, x);
    oph_attr a1[1] = { OPH_INT("axis", 1) };
    run_expect(PV_EFORMAT, "ArgMax", 13, in, 1, 1u, 1, a1, 1);   /* empty axis */
}

/* ---- TopK --------------------------------------------------------------------------------- */

static void test_topk_hand(void **state)
{
    (void)state;
    float x[12] = { 0, 1, 2, 3,
                    4, 5, 6, 7,
                    11, 10, 9, 8 };
    int64_t d[2] = { 3, 4 }, one = 1, k3[1] = { 3 };
    pvc_tensor in[2] = { T(PV_F32, 2, d, x), T(PV_I64, 1, &one, k3) };
    oph_result r = run_expect(PV_OK, "TopK", 11, in, 2, 3u, 2, NULL, 0);
    int64_t d33[2] = { 3, 3 };
    check_dims(&r.out[0], 2, d33);
    check_dims(&r.out[1], 2, d33);
    check_f32(r.out[0].data, (float[]){ 3, 2, 1, 7, 6, 5, 11, 10, 9 }, 9, 0);
    check_i64(r.out[1].data, (int64_t[]){ 3, 2, 1, 3, 2, 1, 0, 1, 2 }, 9);
    oph_free(&r);
    /* smallest along axis 0 (strided slices), k = 2 */
    int64_t k2[1] = { 2 };
    in[1].data = k2;
    oph_attr at[2] = { OPH_INT("axis", 0), OPH_INT("largest", 0) };
    r = run_expect(PV_OK, "TopK", 11, in, 2, 3u, 2, at, 2);
    int64_t d24[2] = { 2, 4 };
    check_dims(&r.out[0], 2, d24);
    check_f32(r.out[0].data, (float[]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8, 0);
    check_i64(r.out[1].data, (int64_t[]){ 0, 0, 0, 0, 1, 1, 1, 1 }, 8);
    oph_free(&r);
    /* ties: lower index first, both for largest and smallest; sorted=0 accepted */
    float t[6] = { 5, 7, 5, 7, 5, 1 };
    int64_t d6[1] = { 6 }, k4[1] = { 4 };
    pvc_tensor in2[2] = { T(PV_F32, 1, d6, t), T(PV_I64, 1, &one, k4) };
    r = run_expect(PV_OK, "TopK", 11, in2, 2, 3u, 2, NULL, 0);
    check_i64(r.out[1].data, (int64_t[]){ 1, 3, 0, 2 }, 4);
    oph_free(&r);
    oph_attr sm[2] = { OPH_INT("largest", 0), OPH_INT("sorted", 0) };
    r = run_expect(PV_OK, "TopK", 11, in2, 2, 3u, 2, sm, 2);
    check_i64(r.out[1].data, (int64_t[]){ 5, 0, 2, 4 }, 4);
    oph_free(&r);
    /* K = 0 gives empty outputs; only the Values output wanted */
    int64_t k0[1] = { 0 };
    in2[1].data = k0;
    r = run_expect(PV_OK, "TopK", 11, in2, 2, 3u, 1, NULL, 0);
    assert_int_equal(r.out[0].dims[0], 0);
    oph_free(&r);
    /* int32 */
    int32_t xi[5] = { -3, 8, 8, 2, -9 };
    int64_t d5[1] = { 5 };
    in2[0] = T(PV_I32, 1, d5, xi);
    in2[1].data = k2;
    r = run_expect(PV_OK, "TopK", 11, in2, 2, 3u, 2, NULL, 0);
    assert_int_equal(((int32_t *)r.out[0].data)[0], 8);
    assert_int_equal(((int32_t *)r.out[0].data)[1], 8);
    check_i64(r.out[1].data, (int64_t[]){ 1, 2 }, 2);
    oph_free(&r);
}

static const float *cmp_base;
static int cmp_desc(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (cmp_base[i] != cmp_base[j]) return cmp_base[i] > cmp_base[j] ? -1 : 1;
    return i < j ? -1 : 1;
}

static void test_topk_large(void **state)
{
    (void)state;
    /* The detection-head case: k = 500 of 162000 scores, with many exact ties. */
    int64_t n = 162000, d[2] = { 1, 162000 }, one = 1, k[1] = { 500 };
    float *x = malloc(sizeof(float) * (size_t)n);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) { x[i] = (float)irand(20000) / 20000.0f; order[i] = i; }
    cmp_base = x;
    qsort(order, (size_t)n, sizeof(int64_t), cmp_desc);
    pvc_tensor in[2] = { T(PV_F32, 2, d, x), T(PV_I64, 1, &one, k) };
    double t0 = pvc_now_ms();
    oph_result r = run_expect(PV_OK, "TopK", 11, in, 2, 2u, 2, NULL, 0);
    double ms = pvc_now_ms() - t0;
    check_i64(r.out[1].data, order, 500);
    for (int i = 0; i < 500; i++) assert_true(((float *)r.out[0].data)[i] == x[order[i]]);
    assert_true(ms < 2000.0);   /* generous: this is O(n log k) */
    oph_free(&r);

    /* Threaded kernel over many slices equals the inline one. */
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    int64_t outer = 40, len = 4000, inner = 1;
    size_t ws = pvk_topk_workspace(outer, inner, 33);
    void *w1 = malloc(ws), *w2 = malloc(ws);
    float *v1 = malloc(sizeof(float) * 40 * 33), *v2 = malloc(sizeof(float) * 40 * 33);
    int64_t *i1 = malloc(sizeof(int64_t) * 40 * 33), *i2 = malloc(sizeof(int64_t) * 40 * 33);
    pvk_topk(NULL, PV_F32, outer, len, inner, 33, true, x, v1, i1, w1);
    pvk_topk(pool, PV_F32, outer, len, inner, 33, true, x, v2, i2, w2);
    check_i64(i2, i1, 40 * 33);
    check_f32(v2, v1, 40 * 33, 0);
    pvc_pool_free(pool);
    free(w1); free(w2); free(v1); free(v2); free(i1); free(i2);
    free(x);
    free(order);
}

static void test_topk_errors(void **state)
{
    (void)state;
    float x[4] = { 0 };
    int64_t d[1] = { 4 }, one = 1, k5[1] = { 5 }, km[1] = { -1 };
    pvc_tensor in[2] = { T(PV_F32, 1, d, x), T(PV_I64, 1, &one, k5) };
    run_expect(PV_EFORMAT, "TopK", 11, in, 2, 3u, 2, NULL, 0);        /* K > n */
    in[1].data = km;
    run_expect(PV_EFORMAT, "TopK", 11, in, 2, 3u, 2, NULL, 0);        /* K < 0 */
    run_expect(PV_EUNSUPPORTED, "TopK", 11, in, 2, 1u, 2, NULL, 0);   /* K not constant */
    oph_attr lg[1] = { OPH_INT("largest", 7) };
    int64_t k2[1] = { 2 };
    in[1].data = k2;
    run_expect(PV_EFORMAT, "TopK", 11, in, 2, 3u, 2, lg, 1);
    oph_attr ax[1] = { OPH_INT("axis", 1) };
    run_expect(PV_EFORMAT, "TopK", 11, in, 2, 3u, 2, ax, 1);
}

/* ---- MaxPool / AveragePool ---------------------------------------------------------------- */

static void test_maxpool_hand(void **state)
{
    (void)state;
    float x[16] = { 1, 2, 3, 4,
                    5, 6, 7, 8,
                    9, 10, 11, 12,
                    13, 14, 15, 16 };
    int64_t d[4] = { 1, 1, 4, 4 }, k2[2] = { 2, 2 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 };
    pvc_tensor in[1] = { T(PV_F32, 4, d, x) };
    oph_attr at[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2) };
    oph_result r = run_expect(PV_OK, "MaxPool", 12, in, 1, 0u, 2, at, 2);
    int64_t d22[4] = { 1, 1, 2, 2 };
    check_dims(&r.out[0], 4, d22);
    check_f32(r.out[0].data, (float[]){ 6, 8, 14, 16 }, 4, 0);
    check_i64(r.out[1].data, (int64_t[]){ 5, 7, 13, 15 }, 4);
    oph_free(&r);
    /* storage_order 1: column-major indices (h + w * H) */
    oph_attr col[3] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2), OPH_INT("storage_order", 1) };
    r = run_expect(PV_OK, "MaxPool", 12, in, 1, 0u, 2, col, 3);
    check_i64(r.out[1].data, (int64_t[]){ 1 + 1 * 4, 1 + 3 * 4, 3 + 1 * 4, 3 + 3 * 4 }, 4);
    oph_free(&r);
    /* 3x3 stride 2 pad 1, ceil_mode: 3x3 outputs, the last row/column of windows clipped */
    int64_t p1[4] = { 1, 1, 1, 1 };
    oph_attr cm[4] = { OPH_INTS("kernel_shape", k3, 2), OPH_INTS("strides", s2, 2), OPH_INTS("pads", p1, 4), OPH_INT("ceil_mode", 1) };
    r = run_expect(PV_OK, "MaxPool", 12, in, 1, 0u, 1, cm, 4);
    int64_t d33[4] = { 1, 1, 3, 3 };
    check_dims(&r.out[0], 4, d33);
    check_f32(r.out[0].data, (float[]){ 6, 8, 8, 14, 16, 16, 14, 16, 16 }, 9, 0);
    oph_free(&r);
    /* ceil_mode never starts a window inside the end padding: 3 wide, kernel 1, stride 2,
     * pads (0, 1): ceil gives 3 windows, the third would start at 4 (padding only) -> 2 */
    float x3[3] = { 1, 2, 3 };
    int64_t dd3[3] = { 1, 1, 3 }, kk1[1] = { 1 }, ss2[1] = { 2 }, pp[2] = { 0, 1 };
    pvc_tensor in3[1] = { T(PV_F32, 3, dd3, x3) };
    oph_attr cz[4] = { OPH_INTS("kernel_shape", kk1, 1), OPH_INTS("strides", ss2, 1), OPH_INTS("pads", pp, 2), OPH_INT("ceil_mode", 1) };
    r = run_expect(PV_OK, "MaxPool", 12, in3, 1, 0u, 1, cz, 4);
    assert_int_equal(r.out[0].dims[2], 2);
    check_f32(r.out[0].data, (float[]){ 1, 3 }, 2, 0);
    oph_free(&r);
    /* ceil_mode that adds a window: 5 wide, kernel 2 stride 2, no pads: floor 2, ceil 3 */
    float x5[5] = { 1, 5, 2, 4, 3 };
    int64_t d5[3] = { 1, 1, 5 }, k1[1] = { 2 }, st1[1] = { 2 };
    pvc_tensor in5[1] = { T(PV_F32, 3, d5, x5) };
    oph_attr c1[3] = { OPH_INTS("kernel_shape", k1, 1), OPH_INTS("strides", st1, 1), OPH_INT("ceil_mode", 1) };
    r = run_expect(PV_OK, "MaxPool", 12, in5, 1, 0u, 1, c1, 3);
    assert_int_equal(r.out[0].dims[2], 3);
    check_f32(r.out[0].data, (float[]){ 5, 4, 3 }, 3, 0);
    oph_free(&r);
    /* dilation 2: taps 0 and 2 */
    oph_attr dl[2] = { OPH_INTS("kernel_shape", k1, 1), OPH_INTS("dilations", st1, 1) };
    r = run_expect(PV_OK, "MaxPool", 12, in5, 1, 0u, 1, dl, 2);
    assert_int_equal(r.out[0].dims[2], 3);
    check_f32(r.out[0].data, (float[]){ 2, 5, 3 }, 3, 0);
    oph_free(&r);
    /* auto_pad SAME_UPPER / SAME_LOWER with a 2-tap window: padding at the end / start */
    oph_attr su[2] = { OPH_INTS("kernel_shape", k1, 1), OPH_STR("auto_pad", "SAME_UPPER") };
    r = run_expect(PV_OK, "MaxPool", 12, in5, 1, 0u, 1, su, 2);
    check_f32(r.out[0].data, (float[]){ 5, 5, 4, 4, 3 }, 5, 0);
    oph_free(&r);
    oph_attr sl[2] = { OPH_INTS("kernel_shape", k1, 1), OPH_STR("auto_pad", "SAME_LOWER") };
    r = run_expect(PV_OK, "MaxPool", 12, in5, 1, 0u, 1, sl, 2);
    check_f32(r.out[0].data, (float[]){ 1, 5, 5, 4, 4 }, 5, 0);
    oph_free(&r);
    oph_attr va[3] = { OPH_INTS("kernel_shape", k1, 1), OPH_INTS("strides", st1, 1), OPH_STR("auto_pad", "VALID") };
    r = run_expect(PV_OK, "MaxPool", 12, in5, 1, 0u, 1, va, 3);
    check_f32(r.out[0].data, (float[]){ 5, 4 }, 2, 0);
    oph_free(&r);
    /* uint8 and int8 */
    uint8_t u[5] = { 1, 250, 2, 4, 3 };
    pvc_tensor inu[1] = { T(PV_U8, 3, d5, u) };
    r = run_expect(PV_OK, "MaxPool", 12, inu, 1, 0u, 1, su, 2);
    assert_memory_equal(r.out[0].data, ((uint8_t[]){ 250, 250, 4, 4, 3 }), 5);
    oph_free(&r);
    int8_t s8[5] = { -1, -7, -2, -4, -3 };
    inu[0] = T(PV_I8, 3, d5, s8);
    r = run_expect(PV_OK, "MaxPool", 12, inu, 1, 0u, 1, su, 2);
    assert_memory_equal(r.out[0].data, ((int8_t[]){ -1, -2, -2, -3, -3 }), 5);
    oph_free(&r);
}

/* Naive pooling straight from the spec: every output, every kernel tap, padding checked per
 * tap. Returns max (and its flat index) or the average. */
static void naive_pool(bool is_max, bool cip, const float *x, int64_t planes, const int64_t *in,
                       const int64_t *out, const int64_t *k, const int64_t *s, const int64_t *dl,
                       const int64_t *pb, const int64_t *pe, float *y, int64_t *ind)
{
    int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < osz; o++) {
            int64_t oc[3] = { o / (out[1] * out[2]), o / out[2] % out[1], o % out[2] };
            float best = -INFINITY, sum = 0;
            int64_t bi = -1, cnt = 0, cntpad = 1;
            for (int a = 0; a < 3; a++) {
                int64_t st = oc[a] * s[a] - pb[a];
                int64_t en = st + k[a] > in[a] + pe[a] ? in[a] + pe[a] : st + k[a];
                cntpad *= en - st;
            }
            for (int64_t t = 0; t < k[0] * k[1] * k[2]; t++) {
                int64_t tc[3] = { t / (k[1] * k[2]), t / k[2] % k[1], t % k[2] }, ic[3];
                bool ok = true;
                for (int a = 0; a < 3; a++) {
                    ic[a] = oc[a] * s[a] - pb[a] + tc[a] * dl[a];
                    if (ic[a] < 0 || ic[a] >= in[a]) ok = false;
                }
                if (!ok) continue;
                int64_t off = (ic[0] * in[1] + ic[1]) * in[2] + ic[2];
                float v = x[p * isz + off];
                if (v > best) { best = v; bi = p * isz + off; }
                sum += v;
                cnt++;
            }
            y[p * osz + o] = is_max ? best : sum / (float)(cip ? cntpad : cnt);
            if (ind) ind[p * osz + o] = bi;
        }
}

static void test_pool_random(void **state)
{
    (void)state;
    for (int trial = 0; trial < 60; trial++) {
        int nsp = 1 + trial % 3;
        bool is_max = trial % 2 == 0;
        int64_t dims[5] = { 1 + irand(2), 1 + irand(3) }, k[3], st[3], dl[3], pads[6];
        int64_t in3[3] = { 1, 1, 1 }, out3[3] = { 1, 1, 1 }, k3[3] = { 1, 1, 1 }, s3[3] = { 1, 1, 1 };
        int64_t d3[3] = { 1, 1, 1 }, pb3[3] = { 0, 0, 0 }, pe3[3] = { 0, 0, 0 };
        int ceil_mode = irand(2), cip = irand(2);
        for (int i = 0; i < nsp; i++) {
            k[i] = 1 + irand(3);
            st[i] = 1 + irand(3);
            dl[i] = is_max ? 1 + irand(2) : 1;
            pads[i] = irand((int)k[i]);
            pads[nsp + i] = irand((int)k[i]);
            dims[2 + i] = (k[i] - 1) * dl[i] + 1 + irand(9);
        }
        oph_attr at[6] = { OPH_INTS("kernel_shape", k, nsp), OPH_INTS("strides", st, nsp),
                           OPH_INTS("pads", pads, 2 * nsp), OPH_INT("ceil_mode", ceil_mode),
                           is_max ? (oph_attr)OPH_INTS("dilations", dl, nsp) : (oph_attr)OPH_INT("count_include_pad", cip) };
        int64_t n = 1;
        for (int i = 0; i < 2 + nsp; i++) n *= dims[i];
        float *x = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) x[i] = frand();
        pvc_tensor in[1] = { T(PV_F32, 2 + nsp, dims, x) };
        oph_result r = run_expect(PV_OK, is_max ? "MaxPool" : "AveragePool", 12, in, 1, 0u, is_max ? 2 : 1, at, 5);
        int o = 3 - nsp;
        for (int i = 0; i < nsp; i++) {
            in3[o + i] = dims[2 + i];
            k3[o + i] = k[i];
            s3[o + i] = st[i];
            d3[o + i] = dl[i];
            pb3[o + i] = pads[i];
            pe3[o + i] = pads[nsp + i];
            int64_t span = dims[2 + i] + pads[i] + pads[nsp + i] - ((k[i] - 1) * dl[i] + 1);
            int64_t ov = (ceil_mode ? span + st[i] - 1 : span) / st[i] + 1;
            if (ceil_mode && (ov - 1) * st[i] >= dims[2 + i] + pads[i]) ov--;
            out3[o + i] = ov;
            assert_int_equal(r.out[0].dims[2 + i], ov);
        }
        int64_t planes = dims[0] * dims[1], nout = planes * out3[0] * out3[1] * out3[2];
        float *want = malloc(sizeof(float) * (size_t)nout);
        int64_t *wind = malloc(sizeof(int64_t) * (size_t)nout);
        naive_pool(is_max, cip, x, planes, in3, out3, k3, s3, d3, pb3, pe3, want, wind);
        check_f32(r.out[0].data, want, nout, 1e-6f);
        if (is_max) check_i64(r.out[1].data, wind, nout);
        oph_free(&r);
        free(x);
        free(want);
        free(wind);
    }
}

static void test_avgpool_hand(void **state)
{
    (void)state;
    float x[9] = { 1, 2, 3,
                   4, 5, 6,
                   7, 8, 9 };
    int64_t d[4] = { 1, 1, 3, 3 }, k2[2] = { 2, 2 }, p1[4] = { 1, 1, 1, 1 }, s2[2] = { 2, 2 };
    pvc_tensor in[1] = { T(PV_F32, 4, d, x) };
    oph_attr at[3] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2), OPH_INTS("pads", p1, 4) };
    oph_result r = run_expect(PV_OK, "AveragePool", 11, in, 1, 0u, 1, at, 3);
    int64_t d22[4] = { 1, 1, 2, 2 };
    check_dims(&r.out[0], 4, d22);
    check_f32(r.out[0].data, (float[]){ 1, 2.5f, 5.5f, 7 }, 4, 1e-6f);
    oph_free(&r);
    oph_attr ci[4] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2), OPH_INTS("pads", p1, 4), OPH_INT("count_include_pad", 1) };
    r = run_expect(PV_OK, "AveragePool", 11, in, 1, 0u, 1, ci, 4);
    check_f32(r.out[0].data, (float[]){ 0.25f, 1.25f, 2.75f, 7.0f }, 4, 1e-6f);
    oph_free(&r);
    /* ceil_mode, no pads: 3 -> 2 with a clipped last window (divisor = real elements) */
    oph_attr cm[3] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2), OPH_INT("ceil_mode", 1) };
    r = run_expect(PV_OK, "AveragePool", 11, in, 1, 0u, 1, cm, 3);
    check_f32(r.out[0].data, (float[]){ 3, 4.5f, 7.5f, 9 }, 4, 1e-6f);
    oph_free(&r);
    /* GlobalAveragePool */
    int64_t d2[4] = { 1, 3, 1, 3 };
    in[0] = T(PV_F32, 4, d2, x);
    r = run_expect(PV_OK, "GlobalAveragePool", 13, in, 1, 0u, 1, NULL, 0);
    int64_t d311[4] = { 1, 3, 1, 1 };
    check_dims(&r.out[0], 4, d311);
    check_f32(r.out[0].data, (float[]){ 2, 5, 8 }, 3, 1e-6f);
    oph_free(&r);
}

static void test_pool_threads(void **state)
{
    (void)state;
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    pvk_pool_geom g = { .planes = 6, .in = { 1, 40, 37 }, .out = { 1, 20, 19 }, .kernel = { 1, 3, 3 },
                        .stride = { 1, 2, 2 }, .dil = { 1, 1, 1 }, .pad_begin = { 0, 1, 1 }, .pad_end = { 0, 1, 1 } };
    int64_t n = 6 * 40 * 37, no = 6 * 20 * 19;
    float *x = malloc(sizeof(float) * (size_t)n), *y1 = malloc(sizeof(float) * (size_t)no), *y2 = malloc(sizeof(float) * (size_t)no);
    int64_t *i1 = malloc(sizeof(int64_t) * (size_t)no), *i2 = malloc(sizeof(int64_t) * (size_t)no);
    for (int64_t i = 0; i < n; i++) x[i] = frand();
    pvk_maxpool(NULL, &g, PV_F32, x, y1, i1);
    pvk_maxpool(pool, &g, PV_F32, x, y2, i2);
    check_f32(y2, y1, no, 0);
    check_i64(i2, i1, no);
    pvk_avgpool_f32(NULL, &g, x, y1);
    pvk_avgpool_f32(pool, &g, x, y2);
    check_f32(y2, y1, no, 0);
    pvc_pool_free(pool);
    free(x); free(y1); free(y2); free(i1); free(i2);
}

static void test_pool_errors(void **state)
{
    (void)state;
    float x[16] = { 0 };
    int64_t d[4] = { 1, 1, 4, 4 }, d2[2] = { 4, 4 }, k2[2] = { 2, 2 }, k1[1] = { 2 }, k9[2] = { 9, 9 };
    int64_t dl[2] = { 2, 2 }, zero[2] = { 0, 1 }, p3[3] = { 1, 1, 1 };
    pvc_tensor in[1] = { T(PV_F32, 4, d, x) };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, NULL, 0);                       /* no kernel_shape */
    oph_attr a1[1] = { OPH_INTS("kernel_shape", k1, 1) };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, a1, 1);                          /* wrong length */
    oph_attr a2[1] = { OPH_INTS("kernel_shape", k9, 2) };
    run_expect(PV_EFORMAT, "AveragePool", 11, in, 1, 0u, 1, a2, 1);                      /* too large */
    oph_attr a3[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_STR("auto_pad", "SAME") };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, a3, 2);
    oph_attr a4[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("dilations", dl, 2) };
    run_expect(PV_EUNSUPPORTED, "AveragePool", 19, in, 1, 0u, 1, a4, 2);                 /* avg dilations */
    oph_attr a5[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", zero, 2) };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, a5, 2);                          /* stride 0 */
    oph_attr a6[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("pads", p3, 3) };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, a6, 2);
    oph_attr a7[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INT("storage_order", 2) };
    run_expect(PV_EFORMAT, "MaxPool", 12, in, 1, 0u, 1, a7, 2);
    oph_attr a8[2] = { OPH_INTS("kernel_shape", k2, 2), OPH_INT("count_include_pad", 5) };
    run_expect(PV_EFORMAT, "AveragePool", 11, in, 1, 0u, 1, a8, 2);
    oph_attr a9[1] = { OPH_INTS("kernel_shape", k2, 2) };
    in[0] = T(PV_F32, 2, d2, x);
    run_expect(PV_EUNSUPPORTED, "MaxPool", 12, in, 1, 0u, 1, a9, 1);                     /* rank 2 */
    run_expect(PV_EFORMAT, "GlobalAveragePool", 13, in, 1, 0u, 1, NULL, 0);          /* rank 2 */
    int32_t xi[16] = { 0 };
    in[0] = T(PV_I32, 4, d, xi);
    run_expect(PV_EUNSUPPORTED, "MaxPool", 12, in, 1, 0u, 1, a9, 1);                     /* int32 */
    run_expect(PV_EUNSUPPORTED, "AveragePool", 11, in, 1, 0u, 1, a9, 1);
}

static void test_pool_f16(void **state)
{
    (void)state;
    /* float16 AveragePool / GlobalAveragePool (staged through f32) and native MaxPool: the
     * 3x3 example of test_avgpool_hand, whose results are exact in f16. */
    uint16_t x[9], y[4];
    for (int i = 0; i < 9; i++) x[i] = pvc_f32_to_f16((float)(i + 1));
    int64_t d[4] = { 1, 1, 3, 3 }, k2[2] = { 2, 2 }, p1[4] = { 1, 1, 1, 1 }, s2[2] = { 2, 2 };
    pvc_tensor in[1] = { T(PV_F16, 4, d, x) };
    oph_attr ci[4] = { OPH_INTS("kernel_shape", k2, 2), OPH_INTS("strides", s2, 2), OPH_INTS("pads", p1, 4), OPH_INT("count_include_pad", 1) };
    oph_result r = run_expect(PV_OK, "AveragePool", 11, in, 1, 0u, 1, ci, 4);
    assert_int_equal(r.out[0].dtype, PV_F16);
    static const float want[4] = { 0.25f, 1.25f, 2.75f, 7.0f };
    for (int i = 0; i < 4; i++) y[i] = pvc_f32_to_f16(want[i]);
    assert_memory_equal(r.out[0].data, y, sizeof y);
    oph_free(&r);
    r = run_expect(PV_OK, "MaxPool", 12, in, 1, 0u, 1, ci, 3);
    static const float wmax[4] = { 1, 3, 7, 9 };
    for (int i = 0; i < 4; i++) y[i] = pvc_f32_to_f16(wmax[i]);
    assert_memory_equal(r.out[0].data, y, sizeof y);
    oph_free(&r);
    int64_t d2[4] = { 1, 3, 1, 3 };
    in[0] = T(PV_BF16, 4, d2, x);
    for (int i = 0; i < 9; i++) x[i] = pvc_f32_to_bf16((float)(i + 1));
    r = run_expect(PV_OK, "GlobalAveragePool", 13, in, 1, 0u, 1, NULL, 0);
    assert_int_equal(r.out[0].dtype, PV_BF16);
    for (int i = 0; i < 3; i++) assert_true(pvc_bf16_to_f32(((uint16_t *)r.out[0].data)[i]) == (float)(3 * i + 2));
    oph_free(&r);
}

/* ---- Resize ------------------------------------------------------------------------------- */

static void test_resize_linear_hand(void **state)
{
    (void)state;
    float x[4] = { 1, 2, 3, 4 };
    int64_t d[4] = { 1, 1, 2, 2 }, four = 4, zero = 0;
    float sc[4] = { 1, 1, 2, 2 };
    float roi[1] = { 0 };
    pvc_tensor in[3] = { T(PV_F32, 4, d, x), T(PV_F32, 1, &zero, roi), T(PV_F32, 1, &four, sc) };
    oph_attr lin[1] = { OPH_STR("mode", "linear") };
    oph_result r = run_expect(PV_OK, "Resize", 13, in, 3, 7u, 1, lin, 1);
    int64_t d44[4] = { 1, 1, 4, 4 };
    check_dims(&r.out[0], 4, d44);
    check_f32(r.out[0].data, (float[]){ 1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                                        2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4 }, 16, 1e-6f);
    oph_free(&r);
    /* the same in float16 (staged through f32; every result is exact in f16) */
    uint16_t xh[4], want16[16];
    for (int i = 0; i < 4; i++) xh[i] = pvc_f32_to_f16(x[i]);
    pvc_tensor inh[3] = { T(PV_F16, 4, d, xh), in[1], in[2] };
    r = run_expect(PV_OK, "Resize", 13, inh, 3, 7u, 1, lin, 1);
    static const float w16[16] = { 1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4 };
    for (int i = 0; i < 16; i++) want16[i] = pvc_f32_to_f16(w16[i]);
    assert_int_equal(r.out[0].dtype, PV_F16);
    assert_memory_equal(r.out[0].data, want16, sizeof want16);
    oph_free(&r);
    /* align_corners via sizes 2x2 -> 3x3 */
    int64_t sz[4] = { 1, 1, 3, 3 };
    pvc_tensor in4[4] = { in[0], absent(), absent(), T(PV_I64, 1, &four, sz) };
    oph_attr ac[2] = { OPH_STR("mode", "linear"), OPH_STR("coordinate_transformation_mode", "align_corners") };
    r = run_expect(PV_OK, "Resize", 13, in4, 4, 15u, 1, ac, 2);
    check_f32(r.out[0].data, (float[]){ 1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4 }, 9, 1e-6f);
    oph_free(&r);
    /* pytorch_half_pixel to a single column samples coordinate 0 */
    int64_t sz1[4] = { 1, 1, 2, 1 };
    in4[3].data = sz1;
    oph_attr ph[2] = { OPH_STR("mode", "linear"), OPH_STR("coordinate_transformation_mode", "pytorch_half_pixel") };
    r = run_expect(PV_OK, "Resize", 13, in4, 4, 15u, 1, ph, 2);
    check_f32(r.out[0].data, (float[]){ 1, 3 }, 2, 1e-6f);
    oph_free(&r);
    /* half_pixel downsample 2 -> 1 takes the middle */
    r = run_expect(PV_OK, "Resize", 13, in4, 4, 15u, 1, lin, 1);
    check_f32(r.out[0].data, (float[]){ 1.5f, 3.5f }, 2, 1e-6f);
    oph_free(&r);
}

static void test_resize_nearest_modes(void **state)
{
    (void)state;
    int8_t x[4] = { 10, 20, 30, 40 };          /* nearest is a gather: any dtype */
    int64_t d[1] = { 4 }, one = 1, zero = 0;
    float sc[1] = { 2 };
    pvc_tensor in[3] = { T(PV_I8, 1, d, x), T(PV_F32, 1, &zero, sc), T(PV_F32, 1, &one, sc) };
    static const char *modes[4] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    /* asymmetric with scale 2: source 0, .5, 1, 1.5, ... (ties at .5) */
    static const int8_t want[4][8] = {
        { 10, 10, 20, 20, 30, 30, 40, 40 }, { 10, 20, 20, 30, 30, 40, 40, 40 },
        { 10, 10, 20, 20, 30, 30, 40, 40 }, { 10, 20, 20, 30, 30, 40, 40, 40 },
    };
    for (int m = 0; m < 4; m++) {
        oph_attr at[2] = { OPH_STR("coordinate_transformation_mode", "asymmetric"), OPH_STR("nearest_mode", modes[m]) };
        oph_result r = run_expect(PV_OK, "Resize", 13, in, 3, 7u, 1, at, 2);
        assert_int_equal(r.out[0].dims[0], 8);
        assert_memory_equal(r.out[0].data, want[m], 8);
        oph_free(&r);
    }
    /* default half_pixel + round_prefer_floor: source i/2 - 0.25 */
    oph_result r = run_expect(PV_OK, "Resize", 13, in, 3, 7u, 1, NULL, 0);
    assert_memory_equal(r.out[0].data, ((int8_t[]){ 10, 10, 20, 20, 30, 30, 40, 40 }), 8);
    oph_free(&r);
    /* non-integer scale: floor(4 * 1.7) = 6 outputs */
    float s17[1] = { 1.7f };
    in[2].data = s17;
    r = run_expect(PV_OK, "Resize", 13, in, 3, 7u, 1, NULL, 0);
    assert_int_equal(r.out[0].dims[0], 6);
    oph_free(&r);
    /* opset 11 tf_half_pixel_for_nn: source (i + 0.5) / 2 */
    in[2].data = sc;
    oph_attr tf[1] = { OPH_STR("coordinate_transformation_mode", "tf_half_pixel_for_nn") };
    r = run_expect(PV_OK, "Resize", 11, in, 3, 7u, 1, tf, 1);
    assert_memory_equal(r.out[0].data, ((int8_t[]){ 10, 20, 20, 30, 30, 40, 40, 40 }), 8);
    oph_free(&r);
}

static void test_resize_nd_and_axes(void **state)
{
    (void)state;
    /* align_corners N-linear reproduces an affine function exactly: f = 1 + 2a + 3b + 5c - 7d
     * over a 4-D input resized on every axis. */
    int64_t d[4] = { 2, 3, 4, 5 }, od[4] = { 3, 5, 7, 2 }, four = 4;
    float x[120];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                for (int e = 0; e < 5; e++) x[((a * 3 + b) * 4 + c) * 5 + e] = 1 + 2.0f * a + 3.0f * b + 5.0f * c - 7.0f * e;
    pvc_tensor in[4] = { T(PV_F32, 4, d, x), absent(), absent(), T(PV_I64, 1, &four, od) };
    oph_attr ac[2] = { OPH_STR("mode", "linear"), OPH_STR("coordinate_transformation_mode", "align_corners") };
    oph_result r = run_expect(PV_OK, "Resize", 13, in, 4, 15u, 1, ac, 2);
    check_dims(&r.out[0], 4, od);
    const float *y = r.out[0].data;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 7; c++)
                for (int e = 0; e < 2; e++) {
                    float fa = a * 1.0f / 2, fb = b * 2.0f / 4, fc = c * 3.0f / 6, fe = e * 4.0f / 1;
                    float want = 1 + 2 * fa + 3 * fb + 5 * fc - 7 * fe;
                    float got = y[((a * 5 + b) * 7 + c) * 2 + e];
                    assert_true(fabsf(got - want) < 1e-4f);
                }
    oph_free(&r);
    /* opset 18 'axes': sizes for axes [3, 1] only */
    int64_t two = 2, sz[2] = { 10, 6 }, axes[2] = { 3, 1 };
    pvc_tensor in2[4] = { T(PV_F32, 4, d, x), absent(), absent(), T(PV_I64, 1, &two, sz) };
    oph_attr ax[2] = { OPH_STR("mode", "linear"), OPH_INTS("axes", axes, 2) };
    r = run_expect(PV_OK, "Resize", 18, in2, 4, 15u, 1, ax, 2);
    int64_t want_d[4] = { 2, 6, 4, 10 };
    check_dims(&r.out[0], 4, want_d);
    oph_free(&r);
    /* antialias=1 is fine for nearest (it only changes linear/cubic) */
    oph_attr aa[2] = { OPH_INT("antialias", 1), OPH_INTS("axes", axes, 2) };
    r = run_expect(PV_OK, "Resize", 18, in2, 4, 15u, 1, aa, 2);
    check_dims(&r.out[0], 4, want_d);
    oph_free(&r);
}

/* The GlobalAveragePool sum: every variant this CPU runs against the plain twin, lengths 0..600
 * (every tail), values over 12 orders of magnitude, within 1e-12 of the sum of |x|. */
static void test_sum_f64_variants(void **state)
{
    (void)state;
    pvk_sum_f64_fn fast = pvk_sum_f64_select();
    float *x = malloc(600 * sizeof *x);
    uint32_t r = 12345;
    for (int n = 0; n <= 600; n += (n < 70 ? 1 : 37)) {
        double mag = 0;
        for (int i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            x[i] = (float)((double)(r >> 8) / 16777216.0 - 0.5) * powf(10.0f, (float)((int)(r % 13) - 6));
            mag += fabs(x[i]);
        }
        double a = pvk_sum_f64_ref(x, n), b = fast(x, n);
        if (fabs(a - b) > 1e-12 * mag) fail_msg("n %d: %.17g vs %.17g", n, a, b);
    }
    free(x);
}

static void test_resize_threads(void **state)
{
    (void)state;
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    pvk_resize_params p = { .rank = 4, .in = { 1, 8, 23, 31 }, .out = { 1, 8, 46, 62 },
                            .scale = { 1, 1, 2, 2 }, .mode = PVK_RESIZE_LINEAR, .coord = PVK_COORD_HALF_PIXEL };
    int64_t n = 8 * 23 * 31, no = 8 * 46 * 62;
    float *x = malloc(sizeof(float) * (size_t)n), *y1 = malloc(sizeof(float) * (size_t)no), *y2 = malloc(sizeof(float) * (size_t)no);
    void *ws = malloc(pvk_resize_workspace(&p));
    for (int64_t i = 0; i < n; i++) x[i] = frand();
    pvk_resize(NULL, &p, PV_F32, x, y1, ws);
    pvk_resize(pool, &p, PV_F32, x, y2, ws);
    check_f32(y2, y1, no, 0);
    /* 2x bilinear half_pixel: interior output (2i+1) of row 2j+1 mixes 3/4 and 1/4 */
    int64_t i = 5, j = 7;
    float want = 0.75f * (0.75f * x[j * 31 + i] + 0.25f * x[j * 31 + i + 1]) +
                 0.25f * (0.75f * x[(j + 1) * 31 + i] + 0.25f * x[(j + 1) * 31 + i + 1]);
    assert_true(fabsf(y1[(2 * j + 1) * 62 + 2 * i + 1] - want) < 1e-5f);
    /* GridSample: the per-pixel plan is built and applied in parallel */
    pvk_grid_sample_params gp = { 1, 8, 23, 31, 40, 50, PVK_GS_BILINEAR, PVK_GS_REFLECTION, false };
    float *grid = malloc(sizeof(float) * 40 * 50 * 2);
    for (int k = 0; k < 40 * 50 * 2; k++) grid[k] = 1.3f * frand();
    void *gws = malloc(pvk_grid_sample_workspace(&gp));
    pvk_grid_sample_f32(NULL, &gp, x, grid, y1, gws);
    pvk_grid_sample_f32(pool, &gp, x, grid, y2, gws);
    check_f32(y2, y1, 8 * 40 * 50, 0);
    pvc_pool_free(pool);
    free(x); free(y1); free(y2); free(ws); free(grid); free(gws);
}

static void test_resize_errors(void **state)
{
    (void)state;
    float x[4] = { 0 };
    int64_t d[2] = { 2, 2 }, two = 2, zero = 0;
    float sc[2] = { 2, 2 }, neg[2] = { 2, -1 };
    int64_t sz[2] = { 4, 4 };
    pvc_tensor in[4] = { T(PV_F32, 2, d, x), T(PV_F32, 1, &zero, x), T(PV_F32, 1, &two, sc), T(PV_I64, 1, &two, sz) };
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, NULL, 0);                      /* scales and sizes */
    in[3] = absent();
    oph_attr cubic[2] = { OPH_STR("mode", "cubic"), OPH_INT("antialias", 1) };   /* cubic itself is supported */
    run_expect(PV_EUNSUPPORTED, "Resize", 13, in, 4, 15u, 1, cubic, 2);
    oph_attr crop[1] = { OPH_STR("coordinate_transformation_mode", "tf_crop_and_resize") };
    run_expect(PV_EUNSUPPORTED, "Resize", 13, in, 4, 15u, 1, crop, 1);
    oph_attr bogus[1] = { OPH_STR("mode", "bogus") };
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, bogus, 1);
    oph_attr nm[1] = { OPH_STR("nearest_mode", "nearest") };
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, nm, 1);
    oph_attr aa[2] = { OPH_STR("mode", "linear"), OPH_INT("antialias", 1) };
    run_expect(PV_EUNSUPPORTED, "Resize", 18, in, 4, 15u, 1, aa, 2);
    oph_attr kp[1] = { OPH_STR("keep_aspect_ratio_policy", "not_larger") };
    run_expect(PV_EUNSUPPORTED, "Resize", 18, in, 4, 15u, 1, kp, 1);
    run_expect(PV_EUNSUPPORTED, "Resize", 13, in, 4, 11u, 1, NULL, 0);                 /* scales not constant */
    run_expect(PV_EFORMAT, "Resize", 10, in, 3, 7u, 1, NULL, 0);                       /* opset 10: X and scales only */
    in[2].data = neg;
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, NULL, 0);                      /* scale <= 0 */
    in[2] = absent();
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, NULL, 0);                      /* neither */
    in[2] = T(PV_F32, 1, &two, sc);
    uint8_t u[4] = { 0 };
    in[0] = T(PV_U8, 2, d, u);
    oph_attr lin[1] = { OPH_STR("mode", "linear") };
    run_expect(PV_EUNSUPPORTED, "Resize", 13, in, 4, 15u, 1, lin, 1);                  /* linear on u8 */
    int64_t one = 1;
    in[0] = T(PV_F32, 2, d, x);
    in[2] = T(PV_F32, 1, &one, sc);
    run_expect(PV_EFORMAT, "Resize", 13, in, 4, 15u, 1, NULL, 0);                      /* scales length */
}

/* ---- GridSample --------------------------------------------------------------------------- */

static void test_grid_sample_hand(void **state)
{
    (void)state;
    float x[6] = { 1, 2, 3,
                   4, 5, 6 };               /* H = 2, W = 3 */
    int64_t dx[4] = { 1, 1, 2, 3 }, dg[4] = { 1, 1, 7, 2 };
    /* align_corners=1: -1 -> pixel 0, 1 -> last pixel */
    float g[14] = { -1, -1,   1, 1,   0, 0,   -0.5f, 1,   -1, 0,   3, -1,   -3, -1 };
    pvc_tensor in[2] = { T(PV_F32, 4, dx, x), T(PV_F32, 4, dg, g) };
    oph_attr ac[1] = { OPH_INT("align_corners", 1) };
    oph_result r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, ac, 1);
    int64_t d117[4] = { 1, 1, 1, 7 };
    check_dims(&r.out[0], 4, d117);
    /* (x=1.5,y=.5) -> 3.5 ; (x=.5,y=1) -> 4.5 ; (0,.5) -> 2.5 ; x=4, x=-2 out of range -> 0 */
    check_f32(r.out[0].data, (float[]){ 1, 6, 3.5f, 4.5f, 2.5f, 0, 0 }, 7, 1e-6f);
    oph_free(&r);
    /* border: x=4 clamps to column 2, x=-2 to column 0 */
    oph_attr bd[2] = { OPH_INT("align_corners", 1), OPH_STR("padding_mode", "border") };
    r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, bd, 2);
    assert_true(fabsf(((float *)r.out[0].data)[5] - 3) < 1e-6f);
    assert_true(fabsf(((float *)r.out[0].data)[6] - 1) < 1e-6f);
    oph_free(&r);
    /* reflection with align_corners (borders 0 and 2): x = 4 folds once at 2 to 0 -> 1;
     * x = -2 folds at 0 to 2 -> 3 */
    oph_attr rf[2] = { OPH_INT("align_corners", 1), OPH_STR("padding_mode", "reflection") };
    r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, rf, 2);
    assert_true(fabsf(((float *)r.out[0].data)[5] - 1) < 1e-6f);
    assert_true(fabsf(((float *)r.out[0].data)[6] - 3) < 1e-6f);
    oph_free(&r);
    /* align_corners=0: (-1,-1) is the outer corner (-0.5,-0.5): zeros padding gives p00 / 4 */
    r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, NULL, 0);
    assert_true(fabsf(((float *)r.out[0].data)[0] - 0.25f) < 1e-6f);
    oph_free(&r);
    /* nearest rounds half to even: x = 0.5 -> 0, x = 1.5 -> 2 (align_corners=1, W = 3:
     * x = (g + 1) * 1, so g = -0.5 -> 0.5, g = 0.5 -> 1.5); y = 0 */
    float gn[4] = { -0.5f, -1, 0.5f, -1 };
    int64_t dgn[4] = { 1, 1, 2, 2 };
    in[1] = T(PV_F32, 4, dgn, gn);
    oph_attr nn[2] = { OPH_INT("align_corners", 1), OPH_STR("mode", "nearest") };
    r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, nn, 2);
    check_f32(r.out[0].data, (float[]){ 1, 3 }, 2, 0);
    oph_free(&r);
}

static void test_grid_sample_identity(void **state)
{
    (void)state;
    /* A grid at the pixel centres reproduces the input in every mode and padding. */
    enum { N = 2, C = 3, H = 5, W = 7 };
    static float x[N * C * H * W], g[N * H * W * 2];
    for (int i = 0; i < N * C * H * W; i++) x[i] = frand();
    static const char *modes[2] = { "bilinear", "nearest" }, *pads[3] = { "zeros", "border", "reflection" };
    int64_t dx[4] = { N, C, H, W }, dg[4] = { N, H, W, 2 };
    for (int ac = 0; ac < 2; ac++) {
        for (int n = 0; n < N; n++)
            for (int y = 0; y < H; y++)
                for (int xx = 0; xx < W; xx++) {
                    float *p = g + ((n * H + y) * W + xx) * 2;
                    p[0] = ac ? 2.0f * xx / (W - 1) - 1 : (2.0f * xx + 1) / W - 1;
                    p[1] = ac ? 2.0f * y / (H - 1) - 1 : (2.0f * y + 1) / H - 1;
                }
        for (int m = 0; m < 2; m++)
            for (int pd = 0; pd < 3; pd++) {
                pvc_tensor in[2] = { T(PV_F32, 4, dx, x), T(PV_F32, 4, dg, g) };
                oph_attr at[3] = { OPH_INT("align_corners", ac), OPH_STR("mode", modes[m]), OPH_STR("padding_mode", pads[pd]) };
                oph_result r = run_expect(PV_OK, "GridSample", 16, in, 2, 0u, 1, at, 3);
                check_f32(r.out[0].data, x, N * C * H * W, 1e-5f);
                oph_free(&r);
            }
    }
}

static void test_grid_sample_errors(void **state)
{
    (void)state;
    float x[4] = { 0 }, g[8] = { 0 };
    int64_t dx[4] = { 1, 1, 2, 2 }, dg[4] = { 1, 2, 2, 2 }, dg3[4] = { 1, 1, 2, 3 }, dgn[4] = { 2, 2, 1, 2 };
    pvc_tensor in[2] = { T(PV_F32, 4, dx, x), T(PV_F32, 4, dg, g) };
    oph_attr bc[1] = { OPH_STR("mode", "bicubical") };   /* bicubic itself is supported */
    run_expect(PV_EFORMAT, "GridSample", 16, in, 2, 0u, 1, bc, 1);
    oph_attr pm[1] = { OPH_STR("padding_mode", "wrap") };
    run_expect(PV_EFORMAT, "GridSample", 16, in, 2, 0u, 1, pm, 1);
    oph_attr al[1] = { OPH_INT("align_corners", 2) };
    run_expect(PV_EFORMAT, "GridSample", 16, in, 2, 0u, 1, al, 1);
    in[1] = T(PV_F32, 4, dg3, g);
    run_expect(PV_EFORMAT, "GridSample", 16, in, 2, 0u, 1, NULL, 0);                 /* grid last dim */
    in[1] = T(PV_F32, 4, dgn, g);
    run_expect(PV_EFORMAT, "GridSample", 16, in, 2, 0u, 1, NULL, 0);                 /* batch mismatch */
    int64_t d3[3] = { 1, 2, 2 };
    in[0] = T(PV_F32, 3, d3, x);
    in[1] = T(PV_F32, 4, dg, g);
    run_expect(PV_EUNSUPPORTED, "GridSample", 16, in, 2, 0u, 1, NULL, 0);            /* rank 3 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_hand),
        cmocka_unit_test(test_reduce_noop_empty_axes),
        cmocka_unit_test(test_reduce_random_all_masks),
        cmocka_unit_test(test_reduce_empty_and_threads),
        cmocka_unit_test(test_reduce_errors),
        cmocka_unit_test(test_argmax_hand),
        cmocka_unit_test(test_argmax_random),
        cmocka_unit_test(test_argmax_errors),
        cmocka_unit_test(test_topk_hand),
        cmocka_unit_test(test_topk_large),
        cmocka_unit_test(test_topk_errors),
        cmocka_unit_test(test_maxpool_hand),
        cmocka_unit_test(test_pool_random),
        cmocka_unit_test(test_avgpool_hand),
        cmocka_unit_test(test_pool_threads),
        cmocka_unit_test(test_sum_f64_variants),
        cmocka_unit_test(test_pool_errors),
        cmocka_unit_test(test_pool_f16),
        cmocka_unit_test(test_resize_linear_hand),
        cmocka_unit_test(test_resize_nearest_modes),
        cmocka_unit_test(test_resize_nd_and_axes),
        cmocka_unit_test(test_resize_threads),
        cmocka_unit_test(test_resize_errors),
        cmocka_unit_test(test_grid_sample_hand),
        cmocka_unit_test(test_grid_sample_identity),
        cmocka_unit_test(test_grid_sample_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
