/* Tile: out dim i = dim i * repeats[i] ('repeats' constant). Viewed as 2*rank dims
 * (repeat_i, dim_i) with zero stride on each repeat dim, it is the shared strided copy. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

typedef struct tile_params { pvk_view view; } tile_params;

static pv_status tile_prepare(pvg_prep *p)
{
    if (p->nin < 2 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    int64_t rep[PV_MAX_RANK], n;
    if ((s = pvg_in_const_ints(p, 1, rep, PV_MAX_RANK, &n))) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    if (n != r) return pvg_prep_fail(p, PV_EFORMAT, "'repeats' has %lld values for rank %d", (long long)n, r);
    int64_t d[PV_MAX_RANK], cs[PV_MAX_RANK], total = 1;
    pvk_contig_strides(r, in->dims, cs);
    tile_params *tp = p->params;
    tp->view.rank = 2 * r;
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0) return pvg_prep_fail(p, PV_EFORMAT, "'repeats' value %lld is negative", (long long)rep[i]);
        if (pvc_mul_overflow(in->dims[i], rep[i], &d[i]) || pvc_mul_overflow(total, d[i], &total))
            return pvg_prep_fail(p, PV_EFORMAT, "output size overflows int64");
        tp->view.dims[2 * i] = rep[i];
        tp->view.strides[2 * i] = 0;
        tp->view.dims[2 * i + 1] = in->dims[i];
        tp->view.strides[2 * i + 1] = cs[i];
    }
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

static pv_status tile_run(const pvg_exec *x)
{
    const tile_params *tp = x->params;
    pvk_copy_view(x->pool, x->out[0].data, x->in[0].data, pv_dtype_size(x->in[0].dtype), &tp->view);
    return PV_OK;
}

const pvg_op pvg_op_Tile = { "Tile", "", 0, tile_prepare, tile_run };
