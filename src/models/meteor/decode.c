/* meteor host decode (spec sections 4 and 5; the readings are listed in decode.h). Written
 * from the spec's formulas. Doubles wherever the numpy reference (tools/ref/meteor_decode_ref.py)
 * must land on the same float: thresholds as float32 logits, scores and geometry in double. */
#include "models/meteor/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const pvm_meteor_cam_names[PVM_METEOR_NCAM] = {
    "CAM_FRONT_WIDE", "CAM_FRONT_LEFT", "CAM_FRONT_RIGHT", "CAM_BACK_WIDE",
    "CAM_BACK_LEFT", "CAM_BACK_RIGHT", "CAM_FRONT_NARROW", "CAM_BACK_NARROW",
};

#define BEV_N   (PVM_METEOR_BEV_H * PVM_METEOR_BEV_W)
#define DET_N   (PVM_METEOR_DET_H * PVM_METEOR_DET_W)
#define OCC_N   (PVM_METEOR_OCC_Z * PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY)
#define LANE_ROW0 175          /* re-argmax on rows >= 175 (x <= 45 m) */
#define DM_H 54
#define DM_W 96
#define PI_D 3.14159265358979323846

static const int s2d_h[3] = { 108, 54, 27 }, s2d_w[3] = { 192, 96, 48 }, s2d_stride[3] = { 4, 8, 16 };

struct pvm_meteor_state {
    /* yaw tracks: the previous frame's boxes (smoothed yaw) */
    int ntr;
    struct { int cls; float x, y, yaw; } tr[PVM_METEOR_MAX_3D];
    /* lanes: the pose of the frame the accumulator and the history belong to */
    bool have_pose;
    pvm_meteor_pose pose;
    float *acc, *acc_next;      /* [9][800][500] log-prob accumulator, double-buffered */
    bool acc_valid;
    uint8_t *hist[2], *hist_next[2];  /* last two fused grids (before thin_road_edge) */
    int nhist;
    int32_t *src;               /* warp map: current cell -> previous cell, -1 outside */
    /* ego */
    bool have_ego;
    int mode;
    float ribbon[6][2];
};

/* ---- small pieces ----------------------------------------------------------------------------- */
void pvm_meteor_params_default(pvm_meteor_params *p)
{
    p->cand_3d = 0.15f;
    p->keep_vehicle = 0.35f;
    p->keep_vru = 0.15f;
    p->nms_iou = 0.3f;
    p->nms_ios = 0.6f;
    p->yaw_match_m = 2.5f;
    p->yaw_alpha = 0.4f;
    p->th_2d = 0.30f;
    p->hide_2d = 7;
    p->lane_decay = 0.7f;
    p->mode_hysteresis = 0.35f;
    p->straight_lead = 1.0f;
    p->stat_logit = 0.0f;
}

float pvm_meteor_logit_threshold(float t)
{
    double d = (double)t;
    return (float)log(d / (1.0 - d));
}

static double sigmoid_d(float x) { return 1.0 / (1.0 + exp(-(double)x)); }

double pvm_meteor_wrap(double a)
{
    if (!isfinite(a)) return a;
    if (a > PI_D || a <= -PI_D) a = a - 2.0 * PI_D * floor((a + PI_D) / (2.0 * PI_D));
    if (a <= -PI_D) a += 2.0 * PI_D; /* floor's edge: a == -pi */
    return a;
}

bool pvm_meteor_is_peak(const float *map, int h, int w, int r, int c)
{
    float v = map[(size_t)r * w + c];
    for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++) {
            int rr = r + dr, cc = c + dc;
            if ((dr || dc) && rr >= 0 && rr < h && cc >= 0 && cc < w && map[(size_t)rr * w + cc] > v) return false;
        }
    return true;
}

/* ---- rotated rectangle intersection (Sutherland-Hodgman on two convex quads) ------------------- */
static void rect_corners(const float b[5], double p[4][2])
{
    double c = cos((double)b[4]), s = sin((double)b[4]), hl = 0.5 * b[2], hw = 0.5 * b[3];
    const double k[4][2] = { { hl, hw }, { -hl, hw }, { -hl, -hw }, { hl, -hw } }; /* counter-clockwise */
    for (int i = 0; i < 4; i++) {
        p[i][0] = b[0] + c * k[i][0] - s * k[i][1];
        p[i][1] = b[1] + s * k[i][0] + c * k[i][1];
    }
}

double pvm_meteor_rect_intersection(const float a[5], const float b[5], double *area_a, double *area_b)
{
    double pa[4][2], pb[4][2], poly[16][2], tmp[16][2];
    rect_corners(a, pa);
    rect_corners(b, pb);
    if (area_a) *area_a = (double)a[2] * a[3];
    if (area_b) *area_b = (double)b[2] * b[3];
    int n = 4;
    memcpy(poly, pa, sizeof pa);
    /* clip a's polygon by each edge of b (b is counter-clockwise: inside = left of the edge) */
    for (int e = 0; e < 4 && n > 0; e++) {
        const double *p0 = pb[e], *p1 = pb[(e + 1) & 3];
        double ex = p1[0] - p0[0], ey = p1[1] - p0[1];
        int m = 0;
        for (int i = 0; i < n; i++) {
            const double *s = poly[i], *t = poly[(i + 1) % n];
            double ds = ex * (s[1] - p0[1]) - ey * (s[0] - p0[0]);
            double dt = ex * (t[1] - p0[1]) - ey * (t[0] - p0[0]);
            if (ds >= 0) { tmp[m][0] = s[0]; tmp[m][1] = s[1]; m++; }
            if ((ds >= 0) != (dt >= 0)) {
                double f = ds / (ds - dt);
                tmp[m][0] = s[0] + f * (t[0] - s[0]);
                tmp[m][1] = s[1] + f * (t[1] - s[1]);
                m++;
            }
        }
        n = m;
        memcpy(poly, tmp, sizeof(double) * 2 * (size_t)m);
    }
    if (n < 3) return 0.0;
    double area = 0;
    for (int i = 0; i < n; i++) area += poly[i][0] * poly[(i + 1) % n][1] - poly[(i + 1) % n][0] * poly[i][1];
    area = 0.5 * fabs(area);
    return isfinite(area) ? area : 0.0;
}

float pvm_meteor_yaw_smooth(float yaw_new, float yaw_old, float alpha)
{
    double nw = (double)yaw_new, old = (double)yaw_old;
    double d = pvm_meteor_wrap(nw - old);
    if (fabs(d) > 0.5 * PI_D) {
        old = pvm_meteor_wrap(old + PI_D);
        d = pvm_meteor_wrap(nw - old);
    }
    return (float)pvm_meteor_wrap(old + (double)alpha * d);
}

/* 4x4 inverse (Gauss-Jordan, partial pivoting) in double; false when singular */
static bool inv4(const float T[16], double out[16])
{
    double a[4][8];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++) a[r][c] = c < 4 ? (double)T[r * 4 + c] : (c - 4 == r ? 1.0 : 0.0);
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(a[r][c]) > fabs(a[p][c])) p = r;
        if (!(fabs(a[p][c]) > 1e-12)) return false;
        if (p != c)
            for (int k = 0; k < 8; k++) { double t = a[c][k]; a[c][k] = a[p][k]; a[p][k] = t; }
        double d = a[c][c];
        for (int k = 0; k < 8; k++) a[c][k] /= d;
        for (int r = 0; r < 4; r++)
            if (r != c && a[r][c] != 0.0) {
                double f = a[r][c];
                for (int k = 0; k < 8; k++) a[r][k] -= f * a[c][k];
            }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) out[r * 4 + c] = a[r][c + 4];
    return true;
}

/* camera centre o and ray direction d (ego frame) through pixel (u, v) */
static bool pixel_ray(const float K[9], const double Ti[16], double u, double v, double o[3], double d[3])
{
    double fx = K[0], cx = K[2], fy = K[4], cy = K[5];
    if (!(fx != 0.0) || !(fy != 0.0)) return false;
    double dc[3] = { (u - cx) / fx, (v - cy) / fy, 1.0 };
    for (int i = 0; i < 3; i++) {
        o[i] = Ti[i * 4 + 3];
        d[i] = Ti[i * 4 + 0] * dc[0] + Ti[i * 4 + 1] * dc[1] + Ti[i * 4 + 2] * dc[2];
    }
    return true;
}

static bool ground_hit(const double o[3], const double d[3], double *x, double *y)
{
    if (!(d[2] < 0.0) || !(o[2] > 0.0)) return false;
    double lam = -o[2] / d[2];
    *x = o[0] + lam * d[0];
    *y = o[1] + lam * d[1];
    return isfinite(*x) && isfinite(*y);
}

bool pvm_meteor_ground_ray(const float K[9], const float T_cam_ego[16], double u, double v, double *x, double *y)
{
    double Ti[16], o[3], d[3];
    if (!inv4(T_cam_ego, Ti) || !pixel_ray(K, Ti, u, v, o, d)) return false;
    return ground_hit(o, d, x, y);
}

bool pvm_meteor_lane_motion(const pvm_meteor_pose *prev, const pvm_meteor_pose *cur, double *tx, double *ty,
                            double *dyaw)
{
    double dx = cur->x - prev->x, dy = cur->y - prev->y;
    double c0 = cos(prev->yaw), s0 = sin(prev->yaw);
    *tx = c0 * dx + s0 * dy;
    *ty = -s0 * dx + c0 * dy;
    *dyaw = pvm_meteor_wrap(cur->yaw - prev->yaw);
    return !(fabs(*tx) + fabs(*ty) < 10.0) || !(fabs(*dyaw) < 0.5);
}

static bool is_thin(int k) { return k >= 3 && k <= 6; }
static bool is_drivable(int k) { return k == 1 || k == 3 || k == 4 || k == 5; }

void pvm_meteor_thin_road_edge(uint8_t *g)
{
    const int H = PVM_METEOR_BEV_H, W = PVM_METEOR_BEV_W;
    /* only 6 -> 0 is written and only {1,3,4,5} is read, so in place equals simultaneous */
    for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++) {
            uint8_t *p = g + (size_t)r * W + c;
            if (*p != 6) continue;
            bool touch = (r > 0 && is_drivable(p[-W])) || (r + 1 < H && is_drivable(p[W])) ||
                         (c > 0 && is_drivable(p[-1])) || (c + 1 < W && is_drivable(p[1]));
            if (!touch) *p = 0;
        }
}

int pvm_meteor_ego_mode(const float logits[3], int prev_mode, float hysteresis, float straight_lead, float adj[3])
{
    float l[3] = { logits[0], logits[1], logits[2] };
    if (prev_mode >= 0 && prev_mode < 3) l[prev_mode] = l[prev_mode] + hysteresis;
    if (adj) memcpy(adj, l, sizeof l);
    int best = l[2] > l[1] ? 2 : 1;
    return l[best] - l[0] >= straight_lead ? best : 0;
}

/* ---- state ------------------------------------------------------------------------------------ */
pv_status pvm_meteor_state_create(pvm_meteor_state **out)
{
    if (!out) return pvc_fail(NULL, PV_EINTERNAL, "pvm_meteor_state_create: out is NULL");
    *out = pvc_calloc(1, sizeof **out);
    if (!*out) return pvc_fail(NULL, PV_ENOMEM, "meteor decode state: out of memory");
    return PV_OK;
}

void pvm_meteor_state_reset(pvm_meteor_state *st)
{
    if (!st) return;
    st->ntr = 0;
    st->have_pose = false;
    st->acc_valid = false;
    st->nhist = 0;
    st->have_ego = false;
}

void pvm_meteor_state_free(pvm_meteor_state *st)
{
    if (!st) return;
    pvc_free(st->acc);
    pvc_free(st->acc_next);
    for (int i = 0; i < 2; i++) { pvc_free(st->hist[i]); pvc_free(st->hist_next[i]); }
    pvc_free(st->src);
    pvc_free(st);
}

static pv_status state_buffers(pvm_meteor_state *st, bool logits, pvc_msg *msg)
{
    if (!st->src) st->src = pvc_malloc(sizeof(int32_t) * BEV_N);
    for (int i = 0; i < 2; i++) {
        if (!st->hist[i]) st->hist[i] = pvc_malloc(BEV_N);
        if (!st->hist_next[i]) st->hist_next[i] = pvc_malloc(BEV_N);
    }
    if (logits && !st->acc) st->acc = pvc_malloc(sizeof(float) * PVM_METEOR_LANE_CLS * BEV_N);
    if (logits && !st->acc_next) st->acc_next = pvc_malloc(sizeof(float) * PVM_METEOR_LANE_CLS * BEV_N);
    if (!st->src || !st->hist[0] || !st->hist[1] || !st->hist_next[0] || !st->hist_next[1] ||
        (logits && (!st->acc || !st->acc_next)))
        return pvc_fail(msg, PV_ENOMEM, "meteor lane fusion: out of memory for the accumulator");
    return PV_OK;
}

void pvm_meteor_out_free(pvm_meteor_out *o)
{
    if (!o) return;
    pvc_free(o->boxes3d);
    pvc_free(o->boxes2d);
    pvc_free(o->unknowns);
    pvc_free(o->lanes);
    pvc_free(o->occupancy);
    pvc_free(o->risk);
    memset(o, 0, sizeof *o);
}

/* ---- candidate lists: bounded, sorted by logit desc, ties by (class, row, col) asc ------------- */
typedef struct cand { float v; int cls, r, c; } cand;

static bool cand_before(const cand *a, const cand *b)
{
    if (a->v != b->v) return a->v > b->v;
    if (a->cls != b->cls) return a->cls < b->cls;
    if (a->r != b->r) return a->r < b->r;
    return a->c < b->c;
}

static void cand_push(cand *list, int *n, int cap, cand x)
{
    if (*n == cap && !cand_before(&x, &list[cap - 1])) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && cand_before(&x, &list[i - 1])) { list[i] = list[i - 1]; i--; }
    list[i] = x;
}

/* peaks of map[h][w] above thr pushed with class cls. clip > 0: the map is read as clipped to
 * [-clip, clip] without a copy: clipping is monotone, so for thr inside (-clip, clip) a cell at or
 * above clip is always a peak (nothing clips higher) and any other candidate compares as is. */
static void collect_peaks(const float *map, int h, int w, int cls, float thr, float clip, cand *list, int *n, int cap)
{
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            float v = map[(size_t)r * w + c];
            if (!(v > thr)) continue;
            if (clip > 0 && v >= clip) v = clip;
            else if (!pvm_meteor_is_peak(map, h, w, r, c)) continue;
            cand x = { v, cls, r, c };
            cand_push(list, n, cap, x);
        }
}

/* ---- 3D boxes --------------------------------------------------------------------------------- */
static void decode_3d(const pvm_meteor_raw *raw, const pvm_meteor_params *prm, pvm_meteor_state *st,
                      pvm_meteor_out *out)
{
    cand list[PVM_METEOR_MAX_3D];
    int n = 0;
    float thr = pvm_meteor_logit_threshold(prm->cand_3d);
    for (int k = 0; k < 2; k++) collect_peaks(raw->hm + (size_t)k * DET_N, PVM_METEOR_DET_H, PVM_METEOR_DET_W, k, thr, 0.0f, list, &n, PVM_METEOR_MAX_3D);
    float keep[2] = { pvm_meteor_logit_threshold(prm->keep_vehicle), pvm_meteor_logit_threshold(prm->keep_vru) };

    /* stationary head health over the whole map (population std, range) */
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < DET_N; i++) {
        double v = raw->stationary[i];
        sum += v;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    double mean = sum / DET_N, ss = 0;
    for (int i = 0; i < DET_N; i++) { double d = raw->stationary[i] - mean; ss += d * d; }
    double sd = sqrt(ss / DET_N);
    bool healthy = sd >= 0.05 && mx - mn >= 0.2;
    out->stationary_head_healthy = healthy;

    float rects[PVM_METEOR_MAX_3D][5];
    int nk = 0;
    for (int i = 0; i < n; i++) {
        const cand *cd = &list[i];
        if (!(cd->v > keep[cd->cls])) continue;
        size_t cell = (size_t)cd->r * PVM_METEOR_DET_W + cd->c;
        float o[6];
        for (int j = 0; j < 6; j++) o[j] = raw->reg[(size_t)j * DET_N + cell];
        double x = 80.0 - ((double)cd->r + (double)o[0]) * 0.4;
        double y = 50.0 - ((double)cd->c + (double)o[1]) * 0.4;
        if (!(x >= -78.0 && x <= 78.0)) continue;
        pvm_meteor_box3d b = { 0 };
        b.cls = cd->cls;
        b.score = (float)sigmoid_d(cd->v);
        b.row = cd->r;
        b.col = cd->c;
        b.x = (float)x;
        b.y = (float)y;
        b.length = (float)exp((double)o[2]);
        b.width = (float)exp((double)o[3]);
        b.yaw_raw = (float)atan2((double)o[4], (double)o[5]);
        b.yaw = b.yaw_raw;
        float rc[5] = { b.x, b.y, b.length, b.width, b.yaw_raw };
        /* NMS: greedy in score order, against the boxes kept so far of the same class */
        bool drop = false;
        for (int j = 0; j < nk && !drop; j++) {
            if (out->boxes3d[j].cls != b.cls) continue;
            double aa, ab, inter = pvm_meteor_rect_intersection(rc, rects[j], &aa, &ab);
            double uni = aa + ab - inter, small = aa < ab ? aa : ab;
            if ((uni > 0 && inter / uni > (double)prm->nms_iou) || (small > 0 && inter / small > (double)prm->nms_ios)) drop = true;
        }
        if (drop) continue;
        /* stationary: the head when healthy, else |wp6| of the best traj mode < 0.5 m */
        const float *tj = raw->traj;
        int m = 0;
        for (int k = 1; k < 3; k++)
            if (tj[(size_t)(36 + k) * DET_N + cell] > tj[(size_t)(36 + m) * DET_N + cell]) m = k;
        if (healthy) {
            b.stationary = raw->stationary[cell] > prm->stat_logit;
            b.stationary_from_head = true;
        } else {
            double dx = tj[(size_t)(m * 12 + 10) * DET_N + cell], dy = tj[(size_t)(m * 12 + 11) * DET_N + cell];
            b.stationary = hypot(dx, dy) < 0.5;
        }
        b.future_mode = b.cls == 0 ? m : -1;
        if (b.cls == 0)
            for (int k = 0; k < 6; k++) {
                b.future[k][0] = (float)(x + (double)tj[(size_t)(m * 12 + k * 2) * DET_N + cell]);
                b.future[k][1] = (float)(y + (double)tj[(size_t)(m * 12 + k * 2 + 1) * DET_N + cell]);
            }
        memcpy(rects[nk], rc, sizeof rc);
        out->boxes3d[nk++] = b;
    }
    out->n3d = nk;

    if (!st) return;
    /* yaw smoothing against the previous frame's boxes: same class, nearest within the gate,
     * raw ego coordinates */
    for (int i = 0; i < nk; i++) {
        pvm_meteor_box3d *b = &out->boxes3d[i];
        int best = -1;
        double bd = 0;
        for (int j = 0; j < st->ntr; j++) {
            if (st->tr[j].cls != b->cls) continue;
            double d = hypot((double)b->x - st->tr[j].x, (double)b->y - st->tr[j].y);
            if (d <= (double)prm->yaw_match_m && (best < 0 || d < bd)) { best = j; bd = d; }
        }
        if (best >= 0) b->yaw = pvm_meteor_yaw_smooth(b->yaw_raw, st->tr[best].yaw, prm->yaw_alpha);
    }
    st->ntr = nk;
    for (int i = 0; i < nk; i++) {
        st->tr[i].cls = out->boxes3d[i].cls;
        st->tr[i].x = out->boxes3d[i].x;
        st->tr[i].y = out->boxes3d[i].y;
        st->tr[i].yaw = out->boxes3d[i].yaw;
    }
}

/* ---- 2D boxes and unknown obstacles ------------------------------------------------------------ */
static pv_status decode_2d(const pvm_meteor_raw *raw, const pvm_meteor_calib *cal, const pvm_meteor_params *prm,
                           pvm_meteor_out *out, pvc_msg *msg)
{
    float thr = pvm_meteor_logit_threshold(prm->th_2d);
    int cap = PVM_METEOR_NCAM * 3 * PVM_METEOR_MAX_2D;
    out->boxes2d = pvc_calloc((size_t)cap, sizeof *out->boxes2d);
    if (!out->boxes2d) return pvc_fail(msg, PV_ENOMEM, "meteor 2D boxes: out of memory");
    for (int cam = 0; cam < PVM_METEOR_NCAM; cam++) {
        if (!cal->present[cam]) continue;
        for (int s = 0; s < 3; s++) {
            int h = s2d_h[s], w = s2d_w[s], hw = h * w;
            cand list[PVM_METEOR_MAX_2D];
            int n = 0;
            for (int k = 0; k < PVM_METEOR_2D_CLS; k++) {
                const float *map = raw->hm2d[s] + ((size_t)cam * PVM_METEOR_2D_CLS + k) * hw;
                collect_peaks(map, h, w, k, thr, 50.0f, list, &n, PVM_METEOR_MAX_2D); /* logits clipped to +-50 */
            }
            const float *reg = raw->reg2d[s] + (size_t)cam * 4 * hw;
            double st = s2d_stride[s];
            for (int i = 0; i < n; i++) {
                if (list[i].cls == prm->hide_2d) continue; /* hidden after the top-48 cut */
                size_t cell = (size_t)list[i].r * w + list[i].c;
                pvm_meteor_box2d *b = &out->boxes2d[out->n2d++];
                b->cam = cam;
                b->scale = s;
                b->cls = list[i].cls;
                b->score = (float)sigmoid_d(list[i].v);
                b->cy = (float)(((double)list[i].r + (double)reg[cell]) * st);
                b->cx = (float)(((double)list[i].c + (double)reg[(size_t)hw + cell]) * st);
                b->w = (float)(exp((double)reg[(size_t)2 * hw + cell]) * st);
                b->h = (float)(exp((double)reg[(size_t)3 * hw + cell]) * st);
            }
        }
    }
    return PV_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of the in-map finite values of the 5x5 depth_mean window around the pixel's cell;
 * pixel (u, v) of the 768x432 image -> cell (floor(v / 8), floor(u / 8)), clamped into 54x96 */
static bool depth_median(const float *dm, double u, double v, double *out)
{
    if (!isfinite(u) || !isfinite(v)) return false;
    double fu = floor(u / 8.0), fv = floor(v / 8.0);
    int gc = fu < 0 ? 0 : fu > DM_W - 1 ? DM_W - 1 : (int)fu;
    int gr = fv < 0 ? 0 : fv > DM_H - 1 ? DM_H - 1 : (int)fv;
    double vals[25];
    int n = 0;
    for (int r = gr - 2; r <= gr + 2; r++)
        for (int c = gc - 2; c <= gc + 2; c++)
            if (r >= 0 && r < DM_H && c >= 0 && c < DM_W && isfinite(dm[r * DM_W + c])) vals[n++] = dm[r * DM_W + c];
    if (!n) return false;
    qsort(vals, (size_t)n, sizeof vals[0], cmp_double);
    *out = n & 1 ? vals[n / 2] : 0.5 * (vals[n / 2 - 1] + vals[n / 2]);
    return true;
}

typedef struct unk_c { double score; int box; } unk_c;

static int cmp_unk(const void *a, const void *b)
{
    const unk_c *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->box - y->box; /* boxes are in camera order: lower camera, then earlier box */
}

static pv_status decode_unknowns(const pvm_meteor_raw *raw, const pvm_meteor_calib *cal, pvm_meteor_out *out,
                                 pvc_msg *msg)
{
    out->unknowns = pvc_calloc((size_t)(out->n2d ? out->n2d : 1), sizeof *out->unknowns);
    unk_c *cs = pvc_calloc((size_t)(out->n2d ? out->n2d : 1), sizeof *cs);
    if (!out->unknowns || !cs) { pvc_free(cs); return pvc_fail(msg, PV_ENOMEM, "meteor unknown obstacles: out of memory"); }
    pvm_meteor_unknown *tmp = out->unknowns;
    double Ti[PVM_METEOR_NCAM][16];
    bool tok[PVM_METEOR_NCAM];
    for (int c = 0; c < PVM_METEOR_NCAM; c++) tok[c] = cal->present[c] && inv4(cal->T_cam_ego[c], Ti[c]);
    /* lift every class-0 box; tmp[i] is the lift of box i when cs says so */
    int nc = 0;
    for (int i = 0; i < out->n2d; i++) {
        const pvm_meteor_box2d *b = &out->boxes2d[i];
        if (b->cls != 0 || !tok[b->cam]) continue;
        const float *K = cal->K[b->cam];
        double o[3], d[3], x = 0, y = 0;
        bool ok = false, ray = false;
        if (pixel_ray(K, Ti[b->cam], (double)b->cx, (double)b->cy + 0.5 * (double)b->h, o, d) && ground_hit(o, d, &x, &y)) {
            double rng = hypot(x, y);
            ok = ray = rng > 1.5 && rng < 60.0;
        }
        if (!ok) {
            double u = (double)b->cx, v = (double)b->cy + 0.35 * (double)b->h, dist;
            const float *dm = raw->depth_mean + (size_t)b->cam * DM_H * DM_W;
            if (depth_median(dm, u, v, &dist) && dist > 1.5 && dist < 50.0 && pixel_ray(K, Ti[b->cam], u, v, o, d)) {
                double nd = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                if (nd > 0 && isfinite(nd)) {
                    x = o[0] + dist * d[0] / nd;
                    y = o[1] + dist * d[1] / nd;
                    ok = true;
                }
            }
        }
        if (!ok || !(fabs(x) <= 60.0) || !(fabs(y) <= 25.0)) continue;
        pvm_meteor_unknown u = { b->cam, i, b->score, (float)x, (float)y, ray };
        tmp[i] = u;
        cs[nc].score = b->score;
        cs[nc].box = i;
        nc++;
    }
    qsort(cs, (size_t)nc, sizeof *cs, cmp_unk);
    /* dedupe within 1.5 m: greedy by score; kept ones are moved to the front in kept order */
    pvm_meteor_unknown *kept = pvc_calloc((size_t)(nc ? nc : 1), sizeof *kept);
    if (!kept) { pvc_free(cs); return pvc_fail(msg, PV_ENOMEM, "meteor unknown obstacles: out of memory"); }
    int nk = 0;
    for (int i = 0; i < nc; i++) {
        const pvm_meteor_unknown *u = &tmp[cs[i].box];
        bool dup = false;
        for (int j = 0; j < nk && !dup; j++) dup = hypot((double)u->x - kept[j].x, (double)u->y - kept[j].y) < 1.5;
        if (!dup) kept[nk++] = *u;
    }
    memcpy(out->unknowns, kept, sizeof *kept * (size_t)nk);
    out->nunk = nk;
    pvc_free(kept);
    pvc_free(cs);
    return PV_OK;
}

/* ---- lanes ------------------------------------------------------------------------------------ */
static void lane_warp_map(int32_t *src, double tx, double ty, double dyaw)
{
    double ca = cos(dyaw), sa = sin(dyaw);
    for (int r = 0; r < PVM_METEOR_BEV_H; r++) {
        double x = 80.0 - ((double)r + 0.5) * 0.2;
        for (int c = 0; c < PVM_METEOR_BEV_W; c++) {
            double y = 50.0 - ((double)c + 0.5) * 0.2;
            double xp = ca * x - sa * y + tx, yp = sa * x + ca * y + ty;
            double fr = floor((80.0 - xp) / 0.2), fc = floor((50.0 - yp) / 0.2);
            bool in = fr >= 0 && fr < PVM_METEOR_BEV_H && fc >= 0 && fc < PVM_METEOR_BEV_W;
            src[r * PVM_METEOR_BEV_W + c] = in ? (int32_t)fr * PVM_METEOR_BEV_W + (int32_t)fc : -1;
        }
    }
}

/* acc = log_softmax(L) + decay * prev[src] (prev NULL or src < 0: 0), then the re-argmax on rows
 * >= 175 into g. Blocks of cells with the class loop outside keep every access sequential (the
 * gather excepted); the log-sum-exp is in double, summed in class order. */
static void lane_fuse(const float *L, const float *prev, const int32_t *src, float decay, float *acc, uint8_t *g)
{
    enum { B = 512, NC = PVM_METEOR_LANE_CLS };
    float m[B];
    double se[B];
    for (int i0 = 0; i0 < BEV_N; i0 += B) {
        int n = BEV_N - i0 < B ? BEV_N - i0 : B;
        memcpy(m, L + i0, sizeof(float) * (size_t)n);
        for (int k = 1; k < NC; k++) {
            const float *x = L + (size_t)k * BEV_N + i0;
            for (int j = 0; j < n; j++) m[j] = x[j] > m[j] ? x[j] : m[j];
        }
        for (int j = 0; j < n; j++) se[j] = 0.0;
        for (int k = 0; k < NC; k++) {
            const float *x = L + (size_t)k * BEV_N + i0;
            for (int j = 0; j < n; j++) {
                float d = x[j] - m[j];
                se[j] += d == 0.0f ? 1.0 : exp((double)d);
            }
        }
        for (int j = 0; j < n; j++) se[j] = (double)m[j] + log(se[j]); /* now the log-sum-exp */
        for (int k = 0; k < NC; k++) {
            const float *x = L + (size_t)k * BEV_N + i0;
            float *a = acc + (size_t)k * BEV_N + i0;
            const float *p = prev ? prev + (size_t)k * BEV_N : NULL;
            for (int j = 0; j < n; j++) {
                float lp = (float)((double)x[j] - se[j]);
                int s = p ? src[i0 + j] : -1;
                float w = s >= 0 ? p[s] : 0.0f; /* outside the old grid: no evidence */
                float t = decay * w;
                a[j] = lp + t;
            }
        }
        /* re-argmax below row 175: never writes a thin class, never overwrites one */
        for (int j = 0; j < n; j++) {
            int i = i0 + j;
            if (i < LANE_ROW0 * PVM_METEOR_BEV_W || is_thin(g[i])) continue;
            int b = 0;
            for (int k = 1; k < NC; k++)
                if (acc[(size_t)k * BEV_N + i] > acc[(size_t)b * BEV_N + i]) b = k;
            if (!is_thin(b)) g[i] = (uint8_t)b;
        }
    }
}

static bool pose_ok(const pvm_meteor_pose *p) { return p && isfinite(p->x) && isfinite(p->y) && isfinite(p->yaw); }

static pv_status decode_lanes(const pvm_meteor_raw *raw, const pvm_meteor_pose *pose, const pvm_meteor_params *prm,
                              pvm_meteor_state *st, pvm_meteor_out *out, pvc_msg *msg)
{
    memcpy(out->lanes, raw->lane, BEV_N);
    if (!st) return PV_OK;
    if (!pose_ok(pose)) {
        /* a frame without a pose clears the accumulator and the history */
        st->have_pose = false;
        st->acc_valid = false;
        st->nhist = 0;
        return PV_OK;
    }
    bool logits = raw->lane_logit != NULL;
    pv_status s = state_buffers(st, logits, msg);
    if (s != PV_OK) return s;
    bool reset = true;
    if (st->have_pose) {
        double tx, ty, dyaw;
        reset = pvm_meteor_lane_motion(&st->pose, pose, &tx, &ty, &dyaw);
        if (!reset) lane_warp_map(st->src, tx, ty, dyaw);
    }
    if (reset) { st->acc_valid = false; st->nhist = 0; }
    const int32_t *src = st->src;
    uint8_t *g = out->lanes;
    if (logits) {
        lane_fuse(raw->lane_logit, st->acc_valid ? st->acc : NULL, src, prm->lane_decay, st->acc_next, g);
        float *acc = st->acc_next;
        st->acc_next = st->acc;
        st->acc = acc;
        st->acc_valid = true;
    } else {
        st->acc_valid = false;
        /* persistence vote: cells of an area class or unlabeled take the area class {1,2,8}
         * that both warped previous grids agree on */
        if (st->nhist == 2)
            for (int i = LANE_ROW0 * PVM_METEOR_BEV_W; i < BEV_N; i++) {
                int j = src[i];
                if (j < 0) continue;
                int a = st->hist[0][j], b = st->hist[1][j], cur = g[i];
                if (a == b && (a == 1 || a == 2 || a == 8) && (cur == 0 || cur == 1 || cur == 2 || cur == 8)) g[i] = (uint8_t)a;
            }
    }
    /* history: [0] this frame's fused grid, [1] the previous one warped into this frame */
    if (st->nhist >= 1) {
        uint8_t *h1 = st->hist_next[1];
        for (int i = 0; i < BEV_N; i++) h1[i] = src[i] >= 0 ? st->hist[0][src[i]] : 0;
        st->hist_next[1] = st->hist[1];
        st->hist[1] = h1;
    }
    memcpy(st->hist[0], g, BEV_N);
    st->nhist = st->nhist >= 1 ? 2 : 1;
    st->have_pose = true;
    st->pose = *pose;
    out->lanes_fused = true;
    return PV_OK;
}

/* occupancy: argmax over the 10 classes, first maximum (comparisons with NaN are false), in
 * blocks with the class loop outside so the compare-and-select vectorises */
static void occupancy_argmax(const float *occ, uint8_t *out)
{
    enum { B = 2048 };
    float bv[B];
    int32_t bi[B];
    for (int i0 = 0; i0 < OCC_N; i0 += B) {
        int n = OCC_N - i0 < B ? OCC_N - i0 : B;
        memcpy(bv, occ + i0, sizeof(float) * (size_t)n);
        memset(bi, 0, sizeof(int32_t) * (size_t)n);
        for (int k = 1; k < PVM_METEOR_OCC_C; k++) {
            const float *p = occ + (size_t)k * OCC_N + i0;
            for (int j = 0; j < n; j++) {
                bool m = p[j] > bv[j];
                bv[j] = m ? p[j] : bv[j];
                bi[j] = m ? k : bi[j];
            }
        }
        for (int j = 0; j < n; j++) out[i0 + j] = (uint8_t)bi[j];
    }
}

/* ---- the frame ---------------------------------------------------------------------------------- */
pv_status pvm_meteor_decode(const pvm_meteor_raw *raw, const pvm_meteor_calib *cal, const pvm_meteor_pose *pose,
                            const pvm_meteor_params *prm, pvm_meteor_state *st, pvm_meteor_out *out, pvc_msg *msg)
{
    if (!out) return pvc_fail(msg, PV_EINTERNAL, "meteor decode: out is NULL");
    memset(out, 0, sizeof *out);
    if (!raw || !cal || !prm) return pvc_fail(msg, PV_EINTERNAL, "meteor decode: %s is NULL", !raw ? "raw" : !cal ? "cal" : "prm");
    static const char *const names[] = { "lane", "hm", "reg", "hm2d_s0", "hm2d_s1", "hm2d_s2", "reg2d_s0", "reg2d_s1",
                                         "reg2d_s2", "ego", "occ", "traj", "stationary", "tl", "risk", "depth_mean" };
    const void *ptrs[] = { raw->lane, raw->hm, raw->reg, raw->hm2d[0], raw->hm2d[1], raw->hm2d[2], raw->reg2d[0], raw->reg2d[1],
                           raw->reg2d[2], raw->ego, raw->occ, raw->traj, raw->stationary, raw->tl, raw->risk, raw->depth_mean };
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (!ptrs[i]) return pvc_fail(msg, PV_EINTERNAL, "meteor decode: output '%s' is NULL", names[i]);

    pv_status s = PV_ENOMEM;
    out->boxes3d = pvc_calloc(PVM_METEOR_MAX_3D, sizeof *out->boxes3d);
    out->lanes = pvc_malloc(BEV_N);
    out->occupancy = pvc_malloc(OCC_N);
    out->risk = pvc_malloc(sizeof(float) * DET_N);
    if (!out->boxes3d || !out->lanes || !out->occupancy || !out->risk) {
        s = pvc_fail(msg, PV_ENOMEM, "meteor decode: out of memory");
        goto fail;
    }

    decode_3d(raw, prm, st, out);
    if ((s = decode_2d(raw, cal, prm, out, msg)) != PV_OK) goto fail;
    if ((s = decode_unknowns(raw, cal, out, msg)) != PV_OK) goto fail;
    if ((s = decode_lanes(raw, pose, prm, st, out, msg)) != PV_OK) goto fail;
    pvm_meteor_thin_road_edge(out->lanes);

    occupancy_argmax(raw->occ, out->occupancy);
    for (int i = 0; i < DET_N; i++) out->risk[i] = (float)sigmoid_d(raw->risk[i]);

    /* traffic light: softmax in double, state = first maximum */
    double mt = raw->tl[0], se = 0;
    int ts = 0;
    for (int k = 1; k < 4; k++)
        if (raw->tl[k] > raw->tl[ts]) ts = k;
    for (int k = 1; k < 4; k++) if (raw->tl[k] > mt) mt = raw->tl[k];
    for (int k = 0; k < 4; k++) se += exp((double)raw->tl[k] - mt);
    for (int k = 0; k < 4; k++) out->tl_prob[k] = (float)(exp((double)raw->tl[k] - mt) / se);
    out->tl_state = ts;

    /* ego plan */
    pvm_meteor_ego *e = &out->ego;
    e->mode = pvm_meteor_ego_mode(raw->ego + 36, st && st->have_ego ? st->mode : -1, prm->mode_hysteresis,
                                  prm->straight_lead, e->mode_logits);
    for (int k = 0; k < 6; k++)
        for (int j = 0; j < 2; j++) e->waypoints[k][j] = raw->ego[e->mode * 12 + k * 2 + j];
    e->steer = raw->ego[39];
    e->accel = raw->ego[40];
    e->brake_prob = (float)sigmoid_d(raw->ego[41]);
    e->brake = raw->ego[41] > pvm_meteor_logit_threshold(0.5f);
    if (st && st->have_ego)
        for (int k = 0; k < 6; k++)
            for (int j = 0; j < 2; j++) {
                float a = 0.55f * st->ribbon[k][j], b = 0.45f * e->waypoints[k][j];
                e->ribbon[k][j] = a + b;
            }
    else
        memcpy(e->ribbon, e->waypoints, sizeof e->ribbon);
    if (st) {
        st->have_ego = true;
        st->mode = e->mode;
        memcpy(st->ribbon, e->ribbon, sizeof st->ribbon);
    }
    return PV_OK;
fail:
    pvm_meteor_out_free(out);
    return s;
}
