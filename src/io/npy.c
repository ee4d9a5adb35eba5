/* .npy reading and writing. The header is a Python dict literal; it is parsed by a small lexer
 * that never looks past the header length and accepts only the three keys NumPy writes. Data
 * is read straight into an aligned block, then byte-swapped or transposed from Fortran order
 * when the header asks for it. */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const unsigned char npy_magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

typedef struct npy_hdr {
    pv_dtype dtype;
    int      rank;
    int64_t  dims[PV_MAX_RANK];
    bool     fortran;
    bool     swap;          /* file byte order differs from the host's */
    uint64_t nbytes;
} npy_hdr;

static bool host_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Python's tuple repr: "()", "(3,)", "(2, 3)". */
static const char *fmt_shape(char *buf, size_t cap, const int64_t *dims, int rank)
{
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, rank == 1 ? ",)" : ")");
    return buf;
}

typedef enum { SHAPE_OK, SHAPE_NEGATIVE, SHAPE_OVERFLOW } shape_check;

/* Byte count of a dims/dtype pair, refusing negative dims and 64-bit overflow. */
static shape_check shape_bytes(const int64_t *dims, int rank, pv_dtype dt, int64_t *nbytes)
{
    int64_t n = (int64_t)pv_dtype_size(dt);
    for (int i = 0; i < rank; i++) if (dims[i] < 0) return SHAPE_NEGATIVE;
    for (int i = 0; i < rank; i++) if (pvc_mul_overflow(n, dims[i], &n)) return SHAPE_OVERFLOW;
    *nbytes = n;
    return SHAPE_OK;
}

/* ---- header lexer ------------------------------------------------------------------------- */
typedef struct lex { const char *p, *start, *end; const char *what; pvc_msg *msg; } lex;

static void skip_ws(lex *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
        l->p++;
}

static bool lex_eat(lex *l, char c)
{
    skip_ws(l);
    if (l->p < l->end && *l->p == c) { l->p++; return true; }
    return false;
}

static bool lex_peek(lex *l, char c)
{
    skip_ws(l);
    return l->p < l->end && *l->p == c;
}

static bool lex_word(lex *l, const char *w)
{
    size_t n = strlen(w);
    skip_ws(l);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, w, n) != 0) return false;
    l->p += n;
    return true;
}

static pv_status lex_fail(lex *l, const char *expected)
{
    return pvc_fail(l->msg, PV_EFORMAT, "%s: malformed header dict at byte %d: expected %s",
                    l->what, (int)(l->p - l->start), expected);
}

/* A quoted string without escapes or control characters into out (cap bytes with the NUL). */
static bool lex_str(lex *l, char *out, size_t cap)
{
    skip_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return false;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        unsigned char c = (unsigned char)*l->p++;
        if (c == '\\' || c < 0x20 || n + 1 >= cap) return false;
        out[n++] = (char)c;
    }
    if (l->p >= l->end) return false;
    l->p++;
    out[n] = '\0';
    return true;
}

/* A decimal integer, optional sign, optional Python 2 'L' suffix. */
static pv_status lex_int(lex *l, int64_t *v)
{
    skip_ws(l);
    bool neg = false;
    if (l->p < l->end && (*l->p == '-' || *l->p == '+')) neg = *l->p++ == '-';
    if (l->p >= l->end || *l->p < '0' || *l->p > '9') return lex_fail(l, "an integer in 'shape'");
    uint64_t acc = 0;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        unsigned d = (unsigned)(*l->p++ - '0');
        if (acc > ((uint64_t)INT64_MAX - d) / 10)
            return pvc_fail(l->msg, PV_EFORMAT, "%s: a dimension in 'shape' does not fit in "
                            "64 bits", l->what);
        acc = acc * 10 + d;
    }
    if (l->p < l->end && (*l->p == 'L' || *l->p == 'l')) l->p++;
    *v = neg ? -(int64_t)acc : (int64_t)acc;
    return PV_OK;
}

static pv_status parse_shape(lex *l, npy_hdr *h)
{
    if (!lex_eat(l, '(')) return lex_fail(l, "a tuple for 'shape'");
    h->rank = 0;
    if (lex_eat(l, ')')) return PV_OK;
    for (;;) {
        int64_t v = 0;
        pv_status s = lex_int(l, &v);
        if (s != PV_OK) return s;
        if (h->rank == PV_MAX_RANK)
            return pvc_fail(l->msg, PV_EUNSUPPORTED, "%s: shape has more than %d dimensions",
                            l->what, PV_MAX_RANK);
        h->dims[h->rank++] = v;
        if (lex_eat(l, ')')) return PV_OK;
        if (!lex_eat(l, ',')) return lex_fail(l, "',' or ')' in 'shape'");
        if (lex_eat(l, ')')) return PV_OK;
    }
}

/* Maps a descr such as "<f4" to a dtype and decides whether bytes must be swapped. */
static pv_status parse_descr(const char *descr, const char *what, npy_hdr *h, pvc_msg *msg)
{
    static const struct { const char *code; pv_dtype t; } ok[] = {
        { "f4", PV_F32 }, { "f2", PV_F16 }, { "i8", PV_I64 }, { "i4", PV_I32 },
        { "i1", PV_I8 }, { "u1", PV_U8 }, { "b1", PV_BOOL }, { "?", PV_BOOL },
    };
    static const struct { const char *code, *name; } known[] = {
        { "f8", "float64" }, { "f16", "float128" }, { "i2", "int16" }, { "u2", "uint16" },
        { "u4", "uint32" }, { "u8", "uint64" }, { "c8", "complex64" }, { "c16", "complex128" },
        { "O", "object" }, { "V", "void" },
    };
    const char *code = descr;
    char order = '=';
    if (*code == '<' || *code == '>' || *code == '|' || *code == '=') order = *code++;
    for (size_t i = 0; i < PVC_COUNTOF(ok); i++) {
        if (strcmp(code, ok[i].code) != 0) continue;
        h->dtype = ok[i].t;
        bool file_le = order == '<' || (order != '>' && host_le());
        h->swap = pv_dtype_size(h->dtype) > 1 && file_le != host_le();
        return PV_OK;
    }
    const char *name = NULL;
    for (size_t i = 0; i < PVC_COUNTOF(known); i++)
        if (strcmp(code, known[i].code) == 0) name = known[i].name;
    if (code[0] == 'U' || code[0] == 'S' || code[0] == 'a') name = "string";
    if (code[0] == 'M' || code[0] == 'm') name = "datetime";
    return pvc_fail(msg, PV_EUNSUPPORTED,
                    "%s: dtype '%s'%s%s%s is not supported (float32, float16, int64, int32, int8, "
                    "uint8 and bool are)", what, descr, name ? " (" : "", name ? name : "",
                    name ? ")" : "");
}

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = { "descr", "fortran_order", "shape" };

static pv_status parse_value(lex *l, int key, npy_hdr *h)
{
    if (key == KEY_SHAPE) return parse_shape(l, h);
    if (key == KEY_FORTRAN) {
        if (lex_word(l, "True")) h->fortran = true;
        else if (lex_word(l, "False")) h->fortran = false;
        else return lex_fail(l, "True or False for 'fortran_order'");
        return PV_OK;
    }
    if (lex_peek(l, '[') || lex_peek(l, '{'))
        return pvc_fail(l->msg, PV_EUNSUPPORTED, "%s: structured dtypes (a list in 'descr') are "
                        "not supported", l->what);
    char descr[32];
    if (!lex_str(l, descr, sizeof descr)) return lex_fail(l, "a short quoted string for 'descr'");
    return parse_descr(descr, l->what, h, l->msg);
}

/* Parses the dict and checks the shape; fills h including nbytes. */
static pv_status parse_header(const char *text, size_t n, const char *what, npy_hdr *h,
                              pvc_msg *msg)
{
    lex l = { text, text, text + n, what, msg };
    bool have[KEY_COUNT] = { false };
    memset(h, 0, sizeof *h);
    if (!lex_eat(&l, '{')) return lex_fail(&l, "'{'");
    while (!lex_eat(&l, '}')) {
        char key[32];
        if (!lex_str(&l, key, sizeof key)) return lex_fail(&l, "a quoted key or '}'");
        int k = 0;
        while (k < KEY_COUNT && strcmp(key, key_names[k]) != 0) k++;
        if (k == KEY_COUNT)
            return pvc_fail(msg, PV_EFORMAT, "%s: header has an unknown key '%s'", what, key);
        if (have[k])
            return pvc_fail(msg, PV_EFORMAT, "%s: header repeats the key '%s'", what, key);
        if (!lex_eat(&l, ':')) return lex_fail(&l, "':' after a key");
        pv_status s = parse_value(&l, k, h);
        if (s != PV_OK) return s;
        have[k] = true;
        if (lex_eat(&l, ',')) continue;
        if (lex_eat(&l, '}')) break;
        return lex_fail(&l, "',' or '}' after a value");
    }
    skip_ws(&l);
    if (l.p != l.end) return lex_fail(&l, "only spaces after the closing '}'");
    for (int k = 0; k < KEY_COUNT; k++)
        if (!have[k])
            return pvc_fail(msg, PV_EFORMAT, "%s: header is missing the key '%s'", what,
                            key_names[k]);

    char sh[256];
    int64_t nbytes = 0;
    shape_check c = shape_bytes(h->dims, h->rank, h->dtype, &nbytes);
    fmt_shape(sh, sizeof sh, h->dims, h->rank);
    if (c == SHAPE_NEGATIVE)
        return pvc_fail(msg, PV_EFORMAT, "%s: shape %s has a negative dimension", what, sh);
    if (c == SHAPE_OVERFLOW)
        return pvc_fail(msg, PV_EFORMAT, "%s: shape %s overflows 64-bit byte counts", what, sh);
    if ((uint64_t)nbytes > PVIO_MAX_ARRAY_BYTES || (uint64_t)nbytes > SIZE_MAX / 2)
        return pvc_fail(msg, PV_EUNSUPPORTED, "%s: shape %s of %s is %lld bytes, over the "
                        "%llu-byte limit", what, sh, pv_dtype_name(h->dtype), (long long)nbytes,
                        (unsigned long long)PVIO_MAX_ARRAY_BYTES);
    h->nbytes = (uint64_t)nbytes;
    return PV_OK;
}

/* ---- element layout ----------------------------------------------------------------------- */
/* Copies the elements of a strided array (byte strides) into dst in C order. */
static void gather(void *dst, const unsigned char *src, int rank, const int64_t *dims,
                   const int64_t *strides, size_t item)
{
    int64_t n = 1, idx[PV_MAX_RANK] = { 0 }, off = 0;
    for (int i = 0; i < rank; i++) n *= dims[i];
    unsigned char *d = dst;
    for (int64_t e = 0; e < n; e++, d += item) {
        memcpy(d, src + off, item);
        for (int k = rank - 1; k >= 0; k--) {
            off += strides[k];
            if (++idx[k] < dims[k]) break;
            off -= strides[k] * dims[k];
            idx[k] = 0;
        }
    }
}

static void swap_bytes(unsigned char *p, uint64_t n, size_t item)
{
    for (uint64_t i = 0; i < n; i++, p += item)
        for (size_t a = 0, b = item - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* ---- reading ------------------------------------------------------------------------------ */
static pv_status read_exact(const pvio_reader *r, void *dst, size_t n, const char *what,
                            pvc_msg *msg)
{
    size_t done = 0;
    while (done < n) {
        size_t got = 0;
        pv_status s = r->read(r->ctx, (unsigned char *)dst + done, n - done, &got, msg);
        if (s != PV_OK) return s;
        if (got == 0)
            return pvc_fail(msg, PV_EFORMAT, "%s: data ended early (%llu bytes declared)", what,
                            (unsigned long long)r->size);
        done += got;
    }
    return PV_OK;
}

/* Reads preamble + header; returns the header and the offset where data starts. */
static pv_status read_header(const pvio_reader *r, const char *what, npy_hdr *h, uint64_t *off,
                             pvc_msg *msg)
{
    unsigned char pre[12];
    size_t have = r->size < 10 ? (size_t)r->size : 10;
    pv_status s = read_exact(r, pre, have, what, msg);
    if (s != PV_OK) return s;
    if (memcmp(pre, npy_magic, PVC_MIN(have, sizeof npy_magic)) != 0)
        return pvc_fail(msg, PV_EFORMAT, "%s: bad magic (not a .npy file)", what);
    if (have < 10)
        return pvc_fail(msg, PV_EFORMAT, "%s: truncated: %zu bytes, the preamble needs 10", what,
                        have);
    unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return pvc_fail(msg, PV_EUNSUPPORTED, "%s: format version %u.%u is not supported (1.0, "
                        "2.0 and 3.0 are)", what, major, minor);
    uint64_t hlen;
    *off = major == 1 ? 10 : 12;
    if (major == 1) {
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    } else {
        if (r->size < 12)
            return pvc_fail(msg, PV_EFORMAT, "%s: truncated: %llu bytes, the version %u preamble "
                            "needs 12", what, (unsigned long long)r->size, major);
        if ((s = read_exact(r, pre + 10, 2, what, msg)) != PV_OK) return s;
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
               (uint64_t)pre[11] << 24;
    }
    if (hlen > PVIO_MAX_HEADER)
        return pvc_fail(msg, PV_EFORMAT, "%s: header length %llu is over the %u-byte limit", what,
                        (unsigned long long)hlen, PVIO_MAX_HEADER);
    if (hlen > r->size - *off)
        return pvc_fail(msg, PV_EFORMAT, "%s: header length %llu runs past the end (%llu bytes "
                        "follow the preamble)", what, (unsigned long long)hlen,
                        (unsigned long long)(r->size - *off));
    char *text = pvc_malloc(hlen ? (size_t)hlen : 1);
    if (!text) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory for the header", what);
    s = read_exact(r, text, (size_t)hlen, what, msg);
    if (s == PV_OK) s = parse_header(text, (size_t)hlen, what, h, msg);
    pvc_free(text);
    *off += hlen;
    return s;
}

pv_status pvio_npy_read(const pvio_reader *r, const char *what, pvc_tensor *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    npy_hdr h;
    uint64_t off = 0;
    pv_status s = read_header(r, what, &h, &off, msg);
    if (s != PV_OK) return s;
    char sh[256];
    uint64_t left = r->size - off;
    if (left != h.nbytes)
        return pvc_fail(msg, PV_EFORMAT, "%s: shape %s of %s needs %llu data bytes, the %s has "
                        "%llu", what, fmt_shape(sh, sizeof sh, h.dims, h.rank),
                        pv_dtype_name(h.dtype), (unsigned long long)h.nbytes,
                        left < h.nbytes ? "truncated data" : "data", (unsigned long long)left);
    unsigned char *data = pvc_malloc_aligned((size_t)h.nbytes);
    if (!data) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory for %llu bytes", what,
                               (unsigned long long)h.nbytes);
    unsigned char extra;
    size_t got = 0;
    if ((s = read_exact(r, data, (size_t)h.nbytes, what, msg)) != PV_OK) goto fail;
    /* One more read: must report the end (a zip entry checks its CRC there). */
    if ((s = r->read(r->ctx, &extra, 1, &got, msg)) != PV_OK) goto fail;
    if (got != 0) {
        s = pvc_fail(msg, PV_EFORMAT, "%s: more data than the declared %llu bytes", what,
                     (unsigned long long)r->size);
        goto fail;
    }

    size_t item = pv_dtype_size(h.dtype);
    uint64_t numel = h.nbytes / item;
    if (h.swap) swap_bytes(data, numel, item);
    if (h.dtype == PV_BOOL)   /* NumPy bools are 0/1; normalize anything else */
        for (uint64_t i = 0; i < numel; i++) data[i] = data[i] != 0;
    if (h.fortran && h.rank > 1 && numel > 1) {
        int64_t st[PV_MAX_RANK], acc = (int64_t)item;
        for (int i = 0; i < h.rank; i++) { st[i] = acc; acc *= h.dims[i]; }
        unsigned char *c = pvc_malloc_aligned((size_t)h.nbytes);
        if (!c) {
            s = pvc_fail(msg, PV_ENOMEM, "%s: out of memory transposing Fortran-order data", what);
            goto fail;
        }
        gather(c, data, h.rank, h.dims, st, item);
        pvc_free_aligned(data);
        data = c;
    }
    out->dtype = h.dtype;
    out->rank = h.rank;
    memcpy(out->dims, h.dims, sizeof h.dims);
    out->data = data;
    return PV_OK;
fail:
    pvc_free_aligned(data);
    return s;
}

typedef struct mem_src { const unsigned char *p; size_t left; } mem_src;

static pv_status mem_read(void *ctx, void *dst, size_t n, size_t *got, pvc_msg *msg)
{
    mem_src *m = ctx;
    *got = PVC_MIN(n, m->left);
    if (*got == 0) return PV_OK;            /* m->p may be NULL for an empty buffer */
    memcpy(dst, m->p, *got);
    m->p += *got;
    m->left -= *got;
    return PV_OK;
}

pv_status pvio_npy_parse(const void *buf, size_t len, pvc_tensor *out, pvc_msg *msg)
{
    if (!buf && len) {
        memset(out, 0, sizeof *out);
        return pvc_fail(msg, PV_EINPUT, "npy: NULL buffer of %zu bytes", len);
    }
    mem_src m = { buf, len };
    pvio_reader r = { mem_read, &m, len };
    return pvio_npy_read(&r, "npy", out, msg);
}

typedef struct file_src { FILE *f; const char *what; } file_src;

static pv_status file_read(void *ctx, void *dst, size_t n, size_t *got, pvc_msg *msg)
{
    file_src *fs = ctx;
    *got = fread(dst, 1, n, fs->f);
    if (*got < n && ferror(fs->f))
        return pvc_fail(msg, PV_EINPUT, "%s: read error: %s", fs->what, strerror(errno));
    return PV_OK;
}

pv_status pvio_npy_read_file(const char *path, pvc_tensor *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    char what[PVC_MSG_LEN / 2];
    snprintf(what, sizeof what, "npy '%s'", path);
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EINPUT, "%s: cannot open: %s", what, strerror(errno));
    struct stat stt;
    if (fstat(fileno(f), &stt) != 0 || !S_ISREG(stt.st_mode)) {
        fclose(f);
        return pvc_fail(msg, PV_EINPUT, "%s: not a regular file", what);
    }
    file_src fs = { f, what };
    pvio_reader r = { file_read, &fs, (uint64_t)stt.st_size };
    pv_status s = pvio_npy_read(&r, what, out, msg);
    fclose(f);
    return s;
}

void pvio_tensor_free_data(pvc_tensor *t)
{
    if (!t) return;
    pvc_free_aligned(t->data);
    t->data = NULL;
}

/* ---- writing ------------------------------------------------------------------------------ */
#define NPY_HDR_CAP 512

/* Validates t and builds the preamble + header (padded so data starts at a multiple of 64). */
static pv_status build_header(const pvc_tensor *t, char *hdr, size_t *hlen, uint64_t *nbytes,
                              pvc_msg *msg)
{
    static const char *const codes[PV_DTYPE_COUNT] = {
        [PV_F32] = "f4", [PV_F16] = "f2", [PV_BF16] = NULL, [PV_I64] = "i8", [PV_I32] = "i4",
        [PV_I8] = "i1", [PV_U8] = "u1", [PV_BOOL] = "b1",
    };
    if ((unsigned)t->dtype >= PV_DTYPE_COUNT)
        return pvc_fail(msg, PV_EINPUT, "npy: invalid dtype %d", (int)t->dtype);
    if (!codes[t->dtype])
        return pvc_fail(msg, PV_EUNSUPPORTED, "npy: %s has no NumPy dtype; convert to float32 "
                        "before writing", pv_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > PV_MAX_RANK)
        return pvc_fail(msg, PV_EINPUT, "npy: rank %d is outside 0..%d", t->rank, PV_MAX_RANK);
    char sh[256];
    int64_t nb = 0;
    shape_check c = shape_bytes(t->dims, t->rank, t->dtype, &nb);
    fmt_shape(sh, sizeof sh, t->dims, t->rank);
    if (c == SHAPE_NEGATIVE)
        return pvc_fail(msg, PV_EINPUT, "npy: shape %s has a negative dimension", sh);
    if (c == SHAPE_OVERFLOW || (uint64_t)nb > PVIO_MAX_ARRAY_BYTES ||
        (uint64_t)nb > SIZE_MAX - NPY_HDR_CAP)
        return pvc_fail(msg, PV_EINPUT, "npy: shape %s of %s is too large to write", sh,
                        pv_dtype_name(t->dtype));
    if (nb > 0 && !t->data) return pvc_fail(msg, PV_EINPUT, "npy: tensor data is NULL");

    char order = pv_dtype_size(t->dtype) == 1 ? '|' : host_le() ? '<' : '>';
    int n = snprintf(hdr + 10, NPY_HDR_CAP - 10, "{'descr': '%c%s', 'fortran_order': False, "
                     "'shape': %s, }", order, codes[t->dtype], sh);
    size_t total = 10 + (size_t)n + 1;                 /* + the closing '\n' */
    size_t padded = (total + 63) / 64 * 64;
    memset(hdr + 10 + n, ' ', padded - total);
    hdr[padded - 1] = '\n';
    memcpy(hdr, npy_magic, sizeof npy_magic);
    hdr[6] = 1;
    hdr[7] = 0;
    hdr[8] = (char)((padded - 10) & 0xff);
    hdr[9] = (char)((padded - 10) >> 8);
    *hlen = padded;
    *nbytes = (uint64_t)nb;
    return PV_OK;
}

static bool all_zero_strides(const pvc_tensor *t)
{
    for (int i = 0; i < t->rank; i++) if (t->strides[i] != 0) return false;
    return true;
}

/* Copies t's elements in C order to dst (nbytes long). */
static void copy_data(const pvc_tensor *t, void *dst, uint64_t nbytes)
{
    if (nbytes == 0) return;
    if (all_zero_strides(t) || pvc_tensor_is_contiguous(t)) memcpy(dst, t->data, (size_t)nbytes);
    else gather(dst, t->data, t->rank, t->dims, t->strides, pv_dtype_size(t->dtype));
}

pv_status pvio_npy_serialize(const pvc_tensor *t, void **buf, size_t *len, pvc_msg *msg)
{
    *buf = NULL;
    *len = 0;
    char hdr[NPY_HDR_CAP];
    size_t hlen;
    uint64_t nbytes;
    pv_status s = build_header(t, hdr, &hlen, &nbytes, msg);
    if (s != PV_OK) return s;
    unsigned char *b = pvc_malloc(hlen + (size_t)nbytes);
    if (!b) return pvc_fail(msg, PV_ENOMEM, "npy: out of memory for %llu bytes",
                            (unsigned long long)(hlen + nbytes));
    memcpy(b, hdr, hlen);
    copy_data(t, b + hlen, nbytes);
    *buf = b;
    *len = hlen + (size_t)nbytes;
    return PV_OK;
}

pv_status pvio_npy_write_file(const char *path, const pvc_tensor *t, pvc_msg *msg)
{
    char hdr[NPY_HDR_CAP];
    size_t hlen;
    uint64_t nbytes;
    pv_status s = build_header(t, hdr, &hlen, &nbytes, msg);
    if (s != PV_OK) return s;
    const void *data = t->data;
    void *tmp = NULL;
    if (nbytes && !(all_zero_strides(t) || pvc_tensor_is_contiguous(t))) {
        if (!(tmp = pvc_malloc((size_t)nbytes)))
            return pvc_fail(msg, PV_ENOMEM, "npy '%s': out of memory for %llu bytes", path,
                            (unsigned long long)nbytes);
        copy_data(t, tmp, nbytes);
        data = tmp;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        pvc_free(tmp);
        return pvc_fail(msg, PV_EINPUT, "npy '%s': cannot create: %s", path, strerror(errno));
    }
    bool ok = fwrite(hdr, 1, hlen, f) == hlen &&
              (nbytes == 0 || fwrite(data, 1, (size_t)nbytes, f) == nbytes);
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) { ok = false; err = errno; }
    pvc_free(tmp);
    if (!ok) {
        remove(path);
        return pvc_fail(msg, PV_EINPUT, "npy '%s': write failed: %s", path, strerror(err));
    }
    return PV_OK;
}
