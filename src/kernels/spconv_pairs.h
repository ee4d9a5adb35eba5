/* spconv_pairs: the direct kernel of a sparse convolution's offset, for narrow channels.
 *
 * For one kernel offset, a run of rulebook pairs (in_idx[p] -> out_idx[p], out_idx distinct
 * within the run) adds x[in] W[k] into the output rows without gathering or a GEMM call:
 *
 *     y[(out_idx[p] - a) * cout + co] += sum_ci x[in_idx[p] * cin + ci] * w[ci * cout + co]
 *
 * for p in [0, n), ci < cin, co < cout; w is W[k], [cin, cout] row-major. With 4 or 16 input
 * channels the per-offset GEMM of pvs_conv has K = 4..16: packing and call overhead dominate
 * it (5-50 GFLOP/s measured); here W[k] stays in registers across the whole run and every
 * pair costs cin broadcasts, cin * cout / 16 FMAs and one load + store per 16 outputs.
 *
 * Variants (pvk_spconv_pairs_variants, lowest isa first), chosen by pvk_spconv_pairs_select():
 *   ref     plain C: the oracle (any cin, cout)
 *   avx512  W[k] in up to 16 zmm, output columns in chunks of 32 (or 16), input channels in
 *           chunks that fill the 16 registers; cout must be a multiple of 16 (else: ref)
 * Each variant sums each output value's terms in a fixed order (fixed by cin, cout only), so
 * results never depend on threads; variants differ in rounding (tested within 1e-5 relative
 * of the sum of |terms|). Prefix pvk_spconv_. */
#ifndef PVK_SPCONV_PAIRS_H
#define PVK_SPCONV_PAIRS_H

#include "core/core.h"

typedef void (*pvk_spconv_pairs_fn)(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a,
                                    const float *x, int64_t cin, const float *w, int64_t cout, float *y);

void pvk_spconv_pairs_ref(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                          int64_t cin, const float *w, int64_t cout, float *y);
void pvk_spconv_pairs_avx512(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                             int64_t cin, const float *w, int64_t cout, float *y);

typedef struct pvk_spconv_pairs_variant {
    const char         *name;
    pvc_isa             isa;         /* required instruction set */
    int                 cout_mult;   /* cout must be a multiple of this */
    pvk_spconv_pairs_fn fn;
} pvk_spconv_pairs_variant;
extern const pvk_spconv_pairs_variant pvk_spconv_pairs_variants[];
extern const int pvk_spconv_pairs_nvariants;
/* The last variant with isa <= pvc_isa_selected() and cout a multiple of its cout_mult. */
const pvk_spconv_pairs_variant *pvk_spconv_pairs_select(int64_t cout);

/* Wide layers (64 and 128 channels): the same contract as the direct kernel above (y rows +=
 * x[in] W[k] per pair, pvk_spconv_pairs_ref is the oracle), tiled for W[k] too large for the
 * registers. Per 64-column slice of W[k] (kept in L1, read from its rows in place), pairs go
 * six at a time: the six output row slices stay in 24 zmm across all cin inputs (4 loads of
 * W[k] and 6 broadcasts per 24 FMAs), then are added into y once. Versus the gathered GEMM
 * (gather rows, pack, GEMM into a buffer, scatter-add) nothing is copied or packed. Each output
 * value sums its terms in ci order, then adds into y: fixed by cin and cout.
 *   ref     plain C (pvk_spconv_pairs_ref)
 *   avx512  cout a multiple of 32 (slices of 64 columns, or 32 when cout is not a multiple of 64:
 *           then 12 pairs a tile), any cin */
void pvk_spconv_wide_avx512(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                            int64_t cin, const float *w, int64_t cout, float *y);
extern const pvk_spconv_pairs_variant pvk_spconv_wide_variants[];
extern const int pvk_spconv_wide_nvariants;
/* The last wide variant with isa <= pvc_isa_selected() and cout a multiple of its cout_mult. */
const pvk_spconv_pairs_variant *pvk_spconv_wide_select(int64_t cout);

#endif
