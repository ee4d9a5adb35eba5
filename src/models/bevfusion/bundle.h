/* bevfusion bundle: Autoware's BEVFusion-L lidar detector (release AutowareFoundation/bevfusion
 * v2.0) from its artifacts to DetectedObjects. Prefix pvm_bevfusion_.
 *
 *   pvm_bevfusion_open()   resolve the artifacts (--weights DIR, PERCEIVE_WEIGHTS_DIR, the
 *                          Hugging Face cache; else generated ones, unless strict), check
 *                          sha256 where known, read the param files, read the sparse encoder
 *                          from the ONNX, probe it, plan the dense part, warm up once
 *   pvm_bevfusion_run()    points -> densify -> voxelize -> sparse encoder -> dense plan ->
 *                          post-processing; thread-safe: each stage has its own lock (pre,
 *                          engine; post needs none) and two voxel slots sit between pre and
 *                          engine, so frame k+1's pre-processing overlaps frame k's engine
 *                          stage; results equal those of serialized calls
 *   pvm_bevfusion_result_json()  the result as JSON text (cJSON) */
#ifndef PVM_BEVFUSION_BUNDLE_H
#define PVM_BEVFUSION_BUNDLE_H

#include "models/bevfusion/encoder.h"
#include "models/bevfusion/post.h"
#include "models/bevfusion/pre.h"

#define PVM_BF_REPO       "AutowareFoundation/bevfusion"
#define PVM_BF_REVISION   "v2.0"
#define PVM_BF_COMMIT     "e1bf164b909d3c6c2642012f9b5ee4d827753220"
#define PVM_BF_GEN_SEED   1
#define PVM_BF_NFILES     3
#define PVM_BF_SLOTS      2      /* frames between the pre and engine stages */

typedef struct pvm_bevfusion pvm_bevfusion;

typedef struct pvm_bevfusion_options {
    const char *weights_dir;   /* NULL: PERCEIVE_WEIGHTS_DIR, then the HF cache */
    bool        strict;        /* no generated fallback: PV_ENOWEIGHTS */
    int         threads;       /* 0: default */
    bool        no_warmup;
    int         precision;     /* pv_precision request for the dense part's convolutions */
} pvm_bevfusion_options;

typedef struct pvm_bevfusion_artifact {
    const char *name;
    char        path[4096];
    char        sha256[65];
    const char *expected;      /* known release sha256, or NULL */
    bool        verified;      /* sha256 == expected */
} pvm_bevfusion_artifact;

typedef struct pvm_bevfusion_result {
    pvm_bevfusion_object    *objects;     /* nobjects, owned */
    int                      nobjects;
    pvm_bevfusion_post_stats post;
    pvm_bf_encoder_stats     enc;
    int64_t num_points;                   /* points after NaN/Inf removal, all sweeps */
    int64_t num_dropped_points;           /* NaN/Inf */
    int64_t num_points_out_of_range;
    int64_t num_voxels;
    int     sweeps_used;
    bool    stream;                       /* a stream frame: meta.stream {id, started, reset} */
    bool    stream_started, stream_reset;
    char    stream_id[PVM_BF_STREAM_ID_MAX + 1];
    double  t_pre, t_voxelize, t_sparse, t_dense, t_post, t_total;   /* ms */
    double  t_wait;                       /* ms waiting for a slot or a stage lock */
    double  t_decode;                     /* ms decoding the input files (set by the API layer) */
    int     P;                            /* proposals */
    float  *bbox_pred, *score;            /* copies of the raw outputs, owned */
    int64_t *label_pred;
} pvm_bevfusion_result;

pv_status pvm_bevfusion_open(const pvm_bevfusion_options *opt, pvm_bevfusion **out, pvc_msg *msg);
void      pvm_bevfusion_close(pvm_bevfusion *m);
/* params: NULL for the defaults from the param files. */
pv_status pvm_bevfusion_run(pvm_bevfusion *m, const pvm_bevfusion_frame_in *in, const pvm_bevfusion_params *params,
                            pvm_bevfusion_result *res, pvc_msg *msg);
void      pvm_bevfusion_result_free(pvm_bevfusion_result *r);
/* Defaults the handle runs with (a copy to modify with pvm_bevfusion_param_set). */
const pvm_bevfusion_params *pvm_bevfusion_defaults(const pvm_bevfusion *m);

/* "release", "dir" (weights from a directory) or "generated"; the artifacts and where. */
const char *pvm_bevfusion_weights_kind(const pvm_bevfusion *m);
/* What the dense part computes in ("fp32", "bf16") and why not the requested one ("" if it is).
 * The sparse encoder stays fp32. */
const char *pvm_bevfusion_precision(const pvm_bevfusion *m);
const char *pvm_bevfusion_precision_note(const pvm_bevfusion *m);
const pvm_bevfusion_artifact *pvm_bevfusion_artifacts(const pvm_bevfusion *m, int *n);
double      pvm_bevfusion_load_ms(const pvm_bevfusion *m);
const pvm_bf_encoder *pvm_bevfusion_encoder(const pvm_bevfusion *m);

/* The result as JSON (pvc_malloc'ed text). with_timing false leaves timing_ms out, so two
 * runs on the same input give the same bytes. */
char *pvm_bevfusion_result_json(const pvm_bevfusion *m, const pvm_bevfusion_result *r, bool with_timing);

/* Writes the generated artifacts (filled skeleton, param files) into dir (created). */
pv_status pvm_bevfusion_generate(const char *dir, pvc_msg *msg);

#endif
