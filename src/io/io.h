/* io: reading and writing array files. Prefix pvio_.
 *
 * .npy (NumPy's array format, versions 1.0 / 2.0 / 3.0) and .npz (a zip of name.npy entries,
 * STORED or DEFLATED). Example (read an npz, look one array up, write it back as .npy):
 *
 *     pvio_arrays arrs = {0};
 *     pvc_msg msg;
 *     if (pvio_npz_read_file("in.npz", &arrs, &msg) != PV_OK) { puts(msg.text); return; }
 *     const pvio_array *x = pvio_arrays_find(&arrs, "x");
 *     if (x) pvio_npy_write_file("x.npy", &x->t, &msg);
 *     pvio_arrays_free(&arrs);
 *
 * dtypes read: '<f4' '<f2' '<i8' '<i4' '|i1' '|u1' '|b1', in either byte order (converted to
 * the host's), C or Fortran order (Fortran data is transposed into C order on read). Anything
 * else (float64, structured, object, ...) is refused with PV_EUNSUPPORTED naming the dtype.
 * Shapes: rank 0..PV_MAX_RANK, every array at most PVIO_MAX_ARRAY_BYTES.
 * Writing emits version 1.0 headers, host byte order, C order; bfloat16 has no NumPy dtype
 * and is refused. Every parser treats its input as hostile: a malformed file gives
 * PV_EFORMAT (or PV_EUNSUPPORTED) and a message naming what is wrong, never an over-read.
 *
 * Ownership: inputs are borrowed for the call. Tensors returned by the readers are contiguous
 * (all-zero strides), name NULL (npy) or the entry name (npz), and own their data, allocated
 * with pvc_malloc_aligned: release with pvio_tensor_free_data / pvio_arrays_free. On failure
 * every out-param is left zeroed and nothing is leaked.
 */
#ifndef PVIO_IO_H
#define PVIO_IO_H

#include "core/core.h"

#define PVIO_MAX_ARRAY_BYTES ((uint64_t)1 << 40)        /* one array: 1 TiB */
#define PVIO_MAX_NPZ_BYTES   ((uint64_t)8 << 30)        /* all entries of one npz, uncompressed */
#define PVIO_MAX_HEADER      (1u << 20)                 /* npy header dict bytes */

/* One named array: name owned (pvc_malloc), t.data owned (pvc_malloc_aligned), t.name == name. */
typedef struct pvio_array { char *name; pvc_tensor t; } pvio_array;
/* A set of arrays (an npz's entries, in archive order). a owned (pvc_malloc). */
typedef struct pvio_arrays { pvio_array *a; int n; } pvio_arrays;

/* ---- npy ---------------------------------------------------------------------------------- */
/* Parses one .npy image buf[0..len) into *out; out->data is allocated (pvc_malloc_aligned).
 * The image must end where the array's data ends (trailing bytes are an error). */
pv_status pvio_npy_parse(const void *buf, size_t len, pvc_tensor *out, pvc_msg *msg);
/* Serializes t (any strides, host byte order) into a fresh *buf (pvc_malloc) of *len bytes. */
pv_status pvio_npy_serialize(const pvc_tensor *t, void **buf, size_t *len, pvc_msg *msg);
pv_status pvio_npy_read_file(const char *path, pvc_tensor *out, pvc_msg *msg);
/* Writes (creates or truncates) path; a partly written file is removed on failure. */
pv_status pvio_npy_write_file(const char *path, const pvc_tensor *t, pvc_msg *msg);

/* Frees t->data (pvc_free_aligned) and sets it NULL; accepts NULL data. */
void pvio_tensor_free_data(pvc_tensor *t);

/* A byte stream of known total size, for reading .npy from memory, files and zip entries
 * without first copying the whole image. read() stores up to n bytes at dst and the count in
 * *got; *got < n only at the end of the stream. It returns PV_OK or an error with msg set. */
typedef struct pvio_reader {
    pv_status (*read)(void *ctx, void *dst, size_t n, size_t *got, pvc_msg *msg);
    void     *ctx;
    uint64_t  size;     /* bytes the stream claims to hold; the image must be exactly this long */
} pvio_reader;

/* Reads one .npy image from r. what names the source in messages ("npy", "npz entry 'x'"). */
pv_status pvio_npy_read(const pvio_reader *r, const char *what, pvc_tensor *out, pvc_msg *msg);

/* ---- npz ---------------------------------------------------------------------------------- */
/* Entries must be named "<name>.npy"; the names in *out have the suffix removed. Duplicate
 * names, other entries, encryption and compression other than STORED/DEFLATED are refused;
 * all entries together may hold at most PVIO_MAX_NPZ_BYTES uncompressed. */
pv_status pvio_npz_parse(const void *buf, size_t len, pvio_arrays *out, pvc_msg *msg);
pv_status pvio_npz_read_file(const char *path, pvio_arrays *out, pvc_msg *msg);
/* Writes arrs->a[i].t as "<arrs->a[i].name>.npy" (names non-empty and distinct), DEFLATED
 * when deflate, else STORED. *buf is pvc_malloc'ed. */
pv_status pvio_npz_serialize(const pvio_arrays *arrs, bool deflate, void **buf, size_t *len,
                             pvc_msg *msg);
pv_status pvio_npz_write_file(const char *path, const pvio_arrays *arrs, bool deflate,
                              pvc_msg *msg);

/* The array named name, or NULL. */
const pvio_array *pvio_arrays_find(const pvio_arrays *a, const char *name);
/* Frees every name, every data block and the array, then zeroes *a; accepts a zeroed set. */
void pvio_arrays_free(pvio_arrays *a);

#endif
