/* GEMM with pre-packed constant B (see kernels/gemm_packed.h): the object, B packing (plain C,
 * once per object), the reference variants (fp32 and bf16 oracles) and the blocked driver that
 * runs the SIMD variants' micro-kernels (plain C: the ISA code is behind pvk_gemm_pk).
 *
 * Driver loop nest for one piece of work (rows [m0, m0+mc) of C, columns [n0, n1)):
 *   for each column chunk (C chunk <= C_CHUNK_BYTES):            C stays in L2 across K slices
 *     for each K slice (kc):      pack A mc x kc -> apack          L2, reused over the chunk
 *       for each NR panel:        B slice kc x NR read in place    L1, reused over the mc rows
 *         for each MR rows: micro-kernel into C[MR x NR]
 *     epilogue (bias, activation, map, residual) on the chunk's mc rows (in L2)
 * It is gemm_f32_blocked.c's nest without the B packing: the packed panels are what that
 * driver packs per run (kc x NR, NR floats per k). */
#include "kernels/gemm_packed.h"

#include <string.h>

/* Measured on the ViT-H shapes at 2 threads (Xeon, 2026-11-30, each run paired back to back
 * with the baseline, medians of 41 pairs): K slices of 64/96/128 lose 28/19/11 % on
 * 192x1280x5120 and 13/7/2 % on 192x3840x1280 (a fixed cost per micro-kernel call, C merge and
 * call, fits ~450 and ~150 cycles); 320 is within the noise. Within +-2 %: C chunks of 256 KiB
 * or 1 MiB; 2 slices (contiguous halves) instead of 6; 96-row M halves walking the same panels;
 * huge pages for the packed B; k unrolled 4x. C prefetched late or not at all: -2..-4 %; no B
 * prefetch: -15..-20 %. B cold (from DRAM) runs as fast as B from L3: not bandwidth bound. */
enum {
    C_CHUNK_BYTES = 512 * 1024,   /* of a 2 MiB L2: C chunk + A block + B panel + slack */
    SLICE_MIN_COLS = 512,         /* A packing is ~2% of a slice's time at this width; with A
                                   * packed once, narrower slices re-read A (L3) more often
                                   * (K 5120: 128 columns measured -15 %) */
    PF_ROW = 512,                 /* prefetch shares: runs of 8 lines */
    TAKE_MIN_COLS = 128,          /* with A packed once: the smallest take (pk_worker) */
};
/* A packed once needs this much workspace at most; above it (M x K of ~16M floats) a run packs
 * per slice as without a workspace. */
#define PACKED_A_MAX_BYTES (64.0 * 1024 * 1024)

struct pvk_gemm_packed {
    const pvk_gemm_packed_variant *v;
    int64_t K, N;
    int64_t kp;           /* K rounded up to the variant's kstep */
    int64_t npan;         /* column panels (SIMD) */
    size_t  panel_bytes;  /* one panel: kp * nr * esize */
    size_t  bytes;
    void   *data;         /* packed B' (64-byte aligned, owned) */
    int     refs;         /* owners (pvk_gemm_packed_retain); freed when the last one lets go */
};

const pvk_gemm_packed_variant pvk_gemm_packed_variants[] = {
    { "ref_f32", PVC_ISA_SCALAR, PVC_PREC_FP32, NULL },
    { "ref_bf16", PVC_ISA_SCALAR, PVC_PREC_BF16, NULL },
#if defined(__x86_64__)   /* x86/ files are built on x86-64 only */
    { "avx2_6x16", PVC_ISA_AVX2, PVC_PREC_FP32, &pvk_gemm_pk_f32_avx2 },
    { "avx512_12x32", PVC_ISA_AVX512, PVC_PREC_FP32, &pvk_gemm_pk_f32_avx512 },
    { "avx512bf16_12x32", PVC_ISA_AVX512_BF16, PVC_PREC_BF16, &pvk_gemm_pk_bf16_avx512bf16 },
#endif
};
const int pvk_gemm_packed_nvariants = (int)PVC_COUNTOF(pvk_gemm_packed_variants);

const pvk_gemm_packed_variant *pvk_gemm_packed_select(pvc_precision precision)
{
    pvc_isa isa = pvc_isa_selected();
    const pvk_gemm_packed_variant *best = NULL, *f32 = &pvk_gemm_packed_variants[0];
    for (int i = 0; i < pvk_gemm_packed_nvariants; i++) {
        const pvk_gemm_packed_variant *v = &pvk_gemm_packed_variants[i];
        if (v->isa > isa) continue;
        if (v->precision == PVC_PREC_FP32) f32 = v;
        if (v->precision == precision) best = v;
    }
    return best && (precision == PVC_PREC_FP32 || best->pk) ? best : f32;
}

/* ---- bf16 rounding and the bf16 oracle ------------------------------------------------------ */

uint16_t pvk_bf16_round(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t mag = x & 0x7fffffffu;
    if (mag < 0x00800000u) return (uint16_t)((x >> 16) & 0x8000u);        /* zero, denormal */
    if (mag > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);          /* NaN: quiet */
    if (mag == 0x7f800000u) return (uint16_t)(x >> 16);                   /* infinity */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);            /* nearest even */
}

static float bf16_value(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

typedef struct bf16_job {
    int64_t N, K;
    const float *A; int64_t ars, acs;   /* A[i][k] at i * ars + k * acs */
    const uint16_t *B;        /* op(B) rounded, K x N row-major */
    float *C; int64_t ldc;
    float beta;
} bf16_job;

static void bf16_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const bf16_job *j = ctx;
    (void)tid;
    double acc[256];
    float arow[256];
    for (int64_t i = begin; i < end; i++) {
        float *c = j->C + i * j->ldc;
        for (int64_t n0 = 0; n0 < j->N; n0 += 256) {
            int64_t nn = PVC_MIN(256, j->N - n0);
            for (int64_t n = 0; n < nn; n++) acc[n] = 0.0;
            for (int64_t k0 = 0; k0 < j->K; k0 += 256) {
                int64_t kk = PVC_MIN(256, j->K - k0);
                for (int64_t k = 0; k < kk; k++) arow[k] = bf16_value(pvk_bf16_round(j->A[i * j->ars + (k0 + k) * j->acs]));
                for (int64_t k = 0; k < kk; k++) {
                    const uint16_t *b = j->B + (k0 + k) * j->N + n0;
                    double a = arow[k];
                    for (int64_t n = 0; n < nn; n++) acc[n] += a * bf16_value(b[n]);
                }
            }
            for (int64_t n = 0; n < nn; n++)
                c[n0 + n] = (float)(acc[n] + (j->beta != 0.0f ? (double)c[n0 + n] : 0.0));
        }
    }
}

static void bf16_ref_plain(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                           bool trans_a, const uint16_t *B, float *C, int64_t ldc, float beta)
{
    bf16_job j = { N, K, A, trans_a ? 1 : lda, trans_a ? lda : 1, B, C, ldc, beta };
    pvc_parallel_for((double)M * (double)N * (double)K < 1e6 ? NULL : pool, M, 1, bf16_rows, &j);
}

void pvk_gemm_bf16_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                       const float *B, int64_t ldb, bool trans_b, float *C, int64_t ldc, float beta)
{
    if (M <= 0 || N <= 0) return;
    uint16_t *b = pvc_malloc((size_t)(K * N + 1) * sizeof(uint16_t));
    if (!b) {   /* an oracle for tests: no status to return, so no partial answer either */
        for (int64_t i = 0; i < M; i++)
            for (int64_t n = 0; n < N; n++) C[i * ldc + n] = NAN;
        return;
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) b[k * N + n] = pvk_bf16_round(trans_b ? B[n * ldb + k] : B[k * ldb + n]);
    bf16_ref_plain(pool, M, N, K, A, lda, false, b, C, ldc, beta);
    pvc_free(b);
}

/* ---- create ---------------------------------------------------------------------------------- */

static float op_b(const float *B, int64_t ldb, bool trans, int64_t k, int64_t n)
{
    return trans ? B[n * ldb + k] : B[k * ldb + n];
}

/* B' into the variant's layout (gemm_packed.h). Loops run along B's rows so the source is read
 * in order; the destination of one panel stays in L2. */
static void pack_b(pvk_gemm_packed *g, const float *B, int64_t ldb, bool trans, float alpha)
{
    const pvk_gemm_pk *pk = g->v->pk;
    int64_t K = g->K, N = g->N;
    if (!pk) {
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++) {
                float v = alpha * op_b(B, ldb, trans, k, n);
                if (g->v->precision == PVC_PREC_BF16) ((uint16_t *)g->data)[k * N + n] = pvk_bf16_round(v);
                else ((float *)g->data)[k * N + n] = v;
            }
        return;
    }
    memset(g->data, 0, g->bytes);   /* pad columns and the bf16 pad row */
    int64_t nr = pk->nr;
    for (int64_t q = 0; q < g->npan; q++) {
        char *panel = (char *)g->data + (size_t)q * g->panel_bytes;
        int64_t cols = PVC_MIN(nr, N - q * nr);
        for (int64_t a = 0; a < (trans ? cols : K); a++)        /* a: a row of the stored B */
            for (int64_t b = 0; b < (trans ? K : cols); b++) {
                int64_t k = trans ? b : a, j = trans ? a : b;
                float v = alpha * op_b(B, ldb, trans, k, q * nr + j);
                if (pk->kstep == 1) ((float *)panel)[k * nr + j] = v;
                else ((uint16_t *)panel)[(k / 2) * 2 * nr + 2 * j + (k & 1)] = pvk_bf16_round(v);
            }
    }
}

pv_status pvk_gemm_packed_create(int64_t K, int64_t N, const float *B, int64_t ldb, bool trans_b,
                                 float alpha, pvc_precision precision,
                                 const pvk_gemm_packed_variant *variant, pvk_gemm_packed **out,
                                 pvc_msg *msg)
{
    *out = NULL;
    if (K < 1 || N < 1) return pvc_fail(msg, PV_EINPUT, "packed GEMM: K=%lld and N=%lld must be >= 1", (long long)K, (long long)N);
    if (!B) return pvc_fail(msg, PV_EINPUT, "packed GEMM: B is NULL");
    if (ldb < (trans_b ? K : N))
        return pvc_fail(msg, PV_EINPUT, "packed GEMM: ldb=%lld is below the row length %lld", (long long)ldb,
                        (long long)(trans_b ? K : N));
    if (precision != PVC_PREC_FP32 && precision != PVC_PREC_BF16)
        return pvc_fail(msg, PV_EINPUT, "packed GEMM: unknown precision %d", (int)precision);
    const pvk_gemm_packed_variant *v = variant ? variant : pvk_gemm_packed_select(precision);
    if (v->isa > pvc_isa_selected())
        return pvc_fail(msg, PV_EINPUT, "packed GEMM: variant '%s' needs %s, this CPU runs %s", v->name,
                        pvc_isa_name(v->isa), pvc_isa_name(pvc_isa_selected()));
    pvk_gemm_packed *g = pvc_calloc(1, sizeof *g);
    if (g) g->refs = 1;
    if (!g) return pvc_fail(msg, PV_ENOMEM, "out of memory for a packed GEMM");
    g->v = v;
    g->K = K;
    g->N = N;
    size_t esize = v->precision == PVC_PREC_BF16 ? 2 : 4;
    int64_t panel = 0, total = 0;
    bool big;
    if (v->pk) {
        g->kp = v->pk->kstep == 2 ? K + (K & 1) : K;
        g->npan = N / v->pk->nr + (N % v->pk->nr != 0);
        big = pvc_mul_overflow(g->kp, v->pk->nr * (int64_t)esize, &panel) || pvc_mul_overflow(panel, g->npan, &total);
        g->panel_bytes = (size_t)panel;
    } else {
        g->kp = K;
        big = pvc_mul_overflow(K, N, &total) || pvc_mul_overflow(total, (int64_t)esize, &total);
    }
    if (big || (uint64_t)total > SIZE_MAX / 2) {
        pvc_free(g);
        return pvc_fail(msg, PV_EINPUT, "packed GEMM: K=%lld x N=%lld is too large", (long long)K, (long long)N);
    }
    g->bytes = (size_t)total;
    g->data = pvc_malloc_aligned(g->bytes);
    if (!g->data) {
        pvc_free(g);
        return pvc_fail(msg, PV_ENOMEM, "out of memory packing a %lld x %lld GEMM weight", (long long)K, (long long)N);
    }
    pack_b(g, B, ldb, trans_b, alpha);
    *out = g;
    return PV_OK;
}

pvk_gemm_packed *pvk_gemm_packed_retain(pvk_gemm_packed *g)
{
    if (g) __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
    return g;
}

void pvk_gemm_packed_free(pvk_gemm_packed *g)
{
    if (!g) return;
    if (__atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    pvc_free_aligned(g->data);
    pvc_free(g);
}

const char *pvk_gemm_packed_name(const pvk_gemm_packed *g) { return g ? g->v->name : "none"; }
pvc_precision pvk_gemm_packed_precision(const pvk_gemm_packed *g) { return g->v->precision; }
int64_t pvk_gemm_packed_k(const pvk_gemm_packed *g) { return g->K; }
int64_t pvk_gemm_packed_n(const pvk_gemm_packed *g) { return g->N; }
size_t pvk_gemm_packed_bytes(const pvk_gemm_packed *g) { return g->bytes; }

/* ---- run -------------------------------------------------------------------------------------- */

/* Rows [m0, m0 + rows) x columns [n0, n0 + cols) of C, c pointing at the first (see
 * pvk_gemm_epilogue for the order). */
static void epilogue(float *c, int64_t ldc, int64_t m0, int64_t rows, int64_t n0, int64_t cols,
                     const pvk_gemm_epilogue *ep)
{
    const float *r = ep->residual ? ep->residual + m0 * ep->ldr + n0 : NULL;
    for (int64_t i = 0; i < rows; i++, c += ldc) {
        if (ep->bias)
            for (int64_t j = 0; j < cols; j++) c[j] += ep->bias[n0 + j];
        if (ep->act) pvk_act_apply(ep->act, c, cols);
        if (ep->map) ep->map(c, c, cols);
        if (r) {
            for (int64_t j = 0; j < cols; j++) c[j] += r[j];
            r += ep->ldr;
        }
    }
}

static bool epilogue_any(const pvk_gemm_epilogue *ep) { return ep->bias || ep->act || ep->map || ep->residual; }

typedef struct pk_job {
    const pvk_gemm_packed *g;
    const pvk_gemm_pk *pk;
    int64_t M;
    const float *A; int64_t lda;
    bool trans_a;         /* A given K x M (pack_at) */
    float *C; int64_t ldc;
    bool accumulate;
    pvk_gemm_epilogue ep;
    int64_t mcb, nmb;     /* rows per M block, M blocks */
    int64_t kc, nks;      /* K slice, slices of K */
    int64_t slices;       /* without apacked: equal slices handed out */
    int64_t min_take;     /* with apacked: the smallest take of units (pk_worker) */
    int64_t threads;
    int64_t next;         /* the next slice / unit to hand out (pk_worker) */
    char   *apacked;      /* all of A packed once (pvk_gemm_packed_run_ws), else NULL: per piece */
    size_t  ablock;       /* bytes of one packed (M block, K slice) in apacked */
} pk_job;

/* The blocking of a run over M rows: equal M blocks, rounded up to whole micro-panels; equal K
 * slices, a multiple of 8. pvk_gemm_packed_ws_bytes and the run must agree on it. */
static void pk_geometry(const pvk_gemm_packed *g, int64_t M, pk_job *j)
{
    const pvk_gemm_pk *pk = g->v->pk;
    j->nmb = (M + pk->mc - 1) / pk->mc;
    j->mcb = ((M + j->nmb - 1) / j->nmb + pk->mr - 1) / pk->mr * pk->mr;
    j->nmb = (M + j->mcb - 1) / j->mcb;
    j->nks = (g->K + pk->kc - 1) / pk->kc;
    j->kc = ((g->K + j->nks - 1) / j->nks + 7) / 8 * 8;
    j->nks = (g->K + j->kc - 1) / j->kc;
    int64_t kcp = (j->kc + pk->kstep - 1) / pk->kstep * pk->kstep;
    j->ablock = (size_t)(j->mcb * kcp * pk->esize + 63) / 64 * 64;
}

size_t pvk_gemm_packed_ws_bytes(const pvk_gemm_packed *g, int64_t M)
{
    if (!g || !g->v->pk || M <= 0) return 0;
    pk_job j = { .g = g };
    pk_geometry(g, M, &j);
    double bytes = (double)j.ablock * (double)j.nmb * (double)j.nks;
    return bytes > PACKED_A_MAX_BYTES ? 0 : (size_t)bytes;
}

static void pk_piece(const pk_job *j, int64_t m0, int64_t mc, int64_t n0, int64_t n1, void *apack)
{
    const pvk_gemm_pk *pk = j->pk;
    const pvk_gemm_packed *g = j->g;
    const int mr = pk->mr, nr = pk->nr;
    int64_t chunk = PVC_MAX(nr, C_CHUNK_BYTES / ((int64_t)sizeof(float) * mc) / nr * nr);
    for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
        int64_t c1 = PVC_MIN(n1, c0 + chunk);
        for (int64_t k0 = 0; k0 < g->K; k0 += j->kc) {
            int64_t kc = PVC_MIN(j->kc, g->K - k0);
            int64_t kcp = (kc + pk->kstep - 1) / pk->kstep * pk->kstep;
            bool overwrite = k0 == 0 && !j->accumulate;
            const char *ap = apack;
            if (j->apacked)
                ap = j->apacked + (size_t)((m0 / j->mcb) * j->nks + k0 / j->kc) * j->ablock;
            else
                (j->trans_a ? pk->pack_at : pk->pack_a)(j->A, j->lda, m0, mc, k0, kc, apack);
            int64_t calls = (mc + mr - 1) / mr;
            for (int64_t n = c0; n < c1; n += nr) {
                const char *b = (const char *)g->data + (size_t)(n / nr) * g->panel_bytes + (size_t)(k0 * nr * pk->esize);
                int nc = (int)PVC_MIN(nr, c1 - n);
                float *c = j->C + m0 * j->ldc + n;
                /* The slice used next (next panel, else the next K slice's first panel of the
                 * chunk) into L2, spread over this panel's calls: a stall per panel otherwise. */
                const char *next = NULL;
                if (n + nr < c1) next = b + g->panel_bytes;
                else if (k0 + kc < g->K) next = (const char *)g->data + (size_t)(c0 / nr) * g->panel_bytes + (size_t)((k0 + kc) * nr * pk->esize);
                int64_t next_kc = n + nr < c1 ? kc : PVC_MIN(j->kc, g->K - k0 - kc);
                int64_t rows = next ? ((next_kc + pk->kstep - 1) / pk->kstep * pk->kstep * nr * pk->esize + PF_ROW - 1) / PF_ROW : 0;
                int64_t per_call = (rows + calls - 1) / calls;
                for (int64_t i = 0, t = 0; i < mc; i += mr, t++) {
                    int64_t r0 = PVC_MIN(rows, t * per_call);
                    pvk_gemm_prefetch pf = { next ? next + r0 * PF_ROW : NULL, PF_ROW, (int)PVC_MIN(per_call, rows - r0), PF_ROW / 64 };
                    pk->kernel(kc, ap + (size_t)(i * kcp * pk->esize), b, c + i * j->ldc, j->ldc,
                               (int)PVC_MIN(mr, mc - i), nc, overwrite, &pf);
                }
            }
        }
        /* The epilogue over the whole chunk once its last K slice is done (its C is in L2): row
         * runs of the chunk's width. Per 32-column panel right after its last slice (in L1)
         * measured worse: bias + GELU -8 %, bias + residual -5..-10 % of the GEMM's rate on the
         * ViT-H shapes, more than the separate passes it replaces (short rows, strided R). */
        if (epilogue_any(&j->ep)) epilogue(j->C + m0 * j->ldc + c0, j->ldc, m0, mc, c0, c1 - c0, &j->ep);
    }
}

/* A contiguous run [u, ue) of (M block, panel) units, one piece per M block. */
static void pk_units(const pk_job *j, int64_t u, int64_t ue, void *apack)
{
    int64_t npan = j->g->npan, nr = j->pk->nr;
    while (u < ue) {
        int64_t mb = u / npan, p0 = u % npan, p1 = PVC_MIN(npan, p0 + (ue - u));
        int64_t m0 = mb * j->mcb;
        pk_piece(j, m0, PVC_MIN(j->mcb, j->M - m0), p0 * nr, PVC_MIN(p1 * nr, j->g->N), apack);
        u += p1 - p0;
    }
}

/* Each pool thread takes work from the job's counter until none is left. The pool's own
 * chunking is not used for this: it cuts n items into ~4 chunks per thread, so 10 slices became
 * 5 chunks of 2 and one of two threads did 3 of them (192x5120x1280 at 2 threads: 74 % of the
 * FMA peak, 89 % with the counter).
 * Without a workspace the counter hands out j->slices equal slices (each packs its own A
 * blocks, so they stay wide). With A packed once it hands out units guided: each take is the
 * remaining work over twice the thread count, at least min_take units, so the takes shrink
 * towards the end and a thread slowed by a neighbour holds up the others by a small take, not
 * by a slice of a fixed 1/slices of the GEMM (ViT-H's MLP-down at 2 threads had 2 slices: the
 * faster thread idled for whatever the slower one lost). */
static void pk_worker(void *ctx, int64_t begin, int64_t end, int tid)
{
    pk_job *j = ctx;
    (void)tid;
    _Alignas(64) unsigned char apack[PVK_GEMM_PK_APACK_BYTES];
    int64_t units = j->nmb * j->g->npan;
    for (int64_t w = begin; w < end; w++) {
        if (!j->apacked) {
            for (int64_t s; (s = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->slices;)
                pk_units(j, units * s / j->slices, units * (s + 1) / j->slices, apack);
            continue;
        }
        int64_t u = __atomic_load_n(&j->next, __ATOMIC_RELAXED), take;
        for (;;) {
            int64_t rem = units - u;
            if (rem <= 0) break;
            take = PVC_MIN(rem, PVC_MAX(j->min_take, rem / (2 * j->threads)));
            if (!__atomic_compare_exchange_n(&j->next, &u, u + take, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) continue;
            pk_units(j, u, u + take, apack);
            u = __atomic_load_n(&j->next, __ATOMIC_RELAXED);
        }
    }
}

void pvk_gemm_packed_run(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                         float *C, int64_t ldc, float beta, const float *bias, const pvg_act *act)
{
    pvk_gemm_epilogue ep = { bias, act, NULL, NULL, 0 };
    pvk_gemm_packed_run_ep(g, pool, M, A, lda, C, ldc, beta, &ep);
}

/* The pre-pass of a run with a workspace: unit u = (M block, K slice, micro-panel), packed into
 * its place in j->apacked (pack_a's layout is per micro-panel, so packing panels one at a time
 * gives the same bytes as packing the block at once). */
static void pk_prepack(void *ctx, int64_t begin, int64_t end, int tid)
{
    const pk_job *j = ctx;
    const pvk_gemm_pk *pk = j->pk;
    (void)tid;
    int64_t per_block = j->mcb / pk->mr;
    for (int64_t u = begin; u < end; u++) {
        int64_t blk = u / per_block, p = u % per_block, mb = blk / j->nks, ks = blk % j->nks;
        int64_t m0 = mb * j->mcb + p * pk->mr, k0 = ks * j->kc;
        if (m0 >= j->M) continue;
        int64_t kc = PVC_MIN(j->kc, j->g->K - k0), kcp = (kc + pk->kstep - 1) / pk->kstep * pk->kstep;
        char *dst = j->apacked + (size_t)blk * j->ablock + (size_t)(p * pk->mr * kcp * pk->esize);
        (j->trans_a ? pk->pack_at : pk->pack_a)(j->A, j->lda, m0, PVC_MIN(pk->mr, j->M - m0), k0, kc, dst);
    }
}

void pvk_gemm_packed_run_ep(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                            float *C, int64_t ldc, float beta, const pvk_gemm_epilogue *epi)
{
    pvk_gemm_packed_run_ws(g, pool, M, A, lda, false, C, ldc, beta, epi, NULL);
}

void pvk_gemm_packed_run_ws(const pvk_gemm_packed *g, pvc_pool *pool, int64_t M, const float *A, int64_t lda,
                            bool trans_a, float *C, int64_t ldc, float beta, const pvk_gemm_epilogue *epi, void *ws)
{
    if (M <= 0) return;
    pvk_gemm_epilogue ep = { 0 };
    if (epi) ep = *epi;
    if (ep.act && ep.act->kind == PVG_ACT_NONE) ep.act = NULL;
    const pvk_gemm_pk *pk = g->v->pk;
    if (!pk) {   /* the oracles, then the epilogue */
        if (g->v->precision == PVC_PREC_BF16)
            bf16_ref_plain(pool, M, g->N, g->K, A, lda, trans_a, g->data, C, ldc, beta);
        else
            pvk_gemm_f32_ref(pool, M, g->N, g->K, A, lda, trans_a, g->data, g->N, false, C, ldc, 1.0f, beta);
        if (epilogue_any(&ep)) epilogue(C, ldc, 0, M, 0, g->N, &ep);
        return;
    }
    pk_job j = { .g = g, .pk = pk, .M = M, .A = A, .lda = lda, .trans_a = trans_a, .C = C, .ldc = ldc, .accumulate = beta != 0.0f,
                 .ep = ep };
    pk_geometry(g, M, &j);
    /* Below ~4 MFLOP waking the pool costs about what it saves. */
    if ((double)M * (double)g->N * (double)g->K < 4e6) pool = NULL;
    int64_t threads = pvc_pool_threads(pool), units = j.nmb * g->npan;
    if (ws && pvk_gemm_packed_ws_bytes(g, M)) {
        /* A packed once for all slices (each slice packed its A block for itself otherwise). */
        j.apacked = ws;
        pvc_parallel_for(pool, j.nmb * j.nks * (j.mcb / pk->mr), 1, pk_prepack, &j);
    }
    int64_t per_thread = units / (threads * PVC_MAX(1, SLICE_MIN_COLS / pk->nr));
    j.slices = PVC_MIN(units, threads * PVC_MAX(1, PVC_MIN(per_thread, 16)));
    j.threads = threads;
    j.min_take = PVC_MAX(1, TAKE_MIN_COLS / pk->nr);
    pvc_parallel_for(pool, PVC_MIN(threads, j.apacked ? units : j.slices), 1, pk_worker, &j);
}
