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
} pv_bundle;

extern const pv_bundle pv_bundle_bevfusion;

const pv_bundle *pv_bundle_find(const char *name);
int              pv_bundle_count(void);
const pv_bundle *pv_bundle_at(int i);

/* What every result carries; bundles fill it. */
struct pv_result {
    char        *json, *json_stable;
    pv_object3d *objs;
    int          nobjs;
    pv_timing    timing;
    float       *xyz;          /* the input points (current frame, densified), for pictures */
    int64_t      npts;
    float        view[4];      /* x_min, x_max, y_min, y_max (m) */
    char         title[160];
};

/* Decodes one input item into a cloud (messages name the item). */
pv_status pv_input_decode(const pv_input *in, pvio_cloud *out, pvc_msg *msg);
/* Parses want comma-separated finite numbers (brackets and spaces allowed). */
pv_status pv_parse_floats(const char *key, const char *value, double *v, int want, pvc_msg *msg);

#endif
