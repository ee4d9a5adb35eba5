/* Body of the vectorized memory-bound kernels (see kernels/ref/eltwise_simd.h), written once
 * over a small vector vocabulary that eltwise_avx2.c (8 lanes) and eltwise_avx512.c (16 lanes)
 * define before including this file:
 *
 *   vf, vmask         float vector, lane mask
 *   VW                lanes
 *   LD(p) ST(p, v)    unaligned load / store; LDN(p, n) STN(p, v, n) the first n < VW lanes
 *                     (masked: nothing past them is touched; LDN fills the rest with 0)
 *   SET1(f) ADD SUB MUL DIV
 *   FMA(a, b, c)      a * b + c          FNMA(a, b, c)   c - a * b
 *   MAXP(a, b)        a > b ? a : b      MINP(a, b)      a < b ? a : b   (the instructions' NaN rule)
 *   CMPLT CMPGE CMPGT ordered compares -> vmask;  ISNAN(a) -> vmask
 *   BLEND(m, f, t)    m ? t : f per lane
 *   AND OR ANDNOT     bitwise on floats (ANDNOT(m, a) = ~m & a)
 *   ZTAIL(v, n)       v with lanes n.. set to 0
 *   ROUND(a)          to nearest integer (as a float)
 *   SCALE2N(p, n)     p * 2^n for integral n in [-150, 129], correctly rounded into subnormals
 *   HSUM(v) HMAX(v)   horizontal sum / max
 *   EVEN(a, b)        lanes 0, 2, 4, ... of the concatenation a:b (VW lanes)
 *   VARIANT_NAME, VARIANT_ISA, VARIANT_SYM   the table entry
 *
 * Polynomials: least-squares fits on Chebyshev-spaced points reweighted towards minimax
 * (Lawson), done for this file in double with numpy, coefficients rounded to float; the
 * fitted error is far below float rounding, so the results are limited by the evaluation. */

/* ---- exp ------------------------------------------------------------------------------------ */
/* exp(x) = 2^n e^r, n = round(x log2 e), r = x - n ln2 (two-part ln2, exact with FMA),
 * e^r = 1 + r + r^2 P(r) on |r| <= ln2 / 2 (fitted relative error 3e-9). x is clamped to
 * [-104, 89] (beyond: 0 and Inf); the clamps keep NaN. */
static inline vf v_exp(vf x)
{
    x = MAXP(SET1(-104.0f), x);
    x = MINP(SET1(89.0f), x);
    vf n = ROUND(MUL(x, SET1(1.44269504088896341f)));
    vf r = FNMA(n, SET1(0.693147182464599609375f), x);
    r = FNMA(n, SET1(-1.904654323148236e-09f), r);
    vf p = SET1(1.381461276e-03f);
    p = FMA(p, r, SET1(8.368710056e-03f));
    p = FMA(p, r, SET1(4.166838899e-02f));
    p = FMA(p, r, SET1(1.666652113e-01f));
    p = FMA(p, r, SET1(4.999999404e-01f));
    vf e = ADD(FMA(MUL(r, r), p, r), SET1(1.0f));
    return SCALE2N(e, n);
}

static inline vf v_copysign_pos(vf mag, vf x) { return OR(mag, AND(x, SET1(-0.0f))); }
static inline vf v_abs(vf x) { return ANDNOT(SET1(-0.0f), x); }

/* ---- erf ------------------------------------------------------------------------------------- */
/* |x| < 0.875: x P(x^2) (fitted relative error 9e-9). Else 1 - exp(-x^2) Q(|x| - 2.4375) with Q
 * the scaled complement exp(x^2) erfc(x) on [0.875, 4] (fitted absolute error of erf 2e-10);
 * x^2's rounding error is folded back in with one FMA. |x| >= 4 gives +-1. */
static inline vf v_erf(vf x)
{
    vf a = v_abs(x);
    vf u = MUL(x, x);
    vf ps = SET1(-6.203195080e-04f);
    ps = FMA(ps, u, SET1(5.032171030e-03f));
    ps = FMA(ps, u, SET1(-2.679145709e-02f));
    ps = FMA(ps, u, SET1(1.128245518e-01f));
    ps = FMA(ps, u, SET1(-3.761255145e-01f));
    ps = FMA(ps, u, SET1(1.128379107e+00f));
    vf small = MUL(x, ps);
    vf b = MINP(SET1(4.0f), a);
    vf t = SUB(b, SET1(2.4375f));
    vf q = SET1(9.713399777e-06f);
    q = FMA(q, t, SET1(2.273252176e-05f));
    q = FMA(q, t, SET1(4.618024832e-05f));
    q = FMA(q, t, SET1(-8.467482257e-05f));
    q = FMA(q, t, SET1(1.847726235e-04f));
    q = FMA(q, t, SET1(-8.484887076e-04f));
    q = FMA(q, t, SET1(2.716088435e-03f));
    q = FMA(q, t, SET1(-8.636111394e-03f));
    q = FMA(q, t, SET1(2.650080435e-02f));
    q = FMA(q, t, SET1(-7.756106555e-02f));
    q = FMA(q, t, SET1(2.155523896e-01f));
    vf bb = MUL(b, b);
    vf lo = FMA(b, b, SUB(SET1(0.0f), bb));        /* b*b - bb, exactly */
    vf e = v_exp(SUB(SET1(0.0f), bb));
    e = FNMA(e, lo, e);                                /* exp(-(bb + lo)) ~ exp(-bb) (1 - lo) */
    vf large = v_copysign_pos(FNMA(e, q, SET1(1.0f)), x);
    return BLEND(CMPLT(a, SET1(0.875f)), large, small);
}

/* ---- tanh ------------------------------------------------------------------------------------ */
/* |x| < 0.625: x + x^3 P(x^2) (fitted relative error 4e-9); else sign(x) (1 - 2 / (exp(2|x|) + 1))
 * with |x| clamped to 9.5 (tanh is 1 in float beyond 9.01). */
static inline vf v_tanh(vf x)
{
    vf a = v_abs(x);
    vf u = MUL(x, x);
    vf p = SET1(-5.704910960e-03f);
    p = FMA(p, u, SET1(2.063902281e-02f));
    p = FMA(p, u, SET1(-5.373969674e-02f));
    p = FMA(p, u, SET1(1.333144158e-01f));
    p = FMA(p, u, SET1(-3.333328068e-01f));
    vf small = FMA(MUL(x, u), p, x);
    vf b = MINP(SET1(9.5f), a);
    vf e = v_exp(ADD(b, b));
    vf large = v_copysign_pos(SUB(SET1(1.0f), DIV(SET1(2.0f), ADD(e, SET1(1.0f)))), x);
    return BLEND(CMPLT(a, SET1(0.625f)), large, small);
}

static inline vf v_sigmoid(vf x)
{
    return DIV(SET1(1.0f), ADD(SET1(1.0f), v_exp(SUB(SET1(0.0f), x))));
}

static inline vf v_gelu(vf x)
{
    vf h = MUL(SET1(0.5f), x);
    return FMA(h, v_erf(MUL(x, SET1(0.70710678118654752f))), h);
}

static inline vf v_gelu_tanh(vf x)
{
    vf h = MUL(SET1(0.5f), x);
    vf in = MUL(SET1(0.79788456080286536f), FMA(MUL(SET1(0.044715f), MUL(x, x)), x, x));
    return FMA(h, v_tanh(in), h);
}

static inline vf v_relu(vf x) { return MAXP(x, SET1(0.0f)); }

#define MAP_FN(NAME, VFN)                                                                       \
    static void NAME(const float *x, float *y, int64_t n)                                       \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + VW <= n; i += VW) ST(y + i, VFN(LD(x + i)));                                  \
        if (i < n) STN(y + i, VFN(LDN(x + i, n - i)), n - i);                                   \
    }
MAP_FN(map_exp, v_exp)
MAP_FN(map_erf, v_erf)
MAP_FN(map_tanh, v_tanh)
MAP_FN(map_sigmoid, v_sigmoid)
MAP_FN(map_gelu, v_gelu)
MAP_FN(map_gelu_tanh, v_gelu_tanh)
MAP_FN(map_relu, v_relu)

/* ---- binary rows ------------------------------------------------------------------------------ */
/* The fused activation as pvk_act_apply: Relu y > 0 ? y : 0; LeakyRelu y >= 0 ? y : alpha y;
 * Clip y < lo ? lo : min(y, hi) (NaN stays NaN in the last two). */
static inline vf v_act(vf v, const pvg_act *act)
{
    switch (act->kind) {
    case PVG_ACT_RELU: return MAXP(v, SET1(0.0f));
    case PVG_ACT_LEAKY_RELU: return BLEND(CMPGE(v, SET1(0.0f)), MUL(v, SET1(act->alpha)), v);
    case PVG_ACT_CLIP: return BLEND(CMPLT(v, SET1(act->alpha)), MINP(SET1(act->beta), v), SET1(act->alpha));
    default: return v;
    }
}

/* One loop per (op, operand strides): the body is a single instruction, so nothing else may
 * sit in it. */
#define BIN_LOOPS(OPV)                                                                          \
    do {                                                                                        \
        int64_t i = 0;                                                                          \
        if (sa && sb) {                                                                         \
            for (; i + VW <= n; i += VW) { vf va = LD(a + i), vb = LD(b + i); ST(y + i, OPV); } \
            if (i < n) { vf va = LDN(a + i, n - i), vb = LDN(b + i, n - i); STN(y + i, OPV, n - i); } \
        } else if (sa) {                                                                        \
            vf vb = SET1(b[0]);                                                                 \
            for (; i + VW <= n; i += VW) { vf va = LD(a + i); ST(y + i, OPV); }                 \
            if (i < n) { vf va = LDN(a + i, n - i); STN(y + i, OPV, n - i); }                   \
        } else if (sb) {                                                                        \
            vf va = SET1(a[0]);                                                                 \
            for (; i + VW <= n; i += VW) { vf vb = LD(b + i); ST(y + i, OPV); }                 \
            if (i < n) { vf vb = LDN(b + i, n - i); STN(y + i, OPV, n - i); }                   \
        } else {                                                                                \
            vf va = SET1(a[0]), vb = SET1(b[0]);                                                \
            for (; i + VW <= n; i += VW) ST(y + i, OPV);                                        \
            if (i < n) STN(y + i, OPV, n - i);                                                  \
        }                                                                                       \
    } while (0)

enum { ACT_BLOCK = 2048 };   /* activation applied per L1-sized block, right after it is written */

static void bin_plain(pvk_vbin_op op, const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n)
{
    switch (op) {
    case PVK_VB_ADD: BIN_LOOPS(ADD(va, vb)); break;
    case PVK_VB_SUB: BIN_LOOPS(SUB(va, vb)); break;
    case PVK_VB_MUL: BIN_LOOPS(MUL(va, vb)); break;
    case PVK_VB_DIV: BIN_LOOPS(DIV(va, vb)); break;
    case PVK_VB_COUNT: break;
    }
}

static void act_block(float *y, int64_t n, const pvg_act *act)
{
    int64_t i = 0;
    for (; i + VW <= n; i += VW) ST(y + i, v_act(LD(y + i), act));
    if (i < n) STN(y + i, v_act(LDN(y + i, n - i), act), n - i);
}

static void vbinary(pvk_vbin_op op, const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n,
                    const pvg_act *act)
{
    if (!act || act->kind == PVG_ACT_NONE) {
        bin_plain(op, a, sa, b, sb, y, n);
        return;
    }
    for (int64_t i = 0; i < n; i += ACT_BLOCK) {
        int64_t m = PVC_MIN(ACT_BLOCK, n - i);
        bin_plain(op, a + i * sa, sa, b + i * sb, sb, y + i, m);
        act_block(y + i, m, act);
    }
}

/* ---- LayerNormalization row ------------------------------------------------------------------ */
/* One read for the statistics: sums of d = x - x[0] and d^2 (the shift keeps E[d^2] - E[d]^2
 * well conditioned), in float lanes for blocks of LN_BLOCK elements and in double across blocks;
 * then one read-write pass for the output. */
enum { LN_BLOCK = 512 };

static void vlayernorm_row(const float *x, const float *scale, const float *bias, float *y, int64_t len, float eps,
                           float *mean_out, float *invstd_out)
{
    vf k = SET1(x[0]);
    double s = 0.0, q = 0.0;
    for (int64_t b0 = 0; b0 < len; b0 += LN_BLOCK) {
        int64_t e = PVC_MIN(len, b0 + LN_BLOCK), i = b0;
        vf s0 = SET1(0.0f), s1 = SET1(0.0f), q0 = SET1(0.0f), q1 = SET1(0.0f);
        for (; i + 2 * VW <= e; i += 2 * VW) {
            vf d0 = SUB(LD(x + i), k), d1 = SUB(LD(x + i + VW), k);
            s0 = ADD(s0, d0);
            s1 = ADD(s1, d1);
            q0 = FMA(d0, d0, q0);
            q1 = FMA(d1, d1, q1);
        }
        for (; i < e; i += VW) {
            int64_t m = PVC_MIN(VW, e - i);
            vf d = m == VW ? SUB(LD(x + i), k) : ZTAIL(SUB(LDN(x + i, m), k), m);
            s0 = ADD(s0, d);
            q0 = FMA(d, d, q0);
        }
        s += (double)HSUM(ADD(s0, s1));
        q += (double)HSUM(ADD(q0, q1));
    }
    double md = s / (double)len, var = q / (double)len - md * md;
    if (var < 0.0) var = 0.0;
    float fm = (float)((double)x[0] + md), inv = (float)(1.0 / sqrt(var + (double)eps));
    if (mean_out) *mean_out = fm;
    if (invstd_out) *invstd_out = inv;
    vf vm = SET1(fm), vi = SET1(inv);
    int64_t i = 0;
    if (bias) {
        for (; i + VW <= len; i += VW)
            ST(y + i, FMA(MUL(SUB(LD(x + i), vm), vi), LD(scale + i), LD(bias + i)));
        if (i < len) {
            int64_t m = len - i;
            STN(y + i, FMA(MUL(SUB(LDN(x + i, m), vm), vi), LDN(scale + i, m), LDN(bias + i, m)), m);
        }
    } else {
        for (; i + VW <= len; i += VW) ST(y + i, MUL(MUL(SUB(LD(x + i), vm), vi), LD(scale + i)));
        if (i < len) {
            int64_t m = len - i;
            STN(y + i, MUL(MUL(SUB(LDN(x + i, m), vm), vi), LDN(scale + i, m)), m);
        }
    }
}

/* ---- Softmax row -------------------------------------------------------------------------------- */
/* Max, then exp(x - max) summed (float lanes per block, double across), then the scaling pass.
 * A NaN anywhere never wins the max but makes the sum NaN, so every output is NaN, as in the
 * twin; +Inf makes Inf - Inf = NaN the same way. */
static void vsoftmax_row(const float *x, float *y, int64_t n, bool log_)
{
    vf mx = SET1(-INFINITY);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) mx = MAXP(LD(x + i), mx);
    float m = HMAX(mx);
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    vf vm = SET1(m);
    double sum = 0.0;
    for (int64_t b0 = 0; b0 < n; b0 += LN_BLOCK) {
        int64_t e = PVC_MIN(n, b0 + LN_BLOCK);
        vf acc = SET1(0.0f);
        for (i = b0; i + VW <= e; i += VW) {
            vf t = v_exp(SUB(LD(x + i), vm));
            if (!log_) ST(y + i, t);
            acc = ADD(acc, t);
        }
        if (i < e) {
            int64_t r = e - i;
            vf t = v_exp(SUB(LDN(x + i, r), vm));
            t = ZTAIL(t, r);
            if (!log_) STN(y + i, t, r);
            acc = ADD(acc, t);
        }
        sum += (double)HSUM(acc);
    }
    if (log_) {
        vf ls = SET1((float)log(sum));
        for (i = 0; i + VW <= n; i += VW) ST(y + i, SUB(SUB(LD(x + i), vm), ls));
        if (i < n) STN(y + i, SUB(SUB(LDN(x + i, n - i), vm), ls), n - i);
    } else {
        vf inv = SET1((float)(1.0 / sum));
        for (i = 0; i + VW <= n; i += VW) ST(y + i, MUL(LD(y + i), inv));
        if (i < n) STN(y + i, MUL(LDN(y + i, n - i), inv), n - i);
    }
}

/* ---- MaxPool 2-D row -------------------------------------------------------------------------- */
/* NaN-propagating max: a NaN in either operand wins. */
static inline vf v_maxnan(vf a, vf b) { return BLEND(ISNAN(a), MAXP(a, b), a); }
static inline float s_maxnan(float a, float b) { return a != a || a > b ? a : b; }

/* tmp[j] = max over rows [r0, r1) of input column j - pw (-Inf outside the row), then each
 * output is the max over its kw columns of tmp: stride 1 and 2 vectorized, others per lane. */
static void vmaxpool2d_row(const float *x, int64_t in_w, int64_t r0, int64_t r1, int64_t kw, int64_t sw, int64_t pw,
                           int64_t out_w, float *tmp, float *y)
{
    int64_t len = (out_w - 1) * sw + kw;      /* tmp columns the outputs read */
    int64_t lo = PVC_MIN(PVC_MAX(pw, 0), len), hi = PVC_MIN(len, pw + in_w);
    for (int64_t j = 0; j < lo; j++) tmp[j] = -INFINITY;
    for (int64_t j = PVC_MAX(hi, lo); j < len + 2 * VW; j++) tmp[j] = -INFINITY;
    const float *row0 = x + r0 * in_w;     /* tmp column j is input column j - pw (>= 0 below) */
    int64_t j = lo;
    for (; j + VW <= hi; j += VW) {
        vf m = LD(row0 + (j - pw));
        for (int64_t r = 1; r < r1 - r0; r++) m = v_maxnan(LD(row0 + r * in_w + (j - pw)), m);
        ST(tmp + j, m);
    }
    if (j < hi) {
        int64_t c = hi - j;
        vf m = LDN(row0 + (j - pw), c);
        for (int64_t r = 1; r < r1 - r0; r++) m = v_maxnan(LDN(row0 + r * in_w + (j - pw), c), m);
        STN(tmp + j, m, c);
    }
    int64_t ow = 0;
    if (sw == 1) {
        for (; ow + VW <= out_w; ow += VW) {
            vf m = LD(tmp + ow);
            for (int64_t k = 1; k < kw; k++) m = v_maxnan(LD(tmp + ow + k), m);
            ST(y + ow, m);
        }
    } else if (sw == 2) {
        for (; ow + VW <= out_w; ow += VW) {
            const float *t = tmp + 2 * ow;
            vf m = EVEN(LD(t), LD(t + VW));
            for (int64_t k = 1; k < kw; k++) m = v_maxnan(EVEN(LD(t + k), LD(t + k + VW)), m);
            ST(y + ow, m);
        }
    }
    for (; ow < out_w; ow++) {
        const float *t = tmp + ow * sw;
        float m = t[0];
        for (int64_t k = 1; k < kw; k++) m = s_maxnan(t[k], m);
        y[ow] = m;
    }
}

const pvk_vec_variant VARIANT_SYM = {
    VARIANT_NAME, VARIANT_ISA,
    { [PVK_VU_EXP] = map_exp, [PVK_VU_ERF] = map_erf, [PVK_VU_TANH] = map_tanh, [PVK_VU_SIGMOID] = map_sigmoid,
      [PVK_VU_GELU] = map_gelu, [PVK_VU_GELU_TANH] = map_gelu_tanh, [PVK_VU_RELU] = map_relu },
    vbinary, vlayernorm_row, vsoftmax_row, vmaxpool2d_row,
};
