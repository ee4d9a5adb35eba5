/* io: bird's-eye-view pictures of a lidar frame and its detected boxes, as PNG. Prefix pvio_bev_.
 *
 * Example (what `perceive run bevfusion FILE --png out.png` does):
 *
 *     pvio_bev_view v = { .x_min = -54, .x_max = 54, .y_min = -54, .y_max = 54,
 *                         .width_px = 1024, .title = "GENERATED WEIGHTS - not a trained model" };
 *     pvio_bev_box b = { .x = 12, .y = -3.5f, .length = 4.6f, .width = 1.9f, .yaw = 0.1f,
 *                        .score = 0.53f, .label = "CAR", .color = 1 };
 *     pvc_msg msg;
 *     if (pvio_bev_png_write("out.png", &v, pts, npts, 4, &b, 1, &msg) != PV_OK) puts(msg.text);
 *
 * Frame: ROS base_link seen from above. x (forward) is drawn UP, y (left) is drawn LEFT, so the
 * image's columns run from y_max (left edge) to y_min (right edge) and its rows from x_max (top)
 * to x_min (bottom); the ego (the origin) sits at the centre when the ranges are symmetric. One
 * scale for both axes: px_per_m = width_px / (y_max - y_min); the map is
 * round((x_max - x_min) * px_per_m) rows tall. When a title is given, a band of
 * PVIO_BEV_BAND_ROWS(text_scale) rows above the map holds it; the map starts below the band.
 *
 * What is drawn, in this order (later layers cover earlier ones):
 *   1. background (PVIO_BEV_INK_BACKGROUND);
 *   2. range rings around the origin every PVIO_BEV_RING_M metres (PVIO_BEV_INK_RING; every
 *      2, 5, 10, 25 or 50 times that when rings would be under 12 px apart), each labelled
 *      with its distance ("20 M") just right of where it crosses the +x axis;
 *   3. the points, one pixel each, coloured by height z on a blue-green-yellow-red ramp over
 *      [view.z_min, view.z_max] (clamped; both 0 means the default -3..+3 m); points outside the
 *      map and non-finite points are skipped (not an error);
 *   4. the ego marker (PVIO_BEV_INK_EGO): a filled triangle pointing +x whose centroid is the origin;
 *   5. each box: its rotated rectangle outline, plus a heading tick from the centre to the middle
 *      of the front edge (the edge along +yaw), in palette colour box.color; then its text
 *      ("CAR 0.53": label, a space, the score with two decimals; no score when score < 0) in the
 *      same colour, top-aligned with the box's on-screen bounding rectangle and starting
 *      PVIO_BEV_LABEL_GAP(geom) pixels right of it (left of it, ending that far away, when it
 *      would leave the map), on a plate of background text_scale pixels larger than the text
 *      on every side;
 *   6. the title, in the band (PVIO_BEV_INK_TITLE on PVIO_BEV_INK_BAND).
 * Everything of layers 2-5 is clipped to the map, so nothing draws into the band.
 * Text uses perceive's own 5x7 bitmap font, scaled by geom.text_scale: A-Z, 0-9 and " .-_:()%/"
 * (lower case is drawn as upper case; any other byte as a small hollow box). Lines are
 * geom.line_px wide. No anti-aliasing: every pixel holds exactly one of the inks or point colours.
 *
 * Cost: one RGB canvas (3 * width * height bytes) plus libpng/zlib state per call, all through
 * pvc_malloc; nothing per point. Thread-safe (no shared state).
 *
 * Ownership: every argument is borrowed for the call. pvio_bev_png_encode returns *png
 * allocated with pvc_malloc (release with pvc_free); on any failure *png = NULL, *len = 0.
 * Errors: PV_EINPUT names the field and value (view.width_px, boxes[3].yaw, stride, ...) or the
 * file that cannot be written; PV_ENOMEM when an allocation fails; PV_EINTERNAL if libpng
 * reports an error (a bug). Nothing leaks on any path.
 */
#ifndef PVIO_BEV_PNG_H
#define PVIO_BEV_PNG_H

#include "core/core.h"

#define PVIO_BEV_MIN_WIDTH   256      /* view.width_px bounds */
#define PVIO_BEV_MAX_WIDTH   4096
#define PVIO_BEV_MIN_MAP_ROWS 16      /* map height bounds (after the aspect ratio) */
#define PVIO_BEV_MAX_MAP_ROWS 4096
#define PVIO_BEV_MAX_RANGE_M 1000.0f  /* |x_min|,|x_max|,|y_min|,|y_max|, |z| range, box x / y */
#define PVIO_BEV_MAX_BOX_M   1000.0f  /* box length / width */
#define PVIO_BEV_MAX_BOXES   100000
#define PVIO_BEV_MAX_STRIDE  1024     /* floats per point */
#define PVIO_BEV_MAX_TITLE   200      /* bytes of view.title */
#define PVIO_BEV_RING_M      20.0f
#define PVIO_BEV_NCOLORS     12       /* palette size: box.color in [0, PVIO_BEV_NCOLORS) */
#define PVIO_BEV_GLYPH_W     5        /* font cell, before scaling; one blank column between */
#define PVIO_BEV_GLYPH_H     7
#define PVIO_BEV_BAND_ROWS(ts) (13 * (ts))          /* title band height for text scale ts */
#define PVIO_BEV_LABEL_GAP(g)  (2 * (g)->line_px + 2 * (g)->text_scale)

/* One box in the ground plane (base_link metres / radians). label may be NULL (only the score
 * is written) and is read up to 64 bytes. color is a palette index: the palette follows
 * Autoware's ObjectClassification label values (0 UNKNOWN, 1 CAR, 2 TRUCK, 3 BUS, 4 TRAILER,
 * 5 MOTORCYCLE, 6 BICYCLE, 7 PEDESTRIAN, 8 ANIMAL, 9 HAZARD, 10 OVER_DRIVABLE,
 * 11 UNDER_DRIVABLE), so a DetectedObject's label can be passed as is.
 * Valid: x, y, yaw finite, |x|, |y| <= PVIO_BEV_MAX_RANGE_M; 0 < length, width <=
 * PVIO_BEV_MAX_BOX_M; score finite (< 0: not shown). */
typedef struct pvio_bev_box {
    float x, y, length, width, yaw;
    float score;
    const char *label;
    int color;
} pvio_bev_box;

/* The picture. Ranges finite, min < max, within +-PVIO_BEV_MAX_RANGE_M; width_px in
 * [PVIO_BEV_MIN_WIDTH, PVIO_BEV_MAX_WIDTH]; the map height that follows in
 * [PVIO_BEV_MIN_MAP_ROWS, PVIO_BEV_MAX_MAP_ROWS]. z_min < z_max (finite) sets the colour ramp,
 * or both 0 for the default. title NULL or "": no band; else at most PVIO_BEV_MAX_TITLE bytes,
 * also stored in the PNG as a tEXt "Title" chunk. */
typedef struct pvio_bev_view {
    float x_min, x_max, y_min, y_max;
    int width_px;
    const char *title;
    float z_min, z_max;
} pvio_bev_view;

/* The layout a view yields. World (x, y) maps to the pixel centre at
 * col = col0 - y * px_per_m, row = row0 - x * px_per_m (pixel (c, r) covers [c, c+1) x [r, r+1)). */
typedef struct pvio_bev_geom {
    int width, height;     /* whole image */
    int map_top;           /* first map row (0 without a title band) */
    int map_rows;          /* height - map_top */
    int text_scale;        /* font magnification: 1 + width / 800 */
    int line_px;           /* outline width: 1 + width / 1024 */
    double px_per_m, col0, row0;
} pvio_bev_geom;

/* Special inks for pvio_bev_rgb; 0..PVIO_BEV_NCOLORS-1 are the box palette. */
enum {
    PVIO_BEV_INK_BACKGROUND = -1,
    PVIO_BEV_INK_RING = -2,
    PVIO_BEV_INK_EGO = -3,
    PVIO_BEV_INK_BAND = -4,
    PVIO_BEV_INK_TITLE = -5
};

/* The RGB of an ink into rgb[0..2]; false (rgb untouched) for an unknown ink. */
bool pvio_bev_rgb(int ink, uint8_t rgb[3]);

/* Validates v and fills *g. */
pv_status pvio_bev_geometry(const pvio_bev_view *v, pvio_bev_geom *g, pvc_msg *msg);

/* Renders and encodes an 8-bit RGB PNG into *png (pvc_malloc'ed, *len bytes).
 * pts: npts points of stride floats each (stride >= 3; x, y, z first; the rest ignored), may be
 * NULL when npts == 0. boxes: nbox entries (0 <= nbox <= PVIO_BEV_MAX_BOXES), may be NULL when
 * nbox == 0. All of it is validated before anything is drawn. */
pv_status pvio_bev_png_encode(const pvio_bev_view *v, const float *pts, int64_t npts,
                              int32_t stride, const pvio_bev_box *boxes, int nbox, void **png,
                              size_t *len, pvc_msg *msg);

/* Same picture, written to path (created or truncated; a partly written file is removed). */
pv_status pvio_bev_png_write(const char *path, const pvio_bev_view *v, const float *pts,
                             int64_t npts, int32_t stride, const pvio_bev_box *boxes, int nbox,
                             pvc_msg *msg);

/* Renders into a caller-owned RGB canvas of g->width * g->height * 3 bytes (rows top to
 * bottom), g from pvio_bev_geometry(v); the encoders use this. Same validation. */
pv_status pvio_bev_render(const pvio_bev_view *v, const pvio_bev_geom *g, const float *pts,
                          int64_t npts, int32_t stride, const pvio_bev_box *boxes, int nbox,
                          uint8_t *rgb, pvc_msg *msg);

/* ---- perceive's 5x7 font, for other pictures (hamer's title band) -------------------------------
 * The same glyphs as above: A-Z, 0-9 and " .-_:()%/"; lower case is drawn upper case, any other
 * byte as a small hollow box. Each glyph is a PVIO_BEV_GLYPH_W x PVIO_BEV_GLYPH_H cell scaled by
 * scale (1..256), one blank column (scale pixels) between glyphs. */

/* Width in pixels of text at scale (the last glyph's blank column not counted); 0 for NULL,
 * "" or a scale outside 1..256; INT_MAX when it would not fit an int. */
int  pvio_text_width(const char *text, int scale);

/* Draws text (NUL-terminated) into a caller-owned RGB canvas of w x h pixels (3 * w * h bytes,
 * rows top to bottom) with the top-left corner of the first glyph at (x, y), lit pixels set to
 * color, unlit ones untouched. Anything outside the canvas is clipped (x, y may be negative or
 * beyond it). Draws nothing for a NULL argument, w or h <= 0, or a scale outside 1..256. No
 * allocation, no shared state. */
void pvio_text_draw(uint8_t *rgb, int w, int h, int x, int y, const char *text, int scale,
                    const uint8_t color[3]);

#endif
