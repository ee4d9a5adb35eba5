/* AVX2+FMA attention with 8 query rows across the lanes (the lane kernel of attention.h; the
 * scheme is x86/attention_avx512.c's, described there). Compiled with -mavx2 -mfma (this file
 * only); called only when pvc_isa_selected() is at least AVX2. With 16 ymm registers, Q^T is
 * read from L1 (one load per depth step, shared by the 12 keys of a group: 12 FMA chains) and
 * P V runs in chunks of up to 12 output columns (12 accumulators). */
#include "kernels/ref/attention.h"

#include <immintrin.h>

enum { W = 8, KTMAX = 144, NJ = 12 };   /* KTMAX: keys per block at most, a multiple of NJ */

/* 2^x for x <= 0 and NaN (see attention.h): x = k + r with |r| <= 1/2, k read from the bits of
 * the rounding sum x + 1.5 * 2^23 and put into the exponent, 2^r by the degree-7 polynomial.
 * Below PVK_ATTN_EXP2_MIN (and at -inf) the result is 0 by the final mask, which also discards
 * whatever the arithmetic made of such x; NaN stays NaN. */
static inline __attribute__((always_inline)) __m256 exp2_nonpos(__m256 x)
{
    const __m256 shift = _mm256_set1_ps(12582912.0f);
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(PVK_ATTN_EXP2_MIN), _CMP_NLT_UQ);   /* all ones for NaN */
    __m256 t = _mm256_add_ps(x, shift);
    __m256 r = _mm256_sub_ps(x, _mm256_sub_ps(t, shift));
    __m256 p = _mm256_fmadd_ps(r, _mm256_set1_ps(PVK_EXP2_C7), _mm256_set1_ps(PVK_EXP2_C6));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(PVK_EXP2_C5));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(PVK_EXP2_C4));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(PVK_EXP2_C3));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(PVK_EXP2_C2));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(PVK_EXP2_C1));
    p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127 - 0x4B400000)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}

void pvk_attn_exp2_avx2(const float *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, exp2_nonpos(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float buf[W] = { 0 };
        memcpy(buf, x + i, (size_t)(n - i) * sizeof *buf);
        _mm256_storeu_ps(buf, exp2_nonpos(_mm256_loadu_ps(buf)));
        memcpy(y + i, buf, (size_t)(n - i) * sizeof *buf);
    }
}

/* One tile's state (see the AVX-512 file). */
typedef struct tile {
    float  *qt;          /* [D][W]: scale * log2(e) * Q^T, zero lanes past nr */
    float  *ot;          /* [Dv][W]: unnormalized O^T */
    float  *mq;          /* [W]: log2(e) * the mask per row (PVK_ATTN_MASK_ROWS), else 0 */
    __m256  mrun, l;
    int64_t r0;
    int     nr;
} tile;

typedef struct score_args {
    const float *qt;
    const float *k;
    int64_t D, lk;
    pvk_attn_mask_kind mk;
    const float *mkeys;
    int64_t mcol;
    __m256 mrow;
} score_args;

/* ---- scores ---------------------------------------------------------------------------------- */

/* Scores of nj (compile-time) consecutive keys into s (rows W apart): nj chains of D FMAs on
 * broadcast K values; a full mask has already been transposed into s. */
static inline __attribute__((always_inline)) void
key_group(const int nj, const bool trans, const int dc, const score_args *a, const float *kp, const float *mkp,
          float *restrict s)
{
    const int64_t D = dc ? dc : a->D;
    __m256 acc[NJ];
#pragma GCC unroll 16
    for (int jj = 0; jj < nj; jj++)
        acc[jj] = a->mk == PVK_ATTN_MASK_FULL ? _mm256_load_ps(s + jj * W) : _mm256_setzero_ps();
    if (trans) {
#pragma GCC unroll 16
        for (int64_t t = 0; t < D; t++) {
            const float *row = kp + t * a->lk;
            __m256 qv = _mm256_load_ps(a->qt + t * W);
#pragma GCC unroll 16
            for (int jj = 0; jj < nj; jj++) acc[jj] = _mm256_fmadd_ps(qv, _mm256_broadcast_ss(row + jj), acc[jj]);
        }
    } else {
        const float *kr[NJ];
#pragma GCC unroll 16
        for (int jj = 0; jj < nj; jj++) kr[jj] = kp + jj * D;
#pragma GCC unroll 16
        for (int64_t t = 0; t < D; t++) {
            __m256 qv = _mm256_load_ps(a->qt + t * W);
#pragma GCC unroll 16
            for (int jj = 0; jj < nj; jj++) acc[jj] = _mm256_fmadd_ps(qv, _mm256_broadcast_ss(kr[jj] + t), acc[jj]);
        }
    }
#pragma GCC unroll 16
    for (int jj = 0; jj < nj; jj++) {
        if (a->mk == PVK_ATTN_MASK_KEYS)
            acc[jj] = _mm256_fmadd_ps(_mm256_broadcast_ss(mkp + jj * a->mcol), _mm256_set1_ps((float)PVK_LOG2E),
                                      acc[jj]);
        else if (a->mk == PVK_ATTN_MASK_ROWS) acc[jj] = _mm256_add_ps(acc[jj], a->mrow);
        _mm256_store_ps(s + jj * W, acc[jj]);
    }
}

static inline __attribute__((always_inline)) void
scores_t(const bool trans, const int dc, const score_args *a, int64_t nk, float *restrict s)
{
    int64_t kstep = trans ? 1 : (dc ? dc : a->D), j = 0;
    bool keys = a->mk == PVK_ATTN_MASK_KEYS;
    for (; j + NJ <= nk; j += NJ)
        key_group(NJ, trans, dc, a, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
    /* the rest in groups of 8, 4, 2, 1: one key alone is a chain of D dependent FMAs */
    if (nk - j >= 8) {
        key_group(8, trans, dc, a, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 8;
    }
    if (nk - j >= 4) {
        key_group(4, trans, dc, a, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 4;
    }
    if (nk - j >= 2) {
        key_group(2, trans, dc, a, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 2;
    }
    if (nk - j >= 1) key_group(1, trans, dc, a, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
}

static void scores_nat16(const score_args *a, int64_t nk, float *s) { scores_t(false, 16, a, nk, s); }
static void scores_tr16(const score_args *a, int64_t nk, float *s) { scores_t(true, 16, a, nk, s); }
static void scores_nat(const score_args *a, int64_t nk, float *s) { scores_t(false, 0, a, nk, s); }
static void scores_tr(const score_args *a, int64_t nk, float *s) { scores_t(true, 0, a, nk, s); }

/* A full mask's rows for the tile, transposed into s[j][i] times log2(e) (zero past nr). */
static void mask_full(const float *mr, int64_t m_row, int nr, int64_t nk, float *restrict s)
{
    for (int64_t j = 0; j < nk; j++)
        for (int i = 0; i < W; i++) s[j * W + i] = i < nr ? (float)(PVK_LOG2E * mr[i * m_row + j]) : 0.0f;
}

/* ---- softmax and P V --------------------------------------------------------------------------- */

/* The block's lane max (a pass of its own, see the AVX-512 file), the new running max, the
 * rescale factor for what came before (returned), and the block's weights in place. */
static __m256 softmax_block(tile *t, float *restrict s, int64_t nk)
{
    __m256 mx[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) mx[u] = t->mrun;
    int64_t j = 0;
    for (; j + 4 <= nk; j += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) mx[u] = _mm256_max_ps(_mm256_load_ps(s + (j + u) * W), mx[u]);   /* NaN: ignored */
    for (; j < nk; j++) mx[0] = _mm256_max_ps(_mm256_load_ps(s + j * W), mx[0]);
    __m256 mnew = _mm256_max_ps(_mm256_max_ps(mx[0], mx[1]), _mm256_max_ps(mx[2], mx[3]));
    __m256 none = _mm256_cmp_ps(mnew, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    __m256 msafe = _mm256_andnot_ps(none, mnew);
    __m256 corr = exp2_nonpos(_mm256_sub_ps(t->mrun, msafe));
    t->mrun = mnew;
    __m256 l0 = _mm256_setzero_ps(), l1 = _mm256_setzero_ps();
    for (j = 0; j + 2 <= nk; j += 2) {
        __m256 p0 = exp2_nonpos(_mm256_sub_ps(_mm256_load_ps(s + j * W), msafe));
        __m256 p1 = exp2_nonpos(_mm256_sub_ps(_mm256_load_ps(s + (j + 1) * W), msafe));
        _mm256_store_ps(s + j * W, p0);
        _mm256_store_ps(s + (j + 1) * W, p1);
        l0 = _mm256_add_ps(l0, p0);
        l1 = _mm256_add_ps(l1, p1);
    }
    if (j < nk) {
        __m256 p0 = exp2_nonpos(_mm256_sub_ps(_mm256_load_ps(s + j * W), msafe));
        _mm256_store_ps(s + j * W, p0);
        l0 = _mm256_add_ps(l0, p0);
    }
    t->l = _mm256_fmadd_ps(t->l, corr, _mm256_add_ps(l0, l1));
    return corr;
}

/* O^T[c .. c+w) = corr O^T + sum_j p_j V[j][c .. c+w) for w (<= 12) output columns, np
 * interleaved partial sums over the keys when w is small. */
static inline __attribute__((always_inline)) void
pv_chunk(const int w, const int np, const float *s, const float *vp, int64_t dv, int64_t nk, float *ot,
         __m256 corr, bool first)
{
    __m256 acc[12];
#pragma GCC unroll 12
    for (int e = 0; e < np * w; e++) acc[e] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + np <= nk; j += np) {
#pragma GCC unroll 8
        for (int pp = 0; pp < np; pp++) {
            __m256 p = _mm256_load_ps(s + (j + pp) * W);
            const float *vr = vp + (j + pp) * dv;
#pragma GCC unroll 12
            for (int e = 0; e < w; e++)
                acc[pp * w + e] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(vr + e), acc[pp * w + e]);
        }
    }
    for (; j < nk; j++) {
        __m256 p = _mm256_load_ps(s + j * W);
        const float *vr = vp + j * dv;
#pragma GCC unroll 12
        for (int e = 0; e < w; e++) acc[e] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(vr + e), acc[e]);
    }
#pragma GCC unroll 12
    for (int e = 0; e < w; e++) {
        __m256 a = acc[e];
#pragma GCC unroll 8
        for (int pp = 1; pp < np; pp++) a = _mm256_add_ps(a, acc[pp * w + e]);
        if (!first) a = _mm256_fmadd_ps(_mm256_load_ps(ot + e * W), corr, a);
        _mm256_store_ps(ot + e * W, a);
    }
}

static void pv_block(const float *s, const float *vb, int64_t dv, int64_t nk, float *ot, __m256 corr, bool first)
{
    int64_t c = 0;
    for (; c + 12 <= dv; c += 12) pv_chunk(12, 1, s, vb + c, dv, nk, ot + c * W, corr, first);
    int64_t rest = dv - c;
    if (rest & 8) { pv_chunk(8, 1, s, vb + c, dv, nk, ot + c * W, corr, first); c += 8; }
    if (rest & 4) { pv_chunk(4, 2, s, vb + c, dv, nk, ot + c * W, corr, first); c += 4; }
    if (rest & 2) { pv_chunk(2, 4, s, vb + c, dv, nk, ot + c * W, corr, first); c += 2; }
    if (rest & 1) pv_chunk(1, 8, s, vb + c, dv, nk, ot + c * W, corr, first);
}

/* ---- work item --------------------------------------------------------------------------------- */

static void pvk_f32_attn_8xN__avx2(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                                   const float *m, float *y, int64_t b, int64_t tile0, int64_t ntiles)
{
    _Alignas(32) float state[PVK_ATTN_LANE_STATE_FLOATS];
    _Alignas(32) float s[KTMAX * W];
    tile tl[PVK_ATTN_LANE_GMAX];
    const int64_t D = d->D, Dv = d->Dv, per = PVK_ATTN_LANE_TILE_FLOATS(d, W);
    int64_t off[4];
    pvk_attn_batch_offsets(d, b, off);
    const float *qb = q + off[0], *kb = k + off[1], *vb = v + off[2];
    const float *mb = d->has_mask ? m + off[3] : NULL;
    pvk_attn_mask_kind mk = pvk_attn_mask_kind_of(d);
    const double qscale = (double)d->scale * PVK_LOG2E;
    void (*scores)(const score_args *, int64_t, float *) =
        D == 16 ? (d->k_transposed ? scores_tr16 : scores_nat16) : (d->k_transposed ? scores_tr : scores_nat);

    for (int64_t g = 0; g < ntiles; g++) {
        tile *t = &tl[g];
        t->qt = state + g * per;
        t->ot = t->qt + D * W;
        t->mq = t->ot + Dv * W;
        t->r0 = (tile0 + g) * W;
        t->nr = (int)PVC_MIN(W, d->Lq - t->r0);
        for (int64_t c = 0; c < D; c++)
            for (int i = 0; i < W; i++)
                t->qt[c * W + i] = i < t->nr ? (float)(qscale * qb[(t->r0 + i) * D + c]) : 0.0f;
        for (int i = 0; i < W; i++)
            t->mq[i] = mk == PVK_ATTN_MASK_ROWS && i < t->nr ? (float)(PVK_LOG2E * mb[(t->r0 + i) * d->m_row]) : 0.0f;
        t->mrun = _mm256_set1_ps(-INFINITY);
        t->l = _mm256_setzero_ps();
    }
    const int64_t kt = pvk_attn_lane_block(d, NJ, KTMAX);
    for (int64_t k0 = 0; k0 < d->Lk; k0 += kt) {
        int64_t nk = PVC_MIN(kt, d->Lk - k0);
        for (int64_t g = 0; g < ntiles; g++) {
            tile *t = &tl[g];
            score_args a = { t->qt, D == 0 ? kb : d->k_transposed ? kb + k0 : kb + k0 * D, D, d->Lk, mk,
                             mk == PVK_ATTN_MASK_KEYS ? mb + k0 * d->m_col : NULL, d->m_col,
                             _mm256_load_ps(t->mq) };
            if (mk == PVK_ATTN_MASK_FULL) mask_full(mb + t->r0 * d->m_row + k0, d->m_row, t->nr, nk, s);
            scores(&a, nk, s);
            __m256 corr = softmax_block(t, s, nk);
            pv_block(s, vb + k0 * Dv, Dv, nk, t->ot, corr, k0 == 0);
        }
    }
    for (int64_t g = 0; g < ntiles; g++) {
        tile *t = &tl[g];
        for (int64_t e = 0; e < Dv; e++)
            _mm256_store_ps(t->ot + e * W, _mm256_div_ps(_mm256_load_ps(t->ot + e * W), t->l));
        float *yr = y + (b * d->Lq + t->r0) * Dv;
        for (int i = 0; i < t->nr; i++)
            for (int64_t e = 0; e < Dv; e++) yr[i * Dv + e] = t->ot[e * W + i];
    }
}

void pvk_attention_f32_avx2(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                            const float *v, const float *m, float *y)
{
    int64_t group = pvk_attn_lane_group(d, W, pvc_pool_threads(pool));
    if (group == 0) {
        pvk_attention_f32_blocked(pool, d, q, k, v, m, y);
        return;
    }
    pvk_attn_lanes_run(pool, d, q, k, v, m, y, W, group, pvk_f32_attn_8xN__avx2);
}
