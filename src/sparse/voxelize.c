/* Hard voxelization (BEVFusion spec section 1.5): points -> voxels in first-appearance order,
 * the first max_points points of each voxel in buffer order, at most max_voxels voxels.
 *
 * One pass over the points. The index rule is c = floor((p - min) / size) in float32: the
 * quotient is checked against [0, 2^31) as a float (which also drops NaN) and then truncated,
 * which equals floor for non-negative values, so no libm call sits in the loop. The voxel of
 * each key comes from the coordinate hash; consecutive lidar returns often share a voxel, so
 * the last key and its voxel are kept aside and skip the probe.
 * The table (up to 4 MiB for 256k voxels) and the voxel rows are touched at random, so the
 * points go in chunks: the cells of a chunk are computed and their hash slots prefetched, then
 * its probes run in point order (voxels still numbered as they first appear), prefetching
 * the voxel rows, then its points are appended in point order. The result is the one of the
 * plain point-by-point loop; only the memory accesses overlap. */
#include "sparse/coord_hash.h"

#include <math.h>
#include <string.h>

enum { CHUNK = 32 };   /* points whose hash slots are fetched ahead of their probes */

static int64_t hash_keys(const pvs_voxel_cfg *cfg, int64_t npts)
{
    int64_t c = npts;
    if (cfg && cfg->max_voxels > 0 && cfg->max_voxels < c) c = cfg->max_voxels;
    return c < 1 ? 1 : c;
}

size_t pvs_voxelize_scratch_bytes(const pvs_voxel_cfg *cfg, int64_t npts)
{
    return pvs_hash_table_bytes(hash_keys(cfg, npts), 2);
}

static pv_status check_cfg(const pvs_voxel_cfg *cfg, int32_t stride, pvc_msg *msg)
{
    static const char axis[3] = { 'x', 'y', 'z' };
    for (int d = 0; d < 3; d++) {
        float sz = cfg->voxel_size[d], mn = cfg->range_min[d];
        if (!(isfinite(sz) && sz > 0.0f))
            return pvc_fail(msg, PV_EINPUT, "voxelize: voxel_size.%c = %g must be finite and > 0", axis[d], (double)sz);
        if (!isfinite(mn))
            return pvc_fail(msg, PV_EINPUT, "voxelize: range_min.%c = %g must be finite", axis[d], (double)mn);
        if (cfg->grid[d] < 1)
            return pvc_fail(msg, PV_EINPUT, "voxelize: grid.%c = %d must be >= 1", axis[d], cfg->grid[d]);
    }
    if (!pvs_grid_keys_ok(cfg->grid))
        return pvc_fail(msg, PV_EINPUT, "voxelize: grid %d x %d x %d has 2^32 - 1 cells or more", cfg->grid[0],
                        cfg->grid[1], cfg->grid[2]);
    if (cfg->max_points < 1)
        return pvc_fail(msg, PV_EINPUT, "voxelize: max_points = %d must be >= 1", cfg->max_points);
    if (cfg->max_voxels < 1 || cfg->max_voxels > PVS_MAX_SITES)
        return pvc_fail(msg, PV_EINPUT, "voxelize: max_voxels = %lld must be in [1, 2^30]", (long long)cfg->max_voxels);
    if (stride < 3)
        return pvc_fail(msg, PV_EINPUT, "voxelize: stride = %d floats per point must be >= 3", stride);
    if (cfg->nfeat < 1 || cfg->nfeat > stride)
        return pvc_fail(msg, PV_EINPUT, "voxelize: nfeat = %d must be in [1, stride = %d]", cfg->nfeat, stride);
    return PV_OK;
}

pv_status pvs_voxelize(const pvs_voxel_cfg *cfg, const float *pts, int64_t npts, int32_t stride,
                       pvs_voxels *out, void *scratch, pvc_msg *msg)
{
    if (!cfg || !out || !scratch || (!pts && npts > 0))
        return pvc_fail(msg, PV_EINPUT, "voxelize: cfg, out, scratch and pts (for %lld points) must be non-NULL",
                        (long long)npts);
    out->n = out->points_in = out->points_out_of_range = out->points_voxel_full = out->points_over_cap = 0;
    if (npts < 0) return pvc_fail(msg, PV_EINPUT, "voxelize: npts = %lld is negative", (long long)npts);
    pv_status st = check_cfg(cfg, stride, msg);
    if (st != PV_OK) return st;
    if (out->cap < 0 || (out->cap > 0 && (!out->feat || !out->npoints || !out->coors_zyx)))
        return pvc_fail(msg, PV_EINPUT, "voxelize: out->cap = %lld with missing arrays", (long long)out->cap);

    pvs_hash h;
    pvs_hash_init(&h, scratch, hash_keys(cfg, npts), 2);
    const float mnx = cfg->range_min[0], mny = cfg->range_min[1], mnz = cfg->range_min[2];
    const float szx = cfg->voxel_size[0], szy = cfg->voxel_size[1], szz = cfg->voxel_size[2];
    const uint32_t gx = (uint32_t)cfg->grid[0], gy = (uint32_t)cfg->grid[1], gz = (uint32_t)cfg->grid[2];
    const int32_t mp = cfg->max_points, nf = cfg->nfeat;
    const int64_t limit = cfg->max_voxels, cap = out->cap, slot_floats = (int64_t)mp * nf;
    const float lim = 2147483648.0f;
    int64_t n = 0, oor = 0, full = 0, over = 0;
    uint32_t last_key = UINT32_MAX;   /* no real key */
    int32_t last_v = -1;              /* -1: that voxel was dropped (cap reached) */

    for (int64_t i0 = 0; i0 < npts; i0 += CHUNK) {
        const int m = (int)PVC_MIN((int64_t)CHUNK, npts - i0);
        uint32_t key[CHUNK], cell[CHUNK][3];
        int32_t vox[CHUNK];
        /* 1: cells, and a prefetch of each one's home slot */
        for (int j = 0; j < m; j++) {
            const float *p = pts + (i0 + j) * (int64_t)stride;
            /* float32 throughout: each step rounds to float (SSE arithmetic; no FMA contraction
             * applies to a subtract followed by a divide) */
            float fx = (p[0] - mnx) / szx, fy = (p[1] - mny) / szy, fz = (p[2] - mnz) / szz;
            key[j] = UINT32_MAX;   /* out of range */
            if (!(fx >= 0.0f && fx < lim && fy >= 0.0f && fy < lim && fz >= 0.0f && fz < lim)) continue;
            uint32_t cx = (uint32_t)(int32_t)fx, cy = (uint32_t)(int32_t)fy, cz = (uint32_t)(int32_t)fz;
            if (cx >= gx || cy >= gy || cz >= gz) continue;
            key[j] = (cx * gy + cy) * gz + cz;
            cell[j][0] = cx;
            cell[j][1] = cy;
            cell[j][2] = cz;
            __builtin_prefetch(&h.slot[pvs_hash_home(&h, cx, cy, cz)], 1, 3);
        }
        /* 2: voxels in point order (new ones numbered as they first appear); prefetch the
         * count and the first slot line each point will touch */
        for (int j = 0; j < m; j++) {
            if (key[j] == UINT32_MAX) { oor++; vox[j] = -2; continue; }
            int32_t v;
            if (key[j] == last_key) {
                v = last_v;
            } else {
                uint64_t *s = pvs_hash_probe(&h, key[j], cell[j][0], cell[j][1], cell[j][2]);
                if (*s != PVS_HASH_FREE) {
                    v = (int32_t)(uint32_t)*s;
                } else if (n >= limit) {
                    v = -1;
                } else {
                    if (n >= cap) {
                        out->n = 0;
                        return pvc_fail(msg, PV_EINPUT,
                                        "voxelize: point %lld needs voxel number %lld but out->cap is %lld "
                                        "(max_voxels %lld, %lld points)", (long long)(i0 + j), (long long)n + 1,
                                        (long long)cap, (long long)limit, (long long)npts);
                    }
                    v = (int32_t)n++;
                    pvs_hash_put(s, key[j], v);
                    out->npoints[v] = 0;
                    out->coors_zyx[3 * (int64_t)v + 0] = (int32_t)cell[j][2];
                    out->coors_zyx[3 * (int64_t)v + 1] = (int32_t)cell[j][1];
                    out->coors_zyx[3 * (int64_t)v + 2] = (int32_t)cell[j][0];
                    memset(out->feat + v * slot_floats, 0, (size_t)slot_floats * sizeof(float));
                }
                last_key = key[j];
                last_v = v;
            }
            vox[j] = v;
            if (v >= 0) {
                __builtin_prefetch(&out->npoints[v], 1, 3);
                __builtin_prefetch(out->feat + v * slot_floats, 1, 3);
            }
        }
        /* 3: append the first max_points points of each voxel, in point order */
        for (int j = 0; j < m; j++) {
            int32_t v = vox[j];
            if (v < 0) { over += v == -1; continue; }
            int32_t k = out->npoints[v];
            if (k >= mp) { full++; continue; }
            const float *p = pts + (i0 + j) * (int64_t)stride;
            float *dst = out->feat + v * slot_floats + (int64_t)k * nf;
            for (int32_t c = 0; c < nf; c++) dst[c] = p[c];
            out->npoints[v] = k + 1;
        }
    }
    out->n = n;
    out->points_out_of_range = oor;
    out->points_in = npts - oor;
    out->points_voxel_full = full;
    out->points_over_cap = over;
    return PV_OK;
}
