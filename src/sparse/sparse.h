/* sparse: voxelization, coordinate hashing, rulebooks and sparse 3D convolution on active
 * sites (submanifold and strided), for lidar encoders such as BEVFusion's. Prefix pvs_.
 *
 *   pvs_voxelize()          points -> voxels (first-come voxel order, first P points each)
 *   pvs_rulebook_subm()     one rulebook per level, shared by all submanifold convs there
 *   pvs_rulebook_down()     strided conv: output site set + rulebook
 *   pvs_conv()              gather - GEMM - scatter over a rulebook, with a fused epilogue
 *                           (bias, residual add, ReLU); pvs_conv_ref() is its plain twin
 *
 * Coordinates are (x, y, z) int32 triples in these functions (the voxelizer also writes the
 * ONNX's (z, y, x) order). Memory: every function that keeps arrays takes caller-provided
 * capacities and fails with PV_EINPUT (message with the counts) when they would overflow;
 * nothing is clipped. Scratch comes from pvs_*_scratch_bytes sized buffers so that a frame
 * allocates nothing. Limits (PV_EINPUT beyond them): a grid (voxel grid, site shape, strided
 * output shape) has fewer than 2^32 - 1 cells, so a cell's linear key is a uint32; at most
 * 2^30 sites per set and 2^30 max_voxels; at most 2^31 - 1 pairs per rulebook. */
#ifndef PVS_SPARSE_H
#define PVS_SPARSE_H

#include "core/core.h"

/* ---- voxelization (BEVFusion spec section 1.5) ------------------------------------------ */
typedef struct pvs_voxel_cfg {
    float   range_min[3];   /* x, y, z (m) */
    float   voxel_size[3];  /* x, y, z (m) */
    int32_t grid[3];        /* x, y, z cells (1440, 1440, 40): points at c_d >= grid_d dropped */
    int32_t max_points;     /* points kept per voxel (10) */
    int64_t max_voxels;     /* voxels kept (256,000); later new voxels are dropped */
    int32_t nfeat;          /* floats copied per point into a voxel slot (4: x, y, z, time_lag) */
} pvs_voxel_cfg;

typedef struct pvs_voxels {
    int64_t  cap;           /* capacity in voxels of the arrays below (caller-owned) */
    float   *feat;          /* [cap, max_points, nfeat], zero padded */
    int32_t *npoints;       /* [cap], 1..max_points */
    int32_t *coors_zyx;     /* [cap, 3] z, y, x */
    int64_t  n;             /* voxels made (rows past n are not written) */
    int64_t  points_in;     /* points inside the grid: kept + voxel_full + over_cap */
    int64_t  points_out_of_range;
    int64_t  points_voxel_full;   /* dropped: their voxel already had max_points */
    int64_t  points_over_cap;     /* dropped: their voxel would have been past max_voxels */
} pvs_voxels;

/* Index rule: c_d = floor((p_d - min_d) / size_d) computed in float32; a point is dropped if
 * any c_d < 0 or c_d >= grid_d. Points are rows of `stride` floats whose first nfeat values
 * are copied (the first three are x, y, z). Non-finite points must be removed beforehand
 * (a NaN coordinate is dropped and counted out of range; no crash). Voxels are numbered in
 * order of first appearance and keep their first max_points points in buffer order; once
 * max_voxels voxels exist, points of new voxels are dropped (points_over_cap) while points of
 * existing voxels are still added. out->cap may be below max_voxels: if a frame needs more
 * voxels than out->cap (and max_voxels allows them) the call fails with PV_EINPUT and
 * out->n = 0. scratch: pvs_voxelize_scratch_bytes(cfg, npts) bytes, 8-byte aligned (the key ->
 * voxel hash). */
size_t    pvs_voxelize_scratch_bytes(const pvs_voxel_cfg *cfg, int64_t npts);
pv_status pvs_voxelize(const pvs_voxel_cfg *cfg, const float *pts, int64_t npts, int32_t stride,
                       pvs_voxels *out, void *scratch, pvc_msg *msg);

/* ---- site sets ---------------------------------------------------------------------------- */
typedef struct pvs_sites {
    int32_t  shape[3];      /* spatial shape x, y, z */
    int64_t  n;             /* active sites */
    int64_t  cap;           /* capacity of xyz (caller-owned) */
    int32_t *xyz;           /* [cap, 3] x, y, z */
} pvs_sites;

/* ---- rulebooks ---------------------------------------------------------------------------- */
/* For kernel offset k (k = (kx * KY + ky) * KZ + kz, the order of a [Cout, KX, KY, KZ, Cin]
 * filter), pairs start[k] .. start[k+1]-1 of in_idx/out_idx: in site in_idx[p] contributes
 * to out site out_idx[p] through W[k]. Within one k every out_idx is distinct (so one k can
 * be scattered in parallel without atomics); the builders below also make out_idx strictly
 * increasing within each k, and pvs_conv relies on that (it finds a block of output rows in
 * every k by binary search). The builders run on pool (NULL: inline); the rulebook they make
 * does not depend on it. */
typedef struct pvs_rulebook {
    int32_t  ksize[3];
    int32_t  K;             /* KX * KY * KZ */
    int64_t  start[28];     /* K + 1 entries used (K <= 27) */
    int64_t  cap;           /* capacity of in_idx/out_idx in pairs (caller-owned) */
    int32_t *in_idx;
    int32_t *out_idx;
    int64_t  n_in, n_out;   /* site counts it was built for */
} pvs_rulebook;

/* Submanifold conv (stride 1, padding k/2, dilation 1): out sites = in sites;
 * out q gathers in site q + (k - ksize/2) when active. ksize: odd, each in [1, 27], K <= 27.
 * Sites must lie inside s->shape and be distinct (else PV_EINPUT naming them).
 * scratch: pvs_hash_scratch_bytes(n) bytes, 8-byte aligned (hash + a [n, 27] neighbour table:
 * about 124 bytes a site). */
size_t    pvs_hash_scratch_bytes(int64_t n);
pv_status pvs_rulebook_subm(pvc_pool *pool, const pvs_sites *s, const int32_t ksize[3], pvs_rulebook *rb,
                            void *scratch, pvc_msg *msg);
/* The hash-probe builder pvs_rulebook_subm replaced (same arguments, same rulebook, same
 * messages): its test oracle. */
pv_status pvs_rulebook_subm_ref(pvc_pool *pool, const pvs_sites *s, const int32_t ksize[3], pvs_rulebook *rb,
                                void *scratch, pvc_msg *msg);

/* Strided ("regular") sparse conv: out_dim = floor((in + 2p - k) / s) + 1 per axis; the out
 * site set is every o in range reached by >= 1 active input (o * s - p + k = i), sorted by
 * (x, y, z) lexicographically (deterministic). out->shape is set even on failure of the
 * capacities. ksize in [1, 27] per axis (K <= 27), stride in [1, 2^20], pad in [0, 2^20].
 * Inputs need not be sorted (a site set made here is, which saves a sort).
 * scratch: pvs_down_scratch_bytes(in->n, K) bytes, 8-byte aligned (16 bytes an input site,
 * whatever K and the stride). */
size_t    pvs_down_scratch_bytes(int64_t n_in, int32_t K);
pv_status pvs_rulebook_down(pvc_pool *pool, const pvs_sites *in, const int32_t ksize[3], const int32_t stride[3],
                            const int32_t pad[3], pvs_sites *out, pvs_rulebook *rb, void *scratch,
                            pvc_msg *msg);

/* ---- convolution -------------------------------------------------------------------------- */
struct pvk_gemm_packed;

typedef struct pvs_conv_desc {
    int32_t      cin, cout;
    const float *w;         /* [K, cin, cout] (BN folded by the caller) */
    const float *bias;      /* [cout] or NULL */
    bool         relu;      /* after bias + residual */
    /* Optional (NULL: w through pvk_gemm_f32): W[k] packed once per offset, K objects of
     * pvk_gemm_packed_create(cin, cout, W[k], ...) of kernels/gemm_packed.h, fp32 or bf16; the
     * gathered GEMMs then run them (bf16 rounds the gathered inputs and W to bf16, sums in
     * fp32). Read only when pvs_conv_gathers(d); the caller keeps them alive. */
    struct pvk_gemm_packed *const *wk;
} pvs_conv_desc;

/* True when pvs_conv runs d through gathered GEMMs once d->wk is set (else the narrow-layer
 * direct kernel, fp32, which never reads d->wk): whether packing W[k] for it is worth anything.
 * Without d->wk such layers run the fp32 wide pairs kernel where the CPU has one. */
bool   pvs_conv_gathers(const pvs_conv_desc *d);

/* out[m, :] = act(sum over pairs (i -> m) of in[i, :] W[k] + bias + residual[m, :]).
 * in [rb->n_in, cin], out and residual [rb->n_out, cout] rows contiguous; residual may be
 * NULL and may not alias out; in may not alias out. ws: pvs_conv_ws_bytes(rb, d, threads)
 * bytes, any alignment, where threads >= pvc_pool_threads(pool) of every pool the conv runs
 * on (NULL pool: 1). The rulebook must come from pvs_rulebook_subm/_down (out_idx increasing
 * within each k). The result does not depend on the pool: bit-identical for any thread count.
 * Every out row is written (rows no pair reaches get act(bias + residual)). */
size_t pvs_conv_ws_bytes(const pvs_rulebook *rb, const pvs_conv_desc *d, int threads);
void   pvs_conv(pvc_pool *pool, const pvs_rulebook *rb, const pvs_conv_desc *d, const float *in,
                const float *residual, float *out, void *ws);
/* The plain twin: per pair, per channel, no GEMM, no threads. The tests' oracle. */
void   pvs_conv_ref(const pvs_rulebook *rb, const pvs_conv_desc *d, const float *in,
                    const float *residual, float *out);

#endif
