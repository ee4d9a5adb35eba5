/* Concurrency: what perceive promises about threads, exercised from several threads at once so
 * that `make tsan` (ThreadSanitizer) sees every shared path. Checks results, not timing:
 *   - one thread pool shared by several callers (parallel_for serialises jobs; every index is
 *     covered exactly once per call);
 *   - pv_graph_open_memory + pv_graph_run on separate handles in parallel, one of them fed a
 *     broken model (the process-wide import state, pv_last_error per thread);
 *   - one pv_model shared by threads running pv_model_run at once (documented thread-safe),
 *     each result identical to the serial run's, then closed while another thread still calls
 *     it (PV_OK or PV_ECLOSED, nothing else).
 * The model part opens bevfusion (generated weights under PERCEIVE_CACHE_DIR). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "perceive.h"
#include "core/core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCALLERS 4

static void *slurp(const char *rel, size_t *len)
{
    const char *root = getenv("PV_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* ---- one pool, several callers ----------------------------------------------------------- */
typedef struct { pvc_pool *pool; atomic_int *hits; int64_t n; int rounds; int bad; } pool_job;

static void mark(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    atomic_int *hits = ctx;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&hits[i], 1);
}

static void *pool_caller(void *arg)
{
    pool_job *j = arg;
    for (int r = 0; r < j->rounds; r++) {
        for (int64_t i = 0; i < j->n; i++) atomic_store(&j->hits[i], 0);
        pvc_parallel_for(j->pool, j->n, 1, mark, j->hits);
        for (int64_t i = 0; i < j->n; i++) if (atomic_load(&j->hits[i]) != 1) j->bad++;
    }
    return NULL;
}

static void test_pool_shared_by_callers(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(3, &pool), PV_OK);
    pool_job jobs[NCALLERS];
    pthread_t t[NCALLERS];
    for (int k = 0; k < NCALLERS; k++) {
        jobs[k] = (pool_job){ pool, calloc(257, sizeof(atomic_int)), 257, 50, 0 };
        assert_non_null(jobs[k].hits);
        assert_int_equal(pthread_create(&t[k], NULL, pool_caller, &jobs[k]), 0);
    }
    for (int k = 0; k < NCALLERS; k++) {
        pthread_join(t[k], NULL);
        assert_int_equal(jobs[k].bad, 0);
        free(jobs[k].hits);
    }
    pvc_pool_free(pool);
}

/* ---- graphs opened and run in parallel ------------------------------------------------------ */
typedef struct {
    const void *model; size_t len; bool broken;
    float out[1024]; size_t nout; pv_status open_s, run_s; char err[512];
} graph_job;

static void *graph_worker(void *arg)
{
    graph_job *j = arg;
    pv_graph_options opt = { .threads = 2 };
    pv_graph *g = NULL;
    j->open_s = pv_graph_open_memory(j->model, j->len, ".", &opt, &g);
    if (j->open_s != PV_OK) { snprintf(j->err, sizeof j->err, "%s", pv_last_error()); return NULL; }
    pv_tensor in;
    pv_graph_input(g, 0, &in);
    float x[1 * 3 * 6 * 6];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)((i * 7) % 13) / 13.0f - 0.4f;
    in.data = x;
    pv_tensor out[4];
    size_t n_out = 4;
    for (int r = 0; r < 20 && j->run_s == PV_OK; r++) j->run_s = pv_graph_run(g, &in, 1, out, &n_out);
    if (j->run_s == PV_OK) {
        size_t n = 1;
        for (int d = 0; d < out[0].rank; d++) n *= (size_t)out[0].dims[d];
        j->nout = n < 1024 ? n : 1024;
        memcpy(j->out, out[0].data, j->nout * sizeof(float));
    }
    pv_graph_close(g);
    return NULL;
}

static void test_graphs_in_parallel(void **state)
{
    (void)state;
    size_t len = 0;
    void *m = slurp("tests/fixtures/ops/chain_conv_bn_relu/model.onnx", &len);
    assert_non_null(m);
    graph_job *jobs = calloc(NCALLERS + 1, sizeof *jobs);
    assert_non_null(jobs);
    pthread_t t[NCALLERS + 1];
    for (int k = 0; k <= NCALLERS; k++) {
        jobs[k].model = m;
        jobs[k].len = k == NCALLERS ? len / 2 : len;   /* the last one: truncated */
        jobs[k].broken = k == NCALLERS;
        assert_int_equal(pthread_create(&t[k], NULL, graph_worker, &jobs[k]), 0);
    }
    for (int k = 0; k <= NCALLERS; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < NCALLERS; k++) {
        assert_int_equal(jobs[k].open_s, PV_OK);
        assert_int_equal(jobs[k].run_s, PV_OK);
        assert_int_equal(jobs[k].nout, jobs[0].nout);
        assert_memory_equal(jobs[k].out, jobs[0].out, jobs[0].nout * sizeof(float));
    }
    assert_true(jobs[0].nout > 0);
    /* the broken one failed with its own message, not a neighbour's (or none) */
    assert_int_equal(jobs[NCALLERS].open_s, PV_EFORMAT);
    assert_non_null(strstr(jobs[NCALLERS].err, "protobuf"));
    free(jobs);
    free(m);
}

/* ---- one model, several threads -------------------------------------------------------------- */
typedef struct { pv_model *m; const void *pcd; size_t len; int runs; char *json[2]; pv_status s[2]; } model_job;

static void *model_worker(void *arg)
{
    model_job *j = arg;
    pv_input in = { .name = "points", .format = "pcd", .data = j->pcd, .len = j->len };
    pv_param p[] = { { "score_threshold", "0.15" } };
    for (int r = 0; r < j->runs; r++) {
        pv_result *res = NULL;
        j->s[r] = pv_model_run(j->m, &in, 1, p, 1, &res);
        if (j->s[r] == PV_OK) j->json[r] = strdup(pv_result_json_stable(res));
        pv_result_free(res);
    }
    return NULL;
}

static void test_model_shared(void **state)
{
    (void)state;
    if (!getenv("PERCEIVE_CACHE_DIR")) { skip(); return; }
    size_t len = 0;
    void *pcd = slurp("tests/fixtures/bevfusion/scene/scene_000.pcd", &len);
    assert_non_null(pcd);
    pv_model_options mo = { .threads = 2 };
    pv_model *m = NULL;
    assert_int_equal(pv_model_open("bevfusion", &mo, &m), PV_OK);
    model_job ref = { m, pcd, len, 1, { 0 }, { 0 } };
    model_worker(&ref);
    assert_int_equal(ref.s[0], PV_OK);
    enum { NJ = 3 };
    model_job jobs[NJ];
    pthread_t t[NJ];
    for (int k = 0; k < NJ; k++) {
        jobs[k] = (model_job){ m, pcd, len, 1, { 0 }, { 0 } };
        assert_int_equal(pthread_create(&t[k], NULL, model_worker, &jobs[k]), 0);
    }
    for (int k = 0; k < NJ; k++) {
        pthread_join(t[k], NULL);
        assert_int_equal(jobs[k].s[0], PV_OK);
        assert_string_equal(jobs[k].json[0], ref.json[0]);
        free(jobs[k].json[0]);
    }
    /* close while a run is in flight: that run completes or is refused, cleanly */
    model_job late = { m, pcd, len, 2, { 0 }, { 0 } };
    pthread_t lt;
    assert_int_equal(pthread_create(&lt, NULL, model_worker, &late), 0);
    pv_model_close(m);
    pthread_join(lt, NULL);
    for (int r = 0; r < 2; r++) {
        assert_true(late.s[r] == PV_OK || late.s[r] == PV_ECLOSED);
        if (late.s[r] == PV_OK) assert_string_equal(late.json[r], ref.json[0]);
        free(late.json[r]);
    }
    free(ref.json[0]);
    free(pcd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_shared_by_callers),
        cmocka_unit_test(test_graphs_in_parallel),
        cmocka_unit_test(test_model_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
