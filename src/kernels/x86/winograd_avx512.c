/* The AVX-512 block of the Winograd F(4x4, 3x3) convolution (kernels/winograd.h). One zmm is the
 * 16 channels of a pixel in nChw16c, so both transforms are plain vector arithmetic with no
 * shuffles. Per block of nt tiles, in the thread's buffer:
 *   V [36][nt][cin]   input transform, each (position, tile) row channel-contiguous;
 *   M [36][nt][cout]  36 GEMMs V[p] x U[p]: a 6-tile x 64-channel micro-kernel (24 zmm sums,
 *                     the tiles' values broadcast, the packed weight panel [cin][64] loaded);
 *   Y                 output transform of M with bias and activation, stored into the tiles'
 *                     pixels that lie inside the output.
 * Compiled with the AVX-512 flags (this file only); called only when pvc_isa_selected() >= AVX512. */
#include "kernels/winograd.h"

#include <immintrin.h>

enum { MR = 6, PANEL = 64 };
enum { PF_TILES = 2 };   /* input prefetch distance, in tiles along the row */

/* ---- input transform: 6x6 pixels of one channel block -> 36 vectors V[p] ----------------------- */

/* t[0..5] = B^T d[0..5] (one column of the patch, or one row of t B), B^T as in ref/winograd.c:
 * the rows of +-a and of +-b share their even and odd parts */
static inline __attribute__((always_inline)) void bt6(const __m512 d[6], __m512 t[6])
{
    const float a = (float)PVK_WINO_A, b = (float)PVK_WINO_B;
    const __m512 aabb = _mm512_set1_ps(a * a * b * b), sq = _mm512_set1_ps(a * a + b * b);
    const __m512 aa = _mm512_set1_ps(a * a), bb = _mm512_set1_ps(b * b), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
    const __m512 abb = _mm512_set1_ps(a * b * b), baa = _mm512_set1_ps(b * a * a);
    __m512 e1 = _mm512_fnmadd_ps(bb, d[2], d[4]);                      /* d4 - b^2 d2 */
    __m512 o1 = _mm512_fmsub_ps(va, d[3], _mm512_mul_ps(abb, d[1]));    /* a d3 - a b^2 d1 */
    __m512 e2 = _mm512_fnmadd_ps(aa, d[2], d[4]);                      /* d4 - a^2 d2 */
    __m512 o2 = _mm512_fmsub_ps(vb, d[3], _mm512_mul_ps(baa, d[1]));    /* b d3 - b a^2 d1 */
    t[0] = _mm512_fmadd_ps(aabb, d[0], _mm512_fnmadd_ps(sq, d[2], d[4]));
    t[1] = _mm512_add_ps(e1, o1);
    t[2] = _mm512_sub_ps(e1, o1);
    t[3] = _mm512_add_ps(e2, o2);
    t[4] = _mm512_sub_ps(e2, o2);
    t[5] = _mm512_fmadd_ps(aabb, d[1], _mm512_fnmadd_ps(sq, d[3], d[5]));
}

/* Tile (y0, x0) = its patch's top-left input pixel (may be outside: zeros) of the channel block
 * at xb ([ih][iw][16]); writes V[p * vs] for the 36 positions. */
static void in_tile(const float *xb, int64_t ih, int64_t iw, int64_t y0, int64_t x0, float *v, int64_t vs)
{
    __m512 t[6][6];   /* t[i][j] = (B^T d)[i][j] */
    bool inside = y0 >= 0 && x0 >= 0 && y0 + 6 <= ih && x0 + 6 <= iw;
    /* the pixels the tile PF_TILES to the right adds (the hardware prefetchers do not follow
     * six rows read a few pixels at a time): loads here were 70 % of the transform's time */
    const float *pf = xb + (y0 * iw + x0 + 6 + 4 * (PF_TILES - 1)) * 16;
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) _mm_prefetch((const char *)(pf + (i * iw + q) * 16), _MM_HINT_T0);
    for (int j = 0; j < 6; j++) {
        __m512 d[6], r[6];
        int64_t xx = x0 + j;
        if (inside) {
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) d[i] = _mm512_loadu_ps(xb + ((y0 + i) * iw + xx) * 16);
        } else {
            for (int i = 0; i < 6; i++) {
                int64_t yy = y0 + i;
                d[i] = yy >= 0 && yy < ih && xx >= 0 && xx < iw ? _mm512_loadu_ps(xb + (yy * iw + xx) * 16) : _mm512_setzero_ps();
            }
        }
        bt6(d, r);
        for (int i = 0; i < 6; i++) t[i][j] = r[i];
    }
    for (int i = 0; i < 6; i++) {
        __m512 r[6];
        bt6(t[i], r);
        for (int j = 0; j < 6; j++) _mm512_storeu_ps(v + (i * 6 + j) * vs, r[j]);
    }
}

/* ---- the GEMM: M[p] rows [tiles], V[p] [tiles][cin] x U[p] [cin][cout] ---------------------------- */

static inline __attribute__((always_inline)) void
micro(const int R, const int NV, int64_t C, const float *restrict v, int64_t ldv, const float *restrict u,
      float *restrict m, int64_t ldm)
{
    __m512 acc[MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[r][j] = _mm512_setzero_ps();
    for (int64_t c = 0; c < C; c++) {
        __m512 b[4];
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) b[j] = _mm512_loadu_ps(u + c * 16 * NV + 16 * j);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m512 a = _mm512_set1_ps(v[r * ldv + c]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) _mm512_storeu_ps(m + r * ldm + 16 * j, acc[r][j]);
}

typedef void (*micro_fn)(int64_t C, const float *v, int64_t ldv, const float *u, float *m, int64_t ldm);

#define MICRO(R, NV) \
    static void micro_##R##_##NV(int64_t C, const float *v, int64_t ldv, const float *u, float *m, int64_t ldm) \
    { micro(R, NV, C, v, ldv, u, m, ldm); }
#define MICRO_ROW(NV) MICRO(1, NV) MICRO(2, NV) MICRO(3, NV) MICRO(4, NV) MICRO(5, NV) MICRO(6, NV)
MICRO_ROW(1) MICRO_ROW(2) MICRO_ROW(3) MICRO_ROW(4)
#undef MICRO_ROW
#undef MICRO

static const micro_fn micros[MR][4] = {
    { micro_1_1, micro_1_2, micro_1_3, micro_1_4 }, { micro_2_1, micro_2_2, micro_2_3, micro_2_4 },
    { micro_3_1, micro_3_2, micro_3_3, micro_3_4 }, { micro_4_1, micro_4_2, micro_4_3, micro_4_4 },
    { micro_5_1, micro_5_2, micro_5_3, micro_5_4 }, { micro_6_1, micro_6_2, micro_6_3, micro_6_4 },
};

/* ---- output transform: 36 vectors M[p] of one tile and channel block -> 4x4 pixels -------------- */

/* s[0..3] = A^T m[0..5]: row i is [1, a^i, (-a)^i, b^i, (-b)^i, (i == 3)] */
static inline __attribute__((always_inline)) void at6(const __m512 m[6], __m512 s[4])
{
    const float a = (float)PVK_WINO_A, b = (float)PVK_WINO_B;
    __m512 p1 = _mm512_add_ps(m[1], m[2]), q1 = _mm512_sub_ps(m[1], m[2]);
    __m512 p2 = _mm512_add_ps(m[3], m[4]), q2 = _mm512_sub_ps(m[3], m[4]);
    s[0] = _mm512_add_ps(_mm512_add_ps(m[0], p1), p2);
    s[1] = _mm512_fmadd_ps(_mm512_set1_ps(b), q2, _mm512_mul_ps(_mm512_set1_ps(a), q1));
    s[2] = _mm512_fmadd_ps(_mm512_set1_ps(b * b), p2, _mm512_mul_ps(_mm512_set1_ps(a * a), p1));
    s[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(b * b * b), q2, _mm512_mul_ps(_mm512_set1_ps(a * a * a), q1)), m[5]);
}

static inline __attribute__((always_inline)) __m512 act(const pvg_act *a, __m512 x)
{
    switch (a->kind) {
    case PVG_ACT_RELU: return _mm512_max_ps(x, _mm512_setzero_ps());
    case PVG_ACT_LEAKY_RELU: {
        __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(x, neg, x, _mm512_set1_ps(a->alpha));
    }
    case PVG_ACT_CLIP:
        /* x < lo ? lo : (x > hi ? hi : x), NaN passing through as pvk_act_apply does */
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(a->alpha), _CMP_LT_OQ),
                                    _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(a->beta), _CMP_GT_OQ), x,
                                                         _mm512_set1_ps(a->beta)),
                                    _mm512_set1_ps(a->alpha));
    case PVG_ACT_NONE:
    case PVG_ACT_GELU: break;
    }
    return x;
}

/* m: M[0] of this tile and channel block, position stride ms, m + mnext: the next tile's; yb: Y's channel block [oh][ow][16] */
static void out_tile(const float *m, int64_t ms, int64_t mnext, __m512 bias, const pvg_act *a, float *yb, int64_t oh, int64_t ow,
                     int64_t y0, int64_t x0)
{
    __m512 t[4][6];
    /* the next tile's 36 vectors (36 lines of the L2-sized M: their loads were the stall) */
#pragma GCC unroll 36
    for (int p = 0; p < 36; p++) _mm_prefetch((const char *)(m + mnext + p * ms), _MM_HINT_T0);
    for (int j = 0; j < 6; j++) {
        __m512 c[6], s[4];
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) c[i] = _mm512_loadu_ps(m + (i * 6 + j) * ms);
        at6(c, s);
        for (int i = 0; i < 4; i++) t[i][j] = s[i];
    }
    for (int i = 0; i < 4; i++) {
        if (y0 + i >= oh) break;
        __m512 s[4];
        at6(t[i], s);
        for (int j = 0; j < 4; j++) {
            if (x0 + j >= ow) break;
            _mm512_storeu_ps(yb + ((y0 + i) * ow + x0 + j) * 16, act(a, _mm512_add_ps(s[j], bias)));
        }
    }
}

void pvk_wino_block_avx512(const pvk_wino *k, const float *x, const float *bias, float *y, float *buf, int64_t t0,
                           int64_t nt)
{
    const pvk_wino_desc *d = &k->d;
    /* channels as the blocked layout holds them (padded to 16; U is zero there) */
    const int64_t C = k->cp, K = k->kp, CB = C / 16, KB = K / 16, per_img = k->th * k->tw;
    /* position strides, one cache line more than the rows they hold: a multiple of 4 KiB would put
     * all 36 positions of a tile in one L1 set */
    const int64_t vs = nt * C + 16, ms = nt * K + 16;
    float *V = buf, *M = buf + 36 * (k->block * C + 16);

    /* channel block outer: consecutive tiles read neighbouring pixels of one plane (the
     * prefetchers follow), where tile outer jumps between the channel planes */
    for (int64_t cb = 0; cb < CB; cb++)
        for (int64_t t = 0; t < nt; t++) {
            int64_t g = t0 + t, n = g / per_img, r = g % per_img, ty = r / k->tw, tx = r % k->tw;
            in_tile(x + (n * CB + cb) * d->ih * d->iw * 16, d->ih, d->iw, ty * 4 - d->pad_t, tx * 4 - d->pad_l,
                    V + t * C + cb * 16, vs);
        }

    for (int p = 0; p < 36; p++) {
        const float *up = k->u + (int64_t)p * C * K, *vp = V + p * vs;
        float *mp = M + p * ms;
        for (int64_t j = 0; j < K; j += PANEL) {
            int nv = (int)(PVC_MIN(PANEL, K - j) / 16);
            const float *panel = up + j * C;
            for (int64_t t = 0; t < nt; t += MR) {
                int rows = (int)PVC_MIN(MR, nt - t);
                micros[rows - 1][nv - 1](C, vp + t * C, C, panel, mp + t * K + j, K);
            }
        }
    }

    for (int64_t kb = 0; kb < KB; kb++) {
        /* bias has cout floats: the padded channels get 0 (and act(0) = 0, pvk_wino_supported) */
        int64_t nlive = d->cout - kb * 16;
        __mmask16 live = nlive >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nlive) - 1);
        __m512 b = bias ? _mm512_maskz_loadu_ps(live, bias + kb * 16) : _mm512_setzero_ps();
        for (int64_t t = 0; t < nt; t++) {
            int64_t g = t0 + t, n = g / per_img, r = g % per_img, ty = r / k->tw, tx = r % k->tw;
            out_tile(M + t * K + kb * 16, ms, t + 1 < nt ? K : 0, b, &d->act, y + (n * KB + kb) * d->oh * d->ow * 16, d->oh, d->ow, ty * 4,
                     tx * 4);
        }
    }
}
