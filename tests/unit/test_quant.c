/* Quantized kernels (kernels/ref/quant.h). Every packed integer-GEMM variant this CPU (as lowered
 * by PERCEIVE_ISA) can run, and the dispatcher pvk_qgemm, against pvk_qgemm_ref: exact equality
 * (integer sums), on random shapes (odd sizes, edges around the 8-row / 48-column tiles, K not a
 * multiple of 4), all four u8/s8 pairs, zero points per tensor / per row of A / per column of B,
 * row strides larger than the rows, inline and on a 3-thread pool, with guard values after and
 * between C's rows that must come back untouched. Also the rounding of the element maps (half
 * to even, saturation, NaN), their AVX-512 rows against the scalar ones (exact), DynamicQuantizeLinear's
 * parameters, requantization, im2col padding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/conv.h"
#include "kernels/ref/quant.h"

#define GUARD 16
#define GUARD_VAL 0x5a5a5a5a

static pvc_pool *pool3;
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(urand() % (uint32_t)(hi - lo + 1)); }

typedef struct qcase {
    int64_t M, N, K, pa, pb, pc;   /* pa/pb/pc: extra row stride */
    pv_dtype at, bt;
    int      za_mode, zb_mode;    /* 0 none, 1 one value, 2 per row / per column */
} qcase;

static void fill8(uint8_t *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = (uint8_t)urand(); }
static int32_t zp_rand(pv_dtype t) { return t == PV_U8 ? (int32_t)irand(0, 255) : (int32_t)irand(-128, 127); }

/* Runs case q on packed variant v (NULL: the dispatcher) and on the reference; asserts equality
 * and the guards. */
static void check(const pvk_qgemm_variant *v, pvc_pool *pool, const qcase *q)
{
    int64_t lda = q->K + q->pa, ldb = q->N + q->pb, ldc = q->N + q->pc;
    size_t na = (size_t)(q->M ? (q->M - 1) * lda + q->K : 0), nb = (size_t)(q->K ? (q->K - 1) * ldb + q->N : 0);
    size_t nc = (size_t)(q->M * ldc) + GUARD;
    uint8_t *A = malloc(na + 1), *B = malloc(nb + 1);
    int32_t *C = malloc(nc * sizeof *C), *R = malloc(nc * sizeof *R);
    int32_t *za = malloc(sizeof(int32_t) * (size_t)(q->M + 1)), *zb = malloc(sizeof(int32_t) * (size_t)(q->N + 1));
    assert_non_null(A); assert_non_null(B); assert_non_null(C); assert_non_null(R); assert_non_null(za); assert_non_null(zb);
    fill8(A, na);
    fill8(B, nb);
    for (int64_t i = 0; i <= q->M; i++) za[i] = zp_rand(q->at);
    for (int64_t i = 0; i <= q->N; i++) zb[i] = zp_rand(q->bt);
    for (size_t i = 0; i < nc; i++) C[i] = R[i] = GUARD_VAL;
    pvk_qmat am = { A, q->at, lda, q->za_mode ? za : NULL, q->za_mode == 2 ? q->M : 1 };
    pvk_qmat bm = { B, q->bt, ldb, q->zb_mode ? zb : NULL, q->zb_mode == 2 ? q->N : 1 };
    pvk_qgemm_ref(NULL, q->M, q->N, q->K, &am, &bm, R, ldc);
    size_t wsb = pvk_qgemm_ws(q->M, q->N, q->K, false);
    void *ws = pvc_malloc_aligned(wsb);
    assert_non_null(ws);
    if (v) {
        pvk_qpacked_a pa;
        pvk_qpacked pb;
        void *bmem = pvc_malloc_aligned(pvk_qpack_bytes(q->K, q->N));
        assert_non_null(bmem);
        pvk_qpack_a(pool, q->M, q->K, &am, ws, &pa);
        pvk_qpack_b(pool, q->K, q->N, &bm, bmem, &pb);
        v->fn(pool, &pa, &pb, C, ldc);
        pvc_free_aligned(bmem);
    } else {
        pvk_qgemm(pool, q->M, q->N, q->K, &am, &bm, NULL, C, ldc, ws);
    }
    pvc_free_aligned(ws);
    for (int64_t m = 0; m < q->M; m++)
        for (int64_t n = 0; n < ldc; n++) {
            int64_t i = m * ldc + n;
            if (C[i] != R[i])
                fail_msg("%s M=%lld N=%lld K=%lld %s x %s za%d zb%d: C[%lld][%lld] = %d, reference %d", v ? v->name : "dispatch",
                         (long long)q->M, (long long)q->N, (long long)q->K, pv_dtype_name(q->at), pv_dtype_name(q->bt),
                         q->za_mode, q->zb_mode, (long long)m, (long long)n, C[i], R[i]);
        }
    for (size_t i = (size_t)(q->M * ldc); i < nc; i++) assert_int_equal(C[i], GUARD_VAL);
    free(A); free(B); free(C); free(R); free(za); free(zb);
}

static void run_all(const qcase *q)
{
    for (int vi = 0; vi < pvk_qgemm_nvariants; vi++) {
        const pvk_qgemm_variant *v = &pvk_qgemm_variants[vi];
        if (!v->usable()) continue;
        check(v, NULL, q);
        check(v, pool3, q);
    }
    check(NULL, pool3, q);
}

static void test_edges(void **state)
{
    (void)state;
    static const int64_t ms[] = { 1, 7, 8, 9, 17 }, ns[] = { 1, 15, 16, 47, 48, 49, 97 }, ks[] = { 1, 3, 4, 5, 64, 67 };
    static const pv_dtype ts[] = { PV_U8, PV_I8 };
    int i = 0;
    for (size_t a = 0; a < PVC_COUNTOF(ms); a++)
        for (size_t b = 0; b < PVC_COUNTOF(ns); b++)
            for (size_t c = 0; c < PVC_COUNTOF(ks); c++, i++) {
                qcase q = { ms[a], ns[b], ks[c], i % 3, (i / 3) % 2, i % 5, ts[i % 2], ts[(i / 2) % 2], i % 3, (i / 3) % 3 };
                run_all(&q);
            }
}

static void test_random(void **state)
{
    (void)state;
    static const pv_dtype ts[] = { PV_U8, PV_I8 };
    for (int i = 0; i < 60; i++) {
        qcase q = { irand(1, 70), irand(1, 130), irand(1, 200), irand(0, 3), irand(0, 3), irand(0, 3),
                    ts[irand(0, 1)], ts[irand(0, 1)], (int)irand(0, 2), (int)irand(0, 2) };
        run_all(&q);
    }
    qcase big = { 64, 200, 2051, 0, 0, 0, PV_I8, PV_U8, 1, 2 };   /* long sums */
    run_all(&big);
}

static void test_maps(void **state)
{
    (void)state;
    const float x[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300.0f, -300.0f, NAN, 127.4f };
    const float one = 1.0f;
    uint8_t yu[10];
    int8_t ys[10];
    int32_t z0 = 0, z10 = 10;
    pvk_quantize_f32(NULL, x, 1, 1, 10, &one, &z0, PV_I8, ys);
    const int8_t es[] = { 0, 2, 2, 0, -2, -2, 127, -128, -128, 127 };
    assert_memory_equal(ys, es, sizeof es);
    pvk_quantize_f32(NULL, x, 1, 1, 10, &one, &z10, PV_U8, yu);
    const uint8_t eu[] = { 10, 12, 12, 10, 8, 8, 255, 0, 0, 137 };
    assert_memory_equal(yu, eu, sizeof eu);
    /* per axis: [2][3] with scales along dim 1 */
    const float xa[] = { 1, 2, 3, 4, 5, 6 }, sa[] = { 1, 2, 4 };
    const int32_t za[] = { 0, 1, 2 };
    uint8_t qa[6];
    pvk_quantize_f32(NULL, xa, 2, 3, 1, sa, za, PV_U8, qa);
    const uint8_t ea[] = { 1, 2, 3, 4, 3, 4 };   /* 3/4 = 0.75 -> 1 + 2; 5/2 = 2.5 -> 2 + 1; 6/4 = 1.5 -> 2 + 2 */
    assert_memory_equal(qa, ea, sizeof ea);
    float d[6];
    pvk_dequantize_f32(NULL, qa, PV_U8, 2, 3, 1, sa, za, d);
    const float ed[] = { 1, 2, 4, 4, 4, 8 };
    assert_memory_equal(d, ed, sizeof ed);
    const int32_t big[] = { INT32_MAX, INT32_MIN };
    float db[2];
    pvk_dequantize_f32(NULL, big, PV_I32, 1, 1, 2, &one, NULL, db);
    assert_true(db[0] == (float)INT32_MAX && db[1] == (float)INT32_MIN);
}

static void test_dynamic(void **state)
{
    (void)state;
    /* The ONNX backend case test_dynamicquantizelinear: scale 5/255, zero point 153. */
    const float x[] = { 0, 2, -3, -2.5f, 1.34f, 0.5f };
    float s;
    uint8_t z;
    pvk_dynquant_params(x, 6, &s, &z);
    assert_true(s == 5.0f / 255.0f);
    assert_int_equal(z, 153);
    const float pos[] = { 1, 2, 3 }, zero[] = { 0, 0 };
    pvk_dynquant_params(pos, 3, &s, &z);   /* range [0, 3] */
    assert_true(s == 3.0f / 255.0f);
    assert_int_equal(z, 0);
    pvk_dynquant_params(zero, 2, &s, &z);   /* empty range: scale 1 */
    assert_true(s == 1.0f);
    assert_int_equal(z, 0);
}

static void test_requant(void **state)
{
    (void)state;
    const int32_t acc[] = { 5, 15, 25, -5, 1000, -1000 };
    const float mult[] = { 0.1f, 0.1f, 0.1f };
    uint8_t y[6];
    pvk_requantize(NULL, acc, 2, 3, mult, 3, 100, PV_U8, y);
    const uint8_t e[] = { 100, 102, 102, 100, 200, 0 };
    assert_memory_equal(y, e, sizeof e);
}

/* The AVX-512 rows against the scalar ones: random sums and floats, exact ties, NaN, +-inf, huge
 * values; per-column and single multipliers; odd lengths for the masked tail; both 8-bit types. */
static void test_rows_twins(void **state)
{
    (void)state;
#if defined(__x86_64__)
    if (pvc_isa_selected() < PVC_ISA_AVX512) {
        print_message("AVX-512 rows not runnable here: skipped\n");
        return;
    }
    enum { N = 77 };
    int32_t acc[N];
    float x[N], mult[N];
    uint8_t ys[N], yv[N];
    for (int rep = 0; rep < 200; rep++) {
        for (int i = 0; i < N; i++) {
            acc[i] = (int32_t)urand() >> irand(0, 31);
            mult[i] = (float)irand(1, 1000) / 4096.0f;
            x[i] = (float)((int32_t)urand() >> irand(0, 31)) / 8.0f;   /* many exact halves */
        }
        x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; x[3] = 2.5f; x[4] = -2.5f; x[5] = 1e30f;
        int64_t n = irand(1, N);
        pv_dtype t = rep % 2 ? PV_U8 : PV_I8;
        int32_t zp = t == PV_U8 ? (int32_t)irand(0, 255) : (int32_t)irand(-128, 127);
        int64_t nm = rep % 3 ? n : 1;
        pvk_requant_row_scalar(acc, n, mult, nm, zp, t, ys);
        pvk_requant_row_avx512(acc, n, mult, nm, zp, t, yv);
        assert_memory_equal(ys, yv, (size_t)n);
        float scale = (float)irand(1, 100) / 64.0f;
        pvk_quant_row_scalar(x, n, scale, zp, t, ys);
        pvk_quant_row_avx512(x, n, scale, zp, t, yv);
        assert_memory_equal(ys, yv, (size_t)n);
    }
#endif
}

static void test_im2col_pad(void **state)
{
    (void)state;
    /* 1 channel 2x2 image, 3x3 kernel, pad 1: the centre tap reads the image, corners the pad. */
    pvk_conv_geom g = { { 1, 2, 2 }, { 1, 2, 2 }, { 1, 3, 3 }, { 1, 1, 1 }, { 1, 1, 1 }, { 0, 1, 1 } };
    const uint8_t x[] = { 1, 2, 3, 4 };
    uint8_t col[9 * 4];
    pvk_im2col_8(NULL, &g, x, 1, 0, 4, 77, col);
    const uint8_t centre[] = { 1, 2, 3, 4 }, corner[] = { 77, 77, 77, 1 };
    assert_memory_equal(col + 4 * 4, centre, 4);
    assert_memory_equal(col, corner, 4);
}

static int setup(void **state)
{
    (void)state;
    return pvc_pool_create(3, &pool3) == PV_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pvc_pool_free(pool3);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_dynamic),
        cmocka_unit_test(test_requant),
        cmocka_unit_test(test_rows_twins),
        cmocka_unit_test(test_im2col_pad),
    };
    for (int i = 0; i < pvk_qgemm_nvariants; i++)
        print_message("qgemm variant %s: %s\n", pvk_qgemm_variants[i].name,
                      pvk_qgemm_variants[i].usable() ? "tested" : "not usable here");
    return cmocka_run_group_tests(tests, setup, teardown);
}
