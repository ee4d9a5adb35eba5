/* meteor decode -> JSON payload keys (README "METEOR result"). Numbers: floats with 9
 * significant digits (float32 round trip) as raw number text, non-finite ones as null; grids
 * run-length encoded row-major as [value, count] pairs. Prefix pvm_meteor_. */
#ifndef PVM_METEOR_JSON_H
#define PVM_METEOR_JSON_H

#include "models/meteor/decode.h"

#include <cjson/cJSON.h>

extern const char *const pvm_meteor_lane_names[PVM_METEOR_LANE_CLS];
extern const char *const pvm_meteor_2d_names[PVM_METEOR_2D_CLS];
extern const char *const pvm_meteor_occ_names[PVM_METEOR_OCC_C];
extern const char *const pvm_meteor_tl_names[4];

/* Adds "objects", "objects_2d", "unknown_objects", "lanes", "occupancy", "risk",
 * "traffic_light", "ego_path" and "decode" to root (an object; keys already there are left
 * alone). PV_ENOMEM when cJSON runs out of memory (root then holds a partial payload that the
 * caller deletes), PV_EINTERNAL for NULL arguments. */
pv_status pvm_meteor_json_add(cJSON *root, const pvm_meteor_out *o, pvc_msg *msg);

#endif
