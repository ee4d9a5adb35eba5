/* Tests for src/io/bev_png (bird's-eye-view PNG): every picture is decoded back with libpng's
 * simplified API and checked pixel by pixel against the rules of bev_png.h: dimensions, the
 * decoded image equal to the rendered canvas, box outlines and heading ticks in the palette
 * colour, the ego marker, lit points coloured by height, range rings, labels where the header
 * says they go, every glyph of the font present, argument validation, files, allocation
 * failures (every one, no leak) and a million-point frame (timed, never asserted). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/bev_png.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static bool is_ink(const image *im, int x, int y, int ink)
{
    uint8_t rgb[3];
    assert_true(pvio_bev_rgb(ink, rgb));
    return memcmp(pix(im, x, y), rgb, 3) == 0;
}

/* Pixels of one ink in [x0, x1) x [y0, y1), clipped to the image. */
static int count_ink(const image *im, int x0, int y0, int x1, int y1, int ink)
{
    int n = 0;
    for (int y = PVC_MAX(y0, 0); y < PVC_MIN(y1, im->h); y++)
        for (int x = PVC_MAX(x0, 0); x < PVC_MIN(x1, im->w); x++) n += is_ink(im, x, y, ink);
    return n;
}

/* The pixel holding world (x, y), as bev_png.h defines it. */
static void world_px(const pvio_bev_geom *g, double x, double y, int *col, int *row)
{
    *col = (int)floor(g->col0 - y * g->px_per_m);
    *row = (int)floor(g->row0 - x * g->px_per_m);
}

static image encode_decode(const pvio_bev_view *v, const float *pts, int64_t n, int32_t stride,
                           const pvio_bev_box *b, int nb)
{
    void *png = NULL;
    size_t len = 0;
    pvc_msg msg = { "" };
    pv_status st = pvio_bev_png_encode(v, pts, n, stride, b, nb, &png, &len, &msg);
    if (st != PV_OK) fprintf(stderr, "encode: %s\n", msg.text);
    assert_int_equal(st, PV_OK);
    assert_non_null(png);
    assert_true(len > 8);
    image im = decode(png, len);
    pvc_free(png);
    return im;
}

static pvio_bev_view base_view(void)
{
    pvio_bev_view v = { .x_min = -50, .x_max = 50, .y_min = -50, .y_max = 50, .width_px = 512,
                        .title = "GENERATED WEIGHTS - not a trained model" };
    return v;
}

/* ---- picture content --------------------------------------------------------------------- */
static void test_dims_and_roundtrip(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    v.x_min = -30;  /* 80 m tall, 100 m wide */
    pvio_bev_geom g;
    pvc_msg msg;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    assert_int_equal(g.width, 512);
    assert_int_equal(g.text_scale, 1);
    assert_int_equal(g.line_px, 1);
    assert_int_equal(g.map_top, PVIO_BEV_BAND_ROWS(1));
    assert_int_equal(g.map_rows, (int)lround(80 * 5.12));
    assert_int_equal(g.height, g.map_top + g.map_rows);
    /* x_max on the top map row, y_max on the left column. */
    assert_true(g.px_per_m == 5.12);
    assert_true(fabs(g.col0 - 50 * 5.12) < 1e-9);
    assert_true(fabs(g.row0 - (g.map_top + 50 * 5.12)) < 1e-9);

    const float pts[] = { 10, 5, 0, 1, -20, 30, 2, 1, 40, -40, -1.5f, 1 };
    const pvio_bev_box b[] = {
        { 12, -3, 4.6f, 1.9f, 0.3f, 0.53f, "CAR", 1 },
        { -8, 14, 0.8f, 0.7f, -2.0f, 0.91f, "PEDESTRIAN", 7 },
    };
    image im = encode_decode(&v, pts, 3, 4, b, 2);
    assert_int_equal(im.w, g.width);
    assert_int_equal(im.h, g.height);
    uint8_t *canvas = malloc((size_t)g.width * (size_t)g.height * 3);
    assert_non_null(canvas);
    assert_int_equal(pvio_bev_render(&v, &g, pts, 3, 4, b, 2, canvas, &msg), PV_OK);
    assert_memory_equal(im.px, canvas, (size_t)g.width * (size_t)g.height * 3);
    free(canvas);
    free(im.px);

    /* The title also travels as a tEXt chunk. */
    void *png;
    size_t len;
    assert_int_equal(pvio_bev_png_encode(&v, NULL, 0, 3, NULL, 0, &png, &len, &msg), PV_OK);
    static const char key[] = "tEXtTitle";
    bool found = false;
    for (size_t i = 0; i + sizeof key + 20 < len && !found; i++)
        found = memcmp((char *)png + i, key, sizeof key) == 0 &&
                memcmp((char *)png + i + sizeof key, "GENERATED WEIGHTS", 17) == 0;
    assert_true(found);
    pvc_free(png);

    /* Without a title: no band, the map starts at row 0. */
    v.title = NULL;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    assert_int_equal(g.map_top, 0);
    assert_int_equal(g.height, g.map_rows);
    /* Scale and line width grow with the picture. */
    v.width_px = 2048;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    assert_int_equal(g.text_scale, 3);
    assert_int_equal(g.line_px, 3);
}

static void test_box_outline_and_heading(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    pvio_bev_geom g;
    pvc_msg msg;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    /* Axis-aligned: front edge at x = 32, left edge at y = 11 (drawn left of the centre). */
    const pvio_bev_box b[] = {
        { 30, 10, 4, 2, 0, -1, NULL, 1 },
        { -25, -25, 6, 3, 0.7f, -1, NULL, 3 },
    };
    image im = encode_decode(&v, NULL, 0, 3, b, 2);
    int c, r, c2, r2;
    world_px(&g, 32, 11, &c, &r);          /* front-left corner */
    assert_true(is_ink(&im, c, r, 1));
    world_px(&g, 28, 9, &c2, &r2);         /* rear-right corner */
    assert_true(is_ink(&im, c2, r2, 1));
    assert_true(c < c2 && r < r2);         /* +y is left, +x is up */
    /* Every pixel of the left edge (one column) and of the front edge (one row). */
    for (int y = r; y <= r2; y++) assert_true(is_ink(&im, c, y, 1));
    for (int x = c; x <= c2; x++) assert_true(is_ink(&im, x, r, 1));
    /* Heading tick: the column through the centre, from the centre up to the front edge. */
    int cc, cr;
    world_px(&g, 30, 10, &cc, &cr);
    for (int y = r; y <= cr; y++) assert_true(is_ink(&im, cc, y, 1));
    /* ... and not behind the centre: the rear half inside the outline stays background. */
    for (int y = cr + 2; y < r2; y++) assert_true(is_ink(&im, cc, y, PVIO_BEV_INK_BACKGROUND));
    assert_true(is_ink(&im, cc + 3, cr - 3, PVIO_BEV_INK_BACKGROUND));

    /* Rotated box: its four corners, and the tick's far end on the front edge's middle. */
    double cy = cos((double)0.7f), sy = sin((double)0.7f);
    const double corner[4][2] = { { 3, 1.5 }, { 3, -1.5 }, { -3, -1.5 }, { -3, 1.5 } };
    for (int i = 0; i < 4; i++) {
        double wx = -25 + corner[i][0] * cy - corner[i][1] * sy;
        double wy = -25 + corner[i][0] * sy + corner[i][1] * cy;
        world_px(&g, wx, wy, &c, &r);
        assert_true(is_ink(&im, c, r, 3));
    }
    world_px(&g, -25 + 3 * cy, -25 + 3 * sy, &c, &r);
    assert_true(is_ink(&im, c, r, 3));
    world_px(&g, -25 + 1.5 * cy, -25 + 1.5 * sy, &c, &r);   /* halfway along the tick */
    assert_true(count_ink(&im, c - 1, r - 1, c + 2, r + 2, 3) > 0);
    free(im.px);

    /* Wider lines at 2048 px: 3 pixels across the edge, centred on the 1-pixel line. */
    v.width_px = 2048;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    im = encode_decode(&v, NULL, 0, 3, b, 1);
    world_px(&g, 30, 11, &c, &r);          /* middle of the left edge */
    assert_int_equal(count_ink(&im, c - 1, r, c + 2, r + 1, 1), 3);
    assert_true(is_ink(&im, c - 2, r, PVIO_BEV_INK_BACKGROUND));
    assert_true(is_ink(&im, c + 2, r, PVIO_BEV_INK_BACKGROUND));
    free(im.px);
}

static void test_ego_points_rings_background(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    pvio_bev_geom g;
    pvc_msg msg;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    const float nan = NAN;
    const float pts[] = {
        30, -15, 0, 7,          /* lit, mid ramp */
        -12, 33, -3.5f, 7,      /* lit, bottom of the ramp (below z_min: clamped) */
        -33, -12, 9, 7,         /* lit, top of the ramp */
        nan, 4, 0, 7,           /* skipped */
        4, 4, nan, 7,           /* skipped */
        80, 0, 0, 7,            /* outside the view: skipped */
        0, -1000, 0, 7,
    };
    image im = encode_decode(&v, pts, 7, 4, NULL, 0);

    int c, r;
    world_px(&g, 0, 0, &c, &r);
    assert_true(is_ink(&im, c, r, PVIO_BEV_INK_EGO));
    assert_true(is_ink(&im, c, r - 3, PVIO_BEV_INK_EGO));   /* towards the apex (+x) */
    assert_true(is_ink(&im, c, r - 40, PVIO_BEV_INK_BACKGROUND));
    assert_true(is_ink(&im, c - 25, r, PVIO_BEV_INK_BACKGROUND));

    int lo[2], mid[2], hi[2];
    world_px(&g, 30, -15, &mid[0], &mid[1]);
    world_px(&g, -12, 33, &lo[0], &lo[1]);
    world_px(&g, -33, -12, &hi[0], &hi[1]);
    const uint8_t *pm = pix(&im, mid[0], mid[1]), *pl = pix(&im, lo[0], lo[1]),
                  *ph = pix(&im, hi[0], hi[1]);
    for (int ink = -5; ink < PVIO_BEV_NCOLORS; ink++) {
        assert_false(is_ink(&im, mid[0], mid[1], ink));
        assert_false(is_ink(&im, lo[0], lo[1], ink));
        assert_false(is_ink(&im, hi[0], hi[1], ink));
    }
    assert_true(pl[2] > pl[0]);            /* low: blue */
    assert_true(ph[0] > ph[2]);            /* high: red */
    assert_true(pm[1] > pm[0] && pm[1] > pm[2]);   /* middle: green */
    /* The NaN point at (4, 4) left no trace. */
    world_px(&g, 4, 4, &c, &r);
    assert_true(is_ink(&im, c, r, PVIO_BEV_INK_BACKGROUND));

    /* Rings every 20 m: crossings of the y axis at 20 and 40 m, background at 30 m. */
    world_px(&g, 0, -20, &c, &r);
    assert_true(count_ink(&im, c - 1, r, c + 2, r + 1, PVIO_BEV_INK_RING) > 0);
    world_px(&g, 40, 0, &c, &r);
    assert_true(count_ink(&im, c, r - 1, c + 1, r + 2, PVIO_BEV_INK_RING) > 0);
    world_px(&g, -14.142, 14.142, &c, &r);  /* 45 degrees on the 20 m ring */
    assert_true(count_ink(&im, c - 1, r - 1, c + 2, r + 2, PVIO_BEV_INK_RING) > 0);
    world_px(&g, 0, 30, &c, &r);
    assert_int_equal(count_ink(&im, c - 3, r - 3, c + 4, r + 4, PVIO_BEV_INK_RING), 0);
    /* ... with their distance written right of the +x crossing ("20 M", in the ring ink). */
    world_px(&g, 20, 0, &c, &r);
    assert_true(count_ink(&im, c + 2, r - 9, c + 30, r, PVIO_BEV_INK_RING) > 10);
    /* Empty corners and the gap between rings are background. */
    world_px(&g, -25, 25, &c, &r);
    assert_int_equal(count_ink(&im, c - 3, r - 3, c + 4, r + 4, PVIO_BEV_INK_BACKGROUND), 49);
    assert_int_equal(count_ink(&im, im.w - 10, im.h - 10, im.w, im.h, PVIO_BEV_INK_BACKGROUND),
                     100);
    free(im.px);

    /* A custom ramp: z = 9 is the bottom of [9, 20], so blue. */
    v.z_min = 9;
    v.z_max = 20;
    im = encode_decode(&v, pts + 8, 1, 4, NULL, 0);
    const uint8_t *p = pix(&im, hi[0], hi[1]);
    assert_true(p[2] > p[0]);
    free(im.px);
}

/* The text region of a box as bev_png.h places it (right of the box, top-aligned). */
static void label_region(const pvio_bev_geom *g, const pvio_bev_box *b, int nchars, bool right,
                         int *x0, int *y0, int *x1, int *y1)
{
    double cy = cos(b->yaw), sy = sin(b->yaw), minc = 1e9, maxc = -1e9, minr = 1e9;
    for (int i = 0; i < 4; i++) {
        double ox = (i < 2 ? 0.5 : -0.5) * b->length, oy = (i == 0 || i == 3 ? 0.5 : -0.5) * b->width;
        double c = g->col0 - (b->y + ox * sy + oy * cy) * g->px_per_m;
        double r = g->row0 - (b->x + ox * cy - oy * sy) * g->px_per_m;
        minc = fmin(minc, c);
        maxc = fmax(maxc, c);
        minr = fmin(minr, r);
    }
    int ts = g->text_scale, tw = nchars * 6 * ts - ts, gap = PVIO_BEV_LABEL_GAP(g);
    *x0 = right ? (int)floor(maxc) + 1 + gap : (int)floor(minc) - gap - tw;
    *x1 = *x0 + tw;
    *y0 = (int)floor(minr);
    *y1 = *y0 + 7 * ts;
}

static void test_labels(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    v.width_px = 1024;                      /* text scale 2 */
    pvio_bev_geom g;
    pvc_msg msg;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    assert_int_equal(g.text_scale, 2);
    const pvio_bev_box b[] = {
        { 25, 20, 4.5f, 1.9f, 0.2f, 0.53f, "CAR", 1 },
        { -25, 20, 4.5f, 1.9f, 0.2f, -1.0f, NULL, 2 },              /* no text at all */
        { 10, -47, 2, 1, 0, 0.9f, "bicycle", 6 },                   /* at the right edge */
    };
    /* A dense point grid around the first box and its label. */
    float *pts = malloc(200 * 200 * 3 * sizeof(float));
    assert_non_null(pts);
    for (int i = 0; i < 200 * 200; i++) {
        pts[i * 3] = 20.0f + 0.05f * (float)(i / 200);
        pts[i * 3 + 1] = 8.0f + 0.05f * (float)(i % 200);
        pts[i * 3 + 2] = 0.0f;
    }
    image im = encode_decode(&v, pts, 200 * 200, 3, b, 3);
    free(pts);
    int x0, y0, x1, y1;
    label_region(&g, &b[0], 8, true, &x0, &y0, &x1, &y1);          /* "CAR 0.53" */
    /* Under the text and one text pixel around it: only text or background (the plate). */
    int ts = g.text_scale, area = (x1 - x0 + 2 * ts) * (y1 - y0 + 2 * ts);
    assert_int_equal(count_ink(&im, x0 - ts, y0 - ts, x1 + ts, y1 + ts, 1) +
                     count_ink(&im, x0 - ts, y0 - ts, x1 + ts, y1 + ts, PVIO_BEV_INK_BACKGROUND),
                     area);
    /* ... while just outside the plate the points show. */
    assert_true(count_ink(&im, x0, y1 + ts, x1, y1 + ts + 4, PVIO_BEV_INK_BACKGROUND) <
                (x1 - x0) * 2);
    int lit = count_ink(&im, x0, y0, x1, y1, 1);
    assert_true(lit > 60);
    /* Nothing of it outside that region (a margin around it, left of the box excluded). */
    assert_int_equal(count_ink(&im, x0, y0 - 6, x1 + 6, y0, 1), 0);
    assert_int_equal(count_ink(&im, x1, y0, x1 + 6, y1, 1), 0);
    assert_int_equal(count_ink(&im, x0, y1, x1 + 6, y1 + 6, 1), 0);
    /* Each glyph lands in its own cell: C, A, R, space, 0, ., 5, 3. */
    for (int k = 0; k < 8; k++) {
        int n = count_ink(&im, x0 + k * 12, y0, x0 + k * 12 + 10, y1, 1);
        if (k == 3) assert_int_equal(n, 0);
        else assert_true(n >= 8);
    }
    label_region(&g, &b[1], 8, true, &x0, &y0, &x1, &y1);
    assert_int_equal(count_ink(&im, x0 - 4, y0 - 4, x1 + 4, y1 + 4, 2), 0);
    /* The right-edge box writes "BICYCLE 0.90" to its left. */
    label_region(&g, &b[2], 12, false, &x0, &y0, &x1, &y1);
    assert_true(x0 > 0 && x1 < im.w);
    assert_true(count_ink(&im, x0, y0, x1, y1, 6) > 80);
    /* The title band holds the title in the title ink and nothing from the map. */
    int band = g.map_top;
    assert_true(count_ink(&im, 0, 0, im.w, band, PVIO_BEV_INK_TITLE) > 200);
    assert_int_equal(count_ink(&im, 0, 0, im.w, band, PVIO_BEV_INK_TITLE) +
                     count_ink(&im, 0, 0, im.w, band, PVIO_BEV_INK_BAND), im.w * band);
    free(im.px);
}

/* Title band pixels of a picture titled t (no points, no boxes). */
static uint8_t *band_of(const char *t, size_t *nbytes)
{
    pvio_bev_view v = base_view();
    v.title = t;
    pvio_bev_geom g;
    pvc_msg msg;
    assert_int_equal(pvio_bev_geometry(&v, &g, &msg), PV_OK);
    image im = encode_decode(&v, NULL, 0, 3, NULL, 0);
    *nbytes = (size_t)g.map_top * (size_t)im.w * 3;
    return im.px;   /* the band is its first rows */
}

static void test_font_coverage(void **state)
{
    (void)state;
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-_:()%/";
    size_t n = strlen(set), nb;
    uint8_t **bands = calloc(n, sizeof *bands);
    assert_non_null(bands);
    for (size_t i = 0; i < n; i++) {
        char t[4] = { 'X', set[i], 'X', 0 };
        bands[i] = band_of(t, &nb);
    }
    /* Every character of the required set has its own glyph: all pictures differ ... */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_true(memcmp(bands[i], bands[j], nb) != 0);
    /* ... and none is the stand-in for unsupported bytes. */
    size_t nu;
    uint8_t *unk = band_of("X~X", &nu), *unk2 = band_of("X\x01X", &nu);
    assert_memory_equal(unk, unk2, nu);
    for (size_t i = 0; i < n; i++) assert_true(memcmp(bands[i], unk, nb) != 0);
    /* Lower case is drawn as upper case. */
    uint8_t *lower = band_of("XqX", &nu);
    assert_memory_equal(lower, bands[16], nu);   /* 'Q' */
    free(unk);
    free(unk2);
    free(lower);
    for (size_t i = 0; i < n; i++) free(bands[i]);
    free(bands);
}

/* ---- validation ------------------------------------------------------------------------------ */
static void expect_einput(const pvio_bev_view *v, const float *pts, int64_t n, int32_t stride,
                          const pvio_bev_box *b, int nb, const char *field)
{
    void *png = (void *)&png;
    size_t len = 123;
    pvc_msg msg = { "" };
    assert_int_equal(pvio_bev_png_encode(v, pts, n, stride, b, nb, &png, &len, &msg), PV_EINPUT);
    assert_null(png);
    assert_int_equal(len, 0);
    if (!strstr(msg.text, field)) fail_msg("message '%s' does not name '%s'", msg.text, field);
}

static void test_invalid_args(void **state)
{
    (void)state;
    const pvio_bev_view ok = base_view();
    const float pts[6] = { 0 };
    const pvio_bev_box box = { 1, 2, 4, 2, 0, 0.5f, "CAR", 1 };
    pvio_bev_view v;
    expect_einput(NULL, pts, 1, 3, NULL, 0, "view");
#define BAD_VIEW(field, value, name) \
    do { v = ok; v.field = value; expect_einput(&v, pts, 1, 3, NULL, 0, name); } while (0)
    BAD_VIEW(width_px, 0, "view.width_px = 0");
    BAD_VIEW(width_px, 255, "view.width_px = 255");
    BAD_VIEW(width_px, 4097, "view.width_px");
    BAD_VIEW(width_px, -7, "view.width_px");
    BAD_VIEW(x_min, NAN, "view.x_min = nan");
    BAD_VIEW(x_max, INFINITY, "view.x_max = inf");
    BAD_VIEW(y_min, -INFINITY, "view.y_min");
    BAD_VIEW(y_max, NAN, "view.y_max");
    BAD_VIEW(y_max, 2000, "view.y_max = 2000");
    BAD_VIEW(x_min, 50, "view.x_min = 50");        /* x_min == x_max */
    BAD_VIEW(x_min, 60, "view.x_min = 60");        /* x_min > x_max */
    BAD_VIEW(y_max, -50, "view.y_min");
    BAD_VIEW(x_max, 900, "map");                   /* 950 m tall at 5.12 px/m: too many rows */
    BAD_VIEW(x_min, 48, "map");                    /* 2 m: too few */
    BAD_VIEW(z_min, 3, "view.z_min = 3");          /* 3 .. 0 */
    BAD_VIEW(z_max, NAN, "view.z_max");
    char longt[PVIO_BEV_MAX_TITLE + 2];
    memset(longt, 'A', sizeof longt - 1);
    longt[sizeof longt - 1] = 0;
    BAD_VIEW(title, longt, "view.title");
#undef BAD_VIEW
    expect_einput(&ok, pts, -1, 3, NULL, 0, "npts = -1");
    expect_einput(&ok, NULL, 2, 3, NULL, 0, "pts is NULL");
    expect_einput(&ok, pts, 1, 2, NULL, 0, "stride = 2");
    expect_einput(&ok, pts, 1, PVIO_BEV_MAX_STRIDE + 1, NULL, 0, "stride");
    expect_einput(&ok, pts, INT64_MAX / 2, 3, NULL, 0, "overflows");
    expect_einput(&ok, pts, 1, 3, NULL, 1, "boxes is NULL");
    expect_einput(&ok, pts, 1, 3, &box, -1, "nbox = -1");
    expect_einput(&ok, pts, 1, 3, &box, PVIO_BEV_MAX_BOXES + 1, "nbox");
    pvio_bev_box bb[2] = { box, box };
#define BAD_BOX(field, value, name) \
    do { bb[1] = box; bb[1].field = value; expect_einput(&ok, pts, 1, 3, bb, 2, name); } while (0)
    BAD_BOX(x, NAN, "boxes[1].x = nan");
    BAD_BOX(y, 1e4f, "boxes[1].y");
    BAD_BOX(length, 0, "boxes[1].length = 0");
    BAD_BOX(width, -1, "boxes[1].width = -1");
    BAD_BOX(width, 5000, "boxes[1].width = 5000");
    BAD_BOX(yaw, INFINITY, "boxes[1].yaw = inf");
    BAD_BOX(score, NAN, "boxes[1].score");
    BAD_BOX(color, PVIO_BEV_NCOLORS, "boxes[1].color = 12");
    BAD_BOX(color, -1, "boxes[1].color = -1");
#undef BAD_BOX
    /* NULL outputs. */
    pvc_msg msg;
    void *png;
    size_t len;
    assert_int_equal(pvio_bev_png_encode(&ok, pts, 1, 3, NULL, 0, NULL, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_bev_png_encode(&ok, pts, 1, 3, NULL, 0, &png, NULL, &msg), PV_EINPUT);
    assert_null(png);
    assert_int_equal(pvio_bev_png_write(NULL, &ok, pts, 1, 3, NULL, 0, &msg), PV_EINPUT);
    assert_int_equal(pvio_bev_png_write("", &ok, pts, 1, 3, NULL, 0, &msg), PV_EINPUT);
    /* The canvas renderer checks its geometry against the view. */
    pvio_bev_geom g;
    assert_int_equal(pvio_bev_geometry(&ok, &g, &msg), PV_OK);
    uint8_t *rgb = malloc((size_t)g.width * (size_t)g.height * 3);
    assert_non_null(rgb);
    g.height++;
    assert_int_equal(pvio_bev_render(&ok, &g, pts, 1, 3, NULL, 0, rgb, &msg), PV_EINPUT);
    g.height--;
    assert_int_equal(pvio_bev_render(&ok, &g, pts, 1, 3, NULL, 0, NULL, &msg), PV_EINPUT);
    assert_int_equal(pvio_bev_render(&ok, NULL, pts, 1, 3, NULL, 0, rgb, &msg), PV_EINPUT);
    assert_int_equal(pvio_bev_render(&ok, &g, pts, 1, 3, NULL, 0, rgb, &msg), PV_OK);
    free(rgb);
    uint8_t c[3] = { 1, 2, 3 };
    assert_false(pvio_bev_rgb(PVIO_BEV_NCOLORS, c));
    assert_false(pvio_bev_rgb(-6, c));
    assert_int_equal(c[0], 1);
}

/* Extreme but valid input: far, huge and spinning boxes, a zoomed-in view away from the
 * origin, the largest picture. Must render (under ASan/UBSan: no out-of-range access or
 * float-to-int overflow). */
static void test_extremes(void **state)
{
    (void)state;
    const float pts[] = { 999, -999, 0, 0.0101f, 0.005f, 1000, -1000, 1000, -1000 };
    const pvio_bev_box b[] = {
        { 999, 999, 1000, 1000, 1e30f, 1, "FAR", 0 },
        { 0.005f, 0.005f, 0.001f, 0.002f, -3e7f, 0.1f, "TINY", 11 },
        { -1000, 1000, 1000, 0.0001f, 3.14159f, 1e30f, "", 5 },
        { 0, 0, 1000, 1000, 0, 0.5f, "HUGE", 9 },
    };
    pvio_bev_view v = { .x_min = 0, .x_max = 0.01f, .y_min = 0, .y_max = 0.01f, .width_px = 256,
                        .title = "zoomed" };
    image im = encode_decode(&v, pts, 3, 3, b, 4);
    assert_int_equal(im.w, 256);
    free(im.px);
    v = (pvio_bev_view){ .x_min = 500, .x_max = 600, .y_min = -1000, .y_max = 1000,
                         .width_px = 4096 };
    im = encode_decode(&v, pts, 3, 3, b, 4);
    assert_int_equal(im.w, 4096);
    assert_int_equal(im.h, 205);
    free(im.px);
    v = (pvio_bev_view){ .x_min = -1000, .x_max = 1000, .y_min = -1000, .y_max = 1000,
                         .width_px = 4096, .title = "BIG" };
    im = encode_decode(&v, pts, 3, 3, b, 4);
    assert_int_equal(im.h, 4096 + PVIO_BEV_BAND_ROWS(6));
    free(im.px);
}

/* ---- files and memory ------------------------------------------------------------------------ */
static void test_write_file(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    const float pts[] = { 10, 5, 0, 3, 3, 1 };
    const pvio_bev_box b = { 12, -3, 4.6f, 1.9f, 0.3f, 0.53f, "CAR", 1 };
    char path[64];
    snprintf(path, sizeof path, "/tmp/pv_test_bev_%d.png", (int)getpid());
    pvc_msg msg;
    void *png;
    size_t len;
    assert_int_equal(pvio_bev_png_encode(&v, pts, 2, 3, &b, 1, &png, &len, &msg), PV_OK);
    assert_int_equal(pvio_bev_png_write(path, &v, pts, 2, 3, &b, 1, &msg), PV_OK);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *got = malloc(len + 1);
    assert_non_null(got);
    assert_int_equal(fread(got, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(got, png, len);
    free(got);
    pvc_free(png);
    remove(path);

    /* Unwritable: an error naming the path, nothing left allocated, nothing created. */
    pvc_alloc_test_begin(0);
    const char *bad = "/nonexistent-pv-dir/sub/out.png";
    assert_int_equal(pvio_bev_png_write(bad, &v, pts, 2, 3, &b, 1, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, bad));
    assert_int_equal(pvc_alloc_live(), 0);
    /* A directory is not writable as a file either. */
    assert_int_equal(pvio_bev_png_write("/tmp", &v, pts, 2, 3, &b, 1, &msg), PV_EINPUT);
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
}

static void test_alloc_failures(void **state)
{
    (void)state;
    pvio_bev_view v = base_view();
    const float pts[] = { 10, 5, 0, 3, 3, 1 };
    const pvio_bev_box b = { 12, -3, 4.6f, 1.9f, 0.3f, 0.53f, "CAR", 1 };
    int failures = 0;
    for (long k = 1; k < 1000; k++) {
        pvc_msg msg;
        void *png = NULL;
        size_t len = 0;
        pvc_alloc_test_begin(k);
        pv_status st = pvio_bev_png_encode(&v, pts, 2, 3, &b, 1, &png, &len, &msg);
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
    assert_true(failures >= 3);   /* canvas, libpng structs, zlib state at least */
}

/* A million points (deterministic), at 1024 px: timed and printed, never asserted. */
static void test_million_points(void **state)
{
    (void)state;
    const int64_t n = 1000000;
    float *pts = malloc((size_t)n * 4 * sizeof(float));
    assert_non_null(pts);
    uint32_t s = 12345;
    for (int64_t i = 0; i < n * 4; i++) {
        s = s * 1664525u + 1013904223u;
        pts[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * ((i % 4) == 2 ? 6.0f : 120.0f);
    }
    pvio_bev_box boxes[200];
    for (int i = 0; i < 200; i++)
        boxes[i] = (pvio_bev_box){ pts[i * 4], pts[i * 4 + 1], 4, 2, pts[i * 4 + 3], 0.5f, "CAR",
                                   i % PVIO_BEV_NCOLORS };
    pvio_bev_view v = base_view();
    v.x_min = v.y_min = -54;
    v.x_max = v.y_max = 54;
    v.width_px = 1024;
    void *png;
    size_t len;
    pvc_msg msg;
    double t0 = pvc_now_ms();
    assert_int_equal(pvio_bev_png_encode(&v, pts, n, 4, boxes, 200, &png, &len, &msg), PV_OK);
    double t1 = pvc_now_ms();
    printf("# bev_png: 1,000,000 points + 200 boxes at 1024 px: %.1f ms, %zu bytes\n", t1 - t0,
           len);
    image im = decode(png, len);
    assert_int_equal(im.w, 1024);
    /* Points are everywhere: most map pixels near the ego are lit. */
    int lit = 0;
    for (int y = im.h / 2 - 50; y < im.h / 2 + 50; y++)
        for (int x = im.w / 2 + 100; x < im.w / 2 + 200; x++)
            lit += !is_ink(&im, x, y, PVIO_BEV_INK_BACKGROUND);
    assert_true(lit > 3000);
    free(im.px);
    pvc_free(png);
    free(pts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dims_and_roundtrip),
        cmocka_unit_test(test_box_outline_and_heading),
        cmocka_unit_test(test_ego_points_rings_background),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_font_coverage),
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_million_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
