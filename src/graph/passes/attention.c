/* Attention fusion: the chain torch exports for scaled dot-product attention
 *
 *     Q' = Q [* s | / s]...          K' = [Transpose(last two)] K [* s | / s]...
 *     S  = MatMul(Q', K') [* s | / s]...
 *     S  = S + mask                  (optional; either operand order)
 *     Y  = MatMul(Softmax(S, axis = last), V)
 *
 * becomes one perceive::Attention(Q, K, V[, mask]) node with the product of the scalar factors
 * as `scale` and k_transposed = 1 unless a last-two-axes Transpose was absorbed. The match is
 * conservative: every removed value has exactly one consumer and is not a graph output, the
 * factors are f32 scalar constants (rank <= 1, finite, divisors non-zero), the nodes carry no
 * attributes beyond the ones checked and no fused activation, and Softmax normalizes the last
 * axis (-1, or rank - 1 when the declared rank says so). Shapes are not known here: the
 * operator's prepare checks them per plan and fails with a message naming them. */
#include "graph/graph.h"
#include "graph/passes/uses.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { MAX_PEEL = 16 };     /* scale / transpose nodes absorbed per side */


/* v is read by node `by` alone (once) and is not a graph output. */
static bool only_use(const pvg_uses *u, int v, int by) { return v >= 0 && u->n[v] == 1 && u->by[v] == by; }

static bool is_op(const pvg_node *n, const char *op, int nin, int max_attrs)
{
    return !n->dead && (!*n->domain || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op) &&
           n->nin == nin && n->nout == 1 && n->out[0] >= 0 && n->nattrs <= max_attrs &&
           n->act.kind == PVG_ACT_NONE;
}

static const pvg_attr *attr_get(const pvg_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++) if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

/* A finite f32 scalar constant (rank 0 or [1], so it cannot raise the other operand's rank). */
static bool scalar_const(const pvg_graph *g, int v, float *out)
{
    if (v < 0) return false;
    const pvg_value *val = &g->values[v];
    if (!val->is_const || !val->data || val->decl.dtype != PV_F32 || val->decl.rank > 1 || pvc_numel(&val->decl) != 1)
        return false;
    *out = *(const float *)val->data;
    return isfinite(*out);
}

/* Node p is Mul(x, c), Mul(c, x) or Div(x, c) with a scalar constant c: *x and the factor. */
static bool scale_node(const pvg_graph *g, int p, int *x, float *f)
{
    const pvg_node *n = &g->nodes[p];
    float c;
    if (is_op(n, "Mul", 2, 0)) {
        if (n->in[0] >= 0 && scalar_const(g, n->in[1], &c)) { *x = n->in[0]; *f = c; return true; }
        if (n->in[1] >= 0 && scalar_const(g, n->in[0], &c)) { *x = n->in[1]; *f = c; return true; }
    } else if (is_op(n, "Div", 2, 0) && n->in[0] >= 0 && scalar_const(g, n->in[1], &c) && c != 0.0f) {
        *x = n->in[0];
        *f = 1.0f / c;
        return true;
    }
    return false;
}

/* Node p is a Transpose exchanging the last two axes (perm [0, .., r-3, r-1, r-2]). */
static bool swap_last_two(const pvg_graph *g, int p)
{
    const pvg_node *n = &g->nodes[p];
    if (!is_op(n, "Transpose", 1, 1) || n->in[0] < 0) return false;
    const pvg_attr *a = attr_get(n, "perm");
    if (!a || a->type != PVG_ATTR_INTS || a->n < 2) return false;
    for (int64_t i = 0; i < a->n - 2; i++) if (a->ints[i] != i) return false;
    return a->ints[a->n - 2] == a->n - 1 && a->ints[a->n - 1] == a->n - 2;
}

/* Nodes a match removes. */
typedef struct chain { int node[4 * MAX_PEEL + 8]; int n; } chain;

/* From value x (read only by node *by) back through single-consumer scale nodes and, when
 * swapped != NULL, one last-two-axes Transpose. Returns the value the chain starts from; *by
 * becomes the node reading it. */
static int peel(const pvg_graph *g, const pvg_uses *u, int x, int *by, float *scale, bool *swapped, chain *c)
{
    for (int steps = 0; steps < MAX_PEEL; steps++) {
        int p = x >= 0 ? g->values[x].producer : -1;
        if (p < 0 || !only_use(u, x, *by)) break;
        int y;
        float f;
        if (scale_node(g, p, &y, &f)) {
            *scale *= f;
        } else if (swapped && !*swapped && swap_last_two(g, p)) {
            *swapped = true;
            y = g->nodes[p].in[0];
        } else {
            break;
        }
        c->node[c->n++] = p;
        *by = p;
        x = y;
    }
    return x;
}

/* From value x (read only by node `by`) back through scale nodes to the MatMul making the
 * scores; -1 when there is none. */
static int scores_matmul(const pvg_graph *g, const pvg_uses *u, int x, int by, float *scale, chain *c)
{
    x = peel(g, u, x, &by, scale, NULL, c);
    int p = x >= 0 ? g->values[x].producer : -1;
    if (p < 0 || !only_use(u, x, by) || !is_op(&g->nodes[p], "MatMul", 2, 0)) return -1;
    if (g->nodes[p].in[0] < 0 || g->nodes[p].in[1] < 0) return -1;
    return p;
}

/* Softmax over the last axis: -1, or rank - 1 when the input's rank is declared. */
static bool softmax_last_axis(const pvg_graph *g, const pvg_node *sm)
{
    const pvg_attr *a = attr_get(sm, "axis");
    if (sm->nattrs > (a ? 1 : 0)) return false;
    if (a && a->type != PVG_ATTR_INT) return false;
    int64_t axis = a ? a->i : (g->opset >= 13 ? -1 : 1);
    if (axis == -1) return true;   /* opset < 13 coerces to 2-D at the last axis: the same */
    int r = g->values[sm->in[0]].decl.rank;
    return r > 0 && axis == r - 1;
}

typedef struct match { int q, k, v, mask, y; bool kt; float scale; chain c; } match;

/* Matches the chain ending in Softmax node s; fills m. */
static bool match_at(const pvg_graph *g, const pvg_uses *u, int s, match *m)
{
    const pvg_node *sm = &g->nodes[s];
    if (!is_op(sm, "Softmax", 1, 1) || sm->in[0] < 0 || !softmax_last_axis(g, sm)) return false;
    memset(m, 0, sizeof *m);
    m->scale = 1.0f;
    m->mask = -1;
    m->c.node[m->c.n++] = s;
    int x = sm->in[0], mm1 = -1;
    int p = g->values[x].producer;
    if (p >= 0 && only_use(u, x, s) && is_op(&g->nodes[p], "Add", 2, 0)) {
        const pvg_node *add = &g->nodes[p];
        m->c.node[m->c.n++] = p;
        for (int side = 0; side < 2 && mm1 < 0; side++) {
            int keep = m->c.n;
            m->scale = 1.0f;
            mm1 = scores_matmul(g, u, add->in[side], p, &m->scale, &m->c);
            if (mm1 >= 0) m->mask = add->in[1 - side];
            else m->c.n = keep;
        }
        if (mm1 < 0 || m->mask < 0) return false;
    } else {
        mm1 = scores_matmul(g, u, x, s, &m->scale, &m->c);
        if (mm1 < 0) return false;
    }
    m->c.node[m->c.n++] = mm1;
    int pv = sm->out[0];
    if (u->n[pv] != 1) return false;
    int mm2 = u->by[pv];
    const pvg_node *n2 = &g->nodes[mm2];
    if (!is_op(n2, "MatMul", 2, 0) || n2->in[0] != pv || n2->in[1] < 0 || n2->in[1] == pv) return false;
    m->c.node[m->c.n++] = mm2;
    m->v = n2->in[1];
    m->y = n2->out[0];
    const pvg_node *n1 = &g->nodes[mm1];
    int by = mm1;
    m->q = peel(g, u, n1->in[0], &by, &m->scale, NULL, &m->c);
    bool swapped = false;
    by = mm1;
    m->k = peel(g, u, n1->in[1], &by, &m->scale, &swapped, &m->c);
    m->kt = !swapped;
    return isfinite(m->scale);
}

/* Replaces the matched nodes by one Attention node. */
static pv_status rewrite(pvg_graph *g, const match *m, int s)
{
    char name[512];
    snprintf(name, sizeof name, "%s::attention", *g->nodes[s].name ? g->nodes[s].name : "softmax");
    bool has_mask = m->mask >= 0;
    pvg_node *n;
    int before = g->nnodes;
    pv_status st = pvg_node_add(g, name, "Attention", "perceive", has_mask ? 4 : 3, 1, &n);
    if (st != PV_OK) {
        if (g->nnodes > before) g->nodes[g->nnodes - 1].dead = true;   /* a partial node */
        return st;
    }
    n->dead = true;                 /* until complete */
    n->attrs = pvc_calloc(2, sizeof *n->attrs);
    if (!n->attrs) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing attention");
    n->nattrs = 2;
    n->attrs[0].name = pvc_strdup("scale");
    n->attrs[1].name = pvc_strdup("k_transposed");
    if (!n->attrs[0].name || !n->attrs[1].name) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory fusing attention");
    n->attrs[0].type = PVG_ATTR_FLOAT;
    n->attrs[0].f = m->scale;
    n->attrs[1].type = PVG_ATTR_INT;
    n->attrs[1].i = m->kt;
    n->in[0] = m->q;
    n->in[1] = m->k;
    n->in[2] = m->v;
    if (has_mask) n->in[3] = m->mask;
    n->out[0] = m->y;
    n->op = &pvg_op_Attention;
    n->dead = false;
    int idx = g->nnodes - 1;
    for (int i = 0; i < m->c.n; i++) {
        pvg_node *d = &g->nodes[m->c.node[i]];
        d->dead = true;
        for (int k = 0; k < d->nout; k++) if (d->out[k] >= 0) g->values[d->out[k]].producer = -1;
    }
    g->values[m->y].producer = idx;
    return PV_OK;
}

pv_status pvg_fuse_attention(pvg_graph *g, int *count)
{
    pvg_uses u = { NULL, NULL };
    pv_status s = pvg_uses_build(g, &u, "fusing attention");
    int nn = g->nnodes;             /* nodes added below are Attention, never a match */
    for (int i = 0; i < nn && s == PV_OK; i++) {
        match m;
        if (g->nodes[i].dead || !match_at(g, &u, i, &m)) continue;
        if ((s = rewrite(g, &m, i)) == PV_OK) (*count)++;
    }
    pvg_uses_free(&u);
    return s;
}
