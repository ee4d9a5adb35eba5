/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(ArgMax)
PVG_STUB_OP(ArgMin)
