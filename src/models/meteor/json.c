/* meteor decode -> JSON payload (cJSON). The schema is README's "METEOR result"; the numpy
 * reference tools/ref/meteor_decode_ref.py writes the same keys. */
#include "models/meteor/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const pvm_meteor_lane_names[PVM_METEOR_LANE_CLS] = { "unlabeled", "road",     "sidewalk", "crosswalk",  "laneline",
                                                                 "stopline",  "road_edge", "marking", "parking_lot" };
const char *const pvm_meteor_2d_names[PVM_METEOR_2D_CLS] = { "obs",       "car",        "truck",         "bus",
                                                             "bicycle",   "motorcycle", "ped",           "road_paint",
                                                             "traffic_light", "traffic_sign" };
/* spec 1.5 names classes 0-4 only; the rest keep their index */
const char *const pvm_meteor_occ_names[PVM_METEOR_OCC_C] = { "free",    "obstacle", "vehicle", "two_wheeler", "pedestrian",
                                                             "class_5", "class_6",  "class_7", "class_8",     "class_9" };
const char *const pvm_meteor_tl_names[4] = { "none", "green", "yellow", "red" };

static const char *const cls3d_names[2] = { "vehicle", "vru" };
static const int cls3d_label[2] = { 1, 7 };          /* Autoware CAR, PEDESTRIAN */
static const char *const cls3d_label_names[2] = { "CAR", "PEDESTRIAN" };

typedef struct jb { bool oom; } jb;

/* every creation goes through here: a NULL marks the payload as out of memory */
static cJSON *chk(jb *b, cJSON *v)
{
    if (!v) b->oom = true;
    return v;
}

static cJSON *num_f(jb *b, double v)
{
    if (!isfinite(v)) return chk(b, cJSON_CreateNull());
    char t[40];
    snprintf(t, sizeof t, "%.9g", v);
    return chk(b, cJSON_CreateRaw(t));
}

static cJSON *num_i(jb *b, long long v)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", v);
    return chk(b, cJSON_CreateRaw(t));
}

static void add(jb *b, cJSON *o, const char *k, cJSON *v)
{
    if (o && v && cJSON_AddItemToObject(o, k, v)) return;
    cJSON_Delete(v);
    b->oom = true;
}

static void push(jb *b, cJSON *a, cJSON *v)
{
    if (a && v && cJSON_AddItemToArray(a, v)) return;
    cJSON_Delete(v);
    b->oom = true;
}

static cJSON *arr(jb *b) { return chk(b, cJSON_CreateArray()); }
static cJSON *obj(jb *b) { return chk(b, cJSON_CreateObject()); }
static cJSON *str(jb *b, const char *s) { return chk(b, cJSON_CreateString(s)); }
static cJSON *boolean(jb *b, bool v) { return chk(b, cJSON_CreateBool(v)); }

static cJSON *arr_f(jb *b, const float *v, int n)
{
    cJSON *a = arr(b);
    for (int i = 0; a && i < n; i++) push(b, a, num_f(b, v[i]));
    return a;
}

static cJSON *names(jb *b, const char *const *v, int n)
{
    cJSON *a = arr(b);
    for (int i = 0; a && i < n; i++) push(b, a, str(b, v[i]));
    return a;
}

/* [[t, x, y] x 6] at t = 0.5 .. 3.0 s */
static cJSON *path6(jb *b, const float p[6][2])
{
    cJSON *a = arr(b);
    for (int k = 0; a && k < 6; k++) {
        cJSON *w = arr(b);
        push(b, w, num_f(b, 0.5 * (k + 1)));
        push(b, w, num_f(b, p[k][0]));
        push(b, w, num_f(b, p[k][1]));
        push(b, a, w);
    }
    return a;
}

/* row-major run-length encoding as [value, count] pairs, plus per-class counts */
static void grid_rle(jb *b, cJSON *o, const uint8_t *g, size_t n, int ncls)
{
    cJSON *rle = arr(b), *counts = arr(b);
    long long cnt[256] = { 0 };
    for (size_t i = 0; i < n && rle;) {
        size_t j = i + 1;
        while (j < n && g[j] == g[i]) j++;
        cJSON *p = arr(b);
        push(b, p, num_i(b, g[i]));
        push(b, p, num_i(b, (long long)(j - i)));
        push(b, rle, p);
        cnt[g[i]] += (long long)(j - i);
        i = j;
    }
    for (int k = 0; counts && k < ncls; k++) push(b, counts, num_i(b, cnt[k]));
    add(b, o, "class_counts", counts);
    add(b, o, "rle", rle);
}

static cJSON *box3d_json(jb *b, const pvm_meteor_box3d *x)
{
    cJSON *o = obj(b);
    int c = x->cls == 1 ? 1 : 0;
    add(b, o, "label", str(b, cls3d_label_names[c]));
    add(b, o, "label_id", num_i(b, cls3d_label[c]));
    add(b, o, "class", str(b, cls3d_names[c]));
    add(b, o, "existence_probability", num_f(b, x->score));
    cJSON *k = obj(b);
    float pos[3] = { x->x, x->y, 0.0f };
    add(b, k, "position", arr_f(b, pos, 3));
    float q[4] = { 0.0f, 0.0f, (float)sin(0.5 * (double)x->yaw), (float)cos(0.5 * (double)x->yaw) };
    add(b, k, "orientation", arr_f(b, q, 4));
    add(b, k, "yaw", num_f(b, x->yaw));
    add(b, k, "yaw_raw", num_f(b, x->yaw_raw));
    add(b, o, "kinematics", k);
    cJSON *sh = obj(b), *dim = arr(b);
    push(b, dim, num_f(b, x->length));
    push(b, dim, num_f(b, x->width));
    push(b, dim, chk(b, cJSON_CreateNull())); /* the network has no height */
    add(b, sh, "type", num_i(b, 0));
    add(b, sh, "dimensions", dim);
    add(b, o, "shape", sh);
    add(b, o, "stationary", boolean(b, x->stationary));
    add(b, o, "stationary_source", str(b, x->stationary_from_head ? "head" : "traj"));
    cJSON *cell = arr(b);
    push(b, cell, num_i(b, x->row));
    push(b, cell, num_i(b, x->col));
    add(b, o, "cell", cell);
    if (x->cls == 0) {
        cJSON *f = obj(b);
        add(b, f, "mode", num_i(b, x->future_mode));
        add(b, f, "waypoints", path6(b, x->future));
        add(b, o, "future", f);
    } else {
        add(b, o, "future", chk(b, cJSON_CreateNull()));
    }
    return o;
}

pv_status pvm_meteor_json_add(cJSON *root, const pvm_meteor_out *o, pvc_msg *msg)
{
    if (!root || !o) return pvc_fail(msg, PV_EINTERNAL, "meteor JSON: %s is NULL", !root ? "root" : "out");
    if (!o->lanes || !o->occupancy || !o->risk) return pvc_fail(msg, PV_EINTERNAL, "meteor JSON: the decode result is empty");
    jb b = { false };

    cJSON *objs = arr(&b);
    for (int i = 0; objs && i < o->n3d; i++) push(&b, objs, box3d_json(&b, &o->boxes3d[i]));
    add(&b, root, "objects", objs);

    /* objects_2d: per camera in the fixed order; index within a camera = position in its list */
    cJSON *o2 = obj(&b);
    int first[PVM_METEOR_NCAM + 1] = { 0 };
    for (int cam = 0; cam < PVM_METEOR_NCAM; cam++) {
        cJSON *a = arr(&b);
        first[cam] = -1;
        for (int i = 0; a && i < o->n2d; i++) {
            const pvm_meteor_box2d *x = &o->boxes2d[i];
            if (x->cam != cam) continue;
            if (first[cam] < 0) first[cam] = i;
            cJSON *e = obj(&b);
            add(&b, e, "label", str(&b, pvm_meteor_2d_names[x->cls]));
            add(&b, e, "label_id", num_i(&b, x->cls));
            add(&b, e, "score", num_f(&b, x->score));
            float box[4] = { x->cx, x->cy, x->w, x->h };
            add(&b, e, "box", arr_f(&b, box, 4));
            add(&b, e, "stride", num_i(&b, 4 << x->scale));
            push(&b, a, e);
        }
        add(&b, o2, pvm_meteor_cam_names[cam], a);
    }
    add(&b, root, "objects_2d", o2);

    cJSON *un = arr(&b);
    for (int i = 0; un && i < o->nunk; i++) {
        const pvm_meteor_unknown *u = &o->unknowns[i];
        cJSON *e = obj(&b);
        float pos[3] = { u->x, u->y, 0.0f };
        add(&b, e, "position", arr_f(&b, pos, 3));
        add(&b, e, "score", num_f(&b, u->score));
        add(&b, e, "camera", str(&b, pvm_meteor_cam_names[u->cam]));
        add(&b, e, "box", num_i(&b, first[u->cam] >= 0 ? u->box - first[u->cam] : -1));
        add(&b, e, "source", str(&b, u->from_ground_ray ? "ground_ray" : "depth_mean"));
        push(&b, un, e);
    }
    add(&b, root, "unknown_objects", un);

    cJSON *ln = obj(&b), *lg = obj(&b);
    add(&b, ln, "classes", names(&b, pvm_meteor_lane_names, PVM_METEOR_LANE_CLS));
    add(&b, lg, "rows", num_i(&b, PVM_METEOR_BEV_H));
    add(&b, lg, "cols", num_i(&b, PVM_METEOR_BEV_W));
    add(&b, lg, "cell_m", num_f(&b, 0.2));
    add(&b, lg, "x_row0_edge", num_f(&b, 80.0));
    add(&b, lg, "y_col0_edge", num_f(&b, 50.0));
    add(&b, ln, "grid", lg);
    add(&b, ln, "fused", boolean(&b, o->lanes_fused));
    grid_rle(&b, ln, o->lanes, (size_t)PVM_METEOR_BEV_H * PVM_METEOR_BEV_W, PVM_METEOR_LANE_CLS);
    add(&b, root, "lanes", ln);

    cJSON *oc = obj(&b), *og = obj(&b);
    add(&b, oc, "classes", names(&b, pvm_meteor_occ_names, PVM_METEOR_OCC_C));
    add(&b, og, "z_bins", num_i(&b, PVM_METEOR_OCC_Z));
    add(&b, og, "z_min", num_f(&b, -1.0));
    add(&b, og, "dz", num_f(&b, 0.4));
    add(&b, og, "rows", num_i(&b, PVM_METEOR_OCC_XY));
    add(&b, og, "cols", num_i(&b, PVM_METEOR_OCC_XY));
    add(&b, og, "cell_m", num_f(&b, 0.4));
    add(&b, og, "x_row0_edge", num_f(&b, 40.0));
    add(&b, og, "y_col0_edge", num_f(&b, 40.0));
    add(&b, oc, "grid", og);
    grid_rle(&b, oc, o->occupancy, (size_t)PVM_METEOR_OCC_Z * PVM_METEOR_OCC_XY * PVM_METEOR_OCC_XY, PVM_METEOR_OCC_C);
    add(&b, root, "occupancy", oc);

    cJSON *rk = obj(&b), *rg = obj(&b);
    add(&b, rg, "rows", num_i(&b, PVM_METEOR_DET_H));
    add(&b, rg, "cols", num_i(&b, PVM_METEOR_DET_W));
    add(&b, rg, "cell_m", num_f(&b, 0.2));
    add(&b, rg, "x_row0_edge", num_f(&b, 40.0));
    add(&b, rg, "y_col0_edge", num_f(&b, 25.0));
    add(&b, rk, "grid", rg);
    const int nr = PVM_METEOR_DET_H * PVM_METEOR_DET_W;
    uint8_t *q = pvc_malloc((size_t)nr);
    if (!q) return pvc_fail(msg, PV_ENOMEM, "meteor JSON: out of memory");
    double sum = 0;
    float mx = -INFINITY;
    for (int i = 0; i < nr; i++) {
        double v = o->risk[i];
        sum += v;
        if (o->risk[i] > mx) mx = o->risk[i];
        double r = isfinite(v) ? floor(255.0 * v + 0.5) : 0.0;
        q[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
    add(&b, rk, "max", num_f(&b, mx));
    add(&b, rk, "mean", num_f(&b, sum / nr));
    add(&b, rk, "quantization", str(&b, "round(255 * sigmoid)"));
    cJSON *tmp = obj(&b);
    grid_rle(&b, tmp, q, (size_t)nr, 0);
    pvc_free(q);
    cJSON *rle = cJSON_DetachItemFromObject(tmp, "rle");
    cJSON_Delete(tmp);
    add(&b, rk, "rle", rle);
    add(&b, root, "risk", rk);

    cJSON *tl = obj(&b), *tp = obj(&b);
    add(&b, tl, "state", str(&b, pvm_meteor_tl_names[o->tl_state & 3]));
    add(&b, tl, "state_id", num_i(&b, o->tl_state));
    for (int k = 0; k < 4; k++) add(&b, tp, pvm_meteor_tl_names[k], num_f(&b, o->tl_prob[k]));
    add(&b, tl, "probabilities", tp);
    add(&b, root, "traffic_light", tl);

    const pvm_meteor_ego *e = &o->ego;
    cJSON *ep = obj(&b);
    add(&b, ep, "mode", num_i(&b, e->mode));
    add(&b, ep, "mode_logits", arr_f(&b, e->mode_logits, 3));
    add(&b, ep, "waypoints", path6(&b, e->waypoints));
    add(&b, ep, "ribbon", path6(&b, e->ribbon));
    add(&b, ep, "steer", num_f(&b, e->steer));
    add(&b, ep, "accel", num_f(&b, e->accel));
    add(&b, ep, "brake", boolean(&b, e->brake));
    add(&b, ep, "brake_probability", num_f(&b, e->brake_prob));
    add(&b, root, "ego_path", ep);

    cJSON *d = obj(&b);
    add(&b, d, "stationary_head_healthy", boolean(&b, o->stationary_head_healthy));
    add(&b, d, "lanes_fused", boolean(&b, o->lanes_fused));
    add(&b, root, "decode", d);

    if (b.oom) return pvc_fail(msg, PV_ENOMEM, "meteor JSON: out of memory");
    return PV_OK;
}
