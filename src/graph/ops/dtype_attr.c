/* See dtype_attr.h. */
#include "graph/ops/dtype_attr.h"

pv_status pvg_attr_dtype(pvg_prep *p, const char *name, pv_dtype def, pv_dtype *out)
{
    static const struct { int onnx; pv_dtype t; } map[] = {
        { 1, PV_F32 }, { 2, PV_U8 }, { 3, PV_I8 }, { 6, PV_I32 }, { 7, PV_I64 }, { 9, PV_BOOL },
        { 10, PV_F16 }, { 16, PV_BF16 },
    };
    *out = def;
    if (!pvg_attr_has(p, name)) return PV_OK;
    int64_t v;
    pv_status s = pvg_attr_int(p, name, 0, &v);
    if (s != PV_OK) return s;
    for (size_t i = 0; i < PVC_COUNTOF(map); i++)
        if (map[i].onnx == v) { *out = map[i].t; return PV_OK; }
    return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute '%s'=%lld names a dtype perceive does not have (it has float, "
                         "float16, bfloat16, int64, int32, int8, uint8, bool)", name, (long long)v);
}
