/* RoiAlign (see roi_align.h): parallel over (roi, channel) pairs. */
#include "kernels/ref/roi_align.h"

#include <math.h>

typedef struct roi_ctx {
    const pvk_roi_align_params *p;
    const float *x, *rois;
    const int64_t *batch;
    float *y;
} roi_ctx;

/* One bilinear sample of plane img at (yy, xx); *ok false outside the border band. The four
 * weighted corners go to v[4]. */
static void sample(const float *img, int64_t h, int64_t w, float yy, float xx, float v[4], bool *ok)
{
    *ok = !(yy < -1.0f || yy > (float)h || xx < -1.0f || xx > (float)w);
    if (!*ok) return;
    if (yy <= 0.0f) yy = 0.0f;
    if (xx <= 0.0f) xx = 0.0f;
    int64_t y0 = (int64_t)yy, x0 = (int64_t)xx, y1, x1;
    if (y0 >= h - 1) { y0 = y1 = h - 1; yy = (float)y0; } else y1 = y0 + 1;
    if (x0 >= w - 1) { x0 = x1 = w - 1; xx = (float)x0; } else x1 = x0 + 1;
    float ly = yy - (float)y0, lx = xx - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    v[0] = hy * hx * img[y0 * w + x0];
    v[1] = hy * lx * img[y0 * w + x1];
    v[2] = ly * hx * img[y1 * w + x0];
    v[3] = ly * lx * img[y1 * w + x1];
}

static void roi_range(void *cv, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const roi_ctx *c = cv;
    const pvk_roi_align_params *p = c->p;
    for (int64_t rc = b; rc < e; rc++) {
        int64_t r = rc / p->c, ch = rc % p->c;
        const float *img = c->x + (c->batch[r] * p->c + ch) * p->h * p->w;
        const float *box = c->rois + r * 4;
        float off = p->half_pixel ? 0.5f : 0.0f;
        float x0 = box[0] * p->spatial_scale - off, y0 = box[1] * p->spatial_scale - off;
        float rw = box[2] * p->spatial_scale - off - x0, rh = box[3] * p->spatial_scale - off - y0;
        if (!p->half_pixel) {
            rw = rw > 1.0f ? rw : 1.0f;
            rh = rh > 1.0f ? rh : 1.0f;
        }
        float bh = rh / (float)p->oh, bw = rw / (float)p->ow;
        int64_t gh = p->sampling_ratio > 0 ? p->sampling_ratio : (int64_t)ceilf(rh / (float)p->oh);
        int64_t gw = p->sampling_ratio > 0 ? p->sampling_ratio : (int64_t)ceilf(rw / (float)p->ow);
        float count = (float)(gh * gw > 1 ? gh * gw : 1);
        float *out = c->y + rc * p->oh * p->ow;
        for (int64_t ph = 0; ph < p->oh; ph++)
            for (int64_t pw = 0; pw < p->ow; pw++) {
                float acc = 0.0f;
                bool first = true;
                for (int64_t iy = 0; iy < gh; iy++) {
                    float yy = y0 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                    for (int64_t ix = 0; ix < gw; ix++) {
                        float xx = x0 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw, v[4];
                        bool ok;
                        sample(img, p->h, p->w, yy, xx, v, &ok);
                        if (!p->max) {
                            if (ok) acc += v[0] + v[1] + v[2] + v[3];
                            continue;
                        }
                        float m = 0.0f;
                        if (ok) m = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
                        acc = first || m > acc ? m : acc;
                        first = false;
                    }
                }
                out[ph * p->ow + pw] = p->max ? acc : acc / count;
            }
    }
}

void pvk_roi_align_f32(pvc_pool *pool, const pvk_roi_align_params *p, const float *x, const float *rois,
                       const int64_t *batch, float *y)
{
    roi_ctx c = { p, x, rois, batch, y };
    pvc_parallel_for(pool, p->rois * p->c, 1, roi_range, &c);
}
