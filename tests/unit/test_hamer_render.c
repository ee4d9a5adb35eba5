/* Tests for src/models/hamer/render (the hamer picture) and the exported 5x7 text of
 * src/io/bev_png. A synthetic hand (a tilted, lopsided fan of 24 triangles and 21 keypoints on
 * five rays) is rendered over a 320x240 gradient; every PNG is decoded back with libpng and
 * checked against render.h: the projection against keypoints_2d computed the way mano.c does
 * (both hands), the sizes (title band, max_width), mesh pixels blended at alpha 0.6 in the side's
 * colour, the input untouched away from the hand, keypoints in their finger colours, the
 * z-buffer (nearer wins in either face order), a left hand mirroring a right one, the area
 * scaling, robustness to NaN / huge / behind-camera / random numbers, bounded work, argument
 * validation, and every allocation failure without a leak. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/bev_png.h"
#include "models/hamer/render.h"

#include <limits.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 320
#define H 240
#define NRING 24
#define F_CROP (5000.0 / 256.0)
#define PI 3.14159265358979323846

/* ---- helpers ------------------------------------------------------------------------------- */
typedef struct image { int w, h; uint8_t *px; } image;

static image decode(const void *png, size_t len)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_memory(&img, png, len));
    img.format = PNG_FORMAT_RGB;
    image out = { (int)img.width, (int)img.height, malloc(PNG_IMAGE_SIZE(img)) };
    assert_non_null(out.px);
    assert_true(png_image_finish_read(&img, NULL, out.px, 0, NULL));
    png_image_free(&img);
    return out;
}

static const uint8_t *pix(const image *im, int x, int y)
{
    assert_true(x >= 0 && x < im->w && y >= 0 && y < im->h);
    return im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
}

/* The input: a gradient, different along x and y, so mirroring and scaling show. */
static uint8_t *gradient(bool mirrored)
{
    uint8_t *rgb = malloc((size_t)W * H * 3);
    assert_non_null(rgb);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int sx = mirrored ? W - 1 - x : x;
            uint8_t *p = rgb + ((size_t)y * W + (size_t)x) * 3;
            p[0] = (uint8_t)(sx * 255 / (W - 1));
            p[1] = (uint8_t)(y * 255 / (H - 1));
            p[2] = (uint8_t)((2 * sx + y) / 4);
        }
    return rgb;
}

static const uint8_t *in_px(const uint8_t *rgb, int x, int y)
{
    return rgb + ((size_t)y * W + (size_t)x) * 3;
}

/* Faces: the fan (0, i, i+1) over the ring, the rest degenerate (0, 0, 0). */
static int32_t *fan_faces(void)
{
    int32_t *f = calloc(PV_HAND_FACES * 3, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < NRING; i++) {
        f[i * 3 + 0] = 0;
        f[i * 3 + 1] = 1 + i;
        f[i * 3 + 2] = 1 + (i + 1) % NRING;
    }
    return f;
}

/* keypoints_2d the way mano.c computes them: through the virtual right hand (mirrored back for a
 * left one), in double, stored as float. */
static void fill_kp2d(pv_hand *h)
{
    double sgn = h->is_right ? 1.0 : -1.0;
    double cxv = h->is_right ? h->crop_center[0] : (W - 1.0) - h->crop_center[0];
    double t[3] = { sgn * h->cam_t[0], h->cam_t[1], h->cam_t[2] };
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        const float *p = &h->keypoints_3d[k * 3];
        double X = sgn * p[0], Y = p[1], z = p[2] + t[2];
        double kx = F_CROP * ((X + t[0]) / z), ky = F_CROP * ((Y + t[1]) / z);
        double xv = cxv + h->crop_size * kx;
        h->keypoints_2d[k * 2 + 0] = (float)(h->is_right ? xv : (W - 1.0) - xv);
        h->keypoints_2d[k * 2 + 1] = (float)(h->crop_center[1] + h->crop_size * ky);
    }
}

/* The right hand: centre vertex 0, a lopsided ring (wider to +x) tilted in z; the wrist below
 * the centre and five fingers fanning upwards from it. */
static void right_hand(pv_hand *h)
{
    memset(h, 0, sizeof *h);
    h->is_right = 1;
    h->crop_center[0] = 150.0f;
    h->crop_center[1] = 110.0f;
    h->crop_size = 100.0f;
    h->cam_t[0] = 0.01f;
    h->cam_t[1] = -0.005f;
    h->cam_t[2] = 3.0f;
    for (int i = 0; i < NRING; i++) {
        double a = 2.0 * PI * i / NRING;
        double r = 0.05 * (1.0 + 0.35 * cos(a) + 0.15 * sin(2.0 * a));
        float *v = &h->vertices[(1 + i) * 3];
        v[0] = (float)(r * cos(a));
        v[1] = (float)(r * sin(a));
        v[2] = (float)(0.01 * sin(a));
    }
    for (int i = 1 + NRING; i < PV_HAND_VERTICES; i++) memcpy(&h->vertices[i * 3], h->vertices, 12);
    h->keypoints_3d[1] = 0.04f;
    for (int fi = 0; fi < 5; fi++) {
        double phi = (-60.0 + 30.0 * fi) * PI / 180.0;
        for (int m = 1; m <= 4; m++) {
            float *p = &h->keypoints_3d[(1 + fi * 4 + m - 1) * 3];
            double d = 0.02 + 0.014 * m;
            p[0] = (float)(d * sin(phi));
            p[1] = (float)(0.04 - d * cos(phi));
            p[2] = 0.0f;
        }
    }
    fill_kp2d(h);
    const float box[4] = { 90.0f, 45.0f, 225.0f, 160.0f };
    memcpy(h->box, box, sizeof box);
}

/* The same hand seen in the mirrored image, as the bundle reports a left hand. */
static void mirror_hand(const pv_hand *r, pv_hand *l)
{
    *l = *r;
    l->is_right = 0;
    l->crop_center[0] = (float)((W - 1.0) - r->crop_center[0]);
    l->cam_t[0] = -r->cam_t[0];
    for (int i = 0; i < PV_HAND_VERTICES; i++) l->vertices[i * 3] = -r->vertices[i * 3];
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) l->keypoints_3d[k * 3] = -r->keypoints_3d[k * 3];
    fill_kp2d(l);
    l->box[0] = (float)((W - 1.0) - r->box[2]);
    l->box[2] = (float)((W - 1.0) - r->box[0]);
}

static image render_ok(const uint8_t *rgb, int w, int h, const pv_hand *hands, int n,
                       const int32_t *faces, const char *title, int max_width)
{
    void *png = NULL;
    size_t len = 0;
    pvc_msg msg = { "" };
    pv_status st = pvm_hamer_render_png(rgb, w, h, hands, n, faces, title, max_width, &png, &len,
                                        &msg);
    if (st != PV_OK) fprintf(stderr, "render: %s\n", msg.text);
    assert_int_equal(st, PV_OK);
    assert_non_null(png);
    assert_true(len > 8);
    image im = decode(png, len);
    pvc_free(png);
    return im;
}

static double dist_seg(double px, double py, double ax, double ay, double bx, double by)
{
    double dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
    double t = l2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0.0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return hypot(px - (ax + t * dx), py - (ay + t * dy));
}

static bool in_tri(double px, double py, const double a[2], const double b[2], const double c[2])
{
    double d0 = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
    double d1 = (c[0] - b[0]) * (py - b[1]) - (c[1] - b[1]) * (px - b[0]);
    double d2 = (a[0] - c[0]) * (py - c[1]) - (a[1] - c[1]) * (px - c[0]);
    return (d0 > 0.5 && d1 > 0.5 && d2 > 0.5) || (d0 < -0.5 && d1 < -0.5 && d2 < -0.5);
}

/* Pixels well inside the projected fan and at least 6 px from every keypoint, bone and box
 * edge: there only the mesh is drawn. Returns how many went into xs/ys (at most cap). */
static int mesh_only_pixels(const pv_hand *h, int *xs, int *ys, int cap)
{
    double ring[NRING + 1][2];
    for (int i = 0; i <= NRING; i++) assert_true(pvm_hamer_render_project(h, &h->vertices[i * 3], ring[i]));
    const float *kp = h->keypoints_2d;
    int n = 0;
    for (int y = 0; y < H && n < cap; y++)
        for (int x = 0; x < W && n < cap; x++) {
            bool inside = false;
            for (int i = 0; i < NRING && !inside; i++)
                inside = in_tri(x, y, ring[0], ring[1 + i], ring[1 + (i + 1) % NRING]);
            if (!inside) continue;
            bool clear = true;
            for (int k = 0; k < PV_HAND_KEYPOINTS && clear; k++) {
                int from = k == 0 ? 0 : (k - 1) % 4 == 0 ? 0 : k - 1;
                clear = dist_seg(x, y, kp[from * 2], kp[from * 2 + 1], kp[k * 2], kp[k * 2 + 1]) > 6.0;
            }
            const float *b = h->box;
            clear = clear && fabs(x - b[0]) > 6 && fabs(x - b[2]) > 6 && fabs(y - b[1]) > 6 &&
                    fabs(y - b[3]) > 6;
            if (!clear) continue;
            xs[n] = x;
            ys[n++] = y;
        }
    return n;
}

/* out = round(0.4 in + 0.6 round(base s)) for one s in [0.3, 1] across the channels. */
static double blend_shade(const uint8_t out[3], const uint8_t in[3], const uint8_t base[3])
{
    double s[3];
    for (int c = 0; c < 3; c++) {
        s[c] = ((double)out[c] - (1.0 - PVM_HAMER_RENDER_ALPHA) * in[c]) /
               (PVM_HAMER_RENDER_ALPHA * base[c]);
        assert_true(s[c] > 0.28 && s[c] < 1.02);
    }
    assert_true(fabs(s[0] - s[1]) < 0.03 && fabs(s[0] - s[2]) < 0.03 && fabs(s[1] - s[2]) < 0.03);
    return (s[0] + s[1] + s[2]) / 3.0;
}

/* The bounding rectangle of everything drawn for h, grown by pad. */
static void drawn_bounds(const pv_hand *h, double pad, double *x0, double *y0, double *x1, double *y1)
{
    *x0 = h->box[0];
    *y0 = h->box[1];
    *x1 = h->box[2];
    *y1 = h->box[3];
    for (int i = 0; i <= NRING; i++) {
        double uv[2];
        assert_true(pvm_hamer_render_project(h, &h->vertices[i * 3], uv));
        *x0 = fmin(*x0, uv[0]); *x1 = fmax(*x1, uv[0]);
        *y0 = fmin(*y0, uv[1]); *y1 = fmax(*y1, uv[1]);
    }
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        *x0 = fmin(*x0, h->keypoints_2d[k * 2]); *x1 = fmax(*x1, h->keypoints_2d[k * 2]);
        *y0 = fmin(*y0, h->keypoints_2d[k * 2 + 1]); *y1 = fmax(*y1, h->keypoints_2d[k * 2 + 1]);
    }
    *x0 -= pad; *y0 -= pad; *x1 += pad; *y1 += pad;
}

static int nearest(double v) { return (int)floor(v + 0.5); }

/* ---- projection ------------------------------------------------------------------------------ */
static void test_projection(void **state)
{
    (void)state;
    pv_hand r, l;
    right_hand(&r);
    mirror_hand(&r, &l);
    const pv_hand *hs[2] = { &r, &l };
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
            double uv[2];
            assert_true(pvm_hamer_render_project(hs[i], &hs[i]->keypoints_3d[k * 3], uv));
            assert_true(fabs(uv[0] - hs[i]->keypoints_2d[k * 2]) < 1e-3);
            assert_true(fabs(uv[1] - hs[i]->keypoints_2d[k * 2 + 1]) < 1e-3);
        }
    /* The left hand's keypoints are the right hand's, mirrored about x = (W - 1) / 2. */
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        assert_true(fabs(l.keypoints_2d[k * 2] - ((W - 1.0) - r.keypoints_2d[k * 2])) < 1e-3);
        assert_true(fabs(l.keypoints_2d[k * 2 + 1] - r.keypoints_2d[k * 2 + 1]) < 1e-3);
    }
    double uv[2] = { -7, -7 };
    const float behind[3] = { 0, 0, -3.0f }, on[3] = { 0, 0, -3.0f + 0.0f }, nan3[3] = { NAN, 0, 0 };
    assert_false(pvm_hamer_render_project(&r, behind, uv));
    assert_false(pvm_hamer_render_project(&r, on, uv));
    assert_false(pvm_hamer_render_project(&r, nan3, uv));
    const float far[3] = { 1e6f, 0, 0 };
    assert_false(pvm_hamer_render_project(&r, far, uv));
    assert_true(uv[0] == -7 && uv[1] == -7);
}

/* ---- sizes ----------------------------------------------------------------------------------- */
static void test_sizes(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand h;
    right_hand(&h);
    const char *title = "HAMER  GENERATED WEIGHTS - NOT A TRAINED MODEL";
    const struct { const char *title; int maxw, w, hh, band; } c[] = {
        { NULL, 0, 320, 240, 0 },      { "", 0, 320, 240, 0 },       { title, 0, 320, 253, 13 },
        { NULL, 160, 160, 120, 0 },    { title, 160, 160, 133, 13 }, { NULL, 100, 100, 75, 0 },
        { NULL, 640, 320, 240, 0 },    { NULL, 320, 320, 240, 0 },   { NULL, 1, 1, 1, 0 },
        { title, 3, 3, 2 + 13, 13 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pvm_hamer_render_geom g;
        pvc_msg msg;
        assert_int_equal(pvm_hamer_render_geometry(W, H, c[i].title, c[i].maxw, &g, &msg), PV_OK);
        assert_int_equal(g.width, c[i].w);
        assert_int_equal(g.height, c[i].hh);
        assert_int_equal(g.band, c[i].band);
        assert_int_equal(g.img_h, c[i].hh - c[i].band);
        image im = render_ok(rgb, W, H, &h, 1, faces, c[i].title, c[i].maxw);
        assert_int_equal(im.w, c[i].w);
        assert_int_equal(im.h, c[i].hh);
        if (c[i].band) {
            /* The band holds the bird's-eye view's band ink and some title ink. */
            uint8_t band[3], ink[3];
            pvio_bev_rgb(PVIO_BEV_INK_BAND, band);
            pvio_bev_rgb(PVIO_BEV_INK_TITLE, ink);
            int nb = 0, ni = 0;
            for (int y = 0; y < c[i].band; y++)
                for (int x = 0; x < im.w; x++) {
                    nb += memcmp(pix(&im, x, y), band, 3) == 0;
                    ni += memcmp(pix(&im, x, y), ink, 3) == 0;
                }
            assert_int_equal(nb + ni, c[i].band * im.w);
            if (im.w > 20) assert_true(ni > 50);
        }
        free(im.px);
    }
    /* A band does not move the picture: the image rows below it equal the untitled picture. */
    image a = render_ok(rgb, W, H, &h, 1, faces, NULL, 0);
    image b = render_ok(rgb, W, H, &h, 1, faces, title, 0);
    assert_memory_equal(a.px, b.px + (size_t)13 * W * 3, (size_t)W * H * 3);
    free(a.px);
    free(b.px);
    free(faces);
    free(rgb);
}

/* ---- what is drawn --------------------------------------------------------------------------- */
static void test_pixels(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand h;
    right_hand(&h);
    image im = render_ok(rgb, W, H, &h, 1, faces, NULL, 0);

    /* Far from the hand: the input, byte for byte. */
    double x0, y0, x1, y1;
    drawn_bounds(&h, 6.0, &x0, &y0, &x1, &y1);
    int same = 0, outside = 0, changed_in = 0, inside = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            bool eq = memcmp(pix(&im, x, y), in_px(rgb, x, y), 3) == 0;
            if (x < x0 || x > x1 || y < y0 || y > y1) { outside++; same += eq; }
            else { inside++; changed_in += !eq; }
        }
    assert_true(outside > 0.5 * W * H);
    assert_int_equal(same, outside);
    assert_true(changed_in > inside / 10);

    /* Mesh-only pixels: the input blended with the right hand's light blue, shaded. */
    int xs[400], ys[400];
    int n = mesh_only_pixels(&h, xs, ys, 400);
    assert_true(n >= 100);
    uint8_t base[3];
    pvm_hamer_render_mesh_rgb(1, base);
    double lo = 2, hi = 0;
    for (int i = 0; i < n; i++) {
        double s = blend_shade(pix(&im, xs[i], ys[i]), in_px(rgb, xs[i], ys[i]), base);
        lo = fmin(lo, s);
        hi = fmax(hi, s);
    }
    assert_true(hi - lo > 0.002);   /* the tilted fan is not one flat shade */

    /* Every keypoint's nearest pixel holds its finger's colour (the wrist white). */
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        uint8_t ink[3];
        assert_true(pvm_hamer_render_keypoint_rgb(k, ink));
        const uint8_t *p = pix(&im, nearest(h.keypoints_2d[k * 2]), nearest(h.keypoints_2d[k * 2 + 1]));
        assert_memory_equal(p, ink, 3);
    }
    uint8_t ink[3];
    assert_false(pvm_hamer_render_keypoint_rgb(21, ink));
    assert_false(pvm_hamer_render_keypoint_rgb(-1, ink));
    /* Thumb red, index yellow: a bone's middle pixel has its finger's colour. */
    pvm_hamer_render_keypoint_rgb(6, ink);
    int bx = nearest(0.5 * (h.keypoints_2d[5 * 2] + h.keypoints_2d[6 * 2]));
    int by = nearest(0.5 * (h.keypoints_2d[5 * 2 + 1] + h.keypoints_2d[6 * 2 + 1]));
    int hits = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) hits += memcmp(pix(&im, bx + dx, by + dy), ink, 3) == 0;
    assert_true(hits >= 1);

    /* The box: a thin rectangle in the right hand's ink, at the nearest pixels of its edges. */
    int on_box = 0;
    const uint8_t rbox[3] = { 80, 150, 255 };
    for (int x = 95; x < 220; x++) on_box += memcmp(pix(&im, x, 45), rbox, 3) == 0;
    assert_true(on_box > 100);
    assert_memory_equal(pix(&im, 150, 44), in_px(rgb, 150, 44), 3);
    assert_memory_equal(pix(&im, 150, 46), in_px(rgb, 150, 46), 3);

    /* Without faces: no mesh, the same keypoints. */
    image nm = render_ok(rgb, W, H, &h, 1, NULL, NULL, 0);
    for (int i = 0; i < n; i++)
        assert_memory_equal(pix(&nm, xs[i], ys[i]), in_px(rgb, xs[i], ys[i]), 3);
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        int kx = nearest(h.keypoints_2d[k * 2]), ky = nearest(h.keypoints_2d[k * 2 + 1]);
        assert_memory_equal(pix(&nm, kx, ky), pix(&im, kx, ky), 3);
    }
    free(nm.px);
    free(im.px);

    /* No hands: the input itself. */
    image none = render_ok(rgb, W, H, NULL, 0, faces, NULL, 0);
    assert_memory_equal(none.px, rgb, (size_t)W * H * 3);
    free(none.px);
    free(faces);
    free(rgb);
}

/* Two overlapping triangles: the nearer one shows, whichever is drawn first. */
static void test_zbuffer(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    pv_hand h;
    memset(&h, 0, sizeof h);
    h.is_right = 1;
    h.crop_center[0] = 160.0f;
    h.crop_center[1] = 120.0f;
    h.crop_size = 100.0f;
    h.cam_t[2] = 3.0f;
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) h.keypoints_2d[k * 2] = h.keypoints_2d[k * 2 + 1] = NAN;
    h.box[0] = h.box[1] = h.box[2] = h.box[3] = NAN;
    /* near: facing the camera at z = -0.2; far: tilted (z from 0.2 to 0.4) behind it. */
    const float v[6][3] = {
        { -0.08f, -0.08f, -0.2f }, { 0.08f, -0.08f, -0.2f }, { 0.0f, 0.08f, -0.2f },
        { -0.1f, -0.1f, 0.2f },    { 0.1f, -0.1f, 0.2f },    { 0.0f, 0.1f, 0.4f },
    };
    memcpy(h.vertices, v, sizeof v);
    int32_t *near_first = calloc(PV_HAND_FACES * 3, sizeof(int32_t));
    int32_t *far_first = calloc(PV_HAND_FACES * 3, sizeof(int32_t));
    int32_t *near_only = calloc(PV_HAND_FACES * 3, sizeof(int32_t));
    int32_t *far_only = calloc(PV_HAND_FACES * 3, sizeof(int32_t));
    assert_true(near_first && far_first && near_only && far_only);
    const int32_t tn[3] = { 0, 1, 2 }, tf[3] = { 3, 5, 4 };   /* opposite windings */
    memcpy(near_first, tn, 12); memcpy(near_first + 3, tf, 12);
    memcpy(far_first, tf, 12); memcpy(far_first + 3, tn, 12);
    memcpy(near_only, tn, 12);
    memcpy(far_only, tf, 12);
    image a = render_ok(rgb, W, H, &h, 1, near_first, NULL, 0);
    image b = render_ok(rgb, W, H, &h, 1, far_first, NULL, 0);
    image n = render_ok(rgb, W, H, &h, 1, near_only, NULL, 0);
    image f = render_ok(rgb, W, H, &h, 1, far_only, NULL, 0);
    assert_memory_equal(a.px, b.px, (size_t)W * H * 3);
    /* The centre: covered by both; it shows the near face, unlike the far face alone. */
    assert_memory_equal(pix(&a, 160, 120), pix(&n, 160, 120), 3);
    assert_memory_not_equal(pix(&a, 160, 120), pix(&f, 160, 120), 3);
    /* Where only the far face reaches (its top edge is at row 59.0, the near one's at 64.2),
     * it shows. */
    int fx = 160, fy = 61;
    assert_memory_equal(pix(&a, fx, fy), pix(&f, fx, fy), 3);
    assert_memory_equal(pix(&n, fx, fy), in_px(rgb, fx, fy), 3);
    /* The face-on near triangle is brighter than the tilted far one. */
    uint8_t base[3];
    pvm_hamer_render_mesh_rgb(1, base);
    double sn = blend_shade(pix(&n, 160, 120), in_px(rgb, 160, 120), base);
    double sf = blend_shade(pix(&f, 160, 120), in_px(rgb, 160, 120), base);
    assert_true(sn > 0.97 && sf < sn - 0.05);
    free(a.px); free(b.px); free(n.px); free(f.px);
    free(near_first); free(far_first); free(near_only); free(far_only);
    free(rgb);
}

/* A left hand in the mirrored image is the right hand's picture mirrored (pink for blue). */
static void test_left_mirrors_right(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false), *rgbm = gradient(true);
    int32_t *faces = fan_faces();
    pv_hand r, l;
    right_hand(&r);
    mirror_hand(&r, &l);
    image ir = render_ok(rgb, W, H, &r, 1, faces, NULL, 0);
    image il = render_ok(rgbm, W, H, &l, 1, faces, NULL, 0);
    int changed = 0, mismatch = 0, unmirrored = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            bool cr = memcmp(pix(&ir, x, y), in_px(rgb, x, y), 3) != 0;
            bool cl = memcmp(pix(&il, W - 1 - x, y), in_px(rgbm, W - 1 - x, y), 3) != 0;
            bool cl_same = memcmp(pix(&il, x, y), in_px(rgbm, x, y), 3) != 0;
            changed += cr;
            mismatch += cr != cl;
            unmirrored += cr != cl_same;
        }
    assert_true(changed > 2000);
    assert_true(mismatch <= changed / 50);          /* edges may round the other way */
    assert_true(unmirrored > changed / 10);         /* the hand is not symmetric */
    /* Keypoints: the same colours at mirrored pixels. */
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        int x = nearest(r.keypoints_2d[k * 2]), y = nearest(r.keypoints_2d[k * 2 + 1]);
        assert_int_equal(nearest(l.keypoints_2d[k * 2]), W - 1 - x);
        assert_memory_equal(pix(&ir, x, y), pix(&il, W - 1 - x, y), 3);
    }
    /* The mesh: the same shading, in the left hand's pink. */
    int xs[200], ys[200];
    int n = mesh_only_pixels(&r, xs, ys, 200);
    assert_true(n >= 50);
    uint8_t blue[3], pink[3];
    pvm_hamer_render_mesh_rgb(1, blue);
    pvm_hamer_render_mesh_rgb(0, pink);
    assert_memory_not_equal(blue, pink, 3);
    for (int i = 0; i < n; i++) {
        int mx = W - 1 - xs[i];
        double sr = blend_shade(pix(&ir, xs[i], ys[i]), in_px(rgb, xs[i], ys[i]), blue);
        double sl = blend_shade(pix(&il, mx, ys[i]), in_px(rgbm, mx, ys[i]), pink);
        assert_true(fabs(sr - sl) < 0.03);
    }
    free(ir.px);
    free(il.px);
    free(faces);
    free(rgb);
    free(rgbm);
}

/* max_width: the image area-averaged, the drawing at the scaled positions. */
static void test_scaled(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand h;
    right_hand(&h);
    image im = render_ok(rgb, W, H, &h, 1, faces, NULL, 160);
    assert_int_equal(im.w, 160);
    assert_int_equal(im.h, 120);
    double x0, y0, x1, y1;
    drawn_bounds(&h, 8.0, &x0, &y0, &x1, &y1);
    int checked = 0;
    for (int y = 0; y < 120; y++)
        for (int x = 0; x < 160; x++) {
            if (2 * x + 1 >= x0 && 2 * x <= x1 && 2 * y + 1 >= y0 && 2 * y <= y1) continue;
            for (int c = 0; c < 3; c++) {
                int s = in_px(rgb, 2 * x, 2 * y)[c] + in_px(rgb, 2 * x + 1, 2 * y)[c] +
                        in_px(rgb, 2 * x, 2 * y + 1)[c] + in_px(rgb, 2 * x + 1, 2 * y + 1)[c];
                int want = (int)floor(s / 4.0 + 0.5);
                assert_int_equal(pix(&im, x, y)[c], want);
            }
            checked++;
        }
    assert_true(checked > 8000);
    /* Fingertips at the scaled positions, in their colours. */
    for (int k = 4; k <= 20; k += 4) {
        uint8_t ink[3];
        pvm_hamer_render_keypoint_rgb(k, ink);
        int x = nearest((h.keypoints_2d[k * 2] + 0.5) * 0.5 - 0.5);
        int y = nearest((h.keypoints_2d[k * 2 + 1] + 0.5) * 0.5 - 0.5);
        assert_memory_equal(pix(&im, x, y), ink, 3);
    }
    free(im.px);
    /* An odd factor (320 -> 100) on a flat image stays flat away from the hand. */
    uint8_t *flat = malloc((size_t)W * H * 3);
    assert_non_null(flat);
    for (size_t i = 0; i < (size_t)W * H * 3; i++)
        flat[i] = (uint8_t)(i % 3 == 0 ? 200 : i % 3 == 1 ? 7 : 99);
    image fl = render_ok(flat, W, H, &h, 1, faces, NULL, 100);
    assert_int_equal(fl.w, 100);
    assert_int_equal(fl.h, 75);
    const uint8_t want[3] = { 200, 7, 99 };
    for (int y = 0; y < 75; y++) {
        assert_memory_equal(pix(&fl, 0, y), want, 3);
        assert_memory_equal(pix(&fl, 99, y), want, 3);
    }
    free(fl.px);
    free(flat);
    free(faces);
    free(rgb);
}

/* ---- robustness ------------------------------------------------------------------------------ */
static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static void test_garbage(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand *hs = malloc(8 * sizeof *hs);
    assert_non_null(hs);
    for (int i = 0; i < 8; i++) right_hand(&hs[i]);
    /* Hand by hand, one kind of bad number each. */
    for (int i = 0; i < PV_HAND_VERTICES * 3; i += 7) hs[0].vertices[i] = NAN;
    for (int i = 0; i < PV_HAND_VERTICES * 3; i += 5) hs[1].vertices[i] = (i & 1) ? 1e30f : -1e30f;
    hs[2].cam_t[2] = -3.0f;                                     /* behind the camera */
    hs[3].crop_size = NAN;
    hs[3].keypoints_2d[4] = INFINITY;
    hs[3].keypoints_2d[7] = -1e30f;
    hs[4].crop_size = 1e30f;
    hs[4].box[0] = NAN;
    hs[4].box[2] = 1e38f;
    hs[5].cam_t[0] = INFINITY;
    for (int k = 0; k < PV_HAND_KEYPOINTS * 2; k++) hs[5].keypoints_2d[k] = 5e5f * (k & 1 ? -1 : 1);
    hs[6].crop_size = 0.0f;
    hs[6].cam_t[2] = 1e-30f;                                    /* everything absurdly close */
    hs[7].crop_center[0] = -1e20f;
    for (int n = 1; n <= 8; n++) {
        image im = render_ok(rgb, W, H, hs, n, faces, "X", 0);
        free(im.px);
    }
    /* Random bits in every float of the hands (NaN, inf, denormals, huge), faces random too. */
    int32_t *rf = malloc(PV_HAND_FACES * 3 * sizeof *rf);
    assert_non_null(rf);
    for (int it = 0; it < 40; it++) {
        for (int i = 0; i < PV_HAND_FACES * 3; i++) rf[i] = (int32_t)(rnd() % PV_HAND_VERTICES);
        for (int i = 0; i < 4; i++) {
            pv_hand *h = &hs[i];
            float *fl = (float *)h;   /* pv_hand is ints and floats only */
            size_t nf = sizeof *h / sizeof(float);
            for (size_t k = 1; k < nf; k++) {
                uint32_t bits = rnd();
                if (it & 1) {   /* every other round: plausible magnitudes, some bad ones */
                    float v = ((float)(bits >> 8) / 16777216.0f - 0.5f) * (float)(1 << (bits & 15));
                    if ((bits & 0xff) == 3) v = NAN;
                    memcpy(&bits, &v, 4);
                }
                memcpy(&fl[k], &bits, 4);
            }
            h->is_right = (int)(rnd() & 1);
        }
        image im = render_ok(rgb, W, H, hs, 4, rf, NULL, (it % 3) * 150);
        free(im.px);
    }
    free(rf);
    free(hs);
    free(faces);
    free(rgb);
}

/* Face boxes over 4x the image are skipped; under it they are drawn; a mesh of giant faces is
 * cut off by the work bound, quickly. */
static void test_bounds(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    pv_hand h;
    memset(&h, 0, sizeof h);
    h.is_right = 1;
    h.crop_center[0] = 160.0f;
    h.crop_center[1] = 120.0f;
    h.crop_size = 100.0f;
    h.cam_t[2] = 3.0f;
    for (int k = 0; k < PV_HAND_KEYPOINTS * 2; k++) h.keypoints_2d[k] = NAN;
    for (int k = 0; k < 4; k++) h.box[k] = NAN;
    double ppm = 100.0 * F_CROP / 3.0;    /* pixels per metre at z = 0 */
    int32_t *faces = calloc(PV_HAND_FACES * 3, sizeof *faces);
    assert_non_null(faces);
    for (int f = 0; f < PV_HAND_FACES; f++) {
        faces[f * 3 + 0] = 0;
        faces[f * 3 + 1] = 1;
        faces[f * 3 + 2] = 2;
    }
    /* A triangle whose box is 3x the image: drawn, covers the centre. */
    double s = sqrt(3.0 * W * H) / ppm / 2.0;
    const float small[3][3] = { { (float)-s, (float)-s, 0 }, { (float)s, (float)-s, 0 },
                                { (float)-s, (float)s, 0 } };
    memcpy(h.vertices, small, sizeof small);
    clock_t t0 = clock();
    image a = render_ok(rgb, W, H, &h, 1, faces, NULL, 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_memory_not_equal(pix(&a, 100, 100), in_px(rgb, 100, 100), 3);
    free(a.px);
    printf("      1538 faces of 3x the image: %.3f s\n", secs);
    /* 5x: skipped. */
    s = sqrt(5.0 * W * H) / ppm / 2.0;
    const float big[3][3] = { { (float)-s, (float)-s, 0 }, { (float)s, (float)-s, 0 },
                              { (float)-s, (float)s, 0 } };
    memcpy(h.vertices, big, sizeof big);
    image b = render_ok(rgb, W, H, &h, 1, faces, NULL, 0);
    assert_memory_equal(b.px, rgb, (size_t)W * H * 3);
    free(b.px);
    free(faces);
    free(rgb);
}

/* ---- arguments and memory -------------------------------------------------------------------- */
static void expect_einput(const uint8_t *rgb, int w, int h, const pv_hand *hands, int n,
                          const int32_t *faces, const char *title, int maxw, const char *needle)
{
    void *png = (void *)1;
    size_t len = 99;
    pvc_msg msg = { "" };
    pvc_alloc_test_begin(0);
    pv_status st = pvm_hamer_render_png(rgb, w, h, hands, n, faces, title, maxw, &png, &len, &msg);
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
    if (st != PV_EINPUT || !strstr(msg.text, needle))
        fail_msg("want PV_EINPUT with '%s', got %d '%s'", needle, st, msg.text);
    assert_null(png);
    assert_int_equal(len, 0);
}

static void test_invalid_args(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand h;
    right_hand(&h);
    expect_einput(rgb, 0, H, &h, 1, faces, NULL, 0, "W = 0");
    expect_einput(rgb, -5, H, &h, 1, faces, NULL, 0, "W = -5");
    expect_einput(rgb, 20001, H, &h, 1, faces, NULL, 0, "W = 20001");
    expect_einput(rgb, W, 0, &h, 1, faces, NULL, 0, "H = 0");
    expect_einput(rgb, W, 20001, &h, 1, faces, NULL, 0, "H = 20001");
    expect_einput(rgb, W, H, &h, 1, faces, NULL, -1, "max_width = -1");
    expect_einput(rgb, W, H, &h, -1, faces, NULL, 0, "nhands = -1");
    expect_einput(rgb, W, H, &h, 1025, faces, NULL, 0, "nhands = 1025");
    expect_einput(rgb, W, H, NULL, 1, faces, NULL, 0, "hands is NULL");
    expect_einput(NULL, W, H, &h, 1, faces, NULL, 0, "rgb is NULL");
    char title[PVM_HAMER_RENDER_MAX_TITLE + 2];
    memset(title, 'A', sizeof title - 1);
    title[sizeof title - 1] = 0;
    expect_einput(rgb, W, H, &h, 1, faces, title, 0, "title");
    title[PVM_HAMER_RENDER_MAX_TITLE] = 0;   /* exactly the limit: fine */
    image ok = render_ok(rgb, W, H, &h, 1, faces, title, 0);
    free(ok.px);
    faces[5 * 3 + 1] = PV_HAND_VERTICES;
    expect_einput(rgb, W, H, &h, 1, faces, NULL, 0, "faces[5][1] = 778");
    faces[5 * 3 + 1] = -1;
    expect_einput(rgb, W, H, &h, 1, faces, NULL, 0, "faces[5][1] = -1");
    faces[5 * 3 + 1] = 0;
    pvc_msg msg;
    size_t len = 1;
    void *png = (void *)1;
    assert_int_equal(pvm_hamer_render_png(rgb, W, H, &h, 1, faces, NULL, 0, NULL, &len, &msg), PV_EINPUT);
    assert_int_equal(len, 0);
    assert_int_equal(pvm_hamer_render_png(rgb, W, H, &h, 1, faces, NULL, 0, &png, NULL, &msg), PV_EINPUT);
    assert_null(png);
    assert_int_equal(pvm_hamer_render_geometry(W, H, NULL, 0, NULL, &msg), PV_EINPUT);
    free(faces);
    free(rgb);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    uint8_t *rgb = gradient(false);
    int32_t *faces = fan_faces();
    pv_hand hs[2];
    right_hand(&hs[0]);
    mirror_hand(&hs[0], &hs[1]);
    const int maxw[2] = { 0, 200 };
    for (int m = 0; m < 2; m++) {
        int failures = 0;
        for (long k = 1; k < 1000; k++) {
            pvc_msg msg;
            void *png = NULL;
            size_t len = 0;
            pvc_alloc_test_begin(k);
            pv_status st = pvm_hamer_render_png(rgb, W, H, hs, 2, faces, "TITLE", maxw[m], &png,
                                                &len, &msg);
            bool fired = pvc_alloc_failed();
            if (!fired) {
                assert_int_equal(st, PV_OK);
                pvc_free(png);
                assert_int_equal(pvc_alloc_live(), 0);
                pvc_alloc_test_end();
                break;
            }
            if (st != PV_ENOMEM) fail_msg("allocation %ld failed: status %d (%s)", k, st, msg.text);
            assert_null(png);
            assert_int_equal(len, 0);
            assert_int_equal(pvc_alloc_live(), 0);
            pvc_alloc_test_end();
            failures++;
        }
        /* canvas, projections, z-buffer, colour layer, libpng + zlib (+ the scaling row) */
        assert_true(failures >= 6 + m);
    }
    free(faces);
    free(rgb);
}

/* ---- exported text --------------------------------------------------------------------------- */
static void test_text(void **state)
{
    (void)state;
    assert_int_equal(pvio_text_width("AB", 2), 22);
    assert_int_equal(pvio_text_width("A", 1), 5);
    assert_int_equal(pvio_text_width("", 3), 0);
    assert_int_equal(pvio_text_width(NULL, 3), 0);
    assert_int_equal(pvio_text_width("A", 0), 0);
    assert_int_equal(pvio_text_width("A", 257), 0);

    enum { CW = 40, CH = 12 };
    uint8_t a[CW * CH * 3], b[CW * CH * 3];
    const uint8_t ink[3] = { 255, 1, 2 };
    memset(a, 0, sizeof a);
    pvio_text_draw(a, CW, CH, 1, 1, "i", 1, ink);       /* lower case drawn as 'I' */
    /* 'I': row 0 ".###.", rows 1-5 "..#..". */
    for (int x = 0; x < CW; x++)
        for (int y = 0; y < CH; y++) {
            bool lit = (y == 1 || y == 7) ? (x >= 2 && x <= 4) : (y >= 2 && y <= 6 && x == 3);
            assert_int_equal(memcmp(a + (y * CW + x) * 3, ink, 3) == 0, lit);
        }
    /* Off the left edge: the glyphs that show are the same as drawing the rest of the text. */
    const int xs[3] = { -6, -8, -55 };
    const char *rest[3] = { "ELLO", "ELLO", "O" };
    const int rx[3] = { 0, -2, -1 };
    for (int i = 0; i < 3; i++) {
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        pvio_text_draw(a, CW, CH, xs[i], 2, i == 2 ? "HELLOWORLO" : "HELLO", 1, ink);
        pvio_text_draw(b, CW, CH, rx[i], 2, rest[i], 1, ink);
        assert_memory_equal(a, b, sizeof a);
    }
    /* Clipping and absurd arguments: nothing outside, no crash. */
    memset(a, 0, sizeof a);
    const int pos[][2] = { { INT_MAX, 0 }, { INT_MIN, 0 }, { 0, INT_MAX }, { 0, INT_MIN },
                           { INT_MIN, INT_MIN }, { -3, -3 }, { CW - 2, CH - 2 } };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        pvio_text_draw(a, CW, CH, pos[i][0], pos[i][1], "W%/()", 1, ink);
        pvio_text_draw(a, CW, CH, pos[i][0], pos[i][1], "W%/()", 256, ink);
    }
    pvio_text_draw(NULL, CW, CH, 0, 0, "A", 1, ink);
    pvio_text_draw(a, 0, CH, 0, 0, "A", 1, ink);
    pvio_text_draw(a, CW, CH, 0, 0, NULL, 1, ink);
    pvio_text_draw(a, CW, CH, 0, 0, "A", 0, ink);
    pvio_text_draw(a, CW, CH, 0, 0, "A", 1, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_projection),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_pixels),
        cmocka_unit_test(test_zbuffer),
        cmocka_unit_test(test_left_mirrors_right),
        cmocka_unit_test(test_scaled),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
