/* BEVFusion-L stage split on real frames (not a test): median ms per stage over N runs of each
 * frame, with the voxel and per-level site counts.
 *
 *   pv_bevfusion_bench [--iters N] [--threads T] FILE[:FORMAT[:TRANSFORM]]...
 *
 * TRANSFORM: "kitti" (z + 1.73 m: the HDL-64's height), "nuscenes" (lidar2ego of the nuScenes
 * demo sample: rotation about z and (0.944, 0, 1.840) m) or "none". */
#include "io/points.h"
#include "models/bevfusion/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* nuScenes LIDAR_TOP -> ego of the demo sample (from its info file, see ../shared/data/README.md) */
static const double T_NUSC[16] = { 0.0020332718268036842, 0.9997040629386902, 0.024241721257567406, 0.9437130093574524,
                                   -0.9999805092811584, 0.0021756570786237717, -0.00584863917902112, 0.0,
                                   -0.005899650044739246, -0.02422935888171196, 0.9996890425682068, 1.8402299880981445,
                                   0, 0, 0, 1 };
static const double T_KITTI[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1.73, 0, 0, 0, 1 };

int main(int argc, char **argv)
{
    int iters = 10, threads = 0;
    const char *files[32];
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (nf < 32) files[nf++] = argv[i];
    }
    if (!nf || iters < 1) { fprintf(stderr, "usage: pv_bevfusion_bench [--iters N] [--threads T] FILE[:FORMAT[:TRANSFORM]]...\n"); return 2; }
    pvm_bevfusion_options o = { .threads = threads };
    pvm_bevfusion *m;
    pvc_msg msg = { { 0 } };
    double t0 = pvc_now_ms();
    if (pvm_bevfusion_open(&o, &m, &msg) != PV_OK) { fprintf(stderr, "open: %s\n", msg.text); return 1; }
    printf("open (load + plan + warm-up) %.0f ms, weights %s, isa %s, threads %d\n", pvc_now_ms() - t0,
           pvm_bevfusion_weights_kind(m), pv_isa(), pvc_default_threads());
    if (*pvm_bevfusion_precision_note(m)) printf("note: %s\n", pvm_bevfusion_precision_note(m));
    printf("%-44s %7s %7s %-36s %7s %7s %7s %9s %7s %7s %7s %8s\n", "frame", "points", "voxels", "sites L0..L3, out", "pre", "voxel",
           "sparse", "(rulebk)", "dense", "post", "total", "first");
    for (int f = 0; f < nf; f++) {
        char spec[1024], *fmt = NULL, *tf = NULL;
        snprintf(spec, sizeof spec, "%s", files[f]);
        if ((fmt = strchr(spec, ':'))) { *fmt++ = 0; if ((tf = strchr(fmt, ':'))) *tf++ = 0; }
        pvio_cloud c = { 0 };
        if (pvio_cloud_read_file(spec, fmt && *fmt ? fmt : NULL, &c, &msg) != PV_OK) { fprintf(stderr, "%s\n", msg.text); return 1; }
        const double *T = tf && !strcmp(tf, "kitti") ? T_KITTI : tf && !strcmp(tf, "nuscenes") ? T_NUSC : NULL;
        if (T) pvm_bevfusion_transform_f32(c.data, c.n, c.ncols, T);
        int tl = pvio_cloud_col(&c, "time_lag");
        pvm_bevfusion_frame_in in = { .pts = c.data, .n = c.n, .stride = c.ncols, .time_lag_col = tl };
        double *st[7];
        for (int k = 0; k < 7; k++) st[k] = calloc((size_t)iters, sizeof(double));
        pvm_bevfusion_result r;
        double first = 0;
        for (int it = 0; it <= iters; it++) {
            if (pvm_bevfusion_run(m, &in, NULL, &r, &msg) != PV_OK) { fprintf(stderr, "%s: %s\n", spec, msg.text); return 1; }
            if (it == 0) first = r.t_total;
            else {
                double v[7] = { r.t_pre, r.t_voxelize, r.t_sparse, r.t_dense, r.t_post, r.t_total, r.enc.rulebook_ms };
                for (int k = 0; k < 7; k++) st[k][it - 1] = v[k];
            }
            if (it < iters) pvm_bevfusion_result_free(&r);
        }
        char sites[128];
        int o2 = 0;
        for (int l = 0; l < r.enc.nlevels; l++) o2 += snprintf(sites + o2, sizeof sites - (size_t)o2, "%s%lld", l ? "," : "", (long long)r.enc.active[l]);
        const char *base = strrchr(spec, '/');
        printf("%-44s %7lld %7lld %-36s %7.1f %7.1f %7.1f %9.1f %7.1f %7.1f %7.1f %8.1f\n", base ? base + 1 : spec, (long long)r.num_points,
               (long long)r.num_voxels, sites, median(st[0], iters), median(st[1], iters), median(st[2], iters), median(st[6], iters),
               median(st[3], iters), median(st[4], iters), median(st[5], iters), first);
        pvm_bevfusion_result_free(&r);
        for (int k = 0; k < 7; k++) free(st[k]);
        pvio_cloud_free(&c);
    }
    pvm_bevfusion_close(m);
    return 0;
}
