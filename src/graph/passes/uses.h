/* Value uses for the fusion passes (the files of graph/passes): per value, how many live node
 * inputs read it (a graph output counts PVG_USES_OUTPUT more, so it is never "used once") and
 * the last node that reads it. Built once per pass, freed by pvg_uses_free. */
#ifndef PVG_PASSES_USES_H
#define PVG_PASSES_USES_H

#include "graph/graph.h"

#define PVG_USES_OUTPUT 1000000

typedef struct pvg_uses { int *n, *by; } pvg_uses;

/* what: the pass's name for the out-of-memory message. On failure nothing stays allocated. */
pv_status pvg_uses_build(pvg_graph *g, pvg_uses *u, const char *what);
void      pvg_uses_free(pvg_uses *u);

#endif
