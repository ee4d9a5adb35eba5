/* pv_gemm_bench: GFLOP/s of every GEMM this CPU runs, on the real-model shapes (ViT-H linear
 * layers at 192 tokens, BEV 3x3 convolutions as im2col GEMMs, the BEVFusion decoder's 500-query
 * FFN), at 1 and 2 threads, against the peak measured in the same run by register-only loops
 * per ISA (so frequency licences and neighbours on a shared box are priced in): FMA for fp32,
 * vdpbf16ps (64 flop per instruction) for bf16. Row groups:
 *   plain   pvk_gemm_f32 variants (B packed per call)
 *   packed  pvk_gemm_packed variants (kernels/gemm_packed.h: B packed once, outside the timing)
 *   dnnl    oneDNN matmul (kernels/dnnl/matmul_dnnl.h), fp32 and bf16, weights reordered once
 * fp32 rows are priced against the FMA peak of their ISA, bf16 rows against the bf16 peak.
 * On a shared box the machine's speed drifts by tens of percent from one second to the next (other
 * jobs on our cores, and on the host under the VM), so a peak measured once at start prices a
 * run taken later badly. The last column pairs every timed run with a burst of the peak loop
 * doing the same flop count on the same pool right before it (same thread wake-up, same moment
 * of the machine): %pair = median over runs of burst time / run time. It is the column to
 * compare code changes by; `chrt -f 10 pv_gemm_bench ...` (root) keeps other jobs off the cores
 * while it runs and shows what the code does when it has them.
 *
 *   pv_gemm_bench [-r runs] [-v variant] [-t NN|NT|TN|TT] [-s shape] [-T threads] [-q] [-g group]
 *                 [-S MxNxK]... [-x] [-c copies] [-e] [-w]
 *     -r  timed runs per point (default 5); the median is reported, and the best run beside it
 *         (on a box shared with other jobs the best run shows what the code does undisturbed)
 *     -v  only the variant with this name (see the table in kernels.h; "ref", "avx512_12x32"..)
 *     -t  transposes of A and B (default NN, as MatMul and Conv call it)
 *     -s  only shape number s (0-based, in the order printed)
 *     -T  only 1 or only 2 threads (default both)
 *     -q  only the first two shapes
 *     -g  only these row groups, comma-separated: plain, packed, dnnl (default all; -t applies
 *         to plain only, packed and dnnl rows are A * B with B K x N)
 *     -S  this shape instead of the table (repeatable, up to 16)
 *     -x  the transformer sweep instead of the table: M = 192, 384, 768, 1536 tokens times the
 *         ViT-H linear layers, and the batched attention heads (M 192, N 192, K 80 and N 80,
 *         K 192, as one GEMM per head)
 *     -e  packed rows: also with the epilogue of a transformer's linear layer (bias, the vector
 *         GELU, a residual of C's shape), a second row per variant ("+ep")
 *     -w  packed rows: no workspace, every slice of C packs its own A block (what a run did
 *         before pvk_gemm_packed_run_ws; the default runs as the graph ops do, A packed once)
 *     -c  packed and dnnl rows: cycle over this many copies of the weights (default 1), so
 *         that B comes from DRAM as it does in a network whose weights exceed the L3 cache
 * Each point is warmed up once; C is written with beta = 0. */
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/gemm_packed.h"
#include "kernels/kernels.h"
#include "kernels/ref/eltwise_simd.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct shape { const char *name; int64_t M, N, K; } shape;

enum { MAX_COPIES = 8, MAX_USER_SHAPES = 16 };

static const shape shapes[] = {
    { "vit-h qkv     ", 192, 3840, 1280 },
    { "vit-h proj    ", 192, 1280, 1280 },
    { "vit-h mlp-up  ", 192, 5120, 1280 },
    { "vit-h mlp-down", 192, 1280, 5120 },
    { "bev conv 180^2", 128, 180 * 180, 256 * 9 },
    { "bev conv 90^2 ", 256, 90 * 90, 256 * 9 },
    { "bev dec ffn-up", 500, 256, 128 },
    { "bev dec ffn-dn", 500, 128, 256 },
};

/* -x: tokens x the ViT-H linear layers, then one attention head's two products. */
static const shape sweep[] = {
    { "qkv      192  ", 192, 3840, 1280 }, { "mlp-up   192  ", 192, 5120, 1280 },
    { "mlp-dn   192  ", 192, 1280, 5120 }, { "proj     192  ", 192, 1280, 1280 },
    { "qkv      384  ", 384, 3840, 1280 }, { "mlp-up   384  ", 384, 5120, 1280 },
    { "mlp-dn   384  ", 384, 1280, 5120 }, { "qkv      768  ", 768, 3840, 1280 },
    { "mlp-up   768  ", 768, 5120, 1280 }, { "mlp-dn   768  ", 768, 1280, 5120 },
    { "qkv      1536 ", 1536, 3840, 1280 }, { "mlp-up   1536 ", 1536, 5120, 1280 },
    { "mlp-dn   1536 ", 1536, 1280, 5120 },
    { "head q.k^T    ", 192, 192, 80 }, { "head p.v      ", 192, 80, 192 },
};

/* ---- peaks ------------------------------------------------------------------------------- */

enum { PEAK_ITERS = 20 * 1000 * 1000 };
/* The peak loops: FMA at AVX2 and AVX-512 width, and vdpbf16ps (AVX512_BF16). */
enum { PK_AVX2, PK_AVX512, PK_BF16, PK_N };

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

/* 16 chains of vdpbf16ps: each is 16 lanes x 2 products + 2 adds = 64 flop. */
__attribute__((target("avx512f,avx512bf16"))) static float peak_bf16(int64_t iters)
{
    __m512 acc[16];
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3a803a80), y = (__m512bh)_mm512_set1_epi32(0x3f803f80);   /* 2^-10, 1 */
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (int64_t n = 0; n < iters; n++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    }
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    return _mm512_reduce_add_ps(acc[0]);
}
#endif

static double cpu_ms(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct peak_arg { int kind; double cpu; float sink; } peak_arg;

static void *peak_thread(void *p)
{
    peak_arg *a = p;
    double c0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
#if defined(__x86_64__)
    a->sink = a->kind == PK_BF16 ? peak_bf16(PEAK_ITERS) : a->kind == PK_AVX512 ? peak_avx512(PEAK_ITERS) : peak_avx2(PEAK_ITERS);
#endif
    a->cpu = cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static double flops_per_iter(int kind);

/* The paired burst (see the top): each thread of the pool runs `iters` of the peak loop. */
typedef struct burst { int kind; int64_t iters; float sink[2]; } burst;   /* threads <= 2 */

static void burst_fn(void *ctx, int64_t begin, int64_t end, int tid)
{
    burst *b = ctx;
    (void)tid;
    for (int64_t i = begin; i < end; i++) {
#if defined(__x86_64__)
        b->sink[i & 1] += b->kind == PK_BF16 ? peak_bf16(b->iters) : b->kind == PK_AVX512 ? peak_avx512(b->iters) : peak_avx2(b->iters);
#endif
    }
}

static double flops_per_iter(int kind) { return kind == PK_BF16 ? 16.0 * 64 : kind == PK_AVX512 ? 16.0 * 16 * 2 : 12.0 * 8 * 2; }

/* GFLOP/s of `threads` copies of the peak loop running at once, by the wall clock, and per core
 * while on a core (thread CPU time); best of 5. */
static void measure_peak(int kind, int threads, double *wall, double *core)
{
    *wall = *core = 0;
    double flop = flops_per_iter(kind) * PEAK_ITERS;
    for (int rep = 0; rep < 5; rep++) {
        pthread_t th[2];
        peak_arg args[2];
        double t0 = pvc_now_ms();
        for (int t = 0; t < threads; t++) {
            args[t].kind = kind;
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

typedef struct point { double median, best, core, pair; } point;

static double peak[PK_N][3], core_peak[PK_N];   /* [kind][threads], [kind] GFLOP/s; 0: not run here */

/* What one row runs: a plain variant, a packed object, or a oneDNN matmul (made per thread
 * count: oneDNN fixes its team at creation). */
typedef struct runner {
    const pvk_gemm_variant *v;   /* plain */
    bool ta, tb;
    pvk_gemm_packed *pk;         /* packed */
    pvk_dnnl_matmul *dm;         /* dnnl */
    void *ws;
    void *pkws;                  /* packed: A packed once into this (pvk_gemm_packed_run_ws), or NULL */
    const pvk_gemm_epilogue *ep;        /* -e: packed rows run this epilogue */
    pvk_gemm_packed *pks[MAX_COPIES];   /* -c: the copies cycled over (pk, dm are the current one) */
    pvk_dnnl_matmul *dms[MAX_COPIES];
    int ncopies, next;
} runner;

static void run_once(runner *r, pvc_pool *pool, const shape *s, const float *A, const float *B, float *C)
{
    if (r->ncopies > 1) {
        r->next = (r->next + 1) % r->ncopies;
        if (r->pk) r->pk = r->pks[r->next];
        if (r->dm) r->dm = r->dms[r->next];
    }
    if (r->v) {
        int64_t lda = r->ta ? s->M : s->K, ldb = r->tb ? s->K : s->N;
        r->v->fn(pool, s->M, s->N, s->K, A, lda, r->ta, B, ldb, r->tb, C, s->N, 1.0f, 0.0f);
    } else if (r->pk) {
        pvk_gemm_packed_run_ws(r->pk, pool, s->M, A, s->K, false, C, s->N, 0.0f, r->ep, r->pkws);
    } else if (pvk_dnnl_matmul_run(r->dm, A, NULL, C, r->ws) != PV_OK) {
        fprintf(stderr, "oneDNN matmul failed\n");
        exit(1);
    }
}

/* GFLOP/s over `runs` calls: median and best by the wall clock, and median per busy core
 * (process CPU time: what the threads achieve while they hold a core, whatever the
 * neighbours do; OpenMP threads spinning at a barrier count as busy). */
static point bench_point(runner *r, pvc_pool *pool, const shape *s, const float *A, const float *B, float *C,
                         int runs, int kind)
{
    double ms[64], cpu[64], pair[64];
    double flop = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    int threads = pvc_pool_threads(pool);
    burst bu = { kind, (int64_t)(flop / threads / flops_per_iter(kind)) + 1, { 0.0f, 0.0f } };
    run_once(r, pool, s, A, B, C);   /* warm-up */
    for (int i = 0; i < runs; i++) {
        double b0 = pvc_now_ms();
        if (core_peak[kind] > 0) pvc_parallel_for(pool, threads, 1, burst_fn, &bu);   /* the CPU runs it */
        double bms = pvc_now_ms() - b0;
        double t0 = pvc_now_ms(), c0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
        run_once(r, pool, s, A, B, C);
        ms[i] = pvc_now_ms() - t0;
        cpu[i] = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        pair[i] = bms / ms[i];
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_double);
    qsort(pair, (size_t)runs, sizeof pair[0], cmp_double);
    if (bu.sink[0] + bu.sink[1] == 12345.0f) printf(" ");   /* keeps the bursts' results live */
    point p = { flop / (ms[runs / 2] * 1e6), flop / (ms[0] * 1e6), flop / (cpu[runs / 2] * 1e6), pair[runs / 2] };
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

static void print_row(const char *name, int kind, const shape *s, int t, point p)
{
    char dims[48];
    snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)s->M, (long long)s->N, (long long)s->K);
    double pk = peak[kind][t], cp = core_peak[kind];
    printf("%-22s %s %-16s %3d %8.1f %5.1f%% %8.1f %5.1f%% %8.1f %5.1f%% %5.1f%%\n", name, s->name, dims, t, p.median,
           pk > 0 ? 100 * p.median / pk : 0.0, p.best, pk > 0 ? 100 * p.best / pk : 0.0, p.core,
           cp > 0 ? 100 * p.core / cp : 0.0, 100 * p.pair);
    fflush(stdout);
}

static int isa_kind(pvc_isa isa) { return isa >= PVC_ISA_AVX512 ? PK_AVX512 : PK_AVX2; }

int main(int argc, char **argv)
{
    int runs = 5, nshapes = (int)PVC_COUNTOF(shapes);
    int only_shape = -1, tlo = 1, thi = 2, copies = 1, nuser = 0;
    bool with_ep = false, no_ws = false;
    shape user[MAX_USER_SHAPES];
    const shape *table = shapes;
    const char *only = NULL, *trans = "NN", *group = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) trans = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) only_shape = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) tlo = thi = atoi(argv[++i]) == 1 ? 1 : 2;
        else if (!strcmp(argv[i], "-g") && i + 1 < argc) group = argv[++i];
        else if (!strcmp(argv[i], "-q")) nshapes = 2;
        else if (!strcmp(argv[i], "-e")) with_ep = true;
        else if (!strcmp(argv[i], "-w")) no_ws = true;
        else if (!strcmp(argv[i], "-x")) { table = sweep; nshapes = (int)PVC_COUNTOF(sweep); }
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            copies = atoi(argv[++i]);   /* not inside PVC_MIN: it evaluates its arguments twice */
            copies = PVC_MAX(1, PVC_MIN(MAX_COPIES, copies));
        }
        else if (!strcmp(argv[i], "-S") && i + 1 < argc && nuser < MAX_USER_SHAPES) {
            long long m, n, k;
            if (sscanf(argv[++i], "%lldx%lldx%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) {
                fprintf(stderr, "-S: '%s' is not MxNxK with positive sizes\n", argv[i]);
                return 2;
            }
            user[nuser++] = (shape){ "custom        ", m, n, k };
        } else {
            fprintf(stderr, "usage: %s [-r runs] [-v variant] [-t NN|NT|TN|TT] [-s shape] [-T 1|2] [-q] "
                            "[-g plain|packed|dnnl] [-S MxNxK]... [-x] [-c copies] [-e] [-w]\n", argv[0]);
            return 2;
        }
    }
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    if (nuser) { table = user; nshapes = nuser; }
    if (strlen(trans) != 2) { fprintf(stderr, "-t takes NN, NT, TN or TT\n"); return 2; }
    bool ta = trans[0] == 'T', tb = trans[1] == 'T';
    bool g_plain = !group || strstr(group, "plain"), g_packed = !group || strstr(group, "packed");
    bool g_dnnl = !group || strstr(group, "dnnl");

    pvc_isa isa = pvc_isa_selected();
    printf("cpu: %s\nisa: %s (PERCEIVE_ISA lowers it); median of %d runs; op(A) op(B) = %s for plain rows; "
           "%d cop%s of the weights\n", pvc_cpu_get()->brand, pvc_isa_name(isa), runs, trans, copies, copies > 1 ? "ies" : "y");
    for (int k = PK_AVX2; k < PK_N; k++) {
        if ((k == PK_AVX2 && isa < PVC_ISA_AVX2) || (k == PK_AVX512 && isa < PVC_ISA_AVX512) ||
            (k == PK_BF16 && isa < PVC_ISA_AVX512_BF16))
            continue;
        for (int t = 1; t <= 2; t++) {
            double core;
            measure_peak(k, t, &peak[k][t], &core);
            core_peak[k] = PVC_MAX(core_peak[k], core);
            printf("%s peak %d thread%s: %7.1f GFLOP/s wall clock, %6.1f per core in CPU time\n",
                   k == PK_BF16 ? "bf16 vdpbf16ps" : k == PK_AVX512 ? "FMA avx512    " : "FMA avx2      ", t,
                   t > 1 ? "s" : " ", peak[k][t], core);
        }
    }
    printf("columns: median and best run by the wall clock, %% of the wall-clock peak at that thread\n"
           "count; per-core rate in CPU time, %% of the per-core peak (fp32 rows: FMA peak of their ISA,\n"
           "bf16 rows: the vdpbf16ps peak; oneDNN fp32 rows: the best FMA peak); %%pair: median of\n"
           "(time of the same flops in the peak loop, run on the same pool just before) / (run time)\n");

    size_t maxa = 0, maxb = 0, maxc = 0;
    for (int s = 0; s < nshapes; s++) {
        maxa = PVC_MAX(maxa, (size_t)(table[s].M * table[s].K));
        maxb = PVC_MAX(maxb, (size_t)(table[s].K * table[s].N));
        maxc = PVC_MAX(maxc, (size_t)(table[s].M * table[s].N));
    }
    float *A = rand_buf(maxa), *B = rand_buf(maxb), *C = rand_buf(maxc), *R = rand_buf(maxc);
    pvc_pool *pool2 = NULL;
    if (!A || !B || !C || !R || pvc_pool_create(2, &pool2) != PV_OK) { fprintf(stderr, "out of memory\n"); return 1; }

    printf("\n%-22s %-14s %-16s %3s %8s %6s %8s %6s %8s %6s %6s\n", "variant", "shape", "MxNxK", "thr",
           "median", "%peak", "best", "%peak", "percore", "%core", "%pair");
    for (int s = 0; s < nshapes; s++) {
        if (only_shape >= 0 && s != only_shape) continue;
        const shape *sh = &table[s];
        for (int vi = 0; g_plain && vi < pvk_gemm_f32_nvariants; vi++) {
            const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
            if (v->isa > isa || (only && strcmp(only, v->name))) continue;
            /* The reference (SSE2 code) is priced against the machine's best FMA peak. */
            runner r = { .v = v, .ta = ta, .tb = tb };
            int kind = isa_kind(v->isa == PVC_ISA_SCALAR ? isa : v->isa);
            for (int t = tlo; t <= thi; t++)
                print_row(v->name, kind, sh, t, bench_point(&r, t == 1 ? NULL : pool2, sh, A, B, C, runs, kind));
        }
        for (int vi = 0; g_packed && vi < pvk_gemm_packed_nvariants; vi++) {
            const pvk_gemm_packed_variant *v = &pvk_gemm_packed_variants[vi];
            if (v->isa > isa || !v->pk || (only && strcmp(only, v->name))) continue;
            runner r = { .ncopies = copies };
            pvc_msg msg;
            for (int c = 0; c < copies; c++)
                if (pvk_gemm_packed_create(sh->K, sh->N, B, sh->N, false, 1.0f, v->precision, v, &r.pks[c], &msg) != PV_OK) {
                    fprintf(stderr, "%s\n", msg.text);
                    return 1;
                }
            r.pk = r.pks[0];
            size_t wsb = no_ws ? 0 : pvk_gemm_packed_ws_bytes(r.pk, sh->M);
            if (wsb && !(r.pkws = pvc_malloc_aligned(wsb))) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            char name[40];
            snprintf(name, sizeof name, "packed %s", v->name);
            int kind = v->precision == PVC_PREC_BF16 ? PK_BF16 : isa_kind(v->isa);
            for (int t = tlo; t <= thi; t++)
                print_row(name, kind, sh, t, bench_point(&r, t == 1 ? NULL : pool2, sh, A, B, C, runs, kind));
            if (with_ep) {   /* bias = B's first row, residual R: a buffer of C's size */
                pvk_gemm_epilogue ep = { B, NULL, pvk_vec_selected()->unary[PVK_VU_GELU], R, sh->N };
                r.ep = &ep;
                snprintf(name, sizeof name, "packed %.12s+ep", v->name);
                for (int t = tlo; t <= thi; t++)
                    print_row(name, kind, sh, t, bench_point(&r, t == 1 ? NULL : pool2, sh, A, B, C, runs, kind));
                r.ep = NULL;
            }
            for (int c = 0; c < copies; c++) pvk_gemm_packed_free(r.pks[c]);
            pvc_free_aligned(r.pkws);
        }
        for (int prec = 0; g_dnnl && prec < 2; prec++) {
            if (prec == PVC_PREC_BF16 && isa < PVC_ISA_AVX512_BF16) continue;
            for (int t = tlo; t <= thi; t++) {
                runner r = { .ncopies = copies };
                size_t ws = 0;
                for (int c = 0; c < copies; c++)
                    if (pvk_dnnl_matmul_create(sh->M, sh->N, sh->K, sh->K, B, sh->N, false, 1.0f, sh->N, false, NULL,
                                               (pvc_precision)prec, t, &r.dms[c], &ws, NULL) != PV_OK) {
                        fprintf(stderr, "oneDNN matmul: out of memory\n");
                        return 1;
                    }
                r.dm = r.dms[0];
                if (!r.dm) continue;   /* no oneDNN, or only its reference code */
                r.ws = pvc_malloc_aligned(ws + 64);
                char name[40];
                snprintf(name, sizeof name, "dnnl %.17s", pvk_dnnl_matmul_impl(r.dm));
                int kind = prec == PVC_PREC_BF16 ? PK_BF16 : isa_kind(isa);
                print_row(name, kind, sh, t, bench_point(&r, t == 1 ? NULL : pool2, sh, A, B, C, runs, kind));
                for (int c = 0; c < copies; c++) pvk_dnnl_matmul_free(r.dms[c]);
                pvc_free_aligned(r.ws);
            }
        }
    }
    pvc_pool_free(pool2);
    pvc_free_aligned(A);
    pvc_free_aligned(B);
    pvc_free_aligned(C);
    pvc_free_aligned(R);
    return 0;
}
