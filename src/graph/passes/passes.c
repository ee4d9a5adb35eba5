/* Load-time passes: constant folding (nodes whose inputs are all initializers), BatchNorm
 * folding into the producing Conv / ConvTranspose (group 1) / Gemm, Transpose pairs composed
 * into one, attention fusion
 * (passes/attention.c), activation fusion into ops that apply an epilogue (PVG_OP_FUSE_ACT).
 * Each keeps the graph's results unchanged up to float rounding. */
#include "graph/graph.h"
#include "graph/passes/uses.h"
#include "graph/plan_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Evaluates every node whose inputs are all initializers; outputs become initializers. */
static pv_status fold_constants(pvg_graph *g, int *folded)
{
    int nn = g->nnodes, norder = 0;
    int *order = pvc_calloc((size_t)nn + 1, sizeof *order);
    unsigned char *params = pvc_malloc(PVG_PARAMS_BYTES);
    pvc_tensor *in = NULL, *out = NULL;
    int maxio = 1;
    for (int i = 0; i < nn; i++) maxio = PVC_MAX(maxio, PVC_MAX(g->nodes[i].nin, g->nodes[i].nout));
    in = pvc_calloc((size_t)maxio, sizeof *in);
    out = pvc_calloc((size_t)maxio, sizeof *out);
    pv_status s = PV_OK;
    if (!order || !params || !in || !out) { s = pvc_fail(&g->msg, PV_ENOMEM, "out of memory folding constants"); goto done; }
    if ((s = pvg_graph_toposort(g, order, &norder)) != PV_OK) goto done;
    for (int t = 0; t < norder; t++) {
        pvg_node *n = &g->nodes[order[t]];
        if (n->op->flags & PVG_OP_NOFOLD) continue;
        /* a Constant's tensor becomes the value's data as it is (no copy, any size: the file's
         * large constants are held once and read in place, not copied into the arena per run) */
        pvg_attr *ca = n->nattrs == 1 ? &n->attrs[0] : NULL;
        if (!strcmp(n->op_type, "Constant") && !n->domain[0] && ca && ca->type == PVG_ATTR_TENSOR && !strcmp(ca->name, "value") &&
            ca->t.data && n->nout == 1 && n->out[0] >= 0 && (unsigned)ca->t.dtype < PV_DTYPE_COUNT && ca->t.rank >= 0 &&
            ca->t.rank <= PV_MAX_RANK && pvc_tensor_is_contiguous(&ca->t)) {
            pvg_value *v = &g->values[n->out[0]];
            memset(&v->decl, 0, sizeof v->decl);
            v->decl.dtype = ca->t.dtype;
            v->decl.rank = ca->t.rank;
            for (int k = 0; k < ca->t.rank; k++) v->decl.dims[k] = ca->t.dims[k];
            v->data = ca->t.data;
            ca->t.data = NULL;
            ca->used = true;
            v->is_const = true;
            v->producer = -1;
            n->dead = true;
            (*folded)++;
            continue;
        }
        bool ok = true;
        for (int k = 0; k < n->nin && ok; k++) {
            if (n->in[k] < 0) { memset(&in[k], 0, sizeof in[k]); in[k].rank = -1; continue; }
            const pvg_value *v = &g->values[n->in[k]];
            if (!v->is_const) ok = false;
            else { in[k] = v->decl; in[k].data = v->data; }
        }
        if (!ok) continue;
        size_t ws = 0;
        if ((s = pvg_node_prepare(g, n, in, out, params, &ws, &g->msg)) != PV_OK) goto done;
        size_t bytes = 0;
        for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) bytes += pvc_nbytes(&out[k]);
        if (bytes > PVG_FOLD_LIMIT) { pvg_node_release(n, params); continue; }
        void **owned = NULL;
        int nowned = 0;
        s = pvg_node_eval(n, in, out, params, ws, NULL, &owned, &nowned, &g->msg);
        pvg_node_release(n, params);
        if (s != PV_OK) { for (int i = 0; i < nowned; i++) pvc_free_aligned(owned[i]); pvc_free(owned); goto done; }
        /* each output gets its own copy so values own their data independently */
        for (int k = 0; k < n->nout; k++) {
            if (n->out[k] < 0) continue;
            pvg_value *v = &g->values[n->out[k]];
            size_t nb = pvc_nbytes(&out[k]);
            void *d = pvc_malloc_aligned(nb ? nb : 1);
            if (!d) { s = pvc_fail(&g->msg, PV_ENOMEM, "out of memory folding constants"); break; }
            if (nb) memcpy(d, out[k].data, nb);
            v->decl = out[k];
            v->decl.data = NULL;
            v->data = d;
            v->is_const = true;
            v->producer = -1;
        }
        for (int i = 0; i < nowned; i++) pvc_free_aligned(owned[i]);
        pvc_free(owned);
        if (s != PV_OK) goto done;
        n->dead = true;
        (*folded)++;
    }
done:
    pvc_free(order);
    pvc_free(params);
    pvc_free(in);
    pvc_free(out);
    return s;
}

static bool const_f32(const pvg_graph *g, int v, int64_t n)
{
    return v >= 0 && g->values[v].is_const && g->values[v].decl.dtype == PV_F32 &&
           pvc_numel(&g->values[v].decl) == n;
}

static float attr_f(const pvg_node *n, const char *name, float def)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return n->attrs[i].type == PVG_ATTR_FLOAT ? n->attrs[i].f : def;
    return def;
}

static int64_t attr_i(const pvg_node *n, const char *name, int64_t def)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return n->attrs[i].type == PVG_ATTR_INT ? n->attrs[i].i : def;
    return def;
}

/* Gives node n a bias input (index 2) holding zeros of length m, if it has none. */
static pv_status ensure_bias(pvg_graph *g, pvg_node *n, int64_t m)
{
    if (n->nin >= 3 && n->in[2] >= 0) return PV_OK;
    if (n->nin < 3) {
        int *ni = pvc_realloc(n->in, 3 * sizeof *ni);
        if (!ni) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory folding BatchNormalization");
        n->in = ni;
        for (int k = n->nin; k < 3; k++) n->in[k] = -1;
        n->nin = 3;
    }
    char name[600];
    snprintf(name, sizeof name, "%s::folded_bias", n->name);
    int v = pvg_value_get(g, name);
    if (v < 0) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory folding BatchNormalization");
    pvg_value *val = &g->values[v];
    if (val->is_const || val->producer >= 0 || val->is_input)
        return pvc_fail(&g->msg, PV_EINTERNAL, "value name '%s' already taken", name);
    val->data = pvc_malloc_aligned((size_t)m * sizeof(float));
    if (!val->data) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory folding BatchNormalization");
    memset(val->data, 0, (size_t)m * sizeof(float));
    memset(&val->decl, 0, sizeof val->decl);
    val->decl.dtype = PV_F32;
    val->decl.rank = 1;
    val->decl.dims[0] = m;
    pvc_tensor_set_contiguous(&val->decl);
    val->is_const = true;
    n->in[2] = v;
    return PV_OK;
}

/* Conv/ConvTranspose/Gemm -> BatchNormalization with constant parameters: scale the weights
 * per output channel, fold mean/shift into the bias. Weights are rewritten in place only when
 * no other node reads them. */
static pv_status fold_bn(pvg_graph *g, int *count)
{
    pvg_uses u;
    pv_status s = pvg_uses_build(g, &u, "in graph passes");
    if (s != PV_OK) return s;
    const int *cons = u.n;
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *bn = &g->nodes[i];
        if (bn->dead || strcmp(bn->op_type, "BatchNormalization") || *bn->domain || bn->nin != 5) continue;
        if (attr_i(bn, "training_mode", 0) != 0) continue;
        if (attr_i(bn, "spatial", 1) != 1) continue;    /* opsets 7-8 per-element statistics */
        bool extra_out = false;
        for (int k = 1; k < bn->nout; k++) if (bn->out[k] >= 0) extra_out = true;
        if (extra_out) continue;
        int x = bn->in[0];
        if (x < 0 || g->values[x].producer < 0 || cons[x] != 1) continue;
        pvg_node *pr = &g->nodes[g->values[x].producer];
        if (*pr->domain || pr->act.kind != PVG_ACT_NONE) continue;
        int wv = pr->nin > 1 ? pr->in[1] : -1;
        if (wv < 0 || !g->values[wv].is_const || g->values[wv].decl.dtype != PV_F32 || cons[wv] != 1) continue;
        const pvc_tensor *wd = &g->values[wv].decl;
        int64_t m, inner, outer;       /* weight = outer x m x inner, channel in the middle */
        if (!strcmp(pr->op_type, "Conv")) {
            if (wd->rank < 3) continue;
            m = wd->dims[0]; outer = 1; inner = pvc_numel(wd) / (m ? m : 1);
        } else if (!strcmp(pr->op_type, "ConvTranspose")) {
            if (wd->rank < 3 || attr_i(pr, "group", 1) != 1) continue;
            m = wd->dims[1]; outer = wd->dims[0]; inner = (m > 0 && outer > 0) ? pvc_numel(wd) / (m * outer) : 0;
        } else if (!strcmp(pr->op_type, "Gemm")) {
            if (wd->rank != 2 || attr_f(pr, "alpha", 1.0f) != 1.0f || attr_f(pr, "beta", 1.0f) != 1.0f) continue;
            bool tb = attr_i(pr, "transB", 0) != 0;
            m = tb ? wd->dims[0] : wd->dims[1];
            outer = tb ? 1 : wd->dims[0]; inner = tb ? wd->dims[1] : 1;
            if (pr->nin >= 3 && pr->in[2] >= 0 && !const_f32(g, pr->in[2], m)) continue;
        } else continue;
        if (!const_f32(g, bn->in[1], m) || !const_f32(g, bn->in[2], m) || !const_f32(g, bn->in[3], m) ||
            !const_f32(g, bn->in[4], m))
            continue;
        if (pr->nin >= 3 && pr->in[2] >= 0 && (!const_f32(g, pr->in[2], m) || cons[pr->in[2]] != 1)) continue;
        if ((s = ensure_bias(g, pr, m)) != PV_OK) break;
        float eps = attr_f(bn, "epsilon", 1e-5f);
        const float *sc = g->values[bn->in[1]].data, *sh = g->values[bn->in[2]].data;
        const float *mean = g->values[bn->in[3]].data, *var = g->values[bn->in[4]].data;
        float *w = g->values[wv].data, *b = g->values[pr->in[2]].data;
        for (int64_t c = 0; c < m; c++) {
            float f = sc[c] / sqrtf(var[c] + eps);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t k = 0; k < inner; k++) w[(o * m + c) * inner + k] *= f;
            b[c] = (b[c] - mean[c]) * f + sh[c];
        }
        /* the producer now writes the BN's output */
        int y = bn->out[0];
        for (int k = 0; k < pr->nout; k++) if (pr->out[k] == x) pr->out[k] = y;
        g->values[y].producer = g->values[x].producer;
        g->values[x].producer = -1;
        bn->dead = true;
        (*count)++;
    }
    pvg_uses_free(&u);
    return s;
}

/* A perceive::Gelu of the exact (erf) form, as passes/gelu.c makes it. */
static bool gelu_erf(const pvg_node *n)
{
    if (strcmp(n->domain, "perceive") || strcmp(n->op_type, "Gelu") || n->nin != 1) return false;
    if (n->nattrs == 0) return true;
    const pvg_attr *a = &n->attrs[0];
    return n->nattrs == 1 && !strcmp(a->name, "approximate") && a->type == PVG_ATTR_STRING && a->s && !strcmp(a->s, "none");
}

/* Producer (FUSE_ACT) -> Relu / LeakyRelu / Clip(const bounds) on f32: the producer applies it.
 * The exact GELU goes into Conv only (oneDNN's gelu_erf post-op, pvk_act_apply on the other
 * paths): the conv's output is then written once instead of read and written again by a
 * separate pass, and a Conv -> GELU -> Conv chain becomes a pair the layout pass can link. */
static pv_status fuse_act(pvg_graph *g, int *count)
{
    pvg_uses u;
    pv_status s = pvg_uses_build(g, &u, "in graph passes");
    if (s != PV_OK) return s;
    const int *cons = u.n;
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *a = &g->nodes[i];
        if (a->dead || a->nin < 1 || a->nout != 1 || a->out[0] < 0) continue;
        pvg_act act = { PVG_ACT_NONE, 0, 0 };
        if (*a->domain) {
            if (!gelu_erf(a)) continue;
            act.kind = PVG_ACT_GELU;
        } else if (!strcmp(a->op_type, "Relu") && a->nattrs == 0) act.kind = PVG_ACT_RELU;
        else if (!strcmp(a->op_type, "LeakyRelu") && a->nattrs <= 1 && (a->nattrs == 0 || !strcmp(a->attrs[0].name, "alpha"))) {
            act.kind = PVG_ACT_LEAKY_RELU;
            act.alpha = attr_f(a, "alpha", 0.01f);
        } else if (!strcmp(a->op_type, "Clip") && a->nattrs == 0) {
            act.kind = PVG_ACT_CLIP;
            act.alpha = -INFINITY;
            act.beta = INFINITY;
            if (a->nin > 1 && a->in[1] >= 0) { if (!const_f32(g, a->in[1], 1)) continue; act.alpha = *(float *)g->values[a->in[1]].data; }
            if (a->nin > 2 && a->in[2] >= 0) { if (!const_f32(g, a->in[2], 1)) continue; act.beta = *(float *)g->values[a->in[2]].data; }
        } else continue;
        int x = a->in[0];
        if (x < 0 || g->values[x].producer < 0 || cons[x] != 1) continue;
        pvg_node *pr = &g->nodes[g->values[x].producer];
        if (!(pr->op->flags & PVG_OP_FUSE_ACT) || pr->act.kind != PVG_ACT_NONE || pr->out[0] != x) continue;
        if (act.kind == PVG_ACT_GELU && (*pr->domain || strcmp(pr->op_type, "Conv"))) continue;
        /* only float32 producers with constant f32 weights (T is shared by X and W, so the
         * output is f32 too): the epilogue works on f32 */
        if (pr->nin < 2 || pr->in[1] < 0 || !g->values[pr->in[1]].is_const ||
            g->values[pr->in[1]].decl.dtype != PV_F32)
            continue;
        pr->act = act;
        int y = a->out[0];
        pr->out[0] = y;
        g->values[y].producer = g->values[x].producer;
        g->values[x].producer = -1;
        a->dead = true;
        (*count)++;
    }
    pvg_uses_free(&u);
    return s;
}

/* The explicit 'perm' of a live default-domain Transpose with one input and output, else NULL. */
static pvg_attr *transpose_perm(pvg_node *n)
{
    if (n->dead || *n->domain || strcmp(n->op_type, "Transpose") || n->nin != 1 || n->nout != 1 || n->nattrs != 1)
        return NULL;
    pvg_attr *a = &n->attrs[0];
    return !strcmp(a->name, "perm") && a->type == PVG_ATTR_INTS && a->n >= 1 && a->n <= PV_MAX_RANK ? a : NULL;
}

/* Transpose(pb) of Transpose(pa) of x -> Transpose(pa[pb]) of x: one pass over the data instead
 * of two (BEVFusion's to-dense step permutes [1,180,180,2,128] twice, the first time with an
 * innermost output dim of 2, which no tiled copy helps: 9.6 + 3.1 ms for 33 MB). The first
 * Transpose stays while anything else reads its output. Permutations are checked, so a
 * malformed one is left for the operator to refuse. */
static pv_status fold_transposes(pvg_graph *g, int *count)
{
    pvg_uses u;
    pv_status s = pvg_uses_build(g, &u, "in graph passes");
    if (s != PV_OK) return s;
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *b = &g->nodes[i];
        pvg_attr *pb = transpose_perm(b);
        int x = pb ? b->in[0] : -1;
        if (x < 0 || g->values[x].producer < 0) continue;
        pvg_node *a = &g->nodes[g->values[x].producer];
        pvg_attr *pa = transpose_perm(a);
        if (!pa || pa->n != pb->n || a->out[0] != x || a->in[0] < 0) continue;
        int64_t r = pb->n, q[PV_MAX_RANK];
        bool seen[PV_MAX_RANK] = { false }, ok = true;
        for (int64_t k = 0; k < r && ok; k++) {
            int64_t j = pb->ints[k];
            ok = j >= 0 && j < r && pa->ints[j] >= 0 && pa->ints[j] < r && !seen[pa->ints[j]];
            if (ok) { q[k] = pa->ints[j]; seen[q[k]] = true; }
        }
        if (!ok) continue;
        for (int64_t k = 0; k < r; k++) pb->ints[k] = q[k];
        b->in[0] = a->in[0];
        if (--u.n[x] == 0) a->dead = true;     /* nothing else reads the first one's output */
        (*count)++;
    }
    pvg_uses_free(&u);
    return s;
}

pv_status pvg_passes_run(pvg_graph *g, bool fuse, pvg_pass_stats *st)
{
    pvg_pass_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    /* float16 -> float32 first: the passes below match f32 constants */
    pv_status s = pvg_lift_f16(g, &st->f16_lifted);
    if (s != PV_OK) return s;
    s = fold_constants(g, &st->folded);
    if (s != PV_OK || !fuse) return s;
    if ((s = fold_bn(g, &st->bn_folded)) != PV_OK) return s;
    if ((s = fold_transposes(g, &st->transposes_folded)) != PV_OK) return s;
    /* before fuse_act: the chain's MatMuls must not have taken an activation yet */
    if ((s = pvg_fuse_attention(g, &st->attn_fused)) != PV_OK) return s;
    /* GELU chains (passes/gelu.c), then Add/Sub/Mul/Div -> activation (passes/add_act.c) */
    if ((s = pvg_fuse_gelu(g, &st->gelu_fused)) != PV_OK) return s;
    /* linear layers with their bias, GELU and residual (passes/linear.c), before add_act takes
     * the Adds; opt-in (PERCEIVE_LINEAR=1): on vit4 fp32 it measured level with the separate
     * passes on this Zen 5 box (BENCHMARKS.md, GEMM round) */
    if (getenv("PERCEIVE_LINEAR") && !strcmp(getenv("PERCEIVE_LINEAR"), "1") &&
        (s = pvg_fuse_linear(g, &st->linear_fused)) != PV_OK)
        return s;
    if ((s = pvg_fuse_eltwise_act(g, &st->eltwise_act_fused)) != PV_OK) return s;
    return fuse_act(g, &st->act_fused);
}

pv_status pvg_uses_build(pvg_graph *g, pvg_uses *u, const char *what)
{
    u->n = pvc_calloc((size_t)g->nvalues + 1, sizeof *u->n);
    u->by = pvc_calloc((size_t)g->nvalues + 1, sizeof *u->by);
    if (!u->n || !u->by) {
        pvg_uses_free(u);
        return pvc_fail(&g->msg, PV_ENOMEM, "out of memory %s", what);
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].dead) continue;
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int v = g->nodes[i].in[k];
            if (v >= 0) { u->n[v]++; u->by[v] = i; }
        }
    }
    for (int i = 0; i < g->noutputs; i++) u->n[g->outputs[i]] += PVG_USES_OUTPUT;
    return PV_OK;
}

void pvg_uses_free(pvg_uses *u)
{
    pvc_free(u->n);
    pvc_free(u->by);
    u->n = u->by = NULL;
}
