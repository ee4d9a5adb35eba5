/* bevfusion encoder: the sparse part of bevfusion_lidar.onnx (VFE, the autoware:: sparse convs
 * with their BatchNorm / ReLU / residual nodes, the to-dense scatter) read from the file and run
 * by src/sparse, and the cut that leaves the dense part (SECOND, FPN, head) to the engine.
 *
 * Nothing about the layer list is assumed: the loader walks the graph. It reads every
 * GetIndicePairsImplicitGemm / ImplicitGemm node and checks their attributes, groups the
 * rulebooks (one per level and kind, so the 17 submanifold convs share four), folds each
 * conv's following per-channel affine nodes (BatchNormalization, or Mul/Add/Sub/Div by
 * constants) into its weights, fuses residual Add and Relu into its epilogue, and refuses any
 * other op on sparse features by name. The pieces it computes itself instead of the graph
 * (VFE mean, (0, x, y, z) indices from coors, the scatter's layout) are checked at load by
 * running the graph's own nodes on a probe input through the engine (pvm_bf_encoder_probe). */
#ifndef PVM_BF_ENCODER_H
#define PVM_BF_ENCODER_H

#include "graph/graph.h"
#include "sparse/sparse.h"

#define PVM_BF_MAX_LEVELS 8
#define PVM_BF_MAX_RB     32
#define PVM_BF_MAX_LAYERS 64
#define PVM_BF_MAX_SLOTS  96
#define PVM_BF_NBUCKETS   3

typedef struct pvm_bf_rbspec {
    int     in_level, out_level;
    bool    subm;
    int32_t ksize[3], stride[3], pad[3];
} pvm_bf_rbspec;

typedef struct pvm_bf_layer {
    char    name[64];       /* the ImplicitGemm node */
    int     rb;
    int     in_slot, out_slot, res_slot;  /* res_slot -1: no residual */
    int     cin, cout;
    float  *w;              /* [K, cin, cout], affine folded */
    float  *bias;           /* [cout] */
    bool    relu;
} pvm_bf_layer;

typedef struct pvm_bf_encoder {
    int           nlevels;
    int32_t       shape[PVM_BF_MAX_LEVELS][3];   /* x, y, z */
    int           nrb;
    pvm_bf_rbspec rb[PVM_BF_MAX_RB];
    int           nlayers;
    pvm_bf_layer  layer[PVM_BF_MAX_LAYERS];
    int           nslots;
    int           slot_level[PVM_BF_MAX_SLOTS], slot_c[PVM_BF_MAX_SLOTS];
    int           in_slot;          /* VFE output */
    int           out_slot, out_level;
    int           max_points, nfeat;   /* voxels [N, max_points, nfeat] */
    /* value names in the file (for the cuts) */
    char          v_voxels[128], v_npoints[128], v_coors[128];
    char          v_vfe[128], v_idx0[128], v_final_feat[128], v_final_idx[128], v_dense[128];
    /* dense layout, from the probe: B[o0 + ox x + oy y + oz z + oc c] */
    int64_t       o0, ox, oy, oz, oc;
    pvc_tensor    dense;            /* descriptor of B (f32) */
    int           n_subm, n_down;   /* conv counts, for /info */
} pvm_bf_encoder;

/* Reads the sparse part of g (not modified). */
pv_status pvm_bf_encoder_build(const pvg_graph *g, pvm_bf_encoder *e, pvc_msg *msg);
/* Cuts gp (a second load of the same file) to voxels/num_points/coors/final features/final
 * indices -> VFE output/level-0 indices/dense input, runs it on a probe and checks the VFE mean
 * and the index layout against what the encoder computes; derives the dense layout. */
pv_status pvm_bf_encoder_probe(pvg_graph *gp, pvm_bf_encoder *e, pvc_msg *msg);
void      pvm_bf_encoder_free(pvm_bf_encoder *e);

/* ---- per-frame execution ------------------------------------------------------------------ */
typedef struct pvm_bf_bucket {
    int64_t cap[PVM_BF_MAX_LEVELS];   /* site capacity per level */
    size_t  slot_off[PVM_BF_MAX_SLOTS];
    size_t  rb_in_off[PVM_BF_MAX_RB], rb_out_off[PVM_BF_MAX_RB];
    int64_t rb_cap[PVM_BF_MAX_RB];
    size_t  site_off[PVM_BF_MAX_LEVELS];
    size_t  bytes;
} pvm_bf_bucket;

typedef struct pvm_bf_runner {
    const pvm_bf_encoder *e;
    pvm_bf_bucket  bucket[PVM_BF_NBUCKETS];
    void          *arena;            /* sized for the largest bucket */
    void          *scratch;          /* rulebook hash scratch */
    size_t         scratch_bytes;
    void          *ws;               /* pvs_conv workspace */
    size_t         ws_bytes;
    float         *dense;            /* B, zero except the last frame's sites */
    int32_t       *last_sites;       /* final-level sites written into B last frame */
    int64_t        nlast;
    int            threads;
    /* bf16: per layer that gathers (pvs_conv_gathers), its K offsets' weights packed for the
     * bf16 GEMM, [nlayers * 27]; NULL at fp32 (and the narrow layers stay fp32) */
    struct pvk_gemm_packed **wk;
} pvm_bf_runner;

typedef struct pvm_bf_encoder_stats {
    int64_t active[PVM_BF_MAX_LEVELS];   /* sites per level */
    int     nlevels;
    int64_t bucket;                     /* level-0 capacity of the bucket used */
    double  rulebook_ms, conv_ms, scatter_ms;
} pvm_bf_encoder_stats;

/* precision BF16 and PERCEIVE_SPARSE_BF16=1: the gathered GEMMs of the wide layers run in bf16
 * (see wk); otherwise the encoder is fp32 (bf16 there fails the bundle's bf16 gate today). */
pv_status pvm_bf_runner_init(pvm_bf_runner *r, const pvm_bf_encoder *e, int64_t max_voxels, int threads,
                             pvc_precision precision, pvc_msg *msg);
void      pvm_bf_runner_free(pvm_bf_runner *r);
/* voxels -> VFE -> sparse convs -> r->dense. A frame that does not fit the largest bucket is
 * PV_EINPUT with the level counts. */
pv_status pvm_bf_runner_run(pvm_bf_runner *r, pvc_pool *pool, const pvs_voxels *vox,
                            pvm_bf_encoder_stats *st, pvc_msg *msg);

#endif
