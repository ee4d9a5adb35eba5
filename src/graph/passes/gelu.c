/* GELU fusion: the chains exporters write for GELU become one perceive::Gelu(x) node.
 *
 *   exact:  e = Erf(x * (1/sqrt 2) | x / sqrt 2)
 *   tanh:   e = Tanh(c1 * (x + c2 * x^3)), c1 = sqrt(2/pi), c2 = 0.044715,
 *           x^3 = Pow(x, 3) | x * (x * x) | (x * x) * x
 *   then    a = e + 1, and y = 0.5 x a as one of
 *           (x * a) * 0.5  |  (x * 0.5) * a  |  x * (a * 0.5)   (0.5 also as / 2)
 *
 * Every product and sum is matched in either operand order (torch writes Mul(x, a) then
 * Mul(., 0.5) for the exact form and Mul(Mul(x, 0.5), a) for tanh; tf2onnx and HF put the
 * constant first). The match is conservative: each removed value has one consumer and is not
 * a graph output (x itself may have others), the constants are f32 scalars (rank 0, or rank 1
 * when x's declared rank is >= 1, so the output shape is x's) within 1e-6 relative of the
 * expected value, and the nodes have no attributes and no fused activation. */
#include "graph/graph.h"
#include "graph/passes/uses.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


typedef struct ctx { pvg_graph *g; pvg_uses u; } ctx;

/* Node reading value v when v has exactly one consumer (and is not a graph output), else -1. */
static int sole_user(const ctx *c, int v) { return v >= 0 && c->u.n[v] == 1 ? c->u.by[v] : -1; }

static bool is_op(const pvg_node *n, const char *op, int nin)
{
    return !n->dead && (!*n->domain || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op) &&
           n->nin == nin && n->nout == 1 && n->out[0] >= 0 && n->nattrs == 0 && n->act.kind == PVG_ACT_NONE &&
           n->in[0] >= 0 && (nin < 2 || n->in[1] >= 0);
}

/* v is an f32 scalar constant equal to want (1e-6 relative), not widening x's rank. */
static bool const_is(const ctx *c, int v, int x, double want)
{
    const pvg_value *val = &c->g->values[v];
    if (!val->is_const || !val->data || val->decl.dtype != PV_F32 || pvc_numel(&val->decl) != 1) return false;
    if (val->decl.rank > 1 || (val->decl.rank == 1 && c->g->values[x].decl.rank < 1)) return false;
    double f = *(const float *)val->data;
    return fabs(f - want) <= 1e-6 * fabs(want);
}

/* Node p computes s * x for a constant s == want: Mul(x, s), Mul(s, x), or Div(x, 1 / want).
 * x < 0 accepts any x and returns it in *xo. */
static bool scaled(const ctx *c, int p, int x, double want, int *xo)
{
    if (p < 0) return false;
    const pvg_node *n = &c->g->nodes[p];
    if (is_op(n, "Mul", 2)) {
        for (int s = 0; s < 2; s++) {
            int xv = n->in[s], kv = n->in[1 - s];
            if ((x < 0 || xv == x) && const_is(c, kv, xv, want)) { *xo = xv; return true; }
        }
        return false;
    }
    if (is_op(n, "Div", 2) && (x < 0 || n->in[0] == x) && const_is(c, n->in[1], n->in[0], 1.0 / want)) {
        *xo = n->in[0];
        return true;
    }
    return false;
}

/* The other operand of binary node n when one operand is v; -1 if neither is. */
static int other(const pvg_node *n, int v)
{
    return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

typedef struct match { int x, y, nodes[10], nn; bool tanh_form; } match;

/* From e (the Erf / Tanh output): a = e + 1, then 0.5 * x * a in one of the three forms. */
static bool match_tail(const ctx *c, int e, match *m)
{
    const pvg_graph *g = c->g;
    int an = sole_user(c, e);
    if (an < 0 || !is_op(&g->nodes[an], "Add", 2)) return false;
    int one = other(&g->nodes[an], e);
    if (one < 0 || one == e || !const_is(c, one, m->x, 1.0)) return false;
    m->nodes[m->nn++] = an;
    int a = g->nodes[an].out[0];
    int mn = sole_user(c, a);
    if (mn < 0) return false;
    bool mul = is_op(&g->nodes[mn], "Mul", 2);
    if (!mul && !is_op(&g->nodes[mn], "Div", 2)) return false;
    m->nodes[m->nn++] = mn;
    int o = mul ? other(&g->nodes[mn], a) : -1, mo = g->nodes[mn].out[0], xo;
    if (o >= 0 && o == m->x) {                                        /* (x * a) * 0.5 */
        int n2 = sole_user(c, mo);
        if (!scaled(c, n2, mo, 0.5, &xo)) return false;
        m->nodes[m->nn++] = n2;
        m->y = g->nodes[n2].out[0];
        return true;
    }
    if (o >= 0 && o != a && scaled(c, g->values[o].producer, m->x, 0.5, &xo) &&
        sole_user(c, o) == mn) {                            /* (x * 0.5) * a */
        m->nodes[m->nn++] = g->values[o].producer;
        m->y = mo;
        return true;
    }
    /* x * (a * 0.5): mn scales a by 0.5, its output's consumer multiplies by x */
    if (!scaled(c, mn, a, 0.5, &xo)) return false;
    int n2 = sole_user(c, mo);
    if (n2 < 0 || !is_op(&g->nodes[n2], "Mul", 2) || other(&g->nodes[n2], mo) != m->x) return false;
    m->nodes[m->nn++] = n2;
    m->y = g->nodes[n2].out[0];
    return true;
}

/* Erf node i: its input is x / sqrt 2. */
static bool match_erf(const ctx *c, int i, match *m)
{
    const pvg_graph *g = c->g;
    if (!is_op(&g->nodes[i], "Erf", 1)) return false;
    int in = g->nodes[i].in[0], p = g->values[in].producer;
    if (sole_user(c, in) != i || !scaled(c, p, -1, 0.70710678118654752, &m->x)) return false;
    m->nn = 0;
    m->nodes[m->nn++] = p;
    m->nodes[m->nn++] = i;
    m->tanh_form = false;
    return match_tail(c, g->nodes[i].out[0], m);
}

/* Value v is x^3 computed by the nodes appended to m: Pow(x, 3), x * (x * x), (x * x) * x. */
static bool cube_of(const ctx *c, int v, match *m)
{
    const pvg_graph *g = c->g;
    int p = g->values[v].producer;
    if (p < 0) return false;
    const pvg_node *n = &g->nodes[p];
    if (is_op(n, "Pow", 2)) {
        if (!const_is(c, n->in[1], n->in[0], 3.0)) return false;
        m->x = n->in[0];
        m->nodes[m->nn++] = p;
        return true;
    }
    if (!is_op(n, "Mul", 2)) return false;
    for (int s = 0; s < 2; s++) {
        int sq = n->in[s], x = n->in[1 - s], q = g->values[sq].producer;
        if (q < 0 || sole_user(c, sq) != p || !is_op(&g->nodes[q], "Mul", 2)) continue;
        if (g->nodes[q].in[0] != x || g->nodes[q].in[1] != x) continue;
        m->x = x;
        m->nodes[m->nn++] = p;
        m->nodes[m->nn++] = q;
        return true;
    }
    return false;
}

/* Tanh node i: its input is c1 * (x + c2 * x^3). */
static bool match_tanh(const ctx *c, int i, match *m)
{
    const pvg_graph *g = c->g;
    if (!is_op(&g->nodes[i], "Tanh", 1)) return false;
    m->nn = 0;
    m->nodes[m->nn++] = i;
    int in = g->nodes[i].in[0], p1 = g->values[in].producer, u;
    if (sole_user(c, in) != i || !scaled(c, p1, -1, 0.79788456080286536, &u)) return false;
    m->nodes[m->nn++] = p1;
    int p2 = g->values[u].producer;
    if (sole_user(c, u) != p1 || p2 < 0 || !is_op(&g->nodes[p2], "Add", 2)) return false;
    m->nodes[m->nn++] = p2;
    for (int s = 0; s < 2; s++) {
        int w = g->nodes[p2].in[s], x = g->nodes[p2].in[1 - s], p3 = g->values[w].producer, x3;
        int keep = m->nn;
        if (sole_user(c, w) != p2 || !scaled(c, p3, -1, 0.044715, &x3) || sole_user(c, x3) != p3) continue;
        m->nodes[m->nn++] = p3;
        if (cube_of(c, x3, m) && m->x == x) {
            m->tanh_form = true;
            return match_tail(c, g->nodes[i].out[0], m);
        }
        m->nn = keep;
    }
    return false;
}

/* Replaces the matched nodes by Gelu(x) -> y. */
static pv_status rewrite(pvg_graph *g, const match *m, int at)
{
    char name[512];
    snprintf(name, sizeof name, "%s::gelu", *g->nodes[at].name ? g->nodes[at].name : "erf");
    pvg_node *n;
    int before = g->nnodes;
    pv_status s = pvg_node_add(g, name, "Gelu", "perceive", 1, 1, &n);
    if (s != PV_OK) {
        if (g->nnodes > before) g->nodes[g->nnodes - 1].dead = true;   /* a partial node */
        return s;
    }
    n->dead = true;                 /* until complete */
    if (m->tanh_form) {
        n->attrs = pvc_calloc(1, sizeof *n->attrs);
        if (!n->attrs) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing GELU");
        n->nattrs = 1;
        n->attrs[0].name = pvc_strdup("approximate");
        n->attrs[0].s = pvc_strdup("tanh");
        if (!n->attrs[0].name || !n->attrs[0].s) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing GELU");
        n->attrs[0].type = PVG_ATTR_STRING;
    }
    n->in[0] = m->x;
    n->out[0] = m->y;
    n->op = &pvg_op_Gelu;
    n->dead = false;
    for (int i = 0; i < m->nn; i++) {
        pvg_node *d = &g->nodes[m->nodes[i]];
        d->dead = true;
        for (int k = 0; k < d->nout; k++) if (d->out[k] >= 0) g->values[d->out[k]].producer = -1;
    }
    g->values[m->y].producer = g->nnodes - 1;
    return PV_OK;
}

pv_status pvg_fuse_gelu(pvg_graph *g, int *count)
{
    ctx c = { g, { NULL, NULL } };
    pv_status s = pvg_uses_build(g, &c.u, "fusing GELU");
    int nn = g->nnodes;             /* nodes added below are Gelu, never a match */
    for (int i = 0; i < nn && s == PV_OK; i++) {
        match m;
        if (g->nodes[i].dead) continue;
        if (!match_erf(&c, i, &m) && !match_tanh(&c, i, &m)) continue;
        if ((s = rewrite(g, &m, i)) == PV_OK) (*count)++;
    }
    pvg_uses_free(&c.u);
    return s;
}
