/* ScatterND: out = data, then each row of 'indices' (last dim k) selects the slice
 * out[i0, ..., ik-1, ...] that takes the matching slice of 'updates' (replace, or reduce with
 * add/mul/max/min from opset 16/18). Updates apply in index order, so with duplicate indices
 * the last one wins. Indices are checked before any write. */
#include "graph/ops/index_common.h"

#include <string.h>

typedef struct snd_params { int k; pvk_reduction red; } snd_params;

static pv_status scatter_nd_prepare(pvg_prep *p)
{
    pv_status s = pvg_index_inputs(p, 3);
    if (s) return s;
    pvk_reduction red;
    if ((s = pvg_scatter_reduction(p, &red))) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1], *upd = &p->in[2];
    int r = data->rank, q = idx->rank;
    if (r < 1 || q < 1) return pvg_prep_fail(p, PV_EFORMAT, "'data' and 'indices' must have rank >= 1");
    int64_t k = idx->dims[q - 1];
    if (k < 1 || k > r) return pvg_prep_fail(p, PV_EFORMAT, "'indices' last dim %lld must be in [1,%d]", (long long)k, r);
    /* updates.shape == indices.shape[:-1] + data.shape[k:] */
    int ur = q - 1 + r - (int)k;
    bool ok = upd->rank == ur;
    for (int i = 0; ok && i < q - 1; i++) ok = upd->dims[i] == idx->dims[i];
    for (int i = (int)k; ok && i < r; i++) ok = upd->dims[q - 1 + i - k] == data->dims[i];
    if (!ok) {
        char a[128], b[128], c[128];
        return pvg_prep_fail(p, PV_EFORMAT, "'updates' shape %s does not match indices %s and data %s",
                             pvc_shape_str(upd, a, sizeof a), pvc_shape_str(idx, b, sizeof b), pvc_shape_str(data, c, sizeof c));
    }
    snd_params *sp = p->params;
    sp->k = (int)k;
    sp->red = red;
    pvg_out_set(p, 0, data->dtype, r, data->dims);
    return PV_OK;
}

static pv_status scatter_nd_run(const pvg_exec *x)
{
    const snd_params *sp = x->params;
    const pvc_tensor *data = &x->in[0], *idx = &x->in[1], *upd = &x->in[2];
    int k = sp->k, r = data->rank;
    size_t es = pv_dtype_size(data->dtype);
    unsigned char *dst = x->out[0].data;
    const unsigned char *u = upd->data;
    pvk_copy_bytes(x->pool, dst, data->data, pvc_nbytes(data));   /* no-op when in place */
    int64_t tuples = 1, slice = 1, ds[PV_MAX_RANK];
    for (int i = 0; i < idx->rank - 1; i++) tuples *= idx->dims[i];
    for (int i = k; i < r; i++) slice *= data->dims[i];
    pvk_contig_strides(r, data->dims, ds);
    pv_status s = pvg_index_check(x, "ScatterND", idx, data->dims, k);
    if (s) return s;
    if (slice == 0) return PV_OK;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int j = 0; j < k; j++) {
            int64_t v = pvc_get_i64(idx->data, idx->dtype, t * k + j);
            if (v < 0) v += data->dims[j];
            off += v * ds[j];
        }
        unsigned char *o = dst + (size_t)off * es;
        const unsigned char *in = u + (size_t)(t * slice) * es;
        if (sp->red == PVK_RED_NONE) memcpy(o, in, (size_t)slice * es);
        else
            for (int64_t e = 0; e < slice; e++) pvk_reduce_elem(o + (size_t)e * es, in + (size_t)e * es, data->dtype, sp->red);
    }
    return PV_OK;
}

/* In place is safe: after the initial copy only 'indices' and 'updates' are read. */
const pvg_op pvg_op_ScatterND = { "ScatterND", "", PVG_OP_INPLACE, scatter_nd_prepare, scatter_nd_run };
