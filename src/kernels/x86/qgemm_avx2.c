/* Integer GEMM on packed operands (kernels/ref/quant.h) with AVX-VNNI (VEX vpdpbusd on ymm, for
 * CPUs without AVX-512, whose 16 ymm registers fit a 4 x 24 tile: 12 accumulators, 3 B loads, one
 * broadcast). The packed forms are the AVX-512 kernel's: an 8-row A panel is two row halves, a
 * 48-column B panel two column halves (24 columns = 96 bytes per 4-deep k-group). The zero-point
 * correction C = raw - zb[n] * rfix[m] - za[m] * colsum[n] is applied at the store.
 * AVX-VNNI comes from a function target attribute; the file's flags are AVX2 + FMA. */
#include "kernels/ref/quant.h"

#include <immintrin.h>
#include <string.h>

#define ROW_DECL(i) __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0, c##i##2 = c##i##0
#define ROW_STEP(i)                                                                              \
    do {                                                                                         \
        int32_t w_;                                                                              \
        memcpy(&w_, ag + 4 * (i), 4);                                                            \
        __m256i a_ = _mm256_set1_epi32(w_);                                                      \
        c##i##0 = _mm256_dpbusd_avx_epi32(c##i##0, a_, b0);                                      \
        c##i##1 = _mm256_dpbusd_avx_epi32(c##i##1, a_, b1);                                      \
        c##i##2 = _mm256_dpbusd_avx_epi32(c##i##2, a_, b2);                                      \
    } while (0)
#define ROW_SAVE(i) (acc[i][0] = c##i##0, acc[i][1] = c##i##1, acc[i][2] = c##i##2)

/* a: the A panel at its first row of the 4 (row stride in a k-group: 4 bytes, group stride
 * PVK_QMR * 4); b: the B panel at its first column of the 24 (group stride PVK_QNR * 4). */
__attribute__((target("avxvnni")))
static void tile(const uint8_t *a, const int8_t *b, int64_t G, const int32_t *za, const int32_t *rfix,
                 const int32_t *zb, const int32_t *colsum, int mr, int64_t nr, int32_t *C, int64_t ldc)
{
    _Static_assert(PVK_QMR == 8 && PVK_QNR == 48, "the tile is written for 8-row A and 48-column B panels");
    ROW_DECL(0); ROW_DECL(1); ROW_DECL(2); ROW_DECL(3);
    for (int64_t g = 0; g < G; g++) {
        const int8_t *bg = b + g * PVK_QNR * 4;
        const uint8_t *ag = a + g * PVK_QMR * 4;
        __m256i b0 = _mm256_loadu_si256((const void *)bg), b1 = _mm256_loadu_si256((const void *)(bg + 32)),
                b2 = _mm256_loadu_si256((const void *)(bg + 64));
        ROW_STEP(0); ROW_STEP(1); ROW_STEP(2); ROW_STEP(3);
    }
    __m256i acc[4][3];
    ROW_SAVE(0); ROW_SAVE(1); ROW_SAVE(2); ROW_SAVE(3);
    int32_t out[8];
    for (int j = 0; j < 3; j++) {
        int64_t left = nr - 8 * j;
        if (left <= 0) break;
        __m256i zbv = _mm256_loadu_si256((const void *)(zb + 8 * j));
        __m256i csv = _mm256_loadu_si256((const void *)(colsum + 8 * j));
        for (int i = 0; i < mr; i++) {
            __m256i v = _mm256_sub_epi32(acc[i][j], _mm256_mullo_epi32(zbv, _mm256_set1_epi32(rfix[i])));
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(csv, _mm256_set1_epi32(za[i])));
            if (left >= 8) {
                _mm256_storeu_si256((void *)(C + i * ldc + 8 * j), v);
            } else {
                _mm256_storeu_si256((void *)out, v);
                memcpy(C + i * ldc + 8 * j, out, sizeof(int32_t) * (size_t)left);
            }
        }
    }
}

typedef struct vnni_ctx {
    const pvk_qpacked_a *a;
    const pvk_qpacked *b;
    int32_t *C;
    int64_t ldc, mquads;
} vnni_ctx;

/* Tiles of 4 rows x 24 columns, numbered by column half-panel first so consecutive tiles of a
 * thread reuse one B half-panel. */
static void vnni_tiles(void *ctx, int64_t begin, int64_t end, int tid)
{
    const vnni_ctx *c = ctx;
    const pvk_qpacked_a *a = c->a;
    const pvk_qpacked *b = c->b;
    int64_t G = a->K4 / 4;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t h = t / c->mquads, q = t % c->mquads;
        int64_t m0 = q * 4, n0 = h * 24;
        if (m0 >= a->M || n0 >= b->N) continue;
        const uint8_t *ap = a->data + (m0 / PVK_QMR) * a->K4 * PVK_QMR + (m0 % PVK_QMR) * 4;
        const int8_t *bp = b->data + (n0 / PVK_QNR) * b->K4 * PVK_QNR + (n0 % PVK_QNR) * 4;
        tile(ap, bp, G, a->za + m0, a->rfix + m0, b->zb + n0, b->colsum + n0, (int)PVC_MIN(4, a->M - m0),
             PVC_MIN(24, b->N - n0), c->C + m0 * c->ldc + n0, c->ldc);
    }
}

void pvk_qgemm_packed_avxvnni(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc)
{
    vnni_ctx c = { a, b, C, ldc, (a->M + 3) / 4 };
    int64_t halves = (b->N + 23) / 24;
    pvc_parallel_for(pool, halves * c.mquads, 1, vnni_tiles, &c);
}
