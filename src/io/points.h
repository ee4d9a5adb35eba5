/* io/points: point-cloud files. Prefix pvio_ (part of the io module).
 *
 * Decodes lidar point clouds into one plain float table. Example (any supported file, then
 * drop NaN/Inf rows and find the intensity column):
 *
 *     pvio_cloud c = {0};
 *     pvc_msg msg;
 *     if (pvio_cloud_read_file("scan.pcd", NULL, &c, &msg) != PV_OK) { puts(msg.text); return; }
 *     int64_t dropped;
 *     pvio_cloud_drop_nonfinite(&c, &dropped);
 *     int ci = pvio_cloud_col(&c, "intensity");           // -1 when the file has none
 *     for (int64_t i = 0; i < c.n; i++) {
 *         const float *p = c.data + i * c.ncols;          // p[0], p[1], p[2] are x, y, z
 *         ...
 *     }
 *     pvio_cloud_free(&c);
 *
 * Formats
 *   PCD (pvio_pcd_parse): VERSION 0.7/.7, 0.6/.6, 0.5/.5 (or no VERSION line); FIELDS, SIZE,
 *     TYPE (F 2/4/8, I 1/2/4/8, U 1/2/4/8; F 2 is IEEE half), COUNT (default 1), WIDTH,
 *     HEIGHT, VIEWPOINT, POINTS, DATA ascii | binary | binary_compressed (LZF, field-major).
 *     Values are little-endian in binary files. A field with COUNT k > 1 becomes k columns
 *     "name_0" .. "name_<k-1>"; fields named "_" are padding and are skipped. x, y and z must
 *     be present, with COUNT 1. Bytes after binary / binary_compressed data are ignored
 *     (PCL pads such files to a page with zeros); ascii data may be followed by white space
 *     only, and blank lines are skipped. ascii F values accept nan/inf (PCL writes "nan"
 *     for missing returns); ascii I/U values must be decimal integers in the type's range.
 *   Raw point binaries (pvio_pointbin_parse): headerless little-endian rows of ncols float32
 *     or float16 values; KITTI .bin is f32 x4, nuScenes .pcd.bin is f32 x5, the NVIDIA
 *     10-sweep CenterPoint layout is f16 x5.
 *   .npy (pvio_cloud_npy_parse): a rank-2 (N, C) array of float32 or float16,
 *     3 <= C <= PVIO_CLOUD_MAX_COLS.
 *   Default column names for raw binaries and .npy: x, y, z, intensity, then column 4 is
 *     "ring" for float32 (nuScenes .pcd.bin) and "time_lag" for float16 (NVIDIA 10-sweep),
 *     and columns 5.. are "c5", "c6", ... Rename with pvio_cloud_set_name.
 *
 * Cloud invariants after any successful read: ncols >= 3, names[0..2] are "x", "y", "z"
 * (PCD fields are reordered so; the others keep file order), names are distinct, non-empty,
 * NUL-terminated; width * height == n (height 1 unless the PCD is organized); data is
 * non-NULL (even for n == 0). Conversions to float are exact for F4/F2/I1/I2/U1/U2 and
 * round to nearest for F8 (out-of-range values become +-inf), I4/U4/I8/U8 (above 2^24).
 *
 * Limits: at most PVIO_MAX_POINTS points, PVIO_CLOUD_MAX_COLS output columns,
 * PVIO_MAX_CLOUD_BYTES of float data, PVIO_PCD_MAX_FIELDS PCD fields, a PCD header within
 * PVIO_PCD_MAX_HEADER bytes, files of at most PVIO_MAX_POINT_FILE_BYTES. Every parser treats
 * its input as hostile and never reads outside buf[0..len); what it allocates is bounded by
 * the input: at most 4 x len bytes of floats (ascii: 2 x len), and for binary_compressed
 * the inflated data (LZF expands at most 88x, checked before allocating) plus 4x that.
 * Errors: PV_EFORMAT for a malformed file (the message names the keyword or field and the
 * value: "pcd: FIELDS has 4 names but SIZE has 3", "pcd: POINTS 65536 but WIDTH*HEIGHT =
 * 100 (100 x 1)"), PV_EUNSUPPORTED for a well-formed file past a limit or using a feature
 * not handled (VERSION 0.8, DATA binary_lzf, more than 16 columns, a 40-character field
 * name), PV_EINPUT for bad arguments, an unknown hint, an unreadable path, PV_ENOMEM.
 * Messages start with "pcd: ", "npy: ", "npy cloud: ", "kitti: ", "nuscenes: ", "f16x5: ",
 * "pointbin: " or "cloud: "; pvio_cloud_read_file puts "'<path>': " before them.
 *
 * Ownership: buf and names are borrowed for the call. A read fills *out, which must not own
 * data (zero it first or pvio_cloud_free it); out->data (pvc_malloc_aligned) then belongs to
 * the caller and is released with pvio_cloud_free (or pvc_free_aligned). On failure *out is left zeroed and nothing is leaked.
 * Not thread-safe per cloud; distinct clouds may be read concurrently.
 */
#ifndef PVIO_POINTS_H
#define PVIO_POINTS_H

#include "core/core.h"

/* 16 columns: Ouster clouds have 9 fields, Autoware's PointXYZIRCAEDT 10. */
#define PVIO_CLOUD_MAX_COLS       16
#define PVIO_CLOUD_NAME_LEN       32                        /* with the NUL */
#define PVIO_MAX_POINTS           ((int64_t)1 << 27)
#define PVIO_MAX_CLOUD_BYTES      ((uint64_t)4 << 30)       /* n * ncols * 4 */
#define PVIO_MAX_POINT_FILE_BYTES ((uint64_t)4 << 30)
#define PVIO_PCD_MAX_FIELDS       64                        /* FIELDS entries, padding included */
#define PVIO_PCD_MAX_HEADER       (64u << 10)

typedef struct pvio_cloud {
    int64_t n;                                  /* points (rows) */
    int     ncols;                              /* columns per point */
    char    names[PVIO_CLOUD_MAX_COLS][PVIO_CLOUD_NAME_LEN];
    float  *data;                               /* n x ncols, row-major; owned, aligned */
    int64_t width, height;                      /* PCD organization; (n, 1) when unorganized */
    /* PCD VIEWPOINT tx ty tz qw qx qy qz: recorded, NOT applied to the points;
     * (0 0 0 1 0 0 0) for files that have none. */
    float   viewpoint[7];
} pvio_cloud;

/* ---- decoders (buf[0..len) borrowed; *out filled as described above) ---------------------- */
pv_status pvio_pcd_parse(const void *buf, size_t len, pvio_cloud *out, pvc_msg *msg);
/* Raw rows: ncols in 3..PVIO_CLOUD_MAX_COLS, dtype PV_F32 or PV_F16; len must be a multiple
 * of ncols * dtype size. */
pv_status pvio_pointbin_parse(const void *buf, size_t len, int ncols, pv_dtype dtype,
                              pvio_cloud *out, pvc_msg *msg);
pv_status pvio_cloud_npy_parse(const void *buf, size_t len, pvio_cloud *out, pvc_msg *msg);

/* Any format in memory. hint: "pcd", "kitti" (f32 x4), "nuscenes" (f32 x5), "f16x5", "npy",
 * or NULL to decide from name (may be NULL): ".pcd" -> pcd, ".pcd.bin" -> nuscenes,
 * ".bin" -> kitti, ".npy" -> npy (case-insensitive), and failing that from the content
 * (the npy magic, or a PCD header's first keyword); raw binaries have no magic, so an
 * unnamed headerless buffer needs a hint. */
pv_status pvio_cloud_parse(const void *buf, size_t len, const char *hint, const char *name,
                           pvio_cloud *out, pvc_msg *msg);
/* Reads the whole file (a regular file of at most PVIO_MAX_POINT_FILE_BYTES) and calls
 * pvio_cloud_parse with the path as name; messages start with the path. */
pv_status pvio_cloud_read_file(const char *path, const char *hint, pvio_cloud *out,
                               pvc_msg *msg);

/* ---- helpers ------------------------------------------------------------------------------ */
/* Frees c->data (pvc_free_aligned) and zeroes *c; accepts a zeroed cloud and NULL. */
void pvio_cloud_free(pvio_cloud *c);
/* Index of the column named name, or -1. */
int  pvio_cloud_col(const pvio_cloud *c, const char *name);
/* Renames column col (PV_EINPUT for a bad index, an empty or too long name, or a name another
 * column already has). */
pv_status pvio_cloud_set_name(pvio_cloud *c, int col, const char *name, pvc_msg *msg);
/* Removes, in place and keeping order, every point with a NaN or Inf in any column (PCL
 * writes NaN x/y/z for missing returns). Every column counts, so a PCD packed-colour field
 * ("rgb" stored as F 4, whose bits can read as NaN) makes this drop those points. When a
 * point is dropped an organized cloud becomes unorganized (width = n, height = 1). *dropped
 * (may be NULL) receives the count. The data block is not reallocated; c may be NULL. */
void pvio_cloud_drop_nonfinite(pvio_cloud *c, int64_t *dropped);

#endif
