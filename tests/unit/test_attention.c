/* perceive::Attention and the fuse_attention pass.
 *   - streaming kernel vs its reference twin on random shapes (odd Lq/Lk up to 600, D 8..128,
 *     masks of several broadcast forms with -inf entries, broadcast batch dims, K transposed or
 *     not, 1 and 2 threads), guard floats after the output;
 *   - the operator's prepare: attribute and shape errors are refused with a message; f16 runs;
 *   - the pass on small hand-written ONNX graphs (the vit4 / torch MultiheadAttention / SDPA
 *     forms, and chains it must leave alone): fused count, and results equal to the unfused
 *     graph (pv_graph_options.no_fuse = 1) within 1e-5;
 *   - 500 queries x 32400 keys x 8 heads x D 32 (the BEVFusion head) with a plan workspace
 *     under 8 MiB (skipped when PV_SANITIZED is set).
 * Kernel tolerance: |a - b| <= 1e-5 + 1e-4 |b| (f32 online softmax vs double-accumulated
 * reference; outputs are convex combinations of V in [-1, 1]). */
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
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1)); }

static float *rand_buf(int64_t n, float amp)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    for (int64_t i = 0; i < n; i++) b[i] = amp * frand();
    return b;
}

static bool close_enough(float a, float b) { return fabsf(a - b) <= 1e-5f + 1e-4f * fabsf(b); }

/* ---- kernel vs reference ------------------------------------------------------------------ */

static void kernel_case(pvc_pool *pool, int trial)
{
    int64_t Lq = irand(1, 600), Lk = irand(1, 600), D = irand(8, 128), Dv = irand(1, 80);
    if (trial == 0) { Lq = 1; Lk = 1; }
    if (trial == 1) { Lq = 599; Lk = 129; }         /* key blocks 128 + 1 */
    /* batch dims [b0, b1]; each operand keeps some of them and broadcasts the rest */
    int brank = (int)irand(0, 2);
    int64_t bd[2] = { irand(1, 3), irand(1, 3) };
    pvc_tensor t[4];
    int64_t dims[PV_MAX_RANK];
    bool kt = rnd() & 1;
    int mask_kind = (int)(rnd() % 5);   /* none, [Lq,Lk], [1,Lk], [Lk], [b..., Lq, 1] */
    for (int o = 0; o < 4; o++) {
        int r = 0;
        for (int a = 0; a < brank; a++) dims[r++] = (rnd() % 3 == 0) ? 1 : bd[a];
        if (o == 0) { dims[r++] = Lq; dims[r++] = D; }
        if (o == 1) { dims[r++] = kt ? D : Lk; dims[r++] = kt ? Lk : D; }
        if (o == 2) { dims[r++] = Lk; dims[r++] = Dv; }
        if (o == 3) {
            if (mask_kind == 1) { r = 0; dims[r++] = Lq; dims[r++] = Lk; }
            if (mask_kind == 2) { r = 0; dims[r++] = 1; dims[r++] = Lk; }
            if (mask_kind == 3) { r = 0; dims[r++] = Lk; }
            if (mask_kind == 4) { dims[r++] = Lq; dims[r++] = 1; }
        }
        t[o] = oph_tensor(PV_F32, r, dims, NULL);
        t[o].data = rand_buf(pvc_numel(&t[o]), o == 3 ? 3.0f : 2.0f);
    }
    if (mask_kind) {   /* some masked-out keys, never a whole row (that row would be NaN) */
        float *m = t[3].data;
        int64_t n = pvc_numel(&t[3]), last = t[3].rank ? t[3].dims[t[3].rank - 1] : 1;
        for (int64_t i = 0; i < n; i++) if (last > 1 && i % last != 0 && rnd() % 7 == 0) m[i] = -INFINITY;
    }
    pvk_attn_desc d;
    char why[256];
    float scale = (float)(1.0 / sqrt((double)D)) * (0.5f + (float)(rnd() % 100) / 50.0f);
    if (!pvk_attn_desc_init(&d, &t[0], &t[1], &t[2], mask_kind ? &t[3] : NULL, kt, scale, why, sizeof why))
        fail_msg("trial %d: %s", trial, why);
    int64_t ny = d.nbatch * Lq * Dv;
    float *y = malloc((size_t)(ny + 16) * sizeof *y), *yr = malloc((size_t)ny * sizeof *yr);
    float *scratch = malloc((size_t)(Lq * Lk) * sizeof *scratch);
    for (int i = 0; i < 16; i++) y[ny + i] = 12345.0f;
    pvk_attention_f32(pool, &d, t[0].data, t[1].data, t[2].data, mask_kind ? t[3].data : NULL, y);
    pvk_attention_ref_f32(&d, t[0].data, t[1].data, t[2].data, mask_kind ? t[3].data : NULL, yr, scratch);
    for (int i = 0; i < 16; i++) if (y[ny + i] != 12345.0f) fail_msg("trial %d: wrote past the output", trial);
    for (int64_t i = 0; i < ny; i++)
        if (!close_enough(y[i], yr[i]))
            fail_msg("trial %d (Lq %lld Lk %lld D %lld Dv %lld batch %lld kt %d mask %d) element %lld: %.8g vs %.8g",
                     trial, (long long)Lq, (long long)Lk, (long long)D, (long long)Dv, (long long)d.nbatch, kt,
                     mask_kind, (long long)i, y[i], yr[i]);
    if (getenv("PV_ATTN_DEBUG")) {
        double me = 0;
        for (int64_t i = 0; i < ny; i++) me = fmax(me, fabs((double)y[i] - yr[i]) / (1e-5 + 1e-4 * fabs(yr[i])));
        printf("trial %d Lq %lld Lk %lld D %lld Dv %lld nb %lld kt %d mask %d: err/tol %.3f\n", trial, (long long)Lq, (long long)Lk,
               (long long)D, (long long)Dv, (long long)d.nbatch, kt, mask_kind, me);
    }
    for (int o = 0; o < 4; o++) free(t[o].data);
    free(y);
    free(yr);
    free(scratch);
}

static void test_kernel_vs_reference(void **state)
{
    (void)state;
    pvc_pool *pool = NULL;
    assert_int_equal(pvc_pool_create(2, &pool), PV_OK);
    rng_state = 42;
    int trials = getenv("PV_SANITIZED") ? 8 : 24;
    for (int trial = 0; trial < trials; trial++) kernel_case(trial % 3 == 2 ? NULL : pool, trial);
    pvc_pool_free(pool);
}

/* The kernel's exp against libm's over its whole domain (x <= 0). */
static void test_exp(void **state)
{
    (void)state;
    double worst = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = -90.0f * (float)i / 2000000.0f;
        float got = pvk_expf_nonpos(x);
        if (x < -87.0f) { assert_true(got == 0.0f); continue; }
        double want = exp((double)x), rel = fabs(got - want) / want;
        worst = rel > worst ? rel : worst;
    }
    if (worst > 3.6e-7) fail_msg("worst relative error %.3g (more than 3 ulp)", worst);
    assert_true(pvk_expf_nonpos(0.0f) == 1.0f);
    assert_true(pvk_expf_nonpos(-INFINITY) == 0.0f);
    assert_true(isnan(pvk_expf_nonpos(NAN)));
}

/* An all -inf mask row gives NaN, as the unfused Softmax does; Lk = 0 gives zeros. */
static void test_kernel_edges(void **state)
{
    (void)state;
    float q[2 * 4], k[3 * 4], v[3 * 2], m[2 * 3] = { 0, -INFINITY, 1, -INFINITY, -INFINITY, -INFINITY }, y[4];
    for (int i = 0; i < 8; i++) q[i] = (float)i / 8.0f;
    for (int i = 0; i < 12; i++) k[i] = (float)(i % 5) / 5.0f;
    for (int i = 0; i < 6; i++) v[i] = (float)i;
    pvc_tensor tq = oph_tensor(PV_F32, 2, (int64_t[]){ 2, 4 }, q), tk = oph_tensor(PV_F32, 2, (int64_t[]){ 3, 4 }, k);
    pvc_tensor tv = oph_tensor(PV_F32, 2, (int64_t[]){ 3, 2 }, v), tm = oph_tensor(PV_F32, 2, (int64_t[]){ 2, 3 }, m);
    pvk_attn_desc d;
    char why[128];
    assert_true(pvk_attn_desc_init(&d, &tq, &tk, &tv, &tm, false, 0.5f, why, sizeof why));
    pvk_attention_f32(NULL, &d, q, k, v, m, y);
    float s0 = 0.5f * (q[0] * k[0] + q[1] * k[1] + q[2] * k[2] + q[3] * k[3]);
    float s2 = 0.5f * (q[0] * k[8] + q[1] * k[9] + q[2] * k[10] + q[3] * k[11]) + 1.0f;
    float p0 = 1.0f / (1.0f + expf(s2 - s0));
    assert_true(fabsf(y[0] - (p0 * v[0] + (1 - p0) * v[4])) < 1e-5f);
    assert_true(isnan(y[2]) && isnan(y[3]));
    tk.dims[0] = 0;
    tv.dims[0] = 0;
    assert_true(pvk_attn_desc_init(&d, &tq, &tk, &tv, NULL, false, 1.0f, why, sizeof why));
    pvk_attention_f32(NULL, &d, q, k, v, NULL, y);
    for (int i = 0; i < 4; i++) assert_true(y[i] == 0.0f);
}

/* ---- the operator ------------------------------------------------------------------------- */

typedef struct op_out { pv_status s; pvc_msg msg; pvc_tensor y; } op_out;

/* prepare + run of perceive::Attention on given inputs (rank -1 = absent mask). */
static op_out op_call(const pvc_tensor *in, int nin, float scale, int64_t kt, const char *extra_attr)
{
    op_out r;
    memset(&r, 0, sizeof r);
    pvg_attr at[3];
    memset(at, 0, sizeof at);
    at[0].name = (char *)"scale"; at[0].type = PVG_ATTR_FLOAT; at[0].f = scale;
    at[1].name = (char *)"k_transposed"; at[1].type = PVG_ATTR_INT; at[1].i = kt;
    at[2].name = (char *)extra_attr; at[2].type = PVG_ATTR_INT;
    pvg_node node;
    memset(&node, 0, sizeof node);
    node.name = (char *)"attn";
    node.op_type = (char *)"Attention";
    node.domain = (char *)"perceive";
    node.op = &pvg_op_Attention;
    node.attrs = at;
    node.nattrs = extra_attr ? 3 : 2;
    static unsigned char params[PVG_PARAMS_BYTES];
    memset(params, 0, sizeof params);
    pvg_prep p;
    memset(&p, 0, sizeof p);
    p.node = &node;
    p.nin = nin;
    p.nout = 1;
    p.in = in;
    p.out = &r.y;
    p.params = params;
    p.opset = 17;
    p.msg = &r.msg;
    r.s = pvg_op_Attention.prepare(&p);
    if (r.s != PV_OK) return r;
    for (int i = 0; i < node.nattrs; i++)
        if (!at[i].used) { r.s = PV_EUNSUPPORTED; snprintf(r.msg.text, sizeof r.msg.text, "attribute %s unused", at[i].name); return r; }
    pvc_tensor_set_contiguous(&r.y);
    r.y.data = calloc(1, pvc_nbytes(&r.y) + 64);
    void *ws = p.workspace ? calloc(1, p.workspace) : NULL;
    pvg_exec x = { &node, params, in, nin, &r.y, 1, ws, NULL };
    r.s = pvg_op_Attention.run(&x);
    free(ws);
    return r;
}

static void expect_error(const pvc_tensor *in, int nin, float scale, int64_t kt, const char *extra, const char *needle)
{
    op_out r = op_call(in, nin, scale, kt, extra);
    if (r.s == PV_OK) fail_msg("expected an error mentioning '%s'", needle);
    if (!strstr(r.msg.text, needle)) fail_msg("message '%s' does not mention '%s'", r.msg.text, needle);
    free(r.y.data);
}

static void test_op_errors(void **state)
{
    (void)state;
    static float buf[4096];
    pvc_tensor q = oph_tensor(PV_F32, 3, (int64_t[]){ 2, 5, 8 }, buf);
    pvc_tensor k = oph_tensor(PV_F32, 3, (int64_t[]){ 2, 7, 8 }, buf);
    pvc_tensor v = oph_tensor(PV_F32, 3, (int64_t[]){ 2, 7, 3 }, buf);
    pvc_tensor m = oph_tensor(PV_F32, 2, (int64_t[]){ 5, 7 }, buf);
    pvc_tensor in[4] = { q, k, v, m };
    op_out ok = op_call(in, 4, 0.5f, 0, NULL);
    assert_int_equal(ok.s, PV_OK);
    assert_int_equal(ok.y.rank, 3);
    assert_true(ok.y.dims[0] == 2 && ok.y.dims[1] == 5 && ok.y.dims[2] == 3);
    free(ok.y.data);
    expect_error(in, 4, 0.5f, 2, NULL, "k_transposed");
    expect_error(in, 4, INFINITY, 0, NULL, "scale");
    expect_error(in, 4, 0.5f, 0, "causal", "causal");
    expect_error(in, 2, 0.5f, 0, NULL, "expects 3 or 4 inputs");
    expect_error(in, 4, 0.5f, 1, NULL, "depth");                          /* K is not [.., D, Lk] */
    in[2].dims[1] = 6;
    expect_error(in, 4, 0.5f, 0, NULL, "V has 6 rows");
    in[2] = v;
    in[3].dims[0] = 4;
    expect_error(in, 4, 0.5f, 0, NULL, "mask");
    in[3] = m;
    in[1].dims[0] = 3;
    expect_error(in, 4, 0.5f, 0, NULL, "batch dims do not broadcast");
    in[1] = k;
    in[0].rank = 1;
    in[0].dims[0] = 8;
    expect_error(in, 4, 0.5f, 0, NULL, "rank >= 2");
    in[0] = q;
    in[3].dtype = PV_F16;
    expect_error(in, 4, 0.5f, 0, NULL, "input 3 is float16");
    in[3] = m;
    in[0].dtype = in[1].dtype = in[2].dtype = in[3].dtype = PV_I32;
    expect_error(in, 4, 0.5f, 0, NULL, "int32");
}

/* f16 is staged through f32: same result as the f32 kernel on the rounded inputs. */
static void test_op_f16(void **state)
{
    (void)state;
    rng_state = 7;
    int64_t Lq = 9, Lk = 13, D = 16, Dv = 5;
    float *f[3] = { rand_buf(Lq * D, 1.0f), rand_buf(Lk * D, 1.0f), rand_buf(Lk * Dv, 1.0f) };
    uint16_t *h[3];
    int64_t n[3] = { Lq * D, Lk * D, Lk * Dv };
    for (int o = 0; o < 3; o++) {
        h[o] = malloc((size_t)n[o] * 2);
        for (int64_t i = 0; i < n[o]; i++) { h[o][i] = pvc_f32_to_f16(f[o][i]); f[o][i] = pvc_f16_to_f32(h[o][i]); }
    }
    pvc_tensor in[3] = { oph_tensor(PV_F16, 2, (int64_t[]){ Lq, D }, h[0]), oph_tensor(PV_F16, 2, (int64_t[]){ Lk, D }, h[1]),
                         oph_tensor(PV_F16, 2, (int64_t[]){ Lk, Dv }, h[2]) };
    op_out r = op_call(in, 3, 0.25f, 0, NULL);
    assert_int_equal(r.s, PV_OK);
    assert_int_equal(r.y.dtype, PV_F16);
    pvc_tensor tf[3] = { in[0], in[1], in[2] };
    for (int o = 0; o < 3; o++) { tf[o].dtype = PV_F32; tf[o].data = f[o]; }
    pvk_attn_desc d;
    char why[128];
    assert_true(pvk_attn_desc_init(&d, &tf[0], &tf[1], &tf[2], NULL, false, 0.25f, why, sizeof why));
    float want[45], scratch[9 * 13];
    pvk_attention_ref_f32(&d, f[0], f[1], f[2], NULL, want, scratch);
    const uint16_t *got = r.y.data;
    for (int i = 0; i < 45; i++) assert_true(fabsf(pvc_f16_to_f32(got[i]) - want[i]) <= 1e-3f + 1e-3f * fabsf(want[i]));
    free(r.y.data);
    for (int o = 0; o < 3; o++) { free(f[o]); free(h[o]); }
}

/* ---- a tiny ONNX writer (protobuf wire format) for the pass tests -------------------------- */

typedef struct pb { unsigned char *b; size_t n, cap; } pb;

static void pb_raw(pb *p, const void *d, size_t n)
{
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
    }
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void pb_varint(pb *p, uint64_t v)
{
    unsigned char c[10];
    int n = 0;
    do { c[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
    pb_raw(p, c, (size_t)n);
}
static void pb_key(pb *p, int field, int wire) { pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_int(pb *p, int field, int64_t v) { pb_key(p, field, 0); pb_varint(p, (uint64_t)v); }
static void pb_len(pb *p, int field, const void *d, size_t n) { pb_key(p, field, 2); pb_varint(p, n); pb_raw(p, d, n); }
static void pb_str(pb *p, int field, const char *s) { pb_len(p, field, s, strlen(s)); }
static void pb_sub(pb *p, int field, pb *sub)      /* appends sub as a message field, frees it */
{
    pb_len(p, field, sub->b, sub->n);
    free(sub->b);
    memset(sub, 0, sizeof *sub);
}

/* NodeProto: ins/outs are comma-separated names; attrs: encoded AttributeProto fields (or NULL). */
static void g_node(pb *g, const char *op, const char *ins, const char *outs, pb *attrs)
{
    pb n = { 0 };
    char buf[256];
    for (int io = 0; io < 2; io++) {
        snprintf(buf, sizeof buf, "%s", io ? outs : ins);
        for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) pb_str(&n, io ? 2 : 1, s);
    }
    pb_str(&n, 4, op);
    if (attrs) { pb_raw(&n, attrs->b, attrs->n); free(attrs->b); memset(attrs, 0, sizeof *attrs); }
    pb_sub(g, 1, &n);
}
static void a_int(pb *a, const char *name, int64_t v)
{
    pb x = { 0 };
    pb_str(&x, 1, name); pb_int(&x, 3, v); pb_int(&x, 20, 2);
    pb_sub(a, 5, &x);
}
static void a_ints(pb *a, const char *name, const int64_t *v, int n)
{
    pb x = { 0 };
    pb_str(&x, 1, name);
    for (int i = 0; i < n; i++) pb_int(&x, 8, v[i]);
    pb_int(&x, 20, 7);
    pb_sub(a, 5, &x);
}
static void g_input(pb *g, const char *name, int rank, const int64_t *dims)
{
    pb shape = { 0 }, tt = { 0 }, tp = { 0 }, vi = { 0 };
    for (int i = 0; i < rank; i++) { pb dm = { 0 }; pb_int(&dm, 1, dims[i]); pb_sub(&shape, 1, &dm); }
    pb_int(&tt, 1, 1);              /* FLOAT */
    pb_sub(&tt, 2, &shape);
    pb_sub(&tp, 1, &tt);
    pb_str(&vi, 1, name);
    pb_sub(&vi, 2, &tp);
    pb_sub(g, 11, &vi);
}
static void g_output(pb *g, const char *name) { pb vi = { 0 }; pb_str(&vi, 1, name); pb_sub(g, 12, &vi); }
static void g_const(pb *g, const char *name, int rank, const int64_t *dims, const float *v)
{
    pb t = { 0 };
    int64_t n = 1;
    for (int i = 0; i < rank; i++) { pb_int(&t, 1, dims[i]); n *= dims[i]; }
    pb_int(&t, 2, 1);
    pb_str(&t, 8, name);
    pb_len(&t, 9, v, (size_t)n * sizeof(float));   /* little-endian host */
    pb_sub(g, 5, &t);
}
static void g_scalar(pb *g, const char *name, float v) { g_const(g, name, 0, NULL, &v); }
static pb model_of(pb *g)
{
    pb m = { 0 }, op = { 0 };
    pb_int(&m, 1, 8);
    pb_str(&op, 1, "");
    pb_int(&op, 2, 17);
    pb_sub(&m, 8, &op);
    pb_sub(&m, 7, g);
    return m;
}

/* ---- the pass ----------------------------------------------------------------------------- */

typedef struct gin { const char *name; int rank; int64_t dims[PV_MAX_RANK]; float *data; } gin;

static int fused_count(const pb *m)
{
    pvg_graph *g = NULL;
    pvc_msg msg;
    assert_int_equal(pvg_graph_load_onnx(m->b, m->n, ".", &g, &msg), PV_OK);
    pvg_pass_stats st;
    assert_int_equal(pvg_passes_run(g, true, &st), PV_OK);
    pvg_graph_free(g);
    return st.attn_fused;
}

/* Opens m fused and unfused, runs both on the inputs; outputs must agree within 1e-5. Returns
 * the fused graph's live node count. */
static int compare_fused(const pb *m, gin *in, int nin, int want_fused)
{
    int nf = fused_count(m);
    if (nf != want_fused) fail_msg("fused %d attention chains, expected %d", nf, want_fused);
    pv_graph *ga = NULL, *gb = NULL;
    pv_graph_options fo = { .threads = 2 }, po = { .threads = 1, .no_fuse = 1 };
    if (pv_graph_open_memory(m->b, m->n, ".", &fo, &ga) != PV_OK) fail_msg("fused open: %s", pv_last_error());
    assert_int_equal(pv_graph_open_memory(m->b, m->n, ".", &po, &gb), PV_OK);
    pv_tensor t[8];
    for (int i = 0; i < nin; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].name = in[i].name;
        t[i].dtype = PV_F32;
        t[i].rank = in[i].rank;
        for (int k = 0; k < in[i].rank; k++) t[i].dims[k] = in[i].dims[k];
        t[i].data = in[i].data;
    }
    pv_tensor oa[4], ob[4];
    size_t na = 4, nb = 4;
    if (pv_graph_run(ga, t, (size_t)nin, oa, &na) != PV_OK) fail_msg("fused run: %s", pv_graph_errmsg(ga));
    assert_int_equal(pv_graph_run(gb, t, (size_t)nin, ob, &nb), PV_OK);
    assert_int_equal(na, nb);
    for (size_t k = 0; k < na; k++) {
        assert_int_equal(pv_tensor_numel(&oa[k]), pv_tensor_numel(&ob[k]));
        const float *p = oa[k].data, *q = ob[k].data;
        for (int64_t i = 0; i < pv_tensor_numel(&oa[k]); i++)
            if (!(fabsf(p[i] - q[i]) <= 1e-5f + 1e-5f * fabsf(q[i]))) fail_msg("output %zu element %lld: %.8g vs %.8g", k, (long long)i, p[i], q[i]);
    }
    pv_graph_stats st;
    pv_graph_stats_get(ga, &st);
    pv_graph_close(ga);
    pv_graph_close(gb);
    return st.nodes_total;
}

static float *rand_input(gin *g, float amp)
{
    int64_t n = 1;
    for (int k = 0; k < g->rank; k++) n *= g->dims[k];
    g->data = rand_buf(n, amp);
    return g->data;
}

/* vit4's form: Mul(Q, s), Transpose(K, swap last two), MatMul, Softmax(-1), MatMul. */
static void test_pass_vit_form(void **state)
{
    (void)state;
    rng_state = 11;
    pb g = { 0 }, a = { 0 };
    gin in[3] = { { "q", 4, { 2, 3, 37, 16 }, NULL }, { "k", 4, { 2, 3, 45, 16 }, NULL }, { "v", 4, { 2, 3, 45, 24 }, NULL } };
    for (int i = 0; i < 3; i++) { g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
    g_scalar(&g, "s", 0.25f);
    g_node(&g, "Mul", "q,s", "qs", NULL);
    a_ints(&a, "perm", (int64_t[]){ 0, 1, 3, 2 }, 4);
    g_node(&g, "Transpose", "k", "kt", &a);
    g_node(&g, "MatMul", "qs,kt", "sc", NULL);
    a_int(&a, "axis", -1);
    g_node(&g, "Softmax", "sc", "p", &a);
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_output(&g, "y");
    pb m = model_of(&g);
    assert_int_equal(compare_fused(&m, in, 3, 1), 1);
    free(m.b);
    for (int i = 0; i < 3; i++) free(in[i].data);
}

/* torch 1.13 nn.MultiheadAttention with attn_mask at opset 17: Div(Q, sqrt(E)), K through a
 * [1,2,0] Transpose (kept: K arrives transposed), MatMul, Mul(S, 1), Add(S, Mul(mask, 1)). */
static pb mha_model(gin *in)
{
    pb g = { 0 }, a = { 0 };
    gin def[4] = { { "q", 3, { 6, 7, 8 }, NULL }, { "kr", 3, { 11, 6, 8 }, NULL }, { "v", 3, { 6, 11, 8 }, NULL },
                   { "mask", 2, { 7, 11 }, NULL } };
    for (int i = 0; i < 4; i++) { in[i] = def[i]; g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
    g_scalar(&g, "c", 2.828427f);
    g_scalar(&g, "one", 1.0f);
    g_scalar(&g, "one2", 1.0f);
    g_node(&g, "Div", "q,c", "qd", NULL);
    a_ints(&a, "perm", (int64_t[]){ 1, 2, 0 }, 3);
    g_node(&g, "Transpose", "kr", "kt", &a);
    g_node(&g, "MatMul", "qd,kt", "s", NULL);
    g_node(&g, "Mul", "s,one", "s1", NULL);
    g_node(&g, "Mul", "mask,one2", "m1", NULL);
    g_node(&g, "Add", "s1,m1", "sa", NULL);
    a_int(&a, "axis", -1);
    g_node(&g, "Softmax", "sa", "p", &a);
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_output(&g, "y");
    return model_of(&g);
}

static void test_pass_torch_mha_form(void **state)
{
    (void)state;
    rng_state = 12;
    gin in[4];
    pb m = mha_model(in);
    assert_int_equal(compare_fused(&m, in, 4, 1), 3);   /* Transpose, Mul(mask), Attention */
    free(m.b);
    for (int i = 0; i < 4; i++) free(in[i].data);
}

/* Every allocation of load + passes + plan + run failing in turn: PV_ENOMEM with a message,
 * nothing leaked; once planned, a run allocates nothing. */
static void test_pass_alloc_failures(void **state)
{
    (void)state;
    rng_state = 14;
    gin in[4];
    pb m = mha_model(in);
    pv_tensor t[4];
    for (int i = 0; i < 4; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].name = in[i].name; t[i].dtype = PV_F32; t[i].rank = in[i].rank; t[i].data = in[i].data;
        memcpy(t[i].dims, in[i].dims, sizeof in[i].dims);
    }
    int failures = 0;
    for (long k = 1; k < 100000; k++) {
        pvc_alloc_test_begin(k);
        pv_graph *g = NULL;
        pv_graph_options opt = { .threads = 2 };
        pv_tensor y;
        size_t n = 1;
        pv_status s = pv_graph_open_memory(m.b, m.n, ".", &opt, &g);
        if (s == PV_OK) s = pv_graph_run(g, t, 4, &y, &n);
        pv_graph_close(g);
        bool fired = pvc_alloc_failed();
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0) fail_msg("allocation %ld failed: %ld blocks leaked", k, live);
        if (!fired) { assert_int_equal(s, PV_OK); break; }
        assert_int_equal(s, PV_ENOMEM);
        if (!strlen(pv_last_error())) fail_msg("allocation %ld: PV_ENOMEM without a message", k);
        failures++;
    }
    assert_true(failures > 10);
    pv_graph *g = NULL;
    assert_int_equal(pv_graph_open_memory(m.b, m.n, ".", NULL, &g), PV_OK);
    pv_tensor y;
    size_t n = 1;
    assert_int_equal(pv_graph_run(g, t, 4, &y, &n), PV_OK);
    pvc_alloc_test_begin(0);
    for (int i = 0; i < 3; i++) { n = 1; assert_int_equal(pv_graph_run(g, t, 4, &y, &n), PV_OK); }
    long count = pvc_alloc_count();
    pvc_alloc_test_end();
    assert_int_equal(count, 0);
    pv_graph_close(g);
    free(m.b);
    for (int i = 0; i < 4; i++) free(in[i].data);
}

/* Mask first in the Add, Div on the scores, K given as [.., D, Lk], masked keys, a Relu after
 * (still fused into nothing else), and the SDPA form with sqrt(scale) on both Q and K^T. */
static void test_pass_other_forms(void **state)
{
    (void)state;
    rng_state = 13;
    pb g = { 0 }, a = { 0 };
    gin in[4] = { { "q", 3, { 5, 33, 20 }, NULL }, { "kt", 3, { 5, 20, 29 }, NULL }, { "v", 3, { 5, 29, 12 }, NULL },
                  { "mask", 3, { 5, 1, 29 }, NULL } };
    for (int i = 0; i < 4; i++) { g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
    for (int i = 0; i < 5 * 29; i++) if (i % 29 && i % 3 == 0) in[3].data[i] = -INFINITY;
    g_scalar(&g, "c", 4.0f);
    g_node(&g, "MatMul", "q,kt", "s", NULL);
    g_node(&g, "Div", "s,c", "sd", NULL);
    g_node(&g, "Add", "mask,sd", "sa", NULL);
    g_node(&g, "Softmax", "sa", "p", NULL);               /* opset 17 default axis -1 */
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_node(&g, "Relu", "y", "z", NULL);
    g_output(&g, "z");
    pb m = model_of(&g);
    assert_int_equal(compare_fused(&m, in, 4, 1), 2);
    free(m.b);
    for (int i = 0; i < 4; i++) free(in[i].data);

    pb h = { 0 };
    gin jn[3] = { { "q", 3, { 4, 19, 32 }, NULL }, { "k", 3, { 4, 23, 32 }, NULL }, { "v", 3, { 1, 23, 7 }, NULL } };
    for (int i = 0; i < 3; i++) { g_input(&h, jn[i].name, jn[i].rank, jn[i].dims); rand_input(&jn[i], 2.0f); }
    float r = 0.4204482f;                                 /* 32^-1/4 */
    g_const(&h, "r", 1, (int64_t[]){ 1 }, &r);
    g_scalar(&h, "r2", r);
    g_node(&h, "Mul", "q,r", "qs", NULL);
    a_ints(&a, "perm", (int64_t[]){ 0, 2, 1 }, 3);
    g_node(&h, "Transpose", "k", "kt", &a);
    g_node(&h, "Mul", "r2,kt", "kts", NULL);
    g_node(&h, "MatMul", "qs,kts", "s", NULL);
    g_node(&h, "Softmax", "s", "p", NULL);
    g_node(&h, "MatMul", "p,v", "y", NULL);              /* V's batch broadcasts */
    g_output(&h, "y");
    m = model_of(&h);
    assert_int_equal(compare_fused(&m, jn, 3, 1), 1);
    free(m.b);
    for (int i = 0; i < 3; i++) free(jn[i].data);
}

/* Chains the pass must leave alone: scores also a graph output, Softmax over another axis,
 * probabilities read twice, a positive axis when the rank is not declared. */
static void test_pass_leaves_alone(void **state)
{
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        rng_state = 20 + (uint64_t)variant;
        pb g = { 0 }, a = { 0 };
        gin in[3] = { { "q", 3, { 2, 9, 8 }, NULL }, { "k", 3, { 2, 8, 9 }, NULL }, { "v", 3, { 2, 9, 4 }, NULL } };
        for (int i = 0; i < 3; i++) { g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
        g_scalar(&g, "c", 0.5f);
        g_node(&g, "Mul", "q,c", "qs", NULL);
        g_node(&g, "MatMul", "qs,k", "s", NULL);
        a_int(&a, "axis", variant == 1 ? 1 : variant == 3 ? 2 : -1);
        g_node(&g, "Softmax", "s", "p", &a);
        g_node(&g, "MatMul", "p,v", "y", NULL);
        g_output(&g, "y");
        if (variant == 0) g_output(&g, "s");
        if (variant == 2) g_output(&g, "p");
        pb m = model_of(&g);
        compare_fused(&m, in, 3, 0);
        free(m.b);
        for (int i = 0; i < 3; i++) free(in[i].data);
    }
    /* a non-scalar factor is not a scale: the Mul stays, the rest fuses */
    rng_state = 30;
    pb g = { 0 }, a = { 0 };
    gin in[3] = { { "q", 3, { 2, 9, 8 }, NULL }, { "k", 3, { 2, 8, 9 }, NULL }, { "v", 3, { 2, 9, 4 }, NULL } };
    for (int i = 0; i < 3; i++) { g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
    float vec[8] = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f };
    g_const(&g, "vec", 1, (int64_t[]){ 8 }, vec);
    g_node(&g, "Mul", "q,vec", "qs", NULL);
    g_node(&g, "MatMul", "qs,k", "s", NULL);
    a_int(&a, "axis", -1);
    g_node(&g, "Softmax", "s", "p", &a);
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_output(&g, "y");
    pb m = model_of(&g);
    assert_int_equal(compare_fused(&m, in, 3, 1), 2);
    free(m.b);
    for (int i = 0; i < 3; i++) free(in[i].data);
}

/* A mask that would enlarge the scores (one query row, mask of 5 rows) fits no Attention:
 * the fused graph fails at plan time with a message naming the shapes. */
static void test_pass_shape_error(void **state)
{
    (void)state;
    pb g = { 0 };
    int64_t qd[3] = { 2, 1, 8 }, kd[3] = { 2, 8, 9 }, vd[3] = { 2, 9, 4 }, md[3] = { 2, 5, 9 };
    g_input(&g, "q", 3, qd);
    g_input(&g, "k", 3, kd);
    g_input(&g, "v", 3, vd);
    g_input(&g, "mask", 3, md);
    g_node(&g, "MatMul", "q,k", "s", NULL);
    g_node(&g, "Add", "s,mask", "sa", NULL);
    g_node(&g, "Softmax", "sa", "p", NULL);
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_output(&g, "y");
    pb m = model_of(&g);
    assert_int_equal(fused_count(&m), 1);
    pv_graph *h = NULL;
    pv_graph_options o = { .threads = 1 };
    assert_int_not_equal(pv_graph_open_memory(m.b, m.n, ".", &o, &h), PV_OK);
    if (!strstr(pv_last_error(), "mask [..., 5, 9] does not broadcast")) fail_msg("message: %s", pv_last_error());
    o.no_fuse = 1;
    assert_int_equal(pv_graph_open_memory(m.b, m.n, ".", &o, &h), PV_OK);
    pv_graph_close(h);
    free(m.b);
}

/* The BEVFusion head's shape: 500 queries x 32400 keys x 8 heads, D 32, without the 65 MB
 * per head score matrix. Sampled rows are checked against a double-precision evaluation. */
static void test_large_streaming(void **state)
{
    (void)state;
    if (getenv("PV_SANITIZED")) { skip(); return; }
    rng_state = 99;
    const int64_t H = 8, Lq = 500, Lk = 32400, D = 32;
    pb g = { 0 }, a = { 0 };
    gin in[3] = { { "q", 4, { 1, H, Lq, D }, NULL }, { "k", 4, { 1, H, Lk, D }, NULL }, { "v", 4, { 1, H, Lk, D }, NULL } };
    for (int i = 0; i < 3; i++) { g_input(&g, in[i].name, in[i].rank, in[i].dims); rand_input(&in[i], 2.0f); }
    g_scalar(&g, "s", 0.1767767f);
    g_node(&g, "Mul", "q,s", "qs", NULL);
    a_ints(&a, "perm", (int64_t[]){ 0, 1, 3, 2 }, 4);
    g_node(&g, "Transpose", "k", "kt", &a);
    g_node(&g, "MatMul", "qs,kt", "sc", NULL);
    g_node(&g, "Softmax", "sc", "p", NULL);
    g_node(&g, "MatMul", "p,v", "y", NULL);
    g_output(&g, "y");
    pb m = model_of(&g);
    assert_int_equal(fused_count(&m), 1);
    pv_graph *h = NULL;
    pv_graph_options o = { 0 };
    assert_int_equal(pv_graph_open_memory(m.b, m.n, ".", &o, &h), PV_OK);
    pv_tensor t[3], y;
    for (int i = 0; i < 3; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].name = in[i].name; t[i].dtype = PV_F32; t[i].rank = 4; t[i].data = in[i].data;
        memcpy(t[i].dims, in[i].dims, sizeof in[i].dims);
    }
    size_t n = 1;
    double t0 = pvc_now_ms();
    assert_int_equal(pv_graph_run(h, t, 3, &y, &n), PV_OK);
    double ms = pvc_now_ms() - t0;
    pv_graph_stats st;
    pv_graph_stats_get(h, &st);
    printf("  500 x 32400 x 8 heads x D 32: %.0f ms, workspace %zu bytes, arena %zu bytes\n", ms, st.workspace_bytes,
           st.arena_bytes);
    assert_true(st.workspace_bytes < ((size_t)8 << 20));
    assert_true(st.arena_bytes < ((size_t)8 << 20));
    const float *q = in[0].data, *k = in[1].data, *v = in[2].data, *yy = y.data;
    double *s = malloc((size_t)Lk * sizeof *s);
    for (int sample = 0; sample < 4; sample++) {
        int64_t hh = sample * 2 + 1, i = (sample * 163 + 7) % Lq;
        const float *qi = q + (hh * Lq + i) * D;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Lk; j++) {
            double acc = 0;
            for (int64_t t2 = 0; t2 < D; t2++) acc += (double)qi[t2] * 0.1767767f * k[(hh * Lk + j) * D + t2];
            s[j] = acc;
            mx = acc > mx ? acc : mx;
        }
        for (int64_t j = 0; j < Lk; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
        for (int64_t c = 0; c < D; c++) {
            double acc = 0;
            for (int64_t j = 0; j < Lk; j++) acc += s[j] * v[(hh * Lk + j) * D + c];
            float want = (float)(acc / sum), got = yy[(hh * Lq + i) * D + c];
            if (!close_enough(got, want)) fail_msg("head %lld row %lld col %lld: %.8g vs %.8g", (long long)hh, (long long)i, (long long)c, got, want);
        }
    }
    free(s);
    pv_graph_close(h);
    free(m.b);
    for (int i = 0; i < 3; i++) free(in[i].data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_vs_reference),
        cmocka_unit_test(test_exp),
        cmocka_unit_test(test_kernel_edges),
        cmocka_unit_test(test_op_errors),
        cmocka_unit_test(test_op_f16),
        cmocka_unit_test(test_pass_vit_form),
        cmocka_unit_test(test_pass_torch_mha_form),
        cmocka_unit_test(test_pass_alloc_failures),
        cmocka_unit_test(test_pass_other_forms),
        cmocka_unit_test(test_pass_leaves_alone),
        cmocka_unit_test(test_pass_shape_error),
        cmocka_unit_test(test_large_streaming),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
