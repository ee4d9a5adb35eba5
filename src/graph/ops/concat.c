/* Concat: joins inputs along 'axis'. Each input is outer x (dim * inner) contiguous blocks that
 * land side by side in the output rows. When outer is 1 the planner may place an input inside
 * the output's bytes (plan.c, concat_in_place): its copy is then a copy onto itself, skipped. */
#include "graph/ops/axis_view.h"
#include "graph/plan_impl.h"
#include "kernels/ref/movement.h"

typedef struct concat_params { int axis; } concat_params;

static pv_status concat_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected at least 1 input and 1 output");
    pv_status s;
    int64_t axis;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    if (!pvg_attr_has(p, "axis")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'axis' is required");
    for (int i = 0; i < p->nin; i++)
        if ((s = pvg_check_dtype(p, i, PVG_ANY))) return s;
    const pvc_tensor *a = &p->in[0];
    if (a->rank < 1) return pvg_prep_fail(p, PV_EFORMAT, "inputs must have rank >= 1");
    int ax;
    if ((s = pvg_axis(p, axis, a->rank, "attribute 'axis'", &ax))) return s;
    int64_t d[PV_MAX_RANK];
    for (int k = 0; k < a->rank; k++) d[k] = a->dims[k];
    for (int i = 1; i < p->nin; i++) {
        const pvc_tensor *b = &p->in[i];
        if (b->dtype != a->dtype)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d is %s, input 0 is %s", i, pv_dtype_name(b->dtype), pv_dtype_name(a->dtype));
        if (b->rank != a->rank)
            return pvg_prep_fail(p, PV_EFORMAT, "input %d has rank %d, input 0 has rank %d", i, b->rank, a->rank);
        for (int k = 0; k < a->rank; k++) {
            if (k == ax) continue;
            if (b->dims[k] != a->dims[k])
                return pvg_prep_fail(p, PV_EFORMAT, "input %d dim %d is %lld, input 0 has %lld", i, k,
                                     (long long)b->dims[k], (long long)a->dims[k]);
        }
        d[ax] += b->dims[ax];
    }
    ((concat_params *)p->params)->axis = ax;
    pvg_out_set(p, 0, a->dtype, a->rank, d);
    return PV_OK;
}

static pv_status concat_run(const pvg_exec *x)
{
    const concat_params *cp = x->params;
    const pvc_tensor *o = &x->out[0];
    int ax = cp->axis;
    size_t es = pv_dtype_size(o->dtype);
    int64_t outer, inner;
    pvg_axis_outer_inner(o->rank, o->dims, ax, &outer, &inner);
    size_t orow = (size_t)(o->dims[ax] * inner) * es, off = 0;
    unsigned char *dst = o->data;
    for (int i = 0; i < x->nin; i++) {
        size_t chunk = (size_t)(x->in[i].dims[ax] * inner) * es;
        const unsigned char *src = x->in[i].data;
        if (chunk == 0) continue;                       /* empty input: may have no buffer */
        pvk_copy_rows(x->pool, dst + off, orow, src, chunk, outer, chunk);
        off += chunk;
    }
    return PV_OK;
}

int pvg_concat_axis(const void *params) { return ((const concat_params *)params)->axis; }

const pvg_op pvg_op_Concat = { "Concat", "", 0, concat_prepare, concat_run };
