/* Dense operators: the reference GEMM, Conv, ConvTranspose, MatMul, Gemm, Einsum,
 * BatchNormalization, LayerNormalization, Softmax, LogSoftmax. Expectations are hand-computed
 * (small ONNX-doc examples) or come from naive double-precision loops written here, independent
 * of the kernels' blocking, im2col and batching. Outputs start as NaN garbage with guard floats
 * after them, and most checks also run on a 2-thread pool with a fused activation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"
#include "kernels/kernels.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define GUARD 16

static pvc_pool *pool2;

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)   /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}
static float *rand_buf(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static pvc_tensor tf(int rank, const int64_t *dims, float *data) { return oph_tensor(PV_F32, rank, dims, data); }
static pvc_tensor absent(void) { pvc_tensor t; memset(&t, 0, sizeof t); t.rank = -1; return t; }

/* oph_run with a pool, a fused activation, NaN-filled outputs and guard floats after them; a
 * harness fault (unread attribute, guard overwritten...) fails the test. */
static oph_result dense_run(const char *op_type, int opset, const pvc_tensor *in, int nin, int nout,
                            const oph_attr *attrs, int nattrs, pvg_act act, pvc_pool *pool)
{
    oph_opts o = { act, pool, true };
    oph_result r = oph_run_ex(op_type, opset, in, nin, 0, nout, attrs, nattrs, &o);
    if (r.fault[0]) fail_msg("%s: %s", op_type, r.fault);
    return r;
}

static const pvg_act NOACT = { PVG_ACT_NONE, 0, 0 };

static oph_result run_ok(const char *op, int opset, const pvc_tensor *in, int nin, int nout,
                         const oph_attr *at, int nat, pvg_act act, pvc_pool *pool)
{
    oph_result r = dense_run(op, opset, in, nin, nout, at, nat, act, pool);
    if (r.status != PV_OK) fail_msg("%s failed: %s", op, r.msg.text);
    return r;
}

static pv_status run_status(const char *op, int opset, const pvc_tensor *in, int nin, int nout,
                            const oph_attr *at, int nat)
{
    oph_result r = dense_run(op, opset, in, nin, nout, at, nat, NOACT, NULL);
    oph_free(&r);
    if (r.status != PV_OK && !r.msg.text[0]) fail_msg("%s: error without a message", op);
    return r.status;
}

static double act_ref(pvg_act a, double v)
{
    switch (a.kind) {
    case PVG_ACT_RELU: return v > 0 ? v : 0;
    case PVG_ACT_LEAKY_RELU: return v >= 0 ? v : v * a.alpha;
    case PVG_ACT_CLIP: return v < a.alpha ? a.alpha : v > a.beta ? a.beta : v;
    default: return v;
    }
}

static void expect_close(const float *got, const double *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (!(fabs(g - w) <= 1e-4 + 1e-4 * fabs(w)))
            fail_msg("%s[%lld]: got %.9g want %.9g", what, (long long)i, g, w);
    }
}

static void expect_closef(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 + 1e-5 * fabs(want[i])))
            fail_msg("%s[%lld]: got %.9g want %.9g", what, (long long)i, got[i], want[i]);
}

static void expect_dims(const pvc_tensor *t, int rank, const int64_t *dims)
{
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i]) fail_msg("dim %d: got %lld want %lld", i, (long long)t->dims[i], (long long)dims[i]);
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

/* ---- GEMM kernel ------------------------------------------------------------------------------ */

static void check_gemm(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta, pvc_pool *pool)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    int64_t arows = ta ? K : M, brows = tb ? N : K;
    float *A = rand_buf(arows * lda), *B = rand_buf(brows * ldb);
    float *C = malloc(sizeof(float) * (size_t)(M * ldc + GUARD));
    double *want = malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M * ldc + GUARD; i++) C[i] = beta == 0.0f ? NAN : frand();
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
            want[i * N + j] = alpha * s + (beta != 0.0f ? C[i * ldc + j] : 0.0);
        }
    float pad_before = C[N], tail = C[M * ldc];   /* gap column and first guard */
    pvk_gemm_f32(pool, M, N, K, A, lda, ta, B, ldb, tb, C, ldc, alpha, beta);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double g = C[i * ldc + j], w = want[i * N + j];
            if (!(fabs(g - w) <= 1e-4 + 1e-4 * fabs(w)))
                fail_msg("gemm %lldx%lldx%lld ta=%d tb=%d alpha=%g beta=%g: C[%lld,%lld]=%.9g want %.9g",
                         (long long)M, (long long)N, (long long)K, ta, tb, alpha, beta, (long long)i, (long long)j, g, w);
        }
    if (M > 1 && !(isnan(pad_before) ? isnan(C[N]) : C[N] == pad_before)) fail_msg("gemm wrote the row gap");
    if (!(isnan(tail) ? isnan(C[M * ldc]) : C[M * ldc] == tail)) fail_msg("gemm wrote past C");
    free(A);
    free(B);
    free(C);
    free(want);
}

static void test_gemm_kernel(void **state)
{
    (void)state;
    static const int64_t sz[][3] = { { 1, 1, 1 }, { 1, 9, 1 }, { 3, 5, 7 }, { 4, 8, 16 }, { 7, 1, 33 }, { 17, 31, 130 },
                                     { 65, 129, 257 }, { 70, 140, 300 }, { 130, 9, 5 }, { 2, 300, 64 } };
    for (int s = 0; s < N(sz); s++)
        for (int t = 0; t < 4; t++) {
            check_gemm(sz[s][0], sz[s][1], sz[s][2], t & 1, t & 2, 1.0f, 0.0f, NULL);
            check_gemm(sz[s][0], sz[s][1], sz[s][2], t & 1, t & 2, 0.5f, 1.0f, pool2);
        }
    check_gemm(200, 260, 150, false, false, -1.5f, 0.0f, pool2);
    check_gemm(5, 6, 0, false, false, 1.0f, 0.0f, NULL);   /* empty K: C = 0 */
    check_gemm(5, 6, 0, true, true, 1.0f, 1.0f, NULL);     /* empty K: C unchanged */
}

/* ---- Conv ------------------------------------------------------------------------------------- */

typedef struct conv_case {
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad;
    bool bias, give_kshape;
} conv_case;

/* Direct convolution in double over the (already resolved) padding. */
static void conv_ref(const conv_case *cc, const int64_t *out, const float *X, const float *W, const float *B,
                     pvg_act act, double *Y)
{
    int64_t in[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 }, s[3] = { 1, 1, 1 }, d[3] = { 1, 1, 1 }, pb[3] = { 0, 0, 0 }, o[3] = { 1, 1, 1 };
    for (int i = 0; i < cc->nsp; i++) {
        int a = 3 - cc->nsp + i;
        in[a] = cc->in[i]; k[a] = cc->k[i]; s[a] = cc->s[i]; d[a] = cc->d[i]; pb[a] = cc->pb[i]; o[a] = out[i];
    }
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group, isz = in[0] * in[1] * in[2], osz = o[0] * o[1] * o[2];
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t m = 0; m < cc->m; m++)
            for (int64_t oz = 0; oz < o[0]; oz++)
                for (int64_t oy = 0; oy < o[1]; oy++)
                    for (int64_t ox = 0; ox < o[2]; ox++) {
                        double acc = B ? B[m] : 0.0;
                        int64_t g = m / mg;
                        for (int64_t c = 0; c < cg; c++)
                            for (int64_t kz = 0; kz < k[0]; kz++)
                                for (int64_t ky = 0; ky < k[1]; ky++)
                                    for (int64_t kx = 0; kx < k[2]; kx++) {
                                        int64_t iz = oz * s[0] - pb[0] + kz * d[0], iy = oy * s[1] - pb[1] + ky * d[1],
                                                ix = ox * s[2] - pb[2] + kx * d[2];
                                        if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
                                        acc += (double)X[((n * cc->c + g * cg + c) * isz) + (iz * in[1] + iy) * in[2] + ix] *
                                               W[((m * cg + c) * k[0] + kz) * k[1] * k[2] + ky * k[2] + kx];
                                    }
                        Y[(n * cc->m + m) * osz + (oz * o[1] + oy) * o[2] + ox] = act_ref(act, acc);
                    }
}

static void run_conv_case(const conv_case *cc, pvg_act act, pvc_pool *pool)
{
    int64_t xd[5] = { cc->n, cc->c }, wd[5] = { cc->m, cc->c / cc->group }, bd[1] = { cc->m }, od[5] = { cc->n, cc->m };
    int64_t out[3], pb[3], pe[3];
    conv_case r = *cc;
    for (int i = 0; i < cc->nsp; i++) {
        xd[2 + i] = cc->in[i];
        wd[2 + i] = cc->k[i];
        int64_t ek = (cc->k[i] - 1) * cc->d[i] + 1;
        if (cc->auto_pad && strncmp(cc->auto_pad, "SAME", 4) == 0) {
            out[i] = (cc->in[i] + cc->s[i] - 1) / cc->s[i];
            int64_t tot = (out[i] - 1) * cc->s[i] + ek - cc->in[i];
            if (tot < 0) tot = 0;
            pb[i] = !strcmp(cc->auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
            pe[i] = tot - pb[i];
        } else if (cc->auto_pad) {   /* VALID */
            pb[i] = pe[i] = 0;
            out[i] = (cc->in[i] - ek) / cc->s[i] + 1;
        } else {
            pb[i] = cc->pb[i];
            pe[i] = cc->pe[i];
            out[i] = (cc->in[i] + pb[i] + pe[i] - ek) / cc->s[i] + 1;
        }
        r.pb[i] = pb[i];
        od[2 + i] = out[i];
    }
    int64_t nx = cc->n * cc->c, nw = cc->m * (cc->c / cc->group), ny = cc->n * cc->m;
    for (int i = 0; i < cc->nsp; i++) { nx *= cc->in[i]; nw *= cc->k[i]; ny *= out[i]; }
    float *X = rand_buf(nx), *W = rand_buf(nw), *B = rand_buf(cc->m);
    double *want = malloc(sizeof(double) * (size_t)ny);
    conv_ref(&r, out, X, W, cc->bias ? B : NULL, act, want);
    pvc_tensor in[3] = { tf(cc->nsp + 2, xd, X), tf(cc->nsp + 2, wd, W), tf(1, bd, B) };
    int64_t pads[6];
    for (int i = 0; i < cc->nsp; i++) { pads[i] = cc->pb[i]; pads[cc->nsp + i] = cc->pe[i]; }
    oph_attr at[8];
    int na = 0;
    at[na++] = (oph_attr)OPH_INT("group", cc->group);
    at[na++] = (oph_attr)OPH_INTS("strides", cc->s, cc->nsp);
    at[na++] = (oph_attr)OPH_INTS("dilations", cc->d, cc->nsp);
    if (cc->auto_pad) at[na++] = (oph_attr)OPH_STR("auto_pad", cc->auto_pad);
    else at[na++] = (oph_attr)OPH_INTS("pads", pads, 2 * cc->nsp);
    if (cc->give_kshape) at[na++] = (oph_attr)OPH_INTS("kernel_shape", cc->k, cc->nsp);
    oph_result res = run_ok("Conv", 17, in, cc->bias ? 3 : 2, 1, at, na, act, pool);
    expect_dims(&res.out[0], cc->nsp + 2, od);
    expect_close(res.out[0].data, want, ny, "conv");
    oph_free(&res);
    free(X);
    free(W);
    free(B);
    free(want);
}

static void test_conv_example(void **state)
{
    (void)state;
    /* ONNX doc: 5x5 input 0..24, 3x3 kernel of ones, padding 1 (and none). */
    float x[25], w[9];
    for (int i = 0; i < 25; i++) x[i] = (float)i;
    for (int i = 0; i < 9; i++) w[i] = 1.0f;
    int64_t xd[] = { 1, 1, 5, 5 }, wd[] = { 1, 1, 3, 3 }, p1[] = { 1, 1, 1, 1 }, k[] = { 3, 3 };
    pvc_tensor in[2] = { tf(4, xd, x), tf(4, wd, w) };
    oph_attr at[] = { OPH_INTS("kernel_shape", k, 2), OPH_INTS("pads", p1, 4) };
    oph_result r = run_ok("Conv", 17, in, 2, 1, at, 2, NOACT, NULL);
    static const float want[25] = { 12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                    93, 144, 153, 162, 111, 72, 111, 117, 123, 84 };
    expect_closef(r.out[0].data, want, 25, "conv pad 1");
    oph_free(&r);
    r = run_ok("Conv", 17, in, 2, 1, at, 1, NOACT, NULL);
    static const float want0[9] = { 54, 63, 72, 99, 108, 117, 144, 153, 162 };
    expect_closef(r.out[0].data, want0, 9, "conv no pad");
    oph_free(&r);
    /* Strides 2 with asymmetric padding (ONNX doc): 7x5 input, pads [1,0,1,0]. */
    float x2[35];
    for (int i = 0; i < 35; i++) x2[i] = (float)i;
    int64_t xd2[] = { 1, 1, 7, 5 }, s2[] = { 2, 2 }, pa[] = { 1, 0, 1, 0 };
    pvc_tensor in2[2] = { tf(4, xd2, x2), tf(4, wd, w) };
    oph_attr at2[] = { OPH_INTS("kernel_shape", k, 2), OPH_INTS("pads", pa, 4), OPH_INTS("strides", s2, 2) };
    r = run_ok("Conv", 17, in2, 2, 1, at2, 3, NOACT, NULL);
    static const float want2[8] = { 21, 33, 99, 117, 189, 207, 171, 183 };
    int64_t od[] = { 1, 1, 4, 2 };
    expect_dims(&r.out[0], 4, od);
    expect_closef(r.out[0].data, want2, 8, "conv strided asymmetric");
    oph_free(&r);
}

static void test_conv_random(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        /* nsp n  c  m grp  in            k          s          d          pb         pe */
        { 2, 1, 3, 4, 1, { 7, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true, true },
        { 2, 2, 4, 6, 2, { 8, 7 }, { 3, 2 }, { 2, 1 }, { 1, 2 }, { 0, 1 }, { 2, 0 }, NULL, true, false },
        { 2, 1, 6, 6, 6, { 9, 10 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true, false },  /* depthwise */
        { 2, 2, 4, 8, 4, { 11, 6 }, { 5, 3 }, { 2, 3 }, { 2, 1 }, { 3, 0 }, { 1, 2 }, NULL, false, false }, /* dw x2 */
        { 2, 2, 5, 7, 1, { 6, 5 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, true, false },   /* 1x1 */
        { 2, 1, 5, 3, 1, { 6, 5 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, true, false },   /* 1x1 s2 */
        { 2, 1, 3, 5, 1, { 9, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_UPPER", true, false },
        { 2, 1, 3, 5, 1, { 9, 8 }, { 4, 3 }, { 2, 3 }, { 1, 1 }, { 0 }, { 0 }, "SAME_LOWER", true, false },
        { 2, 1, 2, 3, 1, { 9, 8 }, { 3, 2 }, { 2, 1 }, { 1, 1 }, { 0 }, { 0 }, "VALID", false, false },
        { 1, 2, 3, 4, 1, { 17 }, { 5 }, { 2 }, { 2 }, { 3 }, { 1 }, NULL, true, true },                      /* 1-D */
        { 1, 1, 4, 4, 4, { 12 }, { 3 }, { 1 }, { 1 }, { 1 }, { 1 }, NULL, true, false },                      /* 1-D dw */
        { 3, 1, 2, 3, 1, { 5, 6, 4 }, { 3, 2, 3 }, { 1, 2, 1 }, { 1, 1, 2 }, { 1, 0, 2 }, { 1, 1, 0 }, NULL, true, true }, /* 3-D */
        { 2, 1, 64, 4, 1, { 90, 91 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true, false }, /* col slices */
    };
    pvg_act relu = { PVG_ACT_RELU, 0, 0 }, clip = { PVG_ACT_CLIP, -0.25f, 0.5f };
    for (int i = 0; i < N(cases); i++) {
        run_conv_case(&cases[i], NOACT, NULL);
        run_conv_case(&cases[i], i & 1 ? relu : clip, pool2);
    }
}

static void test_conv_errors(void **state)
{
    (void)state;
    float x[2 * 4 * 4] = { 0 }, w[3 * 2 * 3 * 3] = { 0 }, b[3] = { 0 };
    int64_t xd[] = { 1, 2, 4, 4 }, wd[] = { 3, 2, 3, 3 }, bd[] = { 3 }, bbad[] = { 2 }, k2[] = { 2, 2 }, p3[] = { 1, 1, 1 },
            s0[] = { 0, 1 }, pn[] = { -1, 0, 0, 0 }, p1[] = { 1, 1, 1, 1 }, big[] = { 1, 1, 9, 9 };
    pvc_tensor in[3] = { tf(4, xd, x), tf(4, wd, w), tf(1, bd, b) };
    oph_attr g2[] = { OPH_INT("group", 2) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, g2, 1), PV_EFORMAT);           /* channels vs group */
    oph_attr ks[] = { OPH_INTS("kernel_shape", k2, 2) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, ks, 1), PV_EFORMAT);           /* kernel_shape vs W */
    oph_attr pc[] = { OPH_INTS("pads", p3, 3) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, pc, 1), PV_EFORMAT);           /* pads count */
    oph_attr sz[] = { OPH_INTS("strides", s0, 2) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, sz, 1), PV_EFORMAT);           /* stride 0 */
    oph_attr pneg[] = { OPH_INTS("pads", pn, 4) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, pneg, 1), PV_EFORMAT);         /* negative pad */
    oph_attr ap[] = { OPH_STR("auto_pad", "SAME") };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, ap, 1), PV_EFORMAT);           /* bad auto_pad */
    oph_attr both[] = { OPH_STR("auto_pad", "SAME_UPPER"), OPH_INTS("pads", p1, 4) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, both, 2), PV_EFORMAT);         /* pads with auto_pad */
    oph_attr gz[] = { OPH_INT("group", 0) };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, gz, 1), PV_EFORMAT);
    oph_attr gs[] = { OPH_STR("group", "x") };
    assert_int_equal(run_status("Conv", 17, in, 3, 1, gs, 1), PV_EFORMAT);           /* wrong attribute type */
    pvc_tensor inb[3] = { in[0], in[1], tf(1, bbad, b) };
    assert_int_equal(run_status("Conv", 17, inb, 3, 1, NULL, 0), PV_EFORMAT);        /* bias size */
    pvc_tensor inw[2] = { in[0], tf(4, big, w) };
    assert_int_equal(run_status("Conv", 17, inw, 2, 1, NULL, 0), PV_EFORMAT);        /* kernel > input */
    pvc_tensor ini[2] = { oph_tensor(PV_I32, 4, xd, x), oph_tensor(PV_I32, 4, wd, w) };
    assert_int_equal(run_status("Conv", 17, ini, 2, 1, NULL, 0), PV_EUNSUPPORTED);   /* int conv */
    int64_t x6[] = { 1, 1, 2, 2, 2, 2 };
    pvc_tensor in6[2] = { tf(6, x6, x), tf(6, x6, w) };
    assert_int_equal(run_status("Conv", 17, in6, 2, 1, NULL, 0), PV_EUNSUPPORTED);   /* 4-D conv */
    assert_int_equal(run_status("Conv", 17, in, 1, 1, NULL, 0), PV_EFORMAT);         /* W missing */
}

static void test_conv_f16(void **state)
{
    (void)state;
    uint16_t x[1 * 2 * 4 * 4], w[3 * 2 * 3 * 3], b[3];
    float xf[32], wf[54], bf[3];
    for (int i = 0; i < 32; i++) { xf[i] = pvc_f16_to_f32(pvc_f32_to_f16(frand())); x[i] = pvc_f32_to_f16(xf[i]); }
    for (int i = 0; i < 54; i++) { wf[i] = pvc_f16_to_f32(pvc_f32_to_f16(frand())); w[i] = pvc_f32_to_f16(wf[i]); }
    for (int i = 0; i < 3; i++) { bf[i] = pvc_f16_to_f32(pvc_f32_to_f16(frand())); b[i] = pvc_f32_to_f16(bf[i]); }
    int64_t xd[] = { 1, 2, 4, 4 }, wd[] = { 3, 2, 3, 3 }, bd[] = { 3 }, p1[] = { 1, 1, 1, 1 };
    oph_attr at[] = { OPH_INTS("pads", p1, 4) };
    pvc_tensor in16[3] = { oph_tensor(PV_F16, 4, xd, x), oph_tensor(PV_F16, 4, wd, w), oph_tensor(PV_F16, 1, bd, b) };
    pvc_tensor in32[3] = { tf(4, xd, xf), tf(4, wd, wf), tf(1, bd, bf) };
    oph_result r16 = run_ok("Conv", 17, in16, 3, 1, at, 1, NOACT, pool2);
    oph_result r32 = run_ok("Conv", 17, in32, 3, 1, at, 1, NOACT, NULL);
    assert_int_equal(r16.out[0].dtype, PV_F16);
    const uint16_t *y16 = r16.out[0].data;
    const float *y32 = r32.out[0].data;
    for (int i = 0; i < 48; i++)
        if (fabsf(pvc_f16_to_f32(y16[i]) - y32[i]) > 4e-3f * (1 + fabsf(y32[i]))) fail_msg("f16 conv [%d]", i);
    oph_free(&r16);
    oph_free(&r32);
}

/* ---- ConvTranspose ------------------------------------------------------------------------------ */

typedef struct convt_case {
    int nsp;
    int64_t n, c, m, group;
    int64_t in[2], k[2], s[2], d[2], pb[2], pe[2], op[2], oshape[2];
    const char *auto_pad;
    bool bias;
} convt_case;

static void run_convt_case(const convt_case *cc, pvg_act act, pvc_pool *pool)
{
    int nsp = cc->nsp;
    int64_t xd[4] = { cc->n, cc->c }, wd[4] = { cc->c, cc->m / cc->group }, bd[1] = { cc->m }, od[4] = { cc->n, cc->m };
    int64_t out[2] = { 1, 1 }, pb[2] = { 0, 0 }, in[2] = { 1, 1 }, k[2] = { 1, 1 }, s[2] = { 1, 1 }, d[2] = { 1, 1 };
    for (int i = 0; i < nsp; i++) {
        int a = 2 - nsp + i;
        in[a] = cc->in[i]; k[a] = cc->k[i]; s[a] = cc->s[i]; d[a] = cc->d[i];
        xd[2 + i] = cc->in[i];
        wd[2 + i] = cc->k[i];
        int64_t full = cc->s[i] * (cc->in[i] - 1) + cc->op[i] + (cc->k[i] - 1) * cc->d[i] + 1;
        bool same = cc->auto_pad && !strncmp(cc->auto_pad, "SAME", 4);
        if (cc->oshape[0] || same) {
            out[a] = cc->oshape[0] ? cc->oshape[i] : cc->in[i] * cc->s[i];
            int64_t tot = full - out[a];
            if (tot < 0) tot = 0;
            pb[a] = same && !strcmp(cc->auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        } else {
            pb[a] = cc->pb[i];
            out[a] = full - cc->pb[i] - cc->pe[i];
        }
        od[2 + i] = out[a];
    }
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
    int64_t nx = cc->n * cc->c * in[0] * in[1], nw = cc->c * mg * k[0] * k[1], ny = cc->n * cc->m * out[0] * out[1];
    float *X = rand_buf(nx), *W = rand_buf(nw), *B = rand_buf(cc->m);
    double *want = calloc((size_t)ny, sizeof(double));
    /* Scatter form: every input pixel adds W-weighted copies into the output. */
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t c = 0; c < cc->c; c++)
            for (int64_t iy = 0; iy < in[0]; iy++)
                for (int64_t ix = 0; ix < in[1]; ix++) {
                    double v = X[((n * cc->c + c) * in[0] + iy) * in[1] + ix];
                    int64_t g = c / cg;
                    for (int64_t mm = 0; mm < mg; mm++)
                        for (int64_t ky = 0; ky < k[0]; ky++)
                            for (int64_t kx = 0; kx < k[1]; kx++) {
                                int64_t oy = iy * s[0] - pb[0] + ky * d[0], ox = ix * s[1] - pb[1] + kx * d[1];
                                if (oy < 0 || oy >= out[0] || ox < 0 || ox >= out[1]) continue;
                                want[((n * cc->m + g * mg + mm) * out[0] + oy) * out[1] + ox] +=
                                    v * W[((c * mg + mm) * k[0] + ky) * k[1] + kx];
                            }
                }
    for (int64_t i = 0; i < ny; i++)
        want[i] = act_ref(act, want[i] + (cc->bias ? B[(i / (out[0] * out[1])) % cc->m] : 0.0));
    pvc_tensor tin[3] = { tf(nsp + 2, xd, X), tf(nsp + 2, wd, W), tf(1, bd, B) };
    int64_t pads[4];
    for (int i = 0; i < nsp; i++) { pads[i] = cc->pb[i]; pads[nsp + i] = cc->pe[i]; }
    oph_attr at[8];
    int na = 0;
    at[na++] = (oph_attr)OPH_INT("group", cc->group);
    at[na++] = (oph_attr)OPH_INTS("strides", cc->s, nsp);
    at[na++] = (oph_attr)OPH_INTS("dilations", cc->d, nsp);
    at[na++] = (oph_attr)OPH_INTS("output_padding", cc->op, nsp);
    if (cc->auto_pad) at[na++] = (oph_attr)OPH_STR("auto_pad", cc->auto_pad);
    else if (!cc->oshape[0]) at[na++] = (oph_attr)OPH_INTS("pads", pads, 2 * nsp);
    if (cc->oshape[0]) at[na++] = (oph_attr)OPH_INTS("output_shape", cc->oshape, nsp);
    oph_result r = run_ok("ConvTranspose", 17, tin, cc->bias ? 3 : 2, 1, at, na, act, pool);
    expect_dims(&r.out[0], nsp + 2, od);
    expect_close(r.out[0].data, want, ny, "convtranspose");
    oph_free(&r);
    free(X);
    free(W);
    free(B);
    free(want);
}

static void test_convtranspose_example(void **state)
{
    (void)state;
    /* ONNX doc 1-D: x = [0, 1, 2], W = ones[1, 2, 3] -> two channels of [0, 1, 3, 3, 2]. */
    float x[3] = { 0, 1, 2 }, w[6] = { 1, 1, 1, 1, 1, 1 };
    int64_t xd[] = { 1, 1, 3 }, wd[] = { 1, 2, 3 };
    pvc_tensor in[2] = { tf(3, xd, x), tf(3, wd, w) };
    oph_result r = run_ok("ConvTranspose", 17, in, 2, 1, NULL, 0, NOACT, NULL);
    static const float want[10] = { 0, 1, 3, 3, 2, 0, 1, 3, 3, 2 };
    int64_t od[] = { 1, 2, 5 };
    expect_dims(&r.out[0], 3, od);
    expect_closef(r.out[0].data, want, 10, "convtranspose 1-D");
    oph_free(&r);
}

static void test_convtranspose_random(void **state)
{
    (void)state;
    static const convt_case cases[] = {
        /* nsp n  c  m grp  in          k          s          d          pb         pe        op        oshape */
        { 2, 1, 2, 3, 1, { 3, 4 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, NULL, true },
        { 2, 2, 4, 6, 2, { 4, 3 }, { 3, 2 }, { 2, 3 }, { 1, 2 }, { 1, 0 }, { 2, 1 }, { 1, 0 }, { 0, 0 }, NULL, true },
        { 2, 1, 3, 2, 1, { 3, 3 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, { 0, 0 }, NULL, false },
        { 2, 1, 2, 2, 1, { 3, 3 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 10, 8 }, NULL, true },
        { 2, 1, 2, 2, 1, { 3, 3 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 12, 7 }, NULL, true }, /* > full */
        { 2, 1, 1, 2, 1, { 3, 3 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, "SAME_UPPER", true },
        { 2, 1, 1, 2, 1, { 3, 4 }, { 3, 2 }, { 2, 3 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 0 }, { 0, 0 }, "SAME_LOWER", false },
        { 2, 1, 3, 3, 3, { 5, 4 }, { 3, 3 }, { 2, 2 }, { 2, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, NULL, true },  /* dw */
        { 1, 2, 3, 4, 1, { 7 }, { 4 }, { 3 }, { 2 }, { 1 }, { 2 }, { 2 }, { 0 }, NULL, true },                          /* 1-D */
        { 2, 1, 8, 4, 1, { 16, 16 }, { 4, 4 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, true },
    };
    pvg_act leaky = { PVG_ACT_LEAKY_RELU, 0.1f, 0 };
    for (int i = 0; i < N(cases); i++) {
        run_convt_case(&cases[i], NOACT, NULL);
        run_convt_case(&cases[i], leaky, pool2);
    }
}

static void test_convtranspose_errors(void **state)
{
    (void)state;
    float x[8] = { 0 }, w[18] = { 0 };
    int64_t xd[] = { 1, 2, 2, 2 }, wd[] = { 2, 1, 3, 3 }, wbad[] = { 3, 1, 3, 3 }, op2[] = { 2, 0 }, os[] = { 4 };
    pvc_tensor in[2] = { tf(4, xd, x), tf(4, wd, w) };
    oph_attr opad[] = { OPH_INTS("output_padding", op2, 2) };
    assert_int_equal(run_status("ConvTranspose", 17, in, 2, 1, opad, 1), PV_EFORMAT);   /* output_padding >= stride */
    oph_attr osh[] = { OPH_INTS("output_shape", os, 1) };
    assert_int_equal(run_status("ConvTranspose", 17, in, 2, 1, osh, 1), PV_EFORMAT);    /* output_shape count */
    pvc_tensor inw[2] = { in[0], tf(4, wbad, w) };
    assert_int_equal(run_status("ConvTranspose", 17, inw, 2, 1, NULL, 0), PV_EFORMAT);  /* W channels */
    int64_t big[] = { 3, 3, 3, 3 };
    oph_attr bp[] = { OPH_INTS("pads", big, 4) };
    assert_int_equal(run_status("ConvTranspose", 17, in, 2, 1, bp, 1), PV_EFORMAT);     /* empty output */
}

/* ---- MatMul --------------------------------------------------------------------------------------- */

static void matmul_case(int ra, const int64_t *ad, int rb, const int64_t *bd, int ro, const int64_t *od,
                        pvg_act act, pvc_pool *pool)
{
    pvc_tensor ta = tf(ra, ad, NULL), tb = tf(rb, bd, NULL), to = tf(ro, od, NULL);
    int64_t na = pvc_numel(&ta), nb = pvc_numel(&tb), no = pvc_numel(&to);
    float *A = rand_buf(na), *B = rand_buf(nb);
    ta.data = A;
    tb.data = B;
    /* Reference: promote to rank >= 2, broadcast batch index by index. */
    int64_t M = ra == 1 ? 1 : ad[ra - 2], K = ad[ra - 1], Nn = rb == 1 ? 1 : bd[rb - 1];
    int64_t nbatch = no / (M * Nn);
    int br = (ro - (ra > 1) - (rb > 1));
    double *want = malloc(sizeof(double) * (size_t)no);
    for (int64_t b = 0; b < nbatch; b++) {
        int64_t aoff = 0, boff = 0, astr = 1, bstr = 1, rem = b;
        for (int d = br - 1; d >= 0; d--) {
            int64_t i = rem % od[d];
            rem /= od[d];
            int ia = d - (br - (ra - 2)), ib = d - (br - (rb - 2));
            if (ra > 2 && ia >= 0) { aoff += (ad[ia] == 1 ? 0 : i) * astr; astr *= ad[ia]; }
            if (rb > 2 && ib >= 0) { boff += (bd[ib] == 1 ? 0 : i) * bstr; bstr *= bd[ib]; }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < Nn; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += (double)A[aoff * M * K + i * K + k] * B[boff * K * Nn + k * Nn + j];
                want[(b * M + i) * Nn + j] = act_ref(act, s);
            }
    }
    pvc_tensor in[2] = { ta, tb };
    oph_result r = run_ok("MatMul", 13, in, 2, 1, NULL, 0, act, pool);
    expect_dims(&r.out[0], ro, od);
    expect_close(r.out[0].data, want, no, "matmul");
    oph_free(&r);
    free(A);
    free(B);
    free(want);
}

static void test_matmul(void **state)
{
    (void)state;
    pvg_act relu = { PVG_ACT_RELU, 0, 0 };
    for (int pass = 0; pass < 2; pass++) {
        pvg_act act = pass ? relu : NOACT;
        pvc_pool *pool = pass ? pool2 : NULL;
        { int64_t a[] = { 3, 4 }, b[] = { 4, 5 }, o[] = { 3, 5 }; matmul_case(2, a, 2, b, 2, o, act, pool); }
        { int64_t a[] = { 4 }, b[] = { 4 }, o[] = { 0 }; matmul_case(1, a, 1, b, 0, o, act, pool); }
        { int64_t a[] = { 4 }, b[] = { 2, 4, 5 }, o[] = { 2, 5 }; matmul_case(1, a, 3, b, 2, o, act, pool); }
        { int64_t a[] = { 2, 3, 4 }, b[] = { 4 }, o[] = { 2, 3 }; matmul_case(3, a, 1, b, 2, o, act, pool); }
        { int64_t a[] = { 2, 1, 3, 4 }, b[] = { 5, 4, 6 }, o[] = { 2, 5, 3, 6 }; matmul_case(4, a, 3, b, 4, o, act, pool); }
        { int64_t a[] = { 3, 7, 20 }, b[] = { 20, 9 }, o[] = { 3, 7, 9 }; matmul_case(3, a, 2, b, 3, o, act, pool); }  /* fold */
        { int64_t a[] = { 7, 20 }, b[] = { 3, 20, 9 }, o[] = { 3, 7, 9 }; matmul_case(2, a, 3, b, 3, o, act, pool); }
        { int64_t a[] = { 2, 3, 33, 17 }, b[] = { 2, 3, 17, 40 }, o[] = { 2, 3, 33, 40 }; matmul_case(4, a, 4, b, 4, o, act, pool); }
        { int64_t a[] = { 1, 130, 70 }, b[] = { 70, 140 }, o[] = { 1, 130, 140 }; matmul_case(3, a, 2, b, 3, o, act, pool); }
    }
}

static void test_matmul_int(void **state)
{
    (void)state;
    int64_t a64[] = { 1, 2, 3, 4, 5, 6 }, b64[] = { 7, 8, 9, 10, 11, 12 }, big[] = { INT64_C(1) << 40, 3 }, bb[] = { 1 << 20, 5 };
    int64_t ad[] = { 2, 3 }, bd[] = { 3, 2 }, od[] = { 2, 2 };
    pvc_tensor in[2] = { oph_tensor(PV_I64, 2, ad, a64), oph_tensor(PV_I64, 2, bd, b64) };
    oph_result r = run_ok("MatMul", 13, in, 2, 1, NULL, 0, NOACT, pool2);
    static const int64_t want[] = { 58, 64, 139, 154 };
    expect_dims(&r.out[0], 2, od);
    assert_int_equal(r.out[0].dtype, PV_I64);
    assert_memory_equal(r.out[0].data, want, sizeof want);
    oph_free(&r);
    int64_t v2[] = { 2 };
    pvc_tensor in2[2] = { oph_tensor(PV_I64, 1, v2, big), oph_tensor(PV_I64, 1, v2, bb) };
    r = run_ok("MatMul", 13, in2, 2, 1, NULL, 0, NOACT, NULL);
    assert_int_equal(((int64_t *)r.out[0].data)[0], (INT64_C(1) << 60) + 15);   /* exact beyond 2^53 */
    oph_free(&r);
    int32_t a32[] = { 1, -2, 3, 4, 5, -6 }, b32[] = { 7, 8, 9, 10, 11, 12 };
    pvc_tensor in3[2] = { oph_tensor(PV_I32, 2, ad, a32), oph_tensor(PV_I32, 2, bd, b32) };
    r = run_ok("MatMul", 13, in3, 2, 1, NULL, 0, NOACT, NULL);
    static const int32_t want32[] = { 22, 24, 7, 10 };
    assert_memory_equal(r.out[0].data, want32, sizeof want32);
    oph_free(&r);
}

static void test_matmul_errors(void **state)
{
    (void)state;
    float a[12] = { 0 };
    int64_t ad[] = { 3, 4 }, bd[] = { 3, 4 }, b3[] = { 2, 4, 5 }, a3[] = { 3, 3, 4 };
    pvc_tensor in[2] = { tf(2, ad, a), tf(2, bd, a) };
    assert_int_equal(run_status("MatMul", 13, in, 2, 1, NULL, 0), PV_EFORMAT);   /* K mismatch */
    pvc_tensor in2[2] = { tf(3, a3, a), tf(3, b3, a) };
    assert_int_equal(run_status("MatMul", 13, in2, 2, 1, NULL, 0), PV_EFORMAT);  /* batch 3 vs 2 */
    pvc_tensor in3[2] = { tf(2, ad, a), oph_tensor(PV_I64, 2, bd, a) };
    assert_int_equal(run_status("MatMul", 13, in3, 2, 1, NULL, 0), PV_EFORMAT);  /* mixed dtypes */
    pvc_tensor in4[2] = { oph_tensor(PV_U8, 2, ad, a), oph_tensor(PV_U8, 2, bd, a) };
    assert_int_equal(run_status("MatMul", 13, in4, 2, 1, NULL, 0), PV_EUNSUPPORTED);
    pvc_tensor in5[2] = { tf(0, ad, a), tf(2, bd, a) };
    assert_int_equal(run_status("MatMul", 13, in5, 2, 1, NULL, 0), PV_EFORMAT);  /* scalar operand */
}

static void test_matmul_bf16(void **state)
{
    (void)state;
    uint16_t a[6], b[6];
    float af[6], bf[6];
    for (int i = 0; i < 6; i++) {
        af[i] = pvc_bf16_to_f32(pvc_f32_to_bf16(frand()));
        bf[i] = pvc_bf16_to_f32(pvc_f32_to_bf16(frand()));
        a[i] = pvc_f32_to_bf16(af[i]);
        b[i] = pvc_f32_to_bf16(bf[i]);
    }
    int64_t ad[] = { 2, 3 }, bd[] = { 3, 2 };
    pvc_tensor in[2] = { oph_tensor(PV_BF16, 2, ad, a), oph_tensor(PV_BF16, 2, bd, b) };
    oph_result r = run_ok("MatMul", 13, in, 2, 1, NULL, 0, NOACT, NULL);
    assert_int_equal(r.out[0].dtype, PV_BF16);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            float s = 0;
            for (int k = 0; k < 3; k++) s += af[i * 3 + k] * bf[k * 2 + j];
            float g = pvc_bf16_to_f32(((uint16_t *)r.out[0].data)[i * 2 + j]);
            if (fabsf(g - s) > 1e-2f * (1 + fabsf(s))) fail_msg("bf16 matmul [%d,%d]: %g vs %g", i, j, g, s);
        }
    oph_free(&r);
}

/* ---- Gemm ----------------------------------------------------------------------------------------- */

static void gemm_case(int64_t M, int64_t Nn, int64_t K, int ta, int tb, float alpha, float beta, int crank,
                      const int64_t *cd, pvg_act act, pvc_pool *pool)
{
    int64_t ad[2] = { ta ? K : M, ta ? M : K }, bd[2] = { tb ? Nn : K, tb ? K : Nn }, od[2] = { M, Nn };
    float *A = rand_buf(M * K), *B = rand_buf(K * Nn), *C = rand_buf(M * Nn);
    double *want = malloc(sizeof(double) * (size_t)(M * Nn));
    int64_t cr = crank == 2 ? cd[0] : 1, cc = crank >= 1 ? cd[crank - 1] : 1;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < Nn; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * Nn + j]);
            s *= alpha;
            if (crank >= 0) s += beta * C[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
            want[i * Nn + j] = act_ref(act, s);
        }
    pvc_tensor in[3] = { tf(2, ad, A), tf(2, bd, B), crank >= 0 ? tf(crank, cd, C) : absent() };
    oph_attr at[] = { OPH_INT("transA", ta), OPH_INT("transB", tb), OPH_FLOAT("alpha", alpha), OPH_FLOAT("beta", beta) };
    oph_result r = run_ok("Gemm", 13, in, crank >= 0 ? 3 : 2, 1, at, 4, act, pool);
    expect_dims(&r.out[0], 2, od);
    expect_close(r.out[0].data, want, M * Nn, "gemm");
    oph_free(&r);
    free(A);
    free(B);
    free(C);
    free(want);
}

static void test_gemm_op(void **state)
{
    (void)state;
    int64_t cmn[] = { 5, 7 }, cn[] = { 7 }, cm1[] = { 5, 1 }, c11[] = { 1, 1 }, c1[] = { 1 };
    pvg_act clip = { PVG_ACT_CLIP, 0.0f, 6.0f };
    for (int t = 0; t < 4; t++) {
        gemm_case(5, 7, 9, t & 1, t >> 1, 1.0f, 1.0f, 2, cmn, NOACT, NULL);
        gemm_case(5, 7, 9, t & 1, t >> 1, 0.25f, 0.5f, 1, cn, clip, pool2);
    }
    gemm_case(5, 7, 9, 0, 1, 1.0f, 1.0f, 2, cm1, NOACT, NULL);
    gemm_case(5, 7, 9, 1, 0, 2.0f, -1.0f, 2, c11, NOACT, NULL);
    gemm_case(5, 7, 9, 0, 0, 1.0f, 1.0f, 1, c1, NOACT, NULL);
    gemm_case(5, 7, 9, 0, 0, 1.0f, 1.0f, 0, c1, NOACT, NULL);     /* scalar C */
    gemm_case(5, 7, 9, 0, 0, 1.0f, 0.0f, 2, cmn, NOACT, NULL);    /* beta 0 ignores C */
    gemm_case(5, 7, 9, 0, 1, 1.0f, 1.0f, -1, NULL, NOACT, NULL);  /* no C */
    gemm_case(1, 1000, 256, 0, 1, 1.0f, 1.0f, 1, (int64_t[]){ 1000 }, NOACT, pool2);   /* classifier head */
    /* ONNX doc: all attributes. */
    float a[] = { 1, 2, 3, 4, 5, 6 }, b[] = { 1, 0, 0, 1, 1, 1 }, c[] = { 1, 2 };
    int64_t ad[] = { 3, 2 }, bd[] = { 2, 3 }, cd[] = { 2 };
    pvc_tensor in[3] = { tf(2, ad, a), tf(2, bd, b), tf(1, cd, c) };
    oph_attr at[] = { OPH_INT("transA", 1), OPH_INT("transB", 1), OPH_FLOAT("alpha", 0.5f), OPH_FLOAT("beta", 2.0f) };
    oph_result r = run_ok("Gemm", 13, in, 3, 1, at, 4, NOACT, NULL);
    /* op(A) = [[1,3,5],[2,4,6]], op(B) = [[1,1],[0,1],[0,1]] -> AB = [[1,9],[2,12]] */
    static const float want[] = { 0.5f + 2, 4.5f + 4, 1 + 2, 6 + 4 };
    expect_closef(r.out[0].data, want, 4, "gemm doc");
    oph_free(&r);
}

static void test_gemm_errors(void **state)
{
    (void)state;
    float a[20] = { 0 };
    int64_t ad[] = { 2, 3 }, bd[] = { 3, 4 }, cbad[] = { 3 }, c3[] = { 1, 2, 4 }, a3[] = { 1, 2, 3 };
    pvc_tensor in[3] = { tf(2, ad, a), tf(2, bd, a), tf(1, cbad, a) };
    assert_int_equal(run_status("Gemm", 13, in, 3, 1, NULL, 0), PV_EFORMAT);           /* C [3] vs N 4 */
    pvc_tensor in2[3] = { in[0], in[1], tf(3, c3, a) };
    assert_int_equal(run_status("Gemm", 13, in2, 3, 1, NULL, 0), PV_EFORMAT);          /* C rank 3 */
    oph_attr tb[] = { OPH_INT("transB", 1) };
    assert_int_equal(run_status("Gemm", 13, in, 2, 1, tb, 1), PV_EFORMAT);             /* K mismatch */
    oph_attr t2[] = { OPH_INT("transA", 2) };
    assert_int_equal(run_status("Gemm", 13, in, 2, 1, t2, 1), PV_EFORMAT);
    pvc_tensor in3[2] = { tf(3, a3, a), in[1] };
    assert_int_equal(run_status("Gemm", 13, in3, 2, 1, NULL, 0), PV_EFORMAT);          /* rank 3 A */
    pvc_tensor in4[2] = { oph_tensor(PV_I32, 2, ad, a), oph_tensor(PV_I32, 2, bd, a) };
    assert_int_equal(run_status("Gemm", 13, in4, 2, 1, NULL, 0), PV_EUNSUPPORTED);     /* int Gemm */
}

/* ---- Einsum --------------------------------------------------------------------------------------- */

static oph_result einsum(const char *eq, const pvc_tensor *in, int nin, pvc_pool *pool)
{
    oph_attr at[] = { OPH_STR("equation", eq) };
    return run_ok("Einsum", 12, in, nin, 1, at, 1, NOACT, pool);
}

static void test_einsum(void **state)
{
    (void)state;
    for (int pass = 0; pass < 2; pass++) {
        pvc_pool *pool = pass ? pool2 : NULL;
        /* attention scores: bhid,bhjd->bhij (B used transposed in place) */
        {
            int64_t B = 2, H = 3, I = 5, J = 6, D = 4, qd[] = { 2, 3, 5, 4 }, kd[] = { 2, 3, 6, 4 }, od[] = { 2, 3, 5, 6 };
            float *q = rand_buf(B * H * I * D), *k = rand_buf(B * H * J * D);
            double *want = malloc(sizeof(double) * (size_t)(B * H * I * J));
            for (int64_t bh = 0; bh < B * H; bh++)
                for (int64_t i = 0; i < I; i++)
                    for (int64_t j = 0; j < J; j++) {
                        double s = 0;
                        for (int64_t d = 0; d < D; d++) s += (double)q[(bh * I + i) * D + d] * k[(bh * J + j) * D + d];
                        want[(bh * I + i) * J + j] = s;
                    }
            pvc_tensor in[2] = { tf(4, qd, q), tf(4, kd, k) };
            oph_result r = einsum("bhid,bhjd->bhij", in, 2, pool);
            expect_dims(&r.out[0], 4, od);
            expect_close(r.out[0].data, want, B * H * I * J, "bhid,bhjd");
            oph_free(&r);
            /* The same product written with the output transposed: bhid,bhjd->bhji (gathered result). */
            r = einsum("bhid, bhjd -> bhji", in, 2, pool);
            int64_t od2[] = { 2, 3, 6, 5 };
            expect_dims(&r.out[0], 4, od2);
            for (int64_t bh = 0; bh < B * H; bh++)
                for (int64_t i = 0; i < I; i++)
                    for (int64_t j = 0; j < J; j++) {
                        double w = want[(bh * I + i) * J + j], g = ((float *)r.out[0].data)[(bh * J + j) * I + i];
                        if (fabs(g - w) > 1e-4 + 1e-4 * fabs(w)) fail_msg("bhji [%lld,%lld,%lld]", (long long)bh, (long long)i, (long long)j);
                    }
            oph_free(&r);
            free(q);
            free(k);
            free(want);
        }
        /* bij,bjk->bik, ij,jk (explicit and implicit), bnd,dk->bnk, and a gathered operand: jbi,bkj->bik */
        {
            int64_t ad[] = { 3, 4, 5 }, bd[] = { 3, 5, 6 }, od[] = { 3, 4, 6 };
            float *a = rand_buf(60), *b = rand_buf(90);
            double want[72];
            for (int bb = 0; bb < 3; bb++)
                for (int i = 0; i < 4; i++)
                    for (int k = 0; k < 6; k++) {
                        double s = 0;
                        for (int j = 0; j < 5; j++) s += (double)a[(bb * 4 + i) * 5 + j] * b[(bb * 5 + j) * 6 + k];
                        want[(bb * 4 + i) * 6 + k] = s;
                    }
            pvc_tensor in[2] = { tf(3, ad, a), tf(3, bd, b) };
            oph_result r = einsum("bij,bjk->bik", in, 2, pool);
            expect_dims(&r.out[0], 3, od);
            expect_close(r.out[0].data, want, 72, "bij,bjk");
            oph_free(&r);
            /* Same data permuted: A as [j, b, i], B as [b, k, j]. */
            float *ap = malloc(sizeof(float) * 60), *bp = malloc(sizeof(float) * 90);
            for (int bb = 0; bb < 3; bb++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 5; j++) ap[(j * 3 + bb) * 4 + i] = a[(bb * 4 + i) * 5 + j];
            for (int bb = 0; bb < 3; bb++)
                for (int j = 0; j < 5; j++)
                    for (int k = 0; k < 6; k++) bp[(bb * 6 + k) * 5 + j] = b[(bb * 5 + j) * 6 + k];
            int64_t apd[] = { 5, 3, 4 }, bpd[] = { 3, 6, 5 };
            pvc_tensor inp[2] = { tf(3, apd, ap), tf(3, bpd, bp) };
            r = einsum("jbi,bkj->bik", inp, 2, pool);
            expect_dims(&r.out[0], 3, od);
            expect_close(r.out[0].data, want, 72, "jbi,bkj");
            oph_free(&r);
            /* bnd,dk->bnk folds b and n into M */
            int64_t wd[] = { 5, 6 };
            pvc_tensor in2[2] = { tf(3, ad, a), tf(2, wd, b) };
            r = einsum("bnd,dk->bnk", in2, 2, pool);
            double want2[72];
            for (int i = 0; i < 12; i++)
                for (int k = 0; k < 6; k++) {
                    double s = 0;
                    for (int j = 0; j < 5; j++) s += (double)a[i * 5 + j] * b[j * 6 + k];
                    want2[i * 6 + k] = s;
                }
            expect_close(r.out[0].data, want2, 72, "bnd,dk");
            oph_free(&r);
            /* ij,jk and implicit ij,jk (-> ik) */
            int64_t m2[] = { 12, 5 };
            pvc_tensor in3[2] = { tf(2, m2, a), tf(2, wd, b) };
            r = einsum("ij,jk->ik", in3, 2, pool);
            expect_close(r.out[0].data, want2, 72, "ij,jk->ik");
            oph_free(&r);
            r = einsum("ij,jk", in3, 2, pool);
            int64_t o2[] = { 12, 6 };
            expect_dims(&r.out[0], 2, o2);
            expect_close(r.out[0].data, want2, 72, "ij,jk");
            oph_free(&r);
            free(a);
            free(b);
            free(ap);
            free(bp);
        }
    }
    /* One operand: transpose, diagonal, sums; two operands: outer and inner product, sum-out. */
    float m[6] = { 1, 2, 3, 4, 5, 6 }, v[3] = { 1, -1, 2 }, sq[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    int64_t md[] = { 2, 3 }, vd[] = { 3 }, sd[] = { 3, 3 }, bsd[] = { 1, 3, 3 };
    pvc_tensor tm = tf(2, md, m), tv = tf(1, vd, v), ts = tf(2, sd, sq), tbs = tf(3, bsd, sq);
    oph_result r = einsum("ij->ji", &tm, 1, NULL);
    static const float tr[] = { 1, 4, 2, 5, 3, 6 };
    expect_closef(r.out[0].data, tr, 6, "ij->ji");
    oph_free(&r);
    r = einsum("ii->i", &ts, 1, NULL);
    static const float dg[] = { 1, 5, 9 };
    expect_closef(r.out[0].data, dg, 3, "ii->i");
    oph_free(&r);
    r = einsum("bii->bi", &tbs, 1, NULL);
    expect_closef(r.out[0].data, dg, 3, "bii->bi");
    oph_free(&r);
    r = einsum("ii", &ts, 1, NULL);   /* implicit: trace */
    assert_int_equal(r.out[0].rank, 0);
    assert_true(fabsf(((float *)r.out[0].data)[0] - 15.0f) < 1e-5f);
    oph_free(&r);
    r = einsum("ij->i", &tm, 1, NULL);
    static const float rs[] = { 6, 15 };
    expect_closef(r.out[0].data, rs, 2, "ij->i");
    oph_free(&r);
    r = einsum("ji", &tm, 1, NULL);   /* implicit output "ij": a transpose */
    expect_closef(r.out[0].data, tr, 6, "ji");
    oph_free(&r);
    pvc_tensor vv[2] = { tv, tv };
    r = einsum("i,i", vv, 2, NULL);
    assert_true(fabsf(((float *)r.out[0].data)[0] - 6.0f) < 1e-5f);
    oph_free(&r);
    r = einsum("i,j->ij", vv, 2, NULL);
    static const float op[] = { 1, -1, 2, -1, 1, -2, 2, -2, 4 };
    expect_closef(r.out[0].data, op, 9, "i,j->ij");
    oph_free(&r);
    pvc_tensor mv[2] = { tm, tv };
    r = einsum("ij,k->i", mv, 2, NULL);   /* k summed out of one operand: direct loop */
    static const float so[] = { 12, 30 };
    expect_closef(r.out[0].data, so, 2, "ij,k->i");
    oph_free(&r);
    r = einsum("ij,j->i", mv, 2, NULL);
    static const float mvw[] = { 1 - 2 + 6, 4 - 5 + 12 };
    expect_closef(r.out[0].data, mvw, 2, "ij,j->i");
    oph_free(&r);
    /* int64 */
    int64_t im[6] = { 1, 2, 3, 4, 5, 6 }, iv[3] = { 1, -1, 2 };
    pvc_tensor imv[2] = { oph_tensor(PV_I64, 2, md, im), oph_tensor(PV_I64, 1, vd, iv) };
    r = einsum("ij,j->i", imv, 2, NULL);
    static const int64_t iw[] = { 5, 11 };
    assert_memory_equal(r.out[0].data, iw, sizeof iw);
    oph_free(&r);
}

/* Ellipsis: compared with MatMul (tested above against a naive loop) and hand values. */
static void test_einsum_ellipsis(void **state)
{
    (void)state;
    int64_t ad[] = { 2, 1, 3, 4 }, bd[] = { 5, 4, 6 }, od[] = { 2, 5, 3, 6 };
    float *a = rand_buf(24), *b = rand_buf(120);
    pvc_tensor in[2] = { tf(4, ad, a), tf(3, bd, b) };
    oph_result mm = run_ok("MatMul", 13, in, 2, 1, NULL, 0, NOACT, NULL);
    static const char *const eqs[] = { "...ij,...jk->...ik", "...ij,...jk", "...ij , ...jk -> ...ik" };
    for (int i = 0; i < N(eqs); i++) {
        oph_result r = einsum(eqs[i], in, 2, i ? pool2 : NULL);
        expect_dims(&r.out[0], 4, od);
        expect_closef(r.out[0].data, mm.out[0].data, 180, eqs[i]);
        oph_free(&r);
    }
    oph_free(&mm);
    /* "...ii->...i" (ONNX test_einsum_batch_diagonal) and "i...->...i" (moves the axis). */
    float x[18];
    for (int i = 0; i < 18; i++) x[i] = (float)i;
    int64_t xd[] = { 2, 3, 3 };
    pvc_tensor tx = tf(3, xd, x);
    oph_result r = einsum("...ii ->...i", &tx, 1, NULL);
    static const float dg[] = { 0, 4, 8, 9, 13, 17 };
    int64_t dd[] = { 2, 3 };
    expect_dims(&r.out[0], 2, dd);
    expect_closef(r.out[0].data, dg, 6, "...ii->...i");
    oph_free(&r);
    r = einsum("i...->...i", &tx, 1, NULL);
    int64_t td[] = { 3, 3, 2 };
    expect_dims(&r.out[0], 3, td);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 9; j++) assert_true(((float *)r.out[0].data)[j * 2 + i] == x[i * 9 + j]);
    oph_free(&r);
    free(a);
    free(b);
}

static void test_einsum_errors(void **state)
{
    (void)state;
    float a[6] = { 0 };
    int64_t md[] = { 2, 3 }, sd[] = { 3, 3 };
    pvc_tensor in[2] = { tf(2, md, a), tf(2, md, a) };
    oph_attr e1[] = { OPH_STR("equation", "...ij,..jk->...ik") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e1, 1), PV_EFORMAT);     /* two dots */
    oph_attr e1b[] = { OPH_STR("equation", "...i...j,jk->ik") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e1b, 1), PV_EFORMAT);    /* two ellipses */
    oph_attr e1c[] = { OPH_STR("equation", "ijk...,jk->i") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e1c, 1), PV_EFORMAT);    /* more letters than rank */
    oph_attr e2[] = { OPH_STR("equation", "ij,jk->ik") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e2, 1), PV_EFORMAT);    /* j: 3 vs 2 */
    oph_attr e3[] = { OPH_STR("equation", "ijk,jk->i") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e3, 1), PV_EFORMAT);    /* rank mismatch */
    oph_attr e4[] = { OPH_STR("equation", "ij,ij->iz") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e4, 1), PV_EFORMAT);    /* z not an input */
    oph_attr e5[] = { OPH_STR("equation", "ij->ii") };
    assert_int_equal(run_status("Einsum", 12, in, 1, 1, e5, 1), PV_EFORMAT);    /* repeated output */
    oph_attr e6[] = { OPH_STR("equation", "i1,j->ij") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e6, 1), PV_EFORMAT);
    oph_attr e7[] = { OPH_STR("equation", "ij->ij") };
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, e7, 1), PV_EFORMAT);    /* 1 term, 2 inputs */
    assert_int_equal(run_status("Einsum", 12, in, 2, 1, NULL, 0), PV_EFORMAT);  /* no equation */
    pvc_tensor in3[3] = { tf(2, sd, a), tf(2, sd, a), tf(2, sd, a) };
    oph_attr e8[] = { OPH_STR("equation", "ij,jk,kl->il") };
    assert_int_equal(run_status("Einsum", 12, in3, 3, 1, e8, 1), PV_EUNSUPPORTED);
}

/* ---- BatchNormalization --------------------------------------------------------------------------- */

static void test_batchnorm(void **state)
{
    (void)state;
    /* ONNX doc example: x [2,3,4,5] random; check formula per element. */
    int64_t xd[] = { 2, 3, 4, 5 }, cd[] = { 3 };
    float *x = rand_buf(120), s[3] = { 1.5f, -0.5f, 2.0f }, b[3] = { 0.1f, 0.2f, -0.3f }, mean[3] = { 0.2f, -0.1f, 0.0f },
          var[3] = { 0.5f, 1.0f, 2.0f };
    double want[120];
    for (int i = 0; i < 120; i++) {
        int c = (i / 20) % 3;
        want[i] = (x[i] - mean[c]) / sqrt(var[c] + 1e-2) * s[c] + b[c];
    }
    pvc_tensor in[5] = { tf(4, xd, x), tf(1, cd, s), tf(1, cd, b), tf(1, cd, mean), tf(1, cd, var) };
    oph_attr at[] = { OPH_FLOAT("epsilon", 1e-2f), OPH_FLOAT("momentum", 0.8f), OPH_INT("training_mode", 0) };
    oph_result r = run_ok("BatchNormalization", 15, in, 5, 1, at, 3, NOACT, pool2);
    expect_dims(&r.out[0], 4, xd);
    expect_close(r.out[0].data, want, 120, "batchnorm");
    oph_free(&r);
    /* rank 2, default epsilon, opset 13 */
    int64_t x2d[] = { 4, 3 };
    pvc_tensor in2[5] = { tf(2, x2d, x), in[1], in[2], in[3], in[4] };
    r = run_ok("BatchNormalization", 13, in2, 5, 1, NULL, 0, NOACT, NULL);
    for (int i = 0; i < 12; i++) {
        int c = i % 3;
        want[i] = (x[i] - mean[c]) / sqrt(var[c] + 1e-5) * s[c] + b[c];
    }
    expect_close(r.out[0].data, want, 12, "batchnorm 2-D");
    oph_free(&r);
    /* errors */
    oph_attr tm[] = { OPH_INT("training_mode", 1) };
    assert_int_equal(run_status("BatchNormalization", 15, in, 5, 1, tm, 1), PV_EUNSUPPORTED);
    assert_int_equal(run_status("BatchNormalization", 15, in, 5, 3, NULL, 0), PV_EUNSUPPORTED);
    int64_t x1d[] = { 3 }, c4[] = { 4 };
    pvc_tensor in3[5] = { tf(1, x1d, x), in[1], in[2], in[3], in[4] };
    assert_int_equal(run_status("BatchNormalization", 15, in3, 5, 1, NULL, 0), PV_EFORMAT);
    pvc_tensor in4[5] = { in[0], in[1], in[2], tf(1, c4, x), in[4] };
    assert_int_equal(run_status("BatchNormalization", 15, in4, 5, 1, NULL, 0), PV_EFORMAT);
    assert_int_equal(run_status("BatchNormalization", 15, in, 3, 1, NULL, 0), PV_EFORMAT);
    free(x);
}

/* ---- LayerNormalization --------------------------------------------------------------------------- */

static void layernorm_case(int rank, const int64_t *xd, int axis, int srank, const int64_t *sd, bool bias,
                           int nout, pvc_pool *pool)
{
    pvc_tensor tx = tf(rank, xd, NULL), ts = tf(srank, sd, NULL);
    int64_t n = pvc_numel(&tx), ns = pvc_numel(&ts);
    int ax = axis < 0 ? axis + rank : axis;
    int64_t rows = 1, len = 1;
    for (int d = 0; d < rank; d++) { if (d < ax) rows *= xd[d]; else len *= xd[d]; }
    float *x = rand_buf(n), *s = rand_buf(ns), *b = rand_buf(ns);
    tx.data = x;
    ts.data = s;
    double *want = malloc(sizeof(double) * (size_t)n), *wm = malloc(sizeof(double) * (size_t)rows),
           *wi = malloc(sizeof(double) * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < len; j++) mu += x[r * len + j];
        mu /= (double)len;
        for (int64_t j = 0; j < len; j++) var += (x[r * len + j] - mu) * (x[r * len + j] - mu);
        double inv = 1.0 / sqrt(var / (double)len + 1e-3);
        wm[r] = mu;
        wi[r] = inv;
        for (int64_t j = 0; j < len; j++) {
            /* broadcast index of Scale (right-aligned) */
            int64_t rem = j, off = 0, st = 1;
            for (int d = rank - 1; d >= ax; d--) {
                int64_t i = rem % xd[d];
                rem /= xd[d];
                int sdim = d - (rank - srank);
                if (sdim >= 0) { if (sd[sdim] != 1) off += i * st; st *= sd[sdim]; }
            }
            want[r * len + j] = (x[r * len + j] - mu) * inv * s[off] + (bias ? b[off] : 0.0);
        }
    }
    pvc_tensor in[3] = { tx, ts, tf(srank, sd, b) };
    oph_attr at[] = { OPH_INT("axis", axis), OPH_FLOAT("epsilon", 1e-3f), OPH_INT("stash_type", 1) };
    oph_result r = run_ok("LayerNormalization", 17, in, bias ? 3 : 2, nout, at, 3, NOACT, pool);
    expect_dims(&r.out[0], rank, xd);
    expect_close(r.out[0].data, want, n, "layernorm");
    if (nout > 1) {
        int64_t md[8];
        for (int d = 0; d < rank; d++) md[d] = d < ax ? xd[d] : 1;
        expect_dims(&r.out[1], rank, md);
        assert_int_equal(r.out[1].dtype, PV_F32);
        expect_close(r.out[1].data, wm, rows, "layernorm mean");
        if (nout > 2) expect_close(r.out[2].data, wi, rows, "layernorm invstd");
    }
    oph_free(&r);
    free(x);
    free(s);
    free(b);
    free(want);
    free(wm);
    free(wi);
}

static void test_layernorm(void **state)
{
    (void)state;
    { int64_t xd[] = { 2, 5, 16 }, sd[] = { 16 }; layernorm_case(3, xd, -1, 1, sd, true, 1, NULL); }
    { int64_t xd[] = { 2, 5, 16 }, sd[] = { 16 }; layernorm_case(3, xd, 2, 1, sd, false, 3, pool2); }
    { int64_t xd[] = { 2, 5, 6 }, sd[] = { 5, 6 }; layernorm_case(3, xd, 1, 2, sd, true, 2, NULL); }
    { int64_t xd[] = { 2, 5, 6 }, sd[] = { 1, 6 }; layernorm_case(3, xd, -2, 2, sd, true, 3, NULL); }  /* broadcast */
    { int64_t xd[] = { 3, 4 }, sd[] = { 3, 4 }; layernorm_case(2, xd, 0, 2, sd, true, 3, NULL); }
    { int64_t xd[] = { 3, 4 }, sd[] = { 1 }; layernorm_case(2, xd, -1, 1, sd, true, 1, NULL); }        /* scalar-like */
    { int64_t xd[] = { 64, 768 }, sd[] = { 768 }; layernorm_case(2, xd, -1, 1, sd, true, 3, pool2); }
    float x[4] = { 0 };
    int64_t xd[] = { 2, 2 }, sd[] = { 2 }, s3[] = { 3 };
    pvc_tensor in[2] = { tf(2, xd, x), tf(1, sd, x) };
    oph_attr st[] = { OPH_INT("stash_type", 0) };
    assert_int_equal(run_status("LayerNormalization", 17, in, 2, 1, st, 1), PV_EUNSUPPORTED);
    oph_attr ax[] = { OPH_INT("axis", 2) };
    assert_int_equal(run_status("LayerNormalization", 17, in, 2, 1, ax, 1), PV_EFORMAT);
    pvc_tensor in2[2] = { in[0], tf(1, s3, x) };
    assert_int_equal(run_status("LayerNormalization", 17, in2, 2, 1, NULL, 0), PV_EFORMAT);
}

/* ---- Softmax / LogSoftmax ------------------------------------------------------------------------ */

static void softmax_case(const char *op, int opset, int rank, const int64_t *xd, int axis, bool give_axis, pvc_pool *pool)
{
    pvc_tensor tx = tf(rank, xd, NULL);
    int64_t n = pvc_numel(&tx);
    float *x = rand_buf(n);
    for (int64_t i = 0; i < n; i++) x[i] *= 20.0f;
    tx.data = x;
    int ax = axis < 0 ? axis + rank : axis;
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < rank; d++) {
        if (d < ax) outer *= xd[d];
        else if (d == ax || opset < 13) len *= xd[d];
        else inner *= xd[d];
    }
    bool lg = !strcmp(op, "LogSoftmax");
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double mx = -INFINITY, s = 0;
            for (int64_t k = 0; k < len; k++) mx = fmax(mx, x[(o * len + k) * inner + i]);
            for (int64_t k = 0; k < len; k++) s += exp(x[(o * len + k) * inner + i] - mx);
            for (int64_t k = 0; k < len; k++) {
                double v = x[(o * len + k) * inner + i] - mx;
                want[(o * len + k) * inner + i] = lg ? v - log(s) : exp(v) / s;
            }
        }
    oph_attr at[] = { OPH_INT("axis", axis) };
    oph_result r = run_ok(op, opset, &tx, 1, 1, at, give_axis ? 1 : 0, NOACT, pool);
    expect_dims(&r.out[0], rank, xd);
    expect_close(r.out[0].data, want, n, op);
    oph_free(&r);
    free(x);
    free(want);
}

static void test_softmax(void **state)
{
    (void)state;
    static const char *const ops[] = { "Softmax", "LogSoftmax" };
    for (int o = 0; o < 2; o++) {
        int64_t d3[] = { 3, 4, 5 }, d4[] = { 2, 7, 130, 3 }, d1[] = { 1000 }, dl[] = { 3, 70, 2 };
        softmax_case(ops[o], 13, 3, d3, -1, false, NULL);     /* default axis -1 */
        softmax_case(ops[o], 13, 3, d3, 0, true, NULL);
        softmax_case(ops[o], 13, 3, d3, 1, true, pool2);
        softmax_case(ops[o], 13, 4, d4, 1, true, pool2);      /* strided, inner blocks */
        softmax_case(ops[o], 13, 4, d4, -2, true, NULL);
        softmax_case(ops[o], 13, 1, d1, 0, true, pool2);
        softmax_case(ops[o], 13, 3, dl, 0, true, NULL);       /* inner 140 > block */
        softmax_case(ops[o], 11, 3, d3, 1, false, NULL);      /* opset 11: default axis 1, coerced 2-D */
        softmax_case(ops[o], 11, 3, d3, 0, true, NULL);
    }
    /* Large values stay finite (ONNX test_softmax_large_number). */
    float x[8] = { 1, 2, 3, 4, 10000, 10001, 10002, 10003 };
    int64_t xd[] = { 2, 4 };
    pvc_tensor t = tf(2, xd, x);
    oph_result r = run_ok("Softmax", 13, &t, 1, 1, NULL, 0, NOACT, NULL);
    static const float w[8] = { 0.032058604f, 0.08714432f, 0.23688284f, 0.6439143f, 0.032058604f, 0.08714432f, 0.23688284f, 0.6439143f };
    expect_closef(r.out[0].data, w, 8, "softmax large");
    oph_free(&r);
    oph_attr bad[] = { OPH_INT("axis", 3) };
    assert_int_equal(run_status("Softmax", 13, &t, 1, 1, bad, 1), PV_EFORMAT);
    pvc_tensor ti = oph_tensor(PV_I32, 2, xd, x);
    assert_int_equal(run_status("LogSoftmax", 13, &ti, 1, 1, NULL, 0), PV_EUNSUPPORTED);
}

/* In place: the planner may give Softmax / BatchNormalization / LayerNormalization out == in. */
static void test_inplace(void **state)
{
    (void)state;
    int64_t d[] = { 2, 3, 70 }, cd[] = { 3 }, ld[] = { 70 };
    float *x = rand_buf(420), *y = malloc(sizeof(float) * 420), *s = rand_buf(70);
    float sc[3] = { 1, 2, 3 }, b[3] = { 0, 1, 0 }, m[3] = { 0, 0, 1 }, v[3] = { 1, 1, 4 };
    const char *ops[] = { "Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization" };
    for (int k = 0; k < 4; k++) {
        memcpy(y, x, sizeof(float) * 420);
        pvc_tensor in[5] = { tf(3, d, x), tf(1, cd, sc), tf(1, cd, b), tf(1, cd, m), tf(1, cd, v) };
        int nin = k < 2 ? 1 : 5;
        if (k == 3) { in[1] = tf(1, ld, s); nin = 2; }
        oph_attr ax[] = { OPH_INT("axis", 1) };
        oph_result r = run_ok(ops[k], 17, in, nin, 1, ax, k < 2 ? 1 : 0, NOACT, NULL);
        in[0].data = y;
        /* Re-run the op with the output aliasing the input. */
        const pvg_op *op = pvg_op_lookup("", ops[k]);
        pvg_node node;
        memset(&node, 0, sizeof node);
        node.name = (char *)"inplace";
        node.op_type = (char *)ops[k];
        pvg_attr at[1];
        memset(at, 0, sizeof at);
        at[0].name = (char *)"axis";
        at[0].type = PVG_ATTR_INT;
        at[0].i = 1;
        node.attrs = at;
        node.nattrs = k < 2 ? 1 : 0;
        unsigned char params[PVG_PARAMS_BYTES] = { 0 };
        pvc_tensor out[1];
        memset(out, 0, sizeof out);
        pvc_msg msg;
        pvg_prep p = { NULL, &node, nin, 1, in, out, params, 0, 17, &msg };
        assert_int_equal(op->prepare(&p), PV_OK);
        assert_true(op->flags & PVG_OP_INPLACE);
        out[0].data = y;
        pvg_exec xe = { &node, params, in, nin, out, 1, NULL, pool2 };
        assert_int_equal(op->run(&xe), PV_OK);
        expect_closef(y, r.out[0].data, 420, ops[k]);
        oph_free(&r);
    }
    free(x);
    free(y);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_kernel),
        cmocka_unit_test(test_conv_example),
        cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_conv_errors),
        cmocka_unit_test(test_conv_f16),
        cmocka_unit_test(test_convtranspose_example),
        cmocka_unit_test(test_convtranspose_random),
        cmocka_unit_test(test_convtranspose_errors),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_int),
        cmocka_unit_test(test_matmul_errors),
        cmocka_unit_test(test_matmul_bf16),
        cmocka_unit_test(test_gemm_op),
        cmocka_unit_test(test_gemm_errors),
        cmocka_unit_test(test_einsum),
        cmocka_unit_test(test_einsum_ellipsis),
        cmocka_unit_test(test_einsum_errors),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_inplace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
