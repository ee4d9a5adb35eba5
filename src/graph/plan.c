/* Plans: for one set of input shapes, shape inference with evaluation of everything constant
 * (so Shape -> Gather -> Concat -> Reshape chains fold away), then the run order, lifetimes,
 * storage sharing (views and legal in-place), greedy-by-size arena offsets and workspace.
 * Replay (pvg_plan_run) binds the inputs and calls the kernels; it allocates nothing. */
#include "graph/graph.h"
#include "graph/plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 64
#define MAX_VALUE_BYTES ((size_t)1 << 40)

static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* Unread attributes are refused by name: an attribute perceive does not look at could change
 * the result, and a silent wrong answer is worse than a load error. */
static pv_status check_attrs_used(pvg_node *n, pvc_msg *msg)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!n->attrs[i].used)
            return pvc_fail(msg, PV_EUNSUPPORTED, "node '%s' (%s): attribute '%s' is not supported",
                            n->name, n->op_type, n->attrs[i].name);
    return PV_OK;
}

static pv_status check_outputs(const pvg_node *n, const pvc_tensor *out, int nout, pvc_msg *msg)
{
    for (int i = 0; i < nout; i++) {
        if (n->out[i] < 0) continue;
        const pvc_tensor *t = &out[i];
        /* left as the planner preset it: the model names an output the op does not produce
         * (fuzz_onnx: ConstantOfShape with two outputs), a model error, not ours */
        if (i > 0 && t->rank == -1 && t->dtype == PV_DTYPE_COUNT)
            return pvc_fail(msg, PV_EFORMAT, "node '%s' (%s): output %d is not produced by this operator "
                            "(the node names %d outputs)", n->name, n->op_type, i, nout);
        if ((unsigned)t->dtype >= PV_DTYPE_COUNT || t->rank < 0 || t->rank > PV_MAX_RANK)
            return pvc_fail(msg, PV_EINTERNAL, "node '%s' (%s): output %d has no valid type/rank after shape inference", n->name, n->op_type, i);
        int64_t numel = 1;
        for (int k = 0; k < t->rank; k++) {
            if (t->dims[k] < 0) return pvc_fail(msg, PV_EINTERNAL, "node '%s' (%s): output %d has dimension %d = %lld", n->name, n->op_type, i, k, (long long)t->dims[k]);
            if (pvc_mul_overflow(numel, t->dims[k], &numel) || (size_t)numel > MAX_VALUE_BYTES)
                return pvc_fail(msg, PV_EFORMAT, "node '%s' (%s): output %d would be larger than 1 TiB", n->name, n->op_type, i);
        }
        if ((size_t)numel * pv_dtype_size(t->dtype) > MAX_VALUE_BYTES)
            return pvc_fail(msg, PV_EFORMAT, "node '%s' (%s): output %d would be larger than 1 TiB", n->name, n->op_type, i);
    }
    return PV_OK;
}

pv_status pvg_node_prepare(pvg_graph *g, pvg_node *n, const pvc_tensor *in, pvc_tensor *out,
                           void *params, size_t *workspace, pvc_msg *msg)
{
    pvg_prep p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.node = n;
    p.nin = n->nin;
    p.nout = n->nout;
    p.in = in;
    p.out = out;
    p.params = params;
    p.opset = g->opset;
    p.msg = msg;
    p.threads = g->threads;
    p.precision = g->precision;
    memset(params, 0, PVG_PARAMS_BYTES);
    for (int i = 0; i < n->nout; i++) { memset(&out[i], 0, sizeof out[i]); out[i].rank = -1; out[i].dtype = PV_DTYPE_COUNT; }
    for (int i = 0; i < n->nattrs; i++) n->attrs[i].used = false;
    pv_status s = n->op->prepare(&p);
    if (s == PV_OK) s = check_attrs_used(n, msg);
    if (s == PV_OK) s = check_outputs(n, out, n->nout, msg);
    if (s != PV_OK) { pvg_node_release(n, params); return s; }
    n->consumed = p.consumed;
    for (int i = 0; i < n->nout; i++) if (out[i].rank >= 0) pvc_tensor_set_contiguous(&out[i]);
    *workspace = align_up(p.workspace);
    return PV_OK;
}

void pvg_node_release(const pvg_node *n, void *params)
{
    if (!n->op || !n->op->release) return;
    n->op->release(params);
    memset(params, 0, PVG_PARAMS_BYTES);
}

pv_status pvg_node_eval(pvg_node *n, const pvc_tensor *in, pvc_tensor *out, const void *params,
                        size_t workspace, pvc_pool *pool, void ***owned, int *nowned, pvc_msg *msg)
{
    /* outputs get fresh buffers, recorded in *owned so their owner frees them */
    for (int i = 0; i < n->nout; i++) {
        if (n->out[i] < 0) continue;
        if ((n->op->flags & PVG_OP_ALIAS) && i == 0) { out[0].data = in[0].data; continue; }
        void *d = pvc_malloc_aligned(pvc_nbytes(&out[i]) ? pvc_nbytes(&out[i]) : 1);
        void **grown = pvc_realloc(*owned, (size_t)(*nowned + 1) * sizeof **owned);
        if (!d || !grown) {
            pvc_free_aligned(d);
            if (grown) *owned = grown;
            return pvc_fail(msg, PV_ENOMEM, "out of memory evaluating constant node '%s'", n->name);
        }
        *owned = grown;
        (*owned)[(*nowned)++] = d;
        out[i].data = d;
    }
    if (!n->op->run) return PV_OK;
    void *ws = workspace ? pvc_malloc_aligned(workspace) : NULL;
    if (workspace && !ws) return pvc_fail(msg, PV_ENOMEM, "out of memory evaluating constant node '%s'", n->name);
    pvg_exec x = { n, params, in, n->nin, out, n->nout, ws, pool };
    pv_status s = n->op->run(&x);
    pvc_free_aligned(ws);
    if (s != PV_OK && msg && !msg->text[0])
        pvc_fail(msg, s, "node '%s' (%s) failed while evaluating constants", n->name, n->op_type);
    return s;
}

void pvg_plan_free(pvg_plan *p)
{
    if (!p) return;
    pvg_plan_profile_print(p, stderr, NULL);
    /* nodes folded at plan time were released right after their evaluation */
    for (int s = 0; p->params && s < p->norder; s++) {
        int ni = p->order[s];
        pvg_node_release(&p->g->nodes[ni], p->params + (size_t)ni * PVG_PARAMS_BYTES);
    }
    for (int i = 0; i < p->nowned; i++) pvc_free_aligned(p->owned[i]);
    pvc_free(p->owned);
    pvc_free(p->vals);
    pvc_free(p->order);
    pvc_free(p->params);
    pvc_free(p->ws_node);
    pvc_free(p->offset);
    pvc_free(p->size);
    pvc_free(p->first);
    pvc_free(p->last);
    pvc_free(p->storage);
    pvc_free(p->suboff);
    pvc_free(p->in_desc);
    pvc_free(p->xin);
    pvc_free(p->xout);
    pvc_free_aligned(p->arena);
    pvc_free_aligned(p->ws);
    pvc_free(p->prof_ms);
    pvc_free(p->solo);
    pvc_free(p);
}

static pv_status check_input(pvg_graph *g, int idx, const pvc_tensor *t, pvc_msg *msg)
{
    const pvg_value *v = &g->values[g->inputs[idx]];
    char a[96], b[96];
    if (v->decl.rank < 0) {   /* an input made by pvg_graph_cut from an undeclared value */
        int64_t numel = 1;
        if (t->rank < 0 || t->rank > PV_MAX_RANK) return pvc_fail(msg, PV_EINPUT, "input '%s': rank %d", v->name, t->rank);
        for (int k = 0; k < t->rank; k++)
            if (t->dims[k] < 0 || pvc_mul_overflow(numel, t->dims[k], &numel) || (size_t)numel > MAX_VALUE_BYTES)
                return pvc_fail(msg, PV_EINPUT, "input '%s': shape %s is invalid or too large", v->name, pvc_shape_str(t, a, sizeof a));
        return PV_OK;
    }
    if (t->dtype != v->decl.dtype)
        return pvc_fail(msg, PV_EINPUT, "input '%s': dtype %s, the graph declares %s", v->name, pv_dtype_name(t->dtype), pv_dtype_name(v->decl.dtype));
    if (t->rank != v->decl.rank)
        return pvc_fail(msg, PV_EINPUT, "input '%s': shape %s has rank %d, the graph declares %s", v->name, pvc_shape_str(t, a, sizeof a), t->rank, pvc_shape_str(&v->decl, b, sizeof b));
    int64_t numel = 1;
    for (int k = 0; k < t->rank; k++) {
        if (t->dims[k] < 0 || (v->decl.dims[k] >= 0 && v->decl.dims[k] != t->dims[k]))
            return pvc_fail(msg, PV_EINPUT, "input '%s': shape %s does not match the declared %s (dimension %d)", v->name, pvc_shape_str(t, a, sizeof a), pvc_shape_str(&v->decl, b, sizeof b), k);
        if (pvc_mul_overflow(numel, t->dims[k], &numel) || (size_t)numel > MAX_VALUE_BYTES)
            return pvc_fail(msg, PV_EINPUT, "input '%s': shape %s is too large", v->name, pvc_shape_str(t, a, sizeof a));
    }
    return PV_OK;
}

bool pvg_is_shape_input(const pvc_tensor *t)
{
    return (t->dtype == PV_I64 || t->dtype == PV_I32) && t->data && pvc_numel(t) <= PVG_SHAPE_INPUT_MAX;
}

bool pvg_plan_matches(const pvg_plan *p, const pvc_tensor *inputs)
{
    for (int i = 0; i < p->g->ninputs; i++) {
        const pvc_tensor *a = &p->in_desc[i], *b = &inputs[i];
        if (a->dtype != b->dtype || !pvc_same_shape(a, b)) return false;
        if ((a->data != NULL) != pvg_is_shape_input(b)) return false;
        if (a->data && memcmp(a->data, b->data, pvc_nbytes(a)) != 0) return false;
    }
    return true;
}

/* The layout pass: offers every activation and the nodes that read it (each once, as in[0]) to
 * the producer's link hook (see pvg_op.link). After place(), so views and in-place sharing are
 * known: a value another value shares bytes with is never offered. PERCEIVE_LAYOUT=0 turns the
 * pass off. */
static pv_status link_layouts(pvg_plan *p, pvc_msg *msg)
{
    const char *e = getenv("PERCEIVE_LAYOUT");
    if (e && !strcmp(e, "0")) return PV_OK;
    enum { MAXC = 8 };
    pvg_graph *g = p->g;
    int nv = g->nvalues;
    /* readers[v]: reads as in[0] count 1, any other read (or a view, a graph output) 1000 */
    int *readers = pvc_calloc((size_t)nv + 1, sizeof *readers);
    if (!readers) return pvc_fail(msg, PV_ENOMEM, "out of memory planning");
    for (int s = 0; s < p->norder; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0) readers[n->in[k]] += k == 0 ? 1 : 1000;
    }
    for (int v = 0; v < nv; v++) if (p->storage[v] != v) readers[p->storage[v]] += 1000;   /* viewed */
    for (int i = 0; i < g->noutputs; i++) readers[g->outputs[i]] += 1000;
    for (int s = 0; s < p->norder; s++) {
        int ai = p->order[s];
        const pvg_node *a = &g->nodes[ai];
        int v = a->nout > 0 ? a->out[0] : -1;
        if (!a->op->link || v < 0 || readers[v] < 1 || readers[v] > MAXC || p->storage[v] != v || p->vals[v].data) continue;
        const pvg_node *cn[MAXC];
        void *cp[MAXC];
        size_t cws[MAXC];
        int ci[MAXC], nc = 0;
        for (int t = s + 1; t < p->norder && nc < readers[v]; t++) {
            const pvg_node *b = &g->nodes[p->order[t]];
            if (b->nin > 0 && b->in[0] == v) {
                cn[nc] = b;
                ci[nc] = p->order[t];
                cws[nc] = p->ws_node[p->order[t]];
                cp[nc++] = p->params + (size_t)p->order[t] * PVG_PARAMS_BYTES;
            }
        }
        if (nc != readers[v]) continue;
        a->op->link(p->params + (size_t)ai * PVG_PARAMS_BYTES, cn, cp, nc, cws);
        for (int k = 0; k < nc; k++) {     /* a remade consumer may need more workspace */
            p->ws_node[ci[k]] = cws[k];
            if (cws[k] > p->ws_bytes) p->ws_bytes = cws[k];
        }
    }
    pvc_free(readers);
    return PV_OK;
}

/* g->drop_consumed: a constant is freed as soon as the last node reading it is prepared, when
 * every reader copied it into its own layout (pvg_prep.consumed: weights packed for a GEMM,
 * reordered for oneDNN), so the process holds the weights once and its peak stays near one copy.
 * Constants read by nodes folded at plan time and graph outputs stay.
 * pending[v]: reader slots not prepared yet; keep[v]: some reader still needs the bytes. */
typedef struct drop_state { int *pending; unsigned char *keep; } drop_state;

static pv_status drop_begin(const pvg_graph *g, drop_state *d, pvc_msg *msg)
{
    memset(d, 0, sizeof *d);
    if (!g->drop_consumed) return PV_OK;
    d->pending = pvc_calloc((size_t)g->nvalues + 1, sizeof *d->pending);
    d->keep = pvc_calloc((size_t)g->nvalues + 1, 1);
    if (!d->pending || !d->keep) return pvc_fail(msg, PV_ENOMEM, "out of memory planning");
    /* dead nodes (replaced by a fusion: the MatMul + Add a Linear took over) never run: their
     * reads do not hold a constant (counting them kept every fused weight twice) */
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin && !g->nodes[i].dead; k++)
            if (g->nodes[i].in[k] >= 0) d->pending[g->nodes[i].in[k]]++;
    for (int i = 0; i < g->noutputs; i++) d->keep[g->outputs[i]] = 1;
    return PV_OK;
}

/* After node n is prepared (folded: evaluated at plan time, its params released). */
static void drop_after(pvg_plan *p, drop_state *d, const pvg_node *n, bool folded)
{
    if (!d->pending) return;
    for (int k = 0; k < n->nin; k++) {
        int v = n->in[k];
        pvg_value *val = v >= 0 ? &p->g->values[v] : NULL;
        if (!val || !val->is_const || !val->data) continue;
        if (folded || k >= 32 || !(n->consumed & (1u << k))) d->keep[v] = 1;
        if (--d->pending[v] > 0 || d->keep[v]) continue;
        pvc_free_aligned(val->data);
        val->data = NULL;
        p->vals[v].data = NULL;
    }
}

static void drop_end(drop_state *d)
{
    pvc_free(d->pending);
    pvc_free(d->keep);
}

/* Concat along an axis with only 1-dims before it (outer == 1): each input is one contiguous
 * chunk of the output, so an input computed by a kernel can be written straight into its chunk
 * and the Concat's copy disappears (the BEVFusion neck joins two 33 MB maps this way). An input
 * is placed when an arena value that this step's producer writes (no view, no graph input or
 * constant), read once by this Concat, not yet placed anywhere, with a 64-byte aligned chunk
 * (an input that is itself a Concat output brings its own members along).
 * Its storage root becomes the output, whose lifetime then starts at its first member's. Runs
 * before views and in-place sharing are assigned, which then leave members alone (their
 * bytes belong to the output) or inherit their sub-offset (a view of a member). */
static void concat_in_place(pvg_plan *p, int *root_last)
{
    pvg_graph *g = p->g;
    for (int s = 0; s < p->norder; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        if (n->op != &pvg_op_Concat || n->nout < 1 || n->out[0] < 0) continue;
        int o = n->out[0];
        const pvc_tensor *ot = &p->vals[o];
        if (ot->data || g->values[o].is_input || p->first[o] < 0 || p->storage[o] != o) continue;
        int ax = pvg_concat_axis(p->params + (size_t)p->order[s] * PVG_PARAMS_BYTES);
        bool outer1 = ax >= 0 && ax < ot->rank;
        for (int d = 0; outer1 && d < ax; d++) outer1 = ot->dims[d] == 1;
        if (!outer1) continue;
        size_t off = 0;
        for (int k = 0; k < n->nin; k++) {
            int x = n->in[k];
            if (x < 0) continue;
            size_t nb = pvc_nbytes(&p->vals[x]);
            bool once = true;
            for (int j = 0; j < n->nin; j++) if (j != k && n->in[j] == x) once = false;
            int pi = g->values[x].producer;
            const pvg_node *pn = pi >= 0 ? &g->nodes[pi] : NULL;
            bool ok = once && nb > 0 && off % 64 == 0 && !p->vals[x].data && !g->values[x].is_input &&
                      p->first[x] >= 0 && p->storage[x] == x && x != o && pn && pn->op->run &&
                      !(pn->op->flags & PVG_OP_ALIAS);
            for (int i = 0; ok && i < g->noutputs; i++) ok = g->outputs[i] != x;
            if (ok) {
                /* x may be a Concat output with its own members (nested joins): they move
                 * into o too, at their place inside x's chunk */
                for (int v = 0; v < g->nvalues; v++)
                    if (v != x && p->storage[v] == x) { p->storage[v] = o; p->suboff[v] += off; }
                p->storage[x] = o;
                p->suboff[x] = off;
                if (p->first[x] < p->first[o]) p->first[o] = p->first[x];
                if (root_last[x] > root_last[o]) root_last[o] = root_last[x];
            }
            off += nb;
        }
    }
}

/* Storage assignment and arena offsets, after the run order is known. */
static pv_status place(pvg_plan *p, pvc_msg *msg)
{
    pvg_graph *g = p->g;
    int nv = g->nvalues, steps = p->norder;
    for (int v = 0; v < nv; v++) { p->first[v] = -1; p->last[v] = -1; p->storage[v] = v; p->offset[v] = SIZE_MAX; p->size[v] = 0; }
    /* value lifetimes over run steps */
    for (int s = 0; s < steps; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0 && !p->vals[n->out[k]].data) p->first[n->out[k]] = s;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) p->last[n->in[k]] = s;
    }
    for (int i = 0; i < g->noutputs; i++) p->last[g->outputs[i]] = steps;   /* outputs live past the end */
    /* storage roots: views share their input's root; in-place ops may take a dying input's */
    int *root_last = pvc_calloc((size_t)nv + 1, sizeof *root_last);
    if (!root_last) return pvc_fail(msg, PV_ENOMEM, "out of memory planning");
    for (int v = 0; v < nv; v++) { root_last[v] = p->last[v]; p->suboff[v] = 0; }
    const char *ce = getenv("PERCEIVE_CONCAT_IN_PLACE");
    if (!ce || strcmp(ce, "0")) concat_in_place(p, root_last);
    for (int s = 0; s < steps; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        int o = n->nout > 0 ? n->out[0] : -1, i0 = n->nin > 0 ? n->in[0] : -1;
        if (o < 0 || i0 < 0 || p->vals[o].data || p->storage[o] != o) continue;   /* placed in a Concat */
        int r = p->storage[i0];
        if (n->op->flags & PVG_OP_ALIAS) {
            p->storage[o] = r;
            p->suboff[o] = p->suboff[i0];
            if (root_last[o] > root_last[r]) root_last[r] = root_last[o];
            continue;
        }
        if (!(n->op->flags & PVG_OP_INPLACE)) continue;
        const pvg_value *rv = &g->values[r];
        bool arena_root = !rv->is_input && !p->vals[r].data;   /* not an input, not a constant */
        if (!arena_root || root_last[r] > s || pvc_nbytes(&p->vals[o]) != pvc_nbytes(&p->vals[i0])) continue;
        bool shared = false;
        for (int k = 1; k < n->nin; k++) if (n->in[k] >= 0 && p->storage[n->in[k]] == r) shared = true;
        for (int k = 1; k < n->nout; k++) if (n->out[k] >= 0 && p->storage[n->out[k]] == r) shared = true;
        if (shared) continue;
        p->storage[o] = r;
        p->suboff[o] = p->suboff[i0];
        if (root_last[o] > root_last[r]) root_last[r] = root_last[o];
        if (p->first[o] < p->first[r]) p->first[r] = p->first[o];
    }
    /* sizes per root (the largest member; views and in-place members have equal sizes) */
    for (int v = 0; v < nv; v++) {
        if (p->first[v] < 0 || p->vals[v].rank < 0) continue;
        int r = p->storage[v];
        if (g->values[r].is_input || p->vals[r].data) continue;
        size_t b = align_up(p->suboff[v] + pvc_nbytes(&p->vals[v]));
        if (b > p->size[r]) p->size[r] = b;
    }
    /* views of constants point at the constant */
    for (int v = 0; v < nv; v++) {
        int r = p->storage[v];
        if (r != v && p->vals[r].data && !g->values[r].is_input) p->vals[v].data = p->vals[r].data;
    }
    /* roots to place: arena roots with a producer in the run order */
    int *roots = pvc_calloc((size_t)nv + 1, sizeof *roots), nroots = 0;
    int *placed = pvc_calloc((size_t)nv + 1, sizeof *placed), nplaced = 0;
    if (!roots || !placed) { pvc_free(roots); pvc_free(placed); pvc_free(root_last); return pvc_fail(msg, PV_ENOMEM, "out of memory planning"); }
    for (int v = 0; v < nv; v++)
        if (p->storage[v] == v && p->first[v] >= 0 && !p->vals[v].data && !g->values[v].is_input) {
            roots[nroots++] = v;
            p->last[v] = root_last[v] < p->first[v] ? p->first[v] : root_last[v];
        }
    /* greedy by size: biggest first (ties: earlier first step, lower index), lowest gap that
     * fits among the already placed blocks whose lifetimes overlap. Deterministic. */
    for (int a = 1; a < nroots; a++) {
        int x = roots[a], b = a - 1;
        while (b >= 0) {
            int y = roots[b];
            bool before = p->size[x] > p->size[y] || (p->size[x] == p->size[y] &&
                          (p->first[x] < p->first[y] || (p->first[x] == p->first[y] && x < y)));
            if (!before) break;
            roots[b + 1] = y;
            b--;
        }
        roots[b + 1] = x;
    }
    size_t total = 0;
    for (int a = 0; a < nroots; a++) {
        int x = roots[a];
        size_t off = 0;
        /* repeat until no conflict: move past every overlapping block we collide with */
        for (bool moved = true; moved;) {
            moved = false;
            for (int b = 0; b < nplaced; b++) {
                int y = placed[b];
                if (p->last[y] < p->first[x] || p->last[x] < p->first[y]) continue;   /* disjoint in time */
                if (off + p->size[x] <= p->offset[y] || p->offset[y] + p->size[y] <= off) continue;
                off = p->offset[y] + p->size[y];
                moved = true;
            }
        }
        p->offset[x] = off;
        placed[nplaced++] = x;
        if (off + p->size[x] > total) total = off + p->size[x];
    }
    pvc_free(roots);
    pvc_free(placed);
    pvc_free(root_last);
    p->arena_bytes = total;
    /* members inherit the root's offset; lifetimes of members stay their own */
    for (int v = 0; v < nv; v++) {
        int r = p->storage[v];
        if (r != v && p->offset[r] != SIZE_MAX) p->offset[v] = p->offset[r] + p->suboff[v];
    }
    return PV_OK;
}

/* A small node (plan_work.c) is prepared again for one thread and marked to run without the
 * pool: kernels fixed at plan time (oneDNN primitives, per-thread buffers) then match the
 * NULL pool run passes it. p->solo is indexed by run step (p->norder: this node's). */
static pv_status solo_reprepare(pvg_plan *p, pvg_node *n, const pvc_tensor *in, pvc_tensor *o,
                                void *params, size_t *ws, double limit)
{
    if (!p->solo) return PV_OK;
    double work = pvg_node_work(n, in, o);
    if (work < 0 || work >= limit) return PV_OK;
    pvg_graph *g = p->g;
    pvg_node_release(n, params);
    int threads = g->threads;
    g->threads = 1;                 /* what pvg_node_prepare hands the op as pvg_prep.threads */
    pv_status s = pvg_node_prepare(g, n, in, o, params, ws, &g->msg);
    g->threads = threads;
    if (s == PV_OK) p->solo[p->norder] = 1;
    return s;
}

pv_status pvg_plan_create(pvg_graph *g, const pvc_tensor *inputs, pvg_plan **out)
{
    *out = NULL;
    pvc_msg *msg = &g->msg;
    pv_status s;
    for (int i = 0; i < g->ninputs; i++)
        if ((s = check_input(g, i, &inputs[i], msg)) != PV_OK) return s;
    pvg_plan *p = pvc_calloc(1, sizeof *p);
    if (!p) return pvc_fail(msg, PV_ENOMEM, "out of memory planning");
    p->g = g;
    int nv = g->nvalues, nn = g->nnodes;
    int maxio = 1;
    for (int i = 0; i < nn; i++) maxio = PVC_MAX(maxio, PVC_MAX(g->nodes[i].nin, g->nodes[i].nout));
    p->vals = pvc_calloc((size_t)nv + 1, sizeof *p->vals);
    p->order = pvc_calloc((size_t)nn + 1, sizeof *p->order);
    p->params = pvc_calloc((size_t)nn + 1, PVG_PARAMS_BYTES);
    p->ws_node = pvc_calloc((size_t)nn + 1, sizeof *p->ws_node);
    p->offset = pvc_calloc((size_t)nv + 1, sizeof *p->offset);
    p->size = pvc_calloc((size_t)nv + 1, sizeof *p->size);
    p->first = pvc_calloc((size_t)nv + 1, sizeof *p->first);
    p->last = pvc_calloc((size_t)nv + 1, sizeof *p->last);
    p->storage = pvc_calloc((size_t)nv + 1, sizeof *p->storage);
    p->suboff = pvc_calloc((size_t)nv + 1, sizeof *p->suboff);
    p->in_desc = pvc_calloc((size_t)g->ninputs + 1, sizeof *p->in_desc);
    p->xin = pvc_calloc((size_t)maxio, sizeof *p->xin);
    p->xout = pvc_calloc((size_t)maxio, sizeof *p->xout);
    int *topo = pvc_calloc((size_t)nn + 1, sizeof *topo);
    drop_state drop = { NULL, NULL };
    if (!p->vals || !p->order || !p->params || !p->ws_node || !p->offset || !p->size || !p->first ||
        !p->last || !p->storage || !p->suboff || !p->in_desc || !p->xin || !p->xout || !topo) {
        s = pvc_fail(msg, PV_ENOMEM, "out of memory planning");
        goto fail;
    }
    for (int v = 0; v < nv; v++) {
        p->vals[v].rank = -1;
        if (g->values[v].is_const) { p->vals[v] = g->values[v].decl; p->vals[v].data = g->values[v].data; }
    }
    for (int i = 0; i < g->ninputs; i++) {
        p->in_desc[i] = inputs[i];
        p->in_desc[i].data = NULL;
        p->in_desc[i].name = g->values[g->inputs[i]].name;
        pvc_tensor_set_contiguous(&p->in_desc[i]);
        if (pvg_is_shape_input(&inputs[i])) {
            /* a shape tensor: its values are part of this plan's key */
            size_t nb = pvc_nbytes(&inputs[i]);
            void *copy = pvc_malloc_aligned(nb ? nb : 1);
            void **grown = pvc_realloc(p->owned, (size_t)(p->nowned + 1) * sizeof *p->owned);
            if (!copy || !grown) {
                pvc_free_aligned(copy);
                if (grown) p->owned = grown;
                s = pvc_fail(msg, PV_ENOMEM, "out of memory planning");
                goto fail;
            }
            p->owned = grown;
            p->owned[p->nowned++] = copy;
            if (nb) memcpy(copy, inputs[i].data, nb);
            p->in_desc[i].data = copy;
        }
        p->vals[g->inputs[i]] = p->in_desc[i];
    }
    int ntopo = 0;
    double solo_limit = pvg_solo_limit();
    if ((g->threads > 1 || (g->threads == 0 && pvc_default_threads() > 1)) && solo_limit > 0) {
        p->solo = pvc_calloc((size_t)nn + 1, 1);
        if (!p->solo) { s = pvc_fail(msg, PV_ENOMEM, "out of memory planning"); goto fail; }
    }
    if ((s = pvg_graph_toposort(g, topo, &ntopo)) != PV_OK) goto fail;
    if ((s = drop_begin(g, &drop, msg)) != PV_OK) goto fail;
    for (int t = 0; t < ntopo; t++) {
        int ni = topo[t];
        pvg_node *n = &g->nodes[ni];
        pvc_tensor *in = p->xin, *o = p->xout;
        bool all_const = true;
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) { memset(&in[k], 0, sizeof in[k]); in[k].rank = -1; continue; }
            in[k] = p->vals[n->in[k]];
            if (in[k].rank < 0) { s = pvc_fail(msg, PV_EINTERNAL, "node '%s': input %d has no shape", n->name, k); goto fail; }
            if (!in[k].data && !(n->op->flags & PVG_OP_SHAPE_ONLY)) all_const = false;
        }
        void *params = p->params + (size_t)ni * PVG_PARAMS_BYTES;
        if ((s = pvg_node_prepare(g, n, in, o, params, &p->ws_node[ni], msg)) != PV_OK) goto fail;
        size_t out_bytes = 0;
        for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) out_bytes += pvc_nbytes(&o[k]);
        if (all_const && !(n->op->flags & PVG_OP_NOFOLD) && out_bytes <= PVG_FOLD_LIMIT) {
            s = pvg_node_eval(n, in, o, params, p->ws_node[ni], NULL, &p->owned, &p->nowned, msg);
            pvg_node_release(n, params);
            if (s != PV_OK) goto fail;
            for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) p->vals[n->out[k]] = o[k];
            p->const_bytes += out_bytes;
            drop_after(p, &drop, n, true);
            continue;
        }
        if ((s = solo_reprepare(p, n, in, o, params, &p->ws_node[ni], solo_limit)) != PV_OK) goto fail;
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) { p->vals[n->out[k]] = o[k]; p->vals[n->out[k]].data = NULL; }
        drop_after(p, &drop, n, false);
        p->order[p->norder++] = ni;
        if (p->ws_node[ni] > p->ws_bytes) p->ws_bytes = p->ws_node[ni];
    }
    for (int i = 0; i < g->noutputs; i++)
        if (p->vals[g->outputs[i]].rank < 0) { s = pvc_fail(msg, PV_EFORMAT, "graph output '%s' is never computed", g->values[g->outputs[i]].name); goto fail; }
    if ((s = place(p, msg)) != PV_OK) goto fail;
    if ((s = link_layouts(p, msg)) != PV_OK) goto fail;
    if (p->arena_bytes) {
        p->arena = pvc_malloc_aligned(p->arena_bytes);
        if (!p->arena) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the arena (%zu bytes)", p->arena_bytes); goto fail; }
    }
    if (p->ws_bytes) {
        p->ws = pvc_malloc_aligned(p->ws_bytes);
        if (!p->ws) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the workspace (%zu bytes)", p->ws_bytes); goto fail; }
    }
    /* touch every page now, so a plan's first run does not pay the page faults (a bundle that
     * warms up one variant gets the others' first calls at the steady speed too) */
    if (p->arena) memset(p->arena, 0, p->arena_bytes);
    if (p->ws) memset(p->ws, 0, p->ws_bytes);
    /* no arena (every placed value is empty): their data stays NULL; NULL + 0 is UB (fuzz_onnx) */
    for (int v = 0; v < nv && p->arena; v++)
        if (p->offset[v] != SIZE_MAX && !p->vals[v].data) p->vals[v].data = (char *)p->arena + p->offset[v];
    const char *prof = getenv("PERCEIVE_PROFILE");
    if (prof && *prof && strcmp(prof, "0")) p->prof_ms = pvc_calloc((size_t)p->norder + 1, sizeof *p->prof_ms);
    drop_end(&drop);
    pvc_free(topo);
    *out = p;
    return PV_OK;
fail:
    drop_end(&drop);
    pvc_free(topo);
    pvg_plan_free(p);
    return s;
}

pv_status pvg_plan_run(pvg_plan *p, const pvc_tensor *inputs, pvc_pool *pool, pvc_tensor *outputs)
{
    pvg_graph *g = p->g;
    for (int i = 0; i < g->ninputs; i++) {
        int v = g->inputs[i];
        if (!p->in_desc[i].data) p->vals[v].data = inputs[i].data;   /* shape tensors keep the plan's copy */
    }
    /* values that view a graph input (Reshape of an input) follow its pointer */
    for (int v = 0; v < g->nvalues; v++) {
        int r = p->storage[v];
        if (r != v && g->values[r].is_input) p->vals[v].data = p->vals[r].data;
    }
    for (int s = 0; s < p->norder; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) { memset(&p->xin[k], 0, sizeof p->xin[k]); p->xin[k].rank = -1; }
            else p->xin[k] = p->vals[n->in[k]];
        }
        for (int k = 0; k < n->nout; k++) {
            if (n->out[k] < 0) { memset(&p->xout[k], 0, sizeof p->xout[k]); p->xout[k].rank = -1; }
            else p->xout[k] = p->vals[n->out[k]];
        }
        if (!n->op->run) continue;          /* views: bytes already shared */
        pvg_exec x = { n, p->params + (size_t)p->order[s] * PVG_PARAMS_BYTES, p->xin, n->nin, p->xout, n->nout, p->ws,
                       p->solo && p->solo[s] ? NULL : pool };
        double t0 = p->prof_ms ? pvc_now_ms() : 0.0;
        pv_status st = n->op->run(&x);
        if (p->prof_ms) p->prof_ms[s] += pvc_now_ms() - t0;
        if (st != PV_OK) {
            const char *why = pv_last_error();
            return pvc_fail(&g->msg, st, "node '%s' (%s): %s", n->name, n->op_type, why && *why ? why : pv_status_str(st));
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        outputs[i] = p->vals[g->outputs[i]];
        outputs[i].name = g->values[g->outputs[i]].name;
    }
    if (p->prof_ms) p->prof_runs++;
    return PV_OK;
}

/* PERCEIVE_PROFILE: per-op-type time of this plan's runs, slowest first, to f. */
void pvg_plan_profile_print(const pvg_plan *p, FILE *f, const char *title)
{
    if (!p || !p->prof_ms || !p->prof_runs) return;
    const pvg_graph *g = p->g;
    enum { MAXT = 128 };
    const char *type[MAXT];
    double ms[MAXT];
    int cnt[MAXT], nt = 0;
    double total = 0;
    for (int s = 0; s < p->norder; s++) {
        const pvg_node *n = &g->nodes[p->order[s]];
        int k = 0;
        while (k < nt && strcmp(type[k], n->op_type)) k++;
        if (k == nt) { if (nt == MAXT) continue; type[nt] = n->op_type; ms[nt] = 0; cnt[nt] = 0; nt++; }
        ms[k] += p->prof_ms[s] / p->prof_runs;
        cnt[k]++;
        total += p->prof_ms[s] / p->prof_runs;
    }
    int nsolo = 0;
    for (int s = 0; p->solo && s < p->norder; s++) nsolo += p->solo[s];
    fprintf(f, "profile %s: %.2f ms per run over %d runs (%d of %d nodes small: one thread)\n", title ? title : "",
            total, p->prof_runs, nsolo, p->norder);
    for (int i = 0; i < nt; i++) {
        int b = i;
        for (int k = i + 1; k < nt; k++) if (ms[k] > ms[b]) b = k;
        const char *tt = type[i]; double tm = ms[i]; int tc = cnt[i];
        type[i] = type[b]; ms[i] = ms[b]; cnt[i] = cnt[b];
        type[b] = tt; ms[b] = tm; cnt[b] = tc;
        fprintf(f, "  %-24s %5d nodes %10.2f ms %5.1f%%\n", type[i], cnt[i], ms[i], total > 0 ? 100 * ms[i] / total : 0);
    }
    /* PERCEIVE_PROFILE=nodes: also the slowest nodes by name */
    const char *prof = getenv("PERCEIVE_PROFILE");
    if (!prof || strcmp(prof, "nodes")) return;
    enum { TOP = 25 };
    int top[TOP], ntop = 0;
    for (int s = 0; s < p->norder; s++) {
        int k = ntop;
        if (ntop == TOP) { k = TOP - 1; if (p->prof_ms[s] <= p->prof_ms[top[k]]) continue; }
        else ntop++;
        top[k] = s;
        for (; k > 0 && p->prof_ms[top[k]] > p->prof_ms[top[k - 1]]; k--) { int t = top[k]; top[k] = top[k - 1]; top[k - 1] = t; }
    }
    for (int i = 0; i < ntop; i++) {
        const pvg_node *n = &g->nodes[p->order[top[i]]];
        const void *params = p->params + (size_t)p->order[top[i]] * PVG_PARAMS_BYTES;
        const char *path = n->op->describe ? n->op->describe(params) : "";
        fprintf(f, "    %-40s %-16s %9.2f ms  %s\n", n->name, n->op_type, p->prof_ms[top[i]] / p->prof_runs, path);
    }
}

void pvg_plan_info_get(const pvg_plan *p, pvg_plan_info *info)
{
    info->arena_bytes = p->arena_bytes;
    info->ws_bytes = p->ws_bytes;
    info->const_bytes = p->const_bytes;
    info->nvalues = p->g->nvalues;
    info->norder = p->norder;
    info->order = p->order;
    info->offset = p->offset;
    info->size = p->size;
    info->first = p->first;
    info->last = p->last;
    info->storage = p->storage;
}

const pvc_tensor *pvg_plan_value(const pvg_plan *p, int v) { return &p->vals[v]; }
