/* hamer picture: area-scaled input image, z-buffered flat-shaded meshes blended over it, box,
 * skeleton and keypoints, a title band, libpng encoding into a growable buffer. */
#include "models/hamer/render.h"
#include "io/image.h"

#include "io/bev_png.h"
#include "io/draw.h"
#include "models/hamer/hamer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define F_CROP (PVM_HAMER_FOCAL / PVM_HAMER_PATCH)   /* 5000 / 256: focal per crop pixel of b */
#define TRI_MAX_AREA 4.0                                /* x the image's area */
#define SHADE_AMBIENT 0.3                               /* intensity of a face seen edge-on */

/* ---- inks ------------------------------------------------------------------------------------ */
static const uint8_t k_mesh[2][3] = {
    { 242, 172, 200 },   /* left: pink */
    { 166, 189, 219 },   /* right: HaMeR's LIGHT_BLUE (0.651, 0.741, 0.859) */
};
static const uint8_t k_box[2][3] = {
    { 255, 110, 180 },   /* left */
    {  80, 150, 255 },   /* right */
};
static const uint8_t k_finger[5][3] = {
    { 255,  60,  60 },   /* thumb */
    { 255, 200,  40 },   /* index */
    {  60, 220,  90 },   /* middle */
    {  40, 170, 255 },   /* ring */
    { 220,  80, 255 },   /* pinky */
};
static const uint8_t k_wrist[3] = { 255, 255, 255 };
static const uint8_t k_rim[3] = { 20, 20, 24 };

void pvm_hamer_render_mesh_rgb(int is_right, uint8_t rgb[3])
{
    memcpy(rgb, k_mesh[is_right ? 1 : 0], 3);
}

bool pvm_hamer_render_keypoint_rgb(int k, uint8_t rgb[3])
{
    if (k < 0 || k >= PV_HAND_KEYPOINTS) return false;
    memcpy(rgb, k == 0 ? k_wrist : k_finger[(k - 1) / 4], 3);
    return true;
}

/* ---- geometry -------------------------------------------------------------------------------- */
pv_status pvm_hamer_render_geometry(int W, int H, const char *title, int max_width,
                                    pvm_hamer_render_geom *g, pvc_msg *msg)
{
    if (g) memset(g, 0, sizeof *g);
    if (!g) return pvc_fail(msg, PV_EINPUT, "hamer render: geom is NULL");
    if (W <= 0 || W > PVM_HAMER_RENDER_MAX_SIDE)
        return pvc_fail(msg, PV_EINPUT, "hamer render: image width W = %d (must be 1..%d)", W,
                        PVM_HAMER_RENDER_MAX_SIDE);
    if (H <= 0 || H > PVM_HAMER_RENDER_MAX_SIDE)
        return pvc_fail(msg, PV_EINPUT, "hamer render: image height H = %d (must be 1..%d)", H,
                        PVM_HAMER_RENDER_MAX_SIDE);
    if (max_width < 0)
        return pvc_fail(msg, PV_EINPUT, "hamer render: max_width = %d (must be >= 0; 0: the "
                        "image's width)", max_width);
    size_t tlen = title ? strnlen(title, PVM_HAMER_RENDER_MAX_TITLE + 1) : 0;
    if (tlen > PVM_HAMER_RENDER_MAX_TITLE)
        return pvc_fail(msg, PV_EINPUT, "hamer render: title is longer than %d bytes",
                        PVM_HAMER_RENDER_MAX_TITLE);
    if (max_width == 0 || max_width >= W) {
        g->img_w = W;
        g->img_h = H;
    } else {
        g->img_w = max_width;
        g->img_h = (int)PVC_MAX(1.0, floor((double)H * max_width / W + 0.5));
    }
    g->sx = (double)g->img_w / W;
    g->sy = (double)g->img_h / H;
    g->width = g->img_w;
    g->text_scale = 1 + g->width / 800;
    g->band = tlen ? PVIO_BEV_BAND_ROWS(g->text_scale) : 0;
    g->height = g->band + g->img_h;
    int side = PVC_MAX(g->img_w, g->img_h);
    g->line_px = 1 + side / 800;
    g->dot_r = 2 + side / 400;
    return PV_OK;
}

bool pvm_hamer_render_project(const pv_hand *h, const float p[3], double uv[2])
{
    double z = (double)p[2] + h->cam_t[2];
    if (!(z > 0.0)) return false;                      /* behind the camera, or NaN */
    double k = (double)h->crop_size * F_CROP / z;
    double u = h->crop_center[0] + k * ((double)p[0] + h->cam_t[0]);
    double v = h->crop_center[1] + k * ((double)p[1] + h->cam_t[1]);
    /* Written so that NaN fails. */
    if (!(fabs(u) <= PVM_HAMER_RENDER_FAR_PX && fabs(v) <= PVM_HAMER_RENDER_FAR_PX)) return false;
    uv[0] = u;
    uv[1] = v;
    return true;
}

/* ---- the image region of the picture ----------------------------------------------------------- */
typedef struct view {
    uint8_t *px;            /* first pixel of the image (below the band) */
    int w, h;               /* img_w x img_h, rows of 3 * w bytes */
    double sx, sy;
    pvio_canvas c;          /* the same pixels, for io/draw */
} view;

/* Input image pixel -> picture pixel coordinates (continuous; integer = pixel centre). */
static void to_view(const view *v, double u, double y, double *px, double *py)
{
    *px = (u + 0.5) * v->sx - 0.5;
    *py = (y + 0.5) * v->sy - 0.5;
}

static bool far_px(double x) { return !(fabs(x) <= PVM_HAMER_RENDER_FAR_PX); }

/* ---- meshes ---------------------------------------------------------------------------------- */
typedef struct vproj { double x, y, iz; bool ok; } vproj;    /* picture pixel, b / (Z + t2) */

/* The covered part of the image: a z-buffer (inverse depth, 0 = empty) and the shaded colour,
 * over the rectangle [x0, x1) x [y0, y1). */
typedef struct layer {
    int x0, y0, x1, y1;
    float *iz;
    uint8_t *rgb;
    long long budget;        /* pixel tests left */
} layer;

typedef struct tri { int x0, y0, x1, y1; } tri;   /* clipped pixel bounding box, inclusive */

static void project_hand(const view *v, const pv_hand *h, vproj *vp)
{
    double b = h->crop_size;
    bool hand_ok = isfinite(b) && b > 0.0;
    for (int i = 0; i < PV_HAND_VERTICES; i++) {
        double uv[2];
        vproj *q = &vp[i];
        q->ok = false;
        if (!hand_ok || !pvm_hamer_render_project(h, &h->vertices[i * 3], uv)) continue;
        to_view(v, uv[0], uv[1], &q->x, &q->y);
        q->iz = b / ((double)h->vertices[i * 3 + 2] + h->cam_t[2]);
        q->ok = isfinite(q->iz) && q->iz > 0.0 && !far_px(q->x) && !far_px(q->y);
    }
}

/* Whether face (a, b, c) is drawn, and the pixels whose centres it may cover (*t). The same
 * answer in the sizing pass and the drawing pass. */
static bool tri_box(const view *v, const vproj *a, const vproj *b, const vproj *c, tri *t)
{
    if (!a->ok || !b->ok || !c->ok) return false;
    double lx = fmin(a->x, fmin(b->x, c->x)), hx = fmax(a->x, fmax(b->x, c->x));
    double ly = fmin(a->y, fmin(b->y, c->y)), hy = fmax(a->y, fmax(b->y, c->y));
    if ((hx - lx + 1.0) * (hy - ly + 1.0) > TRI_MAX_AREA * (double)v->w * (double)v->h)
        return false;
    double cx0 = fmax(ceil(lx), 0.0), cx1 = fmin(floor(hx), v->w - 1.0);
    double cy0 = fmax(ceil(ly), 0.0), cy1 = fmin(floor(hy), v->h - 1.0);
    if (cx0 > cx1 || cy0 > cy1) return false;
    *t = (tri){ (int)cx0, (int)cy0, (int)cx1, (int)cy1 };
    return true;
}

/* Flat colour of a face: base x (ambient + diffuse |cos|) of the angle between its normal and
 * the ray from its centroid to the camera, camera frame (vertex + cam_t). false: degenerate. */
static bool face_colour(const pv_hand *h, const int32_t f[3], const uint8_t base[3],
                        uint8_t out[3])
{
    double p[3][3];
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 3; d++) p[k][d] = (double)h->vertices[f[k] * 3 + d] + h->cam_t[d];
    double e1[3], e2[3], n[3], g[3];
    for (int d = 0; d < 3; d++) {
        e1[d] = p[1][d] - p[0][d];
        e2[d] = p[2][d] - p[0][d];
        g[d] = (p[0][d] + p[1][d] + p[2][d]) / 3.0;
    }
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
    double nn = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double gg = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    /* |cos|: a left hand's mirrored winding (and any back face) shades like its front. */
    double c = fabs(n[0] * g[0] + n[1] * g[1] + n[2] * g[2]) / (nn * gg);
    if (!isfinite(c)) return false;
    double s = SHADE_AMBIENT + (1.0 - SHADE_AMBIENT) * fmin(c, 1.0);
    for (int d = 0; d < 3; d++) out[d] = (uint8_t)floor(base[d] * s + 0.5);
    return true;
}

static double edge(const vproj *a, const vproj *b, double x, double y)
{
    return (b->x - a->x) * (y - a->y) - (b->y - a->y) * (x - a->x);
}

static void raster(layer *L, const tri *t, const vproj *a, const vproj *b, const vproj *c,
                   const uint8_t rgb[3])
{
    double area = edge(a, b, c->x, c->y);
    if (!(fabs(area) > 0.0)) return;
    long long cost = (long long)(t->x1 - t->x0 + 1) * (t->y1 - t->y0 + 1);
    if (cost > L->budget) {
        L->budget = 0;
        return;
    }
    L->budget -= cost;
    double sg = area > 0.0 ? 1.0 : -1.0, inv = 1.0 / fabs(area);
    const size_t lw = (size_t)(L->x1 - L->x0);
    for (int y = t->y0; y <= t->y1; y++) {
        for (int x = t->x0; x <= t->x1; x++) {
            double w0 = sg * edge(b, c, x, y), w1 = sg * edge(c, a, x, y), w2 = sg * edge(a, b, x, y);
            if (w0 < 0.0 || w1 < 0.0 || w2 < 0.0) continue;
            /* Inverse depth is linear in screen space: perspective-correct. */
            float iz = (float)((w0 * a->iz + w1 * b->iz + w2 * c->iz) * inv);
            size_t o = (size_t)(y - L->y0) * lw + (size_t)(x - L->x0);
            if (!(iz > L->iz[o])) continue;
            L->iz[o] = iz;
            memcpy(L->rgb + o * 3, rgb, 3);
        }
    }
}

/* Sizes the layer (the union of drawable faces' boxes), draws every face into it and blends it
 * over the image. vp: PV_HAND_VERTICES of scratch. */
static pv_status draw_meshes(const view *v, const pv_hand *hands, int nhands, const int32_t *faces,
                             vproj *vp, pvc_msg *msg)
{
    layer L = { v->w, v->h, 0, 0, NULL, NULL, 0 };
    tri t;
    for (int hi = 0; hi < nhands; hi++) {
        project_hand(v, &hands[hi], vp);
        for (int f = 0; f < PV_HAND_FACES; f++) {
            const int32_t *ix = faces + (size_t)f * 3;
            if (!tri_box(v, &vp[ix[0]], &vp[ix[1]], &vp[ix[2]], &t)) continue;
            L.x0 = PVC_MIN(L.x0, t.x0);
            L.y0 = PVC_MIN(L.y0, t.y0);
            L.x1 = PVC_MAX(L.x1, t.x1 + 1);
            L.y1 = PVC_MAX(L.y1, t.y1 + 1);
        }
    }
    if (L.x0 >= L.x1 || L.y0 >= L.y1) return PV_OK;
    size_t n = (size_t)(L.x1 - L.x0) * (size_t)(L.y1 - L.y0);
    L.iz = pvc_calloc(n, sizeof *L.iz);
    L.rgb = pvc_malloc(n * 3);
    if (!L.iz || !L.rgb) {
        pvc_free(L.iz);
        pvc_free(L.rgb);
        return pvc_fail(msg, PV_ENOMEM, "hamer render: out of memory for a %dx%d mesh layer",
                        L.x1 - L.x0, L.y1 - L.y0);
    }
    L.budget = (long long)PVM_HAMER_RENDER_WORK * v->w * v->h + (1 << 20);
    for (int hi = 0; hi < nhands; hi++) {
        const pv_hand *h = &hands[hi];
        uint8_t rgb[3];
        project_hand(v, h, vp);
        for (int f = 0; f < PV_HAND_FACES && L.budget > 0; f++) {
            const int32_t *ix = faces + (size_t)f * 3;
            const vproj *a = &vp[ix[0]], *b = &vp[ix[1]], *c = &vp[ix[2]];
            if (!tri_box(v, a, b, c, &t)) continue;
            if (!face_colour(h, ix, k_mesh[h->is_right ? 1 : 0], rgb)) continue;
            raster(&L, &t, a, b, c, rgb);
        }
    }
    const double al = PVM_HAMER_RENDER_ALPHA;
    for (int y = L.y0; y < L.y1; y++) {
        for (int x = L.x0; x < L.x1; x++) {
            size_t o = (size_t)(y - L.y0) * (size_t)(L.x1 - L.x0) + (size_t)(x - L.x0);
            if (!(L.iz[o] > 0.0f)) continue;
            uint8_t *p = v->px + ((size_t)y * (size_t)v->w + (size_t)x) * 3;
            for (int d = 0; d < 3; d++)
                p[d] = (uint8_t)floor((1.0 - al) * p[d] + al * L.rgb[o * 3 + d] + 0.5);
        }
    }
    pvc_free(L.iz);
    pvc_free(L.rgb);
    return PV_OK;
}

/* ---- lines and dots -------------------------------------------------------------------------- */
/* A segment between picture positions, lw pixels wide (an lw x lw square on the nearest pixel
 * of each of max(|dx|, |dy|) + 1 evenly spaced points). */
static void draw_line(const view *v, double x0, double y0, double x1, double y1, int lw,
                      const uint8_t rgb[3])
{
    if (far_px(x0) || far_px(y0) || far_px(x1) || far_px(y1)) return;
    double m = lw + 2.0;
    if (!pvio_draw_clip_segment(&x0, &y0, &x1, &y1, -m, -m, v->w - 1.0 + m, v->h - 1.0 + m)) return;
    double dx = x1 - x0, dy = y1 - y0;
    int n = (int)ceil(fmax(fabs(dx), fabs(dy)));
    int off = (lw - 1) / 2;
    for (int i = 0; i <= n; i++) {
        double s = n ? (double)i / n : 0.0;
        int px = (int)floor(x0 + s * dx + 0.5), py = (int)floor(y0 + s * dy + 0.5);
        if (lw == 1) pvio_draw_put(&v->c, px, py, rgb);
        else pvio_draw_fill(&v->c, px - off, py - off, px - off + lw, py - off + lw, rgb);
    }
}

static void draw_disc(const view *v, double x, double y, int r, const uint8_t rgb[3])
{
    if (!(x > -r - 2.0 && x < v->w + r + 2.0 && y > -r - 2.0 && y < v->h + r + 2.0)) return;
    pvio_draw_disc(&v->c, (int)floor(x + 0.5), (int)floor(y + 0.5), r, rgb);
}

static void draw_box(const view *v, const pv_hand *h)
{
    double x0, y0, x1, y1;
    to_view(v, h->box[0], h->box[1], &x0, &y0);
    to_view(v, h->box[2], h->box[3], &x1, &y1);
    const uint8_t *ink = k_box[h->is_right ? 1 : 0];
    int lw = PVC_MAX(1, (v->w + v->h) / 2400);     /* thin: 1 px up to ~1200 px */
    draw_line(v, x0, y0, x1, y0, lw, ink);
    draw_line(v, x1, y0, x1, y1, lw, ink);
    draw_line(v, x1, y1, x0, y1, lw, ink);
    draw_line(v, x0, y1, x0, y0, lw, ink);
}

static void draw_skeleton(const view *v, const pv_hand *h, int lw, int r)
{
    double x[PV_HAND_KEYPOINTS], y[PV_HAND_KEYPOINTS];
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++)
        to_view(v, h->keypoints_2d[k * 2], h->keypoints_2d[k * 2 + 1], &x[k], &y[k]);
    uint8_t ink[3];
    for (int k = 1; k < PV_HAND_KEYPOINTS; k++) {
        int from = (k - 1) % 4 == 0 ? 0 : k - 1;     /* a finger's base hangs off the wrist */
        pvm_hamer_render_keypoint_rgb(k, ink);
        draw_line(v, x[from], y[from], x[k], y[k], lw, ink);
    }
    for (int k = 0; k < PV_HAND_KEYPOINTS; k++) {
        pvm_hamer_render_keypoint_rgb(k, ink);
        draw_disc(v, x[k], y[k], r + 1, k_rim);
        draw_disc(v, x[k], y[k], r, ink);
    }
}


/* ---- entry point ----------------------------------------------------------------------------- */
static pv_status check_inputs(const uint8_t *rgb, const pv_hand *hands, int nhands,
                              const int32_t *faces, pvc_msg *msg)
{
    if (!rgb) return pvc_fail(msg, PV_EINPUT, "hamer render: rgb is NULL");
    if (nhands < 0 || nhands > PVM_HAMER_RENDER_MAX_HANDS)
        return pvc_fail(msg, PV_EINPUT, "hamer render: nhands = %d (must be 0..%d)", nhands,
                        PVM_HAMER_RENDER_MAX_HANDS);
    if (nhands > 0 && !hands)
        return pvc_fail(msg, PV_EINPUT, "hamer render: hands is NULL with nhands = %d", nhands);
    if (faces)
        for (int i = 0; i < PV_HAND_FACES * 3; i++)
            if (faces[i] < 0 || faces[i] >= PV_HAND_VERTICES)
                return pvc_fail(msg, PV_EINPUT, "hamer render: faces[%d][%d] = %d (must be "
                                "0..%d)", i / 3, i % 3, (int)faces[i], PV_HAND_VERTICES - 1);
    return PV_OK;
}

static pv_status render(const pvm_hamer_render_geom *g, const uint8_t *rgb, int W, int H,
                        const pv_hand *hands, int nhands, const int32_t *faces, const char *title,
                        uint8_t *canvas, pvc_msg *msg)
{
    uint8_t *img = canvas + (size_t)g->band * (size_t)g->width * 3;
    view v = { img, g->img_w, g->img_h, g->sx, g->sy, pvio_canvas_make(img, g->img_w, g->img_h) };
    if (v.w != W || v.h != H) {
        double *acc = pvc_malloc((size_t)v.w * 3 * sizeof *acc);
        if (!acc) return pvc_fail(msg, PV_ENOMEM, "hamer render: out of memory scaling to %dx%d",
                                  v.w, v.h);
        pvio_draw_scale_area(rgb, W, H, v.px, v.w, v.h, (size_t)v.w * 3, acc);
        pvc_free(acc);
    } else {
        pvio_draw_scale_area(rgb, W, H, v.px, v.w, v.h, (size_t)v.w * 3, NULL);
    }
    if (faces && nhands > 0) {
        vproj *vp = pvc_malloc(PV_HAND_VERTICES * sizeof *vp);
        if (!vp) return pvc_fail(msg, PV_ENOMEM, "hamer render: out of memory projecting");
        pv_status st = draw_meshes(&v, hands, nhands, faces, vp, msg);
        pvc_free(vp);
        if (st != PV_OK) return st;
    }
    for (int i = 0; i < nhands; i++) draw_box(&v, &hands[i]);
    for (int i = 0; i < nhands; i++) draw_skeleton(&v, &hands[i], g->line_px, g->dot_r);

    if (g->band) {
        uint8_t band[3], ink[3];
        pvio_bev_rgb(PVIO_BEV_INK_BAND, band);
        pvio_bev_rgb(PVIO_BEV_INK_TITLE, ink);
        for (size_t i = 0; i < (size_t)g->band * (size_t)g->width; i++) memcpy(canvas + i * 3, band, 3);
        int ts = g->text_scale;
        pvio_text_draw(canvas, g->width, g->band, 4 * ts, 3 * ts, title, ts, ink);
    }
    return PV_OK;
}

pv_status pvm_hamer_render_png(const uint8_t *rgb, int W, int H, const pv_hand *hands, int nhands,
                               const int32_t *faces, const char *title, int max_width, void **png,
                               size_t *len, pvc_msg *msg)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    if (!png || !len) return pvc_fail(msg, PV_EINPUT, "hamer render: %s is NULL", png ? "len" : "png");
    pvm_hamer_render_geom g;
    pv_status st = pvm_hamer_render_geometry(W, H, title, max_width, &g, msg);
    if (st != PV_OK) return st;
    if ((st = check_inputs(rgb, hands, nhands, faces, msg)) != PV_OK) return st;
    size_t nbytes = (size_t)g.width * (size_t)g.height * 3;
    uint8_t *canvas = pvc_malloc(nbytes);
    if (!canvas)
        return pvc_fail(msg, PV_ENOMEM, "hamer render: out of memory for a %dx%d picture (%zu "
                        "bytes)", g.width, g.height, nbytes);
    st = render(&g, rgb, W, H, hands, nhands, faces, title, canvas, msg);
    /* a photograph: libpng's adaptive filters; level 3 keeps a full-HD frame well under 0.1 s */
    pvio_png_opts o = { .level = 3, .filter_none = false, .title = title, .software = true, .what = "hamer render" };
    if (st == PV_OK) st = pvio_png_encode_rgb(canvas, g.width, g.height, &o, png, len, msg);
    pvc_free(canvas);
    return st;
}
