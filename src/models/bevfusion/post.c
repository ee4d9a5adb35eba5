/* bevfusion post-processing with Autoware's autoware_bevfusion semantics (specs/bevfusion.md 3):
 * decode -> yaw-norm gate -> distance-binned score thresholds -> circle NMS (class-agnostic,
 * greedy) -> DetectedObject fields -> IoU-BEV NMS (non-greedy) -> area-based class remapper.
 *
 * Everything runs in the caller's workspace (candidates + drop flags): no allocation, no libc
 * sort (glibc's qsort may allocate), and a total order on candidates (score descending, then
 * proposal index ascending) so the output never depends on the sort algorithm.
 *
 * Where perceive adds to Autoware: a proposal whose label is outside 0..nclass-1, or whose
 * score or decoded box has a NaN/Inf, is dropped at the score stage (Autoware would index out
 * of range or carry the NaN along). */
#include "models/bevfusion/post.h"

#include <math.h>
#include <string.h>

/* ---- labels and remapper -------------------------------------------------------------------- */
uint8_t pvm_bevfusion_label_from_name(const char *name)
{
    static const struct { const char *name; uint8_t label; } names[] = {
        { "CAR", PVM_BF_CAR }, { "TRUCK", PVM_BF_TRUCK }, { "BUS", PVM_BF_BUS },
        { "TRAILER", PVM_BF_TRAILER }, { "MOTORCYCLE", PVM_BF_MOTORCYCLE },
        { "BICYCLE", PVM_BF_BICYCLE }, { "PEDESTRIAN", PVM_BF_PEDESTRIAN },
    };
    if (!name) return PVM_BF_UNKNOWN;
    for (size_t i = 0; i < PVC_COUNTOF(names); i++)
        if (strcmp(name, names[i].name) == 0) return names[i].label;
    return PVM_BF_UNKNOWN;
}

uint8_t pvm_bevfusion_remap_label(const pvm_bevfusion_params *p, uint8_t label, float length, float width)
{
    if (!p || label >= PVM_BF_NLABELS) return label;
    double area = (double)length * (double)width;
    for (int c = 0; c < PVM_BF_NLABELS; c++)
        if (p->remap_allow[label][c] && (double)p->remap_min[label][c] <= area &&
            area <= (double)p->remap_max[label][c])
            return (uint8_t)c;
    return label;
}

/* ---- rotated-box IoU ------------------------------------------------------------------------ */
/* Sutherland-Hodgman: box a is clipped by the four half-planes of box b (both counter-clockwise).
 * One clip step at most doubles the vertex count (4, 8, 16, 32, 64), so 64 slots always suffice,
 * even when rounding makes a nearly collinear vertex flip sides. */
#define POST_POLY_MAX 64

typedef struct post_pt { double x, y; } post_pt;

static void post_corners(const float b[5], post_pt c[4])
{
    static const double sx[4] = { 1, -1, -1, 1 }, sy[4] = { 1, 1, -1, -1 };   /* CCW in the box frame */
    double hl = 0.5 * (double)b[2], hw = 0.5 * (double)b[3];
    double cs = cos((double)b[4]), sn = sin((double)b[4]);
    for (int k = 0; k < 4; k++) {
        double lx = sx[k] * hl, ly = sy[k] * hw;
        c[k].x = (double)b[0] + lx * cs - ly * sn;
        c[k].y = (double)b[1] + lx * sn + ly * cs;
    }
}

/* > 0 when q lies left of the directed line a -> b (inside for a CCW polygon) */
static double post_side(post_pt a, post_pt b, post_pt q)
{
    return (b.x - a.x) * (q.y - a.y) - (b.y - a.y) * (q.x - a.x);
}

/* The point of segment s -> e on the line, given the two side values (of opposite signs). */
static post_pt post_cut(post_pt s, post_pt e, double ds, double de)
{
    double t = ds / (ds - de);
    post_pt r = { s.x + t * (e.x - s.x), s.y + t * (e.y - s.y) };
    return r;
}

static int post_clip(const post_pt *in, int n, post_pt a, post_pt b, post_pt *out)
{
    int m = 0;
    for (int k = 0; k < n; k++) {
        post_pt s = in[k == 0 ? n - 1 : k - 1], e = in[k];
        double ds = post_side(a, b, s), de = post_side(a, b, e);
        if (de >= 0) {
            if (ds < 0) out[m++] = post_cut(s, e, ds, de);
            out[m++] = e;
        } else if (ds >= 0) {
            out[m++] = post_cut(s, e, ds, de);
        }
    }
    return m;
}

static double post_area(const post_pt *v, int n)
{
    double s = 0;
    for (int k = 0; k < n; k++) {
        post_pt p = v[k], q = v[k + 1 < n ? k + 1 : 0];
        s += p.x * q.y - q.x * p.y;
    }
    return 0.5 * fabs(s);
}

static double post_iou(const float a[5], const float b[5])
{
    for (int i = 0; i < 5; i++)
        if (!isfinite(a[i]) || !isfinite(b[i])) return 0;
    if (!(a[2] > 0 && a[3] > 0 && b[2] > 0 && b[3] > 0)) return 0;
    double area_a = (double)a[2] * (double)a[3], area_b = (double)b[2] * (double)b[3];
    double inter = 0;
    /* boxes whose circumscribed circles are apart cannot meet (margin for rounding) */
    double dx = (double)a[0] - (double)b[0], dy = (double)a[1] - (double)b[1];
    double reach = 0.5 * (hypot(a[2], a[3]) + hypot(b[2], b[3]));
    if (dx * dx + dy * dy <= reach * reach * (1 + 1e-9)) {
        post_pt pa[4], pb[4], buf[2][POST_POLY_MAX];
        post_corners(a, pa);
        post_corners(b, pb);
        int n = 4, cur = 0;
        memcpy(buf[0], pa, sizeof pa);
        for (int k = 0; k < 4 && n > 0; k++) {
            n = post_clip(buf[cur], n, pb[k], pb[(k + 1) % 4], buf[cur ^ 1]);
            cur ^= 1;
        }
        inter = n >= 3 ? post_area(buf[cur], n) : 0;
    }
    double uni = area_a + area_b - inter;
    if (!(uni >= 0.01)) return 0;      /* Autoware: a union under 0.01 m^2 counts as no overlap */
    double iou = inter / uni;
    return iou < 0 ? 0 : iou > 1 ? 1 : iou;
}

float pvm_bevfusion_iou_bev(const float a[5], const float b[5])
{
    if (!a || !b) return 0;
    return (float)post_iou(a, b);
}

/* ---- decode --------------------------------------------------------------------------------- */
typedef struct post_box { float x, y, z, l, w, h, yaw, vx, vy, yaw_norm; } post_box;

/* Proposal i of bbox_pred [10, P]; false when any decoded value is not finite. Float arithmetic
 * in Autoware's order: cell * out_size_factor * voxel_size + range minimum. */
static bool post_decode(const pvm_bevfusion_params *p, const float *bbox_pred, int P, int i, post_box *o)
{
    const float *b = bbox_pred + i;
    size_t r = (size_t)P;
    float osf = (float)p->out_size_factor;
    o->x = b[0] * osf * p->voxel_size[0] + p->pc_range[0];
    o->y = b[r] * osf * p->voxel_size[1] + p->pc_range[1];
    o->z = b[2 * r];
    o->l = expf(b[3 * r]);
    o->w = expf(b[4 * r]);
    o->h = expf(b[5 * r]);
    float sn = b[6 * r], cs = b[7 * r];
    o->yaw = atan2f(sn, cs);
    o->yaw_norm = sqrtf(sn * sn + cs * cs);
    o->vx = b[8 * r];
    o->vy = b[9 * r];
    const float v[9] = { o->x, o->y, o->z, o->l, o->w, o->h, o->yaw, o->vx, o->vy };
    for (int k = 0; k < 9; k++)
        if (!isfinite(v[k])) return false;
    return true;      /* yaw_norm may overflow to Inf: it then passes the gate, like Autoware */
}

static void post_object(const post_box *b, uint8_t lbl, int cls, int prop, float score,
                        pvm_bevfusion_object *o)
{
    memset(o, 0, sizeof *o);
    o->label = lbl;
    o->label_before_remap = lbl;
    o->orientation_availability =
        (lbl == PVM_BF_CAR || lbl == PVM_BF_TRUCK || lbl == PVM_BF_BUS || lbl == PVM_BF_TRAILER) ? 1 : 0;
    o->shape_type = 0;
    o->class_index = cls;
    o->proposal = prop;
    o->existence_probability = score;
    o->position[0] = b->x;
    o->position[1] = b->y;
    o->position[2] = b->z;
    o->yaw = b->yaw;
    o->orientation[2] = sinf(b->yaw * 0.5f);
    o->orientation[3] = cosf(b->yaw * 0.5f);
    o->dimensions[0] = b->l;
    o->dimensions[1] = b->w;
    o->dimensions[2] = b->h;
    o->velocity[0] = b->vx;
    o->velocity[1] = b->vy;
}

/* ---- candidates: order and circle NMS ------------------------------------------------------- */
typedef struct post_cand { float score; int32_t prop; float x, y; } post_cand;

static bool cand_first(const post_cand *a, const post_cand *b)
{
    return a->score > b->score || (a->score == b->score && a->prop < b->prop);
}

static void cand_swap(post_cand *a, post_cand *b)
{
    post_cand t = *a;
    *a = *b;
    *b = t;
}

/* Heap whose root is the candidate that ranks last. */
static void cand_sift(post_cand *c, int root, int n)
{
    for (;;) {
        int child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && cand_first(&c[child], &c[child + 1])) child++;
        if (!cand_first(&c[root], &c[child])) return;
        cand_swap(&c[root], &c[child]);
        root = child;
    }
}

/* Heapsort into rank order (best first). */
static void cand_sort(post_cand *c, int n)
{
    for (int i = n / 2 - 1; i >= 0; i--) cand_sift(c, i, n);
    for (int end = n - 1; end > 0; end--) {
        cand_swap(&c[0], &c[end]);
        cand_sift(c, 0, end);
    }
}

/* ---- the pipeline --------------------------------------------------------------------------- */
size_t pvm_bevfusion_post_ws_bytes(int P)
{
    if (P <= 0) return 0;
    return (size_t)P * sizeof(post_cand) + (size_t)P;     /* candidates, then IoU-NMS drop flags */
}

pv_status pvm_bevfusion_post(const pvm_bevfusion_params *p, const float *bbox_pred, const float *score,
                             const int64_t *label, int P, pvm_bevfusion_object *out, int *nout,
                             pvm_bevfusion_post_stats *st, void *ws, pvc_msg *msg)
{
    if (nout) *nout = 0;
    if (st) memset(st, 0, sizeof *st);
    if (!p || !out || !nout)
        return pvc_fail(msg, PV_EINPUT, "bevfusion post: params, out and nout are required");
    if (P < 0) return pvc_fail(msg, PV_EINPUT, "bevfusion post: P = %d proposals", P);
    if (P > 0 && (!bbox_pred || !score || !label || !ws))
        return pvc_fail(msg, PV_EINPUT, "bevfusion post: bbox_pred, score, label and ws are required");
    if ((uintptr_t)ws % _Alignof(post_cand) != 0)
        return pvc_fail(msg, PV_EINPUT, "bevfusion post: ws is not %zu-byte aligned", _Alignof(post_cand));
    if (p->nclass < 1 || p->nclass > PVM_BF_MAX_CLASSES)
        return pvc_fail(msg, PV_EINPUT, "bevfusion post: params.nclass = %d (expected 1 to %d; ml_package "
                        "not loaded?)", p->nclass, PVM_BF_MAX_CLASSES);
    if (p->nbins < 1 || p->nbins > PVM_BF_MAX_BINS)
        return pvc_fail(msg, PV_EINPUT, "bevfusion post: params.nbins = %d (expected 1 to %d)", p->nbins,
                        PVM_BF_MAX_BINS);
    if (st) st->proposals = P;

    /* Autoware labels of the network classes, by name */
    uint8_t lbl_of[PVM_BF_MAX_CLASSES];
    for (int c = 0; c < p->nclass; c++) {
        char name[sizeof p->class_names[0] + 1];
        memcpy(name, p->class_names[c], sizeof p->class_names[0]);
        name[sizeof p->class_names[0]] = '\0';
        lbl_of[c] = pvm_bevfusion_label_from_name(name);
    }
    /* squared bin limits, compared with x^2 + y^2 (all in float, as Autoware) */
    float bin2[PVM_BF_MAX_BINS];
    for (int k = 0; k < p->nbins; k++) bin2[k] = p->bin_upper[k] * p->bin_upper[k];

    post_cand *cand = ws;
    uint8_t *drop = P > 0 ? (uint8_t *)(cand + P) : NULL;

    /* 1. decode, yaw-norm gate, distance-binned thresholds. The gate zeroes the score (it does
     *    not drop); the threshold then rejects score < thr (equal passes); a box in no bin
     *    (r >= the last limit) is dropped. */
    int nc = 0;
    for (int i = 0; i < P; i++) {
        int64_t cls = label[i];
        post_box b;
        if (cls < 0 || cls >= p->nclass) continue;
        if (!post_decode(p, bbox_pred, P, i, &b)) continue;
        float s = score[i];
        if (!isfinite(s)) continue;
        if (!(b.yaw_norm >= p->yaw_norm_thresholds[cls])) s = 0.0f;
        float r2 = b.x * b.x + b.y * b.y;
        int bin = -1;
        for (int k = 0; k < p->nbins; k++)
            if (r2 < bin2[k]) { bin = k; break; }
        if (bin < 0 || s < p->score_thr[cls][bin]) continue;
        cand[nc].score = s;
        cand[nc].prop = i;
        cand[nc].x = b.x;
        cand[nc].y = b.y;
        nc++;
    }
    if (st) st->after_score = nc;

    /* 2. circle NMS: greedy in rank order; a box within the distance of an already KEPT box goes */
    cand_sort(cand, nc);
    float d2 = p->circle_nms_dist_threshold * p->circle_nms_dist_threshold;
    int nk = 0;
    for (int i = 0; i < nc; i++) {
        bool keep = true;
        for (int j = 0; j < nk && keep; j++) {
            float dx = cand[i].x - cand[j].x, dy = cand[i].y - cand[j].y;
            if (dx * dx + dy * dy < d2) keep = false;
        }
        if (keep) cand[nk++] = cand[i];
    }
    if (st) st->after_circle = nk;

    /* 3. the objects, in rank order */
    for (int k = 0; k < nk; k++) {
        post_box b;
        int i = cand[k].prop, cls = (int)label[i];
        post_decode(p, bbox_pred, P, i, &b);
        post_object(&b, lbl_of[cls], cls, i, cand[k].score, &out[k]);
    }

    /* 4. IoU-BEV NMS: object i goes if ANY earlier object (kept or not) is within the search
     *    distance (<=), is not a pedestrian-vs-other pair, and overlaps with IoU > threshold. */
    double search2 = (double)p->iou_nms_search_distance_2d * (double)p->iou_nms_search_distance_2d;
    for (int i = 0; i < nk; i++) {
        const pvm_bevfusion_object *a = &out[i];
        float ba[5] = { a->position[0], a->position[1], a->dimensions[0], a->dimensions[1], a->yaw };
        drop[i] = 0;
        for (int j = 0; j < i && !drop[i]; j++) {
            const pvm_bevfusion_object *o = &out[j];
            double dx = (double)a->position[0] - (double)o->position[0];
            double dy = (double)a->position[1] - (double)o->position[1];
            if (dx * dx + dy * dy > search2) continue;
            uint8_t la = a->label_before_remap, lo = o->label_before_remap;
            if (la != lo && (la == PVM_BF_PEDESTRIAN || lo == PVM_BF_PEDESTRIAN)) continue;
            float bo[5] = { o->position[0], o->position[1], o->dimensions[0], o->dimensions[1], o->yaw };
            if (post_iou(ba, bo) > (double)p->iou_nms_threshold) drop[i] = 1;
        }
    }
    int m = 0;
    for (int i = 0; i < nk; i++) {
        if (drop[i]) continue;
        if (m != i) out[m] = out[i];
        m++;
    }

    /* 5. remapper, last (orientation_availability stays as set from the label before it) */
    for (int k = 0; k < m; k++)
        out[k].label = pvm_bevfusion_remap_label(p, out[k].label_before_remap, out[k].dimensions[0],
                                                 out[k].dimensions[1]);
    if (st) st->after_iou = m;
    *nout = m;
    return PV_OK;
}
