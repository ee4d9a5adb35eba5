/* ArgMax, ArgMin: int64 index of the max/min along 'axis' (first occurrence, or last with
 * select_last_index), keepdims. The input is seen as [outer, n, inner]. */
#include "graph/ops/axis_view.h"
#include "kernels/ref/reduce.h"

typedef struct arg_params { int64_t outer, n, inner; bool last; } arg_params;
_Static_assert(sizeof(arg_params) <= PVG_PARAMS_BYTES, "arg_params must fit the node's params scratch");

static pv_status arg_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS | PVG_INTS);
    if (s) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    int64_t axis, keepdims, last;
    if ((s = pvg_attr_int(p, "axis", 0, &axis))) return s;
    if ((s = pvg_attr_int(p, "keepdims", 1, &keepdims))) return s;
    if ((s = pvg_attr_int(p, "select_last_index", 0, &last))) return s;
    if (keepdims != 0 && keepdims != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'keepdims'=%lld must be 0 or 1", (long long)keepdims);
    if (last != 0 && last != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'select_last_index'=%lld must be 0 or 1", (long long)last);
    int a;
    arg_params *ap = p->params;
    if ((s = pvg_axis_view(p, axis, &a, &ap->outer, &ap->n, &ap->inner))) return s;
    ap->last = last != 0;
    int64_t od[PV_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < r; i++) {
        if (i != a) od[orank++] = in->dims[i];
        else if (keepdims) od[orank++] = 1;
    }
    if (ap->n == 0 && ap->outer * ap->inner > 0)
        return pvg_prep_fail(p, PV_EFORMAT, "axis %d has size 0: no element to select", a);
    pvg_out_set(p, 0, PV_I64, orank, od);
    return PV_OK;
}

static pv_status arg_run(const pvg_exec *x, bool is_max)
{
    const arg_params *ap = x->params;
    pvk_arg_reduce(x->pool, is_max, ap->last, x->in[0].dtype, ap->outer, ap->n, ap->inner,
                   x->in[0].data, x->out[0].data);
    return PV_OK;
}

static pv_status argmax_run(const pvg_exec *x) { return arg_run(x, true); }
static pv_status argmin_run(const pvg_exec *x) { return arg_run(x, false); }

const pvg_op pvg_op_ArgMax = { "ArgMax", "", 0, arg_prepare, argmax_run };
const pvg_op pvg_op_ArgMin = { "ArgMin", "", 0, arg_prepare, argmin_run };
