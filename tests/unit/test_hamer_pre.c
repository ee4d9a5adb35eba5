/* Tests for src/models/hamer/pre.c: crop geometry for known boxes (both aspect branches, the
 * 4:3 tie, the blur threshold at b = 563.2 px, refused boxes), the crop of gradient and random
 * images against a plain double-precision re-statement of spec 2.3-2.4 written here (original
 * image, x = cx -+ (u - 128) b / 256, black outside), the mirror identity (a left box on I is
 * bit for bit the mirrored box as a right hand on the mirrored image, with and without blur),
 * the black border and the tie rule, the blurred crop against a whole-image Gaussian computed
 * here, allocation failure, and the normalisation constants and layout.
 *
 * Geometries with dyadic steps (b = 320: 1.25 px) keep every weight exact, so the plain crop is
 * checked for equality; others allow a 1-level difference at rounding ties. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/hamer/pre.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPIX ((size_t)PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3)

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint8_t *random_image(int W, int H, uint64_t seed)
{
    uint8_t *im = malloc((size_t)W * H * 3);
    assert_non_null(im);
    for (size_t i = 0; i < (size_t)W * H * 3; i++) im[i] = (uint8_t)(rng_next(&seed) >> 56);
    return im;
}

static uint8_t *mirror_image(const uint8_t *im, int W, int H)
{
    uint8_t *o = malloc((size_t)W * H * 3);
    assert_non_null(o);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            memcpy(o + ((size_t)y * W + x) * 3, im + ((size_t)y * W + (W - 1 - x)) * 3, 3);
    return o;
}

static pvm_hamer_crop_geom geom_of(double x1, double y1, double x2, double y2, bool right, int W,
                                   int H)
{
    pvm_hamer_box box = { x1, y1, x2, y2, right };
    pvm_hamer_crop_geom g;
    pvc_msg msg = { "" };
    if (pvm_hamer_crop_geometry(&box, 0, W, H, &g, &msg) != PV_OK) fail_msg("geometry: %s", msg.text);
    return g;
}

/* Source pixel value as double, black outside. */
static double src_px(const double *img, int W, int H, int x, int y, int ch)
{
    if (x < 0 || x >= W || y < 0 || y >= H) return 0.0;
    return img[((size_t)y * W + x) * 3 + ch];
}

/* The window by the spec's formulas on the ORIGINAL image (no virtual mirror): x = cx + s (u -
 * 128) b / 256 with s = -1 for a left hand, y = cy + (v - 128) b / 256, bilinear, black outside.
 * img is double (uint8 values or a blurred image); round: floor(v + 0.5). */
static void ref_crop(const double *img, int W, int H, const pvm_hamer_crop_geom *g, bool round_it,
                     double *out)
{
    double sgn = g->is_right ? 1.0 : -1.0;
    for (int r = 0; r < PVM_HAMER_H_IN; r++) {
        for (int c = 0; c < PVM_HAMER_W_IN; c++) {
            double u = c + 32, v = r;
            double x = g->cx + sgn * (u - 128.0) * g->b / 256.0;
            double y = g->cy + (v - 128.0) * g->b / 256.0;
            double xf = floor(x), yf = floor(y);
            if (xf < -5 || xf > W + 5 || yf < -5 || yf > H + 5) {
                for (int ch = 0; ch < 3; ch++) out[((size_t)r * PVM_HAMER_W_IN + c) * 3 + ch] = 0;
                continue;
            }
            int x0 = (int)xf, y0 = (int)yf;
            double ax = x - xf, ay = y - yf;
            for (int ch = 0; ch < 3; ch++) {
                double val = (1 - ax) * (1 - ay) * src_px(img, W, H, x0, y0, ch) +
                             ax * (1 - ay) * src_px(img, W, H, x0 + 1, y0, ch) +
                             (1 - ax) * ay * src_px(img, W, H, x0, y0 + 1, ch) +
                             ax * ay * src_px(img, W, H, x0 + 1, y0 + 1, ch);
                out[((size_t)r * PVM_HAMER_W_IN + c) * 3 + ch] = round_it ? floor(val + 0.5) : val;
            }
        }
    }
}

static double *to_double(const uint8_t *im, int W, int H)
{
    double *d = malloc((size_t)W * H * 3 * sizeof(double));
    assert_non_null(d);
    for (size_t i = 0; i < (size_t)W * H * 3; i++) d[i] = im[i];
    return d;
}

/* Whole-image Gaussian (rows then columns, 'nearest' edges, radius (int)(4 sigma + 0.5)). */
static double *ref_blur(const uint8_t *im, int W, int H, double sigma)
{
    int R = (int)(4.0 * sigma + 0.5);
    double *k = malloc((size_t)(2 * R + 1) * sizeof(double)), ks = 0;
    assert_non_null(k);
    for (int i = -R; i <= R; i++) ks += k[i + R] = exp(-(double)i * i / (2.0 * sigma * sigma));
    for (int i = 0; i <= 2 * R; i++) k[i] /= ks;
    size_t n = (size_t)W * H * 3;
    double *a = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double));
    assert_non_null(a);
    assert_non_null(b);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int ch = 0; ch < 3; ch++) {
                double s = 0;
                for (int i = -R; i <= R; i++) {
                    int yy = y + i < 0 ? 0 : y + i >= H ? H - 1 : y + i;
                    s += k[i + R] * im[((size_t)yy * W + x) * 3 + ch];
                }
                a[((size_t)y * W + x) * 3 + ch] = s;
            }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int ch = 0; ch < 3; ch++) {
                double s = 0;
                for (int j = -R; j <= R; j++) {
                    int xx = x + j < 0 ? 0 : x + j >= W ? W - 1 : x + j;
                    s += k[j + R] * a[((size_t)y * W + xx) * 3 + ch];
                }
                b[((size_t)y * W + x) * 3 + ch] = s;
            }
    free(a);
    free(k);
    return b;
}

/* ---- geometry ------------------------------------------------------------------------------- */

static void test_geometry_known_boxes(void **state)
{
    (void)state;
    /* tall: w 60, h 120 -> h/w = 2 >= 4/3 -> w = 90, b = 120 */
    pvm_hamer_crop_geom g = geom_of(100, 50, 130, 110, true, 640, 480);
    assert_true(g.cx == 115.0 && g.cy == 80.0 && g.b == 120.0 && g.sigma == 0.0);
    assert_true(g.is_right && g.W == 640 && g.H == 480);
    /* wide: w 200, h 80 -> h = 200 * 4 / 3 */
    g = geom_of(10, 20, 110, 60, false, 640, 480);
    assert_true(g.cx == 60.0 && g.cy == 40.0 && !g.is_right);
    assert_true(g.b == 200.0 * 4.0 / 3.0);
    assert_true(fabs(g.b - 266.6666666666667) < 1e-9);
    /* exactly 4:3 (h/w == 256/192): either branch leaves w = 60, h = 80: b = 80 */
    g = geom_of(0, 0, 30, 40, true, 640, 480);
    assert_true(g.b == 80.0);
    /* blur threshold: b = 563.2 -> d = 1.1, no blur; b = 564 -> sigma = (564/512 - 1)/2 */
    g = geom_of(0, 0, 10, 281.6, true, 640, 480);
    assert_true(g.b == 563.2);
    assert_true(g.sigma == 0.0);
    g = geom_of(0, 0, 10, 282, true, 640, 480);
    assert_true(g.b == 564.0);
    assert_true(g.sigma == 0.05078125);
    g = geom_of(0, 0, 300, 100, true, 640, 480);   /* w 600 -> b = 800, d = 1.5625 */
    assert_true(g.b == 800.0);
    assert_true(g.sigma == (800.0 / 256.0 / 2.0 - 1.0) / 2.0);
    /* partly outside is fine */
    g = geom_of(-50, -20, 30, 40, true, 640, 480);
    assert_true(g.cx == -10.0 && g.cy == 10.0);
}

static void expect_refused(double x1, double y1, double x2, double y2, int W, int H,
                           const char *needle)
{
    pvm_hamer_box box = { x1, y1, x2, y2, true };
    pvm_hamer_crop_geom g;
    pvc_msg msg = { "" };
    assert_int_equal(pvm_hamer_crop_geometry(&box, 3, W, H, &g, &msg), PV_EINPUT);
    if (!strstr(msg.text, needle)) fail_msg("message '%s' lacks '%s'", msg.text, needle);
    if (W >= 1 && H >= 1 && !strstr(msg.text, "box[3]")) fail_msg("message '%s' lacks box[3]", msg.text);
}

static void test_geometry_refused(void **state)
{
    (void)state;
    expect_refused(NAN, 0, 10, 10, 64, 48, "x1");
    expect_refused(0, INFINITY, 10, 10, 64, 48, "y1");
    expect_refused(0, 0, -INFINITY, 10, 64, 48, "x2");
    expect_refused(0, 0, 10, NAN, 64, 48, "y2");
    expect_refused(10, 0, 10, 10, 64, 48, "x2 = 10 must be greater than x1 = 10");
    expect_refused(10, 0, 5, 10, 64, 48, "x2");
    expect_refused(0, 10, 10, 9.5, 64, 48, "y2 = 9.5 must be greater than y1 = 10");
    expect_refused(-20, 0, 0, 10, 64, 48, "outside the 64x48 image");
    expect_refused(64, 0, 80, 10, 64, 48, "outside the 64x48 image");
    expect_refused(0, -30, 10, -1, 64, 48, "outside");
    expect_refused(0, 48, 10, 60, 64, 48, "outside");
    expect_refused(-2000, 0, 10, 10, 64, 48, "longer than");
    expect_refused(-1e308, 0, 1e308, 10, 64, 48, "longer than");
    expect_refused(0, 0, 10, 10, 0, 48, "image size 0x48");
}

/* ---- plain crop ----------------------------------------------------------------------------- */

static uint8_t *gradient_image(int W, int H)
{
    uint8_t *im = malloc((size_t)W * H * 3);
    assert_non_null(im);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = im + ((size_t)y * W + x) * 3;
            p[0] = (uint8_t)(x + 2 * y);      /* <= 217 */
            p[1] = (uint8_t)(250 - 2 * x);    /* >= 52 */
            p[2] = (uint8_t)((x * y) % 256);  /* not linear */
        }
    return im;
}

static void test_crop_gradient(void **state)
{
    (void)state;
    const int W = 100, H = 60;
    uint8_t *im = gradient_image(W, H);
    double *imd = to_double(im, W, H), *ref = malloc(NPIX * sizeof(double));
    float *pix = malloc(NPIX * sizeof(float));
    assert_non_null(ref);
    assert_non_null(pix);
    pvc_msg msg = { "" };

    /* dyadic: step 1.25 px, every weight and value exact: equality, also at ties */
    pvm_hamer_crop_geom g = { .cx = 50, .cy = 30, .b = 320, .is_right = true, .sigma = 0, .W = W, .H = H };
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
    ref_crop(imd, W, H, &g, true, ref);
    int interior = 0;
    for (int r = 0; r < PVM_HAMER_H_IN; r++)
        for (int c = 0; c < PVM_HAMER_W_IN; c++) {
            size_t o = ((size_t)r * PVM_HAMER_W_IN + c) * 3;
            for (int ch = 0; ch < 3; ch++)
                if (pix[o + ch] != (float)ref[o + ch])
                    fail_msg("r %d c %d ch %d: %g vs %g", r, c, ch, pix[o + ch], ref[o + ch]);
            /* interior: the analytic gradient, rounded half up */
            double x = 50 + (c + 32 - 128) * 1.25, y = 30 + (r - 128) * 1.25;
            if (x >= 0 && x < W - 1 && y >= 0 && y < H - 1) {
                interior++;
                assert_true(pix[o + 0] == (float)floor(x + 2 * y + 0.5));
                assert_true(pix[o + 1] == (float)floor(250 - 2 * x + 0.5));
            }
        }
    assert_true(interior > 1000);

    /* non-dyadic, both hands: within one level at (near-)ties only */
    for (int hand = 0; hand < 2; hand++) {
        pvm_hamer_crop_geom g2 = { .cx = 47.3, .cy = 31.7, .b = 133.3, .is_right = hand == 0,
                                   .sigma = 0, .W = W, .H = H };
        assert_int_equal(pvm_hamer_crop(im, W, H, &g2, pix, &msg), PV_OK);
        ref_crop(imd, W, H, &g2, true, ref);
        int off = 0;
        for (size_t i = 0; i < NPIX; i++) {
            double d = fabs(pix[i] - ref[i]);
            if (d > 1.0) fail_msg("pixel %zu: %g vs %g", i, pix[i], ref[i]);
            off += d != 0.0;
        }
        if (off > 20) fail_msg("hand %d: %d values differ by one level", hand, off);
    }
    free(pix);
    free(ref);
    free(imd);
    free(im);
}

static void test_crop_black_border_and_ties(void **state)
{
    (void)state;
    const int W = 8, H = 8;
    uint8_t im[8 * 8 * 3];
    memset(im, 255, sizeof im);
    float *pix = malloc(NPIX * sizeof(float));
    assert_non_null(pix);
    pvc_msg msg = { "" };
    /* step 1 px, x = 3.5 + (c - 96), y = 3.5 + (r - 128) */
    pvm_hamer_crop_geom g = { .cx = 3.5, .cy = 3.5, .b = 256, .is_right = true, .sigma = 0, .W = W, .H = H };
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
#define PX(r, c, ch) pix[((size_t)(r) * PVM_HAMER_W_IN + (c)) * 3 + (ch)]
    for (int ch = 0; ch < 3; ch++) {
        assert_true(PX(128, 96, ch) == 255.0f);   /* x = 3.5: inside */
        assert_true(PX(128, 92, ch) == 128.0f);   /* x = -0.5: half black, 127.5 -> 128 */
        assert_true(PX(128, 91, ch) == 0.0f);     /* x = -1.5: both neighbours outside */
        assert_true(PX(128, 100, ch) == 128.0f);  /* x = 7.5: half outside on the right */
        assert_true(PX(128, 101, ch) == 0.0f);
        assert_true(PX(124, 92, ch) == 64.0f);    /* corner: a quarter inside, 63.75 */
        assert_true(PX(0, 0, ch) == 0.0f);
        assert_true(PX(255, 191, ch) == 0.0f);
    }
    /* a window entirely beside the image is all black (0, not the normalised mean) */
    g.cx = 1000;
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
    for (size_t i = 0; i < NPIX; i++) assert_true(pix[i] == 0.0f);
    g.sigma = 2.0;   /* same through the blur path */
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
    for (size_t i = 0; i < NPIX; i++) assert_true(pix[i] == 0.0f);
#undef PX
    free(pix);
}

/* ---- mirror identity ------------------------------------------------------------------------ */

static void check_mirror(int W, int H, double x1, double y1, double x2, double y2, bool blur)
{
    uint8_t *im = random_image(W, H, 7), *mi = mirror_image(im, W, H);
    float *a = malloc(NPIX * sizeof(float)), *b = malloc(NPIX * sizeof(float));
    assert_non_null(a);
    assert_non_null(b);
    pvc_msg msg = { "" };
    pvm_hamer_crop_geom gl = geom_of(x1, y1, x2, y2, false, W, H);
    pvm_hamer_crop_geom gr = geom_of(W - 1 - x2, y1, W - 1 - x1, y2, true, W, H);
    assert_true((gl.sigma > 0) == blur);
    assert_true(gl.b == gr.b && gl.sigma == gr.sigma);
    assert_int_equal(pvm_hamer_crop(im, W, H, &gl, a, &msg), PV_OK);
    assert_int_equal(pvm_hamer_crop(mi, W, H, &gr, b, &msg), PV_OK);
    assert_memory_equal(a, b, NPIX * sizeof(float));
    /* and the left crop is not the unmirrored one */
    pvm_hamer_crop_geom gx = gl;
    gx.is_right = true;
    assert_int_equal(pvm_hamer_crop(im, W, H, &gx, b, &msg), PV_OK);
    assert_true(memcmp(a, b, NPIX * sizeof(float)) != 0);
    free(a);
    free(b);
    free(im);
    free(mi);
}

static void test_crop_mirror_identity(void **state)
{
    (void)state;
    check_mirror(97, 64, 20, 10, 50, 40, false);
    check_mirror(97, 64, 20.5, 10.25, 51, 40.75, false);
    check_mirror(400, 300, -20, -10, 440, 300, true);   /* b = 1226.7, sigma 0.698, radius 3 */
}

/* ---- blur ----------------------------------------------------------------------------------- */

static void test_crop_blur_against_whole_image(void **state)
{
    (void)state;
    const int W = 640, H = 480;
    uint8_t *im = random_image(W, H, 11);
    float *pix = malloc(NPIX * sizeof(float));
    double *ref = malloc(NPIX * sizeof(double));
    assert_non_null(pix);
    assert_non_null(ref);
    pvc_msg msg = { "" };
    /* b = 1600: d = 3.125, sigma = 1.0625, radius 4; and a small sigma (radius 1) */
    const double bs[2] = { 1600.0, 700.0 };
    for (int t = 0; t < 2; t++) {
        double d = bs[t] / 256.0 / 2.0, sigma = (d - 1.0) / 2.0;
        double *bl = ref_blur(im, W, H, sigma);
        for (int hand = 0; hand < 2; hand++) {
            pvm_hamer_crop_geom g = { .cx = 320.25, .cy = 240.5, .b = bs[t], .is_right = hand == 0,
                                      .sigma = sigma, .W = W, .H = H };
            assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
            ref_crop(bl, W, H, &g, false, ref);
            double worst = 0;
            int nonint = 0;
            for (size_t i = 0; i < NPIX; i++) {
                worst = fmax(worst, fabs(pix[i] - ref[i]));
                nonint += pix[i] != floorf(pix[i]);
            }
            if (worst > 1e-4) fail_msg("b %g hand %d: max |diff| %g", bs[t], hand, worst);
            assert_true(nonint > 1000);   /* not rounded */
        }
        free(bl);
    }
    free(ref);
    free(pix);
    free(im);
}

static void test_crop_bad_input_and_oom(void **state)
{
    (void)state;
    const int W = 64, H = 48;
    uint8_t *im = random_image(W, H, 3);
    float *pix = malloc(NPIX * sizeof(float));
    assert_non_null(pix);
    pvc_msg msg = { "" };
    pvm_hamer_crop_geom g = geom_of(10, 10, 30, 30, true, W, H);
    assert_int_equal(pvm_hamer_crop(im, W + 1, H, &g, pix, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "65x48"));
    pvm_hamer_crop_geom bad = g;
    bad.b = NAN;
    assert_int_equal(pvm_hamer_crop(im, W, H, &bad, pix, &msg), PV_EINPUT);
    bad = g;
    bad.sigma = -1;
    assert_int_equal(pvm_hamer_crop(im, W, H, &bad, pix, &msg), PV_EINPUT);
    /* the plain crop allocates nothing; the blurred one fails cleanly */
    pvc_alloc_test_begin(1);
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
    assert_int_equal(pvc_alloc_count(), 0);
    pvc_alloc_test_end();
    g.sigma = 1.5;
    pvc_alloc_test_begin(1);
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_ENOMEM);
    assert_true(pvc_alloc_failed());
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
    pvc_alloc_test_begin(0);
    assert_int_equal(pvm_hamer_crop(im, W, H, &g, pix, &msg), PV_OK);
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
    free(pix);
    free(im);
}

/* ---- normalisation -------------------------------------------------------------------------- */

static void test_normalise(void **state)
{
    (void)state;
    float *pix = malloc(NPIX * sizeof(float)), *chw = malloc(NPIX * sizeof(float));
    assert_non_null(pix);
    assert_non_null(chw);
    const size_t plane = (size_t)PVM_HAMER_H_IN * PVM_HAMER_W_IN;
    /* black: -mean/std = (-2.1179039, -2.0357143, -1.8044444); white: (1 - mean)/std */
    static const double mean[3] = { 0.485, 0.456, 0.406 }, sd[3] = { 0.229, 0.224, 0.225 };
    static const float black[3] = { -2.1179039f, -2.0357143f, -1.8044444f };
    for (int v = 0; v <= 255; v += 255) {
        for (size_t i = 0; i < NPIX; i++) pix[i] = (float)v;
        pvm_hamer_normalise(pix, chw);
        for (int ch = 0; ch < 3; ch++) {
            double want = (v / 255.0 - mean[ch]) / sd[ch];
            assert_true(fabs(chw[ch * plane] - want) < 1e-6);
            assert_true(fabs(chw[ch * plane + plane - 1] - want) < 1e-6);
            if (v == 0) assert_true(fabs(chw[ch * plane + 777] - black[ch]) < 1e-6);
        }
    }
    /* 0..255 units: mean (123.675, 116.28, 103.53) maps to 0 */
    for (size_t i = 0; i < plane; i++) {
        pix[i * 3 + 0] = 123.675f;
        pix[i * 3 + 1] = 116.28f;
        pix[i * 3 + 2] = 103.53f;
    }
    pvm_hamer_normalise(pix, chw);
    for (size_t i = 0; i < NPIX; i++) assert_true(fabs(chw[i]) < 1e-6);
    /* layout: HWC (r, c, ch) -> CHW (ch, r, c) */
    for (int r = 0; r < PVM_HAMER_H_IN; r++)
        for (int c = 0; c < PVM_HAMER_W_IN; c++)
            for (int ch = 0; ch < 3; ch++)
                pix[((size_t)r * PVM_HAMER_W_IN + c) * 3 + ch] = (float)((r * 3 + c * 5 + ch * 7) % 256);
    pvm_hamer_normalise(pix, chw);
    for (int r = 0; r < PVM_HAMER_H_IN; r++)
        for (int c = 0; c < PVM_HAMER_W_IN; c++)
            for (int ch = 0; ch < 3; ch++) {
                double p = (r * 3 + c * 5 + ch * 7) % 256;
                double want = (p - 255.0 * mean[ch]) / (255.0 * sd[ch]);
                assert_true(chw[ch * plane + (size_t)r * PVM_HAMER_W_IN + c] == (float)want);
            }
    free(pix);
    free(chw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_known_boxes),
        cmocka_unit_test(test_geometry_refused),
        cmocka_unit_test(test_crop_gradient),
        cmocka_unit_test(test_crop_black_border_and_ties),
        cmocka_unit_test(test_crop_mirror_identity),
        cmocka_unit_test(test_crop_blur_against_whole_image),
        cmocka_unit_test(test_crop_bad_input_and_oom),
        cmocka_unit_test(test_normalise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
