/* hamer bundle: the model handle (weights resolved and checked, the network planned for batch
 * 1..8, a warm-up run) and one frame's run: crops -> engine -> MANO -> hands. Prefix pvm_hamer_.
 *
 *   pvm_hamer_open()   resolve hamer.safetensors (--weights DIR, PERCEIVE_WEIGHTS_DIR, the cache
 *                      PERCEIVE_CACHE_DIR / XDG_CACHE_HOME / ~/.cache under perceive/hamer/),
 *                      else generated weights (unless strict); load with every shape checked,
 *                      sha256, plan, warm up
 *   pvm_hamer_run()    thread-safe: cropping and skinning run unlocked, the engine under its lock */
#ifndef PVM_HAMER_BUNDLE_H
#define PVM_HAMER_BUNDLE_H

#include "models/hamer/hamer.h"
#include "perceive.h"

typedef struct pvm_hamer pvm_hamer;

typedef struct pvm_hamer_options {
    const char *weights_dir;
    bool        strict;
    int         threads;
    int         precision;     /* pv_precision */
    bool        no_warmup;
} pvm_hamer_options;

/* One frame: an image and its boxes, or one network crop (256 x 192 RGB; no boxes). */
typedef struct pvm_hamer_frame {
    const uint8_t       *rgb;
    int                  W, H;
    const pvm_hamer_box *boxes;
    int                  nboxes;
    bool                 crop;            /* rgb is one 256 x 192 network crop */
    bool                 crop_is_right;
} pvm_hamer_frame;

typedef struct pvm_hamer_result {
    pv_hand *hands;                       /* n, owned */
    int      n;
    double   t_crop, t_engine, t_skin, t_wait;   /* ms */
    /* with want_stages: copies of every stage, per hand (owned) */
    float   *pix;                         /* [n,256,192,3] pixel-space crops */
    float   *tokens;                      /* [n,192,1280] */
    float   *token;                       /* [n,1024] */
    float   *raw;                         /* [n,109]: pose96, betas, cam as the network gave them */
} pvm_hamer_result;

pv_status pvm_hamer_open(const pvm_hamer_options *opt, pvm_hamer **out, pvc_msg *msg);
void      pvm_hamer_close(pvm_hamer *m);
pv_status pvm_hamer_run(pvm_hamer *m, const pvm_hamer_frame *f, bool want_stages, pvm_hamer_result *r, pvc_msg *msg);
void      pvm_hamer_result_free(pvm_hamer_result *r);

const char *pvm_hamer_weights_kind(const pvm_hamer *m);  /* "release", "dir", "generated" */
const char *pvm_hamer_weights_path(const pvm_hamer *m);  /* "" when generated in memory */
const char *pvm_hamer_weights_sha256(const pvm_hamer *m);
const char *pvm_hamer_precision(const pvm_hamer *m);
const char *pvm_hamer_precision_note(const pvm_hamer *m);
int         pvm_hamer_depth(const pvm_hamer *m);
int64_t     pvm_hamer_params(const pvm_hamer *m);
double      pvm_hamer_load_ms(const pvm_hamer *m);
size_t      pvm_hamer_arena_bytes(const pvm_hamer *m);
const int32_t *pvm_hamer_faces(const pvm_hamer *m);
/* A metadata value of the weights file (source checksums), or NULL. */
const char *pvm_hamer_meta(const pvm_hamer *m, const char *key);

/* Writes generated weights (hamer.safetensors; depth from PERCEIVE_HAMER_GEN_DEPTH, default 32)
 * into dir (created). */
pv_status pvm_hamer_generate(const char *dir, pvc_msg *msg);

#endif
