/* `perceive onnx fill`: completes a structure-only ONNX file (initializers and large Constant
 * tensors with names, shapes and dtypes but no data) with seeded random values, scaled so
 * activations neither vanish nor explode: weights U(-a, a) with a = sqrt(3 / fan_in) (unit
 * gain), biases and shifts small, normalization scales near 1, variances in [0.5, 1.5].
 * Each tensor's stream is seeded from (seed, tensor name), so the values do not depend on the
 * order of the file. A tensor whose doc_string reads "fill=uniform:LO:HI" takes that range
 * instead (generators that know the architecture, e.g. tools/gen/bevfusion_gen.py, set it). */
#include "graph/onnx.h"
#include "onnx.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void *pb_alloc(void *ud, size_t n) { (void)ud; return pvc_malloc(n); }
static void pb_free(void *ud, void *p) { (void)ud; pvc_free(p); }
static ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, NULL };

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s, float lo, float hi)
{
    float u = (float)(splitmix(s) >> 40) * (1.0f / 16777216.0f);   /* [0, 1) */
    return lo + (hi - lo) * u;
}

typedef struct { float lo, hi; } range;

static bool has_data(const Onnx__TensorProto *t)
{
    return t->has_raw_data || t->n_float_data || t->n_int32_data || t->n_int64_data ||
           t->n_double_data || t->n_uint64_data || t->n_string_data ||
           (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name)) return n->attribute[i]->i;
    return def;
}

static int64_t prod(const int64_t *d, size_t from, size_t n)
{
    int64_t p = 1;
    for (size_t i = from; i < n; i++) p *= d[i] > 0 ? d[i] : 1;
    return p;
}

/* The value range for tensor `name` of dims d from the first node that reads it (directly,
 * or through one Identity/Cast/Reshape/Transpose/Unsqueeze hop). */
static range pick_range(const Onnx__GraphProto *g, const char *name, const int64_t *d, size_t nd)
{
    for (int hop = 0; hop < 2; hop++) {
        for (size_t i = 0; i < g->n_node; i++) {
            const Onnx__NodeProto *n = g->node[i];
            for (size_t k = 0; k < n->n_input; k++) {
                if (strcmp(n->input[k], name)) continue;
                const char *op = n->op_type;
                float a;
                if (!strcmp(op, "Conv") && k == 1 && nd >= 2) { a = sqrtf(3.0f / (float)prod(d, 1, nd)); return (range){ -a, a }; }
                if (!strcmp(op, "ConvTranspose") && k == 1 && nd >= 2) {
                    a = sqrtf(3.0f / (float)(d[0] > 0 ? d[0] : 1)); return (range){ -a, a };
                }
                if (!strcmp(op, "Gemm") && k == 1 && nd == 2) {
                    a = sqrtf(3.0f / (float)(attr_int(n, "transB", 0) ? d[1] : d[0])); return (range){ -a, a };
                }
                if (!strcmp(op, "MatMul") && nd >= 2) {
                    a = sqrtf(3.0f / (float)(k == 1 ? d[nd - 2] : d[nd - 1])); return (range){ -a, a };
                }
                if (!strcmp(op, "MatMul") && nd == 1) { a = sqrtf(3.0f / (float)d[0]); return (range){ -a, a }; }
                if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "Gemm")) && k == 2) return (range){ -0.05f, 0.05f };
                if (!strcmp(op, "BatchNormalization")) {
                    if (k == 1) return (range){ 0.8f, 1.2f };
                    if (k == 4) return (range){ 0.5f, 1.5f };
                    return (range){ -0.1f, 0.1f };
                }
                if (!strcmp(op, "LayerNormalization") || !strcmp(op, "InstanceNormalization"))
                    return k == 1 ? (range){ 0.8f, 1.2f } : (range){ -0.1f, 0.1f };
                if (!strcmp(op, "Mul") || !strcmp(op, "Div")) return (range){ 0.5f, 1.5f };
                if (!strcmp(op, "Sqrt") || !strcmp(op, "Log") || !strcmp(op, "Pow") || !strcmp(op, "Reciprocal")) return (range){ 0.5f, 1.5f };
                if (hop == 0 && (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Reshape") ||
                                 !strcmp(op, "Transpose") || !strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze")) &&
                    n->n_output > 0) {
                    name = n->output[0];      /* follow one hop */
                    goto next_hop;
                }
                return (range){ -0.1f, 0.1f };
            }
        }
        return (range){ -0.1f, 0.1f };
    next_hop:;
    }
    return (range){ -0.1f, 0.1f };
}

typedef struct fill_ctx {
    const Onnx__GraphProto *g;
    pvg_fill_hook hook;
    void    *hook_ud;
    uint64_t seed;
    size_t   ext_threshold;
    FILE    *ext;
    const char *ext_name;
    uint64_t ext_off;
    pvg_fill_stats *st;
    pvc_msg *msg;
} fill_ctx;

/* The first node reading `name`: its op type, name and the input slot. */
static const Onnx__NodeProto *first_consumer(const Onnx__GraphProto *g, const char *name, int *slot)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (!strcmp(g->node[i]->input[k], name)) { *slot = (int)k; return g->node[i]; }
    return NULL;
}

static pv_status fill_tensor(fill_ctx *c, Onnx__TensorProto *t, const char *name, bool allow_external)
{
    if (has_data(t)) return PV_OK;
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || pvc_mul_overflow(numel, t->dims[i], &numel) || numel > ((int64_t)1 << 34))
            return pvc_fail(c->msg, PV_EFORMAT, "tensor '%s': invalid dims", name);
    }
    if (numel == 0) return PV_OK;
    size_t es;
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: es = 4; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: es = 2; break;
    default:
        return pvc_fail(c->msg, PV_EUNSUPPORTED, "tensor '%s' has no data and is not floating point (type %d): "
                        "cannot invent integer values", name, t->data_type);
    }
    size_t nb = (size_t)numel * es;
    uint8_t *buf = pvc_malloc(nb);
    if (!buf) return pvc_fail(c->msg, PV_ENOMEM, "out of memory filling '%s'", name);
    if (c->hook && es == 4) {
        int slot = -1;
        const Onnx__NodeProto *n = first_consumer(c->g, name, &slot);
        pvg_fill_site site = { name, t->dims, (int)t->n_dims, !allow_external, n ? n->op_type : "", n ? n->name : "", slot };
        if (c->hook(c->hook_ud, &site, (float *)(void *)buf)) goto filled;
    }
    range r = pick_range(c->g, name, t->dims, t->n_dims);
    if (t->doc_string && !strncmp(t->doc_string, "fill=uniform:", 13)) {
        char *end = NULL;
        float lo = strtof(t->doc_string + 13, &end), hi = lo;
        if (end && *end == ':') hi = strtof(end + 1, &end);
        if (!end || *end || !isfinite(lo) || !isfinite(hi) || lo > hi) {
            pvc_free(buf);
            return pvc_fail(c->msg, PV_EFORMAT, "tensor '%s': bad fill hint '%s' (want fill=uniform:LO:HI)",
                            name, t->doc_string);
        }
        r = (range){ lo, hi };
    }
    uint64_t s = c->seed * 0x9e3779b97f4a7c15ull;
    for (const char *p = name; *p; p++) s = (s ^ (unsigned char)*p) * 1099511628211ull;
    for (int64_t i = 0; i < numel; i++) {
        float v = uniform(&s, r.lo, r.hi);
        if (es == 4) memcpy(buf + 4 * i, &v, 4);
        else {
            uint16_t h = t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? pvc_f32_to_f16(v) : pvc_f32_to_bf16(v);
            memcpy(buf + 2 * i, &h, 2);
        }
    }
filled:
    c->st->filled++;
    c->st->elements += numel;
    if (allow_external && c->ext && nb > c->ext_threshold) {
        if (fwrite(buf, 1, nb, c->ext) != nb) { pvc_free(buf); return pvc_fail(c->msg, PV_EINPUT, "cannot write external data: %s", strerror(errno)); }
        pvc_free(buf);
        char off[32], len[32];
        snprintf(off, sizeof off, "%llu", (unsigned long long)c->ext_off);
        snprintf(len, sizeof len, "%zu", nb);
        c->ext_off += nb;
        const char *kv[3][2] = { { "location", c->ext_name }, { "offset", off }, { "length", len } };
        t->external_data = pvc_calloc(3, sizeof *t->external_data);
        if (!t->external_data) return pvc_fail(c->msg, PV_ENOMEM, "out of memory");
        for (int i = 0; i < 3; i++) {
            Onnx__StringStringEntryProto *e = pvc_malloc(sizeof *e);
            if (!e) return pvc_fail(c->msg, PV_ENOMEM, "out of memory");
            onnx__string_string_entry_proto__init(e);
            t->external_data[i] = e;
            t->n_external_data = (size_t)i + 1;
            e->key = pvc_strdup(kv[i][0]);
            e->value = pvc_strdup(kv[i][1]);
            if (!e->key || !e->value) return pvc_fail(c->msg, PV_ENOMEM, "out of memory");
        }
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        c->st->external++;
        return PV_OK;
    }
    t->has_raw_data = 1;
    t->raw_data.data = buf;
    t->raw_data.len = nb;
    return PV_OK;
}

pv_status pvg_onnx_fill(const char *in_path, const char *out_path, uint64_t seed, size_t ext_threshold,
                        pvg_fill_stats *st, pvc_msg *msg)
{
    void *buf = NULL;
    size_t len = 0;
    pv_status s = pvg_read_file(in_path, &buf, &len, msg);
    if (s != PV_OK) return s;
    s = pvg_onnx_fill_buffer(buf, len, in_path, out_path, seed, ext_threshold, st, msg);
    pvc_free(buf);
    return s;
}

pv_status pvg_onnx_fill_buffer(const void *buf, size_t len, const char *in_path, const char *out_path,
                               uint64_t seed, size_t ext_threshold, pvg_fill_stats *st, pvc_msg *msg)
{
    return pvg_onnx_fill_buffer_hook(buf, len, in_path, out_path, seed, ext_threshold, NULL, NULL, st, msg);
}

pv_status pvg_onnx_fill_buffer_hook(const void *buf, size_t len, const char *in_path, const char *out_path,
                                    uint64_t seed, size_t ext_threshold, pvg_fill_hook hook, void *hook_ud,
                                    pvg_fill_stats *st, pvc_msg *msg)
{
    pvg_fill_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    pv_status s = PV_OK;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pb_allocator, len, buf);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, &pb_allocator);
        return pvc_fail(msg, PV_EFORMAT, "%s: not a valid ONNX model", in_path);
    }
    Onnx__GraphProto *g = mp->graph;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->has_data_location && g->initializer[i]->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            onnx__model_proto__free_unpacked(mp, &pb_allocator);
            return pvc_fail(msg, PV_EUNSUPPORTED, "%s: already has external data; fill reads self-contained files", in_path);
        }
    char ext_path[4096];
    snprintf(ext_path, sizeof ext_path, "%s.data", out_path);
    const char *slash = strrchr(ext_path, '/');
    fill_ctx c = { g, hook, hook_ud, seed, ext_threshold, NULL, slash ? slash + 1 : ext_path, 0, st, msg };
    c.ext = fopen(ext_path, "wb");
    if (!c.ext) { onnx__model_proto__free_unpacked(mp, &pb_allocator); return pvc_fail(msg, PV_EINPUT, "cannot write '%s': %s", ext_path, strerror(errno)); }
    for (size_t i = 0; i < g->n_initializer && s == PV_OK; i++)
        s = fill_tensor(&c, g->initializer[i], g->initializer[i]->name ? g->initializer[i]->name : "", true);
    /* Constant nodes whose tensors were emptied: stay inline (attributes cannot be external) */
    for (size_t i = 0; i < g->n_node && s == PV_OK; i++) {
        Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_attribute && s == PV_OK; k++)
            if (n->attribute[k]->t && n->n_output > 0)
                s = fill_tensor(&c, n->attribute[k]->t, n->output[0], false);
    }
    /* the label that follows the file wherever it is loaded from */
    if (s == PV_OK) {
        Onnx__StringStringEntryProto **mpp = pvc_realloc(mp->metadata_props, (mp->n_metadata_props + 1) * sizeof *mpp);
        Onnx__StringStringEntryProto *e = pvc_malloc(sizeof *e);
        char val[160];
        snprintf(val, sizeof val, "%.120s, seed %llu", in_path, (unsigned long long)seed);
        if (mpp) mp->metadata_props = mpp;
        if (!mpp || !e) { pvc_free(e); s = pvc_fail(msg, PV_ENOMEM, "out of memory"); }
        else {
            onnx__string_string_entry_proto__init(e);
            e->key = pvc_strdup(PVG_GENERATED_KEY);
            e->value = pvc_strdup(val);
            mp->metadata_props[mp->n_metadata_props++] = e;
            if (!e->key || !e->value) s = pvc_fail(msg, PV_ENOMEM, "out of memory");
        }
    }
    bool any_ext = c.ext_off > 0;
    if (fclose(c.ext) != 0 && s == PV_OK) s = pvc_fail(msg, PV_EINPUT, "cannot write '%s'", ext_path);
    if (!any_ext) remove(ext_path);
    if (s == PV_OK) {
        size_t n = onnx__model_proto__get_packed_size(mp);
        uint8_t *out = pvc_malloc(n ? n : 1);
        if (!out) s = pvc_fail(msg, PV_ENOMEM, "out of memory packing the model");
        else {
            onnx__model_proto__pack(mp, out);
            FILE *f = fopen(out_path, "wb");
            if (!f || fwrite(out, 1, n, f) != n) s = pvc_fail(msg, PV_EINPUT, "cannot write '%s': %s", out_path, strerror(errno));
            if (f && fclose(f) != 0 && s == PV_OK) s = pvc_fail(msg, PV_EINPUT, "cannot write '%s'", out_path);
            pvc_free(out);
        }
    }
    onnx__model_proto__free_unpacked(mp, &pb_allocator);
    return s;
}
