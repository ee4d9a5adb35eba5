/* The shared raster of perceive's pictures (see draw.h). */
#include "io/draw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pvio_canvas pvio_canvas_make(uint8_t *rgb, int w, int h)
{
    return (pvio_canvas){ rgb, w, h, 0, 0, w, h };
}

bool pvio_draw_px_ok(double v) { return v > -PVIO_DRAW_FAR_PX && v < PVIO_DRAW_FAR_PX; }

void pvio_draw_fill(const pvio_canvas *c, int x0, int y0, int x1, int y1, const uint8_t rgb[3])
{
    x0 = PVC_MAX(x0, c->x0);
    y0 = PVC_MAX(y0, c->y0);
    x1 = PVC_MIN(x1, c->x1);
    y1 = PVC_MIN(y1, c->y1);
    for (int y = y0; y < y1; y++) {
        uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)PVC_MAX(x0, 0)) * 3;
        for (int x = x0; x < x1; x++, p += 3) {
            p[0] = rgb[0];
            p[1] = rgb[1];
            p[2] = rgb[2];
        }
    }
}

void pvio_draw_blend(const pvio_canvas *c, int x0, int y0, int x1, int y1, const uint8_t rgb[3],
                     double alpha)
{
    if (!(alpha > 0.0)) return;
    if (alpha > 1.0) alpha = 1.0;
    /* Fixed point: a = alpha in 1/256ths, so a pixel costs three integer multiply-adds. */
    int a = (int)lrint(alpha * 256.0);
    x0 = PVC_MAX(x0, c->x0);
    y0 = PVC_MAX(y0, c->y0);
    x1 = PVC_MIN(x1, c->x1);
    y1 = PVC_MIN(y1, c->y1);
    for (int y = y0; y < y1; y++) {
        uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)PVC_MAX(x0, 0)) * 3;
        for (int x = x0; x < x1; x++, p += 3)
            for (int k = 0; k < 3; k++) p[k] = (uint8_t)(p[k] + ((rgb[k] - p[k]) * a + 128) / 256);
    }
}

bool pvio_draw_clip_segment(double *x0, double *y0, double *x1, double *y1, double lo_x,
                            double lo_y, double hi_x, double hi_y)
{
    double t0 = 0.0, t1 = 1.0, dx = *x1 - *x0, dy = *y1 - *y0;
    const double p[4] = { -dx, dx, -dy, dy };
    const double q[4] = { *x0 - lo_x, hi_x - *x0, *y0 - lo_y, hi_y - *y0 };
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0.0) {
            if (q[i] < 0.0) return false;
            continue;
        }
        double r = q[i] / p[i];
        if (p[i] < 0.0) { if (r > t1) return false; if (r > t0) t0 = r; }
        else { if (r < t0) return false; if (r < t1) t1 = r; }
    }
    double ax = *x0 + t0 * dx, ay = *y0 + t0 * dy;
    *x1 = *x0 + t1 * dx;
    *y1 = *y0 + t1 * dy;
    *x0 = ax;
    *y0 = ay;
    return true;
}

void pvio_draw_line(const pvio_canvas *c, double x0, double y0, double x1, double y1, int lw,
                    const uint8_t rgb[3])
{
    /* Any finite segment is clipped (to within lw + 2 of the clip), so the int conversions
     * below stay small; NaN or infinite ends draw nothing. */
    if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1) || lw < 1) return;
    double m = (double)lw + 2.0;
    if (!pvio_draw_clip_segment(&x0, &y0, &x1, &y1, c->x0 - m, c->y0 - m, c->x1 + m, c->y1 + m))
        return;
    /* ends near DBL_MAX can overflow the clip's arithmetic */
    if (!pvio_draw_px_ok(x0) || !pvio_draw_px_ok(y0) || !pvio_draw_px_ok(x1) || !pvio_draw_px_ok(y1))
        return;
    int ax = (int)floor(x0), ay = (int)floor(y0), bx = (int)floor(x1), by = (int)floor(y1);
    int dx = abs(bx - ax), dy = -abs(by - ay), sx = ax < bx ? 1 : -1, sy = ay < by ? 1 : -1;
    int err = dx + dy, off = (lw - 1) / 2;
    for (;;) {
        if (lw == 1) pvio_draw_put(c, ax, ay, rgb);
        else pvio_draw_fill(c, ax - off, ay - off, ax - off + lw, ay - off + lw, rgb);
        if (ax == bx && ay == by) break;
        int e2 = 2 * err;
        if (e2 >= dy) { err += dy; ax += sx; }
        if (e2 <= dx) { err += dx; ay += sy; }
    }
}

void pvio_draw_disc(const pvio_canvas *c, int cx, int cy, int r, const uint8_t rgb[3])
{
    if (r < 0) return;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++)
            if (dx * dx + dy * dy <= r * r + r) pvio_draw_put(c, cx + dx, cy + dy, rgb);
}

/* fmin / fmax without the libm calls (no NaN can reach them here): the same values. */
static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }

void pvio_draw_scale_area(const uint8_t *src, int W, int H, uint8_t *dst, int w, int h,
                          size_t dst_stride, double *acc)
{
    const size_t srow = (size_t)W * 3, drow = (size_t)w * 3;
    if (w == W && h == H) {
        for (int j = 0; j < h; j++) memcpy(dst + (size_t)j * dst_stride, src + (size_t)j * srow, srow);
        return;
    }
    for (int j = 0; j < h; j++) {
        double y0 = (double)j * H / h, y1 = (double)(j + 1) * H / h;
        memset(acc, 0, drow * sizeof *acc);
        int k0 = (int)floor(y0), k1 = PVC_MIN((int)ceil(y1), H);
        for (int k = k0; k < k1; k++) {
            double wy = dmin(y1, k + 1.0) - dmax(y0, (double)k);
            if (wy <= 0.0) continue;
            const uint8_t *row = src + (size_t)k * srow;
            for (int i = 0; i < w; i++) {
                double x0 = (double)i * W / w, x1 = (double)(i + 1) * W / w;
                int m0 = (int)floor(x0), m1 = PVC_MIN((int)ceil(x1), W);
                double s0 = 0.0, s1 = 0.0, s2 = 0.0;
                for (int m = m0; m < m1; m++) {
                    double wx = dmin(x1, m + 1.0) - dmax(x0, (double)m);
                    const uint8_t *p = row + (size_t)m * 3;
                    s0 += wx * p[0];
                    s1 += wx * p[1];
                    s2 += wx * p[2];
                }
                acc[i * 3 + 0] += wy * s0;
                acc[i * 3 + 1] += wy * s1;
                acc[i * 3 + 2] += wy * s2;
            }
        }
        uint8_t *out = dst + (size_t)j * dst_stride;
        double norm = (y1 - y0) * ((double)W / w);
        for (size_t c = 0; c < drow; c++) {
            double q = floor(acc[c] / norm + 0.5);
            out[c] = (uint8_t)(q < 0.0 ? 0.0 : q > 255.0 ? 255.0 : q);
        }
    }
}
