/* meteor picture: layout, the BEV panel's layers, the camera tiles, the legend (render.h). */
#include "models/meteor/render.h"
#include "io/bev_png.h"
#include "io/draw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BASE_W      PVM_METEOR_RENDER_DEFAULT_WIDTH
#define BASE_GAP    6.0
#define BASE_BEV_W  500.0
#define BASE_BEV_H  800.0
#define EGO_L       4.6
#define EGO_W       1.9
#define MAX_BOX_M   1000.0      /* longer sides are not a box: skipped */


/* ---- inks ----------------------------------------------------------------------------------- */
/* Lanes are the dim background; area classes muted, thin classes (3..6) bright so they read at
 * one pixel per cell; boxes and paths brighter still on top. */
static const uint8_t k_lane[PVM_METEOR_LANE_CLS][3] = {
    {  22,  24,  30 },  /* 0 unlabeled */
    {  64,  66,  74 },  /* 1 road */
    { 108,  94,  78 },  /* 2 sidewalk */
    { 196, 196, 150 },  /* 3 crosswalk */
    { 236, 236, 236 },  /* 4 laneline */
    { 250, 100,  70 },  /* 5 stopline */
    { 255, 176,   0 },  /* 6 road_edge */
    { 140, 140, 210 },  /* 7 marking */
    {  52,  86,  66 },  /* 8 parking_lot */
};
static const char *const k_lane_names[PVM_METEOR_LANE_CLS] = {
    "UNLABELED", "ROAD", "SIDEWALK", "CROSSWALK", "LANELINE", "STOPLINE", "ROAD_EDGE", "MARKING",
    "PARKING_LOT",
};
static const uint8_t k_lane_invalid[3] = { 255, 0, 255 };
static const uint8_t k_occ[PVM_METEOR_OCC_C][3] = {
    {   0,   0,   0 },  /* 0 free: never drawn */
    { 230, 140,  40 },  /* 1 obstacle */
    {  60, 130, 255 },  /* 2 vehicle */
    { 190,  90, 255 },  /* 3 two-wheeler */
    { 255,  90, 160 },  /* 4 pedestrian */
    { 200, 200,  80 }, {  80, 200, 200 }, { 160, 110,  70 }, { 110, 200, 110 }, { 200, 120, 120 },
};
static const uint8_t k_box3d[2][3] = { { 0, 224, 255 }, { 255, 60, 200 } };
static const uint8_t k_box2d[PVM_METEOR_2D_CLS][3] = {
    { 255, 230,   0 },  /* 0 obstacle (unknown) */
    {   0, 224, 255 },  /* 1 car */
    {   0, 150, 255 },  /* 2 truck */
    { 130, 140, 255 },  /* 3 bus */
    { 255, 150, 220 },  /* 4 bicycle */
    { 255,  60, 200 },  /* 5 motorcycle */
    { 255, 100, 100 },  /* 6 pedestrian */
    { 180, 180, 180 },  /* 7 road paint */
    {  80, 255, 120 },  /* 8 traffic light */
    { 255, 160,  40 },  /* 9 traffic sign */
};
static const uint8_t k_tl[4][3] = { { 130, 130, 130 }, { 40, 220, 90 }, { 250, 210, 40 }, { 240, 50, 40 } };
static const char *const k_tl_names[4] = { "NONE", "GREEN", "YELLOW", "RED" };
static const uint8_t k_risk[3] = { 255, 30, 30 };
static const uint8_t k_ribbon[3] = { 120, 200, 140 };
static const uint8_t k_path[3] = { 90, 255, 130 };
static const uint8_t k_future[3] = { 170, 240, 255 };
static const uint8_t k_ego[3] = { 255, 255, 255 };
static const uint8_t k_brake[3] = { 255, 50, 50 };
static const uint8_t k_plate[3] = { 14, 16, 22 };
static const uint8_t k_text[3] = { 235, 235, 235 };
static const uint8_t k_bg[3] = { 30, 33, 42 };
const uint8_t PVM_METEOR_RENDER_ABSENT_RGB[3] = { 96, 96, 96 };

static bool ink(const uint8_t (*tab)[3], int n, int i, uint8_t rgb[3])
{
    if (i < 0 || i >= n) return false;
    memcpy(rgb, tab[i], 3);
    return true;
}
bool pvm_meteor_render_lane_rgb(int c, uint8_t rgb[3]) { return ink(k_lane, PVM_METEOR_LANE_CLS, c, rgb); }
bool pvm_meteor_render_occ_rgb(int c, uint8_t rgb[3])
{
    return c >= 1 && ink(k_occ, PVM_METEOR_OCC_C, c, rgb);
}
bool pvm_meteor_render_box3d_rgb(int c, uint8_t rgb[3]) { return ink(k_box3d, 2, c, rgb); }
bool pvm_meteor_render_box2d_rgb(int c, uint8_t rgb[3]) { return ink(k_box2d, PVM_METEOR_2D_CLS, c, rgb); }
bool pvm_meteor_render_tl_rgb(int s, uint8_t rgb[3]) { return ink(k_tl, 4, s, rgb); }

/* ---- layout ---------------------------------------------------------------------------------- */
/* The legend's entries: a swatch and a name. */
typedef struct legend_item { const uint8_t *rgb; const char *name; } legend_item;
static int legend_items(legend_item *it)
{
    int n = 0;
    for (int c = 1; c < PVM_METEOR_LANE_CLS; c++) it[n++] = (legend_item){ k_lane[c], k_lane_names[c] };
    it[n++] = (legend_item){ k_occ[2], "OCCUPIED (TINT)" };
    it[n++] = (legend_item){ k_risk, "RISK" };
    it[n++] = (legend_item){ k_box3d[0], "VEHICLE" };
    it[n++] = (legend_item){ k_box3d[1], "VRU" };
    it[n++] = (legend_item){ k_box3d[0], "FILLED: STATIONARY" };
    it[n++] = (legend_item){ k_future, "FUTURE" };
    it[n++] = (legend_item){ k_box2d[0], "UNKNOWN OBSTACLE" };
    it[n++] = (legend_item){ k_ribbon, "EGO RIBBON" };
    it[n++] = (legend_item){ k_path, "EGO PATH" };
    return n;
}
#define LEGEND_MAX 24

static int legend_cell_w(const legend_item *it, int n, int ts)
{
    int tw = 0;
    for (int i = 0; i < n; i++) tw = PVC_MAX(tw, pvio_text_width(it[i].name, ts));
    return (PVIO_BEV_GLYPH_H + 3) * ts + tw + 8 * ts;
}

pv_status pvm_meteor_render_layout_make(int width_px, pvm_meteor_render_layout *l, pvc_msg *msg)
{
    if (!l) return pvc_fail(msg, PV_EINPUT, "meteor render: layout is NULL");
    memset(l, 0, sizeof *l);
    int W = width_px ? width_px : BASE_W;
    if (W < PVM_METEOR_RENDER_MIN_WIDTH || W > PVM_METEOR_RENDER_MAX_WIDTH)
        return pvc_fail(msg, PV_EINPUT, "meteor render: width_px = %d (must be 0 for %d, or %d..%d)",
                        width_px, BASE_W, PVM_METEOR_RENDER_MIN_WIDTH, PVM_METEOR_RENDER_MAX_WIDTH);
    double f = (double)W / BASE_W;
    int g = (int)PVC_MAX(2L, lround(BASE_GAP * f));
    int ts = (int)PVC_MAX(1L, lround(f));
    l->width = W;
    l->text_scale = ts;
    l->line_px = 1 + W / 1000;
    l->band = PVIO_BEV_BAND_ROWS(ts);
    l->bev = (pvm_meteor_render_rect){ g, l->band + g, (int)lround(BASE_BEV_W * f),
                                       (int)lround(BASE_BEV_H * f) };
    int tw = (W - l->bev.w - 4 * g) / 2;
    int th = (int)lround(tw * (double)PVM_METEOR_IMG_H / PVM_METEOR_IMG_W);
    for (int i = 0; i < PVM_METEOR_NCAM; i++)
        l->cam[i] = (pvm_meteor_render_rect){ 2 * g + l->bev.w + (i % 2) * (tw + g),
                                              l->band + g + (i / 2) * (th + g), tw, th };
    int content = PVC_MAX(l->bev.h, 4 * th + 3 * g);
    legend_item it[LEGEND_MAX];
    int n = legend_items(it);
    int lw = W - 2 * g, cols = PVC_MAX(1, lw / legend_cell_w(it, n, ts));
    int rows = (n + cols - 1) / cols;
    l->legend = (pvm_meteor_render_rect){ g, l->band + g + content + g, lw,
                                          rows * (PVIO_BEV_GLYPH_H + 4) * ts + 2 * ts };
    l->height = l->legend.y + l->legend.h + g;
    return PV_OK;
}

/* ---- validation ----------------------------------------------------------------------------- */
static pv_status check_out(const pvm_meteor_out *o, pvc_msg *msg)
{
    if (!o) return pvc_fail(msg, PV_EINPUT, "meteor render: o is NULL");
    const struct { const char *name; int n; const void *p; } lists[3] = {
        { "n3d", o->n3d, o->boxes3d }, { "n2d", o->n2d, o->boxes2d }, { "nunk", o->nunk, o->unknowns },
    };
    for (int i = 0; i < 3; i++) {
        if (lists[i].n < 0 || lists[i].n > PVM_METEOR_RENDER_MAX_ITEMS)
            return pvc_fail(msg, PV_EINPUT, "meteor render: o->%s = %d (must be 0..%d)",
                            lists[i].name, lists[i].n, PVM_METEOR_RENDER_MAX_ITEMS);
        if (lists[i].n > 0 && !lists[i].p)
            return pvc_fail(msg, PV_EINPUT, "meteor render: o->%s = %d but its array is NULL",
                            lists[i].name, lists[i].n);
    }
    for (int i = 0; i < o->n3d; i++)
        if (o->boxes3d[i].cls < 0 || o->boxes3d[i].cls > 1)
            return pvc_fail(msg, PV_EINPUT, "meteor render: o->boxes3d[%d].cls = %d (must be 0 "
                            "vehicle or 1 VRU)", i, o->boxes3d[i].cls);
    for (int i = 0; i < o->n2d; i++) {
        const pvm_meteor_box2d *b = &o->boxes2d[i];
        if (b->cam < 0 || b->cam >= PVM_METEOR_NCAM)
            return pvc_fail(msg, PV_EINPUT, "meteor render: o->boxes2d[%d].cam = %d (must be 0..%d)",
                            i, b->cam, PVM_METEOR_NCAM - 1);
        if (b->cls < 0 || b->cls >= PVM_METEOR_2D_CLS)
            return pvc_fail(msg, PV_EINPUT, "meteor render: o->boxes2d[%d].cls = %d (must be 0..%d)",
                            i, b->cls, PVM_METEOR_2D_CLS - 1);
    }
    if (o->tl_state < 0 || o->tl_state > 3)
        return pvc_fail(msg, PV_EINPUT, "meteor render: o->tl_state = %d (must be 0..3)", o->tl_state);
    if (o->ego.mode < 0 || o->ego.mode > 2)
        return pvc_fail(msg, PV_EINPUT, "meteor render: o->ego.mode = %d (must be 0..2)", o->ego.mode);
    return PV_OK;
}

/* ---- BEV panel ------------------------------------------------------------------------------ */
typedef struct bev {
    pvio_canvas c;          /* the picture, clipped to the panel */
    double x0, y0;          /* panel origin */
    double sx, sy;          /* pixels per metre across (y) and along (x) */
    int lw, ts;
} bev;

/* World (x forward, y left) -> continuous picture position. */
static void to_px(const bev *b, double x, double y, double *col, double *row)
{
    *col = b->x0 + (50.0 - y) * b->sx;
    *row = b->y0 + (80.0 - x) * b->sy;
}

static void line_w(const bev *b, double xa, double ya, double xb, double yb, int lw, const uint8_t rgb[3])
{
    double c0, r0, c1, r1;
    to_px(b, xa, ya, &c0, &r0);
    to_px(b, xb, yb, &c1, &r1);
    pvio_draw_line(&b->c, c0, r0, c1, r1, lw, rgb);
}

static void dot(const bev *b, double x, double y, int r, const uint8_t rgb[3])
{
    double c, w;
    to_px(b, x, y, &c, &w);
    if (pvio_draw_px_ok(c) && pvio_draw_px_ok(w)) pvio_draw_disc(&b->c, (int)floor(c), (int)floor(w), r, rgb);
}

/* Layers 1-3 in one pass: lane colour, occupancy tint, risk blend. occ_top: the projected
 * occupancy class per 0.4 m column (200 x 200) or NULL. */
static void draw_grid(const bev *b, const pvm_meteor_render_rect *r, const pvm_meteor_out *o,
                      const uint8_t *occ_top)
{
    for (int py = 0; py < r->h; py++) {
        int lr = (int)((long long)py * PVM_METEOR_BEV_H / r->h);
        uint8_t *p = b->c.px + ((size_t)(r->y + py) * (size_t)b->c.w + (size_t)r->x) * 3;
        for (int px = 0; px < r->w; px++, p += 3) {
            int lc = (int)((long long)px * PVM_METEOR_BEV_W / r->w);
            int cls = o->lanes ? o->lanes[(size_t)lr * PVM_METEOR_BEV_W + (size_t)lc] : 0;
            const uint8_t *base = cls < PVM_METEOR_LANE_CLS ? k_lane[cls] : k_lane_invalid;
            int v[3] = { base[0], base[1], base[2] };
            if (occ_top && lr >= 200 && lr < 600 && lc >= 50 && lc < 450) {
                int oc = occ_top[(size_t)((lr - 200) / 2) * PVM_METEOR_OCC_XY + (size_t)((lc - 50) / 2)];
                if (oc)
                    for (int k = 0; k < 3; k++) v[k] = (v[k] + k_occ[oc][k] + 1) / 2;
            }
            if (o->risk && lr >= 200 && lr < 600 && lc >= 125 && lc < 375) {
                float rk = o->risk[(size_t)(lr - 200) * PVM_METEOR_DET_W + (size_t)(lc - 125)];
                if (rk > 0.0f) {        /* NaN fails */
                    if (rk > 1.0f) rk = 1.0f;
                    int a = (int)lrintf((float)PVM_METEOR_RENDER_RISK_ALPHA * rk * 256.0f);
                    for (int k = 0; k < 3; k++) v[k] += ((k_risk[k] - v[k]) * a + 128) / 256;
                }
            }
            p[0] = (uint8_t)v[0];
            p[1] = (uint8_t)v[1];
            p[2] = (uint8_t)v[2];
        }
    }
}

/* The class of the highest non-free voxel of each (row, col) column; 0 when all are free. */
static void project_occ(const uint8_t *occ, uint8_t *top)
{
    const size_t plane = (size_t)PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY;
    memset(top, 0, plane);
    for (int z = 0; z < PVM_METEOR_OCC_Z; z++) {
        const uint8_t *o = occ + (size_t)z * plane;
        for (size_t i = 0; i < plane; i++)
            if (o[i] > 0 && o[i] < PVM_METEOR_OCC_C) top[i] = o[i];
    }
}

static bool finite2(float a, float b) { return isfinite(a) && isfinite(b); }

static void draw_ego_path(const bev *b, const pvm_meteor_ego *e)
{
    double px = 0.0, py = 0.0;
    for (int k = 0; k < 6; k++) {
        if (!finite2(e->ribbon[k][0], e->ribbon[k][1])) break;
        line_w(b, px, py, e->ribbon[k][0], e->ribbon[k][1], 3 * b->lw, k_ribbon);
        px = e->ribbon[k][0];
        py = e->ribbon[k][1];
    }
    px = py = 0.0;
    for (int k = 0; k < 6; k++) {
        if (!finite2(e->waypoints[k][0], e->waypoints[k][1])) break;
        line_w(b, px, py, e->waypoints[k][0], e->waypoints[k][1], b->lw, k_path);
        px = e->waypoints[k][0];
        py = e->waypoints[k][1];
        dot(b, px, py, 1 + b->lw, k_path);
    }
}

static void draw_future(const bev *b, const pvm_meteor_box3d *x)
{
    if (x->future_mode < 0 || x->stationary || !finite2(x->x, x->y)) return;
    double px = x->x, py = x->y;
    for (int k = 0; k < 6; k++) {
        if (!finite2(x->future[k][0], x->future[k][1])) return;
        line_w(b, px, py, x->future[k][0], x->future[k][1], b->lw, k_future);
        px = x->future[k][0];
        py = x->future[k][1];
    }
}

/* The inside of a rotated rectangle (pixel centres within it) blended towards rgb. */
static void fill_rotated(const bev *b, double cx, double cy, double hl, double hw, double yaw,
                         const uint8_t rgb[3], double alpha)
{
    double rad = hypot(hl, hw), c0, r0, c1, r1;
    to_px(b, cx + rad, cy + rad, &c0, &r0);
    to_px(b, cx - rad, cy - rad, &c1, &r1);
    if (!pvio_draw_px_ok(c0) || !pvio_draw_px_ok(r0) || !pvio_draw_px_ok(c1) || !pvio_draw_px_ok(r1)) return;
    int xa = PVC_MAX((int)floor(c0), b->c.x0), xb = PVC_MIN((int)ceil(c1), b->c.x1);
    int ya = PVC_MAX((int)floor(r0), b->c.y0), yb = PVC_MIN((int)ceil(r1), b->c.y1);
    double cs = cos(yaw), sn = sin(yaw);
    for (int y = ya; y < yb; y++) {
        double wx = 80.0 - (y + 0.5 - b->y0) / b->sy - cx;
        for (int x = xa; x < xb; x++) {
            double wy = 50.0 - (x + 0.5 - b->x0) / b->sx - cy;
            double u = wx * cs + wy * sn, v = -wx * sn + wy * cs;
            if (fabs(u) <= hl && fabs(v) <= hw) pvio_draw_blend(&b->c, x, y, x + 1, y + 1, rgb, alpha);
        }
    }
}

/* Outline (and for stationary boxes the filled inside), then the heading tick. */
static void draw_box3d(const bev *b, const pvm_meteor_box3d *x)
{
    if (!finite2(x->x, x->y) || !finite2(x->length, x->width) || !isfinite(x->yaw)) return;
    if (!(x->length > 0.0f && x->length <= MAX_BOX_M && x->width > 0.0f && x->width <= MAX_BOX_M)) return;
    const uint8_t *rgb = k_box3d[x->cls];
    double cs = cos((double)x->yaw), sn = sin((double)x->yaw);
    double hl = 0.5 * x->length, hw = 0.5 * x->width;
    if (x->stationary) fill_rotated(b, x->x, x->y, hl, hw, x->yaw, rgb, 0.5);
    static const double su[4] = { 1, 1, -1, -1 }, sv[4] = { 1, -1, -1, 1 };
    double wx[4], wy[4];
    for (int i = 0; i < 4; i++) {
        wx[i] = x->x + su[i] * hl * cs - sv[i] * hw * sn;
        wy[i] = x->y + su[i] * hl * sn + sv[i] * hw * cs;
    }
    for (int i = 0; i < 4; i++) line_w(b, wx[i], wy[i], wx[(i + 1) % 4], wy[(i + 1) % 4], b->lw, rgb);
    line_w(b, x->x, x->y, x->x + hl * cs, x->y + hl * sn, b->lw, rgb);
}

static void draw_unknown(const bev *b, const pvm_meteor_unknown *u)
{
    if (!finite2(u->x, u->y)) return;
    double c, r;
    to_px(b, u->x, u->y, &c, &r);
    double s = 2.0 + 2.0 * b->lw;
    pvio_draw_line(&b->c, c - s, r - s, c + s, r + s, b->lw, k_box2d[0]);
    pvio_draw_line(&b->c, c - s, r + s, c + s, r - s, b->lw, k_box2d[0]);
}

static void draw_ego_car(const bev *b, bool brake)
{
    double c0, r0, c1, r1;
    to_px(b, 0.5 * EGO_L, 0.5 * EGO_W, &c0, &r0);
    to_px(b, -0.5 * EGO_L, -0.5 * EGO_W, &c1, &r1);
    pvio_draw_fill(&b->c, (int)floor(c0), (int)floor(r0), (int)ceil(c1), (int)ceil(r1),
                   brake ? k_brake : k_ego);
    /* a dark notch at the front shows the heading */
    int mid = (int)floor(0.5 * (c0 + c1));
    pvio_draw_fill(&b->c, mid - b->lw, (int)floor(r0), mid + b->lw, (int)floor(r0) + 2 * b->lw, k_plate);
}

/* Text on a dark plate (ts pixels wider on every side), top-left at (x, y); the plate is clipped
 * to c, the text to the picture (callers keep it inside the panel). */
static void plate_text(const pvio_canvas *c, int x, int y, const char *s, int ts, const uint8_t rgb[3])
{
    int tw = pvio_text_width(s, ts);
    pvio_draw_fill(c, x - ts, y - ts, x + tw + ts, y + (PVIO_BEV_GLYPH_H + 1) * ts, k_plate);
    pvio_text_draw(c->px, c->w, c->h, x, y, s, ts, rgb);
}

static void draw_status(const bev *b, const pvm_meteor_render_rect *r, const pvm_meteor_out *o)
{
    int ts = b->ts, pad = 3 * ts, line = (PVIO_BEV_GLYPH_H + 4) * ts;
    char txt[128];
    /* the traffic light: disc and text on one plate in the top-left corner */
    snprintf(txt, sizeof txt, "TL %s %.2f", k_tl_names[o->tl_state], (double)o->tl_prob[o->tl_state]);
    int rad = 4 * ts, dx = r->x + pad + rad, dy = r->y + pad + rad, tx = dx + rad + 3 * ts;
    pvio_draw_fill(&b->c, r->x, r->y, tx + pvio_text_width(txt, ts) + pad, dy + rad + pad + 1, k_plate);
    pvio_draw_disc(&b->c, dx, dy, rad, k_tl[o->tl_state]);
    plate_text(&b->c, tx, dy - PVIO_BEV_GLYPH_H * ts / 2, txt, ts, k_tl[o->tl_state]);

    const pvm_meteor_ego *e = &o->ego;
    /* %.3g keeps any number (even a generated model's 1e30) to a few glyphs inside the panel */
    snprintf(txt, sizeof txt, "EGO MODE %d  STEER %.3g  ACCEL %.3g", e->mode, (double)e->steer,
             (double)e->accel);
    int y = r->y + r->h - 2 * line;
    plate_text(&b->c, r->x + pad, y, txt, ts, k_text);
    snprintf(txt, sizeof txt, "BRAKE %s %.3g", e->brake ? "ON" : "OFF", (double)e->brake_prob);
    plate_text(&b->c, r->x + pad, y + line, txt, ts, e->brake ? k_brake : k_text);
}

static void draw_bev(uint8_t *px, const pvm_meteor_render_layout *l, const pvm_meteor_out *o,
                     const uint8_t *occ_top)
{
    const pvm_meteor_render_rect *r = &l->bev;
    bev b = { pvio_canvas_make(px, l->width, l->height), r->x, r->y, r->w / 100.0, r->h / 160.0,
              l->line_px, l->text_scale };
    b.c.x0 = r->x;
    b.c.y0 = r->y;
    b.c.x1 = r->x + r->w;
    b.c.y1 = r->y + r->h;
    draw_grid(&b, r, o, occ_top);
    draw_ego_path(&b, &o->ego);
    for (int i = 0; i < o->n3d; i++) draw_future(&b, &o->boxes3d[i]);
    for (int i = 0; i < o->n3d; i++) draw_box3d(&b, &o->boxes3d[i]);
    for (int i = 0; i < o->nunk; i++) draw_unknown(&b, &o->unknowns[i]);
    draw_ego_car(&b, o->ego.brake);
    draw_status(&b, r, o);
}

/* ---- camera tiles --------------------------------------------------------------------------- */
static void draw_tile(uint8_t *px, const pvm_meteor_render_layout *l, int i, const uint8_t *img,
                      const pvm_meteor_out *o, double *acc)
{
    const pvm_meteor_render_rect *r = &l->cam[i];
    pvio_canvas c = pvio_canvas_make(px, l->width, l->height);
    c.x0 = r->x;
    c.y0 = r->y;
    c.x1 = r->x + r->w;
    c.y1 = r->y + r->h;
    int ts = l->text_scale;
    if (img) {
        pvio_draw_scale_area(img, PVM_METEOR_IMG_W, PVM_METEOR_IMG_H,
                             px + ((size_t)r->y * (size_t)l->width + (size_t)r->x) * 3, r->w, r->h,
                             (size_t)l->width * 3, acc);
    } else {
        pvio_draw_fill(&c, r->x, r->y, r->x + r->w, r->y + r->h, PVM_METEOR_RENDER_ABSENT_RGB);
        const char *t = "NO IMAGE";
        pvio_text_draw(px, l->width, l->height, r->x + (r->w - pvio_text_width(t, ts)) / 2,
                       r->y + (r->h - PVIO_BEV_GLYPH_H * ts) / 2, t, ts, k_text);
    }
    double sx = (double)r->w / PVM_METEOR_IMG_W, sy = (double)r->h / PVM_METEOR_IMG_H;
    for (int k = 0; k < o->n2d; k++) {
        const pvm_meteor_box2d *b = &o->boxes2d[k];
        if (b->cam != i || !finite2(b->cx, b->cy) || !finite2(b->w, b->h)) continue;
        double x0 = r->x + (b->cx - 0.5 * b->w) * sx, x1 = r->x + (b->cx + 0.5 * b->w) * sx;
        double y0 = r->y + (b->cy - 0.5 * b->h) * sy, y1 = r->y + (b->cy + 0.5 * b->h) * sy;
        int lw = b->cls == 0 ? 2 * l->line_px : l->line_px;
        const uint8_t *rgb = k_box2d[b->cls];
        pvio_draw_line(&c, x0, y0, x1, y0, lw, rgb);
        pvio_draw_line(&c, x1, y0, x1, y1, lw, rgb);
        pvio_draw_line(&c, x1, y1, x0, y1, lw, rgb);
        pvio_draw_line(&c, x0, y1, x0, y0, lw, rgb);
    }
    const char *name = pvm_meteor_cam_names[i];
    int tw = pvio_text_width(name, ts);
    pvio_draw_fill(&c, r->x, r->y, r->x + tw + 4 * ts, r->y + (PVIO_BEV_GLYPH_H + 4) * ts, k_plate);
    pvio_text_draw(px, l->width, l->height, r->x + 2 * ts, r->y + 2 * ts, name, ts, k_text);
}

/* ---- legend and title ------------------------------------------------------------------------ */
static void draw_legend(uint8_t *px, const pvm_meteor_render_layout *l)
{
    legend_item it[LEGEND_MAX];
    int n = legend_items(it), ts = l->text_scale;
    int cw = legend_cell_w(it, n, ts), cols = PVC_MAX(1, l->legend.w / cw);
    pvio_canvas c = pvio_canvas_make(px, l->width, l->height);
    for (int i = 0; i < n; i++) {
        int x = l->legend.x + (i % cols) * cw;
        int y = l->legend.y + ts + (i / cols) * (PVIO_BEV_GLYPH_H + 4) * ts;
        pvio_draw_fill(&c, x, y, x + PVIO_BEV_GLYPH_H * ts, y + PVIO_BEV_GLYPH_H * ts, it[i].rgb);
        pvio_text_draw(px, l->width, l->height, x + (PVIO_BEV_GLYPH_H + 3) * ts, y, it[i].name, ts,
                       k_text);
    }
}

static void draw_title(uint8_t *px, const pvm_meteor_render_layout *l, const pvm_meteor_out *o,
                       bool generated)
{
    uint8_t band[3], ink[3];
    pvio_bev_rgb(PVIO_BEV_INK_BAND, band);
    pvio_bev_rgb(PVIO_BEV_INK_TITLE, ink);
    pvio_canvas c = pvio_canvas_make(px, l->width, l->height);
    pvio_draw_fill(&c, 0, 0, l->width, l->band, band);
    char t[200];
    snprintf(t, sizeof t, "METEOR%s  3D %d  2D %d  UNKNOWN %d%s",
             generated ? "  GENERATED WEIGHTS - NOT A TRAINED MODEL" : "", o->n3d, o->n2d, o->nunk,
             o->lanes_fused ? "  LANES FUSED" : "");
    int ts = l->text_scale;
    pvio_text_draw(px, l->width, l->band, 4 * ts, 3 * ts, t, ts, ink);
}

/* ---- entry point ------------------------------------------------------------------------------ */
pv_status pvm_meteor_render(const pvm_meteor_out *o, const uint8_t *const imgs[PVM_METEOR_NCAM],
                            int width_px, bool generated, uint8_t **rgb, int *w, int *h,
                            pvc_msg *msg)
{
    if (rgb) *rgb = NULL;
    if (w) *w = 0;
    if (h) *h = 0;
    if (!rgb || !w || !h)
        return pvc_fail(msg, PV_EINPUT, "meteor render: %s is NULL", !rgb ? "rgb" : !w ? "w" : "h");
    pvm_meteor_render_layout l;
    pv_status st = pvm_meteor_render_layout_make(width_px, &l, msg);
    if (st != PV_OK) return st;
    if ((st = check_out(o, msg)) != PV_OK) return st;

    size_t nbytes = (size_t)l.width * (size_t)l.height * 3;
    uint8_t *px = pvc_malloc(nbytes);
    uint8_t *occ_top = o->occupancy ? pvc_malloc((size_t)PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY) : NULL;
    double *acc = pvc_malloc((size_t)l.cam[0].w * 3 * sizeof *acc);
    if (!px || (o->occupancy && !occ_top) || !acc) {
        pvc_free(px);
        pvc_free(occ_top);
        pvc_free(acc);
        return pvc_fail(msg, PV_ENOMEM, "meteor render: out of memory for a %dx%d picture",
                        l.width, l.height);
    }
    pvio_canvas all = pvio_canvas_make(px, l.width, l.height);
    pvio_draw_fill(&all, 0, 0, l.width, l.height, k_bg);
    if (occ_top) project_occ(o->occupancy, occ_top);
    draw_bev(px, &l, o, occ_top);
    for (int i = 0; i < PVM_METEOR_NCAM; i++) draw_tile(px, &l, i, imgs ? imgs[i] : NULL, o, acc);
    draw_legend(px, &l);
    draw_title(px, &l, o, generated);
    pvc_free(occ_top);
    pvc_free(acc);
    *rgb = px;
    *w = l.width;
    *h = l.height;
    return PV_OK;
}
