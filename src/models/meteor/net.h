/* meteor net: the METEOR graph read from its ONNX file and run as engine plans, split at the
 * rig boundary (specs/meteor.md 1.2, 2.2, 10). Prefix pvm_meteor_net_.
 *
 * The plain ONNX recomputes the lift's projection from K and T_cam_ego on every frame. K/T
 * are constant per camera rig, so at open the graph is classified value by value: a value is
 * "rig" when it depends on K or T_cam_ego and on neither imgs nor v0. The rig values that
 * image-dependent nodes read (the frontier: sampling grids, masks, bin indexes and weights)
 * are computed by a small rig plan once per rig and kept in an LRU cache (key: the K and T
 * bytes); the frame plan takes imgs, v0 and the frontier. Both plans come from the same file
 * after the same load-time passes, and the frame plan is the full graph's image part node for
 * node, so a frame of a cached rig gives the same bits as the whole graph (tested). When the
 * file has no such part (a different export) or the cache is off, one plan runs the whole
 * graph and the info says why.
 *
 * Not thread-safe: the bundle serialises runs (one engine stage at a time).
 */
#ifndef PVM_METEOR_NET_H
#define PVM_METEOR_NET_H

#include "core/core.h"

struct pvg_graph;

#define PVM_METEOR_NOUT 19
#define PVM_METEOR_RIG_SLOTS 8

/* Output slots, in the spec's order (1.5). */
enum {
    PVM_METEOR_O_LANE = 0, PVM_METEOR_O_DEPTH, PVM_METEOR_O_SEG2D, PVM_METEOR_O_HM, PVM_METEOR_O_REG,
    PVM_METEOR_O_HM2D0, PVM_METEOR_O_HM2D1, PVM_METEOR_O_HM2D2, PVM_METEOR_O_REG2D0, PVM_METEOR_O_REG2D1,
    PVM_METEOR_O_REG2D2, PVM_METEOR_O_EGO, PVM_METEOR_O_OCC, PVM_METEOR_O_TRAJ, PVM_METEOR_O_STATIONARY,
    PVM_METEOR_O_TL, PVM_METEOR_O_RISK, PVM_METEOR_O_LANE_LOGIT, PVM_METEOR_O_DEPTH_MEAN
};
extern const char *const pvm_meteor_output_names[PVM_METEOR_NOUT];

typedef struct pvm_meteor_net pvm_meteor_net;

typedef struct pvm_meteor_net_opts {
    int           threads;      /* 0: all cores */
    int           precision;    /* pv_precision requested (0 default, 1 fp32, 2 bf16) */
    bool          no_rig_cache; /* one plan for the whole graph */
    int           rig_slots;    /* 0: PVM_METEOR_RIG_SLOTS */
    /* called once with the file's graph as loaded (before any pass), e.g. to read what the
     * file says about the spec's open points */
    void        (*probe)(void *ud, const struct pvg_graph *g);
    void         *probe_ud;
} pvm_meteor_net_opts;

/* Loads path (external data beside it), checks the 4 inputs and 19 outputs (names, dtypes,
 * shapes of spec 1.2 / 1.5, naming any that differ), runs the passes, splits and plans. */
pv_status pvm_meteor_net_open(const char *path, const pvm_meteor_net_opts *o, pvm_meteor_net **out, pvc_msg *msg);
void      pvm_meteor_net_free(pvm_meteor_net *n);

typedef struct pvm_meteor_net_stats {
    double rig_ms;      /* this run's rig part (0 when the rig was cached) */
    bool   rig_hit;
} pvm_meteor_net_stats;

/* One frame: imgs uint8 [1,8,3,432,768], K [1,8,3,3], T_cam_ego [1,8,4,4], v0 [1]. outs[i] is
 * output i of pvm_meteor_output_names (data in the plan's arena: valid until the next run). */
pv_status pvm_meteor_net_run(pvm_meteor_net *n, const uint8_t *imgs, const float *K, const float *T, float v0,
                             pvc_tensor outs[PVM_METEOR_NOUT], pvm_meteor_net_stats *st, pvc_msg *msg);

/* Facts for info: whether the rig part is split off (and why not), its size, plan bytes. */
typedef struct pvm_meteor_net_info {
    bool        rig_split;
    const char *rig_note;        /* why not split, or "" */
    int         rig_nodes, frame_nodes, frontier;
    size_t      rig_bytes;       /* cached bytes per rig */
    size_t      arena_bytes, const_bytes;
    int         rig_slots, rigs_cached;
    const char *precision, *precision_note;
} pvm_meteor_net_info;
void pvm_meteor_net_info_get(const pvm_meteor_net *n, pvm_meteor_net_info *info);

#endif
