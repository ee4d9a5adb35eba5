/* meteor net: the file's graph as a rig plan + a frame plan (net.h). */
#include "models/meteor/net.h"
#include "graph/graph.h"
#include "graph/onnx.h"

#include <stdio.h>
#include <string.h>

const char *const pvm_meteor_output_names[PVM_METEOR_NOUT] = {
    "lane", "depth", "seg2d", "hm", "reg", "hm2d_s0", "hm2d_s1", "hm2d_s2", "reg2d_s0", "reg2d_s1",
    "reg2d_s2", "ego", "occ", "traj", "stationary", "tl", "risk", "lane_logit", "depth_mean",
};

/* What spec 1.5 says each output is; the file is checked against it (names first). */
typedef struct out_spec { pv_dtype dt; int rank; int64_t d[5]; } out_spec;
static const out_spec out_specs[PVM_METEOR_NOUT] = {
    { PV_U8, 3, { 1, 800, 500 } },           { PV_U8, 4, { 1, 8, 108, 192 } },      { PV_U8, 4, { 1, 8, 108, 192 } },
    { PV_F32, 4, { 1, 2, 400, 250 } },       { PV_F32, 4, { 1, 6, 400, 250 } },
    { PV_F32, 5, { 1, 8, 10, 108, 192 } },   { PV_F32, 5, { 1, 8, 10, 54, 96 } },   { PV_F32, 5, { 1, 8, 10, 27, 48 } },
    { PV_F32, 5, { 1, 8, 4, 108, 192 } },    { PV_F32, 5, { 1, 8, 4, 54, 96 } },    { PV_F32, 5, { 1, 8, 4, 27, 48 } },
    { PV_F32, 2, { 1, 42 } },                { PV_F32, 5, { 1, 10, 16, 200, 200 } }, { PV_F32, 4, { 1, 39, 400, 250 } },
    { PV_F32, 4, { 1, 1, 400, 250 } },       { PV_F32, 2, { 1, 4 } },               { PV_F32, 4, { 1, 1, 400, 250 } },
    { PV_F32, 4, { 1, 9, 800, 500 } },       { PV_F16, 4, { 1, 8, 54, 96 } },
};

enum { IN_IMGS = 0, IN_K, IN_T, IN_V0, NIN };
static const char *const in_names[NIN] = { "imgs", "K", "T_cam_ego", "v0" };
static const out_spec in_specs[NIN] = {
    { PV_U8, 5, { 1, 8, 3, 432, 768 } }, { PV_F32, 4, { 1, 8, 3, 3 } }, { PV_F32, 4, { 1, 8, 4, 4 } }, { PV_F32, 1, { 1 } },
};

typedef struct rig_entry {
    float    key[8 * 9 + 8 * 16];
    bool     used;
    uint64_t stamp;
    void   **data;            /* one buffer per frontier value */
} rig_entry;

struct pvm_meteor_net {
    pvc_pool  *pool;
    pvg_graph *frame_g, *rig_g;         /* rig_g NULL: the whole graph is frame_g */
    pvg_plan  *frame_plan, *rig_plan;
    int        in_v[NIN];               /* value index of each input in frame_g (-1: cut away) */
    int        out_k[PVM_METEOR_NOUT];  /* position in frame_g->outputs */
    int        nfront;
    char     **front_names;
    pvc_tensor *front_desc;             /* shapes of the frontier (from the rig plan) */
    int       *front_in_frame;          /* input slot in frame_g->inputs */
    int       *front_out_rig;           /* output slot in rig_g->outputs */
    int        rig_in_k, rig_in_t;      /* input slots in rig_g */
    rig_entry *rigs;
    int        nslots;
    uint64_t   clock;
    size_t     rig_bytes;
    int        rig_nodes, frame_nodes;
    char       rig_note[200];
    char       prec_note[160];
    pvc_tensor *bind;                   /* frame_g->ninputs */
};

static int find_input(const pvg_graph *g, const char *name)
{
    for (int i = 0; i < g->ninputs; i++) if (!strcmp(g->values[g->inputs[i]].name, name)) return i;
    return -1;
}

static int find_output(const pvg_graph *g, const char *name)
{
    for (int i = 0; i < g->noutputs; i++) if (!strcmp(g->values[g->outputs[i]].name, name)) return i;
    return -1;
}

static bool decl_matches(const pvc_tensor *d, const out_spec *sp)
{
    if (d->dtype != sp->dt || d->rank != sp->rank) return false;
    for (int k = 0; k < sp->rank; k++) if (d->dims[k] >= 0 && d->dims[k] != sp->d[k]) return false;
    return true;
}

static void spec_str(const out_spec *sp, char *buf, size_t cap)
{
    int o = snprintf(buf, cap, "%s [", pv_dtype_name(sp->dt));
    for (int k = 0; k < sp->rank && o > 0 && (size_t)o < cap; k++) o += snprintf(buf + o, cap - (size_t)o, "%s%lld", k ? "," : "", (long long)sp->d[k]);
    if (o > 0 && (size_t)o < cap) snprintf(buf + o, cap - (size_t)o, "]");
}

/* The file's I/O against spec 1.2 / 1.5, naming what differs. */
static pv_status check_io(const pvg_graph *g, const char *path, pvc_msg *msg)
{
    for (int i = 0; i < NIN; i++) {
        int k = find_input(g, in_names[i]);
        char want[64], got[96];
        spec_str(&in_specs[i], want, sizeof want);
        if (k < 0) return pvc_fail(msg, PV_EFORMAT, "%s: no input '%s' (want %s)", path, in_names[i], want);
        const pvc_tensor *d = &g->values[g->inputs[k]].decl;
        if (!decl_matches(d, &in_specs[i])) {
            pvc_shape_str(d, got, sizeof got);
            return pvc_fail(msg, PV_EFORMAT, "%s: input '%s' is %s %s (want %s)", path, in_names[i], pv_dtype_name(d->dtype), got, want);
        }
    }
    if (g->ninputs != NIN) return pvc_fail(msg, PV_EFORMAT, "%s: %d inputs (want 4: imgs, K, T_cam_ego, v0)", path, g->ninputs);
    for (int i = 0; i < PVM_METEOR_NOUT; i++) {
        int k = find_output(g, pvm_meteor_output_names[i]);
        char want[64], got[96];
        spec_str(&out_specs[i], want, sizeof want);
        if (k < 0) return pvc_fail(msg, PV_EFORMAT, "%s: no output '%s' (want %s)", path, pvm_meteor_output_names[i], want);
        const pvc_tensor *d = &g->values[g->outputs[k]].decl;
        if (d->rank >= 0 && !decl_matches(d, &out_specs[i])) {
            pvc_shape_str(d, got, sizeof got);
            return pvc_fail(msg, PV_EFORMAT, "%s: output '%s' is %s %s (want %s)", path, pvm_meteor_output_names[i],
                            pv_dtype_name(d->dtype), got, want);
        }
    }
    return PV_OK;
}

static pv_status load(const pvm_meteor_net_opts *o, const void *buf, size_t len, const char *dir, const char *path, pvg_graph **g,
                      pvc_msg *msg)
{
    pv_status s = pvg_graph_load_onnx(buf, len, dir, g, msg);
    if (s != PV_OK) return pvc_fail(msg, s, "%s: %s", path, msg->text);
    if (o && o->probe) o->probe(o->probe_ud, *g);
    for (int i = 0; i < (*g)->nnodes; i++)
        if (!strcmp((*g)->nodes[i].op_type, "MeteorLift"))
            return pvc_fail(msg, PV_EUNSUPPORTED, "%s: node '%s' is the Orin plugin op MeteorLift (rig-specific lift tables); "
                            "use the plain ONNX release, which computes the lift from K and T_cam_ego", path, (*g)->nodes[i].name);
    pvg_pass_stats ps;
    if ((s = pvg_passes_run(*g, true, &ps)) != PV_OK) return pvc_fail(msg, s, "%s: %s", path, (*g)->msg.text);
    return PV_OK;
}

enum { C_CONST = 0, C_RIG = 1, C_FRAME = 2 };

/* Classifies every value (const / rig / frame) in topological order and lists the frontier:
 * rig values read by frame nodes or returned as outputs. */
static pv_status find_frontier(pvg_graph *g, int **front, int *nfront, int *rig_nodes, pvc_msg *msg)
{
    *front = NULL;
    *nfront = 0;
    *rig_nodes = 0;
    unsigned char *cls = pvc_calloc((size_t)g->nvalues + 1, 1);
    unsigned char *isf = pvc_calloc((size_t)g->nvalues + 1, 1);
    int *order = pvc_calloc((size_t)g->nnodes + 1, sizeof *order);
    int norder = 0;
    pv_status s = PV_OK;
    if (!cls || !isf || !order) { s = pvc_fail(msg, PV_ENOMEM, "out of memory splitting the graph"); goto done; }
    if ((s = pvg_graph_toposort(g, order, &norder)) != PV_OK) { pvc_fail(msg, s, "%s", g->msg.text); goto done; }
    for (int i = 0; i < g->ninputs; i++) {
        const char *nm = g->values[g->inputs[i]].name;
        cls[g->inputs[i]] = (!strcmp(nm, "K") || !strcmp(nm, "T_cam_ego")) ? C_RIG : C_FRAME;
    }
    for (int t = 0; t < norder; t++) {
        const pvg_node *n = &g->nodes[order[t]];
        unsigned char c = C_CONST;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0 && cls[n->in[k]] > c) c = cls[n->in[k]];
        if (c == C_RIG) (*rig_nodes)++;
        for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) cls[n->out[k]] = c;
        if (c != C_FRAME) continue;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0 && cls[n->in[k]] == C_RIG) isf[n->in[k]] = 1;
    }
    for (int i = 0; i < g->noutputs; i++) if (cls[g->outputs[i]] == C_RIG) isf[g->outputs[i]] = 1;
    int nf = 0;
    for (int v = 0; v < g->nvalues; v++) nf += isf[v];
    if (nf) {
        if (!(*front = pvc_calloc((size_t)nf, sizeof **front))) { s = pvc_fail(msg, PV_ENOMEM, "out of memory splitting the graph"); goto done; }
        for (int v = 0; v < g->nvalues; v++) if (isf[v]) (*front)[(*nfront)++] = v;
    }
done:
    pvc_free(cls);
    pvc_free(isf);
    pvc_free(order);
    return s;
}

void pvm_meteor_net_free(pvm_meteor_net *n)
{
    if (!n) return;
    pvg_plan_free(n->frame_plan);
    pvg_plan_free(n->rig_plan);
    pvg_graph_free(n->frame_g);
    pvg_graph_free(n->rig_g);
    for (int i = 0; n->rigs && i < n->nslots; i++) {
        for (int k = 0; n->rigs[i].data && k < n->nfront; k++) pvc_free_aligned(n->rigs[i].data[k]);
        pvc_free(n->rigs[i].data);
    }
    pvc_free(n->rigs);
    for (int k = 0; n->front_names && k < n->nfront; k++) pvc_free(n->front_names[k]);
    pvc_free(n->front_names);
    pvc_free(n->front_desc);
    pvc_free(n->front_in_frame);
    pvc_free(n->front_out_rig);
    pvc_free(n->bind);
    pvc_pool_free(n->pool);
    pvc_free(n);
}

static void in_desc(pvc_tensor *t, int i)
{
    memset(t, 0, sizeof *t);
    t->dtype = in_specs[i].dt;
    t->rank = in_specs[i].rank;
    for (int k = 0; k < t->rank; k++) t->dims[k] = in_specs[i].d[k];
    t->name = in_names[i];
}

/* The rig plan: K, T_cam_ego -> the frontier. Returns with n->rig_g planned, or the reason
 * not to split in n->rig_note (PV_OK either way unless memory ran out). */
static pv_status build_rig(pvm_meteor_net *n, const pvm_meteor_net_opts *o, const void *buf, size_t len, const char *dir, const char *path, pvc_msg *msg)
{
    pvg_graph *g = NULL;
    pv_status s = load(o, buf, len, dir, path, &g, msg);
    if (s != PV_OK) return s;
    if ((s = check_io(g, path, msg)) != PV_OK) { pvg_graph_free(g); return s; }
    int *front = NULL, nfront = 0;
    if ((s = find_frontier(g, &front, &nfront, &n->rig_nodes, msg)) != PV_OK) { pvg_graph_free(g); return s; }
    if (nfront == 0) {
        snprintf(n->rig_note, sizeof n->rig_note, "the graph has no part that depends only on K and T_cam_ego");
        pvg_graph_free(g);
        return PV_OK;
    }
    int ins[2] = { g->inputs[find_input(g, "K")], g->inputs[find_input(g, "T_cam_ego")] };
    n->nfront = nfront;
    n->front_names = pvc_calloc((size_t)nfront, sizeof *n->front_names);
    n->front_desc = pvc_calloc((size_t)nfront, sizeof *n->front_desc);
    n->front_in_frame = pvc_calloc((size_t)nfront, sizeof *n->front_in_frame);
    n->front_out_rig = pvc_calloc((size_t)nfront, sizeof *n->front_out_rig);
    if (!n->front_names || !n->front_desc || !n->front_in_frame || !n->front_out_rig) {
        pvc_free(front); pvg_graph_free(g);
        return pvc_fail(msg, PV_ENOMEM, "out of memory splitting the graph");
    }
    for (int k = 0; k < nfront; k++)
        if (!(n->front_names[k] = pvc_strdup(g->values[front[k]].name))) { pvc_free(front); pvg_graph_free(g); return pvc_fail(msg, PV_ENOMEM, "out of memory"); }
    s = pvg_graph_cut(g, ins, 2, front, nfront);
    pvc_free(front);
    if (s != PV_OK) {
        snprintf(n->rig_note, sizeof n->rig_note, "cannot cut the rig part: %.150s", g->msg.text);
        pvg_graph_free(g);
        return PV_OK;
    }
    (void)pvg_graph_drop_unread(g);   /* the rig part reads a few constants of the whole file */
    g->threads = pvc_pool_threads(n->pool);
    g->precision = PVC_PREC_FP32;     /* geometry: never reduced precision */
    g->drop_consumed = true;
    pvc_tensor d[2];
    for (int i = 0; i < 2; i++) {
        int slot = i == 0 ? IN_K : IN_T;
        in_desc(&d[i], slot);
    }
    /* g->inputs is { K, T } in the order given to the cut */
    if ((s = pvg_plan_create(g, d, &n->rig_plan)) != PV_OK) {
        snprintf(n->rig_note, sizeof n->rig_note, "cannot plan the rig part: %.150s", g->msg.text);
        pvg_graph_free(g);
        n->rig_plan = NULL;
        return PV_OK;
    }
    n->rig_in_k = 0;
    n->rig_in_t = 1;
    for (int k = 0; k < nfront; k++) {
        n->front_out_rig[k] = k;
        const pvc_tensor *t = pvg_plan_value(n->rig_plan, g->outputs[k]);
        n->front_desc[k] = *t;
        n->front_desc[k].data = NULL;
        n->front_desc[k].name = n->front_names[k];
        pvc_tensor_set_contiguous(&n->front_desc[k]);
        n->rig_bytes += pvc_nbytes(t);
    }
    n->rig_g = g;
    return PV_OK;
}

static void drop_rig(pvm_meteor_net *n)
{
    pvg_plan_free(n->rig_plan);
    n->rig_plan = NULL;
    pvg_graph_free(n->rig_g);
    n->rig_g = NULL;
}

pv_status pvm_meteor_net_open(const char *path, const pvm_meteor_net_opts *o, pvm_meteor_net **out, pvc_msg *msg)
{
    *out = NULL;
    pvm_meteor_net *n = pvc_calloc(1, sizeof *n);
    if (!n) return pvc_fail(msg, PV_ENOMEM, "out of memory opening meteor");
    pv_status s = pvc_pool_create(o->threads, &n->pool);
    void *buf = NULL;
    size_t len = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    if (s == PV_OK) s = pvg_read_file(path, &buf, &len, msg);
    if (s == PV_OK && !o->no_rig_cache) s = build_rig(n, o, buf, len, dir, path, msg);
    else if (s == PV_OK) snprintf(n->rig_note, sizeof n->rig_note, "the rig cache is off");
    if (s == PV_OK) s = load(o->no_rig_cache ? o : NULL, buf, len, dir, path, &n->frame_g, msg);
    pvc_free(buf);
    if (s == PV_OK && !n->rig_g) s = check_io(n->frame_g, path, msg);
    pvg_graph *g = n->frame_g;
    if (s == PV_OK && n->rig_g) {
        /* cut at the frontier: inputs imgs, v0, frontier...; the 19 outputs */
        int nin = 2 + n->nfront, *ins = pvc_calloc((size_t)nin, sizeof *ins), outs[PVM_METEOR_NOUT];
        if (!ins) s = pvc_fail(msg, PV_ENOMEM, "out of memory splitting the graph");
        for (int i = 0; s == PV_OK && i < PVM_METEOR_NOUT; i++) outs[i] = g->outputs[find_output(g, pvm_meteor_output_names[i])];
        if (s == PV_OK) {
            ins[0] = g->inputs[find_input(g, "imgs")];
            ins[1] = g->inputs[find_input(g, "v0")];
            for (int k = 0; k < n->nfront; k++) {
                ins[2 + k] = pvg_value_find(g, n->front_names[k]);
                if (ins[2 + k] < 0) s = pvc_fail(msg, PV_EINTERNAL, "rig value '%s' is not in the frame graph", n->front_names[k]);
            }
        }
        if (s == PV_OK && pvg_graph_cut(g, ins, nin, outs, PVM_METEOR_NOUT) != PV_OK) {
            /* should not happen (same file, same passes); run whole instead */
            snprintf(n->rig_note, sizeof n->rig_note, "cannot cut the frame part: %.150s", g->msg.text);
            drop_rig(n);
            pvg_graph_free(n->frame_g);
            n->frame_g = NULL;
            pvc_free(ins);
            ins = NULL;
            void *b2 = NULL;
            size_t l2 = 0;
            s = pvg_read_file(path, &b2, &l2, msg);
            if (s == PV_OK) s = load(NULL, b2, l2, dir, path, &n->frame_g, msg);
            pvc_free(b2);
            g = n->frame_g;
        }
        pvc_free(ins);
        if (s == PV_OK && n->rig_g) {
            for (int k = 0; k < n->nfront; k++) n->front_in_frame[k] = 2 + k;
            (void)pvg_graph_drop_unread(g);
        }
    }
    if (s == PV_OK) {
        s = pvc_precision_resolve(o->precision, &g->precision, n->prec_note, sizeof n->prec_note);
        g->threads = pvc_pool_threads(n->pool);
        g->drop_consumed = true;   /* one plan: weights held once, in the kernels' layouts */
    }
    if (s == PV_OK) {
        for (int i = 0; i < PVM_METEOR_NOUT; i++) n->out_k[i] = find_output(g, pvm_meteor_output_names[i]);
        for (int i = 0; i < NIN; i++) n->in_v[i] = find_input(g, in_names[i]);
        n->bind = pvc_calloc((size_t)g->ninputs, sizeof *n->bind);
        if (!n->bind) s = pvc_fail(msg, PV_ENOMEM, "out of memory");
    }
    if (s == PV_OK) {
        for (int i = 0; i < NIN; i++) if (n->in_v[i] >= 0) in_desc(&n->bind[n->in_v[i]], i);
        for (int k = 0; n->rig_g && k < n->nfront; k++) n->bind[n->front_in_frame[k]] = n->front_desc[k];
        if ((s = pvg_plan_create(g, n->bind, &n->frame_plan)) != PV_OK) pvc_fail(msg, s, "%s: planning: %s", path, g->msg.text);
    }
    if (s == PV_OK) {
        for (int i = 0; i < PVM_METEOR_NOUT; i++) {
            const pvc_tensor *t = pvg_plan_value(n->frame_plan, g->outputs[n->out_k[i]]);
            char want[64], got[96];
            spec_str(&out_specs[i], want, sizeof want);
            if (!decl_matches(t, &out_specs[i])) {
                pvc_shape_str(t, got, sizeof got);
                s = pvc_fail(msg, PV_EFORMAT, "%s: output '%s' is %s %s (want %s)", path, pvm_meteor_output_names[i], pv_dtype_name(t->dtype), got, want);
                break;
            }
        }
    }
    if (s == PV_OK) {
        for (int i = 0; i < g->nnodes; i++) n->frame_nodes += !g->nodes[i].dead;
        n->nslots = o->rig_slots > 0 ? o->rig_slots : PVM_METEOR_RIG_SLOTS;
        if (n->rig_g && !(n->rigs = pvc_calloc((size_t)n->nslots, sizeof *n->rigs))) s = pvc_fail(msg, PV_ENOMEM, "out of memory");
    }
    if (s != PV_OK) { pvm_meteor_net_free(n); return s; }
    *out = n;
    return PV_OK;
}

/* The cache entry for this rig (computed when new). */
static pv_status rig_lookup(pvm_meteor_net *n, const float *K, const float *T, rig_entry **out, pvm_meteor_net_stats *st, pvc_msg *msg)
{
    float key[8 * 9 + 8 * 16];
    memcpy(key, K, 8 * 9 * sizeof *K);
    memcpy(key + 8 * 9, T, 8 * 16 * sizeof *T);
    rig_entry *victim = &n->rigs[0];
    for (int i = 0; i < n->nslots; i++) {
        rig_entry *e = &n->rigs[i];
        if (e->used && !memcmp(e->key, key, sizeof key)) {
            e->stamp = ++n->clock;
            st->rig_hit = true;
            *out = e;
            return PV_OK;
        }
        if (!e->used) { if (victim->used) victim = e; }
        else if (victim->used && e->stamp < victim->stamp) victim = e;
    }
    double t0 = pvc_now_ms();
    pvc_tensor in[2], o[64], *op = o;
    if (n->nfront > 64 && !(op = pvc_calloc((size_t)n->nfront, sizeof *op))) return pvc_fail(msg, PV_ENOMEM, "out of memory");
    in_desc(&in[0], IN_K); in[0].data = (void *)K;
    in_desc(&in[1], IN_T); in[1].data = (void *)T;
    pv_status s = pvg_plan_run(n->rig_plan, in, n->pool, op);
    if (s != PV_OK) s = pvc_fail(msg, s, "meteor rig part: %s", n->rig_g->msg.text);
    if (s == PV_OK && !victim->data && !(victim->data = pvc_calloc((size_t)n->nfront, sizeof *victim->data)))
        s = pvc_fail(msg, PV_ENOMEM, "out of memory for the rig cache");
    for (int k = 0; s == PV_OK && k < n->nfront; k++) {
        size_t nb = pvc_nbytes(&n->front_desc[k]);
        if (!victim->data[k] && !(victim->data[k] = pvc_malloc_aligned(nb ? nb : 1))) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the rig cache"); break; }
        const pvc_tensor *src = &op[n->front_out_rig[k]];
        if (pvc_nbytes(src) != nb || !pvc_tensor_is_contiguous(src)) { s = pvc_fail(msg, PV_EINTERNAL, "rig value '%s' changed layout", n->front_names[k]); break; }
        if (nb) memcpy(victim->data[k], src->data, nb);
    }
    if (op != o) pvc_free(op);
    if (s != PV_OK) { victim->used = false; return s; }
    memcpy(victim->key, key, sizeof key);
    victim->used = true;
    victim->stamp = ++n->clock;
    st->rig_ms = pvc_now_ms() - t0;
    *out = victim;
    return PV_OK;
}

pv_status pvm_meteor_net_run(pvm_meteor_net *n, const uint8_t *imgs, const float *K, const float *T, float v0,
                             pvc_tensor outs[PVM_METEOR_NOUT], pvm_meteor_net_stats *st, pvc_msg *msg)
{
    pvm_meteor_net_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    pvg_graph *g = n->frame_g;
    const void *data[NIN] = { imgs, K, T, &v0 };
    for (int i = 0; i < NIN; i++) if (n->in_v[i] >= 0) n->bind[n->in_v[i]].data = (void *)data[i];
    if (n->rig_g) {
        rig_entry *e = NULL;
        pv_status s = rig_lookup(n, K, T, &e, st, msg);
        if (s != PV_OK) return s;
        for (int k = 0; k < n->nfront; k++) n->bind[n->front_in_frame[k]].data = e->data[k];
    } else st->rig_ms = 0;
    pvc_tensor o[64];
    if (g->noutputs > 64) return pvc_fail(msg, PV_EINTERNAL, "meteor: %d outputs", g->noutputs);
    pv_status s = pvg_plan_run(n->frame_plan, n->bind, n->pool, o);
    if (s != PV_OK) return pvc_fail(msg, s, "meteor: %s", g->msg.text);
    for (int i = 0; i < PVM_METEOR_NOUT; i++) outs[i] = o[n->out_k[i]];
    return PV_OK;
}

void pvm_meteor_net_info_get(const pvm_meteor_net *n, pvm_meteor_net_info *info)
{
    memset(info, 0, sizeof *info);
    info->rig_split = n->rig_g != NULL;
    info->rig_note = n->rig_note;
    info->rig_nodes = n->rig_g ? n->rig_nodes : 0;
    info->frame_nodes = n->frame_nodes;
    info->frontier = n->rig_g ? n->nfront : 0;
    info->rig_bytes = n->rig_bytes;
    pvg_plan_info pi;
    pvg_plan_info_get(n->frame_plan, &pi);
    info->arena_bytes = pi.arena_bytes + pi.ws_bytes;
    info->const_bytes = pi.const_bytes;
    if (n->rig_plan) {
        pvg_plan_info_get(n->rig_plan, &pi);
        info->arena_bytes += pi.arena_bytes + pi.ws_bytes;
        info->const_bytes += pi.const_bytes;
    }
    info->rig_slots = n->rig_g ? n->nslots : 0;
    for (int i = 0; n->rigs && i < n->nslots; i++) info->rigs_cached += n->rigs[i].used;
    info->precision = n->frame_g->precision == PVC_PREC_BF16 ? "bf16" : "fp32";
    info->precision_note = n->prec_note;
}
