/* Blocked f32 GEMM driver for the SIMD variants (plain C, compiled without ISA flags; the ISA
 * code is behind the pvk_gemm_ukernel function pointers, one call per micro-tile).
 *
 * Loop nest for one piece of work (rows [m0, m0+mc) of C, columns [n0, n1)):
 *   for each column chunk (C chunk <= C_CHUNK_BYTES):            C stays in L2 across K slices
 *     for each K slice (kc):      pack op(A) mc x kc  -> apack     L2, reused over the chunk
 *       for each nb columns:      pack op(B) kc x nb  -> bpack     L1, reused over the mc rows
 *         for each NR panel, each MR rows: micro-kernel into C[MR x NR]
 * so a B micro-panel stays in L1 while the A micro-panels stream from L2; while the kernels of
 * one B block run they prefetch the source of the next one (see b_prefetch).
 * Blocking for a 48 KiB L1d / 2 MiB L2 core (AVX-512: kc 256, mc 192, nb 32): the B micro-panel
 * is kc*NR*4 = 32 KiB of L1, an A micro-panel 12 KiB; the A block 192 KiB and the C chunk
 * 512 KiB of L2. Alternatives measured on the shapes of bench/gemm_bench.c (kc 128/192/320, mc
 * 96/144/264, nb 64/128, C chunks of 256 KiB/1 MiB or none) all stayed within the noise of the
 * shared 2-vCPU dev box (+-5%), except kc 128, lower on the ViT shapes. The C chunks are kept
 * on the byte count: without them the BEV shapes move C through L3 once per K slice, as many
 * bytes as B itself.
 *
 * Work split: C is cut into M blocks of at most uk->mc rows; the (M block, NR panel) units are
 * laid out M-block-major and cut into equal slices, a multiple of the thread count and at least
 * SLICE_MIN_COLS wide, that the pool hands out dynamically (on a shared box one thread is often
 * slowed by a neighbour: equal static halves left the other waiting). A thread packs each A
 * block once per K slice and C chunk of the run of slices it takes. Threads write disjoint
 * parts of C; the K summation order (slices of kc, each in k order) does not depend on the
 * thread count, so results are bit-identical across pools.
 *
 * Packing buffers live on the stack of whichever thread runs the slice: 280 KiB
 * (PVK_GEMM_APACK_FLOATS + PVK_GEMM_BPACK_FLOATS floats). Thread-local static storage was
 * rejected: glibc carves the static TLS block of an executable out of every thread's stack,
 * so 280 KiB of TLS would tax every thread of the host process and make pthread_create fail
 * (EINVAL) for user threads created with small stacks; a dlopen'ed build would malloc it
 * behind the allocator hook. Pool workers (pthread or libgomp) run on default 8 MiB stacks
 * here; tests/unit/test_gemm_simd.c checks they have >= 1 MiB and runs every variant on a
 * thread with a 512 KiB stack. */
#include "kernels/x86/gemm_f32.h"

#include <assert.h>
#include <string.h>

enum {
    C_CHUNK_BYTES = 512 * 1024,   /* of the 2 MiB L2: C chunk + A block + B panels + slack */
    SLICE_MIN_COLS = 512,         /* A packing is ~2% of a slice's time at this width */
};

typedef struct blk_job {
    const pvk_gemm_ukernel *uk;
    int64_t M, N, K;
    const float *A; int64_t lda; bool ta;
    const float *B; int64_t ldb; bool tb;
    float *C; int64_t ldc;
    float alpha, beta;
    int64_t mcb, nmb;      /* rows per M block, number of M blocks */
    int64_t npan;          /* NR panels across N */
    int64_t kc;            /* K slice */
    int64_t slices;
    int64_t next;          /* the next slice to hand out (gemm_worker) */
} blk_job;

/* Prefetching the next B panel's source: its rows are far apart (one row per k when B is not
 * transposed): too many streams for the hardware prefetchers, and packing straight from
 * DRAM stalls on every line. The lines are handed out to the micro-kernel calls of the current
 * panel, which spread them over their k loops (a burst would fill the line-fill buffers and
 * stall the kernel's own loads). Measured on 192x3840x1280: 77% -> 84% of the FMA peak, where
 * prefetching the whole next panel before its kernels (a burst) gained nothing. */
typedef struct b_prefetch {
    pvk_gemm_prefetch all;    /* the whole next panel */
    int64_t next, per_call;   /* rows handed out so far, rows per micro-kernel call */
} b_prefetch;

static void b_prefetch_init(b_prefetch *pf, const blk_job *j, int64_t k0, int64_t kc, int64_t n, int64_t nc,
                            int64_t calls)
{
    const float *first;
    size_t bytes;
    if (!j->tb) {
        first = j->B + k0 * j->ldb + n;
        pf->all.rows = (int)kc;
        bytes = (size_t)nc * sizeof(float);
    } else {
        first = j->B + n * j->ldb + k0;
        pf->all.rows = (int)nc;
        bytes = (size_t)kc * sizeof(float);
    }
    pf->all.base = (const char *)first;
    pf->all.stride = j->ldb * (int64_t)sizeof(float);
    /* The lines of a row as the first row falls, and one more: three ascending lines per row
     * also wake the L2 streamer, which then runs ahead along the rows on its own (measured:
     * +2-7% on the ViT and BEV shapes over the exact line count). */
    pf->all.lines = (int)(((uintptr_t)first % 64 + bytes + 63) / 64) + 1;
    pf->next = 0;
    pf->per_call = (pf->all.rows + calls - 1) / calls;
}

/* The next micro-kernel call's share. */
static pvk_gemm_prefetch b_prefetch_take(b_prefetch *pf)
{
    pvk_gemm_prefetch p = pf->all;
    if (p.base) p.base += pf->next * p.stride;   /* no prefetch: NULL + 0 is UB (clang UBSan) */
    p.rows = (int)PVC_MAX(0, PVC_MIN(pf->per_call, pf->all.rows - pf->next));
    pf->next += p.rows;
    return p;
}

/* Rows [m0, m0+mc) x columns [n0, n1) of C, all of K, in column chunks whose C block fits in
 * L2 (C_CHUNK_BYTES): every K slice revisits the chunk's C, which would otherwise go to L3
 * and back once per slice (for the BEV conv shapes as many bytes as B itself). Each chunk
 * repacks its A block per K slice, about 1% of the chunk's FMAs. */
static void gemm_piece(const blk_job *j, int64_t m0, int64_t mc, int64_t n0, int64_t n1,
                       float *restrict apack, float *restrict bpack)
{
    const pvk_gemm_ukernel *uk = j->uk;
    const int mr = uk->mr, nr = uk->nr, nb = uk->nb;
    int64_t tiles = (mc + mr - 1) / mr;
    int64_t chunk = PVC_MAX(nb, C_CHUNK_BYTES / ((int64_t)sizeof(float) * mc) / nb * nb);
    for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
        int64_t c1 = PVC_MIN(n1, c0 + chunk);
        for (int64_t k0 = 0; k0 < j->K; k0 += j->kc) {
            int64_t kc = PVC_MIN(j->kc, j->K - k0);
            bool overwrite = k0 == 0 && j->beta == 0.0f;
            uk->pack_a(j->A, j->lda, j->ta, m0, mc, k0, kc, apack);
            for (int64_t n = c0; n < c1; n += nb) {
                int64_t ncols = PVC_MIN(nb, c1 - n);
                uk->pack_b(j->B, j->ldb, j->tb, k0, kc, n, ncols, bpack);
                /* The block packed next: further columns, else the next K slice's first, else
                 * the next chunk's first. */
                int64_t calls = tiles * ((ncols + nr - 1) / nr);
                b_prefetch pf = { { NULL, 0, 0, 0 }, 0, 0 };
                if (n + nb < c1)
                    b_prefetch_init(&pf, j, k0, kc, n + nb, PVC_MIN(nb, c1 - n - nb), calls);
                else if (k0 + kc < j->K)
                    b_prefetch_init(&pf, j, k0 + kc, PVC_MIN(j->kc, j->K - k0 - kc), c0, PVC_MIN(nb, c1 - c0), calls);
                else if (c1 < n1)
                    b_prefetch_init(&pf, j, 0, PVC_MIN(j->kc, j->K), c1, PVC_MIN(nb, n1 - c1), calls);
                for (int64_t q = 0; q < ncols; q += nr) {
                    float *c = j->C + m0 * j->ldc + n + q;
                    int nc = (int)PVC_MIN(nr, ncols - q);
                    for (int64_t i = 0; i < mc; i += mr) {
                        pvk_gemm_prefetch share = b_prefetch_take(&pf);
                        uk->kernel(kc, apack + i * kc, bpack + q * kc, c + i * j->ldc, j->ldc, (int)PVC_MIN(mr, mc - i),
                                   nc, j->alpha, overwrite, &share);
                    }
                }
            }
        }
    }
}

/* One slice: its units form one contiguous run, done as one piece per M block. */
static void gemm_slice(const blk_job *j, int64_t s, float *apack, float *bpack)
{
    int64_t units = j->nmb * j->npan, nr = j->uk->nr;
    int64_t u = units * s / j->slices, ue = units * (s + 1) / j->slices;
    while (u < ue) {
        int64_t mb = u / j->npan, p0 = u % j->npan, p1 = PVC_MIN(j->npan, p0 + (ue - u));
        int64_t m0 = mb * j->mcb;
        gemm_piece(j, m0, PVC_MIN(j->mcb, j->M - m0), p0 * nr, PVC_MIN(p1 * nr, j->N), apack, bpack);
        u += p1 - p0;
    }
}

/* Each pool thread takes slices one at a time from the job's counter (the pool's own chunks,
 * ~4 per thread, would pair slices unevenly: 10 slices as 5 chunks of 2 on 2 threads). */
static void gemm_worker(void *ctx, int64_t begin, int64_t end, int tid)
{
    blk_job *j = ctx;
    (void)tid;
    _Alignas(64) float apack[PVK_GEMM_APACK_FLOATS];
    _Alignas(64) float bpack[PVK_GEMM_BPACK_FLOATS];
    for (int64_t w = begin; w < end; w++)
        for (int64_t s; (s = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->slices;) gemm_slice(j, s, apack, bpack);
}

void pvk_gemm_f32_blocked(const pvk_gemm_ukernel *uk, pvc_pool *pool, int64_t M, int64_t N, int64_t K,
                          const float *A, int64_t lda, bool trans_a,
                          const float *B, int64_t ldb, bool trans_b,
                          float *C, int64_t ldc, float alpha, float beta)
{
    assert(uk->mc % uk->mr == 0 && uk->nb % uk->nr == 0 && (int64_t)uk->mc * uk->kc <= PVK_GEMM_APACK_FLOATS
           && (int64_t)uk->kc * uk->nb <= PVK_GEMM_BPACK_FLOATS);
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {   /* empty sum: C = beta * C */
        if (beta == 0.0f)
            for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    blk_job j = { .uk = uk, .M = M, .N = N, .K = K, .A = A, .lda = lda, .ta = trans_a,
                  .B = B, .ldb = ldb, .tb = trans_b, .C = C, .ldc = ldc, .alpha = alpha, .beta = beta };
    /* Equal M blocks, rounded up to whole micro-panels so only the last block has a short one. */
    j.nmb = (M + uk->mc - 1) / uk->mc;
    j.mcb = (M + j.nmb - 1) / j.nmb;
    j.mcb = (j.mcb + uk->mr - 1) / uk->mr * uk->mr;
    j.nmb = (M + j.mcb - 1) / j.mcb;
    j.npan = (N + uk->nr - 1) / uk->nr;
    /* Equal K slices, a multiple of 8 long, so the last one is not a short remainder. */
    int64_t nks = (K + uk->kc - 1) / uk->kc;
    j.kc = ((K + nks - 1) / nks + 7) / 8 * 8;
    /* Below ~8 MFLOP (~25 us on one AVX-512 core) waking the pool costs about what it saves. */
    if ((double)M * (double)N * (double)K < 4e6) pool = NULL;
    /* Slices: a multiple of the thread count, each at least SLICE_MIN_COLS wide (every slice
     * packs its own A blocks), handed out dynamically by the pool so a thread slowed by a
     * neighbour takes fewer. One thread: one slice. */
    int64_t threads = pvc_pool_threads(pool), units = j.nmb * j.npan;
    int64_t per_thread = units / (threads * PVC_MAX(1, SLICE_MIN_COLS / uk->nr));
    j.slices = PVC_MIN(units, threads * PVC_MAX(1, PVC_MIN(per_thread, 16)));
    pvc_parallel_for(pool, PVC_MIN(threads, j.slices), 1, gemm_worker, &j);
}
