/* float16 graphs computed in float32 (issue 12): rewrites a graph holding float16 values into a
 * float32 one before the other passes run, so every f32 fast path (packed GEMM weights, oneDNN,
 * Winograd, attention / GELU / activation fusion, BatchNorm folding) applies and nothing rounds
 * to float16 between operators. This is what ONNX Runtime's CPU provider does for the operators
 * it has no float16 kernel for (most compute ops on x86): it inserts Casts around them and
 * removes the back-to-back pairs, so its float16 results are float32 computations with
 * roundings only where a float16 kernel stores the tensor (data movement, Clip, Min/Max).
 *
 * What changes (each float16 value keeps its name where the caller can see it):
 *   float16 initializers and Constant / ConstantOfShape tensors   converted to f32 once, here
 *   float16 graph inputs      stay float16; a Cast(to=FLOAT) after each feeds the graph
 *   float16 graph outputs     computed as "NAME::f32", a Cast(to=FLOAT16) writes NAME
 *   Cast(to=FLOAT16), CastLike to a float16 tensor   rounds where ORT does: for readers that
 *                             store or move the float16 tensor (reads_rounded below) and graph
 *                             outputs, Cast(to=FLOAT16) then Cast(to=FLOAT); readers that compute
 *                             get a Cast(to=FLOAT) of the input instead, as ORT fuses the cast
 *                             away on such an edge. Measured (onnxruntime-node 1.30, optimization
 *                             levels disabled, basic and all): Cast(f16) -> Relu / Sub / MatMul /
 *                             Conv / Exp ... -> Cast(f32) gives unrounded values, Cast(f16) ->
 *                             Transpose / Concat / Slice / Clip / Max / Identity -> Cast(f32)
 *                             rounded ones; tests/fixtures/ops/f16_cast_round checks both
 *   dtype attributes = FLOAT16 (EyeLike, Random*, Bernoulli)   FLOAT (their values are exact
 *                             or random)
 *   other float16 declarations (value_info)   FLOAT
 * Graphs this cannot rewrite safely keep the float16 staging of graph/ops/lowp.h: operators of
 * another domain (their kernels may want float16), subgraph attributes, a CastLike whose target's
 * dtype is not declared, a float16 output that is an initializer. PERCEIVE_F16=staged keeps the
 * staging for every graph (for comparisons). */
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ONNX_FLOAT   1
#define ONNX_FLOAT16 10

static pvg_attr *attr_find(pvg_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++) if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

static bool is_default(const pvg_node *n, const char *op) { return !*n->domain && !strcmp(n->op_type, op); }

static bool attr_is_f16_tensor(pvg_node *n, const char *name)
{
    pvg_attr *a = attr_find(n, name);
    return a && a->type == PVG_ATTR_TENSOR && a->t.dtype == PV_F16 && a->t.rank >= 0;
}

/* Ops whose output dtype comes from an attribute named "dtype". */
static bool has_dtype_attr(const pvg_node *n)
{
    static const char *const ops[] = { "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike",
                                       "RandomUniformLike", "Bernoulli" };
    for (size_t i = 0; i < PVC_COUNTOF(ops); i++) if (is_default(n, ops[i])) return true;
    return false;
}

static bool cast_to(pvg_node *n, int64_t to)
{
    pvg_attr *a = attr_find(n, "to");
    return is_default(n, "Cast") && a && a->type == PVG_ATTR_INT && a->i == to;
}

/* Does the graph hold float16 anywhere (values, tensors, casts, dtype attributes)? */
static bool graph_has_f16(pvg_graph *g)
{
    /* PV_F32 is 0: a dtype the file does not declare never reads as float16 */
    for (int v = 0; v < g->nvalues; v++) if (g->values[v].decl.dtype == PV_F16) return true;
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (cast_to(n, ONNX_FLOAT16) || attr_is_f16_tensor(n, "value")) return true;
        pvg_attr *d = has_dtype_attr(n) ? attr_find(n, "dtype") : NULL;
        if (d && d->type == PVG_ATTR_INT && d->i == ONNX_FLOAT16) return true;
    }
    return false;
}

/* The declared dtype of value v, or -1 when the file may not say (an undeclared dtype reads 0). */
static int declared_dtype(const pvg_graph *g, int v)
{
    const pvg_value *val = &g->values[v];
    return val->is_const || val->is_input || val->decl.dtype != PV_F32 || val->decl.rank >= 0 ? (int)val->decl.dtype : -1;
}

/* Why the graph cannot be rewritten, or NULL. */
static const char *refusal(pvg_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (*n->domain) return "an operator of another domain";
        for (int k = 0; k < n->nattrs; k++) if (n->attrs[k].type == PVG_ATTR_OTHER) return "a subgraph attribute";
        if (is_default(n, "CastLike") && (n->nin < 2 || n->in[1] < 0 || declared_dtype(g, n->in[1]) < 0))
            return "a CastLike whose target dtype is not declared";
    }
    for (int i = 0; i < g->noutputs; i++) {
        const pvg_value *v = &g->values[g->outputs[i]];
        if (v->decl.dtype == PV_F16 && (v->is_const || v->producer < 0) && !v->is_input) return "a float16 output that is a constant";
    }
    return NULL;
}

static pv_status to_f32_data(pvg_graph *g, void **data, pvc_tensor *decl)
{
    int64_t n = pvc_numel(decl);
    float *f = pvc_malloc_aligned((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory converting float16 weights to float32");
    const uint16_t *h = *data;
    for (int64_t i = 0; i < n; i++) f[i] = pvc_f16_to_f32(h[i]);
    pvc_free_aligned(*data);
    *data = f;
    decl->dtype = PV_F32;
    pvc_tensor_set_contiguous(decl);
    return PV_OK;
}

/* *out = a new value named "<base><suffix>" with base's shape and dtype t. */
static pv_status value_new(pvg_graph *g, int base, const char *suffix, pv_dtype t, int *out)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s", g->values[base].name, suffix);
    int v = pvg_value_get(g, name);
    if (v < 0) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory rewriting float16 to float32");
    pvg_value *val = &g->values[v];
    if (val->is_const || val->is_input || val->producer >= 0)
        return pvc_fail(&g->msg, PV_EINTERNAL, "value name '%s' already taken", name);
    val->decl = g->values[base].decl;
    val->decl.data = NULL;
    val->decl.dtype = t;
    *out = v;
    return PV_OK;
}

/* Appends Cast(to) reading value in, writing value out. */
static pv_status cast_add(pvg_graph *g, int in, int out, int64_t to)
{
    char name[1024];
    snprintf(name, sizeof name, "%s::cast%lld", g->values[out].name, (long long)to);
    pvg_node *n;
    int before = g->nnodes;
    pv_status s = pvg_node_add(g, name, "Cast", "", 1, 1, &n);
    if (s != PV_OK) {
        if (g->nnodes > before) g->nodes[g->nnodes - 1].dead = true;
        return s;
    }
    n->dead = true;                 /* until complete */
    n->attrs = pvc_calloc(1, sizeof *n->attrs);
    if (!n->attrs) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory rewriting float16 to float32");
    n->nattrs = 1;
    if (!(n->attrs[0].name = pvc_strdup("to"))) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory rewriting float16 to float32");
    n->attrs[0].type = PVG_ATTR_INT;
    n->attrs[0].i = to;
    n->in[0] = in;
    n->out[0] = out;
    n->op = &pvg_op_Cast;
    n->dead = false;
    g->values[out].producer = g->nnodes - 1;
    return PV_OK;
}

/* Every live node among the first nn reading `from` reads `to` instead. */
static void readers_switch(pvg_graph *g, int nn, int from, int to)
{
    for (int i = 0; i < nn; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->nin; k++) if (n->in[k] == from) n->in[k] = to;
    }
}

/* Node i (one input, one output) becomes Cast(to=FLOAT16) -> Cast(to=FLOAT) on the same values. */
static pv_status round_through_f16(pvg_graph *g, int i)
{
    int x = g->nodes[i].in[0], y = g->nodes[i].out[0];
    if (x < 0 || y < 0) return PV_OK;
    g->nodes[i].dead = true;
    g->values[y].producer = -1;
    int h;
    pv_status s = value_new(g, y, "::f16", PV_F16, &h);
    if (s == PV_OK) s = cast_add(g, x, h, ONNX_FLOAT16);
    if (s == PV_OK) s = cast_add(g, h, y, ONNX_FLOAT);
    return s;
}

/* Does ORT read an explicit cast's float16 result rounded through reader n? Yes when n has a
 * float16 kernel that stores or moves it (measured: Identity, Cast, Transpose, Flatten,
 * Unsqueeze, Concat, Slice, Clip, Max; the other data movement ops and Min alike by their
 * kernels' type lists; another domain's op, to be safe); no when n computes in f32: ORT's
 * inserted Cast back to f32 cancels the explicit one on that edge only. */
static bool reads_rounded(const pvg_node *n)
{
    static const char *const keep[] = { "Identity", "Cast", "CastLike", "Reshape", "Transpose", "Squeeze",
                                        "Unsqueeze", "Flatten", "Concat", "Slice", "Split", "Gather",
                                        "GatherElements", "GatherND", "Expand", "Tile", "Pad", "DepthToSpace",
                                        "SpaceToDepth", "Clip", "Min", "Max" };
    if (*n->domain) return true;
    for (size_t k = 0; k < PVC_COUNTOF(keep); k++) if (!strcmp(n->op_type, keep[k])) return true;
    return false;
}

/* Counts the live readers of v that read it rounded (*rounded, a graph output counts) and not. */
static void readers_count(const pvg_graph *g, int v, int *rounded, int *exact)
{
    *rounded = g->values[v].is_output;
    *exact = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        bool reads = false;
        for (int k = 0; k < n->nin; k++) reads |= n->in[k] == v;
        if (n->dead || !reads) continue;
        if (reads_rounded(n)) (*rounded)++;
        else (*exact)++;
    }
}

/* Explicit Cast(to=FLOAT16) node i, as ORT computes it: readers that compute get the input as
 * f32 (Cast(to=FLOAT)), the others the float16 rounding. */
static pv_status explicit_cast(pvg_graph *g, int i)
{
    int x = g->nodes[i].in[0], y = g->nodes[i].out[0], rounded, exact;
    if (x < 0 || y < 0) return PV_OK;
    readers_count(g, y, &rounded, &exact);
    if (!rounded) { attr_find(&g->nodes[i], "to")->i = ONNX_FLOAT; return PV_OK; }
    pv_status s = PV_OK;
    if (exact) {
        int w;
        if ((s = value_new(g, y, "::exact", PV_F32, &w)) != PV_OK) return s;
        for (int j = 0; j < g->nnodes; j++) {
            pvg_node *n = &g->nodes[j];
            if (n->dead || reads_rounded(n)) continue;
            for (int k = 0; k < n->nin; k++) if (n->in[k] == y) n->in[k] = w;
        }
        if ((s = cast_add(g, x, w, ONNX_FLOAT)) != PV_OK) return s;
    }
    return round_through_f16(g, i);
}

/* CastLike(x, target) -> Cast(x, to=FLOAT16): the target is only a dtype, its values are unread. */
static pv_status castlike_to_cast(pvg_graph *g, pvg_node *n)
{
    char *op = pvc_strdup("Cast");
    pvg_attr *a = pvc_realloc(n->attrs, (size_t)(n->nattrs + 1) * sizeof *a);
    if (a) n->attrs = a;
    char *to = a ? pvc_strdup("to") : NULL;
    if (!op || !a || !to) {
        pvc_free(op);
        pvc_free(to);
        return pvc_fail(&g->msg, PV_ENOMEM, "out of memory rewriting float16 to float32");
    }
    memset(&a[n->nattrs], 0, sizeof *a);
    a[n->nattrs].name = to;
    a[n->nattrs].type = PVG_ATTR_INT;
    a[n->nattrs].i = ONNX_FLOAT16;
    n->nattrs++;
    pvc_free(n->op_type);
    n->op_type = op;
    n->op = &pvg_op_Cast;
    n->nin = 1;
    return PV_OK;
}

pv_status pvg_lift_f16(pvg_graph *g, int *count)
{
    const char *env = getenv("PERCEIVE_F16");
    if ((env && !strcmp(env, "staged")) || !graph_has_f16(g)) return PV_OK;
    if (refusal(g)) return PV_OK;
    int nn = g->nnodes, nv = g->nvalues;    /* nodes and values added below are already f32 */
    pv_status s = PV_OK;
    /* CastLike to a float16 target becomes Cast(to=FLOAT16) (the target's declaration changes below) */
    for (int i = 0; i < nn && s == PV_OK; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead || !is_default(n, "CastLike") || declared_dtype(g, n->in[1]) != PV_F16 || n->nout != 1) continue;
        s = castlike_to_cast(g, n);
    }
    for (int v = 0; v < nv && s == PV_OK; v++) {
        pvg_value *val = &g->values[v];
        if (val->decl.dtype != PV_F16) continue;
        (*count)++;
        if (val->is_const) {
            if (val->data) s = to_f32_data(g, &val->data, &val->decl);
        } else if (val->is_input) {
            int w;
            if ((s = value_new(g, v, "::f32", PV_F32, &w)) != PV_OK) return s;
            readers_switch(g, nn, v, w);
            s = cast_add(g, v, w, ONNX_FLOAT);
        } else if (val->is_output && val->producer >= 0) {
            int w;
            if ((s = value_new(g, v, "::f32", PV_F32, &w)) != PV_OK) return s;
            pvg_node *pr = &g->nodes[g->values[v].producer];
            for (int k = 0; k < pr->nout; k++) if (pr->out[k] == v) pr->out[k] = w;
            g->values[w].producer = g->values[v].producer;
            readers_switch(g, nn, v, w);
            s = cast_add(g, w, v, ONNX_FLOAT16);
        } else {
            val->decl.dtype = PV_F32;
        }
    }
    for (int i = 0; i < nn && s == PV_OK; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (cast_to(n, ONNX_FLOAT16) && n->nin == 1 && n->nout == 1) {
            s = explicit_cast(g, i);
            (*count)++;
        } else if ((is_default(n, "Constant") || is_default(n, "ConstantOfShape")) && attr_is_f16_tensor(n, "value")) {
            pvg_attr *a = attr_find(n, "value");
            if (a->t.data) s = to_f32_data(g, &a->t.data, &a->t);
            (*count)++;
        } else if (has_dtype_attr(n)) {
            pvg_attr *d = attr_find(n, "dtype");
            if (d && d->type == PVG_ATTR_INT && d->i == ONNX_FLOAT16) { d->i = ONNX_FLOAT; (*count)++; }
        }
    }
    return s;
}
