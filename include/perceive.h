/*
 * perceive: a C runtime for published perception models.
 *
 * This header is the public API and its spec. Worked example (run an ONNX graph):
 *
 *     pv_graph *g = NULL;
 *     pv_graph_options opt = { .threads = 2 };
 *     if (pv_graph_open("model.onnx", &opt, &g) != PV_OK) {
 *         fprintf(stderr, "%s\n", pv_last_error());   // open failed: no handle exists
 *         return 1;
 *     }
 *     float x[1 * 3 * 8 * 8] = {0};
 *     pv_tensor in = { .name = "x", .dtype = PV_F32, .rank = 4, .dims = {1, 3, 8, 8}, .data = x };
 *     pv_tensor out[4];
 *     size_t n_out = 4;
 *     if (pv_graph_run(g, &in, 1, out, &n_out) != PV_OK)
 *         fprintf(stderr, "%s\n", pv_graph_errmsg(g));
 *     // out[i].data points into g's arena: valid until the next run or close.
 *     pv_graph_close(g);
 *
 * Ownership: every pointer passed in is borrowed for the duration of the call only, unless a
 * function says otherwise. Every fallible call returns pv_status; outputs are out-params, last.
 * Errors come with a message naming the field, node or value at fault (pv_graph_errmsg for a
 * handle, pv_last_error for calls that have no handle yet, per thread).
 */
#ifndef PERCEIVE_H
#define PERCEIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PV_VERSION "0.1.0"
#define PV_MAX_RANK 8

typedef enum {
    PV_OK = 0,
    PV_EINPUT,        /* the caller's input is wrong (the message names the field and value) */
    PV_ENOWEIGHTS,    /* model artifacts not found */
    PV_EFORMAT,       /* a file is malformed */
    PV_ENOMEM,        /* an allocation failed */
    PV_EUNSUPPORTED,  /* a valid input that perceive does not implement (op, attribute, dtype) */
    PV_ECLOSED,       /* the handle was closed */
    PV_EINTERNAL      /* a bug */
} pv_status;

const char *pv_status_str(pv_status s);

typedef enum {
    PV_F32 = 0, PV_F16, PV_BF16, PV_I64, PV_I32, PV_I8, PV_U8, PV_BOOL,
    PV_DTYPE_COUNT
} pv_dtype;

const char *pv_dtype_name(pv_dtype t);
size_t      pv_dtype_size(pv_dtype t);

/* Tensor descriptor. strides are in bytes; all-zero strides mean "contiguous row-major". */
typedef struct pv_tensor {
    const char *name;                 /* graph input/output name (borrowed) */
    pv_dtype    dtype;
    int         rank;
    int64_t     dims[PV_MAX_RANK];
    int64_t     strides[PV_MAX_RANK];
    void       *data;
} pv_tensor;

int64_t pv_tensor_numel(const pv_tensor *t);

/* One allocator for everything perceive allocates. Pass NULL to restore libc's. Set it before
 * opening any handle; memory is freed through the hook that allocated it. */
typedef struct pv_allocator {
    void *(*malloc_fn)(void *ud, size_t n);
    void *(*realloc_fn)(void *ud, void *p, size_t n);
    void  (*free_fn)(void *ud, void *p);
    void *ud;
} pv_allocator;
void pv_set_allocator(const pv_allocator *a);

/* Last error message of this thread, for calls that fail before a handle exists. */
const char *pv_last_error(void);

/* ---- ONNX graphs -------------------------------------------------------------------------- */
typedef struct pv_graph pv_graph;

/* What convolutions and matrix products compute in. BF16: bf16 weights and activations with
 * fp32 accumulation (AVX512_BF16 / AMX), fp32 everywhere else (softmax, norms, heads); on a
 * CPU without AVX512_BF16 (or a build without oneDNN) it runs fp32 and says why (stats).
 * DEFAULT: the PERCEIVE_PRECISION environment variable (fp32 | bf16), else fp32. */
typedef enum { PV_PRECISION_DEFAULT = 0, PV_PRECISION_FP32, PV_PRECISION_BF16 } pv_precision;

typedef struct pv_graph_options {
    int threads;        /* 0: all cores (or PERCEIVE_THREADS) */
    int no_fuse;        /* 1: skip BatchNorm folding and activation fusion (for debugging) */
    pv_precision precision;
} pv_graph_options;

/* Loads and verifies an ONNX file (external data resolved next to it), runs the load-time
 * passes. Plans are made per input-shape variant on first use and kept. */
pv_status pv_graph_open(const char *path, const pv_graph_options *opt, pv_graph **out);
pv_status pv_graph_open_memory(const void *buf, size_t len, const char *base_dir,
                               const pv_graph_options *opt, pv_graph **out);

int  pv_graph_num_inputs(const pv_graph *g);
int  pv_graph_num_outputs(const pv_graph *g);
/* Declared input/output i: name, dtype, rank; dims of -1 are dynamic. */
pv_status pv_graph_input(const pv_graph *g, int i, pv_tensor *desc);
pv_status pv_graph_output(const pv_graph *g, int i, pv_tensor *desc);

/* Runs the graph. inputs: n_in tensors matched by name (or by position when name is NULL),
 * contiguous. outputs: capacity *n_out; on return *n_out = number of graph outputs and each
 * outputs[i] describes graph output i; its data lives in g's arena until the next run/close.
 * Plans the input-shape variant if it is new (allocates then); otherwise allocates nothing. */
pv_status pv_graph_run(pv_graph *g, const pv_tensor *inputs, size_t n_in,
                       pv_tensor *outputs, size_t *n_out);

/* Plan facts for the last run's variant: arena bytes, workspace bytes, nodes executed. */
typedef struct pv_graph_stats {
    size_t  arena_bytes;
    size_t  workspace_bytes;
    size_t  const_bytes;
    int     nodes_total;
    int     nodes_run;
    int     plans;
    /* load-time passes: nodes folded to constants, BatchNorms folded into weights, activations
     * fused into their producer, attention chains fused into perceive::Attention */
    int     folded, bn_folded, act_fused, attn_fused;
    const char *precision;       /* what runs: "fp32" or "bf16" */
    const char *precision_note;  /* why not the requested one, or "" */
    /* GELU chains fused into perceive::Gelu; activations fused into Add/Sub/Mul/Div */
    int     gelu_fused, eltwise_act_fused;
    /* float16 values, weights and casts rewritten so the graph computes in float32 (0: none,
     * or the graph kept its float16 staging; README "float16 graphs") */
    int     f16_lifted;
} pv_graph_stats;
pv_status   pv_graph_stats_get(const pv_graph *g, pv_graph_stats *st);

const char *pv_graph_errmsg(const pv_graph *g);
void        pv_graph_close(pv_graph *g);   /* accepts NULL */

/* Completes a structure-only ONNX file: every floating-point initializer (and Constant tensor)
 * without data gets seeded random values scaled by its consumer's fan-in; initializers larger
 * than ext_threshold bytes go to OUT.data as external data. Deterministic for a seed. */
pv_status pv_onnx_fill(const char *in_path, const char *out_path, uint64_t seed, size_t ext_threshold);

/* ---- models ------------------------------------------------------------------------------- */
/* A model bundle ("bevfusion"): its artifacts, pre-processing, planned graph(s) and
 * post-processing behind one handle. Example (a lidar file in, objects out):
 *
 *     pv_model *m = NULL;
 *     pv_model_options mo = { .threads = 2 };
 *     if (pv_model_open("bevfusion", &mo, &m) != PV_OK) { fprintf(stderr, "%s\n", pv_last_error()); return 1; }
 *     pv_input in = { .name = "points", .format = "pcd", .data = bytes, .len = nbytes };
 *     pv_param p[] = { { "score_threshold", "0.3" } };
 *     pv_result *r = NULL;
 *     if (pv_model_run(m, &in, 1, p, 1, &r) != PV_OK) fprintf(stderr, "%s\n", pv_model_errmsg(m));
 *     else {
 *         const pv_object3d *o;
 *         int n = pv_result_objects3d(r, &o);
 *         for (int i = 0; i < n; i++) printf("%u %.2f\n", o[i].label, o[i].existence_probability);
 *         fputs(pv_result_json(r), stdout);
 *         pv_result_free(r);
 *     }
 *     pv_model_close(m);
 */
typedef struct pv_model pv_model;
typedef struct pv_result pv_result;

typedef struct pv_model_options {
    int         threads;      /* 0: all cores (or PERCEIVE_THREADS) */
    const char *weights_dir;  /* NULL: PERCEIVE_WEIGHTS_DIR, then the Hugging Face cache */
    int         strict;       /* 1: refuse to fall back to generated weights (PV_ENOWEIGHTS) */
    pv_precision precision;   /* the engine's convolutions and matrix products (see above) */
} pv_model_options;

/* Resolves and verifies the model's artifacts, builds and plans it, runs one warm-up frame.
 * Without the release artifacts (and without strict) a model with the release's structure and
 * seeded random weights is generated into the cache on first use; results then say
 * "weights": "generated". */
pv_status pv_model_open(const char *name, const pv_model_options *opt, pv_model **out);

/* Writes the artifacts perceive generates when the release is absent (the release's file
 * names and structure, seeded random weights) into dir, e.g. for reference tools. */
pv_status pv_model_generate(const char *name, const char *dir);

/* The bundles this build has: count, and the name / one-line description of bundle i (NULL out
 * of range). */
int         pv_model_count(void);
const char *pv_model_name(int i);
const char *pv_model_description(int i);

/* One input item, data borrowed for the call. name NULL means the bundle's main input.
 * bevfusion: an encoded cloud ("pcd", "npy", "npz", "kitti", "nuscenes", "f16x5", or "auto" to
 * sniff) or raw little-endian float32 rows ("f32", ncols floats per point). Names: "points" (the
 * current cloud; required) and, for stateless densification, "sweep" items in order (their time
 * lag and pose come from the params sweep.<i>.time_lag_s and sweep.<i>.T_current_from_sweep).
 * hamer: "image" ("jpeg", "png", "auto"; the hands come from the "box" params) or "crop" (one
 * network crop, 256 rows x 192 columns x RGB uint8: raw bytes "rgb8", or "npy" uint8
 * [256,192,3]); name NULL is "crop" for rgb8 / npy and "image" otherwise. */
typedef struct pv_input {
    const char *name;
    const char *format;
    const void *data;
    size_t      len;          /* bytes */
    int         ncols;        /* "f32" only */
    const char *array;        /* "npz": the array to read (NULL: "points") */
    const char *path;         /* the file the bytes came from, or NULL. meteor: a manifest names its
                                 images relative to it; without it (the server) it must not name
                                 files */
} pv_input;

/* Decodes one input item without running anything (callers reject bad files before paying for a
 * model load or a queue slot). PV_EINPUT / PV_EFORMAT / PV_EUNSUPPORTED with the message.
 * pv_input_validate reads point clouds (bevfusion's inputs); pv_input_validate_for asks the
 * named bundle, which knows its own input kinds. */
pv_status pv_input_validate(const pv_input *in);
pv_status pv_input_validate_for(const char *model, const pv_input *in);

/* Runtime parameters as text key/value pairs (the same keys `--param k=v` and the server take;
 * see the README). Unknown keys and bad values are PV_EINPUT naming them. */
typedef struct pv_param { const char *key, *value; } pv_param;

pv_status pv_model_run(pv_model *m, const pv_input *in, int n_in, const pv_param *params, int n_params,
                       pv_result **out);

/* For `perceive bench` and tools: a bundle's default bench input (a file of the source tree),
 * the reference fixture directory it is checked against, and its params (hamer: the fixture's
 * boxes). Paths are relative to the source tree; params point into d. */
#define PV_BENCH_MAX_PARAMS 16
typedef struct pv_bench_defaults {
    const char *input, *fixture;
    pv_param    params[PV_BENCH_MAX_PARAMS];
    int         nparams;
    char        text[PV_BENCH_MAX_PARAMS][96];
} pv_bench_defaults;
pv_status pv_model_bench_defaults(const char *model, pv_bench_defaults *d);
/* Compares r (a run of m on the bundle's default bench input) with the reference fixture in
 * dir: 0 agree, 1 disagree, -1 not checked (weights, precision or depth other than the
 * fixture's, no fixture); why says which and by how much. */
int pv_model_fixture_check(pv_model *m, const pv_result *r, const char *dir, char *why, size_t why_len);


/* autoware_perception_msgs/DetectedObject, as the Autoware lidar detectors fill it. */
typedef struct pv_object3d {
    uint8_t label;                    /* ObjectClassification label: UNKNOWN 0, CAR 1, TRUCK 2, BUS 3,
                                         TRAILER 4, MOTORCYCLE 5, BICYCLE 6, PEDESTRIAN 7 */
    uint8_t orientation_availability; /* 0 UNAVAILABLE, 1 SIGN_UNKNOWN, 2 AVAILABLE */
    uint8_t shape_type;               /* 0 BOUNDING_BOX */
    float   existence_probability;    /* the detection score */
    float   position[3];              /* box centre (m), in the input cloud's frame */
    float   orientation[4];           /* quaternion x, y, z, w */
    float   yaw;                      /* rad, counter-clockwise from +x */
    float   dimensions[3];            /* length, width, height (m) */
    float   velocity[2];              /* decoded vx, vy (m/s); not published by Autoware */
    int32_t class_index;              /* the network's class */
    int32_t proposal;                 /* the network's proposal index */
} pv_object3d;

/* ---- results ----
 * Every result has one envelope (JSON with "meta" and "timing_ms", stage times, a picture, a
 * text summary) and a per-bundle payload read through typed accessors: each accessor returns
 * the payload's item count, or 0 (and a NULL array) for a result of another bundle. Arrays are
 * valid until pv_result_free. */

/* The bundle that made r ("bevfusion", "hamer"), NULL for NULL. */
const char *pv_result_model(const pv_result *r);

/* bevfusion: the detected objects. */
int         pv_result_objects3d(const pv_result *r, const pv_object3d **objs);

/* hamer: one hand, in the hand's own frame. Example (a JPEG and two boxes, the second a left hand):
 *
 *     pv_input in = { .name = "image", .format = "jpeg", .data = jpg, .len = jpg_len };
 *     pv_param p[] = { { "box", "120,80,260,300" }, { "box", "300,90,420,280,0" } };
 *     pv_result *r = NULL;
 *     if (pv_model_run(hamer, &in, 1, p, 2, &r) == PV_OK) {
 *         const pv_hand *h;
 *         int n = pv_result_hands(r, &h);
 *         for (int i = 0; i < n; i++)
 *             printf("%s wrist at (%.1f, %.1f) px\n", h[i].is_right ? "right" : "left", h[i].keypoints_2d[0], h[i].keypoints_2d[1]);
 *         pv_result_free(r);
 *     }
 *
 *  (a left hand's outputs are mirrored back from the
 * right-hand network: x of every point negated, rotations R -> M R M with M = diag(-1, 1, 1)).
 * Points are metres in the MANO frame (no translation: add cam_t for the crop camera's frame,
 * cam_t_full for the full image's). Matrices are row-major. */
#define PV_HAND_VERTICES  778
#define PV_HAND_FACES     1538
#define PV_HAND_KEYPOINTS 21
typedef struct pv_hand {
    int   is_right;                        /* 1 right, 0 left (as given with the box) */
    float box[4];                          /* x1, y1, x2, y2 as given (image pixels) */
    float crop_center[2], crop_size;       /* the square window the crop samples (image pixels) */
    float cam[3];                          /* weak-perspective camera (s, tx, ty) of the crop */
    float cam_t[3];                        /* crop camera translation (f = 5000 on 256 pixels) */
    float cam_t_full[3];                   /* full-image camera translation (f = focal_length_full) */
    float focal_length_full;               /* 5000 / 256 * max(W, H) */
    float betas[10];                       /* MANO shape */
    float global_orient[9];                /* wrist rotation */
    float hand_pose[15 * 9];               /* 15 finger joints, MANO order */
    float vertices[PV_HAND_VERTICES * 3];
    float keypoints_3d[PV_HAND_KEYPOINTS * 3];      /* OpenPose order */
    float keypoints_2d[PV_HAND_KEYPOINTS * 2];      /* image pixels */
    float keypoints_2d_crop[PV_HAND_KEYPOINTS * 2]; /* pixels of the 256x256 crop the network saw */
} pv_hand;
int         pv_result_hands(const pv_result *r, const pv_hand **hands);
/* hamer: the mesh's triangles (PV_HAND_FACES x 3 vertex indexes; a left hand's winding is the
 * mirror image: draw it reversed). Returns the face count. */
int         pv_result_mesh_faces(const pv_result *r, const int32_t **faces);

/* meteor: 2D boxes per camera, in the 768x432 network image (the cameras' order: CAM_FRONT_WIDE,
 * CAM_FRONT_LEFT, CAM_FRONT_RIGHT, CAM_BACK_WIDE, CAM_BACK_LEFT, CAM_BACK_RIGHT, CAM_FRONT_NARROW,
 * CAM_BACK_NARROW). Classes: 0 obstacle, 1 car, 2 truck, 3 bus, 4 bicycle, 5 motorcycle,
 * 6 pedestrian, 7 road paint, 8 traffic light, 9 traffic sign. meteor's 3D boxes are
 * pv_result_objects3d (label CAR for vehicles, PEDESTRIAN for VRUs; height 0: not predicted). */
typedef struct pv_object2d {
    int32_t camera;          /* 0..7 */
    int32_t class_index;
    int32_t stride;          /* 4, 8 or 16: the head that found it */
    float   score;
    float   box[4];          /* x1, y1, x2, y2 (pixels of 768x432) */
} pv_object2d;
int         pv_result_objects2d(const pv_result *r, const pv_object2d **objs);
/* meteor grids by name: "lanes" uint8 [800][500] classes (0.2 m, row 0 at x = +80 m, column 0 at
 * y = +50 m), "occupancy" uint8 [16][200][200] classes (0.4 m, z from -1 m), "risk" float
 * [400][250] probabilities (0.2 m, x from +40 m, y from +25 m). Returns the rank (dims filled,
 * data pointing into r), 0 when r has no such grid. */
int         pv_result_grid(const pv_result *r, const char *name, const void **data, int64_t dims[3]);
/* meteor: the planned ego path (chosen mode's waypoints, x forward / y left in metres, at
 * t = 0.5 .. 3.0 s) and the traffic light (0 none, 1 green, 2 yellow, 3 red). Return 1 when r
 * has them, else 0. */
typedef struct pv_ego_path {
    int32_t mode;
    float   waypoints[6][2];
    float   mode_logits[3];
    float   steer, accel, brake_probability;
    int32_t brake;
} pv_ego_path;
int         pv_result_ego_path(const pv_result *r, pv_ego_path *out);
typedef struct pv_traffic_light { int32_t state; float probability[4]; } pv_traffic_light;
int         pv_result_traffic_light(const pv_result *r, pv_traffic_light *out);

/* The result as JSON: the bundle's payload, meta, timing_ms. pv_result_json_stable leaves
 * timing_ms out, so the same input gives the same bytes. */
const char *pv_result_json(const pv_result *r);
const char *pv_result_json_stable(const pv_result *r);
/* A short human-readable summary (a line per object or hand), for consoles. */
const char *pv_result_text(const pv_result *r);
/* Stage times of the run (ms). Bundles map their stages onto these (hamer: crop = preprocess,
 * skinning = postprocess); the JSON's timing_ms has the bundle's own names. */
typedef struct pv_timing { double decode, preprocess, engine, postprocess, wait, total; } pv_timing;
void        pv_result_timing(const pv_result *r, pv_timing *t);
/* A picture of the result, drawn by its bundle (pvc-allocated PNG, free with pv_free); the
 * title says when the weights are generated. bevfusion: a bird's-eye view of the points and
 * boxes, width_px wide; hamer: the input image with the projected meshes and keypoints, at
 * most width_px wide (0: the image's own width). */
pv_status   pv_result_png(const pv_result *r, int width_px, void **png, size_t *len);
void        pv_result_free(pv_result *r);    /* accepts NULL */
void        pv_free(void *p);                /* memory perceive handed out */

const char *pv_model_errmsg(const pv_model *m);   /* message of this thread's last failure on m */
/* The bundle name m was opened with ("bevfusion", "hamer"); valid while the process runs. */
const char *pv_model_bundle(const pv_model *m);
/* name, weights, artifacts + sha256, encoder, load time, isa; NULL once closed. Owned by m. */
const char *pv_model_info_json(pv_model *m);
/* Accepts NULL; idempotent. Waits for the calls in flight; calls that start after close began
 * get PV_ECLOSED. The handle's few bytes stay valid (for those calls and a second close) until
 * the process exits; models still open at exit are closed then. pv_model_run is thread-safe:
 * each stage has its own lock, so one frame's pre-processing overlaps another's engine stage. */
void        pv_model_close(pv_model *m);

/* Name of the instruction set the kernels were picked for ("avx512", "avx2", "scalar"). */
const char *pv_isa(void);

#ifdef __cplusplus
}
#endif
#endif
