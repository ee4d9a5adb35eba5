/* Integer GEMM on packed operands (kernels/ref/quant.h) with AVX512-VNNI: 8 x 48 tiles, 24 zmm
 * accumulators; per 4-deep k-group three 64-byte B loads, one 4-byte broadcast of A per row and
 * vpdpbusd (u8 x s8, four products summed into each int32 lane, no saturation). The zero-point
 * correction C = raw - zb[n] * rfix[m] - za[m] * colsum[n] is applied at the store.
 * VNNI comes from a function target attribute; the file's flags are the baseline AVX-512 ones. */
#include "kernels/ref/quant.h"

#include <immintrin.h>
#include <string.h>

#define NV (PVK_QNR / 16)   /* zmm vectors per tile row */

__attribute__((target("avx512vnni")))
static void tile(const uint8_t *a, const int8_t *b, int64_t G, const int32_t *za, const int32_t *rfix,
                 const int32_t *zb, const int32_t *colsum, int mr, int64_t nr, int32_t *C, int64_t ldc)
{
    __m512i acc[PVK_QMR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < PVK_QMR; i++)
#pragma GCC unroll 3
        for (int j = 0; j < NV; j++) acc[i][j] = _mm512_setzero_si512();
    for (int64_t g = 0; g < G; g++) {
        __m512i bv[NV];
#pragma GCC unroll 3
        for (int j = 0; j < NV; j++) bv[j] = _mm512_load_si512((const void *)(b + (g * PVK_QNR + 16 * j) * 4));
#pragma GCC unroll 8
        for (int i = 0; i < PVK_QMR; i++) {
            int32_t w;
            memcpy(&w, a + (g * PVK_QMR + i) * 4, 4);
            __m512i av = _mm512_set1_epi32(w);
#pragma GCC unroll 3
            for (int j = 0; j < NV; j++) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av, bv[j]);
        }
    }
#pragma GCC unroll 3
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
