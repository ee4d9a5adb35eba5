/* Attention kernel variants (blocked, avx2_lanes8, avx512_lanes16: every one this CPU runs,
 * called directly from pvk_attn_f32_variants) against pvk_attention_ref_f32:
 *   - every (D, Dv) pair of {1, 3, 15, 16, 17, 33, 80} with Lq from that set and Lk from it plus
 *     129 and 300 (several 128-key blocks), the mask kind, K layout and batch broadcast cycling;
 *   - random cases over the same sizes, with -inf mask entries;
 *   - 5000 keys under a rising mask (a new running max in every block) and a falling one;
 *   - rows whose first key blocks are all -inf (the running max starts at -inf), rows that are
 *     -inf throughout (NaN, as the reference and the unfused Softmax give), Lk = 0 (zeros),
 *     D = 0 (scores are the mask alone);
 *   - each lane kernel's vector 2^x against exp2 (3 ulp; 0, 1, -inf and NaN exactly);
 *   - the result does not depend on the thread count (bitwise), and pvk_attention_f32 runs the
 *     variant pvk_attn_f32_pick names.
 * Tolerance on outputs: |a - b| <= 1e-6 + 1e-5 |b| (f32 streaming kernels vs the
 * double-accumulated reference); 16 guard floats after each output must stay untouched. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "op_harness.h"
#include "kernels/ref/attention.h"

#include <math.h>
#include <stdio.h>

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static float frand(void) { return (float)rnd() / 2147483648.0f - 1.0f; }   /* [-1, 1) */

static const int64_t sizes[] = { 1, 3, 15, 16, 17, 33, 80 };
static const int64_t key_sizes[] = { 1, 3, 15, 16, 17, 33, 80, 129, 300 };
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define NKEYS ((int)(sizeof key_sizes / sizeof key_sizes[0]))

enum { GUARD = 16 };
static const float guard_value = 12345.0f;

/* mask shapes: [Lq, Lk], [1, Lk], [Lk], [batch.., Lq, 1], [batch.., Lq, Lk], [1] */
typedef enum {
    MASK_NONE, MASK_FULL, MASK_KEYS_2D, MASK_KEYS_1D, MASK_ROWS, MASK_FULL_BATCH, MASK_SCALAR, NMASK
} mask_form;

/* One problem: operands, descriptor, reference output. */
typedef struct problem {
    pvc_tensor t[4];
    bool has_mask;
    pvk_attn_desc d;
    float *yref, *scratch;
    int64_t ny;
    char what[160];
} problem;

static float *rand_buf(int64_t n, float amp)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    for (int64_t i = 0; i < n; i++) b[i] = amp * frand();
    return b;
}

/* Builds a problem: batch dims [bd0, bd1] of rank brank, each operand keeping a batch dim or
 * broadcasting it (1) as bcast_bits says; masked-out entries (-inf) with probability 1/ninf. */
static void make_problem(problem *p, int64_t Lq, int64_t Lk, int64_t D, int64_t Dv, mask_form mf, bool kt, int brank,
                         unsigned bcast_bits, int ninf)
{
    memset(p, 0, sizeof *p);
    int64_t bd[2] = { 2, 3 };
    int64_t dims[PV_MAX_RANK];
    for (int o = 0; o < 4; o++) {
        int r = 0;
        for (int a = 0; a < brank; a++) dims[r++] = (bcast_bits >> (2 * o + a)) & 1 ? 1 : bd[a];
        if (o == 0) { dims[r++] = Lq; dims[r++] = D; }
        if (o == 1) { dims[r++] = kt ? D : Lk; dims[r++] = kt ? Lk : D; }
        if (o == 2) { dims[r++] = Lk; dims[r++] = Dv; }
        if (o == 3) {
            switch (mf) {
            case MASK_FULL:       r = 0; dims[r++] = Lq; dims[r++] = Lk; break;
            case MASK_KEYS_2D:    r = 0; dims[r++] = 1; dims[r++] = Lk; break;
            case MASK_KEYS_1D:    r = 0; dims[r++] = Lk; break;
            case MASK_ROWS:       dims[r++] = Lq; dims[r++] = 1; break;
            case MASK_FULL_BATCH: dims[r++] = Lq; dims[r++] = Lk; break;
            case MASK_SCALAR:     r = 0; dims[r++] = 1; break;
            default: break;
            }
        }
        p->t[o] = oph_tensor(PV_F32, r, dims, NULL);
        p->t[o].data = rand_buf(pvc_numel(&p->t[o]), o == 3 ? 3.0f : 2.0f);
    }
    p->has_mask = mf != MASK_NONE;
    if (p->has_mask && ninf > 0) {   /* never a whole row: that is test_inf_rows' job */
        float *m = p->t[3].data;
        int64_t n = pvc_numel(&p->t[3]), last = p->t[3].dims[p->t[3].rank - 1];
        for (int64_t i = 0; i < n; i++)
            if (last > 1 && i % last != 0 && (int)(rnd() % (uint32_t)ninf) == 0) m[i] = -INFINITY;
    }
    char why[256];
    float scale = (float)(1.0 / sqrt((double)PVC_MAX(D, 1))) * (0.5f + (float)(rnd() % 100) / 50.0f);
    if (!pvk_attn_desc_init(&p->d, &p->t[0], &p->t[1], &p->t[2], p->has_mask ? &p->t[3] : NULL, kt, scale, why,
                            sizeof why))
        fail_msg("desc: %s", why);
    p->ny = p->d.nbatch * Lq * Dv;
    p->yref = malloc((size_t)PVC_MAX(p->ny, 1) * sizeof *p->yref);
    p->scratch = malloc((size_t)PVC_MAX(Lq * Lk, 1) * sizeof *p->scratch);
    pvk_attention_ref_f32(&p->d, p->t[0].data, p->t[1].data, p->t[2].data, p->has_mask ? p->t[3].data : NULL,
                          p->yref, p->scratch);
    snprintf(p->what, sizeof p->what, "Lq %lld Lk %lld D %lld Dv %lld batch %lld (rank %d, bits %x) kt %d mask %d",
             (long long)Lq, (long long)Lk, (long long)D, (long long)Dv, (long long)p->d.nbatch, brank, bcast_bits,
             kt, (int)mf);
}

static void free_problem(problem *p)
{
    for (int o = 0; o < 4; o++) free(p->t[o].data);
    free(p->yref);
    free(p->scratch);
}

static bool close_enough(float a, float b)
{
    if (isnan(b)) return isnan(a);
    return fabsf(a - b) <= 1e-6f + 1e-5f * fabsf(b);
}

/* Runs fn on p (output with guard floats), checks it against the reference; returns the
 * output (caller frees). */
static float *run_check(const pvk_attn_variant *v, pvc_pool *pool, const problem *p)
{
    float *y = malloc((size_t)(p->ny + GUARD) * sizeof *y);
    for (int64_t i = 0; i < p->ny + GUARD; i++) y[i] = guard_value;
    v->fn(pool, &p->d, p->t[0].data, p->t[1].data, p->t[2].data, p->has_mask ? p->t[3].data : NULL, y);
    for (int i = 0; i < GUARD; i++)
        if (y[p->ny + i] != guard_value) fail_msg("%s, %s: wrote past the output", v->name, p->what);
    for (int64_t i = 0; i < p->ny; i++)
        if (!close_enough(y[i], p->yref[i]))
            fail_msg("%s, %s, %s: element %lld is %.9g, reference %.9g", v->name, pool ? "2 threads" : "1 thread",
                     p->what, (long long)i, y[i], p->yref[i]);
    return y;
}

static pvc_pool *pool2(void)
{
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(2, &pool), PV_OK);
    return pool;
}

/* ---- the size grid --------------------------------------------------------------------------- */

static void test_size_grid(void **state)
{
    (void)state;
    pvc_pool *pool = pool2();
    rng_state = 11;
    int n = 0, ran = 0;
    for (int a = 0; a < NSIZES; a++)
        for (int b = 0; b < NSIZES; b++, n++) {
            int64_t D = sizes[a], Dv = sizes[b];
            int64_t Lq = sizes[(a + 2 * b) % NSIZES], Lk = key_sizes[(3 * a + b) % NKEYS];
            problem p;
            make_problem(&p, Lq, Lk, D, Dv, (mask_form)(n % NMASK), n % 2, n % 3, (unsigned)(n * 5) & 0xff, 5);
            for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
                const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
                if (v->isa > pvc_isa_selected()) continue;
                free(run_check(v, n % 4 == 3 ? NULL : pool, &p));
                ran++;
            }
            free_problem(&p);
        }
    assert_true(ran >= NSIZES * NSIZES);
    pvc_pool_free(pool);
}

/* ---- random cases; thread-count independence ------------------------------------------------ */

static void test_random(void **state)
{
    (void)state;
    pvc_pool *pool = pool2();
    rng_state = 1234;
    int trials = getenv("PV_SANITIZED") ? 12 : 40;
    for (int trial = 0; trial < trials; trial++) {
        int64_t Lq = sizes[rnd() % NSIZES] + (trial % 5 == 4 ? 100 : 0);      /* some with 7+ tiles */
        int64_t Lk = key_sizes[rnd() % NKEYS], D = sizes[rnd() % NSIZES], Dv = sizes[rnd() % NSIZES];
        problem p;
        make_problem(&p, Lq, Lk, D, Dv, (mask_form)(rnd() % NMASK), rnd() & 1, (int)(rnd() % 3), rnd() & 0xff,
                     (int)(rnd() % 4) + 2);
        for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
            const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
            if (v->isa > pvc_isa_selected()) continue;
            float *y1 = run_check(v, NULL, &p), *y2 = run_check(v, pool, &p);
            if (memcmp(y1, y2, (size_t)p.ny * sizeof *y1))
                fail_msg("%s, %s: 1 and 2 threads differ", v->name, p.what);
            free(y1);
            free(y2);
        }
        free_problem(&p);
    }
    pvc_pool_free(pool);
}

/* ---- many key blocks ---------------------------------------------------------------------------- */

/* 5000 keys (35 blocks of 144, 40 of 128): a mask rising along the keys makes every block's
 * max the new running max (the rescale path each time), a falling one never; same tolerance. */
static void test_long_keys(void **state)
{
    (void)state;
    pvc_pool *pool = pool2();
    rng_state = 77;
    for (int c = 0; c < 4; c++) {
        int64_t Lq = 33, Lk = 5000;
        problem p;
        make_problem(&p, Lq, Lk, 16, 17, MASK_KEYS_1D, c & 1, 1, 0, 0);
        float *m = p.t[3].data;
        for (int64_t j = 0; j < Lk; j++) m[j] = (c & 2 ? -0.004f : 0.004f) * (float)j + 0.5f * frand();
        pvk_attention_ref_f32(&p.d, p.t[0].data, p.t[1].data, p.t[2].data, m, p.yref, p.scratch);
        for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
            const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
            if (v->isa > pvc_isa_selected()) continue;
            free(run_check(v, pool, &p));
        }
        free_problem(&p);
    }
    pvc_pool_free(pool);
}

/* ---- -inf rows, Lk = 0 ------------------------------------------------------------------------ */

static void test_inf_rows(void **state)
{
    (void)state;
    pvc_pool *pool = pool2();
    rng_state = 99;
    /* Lk 300: keys 0..199 of row 1 are -inf (two whole 128-key blocks and part of a third), row
     * 2 is -inf throughout, row 4 only its last key is finite; other rows unmasked. */
    for (int kt = 0; kt < 2; kt++) {
        int64_t Lq = 20, Lk = 300;
        problem p;
        make_problem(&p, Lq, Lk, 16, 17, MASK_FULL, kt, 1, 0, 0);
        float *m = p.t[3].data;
        for (int64_t i = 0; i < Lq * Lk; i++) m[i] = 0.0f;
        for (int64_t c = 0; c < 200; c++) m[1 * Lk + c] = -INFINITY;
        for (int64_t c = 0; c < Lk; c++) m[2 * Lk + c] = -INFINITY;
        for (int64_t c = 0; c < Lk - 1; c++) m[4 * Lk + c] = -INFINITY;
        pvk_attention_ref_f32(&p.d, p.t[0].data, p.t[1].data, p.t[2].data, m, p.yref, p.scratch);
        for (int64_t b = 0; b < p.d.nbatch; b++)
            for (int64_t e = 0; e < 17; e++) {
                float *yr = p.yref + b * Lq * 17;
                assert_true(isnan(yr[2 * 17 + e]));
                assert_true(isfinite(yr[1 * 17 + e]) && isfinite(yr[4 * 17 + e]));
            }
        for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
            const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
            if (v->isa > pvc_isa_selected()) continue;
            free(run_check(v, pool, &p));      /* NaN where the reference is NaN, else close */
        }
        free_problem(&p);
    }
    /* Lk = 0: the softmax is over nothing, P V is zero; D = 0: every score is 0 (+ mask) */
    for (int kt = 0; kt < 2; kt++) {
        problem p, p0;
        make_problem(&p, 17, 0, 16, 5, MASK_NONE, kt, 1, 0, 0);
        make_problem(&p0, 17, 40, 0, 5, MASK_KEYS_1D, kt, 1, 0, 3);
        for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
            const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
            if (v->isa > pvc_isa_selected()) continue;
            float *y = run_check(v, pool, &p);
            for (int64_t i = 0; i < p.ny; i++) assert_true(y[i] == 0.0f);
            free(y);
            free(run_check(v, pool, &p0));
        }
        free_problem(&p);
        free_problem(&p0);
    }
    pvc_pool_free(pool);
}

/* ---- the kernels' 2^x -------------------------------------------------------------------------- */

/* Over [-130, 0] and odd lengths (the vector tails): within 3 ulp of exp2 down to
 * PVK_ATTN_EXP2_MIN, exactly 0 below it and at -inf, exactly 1 at 0, NaN for NaN. */
static void test_exp2(void **state)
{
    (void)state;
    enum { N = 400001 };
    float *x = malloc(N * sizeof *x), *y = malloc((N + GUARD) * sizeof *y);
    for (int i = 0; i < N; i++) x[i] = -130.0f * (float)i / (float)(N - 1);
    x[1] = -INFINITY;
    x[2] = NAN;
    int tested = 0;
    for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++) {
        const pvk_attn_variant *v = &pvk_attn_f32_variants[vi];
        if (!v->exp2 || v->isa > pvc_isa_selected()) continue;
        for (int64_t n = 1; n <= 33; n++) {     /* tails: only the first n values are written */
            for (int i = 0; i < 40; i++) y[i] = guard_value;
            v->exp2(x + 100, y, n);
            for (int64_t i = 0; i < 40; i++) {
                if (i >= n) assert_true(y[i] == guard_value);
                else assert_true(fabs(y[i] - exp2((double)x[100 + i])) <= 3.6e-7 * exp2((double)x[100 + i]));
            }
        }
        for (int i = 0; i < GUARD; i++) y[N + i] = guard_value;
        v->exp2(x, y, N);
        for (int i = 0; i < GUARD; i++) assert_true(y[N + i] == guard_value);
        assert_true(y[0] == 1.0f && y[1] == 0.0f && isnan(y[2]));
        double worst = 0;
        for (int i = 3; i < N; i++) {
            if (x[i] < PVK_ATTN_EXP2_MIN) {
                if (y[i] != 0.0f) fail_msg("%s: 2^%.9g is %g, not 0", v->name, x[i], y[i]);
                continue;
            }
            double want = exp2((double)x[i]), rel = fabs(y[i] - want) / want;
            worst = rel > worst ? rel : worst;
        }
        if (worst > 3.6e-7) fail_msg("%s: worst relative error %.3g (more than 3 ulp)", v->name, worst);
        tested++;
    }
    if (pvc_isa_selected() >= PVC_ISA_AVX2) assert_true(tested > 0);
    free(x);
    free(y);
}

/* ---- dispatch -------------------------------------------------------------------------------- */

static void test_dispatch(void **state)
{
    (void)state;
    assert_string_equal(pvk_attn_f32_variants[0].name, "blocked");
    for (int vi = 1; vi < pvk_attn_f32_nvariants; vi++)
        assert_true(pvk_attn_f32_variants[vi].isa >= pvk_attn_f32_variants[vi - 1].isa);
    const pvk_attn_variant *top = &pvk_attn_f32_variants[0];
    for (int vi = 0; vi < pvk_attn_f32_nvariants; vi++)
        if (pvk_attn_f32_variants[vi].isa <= pvc_isa_selected()) top = &pvk_attn_f32_variants[vi];
    rng_state = 5;
    const int64_t shapes[][4] = { { 500, 600, 16, 16 }, { 33, 80, 80, 80 }, { 3, 129, 17, 33 }, { 40, 40, 300, 300 } };
    for (int s = 0; s < 4; s++) {
        problem p;
        make_problem(&p, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], MASK_NONE, false, 1, 0, 0);
        const pvk_attn_variant *v = pvk_attn_f32_pick(&p.d);
        assert_true(v->isa <= pvc_isa_selected());
        /* the table in attention.c: the best lane kernel for depth 16, blocked past 128 */
        if (s == 0) assert_ptr_equal(v, top);
        if (s == 3) assert_string_equal(v->name, "blocked");
        float *y = run_check(v, NULL, &p);
        float *yd = malloc((size_t)p.ny * sizeof *yd);
        pvk_attention_f32(NULL, &p.d, p.t[0].data, p.t[1].data, p.t[2].data, NULL, yd);
        if (memcmp(y, yd, (size_t)p.ny * sizeof *y)) fail_msg("%s: pvk_attention_f32 is not %s", p.what, v->name);
        free(y);
        free(yd);
        free_problem(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_grid),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_long_keys),
        cmocka_unit_test(test_inf_rows),
        cmocka_unit_test(test_exp2),
        cmocka_unit_test(test_dispatch),
    };
    printf("isa: %s\n", pvc_isa_name(pvc_isa_selected()));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
