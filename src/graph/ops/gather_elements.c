/* GatherElements: out has the indices' shape; out[i..., j, k...] = data[i..., idx[i..., j, k...],
 * k...] along 'axis'. Indices are run-time data, checked before any read. */
#include "graph/ops/index_common.h"

#include <string.h>

typedef struct gel_params { int axis; } gel_params;

static pv_status gather_elements_prepare(pvg_prep *p)
{
    int64_t axis;
    pv_status s = pvg_gather_inputs(p, &axis);
    if (s) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1];
    if (idx->rank != data->rank)
        return pvg_prep_fail(p, PV_EFORMAT, "'indices' has rank %d, 'data' rank %d", idx->rank, data->rank);
    int ax;
    if ((s = pvg_axis(p, axis, data->rank, "attribute 'axis'", &ax))) return s;
    if ((s = pvg_index_dims_within(p, ax))) return s;
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
    pv_status s = pvg_index_check(x, "GatherElements", idx, &n, 1);
    if (s) {
        memset(dst, 0, (size_t)total * es);
        return s;
    }
    pvk_axis_walk w;
    pvk_axis_walk_begin(&w, r, data->dims, idx->dims, ax);
    for (int64_t i = 0; i < total; i++, pvk_axis_walk_next(&w)) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < 0) k += n;
        memcpy(dst + (size_t)i * es, src + (size_t)(w.base + k * w.ds[ax]) * es, es);
    }
    return PV_OK;
}

const pvg_op pvg_op_GatherElements = { "GatherElements", "", 0, gather_elements_prepare, gather_elements_run };
