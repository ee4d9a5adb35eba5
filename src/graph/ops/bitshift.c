/* BitShift (opset 11): x << y or x >> y ('direction' LEFT or RIGHT, required) with numpy
 * broadcasting, on the unsigned type perceive has (uint8; uint16/32/64 tensors are refused at
 * load). A shift by the type's width or more gives 0, as ONNX Runtime. The row loop below is
 * the plain kernel, on the shared broadcast iterator. */
#include "graph/ops/broadcast_out.h"
#include "kernels/ref/eltwise.h"

#include <string.h>

typedef struct bitshift_params { bool left; } bitshift_params;

static pv_status prep_BitShift(pvg_prep *p)
{
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, 1u << PV_U8);
    if (s != PV_OK) return s;
    if (p->in[1].dtype != p->in[0].dtype)
        return pvg_prep_fail(p, PV_EFORMAT, "input 1 has dtype %s, input 0 has %s", pv_dtype_name(p->in[1].dtype),
                             pv_dtype_name(p->in[0].dtype));
    const char *dir;
    if (!pvg_attr_has(p, "direction")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'direction' is required");
    if ((s = pvg_attr_string(p, "direction", "", &dir)) != PV_OK) return s;
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'direction'='%s' must be LEFT or RIGHT", dir);
    ((bitshift_params *)p->params)->left = !strcmp(dir, "LEFT");
    return pvg_broadcast_out(p, 2, PV_U8);
}

static void shift_row_u8(const void *ctx, int64_t n, void *y, const void *const *x, const int64_t *st)
{
    bool left = ((const bitshift_params *)ctx)->left;
    const uint8_t *a = x[0], *b = x[1];
    uint8_t *o = y;
    for (int64_t i = 0; i < n; i++) {
        unsigned v = a[i * st[0]], k = b[i * st[1]];
        o[i] = k >= 8 ? 0 : (uint8_t)(left ? v << k : v >> k);
    }
}

static pv_status run_BitShift(const pvg_exec *x)
{
    const pvc_tensor *in[2] = { &x->in[0], &x->in[1] };
    pvk_broadcast_rows(x->pool, 2, in, &x->out[0], shift_row_u8, x->params);
    return PV_OK;
}

const pvg_op pvg_op_BitShift = { "BitShift", "", PVG_OP_INPLACE, prep_BitShift, run_BitShift };
