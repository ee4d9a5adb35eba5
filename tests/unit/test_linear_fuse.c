/* The linear-layer fusion (graph/passes/linear.c) and perceive::Linear (graph/ops/linear.c):
 * in-memory graphs of MatMul + Add(bias) / Gemm with a following Gelu and / or residual Add are
 * planned and run with the passes on and off, on the same inputs; outputs must agree within
 * 1e-5 + 1e-5 |unfused| (the same packed GEMM and vector GELU run either way; only the order of
 * bias, GELU and residual against the rounding of the stores differs), and the pass must have
 * made the expected number of Linear nodes. Chains the pass must leave alone are checked too
 * (an intermediate that is a graph output or read twice, a Gemm with nothing after it, a
 * non-constant weight). Residual shapes: Y's own (the epilogue), one that broadcasts into Y
 * ([N]) and one that widens Y ([2, M, N]). Also the op's errors: bad activation, K mismatch.
 * The pass is opt-in (PERCEIVE_LINEAR=1, set here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "op_harness.h"

enum { M = 7, K = 37, N = 45 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 23) - 1.0);
}

static int gv(pvg_graph *g, const char *name)
{
    int v = pvg_value_get(g, name);
    assert_true(v >= 0);
    return v;
}

static void input(pvg_graph *g, const char *name, int rank, const int64_t *dims)
{
    int v = gv(g, name);
    g->values[v].is_input = true;
    g->values[v].decl = oph_tensor(PV_F32, rank, dims, NULL);
    g->inputs = pvc_realloc(g->inputs, (size_t)(g->ninputs + 1) * sizeof(int));
    g->inputs[g->ninputs++] = v;
}

static void constant(pvg_graph *g, const char *name, int rank, const int64_t *dims)
{
    int v = gv(g, name);
    pvg_value *val = &g->values[v];
    val->decl = oph_tensor(PV_F32, rank, dims, NULL);
    int64_t n = pvc_numel(&val->decl);
    val->data = pvc_malloc_aligned((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ((float *)val->data)[i] = frand();
    val->is_const = true;
}

static pvg_node *node(pvg_graph *g, const char *op, const char *domain, const char *ins, const char *out)
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
    assert_int_equal(pvg_node_add(g, name, op, domain, nin, 1, &n), PV_OK);
    for (int k = 0; k < nin; k++) n->in[k] = iv[k];
    n->out[0] = ov;
    g->values[ov].producer = g->nnodes - 1;
    return n;
}

static void attr(pvg_node *n, const char *name, pvg_attr_type t, int64_t i, float f, const char *s)
{
    n->attrs = pvc_realloc(n->attrs, (size_t)(n->nattrs + 1) * sizeof *n->attrs);
    pvg_attr *a = &n->attrs[n->nattrs++];
    memset(a, 0, sizeof *a);
    a->name = pvc_strdup(name);
    a->type = t;
    a->i = i;
    a->f = f;
    if (s) a->s = pvc_strdup(s);
}

static void output(pvg_graph *g, const char *name)
{
    int v = gv(g, name);
    g->values[v].is_output = true;
    g->outputs = pvc_realloc(g->outputs, (size_t)(g->noutputs + 1) * sizeof(int));
    g->outputs[g->noutputs++] = v;
}

static const int64_t xd[2] = { M, K }, wd[2] = { K, N }, wtd[2] = { N, K }, bd[1] = { N }, yd[2] = { M, N };
static const int64_t wide[3] = { 2, M, N };

/* Cases: each builds its graph (inputs x and, when it has one, r of the case's shape). */
typedef struct lcase {
    const char *name;
    int rank_r;              /* r's rank; 0: no r input */
    const int64_t *rdims;
    int want;                /* Linear nodes expected */
    void (*build)(pvg_graph *g);
} lcase;

static void c_bias_gelu(pvg_graph *g)          /* MatMul + Add(b, .) + Gelu */
{
    input(g, "x", 2, xd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "b,p", "q");
    node(g, "Gelu", "perceive", "q", "y");
    output(g, "y");
}

static void c_bias_res(pvg_graph *g)           /* MatMul + Add(., b) + Add(r, .) */
{
    input(g, "x", 2, xd); input(g, "r", 2, yd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "p,b", "q");
    node(g, "Add", "", "r,q", "y");
    output(g, "y");
}

static void c_gemm_tanh_bcast(pvg_graph *g)    /* Gemm(transB, alpha, C) + Gelu tanh + Add(., r[N]) */
{
    input(g, "x", 2, xd); input(g, "r", 1, bd); constant(g, "w", 2, wtd); constant(g, "b", 1, bd);
    pvg_node *n = node(g, "Gemm", "", "x,w,b", "p");
    attr(n, "transB", PVG_ATTR_INT, 1, 0, NULL);
    attr(n, "alpha", PVG_ATTR_FLOAT, 0, 0.5f, NULL);
    n = node(g, "Gelu", "perceive", "p", "q");
    attr(n, "approximate", PVG_ATTR_STRING, 0, 0, "tanh");
    node(g, "Add", "", "q,r", "y");
    output(g, "y");
}

static void c_widen(pvg_graph *g)              /* MatMul + Add(b) + Add(r [2, M, N]) */
{
    input(g, "x", 2, xd); input(g, "r", 3, wide); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "p,b", "q");
    node(g, "Add", "", "q,r", "y");
    output(g, "y");
}

static void c_two_layers(pvg_graph *g)         /* MLP: fc1 + GELU, fc2 + bias + residual x2 */
{
    static const int64_t w2d[2] = { N, K };
    input(g, "x", 2, xd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    constant(g, "w2", 2, w2d); constant(g, "b2", 1, (const int64_t[]){ K });
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "p,b", "q");
    node(g, "Gelu", "perceive", "q", "h");
    node(g, "MatMul", "", "h,w2", "p2");
    node(g, "Add", "", "b2,p2", "q2");
    node(g, "Add", "", "x,q2", "y");
    output(g, "y");
}

static void c_mid_output(pvg_graph *g)         /* the MatMul's output is a graph output: no fusion */
{
    input(g, "x", 2, xd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "p,b", "y");
    output(g, "y");
    output(g, "p");
}

static void c_gemm_alone(pvg_graph *g)         /* a Gemm with nothing after it stays a Gemm */
{
    input(g, "x", 2, xd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "Gemm", "", "x,w,b", "y");
    output(g, "y");
}

static void c_runtime_w(pvg_graph *g)          /* W is an input: no fusion */
{
    input(g, "x", 2, xd); input(g, "r", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,r", "p");
    node(g, "Add", "", "p,b", "y");
    output(g, "y");
}

static void c_read_twice(pvg_graph *g)         /* the biased value is read twice: bias fused, no tail */
{
    input(g, "x", 2, xd); constant(g, "w", 2, wd); constant(g, "b", 1, bd);
    node(g, "MatMul", "", "x,w", "p");
    node(g, "Add", "", "p,b", "q");
    node(g, "Gelu", "perceive", "q", "h");
    node(g, "Add", "", "q,h", "y");
    output(g, "y");
}

static const lcase cases[] = {
    { "bias + gelu", 0, NULL, 1, c_bias_gelu },
    { "bias + residual", 2, yd, 1, c_bias_res },
    { "gemm + gelu_tanh + broadcast residual", 1, bd, 1, c_gemm_tanh_bcast },
    { "widening residual", 3, wide, 1, c_widen },
    { "two layers", 0, NULL, 2, c_two_layers },
    { "intermediate is an output", 0, NULL, 0, c_mid_output },
    { "gemm alone", 0, NULL, 0, c_gemm_alone },
    { "runtime weight", 2, wd, 0, c_runtime_w },
    { "read twice", 0, NULL, 1, c_read_twice },
};

static int count_linear(const pvg_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += !g->nodes[i].dead && !strcmp(g->nodes[i].op_type, "Linear");
    return n;
}

static void run_case(const lcase *c, pvc_precision prec)
{
    float xs[M * K], rs[K * N];   /* r: up to [K, N] (the runtime weight) */
    for (int i = 0; i < M * K; i++) xs[i] = 2.0f * frand();
    for (int i = 0; i < K * N; i++) rs[i] = frand();
    pvc_tensor outs[2][2];
    pvg_graph *g[2];
    pvg_plan *p[2];
    uint64_t seed = rng;
    for (int f = 0; f < 2; f++) {
        rng = seed;   /* both graphs get the same constants */
        assert_int_equal(pvg_graph_create(&g[f]), PV_OK);
        g[f]->opset = 17;
        g[f]->precision = prec;
        c->build(g[f]);
        assert_int_equal(pvg_graph_bind_ops(g[f]), PV_OK);
        pvg_pass_stats st;
        assert_int_equal(pvg_passes_run(g[f], f == 0, &st), PV_OK);
        if (f == 0 && count_linear(g[f]) != c->want)
            fail_msg("%s: %d Linear nodes, want %d", c->name, count_linear(g[f]), c->want);
        pvc_tensor in[2] = { oph_tensor(PV_F32, 2, xd, xs), oph_tensor(PV_F32, c->rank_r, c->rdims, rs) };
        if (pvg_plan_create(g[f], in, &p[f]) != PV_OK) fail_msg("%s: plan: %s", c->name, g[f]->msg.text);
        assert_int_equal(pvg_plan_run(p[f], in, NULL, outs[f]), PV_OK);
    }
    for (int o = 0; o < g[0]->noutputs; o++) {
        int64_t n = pvc_numel(&outs[1][o]);
        assert_int_equal(pvc_numel(&outs[0][o]), n);
        assert_int_equal(outs[0][o].rank, outs[1][o].rank);
        const float *a = outs[0][o].data, *b = outs[1][o].data;
        double tol_rel = prec == PVC_PREC_BF16 ? 1e-3 : 1e-5;
        for (int64_t i = 0; i < n; i++)
            if (!(fabs((double)a[i] - b[i]) <= tol_rel + tol_rel * fabs(b[i])))
                fail_msg("%s: output %d [%lld]: fused %.9g, unfused %.9g", c->name, o, (long long)i, a[i], b[i]);
    }
    for (int f = 0; f < 2; f++) {
        pvg_plan_free(p[f]);
        pvg_graph_free(g[f]);
    }
}

static void test_fused_vs_unfused(void **state)
{
    (void)state;
    setenv("PERCEIVE_LINEAR", "1", 1);   /* the pass is opt-in (passes.c) */
    for (size_t i = 0; i < PVC_COUNTOF(cases); i++) {
        uint64_t keep = rng;
        run_case(&cases[i], PVC_PREC_FP32);
        rng = keep;
    }
}

/* The op's own checks: a perceive::Linear node as a file would hold it, refused at plan time
 * with a message naming the attribute or the dims. */
static void bad_graph(const char *act, int64_t wk, const char *want)
{
    pvg_graph *g;
    assert_int_equal(pvg_graph_create(&g), PV_OK);
    g->opset = 17;
    input(g, "x", 2, xd);
    constant(g, "w", 2, (const int64_t[]){ wk, N });
    pvg_node *n = node(g, "Linear", "perceive", "x,w", "y");
    attr(n, "activation", PVG_ATTR_STRING, 0, 0, act);
    output(g, "y");
    assert_int_equal(pvg_graph_bind_ops(g), PV_OK);
    pvc_tensor in = oph_tensor(PV_F32, 2, xd, NULL);
    pvg_plan *p = NULL;
    assert_int_not_equal(pvg_plan_create(g, &in, &p), PV_OK);
    if (!strstr(g->msg.text, want)) fail_msg("message '%s' does not name '%s'", g->msg.text, want);
    pvg_graph_free(g);
}

static void test_errors(void **state)
{
    (void)state;
    bad_graph("swish", K, "activation");
    bad_graph("gelu", K + 1, "K=");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_vs_unfused),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
