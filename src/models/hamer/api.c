/* hamer behind the public model API: inputs (an image + box params, or one crop) -> hands ->
 * pv_result (pv_hand array, JSON, text, the picture). */
#include "api/model_api.h"
#include "io/image.h"
#include "io/io.h"
#include "models/hamer/bundle.h"
#include "models/hamer/weights.h"
#include "models/hamer/render.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CROP_BYTES = PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3 };

static pv_status hm_open(const pv_model_options *opt, void **impl, pvc_msg *msg)
{
    pvm_hamer_options o = { 0 };
    if (opt) {
        o.weights_dir = opt->weights_dir;
        o.strict = opt->strict != 0;
        o.threads = opt->threads;
        o.precision = (int)opt->precision;
    }
    pvm_hamer *m = NULL;
    pv_status s = pvm_hamer_open(&o, &m, msg);
    *impl = m;
    return s;
}

static void hm_close(void *impl) { pvm_hamer_close(impl); }

/* ---- inputs -------------------------------------------------------------------------------- */
/* A decoded input: an image, or one crop (rgb is 256 x 192). */
typedef struct hm_input { pvio_image img; bool crop; } hm_input;

static bool is_crop_format(const char *fmt) { return fmt && (!strcmp(fmt, "rgb8") || !strcmp(fmt, "npy")); }

static pv_status decode(const pv_input *in, hm_input *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    const char *fmt = in->format ? in->format : "auto";
    const char *name = in->name ? in->name : is_crop_format(fmt) ? "crop" : "image";
    if (!in->data && in->len) return pvc_fail(msg, PV_EINPUT, "input '%s': data is NULL", name);
    if (!strcmp(name, "image")) {
        if (strcmp(fmt, "jpeg") && strcmp(fmt, "png") && strcmp(fmt, "auto"))
            return pvc_fail(msg, PV_EUNSUPPORTED, "input 'image': format '%s' is not supported (jpeg, png, auto)", fmt);
        pv_status s = pvio_image_decode(in->data, in->len, fmt, &out->img, msg);
        if (s != PV_OK) {
            char m2[PVC_MSG_LEN];
            snprintf(m2, sizeof m2, "%s", msg->text);
            return pvc_fail(msg, s, "input 'image': %.480s", m2);
        }
        return PV_OK;
    }
    if (strcmp(name, "crop")) return pvc_fail(msg, PV_EINPUT, "input '%s' is not known (image, crop)", name);
    out->crop = true;
    if (!strcmp(fmt, "rgb8")) {
        if (in->len != CROP_BYTES)
            return pvc_fail(msg, PV_EINPUT, "input 'crop': %zu bytes (want %d: 256 rows x 192 columns x RGB uint8)", in->len, CROP_BYTES);
    } else if (!strcmp(fmt, "npy")) {
        pvc_tensor t;
        pv_status s = pvio_npy_parse(in->data, in->len, &t, msg);
        if (s != PV_OK) {
            char m2[PVC_MSG_LEN];
            snprintf(m2, sizeof m2, "%s", msg->text);
            return pvc_fail(msg, s, "input 'crop': %.480s", m2);
        }
        bool ok = t.dtype == PV_U8 && ((t.rank == 3 && t.dims[0] == 256 && t.dims[1] == 192 && t.dims[2] == 3) ||
                                       (t.rank == 4 && t.dims[0] == 1 && t.dims[1] == 256 && t.dims[2] == 192 && t.dims[3] == 3));
        if (!ok) {
            char sh[96];
            pvc_shape_str(&t, sh, sizeof sh);
            pvio_tensor_free_data(&t);
            return pvc_fail(msg, PV_EINPUT, "input 'crop': npy %s %s (want uint8 [256,192,3]: rows, columns, RGB)", pv_dtype_name(t.dtype), sh);
        }
        out->img.w = 192;
        out->img.h = 256;
        if (!(out->img.rgb = pvc_malloc(CROP_BYTES))) { pvio_tensor_free_data(&t); return pvc_fail(msg, PV_ENOMEM, "out of memory for the crop"); }
        memcpy(out->img.rgb, t.data, CROP_BYTES);
        pvio_tensor_free_data(&t);
        return PV_OK;
    } else return pvc_fail(msg, PV_EUNSUPPORTED, "input 'crop': format '%s' is not supported (rgb8, npy)", fmt);
    out->img.w = 192;
    out->img.h = 256;
    if (!(out->img.rgb = pvc_malloc(CROP_BYTES))) return pvc_fail(msg, PV_ENOMEM, "out of memory for the crop");
    memcpy(out->img.rgb, in->data, CROP_BYTES);
    return PV_OK;
}

static pv_status hm_validate(const pv_input *in, pvc_msg *msg)
{
    hm_input d;
    pv_status s = decode(in, &d, msg);
    pvio_image_free(&d.img);
    return s;
}

/* ---- params -------------------------------------------------------------------------------- */
typedef struct hm_params {
    pvm_hamer_box boxes[PVM_HAMER_MAX_BATCH];
    int           nboxes;
    bool          is_right;            /* crops */
    bool          has_is_right;
} hm_params;

/* One box "x1,y1,x2,y2[,is_right]". */
static pv_status parse_box(const char *text, size_t len, int index, pvm_hamer_box *b, pvc_msg *msg)
{
    double v[5];
    int n = 0;
    const char *p = text, *end = text + len;
    while (p < end && n < 6) {
        char *e;
        while (p < end && (*p == ' ' || *p == '[')) p++;
        double d = strtod(p, &e);
        if (e == p || e > end) return pvc_fail(msg, PV_EINPUT, "box[%d]: '%.*s' is not x1,y1,x2,y2[,is_right]", index, (int)len, text);
        if (n < 5) v[n] = d;
        n++;
        p = e;
        while (p < end && (*p == ' ' || *p == ']')) p++;
        if (p < end && *p != ',') return pvc_fail(msg, PV_EINPUT, "box[%d]: '%.*s' is not x1,y1,x2,y2[,is_right]", index, (int)len, text);
        if (p < end) p++;
    }
    if (n != 4 && n != 5) return pvc_fail(msg, PV_EINPUT, "box[%d]: '%.*s' has %d numbers (want x1,y1,x2,y2[,is_right])", index, (int)len, text, n);
    for (int i = 0; i < 4; i++)
        if (!isfinite(v[i])) return pvc_fail(msg, PV_EINPUT, "box[%d]: '%.*s' has a non-finite coordinate", index, (int)len, text);
    if (n == 5 && v[4] != 0 && v[4] != 1) return pvc_fail(msg, PV_EINPUT, "box[%d]: is_right %g (want 1 right or 0 left)", index, v[4]);
    *b = (pvm_hamer_box){ v[0], v[1], v[2], v[3], n == 4 || v[4] == 1 };
    return PV_OK;
}

static pv_status parse_params(const pv_param *p, int np, hm_params *h, pvc_msg *msg)
{
    memset(h, 0, sizeof *h);
    h->is_right = true;
    for (int i = 0; i < np; i++) {
        const char *k = p[i].key, *v = p[i].value;
        if (!strcmp(k, "box") || !strcmp(k, "boxes")) {
            /* several boxes: repeated keys, or rows separated by ';' */
            const char *s = v;
            for (;;) {
                const char *e = strchr(s, ';');
                size_t len = e ? (size_t)(e - s) : strlen(s);
                if (h->nboxes >= PVM_HAMER_MAX_BATCH)
                    return pvc_fail(msg, PV_EINPUT, "box: more than %d boxes (one engine batch per image; run the rest in another call)",
                                    PVM_HAMER_MAX_BATCH);
                pv_status st = parse_box(s, len, h->nboxes, &h->boxes[h->nboxes], msg);
                if (st != PV_OK) return st;
                h->nboxes++;
                if (!e) break;
                s = e + 1;
            }
        } else if (!strcmp(k, "is_right")) {
            if (!strcmp(v, "1") || !strcmp(v, "true")) h->is_right = true;
            else if (!strcmp(v, "0") || !strcmp(v, "false")) h->is_right = false;
            else return pvc_fail(msg, PV_EINPUT, "param 'is_right': '%s' is not a boolean (1/0/true/false)", v);
            h->has_is_right = true;
        } else return pvc_fail(msg, PV_EINPUT, "param '%s' is not known (box, is_right)", k);
    }
    return PV_OK;
}

/* ---- the result ---------------------------------------------------------------------------- */
typedef struct hm_payload {
    pv_hand  *hands;
    int       n;
    int32_t  *faces;
    pvio_image img;            /* the input, for the picture */
    char      title[160];
} hm_payload;

static void hm_payload_free(void *p)
{
    hm_payload *h = p;
    if (!h) return;
    pvc_free(h->hands);
    pvc_free(h->faces);
    pvio_image_free(&h->img);
    pvc_free(h);
}

static pv_status hm_png(const pv_result *r, int width_px, void **png, size_t *len, pvc_msg *msg)
{
    const hm_payload *p = r->payload;
    return pvm_hamer_render_png(p->img.rgb, p->img.w, p->img.h, p->hands, p->n, p->faces, p->title, width_px, png, len, msg);
}

static const pv_result_ops hm_result_ops = { "hamer", hm_png, hm_payload_free };

/* A growing text buffer; sticks at the first allocation failure. */
typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = true; return; }
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *q = pvc_realloc(b->p, cap);
        if (!q) { b->oom = true; return; }
        b->p = q;
        b->cap = cap;
    }
}

/* 9 significant digits: float32 round-trips (4 decimals alone would cost 5e-5 m on vertices);
 * non-finite values (a random model can make them) as null, which JSON can hold */
static void sb_num(sbuf *b, float v)
{
    if (!isfinite(v)) sb_printf(b, "null");
    else sb_printf(b, "%.9g", (double)v);
}

static void sb_arr(sbuf *b, const char *key, const float *v, int n) /* flat */
{
    sb_printf(b, "\"%s\":[", key);
    for (int i = 0; i < n; i++) { if (i) sb_printf(b, ","); sb_num(b, v[i]); }
    sb_printf(b, "]");
}

static void sb_rows(sbuf *b, const char *key, const float *v, int rows, int cols)
{
    sb_printf(b, "\"%s\":[", key);
    for (int r = 0; r < rows; r++) {
        sb_printf(b, "%s[", r ? "," : "");
        for (int c = 0; c < cols; c++) { if (c) sb_printf(b, ","); sb_num(b, v[r * cols + c]); }
        sb_printf(b, "]");
    }
    sb_printf(b, "]");
}

static void sb_str(sbuf *b, const char *s)
{
    sb_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) sb_printf(b, "\\u%04x", (unsigned char)*s);
        else sb_printf(b, "%c", *s);
    }
    sb_printf(b, "\"");
}

static char *result_json(const pvm_hamer *m, const hm_payload *p, bool crop, const pvm_hamer_result *res, double t_decode,
                         double t_total, bool with_timing)
{
    sbuf b = { 0 };
    sb_printf(&b, "{\"hands\":[");
    for (int i = 0; i < p->n; i++) {
        const pv_hand *h = &p->hands[i];
        sb_printf(&b, "%s\n{\"is_right\":%s,", i ? "," : "", h->is_right ? "true" : "false");
        sb_arr(&b, "box", h->box, 4);
        sb_printf(&b, ",\"crop\":{");
        sb_arr(&b, "center", h->crop_center, 2);
        sb_printf(&b, ",\"size\":");
        sb_num(&b, h->crop_size);
        sb_printf(&b, "},");
        sb_arr(&b, "cam", h->cam, 3);
        sb_printf(&b, ",");
        sb_arr(&b, "cam_t", h->cam_t, 3);
        sb_printf(&b, ",");
        sb_arr(&b, "cam_t_full", h->cam_t_full, 3);
        sb_printf(&b, ",\"focal_length_full\":");
        sb_num(&b, h->focal_length_full);
        sb_printf(&b, ",");
        sb_arr(&b, "betas", h->betas, 10);
        sb_printf(&b, ",");
        sb_rows(&b, "global_orient", h->global_orient, 3, 3);
        sb_printf(&b, ",\"hand_pose\":[");
        for (int j = 0; j < 15; j++) {
            if (j) sb_printf(&b, ",");
            sb_printf(&b, "[");
            for (int r = 0; r < 3; r++) {
                sb_printf(&b, "%s[", r ? "," : "");
                for (int c = 0; c < 3; c++) { if (c) sb_printf(&b, ","); sb_num(&b, h->hand_pose[j * 9 + r * 3 + c]); }
                sb_printf(&b, "]");
            }
            sb_printf(&b, "]");
        }
        sb_printf(&b, "],");
        sb_rows(&b, "keypoints_3d", h->keypoints_3d, PV_HAND_KEYPOINTS, 3);
        sb_printf(&b, ",");
        sb_rows(&b, "keypoints_2d", h->keypoints_2d, PV_HAND_KEYPOINTS, 2);
        sb_printf(&b, ",");
        sb_rows(&b, "keypoints_2d_crop", h->keypoints_2d_crop, PV_HAND_KEYPOINTS, 2);
        sb_printf(&b, ",");
        sb_rows(&b, "vertices", h->vertices, PV_HAND_VERTICES, 3);
        sb_printf(&b, "}");
    }
    sb_printf(&b, "],\n\"meta\":{\"model\":\"hamer\",\"weights\":");
    sb_str(&b, pvm_hamer_weights_kind(m));
    sb_printf(&b, ",\"depth\":%d,\"precision\":", pvm_hamer_depth(m));
    sb_str(&b, pvm_hamer_precision(m));
    sb_printf(&b, ",\"input\":\"%s\",\"image_size\":[%d,%d],\"num_hands\":%d,", crop ? "crop" : "image", p->img.w, p->img.h, p->n);
    sb_printf(&b, "\"frames\":{\"points\":\"MANO frame, metres, no translation; add cam_t (crop camera) or cam_t_full (image "
                  "camera)\",\"keypoints_2d\":\"image pixels, integer pixel centres\",\"left_hands\":\"mirrored back: x negated, "
                  "rotations M R M, M = diag(-1,1,1)\"}}");
    if (with_timing)
        sb_printf(&b, ",\n\"timing_ms\":{\"decode\":%.3f,\"crop\":%.3f,\"engine\":%.3f,\"skinning\":%.3f,\"wait\":%.3f,\"total\":%.3f}", t_decode,
                  res->t_crop, res->t_engine, res->t_skin, res->t_wait, t_total);
    sb_printf(&b, "}\n");
    if (b.oom) { pvc_free(b.p); return NULL; }
    return b.p;
}

static char *result_text(const hm_payload *p)
{
    sbuf b = { 0 };
    sb_printf(&b, "%d hand%s\n", p->n, p->n == 1 ? "" : "s");
    if (p->n) sb_printf(&b, "  %-3s %-5s %-28s %8s %8s %8s %9s\n", "#", "side", "box", "cam_t.x", "cam_t.y", "cam_t.z", "wrist_u,v");
    for (int i = 0; i < p->n; i++) {
        const pv_hand *h = &p->hands[i];
        char box[64];
        snprintf(box, sizeof box, "%.0f,%.0f,%.0f,%.0f", h->box[0], h->box[1], h->box[2], h->box[3]);
        sb_printf(&b, "  %-3d %-5s %-28s %8.3f %8.3f %8.2f %.1f,%.1f\n", i, h->is_right ? "right" : "left", box, h->cam_t_full[0],
                  h->cam_t_full[1], h->cam_t_full[2], h->keypoints_2d[0], h->keypoints_2d[1]);
    }
    if (b.oom) { pvc_free(b.p); return NULL; }
    return b.p;
}

static pv_status hm_run(void *impl, const pv_input *in, int n_in, const pv_param *prm, int np, pv_result **out, pvc_msg *msg)
{
    pvm_hamer *m = impl;
    double t0 = pvc_now_ms();
    hm_params hp;
    pv_status s = parse_params(prm, np, &hp, msg);
    if (s != PV_OK) return s;
    if (n_in != 1) return pvc_fail(msg, PV_EINPUT, "inputs: %d items (want one: an image with box params, or a crop)", n_in);
    hm_input d;
    if ((s = decode(&in[0], &d, msg)) != PV_OK) return s;
    if (d.crop && hp.nboxes) s = pvc_fail(msg, PV_EINPUT, "box: a crop input takes no boxes (it is one hand's network window)");
    if (!d.crop && !hp.nboxes) s = pvc_fail(msg, PV_EINPUT, "box: an image needs at least one box x1,y1,x2,y2[,is_right] (param box)");
    if (!d.crop && hp.has_is_right) s = pvc_fail(msg, PV_EINPUT, "param 'is_right' is for crops; give each box its own (x1,y1,x2,y2,is_right)");
    double t1 = pvc_now_ms();
    pvm_hamer_result res = { 0 };
    pv_result *r = NULL;
    hm_payload *pl = NULL;
    if (s != PV_OK) goto done;
    pvm_hamer_frame f = { .rgb = d.img.rgb, .W = d.img.w, .H = d.img.h, .boxes = hp.boxes, .nboxes = hp.nboxes, .crop = d.crop,
                          .crop_is_right = hp.is_right };
    if ((s = pvm_hamer_run(m, &f, false, &res, msg)) != PV_OK) goto done;
    r = pvc_calloc(1, sizeof *r);
    pl = pvc_calloc(1, sizeof *pl);
    if (!r || !pl) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    r->ops = &hm_result_ops;
    r->payload = pl;
    pl->hands = res.hands;
    pl->n = res.n;
    res.hands = NULL;
    pl->img = d.img;
    d.img.rgb = NULL;
    if (!(pl->faces = pvc_malloc((size_t)PV_HAND_FACES * 3 * sizeof *pl->faces))) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the result"); goto done; }
    memcpy(pl->faces, pvm_hamer_faces(m), (size_t)PV_HAND_FACES * 3 * sizeof *pl->faces);
    bool gen = !strcmp(pvm_hamer_weights_kind(m), "generated");
    snprintf(pl->title, sizeof pl->title, "HAMER %s", gen ? "GENERATED WEIGHTS - NOT A TRAINED MODEL" : "");
    r->hands = pl->hands;
    r->nhands = pl->n;
    r->faces = pl->faces;
    r->nfaces = PV_HAND_FACES;
    r->timing.decode = t1 - t0;
    r->timing.preprocess = res.t_crop;
    r->timing.engine = res.t_engine;
    r->timing.postprocess = res.t_skin;
    r->timing.wait = res.t_wait;
    r->timing.total = pvc_now_ms() - t0;
    r->json_stable = result_json(m, pl, d.crop, &res, 0, 0, false);
    r->json = result_json(m, pl, d.crop, &res, r->timing.decode, r->timing.total, true);
    r->text = result_text(pl);
    if (!r->json || !r->json_stable || !r->text) s = pvc_fail(msg, PV_ENOMEM, "out of memory writing the result");
done:
    pvm_hamer_result_free(&res);
    pvio_image_free(&d.img);
    if (s != PV_OK) {
        if (r) pv_result_free(r);
        else if (pl) hm_payload_free(pl);
        return s;
    }
    *out = r;
    return PV_OK;
}

static char *hm_info(void *impl)
{
    pvm_hamer *m = impl;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", "hamer");
    cJSON_AddStringToObject(o, "paper", "Pavlakos et al., Reconstructing Hands in 3D with Transformers, CVPR 2024");
    cJSON_AddStringToObject(o, "weights", pvm_hamer_weights_kind(m));
    cJSON *a = cJSON_AddObjectToObject(o, "artifact");
    cJSON_AddStringToObject(a, "name", PVM_HAMER_FILE);
    cJSON_AddStringToObject(a, "path", pvm_hamer_weights_path(m));
    cJSON_AddStringToObject(a, "sha256", pvm_hamer_weights_sha256(m));
    const char *ck = pvm_hamer_meta(m, "hamer_ckpt_sha256"), *mn = pvm_hamer_meta(m, "mano_sha256");
    cJSON_AddStringToObject(a, "hamer_ckpt_sha256", ck ? ck : "");
    cJSON_AddStringToObject(a, "mano_sha256", mn ? mn : "");
    cJSON_AddNumberToObject(o, "depth", pvm_hamer_depth(m));
    cJSON_AddNumberToObject(o, "parameters", (double)pvm_hamer_params(m));
    cJSON_AddNumberToObject(o, "max_batch", PVM_HAMER_MAX_BATCH);
    cJSON_AddStringToObject(o, "precision", pvm_hamer_precision(m));
    if (pvm_hamer_precision_note(m)[0]) cJSON_AddStringToObject(o, "precision_note", pvm_hamer_precision_note(m));
    cJSON_AddNumberToObject(o, "arena_bytes", (double)pvm_hamer_arena_bytes(m));
    cJSON_AddNumberToObject(o, "load_ms", pvm_hamer_load_ms(m));
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

/* ---- perceive bench: the reference fixture's image, boxes and hands ------------------------- */
#define HM_FIXTURE "tests/fixtures/hamer"

static pv_status hm_bench_defaults(pv_bench_defaults *d, pvc_msg *msg)
{
    /* the image of tools/ref/hamer_ref.py's image.npz and its four boxes (two blurred crops) */
    d->input = HM_FIXTURE "/image.png";
    d->fixture = HM_FIXTURE;
    pvio_arrays e = { 0 };
    pv_status s = pvio_npz_read_file(HM_FIXTURE "/image.npz", &e, msg);
    if (s != PV_OK) return s;
    const pvio_array *ba = pvio_arrays_find(&e, "boxes"), *ra = pvio_arrays_find(&e, "is_right");
    const pvc_tensor *b = ba ? &ba->t : NULL, *r = ra ? &ra->t : NULL;
    if (!b || !r || b->dtype != PV_F32 || b->rank != 2 || b->dims[1] != 4 || b->dims[0] > PV_BENCH_MAX_PARAMS || pvc_numel(r) != b->dims[0])
        s = pvc_fail(msg, PV_EFORMAT, "%s/image.npz lacks boxes [N,4] / is_right [N]", HM_FIXTURE);
    for (int i = 0; s == PV_OK && i < b->dims[0]; i++) {
        const float *v = (const float *)b->data + 4 * i;
        snprintf(d->text[i], sizeof d->text[0], "%.9g,%.9g,%.9g,%.9g,%d", v[0], v[1], v[2], v[3], pvc_get_i64(r->data, r->dtype, i) != 0);
        d->params[d->nparams++] = (pv_param){ "box", d->text[i] };
    }
    pvio_arrays_free(&e);
    return s;
}

/* Vertices within 1e-4 m and image keypoints within 0.05 px of DIR/image.npz: only the generated
 * fp32 2-block twin is the model the fixture was made with. */
static int hm_fixture_check(void *impl, const pv_result *r, const char *dir, char *why, size_t wn)
{
    pvm_hamer *m = impl;
    if (strcmp(pvm_hamer_weights_kind(m), "generated") || pvm_hamer_depth(m) != 2) {
        snprintf(why, wn, "the stored fixture is the generated 2-block twin (PERCEIVE_HAMER_GEN_DEPTH=2); the %d-block %s model "
                 "is gated through it by `ctest -R hamer_fixtures`", pvm_hamer_depth(m), pvm_hamer_weights_kind(m));
        return -1;
    }
    if (strcmp(pvm_hamer_precision(m), "fp32")) {
        snprintf(why, wn, "the stored fixture is fp32 (bf16 is gated by `ctest -R hamer_fixtures`)");
        return -1;
    }
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/image.npz", dir);
    pvio_arrays e = { 0 };
    pvc_msg msg;
    if (pvio_npz_read_file(p, &e, &msg) != PV_OK) { snprintf(why, wn, "%s", msg.text); return -1; }
    const pvio_array *va = pvio_arrays_find(&e, "vertices"), *ka = pvio_arrays_find(&e, "keypoints_2d");
    const pvc_tensor *v = va ? &va->t : NULL, *k = ka ? &ka->t : NULL;
    const pv_hand *h;
    int n = pv_result_hands(r, &h), rc = 0;
    double dv = 0, dk = 0;
    if (!v || !k || v->dtype != PV_F32 || k->dtype != PV_F32 || v->rank != 3 || k->rank != 3) {
        snprintf(why, wn, "%.300s lacks vertices / keypoints_2d", p);
        rc = -1;
    } else if (v->dims[0] != n || k->dims[0] != n) {
        snprintf(why, wn, "%d hands, the reference has %lld", n, (long long)v->dims[0]);
        rc = 1;
    } else {
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < PV_HAND_VERTICES * 3; j++)
                dv = fmax(dv, fabs(h[i].vertices[j] - ((const float *)v->data)[(size_t)i * PV_HAND_VERTICES * 3 + j]));
            for (int j = 0; j < PV_HAND_KEYPOINTS * 2; j++)
                dk = fmax(dk, fabs(h[i].keypoints_2d[j] - ((const float *)k->data)[(size_t)i * PV_HAND_KEYPOINTS * 2 + j]));
        }
        rc = !(dv <= 1e-4 && dk <= 0.05);
        snprintf(why, wn, "%d hands: vertices within %.2g m, keypoints_2d within %.2g px of %.300s (gates 1e-4 m, 0.05 px)", n, dv, dk, p);
    }
    pvio_arrays_free(&e);
    return rc;
}

const pv_bundle pv_bundle_hamer = {
    "hamer", "HaMeR 3D hand meshes (Pavlakos et al., CVPR 2024): image + hand boxes -> MANO meshes, keypoints, cameras",
    hm_open, hm_run, hm_info, hm_close, pvm_hamer_generate, hm_validate, hm_bench_defaults, hm_fixture_check,
};
