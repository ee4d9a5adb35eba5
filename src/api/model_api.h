/* api: what the public model API shares with the bundles (src/models/<name>/api.c). */
#ifndef PV_MODEL_API_H
#define PV_MODEL_API_H

#include "core/core.h"
#include "io/points.h"

/* One bundle: the registry in model_api.c lists them. */
typedef struct pv_bundle {
    const char *name;
    const char *description;
    pv_status (*open)(const pv_model_options *opt, void **impl, pvc_msg *msg);
    pv_status (*run)(void *impl, const pv_input *in, int n_in, const pv_param *p, int np, pv_result **out, pvc_msg *msg);
    char     *(*info_json)(void *impl);     /* pvc_malloc'ed */
    void      (*close)(void *impl);
    pv_status (*generate)(const char *dir, pvc_msg *msg);
    /* Decodes one input item as run would, without running (pv_input_validate_for). */
    pv_status (*validate)(const pv_input *in, pvc_msg *msg);
    /* pv_model_bench_defaults / pv_model_fixture_check (NULL: none). */
    pv_status (*bench_defaults)(pv_bench_defaults *d, pvc_msg *msg);
    int       (*fixture_check)(void *impl, const pv_result *r, const char *dir, char *why, size_t n);
} pv_bundle;

extern const pv_bundle pv_bundle_bevfusion;
extern const pv_bundle pv_bundle_hamer;
extern const pv_bundle pv_bundle_meteor;

const pv_bundle *pv_bundle_find(const char *name);
int              pv_bundle_count(void);
const pv_bundle *pv_bundle_at(int i);

/* What a bundle's result payload does: its picture and its release. */
typedef struct pv_result_ops {
    const char *model;
    pv_status (*png)(const pv_result *r, int width_px, void **png, size_t *len, pvc_msg *msg);
    void      (*free_payload)(void *payload);
} pv_result_ops;

/* The envelope every result carries (bundles fill it); the typed views point into the payload
 * (NULL / 0 for the other bundles' kinds). */
struct pv_result {
    const pv_result_ops *ops;
    void              *payload;
    char              *json, *json_stable, *text;
    pv_timing          timing;
    const pv_object3d *objs;   int nobjs;     /* bevfusion */
    const pv_hand     *hands;  int nhands;    /* hamer */
    const int32_t     *faces;  int nfaces;    /* hamer: the mesh's triangles */
    const pv_object2d *objs2d; int nobjs2d;   /* meteor */
    struct { const char *name; const void *data; int rank; int64_t dims[3]; } grids[4];   /* meteor */
    const pv_ego_path *ego;                   /* meteor */
    const pv_traffic_light *tl;               /* meteor */
};

/* Decodes one input item into a cloud (messages name the item). */
pv_status pv_input_decode(const pv_input *in, pvio_cloud *out, pvc_msg *msg);
/* Shared by the bundles' artifact lookup. pv_pathf: snprintf that says whether the path fit (a
 * truncated path would name another file, so callers treat false as "not there").
 * pv_cache_root: where perceive's cache lives: PERCEIVE_CACHE_DIR, else $XDG_CACHE_HOME/perceive,
 * else ~/.cache/perceive; false when none of them is set. */
bool pv_pathf(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool pv_cache_root(char *dst, size_t cap);

/* Parses want comma-separated finite numbers (brackets and spaces allowed). */
pv_status pv_parse_floats(const char *key, const char *value, double *v, int want, pvc_msg *msg);

#endif
