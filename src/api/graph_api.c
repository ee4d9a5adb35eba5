/* The public pv_graph_* API: load + passes at open, one plan per input-shape variant (kept,
 * least recently used evicted past PV_MAX_PLANS), replay per run. Calls on one handle are
 * serialized by its lock. */
#include "graph/onnx.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PV_MAX_PLANS 8

struct pv_graph {
    pvg_graph      *g;
    pvc_pool       *pool;
    pvg_plan       *plans[PV_MAX_PLANS];
    unsigned long   used[PV_MAX_PLANS];
    unsigned long   tick;
    int             last;           /* index of the last plan run, -1 none */
    pvc_tensor     *bound;          /* inputs in graph order, scratch for run */
    pvg_pass_stats  passes;
    char            prec_note[160]; /* why the requested precision is not the one run, or "" */
    pvc_msg         msg;
    pthread_mutex_t mu;
};

static pv_status open_common(pvg_graph *g, const pv_graph_options *opt, pv_graph **out)
{
    pv_graph *h = pvc_calloc(1, sizeof *h);
    if (!h) { pvg_graph_free(g); return pvc_fail(NULL, PV_ENOMEM, "out of memory opening a graph"); }
    h->g = g;
    h->last = -1;
    pthread_mutex_init(&h->mu, NULL);
    pv_status s = pvc_precision_resolve(opt ? (int)opt->precision : 0, &g->precision, h->prec_note, sizeof h->prec_note);
    if (s != PV_OK) goto fail;
    s = pvg_passes_run(g, !(opt && opt->no_fuse), &h->passes);
    if (s != PV_OK) { pvc_fail(NULL, s, "%s", g->msg.text); goto fail; }
    h->bound = pvc_calloc((size_t)g->ninputs + 1, sizeof *h->bound);
    if (!h->bound) { s = pvc_fail(NULL, PV_ENOMEM, "out of memory opening a graph"); goto fail; }
    if ((s = pvc_pool_create(opt ? opt->threads : 0, &h->pool)) != PV_OK) goto fail;
    g->threads = pvc_pool_threads(h->pool);   /* kernels fixed at plan time size for it */
    /* Inputs with fully declared shapes: plan now, so a bad model fails at open, not at the
     * first run, and the first run costs what every run costs. */
    bool fixed = true;
    for (int i = 0; i < g->ninputs; i++) {
        const pvc_tensor *d = &g->values[g->inputs[i]].decl;
        for (int k = 0; k < d->rank; k++) if (d->dims[k] < 0) fixed = false;
        /* a small integer input may be a shape tensor, planned per value at run */
        if ((d->dtype == PV_I64 || d->dtype == PV_I32) && pvc_numel(d) <= PVG_SHAPE_INPUT_MAX) fixed = false;
        h->bound[i] = *d;
        h->bound[i].name = g->values[g->inputs[i]].name;
    }
    /* fixed shapes: this is the only plan, so weights copied into kernel layouts are freed */
    g->drop_consumed = fixed;
    if (fixed && (s = pvg_plan_create(g, h->bound, &h->plans[0])) != PV_OK) {
        pvc_fail(NULL, s, "%s", g->msg.text);
        goto fail;
    }
    *out = h;
    return PV_OK;
fail:
    pv_graph_close(h);
    return s;
}

pv_status pv_graph_open_memory(const void *buf, size_t len, const char *base_dir,
                               const pv_graph_options *opt, pv_graph **out)
{
    if (!out) return pvc_fail(NULL, PV_EINPUT, "pv_graph_open_memory: out is NULL");
    *out = NULL;
    if (!buf) return pvc_fail(NULL, PV_EINPUT, "pv_graph_open_memory: buf is NULL");
    if (opt && (opt->threads < 0 || opt->threads > 1024))
        return pvc_fail(NULL, PV_EINPUT, "threads: %d is out of range [0, 1024]", opt->threads);
    pvg_graph *g = NULL;
    pvc_msg msg = {{0}};
    pv_status s = pvg_graph_load_onnx(buf, len, base_dir, &g, &msg);
    if (s != PV_OK) return pvc_fail(NULL, s, "%s", msg.text);
    return open_common(g, opt, out);
}

pv_status pv_graph_open(const char *path, const pv_graph_options *opt, pv_graph **out)
{
    if (!out) return pvc_fail(NULL, PV_EINPUT, "pv_graph_open: out is NULL");
    *out = NULL;
    if (!path) return pvc_fail(NULL, PV_EINPUT, "pv_graph_open: path is NULL");
    void *buf = NULL;
    size_t len = 0;
    pvc_msg msg = {{0}};
    pv_status s = pvg_read_file(path, &buf, &len, &msg);
    if (s != PV_OK) return s;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    s = pv_graph_open_memory(buf, len, dir, opt, out);
    pvc_free(buf);
    if (s != PV_OK) {
        char m[PVC_MSG_LEN];
        snprintf(m, sizeof m, "%s: %s", path, pv_last_error());
        pvc_set_last_error(m);
    }
    return s;
}

void pv_graph_close(pv_graph *h)
{
    if (!h) return;
    for (int i = 0; i < PV_MAX_PLANS; i++) pvg_plan_free(h->plans[i]);
    pvc_pool_free(h->pool);
    pvg_graph_free(h->g);
    pvc_free(h->bound);
    pthread_mutex_destroy(&h->mu);
    pvc_free(h);
}

int pv_graph_num_inputs(const pv_graph *h) { return h ? h->g->ninputs : 0; }
int pv_graph_num_outputs(const pv_graph *h) { return h ? h->g->noutputs : 0; }

pv_status pv_graph_input(const pv_graph *h, int i, pv_tensor *desc)
{
    if (!h || !desc || i < 0 || i >= h->g->ninputs) return pvc_fail(NULL, PV_EINPUT, "pv_graph_input: index %d out of range", i);
    const pvg_value *v = &h->g->values[h->g->inputs[i]];
    *desc = v->decl;
    desc->name = v->name;
    desc->data = NULL;
    return PV_OK;
}

pv_status pv_graph_output(const pv_graph *h, int i, pv_tensor *desc)
{
    if (!h || !desc || i < 0 || i >= h->g->noutputs) return pvc_fail(NULL, PV_EINPUT, "pv_graph_output: index %d out of range", i);
    const pvg_value *v = &h->g->values[h->g->outputs[i]];
    *desc = v->decl;
    desc->name = v->name;
    desc->data = NULL;
    return PV_OK;
}

const char *pv_graph_errmsg(const pv_graph *h) { return h ? h->msg.text : pv_last_error(); }

static pv_status bind_inputs(pv_graph *h, const pv_tensor *inputs, size_t n_in)
{
    pvg_graph *g = h->g;
    if (n_in != (size_t)g->ninputs)
        return pvc_fail(&h->msg, PV_EINPUT, "the graph has %d inputs, %zu given", g->ninputs, n_in);
    bool by_name = n_in > 0 && inputs[0].name != NULL;
    for (int i = 0; i < g->ninputs; i++) {
        const char *want = g->values[g->inputs[i]].name;
        const pv_tensor *t = NULL;
        if (by_name) {
            for (size_t k = 0; k < n_in; k++)
                if (inputs[k].name && !strcmp(inputs[k].name, want)) t = &inputs[k];
            if (!t) return pvc_fail(&h->msg, PV_EINPUT, "input '%s' is missing", want);
        } else t = &inputs[i];
        if ((unsigned)t->dtype >= PV_DTYPE_COUNT || t->rank < 0 || t->rank > PV_MAX_RANK)
            return pvc_fail(&h->msg, PV_EINPUT, "input '%s': invalid dtype %d or rank %d", want, (int)t->dtype, t->rank);
        if (!pvc_tensor_is_contiguous(t))
            return pvc_fail(&h->msg, PV_EINPUT, "input '%s': strided inputs are not supported; pass a contiguous tensor", want);
        if (!t->data && pvc_numel(t) > 0) return pvc_fail(&h->msg, PV_EINPUT, "input '%s': data is NULL", want);
        h->bound[i] = *t;
        h->bound[i].name = want;
    }
    if (by_name)
        for (size_t k = 0; k < n_in; k++)
            if (!inputs[k].name || pvg_value_find(g, inputs[k].name) < 0 || !g->values[pvg_value_find(g, inputs[k].name)].is_input)
                return pvc_fail(&h->msg, PV_EINPUT, "input '%s' is not an input of the graph", inputs[k].name ? inputs[k].name : "(null)");
    return PV_OK;
}

pv_status pv_graph_run(pv_graph *h, const pv_tensor *inputs, size_t n_in, pv_tensor *outputs, size_t *n_out)
{
    if (!h) return pvc_fail(NULL, PV_EINPUT, "pv_graph_run: graph is NULL");
    if (!n_out || (!outputs && *n_out)) return pvc_fail(&h->msg, PV_EINPUT, "pv_graph_run: outputs/n_out is NULL");
    if (!inputs && n_in) return pvc_fail(&h->msg, PV_EINPUT, "pv_graph_run: inputs is NULL");
    pthread_mutex_lock(&h->mu);
    pv_status s = bind_inputs(h, inputs, n_in);
    if (s != PV_OK) goto out;
    if (*n_out < (size_t)h->g->noutputs) {
        s = pvc_fail(&h->msg, PV_EINPUT, "outputs has room for %zu tensors, the graph has %d outputs", *n_out, h->g->noutputs);
        *n_out = (size_t)h->g->noutputs;
        goto out;
    }
    int k = -1;
    for (int i = 0; i < PV_MAX_PLANS; i++)
        if (h->plans[i] && pvg_plan_matches(h->plans[i], h->bound)) { k = i; break; }
    if (k < 0) {
        for (int i = 0; i < PV_MAX_PLANS && k < 0; i++) if (!h->plans[i]) k = i;
        if (k < 0) {                      /* evict the least recently used plan */
            k = 0;
            for (int i = 1; i < PV_MAX_PLANS; i++) if (h->used[i] < h->used[k]) k = i;
            pvg_plan_free(h->plans[k]);
            h->plans[k] = NULL;
        }
        s = pvg_plan_create(h->g, h->bound, &h->plans[k]);
        if (s != PV_OK) { h->msg = h->g->msg; goto out; }
    }
    h->used[k] = ++h->tick;
    h->last = k;
    s = pvg_plan_run(h->plans[k], h->bound, h->pool, outputs);
    if (s != PV_OK) { h->msg = h->g->msg; goto out; }
    *n_out = (size_t)h->g->noutputs;
out:
    if (s != PV_OK) pvc_set_last_error(h->msg.text);
    pthread_mutex_unlock(&h->mu);
    return s;
}

pv_status pv_graph_stats_get(const pv_graph *h, pv_graph_stats *st)
{
    if (!h || !st) return pvc_fail(NULL, PV_EINPUT, "pv_graph_stats_get: NULL argument");
    memset(st, 0, sizeof *st);
    int live = 0;
    for (int i = 0; i < h->g->nnodes; i++) live += !h->g->nodes[i].dead;
    st->nodes_total = live;
    st->folded = h->passes.folded;
    st->bn_folded = h->passes.bn_folded;
    st->act_fused = h->passes.act_fused;
    st->attn_fused = h->passes.attn_fused;
    st->gelu_fused = h->passes.gelu_fused;
    st->eltwise_act_fused = h->passes.eltwise_act_fused;
    st->f16_lifted = h->passes.f16_lifted;
    st->precision = pvc_precision_name(h->g->precision);
    st->precision_note = h->prec_note;
    for (int i = 0; i < PV_MAX_PLANS; i++) st->plans += h->plans[i] != NULL;
    if (h->last >= 0 && h->plans[h->last]) {
        pvg_plan_info info;
        pvg_plan_info_get(h->plans[h->last], &info);
        st->arena_bytes = info.arena_bytes;
        st->workspace_bytes = info.ws_bytes;
        st->const_bytes = info.const_bytes;
        st->nodes_run = info.norder;
    }
    for (int v = 0; v < h->g->nvalues; v++)
        if (h->g->values[v].is_const) st->const_bytes += pvc_nbytes(&h->g->values[v].decl);
    return PV_OK;
}

pv_status pv_onnx_fill(const char *in_path, const char *out_path, uint64_t seed, size_t ext_threshold)
{
    if (!in_path || !out_path) return pvc_fail(NULL, PV_EINPUT, "pv_onnx_fill: NULL path");
    pvc_msg msg = {{0}};
    pvg_fill_stats st;
    return pvg_onnx_fill(in_path, out_path, seed, ext_threshold, &st, &msg);
}
