/* Sum and Mean: 1..N float inputs of one dtype with numpy broadcasting. The output has the
 * broadcast shape; it is folded left to right with pvk_binary (y = in0 + in1, y += in[k]) and
 * Mean then divides by N. F16/BF16 are staged through f32, so the running sum is f32. */
#include "graph/ops/lowp.h"
#include "kernels/ref/eltwise.h"

#include <string.h>

typedef struct sum_params { bool mean; } sum_params;

static pv_status sum_common(pvg_prep *p, bool mean)
{
    if (p->nin < 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects at least 1 input and 1 output, got %d inputs and %d outputs",
                             p->nin, p->nout);
    pv_status s;
    for (int k = 0; k < p->nin; k++) {
        if ((s = pvg_check_dtype(p, k, PVG_FLOATS)) != PV_OK) return s;
        if (p->in[k].dtype != p->in[0].dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d has dtype %s, input 0 has %s", k,
                                 pv_dtype_name(p->in[k].dtype), pv_dtype_name(p->in[0].dtype));
    }
    if (p->in[0].dtype != PV_F32 && p->nin > 16)   /* the f32 staging handles 16 inputs */
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "%d %s inputs: at most 16 are supported for 16-bit floats",
                             p->nin, pv_dtype_name(p->in[0].dtype));
    /* The broadcast shape, one input at a time. */
    pvc_tensor acc = p->in[0];
    for (int k = 1; k < p->nin; k++) {
        const pvc_tensor *pair[2] = { &acc, &p->in[k] };
        int rank;
        int64_t dims[PV_MAX_RANK];
        if (!pvk_broadcast_shape(2, pair, &rank, dims)) {
            char a[128], b[128];
            return pvg_prep_fail(p, PV_EFORMAT, "input %d shape %s does not broadcast with %s (inputs 0..%d)", k,
                                 pvc_shape_str(&p->in[k], a, sizeof a), pvc_shape_str(&acc, b, sizeof b), k - 1);
        }
        acc.rank = rank;
        memcpy(acc.dims, dims, sizeof dims);
    }
    sum_params *sp = p->params;
    sp->mean = mean;
    pvg_out_set(p, 0, p->in[0].dtype, acc.rank, acc.dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status sum_run_f32(const pvg_exec *x)
{
    const sum_params *sp = x->params;
    pvc_tensor *y = &x->out[0];
    if (x->nin == 1) {
        if (y->data != x->in[0].data) memmove(y->data, x->in[0].data, pvc_nbytes(y));
        return PV_OK;
    }
    pvk_binary(x->pool, PVK_BIN_ADD, &x->in[0], &x->in[1], y);
    for (int k = 2; k < x->nin; k++) pvk_binary(x->pool, PVK_BIN_ADD, y, &x->in[k], y);
    if (sp->mean) {
        float n = (float)x->nin;
        pvc_tensor d;
        memset(&d, 0, sizeof d);
        d.dtype = PV_F32;
        d.rank = 0;
        d.data = &n;
        pvk_binary(x->pool, PVK_BIN_DIV, y, &d, y);
    }
    return PV_OK;
}

static pv_status sum_run(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, sum_run_f32) : sum_run_f32(x);
}

static pv_status prep_Sum(pvg_prep *p) { return sum_common(p, false); }
static pv_status prep_Mean(pvg_prep *p) { return sum_common(p, true); }

const pvg_op pvg_op_Sum = { "Sum", "", PVG_OP_INPLACE, prep_Sum, sum_run };
const pvg_op pvg_op_Mean = { "Mean", "", PVG_OP_INPLACE, prep_Mean, sum_run };
