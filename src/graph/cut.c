/* Cutting a graph at given values: bundles run parts of a model outside the engine (the
 * sparse encoder of BEVFusion) and hand the engine the rest. */
#include "graph/graph.h"

#include <string.h>

pv_status pvg_graph_cut(pvg_graph *g, const int *ins, int nin, const int *outs, int nout)
{
    if (nin < 0 || nout < 1) return pvc_fail(&g->msg, PV_EINTERNAL, "cut: %d inputs, %d outputs", nin, nout);
    bool *need = pvc_calloc((size_t)g->nvalues + 1, sizeof *need);
    bool *is_in = pvc_calloc((size_t)g->nvalues + 1, sizeof *is_in);
    bool *live = pvc_calloc((size_t)g->nnodes + 1, sizeof *live);
    int *stack = pvc_calloc((size_t)g->nvalues + 1, sizeof *stack);
    int *new_in = pvc_calloc((size_t)nin + 1, sizeof *new_in);
    int *new_out = pvc_calloc((size_t)nout, sizeof *new_out);
    pv_status s = PV_OK;
    if (!need || !is_in || !live || !stack || !new_in || !new_out) {
        s = pvc_fail(&g->msg, PV_ENOMEM, "out of memory cutting the graph");
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        if (ins[i] < 0 || ins[i] >= g->nvalues) { s = pvc_fail(&g->msg, PV_EINTERNAL, "cut: bad input value %d", ins[i]); goto done; }
        is_in[ins[i]] = true;
    }
    /* walk back from the outputs, stopping at the new inputs and at constants */
    int sp = 0;
    for (int i = 0; i < nout; i++) {
        if (outs[i] < 0 || outs[i] >= g->nvalues) { s = pvc_fail(&g->msg, PV_EINTERNAL, "cut: bad output value %d", outs[i]); goto done; }
        if (!need[outs[i]]) { need[outs[i]] = true; stack[sp++] = outs[i]; }
    }
    while (sp > 0) {
        int v = stack[--sp];
        if (is_in[v] || g->values[v].is_const) continue;
        int p = g->values[v].producer;
        if (p < 0) {
            s = pvc_fail(&g->msg, PV_EFORMAT, "cut: '%s' is needed but is neither computed nor a kept input",
                         g->values[v].name);
            goto done;
        }
        if (live[p]) continue;
        live[p] = true;
        const pvg_node *n = &g->nodes[p];
        for (int k = 0; k < n->nin; k++) {
            int u = n->in[k];
            if (u >= 0 && !need[u]) { need[u] = true; stack[sp++] = u; }
        }
    }
    for (int i = 0; i < g->nnodes; i++) {
        if (!live[i]) { g->nodes[i].dead = true; continue; }
        for (int k = 0; k < g->nodes[i].nout; k++)
            if (g->nodes[i].out[k] >= 0 && is_in[g->nodes[i].out[k]]) {
                s = pvc_fail(&g->msg, PV_EFORMAT, "cut: input '%s' is also computed by node '%s', which the outputs need",
                             g->values[g->nodes[i].out[k]].name, g->nodes[i].name);
                goto done;
            }
    }
    for (int v = 0; v < g->nvalues; v++) g->values[v].is_input = g->values[v].is_output = false;
    for (int i = 0; i < nin; i++) {
        pvg_value *val = &g->values[ins[i]];
        /* a computed value's declaration may be absent or partial: the plan takes the shape given */
        if (val->producer >= 0) { val->decl.rank = -1; }
        val->is_input = true;
        val->producer = -1;
        new_in[i] = ins[i];
    }
    for (int i = 0; i < nout; i++) { g->values[outs[i]].is_output = true; new_out[i] = outs[i]; }
    pvc_free(g->inputs);
    pvc_free(g->outputs);
    g->inputs = new_in; g->ninputs = nin; new_in = NULL;
    g->outputs = new_out; g->noutputs = nout; new_out = NULL;
done:
    pvc_free(need); pvc_free(is_in); pvc_free(live); pvc_free(stack); pvc_free(new_in); pvc_free(new_out);
    return s;
}
