/* Gather: out[outer, i..., inner] = data[outer, indices[i...], inner] along 'axis'. Indices are
 * run-time data (int64 or int32, negative counts from the end); every index is checked before
 * any read, and a bad one zeroes the output and fails the run with PV_EINPUT. */
#include "graph/ops/axis_view.h"
#include "graph/ops/index_common.h"

#include <string.h>

typedef struct gather_params { int axis; } gather_params;

static pv_status gather_prepare(pvg_prep *p)
{
    int64_t axis;
    pv_status s = pvg_gather_inputs(p, &axis);
    if (s) return s;
    const pvc_tensor *data = &p->in[0], *idx = &p->in[1];
    int ax;
    if ((s = pvg_axis(p, axis, data->rank, "attribute 'axis'", &ax))) return s;
    int r = data->rank - 1 + idx->rank;
    if (r > PV_MAX_RANK) return pvg_prep_fail(p, PV_EUNSUPPORTED, "output rank %d is above %d", r, PV_MAX_RANK);
    int64_t d[PV_MAX_RANK];
    int k = 0;
    for (int i = 0; i < ax; i++) d[k++] = data->dims[i];
    for (int i = 0; i < idx->rank; i++) d[k++] = idx->dims[i];
    for (int i = ax + 1; i < data->rank; i++) d[k++] = data->dims[i];
    ((gather_params *)p->params)->axis = ax;
    pvg_out_set(p, 0, data->dtype, r, d);
    return PV_OK;
}

typedef struct gather_ctx {
    const unsigned char *src;
    unsigned char       *dst;
    const void          *idx;
    pv_dtype             idx_t;
    int64_t              nidx, n, block;   /* indices, data dim at axis, bytes per slice */
} gather_ctx;

static void gather_chunk(void *ctx, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const gather_ctx *c = ctx;
    for (int64_t w = b; w < e; w++) {
        int64_t o = w / c->nidx, i = w % c->nidx;
        int64_t k = pvc_get_i64(c->idx, c->idx_t, i);
        if (k < 0) k += c->n;
        memcpy(c->dst + w * c->block, c->src + (o * c->n + k) * c->block, (size_t)c->block);
    }
}

static pv_status gather_run(const pvg_exec *x)
{
    const gather_params *gp = x->params;
    const pvc_tensor *data = &x->in[0], *idx = &x->in[1];
    int ax = gp->axis;
    gather_ctx c;
    c.src = data->data;
    c.dst = x->out[0].data;
    c.idx = idx->data;
    c.idx_t = idx->dtype;
    c.nidx = pvc_numel(idx);
    c.n = data->dims[ax];
    int64_t outer, inner;
    pvg_axis_outer_inner(data->rank, data->dims, ax, &outer, &inner);
    c.block = inner * (int64_t)pv_dtype_size(data->dtype);
    int64_t total = outer * c.nidx;
    if (total == 0 || c.block == 0) return PV_OK;
    pv_status s = pvg_index_check(x, "Gather", idx, &c.n, 1);
    if (s) {
        memset(c.dst, 0, (size_t)(total * c.block));
        return s;
    }
    pvc_parallel_for(x->pool, total, PVC_MAX((int64_t)1, 65536 / c.block), gather_chunk, &c);
    return PV_OK;
}

const pvg_op pvg_op_Gather = { "Gather", "", 0, gather_prepare, gather_run };
