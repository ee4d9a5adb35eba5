/* meteor inputs: a manifest or camera items + params -> one engine-ready frame (meteor.h). */
#include "models/meteor/meteor.h"
#include "api/model_api.h"
#include "io/image.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = PVM_METEOR_IMG_W, H = PVM_METEOR_IMG_H, NCAM = PVM_METEOR_NCAM };

void pvm_meteor_frame_free(pvm_meteor_frame *f)
{
    if (!f) return;
    pvc_free(f->chw);
    for (int c = 0; c < NCAM; c++) pvc_free(f->rgb[c]);
    memset(f, 0, sizeof *f);
}

static int cam_index(const char *name)
{
    for (int c = 0; c < NCAM; c++) if (!strcmp(name, pvm_meteor_cam_names[c])) return c;
    return -1;
}

/* ---- resize ------------------------------------------------------------------------------- */
void pvm_meteor_resize_area(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
    if (sw == dw && sh == dh) { memcpy(dst, src, (size_t)sw * sh * 3); return; }
    double sx = (double)sw / dw, sy = (double)sh / dh;
    if (sx >= 1.0 && sy >= 1.0) {
        /* each output pixel averages the source area it covers (fractional edges weighted) */
        for (int y = 0; y < dh; y++) {
            double y0 = y * sy, y1 = y0 + sy;
            for (int x = 0; x < dw; x++) {
                double x0 = x * sx, x1 = x0 + sx, acc[3] = { 0, 0, 0 };
                for (int yy = (int)y0; yy < sh && yy < y1; yy++) {
                    double wy = fmin(y1, yy + 1.0) - fmax(y0, (double)yy);
                    if (wy <= 0) continue;
                    const uint8_t *row = src + (size_t)yy * sw * 3;
                    for (int xx = (int)x0; xx < sw && xx < x1; xx++) {
                        double wx = fmin(x1, xx + 1.0) - fmax(x0, (double)xx);
                        if (wx <= 0) continue;
                        double w = wx * wy;
                        acc[0] += w * row[xx * 3]; acc[1] += w * row[xx * 3 + 1]; acc[2] += w * row[xx * 3 + 2];
                    }
                }
                double inv = 1.0 / (sx * sy);
                for (int k = 0; k < 3; k++) {
                    double v = acc[k] * inv + 0.5;
                    dst[((size_t)y * dw + x) * 3 + k] = (uint8_t)(v > 255 ? 255 : v);
                }
            }
        }
        return;
    }
    /* growing (in either direction): bilinear with half-pixel centres, edges clamped */
    for (int y = 0; y < dh; y++) {
        double fy = (y + 0.5) * sy - 0.5;
        if (fy < 0) fy = 0;
        int y0 = (int)fy, y1 = y0 + 1 < sh ? y0 + 1 : sh - 1;
        double ty = fy - y0;
        for (int x = 0; x < dw; x++) {
            double fx = (x + 0.5) * sx - 0.5;
            if (fx < 0) fx = 0;
            int x0 = (int)fx, x1 = x0 + 1 < sw ? x0 + 1 : sw - 1;
            double tx = fx - x0;
            for (int k = 0; k < 3; k++) {
                double a = src[((size_t)y0 * sw + x0) * 3 + k] * (1 - tx) + src[((size_t)y0 * sw + x1) * 3 + k] * tx;
                double b = src[((size_t)y1 * sw + x0) * 3 + k] * (1 - tx) + src[((size_t)y1 * sw + x1) * 3 + k] * tx;
                double v = a * (1 - ty) + b * ty + 0.5;
                dst[((size_t)y * dw + x) * 3 + k] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
    }
}

/* ---- one camera --------------------------------------------------------------------------- */
typedef struct cam_in {
    bool   has_img, has_K, has_T;
    double K[9], T[16];        /* K for the image as given; T ego -> camera */
} cam_in;

/* Images smaller than the feature map, or far from the 16:9 the network saw, are refused. */
static pv_status check_size(const char *cam, int w, int h, pvc_msg *msg)
{
    if (w < 192 || h < 108)
        return pvc_fail(msg, PV_EINPUT, "camera %s: image is %dx%d, smaller than 192x108 (METEOR needs 768x432; larger images are resized)", cam, w, h);
    double a = (double)w / h;
    if (a < 1.0 || a > 2.7)
        return pvc_fail(msg, PV_EINPUT, "camera %s: image is %dx%d (aspect %.2f): cannot be resized to 768x432 without distorting it "
                        "beyond what the model saw (want width/height in 1.0..2.7)", cam, w, h, a);
    return PV_OK;
}

static pv_status put_image(pvm_meteor_frame *f, int c, const pvio_image *img, pvc_msg *msg)
{
    pv_status s = check_size(pvm_meteor_cam_names[c], img->w, img->h, msg);
    if (s != PV_OK) return s;
    if (f->rgb[c]) return pvc_fail(msg, PV_EINPUT, "camera %s: given twice", pvm_meteor_cam_names[c]);
    if (!(f->rgb[c] = pvc_malloc((size_t)W * H * 3))) return pvc_fail(msg, PV_ENOMEM, "out of memory for camera %s", pvm_meteor_cam_names[c]);
    pvm_meteor_resize_area(img->rgb, img->w, img->h, f->rgb[c], W, H);
    f->src_w[c] = img->w;
    f->src_h[c] = img->h;
    uint8_t *dst = f->chw + (size_t)c * 3 * W * H;
    for (size_t i = 0; i < (size_t)W * H; i++) {
        dst[i] = f->rgb[c][3 * i];
        dst[(size_t)W * H + i] = f->rgb[c][3 * i + 1];
        dst[2 * (size_t)W * H + i] = f->rgb[c][3 * i + 2];
    }
    return PV_OK;
}

static pv_status decode_bytes(const char *cam, const void *data, size_t len, const char *fmt, pvio_image *img, pvc_msg *msg)
{
    memset(img, 0, sizeof *img);
    if (fmt && !strcmp(fmt, "rgb8")) {
        if (len != (size_t)W * H * 3)
            return pvc_fail(msg, PV_EINPUT, "camera %s: rgb8 is %zu bytes (want %d: 432 rows x 768 columns x RGB; other sizes as jpeg/png)", cam, len, W * H * 3);
        if (!(img->rgb = pvc_malloc(len))) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        memcpy(img->rgb, data, len);
        img->w = W;
        img->h = H;
        return PV_OK;
    }
    if (fmt && strcmp(fmt, "jpeg") && strcmp(fmt, "jpg") && strcmp(fmt, "png") && strcmp(fmt, "auto"))
        return pvc_fail(msg, PV_EUNSUPPORTED, "camera %s: format '%s' is not supported (jpeg, png, rgb8, auto)", cam, fmt);
    pv_status s = pvio_image_decode(data, len, fmt, img, msg);
    if (s != PV_OK) {
        char m2[PVC_MSG_LEN];
        snprintf(m2, sizeof m2, "%s", msg->text);
        return pvc_fail(msg, s, "camera %s: %.460s", cam, m2);
    }
    return PV_OK;
}

/* K: finite, fx, fy > 0, no skew, last row (0, 0, 1). */
static pv_status check_K(const char *cam, const double *K, pvc_msg *msg)
{
    for (int i = 0; i < 9; i++)
        if (!isfinite(K[i])) return pvc_fail(msg, PV_EINPUT, "camera %s: K[%d][%d] is not finite", cam, i / 3, i % 3);
    if (K[0] <= 0 || K[4] <= 0) return pvc_fail(msg, PV_EINPUT, "camera %s: K has focal lengths fx=%g, fy=%g (want > 0)", cam, K[0], K[4]);
    if (K[1] != 0) return pvc_fail(msg, PV_EINPUT, "camera %s: K has skew %g (the model's pinhole camera has none)", cam, K[1]);
    if (K[3] != 0 || K[6] != 0 || K[7] != 0 || K[8] != 1)
        return pvc_fail(msg, PV_EINPUT, "camera %s: K is not [[fx,0,cx],[0,fy,cy],[0,0,1]] (row 2 is %g,%g,%g; K[1][0] = %g)", cam, K[6], K[7], K[8], K[3]);
    return PV_OK;
}

/* T: finite, last row (0,0,0,1), rotation part orthonormal with det +1 (a rigid transform). */
static pv_status check_T(const char *cam, const char *what, const double *T, pvc_msg *msg)
{
    for (int i = 0; i < 16; i++)
        if (!isfinite(T[i])) return pvc_fail(msg, PV_EINPUT, "camera %s: %s[%d][%d] is not finite", cam, what, i / 4, i % 4);
    if (T[12] != 0 || T[13] != 0 || T[14] != 0 || T[15] != 1)
        return pvc_fail(msg, PV_EINPUT, "camera %s: %s's last row is %g,%g,%g,%g (want 0,0,0,1)", cam, what, T[12], T[13], T[14], T[15]);
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double d = T[i * 4] * T[j * 4] + T[i * 4 + 1] * T[j * 4 + 1] + T[i * 4 + 2] * T[j * 4 + 2] - (i == j);
            if (fabs(d) > worst) worst = fabs(d);
        }
    double det = T[0] * (T[5] * T[10] - T[6] * T[9]) - T[1] * (T[4] * T[10] - T[6] * T[8]) + T[2] * (T[4] * T[9] - T[5] * T[8]);
    if (worst > 1e-3 || det < 0)
        return pvc_fail(msg, PV_EINPUT, "camera %s: %s is not a rigid transform (rotation part off orthonormal by %.3g, det %.3g): "
                        "not invertible as a camera pose", cam, what, worst, det);
    return PV_OK;
}

/* inverse of a rigid transform */
static void invert_rigid(const double *A, double *B)
{
    memset(B, 0, 16 * sizeof *B);
    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) B[i * 4 + j] = A[j * 4 + i];
    for (int i = 0; i < 3; i++) B[i * 4 + 3] = -(B[i * 4] * A[3] + B[i * 4 + 1] * A[7] + B[i * 4 + 2] * A[11]);
    B[15] = 1;
}

static pv_status set_T(cam_in *ci, const char *cam, const double *v, bool ego_cam, pvc_msg *msg)
{
    if (ci->has_T) return pvc_fail(msg, PV_EINPUT, "camera %s: T given twice (T_cam_ego or T_ego_cam, once)", cam);
    pv_status s = check_T(cam, ego_cam ? "T_ego_cam" : "T_cam_ego", v, msg);
    if (s != PV_OK) return s;
    if (ego_cam) invert_rigid(v, ci->T); else memcpy(ci->T, v, sizeof ci->T);
    ci->has_T = true;
    return PV_OK;
}

/* ---- params ------------------------------------------------------------------------------- */
typedef struct frame_ctx {
    pvm_meteor_frame  *f;
    pvm_meteor_params *prm;
    cam_in             cam[NCAM];
    bool               has_v0, has_pose, has_stream_fields;
} frame_ctx;

static pv_status parse_bool(const char *key, const char *v, bool *out, pvc_msg *msg)
{
    if (!strcmp(v, "1") || !strcmp(v, "true")) *out = true;
    else if (!strcmp(v, "0") || !strcmp(v, "false")) *out = false;
    else return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' is not 0/1/true/false", key, v);
    return PV_OK;
}

typedef struct num_param { const char *key; size_t off; double lo, hi; } num_param;
#define NP(k, lo, hi) { #k, offsetof(pvm_meteor_params, k), lo, hi }
static const num_param num_params[] = {
    NP(cand_3d, 0, 1), NP(keep_vehicle, 0, 1), NP(keep_vru, 0, 1), NP(nms_iou, 0, 1), NP(nms_ios, 0, 1),
    NP(yaw_match_m, 0, 100), NP(yaw_alpha, 0, 1), NP(th_2d, 0, 1), NP(lane_decay, 0, 1), NP(mode_hysteresis, -100, 100),
    NP(straight_lead, -100, 100), NP(stat_logit, -100, 100),
};

static pv_status one_param(frame_ctx *x, const char *k, const char *v, pvc_msg *msg)
{
    double d[16];
    pv_status s;
    const char *dot = strchr(k, '.');
    if (dot && (!strncmp(k, "K.", 2) || !strncmp(k, "T_cam_ego.", 10) || !strncmp(k, "T_ego_cam.", 10))) {
        int c = cam_index(dot + 1);
        if (c < 0) return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' is not a camera (CAM_FRONT_WIDE, CAM_FRONT_LEFT, CAM_FRONT_RIGHT, "
                                   "CAM_BACK_WIDE, CAM_BACK_LEFT, CAM_BACK_RIGHT, CAM_FRONT_NARROW, CAM_BACK_NARROW)", k, dot + 1);
        if (k[0] == 'K') {
            if ((s = pv_parse_floats(k, v, d, 9, msg)) != PV_OK) return s;
            if (x->cam[c].has_K) return pvc_fail(msg, PV_EINPUT, "param '%s': given twice", k);
            if ((s = check_K(dot + 1, d, msg)) != PV_OK) return s;
            memcpy(x->cam[c].K, d, sizeof x->cam[c].K);
            x->cam[c].has_K = true;
            return PV_OK;
        }
        if ((s = pv_parse_floats(k, v, d, 16, msg)) != PV_OK) return s;
        return set_T(&x->cam[c], dot + 1, d, !strncmp(k, "T_ego_cam.", 10), msg);
    }
    if (!strcmp(k, "v0")) {
        if ((s = pv_parse_floats(k, v, d, 1, msg)) != PV_OK) return s;
        if (d[0] < 0 || d[0] > 100) return pvc_fail(msg, PV_EINPUT, "param 'v0': %g m/s is outside 0..100", d[0]);
        if (x->has_v0) return pvc_fail(msg, PV_EINPUT, "param 'v0': given twice");
        x->f->v0 = (float)d[0];
        x->has_v0 = true;
        return PV_OK;
    }
    if (!strcmp(k, "pose")) {
        if ((s = pv_parse_floats(k, v, d, 3, msg)) != PV_OK) return s;
        if (x->has_pose) return pvc_fail(msg, PV_EINPUT, "param 'pose': given twice");
        x->f->pose = (pvm_meteor_pose){ d[0], d[1], d[2] };
        x->f->has_pose = x->has_pose = true;
        return PV_OK;
    }
    if (!strcmp(k, "stream.id")) {
        if (!*v || strlen(v) > PVM_METEOR_STREAM_ID_MAX) return pvc_fail(msg, PV_EINPUT, "param 'stream.id': want 1..%d bytes", PVM_METEOR_STREAM_ID_MAX);
        snprintf(x->f->stream_id, sizeof x->f->stream_id, "%s", v);
        return PV_OK;
    }
    if (!strcmp(k, "stream.reset")) { x->has_stream_fields = true; return parse_bool(k, v, &x->f->stream_reset, msg); }
    if (!strcmp(k, "stream.timestamp_s")) {
        if ((s = pv_parse_floats(k, v, d, 1, msg)) != PV_OK) return s;
        x->f->timestamp_s = d[0];
        x->f->has_timestamp = x->has_stream_fields = true;
        return PV_OK;
    }
    if (!strcmp(k, "hide_2d")) {
        char *e;
        long h = strtol(v, &e, 10);
        if (e == v || *e || h < -1 || h >= PVM_METEOR_2D_CLS) return pvc_fail(msg, PV_EINPUT, "param 'hide_2d': '%s' is not a class 0..9 or -1", v);
        x->prm->hide_2d = (int)h;
        return PV_OK;
    }
    for (size_t i = 0; i < sizeof num_params / sizeof num_params[0]; i++) {
        const num_param *np = &num_params[i];
        if (strcmp(k, np->key)) continue;
        if ((s = pv_parse_floats(k, v, d, 1, msg)) != PV_OK) return s;
        if (d[0] < np->lo || d[0] > np->hi) return pvc_fail(msg, PV_EINPUT, "param '%s': %g is outside %g..%g", k, d[0], np->lo, np->hi);
        *(float *)(void *)((char *)x->prm + np->off) = (float)d[0];
        return PV_OK;
    }
    return pvc_fail(msg, PV_EINPUT, "param '%s' is not known (K.<CAM>, T_cam_ego.<CAM>, T_ego_cam.<CAM>, v0, pose, stream.id, stream.reset, "
                    "stream.timestamp_s, cand_3d, keep_vehicle, keep_vru, nms_iou, nms_ios, yaw_match_m, yaw_alpha, th_2d, hide_2d, "
                    "lane_decay, mode_hysteresis, straight_lead, stat_logit)", k);
}

/* ---- the manifest ------------------------------------------------------------------------- */
/* A JSON number array (nested rows allowed) -> n doubles. */
static pv_status json_numbers(const cJSON *a, const char *what, double *v, int n, pvc_msg *msg)
{
    int k = 0;
    const cJSON *stack[4];
    int sp = 0;
    if (!cJSON_IsArray(a)) return pvc_fail(msg, PV_EINPUT, "manifest %s: want an array of %d numbers (rows allowed)", what, n);
    stack[sp++] = a->child;
    while (sp > 0) {
        const cJSON *e = stack[--sp];
        if (!e) continue;
        stack[sp++] = e->next;
        if (cJSON_IsArray(e)) {
            if (sp >= 4) return pvc_fail(msg, PV_EINPUT, "manifest %s: nested too deep", what);
            stack[sp++] = e->child;
            continue;
        }
        if (!cJSON_IsNumber(e)) return pvc_fail(msg, PV_EINPUT, "manifest %s: element %d is not a number", what, k);
        if (k >= n) return pvc_fail(msg, PV_EINPUT, "manifest %s: more than %d numbers", what, n);
        v[k++] = e->valuedouble;
    }
    if (k != n) return pvc_fail(msg, PV_EINPUT, "manifest %s: %d numbers (want %d)", what, k, n);
    return PV_OK;
}

static pv_status read_file(const char *path, void **buf, size_t *len, pvc_msg *msg)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EINPUT, "cannot open '%s'", path);
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = pvc_malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        if (cap > ((size_t)256 << 20)) { pvc_free(b); fclose(f); return pvc_fail(msg, PV_EINPUT, "'%s' is larger than 256 MiB", path); }
        uint8_t *nb = pvc_realloc(b, cap * 2);
        if (!nb) { pvc_free(b); b = NULL; break; }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    if (!b) return pvc_fail(msg, PV_ENOMEM, "out of memory reading '%s'", path);
    *buf = b;
    *len = n;
    return PV_OK;
}

static pv_status manifest_camera(frame_ctx *x, const cJSON *o, const char *name, const char *base, bool read_files, pvc_msg *msg)
{
    int c = cam_index(name);
    if (c < 0) return pvc_fail(msg, PV_EINPUT, "manifest camera '%s' is not one of CAM_FRONT_WIDE, CAM_FRONT_LEFT, CAM_FRONT_RIGHT, "
                               "CAM_BACK_WIDE, CAM_BACK_LEFT, CAM_BACK_RIGHT, CAM_FRONT_NARROW, CAM_BACK_NARROW", name);
    if (!cJSON_IsObject(o)) return pvc_fail(msg, PV_EINPUT, "manifest camera %s: want an object {image, K, T_cam_ego}", name);
    cam_in *ci = &x->cam[c];
    pv_status s = PV_OK;
    char what[96];
    for (const cJSON *e = o->child; e && s == PV_OK; e = e->next) {
        double v[16];
        if (!strcmp(e->string, "name")) continue;
        if (!strcmp(e->string, "K")) {
            snprintf(what, sizeof what, "%s.K", name);
            if ((s = json_numbers(e, what, v, 9, msg)) == PV_OK && (s = check_K(name, v, msg)) == PV_OK) {
                memcpy(ci->K, v, sizeof ci->K);
                ci->has_K = true;
            }
        } else if (!strcmp(e->string, "T_cam_ego") || !strcmp(e->string, "T_ego_cam")) {
            snprintf(what, sizeof what, "%s.%s", name, e->string);
            if ((s = json_numbers(e, what, v, 16, msg)) == PV_OK) s = set_T(ci, name, v, e->string[2] == 'e', msg);
        } else if (!strcmp(e->string, "image")) {
            if (!cJSON_IsString(e) || !e->valuestring[0]) return pvc_fail(msg, PV_EINPUT, "manifest camera %s: image: want a file path", name);
            if (!read_files) { ci->has_img = true; continue; }
            if (!base) return pvc_fail(msg, PV_EINPUT, "manifest camera %s: image '%.200s' is a file, but this manifest came without a path "
                                       "(the server does not read files): send the images as items named by the camera", name, e->valuestring);
            char p[4400];
            if (e->valuestring[0] == '/') (void)pv_pathf(p, sizeof p, "%s", e->valuestring);
            else (void)pv_pathf(p, sizeof p, "%s/%s", base, e->valuestring);
            void *buf = NULL;
            size_t len = 0;
            if ((s = read_file(p, &buf, &len, msg)) != PV_OK) return pvc_fail(msg, s, "manifest camera %s: cannot read image '%.300s'", name, p);
            pvio_image img;
            s = decode_bytes(name, buf, len, "auto", &img, msg);
            pvc_free(buf);
            if (s == PV_OK) s = put_image(x->f, c, &img, msg);
            pvio_image_free(&img);
            ci->has_img = s == PV_OK;
        } else return pvc_fail(msg, PV_EINPUT, "manifest camera %s: key '%.64s' is not known (name, image, K, T_cam_ego, T_ego_cam)", name, e->string);
    }
    return s;
}

static pv_status param_text(const cJSON *e, char *buf, size_t cap, const char *key, pvc_msg *msg)
{
    if (cJSON_IsString(e)) snprintf(buf, cap, "%s", e->valuestring);
    else if (cJSON_IsBool(e)) snprintf(buf, cap, "%s", cJSON_IsTrue(e) ? "1" : "0");
    else if (cJSON_IsNumber(e)) snprintf(buf, cap, "%.17g", e->valuedouble);
    else if (cJSON_IsArray(e)) {
        double v[16];
        int n = cJSON_GetArraySize(e);
        if (n < 1 || n > 16) return pvc_fail(msg, PV_EINPUT, "manifest %s: want 1..16 numbers", key);
        pv_status s = json_numbers(e, key, v, n, msg);
        if (s != PV_OK) return s;
        int o = 0;
        for (int i = 0; i < n && o < (int)cap; i++) o += snprintf(buf + o, cap - (size_t)o, "%s%.17g", i ? "," : "", v[i]);
    } else return pvc_fail(msg, PV_EINPUT, "manifest %s: want a number, string, boolean or array", key);
    return PV_OK;
}

/* base: the manifest's folder (NULL: no path, files refused); read_files false only checks. */
static pv_status parse_manifest(frame_ctx *x, const pv_input *in, bool read_files, pvc_msg *msg)
{
    /* the error position from end, not cJSON_GetErrorPtr() (one global for every thread) */
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(in->data, in->len, &end, false);
    if (!root) return pvc_fail(msg, PV_EFORMAT, "manifest: not valid JSON (near byte %td of %zu)",
                               end ? end - (const char *)in->data : 0, in->len);
    char base[4096], *basep = NULL;
    if (in->path) {
        (void)pv_pathf(base, sizeof base, "%s", in->path);
        char *sl = strrchr(base, '/');
        if (sl) *sl = 0; else snprintf(base, sizeof base, ".");
        basep = base;
    }
    pv_status s = PV_OK;
    if (!cJSON_IsObject(root)) s = pvc_fail(msg, PV_EINPUT, "manifest: want an object {cameras, v0, pose, stream, params}");
    char text[512];
    for (const cJSON *e = root ? root->child : NULL; e && s == PV_OK; e = e->next) {
        const char *k = e->string;
        if (!strcmp(k, "note")) continue;
        if (!strcmp(k, "cameras")) {
            if (cJSON_IsArray(e)) {
                for (const cJSON *c = e->child; c && s == PV_OK; c = c->next) {
                    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
                    if (!cJSON_IsString(nm)) s = pvc_fail(msg, PV_EINPUT, "manifest cameras[]: each camera needs a \"name\"");
                    else s = manifest_camera(x, c, nm->valuestring, basep, read_files, msg);
                }
            } else if (cJSON_IsObject(e)) {
                for (const cJSON *c = e->child; c && s == PV_OK; c = c->next) s = manifest_camera(x, c, c->string, basep, read_files, msg);
            } else s = pvc_fail(msg, PV_EINPUT, "manifest cameras: want an array of cameras or an object keyed by camera name");
        } else if (!strcmp(k, "stream") && cJSON_IsObject(e)) {
            for (const cJSON *c = e->child; c && s == PV_OK; c = c->next) {
                char key[96];
                snprintf(key, sizeof key, "stream.%.60s", c->string);
                if ((s = param_text(c, text, sizeof text, key, msg)) == PV_OK) s = one_param(x, key, text, msg);
            }
        } else if (!strcmp(k, "stream")) {
            if ((s = param_text(e, text, sizeof text, "stream", msg)) == PV_OK) s = one_param(x, "stream.id", text, msg);
        } else if (!strcmp(k, "params")) {
            if (!cJSON_IsObject(e)) s = pvc_fail(msg, PV_EINPUT, "manifest params: want an object");
            for (const cJSON *c = e->child; c && s == PV_OK; c = c->next)
                if ((s = param_text(c, text, sizeof text, c->string, msg)) == PV_OK) s = one_param(x, c->string, text, msg);
        } else if (!strcmp(k, "v0") || !strcmp(k, "pose")) {
            if ((s = param_text(e, text, sizeof text, k, msg)) == PV_OK) s = one_param(x, k, text, msg);
        } else s = pvc_fail(msg, PV_EINPUT, "manifest: key '%.64s' is not known (cameras, v0, pose, stream, params, note)", k);
    }
    cJSON_Delete(root);
    return s;
}

static bool is_manifest(const pv_input *in)
{
    const char *fmt = in->format ? in->format : "auto";
    if (in->name && !strcmp(in->name, "manifest")) return true;
    if (in->name) return false;
    if (!strcmp(fmt, "json")) return true;
    if (strcmp(fmt, "auto")) return false;
    const char *p = in->data;
    for (size_t i = 0; p && i < in->len; i++) {
        if (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t') continue;
        return p[i] == '{';
    }
    return false;
}

/* An absent camera: black image and a camera looking straight up from 1 m, so no ground cell
 * of the lift projects into it (spec 2.2: z > 0.5 fails) and it adds nothing to the BEV. */
static void absent_camera(pvm_meteor_calib *cal, int c)
{
    static const float K[9] = { 384, 0, 383.5f, 0, 384, 215.5f, 0, 0, 1 };
    static const float T[16] = { 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
    memcpy(cal->K[c], K, sizeof K);
    memcpy(cal->T_cam_ego[c], T, sizeof T);
    cal->present[c] = false;
}

pv_status pvm_meteor_frame_build(const pv_input *in, int n_in, const pv_param *p, int np, pvm_meteor_frame *f,
                                 pvm_meteor_params *prm, pvc_msg *msg)
{
    memset(f, 0, sizeof *f);
    pvm_meteor_params_default(prm);
    double t0 = pvc_now_ms();
    frame_ctx x = { .f = f, .prm = prm };
    if (!(f->chw = pvc_calloc((size_t)NCAM * 3 * W * H, 1))) return pvc_fail(msg, PV_ENOMEM, "out of memory for the frame");
    pv_status s = PV_OK;
    int manifests = 0;
    for (int i = 0; i < n_in && s == PV_OK; i++) {
        const pv_input *it = &in[i];
        if (!it->data && it->len) { s = pvc_fail(msg, PV_EINPUT, "input '%s': data is NULL", it->name ? it->name : "(main)"); break; }
        if (is_manifest(it)) {
            if (manifests++) { s = pvc_fail(msg, PV_EINPUT, "more than one manifest"); break; }
            s = parse_manifest(&x, it, true, msg);
            continue;
        }
        int c = it->name ? cam_index(it->name) : -1;
        if (c < 0) {
            s = pvc_fail(msg, PV_EINPUT, "input '%s' is not known: meteor takes a manifest (JSON) or camera items named CAM_FRONT_WIDE, "
                         "CAM_FRONT_LEFT, CAM_FRONT_RIGHT, CAM_BACK_WIDE, CAM_BACK_LEFT, CAM_BACK_RIGHT, CAM_FRONT_NARROW, CAM_BACK_NARROW",
                         it->name ? it->name : "(main)");
            break;
        }
        pvio_image img;
        if ((s = decode_bytes(it->name, it->data, it->len, it->format, &img, msg)) == PV_OK) s = put_image(f, c, &img, msg);
        pvio_image_free(&img);
        x.cam[c].has_img = s == PV_OK;
    }
    for (int i = 0; i < np && s == PV_OK; i++) {
        if (!p[i].key || !p[i].value) { s = pvc_fail(msg, PV_EINPUT, "param %d: NULL key or value", i); break; }
        s = one_param(&x, p[i].key, p[i].value, msg);
    }
    int present = 0;
    for (int c = 0; c < NCAM && s == PV_OK; c++) {
        cam_in *ci = &x.cam[c];
        const char *nm = pvm_meteor_cam_names[c];
        if (!ci->has_img) {
            if (ci->has_K || ci->has_T) s = pvc_fail(msg, PV_EINPUT, "camera %s: calibration given but no image", nm);
            else absent_camera(&f->cal, c);
            continue;
        }
        if (!ci->has_K) { s = pvc_fail(msg, PV_EINPUT, "camera %s: no K (param K.%s or the manifest's K)", nm, nm); break; }
        if (!ci->has_T) { s = pvc_fail(msg, PV_EINPUT, "camera %s: no T_cam_ego (param T_cam_ego.%s, T_ego_cam.%s or the manifest's)", nm, nm, nm); break; }
        /* K is for the image as given: rows 0 and 1 scale with the resize (spec 1.2) */
        double sx = (double)W / f->src_w[c], sy = (double)H / f->src_h[c];
        for (int j = 0; j < 3; j++) {
            f->cal.K[c][j] = (float)(ci->K[j] * sx);
            f->cal.K[c][3 + j] = (float)(ci->K[3 + j] * sy);
            f->cal.K[c][6 + j] = (float)ci->K[6 + j];
        }
        for (int j = 0; j < 16; j++) f->cal.T_cam_ego[c][j] = (float)ci->T[j];
        f->cal.present[c] = true;
        present++;
    }
    if (s == PV_OK && !present) s = pvc_fail(msg, PV_EINPUT, "no camera: give a manifest or at least one camera item with its K and T_cam_ego");
    if (s == PV_OK && x.has_stream_fields && !f->stream_id[0]) s = pvc_fail(msg, PV_EINPUT, "stream.* params need stream.id");
    if (s == PV_OK && f->stream_id[0] && !f->has_timestamp)
        s = pvc_fail(msg, PV_EINPUT, "stream '%s': stream.timestamp_s is required (frames of a stream must come in order)", f->stream_id);
    if (s == PV_OK && !x.has_v0) { f->v0 = PVM_METEOR_V0_DEFAULT; f->v0_default = true; }
    if (s != PV_OK) { pvm_meteor_frame_free(f); return s; }
    f->decode_ms = pvc_now_ms() - t0;
    return PV_OK;
}

pv_status pvm_meteor_item_validate(const pv_input *in, pvc_msg *msg)
{
    if (!in->data && in->len) return pvc_fail(msg, PV_EINPUT, "input: data is NULL");
    if (is_manifest(in)) {
        pvm_meteor_frame f = { 0 };
        pvm_meteor_params prm;
        pvm_meteor_params_default(&prm);
        frame_ctx x = { .f = &f, .prm = &prm };
        return parse_manifest(&x, in, false, msg);
    }
    if (!in->name)
        return pvc_fail(msg, PV_EUNSUPPORTED, "meteor's main input is a manifest (JSON, format json) naming the eight camera images "
                        "and their calibration; images alone are camera items named by their slot (CAM_FRONT_WIDE ...)");
    int c = cam_index(in->name);
    if (c < 0) return pvc_fail(msg, PV_EINPUT, "input '%s' is not known: meteor takes a manifest (JSON) or camera items named CAM_FRONT_WIDE ...",
                               in->name);
    pvio_image img;
    pv_status s = decode_bytes(in->name, in->data, in->len, in->format, &img, msg);
    if (s == PV_OK) s = check_size(in->name, img.w, img.h, msg);
    pvio_image_free(&img);
    return s;
}
