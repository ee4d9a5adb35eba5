/* Cast: converts every element to the dtype named by attribute 'to' (an ONNX
 * TensorProto.DataType). float -> int truncates toward zero (saturating, NaN -> 0), anything ->
 * bool is "nonzero". The work is pvk_cast (kernels/ref/eltwise.c). */
#include "graph/graph.h"
#include "kernels/ref/eltwise.h"

typedef struct cast_params { pv_dtype to; } cast_params;

/* TensorProto.DataType -> pv_dtype; -1 for types perceive does not have. */
static int onnx_dtype(int64_t v)
{
    switch (v) {
    case 1: return PV_F32;
    case 2: return PV_U8;
    case 3: return PV_I8;
    case 6: return PV_I32;
    case 7: return PV_I64;
    case 9: return PV_BOOL;
    case 10: return PV_F16;
    case 16: return PV_BF16;
    default: return -1;
    }
}

static const char *onnx_dtype_name(int64_t v)
{
    static const char *const names[] = { "undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
                                         "int64", "string", "bool", "float16", "double", "uint32", "uint64",
                                         "complex64", "complex128", "bfloat16", "float8e4m3fn",
                                         "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz" };
    return v >= 0 && v < (int64_t)PVC_COUNTOF(names) ? names[v] : "unknown";
}

static pv_status prep_Cast(pvg_prep *p)
{
    if (p->nin != 1 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 1 input and 1 output, got %d and %d", p->nin, p->nout);
    pv_status s = pvg_check_dtype(p, 0, PVG_ANY);
    if (s != PV_OK) return s;
    /* 'saturate' (opset 19) only concerns float8 targets, which perceive does not have. */
    if (pvg_attr_has(p, "saturate"))
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'saturate' (opset 19) is not supported");
    if (!pvg_attr_has(p, "to")) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'to' is required");
    int64_t to;
    if ((s = pvg_attr_int(p, "to", 0, &to)) != PV_OK) return s;
    int t = onnx_dtype(to);
    if (t < 0)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'to'=%lld (%s) is not supported", (long long)to,
                             onnx_dtype_name(to));
    cast_params *cp = p->params;
    cp->to = (pv_dtype)t;
    pvg_out_set(p, 0, (pv_dtype)t, p->in[0].rank, p->in[0].dims);
    return PV_OK;
}

static pv_status run_Cast(const pvg_exec *x)
{
    const cast_params *cp = x->params;
    pvk_cast(x->pool, x->in[0].dtype, x->in[0].data, cp->to, x->out[0].data, pvc_numel(&x->in[0]));
    return PV_OK;
}

/* In place is safe for equal element sizes (the kernel stages blocks), and free for to == from. */
const pvg_op pvg_op_Cast = { "Cast", "", PVG_OP_INPLACE, prep_Cast, run_Cast };
