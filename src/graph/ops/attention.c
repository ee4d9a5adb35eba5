/* perceive::Attention: Y = softmax(scale * Q K^T + mask) V, softmax over the keys.
 * Made by the fuse_attention pass (src/graph/passes/attention.c) from torch's exported
 * MatMul -> scale -> [Add mask] -> Softmax -> MatMul chains; registered under the "perceive"
 * domain by that pass.
 *   inputs:  Q [..., Lq, D], K [..., Lk, D] (or [..., D, Lk] when k_transposed = 1),
 *            V [..., Lk, Dv], optional mask broadcastable to [..., Lq, Lk]; batch dims broadcast
 *   attrs:   scale (float, default 1), k_transposed (int 0/1, default 0)
 *   output:  [..., Lq, Dv]
 * The kernel streams over key blocks (online softmax), so memory does not grow with Lq * Lk.
 * f32; f16/bf16 are staged through f32 (so a fused 16-bit graph computes its scores in f32). */
#include "graph/ops/lowp.h"
#include "kernels/ref/attention.h"

_Static_assert(sizeof(pvk_attn_desc) <= PVG_PARAMS_BYTES, "attention params");

static pv_status attention_prepare(pvg_prep *p)
{
    pv_status s;
    pvk_attn_desc *d = p->params;
    if ((p->nin != 3 && p->nin != 4) || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 3 or 4 inputs (Q, K, V, [mask]) and 1 output, got %d and %d",
                             p->nin, p->nout);
    float scale;
    int64_t kt;
    if ((s = pvg_attr_float(p, "scale", 1.0f, &scale)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "k_transposed", 0, &kt)) != PV_OK) return s;
    if (kt != 0 && kt != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'k_transposed'=%lld must be 0 or 1", (long long)kt);
    if (!isfinite(scale))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'scale'=%g is not finite", (double)scale);
    for (int i = 0; i < 3; i++)
        if (!pvg_has_in(p, i)) return pvg_prep_fail(p, PV_EFORMAT, "input %d (Q, K, V) is required", i);
    bool has_mask = p->nin == 4 && pvg_has_in(p, 3);
    for (int i = 0; i < (has_mask ? 4 : 3); i++) {
        if ((s = pvg_check_dtype(p, i, PVG_FLOATS)) != PV_OK) return s;
        if (p->in[i].dtype != p->in[0].dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d is %s but Q is %s", i, pv_dtype_name(p->in[i].dtype),
                                 pv_dtype_name(p->in[0].dtype));
    }
    char why[256];
    if (!pvk_attn_desc_init(d, &p->in[0], &p->in[1], &p->in[2], has_mask ? &p->in[3] : NULL, kt != 0, scale,
                            why, sizeof why)) {
        char a[96], b[96], c[96], m[96] = "none";
        pvc_shape_str(&p->in[0], a, sizeof a);
        pvc_shape_str(&p->in[1], b, sizeof b);
        pvc_shape_str(&p->in[2], c, sizeof c);
        if (has_mask) pvc_shape_str(&p->in[3], m, sizeof m);
        return pvg_prep_fail(p, PV_EFORMAT, "%s (Q %s, K %s, V %s, mask %s, k_transposed %lld)", why, a, b, c, m,
                             (long long)kt);
    }
    int64_t dims[PV_MAX_RANK];
    int r = pvk_attn_out_dims(d, dims);
    pvg_out_set(p, 0, p->in[0].dtype, r, dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status attention_run_f32(const pvg_exec *x)
{
    const pvk_attn_desc *d = x->params;
    pvk_attention_f32(x->pool, d, x->in[0].data, x->in[1].data, x->in[2].data,
                      d->has_mask ? x->in[3].data : NULL, x->out[0].data);
    return PV_OK;
}

static pv_status attention_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, attention_run_f32) : attention_run_f32(x);
}

const pvg_op pvg_op_Attention = { "Attention", "perceive", 0, attention_prepare, attention_run };
