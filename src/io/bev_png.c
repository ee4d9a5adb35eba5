/* Bird's-eye-view PNG: validation, layout, a small raster (rings, points, ego, boxes, text in
 * perceive's own 5x7 font) on one RGB canvas, and libpng encoding into a growable buffer. */
#include "io/bev_png.h"
#include "io/draw.h"
#include "io/image.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX 64                /* bytes of a box label that are drawn */
#define Z_DEFAULT_MIN (-3.0f)
#define Z_DEFAULT_MAX 3.0f
#define RING_MIN_PX 12.0            /* closer rings would turn the map grey */

/* ---- inks ----------------------------------------------------------------------------------- */
/* Box palette, indexed by Autoware's ObjectClassification label: bright, saturated and apart
 * from each other, so outlines stand out against the dimmer height ramp of the points. */
static const uint8_t k_palette[PVIO_BEV_NCOLORS][3] = {
    { 200, 200, 200 },  /* 0  UNKNOWN */
    { 255,  80,  80 },  /* 1  CAR */
    { 255, 160,  40 },  /* 2  TRUCK */
    { 255, 230,  60 },  /* 3  BUS */
    { 200, 120, 255 },  /* 4  TRAILER */
    { 255,  90, 220 },  /* 5  MOTORCYCLE */
    {  60, 240, 255 },  /* 6  BICYCLE */
    {  80, 255, 120 },  /* 7  PEDESTRIAN */
    { 170, 255,  60 },  /* 8  ANIMAL */
    { 255,  40, 140 },  /* 9  HAZARD */
    { 120, 160, 255 },  /* 10 OVER_DRIVABLE */
    { 190, 140, 100 },  /* 11 UNDER_DRIVABLE */
};

bool pvio_bev_rgb(int ink, uint8_t rgb[3])
{
    static const uint8_t special[5][3] = {
        {  14,  16,  22 },  /* background */
        {  58,  64,  78 },  /* range rings and their labels */
        { 255, 255, 255 },  /* ego */
        {  34,  38,  50 },  /* title band */
        { 235, 235, 235 },  /* title text */
    };
    const uint8_t *c;
    if (ink >= 0 && ink < PVIO_BEV_NCOLORS) c = k_palette[ink];
    else if (ink < 0 && ink >= -5) c = special[-ink - 1];
    else return false;
    memcpy(rgb, c, 3);
    return true;
}

/* Height ramp: blue, cyan, green, yellow, red, kept a little dim (boxes are drawn at full
 * brightness on top). 256 entries filled per call from these stops. */
static void height_ramp(uint8_t lut[256][3])
{
    static const uint8_t stops[5][3] = {
        {  40,  70, 190 }, {  20, 160, 190 }, {  60, 180,  80 }, { 210, 190,  40 }, { 210,  70,  50 },
    };
    for (int i = 0; i < 256; i++) {
        float t = (float)i / 255.0f * 4.0f;
        int k = (int)t;
        if (k > 3) k = 3;
        float f = t - (float)k;
        for (int ch = 0; ch < 3; ch++)
            lut[i][ch] = (uint8_t)lrintf((float)stops[k][ch] * (1.0f - f) +
                                         (float)stops[k + 1][ch] * f);
    }
}

/* ---- font ----------------------------------------------------------------------------------- */
/* perceive's own 5x7 glyphs, drawn row by row ('#' lit). Looked up linearly: labels are short. */
typedef struct glyph { char c; const char *rows; } glyph;
static const glyph k_font[] = {
    { 'A', ".###." "#...#" "#...#" "#####" "#...#" "#...#" "#...#" },
    { 'B', "####." "#...#" "#...#" "####." "#...#" "#...#" "####." },
    { 'C', ".###." "#...#" "#...." "#...." "#...." "#...#" ".###." },
    { 'D', "###.." "#..#." "#...#" "#...#" "#...#" "#..#." "###.." },
    { 'E', "#####" "#...." "#...." "####." "#...." "#...." "#####" },
    { 'F', "#####" "#...." "#...." "####." "#...." "#...." "#...." },
    { 'G', ".###." "#...#" "#...." "#.###" "#...#" "#...#" ".####" },
    { 'H', "#...#" "#...#" "#...#" "#####" "#...#" "#...#" "#...#" },
    { 'I', ".###." "..#.." "..#.." "..#.." "..#.." "..#.." ".###." },
    { 'J', "..###" "...#." "...#." "...#." "...#." "#..#." ".##.." },
    { 'K', "#...#" "#..#." "#.#.." "##..." "#.#.." "#..#." "#...#" },
    { 'L', "#...." "#...." "#...." "#...." "#...." "#...." "#####" },
    { 'M', "#...#" "##.##" "#.#.#" "#.#.#" "#...#" "#...#" "#...#" },
    { 'N', "#...#" "#...#" "##..#" "#.#.#" "#..##" "#...#" "#...#" },
    { 'O', ".###." "#...#" "#...#" "#...#" "#...#" "#...#" ".###." },
    { 'P', "####." "#...#" "#...#" "####." "#...." "#...." "#...." },
    { 'Q', ".###." "#...#" "#...#" "#...#" "#.#.#" "#..#." ".##.#" },
    { 'R', "####." "#...#" "#...#" "####." "#.#.." "#..#." "#...#" },
    { 'S', ".####" "#...." "#...." ".###." "....#" "....#" "####." },
    { 'T', "#####" "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." },
    { 'U', "#...#" "#...#" "#...#" "#...#" "#...#" "#...#" ".###." },
    { 'V', "#...#" "#...#" "#...#" "#...#" "#...#" ".#.#." "..#.." },
    { 'W', "#...#" "#...#" "#...#" "#.#.#" "#.#.#" "#.#.#" ".#.#." },
    { 'X', "#...#" "#...#" ".#.#." "..#.." ".#.#." "#...#" "#...#" },
    { 'Y', "#...#" "#...#" ".#.#." "..#.." "..#.." "..#.." "..#.." },
    { 'Z', "#####" "....#" "...#." "..#.." ".#..." "#...." "#####" },
    { '0', ".###." "#...#" "#..##" "#.#.#" "##..#" "#...#" ".###." },
    { '1', "..#.." ".##.." "..#.." "..#.." "..#.." "..#.." ".###." },
    { '2', ".###." "#...#" "....#" "...#." "..#.." ".#..." "#####" },
    { '3', "####." "....#" "....#" ".###." "....#" "....#" "####." },
    { '4', "...#." "..##." ".#.#." "#..#." "#####" "...#." "...#." },
    { '5', "#####" "#...." "####." "....#" "....#" "#...#" ".###." },
    { '6', "..##." ".#..." "#...." "####." "#...#" "#...#" ".###." },
    { '7', "#####" "....#" "...#." "..#.." ".#..." ".#..." ".#..." },
    { '8', ".###." "#...#" "#...#" ".###." "#...#" "#...#" ".###." },
    { '9', ".###." "#...#" "#...#" ".####" "....#" "...#." ".##.." },
    { ' ', "....." "....." "....." "....." "....." "....." "....." },
    { '.', "....." "....." "....." "....." "....." ".##.." ".##.." },
    { '-', "....." "....." "....." "#####" "....." "....." "....." },
    { '_', "....." "....." "....." "....." "....." "....." "#####" },
    { ':', "....." ".##.." ".##.." "....." ".##.." ".##.." "....." },
    { '(', "...#." "..#.." ".#..." ".#..." ".#..." "..#.." "...#." },
    { ')', ".#..." "..#.." "...#." "...#." "...#." "..#.." ".#..." },
    { '%', "##..#" "##..#" "...#." "..#.." ".#..." "#..##" "#..##" },
    { '/', "....#" "....#" "...#." "..#.." ".#..." "#...." "#...." },
};
/* Any other byte: a small hollow box, so unsupported text is visible rather than silent. */
static const char k_unknown_glyph[] =
    "....." ".###." ".#.#." ".#.#." ".#.#." ".###." ".....";

static const char *glyph_rows(unsigned char c)
{
    if (c >= 'a' && c <= 'z') c = (unsigned char)(c - 'a' + 'A');
    for (size_t i = 0; i < PVC_COUNTOF(k_font); i++)
        if ((unsigned char)k_font[i].c == c) return k_font[i].rows;
    return k_unknown_glyph;
}

/* ---- canvas ----------------------------------------------------------------------------------- */
/* The shared raster: io/draw.h. */
typedef pvio_canvas canvas;

/* Text width in pixels for n glyphs at scale ts (one blank column between glyphs). */
static int text_width(size_t n, int ts)
{
    return n ? (int)n * (PVIO_BEV_GLYPH_W + 1) * ts - ts : 0;
}

/* Top-left corner (x, y); bytes of s up to n. */
static void draw_text(const canvas *c, int x, int y, const char *s, size_t n, int ts,
                      const uint8_t rgb[3])
{
    for (size_t i = 0; i < n && s[i]; i++, x += (PVIO_BEV_GLYPH_W + 1) * ts) {
        if (x >= c->x1) break;
        if (x + PVIO_BEV_GLYPH_W * ts <= c->x0) continue;
        const char *rows = glyph_rows((unsigned char)s[i]);
        for (int gy = 0; gy < PVIO_BEV_GLYPH_H; gy++)
            for (int gx = 0; gx < PVIO_BEV_GLYPH_W; gx++)
                if (rows[gy * PVIO_BEV_GLYPH_W + gx] == '#')
                    pvio_draw_fill(c, x + gx * ts, y + gy * ts, x + (gx + 1) * ts, y + (gy + 1) * ts, rgb);
    }
}

/* ---- exported text ------------------------------------------------------------------------- */
/* Beyond this a glyph's cell would not fit any canvas this module allows; it also keeps every
 * coordinate sum below away from int overflow. */
#define TEXT_MAX_SCALE 256

int pvio_text_width(const char *text, int scale)
{
    if (!text || scale < 1 || scale > TEXT_MAX_SCALE) return 0;
    size_t n = strlen(text);
    size_t cell = (size_t)(PVIO_BEV_GLYPH_W + 1) * (size_t)scale;
    if (n == 0) return 0;
    if (n > ((size_t)INT_MAX + (size_t)scale) / cell) return INT_MAX;
    return (int)((long long)n * (long long)cell - scale);
}

void pvio_text_draw(uint8_t *rgb, int w, int h, int x, int y, const char *text, int scale,
                    const uint8_t color[3])
{
    if (!rgb || !text || !color || w <= 0 || h <= 0 || scale < 1 || scale > TEXT_MAX_SCALE) return;
    /* Wholly above, below or right of the canvas: nothing to draw (and no sum can overflow). */
    if (y >= h || (long long)y + (long long)PVIO_BEV_GLYPH_H * scale <= 0 || x >= w) return;
    const canvas c = pvio_canvas_make(rgb, w, h);
    /* Glyphs wholly left of the canvas are skipped by draw_text; start at the first that can
     * show, so a very negative x costs nothing and x never nears INT_MIN arithmetic. */
    size_t n = strlen(text), skip = 0;
    long long cell = (long long)(PVIO_BEV_GLYPH_W + 1) * scale;
    if (x < 0) {
        long long k = (-(long long)x) / cell;
        skip = (size_t)PVC_MIN((long long)n, k);
    }
    draw_text(&c, (int)((long long)x + (long long)skip * cell), y, text + skip, n - skip, scale,
              color);
}

/* ---- validation and layout ------------------------------------------------------------------ */
static bool in_range(float v, float lim) { return isfinite(v) && fabsf(v) <= lim; }

pv_status pvio_bev_geometry(const pvio_bev_view *v, pvio_bev_geom *g, pvc_msg *msg)
{
    if (g) memset(g, 0, sizeof *g);
    if (!v) return pvc_fail(msg, PV_EINPUT, "bev_png: view is NULL");
    if (!g) return pvc_fail(msg, PV_EINPUT, "bev_png: geom is NULL");
    const struct { const char *name; float val; } rng[4] = {
        { "x_min", v->x_min }, { "x_max", v->x_max }, { "y_min", v->y_min }, { "y_max", v->y_max },
    };
    for (int i = 0; i < 4; i++)
        if (!in_range(rng[i].val, PVIO_BEV_MAX_RANGE_M))
            return pvc_fail(msg, PV_EINPUT, "bev_png: view.%s = %g (must be finite, within "
                            "+-%g m)", rng[i].name, (double)rng[i].val,
                            (double)PVIO_BEV_MAX_RANGE_M);
    if (!(v->x_min < v->x_max))
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.x_min = %g is not below view.x_max = %g",
                        (double)v->x_min, (double)v->x_max);
    if (!(v->y_min < v->y_max))
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.y_min = %g is not below view.y_max = %g",
                        (double)v->y_min, (double)v->y_max);
    if (v->width_px < PVIO_BEV_MIN_WIDTH || v->width_px > PVIO_BEV_MAX_WIDTH)
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.width_px = %d (must be %d..%d)",
                        v->width_px, PVIO_BEV_MIN_WIDTH, PVIO_BEV_MAX_WIDTH);
    if (!in_range(v->z_min, PVIO_BEV_MAX_RANGE_M) || !in_range(v->z_max, PVIO_BEV_MAX_RANGE_M))
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.z_min = %g, view.z_max = %g (must be "
                        "finite, within +-%g m)", (double)v->z_min, (double)v->z_max,
                        (double)PVIO_BEV_MAX_RANGE_M);
    if (!(v->z_min < v->z_max) && !(v->z_min == 0.0f && v->z_max == 0.0f))
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.z_min = %g is not below view.z_max = %g "
                        "(both 0 selects the default ramp)", (double)v->z_min, (double)v->z_max);
    size_t tlen = v->title ? strlen(v->title) : 0;
    if (tlen > PVIO_BEV_MAX_TITLE)
        return pvc_fail(msg, PV_EINPUT, "bev_png: view.title is %zu bytes (at most %d)", tlen,
                        PVIO_BEV_MAX_TITLE);

    double s = (double)v->width_px / ((double)v->y_max - (double)v->y_min);
    double rows = nearbyint(((double)v->x_max - (double)v->x_min) * s);
    if (!(rows >= PVIO_BEV_MIN_MAP_ROWS && rows <= PVIO_BEV_MAX_MAP_ROWS))
        return pvc_fail(msg, PV_EINPUT, "bev_png: view x range %g..%g m at %g px/m gives a map "
                        "%.0f px tall (must be %d..%d; change the ranges or view.width_px)",
                        (double)v->x_min, (double)v->x_max, s, rows, PVIO_BEV_MIN_MAP_ROWS,
                        PVIO_BEV_MAX_MAP_ROWS);
    g->width = v->width_px;
    g->text_scale = 1 + v->width_px / 800;
    g->line_px = 1 + v->width_px / 1024;
    g->map_top = tlen ? PVIO_BEV_BAND_ROWS(g->text_scale) : 0;
    g->map_rows = (int)rows;
    g->height = g->map_top + g->map_rows;
    g->px_per_m = s;
    g->col0 = (double)v->y_max * s;
    g->row0 = (double)g->map_top + (double)v->x_max * s;
    return PV_OK;
}

static pv_status check_inputs(const float *pts, int64_t npts, int32_t stride,
                              const pvio_bev_box *boxes, int nbox, pvc_msg *msg)
{
    if (npts < 0) return pvc_fail(msg, PV_EINPUT, "bev_png: npts = %lld (negative)", (long long)npts);
    if (npts > 0 && !pts)
        return pvc_fail(msg, PV_EINPUT, "bev_png: pts is NULL with npts = %lld", (long long)npts);
    if (stride < 3 || stride > PVIO_BEV_MAX_STRIDE)
        return pvc_fail(msg, PV_EINPUT, "bev_png: stride = %d floats (must be 3..%d: x, y, z "
                        "first)", (int)stride, PVIO_BEV_MAX_STRIDE);
    int64_t nfloat;
    if (pvc_mul_overflow(npts, stride, &nfloat) || (uint64_t)nfloat > SIZE_MAX / sizeof(float))
        return pvc_fail(msg, PV_EINPUT, "bev_png: npts = %lld x stride = %d overflows",
                        (long long)npts, (int)stride);
    if (nbox < 0 || nbox > PVIO_BEV_MAX_BOXES)
        return pvc_fail(msg, PV_EINPUT, "bev_png: nbox = %d (must be 0..%d)", nbox,
                        PVIO_BEV_MAX_BOXES);
    if (nbox > 0 && !boxes)
        return pvc_fail(msg, PV_EINPUT, "bev_png: boxes is NULL with nbox = %d", nbox);
    for (int i = 0; i < nbox; i++) {
        const pvio_bev_box *b = &boxes[i];
        const struct { const char *name; float val; float lim; bool positive; } f[6] = {
            { "x", b->x, PVIO_BEV_MAX_RANGE_M, false },
            { "y", b->y, PVIO_BEV_MAX_RANGE_M, false },
            { "length", b->length, PVIO_BEV_MAX_BOX_M, true },
            { "width", b->width, PVIO_BEV_MAX_BOX_M, true },
            { "yaw", b->yaw, INFINITY, false },
            { "score", b->score, INFINITY, false },
        };
        for (int k = 0; k < 6; k++) {
            if (isfinite(f[k].val) && fabsf(f[k].val) <= f[k].lim && (!f[k].positive || f[k].val > 0))
                continue;
            char lim[48] = "";
            if (isfinite(f[k].lim))
                snprintf(lim, sizeof lim, ", %s %g", f[k].positive ? "at most" : "within +-",
                         (double)f[k].lim);
            return pvc_fail(msg, PV_EINPUT, "bev_png: boxes[%d].%s = %g (must be finite%s%s)",
                            i, f[k].name, (double)f[k].val, f[k].positive ? ", > 0" : "", lim);
        }
        if (b->color < 0 || b->color >= PVIO_BEV_NCOLORS)
            return pvc_fail(msg, PV_EINPUT, "bev_png: boxes[%d].color = %d (must be 0..%d)", i,
                            b->color, PVIO_BEV_NCOLORS - 1);
    }
    return PV_OK;
}

/* ---- layers ------------------------------------------------------------------------------- */
static void draw_rings(const canvas *c, const pvio_bev_view *v, const pvio_bev_geom *g)
{
    static const int mult[] = { 1, 2, 5, 10, 25, 50 };
    double s = g->px_per_m, step = PVIO_BEV_RING_M;
    for (size_t i = 0; i < PVC_COUNTOF(mult); i++) {
        step = PVIO_BEV_RING_M * mult[i];
        if (step * s >= RING_MIN_PX) break;
    }
    /* Rings that can cross the view: between its nearest and farthest point from the origin. */
    double nx = fmax(fmax((double)v->x_min, -(double)v->x_max), 0.0);
    double ny = fmax(fmax((double)v->y_min, -(double)v->y_max), 0.0);
    double fx = fmax(fabs(v->x_min), fabs(v->x_max)), fy = fmax(fabs(v->y_min), fabs(v->y_max));
    int k0 = (int)PVC_MAX(1.0, ceil(hypot(nx, ny) / step)), k1 = (int)floor(hypot(fx, fy) / step);
    uint8_t ink[3];
    pvio_bev_rgb(PVIO_BEV_INK_RING, ink);
    for (int k = k0; k <= k1; k++) {
        double r = step * k;
        /* Per row, the columns where the ring crosses it; per column, the rows: no gaps at any
         * slope, and the cost is the image's perimeter, not the ring's. */
        for (int row = c->y0; row < c->y1; row++) {
            double x = (g->row0 - (row + 0.5)) / s;
            if (fabs(x) > r) continue;
            double y = sqrt(r * r - x * x);
            for (int sg = -1; sg <= 1; sg += 2) {
                double col = g->col0 - sg * y * s;
                if (pvio_draw_px_ok(col)) pvio_draw_put(c, (int)floor(col), row, ink);
            }
        }
        for (int col = c->x0; col < c->x1; col++) {
            double y = (g->col0 - (col + 0.5)) / s;
            if (fabs(y) > r) continue;
            double x = sqrt(r * r - y * y);
            for (int sg = -1; sg <= 1; sg += 2) {
                double row = g->row0 - sg * x * s;
                if (pvio_draw_px_ok(row)) pvio_draw_put(c, col, (int)floor(row), ink);
            }
        }
        /* Its distance, just right of where it crosses +x. */
        double lc = g->col0, lr = g->row0 - r * s;
        if (pvio_draw_px_ok(lc) && pvio_draw_px_ok(lr) && lr >= c->y0 && lr < c->y1) {
            char txt[24];
            int n = snprintf(txt, sizeof txt, "%.0f M", r);
            int ts = g->text_scale;
            draw_text(c, (int)floor(lc) + 2 * ts + g->line_px,
                      (int)floor(lr) - PVIO_BEV_GLYPH_H * ts - ts, txt, (size_t)n, ts, ink);
        }
    }
}

static void draw_points(const canvas *c, const pvio_bev_view *v, const pvio_bev_geom *g,
                        const float *pts, int64_t npts, int32_t stride)
{
    uint8_t lut[256][3];
    height_ramp(lut);
    float z0 = v->z_min, z1 = v->z_max;
    if (z0 == 0.0f && z1 == 0.0f) { z0 = Z_DEFAULT_MIN; z1 = Z_DEFAULT_MAX; }
    const float zs = 255.0f / (z1 - z0);
    const double s = g->px_per_m, col0 = g->col0, row0 = g->row0;
    const double cx0 = c->x0, cx1 = c->x1, cy0 = c->y0, cy1 = c->y1;
    const size_t w = (size_t)c->w;
    for (int64_t i = 0; i < npts; i++) {
        const float *p = pts + i * stride;
        double col = col0 - (double)p[1] * s, row = row0 - (double)p[0] * s;
        /* Written so that NaN fails every test. */
        if (!(col >= cx0 && col < cx1 && row >= cy0 && row < cy1)) continue;
        float t = (p[2] - z0) * zs;
        if (!isfinite(t)) continue;
        int idx = t <= 0.0f ? 0 : t >= 255.0f ? 255 : (int)t;
        uint8_t *q = c->px + ((size_t)row * w + (size_t)col) * 3;
        q[0] = lut[idx][0];
        q[1] = lut[idx][1];
        q[2] = lut[idx][2];
    }
}

/* A filled triangle pointing +x (up) with its centroid on the origin's pixel. */
static void draw_ego(const canvas *c, const pvio_bev_geom *g)
{
    if (!pvio_draw_px_ok(g->col0) || !pvio_draw_px_ok(g->row0)) return;
    int ts = g->text_scale;
    double want = nearbyint(3.0 * g->px_per_m);
    int h = (int)fmin(fmax(want, 6.0 * ts + 2.0), 30.0 * ts);
    int half = (h * 3) / 8, ox = (int)floor(g->col0), oy = (int)floor(g->row0);
    int apex = oy - (2 * h) / 3;
    uint8_t ink[3];
    pvio_bev_rgb(PVIO_BEV_INK_EGO, ink);
    for (int k = 0; k < h; k++) {
        int hw = (k * half + (h - 1) / 2) / (h - 1);
        pvio_draw_fill(c, ox - hw, apex + k, ox + hw + 1, apex + k + 1, ink);
    }
}

static void draw_box(const canvas *c, const pvio_bev_geom *g, const pvio_bev_box *b)
{
    uint8_t ink[3];
    pvio_bev_rgb(b->color, ink);
    const double s = g->px_per_m, cyaw = cos((double)b->yaw), syaw = sin((double)b->yaw);
    const double hl = 0.5 * b->length, hw = 0.5 * b->width;
    /* Corners front-left, front-right, rear-right, rear-left in the box frame (x ahead). */
    static const double sx[4] = { 1, 1, -1, -1 }, sw[4] = { 1, -1, -1, 1 };
    double pc[4], pr[4];
    for (int i = 0; i < 4; i++) {
        double ox = sx[i] * hl, oy = sw[i] * hw;
        double wx = b->x + ox * cyaw - oy * syaw, wy = b->y + ox * syaw + oy * cyaw;
        pc[i] = g->col0 - wy * s;
        pr[i] = g->row0 - wx * s;
    }
    for (int i = 0; i < 4; i++)
        pvio_draw_line(c, pc[i], pr[i], pc[(i + 1) % 4], pr[(i + 1) % 4], g->line_px, ink);
    double ccol = g->col0 - b->y * s, crow = g->row0 - b->x * s;
    double fcol = g->col0 - (b->y + hl * syaw) * s, frow = g->row0 - (b->x + hl * cyaw) * s;
    pvio_draw_line(c, ccol, crow, fcol, frow, g->line_px, ink);

    char txt[LABEL_MAX + 24];
    int n;
    const char *label = b->label ? b->label : "";
    int llen = (int)strnlen(label, LABEL_MAX);
    if (b->score >= 0.0f)
        n = snprintf(txt, sizeof txt, "%.*s%s%.2f", llen, label, llen ? " " : "", (double)b->score);
    else
        n = snprintf(txt, sizeof txt, "%.*s", llen, label);
    if (n <= 0) return;
    size_t tn = PVC_MIN((size_t)n, sizeof txt - 1);
    double minc = fmin(fmin(pc[0], pc[1]), fmin(pc[2], pc[3]));
    double maxc = fmax(fmax(pc[0], pc[1]), fmax(pc[2], pc[3]));
    double minr = fmin(fmin(pr[0], pr[1]), fmin(pr[2], pr[3]));
    if (!pvio_draw_px_ok(minc) || !pvio_draw_px_ok(maxc) || !pvio_draw_px_ok(minr)) return;
    int tw = text_width(tn, g->text_scale), gap = PVIO_BEV_LABEL_GAP(g);
    int tx = (int)floor(maxc) + 1 + gap, ty = (int)floor(minr), ts = g->text_scale;
    if (tx + tw > c->x1) tx = (int)floor(minc) - gap - tw;
    /* A plate of background under the text keeps it readable over dense points. */
    uint8_t bg[3];
    pvio_bev_rgb(PVIO_BEV_INK_BACKGROUND, bg);
    pvio_draw_fill(c, tx - ts, ty - ts, tx + tw + ts, ty + (PVIO_BEV_GLYPH_H + 1) * ts, bg);
    draw_text(c, tx, ty, txt, tn, ts, ink);
}

/* Rows [y0, y1) in one colour: the first written pixel by pixel, the rest copied from it. */
static void fill_rows(uint8_t *rgb, int w, int y0, int y1, const uint8_t ink[3])
{
    if (y0 >= y1) return;
    size_t rb = (size_t)w * 3;
    uint8_t *first = rgb + (size_t)y0 * rb;
    for (int x = 0; x < w; x++) memcpy(first + (size_t)x * 3, ink, 3);
    for (int y = y0 + 1; y < y1; y++) memcpy(rgb + (size_t)y * rb, first, rb);
}

pv_status pvio_bev_render(const pvio_bev_view *v, const pvio_bev_geom *g, const float *pts,
                          int64_t npts, int32_t stride, const pvio_bev_box *boxes, int nbox,
                          uint8_t *rgb, pvc_msg *msg)
{
    pvio_bev_geom chk;
    pv_status st = pvio_bev_geometry(v, &chk, msg);
    if (st != PV_OK) return st;
    if (!g) return pvc_fail(msg, PV_EINPUT, "bev_png: geom is NULL");
    if (chk.width != g->width || chk.height != g->height || chk.map_top != g->map_top ||
        chk.map_rows != g->map_rows || chk.text_scale != g->text_scale ||
        chk.line_px != g->line_px || chk.px_per_m != g->px_per_m || chk.col0 != g->col0 ||
        chk.row0 != g->row0)
        return pvc_fail(msg, PV_EINPUT, "bev_png: geom (%dx%d) does not match the view (%dx%d)",
                        g->width, g->height, chk.width, chk.height);
    if (!rgb) return pvc_fail(msg, PV_EINPUT, "bev_png: rgb canvas is NULL");
    if ((st = check_inputs(pts, npts, stride, boxes, nbox, msg)) != PV_OK) return st;

    canvas c = pvio_canvas_make(rgb, g->width, g->height);
    uint8_t bg[3], band[3], title[3];
    pvio_bev_rgb(PVIO_BEV_INK_BACKGROUND, bg);
    pvio_bev_rgb(PVIO_BEV_INK_BAND, band);
    pvio_bev_rgb(PVIO_BEV_INK_TITLE, title);
    fill_rows(rgb, g->width, 0, g->map_top, band);
    fill_rows(rgb, g->width, g->map_top, g->height, bg);

    c.y0 = g->map_top;
    draw_rings(&c, v, g);
    draw_points(&c, v, g, pts, npts, stride);
    draw_ego(&c, g);
    for (int i = 0; i < nbox; i++) draw_box(&c, g, &boxes[i]);

    if (g->map_top) {
        /* The band is the canvas's first map_top rows: a canvas of its own for the text. */
        int ts = g->text_scale;
        pvio_text_draw(rgb, g->width, g->map_top, 4 * ts, 3 * ts, v->title, ts, title);
    }
    return PV_OK;
}

pv_status pvio_bev_png_encode(const pvio_bev_view *v, const float *pts, int64_t npts,
                              int32_t stride, const pvio_bev_box *boxes, int nbox, void **png,
                              size_t *len, pvc_msg *msg)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    if (!png || !len) return pvc_fail(msg, PV_EINPUT, "bev_png: %s is NULL", png ? "len" : "png");
    pvio_bev_geom g;
    pv_status st = pvio_bev_geometry(v, &g, msg);
    if (st != PV_OK) return st;
    if ((st = check_inputs(pts, npts, stride, boxes, nbox, msg)) != PV_OK) return st;
    size_t nbytes = (size_t)g.width * (size_t)g.height * 3;
    uint8_t *rgb = pvc_malloc(nbytes);
    if (!rgb)
        return pvc_fail(msg, PV_ENOMEM, "bev_png: out of memory for a %dx%d canvas (%zu bytes)",
                        g.width, g.height, nbytes);
    st = pvio_bev_render(v, &g, pts, npts, stride, boxes, nbox, rgb, msg);
    /* Flat background with scattered point pixels: unfiltered rows deflate smaller than any
     * PNG filter here, and zlib level 2 is within 10 % of level 6's size at 3-7x the speed
     * (measured: 1M points, 2048 px: 1.5 MB in ~0.2 s vs 1.3 MB in ~0.6 s). */
    pvio_png_opts o = { .level = 2, .filter_none = true, .title = v->title, .software = true, .what = "bev_png" };
    if (st == PV_OK) st = pvio_png_encode_rgb(rgb, g.width, g.height, &o, png, len, msg);
    pvc_free(rgb);
    return st;
}

pv_status pvio_bev_png_write(const char *path, const pvio_bev_view *v, const float *pts,
                             int64_t npts, int32_t stride, const pvio_bev_box *boxes, int nbox,
                             pvc_msg *msg)
{
    if (!path || !*path) return pvc_fail(msg, PV_EINPUT, "bev_png: path is %s", path ? "empty" : "NULL");
    void *buf;
    size_t len;
    pv_status st = pvio_bev_png_encode(v, pts, npts, stride, boxes, nbox, &buf, &len, msg);
    if (st != PV_OK) return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        int err = errno;
        pvc_free(buf);
        return pvc_fail(msg, PV_EINPUT, "bev_png '%s': cannot create: %s", path, strerror(err));
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) { ok = false; err = errno; }
    pvc_free(buf);
    if (!ok) {
        remove(path);
        return pvc_fail(msg, PV_EINPUT, "bev_png '%s': write failed: %s", path, strerror(err));
    }
    return PV_OK;
}
