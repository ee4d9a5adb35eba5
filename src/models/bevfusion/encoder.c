/* bevfusion encoder, load side: reads the sparse part of the graph into a program of
 * rulebooks and fused conv layers (see encoder.h). */
#include "models/bevfusion/encoder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* per value, while walking the graph */
enum { F_NONE = 0, F_PENDING, F_SLOT };
enum { ST_RAW = 0, ST_AFFINE, ST_RESIDUAL, ST_RELU };
typedef struct fstate { int kind, layer, slot, level, c, stage; } fstate;

typedef struct walk {
    const pvg_graph *g;
    pvm_bf_encoder  *e;
    pvc_msg         *msg;
    int             *order, norder;
    int             *uses;          /* consumers per value (graph outputs count too) */
    int             *level_of;      /* per value: level + 1 of an indices tensor, 0 unknown */
    int             *rb_of_node;    /* per node: rulebook index for GetIndicePairs, -1 */
    fstate          *fs;
    float           *aff_a[PVM_BF_MAX_LAYERS], *aff_b[PVM_BF_MAX_LAYERS];
    float           *raw_w[PVM_BF_MAX_LAYERS];   /* [cout, K, cin] as in the file */
    int              stage[PVM_BF_MAX_LAYERS];
    int              idx0_value;
} walk;

static const char *vname(const walk *w, int v) { return v >= 0 ? w->g->values[v].name : "?"; }

/* Follows Identity / Cast back to the value they copy. */
static int trace(const pvg_graph *g, int v)
{
    for (int hop = 0; hop < 16 && v >= 0; hop++) {
        int p = g->values[v].producer;
        if (p < 0) break;
        const pvg_node *n = &g->nodes[p];
        if (*n->domain || n->nin < 1 || (strcmp(n->op_type, "Identity") && strcmp(n->op_type, "Cast"))) break;
        v = n->in[0];
    }
    return v;
}

static const pvg_attr *find_attr(const pvg_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++) if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

static pv_status attr_ints3(walk *w, const pvg_node *n, const char *name, int32_t out[3])
{
    const pvg_attr *a = find_attr(n, name);
    if (!a || a->type != PVG_ATTR_INTS || a->n != 3)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::%s): attribute '%s' must be 3 ints", n->name, n->op_type, name);
    for (int i = 0; i < 3; i++) {
        if (a->ints[i] < 0 || a->ints[i] > 100000)
            return pvc_fail(w->msg, PV_EFORMAT, "node '%s': attribute '%s'[%d] = %lld is out of range", n->name, name, i,
                            (long long)a->ints[i]);
        out[i] = (int32_t)a->ints[i];
    }
    return PV_OK;
}

static pv_status attr_int_is(walk *w, const pvg_node *n, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const pvg_attr *a = find_attr(n, name);
    if (!a || a->type != PVG_ATTR_INT)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::%s): attribute '%s' (int) is missing", n->name, n->op_type, name);
    if (a->i < lo || a->i > hi)
        return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (autoware::%s): attribute '%s' = %lld is not supported (expected %lld..%lld)",
                        n->name, n->op_type, name, (long long)a->i, (long long)lo, (long long)hi);
    if (out) *out = a->i;
    return PV_OK;
}

static pv_status attr_float_is(walk *w, const pvg_node *n, const char *name, float want)
{
    const pvg_attr *a = find_attr(n, name);
    if (!a || (a->type != PVG_ATTR_FLOAT && a->type != PVG_ATTR_INT))
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::%s): attribute '%s' is missing", n->name, n->op_type, name);
    float v = a->type == PVG_ATTR_FLOAT ? a->f : (float)a->i;
    if (v != want)
        return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (autoware::%s): attribute '%s' = %g is not supported (only %g)",
                        n->name, n->op_type, name, (double)v, (double)want);
    return PV_OK;
}

static pv_status check_attr_names(walk *w, const pvg_node *n, const char *const *names, int count)
{
    for (int i = 0; i < n->nattrs; i++) {
        bool known = false;
        for (int k = 0; k < count; k++) if (!strcmp(n->attrs[i].name, names[k])) known = true;
        if (!known)
            return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (autoware::%s): attribute '%s' is not supported",
                            n->name, n->op_type, n->attrs[i].name);
    }
    if (n->nattrs != count)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::%s): %d attributes, the plugin takes exactly %d",
                        n->name, n->op_type, n->nattrs, count);
    return PV_OK;
}

static int level_new(walk *w, const int32_t shape[3])
{
    pvm_bf_encoder *e = w->e;
    if (e->nlevels >= PVM_BF_MAX_LEVELS) return -1;
    memcpy(e->shape[e->nlevels], shape, 3 * sizeof *shape);
    return e->nlevels++;
}

/* Level of an indices tensor; the first unknown one becomes level 0 (made from coors). */
static pv_status level_get(walk *w, int v, const int32_t shape[3], const pvg_node *who, int *out)
{
    v = trace(w->g, v);
    if (w->level_of[v]) { *out = w->level_of[v] - 1; return PV_OK; }
    if (w->idx0_value >= 0 && w->idx0_value != v)
        return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': its indices '%s' are neither the level-0 indices '%s' nor "
                        "the output of a GetIndicePairsImplicitGemm node", who->name, vname(w, v), vname(w, w->idx0_value));
    w->idx0_value = v;
    int l = level_new(w, shape);
    if (l < 0) return pvc_fail(w->msg, PV_EUNSUPPORTED, "more than %d sparse levels", PVM_BF_MAX_LEVELS);
    w->level_of[v] = l + 1;
    *out = l;
    return PV_OK;
}

static pv_status read_pairs_node(walk *w, int ni)
{
    static const char *const names[] = { "algo", "batch_size", "spatial_shape", "ksize", "stride", "padding",
                                         "dilation", "out_padding", "subm", "transpose", "is_train" };
    const pvg_node *n = &w->g->nodes[ni];
    pvm_bf_encoder *e = w->e;
    pv_status s;
    if ((s = check_attr_names(w, n, names, 11)) != PV_OK) return s;
    if (n->nin != 1 || n->nout < 1 || n->out[0] < 0)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::GetIndicePairsImplicitGemm): %d inputs / %d outputs, "
                        "expected 1 (indices) / 5", n->name, n->nin, n->nout);
    pvm_bf_rbspec r;
    memset(&r, 0, sizeof r);
    int32_t shape[3], dil[3], opad[3];
    int64_t subm;
    if ((s = attr_int_is(w, n, "algo", 0, 2, NULL)) != PV_OK) return s;
    if ((s = attr_int_is(w, n, "batch_size", 1, 1, NULL)) != PV_OK) return s;
    if ((s = attr_int_is(w, n, "subm", 0, 1, &subm)) != PV_OK) return s;
    if ((s = attr_int_is(w, n, "transpose", 0, 0, NULL)) != PV_OK) return s;
    if ((s = attr_int_is(w, n, "is_train", 0, 0, NULL)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "spatial_shape", shape)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "ksize", r.ksize)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "stride", r.stride)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "padding", r.pad)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "dilation", dil)) != PV_OK) return s;
    if ((s = attr_ints3(w, n, "out_padding", opad)) != PV_OK) return s;
    for (int d = 0; d < 3; d++) {
        if (dil[d] != 1) return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': dilation %d is not supported (only 1)", n->name, dil[d]);
        if (opad[d] != 0) return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': out_padding %d is not supported (only 0)", n->name, opad[d]);
        if (r.ksize[d] < 1 || r.ksize[d] > 3 || r.stride[d] < 1 || shape[d] < 1)
            return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': ksize %d / stride %d / spatial_shape %d on axis %d not supported",
                            n->name, r.ksize[d], r.stride[d], shape[d], d);
    }
    r.subm = subm != 0;
    if (r.subm)
        for (int d = 0; d < 3; d++)
            if (r.stride[d] != 1 || r.ksize[d] % 2 == 0)
                return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': submanifold conv with stride %d / ksize %d", n->name,
                                r.stride[d], r.ksize[d]);
    if ((s = level_get(w, n->in[0], shape, n, &r.in_level)) != PV_OK) return s;
    if (memcmp(e->shape[r.in_level], shape, sizeof shape))
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': spatial_shape [%d,%d,%d] but its indices are on a [%d,%d,%d] level",
                        n->name, shape[0], shape[1], shape[2], e->shape[r.in_level][0], e->shape[r.in_level][1],
                        e->shape[r.in_level][2]);
    /* same rulebook already? */
    int found = -1;
    for (int i = 0; i < e->nrb; i++) {
        const pvm_bf_rbspec *o = &e->rb[i];
        if (o->in_level == r.in_level && o->subm == r.subm && !memcmp(o->ksize, r.ksize, sizeof r.ksize) &&
            !memcmp(o->stride, r.stride, sizeof r.stride) && (r.subm || !memcmp(o->pad, r.pad, sizeof r.pad)))
            found = i;
    }
    if (found < 0) {
        if (e->nrb >= PVM_BF_MAX_RB) return pvc_fail(w->msg, PV_EUNSUPPORTED, "more than %d rulebooks", PVM_BF_MAX_RB);
        if (r.subm) r.out_level = r.in_level;
        else {
            int32_t os[3];
            for (int d = 0; d < 3; d++) {
                os[d] = (shape[d] + 2 * r.pad[d] - r.ksize[d]) / r.stride[d] + 1;
                if (os[d] < 1) return pvc_fail(w->msg, PV_EFORMAT, "node '%s': output size %d on axis %d", n->name, os[d], d);
            }
            if ((r.out_level = level_new(w, os)) < 0)
                return pvc_fail(w->msg, PV_EUNSUPPORTED, "more than %d sparse levels", PVM_BF_MAX_LEVELS);
        }
        found = e->nrb;
        e->rb[e->nrb++] = r;
    }
    w->rb_of_node[ni] = found;
    int ov = trace(w->g, n->out[0]);
    w->level_of[ov] = e->rb[found].out_level + 1;
    w->level_of[n->out[0]] = e->rb[found].out_level + 1;
    return PV_OK;
}

static pv_status slot_new(walk *w, int level, int c, int *out)
{
    pvm_bf_encoder *e = w->e;
    if (e->nslots >= PVM_BF_MAX_SLOTS) return pvc_fail(w->msg, PV_EUNSUPPORTED, "more than %d sparse feature tensors", PVM_BF_MAX_SLOTS);
    e->slot_level[e->nslots] = level;
    e->slot_c[e->nslots] = c;
    *out = e->nslots++;
    return PV_OK;
}

/* A pending conv output becomes a stored tensor (its layer's epilogue is complete). */
static pv_status materialize(walk *w, int v)
{
    fstate *f = &w->fs[v];
    if (f->kind != F_PENDING) return PV_OK;
    pvm_bf_layer *L = &w->e->layer[f->layer];
    if (L->out_slot >= 0)
        return pvc_fail(w->msg, PV_EUNSUPPORTED, "conv '%s': its output is used at two stages of its epilogue", L->name);
    pv_status s = slot_new(w, f->level, f->c, &L->out_slot);
    if (s != PV_OK) return s;
    f->kind = F_SLOT;
    f->slot = L->out_slot;
    return PV_OK;
}

static pv_status read_conv_node(walk *w, int ni)
{
    static const char *const names[] = { "is_subm", "is_train", "act_alpha", "act_beta", "output_scale", "output_add_scale" };
    const pvg_graph *g = w->g;
    const pvg_node *n = &g->nodes[ni];
    pvm_bf_encoder *e = w->e;
    pv_status s;
    if ((s = check_attr_names(w, n, names, 6)) != PV_OK) return s;
    if (n->nin != 5 || n->nout != 1 || n->out[0] < 0)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (autoware::ImplicitGemm): %d inputs / %d outputs, expected 5 / 1",
                        n->name, n->nin, n->nout);
    int64_t is_subm;
    if ((s = attr_int_is(w, n, "is_subm", 0, 1, &is_subm)) != PV_OK) return s;
    if ((s = attr_int_is(w, n, "is_train", 0, 0, NULL)) != PV_OK) return s;
    if ((s = attr_float_is(w, n, "act_alpha", 0.0f)) != PV_OK) return s;
    if ((s = attr_float_is(w, n, "act_beta", 0.0f)) != PV_OK) return s;
    if ((s = attr_float_is(w, n, "output_scale", 1.0f)) != PV_OK) return s;
    if ((s = attr_float_is(w, n, "output_add_scale", 0.0f)) != PV_OK) return s;
    int pv = trace(g, n->in[2]);
    int pn = pv >= 0 ? g->values[pv].producer : -1;
    if (pn < 0 || w->rb_of_node[pn] < 0)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': pair_fwd '%s' does not come from a GetIndicePairsImplicitGemm node",
                        n->name, vname(w, n->in[2]));
    for (int k = 3; k < 5; k++) {
        int u = trace(g, n->in[k]);
        if (u < 0 || g->values[u].producer != pn)
            return pvc_fail(w->msg, PV_EFORMAT, "node '%s': input %d '%s' does not come from the same pairs node '%s'",
                            n->name, k, vname(w, n->in[k]), g->nodes[pn].name);
    }
    int rbi = w->rb_of_node[pn];
    const pvm_bf_rbspec *rb = &e->rb[rbi];
    if ((is_subm != 0) != rb->subm)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': is_subm %lld but its pairs node has subm %d", n->name, (long long)is_subm, rb->subm);
    const pvg_value *wv = &g->values[n->in[1]];
    int K = rb->ksize[0] * rb->ksize[1] * rb->ksize[2];
    if (!wv->is_const || !wv->data || wv->decl.dtype != PV_F32 || wv->decl.rank != 5 || wv->decl.dims[1] != rb->ksize[0] ||
        wv->decl.dims[2] != rb->ksize[1] || wv->decl.dims[3] != rb->ksize[2] || wv->decl.dims[0] < 1 || wv->decl.dims[4] < 1 ||
        wv->decl.dims[0] > 4096 || wv->decl.dims[4] > 4096)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': filters '%s' must be a constant f32 [Cout, %d, %d, %d, Cin]", n->name,
                        wv->name, rb->ksize[0], rb->ksize[1], rb->ksize[2]);
    int cout = (int)wv->decl.dims[0], cin = (int)wv->decl.dims[4];
    /* the features */
    int fv = trace(g, n->in[0]);
    if (w->fs[fv].kind == F_NONE) {
        if (e->nlayers > 0)
            return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': features '%s' are not the output of an earlier sparse conv",
                            n->name, vname(w, fv));
        /* the first conv reads the VFE output */
        snprintf(e->v_vfe, sizeof e->v_vfe, "%s", g->values[fv].name);
        w->fs[fv] = (fstate){ F_NONE, -1, -1, rb->in_level, cin, ST_RAW };
        if ((s = slot_new(w, rb->in_level, cin, &e->in_slot)) != PV_OK) return s;
        w->fs[fv].kind = F_SLOT;
        w->fs[fv].slot = e->in_slot;
    }
    if ((s = materialize(w, fv)) != PV_OK) return s;
    const fstate *f = &w->fs[fv];
    if (f->level != rb->in_level)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': features are on level %d but its pairs are built on level %d",
                        n->name, f->level, rb->in_level);
    if (f->c != cin)
        return pvc_fail(w->msg, PV_EFORMAT, "node '%s': filters '%s' take %d input channels but the features have %d%s",
                        n->name, wv->name, cin, f->c,
                        e->nlayers == 0 ? " (a 32-channel first conv would mean Fourier point features, not v2)" : "");
    if (e->nlayers >= PVM_BF_MAX_LAYERS) return pvc_fail(w->msg, PV_EUNSUPPORTED, "more than %d sparse convs", PVM_BF_MAX_LAYERS);
    int li = e->nlayers++;
    pvm_bf_layer *L = &e->layer[li];
    memset(L, 0, sizeof *L);
    snprintf(L->name, sizeof L->name, "%s", n->name);
    L->rb = rbi;
    L->in_slot = f->slot;
    L->out_slot = L->res_slot = -1;
    L->cin = cin;
    L->cout = cout;
    w->raw_w[li] = wv->data;
    w->aff_a[li] = pvc_malloc((size_t)cout * sizeof(float));
    w->aff_b[li] = pvc_malloc((size_t)cout * sizeof(float));
    if (!w->aff_a[li] || !w->aff_b[li]) return pvc_fail(w->msg, PV_ENOMEM, "out of memory reading the sparse encoder");
    for (int c = 0; c < cout; c++) { w->aff_a[li][c] = 1.0f; w->aff_b[li][c] = 0.0f; }
    w->fs[n->out[0]] = (fstate){ F_PENDING, li, -1, rb->out_level, cout, ST_RAW };
    if (rb->subm) e->n_subm++; else e->n_down++;
    (void)K;
    return PV_OK;
}

/* A per-channel constant: [C], [1, C] or a scalar. */
static const float *chan_const(const pvg_graph *g, int v, int c, bool *scalar)
{
    if (v < 0 || !g->values[v].is_const || !g->values[v].data || g->values[v].decl.dtype != PV_F32) return NULL;
    const pvc_tensor *t = &g->values[v].decl;
    int64_t n = pvc_numel(t);
    if (n == 1) { *scalar = true; return g->values[v].data; }
    if (n != c || t->dims[t->rank - 1] != c) return NULL;
    *scalar = false;
    return g->values[v].data;
}

/* One node that reads sparse features: fold it into the producing conv (*taken), or leave it
 * to the dense boundary (not taken, PV_OK). */
static pv_status feature_node(walk *w, int ni, int nfeat_inputs, bool *taken)
{
    *taken = true;
    const pvg_graph *g = w->g;
    const pvg_node *n = &g->nodes[ni];
    pv_status s;
    const char *op = n->op_type;
    int x = n->in[0];
    /* Mul and Add commute: the sparse tensor may be either operand */
    if (n->nin == 2 && (!strcmp(op, "Mul") || !strcmp(op, "Add")) && (x < 0 || w->fs[x].kind == F_NONE) && n->in[1] >= 0)
        x = n->in[1];
    fstate *fx = x >= 0 ? &w->fs[x] : NULL;
    bool single = x >= 0 && w->uses[x] == 1;
    bool pending = fx && fx->kind == F_PENDING && single && !*n->domain && n->nout == 1 && n->out[0] >= 0;
    if (pending && nfeat_inputs == 1 && fx->stage <= ST_AFFINE &&
        (!strcmp(op, "BatchNormalization") || !strcmp(op, "Mul") || !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Div"))) {
        int li = fx->layer, C = fx->c;
        float *a = w->aff_a[li], *b = w->aff_b[li];
        if (!strcmp(op, "BatchNormalization")) {
            bool sc[4];
            const float *p[4];
            for (int k = 0; k < 4; k++) {
                p[k] = n->nin == 5 ? chan_const(g, n->in[k + 1], C, &sc[k]) : NULL;
                if (!p[k] || sc[k])
                    return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (BatchNormalization): parameters must be constant [%d]", n->name, C);
            }
            const pvg_attr *ea = find_attr(n, "epsilon"), *tm = find_attr(n, "training_mode");
            if (tm && tm->i != 0) return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s': training_mode=1 is not supported", n->name);
            float eps = ea ? ea->f : 1e-5f;
            for (int c = 0; c < C; c++) {
                float k = p[0][c] / sqrtf(p[3][c] + eps);
                a[c] *= k;
                b[c] = b[c] * k + (p[1][c] - p[2][c] * k);
            }
        } else {
            bool sc;
            /* the other operand; Sub and Div only as x - c, x / c */
            int cv = n->nin != 2 ? -1 : n->in[0] == x ? n->in[1] : (!strcmp(op, "Mul") || !strcmp(op, "Add")) ? n->in[0] : -1;
            const float *k = chan_const(g, cv, C, &sc);
            if (!k)
                return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (%s) on sparse features: only per-channel constants are supported",
                                n->name, op);
            for (int c = 0; c < C; c++) {
                float kc = sc ? k[0] : k[c];
                if (!strcmp(op, "Mul")) { a[c] *= kc; b[c] *= kc; }
                else if (!strcmp(op, "Div")) { a[c] /= kc; b[c] /= kc; }
                else if (!strcmp(op, "Add")) b[c] += kc;
                else b[c] -= kc;
            }
        }
        w->fs[n->out[0]] = *fx;
        w->fs[n->out[0]].stage = ST_AFFINE;
        return PV_OK;
    }
    if (pending && nfeat_inputs == 1 && !strcmp(op, "Relu") && fx->stage < ST_RELU) {
        w->e->layer[fx->layer].relu = true;
        w->fs[n->out[0]] = *fx;
        w->fs[n->out[0]].stage = ST_RELU;
        return PV_OK;
    }
    if (!*n->domain && !strcmp(op, "Identity") && n->nout == 1 && n->out[0] >= 0) {
        w->fs[n->out[0]] = *fx;
        return PV_OK;
    }
    if (!*n->domain && !strcmp(op, "Add") && nfeat_inputs == 2 && n->nin == 2 && n->nout == 1 && n->out[0] >= 0) {
        int a = n->in[0], b = n->in[1];
        fstate *fa = &w->fs[a], *fb = &w->fs[b];
        /* main: the pending conv (the later one if both are) */
        bool a_main = fa->kind == F_PENDING && w->uses[a] == 1 && fa->stage <= ST_AFFINE;
        bool b_main = fb->kind == F_PENDING && w->uses[b] == 1 && fb->stage <= ST_AFFINE;
        if (a_main && b_main) { if (fa->layer > fb->layer) b_main = false; else a_main = false; }
        if (!a_main && !b_main)
            return pvc_fail(w->msg, PV_EUNSUPPORTED, "node '%s' (Add) of two sparse tensors neither of which is a conv output", n->name);
        int m = a_main ? a : b, r = a_main ? b : a;
        if ((s = materialize(w, r)) != PV_OK) return s;
        if (w->fs[r].level != w->fs[m].level || w->fs[r].c != w->fs[m].c)
            return pvc_fail(w->msg, PV_EFORMAT, "node '%s' (Add): residual '%s' is on level %d with %d channels, the conv on %d with %d",
                            n->name, vname(w, r), w->fs[r].level, w->fs[r].c, w->fs[m].level, w->fs[m].c);
        w->e->layer[w->fs[m].layer].res_slot = w->fs[r].slot;
        w->fs[n->out[0]] = w->fs[m];
        w->fs[n->out[0]].stage = ST_RESIDUAL;
        return PV_OK;
    }
    *taken = false;   /* not a sparse op: the dense boundary */
    return PV_OK;
}

pv_status pvm_bf_encoder_build(const pvg_graph *g, pvm_bf_encoder *e, pvc_msg *msg)
{
    memset(e, 0, sizeof *e);
    e->in_slot = e->out_slot = -1;
    walk w;
    memset(&w, 0, sizeof w);
    w.g = g; w.e = e; w.msg = msg; w.idx0_value = -1;
    pv_status s = PV_OK;
    w.order = pvc_calloc((size_t)g->nnodes + 1, sizeof *w.order);
    w.uses = pvc_calloc((size_t)g->nvalues + 1, sizeof *w.uses);
    w.level_of = pvc_calloc((size_t)g->nvalues + 1, sizeof *w.level_of);
    w.rb_of_node = pvc_calloc((size_t)g->nnodes + 1, sizeof *w.rb_of_node);
    w.fs = pvc_calloc((size_t)g->nvalues + 1, sizeof *w.fs);
    if (!w.order || !w.uses || !w.level_of || !w.rb_of_node || !w.fs) { s = pvc_fail(msg, PV_ENOMEM, "out of memory reading the sparse encoder"); goto done; }
    if ((s = pvg_graph_toposort((pvg_graph *)g, w.order, &w.norder)) != PV_OK) { pvc_fail(msg, s, "%s", g->msg.text); goto done; }
    for (int i = 0; i < g->nnodes; i++) {
        w.rb_of_node[i] = -1;
        if (g->nodes[i].dead) continue;
        for (int k = 0; k < g->nodes[i].nin; k++) if (g->nodes[i].in[k] >= 0) w.uses[g->nodes[i].in[k]]++;
    }
    for (int i = 0; i < g->noutputs; i++) w.uses[g->outputs[i]] += 1000;
    /* inputs by name */
    static const char *const in_names[3] = { "voxels", "num_points_per_voxel", "coors" };
    char *in_dst[3] = { e->v_voxels, e->v_npoints, e->v_coors };
    for (int k = 0; k < 3; k++) {
        int v = pvg_value_find(g, in_names[k]);
        if (v < 0 || !g->values[v].is_input) { s = pvc_fail(msg, PV_EFORMAT, "the model has no input '%s' (expected voxels, num_points_per_voxel, coors)", in_names[k]); goto done; }
        snprintf(in_dst[k], 128, "%s", in_names[k]);
    }
    const pvc_tensor *vd = &g->values[pvg_value_find(g, "voxels")].decl;
    if (vd->rank != 3 || vd->dims[1] < 1 || vd->dims[1] > 64 || vd->dims[2] < 3 || vd->dims[2] > 16 || vd->dtype != PV_F32) {
        s = pvc_fail(msg, PV_EFORMAT, "input 'voxels' must be f32 [N, P, F] with known P <= 64 and 3 <= F <= 16");
        goto done;
    }
    e->max_points = (int)vd->dims[1];
    e->nfeat = (int)vd->dims[2];
    for (int t = 0; t < w.norder && s == PV_OK; t++) {
        int ni = w.order[t];
        const pvg_node *n = &g->nodes[ni];
        if (!strcmp(n->domain, "autoware")) {
            if (!strcmp(n->op_type, "GetIndicePairsImplicitGemm")) s = read_pairs_node(&w, ni);
            else if (!strcmp(n->op_type, "ImplicitGemm")) s = read_conv_node(&w, ni);
            else s = pvc_fail(msg, PV_EUNSUPPORTED, "node '%s': operator autoware::%s is not supported (the lidar-only model "
                              "uses GetIndicePairsImplicitGemm and ImplicitGemm)", n->name, n->op_type);
            continue;
        }
        int nf = 0;
        for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0 && w.fs[n->in[k]].kind != F_NONE) nf++;
        if (!nf) continue;
        bool taken;
        s = feature_node(&w, ni, nf, &taken);
    }
done:
    /* the dense boundary: the one sparse tensor read by a node that is not a sparse op */
    if (s == PV_OK) {
        int final_v = -1;
        for (int t = 0; t < w.norder && s == PV_OK; t++) {
            const pvg_node *n = &g->nodes[w.order[t]];
            if (!strcmp(n->domain, "autoware")) continue;
            for (int k = 0; k < n->nin; k++) {
                int v = n->in[k];
                if (v < 0 || w.fs[v].kind == F_NONE) continue;
                bool taken = false;   /* does some node's output carry this value's state forward? */
                for (int o = 0; o < n->nout; o++) if (n->out[o] >= 0 && w.fs[n->out[o]].kind != F_NONE) taken = true;
                if (taken) continue;
                if (final_v >= 0 && final_v != v) {
                    s = pvc_fail(msg, PV_EUNSUPPORTED, "sparse tensors '%s' and '%s' both leave the sparse encoder (only one is supported)",
                                 vname(&w, final_v), vname(&w, v));
                    break;
                }
                final_v = v;
            }
        }
        if (s == PV_OK && final_v < 0) s = pvc_fail(msg, PV_EFORMAT, "no sparse conv output reaches the dense part");
        if (s == PV_OK) s = materialize(&w, final_v);
        if (s == PV_OK) {
            e->out_slot = w.fs[final_v].slot;
            e->out_level = w.fs[final_v].level;
            snprintf(e->v_final_feat, sizeof e->v_final_feat, "%s", g->values[final_v].name);
            /* the indices of the final level: the out_indices of the pairs node that made it */
            int iv = -1;
            for (int v = 0; v < g->nvalues; v++) {
                int p = g->values[v].producer;
                if (p >= 0 && w.rb_of_node[p] >= 0 && g->nodes[p].out[0] == v && w.level_of[v] == e->out_level + 1) iv = v;
            }
            if (iv < 0) s = pvc_fail(msg, PV_EFORMAT, "no out_indices tensor for the final sparse level");
            else snprintf(e->v_final_idx, sizeof e->v_final_idx, "%s", g->values[iv].name);
        }
        /* the dense input: what the first Conv downstream of the sparse features reads */
        if (s == PV_OK) {
            bool *down = pvc_calloc((size_t)g->nvalues + 1, sizeof *down);
            if (!down) s = pvc_fail(msg, PV_ENOMEM, "out of memory reading the sparse encoder");
            else down[final_v] = true;
            for (int t = 0; down && t < w.norder && !e->v_dense[0]; t++) {
                const pvg_node *n = &g->nodes[w.order[t]];
                bool reached = false;
                for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0 && down[n->in[k]]) reached = true;
                if (!reached) continue;
                if (!*n->domain && !strcmp(n->op_type, "Conv")) snprintf(e->v_dense, sizeof e->v_dense, "%s", g->values[n->in[0]].name);
                for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) down[n->out[k]] = true;
            }
            pvc_free(down);
        }
        if (s == PV_OK && w.idx0_value >= 0) snprintf(e->v_idx0, sizeof e->v_idx0, "%s", g->values[w.idx0_value].name);
        if (s == PV_OK && (!e->nlayers || w.idx0_value < 0)) s = pvc_fail(msg, PV_EFORMAT, "the model has no autoware sparse convs");
        if (s == PV_OK && !e->v_dense[0]) s = pvc_fail(msg, PV_EFORMAT, "the model has no dense Conv after the sparse encoder");
        for (int i = 0; i < e->nlayers && s == PV_OK; i++)
            if (e->layer[i].out_slot < 0)
                s = pvc_fail(msg, PV_EFORMAT, "sparse conv '%s': its output is never used", e->layer[i].name);
    }
    /* fold the affine into [K, cin, cout] weights */
    for (int i = 0; i < e->nlayers && s == PV_OK; i++) {
        pvm_bf_layer *L = &e->layer[i];
        const pvm_bf_rbspec *rb = &e->rb[L->rb];
        int K = rb->ksize[0] * rb->ksize[1] * rb->ksize[2];
        L->w = pvc_malloc((size_t)K * L->cin * L->cout * sizeof(float));
        L->bias = pvc_malloc((size_t)L->cout * sizeof(float));
        if (!L->w || !L->bias) { s = pvc_fail(msg, PV_ENOMEM, "out of memory folding sparse conv weights"); break; }
        const float *src = w.raw_w[i];
        for (int co = 0; co < L->cout; co++)
            for (int k = 0; k < K; k++)
                for (int ci = 0; ci < L->cin; ci++)
                    L->w[((size_t)k * L->cin + ci) * L->cout + co] = src[((size_t)co * K + k) * L->cin + ci] * w.aff_a[i][co];
        memcpy(L->bias, w.aff_b[i], (size_t)L->cout * sizeof(float));
    }
    for (int i = 0; i < PVM_BF_MAX_LAYERS; i++) { pvc_free(w.aff_a[i]); pvc_free(w.aff_b[i]); }
    pvc_free(w.order); pvc_free(w.uses); pvc_free(w.level_of); pvc_free(w.rb_of_node); pvc_free(w.fs);
    if (s != PV_OK) pvm_bf_encoder_free(e);
    return s;
}

void pvm_bf_encoder_free(pvm_bf_encoder *e)
{
    for (int i = 0; i < e->nlayers; i++) { pvc_free(e->layer[i].w); pvc_free(e->layer[i].bias); e->layer[i].w = e->layer[i].bias = NULL; }
}
