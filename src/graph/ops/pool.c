/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(MaxPool)
PVG_STUB_OP(AveragePool)
PVG_STUB_OP(GlobalAveragePool)
