/* Weights shared between the plans of one graph: a bundle that plans several input shapes over
 * the same weights (hamer: batch 1..8) packs each linear layer once, not once per plan. The
 * cache is a short list on the graph, filled and read while plans are made (one thread). */
#include "graph/graph.h"
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/gemm_packed.h"

#include <string.h>

typedef struct shared_entry {
    int               v;
    bool              trans_b;
    float             alpha;
    pvc_precision     prec;
    pvk_gemm_packed  *pk;     /* one of the two */
    pvk_dnnl_weights *dw;
} shared_entry;

typedef struct shared_cache { shared_entry *e; int n, cap; } shared_cache;

pvk_gemm_packed *pvg_shared_packed_find(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec)
{
    const shared_cache *c = g->packed_cache;
    for (int i = 0; c && i < c->n; i++) {
        const shared_entry *e = &c->e[i];
        if (e->pk && e->v == v && e->trans_b == trans_b && e->alpha == alpha && e->prec == prec) return pvk_gemm_packed_retain(e->pk);
    }
    return NULL;
}

static pv_status add_entry(pvg_graph *g, shared_entry ent)
{
    shared_cache *c = g->packed_cache;
    if (!c && !(c = g->packed_cache = pvc_calloc(1, sizeof *c))) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory sharing weights");
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        shared_entry *e = pvc_realloc(c->e, (size_t)cap * sizeof *e);
        if (!e) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory sharing weights");
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n++] = ent;
    return PV_OK;
}

pv_status pvg_shared_packed_add(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec, pvk_gemm_packed *pk)
{
    pv_status s = add_entry(g, (shared_entry){ v, trans_b, alpha, prec, pk, NULL });
    if (s == PV_OK) pvk_gemm_packed_retain(pk);
    return s;
}

pvk_dnnl_weights *pvg_shared_dnnl_find(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec)
{
    const shared_cache *c = g->packed_cache;
    for (int i = 0; c && i < c->n; i++) {
        const shared_entry *e = &c->e[i];
        if (e->dw && e->v == v && e->trans_b == trans_b && e->alpha == alpha && e->prec == prec) {
            return pvk_dnnl_weights_retain(e->dw);
        }
    }
    return NULL;
}

pv_status pvg_shared_dnnl_add(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec, pvk_dnnl_weights *w)
{
    pv_status s = add_entry(g, (shared_entry){ v, trans_b, alpha, prec, NULL, w });
    if (s != PV_OK) pvk_dnnl_weights_release(w);
    return s;
}

void pvg_shared_free(pvg_graph *g)
{
    shared_cache *c = g->packed_cache;
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        pvk_gemm_packed_free(c->e[i].pk);
        pvk_dnnl_weights_release(c->e[i].dw);
    }
    pvc_free(c->e);
    pvc_free(c);
    g->packed_cache = NULL;
}

size_t pvg_graph_drop_consumed(pvg_graph *g)
{
    /* keep[v]: some live reader (or the graph's outputs) still reads the bytes */
    unsigned char *keep = pvc_calloc((size_t)g->nvalues + 1, 1), *read = pvc_calloc((size_t)g->nvalues + 1, 1);
    size_t freed = 0;
    if (!keep || !read) goto done;   /* nothing freed: the weights stay, which is only memory */
    for (int i = 0; i < g->noutputs; i++) keep[g->outputs[i]] = 1;
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            read[v] = 1;
            if (k >= 32 || !(n->consumed & (1u << k))) keep[v] = 1;
        }
    }
    for (int v = 0; v < g->nvalues; v++) {
        pvg_value *val = &g->values[v];
        if (!val->is_const || !val->data || keep[v] || !read[v]) continue;
        freed += pvc_nbytes(&val->decl);
        pvc_free_aligned(val->data);
        val->data = NULL;
    }
done:
    pvc_free(keep);
    pvc_free(read);
    return freed;
}

size_t pvg_graph_drop_unread(pvg_graph *g)
{
    unsigned char *read = pvc_calloc((size_t)g->nvalues + 1, 1);
    size_t freed = 0;
    if (!read) return 0;             /* nothing freed: only memory */
    for (int i = 0; i < g->noutputs; i++) read[g->outputs[i]] = 1;
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) read[n->in[k]] = 1;
    }
    for (int v = 0; v < g->nvalues; v++) {
        pvg_value *val = &g->values[v];
        if (!val->is_const || !val->data || read[v]) continue;
        freed += pvc_nbytes(&val->decl);
        pvc_free_aligned(val->data);
        val->data = NULL;
    }
    /* tensors held by dead nodes' attributes (Constant nodes folded or cut away) */
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *n = &g->nodes[i];
        if (!n->dead) continue;
        for (int k = 0; k < n->nattrs; k++)
            if (n->attrs[k].type == PVG_ATTR_TENSOR && n->attrs[k].t.data) {
                freed += pvc_nbytes(&n->attrs[k].t);
                pvc_free_aligned(n->attrs[k].t.data);
                n->attrs[k].t.data = NULL;
            }
    }
    pvc_free(read);
    return freed;
}
