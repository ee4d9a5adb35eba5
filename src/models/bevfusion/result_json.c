/* bevfusion result -> JSON (cJSON). Floats are written with 9 significant digits (exact float
 * round trip) through raw number text, non-finite ones as null, so the bytes depend only on
 * the values. */
#include "models/bevfusion/bundle.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const label_names[PVM_BF_NLABELS] = { "UNKNOWN", "CAR", "TRUCK", "BUS", "TRAILER", "MOTORCYCLE",
                                                         "BICYCLE", "PEDESTRIAN" };

static cJSON *num_f(double v)
{
    if (!isfinite(v)) return cJSON_CreateNull();
    char b[40];
    snprintf(b, sizeof b, "%.9g", v);
    return cJSON_CreateRaw(b);
}

static cJSON *num_i(long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    return cJSON_CreateRaw(b);
}

static cJSON *arr_f(const float *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, num_f(v[i]));
    return a;
}

static void add(cJSON *o, const char *k, cJSON *v) { if (o && v) cJSON_AddItemToObject(o, k, v); else cJSON_Delete(v); }

static cJSON *object_json(const pvm_bevfusion_object *ob)
{
    cJSON *o = cJSON_CreateObject();
    int lab = ob->label < PVM_BF_NLABELS ? ob->label : 0;
    add(o, "label", cJSON_CreateString(label_names[lab]));
    add(o, "label_id", num_i(ob->label));
    add(o, "existence_probability", num_f(ob->existence_probability));
    cJSON *cls = cJSON_CreateArray(), *c0 = cJSON_CreateObject();
    add(c0, "label", num_i(ob->label));
    add(c0, "probability", num_f(1.0));
    if (cls && c0) cJSON_AddItemToArray(cls, c0); else cJSON_Delete(c0);
    add(o, "classification", cls);
    cJSON *k = cJSON_CreateObject();
    add(k, "position", arr_f(ob->position, 3));
    add(k, "orientation", arr_f(ob->orientation, 4));
    add(k, "yaw", num_f(ob->yaw));
    add(k, "orientation_availability", num_i(ob->orientation_availability));
    add(o, "kinematics", k);
    cJSON *sh = cJSON_CreateObject();
    add(sh, "type", num_i(ob->shape_type));
    add(sh, "dimensions", arr_f(ob->dimensions, 3));
    add(o, "shape", sh);
    add(o, "velocity", arr_f(ob->velocity, 2));
    add(o, "class_index", num_i(ob->class_index));
    add(o, "label_before_remap", num_i(ob->label_before_remap));
    add(o, "proposal", num_i(ob->proposal));
    return o;
}

char *pvm_bevfusion_result_json(const pvm_bevfusion *m, const pvm_bevfusion_result *r, bool with_timing)
{
    cJSON *root = cJSON_CreateObject();
    add(root, "model", cJSON_CreateString("bevfusion"));
    cJSON *objs = cJSON_CreateArray();
    for (int i = 0; objs && i < r->nobjects; i++) {
        cJSON *o = object_json(&r->objects[i]);
        if (o) cJSON_AddItemToArray(objs, o);
    }
    add(root, "objects", objs);
    cJSON *meta = cJSON_CreateObject();
    add(meta, "weights", cJSON_CreateString(pvm_bevfusion_weights_kind(m)));
    add(meta, "precision", cJSON_CreateString(pvm_bevfusion_precision(m)));
    add(meta, "num_points", num_i(r->num_points));
    add(meta, "num_dropped_points", num_i(r->num_dropped_points));
    add(meta, "num_points_out_of_range", num_i(r->num_points_out_of_range));
    add(meta, "num_voxels", num_i(r->num_voxels));
    add(meta, "sweeps", num_i(r->sweeps_used));
    if (r->stream) {
        /* started: no earlier frame of this id was used (new here, evicted or reset), so a client
         * knows when a stream was moved to another replica or lost its state */
        cJSON *st = cJSON_CreateObject();
        add(st, "id", cJSON_CreateString(r->stream_id));
        add(st, "started", cJSON_CreateBool(r->stream_started));
        add(st, "reset", cJSON_CreateBool(r->stream_reset));
        add(meta, "stream", st);
    }
    cJSON *sp = cJSON_CreateObject(), *act = cJSON_CreateArray();
    for (int l = 0; act && l < r->enc.nlevels; l++) cJSON_AddItemToArray(act, num_i(r->enc.active[l]));
    add(sp, "active", act);
    add(sp, "bucket", num_i(r->enc.bucket));
    add(meta, "sparse", sp);
    cJSON *det = cJSON_CreateObject();
    add(det, "proposals", num_i(r->P));
    add(det, "after_score", num_i(r->post.after_score));
    add(det, "after_circle_nms", num_i(r->post.after_circle));
    add(det, "after_iou_nms", num_i(r->post.after_iou));
    add(det, "objects", num_i(r->nobjects));
    add(meta, "detections", det);
    add(root, "meta", meta);
    if (with_timing) {
        /* the contract's stages, then the split of preprocess and engine */
        cJSON *t = cJSON_CreateObject(), *d = cJSON_CreateObject();
        add(t, "decode", num_f(r->t_decode));
        add(t, "preprocess", num_f(r->t_pre + r->t_voxelize));
        add(t, "engine", num_f(r->t_sparse + r->t_dense));
        add(t, "postprocess", num_f(r->t_post));
        add(t, "wait", num_f(r->t_wait));
        add(t, "total", num_f(r->t_total + r->t_decode));
        add(d, "densify", num_f(r->t_pre));
        add(d, "voxelize", num_f(r->t_voxelize));
        add(d, "sparse_encoder", num_f(r->t_sparse));
        add(d, "dense", num_f(r->t_dense));
        add(t, "stages", d);
        add(root, "timing_ms", t);
    }
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return NULL;
    /* cJSON allocates with malloc; hand back pvc memory */
    size_t n = strlen(text);
    char *out = pvc_malloc(n + 2);
    if (out) { memcpy(out, text, n); out[n] = '\n'; out[n + 1] = 0; }
    cJSON_free(text);
    return out;
}
