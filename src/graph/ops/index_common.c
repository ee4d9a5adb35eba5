/* Checks shared by the index operators (see index_common.h). */
#include "graph/ops/index_common.h"

pv_status pvg_index_inputs(pvg_prep *p, int nin)
{
    if (p->nin < nin || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected %d inputs and 1 output", nin);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32)))) return s;
    if (nin > 2 && (s = pvg_check_dtype(p, 2, PVG_ANY))) return s;
    return PV_OK;
}

pv_status pvg_gather_inputs(pvg_prep *p, int64_t *axis)
{
    pv_status s = pvg_index_inputs(p, 2);
    if (s) return s;
    if ((s = pvg_attr_int(p, "axis", 0, axis))) return s;
    if (p->in[0].rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'data' must have rank >= 1");
    return PV_OK;
}

pv_status pvg_scatter_reduction(pvg_prep *p, pvk_reduction *red)
{
    const char *rs;
    pv_status s = pvg_attr_string(p, "reduction", "none", &rs);
    if (s) return s;
    if (!pvk_reduction_parse(rs, red))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'reduction'='%s' not supported (none, add, mul, max, min)", rs);
    const pvc_tensor *data = &p->in[0], *upd = &p->in[2];
    if (upd->dtype != data->dtype)
        return pvg_prep_fail(p, PV_EFORMAT, "'updates' is %s, 'data' is %s", pv_dtype_name(upd->dtype), pv_dtype_name(data->dtype));
    return PV_OK;
}

pv_status pvg_index_dims_within(pvg_prep *p, int axis)
{
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1];
    for (int i = 0; i < data->rank; i++)
        if (i != axis && idx->dims[i] > data->dims[i])
            return pvg_prep_fail(p, PV_EFORMAT, "'indices' dim %d is %lld, larger than 'data' dim %lld", i,
                                 (long long)idx->dims[i], (long long)data->dims[i]);
    return PV_OK;
}

pv_status pvg_index_check(const pvg_exec *x, const char *op, const pvc_tensor *idx, const int64_t *lim,
                          int period)
{
    int64_t count = pvc_numel(idx);
    for (int64_t j = 0; j < count; j++) {
        int64_t v = pvc_get_i64(idx->data, idx->dtype, j), n = lim[j % period];
        if (v < -n || v >= n)
            return pvc_fail(NULL, PV_EINPUT, "%s: index %lld out of range [%lld,%lld) in node '%s'", op,
                            (long long)v, (long long)-n, (long long)n, x->node && x->node->name ? x->node->name : "");
    }
    return PV_OK;
}
