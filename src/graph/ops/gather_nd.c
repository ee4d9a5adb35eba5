/* GatherND: each row of 'indices' (last dim k) picks a slice data[b..., i0, ..., ik-1, ...]
 * within its batch (the first 'batch_dims' dims, shared by data and indices).
 * Output: indices.shape[:-1] + data.shape[batch_dims + k:]. Indices are checked before any read. */
#include "graph/ops/index_common.h"

#include <string.h>

typedef struct gnd_params { int b, k; } gnd_params;

static pv_status gather_nd_prepare(pvg_prep *p)
{
    pv_status s = pvg_index_inputs(p, 2);
    if (s) return s;
    int64_t b;
    if ((s = pvg_attr_int(p, "batch_dims", 0, &b))) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1];
    int r = data->rank, q = idx->rank;
    if (r < 1 || q < 1) return pvg_prep_fail(p, PV_EFORMAT, "'data' and 'indices' must have rank >= 1");
    if (b < 0 || b >= PVC_MIN(r, q))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'batch_dims'=%lld must be in [0,%d)", (long long)b, PVC_MIN(r, q));
    int64_t k = idx->dims[q - 1];
    if (k < 1 || k > r - b)
        return pvg_prep_fail(p, PV_EFORMAT, "'indices' last dim %lld must be in [1,%lld]", (long long)k, (long long)(r - b));
    for (int i = 0; i < b; i++)
        if (idx->dims[i] != data->dims[i])
            return pvg_prep_fail(p, PV_EFORMAT, "batch dim %d: 'indices' has %lld, 'data' %lld", i,
                                 (long long)idx->dims[i], (long long)data->dims[i]);
    int64_t d[PV_MAX_RANK];
    int n = 0;
    for (int i = 0; i < q - 1; i++) d[n++] = idx->dims[i];
    for (int i = (int)(b + k); i < r; i++) d[n++] = data->dims[i];
    if (n > PV_MAX_RANK) return pvg_prep_fail(p, PV_EUNSUPPORTED, "output rank %d is above %d", n, PV_MAX_RANK);
    gnd_params *gp = p->params;
    gp->b = (int)b;
    gp->k = (int)k;
    pvg_out_set(p, 0, data->dtype, n, d);
    return PV_OK;
}

static pv_status gather_nd_run(const pvg_exec *x)
{
    const gnd_params *gp = x->params;
    const pvc_tensor *data = &x->in[0], *idx = &x->in[1];
    int b = gp->b, k = gp->k, r = data->rank;
    size_t es = pv_dtype_size(data->dtype);
    int64_t nb = 1, tuples = pvc_numel(idx) / k, slice = 1, ds[PV_MAX_RANK];
    for (int i = 0; i < b; i++) nb *= data->dims[i];
    for (int i = b + k; i < r; i++) slice *= data->dims[i];
    pvk_contig_strides(r, data->dims, ds);
    int64_t per_batch = nb ? tuples / nb : 0, batch_elems = b > 0 ? ds[b - 1] : 0;
    unsigned char *dst = x->out[0].data;
    const unsigned char *src = data->data;
    if (tuples == 0 || slice == 0) return PV_OK;
    pv_status s = pvg_index_check(x, "GatherND", idx, data->dims + b, k);
    if (s) {
        memset(dst, 0, (size_t)(tuples * slice) * es);
        return s;
    }
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = (t / per_batch) * batch_elems;
        for (int j = 0; j < k; j++) {
            int64_t v = pvc_get_i64(idx->data, idx->dtype, t * k + j);
            if (v < 0) v += data->dims[b + j];
            off += v * ds[b + j];
        }
        memcpy(dst + (size_t)(t * slice) * es, src + (size_t)off * es, (size_t)slice * es);
    }
    return PV_OK;
}

const pvg_op pvg_op_GatherND = { "GatherND", "", 0, gather_nd_prepare, gather_nd_run };
