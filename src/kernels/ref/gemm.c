/* Reference f32 GEMM: C = alpha * op(A) * op(B) + beta * C, beta in {0, 1}; the oracle for
 * the SIMD variants. The variant table and the dispatcher pvk_gemm_f32 are at the end.
 *
 * Design (Goto-style blocking, no heap, no workspace):
 *   - C is cut into MC x NC tiles; tiles are the parallel work items (pvc_parallel_for), so
 *     threads never write the same C element.
 *   - For each tile, K is walked in KC slices. The slice of op(A) (MC x KC) and of op(B)
 *     (KC x NC) is packed into buffers on the calling thread's stack (GEMM_STACK_BYTES in all,
 *     96 KiB), zero-padded to whole MR x NR micro-tiles. Packing absorbs every stride and
 *     transpose, so the inner kernel only sees contiguous panels.
 *   - The micro-kernel keeps a 4 x 8 block of C in eight 4-float arrays; with constant trip
 *     counts and restrict pointers gcc -O2 (SSE2 baseline) turns it into packed mulps/addps
 *     with the accumulators in registers. Results leave the kernel through a small array and
 *     are scaled by alpha and merged into C, clipped at the matrix edges.
 *   - Summation order over K is fixed (KC-sized partial sums, each summed in k order), so
 *     results do not depend on the thread count.
 * beta == 0 never reads C (C may hold garbage or NaN); C must not overlap A or B. Measured
 * single-thread at -O2 (SSE2 only) on the 2-core Xeon dev box: 12-19 GFLOP/s at 512^3 (varying
 * with the box's load), 15-17 at 1024^3, similar for every transpose combination. */
#include "kernels/kernels.h"

#include <pthread.h>
#include <string.h>

enum { MR = 4, NR = 8, MC = 64, NC = 128, KC = 128 };
#define GEMM_STACK_BYTES ((size_t)(MC * KC + KC * NC) * sizeof(float))
_Static_assert(GEMM_STACK_BYTES <= 96 * 1024, "keep the packing buffers small enough for any thread stack");

typedef struct gemm_job {
    int64_t M, N, K;
    const float *A; int64_t lda; bool ta;
    const float *B; int64_t ldb; bool tb;
    float *C; int64_t ldc;
    float alpha, beta;
    int64_t tiles_n;     /* tiles per row of tiles */
} gemm_job;

/* Packs op(A)[m0 : m0+mc, k0 : k0+kc] as MR-row micro-panels: panel p, column k holds rows
 * p*MR .. p*MR+MR-1 contiguously. Rows past mc are zero. */
static void pack_a(const gemm_job *j, int64_t m0, int64_t mc, int64_t k0, int64_t kc, float *restrict out)
{
    for (int64_t p = 0; p < mc; p += MR) {
        int64_t rows = PVC_MIN(MR, mc - p);
        float *dst = out + p * kc;
        if (!j->ta) {
            for (int64_t i = 0; i < MR; i++) {
                if (i >= rows) {
                    for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = 0.0f;
                    continue;
                }
                const float *src = j->A + (m0 + p + i) * j->lda + k0;
                for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = src[k];
            }
        } else {   /* op(A) column k is a contiguous run of row k0+k of A */
            for (int64_t k = 0; k < kc; k++) {
                const float *src = j->A + (k0 + k) * j->lda + m0 + p;
                float *d = dst + k * MR;
                int64_t i = 0;
                for (; i < rows; i++) d[i] = src[i];
                for (; i < MR; i++) d[i] = 0.0f;
            }
        }
    }
}

/* Packs op(B)[k0 : k0+kc, n0 : n0+nc] as NR-column micro-panels: panel q, row k holds columns
 * q*NR .. q*NR+NR-1 contiguously. Columns past nc are zero. */
static void pack_b(const gemm_job *j, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float *restrict out)
{
    for (int64_t q = 0; q < nc; q += NR) {
        int64_t cols = PVC_MIN(NR, nc - q);
        float *dst = out + q * kc;
        if (!j->tb) {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = j->B + (k0 + k) * j->ldb + n0 + q;
                float *d = dst + k * NR;
                int64_t c = 0;
                for (; c < cols; c++) d[c] = src[c];
                for (; c < NR; c++) d[c] = 0.0f;
            }
        } else {
            for (int64_t c = 0; c < NR; c++) {
                if (c >= cols) {
                    for (int64_t k = 0; k < kc; k++) dst[k * NR + c] = 0.0f;
                    continue;
                }
                const float *src = j->B + (n0 + q + c) * j->ldb + k0;
                for (int64_t k = 0; k < kc; k++) dst[k * NR + c] = src[k];
            }
        }
    }
}

/* out[MR][NR] = sum_k a[k][0..MR) outer b[k][0..NR). Two 4-wide column halves per row keep
 * each accumulator one SSE register. */
static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b, float *restrict out)
{
    float c0[4] = { 0 }, c1[4] = { 0 }, c2[4] = { 0 }, c3[4] = { 0 };
    float d0[4] = { 0 }, d1[4] = { 0 }, d2[4] = { 0 }, d3[4] = { 0 };
    for (int64_t k = 0; k < kc; k++) {
        const float *bk = b + k * NR;
        const float *ak = a + k * MR;
        float a0 = ak[0], a1 = ak[1], a2 = ak[2], a3 = ak[3];
        for (int t = 0; t < 4; t++) {
            float lo = bk[t], hi = bk[4 + t];
            c0[t] += a0 * lo; c1[t] += a1 * lo; c2[t] += a2 * lo; c3[t] += a3 * lo;
            d0[t] += a0 * hi; d1[t] += a1 * hi; d2[t] += a2 * hi; d3[t] += a3 * hi;
        }
    }
    for (int t = 0; t < 4; t++) {
        out[0 * NR + t] = c0[t]; out[0 * NR + 4 + t] = d0[t];
        out[1 * NR + t] = c1[t]; out[1 * NR + 4 + t] = d1[t];
        out[2 * NR + t] = c2[t]; out[2 * NR + 4 + t] = d2[t];
        out[3 * NR + t] = c3[t]; out[3 * NR + 4 + t] = d3[t];
    }
}

/* Merges an MR x NR result block into C (rows x cols valid). overwrite: first K slice with
 * beta == 0, so C is not read. */
static void store_block(const float *restrict t, float *restrict c, int64_t ldc, int64_t rows,
                        int64_t cols, float alpha, bool overwrite)
{
    for (int64_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        const float *ti = t + i * NR;
        if (overwrite)
            for (int64_t jj = 0; jj < cols; jj++) ci[jj] = alpha * ti[jj];
        else
            for (int64_t jj = 0; jj < cols; jj++) ci[jj] += alpha * ti[jj];
    }
}

static void gemm_tile(const gemm_job *j, int64_t m0, int64_t mc, int64_t n0, int64_t nc)
{
    _Alignas(64) float apack[MC * KC];
    _Alignas(64) float bpack[KC * NC];
    _Alignas(64) float t[MR * NR];
    for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
        int64_t kc = PVC_MIN(KC, j->K - k0);
        bool overwrite = k0 == 0 && j->beta == 0.0f;
        pack_b(j, k0, kc, n0, nc, bpack);
        pack_a(j, m0, mc, k0, kc, apack);
        /* One B micro-panel (kc x NR) stays in L1 while the A panels stream past it. */
        for (int64_t q = 0; q < nc; q += NR) {
            int64_t cols = PVC_MIN(NR, nc - q);
            for (int64_t p = 0; p < mc; p += MR) {
                int64_t rows = PVC_MIN(MR, mc - p);
                micro_kernel(kc, apack + p * kc, bpack + q * kc, t);
                store_block(t, j->C + (m0 + p) * j->ldc + n0 + q, j->ldc, rows, cols, j->alpha, overwrite);
            }
        }
    }
}

static void gemm_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const gemm_job *j = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t m0 = (t / j->tiles_n) * MC, n0 = (t % j->tiles_n) * NC;
        gemm_tile(j, m0, PVC_MIN(MC, j->M - m0), n0, PVC_MIN(NC, j->N - n0));
    }
}

void pvk_gemm_f32_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, bool trans_a,
                      const float *B, int64_t ldb, bool trans_b,
                      float *C, int64_t ldc, float alpha, float beta)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {   /* empty sum: C = beta * C */
        if (beta == 0.0f)
            for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    gemm_job j = { M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc, alpha, beta, (N + NC - 1) / NC };
    int64_t tiles = ((M + MC - 1) / MC) * j.tiles_n;
    /* Below ~1 MFLOP per call the pool's wake-up costs more than it saves. */
    if ((double)M * (double)N * (double)K < 5e5) pool = NULL;
    pvc_parallel_for(pool, tiles, 1, gemm_range, &j);
}

/* ---- variants and dispatch ---------------------------------------------------------------- */

const pvk_gemm_variant pvk_gemm_f32_variants[] = {
    { "ref", PVC_ISA_SCALAR, pvk_gemm_f32_ref },
#if defined(__x86_64__)   /* x86/ files are built on x86-64 only (CMakeLists.txt) */
    { "avx2_6x16", PVC_ISA_AVX2, pvk_gemm_f32_avx2 },
    { "avx512_12x32", PVC_ISA_AVX512, pvk_gemm_f32_avx512 },
#endif
};
const int pvk_gemm_f32_nvariants = (int)PVC_COUNTOF(pvk_gemm_f32_variants);

static const pvk_gemm_variant *selected;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

static void select_variant(void)
{
    pvc_isa isa = pvc_isa_selected();
    selected = &pvk_gemm_f32_variants[0];
    for (int i = 0; i < pvk_gemm_f32_nvariants; i++)
        if (pvk_gemm_f32_variants[i].isa <= isa) selected = &pvk_gemm_f32_variants[i];
}

const pvk_gemm_variant *pvk_gemm_f32_selected(void)
{
    pthread_once(&select_once, select_variant);
    return selected;
}

void pvk_gemm_f32(pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, bool trans_a,
                  const float *B, int64_t ldb, bool trans_b,
                  float *C, int64_t ldc, float alpha, float beta)
{
    pvk_gemm_f32_selected()->fn(pool, M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc, alpha, beta);
}
