/* DepthToSpace (modes DCR, CRD) and SpaceToDepth on [N, C, H, W] of any dtype. Both are a
 * reshape -> transpose -> reshape, done in one strided copy: the output is viewed as a 6-D
 * contiguous tensor and the view's strides say where each element comes from in the input
 * (pvk_copy_view, kernels/ref/movement.c). */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

typedef struct ds_params { pvk_view view; } ds_params;
_Static_assert(sizeof(ds_params) <= PVG_PARAMS_BYTES, "ds_params must fit the params scratch");

/* Arity, rank 4 and the blocksize attribute. */
static pv_status ds_common(pvg_prep *p, int64_t *b)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s != PV_OK) return s;
    if (p->in[0].rank != 4)
        return pvg_prep_fail(p, PV_EFORMAT, "input must have rank 4 ([N, C, H, W]), it has rank %d", p->in[0].rank);
    if (!pvg_attr_has(p, "blocksize")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'blocksize' is required");
    if ((s = pvg_attr_int(p, "blocksize", 0, b)) != PV_OK) return s;
    if (*b < 1 || *b > (int64_t)1 << 20)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'blocksize'=%lld must be positive", (long long)*b);
    return PV_OK;
}

static void set_view(ds_params *d, const int64_t *dims, const int64_t *strides)
{
    d->view.rank = 6;
    memcpy(d->view.dims, dims, 6 * sizeof dims[0]);
    memcpy(d->view.strides, strides, 6 * sizeof strides[0]);
}

static pv_status prep_DepthToSpace(pvg_prep *p)
{
    int64_t b;
    pv_status s = ds_common(p, &b);
    if (s != PV_OK) return s;
    const char *mode;
    if ((s = pvg_attr_string(p, "mode", "DCR", &mode)) != PV_OK) return s;
    bool crd = !strcmp(mode, "CRD");
    if (!crd && strcmp(mode, "DCR"))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'mode'='%s' is not DCR or CRD", mode);
    const int64_t *d = p->in[0].dims;
    int64_t N = d[0], C = d[1], H = d[2], W = d[3];
    if (C % (b * b))
        return pvg_prep_fail(p, PV_EFORMAT, "channels %lld are not a multiple of blocksize^2 = %lld", (long long)C, (long long)(b * b));
    int64_t c = C / (b * b), hw = H * W;
    /* output as [N, c, H, b1, W, b2]; the input channel is (b1 * b + b2) * c + ci (DCR) or
     * ci * b * b + b1 * b + b2 (CRD) */
    int64_t vd[6] = { N, c, H, b, W, b };
    int64_t dcr[6] = { C * hw, hw, W, b * c * hw, 1, c * hw };
    int64_t crdst[6] = { C * hw, b * b * hw, W, b * hw, 1, hw };
    set_view(p->params, vd, crd ? crdst : dcr);
    int64_t od[4] = { N, c, H * b, W * b };
    pvg_out_set(p, 0, p->in[0].dtype, 4, od);
    return PV_OK;
}

static pv_status prep_SpaceToDepth(pvg_prep *p)
{
    int64_t b;
    pv_status s = ds_common(p, &b);
    if (s != PV_OK) return s;
    const int64_t *d = p->in[0].dims;
    int64_t N = d[0], C = d[1], H = d[2], W = d[3];
    if (H % b || W % b)
        return pvg_prep_fail(p, PV_EFORMAT, "spatial size %lldx%lld is not a multiple of blocksize %lld",
                             (long long)H, (long long)W, (long long)b);
    /* output as [N, b1, b2, C, H / b, W / b]; the input element is x[n, c, h * b + b1, w * b + b2] */
    int64_t vd[6] = { N, b, b, C, H / b, W / b };
    int64_t st[6] = { C * H * W, W, 1, H * W, b * W, b };
    set_view(p->params, vd, st);
    int64_t od[4] = { N, C * b * b, H / b, W / b };
    pvg_out_set(p, 0, p->in[0].dtype, 4, od);
    return PV_OK;
}

static pv_status ds_run(const pvg_exec *x)
{
    const ds_params *d = x->params;
    pvk_copy_view(x->pool, x->out[0].data, x->in[0].data, pv_dtype_size(x->in[0].dtype), &d->view);
    return PV_OK;
}

const pvg_op pvg_op_DepthToSpace = { "DepthToSpace", "", 0, prep_DepthToSpace, ds_run };
const pvg_op pvg_op_SpaceToDepth = { "SpaceToDepth", "", 0, prep_SpaceToDepth, ds_run };
