/* Fuzz target: raw point rows, nuScenes .pcd.bin: float32 x, y, z, intensity, ring
 * (pvio_pointbin_parse, 5 columns, and pv_input_decode with format "nuscenes"). */
#define FZ_NCOLS 5
#define FZ_DTYPE PV_F32
#define FZ_HINT  "nuscenes"
#include "pointbin.h"
