/* .npz reading and writing through libzip. Reading checks every entry (name, method, sizes
 * against the total limit) before allocating any array, then streams each entry into
 * pvio_npy_read, which holds it to the size the zip directory declares; reading to the end
 * lets libzip verify the CRC. Writing serializes each array to .npy bytes and lets libzip
 * store or deflate them into an in-memory archive. */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#define NPZ_MAX_ENTRIES (1 << 20)

/* The end-of-central-directory record of an archive with no entries (libzip writes nothing
 * for one, and reads an empty source as one). */
static const unsigned char empty_zip[22] = { 'P', 'K', 5, 6 };

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Finds a repeated name among a[0..n) by sorting pointers. *dup = NULL when all differ. */
static pv_status find_duplicate(const pvio_array *a, int n, const char **dup, pvc_msg *msg)
{
    *dup = NULL;
    if (n < 2) return PV_OK;
    const char **v = pvc_malloc((size_t)n * sizeof *v);
    if (!v) return pvc_fail(msg, PV_ENOMEM, "npz: out of memory checking names");
    for (int i = 0; i < n; i++) v[i] = a[i].name;
    qsort(v, (size_t)n, sizeof *v, cmp_names);
    for (int i = 1; i < n && !*dup; i++) if (strcmp(v[i - 1], v[i]) == 0) *dup = v[i];
    pvc_free(v);
    return PV_OK;
}

static pv_status zip_status(int code)
{
    return code == ZIP_ER_MEMORY ? PV_ENOMEM : PV_EFORMAT;
}

/* ---- reading ------------------------------------------------------------------------------ */
typedef struct zip_src { zip_file_t *zf; const char *what; } zip_src;

static pv_status zip_read(void *ctx, void *dst, size_t n, size_t *got, pvc_msg *msg)
{
    zip_src *z = ctx;
    zip_int64_t k = zip_fread(z->zf, dst, n);
    if (k < 0) {
        zip_error_t *e = zip_file_get_error(z->zf);
        return pvc_fail(msg, zip_status(zip_error_code_zip(e)), "%s: %s", z->what,
                        zip_error_strerror(e));
    }
    *got = (size_t)k;
    return PV_OK;
}

/* Checks entry i and returns its name without ".npy" (pvc_malloc) and its stat. */
static pv_status check_entry(zip_t *za, int i, zip_stat_t *st, char **name, pvc_msg *msg)
{
    const zip_uint64_t need = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_METHOD;
    zip_stat_init(st);
    if (zip_stat_index(za, (zip_uint64_t)i, 0, st) != 0 || (st->valid & need) != need)
        return pvc_fail(msg, PV_EFORMAT, "npz: entry %d: %s", i, zip_strerror(za));
    size_t n = strlen(st->name);
    if (n < 4 || strcmp(st->name + n - 4, ".npy") != 0)
        return pvc_fail(msg, PV_EFORMAT, "npz: entry '%s' is not a .npy file", st->name);
    if ((st->valid & ZIP_STAT_ENCRYPTION_METHOD) && st->encryption_method != ZIP_EM_NONE)
        return pvc_fail(msg, PV_EUNSUPPORTED, "npz: entry '%s' is encrypted", st->name);
    if (st->comp_method != ZIP_CM_STORE && st->comp_method != ZIP_CM_DEFLATE)
        return pvc_fail(msg, PV_EUNSUPPORTED, "npz: entry '%s' uses compression method %d (only "
                        "stored and deflated are supported)", st->name, (int)st->comp_method);
    if (!(*name = pvc_malloc(n - 3))) return pvc_fail(msg, PV_ENOMEM, "npz: out of memory");
    memcpy(*name, st->name, n - 4);
    (*name)[n - 4] = '\0';
    return PV_OK;
}

static pv_status read_entry(zip_t *za, int i, const zip_stat_t *st, pvio_array *a, pvc_msg *msg)
{
    char what[PVC_MSG_LEN / 2];
    snprintf(what, sizeof what, "npz entry '%s'", a->name);
    zip_file_t *zf = zip_fopen_index(za, (zip_uint64_t)i, 0);
    if (!zf) return pvc_fail(msg, zip_status(zip_error_code_zip(zip_get_error(za))), "%s: %s",
                             what, zip_strerror(za));
    zip_src z = { zf, what };
    pvio_reader r = { zip_read, &z, st->size };
    pv_status s = pvio_npy_read(&r, what, &a->t, msg);
    if (zip_fclose(zf) != 0 && s == PV_OK) {
        pvio_tensor_free_data(&a->t);
        s = pvc_fail(msg, PV_EFORMAT, "%s: closing the entry failed", what);
    }
    a->t.name = a->name;
    return s;
}

static pv_status read_archive(zip_t *za, pvio_arrays *out, pvc_msg *msg)
{
    pvio_arrays r = { NULL, 0 };
    pv_status s = PV_OK;
    zip_int64_t n = zip_get_num_entries(za, 0);
    if (n < 0) return pvc_fail(msg, PV_EFORMAT, "npz: %s", zip_strerror(za));
    if (n > NPZ_MAX_ENTRIES)
        return pvc_fail(msg, PV_EUNSUPPORTED, "npz: %lld entries, more than the %d supported",
                        (long long)n, NPZ_MAX_ENTRIES);
    if (n > 0 && !(r.a = pvc_calloc((size_t)n, sizeof *r.a)))
        return pvc_fail(msg, PV_ENOMEM, "npz: out of memory for %lld entries", (long long)n);

    /* Pass 1: names, methods and the size budget, before any array is allocated. */
    uint64_t total = 0;
    zip_stat_t st;
    for (int i = 0; i < (int)n; i++) {
        if ((s = check_entry(za, i, &st, &r.a[i].name, msg)) != PV_OK) goto fail;
        r.n = i + 1;
        total += PVC_MIN(st.size, PVIO_MAX_NPZ_BYTES + 1);   /* cannot wrap */
        if (total > PVIO_MAX_NPZ_BYTES) {
            s = pvc_fail(msg, PV_EUNSUPPORTED, "npz: entries up to '%s' hold more than %llu bytes "
                         "uncompressed (the limit)", st.name,
                         (unsigned long long)PVIO_MAX_NPZ_BYTES);
            goto fail;
        }
    }
    const char *dup;
    if ((s = find_duplicate(r.a, r.n, &dup, msg)) != PV_OK)
        goto fail;
    if (dup) {
        s = pvc_fail(msg, PV_EFORMAT, "npz: the entry '%s.npy' appears twice", dup);
        goto fail;
    }

    /* Pass 2: the arrays. */
    for (int i = 0; i < r.n; i++) {
        zip_stat_init(&st);
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) != 0) {
            s = pvc_fail(msg, PV_EFORMAT, "npz: entry %d: %s", i, zip_strerror(za));
            goto fail;
        }
        if ((s = read_entry(za, i, &st, &r.a[i], msg)) != PV_OK) goto fail;
    }
    *out = r;
    return PV_OK;
fail:
    pvio_arrays_free(&r);
    return s;
}

pv_status pvio_npz_parse(const void *buf, size_t len, pvio_arrays *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "npz: NULL buffer of %zu bytes", len);
    /* libzip takes an empty source for an empty archive; a real one has its 22-byte trailer */
    if (len < sizeof empty_zip)
        return pvc_fail(msg, PV_EFORMAT, "npz: %zu bytes is too short for a zip archive", len);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(buf, len, 0, &ze);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze) : NULL;
    if (!za) {
        int code = zip_error_code_zip(&ze);
        pv_status s = pvc_fail(msg, zip_status(code), "npz: not a readable zip archive: %s%s",
                               zip_error_strerror(&ze),
                               code == ZIP_ER_EXISTS ? " (two entries share a name)" : "");
        if (src) zip_source_free(src);
        zip_error_fini(&ze);
        return s;
    }
    zip_error_fini(&ze);
    pv_status s = read_archive(za, out, msg);
    zip_discard(za);
    return s;
}

pv_status pvio_npz_read_file(const char *path, pvio_arrays *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    struct stat stt;
    if (stat(path, &stt) == 0 && S_ISREG(stt.st_mode) && (size_t)stt.st_size < sizeof empty_zip)
        return pvc_fail(msg, PV_EFORMAT, "npz '%s': %lld bytes is too short for a zip archive",
                        path, (long long)stt.st_size);
    int code = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, code);
        pv_status s = code == ZIP_ER_OPEN || code == ZIP_ER_NOENT || code == ZIP_ER_READ
                          ? PV_EINPUT : zip_status(code);
        s = pvc_fail(msg, s, "npz '%s': cannot open: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return s;
    }
    pv_status s = read_archive(za, out, msg);
    zip_discard(za);
    return s;
}

const pvio_array *pvio_arrays_find(const pvio_arrays *a, const char *name)
{
    for (int i = 0; a && name && i < a->n; i++)
        if (a->a[i].name && strcmp(a->a[i].name, name) == 0) return &a->a[i];
    return NULL;
}

void pvio_arrays_free(pvio_arrays *a)
{
    if (!a) return;
    for (int i = 0; a->a && i < a->n; i++) {
        pvc_free(a->a[i].name);
        pvc_free_aligned(a->a[i].t.data);
    }
    pvc_free(a->a);
    a->a = NULL;
    a->n = 0;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Copies the finished in-memory archive out of src. */
static pv_status take_bytes(zip_source_t *src, void **buf, size_t *len, pvc_msg *msg)
{
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_source_stat(src, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) || st.size > SIZE_MAX)
        return pvc_fail(msg, PV_EINTERNAL, "npz: cannot size the written archive");
    unsigned char *b = pvc_malloc(st.size ? (size_t)st.size : 1);
    if (!b) return pvc_fail(msg, PV_ENOMEM, "npz: out of memory for %llu bytes",
                            (unsigned long long)st.size);
    if (zip_source_open(src) != 0) {
        pvc_free(b);
        return pvc_fail(msg, PV_EINTERNAL, "npz: cannot reopen the written archive");
    }
    zip_int64_t got = zip_source_read(src, b, st.size);
    zip_source_close(src);
    if (got < 0 || (zip_uint64_t)got != st.size) {
        pvc_free(b);
        return pvc_fail(msg, PV_EINTERNAL, "npz: short read of the written archive");
    }
    *buf = b;
    *len = (size_t)st.size;
    return PV_OK;
}

/* Adds the serialized entries to a fresh archive over src and closes it. */
static pv_status write_archive(zip_source_t *src, const pvio_arrays *arrs, void *const *parts,
                               const size_t *plen, bool deflate, pvc_msg *msg)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    if (!za) {
        pv_status s = pvc_fail(msg, zip_status(zip_error_code_zip(&ze)), "npz: %s",
                               zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return s;
    }
    zip_error_fini(&ze);
    zip_source_keep(src);       /* the caller reads it after zip_close */
    for (int i = 0; i < arrs->n; i++) {
        char *entry = pvc_malloc(strlen(arrs->a[i].name) + 5);
        if (!entry) {
            zip_discard(za);
            return pvc_fail(msg, PV_ENOMEM, "npz: out of memory");
        }
        strcpy(entry, arrs->a[i].name);
        strcat(entry, ".npy");
        zip_source_t *s = zip_source_buffer(za, parts[i], plen[i], 0);
        zip_int64_t idx = s ? zip_file_add(za, entry, s, ZIP_FL_ENC_UTF_8) : -1;
        pvc_free(entry);
        if (idx < 0) {
            if (s) zip_source_free(s);
            pv_status st = pvc_fail(msg, zip_status(zip_error_code_zip(zip_get_error(za))),
                                    "npz: adding '%s': %s", arrs->a[i].name, zip_strerror(za));
            zip_discard(za);
            return st;
        }
        /* Fixed 1980-01-01 timestamps keep the output reproducible. */
        if (zip_set_file_compression(za, (zip_uint64_t)idx, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                     0) != 0 ||
            zip_file_set_dostime(za, (zip_uint64_t)idx, 0, (1 << 5) | 1, 0) != 0) {
            pv_status st = pvc_fail(msg, PV_EINTERNAL, "npz: %s", zip_strerror(za));
            zip_discard(za);
            return st;
        }
    }
    if (zip_close(za) != 0) {
        pv_status st = pvc_fail(msg, zip_status(zip_error_code_zip(zip_get_error(za))),
                                "npz: writing the archive: %s", zip_strerror(za));
        zip_discard(za);
        return st;
    }
    return PV_OK;
}

pv_status pvio_npz_serialize(const pvio_arrays *arrs, bool deflate, void **buf, size_t *len,
                             pvc_msg *msg)
{
    *buf = NULL;
    *len = 0;
    if (arrs->n < 0 || (arrs->n > 0 && !arrs->a))
        return pvc_fail(msg, PV_EINPUT, "npz: invalid array set (n=%d)", arrs->n);
    for (int i = 0; i < arrs->n; i++)
        if (!arrs->a[i].name || !arrs->a[i].name[0])
            return pvc_fail(msg, PV_EINPUT, "npz: array %d has no name", i);
    const char *dup;
    pv_status s = find_duplicate(arrs->a, arrs->n, &dup, msg);
    if (s != PV_OK) return s;
    if (dup) return pvc_fail(msg, PV_EINPUT, "npz: the name '%s' is used twice", dup);
    if (arrs->n == 0) {
        if (!(*buf = pvc_malloc(sizeof empty_zip)))
            return pvc_fail(msg, PV_ENOMEM, "npz: out of memory");
        memcpy(*buf, empty_zip, sizeof empty_zip);
        *len = sizeof empty_zip;
        return PV_OK;
    }

    void **parts = pvc_calloc((size_t)arrs->n, sizeof *parts);
    size_t *plen = pvc_calloc((size_t)arrs->n, sizeof *plen);
    zip_source_t *src = NULL;
    if (!parts || !plen) {
        s = pvc_fail(msg, PV_ENOMEM, "npz: out of memory");
        goto done;
    }
    for (int i = 0; i < arrs->n; i++) {
        pvc_msg inner;
        if ((s = pvio_npy_serialize(&arrs->a[i].t, &parts[i], &plen[i], &inner)) != PV_OK) {
            s = pvc_fail(msg, s, "npz entry '%s': %s", arrs->a[i].name, inner.text);
            goto done;
        }
    }
    zip_error_t ze;
    zip_error_init(&ze);
    src = zip_source_buffer_create(NULL, 0, 0, &ze);
    if (!src)
        s = pvc_fail(msg, zip_status(zip_error_code_zip(&ze)), "npz: %s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
    if (!src) goto done;
    if ((s = write_archive(src, arrs, parts, plen, deflate, msg)) != PV_OK) goto done;
    s = take_bytes(src, buf, len, msg);
done:
    if (src) zip_source_free(src);
    for (int i = 0; parts && i < arrs->n; i++) pvc_free(parts[i]);
    pvc_free(parts);
    pvc_free(plen);
    return s;
}

pv_status pvio_npz_write_file(const char *path, const pvio_arrays *arrs, bool deflate,
                              pvc_msg *msg)
{
    void *buf;
    size_t len;
    pv_status s = pvio_npz_serialize(arrs, deflate, &buf, &len, msg);
    if (s != PV_OK) return s;
    FILE *f = fopen(path, "wb");
    if (!f) {
        pvc_free(buf);
        return pvc_fail(msg, PV_EINPUT, "npz '%s': cannot create: %s", path, strerror(errno));
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) { ok = false; err = errno; }
    pvc_free(buf);
    if (!ok) {
        remove(path);
        return pvc_fail(msg, PV_EINPUT, "npz '%s': write failed: %s", path, strerror(err));
    }
    return PV_OK;
}
