/* Generalized cosine windows (HannWindow, HammingWindow, BlackmanWindow): a plain reference
 * kernel, the only one. Prefix pvk_. */
#ifndef PVK_REF_WINDOW_H
#define PVK_REF_WINDOW_H

#include "core/core.h"

/* y[i] = a[0] - a[1] cos(2 pi i / d) + a[2] cos(4 pi i / d) for i in [0, n), d = n when
 * periodic, else n - 1 (a 1-point symmetric window is [a0 - a1 + a2]); computed in double and
 * stored as dtype t. */
void pvk_cosine_window(int64_t n, bool periodic, const double a[3], pv_dtype t, void *y);

#endif
