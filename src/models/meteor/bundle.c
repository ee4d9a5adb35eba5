/* meteor bundle core (bundle.h). */
#include "models/meteor/bundle.h"
#include "models/meteor/net.h"
#include "models/meteor/probe.h"
#include "graph/graph.h"
#include "api/artifacts.h"
#include "api/model_api.h"
#include "io/checksum.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stream_slot {
    char              id[PVM_METEOR_STREAM_ID_MAX + 1];
    bool              used;
    int               busy;
    uint64_t          stamp;
    double            last_ts;
    long              frames;
    pvm_meteor_state *st;
    pthread_mutex_t   mu;
} stream_slot;

struct pvm_meteor {
    pvm_meteor_net *net;
    char            kind[16];
    char            dir[4096], onnx_path[4400], yaml_path[4400];
    char            onnx_sha[65], yaml_sha[65];
    bool            has_yaml;
    cJSON          *probe;          /* what the file says (probe.h) */
    char            gen_note[96];   /* the file's generated label */
    double          load_ms;
    pthread_mutex_t eng_mu, st_mu;
    pthread_cond_t  st_cv;
    stream_slot     streams[PVM_METEOR_MAX_STREAMS];
    uint64_t        clock;
    char            evicted[PVM_METEOR_MAX_STREAMS][PVM_METEOR_STREAM_ID_MAX + 1];   /* ids whose state was lost */
    int             nevicted;
    float          *depth_mean;     /* [8][54][96] widened, engine stage */
};

static void probe_cb(void *ud, const struct pvg_graph *g)
{
    pvm_meteor *m = ud;
    m->probe = pvm_meteor_probe(g);
    /* a file perceive generated stays labelled so wherever it is loaded from */
    if (g->generated[0]) { snprintf(m->kind, sizeof m->kind, "generated"); snprintf(m->gen_note, sizeof m->gen_note, "%s", g->generated); }
}

void pvm_meteor_close(pvm_meteor *m)
{
    if (!m) return;
    pvm_meteor_net_free(m->net);
    for (int i = 0; i < PVM_METEOR_MAX_STREAMS; i++) {
        pvm_meteor_state_free(m->streams[i].st);
        pthread_mutex_destroy(&m->streams[i].mu);
    }
    cJSON_Delete(m->probe);
    pvc_free(m->depth_mean);
    pthread_mutex_destroy(&m->eng_mu);
    pthread_mutex_destroy(&m->st_mu);
    pthread_cond_destroy(&m->st_cv);
    pvc_free(m);
}

pv_status pvm_meteor_open(const pvm_meteor_options *o, pvm_meteor **out, pvc_msg *msg)
{
    *out = NULL;
    double t0 = pvc_now_ms();
    pvm_meteor *m = pvc_calloc(1, sizeof *m);
    if (!m) return pvc_fail(msg, PV_ENOMEM, "out of memory opening meteor");
    pthread_mutex_init(&m->eng_mu, NULL);
    pthread_mutex_init(&m->st_mu, NULL);
    pthread_cond_init(&m->st_cv, NULL);
    for (int i = 0; i < PVM_METEOR_MAX_STREAMS; i++) pthread_mutex_init(&m->streams[i].mu, NULL);
    char tag[64];
    pvm_meteor_gen_tag(tag, sizeof tag);
    pva_spec sp = { .model = "meteor", .hf_repo = PVM_METEOR_REPO, .revision = PVM_METEOR_REVISION, .commit = NULL,
                    .nfiles = 1, .files = { PVM_METEOR_ONNX }, .gen_tag = tag, .generate = pvm_meteor_generate_onnx };
    pv_status s = pva_resolve(&sp, o->weights_dir, o->strict, m->dir, sizeof m->dir, m->kind, msg);
    if (s == PV_OK) {
        (void)pv_pathf(m->onnx_path, sizeof m->onnx_path, "%s/%s", m->dir, PVM_METEOR_ONNX);
        (void)pv_pathf(m->yaml_path, sizeof m->yaml_path, "%s/%s", m->dir, PVM_METEOR_YAML);
        m->has_yaml = pva_file_exists(m->yaml_path);
        s = pvio_sha256_file(m->onnx_path, m->onnx_sha, msg);
        if (s == PV_OK && m->has_yaml) s = pvio_sha256_file(m->yaml_path, m->yaml_sha, msg);
    }
    if (s == PV_OK) {
        pvm_meteor_net_opts no = { .threads = o->threads, .precision = o->precision, .no_rig_cache = o->no_rig_cache,
                                   .probe = probe_cb, .probe_ud = m };
        s = pvm_meteor_net_open(m->onnx_path, &no, &m->net, msg);
    }
    if (s == PV_OK && !(m->depth_mean = pvc_malloc((size_t)PVM_METEOR_NCAM * 54 * 96 * sizeof *m->depth_mean)))
        s = pvc_fail(msg, PV_ENOMEM, "out of memory");
    if (s == PV_OK) {
        /* one warm-up frame (black images, every camera absent): pages the weights and the
         * arena in, so the first real frame costs what every frame costs */
        uint8_t *z = pvc_calloc((size_t)PVM_METEOR_NCAM * 3 * PVM_METEOR_IMG_W * PVM_METEOR_IMG_H, 1);
        static const float K[9] = { 384, 0, 383.5f, 0, 384, 215.5f, 0, 0, 1 };
        static const float T[16] = { 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
        float Ks[PVM_METEOR_NCAM * 9], Ts[PVM_METEOR_NCAM * 16];
        for (int c = 0; c < PVM_METEOR_NCAM; c++) { memcpy(Ks + 9 * c, K, sizeof K); memcpy(Ts + 16 * c, T, sizeof T); }
        pvc_tensor warm[PVM_METEOR_NOUT];
        if (!z) s = pvc_fail(msg, PV_ENOMEM, "out of memory");
        else s = pvm_meteor_net_run(m->net, z, Ks, Ts, PVM_METEOR_V0_DEFAULT, warm, NULL, msg);
        pvc_free(z);
    }
    if (s != PV_OK) { pvm_meteor_close(m); return s; }
    m->load_ms = pvc_now_ms() - t0;
    *out = m;
    return PV_OK;
}

const char *pvm_meteor_weights_kind(const pvm_meteor *m) { return m->kind; }

/* ---- streams ------------------------------------------------------------------------------ */
/* The slot of id, locked (its mutex held); NULL with msg when it cannot be had. */
static stream_slot *stream_take(pvm_meteor *m, const pvm_meteor_frame *f, pvm_meteor_run_info *ri, pvc_msg *msg)
{
    pthread_mutex_lock(&m->st_mu);
    stream_slot *hit = NULL;
    for (;;) {
        stream_slot *victim = NULL;
        for (int i = 0; i < PVM_METEOR_MAX_STREAMS; i++) {
            stream_slot *e = &m->streams[i];
            if (e->used && !strcmp(e->id, f->stream_id)) { hit = e; break; }
            if (e->busy) continue;
            if (!victim || (!e->used && victim->used) || (e->used == victim->used && e->stamp < victim->stamp)) victim = e;
        }
        if (hit) break;
        if (victim) {
            if (victim->used && m->nevicted < PVM_METEOR_MAX_STREAMS) {
                snprintf(m->evicted[m->nevicted++], sizeof m->evicted[0], "%s", victim->id);
            } else if (victim->used) {
                memmove(m->evicted[0], m->evicted[1], sizeof m->evicted[0] * (PVM_METEOR_MAX_STREAMS - 1));
                snprintf(m->evicted[PVM_METEOR_MAX_STREAMS - 1], sizeof m->evicted[0], "%s", victim->id);
            }
            if (!victim->st && pvm_meteor_state_create(&victim->st) != PV_OK) {
                pthread_mutex_unlock(&m->st_mu);
                pvc_fail(msg, PV_ENOMEM, "out of memory for stream '%s'", f->stream_id);
                return NULL;
            }
            pvm_meteor_state_reset(victim->st);
            snprintf(victim->id, sizeof victim->id, "%s", f->stream_id);
            victim->used = true;
            victim->frames = 0;
            victim->last_ts = 0;
            ri->stream_started = true;
            for (int i = 0; i < m->nevicted; i++)
                if (!strcmp(m->evicted[i], f->stream_id)) {
                    ri->stream_restarted = true;
                    memmove(m->evicted[i], m->evicted[i + 1], sizeof m->evicted[0] * (size_t)(m->nevicted - i - 1));
                    m->nevicted--;
                    break;
                }
            hit = victim;
            break;
        }
        pthread_cond_wait(&m->st_cv, &m->st_mu);     /* every slot busy: wait for one */
    }
    hit->busy++;
    hit->stamp = ++m->clock;
    pthread_mutex_unlock(&m->st_mu);
    pthread_mutex_lock(&hit->mu);
    return hit;
}

static void stream_give(pvm_meteor *m, stream_slot *e)
{
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_lock(&m->st_mu);
    e->busy--;
    pthread_cond_broadcast(&m->st_cv);
    pthread_mutex_unlock(&m->st_mu);
}

/* ---- one frame ---------------------------------------------------------------------------- */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
    if (e == 0) {
        if (!mant) bits = sign;
        else {
            int sh = 0;
            while (!(mant & 0x400u)) { mant <<= 1; sh++; }
            bits = sign | (uint32_t)(113 - sh) << 23 | (mant & 0x3ffu) << 13;
        }
    } else if (e == 31) bits = sign | 0x7f800000u | mant << 13;
    else bits = sign | (e + 112) << 23 | mant << 13;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

pv_status pvm_meteor_run(pvm_meteor *m, const pvm_meteor_frame *f, const pvm_meteor_params *prm, pvm_meteor_out *out,
                         pvm_meteor_run_info *ri, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    memset(ri, 0, sizeof *ri);
    stream_slot *ss = NULL;
    double tw = pvc_now_ms();
    if (f->stream_id[0]) {
        ri->stream = true;
        if (!(ss = stream_take(m, f, ri, msg))) return PV_ENOMEM;
        if (f->stream_reset) { pvm_meteor_state_reset(ss->st); ss->frames = 0; ri->stream_reset = true; }
        else if (ss->frames > 0 && !(f->timestamp_s > ss->last_ts)) {
            double last = ss->last_ts;
            stream_give(m, ss);
            return pvc_fail(msg, PV_EINPUT, "stream '%s': stream.timestamp_s %.6f is not after the last frame's %.6f "
                            "(frames of a stream must come in order; stream.reset=1 starts it again)", f->stream_id, f->timestamp_s, last);
        }
    }
    pthread_mutex_lock(&m->eng_mu);
    ri->t_wait = pvc_now_ms() - tw;
    pvc_tensor o[PVM_METEOR_NOUT];
    pvm_meteor_net_stats st;
    double t0 = pvc_now_ms();
    pv_status s = pvm_meteor_net_run(m->net, f->chw, &f->cal.K[0][0], &f->cal.T_cam_ego[0][0], f->v0, o, &st, msg);
    double t1 = pvc_now_ms();
    if (s == PV_OK) {
        const uint16_t *dm = o[PVM_METEOR_O_DEPTH_MEAN].data;
        for (size_t i = 0; i < (size_t)PVM_METEOR_NCAM * 54 * 96; i++) m->depth_mean[i] = f16_to_f32(dm[i]);
        pvm_meteor_raw raw = {
            .lane = o[PVM_METEOR_O_LANE].data, .lane_logit = o[PVM_METEOR_O_LANE_LOGIT].data,
            .hm = o[PVM_METEOR_O_HM].data, .reg = o[PVM_METEOR_O_REG].data,
            .hm2d = { o[PVM_METEOR_O_HM2D0].data, o[PVM_METEOR_O_HM2D1].data, o[PVM_METEOR_O_HM2D2].data },
            .reg2d = { o[PVM_METEOR_O_REG2D0].data, o[PVM_METEOR_O_REG2D1].data, o[PVM_METEOR_O_REG2D2].data },
            .ego = o[PVM_METEOR_O_EGO].data, .occ = o[PVM_METEOR_O_OCC].data, .traj = o[PVM_METEOR_O_TRAJ].data,
            .stationary = o[PVM_METEOR_O_STATIONARY].data, .tl = o[PVM_METEOR_O_TL].data, .risk = o[PVM_METEOR_O_RISK].data,
            .depth_mean = m->depth_mean,
        };
        s = pvm_meteor_decode(&raw, &f->cal, f->has_pose ? &f->pose : NULL, prm, ss ? ss->st : NULL, out, msg);
    }
    double t2 = pvc_now_ms();
    pthread_mutex_unlock(&m->eng_mu);
    ri->rig_hit = st.rig_hit;
    ri->t_rig = st.rig_ms;
    ri->t_engine = t1 - t0 - st.rig_ms;
    ri->t_post = t2 - t1;
    if (ss) {
        if (s == PV_OK) { ri->stream_frame = ss->frames++; ss->last_ts = f->timestamp_s; }
        stream_give(m, ss);
    }
    if (s != PV_OK) pvm_meteor_out_free(out);
    return s;
}

void *pvm_meteor_info_json(const pvm_meteor *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "model", "meteor");
    cJSON_AddStringToObject(o, "source", "tier4/METEOR (release " PVM_METEOR_REPO "), specs/meteor.md");
    cJSON_AddStringToObject(o, "weights", m->kind);
    if (m->gen_note[0]) cJSON_AddStringToObject(o, "generated_from", m->gen_note);
    cJSON *a = cJSON_AddArrayToObject(o, "artifacts");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", PVM_METEOR_ONNX);
    cJSON_AddStringToObject(e, "path", m->onnx_path);
    cJSON_AddStringToObject(e, "sha256", m->onnx_sha);
    cJSON_AddItemToArray(a, e);
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", PVM_METEOR_YAML);
    cJSON_AddStringToObject(e, "path", m->has_yaml ? m->yaml_path : "");
    cJSON_AddStringToObject(e, "sha256", m->has_yaml ? m->yaml_sha : "");
    cJSON_AddStringToObject(e, "note", m->has_yaml ? "present; its keys are not interpreted (decode defaults are the spec's, see params)"
                                                   : "absent (optional)");
    cJSON_AddItemToArray(a, e);
    if (m->probe) cJSON_AddItemToObject(o, "file", cJSON_Duplicate(m->probe, 1));
    pvm_meteor_net_info ni;
    pvm_meteor_net_info_get(m->net, &ni);
    cJSON *r = cJSON_AddObjectToObject(o, "rig_cache");
    cJSON_AddBoolToObject(r, "split", ni.rig_split);
    if (ni.rig_note[0]) cJSON_AddStringToObject(r, "note", ni.rig_note);
    cJSON_AddNumberToObject(r, "rig_nodes", ni.rig_nodes);
    cJSON_AddNumberToObject(r, "frontier_values", ni.frontier);
    cJSON_AddNumberToObject(r, "bytes_per_rig", (double)ni.rig_bytes);
    cJSON_AddNumberToObject(r, "slots", ni.rig_slots);
    cJSON_AddNumberToObject(r, "cached", ni.rigs_cached);
    cJSON_AddNumberToObject(o, "frame_nodes", ni.frame_nodes);
    cJSON_AddNumberToObject(o, "arena_bytes", (double)ni.arena_bytes);
    cJSON_AddNumberToObject(o, "const_bytes", (double)ni.const_bytes);
    cJSON_AddStringToObject(o, "precision", ni.precision);
    if (ni.precision_note[0]) cJSON_AddStringToObject(o, "precision_note", ni.precision_note);
    cJSON_AddNumberToObject(o, "max_streams", PVM_METEOR_MAX_STREAMS);
    cJSON_AddNumberToObject(o, "load_ms", m->load_ms);
    cJSON_AddStringToObject(o, "isa", pv_isa());
    cJSON *c = cJSON_AddArrayToObject(o, "cameras");
    for (int i = 0; i < PVM_METEOR_NCAM; i++) cJSON_AddItemToArray(c, cJSON_CreateString(pvm_meteor_cam_names[i]));
    return o;
}
