/* meteor probe: specs/meteor.md section 7, read from the file (probe.h). Module paths in node
 * names (kept by the exporter: "/net/depth_head/...") locate the branches; every number comes
 * from weight shapes, attributes and constants. */
#include "models/meteor/probe.h"
#include "graph/graph.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const pvg_attr *attr(const pvg_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++) if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

static int64_t attr_i(const pvg_node *n, const char *name, int64_t def)
{
    const pvg_attr *a = attr(n, name);
    return a && a->type == PVG_ATTR_INT ? a->i : def;
}

/* A value's constant data: an initializer, or a Constant node's tensor. */
static const pvc_tensor *const_of(const pvg_graph *g, int v, pvc_tensor *tmp)
{
    if (v < 0) return NULL;
    const pvg_value *val = &g->values[v];
    if (val->is_const && val->data) { *tmp = val->decl; tmp->data = val->data; return tmp; }
    if (val->producer >= 0 && !strcmp(g->nodes[val->producer].op_type, "Constant")) {
        const pvg_attr *a = attr(&g->nodes[val->producer], "value");
        if (a && a->type == PVG_ATTR_TENSOR) return &a->t;
    }
    return NULL;
}

static bool scalar(const pvg_graph *g, int v, double *out)
{
    pvc_tensor tmp;
    const pvc_tensor *t = const_of(g, v, &tmp);
    if (!t || !t->data || pvc_numel(t) != 1) return false;
    *out = pvc_get_f64(t->data, t->dtype, 0);
    return true;
}

static const pvg_node *first_consumer(const pvg_graph *g, int v)
{
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++) if (g->nodes[i].in[k] == v) return &g->nodes[i];
    return NULL;
}

static cJSON *point(cJSON *arr, int id, const char *what, bool expected)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "point", what);
    cJSON_AddBoolToObject(o, "expected", expected);
    cJSON_AddItemToArray(arr, o);
    return o;
}

/* 1: the ops between imgs and the first Conv, with their scalar constants */
static void p_normalisation(const pvg_graph *g, cJSON *arr)
{
    char chain[512] = "";
    int o = 0, v = pvg_value_find(g, "imgs");
    bool imagenet = false, div255 = false;
    for (int hop = 0; v >= 0 && hop < 12; hop++) {
        const pvg_node *n = first_consumer(g, v);
        if (!n) break;
        double c;
        bool sc = false;
        for (int k = 0; k < n->nin && !sc; k++) if (n->in[k] != v && scalar(g, n->in[k], &c)) sc = true;
        if (sc) o += snprintf(chain + o, sizeof chain - (size_t)o, "%s%s(%g)", o ? " -> " : "", n->op_type, c);
        else o += snprintf(chain + o, sizeof chain - (size_t)o, "%s%s", o ? " -> " : "", n->op_type);
        if (!strcmp(n->op_type, "Div") && sc && c == 255) div255 = true;
        if ((!strcmp(n->op_type, "Sub") || !strcmp(n->op_type, "Div")) && !sc && hop > 0) imagenet = true;   /* per-channel mean/std */
        if (!strcmp(n->op_type, "Conv") || o >= (int)sizeof chain - 40) break;
        v = n->out[0];
    }
    cJSON *p = point(arr, 1, "input normalisation", div255 && !imagenet);
    cJSON_AddStringToObject(p, "file", chain);
    cJSON_AddStringToObject(p, "perceive", "runs the file's nodes as they are");
}

/* Conv nodes whose name contains sub: output channels in file order */
static void conv_widths(const pvg_graph *g, const char *sub, cJSON *a, int64_t *first_cin)
{
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Conv") || !strstr(n->name, sub) || n->nin < 2) continue;
        const pvc_tensor *w = &g->values[n->in[1]].decl;
        if (w->rank < 2) continue;
        if (first_cin && *first_cin < 0) *first_cin = w->dims[1] * attr_i(n, "group", 1);
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)w->dims[0]));
    }
}

static void p_depth(const pvg_graph *g, cJSON *arr)
{
    cJSON *w = cJSON_CreateArray();
    conv_widths(g, "/depth_head/", w, NULL);
    int n = cJSON_GetArraySize(w);
    bool half = n >= 4 && cJSON_GetArrayItem(w, 0)->valuedouble == 128 && cJSON_GetArrayItem(w, 2)->valuedouble == 128;
    cJSON *p = point(arr, 2, "depth head widths (Conv output channels, /depth_head/)", half);
    cJSON_AddItemToObject(p, "file", w);
}

static void p_ego_pool(const pvg_graph *g, cJSON *arr)
{
    const pvg_node *last = NULL;
    for (int i = 0; i < g->nnodes; i++)
        if (!strcmp(g->nodes[i].op_type, "Conv") && strstr(g->nodes[i].name, "/ego_stem/")) last = &g->nodes[i];
    char what[160] = "no /ego_stem/ Conv found";
    bool dw = false;
    if (last && last->nin >= 2) {
        const pvc_tensor *w = &g->values[last->in[1]].decl;
        int64_t grp = attr_i(last, "group", 1);
        if (grp > 1 && w->rank == 4 && w->dims[1] == 1) {
            dw = true;
            snprintf(what, sizeof what, "depthwise Conv %lldx%lld, %lld channels (%s)", (long long)w->dims[2], (long long)w->dims[3],
                     (long long)grp, last->name);
        } else {
            const pvg_node *c = first_consumer(g, last->out[0]);
            while (c && (!strcmp(c->op_type, "Relu") || !strcmp(c->op_type, "Clip"))) c = first_consumer(g, c->out[0]);
            snprintf(what, sizeof what, "%s after the last ego_stem Conv", c ? c->op_type : "nothing");
        }
    }
    cJSON *p = point(arr, 3, "ego pool", dw);
    cJSON_AddStringToObject(p, "file", what);
}

static void p_paint(const pvg_graph *g, cJSON *arr)
{
    int64_t cin = -1;
    cJSON *w = cJSON_CreateArray();
    conv_widths(g, "paint", w, &cin);
    cJSON_Delete(w);
    cJSON *cls = cJSON_CreateArray();
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Gather") || n->nin < 2) continue;
        const pvg_node *c = first_consumer(g, n->out[0]);
        for (int hop = 0; c && hop < 3 && !strstr(c->name, "paint"); hop++) c = first_consumer(g, c->out[0]);
        pvc_tensor tmp;
        const pvc_tensor *t = const_of(g, n->in[1], &tmp);
        if (!c || !strstr(c->name, "paint") || !t || !t->data) continue;
        for (int64_t k = 0; k < pvc_numel(t) && k < 32; k++) cJSON_AddItemToArray(cls, cJSON_CreateNumber((double)pvc_get_i64(t->data, t->dtype, k)));
        break;
    }
    cJSON *p = point(arr, 4, "paint classes (Cin of the paint 1x1 conv, the class selection)", cin == 8);
    cJSON_AddNumberToObject(p, "file_classes", (double)cin);
    cJSON_AddItemToObject(p, "file_selection", cls);
}

static void p_heads(const pvg_graph *g, cJSON *arr)
{
    static const char *const heads[] = { "stat_head", "delta_stat", "sem_ego", "lane_branch", "kin_gate" };
    cJSON *p = point(arr, 5, "optional heads (present by node path)", true), *o = cJSON_AddObjectToObject(p, "file");
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
        bool has = false;
        for (int i = 0; i < g->nnodes && !has; i++) has = strstr(g->nodes[i].name, heads[h]) != NULL;
        cJSON_AddBoolToObject(o, heads[h], has);
    }
}

static void p_lift_bins(const pvg_graph *g, cJSON *arr)
{
    const char *lin = NULL;
    double c = 0;
    for (int i = 0; i < g->nnodes && !lin; i++) {
        const pvg_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Div") && strcmp(n->op_type, "Mul")) continue;
        if (n->nin == 2 && scalar(g, n->in[1], &c) && ((!strcmp(n->op_type, "Div") && fabs(c - 1.25) < 1e-6) ||
                                                       (!strcmp(n->op_type, "Mul") && fabs(c - 0.8) < 1e-6))) lin = n->name;
    }
    int ge = 0;
    for (int i = 0; i < g->nnodes; i++) ge += !strcmp(g->nodes[i].op_type, "GatherElements");
    cJSON *p = point(arr, 6, "lift depth-bin mapping", lin != NULL);
    char t[256];
    if (lin) snprintf(t, sizeof t, "linear: (dist - 1) / 1.25 at %s; %d GatherElements", lin, ge);
    else snprintf(t, sizeof t, "no (dist - 1) / 1.25 step: bucketized or another mapping; %d GatherElements", ge);
    cJSON_AddStringToObject(p, "file", t);
}

static void p_counts(const pvg_graph *g, cJSON *arr, cJSON *root)
{
    int inits = 0, big = 0, zero = 0, ln = 0, ident = 0, nan_guards = 0, custom = 0;
    int64_t big_el = 0, weights = 0;
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].is_const && g->values[v].producer < 0 && g->values[v].data) { inits++; weights += pvc_numel(&g->values[v].decl); }
    cJSON *types = cJSON_CreateObject(), *customs = cJSON_CreateArray();
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        cJSON *c = cJSON_GetObjectItemCaseSensitive(types, n->op_type);
        if (c) cJSON_SetNumberValue(c, c->valuedouble + 1); else cJSON_AddNumberToObject(types, n->op_type, 1);
        ln += !strcmp(n->op_type, "LayerNormalization");
        ident += !strcmp(n->op_type, "Identity");
        nan_guards += !strcmp(n->op_type, "IsNaN") || !strcmp(n->op_type, "IsInf");
        if (n->domain[0]) { custom++; cJSON_AddItemToArray(customs, cJSON_CreateString(n->op_type)); }
        if (!strcmp(n->op_type, "Constant")) {
            const pvg_attr *a = attr(n, "value");
            if (a && a->type == PVG_ATTR_TENSOR && pvc_numel(&a->t) > 4096 && a->t.data) {
                big++;
                big_el += pvc_numel(&a->t);
                bool z = true;
                const unsigned char *b = a->t.data;
                for (size_t k = 0; k < pvc_nbytes(&a->t) && z; k++) z = b[k] == 0;
                zero += z;
            }
        }
    }
    cJSON *p = point(arr, 8, "weight tensors (initializers)", inits == 264);
    cJSON_AddNumberToObject(p, "file", inits);
    cJSON_AddNumberToObject(p, "elements", (double)weights);
    p = point(arr, 9, "node count and op mix", g->nnodes == 2052);
    cJSON_AddNumberToObject(p, "file_nodes", g->nnodes);
    cJSON_AddNumberToObject(p, "file_op_types", cJSON_GetArraySize(types));
    cJSON_AddNumberToObject(p, "identity_nodes", ident);
    cJSON_AddItemToObject(root, "op_histogram", types);
    p = point(arr, 10, "opset and LayerNormalization", g->opset == 17 && ln == 1);
    cJSON_AddNumberToObject(p, "file_opset", g->opset);
    cJSON_AddNumberToObject(p, "layer_normalization_nodes", ln);
    p = point(arr, 11, "NaN-guard chains", nan_guards == 0);
    cJSON_AddNumberToObject(p, "file_isnan_isinf_nodes", nan_guards);
    p = point(arr, 12, "custom ops", custom == 0);
    cJSON_AddItemToObject(p, "file", customs);
    p = point(arr, 13, "large constants (> 4096 elements)", true);
    cJSON_AddNumberToObject(p, "file_count", big);
    cJSON_AddNumberToObject(p, "file_elements", (double)big_el);
    cJSON_AddNumberToObject(p, "all_zero", zero);
}

static void p_outputs(const pvg_graph *g, cJSON *arr)
{
    cJSON *p = point(arr, 14, "output dtypes", true), *o = cJSON_AddObjectToObject(p, "file");
    bool ok = true;
    for (int i = 0; i < g->noutputs; i++) {
        const pvg_value *v = &g->values[g->outputs[i]];
        cJSON_AddStringToObject(o, v->name, pv_dtype_name(v->decl.dtype));
        bool want_u8 = !strcmp(v->name, "lane") || !strcmp(v->name, "depth") || !strcmp(v->name, "seg2d");
        pv_dtype want = want_u8 ? PV_U8 : !strcmp(v->name, "depth_mean") ? PV_F16 : PV_F32;
        ok = ok && v->decl.dtype == want;
    }
    cJSON_ReplaceItemInObject(p, "expected", cJSON_CreateBool(ok));
}

/* 15: Conv weights whose every group of 4 along Cin has >= 2 zeros */
static void p_sparsity(const pvg_graph *g, cJSON *arr)
{
    int layers = 0, sparse = 0;
    double flops = 0, sparse_flops = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const pvg_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Conv") || n->nin < 2) continue;
        const pvg_value *w = &g->values[n->in[1]];
        if (!w->data || w->decl.dtype != PV_F32 || w->decl.rank != 4) continue;
        int64_t co = w->decl.dims[0], ci = w->decl.dims[1], kk = w->decl.dims[2] * w->decl.dims[3];
        double f = (double)co * (double)ci * (double)kk;
        layers++;
        flops += f;
        if (ci % 4) continue;
        const float *d = w->data;
        bool ok = true;
        for (int64_t o = 0; o < co && ok; o++)
            for (int64_t k = 0; k < kk && ok; k++)
                for (int64_t c = 0; c < ci && ok; c += 4) {
                    int z = 0;
                    for (int j = 0; j < 4; j++) z += d[(o * ci + c + j) * kk + k] == 0.0f;
                    ok = z >= 2;
                }
        if (ok) { sparse++; sparse_flops += f; }
    }
    cJSON *p = point(arr, 15, "2:4 weight pattern (every 4 along Cin with >= 2 zeros)", true);
    cJSON_AddNumberToObject(p, "conv_layers", layers);
    cJSON_AddNumberToObject(p, "layers_2_4", sparse);
    cJSON_AddNumberToObject(p, "weight_share_2_4", flops > 0 ? sparse_flops / flops : 0);
    cJSON_AddStringToObject(p, "perceive", "dense kernels for every layer (no 2:4 path yet)");
}

void *pvm_meteor_probe(const struct pvg_graph *g)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "open_points");
    if (!root || !arr) { cJSON_Delete(root); return NULL; }
    cJSON_AddNumberToObject(root, "ir_version", (double)g->ir_version);
    p_normalisation(g, arr);
    p_depth(g, arr);
    p_ego_pool(g, arr);
    p_paint(g, arr);
    p_heads(g, arr);
    p_lift_bins(g, arr);
    p_counts(g, arr, root);
    p_outputs(g, arr);
    p_sparsity(g, arr);
    cJSON *p = point(arr, 16, "seg-bias", true);
    cJSON_AddStringToObject(p, "perceive", "the biases are used as stored (already baked in; not applied again)");
    p = point(arr, 7, "depth_mean bin centres", true);
    cJSON_AddStringToObject(p, "perceive", "computed by the file's own depth_mean subgraph (its constants folded at load)");
    return root;
}
