/* Reference data-movement kernels shared by the shape operators (Transpose, Slice, Expand,
 * Tile, Pad, Concat, Split, Gather*, Scatter*): a dtype-generic strided copy (by element byte
 * size), the index walk of the *Elements operators and element-wise reductions for the
 * scatter operators. Prefix pvk_. */
#ifndef PVK_MOVEMENT_H
#define PVK_MOVEMENT_H

#include "core/core.h"

/* Tile views interleave (repeat, dim) pairs, so a view may have twice the tensor rank. */
#define PVK_VIEW_MAX_RANK (2 * PV_MAX_RANK)

/* A read view of a source buffer: dims of the (contiguous) destination and, per dim, the
 * source stride in elements. Strides may be 0 (broadcast) or negative (reversed slice). */
typedef struct pvk_view {
    int     rank;
    int64_t dims[PVK_VIEW_MAX_RANK];
    int64_t strides[PVK_VIEW_MAX_RANK];
} pvk_view;

/* Row-major element strides of dims into strides. */
void pvk_contig_strides(int rank, const int64_t *dims, int64_t *strides);

/* dst (contiguous, v->dims) = src read through v. src points at the view's first element.
 * esize is 1, 2, 4 or 8. Parallel over rows when pool is given. */
void pvk_copy_view(pvc_pool *pool, void *dst, const void *src, size_t esize, const pvk_view *v);

/* Writes n copies of the esize-byte element at val into dst. */
void pvk_fill(void *dst, const void *val, size_t esize, int64_t n);

/* Memcpy of n bytes split over the pool (for big contiguous copies). */
void pvk_copy_bytes(pvc_pool *pool, void *dst, const void *src, size_t n);

/* rows blocks of chunk bytes: block r from src + r * src_pitch to dst + r * dst_pitch (Concat
 * and Split move blocks between a packed tensor and its slot in a wider one). A single block is
 * one pvk_copy_bytes. */
void pvk_copy_rows(pvc_pool *pool, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                   int64_t rows, size_t chunk);

/* Row-major walk over the positions of an index tensor (dims idims) inside a data tensor (dims
 * ddims, same rank), for GatherElements / ScatterElements: base is the data element offset of
 * the current position with its 'axis' coordinate 0; the element an index value k (in
 * [0, ddims[axis])) selects is base + k * ds[axis]. */
typedef struct pvk_axis_walk {
    int            rank, axis;
    const int64_t *idims;
    int64_t        ds[PV_MAX_RANK];     /* data strides, in elements */
    int64_t        ci[PV_MAX_RANK];     /* current position */
    int64_t        base;
} pvk_axis_walk;

void pvk_axis_walk_begin(pvk_axis_walk *w, int rank, const int64_t *ddims, const int64_t *idims, int axis);
void pvk_axis_walk_next(pvk_axis_walk *w);

/* Scatter reductions (ONNX 'reduction' attribute). */
typedef enum { PVK_RED_NONE = 0, PVK_RED_ADD, PVK_RED_MUL, PVK_RED_MAX, PVK_RED_MIN } pvk_reduction;

/* Parses "none", "add", "mul", "max", "min"; false for anything else. */
bool pvk_reduction_parse(const char *s, pvk_reduction *out);
const char *pvk_reduction_name(pvk_reduction r);

/* *dst = *dst (op) *src for one element of dtype t. Integers are exact (wrapping), bool uses
 * or/and for add/mul, f16/bf16 go through f32. */
void pvk_reduce_elem(void *dst, const void *src, pv_dtype t, pvk_reduction op);

#endif
