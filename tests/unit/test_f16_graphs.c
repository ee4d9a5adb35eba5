/* float16 graphs computed in float32 (graph/passes/f16.c): on the float16 model fixtures
 * (tests/fixtures/models/f16_*, made by tools/gen/f16_models.py) perceive's error against ONNX
 * Runtime's outputs of the same graph converted to float32 must be no larger than ORT's own
 * float16 error (recorded in ort_error.txt: max |err| and RMS per output), the outputs stay
 * float16 and the pass reports its work; PERCEIVE_F16=staged keeps the old staging. Agreement
 * with ORT's float16 outputs themselves is model_graphs' check (tolerance.txt). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "perceive.h"
#include "core/core.h"
#include "io/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src_dir(void)
{
    const char *d = getenv("PV_SOURCE_DIR");
    return d ? d : ".";
}

typedef struct { double max_abs, rms; } err;

static err error_of(const pv_tensor *got, const pv_tensor *ref)
{
    err e = { 0, 0 };
    int64_t n = pv_tensor_numel(ref);
    assert_int_equal(pv_tensor_numel(got), n);
    for (int64_t i = 0; i < n; i++) {
        double d = pvc_get_f64(got->data, got->dtype, i) - pvc_get_f64(ref->data, ref->dtype, i);
        e.max_abs = fmax(e.max_abs, fabs(d));
        e.rms += d * d;
    }
    e.rms = sqrt(e.rms / (double)(n ? n : 1));
    return e;
}

/* Runs fixture `name`; checks every output against expected_fp32.npz and ort_error.txt. With
 * staged, only that the graph runs on the staging path. */
static void check_fixture(const char *name, bool staged)
{
    char dir[1024], p[1200];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/models/%s", src_dir(), name);
    pvio_arrays in = { 0 }, ref = { 0 };
    pvc_msg msg = {{0}};
    snprintf(p, sizeof p, "%s/inputs.npz", dir);
    assert_int_equal(pvio_npz_read_file(p, &in, &msg), PV_OK);
    snprintf(p, sizeof p, "%s/expected_fp32.npz", dir);
    assert_int_equal(pvio_npz_read_file(p, &ref, &msg), PV_OK);
    if (staged) setenv("PERCEIVE_F16", "staged", 1);
    pv_graph_options opt = { .threads = 2, .precision = PV_PRECISION_FP32 };
    pv_graph *g = NULL;
    snprintf(p, sizeof p, "%s/model.onnx", dir);
    pv_status s = pv_graph_open(p, &opt, &g);
    unsetenv("PERCEIVE_F16");
    if (s != PV_OK) fail_msg("%s: %s", name, pv_last_error());
    pv_tensor ins[8], outs[8];
    assert_true(in.n <= 8);
    for (int i = 0; i < in.n; i++) { ins[i] = in.a[i].t; ins[i].name = in.a[i].name; }
    size_t nout = 8;
    if (pv_graph_run(g, ins, (size_t)in.n, outs, &nout) != PV_OK) fail_msg("%s: %s", name, pv_graph_errmsg(g));
    pv_graph_stats st;
    assert_int_equal(pv_graph_stats_get(g, &st), PV_OK);
    if (staged) assert_int_equal(st.f16_lifted, 0);
    else assert_true(st.f16_lifted > 0);
    snprintf(p, sizeof p, "%s/ort_error.txt", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char oname[128];
    double ort_max, ort_rms;
    int checked = 0;
    while (!staged && fscanf(f, "%127s %lf %lf", oname, &ort_max, &ort_rms) == 3) {
        const pvio_array *r = pvio_arrays_find(&ref, oname);
        assert_non_null(r);
        const pv_tensor *o = NULL;
        for (size_t i = 0; i < nout; i++) if (!strcmp(outs[i].name, oname)) o = &outs[i];
        assert_non_null(o);
        assert_int_equal(o->dtype, PV_F16);
        err e = error_of(o, &r->t);
        printf("  %s %s: perceive float16 vs float32 max |err| %.3g rms %.3g; ORT %.3g %.3g\n", name, oname,
               e.max_abs, e.rms, ort_max, ort_rms);
        assert_true(e.max_abs <= ort_max);
        assert_true(e.rms <= ort_rms);
        checked++;
    }
    fclose(f);
    if (!staged) assert_true(checked > 0);
    pv_graph_close(g);
    pvio_arrays_free(&in);
    pvio_arrays_free(&ref);
}

static void test_block_error(void **st) { (void)st; check_fixture("f16_block", false); }
static void test_convnet_error(void **st) { (void)st; check_fixture("f16_convnet", false); }
static void test_staged_env(void **st) { (void)st; check_fixture("f16_convnet", true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_error),
        cmocka_unit_test(test_convnet_error),
        cmocka_unit_test(test_staged_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
