/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(Equal)
PVG_STUB_OP(Less)
PVG_STUB_OP(Greater)
PVG_STUB_OP(LessOrEqual)
PVG_STUB_OP(GreaterOrEqual)
PVG_STUB_OP(And)
PVG_STUB_OP(Or)
