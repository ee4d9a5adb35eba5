/* meteor bundle core: artifacts, the net, per-stream state, one frame -> decoded outputs.
 * Prefix pvm_meteor_. api.c puts it behind the public model API.
 *
 * Thread safety: pvm_meteor_run may be called from several threads: frames are built outside
 * any lock; the engine and the host decode (which reads the engine's arena) run under one
 * engine lock; frames of one stream are serialised by the stream's lock and must come in
 * timestamp order (an older or equal stream.timestamp_s is refused without touching the state).
 * Streams: up to PVM_METEOR_MAX_STREAMS ids, least recently used evicted (its state is lost: the
 * next frame of that id starts the stream again and says so: meta.stream.restarted).
 */
#ifndef PVM_METEOR_BUNDLE_H
#define PVM_METEOR_BUNDLE_H

#include "models/meteor/meteor.h"

typedef struct pvm_meteor pvm_meteor;

typedef struct pvm_meteor_options {
    const char *weights_dir;
    bool        strict;
    int         threads;
    int         precision;      /* pv_precision */
    bool        no_rig_cache;   /* PERCEIVE_METEOR_RIG_CACHE=0 */
} pvm_meteor_options;

pv_status pvm_meteor_open(const pvm_meteor_options *o, pvm_meteor **out, pvc_msg *msg);
void      pvm_meteor_close(pvm_meteor *m);

typedef struct pvm_meteor_run_info {
    double t_rig, t_engine, t_post, t_wait;
    bool   rig_hit;
    bool   stream, stream_started, stream_restarted, stream_reset;
    long   stream_frame;          /* 0-based index of this frame in its stream */
} pvm_meteor_run_info;

/* Runs one frame; out is filled (pvm_meteor_out_free). */
pv_status pvm_meteor_run(pvm_meteor *m, const pvm_meteor_frame *f, const pvm_meteor_params *prm, pvm_meteor_out *out,
                         pvm_meteor_run_info *ri, pvc_msg *msg);

const char *pvm_meteor_weights_kind(const pvm_meteor *m);   /* "release", "dir", "generated" */
/* info JSON (cJSON object, caller deletes): artifacts + sha256, the open points of spec 7 as
 * read from the file, the split, plans, precision. */
void       *pvm_meteor_info_json(const pvm_meteor *m);

#endif
