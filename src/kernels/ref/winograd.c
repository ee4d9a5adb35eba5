/* Winograd F(4x4, 3x3) (see kernels/winograd.h): the weight transform and packing, the block
 * driver, and the plain twin pvk_wino_ref_f32. */
#include "kernels/winograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The F(4, 3) matrices for the points 0, +-a, +-b and infinity (a = PVK_WINO_A, b = PVK_WINO_B):
 * A^T [i][j] = p_j^i; G row j = [1, p_j, p_j^2] / prod_(k != j) (p_j - p_k); B^T row j = the
 * coefficients of prod_(k != j) (x - p_k), row 5 those of prod_k (x - p_k) (Toom-Cook; with
 * a = 1, b = 2 these are Lavin and Gray's matrices). Each entry of A and B is exact in binary. */
static void wino_matrices(double G[6][3], float BT[6][6], float AT[4][6])
{
    const double a = PVK_WINO_A, b = PVK_WINO_B, p[5] = { 0, a, -a, b, -b };
    const double bt[6][6] = {
        { a * a * b * b, 0, -(a * a + b * b), 0, 1, 0 },
        { 0, -a * b * b, -b * b, a, 1, 0 },
        { 0, a * b * b, -b * b, -a, 1, 0 },
        { 0, -b * a * a, -a * a, b, 1, 0 },
        { 0, b * a * a, -a * a, -b, 1, 0 },
        { 0, a * a * b * b, 0, -(a * a + b * b), 0, 1 },
    };
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < 6; i++) BT[j][i] = (float)bt[j][i];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 5; j++) AT[i][j] = (float)pow(p[j], i);
        AT[i][5] = i == 3 ? 1.0f : 0.0f;
    }
    for (int j = 0; j < 5; j++) {
        double n = 1;
        for (int k = 0; k < 5; k++)
            if (k != j) n *= p[j] - p[k];
        G[j][0] = 1 / n;
        G[j][1] = p[j] / n;
        G[j][2] = p[j] * p[j] / n;
    }
    G[5][0] = G[5][1] = 0;
    G[5][2] = 1;
}

enum { PANEL = 64 };   /* output channels per packed weight panel: the micro-kernel's 4 zmm */

/* u[36] = G g G^T for one 3x3 filter g, in double, rounded once */
static void weight_transform(double G[6][3], const float *g, float *u, int64_t ustride)
{
    double t[6][3];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 3; j++) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) u[(i * 6 + j) * ustride] = (float)(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
}

bool pvk_wino_supported(const pvk_wino_desc *d)
{
#if defined(__x86_64__) || defined(_M_X64)
    if (pvc_isa_selected() < PVC_ISA_AVX512) return false;
#else
    return false;
#endif
    if (d->batch < 1 || d->cin < 1 || d->cout < 1) return false;
    if (d->pad_t < 0 || d->pad_t > 2 || d->pad_l < 0 || d->pad_l > 2) return false;
    int64_t pb = d->oh + 2 - d->ih - d->pad_t, pr = d->ow + 2 - d->iw - d->pad_l;
    if (d->ih < 1 || d->iw < 1 || d->oh < 1 || d->ow < 1 || pb < 0 || pb > 2 || pr < 0 || pr > 2) return false;
    if (d->act.kind == PVG_ACT_GELU) return false;
    if (d->act.kind == PVG_ACT_CLIP && !(d->act.alpha <= d->act.beta)) return false;
    /* padded output channels compute act(0): it must stay 0 for the layout's padding */
    if (d->cout % 16 && d->act.kind == PVG_ACT_CLIP && !(d->act.alpha <= 0 && d->act.beta >= 0)) return false;
    return true;
}

/* Tiles per block. Smaller blocks keep V [36][block][cin] and M [36][block][cout] in L2; larger
 * ones read the transformed weights (36 cin cout floats, 2.4-9.4 MiB on BEVFusion's layers) fewer
 * times. AMD Zen 5 (1 MiB L2), 2 threads, pv_wino_bench, ms at 12 / 24 / 36 tiles: 256->128
 * 180^2 13.7 / 13.6 / 15.9, 128->128 180^2 7.5 / 7.1 / 8.1, 512->128 180^2 55.7 / 29.9 / 32.0,
 * 256->256 90^2 7.5 / 7.9 / 7.9: 24 throughout. */
static int64_t pick_block(int64_t tiles, int threads)
{
    const char *e = getenv("PERCEIVE_WINO_TILES");
    int64_t b = e && *e ? atoll(e) : 0;
    if (b <= 0) b = 24;
    b = (b + 5) / 6 * 6;
    /* at least a few blocks per thread so that the last one does not leave a core idle */
    while (b > 6 && (tiles + b - 1) / b < 4 * threads) b -= 6;
    return b;
}

bool pvk_wino_pays(const pvk_wino_desc *d)
{
    /* every block reads all transformed weights: beyond the L3 they come from memory at a few
     * FLOP per byte (512->512 at 14x24: 338-610 GFLOP/s, against 1200-1400 on the others) */
    return (double)36 * 4 * (double)d->cin * (double)d->cout <= 16.0 * 1024 * 1024;
}

pv_status pvk_wino_create(const pvk_wino_desc *d, const float *w, int threads, pvk_wino **out, size_t *ws)
{
    *out = NULL;
    *ws = 0;
    if (!pvk_wino_supported(d)) return pvc_fail(NULL, PV_EUNSUPPORTED, "Winograd F(4,3): shape or CPU not supported");
    if (threads < 1) threads = 1;
    pvk_wino *k = pvc_calloc(1, sizeof *k);
    if (!k) return pvc_fail(NULL, PV_ENOMEM, "out of memory creating a Winograd convolution");
    k->d = *d;
    k->threads = threads;
    k->th = (d->oh + 3) / 4;
    k->tw = (d->ow + 3) / 4;
    k->tiles = d->batch * k->th * k->tw;
    k->block = pick_block(k->tiles, threads);
    k->nblocks = (k->tiles + k->block - 1) / k->block;
    k->cp = (d->cin + 15) / 16 * 16;
    k->kp = (d->cout + 15) / 16 * 16;
    size_t vm = (size_t)(36 * (k->block * (k->cp + k->kp) + 32)) * sizeof(float);   /* + the stride pads */
    k->ws_per_thread = (vm + 63) & ~(size_t)63;
    int64_t C = k->cp, K = k->kp;
    k->u = pvc_malloc_aligned((size_t)(36 * C * K) * sizeof(float));
    if (!k->u) { pvc_free(k); return pvc_fail(NULL, PV_ENOMEM, "out of memory for Winograd weights"); }
    memset(k->u, 0, (size_t)(36 * C * K) * sizeof(float));   /* the padded channels' rows and columns */
    /* U[p][panel][c][kk]: panel j holds output channels [64 j, 64 j + width) */
    double G[6][3];
    float BT[6][6], AT[4][6];
    wino_matrices(G, BT, AT);
    for (int64_t o = 0; o < d->cout; o++) {
        int64_t j = o / PANEL, kk = o % PANEL, width = PVC_MIN(PANEL, K - j * PANEL);
        for (int64_t c = 0; c < d->cin; c++) {
            float *u = k->u + j * PANEL * C + c * width + kk;
            weight_transform(G, w + (o * d->cin + c) * 9, u, C * K);
        }
    }
    *ws = (size_t)threads * k->ws_per_thread;
    *out = k;
    return PV_OK;
}

void pvk_wino_free(pvk_wino *k)
{
    if (!k) return;
    pvc_free_aligned(k->u);
    pvc_free(k);
}

void pvk_wino_run_blocks(const pvk_wino *k, const float *x, const float *bias, float *y, void *ws, int64_t b0, int64_t b1,
                         int tid)
{
#if defined(__x86_64__) || defined(_M_X64)
    float *buf = (float *)((char *)ws + (size_t)tid * k->ws_per_thread);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t0 = b * k->block;
        pvk_wino_block_avx512(k, x, bias, y, buf, t0, PVC_MIN(k->block, k->tiles - t0));
    }
#else
    (void)k; (void)x; (void)bias; (void)y; (void)ws; (void)b0; (void)b1; (void)tid;
#endif
}

typedef struct run_ctx {
    const pvk_wino *k;
    const float    *x, *bias;
    float          *y;
    void           *ws;
} run_ctx;

static void run_range(void *ctx, int64_t b0, int64_t b1, int tid)
{
    const run_ctx *r = ctx;
    pvk_wino_run_blocks(r->k, r->x, r->bias, r->y, r->ws, b0, b1, tid);
}

void pvk_wino_run(const pvk_wino *k, pvc_pool *p, const float *x, const float *bias, float *y, void *ws)
{
    run_ctx r = { k, x, bias, y, ws };
    if (pvc_pool_threads(p) > k->threads) p = NULL;   /* the workspace has k->threads slices */
    pvc_parallel_for(p, k->nblocks, 1, run_range, &r);
}

/* ---- the plain twin ------------------------------------------------------------------------- */

void pvk_wino_ref_f32(const pvk_wino_desc *d, const float *x, const float *w, const float *bias, float *y)
{
    int64_t C = d->cin, K = d->cout, th = (d->oh + 3) / 4, tw = (d->ow + 3) / 4;
    float *u = pvc_malloc((size_t)(36 * C * K) * sizeof(float));
    float *v = pvc_malloc((size_t)(36 * C) * sizeof(float));
    if (!u || !v) { pvc_free(u); pvc_free(v); return; }
    double G[6][3];
    float BT[6][6], AT[4][6];
    wino_matrices(G, BT, AT);
    for (int64_t o = 0; o < K; o++)                 /* u[(o * C + c) * 36 + p] */
        for (int64_t c = 0; c < C; c++) weight_transform(G, w + (o * C + c) * 9, u + (o * C + c) * 36, 1);
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t ty = 0; ty < th; ty++)
            for (int64_t tx = 0; tx < tw; tx++) {
                int64_t y0 = ty * 4 - d->pad_t, x0 = tx * 4 - d->pad_l;
                for (int64_t c = 0; c < C; c++) {
                    float dd[6][6], t[6][6];
                    const float *xc = x + (n * C + c) * d->ih * d->iw;
                    for (int i = 0; i < 6; i++)
                        for (int j = 0; j < 6; j++) {
                            int64_t yy = y0 + i, xx = x0 + j;
                            dd[i][j] = yy >= 0 && yy < d->ih && xx >= 0 && xx < d->iw ? xc[yy * d->iw + xx] : 0.0f;
                        }
                    for (int i = 0; i < 6; i++)       /* t = B^T d */
                        for (int j = 0; j < 6; j++) {
                            float s = 0.0f;
                            for (int l = 0; l < 6; l++) s += BT[i][l] * dd[l][j];
                            t[i][j] = s;
                        }
                    for (int i = 0; i < 6; i++)       /* v = t B */
                        for (int j = 0; j < 6; j++) {
                            float s = 0.0f;
                            for (int l = 0; l < 6; l++) s += t[i][l] * BT[j][l];
                            v[c * 36 + i * 6 + j] = s;
                        }
                }
                for (int64_t o = 0; o < K; o++) {
                    float m[36], r[4][6];
                    for (int p = 0; p < 36; p++) {
                        float s = 0.0f;
                        for (int64_t c = 0; c < C; c++) s += u[(o * C + c) * 36 + p] * v[c * 36 + p];
                        m[p] = s;
                    }
                    for (int i = 0; i < 4; i++)       /* r = A^T m */
                        for (int j = 0; j < 6; j++) {
                            float s = 0.0f;
                            for (int l = 0; l < 6; l++) s += AT[i][l] * m[l * 6 + j];
                            r[i][j] = s;
                        }
                    for (int i = 0; i < 4; i++)       /* y = r A */
                        for (int j = 0; j < 4; j++) {
                            int64_t yy = ty * 4 + i, xx = tx * 4 + j;
                            if (yy >= d->oh || xx >= d->ow) continue;
                            float s = 0.0f;
                            for (int l = 0; l < 6; l++) s += r[i][l] * AT[j][l];
                            if (bias) s += bias[o];
                            pvk_act_apply(&d->act, &s, 1);
                            y[((n * K + o) * d->oh + yy) * d->ow + xx] = s;
                        }
                }
            }
    pvc_free(u);
    pvc_free(v);
}
