/* Shape and data-movement operators: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity),
 * Transpose, Concat, Split, Slice, Gather*, Scatter*, Expand, Tile, Pad, Shape, Size, Constant,
 * ConstantOfShape, Range, OneHot, CumSum, NonZero, and the strided-copy kernel. Expectations are
 * hand-computed (many from the ONNX spec's examples) or come from naive index math written
 * here, independent of the kernels' coalescing and tiling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "op_harness.h"
#include "kernels/ref/movement.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static pvc_tensor ten(pv_dtype t, int rank, const int64_t *dims, const void *data)
{
    return oph_tensor(t, rank, dims, (void *)data);
}

static pvc_tensor absent(void)
{
    pvc_tensor t;
    memset(&t, 0, sizeof t);
    t.rank = -1;
    return t;
}

static pv_status run_status(const char *op, int opset, const pvc_tensor *in, int nin, unsigned cmask,
                            int nout, const oph_attr *at, int nat, const char *want_msg)
{
    oph_result r = oph_run(op, opset, in, nin, cmask, nout, at, nat);
    const char *m = r.status == PV_OK ? "" : r.msg.text[0] ? r.msg.text : pv_last_error();
    if (want_msg && !strstr(m, want_msg)) fail_msg("%s: message '%s' lacks '%s'", op, m, want_msg);
    oph_free(&r);
    return r.status;
}

static void expect_f32(const pvc_tensor *t, const float *want, int n)
{
    assert_int_equal(pvc_numel(t), n);
    for (int i = 0; i < n; i++)
        if (((const float *)t->data)[i] != want[i])
            fail_msg("[%d]: got %g want %g", i, ((const float *)t->data)[i], want[i]);
}

static void expect_i64(const pvc_tensor *t, const int64_t *want, int n)
{
    assert_int_equal(pvc_numel(t), n);
    for (int i = 0; i < n; i++)
        if (pvc_get_i64(t->data, t->dtype, i) != want[i])
            fail_msg("[%d]: got %lld want %lld", i, (long long)pvc_get_i64(t->data, t->dtype, i), (long long)want[i]);
}

/* ---- views ------------------------------------------------------------------------------- */

static void test_reshape(void **state)
{
    (void)state;
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t sh[] = { 0, -1, 2 };
    pvc_tensor in[2] = { ten(PV_F32, 3, DIMS(2, 3, 4), x), ten(PV_I64, 1, DIMS(3), sh) };
    oph_result r = oph_run_ok("Reshape", 14, in, 2, 3u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 3, DIMS(2, 6, 2));
    expect_f32(&r.out[0], x, 24);
    oph_free(&r);
    assert_true(pvg_op_lookup("", "Reshape")->flags & PVG_OP_ALIAS);

    /* allowzero=1: 0 is a real zero dim */
    int64_t z[] = { 0, 4 };
    pvc_tensor e[2] = { ten(PV_F32, 2, DIMS(0, 4), x), ten(PV_I64, 1, DIMS(2), z) };
    oph_attr az[] = { OPH_INT("allowzero", 1) };
    r = oph_run_ok("Reshape", 14, e, 2, 3u, 1, az, 1);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(0, 4));
    oph_free(&r);

    /* int32 shape, scalar target */
    int32_t s32[] = { 1, 1 };
    pvc_tensor one[2] = { ten(PV_F32, 1, DIMS(1), x), ten(PV_I32, 1, DIMS(2), s32) };
    r = oph_run_ok("Reshape", 13, one, 2, 3u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(1, 1));
    oph_free(&r);

    int64_t two_infer[] = { -1, -1 }, bad_count[] = { 5, 5 }, neg[] = { -2, 12 }, zneg[] = { 0, -1 };
    in[1] = ten(PV_I64, 1, DIMS(2), two_infer);
    assert_int_equal(run_status("Reshape", 14, in, 2, 3u, 1, NULL, 0, "more than one -1"), PV_EFORMAT);
    in[1] = ten(PV_I64, 1, DIMS(2), bad_count);
    assert_int_equal(run_status("Reshape", 14, in, 2, 3u, 1, NULL, 0, "cannot reshape"), PV_EFORMAT);
    in[1] = ten(PV_I64, 1, DIMS(2), neg);
    assert_int_equal(run_status("Reshape", 14, in, 2, 3u, 1, NULL, 0, NULL), PV_EFORMAT);
    in[1] = ten(PV_I64, 1, DIMS(2), zneg);
    assert_int_equal(run_status("Reshape", 14, in, 2, 3u, 1, az, 1, "allowzero"), PV_EFORMAT);
    oph_attr az2[] = { OPH_INT("allowzero", 2) };
    assert_int_equal(run_status("Reshape", 14, in, 2, 3u, 1, az2, 1, "allowzero"), PV_EFORMAT);
    /* shape computed at run time: refused as data-dependent */
    in[1] = ten(PV_I64, 1, DIMS(3), sh);
    assert_int_equal(run_status("Reshape", 14, in, 2, 1u, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
}

static void test_flatten_squeeze_unsqueeze_identity(void **state)
{
    (void)state;
    uint8_t x[120];
    for (int i = 0; i < 120; i++) x[i] = (uint8_t)i;
    pvc_tensor in = ten(PV_U8, 4, DIMS(2, 3, 4, 5), x);
    struct { int64_t axis; int64_t d0, d1; } fl[] = { { 0, 1, 120 }, { 1, 2, 60 }, { 4, 120, 1 }, { -1, 24, 5 }, { -4, 1, 120 } };
    for (int i = 0; i < N(fl); i++) {
        oph_attr a[] = { OPH_INT("axis", fl[i].axis) };
        oph_result r = oph_run_ok("Flatten", 13, &in, 1, 0, 1, a, 1);
        oph_expect_shape(&r.out[0], PV_U8, 2, DIMS(fl[i].d0, fl[i].d1));
        assert_memory_equal(r.out[0].data, x, 120);
        oph_free(&r);
    }
    oph_attr bad[] = { OPH_INT("axis", 5) };
    assert_int_equal(run_status("Flatten", 13, &in, 1, 0, 1, bad, 1, "'axis'"), PV_EFORMAT);

    /* Squeeze: all 1-dims, or the given (negative) axes */
    pvc_tensor s[2] = { ten(PV_U8, 5, DIMS(1, 3, 1, 4, 1), x), absent() };
    oph_result r = oph_run_ok("Squeeze", 13, s, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_U8, 2, DIMS(3, 4));
    oph_free(&r);
    int64_t ax[] = { -1, 0 };
    s[1] = ten(PV_I64, 1, DIMS(2), ax);
    r = oph_run_ok("Squeeze", 13, s, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_U8, 3, DIMS(3, 1, 4));
    oph_free(&r);
    int64_t ax_bad[] = { 1 }, ax_dup[] = { 0, -5 };
    s[1] = ten(PV_I64, 1, DIMS(1), ax_bad);
    assert_int_equal(run_status("Squeeze", 13, s, 2, 2u, 1, NULL, 0, "size 3"), PV_EFORMAT);
    s[1] = ten(PV_I64, 1, DIMS(2), ax_dup);
    assert_int_equal(run_status("Squeeze", 13, s, 2, 2u, 1, NULL, 0, "repeated"), PV_EFORMAT);
    /* opset 11: axes attribute */
    oph_attr sa[] = { OPH_INTS("axes", ax, 2) };
    r = oph_run_ok("Squeeze", 11, s, 1, 0, 1, sa, 1);
    oph_expect_shape(&r.out[0], PV_U8, 3, DIMS(3, 1, 4));
    oph_free(&r);

    /* Unsqueeze: axes refer to the output rank, any order */
    int64_t ua[] = { 4, 0, -2 };
    pvc_tensor u[2] = { ten(PV_U8, 2, DIMS(3, 4), x), ten(PV_I64, 1, DIMS(3), ua) };
    r = oph_run_ok("Unsqueeze", 13, u, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_U8, 5, DIMS(1, 3, 4, 1, 1));
    oph_free(&r);
    int64_t ua_dup[] = { 1, -3 }, ua_far[] = { 4 };
    u[1] = ten(PV_I64, 1, DIMS(2), ua_dup);
    assert_int_equal(run_status("Unsqueeze", 13, u, 2, 2u, 1, NULL, 0, "repeated"), PV_EFORMAT);
    u[1] = ten(PV_I64, 1, DIMS(1), ua_far);
    assert_int_equal(run_status("Unsqueeze", 13, u, 2, 2u, 1, NULL, 0, NULL), PV_EFORMAT);
    assert_int_equal(run_status("Unsqueeze", 13, u, 1, 0, 1, NULL, 0, "required"), PV_EFORMAT);
    pvc_tensor big[2] = { ten(PV_U8, 7, DIMS(1, 1, 1, 1, 1, 1, 1), x), ten(PV_I64, 1, DIMS(2), ua_dup) };
    assert_int_equal(run_status("Unsqueeze", 13, big, 2, 2u, 1, NULL, 0, "rank"), PV_EUNSUPPORTED);

    oph_result id = oph_run_ok("Identity", 13, &in, 1, 0, 1, NULL, 0);
    oph_expect_shape(&id.out[0], PV_U8, 4, DIMS(2, 3, 4, 5));
    assert_memory_equal(id.out[0].data, x, 120);
    oph_free(&id);
    /* the views' run copies when asked to evaluate into another buffer (constant folding) */
    const pvg_op *op = pvg_op_lookup("", "Identity");
    uint8_t y[120] = { 0 };
    pvc_tensor o = ten(PV_U8, 4, DIMS(2, 3, 4, 5), y);
    pvg_exec ex = { NULL, NULL, &in, 1, &o, 1, NULL, NULL };
    assert_int_equal(op->run(&ex), PV_OK);
    assert_memory_equal(y, x, 120);
}

/* ---- Transpose and the strided copy ------------------------------------------------------ */

/* Naive transpose by index math, any element size. */
static void naive_transpose(const unsigned char *x, unsigned char *y, int r, const int64_t *d, const int *perm, size_t es)
{
    int64_t n = 1, st[PV_MAX_RANK], od[PV_MAX_RANK], idx[PV_MAX_RANK];
    for (int i = 0; i < r; i++) n *= d[i];
    pvk_contig_strides(r, d, st);
    for (int i = 0; i < r; i++) od[i] = d[perm[i]];
    for (int64_t o = 0; o < n; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) {
            idx[i] = rem % od[i];
            rem /= od[i];
        }
        for (int i = 0; i < r; i++) src += idx[i] * st[perm[i]];
        memcpy(y + o * (int64_t)es, x + src * (int64_t)es, es);
    }
}

static void test_transpose(void **state)
{
    (void)state;
    /* default perm reverses: [2,3] -> [3,2] */
    int32_t m[] = { 1, 2, 3, 4, 5, 6 };
    pvc_tensor in = ten(PV_I32, 2, DIMS(2, 3), m);
    oph_result r = oph_run_ok("Transpose", 13, &in, 1, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 2, DIMS(3, 2));
    expect_i64(&r.out[0], (const int64_t[]){ 1, 4, 2, 5, 3, 6 }, 6);
    oph_free(&r);

    /* every dtype size, shapes big enough for the tiled path, odd edges */
    static const pv_dtype dts[] = { PV_F32, PV_F16, PV_BF16, PV_I64, PV_I32, PV_I8, PV_U8, PV_BOOL };
    struct { int r; int64_t d[4]; int perm[4]; } cases[] = {
        { 4, { 2, 37, 45, 19 }, { 0, 2, 3, 1 } }, { 4, { 2, 19, 45, 37 }, { 0, 3, 1, 2 } },
        { 4, { 3, 5, 7, 9 }, { 3, 2, 1, 0 } },    { 3, { 33, 1, 70 }, { 2, 1, 0 } },
        { 4, { 1, 8, 20, 16 }, { 0, 2, 1, 3 } },  { 2, { 100, 3 }, { 1, 0 } },
    };
    for (int di = 0; di < N(dts); di++)
        for (int c = 0; c < N(cases); c++) {
            size_t es = pv_dtype_size(dts[di]);
            int64_t n = 1;
            for (int i = 0; i < cases[c].r; i++) n *= cases[c].d[i];
            unsigned char *x = malloc((size_t)n * es), *want = malloc((size_t)n * es);
            for (int64_t i = 0; i < n * (int64_t)es; i++) x[i] = (unsigned char)(i * 7 + i / 5);
            if (dts[di] == PV_BOOL)
                for (int64_t i = 0; i < n; i++) x[i] &= 1;
            naive_transpose(x, want, cases[c].r, cases[c].d, cases[c].perm, es);
            int64_t perm64[4];
            for (int i = 0; i < cases[c].r; i++) perm64[i] = cases[c].perm[i];
            oph_attr a[] = { OPH_INTS("perm", perm64, cases[c].r) };
            pvc_tensor t = ten(dts[di], cases[c].r, cases[c].d, x);
            r = oph_run_ok("Transpose", 13, &t, 1, 0, 1, a, 1);
            for (int i = 0; i < cases[c].r; i++) assert_int_equal(r.out[0].dims[i], cases[c].d[cases[c].perm[i]]);
            assert_memory_equal(r.out[0].data, want, (size_t)n * es);
            oph_free(&r);
            free(x);
            free(want);
        }

    int64_t bad_len[] = { 1, 0, 2 }, dup[] = { 0, 0 }, oob[] = { 0, 2 };
    oph_attr a1[] = { OPH_INTS("perm", bad_len, 3) }, a2[] = { OPH_INTS("perm", dup, 2) }, a3[] = { OPH_INTS("perm", oob, 2) };
    assert_int_equal(run_status("Transpose", 13, &in, 1, 0, 1, a1, 1, "'perm'"), PV_EFORMAT);
    assert_int_equal(run_status("Transpose", 13, &in, 1, 0, 1, a2, 1, "repeats"), PV_EFORMAT);
    assert_int_equal(run_status("Transpose", 13, &in, 1, 0, 1, a3, 1, NULL), PV_EFORMAT);
}

/* pvk_copy_view on a pool: transposes, broadcasts and reversed strides vs naive index math. */
static void test_copy_view_pool(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    int64_t d[4] = { 3, 64, 50, 40 }, n = 3 * 64 * 50 * 40, st[4];
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *w = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i;
    pvk_contig_strides(4, d, st);
    const int perms[][4] = { { 0, 2, 3, 1 }, { 0, 3, 1, 2 }, { 1, 0, 2, 3 }, { 3, 2, 1, 0 }, { 0, 1, 2, 3 } };
    for (int p = 0; p < N(perms); p++) {
        pvk_view v;
        v.rank = 4;
        for (int i = 0; i < 4; i++) {
            v.dims[i] = d[perms[p][i]];
            v.strides[i] = st[perms[p][i]];
        }
        naive_transpose((const unsigned char *)x, (unsigned char *)w, 4, d, perms[p], 4);
        memset(y, 0, (size_t)n * 4);
        pvk_copy_view(pool, y, x, 4, &v);
        assert_memory_equal(y, w, (size_t)n * 4);
    }
    /* reversed last two dims (negative strides) + broadcast of a new leading dim */
    pvk_view v = { .rank = 4, .dims = { 2, 3, 32, 2000 }, .strides = { 0, 128000, -2000, -1 } };
    pvk_copy_view(pool, y, x + 31 * 2000 + 1999, 4, &v);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 32; j++)
                for (int64_t k = 0; k < 2000; k += 333)
                    assert_true(y[((b * 3 + i) * 32 + j) * 2000 + k] == x[i * 128000 + (31 - j) * 2000 + (1999 - k)]);
    /* big contiguous copy and fill */
    pvk_copy_bytes(pool, y, x, (size_t)n * 4);
    assert_memory_equal(y, x, (size_t)n * 4);
    float v7 = 7.5f;
    pvk_fill(y, &v7, 4, 1001);
    for (int i = 0; i < 1001; i++) assert_true(y[i] == 7.5f);
    free(x);
    free(y);
    free(w);
    pvc_pool_free(pool);
}

/* ---- Concat / Split ---------------------------------------------------------------------- */

static void test_concat(void **state)
{
    (void)state;
    int16_t a[] = { 1, 2, 3, 4 }, b[] = { 5, 6 }, c[] = { 0 };
    pvc_tensor in[3] = { ten(PV_F16, 2, DIMS(2, 2), a), ten(PV_F16, 2, DIMS(2, 1), b), ten(PV_F16, 2, DIMS(2, 0), c) };
    oph_attr ax[] = { OPH_INT("axis", -1) };
    oph_result r = oph_run_ok("Concat", 13, in, 3, 0, 1, ax, 1);
    oph_expect_shape(&r.out[0], PV_F16, 2, DIMS(2, 3));
    int16_t want[] = { 1, 2, 5, 3, 4, 6 };
    assert_memory_equal(r.out[0].data, want, sizeof want);
    oph_free(&r);

    int64_t p[] = { 1, 2 }, q[] = { 3, 4, 5, 6 };
    pvc_tensor in0[2] = { ten(PV_I64, 2, DIMS(1, 2), p), ten(PV_I64, 2, DIMS(2, 2), q) };
    oph_attr a0[] = { OPH_INT("axis", 0) };
    r = oph_run_ok("Concat", 13, in0, 2, 0, 1, a0, 1);
    oph_expect_shape(&r.out[0], PV_I64, 2, DIMS(3, 2));
    expect_i64(&r.out[0], (const int64_t[]){ 1, 2, 3, 4, 5, 6 }, 6);
    oph_free(&r);

    assert_int_equal(run_status("Concat", 13, in0, 2, 0, 1, NULL, 0, "'axis'"), PV_EFORMAT);
    assert_int_equal(run_status("Concat", 13, in0, 2, 0, 1, ax, 1, "dim 0"), PV_EFORMAT);   /* 1 vs 2 rows */
    in0[1] = ten(PV_I32, 2, DIMS(1, 2), q);
    assert_int_equal(run_status("Concat", 13, in0, 2, 0, 1, a0, 1, "int32"), PV_EFORMAT);
    in0[1] = ten(PV_I64, 1, DIMS(2), q);
    assert_int_equal(run_status("Concat", 13, in0, 2, 0, 1, a0, 1, "rank"), PV_EFORMAT);
}

static void test_split(void **state)
{
    (void)state;
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    /* 'split' input, axis 1 of [2, 6]: [1, 2, 3] */
    int64_t sp[] = { 1, 2, 3 };
    pvc_tensor in[2] = { ten(PV_F32, 2, DIMS(2, 6), x), ten(PV_I64, 1, DIMS(3), sp) };
    oph_attr ax[] = { OPH_INT("axis", -1) };
    oph_result r = oph_run_ok("Split", 13, in, 2, 2u, 3, ax, 1);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(2, 1));
    oph_expect_shape(&r.out[2], PV_F32, 2, DIMS(2, 3));
    expect_f32(&r.out[0], (const float[]){ 0, 6 }, 2);
    expect_f32(&r.out[1], (const float[]){ 1, 2, 7, 8 }, 4);
    expect_f32(&r.out[2], (const float[]){ 3, 4, 5, 9, 10, 11 }, 6);
    oph_free(&r);

    /* equal parts, default axis 0 */
    r = oph_run_ok("Split", 13, in, 1, 0, 2, NULL, 0);
    expect_f32(&r.out[1], x + 6, 6);
    oph_free(&r);
    /* opset 11: 'split' attribute */
    int64_t sa[] = { 4, 2 };
    oph_attr a11[] = { OPH_INT("axis", 1), OPH_INTS("split", sa, 2) };
    r = oph_run_ok("Split", 11, in, 1, 0, 2, a11, 2);
    expect_f32(&r.out[1], (const float[]){ 4, 5, 10, 11 }, 4);
    oph_free(&r);
    /* opset 18 num_outputs: ceil-sized parts, last smaller (6 -> 3 parts of 2; 6 -> 4: 2,2,2,0) */
    oph_attr no[] = { OPH_INT("axis", 1), OPH_INT("num_outputs", 4) };
    r = oph_run_ok("Split", 18, in, 1, 0, 4, no, 2);
    oph_expect_shape(&r.out[2], PV_F32, 2, DIMS(2, 2));
    oph_expect_shape(&r.out[3], PV_F32, 2, DIMS(2, 0));
    expect_f32(&r.out[2], (const float[]){ 4, 5, 10, 11 }, 4);
    oph_free(&r);
    oph_attr no5[] = { OPH_INT("axis", 1), OPH_INT("num_outputs", 5) };
    r = oph_run_ok("Split", 18, in, 1, 0, 5, no5, 2);
    oph_expect_shape(&r.out[4], PV_F32, 2, DIMS(2, 0));
    oph_free(&r);

    assert_int_equal(run_status("Split", 13, in, 1, 0, 4, ax, 1, "equal parts"), PV_EFORMAT);
    int64_t bad[] = { 1, 2, 4 };
    in[1] = ten(PV_I64, 1, DIMS(3), bad);
    assert_int_equal(run_status("Split", 13, in, 2, 2u, 3, ax, 1, "sum"), PV_EFORMAT);
    assert_int_equal(run_status("Split", 13, in, 2, 2u, 2, ax, 1, "3 values for 2 outputs"), PV_EFORMAT);
    assert_int_equal(run_status("Split", 13, in, 2, 0, 3, ax, 1, "data-dependent"), PV_EUNSUPPORTED);
    oph_attr no2[] = { OPH_INT("num_outputs", 3) };
    assert_int_equal(run_status("Split", 18, in, 1, 0, 2, no2, 1, "num_outputs"), PV_EFORMAT);
}

/* ---- Slice ------------------------------------------------------------------------------- */

static void test_slice(void **state)
{
    (void)state;
    float x[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    /* spec example 1: axes [0,1], starts [1,0], ends [2,3], steps [1,2] -> [[5,7]] */
    int64_t st[] = { 1, 0 }, en[] = { 2, 3 }, ax[] = { 0, 1 }, sp[] = { 1, 2 };
    pvc_tensor in[5] = { ten(PV_F32, 2, DIMS(2, 4), x), ten(PV_I64, 1, DIMS(2), st), ten(PV_I64, 1, DIMS(2), en),
                         ten(PV_I64, 1, DIMS(2), ax), ten(PV_I64, 1, DIMS(2), sp) };
    oph_result r = oph_run_ok("Slice", 13, in, 5, 0x1eu, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(1, 2));
    expect_f32(&r.out[0], (const float[]){ 5, 7 }, 2);
    oph_free(&r);

    /* spec example 2: starts [0,1], ends [-1,1000] -> [[2,3,4]] (no axes, no steps) */
    int64_t st2[] = { 0, 1 }, en2[] = { -1, 1000 };
    in[1] = ten(PV_I64, 1, DIMS(2), st2);
    in[2] = ten(PV_I64, 1, DIMS(2), en2);
    r = oph_run_ok("Slice", 13, in, 3, 6u, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 2, 3, 4 }, 3);
    oph_free(&r);

    /* negative step with INT64_MIN end on axis -1, int32 inputs: reverse each row */
    int32_t s3[] = { -1 }, a3[] = { -1 }, p3[] = { -1 };
    int64_t e3[] = { INT64_MIN };
    pvc_tensor rv[5] = { in[0], ten(PV_I32, 1, DIMS(1), s3), ten(PV_I64, 1, DIMS(1), e3), ten(PV_I32, 1, DIMS(1), a3),
                         ten(PV_I32, 1, DIMS(1), p3) };
    r = oph_run_ok("Slice", 13, rv, 5, 0x1eu, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 4, 3, 2, 1, 8, 7, 6, 5 }, 8);
    oph_free(&r);

    /* step -2 from 3 down to (exclusive) 0; INT64_MAX start clamps to dim-1 */
    int64_t s4[] = { INT64_MAX }, e4[] = { 0 }, a4[] = { 1 }, p4[] = { -2 };
    pvc_tensor n4[5] = { in[0], ten(PV_I64, 1, DIMS(1), s4), ten(PV_I64, 1, DIMS(1), e4), ten(PV_I64, 1, DIMS(1), a4),
                         ten(PV_I64, 1, DIMS(1), p4) };
    r = oph_run_ok("Slice", 13, n4, 5, 0x1eu, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(2, 2));
    expect_f32(&r.out[0], (const float[]){ 4, 2, 8, 6 }, 4);
    oph_free(&r);

    /* empty results: start past the end; INT64_MIN step selects one element */
    int64_t s5[] = { 5 }, e5[] = { INT64_MAX };
    pvc_tensor n5[4] = { in[0], ten(PV_I64, 1, DIMS(1), s5), ten(PV_I64, 1, DIMS(1), e5), ten(PV_I64, 1, DIMS(1), a4) };
    r = oph_run_ok("Slice", 13, n5, 4, 0xeu, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(2, 0));
    oph_free(&r);
    int64_t s6[] = { -1 }, e6[] = { INT64_MIN }, p6[] = { INT64_MIN };
    pvc_tensor n6[5] = { in[0], ten(PV_I64, 1, DIMS(1), s6), ten(PV_I64, 1, DIMS(1), e6), ten(PV_I64, 1, DIMS(1), a4),
                         ten(PV_I64, 1, DIMS(1), p6) };
    r = oph_run_ok("Slice", 13, n6, 5, 0x1eu, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 4, 8 }, 2);
    oph_free(&r);

    /* errors: zero step, repeated axis, non-constant starts, length mismatch */
    int64_t zero[] = { 0, 1 }, rep[] = { 1, -1 };
    in[1] = ten(PV_I64, 1, DIMS(2), st);
    in[2] = ten(PV_I64, 1, DIMS(2), en);
    in[4] = ten(PV_I64, 1, DIMS(2), zero);
    assert_int_equal(run_status("Slice", 13, in, 5, 0x1eu, 1, NULL, 0, "is 0"), PV_EFORMAT);
    in[4] = ten(PV_I64, 1, DIMS(2), sp);
    in[3] = ten(PV_I64, 1, DIMS(2), rep);
    assert_int_equal(run_status("Slice", 13, in, 5, 0x1eu, 1, NULL, 0, "repeated"), PV_EFORMAT);
    in[3] = ten(PV_I64, 1, DIMS(2), ax);
    assert_int_equal(run_status("Slice", 13, in, 5, 0x1cu, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
    in[2] = ten(PV_I64, 1, DIMS(1), en);
    assert_int_equal(run_status("Slice", 13, in, 5, 0x1eu, 1, NULL, 0, "'ends'"), PV_EFORMAT);
}

/* ---- Gather family ----------------------------------------------------------------------- */

static void test_gather(void **state)
{
    (void)state;
    /* axis 1, negative and int32 indices of shape [1,3] */
    float x[] = { 1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f };
    int32_t idx[] = { 0, 2, -1 };
    pvc_tensor in[2] = { ten(PV_F32, 2, DIMS(3, 3), x), ten(PV_I32, 2, DIMS(1, 3), idx) };
    oph_attr a1[] = { OPH_INT("axis", 1) };
    oph_result r = oph_run_ok("Gather", 13, in, 2, 0, 1, a1, 1);
    oph_expect_shape(&r.out[0], PV_F32, 3, DIMS(3, 1, 3));
    expect_f32(&r.out[0], (const float[]){ 1.0f, 1.9f, 1.9f, 2.3f, 3.9f, 3.9f, 4.5f, 5.9f, 5.9f }, 9);
    oph_free(&r);

    /* axis 0 with a scalar index: drops the dim */
    int64_t k = -2;
    in[1] = ten(PV_I64, 0, NULL, &k);
    r = oph_run_ok("Gather", 13, in, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 1, DIMS(3));
    expect_f32(&r.out[0], (const float[]){ 2.3f, 3.4f, 3.9f }, 3);
    oph_free(&r);

    /* bool data, every element size */
    uint8_t b[] = { 1, 0, 0, 1, 1, 0 };
    int64_t bi[] = { 1, 1, 0 };
    pvc_tensor bin[2] = { ten(PV_BOOL, 2, DIMS(3, 2), b), ten(PV_I64, 1, DIMS(3), bi) };
    r = oph_run_ok("Gather", 13, bin, 2, 0, 1, NULL, 0);
    uint8_t bw[] = { 0, 1, 0, 1, 1, 0 };
    assert_memory_equal(r.out[0].data, bw, 6);
    oph_free(&r);

    /* out-of-range index at run time: PV_EINPUT, zeroed output, no read out of bounds */
    int64_t bad[] = { 0, 7 };
    in[1] = ten(PV_I64, 1, DIMS(2), bad);
    r = oph_run("Gather", 13, in, 2, 0, 1, a1, 1);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "Gather: index 7 out of range [-3,3)"));
    for (int i = 0; i < 6; i++) assert_true(((float *)r.out[0].data)[i] == 0.0f);
    oph_free(&r);

    oph_attr a9[] = { OPH_INT("axis", 2) };
    assert_int_equal(run_status("Gather", 13, in, 2, 0, 1, a9, 1, "'axis'"), PV_EFORMAT);
    in[1] = ten(PV_F32, 1, DIMS(2), x);
    assert_int_equal(run_status("Gather", 13, in, 2, 0, 1, NULL, 0, "dtype"), PV_EUNSUPPORTED);
}

static void test_gather_elements(void **state)
{
    (void)state;
    /* spec: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 -> [[1,1],[4,3]] */
    int32_t x[] = { 1, 2, 3, 4 };
    int64_t idx[] = { 0, 0, 1, 0 };
    pvc_tensor in[2] = { ten(PV_I32, 2, DIMS(2, 2), x), ten(PV_I64, 2, DIMS(2, 2), idx) };
    oph_attr a1[] = { OPH_INT("axis", 1) };
    oph_result r = oph_run_ok("GatherElements", 13, in, 2, 0, 1, a1, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 1, 4, 3 }, 4);
    oph_free(&r);

    /* spec: axis 0, indices [[1,2,0],[2,0,0]] (negative form) over 3x3 -> [[4,8,3],[7,2,3]] */
    float y[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    int32_t i2[] = { 1, -1, 0, -1, 0, 0 };
    pvc_tensor in2[2] = { ten(PV_F32, 2, DIMS(3, 3), y), ten(PV_I32, 2, DIMS(2, 3), i2) };
    r = oph_run_ok("GatherElements", 13, in2, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(2, 3));
    expect_f32(&r.out[0], (const float[]){ 4, 8, 3, 7, 2, 3 }, 6);
    oph_free(&r);

    int64_t bad[] = { 0, 2, 1, 0 };
    in[1] = ten(PV_I64, 2, DIMS(2, 2), bad);
    r = oph_run("GatherElements", 13, in, 2, 0, 1, a1, 1);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "index 2 out of range [-2,2)"));
    oph_free(&r);
    in[1] = ten(PV_I64, 1, DIMS(4), bad);
    assert_int_equal(run_status("GatherElements", 13, in, 2, 0, 1, a1, 1, "rank"), PV_EFORMAT);
    in[1] = ten(PV_I64, 2, DIMS(1, 4), bad);
    assert_int_equal(run_status("GatherElements", 13, in, 2, 0, 1, NULL, 0, "larger"), PV_EFORMAT);
}

static void test_gather_nd(void **state)
{
    (void)state;
    /* spec example 3: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[0,1],[1,0]] -> [[2,3],[4,5]] */
    int32_t x[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    int64_t i3[] = { 0, 1, 1, 0 };
    pvc_tensor in[2] = { ten(PV_I32, 3, DIMS(2, 2, 2), x), ten(PV_I64, 2, DIMS(2, 2), i3) };
    oph_result r = oph_run_ok("GatherND", 13, in, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 2, DIMS(2, 2));
    expect_i64(&r.out[0], (const int64_t[]){ 2, 3, 4, 5 }, 4);
    oph_free(&r);

    /* spec example 4: indices [[[0,1]],[[1,0]]] -> [[[2,3]],[[4,5]]] */
    in[1] = ten(PV_I64, 3, DIMS(2, 1, 2), i3);
    r = oph_run_ok("GatherND", 13, in, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 3, DIMS(2, 1, 2));
    oph_free(&r);

    /* spec example 5: batch_dims 1, indices [[1],[0]] -> [[2,3],[4,5]]; negative form */
    int64_t i5[] = { -1, 0 };
    in[1] = ten(PV_I64, 2, DIMS(2, 1), i5);
    oph_attr b1[] = { OPH_INT("batch_dims", 1) };
    r = oph_run_ok("GatherND", 13, in, 2, 0, 1, b1, 1);
    oph_expect_shape(&r.out[0], PV_I32, 2, DIMS(2, 2));
    expect_i64(&r.out[0], (const int64_t[]){ 2, 3, 4, 5 }, 4);
    oph_free(&r);

    /* full-rank tuples: each picks one element */
    int32_t i6[] = { 1, 1, 1, 0, 0, 1 };
    in[1] = ten(PV_I32, 2, DIMS(2, 3), i6);
    r = oph_run_ok("GatherND", 13, in, 2, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 1, DIMS(2));
    expect_i64(&r.out[0], (const int64_t[]){ 7, 1 }, 2);
    oph_free(&r);

    int64_t bad[] = { 0, 2 };
    in[1] = ten(PV_I64, 2, DIMS(1, 2), bad);
    r = oph_run("GatherND", 13, in, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "GatherND: index 2 out of range"));
    oph_free(&r);
    in[1] = ten(PV_I64, 2, DIMS(1, 4), i3);
    assert_int_equal(run_status("GatherND", 13, in, 2, 0, 1, NULL, 0, "last dim"), PV_EFORMAT);
    oph_attr b3[] = { OPH_INT("batch_dims", 3) };
    assert_int_equal(run_status("GatherND", 13, in, 2, 0, 1, b3, 1, "batch_dims"), PV_EFORMAT);
}

/* ---- Scatter family ---------------------------------------------------------------------- */

static void test_scatter_nd(void **state)
{
    (void)state;
    /* spec example 1: data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12] */
    float x[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, u[] = { 9, 10, 11, 12 };
    int64_t idx[] = { 4, 3, 1, 7 };
    pvc_tensor in[3] = { ten(PV_F32, 1, DIMS(8), x), ten(PV_I64, 2, DIMS(4, 1), idx), ten(PV_F32, 1, DIMS(4), u) };
    oph_result r = oph_run_ok("ScatterND", 13, in, 3, 0, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 1, 11, 3, 10, 9, 6, 7, 12 }, 8);
    oph_free(&r);

    /* reduction add with a duplicate index (and a negative one) */
    int64_t dup[] = { 1, -7, 0, 7 };
    in[1] = ten(PV_I64, 2, DIMS(4, 1), dup);
    oph_attr add[] = { OPH_STR("reduction", "add") }, mul[] = { OPH_STR("reduction", "mul") },
             mx[] = { OPH_STR("reduction", "max") };
    r = oph_run_ok("ScatterND", 16, in, 3, 0, 1, add, 1);
    expect_f32(&r.out[0], (const float[]){ 12, 21, 3, 4, 5, 6, 7, 20 }, 8);
    oph_free(&r);
    r = oph_run_ok("ScatterND", 16, in, 3, 0, 1, mul, 1);
    expect_f32(&r.out[0], (const float[]){ 11, 180, 3, 4, 5, 6, 7, 96 }, 8);
    oph_free(&r);

    /* slices: data [2,2,2] int8, indices [[1]] replace the second [2,2] block; max on int */
    int8_t d8[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, u8[] = { 9, 0, 9, 0 };
    int64_t i1[] = { 1 };
    pvc_tensor s[3] = { ten(PV_I8, 3, DIMS(2, 2, 2), d8), ten(PV_I64, 2, DIMS(1, 1), i1), ten(PV_I8, 3, DIMS(1, 2, 2), u8) };
    r = oph_run_ok("ScatterND", 18, s, 3, 0, 1, mx, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 2, 3, 4, 9, 6, 9, 8 }, 8);
    oph_free(&r);

    int64_t bad[] = { 8 };
    s[1] = ten(PV_I64, 2, DIMS(1, 1), bad);
    pvc_tensor b1[3] = { in[0], ten(PV_I64, 2, DIMS(1, 1), bad), ten(PV_F32, 1, DIMS(1), u) };
    r = oph_run("ScatterND", 13, b1, 3, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "ScatterND: index 8 out of range [-8,8)"));
    oph_free(&r);
    oph_attr bad_red[] = { OPH_STR("reduction", "mean") };
    assert_int_equal(run_status("ScatterND", 16, in, 3, 0, 1, bad_red, 1, "'reduction'"), PV_EUNSUPPORTED);
    in[2] = ten(PV_F32, 1, DIMS(3), u);
    assert_int_equal(run_status("ScatterND", 13, in, 3, 0, 1, NULL, 0, "'updates' shape"), PV_EFORMAT);
}

static void test_scatter_elements(void **state)
{
    (void)state;
    /* spec example 1: 3x3 zeros, indices [[1,0,2],[0,2,1]], updates [[1,1.1,1.2],[2,2.1,2.2]] */
    float x[9] = { 0 }, u[] = { 1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f };
    int64_t idx[] = { 1, 0, 2, 0, 2, 1 };
    pvc_tensor in[3] = { ten(PV_F32, 2, DIMS(3, 3), x), ten(PV_I64, 2, DIMS(2, 3), idx), ten(PV_F32, 2, DIMS(2, 3), u) };
    oph_result r = oph_run_ok("ScatterElements", 13, in, 3, 0, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f }, 9);
    oph_free(&r);

    /* spec example 2: axis 1, [[1,2,3,4,5]], indices [[1,3]] (negative form), updates [[1.1,2.1]] */
    float y[] = { 1, 2, 3, 4, 5 }, v[] = { 1.1f, 2.1f };
    int32_t j[] = { 1, -2 };
    pvc_tensor in2[3] = { ten(PV_F32, 2, DIMS(1, 5), y), ten(PV_I32, 2, DIMS(1, 2), j), ten(PV_F32, 2, DIMS(1, 2), v) };
    oph_attr a1[] = { OPH_INT("axis", 1) };
    r = oph_run_ok("ScatterElements", 13, in2, 3, 0, 1, a1, 1);
    expect_f32(&r.out[0], (const float[]){ 1, 1.1f, 3, 2.1f, 5 }, 5);
    oph_free(&r);

    /* duplicates with reduction: int64 add and min, bool mul (= and) */
    int64_t xi[] = { 10, 20, 30 }, ui[] = { 1, 2, 3, 4 };
    int64_t di[] = { 0, 0, 2, 0 };
    pvc_tensor in3[3] = { ten(PV_I64, 1, DIMS(3), xi), ten(PV_I64, 1, DIMS(4), di), ten(PV_I64, 1, DIMS(4), ui) };
    oph_attr add[] = { OPH_STR("reduction", "add") }, mn[] = { OPH_STR("reduction", "min") },
             mul[] = { OPH_STR("reduction", "mul") };
    r = oph_run_ok("ScatterElements", 16, in3, 3, 0, 1, add, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 17, 20, 33 }, 3);
    oph_free(&r);
    r = oph_run_ok("ScatterElements", 18, in3, 3, 0, 1, mn, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 20, 3 }, 3);
    oph_free(&r);
    uint8_t bx[] = { 1, 1, 0 }, bu[] = { 1, 0 };
    int64_t bi[] = { 0, 1 };
    pvc_tensor in4[3] = { ten(PV_BOOL, 1, DIMS(3), bx), ten(PV_I64, 1, DIMS(2), bi), ten(PV_BOOL, 1, DIMS(2), bu) };
    r = oph_run_ok("ScatterElements", 16, in4, 3, 0, 1, mul, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 0, 0 }, 3);
    oph_free(&r);

    int64_t bad[] = { 0, 3, 0, 0 };
    in3[1] = ten(PV_I64, 1, DIMS(4), bad);
    r = oph_run("ScatterElements", 13, in3, 3, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "ScatterElements: index 3 out of range [-3,3)"));
    oph_free(&r);
    in3[2] = ten(PV_I64, 1, DIMS(3), ui);
    assert_int_equal(run_status("ScatterElements", 13, in3, 3, 0, 1, NULL, 0, "same shape"), PV_EFORMAT);
    in3[2] = ten(PV_I32, 1, DIMS(4), ui);
    assert_int_equal(run_status("ScatterElements", 13, in3, 3, 0, 1, NULL, 0, "'updates' is int32"), PV_EFORMAT);
}

/* ---- Expand / Tile ----------------------------------------------------------------------- */

static void test_expand_tile(void **state)
{
    (void)state;
    /* spec: [[1],[2],[3]] expanded by [2,1,6] -> [2,3,6] */
    float x[] = { 1, 2, 3 };
    int64_t sh[] = { 2, 1, 6 };
    pvc_tensor in[2] = { ten(PV_F32, 2, DIMS(3, 1), x), ten(PV_I64, 1, DIMS(3), sh) };
    oph_result r = oph_run_ok("Expand", 13, in, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 3, DIMS(2, 3, 6));
    for (int i = 0; i < 36; i++) assert_true(((float *)r.out[0].data)[i] == x[(i / 6) % 3]);
    oph_free(&r);
    /* shape smaller than the input: [3,1] with [4] -> [3,4] */
    int64_t s4[] = { 4 };
    in[1] = ten(PV_I64, 1, DIMS(1), s4);
    r = oph_run_ok("Expand", 13, in, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(3, 4));
    expect_f32(&r.out[0], (const float[]){ 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 }, 12);
    oph_free(&r);
    int64_t bad[] = { 2, 2 };
    in[1] = ten(PV_I64, 1, DIMS(2), bad);
    assert_int_equal(run_status("Expand", 13, in, 2, 2u, 1, NULL, 0, "broadcast"), PV_EFORMAT);
    assert_int_equal(run_status("Expand", 13, in, 2, 0, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);

    /* Tile: [[1,2],[3,4]] x [2,2]; int8 and bf16 */
    int8_t t[] = { 1, 2, 3, 4 };
    int64_t rep[] = { 2, 2 };
    pvc_tensor ti[2] = { ten(PV_I8, 2, DIMS(2, 2), t), ten(PV_I64, 1, DIMS(2), rep) };
    r = oph_run_ok("Tile", 13, ti, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I8, 2, DIMS(4, 4));
    expect_i64(&r.out[0], (const int64_t[]){ 1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4 }, 16);
    oph_free(&r);
    uint16_t bf[] = { 0x3f80, 0x4000 };
    int64_t rep3[] = { 3, 1 }, rep0[] = { 0, 5 };
    pvc_tensor tb[2] = { ten(PV_BF16, 2, DIMS(1, 2), bf), ten(PV_I64, 1, DIMS(2), rep3) };
    r = oph_run_ok("Tile", 13, tb, 2, 2u, 1, NULL, 0);
    uint16_t bw[] = { 0x3f80, 0x4000, 0x3f80, 0x4000, 0x3f80, 0x4000 };
    assert_memory_equal(r.out[0].data, bw, sizeof bw);
    oph_free(&r);
    tb[1] = ten(PV_I64, 1, DIMS(2), rep0);
    r = oph_run_ok("Tile", 13, tb, 2, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_BF16, 2, DIMS(0, 10));
    oph_free(&r);
    tb[1] = ten(PV_I64, 1, DIMS(1), rep0);
    assert_int_equal(run_status("Tile", 13, tb, 2, 2u, 1, NULL, 0, "'repeats'"), PV_EFORMAT);
    int64_t neg[] = { 1, -1 };
    tb[1] = ten(PV_I64, 1, DIMS(2), neg);
    assert_int_equal(run_status("Tile", 13, tb, 2, 2u, 1, NULL, 0, "negative"), PV_EFORMAT);
}

/* ---- Pad --------------------------------------------------------------------------------- */

static void test_pad(void **state)
{
    (void)state;
    float x[] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f };
    int64_t pads[] = { 0, 2, 0, 0 };
    float cv = 9.0f;
    pvc_tensor in[3] = { ten(PV_F32, 2, DIMS(3, 2), x), ten(PV_I64, 1, DIMS(4), pads), ten(PV_F32, 0, NULL, &cv) };
    /* spec examples: constant (value 0 when absent), reflect, edge */
    {
        pvc_tensor in2[3] = { in[0], in[1], absent() };
        oph_result r = oph_run_ok("Pad", 13, in2, 3, 2u, 1, NULL, 0);
        oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(3, 4));
        expect_f32(&r.out[0], (const float[]){ 0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f }, 12);
        oph_free(&r);
    }
    oph_attr refl[] = { OPH_STR("mode", "reflect") }, edge[] = { OPH_STR("mode", "edge") };
    oph_result r = oph_run_ok("Pad", 13, in, 2, 2u, 1, refl, 1);
    expect_f32(&r.out[0], (const float[]){ 1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f }, 12);
    oph_free(&r);
    r = oph_run_ok("Pad", 13, in, 2, 2u, 1, edge, 1);
    expect_f32(&r.out[0], (const float[]){ 1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f }, 12);
    oph_free(&r);

    /* constant value given at run time; pads on both axes, one negative (crop) */
    int64_t p2[] = { 1, -1, 0, 1 };
    in[1] = ten(PV_I64, 1, DIMS(4), p2);
    r = oph_run_ok("Pad", 13, in, 3, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(4, 2));
    expect_f32(&r.out[0], (const float[]){ 9, 9, 1.2f, 9, 3.4f, 9, 5.7f, 9 }, 8);
    oph_free(&r);

    /* reflect on a 1-D int64 row of 4 by 3 on each side: 3 2 1 [0 1 2 3] 2 1 0 */
    int64_t row[] = { 0, 1, 2, 3 }, p3[] = { 3, 3 };
    pvc_tensor ri[2] = { ten(PV_I64, 1, DIMS(4), row), ten(PV_I64, 1, DIMS(2), p3) };
    r = oph_run_ok("Pad", 13, ri, 2, 2u, 1, refl, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 3, 2, 1, 0, 1, 2, 3, 2, 1, 0 }, 10);
    oph_free(&r);
    /* crop then reflect: pads [-2, 2] keep [2 3] and mirror it: 2 3 2 3 */
    int64_t p4[] = { -2, 2 };
    ri[1] = ten(PV_I64, 1, DIMS(2), p4);
    r = oph_run_ok("Pad", 13, ri, 2, 2u, 1, refl, 1);
    expect_i64(&r.out[0], (const int64_t[]){ 2, 3, 2, 3 }, 4);
    oph_free(&r);

    /* opset 18 axes input: pad only axis -1 of [3,2] by [1, 0] with edge */
    int64_t p5[] = { 1, 0 }, ax[] = { -1 };
    pvc_tensor a18[4] = { ten(PV_F32, 2, DIMS(3, 2), x), ten(PV_I64, 1, DIMS(2), p5), absent(), ten(PV_I64, 1, DIMS(1), ax) };
    r = oph_run_ok("Pad", 18, a18, 4, 0xau, 1, edge, 1);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(3, 3));
    expect_f32(&r.out[0], (const float[]){ 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 5.7f }, 9);
    oph_free(&r);

    oph_attr wrap[] = { OPH_STR("mode", "wrap") };
    assert_int_equal(run_status("Pad", 13, in, 2, 2u, 1, wrap, 1, "'mode'='wrap'"), PV_EUNSUPPORTED);
    int64_t p6[] = { 0, 0, -5, 0 };
    in[1] = ten(PV_I64, 1, DIMS(4), p6);
    assert_int_equal(run_status("Pad", 13, in, 2, 2u, 1, NULL, 0, "do not fit"), PV_EFORMAT);
    in[1] = ten(PV_I64, 1, DIMS(2), p6);
    assert_int_equal(run_status("Pad", 13, in, 2, 2u, 1, NULL, 0, "'pads'"), PV_EFORMAT);
    assert_int_equal(run_status("Pad", 13, in, 2, 0, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
    int32_t wrong = 1;
    in[1] = ten(PV_I64, 1, DIMS(4), pads);
    in[2] = ten(PV_I32, 0, NULL, &wrong);
    assert_int_equal(run_status("Pad", 13, in, 3, 2u, 1, NULL, 0, "'constant_value'"), PV_EFORMAT);
}

/* ---- Shape, Size, Constant, ConstantOfShape, Range --------------------------------------- */

static void test_shape_size(void **state)
{
    (void)state;
    pvc_tensor in = ten(PV_BOOL, 3, DIMS(2, 3, 4), NULL);
    struct { bool has_s, has_e; int64_t s, e; int n; int64_t want[3]; } cases[] = {
        { false, false, 0, 0, 3, { 2, 3, 4 } }, { true, false, -1, 0, 1, { 4 } },  { false, true, 0, -1, 2, { 2, 3 } },
        { true, true, 1, 2, 1, { 3 } },         { true, true, -10, 10, 3, { 2, 3, 4 } }, { true, true, 2, 1, 0, { 0 } },
    };
    for (int i = 0; i < N(cases); i++) {
        oph_attr a[2];
        int na = 0;
        if (cases[i].has_s) a[na++] = (oph_attr)OPH_INT("start", cases[i].s);
        if (cases[i].has_e) a[na++] = (oph_attr)OPH_INT("end", cases[i].e);
        oph_result r = oph_run_ok("Shape", 15, &in, 1, 0, 1, a, na);
        oph_expect_shape(&r.out[0], PV_I64, 1, DIMS(cases[i].n));
        expect_i64(&r.out[0], cases[i].want, cases[i].n);
        oph_free(&r);
    }
    oph_result r = oph_run_ok("Size", 13, &in, 1, 0, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I64, 0, NULL);
    assert_int_equal(*(int64_t *)r.out[0].data, 24);
    oph_free(&r);
}

/* Constant with a tensor attribute: the harness has no tensor attributes, so build the node. */
static pv_status run_with_tensor_attr(const char *op_type, const char *attr, const pvc_tensor *t,
                                      const pvc_tensor *in, int nin, pvc_tensor *out, void *outbuf)
{
    const pvg_op *op = pvg_op_lookup("", op_type);
    pvg_attr at;
    memset(&at, 0, sizeof at);
    at.name = (char *)attr;
    at.type = PVG_ATTR_TENSOR;
    at.t = *t;
    pvg_node node;
    memset(&node, 0, sizeof node);
    node.name = (char *)"t";
    node.op_type = (char *)op_type;
    node.op = op;
    node.attrs = &at;
    node.nattrs = 1;
    static unsigned char params[PVG_PARAMS_BYTES];
    memset(params, 0, sizeof params);
    pvc_msg msg;
    pvg_prep p;
    memset(&p, 0, sizeof p);
    p.node = &node;
    p.nin = nin;
    p.nout = 1;
    p.in = in;
    p.out = out;
    p.params = params;
    p.opset = 13;
    p.msg = &msg;
    pv_status s = op->prepare(&p);
    if (s) return s;
    assert_true(at.used);
    out->data = outbuf;
    pvg_exec x = { &node, params, in, nin, out, 1, NULL, NULL };
    return op->run(&x);
}

static void test_constant(void **state)
{
    (void)state;
    int64_t iv[] = { 3, -1, 4 };
    oph_attr ints[] = { OPH_INTS("value_ints", iv, 3) };
    oph_result r = oph_run_ok("Constant", 13, NULL, 0, 0, 1, ints, 1);
    oph_expect_shape(&r.out[0], PV_I64, 1, DIMS(3));
    expect_i64(&r.out[0], iv, 3);
    oph_free(&r);
    oph_attr f1[] = { OPH_FLOAT("value_float", 2.5f) };
    r = oph_run_ok("Constant", 13, NULL, 0, 0, 1, f1, 1);
    oph_expect_shape(&r.out[0], PV_F32, 0, NULL);
    expect_f32(&r.out[0], (const float[]){ 2.5f }, 1);
    oph_free(&r);
    float fv[] = { 1.5f, -2 };
    oph_attr fs[] = { OPH_FLOATS("value_floats", fv, 2) };
    r = oph_run_ok("Constant", 13, NULL, 0, 0, 1, fs, 1);
    oph_expect_shape(&r.out[0], PV_F32, 1, DIMS(2));
    expect_f32(&r.out[0], fv, 2);
    oph_free(&r);
    oph_attr i1[] = { OPH_INT("value_int", -7) };
    r = oph_run_ok("Constant", 13, NULL, 0, 0, 1, i1, 1);
    oph_expect_shape(&r.out[0], PV_I64, 0, NULL);
    expect_i64(&r.out[0], (const int64_t[]){ -7 }, 1);
    oph_free(&r);

    /* tensor value */
    int32_t tv[] = { 5, 6, 7, 8, 9, 10 };
    pvc_tensor t = ten(PV_I32, 2, DIMS(2, 3), tv), out;
    memset(&out, 0, sizeof out);
    int32_t ob[6] = { 0 };
    assert_int_equal(run_with_tensor_attr("Constant", "value", &t, NULL, 0, &out, ob), PV_OK);
    oph_expect_shape(&out, PV_I32, 2, DIMS(2, 3));
    assert_memory_equal(ob, tv, sizeof tv);

    oph_attr str[] = { OPH_STR("value_string", "hi") };
    assert_int_equal(run_status("Constant", 13, NULL, 0, 0, 1, str, 1, "value_string"), PV_EUNSUPPORTED);
    oph_attr two[] = { OPH_INT("value_int", 1), OPH_FLOAT("value_float", 1) };
    assert_int_equal(run_status("Constant", 13, NULL, 0, 0, 1, two, 2, "exactly one"), PV_EFORMAT);
    assert_int_equal(run_status("Constant", 13, NULL, 0, 0, 1, NULL, 0, "exactly one"), PV_EFORMAT);

    /* ConstantOfShape: default float 0; int64 value tensor; empty shape = scalar */
    int64_t sh[] = { 2, 3 };
    pvc_tensor in = ten(PV_I64, 1, DIMS(2), sh);
    r = oph_run_ok("ConstantOfShape", 13, &in, 1, 1u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 2, DIMS(2, 3));
    expect_f32(&r.out[0], (const float[]){ 0, 0, 0, 0, 0, 0 }, 6);
    oph_free(&r);
    int64_t seven = 7;
    pvc_tensor v = ten(PV_I64, 1, DIMS(1), &seven), o2;
    memset(&o2, 0, sizeof o2);
    int64_t ob2[6] = { 0 };
    assert_int_equal(run_with_tensor_attr("ConstantOfShape", "value", &v, &in, 1, &o2, ob2), PV_OK);
    oph_expect_shape(&o2, PV_I64, 2, DIMS(2, 3));
    for (int i = 0; i < 6; i++) assert_int_equal(ob2[i], 7);
    pvc_tensor e = ten(PV_I64, 1, DIMS(0), sh);
    r = oph_run_ok("ConstantOfShape", 13, &e, 1, 1u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 0, NULL);
    oph_free(&r);
    pvc_tensor vv = ten(PV_I64, 1, DIMS(2), sh);
    assert_int_equal(run_with_tensor_attr("ConstantOfShape", "value", &vv, &in, 1, &o2, ob2), PV_EFORMAT);
    int64_t negs[] = { 2, -1 };
    pvc_tensor ng = ten(PV_I64, 1, DIMS(2), negs);
    assert_int_equal(run_status("ConstantOfShape", 13, &ng, 1, 1u, 1, NULL, 0, "negative"), PV_EFORMAT);
    assert_int_equal(run_status("ConstantOfShape", 13, &in, 1, 0, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
}

static void test_range(void **state)
{
    (void)state;
    int64_t a = 3, b = 9, d = 3;
    pvc_tensor in[3] = { ten(PV_I64, 0, NULL, &a), ten(PV_I64, 0, NULL, &b), ten(PV_I64, 0, NULL, &d) };
    oph_result r = oph_run_ok("Range", 13, in, 3, 7u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I64, 1, DIMS(2));
    expect_i64(&r.out[0], (const int64_t[]){ 3, 6 }, 2);
    oph_free(&r);
    int32_t a2 = 10, b2 = 4, d2 = -2;
    pvc_tensor i32[3] = { ten(PV_I32, 0, NULL, &a2), ten(PV_I32, 0, NULL, &b2), ten(PV_I32, 0, NULL, &d2) };
    r = oph_run_ok("Range", 13, i32, 3, 7u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I32, 1, DIMS(3));
    expect_i64(&r.out[0], (const int64_t[]){ 10, 8, 6 }, 3);
    oph_free(&r);
    float fa = 1.0f, fb = 2.0f, fd = 0.25f;
    pvc_tensor f[3] = { ten(PV_F32, 0, NULL, &fa), ten(PV_F32, 0, NULL, &fb), ten(PV_F32, 0, NULL, &fd) };
    r = oph_run_ok("Range", 13, f, 3, 7u, 1, NULL, 0);
    expect_f32(&r.out[0], (const float[]){ 1.0f, 1.25f, 1.5f, 1.75f }, 4);
    oph_free(&r);
    /* empty: delta pointing away from the limit */
    in[2] = ten(PV_I64, 0, NULL, &(int64_t){ -1 });
    r = oph_run_ok("Range", 13, in, 3, 7u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I64, 1, DIMS(0));
    oph_free(&r);

    in[2] = ten(PV_I64, 0, NULL, &(int64_t){ 0 });
    assert_int_equal(run_status("Range", 13, in, 3, 7u, 1, NULL, 0, "0"), PV_EFORMAT);
    in[2] = ten(PV_I64, 0, NULL, &d);
    assert_int_equal(run_status("Range", 13, in, 3, 3u, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
    pvc_tensor mixed[3] = { in[0], i32[1], in[2] };
    assert_int_equal(run_status("Range", 13, mixed, 3, 7u, 1, NULL, 0, "'limit' is int32"), PV_EFORMAT);
}

/* ---- OneHot, CumSum, NonZero ------------------------------------------------------------- */

static void test_onehot(void **state)
{
    (void)state;
    int64_t idx[] = { 1, -1, 5, 0 }, depth = 3;
    float vals[] = { 0.5f, 2.0f };
    pvc_tensor in[3] = { ten(PV_I64, 2, DIMS(2, 2), idx), ten(PV_I64, 0, NULL, &depth), ten(PV_F32, 1, DIMS(2), vals) };
    oph_result r = oph_run_ok("OneHot", 11, in, 3, 2u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_F32, 3, DIMS(2, 2, 3));
    expect_f32(&r.out[0], (const float[]){ .5f, 2, .5f, .5f, .5f, 2, .5f, .5f, .5f, 2, .5f, .5f }, 12);
    oph_free(&r);
    /* axis 0, float depth and indices, int32 values */
    float fidx[] = { 0.0f, 2.7f }, fdepth = 3.0f;
    int32_t iv[] = { 0, 1 };
    pvc_tensor f[3] = { ten(PV_F32, 1, DIMS(2), fidx), ten(PV_F32, 1, DIMS(1), &fdepth), ten(PV_I32, 1, DIMS(2), iv) };
    oph_attr a0[] = { OPH_INT("axis", 0) };
    r = oph_run_ok("OneHot", 11, f, 3, 2u, 1, a0, 1);
    oph_expect_shape(&r.out[0], PV_I32, 2, DIMS(3, 2));
    expect_i64(&r.out[0], (const int64_t[]){ 1, 0, 0, 0, 0, 1 }, 6);
    oph_free(&r);
    assert_int_equal(run_status("OneHot", 11, in, 3, 0, 1, NULL, 0, "data-dependent"), PV_EUNSUPPORTED);
    oph_attr a9[] = { OPH_INT("axis", 3) };
    assert_int_equal(run_status("OneHot", 11, in, 3, 2u, 1, a9, 1, "'axis'"), PV_EFORMAT);
    in[2] = ten(PV_F32, 1, DIMS(1), vals);
    assert_int_equal(run_status("OneHot", 11, in, 3, 2u, 1, NULL, 0, "'values'"), PV_EFORMAT);
}

static void test_cumsum(void **state)
{
    (void)state;
    float x[] = { 1, 2, 3, 4, 5 };
    int32_t ax = 0;
    pvc_tensor in[2] = { ten(PV_F32, 1, DIMS(5), x), ten(PV_I32, 0, NULL, &ax) };
    struct { int ex, rv; float want[5]; } c[] = {
        { 0, 0, { 1, 3, 6, 10, 15 } }, { 1, 0, { 0, 1, 3, 6, 10 } },
        { 0, 1, { 15, 14, 12, 9, 5 } }, { 1, 1, { 14, 12, 9, 5, 0 } },
    };
    for (int i = 0; i < N(c); i++) {
        oph_attr a[] = { OPH_INT("exclusive", c[i].ex), OPH_INT("reverse", c[i].rv) };
        oph_result r = oph_run_ok("CumSum", 14, in, 2, 2u, 1, a, 2);
        expect_f32(&r.out[0], c[i].want, 5);
        oph_free(&r);
    }
    /* 2-D int64, axis -1 given only at run time; then axis 0 */
    int64_t m[] = { 1, 2, 3, 4, 5, 6 }, axm = -1;
    pvc_tensor im[2] = { ten(PV_I64, 2, DIMS(2, 3), m), ten(PV_I64, 1, DIMS(1), &axm) };
    oph_result r = oph_run_ok("CumSum", 14, im, 2, 0, 1, NULL, 0);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 3, 6, 4, 9, 15 }, 6);
    oph_free(&r);
    int64_t ax0 = 0;
    im[1] = ten(PV_I64, 0, NULL, &ax0);
    r = oph_run_ok("CumSum", 14, im, 2, 2u, 1, NULL, 0);
    expect_i64(&r.out[0], (const int64_t[]){ 1, 2, 3, 5, 7, 9 }, 6);
    oph_free(&r);
    /* f16 through f32 */
    uint16_t h[] = { 0x3c00, 0x3c00, 0x4000 };   /* 1, 1, 2 */
    pvc_tensor hf[2] = { ten(PV_F16, 1, DIMS(3), h), ten(PV_I64, 0, NULL, &ax0) };
    r = oph_run_ok("CumSum", 14, hf, 2, 2u, 1, NULL, 0);
    uint16_t hw[] = { 0x3c00, 0x4000, 0x4400 };  /* 1, 2, 4 */
    assert_memory_equal(r.out[0].data, hw, sizeof hw);
    oph_free(&r);

    int64_t ax5 = 5;
    im[1] = ten(PV_I64, 0, NULL, &ax5);
    assert_int_equal(run_status("CumSum", 14, im, 2, 2u, 1, NULL, 0, "'axis'"), PV_EFORMAT);
    r = oph_run("CumSum", 14, im, 2, 0, 1, NULL, 0);
    assert_int_equal(r.status, PV_EINPUT);
    oph_free(&r);
    oph_attr ex2[] = { OPH_INT("exclusive", 2) };
    assert_int_equal(run_status("CumSum", 14, in, 2, 2u, 1, ex2, 1, "'exclusive'"), PV_EFORMAT);
    pvc_tensor b[2] = { ten(PV_BOOL, 1, DIMS(5), x), in[1] };
    assert_int_equal(run_status("CumSum", 14, b, 2, 2u, 1, NULL, 0, "dtype"), PV_EUNSUPPORTED);
}

static void test_nonzero(void **state)
{
    (void)state;
    /* spec: [[1,0],[1,1]] -> [[0,1,1],[0,0,1]] */
    uint8_t x[] = { 1, 0, 1, 1 };
    pvc_tensor in = ten(PV_BOOL, 2, DIMS(2, 2), x);
    oph_result r = oph_run_ok("NonZero", 13, &in, 1, 1u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I64, 2, DIMS(2, 3));
    expect_i64(&r.out[0], (const int64_t[]){ 0, 1, 1, 0, 0, 1 }, 6);
    oph_free(&r);
    float f[] = { 0.0f, -0.0f, 3.0f };
    pvc_tensor fin = ten(PV_F32, 1, DIMS(3), f);
    r = oph_run_ok("NonZero", 13, &fin, 1, 1u, 1, NULL, 0);
    oph_expect_shape(&r.out[0], PV_I64, 2, DIMS(1, 1));
    expect_i64(&r.out[0], (const int64_t[]){ 2 }, 1);
    oph_free(&r);
    assert_int_equal(run_status("NonZero", 13, &in, 1, 0, 1, NULL, 0, "data-dependent output shape"), PV_EUNSUPPORTED);
}

/* ---- robustness: wrong input counts and unknown attributes ------------------------------- */

static void test_bad_arity(void **state)
{
    (void)state;
    static const char *const ops[] = { "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose",
                                       "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
                                       "ScatterND", "ScatterElements", "Expand", "Tile", "Pad", "Shape", "Size",
                                       "ConstantOfShape", "Range", "OneHot", "CumSum", "NonZero" };
    for (int i = 0; i < N(ops); i++) {
        pv_status s = run_status(ops[i], 13, NULL, 0, 0, 1, NULL, 0, NULL);
        if (s != PV_EFORMAT) fail_msg("%s with no inputs: status %d", ops[i], s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_flatten_squeeze_unsqueeze_identity),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_copy_view_pool),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_gather_elements),
        cmocka_unit_test(test_gather_nd),
        cmocka_unit_test(test_scatter_nd),
        cmocka_unit_test(test_scatter_elements),
        cmocka_unit_test(test_expand_tile),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_shape_size),
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_onehot),
        cmocka_unit_test(test_cumsum),
        cmocka_unit_test(test_nonzero),
        cmocka_unit_test(test_bad_arity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
