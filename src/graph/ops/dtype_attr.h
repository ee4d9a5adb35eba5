/* Operators whose output dtype is an attribute naming an ONNX TensorProto.DataType (EyeLike
 * 'dtype', the window functions' 'output_datatype'). */
#ifndef PVG_OPS_DTYPE_ATTR_H
#define PVG_OPS_DTYPE_ATTR_H

#include "graph/graph.h"

/* Reads int attribute name (absent: *out = def) and maps it to a pv_dtype; a type perceive
 * does not have (double, uint16, string...) is PV_EUNSUPPORTED naming the attribute and type. */
pv_status pvg_attr_dtype(pvg_prep *p, const char *name, pv_dtype def, pv_dtype *out);

#endif
