/* Fuzz target: raw point rows, KITTI .bin: float32 x, y, z, intensity
 * (pvio_pointbin_parse, 4 columns, and pv_input_decode with format "kitti"). */
#define FZ_NCOLS 4
#define FZ_DTYPE PV_F32
#define FZ_HINT  "kitti"
#include "pointbin.h"
