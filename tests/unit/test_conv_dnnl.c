/* oneDNN convolutions (kernels/dnnl) against perceive's reference im2col path (itself checked
 * against naive loops in test_dense), on seeded random shapes: 1-D/2-D/3-D, batches, groups,
 * depthwise (with channel multipliers), strides, dilations, asymmetric pads, odd sizes, with and
 * without bias, every fused activation; the same for ConvTranspose (with output_padding) against
 * its col2im path. Both oneDNN layouts (NCHW and blocked) through the kernel
 * API with a NaN-filled workspace and guard floats after the output, and through the Conv
 * operator (weights constant) with the table's choice. Tolerance: |got - want| <= 1e-4 +
 * 1e-4 |want| (the model-graph tolerance; the sums differ only in order).
 * Winograd (fp32, 3x3 stride 1) against the same path within the same tolerance. bf16 against its
 * twin: the im2col path on X and W rounded to bf16 (round to nearest even, as oneDNN's reorders
 * do), so only the summation order differs (tolerance BF16_ATOL + BF16_RTOL |want|); and its PCC
 * against plain fp32 >= 0.9999; skipped where the CPU lacks AVX512_BF16.
 * Also: the environment switch, declines, release, and allocation failures during create.
 * In a build without oneDNN the oneDNN parts check that everything declines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "op_harness.h"
#include "kernels/dnnl/conv_dnnl.h"

#define GUARD 16
#define ATOL 1e-4
#define RTOL 1e-4
#define BF16_ATOL 2e-4
#define BF16_RTOL 2e-4

static pvc_pool *pool2;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t urand(uint32_t n)   /* uniform in [0, n) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng >> 33) % n);
}
static float frand(void) { return (float)urand(1u << 24) / (float)(1u << 23) - 1.0f; }

typedef struct ccase {
    pvk_dnnl_conv_desc d;   /* for ConvTranspose, pad_end is the ONNX one (output_padding apart) */
    int64_t opad[3];        /* ConvTranspose output_padding */
} ccase;

/* A random valid convolution; kind 0 plain, 1 depthwise, 2 grouped, 3 wide (brgconv-sized). */
static ccase random_case(int kind, bool transposed)
{
    ccase c;
    memset(&c, 0, sizeof c);
    pvk_dnnl_conv_desc *d = &c.d;
    d->transposed = transposed;
    uint32_t r = urand(10);
    d->nsp = r < 2 ? 1 : r < 8 ? 2 : 3;
    d->batch = 1 + urand(2);
    switch (kind) {
    case 1: d->group = d->cin = 1 + urand(20); d->cout = d->cin * (1 + urand(2)); break;
    case 2: d->group = 2 + urand(3); d->cin = d->group * (1 + urand(6)); d->cout = d->group * (1 + urand(6)); break;
    case 3: d->group = 1; d->cin = 16 + urand(40); d->cout = 16 + urand(50); break;
    default: d->group = 1; d->cin = 1 + urand(9); d->cout = 1 + urand(9); break;
    }
    for (int i = 0; i < d->nsp; i++) {
        int big = d->nsp == 3 ? 6 : d->nsp == 2 ? 13 : 30;
        d->k[i] = 1 + urand(d->nsp == 3 ? 3 : 5);
        d->stride[i] = 1 + urand(3);
        d->dil[i] = 1 + (urand(3) == 0 ? urand(3) : 0);
        d->pad_begin[i] = urand(3);
        d->pad_end[i] = urand(3);
        int64_t ek = (d->k[i] - 1) * d->dil[i] + 1;
        if (transposed) {
            if (urand(3) == 0) c.opad[i] = urand((uint32_t)PVC_MAX(d->stride[i], d->dil[i]));
            d->in[i] = 1 + urand((uint32_t)big / 2);
            int64_t full = (d->in[i] - 1) * d->stride[i] + ek + c.opad[i];
            while (full - d->pad_begin[i] - d->pad_end[i] < 1) d->in[i]++, full += d->stride[i];
            d->out[i] = full - d->pad_begin[i] - d->pad_end[i];
            continue;
        }
        int64_t lo = ek - d->pad_begin[i] - d->pad_end[i];
        d->in[i] = PVC_MAX(1, lo) + urand((uint32_t)big);
        d->out[i] = (d->in[i] + d->pad_begin[i] + d->pad_end[i] - ek) / d->stride[i] + 1;
    }
    d->bias = urand(2);
    switch (urand(4)) {
    case 0: d->act.kind = PVG_ACT_NONE; break;
    case 1: d->act.kind = PVG_ACT_RELU; break;
    case 2: d->act.kind = PVG_ACT_LEAKY_RELU; d->act.alpha = 0.1f; break;
    default: d->act.kind = PVG_ACT_CLIP; d->act.alpha = -0.25f; d->act.beta = 0.3f; break;
    }
    return c;
}

typedef struct bufs {
    int64_t nx, nw, ny;
    float *x, *w, *b;
    int64_t xd[5], wd[5], bd[1];
} bufs;

static bufs make_bufs(const pvk_dnnl_conv_desc *d)
{
    bufs b;
    memset(&b, 0, sizeof b);
    b.xd[0] = d->batch; b.xd[1] = d->cin;
    b.wd[0] = d->transposed ? d->cin : d->cout;
    b.wd[1] = d->transposed ? d->cout / d->group : d->cin / d->group;
    b.bd[0] = d->cout;
    b.nx = d->batch * d->cin;
    b.nw = d->cout * (d->cin / d->group);
    b.ny = d->batch * d->cout;
    for (int i = 0; i < d->nsp; i++) {
        b.xd[2 + i] = d->in[i];
        b.wd[2 + i] = d->k[i];
        b.nx *= d->in[i];
        b.nw *= d->k[i];
        b.ny *= d->out[i];
    }
    float scale = 1.0f / sqrtf((float)(b.nw / d->cout));
    b.x = malloc(sizeof(float) * (size_t)b.nx);
    b.w = malloc(sizeof(float) * (size_t)b.nw);
    b.b = malloc(sizeof(float) * (size_t)d->cout);
    for (int64_t i = 0; i < b.nx; i++) b.x[i] = frand();
    for (int64_t i = 0; i < b.nw; i++) b.w[i] = frand() * scale;
    for (int64_t i = 0; i < d->cout; i++) b.b[i] = frand() * 0.5f;
    return b;
}

static void free_bufs(bufs *b) { free(b->x); free(b->w); free(b->b); }

/* The Conv (or ConvTranspose) operator on d with W constant, under PERCEIVE_DNNL=env; outputs
 * garbage-filled and guarded by the harness. */
static oph_result run_op_ex(const pvk_dnnl_conv_desc *d, const int64_t *opad, const bufs *b, const char *env, pvc_pool *pool)
{
    setenv("PERCEIVE_DNNL", env, 1);
    pvc_tensor in[3] = { oph_tensor(PV_F32, d->nsp + 2, b->xd, b->x), oph_tensor(PV_F32, d->nsp + 2, b->wd, b->w),
                         oph_tensor(PV_F32, 1, b->bd, b->b) };
    int64_t pads[6];
    for (int i = 0; i < d->nsp; i++) { pads[i] = d->pad_begin[i]; pads[d->nsp + i] = d->pad_end[i]; }
    oph_attr at[] = { OPH_INT("group", d->group), OPH_INTS("strides", d->stride, d->nsp),
                      OPH_INTS("dilations", d->dil, d->nsp), OPH_INTS("pads", pads, 2 * d->nsp),
                      OPH_INTS("output_padding", opad, d->nsp) };
    oph_opts o = { d->act, pool, true };
    const char *op = d->transposed ? "ConvTranspose" : "Conv";
    oph_result r = oph_run_ex(op, 17, in, d->bias ? 3 : 2, 2u | 4u, 1, at, d->transposed && opad ? 5 : 4, &o);
    unsetenv("PERCEIVE_DNNL");
    if (r.fault[0]) fail_msg("%s: %s", op, r.fault);
    if (r.status != PV_OK) fail_msg("%s failed: %s", op, r.msg.text);
    return r;
}

static oph_result run_op(const pvk_dnnl_conv_desc *d, const bufs *b, const char *env, pvc_pool *pool)
{
    return run_op_ex(d, NULL, b, env, pool);
}

static double atol_now = ATOL, rtol_now = RTOL;   /* the bf16 test widens them */

static void expect_close(const float *got, const float *want, int64_t n, const char *what, const pvk_dnnl_conv_desc *d)
{
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (!(fabs(g - w) <= atol_now + rtol_now * fabs(w)))
            fail_msg("%s: nsp %d batch %lld cin %lld cout %lld group %lld k %lld s %lld d %lld pads %lld/%lld act %d: "
                     "[%lld] got %.9g want %.9g", what, d->nsp, (long long)d->batch, (long long)d->cin,
                     (long long)d->cout, (long long)d->group, (long long)d->k[0], (long long)d->stride[0],
                     (long long)d->dil[0], (long long)d->pad_begin[0], (long long)d->pad_end[0], (int)d->act.kind,
                     (long long)i, g, w);
    }
}

/* oneDNN through the kernel API in one layout; false when it declined. impl: the implementation's
 * name when not NULL. y_out: a copy of the output when not NULL (caller frees). */
static bool run_kernel_ex(const pvk_dnnl_conv_desc *d, const bufs *b, pvk_dnnl_mode mode, const float *want,
                          char *impl, size_t impl_len, float **y_out)
{
    pvk_dnnl_conv *c = NULL;
    size_t ws_bytes = 0;
    assert_int_equal(pvk_dnnl_conv_create(d, b->w, 2, mode, &c, &ws_bytes, NULL), PV_OK);
    if (!c) return false;
    float *y = malloc(sizeof(float) * (size_t)(b->ny + GUARD));
    memset(y, 0xff, sizeof(float) * (size_t)b->ny);
    for (int k = 0; k < GUARD; k++) y[b->ny + k] = 777.0f;
    void *ws = ws_bytes ? pvc_malloc_aligned(ws_bytes) : NULL;
    if (ws) memset(ws, 0xff, ws_bytes);
    for (int rep = 0; rep < 2; rep++) {   /* the second run reuses the bound handles */
        assert_int_equal(pvk_dnnl_conv_run(c, b->x, d->bias ? b->b : NULL, y, ws), PV_OK);
        expect_close(y, want, b->ny, pvk_dnnl_conv_impl(c), d);
    }
    for (int k = 0; k < GUARD; k++) assert_true(y[b->ny + k] == 777.0f);
    if (impl) snprintf(impl, impl_len, "%s", pvk_dnnl_conv_impl(c));
    pvc_free_aligned(ws);
    if (y_out) *y_out = y;
    else free(y);
    pvk_dnnl_conv_free(c);
    return true;
}

static bool run_kernel(const pvk_dnnl_conv_desc *d, const bufs *b, pvk_dnnl_mode mode, const float *want)
{
    return run_kernel_ex(d, b, mode, want, NULL, 0, NULL);
}

/* 3x3 stride-1 shapes, odd sizes, batches, with and without bias / activations. */
static pvk_dnnl_conv_desc wino_case(int i)
{
    pvk_dnnl_conv_desc d = { .nsp = 2, .batch = 1 + i % 2, .cin = 32 + 16 * (i % 3) + (i % 4 == 3 ? 5 : 0),
                             .cout = 32 + 8 * (i % 5), .group = 1, .k = { 3, 3 }, .stride = { 1, 1 }, .dil = { 1, 1 },
                             .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .bias = i % 3 != 0 };
    d.in[0] = d.out[0] = 5 + 3 * i;
    d.in[1] = d.out[1] = 7 + 5 * (i % 4);
    if (i % 4 == 1) d.act.kind = PVG_ACT_RELU;
    if (i == 6) d.act = (pvg_act){ PVG_ACT_CLIP, 0.1f, 6.0f };   /* 40 outputs: both Winograds decline */
    return d;
}

/* Winograd: within the fp32 tolerance of the im2col path; where oneDNN has no Winograd kernel
 * (AVX2) the create falls back to the direct algorithm and still matches. */
static void test_winograd(void **state)
{
    (void)state;
    /* PERCEIVE_WINOGRAD_OWN unset (the default) or 1: perceive's kernel where it takes the shape
     * (any channel counts, padded to 16: cin + 5 and cout 40 / 56 here), oneDNN's elsewhere; 0:
     * oneDNN's everywhere. Case 6 (a clip whose act(0) != 0, padded outputs) runs direct in both */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) setenv("PERCEIVE_WINOGRAD_OWN", "0", 1);
        else unsetenv("PERCEIVE_WINOGRAD_OWN");
        int wino = 0, own = 0, n = 8;
        for (int i = 0; i < n; i++) {
            pvk_dnnl_conv_desc d = wino_case(i);
            d.winograd = true;
            bufs b = make_bufs(&d);
            oph_result ref = run_op(&d, &b, "0", NULL);
            char impl[64] = "";
            bool took = run_kernel_ex(&d, &b, PVK_DNNL_BLOCKED, ref.out[0].data, impl, sizeof impl, NULL);
            assert_true(took == pvk_dnnl_available());
            wino += strstr(impl, "wino") != NULL;
            own += strstr(impl, "perceive_wino") != NULL;
            oph_free(&ref);
            free_bufs(&b);
        }
        printf("  winograd%s: %d of %d shapes ran a Winograd kernel, %d perceive's (isa %s)\n",
               pass ? " (PERCEIVE_WINOGRAD_OWN=0)" : "", wino, n, own, pv_isa());
        if (pvk_dnnl_available() && pvc_isa_selected() >= PVC_ISA_AVX512) {
            assert_int_equal(wino, n - 1);
            assert_int_equal(own, pass ? 0 : n - 1);
        }
    }
    unsetenv("PERCEIVE_WINOGRAD_OWN");
    /* the AUTO table: Winograd only for fp32 3x3 stride 1, not for few output channels */
    pvk_dnnl_conv_desc d = wino_case(0);
    unsetenv("PERCEIVE_WINOGRAD");
    assert_true(pvk_dnnl_winograd_pick(&d));
    d.cout = 5;
    assert_false(pvk_dnnl_winograd_pick(&d));
    d = wino_case(0);
    d.stride[0] = 2;
    assert_false(pvk_dnnl_winograd_pick(&d));
    /* bf16 precision: perceive's fp32 Winograd below AMX, bf16 direct with AMX or without it */
    d = wino_case(0);
    d.bf16 = true;
    bool own_bf16 = pvk_dnnl_available() && pvc_isa_selected() >= PVC_ISA_AVX512 && pvc_isa_selected() < PVC_ISA_AMX;
    assert_true(pvk_dnnl_winograd_pick(&d) == own_bf16);   /* the default */
    setenv("PERCEIVE_WINOGRAD_OWN", "0", 1);
    assert_false(pvk_dnnl_winograd_pick(&d));   /* oneDNN's Winograd has no bf16: bf16 direct */
    setenv("PERCEIVE_WINOGRAD_OWN", "1", 1);
    assert_true(pvk_dnnl_winograd_pick(&d) == own_bf16);
    if (own_bf16) {   /* created as the fp32 kernel, within the fp32 tolerance */
        d.winograd = true;
        bufs b = make_bufs(&d);
        pvk_dnnl_conv_desc f = d;
        f.bf16 = false;
        oph_result ref = run_op(&f, &b, "0", NULL);
        char impl[64] = "";
        assert_true(run_kernel_ex(&d, &b, PVK_DNNL_BLOCKED, ref.out[0].data, impl, sizeof impl, NULL));
        assert_non_null(strstr(impl, "perceive_wino"));
        oph_free(&ref);
        free_bufs(&b);
    }
    unsetenv("PERCEIVE_WINOGRAD_OWN");
    d = wino_case(0);
    setenv("PERCEIVE_WINOGRAD", "0", 1);
    assert_false(pvk_dnnl_winograd_pick(&d));
    d.bf16 = true;
    assert_false(pvk_dnnl_winograd_pick(&d));
    unsetenv("PERCEIVE_WINOGRAD");
}

static void round_bf16(float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) v[i] = pvc_bf16_to_f32(pvc_f32_to_bf16(v[i]));
}

static double pcc(const float *a, const float *b, int64_t n)
{
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (int64_t i = 0; i < n; i++) { sa += a[i]; sb += b[i]; saa += (double)a[i] * a[i]; sbb += (double)b[i] * b[i]; sab += (double)a[i] * b[i]; }
    double va = saa - sa * sa / (double)n, vb = sbb - sb * sb / (double)n;
    return (sab - sa * sb / (double)n) / sqrt(va * vb);
}

/* The layout pass's link: A -> B with the tensor between them in A's blocked layout gives B's
 * output of the unlinked pair exactly (fp32; bf16 too, where A is remade to write bf16). */
static void link_pair(bool bf16, bool wino, bool s2, int64_t cin)
{
    pvk_dnnl_conv_desc da = { .nsp = 2, .batch = 1, .cin = cin, .cout = 32, .group = 1, .in = { 11, 13 }, .out = { 11, 13 },
                              .k = { 3, 3 }, .stride = { 1, 1 }, .dil = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 },
                              .bias = true, .act = { PVG_ACT_RELU, 0, 0 }, .bf16 = bf16, .winograd = wino };
    pvk_dnnl_conv_desc db = da;
    db.cin = 32;
    db.cout = 48;
    db.bias = false;
    if (s2) {   /* a strided direct consumer of a Winograd producer: remade to read its layout */
        db.winograd = false;
        db.stride[0] = db.stride[1] = 2;
        db.out[0] = 6;
        db.out[1] = 7;
    }
    bufs ba = make_bufs(&da), bb = make_bufs(&db);
    int64_t nmid = ba.ny, nout = bb.ny;
    float *mid = calloc((size_t)nmid, sizeof(float)), *want = calloc((size_t)nout, sizeof(float));
    float *mid2 = calloc((size_t)nmid + GUARD, sizeof(float)), *got = calloc((size_t)nout, sizeof(float));
    for (int k = 0; k < GUARD; k++) mid2[nmid + k] = 777.0f;
    pvk_dnnl_conv *a = NULL, *b = NULL;
    size_t wa = 0, wb = 0;
    assert_int_equal(pvk_dnnl_conv_create(&da, ba.w, 2, PVK_DNNL_BLOCKED, &a, &wa, NULL), PV_OK);
    assert_int_equal(pvk_dnnl_conv_create(&db, bb.w, 2, PVK_DNNL_BLOCKED, &b, &wb, NULL), PV_OK);
    if (!a || !b) {     /* no oneDNN here: nothing to link */
        assert_false(pvk_dnnl_available());
        assert_false(pvk_dnnl_conv_link(a, b));
        goto done;
    }
    void *ws = pvc_malloc_aligned(PVC_MAX(wa, wb) + 64);
    assert_int_equal(pvk_dnnl_conv_run(a, ba.x, ba.b, mid, ws), PV_OK);
    assert_int_equal(pvk_dnnl_conv_run(b, mid, NULL, want, ws), PV_OK);
    bool linked = pvk_dnnl_conv_link(a, b);
    printf("  link %s%s%s: %s (%s -> %s)\n", bf16 ? "bf16" : "fp32", wino ? " winograd" : "", s2 ? " -> stride 2" : "",
           linked ? "linked" : "not linked",
           pvk_dnnl_conv_impl(a), pvk_dnnl_conv_impl(b));
    if (!bf16) assert_true(linked);     /* same primitive family, same blocked layout */
    assert_true(pvk_dnnl_conv_linked_out(a) == linked && pvk_dnnl_conv_linked_in(b) == linked);
    assert_false(pvk_dnnl_conv_link(a, b));   /* once */
    for (int rep = 0; rep < 2; rep++) {
        assert_int_equal(pvk_dnnl_conv_run(a, ba.x, ba.b, mid2, ws), PV_OK);
        assert_int_equal(pvk_dnnl_conv_run(b, mid2, NULL, got, ws), PV_OK);
        /* a remade consumer (s2) runs another oneDNN kernel: its sums are ordered differently */
        double mx = 0;
        for (int64_t i = 0; i < nout; i++) mx = fmax(mx, fabs(want[i]));
        for (int64_t i = 0; i < nout; i++)
            if (s2 ? !(fabs(got[i] - want[i]) <= 1e-5 * mx) : got[i] != want[i])
                fail_msg("link%s: element %lld %.9g vs %.9g", s2 ? " (remade consumer)" : "", (long long)i, got[i], want[i]);
        for (int k = 0; k < GUARD; k++) assert_true(mid2[nmid + k] == 777.0f);
    }
    pvc_free_aligned(ws);
done:
    pvk_dnnl_conv_free(a);
    pvk_dnnl_conv_free(b);
    free(mid); free(mid2); free(want); free(got);
    free_bufs(&ba);
    free_bufs(&bb);
}

static void test_link(void **state)
{
    (void)state;
    link_pair(false, false, false, 24);
    link_pair(false, true, false, 24);   /* 24 channels: oneDNN's Winograd */
    link_pair(false, true, true, 24);
    setenv("PERCEIVE_WINOGRAD_OWN", "1", 1);
    link_pair(false, true, false, 32);   /* perceive's Winograd -> perceive's */
    link_pair(false, true, true, 32);    /* perceive's Winograd -> oneDNN's direct, remade */
    unsetenv("PERCEIVE_WINOGRAD_OWN");
    if (pvc_isa_selected() >= PVC_ISA_AVX512_BF16) link_pair(true, false, false, 24);
}

/* One producer, two consumers (pvk_dnnl_conv_link_all): linked together, both consumers give
 * their unlinked outputs exactly; a second consumer that wants another layout (or the same
 * object twice) links nothing. */
static void test_link_fanout(void **state)
{
    (void)state;
    pvk_dnnl_conv_desc da = { .nsp = 2, .batch = 1, .cin = 24, .cout = 32, .group = 1, .in = { 11, 13 }, .out = { 11, 13 },
                              .k = { 3, 3 }, .stride = { 1, 1 }, .dil = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 },
                              .bias = true, .act = { PVG_ACT_RELU, 0, 0 } };
    pvk_dnnl_conv_desc db = da, dc = da;
    db.cin = dc.cin = 32;
    db.cout = 48;
    dc.cout = 16;
    dc.bias = false;
    bufs ba = make_bufs(&da), bb = make_bufs(&db), bc = make_bufs(&dc);
    float *mid = calloc((size_t)ba.ny, sizeof(float)), *mid2 = calloc((size_t)ba.ny, sizeof(float));
    float *wb = calloc((size_t)bb.ny, sizeof(float)), *wc = calloc((size_t)bc.ny, sizeof(float));
    float *gb = calloc((size_t)bb.ny, sizeof(float)), *gc = calloc((size_t)bc.ny, sizeof(float));
    pvk_dnnl_conv *a = NULL, *b = NULL, *c = NULL;
    size_t wa = 0, wsb = 0, wsc = 0;
    assert_int_equal(pvk_dnnl_conv_create(&da, ba.w, 2, PVK_DNNL_BLOCKED, &a, &wa, NULL), PV_OK);
    assert_int_equal(pvk_dnnl_conv_create(&db, bb.w, 2, PVK_DNNL_BLOCKED, &b, &wsb, NULL), PV_OK);
    assert_int_equal(pvk_dnnl_conv_create(&dc, bc.w, 2, PVK_DNNL_BLOCKED, &c, &wsc, NULL), PV_OK);
    if (!a || !b || !c) {
        assert_false(pvk_dnnl_available());
        goto done;
    }
    void *ws = pvc_malloc_aligned(PVC_MAX(wa, PVC_MAX(wsb, wsc)) + 64);
    assert_int_equal(pvk_dnnl_conv_run(a, ba.x, ba.b, mid, ws), PV_OK);
    assert_int_equal(pvk_dnnl_conv_run(b, mid, bb.b, wb, ws), PV_OK);
    assert_int_equal(pvk_dnnl_conv_run(c, mid, NULL, wc, ws), PV_OK);
    pvk_dnnl_conv *twice[2] = { b, b };
    assert_false(pvk_dnnl_conv_link_all(a, twice, 2, NULL));
    assert_false(pvk_dnnl_conv_linked_out(a));
    pvk_dnnl_conv *both[2] = { b, c };
    bool linked = pvk_dnnl_conv_link_all(a, both, 2, NULL);
    printf("  fan-out: %s (%s -> %s, %s)\n", linked ? "linked" : "not linked", pvk_dnnl_conv_impl(a),
           pvk_dnnl_conv_impl(b), pvk_dnnl_conv_impl(c));
    assert_true(linked);    /* one primitive family, one blocked layout */
    assert_true(pvk_dnnl_conv_linked_in(b) && pvk_dnnl_conv_linked_in(c) && pvk_dnnl_conv_linked_out(a));
    assert_int_equal(pvk_dnnl_conv_run(a, ba.x, ba.b, mid2, ws), PV_OK);
    assert_int_equal(pvk_dnnl_conv_run(b, mid2, bb.b, gb, ws), PV_OK);
    assert_int_equal(pvk_dnnl_conv_run(c, mid2, NULL, gc, ws), PV_OK);
    for (int64_t i = 0; i < bb.ny; i++) assert_true(gb[i] == wb[i]);
    for (int64_t i = 0; i < bc.ny; i++) assert_true(gc[i] == wc[i]);
    pvc_free_aligned(ws);
done:
    pvk_dnnl_conv_free(a);
    pvk_dnnl_conv_free(b);
    pvk_dnnl_conv_free(c);
    free(mid); free(mid2); free(wb); free(wc); free(gb); free(gc);
    free_bufs(&ba);
    free_bufs(&bb);
    free_bufs(&bc);
}

/* bf16 convolutions (and transposed ones) vs their twin, on shapes of every class. */
static void test_bf16(void **state)
{
    (void)state;
    if (pvc_isa_selected() < PVC_ISA_AVX512_BF16 || !pvk_dnnl_available()) { skip(); return; }
    int took = 0, n = 0;
    for (int kind = 0; kind < 4; kind++)
        for (int t = 0; t < 6; t++) {
            ccase cc = random_case(kind, t % 3 == 2);
            pvk_dnnl_conv_desc *d = &cc.d;
            if (d->act.kind == PVG_ACT_CLIP) d->act.kind = PVG_ACT_NONE;   /* a rounding may cross the clip edge */
            bufs b = make_bufs(d);
            oph_result full = run_op_ex(d, cc.opad, &b, "0", NULL);
            round_bf16(b.x, b.nx);
            round_bf16(b.w, b.nw);
            oph_result twin = run_op_ex(d, cc.opad, &b, "0", NULL);
            pvk_dnnl_conv_desc kd = *d;
            for (int i = 0; i < d->nsp; i++) kd.pad_end[i] -= cc.opad[i];
            kd.bf16 = true;
            char impl[64] = "";
            float *y = NULL;
            atol_now = BF16_ATOL;
            rtol_now = BF16_RTOL;
            if (run_kernel_ex(&kd, &b, PVK_DNNL_BLOCKED, twin.out[0].data, impl, sizeof impl, &y)) {
                if (strstr(impl, "bf16")) took++;
                if (b.ny > 64) assert_true(pcc(y, full.out[0].data, b.ny) >= 0.9999);
                free(y);
            }
            atol_now = ATOL;
            rtol_now = RTOL;
            n++;
            oph_free(&full);
            oph_free(&twin);
            free_bufs(&b);
        }
    printf("  bf16: %d of %d random shapes ran in bf16 (isa %s)\n", took, n, pv_isa());
    assert_true(took >= n / 2);
}

static void random_shapes(bool transposed)
{
    int cases = 0, taken[2] = { 0, 0 };
    for (int kind = 0; kind < 4; kind++)
        for (int t = 0; t < 25; t++) {
            ccase cc = random_case(kind, transposed);
            pvk_dnnl_conv_desc *d = &cc.d;
            bufs b = make_bufs(d);
            oph_result ref = run_op_ex(d, cc.opad, &b, "0", NULL);
            const float *want = ref.out[0].data;
            /* the kernel sees output_padding folded into the end pads */
            pvk_dnnl_conv_desc kd = *d;
            for (int i = 0; i < d->nsp; i++) kd.pad_end[i] -= cc.opad[i];
            taken[0] += run_kernel(&kd, &b, PVK_DNNL_NCHW, want);
            taken[1] += run_kernel(&kd, &b, PVK_DNNL_BLOCKED, want);
            static const char *envs[] = { "1", "blocked" };
            for (int e = 0; e < 2; e++) {
                oph_result r = run_op_ex(d, cc.opad, &b, envs[e], t % 2 ? pool2 : NULL);
                expect_close(r.out[0].data, want, b.ny, envs[e], d);
                oph_free(&r);
            }
            oph_free(&ref);
            free_bufs(&b);
            cases++;
        }
    printf("  %s: %d cases; oneDNN took %d in NCHW, %d in blocked layouts\n", transposed ? "ConvTranspose" : "Conv",
           cases, taken[0], taken[1]);
    if (pvk_dnnl_available()) {
        /* oneDNN has a real (non-reference) kernel for nearly everything in blocked layouts
         * (ConvTranspose: output_padding beyond the end pads is declined) */
        assert_true(taken[1] >= cases * (transposed ? 1 : 3) / 4);
    } else {
        assert_int_equal(taken[0] + taken[1], 0);
    }
}

static void test_random_shapes(void **state)
{
    (void)state;
    random_shapes(false);
}

static void test_random_transposed(void **state)
{
    (void)state;
    random_shapes(true);
}

/* The BEV head's shape class at a small size, and a 1x1, taken and exact within tolerance. */
static void test_dense_shapes(void **state)
{
    (void)state;
    pvk_dnnl_conv_desc ds[] = {
        { .nsp = 2, .batch = 1, .cin = 64, .cout = 32, .group = 1, .in = { 20, 21 }, .out = { 20, 21 }, .k = { 3, 3 },
          .stride = { 1, 1 }, .dil = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .bias = true, .act = { PVG_ACT_RELU, 0, 0 } },
        { .nsp = 2, .batch = 1, .cin = 32, .cout = 64, .group = 1, .in = { 19, 17 }, .out = { 10, 9 }, .k = { 3, 3 },
          .stride = { 2, 2 }, .dil = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }, .bias = true },
        { .nsp = 2, .batch = 2, .cin = 48, .cout = 5, .group = 1, .in = { 15, 15 }, .out = { 15, 15 }, .k = { 1, 1 },
          .stride = { 1, 1 }, .dil = { 1, 1 }, .bias = false, .act = { PVG_ACT_CLIP, 0, 6 } },
    };
    for (size_t i = 0; i < PVC_COUNTOF(ds); i++) {
        bufs b = make_bufs(&ds[i]);
        oph_result ref = run_op(&ds[i], &b, "0", NULL);
        bool a = run_kernel(&ds[i], &b, PVK_DNNL_NCHW, ref.out[0].data);
        bool c = run_kernel(&ds[i], &b, PVK_DNNL_BLOCKED, ref.out[0].data);
        assert_true(a == pvk_dnnl_available() && c == pvk_dnnl_available());
        oph_result r = run_op(&ds[i], &b, "1", pool2);
        expect_close(r.out[0].data, ref.out[0].data, b.ny, "auto", &ds[i]);
        oph_free(&r);
        oph_free(&ref);
        free_bufs(&b);
    }
}

/* PERCEIVE_DNNL switches at run time; what oneDNN cannot match is declined. */
static void test_switch_and_declines(void **state)
{
    (void)state;
    setenv("PERCEIVE_DNNL", "0", 1);
    assert_int_equal(pvk_dnnl_mode_get(), PVK_DNNL_OFF);
    setenv("PERCEIVE_DNNL", "blocked", 1);
    assert_int_equal(pvk_dnnl_mode_get(), pvk_dnnl_available() ? PVK_DNNL_BLOCKED : PVK_DNNL_OFF);
    setenv("PERCEIVE_DNNL", "nchw", 1);
    assert_int_equal(pvk_dnnl_mode_get(), pvk_dnnl_available() ? PVK_DNNL_NCHW : PVK_DNNL_OFF);
    unsetenv("PERCEIVE_DNNL");
    assert_int_equal(pvk_dnnl_mode_get(), pvk_dnnl_available() ? PVK_DNNL_AUTO : PVK_DNNL_OFF);

    pvk_dnnl_conv_desc d = { .nsp = 2, .batch = 1, .cin = 4, .cout = 4, .group = 1, .in = { 5, 5 }, .out = { 3, 3 },
                             .k = { 3, 3 }, .stride = { 1, 1 }, .dil = { 1, 1 } };
    float w[4 * 4 * 9] = { 0 };
    pvk_dnnl_conv *c = NULL;
    size_t ws = 0;
    assert_int_equal(pvk_dnnl_conv_create(&d, w, 1, PVK_DNNL_OFF, &c, &ws, NULL), PV_OK);
    assert_null(c);
    /* clip with lo > hi: oneDNN's clip differs from perceive's there, so it declines */
    d.act = (pvg_act){ PVG_ACT_CLIP, 1.0f, -1.0f };
    assert_int_equal(pvk_dnnl_conv_create(&d, w, 1, PVK_DNNL_BLOCKED, &c, &ws, NULL), PV_OK);
    assert_null(c);
    assert_int_equal(pvk_dnnl_conv_pick(&d), PVK_DNNL_OFF);
    d.act.kind = PVG_ACT_NONE;
    d.out[0] = 0;   /* empty output */
    assert_int_equal(pvk_dnnl_conv_create(&d, w, 1, PVK_DNNL_BLOCKED, &c, &ws, NULL), PV_OK);
    assert_null(c);
    pvk_dnnl_conv_free(NULL);
    assert_string_equal(pvk_dnnl_conv_impl(NULL), "none");
}

/* Every allocation of create that goes through the hook may fail: PV_ENOMEM, nothing leaked. */
static void test_create_alloc_failures(void **state)
{
    (void)state;
    pvk_dnnl_conv_desc d = { .nsp = 2, .batch = 1, .cin = 16, .cout = 16, .group = 1, .in = { 8, 8 }, .out = { 8, 8 },
                             .k = { 3, 3 }, .stride = { 1, 1 }, .dil = { 1, 1 }, .pad_begin = { 1, 1 },
                             .pad_end = { 1, 1 }, .bias = true, .act = { PVG_ACT_RELU, 0, 0 } };
    float *w = calloc(16 * 16 * 9, sizeof(float));
    int failures = 0;
    for (long k = 1; k < 100; k++) {
        pvc_alloc_test_begin(k);
        pvk_dnnl_conv *c = NULL;
        size_t ws = 0;
        pvc_msg msg = {{0}};
        pv_status s = pvk_dnnl_conv_create(&d, w, 1, PVK_DNNL_BLOCKED, &c, &ws, &msg);
        bool fired = pvc_alloc_failed();
        pvk_dnnl_conv_free(c);
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        assert_int_equal(live, 0);
        if (!fired) { assert_int_equal(s, PV_OK); break; }
        assert_int_equal(s, PV_ENOMEM);
        assert_null(c);
        assert_true(strlen(msg.text) > 0);
        failures++;
    }
    assert_int_equal(failures, pvk_dnnl_available() ? 2 : 0);   /* the object and the weights */
    free(w);
}

static int setup(void **state)
{
    (void)state;
    return pvc_pool_create(2, &pool2) == PV_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pvc_pool_free(pool2);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_random_transposed),
        cmocka_unit_test(test_dense_shapes),
        cmocka_unit_test(test_switch_and_declines),
        cmocka_unit_test(test_create_alloc_failures),
        cmocka_unit_test(test_winograd),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_link_fanout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
