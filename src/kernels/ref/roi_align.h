/* RoiAlign (ONNX): average or maximum of bilinear samples over each region's output bins. A
 * plain reference kernel, the only one. Prefix pvk_. */
#ifndef PVK_REF_ROI_ALIGN_H
#define PVK_REF_ROI_ALIGN_H

#include "core/core.h"

typedef struct pvk_roi_align_params {
    int64_t n, c, h, w;            /* X */
    int64_t rois, oh, ow;          /* Y is [rois, c, oh, ow] */
    int64_t sampling_ratio;        /* samples per bin and axis; 0: ceil(roi size / bins) */
    float   spatial_scale;
    bool    half_pixel;            /* coordinates shifted by -0.5 (opset 16's default); else the
                                      legacy form, regions at least 1x1 */
    bool    max;                   /* mode max: ONNX Runtime's rule, the largest weighted corner */
} pvk_roi_align_params;

/* x [n, c, h, w], rois [rois, 4] (x1, y1, x2, y2), batch [rois] (each in [0, n): the caller
 * checks) -> y. Samples outside [-1, h] x [-1, w] count as 0; float32 arithmetic as ONNX
 * Runtime. */
void pvk_roi_align_f32(pvc_pool *pool, const pvk_roi_align_params *p, const float *x, const float *rois,
                       const int64_t *batch, float *y);

#endif
