/* Tests for src/models/meteor/inputs.c: the area resize against a plain re-statement written
 * here (box average over the covered source area; exact for integer factors), K scaling with
 * the resize, T_ego_cam inversion, absent cameras (their lift rays never reach the ground),
 * the shipped sample manifest, and every refusal the issue lists: malformed manifests, missing
 * or undecodable images, sizes that cannot be resized, bad calibrations (non-invertible T, zero
 * or negative focal, NaN), unknown keys, cameras given twice, files named without a path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/meteor/meteor.h"
#include "io/image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- resize ---------------------------------------------------------------------------------- */
static void test_resize_integer_factor(void **state)
{
    (void)state;
    int sw = 24, sh = 12, dw = 8, dh = 4;
    uint8_t src[24 * 12 * 3], dst[8 * 4 * 3];
    uint64_t s = 7;
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(rng_next(&s) >> 56);
    pvm_meteor_resize_area(src, sw, sh, dst, dw, dh);
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            for (int k = 0; k < 3; k++) {
                int acc = 0;
                for (int yy = 0; yy < 3; yy++) for (int xx = 0; xx < 3; xx++) acc += src[((y * 3 + yy) * sw + x * 3 + xx) * 3 + k];
                int want = (int)floor(acc / 9.0 + 0.5);
                assert_int_equal(dst[(y * dw + x) * 3 + k], want);
            }
}

static void test_resize_fractional(void **state)
{
    (void)state;
    /* 5 -> 4 columns: output 0 covers source [0, 1.25): 1 x s0 + 0.25 x s1 */
    uint8_t src[5 * 1 * 3], dst[4 * 1 * 3];
    for (int i = 0; i < 5; i++) src[3 * i] = src[3 * i + 1] = src[3 * i + 2] = (uint8_t)(i * 40);
    pvm_meteor_resize_area(src, 5, 1, dst, 4, 1);
    double want[4] = { (0 + 0.25 * 40) / 1.25, (0.75 * 40 + 0.5 * 80) / 1.25, (0.5 * 80 + 0.75 * 120) / 1.25, (0.25 * 120 + 160) / 1.25 };
    for (int i = 0; i < 4; i++) assert_int_equal(dst[3 * i], (int)floor(want[i] + 0.5));
    /* a constant image stays constant, growing or shrinking */
    uint8_t c[7 * 5 * 3], g[11 * 9 * 3];
    memset(c, 77, sizeof c);
    pvm_meteor_resize_area(c, 7, 5, g, 11, 9);
    for (size_t i = 0; i < sizeof g; i++) assert_int_equal(g[i], 77);
}

/* ---- frames ---------------------------------------------------------------------------------- */
static char *tmpdir;

static void write_png(const char *path, int w, int h, uint8_t v)
{
    uint8_t *rgb = malloc((size_t)w * h * 3);
    assert_non_null(rgb);
    memset(rgb, v, (size_t)w * h * 3);
    pvio_image img = { w, h, rgb };
    void *png = NULL;
    size_t len = 0;
    pvc_msg msg;
    assert_int_equal(pvio_image_png_encode(&img, &png, &len, &msg), PV_OK);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(png, 1, len, f), len);
    fclose(f);
    pvc_free(png);
    free(rgb);
}

static const char *cam_json(char *buf, size_t cap, const char *name, const char *image, const char *K, const char *T)
{
    snprintf(buf, cap, "{\"name\":\"%s\",\"image\":\"%s\",\"K\":%s,\"T_cam_ego\":%s}", name, image, K, T);
    return buf;
}

static const char *K_OK = "[[500,0,479.5],[0,500,269.5],[0,0,1]]";
static const char *T_OK = "[[0,-1,0,0],[0,0,-1,1.6],[1,0,0,-2],[0,0,0,1]]";

/* Runs frame_build on manifest text m (path: tmpdir/manifest.json when with_path). */
static pv_status build(const char *m, bool with_path, pvm_meteor_frame *f, pvc_msg *msg)
{
    char p[512];
    snprintf(p, sizeof p, "%s/manifest.json", tmpdir);
    pv_input in = { .name = NULL, .format = "auto", .data = m, .len = strlen(m), .path = with_path ? p : NULL };
    pvm_meteor_params prm;
    return pvm_meteor_frame_build(&in, 1, NULL, 0, f, &prm, msg);
}

static void expect_refused(const char *m, bool with_path, pv_status want, const char *needle)
{
    pvm_meteor_frame f;
    pvc_msg msg;
    pv_status s = build(m, with_path, &f, &msg);
    if (s != want || !strstr(msg.text, needle)) fail_msg("manifest %s\n-> status %d '%s' (want %d containing '%s')", m, s, msg.text, want, needle);
}

static void test_manifest_good(void **state)
{
    (void)state;
    char cam[512], m[2048];
    snprintf(m, sizeof m, "{\"cameras\":[%s],\"v0\":5.5,\"pose\":[1,2,0.5],\"stream\":{\"id\":\"s1\",\"timestamp_s\":3}}",
             cam_json(cam, sizeof cam, "CAM_FRONT_WIDE", "big.png", K_OK, T_OK));
    pvm_meteor_frame f;
    pvc_msg msg;
    assert_int_equal(build(m, true, &f, &msg), PV_OK);
    assert_true(f.cal.present[0]);
    for (int c = 1; c < PVM_METEOR_NCAM; c++) assert_false(f.cal.present[c]);
    /* K for 960x540 scaled to 768x432 (x0.8) */
    assert_float_equal(f.cal.K[0][0], 400.0f, 1e-4);
    assert_float_equal(f.cal.K[0][2], 479.5f * 0.8f, 1e-3);
    assert_float_equal(f.cal.K[0][4], 400.0f, 1e-4);
    assert_float_equal(f.cal.K[0][5], 269.5f * 0.8f, 1e-3);
    assert_float_equal(f.cal.K[0][8], 1.0f, 0);
    assert_float_equal(f.cal.T_cam_ego[0][7], 1.6f, 0);
    assert_float_equal(f.v0, 5.5f, 0);
    assert_false(f.v0_default);
    assert_true(f.has_pose);
    assert_string_equal(f.stream_id, "s1");
    /* the image (constant 90) resized, in CHW */
    assert_int_equal(f.chw[0], 90);
    assert_int_equal(f.chw[(size_t)2 * 768 * 432 + 1000], 90);
    /* an absent camera: black, and no ground point in front of it (camera z of (x, y, 0)) */
    assert_int_equal(f.chw[(size_t)3 * 768 * 432 * 3 + 5], 0);
    const float *T = f.cal.T_cam_ego[3];
    for (double x = -80; x <= 80; x += 10)
        for (double y = -50; y <= 50; y += 10) assert_true(T[8] * x + T[9] * y + T[11] <= 0.5);
    pvm_meteor_frame_free(&f);
    /* T_ego_cam is inverted */
    snprintf(m, sizeof m, "{\"cameras\":{\"CAM_BACK_WIDE\":{\"image\":\"small.png\",\"K\":%s,\"T_ego_cam\":[[1,0,0,3],[0,1,0,4],[0,0,1,5],[0,0,0,1]]}}}", K_OK);
    assert_int_equal(build(m, true, &f, &msg), PV_OK);
    assert_float_equal(f.cal.T_cam_ego[3][3], -3.0f, 0);
    assert_float_equal(f.cal.T_cam_ego[3][11], -5.0f, 0);
    assert_true(f.v0_default);
    assert_float_equal(f.v0, PVM_METEOR_V0_DEFAULT, 0);
    pvm_meteor_frame_free(&f);
}

static void test_manifest_refusals(void **state)
{
    (void)state;
    char cam[512], m[2048];
    expect_refused("{\"cameras\":[", true, PV_EFORMAT, "not valid JSON");
    expect_refused("[1,2]", true, PV_EINPUT, "is not known: meteor takes a manifest");
    expect_refused("{\"cameras\":[],\"speed\":3}", true, PV_EINPUT, "key 'speed' is not known");
    expect_refused("{\"cameras\":[]}", true, PV_EINPUT, "no camera");
#define ONE(img, K, T) (snprintf(m, sizeof m, "{\"cameras\":[%s]}", cam_json(cam, sizeof cam, "CAM_FRONT_WIDE", img, K, T)), m)
    expect_refused(ONE("missing.png", K_OK, T_OK), true, PV_EINPUT, "cannot read image");
    expect_refused(ONE("garbage.png", K_OK, T_OK), true, PV_EFORMAT, "CAM_FRONT_WIDE");
    expect_refused(ONE("tiny.png", K_OK, T_OK), true, PV_EINPUT, "smaller than 192x108");
    expect_refused(ONE("tall.png", K_OK, T_OK), true, PV_EINPUT, "cannot be resized");
    expect_refused(ONE("big.png", K_OK, T_OK), false, PV_EINPUT, "without a path");
    expect_refused(ONE("big.png", "[[0,0,479.5],[0,500,269.5],[0,0,1]]", T_OK), true, PV_EINPUT, "focal");
    expect_refused(ONE("big.png", "[[500,0,479.5],[0,-5,269.5],[0,0,1]]", T_OK), true, PV_EINPUT, "focal");
    expect_refused(ONE("big.png", "[[500,0,479.5],[0,500,269.5]]", T_OK), true, PV_EINPUT, "6 numbers (want 9)");
    expect_refused(ONE("big.png", "[[500,2,479.5],[0,500,269.5],[0,0,1]]", T_OK), true, PV_EINPUT, "skew");
    expect_refused(ONE("big.png", K_OK, "[[0,-1,0,0],[0,0,-1,1.6],[0,0,0,-2],[0,0,0,1]]"), true, PV_EINPUT, "not a rigid transform");
    expect_refused(ONE("big.png", K_OK, "[[0,-1,0,0],[0,0,-1,1.6],[1,0,0,-2],[0,0,1,1]]"), true, PV_EINPUT, "last row");
    expect_refused(ONE("big.png", K_OK, "[[0,-1,0,0],[0,0,-1,1.6],[1,0,0,\"x\"],[0,0,0,1]]"), true, PV_EINPUT, "not a number");
    /* NaN cannot be written in JSON: the params form carries it */
    pv_param pn[] = { { "K.CAM_FRONT_WIDE", "500,0,479.5,0,nan,269.5,0,0,1" } };
    pv_input item = { .name = "CAM_FRONT_WIDE", .format = "png", .data = "x", .len = 1 };
    pvm_meteor_frame f;
    pvm_meteor_params prm;
    pvc_msg msg;
    assert_int_not_equal(pvm_meteor_frame_build(&item, 1, pn, 1, &f, &prm, &msg), PV_OK);
    snprintf(m, sizeof m, "{\"cameras\":[%s,%s]}", cam_json(cam, sizeof cam, "CAM_FRONT_WIDE", "big.png", K_OK, T_OK),
             "{\"name\":\"CAM_FRONT_WIDE\",\"image\":\"big.png\"}");
    expect_refused(m, true, PV_EINPUT, "given twice");
    snprintf(m, sizeof m, "{\"cameras\":[%s]}", cam_json(cam, sizeof cam, "CAM_SIDE", "big.png", K_OK, T_OK));
    expect_refused(m, true, PV_EINPUT, "'CAM_SIDE' is not one of");
    snprintf(m, sizeof m, "{\"cameras\":[{\"name\":\"CAM_FRONT_WIDE\",\"image\":\"big.png\",\"K\":%s}]}", K_OK);
    expect_refused(m, true, PV_EINPUT, "no T_cam_ego");
    snprintf(m, sizeof m, "{\"cameras\":[%s],\"stream\":{\"id\":\"a\"}}", cam_json(cam, sizeof cam, "CAM_FRONT_WIDE", "big.png", K_OK, T_OK));
    expect_refused(m, true, PV_EINPUT, "timestamp_s is required");
    snprintf(m, sizeof m, "{\"cameras\":[%s],\"v0\":-3}", cam_json(cam, sizeof cam, "CAM_FRONT_WIDE", "big.png", K_OK, T_OK));
    expect_refused(m, true, PV_EINPUT, "outside 0..100");
#undef ONE
}

static void test_items_and_params(void **state)
{
    (void)state;
    uint8_t *rgb = calloc((size_t)768 * 432 * 3, 1);
    assert_non_null(rgb);
    rgb[0] = 200;
    pv_input items[2] = { { .name = "CAM_FRONT_NARROW", .format = "rgb8", .data = rgb, .len = (size_t)768 * 432 * 3 },
                          { .name = "CAM_BACK_NARROW", .format = "rgb8", .data = rgb, .len = 100 } };
    pv_param p[] = { { "K.CAM_FRONT_NARROW", "500,0,383.5;0,500,215.5;0,0,1" },
                     { "T_cam_ego.CAM_FRONT_NARROW", "0,-1,0,0;0,0,-1,1.6;1,0,0,-2;0,0,0,1" },
                     { "keep_vehicle", "0.5" }, { "v0", "3" } };
    pvm_meteor_frame f;
    pvm_meteor_params prm;
    pvc_msg msg;
    assert_int_equal(pvm_meteor_frame_build(items, 1, p, 4, &f, &prm, &msg), PV_OK);
    assert_true(f.cal.present[6]);
    assert_int_equal(f.chw[(size_t)6 * 3 * 768 * 432], 200);
    assert_float_equal(prm.keep_vehicle, 0.5f, 0);
    pvm_meteor_frame_free(&f);
    assert_int_equal(pvm_meteor_frame_build(items, 2, p, 4, &f, &prm, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "rgb8 is 100 bytes"));
    pv_param bad[] = { { "keep_vehicle", "1.5" } };
    assert_int_equal(pvm_meteor_frame_build(items, 1, bad, 1, &f, &prm, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "keep_vehicle"));
    pv_param unk[] = { { "score_threshold", "0.3" } };
    assert_int_equal(pvm_meteor_frame_build(items, 1, unk, 1, &f, &prm, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "'score_threshold' is not known"));
    pv_input who = { .name = "points", .format = "npy", .data = rgb, .len = 10 };
    assert_int_equal(pvm_meteor_frame_build(&who, 1, NULL, 0, &f, &prm, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "input 'points' is not known"));
    free(rgb);
}

/* The shipped sample: all eight cameras, 960x540 JPEGs, K scaled to 768x432. */
static void test_shipped_sample(void **state)
{
    (void)state;
    const char *src = getenv("PV_SOURCE_DIR");
    char p[1024];
    snprintf(p, sizeof p, "%s/tests/fixtures/meteor/sample/manifest.json", src ? src : ".");
    FILE *fp = fopen(p, "rb");
    assert_non_null(fp);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    pv_input in = { .format = "json", .data = text, .len = n, .path = p };
    pvm_meteor_frame f;
    pvm_meteor_params prm;
    pvc_msg msg;
    assert_int_equal(pvm_meteor_frame_build(&in, 1, NULL, 0, &f, &prm, &msg), PV_OK);
    for (int c = 0; c < PVM_METEOR_NCAM; c++) {
        assert_true(f.cal.present[c]);
        assert_int_equal(f.src_w[c], 960);
        assert_int_equal(f.src_h[c], 540);
    }
    assert_int_equal(pvm_meteor_item_validate(&in, &msg), PV_OK);
    pvm_meteor_frame_free(&f);
}

static int setup(void **state)
{
    (void)state;
    static char dir[] = "/tmp/pv_meteor_inputs_XXXXXX";
    tmpdir = mkdtemp(dir);
    if (!tmpdir) return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/big.png", tmpdir); write_png(p, 960, 540, 90);
    snprintf(p, sizeof p, "%s/small.png", tmpdir); write_png(p, 384, 216, 10);
    snprintf(p, sizeof p, "%s/tiny.png", tmpdir); write_png(p, 100, 60, 10);
    snprintf(p, sizeof p, "%s/tall.png", tmpdir); write_png(p, 300, 600, 10);
    snprintf(p, sizeof p, "%s/garbage.png", tmpdir);
    FILE *f = fopen(p, "wb");
    if (!f) return -1;
    fputs("\x89PNG\r\n\x1a\nthis is not a png", f);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *const names[] = { "big.png", "small.png", "tiny.png", "tall.png", "garbage.png" };
    char p[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) { snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]); remove(p); }
    rmdir(tmpdir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_integer_factor),
        cmocka_unit_test(test_resize_fractional),
        cmocka_unit_test(test_manifest_good),
        cmocka_unit_test(test_manifest_refusals),
        cmocka_unit_test(test_items_and_params),
        cmocka_unit_test(test_shipped_sample),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
