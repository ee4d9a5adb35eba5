/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(ReduceMean)
PVG_STUB_OP(ReduceSum)
PVG_STUB_OP(ReduceMax)
PVG_STUB_OP(ReduceMin)
