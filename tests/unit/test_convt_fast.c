/* ConvTranspose with kernel == stride (kernels/ref/convt_fast and the operator's use of it)
 * against a naive loop over input pixels, channels and taps written here (float64 sums), on
 * seeded random shapes: 1-D/2-D/3-D, batch > 1, odd sizes, per-axis kernels 1..4, with and
 * without bias, every fused activation. The kernel is called directly (NaN-filled workspace and
 * output, guard floats after Y, tiles from 1 pixel up, with no pool, a 2-thread pool, and a
 * 2-thread pool with one col buffer); the operator through the harness with the attribute forms
 * that reach the fast path (plain, output_padding cropped by the end pads, SAME_UPPER,
 * output_shape) and, as a control, overlapping shapes that stay on the general path.
 * The packed path (W packed once, every packed GEMM variant this CPU runs) likewise, its bf16
 * variants against the definition on bf16-rounded X and W.
 * Tolerance: |got - want| <= 1e-4 + 1e-4 |want|. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_harness.h"
#include "kernels/ref/convt_fast.h"
#include "kernels/gemm_packed.h"

#define ATOL 1e-4
#define RTOL 1e-4
#define GUARD 16
#define GUARD_VAL 4321.0f

static pvc_pool *pool2;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t urand(uint32_t n)   /* uniform in [0, n) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng >> 33) % n);
}
static float frand(void) { return (float)urand(1u << 24) / (float)(1u << 23) - 1.0f; }

/* One problem in 3-D form (leading spatial dims 1 for 1-D / 2-D), general stride / pad so the
 * control cases can use it too. Y spatial dims: out. */
typedef struct prob {
    int nsp;
    int64_t batch, cin, cout;
    int64_t in[3], k[3], s[3], pad[3], out[3];
    bool bias;
    pvg_act act;
} prob;

static double act_ref(double v, const pvg_act *a)
{
    switch (a->kind) {
    case PVG_ACT_RELU: return v > 0.0 ? v : 0.0;
    case PVG_ACT_LEAKY_RELU: return v >= 0.0 ? v : v * a->alpha;
    case PVG_ACT_CLIP: return v < a->alpha ? a->alpha : (v > a->beta ? a->beta : v);
    case PVG_ACT_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case PVG_ACT_NONE: break;
    }
    return v;
}

static int64_t xsize(const prob *p) { return p->in[0] * p->in[1] * p->in[2]; }
static int64_t ysize(const prob *p) { return p->out[0] * p->out[1] * p->out[2]; }
static int64_t ksize(const prob *p) { return p->k[0] * p->k[1] * p->k[2]; }

/* The definition: every input pixel times every tap adds into output pixel in * s + tap - pad
 * (when inside the output), then bias and activation. */
static double *naive(const prob *p, const float *x, const float *w, const float *b)
{
    int64_t xs = xsize(p), ys = ysize(p), ks = ksize(p);
    double *y = calloc((size_t)(p->batch * p->cout * ys), sizeof(double));
    assert_non_null(y);
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t ci = 0; ci < p->cin; ci++)
            for (int64_t i = 0; i < xs; i++) {
                int64_t iz = i / (p->in[1] * p->in[2]), iy = i / p->in[2] % p->in[1], ix = i % p->in[2];
                double xv = x[(n * p->cin + ci) * xs + i];
                for (int64_t co = 0; co < p->cout; co++)
                    for (int64_t t = 0; t < ks; t++) {
                        int64_t a = t / (p->k[1] * p->k[2]), bb = t / p->k[2] % p->k[1], e = t % p->k[2];
                        int64_t oz = iz * p->s[0] + a - p->pad[0], oy = iy * p->s[1] + bb - p->pad[1];
                        int64_t ox = ix * p->s[2] + e - p->pad[2];
                        if (oz < 0 || oz >= p->out[0] || oy < 0 || oy >= p->out[1] || ox < 0 || ox >= p->out[2])
                            continue;
                        y[(n * p->cout + co) * ys + (oz * p->out[1] + oy) * p->out[2] + ox] +=
                            xv * w[(ci * p->cout + co) * ks + t];
                    }
            }
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t co = 0; co < p->cout; co++)
            for (int64_t i = 0; i < ys; i++) {
                double *v = &y[(n * p->cout + co) * ys + i];
                *v = act_ref(*v + (b ? b[co] : 0.0), &p->act);
            }
    return y;
}

static void expect_close(const float *got, const double *want, int64_t n, const prob *p, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= ATOL + RTOL * fabs(want[i])))
            fail_msg("%s: nsp %d batch %lld cin %lld cout %lld in %lldx%lldx%lld k %lldx%lldx%lld bias %d act %d: "
                     "[%lld] got %.9g want %.9g", what, p->nsp, (long long)p->batch, (long long)p->cin,
                     (long long)p->cout, (long long)p->in[0], (long long)p->in[1], (long long)p->in[2],
                     (long long)p->k[0], (long long)p->k[1], (long long)p->k[2], p->bias, (int)p->act.kind,
                     (long long)i, got[i], want[i]);
}

static pvg_act random_act(void)
{
    pvg_act a = { PVG_ACT_NONE, 0.0f, 0.0f };
    switch (urand(4)) {
    case 1: a.kind = PVG_ACT_RELU; break;
    case 2: a.kind = PVG_ACT_LEAKY_RELU; a.alpha = 0.1f; break;
    case 3: a.kind = PVG_ACT_CLIP; a.alpha = -0.3f; a.beta = 0.5f; break;
    default: break;
    }
    return a;
}

/* A random k == stride problem; odd sizes are the common case. */
static prob random_fast(void)
{
    prob p;
    memset(&p, 0, sizeof p);
    p.nsp = 1 + (int)urand(3);
    p.batch = 1 + urand(3);
    p.cin = 1 + urand(24);
    p.cout = 1 + urand(24);
    for (int d = 0; d < 3; d++) {
        p.in[d] = p.k[d] = p.s[d] = 1;
        if (d < 3 - p.nsp) continue;
        p.k[d] = p.s[d] = 1 + urand(p.nsp == 3 ? 3 : 4);
        p.in[d] = 1 + urand(p.nsp == 3 ? 6 : 12);
    }
    for (int d = 0; d < 3; d++) p.out[d] = p.in[d] * p.k[d];
    p.bias = urand(2);
    p.act = random_act();
    return p;
}

typedef struct bufs { float *x, *w, *b; } bufs;

static bufs random_bufs(const prob *p)
{
    bufs b;
    int64_t nx = p->batch * p->cin * xsize(p), nw = p->cin * p->cout * ksize(p);
    b.x = malloc(sizeof(float) * (size_t)nx);
    b.w = malloc(sizeof(float) * (size_t)nw);
    b.b = malloc(sizeof(float) * (size_t)p->cout);
    assert_true(b.x && b.w && b.b);
    for (int64_t i = 0; i < nx; i++) b.x[i] = frand();
    for (int64_t i = 0; i < nw; i++) b.w[i] = frand() / sqrtf((float)p->cin);
    for (int64_t i = 0; i < p->cout; i++) b.b[i] = frand() * 0.5f;
    return b;
}

static void free_bufs(bufs *b) { free(b->x); free(b->w); free(b->b); }

/* The kernel on p with the given tile, pool and col buffer count; NaN-filled workspace and
 * output, guards after the output. */
static void run_kernel(const prob *p, const bufs *b, const double *want, int64_t tile, pvc_pool *pool, int nbuf,
                       const char *what)
{
    pvk_convt_fast_desc d = { .batch = p->batch, .cin = p->cin, .cout = p->cout, .tile = tile };
    for (int i = 0; i < 3; i++) { d.in[i] = p->in[i]; d.k[i] = p->k[i]; }
    int64_t ny = p->batch * p->cout * ysize(p), nws = pvk_convt_fast_ws_floats(&d, nbuf);
    float *y = malloc(sizeof(float) * (size_t)(ny + GUARD)), *ws = malloc(sizeof(float) * (size_t)nws);
    assert_true(y && ws);
    memset(y, 0xff, sizeof(float) * (size_t)ny);
    memset(ws, 0xff, sizeof(float) * (size_t)nws);
    for (int i = 0; i < GUARD; i++) y[ny + i] = GUARD_VAL;
    pvk_convt_fast_f32(pool, &d, b->x, b->w, p->bias ? b->b : NULL, &p->act, y, ws, nbuf);
    expect_close(y, want, ny, p, what);
    for (int i = 0; i < GUARD; i++)
        if (y[ny + i] != GUARD_VAL) fail_msg("%s: guard %d after Y overwritten", what, i);
    free(y);
    free(ws);
}

/* The packed path (pvk_convt_fast_packed) with every packed GEMM variant this CPU runs: fp32
 * ones against want, bf16 ones against want16 (the definition on bf16-rounded X and W); same
 * NaN-filled buffers and guards as run_kernel. */
static void run_packed(const prob *p, const bufs *b, const double *want, const double *want16, int64_t tile,
                       pvc_pool *pool, int nbuf, const char *what)
{
    pvk_convt_fast_desc d = { .batch = p->batch, .cin = p->cin, .cout = p->cout, .tile = tile };
    for (int i = 0; i < 3; i++) { d.in[i] = p->in[i]; d.k[i] = p->k[i]; }
    int64_t ny = p->batch * p->cout * ysize(p), nws = pvk_convt_fast_packed_ws_floats(&d, nbuf), rows = p->cout * ksize(p);
    float *y = malloc(sizeof(float) * (size_t)(ny + GUARD)), *ws = malloc(sizeof(float) * (size_t)nws);
    assert_true(y && ws);
    for (int vi = 0; vi < pvk_gemm_packed_nvariants; vi++) {
        const pvk_gemm_packed_variant *v = &pvk_gemm_packed_variants[vi];
        if (v->isa > pvc_isa_selected()) continue;
        pvk_gemm_packed *wp = NULL;
        assert_int_equal(pvk_gemm_packed_create(p->cin, rows, b->w, rows, false, 1.0f, v->precision, v, &wp, NULL), PV_OK);
        memset(y, 0xff, sizeof(float) * (size_t)ny);
        memset(ws, 0xff, sizeof(float) * (size_t)nws);
        for (int i = 0; i < GUARD; i++) y[ny + i] = GUARD_VAL;
        pvk_convt_fast_packed(pool, &d, b->x, wp, p->bias ? b->b : NULL, &p->act, y, ws, nbuf);
        char name[160];
        snprintf(name, sizeof name, "%s, packed %s", what, v->name);
        expect_close(y, v->precision == PVC_PREC_BF16 ? want16 : want, ny, p, name);
        for (int i = 0; i < GUARD; i++)
            if (y[ny + i] != GUARD_VAL) fail_msg("%s: guard %d after Y overwritten", name, i);
        pvk_gemm_packed_free(wp);
    }
    free(y);
    free(ws);
}

/* The definition on X and W rounded to bf16 (the bf16 packed path's operands). */
static double *naive_bf16(const prob *p, const bufs *b)
{
    int64_t nx = p->batch * p->cin * xsize(p), nw = p->cin * p->cout * ksize(p);
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    assert_true(x && w);
    for (int64_t i = 0; i < nx; i++) { uint32_t u = (uint32_t)pvk_bf16_round(b->x[i]) << 16; memcpy(&x[i], &u, 4); }
    for (int64_t i = 0; i < nw; i++) { uint32_t u = (uint32_t)pvk_bf16_round(b->w[i]) << 16; memcpy(&w[i], &u, 4); }
    double *y = naive(p, x, w, p->bias ? b->b : NULL);
    free(x);
    free(w);
    return y;
}

/* The AVX-512 output row pass against its plain twin, bit for bit: every activation it takes
 * (and none), odd row lengths and strides, NaN, -0 and values at the clip bounds; the row past
 * nw pairs is never written. */
static void test_pix2_twin(void **state)
{
    (void)state;
    if (pvc_isa_selected() < PVC_ISA_AVX512) { print_message("no AVX-512 here: twin not run\n"); return; }
    const pvg_act acts[] = { { PVG_ACT_NONE, 0, 0 }, { PVG_ACT_RELU, 0, 0 }, { PVG_ACT_LEAKY_RELU, 0.1f, 0 },
                             { PVG_ACT_CLIP, -0.3f, 0.5f }, { PVG_ACT_CLIP, 0.5f, -0.3f } };
    float src[64 * 37], a[2 * 64 + GUARD], b[2 * 64 + GUARD];
    for (int c = 0; c < 400; c++) {
        int64_t ld = 2 + urand(35), nw = urand(41);
        for (int64_t i = 0; i < 64 * 37; i++) {
            uint32_t r = urand(16);
            src[i] = r == 0 ? NAN : r == 1 ? -0.0f : r == 2 ? -0.3f : r == 3 ? 0.5f : frand();
        }
        const pvg_act *act = c % 6 == 5 ? NULL : &acts[c % 5];
        float bias = urand(2) ? 0.0f : frand();
        for (int i = 0; i < 2 * 64 + GUARD; i++) a[i] = b[i] = GUARD_VAL;
        pvk_convt_pix2_ref(a, src, ld, nw, bias, act);
        pvk_convt_pix2_avx512(b, src, ld, nw, bias, act);
        assert_memory_equal(a, b, sizeof a);
        for (int64_t i = 2 * nw; i < 2 * 64 + GUARD; i++) assert_true(b[i] == GUARD_VAL);
    }
    const pvg_act gelu = { PVG_ACT_GELU, 0, 0 };
    assert_null(pvk_convt_pix2_select(&gelu));
    assert_true(pvk_convt_pix2_select(NULL) == pvk_convt_pix2_avx512);
}

static void test_kernel_random(void **state)
{
    (void)state;
    for (int c = 0; c < 60; c++) {
        prob p = random_fast();
        bufs b = random_bufs(&p);
        double *want = naive(&p, b.x, b.w, p.bias ? b.b : NULL);
        pvk_convt_fast_desc d = { .batch = p.batch, .cin = p.cin, .cout = p.cout };
        for (int i = 0; i < 3; i++) { d.in[i] = p.in[i]; d.k[i] = p.k[i]; }
        int64_t xs = xsize(&p);
        run_kernel(&p, &b, want, pvk_convt_fast_tile(&d, 1), NULL, 1, "kernel, planned tile, no pool");
        run_kernel(&p, &b, want, pvk_convt_fast_tile(&d, 2), pool2, 2, "kernel, planned tile, 2 threads");
        /* tiles that split X rows anywhere, down to one pixel, and past the image */
        run_kernel(&p, &b, want, 1, pool2, 2, "kernel, tile 1");
        run_kernel(&p, &b, want, 1 + urand((uint32_t)xs + 3), pool2, 3, "kernel, random tile");
        run_kernel(&p, &b, want, 1 + urand((uint32_t)xs), pool2, 1, "kernel, pool larger than the buffers");
        double *want16 = naive_bf16(&p, &b);
        run_packed(&p, &b, want, want16, pvk_convt_fast_tile(&d, 2), pool2, 2, "kernel, planned tile, 2 threads");
        run_packed(&p, &b, want, want16, 1 + urand((uint32_t)xs + 3), pool2, 3, "kernel, random tile");
        run_packed(&p, &b, want, want16, 1 + urand((uint32_t)xs), NULL, 1, "kernel, random tile, no pool");
        free(want16);
        free(want);
        free_bufs(&b);
    }
}

/* A shape near the BEV neck's (256 -> 128, 90x90, 2x2), scaled down for the naive loop. */
static void test_kernel_neck(void **state)
{
    (void)state;
    prob p = { .nsp = 2, .batch = 2, .cin = 64, .cout = 32, .in = { 1, 45, 45 }, .k = { 1, 2, 2 },
               .s = { 1, 2, 2 }, .out = { 1, 90, 90 }, .bias = true, .act = { PVG_ACT_RELU, 0.0f, 0.0f } };
    bufs b = random_bufs(&p);
    double *want = naive(&p, b.x, b.w, b.b);
    pvk_convt_fast_desc d = { .batch = p.batch, .cin = p.cin, .cout = p.cout, .in = { 1, 45, 45 }, .k = { 1, 2, 2 } };
    run_kernel(&p, &b, want, pvk_convt_fast_tile(&d, 2), pool2, 2, "neck");
    run_kernel(&p, &b, want, 100, pool2, 2, "neck, tile 100");
    double *want16 = naive_bf16(&p, &b);
    run_packed(&p, &b, want, want16, pvk_convt_fast_tile(&d, 2), pool2, 2, "neck");
    run_packed(&p, &b, want, want16, 100, pool2, 2, "neck, tile 100");
    free(want16);
    free(want);
    free_bufs(&b);
}

/* The tile keeps a col buffer L2-sized (512 KiB) where 16 pixels fit, never leaves the image,
 * and cuts a large enough batch into at least two tiles per thread. */
static void test_tile_choice(void **state)
{
    (void)state;
    for (int c = 0; c < 200; c++) {
        pvk_convt_fast_desc d = { .batch = 1 + urand(4), .cin = 1 + urand(512), .cout = 1 + urand(1024),
                                  .in = { 1 + urand(3), 1 + urand(200), 1 + urand(200) },
                                  .k = { 1 + urand(2), 1 + urand(4), 1 + urand(4) } };
        int threads = 1 + (int)urand(16);
        int64_t t = pvk_convt_fast_tile(&d, threads), xs = d.in[0] * d.in[1] * d.in[2];
        int64_t rows = d.cout * d.k[0] * d.k[1] * d.k[2];
        assert_true(t >= 1 && t <= xs);
        if (rows * 16 <= 128 * 1024) assert_true(rows * t <= 128 * 1024);
        if (d.batch * xs >= 128 * threads && rows <= 2048)
            assert_true(d.batch * ((xs + t - 1) / t) >= 2 * threads);
        d.tile = t;
        assert_int_equal(pvk_convt_fast_ws_floats(&d, threads), threads * rows * t);
    }
}

/* The operator on p: strides = k; form 0 plain, 1 output_padding cropped by end pads, 2
 * SAME_UPPER, 3 output_shape; p's pads are used as given (control cases). */
static void run_op(const prob *p, const bufs *b, const double *want, int form)
{
    int nsp = p->nsp, off = 3 - nsp;
    int64_t xd[5] = { p->batch, p->cin }, wd[5] = { p->cin, p->cout }, bd[1] = { p->cout };
    int64_t strides[3], kshape[3], pads[6], opad[3], oshape[3];
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = p->in[off + i];
        wd[2 + i] = kshape[i] = p->k[off + i];
        strides[i] = p->s[off + i];
        pads[i] = p->pad[off + i];
        /* end pad: what is left of the full output (the control cases may crop) */
        pads[nsp + i] = (p->in[off + i] - 1) * p->s[off + i] + p->k[off + i] - p->pad[off + i] - p->out[off + i];
        opad[i] = 0;
        oshape[i] = p->out[off + i];
    }
    oph_attr at[6] = { OPH_INTS("strides", strides, nsp), OPH_INTS("kernel_shape", kshape, nsp) };
    int nat = 2;
    if (form == 1) {   /* output_padding, taken back by the end pads: the same full output */
        for (int i = 0; i < nsp; i++) {
            opad[i] = p->s[off + i] > 1 ? urand((uint32_t)p->s[off + i]) : 0;
            pads[nsp + i] += opad[i];
        }
        at[nat++] = (oph_attr)OPH_INTS("output_padding", opad, nsp);
    }
    if (form == 2) at[nat++] = (oph_attr)OPH_STR("auto_pad", "SAME_UPPER");
    else if (form == 3) at[nat++] = (oph_attr)OPH_INTS("output_shape", oshape, nsp);
    else at[nat++] = (oph_attr)OPH_INTS("pads", pads, 2 * nsp);
    pvc_tensor in[3] = { oph_tensor(PV_F32, nsp + 2, xd, b->x), oph_tensor(PV_F32, nsp + 2, wd, b->w),
                         oph_tensor(PV_F32, 1, bd, b->b) };
    oph_opts o = { p->act, pool2, true };
    setenv("PERCEIVE_DNNL", "0", 1);
    oph_result r = oph_run_ex("ConvTranspose", 17, in, p->bias ? 3 : 2, 2u | 4u, 1, at, nat, &o);
    unsetenv("PERCEIVE_DNNL");
    if (r.fault[0]) fail_msg("ConvTranspose form %d: %s", form, r.fault);
    if (r.status != PV_OK) fail_msg("ConvTranspose form %d failed: %s", form, r.msg.text);
    int64_t yd[5] = { p->batch, p->cout };
    for (int i = 0; i < nsp; i++) yd[2 + i] = p->out[off + i];
    oph_expect_shape(&r.out[0], PV_F32, nsp + 2, yd);
    char what[32];
    snprintf(what, sizeof what, "operator form %d", form);
    expect_close(r.out[0].data, want, p->batch * p->cout * ysize(p), p, what);
    oph_free(&r);
}

static void test_op_random(void **state)
{
    (void)state;
    for (int c = 0; c < 40; c++) {
        prob p = random_fast();
        bufs b = random_bufs(&p);
        double *want = naive(&p, b.x, b.w, p.bias ? b.b : NULL);
        for (int form = 0; form < 4; form++) run_op(&p, &b, want, form);
        free(want);
        free_bufs(&b);
    }
}

/* Shapes next to the fast path's conditions stay correct on the general one: overlapping
 * (k > stride), gapped (k < stride), cropped by a begin pad. */
static void test_op_controls(void **state)
{
    (void)state;
    for (int c = 0; c < 24; c++) {
        prob p = random_fast();
        int d = 2;   /* the last axis: present in 1-D, 2-D and 3-D alike */
        p.s[d] = 2;
        switch (c % 3) {
        case 0: p.k[d] = 3; break;
        case 1: p.k[d] = 1; break;
        default: p.k[d] = 2; p.pad[d] = 1; break;
        }
        p.out[d] = (p.in[d] - 1) * p.s[d] + p.k[d] - 2 * p.pad[d];
        if (p.out[d] < 1) { p.in[d] = 3; p.out[d] = 2 * p.s[d] + p.k[d] - 2 * p.pad[d]; }
        bufs b = random_bufs(&p);
        double *want = naive(&p, b.x, b.w, p.bias ? b.b : NULL);
        run_op(&p, &b, want, 0);
        free(want);
        free_bufs(&b);
    }
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
        cmocka_unit_test(test_pix2_twin),
        cmocka_unit_test(test_kernel_random),
        cmocka_unit_test(test_kernel_neck),
        cmocka_unit_test(test_tile_choice),
        cmocka_unit_test(test_op_random),
        cmocka_unit_test(test_op_controls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
