/* hamer host pre-processing: crop geometry, the mirrored/blurred bilinear crop, normalisation
 * (see pre.h for the contract, specs/hamer.md 2.1-2.5 for the facts). */
#include "models/hamer/pre.h"

#include <math.h>
#include <string.h>

#define COL0 ((PVM_HAMER_PATCH - PVM_HAMER_W_IN) / 2)   /* 32: first square-crop column kept */
#define HALF (PVM_HAMER_PATCH / 2)                      /* 128: the crop centre */

/* ---- geometry ------------------------------------------------------------------------------ */

pv_status pvm_hamer_crop_geometry(const pvm_hamer_box *box, int index, int W, int H,
                                  pvm_hamer_crop_geom *g, pvc_msg *msg)
{
    if (W < 1 || H < 1)
        return pvc_fail(msg, PV_EINPUT, "box[%d]: image size %dx%d is empty", index, W, H);
    const double v[4] = { box->x1, box->y1, box->x2, box->y2 };
    static const char *const names[4] = { "x1", "y1", "x2", "y2" };
    for (int i = 0; i < 4; i++) {
        if (!isfinite(v[i]))
            return pvc_fail(msg, PV_EINPUT, "box[%d]: %s = %g is not finite", index, names[i],
                            v[i]);
    }
    double x1 = v[0], y1 = v[1], x2 = v[2], y2 = v[3];
    if (!(x2 > x1))
        return pvc_fail(msg, PV_EINPUT, "box[%d]: x2 = %.9g must be greater than x1 = %.9g",
                        index, x2, x1);
    if (!(y2 > y1))
        return pvc_fail(msg, PV_EINPUT, "box[%d]: y2 = %.9g must be greater than y1 = %.9g",
                        index, y2, y1);
    if (x2 <= 0.0 || x1 >= (double)W || y2 <= 0.0 || y1 >= (double)H)
        return pvc_fail(msg, PV_EINPUT,
                        "box[%d] = (%.9g, %.9g, %.9g, %.9g) lies outside the %dx%d image",
                        index, x1, y1, x2, y2, W, H);
    double longer = (double)PVC_MAX(W, H), bw = x2 - x1, bh = y2 - y1;
    double side = bw > bh ? bw : bh;   /* may be +inf for extreme finite coordinates */
    if (!(side <= PVM_HAMER_BOX_MAX_RATIO * longer))
        return pvc_fail(msg, PV_EINPUT,
                        "box[%d]: side %.9g px is longer than %g x the image's longer side (%d px)",
                        index, side, PVM_HAMER_BOX_MAX_RATIO, (int)longer);

    double w = PVM_HAMER_RESCALE * bw, h = PVM_HAMER_RESCALE * bh;
    /* aspect w:h = 192:256 (MODEL.BBOX_SHAPE) */
    if (h / w < 256.0 / 192.0) h = w * 4.0 / 3.0;
    else w = h * 3.0 / 4.0;
    double b = w > h ? w : h;
    double d = b / 256.0 / 2.0;

    memset(g, 0, sizeof *g);
    g->cx = (x1 + x2) / 2.0;
    g->cy = (y1 + y2) / 2.0;
    g->b = b;
    g->is_right = box->is_right;
    g->sigma = d > 1.1 ? (d - 1.0) / 2.0 : 0.0;
    g->W = W;
    g->H = H;
    return PV_OK;
}

/* ---- sampling ------------------------------------------------------------------------------ */

/* One sampling position along an axis: neighbours i0 and i0 + 1 (virtual image indices; i0 is
 * clamped to [-2, n] which keeps both neighbours outside when the position is), weight f of
 * the second. */
typedef struct tap { int i0; double f; } tap;

static tap tap_at(double pos, int n)
{
    double fl = floor(pos);
    tap t;
    t.f = pos - fl;
    if (fl < -2.0) t.i0 = -2;
    else if (fl > (double)n) t.i0 = n;
    else t.i0 = (int)fl;
    return t;
}

/* Sampling taps of the window: columns c (square-crop u = c + 32) and rows r. */
static void window_taps(const pvm_hamer_crop_geom *g, tap cols[PVM_HAMER_W_IN],
                        tap rows[PVM_HAMER_H_IN])
{
    double cxv = g->is_right ? g->cx : (double)(g->W - 1) - g->cx;
    for (int c = 0; c < PVM_HAMER_W_IN; c++)
        cols[c] = tap_at(cxv + (double)(c + COL0 - HALF) * g->b / 256.0, g->W);
    for (int r = 0; r < PVM_HAMER_H_IN; r++)
        rows[r] = tap_at(g->cy + (double)(r - HALF) * g->b / 256.0, g->H);
}

/* Pixel (x, y, ch) of the virtual image V (mirrored for a left hand); 0 outside. */
static inline double vpix(const uint8_t *rgb, int W, int H, bool mirror, int x, int y, int ch)
{
    if (x < 0 || x >= W || y < 0 || y >= H) return 0.0;
    int sx = mirror ? W - 1 - x : x;
    return (double)rgb[((size_t)y * (size_t)W + (size_t)sx) * 3 + (size_t)ch];
}

static inline double bilinear(double p00, double p01, double p10, double p11, double fx, double fy)
{
    double top = (1.0 - fx) * p00 + fx * p01;
    double bot = (1.0 - fx) * p10 + fx * p11;
    return (1.0 - fy) * top + fy * bot;
}

static void crop_plain(const uint8_t *rgb, int W, int H, bool mirror, const tap *cols,
                       const tap *rows, float *pix)
{
    for (int r = 0; r < PVM_HAMER_H_IN; r++) {
        tap ty = rows[r];
        for (int c = 0; c < PVM_HAMER_W_IN; c++) {
            tap tx = cols[c];
            float *o = pix + ((size_t)r * PVM_HAMER_W_IN + (size_t)c) * 3;
            for (int ch = 0; ch < 3; ch++) {
                double v = bilinear(vpix(rgb, W, H, mirror, tx.i0, ty.i0, ch),
                                    vpix(rgb, W, H, mirror, tx.i0 + 1, ty.i0, ch),
                                    vpix(rgb, W, H, mirror, tx.i0, ty.i0 + 1, ch),
                                    vpix(rgb, W, H, mirror, tx.i0 + 1, ty.i0 + 1, ch),
                                    tx.f, ty.f);
                o[ch] = (float)floor(v + 0.5);   /* v >= 0: ties away from zero */
            }
        }
    }
}

static inline int clampi(long v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* Blurred crop: the Gaussian of V is evaluated only at the pixels the window reads. For each
 * output row and each of its two neighbour rows inside the image: the vertical pass over the
 * contiguous column span the horizontal pass needs (tmp), then the horizontal pass at the
 * needed columns. Each blurred value sums the kernel in ascending offset order, in V's frame,
 * so a left hand matches the mirrored right-hand run bit for bit. */
static pv_status crop_blur(const uint8_t *rgb, int W, int H, bool mirror, double sigma,
                           const tap *cols, const tap *rows, float *pix, pvc_msg *msg)
{
    long R = (long)(4.0 * sigma + 0.5);
    int lo = W, hi = -1;
    for (int c = 0; c < PVM_HAMER_W_IN; c++) {
        for (int dx = 0; dx < 2; dx++) {
            int x = cols[c].i0 + dx;
            if (x < 0 || x >= W) continue;
            lo = PVC_MIN(lo, x);
            hi = PVC_MAX(hi, x);
        }
    }
    if (hi < 0) {   /* no column of the window meets the image: all black */
        memset(pix, 0, sizeof(float) * PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3);
        return PV_OK;
    }
    int cs = clampi((long)lo - R, 0, W - 1), ce = clampi((long)hi + R, 0, W - 1);
    size_t span = (size_t)(ce - cs + 1), nk = (size_t)(2 * R + 1);
    double *k = pvc_malloc((nk + span * 3) * sizeof(double));
    if (!k)
        return pvc_fail(msg, PV_ENOMEM, "hamer crop: out of memory for the blur (%zu doubles)",
                        nk + span * 3);
    double *tmp = k + nk;

    /* scipy.ndimage's 1-D Gaussian: exp(-0.5 / sigma^2 * x^2), normalised */
    double sum = 0.0, s2 = sigma * sigma;
    for (long i = -R; i <= R; i++) {
        double x = (double)i;
        k[i + R] = exp(-0.5 / s2 * x * x);
        sum += k[i + R];
    }
    for (size_t i = 0; i < nk; i++) k[i] /= sum;

    double val[2][PVM_HAMER_W_IN][2][3];   /* [dy][c][dx][ch] blurred neighbours */
    for (int r = 0; r < PVM_HAMER_H_IN; r++) {
        tap ty = rows[r];
        for (int dy = 0; dy < 2; dy++) {
            int y = ty.i0 + dy;
            if (y < 0 || y >= H) {
                memset(val[dy], 0, sizeof val[dy]);
                continue;
            }
            /* vertical pass: tmp[x - cs][ch] for x in [cs, ce] */
            memset(tmp, 0, span * 3 * sizeof(double));
            for (long i = -R; i <= R; i++) {
                int yy = clampi((long)y + i, 0, H - 1);
                double kw = k[i + R];
                const uint8_t *row = rgb + (size_t)yy * (size_t)W * 3;
                for (int x = cs; x <= ce; x++) {
                    int sx = mirror ? W - 1 - x : x;
                    const uint8_t *p = row + (size_t)sx * 3;
                    double *t = tmp + (size_t)(x - cs) * 3;
                    t[0] += kw * (double)p[0];
                    t[1] += kw * (double)p[1];
                    t[2] += kw * (double)p[2];
                }
            }
            /* horizontal pass at the needed columns */
            for (int c = 0; c < PVM_HAMER_W_IN; c++) {
                for (int dx = 0; dx < 2; dx++) {
                    int x = cols[c].i0 + dx;
                    double *o = val[dy][c][dx];
                    o[0] = o[1] = o[2] = 0.0;
                    if (x < 0 || x >= W) continue;
                    for (long j = -R; j <= R; j++) {
                        const double *t = tmp + (size_t)(clampi((long)x + j, 0, W - 1) - cs) * 3;
                        double kw = k[j + R];
                        o[0] += kw * t[0];
                        o[1] += kw * t[1];
                        o[2] += kw * t[2];
                    }
                }
            }
        }
        for (int c = 0; c < PVM_HAMER_W_IN; c++) {
            float *o = pix + ((size_t)r * PVM_HAMER_W_IN + (size_t)c) * 3;
            for (int ch = 0; ch < 3; ch++)
                o[ch] = (float)bilinear(val[0][c][0][ch], val[0][c][1][ch], val[1][c][0][ch],
                                        val[1][c][1][ch], cols[c].f, ty.f);
        }
    }
    pvc_free(k);
    return PV_OK;
}

pv_status pvm_hamer_crop(const uint8_t *rgb, int W, int H, const pvm_hamer_crop_geom *g,
                         float *pix, pvc_msg *msg)
{
    if (W < 1 || H < 1 || W != g->W || H != g->H)
        return pvc_fail(msg, PV_EINPUT, "hamer crop: image %dx%d differs from the geometry's %dx%d",
                        W, H, g->W, g->H);
    if (!isfinite(g->cx) || !isfinite(g->cy) || !(g->b > 0.0 && isfinite(g->b)) ||
        !(g->sigma >= 0.0 && g->sigma <= 1e6))
        return pvc_fail(msg, PV_EINPUT,
                        "hamer crop: bad geometry (cx %g, cy %g, b %g, sigma %g)",
                        g->cx, g->cy, g->b, g->sigma);
    tap cols[PVM_HAMER_W_IN], rows[PVM_HAMER_H_IN];
    window_taps(g, cols, rows);
    bool mirror = !g->is_right;
    if (g->sigma > 0.0) return crop_blur(rgb, W, H, mirror, g->sigma, cols, rows, pix, msg);
    crop_plain(rgb, W, H, mirror, cols, rows, pix);
    return PV_OK;
}

/* ---- normalisation ------------------------------------------------------------------------- */

void pvm_hamer_normalise(const float *pix, float *chw)
{
    static const double mean[3] = { 0.485, 0.456, 0.406 }, std[3] = { 0.229, 0.224, 0.225 };
    const size_t plane = (size_t)PVM_HAMER_H_IN * PVM_HAMER_W_IN;
    for (int ch = 0; ch < 3; ch++) {
        double m = 255.0 * mean[ch], s = 255.0 * std[ch];
        float *o = chw + (size_t)ch * plane;
        for (size_t i = 0; i < plane; i++)
            o[i] = (float)(((double)pix[i * 3 + (size_t)ch] - m) / s);
    }
}
