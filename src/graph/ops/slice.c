/* Slice (opset 10+ form: starts, ends, axes, steps as constant inputs; before 10: 'starts',
 * 'ends', optional 'axes' attributes and no steps). prepare resolves the
 * effective start/step per axis with the spec's clamping (negative steps, INT64_MAX/MIN ends);
 * run is a strided copy starting at the first selected element. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

typedef struct slice_params {
    pvk_view view;
    int64_t  offset;            /* first element, in source elements */
} slice_params;

static pv_status slice_prepare_attrs(pvg_prep *p);
static pv_status slice_resolve(pvg_prep *p, int64_t ns, const int64_t *starts, const int64_t *ends,
                               const int64_t *axes, const int64_t *steps);

static pv_status slice_prepare(pvg_prep *p)
{
    if (p->opset < 10) return slice_prepare_attrs(p);
    if (p->nin < 3 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected at least 3 inputs and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    int64_t starts[PV_MAX_RANK], ends[PV_MAX_RANK], axes[PV_MAX_RANK], steps[PV_MAX_RANK];
    int64_t ns, ne, na, nst;
    if ((s = pvg_in_const_ints(p, 1, starts, PV_MAX_RANK, &ns))) return s;
    if ((s = pvg_in_const_ints(p, 2, ends, PV_MAX_RANK, &ne))) return s;
    if (ns != ne) return pvg_prep_fail(p, PV_EFORMAT, "'starts' has %lld values, 'ends' %lld", (long long)ns, (long long)ne);
    if (ns > r) return pvg_prep_fail(p, PV_EFORMAT, "'starts' has %lld values for rank %d", (long long)ns, r);
    if (pvg_has_in(p, 3)) {
        if ((s = pvg_in_const_ints(p, 3, axes, PV_MAX_RANK, &na))) return s;
        if (na != ns) return pvg_prep_fail(p, PV_EFORMAT, "'axes' has %lld values, 'starts' %lld", (long long)na, (long long)ns);
    } else
        for (int i = 0; i < ns; i++) axes[i] = i;
    if (pvg_has_in(p, 4)) {
        if ((s = pvg_in_const_ints(p, 4, steps, PV_MAX_RANK, &nst))) return s;
        if (nst != ns) return pvg_prep_fail(p, PV_EFORMAT, "'steps' has %lld values, 'starts' %lld", (long long)nst, (long long)ns);
    } else
        for (int i = 0; i < ns; i++) steps[i] = 1;

    return slice_resolve(p, ns, starts, ends, axes, steps);
}

/* Opsets 1-9: the same parameters as attributes, steps all 1. */
static pv_status slice_prepare_attrs(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "opset %d Slice takes 1 input and 1 output (starts/ends/axes are attributes), got %d and %d",
                             p->opset, p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s) return s;
    const int64_t *st, *en, *ax;
    int64_t ns, ne, na;
    if ((s = pvg_attr_ints(p, "starts", &st, &ns)) || (s = pvg_attr_ints(p, "ends", &en, &ne)) ||
        (s = pvg_attr_ints(p, "axes", &ax, &na)))
        return s;
    if (!st || !en) return pvg_prep_fail(p, PV_EFORMAT, "opset %d Slice needs the attributes 'starts' and 'ends'", p->opset);
    if (ns != ne) return pvg_prep_fail(p, PV_EFORMAT, "'starts' has %lld values, 'ends' %lld", (long long)ns, (long long)ne);
    if (ns > p->in[0].rank) return pvg_prep_fail(p, PV_EFORMAT, "'starts' has %lld values for rank %d", (long long)ns, p->in[0].rank);
    if (ax && na != ns) return pvg_prep_fail(p, PV_EFORMAT, "'axes' has %lld values, 'starts' %lld", (long long)na, (long long)ns);
    int64_t axes[PV_MAX_RANK], steps[PV_MAX_RANK];
    for (int i = 0; i < ns; i++) {
        axes[i] = ax ? ax[i] : i;
        steps[i] = 1;
    }
    return slice_resolve(p, ns, st, en, axes, steps);
}

/* Per-axis clamping of validated parameters (ns values each) into the strided view. */
static pv_status slice_resolve(pvg_prep *p, int64_t ns, const int64_t *starts, const int64_t *ends,
                               const int64_t *axes, const int64_t *steps)
{
    pv_status s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    /* Per dim: first index and step; untouched dims take everything. */
    int64_t first[PV_MAX_RANK] = { 0 }, step[PV_MAX_RANK], d[PV_MAX_RANK];
    bool seen[PV_MAX_RANK] = { false };
    for (int i = 0; i < r; i++) {
        step[i] = 1;
        d[i] = in->dims[i];
    }
    for (int i = 0; i < ns; i++) {
        int a;
        if ((s = pvg_axis(p, axes[i], r, "'axes' value", &a))) return s;
        if (seen[a]) return pvg_prep_fail(p, PV_EFORMAT, "axis %d is repeated in 'axes'", a);
        seen[a] = true;
        int64_t dim = in->dims[a], st = steps[i], b = starts[i], e = ends[i], cnt;
        if (st == 0) return pvg_prep_fail(p, PV_EFORMAT, "'steps' value for axis %d is 0", a);
        if (b < 0) b += dim;                        /* no overflow: b < 0 and dim >= 0 */
        if (e < 0) e += dim;
        if (st > 0) {
            b = PVC_MAX((int64_t)0, PVC_MIN(b, dim));
            e = PVC_MAX((int64_t)0, PVC_MIN(e, dim));
            cnt = e > b ? (e - b - 1) / st + 1 : 0;
        } else {
            b = PVC_MAX((int64_t)0, PVC_MIN(b, dim - 1));
            e = PVC_MAX((int64_t)-1, PVC_MIN(e, dim - 1));
            /* a step longer than the dim selects one element; capping it avoids -INT64_MIN */
            int64_t mag = st < -dim - 1 ? dim + 1 : -st;
            cnt = b > e ? (b - e - 1) / mag + 1 : 0;
        }
        if (dim == 0) cnt = 0;
        if (cnt <= 1) st = 1;                       /* the step is never taken: keep strides small */
        first[a] = cnt > 0 ? b : 0;
        step[a] = st;
        d[a] = cnt;
    }
    slice_params *sp = p->params;
    int64_t cs[PV_MAX_RANK];
    pvk_contig_strides(r, in->dims, cs);
    sp->view.rank = r;
    sp->offset = 0;
    for (int i = 0; i < r; i++) {
        sp->view.dims[i] = d[i];
        sp->view.strides[i] = cs[i] * step[i];
        sp->offset += first[i] * cs[i];
    }
    pvg_out_set(p, 0, in->dtype, r, d);
    return PV_OK;
}

static pv_status slice_run(const pvg_exec *x)
{
    const slice_params *sp = x->params;
    size_t es = pv_dtype_size(x->in[0].dtype);
    if (pvc_numel(&x->out[0]) == 0) return PV_OK;
    pvk_copy_view(x->pool, x->out[0].data, (const unsigned char *)x->in[0].data + sp->offset * (int64_t)es,
                  es, &sp->view);
    return PV_OK;
}

const pvg_op pvg_op_Slice = { "Slice", "", 0, slice_prepare, slice_run };
