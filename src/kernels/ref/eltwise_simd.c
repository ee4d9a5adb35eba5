/* Reference twins of the vectorized memory-bound kernels (see eltwise_simd.h), the variant
 * table and its dispatch. The twins are the tests' oracle: libm maps, statistics in double,
 * NaN-propagating max. */
#include "kernels/ref/eltwise_simd.h"

#include <pthread.h>

/* ---- unary maps ----------------------------------------------------------------------------- */
#define REF_MAP(NAME, EXPR)                                                                     \
    static void NAME(const float *x, float *y, int64_t n)                                       \
    {                                                                                           \
        for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (EXPR); }                      \
    }
REF_MAP(ref_exp, expf(v))
REF_MAP(ref_erf, erff(v))
REF_MAP(ref_tanh, tanhf(v))
REF_MAP(ref_sigmoid, 1.0f / (1.0f + expf(-v)))
REF_MAP(ref_gelu, 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)))
REF_MAP(ref_gelu_tanh, 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v))))
REF_MAP(ref_relu, v > 0.0f ? v : 0.0f)

/* ---- binary rows ---------------------------------------------------------------------------- */
static void ref_binary(pvk_vbin_op op, const float *a, int64_t sa, const float *b, int64_t sb, float *y,
                       int64_t n, const pvg_act *act)
{
    for (int64_t i = 0; i < n; i++) {
        float u = a[i * sa], v = b[i * sb];
        switch (op) {
        case PVK_VB_ADD: y[i] = u + v; break;
        case PVK_VB_SUB: y[i] = u - v; break;
        case PVK_VB_MUL: y[i] = u * v; break;
        case PVK_VB_DIV: y[i] = u / v; break;
        case PVK_VB_COUNT: break;
        }
    }
    if (act) pvk_act_apply(act, y, n);
}

/* ---- LayerNormalization row: two passes in double ------------------------------------------ */
static void ref_layernorm_row(const float *x, const float *scale, const float *bias, float *y, int64_t len,
                              float eps, float *mean_out, float *invstd_out)
{
    double s = 0.0, v = 0.0;
    for (int64_t i = 0; i < len; i++) s += x[i];
    double mean = s / (double)len;
    for (int64_t i = 0; i < len; i++) {
        double d = x[i] - mean;
        v += d * d;
    }
    float fm = (float)mean, inv = (float)(1.0 / sqrt(v / (double)len + (double)eps));
    if (mean_out) *mean_out = fm;
    if (invstd_out) *invstd_out = inv;
    for (int64_t i = 0; i < len; i++) y[i] = (x[i] - fm) * inv * scale[i] + (bias ? bias[i] : 0.0f);
}

/* ---- Softmax row ------------------------------------------------------------------------------ */
static void ref_softmax_row(const float *x, float *y, int64_t n, bool log_)
{
    float mx = -INFINITY;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        nan |= x[i] != x[i];
        mx = x[i] > mx ? x[i] : mx;
    }
    if (nan) mx = NAN;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float e = expf(x[i] - mx);
        if (!log_) y[i] = e;
        sum += e;
    }
    if (log_) {
        float ls = (float)log(sum);
        for (int64_t i = 0; i < n; i++) y[i] = x[i] - mx - ls;
    } else {
        float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < n; i++) y[i] *= inv;
    }
}

/* ---- MaxPool 2-D row -------------------------------------------------------------------------- */
static inline float max_nan(float a, float b) { return a != a || a > b ? a : b; }

static void ref_maxpool2d_row(const float *x, int64_t in_w, int64_t r0, int64_t r1, int64_t kw, int64_t sw,
                              int64_t pw, int64_t out_w, float *tmp, float *y)
{
    (void)tmp;
    for (int64_t ow = 0; ow < out_w; ow++) {
        int64_t c0 = ow * sw - pw;
        float best = -INFINITY;
        for (int64_t r = r0; r < r1; r++)
            for (int64_t k = 0; k < kw; k++) {
                int64_t c = c0 + k;
                if (c >= 0 && c < in_w) best = max_nan(x[r * in_w + c], best);
            }
        y[ow] = best;
    }
}

const pvk_vec_variant pvk_vec_ref = {
    "ref", PVC_ISA_SCALAR,
    { [PVK_VU_EXP] = ref_exp, [PVK_VU_ERF] = ref_erf, [PVK_VU_TANH] = ref_tanh, [PVK_VU_SIGMOID] = ref_sigmoid,
      [PVK_VU_GELU] = ref_gelu, [PVK_VU_GELU_TANH] = ref_gelu_tanh, [PVK_VU_RELU] = ref_relu },
    ref_binary, ref_layernorm_row, ref_softmax_row, ref_maxpool2d_row,
};

/* ---- table and dispatch ----------------------------------------------------------------------- */
const pvk_vec_variant *const pvk_vec_variants[] = {
    &pvk_vec_ref,
#if defined(__x86_64__)   /* x86/ files are built on x86-64 only (CMakeLists.txt) */
    &pvk_vec_avx2,
    &pvk_vec_avx512,
#endif
};
const int pvk_vec_nvariants = (int)PVC_COUNTOF(pvk_vec_variants);

static const pvk_vec_variant *selected;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

static void select_variant(void)
{
    pvc_isa isa = pvc_isa_selected();
    selected = pvk_vec_variants[0];
    for (int i = 0; i < pvk_vec_nvariants; i++)
        if (pvk_vec_variants[i]->isa <= isa) selected = pvk_vec_variants[i];
}

const pvk_vec_variant *pvk_vec_selected(void)
{
    pthread_once(&select_once, select_variant);
    return selected;
}

/* ---- drivers ---------------------------------------------------------------------------------- */
enum { UN_GRAIN = 16384 };   /* elements per parallel chunk: 64 KB, a few microseconds */

typedef struct vun_job { pvk_vun_fn fn; const float *x; float *y; } vun_job;

static void vun_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const vun_job *j = ctx;
    j->fn(j->x + b, j->y + b, e - b);
}

void pvk_vunary(pvc_pool *pool, pvk_vun_op op, const float *x, float *y, int64_t n)
{
    if (n <= 0 || (unsigned)op >= PVK_VU_COUNT) return;
    vun_job j = { pvk_vec_selected()->unary[op], x, y };
    pvc_parallel_for(pool, n, UN_GRAIN, vun_chunk, &j);
}
