/* bevfusion post-processing (Autoware autoware_bevfusion semantics, specs/bevfusion.md
 * section 3) and the bundle's parameters (ml_package + remapper yaml, runtime params).
 * Prefix pvm_bevfusion_. */
#ifndef PVM_BEVFUSION_POST_H
#define PVM_BEVFUSION_POST_H

#include "core/core.h"

#define PVM_BF_MAX_CLASSES 8   /* network classes (5 for v2) */
#define PVM_BF_MAX_BINS    8   /* distance bins of detection_score_thresholds */
#define PVM_BF_NLABELS     8   /* Autoware labels UNKNOWN .. PEDESTRIAN (remapper matrices) */

/* Autoware ObjectClassification labels */
enum { PVM_BF_UNKNOWN = 0, PVM_BF_CAR, PVM_BF_TRUCK, PVM_BF_BUS, PVM_BF_TRAILER, PVM_BF_MOTORCYCLE,
       PVM_BF_BICYCLE, PVM_BF_PEDESTRIAN };

typedef struct pvm_bevfusion_params {
    /* ml_package_bevfusion_lidar.param.yaml */
    int     nclass;
    char    class_names[PVM_BF_MAX_CLASSES][24];
    int64_t voxels_num[3];          /* min, opt, max */
    float   pc_range[6];            /* x_min, y_min, z_min, x_max, y_max, z_max */
    float   voxel_size[3];
    int     num_proposals;
    int     out_size_factor;
    int     max_points_per_voxel;
    bool    use_intensity;
    /* runtime (bevfusion_lidar.param.yaml defaults; overridable per request) */
    float   circle_nms_dist_threshold;      /* 0.5 m */
    float   iou_nms_search_distance_2d;     /* 10 m */
    float   iou_nms_threshold;              /* 0.1 */
    float   yaw_norm_thresholds[PVM_BF_MAX_CLASSES];  /* 0.3 x4, 0.0 */
    int     nbins;
    float   bin_upper[PVM_BF_MAX_BINS];     /* 50, 90, 121, 200 m */
    float   score_thr[PVM_BF_MAX_CLASSES][PVM_BF_MAX_BINS];   /* 0.1 */
    /* detection_class_remapper.param.yaml: [original label][target label] */
    int     remap_allow[PVM_BF_NLABELS][PVM_BF_NLABELS];
    float   remap_min[PVM_BF_NLABELS][PVM_BF_NLABELS];
    float   remap_max[PVM_BF_NLABELS][PVM_BF_NLABELS];
} pvm_bevfusion_params;

/* The v2 param files as text (NUL-terminated; length = strlen). The ml_package one is the
 * release's file byte for byte (786 bytes, sha256 866265b9...82181, specs/bevfusion.md 0.1);
 * the remapper one carries the release's matrices (spec 3.6) in perceive's own wording, so its
 * bytes (and sha256) differ from the release's file. */
extern const char pvm_bevfusion_ml_package_v2_yaml[];
extern const char pvm_bevfusion_remapper_yaml[];
/* Defaults + the two shipped param texts above: the parameters of the generated artifacts. */
pv_status pvm_bevfusion_params_v2(pvm_bevfusion_params *p, pvc_msg *msg);

/* Runtime defaults (Autoware's bevfusion_lidar.param.yaml); leaves the ml_package and
 * remapper fields at zero. */
void pvm_bevfusion_params_defaults(pvm_bevfusion_params *p);
/* Parses the two param files (yaml text; libyaml). Every key the v2 files carry is read and
 * checked (types, counts, ranges); unknown keys are ignored; a missing required key or a
 * malformed value is PV_EFORMAT naming the file and key. */
pv_status pvm_bevfusion_params_parse_ml_package(pvm_bevfusion_params *p, const char *text, size_t len,
                                                const char *file, pvc_msg *msg);
pv_status pvm_bevfusion_params_parse_remapper(pvm_bevfusion_params *p, const char *text, size_t len,
                                              const char *file, pvc_msg *msg);
/* One runtime parameter from a request or `--param key=value`: circle_nms_dist_threshold,
 * iou_nms_search_distance_2d, iou_nms_threshold, yaw_norm_thresholds (comma list, nclass
 * values), score_threshold (one value for every class and bin), detection_score_thresholds
 * (comma list, nclass x nbins values, class-major), distance_bin_upper_limits (comma list,
 * increasing). Unknown key, wrong type or out-of-range value: PV_EINPUT naming key and value;
 * p is unchanged then. */
pv_status pvm_bevfusion_param_set(pvm_bevfusion_params *p, const char *key, const char *value, pvc_msg *msg);

/* One detected object, autoware_perception_msgs/DetectedObject semantics. */
typedef struct pvm_bevfusion_object {
    uint8_t label;                    /* after remapping (TRAILER only comes from the remapper) */
    uint8_t label_before_remap;       /* CAR 1, TRUCK 2, BUS 3, BICYCLE 6, PEDESTRIAN 7, else 0 */
    uint8_t orientation_availability; /* 1 SIGN_UNKNOWN for CAR/TRUCK/BUS/TRAILER (before remap), else 0 */
    uint8_t shape_type;               /* 0 BOUNDING_BOX */
    int32_t class_index;              /* network class 0 .. nclass-1 */
    int32_t proposal;                 /* TopK proposal index */
    float   existence_probability;    /* score */
    float   position[3];              /* box centre x, y, z (m) */
    float   yaw;                      /* rad, counter-clockwise from +x */
    float   orientation[4];           /* quaternion x, y, z, w = (0, 0, sin(yaw/2), cos(yaw/2)) */
    float   dimensions[3];            /* length, width, height (m) */
    float   velocity[2];              /* decoded vx, vy (m/s); Autoware does not publish them */
} pvm_bevfusion_object;

typedef struct pvm_bevfusion_post_stats {
    int proposals;      /* P */
    int after_score;    /* after the yaw-norm gate and the distance-binned thresholds */
    int after_circle;   /* after circle NMS */
    int after_iou;      /* after IoU-BEV NMS = objects */
} pvm_bevfusion_post_stats;

/* bbox_pred [10, P] rows (cx, cy in cells, z, log l, log w, log h, sin, cos, vx, vy),
 * score [P], label [P]. Writes up to P objects in output order (score-descending after circle
 * NMS, then IoU-BEV NMS, then remap). ws: pvm_bevfusion_post_ws_bytes(P) bytes. */
size_t    pvm_bevfusion_post_ws_bytes(int P);
pv_status pvm_bevfusion_post(const pvm_bevfusion_params *p, const float *bbox_pred, const float *score,
                             const int64_t *label, int P, pvm_bevfusion_object *out, int *nout,
                             pvm_bevfusion_post_stats *st, void *ws, pvc_msg *msg);

/* Autoware label of a network class name, exact match: "CAR" 1, "TRUCK" 2, "BUS" 3, "TRAILER" 4,
 * "MOTORCYCLE" 5, "BICYCLE" 6, "PEDESTRIAN" 7, anything else (or NULL) UNKNOWN 0. */
uint8_t pvm_bevfusion_label_from_name(const char *name);
/* The class remapper for one box: the first target label (ascending) allowed for `label` whose
 * [min, max] area range holds length * width (both ends inclusive, area in double); `label`
 * itself when none does or label >= PVM_BF_NLABELS. */
uint8_t pvm_bevfusion_remap_label(const pvm_bevfusion_params *p, uint8_t label, float length,
                                  float width);

/* Rotated-box BEV IoU (convex polygon intersection / union; union < 0.01 m^2 -> 0).
 * Boxes are (x, y, length, width, yaw). Exposed for tests. */
float pvm_bevfusion_iou_bev(const float a[5], const float b[5]);

#endif
