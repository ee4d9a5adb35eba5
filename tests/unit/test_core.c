/* core: allocator hook + fault injection, aligned blocks, thread pool coverage, dtype
 * conversions (f16/bf16 round trips, rounding), cpu/isa selection, custom-op registry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/graph.h"
#include "kernels/dnnl/conv_dnnl.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static long hook_calls;
static void *my_malloc(void *ud, size_t n) { (void)ud; hook_calls++; return malloc(n); }
static void *my_realloc(void *ud, void *p, size_t n) { (void)ud; hook_calls++; return realloc(p, n); }
static void my_free(void *ud, void *p) { (void)ud; free(p); }

static void test_allocator_hook(void **state)
{
    (void)state;
    pv_allocator a = { my_malloc, my_realloc, my_free, NULL };
    pv_set_allocator(&a);
    void *p = pvc_malloc(10);
    p = pvc_realloc(p, 1000);
    void *q = pvc_malloc_aligned(4096);
    assert_int_equal((uintptr_t)q % 64, 0);
    pvc_free_aligned(q);
    pvc_free(p);
    assert_true(hook_calls >= 3);
    pv_set_allocator(NULL);
}

static void test_fail_nth(void **state)
{
    (void)state;
    pvc_alloc_test_begin(3);
    void *a = pvc_malloc(8), *b = pvc_malloc(8), *c = pvc_malloc(8), *d = pvc_malloc(8);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_non_null(d);
    assert_true(pvc_alloc_failed());
    assert_int_equal(pvc_alloc_live(), 3);
    pvc_free(a);
    pvc_free(b);
    pvc_free(d);
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
    assert_null(pvc_calloc(SIZE_MAX / 2, 4));          /* overflow refused, not wrapped */
}

typedef struct { atomic_int hits[1000]; atomic_int calls; } cover_ctx;
static void cover(void *ctx, int64_t b, int64_t e, int tid)
{
    cover_ctx *c = ctx;
    (void)tid;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void test_pool_covers_range_once(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 4; threads++) {
        pvc_pool *p = NULL;
        assert_int_equal(pvc_pool_create(threads, &p), PV_OK);
        assert_int_equal(pvc_pool_threads(p), threads);
        for (int64_t n = 0; n <= 1000; n += 37) {
            cover_ctx *c = calloc(1, sizeof *c);
            pvc_parallel_for(p, n, 3, cover, c);
            for (int64_t i = 0; i < 1000; i++) assert_int_equal(atomic_load(&c->hits[i]), i < n ? 1 : 0);
            free(c);
        }
        pvc_pool_free(p);
    }
    cover_ctx *c = calloc(1, sizeof *c);
    pvc_parallel_for(NULL, 10, 1, cover, c);             /* no pool: inline */
    assert_int_equal(atomic_load(&c->calls), 1);
    free(c);
}

static void test_half_conversions(void **state)
{
    (void)state;
    /* every f16 bit pattern survives f16 -> f32 -> f16 (NaNs stay NaN) */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pvc_f16_to_f32((uint16_t)h);
        uint16_t back = pvc_f32_to_f16(f);
        if (isnan(f)) assert_true(isnan(pvc_f16_to_f32(back)));
        else assert_int_equal(back, h);
    }
    assert_float_equal(pvc_f16_to_f32(0x3c00), 1.0f, 0);
    assert_float_equal(pvc_f16_to_f32(0x0001), 5.9604645e-8f, 1e-14);
    assert_int_equal(pvc_f32_to_f16(65520.0f), 0x7c00);     /* rounds to inf */
    assert_int_equal(pvc_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);   /* tie to even */
    for (uint32_t h = 0; h < 65536; h += 3) {
        float f = pvc_bf16_to_f32((uint16_t)h);
        if (!isnan(f)) assert_int_equal(pvc_f32_to_bf16(f), h);
    }
    assert_int_equal(pvc_f32_to_bf16(1.00390625f), 0x3f80);      /* tie to even */
}

static void test_element_access(void **state)
{
    (void)state;
    int64_t buf[4] = { 0 };
    for (int t = 0; t < PV_DTYPE_COUNT; t++) {
        pvc_set_f64(buf, (pv_dtype)t, 1, 3.0);
        assert_true(pvc_get_f64(buf, (pv_dtype)t, 1) == (t == PV_BOOL ? 1.0 : 3.0));
        assert_true(pv_dtype_size((pv_dtype)t) > 0);
    }
    pvc_set_f64(buf, PV_I32, 0, -2.7);
    assert_int_equal(pvc_get_i64(buf, PV_I32, 0), -2);     /* truncation toward zero */
    assert_string_equal(pv_dtype_name(PV_BF16), "bfloat16");
}

static bool c_has_bf16(void) { return pvc_cpu_get()->avx512_bf16; }

static void test_isa(void **state)
{
    (void)state;
    const char *name = pv_isa();
    assert_true(!strcmp(name, "scalar") || !strcmp(name, "avx2") || !strcmp(name, "avx512") ||
                !strcmp(name, "avx512_bf16") || !strcmp(name, "amx"));
    if (pvc_isa_selected() >= PVC_ISA_AVX512_BF16) assert_true(c_has_bf16());
    const pvc_cpu *c = pvc_cpu_get();
    if (pvc_isa_selected() >= PVC_ISA_AVX512) assert_true(c->avx512f);
    if (pvc_isa_selected() >= PVC_ISA_AVX2) assert_true(c->avx2 && c->fma);
}

/* bf16 precision: the measured dot-product rate decides below AMX; PERCEIVE_BF16=force skips it,
 * an unknown value is an input error naming the variable */
static void test_bf16_rate_and_precision(void **state)
{
    (void)state;
    const pvc_cpu *c = pvc_cpu_get();
    double r = pvc_bf16_dot_rate();
    if (c->avx512f && c->avx512_bf16) assert_true(r > 0.05 && r < 20);   /* a rate, not a timing */
    else assert_true(r == 0);
    print_message("bf16 dot rate %.2f of fp32 multiply-adds\n", r);
    pvc_precision got;
    char why[256];
    unsetenv("PERCEIVE_BF16");
    assert_int_equal(pvc_precision_resolve(PV_PRECISION_BF16, &got, why, sizeof why), PV_OK);
    bool isa_bf16 = pvc_isa_selected() >= PVC_ISA_AVX512_BF16 && pvk_dnnl_available();
    bool amx = pvc_isa_selected() >= PVC_ISA_AMX;
    assert_true(got == (isa_bf16 && (amx || r >= PVC_BF16_MIN_RATE) ? PVC_PREC_BF16 : PVC_PREC_FP32));
    assert_true((got == PVC_PREC_FP32) == (why[0] != 0));
    if (isa_bf16 && !amx && r < PVC_BF16_MIN_RATE) assert_non_null(strstr(why, "PERCEIVE_BF16=force"));
    setenv("PERCEIVE_BF16", "force", 1);
    assert_int_equal(pvc_precision_resolve(PV_PRECISION_BF16, &got, why, sizeof why), PV_OK);
    assert_true(got == (isa_bf16 ? PVC_PREC_BF16 : PVC_PREC_FP32));
    assert_int_equal(pvc_precision_resolve(PV_PRECISION_FP32, &got, why, sizeof why), PV_OK);
    assert_true(got == PVC_PREC_FP32 && !why[0]);
    setenv("PERCEIVE_BF16", "sometimes", 1);
    assert_int_equal(pvc_precision_resolve(PV_PRECISION_BF16, &got, why, sizeof why), PV_EINPUT);
    assert_non_null(strstr(pv_last_error(), "PERCEIVE_BF16"));
    unsetenv("PERCEIVE_BF16");
}

static pv_status dbl_prepare(pvg_prep *p)
{
    pvg_out_set(p, 0, p->in[0].dtype, p->in[0].rank, p->in[0].dims);
    return pvg_check_dtype(p, 0, 1u << PV_F32);
}
static pv_status dbl_run(const pvg_exec *x)
{
    const float *a = x->in[0].data;
    float *y = x->out[0].data;
    for (int64_t i = 0; i < pvc_numel(&x->out[0]); i++) y[i] = 2 * a[i];
    return PV_OK;
}
static const pvg_op dbl = { "Double", "test.custom", 0, dbl_prepare, dbl_run };

static void test_custom_op_registry(void **state)
{
    (void)state;
    assert_null(pvg_op_lookup("test.custom", "Double"));
    assert_int_equal(pvg_op_register(&dbl), PV_OK);
    assert_ptr_equal(pvg_op_lookup("test.custom", "Double"), &dbl);
    assert_null(pvg_op_lookup("", "Double"));
    static const pvg_op bad = { "Relu", "", 0, dbl_prepare, dbl_run };
    assert_int_not_equal(pvg_op_register(&bad), PV_OK);          /* default domain is closed */
    /* a graph using it */
    pvg_graph *g = NULL;
    assert_int_equal(pvg_graph_create(&g), PV_OK);
    int x = pvg_value_get(g, "x"), y = pvg_value_get(g, "y");
    g->values[x].is_input = true;
    g->values[x].decl.dtype = PV_F32;
    g->values[x].decl.rank = 1;
    g->values[x].decl.dims[0] = 3;
    g->inputs = pvc_calloc(1, sizeof(int));
    g->inputs[g->ninputs++] = x;
    g->outputs = pvc_calloc(1, sizeof(int));
    g->outputs[g->noutputs++] = y;
    g->values[y].is_output = true;
    pvg_node *n;
    assert_int_equal(pvg_node_add(g, "d", "Double", "test.custom", 1, 1, &n), PV_OK);
    n->in[0] = x;
    n->out[0] = y;
    g->values[y].producer = 0;
    assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
    float in[3] = { 1, 2, 3 };
    pvc_tensor t = g->values[x].decl;
    pvc_tensor_set_contiguous(&t);
    t.data = in;
    pvg_plan *p = NULL;
    assert_int_equal(pvg_plan_create(g, &t, &p), PV_OK);
    pvc_tensor out;
    assert_int_equal(pvg_plan_run(p, &t, NULL, &out), PV_OK);
    assert_float_equal(((float *)out.data)[2], 6.0f, 0);
    pvg_plan_free(p);
    pvg_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocator_hook),
        cmocka_unit_test(test_fail_nth),
        cmocka_unit_test(test_pool_covers_range_once),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_element_access),
        cmocka_unit_test(test_isa),
        cmocka_unit_test(test_bf16_rate_and_precision),
        cmocka_unit_test(test_custom_op_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
