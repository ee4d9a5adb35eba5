/* AVX-512F attention with 16 query rows across the lanes (the lane kernel of attention.h).
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma (this file only); called only
 * when pvc_isa_selected() reports AVX-512.
 *
 * Why queries in lanes: BEVFusion's heads have depth 16, where a GEMM per score block spends
 * its time packing. Here a tile keeps Q^T (D vectors, pre-scaled) and O^T (Dv vectors); for
 * each key j the score vector s_j = sum_t Q^T[t] * K[j][t] takes the K values as broadcast
 * memory operands of the FMAs (K's natural [Lk, D] layout and the transposed [D, Lk] one alike),
 * and P V is O^T[e] += p_j * V[j][e], V broadcast the same way. The softmax statistics are
 * per lane, so the running max, the exp and the row sums are plain vertical vector code.
 *
 * Per work item (up to PVK_ATTN_LANE_GMAX tiles of one batch entry), per block of keys (pvk_attn_lane_block), per
 * tile, in base 2 (scores times log2(e), see attention.h):
 *   s[j] = Q^T . K_j (+ mask)  for the block, stored in L1 (keys x 16)
 *   m' = max(m, lane max of s); c = 2^(m - m'); p_j = 2^(s_j - m'); l = c l + sum p_j
 *   O^T = c O^T + sum_j p_j V_j  in register chunks of up to 16 output columns
 * then Y = (O^T / l)^T. A row whose scores are all -inf keeps m' = -inf; it is taken as 0 in the
 * exponents so that row gets p = 0, l = 0 and Y = 0/0 = NaN, as the reference's Softmax does. */
#include "kernels/ref/attention.h"

#include <immintrin.h>

enum { W = 16, KTMAX = 144, NJ = 12 };   /* KTMAX: keys per block at most, a multiple of NJ */

/* 2^x for x <= 0 and NaN. x = k + r with |r| <= 1/2 (vreduceps gives r = x - round(x)),
 * 2^r = e^(r ln2) by its degree-7 Taylor polynomial (truncation < 6e-9 relative), 2^k applied
 * by scalef. Below PVK_ATTN_EXP2_MIN (and at -inf) the result is 0 by the zeroing mask, which
 * also discards whatever the arithmetic made of such x (never a denormal, which would cost
 * microcode assists in P V); NaN stays NaN. */
static inline __attribute__((always_inline)) __m512 exp2_nonpos(__m512 x)
{
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(PVK_ATTN_EXP2_MIN), _CMP_NLT_UQ);   /* true for NaN */
    __m512 r = _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 kf = _mm512_sub_ps(x, r);
    __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(PVK_EXP2_C7), _mm512_set1_ps(PVK_EXP2_C6));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(PVK_EXP2_C5));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(PVK_EXP2_C4));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(PVK_EXP2_C3));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(PVK_EXP2_C2));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(PVK_EXP2_C1));
    p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, kf);
}

static __mmask16 first_lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

void pvk_attn_exp2_avx512(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i += W) {
        __mmask16 m = first_lanes(n - i);
        _mm512_mask_storeu_ps(y + i, m, exp2_nonpos(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* One tile's state; the arrays live in the item's stack scratch. */
typedef struct tile {
    float  *qt;          /* [D][W]: scale * log2(e) * Q^T, zero lanes past nr */
    float  *ot;          /* [Dv][W]: unnormalized O^T (valid once the first block is done) */
    float  *mq;          /* [W]: log2(e) * the mask per row (PVK_ATTN_MASK_ROWS), else 0 */
    __m512  mrun, l;     /* running max and sum per row */
    int64_t r0;          /* first query row */
    int     nr;          /* rows in use */
} tile;

/* What the score pass reads for one tile and key block. */
typedef struct score_args {
    const float *qt;
    const float *k;        /* K at the block's first key */
    int64_t D, lk;         /* depth; K's row length when transposed */
    pvk_attn_mask_kind mk;
    const float *mkeys;    /* PVK_ATTN_MASK_KEYS: mask at the block's first key, m_col apart */
    int64_t mcol;
    __m512 mrow;           /* PVK_ATTN_MASK_ROWS: the tile's per-row mask, times log2(e) */
} score_args;

/* ---- scores ---------------------------------------------------------------------------------- */

/* Scores of nj (compile-time) consecutive keys into s (rows W apart): nj independent chains of
 * D FMAs, each FMA taking its K value as a broadcast memory operand. With dc = 16 the caller
 * holds Q^T in registers (qr); dc = 0 reads it from L1 for any depth. A full mask has already
 * been transposed into s, so the sums start from it. */
static inline __attribute__((always_inline)) void
key_group(const int nj, const bool trans, const int dc, const score_args *a, const __m512 *qr,
          const float *kp, const float *mkp, float *restrict s)
{
    const int64_t D = dc ? dc : a->D;
    __m512 acc[NJ];
#pragma GCC unroll 16
    for (int jj = 0; jj < nj; jj++)
        acc[jj] = a->mk == PVK_ATTN_MASK_FULL ? _mm512_load_ps(s + jj * W) : _mm512_setzero_ps();
    if (trans) {                 /* K^T: key jj of depth t at kp[t * lk + jj] */
#pragma GCC unroll 16
        for (int64_t t = 0; t < D; t++) {
            const float *row = kp + t * a->lk;
            __m512 qv = dc ? qr[t] : _mm512_load_ps(a->qt + t * W);
#pragma GCC unroll 16
            for (int jj = 0; jj < nj; jj++) acc[jj] = _mm512_fmadd_ps(qv, _mm512_set1_ps(row[jj]), acc[jj]);
        }
    } else {                     /* K: key jj of depth t at kp[jj * D + t] */
        const float *kr[NJ];
#pragma GCC unroll 16
        for (int jj = 0; jj < nj; jj++) kr[jj] = kp + jj * D;
#pragma GCC unroll 16
        for (int64_t t = 0; t < D; t++) {
            __m512 qv = dc ? qr[t] : _mm512_load_ps(a->qt + t * W);
#pragma GCC unroll 16
            for (int jj = 0; jj < nj; jj++) acc[jj] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[jj][t]), acc[jj]);
        }
    }
#pragma GCC unroll 16
    for (int jj = 0; jj < nj; jj++) {
        if (a->mk == PVK_ATTN_MASK_KEYS)
            acc[jj] = _mm512_fmadd_ps(_mm512_set1_ps(mkp[jj * a->mcol]), _mm512_set1_ps((float)PVK_LOG2E), acc[jj]);
        else if (a->mk == PVK_ATTN_MASK_ROWS) acc[jj] = _mm512_add_ps(acc[jj], a->mrow);
        _mm512_store_ps(s + jj * W, acc[jj]);
    }
}

static inline __attribute__((always_inline)) void
scores_t(const bool trans, const int dc, const score_args *a, int64_t nk, float *restrict s)
{
    __m512 qr[16];
    if (dc) {
#pragma GCC unroll 16
        for (int t = 0; t < 16; t++) qr[t] = _mm512_load_ps(a->qt + t * W);
    }
    int64_t kstep = trans ? 1 : (dc ? dc : a->D), j = 0;
    bool keys = a->mk == PVK_ATTN_MASK_KEYS;
    for (; j + NJ <= nk; j += NJ)
        key_group(NJ, trans, dc, a, qr, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
    /* the rest in groups of 8, 4, 2, 1: one key alone is a chain of D dependent FMAs */
    if (nk - j >= 8) {
        key_group(8, trans, dc, a, qr, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 8;
    }
    if (nk - j >= 4) {
        key_group(4, trans, dc, a, qr, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 4;
    }
    if (nk - j >= 2) {
        key_group(2, trans, dc, a, qr, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
        j += 2;
    }
    if (nk - j >= 1)
        key_group(1, trans, dc, a, qr, a->k + j * kstep, keys ? a->mkeys + j * a->mcol : NULL, s + j * W);
}

static void scores_nat16(const score_args *a, int64_t nk, float *s) { scores_t(false, 16, a, nk, s); }
static void scores_tr16(const score_args *a, int64_t nk, float *s) { scores_t(true, 16, a, nk, s); }
static void scores_nat(const score_args *a, int64_t nk, float *s) { scores_t(false, 0, a, nk, s); }
static void scores_tr(const score_args *a, int64_t nk, float *s) { scores_t(true, 0, a, nk, s); }

/* ---- full masks ------------------------------------------------------------------------------ */

/* Transposes the mask rows of a tile (nr rows m_row apart, nk keys from mr) into s[j][i], times
 * log2(e) and zero for lanes past nr, 16 keys at a time: a 16 x 16 transpose in 4 butterfly
 * stages, stage h swapping the off-diagonal h x h blocks of row pairs (i, i + h). */
static void mask_full(const float *mr, int64_t m_row, int nr, int64_t nk, float *restrict s)
{
    __m512i lo[4], hi[4];
    for (int st = 0; st < 4; st++) {
        int h = 8 >> st;
        _Alignas(64) int32_t il[16], ih[16];
        for (int l = 0; l < 16; l++) {
            il[l] = (l & h) ? 16 + l - h : l;
            ih[l] = (l & h) ? 16 + l : l + h;
        }
        lo[st] = _mm512_load_si512(il);
        hi[st] = _mm512_load_si512(ih);
    }
    for (int64_t j = 0; j < nk; j += 16) {
        __mmask16 km = first_lanes(nk - j);
        __m512 r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < nr ? _mm512_maskz_loadu_ps(km, mr + i * m_row + j) : _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int st = 0; st < 4; st++) {
            int h = 8 >> st;
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                if (i & h) continue;
                __m512 a = r[i], b = r[i + h];
                r[i] = _mm512_permutex2var_ps(a, lo[st], b);
                r[i + h] = _mm512_permutex2var_ps(a, hi[st], b);
            }
        }
        int64_t n = PVC_MIN(16, nk - j);
        for (int64_t t = 0; t < n; t++)
            _mm512_store_ps(s + (j + t) * W, _mm512_mul_ps(r[t], _mm512_set1_ps((float)PVK_LOG2E)));
    }
}

/* ---- softmax and P V --------------------------------------------------------------------------- */

/* The block's lane max, the new running max, the rescale factor for what came before, and the
 * block's weights in place; returns the factor. (The max is a pass of its own: taken in the
 * score pass it costs more, as it waits for each key's FMA chain.) */
static __m512 softmax_block(tile *t, float *restrict s, int64_t nk)
{
    __m512 mx[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) mx[u] = t->mrun;
    int64_t j = 0;
    for (; j + 4 <= nk; j += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) mx[u] = _mm512_max_ps(_mm512_load_ps(s + (j + u) * W), mx[u]);   /* NaN: ignored */
    for (; j < nk; j++) mx[0] = _mm512_max_ps(_mm512_load_ps(s + j * W), mx[0]);
    __m512 mnew = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
    __mmask16 none = _mm512_cmp_ps_mask(mnew, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
    __m512 msafe = _mm512_mask_mov_ps(mnew, none, _mm512_setzero_ps());
    __m512 corr = exp2_nonpos(_mm512_sub_ps(t->mrun, msafe));
    t->mrun = mnew;
    __m512 l0 = _mm512_setzero_ps(), l1 = _mm512_setzero_ps();
    for (j = 0; j + 2 <= nk; j += 2) {
        __m512 p0 = exp2_nonpos(_mm512_sub_ps(_mm512_load_ps(s + j * W), msafe));
        __m512 p1 = exp2_nonpos(_mm512_sub_ps(_mm512_load_ps(s + (j + 1) * W), msafe));
        _mm512_store_ps(s + j * W, p0);
        _mm512_store_ps(s + (j + 1) * W, p1);
        l0 = _mm512_add_ps(l0, p0);
        l1 = _mm512_add_ps(l1, p1);
    }
    if (j < nk) {
        __m512 p0 = exp2_nonpos(_mm512_sub_ps(_mm512_load_ps(s + j * W), msafe));
        _mm512_store_ps(s + j * W, p0);
        l0 = _mm512_add_ps(l0, p0);
    }
    t->l = _mm512_fmadd_ps(t->l, corr, _mm512_add_ps(l0, l1));
    return corr;
}

/* O^T[c .. c+w) = corr O^T + sum_j p_j V[j][c .. c+w) for w (<= 16) output columns; np
 * interleaved partial sums over the keys keep >= 8 FMA chains in flight when w is small. The
 * block's sum starts from zero and meets O^T at the end: 32400 keys then round like 225 block
 * sums of 144 terms (10x closer to the reference than one running sum, at no cost). */
static inline __attribute__((always_inline)) void
pv_chunk(const int w, const int np, const float *s, const float *vp, int64_t dv, int64_t nk, float *ot,
         __m512 corr, bool first)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int e = 0; e < np * w; e++) acc[e] = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + np <= nk; j += np) {
#pragma GCC unroll 8
        for (int pp = 0; pp < np; pp++) {
            __m512 p = _mm512_load_ps(s + (j + pp) * W);
            const float *vr = vp + (j + pp) * dv;
#pragma GCC unroll 16
            for (int e = 0; e < w; e++) acc[pp * w + e] = _mm512_fmadd_ps(p, _mm512_set1_ps(vr[e]), acc[pp * w + e]);
        }
    }
    for (; j < nk; j++) {
        __m512 p = _mm512_load_ps(s + j * W);
        const float *vr = vp + j * dv;
#pragma GCC unroll 16
        for (int e = 0; e < w; e++) acc[e] = _mm512_fmadd_ps(p, _mm512_set1_ps(vr[e]), acc[e]);
    }
#pragma GCC unroll 16
    for (int e = 0; e < w; e++) {
        __m512 a = acc[e];
#pragma GCC unroll 8
        for (int pp = 1; pp < np; pp++) a = _mm512_add_ps(a, acc[pp * w + e]);
        if (!first) a = _mm512_fmadd_ps(_mm512_load_ps(ot + e * W), corr, a);
        _mm512_store_ps(ot + e * W, a);
    }
}

static void pv_block(const float *s, const float *vb, int64_t dv, int64_t nk, float *ot, __m512 corr, bool first)
{
    int64_t c = 0;
    for (; c + 16 <= dv; c += 16) pv_chunk(16, 1, s, vb + c, dv, nk, ot + c * W, corr, first);
    int64_t rest = dv - c;
    if (rest & 8) { pv_chunk(8, 1, s, vb + c, dv, nk, ot + c * W, corr, first); c += 8; }
    if (rest & 4) { pv_chunk(4, 2, s, vb + c, dv, nk, ot + c * W, corr, first); c += 4; }
    if (rest & 2) { pv_chunk(2, 4, s, vb + c, dv, nk, ot + c * W, corr, first); c += 2; }
    if (rest & 1) pv_chunk(1, 8, s, vb + c, dv, nk, ot + c * W, corr, first);
}

/* ---- work item --------------------------------------------------------------------------------- */

static void pvk_f32_attn_16xN__avx512(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                                      const float *m, float *y, int64_t b, int64_t tile0, int64_t ntiles)
{
    _Alignas(64) float state[PVK_ATTN_LANE_STATE_FLOATS];
    _Alignas(64) float s[KTMAX * W];
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
        t->mrun = _mm512_set1_ps(-INFINITY);
        t->l = _mm512_setzero_ps();
    }
    const int64_t kt = pvk_attn_lane_block(d, NJ, KTMAX);
    for (int64_t k0 = 0; k0 < d->Lk; k0 += kt) {
        int64_t nk = PVC_MIN(kt, d->Lk - k0);
        for (int64_t g = 0; g < ntiles; g++) {
            tile *t = &tl[g];
            score_args a = { t->qt, D == 0 ? kb : d->k_transposed ? kb + k0 : kb + k0 * D, D, d->Lk, mk,
                             mk == PVK_ATTN_MASK_KEYS ? mb + k0 * d->m_col : NULL, d->m_col,
                             _mm512_load_ps(t->mq) };
            if (mk == PVK_ATTN_MASK_FULL) mask_full(mb + t->r0 * d->m_row + k0, d->m_row, t->nr, nk, s);
            scores(&a, nk, s);
            __m512 corr = softmax_block(t, s, nk);
            pv_block(s, vb + k0 * Dv, Dv, nk, t->ot, corr, k0 == 0);
        }
    }
    for (int64_t g = 0; g < ntiles; g++) {
        tile *t = &tl[g];
        for (int64_t e = 0; e < Dv; e++)
            _mm512_store_ps(t->ot + e * W, _mm512_div_ps(_mm512_load_ps(t->ot + e * W), t->l));
        float *yr = y + (b * d->Lq + t->r0) * Dv;
        for (int i = 0; i < t->nr; i++)
            for (int64_t e = 0; e < Dv; e++) yr[i * Dv + e] = t->ot[e * W + i];
    }
}

void pvk_attention_f32_avx512(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                              const float *v, const float *m, float *y)
{
    int64_t group = pvk_attn_lane_group(d, W, pvc_pool_threads(pool));
    if (group == 0) {
        pvk_attention_f32_blocked(pool, d, q, k, v, m, y);
        return;
    }
    pvk_attn_lanes_run(pool, d, q, k, v, m, y, W, group, pvk_f32_attn_16xN__avx512);
}
