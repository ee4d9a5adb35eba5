/* Element-wise activation fusion: Add / Sub / Mul / Div -> Relu / LeakyRelu / Clip becomes the
 * arithmetic node with node->act set (ops/binary.c applies it in the same pass over the
 * output), whatever the operands are: the residual Add -> Relu of ResNets, which fuse_act in
 * passes.c (constant-weight producers only) does not take. Conditions: the arithmetic node's
 * output is read by the activation alone and is not a graph output, neither node already has
 * a fused activation, Clip's bounds are absent or f32 scalar constants, and the activation has
 * no attributes beyond LeakyRelu's alpha (Clip-6's attribute bounds are left alone). */
#include "graph/graph.h"
#include "graph/passes/uses.h"

#include <math.h>
#include <string.h>

static bool default_domain(const pvg_node *n) { return !*n->domain || !strcmp(n->domain, "ai.onnx"); }

static bool arith(const pvg_node *n)
{
    static const char *const ops[] = { "Add", "Sub", "Mul", "Div" };
    if (n->dead || !default_domain(n) || n->nin != 2 || n->nout != 1 || n->act.kind != PVG_ACT_NONE) return false;
    for (size_t i = 0; i < PVC_COUNTOF(ops); i++) if (!strcmp(n->op_type, ops[i])) return true;
    return false;
}

static bool scalar_f32(const pvg_graph *g, int v, float *out)
{
    const pvg_value *val = &g->values[v];
    if (!val->is_const || !val->data || val->decl.dtype != PV_F32 || pvc_numel(&val->decl) != 1) return false;
    *out = *(const float *)val->data;
    return true;
}

/* The activation node a computes, if it is one the binary ops can apply. */
static bool act_of(const pvg_graph *g, const pvg_node *a, pvg_act *act)
{
    if (a->dead || !default_domain(a) || a->nin < 1 || a->nout != 1 || a->in[0] < 0 || a->out[0] < 0) return false;
    memset(act, 0, sizeof *act);
    if (!strcmp(a->op_type, "Relu")) {
        act->kind = PVG_ACT_RELU;
        return a->nin == 1 && a->nattrs == 0;
    }
    if (!strcmp(a->op_type, "LeakyRelu")) {
        act->kind = PVG_ACT_LEAKY_RELU;
        act->alpha = 0.01f;
        if (a->nin != 1 || a->nattrs > 1) return false;
        if (a->nattrs == 1) {
            if (strcmp(a->attrs[0].name, "alpha") || a->attrs[0].type != PVG_ATTR_FLOAT) return false;
            act->alpha = a->attrs[0].f;
        }
        return true;
    }
    if (!strcmp(a->op_type, "Clip") && a->nattrs == 0 && a->nin <= 3) {
        act->kind = PVG_ACT_CLIP;
        act->alpha = -INFINITY;
        act->beta = INFINITY;
        if (a->nin > 1 && a->in[1] >= 0 && !scalar_f32(g, a->in[1], &act->alpha)) return false;
        if (a->nin > 2 && a->in[2] >= 0 && !scalar_f32(g, a->in[2], &act->beta)) return false;
        return true;
    }
    return false;
}

pv_status pvg_fuse_eltwise_act(pvg_graph *g, int *count)
{
    pvg_uses u;
    pv_status s = pvg_uses_build(g, &u, "fusing activations");
    if (s != PV_OK) return s;
    const int *cons = u.n;
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *a = &g->nodes[i];
        pvg_act act;
        if (!act_of(g, a, &act)) continue;
        int x = a->in[0], p = g->values[x].producer;
        if (p < 0 || cons[x] != 1) continue;
        pvg_node *pr = &g->nodes[p];
        if (!arith(pr) || pr->out[0] != x) continue;
        pr->act = act;
        int y = a->out[0];
        pr->out[0] = y;
        g->values[y].producer = p;
        g->values[x].producer = -1;
        a->dead = true;
        (*count)++;
    }
    pvg_uses_free(&u);
    return PV_OK;
}
