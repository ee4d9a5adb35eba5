/* Quantized (8-bit integer) kernels: the element maps of QuantizeLinear / DequantizeLinear /
 * DynamicQuantizeLinear, requantization of int32 sums (QLinearMatMul, QLinearConv), an 8-bit
 * im2col, and the integer GEMM behind MatMulInteger / ConvInteger / QLinear*.
 *
 * Rounding is ONNX Runtime's: round half to even (nearbyintf in the default rounding mode), then
 * saturate to the output type. Integer sums wrap modulo 2^32 (never undefined behaviour).
 *
 * The integer GEMM has a plain reference (pvk_qgemm_ref) and fast variants built on one packed
 * form: A rows as uint8 (int8 A is shifted by +128 with its zero point), B columns as int8 (uint8
 * B shifted by -128), K padded to a multiple of 4, so every case becomes vpdpbusd's u8 x s8 and the
 * zero points are applied afterwards from row and column sums. */
#ifndef PVK_REF_QUANT_H
#define PVK_REF_QUANT_H

#include "core/core.h"

/* y[o][c][i] = saturate(round(x / scale[c]) + zp[c]) for an x viewed as [outer][C][inner]; C = 1
 * is per tensor. zp may be NULL (0). yt: PV_U8 or PV_I8. */
void pvk_quantize_f32(pvc_pool *pool, const float *x, int64_t outer, int64_t C, int64_t inner,
                      const float *scale, const int32_t *zp, pv_dtype yt, void *y);
/* y = (x - zp[c]) * scale[c], x of dtype xt (PV_U8, PV_I8 or PV_I32), same view as above. */
void pvk_dequantize_f32(pvc_pool *pool, const void *x, pv_dtype xt, int64_t outer, int64_t C,
                        int64_t inner, const float *scale, const int32_t *zp, float *y);
/* DynamicQuantizeLinear's uint8 parameters as ONNX Runtime computes them: the range of x widened
 * to hold 0, scale = (max - min) / 255 (1 when the range is empty), zero point = round(saturate(
 * -min / scale)). */
void pvk_dynquant_params(const float *x, int64_t n, float *scale, uint8_t *zp);

/* y[m][n] = saturate(round(acc[m][n] * mult[n or 0]) + zp) into yt (PV_U8 / PV_I8); nmult is 1 or
 * N. The product is in float as ONNX Runtime's requantization does it. */
void pvk_requantize(pvc_pool *pool, const int32_t *acc, int64_t M, int64_t N, const float *mult,
                    int64_t nmult, int32_t zp, pv_dtype yt, void *y);
/* One row of n values, the twins behind pvk_requantize (mult[i], or mult[0] when nmult is 1) and
 * pvk_quantize_f32 (x[i] / scale): the scalar reference and, on x86-64, the AVX-512 variant
 * (call only when pvc_isa_selected() is at least avx512). Equal results. */
void pvk_requant_row_scalar(const int32_t *acc, int64_t n, const float *mult, int64_t nmult, int32_t zp, pv_dtype t, void *y);
void pvk_quant_row_scalar(const float *x, int64_t n, float scale, int32_t zp, pv_dtype t, void *y);
#if defined(__x86_64__)
void pvk_requant_row_avx512(const int32_t *acc, int64_t n, const float *mult, int64_t nmult, int32_t zp, pv_dtype t, void *y);
void pvk_quant_row_avx512(const float *x, int64_t n, float scale, int32_t zp, pv_dtype t, void *y);
#endif
/* The value v saturated into an 8-bit type's range ([0,255] or [-128,127]). */
static inline int32_t pvk_sat8(int32_t v, pv_dtype t)
{
    int32_t lo = t == PV_U8 ? 0 : -128, hi = t == PV_U8 ? 255 : 127;
    return v < lo ? lo : v > hi ? hi : v;
}

/* One 8-bit integer matrix operand: rows x cols of dtype (PV_U8 or PV_I8) with row stride ld
 * (elements), and its zero points: nzp == 1 one for all, else one per row (A) / per column (B). */
typedef struct pvk_qmat {
    const void    *data;
    pv_dtype       dtype;
    int64_t        ld;
    const int32_t *zp;
    int64_t        nzp;
} pvk_qmat;

/* C[m][n] (int32, row stride ldc) = sum_k (A[m][k] - za[m]) * (B[k][n] - zb[n]). */
void pvk_qgemm_ref(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const pvk_qmat *a,
                   const pvk_qmat *b, int32_t *C, int64_t ldc);

/* B packed for the fast variants (made once for constant weights, or per call in the
 * workspace): panels of PVK_QNR columns, each [K4 / 4][PVK_QNR][4] int8; per column the
 * shifted zero point and the sum of the shifted values. */
#define PVK_QNR 48
#define PVK_QMR 8
typedef struct pvk_qpacked {
    int64_t  K, N, K4, Np;      /* K4: K rounded up to 4; Np: N rounded up to PVK_QNR */
    int8_t  *data;              /* Np * K4 bytes */
    int32_t *zb, *colsum;       /* Np each (0 past N) */
} pvk_qpacked;
/* Bytes pvk_qpack_b needs (64-byte aligned memory). */
size_t pvk_qpack_bytes(int64_t K, int64_t N);
/* Packs B (K x N) into mem, filling *pk (which points into mem). */
void   pvk_qpack_b(pvc_pool *pool, int64_t K, int64_t N, const pvk_qmat *b, void *mem, pvk_qpacked *pk);

/* A packed: Mp (M rounded up to PVK_QMR) rows of K4 uint8, and per row za + shift and
 * rowsum - K * (za + shift) (the two terms the zero-point correction needs). */
typedef struct pvk_qpacked_a {
    int64_t  M, K, K4, Mp;
    uint8_t *data;
    int32_t *za, *rfix;
} pvk_qpacked_a;
size_t pvk_qpack_a_bytes(int64_t M, int64_t K);
void   pvk_qpack_a(pvc_pool *pool, int64_t M, int64_t K, const pvk_qmat *a, void *mem, pvk_qpacked_a *pa);

/* A variant's product of packed operands: C = (A - za)(B - zb) as pvk_qgemm_ref would give. */
typedef void (*pvk_qgemm_packed_fn)(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b,
                                    int32_t *C, int64_t ldc);
/* Scalar product of packed operands (the packed form's own oracle, any CPU). */
void pvk_qgemm_packed_scalar(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc);
#if defined(__x86_64__)
/* x86/qgemm_avx512.c: AVX512-VNNI 8x48 tiles; call only when pvc_cpu_get()->avx512_vnni and the
 * selected isa is at least avx512. */
void pvk_qgemm_packed_avx512vnni(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc);
/* x86/qgemm_avx2.c: AVX-VNNI 4x24 tiles (CPUs without AVX-512); call only when
 * pvc_cpu_get()->avx_vnni and the selected isa is at least avx2. */
void pvk_qgemm_packed_avxvnni(pvc_pool *pool, const pvk_qpacked_a *a, const pvk_qpacked *b, int32_t *C, int64_t ldc);
#endif

/* Every packed variant in this binary, lowest first (tests iterate it); usable() says whether
 * this CPU (and PERCEIVE_ISA) allows it. pvk_qgemm_fast() is the last usable one, NULL when none beats the
 * reference (then callers use pvk_qgemm_ref and skip packing). */
typedef struct pvk_qgemm_variant {
    const char         *name;
    pvk_qgemm_packed_fn fn;
    bool              (*usable)(void);
} pvk_qgemm_variant;
extern const pvk_qgemm_variant pvk_qgemm_variants[];
extern const int pvk_qgemm_nvariants;
const pvk_qgemm_variant *pvk_qgemm_fast(void);

/* The dispatcher: C = (A - za)(B - zb) through the fast variant when there is one (B taken from
 * bp when not NULL, else packed into ws), else the reference. ws: pvk_qgemm_ws bytes. */
size_t pvk_qgemm_ws(int64_t M, int64_t N, int64_t K, bool b_packed);
void   pvk_qgemm(pvc_pool *pool, int64_t M, int64_t N, int64_t K, const pvk_qmat *a, const pvk_qmat *b,
                 const pvk_qpacked *bp, int32_t *C, int64_t ldc, void *ws);

/* 8-bit im2col for a conv geometry (kernels/ref/conv.h): col[r][p - p0], taps in the padding
 * read pad (the input's zero point, so they add nothing). */
struct pvk_conv_geom;
void pvk_im2col_8(pvc_pool *pool, const struct pvk_conv_geom *g, const uint8_t *x, int64_t channels,
                  int64_t p0, int64_t np, uint8_t pad, uint8_t *col);

#endif
