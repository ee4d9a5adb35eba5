/* STUB: to be replaced by the real operator implementation. */
#include "graph/graph.h"

PVG_STUB_OP(Add)
PVG_STUB_OP(Sub)
PVG_STUB_OP(Mul)
PVG_STUB_OP(Div)
PVG_STUB_OP(Pow)
PVG_STUB_OP(Mod)
PVG_STUB_OP(Min)
PVG_STUB_OP(Max)
