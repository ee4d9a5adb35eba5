/* Per-node overhead work of the planner and passes, each against its plain twin:
 *   - Conv -> exact GELU chain fused into the Conv (PVG_ACT_GELU) vs the unfused graph, on the
 *     oneDNN path and on perceive's own (PERCEIVE_DNNL=0), dense and depthwise;
 *   - small nodes run on one thread (plan_work.c) vs every node on the pool vs every node alone;
 *   - the work estimate itself on a Conv and a MatMul.
 * Tolerance: 1e-5 absolute + 1e-5 relative (the fused GELU is oneDNN's gelu_erf or libm's erff
 * where the unfused one is perceive's vector erf, each within 1e-7 of erf). */
#include "graph/graph.h"
#include "graph/plan_impl.h"
#include "op_harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t seed = 12345;
static float frand(void)
{
    seed = seed * 1664525u + 1013904223u;
    return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int gv(pvg_graph *g, const char *name)
{
    int v = pvg_value_get(g, name);
    assert_true(v >= 0);
    return v;
}

static void g_input(pvg_graph *g, const char *name, int rank, const int64_t *dims)
{
    int v = gv(g, name);
    g->values[v].is_input = true;
    g->values[v].decl = oph_tensor(PV_F32, rank, dims, NULL);
    g->inputs = pvc_realloc(g->inputs, (size_t)(g->ninputs + 1) * sizeof(int));
    g->inputs[g->ninputs++] = v;
}

/* A constant f32 tensor of random values in [-scale, scale] (scalar: value = scale). */
static void g_const(pvg_graph *g, const char *name, int rank, const int64_t *dims, float scale, bool scalar)
{
    int v = gv(g, name);
    pvg_value *val = &g->values[v];
    val->decl = oph_tensor(PV_F32, rank, dims, NULL);
    int64_t n = pvc_numel(&val->decl);
    float *d = pvc_malloc_aligned((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = scalar ? scale : scale * frand();
    val->data = d;
    val->is_const = true;
}

static pvg_node *g_node(pvg_graph *g, const char *op, const char *ins, const char *out)
{
    char buf[256], *names[4];
    int nin = 0;
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *t = strtok(buf, ","); t && nin < 4; t = strtok(NULL, ",")) names[nin++] = t;
    int iv[4];
    for (int k = 0; k < nin; k++) iv[k] = gv(g, names[k]);
    int ov = gv(g, out);
    pvg_node *n;
    char name[64];
    snprintf(name, sizeof name, "n%d_%s", g->nnodes, op);
    assert_int_equal(pvg_node_add(g, name, op, "", nin, 1, &n), PV_OK);
    for (int k = 0; k < nin; k++) n->in[k] = iv[k];
    n->out[0] = ov;
    g->values[ov].producer = g->nnodes - 1;
    return n;
}

static void g_int_attr(pvg_node *n, const char *name, int64_t i)
{
    n->attrs = pvc_calloc(1, sizeof *n->attrs);
    n->nattrs = 1;
    n->attrs[0].name = pvc_strdup(name);
    n->attrs[0].type = PVG_ATTR_INT;
    n->attrs[0].i = i;
}

static void g_output(pvg_graph *g, const char *name)
{
    int v = gv(g, name);
    g->values[v].is_output = true;
    g->outputs = pvc_realloc(g->outputs, (size_t)(g->noutputs + 1) * sizeof(int));
    g->outputs[g->noutputs++] = v;
}

/* torch's exact GELU after value c, into y: Div(c, sqrt2) Erf Add(e, 1) Mul(c, a) Mul(m, 0.5) */
static void g_gelu(pvg_graph *g, const char *c, const char *y, int i)
{
    char r2[16], one[16], half[16], d[16], e[16], a[16], m[16], ins[64];
    snprintf(r2, sizeof r2, "r2_%d", i); snprintf(one, sizeof one, "one_%d", i); snprintf(half, sizeof half, "half_%d", i);
    snprintf(d, sizeof d, "d_%d", i); snprintf(e, sizeof e, "e_%d", i); snprintf(a, sizeof a, "a_%d", i);
    snprintf(m, sizeof m, "m_%d", i);
    g_const(g, r2, 0, NULL, 1.41421354f, true);
    g_const(g, one, 0, NULL, 1.0f, true);
    g_const(g, half, 0, NULL, 0.5f, true);
    snprintf(ins, sizeof ins, "%s,%s", c, r2); g_node(g, "Div", ins, d);
    g_node(g, "Erf", d, e);
    snprintf(ins, sizeof ins, "%s,%s", e, one); g_node(g, "Add", ins, a);
    snprintf(ins, sizeof ins, "%s,%s", c, a); g_node(g, "Mul", ins, m);
    snprintf(ins, sizeof ins, "%s,%s", m, half); g_node(g, "Mul", ins, y);
}

typedef struct shape { int64_t cin, cout, group, h, w; } shape;

/* x [1, cin, h, w] -> Conv(W, B) -> GELU -> Conv 1x1 (cout -> 4) -> GELU -> y; the second
 * conv's output is also read by a Relu (so its GELU chain has two readers of c2: only the
 * first conv's GELU may fuse when keep_second is set). */
static void build(pvg_graph *g, const shape *s, bool keep_second)
{
    int64_t xd[4] = { 1, s->cin, s->h, s->w }, wd[4] = { s->cout, s->cin / s->group, 3, 3 }, bd[1] = { s->cout };
    int64_t w2d[4] = { 4, s->cout, 1, 1 }, b2d[1] = { 4 };
    g_input(g, "x", 4, xd);
    g_const(g, "W", 4, wd, 0.5f, false);
    g_const(g, "B", 1, bd, 0.5f, false);
    g_const(g, "W2", 4, w2d, 0.5f, false);
    g_const(g, "B2", 1, b2d, 0.5f, false);
    pvg_node *c = g_node(g, "Conv", "x,W,B", "c1");
    if (s->group > 1) g_int_attr(c, "group", s->group);
    g_gelu(g, "c1", "y1", 1);
    g_node(g, "Conv", "y1,W2,B2", "c2");
    g_gelu(g, "c2", "y", 2);
    g_output(g, "y");
    if (keep_second) { g_node(g, "Relu", "c2", "r"); g_output(g, "r"); }
}

static int live(const pvg_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += !g->nodes[i].dead;
    return n;
}

/* Runs s's graph fused and unfused on one input with a 2-thread pool and compares outputs. */
static void fused_vs_unfused(const shape *s, bool keep_second)
{
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(2, &pool), PV_OK);
    int64_t xd[4] = { 1, s->cin, s->h, s->w }, n = s->cin * s->h * s->w;
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = 3.0f * frand();
    pvc_tensor in = oph_tensor(PV_F32, 4, xd, x), out[2][2];
    pvg_graph *g[2];
    pvg_plan *p[2];
    pvg_pass_stats st;
    uint32_t s0 = seed;
    for (int f = 0; f < 2; f++) {
        seed = s0;   /* same weights */
        assert_int_equal(pvg_graph_create(&g[f]), PV_OK);
        g[f]->opset = 17;
        g[f]->threads = 2;
        build(g[f], s, keep_second);
        assert_int_equal(pvg_graph_bind_ops(g[f]), PV_OK);
        assert_int_equal(pvg_passes_run(g[f], f == 0, &st), PV_OK);
        if (f == 0) {
            int gelu_convs = 0;
            for (int i = 0; i < g[0]->nnodes; i++)
                if (!g[0]->nodes[i].dead && !strcmp(g[0]->nodes[i].op_type, "Conv")) gelu_convs += g[0]->nodes[i].act.kind == PVG_ACT_GELU;
            assert_int_equal(gelu_convs, keep_second ? 1 : 2);
            assert_int_equal(live(g[0]), keep_second ? 4 : 2);   /* kept: the second GELU + the Relu */
        }
        if (pvg_plan_create(g[f], &in, &p[f]) != PV_OK) fail_msg("plan: %s", g[f]->msg.text);
        assert_int_equal(pvg_plan_run(p[f], &in, pool, out[f]), PV_OK);
    }
    for (int o = 0; o < g[0]->noutputs; o++) {
        int64_t m = pvc_numel(&out[1][o]);
        assert_int_equal(pvc_numel(&out[0][o]), m);
        const float *a = out[0][o].data, *b = out[1][o].data;
        for (int64_t i = 0; i < m; i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-5f * fabsf(b[i])))
                fail_msg("cin %lld group %lld output %d [%lld]: fused %.9g unfused %.9g", (long long)s->cin,
                         (long long)s->group, o, (long long)i, (double)a[i], (double)b[i]);
    }
    for (int f = 0; f < 2; f++) { pvg_plan_free(p[f]); pvg_graph_free(g[f]); }
    free(x);
    pvc_pool_free(pool);
}

static const shape shapes[] = {
    { 8, 16, 1, 9, 11 },     /* dense 3x3 */
    { 16, 16, 16, 12, 7 },   /* depthwise */
    { 3, 24, 1, 20, 33 },    /* few input channels, larger plane (not small: uses the pool) */
};

static void test_conv_gelu_fused(void **state)
{
    (void)state;
    const char *modes[] = { NULL, "0" };   /* oneDNN where it takes the shape; perceive's own path */
    for (int m = 0; m < 2; m++) {
        if (modes[m]) setenv("PERCEIVE_DNNL", modes[m], 1); else unsetenv("PERCEIVE_DNNL");
        for (size_t i = 0; i < PVC_COUNTOF(shapes); i++) {
            fused_vs_unfused(&shapes[i], false);
            fused_vs_unfused(&shapes[i], true);
        }
    }
    unsetenv("PERCEIVE_DNNL");
}

/* One graph planned three times: no small nodes, the default limit, every node small. */
static void test_solo_matches_pool(void **state)
{
    (void)state;
    const char *limits[] = { "0", NULL, "1e30" };
    shape s = { 8, 16, 1, 40, 50 };   /* first conv ~2.6 M multiply-adds: above the default */
    pvc_pool *pool;
    assert_int_equal(pvc_pool_create(2, &pool), PV_OK);
    int64_t xd[4] = { 1, s.cin, s.h, s.w }, n = s.cin * s.h * s.w;
    float *x = malloc((size_t)n * sizeof *x), *want = NULL;
    for (int64_t i = 0; i < n; i++) x[i] = 3.0f * frand();
    pvc_tensor in = oph_tensor(PV_F32, 4, xd, x), out[2];
    uint32_t s0 = seed;
    int64_t m = 0;
    for (int l = 0; l < 3; l++) {
        if (limits[l]) setenv("PERCEIVE_SOLO_WORK", limits[l], 1); else unsetenv("PERCEIVE_SOLO_WORK");
        seed = s0;
        pvg_graph *g;
        pvg_plan *p;
        assert_int_equal(pvg_graph_create(&g), PV_OK);
        g->opset = 17;
        g->threads = 2;
        build(g, &s, true);
        assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
        assert_int_equal(pvg_passes_run(g, true, NULL), PV_OK);
        if (pvg_plan_create(g, &in, &p) != PV_OK) fail_msg("plan: %s", g->msg.text);
        int nsolo = 0;
        for (int k = 0; p->solo && k < p->norder; k++) nsolo += p->solo[k];
        if (l == 0) assert_int_equal(nsolo, 0);
        if (l == 1) assert_true(nsolo > 0 && nsolo < p->norder);   /* the first conv keeps the pool */
        if (l == 2) assert_int_equal(nsolo, p->norder);
        for (int r = 0; r < 2; r++) assert_int_equal(pvg_plan_run(p, &in, pool, out), PV_OK);
        if (!want) {
            m = pvc_numel(&out[0]);
            want = malloc((size_t)m * sizeof *want);
            memcpy(want, out[0].data, (size_t)m * sizeof *want);
        } else {
            const float *got = out[0].data;
            for (int64_t i = 0; i < m; i++)
                if (!(fabsf(got[i] - want[i]) <= 1e-5f + 1e-5f * fabsf(want[i])))
                    fail_msg("limit %s [%lld]: %.9g vs %.9g", limits[l] ? limits[l] : "default", (long long)i, (double)got[i], (double)want[i]);
        }
        pvg_plan_free(p);
        pvg_graph_free(g);
    }
    unsetenv("PERCEIVE_SOLO_WORK");
    free(want);
    free(x);
    pvc_pool_free(pool);
}

static void test_node_work(void **state)
{
    (void)state;
    pvg_graph *g;
    assert_int_equal(pvg_graph_create(&g), PV_OK);
    shape s = { 8, 16, 1, 10, 10 };
    build(g, &s, false);
    pvg_node *c = &g->nodes[0];
    int64_t xd[4] = { 1, 8, 10, 10 }, wd[4] = { 16, 8, 3, 3 }, bd[1] = { 16 }, yd[4] = { 1, 16, 8, 8 };
    float w[1];
    pvc_tensor in[3] = { oph_tensor(PV_F32, 4, xd, NULL), oph_tensor(PV_F32, 4, wd, w), oph_tensor(PV_F32, 1, bd, w) };
    pvc_tensor out[1] = { oph_tensor(PV_F32, 4, yd, NULL) };
    /* reads x (800) + writes y (1024) + 1024 outputs x 72 multiply-adds / 20 */
    assert_true(fabs(pvg_node_work(c, in, out) - (800.0 + 1024.0 + 1024.0 * 72.0 / 20.0)) < 1e-9);
    pvg_node *mm;
    assert_int_equal(pvg_node_add(g, "mm", "MatMul", "", 2, 1, &mm), PV_OK);
    mm->in[0] = gv(g, "x");
    mm->in[1] = gv(g, "W");
    mm->out[0] = gv(g, "mmo");
    int64_t ad[3] = { 2, 5, 7 }, bd2[2] = { 7, 3 }, od[3] = { 2, 5, 3 };
    pvc_tensor mi[2] = { oph_tensor(PV_F32, 3, ad, NULL), oph_tensor(PV_F32, 2, bd2, w) }, mo = oph_tensor(PV_F32, 3, od, NULL);
    assert_true(fabs(pvg_node_work(mm, mi, &mo) - (70.0 + 30.0 + 30.0 * 7.0 / 20.0)) < 1e-9);
    pvg_node *custom;
    assert_int_equal(pvg_node_add(g, "cu", "Thing", "example", 1, 1, &custom), PV_OK);
    custom->in[0] = gv(g, "x");
    custom->out[0] = gv(g, "cuo");
    assert_true(pvg_node_work(custom, in, out) < 0);   /* unknown cost: keeps the pool */
    pvg_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_gelu_fused),
        cmocka_unit_test(test_solo_matches_pool),
        cmocka_unit_test(test_node_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
