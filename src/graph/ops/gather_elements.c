/* GatherElements: out has the indices' shape; out[i..., j, k...] = data[i..., idx[i..., j, k...],
 * k...] along 'axis'. Indices are run-time data, checked before any read. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

typedef struct gel_params { int axis; } gel_params;

static pv_status gather_elements_prepare(pvg_prep *p)
{
    if (p->nin < 2 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32)))) return s;
    int64_t axis;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1];
    if (data->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'data' must have rank >= 1");
    if (idx->rank != data->rank)
        return pvg_prep_fail(p, PV_EFORMAT, "'indices' has rank %d, 'data' rank %d", idx->rank, data->rank);
    int ax;
    if ((s = pvg_axis(p, axis, data->rank, "attribute 'axis'", &ax))) return s;
    for (int i = 0; i < data->rank; i++)
        if (i != ax && idx->dims[i] > data->dims[i])
            return pvg_prep_fail(p, PV_EFORMAT, "'indices' dim %d is %lld, larger than 'data' dim %lld", i,
                                 (long long)idx->dims[i], (long long)data->dims[i]);
    ((gel_params *)p->params)->axis = ax;
    pvg_out_set(p, 0, data->dtype, idx->rank, idx->dims);
    return PV_OK;
}

static pv_status gather_elements_run(const pvg_exec *x)
{
    const gel_params *gp = x->params;
    const pvc_tensor *data = &x->in[0], *idx = &x->in[1];
    int ax = gp->axis, r = data->rank;
    size_t es = pv_dtype_size(data->dtype);
    int64_t total = pvc_numel(idx), n = data->dims[ax];
    unsigned char *dst = x->out[0].data;
    const unsigned char *src = data->data;
    if (total == 0) return PV_OK;
    for (int64_t i = 0; i < total; i++) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < -n || k >= n) {
            memset(dst, 0, (size_t)total * es);
            return pvc_fail(NULL, PV_EINPUT, "GatherElements: index %lld out of range [%lld,%lld) in node '%s'",
                            (long long)k, (long long)-n, (long long)n, x->node && x->node->name ? x->node->name : "");
        }
    }
    int64_t ds[PV_MAX_RANK], ci[PV_MAX_RANK] = { 0 }, base = 0;
    pvk_contig_strides(r, data->dims, ds);
    for (int64_t i = 0; i < total; i++) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < 0) k += n;
        memcpy(dst + (size_t)i * es, src + (size_t)(base + k * ds[ax]) * es, es);
        for (int d = r - 1; d >= 0; d--) {              /* odometer over the indices' dims */
            if (d != ax) base += ds[d];
            if (++ci[d] < idx->dims[d]) break;
            if (d != ax) base -= ds[d] * idx->dims[d];
            ci[d] = 0;
        }
    }
    return PV_OK;
}

const pvg_op pvg_op_GatherElements = { "GatherElements", "", 0, gather_elements_prepare, gather_elements_run };
