/* IR: values, nodes, a name index, topological order. */
#include "graph/graph.h"

#include <string.h>

/* Open-addressing hash of value names -> index + 1 (0 = empty). */
typedef struct name_index { int *slots; int cap; } name_index;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;                /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool index_grow(pvg_graph *g)
{
    name_index *ix = g->name_index;
    int cap = ix->cap ? ix->cap * 2 : 256;
    int *slots = pvc_calloc((size_t)cap, sizeof *slots);
    if (!slots) return false;
    for (int v = 0; v < g->nvalues; v++) {
        uint64_t h = hash_str(g->values[v].name);
        int k = (int)(h & (uint64_t)(cap - 1));
        while (slots[k]) k = (k + 1) & (cap - 1);
        slots[k] = v + 1;
    }
    pvc_free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return true;
}

pv_status pvg_graph_create(pvg_graph **out)
{
    *out = NULL;
    pvg_graph *g = pvc_calloc(1, sizeof *g);
    if (!g) return pvc_fail(NULL, PV_ENOMEM, "out of memory creating a graph");
    g->name_index = pvc_calloc(1, sizeof(name_index));
    if (!g->name_index || !index_grow(g)) { pvg_graph_free(g); return pvc_fail(NULL, PV_ENOMEM, "out of memory creating a graph"); }
    g->opset = 17;
    *out = g;
    return PV_OK;
}

static void attr_free(pvg_attr *a)
{
    pvc_free(a->name);
    pvc_free(a->s);
    pvc_free(a->ints);
    pvc_free(a->floats);
    for (int64_t i = 0; a->strings && i < a->n; i++) pvc_free(a->strings[i]);
    pvc_free(a->strings);
    pvc_free_aligned(a->t.data);
}

void pvg_graph_free(pvg_graph *g)
{
    if (!g) return;
    pvg_shared_free(g);
    for (int i = 0; i < g->nvalues; i++) {
        pvc_free(g->values[i].name);
        pvc_free_aligned(g->values[i].data);
    }
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *n = &g->nodes[i];
        pvc_free(n->name);
        pvc_free(n->op_type);
        pvc_free(n->domain);
        pvc_free(n->in);
        pvc_free(n->out);
        for (int k = 0; k < n->nattrs; k++) attr_free(&n->attrs[k]);
        pvc_free(n->attrs);
    }
    pvc_free(g->values);
    pvc_free(g->nodes);
    pvc_free(g->inputs);
    pvc_free(g->outputs);
    pvc_free(g->base_dir);
    if (g->name_index) pvc_free(((name_index *)g->name_index)->slots);
    pvc_free(g->name_index);
    pvc_free(g);
}

int pvg_value_find(const pvg_graph *g, const char *name)
{
    const name_index *ix = g->name_index;
    int k = (int)(hash_str(name) & (uint64_t)(ix->cap - 1));
    while (ix->slots[k]) {
        int v = ix->slots[k] - 1;
        if (!strcmp(g->values[v].name, name)) return v;
        k = (k + 1) & (ix->cap - 1);
    }
    return -1;
}

int pvg_value_get(pvg_graph *g, const char *name)
{
    int v = pvg_value_find(g, name);
    if (v >= 0) return v;
    name_index *ix = g->name_index;
    if ((g->nvalues + 1) * 2 > ix->cap && !index_grow(g)) return -1;
    if (g->nvalues == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 64;
        pvg_value *nv = pvc_realloc(g->values, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        g->values = nv;
        g->cap_values = cap;
    }
    pvg_value *val = &g->values[g->nvalues];
    memset(val, 0, sizeof *val);
    val->name = pvc_strdup(name);
    if (!val->name) return -1;
    val->producer = -1;
    val->decl.rank = -1;
    v = g->nvalues++;
    int k = (int)(hash_str(name) & (uint64_t)(ix->cap - 1));
    while (ix->slots[k]) k = (k + 1) & (ix->cap - 1);
    ix->slots[k] = v + 1;
    return v;
}

pv_status pvg_node_add(pvg_graph *g, const char *name, const char *op_type, const char *domain,
                       int nin, int nout, pvg_node **out)
{
    *out = NULL;
    if (g->nnodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        pvg_node *nn = pvc_realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return pvc_fail(&g->msg, PV_ENOMEM, "out of memory adding node '%s'", name);
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    pvg_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    g->nnodes++;                       /* counted now so graph_free releases partial nodes */
    n->name = pvc_strdup(name ? name : "");
    n->op_type = pvc_strdup(op_type ? op_type : "");
    n->domain = pvc_strdup(domain ? domain : "");
    n->in = nin ? pvc_calloc((size_t)nin, sizeof(int)) : NULL;
    n->out = nout ? pvc_calloc((size_t)nout, sizeof(int)) : NULL;
    if (!n->name || !n->op_type || !n->domain || (nin && !n->in) || (nout && !n->out))
        return pvc_fail(&g->msg, PV_ENOMEM, "out of memory adding node '%s'", name ? name : "");
    n->nin = nin;
    n->nout = nout;
    for (int i = 0; i < nin; i++) n->in[i] = -1;
    for (int i = 0; i < nout; i++) n->out[i] = -1;
    *out = n;
    return PV_OK;
}

pv_status pvg_graph_bind_ops(pvg_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        pvg_node *n = &g->nodes[i];
        if (n->dead || n->op) continue;
        n->op = pvg_op_lookup(n->domain, n->op_type);
        if (!n->op)
            return pvc_fail(&g->msg, PV_EUNSUPPORTED, "node '%s': operator %s%s%s is not supported",
                            n->name, *n->domain ? n->domain : "", *n->domain ? "::" : "", n->op_type);
    }
    return PV_OK;
}

/* Kahn's algorithm over producer -> consumer edges; ties keep file order, so the order is
 * deterministic. */
pv_status pvg_graph_toposort(pvg_graph *g, int *order, int *norder)
{
    *norder = 0;
    int nn = g->nnodes;
    int *indeg = pvc_calloc((size_t)nn + 1, sizeof *indeg);
    int *queue = pvc_calloc((size_t)nn + 1, sizeof *queue);
    /* consumers as CSR */
    int *cnt = pvc_calloc((size_t)g->nvalues + 1, sizeof *cnt);
    if (!indeg || !queue || !cnt) {
        pvc_free(indeg); pvc_free(queue); pvc_free(cnt);
        return pvc_fail(&g->msg, PV_ENOMEM, "out of memory ordering the graph");
    }
    int edges = 0;
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].dead) continue;
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int v = g->nodes[i].in[k];
            if (v >= 0 && g->values[v].producer >= 0) { cnt[v]++; edges++; indeg[i]++; }
        }
    }
    int *start = pvc_calloc((size_t)g->nvalues + 1, sizeof *start);
    int *cons = pvc_calloc((size_t)edges + 1, sizeof *cons);
    if (!start || !cons) {
        pvc_free(indeg); pvc_free(queue); pvc_free(cnt); pvc_free(start); pvc_free(cons);
        return pvc_fail(&g->msg, PV_ENOMEM, "out of memory ordering the graph");
    }
    for (int v = 0; v < g->nvalues; v++) start[v + 1] = start[v] + cnt[v];
    memset(cnt, 0, (size_t)g->nvalues * sizeof *cnt);
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].dead) continue;
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int v = g->nodes[i].in[k];
            if (v >= 0 && g->values[v].producer >= 0) cons[start[v] + cnt[v]++] = i;
        }
    }
    int head = 0, tail = 0, live = 0;
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].dead) continue;
        live++;
        if (indeg[i] == 0) queue[tail++] = i;
    }
    while (head < tail) {
        int i = queue[head++];
        order[(*norder)++] = i;
        for (int k = 0; k < g->nodes[i].nout; k++) {
            int v = g->nodes[i].out[k];
            if (v < 0) continue;
            for (int c = start[v]; c < start[v + 1]; c++)
                if (--indeg[cons[c]] == 0) queue[tail++] = cons[c];
        }
    }
    pvc_free(indeg); pvc_free(queue); pvc_free(cnt); pvc_free(start); pvc_free(cons);
    if (*norder != live) {
        for (int i = 0; i < nn; i++) (void)i;
        return pvc_fail(&g->msg, PV_EFORMAT, "the graph has a cycle: %d of %d nodes cannot be ordered",
                        live - *norder, live);
    }
    return PV_OK;
}
