/* ONNX import through protobuf-c, from ONNX's own schema (onnx.proto, compiled at build
 * time). Everything from the file is validated here: dtypes, dims, data sizes, external data
 * paths, references between nodes. Opsets 7-18 of the default domain; each operator reads the
 * form of its version (p->opset in prepare). Opsets 1-6 load when every operator's form at that
 * opset is the one read at opset 7 (old_forms below). */
#include "graph/onnx.h"
#include "onnx.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define OPSET_MIN 7
#define OPSET_MAX 18
#define OPSET_OLD_MIN 1     /* opsets 1-6: only operators whose form did not change since */
#define MAX_TENSOR_BYTES ((int64_t)1 << 36)     /* 64 GiB: anything larger is a broken file */

/* protobuf-c answers NULL for both bad bytes and a failed allocation: remember which. */
static _Thread_local bool pb_oom;
static void *pb_alloc(void *ud, size_t n)
{
    (void)ud;
    void *p = pvc_malloc(n);
    if (!p) pb_oom = true;
    return p;
}
static void pb_free(void *ud, void *p) { (void)ud; pvc_free(p); }
static ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, NULL };

pv_status pvg_read_file(const char *path, void **buf, size_t *len, pvc_msg *msg)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EINPUT, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return pvc_fail(msg, PV_EINPUT, "'%s' is not a regular file", path);
    }
    size_t n = (size_t)st.st_size;
    char *b = pvc_malloc(n + 1);
    if (!b) { fclose(f); return pvc_fail(msg, PV_ENOMEM, "out of memory reading '%s' (%zu bytes)", path, n); }
    if (n && fread(b, 1, n, f) != n) {
        fclose(f);
        pvc_free(b);
        return pvc_fail(msg, PV_EINPUT, "cannot read '%s'", path);
    }
    fclose(f);
    b[n] = 0;
    *buf = b;
    *len = n;
    return PV_OK;
}

static bool onnx_dtype(int32_t t, pv_dtype *out)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = PV_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = PV_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = PV_BF16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = PV_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = PV_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = PV_I8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = PV_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = PV_BOOL; return true;
    default: return false;
    }
}

static const char *onnx_dtype_name(int32_t t)
{
    static const char *const names[] = { "undefined", "float", "uint8", "int8", "uint16", "int16",
        "int32", "int64", "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
        "complex128", "bfloat16" };
    return t >= 0 && t < (int32_t)PVC_COUNTOF(names) ? names[t] : "unknown";
}

/* External data: location must stay inside base_dir (no absolute paths, no ".."). */
static pv_status read_external(const Onnx__TensorProto *tp, const char *base_dir, void *dst,
                               size_t nbytes, pvc_msg *msg)
{
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
        if (!k || !v) continue;
        if (!strcmp(k, "location")) loc = v;
        else if (!strcmp(k, "offset")) offset = strtoll(v, NULL, 10);
        else if (!strcmp(k, "length")) length = strtoll(v, NULL, 10);
    }
    if (!loc || !*loc) return pvc_fail(msg, PV_EFORMAT, "initializer '%s': external data without a location", tp->name);
    if (loc[0] == '/' || strstr(loc, ".."))
        return pvc_fail(msg, PV_EFORMAT, "initializer '%s': external data location '%s' leaves the model's folder", tp->name, loc);
    if (offset < 0 || (length >= 0 && (uint64_t)length != nbytes))
        return pvc_fail(msg, PV_EFORMAT, "initializer '%s': external data length %lld does not match %zu bytes", tp->name, (long long)length, nbytes);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", base_dir && *base_dir ? base_dir : ".", loc);
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EFORMAT, "initializer '%s': cannot open external data '%s': %s", tp->name, path, strerror(errno));
    pv_status s = PV_OK;
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(dst, 1, nbytes, f) != nbytes)
        s = pvc_fail(msg, PV_EFORMAT, "initializer '%s': external data '%s' is shorter than offset %lld + %zu bytes", tp->name, path, (long long)offset, nbytes);
    fclose(f);
    return s;
}

/* Decodes a TensorProto into desc + a fresh aligned buffer. A tensor with no data at all is
 * reported as PV_EFORMAT "has no data" unless allow_empty (then data stays NULL). */
static pv_status tensor_decode(const Onnx__TensorProto *tp, const char *base_dir, pvc_tensor *t,
                               bool allow_empty, pvc_msg *msg)
{
    memset(t, 0, sizeof *t);
    const char *nm = tp->name ? tp->name : "";
    if (tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING)
        return pvc_fail(msg, PV_EUNSUPPORTED, "tensor '%s': string tensors are not supported", nm);
    if (!onnx_dtype(tp->data_type, &t->dtype))
        return pvc_fail(msg, PV_EUNSUPPORTED, "tensor '%s': dtype %s (%d) is not supported", nm, onnx_dtype_name(tp->data_type), tp->data_type);
    if (tp->n_dims > PV_MAX_RANK)
        return pvc_fail(msg, PV_EUNSUPPORTED, "tensor '%s': rank %zu is more than %d", nm, tp->n_dims, PV_MAX_RANK);
    if (tp->segment) return pvc_fail(msg, PV_EUNSUPPORTED, "tensor '%s': segmented tensors are not supported", nm);
    t->rank = (int)tp->n_dims;
    int64_t numel = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) return pvc_fail(msg, PV_EFORMAT, "tensor '%s': dimension %zu is negative (%lld)", nm, i, (long long)tp->dims[i]);
        t->dims[i] = tp->dims[i];
        if (pvc_mul_overflow(numel, tp->dims[i], &numel) || numel > MAX_TENSOR_BYTES)
            return pvc_fail(msg, PV_EFORMAT, "tensor '%s': %zu dims with absurd sizes", nm, tp->n_dims);
    }
    size_t es = pv_dtype_size(t->dtype), nbytes = (size_t)numel * es;
    if ((int64_t)nbytes > MAX_TENSOR_BYTES) return pvc_fail(msg, PV_EFORMAT, "tensor '%s': %zu bytes is absurd", nm, nbytes);
    pvc_tensor_set_contiguous(t);
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    size_t have = tp->has_raw_data ? tp->raw_data.len
                : t->dtype == PV_F32 ? tp->n_float_data
                : t->dtype == PV_I64 ? tp->n_int64_data : tp->n_int32_data;
    if (!external && have == 0 && numel > 0) {
        if (allow_empty) return PV_OK;
        return pvc_fail(msg, PV_EFORMAT, "tensor '%s' has no data", nm);
    }
    t->data = pvc_malloc_aligned(nbytes ? nbytes : 1);
    if (!t->data) return pvc_fail(msg, PV_ENOMEM, "out of memory for tensor '%s' (%zu bytes)", nm, nbytes);
    pv_status s = PV_OK;
    if (external) {
        s = read_external(tp, base_dir, t->data, nbytes, msg);
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != nbytes)
            s = pvc_fail(msg, PV_EFORMAT, "tensor '%s': raw_data has %zu bytes, shape and dtype need %zu", nm, tp->raw_data.len, nbytes);
        else if (nbytes) memcpy(t->data, tp->raw_data.data, nbytes);   /* little-endian host */
    } else if ((int64_t)have != numel) {
        s = pvc_fail(msg, PV_EFORMAT, "tensor '%s': %zu values stored, shape needs %lld", nm, have, (long long)numel);
    } else {
        for (int64_t i = 0; i < numel; i++) {
            switch (t->dtype) {
            case PV_F32: ((float *)t->data)[i] = tp->float_data[i]; break;
            case PV_I64: ((int64_t *)t->data)[i] = tp->int64_data[i]; break;
            case PV_F16: case PV_BF16: ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i]; break;
            default: pvc_set_i64(t->data, t->dtype, i, tp->int32_data[i]);
            }
        }
    }
    if (s != PV_OK) { pvc_free_aligned(t->data); t->data = NULL; }
    return s;
}

pv_status pvg_onnx_tensor_parse(const void *buf, size_t len, pvc_tensor *out, char **name, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (name) *name = NULL;
    pb_oom = false;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pb_allocator, len, buf);
    if (!tp && pb_oom) return pvc_fail(msg, PV_ENOMEM, "out of memory decoding a TensorProto");
    if (!tp) return pvc_fail(msg, PV_EFORMAT, "not a valid ONNX TensorProto (%zu bytes)", len);
    pv_status s = tensor_decode(tp, NULL, out, false, msg);
    if (s == PV_OK && tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        s = PV_OK;
    if (s == PV_OK && name) {
        *name = pvc_strdup(tp->name ? tp->name : "");
        if (!*name) { pvc_free_aligned(out->data); out->data = NULL; s = pvc_fail(msg, PV_ENOMEM, "out of memory"); }
    }
    onnx__tensor_proto__free_unpacked(tp, &pb_allocator);
    return s;
}

static pv_status type_decl(const Onnx__ValueInfoProto *vi, pvc_tensor *d, pvc_msg *msg)
{
    d->rank = -1;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp) return PV_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return pvc_fail(msg, PV_EUNSUPPORTED, "value '%s': only tensor types are supported (sequences, maps, optionals are not)", vi->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt) return PV_OK;
    if (tt->has_elem_type && tt->elem_type && !onnx_dtype(tt->elem_type, &d->dtype))
        return pvc_fail(msg, PV_EUNSUPPORTED, "value '%s': dtype %s (%d) is not supported", vi->name, onnx_dtype_name(tt->elem_type), tt->elem_type);
    if (!tt->shape) return PV_OK;
    if (tt->shape->n_dim > PV_MAX_RANK)
        return pvc_fail(msg, PV_EUNSUPPORTED, "value '%s': rank %zu is more than %d", vi->name, tt->shape->n_dim, PV_MAX_RANK);
    d->rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        int64_t v = dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dm->dim_value : -1;
        if (v < -1 || v > ((int64_t)1 << 40)) return pvc_fail(msg, PV_EFORMAT, "value '%s': dimension %zu = %lld is invalid", vi->name, i, (long long)v);
        d->dims[i] = v;
    }
    return PV_OK;
}

static pv_status attr_decode(pvg_graph *g, const pvg_node *n, const Onnx__AttributeProto *ap, pvg_attr *a)
{
    pvc_msg *msg = &g->msg;
    const char *nn = n->name, *op = n->op_type;
    a->name = pvc_strdup(ap->name ? ap->name : "");
    if (!a->name) return pvc_fail(msg, PV_ENOMEM, "out of memory");
    if (ap->ref_attr_name) return pvc_fail(msg, PV_EUNSUPPORTED, "node '%s' (%s): attribute '%s' refers to a function attribute", nn, op, a->name);
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->type = PVG_ATTR_FLOAT; a->f = ap->f; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->type = PVG_ATTR_INT; a->i = ap->i; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->type = PVG_ATTR_STRING;
        a->s = pvc_malloc(ap->s.len + 1);
        if (!a->s) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        if (ap->s.len) memcpy(a->s, ap->s.data, ap->s.len);
        a->s[ap->s.len] = 0;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        a->type = PVG_ATTR_TENSOR;
        if (!ap->t) return pvc_fail(msg, PV_EFORMAT, "node '%s' (%s): tensor attribute '%s' has no tensor", nn, op, a->name);
        pv_status s = tensor_decode(ap->t, g->base_dir, &a->t, false, msg);
        if (s != PV_OK) return s;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->type = PVG_ATTR_FLOATS;
        a->n = (int64_t)ap->n_floats;
        a->floats = pvc_calloc(ap->n_floats + 1, sizeof(float));
        if (!a->floats) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->type = PVG_ATTR_INTS;
        a->n = (int64_t)ap->n_ints;
        a->ints = pvc_calloc(ap->n_ints + 1, sizeof(int64_t));
        if (!a->ints) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        a->type = PVG_ATTR_STRINGS;
        a->strings = pvc_calloc(ap->n_strings + 1, sizeof(char *));
        if (!a->strings) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        for (size_t i = 0; i < ap->n_strings; i++) {
            a->strings[i] = pvc_malloc(ap->strings[i].len + 1);
            if (!a->strings[i]) return pvc_fail(msg, PV_ENOMEM, "out of memory");
            a->n = (int64_t)i + 1;
            if (ap->strings[i].len) memcpy(a->strings[i], ap->strings[i].data, ap->strings[i].len);
            a->strings[i][ap->strings[i].len] = 0;
        }
        break;
    default:
        a->type = PVG_ATTR_OTHER;      /* graphs, sparse tensors, type protos: refused if read */
        break;
    }
    return PV_OK;
}

static pv_status import_graph(pvg_graph *g, const Onnx__GraphProto *gp)
{
    pvc_msg *msg = &g->msg;
    pv_status s;
    /* initializers */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name) return pvc_fail(msg, PV_EFORMAT, "initializer %zu has no name", i);
        int v = pvg_value_get(g, tp->name);
        if (v < 0) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        if (g->values[v].is_const) return pvc_fail(msg, PV_EFORMAT, "initializer '%s' is defined twice", tp->name);
        pvc_tensor t;
        if ((s = tensor_decode(tp, g->base_dir, &t, false, msg)) != PV_OK) return s;
        g->values[v].decl = t;
        g->values[v].decl.data = NULL;
        g->values[v].data = t.data;
        g->values[v].is_const = true;
    }
    if (gp->n_sparse_initializer) return pvc_fail(msg, PV_EUNSUPPORTED, "sparse initializers are not supported");
    /* inputs (those that are also initializers keep the initializer's value) */
    g->inputs = pvc_calloc(gp->n_input + 1, sizeof(int));
    g->outputs = pvc_calloc(gp->n_output + 1, sizeof(int));
    if (!g->inputs || !g->outputs) return pvc_fail(msg, PV_ENOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return pvc_fail(msg, PV_EFORMAT, "graph input %zu has no name", i);
        int v = pvg_value_get(g, vi->name);
        if (v < 0) return pvc_fail(msg, PV_ENOMEM, "out of memory");
        if (g->values[v].is_const) continue;
        if (g->values[v].is_input) return pvc_fail(msg, PV_EFORMAT, "graph input '%s' is listed twice", vi->name);
        if ((s = type_decl(vi, &g->values[v].decl, msg)) != PV_OK) return s;
        if (g->values[v].decl.rank < 0)
            return pvc_fail(msg, PV_EUNSUPPORTED, "graph input '%s' has no tensor shape (rank unknown)", vi->name);
        g->values[v].is_input = true;
        g->inputs[g->ninputs++] = v;
    }
    /* nodes */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        char nm[64];
        const char *name = np->name && *np->name ? np->name : (snprintf(nm, sizeof nm, "#%zu", i), nm);
        if (!np->op_type || !*np->op_type) return pvc_fail(msg, PV_EFORMAT, "node '%s' has no op_type", name);
        if (np->n_input > 4096 || np->n_output > 4096) return pvc_fail(msg, PV_EFORMAT, "node '%s' has too many inputs/outputs", name);
        pvg_node *n;
        if ((s = pvg_node_add(g, name, np->op_type, np->domain, (int)np->n_input, (int)np->n_output, &n)) != PV_OK) return s;
        int self = g->nnodes - 1;
        for (size_t k = 0; k < np->n_input; k++) {
            if (!np->input[k] || !*np->input[k]) continue;
            int v = pvg_value_get(g, np->input[k]);
            if (v < 0) return pvc_fail(msg, PV_ENOMEM, "out of memory");
            g->nodes[self].in[k] = v;
        }
        for (size_t k = 0; k < np->n_output; k++) {
            if (!np->output[k] || !*np->output[k]) continue;
            int v = pvg_value_get(g, np->output[k]);
            if (v < 0) return pvc_fail(msg, PV_ENOMEM, "out of memory");
            pvg_value *val = &g->values[v];
            if (val->producer >= 0 || val->is_const || val->is_input)
                return pvc_fail(msg, PV_EFORMAT, "node '%s': output '%s' is already defined", name, np->output[k]);
            val->producer = self;
            g->nodes[self].out[k] = v;
        }
        n = &g->nodes[self];
        if (np->n_attribute) {
            n->attrs = pvc_calloc(np->n_attribute, sizeof *n->attrs);
            if (!n->attrs) return pvc_fail(msg, PV_ENOMEM, "out of memory");
            for (size_t k = 0; k < np->n_attribute; k++) {
                n->nattrs = (int)k + 1;
                if ((s = attr_decode(g, n, np->attribute[k], &n->attrs[k])) != PV_OK) return s;
            }
        }
    }
    /* every node input must be defined somewhere */
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int v = g->nodes[i].in[k];
            if (v < 0) continue;
            const pvg_value *val = &g->values[v];
            if (!val->is_const && !val->is_input && val->producer < 0)
                return pvc_fail(msg, PV_EFORMAT, "node '%s': input '%s' is not defined by any node, input or initializer",
                                g->nodes[i].name, val->name);
        }
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !*vi->name) return pvc_fail(msg, PV_EFORMAT, "graph output %zu has no name", i);
        int v = pvg_value_find(g, vi->name);
        if (v < 0) return pvc_fail(msg, PV_EFORMAT, "graph output '%s' is not produced by any node", vi->name);
        pvc_tensor d;
        memset(&d, 0, sizeof d);
        if ((s = type_decl(vi, &d, msg)) != PV_OK) return s;
        if (g->values[v].producer >= 0 && !g->values[v].is_const) g->values[v].decl = d;
        g->values[v].is_output = true;
        g->outputs[g->noutputs++] = v;
    }
    if (g->noutputs == 0) return pvc_fail(msg, PV_EFORMAT, "the graph has no outputs");
    return PV_OK;
}

/* Operators of opsets 1-6 whose definition is unchanged from the given opset up to 7 (the
 * versions perceive reads there): a model below 7 loads only when each of its operators has
 * its form at the model's opset. Elementwise ops lost 'consumed_inputs' in 6; Concat's axis
 * became required in 4, Reshape's shape an input in 5, Split's split an attribute in 2,
 * Pad's 'paddings' became 'pads' in 2, Tile's inputs changed in 6. Add..Sum (broadcast
 * attribute), Gemm, BatchNormalization and Dropout ('is_test'), AveragePool
 * (count_include_pad, 7) and the others stay refused by name. */
static const struct { const char *op; int since; } old_forms[] = {
    { "Abs", 6 }, { "Ceil", 6 }, { "Clip", 6 }, { "Elu", 6 }, { "Exp", 6 }, { "Floor", 6 },
    { "HardSigmoid", 6 }, { "LeakyRelu", 6 }, { "Log", 6 }, { "Neg", 6 }, { "Reciprocal", 6 },
    { "Relu", 6 }, { "Selu", 6 }, { "Sigmoid", 6 }, { "Sqrt", 6 }, { "Tanh", 6 },
    { "InstanceNormalization", 6 }, { "Cast", 6 }, { "Tile", 6 }, { "Reshape", 5 }, { "Concat", 4 },
    { "Split", 2 }, { "Pad", 2 },
    { "Not", 1 }, { "Softplus", 1 }, { "Softsign", 1 }, { "GlobalAveragePool", 1 }, { "GlobalMaxPool", 1 },
    { "Identity", 1 }, { "Transpose", 1 }, { "Softmax", 1 }, { "LogSoftmax", 1 }, { "Hardmax", 1 },
    { "Flatten", 1 }, { "Shape", 1 }, { "Size", 1 }, { "DepthToSpace", 1 }, { "SpaceToDepth", 1 },
    { "LpNormalization", 1 }, { "LRN", 1 }, { "ReduceSum", 1 }, { "ReduceMean", 1 }, { "ReduceMax", 1 },
    { "ReduceMin", 1 }, { "ReduceProd", 1 }, { "ReduceL1", 1 }, { "ReduceL2", 1 }, { "ReduceSumSquare", 1 },
    { "ReduceLogSum", 1 }, { "ReduceLogSumExp", 1 }, { "ArgMax", 1 }, { "ArgMin", 1 }, { "Constant", 1 },
    { "Squeeze", 1 }, { "Unsqueeze", 1 }, { "Gather", 1 }, { "MatMul", 1 }, { "Slice", 1 }, { "TopK", 1 },
};

static pv_status check_old_forms(pvg_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        int since = 0;
        for (size_t k = 0; k < sizeof old_forms / sizeof old_forms[0] && *n->domain == 0; k++)
            if (!strcmp(n->op_type, old_forms[k].op)) since = old_forms[k].since;
        if (since == 0 || since > g->opset)
            return pvc_fail(&g->msg, PV_EUNSUPPORTED,
                            "ONNX opset %d: node '%s': the opset %d form of %s is not supported (perceive reads opsets %d-%d, "
                            "and below %d only operators unchanged since)", g->opset, n->name, g->opset, n->op_type,
                            OPSET_MIN, OPSET_MAX, OPSET_MIN);
    }
    return PV_OK;
}

pv_status pvg_graph_load_onnx(const void *buf, size_t len, const char *base_dir, pvg_graph **out, pvc_msg *msg)
{
    *out = NULL;
    pb_oom = false;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pb_allocator, len, buf);
    if (!mp && pb_oom) return pvc_fail(msg, PV_ENOMEM, "out of memory decoding the ONNX model (%zu bytes)", len);
    if (!mp) return pvc_fail(msg, PV_EFORMAT, "not a valid ONNX model: protobuf decoding failed (%zu bytes; truncated or not ONNX)", len);
    pvg_graph *g = NULL;
    pv_status s = pvg_graph_create(&g);
    if (s != PV_OK) { onnx__model_proto__free_unpacked(mp, &pb_allocator); return pvc_fail(msg, s, "%s", pv_last_error()); }
    if (!mp->graph) { s = pvc_fail(&g->msg, PV_EFORMAT, "not a valid ONNX model: no graph"); goto fail; }
    g->ir_version = mp->ir_version;
    for (size_t i = 0; i < mp->n_metadata_props; i++)
        if (mp->metadata_props[i]->key && !strcmp(mp->metadata_props[i]->key, PVG_GENERATED_KEY) && mp->metadata_props[i]->value)
            snprintf(g->generated, sizeof g->generated, "%s", mp->metadata_props[i]->value);
    if (mp->ir_version < 3) { s = pvc_fail(&g->msg, PV_EUNSUPPORTED, "ONNX ir_version %lld is not supported (3 or newer)", (long long)mp->ir_version); goto fail; }
    g->opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const char *d = mp->opset_import[i]->domain;
        if (!d || !*d || !strcmp(d, "ai.onnx")) g->opset = (int)mp->opset_import[i]->version;
    }
    if (g->opset < OPSET_OLD_MIN || g->opset > OPSET_MAX) {
        s = pvc_fail(&g->msg, PV_EUNSUPPORTED, "ONNX opset %d is not supported: perceive reads opsets %d-%d of the default domain",
                     g->opset, OPSET_MIN, OPSET_MAX);
        goto fail;
    }
    if (mp->n_functions) { s = pvc_fail(&g->msg, PV_EUNSUPPORTED, "model-local functions are not supported"); goto fail; }
    g->base_dir = pvc_strdup(base_dir ? base_dir : ".");
    if (!g->base_dir) { s = pvc_fail(&g->msg, PV_ENOMEM, "out of memory"); goto fail; }
    if ((s = import_graph(g, mp->graph)) != PV_OK) goto fail;
    if (g->opset < OPSET_MIN && (s = check_old_forms(g)) != PV_OK) goto fail;
    if ((s = pvg_graph_bind_ops(g)) != PV_OK) goto fail;
    onnx__model_proto__free_unpacked(mp, &pb_allocator);
    *out = g;
    return PV_OK;
fail:
    if (msg) *msg = g->msg;
    onnx__model_proto__free_unpacked(mp, &pb_allocator);
    pvg_graph_free(g);
    return s;
}
