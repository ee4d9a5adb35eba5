/* Planner invariants (every value placed, within the arena, no two live values overlap),
 * replay equal to a naive evaluation on random graphs (catches wrong in-place/view reuse),
 * allocation fault injection over a whole model load + run, and the loader on malformed
 * files (truncated, corrupted, wrong types, absurd dims, cycles): an error, never a crash. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/onnx.h"
#include "op_harness.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>

static void check_invariants(pvg_graph *g, pvg_plan *p)
{
    pvg_plan_info in;
    pvg_plan_info_get(p, &in);
    for (int v = 0; v < in.nvalues; v++) {
        const pvc_tensor *t = pvg_plan_value(p, v);
        if (in.first[v] < 0) continue;                     /* not computed at replay */
        int r = in.storage[v];
        if (g->values[r].is_input) continue;               /* a view of a graph input */
        if (in.offset[r] == SIZE_MAX) {
            /* only views of constants live outside the arena */
            assert_non_null(pvg_plan_value(p, r)->data);
            continue;
        }
        assert_true(in.offset[r] + in.size[r] <= in.arena_bytes);
        assert_true(pvc_nbytes(t) <= in.size[r]);
        assert_int_equal(in.offset[r] % 64, 0);
    }
    for (int a = 0; a < in.nvalues; a++) {
        if (in.storage[a] != a || in.first[a] < 0 || in.offset[a] == SIZE_MAX || !in.size[a]) continue;
        for (int b = a + 1; b < in.nvalues; b++) {
            if (in.storage[b] != b || in.first[b] < 0 || in.offset[b] == SIZE_MAX || !in.size[b]) continue;
            bool live_together = !(in.last[a] < in.first[b] || in.last[b] < in.first[a]);
            bool overlap = in.offset[a] < in.offset[b] + in.size[b] && in.offset[b] < in.offset[a] + in.size[a];
            if (live_together && overlap) fail_msg("values %s and %s overlap while both live", g->values[a].name, g->values[b].name);
        }
    }
}

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void add_node(pvg_graph *g, const char *op, int a, int b, int out)
{
    pvg_node *n;
    char name[32];
    snprintf(name, sizeof name, "n%d", g->nnodes);
    assert_int_equal(pvg_node_add(g, name, op, "", b >= 0 ? 2 : 1, 1, &n), PV_OK);
    n->in[0] = a;
    if (b >= 0) n->in[1] = b;
    n->out[0] = out;
    g->values[out].producer = g->nnodes - 1;
}

/* One to three distinct random non-input values become the graph's outputs. */
static void pick_outputs(pvg_graph *g)
{
    int nout = 1 + (int)(rnd() % 3);
    g->outputs = pvc_calloc((size_t)nout, sizeof(int));
    for (int i = 0; i < nout; i++) {
        int v = 1 + (int)(rnd() % (unsigned)(g->nvalues - 1));
        bool dup = false;
        for (int k = 0; k < g->noutputs; k++) dup |= g->outputs[k] == v;
        if (dup) continue;
        g->values[v].is_output = true;
        g->outputs[g->noutputs++] = v;
    }
}

/* Random DAGs of views (Identity), in-place candidates (Relu, Sigmoid, Neg) and Add over
 * [3,5] f32: replay must equal evaluating node by node into separate buffers. */
static void test_random_graphs(void **state)
{
    (void)state;
    for (int trial = 0; trial < 200; trial++) {
        rng_state = (uint64_t)trial * 7919 + 1;
        pvg_graph *g = NULL;
        assert_int_equal(pvg_graph_create(&g), PV_OK);
        int x = pvg_value_get(g, "x");
        g->values[x].is_input = true;
        g->values[x].decl = oph_tensor(PV_F32, 2, (int64_t[]){ 3, 5 }, NULL);
        g->inputs = pvc_calloc(1, sizeof(int));
        g->inputs[g->ninputs++] = x;
        int nn = 3 + (int)(rnd() % 25);
        static const char *const ops[] = { "Identity", "Relu", "Sigmoid", "Neg", "Add", "Add" };
        for (int i = 0; i < nn; i++) {
            char vn[16];
            snprintf(vn, sizeof vn, "v%d", i);
            int out = pvg_value_get(g, vn);
            int a = (int)(rnd() % (unsigned)(g->nvalues - 1)), b = (int)(rnd() % (unsigned)(g->nvalues - 1));
            const char *op = ops[rnd() % 6];
            add_node(g, op, a, strcmp(op, "Add") ? -1 : b, out);
        }
        pick_outputs(g);
        assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
        float xin[15];
        for (int i = 0; i < 15; i++) xin[i] = (float)((int)(rnd() % 200) - 100) / 37.0f;
        pvc_tensor xt = oph_tensor(PV_F32, 2, (int64_t[]){ 3, 5 }, xin);
        pvg_plan *p = NULL;
        assert_int_equal(pvg_plan_create(g, &xt, &p), PV_OK);
        check_invariants(g, p);
        pvc_tensor outs[4];
        assert_int_equal(pvg_plan_run(p, &xt, NULL, outs), PV_OK);
        /* naive: every value its own buffer, nodes in creation order (already topological) */
        float (*ref)[15] = calloc((size_t)g->nvalues, sizeof *ref);
        memcpy(ref[x], xin, sizeof xin);
        for (int i = 0; i < g->nnodes; i++) {
            pvg_node *n = &g->nodes[i];
            pvc_tensor ins[2];
            for (int k = 0; k < n->nin; k++) ins[k] = oph_tensor(PV_F32, 2, (int64_t[]){ 3, 5 }, ref[n->in[k]]);
            oph_result r = oph_run(n->op_type, 17, ins, n->nin, 0, 1, NULL, 0);
            assert_int_equal(r.status, PV_OK);
            memcpy(ref[n->out[0]], r.out[0].data, sizeof ref[0]);
            oph_free(&r);
        }
        for (int i = 0; i < g->noutputs; i++) {
            const float *got = outs[i].data;
            for (int k = 0; k < 15; k++)
                if (got[k] != ref[g->outputs[i]][k]) fail_msg("trial %d output %d element %d: %g vs %g", trial, i, k, got[k], ref[g->outputs[i]][k]);
        }
        free(ref);
        pvg_plan_free(p);
        pvg_graph_free(g);
    }
}

/* Random DAGs with Concat along axis 1 of [1, 16k] values (outer 1, 64-byte chunks: the planner
 * may place each input inside the Concat's output), nested Concats, members read again after the Concat,
 * the graph input and repeated values as Concat inputs, Concat outputs as outputs, in-place
 * and view candidates on both sides. Replay must equal a naive evaluation. */
static void test_random_concat_graphs(void **state)
{
    (void)state;
    enum { L = 16, MAXV = 64, MAXW = 6 * L };
    int placed = 0;                        /* Concat inputs the planner put inside the output */
    for (int trial = 0; trial < 300; trial++) {
        rng_state = (uint64_t)trial * 104729 + 7;
        pvg_graph *g = NULL;
        assert_int_equal(pvg_graph_create(&g), PV_OK);
        int x = pvg_value_get(g, "x");
        g->values[x].is_input = true;
        g->values[x].decl = oph_tensor(PV_F32, 2, (int64_t[]){ 1, L }, NULL);
        g->inputs = pvc_calloc(1, sizeof(int));
        g->inputs[g->ninputs++] = x;
        int width[MAXV] = { 0 };           /* per value: its length (a multiple of L) */
        width[x] = L;
        int nn = 4 + (int)(rnd() % 20);
        static const char *const un[] = { "Identity", "Relu", "Sigmoid", "Neg" };
        for (int i = 0; i < nn && g->nvalues < MAXV; i++) {
            char vn[16];
            snprintf(vn, sizeof vn, "v%d", i);
            int out = pvg_value_get(g, vn), nv = g->nvalues - 1;
            int a = (int)(rnd() % (unsigned)nv), kind = (int)(rnd() % 4);
            if (kind == 0) {               /* Concat of 2 or 3 values (repeats allowed; a Concat
                                              output may be joined again: nested) */
                int k = 2 + (int)(rnd() % 2), ins[3], got = 0, total = 0;
                for (int t = 0; t < 40 && got < k; t++) {
                    int c = (int)(rnd() % (unsigned)nv);
                    if (total + width[c] <= MAXW) { ins[got++] = c; total += width[c]; }
                }
                if (got < 2) { kind = 1; }
                else {
                    pvg_node *n;
                    snprintf(vn, sizeof vn, "n%d", g->nnodes);
                    assert_int_equal(pvg_node_add(g, vn, "Concat", "", got, 1, &n), PV_OK);
                    for (int t = 0; t < got; t++) n->in[t] = ins[t];
                    n->out[0] = out;
                    n->attrs = pvc_calloc(1, sizeof *n->attrs);
                    n->nattrs = 1;
                    n->attrs[0].name = pvc_strdup("axis");
                    n->attrs[0].type = PVG_ATTR_INT;
                    n->attrs[0].i = 1;
                    g->values[out].producer = g->nnodes - 1;
                    width[out] = total;
                    continue;
                }
            }
            if (kind == 3) {               /* Add of two values of one width */
                int b = (int)(rnd() % (unsigned)nv);
                if (width[b] == width[a]) {
                    add_node(g, "Add", a, b, out);
                    width[out] = width[a];
                    continue;
                }
            }
            add_node(g, un[rnd() % 4], a, -1, out);
            width[out] = width[a];
        }
        pick_outputs(g);
        assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
        float xin[L];
        for (int i = 0; i < L; i++) xin[i] = (float)((int)(rnd() % 200) - 100) / 37.0f;
        pvc_tensor xt = oph_tensor(PV_F32, 2, (int64_t[]){ 1, L }, xin);
        pvg_plan *p = NULL;
        assert_int_equal(pvg_plan_create(g, &xt, &p), PV_OK);
        check_invariants(g, p);
        pvg_plan_info info;
        pvg_plan_info_get(p, &info);
        for (int i = 0; i < g->nnodes; i++)
            if (!strcmp(g->nodes[i].op_type, "Concat"))
                for (int k = 0; k < g->nodes[i].nin; k++) placed += info.storage[g->nodes[i].in[k]] == g->nodes[i].out[0];
        pvc_tensor outs[4];
        assert_int_equal(pvg_plan_run(p, &xt, NULL, outs), PV_OK);
        float (*ref)[MAXW] = calloc((size_t)g->nvalues, sizeof *ref);
        memcpy(ref[x], xin, sizeof xin);
        for (int i = 0; i < g->nnodes; i++) {
            pvg_node *n = &g->nodes[i];
            pvc_tensor ins[3];
            for (int k = 0; k < n->nin; k++) ins[k] = oph_tensor(PV_F32, 2, (int64_t[]){ 1, width[n->in[k]] }, ref[n->in[k]]);
            oph_attr ax = OPH_INT("axis", 1);
            bool cat = !strcmp(n->op_type, "Concat");
            oph_result r = oph_run(n->op_type, 17, ins, n->nin, 0, 1, cat ? &ax : NULL, cat ? 1 : 0);
            assert_int_equal(r.status, PV_OK);
            memcpy(ref[n->out[0]], r.out[0].data, (size_t)width[n->out[0]] * sizeof(float));
            oph_free(&r);
        }
        for (int i = 0; i < g->noutputs; i++) {
            const float *got = outs[i].data;
            int v = g->outputs[i];
            assert_int_equal(pvc_numel(&outs[i]), width[v]);
            for (int k = 0; k < width[v]; k++)
                if (got[k] != ref[v][k]) fail_msg("trial %d output %d element %d: %g vs %g", trial, i, k, got[k], ref[v][k]);
        }
        free(ref);
        pvg_plan_free(p);
        pvg_graph_free(g);
    }
    if (!getenv("PERCEIVE_CONCAT_IN_PLACE")) assert_true(placed > 100);
}

/* Transpose chains: the pass composes each pair into one Transpose (the first one kept when
 * its output is also read elsewhere, here a graph output); replay equals evaluating every
 * Transpose of the original chain in turn. */
static void test_transpose_pairs(void **state)
{
    (void)state;
    int folded_total = 0;
    for (int trial = 0; trial < 100; trial++) {
        rng_state = (uint64_t)trial * 31337 + 5;
        pvg_graph *g = NULL;
        assert_int_equal(pvg_graph_create(&g), PV_OK);
        int x = pvg_value_get(g, "x");
        g->values[x].is_input = true;
        int64_t dims[4] = { 2, 3, 4, 5 };
        g->values[x].decl = oph_tensor(PV_F32, 4, dims, NULL);
        g->inputs = pvc_calloc(1, sizeof(int));
        g->inputs[g->ninputs++] = x;
        int len = 2 + (int)(rnd() % 3), prev = x;
        int64_t perms[4][4];
        bool keep_mid = rnd() % 2;
        g->outputs = pvc_calloc(2, sizeof(int));
        for (int i = 0; i < len; i++) {
            int64_t *pm = perms[i];
            for (int k = 0; k < 4; k++) pm[k] = k;
            for (int k = 3; k > 0; k--) { int j = (int)(rnd() % (unsigned)(k + 1)); int64_t t = pm[k]; pm[k] = pm[j]; pm[j] = t; }
            char vn[16];
            snprintf(vn, sizeof vn, "t%d", i);
            int out = pvg_value_get(g, vn);
            pvg_node *n;
            assert_int_equal(pvg_node_add(g, vn, "Transpose", "", 1, 1, &n), PV_OK);
            n->in[0] = prev;
            n->out[0] = out;
            n->attrs = pvc_calloc(1, sizeof *n->attrs);
            n->nattrs = 1;
            n->attrs[0].name = pvc_strdup("perm");
            n->attrs[0].type = PVG_ATTR_INTS;
            n->attrs[0].ints = pvc_calloc(4, sizeof(int64_t));
            memcpy(n->attrs[0].ints, pm, 4 * sizeof(int64_t));
            n->attrs[0].n = 4;
            g->values[out].producer = g->nnodes - 1;
            if (keep_mid && i == 0) { g->values[out].is_output = true; g->outputs[g->noutputs++] = out; }
            prev = out;
        }
        g->values[prev].is_output = true;
        g->outputs[g->noutputs++] = prev;
        assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
        pvg_pass_stats st;
        assert_int_equal(pvg_passes_run(g, true, &st), PV_OK);
        folded_total += st.transposes_folded;
        float xin[120];
        for (int i = 0; i < 120; i++) xin[i] = (float)i;
        pvc_tensor xt = oph_tensor(PV_F32, 4, dims, xin);
        pvg_plan *p = NULL;
        assert_int_equal(pvg_plan_create(g, &xt, &p), PV_OK);
        pvc_tensor outs[2];
        assert_int_equal(pvg_plan_run(p, &xt, NULL, outs), PV_OK);
        /* naive: apply the original permutations one after the other (index bookkeeping only) */
        float cur[120], nxt[120], mid[120];
        int64_t cd[4] = { 2, 3, 4, 5 };
        memcpy(cur, xin, sizeof cur);
        for (int i = 0; i < len; i++) {
            oph_attr pa = OPH_INTS("perm", perms[i], 4);
            pvc_tensor t = oph_tensor(PV_F32, 4, cd, cur);
            oph_result r = oph_run("Transpose", 17, &t, 1, 0, 1, &pa, 1);
            assert_int_equal(r.status, PV_OK);
            memcpy(nxt, r.out[0].data, sizeof nxt);
            for (int k = 0; k < 4; k++) cd[k] = r.out[0].dims[k];
            oph_free(&r);
            memcpy(cur, nxt, sizeof cur);
            if (i == 0) memcpy(mid, cur, sizeof mid);
        }
        const float *got = outs[g->noutputs - 1].data;
        for (int k = 0; k < 120; k++) if (got[k] != cur[k]) fail_msg("trial %d element %d: %g vs %g", trial, k, got[k], cur[k]);
        if (keep_mid) {
            const float *gm = outs[0].data;
            for (int k = 0; k < 120; k++) if (gm[k] != mid[k]) fail_msg("trial %d kept output element %d", trial, k);
        }
        pvg_plan_free(p);
        pvg_graph_free(g);
    }
    assert_true(folded_total > 100);
}

static const char *demo(void) { return "tests/fixtures/demo/model.onnx"; }

static void run_demo(pv_graph *g, pv_status *st)
{
    static float x[2 * 3 * 8 * 8];
    for (int i = 0; i < (int)PVC_COUNTOF(x); i++) x[i] = (float)(i % 17) / 17.0f - 0.5f;
    pv_tensor in = { .name = "x", .dtype = PV_F32, .rank = 4, .dims = { 2, 3, 8, 8 }, .data = x };
    pv_tensor out[4];
    size_t n = 4;
    *st = pv_graph_run(g, &in, 1, out, &n);
}

static void test_demo_plan_invariants(void **state)
{
    (void)state;
    void *buf;
    size_t len;
    pvc_msg msg = {{0}};
    assert_int_equal(pvg_read_file(demo(), &buf, &len, &msg), PV_OK);
    pvg_graph *g = NULL;
    assert_int_equal(pvg_graph_load_onnx(buf, len, ".", &g, &msg), PV_OK);
    pvc_free(buf);
    pvg_pass_stats st;
    assert_int_equal(pvg_passes_run(g, true, &st), PV_OK);
    assert_int_equal(st.bn_folded, 1);
    assert_true(st.act_fused >= 1);
    int live = 0;
    for (int i = 0; i < g->nnodes; i++) live += !g->nodes[i].dead;
    for (int b = 1; b <= 3; b++) {
        pvc_tensor xt = oph_tensor(PV_F32, 4, (int64_t[]){ b, 3, 8, 8 }, NULL);
        pvg_plan *p = NULL;
        assert_int_equal(pvg_plan_create(g, &xt, &p), PV_OK);
        check_invariants(g, p);
        pvg_plan_info info;
        pvg_plan_info_get(p, &info);
        /* Shape -> Gather -> Concat fold at plan time; Reshape is a view */
        assert_int_equal(info.norder, live - 3);
        pvg_plan_free(p);
    }
    pvg_graph_free(g);
}

/* Fail the 1st, 2nd, ... allocation of open + run + close: each gives PV_ENOMEM with a message
 * (or succeeds, once past the last allocation) and leaks nothing. */
static void test_alloc_fault_injection(void **state)
{
    (void)state;
    int failures = 0;
    for (long k = 1; k < 100000; k++) {
        pvc_alloc_test_begin(k);
        pv_graph *g = NULL;
        pv_graph_options opt = { .threads = 2 };
        pv_status s = pv_graph_open(demo(), &opt, &g);
        if (s == PV_OK) {
            run_demo(g, &s);
            pv_graph_close(g);
        }
        bool fired = pvc_alloc_failed();
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0) fail_msg("allocation %ld failed: %ld blocks leaked", k, live);
        if (!fired) { assert_int_equal(s, PV_OK); break; }
        if (s == PV_OK) continue;        /* a failure that was recovered from (none yet) */
        assert_int_equal(s, PV_ENOMEM);
        assert_true(strlen(pv_last_error()) > 0);
        failures++;
    }
    assert_true(failures > 20);
}

/* Once a variant is planned, replay allocates nothing (counted through the allocator hook). */
static void test_run_allocates_nothing(void **state)
{
    (void)state;
    pv_graph *g = NULL;
    pv_graph_options opt = { .threads = 2 };
    assert_int_equal(pv_graph_open(demo(), &opt, &g), PV_OK);
    pv_status s;
    run_demo(g, &s);                 /* plans the [2,3,8,8] variant */
    assert_int_equal(s, PV_OK);
    pvc_alloc_test_begin(0);
    for (int i = 0; i < 5; i++) { run_demo(g, &s); assert_int_equal(s, PV_OK); }
    long n = pvc_alloc_count();
    pvc_alloc_test_end();
    assert_int_equal(n, 0);
    pv_graph_close(g);
}

/* BatchNorm folding and activation fusion change nothing beyond float rounding. */
static void test_fusion_preserves_results(void **state)
{
    (void)state;
    pv_graph *a = NULL, *b = NULL;
    pv_graph_options fused = { .threads = 1 }, plain = { .threads = 1, .no_fuse = 1 };
    assert_int_equal(pv_graph_open(demo(), &fused, &a), PV_OK);
    assert_int_equal(pv_graph_open(demo(), &plain, &b), PV_OK);
    pv_graph_stats sa, sb;
    static float x[2 * 3 * 8 * 8];
    for (int i = 0; i < (int)PVC_COUNTOF(x); i++) x[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    pv_tensor in = { .name = "x", .dtype = PV_F32, .rank = 4, .dims = { 2, 3, 8, 8 }, .data = x };
    pv_tensor oa[2], ob[2];
    size_t na = 2, nb = 2;
    assert_int_equal(pv_graph_run(a, &in, 1, oa, &na), PV_OK);
    assert_int_equal(pv_graph_run(b, &in, 1, ob, &nb), PV_OK);
    pv_graph_stats_get(a, &sa);
    pv_graph_stats_get(b, &sb);
    assert_true(sa.nodes_run < sb.nodes_run);        /* BN and two Relus are gone */
    for (size_t k = 0; k < na; k++) {
        const float *p = oa[k].data, *q = ob[k].data;
        for (int64_t i = 0; i < pv_tensor_numel(&oa[k]); i++)
            if (fabsf(p[i] - q[i]) > 1e-5f + 1e-5f * fabsf(q[i])) fail_msg("output %zu element %lld: %g vs %g", k, (long long)i, p[i], q[i]);
    }
    pv_graph_close(a);
    pv_graph_close(b);
}

static void expect_refused(const void *buf, size_t len, const char *what)
{
    pv_graph *g = NULL;
    pv_status s = pv_graph_open_memory(buf, len, "tests/fixtures/malformed", NULL, &g);
    if (s == PV_OK) {
        pv_status r;
        run_demo(g, &r);           /* may fail on inputs, must not crash */
        pv_graph_close(g);
        return;
    }
    if (!strlen(pv_last_error())) fail_msg("%s: error without a message", what);
}

static void test_malformed_files(void **state)
{
    (void)state;
    DIR *d = opendir("tests/fixtures/malformed");
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".onnx")) continue;
        char p[512];
        snprintf(p, sizeof p, "tests/fixtures/malformed/%s", e->d_name);
        pv_graph *g = NULL;
        pv_status s = pv_graph_open(p, NULL, &g);
        if (s == PV_OK) fail_msg("%s loaded", e->d_name);
        assert_true(strlen(pv_last_error()) > 0);
        n++;
    }
    closedir(d);
    assert_true(n >= 20);
}

static void test_truncated_and_corrupted(void **state)
{
    (void)state;
    void *buf;
    size_t len;
    pvc_msg msg = {{0}};
    assert_int_equal(pvg_read_file(demo(), &buf, &len, &msg), PV_OK);
    size_t step = getenv("PV_SANITIZED") ? 7 : 1;
    for (size_t cut = 0; cut < len; cut += step) expect_refused(buf, cut, "truncated");
    unsigned char *c = malloc(len);
    rng_state = 99;
    for (int t = 0; t < 300; t++) {
        memcpy(c, buf, len);
        for (int k = 0; k < 1 + t % 4; k++) c[rnd() % len] ^= (unsigned char)(1u << (rnd() % 8));
        expect_refused(c, len, "corrupted");
    }
    free(c);
    pvc_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_random_concat_graphs),
        cmocka_unit_test(test_transpose_pairs),
        cmocka_unit_test(test_demo_plan_invariants),
        cmocka_unit_test(test_alloc_fault_injection),
        cmocka_unit_test(test_run_allocates_nothing),
        cmocka_unit_test(test_fusion_preserves_results),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_truncated_and_corrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
