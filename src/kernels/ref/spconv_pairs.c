/* The reference direct sparse-conv kernel (the oracle of x86/spconv_avx512.c) and the variant
 * table; see kernels/spconv_pairs.h. */
#include "kernels/spconv_pairs.h"

void pvk_spconv_pairs_ref(int64_t n, const int32_t *in_idx, const int32_t *out_idx, int32_t a, const float *x,
                          int64_t cin, const float *w, int64_t cout, float *y)
{
    for (int64_t p = 0; p < n; p++) {
        const float *xi = x + (int64_t)in_idx[p] * cin;
        float *yo = y + (int64_t)(out_idx[p] - a) * cout;
        for (int64_t ci = 0; ci < cin; ci++) {
            const float v = xi[ci], *wr = w + ci * cout;
            for (int64_t co = 0; co < cout; co++) yo[co] += v * wr[co];
        }
    }
}

const pvk_spconv_pairs_variant pvk_spconv_pairs_variants[] = {
    { "ref", PVC_ISA_SCALAR, 1, pvk_spconv_pairs_ref },
#if defined(__x86_64__) || defined(_M_X64)
    { "avx512", PVC_ISA_AVX512, 16, pvk_spconv_pairs_avx512 },
#endif
};
const int pvk_spconv_pairs_nvariants = (int)PVC_COUNTOF(pvk_spconv_pairs_variants);

const pvk_spconv_pairs_variant pvk_spconv_wide_variants[] = {
    { "ref", PVC_ISA_SCALAR, 1, pvk_spconv_pairs_ref },
#if defined(__x86_64__) || defined(_M_X64)
    { "avx512_wide", PVC_ISA_AVX512, 32, pvk_spconv_wide_avx512 },
#endif
};
const int pvk_spconv_wide_nvariants = (int)PVC_COUNTOF(pvk_spconv_wide_variants);

static const pvk_spconv_pairs_variant *select_in(const pvk_spconv_pairs_variant *vs, int nv, int64_t cout)
{
    const pvc_isa isa = pvc_isa_selected();
    const pvk_spconv_pairs_variant *pick = &vs[0];
    for (int i = 0; i < nv; i++)
        if (vs[i].isa <= isa && cout % vs[i].cout_mult == 0) pick = &vs[i];
    return pick;
}

const pvk_spconv_pairs_variant *pvk_spconv_pairs_select(int64_t cout)
{
    return select_in(pvk_spconv_pairs_variants, pvk_spconv_pairs_nvariants, cout);
}

const pvk_spconv_pairs_variant *pvk_spconv_wide_select(int64_t cout)
{
    return select_in(pvk_spconv_wide_variants, pvk_spconv_wide_nvariants, cout);
}
