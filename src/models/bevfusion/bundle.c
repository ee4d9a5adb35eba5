/* bevfusion bundle: artifacts, load (encoder + dense plan), one frame, JSON. */
#include "models/bevfusion/bundle.h"
#include "api/artifacts.h"
#include "api/model_api.h"
#include "graph/onnx.h"
#include "io/checksum.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char pvm_bevfusion_skeleton[];
extern const size_t pvm_bevfusion_skeleton_len;

static const char *const file_names[PVM_BF_NFILES] = {
    "bevfusion_lidar.onnx", "ml_package_bevfusion_lidar.param.yaml", "detection_class_remapper.param.yaml"
};
/* specs/bevfusion.md section 0: the ONNX's is that of the awf t4base_120m/v2 file (the HF v2.0
 * tag is believed identical, unverified); the yaml ones are verified. */
static const char *const file_sha256[PVM_BF_NFILES] = {
    "5c29087963bf2c4dc02bf45c29d459303be602d63f9b6adff22a75c9cfb459a6",
    "866265b9f0fc8c17805c0974339d3c7c4e601c1aa212818971fc650d71782181",
    "928f9eb14ac042d725909f12b2be1532c16b09a683485c5936cf04fb04728520",
};

struct pvm_bevfusion {
    pvm_bevfusion_params   params;
    pvm_bf_encoder         enc;
    pvm_bf_runner          runner;
    pvg_graph             *dense_g;
    pvg_plan              *dense_plan;
    int                    out_bbox, out_score, out_label;
    pvc_pool              *pool;
    pvm_bevfusion_streams *streams;
    pvs_voxel_cfg          vcfg;
    /* stages: pre (points + voxels, pre_mu) -> engine (sparse + dense, eng_mu) -> post (no lock).
     * Two voxel slots, so frame k+1's pre-processing overlaps frame k's engine stage. */
    float                 *points;      /* [points_cap, 4], pre stage */
    int64_t                points_cap;
    void                  *vox_scratch; /* pre stage */
    pvs_voxels             vox[PVM_BF_SLOTS];
    bool                   slot_busy[PVM_BF_SLOTS];
    pthread_mutex_t        pre_mu, eng_mu, slot_mu;
    pthread_cond_t         slot_cv;
    int                    P;
    char                   kind[16];
    pvc_precision          precision;   /* dense part */
    char                   precision_note[160];
    pvm_bevfusion_artifact art[PVM_BF_NFILES];
    double                 load_ms;
};

/* ---- artifacts ---------------------------------------------------------------------------- */

pv_status pvm_bevfusion_generate(const char *dir, pvc_msg *msg)
{
    pv_status s = pva_mkdirs(dir, msg);
    if (s != PV_OK) return s;
    char p[4200];
    (void)pv_pathf(p, sizeof p, "%s/%s", dir, file_names[0]);
    pvg_fill_stats st;
    if ((s = pvg_onnx_fill_buffer(pvm_bevfusion_skeleton, pvm_bevfusion_skeleton_len, "bevfusion skeleton", p,
                                  PVM_BF_GEN_SEED, SIZE_MAX, &st, msg)) != PV_OK)
        return s;
    (void)pv_pathf(p, sizeof p, "%s/%s", dir, file_names[1]);
    if ((s = pva_write(p, pvm_bevfusion_ml_package_v2_yaml, strlen(pvm_bevfusion_ml_package_v2_yaml), msg)) != PV_OK) return s;
    (void)pv_pathf(p, sizeof p, "%s/%s", dir, file_names[2]);
    if ((s = pva_write(p, pvm_bevfusion_remapper_yaml, strlen(pvm_bevfusion_remapper_yaml), msg)) != PV_OK) return s;
    return pva_manifest_write(dir, PVM_BF_NFILES, file_names, msg);   /* checked on reuse */
}

/* --weights, PERCEIVE_WEIGHTS_DIR, the HF cache (the pinned commit, else what refs/v2.0 records:
 * the sha256 checks then say whether the files are the release's), else generated (one folder
 * per skeleton hash and seed). */
static pv_status resolve(pvm_bevfusion *m, const pvm_bevfusion_options *opt, char *dir, size_t cap, pvc_msg *msg)
{
    char hex[65], tag[96], note[160];
    pvio_sha256_hex(pvm_bevfusion_skeleton, pvm_bevfusion_skeleton_len, hex);
    hex[12] = 0;
    snprintf(tag, sizeof tag, "%s-%s-seed%d", PVM_BF_REVISION, hex, PVM_BF_GEN_SEED);
    snprintf(note, sizeof note, "sha256 %.8s %.8s %.8s", file_sha256[0], file_sha256[1], file_sha256[2]);
    pva_spec sp = { .model = "bevfusion", .hf_repo = PVM_BF_REPO, .revision = PVM_BF_REVISION, .commit = PVM_BF_COMMIT,
                    .nfiles = PVM_BF_NFILES, .gen_tag = tag, .generate = pvm_bevfusion_generate, .note = note };
    for (int i = 0; i < PVM_BF_NFILES; i++) sp.files[i] = file_names[i];
    return pva_resolve(&sp, opt ? opt->weights_dir : NULL, opt && opt->strict, dir, cap, m->kind, msg);
}

static pv_status read_whole(const char *path, char **text, size_t *len, pvc_msg *msg)
{
    void *buf = NULL;
    pv_status s = pvg_read_file(path, &buf, len, msg);
    *text = buf;
    return s;
}

/* ---- load --------------------------------------------------------------------------------- */
static pv_status load_params(pvm_bevfusion *m, pvc_msg *msg)
{
    pvm_bevfusion_params_defaults(&m->params);
    char *t = NULL;
    size_t n = 0;
    pv_status s = read_whole(m->art[1].path, &t, &n, msg);
    if (s == PV_OK) s = pvm_bevfusion_params_parse_ml_package(&m->params, t, n, m->art[1].path, msg);
    pvc_free(t);
    if (s != PV_OK) return s;
    s = read_whole(m->art[2].path, &t, &n, msg);
    if (s == PV_OK) s = pvm_bevfusion_params_parse_remapper(&m->params, t, n, m->art[2].path, msg);
    pvc_free(t);
    return s;
}

static int output_index(const pvg_graph *g, const char *name)
{
    for (int i = 0; i < g->noutputs; i++) if (!strcmp(g->values[g->outputs[i]].name, name)) return i;
    return -1;
}

/* The custom ops are read by the encoder, never planned: registered so the import accepts them. */
static pv_status never_planned(pvg_prep *p)
{
    return pvg_prep_fail(p, PV_EUNSUPPORTED, "autoware sparse ops run in the bevfusion encoder, not as graph nodes");
}
static const pvg_op op_pairs = { "GetIndicePairsImplicitGemm", "autoware", PVG_OP_NOFOLD, never_planned, NULL, NULL };
static const pvg_op op_gemm = { "ImplicitGemm", "autoware", PVG_OP_NOFOLD, never_planned, NULL, NULL };
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static pv_status reg_status;
static void register_ops(void)
{
    reg_status = pvg_op_register(&op_pairs);
    if (reg_status == PV_OK) reg_status = pvg_op_register(&op_gemm);
}

static pv_status load_model(pvm_bevfusion *m, pvc_msg *msg)
{
    pthread_once(&reg_once, register_ops);
    if (reg_status != PV_OK) return pvc_fail(msg, reg_status, "cannot register the autoware ops");
    void *buf = NULL;
    size_t len = 0;
    pv_status s = pvg_read_file(m->art[0].path, &buf, &len, msg);
    if (s != PV_OK) return s;
    char dir[4096];
    (void)pv_pathf(dir, sizeof dir, "%s", m->art[0].path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else (void)pv_pathf(dir, sizeof dir, ".");
    pvg_graph *probe = NULL;
    s = pvg_graph_load_onnx(buf, len, dir, &m->dense_g, msg);
    if (s == PV_OK) s = pvg_graph_load_onnx(buf, len, dir, &probe, msg);
    pvc_free(buf);
    if (s != PV_OK) { pvg_graph_free(probe); return pvc_fail(msg, s, "%s: %s", m->art[0].path, msg->text); }
    s = pvm_bf_encoder_build(m->dense_g, &m->enc, msg);
    if (s == PV_OK) s = pvm_bf_encoder_probe(probe, &m->enc, msg);
    pvg_graph_free(probe);
    if (s != PV_OK) return pvc_fail(msg, s, "%s: %s", m->art[0].path, msg->text);
    /* the dense part */
    pvg_graph *g = m->dense_g;
    int outs[3], in = pvg_value_find(g, m->enc.v_dense);
    static const char *const out_names[3] = { "bbox_pred", "score", "label_pred" };
    for (int i = 0; i < 3; i++) {
        int k = output_index(g, out_names[i]);
        if (k < 0) return pvc_fail(msg, PV_EFORMAT, "%s: the model has no output '%s'", m->art[0].path, out_names[i]);
        outs[i] = g->outputs[k];
    }
    if ((s = pvg_graph_cut(g, &in, 1, outs, 3)) != PV_OK) return pvc_fail(msg, s, "%s", g->msg.text);
    m->out_bbox = 0; m->out_score = 1; m->out_label = 2;
    pvg_pass_stats ps;
    if ((s = pvg_passes_run(g, true, &ps)) != PV_OK) return pvc_fail(msg, s, "%s", g->msg.text);
    g->threads = pvc_pool_threads(m->pool);
    g->precision = m->precision;
    /* one plan only: the dense part's weights are held once, in the kernels' layouts (the
     * sparse encoder's weights are not read by the plan and stay) */
    g->drop_consumed = true;
    pvc_tensor d = m->enc.dense;
    pvc_tensor_set_contiguous(&d);
    if ((s = pvg_plan_create(g, &d, &m->dense_plan)) != PV_OK) return pvc_fail(msg, s, "planning the dense part: %s", g->msg.text);
    const pvc_tensor *bb = pvg_plan_value(m->dense_plan, outs[0]), *sc = pvg_plan_value(m->dense_plan, outs[1]),
                     *lb = pvg_plan_value(m->dense_plan, outs[2]);
    if (bb->dtype != PV_F32 || bb->rank != 2 || bb->dims[0] != 10 || sc->dtype != PV_F32 || sc->rank != 1 ||
        sc->dims[0] != bb->dims[1] || (lb->dtype != PV_I64 && lb->dtype != PV_I32) || lb->rank != 1 || lb->dims[0] != bb->dims[1])
        return pvc_fail(msg, PV_EFORMAT, "%s: outputs must be bbox_pred f32 [10, P], score f32 [P], label_pred int [P]", m->art[0].path);
    m->P = (int)bb->dims[1];
    if (m->P != m->params.num_proposals)
        return pvc_fail(msg, PV_EFORMAT, "%s: %d proposals but num_proposals is %d in %s", m->art[0].path, m->P,
                        m->params.num_proposals, m->art[1].path);
    return PV_OK;
}

static pv_status setup_voxels(pvm_bevfusion *m, pvc_msg *msg)
{
    const pvm_bevfusion_params *p = &m->params;
    pvs_voxel_cfg *c = &m->vcfg;
    for (int d = 0; d < 3; d++) {
        c->range_min[d] = p->pc_range[d];
        c->voxel_size[d] = p->voxel_size[d];
        double cells = ((double)p->pc_range[d + 3] - p->pc_range[d]) / p->voxel_size[d];
        c->grid[d] = (int32_t)lround(cells);
        if (fabs(cells - c->grid[d]) > 1e-3 || c->grid[d] < 1)
            return pvc_fail(msg, PV_EFORMAT, "point_cloud_range / voxel_size give %.4f cells on axis %d, not an integer", cells, d);
        int32_t lvl = m->enc.shape[0][d];
        if (d < 2 ? c->grid[d] != lvl : c->grid[d] > lvl)
            return pvc_fail(msg, PV_EFORMAT, "the voxel grid %d on axis %d does not match the model's sparse shape %d", c->grid[d], d, lvl);
    }
    c->max_points = p->max_points_per_voxel;
    c->max_voxels = p->voxels_num[2];
    c->nfeat = 4;
    const char *env = getenv("PERCEIVE_BEVFUSION_MAX_VOXELS");
    if (env && *env) {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (*end || v < 1 || v > p->voxels_num[2])
            return pvc_fail(msg, PV_EINPUT, "PERCEIVE_BEVFUSION_MAX_VOXELS='%s' must be 1..%lld", env, (long long)p->voxels_num[2]);
        c->max_voxels = v;
    }
    if (c->max_points != m->enc.max_points || m->enc.nfeat != (p->use_intensity ? 5 : 4))
        return pvc_fail(msg, PV_EFORMAT, "voxels input [N, %d, %d] does not match max_points_per_voxel %d / use_intensity %s",
                        m->enc.max_points, m->enc.nfeat, c->max_points, p->use_intensity ? "true" : "false");
    if (p->use_intensity) return pvc_fail(msg, PV_EUNSUPPORTED, "use_intensity: true models are not supported (v2 has false)");
    m->points_cap = 2000000;
    m->points = pvc_malloc_aligned((size_t)m->points_cap * 4 * sizeof(float));
    bool ok = m->points != NULL;
    for (int i = 0; i < PVM_BF_SLOTS; i++) {
        pvs_voxels *v = &m->vox[i];
        v->cap = c->max_voxels;
        v->feat = pvc_malloc_aligned((size_t)c->max_voxels * c->max_points * c->nfeat * sizeof(float));
        v->npoints = pvc_malloc_aligned((size_t)c->max_voxels * sizeof(int32_t));
        v->coors_zyx = pvc_malloc_aligned((size_t)c->max_voxels * 3 * sizeof(int32_t));
        ok = ok && v->feat && v->npoints && v->coors_zyx;
    }
    m->vox_scratch = pvc_malloc_aligned(pvs_voxelize_scratch_bytes(c, m->points_cap));
    if (!ok || !m->vox_scratch) return pvc_fail(msg, PV_ENOMEM, "out of memory for the voxel buffers");
    return PV_OK;
}

pv_status pvm_bevfusion_open(const pvm_bevfusion_options *opt, pvm_bevfusion **out, pvc_msg *msg)
{
    *out = NULL;
    double t0 = pvc_now_ms();
    pvm_bevfusion *m = pvc_calloc(1, sizeof *m);
    if (!m) return pvc_fail(msg, PV_ENOMEM, "out of memory opening bevfusion");
    pthread_mutex_init(&m->pre_mu, NULL);
    pthread_mutex_init(&m->eng_mu, NULL);
    pthread_mutex_init(&m->slot_mu, NULL);
    pthread_cond_init(&m->slot_cv, NULL);
    char dir[4096];
    pv_status s = pvc_precision_resolve(opt ? opt->precision : 0, &m->precision, m->precision_note, sizeof m->precision_note);
    if (s != PV_OK) pvc_fail(msg, s, "%s", pv_last_error());
    if (s == PV_OK) s = resolve(m, opt, dir, sizeof dir, msg);
    for (int i = 0; i < PVM_BF_NFILES && s == PV_OK; i++) {
        pvm_bevfusion_artifact *a = &m->art[i];
        a->name = file_names[i];
        a->expected = file_sha256[i];
        (void)pv_pathf(a->path, sizeof a->path, "%s/%s", dir, file_names[i]);
        s = pvio_sha256_file(a->path, a->sha256, msg);
        a->verified = s == PV_OK && !strcmp(a->sha256, a->expected);
        /* a release file that is not the pinned one is refused: its contract may differ */
        if (s == PV_OK && !a->verified && !strcmp(m->kind, "release") && opt && opt->strict)
            s = pvc_fail(msg, PV_ENOWEIGHTS, "'%s': sha256 %s, the pinned %s %s has %s", a->path, a->sha256, PVM_BF_REPO,
                         PVM_BF_REVISION, a->expected);
    }
    if (s == PV_OK) s = pvc_pool_create(opt ? opt->threads : 0, &m->pool);
    if (s == PV_OK) s = load_params(m, msg);
    if (s == PV_OK) s = load_model(m, msg);
    if (s == PV_OK) s = setup_voxels(m, msg);
    if (s == PV_OK)
        s = pvm_bf_runner_init(&m->runner, &m->enc, m->vcfg.max_voxels, pvc_pool_threads(m->pool), m->precision, msg);
    if (s == PV_OK) s = pvm_bevfusion_streams_create(16, 1, m->points_cap, &m->streams, msg);
    if (s == PV_OK && !(opt && opt->no_warmup)) {
        /* one frame through every stage, so the first call costs what the others do */
        float pts[4 * 64];
        for (int i = 0; i < 64; i++) {
            pts[4 * i + 0] = 5.0f + (float)(i % 8);
            pts[4 * i + 1] = -3.0f + (float)(i / 8);
            pts[4 * i + 2] = 0.5f;
            pts[4 * i + 3] = 0.0f;
        }
        pvm_bevfusion_frame_in in = { .pts = pts, .n = 64, .stride = 4, .time_lag_col = -1 };
        pvm_bevfusion_result r;
        s = pvm_bevfusion_run(m, &in, NULL, &r, msg);
        if (s == PV_OK) pvm_bevfusion_result_free(&r);
    }
    if (s != PV_OK) { pvm_bevfusion_close(m); return s; }
    m->load_ms = pvc_now_ms() - t0;
    *out = m;
    return PV_OK;
}

void pvm_bevfusion_close(pvm_bevfusion *m)
{
    if (!m) return;
    pvg_plan_free(m->dense_plan);
    pvg_graph_free(m->dense_g);
    pvm_bf_runner_free(&m->runner);
    pvm_bf_encoder_free(&m->enc);
    pvm_bevfusion_streams_free(m->streams);
    pvc_pool_free(m->pool);
    pvc_free_aligned(m->points);
    for (int i = 0; i < PVM_BF_SLOTS; i++) {
        pvc_free_aligned(m->vox[i].feat);
        pvc_free_aligned(m->vox[i].npoints);
        pvc_free_aligned(m->vox[i].coors_zyx);
    }
    pvc_free_aligned(m->vox_scratch);
    pthread_mutex_destroy(&m->pre_mu);
    pthread_mutex_destroy(&m->eng_mu);
    pthread_mutex_destroy(&m->slot_mu);
    pthread_cond_destroy(&m->slot_cv);
    pvc_free(m);
}

const pvm_bevfusion_params *pvm_bevfusion_defaults(const pvm_bevfusion *m) { return &m->params; }
const char *pvm_bevfusion_weights_kind(const pvm_bevfusion *m) { return m->kind; }
const char *pvm_bevfusion_precision(const pvm_bevfusion *m) { return pvc_precision_name(m->precision); }
const char *pvm_bevfusion_precision_note(const pvm_bevfusion *m) { return m->precision_note; }
const pvm_bevfusion_artifact *pvm_bevfusion_artifacts(const pvm_bevfusion *m, int *n) { *n = PVM_BF_NFILES; return m->art; }
double pvm_bevfusion_load_ms(const pvm_bevfusion *m) { return m->load_ms; }
const pvm_bf_encoder *pvm_bevfusion_encoder(const pvm_bevfusion *m) { return &m->enc; }

/* ---- one frame ---------------------------------------------------------------------------- */
void pvm_bevfusion_result_free(pvm_bevfusion_result *r)
{
    if (!r) return;
    pvc_free(r->objects);
    pvc_free(r->bbox_pred);
    pvc_free(r->score);
    pvc_free(r->label_pred);
    memset(r, 0, sizeof *r);
}

/* Takes the stage lock, adding the time spent waiting for it to *wait. */
static void lock_timed(pthread_mutex_t *mu, double *wait)
{
    double t = pvc_now_ms();
    pthread_mutex_lock(mu);
    *wait += pvc_now_ms() - t;
}

static int slot_take(pvm_bevfusion *m, double *wait)
{
    double t = pvc_now_ms();
    pthread_mutex_lock(&m->slot_mu);
    int i;
    for (;;) {
        for (i = 0; i < PVM_BF_SLOTS && m->slot_busy[i]; i++) {}
        if (i < PVM_BF_SLOTS) break;
        pthread_cond_wait(&m->slot_cv, &m->slot_mu);
    }
    m->slot_busy[i] = true;
    pthread_mutex_unlock(&m->slot_mu);
    *wait += pvc_now_ms() - t;
    return i;
}

static void slot_give(pvm_bevfusion *m, int i)
{
    pthread_mutex_lock(&m->slot_mu);
    m->slot_busy[i] = false;
    pthread_cond_signal(&m->slot_cv);
    pthread_mutex_unlock(&m->slot_mu);
}

/* Pre stage: points (densified) -> voxels in slot v. */
static pv_status stage_pre(pvm_bevfusion *m, const pvm_bevfusion_frame_in *in, pvs_voxels *v, pvm_bevfusion_result *res,
                           pvc_msg *msg)
{
    lock_timed(&m->pre_mu, &res->t_wait);
    double t0 = pvc_now_ms();
    pvm_bevfusion_points pts = { .xyzt = m->points, .cap = m->points_cap };
    pv_status s = pvm_bevfusion_points_build(m->streams, in, &pts, msg);
    double t1 = pvc_now_ms();
    v->n = 0;
    if (s == PV_OK) s = pvs_voxelize(&m->vcfg, pts.xyzt, pts.n, 4, v, m->vox_scratch, msg);
    pthread_mutex_unlock(&m->pre_mu);
    if (s != PV_OK) return s;
    res->num_points = pts.n;
    res->num_dropped_points = pts.dropped_nonfinite;
    res->sweeps_used = pts.sweeps_used;
    if (in->stream) {
        res->stream = true;
        res->stream_started = pts.stream_started;
        res->stream_reset = in->stream->reset;
        snprintf(res->stream_id, sizeof res->stream_id, "%s", in->stream->id);
    }
    res->num_voxels = v->n;
    res->num_points_out_of_range = v->points_out_of_range;
    res->t_pre = t1 - t0;
    res->t_voxelize = pvc_now_ms() - t1;
    return PV_OK;
}

/* Engine stage: sparse encoder + dense plan, raw outputs copied into res. */
static pv_status stage_engine(pvm_bevfusion *m, const pvs_voxels *v, pvm_bevfusion_result *res, pvc_msg *msg)
{
    lock_timed(&m->eng_mu, &res->t_wait);
    double t0 = pvc_now_ms();
    pv_status s = pvm_bf_runner_run(&m->runner, m->pool, v, &res->enc, msg);
    double t1 = pvc_now_ms();
    pvc_tensor din = m->enc.dense, outs[3];
    din.data = m->runner.dense;
    pvc_tensor_set_contiguous(&din);
    if (s == PV_OK && (s = pvg_plan_run(m->dense_plan, &din, m->pool, outs)) != PV_OK)
        s = pvc_fail(msg, s, "%s", m->dense_g->msg.text);
    if (s == PV_OK) {
        memcpy(res->bbox_pred, outs[m->out_bbox].data, (size_t)m->P * 10 * sizeof(float));
        memcpy(res->score, outs[m->out_score].data, (size_t)m->P * sizeof(float));
        const pvc_tensor *lb = &outs[m->out_label];
        for (int i = 0; i < m->P; i++)
            res->label_pred[i] = lb->dtype == PV_I64 ? ((const int64_t *)lb->data)[i] : ((const int32_t *)lb->data)[i];
    }
    pthread_mutex_unlock(&m->eng_mu);
    res->t_sparse = t1 - t0;
    res->t_dense = pvc_now_ms() - t1;
    return s;
}

pv_status pvm_bevfusion_run(pvm_bevfusion *m, const pvm_bevfusion_frame_in *in, const pvm_bevfusion_params *p,
                            pvm_bevfusion_result *res, pvc_msg *msg)
{
    memset(res, 0, sizeof *res);
    double t0 = pvc_now_ms();
    res->P = m->P;
    res->objects = pvc_calloc((size_t)m->P, sizeof *res->objects);
    res->bbox_pred = pvc_calloc((size_t)m->P * 10, sizeof(float));
    res->score = pvc_calloc((size_t)m->P, sizeof(float));
    res->label_pred = pvc_calloc((size_t)m->P, sizeof(int64_t));
    void *ws = pvc_malloc(pvm_bevfusion_post_ws_bytes(m->P));
    if (!res->objects || !res->bbox_pred || !res->score || !res->label_pred || !ws) {
        pvc_free(ws);
        pvm_bevfusion_result_free(res);
        return pvc_fail(msg, PV_ENOMEM, "out of memory for the result");
    }
    int slot = slot_take(m, &res->t_wait);
    pvs_voxels *v = &m->vox[slot];
    pv_status s = stage_pre(m, in, v, res, msg);
    bool empty = s == PV_OK && v->n < m->params.voxels_num[0];   /* Autoware skips such frames: no objects */
    if (empty) { res->enc.nlevels = m->enc.nlevels; res->enc.active[0] = v->n; }
    if (s == PV_OK && !empty) s = stage_engine(m, v, res, msg);
    slot_give(m, slot);
    if (s == PV_OK && !empty) {
        double t = pvc_now_ms();
        s = pvm_bevfusion_post(p ? p : &m->params, res->bbox_pred, res->score, res->label_pred, m->P, res->objects,
                               &res->nobjects, &res->post, ws, msg);
        res->t_post = pvc_now_ms() - t;
    }
    pvc_free(ws);
    res->t_total = pvc_now_ms() - t0;
    if (s != PV_OK) pvm_bevfusion_result_free(res);
    return s;
}
