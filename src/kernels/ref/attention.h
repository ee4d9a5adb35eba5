/* Scaled dot-product attention: Y = softmax(scale * Q K^T + mask) V over the last axis, for
 * batched (broadcast) Q [..., Lq, D], K [..., Lk, D] or K^T [..., D, Lk], V [..., Lk, Dv] and an
 * optional additive mask broadcastable to [..., Lq, Lk].
 *
 * pvk_attention_f32 streams over key blocks with an online softmax (running max, running sum,
 * output accumulator), so it never holds more than a block of scores: its scratch lives on the
 * worker's stack (PVK_ATTN_STACK_BYTES) and the score matrix is never materialized.
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
 * |r| <= ln2 / 2, e^r by its degree-7 Taylor polynomial (truncation < 6e-9 relative), 2^k put
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

/* Fills d from the operand shapes (mask NULL or rank -1 when absent). On a shape that does not
 * fit, returns false with the reason in why. */
bool pvk_attn_desc_init(pvk_attn_desc *d, const pvc_tensor *q, const pvc_tensor *k, const pvc_tensor *v,
                        const pvc_tensor *mask, bool k_transposed, float scale, char *why, size_t nwhy);

/* Output dims of d: bdims then [Lq, Dv]; returns the rank. */
int pvk_attn_out_dims(const pvk_attn_desc *d, int64_t *dims);

/* Y [nbatch, Lq, Dv] (contiguous); m NULL when !d->has_mask. Parallel over (batch, query
 * block). Y must not overlap the inputs. Allocates nothing. */
void pvk_attention_f32(pvc_pool *pool, const pvk_attn_desc *d, const float *q, const float *k,
                       const float *v, const float *m, float *y);

/* Reference twin; scratch holds Lq * Lk floats. Single-threaded, double accumulators. */
void pvk_attention_ref_f32(const pvk_attn_desc *d, const float *q, const float *k, const float *v,
                           const float *m, float *y, float *scratch);

#endif
