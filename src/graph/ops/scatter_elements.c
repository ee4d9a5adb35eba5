/* ScatterElements: out = data, then for every position i of 'indices' (same shape as 'updates')
 * out[i with i[axis] replaced by indices[i]] takes updates[i] (replace, or reduce with
 * add/mul/max/min from opset 16/18), in index order. Indices are checked before any write. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

typedef struct sel_params { int axis; pvk_reduction red; } sel_params;

static pv_status scatter_elements_prepare(pvg_prep *p)
{
    if (p->nin < 3 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 3 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    if ((s = pvg_check_dtype(p, 1, (1u << PV_I64) | (1u << PV_I32)))) return s;
    if ((s = pvg_check_dtype(p, 2, PVG_ANY))) return s;
    int64_t axis;
    const char *rs;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    if ((s = pvg_attr_string(p, "reduction", "none", &rs))) return s;
    pvk_reduction red;
    if (!pvk_reduction_parse(rs, &red))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'reduction'='%s' not supported (none, add, mul, max, min)", rs);
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1], *upd = &p->in[2];
    if (upd->dtype != data->dtype)
        return pvg_prep_fail(p, PV_EFORMAT, "'updates' is %s, 'data' is %s", pv_dtype_name(upd->dtype), pv_dtype_name(data->dtype));
    int r = data->rank;
    if (r < 1) return pvg_prep_fail(p, PV_EFORMAT, "input 'data' must have rank >= 1");
    if (idx->rank != r || !pvc_same_shape(idx, upd))
        return pvg_prep_fail(p, PV_EFORMAT, "'indices' and 'updates' must have the same shape, of rank %d", r);
    int ax;
    if ((s = pvg_axis(p, axis, r, "attribute 'axis'", &ax))) return s;
    for (int i = 0; i < r; i++)
        if (i != ax && idx->dims[i] > data->dims[i])
            return pvg_prep_fail(p, PV_EFORMAT, "'indices' dim %d is %lld, larger than 'data' dim %lld", i,
                                 (long long)idx->dims[i], (long long)data->dims[i]);
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
    for (int64_t i = 0; i < total; i++) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < -n || k >= n)
            return pvc_fail(NULL, PV_EINPUT, "ScatterElements: index %lld out of range [%lld,%lld) in node '%s'",
                            (long long)k, (long long)-n, (long long)n, x->node && x->node->name ? x->node->name : "");
    }
    int64_t ds[PV_MAX_RANK], ci[PV_MAX_RANK] = { 0 }, base = 0;
    pvk_contig_strides(r, data->dims, ds);
    for (int64_t i = 0; i < total; i++) {
        int64_t k = pvc_get_i64(idx->data, idx->dtype, i);
        if (k < 0) k += n;
        pvk_reduce_elem(dst + (size_t)(base + k * ds[ax]) * es, u + (size_t)i * es, data->dtype, sp->red);
        for (int d = r - 1; d >= 0; d--) {              /* odometer over the indices' dims */
            if (d != ax) base += ds[d];
            if (++ci[d] < idx->dims[d]) break;
            if (d != ax) base -= ds[d] * idx->dims[d];
            ci[d] = 0;
        }
    }
    return PV_OK;
}

/* In place is safe: after the initial copy only 'indices' and 'updates' are read. */
const pvg_op pvg_op_ScatterElements = { "ScatterElements", "", PVG_OP_INPLACE, scatter_elements_prepare,
                                        scatter_elements_run };
