/* The public pv_model_* API: the bundle registry (one table), input decoding, text
 * parameters, results. The CLI and the server call only this. */
#include "api/model_api.h"
#include "io/io.h"
#include "io/points.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PV_MAX_SWEEPS 16

/* A handle's shell outlives pv_model_close (close is idempotent and a call racing with it gets
 * PV_ECLOSED, not a freed pointer): shells stay on a list and are freed at exit, after every
 * model still open has been closed. */
struct pv_model {
    const pv_bundle *b;
    void            *impl;
    char            *info;
    pthread_mutex_t  mu;
    pthread_cond_t   idle;
    int              inflight;
    bool             closed;
    struct pv_model *next;
};

static pthread_mutex_t shells_mu = PTHREAD_MUTEX_INITIALIZER;
static pv_model *shells;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void close_all_at_exit(void)
{
    pthread_mutex_lock(&shells_mu);
    pv_model *m = shells;
    shells = NULL;
    pthread_mutex_unlock(&shells_mu);
    while (m) {
        pv_model *next = m->next;
        pv_model_close(m);
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->idle);
        pvc_free(m);
        m = next;
    }
}
static void register_exit(void) { atexit(close_all_at_exit); }

/* Enters a call on m: false (PV_ECLOSED set) once close has begun. */
static bool enter(pv_model *m)
{
    pthread_mutex_lock(&m->mu);
    bool ok = !m->closed;
    if (ok) m->inflight++;
    pthread_mutex_unlock(&m->mu);
    if (!ok) pvc_fail(NULL, PV_ECLOSED, "the model handle is closed");
    return ok;
}

static void leave(pv_model *m)
{
    pthread_mutex_lock(&m->mu);
    if (--m->inflight == 0) pthread_cond_broadcast(&m->idle);
    pthread_mutex_unlock(&m->mu);
}

static const pv_bundle *const bundles[] = { &pv_bundle_bevfusion, &pv_bundle_hamer, &pv_bundle_meteor };

const pv_bundle *pv_bundle_find(const char *name)
{
    for (size_t i = 0; i < sizeof bundles / sizeof bundles[0]; i++)
        if (!strcmp(bundles[i]->name, name)) return bundles[i];
    return NULL;
}

int pv_bundle_count(void) { return (int)(sizeof bundles / sizeof bundles[0]); }
int pv_model_count(void) { return pv_bundle_count(); }
const char *pv_model_name(int i) { return i >= 0 && i < pv_bundle_count() ? bundles[i]->name : NULL; }
const char *pv_model_description(int i) { return i >= 0 && i < pv_bundle_count() ? bundles[i]->description : NULL; }
const pv_bundle *pv_bundle_at(int i) { return i >= 0 && i < pv_bundle_count() ? bundles[i] : NULL; }

pv_status pv_model_open(const char *name, const pv_model_options *opt, pv_model **out)
{
    if (!out) return pvc_fail(NULL, PV_EINPUT, "pv_model_open: out is NULL");
    *out = NULL;
    if (!name) return pvc_fail(NULL, PV_EINPUT, "pv_model_open: name is NULL");
    const pv_bundle *b = pv_bundle_find(name);
    if (!b) {
        char list[256] = "";
        for (int i = 0; i < pv_bundle_count(); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", bundles[i]->name);
        return pvc_fail(NULL, PV_EINPUT, "model '%s' is not known (models: %s)", name, list);
    }
    if (opt && (opt->threads < 0 || opt->threads > 1024))
        return pvc_fail(NULL, PV_EINPUT, "threads: %d is out of range [0, 1024]", opt->threads);
    pthread_once(&exit_once, register_exit);
    pv_model *m = pvc_calloc(1, sizeof *m);
    if (!m) return pvc_fail(NULL, PV_ENOMEM, "out of memory opening '%s'", name);
    m->b = b;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->idle, NULL);
    pvc_msg msg = { { 0 } };
    pv_status s = b->open(opt, &m->impl, &msg);
    if (s != PV_OK) {
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->idle);
        pvc_free(m);
        return pvc_fail(NULL, s, "%s", msg.text);
    }
    pthread_mutex_lock(&shells_mu);
    m->next = shells;
    shells = m;
    pthread_mutex_unlock(&shells_mu);
    *out = m;
    return PV_OK;
}

pv_status pv_model_bench_defaults(const char *model, pv_bench_defaults *d)
{
    const pv_bundle *b = model ? pv_bundle_find(model) : NULL;
    if (!b) return pvc_fail(NULL, PV_EINPUT, "model '%s' is not known", model ? model : "(null)");
    if (!d) return pvc_fail(NULL, PV_EINPUT, "pv_model_bench_defaults: d is NULL");
    memset(d, 0, sizeof *d);
    if (!b->bench_defaults) return pvc_fail(NULL, PV_EUNSUPPORTED, "model '%s' has no default bench input: give one", model);
    pvc_msg msg = { { 0 } };
    pv_status s = b->bench_defaults(d, &msg);
    return s == PV_OK ? PV_OK : pvc_fail(NULL, s, "%s", msg.text);
}

int pv_model_fixture_check(pv_model *m, const pv_result *r, const char *dir, char *why, size_t why_len)
{
    if (why && why_len) why[0] = 0;
    if (!m || !r || !dir || !why || !why_len) return -1;
    if (!m->b->fixture_check) { snprintf(why, why_len, "model '%s' has no reference fixture check", m->b->name); return -1; }
    if (!enter(m)) { snprintf(why, why_len, "the model handle is closed"); return -1; }
    int rc = m->b->fixture_check(m->impl, r, dir, why, why_len);
    leave(m);
    return rc;
}

pv_status pv_model_generate(const char *name, const char *dir)
{
    const pv_bundle *b = name ? pv_bundle_find(name) : NULL;
    if (!b) return pvc_fail(NULL, PV_EINPUT, "model '%s' is not known", name ? name : "(null)");
    if (!dir || !*dir) return pvc_fail(NULL, PV_EINPUT, "pv_model_generate: no directory");
    pvc_msg msg = { { 0 } };
    pv_status s = b->generate(dir, &msg);
    return s == PV_OK ? PV_OK : pvc_fail(NULL, s, "%s", msg.text);
}

void pv_model_close(pv_model *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    if (m->closed) { pthread_mutex_unlock(&m->mu); return; }
    m->closed = true;                        /* new calls get PV_ECLOSED from here on */
    while (m->inflight > 0) pthread_cond_wait(&m->idle, &m->mu);
    pthread_mutex_unlock(&m->mu);
    m->b->close(m->impl);
    m->impl = NULL;
    pvc_free(m->info);
    m->info = NULL;
}

const char *pv_model_errmsg(const pv_model *m) { (void)m; return pv_last_error(); }
const char *pv_model_bundle(const pv_model *m) { return m ? m->b->name : NULL; }

const char *pv_model_info_json(pv_model *m)
{
    if (!m || !enter(m)) return NULL;
    pthread_mutex_lock(&m->mu);
    if (!m->info) m->info = m->b->info_json(m->impl);
    char *info = m->info;
    pthread_mutex_unlock(&m->mu);
    leave(m);
    return info;
}

pv_status pv_model_run(pv_model *m, const pv_input *in, int n_in, const pv_param *params, int n_params, pv_result **out)
{
    if (!out) return pvc_fail(NULL, PV_EINPUT, "pv_model_run: out is NULL");
    *out = NULL;
    if (!m) return pvc_fail(NULL, PV_EINPUT, "pv_model_run: model is NULL");
    if (n_in < 0 || (n_in > 0 && !in)) return pvc_fail(NULL, PV_EINPUT, "inputs: %d items but no array", n_in);
    if (n_params < 0 || (n_params > 0 && !params)) return pvc_fail(NULL, PV_EINPUT, "params: %d items but no array", n_params);
    for (int i = 0; i < n_params; i++)
        if (!params[i].key || !params[i].value) return pvc_fail(NULL, PV_EINPUT, "params[%d]: key or value is NULL", i);
    if (!enter(m)) return PV_ECLOSED;
    pvc_msg msg = { { 0 } };
    pv_status s = m->b->run(m->impl, in, n_in, params, n_params, out, &msg);
    leave(m);
    if (s != PV_OK) return pvc_fail(NULL, s, "%s", msg.text);
    return PV_OK;
}

void pv_free(void *p) { pvc_free(p); }

/* ---- results (one envelope for every bundle) ----------------------------------------------- */
const char *pv_result_model(const pv_result *r) { return r && r->ops ? r->ops->model : NULL; }

int pv_result_objects3d(const pv_result *r, const pv_object3d **objs)
{
    if (objs) *objs = r ? r->objs : NULL;
    return r && r->objs ? r->nobjs : 0;
}

int pv_result_hands(const pv_result *r, const pv_hand **hands)
{
    if (hands) *hands = r ? r->hands : NULL;
    return r && r->hands ? r->nhands : 0;
}

int pv_result_objects2d(const pv_result *r, const pv_object2d **objs)
{
    if (objs) *objs = r ? r->objs2d : NULL;
    return r && r->objs2d ? r->nobjs2d : 0;
}

int pv_result_grid(const pv_result *r, const char *name, const void **data, int64_t dims[3])
{
    if (data) *data = NULL;
    for (int i = 0; r && name && i < 4; i++) {
        if (!r->grids[i].name || strcmp(r->grids[i].name, name)) continue;
        if (data) *data = r->grids[i].data;
        for (int k = 0; dims && k < 3; k++) dims[k] = k < r->grids[i].rank ? r->grids[i].dims[k] : 0;
        return r->grids[i].rank;
    }
    return 0;
}

int pv_result_ego_path(const pv_result *r, pv_ego_path *out)
{
    if (!r || !r->ego) return 0;
    if (out) *out = *r->ego;
    return 1;
}

int pv_result_traffic_light(const pv_result *r, pv_traffic_light *out)
{
    if (!r || !r->tl) return 0;
    if (out) *out = *r->tl;
    return 1;
}

int pv_result_mesh_faces(const pv_result *r, const int32_t **faces)
{
    if (faces) *faces = r ? r->faces : NULL;
    return r && r->faces ? r->nfaces : 0;
}

const char *pv_result_json(const pv_result *r) { return r ? r->json : NULL; }
const char *pv_result_json_stable(const pv_result *r) { return r ? r->json_stable : NULL; }
const char *pv_result_text(const pv_result *r) { return r && r->text ? r->text : ""; }
void pv_result_timing(const pv_result *r, pv_timing *t) { if (r && t) *t = r->timing; }

pv_status pv_result_png(const pv_result *r, int width_px, void **png, size_t *len)
{
    if (!png || !len) return pvc_fail(NULL, PV_EINPUT, "pv_result_png: png or len is NULL");
    *png = NULL;
    *len = 0;
    if (!r) return pvc_fail(NULL, PV_EINPUT, "pv_result_png: result is NULL");
    if (width_px < 0 || width_px > 16384) return pvc_fail(NULL, PV_EINPUT, "pv_result_png: width %d is out of range [0, 16384]", width_px);
    if (!r->ops || !r->ops->png) return pvc_fail(NULL, PV_EUNSUPPORTED, "pv_result_png: this result has no picture");
    pvc_msg msg = { { 0 } };
    pv_status s = r->ops->png(r, width_px, png, len, &msg);
    return s == PV_OK ? PV_OK : pvc_fail(NULL, s, "%s", msg.text);
}

void pv_result_free(pv_result *r)
{
    if (!r) return;
    if (r->ops && r->ops->free_payload) r->ops->free_payload(r->payload);
    pvc_free(r->json);
    pvc_free(r->json_stable);
    pvc_free(r->text);
    pvc_free(r);
}

/* ---- inputs -------------------------------------------------------------------------------- */
pv_status pv_input_decode(const pv_input *in, pvio_cloud *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    const char *name = in->name ? in->name : "points";
    if (!in->data && in->len) return pvc_fail(msg, PV_EINPUT, "input '%s': data is NULL", name);
    const char *fmt = in->format ? in->format : "auto";
    pv_status s;
    if (!strcmp(fmt, "f32")) {
        if (in->ncols < 3 || in->ncols > PVIO_CLOUD_MAX_COLS)
            return pvc_fail(msg, PV_EINPUT, "input '%s': ncols %d must be 3..%d for format f32", name, in->ncols, PVIO_CLOUD_MAX_COLS);
        s = pvio_pointbin_parse(in->data, in->len, in->ncols, PV_F32, out, msg);
    } else if (!strcmp(fmt, "npz")) {
        pvio_arrays arrs = { 0 };
        s = pvio_npz_parse(in->data, in->len, &arrs, msg);
        if (s == PV_OK) {
            const char *want = in->array ? in->array : "points";
            const pvc_tensor *t = NULL;
            for (int i = 0; i < arrs.n; i++) if (!strcmp(arrs.a[i].name, want)) t = &arrs.a[i].t;
            if (!t && !in->array && arrs.n == 1) t = &arrs.a[0].t;
            if (!t) s = pvc_fail(msg, PV_EINPUT, "npz: no array '%.100s'", want);
            void *npy = NULL;
            size_t nl = 0;
            if (s == PV_OK) s = pvio_npy_serialize(t, &npy, &nl, msg);
            if (s == PV_OK) s = pvio_cloud_npy_parse(npy, nl, out, msg);
            pvc_free(npy);
        }
        pvio_arrays_free(&arrs);
    } else {
        static const char *const known[] = { "auto", "pcd", "npy", "kitti", "nuscenes", "f16x5" };
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) if (!strcmp(fmt, known[i])) ok = true;
        if (!ok)
            return pvc_fail(msg, PV_EUNSUPPORTED, "input '%s': format '%s' is not supported (pcd, npy, npz, kitti, nuscenes, f16x5, f32, auto)",
                            name, fmt);
        s = pvio_cloud_parse(in->data, in->len, strcmp(fmt, "auto") ? fmt : NULL, NULL, out, msg);
    }
    if (s != PV_OK) {
        char m2[PVC_MSG_LEN];
        snprintf(m2, sizeof m2, "%s", msg->text);
        return pvc_fail(msg, s, "input '%.64s': %.440s", name, m2);
    }
    return PV_OK;
}

pv_status pv_input_validate_for(const char *model, const pv_input *in)
{
    const pv_bundle *b = model ? pv_bundle_find(model) : NULL;
    if (!b) return pvc_fail(NULL, PV_EINPUT, "model '%s' is not known", model ? model : "(null)");
    if (!in) return pvc_fail(NULL, PV_EINPUT, "pv_input_validate_for: input is NULL");
    pvc_msg msg = { { 0 } };
    pv_status s = b->validate(in, &msg);
    return s == PV_OK ? PV_OK : pvc_fail(NULL, s, "%s", msg.text);
}

pv_status pv_input_validate(const pv_input *in)
{
    if (!in) return pvc_fail(NULL, PV_EINPUT, "pv_input_validate: input is NULL");
    pvio_cloud c;
    pvc_msg msg = { { 0 } };
    pv_status s = pv_input_decode(in, &c, &msg);
    pvio_cloud_free(&c);
    return s == PV_OK ? PV_OK : pvc_fail(NULL, s, "%s", msg.text);
}

bool pv_pathf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap;
}

bool pv_cache_root(char *dst, size_t cap)
{
    const char *root = getenv("PERCEIVE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (root && *root) return pv_pathf(dst, cap, "%s", root);
    if (xdg && *xdg) return pv_pathf(dst, cap, "%s/perceive", xdg);
    if (home && *home) return pv_pathf(dst, cap, "%s/.cache/perceive", home);
    return false;
}

pv_status pv_parse_floats(const char *key, const char *value, double *v, int want, pvc_msg *msg)
{
    const char *p = value;
    for (int i = 0; i < want; i++) {
        char *end;
        while (*p == ' ' || *p == '[') p++;
        v[i] = strtod(p, &end);
        if (end == p || !isfinite(v[i]))
            return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' is not %d comma-separated finite numbers", key, value, want);
        p = end;
        while (*p == ' ' || *p == ']') p++;
        if (i + 1 < want) {
            if (*p != ',' && *p != ';') return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' is not %d comma-separated numbers", key, value, want);
            p++;
        }
    }
    while (*p == ' ' || *p == ']') p++;
    if (*p) return pvc_fail(msg, PV_EINPUT, "param '%s': '%s' has more than %d numbers", key, value, want);
    return PV_OK;
}
