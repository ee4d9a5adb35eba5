/* What MatMul and the integer matmuls (MatMulInteger, QLinearMatMul) share (defined in
 * matmul.c): numpy-matmul geometry. A 1-D A gets a unit row dim, a 1-D B a unit column dim, both
 * dropped from the output; the batch dims (all but the last two) broadcast right-aligned. */
#ifndef PVG_OPS_MM_GEOM_H
#define PVG_OPS_MM_GEOM_H

#include "graph/graph.h"

#define PVG_MM_MAXB (PV_MAX_RANK - 2)

typedef struct pvg_mm_geom {
    int64_t M, N, K, nbatch;
    int     brank;                          /* broadcast batch rank */
    int64_t bdims[PVG_MM_MAXB];             /* output batch dims */
    int64_t astr[PVG_MM_MAXB], bstr[PVG_MM_MAXB];   /* per batch dim, in matrices; 0 = broadcast */
    bool    fold;                           /* B unbatched, A fully batched: one GEMM of nbatch*M rows */
} pvg_mm_geom;

/* Fills g and the output dims (odims, *orank) from A and B; fails naming the dims that differ
 * (inner K) or do not broadcast (batch). */
pv_status pvg_mm_geom_infer(pvg_prep *p, const pvc_tensor *A, const pvc_tensor *B, pvg_mm_geom *g,
                            int64_t *odims, int *orank);

#endif
