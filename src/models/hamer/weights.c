/* hamer weights: the tensor table, the loader and the generator (weights.h). */
#include "models/hamer/weights.h"
#include "models/hamer/mano.h"
#include "io/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ---------------------------------------------------------------------------- */
typedef struct spec_list { pvm_hamer_wspec *s; int n, cap; bool oom; } spec_list;

static void add(spec_list *l, pvm_hamer_wkind kind, int64_t fan_in, int rank, const int64_t *dims, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void add(spec_list *l, pvm_hamer_wkind kind, int64_t fan_in, int rank, const int64_t *dims, const char *fmt, ...)
{
    if (l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 512;
        pvm_hamer_wspec *s = pvc_realloc(l->s, (size_t)cap * sizeof *s);
        if (!s) { l->oom = true; return; }
        l->s = s;
        l->cap = cap;
    }
    pvm_hamer_wspec *e = &l->s[l->n++];
    memset(e, 0, sizeof *e);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->name, sizeof e->name, fmt, ap);
    va_end(ap);
    e->rank = rank;
    memcpy(e->dims, dims, (size_t)rank * sizeof *dims);
    e->kind = kind;
    e->fan_in = fan_in;
}

#define D1(a)          1, (const int64_t[]){ a }
#define D2(a, b)       2, (const int64_t[]){ a, b }
#define D3(a, b, c)    3, (const int64_t[]){ a, b, c }
#define D4(a, b, c, d) 4, (const int64_t[]){ a, b, c, d }

static void linear(spec_list *l, pvm_hamer_wkind kind, int64_t out, int64_t in, bool bias, const char *name)
{
    add(l, kind, in, D2(out, in), "%s.weight", name);
    if (bias) add(l, PVM_HW_BIAS, in, D1(out), "%s.bias", name);
}

static void norm(spec_list *l, int64_t n, const char *name)
{
    add(l, PVM_HW_LN_W, 0, D1(n), "%s.weight", name);
    add(l, PVM_HW_LN_B, 0, D1(n), "%s.bias", name);
}

int pvm_hamer_wspecs(int depth, pvm_hamer_wspec **out)
{
    spec_list l = { 0 };
    char p[96];
    add(&l, PVM_HW_POS, 0, D3(1, 193, 1280), "backbone.pos_embed");
    add(&l, PVM_HW_LINEAR, 3 * 16 * 16, D4(1280, 3, 16, 16), "backbone.patch_embed.proj.weight");
    add(&l, PVM_HW_BIAS, 3 * 16 * 16, D1(1280), "backbone.patch_embed.proj.bias");
    for (int i = 0; i < depth; i++) {
        snprintf(p, sizeof p, "backbone.blocks.%d.norm1", i); norm(&l, 1280, p);
        snprintf(p, sizeof p, "backbone.blocks.%d.attn.qkv", i); linear(&l, PVM_HW_LINEAR, 3840, 1280, true, p);
        snprintf(p, sizeof p, "backbone.blocks.%d.attn.proj", i); linear(&l, PVM_HW_LINEAR, 1280, 1280, true, p);
        snprintf(p, sizeof p, "backbone.blocks.%d.norm2", i); norm(&l, 1280, p);
        snprintf(p, sizeof p, "backbone.blocks.%d.mlp.fc1", i); linear(&l, PVM_HW_LINEAR, 5120, 1280, true, p);
        snprintf(p, sizeof p, "backbone.blocks.%d.mlp.fc2", i); linear(&l, PVM_HW_LINEAR, 1280, 5120, true, p);
    }
    norm(&l, 1280, "backbone.last_norm");
    linear(&l, PVM_HW_LINEAR, 1024, 1, true, "mano_head.transformer.to_token_embedding");
    add(&l, PVM_HW_POS, 0, D3(1, 1, 1024), "mano_head.transformer.pos_embedding");
    for (int i = 0; i < PVM_HAMER_DEC_DEPTH; i++) {
        char b[80];
        snprintf(b, sizeof b, "mano_head.transformer.transformer.layers.%d", i);
        snprintf(p, sizeof p, "%s.0.norm", b); norm(&l, 1024, p);
        snprintf(p, sizeof p, "%s.0.fn.to_qkv", b); linear(&l, PVM_HW_LINEAR, 1536, 1024, false, p);
        snprintf(p, sizeof p, "%s.0.fn.to_out.0", b); linear(&l, PVM_HW_LINEAR, 1024, 512, true, p);
        snprintf(p, sizeof p, "%s.1.norm", b); norm(&l, 1024, p);
        snprintf(p, sizeof p, "%s.1.fn.to_q", b); linear(&l, PVM_HW_LINEAR, 512, 1024, false, p);
        snprintf(p, sizeof p, "%s.1.fn.to_kv", b); linear(&l, PVM_HW_LINEAR, 1024, 1280, false, p);
        snprintf(p, sizeof p, "%s.1.fn.to_out.0", b); linear(&l, PVM_HW_LINEAR, 1024, 512, true, p);
        snprintf(p, sizeof p, "%s.2.norm", b); norm(&l, 1024, p);
        snprintf(p, sizeof p, "%s.2.fn.net.0", b); linear(&l, PVM_HW_LINEAR, 1024, 1024, true, p);
        snprintf(p, sizeof p, "%s.2.fn.net.3", b); linear(&l, PVM_HW_LINEAR, 1024, 1024, true, p);
    }
    linear(&l, PVM_HW_READOUT, PVM_HAMER_NPOSE, 1024, true, "mano_head.decpose");
    linear(&l, PVM_HW_READOUT, PVM_HAMER_NBETAS, 1024, true, "mano_head.decshape");
    linear(&l, PVM_HW_READOUT, 3, 1024, true, "mano_head.deccam");
    add(&l, PVM_HW_INIT_POSE, 0, D2(1, PVM_HAMER_NPOSE), "mano_head.init_hand_pose");
    add(&l, PVM_HW_INIT_BETAS, 0, D2(1, PVM_HAMER_NBETAS), "mano_head.init_betas");
    add(&l, PVM_HW_INIT_CAM, 0, D2(1, 3), "mano_head.init_cam");
    if (l.oom) { pvc_free(l.s); *out = NULL; return -1; }
    *out = l.s;
    return l.n;
}

static int64_t numel(const pvm_hamer_wspec *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    return n;
}

static pv_status wset_init(pvm_hamer_wset *w, int depth, pvc_msg *msg)
{
    memset(w, 0, sizeof *w);
    w->depth = depth;
    w->n = pvm_hamer_wspecs(depth, &w->spec);
    if (w->n < 0 || !(w->data = pvc_calloc((size_t)w->n, sizeof *w->data))) {
        pvc_free(w->spec);
        memset(w, 0, sizeof *w);
        return pvc_fail(msg, PV_ENOMEM, "out of memory for the hamer weight table");
    }
    for (int i = 0; i < w->n; i++)
        if (w->spec[i].kind < PVM_HW_INIT_POSE) w->params += numel(&w->spec[i]);
    return PV_OK;
}

void pvm_hamer_wset_free(pvm_hamer_wset *w)
{
    for (int i = 0; w->data && i < w->n; i++) pvc_free_aligned(w->data[i]);
    pvc_free(w->data);
    pvc_free(w->spec);
    pvm_hamer_mano_free(&w->mano);
    memset(w, 0, sizeof *w);
}

static int find(const pvm_hamer_wset *w, const char *name)
{
    for (int i = 0; i < w->n; i++) if (!strcmp(w->spec[i].name, name)) return i;
    return -1;
}

float *pvm_hamer_wset_take(pvm_hamer_wset *w, const char *name)
{
    int i = find(w, name);
    if (i < 0) return NULL;
    float *d = w->data[i];
    w->data[i] = NULL;
    return d;
}

const float *pvm_hamer_wset_get(const pvm_hamer_wset *w, const char *name)
{
    int i = find(w, name);
    return i < 0 ? NULL : w->data[i];
}

/* ---- generator ---------------------------------------------------------------------------- */
/* splitmix64: integer-only, so every machine draws the same numbers */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1), exactly representable */
static float unit(uint64_t *s) { return (float)(int32_t)(mix(s) >> 40) / 8388608.0f - 1.0f; }

static uint64_t name_seed(const char *name, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ull;
    return h;
}

static void fill(const pvm_hamer_wspec *sp, uint64_t seed, float *d)
{
    uint64_t s = name_seed(sp->name, seed);
    int64_t n = numel(sp);
    float a = sp->fan_in > 0 ? sqrtf(3.0f / (float)sp->fan_in) : 0.0f;
    switch (sp->kind) {
    case PVM_HW_LINEAR: for (int64_t i = 0; i < n; i++) d[i] = a * unit(&s); break;
    case PVM_HW_READOUT: for (int64_t i = 0; i < n; i++) d[i] = 0.01f * a * unit(&s); break;
    case PVM_HW_BIAS: case PVM_HW_LN_B: case PVM_HW_POS: for (int64_t i = 0; i < n; i++) d[i] = 0.02f * unit(&s); break;
    case PVM_HW_LN_W: for (int64_t i = 0; i < n; i++) d[i] = 1.0f + 0.1f * unit(&s); break;
    case PVM_HW_INIT_POSE:
        /* near the identity rotation per finger joint (6D: columns (1,0,0), (0,1,0)); the wrist
         * turned half a turn about x, so the template's fingers (+y) point up in the image */
        for (int64_t i = 0; i < n; i++) d[i] = (i % 6 == 0 ? 1.0f : i % 6 == 4 ? (i < 6 ? -1.0f : 1.0f) : 0.0f) + 0.05f * unit(&s);
        break;
    case PVM_HW_INIT_BETAS: for (int64_t i = 0; i < n; i++) d[i] = 0.1f * unit(&s); break;
    case PVM_HW_INIT_CAM:    /* the mean camera's scale (4, as the release's mean) */
        for (int64_t i = 0; i < n; i++) d[i] = (i == 0 ? 4.0f : 0.0f) + 0.05f * unit(&s);
        break;
    }
}

pv_status pvm_hamer_wset_generate(int depth, uint64_t seed, pvm_hamer_wset *w, pvc_msg *msg)
{
    if (depth < 1 || depth > PVM_HAMER_DEPTH) return pvc_fail(msg, PV_EINPUT, "hamer: depth %d is not in 1..%d", depth, PVM_HAMER_DEPTH);
    pv_status s = wset_init(w, depth, msg);
    if (s != PV_OK) return s;
    for (int i = 0; i < w->n; i++) {
        if (!(w->data[i] = pvc_malloc_aligned((size_t)numel(&w->spec[i]) * sizeof(float)))) {
            pvm_hamer_wset_free(w);
            return pvc_fail(msg, PV_ENOMEM, "out of memory generating hamer weights (%s)", "tensors");
        }
        fill(&w->spec[i], seed, w->data[i]);
    }
    if ((s = pvm_hamer_mano_alloc(&w->mano)) != PV_OK) { pvm_hamer_wset_free(w); return pvc_fail(msg, s, "out of memory for the MANO template"); }
    pvm_hamer_mano_synth(seed, &w->mano);
    snprintf(w->kind, sizeof w->kind, "generated");
    return PV_OK;
}

/* ---- file --------------------------------------------------------------------------------- */
static pv_status read_f32(const pvio_st *st, const char *name, int rank, const int64_t *dims, float *dst, pvc_msg *msg)
{
    const pvio_st_entry *e;
    pv_status s = pvio_st_expect(st, name, rank, dims, &e, msg);
    if (s == PV_OK) s = pvio_st_read_f32(st, e, dst, msg);
    if (s != PV_OK) return s;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(dst[i])) return pvc_fail(msg, PV_EFORMAT, "tensor '%s': value %lld is %g (weights must be finite)", name, (long long)i, (double)dst[i]);
    return PV_OK;
}

static pv_status load_mano(const pvio_st *st, pvm_hamer_mano *m, pvc_msg *msg)
{
    pv_status s = pvm_hamer_mano_alloc(m);
    if (s != PV_OK) return pvc_fail(msg, s, "out of memory for the MANO arrays");
    const int NV = PVM_HAMER_NV, NJ = PVM_HAMER_NJ;
    if ((s = read_f32(st, "mano.v_template", D2(NV, 3), m->v_template, msg)) != PV_OK) return s;
    if ((s = read_f32(st, "mano.shapedirs", D3(NV, 3, PVM_HAMER_NBETAS), m->shapedirs, msg)) != PV_OK) return s;
    if ((s = read_f32(st, "mano.posedirs", D3(NV, 3, PVM_HAMER_NPOSEDIRS), m->posedirs, msg)) != PV_OK) return s;
    if ((s = read_f32(st, "mano.J_regressor", D2(NJ, NV), m->J_regressor, msg)) != PV_OK) return s;
    if ((s = read_f32(st, "mano.weights", D2(NV, NJ), m->weights, msg)) != PV_OK) return s;
    const pvio_st_entry *e;
    if ((s = pvio_st_expect(st, "mano.faces", D2(PVM_HAMER_NF, 3), &e, msg)) != PV_OK) return s;
    if ((s = pvio_st_read_i32(st, e, m->faces, msg)) != PV_OK) return s;
    if ((s = pvio_st_expect(st, "mano.parents", D1(NJ), &e, msg)) != PV_OK) return s;
    if ((s = pvio_st_read_i32(st, e, m->parents, msg)) != PV_OK) return s;
    return pvm_hamer_mano_check(m, msg);
}

pv_status pvm_hamer_wset_load(const char *path, pvm_hamer_wset *w, pvc_msg *msg)
{
    memset(w, 0, sizeof *w);
    pvio_st st;
    pv_status s = pvio_st_open(path, &st, msg);
    if (s != PV_OK) return s;
    const char *fmt = pvio_st_meta(&st, "format"), *kind = pvio_st_meta(&st, "weights"), *md = pvio_st_meta(&st, "depth");
    if (fmt && strcmp(fmt, "perceive-hamer")) {
        s = pvc_fail(msg, PV_EFORMAT, "%s: metadata format is '%s', not 'perceive-hamer' (write it with tools/convert/hamer.py)", path, fmt);
        goto done;
    }
    /* the depth is the count of blocks 0, 1, ... present */
    int depth = 0;
    for (; depth < 64; depth++) {
        char name[64];
        snprintf(name, sizeof name, "backbone.blocks.%d.norm1.weight", depth);
        if (!pvio_st_find(&st, name)) break;
    }
    if (depth == 0 || depth > PVM_HAMER_DEPTH) {
        s = pvc_fail(msg, PV_EFORMAT, "%s: %d ViT blocks found (tensor backbone.blocks.N.norm1.weight for N = 0..%d; want %d)", path,
                     depth, PVM_HAMER_DEPTH - 1, PVM_HAMER_DEPTH);
        goto done;
    }
    if (md && atoi(md) != depth) {
        s = pvc_fail(msg, PV_EFORMAT, "%s: metadata depth %s, but blocks 0..%d are present", path, md, depth - 1);
        goto done;
    }
    if (kind && !strcmp(kind, "release") && depth != PVM_HAMER_DEPTH) {
        s = pvc_fail(msg, PV_EFORMAT, "%s: a release file with %d ViT blocks (want %d)", path, depth, PVM_HAMER_DEPTH);
        goto done;
    }
    if ((s = wset_init(w, depth, msg)) != PV_OK) goto done;
    for (int i = 0; i < w->n && s == PV_OK; i++) {
        const pvm_hamer_wspec *sp = &w->spec[i];
        if (!(w->data[i] = pvc_malloc_aligned((size_t)numel(sp) * sizeof(float)))) s = pvc_fail(msg, PV_ENOMEM, "out of memory reading '%s'", sp->name);
        else s = read_f32(&st, sp->name, sp->rank, sp->dims, w->data[i], msg);
    }
    if (s == PV_OK) s = load_mano(&st, &w->mano, msg);
    if (s == PV_OK) {
        /* a file perceive generated stays labelled generated wherever it is loaded from */
        snprintf(w->kind, sizeof w->kind, "%s", kind && !strcmp(kind, "release") ? "release" : kind && !strcmp(kind, "generated") ? "generated" : "dir");
        const char *a = pvio_st_meta(&st, "hamer_ckpt_sha256"), *b = pvio_st_meta(&st, "mano_sha256");
        snprintf(w->ckpt_sha256, sizeof w->ckpt_sha256, "%s", a ? a : "");
        snprintf(w->mano_sha256, sizeof w->mano_sha256, "%s", b ? b : "");
    }
done:
    pvio_st_close(&st);
    if (s != PV_OK) {
        pvm_hamer_wset_free(w);
        char m2[PVC_MSG_LEN];
        snprintf(m2, sizeof m2, "%s", msg->text);
        if (!strstr(m2, path)) return pvc_fail(msg, s, "%.200s: %.300s", path, m2);
    }
    return s;
}

pv_status pvm_hamer_wset_write(const pvm_hamer_wset *w, const char *path, const char *weights_kind, pvc_msg *msg)
{
    int nt = w->n + 7;
    pvc_tensor *t = pvc_calloc((size_t)nt, sizeof *t);
    if (!t) return pvc_fail(msg, PV_ENOMEM, "out of memory writing '%s'", path);
    int k = 0;
    for (int i = 0; i < w->n; i++) {
        if (!w->data[i]) { pvc_free(t); return pvc_fail(msg, PV_EINTERNAL, "tensor '%s' was taken before writing", w->spec[i].name); }
        t[k] = (pvc_tensor){ .name = w->spec[i].name, .dtype = PV_F32, .rank = w->spec[i].rank, .data = w->data[i] };
        memcpy(t[k].dims, w->spec[i].dims, sizeof w->spec[i].dims);
        k++;
    }
    const pvm_hamer_mano *m = &w->mano;
    const int NV = PVM_HAMER_NV, NJ = PVM_HAMER_NJ;
    t[k++] = (pvc_tensor){ .name = "mano.v_template", .dtype = PV_F32, .rank = 2, .dims = { NV, 3 }, .data = m->v_template };
    t[k++] = (pvc_tensor){ .name = "mano.shapedirs", .dtype = PV_F32, .rank = 3, .dims = { NV, 3, PVM_HAMER_NBETAS }, .data = m->shapedirs };
    t[k++] = (pvc_tensor){ .name = "mano.posedirs", .dtype = PV_F32, .rank = 3, .dims = { NV, 3, PVM_HAMER_NPOSEDIRS }, .data = m->posedirs };
    t[k++] = (pvc_tensor){ .name = "mano.J_regressor", .dtype = PV_F32, .rank = 2, .dims = { NJ, NV }, .data = m->J_regressor };
    t[k++] = (pvc_tensor){ .name = "mano.weights", .dtype = PV_F32, .rank = 2, .dims = { NV, NJ }, .data = m->weights };
    t[k++] = (pvc_tensor){ .name = "mano.faces", .dtype = PV_I32, .rank = 2, .dims = { PVM_HAMER_NF, 3 }, .data = m->faces };
    t[k++] = (pvc_tensor){ .name = "mano.parents", .dtype = PV_I32, .rank = 1, .dims = { NJ }, .data = (void *)m->parents };
    char depth[16];
    snprintf(depth, sizeof depth, "%d", w->depth);
    const char *keys[] = { "format", "format_version", "weights", "depth", "note" };
    const char *vals[] = { "perceive-hamer", "1", weights_kind, depth,
                           !strcmp(weights_kind, "generated") ? "seeded random weights and a synthetic MANO-shaped template: not a trained model, not MANO" : "" };
    pv_status s = pvio_st_write_file(path, t, k, keys, vals, 5, msg);
    pvc_free(t);
    return s;
}
