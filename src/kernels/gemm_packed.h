/* GEMM with constant, pre-packed weights: C[M,N] = A[M,K] * B' (+ beta*C) (+ bias[N]), then a
 * fused activation, where B' = alpha * op(B) is fixed when the object is made (MatMul and Gemm
 * with a constant B: linear layers). B' is packed ONCE, at create, into the B-panel layout of
 * the micro-kernel the object runs, so a run only packs A (per thread, per K slice) and never
 * touches the original B again. Prefix pvk_gemm_packed_.
 *
 * Variants (pvk_gemm_packed_variants, lowest isa first; fp32 and bf16 ones):
 *   ref_f32      scalar  fp32  B' kept plain (K x N row-major); runs pvk_gemm_f32_ref: the oracle
 *   ref_bf16     scalar  bf16  B' rounded to bf16, kept plain (K x N uint16); runs
 *                              pvk_gemm_bf16_ref: the bf16 oracle
 *   avx2_6x16    avx2    fp32  6x16 micro-kernel of x86/gemm_f32_avx2.c
 *   avx512_12x32 avx512  fp32  12x32 micro-kernel of x86/gemm_f32_avx512.c
 *   avx512bf16_12x32 avx512_bf16 bf16  vdpbf16ps 12x32 micro-kernel (x86/gemm_bf16_avx512bf16.c)
 *
 * Packed B layout of the SIMD variants (NR = the micro-kernel's column count, 16 or 32):
 *   fp32: B' cut into ceil(N / NR) column panels of NR columns; panel q (columns q*NR ..
 *         q*NR+NR-1) is K*NR contiguous floats starting at q*K*NR; inside it, row k holds the
 *         NR values B'[k][q*NR + j], j = 0..NR-1. Columns past N are zero.
 *   bf16: K rounded up to even (Kp; the pad row is zero); panel q is Kp*NR contiguous bf16
 *         starting at q*Kp*NR; inside it, k-pair p (rows 2p, 2p+1) is 2*NR bf16 at p*2*NR,
 *         column j's two values adjacent: [2j] = bf16(B'[2p][j]), [2j+1] = bf16(B'[2p+1][j])
 *         (the operand order of vdpbf16ps). Columns past N are zero.
 *   The panel base is 64-byte aligned. A K slice [k0, k0+kc) of panel q is the contiguous run
 *   at offset k0*NR elements of the panel (k0 even for bf16), so the micro-kernel reads B
 *   straight from the packed weights: no B copy at run time.
 * A is packed per run, per thread, into the micro-kernel's A layout (MR-row micro-panels; for
 * bf16 each row's k-pair rounded to two bf16 in one 32-bit word, zero pad past K).
 *
 * bf16 rounding (kernel and oracle alike): round to nearest even, NaN stays NaN, denormal
 * inputs flush to signed zero (what vcvtne2ps2bf16 does); products are exact in fp32 and sums
 * are fp32 in the kernel (float64 in the oracle). Results are fp32.
 *
 * Work split (SIMD variants): C is cut into M blocks (<= the kernel's mc rows) x column panels,
 * laid out M-block-major and dealt to the pool's threads in contiguous slices (dynamically: on
 * a shared machine a thread slowed by a neighbour takes less). For skinny M (one M block) this
 * splits N across threads; every thread packs its A block once per K slice of its slice. The K
 * summation order does not depend on the thread count: results are bit-identical across pools.
 * Packing buffers live on the running thread's stack (<= 280 KiB, as pvk_gemm_f32). */
#ifndef PVK_GEMM_PACKED_H
#define PVK_GEMM_PACKED_H

#include "kernels/kernels.h"
#include "kernels/x86/gemm_f32.h"   /* pvk_gemm_prefetch (plain C) */

typedef struct pvk_gemm_pk pvk_gemm_pk;   /* a SIMD variant's kernels (x86/gemm_f32.h) */

typedef struct pvk_gemm_packed_variant {
    const char        *name;
    pvc_isa            isa;        /* required instruction set */
    pvc_precision      precision;
    const pvk_gemm_pk *pk;         /* NULL for the reference variants */
} pvk_gemm_packed_variant;
extern const pvk_gemm_packed_variant pvk_gemm_packed_variants[];
extern const int pvk_gemm_packed_nvariants;
/* The variant create picks for a precision: the last one of that precision whose isa <=
 * pvc_isa_selected(); BF16 with no bf16 variant above the reference: the fp32 pick (a plan
 * asks for BF16 only on CPUs with AVX512_BF16; a slow oracle is no fallback for a model). */
const pvk_gemm_packed_variant *pvk_gemm_packed_select(pvc_precision precision);

typedef struct pvk_gemm_packed pvk_gemm_packed;

/* Packs B' = alpha * op(B), op(B) [K, N]: B is K x N (row stride ldb >= N) or, with trans_b,
 * N x K (ldb >= K). variant NULL: pvk_gemm_packed_select(precision); else that variant (tests,
 * benches), which must be runnable here (isa <= pvc_isa_selected()). K, N >= 1.
 * Errors: PV_EINPUT naming the bad argument, PV_ENOMEM. */
pv_status pvk_gemm_packed_create(int64_t K, int64_t N, const float *B, int64_t ldb, bool trans_b,
                                 float alpha, pvc_precision precision,
                                 const pvk_gemm_packed_variant *variant, pvk_gemm_packed **out,
                                 pvc_msg *msg);
/* C[i][j] = act(A[i,:] . B'[:, j] + beta * C[i][j] + bias[j]) for i < M, j < N. A: M x K, row
 * stride lda >= K; C row stride ldc >= N; C must not overlap A. beta 0 (C not read: may hold
 * NaN) or 1; bias may be NULL; act may be NULL (none). M = 0: nothing. pool may be NULL. Only C's
 * M x N block is written. Several runs of one object may go on at once (it is read-only). */
void pvk_gemm_packed_run(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                         float *C, int64_t ldc, float beta, const float *bias, const pvg_act *act);
/* What a run does to C after the product, per C chunk (rows of an M block x <= 512 KiB of
 * columns) right after its last K slice, while the chunk is in L2, in this order:
 *   C = act(A B' + beta C + bias);  C = map(C);  C += residual
 * bias [N] or NULL; act NULL or none: nothing; map: an in-place row function such as the GELU
 * of kernels/ref/eltwise_simd.h (y may equal x), or NULL; residual [M, N] with row stride ldr,
 * or NULL; it must not overlap C. The linear layers of transformers: bias + GELU (MLP up), bias
 * + residual (projections, MLP down). */
typedef void (*pvk_gemm_map_fn)(const float *x, float *y, int64_t n);
typedef struct pvk_gemm_epilogue {
    const float    *bias;
    const pvg_act  *act;
    pvk_gemm_map_fn map;
    const float    *residual;
    int64_t         ldr;
} pvk_gemm_epilogue;
/* pvk_gemm_packed_run with an epilogue (NULL: none). */
void pvk_gemm_packed_run_ep(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                            float *C, int64_t ldc, float beta, const pvk_gemm_epilogue *ep);
/* Workspace for a run of M rows that packs A once, shared by all threads (without it every
 * thread packs its A block again for each slice of C it takes): bytes, 0 when the variant does
 * not use one (the oracles) or it would exceed 64 MiB. */
size_t pvk_gemm_packed_ws_bytes(const pvk_gemm_packed *g, int64_t M);
/* pvk_gemm_packed_run_ep with ws: NULL, or 64-byte aligned and pvk_gemm_packed_ws_bytes(g, M)
 * bytes (nothing else may use it during the run). Results are bit-identical with and without.
 * trans_a: A is given transposed, K x M with row stride lda >= M (A[k * lda + m] is row m's
 * k-th value), e.g. an NCHW activation's pixels as rows; same results as the row-major A. */
void pvk_gemm_packed_run_ws(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                            bool trans_a, float *C, int64_t ldc, float beta, const pvk_gemm_epilogue *ep, void *ws);
/* Objects are reference counted: create gives one reference, retain adds one (returns g), free
 * drops one and releases the packed weights with the last (plans of one graph that share a
 * layer's weights each hold a reference). */
pvk_gemm_packed *pvk_gemm_packed_retain(pvk_gemm_packed *g);
void pvk_gemm_packed_free(pvk_gemm_packed *g);                 /* accepts NULL */
const char *pvk_gemm_packed_name(const pvk_gemm_packed *g);    /* the variant's name */
pvc_precision pvk_gemm_packed_precision(const pvk_gemm_packed *g);
int64_t pvk_gemm_packed_k(const pvk_gemm_packed *g);
int64_t pvk_gemm_packed_n(const pvk_gemm_packed *g);
size_t  pvk_gemm_packed_bytes(const pvk_gemm_packed *g);       /* packed weight bytes */

/* The bf16 oracle: C = A~ * B~ (+ beta*C), A~/B~ = A/op(B) rounded by pvk_bf16_round, summed in
 * float64, stored as fp32. beta 0 or 1. Plain C, parallel over rows of C. */
void pvk_gemm_bf16_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                       const float *B, int64_t ldb, bool trans_b, float *C, int64_t ldc, float beta);
/* f32 -> bf16 bits: round to nearest even, NaN kept (quiet), denormals to signed zero. */
uint16_t pvk_bf16_round(float f);

/* ---- for the SIMD variants (x86/gemm_*.c implement these, ref/gemm_packed.c drives them) ---- */
struct pvk_gemm_pk {
    int mr, nr;        /* micro-tile rows x columns */
    int kstep;         /* 1: fp32, one k per packed row; 2: bf16, k-pairs */
    int esize;         /* bytes per packed element of A and B (4 or 2) */
    int mc, kc;        /* A block rows (multiple of mr), K slice (multiple of 8) */
    /* A[m0 : m0+mc, k0 : k0+kc] (A row-major, stride lda) as mr-row micro-panels: panel i
     * starts at byte i * mr * kcp * esize (kcp = kc rounded up to kstep) and holds, per k (per
     * k-pair for bf16), the mr rows' values; rows past mc and the k pad are zero. */
    void (*pack_a)(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                   void *restrict dst);
    /* The same layout from A given transposed: op(A)[m][k] = A[k * lda + m] (A is K x M). */
    void (*pack_at)(const float *A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                    void *restrict dst);
    /* One A micro-panel times one B panel slice (layout above) over kc; merges the mr x nr
     * valid corner into C: C = acc when overwrite (C not read), else C += acc. Prefetches its
     * share pf of the next B slice into L2 while it runs (pvk_pf_* of x86/gemm_f32.h). */
    void (*kernel)(int64_t kc, const void *restrict a, const void *restrict b, float *restrict c,
                   int64_t ldc, int mr, int nr, bool overwrite, const pvk_gemm_prefetch *pf);
};
extern const pvk_gemm_pk pvk_gemm_pk_f32_avx2, pvk_gemm_pk_f32_avx512, pvk_gemm_pk_bf16_avx512bf16;
/* Stack room for one packed A block, bytes: mc * kc * esize of every variant fits. */
enum { PVK_GEMM_PK_APACK_BYTES = 192 * 320 * 4 };

#endif
