/* Det (opset 11): determinants of the trailing [M, M] matrices of X [*, M, M]; output [*].
 * Float dtypes (F16/BF16 staged through f32). LU elimination with partial pivoting in double,
 * per matrix: the plain kernel (below), the only one. */
#include "graph/ops/lowp.h"

#include <math.h>
#include <string.h>

typedef struct det_params { int64_t batch, m; } det_params;

static pv_status prep_Det(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_FLOATS);
    if (s != PV_OK) return s;
    const pvc_tensor *in = &p->in[0];
    int r = in->rank;
    if (r < 2 || in->dims[r - 1] != in->dims[r - 2]) {
        char b[128];
        return pvg_prep_fail(p, PV_EFORMAT, "input shape %s is not [*, M, M]", pvc_shape_str(in, b, sizeof b));
    }
    det_params *dp = p->params;
    dp->m = in->dims[r - 1];
    if (dp->m > 4096) return pvg_prep_fail(p, PV_EUNSUPPORTED, "matrices of %lld rows are too large", (long long)dp->m);
    dp->batch = 1;
    for (int k = 0; k < r - 2; k++) dp->batch *= in->dims[k];
    pvg_out_set(p, 0, in->dtype, r - 2, in->dims);
    p->workspace = pvg_lowp_bytes(p) + (size_t)(dp->m * dp->m) * sizeof(double);
    return PV_OK;
}

/* Determinant of the m x m matrix a (overwritten with its LU factors). */
static double det_lu(double *a, int64_t m)
{
    double det = 1.0;
    for (int64_t c = 0; c < m; c++) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < m; r++)
            if (fabs(a[r * m + c]) > fabs(a[piv * m + c])) piv = r;
        if (a[piv * m + c] == 0.0) return 0.0;
        if (piv != c) {
            for (int64_t k = 0; k < m; k++) {
                double t = a[c * m + k];
                a[c * m + k] = a[piv * m + k];
                a[piv * m + k] = t;
            }
            det = -det;
        }
        det *= a[c * m + c];
        for (int64_t r = c + 1; r < m; r++) {
            double f = a[r * m + c] / a[c * m + c];
            for (int64_t k = c; k < m; k++) a[r * m + k] -= f * a[c * m + k];
        }
    }
    return det;
}

static pv_status run_f32(const pvg_exec *x)
{
    const det_params *dp = x->params;
    const float *in = x->in[0].data;
    float *out = x->out[0].data;
    double *a = x->ws;
    int64_t mm = dp->m * dp->m;
    for (int64_t b = 0; b < dp->batch; b++) {
        for (int64_t i = 0; i < mm; i++) a[i] = in[b * mm + i];
        out[b] = (float)det_lu(a, dp->m);
    }
    return PV_OK;
}

static pv_status run_Det(const pvg_exec *x)
{
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, run_f32) : run_f32(x);
}

const pvg_op pvg_op_Det = { "Det", "", 0, prep_Det, run_Det };
