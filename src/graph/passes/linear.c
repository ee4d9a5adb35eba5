/* Linear-layer fusion: the chains exporters write for a transformer's linear layers become one
 * perceive::Linear node (ops/linear.c) whose GEMM applies bias, GELU and the residual while each
 * output block is still in cache, instead of one more pass over the output per step:
 *
 *   MatMul(X, W) -> Add(., b)  |  Gemm(X, W[, b])        the product and its bias
 *     [-> perceive::Gelu]                                (passes/gelu.c ran before)
 *     [-> Add(., R) | Add(R, .)]                         the residual
 *
 * Conditions: W is a constant f32 2-D tensor; b a constant f32 [N] (MatMul: rank 1 of N values;
 * Gemm: C of rank 1 with beta 1, or none; transA 0; alpha and transB carried over); each
 * intermediate value is read by the next node alone and is no graph output; no node in the chain
 * has a fused activation. A Gemm without a following Gelu or residual is left alone (it already
 * applies its bias in the GEMM). R may be any non-constant or constant value other than the
 * chain's own; Linear handles a residual that broadcasts.
 * Opt-in: passes.c runs it with PERCEIVE_LINEAR=1 only. The epilogue costs 5-8 % of the GEMM's
 * time on the ViT-H shapes (pv_gemm_bench -e), about what the separate Add / Gelu passes cost,
 * so vit4 fp32 measured level (within the box's noise) with and without it. */
#include "graph/graph.h"
#include "graph/passes/uses.h"

#include <stdio.h>
#include <string.h>

static bool is_default(const pvg_node *n) { return !*n->domain || !strcmp(n->domain, "ai.onnx"); }

static bool plain(const pvg_node *n, const char *op)
{
    return !n->dead && is_default(n) && !strcmp(n->op_type, op) && n->nout == 1 && n->out[0] >= 0 &&
           n->act.kind == PVG_ACT_NONE;
}

static const pvg_attr *attr(const pvg_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++) if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

static bool const_f32(const pvg_graph *g, int v, int rank)
{
    if (v < 0) return false;
    const pvg_value *val = &g->values[v];
    return val->is_const && val->data && val->decl.dtype == PV_F32 && (rank < 0 || val->decl.rank == rank);
}

/* The node reading v when v has exactly one reader and is no graph output, else -1. */
static int sole(const pvg_uses *u, int v) { return v >= 0 && u->n[v] == 1 ? u->by[v] : -1; }

typedef struct chain {
    int x, w, b, r, y;           /* values: input, weight, bias (-1), residual (-1), output */
    bool tb;
    float alpha;
    const char *act;             /* "none", "gelu", "gelu_tanh" */
    int nodes[4], nn;            /* the nodes replaced */
} chain;

/* The product and bias starting at node i, into c (x, w, b, y = the biased output). */
static bool match_head(const pvg_graph *g, const pvg_uses *u, int i, chain *c)
{
    const pvg_node *n = &g->nodes[i];
    memset(c, 0, sizeof *c);
    c->b = c->r = -1;
    c->alpha = 1.0f;
    c->act = "none";
    if (plain(n, "MatMul") && n->nin == 2 && n->nattrs == 0 && n->in[0] >= 0 && const_f32(g, n->in[1], 2)) {
        int a = sole(u, n->out[0]);
        if (a < 0) return false;
        const pvg_node *add = &g->nodes[a];
        if (!plain(add, "Add") || add->nin != 2 || add->nattrs != 0) return false;
        int bv = add->in[0] == n->out[0] ? add->in[1] : add->in[0];
        const pvg_value *w = &g->values[n->in[1]];
        if (!const_f32(g, bv, 1) || g->values[bv].decl.dims[0] != w->decl.dims[1] || bv == n->out[0]) return false;
        *c = (chain){ n->in[0], n->in[1], bv, -1, add->out[0], false, 1.0f, "none", { i, a }, 2 };
        return true;
    }
    if (plain(n, "Gemm") && (n->nin == 2 || n->nin == 3) && n->in[0] >= 0 && const_f32(g, n->in[1], 2)) {
        const pvg_attr *ta = attr(n, "transA"), *tb = attr(n, "transB"), *al = attr(n, "alpha"), *be = attr(n, "beta");
        for (int k = 0; k < n->nattrs; k++) {
            const char *a = n->attrs[k].name;
            if (strcmp(a, "transA") && strcmp(a, "transB") && strcmp(a, "alpha") && strcmp(a, "beta")) return false;
        }
        if ((ta && ta->i != 0) || (be && be->f != 1.0f && n->nin == 3)) return false;
        bool trans = tb && tb->i != 0;
        int bv = n->nin == 3 ? n->in[2] : -1;
        const pvg_value *w = &g->values[n->in[1]];
        if (bv >= 0 && (!const_f32(g, bv, 1) || g->values[bv].decl.dims[0] != w->decl.dims[trans ? 0 : 1])) return false;
        *c = (chain){ n->in[0], n->in[1], bv, -1, n->out[0], trans, al ? al->f : 1.0f, "none", { i }, 1 };
        return true;
    }
    return false;
}

/* Extends c with a Gelu and / or a residual Add after it; false when nothing follows. */
static bool match_tail(const pvg_graph *g, const pvg_uses *u, chain *c)
{
    bool more = false;
    int k = sole(u, c->y);
    if (k >= 0) {
        const pvg_node *n = &g->nodes[k];
        if (!n->dead && !strcmp(n->domain, "perceive") && !strcmp(n->op_type, "Gelu") && n->nin == 1 &&
            n->nout == 1 && n->out[0] >= 0 && n->act.kind == PVG_ACT_NONE) {
            const pvg_attr *ap = attr(n, "approximate");
            if (n->nattrs > 1 || (n->nattrs == 1 && (!ap || ap->type != PVG_ATTR_STRING))) return false;
            if (ap && strcmp(ap->s, "none") && strcmp(ap->s, "tanh")) return false;
            c->act = ap && !strcmp(ap->s, "tanh") ? "gelu_tanh" : "gelu";
            c->nodes[c->nn++] = k;
            c->y = n->out[0];
            more = true;
            k = sole(u, c->y);
        }
    }
    if (k >= 0) {
        const pvg_node *n = &g->nodes[k];
        if (plain(n, "Add") && n->nin == 2 && n->nattrs == 0 && n->in[0] >= 0 && n->in[1] >= 0 && n->in[0] != n->in[1]) {
            c->r = n->in[0] == c->y ? n->in[1] : n->in[0];
            c->nodes[c->nn++] = k;
            c->y = n->out[0];
            more = true;
        }
    }
    return more;
}

static pv_status set_attr(pvg_graph *g, pvg_attr *a, const char *name, pvg_attr_type t)
{
    a->name = pvc_strdup(name);
    a->type = t;
    return a->name ? PV_OK : pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing a linear layer");
}

static pv_status rewrite(pvg_graph *g, const chain *c)
{
    char name[512];
    snprintf(name, sizeof name, "%s::linear", g->nodes[c->nodes[0]].name);
    pvg_node *n;
    int before = g->nnodes;
    pv_status s = pvg_node_add(g, name, "Linear", "perceive", c->r >= 0 ? 4 : 3, 1, &n);
    if (s != PV_OK) {
        if (g->nnodes > before) g->nodes[g->nnodes - 1].dead = true;   /* a partial node */
        return s;
    }
    n->dead = true;   /* until complete */
    n->attrs = pvc_calloc(3, sizeof *n->attrs);
    if (!n->attrs) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing a linear layer");
    n->nattrs = 3;
    if ((s = set_attr(g, &n->attrs[0], "transB", PVG_ATTR_INT)) != PV_OK ||
        (s = set_attr(g, &n->attrs[1], "alpha", PVG_ATTR_FLOAT)) != PV_OK ||
        (s = set_attr(g, &n->attrs[2], "activation", PVG_ATTR_STRING)) != PV_OK)
        return s;
    n->attrs[0].i = c->tb;
    n->attrs[1].f = c->alpha;
    if (!(n->attrs[2].s = pvc_strdup(c->act))) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing a linear layer");
    n->in[0] = c->x;
    n->in[1] = c->w;
    n->in[2] = c->b;
    if (c->r >= 0) n->in[3] = c->r;
    n->out[0] = c->y;
    n->op = &pvg_op_Linear;
    n->dead = false;
    for (int i = 0; i < c->nn; i++) {
        pvg_node *d = &g->nodes[c->nodes[i]];
        d->dead = true;
        for (int k = 0; k < d->nout; k++) if (d->out[k] >= 0) g->values[d->out[k]].producer = -1;
    }
    g->values[c->y].producer = g->nnodes - 1;
    return PV_OK;
}

pv_status pvg_fuse_linear(pvg_graph *g, int *count)
{
    pvg_uses u;
    pv_status s = pvg_uses_build(g, &u, "fusing linear layers");
    int nn = g->nnodes;   /* nodes added below are Linear, never a match */
    for (int i = 0; i < nn && s == PV_OK; i++) {
        chain c;
        if (g->nodes[i].dead || !match_head(g, &u, i, &c)) continue;
        bool tail = match_tail(g, &u, &c);
        if (!tail && !strcmp(g->nodes[i].op_type, "Gemm")) continue;   /* nothing to gain */
        if ((s = rewrite(g, &c)) == PV_OK) (*count)++;
    }
    pvg_uses_free(&u);
    return s;
}
