/* Fuzz target: raw point rows, the NVIDIA 10-sweep layout: float16 x, y, z, intensity, time_lag
 * (pvio_pointbin_parse, 5 columns, and pv_input_decode with format "f16x5"). */
#define FZ_NCOLS 5
#define FZ_DTYPE PV_F16
#define FZ_HINT  "f16x5"
#include "pointbin.h"
