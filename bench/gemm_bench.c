/* pv_gemm_bench: GFLOP/s of every f32 GEMM variant this CPU runs, on the real-model shapes
 * (ViT-H linear layers at 192 tokens, BEV 3x3 convolutions as im2col GEMMs), at 1 and 2
 * threads, against the FMA peak measured in the same run by a register-only FMA loop per ISA
 * (so frequency licences and neighbours on a shared box are priced in).
 *
 *   pv_gemm_bench [-r runs] [-v variant] [-t NN|NT|TN|TT] [-s shape] [-T threads] [-q]
 *     -r  timed runs per point (default 5); the median is reported, and the best run beside it
 *         (on a box shared with other jobs the best run shows what the code does undisturbed)
 *     -v  only the variant with this name (see the table in kernels.h; "ref", "avx512_12x32"..)
 *     -t  transposes of A and B (default NN, as MatMul and Conv call it)
 *     -s  only shape number s (0-based, in the order printed)
 *     -T  only 1 or only 2 threads (default both)
 *     -q  only the first two shapes
 * Each point is warmed up once; C is written with beta = 0. */
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct shape { const char *name; int64_t M, N, K; } shape;

static const shape shapes[] = {
    { "vit-h qkv     ", 192, 3840, 1280 },
    { "vit-h proj    ", 192, 1280, 1280 },
    { "vit-h mlp-up  ", 192, 5120, 1280 },
    { "vit-h mlp-down", 192, 1280, 5120 },
    { "bev conv 180^2", 128, 180 * 180, 256 * 9 },
    { "bev conv 90^2 ", 256, 90 * 90, 256 * 9 },
};

/* ---- FMA peak ------------------------------------------------------------------------------ */

enum { PEAK_ITERS = 20 * 1000 * 1000 };

#if defined(__x86_64__)
/* 16 independent accumulator chains: more than FMA latency x FMA ports on any current core. */
__attribute__((target("avx512f,fma"))) static float peak_avx512(int64_t iters)
{
    __m512 acc[16], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (int64_t n = 0; n < iters; n++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    }
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"))) static float peak_avx2(int64_t iters)
{
    __m256 acc[12], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    for (int64_t n = 0; n < iters; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    }
    for (int i = 1; i < 12; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    float out[8];
    _mm256_storeu_ps(out, acc[0]);
    return out[0];
}
#endif

static double cpu_ms(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct peak_arg { pvc_isa isa; double cpu; float sink; } peak_arg;

static void *peak_thread(void *p)
{
    peak_arg *a = p;
    double c0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
#if defined(__x86_64__)
    a->sink = a->isa == PVC_ISA_AVX512 ? peak_avx512(PEAK_ITERS) : peak_avx2(PEAK_ITERS);
#endif
    a->cpu = cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static double flops_per_iter(pvc_isa isa) { return isa == PVC_ISA_AVX512 ? 16.0 * 16 * 2 : 12.0 * 8 * 2; }

/* GFLOP/s of `threads` copies of the FMA loop running at once, by the wall clock, and per core
 * while on a core (thread CPU time); best of 5. */
static void fma_peak(pvc_isa isa, int threads, double *wall, double *core)
{
    *wall = *core = 0;
    double flop = flops_per_iter(isa) * PEAK_ITERS;
    for (int rep = 0; rep < 5; rep++) {
        pthread_t th[2];
        peak_arg args[2];
        double t0 = pvc_now_ms();
        for (int t = 0; t < threads; t++) {
            args[t].isa = isa;
            pthread_create(&th[t], NULL, peak_thread, &args[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
        double ms = pvc_now_ms() - t0;
        *wall = PVC_MAX(*wall, threads * flop / (ms * 1e6));
        for (int t = 0; t < threads; t++) *core = PVC_MAX(*core, flop / (args[t].cpu * 1e6));
    }
}

/* ---- GEMM timing --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct point { double median, best, core; } point;

/* GFLOP/s over `runs` calls: median and best by the wall clock, and median per busy core
 * (process CPU time: what the threads achieve while they hold a core, whatever the
 * neighbours do; threads waiting for work sleep and cost no CPU time). */
static point bench_point(const pvk_gemm_variant *v, pvc_pool *pool, const shape *s, bool ta, bool tb,
                         const float *A, const float *B, float *C, int runs)
{
    int64_t lda = ta ? s->M : s->K, ldb = tb ? s->K : s->N;
    double ms[64], cpu[64];
    v->fn(pool, s->M, s->N, s->K, A, lda, ta, B, ldb, tb, C, s->N, 1.0f, 0.0f);   /* warm-up */
    for (int r = 0; r < runs; r++) {
        double t0 = pvc_now_ms(), c0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
        v->fn(pool, s->M, s->N, s->K, A, lda, ta, B, ldb, tb, C, s->N, 1.0f, 0.0f);
        ms[r] = pvc_now_ms() - t0;
        cpu[r] = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_double);
    double flop = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    point p = { flop / (ms[runs / 2] * 1e6), flop / (ms[0] * 1e6), flop / (cpu[runs / 2] * 1e6) };
    return p;
}

static float *rand_buf(size_t n)
{
    float *p = pvc_malloc_aligned(n * sizeof(float));
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; p && i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((double)(r >> 40) / (double)(1ull << 24) - 0.5);
    }
    return p;
}

int main(int argc, char **argv)
{
    int runs = 5, nshapes = (int)PVC_COUNTOF(shapes);
    int only_shape = -1, tlo = 1, thi = 2;
    const char *only = NULL, *trans = "NN";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) trans = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) only_shape = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) tlo = thi = atoi(argv[++i]) == 1 ? 1 : 2;
        else if (!strcmp(argv[i], "-q")) nshapes = 2;
        else {
            fprintf(stderr, "usage: %s [-r runs] [-v variant] [-t NN|NT|TN|TT] [-s shape] [-T 1|2] [-q]\n", argv[0]);
            return 2;
        }
    }
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    if (strlen(trans) != 2) { fprintf(stderr, "-t takes NN, NT, TN or TT\n"); return 2; }
    bool ta = trans[0] == 'T', tb = trans[1] == 'T';

    pvc_isa isa = pvc_isa_selected();
    printf("cpu: %s\nisa: %s (PERCEIVE_ISA lowers it); median of %d runs; op(A) op(B) = %s\n",
           pvc_cpu_get()->brand, pvc_isa_name(isa), runs, trans);
    double peak[3][3] = { { 0 } }, core_peak[3] = { 0 };   /* [isa][threads], [isa] GFLOP/s */
    for (int pi = PVC_ISA_AVX2; pi <= (int)isa; pi++)
        for (int t = 1; t <= 2; t++) {
            double core;
            fma_peak((pvc_isa)pi, t, &peak[pi][t], &core);
            core_peak[pi] = PVC_MAX(core_peak[pi], core);
            printf("FMA peak %-6s %d thread%s: %7.1f GFLOP/s wall clock, %6.1f per core in CPU time\n",
                   pvc_isa_name((pvc_isa)pi), t, t > 1 ? "s" : " ", peak[pi][t], core);
        }
    printf("columns: median and best run by the wall clock, %% of the wall-clock FMA peak at that\n"
           "thread count; per-core rate in CPU time, %% of the per-core FMA peak\n");

    size_t maxa = 0, maxb = 0, maxc = 0;
    for (int s = 0; s < nshapes; s++) {
        maxa = PVC_MAX(maxa, (size_t)(shapes[s].M * shapes[s].K));
        maxb = PVC_MAX(maxb, (size_t)(shapes[s].K * shapes[s].N));
        maxc = PVC_MAX(maxc, (size_t)(shapes[s].M * shapes[s].N));
    }
    float *A = rand_buf(maxa), *B = rand_buf(maxb), *C = rand_buf(maxc);
    pvc_pool *pool2 = NULL;
    if (!A || !B || !C || pvc_pool_create(2, &pool2) != PV_OK) { fprintf(stderr, "out of memory\n"); return 1; }

    printf("\n%-14s %-14s %-16s %3s %8s %6s %8s %6s %8s %6s\n", "variant", "shape", "MxNxK", "thr",
           "median", "%peak", "best", "%peak", "percore", "%core");
    for (int vi = 0; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (v->isa > isa || (only && strcmp(only, v->name))) continue;
        /* The reference (SSE2 code) is priced against the machine's best FMA peak. */
        pvc_isa own = v->isa == PVC_ISA_SCALAR ? isa : v->isa;
        for (int s = 0; s < nshapes; s++) {
            if (only_shape >= 0 && s != only_shape) continue;
            for (int t = tlo; t <= thi; t++) {
                point p = bench_point(v, t == 1 ? NULL : pool2, &shapes[s], ta, tb, A, B, C, runs);
                char dims[48];
                snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)shapes[s].M, (long long)shapes[s].N,
                         (long long)shapes[s].K);
                double pk = peak[own][t], cp = core_peak[own];
                printf("%-14s %s %-16s %3d %8.1f %5.1f%% %8.1f %5.1f%% %8.1f %5.1f%%\n", v->name, shapes[s].name,
                       dims, t, p.median, pk > 0 ? 100 * p.median / pk : 0.0, p.best, pk > 0 ? 100 * p.best / pk : 0.0,
                       p.core, cp > 0 ? 100 * p.core / cp : 0.0);
                fflush(stdout);
            }
        }
    }
    pvc_pool_free(pool2);
    pvc_free_aligned(A);
    pvc_free_aligned(B);
    pvc_free_aligned(C);
    return 0;
}
