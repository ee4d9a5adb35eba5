/* Attention kernels (see attention.h): the blocked kernel, the reference, the lane kernels'
 * shared driver (work split, key blocks), and the variant table with the per-shape choice.
 *
 * Blocked kernel, per work item (one batch entry, one block of up to PVK_ATTN_BQ query rows):
 *   for each block of PVK_ATTN_BK keys:
 *     S = scale * Qblk Kblk^T (+ mask)                          (pvk_gemm_f32, on the stack)
 *     per row: m' = max(m, max S), c = exp(m - m'), S = exp(S - m'), l = l * c + sum S
 *     Y = c * Y + S Vblk                                        (pvk_gemm_f32, beta 1)
 *   Y /= l
 * Y itself is the accumulator (its rows belong to this item only), so the scratch is one score
 * block whatever Dv is. Rows are independent and the key blocking is fixed, so the result does
 * not depend on the query blocking or the thread count. */
#include "kernels/ref/attention.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

bool pvk_attn_desc_init(pvk_attn_desc *d, const pvc_tensor *q, const pvc_tensor *k, const pvc_tensor *v,
                        const pvc_tensor *mask, bool k_transposed, float scale, char *why, size_t nwhy)
{
    memset(d, 0, sizeof *d);
    if (mask && mask->rank < 0) mask = NULL;
    if (q->rank < 2 || k->rank < 2 || v->rank < 2) {
        snprintf(why, nwhy, "Q, K and V need rank >= 2 (got %d, %d, %d)", q->rank, k->rank, v->rank);
        return false;
    }
    d->Lq = q->dims[q->rank - 2];
    d->D = q->dims[q->rank - 1];
    int64_t kd = k_transposed ? k->dims[k->rank - 2] : k->dims[k->rank - 1];
    d->Lk = k_transposed ? k->dims[k->rank - 1] : k->dims[k->rank - 2];
    if (kd != d->D) {
        snprintf(why, nwhy, "Q has depth %lld but K%s has %lld", (long long)d->D, k_transposed ? " (transposed)" : "",
                 (long long)kd);
        return false;
    }
    if (v->dims[v->rank - 2] != d->Lk) {
        snprintf(why, nwhy, "V has %lld rows but there are %lld keys", (long long)v->dims[v->rank - 2], (long long)d->Lk);
        return false;
    }
    d->Dv = v->dims[v->rank - 1];
    d->k_transposed = k_transposed;
    d->scale = scale;
    int64_t mcols = 1, mrows = 1;
    int mr = 0;
    if (mask) {
        d->has_mask = true;
        mr = mask->rank;
        if (mr >= 1) mcols = mask->dims[mr - 1];
        if (mr >= 2) mrows = mask->dims[mr - 2];
        if ((mcols != 1 && mcols != d->Lk) || (mrows != 1 && mrows != d->Lq)) {
            snprintf(why, nwhy, "mask [..., %lld, %lld] does not broadcast to the scores [..., %lld, %lld]",
                     (long long)mrows, (long long)mcols, (long long)d->Lq, (long long)d->Lk);
            return false;
        }
        d->m_col = mcols == 1 ? 0 : 1;
        d->m_row = mrows == 1 ? 0 : mcols;
    }
    /* batch dims: numpy broadcast of the four operands' leading dims, right-aligned */
    const pvc_tensor *ops[4] = { q, k, v, mask };
    int64_t *str[4] = { d->qstr, d->kstr, d->vstr, d->mstr };
    int br[4] = { q->rank - 2, k->rank - 2, v->rank - 2, mr > 2 ? mr - 2 : 0 };
    int64_t run[4] = { d->Lq * d->D, d->Lk * d->D, d->Lk * d->Dv, mrows * mcols };
    d->brank = PVC_MAX(PVC_MAX(br[0], br[1]), PVC_MAX(br[2], br[3]));
    d->nbatch = 1;
    for (int a = d->brank - 1; a >= 0; a--) {
        int64_t out = 1;
        for (int o = 0; o < 4; o++) {
            int i = a - (d->brank - br[o]);
            int64_t n = (ops[o] && i >= 0) ? ops[o]->dims[i] : 1;
            if (n == 1) continue;
            if (out != 1 && n != out) {
                snprintf(why, nwhy, "batch dims do not broadcast: %lld vs %lld", (long long)out, (long long)n);
                return false;
            }
            out = n;
        }
        d->bdims[a] = out;
        for (int o = 0; o < 4; o++) {
            int i = a - (d->brank - br[o]);
            int64_t n = (ops[o] && i >= 0) ? ops[o]->dims[i] : 1;
            str[o][a] = n == 1 ? 0 : run[o];
            run[o] *= n;
        }
        d->nbatch *= out;
    }
    return true;
}

int pvk_attn_out_dims(const pvk_attn_desc *d, int64_t *dims)
{
    for (int a = 0; a < d->brank; a++) dims[a] = d->bdims[a];
    dims[d->brank] = d->Lq;
    dims[d->brank + 1] = d->Dv;
    return d->brank + 2;
}

void pvk_attn_batch_offsets(const pvk_attn_desc *d, int64_t b, int64_t off[4])
{
    off[0] = off[1] = off[2] = off[3] = 0;
    for (int a = d->brank - 1; a >= 0; a--) {
        int64_t i = b % d->bdims[a];
        b /= d->bdims[a];
        off[0] += i * d->qstr[a];
        off[1] += i * d->kstr[a];
        off[2] += i * d->vstr[a];
        off[3] += i * d->mstr[a];
    }
}

typedef struct attn_job {
    const pvk_attn_desc *d;
    const float *q, *k, *v, *m;
    float *y;
    int64_t bq, nqb;        /* query rows per item, query blocks per batch entry */
} attn_job;

static void scale_row(float *y, int64_t n, float f)
{
    for (int64_t c = 0; c < n; c++) y[c] *= f;
}

/* Row helpers over n floats, n a multiple of LANES (the block's keys rounded up; the padding
 * holds -inf). Each step handles LANES independent lanes with a constant trip count, which gcc
 * -O2 turns into vector code (the baseline ISA; no -march); the lane order is fixed, so the
 * results do not depend on the compiler's choices. */
enum { LANES = 8 };
_Static_assert(PVK_ATTN_BK % LANES == 0, "a score row holds whole lane groups");

static float row_max(const float *restrict x, int64_t n)
{
    float m[LANES];
    for (int l = 0; l < LANES; l++) m[l] = -INFINITY;
    for (int64_t c = 0; c < n; c += LANES)
        for (int l = 0; l < LANES; l++) m[l] = x[c + l] > m[l] ? x[c + l] : m[l];
    float r = m[0];
    for (int l = 1; l < LANES; l++) r = m[l] > r ? m[l] : r;
    return r;
}

/* x = exp(x - mx) in place (x <= mx); returns the sum. */
static double row_exp_sum(float *restrict x, int64_t n, float mx)
{
    float s[LANES] = { 0 };
    for (int64_t c = 0; c < n; c += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = pvk_expf_nonpos(x[c + l] - mx);
            x[c + l] = e;
            s[l] += e;
        }
    double t = 0.0;
    for (int l = 0; l < LANES; l++) t += s[l];
    return t;
}

/* Query rows [q0, q0 + nq) of batch entry b. */
static void attn_item(const attn_job *j, int64_t b, int64_t q0, int64_t nq)
{
    const pvk_attn_desc *d = j->d;
    _Alignas(64) float s[PVK_ATTN_BQ * PVK_ATTN_BK];
    float mx[PVK_ATTN_BQ];
    double sum[PVK_ATTN_BQ];
    int64_t off[4];
    pvk_attn_batch_offsets(d, b, off);
    const float *q = j->q + off[0] + q0 * d->D;
    const float *k = j->k + off[1], *v = j->v + off[2];
    const float *m = d->has_mask ? j->m + off[3] + q0 * d->m_row : NULL;
    float *y = j->y + (b * d->Lq + q0) * d->Dv;
    if (d->Lk == 0) {       /* softmax over nothing: P is empty and P V is zero */
        memset(y, 0, (size_t)(nq * d->Dv) * sizeof *y);
        return;
    }
    for (int64_t i = 0; i < nq; i++) { mx[i] = -INFINITY; sum[i] = 0.0; }
    for (int64_t k0 = 0; k0 < d->Lk; k0 += PVK_ATTN_BK) {
        int64_t nk = PVC_MIN(PVK_ATTN_BK, d->Lk - k0), nk8 = (nk + LANES - 1) / LANES * LANES;
        if (d->k_transposed)
            pvk_gemm_f32(NULL, nq, nk, d->D, q, d->D, false, k + k0, d->Lk, false, s, PVK_ATTN_BK, d->scale, 0.0f);
        else
            pvk_gemm_f32(NULL, nq, nk, d->D, q, d->D, false, k + k0 * d->D, d->D, true, s, PVK_ATTN_BK, d->scale, 0.0f);
        for (int64_t i = 0; i < nq; i++) {
            float *si = s + i * PVK_ATTN_BK;
            if (m) {
                const float *mi = m + i * d->m_row + k0 * d->m_col;
                for (int64_t c = 0; c < nk; c++) si[c] += mi[c * d->m_col];
            }
            for (int64_t c = nk; c < nk8; c++) si[c] = -INFINITY;
            float bm = row_max(si, nk8);
            float nm = bm > mx[i] ? bm : mx[i];
            if (nm == -INFINITY) {      /* every score so far is -inf: nothing to weigh yet */
                for (int64_t c = 0; c < nk; c++) si[c] = 0.0f;
                continue;
            }
            float corr = pvk_expf_nonpos(mx[i] - nm);      /* 0 on the first finite block */
            double t = row_exp_sum(si, nk8, nm);
            sum[i] = sum[i] * corr + t;
            mx[i] = nm;
            if (k0 > 0 && corr != 1.0f) scale_row(y + i * d->Dv, d->Dv, corr);
        }
        pvk_gemm_f32(NULL, nq, d->Dv, nk, s, PVK_ATTN_BK, false, v + k0 * d->Dv, d->Dv, false, y, d->Dv, 1.0f,
                     k0 == 0 ? 0.0f : 1.0f);
    }
    for (int64_t i = 0; i < nq; i++) scale_row(y + i * d->Dv, d->Dv, (float)(1.0 / sum[i]));
}

static void attn_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const attn_job *j = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->nqb, q0 = (t % j->nqb) * j->bq;
        attn_item(j, b, q0, PVC_MIN(j->bq, j->d->Lq - q0));
    }
}

void pvk_attention_f32_blocked(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                               const float *v, const float *m, float *y)
{
    if (d->nbatch <= 0 || d->Lq <= 0 || d->Dv <= 0) return;
    /* Smaller query blocks when there are too few items to keep every thread busy; rows are
     * independent, so this changes the speed only. */
    int64_t threads = pvc_pool_threads(pool), bq = PVK_ATTN_BQ;
    while (bq > 16 && d->nbatch * ((d->Lq + bq - 1) / bq) < 4 * threads) bq /= 2;
    attn_job j = { d, q, k, v, m, y, bq, (d->Lq + bq - 1) / bq };
    pvc_parallel_for(pool, d->nbatch * j.nqb, 1, attn_range, &j);
}

void pvk_attention_ref_f32(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                           const float *m, float *y, float *scratch)
{
    for (int64_t b = 0; b < d->nbatch; b++) {
        int64_t off[4];
        pvk_attn_batch_offsets(d, b, off);
        const float *qb = q + off[0], *kb = k + off[1], *vb = v + off[2];
        float *yb = y + b * d->Lq * d->Dv;
        for (int64_t i = 0; i < d->Lq; i++) {
            float *s = scratch + i * d->Lk;
            for (int64_t c = 0; c < d->Lk; c++) {
                double acc = 0.0;
                for (int64_t t = 0; t < d->D; t++)
                    acc += (double)qb[i * d->D + t] * (d->k_transposed ? kb[t * d->Lk + c] : kb[c * d->D + t]);
                s[c] = (float)(acc * d->scale);
                if (d->has_mask) s[c] += m[off[3] + i * d->m_row + c * d->m_col];
            }
            float mxv = -INFINITY;
            for (int64_t c = 0; c < d->Lk; c++) mxv = s[c] > mxv ? s[c] : mxv;
            double sum = 0.0;
            for (int64_t c = 0; c < d->Lk; c++) { s[c] = expf(s[c] - mxv); sum += s[c]; }
            for (int64_t c = 0; c < d->Lk; c++) s[c] = (float)(s[c] / sum);
            for (int64_t e = 0; e < d->Dv; e++) {
                double acc = 0.0;
                for (int64_t c = 0; c < d->Lk; c++) acc += (double)s[c] * vb[c * d->Dv + e];
                yb[i * d->Dv + e] = (float)acc;
            }
        }
    }
}

/* ---- lane kernels: work split and driver ---------------------------------------------------- */

int64_t pvk_attn_lane_group(const pvk_attn_desc *d, int lanes, int threads)
{
    int64_t per_tile = PVK_ATTN_LANE_TILE_FLOATS(d, lanes);
    int64_t g = PVK_ATTN_LANE_STATE_FLOATS / per_tile;
    if (g < 1) return 0;
    g = PVC_MIN(g, PVK_ATTN_LANE_GMAX);
    int64_t ntiles = (d->Lq + lanes - 1) / lanes;
    g = PVC_MIN(g, PVC_MAX(ntiles, 1));
    /* Items cost the same (a partial tile does full-tile work), so balance only needs enough
     * of them: 4 per thread, as pvc_parallel_for hands out ~4 chunks per thread. */
    while (g > 1 && d->nbatch * ((ntiles + g - 1) / g) < 4 * (int64_t)threads) g--;
    int64_t ngroups = (ntiles + g - 1) / g;
    return (ntiles + ngroups - 1) / ngroups;     /* same group count, sizes evened out */
}

int64_t pvk_attn_lane_block(const pvk_attn_desc *d, int nj, int64_t ktmax)
{
    int64_t row = (d->D + d->Dv) * (int64_t)sizeof(float);
    int64_t kt = row > 0 ? PVK_ATTN_LANE_KV_BYTES / row / nj * nj : ktmax;
    return PVC_MAX(nj, PVC_MIN(kt, ktmax));
}

typedef struct lanes_job {
    const pvk_attn_desc *d;
    const float *q, *k, *v, *m;
    float *y;
    int64_t ntiles, group, ngroups;
    pvk_attn_tiles_fn fn;
} lanes_job;

static void lanes_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const lanes_job *j = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->ngroups, t0 = (t % j->ngroups) * j->group;
        j->fn(j->d, j->q, j->k, j->v, j->m, j->y, b, t0, PVC_MIN(j->group, j->ntiles - t0));
    }
}

void pvk_attn_lanes_run(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                        const float *v, const float *m, float *y, int lanes, int64_t group,
                        pvk_attn_tiles_fn fn)
{
    if (d->nbatch <= 0 || d->Lq <= 0 || d->Dv <= 0) return;
    if (d->Lk == 0) {       /* softmax over nothing: P is empty and P V is zero */
        memset(y, 0, (size_t)(d->nbatch * d->Lq * d->Dv) * sizeof *y);
        return;
    }
    int64_t ntiles = (d->Lq + lanes - 1) / lanes;
    lanes_job j = { d, q, k, v, m, y, ntiles, group, (ntiles + group - 1) / group, fn };
    pvc_parallel_for(pool, d->nbatch * j.ngroups, 1, lanes_range, &j);
}

/* ---- variants and the per-shape choice ------------------------------------------------------ */

const pvk_attn_variant pvk_attn_f32_variants[] = {
    { "blocked", PVC_ISA_SCALAR, pvk_attention_f32_blocked, 0, NULL },
#if defined(__x86_64__)   /* x86/ files are built on x86-64 only (CMakeLists.txt) */
    { "avx2_lanes8", PVC_ISA_AVX2, pvk_attention_f32_avx2, 8, pvk_attn_exp2_avx2 },
    { "avx512_lanes16", PVC_ISA_AVX512, pvk_attention_f32_avx512, 16, pvk_attn_exp2_avx512 },
#endif
};
const int pvk_attn_f32_nvariants = (int)PVC_COUNTOF(pvk_attn_f32_variants);

static const pvk_attn_variant *best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void select_best(void)
{
    pvc_isa isa = pvc_isa_selected();
    best = &pvk_attn_f32_variants[0];
    for (int i = 0; i < pvk_attn_f32_nvariants; i++)
        if (pvk_attn_f32_variants[i].isa <= isa) best = &pvk_attn_f32_variants[i];
}

/* Where the lane kernels lose to blocked, from pv_attn_bench -T 1 (best of 5 runs, ms; the
 * 2-core AVX-512 Xeon this was developed on, shared with other jobs, so +-15%). blocked runs
 * the AVX-512 GEMM, and the AVX2 one under PERCEIVE_ISA=avx2 (the pair on the right, as on an
 * AVX2-only CPU):
 *   heads x Lq x Lk x D/Dv     blocked  avx512_lanes16 | blocked(avx2)  avx2_lanes8
 *   8 x 500 x 32400 x 16/16     446       95.2          |   479          183
 *   8 x 500 x 500 x 16/16        10.0      2.17         |    11.1          4.46
 *   16 x 192 x 192 x 80/80        4.69     3.18         |     7.44         5.96
 *   8 x 1024 x 1024 x 32/32      41.1     16.5          |    58.5          33.4
 *   8 x 1024 x 1024 x 64/64      41.3     20.0          |    87.6          61.9
 *   8 x 1024 x 1024 x 128/128    61.4     40.5          |   141.7         123.0
 *   4 x 1024 x 1024 x 256/256    51.5     51.3          |   124.4         131.5
 *   8 x 4 x 32400 x 16/16         7.72     3.56         |    12.4           6.65
 *   8 x 4 x 4096 x 64/64          1.71     1.92         |     3.27          2.51
 *   8 x 1 x 4096 x 64/64          1.41     1.93         |     2.56          2.35
 *   8 x 1 x 32400 x 16/16         4.21     3.54         |     8.96          6.71
 * Each lane-kernel FMA takes one broadcast load and a tile is `lanes` rows by one key, so as D
 * and Dv grow the GEMM's register blocking catches up: even at 256, blocked from there on.
 * Few query rows leave lanes idle; at a quarter of the lanes or less and D >= 64 that costs
 * more than the GEMM's packing. */
static bool lanes_lose(const pvk_attn_desc *d, int lanes)
{
    return d->D > 128 || d->Dv > 128 || (d->Lq * 4 <= lanes && d->D >= 64);
}

const pvk_attn_variant *pvk_attn_f32_pick(const pvk_attn_desc *d)
{
    pthread_once(&best_once, select_best);
    return best->lanes > 0 && lanes_lose(d, best->lanes) ? &pvk_attn_f32_variants[0] : best;
}

void pvk_attention_f32(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                       const float *v, const float *m, float *y)
{
    pvk_attn_f32_pick(d)->fn(pool, d, q, k, v, m, y);
}
