/* graph: the IR (values + nodes), the operator interface, attribute access, import, passes,
 * plans and their replay. Prefix pvg_.
 *
 * Lifecycle (XNNPACK's create -> reshape -> setup -> run, as build -> plan -> bind -> run):
 *   pvg_graph_load_onnx()   parse + validate the file into a pvg_graph (values, nodes)
 *   pvg_passes_run()        constant folding, BatchNorm folding, attention and activation fusion
 *   pvg_plan_create()       for one set of input shapes: shape inference, per-variant folding,
 *                           order, lifetimes, arena offsets, workspace; allocates the arena
 *   pvg_plan_run()          binds inputs and replays the plan; allocates nothing
 */
#ifndef PVG_GRAPH_H
#define PVG_GRAPH_H

#include "core/core.h"

#include <stdio.h>

/* ---- IR ----------------------------------------------------------------------------------- */
typedef enum {
    PVG_ATTR_UNDEF = 0, PVG_ATTR_FLOAT, PVG_ATTR_INT, PVG_ATTR_STRING, PVG_ATTR_TENSOR,
    PVG_ATTR_FLOATS, PVG_ATTR_INTS, PVG_ATTR_STRINGS, PVG_ATTR_OTHER /* graphs, sparse... */
} pvg_attr_type;

typedef struct pvg_attr {
    char         *name;
    pvg_attr_type type;
    int64_t       i;
    float         f;
    char         *s;        /* STRING (NUL-terminated copy) */
    int64_t      *ints;     /* INTS */
    float        *floats;   /* FLOATS */
    char        **strings;  /* STRINGS */
    int64_t       n;        /* element count of INTS / FLOATS / STRINGS */
    pvc_tensor    t;        /* TENSOR: t.data owned by the graph */
    bool          used;     /* set when an operator read it: unread attributes are refused */
} pvg_attr;

typedef enum { PVG_ACT_NONE = 0, PVG_ACT_RELU, PVG_ACT_LEAKY_RELU, PVG_ACT_CLIP,
               PVG_ACT_GELU /* 0.5 x (1 + erf(x / sqrt 2)); fused into Conv only (passes.c) */ } pvg_act_kind;
typedef struct pvg_act { pvg_act_kind kind; float alpha, beta; } pvg_act; /* leaky: alpha; clip: [alpha, beta] */

typedef struct pvg_value {
    char      *name;
    pvc_tensor decl;        /* declared dtype/rank/dims (dims -1 = unknown); rank -1 = unknown */
    void      *data;        /* constant data (initializer / folded), aligned, owned; else NULL */
    int        producer;    /* node index, or -1 */
    bool       is_input, is_output, is_const;
} pvg_value;

typedef struct pvg_node {
    char           *name;
    char           *op_type;
    char           *domain;     /* "" for the default ONNX domain */
    const struct pvg_op *op;
    int            *in;         /* value indexes; -1 = absent optional input */
    int             nin;
    int            *out;        /* value indexes; -1 = absent optional output */
    int             nout;
    pvg_attr       *attrs;
    int             nattrs;
    pvg_act         act;        /* fused activation, applied by ops flagged PVG_OP_FUSE_ACT */
    bool            dead;       /* removed by a pass */
    unsigned        consumed;   /* pvg_prep.consumed of this node's latest prepare */
} pvg_node;

typedef struct pvg_graph {
    pvg_value *values;  int nvalues, cap_values;
    pvg_node  *nodes;   int nnodes,  cap_nodes;
    int       *inputs;  int ninputs;    /* graph inputs that are not initializers */
    int       *outputs; int noutputs;
    int        opset;                   /* default-domain opset */
    int64_t    ir_version;
    char      *base_dir;                /* for external data */
    int        threads;                 /* threads plans run with (pv_graph's pool), 0 unknown */
    pvc_precision precision;            /* resolved: what Conv/MatMul/Gemm compute in */
    bool       drop_consumed;           /* the caller makes one plan only: constants every reader
                                           copied into its own layout (pvg_prep.consumed) are
                                           freed once it is made, so weights are held once */
    bool       share_packed;            /* plans of this graph share each constant GEMM weight's
                                           packed copy (one per weight, precision, transpose,
                                           alpha) instead of packing it per plan: for a bundle
                                           that plans several batch sizes over one set of
                                           weights (pvg_shared_* below) */
    void      *packed_cache;            /* private to shared.c */
    void      *name_index;              /* value name -> index (hash), private to ir.c */
    char       generated[96];           /* the file's PVG_GENERATED_KEY metadata ("" none) */
    pvc_msg    msg;
} pvg_graph;

/* Files `perceive onnx fill` / bundle generators write carry this metadata key (value: what was
 * filled, with the seed), so a generated model stays labelled generated wherever it is loaded. */
#define PVG_GENERATED_KEY "perceive.generated"

pv_status pvg_graph_create(pvg_graph **out);
void      pvg_graph_free(pvg_graph *g);
/* Finds or adds a value by name; -1 on allocation failure. "" is not a value (absent input). */
int       pvg_value_get(pvg_graph *g, const char *name);
int       pvg_value_find(const pvg_graph *g, const char *name);
pv_status pvg_node_add(pvg_graph *g, const char *name, const char *op_type, const char *domain,
                       int nin, int nout, pvg_node **out);
pv_status pvg_graph_load_onnx(const void *buf, size_t len, const char *base_dir, pvg_graph **out,
                              pvc_msg *msg);
/* Binds every node to its operator; unknown op -> PV_EUNSUPPORTED naming node and op. */
pv_status pvg_graph_bind_ops(pvg_graph *g);
/* Topological order of live nodes into order (nnodes capacity); cycle -> PV_EFORMAT. */
pv_status pvg_graph_toposort(pvg_graph *g, int *order, int *norder);

/* Keeps only what computes `outs` from `ins` (and constants): those values become the graph's
 * inputs (their producers cut off) and outputs, every other node is marked dead. A needed
 * value that is neither computed nor given is PV_EFORMAT naming it. Values keep their
 * declared shapes; plan with explicit input descriptors. */
pv_status pvg_graph_cut(pvg_graph *g, const int *ins, int nin, const int *outs, int nout);

/* ---- weights shared between plans (src/graph/shared.c) ------------------------------------- */
struct pvk_gemm_packed;
/* The packed copy of constant value v made for (trans_b, alpha, precision), retained for the
 * caller (release with pvk_gemm_packed_free), or NULL when none was made yet. */
struct pvk_gemm_packed *pvg_shared_packed_find(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec);
/* Records pk (retained by the cache) as value v's packed copy for (trans_b, alpha, prec). */
pv_status pvg_shared_packed_add(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec,
                                struct pvk_gemm_packed *pk);
/* The same for oneDNN's reordered weights (kernels/dnnl/matmul_dnnl.h): find retains for the
 * caller; add takes over the caller's reference to w. */
struct pvk_dnnl_weights;
struct pvk_dnnl_weights *pvg_shared_dnnl_find(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec);
pv_status pvg_shared_dnnl_add(pvg_graph *g, int v, bool trans_b, float alpha, pvc_precision prec, struct pvk_dnnl_weights *w);
/* Releases the cache's references (pvg_graph_free calls it). */
void      pvg_shared_free(pvg_graph *g);
/* After the last plan of g is made: frees every constant that every live node reading it copied
 * into its own layout (pvg_node.consumed of its latest prepare), so the weights are held once.
 * Plans made afterwards must not need those bytes (a shared packed copy serves them). Returns
 * the bytes freed. */
size_t    pvg_graph_drop_consumed(pvg_graph *g);
/* Frees the data of constants no live node reads (after a cut kept a small part of a large
 * graph); returns the bytes freed. */
size_t    pvg_graph_drop_unread(pvg_graph *g);

/* ---- operators ---------------------------------------------------------------------------- */
#define PVG_PARAMS_BYTES 1024

/* Planning context for one node in one plan variant. */
typedef struct pvg_prep {
    pvg_graph        *g;
    pvg_node         *node;
    int               nin, nout;
    const pvc_tensor *in;       /* input descriptors; .data set when the input is constant;
                                   rank -1 for an absent optional input */
    pvc_tensor       *out;      /* fill dtype, rank, dims (the planner sets strides/data) */
    void             *params;   /* PVG_PARAMS_BYTES of zeroed scratch kept for run */
    size_t            workspace;/* bytes of scratch run needs (ws, 64-byte aligned) */
    int               opset;
    pvc_msg          *msg;
    int               threads;  /* threads run will use (the graph's pool); 0 = not known:
                                   pvc_default_threads(). For kernels fixed at plan time. */
    pvc_precision     precision;/* g->precision; ops without a bf16 kernel ignore it */
    unsigned          consumed; /* set by prepare: bit k = constant input k was copied into the
                                   op's own layout (packed / reordered weights) and run never
                                   reads it again */
} pvg_prep;

/* Execution context of one node. */
typedef struct pvg_exec {
    const pvg_node   *node;
    const void       *params;
    const pvc_tensor *in;       /* contiguous; absent optional inputs have rank -1, data NULL */
    int               nin;
    pvc_tensor       *out;
    int               nout;
    void             *ws;
    pvc_pool         *pool;
} pvg_exec;

enum {
    PVG_OP_ALIAS    = 1u << 0,  /* out[0] has in[0]'s bytes (Reshape...): no kernel call */
    PVG_OP_INPLACE  = 1u << 1,  /* out[0] may share in[0]'s buffer (same size, elementwise) */
    PVG_OP_FUSE_ACT = 1u << 2,  /* run applies node->act to its float output */
    PVG_OP_NOFOLD   = 1u << 3,  /* never evaluate at plan time */
    PVG_OP_SHAPE_ONLY = 1u << 4 /* reads only its inputs' shapes (Shape, Size): always evaluated
                                   at plan time; run sees in[].data == NULL for runtime inputs */
};

typedef struct pvg_op {
    const char *name;
    const char *domain;         /* "" default ONNX domain */
    unsigned    flags;
    pv_status (*prepare)(pvg_prep *p);
    pv_status (*run)(const pvg_exec *x);   /* may be NULL for PVG_OP_ALIAS */
    /* Optional (NULL: nothing to free). params may hold pointers to objects made in prepare
     * (a oneDNN primitive, pre-packed weights); release frees them. The planner calls it once
     * for every params block prepare was called on, whatever prepare returned, when the block
     * is no longer needed (plan freed, constant evaluated, prepare failed), so it must accept a
     * partly filled block (params start zeroed). It is never called twice on one block. */
    void      (*release)(void *params);
    /* Optional layout pass (NULL: none). The planner calls it on node A's params for an
     * activation that A writes (out[0]) and that n >= 1 distinct nodes read, each once and as
     * in[0], that is no graph output and that nothing views: A may agree with all of them to
     * keep that tensor in a layout only they know (e.g. oneDNN's blocked one) and drop the
     * reorders around it: all or none. consumer_ws[i]: consumer i's planned workspace bytes,
     * which the hook may raise (the workspace is allocated after this pass). Returns true when
     * linked; the tensor then keeps its planned size. */
    bool      (*link)(void *params, const pvg_node *const *consumers, void *const *consumer_params, int n,
                      size_t *consumer_ws);
    /* Optional (NULL: nothing to add): the path a prepared node runs, e.g. oneDNN's kernel name
     * and layout, for PERCEIVE_PROFILE=nodes. */
    const char *(*describe)(const void *params);
} pvg_op;

/* Registry: the built-in table (ops.def) plus operators registered by bundles. */
const pvg_op *pvg_op_lookup(const char *domain, const char *name);
pv_status     pvg_op_register(const pvg_op *op);   /* for custom domains, e.g. "autoware" */

/* Attribute access inside prepare. Absent -> default. A wrong attribute type is an error that
 * names the node, op and attribute. Each call marks the attribute as used. */
pv_status pvg_attr_int(pvg_prep *p, const char *name, int64_t def, int64_t *out);
pv_status pvg_attr_float(pvg_prep *p, const char *name, float def, float *out);
pv_status pvg_attr_string(pvg_prep *p, const char *name, const char *def, const char **out);
/* *v = NULL, *n = 0 when absent. */
pv_status pvg_attr_ints(pvg_prep *p, const char *name, const int64_t **v, int64_t *n);
pv_status pvg_attr_floats(pvg_prep *p, const char *name, const float **v, int64_t *n);
/* NULL when absent. */
const pvc_tensor *pvg_attr_tensor(pvg_prep *p, const char *name);
bool      pvg_attr_has(pvg_prep *p, const char *name);

/* Errors from prepare: the message is prefixed "node 'NAME' (OP): ". */
pv_status pvg_prep_fail(pvg_prep *p, pv_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True when optional input i is given. */
bool      pvg_has_in(const pvg_prep *p, int i);
/* Reads constant integer input i (int64 or int32) into v (capacity cap); an input that is not
 * constant is PV_EUNSUPPORTED ("data-dependent shape"). */
pv_status pvg_in_const_ints(pvg_prep *p, int i, int64_t *v, int64_t cap, int64_t *n);
/* Normalizes axis into [0, rank); out of range -> PV_EFORMAT naming the attribute. */
pv_status pvg_axis(pvg_prep *p, int64_t axis, int rank, const char *what, int *out);
/* Output i gets dtype and the given dims. */
void      pvg_out_set(pvg_prep *p, int i, pv_dtype t, int rank, const int64_t *dims);
/* Requires input i to have one of the dtypes in mask (bit = 1u << dtype). */
pv_status pvg_check_dtype(pvg_prep *p, int i, unsigned mask);
/* Appends bytes (> 0) of workspace after what p->workspace already holds, 64-byte aligned;
 * returns their offset in the run's ws (pvg_ws_at), or -1 for bytes == 0. */
int64_t   pvg_ws_append(pvg_prep *p, size_t bytes);
/* x->ws + off, or NULL for off < 0. */
void     *pvg_ws_at(const pvg_exec *x, int64_t off);
#define PVG_FLOATS  ((1u << PV_F32) | (1u << PV_F16) | (1u << PV_BF16))
#define PVG_INTS    ((1u << PV_I64) | (1u << PV_I32) | (1u << PV_I8) | (1u << PV_U8))
#define PVG_ANY     ((1u << PV_DTYPE_COUNT) - 1u)

/* Placeholder for an operator not implemented yet: loads fail naming it. */
pv_status pvg_stub_prepare(pvg_prep *p);
#define PVG_STUB_OP(NAME) const pvg_op pvg_op_##NAME = { #NAME, "", 0, pvg_stub_prepare, NULL };
#define PVG_OP(NAME) extern const pvg_op pvg_op_##NAME;
#include "graph/ops/ops.def"
#undef PVG_OP

/* ---- passes ------------------------------------------------------------------------------- */
typedef struct pvg_pass_stats { int folded, bn_folded, act_fused, attn_fused, gelu_fused, eltwise_act_fused, f16_lifted, linear_fused,
                                 transposes_folded; } pvg_pass_stats;
pv_status pvg_passes_run(pvg_graph *g, bool fuse, pvg_pass_stats *st);
/* MatMul -> scale -> [Add mask] -> Softmax -> MatMul chains into perceive::Attention
 * (passes/attention.c). The operator is built in (op_common.c). */
pv_status pvg_fuse_attention(pvg_graph *g, int *count);
extern const pvg_op pvg_op_Attention;   /* custom domain "perceive" (ops/attention.c) */
/* Exact (erf) and tanh GELU chains into perceive::Gelu (passes/gelu.c). The operator is built in
 * (op_common.c). */
pv_status pvg_fuse_gelu(pvg_graph *g, int *count);
extern const pvg_op pvg_op_Gelu;        /* custom domain "perceive" (ops/gelu.c) */
/* MatMul + Add(bias) / Gemm chains with a following Gelu and / or residual Add into
 * perceive::Linear, whose GEMM epilogue applies them (passes/linear.c). Built in (op_common.c). */
pv_status pvg_fuse_linear(pvg_graph *g, int *count);
extern const pvg_op pvg_op_Linear;      /* custom domain "perceive" (ops/linear.c) */
/* Add/Sub/Mul/Div -> Relu/LeakyRelu/Clip into the arithmetic node's fused activation, whatever
 * its operands (passes/add_act.c). */
pv_status pvg_fuse_eltwise_act(pvg_graph *g, int *count);
/* float16 values, initializers and casts rewritten so the graph computes in float32, rounding
 * at explicit casts where ONNX Runtime does (passes/f16.c); runs first. *count: what changed. */
pv_status pvg_lift_f16(pvg_graph *g, int *count);

/* ---- plans -------------------------------------------------------------------------------- */
typedef struct pvg_plan pvg_plan;
/* inputs: one descriptor per g->inputs entry (shape + dtype; data ignored). */
pv_status pvg_plan_create(pvg_graph *g, const pvc_tensor *inputs, pvg_plan **out);
void      pvg_plan_free(pvg_plan *p);
/* Small integer inputs (int64/int32, at most PVG_SHAPE_INPUT_MAX elements) are shape tensors:
 * their values are constants of the plan (so Reshape/Slice/Expand... fed from graph inputs can
 * be planned), and a plan is made per distinct value. */
#define PVG_SHAPE_INPUT_MAX 64
bool      pvg_is_shape_input(const pvc_tensor *t);
/* Same shapes (and shape-tensor values) as this plan's? */
bool      pvg_plan_matches(const pvg_plan *p, const pvc_tensor *inputs);
/* inputs: data pointers in g->inputs order; outputs: g->noutputs descriptors pointing into
 * the arena (or at constants). */
pv_status pvg_plan_run(pvg_plan *p, const pvc_tensor *inputs, pvc_pool *pool, pvc_tensor *outputs);

/* Planner facts, for tests and stats. */
typedef struct pvg_plan_info {
    size_t arena_bytes, ws_bytes, const_bytes;
    int    nvalues, norder;
    const int     *order;      /* nodes to run, in order */
    const size_t  *offset;     /* per value: arena offset, or SIZE_MAX when not in the arena */
    const size_t  *size;       /* per value: bytes */
    const int     *first, *last;   /* per value: first writer step, last reader step (-1 none) */
    const int     *storage;    /* per value: value index owning its bytes (aliases share it) */
} pvg_plan_info;
void pvg_plan_info_get(const pvg_plan *p, pvg_plan_info *info);
const pvc_tensor *pvg_plan_value(const pvg_plan *p, int v);
/* With PERCEIVE_PROFILE set, plans time each node; this prints the per-op-type split. */
void pvg_plan_profile_print(const pvg_plan *p, FILE *f, const char *title);

#endif
