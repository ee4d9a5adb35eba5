/* Broadcasting binaries beside binary.c: PRelu (slope broadcast to X, output X's shape; F32,
 * F16/BF16 through f32, I32, I64) and Xor (bool, numpy broadcasting). Kernels in
 * kernels/ref/extra.c on the shared row iterator. */
#include "graph/ops/broadcast_out.h"
#include "graph/ops/lowp.h"
#include "kernels/ref/eltwise.h"
#include "kernels/ref/extra.h"

static pv_status check_two(pvg_prep *p)
{
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    if (!pvg_has_in(p, 0) || !pvg_has_in(p, 1)) return pvg_prep_fail(p, PV_EFORMAT, "an input is missing");
    if (p->in[0].dtype != p->in[1].dtype)
        return pvg_prep_fail(p, PV_EFORMAT, "input 1 has dtype %s, input 0 has %s", pv_dtype_name(p->in[1].dtype),
                             pv_dtype_name(p->in[0].dtype));
    return PV_OK;
}

/* ---- PRelu --------------------------------------------------------------------------------- */
static pv_status prep_PRelu(pvg_prep *p)
{
    pv_status s = check_two(p);
    if (s != PV_OK) return s;
    pv_dtype t = p->in[0].dtype;
    if (!pvk_prelu_supported(t) && t != PV_F16 && t != PV_BF16)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "dtype %s is not supported", pv_dtype_name(t));
    /* slope broadcasts to X (unidirectional): the broadcast shape must be X's. */
    const pvc_tensor *in[2] = { &p->in[0], &p->in[1] };
    int rank;
    int64_t dims[PV_MAX_RANK];
    bool ok = pvk_broadcast_shape(2, in, &rank, dims) && rank == p->in[0].rank;
    for (int i = 0; ok && i < rank; i++) ok = dims[i] == p->in[0].dims[i];
    if (!ok) {
        char a[128], b[128];
        return pvg_prep_fail(p, PV_EFORMAT, "slope shape %s does not broadcast to X shape %s",
                             pvc_shape_str(&p->in[1], a, sizeof a), pvc_shape_str(&p->in[0], b, sizeof b));
    }
    pvg_out_set(p, 0, t, p->in[0].rank, p->in[0].dims);
    p->workspace = pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status prelu_run_direct(const pvg_exec *x)
{
    pvk_prelu(x->pool, &x->in[0], &x->in[1], &x->out[0]);
    return PV_OK;
}

static pv_status run_PRelu(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, prelu_run_direct) : prelu_run_direct(x);
}

const pvg_op pvg_op_PRelu = { "PRelu", "", PVG_OP_INPLACE, prep_PRelu, run_PRelu };

/* ---- Xor ----------------------------------------------------------------------------------- */
static pv_status prep_Xor(pvg_prep *p)
{
    pv_status s = check_two(p);
    if (s != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 0, 1u << PV_BOOL)) != PV_OK) return s;
    return pvg_broadcast_out(p, 2, PV_BOOL);
}

static pv_status run_Xor(const pvg_exec *x)
{
    pvk_xor(x->pool, &x->in[0], &x->in[1], &x->out[0]);
    return PV_OK;
}

const pvg_op pvg_op_Xor = { "Xor", "", PVG_OP_INPLACE, prep_Xor, run_Xor };
