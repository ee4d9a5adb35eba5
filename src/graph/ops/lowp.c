/* f16 / bf16 staging through f32 for the dense operators (see lowp.h). The staging area holds,
 * in order, an f32 copy of every 16-bit float input and output, each 64-byte aligned; the
 * operator's own workspace follows it. */
#include "graph/ops/lowp.h"

#include <string.h>

#define LOWP_MAX 16

static bool is_lowp(const pvc_tensor *t) { return t->rank >= 0 && (t->dtype == PV_F16 || t->dtype == PV_BF16); }

static size_t staged_bytes(const pvc_tensor *t)
{
    return is_lowp(t) ? ((size_t)pvc_numel(t) * sizeof(float) + 63) & ~(size_t)63 : 0;
}

size_t pvg_lowp_bytes(const pvg_prep *p)
{
    size_t n = 0;
    for (int i = 0; i < p->nin; i++) n += staged_bytes(&p->in[i]);
    for (int i = 0; i < p->nout; i++) n += staged_bytes(&p->out[i]);
    return n;
}

bool pvg_lowp_needed(const pvg_exec *x)
{
    for (int i = 0; i < x->nin; i++) if (is_lowp(&x->in[i])) return true;
    for (int i = 0; i < x->nout; i++) if (is_lowp(&x->out[i])) return true;
    return false;
}

static void to_f32(const pvc_tensor *t, float *dst)
{
    int64_t n = pvc_numel(t);
    const uint16_t *s = t->data;
    if (t->dtype == PV_F16) for (int64_t i = 0; i < n; i++) dst[i] = pvc_f16_to_f32(s[i]);
    else                    for (int64_t i = 0; i < n; i++) dst[i] = pvc_bf16_to_f32(s[i]);
}

static void from_f32(const float *src, pvc_tensor *t)
{
    int64_t n = pvc_numel(t);
    uint16_t *d = t->data;
    if (t->dtype == PV_F16) for (int64_t i = 0; i < n; i++) d[i] = pvc_f32_to_f16(src[i]);
    else                    for (int64_t i = 0; i < n; i++) d[i] = pvc_f32_to_bf16(src[i]);
}

static pvc_tensor as_f32(const pvc_tensor *t, void *data)
{
    pvc_tensor r = *t;
    r.dtype = PV_F32;
    pvc_tensor_set_contiguous(&r);
    r.data = data;
    return r;
}

pv_status pvg_lowp_run(const pvg_exec *x, pv_status (*run_f32)(const pvg_exec *x))
{
    if (x->nin > LOWP_MAX || x->nout > LOWP_MAX)
        return pvc_fail(NULL, PV_EINTERNAL, "f16 staging: more than %d inputs or outputs", LOWP_MAX);
    pvc_tensor in[LOWP_MAX], out[LOWP_MAX];
    char *ws = x->ws;
    for (int i = 0; i < x->nin; i++) {
        in[i] = x->in[i];
        if (!is_lowp(&x->in[i])) continue;
        in[i] = as_f32(&x->in[i], ws);
        to_f32(&x->in[i], (float *)ws);
        ws += staged_bytes(&x->in[i]);
    }
    for (int i = 0; i < x->nout; i++) {
        out[i] = x->out[i];
        if (!is_lowp(&x->out[i])) continue;
        out[i] = as_f32(&x->out[i], ws);
        ws += staged_bytes(&x->out[i]);
    }
    pvg_exec x32 = *x;
    x32.in = in;
    x32.out = out;
    x32.ws = ws;
    pv_status s = run_f32(&x32);
    if (s != PV_OK) return s;
    for (int i = 0; i < x->nout; i++)
        if (is_lowp(&x->out[i]) && x->out[i].data) from_f32(out[i].data, &x->out[i]);
    return PV_OK;
}
