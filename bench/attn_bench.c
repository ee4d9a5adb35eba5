/* pv_attn_bench: milliseconds and GFLOP/s of every attention variant this CPU runs (the table
 * in src/kernels/ref/attention.h), at 1 and 2 threads, on the real-model shapes: BEVFusion-L's
 * decoder (cross-attention of 500 queries over the 180 x 180 BEV keys, and its self-attention;
 * 8 heads of depth 16) and ViT-H at 192 tokens (16 heads of depth 80), plus a sweep of depths
 * that the per-shape table in attention.c was read from. FLOPs are the two matmuls'
 * (2 Lq Lk (D + Dv) per head); the exps come on top. "pick" is the variant pvk_attention_f32
 * runs for the shape.
 *
 *   pv_attn_bench [-r runs] [-v variant] [-s shape] [-T threads] [-k] [-m] [-q]
 *     -r  timed runs per point (default 5); the median is reported, the best run beside it
 *     -v  only the variant with this name ("blocked", "avx2_lanes8", "avx512_lanes16")
 *     -s  only shape number s (0-based, in the order printed)
 *     -T  only 1 or only 2 threads (default both)
 *     -k  K given transposed ([D, Lk] per head)
 *     -m  with an additive mask [Lq, Lk] (else none)
 *     -q  only the first three shapes (the model ones)
 * Each point is warmed up once. */
#include "kernels/ref/attention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape { const char *name; int64_t heads, Lq, Lk, D, Dv; } shape;

static const shape shapes[] = {
    { "bevfusion cross", 8, 500, 180 * 180, 16, 16 },
    { "bevfusion self ", 8, 500, 500, 16, 16 },
    { "vit-h          ", 16, 192, 192, 80, 80 },
    { "sweep d32      ", 8, 1024, 1024, 32, 32 },
    { "sweep d64      ", 8, 1024, 1024, 64, 64 },
    { "sweep d128     ", 8, 1024, 1024, 128, 128 },
    { "sweep d256     ", 4, 1024, 1024, 256, 256 },
    { "sweep lq4 d16  ", 8, 4, 32400, 16, 16 },
    { "sweep lq4 d64  ", 8, 4, 4096, 64, 64 },
    { "sweep lq1 d64  ", 8, 1, 4096, 64, 64 },
    { "sweep lq1 d16  ", 8, 1, 32400, 16, 16 },
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *rand_buf(size_t n, float amp)
{
    float *p = pvc_malloc_aligned((n ? n : 1) * sizeof(float));
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; p && i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = amp * (float)((double)(r >> 40) / (double)(1ull << 24) - 0.5);
    }
    return p;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct point { double median_ms, best_ms, cpu_ms; } point;

static point bench_point(pvk_attention_f32_fn fn, pvc_pool *pool, const pvk_attn_desc *d, const float *q,
                         const float *k, const float *v, const float *m, float *y, int runs)
{
    double ms[64], cpu[64];
    fn(pool, d, q, k, v, m, y);    /* warm-up */
    for (int r = 0; r < runs; r++) {
        double t0 = pvc_now_ms(), c0 = cpu_ms();
        fn(pool, d, q, k, v, m, y);
        ms[r] = pvc_now_ms() - t0;
        cpu[r] = cpu_ms() - c0;
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_double);
    point p = { ms[runs / 2], ms[0], cpu[runs / 2] };
    return p;
}

int main(int argc, char **argv)
{
    int runs = 5, nshapes = (int)PVC_COUNTOF(shapes), only_shape = -1, tlo = 1, thi = 2;
    bool kt = false, masked = false;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) only_shape = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) tlo = thi = atoi(argv[++i]) == 1 ? 1 : 2;
        else if (!strcmp(argv[i], "-k")) kt = true;
        else if (!strcmp(argv[i], "-m")) masked = true;
        else if (!strcmp(argv[i], "-q")) nshapes = 3;
        else {
            fprintf(stderr, "usage: %s [-r runs] [-v variant] [-s shape] [-T 1|2] [-k] [-m] [-q]\n", argv[0]);
            return 2;
        }
    }
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    pvc_isa isa = pvc_isa_selected();
    printf("cpu: %s\nisa: %s (PERCEIVE_ISA lowers it); median of %d runs; K %s; mask %s\n", pvc_cpu_get()->brand,
           pvc_isa_name(isa), runs, kt ? "transposed [D, Lk]" : "[Lk, D]", masked ? "[Lq, Lk]" : "none");
    pvc_pool *pool2 = NULL;
    if (pvc_pool_create(2, &pool2) != PV_OK) { fprintf(stderr, "cannot create the thread pool\n"); return 1; }
    printf("columns: median and best run by the wall clock; GFLOP/s of the median; per-core GFLOP/s in\n"
           "process CPU time (what a thread does while it holds a core, whatever the neighbours do)\n");
    printf("\n%-16s %-15s %-22s %3s %9s %8s %9s %8s %-15s\n", "variant", "shape", "heads x Lq x Lk x D/Dv", "thr",
           "median ms", "GFLOP/s", "best ms", "percore", "pick");
    for (int s = 0; s < nshapes; s++) {
        if (only_shape >= 0 && s != only_shape) continue;
        const shape *sh = &shapes[s];
        int64_t qd[3] = { sh->heads, sh->Lq, sh->D };
        int64_t kd[3] = { sh->heads, kt ? sh->D : sh->Lk, kt ? sh->Lk : sh->D };
        int64_t vd[3] = { sh->heads, sh->Lk, sh->Dv }, md[2] = { sh->Lq, sh->Lk };
        pvc_tensor t[4];
        const int64_t *dims[4] = { qd, kd, vd, md };
        int ranks[4] = { 3, 3, 3, 2 };
        for (int o = 0; o < 4; o++) {
            memset(&t[o], 0, sizeof t[o]);
            t[o].dtype = PV_F32;
            t[o].rank = ranks[o];
            for (int a = 0; a < ranks[o]; a++) t[o].dims[a] = dims[o][a];
            pvc_tensor_set_contiguous(&t[o]);
        }
        pvk_attn_desc d;
        char why[256];
        if (!pvk_attn_desc_init(&d, &t[0], &t[1], &t[2], masked ? &t[3] : NULL, kt, 1.0f / sqrtf((float)sh->D), why,
                                sizeof why)) {
            fprintf(stderr, "%s: %s\n", sh->name, why);
            return 1;
        }
        float *q = rand_buf((size_t)pvc_numel(&t[0]), 4.0f), *k = rand_buf((size_t)pvc_numel(&t[1]), 4.0f);
        float *v = rand_buf((size_t)pvc_numel(&t[2]), 2.0f);
        float *m = masked ? rand_buf((size_t)pvc_numel(&t[3]), 2.0f) : NULL;
        float *y = pvc_malloc_aligned((size_t)(d.nbatch * d.Lq * d.Dv) * sizeof *y);
        if (!q || !k || !v || !y || (masked && !m)) { fprintf(stderr, "out of memory\n"); return 1; }
        double flop = 2.0 * (double)sh->heads * (double)sh->Lq * (double)sh->Lk * (double)(sh->D + sh->Dv);
        char dims_s[48];
        snprintf(dims_s, sizeof dims_s, "%lldx%lldx%lldx%lld/%lld", (long long)sh->heads, (long long)sh->Lq,
                 (long long)sh->Lk, (long long)sh->D, (long long)sh->Dv);
        for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
            const pvk_attn_variant *var = &pvk_attn_f32_variants[vi];
            if (var->isa > isa || (only && strcmp(only, var->name))) continue;
            for (int th = tlo; th <= thi; th++) {
                point p = bench_point(var->fn, th == 1 ? NULL : pool2, &d, q, k, v, m, y, runs);
                printf("%-16s %s %-22s %3d %9.2f %8.1f %9.2f %8.1f %-15s\n", var->name, sh->name, dims_s, th,
                       p.median_ms, flop / (p.median_ms * 1e6), p.best_ms, flop / (p.cpu_ms * 1e6),
                       pvk_attn_f32_pick(&d)->name);
                fflush(stdout);
            }
        }
        pvc_free_aligned(q);
        pvc_free_aligned(k);
        pvc_free_aligned(v);
        pvc_free_aligned(m);
        pvc_free_aligned(y);
    }
    pvc_pool_free(pool2);
    return 0;
}
