/* bevfusion behind the public model API: text params and decoded inputs -> one frame ->
 * pv_result (objects, JSON, points for pictures). */
#include "api/model_api.h"
#include "io/bev_png.h"
#include "io/io.h"
#include "models/bevfusion/bundle.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF_MAX_SWEEPS 16

static pv_status bf_open(const pv_model_options *opt, void **impl, pvc_msg *msg)
{
    pvm_bevfusion_options o = { 0 };
    if (opt) {
        o.weights_dir = opt->weights_dir;
        o.strict = opt->strict != 0;
        o.threads = opt->threads;
        o.precision = (int)opt->precision;
    }
    pvm_bevfusion *m = NULL;
    pv_status s = pvm_bevfusion_open(&o, &m, msg);
    *impl = m;
    return s;
}

static void bf_close(void *impl) { pvm_bevfusion_close(impl); }

/* Frame-level params (everything else goes to pvm_bevfusion_param_set). */
typedef struct frame_params {
    bool   has_T;
    double T[16];                   /* T_base_from_sensor */
    int    time_lag_col;            /* -2 auto (a column named time_lag), -1 none, else index */
    bool   stream;
    pvm_bevfusion_stream_in st;
    char   stream_id[PVM_BF_STREAM_ID_MAX + 1];
    bool   sweep_lag[BF_MAX_SWEEPS], sweep_T[BF_MAX_SWEEPS];
    pvm_bevfusion_sweep sweeps[BF_MAX_SWEEPS];
} frame_params;

static pv_status parse_bool(const char *k, const char *v, bool *out, pvc_msg *msg)
{
    if (!strcmp(v, "1") || !strcmp(v, "true")) { *out = true; return PV_OK; }
    if (!strcmp(v, "0") || !strcmp(v, "false")) { *out = false; return PV_OK; }
    return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' is not a boolean (true/false/1/0)", k, v);
}

static pv_status frame_param(frame_params *f, const char *k, const char *v, bool *taken, pvc_msg *msg)
{
    *taken = true;
    if (!strcmp(k, "T_base_from_sensor")) { f->has_T = true; return pv_parse_floats(k, v, f->T, 16, msg); }
    if (!strcmp(k, "time_lag_column")) {
        if (!strcmp(v, "auto")) f->time_lag_col = -2;
        else if (!strcmp(v, "none")) f->time_lag_col = -1;
        else {
            char *end;
            long c = strtol(v, &end, 10);
            if (*end || end == v || c < 3 || c >= PVIO_CLOUD_MAX_COLS)
                return pvc_fail(msg, PV_EINPUT, "param 'time_lag_column': '%s' is not auto, none or a column index 3..%d", v,
                                PVIO_CLOUD_MAX_COLS - 1);
            f->time_lag_col = (int)c;
        }
        return PV_OK;
    }
    if (!strncmp(k, "stream.", 7)) {
        f->stream = true;
        const char *s = k + 7;
        if (!strcmp(s, "id")) {
            if (strlen(v) > PVM_BF_STREAM_ID_MAX) return pvc_fail(msg, PV_EINPUT, "param 'stream.id': longer than %d bytes", PVM_BF_STREAM_ID_MAX);
            snprintf(f->stream_id, sizeof f->stream_id, "%s", v);
            return PV_OK;
        }
        if (!strcmp(s, "timestamp_s")) return pv_parse_floats(k, v, &f->st.timestamp_s, 1, msg);
        if (!strcmp(s, "T_world_from_ego")) { f->st.has_pose = true; return pv_parse_floats(k, v, f->st.T_world_from_ego, 16, msg); }
        if (!strcmp(s, "reset")) return parse_bool(k, v, &f->st.reset, msg);
        return pvc_fail(msg, PV_EINPUT, "param '%s' is not known (stream.id, stream.timestamp_s, stream.T_world_from_ego, stream.reset)", k);
    }
    if (!strncmp(k, "sweep.", 6)) {
        char *end;
        long i = strtol(k + 6, &end, 10);
        if (end == k + 6 || *end != '.' || i < 0 || i >= BF_MAX_SWEEPS)
            return pvc_fail(msg, PV_EINPUT, "param '%s': want sweep.<0..%d>.time_lag_s or .T_current_from_sweep", k, BF_MAX_SWEEPS - 1);
        if (!strcmp(end + 1, "time_lag_s")) {
            double d;
            pv_status s = pv_parse_floats(k, v, &d, 1, msg);
            f->sweeps[i].time_lag_s = (float)d;
            f->sweep_lag[i] = true;
            return s;
        }
        if (!strcmp(end + 1, "T_current_from_sweep")) { f->sweep_T[i] = true; return pv_parse_floats(k, v, f->sweeps[i].T_current_from_sweep, 16, msg); }
        return pvc_fail(msg, PV_EINPUT, "param '%s' is not known (sweep.<i>.time_lag_s, sweep.<i>.T_current_from_sweep)", k);
    }
    *taken = false;
    return PV_OK;
}

/* The result's payload: the objects, and the input points and frame for the picture. */
typedef struct bf_payload {
    pv_object3d *objs;
    int          nobjs;
    float       *xyz;          /* the input points (current frame, densified) */
    int64_t      npts;
    float        view[4];      /* x_min, x_max, y_min, y_max (m) */
    char         title[160];
} bf_payload;

static void bf_payload_free(void *p)
{
    bf_payload *b = p;
    if (!b) return;
    pvc_free(b->objs);
    pvc_free(b->xyz);
    pvc_free(b);
}

static const char *const bf_label_names[] = { "UNKNOWN", "CAR", "TRUCK", "BUS", "TRAILER", "MOTORCYCLE", "BICYCLE", "PEDESTRIAN" };

static pv_status bf_png(const pv_result *r, int width_px, void **png, size_t *len, pvc_msg *msg)
{
    const bf_payload *p = r->payload;
    pvio_bev_box *boxes = pvc_calloc((size_t)p->nobjs + 1, sizeof *boxes);
    if (!boxes) return pvc_fail(msg, PV_ENOMEM, "out of memory drawing the result");
    int nb = 0;
    for (int i = 0; i < p->nobjs; i++) {
        const pv_object3d *o = &p->objs[i];
        pvio_bev_box b = { o->position[0], o->position[1], o->dimensions[0], o->dimensions[1], o->yaw,
                           o->existence_probability, o->label < 8 ? bf_label_names[o->label] : "?", o->label };
        /* boxes the picture cannot hold (non-finite or absurd sizes from a random model) are left out */
        if (!isfinite(b.x) || !isfinite(b.y) || !isfinite(b.yaw) || !(b.length > 0) || !(b.width > 0) ||
            b.length > PVIO_BEV_MAX_BOX_M || b.width > PVIO_BEV_MAX_BOX_M || fabsf(b.x) > PVIO_BEV_MAX_RANGE_M ||
            fabsf(b.y) > PVIO_BEV_MAX_RANGE_M)
            continue;
        boxes[nb++] = b;
    }
    pvio_bev_view v = { p->view[0], p->view[1], p->view[2], p->view[3], width_px ? width_px : 1024, p->title, 0.0f, 0.0f };
    pv_status s = pvio_bev_png_encode(&v, p->xyz, p->npts, 3, boxes, nb, png, len, msg);
    pvc_free(boxes);
    return s;
}

static const pv_result_ops bf_result_ops = { "bevfusion", bf_png, bf_payload_free };

/* "N objects" and a line per object (the first 40; all of them are in the JSON). */
static char *bf_text(const bf_payload *p)
{
    size_t cap = 256 + 96 * 42, o = 0;
    char *t = pvc_malloc(cap);
    if (!t) return NULL;
    const pv_object3d *obj = p->objs;
    int n = p->nobjs;
    o += (size_t)snprintf(t + o, cap - o, "%d objects\n", n);
    if (n) o += (size_t)snprintf(t + o, cap - o, "  %-3s %-10s %6s %8s %8s %6s %6s %6s %6s %7s\n", "#", "label", "score", "x", "y", "z", "l", "w", "h", "yaw");
    int shown = n < 40 ? n : 40;
    for (int i = 0; i < shown; i++)
        o += (size_t)snprintf(t + o, cap - o, "  %-3d %-10s %6.3f %8.2f %8.2f %6.2f %6.2f %6.2f %6.2f %7.3f\n", i,
                              obj[i].label < 8 ? bf_label_names[obj[i].label] : "?", obj[i].existence_probability, obj[i].position[0],
                              obj[i].position[1], obj[i].position[2], obj[i].dimensions[0], obj[i].dimensions[1], obj[i].dimensions[2],
                              obj[i].yaw);
    if (shown < n) snprintf(t + o, cap - o, "  ... %d more (all of them in --json)\n", n - shown);
    return t;
}

static pv_status bf_run(void *impl, const pv_input *in, int n_in, const pv_param *prm, int np, pv_result **out, pvc_msg *msg)
{
    pvm_bevfusion *m = impl;
    double t0 = pvc_now_ms();
    pvm_bevfusion_params params = *pvm_bevfusion_defaults(m);
    frame_params fp;
    memset(&fp, 0, sizeof fp);
    fp.time_lag_col = -2;
    pv_status s = PV_OK;
    for (int i = 0; i < np && s == PV_OK; i++) {
        bool taken;
        s = frame_param(&fp, prm[i].key, prm[i].value, &taken, msg);
        if (s == PV_OK && !taken) s = pvm_bevfusion_param_set(&params, prm[i].key, prm[i].value, msg);
    }
    if (s != PV_OK) return s;
    /* inputs: one "points", then "sweep" items in order */
    pvio_cloud cur = { 0 }, sw[BF_MAX_SWEEPS];
    memset(sw, 0, sizeof sw);
    int nsw = 0, ncur = 0;
    pv_result *r = NULL;
    pvm_bevfusion_result res;
    memset(&res, 0, sizeof res);
    for (int i = 0; i < n_in && s == PV_OK; i++) {
        const char *name = in[i].name ? in[i].name : "points";
        if (!strcmp(name, "points")) {
            if (ncur++) { s = pvc_fail(msg, PV_EINPUT, "inputs: more than one 'points' item"); break; }
            s = pv_input_decode(&in[i], &cur, msg);
        } else if (!strcmp(name, "sweep")) {
            if (nsw >= BF_MAX_SWEEPS) { s = pvc_fail(msg, PV_EINPUT, "inputs: more than %d sweeps", BF_MAX_SWEEPS); break; }
            s = pv_input_decode(&in[i], &sw[nsw], msg);
            if (s == PV_OK && (!fp.sweep_lag[nsw] || !fp.sweep_T[nsw]))
                s = pvc_fail(msg, PV_EINPUT, "sweep %d: params sweep.%d.time_lag_s and sweep.%d.T_current_from_sweep are required", nsw, nsw, nsw);
            nsw++;
        } else s = pvc_fail(msg, PV_EINPUT, "input '%s' is not known (points, sweep)", name);
    }
    if (s == PV_OK && !ncur) s = pvc_fail(msg, PV_EINPUT, "inputs: no 'points' item");
    for (int i = nsw; i < BF_MAX_SWEEPS && s == PV_OK; i++)
        if (fp.sweep_lag[i] || fp.sweep_T[i]) s = pvc_fail(msg, PV_EINPUT, "param sweep.%d.*: there are only %d sweep inputs", i, nsw);
    if (s == PV_OK && fp.stream && !fp.stream_id[0]) s = pvc_fail(msg, PV_EINPUT, "stream.* params need stream.id");
    double t1 = pvc_now_ms();
    if (s != PV_OK) goto done;
    if (fp.has_T) {
        pvm_bevfusion_transform_f32(cur.data, cur.n, cur.ncols, fp.T);
        for (int i = 0; i < nsw; i++) pvm_bevfusion_transform_f32(sw[i].data, sw[i].n, sw[i].ncols, fp.T);
    }
    int tl = fp.time_lag_col == -2 ? pvio_cloud_col(&cur, "time_lag") : fp.time_lag_col;
    if (tl >= cur.ncols) { s = pvc_fail(msg, PV_EINPUT, "param 'time_lag_column': %d but the cloud has %d columns", tl, cur.ncols); goto done; }
    pvm_bevfusion_frame_in fin = { .pts = cur.data, .n = cur.n, .stride = cur.ncols, .time_lag_col = tl };
    if (nsw) {
        for (int i = 0; i < nsw; i++) { fp.sweeps[i].pts = sw[i].data; fp.sweeps[i].n = sw[i].n; fp.sweeps[i].stride = sw[i].ncols; }
        fin.sweeps = fp.sweeps;
        fin.nsweeps = nsw;
    }
    if (fp.stream) { fp.st.id = fp.stream_id; fin.stream = &fp.st; }
    if ((tl >= 0) && (nsw || fp.stream))
        { s = pvc_fail(msg, PV_EINPUT, "the cloud has a time_lag column (already densified): no sweeps or stream (set time_lag_column=none to override)"); goto done; }
    s = pvm_bevfusion_run(m, &fin, &params, &res, msg);
    if (s != PV_OK) goto done;
    r = pvc_calloc(1, sizeof *r);
    if (!r) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    bf_payload *pl = pvc_calloc(1, sizeof *pl);
    if (!pl) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    r->ops = &bf_result_ops;
    r->payload = pl;
    pl->nobjs = res.nobjects;
    pl->objs = pvc_calloc((size_t)res.nobjects + 1, sizeof *pl->objs);
    pl->xyz = pvc_malloc((size_t)cur.n * 3 * sizeof(float) + 16);
    if (!pl->objs || !pl->xyz) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    r->objs = pl->objs;
    r->nobjs = pl->nobjs;
    for (int i = 0; i < res.nobjects; i++) {
        const pvm_bevfusion_object *a = &res.objects[i];
        pv_object3d *b = &pl->objs[i];
        b->label = a->label;
        b->orientation_availability = a->orientation_availability;
        b->shape_type = a->shape_type;
        b->existence_probability = a->existence_probability;
        memcpy(b->position, a->position, sizeof b->position);
        memcpy(b->orientation, a->orientation, sizeof b->orientation);
        b->yaw = a->yaw;
        memcpy(b->dimensions, a->dimensions, sizeof b->dimensions);
        memcpy(b->velocity, a->velocity, sizeof b->velocity);
        b->class_index = a->class_index;
        b->proposal = a->proposal;
    }
    for (int64_t i = 0; i < cur.n; i++) memcpy(pl->xyz + 3 * pl->npts++, cur.data + i * cur.ncols, 3 * sizeof(float));
    const pvm_bevfusion_params *dp = &params;
    pl->view[0] = dp->pc_range[0]; pl->view[1] = dp->pc_range[3]; pl->view[2] = dp->pc_range[1]; pl->view[3] = dp->pc_range[4];
    snprintf(pl->title, sizeof pl->title, "BEVFUSION %s%s", !strcmp(pvm_bevfusion_weights_kind(m), "generated") ?
             "GENERATED WEIGHTS - NOT A TRAINED MODEL" : "WEIGHTS ", strcmp(pvm_bevfusion_weights_kind(m), "generated") ?
             pvm_bevfusion_weights_kind(m) : "");
    double t2 = pvc_now_ms();
    r->timing.decode = t1 - t0;
    r->timing.preprocess = res.t_pre + res.t_voxelize;
    r->timing.engine = res.t_sparse + res.t_dense;
    r->timing.postprocess = res.t_post;
    r->timing.wait = res.t_wait;
    r->timing.total = t2 - t0;
    res.t_decode = r->timing.decode;
    res.t_total = r->timing.total - r->timing.decode;
    r->json_stable = pvm_bevfusion_result_json(m, &res, false);
    r->json = pvm_bevfusion_result_json(m, &res, true);
    r->text = bf_text(pl);
    if (!r->json || !r->json_stable || !r->text) s = pvc_fail(msg, PV_ENOMEM, "out of memory writing the result JSON");
done:
    pvm_bevfusion_result_free(&res);
    pvio_cloud_free(&cur);
    for (int i = 0; i < BF_MAX_SWEEPS; i++) pvio_cloud_free(&sw[i]);
    if (s != PV_OK) { pv_result_free(r); return s; }
    *out = r;
    return PV_OK;
}

static char *bf_info(void *impl)
{
    pvm_bevfusion *m = impl;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", "bevfusion");
    cJSON_AddStringToObject(o, "repo", PVM_BF_REPO);
    cJSON_AddStringToObject(o, "revision", PVM_BF_REVISION);
    cJSON_AddStringToObject(o, "commit", PVM_BF_COMMIT);
    cJSON_AddStringToObject(o, "weights", pvm_bevfusion_weights_kind(m));
    cJSON_AddStringToObject(o, "precision", pvm_bevfusion_precision(m));
    if (pvm_bevfusion_precision_note(m)[0]) cJSON_AddStringToObject(o, "precision_note", pvm_bevfusion_precision_note(m));
    cJSON *arts = cJSON_AddArrayToObject(o, "artifacts");
    int n = 0;
    const pvm_bevfusion_artifact *a = pvm_bevfusion_artifacts(m, &n);
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", a[i].name);
        cJSON_AddStringToObject(x, "path", a[i].path);
        cJSON_AddStringToObject(x, "sha256", a[i].sha256);
        cJSON_AddStringToObject(x, "release_sha256", a[i].expected ? a[i].expected : "");
        cJSON_AddBoolToObject(x, "matches_release", a[i].verified);
        cJSON_AddItemToArray(arts, x);
    }
    const pvm_bf_encoder *e = pvm_bevfusion_encoder(m);
    cJSON *sp = cJSON_AddObjectToObject(o, "sparse_encoder");
    cJSON_AddNumberToObject(sp, "convs", e->nlayers);
    cJSON_AddNumberToObject(sp, "submanifold", e->n_subm);
    cJSON_AddNumberToObject(sp, "strided", e->n_down);
    cJSON_AddNumberToObject(sp, "rulebooks", e->nrb);
    cJSON_AddNumberToObject(sp, "levels", e->nlevels);
    cJSON_AddNumberToObject(o, "load_ms", pvm_bevfusion_load_ms(m));
    cJSON_AddStringToObject(o, "isa", pv_isa());
    char *t = cJSON_Print(o);
    cJSON_Delete(o);
    if (!t) return NULL;
    size_t len = strlen(t);
    char *r = pvc_malloc(len + 1);
    if (r) memcpy(r, t, len + 1);
    cJSON_free(t);
    return r;
}

static pv_status bf_validate(const pv_input *in, pvc_msg *msg)
{
    const char *name = in->name ? in->name : "points";
    if (strcmp(name, "points") && strcmp(name, "sweep")) return pvc_fail(msg, PV_EINPUT, "input '%s' is not known (points, sweep)", name);
    pvio_cloud c;
    pv_status s = pv_input_decode(in, &c, msg);
    pvio_cloud_free(&c);
    return s;
}

/* ---- perceive bench: the shipped frame and its reference objects -------------------------- */
static pv_status bf_bench_defaults(pv_bench_defaults *d, pvc_msg *msg)
{
    (void)msg;
    d->input = "tests/fixtures/bevfusion/scene/scene_000.pcd";
    d->fixture = "tests/fixtures/bevfusion/scene";
    return PV_OK;
}

/* Objects against DIR/expected.npz (tools/ref/bevfusion_ref.py): labels identical, positions
 * within 1e-3 m. Only the generated fp32 model is what the fixture was made with. */
static int bf_fixture_check(void *impl, const pv_result *r, const char *dir, char *why, size_t wn)
{
    pvm_bevfusion *m = impl;
    if (strcmp(pvm_bevfusion_weights_kind(m), "generated")) {
        snprintf(why, wn, "the stored fixture was made with the generated weights");
        return -1;
    }
    if (strcmp(pvm_bevfusion_precision(m), "fp32")) {
        snprintf(why, wn, "the stored fixture is fp32 (bf16 is gated by `ctest -R bevfusion_bf16`)");
        return -1;
    }
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/expected.npz", dir);
    pvio_arrays e = { 0 };
    pvc_msg msg;
    if (pvio_npz_read_file(p, &e, &msg) != PV_OK) { snprintf(why, wn, "%s", msg.text); return -1; }
    const pvio_array *la = pvio_arrays_find(&e, "obj_label"), *xa = pvio_arrays_find(&e, "obj_xyz");
    const pvc_tensor *lab = la ? &la->t : NULL, *xyz = xa ? &xa->t : NULL;
    int rc = 0;
    const pv_object3d *o;
    int n = pv_result_objects3d(r, &o);
    if (!lab || !xyz || lab->dtype != PV_U8 || xyz->dtype != PV_F32) { snprintf(why, wn, "%.300s lacks obj_label/obj_xyz", p); rc = -1; }
    else if (pvc_numel(lab) != n) { snprintf(why, wn, "%d objects, the reference has %lld", n, (long long)pvc_numel(lab)); rc = 1; }
    else
        for (int i = 0; i < n && !rc; i++) {
            const float *q = (const float *)xyz->data + 3 * i;
            double dd = fmax(fabs(o[i].position[0] - q[0]), fmax(fabs(o[i].position[1] - q[1]), fabs(o[i].position[2] - q[2])));
            if (o[i].label != ((const uint8_t *)lab->data)[i] || dd > 1e-3) {
                snprintf(why, wn, "object %d: label %u vs %u, position off by %.3g m", i, o[i].label, ((const uint8_t *)lab->data)[i], dd);
                rc = 1;
            }
        }
    if (!rc) snprintf(why, wn, "%d objects agree with %.300s (labels identical, positions within 1e-3 m)", n, p);
    pvio_arrays_free(&e);
    return rc;
}

const pv_bundle pv_bundle_bevfusion = {
    "bevfusion", "Autoware BEVFusion-L lidar 3D detector (AutowareFoundation/bevfusion v2.0): point cloud -> DetectedObjects",
    bf_open, bf_run, bf_info, bf_close, pvm_bevfusion_generate, bf_validate, bf_bench_defaults, bf_fixture_check,
};
