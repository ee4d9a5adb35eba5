/* Scaled dot-product attention: Y = softmax(scale * Q K^T + mask) V over the last axis, for
 * batched (broadcast) Q [..., Lq, D], K [..., Lk, D] or K^T [..., D, Lk], V [..., Lk, Dv] and an
 * optional additive mask broadcastable to [..., Lq, Lk].
 *
 * Every kernel streams over key blocks with an online softmax (running max, running sum,
 * output accumulator), so it never holds more than a block of scores: its scratch lives on the
 * worker's stack and the score matrix is never materialized. Variants (a table, like GEMM's):
 *   blocked  the portable kernel: 64 x 128 score blocks through pvk_gemm_f32 (PVK_ATTN_STACK_BYTES)
 *   lanes    x86/attention_avx2.c, x86/attention_avx512.c: 8 / 16 query rows across the vector
 *            lanes, K and V read as broadcast scalars in their natural layouts, so small head
 *            depths (D = 16) need no packing and the softmax needs no horizontal reductions
 * pvk_attention_f32 picks one per shape (the table in attention.c).
 * pvk_attention_ref_f32 is the plain twin for tests: full score rows, softmax, matmul. */
#ifndef PVK_REF_ATTENTION_H
#define PVK_REF_ATTENTION_H

#include "kernels/kernels.h"

#include <string.h>

#define PVK_ATTN_MAXB (PV_MAX_RANK - 2)
enum { PVK_ATTN_BQ = 64, PVK_ATTN_BK = 128 };   /* query rows / keys per block */
#define PVK_ATTN_STACK_BYTES ((size_t)PVK_ATTN_BQ * PVK_ATTN_BK * sizeof(float))

typedef struct pvk_attn_desc {
    int64_t Lq, Lk, D, Dv;
    int64_t nbatch;                     /* product of bdims (1 when brank == 0) */
    int     brank;                      /* broadcast batch rank */
    int64_t bdims[PVK_ATTN_MAXB];       /* output batch dims */
    /* per batch dim, element stride of each operand's matrix (0 on broadcast dims) */
    int64_t qstr[PVK_ATTN_MAXB], kstr[PVK_ATTN_MAXB], vstr[PVK_ATTN_MAXB], mstr[PVK_ATTN_MAXB];
    int64_t m_row, m_col;               /* mask element strides along Lq / Lk (0 = broadcast) */
    bool    has_mask;
    bool    k_transposed;               /* K given as [..., D, Lk] */
    float   scale;
} pvk_attn_desc;

/* exp(x) for x <= 0 (a score minus its row's running max) without a libm call: x = k ln2 + r,
 * |r| <= ln2 / 2, e^r by its degree-8 Taylor polynomial (truncation < 3e-10 relative), 2^k put
 * into the exponent bits. Below -87 (and at -inf) the result is 0: such weights are under
 * FLT_MIN against a row sum >= 1; NaN stays NaN. The selects are bit masks and k is read from
 * the bits of the rounding sum, so the code has no branches or float-to-int conversions and
 * loops over it vectorize at -O2. Within 2 ulp of exp (tested); the reference uses expf. */
static inline float pvk_expf_nonpos(float x)
{
    const float lo = -87.0f;
    uint32_t keep = 0u - (uint32_t)!(x < lo);           /* all ones unless x < -87 (NaN: ones) */
    uint32_t xb, lb, tb, eb, rb;
    memcpy(&xb, &x, sizeof xb);
    memcpy(&lb, &lo, sizeof lb);
    xb = (xb & keep) | (lb & ~keep);
    float xc;
    memcpy(&xc, &xb, sizeof xc);
    float t = xc * 1.44269504f + 12582912.0f;          /* 1.5 * 2^23: rounds x / ln2 to k */
    float kf = t - 12582912.0f;
    float r = xc - kf * 0.693359375f;                   /* ln2 = 0.693359375 - 2.12194440e-4 */
    r = r + kf * 2.12194440e-4f;
    float p = 1.0f / 5040.0f + r * (1.0f / 40320.0f);
    p = 1.0f / 720.0f + r * p;
    p = 1.0f / 120.0f + r * p;
    p = 1.0f / 24.0f + r * p;
    p = 1.0f / 6.0f + r * p;
    p = 0.5f + r * p;
    p = 1.0f + r * p;
    p = 1.0f + r * p;
    memcpy(&tb, &t, sizeof tb);
    eb = (tb - 0x4B400000u + 127u) << 23;               /* k + 127 in [1, 127] */
    float two_k, e;
    memcpy(&two_k, &eb, sizeof two_k);
    e = p * two_k;
    memcpy(&rb, &e, sizeof rb);
    rb &= keep;
    memcpy(&e, &rb, sizeof e);
    return e;
}

/* The lane kernels work in base 2: Q is packed as scale * log2(e) * Q and the mask is
 * multiplied by log2(e), so a weight is 2^(s - max), whose reduction to 2^k * 2^r takes one
 * instruction less than e^x's. 2^r on |r| <= 1/2 uses e^(r ln2)'s Taylor coefficients
 * ln2^n / n! (n <= 7: truncation < 6e-9 relative). Weights below 2^PVK_ATTN_EXP2_MIN are 0:
 * such weights are under FLT_MIN against a row sum >= 1, and never denormal. */
#define PVK_LOG2E 1.4426950408889634
#define PVK_LN2 0.6931471805599453
#define PVK_ATTN_EXP2_MIN (-125.0f)
#define PVK_EXP2_C1 ((float)PVK_LN2)
#define PVK_EXP2_C2 ((float)(PVK_LN2 * PVK_LN2 / 2.0))
#define PVK_EXP2_C3 ((float)(PVK_LN2 * PVK_LN2 * PVK_LN2 / 6.0))
#define PVK_EXP2_C4 ((float)(PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 / 24.0))
#define PVK_EXP2_C5 ((float)(PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 / 120.0))
#define PVK_EXP2_C6 ((float)(PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 / 720.0))
#define PVK_EXP2_C7 ((float)(PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 * PVK_LN2 / 5040.0))

/* Fills d from the operand shapes (mask NULL or rank -1 when absent). On a shape that does not
 * fit, returns false with the reason in why. */
bool pvk_attn_desc_init(pvk_attn_desc *d, const pvc_tensor *q, const pvc_tensor *k, const pvc_tensor *v,
                        const pvc_tensor *mask, bool k_transposed, float scale, char *why, size_t nwhy);

/* Output dims of d: bdims then [Lq, Dv]; returns the rank. */
int pvk_attn_out_dims(const pvk_attn_desc *d, int64_t *dims);

/* Y [nbatch, Lq, Dv] (contiguous); m NULL when !d->has_mask. Parallel over (batch, query
 * block). Y must not overlap the inputs. Allocates nothing. Runs the variant
 * pvk_attn_f32_pick(d) names; every variant has this signature. */
typedef void (*pvk_attention_f32_fn)(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                                     const float *v, const float *m, float *y);
void pvk_attention_f32(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                       const float *v, const float *m, float *y);

/* The variants. blocked runs anywhere; the lane kernels only when pvc_isa_selected() is at
 * least their isa, and hand shapes whose per-tile state does not fit their stack scratch
 * (pvk_attn_lane_group() == 0) to blocked. Results agree to rounding (tests: 1e-5 relative +
 * 1e-6 absolute). */
void pvk_attention_f32_blocked(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                               const float *v, const float *m, float *y);
void pvk_attention_f32_avx2(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                            const float *v, const float *m, float *y);
void pvk_attention_f32_avx512(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                              const float *v, const float *m, float *y);
void pvk_attn_exp2_avx2(const float *x, float *y, int64_t n);
void pvk_attn_exp2_avx512(const float *x, float *y, int64_t n);

typedef struct pvk_attn_variant {
    const char          *name;
    pvc_isa              isa;    /* required instruction set */
    pvk_attention_f32_fn fn;
    int                  lanes;  /* query rows per tile of a lane kernel; 0 for blocked */
    /* the kernel's vector 2^x (x <= 0 or NaN, see PVK_ATTN_EXP2_MIN) over n floats, for
     * tests; NULL when it has none */
    void (*exp2)(const float *x, float *y, int64_t n);
} pvk_attn_variant;
/* Every variant built into this binary, lowest isa first (tests and benches iterate it). */
extern const pvk_attn_variant pvk_attn_f32_variants[];
extern const int pvk_attn_f32_nvariants;
/* The variant pvk_attention_f32 runs for d: the best one pvc_isa_selected() allows, unless the
 * measured table in attention.c prefers blocked for d's shape. */
const pvk_attn_variant *pvk_attn_f32_pick(const pvk_attn_desc *d);

/* ---- shared by the lane kernels -------------------------------------------------------------
 * Work split: query tiles of `lanes` rows (the last one partial), `group` consecutive tiles of
 * one batch entry per work item (they share each key block while it is in L1). Per tile the
 * kernel keeps its packed queries, its output accumulator, and a few vectors on the stack:
 * PVK_ATTN_LANE_TILE_FLOATS(d, lanes) floats, at most PVK_ATTN_LANE_STATE_FLOATS per item. */
#define PVK_ATTN_LANE_STATE_FLOATS 10240                   /* 40 KiB */
#define PVK_ATTN_LANE_TILE_FLOATS(d, lanes) (((d)->D + (d)->Dv + 1) * (int64_t)(lanes))
enum { PVK_ATTN_LANE_GMAX = 4 };                            /* tiles per item at most */

/* Tiles per work item for d at `threads` threads: as many as fit the state (<= GMAX) while
 * there are enough items to balance the threads, evened out over the tiles; 0 when not even
 * one tile's state fits. */
int64_t pvk_attn_lane_group(const pvk_attn_desc *d, int lanes, int threads);

/* Keys per block for d: a multiple of nj (the score pass's key group), at most ktmax, and
 * small enough that the block's K and V rows (PVK_ATTN_LANE_KV_BYTES) stay in L1 while every
 * tile of the item passes over them; nj at least. Depends on d only, so results do not
 * depend on the thread count. */
#define PVK_ATTN_LANE_KV_BYTES (24 * 1024)
int64_t pvk_attn_lane_block(const pvk_attn_desc *d, int nj, int64_t ktmax);

/* Computes tiles [tile0, tile0 + ntiles) (ntiles <= the group) of batch entry b. */
typedef void (*pvk_attn_tiles_fn)(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                                  const float *m, float *y, int64_t b, int64_t tile0, int64_t ntiles);
/* Runs fn over every (batch entry, tile group) on pool; Lk == 0 writes zeros without calling it.
 * group from pvk_attn_lane_group (> 0). */
void pvk_attn_lanes_run(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                        const float *v, const float *m, float *y, int lanes, int64_t group,
                        pvk_attn_tiles_fn fn);

/* Element offsets of batch entry b in q, k, v, mask. */
void pvk_attn_batch_offsets(const pvk_attn_desc *d, int64_t b, int64_t off[4]);

/* How the mask varies over the scores (which loads a lane kernel's tile needs). */
typedef enum {
    PVK_ATTN_MASK_NONE = 0,
    PVK_ATTN_MASK_KEYS,      /* m_row == 0: one value per key, the same for every query row */
    PVK_ATTN_MASK_ROWS,      /* m_col == 0: one value per query row, the same for every key */
    PVK_ATTN_MASK_FULL       /* a value per (row, key) */
} pvk_attn_mask_kind;
static inline pvk_attn_mask_kind pvk_attn_mask_kind_of(const pvk_attn_desc *d)
{
    if (!d->has_mask) return PVK_ATTN_MASK_NONE;
    if (d->m_row == 0) return PVK_ATTN_MASK_KEYS;
    return d->m_col == 0 ? PVK_ATTN_MASK_ROWS : PVK_ATTN_MASK_FULL;
}

/* Reference twin; scratch holds Lq * Lk floats. Single-threaded, double accumulators. */
void pvk_attention_ref_f32(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                           const float *m, float *y, float *scratch);

#endif
