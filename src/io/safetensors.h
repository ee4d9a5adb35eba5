/* io/safetensors: reading and writing Hugging Face .safetensors files. Prefix pvio_st_.
 *
 * Example (open a checkpoint, check one weight's shape, copy it out as float32):
 *
 *     pvio_st st = {0};
 *     pvc_msg msg;
 *     const pvio_st_entry *e;
 *     static const int64_t want[2] = { 1280, 768 };
 *     if (pvio_st_open("hamer.safetensors", &st, &msg) != PV_OK) { puts(msg.text); return; }
 *     if (pvio_st_expect(&st, "head.proj.weight", 2, want, &e, &msg) == PV_OK) {
 *         float *w = pvc_malloc((size_t)1280 * 768 * sizeof(float));
 *         if (w && pvio_st_read_f32(&st, e, w, &msg) == PV_OK) use(w);
 *         pvc_free(w);
 *     }
 *     printf("format: %s\n", pvio_st_meta(&st, "format") ? pvio_st_meta(&st, "format") : "-");
 *     pvio_st_close(&st);
 *
 * The file: an 8-byte little-endian u64 N, N bytes of JSON (padding spaces allowed), then the
 * data buffer. The JSON object maps each tensor name to {"dtype", "shape", "data_offsets"}
 * (offsets relative to the data buffer); the optional key "__metadata__" maps strings to
 * strings. Read dtypes: F32 F16 BF16 I64 I32 I8 U8 BOOL; the other dtypes of the format (F64,
 * I16, U16, U32, U64, F8_*, ...) are refused with PV_EUNSUPPORTED naming tensor and dtype; any
 * other dtype string is PV_EFORMAT. The header is treated as hostile: a bad length, JSON that
 * is not one object (trailing bytes other than JSON whitespace), duplicate names, a missing or
 * extra field, a shape that is not up to PV_MAX_RANK non-negative integers (or whose byte count
 * overflows), offsets that are not two integers with begin <= end <= data buffer size, a byte
 * range that does not match the shape, overlapping tensors and non-string metadata are
 * PV_EFORMAT with a message naming the tensor, the field and the value. Integers in the header
 * must be exact (at most 2^53). Gaps between tensors and bytes after the last are allowed.
 * The data is never touched by open/parse; the readers convert on demand.
 *
 * Byte order: safetensors is little-endian and so is every host perceive builds for (x86-64,
 * aarch64); safetensors.c refuses to compile on a big-endian target.
 *
 * Ownership: a pvio_st owns its entries, names and metadata strings (pvc_malloc) and, after
 * pvio_st_open, a read-only mapping of the file; pvio_st_parse borrows buf, which must outlive
 * the pvio_st. Entry pointers and strings stay valid until pvio_st_close. On failure every
 * out-param is left zeroed and nothing is leaked. cJSON's own allocations during parsing go to
 * libc's malloc, not perceive's allocator hook.
 */
#ifndef PVIO_SAFETENSORS_H
#define PVIO_SAFETENSORS_H

#include "core/core.h"

#define PVIO_ST_MAX_HEADER (100u * 1000u * 1000u)   /* bytes of JSON header */

/* One tensor. name owned by the pvio_st; begin/end are absolute offsets into the file (or the
 * parsed buffer): the tensor's bytes are base[begin..end), end - begin = numel * dtype size. */
typedef struct pvio_st_entry {
    char    *name;
    pv_dtype dtype;
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    uint64_t begin, end;
} pvio_st_entry;

/* An opened file. e: n entries sorted by name (strcmp order); meta_keys/meta_vals: nmeta
 * pairs in header order; base/size: the whole file (or the parsed buffer). */
typedef struct pvio_st {
    pvio_st_entry  *e;
    int             n;
    char          **meta_keys, **meta_vals;
    int             nmeta;
    const uint8_t  *base;
    uint64_t        size;
    /* private: the mapping pvio_st_open made (NULL after pvio_st_parse) */
    void           *map;
    size_t          map_len;
} pvio_st;

/* Maps path read-only (checkpoints are GBs: nothing is read until a reader asks) and parses
 * the header. Messages start "safetensors '<path>': ". */
pv_status pvio_st_open(const char *path, pvio_st *st, pvc_msg *msg);
/* Parses buf[0..len) (borrowed; must outlive *st). Messages start "safetensors: ". */
pv_status pvio_st_parse(const void *buf, size_t len, pvio_st *st, pvc_msg *msg);
/* Frees everything, unmaps, zeroes *st; accepts a zeroed (or already closed) st and NULL. */
void      pvio_st_close(pvio_st *st);

/* The entry named name (binary search), or NULL. */
const pvio_st_entry *pvio_st_find(const pvio_st *st, const char *name);
/* The metadata value of key, or NULL if absent. Borrowed from st. */
const char *pvio_st_meta(const pvio_st *st, const char *key);

/* Checks that name exists with exactly this shape (rank, dims[0..rank)); *out (may be NULL)
 * gets the entry. PV_EFORMAT "tensor 'x' is missing" / "tensor 'x' has shape [a,b] (want
 * [c,d])". Any dtype passes: the readers check it. */
pv_status pvio_st_expect(const pvio_st *st, const char *name, int rank, const int64_t *dims,
                         const pvio_st_entry **out, pvc_msg *msg);
/* Copies an F32 / F16 / BF16 tensor into dst as numel float32 values (dst holds numel floats).
 * Other dtypes: PV_EFORMAT naming tensor and dtype. Non-finite values are copied as they are
 * (the caller decides). e must be an entry of st. */
pv_status pvio_st_read_f32(const pvio_st *st, const pvio_st_entry *e, float *dst, pvc_msg *msg);
/* Copies an I32 / I64 / I8 / U8 / BOOL tensor into dst as numel int32 values. An I64 value out
 * of int32's range: PV_EFORMAT naming the tensor, the flat index and the value. Other dtypes:
 * PV_EFORMAT naming tensor and dtype. */
pv_status pvio_st_read_i32(const pvio_st *st, const pvio_st_entry *e, int32_t *dst, pvc_msg *msg);

/* ---- writing ------------------------------------------------------------------------------ */
/* Tensors t[0..n): each with a name (distinct, not "__metadata__"; may be empty), dtype F32 F16
 * BF16 I64 I32 I8 U8 BOOL, rank 0..PV_MAX_RANK, contiguous (all-zero or row-major strides),
 * data non-NULL unless empty. Their data is laid out in the given order, one after the other;
 * the header lists "__metadata__" first (when nmeta > 0), then the tensors in the given order,
 * and is padded with spaces to a multiple of 8 bytes. meta_keys/meta_vals: nmeta strings (keys
 * distinct, not NULL; nmeta may be 0 with NULL arrays). Bad arguments: PV_EINPUT naming them. */
/* Streams the file to path (created or truncated); a partly written file is removed. */
pv_status pvio_st_write_file(const char *path, const pvc_tensor *t, int n,
                             const char *const *meta_keys, const char *const *meta_vals, int nmeta,
                             pvc_msg *msg);
/* The same bytes into a fresh *buf (pvc_malloc) of *len bytes (tests, fuzzing, small files). */
pv_status pvio_st_serialize(const pvc_tensor *t, int n, const char *const *meta_keys,
                            const char *const *meta_vals, int nmeta, void **buf, size_t *len,
                            pvc_msg *msg);

#endif
