/* Test harness: runs one operator's prepare + run directly on given tensors, without the
 * planner, so operator tests do not depend on the import/plan code. Header-only. */
#ifndef PV_OP_HARNESS_H
#define PV_OP_HARNESS_H

#include "graph/graph.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct oph_attr { const char *name; pvg_attr_type type; int64_t i; float f; const char *s;
                          const int64_t *ints; const float *floats; int64_t n; } oph_attr;

#define OPH_INT(N, V) { .name = (N), .type = PVG_ATTR_INT, .i = (V) }
#define OPH_FLOAT(N, V) { .name = (N), .type = PVG_ATTR_FLOAT, .f = (V) }
#define OPH_STR(N, V) { .name = (N), .type = PVG_ATTR_STRING, .s = (V) }
#define OPH_INTS(N, ARR, CNT) { .name = (N), .type = PVG_ATTR_INTS, .ints = (ARR), .n = (CNT) }
#define OPH_FLOATS(N, ARR, CNT) { .name = (N), .type = PVG_ATTR_FLOATS, .floats = (ARR), .n = (CNT) }

/* Result of a harness call: outputs are malloc'ed (free with oph_free). */
typedef struct oph_result {
    pv_status  status;
    pvc_msg    msg;
    int        nout;
    pvc_tensor out[8];
} oph_result;

/* in[i].rank == -1 marks an absent optional input. Inputs given with const_mask bit i set are
 * presented to prepare as constants (data visible), others as run-time values. */
static inline oph_result oph_run(const char *op_type, int opset, const pvc_tensor *in, int nin,
                                 unsigned const_mask, int nout, const oph_attr *attrs, int nattrs)
{
    oph_result r;
    memset(&r, 0, sizeof r);
    const pvg_op *op = pvg_op_lookup("", op_type);
    if (!op) { r.status = PV_EUNSUPPORTED; strcpy(r.msg.text, "no such op"); return r; }
    pvg_node node;
    memset(&node, 0, sizeof node);
    node.name = (char *)"test";
    node.op_type = (char *)op_type;
    node.domain = (char *)"";
    node.op = op;
    pvg_attr at[16];
    memset(at, 0, sizeof at);
    for (int i = 0; i < nattrs; i++) {
        at[i].name = (char *)attrs[i].name;
        at[i].type = attrs[i].type;
        at[i].i = attrs[i].i;
        at[i].f = attrs[i].f;
        at[i].s = (char *)attrs[i].s;
        at[i].ints = (int64_t *)attrs[i].ints;
        at[i].floats = (float *)attrs[i].floats;
        at[i].n = attrs[i].n;
    }
    node.attrs = at;
    node.nattrs = nattrs;
    pvc_tensor pin[16];
    for (int i = 0; i < nin; i++) {
        pin[i] = in[i];
        if (!(const_mask & (1u << i))) pin[i].data = NULL;
    }
    static unsigned char params[PVG_PARAMS_BYTES];
    memset(params, 0, sizeof params);
    pvg_prep p;
    memset(&p, 0, sizeof p);
    p.node = &node;
    p.nin = nin;
    p.nout = nout;
    p.in = pin;
    p.out = r.out;
    p.params = params;
    p.opset = opset;
    p.msg = &r.msg;
    r.nout = nout;
    r.status = op->prepare(&p);
    if (r.status != PV_OK) return r;
    for (int i = 0; i < nattrs; i++)
        if (!at[i].used) { r.status = PV_EUNSUPPORTED; snprintf(r.msg.text, sizeof r.msg.text, "attribute %s unused", at[i].name); return r; }
    for (int i = 0; i < nout; i++) {
        pvc_tensor_set_contiguous(&r.out[i]);
        size_t nb = pvc_nbytes(&r.out[i]);
        r.out[i].data = calloc(1, nb + 64);
    }
    if (op->flags & PVG_OP_ALIAS) {
        memcpy(r.out[0].data, in[0].data, pvc_nbytes(&r.out[0]));
        return r;
    }
    void *ws = p.workspace ? calloc(1, p.workspace) : NULL;
    pvg_exec x = { &node, params, in, nin, r.out, nout, ws, NULL };
    r.status = op->run(&x);
    free(ws);
    return r;
}

static inline void oph_free(oph_result *r)
{
    for (int i = 0; i < r->nout; i++) free(r->out[i].data);
    r->nout = 0;
}

static inline pvc_tensor oph_tensor(pv_dtype t, int rank, const int64_t *dims, void *data)
{
    pvc_tensor x;
    memset(&x, 0, sizeof x);
    x.dtype = t;
    x.rank = rank;
    for (int i = 0; i < rank; i++) x.dims[i] = dims[i];
    pvc_tensor_set_contiguous(&x);
    x.data = data;
    return x;
}

#endif
