/* .safetensors reading and writing. The JSON header is parsed with cJSON into a tree, checked
 * field by field into one block (entries, then their names), sorted by name (duplicates are
 * then neighbours) and checked once more in offset order for overlaps. Tensor bytes are only
 * touched by the readers. The writer emits the header with its own small JSON printer. */
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads and writes tensor bytes as they are: it needs a little-endian host"
#endif

#define EXACT_LIMIT 9007199254740992.0      /* 2^53: header integers must be below it */
#define META_KEY "__metadata__"

/* ---- dtypes ------------------------------------------------------------------------------- */
/* Every dtype name the format defines; ok marks those perceive reads (t is then valid). */
static const struct { const char *name; pv_dtype t; bool ok; } k_dtypes[] = {
    { "F32", PV_F32, true }, { "F16", PV_F16, true }, { "BF16", PV_BF16, true },
    { "I64", PV_I64, true }, { "I32", PV_I32, true }, { "I8", PV_I8, true },
    { "U8", PV_U8, true }, { "BOOL", PV_BOOL, true },
    { "F64", PV_F32, false }, { "I16", PV_F32, false }, { "U16", PV_F32, false },
    { "U32", PV_F32, false }, { "U64", PV_F32, false }, { "F8_E4M3", PV_F32, false },
    { "F8_E5M2", PV_F32, false }, { "F8_E8M0", PV_F32, false }, { "F6_E2M3", PV_F32, false },
    { "F6_E3M2", PV_F32, false }, { "F4", PV_F32, false }, { "C64", PV_F32, false },
};

/* The safetensors name of a dtype perceive reads ("F32"), or NULL. */
static const char *st_dtype_name(pv_dtype t)
{
    for (size_t i = 0; i < PVC_COUNTOF(k_dtypes); i++)
        if (k_dtypes[i].ok && k_dtypes[i].t == t) return k_dtypes[i].name;
    return NULL;
}

/* ---- message helpers ---------------------------------------------------------------------- */
#define QN_LEN 80

/* s as it goes into a message: at most 64 bytes, control bytes shown as '?', "..." if cut. */
static const char *qn(char out[QN_LEN], const char *s)
{
    size_t k = 0;
    if (!s) s = "(null)";
    for (; s[k] && k < 64; k++) {
        unsigned char c = (unsigned char)s[k];
        out[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (s[k]) { memcpy(out + k, "...", 3); k += 3; }
    out[k] = '\0';
    return out;
}

/* "[2,3]" */
static const char *fmt_dims(char *buf, size_t cap, const int64_t *dims, int rank)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* A JSON value for a message: the number, or its kind. */
static const char *describe(const cJSON *j, char *buf, size_t cap)
{
    if (cJSON_IsNumber(j)) snprintf(buf, cap, "%.17g", j->valuedouble);
    else if (cJSON_IsString(j)) snprintf(buf, cap, "a string");
    else if (cJSON_IsBool(j)) snprintf(buf, cap, "a boolean");
    else if (cJSON_IsNull(j)) snprintf(buf, cap, "null");
    else if (cJSON_IsArray(j)) snprintf(buf, cap, "an array");
    else if (cJSON_IsObject(j)) snprintf(buf, cap, "an object");
    else snprintf(buf, cap, "missing");
    return buf;
}

/* An exact non-negative integer below 2^53 (so the text's value, not a rounding of it). */
static bool json_uint(const cJSON *j, uint64_t *v)
{
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(d >= 0.0 && d < EXACT_LIMIT) || d != floor(d)) return false;
    *v = (uint64_t)d;
    return true;
}

static bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* ---- header parsing ----------------------------------------------------------------------- */
typedef struct pctx {
    const char *what;       /* "safetensors" or "safetensors '<path>'" */
    pvc_msg    *msg;
    uint64_t    data0;      /* absolute offset of the data buffer */
    uint64_t    dlen;       /* its length */
} pctx;

enum { F_DTYPE, F_SHAPE, F_OFFSETS, F_COUNT };
static const char *const k_fields[F_COUNT] = { "dtype", "shape", "data_offsets" };

static pv_status parse_dtype(const pctx *c, const char *name, const cJSON *j, pvio_st_entry *e)
{
    char q[QN_LEN], q2[QN_LEN];
    if (!cJSON_IsString(j) || !j->valuestring)
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'dtype' is %s, not a string",
                        c->what, qn(q, name), describe(j, q2, sizeof q2));
    for (size_t i = 0; i < PVC_COUNTOF(k_dtypes); i++) {
        if (strcmp(j->valuestring, k_dtypes[i].name) != 0) continue;
        if (!k_dtypes[i].ok)
            return pvc_fail(c->msg, PV_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported "
                            "(F32, F16, BF16, I64, I32, I8, U8 and BOOL are)", c->what, qn(q, name),
                            k_dtypes[i].name);
        e->dtype = k_dtypes[i].t;
        return PV_OK;
    }
    return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': unknown dtype '%s'", c->what, qn(q, name),
                    qn(q2, j->valuestring));
}

/* Fills rank/dims and the byte count the shape needs. */
static pv_status parse_shape(const pctx *c, const char *name, const cJSON *j, pvio_st_entry *e,
                             uint64_t *nbytes)
{
    char q[QN_LEN], v[64], sh[256];
    if (!cJSON_IsArray(j))
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'shape' is %s, not an array",
                        c->what, qn(q, name), describe(j, v, sizeof v));
    int rank = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, j) {
        if (rank == PV_MAX_RANK)
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'shape' has more than %d "
                            "dimensions", c->what, qn(q, name), PV_MAX_RANK);
        uint64_t x;
        if (!json_uint(d, &x))
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'shape'[%d] is %s, not a "
                            "non-negative integer below 2^53", c->what, qn(q, name), rank,
                            describe(d, v, sizeof v));
        e->dims[rank++] = (int64_t)x;
    }
    e->rank = rank;
    int64_t n = (int64_t)pv_dtype_size(e->dtype);
    for (int i = 0; i < rank; i++)
        if (pvc_mul_overflow(n, e->dims[i], &n))
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': shape %s of %s overflows "
                            "64-bit byte counts", c->what, qn(q, name),
                            fmt_dims(sh, sizeof sh, e->dims, rank), st_dtype_name(e->dtype));
    *nbytes = (uint64_t)n;
    return PV_OK;
}

static pv_status parse_offsets(const pctx *c, const char *name, const cJSON *j, pvio_st_entry *e,
                               uint64_t nbytes)
{
    char q[QN_LEN], v[64], sh[256];
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != 2)
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'data_offsets' is %s, not an array "
                        "of two integers", c->what, qn(q, name),
                        cJSON_IsArray(j) ? (snprintf(v, sizeof v, "an array of %d items",
                                                     cJSON_GetArraySize(j)), v)
                                         : describe(j, v, sizeof v));
    uint64_t be[2];
    for (int i = 0; i < 2; i++) {
        const cJSON *x = cJSON_GetArrayItem(j, i);
        if (!json_uint(x, &be[i]))
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'data_offsets'[%d] is %s, not a "
                            "non-negative integer below 2^53", c->what, qn(q, name), i,
                            describe(x, v, sizeof v));
    }
    if (be[0] > be[1])
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'data_offsets' [%llu, %llu] has "
                        "begin > end", c->what, qn(q, name), (unsigned long long)be[0],
                        (unsigned long long)be[1]);
    if (be[1] > c->dlen)
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': 'data_offsets' end %llu is past the "
                        "end of the %llu-byte data buffer", c->what, qn(q, name),
                        (unsigned long long)be[1], (unsigned long long)c->dlen);
    if (be[1] - be[0] != nbytes)
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s': shape %s of %s needs %llu bytes, "
                        "'data_offsets' [%llu, %llu] hold %llu", c->what, qn(q, name),
                        fmt_dims(sh, sizeof sh, e->dims, e->rank), st_dtype_name(e->dtype),
                        (unsigned long long)nbytes, (unsigned long long)be[0],
                        (unsigned long long)be[1], (unsigned long long)(be[1] - be[0]));
    e->begin = c->data0 + be[0];
    e->end = c->data0 + be[1];
    return PV_OK;
}

/* One tensor's object into e (name set by the caller). */
static pv_status parse_tensor(const pctx *c, const cJSON *obj, pvio_st_entry *e)
{
    char q[QN_LEN], q2[QN_LEN], v[64];
    const char *name = obj->string;
    if (!cJSON_IsObject(obj))
        return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' is %s, not an object", c->what,
                        qn(q, name), describe(obj, v, sizeof v));
    const cJSON *f[F_COUNT] = { NULL };
    const cJSON *x;
    cJSON_ArrayForEach(x, obj) {
        int k = 0;
        while (k < F_COUNT && strcmp(x->string, k_fields[k]) != 0) k++;
        if (k == F_COUNT)
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' has an unknown field '%s'",
                            c->what, qn(q, name), qn(q2, x->string));
        if (f[k])
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' repeats the field '%s'", c->what,
                            qn(q, name), k_fields[k]);
        f[k] = x;
    }
    for (int k = 0; k < F_COUNT; k++)
        if (!f[k])
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' is missing the field '%s'",
                            c->what, qn(q, name), k_fields[k]);
    uint64_t nbytes = 0;
    pv_status s = parse_dtype(c, name, f[F_DTYPE], e);
    if (s == PV_OK) s = parse_shape(c, name, f[F_SHAPE], e, &nbytes);
    if (s == PV_OK) s = parse_offsets(c, name, f[F_OFFSETS], e, nbytes);
    return s;
}

static int cmp_entry_name(const void *a, const void *b)
{
    return strcmp(((const pvio_st_entry *)a)->name, ((const pvio_st_entry *)b)->name);
}

static int cmp_entry_begin(const void *a, const void *b)
{
    const pvio_st_entry *x = *(const pvio_st_entry *const *)a, *y = *(const pvio_st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted by begin, a non-empty tensor may not start before the furthest end seen so far. */
static pv_status check_overlaps(const pctx *c, const pvio_st *st)
{
    if (st->n < 2) return PV_OK;
    const pvio_st_entry **by = pvc_malloc((size_t)st->n * sizeof *by);
    if (!by) return pvc_fail(c->msg, PV_ENOMEM, "%s: out of memory checking %d tensors", c->what,
                             st->n);
    for (int i = 0; i < st->n; i++) by[i] = &st->e[i];
    qsort(by, (size_t)st->n, sizeof *by, cmp_entry_begin);
    const pvio_st_entry *far = NULL;
    pv_status s = PV_OK;
    for (int i = 0; i < st->n && s == PV_OK; i++) {
        const pvio_st_entry *e = by[i];
        if (e->begin == e->end) continue;
        if (far && e->begin < far->end) {
            char q[QN_LEN], q2[QN_LEN];
            s = pvc_fail(c->msg, PV_EFORMAT, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) "
                         "overlap (data buffer offsets)", c->what, qn(q, far->name),
                         (unsigned long long)(far->begin - c->data0),
                         (unsigned long long)(far->end - c->data0), qn(q2, e->name),
                         (unsigned long long)(e->begin - c->data0),
                         (unsigned long long)(e->end - c->data0));
        }
        if (!far || e->end > far->end) far = e;
    }
    pvc_free(by);
    return s;
}

/* "__metadata__": an object of strings, keys distinct; copied into one block. */
static pv_status parse_meta(const pctx *c, const cJSON *m, pvio_st *st)
{
    char q[QN_LEN], v[64];
    if (!cJSON_IsObject(m))
        return pvc_fail(c->msg, PV_EFORMAT, "%s: '" META_KEY "' is %s, not an object", c->what,
                        describe(m, v, sizeof v));
    size_t n = 0, bytes = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, m) {
        if (!cJSON_IsString(x) || !x->valuestring)
            return pvc_fail(c->msg, PV_EFORMAT, "%s: metadata '%s' is %s, not a string", c->what,
                            qn(q, x->string), describe(x, v, sizeof v));
        n++;
        bytes += strlen(x->string) + strlen(x->valuestring) + 2;
    }
    if (n == 0) return PV_OK;
    char **blk = pvc_malloc(2 * n * sizeof(char *) + bytes);
    if (!blk) return pvc_fail(c->msg, PV_ENOMEM, "%s: out of memory for %zu metadata entries",
                              c->what, n);
    char *pool = (char *)(blk + 2 * n);
    size_t i = 0;
    cJSON_ArrayForEach(x, m) {
        size_t kl = strlen(x->string) + 1, vl = strlen(x->valuestring) + 1;
        blk[i] = memcpy(pool, x->string, kl);
        pool += kl;
        blk[n + i] = memcpy(pool, x->valuestring, vl);
        pool += vl;
        i++;
    }
    st->meta_keys = blk;
    st->meta_vals = blk + n;
    st->nmeta = (int)n;
    /* duplicates: sort a copy of the key pointers */
    char **keys = pvc_malloc(n * sizeof *keys);
    if (!keys) return pvc_fail(c->msg, PV_ENOMEM, "%s: out of memory checking metadata keys",
                               c->what);
    memcpy(keys, blk, n * sizeof *keys);
    qsort(keys, n, sizeof *keys, cmp_str_ptr);
    pv_status s = PV_OK;
    for (size_t k = 1; k < n && s == PV_OK; k++)
        if (strcmp(keys[k - 1], keys[k]) == 0)
            s = pvc_fail(c->msg, PV_EFORMAT, "%s: metadata key '%s' appears twice", c->what,
                         qn(q, keys[k]));
    pvc_free(keys);
    return s;
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Parses the tree's tensors into st (one block: entries, then names). */
static pv_status parse_tensors(const pctx *c, const cJSON *root, pvio_st *st)
{
    char q[QN_LEN], v[64];
    size_t n = 0, bytes = 0;
    const cJSON *x, *meta = NULL;
    cJSON_ArrayForEach(x, root) {
        if (strcmp(x->string, META_KEY) == 0) {
            if (meta) return pvc_fail(c->msg, PV_EFORMAT, "%s: '" META_KEY "' appears twice",
                                      c->what);
            meta = x;
            continue;
        }
        /* checked before the allocation, so a header of bare numbers cannot ask for much */
        if (!cJSON_IsObject(x))
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' is %s, not an object", c->what,
                            qn(q, x->string), describe(x, v, sizeof v));
        n++;
        bytes += strlen(x->string) + 1;
    }
    pv_status s;
    if (meta && (s = parse_meta(c, meta, st)) != PV_OK) return s;
    if (n == 0) return PV_OK;
    if (n > (size_t)INT32_MAX)
        return pvc_fail(c->msg, PV_EFORMAT, "%s: %zu tensors is too many", c->what, n);
    pvio_st_entry *e = pvc_malloc(n * sizeof *e + bytes);
    if (!e) return pvc_fail(c->msg, PV_ENOMEM, "%s: out of memory for %zu tensor entries",
                            c->what, n);
    memset(e, 0, n * sizeof *e);
    st->e = e;
    st->n = (int)n;
    char *pool = (char *)(e + n);
    size_t i = 0;
    cJSON_ArrayForEach(x, root) {
        if (x == meta) continue;
        size_t k = strlen(x->string) + 1;
        e[i].name = memcpy(pool, x->string, k);
        pool += k;
        if ((s = parse_tensor(c, x, &e[i])) != PV_OK) return s;
        i++;
    }
    qsort(e, n, sizeof *e, cmp_entry_name);
    for (i = 1; i < n; i++)
        if (strcmp(e[i - 1].name, e[i].name) == 0)
            return pvc_fail(c->msg, PV_EFORMAT, "%s: tensor '%s' appears twice", c->what,
                            qn(q, e[i].name));
    return check_overlaps(c, st);
}

static pv_status parse_buf(const uint8_t *buf, size_t len, const char *what, pvio_st *st,
                           pvc_msg *msg)
{
    if (len < 8)
        return pvc_fail(msg, PV_EFORMAT, "%s: file is %zu bytes, shorter than the 8-byte header "
                        "length", what, len);
    uint64_t hlen = get_le64(buf);
    if (hlen > PVIO_ST_MAX_HEADER)
        return pvc_fail(msg, PV_EFORMAT, "%s: header length %llu is over the %u-byte limit", what,
                        (unsigned long long)hlen, PVIO_ST_MAX_HEADER);
    if (hlen > len - 8)
        return pvc_fail(msg, PV_EFORMAT, "%s: header length %llu runs past the end of the file "
                        "(%zu bytes follow it)", what, (unsigned long long)hlen, len - 8);
    const char *text = (const char *)buf + 8;
    const char *nul = memchr(text, 0, (size_t)hlen);
    if (nul)
        return pvc_fail(msg, PV_EFORMAT, "%s: header has a NUL byte at offset %zu", what,
                        (size_t)(nul - text));
    size_t k = 0;
    while (k < hlen && json_space(text[k])) k++;
    if (k == hlen)
        return pvc_fail(msg, PV_EFORMAT, "%s: header is empty (%llu bytes of spaces), not a JSON "
                        "object", what, (unsigned long long)hlen);
    if (text[k] != '{')
        return pvc_fail(msg, PV_EFORMAT, "%s: header is not a JSON object (it starts with '%c' at "
                        "byte %zu)", what, text[k] >= 0x20 && text[k] < 0x7f ? text[k] : '?', k);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, false);
    if (!root) {
        size_t at = end && end >= text && end <= text + hlen ? (size_t)(end - text) : 0;
        return pvc_fail(msg, PV_EFORMAT, "%s: header is not valid JSON (error near byte %zu of "
                        "%llu)", what, at, (unsigned long long)hlen);
    }
    pv_status s = PV_OK;
    size_t at = (size_t)(end - text);
    while (at < hlen && json_space(text[at])) at++;
    if (!cJSON_IsObject(root))
        s = pvc_fail(msg, PV_EFORMAT, "%s: header is not a JSON object", what);
    else if (at != hlen)
        s = pvc_fail(msg, PV_EFORMAT, "%s: header has bytes other than spaces after the JSON "
                     "object (byte %zu of %llu)", what, at, (unsigned long long)hlen);
    if (s == PV_OK) {
        pctx c = { what, msg, 8 + hlen, (uint64_t)len - 8 - hlen };
        s = parse_tensors(&c, root, st);
    }
    cJSON_Delete(root);
    if (s != PV_OK) return s;
    st->base = buf;
    st->size = len;
    return PV_OK;
}

pv_status pvio_st_parse(const void *buf, size_t len, pvio_st *st, pvc_msg *msg)
{
    memset(st, 0, sizeof *st);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "safetensors: NULL buffer of %zu bytes", len);
    pv_status s = parse_buf(buf, len, "safetensors", st, msg);
    if (s != PV_OK) pvio_st_close(st);
    return s;
}

pv_status pvio_st_open(const char *path, pvio_st *st, pvc_msg *msg)
{
    memset(st, 0, sizeof *st);
    if (!path) return pvc_fail(msg, PV_EINPUT, "safetensors: path is NULL");
    char what[PVC_MSG_LEN / 2];
    snprintf(what, sizeof what, "safetensors '%s'", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pvc_fail(msg, PV_EINPUT, "%s: cannot open: %s", what, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pvc_fail(msg, PV_EINPUT, "%s: not a regular file", what);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pvc_fail(msg, PV_EUNSUPPORTED, "%s: %lld bytes do not fit in memory", what,
                        (long long)sb.st_size);
    }
    size_t len = (size_t)sb.st_size;
    if (len < 8) {      /* mmap cannot map 0 bytes; the parser's message, with the real size */
        close(fd);
        return pvc_fail(msg, PV_EFORMAT, "%s: file is %zu bytes, shorter than the 8-byte header "
                        "length", what, len);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return pvc_fail(msg, PV_EINPUT, "%s: cannot map %zu bytes: %s", what, len, strerror(err));
    pv_status s = parse_buf(map, len, what, st, msg);
    if (s != PV_OK) {
        munmap(map, len);
        pvio_st_close(st);
        return s;
    }
    st->map = map;
    st->map_len = len;
    return PV_OK;
}

void pvio_st_close(pvio_st *st)
{
    if (!st) return;
    pvc_free(st->e);
    pvc_free(st->meta_keys);        /* one block with meta_vals and the strings */
    if (st->map) munmap(st->map, st->map_len);
    memset(st, 0, sizeof *st);
}

/* ---- lookups ------------------------------------------------------------------------------ */
const pvio_st_entry *pvio_st_find(const pvio_st *st, const char *name)
{
    if (!st || !name) return NULL;
    int lo = 0, hi = st->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(st->e[mid].name, name);
        if (c == 0) return &st->e[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *pvio_st_meta(const pvio_st *st, const char *key)
{
    if (!st || !key) return NULL;
    for (int i = 0; i < st->nmeta; i++)
        if (strcmp(st->meta_keys[i], key) == 0) return st->meta_vals[i];
    return NULL;
}

pv_status pvio_st_expect(const pvio_st *st, const char *name, int rank, const int64_t *dims,
                         const pvio_st_entry **out, pvc_msg *msg)
{
    char q[QN_LEN], a[256], b[256];
    if (out) *out = NULL;
    if (!st || !name || rank < 0 || rank > PV_MAX_RANK || (rank > 0 && !dims))
        return pvc_fail(msg, PV_EINPUT, "safetensors: expect: bad arguments (name %s, rank %d)",
                        name ? qn(q, name) : "NULL", rank);
    const pvio_st_entry *e = pvio_st_find(st, name);
    if (!e) return pvc_fail(msg, PV_EFORMAT, "safetensors: tensor '%s' is missing", qn(q, name));
    bool same = e->rank == rank;
    for (int i = 0; same && i < rank; i++) same = e->dims[i] == dims[i];
    if (!same)
        return pvc_fail(msg, PV_EFORMAT, "safetensors: tensor '%s' has shape %s (want %s)",
                        qn(q, name), fmt_dims(a, sizeof a, e->dims, e->rank),
                        fmt_dims(b, sizeof b, dims, rank));
    if (out) *out = e;
    return PV_OK;
}

/* ---- readers ------------------------------------------------------------------------------ */
/* e must be one of st's entries and its bytes inside st's buffer; numel from its byte count. */
static pv_status check_entry(const pvio_st *st, const pvio_st_entry *e, const void *dst,
                             const char *fn, int64_t *numel, pvc_msg *msg)
{
    uintptr_t p = (uintptr_t)e, lo = (uintptr_t)(st ? st->e : NULL);
    if (!st || !e || !st->e || p < lo || p >= lo + (size_t)st->n * sizeof *e ||
        (p - lo) % sizeof *e != 0)
        return pvc_fail(msg, PV_EINPUT, "safetensors: %s: the entry is not one of this file's", fn);
    if (e->end < e->begin || e->end > st->size)
        return pvc_fail(msg, PV_EINTERNAL, "safetensors: %s: entry bytes outside the file", fn);
    *numel = (int64_t)((e->end - e->begin) / pv_dtype_size(e->dtype));
    if (*numel > 0 && !dst)
        return pvc_fail(msg, PV_EINPUT, "safetensors: %s: dst is NULL", fn);
    return PV_OK;
}

pv_status pvio_st_read_f32(const pvio_st *st, const pvio_st_entry *e, float *dst, pvc_msg *msg)
{
    int64_t n;
    pv_status s = check_entry(st, e, dst, "read_f32", &n, msg);
    if (s != PV_OK) return s;
    const uint8_t *p = st->base + e->begin;
    char q[QN_LEN];
    switch (e->dtype) {
    case PV_F32:
        if (n) memcpy(dst, p, (size_t)n * sizeof(float));
        return PV_OK;
    case PV_F16:
    case PV_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = e->dtype == PV_F16 ? pvc_f16_to_f32(h) : pvc_bf16_to_f32(h);
        }
        return PV_OK;
    default:
        return pvc_fail(msg, PV_EFORMAT, "safetensors: tensor '%s' is %s, not a float dtype "
                        "(F32, F16 or BF16)", qn(q, e->name), st_dtype_name(e->dtype));
    }
}

pv_status pvio_st_read_i32(const pvio_st *st, const pvio_st_entry *e, int32_t *dst, pvc_msg *msg)
{
    int64_t n;
    pv_status s = check_entry(st, e, dst, "read_i32", &n, msg);
    if (s != PV_OK) return s;
    const uint8_t *p = st->base + e->begin;
    char q[QN_LEN];
    switch (e->dtype) {
    case PV_I32:
        if (n) memcpy(dst, p, (size_t)n * sizeof(int32_t));
        return PV_OK;
    case PV_I64:
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return pvc_fail(msg, PV_EFORMAT, "safetensors: tensor '%s': value %lld at index "
                                "%lld does not fit in int32", qn(q, e->name), (long long)v,
                                (long long)i);
            dst[i] = (int32_t)v;
        }
        return PV_OK;
    case PV_I8:
        for (int64_t i = 0; i < n; i++) dst[i] = (int8_t)p[i];
        return PV_OK;
    case PV_U8:
        for (int64_t i = 0; i < n; i++) dst[i] = p[i];
        return PV_OK;
    case PV_BOOL:
        for (int64_t i = 0; i < n; i++) dst[i] = p[i] != 0;
        return PV_OK;
    default:
        return pvc_fail(msg, PV_EFORMAT, "safetensors: tensor '%s' is %s, not an integer dtype "
                        "(I32, I64, I8, U8 or BOOL)", qn(q, e->name), st_dtype_name(e->dtype));
    }
}

/* ---- writing ------------------------------------------------------------------------------ */
/* A growable text buffer; oom sticks once an allocation failed. */
typedef struct sbuf { char *p; size_t len, cap; bool oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) { b->oom = true; return; }
            cap *= 2;
        }
        char *np = pvc_realloc(b->p, cap);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(b, tmp, PVC_MIN((size_t)k, sizeof tmp - 1));
}

/* A JSON string literal: quotes, backslashes and control bytes escaped, other bytes as they
 * are (UTF-8 passes through). */
static void sb_json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        sb_put(b, run, (size_t)(s - run));
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else sb_printf(b, "\\u%04x", c);
        run = s + 1;
    }
    sb_put(b, run, (size_t)(s - run));
    sb_put(b, "\"", 1);
}

/* Checks the arguments; *data_len gets the total tensor bytes. */
static pv_status check_write_args(const pvc_tensor *t, int n, const char *const *mk,
                                  const char *const *mv, int nmeta, uint64_t *data_len,
                                  pvc_msg *msg)
{
    char q[QN_LEN], sh[256];
    if (n < 0 || (n > 0 && !t))
        return pvc_fail(msg, PV_EINPUT, "safetensors: write: %d tensors at %s", n, t ? "t" : "NULL");
    if (nmeta < 0 || (nmeta > 0 && (!mk || !mv)))
        return pvc_fail(msg, PV_EINPUT, "safetensors: write: %d metadata entries with NULL arrays",
                        nmeta);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        const pvc_tensor *x = &t[i];
        if (!x->name)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor %d has no name", i);
        if (strcmp(x->name, META_KEY) == 0)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor %d is named '" META_KEY
                            "', which the format reserves", i);
        if ((unsigned)x->dtype >= PV_DTYPE_COUNT || !st_dtype_name(x->dtype))
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor '%s' has invalid dtype %d",
                            qn(q, x->name), (int)x->dtype);
        if (x->rank < 0 || x->rank > PV_MAX_RANK)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor '%s' has rank %d (0..%d)",
                            qn(q, x->name), x->rank, PV_MAX_RANK);
        /* the reader's rules: dims below 2^53, no overflow on the way, bytes below 2^53 */
        int64_t nb = (int64_t)pv_dtype_size(x->dtype);
        bool bad_shape = false;
        for (int d = 0; d < x->rank && !bad_shape; d++)
            bad_shape = x->dims[d] < 0 || (double)x->dims[d] >= EXACT_LIMIT ||
                        pvc_mul_overflow(nb, x->dims[d], &nb);
        if (bad_shape || (double)nb >= EXACT_LIMIT)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor '%s' has shape %s, "
                            "negative or too large", qn(q, x->name),
                            fmt_dims(sh, sizeof sh, x->dims, x->rank));
        if (!pvc_tensor_is_contiguous(x))
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor '%s' is not contiguous",
                            qn(q, x->name));
        if (nb > 0 && !x->data)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: tensor '%s' has NULL data",
                            qn(q, x->name));
        total += (uint64_t)nb;
        if ((double)total >= EXACT_LIMIT)
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: the tensors hold over 2^53 bytes");
    }
    for (int i = 0; i < nmeta; i++)
        if (!mk[i] || !mv[i])
            return pvc_fail(msg, PV_EINPUT, "safetensors: write: metadata %s %d is NULL",
                            mk[i] ? "value" : "key", i);
    /* distinct names and distinct metadata keys: sort pointer copies */
    int most = PVC_MAX(n, nmeta);
    if (most > 1) {
        const char **names = pvc_malloc((size_t)most * sizeof *names);
        if (!names) return pvc_fail(msg, PV_ENOMEM, "safetensors: write: out of memory");
        pv_status s = PV_OK;
        for (int pass = 0; pass < 2 && s == PV_OK; pass++) {
            int k = pass ? nmeta : n;
            for (int i = 0; i < k; i++) names[i] = pass ? mk[i] : t[i].name;
            qsort(names, (size_t)k, sizeof *names, cmp_str_ptr);
            for (int i = 1; i < k && s == PV_OK; i++)
                if (strcmp(names[i - 1], names[i]) == 0)
                    s = pvc_fail(msg, PV_EINPUT, "safetensors: write: %s '%s' appears twice",
                                 pass ? "metadata key" : "tensor name", qn(q, names[i]));
        }
        pvc_free(names);
        if (s != PV_OK) return s;
    }
    *data_len = total;
    return PV_OK;
}

/* The 8-byte length and the padded JSON header into b; *data_len: bytes of tensor data. */
static pv_status build_header(const pvc_tensor *t, int n, const char *const *mk,
                              const char *const *mv, int nmeta, sbuf *b, uint64_t *data_len,
                              pvc_msg *msg)
{
    pv_status s = check_write_args(t, n, mk, mv, nmeta, data_len, msg);
    if (s != PV_OK) return s;
    sb_put(b, "\0\0\0\0\0\0\0\0{", 9);
    bool first = true;
    if (nmeta > 0) {
        sb_str(b, "\"" META_KEY "\":{");
        for (int i = 0; i < nmeta; i++) {
            if (i) sb_put(b, ",", 1);
            sb_json_str(b, mk[i]);
            sb_put(b, ":", 1);
            sb_json_str(b, mv[i]);
        }
        sb_put(b, "}", 1);
        first = false;
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const pvc_tensor *x = &t[i];
        uint64_t nb = (uint64_t)pvc_nbytes(x);
        if (!first) sb_put(b, ",", 1);
        first = false;
        sb_json_str(b, x->name);
        sb_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(x->dtype));
        for (int d = 0; d < x->rank; d++) sb_printf(b, d ? ",%lld" : "%lld", (long long)x->dims[d]);
        sb_printf(b, "],\"data_offsets\":[%llu,", (unsigned long long)off);
        sb_printf(b, "%llu]}", (unsigned long long)(off + nb));
        off += nb;
    }
    sb_put(b, "}", 1);
    while (!b->oom && (b->len - 8) % 8 != 0) sb_put(b, " ", 1);
    if (b->oom) return pvc_fail(msg, PV_ENOMEM, "safetensors: write: out of memory for the header");
    uint64_t hlen = b->len - 8;
    if (hlen > PVIO_ST_MAX_HEADER)
        return pvc_fail(msg, PV_EINPUT, "safetensors: write: the header would be %llu bytes, over "
                        "the %u-byte limit", (unsigned long long)hlen, PVIO_ST_MAX_HEADER);
    for (int i = 0; i < 8; i++) b->p[i] = (char)(hlen >> (8 * i) & 0xff);
    return PV_OK;
}

pv_status pvio_st_serialize(const pvc_tensor *t, int n, const char *const *meta_keys,
                            const char *const *meta_vals, int nmeta, void **buf, size_t *len,
                            pvc_msg *msg)
{
    if (buf) *buf = NULL;
    if (len) *len = 0;
    if (!buf || !len) return pvc_fail(msg, PV_EINPUT, "safetensors: serialize: %s is NULL",
                                      buf ? "len" : "buf");
    sbuf b = { 0 };
    uint64_t data_len = 0;
    pv_status s = build_header(t, n, meta_keys, meta_vals, nmeta, &b, &data_len, msg);
    if (s != PV_OK) {
        pvc_free(b.p);
        return s;
    }
    if (data_len > SIZE_MAX - b.len) {
        pvc_free(b.p);
        return pvc_fail(msg, PV_EINPUT, "safetensors: serialize: %llu bytes do not fit in memory",
                        (unsigned long long)data_len);
    }
    size_t total = b.len + (size_t)data_len;
    uint8_t *out = pvc_malloc(total);
    if (!out) {
        pvc_free(b.p);
        return pvc_fail(msg, PV_ENOMEM, "safetensors: serialize: out of memory for %zu bytes",
                        total);
    }
    memcpy(out, b.p, b.len);
    size_t at = b.len;
    for (int i = 0; i < n; i++) {
        size_t nb = pvc_nbytes(&t[i]);
        if (nb) memcpy(out + at, t[i].data, nb);
        at += nb;
    }
    pvc_free(b.p);
    *buf = out;
    *len = total;
    return PV_OK;
}

pv_status pvio_st_write_file(const char *path, const pvc_tensor *t, int n,
                             const char *const *meta_keys, const char *const *meta_vals, int nmeta,
                             pvc_msg *msg)
{
    if (!path || !*path)
        return pvc_fail(msg, PV_EINPUT, "safetensors: write: path is %s", path ? "empty" : "NULL");
    sbuf b = { 0 };
    uint64_t data_len = 0;
    pv_status s = build_header(t, n, meta_keys, meta_vals, nmeta, &b, &data_len, msg);
    if (s != PV_OK) {
        pvc_free(b.p);
        return s;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        int err = errno;
        pvc_free(b.p);
        return pvc_fail(msg, PV_EINPUT, "safetensors '%s': cannot create: %s", path,
                        strerror(err));
    }
    bool ok = fwrite(b.p, 1, b.len, f) == b.len;
    for (int i = 0; ok && i < n; i++) {
        size_t nb = pvc_nbytes(&t[i]);
        ok = nb == 0 || fwrite(t[i].data, 1, nb, f) == nb;
    }
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) { ok = false; err = errno; }
    pvc_free(b.p);
    if (!ok) {
        remove(path);
        return pvc_fail(msg, PV_EINPUT, "safetensors '%s': write failed: %s", path, strerror(err));
    }
    return PV_OK;
}
