/* Resize (opsets 11-18; 10 and Upsample 7-9: see resize_old_prepare): inputs X, roi (ignored:
 * tf_crop_and_resize is refused), scales and sizes (one of them, constant). Modes nearest (any
 * dtype: a gather), linear (N-linear) and cubic (cubic_coeff_a, exclude_outside; separable over
 * every axis); f16/bf16 staged through f32 (graph/ops/lowp.h). Output dims are floor(in * scale)
 * with scales, else sizes; the coordinate transform uses the given scale, or out/in for sizes
 * (as the spec and ONNX Runtime). */
#include "graph/graph.h"
#include "graph/ops/lowp.h"
#include "kernels/ref/resample.h"

#include <math.h>
#include <string.h>

typedef struct resize_params { pvk_resize_params k; } resize_params;
_Static_assert(sizeof(resize_params) <= PVG_PARAMS_BYTES, "resize_params must fit the node's params scratch");

typedef struct { const char *name; int value; } name_value;

static int lookup(const name_value *t, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, s)) return t[i].value;
    return -1;
}

/* Reads every Resize attribute; fills the modes of k. */
static pv_status resize_attrs(pvg_prep *p, pvk_resize_params *k, const int64_t **axes, int64_t *naxes)
{
    static const name_value modes[] = { { "nearest", PVK_RESIZE_NEAREST }, { "linear", PVK_RESIZE_LINEAR },
                                        { "cubic", PVK_RESIZE_CUBIC } };
    static const name_value coords[] = {
        { "half_pixel", PVK_COORD_HALF_PIXEL }, { "pytorch_half_pixel", PVK_COORD_PYTORCH_HALF_PIXEL },
        { "align_corners", PVK_COORD_ALIGN_CORNERS }, { "asymmetric", PVK_COORD_ASYMMETRIC },
        { "tf_half_pixel_for_nn", PVK_COORD_TF_HALF_PIXEL_FOR_NN },
    };
    static const name_value nearests[] = {
        { "round_prefer_floor", PVK_NEAREST_ROUND_PREFER_FLOOR }, { "round_prefer_ceil", PVK_NEAREST_ROUND_PREFER_CEIL },
        { "floor", PVK_NEAREST_FLOOR }, { "ceil", PVK_NEAREST_CEIL },
    };
    const char *mode, *coord, *nearest, *policy;
    float cubic_a, extrapolation;
    int64_t exclude, antialias;
    pv_status s;
    if ((s = pvg_attr_string(p, "mode", "nearest", &mode))) return s;
    if ((s = pvg_attr_string(p, "coordinate_transformation_mode", "half_pixel", &coord))) return s;
    if ((s = pvg_attr_string(p, "nearest_mode", "round_prefer_floor", &nearest))) return s;
    if ((s = pvg_attr_float(p, "cubic_coeff_a", -0.75f, &cubic_a))) return s;        /* cubic only */
    if ((s = pvg_attr_int(p, "exclude_outside", 0, &exclude))) return s;             /* cubic only */
    if ((s = pvg_attr_float(p, "extrapolation_value", 0.0f, &extrapolation))) return s; /* tf_crop only */
    if ((s = pvg_attr_int(p, "antialias", 0, &antialias))) return s;
    if ((s = pvg_attr_string(p, "keep_aspect_ratio_policy", "stretch", &policy))) return s;
    if ((s = pvg_attr_ints(p, "axes", axes, naxes))) return s;

    int m = lookup(modes, PVC_COUNTOF(modes), mode);
    if (m < 0) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'mode'='%s' is not nearest, linear or cubic", mode);
    int c = lookup(coords, PVC_COUNTOF(coords), coord);
    if (c < 0)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'coordinate_transformation_mode'='%s' is not supported "
                             "(half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn are)", coord);
    int n = lookup(nearests, PVC_COUNTOF(nearests), nearest);
    if (n < 0)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'nearest_mode'='%s' is not round_prefer_floor, round_prefer_ceil, floor or ceil", nearest);
    if (exclude != 0 && exclude != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'exclude_outside'=%lld must be 0 or 1", (long long)exclude);
    if (antialias != 0 && antialias != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'antialias'=%lld must be 0 or 1", (long long)antialias);
    /* Antialiasing changes linear / cubic downsampling only; nearest ignores it. */
    if (antialias && m != PVK_RESIZE_NEAREST)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'antialias'=1 is not supported for mode '%s'", mode);
    if (strcmp(policy, "stretch"))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'keep_aspect_ratio_policy'='%s' is not supported (only 'stretch')", policy);
    (void)extrapolation;
    k->cubic_a = cubic_a;
    k->exclude_outside = exclude != 0;
    k->mode = (pvk_resize_mode)m;
    k->coord = (pvk_coord_mode)c;
    k->nearest = (pvk_nearest_mode)n;
    return PV_OK;
}

static bool input_nonempty(const pvg_prep *p, int i)
{
    return pvg_has_in(p, i) && pvc_numel(&p->in[i]) > 0;
}

/* Upsample (opset 7: 'scales' attribute; 9: constant input 1) and Resize-10 (constant input 1):
 * scales only, mode nearest or linear, asymmetric coordinates (x_in = x_out / scale), output
 * dims floor(in * scale). Nearest takes the floor when upsampling and the ceiling when
 * downsampling (ONNX Runtime's rule for these forms), so scales may not do both at once. */
static pv_status resize_old_prepare(pvg_prep *p, bool scales_attr)
{
    int nin = scales_attr ? 1 : 2;
    if (p->nin != nin || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "opset %d %s takes %d input%s and 1 output, got %d and %d", p->opset,
                             p->node->op_type, nin, nin > 1 ? "s" : "", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    if (r < 1) return pvg_prep_fail(p, PV_EFORMAT, "input must have rank >= 1");
    pvk_resize_params *k = &((resize_params *)p->params)->k;
    const char *mode;
    if ((s = pvg_attr_string(p, "mode", "nearest", &mode))) return s;
    if (!strcmp(mode, "nearest")) k->mode = PVK_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear")) k->mode = PVK_RESIZE_LINEAR;
    else return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'mode'='%s' is not supported (nearest and linear are)", mode);
    if (k->mode == PVK_RESIZE_LINEAR && !pvc_dtype_is_float(in->dtype))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "mode 'linear' supports float input only, got %s", pv_dtype_name(in->dtype));
    float sc[PV_MAX_RANK];
    int64_t n;
    if (scales_attr) {
        const float *f;
        if ((s = pvg_attr_floats(p, "scales", &f, &n))) return s;
        if (!f) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'scales' is required");
        for (int64_t i = 0; i < n && i < PV_MAX_RANK; i++) sc[i] = f[i];
    } else {
        const pvc_tensor *t = &p->in[1];
        if (!t->data)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'scales' is computed at run time; it must be a constant (data-dependent shape)");
        if (!pvc_dtype_is_float(t->dtype))
            return pvg_prep_fail(p, PV_EFORMAT, "input 'scales' must be float, got %s", pv_dtype_name(t->dtype));
        n = pvc_numel(t);
        for (int64_t i = 0; i < n && i < PV_MAX_RANK; i++) sc[i] = (float)pvc_get_f64(t->data, t->dtype, i);
    }
    if (n != r) return pvg_prep_fail(p, PV_EFORMAT, "'scales' has %lld values for rank %d", (long long)n, r);
    bool up = false, down = false;
    k->rank = r;
    k->coord = PVK_COORD_ASYMMETRIC;
    for (int i = 0; i < r; i++) {
        if (!(sc[i] > 0.0f) || isinf(sc[i]))
            return pvg_prep_fail(p, PV_EFORMAT, "'scales' value %g on axis %d must be positive", (double)sc[i], i);
        double o = floor((double)(sc[i] * (float)in->dims[i]));
        if (o > (double)(INT64_C(1) << 40))
            return pvg_prep_fail(p, PV_EFORMAT, "'scales' value %g makes axis %d too large", (double)sc[i], i);
        k->in[i] = in->dims[i];
        k->out[i] = (int64_t)o;
        k->scale[i] = sc[i];
        up |= sc[i] > 1.0f;
        down |= sc[i] < 1.0f;
        if (k->in[i] == 0 && k->out[i] > 0)
            return pvg_prep_fail(p, PV_EFORMAT, "axis %d has size 0 and cannot be resized to %lld", i, (long long)k->out[i]);
    }
    if (k->mode == PVK_RESIZE_NEAREST && up && down)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "mode 'nearest' with scales that both up- and downsample is not supported");
    k->nearest = down ? PVK_NEAREST_CEIL : PVK_NEAREST_FLOOR;
    pvg_out_set(p, 0, in->dtype, r, k->out);
    p->workspace = pvk_resize_workspace(k);
    if (k->mode == PVK_RESIZE_LINEAR) p->workspace += pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status upsample_prepare(pvg_prep *p)
{
    if (p->opset >= 10)
        return pvg_prep_fail(p, PV_EFORMAT, "Upsample is deprecated from opset 10 (Resize replaces it), the model has opset %d",
                             p->opset);
    return resize_old_prepare(p, p->opset < 9);
}

static pv_status resize_prepare(pvg_prep *p)
{
    if (p->opset < 11) return resize_old_prepare(p, false);
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 2 to 4 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    resize_params *rp = p->params;
    pvk_resize_params *k = &rp->k;
    const int64_t *axes_attr;
    int64_t naxes;
    if ((s = resize_attrs(p, k, &axes_attr, &naxes))) return s;
    if (k->mode != PVK_RESIZE_NEAREST && !pvc_dtype_is_float(in->dtype))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "mode '%s' supports float input only, got %s",
                             k->mode == PVK_RESIZE_LINEAR ? "linear" : "cubic", pv_dtype_name(in->dtype));
    if (r < 1) return pvg_prep_fail(p, PV_EFORMAT, "input must have rank >= 1");

    /* The axes the scales/sizes refer to (opset 18 'axes'; default all, in order). */
    int ax[PV_MAX_RANK], na = r;
    for (int i = 0; i < r; i++) ax[i] = i;
    if (axes_attr) {
        if (naxes > r) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axes' has %lld values for rank %d", (long long)naxes, r);
        unsigned seen = 0;
        na = (int)naxes;
        for (int i = 0; i < na; i++) {
            if ((s = pvg_axis(p, axes_attr[i], r, "attribute 'axes' value", &ax[i]))) return s;
            if (seen & (1u << ax[i])) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axes' repeats axis %d", ax[i]);
            seen |= 1u << ax[i];
        }
    }

    k->rank = r;
    for (int i = 0; i < r; i++) {
        k->in[i] = k->out[i] = in->dims[i];
        k->scale[i] = 1.0f;
    }
    bool has_scales = input_nonempty(p, 2), has_sizes = input_nonempty(p, 3);
    if (has_scales == has_sizes)
        return pvg_prep_fail(p, PV_EFORMAT, "exactly one of inputs 'scales' and 'sizes' must be given (non-empty)");
    if (has_scales) {
        const pvc_tensor *t = &p->in[2];
        if (!t->data)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'scales' is computed at run time; it must be a constant (data-dependent shape)");
        if (!pvc_dtype_is_float(t->dtype))
            return pvg_prep_fail(p, PV_EFORMAT, "input 'scales' must be float, got %s", pv_dtype_name(t->dtype));
        if (pvc_numel(t) != na)
            return pvg_prep_fail(p, PV_EFORMAT, "input 'scales' has %lld values, expected %d", (long long)pvc_numel(t), na);
        for (int i = 0; i < na; i++) {
            float sc = (float)pvc_get_f64(t->data, t->dtype, i);
            if (!(sc > 0.0f) || isinf(sc))
                return pvg_prep_fail(p, PV_EFORMAT, "input 'scales' value %g on axis %d must be positive", (double)sc, ax[i]);
            int a = ax[i];
            k->scale[a] = sc;
            /* float product and truncation, as ONNX Runtime */
            double o = floor((double)(sc * (float)in->dims[a]));
            if (o > (double)(INT64_C(1) << 40))
                return pvg_prep_fail(p, PV_EFORMAT, "input 'scales' value %g makes axis %d too large", (double)sc, a);
            k->out[a] = (int64_t)o;
        }
    } else {
        int64_t sz[PV_MAX_RANK], n;
        if ((s = pvg_in_const_ints(p, 3, sz, PV_MAX_RANK, &n))) return s;
        if (n != na) return pvg_prep_fail(p, PV_EFORMAT, "input 'sizes' has %lld values, expected %d", (long long)n, na);
        for (int i = 0; i < na; i++) {
            int a = ax[i];
            if (sz[i] < 0) return pvg_prep_fail(p, PV_EFORMAT, "input 'sizes' value %lld is negative", (long long)sz[i]);
            k->out[a] = sz[i];
            k->scale[a] = in->dims[a] > 0 ? (float)sz[i] / (float)in->dims[a] : 1.0f;
        }
    }
    for (int i = 0; i < r; i++)
        if (k->in[i] == 0 && k->out[i] > 0)
            return pvg_prep_fail(p, PV_EFORMAT, "axis %d has size 0 and cannot be resized to %lld", i, (long long)k->out[i]);
    pvg_out_set(p, 0, in->dtype, r, k->out);
    p->workspace = k->mode == PVK_RESIZE_CUBIC ? pvk_resize_cubic_workspace(k) : pvk_resize_workspace(k);
    if (k->mode != PVK_RESIZE_NEAREST) p->workspace += pvg_lowp_bytes(p);
    return PV_OK;
}

static pv_status resize_run_any(const pvg_exec *x)
{
    const resize_params *rp = x->params;
    if (rp->k.mode == PVK_RESIZE_CUBIC) pvk_resize_cubic_f32(&rp->k, x->in[0].data, x->out[0].data, x->ws);
    else pvk_resize(x->pool, &rp->k, x->in[0].dtype, x->in[0].data, x->out[0].data, x->ws);
    return PV_OK;
}

static pv_status resize_run(const pvg_exec *x)
{
    const resize_params *rp = x->params;
    if (rp->k.mode != PVK_RESIZE_NEAREST && pvg_lowp_needed(x)) return pvg_lowp_run(x, resize_run_any);
    return resize_run_any(x);
}

const pvg_op pvg_op_Resize = { "Resize", "", 0, resize_prepare, resize_run };
const pvg_op pvg_op_Upsample = { "Upsample", "", 0, upsample_prepare, resize_run };
