/* Sparse convolution over a rulebook: gather - GEMM - scatter, output-stationary.
 *
 * The output rows are cut into blocks; a thread takes a block and runs every kernel offset
 * for it: per offset k, the pairs whose out_idx falls in the block are one contiguous run of
 * k's list (lists are sorted by out_idx, found by binary search); their input rows are
 * gathered into G, G x W[k] goes to Y through pvk_gemm_f32 (inline, no pool: the blocks are
 * the parallel work), and Y is added into the block's output rows. So each thread owns its
 * output rows outright (no atomics, no per-thread partial sums, no barrier between offsets),
 * the block stays in L2 across all K offsets, and the epilogue (bias, residual, ReLU) runs on
 * it while it is still there.
 * An offset that reaches every row of the block (the centre offset of a submanifold conv
 * always does) skips the scatter: its GEMM writes the block directly, and runs first with
 * beta 0 so the block needs no clearing; when its input rows are consecutive too (the centre
 * offset again) it also skips the gather.
 *
 * Alternatives measured on the levels of the real nuScenes 10-sweep frame: one offset at a
 * time with its pairs split over the threads (serial over k: the whole output streamed K
 * times, a barrier per offset) was 10-30% slower on one thread and several times slower on
 * two on the shared dev box (threads waiting at 27 barriers a conv); blocks run one after the
 * other with the GEMM threaded through the pool instead was 2-5x slower on the 128-channel
 * layers (the only ones whose GEMMs are big enough for pvk_gemm_f32 to split).
 *
 * Narrow layers (cin x cout <= DIRECT_MAX: BEVFusion's 4->16, 16->16, 16->32, 32->32, 32->64)
 * skip the gather and the GEMM: per offset, the direct kernel of kernels/spconv_pairs.h keeps
 * W[k] in registers and adds each pair's products straight into the block's rows (per busy
 * core on the 55k-site level set: 4->16 3.4-4x the GEMM path, 16->16 to 32->32 1.5-2.7x;
 * 64->64 equal, 64->128 20 % slower: the GEMMs there are big enough; BENCHMARKS.md, "sparse
 * encoder"). PERCEIVE_SPCONV_DIRECT=N sets the cin x cout limit (0: never), for A/B runs.
 * Wide layers at fp32 (W[k] not packed: 64->64, 64->128, 128->128) take the wide pairs kernel
 * the same way: six pairs at a time in register tiles, W[k] read from L1, no gather, pack or
 * scatter buffer (1.2-1.5x the gathered GEMM per core, BENCHMARKS.md "sparse encoder: wide
 * kernel"); packed W[k] (bf16) keep the gathered GEMMs. PERCEIVE_SPCONV_WIDE=0: never.
 *
 * Block rows: the block's G + Y buffers are sized to BLOCK_BYTES, so small channel counts get
 * long blocks (fewer, larger GEMM calls) and 128 channels 512 rows; shorter blocks when that
 * would make fewer than BLOCKS_MIN. The split depends only on the rulebook and the channels,
 * never on the pool, and each block sums in a fixed order: the output is bit-identical for
 * every thread count. */
#include "kernels/gemm_packed.h"
#include "kernels/kernels.h"
#include "kernels/spconv_pairs.h"
#include "sparse/sparse.h"

#include <stdlib.h>
#include <string.h>

enum {
    BLOCK_BYTES = 512 * 1024,   /* G + Y of one thread (128 KiB .. 2 MiB measured: within noise) */
    ROWS_MIN = 32,
    ROWS_MAX = 4096,
    DIRECT_MAX = 2048,          /* cin x cout up to this: the direct kernel */
    BLOCKS_MIN = 16,            /* blocks wanted at least, for the load balance (32: ~7% slower on 4k sites) */
};

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

static int64_t round16(int64_t r) { return (r + 15) / 16 * 16; }

/* Rows of the G / Y buffers the workspace holds per thread. */
static int64_t ws_rows(const pvs_rulebook *rb, const pvs_conv_desc *d)
{
    int64_t r = BLOCK_BYTES / (((int64_t)d->cin + d->cout) * (int64_t)sizeof(float));
    r = PVC_MAX(ROWS_MIN, PVC_MIN(ROWS_MAX, r)) / 16 * 16;
    if (rb) r = PVC_MIN(r, round16(PVC_MAX(rb->n_out, 1)));
    return r;
}

static size_t ws_thread_bytes(int64_t rows, const pvs_conv_desc *d)
{
    return al64((size_t)rows * (size_t)d->cin * sizeof(float)) + al64((size_t)rows * (size_t)d->cout * sizeof(float));
}

size_t pvs_conv_ws_bytes(const pvs_rulebook *rb, const pvs_conv_desc *d, int threads)
{
    if (!d || d->cin < 1 || d->cout < 1) return 0;
    if (threads < 1) threads = 1;
    return 64 + (size_t)threads * ws_thread_bytes(ws_rows(rb, d), d);
}

/* ---- pieces --------------------------------------------------------------------------------- */

/* First p in [lo, hi) with v[p] >= x (v ascending). */
static int64_t lower_bound(const int32_t *v, int64_t lo, int64_t hi, int32_t x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Inner loops of fixed length 8 so that -O2's cheap vectorizer takes them. */
static inline void row_copy(float *restrict dst, const float *restrict src, int64_t n)
{
    const int64_t n8 = n & ~(int64_t)7;
    for (int64_t c = 0; c < n8; c += 8)
        for (int j = 0; j < 8; j++) dst[c + j] = src[c + j];
    for (int64_t c = n8; c < n; c++) dst[c] = src[c];
}

static inline void row_add(float *restrict dst, const float *restrict src, int64_t n)
{
    const int64_t n8 = n & ~(int64_t)7;
    for (int64_t c = 0; c < n8; c += 8)
        for (int j = 0; j < 8; j++) dst[c + j] += src[c + j];
    for (int64_t c = n8; c < n; c++) dst[c] += src[c];
}

/* NaN -> 0, as in the reference (a compare-and-mask, no branch per value) */
static void row_relu(float *o, int64_t n)
{
    const int64_t n8 = n & ~(int64_t)7;
    for (int64_t c = 0; c < n8; c += 8)
        for (int j = 0; j < 8; j++) o[c + j] = o[c + j] > 0.0f ? o[c + j] : 0.0f;
    for (int64_t c = n8; c < n; c++) o[c] = o[c] > 0.0f ? o[c] : 0.0f;
}

/* The row loops of gather and scatter with the channel count a constant for the BEVFusion
 * widths: fully unrolled moves instead of a memcpy call or a counted loop per 64-byte row
 * (measured: the two took ~40% of a 16-channel conv). */
#define PVS_CHANNEL_CASES(n, CALL) \
    switch (n) {                   \
    case 16: CALL(16); break;      \
    case 32: CALL(32); break;      \
    case 64: CALL(64); break;      \
    case 128: CALL(128); break;    \
    default: CALL(n); break;       \
    }

static void gather(float *restrict g, const float *restrict in, const int32_t *idx, int64_t rows, int64_t cin)
{
#define GATHER(C)                                                                                   \
    for (int64_t m = 0; m < rows; m++) row_copy(g + m * (C), in + (int64_t)idx[m] * (C), (C))
    PVS_CHANNEL_CASES(cin, GATHER)
#undef GATHER
}

/* acc rows out_idx[m] - a += Y rows m */
static void scatter_add(float *restrict acc, const float *restrict y, const int32_t *oi, int64_t a, int64_t rows,
                        int64_t cout)
{
#define SCATTER(C)                                                                                  \
    for (int64_t m = 0; m < rows; m++) row_add(acc + (oi[m] - a) * (C), y + m * (C), (C))
    PVS_CHANNEL_CASES(cout, SCATTER)
#undef SCATTER
}

/* out rows = act(out + bias + residual), rows x cout contiguous */
static void epilogue(float *out, int64_t rows, int64_t cout, const float *bias, const float *res, bool relu)
{
    for (int64_t m = 0; m < rows; m++) {
        float *o = out + m * cout;
        if (bias) row_add(o, bias, cout);
        if (res) row_add(o, res + m * cout, cout);
        if (relu) row_relu(o, cout);
    }
}

/* ---- the fast path -------------------------------------------------------------------------- */

typedef struct conv_job {
    const pvs_rulebook  *rb;
    const pvs_conv_desc *d;
    pvk_spconv_pairs_fn  direct;   /* non-NULL: the direct kernel instead of gather-GEMM-scatter */
    const float *in, *res;
    float       *out;
    char        *ws;
    size_t       ws_thread;
    int64_t      ws_rows, rows;   /* buffer rows per thread; rows per block */
} conv_job;

/* C[rows, cout] (= or +=) A[rows, cin] x W[k], inline: fp32 or through the packed W[k] */
static void block_gemm(const pvs_conv_desc *d, int64_t k, int64_t rows, const float *A, float *C, float beta)
{
    if (d->wk)
        pvk_gemm_packed_run(d->wk[k], NULL, rows, A, d->cin, C, d->cout, beta, NULL, NULL);
    else
        pvk_gemm_f32(NULL, rows, d->cout, d->cin, A, d->cin, false, d->w + k * d->cin * d->cout, d->cout, false, C,
                     d->cout, 1.0f, beta);
}

static void conv_block(const conv_job *j, int64_t a, int64_t b, float *G, float *Y)
{
    const pvs_rulebook *rb = j->rb;
    const int64_t cin = j->d->cin, cout = j->d->cout, nb = b - a, K = rb->K;
    float *acc = j->out + a * cout;
    int64_t lo[27], hi[27];
    for (int64_t k = 0; k < K; k++) {
        lo[k] = lower_bound(rb->out_idx, rb->start[k], rb->start[k + 1], (int32_t)a);
        hi[k] = lower_bound(rb->out_idx, lo[k], rb->start[k + 1], (int32_t)b);
    }
    if (j->direct) {
        /* (starting the rows at bias + residual instead, and only the ReLU after, measured
         * 4-8 % slower on the 16-channel layers: memset is the cheaper pass) */
        memset(acc, 0, (size_t)(nb * cout) * sizeof(float));
        for (int64_t k = 0; k < K; k++)
            if (hi[k] > lo[k])
                j->direct(hi[k] - lo[k], rb->in_idx + lo[k], rb->out_idx + lo[k], (int32_t)a, j->in, cin,
                          j->d->w + k * cin * cout, cout, acc);
        epilogue(acc, nb, cout, j->d->bias, j->res ? j->res + a * cout : NULL, j->d->relu);
        return;
    }
    bool written = false;
    for (int64_t k = 0; k < K; k++) {   /* offsets that reach every row: straight into the block */
        if (hi[k] - lo[k] != nb) continue;
        const int32_t *ii = rb->in_idx + lo[k];
        const float *A = j->in + (int64_t)ii[0] * cin;
        for (int64_t m = 1; m < nb; m++)
            if (ii[m] != ii[0] + m) { gather(G, j->in, ii, nb, cin); A = G; break; }
        block_gemm(j->d, k, nb, A, acc, written ? 1.0f : 0.0f);
        written = true;
    }
    if (!written) memset(acc, 0, (size_t)(nb * cout) * sizeof(float));
    for (int64_t k = 0; k < K; k++) {
        int64_t cnt = hi[k] - lo[k];
        if (cnt == 0 || cnt == nb) continue;
        gather(G, j->in, rb->in_idx + lo[k], cnt, cin);
        block_gemm(j->d, k, cnt, G, Y, 0.0f);
        scatter_add(acc, Y, rb->out_idx + lo[k], a, cnt, cout);
    }
    epilogue(acc, nb, cout, j->d->bias, j->res ? j->res + a * cout : NULL, j->d->relu);
}

static void conv_blocks(void *ctx, int64_t begin, int64_t end, int tid)
{
    const conv_job *j = ctx;
    float *G = (float *)(j->ws + (size_t)tid * j->ws_thread);
    float *Y = (float *)((char *)G + al64((size_t)j->ws_rows * (size_t)j->d->cin * sizeof(float)));
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t a = blk * j->rows;
        conv_block(j, a, PVC_MIN(a + j->rows, j->rb->n_out), G, Y);
    }
}

/* The direct kernel where it beats gather-GEMM-scatter (measured per layer shape, see
 * BENCHMARKS.md "Sparse encoder: direct kernel"): a SIMD variant, and W[k] small enough that
 * few passes over the pairs cover it. NULL: the GEMM path. */
static pvk_spconv_pairs_fn direct_kernel(const pvs_conv_desc *d)
{
    const pvk_spconv_pairs_variant *v = pvk_spconv_pairs_select(d->cout);
    const char *e = getenv("PERCEIVE_SPCONV_DIRECT");   /* A/B knob of the benches; read per call, no state */
    int64_t lim = e && *e ? atoll(e) : DIRECT_MAX;
    if (v->isa == PVC_ISA_SCALAR || (int64_t)d->cin * d->cout > lim) return NULL;
    return v->fn;
}

/* The wide layers at fp32 (no packed W[k]): the register-tiled pairs kernel where a SIMD
 * variant takes cout (kernels/spconv_pairs.h, "wide"; 1.2-1.5x the gathered GEMM per core,
 * BENCHMARKS.md "sparse encoder: wide kernel"). NULL: the GEMM path (also for packed W[k]:
 * bf16 runs on the packed GEMM). PERCEIVE_SPCONV_WIDE=0 turns it off, for A/B runs. */
static pvk_spconv_pairs_fn wide_kernel(const pvs_conv_desc *d)
{
    const pvk_spconv_pairs_variant *v = pvk_spconv_wide_select(d->cout);
    const char *e = getenv("PERCEIVE_SPCONV_WIDE");
    if (d->wk || v->isa == PVC_ISA_SCALAR || (e && !strcmp(e, "0"))) return NULL;
    return v->fn;
}

bool pvs_conv_gathers(const pvs_conv_desc *d) { return d && direct_kernel(d) == NULL; }

void pvs_conv(pvc_pool *pool, const pvs_rulebook *rb, const pvs_conv_desc *d, const float *in,
              const float *residual, float *out, void *ws)
{
    if (!rb || !d || d->cin < 1 || d->cout < 1 || rb->n_out <= 0) return;
    int64_t wr = ws_rows(rb, d);
    int64_t rows = round16((rb->n_out + BLOCKS_MIN - 1) / BLOCKS_MIN);
    rows = PVC_MIN(wr, PVC_MAX(PVC_MIN(ROWS_MIN, wr), rows));
    pvk_spconv_pairs_fn direct = direct_kernel(d);
    conv_job j = { .rb = rb, .d = d, .direct = direct ? direct : wide_kernel(d), .in = in, .res = residual, .out = out,
                   .ws = (char *)(uintptr_t)al64((uintptr_t)ws), .ws_thread = ws_thread_bytes(wr, d),
                   .ws_rows = wr, .rows = rows };
    int64_t blocks = (rb->n_out + rows - 1) / rows;
    pvc_parallel_for(pool, blocks, 1, conv_blocks, &j);
}

/* ---- the reference twin --------------------------------------------------------------------- */

void pvs_conv_ref(const pvs_rulebook *rb, const pvs_conv_desc *d, const float *in,
                  const float *residual, float *out)
{
    if (!rb || !d || d->cin < 1 || d->cout < 1 || rb->n_out <= 0) return;
    const int64_t cin = d->cin, cout = d->cout;
    memset(out, 0, (size_t)(rb->n_out * cout) * sizeof(float));
    for (int32_t k = 0; k < rb->K; k++) {
        const float *w = d->w + k * cin * cout;
        for (int64_t p = rb->start[k]; p < rb->start[k + 1]; p++) {
            const float *x = in + (int64_t)rb->in_idx[p] * cin;
            float *y = out + (int64_t)rb->out_idx[p] * cout;
            for (int64_t ci = 0; ci < cin; ci++)
                for (int64_t co = 0; co < cout; co++) y[co] += x[ci] * w[ci * cout + co];
        }
    }
    for (int64_t m = 0; m < rb->n_out; m++) {
        float *y = out + m * cout;
        for (int64_t co = 0; co < cout; co++) {
            float v = y[co] + (d->bias ? d->bias[co] : 0.0f) + (residual ? residual[m * cout + co] : 0.0f);
            y[co] = d->relu && !(v > 0.0f) ? 0.0f : v;
        }
    }
}
