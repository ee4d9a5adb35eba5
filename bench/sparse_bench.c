/* pv_sparse_bench: the sparse encoder's pieces on lidar-like site sets in BEVFusion's grid
 * (1440 x 1440 x 41, 0.17 x 0.17 x 0.2 m): voxelizer, rulebooks, and pvs_conv on every layer
 * shape of the encoder, at 1 and 2 threads, in GFLOP/s (2 x pairs x cin x cout per second).
 *
 *   pv_sparse_bench [-r runs] [-T 1|2] [-n sites] [-l layer] [-q] [-b file.bin -c floats_per_point]
 *     -r  timed runs per point (default 5): the median is reported and the best run beside it
 *     -T  only 1 or only 2 threads (default both; PERCEIVE_THREADS is not read here)
 *     -n  only this L0 site count (default 12000, 55000 and 120000)
 *     -l  only the layers whose name contains this text (e.g. "16->16", "subm", "L3")
 *     -q  skip the voxelizer and rulebook timings
 *     -b  also run the levels of a real cloud (KITTI .bin: -c 4, nuScenes .pcd.bin: -c 5)
 *     -p  bf16: the layers that gather run their GEMMs on bf16-packed W[k] (as the bundle at bf16)
 *
 * The synthetic scene is a small ray-casting simulation of a 32-beam spinning lidar (ground,
 * 60 car-sized and 12 building-sized boxes; see scene_init) accumulated over sweeps with ego
 * motion, as a multi-sweep nuScenes cloud is; the L0 sites are the first n distinct voxels
 * its scan meets, in scan order (the voxelizer's order). On the real nuScenes 10-sweep frame
 * (spec section 5) L0 has 63.9k sites and 7.3 SubM pairs per site; the synthetic 55k set has
 * a similar structure. Each level's site set follows from the one above by the real strided
 * rulebook.
 * The encoder estimate at the end sums each layer's median time times how often the encoder
 * runs that shape (conv_input 1, SubM 4 per level, each down conv 1) plus the rulebooks. */
#include "kernels/gemm_packed.h"
#include "kernels/kernels.h"
#include "sparse/sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PI 3.14159265358979323846

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand01(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double urange(double a, double b) { return a + (b - a) * urand01(); }

/* Process CPU time: what the threads get while they hold a core, whatever the neighbours on a
 * shared box do (the wall clock there measures the neighbours as much as the code). */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void *xmalloc(size_t n)
{
    void *p = pvc_malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", n); exit(1); }
    return p;
}

/* ---- scene ---------------------------------------------------------------------------------- */

/* A spinning lidar in a static scene: ground at z = -1.8 m (gentle slope and waves), 60 car-sized
 * and 12 building-sized boxes; 32 beams from -30 to +10 degrees, 0.2 degree azimuth steps, 100 m
 * range, 2 cm range noise. Sweep s is taken from 0.6 m further back along x (ego motion), as an
 * accumulated multi-sweep cloud in the current frame. */
typedef struct box { double x0, y0, z0, x1, y1, z1; } box;
enum { NBOX = 72, BEAMS = 32, AZ_STEPS = 1800 };
static box boxes[NBOX];

static void scene_init(void)
{
    for (int i = 0; i < NBOX; i++) {
        double r = i < 60 ? urange(6, 60) : urange(25, 90), a = urange(0, 2 * PI);
        double hx = i < 60 ? 2.25 : urange(5, 15), hy = i < 60 ? 0.95 : urange(1, 3), h = i < 60 ? 1.6 : urange(4, 6.5);
        if (urand01() < 0.5) { double t = hx; hx = hy; hy = t; }
        double cx = r * cos(a), cy = r * sin(a);
        boxes[i] = (box){ cx - hx, cy - hy, -1.8, cx + hx, cy + hy, -1.8 + h };
    }
}

static double ground_z(double x, double y) { return -1.8 + 0.004 * x + 0.05 * sin(0.3 * y); }

/* Distance along the unit ray (o, d) to the first surface within 100 m, or -1. */
static double cast(const double o[3], const double d[3])
{
    double best = 100.0;
    if (d[2] < -1e-6) {   /* ground: solve on the plane, then correct once for the waves */
        double t = (-1.8 - o[2]) / d[2];
        t = (ground_z(o[0] + t * d[0], o[1] + t * d[1]) - o[2]) / d[2];
        if (t > 0 && t < best) best = t;
    }
    for (int i = 0; i < NBOX; i++) {   /* slab test */
        const double lo[3] = { boxes[i].x0, boxes[i].y0, boxes[i].z0 }, hi[3] = { boxes[i].x1, boxes[i].y1, boxes[i].z1 };
        double t0 = 0, t1 = best;
        for (int a = 0; a < 3 && t0 <= t1; a++) {
            if (fabs(d[a]) < 1e-12) { if (o[a] < lo[a] || o[a] > hi[a]) t0 = t1 + 1; continue; }
            double ta = (lo[a] - o[a]) / d[a], tb = (hi[a] - o[a]) / d[a];
            if (ta > tb) { double t = ta; ta = tb; tb = t; }
            t0 = ta > t0 ? ta : t0;
            t1 = tb < t1 ? tb : t1;
        }
        if (t0 <= t1 && t0 > 0) best = t0;
    }
    return best < 100.0 ? best : -1;
}

typedef struct lidar { int64_t ray; } lidar;   /* rays cast so far: sweep, azimuth, beam */

/* The next return of the scan (x, y, z, time lag); false never happens in practice (the ground
 * is always hit somewhere within a sweep). */
static void lidar_next(lidar *l, float *p)
{
    for (;;) {
        int64_t r = l->ray++;
        int beam = (int)(r % BEAMS), az = (int)(r / BEAMS % AZ_STEPS);
        int64_t sweep = r / ((int64_t)BEAMS * AZ_STEPS);
        double el = (-30.0 + 40.0 * beam / (BEAMS - 1)) * PI / 180, a = az * 0.2 * PI / 180;
        double o[3] = { -0.6 * (double)sweep, 0.05 * (double)(sweep % 3), 0 };
        double d[3] = { cos(el) * cos(a), cos(el) * sin(a), sin(el) };
        double t = cast(o, d);
        if (t < 0) continue;
        t += urange(-0.02, 0.02);
        p[0] = (float)(o[0] + t * d[0]);
        p[1] = (float)(o[1] + t * d[1]);
        p[2] = (float)(o[2] + t * d[2]);
        p[3] = (float)(0.05 * (double)sweep);
        return;
    }
}

static const pvs_voxel_cfg VCFG = { { -122.4f, -122.4f, -3.0f }, { 0.17f, 0.17f, 0.2f }, { 1440, 1440, 40 }, 10, 256000, 4 };

/* The first n distinct voxels the scan meets, in that order (the voxelizer's order), as
 * (x, y, z) sites; *sweeps says how many sweeps it took. */
static pvs_sites make_l0(int64_t n, double *sweeps)
{
    size_t bytes = (size_t)1440 * 1440 * 41 / 8 + 1;
    uint8_t *seen = xmalloc(bytes);
    memset(seen, 0, bytes);
    pvs_sites out = { { 1440, 1440, 41 }, 0, n, xmalloc((size_t)n * 3 * sizeof(int32_t)) };
    lidar l = { 0 };
    while (out.n < n) {
        float p[4];
        lidar_next(&l, p);
        int c[3];
        bool in = true;
        for (int d = 0; d < 3; d++) {
            float f = (p[d] - VCFG.range_min[d]) / VCFG.voxel_size[d];
            in = in && f >= 0.0f && f < (float)VCFG.grid[d];
            c[d] = in ? (int)f : 0;
        }
        if (!in) continue;
        int64_t key = ((int64_t)c[0] * 1440 + c[1]) * 41 + c[2];
        if (seen[key >> 3] & (1u << (key & 7))) continue;
        seen[key >> 3] |= (uint8_t)(1u << (key & 7));
        memcpy(out.xyz + 3 * out.n++, c, 3 * sizeof(int32_t));
    }
    *sweeps = (double)l.ray / (BEAMS * AZ_STEPS);
    pvc_free(seen);
    return out;
}

/* ---- levels --------------------------------------------------------------------------------- */

typedef struct level {
    pvs_sites    sites;
    pvs_rulebook subm;          /* k3 SubM at this level */
    pvs_rulebook down;          /* strided conv from this level to the next */
    double       subm_ms, down_ms;         /* best CPU time of the builds, inline (1 thread) */
    double       subm2_ms, down2_ms;       /* best wall time of the builds on 2 threads */
} level;

static void rb_alloc(pvs_rulebook *rb, int64_t cap)
{
    memset(rb, 0, sizeof *rb);
    rb->cap = cap;
    rb->in_idx = xmalloc((size_t)cap * sizeof(int32_t));
    rb->out_idx = xmalloc((size_t)cap * sizeof(int32_t));
}

static void rb_release(pvs_rulebook *rb)
{
    pvc_free(rb->in_idx);
    pvc_free(rb->out_idx);
}

static void check(pv_status st, const pvc_msg *m)
{
    if (st != PV_OK) { fprintf(stderr, "error: %s\n", m->text); exit(1); }
}

static const int32_t K3[3] = { 3, 3, 3 }, KOUT[3] = { 1, 1, 3 };
static const int32_t S2[3] = { 2, 2, 2 }, SOUT[3] = { 1, 1, 2 };
static const int32_t P1[3] = { 1, 1, 1 }, P110[3] = { 1, 1, 0 }, P0[3] = { 0, 0, 0 };

/* The four levels from L0 sites: SubM rulebook at each, strided rulebook to the next (at L3:
 * conv_out, whose output count lands in *n_out4); build times are the best of `runs`. */
static void build_levels(level lv[4], pvs_sites l0, int runs, pvc_pool *pool2, int64_t *n_out4)
{
    pvc_msg msg = { { 0 } };
    memset(lv, 0, 4 * sizeof *lv);
    lv[0].sites = l0;
    pvs_sites last = { { 0 }, 0, 0, NULL };
    for (int l = 0; l < 4; l++) {
        level *L = &lv[l];
        int64_t n = L->sites.n;
        pvs_sites *next = l < 3 ? &lv[l + 1].sites : &last;
        rb_alloc(&L->subm, PVC_MAX(n, 1) * 27);
        rb_alloc(&L->down, PVC_MAX(n, 1) * (l < 3 ? 27 : 3));
        next->cap = PVC_MAX(n, 1) * (l < 3 ? 8 : 2);   /* outputs one input reaches at most */
        next->xyz = xmalloc((size_t)next->cap * 3 * sizeof(int32_t));
        L->subm_ms = L->down_ms = L->subm2_ms = L->down2_ms = 1e30;
        void *scratch = xmalloc(PVC_MAX(pvs_hash_scratch_bytes(n), pvs_down_scratch_bytes(n, 27)));
        for (int r = 0; r < runs; r++) {
            double t0 = cpu_ms();
            check(pvs_rulebook_subm(NULL, &L->sites, K3, &L->subm, scratch, &msg), &msg);
            double t1 = cpu_ms();
            if (l < 3)
                check(pvs_rulebook_down(NULL, &L->sites, K3, S2, l < 2 ? P1 : P110, next, &L->down, scratch, &msg), &msg);
            else
                check(pvs_rulebook_down(NULL, &L->sites, KOUT, SOUT, P0, next, &L->down, scratch, &msg), &msg);
            double t2 = cpu_ms();
            L->subm_ms = PVC_MIN(L->subm_ms, t1 - t0);
            L->down_ms = PVC_MIN(L->down_ms, t2 - t1);
        }
        /* the same builds on the 2-thread pool (wall clock); after the inline ones, which would
         * otherwise find their data in the other core's cache */
        for (int r = 0; r < runs; r++) {
            double t0 = pvc_now_ms();
            check(pvs_rulebook_subm(pool2, &L->sites, K3, &L->subm, scratch, &msg), &msg);
            double t1 = pvc_now_ms();
            if (l < 3)
                check(pvs_rulebook_down(pool2, &L->sites, K3, S2, l < 2 ? P1 : P110, next, &L->down, scratch, &msg), &msg);
            else
                check(pvs_rulebook_down(pool2, &L->sites, KOUT, SOUT, P0, next, &L->down, scratch, &msg), &msg);
            double t2 = pvc_now_ms();
            L->subm2_ms = PVC_MIN(L->subm2_ms, t1 - t0);
            L->down2_ms = PVC_MIN(L->down2_ms, t2 - t1);
        }
        pvc_free(scratch);
    }
    *n_out4 = last.n;
    pvc_free(last.xyz);
}

static void free_levels(level lv[4])
{
    for (int l = 0; l < 4; l++) {
        rb_release(&lv[l].subm);
        rb_release(&lv[l].down);
        pvc_free(lv[l].sites.xyz);
    }
}

/* ---- conv timing ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *rand_buf(int64_t n, float scale)
{
    float *p = xmalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = scale * (float)(urand01() * 2 - 1);
    return p;
}

typedef struct layer { const char *name; int lvl; bool down; int cin, cout, times; } layer;

static const layer LAYERS[] = {
    { "conv_input  4->16  subm", 0, false, 4, 16, 1 },
    { "L0  16->16  subm     ", 0, false, 16, 16, 4 },
    { "L0  16->32  s2 p1    ", 0, true, 16, 32, 1 },
    { "L1  32->32  subm     ", 1, false, 32, 32, 4 },
    { "L1  32->64  s2 p1    ", 1, true, 32, 64, 1 },
    { "L2  64->64  subm     ", 2, false, 64, 64, 4 },
    { "L2  64->128 s2 p110  ", 2, true, 64, 128, 1 },
    { "L3 128->128 subm     ", 3, false, 128, 128, 4 },
    { "L3 128->128 k113 s112", 3, true, 128, 128, 1 },
};

static bool bf16;   /* -p bf16 */

/* pvs_conv with bias + ReLU (+ residual on SubM, as the SBB's second): median and best wall
 * ms, median CPU ms */
static void time_conv(pvc_pool *pool, const pvs_rulebook *rb, int cin, int cout, bool residual, int runs,
                      double *median, double *best, double *cpu)
{
    float *in = rand_buf(PVC_MAX(rb->n_in, 1) * cin, 1.0f);
    float *w = rand_buf((int64_t)rb->K * cin * cout, 0.1f);
    float *bias = rand_buf(cout, 0.1f);
    float *res = residual ? rand_buf(rb->n_out * cout, 1.0f) : NULL;
    float *out = xmalloc((size_t)PVC_MAX(rb->n_out, 1) * cout * sizeof(float));
    pvs_conv_desc d = { cin, cout, w, bias, true, NULL };
    pvk_gemm_packed *wk[27] = { NULL };
    if (bf16 && pvs_conv_gathers(&d)) {
        pvc_msg msg = { { 0 } };
        for (int k = 0; k < rb->K; k++)
            check(pvk_gemm_packed_create(cin, cout, w + (int64_t)k * cin * cout, cout, false, 1.0f, PVC_PREC_BF16, NULL,
                                         &wk[k], &msg), &msg);
        d.wk = wk;
    }
    void *ws = xmalloc(pvs_conv_ws_bytes(rb, &d, pvc_pool_threads(pool)));
    double ms[64], cms[64];
    pvs_conv(pool, rb, &d, in, res, out, ws);   /* warm-up */
    for (int r = 0; r < runs; r++) {
        double t0 = pvc_now_ms(), c0 = cpu_ms();
        pvs_conv(pool, rb, &d, in, res, out, ws);
        ms[r] = pvc_now_ms() - t0;
        cms[r] = cpu_ms() - c0;
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    qsort(cms, (size_t)runs, sizeof cms[0], cmp_double);
    *median = ms[runs / 2];
    *best = ms[0];
    *cpu = cms[runs / 2];
    pvc_free(in);
    pvc_free(w);
    pvc_free(bias);
    pvc_free(res);
    pvc_free(out);
    pvc_free(ws);
    for (int k = 0; k < 27; k++) pvk_gemm_packed_free(wk[k]);
}

static const char *only_layer;

static void run_levels(const char *title, level lv[4], int64_t n_out4, int runs, int tlo, int thi, pvc_pool *pool2,
                       bool quiet)
{
    printf("\n== %s\nsites: L0 %lld, L1 %lld, L2 %lld, L3 %lld, conv_out %lld\n", title, (long long)lv[0].sites.n,
           (long long)lv[1].sites.n, (long long)lv[2].sites.n, (long long)lv[3].sites.n, (long long)n_out4);
    double rb_ms = 0, rb2_ms = 0;
    for (int l = 0; l < 4; l++) {
        rb_ms += lv[l].subm_ms + lv[l].down_ms;
        rb2_ms += lv[l].subm2_ms + lv[l].down2_ms;
    }
    if (!quiet) {
        for (int l = 0; l < 4; l++)
            printf("rulebooks L%d: subm %lld pairs (%.1f per site) %.2f ms (2 threads %.2f ms); %s %lld pairs %.2f ms "
                   "(2 threads %.2f ms)\n", l,
                   (long long)lv[l].subm.start[27], (double)lv[l].subm.start[27] / (double)PVC_MAX(lv[l].sites.n, 1),
                   lv[l].subm_ms, lv[l].subm2_ms, l < 3 ? "down" : "conv_out", (long long)lv[l].down.start[lv[l].down.K],
                   lv[l].down_ms, lv[l].down2_ms);
        printf("all rulebooks: %.2f ms CPU time (1 thread), %.2f ms wall on 2 threads\n", rb_ms, rb2_ms);
    }
    printf("GFLOP/s by the wall clock (median run, best run) and per busy core (median CPU time)\n");
    printf("%-24s %8s %8s %9s %3s %9s %8s %8s %9s %8s\n", "layer", "n_in", "n_out", "pairs", "thr", "median", "GFLOP/s",
           "best", "cpu ms", "percore");
    double total[3] = { 0, rb_ms, rb2_ms }, total_cpu[3] = { 0, rb_ms, rb_ms };
    for (size_t i = 0; i < PVC_COUNTOF(LAYERS); i++) {
        const layer *L = &LAYERS[i];
        if (only_layer && !strstr(L->name, only_layer)) continue;
        const pvs_rulebook *rb = L->down ? &lv[L->lvl].down : &lv[L->lvl].subm;
        int64_t pairs = rb->start[rb->K];
        for (int t = tlo; t <= thi; t++) {
            double med, best, cpu;
            time_conv(t == 1 ? NULL : pool2, rb, L->cin, L->cout, !L->down && L->cin == L->cout, runs, &med, &best,
                      &cpu);
            double flop = 2.0 * (double)pairs * L->cin * L->cout;
            printf("%-24s %8lld %8lld %9lld %3d %7.2fms %8.1f %8.1f %7.2fms %8.1f\n", L->name, (long long)rb->n_in,
                   (long long)rb->n_out, (long long)pairs, t, med, flop / (med * 1e6), flop / (best * 1e6), cpu,
                   flop / (cpu * 1e6));
            fflush(stdout);
            total[t] += L->times * med;
            total_cpu[t] += L->times * cpu;
        }
    }
    for (int t = tlo; t <= thi; t++)
        printf("encoder estimate, %d thread%s: %.1f ms wall, %.1f ms CPU time (21 convs + rulebooks)\n", t,
               t > 1 ? "s" : "", total[t], total_cpu[t]);
}

/* ---- voxelizer ------------------------------------------------------------------------------ */

static void bench_voxelize(const float *pts, int64_t npts, int stride, int runs, const char *what)
{
    pvs_voxels v = { 0 };
    v.cap = VCFG.max_voxels;
    v.feat = xmalloc((size_t)v.cap * 10 * 4 * sizeof(float));
    v.npoints = xmalloc((size_t)v.cap * sizeof(int32_t));
    v.coors_zyx = xmalloc((size_t)v.cap * 3 * sizeof(int32_t));
    void *scratch = xmalloc(pvs_voxelize_scratch_bytes(&VCFG, npts));
    pvc_msg msg = { { 0 } };
    double ms[64];
    for (int r = 0; r <= runs; r++) {
        double t0 = cpu_ms();
        check(pvs_voxelize(&VCFG, pts, npts, stride, &v, scratch, &msg), &msg);
        if (r > 0) ms[r - 1] = cpu_ms() - t0;
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    printf("voxelize %s: %lld points -> %lld voxels (%lld out of range, %lld over 10 per voxel): "
           "CPU time median %.2f ms, best %.2f ms\n", what, (long long)npts, (long long)v.n,
           (long long)v.points_out_of_range, (long long)v.points_voxel_full, ms[runs / 2], ms[0]);
    pvc_free(v.feat);
    pvc_free(v.npoints);
    pvc_free(v.coors_zyx);
    pvc_free(scratch);
}

/* A real cloud's L0 sites: voxelize, then (x, y, z) = the voxel's (z, y, x) reversed. */
static bool real_l0(const char *path, int cols, int runs, pvs_sites *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return false; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    int64_t npts = bytes / (long)(cols * sizeof(float));
    float *pts = xmalloc((size_t)npts * cols * sizeof(float));
    if (fread(pts, sizeof(float) * cols, (size_t)npts, f) != (size_t)npts) { fclose(f); pvc_free(pts); return false; }
    fclose(f);
    bench_voxelize(pts, npts, cols, runs, path);
    pvs_voxels v = { 0 };
    v.cap = VCFG.max_voxels;
    v.feat = xmalloc((size_t)v.cap * 10 * 4 * sizeof(float));
    v.npoints = xmalloc((size_t)v.cap * sizeof(int32_t));
    v.coors_zyx = xmalloc((size_t)v.cap * 3 * sizeof(int32_t));
    void *scratch = xmalloc(pvs_voxelize_scratch_bytes(&VCFG, npts));
    pvc_msg msg = { { 0 } };
    check(pvs_voxelize(&VCFG, pts, npts, cols, &v, scratch, &msg), &msg);
    pvs_sites s = { { 1440, 1440, 41 }, v.n, v.n, xmalloc((size_t)PVC_MAX(v.n, 1) * 3 * sizeof(int32_t)) };
    for (int64_t i = 0; i < v.n; i++)
        for (int d = 0; d < 3; d++) s.xyz[3 * i + d] = v.coors_zyx[3 * i + 2 - d];
    *out = s;
    pvc_free(v.feat);
    pvc_free(v.npoints);
    pvc_free(v.coors_zyx);
    pvc_free(scratch);
    pvc_free(pts);
    return true;
}

int main(int argc, char **argv)
{
    int runs = 5, tlo = 1, thi = 2, cols = 4;
    int64_t only_n = 0;
    bool quiet = false;
    const char *bin = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) tlo = thi = atoi(argv[++i]) == 1 ? 1 : 2;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) only_n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-q")) quiet = true;
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) bf16 = !strcmp(argv[++i], "bf16");
        else if (!strcmp(argv[i], "-l") && i + 1 < argc) only_layer = argv[++i];
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) bin = argv[++i];
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) cols = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [-r runs] [-T 1|2] [-n sites] [-l layer] [-q] [-b file.bin -c floats_per_point]\n", argv[0]);
            return 2;
        }
    }
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    if (cols < 3 || cols > 16) { fprintf(stderr, "-c takes 3..16\n"); return 2; }
    if (only_n < 0 || only_n > 256000) { fprintf(stderr, "-n takes 1..256000\n"); return 2; }
    printf("cpu: %s\nisa: %s (GEMM variant %s); median of %d runs\n", pvc_cpu_get()->brand,
           pvc_isa_name(pvc_isa_selected()), pvk_gemm_f32_selected()->name, runs);
    pvc_pool *pool2 = NULL;
    if (pvc_pool_create(2, &pool2) != PV_OK) { fprintf(stderr, "no thread pool\n"); return 1; }
    scene_init();

    if (!quiet) {
        int64_t npts = 270000;
        float *pts = xmalloc((size_t)npts * 4 * sizeof(float));
        lidar l = { 0 };
        for (int64_t i = 0; i < npts; i++) lidar_next(&l, pts + 4 * i);
        char what[64];
        snprintf(what, sizeof what, "synthetic scan (%.1f sweeps)", (double)l.ray / (BEAMS * AZ_STEPS));
        bench_voxelize(pts, npts, 4, runs, what);
        pvc_free(pts);
    }
    static const int64_t sizes[] = { 12000, 55000, 120000 };
    for (size_t i = 0; i < PVC_COUNTOF(sizes) + 1; i++) {
        int64_t n = i < PVC_COUNTOF(sizes) ? sizes[i] : only_n;
        if ((only_n && n != only_n) || n == 0 || (i == PVC_COUNTOF(sizes) && only_n == sizes[0])) continue;
        if (i == PVC_COUNTOF(sizes) && (only_n == sizes[1] || only_n == sizes[2])) continue;
        level lv[4];
        int64_t n4;
        double sweeps;
        build_levels(lv, make_l0(n, &sweeps), quiet ? 1 : runs, pool2, &n4);
        char title[96];
        snprintf(title, sizeof title, "synthetic scan, %lld L0 sites (%.1f sweeps)", (long long)n, sweeps);
        run_levels(title, lv, n4, runs, tlo, thi, pool2, quiet);
        free_levels(lv);
    }
    if (bin) {
        pvs_sites l0;
        if (real_l0(bin, cols, runs, &l0)) {
            level lv[4];
            int64_t n4;
            build_levels(lv, l0, quiet ? 1 : runs, pool2, &n4);
            run_levels(bin, lv, n4, runs, tlo, thi, pool2, quiet);
            free_levels(lv);
        }
    }
    pvc_pool_free(pool2);
    return 0;
}
