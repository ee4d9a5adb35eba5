/* meteor bundle: METEOR (tier4/METEOR, release AutowareFoundation/meteor, meteor_v157c3Z.onnx),
 * a camera-only multi-task BEV network: eight cameras + their calibration + ego speed in; lanes,
 * 3D/2D boxes, occupancy, risk, traffic light and an ego path out. Prefix pvm_meteor_. Facts:
 * ../shared/specs/meteor.md.
 *
 *   manifest or camera items + params --inputs.c--> pvm_meteor_frame (8 x 3x432x768 uint8, K
 *        at 768x432, T_cam_ego, v0, pose, stream)     (images decoded, area-resized, K scaled)
 *   --net.c--> the file's graph as engine plans: the rig part (K/T only: projection grids,
 *        masks, depth-bin weights) once per rig from an LRU cache, the image part every frame
 *   --decode.c--> boxes, lanes (temporal fusion per stream), occupancy, ego path ...
 *   --render.c--> the picture; api.c: the pv_result (JSON, accessors)
 *
 * Artifacts (DESIGN.md 6): meteor_v157c3Z.onnx (required) and meteor_v157.param.yaml (optional:
 * its sha256 is reported; its keys are not interpreted, the decode defaults are the spec's).
 * Without them a set is generated from the skeleton this binary carries (specs/meteor.md 6,
 * src/models/meteor/skeleton.onnx) with seeded weights and the structural constants computed
 * (lift grid points, pooling matrices, the all-zero history terms), labelled "generated".
 */
#ifndef PVM_METEOR_H
#define PVM_METEOR_H

#include "perceive.h"
#include "core/core.h"
#include "models/meteor/decode.h"

#define PVM_METEOR_REPO      "AutowareFoundation/meteor"
#define PVM_METEOR_REVISION  "main"
#define PVM_METEOR_ONNX      "meteor_v157c3Z.onnx"
#define PVM_METEOR_YAML      "meteor_v157.param.yaml"
#define PVM_METEOR_GEN_SEED  1
#define PVM_METEOR_V0_DEFAULT 8.0f
#define PVM_METEOR_STREAM_ID_MAX 64
#define PVM_METEOR_MAX_STREAMS 16

/* One frame, ready for the engine. */
typedef struct pvm_meteor_frame {
    uint8_t         *chw;                   /* [8][3][432][768], owned */
    uint8_t         *rgb[PVM_METEOR_NCAM];  /* 432x768 RGB (HWC) of each present camera, owned (picture) */
    int              src_w[PVM_METEOR_NCAM], src_h[PVM_METEOR_NCAM];
    pvm_meteor_calib cal;
    float            v0;
    bool             v0_default;
    bool             has_pose;
    pvm_meteor_pose  pose;
    char             stream_id[PVM_METEOR_STREAM_ID_MAX + 1];
    bool             stream_reset;
    bool             has_timestamp;
    double           timestamp_s;
    double           decode_ms;
} pvm_meteor_frame;
void pvm_meteor_frame_free(pvm_meteor_frame *f);

/* Builds a frame from the run's items and params (inputs.c; README "METEOR inputs"):
 *   - a "manifest" item (JSON; the CLI's file) naming per camera its image (a path relative to
 *     the manifest's file, base64 data, or another item by name), K and T_cam_ego (or
 *     T_ego_cam), plus v0, pose, stream; paths need in->path (the server never gives one);
 *   - or camera items named by the camera (CAM_FRONT_WIDE ...; jpeg, png, rgb8 at 768x432) and
 *     params K.<CAM>, T_cam_ego.<CAM> (or T_ego_cam.<CAM>), v0, pose, stream.*.
 * Decode params (score thresholds ...) are returned in prm. Messages name the field. */
pv_status pvm_meteor_frame_build(const pv_input *in, int n_in, const pv_param *p, int np, pvm_meteor_frame *f,
                                 pvm_meteor_params *prm, pvc_msg *msg);
/* Checks one item as a run would (decodes images, parses a manifest without reading files). */
pv_status pvm_meteor_item_validate(const pv_input *in, pvc_msg *msg);

/* Resize with area interpolation (box average when shrinking, bilinear with half-pixel
 * centres when growing), RGB. */
void pvm_meteor_resize_area(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

/* Writes the generated artifacts (the filled skeleton) and dir/sample/ (manifest.json + eight
 * camera images of a synthetic scene seen by a synthetic rig). */
pv_status pvm_meteor_generate(const char *dir, pvc_msg *msg);
/* Only the ONNX (the cache's generated set). */
pv_status pvm_meteor_generate_onnx(const char *dir, pvc_msg *msg);
/* The generated set's tag: skeleton hash + seed. */
void      pvm_meteor_gen_tag(char *buf, size_t cap);

#endif
