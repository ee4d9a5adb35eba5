/* ScatterElements (and Scatter, its name in opsets 9-10): out = data, then for every position i of 'indices' (same shape as 'updates')
 * out[i with i[axis] replaced by indices[i]] takes updates[i] (replace, or reduce with
 * add/mul/max/min from opset 16/18), in index order. Indices are checked before any write. */
#include "graph/ops/index_common.h"

typedef struct sel_params { int axis; pvk_reduction red; } sel_params;

static pv_status scatter_elements_prepare(pvg_prep *p)
{
    pv_status s = pvg_index_inputs(p, 3);
    if (s) return s;
    int64_t axis;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    pvk_reduction red;
    if ((s = pvg_scatter_reduction(p, &red))) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1], *upd = &p->in[2];
    int r = data->rank;
    if (r < 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'data' must have rank >= 1");
    if (idx->rank != r || !pvc_same_shape(idx, upd))
        return pvg_prep_fail(p, PV_EFORMAT, "'indices' and 'updates' must have the same shape, of rank %d", r);
    int ax;
    if ((s = pvg_axis(p, axis, r, "attribute 'axis'", &ax))) return s;
    if ((s = pvg_index_dims_within(p, ax))) return s;
    sel_params *sp = p->params;
    sp->axis = ax;
    sp->red = red;
    pvg_out_set(p, 0, data->dtype, r, data->dims);
    return PV_OK;
}

static pv_status scatter_elements_run(const pvg_exec *x)
{
    const sel_params *sp = x->params;
    const pvc_tensor *data = &x->in[0], *idx = &x->in[1], *upd = &x->in[2];
    int ax = sp->axis, r = data->rank;
    size_t es = pv_dtype_size(data->dtype);
    int64_t total = pvc_numel(idx), n = data->dims[ax];
    unsigned char *dst = x->out[0].data;
    const unsigned char *u = upd->data;
    pvk_copy_bytes(x->pool, dst, data->data, pvc_nbytes(data));   /* no-op when in place */
    pv_status s = pvg_index_check(x, "ScatterElements", idx, &n, 1);
    if (s) return s;
    pvk_axis_walk w;
    pvk_axis_walk_begin(&w, r, data->dims, idx->dims, ax);
    for (int64_t i = 0; i < total; i++, pvk_axis_walk_next(&w)) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < 0) k += n;
        pvk_reduce_elem(dst + (size_t)(w.base + k * w.ds[ax]) * es, u + (size_t)i * es, data->dtype, sp->red);
    }
    return PV_OK;
}

/* Scatter (opsets 9-10) is ScatterElements under its old name (no 'reduction'). */
static pv_status scatter_prepare(pvg_prep *p)
{
    if (p->opset >= 11)
        return pvg_prep_fail(p, PV_EFORMAT, "Scatter is deprecated from opset 11 (ScatterElements replaces it), the model has opset %d",
                             p->opset);
    if (pvg_attr_has(p, "reduction"))
        return pvg_prep_fail(p, PV_EFORMAT, "Scatter has no attribute 'reduction' (ScatterElements-16 does)");
    return scatter_elements_prepare(p);
}

/* In place is safe: after the initial copy only 'indices' and 'updates' are read. */
const pvg_op pvg_op_ScatterElements = { "ScatterElements", "", PVG_OP_INPLACE, scatter_elements_prepare,
                                        scatter_elements_run };
const pvg_op pvg_op_Scatter = { "Scatter", "", PVG_OP_INPLACE, scatter_prepare, scatter_elements_run };
