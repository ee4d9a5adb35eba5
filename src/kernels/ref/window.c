/* Cosine windows (see window.h). */
#include "kernels/ref/window.h"

#include <math.h>

void pvk_cosine_window(int64_t n, bool periodic, const double a[3], pv_dtype t, void *y)
{
    double d = periodic ? (double)n : (double)(n - 1);
    for (int64_t i = 0; i < n; i++) {
        double ph = d > 0 ? 2.0 * M_PI * (double)i / d : 0.0;
        pvc_set_f64(y, t, i, a[0] - a[1] * cos(ph) + a[2] * cos(2.0 * ph));
    }
}
