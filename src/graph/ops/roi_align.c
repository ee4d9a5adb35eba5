/* RoiAlign (opsets 10/16): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in X's coordinates
 * before 'spatial_scale'), batch_indices [R] (int64/int32, checked at run time) -> Y [R, C,
 * output_height, output_width]. 'mode' avg|max, 'sampling_ratio' (0: adaptive),
 * 'coordinate_transformation_mode' (opset 16: half_pixel, the default, or output_half_pixel,
 * opset 10's only form). Float dtypes (F16/BF16 staged through f32). The work is
 * pvk_roi_align_f32 (kernels/ref/roi_align.c). */
#include "graph/ops/lowp.h"
#include "kernels/ref/roi_align.h"

#include <string.h>

typedef struct roi_params { pvk_roi_align_params k; } roi_params;

static pv_status prep_RoiAlign(pvg_prep *p)
{
    if (p->nin != 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 2, (1u << PV_I64) | (1u << PV_I32))) != PV_OK) return s;
    const pvc_tensor *x = &p->in[0], *rois = &p->in[1], *bi = &p->in[2];
    if (x->rank != 4) return pvg_prep_fail(p, PV_EFORMAT, "input X has rank %d, it must be [N, C, H, W]", x->rank);
    if (rois->dtype != x->dtype || rois->rank != 2 || rois->dims[1] != 4)
        return pvg_prep_fail(p, PV_EFORMAT, "input 'rois' must be [R, 4] of X's dtype %s", pv_dtype_name(x->dtype));
    if (bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return pvg_prep_fail(p, PV_EFORMAT, "input 'batch_indices' must be [%lld]", (long long)rois->dims[0]);
    roi_params *rp = p->params;
    pvk_roi_align_params *k = &rp->k;
    const char *mode, *coord;
    int64_t oh, ow, sr;
    if ((s = pvg_attr_string(p, "mode", "avg", &mode)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "output_height", 1, &oh)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "output_width", 1, &ow)) != PV_OK) return s;
    if ((s = pvg_attr_int(p, "sampling_ratio", 0, &sr)) != PV_OK) return s;
    if ((s = pvg_attr_float(p, "spatial_scale", 1.0f, &k->spatial_scale)) != PV_OK) return s;
    if (p->opset >= 16) {
        if ((s = pvg_attr_string(p, "coordinate_transformation_mode", "half_pixel", &coord)) != PV_OK) return s;
    } else {
        coord = "output_half_pixel";
    }
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'mode'='%s' must be avg or max", mode);
    if (strcmp(coord, "half_pixel") && strcmp(coord, "output_half_pixel"))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'coordinate_transformation_mode'='%s' must be half_pixel or output_half_pixel", coord);
    if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20) || sr < 0)
        return pvg_prep_fail(p, PV_EFORMAT, "output_height %lld, output_width %lld, sampling_ratio %lld are not valid",
                             (long long)oh, (long long)ow, (long long)sr);
    k->n = x->dims[0];
    k->c = x->dims[1];
    k->h = x->dims[2];
    k->w = x->dims[3];
    k->rois = rois->dims[0];
    k->oh = oh;
    k->ow = ow;
    k->sampling_ratio = sr;
    k->half_pixel = !strcmp(coord, "half_pixel");
    k->max = !strcmp(mode, "max");
    int64_t out[4] = { k->rois, k->c, oh, ow };
    pvg_out_set(p, 0, x->dtype, 4, out);
    p->workspace = pvg_lowp_bytes(p) + (size_t)k->rois * sizeof(int64_t);   /* + the batch indices */
    return PV_OK;
}

static pv_status run_f32(const pvg_exec *x)
{
    const roi_params *rp = x->params;
    const pvk_roi_align_params *k = &rp->k;
    const pvc_tensor *bi = &x->in[2];
    int64_t *batch = x->ws;   /* past the f16 staging area, when there is one */
    for (int64_t r = 0; r < k->rois; r++) {
        batch[r] = pvc_get_i64(bi->data, bi->dtype, r);
        if (batch[r] < 0 || batch[r] >= k->n)
            return pvc_fail(NULL, PV_EINPUT, "RoiAlign: batch index %lld of roi %lld is outside [0,%lld) in node '%s'",
                            (long long)batch[r], (long long)r, (long long)k->n,
                            x->node && x->node->name ? x->node->name : "");
    }
    pvk_roi_align_f32(x->pool, k, x->in[0].data, x->in[1].data, batch, x->out[0].data);
    return PV_OK;
}

static pv_status run_RoiAlign(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

const pvg_op pvg_op_RoiAlign = { "RoiAlign", "", 0, prep_RoiAlign, run_RoiAlign };
