/* GridSample (opset 16): X [N,C,H,W] sampled at grid [N,Ho,Wo,2] (x, y normalized to
 * [-1, 1]) into [N,C,Ho,Wo]. Modes bilinear and nearest (round half to even, as ONNX
 * Runtime) and bicubic (16 taps, coefficient -0.75); padding zeros, border and reflection, per
 * tap; align_corners. */
#include "graph/graph.h"
#include "kernels/ref/resample.h"

#include <string.h>

typedef struct gs_params { pvk_grid_sample_params k; } gs_params;
_Static_assert(sizeof(gs_params) <= PVG_PARAMS_BYTES, "gs_params must fit the node's params scratch");

static pv_status gs_prepare(pvg_prep *p)
{
    if (p->nin < 2 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 inputs and 1 output");
    pv_status s;
    if ((s = pvg_check_dtype(p, 0, 1u << PV_F32))) return s;
    if ((s = pvg_check_dtype(p, 1, 1u << PV_F32))) return s;
    const char *mode, *padding;
    int64_t align;
    if ((s = pvg_attr_string(p, "mode", "bilinear", &mode))) return s;
    if ((s = pvg_attr_string(p, "padding_mode", "zeros", &padding))) return s;
    if ((s = pvg_attr_int(p, "align_corners", 0, &align))) return s;
    gs_params *gp = p->params;
    pvk_grid_sample_params *k = &gp->k;
    /* 'linear' is opset 20's name for bilinear */
    if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear")) k->mode = PVK_GS_BILINEAR;
    else if (!strcmp(mode, "nearest")) k->mode = PVK_GS_NEAREST;
    else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")) k->mode = PVK_GS_BICUBIC;   /* 'cubic': opset 20's name */
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'mode'='%s' is not bilinear, nearest or bicubic", mode);
    if (!strcmp(padding, "zeros")) k->padding = PVK_GS_ZEROS;
    else if (!strcmp(padding, "border")) k->padding = PVK_GS_BORDER;
    else if (!strcmp(padding, "reflection")) k->padding = PVK_GS_REFLECTION;
    else return pvg_prep_fail(p, PV_EFORMAT, "attribute 'padding_mode'='%s' is not zeros, border or reflection", padding);
    if (align != 0 && align != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'align_corners'=%lld must be 0 or 1", (long long)align);
    k->align_corners = align != 0;
    const pvc_tensor *x = &p->in[0], *g = &p->in[1];
    if (x->rank != 4)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input X has rank %d; only 4-D [N,C,H,W] is supported", x->rank);
    if (g->rank != 4 || g->dims[0] != x->dims[0] || g->dims[3] != 2)
        return pvg_prep_fail(p, PV_EFORMAT, "input grid must be [N=%lld, H_out, W_out, 2]", (long long)x->dims[0]);
    k->n = x->dims[0];
    k->c = x->dims[1];
    k->h = x->dims[2];
    k->w = x->dims[3];
    k->ho = g->dims[1];
    k->wo = g->dims[2];
    int64_t od[4] = { k->n, k->c, k->ho, k->wo };
    pvg_out_set(p, 0, PV_F32, 4, od);
    p->workspace = pvk_grid_sample_workspace(k);
    return PV_OK;
}

static pv_status gs_run(const pvg_exec *x)
{
    const gs_params *gp = x->params;
    pvk_grid_sample_f32(x->pool, &gp->k, x->in[0].data, x->in[1].data, x->out[0].data, x->ws);
    return PV_OK;
}

const pvg_op pvg_op_GridSample = { "GridSample", "", 0, gs_prepare, gs_run };
