/* Point clouds from headerless binaries (KITTI, nuScenes, NVIDIA 10-sweep float16) and .npy,
 * the format choice (hint, file name, content), file reading, and the cloud helpers. */
#include "io/points.h"
#include "io/io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* x, y, z, intensity; column 4 is "ring" (nuScenes f32) or "time_lag" (NVIDIA f16); then c5.. */
static void default_names(pvio_cloud *c, pv_dtype dt)
{
    static const char *const base[4] = { "x", "y", "z", "intensity" };
    for (int i = 0; i < c->ncols; i++) {
        if (i < 4) snprintf(c->names[i], PVIO_CLOUD_NAME_LEN, "%s", base[i]);
        else if (i == 4) snprintf(c->names[i], PVIO_CLOUD_NAME_LEN, "%s",
                                  dt == PV_F16 ? "time_lag" : "ring");
        else snprintf(c->names[i], PVIO_CLOUD_NAME_LEN, "c%d", i);
    }
}

static void set_shape(pvio_cloud *c, int64_t n, int ncols, float *data)
{
    static const float identity[7] = { 0, 0, 0, 1, 0, 0, 0 };
    c->n = n;
    c->ncols = ncols;
    c->data = data;
    c->width = n;
    c->height = 1;
    memcpy(c->viewpoint, identity, sizeof identity);
}

/* what names the layout in messages ("kitti", "pointbin", ...). */
static pv_status pointbin_parse(const void *buf, size_t len, int ncols, pv_dtype dt,
                                const char *what, pvio_cloud *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "%s: NULL buffer of %zu bytes", what, len);
    if (ncols < 3 || ncols > PVIO_CLOUD_MAX_COLS)
        return pvc_fail(msg, PV_EINPUT, "%s: ncols %d is outside 3..%d", what, ncols,
                        PVIO_CLOUD_MAX_COLS);
    if (dt != PV_F32 && dt != PV_F16)
        return pvc_fail(msg, PV_EINPUT, "%s: dtype %s is not supported (float32 and float16 are)",
                        what, (unsigned)dt < PV_DTYPE_COUNT ? pv_dtype_name(dt) : "(invalid)");
    size_t item = dt == PV_F32 ? 4 : 2, row = item * (size_t)ncols;
    if (len % row != 0) {
        char alt[160] = "";
        if (strcmp(what, "kitti") == 0 && len % 20 == 0)
            snprintf(alt, sizeof alt, "; it is a multiple of 20, as nuScenes float32 x5 rows "
                     "would be (hint \"nuscenes\")");
        else if (strcmp(what, "nuscenes") == 0 && len % 16 == 0)
            snprintf(alt, sizeof alt, "; it is a multiple of 16, as KITTI float32 x4 rows would "
                     "be (hint \"kitti\")");
        return pvc_fail(msg, PV_EFORMAT, "%s: %zu bytes is not a multiple of the %zu-byte row "
                        "(%d %s values per point)%s", what, len, row, ncols, pv_dtype_name(dt),
                        alt);
    }
    int64_t n = (int64_t)(len / row);
    if (n > PVIO_MAX_POINTS)
        return pvc_fail(msg, PV_EUNSUPPORTED, "%s: %lld points is over the %lld-point limit", what,
                        (long long)n, (long long)PVIO_MAX_POINTS);
    float *data = pvc_malloc_aligned((size_t)n * (size_t)ncols * sizeof(float));
    if (!data) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory for %lld points", what,
                               (long long)n);
    const unsigned char *p = buf;
    size_t nv = (size_t)n * (size_t)ncols;
    for (size_t i = 0; i < nv; i++, p += item) {        /* little-endian on any host */
        if (dt == PV_F16) {
            data[i] = pvc_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
        } else {
            uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            memcpy(&data[i], &w, 4);
        }
    }
    set_shape(out, n, ncols, data);
    default_names(out, dt);
    return PV_OK;
}

pv_status pvio_pointbin_parse(const void *buf, size_t len, int ncols, pv_dtype dtype,
                              pvio_cloud *out, pvc_msg *msg)
{
    return pointbin_parse(buf, len, ncols, dtype, "pointbin", out, msg);
}

pv_status pvio_cloud_npy_parse(const void *buf, size_t len, pvio_cloud *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    pvc_tensor t;
    pv_status s = pvio_npy_parse(buf, len, &t, msg);
    if (s != PV_OK) return s;
    char sh[128];
    if (t.rank != 2 || t.dims[1] < 3 || t.dims[1] > PVIO_CLOUD_MAX_COLS) {
        s = pvc_fail(msg, PV_EFORMAT, "npy cloud: shape %s is not (N, C) with 3 <= C <= %d",
                     pvc_shape_str(&t, sh, sizeof sh), PVIO_CLOUD_MAX_COLS);
        goto fail;
    }
    if (t.dtype != PV_F32 && t.dtype != PV_F16 && t.dtype != PV_BF16) {
        s = pvc_fail(msg, PV_EUNSUPPORTED, "npy cloud: dtype %s is not supported (float32 and "
                     "float16 are)", pv_dtype_name(t.dtype));
        goto fail;
    }
    if (t.dims[0] > PVIO_MAX_POINTS) {
        s = pvc_fail(msg, PV_EUNSUPPORTED, "npy cloud: %lld points is over the %lld-point limit",
                     (long long)t.dims[0], (long long)PVIO_MAX_POINTS);
        goto fail;
    }
    int64_t n = t.dims[0];
    int ncols = (int)t.dims[1];
    float *data = t.data;                               /* float32: take the block as is */
    if (t.dtype != PV_F32) {
        size_t nv = (size_t)n * (size_t)ncols;
        if (!(data = pvc_malloc_aligned(nv * sizeof(float)))) {
            s = pvc_fail(msg, PV_ENOMEM, "npy cloud: out of memory for %lld points",
                         (long long)n);
            goto fail;
        }
        const uint16_t *h = t.data;
        for (size_t i = 0; i < nv; i++)
            data[i] = t.dtype == PV_F16 ? pvc_f16_to_f32(h[i]) : pvc_bf16_to_f32(h[i]);
        pvio_tensor_free_data(&t);
    }
    set_shape(out, n, ncols, data);
    default_names(out, t.dtype == PV_F16 ? PV_F16 : PV_F32);
    return PV_OK;
fail:
    pvio_tensor_free_data(&t);
    return s;
}

/* ---- format choice ------------------------------------------------------------------------ */
static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k) return false;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)s[n - k + i]) != suffix[i]) return false;
    return true;
}

static bool starts_with(const void *buf, size_t len, const char *p)
{
    size_t k = strlen(p);
    return len >= k && memcmp(buf, p, k) == 0;
}

/* Hint from the name, then from the content; NULL when neither tells. */
static const char *sniff(const void *buf, size_t len, const char *name)
{
    if (name) {
        if (ends_with(name, ".pcd")) return "pcd";
        if (ends_with(name, ".pcd.bin")) return "nuscenes";
        if (ends_with(name, ".bin")) return "kitti";
        if (ends_with(name, ".npy")) return "npy";
    }
    if (starts_with(buf, len, "\x93NUMPY")) return "npy";
    if (starts_with(buf, len, "#") || starts_with(buf, len, "VERSION") ||
        starts_with(buf, len, "FIELDS"))
        return "pcd";
    return NULL;
}

pv_status pvio_cloud_parse(const void *buf, size_t len, const char *hint, const char *name,
                           pvio_cloud *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "cloud: NULL buffer of %zu bytes", len);
    const char *h = hint ? hint : sniff(buf, len, name);
    if (!h)
        return pvc_fail(msg, PV_EINPUT, "cloud: cannot tell the format of %s%s%s (not named "
                        ".pcd, .bin, .pcd.bin or .npy, and no PCD or npy header); give a hint: "
                        "pcd, kitti, nuscenes, f16x5 or npy", name ? "'" : "",
                        name ? name : "an unnamed buffer", name ? "'" : "");
    if (strcmp(h, "pcd") == 0) return pvio_pcd_parse(buf, len, out, msg);
    if (strcmp(h, "npy") == 0) return pvio_cloud_npy_parse(buf, len, out, msg);
    if (strcmp(h, "kitti") == 0) return pointbin_parse(buf, len, 4, PV_F32, "kitti", out, msg);
    if (strcmp(h, "nuscenes") == 0)
        return pointbin_parse(buf, len, 5, PV_F32, "nuscenes", out, msg);
    if (strcmp(h, "f16x5") == 0) return pointbin_parse(buf, len, 5, PV_F16, "f16x5", out, msg);
    char b[40];
    snprintf(b, sizeof b, "%s", h);
    for (char *c = b; *c; c++) if (!isprint((unsigned char)*c)) *c = '?';
    return pvc_fail(msg, PV_EINPUT, "cloud: unknown format hint '%s' (pcd, kitti, nuscenes, f16x5 "
                    "and npy are known)", b);
}

pv_status pvio_cloud_read_file(const char *path, const char *hint, pvio_cloud *out,
                               pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (!path) return pvc_fail(msg, PV_EINPUT, "cloud: NULL path");
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EINPUT, "'%s': cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return pvc_fail(msg, PV_EINPUT, "'%s': not a regular file", path);
    }
    if ((uint64_t)st.st_size > PVIO_MAX_POINT_FILE_BYTES) {
        fclose(f);
        return pvc_fail(msg, PV_EUNSUPPORTED, "'%s': %lld bytes is over the %llu-byte limit", path,
                        (long long)st.st_size, (unsigned long long)PVIO_MAX_POINT_FILE_BYTES);
    }
    size_t len = (size_t)st.st_size;
    unsigned char *buf = pvc_malloc(len ? len : 1);
    if (!buf) {
        fclose(f);
        return pvc_fail(msg, PV_ENOMEM, "'%s': out of memory for %zu bytes", path, len);
    }
    size_t got = fread(buf, 1, len, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    pv_status s;
    if (got != len) {
        s = pvc_fail(msg, PV_EINPUT, "'%s': read %zu of %zu bytes%s%s", path, got, len,
                     err ? ": " : "", err ? strerror(err) : "");
    } else {
        pvc_msg inner;
        if ((s = pvio_cloud_parse(buf, len, hint, path, out, &inner)) != PV_OK)
            s = pvc_fail(msg, s, "'%s': %s", path, inner.text);
    }
    pvc_free(buf);
    return s;
}

/* ---- helpers ------------------------------------------------------------------------------ */
void pvio_cloud_free(pvio_cloud *c)
{
    if (!c) return;
    pvc_free_aligned(c->data);
    memset(c, 0, sizeof *c);
}

int pvio_cloud_col(const pvio_cloud *c, const char *name)
{
    for (int i = 0; c && name && i < c->ncols && i < PVIO_CLOUD_MAX_COLS; i++)
        if (strncmp(c->names[i], name, PVIO_CLOUD_NAME_LEN) == 0) return i;
    return -1;
}

pv_status pvio_cloud_set_name(pvio_cloud *c, int col, const char *name, pvc_msg *msg)
{
    if (!c || col < 0 || col >= c->ncols)
        return pvc_fail(msg, PV_EINPUT, "cloud: column %d is outside 0..%d", col,
                        c ? c->ncols - 1 : -1);
    if (!name || !name[0] || strlen(name) >= PVIO_CLOUD_NAME_LEN)
        return pvc_fail(msg, PV_EINPUT, "cloud: a column name must have 1..%d characters",
                        PVIO_CLOUD_NAME_LEN - 1);
    int other = pvio_cloud_col(c, name);
    if (other >= 0 && other != col)
        return pvc_fail(msg, PV_EINPUT, "cloud: column %d is already named '%s'", other, name);
    snprintf(c->names[col], PVIO_CLOUD_NAME_LEN, "%s", name);
    return PV_OK;
}

void pvio_cloud_drop_nonfinite(pvio_cloud *c, int64_t *dropped)
{
    int64_t kept = 0, n = c ? c->n : 0;
    int nc = c ? c->ncols : 0;
    for (int64_t i = 0; i < n; i++) {
        const float *p = c->data + i * nc;
        bool ok = true;
        for (int k = 0; k < nc; k++) ok &= isfinite(p[k]) != 0;
        if (!ok) continue;
        if (kept != i) memmove(c->data + kept * nc, p, (size_t)nc * sizeof(float));
        kept++;
    }
    if (dropped) *dropped = n - kept;
    if (c && kept != n) {
        c->n = kept;
        c->width = kept;
        c->height = 1;
    }
}
