/* Vectorized memory-bound kernels (kernels/ref/eltwise_simd.h) and the element-wise fusions.
 *   - accuracy of every variant's exp / erf / tanh / sigmoid against libm in double over a dense
 *     sweep (every 199th float of the interesting range): the bounds eltwise_simd.h states;
 *   - every variant against its plain twin (pvk_vec_ref) on random sizes, odd lengths, buffers
 *     at every float offset mod 16 with guard floats on both sides, in place, and special
 *     values (NaN, +-Inf, -0, subnormals, large |x|): maps within their accuracy, binary rows,
 *     Relu and MaxPool bitwise, LayerNorm and Softmax within float rounding;
 *   - the op-level drivers (pvk_binary_f32, pvk_layernorm_f32, pvk_softmax_f32, pvk_maxpool)
 *     against the reference kernels on random shapes and broadcasts, with a thread pool;
 *   - the passes: the exact-GELU chains in every operand order torch / tf2onnx / HF exports
 *     (and the tanh form) become one perceive::Gelu, Add -> Relu becomes one Add with a fused
 *     activation, and chains with an extra consumer, a graph output inside, or wrong constants
 *     are left alone; fused and unfused graphs give the same outputs.
 * Variants above pvc_isa_selected() are skipped (the test passes on AVX2-only and scalar CPUs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "op_harness.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/eltwise_simd.h"
#include "kernels/ref/norm.h"
#include "kernels/ref/pool.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static inline float frand(void) { return (float)rnd() / 2147483648.0f - 1.0f; }   /* [-1, 1) */

static bool runnable(const pvk_vec_variant *v) { return v->isa <= pvc_isa_selected(); }

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Distance in units in the last place (0 for -0 vs +0; counts across zero and subnormals). */
static double ulp_dist(float a, float b)
{
    if (a != a || b != b) return (a != a) == (b != b) ? 0.0 : INFINITY;
    if (a == b) return 0.0;
    if (isinf(a) || isinf(b)) return INFINITY;
    int64_t ia = fbits(a) & 0x80000000u ? -(int64_t)(fbits(a) & 0x7fffffffu) : (int64_t)fbits(a);
    int64_t ib = fbits(b) & 0x80000000u ? -(int64_t)(fbits(b) & 0x7fffffffu) : (int64_t)fbits(b);
    return (double)llabs(ia - ib);
}

/* Same value, both NaN, or both zero (signs may differ). */
static inline bool same(float a, float b) { return a == b || (a != a && b != b); }

/* ---- accuracy against libm ---------------------------------------------------------------- */
static double d_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

typedef struct sweep_stat { double max_ulp, max_abs; float worst; } sweep_stat;

/* Every 199th float in [lo, hi] (both signs of the bit pattern walk), through fn; the error
 * of each result against f(x) in double: ulps where |f| >= ulp_floor, absolute below it. */
static void sweep(pvk_vun_fn fn, double (*f)(double), float lo, float hi, double ulp_floor, double abs_from,
                  sweep_stat *st)
{
    enum { B = 4096 };
    static float xs[B], ys[B];
    memset(st, 0, sizeof *st);
    int nb = 0;
    float x = lo;
    for (;;) {
        bool done = !(x <= hi);
        if (!done) xs[nb++] = x;
        if (nb == B || (done && nb)) {
            fn(xs, ys, nb);
            for (int i = 0; i < nb; i++) {
                double want = f((double)xs[i]);
                float wf = (float)want;
                if (fabs((double)xs[i]) >= abs_from || fabs(want) < ulp_floor) {
                    double e = fabs((double)ys[i] - want);
                    if (e > st->max_abs) st->max_abs = e;
                } else {
                    double u = ulp_dist(ys[i], wf);
                    if (u > st->max_ulp) { st->max_ulp = u; st->worst = xs[i]; }
                }
            }
            nb = 0;
        }
        if (done) break;
        /* next float 199 steps up (through zero from negative to positive) */
        uint32_t b = fbits(x);
        if (b & 0x80000000u) {
            uint32_t m = b & 0x7fffffffu;
            x = m > 199 ? bitsf(b - 199) : bitsf(199 - m);
        } else {
            x = bitsf(b + 199);
        }
    }
}

static void test_map_accuracy(void **state)
{
    (void)state;
    for (int v = 0; v < pvk_vec_nvariants; v++) {
        const pvk_vec_variant *var = pvk_vec_variants[v];
        if (!runnable(var) || var == &pvk_vec_ref) continue;
        sweep_stat s;
        /* exp: 2 ulp over the whole range, subnormal results included (an ulp there is 2^-149) */
        sweep(var->unary[PVK_VU_EXP], exp, -104.0f, 89.0f, 0.0, INFINITY, &s);
        print_message("%s exp: max %.1f ulp (at %g)\n", var->name, s.max_ulp, (double)s.worst);
        assert_true(s.max_ulp <= 2.0);
        /* erf: ulps for |x| < 0.875, absolute error from there on */
        sweep(var->unary[PVK_VU_ERF], erf, -6.0f, 6.0f, 0.0, 0.875, &s);
        print_message("%s erf: max %.1f ulp (|x| < 0.875, at %g), %.3g abs beyond\n", var->name, s.max_ulp,
                      (double)s.worst, s.max_abs);
        assert_true(s.max_ulp <= 2.0);
        assert_true(s.max_abs <= 1e-7);
        sweep(var->unary[PVK_VU_TANH], tanh, -12.0f, 12.0f, 0.0, INFINITY, &s);
        print_message("%s tanh: max %.1f ulp (at %g)\n", var->name, s.max_ulp, (double)s.worst);
        assert_true(s.max_ulp <= 2.0);
        /* sigmoid: below 2^-126 the twin's formula underflows too; absolute error there */
        sweep(var->unary[PVK_VU_SIGMOID], d_sigmoid, -110.0f, 30.0f, 0x1p-126, INFINITY, &s);
        print_message("%s sigmoid: max %.1f ulp (at %g), %.3g abs in the subnormal tail\n", var->name, s.max_ulp,
                      (double)s.worst, s.max_abs);
        assert_true(s.max_ulp <= 3.0);
        assert_true(s.max_abs <= 0x1p-126);
    }
}

/* ---- guarded buffers ------------------------------------------------------------------------ */
enum { GUARD = 16 };
static const float guard_value = 12345.0f;

/* n floats at float offset off (0..15) from a 64-byte boundary, GUARD guard floats each side. */
typedef struct gbuf { float *base, *p; int64_t n; } gbuf;

static gbuf gbuf_new(int64_t n, int off)
{
    gbuf b;
    b.n = n;
    b.base = pvc_malloc_aligned((size_t)(n + 2 * GUARD + 16) * sizeof(float));
    b.p = b.base + GUARD + off;
    for (int64_t i = 0; i < n + 2 * GUARD + 16; i++) b.base[i] = guard_value;
    return b;
}

static void gbuf_check(const gbuf *b, const char *what)
{
    for (int k = 1; k <= GUARD; k++)
        if (b->p[-k] != guard_value || b->p[b->n + k - 1] != guard_value)
            fail_msg("%s: guard overwritten (n %lld)", what, (long long)b->n);
}

static void gbuf_free(gbuf *b) { pvc_free_aligned(b->base); }

static const float specials[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 3e-39f, -3e-39f, FLT_MIN, -FLT_MIN,
    FLT_MAX, -FLT_MAX, 1e10f, -1e10f, 1e20f, -1e20f, 88.7f, 89.5f, -87.5f, -103.0f, -104.5f, 0.875f, -0.875f,
    0.87499994f, 0.625f, -0.62499994f, 4.0f, -4.0f, 9.5f, -9.5f, 1.0f, -1.0f, 0.5f, 20.0f, -20.0f, 3.9f,
};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

/* Random floats: mostly [-amp, amp], some specials when with_special. */
static void fill(float *x, int64_t n, float amp, bool with_special)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = amp * frand();
        if (with_special && rnd() % 8 == 0) x[i] = specials[rnd() % NSPECIAL];
    }
}

static const char *const un_names[PVK_VU_COUNT] = { "exp", "erf", "tanh", "sigmoid", "gelu", "gelu_tanh", "relu" };

/* Result a of a vector map agrees with its twin's b for input x: the same class (NaN, Inf,
 * zero), and within 4 ulp or 2e-7 max(1, |x|) (erf's absolute bound, scaled by GELU's x). */
static bool map_close(pvk_vun_op op, float x, float a, float b)
{
    if (op == PVK_VU_RELU) return same(a, b);
    if (same(a, b)) return true;
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) return false;
    return ulp_dist(a, b) <= 4.0 || fabsf(a - b) <= 2e-7f * fmaxf(1.0f, fabsf(x));
}

static void test_maps_vs_twin(void **state)
{
    (void)state;
    static const int64_t sizes[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 100, 257, 1000 };
    rng_state = 1;
    for (int v = 0; v < pvk_vec_nvariants; v++) {
        const pvk_vec_variant *var = pvk_vec_variants[v];
        if (!runnable(var)) continue;
        for (int op = 0; op < PVK_VU_COUNT; op++) {
            for (int si = 0; si < (int)(sizeof sizes / sizeof sizes[0]); si++) {
                int64_t n = sizes[si];
                int off = (int)(rnd() % 16);
                bool inplace = rnd() % 3 == 0;
                float amp = (rnd() % 2) ? 6.0f : 40.0f;
                gbuf x = gbuf_new(n, off), y = gbuf_new(n, (int)(rnd() % 16));
                float *want = malloc((size_t)(n + 1) * sizeof *want), *xin = malloc((size_t)(n + 1) * sizeof *xin);
                fill(x.p, n, amp, true);
                memcpy(xin, x.p, (size_t)n * sizeof *xin);
                pvk_vec_ref.unary[op](xin, want, n);
                float *out = inplace ? x.p : y.p;
                var->unary[op](x.p, out, n);
                for (int64_t i = 0; i < n; i++)
                    if (!map_close((pvk_vun_op)op, xin[i], out[i], want[i]))
                        fail_msg("%s %s n %lld [%lld]: x %.9g got %.9g want %.9g", var->name, un_names[op], (long long)n,
                                 (long long)i, (double)xin[i], (double)out[i], (double)want[i]);
                gbuf_check(&x, un_names[op]);
                gbuf_check(&y, un_names[op]);
                gbuf_free(&x);
                gbuf_free(&y);
                free(want);
                free(xin);
            }
            /* every special value at every lane position */
            float xs[NSPECIAL], ys[NSPECIAL], ws[NSPECIAL];
            memcpy(xs, specials, sizeof xs);
            pvk_vec_ref.unary[op](xs, ws, NSPECIAL);
            var->unary[op](xs, ys, NSPECIAL);
            for (int i = 0; i < NSPECIAL; i++)
                if (!map_close((pvk_vun_op)op, xs[i], ys[i], ws[i]))
                    fail_msg("%s %s(%.9g): got %.9g want %.9g", var->name, un_names[op], (double)xs[i], (double)ys[i],
                             (double)ws[i]);
        }
    }
}

/* ---- binary rows ------------------------------------------------------------------------------- */
static void test_binary_vs_twin(void **state)
{
    (void)state;
    static const pvg_act acts[] = { { PVG_ACT_NONE, 0, 0 }, { PVG_ACT_RELU, 0, 0 }, { PVG_ACT_LEAKY_RELU, 0.1f, 0 },
                                    { PVG_ACT_CLIP, -0.5f, 0.7f }, { PVG_ACT_CLIP, 0.5f, -0.5f } };
    rng_state = 2;
    for (int v = 0; v < pvk_vec_nvariants; v++) {
        const pvk_vec_variant *var = pvk_vec_variants[v];
        if (!runnable(var) || var == &pvk_vec_ref) continue;
        for (int trial = 0; trial < 400; trial++) {
            pvk_vbin_op op = (pvk_vbin_op)(trial % PVK_VB_COUNT);
            int64_t sa = (trial >> 2) & 1, sb = (trial >> 3) & 1;
            const pvg_act *act = &acts[(trial >> 4) % 5];
            int64_t n = trial < 64 ? trial % 40 : (int64_t)(rnd() % 3000);
            gbuf a = gbuf_new(sa ? n : 1, (int)(rnd() % 16)), b = gbuf_new(sb ? n : 1, (int)(rnd() % 16));
            gbuf y = gbuf_new(n, (int)(rnd() % 16));
            fill(a.p, a.n, 3.0f, true);
            fill(b.p, b.n, 3.0f, true);
            float *want = malloc((size_t)(n + 1) * sizeof *want);
            pvk_vec_ref.binary(op, a.p, sa, b.p, sb, want, n, act->kind ? act : NULL);
            bool inplace = sa && rnd() % 2;
            float *out = inplace ? a.p : y.p;
            var->binary(op, a.p, sa, b.p, sb, out, n, act->kind ? act : NULL);
            for (int64_t i = 0; i < n; i++)
                if (!same(out[i], want[i]))
                    fail_msg("%s op %d sa %lld sb %lld act %d n %lld [%lld]: got %.9g want %.9g", var->name, (int)op,
                             (long long)sa, (long long)sb, (int)act->kind, (long long)n, (long long)i, (double)out[i],
                             (double)want[i]);
            gbuf_check(&a, "binary a");
            gbuf_check(&b, "binary b");
            gbuf_check(&y, "binary y");
            gbuf_free(&a);
            gbuf_free(&b);
            gbuf_free(&y);
            free(want);
        }
    }
}

/* ---- LayerNormalization and Softmax rows ------------------------------------------------------- */
static bool close_rel(float a, float b, float atol, float rtol)
{
    return same(a, b) || fabsf(a - b) <= atol + rtol * fabsf(b);
}

static void test_layernorm_softmax_rows(void **state)
{
    (void)state;
    static const int64_t lens[] = { 1, 2, 3, 7, 15, 16, 17, 33, 100, 511, 512, 513, 1280, 2000 };
    static const float shifts[] = { 0.0f, 1000.0f, -50.0f };
    rng_state = 3;
    for (int v = 0; v < pvk_vec_nvariants; v++) {
        const pvk_vec_variant *var = pvk_vec_variants[v];
        if (!runnable(var) || var == &pvk_vec_ref) continue;
        for (int li = 0; li < (int)(sizeof lens / sizeof lens[0]); li++)
            for (int k = 0; k < 6; k++) {
                int64_t len = lens[li];
                float shift = shifts[k % 3], amp = k < 3 ? 1.0f : 30.0f;
                gbuf x = gbuf_new(len, (int)(rnd() % 16)), y = gbuf_new(len, (int)(rnd() % 16));
                gbuf sc = gbuf_new(len, (int)(rnd() % 16)), bi = gbuf_new(len, (int)(rnd() % 16));
                float *want = malloc((size_t)len * sizeof *want);
                for (int64_t i = 0; i < len; i++) x.p[i] = shift + amp * frand();
                fill(sc.p, len, 2.0f, false);
                fill(bi.p, len, 1.0f, false);
                bool bias = k % 2 == 0;
                float m1, s1, m2, s2;
                pvk_vec_ref.layernorm_row(x.p, sc.p, bias ? bi.p : NULL, want, len, 1e-5f, &m1, &s1);
                var->layernorm_row(x.p, sc.p, bias ? bi.p : NULL, y.p, len, 1e-5f, &m2, &s2);
                if (!close_rel(m2, m1, 0.0f, 1e-6f) || !close_rel(s2, s1, 0.0f, 2e-5f))
                    fail_msg("%s layernorm len %lld shift %g: mean %.9g / %.9g invstd %.9g / %.9g", var->name,
                             (long long)len, (double)shift, (double)m2, (double)m1, (double)s2, (double)s1);
                for (int64_t i = 0; i < len; i++)
                    if (!close_rel(y.p[i], want[i], 2e-5f, 2e-5f))
                        fail_msg("%s layernorm len %lld shift %g [%lld]: got %.9g want %.9g", var->name, (long long)len,
                                 (double)shift, (long long)i, (double)y.p[i], (double)want[i]);
                /* in place, no statistics */
                var->layernorm_row(x.p, sc.p, bias ? bi.p : NULL, x.p, len, 1e-5f, NULL, NULL);
                for (int64_t i = 0; i < len; i++) assert_true(x.p[i] == y.p[i]);
                gbuf_check(&x, "layernorm x");
                gbuf_check(&y, "layernorm y");

                /* softmax and log-softmax over the same lengths, some -inf entries */
                for (int lg = 0; lg < 2; lg++) {
                    for (int64_t i = 0; i < len; i++) x.p[i] = shift + amp * frand();
                    if (len > 2) x.p[rnd() % len] = -INFINITY;
                    pvk_vec_ref.softmax_row(x.p, want, len, lg);
                    var->softmax_row(x.p, y.p, len, lg);
                    for (int64_t i = 0; i < len; i++)
                        if (!close_rel(y.p[i], want[i], lg ? 1e-5f : 1e-7f, 1e-5f))
                            fail_msg("%s %ssoftmax len %lld [%lld]: got %.9g want %.9g", var->name, lg ? "log" : "",
                                     (long long)len, (long long)i, (double)y.p[i], (double)want[i]);
                    gbuf_check(&y, "softmax y");
                }
                gbuf_free(&x);
                gbuf_free(&y);
                gbuf_free(&sc);
                gbuf_free(&bi);
                free(want);
            }
        /* rows with NaN, +Inf, all -Inf: NaN everywhere, as the twin */
        float rows[3][21];
        for (int r = 0; r < 3; r++) for (int i = 0; i < 21; i++) rows[r][i] = r == 2 ? -INFINITY : frand();
        rows[0][19] = NAN;
        rows[1][3] = INFINITY;
        for (int r = 0; r < 3; r++) {
            float got[21], want[21];
            pvk_vec_ref.softmax_row(rows[r], want, 21, false);
            var->softmax_row(rows[r], got, 21, false);
            for (int i = 0; i < 21; i++) if (!same(got[i], want[i]) || !isnan(want[i])) fail_msg("special softmax row %d", r);
        }
    }
}

/* ---- MaxPool rows -------------------------------------------------------------------------------- */
static void test_maxpool_rows(void **state)
{
    (void)state;
    rng_state = 4;
    for (int v = 0; v < pvk_vec_nvariants; v++) {
        const pvk_vec_variant *var = pvk_vec_variants[v];
        if (!runnable(var) || var == &pvk_vec_ref) continue;
        for (int trial = 0; trial < 600; trial++) {
            int64_t in_w = 1 + (int64_t)(rnd() % 90), kw = 1 + (int64_t)(rnd() % 5), sw = 1 + (int64_t)(rnd() % 3);
            int64_t pw = (int64_t)(rnd() % (uint32_t)kw), in_h = 1 + (int64_t)(rnd() % 5);
            int64_t r0 = (int64_t)(rnd() % (uint32_t)in_h), r1 = r0 + 1 + (int64_t)(rnd() % (uint32_t)(in_h - r0));
            int64_t max_out = (in_w + pw - 1) / sw + 1;   /* the last window starts inside the row */
            int64_t out_w = 1 + (int64_t)(rnd() % (uint32_t)max_out);
            gbuf x = gbuf_new(in_h * in_w, (int)(rnd() % 16)), y = gbuf_new(out_w, (int)(rnd() % 16));
            fill(x.p, x.n, 5.0f, trial % 4 == 0);
            gbuf t = gbuf_new(pvk_vmp_tmp_len(kw, sw, out_w), 0);
            float *want = malloc((size_t)out_w * sizeof *want);
            pvk_vec_ref.maxpool2d_row(x.p, in_w, r0, r1, kw, sw, pw, out_w, NULL, want);
            var->maxpool2d_row(x.p, in_w, r0, r1, kw, sw, pw, out_w, t.p, y.p);
            for (int64_t i = 0; i < out_w; i++)
                if (!same(y.p[i], want[i]))
                    fail_msg("%s maxpool in_w %lld k %lld s %lld p %lld rows [%lld,%lld) [%lld]: got %g want %g", var->name,
                             (long long)in_w, (long long)kw, (long long)sw, (long long)pw, (long long)r0, (long long)r1,
                             (long long)i, (double)y.p[i], (double)want[i]);
            gbuf_check(&x, "maxpool x");
            gbuf_check(&y, "maxpool y");
            gbuf_check(&t, "maxpool tmp");
            gbuf_free(&x);
            gbuf_free(&y);
            gbuf_free(&t);
            free(want);
        }
    }
}

/* ---- drivers ----------------------------------------------------------------------------------- */
static pvc_tensor tens(int rank, const int64_t *dims, float *data) { return oph_tensor(PV_F32, rank, dims, data); }

static void test_drivers(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(2, &pool), PV_OK);
    rng_state = 5;
    /* binary with the common broadcasts, both operand orders, with and without Relu */
    static const int64_t yd[4] = { 2, 3, 5, 37 };
    static const struct { int rank; int64_t d[4]; } bs[] = {
        { 4, { 2, 3, 5, 37 } }, { 1, { 37 } }, { 0, { 0 } }, { 1, { 1 } }, { 2, { 5, 1 } }, { 3, { 3, 1, 1 } },
        { 4, { 1, 3, 1, 37 } }, { 2, { 5, 37 } },
    };
    float *A = malloc(2 * 3 * 5 * 37 * sizeof(float)), *B = malloc(2 * 3 * 5 * 37 * sizeof(float));
    float *Y1 = malloc(2 * 3 * 5 * 37 * sizeof(float)), *Y2 = malloc(2 * 3 * 5 * 37 * sizeof(float));
    fill(A, 2 * 3 * 5 * 37, 2.0f, true);
    fill(B, 2 * 3 * 5 * 37, 2.0f, true);
    for (int k = 0; k < (int)(sizeof bs / sizeof bs[0]); k++)
        for (int swap = 0; swap < 2; swap++)
            for (int op = PVK_BIN_ADD; op <= PVK_BIN_DIV; op++)
                for (int relu = 0; relu < 2; relu++) {
                    pvc_tensor ta = tens(4, yd, A), tb = tens(bs[k].rank, bs[k].d, B), ty1 = tens(4, yd, Y1),
                               ty2 = tens(4, yd, Y2);
                    const pvc_tensor *l = swap ? &tb : &ta, *r = swap ? &ta : &tb;
                    pvg_act act = { relu ? PVG_ACT_RELU : PVG_ACT_NONE, 0, 0 };
                    pvk_binary(NULL, (pvk_binary_op)op, l, r, &ty1);
                    if (relu) pvk_act_apply(&act, Y1, 2 * 3 * 5 * 37);
                    assert_true(pvk_binary_f32_fast(pool, (pvk_binary_op)op, l, r, &ty2, &act));
                    for (int i = 0; i < 2 * 3 * 5 * 37; i++)
                        if (!same(Y1[i], Y2[i])) fail_msg("binary op %d shape %d swap %d [%d]: %g vs %g", op, k, swap, i,
                                                          (double)Y2[i], (double)Y1[i]);
                }
    pvc_tensor ti = oph_tensor(PV_I64, 4, yd, A);
    assert_false(pvk_binary_f32_fast(pool, PVK_BIN_ADD, &ti, &ti, &ti, NULL));
    pvc_tensor tf = tens(4, yd, A);
    assert_false(pvk_binary_f32_fast(pool, PVK_BIN_POW, &tf, &tf, &tf, NULL));

    /* LayerNorm and Softmax over many rows, threaded */
    float *sc = malloc(37 * sizeof(float)), *bi = malloc(37 * sizeof(float));
    fill(sc, 37, 1.0f, false);
    fill(bi, 37, 1.0f, false);
    fill(A, 2 * 3 * 5 * 37, 2.0f, false);
    float mean1[30], inv1[30], mean2[30], inv2[30];
    pvk_layernorm_f32_ref(NULL, A, sc, bi, Y1, mean1, inv1, 30, 37, 1e-5f);
    pvk_layernorm_f32(pool, A, sc, bi, Y2, mean2, inv2, 30, 37, 1e-5f);
    for (int i = 0; i < 30 * 37; i++) assert_true(close_rel(Y2[i], Y1[i], 2e-5f, 2e-5f));
    for (int i = 0; i < 30; i++) assert_true(close_rel(mean2[i], mean1[i], 1e-6f, 1e-5f) && close_rel(inv2[i], inv1[i], 0, 2e-5f));
    for (int inner = 1; inner <= 5; inner += 4)
        for (int lg = 0; lg < 2; lg++) {
            pvk_softmax_f32_ref(NULL, A, Y1, 6, 37 * 5 / inner, inner, lg);
            pvk_softmax_f32(pool, A, Y2, 6, 37 * 5 / inner, inner, lg);
            for (int i = 0; i < 30 * 37; i++) assert_true(close_rel(Y2[i], Y1[i], 1e-6f, 1e-5f));
        }

    /* MaxPool geometries: vectorized ones and the fallbacks (3-D, dilation, indices, empty windows) */
    for (int trial = 0; trial < 300; trial++) {
        pvk_pool_geom g;
        memset(&g, 0, sizeof g);
        g.planes = 1 + (int64_t)(rnd() % 4);
        bool three = trial % 10 == 9;
        for (int a = 0; a < 3; a++) {
            bool live = a > 0 || three;
            g.in[a] = live ? 1 + (int64_t)(rnd() % 40) : 1;
            g.kernel[a] = live ? 1 + (int64_t)(rnd() % 4) : 1;
            g.stride[a] = live ? 1 + (int64_t)(rnd() % 3) : 1;
            g.dil[a] = live && trial % 7 == 3 ? 2 : 1;
            g.pad_begin[a] = live ? (int64_t)(rnd() % (uint32_t)g.kernel[a]) : 0;
            g.pad_end[a] = live ? (int64_t)(rnd() % (uint32_t)g.kernel[a]) : 0;
            int64_t span = (g.kernel[a] - 1) * g.dil[a] + 1, padded = g.in[a] + g.pad_begin[a] + g.pad_end[a];
            if (padded < span) g.pad_end[a] += span - padded;
            g.out[a] = (g.in[a] + g.pad_begin[a] + g.pad_end[a] - span) / g.stride[a] + 1;
            if (trial % 5 == 1) g.out[a] = (g.in[a] + g.pad_begin[a] + g.pad_end[a] - span + g.stride[a] - 1) / g.stride[a] + 1;
        }
        int64_t nin = g.planes * g.in[0] * g.in[1] * g.in[2], nout = g.planes * g.out[0] * g.out[1] * g.out[2];
        float *x = malloc((size_t)nin * sizeof *x), *y1 = malloc((size_t)nout * sizeof *y1), *y2 = malloc((size_t)nout * sizeof *y2);
        fill(x, nin, 4.0f, trial % 3 == 0);
        int64_t *i1 = NULL, *i2 = NULL;
        if (trial % 11 == 4) { i1 = malloc((size_t)nout * sizeof *i1); i2 = malloc((size_t)nout * sizeof *i2); }
        pvk_maxpool_ref(NULL, &g, PV_F32, x, y1, i1);
        pvk_maxpool(pool, &g, PV_F32, x, y2, i2);
        for (int64_t i = 0; i < nout; i++)
            if (!same(y1[i], y2[i]) || (i1 && i1[i] != i2[i])) fail_msg("maxpool trial %d [%lld]: %g vs %g", trial, (long long)i,
                                                                         (double)y2[i], (double)y1[i]);
        free(x); free(y1); free(y2); free(i1); free(i2);
    }
    free(A); free(B); free(Y1); free(Y2); free(sc); free(bi);
    pvc_pool_free(pool);
}

/* ---- passes -------------------------------------------------------------------------------------- */
/* In-memory graphs: values by name, nodes from "a,b" input lists, f32 scalar constants. */
static int gv(pvg_graph *g, const char *name)
{
    int v = pvg_value_get(g, name);
    assert_true(v >= 0);
    return v;
}

static void g_input(pvg_graph *g, const char *name, pv_dtype t, int rank, const int64_t *dims)
{
    int v = gv(g, name);
    g->values[v].is_input = true;
    g->values[v].decl = oph_tensor(t, rank, dims, NULL);
    g->inputs = pvc_realloc(g->inputs, (size_t)(g->ninputs + 1) * sizeof(int));
    g->inputs[g->ninputs++] = v;
}

static void g_scalar(pvg_graph *g, const char *name, float f, int rank)
{
    int v = gv(g, name);
    pvg_value *val = &g->values[v];
    val->data = pvc_malloc_aligned(sizeof(float));
    memcpy(val->data, &f, sizeof f);
    val->decl = oph_tensor(PV_F32, rank, (int64_t[]){ 1 }, NULL);
    val->is_const = true;
}

static pvg_node *g_node(pvg_graph *g, const char *op, const char *ins, const char *out)
{
    char buf[256], *names[4];
    int nin = 0;
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *t = strtok(buf, ","); t && nin < 4; t = strtok(NULL, ",")) names[nin++] = t;
    int iv[4];
    for (int k = 0; k < nin; k++) iv[k] = gv(g, names[k]);
    int ov = gv(g, out);
    pvg_node *n;
    char name[64];
    snprintf(name, sizeof name, "n%d_%s", g->nnodes, op);
    assert_int_equal(pvg_node_add(g, name, op, "", nin, 1, &n), PV_OK);
    for (int k = 0; k < nin; k++) n->in[k] = iv[k];
    n->out[0] = ov;
    g->values[ov].producer = g->nnodes - 1;
    return n;
}

static void g_output(pvg_graph *g, const char *name)
{
    int v = gv(g, name);
    g->values[v].is_output = true;
    g->outputs = pvc_realloc(g->outputs, (size_t)(g->noutputs + 1) * sizeof(int));
    g->outputs[g->noutputs++] = v;
}

static void g_float_attr(pvg_node *n, const char *name, float f)
{
    n->attrs = pvc_calloc(1, sizeof *n->attrs);
    n->nattrs = 1;
    n->attrs[0].name = pvc_strdup(name);
    n->attrs[0].type = PVG_ATTR_FLOAT;
    n->attrs[0].f = f;
}

typedef void (*build_fn)(pvg_graph *g, pv_dtype t);
static const int64_t xdims[2] = { 3, 41 };

static int live_nodes(const pvg_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += !g->nodes[i].dead;
    return n;
}

/* Builds the graph twice (passes with and without fusion), runs both on the same inputs x, y
 * ([3, 41] of dtype t, values in [-4, 4]) and compares every output (1e-6 + 1e-6 |want|).
 * Returns the fused graph's pass statistics and live node count. */
static pvg_pass_stats fuse_and_compare(build_fn build, pv_dtype t, int *live)
{
    pvg_graph *g[2];
    pvg_pass_stats st[2];
    pvc_tensor outs[2][4];
    pvg_plan *p[2];
    int64_t n = xdims[0] * xdims[1];
    float xf[123], yf[123];
    int64_t xi[123], yi[123];
    for (int i = 0; i < n; i++) {
        xf[i] = 4.0f * frand();
        yf[i] = 4.0f * frand();
        xi[i] = (int64_t)(rnd() % 9) - 4;
        yi[i] = (int64_t)(rnd() % 9) - 4;
    }
    for (int f = 0; f < 2; f++) {
        assert_int_equal(pvg_graph_create(&g[f]), PV_OK);
        g[f]->opset = 17;
        build(g[f], t);
        assert_int_equal(pvg_graph_bind_ops(g[f]), PV_OK);
        assert_int_equal(pvg_passes_run(g[f], f == 0, &st[f]), PV_OK);
        pvc_tensor in[2];
        for (int k = 0; k < g[f]->ninputs; k++) {
            void *d = t == PV_F32 ? (void *)(k ? yf : xf) : (void *)(k ? yi : xi);
            in[k] = oph_tensor(t, 2, xdims, d);
        }
        if (pvg_plan_create(g[f], in, &p[f]) != PV_OK) fail_msg("plan: %s", g[f]->msg.text);
        assert_int_equal(pvg_plan_run(p[f], in, NULL, outs[f]), PV_OK);
    }
    for (int o = 0; o < g[0]->noutputs; o++) {
        int64_t m = pvc_numel(&outs[1][o]);
        assert_int_equal(pvc_numel(&outs[0][o]), m);
        for (int64_t i = 0; i < m; i++) {
            double a = pvc_get_f64(outs[0][o].data, outs[0][o].dtype, i), b = pvc_get_f64(outs[1][o].data, outs[1][o].dtype, i);
            if (!(fabs(a - b) <= 1e-6 + 1e-6 * fabs(b))) fail_msg("output %d [%lld]: fused %.9g unfused %.9g", o, (long long)i, a, b);
        }
    }
    *live = live_nodes(g[0]);
    for (int f = 0; f < 2; f++) {
        pvg_plan_free(p[f]);
        pvg_graph_free(g[f]);
    }
    return st[0];
}

static void x_in(pvg_graph *g, pv_dtype t) { g_input(g, "x", t, 2, xdims); }

/* torch 1.13 F.gelu: Div(x, sqrt2) Erf Add(e, 1) Mul(x, a) Mul(m, 0.5) */
static void b_torch(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_scalar(g, "r2", 1.41421354f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_node(g, "Div", "x,r2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Mul", "x,a", "m");
    g_node(g, "Mul", "m,half", "y");
    g_output(g, "y");
}

/* HF / tf2onnx: Mul(x, 1/sqrt2), Add(1, e), Mul(0.5, x), Mul(a, h); constants of shape [1] */
static void b_hf(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_scalar(g, "is2", 0.707106781f, 1);
    g_scalar(g, "one", 1.0f, 1);
    g_scalar(g, "half", 0.5f, 1);
    g_node(g, "Mul", "x,is2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "one,e", "a");
    g_node(g, "Mul", "half,x", "h");
    g_node(g, "Mul", "a,h", "y");
    g_output(g, "y");
}

/* x * (a * 0.5), and (x * a) / 2, each feeding a further node */
static void b_half_last(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_scalar(g, "is2", 0.707106781f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_scalar(g, "two", 2.0f, 0);
    g_node(g, "Mul", "is2,x", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Mul", "a,half", "ah");
    g_node(g, "Mul", "x,ah", "y1");
    g_node(g, "Mul", "y1,x", "z");            /* x's third reader: x itself may have others */
    g_node(g, "Mul", "z,is2", "d2");
    g_node(g, "Erf", "d2", "e2");
    g_node(g, "Add", "one,e2", "a2");
    g_node(g, "Mul", "a2,z", "m2");
    g_node(g, "Div", "m2,two", "y");
    g_output(g, "y");
}

/* torch F.gelu(approximate="tanh"): Pow(x, 3), Mul(c2, p), Add(x, w), Mul(c1, u), Tanh,
 * Add(1, t), Mul(x, 0.5), Mul(h, a); and the x * (x * x) cube */
static void b_tanh(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_scalar(g, "three", 3.0f, 0);
    g_scalar(g, "c2", 0.044715f, 0);
    g_scalar(g, "c1", 0.797884583f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_node(g, "Pow", "x,three", "p");
    g_node(g, "Mul", "c2,p", "w");
    g_node(g, "Add", "x,w", "u");
    g_node(g, "Mul", "c1,u", "v");
    g_node(g, "Tanh", "v", "th");
    g_node(g, "Add", "one,th", "a");
    g_node(g, "Mul", "x,half", "h");
    g_node(g, "Mul", "h,a", "y1");
    g_node(g, "Mul", "y1,y1", "sq");
    g_node(g, "Mul", "y1,sq", "p2");
    g_node(g, "Mul", "p2,c2", "w2");
    g_node(g, "Add", "w2,y1", "u2");
    g_node(g, "Mul", "u2,c1", "v2");
    g_node(g, "Tanh", "v2", "th2");
    g_node(g, "Add", "th2,one", "a2");
    g_node(g, "Mul", "y1,a2", "m2");
    g_node(g, "Mul", "half,m2", "y");
    g_output(g, "y");
}

static void test_gelu_fused(void **state)
{
    (void)state;
    rng_state = 6;
    int live;
    pvg_pass_stats st = fuse_and_compare(b_torch, PV_F32, &live);
    assert_int_equal(st.gelu_fused, 1);
    assert_int_equal(live, 1);
    st = fuse_and_compare(b_hf, PV_F32, &live);
    assert_int_equal(st.gelu_fused, 1);
    assert_int_equal(live, 1);
    st = fuse_and_compare(b_half_last, PV_F32, &live);
    assert_int_equal(st.gelu_fused, 2);
    assert_int_equal(live, 3);
    st = fuse_and_compare(b_tanh, PV_F32, &live);
    assert_int_equal(st.gelu_fused, 2);
    assert_int_equal(live, 2);
}

/* Chains the pass must leave alone. */
static void b_erf_out(pvg_graph *g, pv_dtype t)   /* Erf's output is also a graph output */
{
    b_torch(g, t);
    g_output(g, "e");
}
static void b_two_readers(pvg_graph *g, pv_dtype t)   /* Add(1)'s output read twice */
{
    b_torch(g, t);
    g_node(g, "Neg", "a", "na");
    g_output(g, "na");
}
static void b_two_readers_first(pvg_graph *g, pv_dtype t)   /* the same, the other reader first */
{
    x_in(g, t);
    g_scalar(g, "r2", 1.41421354f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_node(g, "Div", "x,r2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Neg", "a", "na");
    g_node(g, "Mul", "x,a", "m");
    g_node(g, "Mul", "m,half", "y");
    g_output(g, "y");
    g_output(g, "na");
}
static void b_mid_out(pvg_graph *g, pv_dtype t)   /* x * a is a graph output */
{
    b_torch(g, t);
    g_output(g, "m");
}
static void b_wrong_const(pvg_graph *g, pv_dtype t)   /* / 1.5, not / sqrt 2 */
{
    x_in(g, t);
    g_scalar(g, "r2", 1.5f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_node(g, "Div", "x,r2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Mul", "x,a", "m");
    g_node(g, "Mul", "m,half", "y");
    g_output(g, "y");
}
static void b_other_x(pvg_graph *g, pv_dtype t)   /* the product takes another tensor than x */
{
    x_in(g, t);
    g_input(g, "z", t, 2, xdims);
    g_scalar(g, "r2", 1.41421354f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "half", 0.5f, 0);
    g_node(g, "Div", "x,r2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Mul", "z,a", "m");
    g_node(g, "Mul", "m,half", "y");
    g_output(g, "y");
}
static void b_wrong_half(pvg_graph *g, pv_dtype t)   /* * 0.25 at the end */
{
    x_in(g, t);
    g_scalar(g, "r2", 1.41421354f, 0);
    g_scalar(g, "one", 1.0f, 0);
    g_scalar(g, "q", 0.25f, 0);
    g_node(g, "Div", "x,r2", "d");
    g_node(g, "Erf", "d", "e");
    g_node(g, "Add", "e,one", "a");
    g_node(g, "Mul", "x,a", "m");
    g_node(g, "Mul", "m,q", "y");
    g_output(g, "y");
}

static void test_gelu_not_fused(void **state)
{
    (void)state;
    rng_state = 7;
    build_fn cases[] = { b_erf_out, b_two_readers, b_two_readers_first, b_mid_out, b_wrong_const, b_other_x, b_wrong_half };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        int live;
        pvg_pass_stats st = fuse_and_compare(cases[c], PV_F32, &live);
        if (st.gelu_fused != 0) fail_msg("case %d fused", c);
        assert_true(live >= 5);
    }
}

/* Residual Add -> Relu, Sub -> LeakyRelu, Mul -> Clip(0, 6); and an Add whose output has a
 * second reader (left alone) */
static void b_add_relu(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_input(g, "r", t, 2, xdims);
    g_node(g, "Add", "x,r", "s");
    g_node(g, "Relu", "s", "y");
    g_output(g, "y");
}
static void b_acts(pvg_graph *g, pv_dtype t)
{
    b_add_relu(g, t);
    g_scalar(g, "lo", 0.0f, 0);
    g_scalar(g, "hi", 6.0f, 0);
    g_node(g, "Sub", "y,r", "s2");
    g_float_attr(g_node(g, "LeakyRelu", "s2", "y2"), "alpha", 0.2f);
    g_node(g, "Mul", "y2,x", "s3");
    g_node(g, "Clip", "s3,lo,hi", "y3");
    g_output(g, "y3");
}
static void b_add_shared(pvg_graph *g, pv_dtype t)
{
    x_in(g, t);
    g_input(g, "r", t, 2, xdims);
    g_node(g, "Add", "x,r", "s");
    g_node(g, "Relu", "s", "y");
    g_node(g, "Add", "s,y", "z");
    g_output(g, "z");
}

static void test_add_act_fused(void **state)
{
    (void)state;
    rng_state = 8;
    int live;
    pvg_pass_stats st = fuse_and_compare(b_add_relu, PV_F32, &live);
    assert_int_equal(st.eltwise_act_fused, 1);
    assert_int_equal(live, 1);
    st = fuse_and_compare(b_add_relu, PV_I64, &live);      /* integer Add: Relu applied after */
    assert_int_equal(st.eltwise_act_fused, 1);
    assert_int_equal(live, 1);
    st = fuse_and_compare(b_acts, PV_F32, &live);
    assert_int_equal(st.eltwise_act_fused, 3);
    assert_int_equal(live, 3);
    st = fuse_and_compare(b_add_shared, PV_F32, &live);
    assert_int_equal(st.eltwise_act_fused, 0);
    assert_int_equal(live, 3);
}

/* perceive::Gelu on its own (as a saved graph would hold it): f32 and f16 inputs, both forms
 * against the twins' formulas, and a bad 'approximate' refused with a message naming it. */
static pv_status gelu_graph(pv_dtype t, const char *approx, const void *x, pvc_tensor *out, pvg_graph **gp,
                            pvg_plan **pp)
{
    pvg_graph *g = NULL;
    assert_int_equal(pvg_graph_create(&g), PV_OK);
    g->opset = 17;
    g_input(g, "x", t, 2, xdims);
    pvg_node *n;
    assert_int_equal(pvg_node_add(g, "gelu", "Gelu", "perceive", 1, 1, &n), PV_OK);
    n->in[0] = gv(g, "x");
    n->out[0] = gv(g, "y");
    g->values[n->out[0]].producer = 0;
    if (approx) {
        n->attrs = pvc_calloc(1, sizeof *n->attrs);
        n->nattrs = 1;
        n->attrs[0].name = pvc_strdup("approximate");
        n->attrs[0].type = PVG_ATTR_STRING;
        n->attrs[0].s = pvc_strdup(approx);
    }
    g_output(g, "y");
    *gp = g;
    *pp = NULL;
    pv_status s = pvg_graph_bind_ops(g);
    if (s != PV_OK) return s;
    pvc_tensor in = oph_tensor(t, 2, xdims, (void *)x);
    if ((s = pvg_plan_create(g, &in, pp)) != PV_OK) return s;
    return pvg_plan_run(*pp, &in, NULL, out);
}

static void test_gelu_op(void **state)
{
    (void)state;
    assert_int_equal(pvg_op_register(&pvg_op_Gelu), PV_OK);
    rng_state = 9;
    float xf[123], want[123];
    uint16_t xh[123];
    for (int i = 0; i < 123; i++) {
        xh[i] = pvc_f32_to_f16(5.0f * frand());
        xf[i] = pvc_f16_to_f32(xh[i]);
    }
    static const char *const forms[] = { NULL, "none", "tanh" };
    for (int f = 0; f < 3; f++)
        for (int t = 0; t < 2; t++) {
            pvk_vec_ref.unary[f == 2 ? PVK_VU_GELU_TANH : PVK_VU_GELU](xf, want, 123);
            pvc_tensor out;
            pvg_graph *g;
            pvg_plan *p;
            pv_status s = gelu_graph(t ? PV_F16 : PV_F32, forms[f], t ? (void *)xh : (void *)xf, &out, &g, &p);
            if (s != PV_OK) fail_msg("Gelu %s: %s", forms[f] ? forms[f] : "default", g->msg.text);
            for (int i = 0; i < 123; i++) {
                float got = t ? pvc_f16_to_f32(((const uint16_t *)out.data)[i]) : ((const float *)out.data)[i];
                float tol = t ? 1e-3f * (1.0f + fabsf(want[i])) : 1e-6f * (1.0f + fabsf(xf[i]));
                if (!(fabsf(got - want[i]) <= tol)) fail_msg("Gelu %d dtype %d [%d]: %g vs %g", f, t, i, (double)got, (double)want[i]);
            }
            pvg_plan_free(p);
            pvg_graph_free(g);
        }
    pvc_tensor out;
    pvg_graph *g;
    pvg_plan *p;
    assert_int_equal(gelu_graph(PV_F32, "erf", xf, &out, &g, &p), PV_EFORMAT);
    assert_non_null(strstr(g->msg.text, "approximate"));
    pvg_plan_free(p);
    pvg_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_accuracy),
        cmocka_unit_test(test_maps_vs_twin),
        cmocka_unit_test(test_binary_vs_twin),
        cmocka_unit_test(test_layernorm_softmax_rows),
        cmocka_unit_test(test_maxpool_rows),
        cmocka_unit_test(test_drivers),
        cmocka_unit_test(test_gelu_fused),
        cmocka_unit_test(test_gelu_not_fused),
        cmocka_unit_test(test_add_act_fused),
        cmocka_unit_test(test_gelu_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
