/* Private to the graph module: the plan's layout and node-level helpers shared by the
 * planner and the load-time passes. */
#ifndef PVG_PLAN_IMPL_H
#define PVG_PLAN_IMPL_H

#include "graph/graph.h"

/* Constants computed at plan time up to this many output bytes; larger constant-only nodes
 * run at replay instead of holding memory. */
#define PVG_FOLD_LIMIT ((size_t)64 << 20)

struct pvg_plan {
    pvg_graph     *g;
    pvc_tensor    *vals;        /* per value: shape + data pointer (constant, arena or input) */
    int           *order;       /* nodes to run */
    int            norder;
    unsigned char *params;      /* nnodes * PVG_PARAMS_BYTES */
    size_t        *ws_node;
    size_t        *offset, *size;
    int           *first, *last, *storage;
    size_t        *suboff;      /* per value: bytes from its storage root's start (a Concat
                                   input placed inside the Concat's output; else 0) */
    pvc_tensor    *in_desc;     /* the input shapes this plan is for */
    pvc_tensor    *xin, *xout;  /* per-node scratch descriptors for replay */
    void         **owned;       /* buffers of values folded at plan time */
    int            nowned;
    void          *arena, *ws;
    size_t         arena_bytes, ws_bytes, const_bytes;
    unsigned char *solo;        /* per step: a small node, prepared for and run on one thread
                                   (plan_work.c); NULL when the pool has one thread */
    double        *prof_ms;     /* per step, summed over runs, when PERCEIVE_PROFILE is set */
    int            prof_runs;
};

/* Runs prepare for one node (resets params, refuses unread attributes, checks outputs). On
 * failure the node's params are already released; on success the caller owns them and ends
 * with pvg_node_release. */
pv_status pvg_node_prepare(pvg_graph *g, pvg_node *n, const pvc_tensor *in, pvc_tensor *out,
                           void *params, size_t *workspace, pvc_msg *msg);
/* Calls the operator's release on a prepared params block (once; the block is zeroed after,
 * so a second call does nothing). */
void      pvg_node_release(const pvg_node *n, void *params);
/* Evaluates a prepared node on constant inputs into fresh buffers appended to *owned. */
pv_status pvg_node_eval(pvg_node *n, const pvc_tensor *in, pvc_tensor *out, const void *params,
                        size_t workspace, pvc_pool *pool, void ***owned, int *nowned, pvc_msg *msg);

/* plan_work.c: a prepared node's rough work (element reads + writes, plus multiply-adds / 20 for
 * Conv / Gemm / MatMul kinds), about nanoseconds of one core; -1 when it cannot be told (custom
 * domains, control flow, recurrences, Einsum). Nodes under pvg_solo_limit() run on one thread.
 * PERCEIVE_SOLO_WORK overrides the limit (0: every node may use the pool). */
double    pvg_node_work(const pvg_node *n, const pvc_tensor *in, const pvc_tensor *out);
double    pvg_solo_limit(void);

/* ops/concat.c: the axis a prepared Concat joins along. */
int       pvg_concat_axis(const void *params);

#endif
