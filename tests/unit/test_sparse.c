/* src/sparse: voxelizer, rulebooks and sparse convolution.
 *
 * Voxelizer: hand-made points (edges of the range, negative coordinates, the float32 index
 * rule at values where float64 gives another cell, first-come voxel order, more than
 * max_points, the max_voxels cap, zero padding, counters) and random clouds against a dense
 * cell table. Rulebooks: exact comparison with brute force over the dense grid (every out
 * cell x every offset) for the BEVFusion layer kinds and odd shapes, on shuffled and sorted
 * site sets; out_dim along the BEVFusion chain; capacity and input errors. Convolution:
 * pvs_conv and pvs_conv_ref against a dense 3D convolution (cross-correlation) computed here
 * in double on the grid and read back at the output sites, with bias / residual / ReLU, odd
 * channel counts, inline and 2-thread pools, guard floats after the output and the workspace.
 *
 * Tolerance: |got - dense| <= 1e-4 * sum |terms| + 1e-6, the terms being every product and
 * the bias and residual (float sums of a few hundred terms are ~1e-6 relative). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_packed.h"
#include "kernels/spconv_pairs.h"
#include "sparse/sparse.h"

#define GUARD 37
#define GUARD_VAL -98765.5f

static pvc_pool *pool2;

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static float frand(void) { return (float)((double)urand() / 2147483648.0 * 2.0 - 1.0); }   /* [-1, 1) */

/* ---- voxelizer ------------------------------------------------------------------------------ */

typedef struct vox {
    pvs_voxels v;
    void *scratch;
    int mp, nf;
} vox;

/* Arrays filled with garbage, so zero padding and npoints are really written. */
static void vox_alloc(vox *b, const pvs_voxel_cfg *cfg, int64_t cap, int64_t npts)
{
    memset(b, 0, sizeof *b);
    b->mp = cfg->max_points;
    b->nf = cfg->nfeat;
    b->v.cap = cap;
    size_t nfeat = (size_t)(cap > 0 ? cap : 1) * (size_t)b->mp * (size_t)b->nf;
    b->v.feat = malloc(nfeat * sizeof(float));
    b->v.npoints = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
    b->v.coors_zyx = malloc((size_t)(cap > 0 ? cap : 1) * 3 * sizeof(int32_t));
    for (size_t i = 0; i < nfeat; i++) b->v.feat[i] = 7.0f;
    for (int64_t i = 0; i < (cap > 0 ? cap : 1); i++) b->v.npoints[i] = 99;
    b->scratch = malloc(pvs_voxelize_scratch_bytes(cfg, npts));
    assert_non_null(b->scratch);
}

static void vox_free(vox *b)
{
    free(b->v.feat);
    free(b->v.npoints);
    free(b->v.coors_zyx);
    free(b->scratch);
}

static const float *slot(const vox *b, int64_t v, int j) { return b->v.feat + (v * b->mp + j) * b->nf; }

static void assert_coors(const vox *b, int64_t v, int z, int y, int x)
{
    const int32_t *c = b->v.coors_zyx + 3 * v;
    if (c[0] != z || c[1] != y || c[2] != x)
        fail_msg("voxel %lld: coors (z,y,x) = (%d,%d,%d), expected (%d,%d,%d)", (long long)v, c[0], c[1], c[2], z, y, x);
}

/* x in [-1, 1), y in [-2, 2), z in [-3, 3): cells 0.5 x 0.5 x 1 */
static pvs_voxel_cfg small_cfg(int max_points, int64_t max_voxels)
{
    pvs_voxel_cfg c = { { -1.0f, -2.0f, -3.0f }, { 0.5f, 0.5f, 1.0f }, { 4, 8, 6 }, max_points, max_voxels, 4 };
    return c;
}

static void test_vox_edges(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = small_cfg(3, 100);
    const float nan = NAN;
    /* stride 5: x, y, z, t, extra (not copied: nfeat 4) */
    const float pts[][5] = {
        { -1.0f, -2.0f, -3.0f, 0.5f, 9.0f },          /* exactly the min corner: cell (0,0,0) */
        { 1.0f, 0.0f, 0.0f, 0.0f, 9.0f },             /* x on the max edge: cell 4 -> dropped */
        { 0.999f, 1.999f, 2.999f, 1.5f, 9.0f },       /* last cell (3,7,5) */
        { -1.0001f, 0.0f, 0.0f, 0.0f, 9.0f },         /* below min x */
        { 0.0f, 2.0f, 0.0f, 0.0f, 9.0f },             /* y on the max edge */
        { 0.0f, 0.0f, 3.0f, 0.0f, 9.0f },             /* z on the max edge */
        { -0.75f, -1.25f, -0.5f, 2.5f, 9.0f },        /* negative inside: (0,1,2) */
        { nan, 0.0f, 0.0f, 0.0f, 9.0f },              /* NaN: dropped, no crash */
        { 1e30f, 0.0f, 0.0f, 0.0f, 9.0f },            /* huge */
        { 0.0f, -1e30f, 0.0f, 0.0f, 9.0f },           /* huge negative */
        { -1.0f, -2.0f, -3.0f, 3.5f, 9.0f },          /* the min corner again: second point of voxel 0 */
    };
    int64_t n = (int64_t)PVC_COUNTOF(pts);
    vox b;
    vox_alloc(&b, &cfg, 10, n);
    pvc_msg msg = { { 0 } };
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], n, 5, &b.v, b.scratch, &msg), PV_OK);
    assert_int_equal(b.v.n, 3);
    assert_coors(&b, 0, 0, 0, 0);
    assert_coors(&b, 1, 5, 7, 3);
    assert_coors(&b, 2, 2, 1, 0);
    assert_int_equal(b.v.points_out_of_range, 7);
    assert_int_equal(b.v.points_in, 4);
    assert_int_equal(b.v.points_voxel_full, 0);
    assert_int_equal(b.v.points_over_cap, 0);
    assert_int_equal(b.v.npoints[0], 2);
    assert_int_equal(b.v.npoints[1], 1);
    assert_int_equal(b.v.npoints[2], 1);
    /* first nfeat values copied in order; the rest of each voxel zero */
    assert_memory_equal(slot(&b, 0, 0), pts[0], 4 * sizeof(float));
    assert_memory_equal(slot(&b, 0, 1), pts[10], 4 * sizeof(float));
    assert_memory_equal(slot(&b, 1, 0), pts[2], 4 * sizeof(float));
    assert_memory_equal(slot(&b, 2, 0), pts[6], 4 * sizeof(float));
    for (int j = 0; j < 4; j++) {
        assert_true(slot(&b, 0, 2)[j] == 0.0f);
        assert_true(slot(&b, 1, 1)[j] == 0.0f && slot(&b, 1, 2)[j] == 0.0f);
        assert_true(slot(&b, 2, 1)[j] == 0.0f && slot(&b, 2, 2)[j] == 0.0f);
    }
    assert_true(slot(&b, 3, 0)[0] == 7.0f);   /* rows past n untouched */
    vox_free(&b);
}

/* BEVFusion's grid. At x = -0x1.d8999ap+6 (-118.15) and z = -2, (p - min) / size is an exact
 * integer in float32 but falls just below it in float64: the two rules give different cells. */
static void test_vox_float32_rule(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = { { -122.4f, -122.4f, -3.0f }, { 0.17f, 0.17f, 0.2f }, { 1440, 1440, 40 }, 10, 256000, 4 };
    const float px = -0x1.d8999ap+6f, pz = -2.0f;
    /* the premise: float64 says 24 and 4 */
    assert_int_equal((int)floor(((double)px - (double)cfg.range_min[0]) / (double)cfg.voxel_size[0]), 24);
    assert_int_equal((int)floor(((double)pz - (double)cfg.range_min[2]) / (double)cfg.voxel_size[2]), 4);
    const float pts[2][4] = { { px, 0.0f, pz, 0.0f }, { 122.39f, 122.39f, 4.99f, 0.0f } };
    vox b;
    vox_alloc(&b, &cfg, 4, 2);
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], 2, 4, &b.v, b.scratch, NULL), PV_OK);
    assert_int_equal(b.v.n, 2);
    assert_coors(&b, 0, 5, 720, 25);
    assert_coors(&b, 1, 39, 1439, 1439);
    vox_free(&b);
}

static void test_vox_order_and_full(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = small_cfg(3, 100);
    /* A = (0,0,0) cell, B = (3,7,5), C = (1,2,3); the 4th value numbers the point */
    const float A[3] = { -0.9f, -1.9f, -2.9f }, B[3] = { 0.9f, 1.9f, 2.9f }, C[3] = { -0.4f, -0.9f, 0.1f };
    const float *seq[] = { A, B, A, C, A, A, A, B };
    int64_t n = (int64_t)PVC_COUNTOF(seq);
    float pts[8][4];
    for (int i = 0; i < n; i++) {
        memcpy(pts[i], seq[i], 3 * sizeof(float));
        pts[i][3] = (float)i;
    }
    vox b;
    vox_alloc(&b, &cfg, 8, n);
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], n, 4, &b.v, b.scratch, NULL), PV_OK);
    assert_int_equal(b.v.n, 3);
    assert_coors(&b, 0, 0, 0, 0);
    assert_coors(&b, 1, 5, 7, 3);
    assert_coors(&b, 2, 3, 2, 1);
    assert_int_equal(b.v.npoints[0], 3);
    assert_int_equal(b.v.npoints[1], 2);
    assert_int_equal(b.v.npoints[2], 1);
    /* A keeps its first three points in buffer order: 0, 2, 4 */
    assert_true(slot(&b, 0, 0)[3] == 0.0f && slot(&b, 0, 1)[3] == 2.0f && slot(&b, 0, 2)[3] == 4.0f);
    assert_true(slot(&b, 1, 0)[3] == 1.0f && slot(&b, 1, 1)[3] == 7.0f);
    assert_int_equal(b.v.points_voxel_full, 2);
    assert_int_equal(b.v.points_in, 8);
    assert_int_equal(b.v.points_out_of_range, 0);
    vox_free(&b);
}

static void test_vox_cap(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = small_cfg(10, 2);
    cfg.nfeat = 3;
    const float A[3] = { -0.9f, -1.9f, -2.9f }, B[3] = { 0.9f, 1.9f, 2.9f }, C[3] = { -0.4f, -0.9f, 0.1f },
                D[3] = { 0.1f, 0.1f, 0.1f };
    const float *seq[] = { A, B, C, A, C, D, B, 0 };
    float pts[8][3];
    int64_t n = 0;
    for (; seq[n]; n++) memcpy(pts[n], seq[n], sizeof pts[n]);
    vox b;
    vox_alloc(&b, &cfg, 2, n);   /* out->cap = max_voxels: no overflow, later voxels dropped */
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], n, 3, &b.v, b.scratch, NULL), PV_OK);
    assert_int_equal(b.v.n, 2);
    assert_int_equal(b.v.npoints[0], 2);   /* A: points 0 and 3 */
    assert_int_equal(b.v.npoints[1], 2);   /* B: points 1 and 6 */
    assert_int_equal(b.v.points_over_cap, 3);
    assert_int_equal(b.v.points_in, 7);
    assert_int_equal(b.v.points_voxel_full, 0);
    vox_free(&b);
}

static void test_vox_errors(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = small_cfg(3, 100);
    cfg.nfeat = 3;
    const float pts[3][3] = { { -0.9f, -1.9f, -2.9f }, { 0.9f, 1.9f, 2.9f }, { 0.1f, 0.1f, 0.1f } };
    vox b;
    vox_alloc(&b, &cfg, 1, 3);
    pvc_msg msg = { { 0 } };
    /* out->cap 1 < the 3 voxels needed (max_voxels 100): refused, not clipped */
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "out->cap is 1"));
    assert_int_equal(b.v.n, 0);

    pvs_voxel_cfg bad = cfg;
    bad.voxel_size[1] = 0.0f;
    assert_int_equal(pvs_voxelize(&bad, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "voxel_size.y"));
    bad = cfg;
    bad.grid[2] = 0;
    assert_int_equal(pvs_voxelize(&bad, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "grid.z"));
    bad = cfg;
    bad.grid[0] = bad.grid[1] = bad.grid[2] = 2000;
    assert_int_equal(pvs_voxelize(&bad, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    bad = cfg;
    bad.max_points = 0;
    assert_int_equal(pvs_voxelize(&bad, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "max_points"));
    bad = cfg;
    bad.nfeat = 4;   /* > stride 3 */
    assert_int_equal(pvs_voxelize(&bad, &pts[0][0], 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "nfeat"));
    assert_int_equal(pvs_voxelize(&cfg, &pts[0][0], 3, 3, &b.v, NULL, &msg), PV_EINPUT);
    assert_int_equal(pvs_voxelize(&cfg, NULL, 3, 3, &b.v, b.scratch, &msg), PV_EINPUT);
    /* no points: no voxels, fine */
    assert_int_equal(pvs_voxelize(&cfg, NULL, 0, 3, &b.v, b.scratch, &msg), PV_OK);
    assert_int_equal(b.v.n, 0);
    assert_int_equal(b.v.points_in, 0);
    vox_free(&b);
}

/* Random clouds (many collisions in the hash, runs of equal keys and scattered ones) against a
 * dense table cell -> voxel. */
static void test_vox_random(void **state)
{
    (void)state;
    pvs_voxel_cfg cfg = { { -5.0f, -4.0f, -1.0f }, { 0.5f, 0.4f, 0.25f }, { 20, 20, 10 }, 5, 1500, 4 };
    enum { NP = 20000 };
    float *pts = malloc(NP * 4 * sizeof(float));
    for (int i = 0; i < NP; i++) {
        float *p = pts + 4 * i;
        if (i > 0 && urand() % 3 == 0) {   /* a near-repeat of the previous point */
            memcpy(p, p - 4, 3 * sizeof(float));
            p[0] += 0.01f * frand();
        } else {
            p[0] = 6.0f * frand();
            p[1] = 5.0f * frand();
            p[2] = 0.3f + 1.6f * frand();
        }
        p[3] = (float)i;
    }
    vox b;
    vox_alloc(&b, &cfg, cfg.max_voxels, NP);
    assert_int_equal(pvs_voxelize(&cfg, pts, NP, 4, &b.v, b.scratch, NULL), PV_OK);

    int32_t *cell = malloc(4000 * sizeof(int32_t));
    int32_t *cnt = calloc(4000, sizeof(int32_t));
    for (int i = 0; i < 4000; i++) cell[i] = -1;
    int64_t n = 0, oor = 0, full = 0, over = 0;
    for (int i = 0; i < NP; i++) {
        const float *p = pts + 4 * i;
        int c[3];
        bool in = true;
        for (int d = 0; d < 3; d++) {
            float f = floorf((p[d] - cfg.range_min[d]) / cfg.voxel_size[d]);
            in = in && f >= 0.0f && f < (float)cfg.grid[d];
            c[d] = in ? (int)f : 0;
        }
        if (!in) { oor++; continue; }
        int key = (c[0] * 20 + c[1]) * 10 + c[2];
        if (cell[key] < 0) {
            if (n == cfg.max_voxels) { over++; continue; }
            cell[key] = (int32_t)n;
            assert_coors(&b, n, c[2], c[1], c[0]);
            n++;
        }
        int v = cell[key];
        if (cnt[v] == cfg.max_points) { full++; continue; }
        assert_true(slot(&b, v, cnt[v])[3] == p[3]);
        cnt[v]++;
    }
    assert_int_equal(b.v.n, n);
    assert_true(n > 1000);
    for (int64_t v = 0; v < n; v++) assert_int_equal(b.v.npoints[v], cnt[v]);
    assert_int_equal(b.v.points_out_of_range, oor);
    assert_int_equal(b.v.points_voxel_full, full);
    assert_int_equal(b.v.points_over_cap, over);
    assert_true(oor > 0 && full > 0);
    free(cell);
    free(cnt);
    free(pts);
    vox_free(&b);
}

/* ---- site sets and brute-force rulebooks ----------------------------------------------------- */

typedef struct sites_buf { pvs_sites s; } sites_buf;

/* Active cells of a grid with the given density, in shuffled (or sorted) order. */
static pvs_sites make_sites(int X, int Y, int Z, double density, bool shuffle)
{
    pvs_sites s = { { X, Y, Z }, 0, (int64_t)X * Y * Z, NULL };
    s.xyz = malloc((size_t)(s.cap > 0 ? s.cap : 1) * 3 * sizeof(int32_t));
    for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++)
            for (int z = 0; z < Z; z++)
                if ((double)urand() / 2147483648.0 < density) {
                    int32_t *c = s.xyz + 3 * s.n++;
                    c[0] = x;
                    c[1] = y;
                    c[2] = z;
                }
    if (shuffle)
        for (int64_t i = s.n - 1; i > 0; i--) {
            int64_t j = urand() % (uint32_t)(i + 1);
            for (int d = 0; d < 3; d++) {
                int32_t t = s.xyz[3 * i + d];
                s.xyz[3 * i + d] = s.xyz[3 * j + d];
                s.xyz[3 * j + d] = t;
            }
        }
    return s;
}

/* cell -> site index (-1 inactive) */
static int32_t *cell_map(const pvs_sites *s)
{
    int64_t cells = (int64_t)s->shape[0] * s->shape[1] * s->shape[2];
    int32_t *m = malloc((size_t)cells * sizeof(int32_t));
    for (int64_t i = 0; i < cells; i++) m[i] = -1;
    for (int64_t q = 0; q < s->n; q++) {
        const int32_t *c = s->xyz + 3 * q;
        m[((int64_t)c[0] * s->shape[1] + c[1]) * s->shape[2] + c[2]] = (int32_t)q;
    }
    return m;
}

static void rb_alloc(pvs_rulebook *rb, int64_t cap)
{
    memset(rb, 0, sizeof *rb);
    rb->cap = cap;
    rb->in_idx = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
    rb->out_idx = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
}

static void rb_free(pvs_rulebook *rb)
{
    free(rb->in_idx);
    free(rb->out_idx);
}

typedef struct geom { int32_t k[3], s[3], p[3]; bool subm; } geom;

/* Brute force over the out grid in (x, y, z) order; fills want (pairs per k in out order, out
 * sites in order). Returns the pair count. */
static int64_t brute(const pvs_sites *in, const geom *g, pvs_sites *out, pvs_rulebook *rb)
{
    int32_t *m = cell_map(in);
    int32_t od[3];
    for (int d = 0; d < 3; d++)
        od[d] = g->subm ? in->shape[d] : (in->shape[d] + 2 * g->p[d] - g->k[d]) / g->s[d] + 1;
    memcpy(out->shape, od, sizeof od);
    int K = g->k[0] * g->k[1] * g->k[2];
    int64_t cells = (int64_t)od[0] * od[1] * od[2];
    int32_t *pair_in = malloc((size_t)cells * K * sizeof(int32_t));   /* [cell, k] */
    int32_t *oidx = malloc((size_t)cells * sizeof(int32_t));
    out->n = 0;
    for (int ox = 0; ox < od[0]; ox++)
        for (int oy = 0; oy < od[1]; oy++)
            for (int oz = 0; oz < od[2]; oz++) {
                int64_t cell = ((int64_t)ox * od[1] + oy) * od[2] + oz;
                int o[3] = { ox, oy, oz }, hits = 0;
                for (int k = 0; k < K; k++) {
                    int kk[3] = { k / (g->k[1] * g->k[2]), k / g->k[2] % g->k[1], k % g->k[2] }, i[3];
                    bool ok = true;
                    for (int d = 0; d < 3; d++) {
                        i[d] = g->subm ? o[d] + kk[d] - g->k[d] / 2 : o[d] * g->s[d] - g->p[d] + kk[d];
                        ok = ok && i[d] >= 0 && i[d] < in->shape[d];
                    }
                    int32_t src = ok ? m[((int64_t)i[0] * in->shape[1] + i[1]) * in->shape[2] + i[2]] : -1;
                    pair_in[cell * K + k] = src;
                    hits += src >= 0;
                }
                bool site = g->subm ? m[cell] >= 0 : hits > 0;
                oidx[cell] = -1;
                if (!site) continue;
                if (g->subm) {
                    oidx[cell] = m[cell];
                } else {
                    memcpy(out->xyz + 3 * out->n, o, 3 * sizeof(int32_t));
                    oidx[cell] = (int32_t)out->n++;
                }
            }
    if (g->subm) out->n = in->n;
    /* pairs per k, ascending out index (for subm: iterate sites in index order) */
    int64_t p = 0;
    rb->K = K;
    for (int k = 0; k < K; k++) {
        rb->start[k] = p;
        if (g->subm) {
            for (int64_t q = 0; q < in->n; q++) {
                const int32_t *c = in->xyz + 3 * q;
                int64_t cell = ((int64_t)c[0] * od[1] + c[1]) * od[2] + c[2];
                if (pair_in[cell * K + k] >= 0) {
                    rb->in_idx[p] = pair_in[cell * K + k];
                    rb->out_idx[p++] = (int32_t)q;
                }
            }
        } else {
            for (int64_t cell = 0; cell < cells; cell++)
                if (oidx[cell] >= 0 && pair_in[cell * K + k] >= 0) {
                    rb->in_idx[p] = pair_in[cell * K + k];
                    rb->out_idx[p++] = oidx[cell];
                }
        }
    }
    rb->start[K] = p;
    free(m);
    free(pair_in);
    free(oidx);
    return p;
}

/* Builds the rulebook with the library (capacities exact from brute force) and compares. */
static void build_rb(const pvs_sites *in, const geom *g, pvs_sites *out, pvs_rulebook *rb)
{
    pvs_sites bout = { { 0 }, 0, 0, NULL };
    pvs_rulebook brb;
    int K = g->k[0] * g->k[1] * g->k[2];
    int64_t cells = 1;
    for (int d = 0; d < 3; d++) cells *= g->subm ? in->shape[d] : (in->shape[d] + 2 * g->p[d] - g->k[d]) / g->s[d] + 1;
    bout.xyz = malloc((size_t)(cells > 0 ? cells : 1) * 3 * sizeof(int32_t));
    rb_alloc(&brb, (in->n > 0 ? in->n : 1) * K);
    int64_t pairs = brute(in, g, &bout, &brb);

    /* inline, then on 2 threads: the same rulebook (the brute-force one) */
    for (int v = 0; v < 2; v++) {
        pvc_pool *pool = v == 0 ? NULL : pool2;
        if (v == 1) {
            rb_free(rb);
            if (!g->subm) free(out->xyz);
        }
        rb_alloc(rb, pairs);
        pvc_msg msg = { { 0 } };
        pv_status st;
        if (g->subm) {
            void *scratch = malloc(pvs_hash_scratch_bytes(in->n));
            st = pvs_rulebook_subm(pool, in, g->k, rb, scratch, &msg);
            free(scratch);
            *out = *in;
            out->xyz = NULL;
        } else {
            void *scratch = malloc(pvs_down_scratch_bytes(in->n, K));
            out->cap = bout.n;
            out->xyz = malloc((size_t)(bout.n > 0 ? bout.n : 1) * 3 * sizeof(int32_t));
            st = pvs_rulebook_down(pool, in, g->k, g->s, g->p, out, rb, scratch, &msg);
            free(scratch);
        }
        if (st != PV_OK) fail_msg("rulebook: %s", msg.text);
        assert_int_equal(rb->K, K);
        assert_int_equal(rb->n_in, in->n);
        assert_int_equal(rb->n_out, bout.n);
        assert_memory_equal(rb->start, brb.start, (size_t)(K + 1) * sizeof(int64_t));
        if (pairs > 0) {
            assert_memory_equal(rb->in_idx, brb.in_idx, (size_t)pairs * sizeof(int32_t));
            assert_memory_equal(rb->out_idx, brb.out_idx, (size_t)pairs * sizeof(int32_t));
        }
        if (!g->subm) {
            assert_int_equal(out->n, bout.n);
            assert_memory_equal(out->shape, bout.shape, sizeof out->shape);
            if (bout.n > 0) assert_memory_equal(out->xyz, bout.xyz, (size_t)bout.n * 3 * sizeof(int32_t));
        }
        /* the documented invariants: out_idx strictly increasing within k */
        for (int k = 0; k < K; k++)
            for (int64_t p = rb->start[k] + 1; p < rb->start[k + 1]; p++) assert_true(rb->out_idx[p] > rb->out_idx[p - 1]);
    }
    free(bout.xyz);
    rb_free(&brb);
}

static const geom GEOMS[] = {
    { { 3, 3, 3 }, { 1, 1, 1 }, { 1, 1, 1 }, true },    /* BEVFusion SubM */
    { { 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 1 }, false },   /* spconv1, spconv2 */
    { { 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 0 }, false },   /* spconv3 */
    { { 1, 1, 3 }, { 1, 1, 2 }, { 0, 0, 0 }, false },   /* conv_out */
    { { 1, 1, 1 }, { 1, 1, 1 }, { 0, 0, 0 }, true },
    { { 1, 3, 1 }, { 1, 1, 1 }, { 0, 0, 0 }, true },
    { { 3, 1, 3 }, { 1, 1, 1 }, { 0, 0, 0 }, true },
    { { 3, 3, 3 }, { 1, 1, 1 }, { 1, 1, 1 }, false },   /* regular conv, stride 1 */
    { { 2, 2, 2 }, { 2, 2, 2 }, { 0, 0, 0 }, false },
    { { 3, 2, 1 }, { 1, 3, 2 }, { 0, 1, 0 }, false },
    { { 3, 3, 3 }, { 3, 3, 3 }, { 2, 2, 2 }, false },   /* pad >= k/2 */
    { { 5, 1, 5 }, { 2, 1, 3 }, { 2, 0, 1 }, false },   /* K = 25 */
    { { 1, 1, 1 }, { 1, 1, 1 }, { 0, 0, 0 }, false },
};

static void test_rulebooks_brute(void **state)
{
    (void)state;
    static const int shapes[][3] = { { 7, 6, 5 }, { 9, 4, 11 }, { 5, 8, 3 }, { 1, 1, 1 }, { 12, 3, 2 },
                                     { 48, 40, 12 } };   /* the last at 0.8: the builders on the pool, several parts */
    static const double dens[] = { 0.1, 0.35, 0.8 };
    for (size_t gi = 0; gi < PVC_COUNTOF(GEOMS); gi++)
        for (size_t si = 0; si < PVC_COUNTOF(shapes); si++)
            for (size_t di = 0; di < PVC_COUNTOF(dens); di++)
                for (int shuffle = 0; shuffle < 2; shuffle++) {
                    const geom *g = &GEOMS[gi];
                    bool fits = true;
                    for (int d = 0; d < 3; d++) fits = fits && shapes[si][d] + 2 * g->p[d] >= g->k[d];
                    if (!fits) continue;
                    pvs_sites in = make_sites(shapes[si][0], shapes[si][1], shapes[si][2], dens[di], shuffle);
                    pvs_sites out;
                    pvs_rulebook rb;
                    build_rb(&in, g, &out, &rb);
                    rb_free(&rb);
                    if (!g->subm) free(out.xyz);
                    free(in.xyz);
                }
}

/* pvs_rulebook_subm (merge over sorted keys) against its oracle pvs_rulebook_subm_ref (hash
 * probes) on grids too large for brute force: sparse and dense, rows of one cell (the linear
 * key wraps at every step), kernels wider than the grid; shuffled (sorted by the builder) and
 * in key order; inline and on the pool (>= 16384 sites). Exact equality. */
static void test_subm_merge_vs_hash(void **state)
{
    (void)state;
    static const int shapes[][3] = { { 200, 150, 41 }, { 60, 50, 12 }, { 40000, 1, 1 }, { 1000, 4, 9 }, { 30, 2, 3 } };
    static const double dens[] = { 0.02, 0.5, 0.5, 0.5, 0.6 };
    static const int32_t ks[][3] = { { 3, 3, 3 }, { 1, 3, 1 }, { 3, 1, 3 }, { 5, 5, 1 }, { 1, 27, 1 },
                                     { 3, 9, 1 }, { 1, 1, 1 }, { 1, 1, 27 }, { 3, 3, 1 } };
    for (size_t si = 0; si < PVC_COUNTOF(shapes); si++)
        for (int shuffle = 0; shuffle < 2; shuffle++) {
            pvs_sites in = make_sites(shapes[si][0], shapes[si][1], shapes[si][2], dens[si], shuffle);
            void *scratch = malloc(pvs_hash_scratch_bytes(in.n));
            for (size_t ki = 0; ki < PVC_COUNTOF(ks); ki++)
                for (int v = 0; v < 2; v++) {
                    pvc_pool *pool = v == 0 ? NULL : pool2;
                    const int32_t K = ks[ki][0] * ks[ki][1] * ks[ki][2];
                    pvs_rulebook want, got;
                    rb_alloc(&want, (in.n > 0 ? in.n : 1) * K);
                    rb_alloc(&got, (in.n > 0 ? in.n : 1) * K);
                    pvc_msg msg = { { 0 } };
                    if (pvs_rulebook_subm_ref(pool, &in, ks[ki], &want, scratch, &msg) != PV_OK) fail_msg("ref: %s", msg.text);
                    memset(scratch, 0x5a, pvs_hash_scratch_bytes(in.n));   /* nothing carried over */
                    if (pvs_rulebook_subm(pool, &in, ks[ki], &got, scratch, &msg) != PV_OK) fail_msg("merge: %s", msg.text);
                    assert_int_equal(got.K, K);
                    assert_int_equal(got.n_in, in.n);
                    assert_int_equal(got.n_out, want.n_out);
                    assert_memory_equal(got.start, want.start, (size_t)(K + 1) * sizeof(int64_t));
                    if (want.start[K] > 0) {
                        assert_memory_equal(got.in_idx, want.in_idx, (size_t)want.start[K] * sizeof(int32_t));
                        assert_memory_equal(got.out_idx, want.out_idx, (size_t)want.start[K] * sizeof(int32_t));
                    }
                    rb_free(&want);
                    rb_free(&got);
                }
            free(scratch);
            free(in.xyz);
        }
}

/* out_dim = floor((in + 2p - k) / s) + 1 along the BEVFusion chain; empty site sets work. */
static void test_out_dims_and_empty(void **state)
{
    (void)state;
    pvs_sites s = { { 1440, 1440, 41 }, 0, 0, NULL };
    static const int32_t want[4][3] = { { 720, 720, 21 }, { 360, 360, 11 }, { 180, 180, 5 }, { 180, 180, 2 } };
    static const int32_t ks[4][3] = { { 3, 3, 3 }, { 3, 3, 3 }, { 3, 3, 3 }, { 1, 1, 3 } };
    static const int32_t st[4][3] = { { 2, 2, 2 }, { 2, 2, 2 }, { 2, 2, 2 }, { 1, 1, 2 } };
    static const int32_t pd[4][3] = { { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 0 }, { 0, 0, 0 } };
    uint64_t scratch[128];
    pvs_rulebook rb;
    memset(&rb, 0, sizeof rb);
    pvc_msg msg = { { 0 } };
    assert_true(pvs_hash_scratch_bytes(0) <= sizeof scratch);
    assert_int_equal(pvs_rulebook_subm(pool2, &s, ks[0], &rb, scratch, &msg), PV_OK);
    assert_int_equal(rb.n_out, 0);
    assert_int_equal(rb.start[27], 0);
    for (int l = 0; l < 4; l++) {
        pvs_sites o = { { 0 }, 0, 0, NULL };
        assert_true(pvs_down_scratch_bytes(0, 27) <= sizeof scratch);
        assert_int_equal(pvs_rulebook_down(pool2, &s, ks[l], st[l], pd[l], &o, &rb, scratch, &msg), PV_OK);
        assert_memory_equal(o.shape, want[l], sizeof want[l]);
        assert_int_equal(o.n, 0);
        assert_int_equal(rb.n_out, 0);
        s = o;
    }
    /* a conv over an empty rulebook writes nothing */
    float out[GUARD];
    for (int i = 0; i < GUARD; i++) out[i] = GUARD_VAL;
    float w[27 * 2 * 2] = { 0 };
    pvs_conv_desc d = { 2, 2, w, NULL, true };
    rb.K = 27;
    pvs_conv(pool2, &rb, &d, NULL, NULL, out, NULL);
    pvs_conv_ref(&rb, &d, NULL, NULL, out);
    for (int i = 0; i < GUARD; i++) assert_true(out[i] == GUARD_VAL);
}

static void test_rulebook_errors(void **state)
{
    (void)state;
    pvs_sites in = make_sites(8, 8, 6, 0.5, true);
    pvc_msg msg = { { 0 } };
    pvs_rulebook rb;
    geom sub = GEOMS[0], down = GEOMS[1];
    pvs_sites out;
    build_rb(&in, &sub, &out, &rb);
    int64_t pairs = rb.start[27];
    rb_free(&rb);
    void *hs = malloc(pvs_hash_scratch_bytes(in.n)), *ds = malloc(pvs_down_scratch_bytes(in.n, 27));
    char want[64];

    rb_alloc(&rb, pairs - 1);   /* one pair short */
    assert_int_equal(pvs_rulebook_subm(pool2, &in, sub.k, &rb, hs, &msg), PV_EINPUT);
    snprintf(want, sizeof want, "%lld pairs", (long long)pairs);
    assert_non_null(strstr(msg.text, want));
    snprintf(want, sizeof want, "capacity of %lld", (long long)pairs - 1);
    assert_non_null(strstr(msg.text, want));
    rb_free(&rb);

    build_rb(&in, &down, &out, &rb);
    int64_t dpairs = rb.start[27], nout = out.n;
    free(out.xyz);
    rb_free(&rb);
    rb_alloc(&rb, dpairs - 1);
    out.cap = nout;
    out.xyz = malloc((size_t)nout * 3 * sizeof(int32_t));
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    snprintf(want, sizeof want, "%lld pairs", (long long)dpairs);
    assert_non_null(strstr(msg.text, want));
    rb_free(&rb);
    rb_alloc(&rb, dpairs);
    out.cap = nout - 1;   /* out sites one short */
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    snprintf(want, sizeof want, "%lld out sites", (long long)nout);
    assert_non_null(strstr(msg.text, want));
    snprintf(want, sizeof want, "capacity of %lld", (long long)nout - 1);
    assert_non_null(strstr(msg.text, want));
    out.cap = nout;

    /* bad inputs: site outside, duplicate, even SubM kernel, too many offsets, bad stride/pad */
    int32_t keep[3];
    memcpy(keep, in.xyz + 3, sizeof keep);
    in.xyz[3 + 2] = 6;
    assert_int_equal(pvs_rulebook_subm(pool2, &in, sub.k, &rb, hs, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "site 1 = (") );
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    memcpy(in.xyz + 3, in.xyz + 9, sizeof keep);   /* site 1 = site 3 */
    assert_int_equal(pvs_rulebook_subm(pool2, &in, sub.k, &rb, hs, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "sites 1 and 3"));
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "sites 1 and 3"));
    memcpy(in.xyz + 3, keep, sizeof keep);
    const int32_t even[3] = { 3, 2, 3 }, big[3] = { 3, 3, 4 }, zero[3] = { 0, 1, 1 };
    assert_int_equal(pvs_rulebook_subm(pool2, &in, even, &rb, hs, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "ksize.y"));
    assert_int_equal(pvs_rulebook_down(pool2, &in, big, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    assert_int_equal(pvs_rulebook_down(pool2, &in, zero, down.s, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    const int32_t s0[3] = { 2, 0, 2 }, pneg[3] = { 1, -1, 1 }, k9[3] = { 9, 1, 1 }, p0[3] = { 0, 0, 0 };
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, s0, down.p, &out, &rb, ds, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "stride.y"));
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, pneg, &out, &rb, ds, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "pad.y"));
    assert_int_equal(pvs_rulebook_down(pool2, &in, k9, down.s, p0, &out, &rb, ds, &msg), PV_EINPUT);   /* 8 < 9 */
    assert_non_null(strstr(msg.text, "no output"));
    /* still fine afterwards */
    assert_int_equal(pvs_rulebook_down(pool2, &in, down.k, down.s, down.p, &out, &rb, ds, &msg), PV_OK);
    free(out.xyz);
    rb_free(&rb);
    free(hs);
    free(ds);
    free(in.xyz);
}

/* ---- convolution ------------------------------------------------------------------------------ */

static float *rand_floats(int64_t n, float scale)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = scale * frand();
    return p;
}

typedef struct ccase { geom g; int X, Y, Z; double density; int cin, cout; bool bias, res, relu; } ccase;

static void run_conv_case(const ccase *c)
{
    pvs_sites in = make_sites(c->X, c->Y, c->Z, c->density, true), out;
    pvs_rulebook rb;
    build_rb(&in, &c->g, &out, &rb);
    const pvs_sites *os = c->g.subm ? &in : &out;
    const int K = rb.K, cin = c->cin, cout = c->cout;
    const int64_t nin = in.n, nout = rb.n_out;
    float *x = rand_floats(nin * cin, 1.0f), *w = rand_floats((int64_t)K * cin * cout, 0.5f);
    float *bias = c->bias ? rand_floats(cout, 1.0f) : NULL;
    float *res = c->res ? rand_floats(nout * cout, 1.0f) : NULL;
    pvs_conv_desc d = { cin, cout, w, bias, c->relu };

    /* dense reference on the grid */
    int32_t *m = cell_map(&in);
    double *want = calloc((size_t)(nout * cout + 1), sizeof(double)), *mag = calloc((size_t)(nout * cout + 1), sizeof(double));
    for (int64_t o = 0; o < nout; o++) {
        const int32_t *oc = os->xyz + 3 * o;
        for (int k = 0; k < K; k++) {
            int kk[3] = { k / (c->g.k[1] * c->g.k[2]), k / c->g.k[2] % c->g.k[1], k % c->g.k[2] }, ic[3];
            bool ok = true;
            for (int a = 0; a < 3; a++) {
                ic[a] = c->g.subm ? oc[a] + kk[a] - c->g.k[a] / 2 : oc[a] * c->g.s[a] - c->g.p[a] + kk[a];
                ok = ok && ic[a] >= 0 && ic[a] < in.shape[a];
            }
            int32_t i = ok ? m[((int64_t)ic[0] * in.shape[1] + ic[1]) * in.shape[2] + ic[2]] : -1;
            if (i < 0) continue;   /* inactive cell: zero in the dense grid */
            for (int ci = 0; ci < cin; ci++)
                for (int co = 0; co < cout; co++) {
                    double t = (double)x[(int64_t)i * cin + ci] * w[((int64_t)k * cin + ci) * cout + co];
                    want[o * cout + co] += t;
                    mag[o * cout + co] += fabs(t);
                }
        }
        for (int co = 0; co < cout; co++) {
            double *v = &want[o * cout + co];
            if (bias) { *v += bias[co]; mag[o * cout + co] += fabs(bias[co]); }
            if (res) { *v += res[o * cout + co]; mag[o * cout + co] += fabs(res[o * cout + co]); }
            if (c->relu && !(*v > 0.0)) *v = 0.0;
        }
    }

    /* 0 ref, 1 inline, 2 on 2 threads (fp32: direct or wide kernel where one applies), then on 2 threads with W[k] packed: 3 fp32, 4 bf16
     * through the bf16 oracle variant, 5 bf16 through the variant a model gets */
    enum { NV = 6 };
    const pvk_gemm_packed_variant *ref_bf16 = NULL;
    for (int i = 0; i < pvk_gemm_packed_nvariants; i++)
        if (!strcmp(pvk_gemm_packed_variants[i].name, "ref_bf16")) ref_bf16 = &pvk_gemm_packed_variants[i];
    assert_non_null(ref_bf16);
    pvk_gemm_packed *wk[3][27];
    memset(wk, 0, sizeof wk);
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < K; k++) {
            pvc_msg pm = { { 0 } };
            pv_status ps = pvk_gemm_packed_create(cin, cout, w + (int64_t)k * cin * cout, cout, false, 1.0f,
                                                  p == 0 ? PVC_PREC_FP32 : PVC_PREC_BF16, p == 1 ? ref_bf16 : NULL,
                                                  &wk[p][k], &pm);
            if (ps != PV_OK) fail_msg("packing W[%d]: %s", k, pm.text);
        }
    float *got[NV];
    for (int v = 0; v < NV; v++) {
        got[v] = malloc((size_t)(nout * cout + GUARD) * sizeof(float));
        for (int64_t i = 0; i < nout * cout + GUARD; i++) got[v][i] = GUARD_VAL;
    }
    pvs_conv_ref(&rb, &d, x, res, got[0]);
    for (int v = 1; v < NV; v++) {
        pvc_pool *pool = v == 1 ? NULL : pool2;
        pvs_conv_desc dv = d;
        if (v >= 3) dv.wk = wk[v - 3];
        size_t wsb = pvs_conv_ws_bytes(&rb, &dv, pvc_pool_threads(pool));
        unsigned char *ws = malloc(wsb + 4 + GUARD);
        memset(ws + 4 + wsb, 0xA5, GUARD);
        pvs_conv(pool, &rb, &dv, x, res, got[v], ws + 4);   /* deliberately misaligned */
        for (int i = 0; i < GUARD; i++) assert_int_equal(ws[4 + wsb + i], 0xA5);
        free(ws);
    }
    const bool bf16_kernel = pvk_gemm_packed_precision(wk[2][0]) == PVC_PREC_BF16;
    for (int v = 0; v < NV; v++) {
        for (int64_t i = 0; i < nout * cout; i++) {
            /* bf16: both factors rounded to 8 bits, |error| <= 2^-8 (1 + 2^-8) of each product */
            double err = fabs((double)got[v][i] - want[i]), tol = (v >= 4 ? 8e-3 : 1e-4) * mag[i] + 1e-6;
            if (!(err <= tol))
                fail_msg("conv %s %dx%dx%d s%d cin %d cout %d: variant %d row %lld ch %lld: %g vs %g",
                         c->g.subm ? "subm" : "down", c->g.k[0], c->g.k[1], c->g.k[2], c->g.s[0], cin, cout, v,
                         (long long)(i / cout), (long long)(i % cout), (double)got[v][i], want[i]);
            /* the bf16 kernel against its oracle: the same roundings, sums in fp32 vs float64 */
            if (v == 5 && bf16_kernel && !(fabs((double)got[5][i] - got[4][i]) <= 1e-5 * mag[i] + 1e-6))
                fail_msg("conv cin %d cout %d: bf16 kernel %g vs its oracle %g at %lld", cin, cout, (double)got[5][i],
                         (double)got[4][i], (long long)i);
        }
        for (int i = 0; i < GUARD; i++) assert_true(got[v][nout * cout + i] == GUARD_VAL);
    }
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < K; k++) pvk_gemm_packed_free(wk[p][k]);
    /* the block split does not depend on the pool: identical bits inline and on 2 threads */
    if (nout > 0) assert_memory_equal(got[1], got[2], (size_t)(nout * cout) * sizeof(float));
    for (int v = 0; v < NV; v++) free(got[v]);
    free(m);
    free(want);
    free(mag);
    free(x);
    free(w);
    free(bias);
    free(res);
    rb_free(&rb);
    if (!c->g.subm) free(out.xyz);
    free(in.xyz);
}

/* One pairs kernel against the plain one (kernels/spconv_pairs.h) on a run of rows - 3 pairs with
 * distinct, shuffled outputs inside a block that starts at row a; guard floats after the block.
 * Tolerance 1e-5 x sum |terms| + 1e-6 (the summation order differs). */
static void pairs_case(const pvk_spconv_pairs_variant *var, int cin, int cout, int64_t rows)
{
    const int64_t nx = 97, a = 5;
    const int64_t n = rows - 3;   /* some rows get no pair */
    float *x = rand_floats(nx * cin, 1.0f), *w = rand_floats((int64_t)cin * cout, 0.5f);
    int32_t *ii = malloc((size_t)n * sizeof(int32_t)), *oi = malloc((size_t)rows * sizeof(int32_t));
    for (int64_t r = 0; r < rows; r++) oi[r] = (int32_t)(a + r);
    for (int64_t r = rows - 1; r > 0; r--) {
        int64_t t = (int64_t)(urand() % (uint32_t)(r + 1));
        int32_t tmp = oi[r]; oi[r] = oi[t]; oi[t] = tmp;
    }
    for (int64_t p = 0; p < n; p++) ii[p] = (int32_t)(urand() % (uint32_t)nx);
    float *init = rand_floats(rows * cout, 1.0f), *got = malloc((size_t)(rows * cout + GUARD) * sizeof(float));
    float *want = malloc((size_t)(rows * cout) * sizeof(float));
    memcpy(got, init, (size_t)(rows * cout) * sizeof(float));
    memcpy(want, init, (size_t)(rows * cout) * sizeof(float));
    for (int i = 0; i < GUARD; i++) got[rows * cout + i] = GUARD_VAL;
    pvk_spconv_pairs_ref(n, ii, oi, (int32_t)a, x, cin, w, cout, want);
    var->fn(n, ii, oi, (int32_t)a, x, cin, w, cout, got);
    for (int64_t p = 0; p < n; p++)
        for (int co = 0; co < cout; co++) {
            int64_t r = oi[p] - a;
            double mag = fabs(init[r * cout + co]) + 1e-6;
            for (int ci = 0; ci < cin; ci++) mag += fabs((double)x[(int64_t)ii[p] * cin + ci] * w[ci * cout + co]);
            double err = fabs((double)got[r * cout + co] - want[r * cout + co]);
            if (!(err <= 1e-5 * mag))
                fail_msg("spconv pairs %s cin %d cout %d pair %lld ch %d: %g vs %g", var->name, cin, cout,
                         (long long)p, co, (double)got[r * cout + co], (double)want[r * cout + co]);
        }
    for (int64_t r = n; r < rows; r++)   /* rows no pair reached are untouched */
        assert_memory_equal(got + (oi[r] - a) * cout, init + (oi[r] - a) * cout, (size_t)cout * sizeof(float));
    for (int i = 0; i < GUARD; i++) assert_true(got[rows * cout + i] == GUARD_VAL);
    free(x); free(w); free(ii); free(oi); free(init); free(got); free(want);
}

/* Every direct-kernel variant this CPU runs against the plain one: odd input channel counts
 * (chunk tails), cout 16/32/48/64, runs of 58 and 197 pairs. */
static void test_spconv_pairs_variants(void **state)
{
    (void)state;
    const int cins[] = { 1, 3, 4, 5, 8, 16, 17, 31, 32, 33 }, couts[] = { 16, 32, 48, 64 };
    for (int v = 1; v < pvk_spconv_pairs_nvariants; v++) {
        const pvk_spconv_pairs_variant *var = &pvk_spconv_pairs_variants[v];
        if (var->isa > pvc_isa_selected()) { printf("skip spconv pairs variant %s (not this CPU)\n", var->name); continue; }
        for (size_t ic = 0; ic < PVC_COUNTOF(cins); ic++)
            for (size_t oc = 0; oc < PVC_COUNTOF(couts); oc++)
                if (couts[oc] % var->cout_mult == 0) {
                    pairs_case(var, cins[ic], couts[oc], 61);
                    pairs_case(var, cins[ic], couts[oc], 200);   /* several groups of pairs */
                }
    }
}

/* Every wide-kernel variant this CPU runs against the plain one: cout 32 to 192 (column
 * slices of 64 or 32), cin from 1 to 130, runs of 1..64 pairs (every tile tail, runs shorter than
 * the prefetch distance). */
static void test_spconv_wide_variants(void **state)
{
    (void)state;
    const int cins[] = { 1, 3, 16, 17, 32, 64, 128, 130 }, couts[] = { 32, 64, 96, 128, 192 };
    const int64_t rows[] = { 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 21, 30, 67 };
    for (int v = 1; v < pvk_spconv_wide_nvariants; v++) {
        const pvk_spconv_pairs_variant *var = &pvk_spconv_wide_variants[v];
        if (var->isa > pvc_isa_selected()) { printf("skip spconv wide variant %s (not this CPU)\n", var->name); continue; }
        for (size_t ic = 0; ic < PVC_COUNTOF(cins); ic++)
            for (size_t oc = 0; oc < PVC_COUNTOF(couts); oc++)
                for (size_t r = 0; r < PVC_COUNTOF(rows); r++)
                    if (couts[oc] % var->cout_mult == 0) pairs_case(var, cins[ic], couts[oc], rows[r]);
    }
}

static void test_conv_dense_equivalence(void **state)
{
    (void)state;
    const geom SUB = GEOMS[0], S2 = GEOMS[1], S2Z = GEOMS[2], OUT = GEOMS[3];
    const ccase cases[] = {
        { SUB, 12, 10, 8, 0.35, 3, 5, false, false, false },
        { SUB, 12, 10, 8, 0.35, 5, 17, true, true, true },
        { SUB, 16, 14, 6, 0.25, 16, 16, true, true, true },      /* SBB second conv */
        { SUB, 9, 11, 7, 0.6, 17, 3, true, false, true },
        { SUB, 10, 10, 5, 0.3, 4, 16, false, false, true },      /* conv_input */
        { SUB, 8, 8, 6, 0.4, 32, 64, true, true, false },
        { S2, 13, 11, 9, 0.3, 16, 32, true, false, true },       /* spconv1 */
        { S2, 12, 10, 8, 0.5, 5, 3, false, true, false },
        { S2Z, 11, 9, 5, 0.4, 7, 13, true, false, true },        /* spconv3 */
        { OUT, 9, 9, 5, 0.5, 17, 9, true, false, true },         /* conv_out */
        { GEOMS[7], 8, 7, 6, 0.2, 6, 6, true, true, true },     /* regular stride 1 */
        { GEOMS[11], 11, 6, 10, 0.3, 3, 4, false, false, false },
        { GEOMS[12], 9, 8, 7, 0.5, 9, 11, true, true, true },   /* 1x1x1 on shuffled sites: gathered, no scatter */
        { SUB, 3, 3, 3, 1.0, 2, 2, false, false, false },        /* tiny, every cell active */
        { SUB, 24, 24, 8, 0.6, 48, 40, true, true, true },       /* ~2.8k sites: long blocks, GEMM tiles */
        { S2, 24, 24, 8, 0.3, 33, 64, true, false, true },
        { SUB, 14, 12, 6, 0.3, 64, 64, true, true, true },       /* wide: the wide kernel; packed: gathered GEMMs */
        { S2, 13, 11, 9, 0.3, 64, 128, true, false, true },
        { SUB, 20, 18, 8, 0.3, 128, 128, true, true, true },     /* ~860 sites: several blocks */
        { SUB, 9, 8, 7, 0.5, 33, 64, false, false, false },      /* wide kernel, odd cin */
    };
    for (size_t i = 0; i < PVC_COUNTOF(cases); i++) run_conv_case(&cases[i]);
}

static int setup(void **state)
{
    (void)state;
    return pvc_pool_create(2, &pool2) == PV_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pvc_pool_free(pool2);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spconv_pairs_variants),
        cmocka_unit_test(test_spconv_wide_variants),
        cmocka_unit_test(test_vox_edges),
        cmocka_unit_test(test_vox_float32_rule),
        cmocka_unit_test(test_vox_order_and_full),
        cmocka_unit_test(test_vox_cap),
        cmocka_unit_test(test_vox_errors),
        cmocka_unit_test(test_vox_random),
        cmocka_unit_test(test_rulebooks_brute),
        cmocka_unit_test(test_subm_merge_vs_hash),
        cmocka_unit_test(test_out_dims_and_empty),
        cmocka_unit_test(test_rulebook_errors),
        cmocka_unit_test(test_conv_dense_equivalence),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
