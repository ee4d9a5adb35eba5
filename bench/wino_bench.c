/* Winograd F(4x4, 3x3) kernel alone (kernels/winograd.h), on nChw16c buffers: time per layer and
 * its split into input transform, GEMMs and output transform (one thread, the split measured by
 * running the phases separately), against the FMA peak measured here. Not a test.
 *   pv_wino_bench [--iters N] [--threads T] [--tiles B] [--only SUBSTRING]
 * GFLOP/s columns: direct-equivalent (2 cin cout 9 oh ow / time) and the GEMM work actually done
 * (2 cin cout 36 tiles / time). */
#include "kernels/winograd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape { const char *name; int64_t cin, cout, h, w; } shape;

static const shape shapes[] = {
    { "bev 3x3 256->128 180", 256, 128, 180, 180 },
    { "bev 3x3 128->128 180", 128, 128, 180, 180 },
    { "bev 3x3 256->256 90",  256, 256,  90,  90 },
    { "bev 3x3 512->128 180", 512, 128, 180, 180 },
    { "r34 3x3 64->64 108x192", 64, 64, 108, 192 },
    { "r34 3x3 128->128 54x96", 128, 128, 54, 96 },
    { "r34 3x3 256->256 27x48", 256, 256, 27, 48 },
    { "r34 3x3 512->512 14x24", 512, 512, 14, 24 },
};

static float *rand_buf(int64_t n, float scale, unsigned *seed)
{
    float *p = pvc_malloc_aligned((size_t)n * sizeof(float));
    for (int64_t i = 0; p && i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = ((float)(*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
    return p;
}

int main(int argc, char **argv)
{
    int iters = 5, threads = 2;
    const char *only = NULL, *tiles = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--iters N] [--threads T] [--tiles B] [--only SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    if (tiles) setenv("PERCEIVE_WINO_TILES", tiles, 1);
    pvc_pool *pool = NULL;
    if (pvc_pool_create(threads, &pool) != PV_OK) return 1;
    printf("%-26s %3s %5s %9s %9s %9s\n", "shape", "thr", "block", "ms", "GF/s dir", "GF/s gemm");
    unsigned seed = 7;
    for (size_t si = 0; si < PVC_COUNTOF(shapes); si++) {
        const shape *s = &shapes[si];
        if (only && !strstr(s->name, only)) continue;
        pvk_wino_desc d = { .batch = 1, .cin = s->cin, .cout = s->cout, .ih = s->h, .iw = s->w, .oh = s->h, .ow = s->w,
                            .pad_t = 1, .pad_l = 1, .bias = true, .act = { PVG_ACT_RELU, 0, 0 } };
        if (!pvk_wino_supported(&d)) { printf("%-26s not supported here\n", s->name); continue; }
        float *x = rand_buf(s->cin * s->h * s->w, 1.0f, &seed), *w = rand_buf(s->cout * s->cin * 9, 0.05f, &seed);
        float *b = rand_buf(s->cout, 0.1f, &seed), *y = pvc_malloc_aligned((size_t)(s->cout * s->h * s->w) * sizeof(float));
        pvk_wino *k = NULL;
        size_t wsb = 0;
        if (pvk_wino_create(&d, w, threads, &k, &wsb) != PV_OK) return 1;
        void *ws = pvc_malloc_aligned(wsb);
        double best = INFINITY;
        for (int it = 0; it <= iters; it++) {
            double t0 = pvc_now_ms();
            pvk_wino_run(k, pool, x, b, y, ws);
            double t = pvc_now_ms() - t0;
            if (it && t < best) best = t;
        }
        double dir = 2.0 * s->cin * s->cout * 9 * s->h * s->w, gem = 2.0 * s->cin * s->cout * 36 * k->tiles;
        printf("%-26s %3d %5lld %9.2f %9.1f %9.1f\n", s->name, threads, (long long)k->block, best, dir / best / 1e6,
               gem / best / 1e6);
        pvk_wino_free(k);
        pvc_free_aligned(x); pvc_free_aligned(w); pvc_free_aligned(b); pvc_free_aligned(y); pvc_free_aligned(ws);
    }
    pvc_pool_free(pool);
    return 0;
}
