/* ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along time_axis
 * are reversed and the rest copied. batch_axis and time_axis are 0 and 1 in either order;
 * any dtype. sequence_lens (int64, or int32) may be a run-time input: run checks each length
 * lies in [0, time] and fails with PV_EINPUT otherwise. The work is pvk_reverse_sequence. */
#include "graph/graph.h"
#include "kernels/ref/extra.h"

typedef struct rs_params {
    int64_t time, batch, inner;
    bool    batch_major;
} rs_params;

static pv_status check_lens(pvg_prep *p, const pvc_tensor *t, int64_t time)
{
    for (int64_t i = 0; i < pvc_numel(t); i++) {
        int64_t v = pvc_get_i64(t->data, t->dtype, i);
        if (v < 0 || v > time)
            return pvg_prep_fail(p, PV_EFORMAT, "sequence_lens[%lld]=%lld is outside [0, %lld]", (long long)i,
                                 (long long)v, (long long)time);
    }
    return PV_OK;
}

static pv_status prep_ReverseSequence(pvg_prep *p)
{
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s;
    if ((s = pvg_check_dtype(p, 0, PVG_ANY)) != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32))) != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    int64_t batch_axis, time_axis;
    if ((s = pvg_attr_int(p, "batch_axis", 1, &batch_axis)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "time_axis", 0, &time_axis)) != PV_OK) return s;
    if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
        return pvg_prep_fail(p, PV_EFORMAT, "attributes 'batch_axis'=%lld and 'time_axis'=%lld must be 0 and 1 in some order",
                             (long long)batch_axis, (long long)time_axis);
    if (in->rank < 2) return pvg_prep_fail(p, PV_EFORMAT, "input must have rank >= 2, it has rank %d", in->rank);
    rs_params *rp = p->params;
    rp->batch_major = batch_axis == 0;
    rp->batch = in->dims[batch_axis];
    rp->time = in->dims[time_axis];
    rp->inner = 1;
    for (int d = 2; d < in->rank; d++) rp->inner *= in->dims[d];
    const pvc_tensor *L = &p->in[1];
    if (L->rank != 1 || L->dims[0] != rp->batch)
        return pvg_prep_fail(p, PV_EFORMAT, "sequence_lens must have shape [%lld] (the batch size)", (long long)rp->batch);
    if (L->data && (s = check_lens(p, L, rp->time)) != PV_OK) return s;
    pvg_out_set(p, 0, in->dtype, in->rank, in->dims);
    p->workspace = (size_t)rp->batch * sizeof(int64_t);
    return PV_OK;
}

static pv_status run_ReverseSequence(const pvg_exec *x)
{
    const rs_params *rp = x->params;
    const pvc_tensor *L = &x->in[1];
    int64_t *lens = x->ws;
    for (int64_t b = 0; b < rp->batch; b++) {
        lens[b] = pvc_get_i64(L->data, L->dtype, b);
        if (lens[b] < 0 || lens[b] > rp->time)
            return pvc_fail(NULL, PV_EINPUT, "sequence_lens[%lld]=%lld is outside [0, %lld]", (long long)b,
                            (long long)lens[b], (long long)rp->time);
    }
    pvk_reverse_sequence(x->pool, pv_dtype_size(x->in[0].dtype), rp->time, rp->batch, rp->batch_major,
                         rp->inner, lens, x->in[0].data, x->out[0].data);
    return PV_OK;
}

const pvg_op pvg_op_ReverseSequence = { "ReverseSequence", "", 0, prep_ReverseSequence, run_ReverseSequence };
