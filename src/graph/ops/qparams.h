/* What the quantized operators share (defined in qparams.c): checks of scale / zero-point inputs
 * and their reading at run time into float / int32 arrays. */
#ifndef PVG_OPS_QPARAMS_H
#define PVG_OPS_QPARAMS_H

#include "graph/graph.h"

/* Input i (a scale or zero point named what) must hold one value (rank 0 or 1-D of 1), or, when
 * n > 0, be 1-D of n values; dtypes in mask. *count gets 1 or n. An absent optional input
 * passes with *count 1. */
pv_status pvg_qparam_check(pvg_prep *p, int i, const char *what, unsigned mask, int64_t n, int64_t *count);
/* The zero point input (u8 / s8 / i32) as count int32 values (one value is repeated); an absent
 * input (data NULL) gives 0s. */
void      pvg_qzp_read(const pvc_tensor *t, int64_t count, int32_t *out);

#endif
