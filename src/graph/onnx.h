/* ONNX-specific entry points beside the IR import: tensor files (the backend test data's
 * TensorProto .pb files) and `perceive onnx fill`. */
#ifndef PVG_ONNX_H
#define PVG_ONNX_H

#include "graph/graph.h"

/* Decodes one serialized TensorProto; out->data via pvc_malloc_aligned; *name (may be NULL)
 * via pvc_malloc. */
pv_status pvg_onnx_tensor_parse(const void *buf, size_t len, pvc_tensor *out, char **name,
                                pvc_msg *msg);

/* Writes a complete copy of IN with every float initializer that has no data filled with
 * seeded random values (scaled by the consuming operator's fan-in), and initializers larger
 * than ext_threshold bytes stored as external data in OUT + ".data". */
typedef struct pvg_fill_stats { int filled; int64_t elements; int external; } pvg_fill_stats;
pv_status pvg_onnx_fill(const char *in_path, const char *out_path, uint64_t seed,
                        size_t ext_threshold, pvg_fill_stats *st, pvc_msg *msg);

/* The same from a serialized model in memory (in_name is used in messages only). */
pv_status pvg_onnx_fill_buffer(const void *buf, size_t len, const char *in_name, const char *out_path,
                               uint64_t seed, size_t ext_threshold, pvg_fill_stats *st, pvc_msg *msg);

/* A bundle that knows its architecture fills some tensors itself (structural constants such
 * as grids and pooling matrices): the hook gets each float32 tensor without data before the
 * random fill, with its first consumer, and returns true when it wrote all numel floats. */
typedef struct pvg_fill_site {
    const char    *name;
    const int64_t *dims;
    int            rank;
    bool           constant_node;   /* a Constant node's tensor (false: an initializer) */
    const char    *consumer_op, *consumer_name;
    int            consumer_slot;   /* input index at the consumer, -1 none */
} pvg_fill_site;
typedef bool (*pvg_fill_hook)(void *ud, const pvg_fill_site *site, float *out);
pv_status pvg_onnx_fill_buffer_hook(const void *buf, size_t len, const char *in_name, const char *out_path,
                                    uint64_t seed, size_t ext_threshold, pvg_fill_hook hook, void *hook_ud,
                                    pvg_fill_stats *st, pvc_msg *msg);

/* Reads a whole file into a pvc_malloc'ed buffer (NUL-terminated, length excludes it). */
pv_status pvg_read_file(const char *path, void **buf, size_t *len, pvc_msg *msg);

#endif
