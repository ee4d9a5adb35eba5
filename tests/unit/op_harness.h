/* Test harness: runs one operator's prepare + run directly on given tensors, without the
 * planner, so operator tests do not depend on the import/plan code. Header-only.
 * oph_run is the plain call; oph_run_ex adds a thread pool, a fused activation and
 * garbage-filled, guarded buffers (oph_opts). The oph_expect_* checks and oph_run_ok fail the
 * running cmocka test. */
#ifndef PV_OP_HARNESS_H
#define PV_OP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/graph.h"
#include <math.h>
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
    char       fault[96];   /* a fault of the operator or the test, "" when none: no such op,
                               an attribute prepare did not read, a fused activation the op
                               cannot apply, an output guard overwritten (status is not OK) */
} oph_result;

/* oph_run_ex options; all zero (or NULL) is oph_run. */
typedef struct oph_opts {
    pvg_act   act;          /* fused activation on the node (the op must have PVG_OP_FUSE_ACT) */
    pvc_pool *pool;         /* run's thread pool */
    bool      garbage;      /* outputs and workspace start as 0xff bytes (NaN floats), not 0, and
                               OPH_GUARD floats after each output must survive run */
} oph_opts;

#define OPH_GUARD 16
#define OPH_GUARD_VAL 12345.0f

/* in[i].rank == -1 marks an absent optional input. Inputs given with const_mask bit i set are
 * presented to prepare as constants (data visible), others as run-time values. o may be NULL. */
static inline oph_result oph_run_body(const char *op_type, int opset, const pvc_tensor *in, int nin,
                                      unsigned const_mask, int nout, const oph_attr *attrs, int nattrs,
                                      const oph_opts *o, unsigned char *params)
{
    static const oph_opts plain;
    if (!o) o = &plain;
    oph_result r;
    memset(&r, 0, sizeof r);
    const pvg_op *op = pvg_op_lookup("", op_type);
    if (!op) {
        r.status = PV_EUNSUPPORTED;
        strcpy(r.msg.text, "no such op");
        strcpy(r.fault, "no such op");
        return r;
    }
    pvg_node node;
    memset(&node, 0, sizeof node);
    node.name = (char *)"test";
    node.op_type = (char *)op_type;
    node.domain = (char *)"";
    node.op = op;
    node.act = o->act;
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
    memset(params, 0, PVG_PARAMS_BYTES);
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
        if (!at[i].used) {
            r.status = PV_EUNSUPPORTED;
            snprintf(r.msg.text, sizeof r.msg.text, "attribute %s unused", at[i].name);
            snprintf(r.fault, sizeof r.fault, "attribute %s not read", at[i].name);
            return r;
        }
    if (o->act.kind != PVG_ACT_NONE && !(op->flags & PVG_OP_FUSE_ACT)) {
        r.status = PV_EUNSUPPORTED;
        strcpy(r.fault, "cannot fuse");
        return r;
    }
    for (int i = 0; i < nout; i++) {
        pvc_tensor_set_contiguous(&r.out[i]);
        size_t nb = pvc_nbytes(&r.out[i]);
        if (!o->garbage) {
            r.out[i].data = calloc(1, nb + OPH_GUARD * sizeof(float));
            continue;
        }
        r.out[i].data = malloc(nb + OPH_GUARD * sizeof(float));
        memset(r.out[i].data, 0xff, nb);
        float *g = (float *)((char *)r.out[i].data + nb);
        for (int k = 0; k < OPH_GUARD; k++) g[k] = OPH_GUARD_VAL;
    }
    if (op->flags & PVG_OP_ALIAS) {
        memcpy(r.out[0].data, in[0].data, pvc_nbytes(&r.out[0]));
        return r;
    }
    void *ws = NULL;
    if (p.workspace && !o->garbage) ws = calloc(1, p.workspace);
    else if (p.workspace) {
        ws = malloc(p.workspace + 64);
        memset(ws, 0xff, p.workspace + 64);
    }
    pvg_exec x = { &node, params, in, nin, r.out, nout, ws, o->pool };
    r.status = op->run(&x);
    free(ws);
    for (int i = 0; o->garbage && i < nout; i++) {
        float g[OPH_GUARD];
        memcpy(g, (char *)r.out[i].data + pvc_nbytes(&r.out[i]), sizeof g);
        for (int k = 0; k < OPH_GUARD; k++)
            if (g[k] != OPH_GUARD_VAL && !r.fault[0]) {
                r.status = PV_EINTERNAL;
                snprintf(r.fault, sizeof r.fault, "output %d guard overwritten", i);
            }
    }
    return r;
}

/* The call, then the operator's release (what the planner does when a plan is freed). */
static inline oph_result oph_run_ex(const char *op_type, int opset, const pvc_tensor *in, int nin,
                                    unsigned const_mask, int nout, const oph_attr *attrs, int nattrs,
                                    const oph_opts *o)
{
    static unsigned char params[PVG_PARAMS_BYTES];
    oph_result r = oph_run_body(op_type, opset, in, nin, const_mask, nout, attrs, nattrs, o, params);
    const pvg_op *op = pvg_op_lookup("", op_type);
    if (op && op->release) op->release(params);
    return r;
}

static inline oph_result oph_run(const char *op_type, int opset, const pvc_tensor *in, int nin,
                                 unsigned const_mask, int nout, const oph_attr *attrs, int nattrs)
{
    return oph_run_ex(op_type, opset, in, nin, const_mask, nout, attrs, nattrs, NULL);
}

/* oph_run that must succeed: anything else fails the test with the operator's message. */
static inline oph_result oph_run_ok(const char *op_type, int opset, const pvc_tensor *in, int nin,
                                    unsigned const_mask, int nout, const oph_attr *attrs, int nattrs)
{
    oph_result r = oph_run(op_type, opset, in, nin, const_mask, nout, attrs, nattrs);
    if (r.status != PV_OK) fail_msg("%s failed: %s", op_type, r.msg.text);
    return r;
}

/* got[i] within tol * max(1, |want[i]|) of want[i]; NaN matches NaN and an infinity itself. */
static inline void oph_expect_close(const float *got, const double *want, int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (isnan(w) && isnan(g)) continue;
        if (isinf(w) && g == w) continue;
        if (!(fabs(g - w) <= tol * fmax(1.0, fabs(w))))
            fail_msg("%s[%lld]: got %.9g want %.9g", what, (long long)i, g, w);
    }
}

static inline void oph_expect_shape(const pvc_tensor *t, pv_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i]) fail_msg("dim %d: got %lld want %lld", i, (long long)t->dims[i], (long long)dims[i]);
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
