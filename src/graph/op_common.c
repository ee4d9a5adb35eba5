/* Operator registry and the helpers every operator's prepare uses: attributes, constant
 * inputs, axes, dtype checks, errors that name the node. */
#include "graph/graph.h"

#include <stdio.h>
#include <string.h>

static const pvg_op *const builtin[] = {
#define PVG_OP(NAME) &pvg_op_##NAME,
#include "graph/ops/ops.def"
#undef PVG_OP
};

/* perceive's own operators in its "perceive" domain (made by passes, and loadable from files
 * that contain them). */
static const pvg_op *const builtin_custom[] = { &pvg_op_Attention, &pvg_op_Gelu, &pvg_op_Linear };

#define MAX_CUSTOM 64
static const pvg_op *custom[MAX_CUSTOM];
static int ncustom;

static bool domain_is_default(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

const pvg_op *pvg_op_lookup(const char *domain, const char *name)
{
    if (domain_is_default(domain)) {
        for (size_t i = 0; i < PVC_COUNTOF(builtin); i++)
            if (!strcmp(builtin[i]->name, name)) return builtin[i];
        return NULL;
    }
    for (int i = 0; i < ncustom; i++)
        if (!strcmp(custom[i]->domain, domain) && !strcmp(custom[i]->name, name)) return custom[i];
    for (size_t i = 0; i < PVC_COUNTOF(builtin_custom); i++)
        if (!strcmp(builtin_custom[i]->domain, domain) && !strcmp(builtin_custom[i]->name, name)) return builtin_custom[i];
    return NULL;
}

pv_status pvg_op_register(const pvg_op *op)
{
    if (!op || !op->name || !op->prepare || domain_is_default(op->domain))
        return pvc_fail(NULL, PV_EINPUT, "pvg_op_register: a custom operator needs a name, a non-default domain and prepare");
    for (int i = 0; i < ncustom; i++)
        if (!strcmp(custom[i]->domain, op->domain) && !strcmp(custom[i]->name, op->name)) {
            custom[i] = op;
            return PV_OK;
        }
    if (ncustom == MAX_CUSTOM) return pvc_fail(NULL, PV_ENOMEM, "pvg_op_register: more than %d custom operators", MAX_CUSTOM);
    custom[ncustom++] = op;
    return PV_OK;
}

pv_status pvg_prep_fail(pvg_prep *p, pv_status s, const char *fmt, ...)
{
    char buf[PVC_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return pvc_fail(p->msg, s, "node '%s' (%s): %s", p->node->name ? p->node->name : "",
                    p->node->op_type, buf);
}

pv_status pvg_stub_prepare(pvg_prep *p)
{
    return pvg_prep_fail(p, PV_EUNSUPPORTED, "operator not implemented");
}

static pvg_attr *find(pvg_prep *p, const char *name)
{
    for (int i = 0; i < p->node->nattrs; i++)
        if (!strcmp(p->node->attrs[i].name, name)) {
            p->node->attrs[i].used = true;
            return &p->node->attrs[i];
        }
    return NULL;
}

static const char *type_name(pvg_attr_type t)
{
    static const char *const names[] = { "undefined", "float", "int", "string", "tensor",
                                         "floats", "ints", "strings", "graph/other" };
    return (unsigned)t < PVC_COUNTOF(names) ? names[t] : "?";
}

static pv_status wrong_type(pvg_prep *p, const pvg_attr *a, const char *want)
{
    return pvg_prep_fail(p, PV_EFORMAT, "attribute '%s' is %s, expected %s", a->name, type_name(a->type), want);
}

bool pvg_attr_has(pvg_prep *p, const char *name) { return find(p, name) != NULL; }

pv_status pvg_attr_int(pvg_prep *p, const char *name, int64_t def, int64_t *out)
{
    pvg_attr *a = find(p, name);
    *out = def;
    if (!a) return PV_OK;
    if (a->type != PVG_ATTR_INT) return wrong_type(p, a, "int");
    *out = a->i;
    return PV_OK;
}

pv_status pvg_attr_float(pvg_prep *p, const char *name, float def, float *out)
{
    pvg_attr *a = find(p, name);
    *out = def;
    if (!a) return PV_OK;
    if (a->type == PVG_ATTR_INT) { *out = (float)a->i; return PV_OK; }
    if (a->type != PVG_ATTR_FLOAT) return wrong_type(p, a, "float");
    *out = a->f;
    return PV_OK;
}

pv_status pvg_attr_string(pvg_prep *p, const char *name, const char *def, const char **out)
{
    pvg_attr *a = find(p, name);
    *out = def;
    if (!a) return PV_OK;
    if (a->type != PVG_ATTR_STRING) return wrong_type(p, a, "string");
    *out = a->s;
    return PV_OK;
}

pv_status pvg_attr_ints(pvg_prep *p, const char *name, const int64_t **v, int64_t *n)
{
    pvg_attr *a = find(p, name);
    *v = NULL;
    *n = 0;
    if (!a) return PV_OK;
    if (a->type == PVG_ATTR_INT) { *v = &a->i; *n = 1; return PV_OK; }
    if (a->type != PVG_ATTR_INTS) return wrong_type(p, a, "ints");
    *v = a->ints;
    *n = a->n;
    return PV_OK;
}

pv_status pvg_attr_floats(pvg_prep *p, const char *name, const float **v, int64_t *n)
{
    pvg_attr *a = find(p, name);
    *v = NULL;
    *n = 0;
    if (!a) return PV_OK;
    if (a->type == PVG_ATTR_FLOAT) { *v = &a->f; *n = 1; return PV_OK; }
    if (a->type != PVG_ATTR_FLOATS) return wrong_type(p, a, "floats");
    *v = a->floats;
    *n = a->n;
    return PV_OK;
}

const pvc_tensor *pvg_attr_tensor(pvg_prep *p, const char *name)
{
    pvg_attr *a = find(p, name);
    return a && a->type == PVG_ATTR_TENSOR ? &a->t : NULL;
}

bool pvg_has_in(const pvg_prep *p, int i) { return i >= 0 && i < p->nin && p->in[i].rank >= 0; }

pv_status pvg_in_const_ints(pvg_prep *p, int i, int64_t *v, int64_t cap, int64_t *n)
{
    *n = 0;
    if (!pvg_has_in(p, i)) return pvg_prep_fail(p, PV_EFORMAT, "input %d is missing", i);
    const pvc_tensor *t = &p->in[i];
    if (!t->data)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input %d is computed at run time; perceive plans "
                             "static shapes, so it must be a constant (data-dependent shape)", i);
    if (t->dtype != PV_I64 && t->dtype != PV_I32)
        return pvg_prep_fail(p, PV_EFORMAT, "input %d must be int64 or int32, got %s", i, pv_dtype_name(t->dtype));
    int64_t k = pvc_numel(t);
    if (k > cap) return pvg_prep_fail(p, PV_EUNSUPPORTED, "input %d has %lld values, at most %lld supported", i, (long long)k, (long long)cap);
    for (int64_t j = 0; j < k; j++) v[j] = pvc_get_i64(t->data, t->dtype, j);
    *n = k;
    return PV_OK;
}

pv_status pvg_axis(pvg_prep *p, int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -rank || axis >= (rank > 0 ? rank : 1))
        return pvg_prep_fail(p, PV_EFORMAT, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return PV_OK;
}

void pvg_out_set(pvg_prep *p, int i, pv_dtype t, int rank, const int64_t *dims)
{
    pvc_tensor *o = &p->out[i];
    o->dtype = t;
    o->rank = rank;
    for (int k = 0; k < rank; k++) o->dims[k] = dims[k];
}

int64_t pvg_ws_append(pvg_prep *p, size_t bytes)
{
    if (!bytes) return -1;
    size_t off = (p->workspace + 63) / 64 * 64;
    p->workspace = off + bytes;
    return (int64_t)off;
}

void *pvg_ws_at(const pvg_exec *x, int64_t off) { return off < 0 || !x->ws ? NULL : (char *)x->ws + off; }

pv_status pvg_check_dtype(pvg_prep *p, int i, unsigned mask)
{
    if (!pvg_has_in(p, i)) return pvg_prep_fail(p, PV_EFORMAT, "input %d is missing", i);
    pv_dtype t = p->in[i].dtype;
    if ((unsigned)t >= PV_DTYPE_COUNT || !(mask & (1u << t)))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "input %d has dtype %s, which this operator does not support", i, pv_dtype_name(t));
    return PV_OK;
}
