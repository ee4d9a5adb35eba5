/* MaxUnpool (opsets 9/11: one form): the inverse of MaxPool with Indices. X [N, C, D...] and
 * I (int64, X's shape: flat positions in the inferred output, as MaxPool's Indices output gives
 * them); output zero everywhere but Y[I[i]] = X[i]. The inferred shape is (in - 1) * stride +
 * kernel - pad_begin - pad_end per spatial axis; input 'output_shape' (constant, not smaller)
 * pads it at the end of each axis, indices keeping their coordinates (the ONNX reference).
 * Indices are checked at run time before any write. The loop below is the plain kernel. */
#include "graph/graph.h"

#include <string.h>

typedef struct unpool_params { int rank; int64_t inferred[PV_MAX_RANK]; } unpool_params;

static pv_status prep_MaxUnpool(pvg_prep *p)
{
    if (p->nin < 2 || p->nin > 3 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2-3 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s != PV_OK) return s;
    if ((s = pvg_check_dtype(p, 1, 1u << PV_I64)) != PV_OK) return s;
    const pvc_tensor *x = &p->in[0];
    int r = x->rank, sp = r - 2;
    if (r < 3) return pvg_prep_fail(p, PV_EFORMAT, "input X has rank %d, it needs [N, C, D...]", r);
    if (!pvc_same_shape(x, &p->in[1])) return pvg_prep_fail(p, PV_EFORMAT, "input 'I' must have X's shape");
    const int64_t *ks, *pads, *strides;
    int64_t nk, np, ns;
    if ((s = pvg_attr_ints(p, "kernel_shape", &ks, &nk)) != PV_OK) return s;
    if ((s = pvg_attr_ints(p, "pads", &pads, &np)) != PV_OK) return s;
    if ((s = pvg_attr_ints(p, "strides", &strides, &ns)) != PV_OK) return s;
    if (!ks || nk != sp)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'kernel_shape' needs %d values, got %lld", sp, (long long)nk);
    if (pads && np != 2 * sp)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'pads' needs %d values, got %lld", 2 * sp, (long long)np);
    if (strides && ns != sp)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'strides' needs %d values, got %lld", sp, (long long)ns);
    int64_t out[PV_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = x->dims[1];
    for (int i = 0; i < sp; i++) {
        int64_t st = strides ? strides[i] : 1, pb = pads ? pads[i] : 0, pe = pads ? pads[sp + i] : 0;
        if (ks[i] < 1 || st < 1 || pb < 0 || pe < 0)
            return pvg_prep_fail(p, PV_EFORMAT, "axis %d: kernel %lld, stride %lld, pads %lld/%lld are not valid", i,
                                 (long long)ks[i], (long long)st, (long long)pb, (long long)pe);
        out[2 + i] = (x->dims[2 + i] - 1) * st + ks[i] - pb - pe;
        if (out[2 + i] < 0) return pvg_prep_fail(p, PV_EFORMAT, "axis %d: the output size is negative", i);
    }
    unpool_params *up = p->params;
    up->rank = r;
    memcpy(up->inferred, out, sizeof out);
    if (p->nin > 2 && pvg_has_in(p, 2)) {
        int64_t given[PV_MAX_RANK], n;
        if ((s = pvg_in_const_ints(p, 2, given, PV_MAX_RANK, &n)) != PV_OK) return s;
        if (n != r) return pvg_prep_fail(p, PV_EFORMAT, "input 'output_shape' has %lld values for rank %d", (long long)n, r);
        for (int i = 0; i < r; i++) {
            if (given[i] < out[i] || given[i] > (INT64_C(1) << 40) || (i < 2 && given[i] != x->dims[i]))
                return pvg_prep_fail(p, PV_EUNSUPPORTED, "input 'output_shape' value %lld on axis %d is not supported "
                                     "(the inferred size is %lld; it may only grow spatial axes)",
                                     (long long)given[i], i, (long long)out[i]);
            out[i] = given[i];
        }
    }
    pvg_out_set(p, 0, x->dtype, r, out);
    return PV_OK;
}

static pv_status run_MaxUnpool(const pvg_exec *x)
{
    const pvc_tensor *in = &x->in[0], *idx = &x->in[1];
    pvc_tensor *o = &x->out[0];
    size_t es = pv_dtype_size(in->dtype);
    const unpool_params *up = x->params;
    int64_t n = pvc_numel(in), total = 1;
    for (int k = 0; k < up->rank; k++) total *= up->inferred[k];
    const int64_t *ix = idx->data;
    memset(o->data, 0, pvc_nbytes(o));
    for (int64_t i = 0; i < n; i++)
        if (ix[i] < 0 || ix[i] >= total)
            return pvc_fail(NULL, PV_EINPUT, "MaxUnpool: index %lld out of range [0,%lld) in node '%s'", (long long)ix[i],
                            (long long)total, x->node && x->node->name ? x->node->name : "");
    for (int64_t i = 0; i < n; i++) {
        /* coordinates in the inferred shape, then the flat position in the (padded) output */
        int64_t rem = ix[i], pos = 0, stride = 1;
        for (int k = up->rank - 1; k >= 0; k--) {
            pos += (rem % up->inferred[k]) * stride;
            rem /= up->inferred[k];
            stride *= o->dims[k];
        }
        memcpy((char *)o->data + (size_t)pos * es, (const char *)in->data + (size_t)i * es, es);
    }
    return PV_OK;
}

const pvg_op pvg_op_MaxUnpool = { "MaxUnpool", "", 0, prep_MaxUnpool, run_MaxUnpool };
