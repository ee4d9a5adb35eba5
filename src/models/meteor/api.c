/* meteor behind the public model API: a manifest or camera items -> frame -> net -> decode ->
 * pv_result (JSON, accessors, picture). */
#include "api/model_api.h"
#include "models/meteor/bundle.h"
#include "models/meteor/json.h"
#include "models/meteor/render.h"
#include "io/image.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pv_status mt_open(const pv_model_options *opt, void **impl, pvc_msg *msg)
{
    pvm_meteor_options o = { 0 };
    if (opt) {
        o.weights_dir = opt->weights_dir;
        o.strict = opt->strict != 0;
        o.threads = opt->threads;
        o.precision = (int)opt->precision;
    }
    const char *rc = getenv("PERCEIVE_METEOR_RIG_CACHE");
    if (rc && (!strcmp(rc, "0") || !strcmp(rc, "off"))) o.no_rig_cache = true;
    pvm_meteor *m = NULL;
    pv_status s = pvm_meteor_open(&o, &m, msg);
    *impl = m;
    return s;
}

static void mt_close(void *impl) { pvm_meteor_close(impl); }

static pv_status mt_validate(const pv_input *in, pvc_msg *msg) { return pvm_meteor_item_validate(in, msg); }

/* ---- the result ---------------------------------------------------------------------------- */
typedef struct mt_payload {
    pvm_meteor_out   out;
    uint8_t         *rgb[PVM_METEOR_NCAM];   /* the cameras at 768x432, for the picture */
    bool             generated;
    pv_object3d     *objs;
    pv_object2d     *objs2d;
    pv_ego_path      ego;
    pv_traffic_light tl;
} mt_payload;

static void mt_payload_free(void *p)
{
    mt_payload *h = p;
    if (!h) return;
    pvm_meteor_out_free(&h->out);
    for (int c = 0; c < PVM_METEOR_NCAM; c++) pvc_free(h->rgb[c]);
    pvc_free(h->objs);
    pvc_free(h->objs2d);
    pvc_free(h);
}

static pv_status mt_png(const pv_result *r, int width_px, void **png, size_t *len, pvc_msg *msg)
{
    const mt_payload *p = r->payload;
    uint8_t *rgb = NULL;
    int w = 0, h = 0;
    const uint8_t *imgs[PVM_METEOR_NCAM];
    for (int c = 0; c < PVM_METEOR_NCAM; c++) imgs[c] = p->rgb[c];
    pv_status s = pvm_meteor_render(&p->out, imgs, width_px, p->generated, &rgb, &w, &h, msg);
    if (s != PV_OK) return s;
    pvio_png_opts po = { .level = -1, .title = p->generated ? "METEOR (generated weights)" : "METEOR", .software = true, .what = "meteor picture" };
    s = pvio_png_encode_rgb(rgb, w, h, &po, png, len, msg);
    pvc_free(rgb);
    return s;
}

static const pv_result_ops mt_result_ops = { "meteor", mt_png, mt_payload_free };

/* Autoware DetectedObject views of the 3D boxes (vehicles as CAR, VRUs as PEDESTRIAN). */
static void views(mt_payload *p)
{
    const pvm_meteor_out *o = &p->out;
    for (int i = 0; i < o->n3d; i++) {
        const pvm_meteor_box3d *b = &o->boxes3d[i];
        pv_object3d *d = &p->objs[i];
        memset(d, 0, sizeof *d);
        d->label = b->cls == 0 ? 1 : 7;
        d->orientation_availability = 2;
        d->existence_probability = b->score;
        d->position[0] = b->x;
        d->position[1] = b->y;
        d->yaw = b->yaw;
        d->orientation[2] = sinf(b->yaw / 2);
        d->orientation[3] = cosf(b->yaw / 2);
        d->dimensions[0] = b->length;
        d->dimensions[1] = b->width;
        d->class_index = b->cls;
        d->proposal = b->row * PVM_METEOR_DET_W + b->col;
    }
    static const int strides[3] = { 4, 8, 16 };
    for (int i = 0; i < o->n2d; i++) {
        const pvm_meteor_box2d *b = &o->boxes2d[i];
        p->objs2d[i] = (pv_object2d){ .camera = b->cam, .class_index = b->cls, .stride = strides[b->scale < 0 || b->scale > 2 ? 0 : b->scale],
                                      .score = b->score, .box = { b->cx - b->w / 2, b->cy - b->h / 2, b->cx + b->w / 2, b->cy + b->h / 2 } };
    }
    p->ego.mode = o->ego.mode;
    memcpy(p->ego.waypoints, o->ego.waypoints, sizeof p->ego.waypoints);
    memcpy(p->ego.mode_logits, o->ego.mode_logits, sizeof p->ego.mode_logits);
    p->ego.steer = o->ego.steer;
    p->ego.accel = o->ego.accel;
    p->ego.brake_probability = o->ego.brake_prob;
    p->ego.brake = o->ego.brake;
    p->tl.state = o->tl_state;
    memcpy(p->tl.probability, o->tl_prob, sizeof p->tl.probability);
}

static void add_meta(cJSON *root, const pvm_meteor *m, const pvm_meteor_frame *f, const pvm_meteor_run_info *ri)
{
    cJSON *meta = cJSON_AddObjectToObject(root, "meta");
    cJSON_AddStringToObject(meta, "model", "meteor");
    cJSON_AddStringToObject(meta, "weights", pvm_meteor_weights_kind(m));
    cJSON *cams = cJSON_AddObjectToObject(meta, "cameras");
    for (int c = 0; c < PVM_METEOR_NCAM; c++) {
        cJSON *e = cJSON_AddObjectToObject(cams, pvm_meteor_cam_names[c]);
        cJSON_AddBoolToObject(e, "present", f->cal.present[c]);
        if (f->cal.present[c]) {
            cJSON_AddNumberToObject(e, "width", f->src_w[c]);
            cJSON_AddNumberToObject(e, "height", f->src_h[c]);
        }
    }
    cJSON_AddNumberToObject(meta, "v0", f->v0);
    cJSON_AddBoolToObject(meta, "v0_default", f->v0_default);
    if (f->has_pose) {
        double pose[3] = { f->pose.x, f->pose.y, f->pose.yaw };
        cJSON_AddItemToObject(meta, "pose", cJSON_CreateDoubleArray(pose, 3));
    }
    cJSON_AddBoolToObject(meta, "rig_cached", ri->rig_hit);
    if (ri->stream) {
        cJSON *s = cJSON_AddObjectToObject(meta, "stream");
        cJSON_AddStringToObject(s, "id", f->stream_id);
        cJSON_AddNumberToObject(s, "frame", (double)ri->stream_frame);
        cJSON_AddBoolToObject(s, "started", ri->stream_started);
        cJSON_AddBoolToObject(s, "restarted", ri->stream_restarted);
        cJSON_AddBoolToObject(s, "reset", ri->stream_reset);
    }
}

static char *result_json(const pvm_meteor *m, const mt_payload *p, const pvm_meteor_frame *f, const pvm_meteor_run_info *ri,
                         const pv_timing *t, bool timed, pvc_msg *msg)
{
    cJSON *root = cJSON_CreateObject();
    if (!root || pvm_meteor_json_add(root, &p->out, msg) != PV_OK) { cJSON_Delete(root); return NULL; }
    add_meta(root, m, f, ri);
    if (timed) {
        cJSON *tm = cJSON_AddObjectToObject(root, "timing_ms");
        cJSON_AddNumberToObject(tm, "decode", t->decode);
        cJSON_AddNumberToObject(tm, "rig", ri->t_rig);
        cJSON_AddNumberToObject(tm, "preprocess", t->preprocess);
        cJSON_AddNumberToObject(tm, "engine", t->engine);
        cJSON_AddNumberToObject(tm, "postprocess", t->postprocess);
        cJSON_AddNumberToObject(tm, "wait", t->wait);
        cJSON_AddNumberToObject(tm, "total", t->total);
    }
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!txt) return NULL;
    size_t n = strlen(txt);
    char *r = pvc_malloc(n + 2);
    if (r) { memcpy(r, txt, n); r[n] = '\n'; r[n + 1] = 0; }
    cJSON_free(txt);
    return r;
}

static char *result_text(const mt_payload *p)
{
    const pvm_meteor_out *o = &p->out;
    size_t cap = 256 + (size_t)o->n3d * 120;
    char *t = pvc_malloc(cap);
    if (!t) return NULL;
    static const char *const tl[4] = { "none", "green", "yellow", "red" };
    int n = snprintf(t, cap, "%d objects, %d 2D boxes, %d unknown obstacles; traffic light %s; ego mode %d%s%s\n", o->n3d, o->n2d,
                     o->nunk, tl[o->tl_state & 3], o->ego.mode, o->ego.brake ? ", BRAKE" : "", p->generated ? " (generated weights)" : "");
    for (int i = 0; i < o->n3d && n > 0 && (size_t)n < cap; i++) {
        const pvm_meteor_box3d *b = &o->boxes3d[i];
        n += snprintf(t + n, cap - (size_t)n, "%-7s %.3f  x %7.2f  y %7.2f  l %5.2f  w %5.2f  yaw %6.3f%s\n", b->cls ? "vru" : "vehicle",
                      b->score, b->x, b->y, b->length, b->width, b->yaw, b->stationary ? "  stationary" : "");
    }
    return t;
}

static pv_status mt_run(void *impl, const pv_input *in, int n_in, const pv_param *prm, int np, pv_result **out, pvc_msg *msg)
{
    pvm_meteor *m = impl;
    double t0 = pvc_now_ms();
    pvm_meteor_frame f;
    pvm_meteor_params dp;
    pv_status s = pvm_meteor_frame_build(in, n_in, prm, np, &f, &dp, msg);
    if (s != PV_OK) return s;
    double t1 = pvc_now_ms();
    pv_result *r = pvc_calloc(1, sizeof *r);
    mt_payload *pl = pvc_calloc(1, sizeof *pl);
    pvm_meteor_run_info ri;
    if (!r || !pl) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    r->ops = &mt_result_ops;
    r->payload = pl;
    if ((s = pvm_meteor_run(m, &f, &dp, &pl->out, &ri, msg)) != PV_OK) goto done;
    double t2 = pvc_now_ms();
    for (int c = 0; c < PVM_METEOR_NCAM; c++) { pl->rgb[c] = f.rgb[c]; f.rgb[c] = NULL; }
    pl->generated = !strcmp(pvm_meteor_weights_kind(m), "generated");
    pl->objs = pvc_calloc((size_t)pl->out.n3d + 1, sizeof *pl->objs);
    pl->objs2d = pvc_calloc((size_t)pl->out.n2d + 1, sizeof *pl->objs2d);
    if (!pl->objs || !pl->objs2d) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    views(pl);
    r->objs = pl->objs;
    r->nobjs = pl->out.n3d;
    r->objs2d = pl->objs2d;
    r->nobjs2d = pl->out.n2d;
    r->ego = &pl->ego;
    r->tl = &pl->tl;
    r->grids[0].name = "lanes"; r->grids[0].data = pl->out.lanes; r->grids[0].rank = 2;
    r->grids[0].dims[0] = PVM_METEOR_BEV_H; r->grids[0].dims[1] = PVM_METEOR_BEV_W;
    r->grids[1].name = "occupancy"; r->grids[1].data = pl->out.occupancy; r->grids[1].rank = 3;
    r->grids[1].dims[0] = PVM_METEOR_OCC_Z; r->grids[1].dims[1] = PVM_METEOR_OCC_XY; r->grids[1].dims[2] = PVM_METEOR_OCC_XY;
    r->grids[2].name = "risk"; r->grids[2].data = pl->out.risk; r->grids[2].rank = 2;
    r->grids[2].dims[0] = PVM_METEOR_DET_H; r->grids[2].dims[1] = PVM_METEOR_DET_W;
    r->timing.decode = f.decode_ms;
    r->timing.preprocess = (t1 - t0) - f.decode_ms + ri.t_rig;
    r->timing.engine = ri.t_engine;
    r->timing.wait = ri.t_wait;
    r->timing.postprocess = ri.t_post;
    double tj = pvc_now_ms();
    r->json_stable = result_json(m, pl, &f, &ri, &r->timing, false, msg);
    r->text = result_text(pl);
    r->timing.postprocess += pvc_now_ms() - tj;
    r->timing.total = pvc_now_ms() - t0;
    (void)t2;
    r->json = result_json(m, pl, &f, &ri, &r->timing, true, msg);
    if (!r->json || !r->json_stable || !r->text) s = pvc_fail(msg, PV_ENOMEM, "out of memory writing the result");
done:
    pvm_meteor_frame_free(&f);
    if (s != PV_OK) {
        if (r) pv_result_free(r);
        else mt_payload_free(pl);
        return s;
    }
    *out = r;
    return PV_OK;
}

static char *mt_info(void *impl)
{
    cJSON *o = pvm_meteor_info_json(impl);
    if (!o) return NULL;
    pvm_meteor_params d;
    pvm_meteor_params_default(&d);
    cJSON *p = cJSON_AddObjectToObject(o, "params");
    cJSON_AddNumberToObject(p, "cand_3d", d.cand_3d);
    cJSON_AddNumberToObject(p, "keep_vehicle", d.keep_vehicle);
    cJSON_AddNumberToObject(p, "keep_vru", d.keep_vru);
    cJSON_AddNumberToObject(p, "nms_iou", d.nms_iou);
    cJSON_AddNumberToObject(p, "nms_ios", d.nms_ios);
    cJSON_AddNumberToObject(p, "th_2d", d.th_2d);
    cJSON_AddNumberToObject(p, "hide_2d", d.hide_2d);
    cJSON_AddNumberToObject(p, "lane_decay", d.lane_decay);
    cJSON_AddNumberToObject(p, "mode_hysteresis", d.mode_hysteresis);
    cJSON_AddNumberToObject(p, "straight_lead", d.straight_lead);
    cJSON_AddNumberToObject(p, "stat_logit", d.stat_logit);
    cJSON_AddNumberToObject(p, "yaw_alpha", d.yaw_alpha);
    cJSON_AddNumberToObject(p, "yaw_match_m", d.yaw_match_m);
    char *t = cJSON_Print(o);
    cJSON_Delete(o);
    if (!t) return NULL;
    size_t len = strlen(t);
    char *r = pvc_malloc(len + 1);
    if (r) memcpy(r, t, len + 1);
    cJSON_free(t);
    return r;
}

/* ---- perceive bench: the shipped sample frame --------------------------------------------- */
static pv_status mt_bench_defaults(pv_bench_defaults *d, pvc_msg *msg)
{
    (void)msg;
    d->input = "tests/fixtures/meteor/sample/manifest.json";
    d->fixture = NULL;
    return PV_OK;
}

const pv_bundle pv_bundle_meteor = {
    "meteor", "METEOR camera-only multi-task BEV network (tier4/METEOR): 8 cameras + K/T + speed -> lanes, 3D/2D boxes, "
              "occupancy, risk, traffic light, ego path",
    mt_open, mt_run, mt_info, mt_close, pvm_meteor_generate, mt_validate, mt_bench_defaults, NULL,
};
