/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(Split)
