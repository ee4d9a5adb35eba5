/* meteor generated artifacts: the skeleton filled with seeded weights, its structural constants
 * computed from the architecture (spec 2.2, 3.1), and a sample frame of a synthetic scene. */
#include "models/meteor/meteor.h"
#include "api/artifacts.h"
#include "api/model_api.h"
#include "graph/onnx.h"
#include "io/checksum.h"
#include "io/image.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern const unsigned char pvm_meteor_skeleton[];
extern const size_t pvm_meteor_skeleton_len;

void pvm_meteor_gen_tag(char *buf, size_t cap)
{
    char hex[65];
    pvio_sha256_hex(pvm_meteor_skeleton, pvm_meteor_skeleton_len, hex);
    hex[12] = 0;
    snprintf(buf, cap, "%s-seed%d", hex, PVM_METEOR_GEN_SEED);
}

/* Adaptive average pooling as a matrix: output i averages inputs [floor(i n/m), ceil((i+1) n/m)). */
static void pool_matrix(float *out, int64_t rows, int64_t cols, bool left)
{
    int64_t m = left ? rows : cols, n = left ? cols : rows;    /* m outputs from n inputs */
    memset(out, 0, (size_t)(rows * cols) * sizeof *out);
    for (int64_t i = 0; i < m; i++) {
        int64_t a = (i * n) / m, b = ((i + 1) * n + m - 1) / m;
        for (int64_t j = a; j < b; j++) {
            float w = 1.0f / (float)(b - a);
            if (left) out[i * cols + j] = w; else out[j * cols + i] = w;
        }
    }
}

/* The structural constants the export leaves in the graph (emptied in the skeleton): the lift's
 * ground points, the pooling matrices of the 800x500 -> 25x16 adaptive pools, and the history
 * terms (warped previous BEV, its validity) that are all zero without history (spec 2.3). */
static bool structural(void *ud, const pvg_fill_site *s, float *out)
{
    (void)ud;
    if (!s->constant_node) return false;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    if (!strcmp(s->consumer_op, "Expand") && s->rank == 3 && s->dims[0] == 1 && s->dims[1] == 4 &&
        s->dims[2] == (int64_t)PVM_METEOR_DET_H * PVM_METEOR_DET_W) {
        /* [x, y, 0, 1] per lift cell, x = linspace(79.8, -79.8, 400) by rows, y = linspace(49.8, -49.8, 250) */
        int64_t g = s->dims[2];
        for (int r = 0; r < PVM_METEOR_DET_H; r++)
            for (int c = 0; c < PVM_METEOR_DET_W; c++) {
                int64_t p = (int64_t)r * PVM_METEOR_DET_W + c;
                out[p] = (float)(79.8 - 159.6 * r / (PVM_METEOR_DET_H - 1));
                out[g + p] = (float)(49.8 - 99.6 * c / (PVM_METEOR_DET_W - 1));
                out[2 * g + p] = 0.0f;
                out[3 * g + p] = 1.0f;
            }
        return true;
    }
    if (!strcmp(s->consumer_op, "MatMul") && s->rank == 2 && (s->consumer_slot == 0 || s->consumer_slot == 1)) {
        bool left = s->consumer_slot == 0;
        int64_t outs = left ? s->dims[0] : s->dims[1], ins = left ? s->dims[1] : s->dims[0];
        if (outs >= ins) return false;
        pool_matrix(out, s->dims[0], s->dims[1], left);
        return true;
    }
    if ((!strcmp(s->consumer_op, "Sub") || !strcmp(s->consumer_op, "Mul")) && s->rank == 4 &&
        s->dims[2] == PVM_METEOR_BEV_H && s->dims[3] == PVM_METEOR_BEV_W) {
        memset(out, 0, (size_t)n * sizeof *out);
        return true;
    }
    return false;
}

pv_status pvm_meteor_generate_onnx(const char *dir, pvc_msg *msg)
{
    char p[4200];
    (void)pv_pathf(p, sizeof p, "%s/%s", dir, PVM_METEOR_ONNX);
    pvg_fill_stats st;
    pv_status s = pvg_onnx_fill_buffer_hook(pvm_meteor_skeleton, pvm_meteor_skeleton_len, "meteor skeleton", p,
                                            PVM_METEOR_GEN_SEED, SIZE_MAX, structural, NULL, &st, msg);
    if (s != PV_OK) return s;
    static const char *const files[1] = { PVM_METEOR_ONNX };
    return pva_manifest_write(dir, 1, files, msg);
}

/* ---- the sample frame --------------------------------------------------------------------- */
enum { SAMPLE_W = 960, SAMPLE_H = 540 };

typedef struct cam_rig { double yaw_deg, pitch_deg, hfov_deg, x, y, z; } cam_rig;
static const cam_rig sample_rig[PVM_METEOR_NCAM] = {
    { 0, 6, 100, 2.2, 0.0, 1.7 },     { 55, 8, 90, 1.9, 0.8, 1.8 },   { -55, 8, 90, 1.9, -0.8, 1.8 },
    { 180, 6, 100, -1.0, 0.0, 1.7 },  { 125, 8, 90, 0.0, 0.9, 1.8 },  { -125, 8, 90, 0.0, -0.9, 1.8 },
    { 0, 3, 40, 2.2, 0.1, 1.7 },      { 180, 3, 40, -1.0, 0.1, 1.7 },
};

typedef struct obj_box { double x, y, l, w, h; uint8_t r, g, b; } obj_box;
static const obj_box sample_objs[] = {
    { 16, -1.75, 4.6, 1.9, 1.5, 180, 30, 30 }, { -13, 1.75, 4.4, 1.8, 1.5, 30, 60, 170 },
    { 34, 1.75, 9.0, 2.5, 3.2, 230, 230, 230 }, { 22, 6.4, 0.6, 0.6, 1.75, 240, 160, 40 },
    { 8, -6.8, 1.8, 0.7, 1.6, 40, 150, 60 },
};

/* ego -> camera rotation rows: right, down, forward */
static void rig_R(const cam_rig *c, double R[3][3])
{
    double yw = c->yaw_deg * M_PI / 180, pt = c->pitch_deg * M_PI / 180;
    double f[3] = { cos(yw) * cos(pt), sin(yw) * cos(pt), -sin(pt) }, r[3] = { sin(yw), -cos(yw), 0 };
    double d[3] = { f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0] };
    for (int j = 0; j < 3; j++) { R[0][j] = r[j]; R[1][j] = d[j]; R[2][j] = f[j]; }
}

static double fract(double v) { return v - floor(v); }

static void shade_ground(double x, double y, double dist, uint8_t px[3])
{
    double ay = fabs(y);
    int r, g, b;
    if (ay < 5.25) { r = 78; g = 80; b = 84; }                    /* asphalt */
    else if (ay < 8.0) { r = 150; g = 148; b = 140; }             /* sidewalk */
    else { r = 70; g = 110; b = 55; }                             /* verge */
    bool line = (fabs(ay - 5.1) < 0.08) ||                         /* solid road edge lines */
                (fabs(ay - 1.75) < 0.07 && fract(x / 9.0) < 0.33) ||   /* dashed lane lines */
                (x > 20 && x < 23.5 && ay < 5.0 && fract(y / 1.0) < 0.5) || /* crosswalk */
                (fabs(x - 19.0) < 0.25 && ay < 5.0 && y > 0);      /* stop line */
    if (line) { r = 235; g = 235; b = 225; }
    double fog = dist / (dist + 120.0);
    px[0] = (uint8_t)(r * (1 - fog) + 190 * fog);
    px[1] = (uint8_t)(g * (1 - fog) + 200 * fog);
    px[2] = (uint8_t)(b * (1 - fog) + 215 * fog);
}

/* Ray-casts the scene (ground, boxes, sky) for camera c at SAMPLE_W x SAMPLE_H. */
static void render_cam(const cam_rig *c, double fx, double cx, double cy, uint8_t *rgb)
{
    double R[3][3];
    rig_R(c, R);
    const double o[3] = { c->x, c->y, c->z };
    for (int v = 0; v < SAMPLE_H; v++)
        for (int u = 0; u < SAMPLE_W; u++) {
            double dc[3] = { (u - cx) / fx, (v - cy) / fx, 1 }, d[3];
            for (int j = 0; j < 3; j++) d[j] = R[0][j] * dc[0] + R[1][j] * dc[1] + R[2][j] * dc[2];   /* R^T dc */
            double best = 1e30;
            uint8_t px[3];
            double sky = d[2] / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            px[0] = (uint8_t)(150 + 60 * (sky > 0 ? sky : 0));
            px[1] = (uint8_t)(180 + 50 * (sky > 0 ? sky : 0));
            px[2] = 230;
            if (d[2] < -1e-6) {
                double t = -o[2] / d[2];
                best = t;
                shade_ground(o[0] + t * d[0], o[1] + t * d[1], t, px);
            }
            for (size_t k = 0; k < sizeof sample_objs / sizeof sample_objs[0]; k++) {
                const obj_box *b = &sample_objs[k];
                double lo[3] = { b->x - b->l / 2, b->y - b->w / 2, 0 }, hi[3] = { b->x + b->l / 2, b->y + b->w / 2, b->h };
                double t0 = 0, t1 = 1e30;
                int axis = -1;
                for (int j = 0; j < 3 && t0 <= t1; j++) {
                    if (fabs(d[j]) < 1e-12) { if (o[j] < lo[j] || o[j] > hi[j]) t0 = 2e30; continue; }
                    double a = (lo[j] - o[j]) / d[j], e = (hi[j] - o[j]) / d[j];
                    if (a > e) { double tmp = a; a = e; e = tmp; }
                    if (a > t0) { t0 = a; axis = j; }
                    if (e < t1) t1 = e;
                }
                if (t0 <= t1 && t0 > 0 && t0 < best) {
                    best = t0;
                    double lit = axis == 2 ? 1.0 : axis == 0 ? 0.8 : 0.62;
                    px[0] = (uint8_t)(b->r * lit); px[1] = (uint8_t)(b->g * lit); px[2] = (uint8_t)(b->b * lit);
                }
            }
            memcpy(rgb + ((size_t)v * SAMPLE_W + u) * 3, px, 3);
        }
}

static cJSON *matrix(const double *m, int rows, int cols)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rows; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; row && j < cols; j++) cJSON_AddItemToArray(row, cJSON_CreateNumber(m[i * cols + j]));
        cJSON_AddItemToArray(a, row);
    }
    return a;
}

static pv_status write_sample(const char *dir, pvc_msg *msg)
{
    char sd[4200], p[4300];
    (void)pv_pathf(sd, sizeof sd, "%s/sample", dir);
    pv_status s = pva_mkdirs(sd, msg);
    if (s != PV_OK) return s;
    cJSON *root = cJSON_CreateObject(), *cams = cJSON_AddArrayToObject(root, "cameras");
    pvio_image img = { SAMPLE_W, SAMPLE_H, pvc_malloc((size_t)SAMPLE_W * SAMPLE_H * 3) };
    if (!root || !cams || !img.rgb) { cJSON_Delete(root); pvc_free(img.rgb); return pvc_fail(msg, PV_ENOMEM, "out of memory"); }
    cJSON_AddStringToObject(root, "note", "perceive generated sample: a synthetic road scene seen by a synthetic 8-camera rig "
                                          "(K at the images' 960x540; T_cam_ego maps ego to camera, OpenCV camera axes)");
    for (int c = 0; c < PVM_METEOR_NCAM && s == PV_OK; c++) {
        const cam_rig *r = &sample_rig[c];
        double fx = (SAMPLE_W / 2.0) / tan(r->hfov_deg * M_PI / 360), cx = (SAMPLE_W - 1) / 2.0, cy = (SAMPLE_H - 1) / 2.0;
        render_cam(r, fx, cx, cy, img.rgb);
        void *jpg = NULL;
        size_t len = 0;
        char name[64];
        snprintf(name, sizeof name, "%s.jpg", pvm_meteor_cam_names[c]);
        (void)pv_pathf(p, sizeof p, "%s/%s", sd, name);
        if ((s = pvio_image_jpeg_encode(&img, 92, &jpg, &len, msg)) == PV_OK) s = pva_write(p, jpg, len, msg);
        pvc_free(jpg);
        double R[3][3], K[9] = { fx, 0, cx, 0, fx, cy, 0, 0, 1 }, T[16] = { 0 };
        rig_R(r, R);
        const double o[3] = { r->x, r->y, r->z };
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) T[i * 4 + j] = R[i][j];
            T[i * 4 + 3] = -(R[i][0] * o[0] + R[i][1] * o[1] + R[i][2] * o[2]);
        }
        T[15] = 1;
        cJSON *cam = cJSON_CreateObject();
        cJSON_AddStringToObject(cam, "name", pvm_meteor_cam_names[c]);
        cJSON_AddStringToObject(cam, "image", name);
        cJSON_AddItemToObject(cam, "K", matrix(K, 3, 3));
        cJSON_AddItemToObject(cam, "T_cam_ego", matrix(T, 4, 4));
        cJSON_AddItemToArray(cams, cam);
    }
    cJSON_AddNumberToObject(root, "v0", 8.0);
    double pose[3] = { 0, 0, 0 };
    cJSON_AddItemToObject(root, "pose", cJSON_CreateDoubleArray(pose, 3));
    char *text = s == PV_OK ? cJSON_Print(root) : NULL;
    if (s == PV_OK && !text) s = pvc_fail(msg, PV_ENOMEM, "out of memory");
    (void)pv_pathf(p, sizeof p, "%s/manifest.json", sd);
    if (s == PV_OK) s = pva_write(p, text, strlen(text), msg);
    cJSON_free(text);
    cJSON_Delete(root);
    pvc_free(img.rgb);
    return s;
}

pv_status pvm_meteor_generate(const char *dir, pvc_msg *msg)
{
    pv_status s = pva_mkdirs(dir, msg);
    if (s == PV_OK) s = pvm_meteor_generate_onnx(dir, msg);
    if (s == PV_OK) s = write_sample(dir, msg);
    return s;
}
