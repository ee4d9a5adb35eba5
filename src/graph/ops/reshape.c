/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(Reshape)
PVG_STUB_OP(Flatten)
PVG_STUB_OP(Squeeze)
PVG_STUB_OP(Unsqueeze)
PVG_STUB_OP(Identity)
