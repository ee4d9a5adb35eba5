/* hamer net: the regressor graph, its plans and its runs (net.h). */
#include "models/hamer/net.h"
#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct pvm_hamer_net {
    pvg_graph *g;
    pvg_plan  *plan[PVM_HAMER_MAX_BATCH + 1];   /* by batch size */
    int        out_v[5];
};

/* ---- a small graph builder: errors stick in b->s, so calls chain without checks ---------- */
typedef struct nb {
    pvg_graph      *g;
    pvm_hamer_wset *w;
    pv_status       s;
    pvc_msg        *msg;
    int             tmp;
} nb;

typedef struct nattr { const char *name; pvg_attr_type type; int64_t i; float f; const int64_t *ints; int n; const char *s; } nattr;
#define A_INT(nm, v)       { nm, PVG_ATTR_INT, v, 0, NULL, 0, NULL }
#define A_FLOAT(nm, v)     { nm, PVG_ATTR_FLOAT, 0, v, NULL, 0, NULL }
#define A_INTS(nm, ...)    { nm, PVG_ATTR_INTS, 0, 0, (const int64_t[]){ __VA_ARGS__ }, (int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), NULL }

static bool ok(nb *b) { return b->s == PV_OK; }
static int fail(nb *b, pv_status s, const char *what)
{
    if (b->s == PV_OK) b->s = pvc_fail(b->msg, s, "hamer net: %s", what);
    return -1;
}

/* A constant value owning data (pvc_malloc_aligned'ed; freed here on failure). */
static int cst(nb *b, const char *name, pv_dtype t, int rank, const int64_t *dims, void *data)
{
    if (!ok(b) || !data) { pvc_free_aligned(data); return ok(b) ? fail(b, PV_ENOMEM, "out of memory") : -1; }
    int v = pvg_value_get(b->g, name);
    if (v < 0) { pvc_free_aligned(data); return fail(b, PV_ENOMEM, "out of memory"); }
    pvg_value *val = &b->g->values[v];
    memset(&val->decl, 0, sizeof val->decl);
    val->decl.dtype = t;
    val->decl.rank = rank;
    memcpy(val->decl.dims, dims, (size_t)rank * sizeof *dims);
    val->data = data;
    val->is_const = true;
    return v;
}

static int shape(nb *b, int n, const int64_t *dims)
{
    char name[32];
    snprintf(name, sizeof name, "shape%d", b->tmp++);
    int64_t *d = pvc_malloc_aligned((size_t)n * sizeof *d);
    if (d) memcpy(d, dims, (size_t)n * sizeof *d);
    return cst(b, name, PV_I64, 1, (const int64_t[]){ n }, d);
}
#define SHAPE(b, ...) shape(b, (int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), (const int64_t[]){ __VA_ARGS__ })

/* The weight tensor name of the table, as a constant of the given shape. */
static int weight(nb *b, const char *name)
{
    if (!ok(b)) return -1;
    for (int i = 0; i < b->w->n; i++) {
        const pvm_hamer_wspec *sp = &b->w->spec[i];
        if (strcmp(sp->name, name)) continue;
        float *d = pvm_hamer_wset_take(b->w, name);
        if (!d) return fail(b, PV_EINTERNAL, "a weight was bound twice");
        return cst(b, name, PV_F32, sp->rank, sp->dims, d);
    }
    char m[160];
    snprintf(m, sizeof m, "no tensor '%.100s' in the weight table", name);
    return fail(b, PV_EINTERNAL, m);
}

static int wfmt(nb *b, const char *fmt, int i, const char *suffix)
{
    char name[160], base[96];
    snprintf(base, sizeof base, fmt, i);
    if ((size_t)snprintf(name, sizeof name, "%s%s", base, suffix) >= sizeof name) return fail(b, PV_EINTERNAL, "weight name too long");
    return weight(b, name);
}

/* One node with nout fresh outputs (returned in outs; the first also as the result). */
static int node(nb *b, const char *op, const char *domain, int nin, const int *in, int nout, int *outs, const nattr *attrs, int nattrs)
{
    if (!ok(b)) return -1;
    for (int i = 0; i < nin; i++) if (in[i] < 0) return fail(b, PV_EINTERNAL, "a node input is missing");
    char name[32];
    snprintf(name, sizeof name, "%s_%d", op, b->g->nnodes);
    pvg_node *n;
    if (pvg_node_add(b->g, name, op, domain, nin, nout, &n) != PV_OK) return fail(b, PV_ENOMEM, "out of memory");
    int ni = b->g->nnodes - 1;
    for (int i = 0; i < nin; i++) n->in[i] = in[i];
    if (nattrs) {
        if (!(n->attrs = pvc_calloc((size_t)nattrs, sizeof *n->attrs))) return fail(b, PV_ENOMEM, "out of memory");
        n->nattrs = nattrs;
        for (int i = 0; i < nattrs; i++) {
            pvg_attr *a = &n->attrs[i];
            a->name = pvc_strdup(attrs[i].name);
            a->type = attrs[i].type;
            a->i = attrs[i].i;
            a->f = attrs[i].f;
            if (!a->name) return fail(b, PV_ENOMEM, "out of memory");
            if (attrs[i].type == PVG_ATTR_INTS) {
                if (!(a->ints = pvc_malloc((size_t)attrs[i].n * sizeof *a->ints))) return fail(b, PV_ENOMEM, "out of memory");
                memcpy(a->ints, attrs[i].ints, (size_t)attrs[i].n * sizeof *a->ints);
                a->n = attrs[i].n;
            }
        }
    }
    int first = -1;
    for (int o = 0; o < nout; o++) {
        char vn[32];
        snprintf(vn, sizeof vn, "v%d", b->tmp++);
        int v = pvg_value_get(b->g, vn);
        if (v < 0) return fail(b, PV_ENOMEM, "out of memory");
        n = &b->g->nodes[ni];        /* value_get may not move nodes, but keep it obvious */
        n->out[o] = v;
        b->g->values[v].producer = ni;
        if (outs) outs[o] = v;
        if (o == 0) first = v;
    }
    return first;
}

static int op2(nb *b, const char *op, int x, int y) { return node(b, op, "", 2, (const int[]){ x, y }, 1, NULL, NULL, 0); }
static int reshape(nb *b, int x, int s) { return op2(b, "Reshape", x, s); }
static int transpose(nb *b, int x, const nattr *perm) { return node(b, "Transpose", "", 1, &x, 1, NULL, perm, 1); }
static int gelu(nb *b, int x) { return node(b, "Gelu", "perceive", 1, &x, 1, NULL, NULL, 0); }

static int layernorm(nb *b, int x, int w, int bias, float eps)
{
    nattr a[] = { A_INT("axis", -1), A_FLOAT("epsilon", eps) };
    return node(b, "LayerNormalization", "", 3, (const int[]){ x, w, bias }, 1, NULL, a, 2);
}

/* x [M, K] times W^T ([N, K], PyTorch's layout) + bias [N] (bias < 0: none). */
static int linear(nb *b, int x, int w, int bias)
{
    nattr a[] = { A_INT("transB", 1) };
    if (bias < 0) return node(b, "Gemm", "", 2, (const int[]){ x, w }, 1, NULL, a, 1);
    return node(b, "Gemm", "", 3, (const int[]){ x, w, bias }, 1, NULL, a, 1);
}

static int attention(nb *b, int q, int k, int v, float scale)
{
    nattr a[] = { A_FLOAT("scale", scale) };
    return node(b, "Attention", "perceive", 3, (const int[]){ q, k, v }, 1, NULL, a, 1);
}

/* ---- the network -------------------------------------------------------------------------- */
static const char *const VB = "backbone.blocks.%d";
static const char *const DL = "mano_head.transformer.transformer.layers.%d";

static int backbone(nb *b, int image)
{
    /* patch embedding + (pos[1:] + pos[0]) folded into one [192, 1280] table */
    nattr conv_a[] = { A_INTS("kernel_shape", 16, 16), A_INTS("strides", 16, 16), A_INTS("pads", 2, 2, 2, 2) };
    int x = node(b, "Conv", "", 3, (const int[]){ image, weight(b, "backbone.patch_embed.proj.weight"), weight(b, "backbone.patch_embed.proj.bias") },
                 1, NULL, conv_a, 3);
    x = reshape(b, x, SHAPE(b, -1, 1280, 192));
    nattr p021[] = { A_INTS("perm", 0, 2, 1) };
    x = transpose(b, x, p021);
    float *pos = pvm_hamer_wset_take(b->w, "backbone.pos_embed");
    float *pt = pvc_malloc_aligned(192 * 1280 * sizeof *pt);
    if (pos && pt)
        for (int n = 0; n < 192; n++)
            for (int c = 0; c < 1280; c++) pt[n * 1280 + c] = pos[(1 + n) * 1280 + c] + pos[c];
    pvc_free_aligned(pos);
    if (!pos) { pvc_free_aligned(pt); return fail(b, PV_EINTERNAL, "backbone.pos_embed missing"); }
    x = op2(b, "Add", x, cst(b, "pos_table", PV_F32, 2, (const int64_t[]){ 192, 1280 }, pt));
    x = reshape(b, x, SHAPE(b, -1, 1280));
    const float scale = 1.0f / sqrtf(80.0f);
    for (int i = 0; i < b->w->depth && ok(b); i++) {
        int h = layernorm(b, x, wfmt(b, VB, i, ".norm1.weight"), wfmt(b, VB, i, ".norm1.bias"), 1e-6f);
        int qkv = linear(b, h, wfmt(b, VB, i, ".attn.qkv.weight"), wfmt(b, VB, i, ".attn.qkv.bias"));
        qkv = reshape(b, qkv, SHAPE(b, -1, 192, 3, 16, 80));
        nattr p[] = { A_INTS("perm", 2, 0, 3, 1, 4) };
        qkv = transpose(b, qkv, p);                              /* [3, B, 16, 192, 80] */
        int q3[3];
        node(b, "Split", "", 1, &qkv, 3, q3, (const nattr[]){ A_INT("axis", 0) }, 1);
        int a = attention(b, q3[0], q3[1], q3[2], scale);        /* [1, B, 16, 192, 80] */
        nattr p2[] = { A_INTS("perm", 0, 1, 3, 2, 4) };
        a = reshape(b, transpose(b, a, p2), SHAPE(b, -1, 1280));
        x = op2(b, "Add", x, linear(b, a, wfmt(b, VB, i, ".attn.proj.weight"), wfmt(b, VB, i, ".attn.proj.bias")));
        h = layernorm(b, x, wfmt(b, VB, i, ".norm2.weight"), wfmt(b, VB, i, ".norm2.bias"), 1e-6f);
        h = gelu(b, linear(b, h, wfmt(b, VB, i, ".mlp.fc1.weight"), wfmt(b, VB, i, ".mlp.fc1.bias")));
        x = op2(b, "Add", x, linear(b, h, wfmt(b, VB, i, ".mlp.fc2.weight"), wfmt(b, VB, i, ".mlp.fc2.bias")));
    }
    return layernorm(b, x, weight(b, "backbone.last_norm.weight"), weight(b, "backbone.last_norm.bias"), 1e-6f);
}

static int head(nb *b, int ctx, int *pose, int *betas, int *cam)
{
    float *tb = pvm_hamer_wset_take(b->w, "mano_head.transformer.to_token_embedding.bias");
    float *pe = pvm_hamer_wset_take(b->w, "mano_head.transformer.pos_embedding");
    pvc_free_aligned(pvm_hamer_wset_take(b->w, "mano_head.transformer.to_token_embedding.weight"));   /* times the 0 input */
    float *x0 = pvc_malloc_aligned(1024 * sizeof *x0);
    if (tb && pe && x0) for (int c = 0; c < 1024; c++) x0[c] = tb[c] + pe[c];
    pvc_free_aligned(tb);
    pvc_free_aligned(pe);
    if (!tb || !pe) { pvc_free_aligned(x0); return fail(b, PV_EINTERNAL, "token embedding missing"); }
    int x = cst(b, "x0", PV_F32, 2, (const int64_t[]){ 1, 1024 }, x0);
    for (int l = 0; l < PVM_HAMER_DEC_DEPTH && ok(b); l++) {
        /* self-attention over the single token: to_out(W_v LN_a x); W_v = rows 1024..1535 of to_qkv */
        char name[128], base[96];
        snprintf(base, sizeof base, DL, l);
        snprintf(name, sizeof name, "%s.0.fn.to_qkv.weight", base);
        float *qkv = pvm_hamer_wset_take(b->w, name);
        float *wv = pvc_malloc_aligned(512 * 1024 * sizeof *wv);
        if (qkv && wv) memcpy(wv, qkv + 1024 * 1024, 512 * 1024 * sizeof *wv);
        pvc_free_aligned(qkv);
        if (!qkv) { pvc_free_aligned(wv); return fail(b, PV_EINTERNAL, "to_qkv missing"); }
        snprintf(name, sizeof name, "%s.0.fn.W_v", base);
        int h = layernorm(b, x, wfmt(b, DL, l, ".0.norm.weight"), wfmt(b, DL, l, ".0.norm.bias"), 1e-5f);
        h = linear(b, h, cst(b, name, PV_F32, 2, (const int64_t[]){ 512, 1024 }, wv), -1);
        x = op2(b, "Add", x, linear(b, h, wfmt(b, DL, l, ".0.fn.to_out.0.weight"), wfmt(b, DL, l, ".0.fn.to_out.0.bias")));
        /* cross-attention to the 192 tokens */
        h = layernorm(b, x, wfmt(b, DL, l, ".1.norm.weight"), wfmt(b, DL, l, ".1.norm.bias"), 1e-5f);
        int q = reshape(b, linear(b, h, wfmt(b, DL, l, ".1.fn.to_q.weight"), -1), SHAPE(b, 1, -1, 8, 1, 64));
        int kv = reshape(b, linear(b, ctx, wfmt(b, DL, l, ".1.fn.to_kv.weight"), -1), SHAPE(b, -1, 192, 2, 8, 64));
        nattr p[] = { A_INTS("perm", 2, 0, 3, 1, 4) };
        kv = transpose(b, kv, p);                                /* [2, B, 8, 192, 64] */
        int k2[2];
        node(b, "Split", "", 1, &kv, 2, k2, (const nattr[]){ A_INT("axis", 0) }, 1);
        int a = reshape(b, attention(b, q, k2[0], k2[1], 0.125f), SHAPE(b, -1, 512));
        x = op2(b, "Add", x, linear(b, a, wfmt(b, DL, l, ".1.fn.to_out.0.weight"), wfmt(b, DL, l, ".1.fn.to_out.0.bias")));
        /* feed-forward */
        h = layernorm(b, x, wfmt(b, DL, l, ".2.norm.weight"), wfmt(b, DL, l, ".2.norm.bias"), 1e-5f);
        h = gelu(b, linear(b, h, wfmt(b, DL, l, ".2.fn.net.0.weight"), wfmt(b, DL, l, ".2.fn.net.0.bias")));
        x = op2(b, "Add", x, linear(b, h, wfmt(b, DL, l, ".2.fn.net.3.weight"), wfmt(b, DL, l, ".2.fn.net.3.bias")));
    }
    *pose = op2(b, "Add", linear(b, x, weight(b, "mano_head.decpose.weight"), weight(b, "mano_head.decpose.bias")),
                weight(b, "mano_head.init_hand_pose"));
    *betas = op2(b, "Add", linear(b, x, weight(b, "mano_head.decshape.weight"), weight(b, "mano_head.decshape.bias")),
                 weight(b, "mano_head.init_betas"));
    *cam = op2(b, "Add", linear(b, x, weight(b, "mano_head.deccam.weight"), weight(b, "mano_head.deccam.bias")),
               weight(b, "mano_head.init_cam"));
    return x;
}

void pvm_hamer_net_free(pvm_hamer_net *n)
{
    if (!n) return;
    for (int i = 0; i <= PVM_HAMER_MAX_BATCH; i++) pvg_plan_free(n->plan[i]);
    pvg_graph_free(n->g);
    pvc_free(n);
}

pv_status pvm_hamer_net_create(pvm_hamer_wset *w, pvc_precision prec, int threads, pvm_hamer_net **out, pvc_msg *msg)
{
    *out = NULL;
    pvm_hamer_net *n = pvc_calloc(1, sizeof *n);
    if (!n) return pvc_fail(msg, PV_ENOMEM, "out of memory for the hamer network");
    nb b = { .w = w, .s = PV_OK, .msg = msg };
    if (pvg_graph_create(&n->g) != PV_OK) { pvc_free(n); return pvc_fail(msg, PV_ENOMEM, "out of memory for the hamer graph"); }
    b.g = n->g;
    pvg_graph *g = n->g;
    g->threads = threads;
    g->precision = prec;
    g->share_packed = true;
    int image = pvg_value_get(g, "image");
    if (image < 0) fail(&b, PV_ENOMEM, "out of memory");
    else {
        g->values[image].is_input = true;
        g->values[image].decl = (pvc_tensor){ .dtype = PV_F32, .rank = 4, .dims = { -1, 3, PVM_HAMER_H_IN, PVM_HAMER_W_IN } };
        if (!(g->inputs = pvc_calloc(1, sizeof *g->inputs))) fail(&b, PV_ENOMEM, "out of memory");
        else g->inputs[g->ninputs++] = image;
    }
    int feats = backbone(&b, image);
    int tokens = reshape(&b, feats, SHAPE(&b, -1, 192, 1280));
    int pose = -1, betas = -1, cam = -1;
    int token = head(&b, feats, &pose, &betas, &cam);
    int outs[5] = { tokens, token, pose, betas, cam };
    if (ok(&b)) {
        if (!(g->outputs = pvc_calloc(5, sizeof *g->outputs))) fail(&b, PV_ENOMEM, "out of memory");
        for (int i = 0; ok(&b) && i < 5; i++) {
            g->outputs[g->noutputs++] = outs[i];
            g->values[outs[i]].is_output = true;
            n->out_v[i] = outs[i];
        }
    }
    pv_status s = b.s;
    if (s == PV_OK && (s = pvg_graph_bind_ops(g)) != PV_OK) pvc_fail(msg, s, "hamer net: %s", g->msg.text);
    for (int B = 1; s == PV_OK && B <= PVM_HAMER_MAX_BATCH; B++) {
        pvc_tensor in = { .dtype = PV_F32, .rank = 4, .dims = { B, 3, PVM_HAMER_H_IN, PVM_HAMER_W_IN } };
        if ((s = pvg_plan_create(g, &in, &n->plan[B])) != PV_OK) pvc_fail(msg, s, "hamer net: planning batch %d: %s", B, g->msg.text);
    }
    if (s != PV_OK) { pvm_hamer_net_free(n); return s; }
    pvg_graph_drop_consumed(g);   /* the weights now live in the shared packed copies */
    *out = n;
    return PV_OK;
}

pv_status pvm_hamer_net_run(pvm_hamer_net *n, const float *x, int B, pvc_pool *pool, pvm_hamer_net_out *out, pvc_msg *msg)
{
    if (B < 1 || B > PVM_HAMER_MAX_BATCH) return pvc_fail(msg, PV_EINPUT, "hamer: batch %d is not in 1..%d", B, PVM_HAMER_MAX_BATCH);
    pvc_tensor in = { .dtype = PV_F32, .rank = 4, .dims = { B, 3, PVM_HAMER_H_IN, PVM_HAMER_W_IN }, .data = (void *)x };
    pvc_tensor o[5];
    pv_status s = pvg_plan_run(n->plan[B], &in, pool, o);
    if (s != PV_OK) return pvc_fail(msg, s, "hamer net: %s", n->g->msg.text);
    out->tokens = o[0].data;
    out->token = o[1].data;
    out->pose96 = o[2].data;
    out->betas = o[3].data;
    out->cam = o[4].data;
    return PV_OK;
}

size_t pvm_hamer_net_arena_bytes(const pvm_hamer_net *n)
{
    pvg_plan_info info;
    pvg_plan_info_get(n->plan[PVM_HAMER_MAX_BATCH], &info);
    return info.arena_bytes + info.ws_bytes;
}

int pvm_hamer_net_nodes(const pvm_hamer_net *n) { return n->g->nnodes; }
