/* Tests for src/models/meteor/render (the meteor picture) and src/io/draw. A hand-filled
 * pvm_meteor_out (lanes with every class at known cells, an occupancy column with two classes
 * stacked, a risk patch, a moving vehicle with a future, a stationary VRU, 2D boxes on two
 * cameras, an unknown obstacle, an ego path) and seven synthetic camera images (one camera
 * absent) are rendered; the checks follow render.h: box corners, centre and heading tick in the
 * class colour, the stationary fill blended at 0.5, lane colours at their cells, the occupancy
 * tint of the highest voxel, the risk blend, the absent tile grey, the thumbnails' area
 * averages, the 2D boxes at the scaled coordinates (class 0 thicker), the title's ink (more with
 * "generated"), width_px scaling, NaN robustness, argument errors and every allocation failure.
 * The default picture is written as meteor_render.png next to the test executable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/bev_png.h"
#include "io/draw.h"
#include "io/image.h"
#include "models/meteor/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IW PVM_METEOR_IMG_W
#define IH PVM_METEOR_IMG_H
#define ABSENT_CAM 5

static char g_png_path[4096] = "meteor_render.png";

/* ---- the frame ------------------------------------------------------------------------------ */
typedef struct frame {
    pvm_meteor_out o;
    pvm_meteor_box3d b3[2];
    pvm_meteor_box2d b2[2];
    pvm_meteor_unknown unk[1];
    uint8_t *imgs[PVM_METEOR_NCAM];
} frame;

/* Lane cells that hold class k (k = 0..8): a 5x5 block around row 700 + 5k, column 20
 * (x = -60.1 - k, y = +45.9), far from every box, path and text plate; 5x5 so that a picture at
 * about half scale still shows the centre's class at the centre's pixel. */
static int lane_row(int k) { return 700 + 5 * k; }
#define LANE_COL 20
/* The occupancy column: occ row 50, col 150 -> lane rows 300..301, cols 350..351. */
#define OCC_R 50
#define OCC_C 150
/* Risk 1.0 at lane (250, 150), 0.5 at lane (250, 160). */

static uint8_t cam_px(int cam, int u, int v, int ch)
{
    return (uint8_t)(ch == 0 ? u / 3 : ch == 1 ? v / 2 : 40 + cam * 20);
}

static void make_frame(frame *f)
{
    memset(f, 0, sizeof *f);
    pvm_meteor_out *o = &f->o;
    o->lanes = malloc((size_t)PVM_METEOR_BEV_H * PVM_METEOR_BEV_W);
    o->occupancy = calloc((size_t)PVM_METEOR_OCC_Z * PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY, 1);
    o->risk = calloc((size_t)PVM_METEOR_DET_H * PVM_METEOR_DET_W, sizeof(float));
    assert_non_null(o->lanes);
    assert_non_null(o->occupancy);
    assert_non_null(o->risk);
    memset(o->lanes, 1, (size_t)PVM_METEOR_BEV_H * PVM_METEOR_BEV_W);       /* road */
    for (int k = 0; k < PVM_METEOR_LANE_CLS; k++)
        for (int dr = -2; dr <= 2; dr++)
            for (int dc = -2; dc <= 2; dc++)
                o->lanes[(lane_row(k) + dr) * PVM_METEOR_BEV_W + LANE_COL + dc] = (uint8_t)k;
    const size_t plane = (size_t)PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY;
    o->occupancy[3 * plane + OCC_R * PVM_METEOR_OCC_XY + OCC_C] = 2;        /* vehicle, low */
    o->occupancy[10 * plane + OCC_R * PVM_METEOR_OCC_XY + OCC_C] = 4;       /* pedestrian, high */
    o->risk[(250 - 200) * PVM_METEOR_DET_W + (150 - 125)] = 1.0f;
    o->risk[(250 - 200) * PVM_METEOR_DET_W + (160 - 125)] = 0.5f;

    /* A moving vehicle ahead-left with a future, a stationary VRU behind-right. */
    f->b3[0] = (pvm_meteor_box3d){ .cls = 0, .score = 0.8f, .x = 30, .y = 10, .length = 4.6f,
                                   .width = 2.0f, .yaw = 0.3f, .yaw_raw = 0.3f, .future_mode = 1 };
    for (int k = 0; k < 6; k++) {
        f->b3[0].future[k][0] = 30.0f + 2.0f * (float)(k + 1);
        f->b3[0].future[k][1] = 10.0f + 0.6f * (float)(k + 1);
    }
    f->b3[1] = (pvm_meteor_box3d){ .cls = 1, .score = 0.5f, .x = -20, .y = -15, .length = 6.0f,
                                   .width = 4.0f, .yaw = -0.5f, .stationary = true, .future_mode = -1 };
    o->boxes3d = f->b3;
    o->n3d = 2;
    f->b2[0] = (pvm_meteor_box2d){ .cam = 0, .cls = 1, .score = 0.9f, .cx = 384, .cy = 216, .w = 200, .h = 100 };
    f->b2[1] = (pvm_meteor_box2d){ .cam = 2, .cls = 0, .score = 0.6f, .cx = 500, .cy = 300, .w = 120, .h = 80 };
    o->boxes2d = f->b2;
    o->n2d = 2;
    f->unk[0] = (pvm_meteor_unknown){ .cam = 2, .box = 1, .score = 0.6f, .x = 15, .y = -20, .from_ground_ray = true };
    o->unknowns = f->unk;
    o->nunk = 1;
    o->tl_prob[3] = 0.93f;
    o->tl_state = 3;
    o->ego.mode = 0;
    for (int k = 0; k < 6; k++) {
        o->ego.waypoints[k][0] = 3.0f * (float)(k + 1);
        o->ego.waypoints[k][1] = 0.1f * (float)(k * k);
        o->ego.ribbon[k][0] = 3.0f * (float)(k + 1);
        o->ego.ribbon[k][1] = 0.08f * (float)(k * k);
    }
    o->ego.steer = 0.02f;
    o->ego.accel = -0.4f;
    o->ego.brake_prob = 0.2f;

    for (int c = 0; c < PVM_METEOR_NCAM; c++) {
        if (c == ABSENT_CAM) continue;
        f->imgs[c] = malloc((size_t)IW * IH * 3);
        assert_non_null(f->imgs[c]);
        for (int v = 0; v < IH; v++)
            for (int u = 0; u < IW; u++)
                for (int ch = 0; ch < 3; ch++) f->imgs[c][((size_t)v * IW + u) * 3 + ch] = cam_px(c, u, v, ch);
    }
}

static void free_frame(frame *f)
{
    free(f->o.lanes);
    free(f->o.occupancy);
    free(f->o.risk);
    for (int c = 0; c < PVM_METEOR_NCAM; c++) free(f->imgs[c]);
}

typedef struct pic { uint8_t *px; int w, h; pvm_meteor_render_layout l; } pic;

static pic render(const frame *f, int width_px, bool generated)
{
    pic p;
    pvc_msg msg;
    pv_status st = pvm_meteor_render(&f->o, (const uint8_t *const *)f->imgs, width_px, generated,
                                     &p.px, &p.w, &p.h, &msg);
    if (st != PV_OK) fail_msg("render: %s", msg.text);
    assert_int_equal(pvm_meteor_render_layout_make(width_px, &p.l, &msg), PV_OK);
    assert_int_equal(p.w, p.l.width);
    assert_int_equal(p.h, p.l.height);
    return p;
}

static const uint8_t *pix(const pic *p, int x, int y)
{
    assert_true(x >= 0 && x < p->w && y >= 0 && y < p->h);
    return p->px + ((size_t)y * (size_t)p->w + (size_t)x) * 3;
}

static void expect_rgb(const pic *p, int x, int y, const uint8_t want[3], const char *what)
{
    const uint8_t *q = pix(p, x, y);
    if (memcmp(q, want, 3) != 0)
        fail_msg("%s at (%d, %d): got %u %u %u, want %u %u %u", what, x, y, q[0], q[1], q[2],
                 want[0], want[1], want[2]);
}

/* World (x forward, y left) -> the picture pixel that holds it (render.h's mapping, with the
 * renderer's order of operations so that floor() agrees at pixel borders). */
static void world_px(const pic *p, double x, double y, int *col, int *row)
{
    double sx = p->l.bev.w / 100.0, sy = p->l.bev.h / 160.0;
    *col = (int)floor(p->l.bev.x + (50.0 - y) * sx);
    *row = (int)floor(p->l.bev.y + (80.0 - x) * sy);
}

/* The pixel that holds the centre of lane cell (r, c). */
static void cell_px(const pic *p, int r, int c, int *col, int *row)
{
    *col = p->l.bev.x + (int)floor((c + 0.5) * p->l.bev.w / PVM_METEOR_BEV_W);
    *row = p->l.bev.y + (int)floor((r + 0.5) * p->l.bev.h / PVM_METEOR_BEV_H);
}

static void blend(const uint8_t base[3], const uint8_t ink[3], int a256, uint8_t out[3])
{
    for (int k = 0; k < 3; k++) out[k] = (uint8_t)(base[k] + ((ink[k] - base[k]) * a256 + 128) / 256);
}

/* ---- checks shared by the sizes ---------------------------------------------------------------- */
static void check_box3d(const pic *p, const pvm_meteor_box3d *b)
{
    uint8_t ink[3];
    assert_true(pvm_meteor_render_box3d_rgb(b->cls, ink));
    double cs = cos(b->yaw), sn = sin(b->yaw), hl = 0.5 * b->length, hw = 0.5 * b->width;
    int c, r;
    world_px(p, b->x, b->y, &c, &r);
    expect_rgb(p, c, r, ink, "box centre (heading tick)");
    world_px(p, b->x + hl * cs, b->y + hl * sn, &c, &r);
    expect_rgb(p, c, r, ink, "box front middle (heading tick end)");
    static const double su[4] = { 1, 1, -1, -1 }, sv[4] = { 1, -1, -1, 1 };
    for (int i = 0; i < 4; i++) {
        world_px(p, b->x + su[i] * hl * cs - sv[i] * hw * sn, b->y + su[i] * hl * sn + sv[i] * hw * cs, &c, &r);
        expect_rgb(p, c, r, ink, "box corner");
    }
}

static void check_lanes(const pic *p)
{
    for (int k = 0; k < PVM_METEOR_LANE_CLS; k++) {
        uint8_t want[3];
        assert_true(pvm_meteor_render_lane_rgb(k, want));
        int c, r;
        cell_px(p, lane_row(k), LANE_COL, &c, &r);
        expect_rgb(p, c, r, want, "lane class cell");
    }
}

/* Mean of the synthetic image over the input rectangle a tile pixel covers. */
static double area_mean(int cam, int i, int j, const pvm_meteor_render_rect *t, int ch)
{
    double u0 = (double)i * IW / t->w, u1 = (double)(i + 1) * IW / t->w;
    double v0 = (double)j * IH / t->h, v1 = (double)(j + 1) * IH / t->h;
    double s = 0.0, wsum = 0.0;
    for (int v = (int)floor(v0); v < (int)ceil(v1) && v < IH; v++)
        for (int u = (int)floor(u0); u < (int)ceil(u1) && u < IW; u++) {
            double w = (fmin(u1, u + 1.0) - fmax(u0, (double)u)) * (fmin(v1, v + 1.0) - fmax(v0, (double)v));
            s += w * cam_px(cam, u, v, ch);
            wsum += w;
        }
    return s / wsum;
}

static void check_tiles(const pic *p, const frame *f)
{
    /* the absent camera: flat grey away from its name plate and "NO IMAGE" */
    const pvm_meteor_render_rect *t = &p->l.cam[ABSENT_CAM];
    for (int j = t->h * 3 / 4; j < t->h; j += 3)
        for (int i = 0; i < t->w; i += 7)
            expect_rgb(p, t->x + i, t->y + j, PVM_METEOR_RENDER_ABSENT_RGB, "absent camera tile");
    /* present cameras: the area average of their image (sampled in the lower right quarter,
     * clear of boxes and labels) */
    const int cams[2] = { 3, 7 };
    for (int n = 0; n < 2; n++) {
        t = &p->l.cam[cams[n]];
        for (int j = t->h * 3 / 4; j < t->h; j += 5)
            for (int i = t->w * 3 / 4; i < t->w; i += 5)
                for (int ch = 0; ch < 3; ch++) {
                    double want = area_mean(cams[n], i, j, t, ch);
                    int got = pix(p, t->x + i, t->y + j)[ch];
                    if (fabs(got - want) > 0.5 + 1e-9)
                        fail_msg("cam %d tile (%d, %d) ch %d: %d, area mean %.3f", cams[n], i, j, ch, got, want);
                }
    }
    /* 2D boxes: edges at the scaled coordinates, class colours; class 0 twice as thick */
    for (int k = 0; k < f->o.n2d; k++) {
        const pvm_meteor_box2d *b = &f->o.boxes2d[k];
        t = &p->l.cam[b->cam];
        double sx = (double)t->w / IW, sy = (double)t->h / IH;
        int x0 = (int)floor(t->x + (b->cx - 0.5 * b->w) * sx), x1 = (int)floor(t->x + (b->cx + 0.5 * b->w) * sx);
        int y0 = (int)floor(t->y + (b->cy - 0.5 * b->h) * sy), y1 = (int)floor(t->y + (b->cy + 0.5 * b->h) * sy);
        int ym = (y0 + y1) / 2, xm = (x0 + x1) / 2;
        uint8_t ink[3];
        assert_true(pvm_meteor_render_box2d_rgb(b->cls, ink));
        int lw = b->cls == 0 ? 2 * p->l.line_px : p->l.line_px, off = (lw - 1) / 2;
        for (int d = -off; d < lw - off; d++) {
            expect_rgb(p, x0 + d, ym, ink, "2D box left edge");
            expect_rgb(p, x1 + d, ym, ink, "2D box right edge");
            expect_rgb(p, xm, y0 + d, ink, "2D box top edge");
            expect_rgb(p, xm, y1 + d, ink, "2D box bottom edge");
        }
        /* just outside the stroke: the image, not the box */
        assert_memory_not_equal(pix(p, x0 - off - 2, ym), ink, 3);
        assert_memory_not_equal(pix(p, xm, y1 + lw - off + 1), ink, 3);
        /* inside: the image */
        assert_memory_not_equal(pix(p, xm, ym), ink, 3);
    }
}

/* ---- tests --------------------------------------------------------------------------------------- */
static void test_default_picture(void **state)
{
    (void)state;
    frame f;
    make_frame(&f);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pic p = render(&f, 0, true);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("meteor render %dx%d: %.1f ms\n", p.w, p.h,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    assert_int_equal(p.w, PVM_METEOR_RENDER_DEFAULT_WIDTH);
    assert_int_equal(p.l.bev.w, 500);
    assert_int_equal(p.l.bev.h, 800);
    /* inside the picture, beside each other, not overlapping */
    assert_true(p.l.cam[0].x >= p.l.bev.x + p.l.bev.w);
    assert_true(p.l.cam[1].x + p.l.cam[1].w <= p.w);
    assert_true(p.l.legend.y >= p.l.bev.y + p.l.bev.h);
    assert_true(p.l.cam[7].y + p.l.cam[7].h <= p.l.legend.y);

    check_box3d(&p, &f.b3[0]);
    check_box3d(&p, &f.b3[1]);
    check_lanes(&p);
    check_tiles(&p, &f);

    uint8_t road[3], ink[3], want[3], occ4[3];
    pvm_meteor_render_lane_rgb(1, road);

    /* the stationary VRU's inside (off the tick): road blended at 0.5 with its colour; the
     * moving vehicle's inside stays road */
    pvm_meteor_render_box3d_rgb(1, ink);
    blend(road, ink, 128, want);
    int c, r;
    world_px(&p, -20.0 - 1.0 * cos(-0.5) + 1.0 * sin(-0.5), -15.0 - 1.0 * sin(-0.5) - 1.0 * cos(-0.5), &c, &r);
    expect_rgb(&p, c, r, want, "stationary box inside");
    world_px(&p, 30.0 - 1.0 * cos(0.3) + 0.6 * sin(0.3), 10.0 - 1.0 * sin(0.3) - 0.6 * cos(0.3), &c, &r);
    expect_rgb(&p, c, r, road, "moving box inside");

    /* occupancy: the highest voxel's class (4 over 2), tinted at 0.5 */
    pvm_meteor_render_occ_rgb(4, occ4);
    for (int k = 0; k < 3; k++) want[k] = (uint8_t)((road[k] + occ4[k] + 1) / 2);
    cell_px(&p, 200 + 2 * OCC_R, 50 + 2 * OCC_C, &c, &r);
    expect_rgb(&p, c, r, want, "occupancy tint");
    expect_rgb(&p, c + 1, r + 1, want, "occupancy tint (second cell)");
    cell_px(&p, 200 + 2 * OCC_R, 50 + 2 * OCC_C + 2, &c, &r);
    expect_rgb(&p, c, r, road, "free occupancy column");

    /* risk: alpha 0.55 * risk */
    static const uint8_t red[3] = { 255, 30, 30 };
    cell_px(&p, 250, 150, &c, &r);
    blend(road, red, (int)lrintf(0.55f * 1.0f * 256.0f), want);
    expect_rgb(&p, c, r, want, "risk 1.0");
    cell_px(&p, 250, 160, &c, &r);
    blend(road, red, (int)lrintf(0.55f * 0.5f * 256.0f), want);
    expect_rgb(&p, c, r, want, "risk 0.5");

    /* the unknown obstacle's X: its centre pixel in the class-0 ink */
    pvm_meteor_render_box2d_rgb(0, ink);
    world_px(&p, 15, -20, &c, &r);
    expect_rgb(&p, c, r, ink, "unknown obstacle marker");

    /* the ego car at the origin, white (no brake) */
    static const uint8_t white[3] = { 255, 255, 255 };
    world_px(&p, -1.0, 0.5, &c, &r);
    expect_rgb(&p, c, r, white, "ego car");

    /* title band: its ink is there, and "generated" writes more of it */
    uint8_t tink[3];
    pvio_bev_rgb(PVIO_BEV_INK_TITLE, tink);
    int lit_gen = 0, lit_plain = 0;
    pic q = render(&f, 0, false);
    for (int y = 0; y < p.l.band; y++)
        for (int x = 0; x < p.w; x++) {
            lit_gen += memcmp(pix(&p, x, y), tink, 3) == 0;
            lit_plain += memcmp(pix(&q, x, y), tink, 3) == 0;
        }
    assert_true(lit_plain > 100);
    assert_true(lit_gen > lit_plain + 500);
    /* below the band the two pictures are the same */
    size_t off = (size_t)p.l.band * (size_t)p.w * 3;
    assert_memory_equal(p.px + off, q.px + off, (size_t)p.w * (size_t)p.h * 3 - off);

    /* brake on: the car turns red */
    f.o.ego.brake = true;
    pic b = render(&f, 0, true);
    world_px(&b, -1.0, 0.5, &c, &r);
    assert_memory_not_equal(pix(&b, c, r), white, 3);

    /* the picture for a human */
    void *png;
    size_t len;
    pvc_msg msg;
    assert_int_equal(pvio_png_encode_rgb(p.px, p.w, p.h, NULL, &png, &len, &msg), PV_OK);
    FILE *fp = fopen(g_png_path, "wb");
    if (fp) {
        fwrite(png, 1, len, fp);
        fclose(fp);
        printf("wrote %s\n", g_png_path);
    }
    pvc_free(png);
    pvc_free(p.px);
    pvc_free(q.px);
    pvc_free(b.px);
    free_frame(&f);
}

static void test_scaled(void **state)
{
    (void)state;
    frame f;
    make_frame(&f);
    const int widths[3] = { PVM_METEOR_RENDER_MIN_WIDTH, 1746, PVM_METEOR_RENDER_MAX_WIDTH };
    for (int i = 0; i < 3; i++) {
        pic p = render(&f, widths[i], true);
        assert_int_equal(p.w, widths[i]);
        double fct = (double)widths[i] / PVM_METEOR_RENDER_DEFAULT_WIDTH;
        assert_true(abs(p.l.bev.w - (int)lround(500 * fct)) <= 1);
        assert_true(p.l.cam[0].w <= IW && p.l.cam[0].h <= IH);
        if (widths[i] == 1746) {
            assert_int_equal(p.l.bev.w, 750);
            assert_int_equal(p.l.bev.h, 1200);
            assert_int_equal(p.l.text_scale, 2);
        }
        check_box3d(&p, &f.b3[0]);
        check_box3d(&p, &f.b3[1]);
        check_lanes(&p);
        check_tiles(&p, &f);
        pvc_free(p.px);
    }
    free_frame(&f);
}

/* No layers, no cameras, NaN and huge numbers everywhere: still a picture. */
static void test_garbage(void **state)
{
    (void)state;
    frame f;
    make_frame(&f);
    free(f.o.lanes);
    free(f.o.occupancy);
    free(f.o.risk);
    f.o.lanes = NULL;
    f.o.occupancy = NULL;
    f.o.risk = NULL;
    const float bad[4] = { NAN, INFINITY, -1e30f, 3e38f };
    pvm_meteor_box3d b3[8];
    pvm_meteor_box2d b2[8];
    pvm_meteor_unknown u[8];
    for (int i = 0; i < 8; i++) {
        float v = bad[i % 4];
        b3[i] = (pvm_meteor_box3d){ .cls = i % 2, .x = v, .y = i < 4 ? 0.0f : v, .length = i < 2 ? 5.0f : v,
                                    .width = v, .yaw = i == 5 ? v : 0.1f, .stationary = i % 3 == 0,
                                    .future_mode = 0 };
        for (int k = 0; k < 6; k++) { b3[i].future[k][0] = v; b3[i].future[k][1] = 1e20f; }
        b2[i] = (pvm_meteor_box2d){ .cam = i, .cls = i, .cx = v, .cy = 10, .w = v, .h = -v };
        u[i] = (pvm_meteor_unknown){ .x = v, .y = -v };
    }
    b3[1] = (pvm_meteor_box3d){ .cls = 0, .x = 0, .y = 0, .length = 900, .width = 900, .stationary = true };
    f.o.boxes3d = b3;
    f.o.n3d = 8;
    f.o.boxes2d = b2;
    f.o.n2d = 8;
    f.o.unknowns = u;
    f.o.nunk = 8;
    for (int k = 0; k < 6; k++) {
        f.o.ego.waypoints[k][0] = bad[k % 4];
        f.o.ego.ribbon[k][1] = bad[(k + 1) % 4];
    }
    f.o.ego.steer = NAN;
    f.o.tl_prob[3] = NAN;
    uint8_t *rgb;
    int w, h;
    pvc_msg msg;
    assert_int_equal(pvm_meteor_render(&f.o, NULL, 0, false, &rgb, &w, &h, &msg), PV_OK);
    /* lanes absent: class 0; every camera absent: grey */
    pic p = { rgb, w, h, { 0 } };
    assert_int_equal(pvm_meteor_render_layout_make(0, &p.l, &msg), PV_OK);
    uint8_t c0[3], veh[3], want[3];
    pvm_meteor_render_lane_rgb(0, c0);
    pvm_meteor_render_box3d_rgb(0, veh);
    blend(c0, veh, 128, want);      /* under the 900 m stationary box */
    int c, r;
    cell_px(&p, lane_row(4), LANE_COL, &c, &r);
    expect_rgb(&p, c, r, want, "lanes NULL: class 0");
    for (int i = 0; i < PVM_METEOR_NCAM; i++)
        expect_rgb(&p, p.l.cam[i].x + p.l.cam[i].w - 2, p.l.cam[i].y + p.l.cam[i].h - 2,
                   PVM_METEOR_RENDER_ABSENT_RGB, "imgs NULL: grey tile");
    pvc_free(rgb);
    free_frame(&f);
}

static void expect_einput(const pvm_meteor_out *o, const uint8_t *const *imgs, int width,
                          const char *needle)
{
    uint8_t *rgb = (uint8_t *)1;
    int w = 7, h = 7;
    pvc_msg msg;
    pv_status st = pvm_meteor_render(o, imgs, width, false, &rgb, &w, &h, &msg);
    if (st != PV_EINPUT) fail_msg("want PV_EINPUT for %s, got %d", needle, st);
    if (!strstr(msg.text, needle)) fail_msg("message '%s' does not name '%s'", msg.text, needle);
    assert_null(rgb);
    assert_int_equal(w, 0);
    assert_int_equal(h, 0);
}

static void test_invalid_args(void **state)
{
    (void)state;
    frame f;
    make_frame(&f);
    const uint8_t *const *imgs = (const uint8_t *const *)f.imgs;
    expect_einput(NULL, imgs, 0, "o is NULL");
    expect_einput(&f.o, imgs, 599, "width_px = 599");
    expect_einput(&f.o, imgs, PVM_METEOR_RENDER_MAX_WIDTH + 1, "width_px");
    expect_einput(&f.o, imgs, -5, "width_px = -5");
    pvm_meteor_out o = f.o;
    o.n3d = -1;
    expect_einput(&o, imgs, 0, "o->n3d = -1");
    o = f.o;
    o.boxes2d = NULL;
    expect_einput(&o, imgs, 0, "o->n2d = 2");
    o = f.o;
    o.nunk = PVM_METEOR_RENDER_MAX_ITEMS + 1;
    expect_einput(&o, imgs, 0, "o->nunk");
    pvm_meteor_box3d b3[2] = { f.b3[0], f.b3[1] };
    b3[1].cls = 2;
    o = f.o;
    o.boxes3d = b3;
    expect_einput(&o, imgs, 0, "o->boxes3d[1].cls = 2");
    pvm_meteor_box2d b2[2] = { f.b2[0], f.b2[1] };
    b2[0].cam = 8;
    o = f.o;
    o.boxes2d = b2;
    expect_einput(&o, imgs, 0, "o->boxes2d[0].cam = 8");
    b2[0].cam = 0;
    b2[1].cls = 10;
    expect_einput(&o, imgs, 0, "o->boxes2d[1].cls = 10");
    o = f.o;
    o.tl_state = 4;
    expect_einput(&o, imgs, 0, "o->tl_state = 4");
    o = f.o;
    o.ego.mode = -1;
    expect_einput(&o, imgs, 0, "o->ego.mode = -1");
    /* missing out-params */
    pvc_msg msg;
    int w, h;
    uint8_t *rgb;
    assert_int_equal(pvm_meteor_render(&f.o, imgs, 0, false, NULL, &w, &h, &msg), PV_EINPUT);
    assert_int_equal(pvm_meteor_render(&f.o, imgs, 0, false, &rgb, NULL, &h, &msg), PV_EINPUT);
    assert_null(rgb);
    assert_int_equal(pvm_meteor_render(&f.o, imgs, 0, false, &rgb, &w, NULL, &msg), PV_EINPUT);
    assert_int_equal(pvm_meteor_render_layout_make(0, NULL, &msg), PV_EINPUT);
    free_frame(&f);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    frame f;
    make_frame(&f);
    int failures = 0;
    for (long k = 1; k < 100; k++) {
        uint8_t *rgb = NULL;
        int w, h;
        pvc_msg msg;
        pvc_alloc_test_begin(k);
        pv_status st = pvm_meteor_render(&f.o, (const uint8_t *const *)f.imgs, 0, true, &rgb, &w, &h, &msg);
        bool fired = pvc_alloc_failed();
        if (!fired) {
            assert_int_equal(st, PV_OK);
            pvc_free(rgb);
            assert_int_equal(pvc_alloc_live(), 0);
            pvc_alloc_test_end();
            break;
        }
        if (st != PV_ENOMEM) fail_msg("allocation %ld failed: status %d (%s)", k, st, msg.text);
        assert_null(rgb);
        assert_int_equal(pvc_alloc_live(), 0);
        pvc_alloc_test_end();
        failures++;
    }
    assert_int_equal(failures, 3);      /* picture, occupancy projection, scaling row */
    free_frame(&f);
}

/* io/draw on its own: clipping, blending, the line's end pixels, the disc. */
static void test_draw(void **state)
{
    (void)state;
    enum { CW = 40, CH = 30 };
    uint8_t px[CW * CH * 3];
    memset(px, 0, sizeof px);
    pvio_canvas c = pvio_canvas_make(px, CW, CH);
    c.x0 = 5; c.y0 = 5; c.x1 = 30; c.y1 = 20;
    static const uint8_t red[3] = { 255, 0, 0 }, grey[3] = { 100, 100, 100 };
    pvio_draw_fill(&c, -100, -100, 100, 100, grey);
    for (int y = 0; y < CH; y++)
        for (int x = 0; x < CW; x++) {
            bool in = x >= 5 && x < 30 && y >= 5 && y < 20;
            assert_int_equal(px[(y * CW + x) * 3], in ? 100 : 0);
        }
    pvio_draw_blend(&c, 5, 5, 6, 6, red, 0.5);
    assert_int_equal(px[(5 * CW + 5) * 3 + 0], 100 + (155 * 128 + 128) / 256);
    assert_int_equal(px[(5 * CW + 5) * 3 + 1], 100 - (100 * 128 - 128) / 256);
    pvio_draw_blend(&c, 6, 5, 7, 6, red, NAN);
    assert_int_equal(px[(5 * CW + 6) * 3], 100);
    pvio_draw_line(&c, 7.9, 8.2, 20.5, 15.7, 1, red);
    assert_memory_equal(&px[(8 * CW + 7) * 3], red, 3);
    assert_memory_equal(&px[(15 * CW + 20) * 3], red, 3);
    pvio_draw_line(&c, -1e300, 0, 1e300, 10, 3, red);       /* clipped, no overflow */
    pvio_draw_line(&c, NAN, 0, 10, 10, 1, red);
    pvio_draw_line(&c, 0, INFINITY, 10, 10, 1, red);
    for (int x = 0; x < CW; x++) assert_int_equal(px[(2 * CW + x) * 3], 0);   /* outside the clip */
    pvio_draw_disc(&c, 25, 12, 2, red);
    assert_memory_equal(&px[(12 * CW + 27) * 3], red, 3);
    assert_memory_equal(&px[(14 * CW + 25) * 3], red, 3);
    assert_memory_not_equal(&px[(14 * CW + 27) * 3], red, 3);   /* 4 + 4 > 2^2 + 2 */
}

int main(int argc, char **argv)
{
    if (argc > 0 && argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        if (slash)
            snprintf(g_png_path, sizeof g_png_path, "%.*s/meteor_render.png", (int)(slash - argv[0]), argv[0]);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_picture),
        cmocka_unit_test(test_scaled),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_draw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
