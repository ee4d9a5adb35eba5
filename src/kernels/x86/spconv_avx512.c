/* AVX-512 direct kernel of a sparse convolution's offset (kernels/spconv_pairs.h): W[k] is held
 * in 16 zmm for a chunk of NC x 16 output columns (NC 2 when cout is a multiple of 32, else 1)
 * and CC = 16 / NC input channels; every pair of the run broadcasts its CC input values and
 * adds the chunk's products into its output row (one load + one store per zmm). Several passes
 * (output chunks x input chunks) over each group of 64 pairs when cin x cout is larger; input
 * chunks are 16/8/4/2/1 wide so that every loop is unrolled at compile time. The products of a pair go into up to 4
 * independent chains (the FMA latency), summed before the row update: a fixed order for given
 * cin and cout. Compiled with the AVX-512 flags (this file only); called only when
 * pvc_isa_selected() >= AVX512 and cout % 16 == 0. */
#include "kernels/spconv_pairs.h"

#include <immintrin.h>

enum { PF_AHEAD = 64 };   /* pairs ahead whose input row is prefetched (random rows of x; 16: 3-7 % slower on 32 channels) */
enum { GROUP = 64 };      /* pairs that every pass covers before the next group */

static inline __attribute__((always_inline)) void
run(const int NC, const int CC, int64_t n, int64_t npf, const int32_t *restrict ii, const int32_t *restrict oi, int32_t a,
    const float *restrict x, int64_t cin, const float *restrict w, int64_t cout, float *restrict y)
{
    const int CH = CC >= 4 ? (NC == 1 ? 4 : 2) : CC;   /* independent chains */
    __m512 wv[16][2];
#pragma GCC unroll 16
    for (int c = 0; c < CC; c++)
#pragma GCC unroll 2
        for (int j = 0; j < NC; j++) wv[c][j] = _mm512_loadu_ps(w + c * cout + 16 * j);
    for (int64_t p = 0; p < n; p++) {
        if (p + PF_AHEAD < npf) _mm_prefetch((const char *)(x + (int64_t)ii[p + PF_AHEAD] * cin), _MM_HINT_T0);
        const float *xi = x + (int64_t)ii[p] * cin;
        float *yo = y + (int64_t)(oi[p] - a) * cout;
        __m512 s[4][2];
#pragma GCC unroll 4
        for (int h = 0; h < CH; h++) {
            __m512 v = _mm512_set1_ps(xi[h]);
#pragma GCC unroll 2
            for (int j = 0; j < NC; j++) s[h][j] = _mm512_mul_ps(v, wv[h][j]);
        }
#pragma GCC unroll 16
        for (int c = CH; c < CC; c++) {
            __m512 v = _mm512_set1_ps(xi[c]);
#pragma GCC unroll 2
            for (int j = 0; j < NC; j++) s[c % CH][j] = _mm512_fmadd_ps(v, wv[c][j], s[c % CH][j]);
        }
#pragma GCC unroll 2
        for (int j = 0; j < NC; j++) {
            __m512 t = s[0][j];
            if (CH == 4) t = _mm512_add_ps(_mm512_add_ps(s[0][j], s[1][j]), _mm512_add_ps(s[2][j], s[3][j]));
            else if (CH == 2) t = _mm512_add_ps(s[0][j], s[1][j]);
            else if (CH == 3) t = _mm512_add_ps(_mm512_add_ps(s[0][j], s[1][j]), s[2][j]);
            _mm512_storeu_ps(yo + 16 * j, _mm512_add_ps(_mm512_loadu_ps(yo + 16 * j), t));
        }
    }
}

/* One pass: output columns [co, co + 16 NC), input channels [ci, ci + cc). */
static void pass(int nc, int cc, int64_t n, int64_t npf, const int32_t *ii, const int32_t *oi, int32_t a, const float *x,
                 int64_t cin, const float *w, int64_t cout, float *y)
{
#define PASS(NC, CC) run(NC, CC, n, npf, ii, oi, a, x, cin, w, cout, y)
    if (nc == 2) {
        switch (cc) {
        case 8: PASS(2, 8); break;
        case 4: PASS(2, 4); break;
        case 2: PASS(2, 2); break;
        default: PASS(2, 1); break;
        }
    } else {
        switch (cc) {
        case 16: PASS(1, 16); break;
        case 8: PASS(1, 8); break;
        case 4: PASS(1, 4); break;
        case 2: PASS(1, 2); break;
        default: PASS(1, 1); break;
        }
    }
#undef PASS
}

void pvk_spconv_pairs_avx512(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                             int64_t cin, const float *w, int64_t cout, float *y)
{
    const int nc = cout % 32 == 0 ? 2 : 1, ccmax = 16 / nc;
    /* several passes: all of them over a group of pairs before the next group, so that the
     * group's output and input rows stay in L1 across the passes instead of coming from L2 once
     * per pass (32->64: ~8 %, 32->32: ~2 % per core on the 55k-site levels); the prefetches
     * look past the group's end */
    const int64_t group = cout > 16 * nc || cin > ccmax ? GROUP : PVC_MAX(n, 1);
    for (int64_t g = 0; g < n; g += group) {
        const int64_t ng = PVC_MIN(group, n - g);
        for (int64_t co = 0; co < cout; co += 16 * nc)
            for (int64_t ci = 0; ci < cin;) {
                int cc = ccmax;
                while (cc > cin - ci) cc /= 2;
                /* x and w offset to the chunk; the row strides stay cin and cout */
                pass(nc, cc, ng, n - g, in_idx + g, out_idx + g, a, x + ci, cin, w + ci * cout + co, cout, y + co);
                ci += cc;
            }
    }
}

/* ---- wide layers: pairs in register tiles (kernels/spconv_pairs.h, "wide") ------------------ */

enum { ACC = 24 };   /* accumulators of a tile: 24 + NV of W[k] + 1 broadcast <= 32 zmm */

/* M pairs x 16 NV output columns: the tile's sums over the cin inputs stay in M x NV zmm
 * (M NV <= ACC); per input channel NV loads of W[k]'s row (L1: one slice of W[k] is 8-32
 * KiB) and M broadcasts feed M NV FMAs; one load-add-store per output vector at the end. */
static inline __attribute__((always_inline)) void
wide_tile(const int NV, const int M, const int32_t *restrict ii, const int32_t *restrict oi, int32_t a,
          const float *restrict x, int64_t cin, const float *restrict w, int64_t cout, float *restrict y)
{
    const float *xr[ACC];
    __m512 acc[ACC][4];
#pragma GCC unroll 24
    for (int m = 0; m < M; m++) {
        xr[m] = x + (int64_t)ii[m] * cin;
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[m][j] = _mm512_setzero_ps();
    }
#pragma GCC unroll 2
    for (int64_t ci = 0; ci < cin; ci++) {
        const float *wr = w + ci * cout;
        __m512 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) wv[j] = _mm512_loadu_ps(wr + 16 * j);
#pragma GCC unroll 24
        for (int m = 0; m < M; m++) {
            __m512 v = _mm512_set1_ps(xr[m][ci]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++) acc[m][j] = _mm512_fmadd_ps(v, wv[j], acc[m][j]);
        }
    }
#pragma GCC unroll 24
    for (int m = 0; m < M; m++) {
        float *yo = y + (int64_t)(oi[m] - a) * cout;
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) _mm512_storeu_ps(yo + 16 * j, _mm512_add_ps(_mm512_loadu_ps(yo + 16 * j), acc[m][j]));
    }
}

/* The input rows of the tile AHEAD tiles ahead, every cache line of each (random rows of x:
 * mostly L3 on the 64/128-channel levels; a tile's FMAs take ~1 us, enough to hide them). */
enum { AHEAD = 2 };
static inline void wide_prefetch(int64_t n, const int32_t *ii, const float *x, int64_t cin)
{
    for (int64_t m = 0; m < n; m++) {
        const char *r = (const char *)(x + (int64_t)ii[m] * cin);
        for (int64_t b = 0; b < cin * (int64_t)sizeof(float); b += 64) _mm_prefetch(r + b, _MM_HINT_T0);
    }
}

/* One slice of 16 NV columns over all n pairs: tiles of ACC / NV pairs, then the tail. */
static inline __attribute__((always_inline)) void
wide_slice(const int NV, int64_t n, const int32_t *ii, const int32_t *oi, int32_t a, const float *x, int64_t cin,
           const float *w, int64_t cout, float *y, bool first)
{
    const int T = ACC / NV;
    int64_t p = 0;
    for (; p + T <= n; p += T) {
        /* the later slices find the rows in L2 */
        if (first && p + T * AHEAD < n) wide_prefetch(PVC_MIN((int64_t)T, n - p - T * AHEAD), ii + p + T * AHEAD, x, cin);
        wide_tile(NV, T, ii + p, oi + p, a, x, cin, w, cout, y);
    }
    ii += p;
    oi += p;
#define TAIL(M) \
    case M: if (M < T) wide_tile(NV, M, ii, oi, a, x, cin, w, cout, y); break
    switch (n - p) {
    TAIL(11); TAIL(10); TAIL(9); TAIL(8); TAIL(7); TAIL(6); TAIL(5); TAIL(4); TAIL(3); TAIL(2); TAIL(1);
    default: break;
    }
#undef TAIL
}

void pvk_spconv_wide_avx512(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                            int64_t cin, const float *w, int64_t cout, float *y)
{
    /* column slices outermost: the slice of W[k] stays in L1 across all the pairs, and the
     * pairs' input rows (read once per slice) in L2 */
    const int nv = cout % 64 == 0 ? 4 : 2;
    for (int64_t co = 0; co < cout; co += 16 * nv) {
        if (nv == 4) wide_slice(4, n, in_idx, out_idx, a, x, cin, w + co, cout, y + co, co == 0);
        else wide_slice(2, n, in_idx, out_idx, a, x, cin, w + co, cout, y + co, co == 0);
    }
}
