/* bevfusion parameters: the runtime defaults (Autoware's bevfusion_lidar.param.yaml), the two
 * param files of the bundle read with libyaml (document API), and per-request overrides.
 *
 * Both parsers work on a copy of the struct and commit it only when every key passed, so a
 * bad file or a bad request never leaves half-updated parameters behind. Numbers are read by
 * one strict lexer (decimal only: no inf, nan, hex or YAML 1.1 sexagesimal forms), so a value
 * that is not plainly a finite number is refused by name instead of becoming something odd. */
#include "models/bevfusion/post.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- the shipped texts ---------------------------------------------------------------------- */
/* ml_package_bevfusion_lidar.param.yaml of release v2.0, byte for byte (specs/bevfusion.md 0.1:
 * 786 bytes, sha256 866265b9...1782181; tests/unit/test_bevfusion_post.c checks both). */
const char pvm_bevfusion_ml_package_v2_yaml[] =
    "/**:\n"
    "  ros__parameters:\n"
    "    class_names: [\"CAR\", \"TRUCK\", \"BUS\", \"BICYCLE\", \"PEDESTRIAN\"]\n"
    "    voxels_num: [1, 128000, 256000] # [min, opt, max]\n"
    "    point_cloud_range: [-122.4, -122.4, -3.0, 122.4, 122.4, 5.0]"
    " # [x_min, y_min, z_min, x_max, y_max, z_max]\n"
    "    voxel_size: [0.17, 0.17, 0.2] # [x, y, z]\n"
    "    num_proposals: 500\n"
    "    out_size_factor: 8\n"
    "    max_points_per_voxel: 10\n"
    "    use_intensity: false\n"
    "\n"
    "    d_bound: [1.0, 166.2, 1.4]\n"
    "    x_bound: [-122.4, 122.4, 0.68]\n"
    "    y_bound: [-122.4, 122.4, 0.68]\n"
    "    z_bound: [-10.0, 10.0, 20.0]\n"
    "    num_cameras: 0\n"
    "    raw_image_height: 0\n"
    "    raw_image_width: 0\n"
    "    img_aug_scale_x: 0.0\n"
    "    img_aug_scale_y: 0.0\n"
    "    roi_height: 0\n"
    "    roi_width: 0\n"
    "    features_height: 0\n"
    "    features_width: 0\n"
    "    num_depth_features: 0\n"
    "    image_feature_channel: 0\n";

/* detection_class_remapper.param.yaml with the values of the release (specs/bevfusion.md 3.6),
 * written in perceive's own words: same keys and numbers, not the release's bytes. */
const char pvm_bevfusion_remapper_yaml[] =
    "# Area-based relabelling, applied after both NMS stages.\n"
    "# Row = label the detector gave, column = label it may become; columns are tried left to\n"
    "# right and the first allowed one whose [min, max] area range (m^2, l * w, inclusive)\n"
    "# holds the box wins. Label order in rows and columns:\n"
    "#   UNKNOWN, CAR, TRUCK, BUS, TRAILER, MOTORCYCLE, BICYCLE, PEDESTRIAN\n"
    "/**:\n"
    "  ros__parameters:\n"
    "    allow_remapping_by_area_matrix:\n"
    "      [0, 0, 0, 0, 0, 0, 0, 0,\n"
    "       0, 0, 1, 0, 1, 0, 0, 0,\n"
    "       0, 0, 0, 0, 1, 0, 0, 0,\n"
    "       0, 0, 0, 0, 1, 0, 0, 0,\n"
    "       0, 0, 0, 0, 0, 0, 0, 0,\n"
    "       0, 0, 0, 0, 0, 0, 0, 0,\n"
    "       0, 0, 0, 0, 0, 0, 0, 0,\n"
    "       0, 0, 0, 0, 0, 0, 0, 0]\n"
    "    # CAR -> TRUCK from 2.2 m x 5.5 m up to 3 m x 12 m; any vehicle above that -> TRAILER\n"
    "    min_area_matrix:\n"
    "      [0.0, 0.0,  0.0, 0.0,  0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0, 12.1, 0.0, 36.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0, 36.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0, 36.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,  0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,  0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,  0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,  0.0, 0.0, 0.0, 0.0]\n"
    "    max_area_matrix:\n"
    "      [0.0, 0.0,  0.0, 0.0,     0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0, 36.0, 0.0, 999.999, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0, 999.999, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0, 999.999, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,     0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,     0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,     0.0, 0.0, 0.0, 0.0,\n"
    "       0.0, 0.0,  0.0, 0.0,     0.0, 0.0, 0.0, 0.0]\n";

/* ---- defaults ------------------------------------------------------------------------------- */
void pvm_bevfusion_params_defaults(pvm_bevfusion_params *p)
{
    static const float bins[4] = { 50.0f, 90.0f, 121.0f, 200.0f };
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->circle_nms_dist_threshold = 0.5f;
    p->iou_nms_search_distance_2d = 10.0f;
    p->iou_nms_threshold = 0.1f;
    /* CAR, TRUCK, BUS, BICYCLE 0.3; PEDESTRIAN (and any further class) 0.0 */
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++) p->yaw_norm_thresholds[c] = c < 4 ? 0.3f : 0.0f;
    p->nbins = 4;
    for (int b = 0; b < 4; b++) p->bin_upper[b] = bins[b];
    /* every stored class and bin, so that a later change of the bin count stays defined */
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++)
        for (int b = 0; b < PVM_BF_MAX_BINS; b++) p->score_thr[c][b] = 0.1f;
}

/* ---- numbers -------------------------------------------------------------------------------- */
/* A finite decimal number: [+-] (digits [. digits] | . digits) [(e|E) [+-] digits]. *is_int is
 * set when there is neither a point nor an exponent. Anything else (empty, inf, nan, hex, "1_000",
 * trailing text, over 63 characters) is refused. */
static bool num_parse(const char *s, size_t n, double *out, bool *is_int)
{
    char buf[64];
    size_t i = 0, digits = 0;
    bool integral = true;
    if (n == 0 || n >= sizeof buf) return false;
    if (s[i] == '+' || s[i] == '-') i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') { i++; digits++; }
    if (i < n && s[i] == '.') {
        integral = false;
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') { i++; digits++; }
    }
    if (digits == 0) return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        integral = false;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') { i++; exp_digits++; }
        if (exp_digits == 0) return false;
    }
    if (i != n) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v) || fabs(v) > (double)FLT_MAX) return false;
    *out = v;
    if (is_int) *is_int = integral;
    return true;
}

/* ---- yaml documents ------------------------------------------------------------------------- */
typedef struct ydoc {
    yaml_parser_t   parser;
    yaml_document_t doc;
    bool            have_parser, have_doc;
    yaml_node_t    *params;      /* the ros__parameters mapping */
    const char     *file;
    pvc_msg        *msg;
} ydoc;

static void ydoc_close(ydoc *d)
{
    if (d->have_doc) yaml_document_delete(&d->doc);
    if (d->have_parser) yaml_parser_delete(&d->parser);
    d->have_doc = d->have_parser = false;
}

static bool y_is(const yaml_node_t *n, const char *s)
{
    size_t k = strlen(s);
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == k &&
           memcmp(n->data.scalar.value, s, k) == 0;
}

/* Value of key in a mapping node (NULL when absent). */
static yaml_node_t *y_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++)
        if (y_is(yaml_document_get_node(doc, pr->key), key)) return yaml_document_get_node(doc, pr->value);
    return NULL;
}

/* Loads text and finds the parameters: the ROS 2 layout, a node-name key (Autoware uses the
 * wildcard one) holding `ros__parameters:` holding the keys. Keys must be plain and unique. */
static pv_status ydoc_open(ydoc *d, const char *text, size_t len, const char *file, pvc_msg *msg)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    d->msg = msg;
    if (!text) return pvc_fail(msg, PV_EFORMAT, "%s: no text", file);
    if (!yaml_parser_initialize(&d->parser)) return pvc_fail(msg, PV_ENOMEM, "%s: yaml parser", file);
    d->have_parser = true;
    yaml_parser_set_input_string(&d->parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&d->parser, &d->doc)) {
        pv_status s = d->parser.error == YAML_MEMORY_ERROR ? PV_ENOMEM : PV_EFORMAT;
        return pvc_fail(msg, s, "%s: not valid YAML: %s at line %zu, column %zu", file,
                        d->parser.problem ? d->parser.problem : "error",
                        d->parser.problem_mark.line + 1, d->parser.problem_mark.column + 1);
    }
    d->have_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&d->doc);
    if (!root) return pvc_fail(msg, PV_EFORMAT, "%s: empty document", file);
    if (root->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
            yaml_node_t *rp = y_get(&d->doc, yaml_document_get_node(&d->doc, pr->value), "ros__parameters");
            if (rp) { d->params = rp; break; }
        }
    }
    if (!d->params)
        return pvc_fail(msg, PV_EFORMAT, "%s: missing key 'ros__parameters' (expected '/**:' then "
                        "'ros__parameters:' then the parameters)", file);
    if (d->params->type != YAML_MAPPING_NODE)
        return pvc_fail(msg, PV_EFORMAT, "%s: key 'ros__parameters' is not a mapping", file);

    yaml_node_pair_t *b = d->params->data.mapping.pairs.start, *e = d->params->data.mapping.pairs.top;
    for (yaml_node_pair_t *pr = b; pr < e; pr++) {
        yaml_node_t *k = yaml_document_get_node(&d->doc, pr->key);
        if (!k || k->type != YAML_SCALAR_NODE)
            return pvc_fail(msg, PV_EFORMAT, "%s: parameter %d has a key that is not a name", file,
                            (int)(pr - b));
        for (yaml_node_pair_t *q = b; q < pr; q++) {
            yaml_node_t *k2 = yaml_document_get_node(&d->doc, q->key);
            if (k2->data.scalar.length == k->data.scalar.length &&
                memcmp(k2->data.scalar.value, k->data.scalar.value, k->data.scalar.length) == 0)
                return pvc_fail(msg, PV_EFORMAT, "%s: key '%.*s' appears twice", file,
                                (int)PVC_MIN(k->data.scalar.length, 64), (const char *)k->data.scalar.value);
        }
    }
    /* a second document would be silently ignored otherwise */
    yaml_document_t extra;
    if (!yaml_parser_load(&d->parser, &extra))
        return pvc_fail(msg, PV_EFORMAT, "%s: not valid YAML: %s at line %zu, column %zu", file,
                        d->parser.problem ? d->parser.problem : "error",
                        d->parser.problem_mark.line + 1, d->parser.problem_mark.column + 1);
    bool more = yaml_document_get_root_node(&extra) != NULL;
    yaml_document_delete(&extra);
    if (more) return pvc_fail(msg, PV_EFORMAT, "%s: more than one YAML document", file);
    return PV_OK;
}

static yaml_node_t *y_key(ydoc *d, const char *key) { return y_get(&d->doc, d->params, key); }

static pv_status y_missing(ydoc *d, const char *key)
{
    return pvc_fail(d->msg, PV_EFORMAT, "%s: missing key '%s'", d->file, key);
}

/* One number from a scalar node; quoted scalars are strings, not numbers (as in ROS 2). */
static pv_status y_scalar_num(ydoc *d, const char *key, int idx, yaml_node_t *n, bool want_int, double *v)
{
    char where[32] = "";
    if (idx >= 0) snprintf(where, sizeof where, " value %d", idx);
    if (!n || n->type != YAML_SCALAR_NODE)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s'%s: expected a number, got a %s", d->file, key,
                        where, n && n->type == YAML_SEQUENCE_NODE ? "sequence" : "mapping");
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    bool is_int = false;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !num_parse(s, len, v, &is_int))
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s'%s: '%.*s' is not a finite number", d->file, key,
                        where, (int)PVC_MIN(len, 64), s);
    if (want_int && !is_int)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s'%s: '%.*s' is not an integer", d->file, key, where,
                        (int)PVC_MIN(len, 64), s);
    return PV_OK;
}

/* A number key (required or not; *found says whether it was there). */
static pv_status y_num(ydoc *d, const char *key, bool want_int, bool required, double *v, bool *found)
{
    yaml_node_t *n = y_key(d, key);
    if (found) *found = n != NULL;
    if (!n) return required ? y_missing(d, key) : PV_OK;
    return y_scalar_num(d, key, -1, n, want_int, v);
}

/* A sequence of exactly `count` numbers (flow or block style). */
static pv_status y_nums(ydoc *d, const char *key, bool want_int, bool required, int count, double *v,
                        bool *found)
{
    yaml_node_t *n = y_key(d, key);
    if (found) *found = n != NULL;
    if (!n) return required ? y_missing(d, key) : PV_OK;
    if (n->type != YAML_SEQUENCE_NODE)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': expected a sequence of %d numbers", d->file, key,
                        count);
    yaml_node_item_t *b = n->data.sequence.items.start, *e = n->data.sequence.items.top;
    if (e - b != count)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': expected %d values, got %d", d->file, key, count,
                        (int)(e - b));
    for (int i = 0; i < count; i++) {
        pv_status s = y_scalar_num(d, key, i, yaml_document_get_node(&d->doc, b[i]), want_int, &v[i]);
        if (s != PV_OK) return s;
    }
    return PV_OK;
}

/* An integer key within [lo, hi]. */
static pv_status y_int(ydoc *d, const char *key, bool required, double lo, double hi, int64_t *out)
{
    double v = 0;
    bool found = false;
    pv_status s = y_num(d, key, true, required, &v, &found);
    if (s != PV_OK || !found) return s;
    if (v < lo || v > hi)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': %.17g is out of range [%.17g, %.17g]", d->file,
                        key, v, lo, hi);
    *out = (int64_t)v;
    return PV_OK;
}

/* ---- ml_package ----------------------------------------------------------------------------- */
static pv_status ml_class_names(ydoc *d, pvm_bevfusion_params *q)
{
    const char *key = "class_names";
    yaml_node_t *n = y_key(d, key);
    if (!n) return y_missing(d, key);
    if (n->type != YAML_SEQUENCE_NODE)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': expected a sequence of names", d->file, key);
    yaml_node_item_t *b = n->data.sequence.items.start, *e = n->data.sequence.items.top;
    int count = (int)(e - b);
    if (count < 1 || count > PVM_BF_MAX_CLASSES)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': %d names, expected 1 to %d", d->file, key, count,
                        PVM_BF_MAX_CLASSES);
    memset(q->class_names, 0, sizeof q->class_names);
    for (int i = 0; i < count; i++) {
        yaml_node_t *s = yaml_document_get_node(&d->doc, b[i]);
        if (!s || s->type != YAML_SCALAR_NODE)
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s' value %d: expected a name", d->file, key, i);
        size_t len = s->data.scalar.length;
        const unsigned char *v = s->data.scalar.value;
        if (len == 0 || len >= sizeof q->class_names[0])
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s' value %d: name of %zu characters (1 to %zu)",
                            d->file, key, i, len, sizeof q->class_names[0] - 1);
        for (size_t k = 0; k < len; k++)
            if (v[k] < 0x20 || v[k] > 0x7e)
                return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s' value %d: byte 0x%02x is not "
                                "printable ASCII", d->file, key, i, v[k]);
        memcpy(q->class_names[i], v, len);
        for (int j = 0; j < i; j++)
            if (strcmp(q->class_names[j], q->class_names[i]) == 0)
                return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': '%s' appears twice", d->file, key,
                                q->class_names[i]);
    }
    q->nclass = count;
    return PV_OK;
}

static pv_status ml_bool(ydoc *d, const char *key, bool *out)
{
    static const char *const yes[] = { "true", "True", "TRUE" }, *const no[] = { "false", "False", "FALSE" };
    yaml_node_t *n = y_key(d, key);
    if (!n) return y_missing(d, key);
    if (n->type != YAML_SCALAR_NODE)
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': expected true or false", d->file, key);
    for (int i = 0; i < 3 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE; i++) {
        if (y_is(n, yes[i])) { *out = true; return PV_OK; }
        if (y_is(n, no[i])) { *out = false; return PV_OK; }
    }
    return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': '%.*s' is not true or false", d->file, key,
                    (int)PVC_MIN(n->data.scalar.length, 64), (const char *)n->data.scalar.value);
}

/* The camera-branch keys: not used by the lidar-only model, still checked when present. */
static pv_status ml_camera_keys(ydoc *d)
{
    static const char *const bounds[] = { "d_bound", "x_bound", "y_bound", "z_bound" };
    static const char *const counts[] = { "raw_image_height", "raw_image_width", "roi_height", "roi_width",
                                          "features_height", "features_width", "num_depth_features",
                                          "image_feature_channel" };
    static const char *const scales[] = { "img_aug_scale_x", "img_aug_scale_y" };
    pv_status s;
    for (size_t i = 0; i < PVC_COUNTOF(bounds); i++) {
        double v[3];
        bool found = false;
        if ((s = y_nums(d, bounds[i], false, false, 3, v, &found)) != PV_OK) return s;
        if (found && !(v[0] < v[1] && v[2] > 0))
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': [%g, %g, %g] is not [min, max, step] with "
                            "min < max and step > 0", d->file, bounds[i], v[0], v[1], v[2]);
    }
    for (size_t i = 0; i < PVC_COUNTOF(counts); i++) {
        int64_t v;
        if ((s = y_int(d, counts[i], false, 0, 1e6, &v)) != PV_OK) return s;
    }
    for (size_t i = 0; i < PVC_COUNTOF(scales); i++) {
        double v = 0;
        bool found = false;
        if ((s = y_num(d, scales[i], false, false, &v, &found)) != PV_OK) return s;
        if (found && v < 0)
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key '%s': %g is negative", d->file, scales[i], v);
    }
    int64_t cams = 0;
    if ((s = y_int(d, "num_cameras", false, 0, 64, &cams)) != PV_OK) return s;
    if (cams > 0)
        return pvc_fail(d->msg, PV_EUNSUPPORTED, "%s: key 'num_cameras': %lld cameras; only the lidar-only "
                        "model (num_cameras 0) is supported", d->file, (long long)cams);
    return PV_OK;
}

static pv_status ml_read(ydoc *d, pvm_bevfusion_params *q)
{
    pv_status s;
    double v[6];
    int64_t iv;
    if ((s = ml_class_names(d, q)) != PV_OK) return s;

    if ((s = y_nums(d, "voxels_num", true, true, 3, v, NULL)) != PV_OK) return s;
    if (!(1 <= v[0] && v[0] <= v[1] && v[1] <= v[2] && v[2] <= (double)INT32_MAX))
        return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'voxels_num': [%.17g, %.17g, %.17g] is not "
                        "1 <= min <= opt <= max <= 2^31-1", d->file, v[0], v[1], v[2]);
    for (int i = 0; i < 3; i++) q->voxels_num[i] = (int64_t)v[i];

    if ((s = y_nums(d, "point_cloud_range", false, true, 6, v, NULL)) != PV_OK) return s;
    for (int i = 0; i < 6; i++) q->pc_range[i] = (float)v[i];
    for (int i = 0; i < 3; i++)
        if (!(q->pc_range[i] < q->pc_range[i + 3]))
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'point_cloud_range': axis %c has min %g >= max %g",
                            d->file, "xyz"[i], v[i], v[i + 3]);

    if ((s = y_nums(d, "voxel_size", false, true, 3, v, NULL)) != PV_OK) return s;
    for (int i = 0; i < 3; i++) {
        q->voxel_size[i] = (float)v[i];
        /* the grid dimension, as the voxelizer computes it; bounded so index arithmetic stays small */
        float cells = (q->pc_range[i + 3] - q->pc_range[i]) / q->voxel_size[i];
        if (!(q->voxel_size[i] > 0) || !(cells >= 1.0f && cells <= 1048576.0f))
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'voxel_size': %c size %g gives %g cells over the "
                            "range (expected a size > 0 and 1 to 2^20 cells)", d->file, "xyz"[i], v[i],
                            (double)cells);
    }

    if ((s = y_int(d, "num_proposals", true, 1, 100000, &iv)) != PV_OK) return s;
    q->num_proposals = (int)iv;
    if ((s = y_int(d, "out_size_factor", true, 1, 1024, &iv)) != PV_OK) return s;
    q->out_size_factor = (int)iv;
    if ((s = y_int(d, "max_points_per_voxel", true, 1, 1024, &iv)) != PV_OK) return s;
    q->max_points_per_voxel = (int)iv;
    if ((s = ml_bool(d, "use_intensity", &q->use_intensity)) != PV_OK) return s;
    return ml_camera_keys(d);
}

pv_status pvm_bevfusion_params_parse_ml_package(pvm_bevfusion_params *p, const char *text, size_t len,
                                                const char *file, pvc_msg *msg)
{
    if (!p) return pvc_fail(msg, PV_EINPUT, "ml_package: no parameter struct");
    file = file ? file : "ml_package_bevfusion_lidar.param.yaml";
    pvm_bevfusion_params q = *p;
    ydoc d;
    pv_status s = ydoc_open(&d, text, len, file, msg);
    if (s == PV_OK) s = ml_read(&d, &q);
    ydoc_close(&d);
    if (s == PV_OK) *p = q;
    return s;
}

/* ---- remapper ------------------------------------------------------------------------------- */
static pv_status remap_read(ydoc *d, pvm_bevfusion_params *q)
{
    enum { N = PVM_BF_NLABELS * PVM_BF_NLABELS };
    double allow[N], mn[N], mx[N];
    pv_status s;
    if ((s = y_nums(d, "allow_remapping_by_area_matrix", false, true, N, allow, NULL)) != PV_OK) return s;
    if ((s = y_nums(d, "min_area_matrix", false, true, N, mn, NULL)) != PV_OK) return s;
    if ((s = y_nums(d, "max_area_matrix", false, true, N, mx, NULL)) != PV_OK) return s;
    for (int i = 0; i < N; i++) {
        int r = i / PVM_BF_NLABELS, c = i % PVM_BF_NLABELS;
        if (allow[i] != 0 && allow[i] != 1)
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'allow_remapping_by_area_matrix' value %d (row %d, "
                            "column %d): %g is not 0 or 1", d->file, i, r, c, allow[i]);
        if (mn[i] < 0)
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'min_area_matrix' value %d (row %d, column %d): "
                            "%g is negative", d->file, i, r, c, mn[i]);
        if (mx[i] < 0)
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'max_area_matrix' value %d (row %d, column %d): "
                            "%g is negative", d->file, i, r, c, mx[i]);
        if (allow[i] == 1 && mn[i] > mx[i])
            return pvc_fail(d->msg, PV_EFORMAT, "%s: key 'min_area_matrix' value %d (row %d, column %d): "
                            "min %g > max %g of an allowed remapping", d->file, i, r, c, mn[i], mx[i]);
        q->remap_allow[r][c] = (int)allow[i];
        q->remap_min[r][c] = (float)mn[i];
        q->remap_max[r][c] = (float)mx[i];
    }
    return PV_OK;
}

pv_status pvm_bevfusion_params_parse_remapper(pvm_bevfusion_params *p, const char *text, size_t len,
                                              const char *file, pvc_msg *msg)
{
    if (!p) return pvc_fail(msg, PV_EINPUT, "remapper: no parameter struct");
    file = file ? file : "detection_class_remapper.param.yaml";
    pvm_bevfusion_params q = *p;
    ydoc d;
    pv_status s = ydoc_open(&d, text, len, file, msg);
    if (s == PV_OK) s = remap_read(&d, &q);
    ydoc_close(&d);
    if (s == PV_OK) *p = q;
    return s;
}

/* ---- runtime overrides ---------------------------------------------------------------------- */
#define PARAM_MAX_VALUES (PVM_BF_MAX_CLASSES * PVM_BF_MAX_BINS)

/* "a,b,c" (optionally in [ ], spaces allowed) into v; returns the count, or -1 when a token
 * is not a number, -2 when there are more than cap values. */
static int param_list(const char *s, double *v, int cap)
{
    size_t n = strlen(s), b = 0;
    while (b < n && (s[b] == ' ' || s[b] == '\t')) b++;
    while (n > b && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n > b + 1 && s[b] == '[' && s[n - 1] == ']') { b++; n--; }
    int count = 0;
    size_t i = b;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != ',') j++;
        size_t t0 = i, t1 = j;
        while (t0 < t1 && (s[t0] == ' ' || s[t0] == '\t')) t0++;
        while (t1 > t0 && (s[t1 - 1] == ' ' || s[t1 - 1] == '\t')) t1--;
        if (count == cap) return -2;
        if (!num_parse(s + t0, t1 - t0, &v[count], NULL)) return -1;
        count++;
        if (j >= n) break;
        i = j + 1;
    }
    return count;
}

typedef enum { P_CIRCLE, P_SEARCH, P_IOU, P_YAW, P_SCORE, P_SCORES, P_BINS } param_key;

static const struct { const char *name; param_key key; } param_keys[] = {
    { "circle_nms_dist_threshold", P_CIRCLE }, { "iou_nms_search_distance_2d", P_SEARCH },
    { "iou_nms_threshold", P_IOU }, { "yaw_norm_thresholds", P_YAW }, { "score_threshold", P_SCORE },
    { "detection_score_thresholds", P_SCORES }, { "distance_bin_upper_limits", P_BINS },
};

pv_status pvm_bevfusion_param_set(pvm_bevfusion_params *p, const char *key, const char *value, pvc_msg *msg)
{
    if (!p || !key || !value)
        return pvc_fail(msg, PV_EINPUT, "param %s: %s", key ? key : "(null)",
                        !p ? "no parameter struct" : "no value");
    int k = -1;
    for (size_t i = 0; i < PVC_COUNTOF(param_keys); i++)
        if (strcmp(key, param_keys[i].name) == 0) k = (int)i;
    if (k < 0)
        return pvc_fail(msg, PV_EINPUT, "param '%.64s' is unknown (circle_nms_dist_threshold, "
                        "iou_nms_search_distance_2d, iou_nms_threshold, yaw_norm_thresholds, "
                        "score_threshold, detection_score_thresholds, distance_bin_upper_limits)", key);
    param_key pk = param_keys[k].key;
    double v[PARAM_MAX_VALUES];
    int n = param_list(value, v, PARAM_MAX_VALUES);
    if (n == -1)
        return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': not a finite number or list of them", key, value);
    if (n == -2)
        return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': more than %d values", key, value,
                        PARAM_MAX_VALUES);

    /* expected count and range of every value */
    int want = 1;
    double lo = 0, hi = 1;
    bool hi_open = false;
    switch (pk) {
    case P_CIRCLE: case P_SEARCH: hi = 1000; break;
    case P_IOU: case P_SCORE: break;
    case P_YAW: want = p->nclass; hi_open = true; break;   /* Autoware's valid range is [0, 1) */
    case P_SCORES: want = p->nclass * p->nbins; break;
    case P_BINS: want = n < 1 || n > PVM_BF_MAX_BINS ? -1 : n; hi = 10000; break;
    }
    if (pk == P_BINS && want < 0)
        return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': %d values, expected 1 to %d", key, value, n,
                        PVM_BF_MAX_BINS);
    if (n != want)
        return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': %d value%s, expected %d%s", key, value, n,
                        n == 1 ? "" : "s", want, pk == P_YAW ? " (one per class)" :
                        pk == P_SCORES ? " (classes x distance bins, class-major)" : "");
    for (int i = 0; i < n; i++) {
        /* the open bound is checked on the float that will be stored */
        bool bad = v[i] < lo || v[i] > hi || (hi_open && (float)v[i] >= (float)hi) ||
                   (pk == P_BINS && (float)v[i] <= 0);   /* 1e-300 is 0 as a float (fuzz_params) */
        if (bad)
            return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': value %d (%g) is out of range %s%g, %g%s", key,
                            value, i, v[i], pk == P_BINS ? "(" : "[", lo, hi, hi_open ? ")" : "]");
        if (pk == P_BINS && i > 0 && !((float)v[i] > (float)v[i - 1]))
            return pvc_fail(msg, PV_EINPUT, "param %s='%.80s': limits must increase (%g after %g)", key,
                            value, v[i], v[i - 1]);
    }

    switch (pk) {
    case P_CIRCLE: p->circle_nms_dist_threshold = (float)v[0]; break;
    case P_SEARCH: p->iou_nms_search_distance_2d = (float)v[0]; break;
    case P_IOU: p->iou_nms_threshold = (float)v[0]; break;
    case P_YAW: for (int i = 0; i < n; i++) p->yaw_norm_thresholds[i] = (float)v[i]; break;
    case P_SCORE:
        for (int c = 0; c < PVM_BF_MAX_CLASSES; c++)
            for (int b = 0; b < PVM_BF_MAX_BINS; b++) p->score_thr[c][b] = (float)v[0];
        break;
    case P_SCORES:
        for (int i = 0; i < n; i++) p->score_thr[i / p->nbins][i % p->nbins] = (float)v[i];
        break;
    case P_BINS:
        /* the per-bin thresholds stay as stored (8 x 8, all set by the defaults) */
        p->nbins = n;
        for (int i = 0; i < n; i++) p->bin_upper[i] = (float)v[i];
        break;
    }
    return PV_OK;
}

pv_status pvm_bevfusion_params_v2(pvm_bevfusion_params *p, pvc_msg *msg)
{
    pvm_bevfusion_params_defaults(p);
    pv_status s = pvm_bevfusion_params_parse_ml_package(p, pvm_bevfusion_ml_package_v2_yaml,
                                                        strlen(pvm_bevfusion_ml_package_v2_yaml), NULL, msg);
    if (s == PV_OK)
        s = pvm_bevfusion_params_parse_remapper(p, pvm_bevfusion_remapper_yaml, strlen(pvm_bevfusion_remapper_yaml), NULL, msg);
    return s;
}
