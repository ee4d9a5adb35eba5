/* io/draw: the small raster every perceive picture shares (the bird's-eye view, the hamer and
 * meteor pictures): a clipped RGB canvas, filled rectangles, lines, discs, alpha blending and an
 * area-average downscale. Prefix pvio_draw_ (pvio_canvas for the canvas). Text is perceive's 5x7
 * font in io/bev_png.h (pvio_text_draw).
 *
 * Example (a red line and a grey box on a 64x32 canvas, only its left half writable):
 *
 *     uint8_t px[64 * 32 * 3] = {0};
 *     pvio_canvas c = pvio_canvas_make(px, 64, 32);
 *     c.x1 = 32;                                     // clip to [0, 32) x [0, 32)
 *     static const uint8_t red[3] = { 255, 0, 0 }, grey[3] = { 90, 90, 90 };
 *     pvio_draw_line(&c, 1.5, 1.5, 40.5, 20.5, 1, red);
 *     pvio_draw_fill(&c, 4, 20, 12, 28, grey);
 *
 * Coordinates: pixel (x, y) covers [x, x+1) x [y, y+1) of the continuous plane (its centre is
 * x + 0.5); rows run top to bottom, 3 bytes a pixel, rows of 3 * w bytes. Nothing is ever
 * written outside the clip rectangle [x0, x1) x [y0, y1) (which must lie inside the canvas).
 * Callers turn float positions into ints only after pvio_draw_px_ok (within
 * +-PVIO_DRAW_FAR_PX, not NaN), so any float a model gives is safe. No allocation, no shared state: thread-safe on distinct canvases.
 */
#ifndef PVIO_DRAW_H
#define PVIO_DRAW_H

#include "core/core.h"

#define PVIO_DRAW_FAR_PX 1.0e6

typedef struct pvio_canvas {
    uint8_t *px;            /* pixel (0, 0) */
    int w, h;               /* pixels; a row is 3 * w bytes */
    int x0, y0, x1, y1;     /* clip: [x0, x1) x [y0, y1) */
} pvio_canvas;

/* A canvas over rgb (w x h), clipped to all of it. */
pvio_canvas pvio_canvas_make(uint8_t *rgb, int w, int h);

/* True when v is a finite coordinate within +-PVIO_DRAW_FAR_PX (NaN: false). */
bool pvio_draw_px_ok(double v);

/* One pixel (clipped). */
static inline void pvio_draw_put(const pvio_canvas *c, int x, int y, const uint8_t rgb[3])
{
    if (x < c->x0 || x >= c->x1 || y < c->y0 || y >= c->y1) return;
    uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    p[0] = rgb[0];
    p[1] = rgb[1];
    p[2] = rgb[2];
}

/* [x0, x1) x [y0, y1) in one colour (clipped). */
void pvio_draw_fill(const pvio_canvas *c, int x0, int y0, int x1, int y1, const uint8_t rgb[3]);

/* [x0, x1) x [y0, y1) blended towards rgb: p = p + alpha (rgb - p), rounded; alpha in [0, 1]
 * (clamped; NaN draws nothing). */
void pvio_draw_blend(const pvio_canvas *c, int x0, int y0, int x1, int y1, const uint8_t rgb[3],
                     double alpha);

/* Liang-Barsky: clips the segment (x0,y0)-(x1,y1) to [lo_x, hi_x] x [lo_y, hi_y] in place;
 * false when nothing of it is left. */
bool pvio_draw_clip_segment(double *x0, double *y0, double *x1, double *y1, double lo_x,
                            double lo_y, double hi_x, double hi_y);

/* A line between two continuous positions, lw >= 1 pixels wide: Bresenham between the pixels
 * that hold the end points (floor of each coordinate), an lw x lw square per step centred on it
 * (offset (lw - 1) / 2 up and left). Any finite segment is clipped first (far end points are
 * fine); NaN or infinite ones draw nothing. */
void pvio_draw_line(const pvio_canvas *c, double x0, double y0, double x1, double y1, int lw,
                    const uint8_t rgb[3]);

/* A filled disc of radius r >= 0 around pixel (cx, cy): the pixels (cx + dx, cy + dy) with
 * dx^2 + dy^2 <= r^2 + r. */
void pvio_draw_disc(const pvio_canvas *c, int cx, int cy, int r, const uint8_t rgb[3]);

/* Area-average downscale (or copy, when the sizes match) of src (W x H, rows of 3 * W bytes)
 * into dst (w x h pixels, rows dst_stride bytes apart), 1 <= w <= W, 1 <= h <= H: output pixel i
 * covers input [i W / w, (i + 1) W / w), each input pixel weighted by its overlap, rounded to
 * nearest. acc: 3 * w doubles of scratch (may be NULL when the sizes match). Not clipped: the
 * caller sizes dst. */
void pvio_draw_scale_area(const uint8_t *src, int W, int H, uint8_t *dst, int w, int h,
                          size_t dst_stride, double *acc);

#endif
