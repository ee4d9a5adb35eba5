/* SIMD GEMM variants against the reference: every entry of pvk_gemm_f32_variants the CPU (as
 * lowered by PERCEIVE_ISA) can run is compared with pvk_gemm_f32_ref on random shapes (odd
 * sizes 1..300, edges around the 6/12-row and 16/32-column tiles, a few model-sized ones), all
 * four transposes, row strides larger than the rows, alpha != 1 and beta 0/1, inline and on
 * pools of 2 and 3 threads. C starts as NaN when beta = 0 (it must not be read) and every C
 * buffer has guard floats after it and in the stride gaps that must come back untouched.
 * Also: K = 0 and empty M/N, bit-identical results across thread counts, and room for the
 * on-stack packing buffers (pool workers' stacks; a thread with a 512 KiB stack).
 *
 * Tolerance (one bound for the whole file): |variant - ref| <= 1e-5 * K * max|A| * max|B| *
 * |alpha| + 1e-6 * |C_in|. Both sides round each of the K products and partial sums once
 * (relative 6e-8 each) in different orders; a dropped or doubled term costs about
 * max|A|max|B| / 4, far above the bound for K < 25000. */
#define _GNU_SOURCE   /* pthread_getattr_np */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define GUARD 32
#define GUARD_VAL 12345.0f

static pvc_pool *pool2, *pool3;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static float frand(void) { return (float)((double)urand() / 2147483648.0 * 2.0 - 1.0); }   /* [-1, 1) */
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(urand() % (uint32_t)(hi - lo + 1)); }

static bool runnable(const pvk_gemm_variant *v) { return v->isa <= pvc_isa_selected(); }

typedef struct gcase {
    int64_t M, N, K;
    bool ta, tb;
    int64_t pa, pb, pc;     /* extra row-stride padding of A, B, C */
    float alpha, beta;
} gcase;

/* Runs one case on variant v with the given pool and on the reference; checks the tolerance,
 * the guards and the stride gaps. Returns the max abs difference. */
static double check_case(const pvk_gemm_variant *v, pvc_pool *pool, const gcase *g)
{
    int64_t ar = g->ta ? g->K : g->M, ac = g->ta ? g->M : g->K;   /* stored A: ar x ac */
    int64_t br = g->tb ? g->N : g->K, bc = g->tb ? g->K : g->N;
    int64_t lda = ac + g->pa, ldb = bc + g->pb, ldc = g->N + g->pc;
    /* Exact-size A and B (ASan sees any over-read); C rows padded, guards after the last one. */
    size_t na = (size_t)(ar ? (ar - 1) * lda + ac : 0), nb = (size_t)(br ? (br - 1) * ldb + bc : 0);
    size_t nc = (size_t)(g->M * ldc) + GUARD;
    float *A = malloc(sizeof(float) * (na + 1)), *B = malloc(sizeof(float) * (nb + 1));
    float *C0 = malloc(sizeof(float) * nc), *Cv = malloc(sizeof(float) * nc), *Cr = malloc(sizeof(float) * nc);
    assert_true(A && B && C0 && Cv && Cr);
    float maxa = 0, maxb = 0;
    for (size_t i = 0; i < na; i++) { A[i] = frand(); maxa = fmaxf(maxa, fabsf(A[i])); }
    for (size_t i = 0; i < nb; i++) { B[i] = frand(); maxb = fmaxf(maxb, fabsf(B[i])); }
    for (size_t i = 0; i < nc; i++) C0[i] = GUARD_VAL;
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t j = 0; j < g->N; j++) C0[i * ldc + j] = g->beta == 0.0f ? NAN : frand();
    memcpy(Cv, C0, sizeof(float) * nc);
    memcpy(Cr, C0, sizeof(float) * nc);

    v->fn(pool, g->M, g->N, g->K, A, lda, g->ta, B, ldb, g->tb, Cv, ldc, g->alpha, g->beta);
    pvk_gemm_f32_ref(NULL, g->M, g->N, g->K, A, lda, g->ta, B, ldb, g->tb, Cr, ldc, g->alpha, g->beta);

    double tol_ab = 1e-5 * (double)g->K * maxa * maxb * fabs(g->alpha), worst = 0;
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t j = 0; j < ldc; j++) {
            size_t at = (size_t)(i * ldc + j);
            if (j >= g->N) {   /* stride gap */
                if (Cv[at] != GUARD_VAL) fail_msg("%s: stride gap C[%lld][%lld] written", v->name, (long long)i, (long long)j);
                continue;
            }
            double d = fabs((double)Cv[at] - (double)Cr[at]);
            double tol = tol_ab + (g->beta != 0.0f ? 1e-6 * fabs(C0[at]) : 0.0);
            if (!(d <= tol))
                fail_msg("%s: M=%lld N=%lld K=%lld ta=%d tb=%d alpha=%g beta=%g: C[%lld][%lld] = %.9g, ref %.9g (tol %.3g)",
                         v->name, (long long)g->M, (long long)g->N, (long long)g->K, g->ta, g->tb, g->alpha, g->beta,
                         (long long)i, (long long)j, Cv[at], Cr[at], tol);
            if (d > worst) worst = d;
        }
    for (size_t i = (size_t)(g->M * ldc); i < nc; i++)
        if (Cv[i] != GUARD_VAL) fail_msg("%s: guard float %zu after C written", v->name, i - (size_t)(g->M * ldc));
    free(A); free(B); free(C0); free(Cv); free(Cr);
    return worst;
}

static gcase random_case(int64_t maxdim)
{
    static const float alphas[] = { 1.0f, 0.5f, -1.25f, 3.0f };
    gcase g;
    g.M = irand(1, maxdim);
    g.N = irand(1, maxdim);
    g.K = irand(1, maxdim);
    g.ta = urand() & 1;
    g.tb = urand() & 1;
    g.pa = urand() % 3 ? 0 : irand(1, 9);
    g.pb = urand() % 3 ? 0 : irand(1, 9);
    g.pc = urand() % 3 ? 0 : irand(1, 9);
    g.alpha = alphas[urand() % 4];
    g.beta = (float)(urand() & 1);
    return g;
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_table(void **state)
{
    (void)state;
    const pvk_gemm_variant *sel = pvk_gemm_f32_selected();
    assert_true(pvk_gemm_f32_nvariants >= 1);
    assert_ptr_equal(pvk_gemm_f32_variants[0].fn, pvk_gemm_f32_ref);
    assert_true(runnable(sel));
    for (int i = 0; i < pvk_gemm_f32_nvariants; i++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[i];
        if (i > 0) assert_true(v->isa >= pvk_gemm_f32_variants[i - 1].isa);
        if (runnable(v)) assert_true(v->isa <= sel->isa);   /* the dispatcher takes the best one */
        print_message("variant %-14s needs %-6s: %s\n", v->name, pvc_isa_name(v->isa),
                      !runnable(v) ? "skipped (not on this CPU / PERCEIVE_ISA)" : v == sel ? "runs (selected)" : "runs");
    }
}

/* Sizes around the tile edges, every transpose, both betas, inline. */
static void test_edges(void **state)
{
    (void)state;
    static const int64_t dims[] = { 1, 2, 5, 6, 7, 11, 12, 13, 15, 16, 17, 31, 32, 33, 47, 48, 63, 65 };
    static const int64_t ks[] = { 1, 3, 8, 17, 64 };
    for (int vi = 1; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (!runnable(v)) continue;
        for (size_t a = 0; a < PVC_COUNTOF(dims); a++)
            for (size_t b = 0; b < PVC_COUNTOF(dims); b += 2)
                for (int t = 0; t < 4; t++) {
                    gcase g = { dims[a], dims[(b + a) % PVC_COUNTOF(dims)], ks[(a + b + (size_t)t) % PVC_COUNTOF(ks)],
                                t & 1, t >> 1, t, 2 * t, 3 - t, t == 3 ? -0.75f : 1.0f, (float)((a + b) & 1) };
                    check_case(v, NULL, &g);
                }
    }
}

/* Random shapes 1..300, strides, alpha, beta; inline and on pools of 2 and 3 threads. */
static void test_random(void **state)
{
    (void)state;
    pvc_pool *pools[] = { NULL, pool2, pool3 };
    for (int vi = 1; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (!runnable(v)) continue;
        double worst = 0;
        int n = getenv("PV_SANITIZED") ? 60 : 240;
        for (int i = 0; i < n; i++) {
            gcase g = random_case(300);
            worst = fmax(worst, check_case(v, pools[i % 3], &g));
        }
        print_message("%s: %d random cases, max |diff| %.3g\n", v->name, n, worst);
    }
}

/* Model-sized shapes (K past the K slice, M past the M block, N split across threads). */
static void test_big(void **state)
{
    (void)state;
    static const gcase big[] = {
        { 192, 1280, 3840, false, false, 0, 0, 0, 1.0f, 0.0f },
        { 192, 1280, 1280, false, true, 0, 0, 0, 1.0f, 1.0f },
        { 457, 333, 700, true, false, 3, 0, 5, -0.5f, 1.0f },
        { 128, 2500, 2304, false, false, 0, 0, 0, 1.0f, 0.0f },
        { 401, 97, 1023, true, true, 1, 2, 3, 2.0f, 0.0f },
        { 5, 23000, 37, false, false, 0, 0, 2, 1.0f, 1.0f },   /* C chunks along N, short last one */
    };
    for (int vi = 1; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (!runnable(v)) continue;
        for (size_t i = 0; i < PVC_COUNTOF(big); i++) check_case(v, i & 1 ? pool3 : pool2, &big[i]);
    }
}

/* K = 0 is C = beta*C; M or N = 0 touches nothing. */
static void test_empty(void **state)
{
    (void)state;
    for (int vi = 0; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (!runnable(v)) continue;
        float A[4] = { 1, 2, 3, 4 }, B[4] = { 1, 2, 3, 4 }, C[3 * 5];
        for (int i = 0; i < 15; i++) C[i] = NAN;
        v->fn(pool2, 3, 4, 0, A, 1, false, B, 4, false, C, 5, 1.0f, 0.0f);
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 4; j++) assert_true(C[i * 5 + j] == 0.0f);
            assert_true(isnan(C[i * 5 + 4]));
        }
        for (int i = 0; i < 15; i++) C[i] = (float)i;
        v->fn(NULL, 3, 4, 0, A, 1, false, B, 4, false, C, 5, 2.0f, 1.0f);
        for (int i = 0; i < 15; i++) assert_true(C[i] == (float)i);
        v->fn(NULL, 0, 4, 2, A, 2, false, B, 4, false, C, 5, 1.0f, 0.0f);
        v->fn(NULL, 3, 0, 2, A, 2, false, B, 4, false, C, 5, 1.0f, 0.0f);
        for (int i = 0; i < 15; i++) assert_true(C[i] == (float)i);
    }
}

/* Results do not depend on the thread count (the K summation order is fixed). */
static void test_thread_invariance(void **state)
{
    (void)state;
    int64_t M = 131, N = 517, K = 611;
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C1 = malloc(sizeof(float) * (size_t)(M * N)), *C2 = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; i++) A[i] = frand();
    for (int64_t i = 0; i < K * N; i++) B[i] = frand();
    for (int vi = 0; vi < pvk_gemm_f32_nvariants; vi++) {
        const pvk_gemm_variant *v = &pvk_gemm_f32_variants[vi];
        if (!runnable(v)) continue;
        v->fn(NULL, M, N, K, A, K, false, B, N, false, C1, N, 1.0f, 0.0f);
        v->fn(pool3, M, N, K, A, K, false, B, N, false, C2, N, 1.0f, 0.0f);
        assert_memory_equal(C1, C2, sizeof(float) * (size_t)(M * N));
    }
    free(A); free(B); free(C1); free(C2);
}

/* The packing buffers are on the stack: every variant must run on a thread with a small
 * (512 KiB) stack, as an embedding application might give it. */
typedef struct small_stack_arg { const pvk_gemm_variant *v; double worst; } small_stack_arg;

static void *small_stack_main(void *p)
{
    small_stack_arg *a = p;
    gcase g = { 300, 200, 700, false, true, 1, 1, 1, 1.0f, 1.0f };
    a->worst = check_case(a->v, NULL, &g);
    return NULL;
}

/* The pool's threads (pthread or OpenMP, whichever this build uses) must have room for the
 * ~300 KiB of packing buffers: check they have at least 1 MiB. */
static void stack_size_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    size_t *min_stack = ctx;
    pthread_attr_t attr;
    size_t size = 0;
    (void)begin; (void)end; (void)tid;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
    }
    /* tid 0 is the caller (the main thread, whose reported size is its rlimit-bound one) */
    if (tid > 0 && size < *min_stack) *min_stack = size;
}

static void test_small_stack(void **state)
{
    (void)state;
    size_t min_stack = SIZE_MAX;
    for (int rep = 0; rep < 20; rep++) pvc_parallel_for(pool3, 64, 1, stack_size_range, &min_stack);
    if (min_stack != SIZE_MAX) {
        print_message("smallest pool worker stack: %zu KiB\n", min_stack / 1024);
        assert_true(min_stack >= 1024 * 1024);
    }
    for (int vi = 0; vi < pvk_gemm_f32_nvariants; vi++) {
        small_stack_arg a = { &pvk_gemm_f32_variants[vi], 0 };
        if (!runnable(a.v)) continue;
        pthread_attr_t attr;
        pthread_t th;
        pthread_attr_init(&attr);
        assert_int_equal(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
        assert_int_equal(pthread_create(&th, &attr, small_stack_main, &a), 0);
        pthread_join(th, NULL);
        pthread_attr_destroy(&attr);
    }
}

static int setup(void **state)
{
    (void)state;
    return pvc_pool_create(2, &pool2) == PV_OK && pvc_pool_create(3, &pool3) == PV_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pvc_pool_free(pool2);
    pvc_pool_free(pool3);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_big),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_thread_invariance),
        cmocka_unit_test(test_small_stack),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
