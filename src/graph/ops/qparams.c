/* Scale / zero-point checks and reads for the quantized operators (qparams.h). */
#include "graph/ops/qparams.h"

pv_status pvg_qparam_check(pvg_prep *p, int i, const char *what, unsigned mask, int64_t n, int64_t *count)
{
    *count = 1;
    if (!pvg_has_in(p, i)) return PV_OK;
    pv_status s = pvg_check_dtype(p, i, mask);
    if (s != PV_OK) return s;
    const pvc_tensor *t = &p->in[i];
    int64_t c = pvc_numel(t);
    if (t->rank == 0 || (t->rank == 1 && c == 1)) return PV_OK;
    if (n > 0 && t->rank == 1 && c == n) {
        *count = n;
        return PV_OK;
    }
    if (n > 0)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input %s has %lld values (rank %d); one value or a 1-D tensor of %lld is supported",
                             what, (long long)c, t->rank, (long long)n);
    return pvg_prep_fail(p, PV_EUNSUPPORTED, "input %s has %lld values (rank %d); one value is supported",
                         what, (long long)c, t->rank);
}

void pvg_qzp_read(const pvc_tensor *t, int64_t count, int32_t *out)
{
    bool one = !t->data || t->rank < 0 || pvc_numel(t) == 1;
    for (int64_t i = 0; i < count; i++) {
        int64_t j = one ? 0 : i;
        if (!t->data || t->rank < 0) out[i] = 0;
        else if (t->dtype == PV_U8) out[i] = ((const uint8_t *)t->data)[j];
        else if (t->dtype == PV_I8) out[i] = ((const int8_t *)t->data)[j];
        else out[i] = ((const int32_t *)t->data)[j];
    }
}
