/* Convolution throughput per shape: perceive's im2col + GEMM path against oneDNN with NCHW
 * tensors and with its own (blocked) layouts, at 1 and 2 threads, through the Conv operator's
 * own prepare/run (PERCEIVE_DNNL switched per path), so the numbers are what a plan gets. The
 * shapes are the BEV dense head's (with its ConvTranspose upsampling) and ResNet-34's at 432x768. Not a test: numbers feed the
 * table in src/kernels/dnnl/conv_dnnl.c.
 *   pv_conv_bench [--iters N] [--threads 1,2] [--only SUBSTRING]
 * Prints GFLOP/s (best of N) per path: im2col, oneDNN NCHW, oneDNN blocked, Winograd (oneDNN,
 * fp32, 3x3 stride 1 only) and the bf16 precision (AVX512_BF16 / AMX; "-" when the CPU lacks
 * it), the path AUTO picks, and the largest difference of each result from the im2col one
 * (fp32 direct paths, then Winograd and bf16 separately, relative to max |y|). */
#include "graph/graph.h"
#include "kernels/dnnl/conv_dnnl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    const char *name;
    int64_t n, cin, cout, h, w, k, stride, group;
    bool    transposed;     /* ConvTranspose, no padding */
} shape;

static const shape shapes[] = {
    { "bev 3x3 256->128 180",      1, 256, 128, 180, 180, 3, 1, 1 },
    { "bev 3x3 128->128 180",      1, 128, 128, 180, 180, 3, 1, 1 },
    { "bev 3x3 s2 128->256 180",   1, 128, 256, 180, 180, 3, 2, 1 },
    { "bev 3x3 256->256 90",       1, 256, 256,  90,  90, 3, 1, 1 },
    { "bev 1x1 128->256 180",      1, 128, 256, 180, 180, 1, 1, 1 },
    { "bev 3x3 512->128 180",      1, 512, 128, 180, 180, 3, 1, 1 },
    { "bev 3x3 128->5 180",        1, 128,   5, 180, 180, 3, 1, 1 },
    { "bev 1x1 64->2 180",         1,  64,   2, 180, 180, 1, 1, 1 },
    { "bev 1x1 64->10 180",        1,  64,  10, 180, 180, 1, 1, 1 },
    { "bev 1x1 256->16 180",       1, 256,  16, 180, 180, 1, 1, 1 },
    { "bev 1x1 64->32 180",        1,  64,  32, 180, 180, 1, 1, 1 },
    { "bev 1x1 256->32 180",       1, 256,  32, 180, 180, 1, 1, 1 },
    { "bev 1x1 256->64 180",       1, 256,  64, 180, 180, 1, 1, 1 },
    { "bev 3x3 64->2 180",         1,  64,   2, 180, 180, 3, 1, 1 },
    { "bev 3x3 64->1 180",         1,  64,   1, 180, 180, 3, 1, 1 },
    { "r34 7x7 s2 3->64 432x768",  1,   3,  64, 432, 768, 7, 2, 1 },
    { "r34 3x3 64->64 108x192",    1,  64,  64, 108, 192, 3, 1, 1 },
    { "r34 3x3 s2 64->128 108x192",1,  64, 128, 108, 192, 3, 2, 1 },
    { "r34 1x1 s2 64->128 108x192",1,  64, 128, 108, 192, 1, 2, 1 },
    { "r34 3x3 128->128 54x96",    1, 128, 128,  54,  96, 3, 1, 1 },
    { "r34 3x3 256->256 27x48",    1, 256, 256,  27,  48, 3, 1, 1 },
    { "r34 3x3 512->512 14x24",    1, 512, 512,  14,  24, 3, 1, 1 },
    { "dw 3x3 128 180",            1, 128, 128, 180, 180, 3, 1, 128 },
    { "unseen 3x3 72->24 64x80",   1,  72,  24,  64,  80, 3, 1, 1 },
    { "unseen 3x3 144->48 32x40",  1, 144,  48,  32,  40, 3, 1, 1 },
    { "convT 2x2 s2 256->256 90",  1, 256, 256,  90,  90, 2, 2, 1, true },
    { "convT 2x2 s2 128->128 90",  1, 128, 128,  90,  90, 2, 2, 1, true },
    { "convT 4x4 s2 128->64 90",   1, 128,  64,  90,  90, 4, 2, 1, true },
};

static int64_t pad_of(const shape *s) { return s->transposed ? 0 : s->k / 2; }
static int64_t out_of(const shape *s, int64_t in)
{
    return s->transposed ? (in - 1) * s->stride + s->k - 2 * pad_of(s) : (in + 2 * pad_of(s) - s->k) / s->stride + 1;
}

static double now_ms(void) { return pvc_now_ms(); }

typedef struct bench_conv {
    const pvg_op *op;
    pvg_node   node;
    pvg_attr   attrs[3];
    int64_t    strides[2], pads[4];
    pvc_tensor in[3], out;
    unsigned char params[PVG_PARAMS_BYTES];
    size_t     ws_bytes;
    void      *ws;
} bench_conv;

/* prepare through the operator, as the planner would (weights and bias constant) */
static pv_status bench_prepare(bench_conv *b, const shape *s, const float *x, const float *w,
                               const float *bias, int threads, pvc_precision prec)
{
    memset(b, 0, sizeof *b);
    b->node.name = (char *)"bench";
    b->op = s->transposed ? &pvg_op_ConvTranspose : &pvg_op_Conv;
    b->node.op_type = (char *)b->op->name;
    b->node.domain = (char *)"";
    b->node.op = b->op;
    b->node.act.kind = PVG_ACT_RELU;
    int64_t pad = pad_of(s);
    b->strides[0] = b->strides[1] = s->stride;
    for (int i = 0; i < 4; i++) b->pads[i] = pad;
    b->attrs[0] = (pvg_attr){ .name = (char *)"strides", .type = PVG_ATTR_INTS, .ints = b->strides, .n = 2 };
    b->attrs[1] = (pvg_attr){ .name = (char *)"pads", .type = PVG_ATTR_INTS, .ints = b->pads, .n = 4 };
    b->attrs[2] = (pvg_attr){ .name = (char *)"group", .type = PVG_ATTR_INT, .i = s->group };
    b->node.attrs = b->attrs;
    b->node.nattrs = 3;
    pvc_tensor *X = &b->in[0], *W = &b->in[1], *B = &b->in[2];
    *X = (pvc_tensor){ .dtype = PV_F32, .rank = 4, .dims = { s->n, s->cin, s->h, s->w } };
    *W = s->transposed ? (pvc_tensor){ .dtype = PV_F32, .rank = 4, .dims = { s->cin, s->cout / s->group, s->k, s->k } }
                       : (pvc_tensor){ .dtype = PV_F32, .rank = 4, .dims = { s->cout, s->cin / s->group, s->k, s->k } };
    *B = (pvc_tensor){ .dtype = PV_F32, .rank = 1, .dims = { s->cout } };
    for (int i = 0; i < 3; i++) pvc_tensor_set_contiguous(&b->in[i]);
    W->data = (void *)w;
    B->data = (void *)bias;
    pvc_msg msg = {{0}};
    pvg_prep p = { .node = &b->node, .nin = 3, .nout = 1, .in = b->in, .out = &b->out, .params = b->params,
                   .opset = 17, .msg = &msg, .threads = threads, .precision = prec };
    pv_status st = b->op->prepare(&p);
    if (st != PV_OK) { fprintf(stderr, "prepare: %s\n", msg.text); return st; }
    pvc_tensor_set_contiguous(&b->out);
    X->data = (void *)x;
    b->ws_bytes = p.workspace;
    b->ws = p.workspace ? pvc_malloc_aligned(p.workspace) : NULL;
    return p.workspace && !b->ws ? PV_ENOMEM : PV_OK;
}

/* the oneDNN implementation a prepared Conv/ConvTranspose holds ("-" when its own path runs) */
static void conv_impl(const bench_conv *b, char *buf, size_t n)
{
    const pvk_dnnl_conv *c = pvk_dnnl_conv_of_params(b->params);
    snprintf(buf, n, "%s", c ? pvk_dnnl_conv_impl(c) : "-");
}

static void bench_release(bench_conv *b)
{
    if (b->op->release) b->op->release(b->params);
    pvc_free_aligned(b->ws);
}

/* best of iters runs, after one warm-up; y receives the output */
static double bench_time(bench_conv *b, float *y, pvc_pool *pool, int iters)
{
    b->out.data = y;
    pvg_exec x = { &b->node, b->params, b->in, 3, &b->out, 1, b->ws, pool };
    double best = INFINITY;
    for (int i = 0; i <= iters; i++) {
        double t0 = now_ms();
        if (b->op->run(&x) != PV_OK) { fprintf(stderr, "run failed: %s\n", pv_last_error()); return NAN; }
        double t = now_ms() - t0;
        if (i > 0 && t < best) best = t;
    }
    return best;
}

static float *rand_buf(int64_t n, float scale, unsigned *seed)
{
    float *p = pvc_malloc_aligned((size_t)n * sizeof(float));
    for (int64_t i = 0; p && i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = ((float)(*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
    return p;
}

/* columns: perceive's im2col, oneDNN NCHW, oneDNN blocked, oneDNN blocked Winograd, the AUTO
 * pick at bf16 */
enum { NCOL = 5 };
static const char *mode_env[NCOL] = { "0", "nchw", "blocked", "blocked", "1" };
static const char *wino_env[NCOL] = { "0", "0", "0", "1", "0" };
static const char *pick_name[] = { "im2col", "auto", "dnnl-nchw", "dnnl-blocked" };

/* what oneDNN runs for shape s in mode m (its implementation name), "-" when it declines */
static void impl_name(const shape *s, int64_t oh, int64_t ow, const float *w, int threads, pvk_dnnl_mode m,
                      char *buf, size_t n, pvk_dnnl_mode *pick)
{
    int64_t pad = pad_of(s);
    pvk_dnnl_conv_desc d = { .transposed = s->transposed, .nsp = 2, .batch = s->n, .cin = s->cin, .cout = s->cout, .group = s->group,
                             .in = { s->h, s->w }, .out = { oh, ow }, .k = { s->k, s->k },
                             .stride = { s->stride, s->stride }, .dil = { 1, 1 },
                             .pad_begin = { pad, pad }, .pad_end = { pad, pad },
                             .bias = true, .act = { PVG_ACT_RELU, 0, 0 } };
    *pick = pvk_dnnl_conv_pick(&d);
    pvk_dnnl_conv *c = NULL;
    size_t ws = 0;
    snprintf(buf, n, "-");
    if (pvk_dnnl_conv_create(&d, w, threads, m, &c, &ws, NULL) == PV_OK && c) {
        snprintf(buf, n, "%s", pvk_dnnl_conv_impl(c));
        char *slash = strchr(buf, '/');
        if (slash) *slash = 0;
    }
    pvk_dnnl_conv_free(c);
}

int main(int argc, char **argv)
{
    int iters = 3, threads[4] = { 1, 2 }, nthreads = 2;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            nthreads = 0;
            for (char *t = strtok(argv[++i], ","); t && nthreads < 4; t = strtok(NULL, ",")) threads[nthreads++] = atoi(t);
        } else {
            fprintf(stderr, "usage: %s [--iters N] [--threads 1,2] [--only SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    printf("oneDNN %s; best of %d runs; GFLOP/s = 2*N*Cout*(Cin/g)*k*k*OH*OW / time; conv + bias + relu\n",
           pvk_dnnl_available() ? "linked" : "NOT linked (only im2col is measured)", iters);
    printf("%-28s %3s %8s %8s %8s %8s %8s  %-22s %-26s %-12s %9s %9s %9s\n", "shape", "thr", "im2col", "d-nchw",
           "d-blocked", "wino", "bf16", "nchw impl", "bf16 impl", "table picks", "max|diff|", "wino rel", "bf16 rel");
    pvc_precision bf16 = PVC_PREC_FP32;
    char why[160];
    if (pvc_precision_resolve(PV_PRECISION_BF16, &bf16, why, sizeof why) != PV_OK || bf16 != PVC_PREC_BF16)
        printf("bf16 column: %s\n", why);
    unsigned seed = 1;
    for (size_t si = 0; si < PVC_COUNTOF(shapes); si++) {
        const shape *s = &shapes[si];
        if (only && !strstr(s->name, only)) continue;
        int64_t oh = out_of(s, s->h), ow = out_of(s, s->w);
        int64_t nx = s->n * s->cin * s->h * s->w, nw = s->cout * (s->cin / s->group) * s->k * s->k, ny = s->n * s->cout * oh * ow;
        /* a ConvTranspose does its multiply-adds per input pixel */
        double pixels = s->transposed ? (double)(s->h * s->w) : (double)(oh * ow);
        double flops = 2.0 * (double)s->n * (double)s->cout * (double)(s->cin / s->group) * (double)(s->k * s->k) * pixels;
        float *x = rand_buf(nx, 1.0f, &seed), *w = rand_buf(nw, 0.05f, &seed), *bias = rand_buf(s->cout, 0.1f, &seed);
        float *ref = pvc_malloc_aligned((size_t)ny * sizeof(float)), *y = pvc_malloc_aligned((size_t)ny * sizeof(float));
        if (!x || !w || !bias || !ref || !y) { fprintf(stderr, "out of memory\n"); return 1; }
        for (int ti = 0; ti < nthreads; ti++) {
            pvc_pool *pool = NULL;
            if (pvc_pool_create(threads[ti], &pool) != PV_OK) return 1;
            double gf[NCOL], ymax = 0;
            float diff = 0, dcol[NCOL] = { 0 };
            char impl[NCOL][40] = { "", "-", "-", "-", "-" };
            pvk_dnnl_mode pick = PVK_DNNL_OFF;
            for (int m = 0; m < NCOL; m++) {
                gf[m] = NAN;
                if (m > 0 && !pvk_dnnl_available()) continue;
                if (m == 4 && bf16 != PVC_PREC_BF16) continue;
                if (m == 1 || m == 2) impl_name(s, oh, ow, w, threads[ti], m == 1 ? PVK_DNNL_NCHW : PVK_DNNL_BLOCKED,
                                                impl[m], sizeof impl[m], &pick);
                setenv("PERCEIVE_DNNL", mode_env[m], 1);
                setenv("PERCEIVE_WINOGRAD", wino_env[m], 1);
                bench_conv b;
                if (bench_prepare(&b, s, x, w, bias, threads[ti], m == 4 ? PVC_PREC_BF16 : PVC_PREC_FP32) != PV_OK) { bench_release(&b); continue; }
                if (m >= 3) {
                    conv_impl(&b, impl[m], sizeof impl[m]);
                    if (m == 3 && !strstr(impl[m], "wino")) { bench_release(&b); continue; }   /* no Winograd kernel */
                }
                double t = bench_time(&b, m == 0 ? ref : y, pool, iters);
                gf[m] = flops / t / 1e6;
                for (int64_t i = 0; m == 0 && i < ny; i++) ymax = fmax(ymax, fabsf(ref[i]));
                for (int64_t i = 0; m > 0 && i < ny; i++) dcol[m] = fmaxf(dcol[m], fabsf(y[i] - ref[i]));
                bench_release(&b);
            }
            diff = fmaxf(dcol[1], dcol[2]);
            printf("%-28s %3d %8.1f %8.1f %8.1f %8.1f %8.1f  %-22s %-26s %-12s %9.2g %9.2g %9.2g\n", s->name, threads[ti],
                   gf[0], gf[1], gf[2], gf[3], gf[4], impl[1], impl[4], pick_name[pick], (double)diff,
                   isnan(gf[3]) ? NAN : dcol[3] / ymax, isnan(gf[4]) ? NAN : dcol[4] / ymax);
            fflush(stdout);
            pvc_pool_free(pool);
        }
        pvc_free_aligned(x); pvc_free_aligned(w); pvc_free_aligned(bias); pvc_free_aligned(ref); pvc_free_aligned(y);
    }
    unsetenv("PERCEIVE_DNNL");
    unsetenv("PERCEIVE_WINOGRAD");
    return 0;
}
