/* Integer GEMM on packed operands (kernels/ref/quant.h) with AVX512-VNNI: 8 x 48 tiles, 24 zmm
 * accumulators; per 4-deep k-group three 64-byte B loads, one 4-byte broadcast of A per row and
 * vpdpbusd (u8 x s8, four products summed into each int32 lane, no saturation). The zero-point
 * correction C = raw - zb[n] * rfix[m] - za[m] * colsum[n] is applied at the store.
 * VNNI comes from a function target attribute; the file's flags are the baseline AVX-512 ones. */
#include "kernels/ref/quant.h"

#include <immintrin.h>
#include <string.h>

#define NV (PVK_QNR / 16)   /* zmm vectors per tile row */

/* One row's three accumulators: named variables (not an array) keep all 24 in registers. */
#define ROW_DECL(i) __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0, c##i##2 = c##i##0
#define ROW_STEP(i)                                                                              \
    do {                                                                                         \
        int32_t w_;                                                                              \
        memcpy(&w_, ag + 4 * (i), 4);                                                            \
        __m512i a_ = _mm512_set1_epi32(w_);                                                      \
        c##i##0 = _mm512_dpbusd_epi32(c##i##0, a_, b0);                                          \
        c##i##1 = _mm512_dpbusd_epi32(c##i##1, a_, b1);                                          \
        c##i##2 = _mm512_dpbusd_epi32(c##i##2, a_, b2);                                          \
    } while (0)
#define ROW_SAVE(i) (acc[i][0] = c##i##0, acc[i][1] = c##i##1, acc[i][2] = c##i##2)

__attribute__((target("avx512vnni")))
static void tile(const uint8_t *a, const int8_t *b, int64_t G, const int32_t *za, const int32_t *rfix,
                 const int32_t *zb, const int32_t *colsum, int mr, int64_t nr, int32_t *C, int64_t ldc)
{
    _Static_assert(PVK_QMR == 8 && NV == 3, "the tile is written out for 8 x 48");
    ROW_DECL(0); ROW_DECL(1); ROW_DECL(2); ROW_DECL(3);
    ROW_DECL(4); ROW_DECL(5); ROW_DECL(6); ROW_DECL(7);
    for (int64_t g = 0; g < G; g++) {
        const int8_t *bg = b + g * PVK_QNR * 4;
        const uint8_t *ag = a + g * PVK_QMR * 4;
        __m512i b0 = _mm512_loadu_si512((const void *)bg), b1 = _mm512_loadu_si512((const void *)(bg + 64)),
                b2 = _mm512_loadu_si512((const void *)(bg + 128));
        ROW_STEP(0); ROW_STEP(1); ROW_STEP(2); ROW_STEP(3);
        ROW_STEP(4); ROW_STEP(5); ROW_STEP(6); ROW_STEP(7);
    }
    __m512i acc[PVK_QMR][NV];
    ROW_SAVE(0); ROW_SAVE(1); ROW_SAVE(2); ROW_SAVE(3);
    ROW_SAVE(4); ROW_SAVE(5); ROW_SAVE(6); ROW_SAVE(7);
    for (int j = 0; j < NV; j++) {
        int64_t left = nr - 16 * j;
        if (left <= 0) break;
        __mmask16 mk = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        __m512i zbv = _mm512_loadu_si512((const void *)(zb + 16 * j));
        __m512i csv = _mm512_loadu_si512((const void *)(colsum + 16 * j));
        for (int i = 0; i < mr; i++) {
            __m512i v = _mm512_sub_epi32(acc[i][j], _mm512_mullo_epi32(zbv, _mm512_set1_epi32(rfix[i])));
            v = _mm512_sub_epi32(v, _mm512_mullo_epi32(csv, _mm512_set1_epi32(za[i])));
            _mm512_mask_storeu_epi32(C + i * ldc + 16 * j, mk, v);
        }
    }
}

typedef struct vnni_ctx {
    const pvk_qpacked_a *a;
    const pvk_qpacked *b;
    int32_t *C;
    int64_t ldc, mblocks;
} vnni_ctx;

/* Tiles numbered panel-major so a thread's consecutive tiles reuse one B panel from cache. */
static void vnni_tiles(void *ctx, int64_t begin, int64_t end, int tid)
{
    const vnni_ctx *c = ctx;
    const pvk_qpacked_a *a = c->a;
    const pvk_qpacked *b = c->b;
    int64_t G = a->K4 / 4;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t p = t / c->mblocks, mb = t % c->mblocks;
        int64_t m0 = mb * PVK_QMR, n0 = p * PVK_QNR;
        tile(a->data + m0 * a->K4, b->data + n0 * b->K4, G, a->za + m0, a->rfix + m0, b->zb + n0, b->colsum + n0,
             (int)PVC_MIN(PVK_QMR, a->M - m0), PVC_MIN(PVK_QNR, b->N - n0), c->C + m0 * c->ldc + n0, c->ldc);
    }
}

void pvk_qgemm_packed_avx512vnni(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc)
{
    vnni_ctx c = { a, b, C, ldc, a->Mp / PVK_QMR };
    int64_t panels = (b->N + PVK_QNR - 1) / PVK_QNR;
    pvc_parallel_for(pool, panels * c.mblocks, 1, vnni_tiles, &c);
}

/* ---- rounding to 8 bits: quant.c's quant1 in 16 lanes ---------------------------------------- */
/* v clamped to [lo - zp, hi - zp] (NaN -> the minimum: vmaxps returns its second operand then),
 * rounded half to even by vcvtps2dq (default rounding mode), plus zp, narrowed; k masks the tail. */
static inline void store8(__m512 v, int32_t zp, pv_dtype t, void *y, __mmask16 k)
{
    float lo = (float)((t == PV_U8 ? 0 : -128) - zp), hi = (float)((t == PV_U8 ? 255 : 127) - zp);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
    __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(zp));
    _mm_mask_storeu_epi8(y, k, _mm512_cvtepi32_epi8(q));   /* in range already: truncation is exact */
}

static inline __mmask16 tail(int64_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u); }

void pvk_requant_row_avx512(const int32_t *acc, int64_t n, const float *mult, int64_t nmult, int32_t zp, pv_dtype t, void *y)
{
    __m512 m1 = _mm512_set1_ps(mult[0]);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail(n - i);
        __m512 m = nmult == 1 ? m1 : _mm512_maskz_loadu_ps(k, mult + i);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, acc + i)), m);
        store8(v, zp, t, (uint8_t *)y + i, k);
    }
}

void pvk_quant_row_avx512(const float *x, int64_t n, float scale, int32_t zp, pv_dtype t, void *y)
{
    __m512 s = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail(n - i);
        store8(_mm512_div_ps(_mm512_maskz_loadu_ps(k, x + i), s), zp, t, (uint8_t *)y + i, k);
    }
}
