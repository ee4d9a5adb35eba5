/* Constant (value, value_float(s), value_int(s); strings and sparse tensors refused) and
 * ConstantOfShape (a constant 'input' shape filled with the one-element 'value' tensor, default
 * float 0). Constant's run copies from the node's attribute, found again through x->node, so
 * nothing but an index is kept in params. */
#include "graph/graph.h"
#include "kernels/ref/movement.h"

#include <string.h>

enum { CONST_TENSOR, CONST_FLOAT, CONST_FLOATS, CONST_INT, CONST_INTS };

typedef struct constant_params { int kind, attr; } constant_params;

static const char *const const_attr_names[] = { "value", "value_float", "value_floats", "value_int", "value_ints" };

static pv_status constant_prepare(pvg_prep *p)
{
    if (p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 output");
    static const char *const refused[] = { "value_string", "value_strings", "sparse_value" };
    for (size_t i = 0; i < PVC_COUNTOF(refused); i++)
        if (pvg_attr_has(p, refused[i]))
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute '%s' not supported", refused[i]);
    constant_params *cp = p->params;
    int found = 0;
    pv_status s;
    for (int k = 0; k < (int)PVC_COUNTOF(const_attr_names); k++) {
        if (!pvg_attr_has(p, const_attr_names[k])) continue;
        found++;
        cp->kind = k;
        for (int a = 0; a < p->node->nattrs; a++)
            if (!strcmp(p->node->attrs[a].name, const_attr_names[k])) cp->attr = a;
    }
    if (found != 1) return pvg_prep_fail(p, PV_EFORMAT, "exactly one value attribute is required, got %d", found);
    const char *name = const_attr_names[cp->kind];
    const pvg_attr *at = &p->node->attrs[cp->attr];
    switch (cp->kind) {
    case CONST_TENSOR: {
        const pvc_tensor *t = pvg_attr_tensor(p, name);
        if (!t) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'value' is not a tensor");
        if ((unsigned)t->dtype >= PV_DTYPE_COUNT || t->rank < 0 || t->rank > PV_MAX_RANK)
            return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'value' has an unsupported dtype or rank");
        if (!t->data && pvc_numel(t) > 0) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'value' has no data");
        pvg_out_set(p, 0, t->dtype, t->rank, t->dims);
        return PV_OK;
    }
    case CONST_FLOAT: {
        float f;
        if ((s = pvg_attr_float(p, name, 0, &f))) return s;
        pvg_out_set(p, 0, PV_F32, 0, NULL);
        return PV_OK;
    }
    case CONST_INT: {
        int64_t i;
        if ((s = pvg_attr_int(p, name, 0, &i))) return s;
        pvg_out_set(p, 0, PV_I64, 0, NULL);
        return PV_OK;
    }
    case CONST_FLOATS: {
        const float *v;
        int64_t n;
        if ((s = pvg_attr_floats(p, name, &v, &n))) return s;
        pvg_out_set(p, 0, PV_F32, 1, &n);
        if (at->type == PVG_ATTR_FLOAT) cp->kind = CONST_FLOAT;   /* a lone float given as 'floats' */
        return PV_OK;
    }
    default: {
        const int64_t *v;
        int64_t n;
        if ((s = pvg_attr_ints(p, name, &v, &n))) return s;
        pvg_out_set(p, 0, PV_I64, 1, &n);
        if (at->type == PVG_ATTR_INT) cp->kind = CONST_INT;
        return PV_OK;
    }
    }
}

static pv_status constant_run(const pvg_exec *x)
{
    const constant_params *cp = x->params;
    const pvg_attr *at = &x->node->attrs[cp->attr];
    void *dst = x->out[0].data;
    switch (cp->kind) {
    case CONST_TENSOR: pvk_copy_bytes(x->pool, dst, at->t.data, pvc_nbytes(&at->t)); break;
    case CONST_FLOAT: memcpy(dst, at->type == PVG_ATTR_INT ? &(float){ (float)at->i } : &at->f, 4); break;
    case CONST_FLOATS: if (at->n) memcpy(dst, at->floats, (size_t)at->n * sizeof(float)); break;
    case CONST_INT: memcpy(dst, &at->i, 8); break;
    default: if (at->n) memcpy(dst, at->ints, (size_t)at->n * sizeof(int64_t)); break;
    }
    return PV_OK;
}

/* ---- ConstantOfShape --------------------------------------------------------------------- */

typedef struct cos_params { unsigned char value[8]; } cos_params;

static pv_status constant_of_shape_prepare(pvg_prep *p)
{
    if (p->nin < 1 || p->nout < 1) return pvg_prep_fail(p, PV_EFORMAT, "expected 1 input and 1 output");
    if (pvg_has_in(p, 0) && p->in[0].rank > 1)
        return pvg_prep_fail(p, PV_EFORMAT, "input must be 1-D, got rank %d", p->in[0].rank);
    int64_t d[PV_MAX_RANK], n, total = 1;
    pv_status s = pvg_in_const_ints(p, 0, d, PV_MAX_RANK, &n);
    if (s) return s;
    for (int i = 0; i < n; i++)
        if (d[i] < 0 || pvc_mul_overflow(total, d[i], &total))
            return pvg_prep_fail(p, PV_EFORMAT, "shape value %lld is negative or the size overflows", (long long)d[i]);
    cos_params *cp = p->params;
    pv_dtype t = PV_F32;                            /* default: float 0 (params start zeroed) */
    memset(cp->value, 0, sizeof cp->value);
    if (pvg_attr_has(p, "value")) {
        const pvc_tensor *v = pvg_attr_tensor(p, "value");
        if (!v) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'value' is not a tensor");
        if ((unsigned)v->dtype >= PV_DTYPE_COUNT) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'value' has an unsupported dtype");
        if (pvc_numel(v) != 1 || !v->data) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'value' must hold exactly one element");
        t = v->dtype;
        memcpy(cp->value, v->data, pv_dtype_size(t));
    }
    pvg_out_set(p, 0, t, (int)n, d);
    return PV_OK;
}

static pv_status constant_of_shape_run(const pvg_exec *x)
{
    const cos_params *cp = x->params;
    pvk_fill(x->out[0].data, cp->value, pv_dtype_size(x->out[0].dtype), pvc_numel(&x->out[0]));
    return PV_OK;
}

const pvg_op pvg_op_Constant = { "Constant", "", 0, constant_prepare, constant_run };
const pvg_op pvg_op_ConstantOfShape = { "ConstantOfShape", "", 0, constant_of_shape_prepare, constant_of_shape_run };
