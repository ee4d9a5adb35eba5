/* Winograd F(4x4, 3x3) (kernels/winograd.h): the plain twin pvk_wino_ref_f32 against the
 * definition of a 3x3 convolution written here (float64 sums), and the AVX-512 kernel against
 * the twin, on seeded random problems: batch 1-2, channels 1-80 (half of them multiples of 16, the
 * rest padded to 16 in the blocked layout, padding checked zero in Y), odd sizes from 1x1 up (partial
 * and border tiles), every pad combination 0..2 per side, with and without bias, every fused
 * activation but GELU (declined). The fast kernel runs on nChw16c copies, with a NaN-filled
 * workspace, guard floats after Y, no pool and a 2-thread pool, and tile blocks of 6 to 96.
 * Tolerance, relative to the largest |y| of the problem (s): twin vs definition 2e-5 s (F(4,3)
 * rounding over up to 48 channels; worst measured 8.5e-6 s), kernel vs twin 3e-5 s (both round,
 * in different orders; worst measured 1.6e-5 s). With Lavin and Gray's points (a, b = 1, 2)
 * the same draws measure 2.4e-5 and 4.4e-5: the tolerances tell the two apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/winograd.h"

#define TOL_REF  2e-5
#define TOL_FAST 3e-5
#define GUARD 32
#define GUARD_VAL 4321.0f

static pvc_pool *pool2;

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t urand(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng >> 33) % n);
}
static float frand(void) { return (float)urand(1u << 24) / (float)(1u << 23) - 1.0f; }

static double act_ref(double v, const pvg_act *a)
{
    switch (a->kind) {
    case PVG_ACT_RELU: return v > 0.0 ? v : 0.0;
    case PVG_ACT_LEAKY_RELU: return v >= 0.0 ? v : v * a->alpha;
    case PVG_ACT_CLIP: return v < a->alpha ? a->alpha : (v > a->beta ? a->beta : v);
    case PVG_ACT_GELU:
    case PVG_ACT_NONE: break;
    }
    return v;
}

typedef struct prob {
    pvk_wino_desc d;
    float *x, *w, *b;
} prob;

static prob random_prob(int64_t cmax)
{
    prob p;
    memset(&p, 0, sizeof p);
    pvk_wino_desc *d = &p.d;
    d->batch = 1 + urand(2);
    /* half the draws multiples of 16, half any count (the blocked layout pads to 16) */
    d->cin = urand(2) ? 16 * (1 + urand((uint32_t)(cmax / 16))) : 1 + urand((uint32_t)cmax);
    d->cout = urand(2) ? 16 * (1 + urand((uint32_t)(cmax / 16))) : 1 + urand((uint32_t)cmax);
    d->ih = 1 + urand(19);
    d->iw = 1 + urand(19);
    d->pad_t = urand(3);
    d->pad_l = urand(3);
    int64_t pb = urand(3), pr = urand(3);
    if (d->ih + d->pad_t + pb < 3) pb = 3 - d->ih - d->pad_t;
    if (d->iw + d->pad_l + pr < 3) pr = 3 - d->iw - d->pad_l;
    d->oh = d->ih + d->pad_t + pb - 2;
    d->ow = d->iw + d->pad_l + pr - 2;
    d->bias = urand(2);
    switch (urand(4)) {
    case 1: d->act.kind = PVG_ACT_RELU; break;
    case 2: d->act.kind = PVG_ACT_LEAKY_RELU; d->act.alpha = 0.1f; break;
    case 3: d->act.kind = PVG_ACT_CLIP; d->act.alpha = -0.3f; d->act.beta = 0.5f; break;
    default: break;
    }
    size_t nx = (size_t)(d->batch * d->cin * d->ih * d->iw), nw = (size_t)(d->cout * d->cin * 9);
    p.x = malloc(nx * sizeof(float));
    p.w = malloc(nw * sizeof(float));
    p.b = malloc((size_t)d->cout * sizeof(float));
    assert_true(p.x && p.w && p.b);
    for (size_t i = 0; i < nx; i++) p.x[i] = frand();
    for (size_t i = 0; i < nw; i++) p.w[i] = frand() * 0.2f;
    for (int64_t i = 0; i < d->cout; i++) p.b[i] = frand();
    return p;
}

static void prob_free(prob *p) { free(p->x); free(p->w); free(p->b); }

static int64_t ysize(const pvk_wino_desc *d) { return d->batch * d->cout * d->oh * d->ow; }

/* the definition: y[n][o][i][j] = act(b[o] + sum_c sum_(a, e) x[n][c][i + a - pad_t][j + e - pad_l] w[o][c][a][e]) */
static double *direct(const prob *p)
{
    const pvk_wino_desc *d = &p->d;
    double *y = malloc((size_t)ysize(d) * sizeof(double));
    assert_non_null(y);
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t o = 0; o < d->cout; o++)
            for (int64_t i = 0; i < d->oh; i++)
                for (int64_t j = 0; j < d->ow; j++) {
                    double s = d->bias ? p->b[o] : 0.0;
                    for (int64_t c = 0; c < d->cin; c++)
                        for (int a = 0; a < 3; a++)
                            for (int e = 0; e < 3; e++) {
                                int64_t yy = i + a - d->pad_t, xx = j + e - d->pad_l;
                                if (yy < 0 || yy >= d->ih || xx < 0 || xx >= d->iw) continue;
                                s += (double)p->x[((n * d->cin + c) * d->ih + yy) * d->iw + xx] * p->w[((o * d->cin + c) * 3 + a) * 3 + e];
                            }
                    y[((n * d->cout + o) * d->oh + i) * d->ow + j] = act_ref(s, &d->act);
                }
    return y;
}

static void describe(const pvk_wino_desc *d, char *buf, size_t n)
{
    snprintf(buf, n, "batch %lld cin %lld cout %lld in %lldx%lld out %lldx%lld pad_t %lld pad_l %lld bias %d act %d",
             (long long)d->batch, (long long)d->cin, (long long)d->cout, (long long)d->ih, (long long)d->iw,
             (long long)d->oh, (long long)d->ow, (long long)d->pad_t, (long long)d->pad_l, d->bias, (int)d->act.kind);
}

/* nChw16c <-> NCHW; channels past c in the last block are padding (zeros) */
static int64_t cpad(int64_t c) { return (c + 15) / 16 * 16; }

static void to_blocked(const float *src, float *dst, int64_t batch, int64_t c, int64_t hw)
{
    int64_t cb = cpad(c) / 16;
    for (int64_t n = 0; n < batch; n++)
        for (int64_t ch = 0; ch < cpad(c); ch++)
            for (int64_t i = 0; i < hw; i++)
                dst[((n * cb + ch / 16) * hw + i) * 16 + ch % 16] = ch < c ? src[(n * c + ch) * hw + i] : 0.0f;
}

/* -> false when a padding channel of src is not zero */
static bool from_blocked(const float *src, float *dst, int64_t batch, int64_t c, int64_t hw)
{
    int64_t cb = cpad(c) / 16;
    bool pad_zero = true;
    for (int64_t n = 0; n < batch; n++)
        for (int64_t ch = 0; ch < cpad(c); ch++)
            for (int64_t i = 0; i < hw; i++) {
                float v = src[((n * cb + ch / 16) * hw + i) * 16 + ch % 16];
                if (ch < c) dst[(n * c + ch) * hw + i] = v;
                else pad_zero &= v == 0.0f;
            }
    return pad_zero;
}

static double max_abs(const double *v, int64_t n)
{
    double m = 1e-30;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

static void test_ref_vs_definition(void **state)
{
    (void)state;
    char what[256];
    double worst = 0.0;
    for (int it = 0; it < 40; it++) {
        prob p = random_prob(48);
        int64_t ny = ysize(&p.d);
        double *want = direct(&p);
        float *got = malloc((size_t)ny * sizeof(float));
        assert_non_null(got);
        pvk_wino_ref_f32(&p.d, p.x, p.w, p.d.bias ? p.b : NULL, got);
        double s = max_abs(want, ny);
        for (int64_t i = 0; i < ny; i++) {
            double e = fabs(got[i] - want[i]) / s;
            worst = fmax(worst, e);
            if (!(e <= TOL_REF)) {
                describe(&p.d, what, sizeof what);
                fail_msg("%s: [%lld] got %.9g want %.9g (max |y| %.3g)", what, (long long)i, got[i], want[i], s);
            }
        }
        free(want);
        free(got);
        prob_free(&p);
    }
    print_message("twin vs definition: worst error %.3g of max |y|\n", worst);
}

/* The fast kernel on p through blocks of `tiles` (0: its own pick), compared with the twin. */
static double check_fast(const prob *p, const float *want, int64_t tiles, pvc_pool *pool, int threads)
{
    const pvk_wino_desc *d = &p->d;
    char env[32], what[256];
    if (tiles > 0) {
        snprintf(env, sizeof env, "%lld", (long long)tiles);
        setenv("PERCEIVE_WINO_TILES", env, 1);
    } else {
        unsetenv("PERCEIVE_WINO_TILES");
    }
    pvk_wino *k = NULL;
    size_t ws = 0;
    assert_int_equal(pvk_wino_create(d, p->w, threads, &k, &ws), PV_OK);
    unsetenv("PERCEIVE_WINO_TILES");
    int64_t nx = d->batch * cpad(d->cin) * d->ih * d->iw, ny = ysize(d), nyb = d->batch * cpad(d->cout) * d->oh * d->ow;
    float *xb = pvc_malloc_aligned((size_t)nx * sizeof(float));
    float *yb = pvc_malloc_aligned((size_t)(nyb + GUARD) * sizeof(float));
    float *y = malloc((size_t)ny * sizeof(float));
    void *w = pvc_malloc_aligned(ws);
    assert_true(xb && yb && y && w);
    to_blocked(p->x, xb, d->batch, d->cin, d->ih * d->iw);
    for (int64_t i = 0; i < nyb; i++) yb[i] = NAN;
    for (int i = 0; i < GUARD; i++) yb[nyb + i] = GUARD_VAL;
    memset(w, 0xff, ws);   /* NaN floats: a read before a write shows */
    pvk_wino_run(k, pool, xb, d->bias ? p->b : NULL, yb, w);
    for (int i = 0; i < GUARD; i++) assert_true(yb[nyb + i] == GUARD_VAL);
    if (!from_blocked(yb, y, d->batch, d->cout, d->oh * d->ow)) {
        describe(d, what, sizeof what);
        fail_msg("%s: a padding channel of Y is not zero", what);
    }
    double s = 1e-30, worst = 0.0;
    for (int64_t i = 0; i < ny; i++) s = fmax(s, fabs(want[i]));
    for (int64_t i = 0; i < ny; i++) {
        double e = fabs(y[i] - want[i]) / s;
        if (!(e <= TOL_FAST)) {
            describe(d, what, sizeof what);
            fail_msg("%s, tiles %lld (block %lld), threads %d: [%lld] got %.9g want %.9g", what, (long long)tiles,
                     (long long)k->block, threads, (long long)i, y[i], want[i], s);
        }
        worst = fmax(worst, e);
    }
    pvc_free_aligned(xb);
    pvc_free_aligned(yb);
    pvc_free_aligned(w);
    free(y);
    pvk_wino_free(k);
    return worst;
}

/* the fast kernel runs only where AVX-512 is selected */
static bool kernel_here(void)
{
    pvk_wino_desc probe = { .batch = 1, .cin = 16, .cout = 16, .ih = 4, .iw = 4, .oh = 4, .ow = 4, .pad_t = 1, .pad_l = 1 };
    if (pvk_wino_supported(&probe)) return true;
    print_message("skipped: the Winograd kernel needs AVX-512\n");
    return false;
}

static void test_fast_vs_ref(void **state)
{
    (void)state;
    if (!kernel_here()) skip();
    double worst = 0.0;
    for (int it = 0; it < 40; it++) {
        prob p = random_prob(80);
        int64_t ny = ysize(&p.d);
        float *want = malloc((size_t)ny * sizeof(float));
        assert_non_null(want);
        pvk_wino_ref_f32(&p.d, p.x, p.w, p.d.bias ? p.b : NULL, want);
        static const int64_t tiles[] = { 0, 6, 12, 18, 96 };
        worst = fmax(worst, check_fast(&p, want, tiles[it % 5], NULL, 1));
        worst = fmax(worst, check_fast(&p, want, tiles[(it + 2) % 5], pool2, 2));
        free(want);
        prob_free(&p);
    }
    print_message("kernel vs twin: worst error %.3g of max |y|\n", worst);
}

/* A BEVFusion-sized layer (128 -> 128 at 36x36, 81 tiles: blocks end mid-row and mid-image). */
static void test_fast_layer(void **state)
{
    (void)state;
    if (!kernel_here()) skip();
    prob p;
    p.d = (pvk_wino_desc){ .batch = 2, .cin = 128, .cout = 144, .ih = 36, .iw = 34, .oh = 36, .ow = 34, .pad_t = 1,
                           .pad_l = 1, .bias = true, .act = { PVG_ACT_RELU, 0, 0 } };
    size_t nx = (size_t)(2 * 128 * 36 * 34), nw = (size_t)(144 * 128 * 9);
    p.x = malloc(nx * sizeof(float));
    p.w = malloc(nw * sizeof(float));
    p.b = malloc(144 * sizeof(float));
    assert_true(p.x && p.w && p.b);
    for (size_t i = 0; i < nx; i++) p.x[i] = frand();
    for (size_t i = 0; i < nw; i++) p.w[i] = frand() * 0.1f;
    for (int i = 0; i < 144; i++) p.b[i] = frand();
    int64_t ny = ysize(&p.d);
    float *want = malloc((size_t)ny * sizeof(float));
    assert_non_null(want);
    pvk_wino_ref_f32(&p.d, p.x, p.w, p.b, want);
    check_fast(&p, want, 0, pool2, 2);
    check_fast(&p, want, 30, pool2, 2);
    free(want);
    prob_free(&p);
}

static void test_declines(void **state)
{
    (void)state;
    if (!kernel_here()) skip();
    pvk_wino_desc ok = { .batch = 1, .cin = 32, .cout = 16, .ih = 8, .iw = 8, .oh = 8, .ow = 8, .pad_t = 1, .pad_l = 1 };
    pvk_wino_desc d = ok;
    d.cin = 24;
    d.cout = 24;
    assert_true(pvk_wino_supported(&d));
    d.act = (pvg_act){ PVG_ACT_CLIP, 0.1f, 6.0f };   /* act(0) != 0 would fill Y's padding */
    assert_false(pvk_wino_supported(&d));
    d.cout = 32;
    assert_true(pvk_wino_supported(&d));
    d = ok;
    d.cin = 0;
    assert_false(pvk_wino_supported(&d));
    d = ok;
    d.act.kind = PVG_ACT_GELU;
    assert_false(pvk_wino_supported(&d));
    d = ok;
    d.pad_t = 3;
    assert_false(pvk_wino_supported(&d));
    d = ok;
    d.oh = 12;   /* would need an end pad of 5 */
    assert_false(pvk_wino_supported(&d));
    pvk_wino *k = (pvk_wino *)&d;
    size_t ws = 1;
    assert_int_equal(pvk_wino_create(&d, NULL, 2, &k, &ws), PV_EUNSUPPORTED);
    assert_null(k);
    assert_int_equal(ws, 0);
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
        cmocka_unit_test(test_ref_vs_definition),
        cmocka_unit_test(test_fast_vs_ref),
        cmocka_unit_test(test_fast_layer),
        cmocka_unit_test(test_declines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
