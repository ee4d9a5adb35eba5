/* Reference resampling kernels: Resize (nearest / N-linear) and GridSample (2-D bilinear /
 * nearest). Coordinate arithmetic is float32, as ONNX Runtime's, so ties round alike.
 * Prefix pvk_. */
#ifndef PVK_REF_RESAMPLE_H
#define PVK_REF_RESAMPLE_H

#include "core/core.h"

typedef enum { PVK_RESIZE_NEAREST, PVK_RESIZE_LINEAR, PVK_RESIZE_CUBIC } pvk_resize_mode;
typedef enum {
    PVK_COORD_HALF_PIXEL, PVK_COORD_PYTORCH_HALF_PIXEL, PVK_COORD_ALIGN_CORNERS,
    PVK_COORD_ASYMMETRIC, PVK_COORD_TF_HALF_PIXEL_FOR_NN
} pvk_coord_mode;
typedef enum {
    PVK_NEAREST_ROUND_PREFER_FLOOR, PVK_NEAREST_ROUND_PREFER_CEIL, PVK_NEAREST_FLOOR,
    PVK_NEAREST_CEIL
} pvk_nearest_mode;

typedef struct pvk_resize_params {
    int              rank;
    int64_t          in[PV_MAX_RANK], out[PV_MAX_RANK];
    float            scale[PV_MAX_RANK];  /* used in the coordinate transform (out/in for sizes) */
    pvk_resize_mode  mode;
    pvk_coord_mode   coord;
    pvk_nearest_mode nearest;
    float            cubic_a;             /* cubic: the kernel's 'cubic_coeff_a' (-0.75 default) */
    bool             exclude_outside;     /* cubic: taps outside the input weigh 0, the rest renormalised */
} pvk_resize_params;

/* Per-axis index/weight tables live in the workspace. */
size_t pvk_resize_workspace(const pvk_resize_params *p);
/* Contiguous x (p->in) into y (p->out). Nearest: any dtype (a gather of elements); linear:
 * F32 only. Linear clamps source coordinates to [0, in - 1] (edge values extend). Cubic goes
 * through pvk_resize_cubic_f32 below. */
void   pvk_resize(pvc_pool *pool, const pvk_resize_params *p, pv_dtype t, const void *x, void *y,
                  void *ws);

/* The source coordinate of output coordinate xr along an axis (float32, as ONNX Runtime). */
float  pvk_resize_source_coord(pvk_coord_mode m, float xr, float scale, int64_t in, int64_t out);

/* Cubic (kernels/ref/resize_cubic.c): one axis at a time, 4 taps at floor(x) - 1 .. floor(x) + 2
 * with Keys' coefficients for p->cubic_a, taps beyond the edge reading the edge value (or, with
 * exclude_outside, weighing 0 and the rest renormalised); the ONNX reference's rule. F32; ws:
 * pvk_resize_cubic_workspace bytes (two intermediate tensors). */
size_t pvk_resize_cubic_workspace(const pvk_resize_params *p);
void   pvk_resize_cubic_f32(const pvk_resize_params *p, const float *x, float *y, void *ws);

typedef enum { PVK_GS_BILINEAR, PVK_GS_NEAREST, PVK_GS_BICUBIC } pvk_gs_mode;
typedef enum { PVK_GS_ZEROS, PVK_GS_BORDER, PVK_GS_REFLECTION } pvk_gs_padding;

typedef struct pvk_grid_sample_params {
    int64_t        n, c, h, w, ho, wo;
    pvk_gs_mode    mode;
    pvk_gs_padding padding;
    bool           align_corners;
} pvk_grid_sample_params;

/* x [n, c, h, w], grid [n, ho, wo, 2] (x, y in [-1, 1]) -> y [n, c, ho, wo], float32.
 * Padding applies per source pixel (ONNX Runtime's rule): each of the four bilinear taps out
 * of the image is zero, clamped (border) or reflected. Nearest rounds half to even
 * (nearbyint). Bicubic: 4 x 4 taps from floor - 1, cubic coefficient -0.75 (ONNX Runtime's),
 * padding per tap as well. A NaN grid coordinate samples zero. ws: pvk_grid_sample_workspace bytes (a
 * per-pixel plan shared by all channels). */
size_t pvk_grid_sample_workspace(const pvk_grid_sample_params *p);
void   pvk_grid_sample_f32(pvc_pool *pool, const pvk_grid_sample_params *p, const float *x,
                           const float *grid, float *y, void *ws);

#endif
