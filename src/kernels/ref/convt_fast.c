/* ConvTranspose with kernel == stride (see convt_fast.h). The threads take tiles of input
 * pixels from the pool; each runs a one-thread GEMM col[cout*ks, tile] = W^T x X[:, tile] into
 * its own col buffer and at once writes col to the output rows (depth-to-space) with bias and
 * activation, while col is still in its L2. Measured on the BEV neck shape (256 -> 128, 90x90,
 * 2x2, ReLU, bias), one thread, best of 10 on the shared 2-vCPU box at load 4-6: 19-32 ms
 * against 35-58 ms for the general path (memset + GEMM + col2im + bias/act pass); the GEMM is
 * ~2/3 of the time, the copy ~15%, packing W^T per tile ~7% (tiles of 64K..256K col floats
 * measured within noise of each other). With W packed once (pvk_convt_fast_packed: the op's path
 * for a constant f32 W, fp32 or bf16) the GEMM is the packed one on X read as a transposed A, and
 * the product comes out pixel-major (colT). */
#include "kernels/ref/convt_fast.h"
#include "kernels/gemm_packed.h"

/* col buffers of about TILE_FLOATS floats (L2-resident until the copy reads them back), tiles
 * of at least TILE_MIN pixels unless the image is smaller, and about 4 tiles per thread (the
 * pool hands them out dynamically: on a shared box one thread is often slower). */
enum { TILE_FLOATS = 128 * 1024, TILE_MIN = 16 };
/* colT's rows are padded by this many floats: at 1024 floats (the BEV neck's 256 x 2x2) the 12
 * rows a micro-tile writes were 4 KiB apart, all in one L1 set: the packed fp32 GEMM made ~57 %
 * of peak there, the output pass read with the same aliasing; padded, the node took 13.8-14.9
 * ms in fp32 instead of 18.5-19.8, 8.7-10.2 in bf16 instead of 9.7-11.0. */
enum { COLT_PAD = 16 };

int64_t pvk_convt_fast_tile(const pvk_convt_fast_desc *d, int threads)
{
    int64_t rows = d->cout * d->k[0] * d->k[1] * d->k[2], xsz = d->in[0] * d->in[1] * d->in[2];
    int64_t t = PVC_MAX(1, threads);
    int64_t tile = PVC_MAX(TILE_MIN, TILE_FLOATS / PVC_MAX(rows, 1) / TILE_MIN * TILE_MIN);
    int64_t share = (d->batch * xsz + 4 * t - 1) / (4 * t);
    tile = PVC_MIN(tile, PVC_MAX(4 * TILE_MIN, (share + TILE_MIN - 1) / TILE_MIN * TILE_MIN));
    return PVC_MAX(1, PVC_MIN(tile, xsz));
}

int64_t pvk_convt_fast_ws_floats(const pvk_convt_fast_desc *d, int nbuf)
{
    return (int64_t)PVC_MAX(nbuf, 1) * d->cout * d->k[0] * d->k[1] * d->k[2] * d->tile;
}

/* The fused activation of one value, as pvk_act_apply computes it, written as selects so the
 * row loops below vectorise (pvk_act_apply's ReLU branch mispredicts on about half of random
 * values: it took half of this path's time). */
static inline float act1(float v, pvg_act_kind kind, float alpha, float beta)
{
    switch (kind) {
    case PVG_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case PVG_ACT_LEAKY_RELU: return v >= 0.0f ? v : v * alpha;
    case PVG_ACT_CLIP: return v < alpha ? alpha : (v > beta ? beta : v);
    case PVG_ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case PVG_ACT_NONE: break;
    }
    return v;
}

/* dst[w * kw + e] = act(v(w, e) + bias) for w < nw, e < kw: one output row segment. Channel-major
 * source (col, ld = its row length: the kw col rows that interleave into the segment):
 * v = src[e * ld + w]; pixel-major (colT, ld = its row length: a pixel's kw values side by side):
 * v = src[w * ld + e]. kind and pix are constants where row_out calls it. */
static inline void row_act(float *restrict dst, const float *restrict src, int64_t ld, bool pix, int64_t kw,
                           int64_t nw, float bias, pvg_act_kind kind, float alpha, float beta)
{
    if (pix) {
        if (kw == 2) {
            for (int64_t w = 0; w < nw; w++) {
                dst[2 * w] = act1(src[w * ld] + bias, kind, alpha, beta);
                dst[2 * w + 1] = act1(src[w * ld + 1] + bias, kind, alpha, beta);
            }
        } else {
            for (int64_t w = 0; w < nw; w++)
                for (int64_t e = 0; e < kw; e++) dst[w * kw + e] = act1(src[w * ld + e] + bias, kind, alpha, beta);
        }
    } else if (kw == 1) {
        for (int64_t w = 0; w < nw; w++) dst[w] = act1(src[w] + bias, kind, alpha, beta);
    } else if (kw == 2) {
        const float *s1 = src + ld;
        int64_t w = 0;
        for (; w + 4 <= nw; w += 4) {   /* four pairs per step: GCC's SLP makes them two vector stores */
            float a0 = act1(src[w] + bias, kind, alpha, beta), a1 = act1(src[w + 1] + bias, kind, alpha, beta);
            float a2 = act1(src[w + 2] + bias, kind, alpha, beta), a3 = act1(src[w + 3] + bias, kind, alpha, beta);
            float b0 = act1(s1[w] + bias, kind, alpha, beta), b1 = act1(s1[w + 1] + bias, kind, alpha, beta);
            float b2 = act1(s1[w + 2] + bias, kind, alpha, beta), b3 = act1(s1[w + 3] + bias, kind, alpha, beta);
            float *o = dst + 2 * w;
            o[0] = a0; o[1] = b0; o[2] = a1; o[3] = b1; o[4] = a2; o[5] = b2; o[6] = a3; o[7] = b3;
        }
        for (; w < nw; w++) {
            dst[2 * w] = act1(src[w] + bias, kind, alpha, beta);
            dst[2 * w + 1] = act1(s1[w] + bias, kind, alpha, beta);
        }
    } else {
        for (int64_t e = 0; e < kw; e++)
            for (int64_t w = 0; w < nw; w++) dst[w * kw + e] = act1(src[e * ld + w] + bias, kind, alpha, beta);
    }
}

#define ROW_OUT(PIX)                                                                                      \
    switch (act ? act->kind : PVG_ACT_NONE) {                                                             \
    case PVG_ACT_NONE: row_act(dst, src, ld, PIX, kw, nw, bias, PVG_ACT_NONE, 0.0f, 0.0f); return;        \
    case PVG_ACT_RELU: row_act(dst, src, ld, PIX, kw, nw, bias, PVG_ACT_RELU, 0.0f, 0.0f); return;        \
    case PVG_ACT_LEAKY_RELU: row_act(dst, src, ld, PIX, kw, nw, bias, PVG_ACT_LEAKY_RELU, act->alpha, 0.0f); return; \
    case PVG_ACT_CLIP: row_act(dst, src, ld, PIX, kw, nw, bias, PVG_ACT_CLIP, act->alpha, act->beta); return; \
    case PVG_ACT_GELU: row_act(dst, src, ld, PIX, kw, nw, bias, PVG_ACT_GELU, 0.0f, 0.0f); return;        \
    }

static void row_out(float *restrict dst, const float *restrict src, int64_t ld, bool pix, int64_t kw, int64_t nw,
                    float bias, const pvg_act *act)
{
    if (pix) { ROW_OUT(true) } else { ROW_OUT(false) }
}

typedef struct fast_job {
    const pvk_convt_fast_desc *d;
    const float *x, *w, *bias;
    const pvk_gemm_packed *wp;       /* packed path: W packed once (else NULL) */
    pvk_convt_pix2_fn pix2;          /* packed path, kernel width 2: the selected row pass */
    int64_t ldt;                     /* packed path: colT's row stride (rows + COLT_PAD) */
    const pvg_act *act;
    float *y, *ws;
    int64_t xsz, ysz, rows, tiles;   /* tiles per batch item */
} fast_job;

/* Writes the tile's product (X pixels [p0, p0 + np) of batch item n) to its output positions:
 * col (rows x np, channel-major) or, pix, colT (np x rows, a pixel's cout * ks values side by
 * side: each output row segment then reads its pixels rows apart; the lines it reads, one per
 * pixel, stay in L1 while the channels walk across them, and a transpose into col first
 * measured slower, its own pass over the tile). */
static void depth_to_space(const fast_job *j, const float *buf, bool pix, int64_t n, int64_t p0, int64_t np)
{
    const pvk_convt_fast_desc *d = j->d;
    int64_t H = d->in[1], W = d->in[2], kd = d->k[0], kh = d->k[1], kw = d->k[2];
    int64_t OH = H * kh, OW = W * kw, ks = kd * kh * kw;
    int64_t ld = pix ? j->ldt : np, pstride = pix ? j->ldt : 1, rstride = pix ? 1 : np;
    float *yn = j->y + n * d->cout * j->ysz;
    for (int64_t p = p0; p < p0 + np;) {   /* segments within one X row */
        int64_t zy = p / W, w0 = p % W, nw = PVC_MIN(W - w0, p0 + np - p);
        float *ybase = yn + ((zy / H) * kd * OH + (zy % H) * kh) * OW + w0 * kw;
        const float *src = buf + (p - p0) * pstride;
        for (int64_t co = 0; co < d->cout; co++) {
            float b0 = j->bias ? j->bias[co] : 0.0f;
            for (int64_t a = 0; a < kd; a++)
                for (int64_t b = 0; b < kh; b++) {
                    float *dst = ybase + co * j->ysz + (a * OH + b) * OW;
                    const float *s = src + (co * ks + (a * kh + b) * kw) * rstride;
                    if (pix && kw == 2 && j->pix2) j->pix2(dst, s, ld, nw, b0, j->act);
                    else row_out(dst, s, ld, pix, kw, nw, b0, j->act);
                }
        }
        p += nw;
    }
}

/* Per tile: the product into this thread's buffer, then out. W packed (wp): colT = X_tile^T W,
 * X's pixels read in place as the rows of a transposed A; else col = W^T X_tile. */
static void fast_tiles(void *ctx, int64_t begin, int64_t end, int tid)
{
    const fast_job *j = ctx;
    const pvk_convt_fast_desc *d = j->d;
    float *buf = j->ws + (int64_t)tid * (j->wp ? j->ldt : j->rows) * d->tile;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / j->tiles, p0 = t % j->tiles * d->tile, np = PVC_MIN(d->tile, j->xsz - p0);
        const float *xt = j->x + n * d->cin * j->xsz + p0;
        if (j->wp)
            pvk_gemm_packed_run_ws(j->wp, NULL, np, xt, j->xsz, true, buf, j->ldt, 0.0f, NULL, NULL);
        else
            pvk_gemm_f32(NULL, j->rows, np, d->cin, j->w, j->rows, true, xt, j->xsz, false, buf, np, 1.0f, 0.0f);
        depth_to_space(j, buf, j->wp != NULL, n, p0, np);
    }
}

static void run_tiles(pvc_pool *pool, const pvk_convt_fast_desc *d, fast_job *j, int nbuf)
{
    j->xsz = d->in[0] * d->in[1] * d->in[2];
    j->rows = d->cout * d->k[0] * d->k[1] * d->k[2];
    j->ldt = j->rows + COLT_PAD;
    j->ysz = j->xsz * d->k[0] * d->k[1] * d->k[2];
    j->tiles = (j->xsz + d->tile - 1) / d->tile;
    /* one col buffer per thread: a pool larger than the buffers runs on this thread alone */
    if (pvc_pool_threads(pool) > nbuf) pool = NULL;
    pvc_parallel_for(pool, d->batch * j->tiles, 1, fast_tiles, j);
}

void pvk_convt_fast_f32(pvc_pool *pool, const pvk_convt_fast_desc *d, const float *x, const float *w,
                        const float *bias, const pvg_act *act, float *y, float *ws, int nbuf)
{
    fast_job j = { .d = d, .x = x, .w = w, .bias = bias, .act = act, .y = y, .ws = ws };
    run_tiles(pool, d, &j, nbuf);
}

/* ---- W packed once ----------------------------------------------------------------------------- */

void pvk_convt_pix2_ref(float *dst, const float *src, int64_t ld, int64_t nw, float bias, const pvg_act *act)
{
    row_out(dst, src, ld, true, 2, nw, bias, act);
}

pvk_convt_pix2_fn pvk_convt_pix2_select(const pvg_act *act)
{
#if defined(__x86_64__) || defined(_M_X64)
    if (pvc_isa_selected() >= PVC_ISA_AVX512 && !(act && act->kind == PVG_ACT_GELU)) return pvk_convt_pix2_avx512;
#endif
    (void)act;
    return NULL;
}

int64_t pvk_convt_fast_packed_ws_floats(const pvk_convt_fast_desc *d, int nbuf)
{
    return (int64_t)PVC_MAX(nbuf, 1) * (d->cout * d->k[0] * d->k[1] * d->k[2] + COLT_PAD) * d->tile;   /* colT per thread */
}

void pvk_convt_fast_packed(pvc_pool *pool, const pvk_convt_fast_desc *d, const float *x, const pvk_gemm_packed *wp,
                           const float *bias, const pvg_act *act, float *y, float *ws, int nbuf)
{
    fast_job j = { .d = d, .x = x, .wp = wp, .pix2 = pvk_convt_pix2_select(act), .bias = bias, .act = act, .y = y, .ws = ws };
    run_tiles(pool, d, &j, nbuf);
}
