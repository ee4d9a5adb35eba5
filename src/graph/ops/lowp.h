/* f16 / bf16 through f32: operators whose kernels are f32-only stage their 16-bit float inputs
 * and outputs in the workspace. prepare adds pvg_lowp_bytes(p) (after setting outputs) to its
 * own workspace; run calls pvg_lowp_run when pvg_lowp_needed, which converts, calls the f32
 * run with f32 tensors and the workspace past the staging area, and converts the outputs back. */
#ifndef PVG_OPS_LOWP_H
#define PVG_OPS_LOWP_H

#include "graph/graph.h"

size_t    pvg_lowp_bytes(const pvg_prep *p);
bool      pvg_lowp_needed(const pvg_exec *x);
pv_status pvg_lowp_run(const pvg_exec *x, pv_status (*run_f32)(const pvg_exec *x));

#endif
