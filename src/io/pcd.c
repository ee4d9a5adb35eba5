/* PCD (PCL's Point Cloud Data format) decoding: a line-oriented text header, then ascii,
 * binary (point-major) or binary_compressed (LZF over a field-major layout) data.
 * The header is tokenized in place (tokens point into the caller's buffer, which lives for
 * the whole call), checked as a whole once the DATA line is seen, and every size is checked
 * against the bytes actually present before anything is allocated. */
#include "io/points.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCD_MAX_COUNT   (1 << 20)   /* COUNT of one field */
#define PCD_MAX_TOKEN   128         /* one ascii value, with the NUL */
#define LZF_MAX_RATIO   88          /* 3 input bytes give at most 264 output bytes */

enum { KW_VERSION, KW_FIELDS, KW_SIZE, KW_TYPE, KW_COUNT, KW_WIDTH, KW_HEIGHT, KW_VIEWPOINT,
       KW_POINTS, KW_DATA, KW_N };
static const char *const kw_names[KW_N] = {
    "VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "VIEWPOINT", "POINTS", "DATA"
};

enum { DATA_ASCII, DATA_BINARY, DATA_COMPRESSED };

typedef struct tok { const char *p; size_t n; } tok;

typedef struct pcd_field {
    char    type;       /* 'F', 'I', 'U' */
    int     size;       /* bytes per element */
    int64_t count;      /* elements */
    int64_t off;        /* byte offset inside one point */
    int     col;        /* first output column; -1 for padding ("_") */
} pcd_field;

typedef struct pcd_hdr {
    int       nent[KW_N];                       /* entries on each keyword's line; -1: absent */
    tok       names[PVIO_PCD_MAX_FIELDS], sizes[PVIO_PCD_MAX_FIELDS],
              types[PVIO_PCD_MAX_FIELDS], counts[PVIO_PCD_MAX_FIELDS];
    pcd_field f[PVIO_PCD_MAX_FIELDS];
    int       nf;
    int64_t   width, height, points;
    int64_t   point_size;                       /* bytes per point */
    int64_t   nvalues;                          /* values per point (sum of COUNT) */
    float     viewpoint[7];
    int       data;
    size_t    data_off;                         /* first byte after the DATA line */
    int64_t   line;                             /* lines read so far */
    int       ncols;
    char      cols[PVIO_CLOUD_MAX_COLS][PVIO_CLOUD_NAME_LEN];
} pcd_hdr;

/* A token made printable and short for a message. */
static const char *show(const char *p, size_t n, char *buf, size_t cap)
{
    size_t k = 0, lim = n > 40 ? 37 : n;
    for (size_t i = 0; i < lim && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        buf[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    for (size_t i = 0; n > lim && i < 3 && k + 1 < cap; i++) buf[k++] = '.';
    buf[k] = '\0';
    return buf;
}
#define SHOW(t, b) show((t).p, (t).n, (b), sizeof (b))

static bool tok_is(tok t, const char *s)
{
    return t.n == strlen(s) && memcmp(t.p, s, t.n) == 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Splits [p, e) at spaces/tabs; stores at most cap tokens, returns how many there are. */
static int64_t tokenize(const char *p, const char *e, tok *out, int cap)
{
    int64_t n = 0;
    while (p < e) {
        while (p < e && is_space(*p)) p++;
        if (p == e) break;
        const char *s = p;
        while (p < e && !is_space(*p)) p++;
        if (n < cap) out[n] = (tok){ s, (size_t)(p - s) };
        n++;
    }
    return n;
}

/* A decimal integer without sign in 0..max. */
static bool tok_uint(tok t, int64_t max, int64_t *v)
{
    if (t.n == 0 || t.n > 19) return false;
    int64_t acc = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (t.p[i] < '0' || t.p[i] > '9') return false;
        int d = t.p[i] - '0';
        if (acc > (max - d) / 10) return false;   /* 19 nines overflowed int64 (fuzz_pcd) */
        acc = acc * 10 + d;
    }
    if (acc > max) return false;
    *v = acc;
    return true;
}

/* A number through strtod/strtof on a NUL-terminated copy; the whole token must be used. */
static bool tok_double(tok t, double *v)
{
    char b[PCD_MAX_TOKEN];
    if (t.n == 0 || t.n >= sizeof b) return false;
    memcpy(b, t.p, t.n);
    b[t.n] = '\0';
    char *end;
    *v = strtod(b, &end);
    return end == b + t.n;
}

static bool tok_float(tok t, float *v)
{
    char b[PCD_MAX_TOKEN];
    if (t.n == 0 || t.n >= sizeof b) return false;
    memcpy(b, t.p, t.n);
    b[t.n] = '\0';
    char *end;
    *v = strtof(b, &end);
    return end == b + t.n;
}

/* double -> float without the undefined out-of-range conversion. */
static float d2f(double d)
{
    if (d > FLT_MAX) return INFINITY;
    if (d < -FLT_MAX) return -INFINITY;
    return (float)d;
}

/* ---- header ------------------------------------------------------------------------------- */
static pv_status parse_keyword(pcd_hdr *h, int kw, const tok *v, int n, pvc_msg *msg)
{
    char b[48];
    const char *name = kw_names[kw];
    switch (kw) {
    case KW_VERSION:
        if (n != 1) break;
        if (tok_is(v[0], "0.7") || tok_is(v[0], ".7") || tok_is(v[0], "0.6") ||
            tok_is(v[0], ".6") || tok_is(v[0], "0.5") || tok_is(v[0], ".5"))
            return PV_OK;
        return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: VERSION '%s' is not supported (0.7, 0.6 and "
                        "0.5 are)", SHOW(v[0], b));
    case KW_FIELDS: case KW_SIZE: case KW_TYPE: case KW_COUNT: {
        if (n == 0) break;
        tok *dst = kw == KW_FIELDS ? h->names : kw == KW_SIZE ? h->sizes
                 : kw == KW_TYPE ? h->types : h->counts;
        memcpy(dst, v, (size_t)n * sizeof *v);
        return PV_OK;
    }
    case KW_WIDTH: case KW_HEIGHT: case KW_POINTS: {
        if (n != 1) break;
        int64_t *dst = kw == KW_WIDTH ? &h->width : kw == KW_HEIGHT ? &h->height : &h->points;
        if (!tok_uint(v[0], (int64_t)1 << 62, dst))
            return pvc_fail(msg, PV_EFORMAT, "pcd: %s '%s' is not a non-negative integer", name,
                            SHOW(v[0], b));
        return PV_OK;
    }
    case KW_VIEWPOINT:
        if (n != 7) break;
        for (int i = 0; i < 7; i++) {
            double d;
            if (!tok_double(v[i], &d) || !isfinite(d) || fabs(d) > FLT_MAX)
                return pvc_fail(msg, PV_EFORMAT, "pcd: VIEWPOINT value %d '%s' is not a finite "
                                "number", i + 1, SHOW(v[i], b));
            h->viewpoint[i] = (float)d;
        }
        return PV_OK;
    case KW_DATA:
        if (n != 1) break;
        if (tok_is(v[0], "ascii")) h->data = DATA_ASCII;
        else if (tok_is(v[0], "binary")) h->data = DATA_BINARY;
        else if (tok_is(v[0], "binary_compressed")) h->data = DATA_COMPRESSED;
        else return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: DATA '%s' is not supported (ascii, "
                             "binary and binary_compressed are)", SHOW(v[0], b));
        return PV_OK;
    }
    return pvc_fail(msg, PV_EFORMAT, "pcd: %s needs %s, line %lld has %d value%s", name,
                    kw == KW_VIEWPOINT ? "7 values" : kw <= KW_COUNT && kw != KW_VERSION
                    ? "at least 1 value" : "1 value", (long long)h->line, n, n == 1 ? "" : "s");
}

/* Reads header lines up to and including DATA. */
static pv_status read_header(const char *b, size_t len, pcd_hdr *h, pvc_msg *msg)
{
    size_t lim = PVC_MIN(len, (size_t)PVIO_PCD_MAX_HEADER), pos = 0;
    tok t[PVIO_PCD_MAX_FIELDS + 1];
    char sb[48];
    for (;;) {
        if (pos >= lim || (!memchr(b + pos, '\n', lim - pos) && lim < len)) {
            if (lim < len)
                return pvc_fail(msg, PV_EFORMAT, "pcd: no DATA line in the first %u bytes",
                                PVIO_PCD_MAX_HEADER);
            return pvc_fail(msg, PV_EFORMAT, "pcd: the header ends after %lld lines (%zu bytes) "
                            "without a DATA line", (long long)h->line, len);
        }
        const char *s = b + pos, *nl = memchr(s, '\n', lim - pos);
        const char *e = nl ? nl : b + lim;
        pos = (size_t)(e - b) + (nl ? 1 : 0);
        h->line++;
        int64_t nt = tokenize(s, e, t, PVIO_PCD_MAX_FIELDS + 1);
        if (nt == 0 || t[0].p[0] == '#') continue;
        int kw = 0;
        while (kw < KW_N && !tok_is(t[0], kw_names[kw])) kw++;
        if (kw == KW_N) {
            if (h->line == 1 || (h->nent[KW_FIELDS] < 0 && h->nent[KW_VERSION] < 0))
                return pvc_fail(msg, PV_EFORMAT, "pcd: not a PCD header: line %lld starts with "
                                "'%s'", (long long)h->line, SHOW(t[0], sb));
            return pvc_fail(msg, PV_EFORMAT, "pcd: unknown header keyword '%s' on line %lld",
                            SHOW(t[0], sb), (long long)h->line);
        }
        if (h->nent[kw] >= 0)
            return pvc_fail(msg, PV_EFORMAT, "pcd: %s appears twice (line %lld)", kw_names[kw],
                            (long long)h->line);
        if (nt - 1 > PVIO_PCD_MAX_FIELDS)
            return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: %s has %lld entries, at most %d are "
                            "supported", kw_names[kw], (long long)(nt - 1), PVIO_PCD_MAX_FIELDS);
        h->nent[kw] = (int)(nt - 1);
        pv_status st = parse_keyword(h, kw, t + 1, (int)(nt - 1), msg);
        if (st != PV_OK) return st;
        if (kw == KW_DATA) {
            h->data_off = pos;
            return PV_OK;
        }
    }
}

static bool is_padding(tok name) { return tok_is(name, "_"); }

/* Adds output column name (already checked for length); refuses a duplicate. */
static pv_status add_col(pcd_hdr *h, const char *name, pvc_msg *msg)
{
    for (int c = 0; c < h->ncols; c++)
        if (strcmp(h->cols[c], name) == 0)
            return pvc_fail(msg, PV_EFORMAT, "pcd: column name '%s' appears twice in FIELDS",
                            name);
    if (h->ncols == PVIO_CLOUD_MAX_COLS)
        return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: the fields make more than %d columns (COUNT "
                        "> 1 fields count once per element)", PVIO_CLOUD_MAX_COLS);
    snprintf(h->cols[h->ncols++], PVIO_CLOUD_NAME_LEN, "%s", name);
    return PV_OK;
}

/* Checks one field's SIZE/TYPE/COUNT and the name's characters. */
static pv_status check_field(pcd_hdr *h, int i, pvc_msg *msg)
{
    char nb[48], vb[48];
    tok nm = h->names[i];
    const char *fname = SHOW(nm, nb);
    for (size_t k = 0; k < nm.n; k++)
        if ((unsigned char)nm.p[k] < 0x21 || (unsigned char)nm.p[k] > 0x7e)
            return pvc_fail(msg, PV_EFORMAT, "pcd: field name '%s' has a non-printable byte",
                            fname);
    if (nm.n >= PVIO_CLOUD_NAME_LEN)
        return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: field name '%s' is longer than %d "
                        "characters", fname, PVIO_CLOUD_NAME_LEN - 1);
    pcd_field *f = &h->f[i];
    int64_t sz = 0;
    if (!tok_uint(h->sizes[i], 8, &sz) || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
        return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' has SIZE '%s' (1, 2, 4 or 8 expected)",
                        fname, SHOW(h->sizes[i], vb));
    f->size = (int)sz;
    tok ty = h->types[i];
    if (ty.n != 1 || (ty.p[0] != 'F' && ty.p[0] != 'I' && ty.p[0] != 'U'))
        return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' has TYPE '%s' (F, I or U expected)",
                        fname, SHOW(ty, vb));
    f->type = ty.p[0];
    if (f->type == 'F' && f->size == 1)
        return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' is TYPE F with SIZE 1 (F needs 2, 4 "
                        "or 8)", fname);
    f->count = 1;
    if (h->nent[KW_COUNT] >= 0 && !tok_uint(h->counts[i], PCD_MAX_COUNT, &f->count))
        return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' has COUNT '%s' (1..%d expected)",
                        fname, SHOW(h->counts[i], vb), PCD_MAX_COUNT);
    if (f->count < 1)
        return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' has COUNT 0 (1..%d expected)", fname,
                        PCD_MAX_COUNT);
    f->off = h->point_size;
    h->point_size += f->size * f->count;
    h->nvalues += f->count;
    f->col = -1;
    return PV_OK;
}

/* Lays out output columns: x, y, z first (the first field of each name), then the other
 * fields in file order; a repeated name is refused by add_col. */
static pv_status assign_columns(pcd_hdr *h, pvc_msg *msg)
{
    static const char *const xyz[3] = { "x", "y", "z" };
    int first[3];
    for (int a = 0; a < 3; a++) {
        int i = 0;
        while (i < h->nf && !tok_is(h->names[i], xyz[a])) i++;
        if (i == h->nf)
            return pvc_fail(msg, PV_EFORMAT, "pcd: FIELDS has no '%s' (x, y and z are required)",
                            xyz[a]);
        if (h->f[i].count != 1)
            return pvc_fail(msg, PV_EFORMAT, "pcd: field '%s' has COUNT %lld (x, y and z need "
                            "COUNT 1)", xyz[a], (long long)h->f[i].count);
        first[a] = i;
        h->f[i].col = h->ncols;
        pv_status s = add_col(h, xyz[a], msg);
        if (s != PV_OK) return s;
    }
    for (int i = 0; i < h->nf; i++) {
        tok nm = h->names[i];
        if (is_padding(nm) || i == first[0] || i == first[1] || i == first[2]) continue;
        char name[PVIO_CLOUD_NAME_LEN];
        memcpy(name, nm.p, nm.n);
        name[nm.n] = '\0';
        if (h->f[i].count > PVIO_CLOUD_MAX_COLS)
            return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: field '%s' has COUNT %lld, more than the "
                            "%d columns a cloud can hold", name, (long long)h->f[i].count,
                            PVIO_CLOUD_MAX_COLS);
        h->f[i].col = h->ncols;
        for (int64_t k = 0; k < h->f[i].count; k++) {
            char cn[PVIO_CLOUD_NAME_LEN + 24];
            if (h->f[i].count == 1) snprintf(cn, sizeof cn, "%s", name);
            else snprintf(cn, sizeof cn, "%s_%lld", name, (long long)k);
            if (strlen(cn) >= PVIO_CLOUD_NAME_LEN)
                return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: column name '%s' (field '%s' of "
                                "COUNT %lld) is longer than %d characters", cn, name,
                                (long long)h->f[i].count, PVIO_CLOUD_NAME_LEN - 1);
            pv_status s = add_col(h, cn, msg);
            if (s != PV_OK) return s;
        }
    }
    return PV_OK;
}

/* Cross-checks the header lines once DATA has been read. */
static pv_status check_header(pcd_hdr *h, pvc_msg *msg)
{
    static const int required[] = { KW_FIELDS, KW_SIZE, KW_TYPE };
    for (size_t r = 0; r < PVC_COUNTOF(required); r++)
        if (h->nent[required[r]] < 0)
            return pvc_fail(msg, PV_EFORMAT, "pcd: the header has no %s line",
                            kw_names[required[r]]);
    h->nf = h->nent[KW_FIELDS];
    for (int kw = KW_SIZE; kw <= KW_COUNT; kw++)
        if (h->nent[kw] >= 0 && h->nent[kw] != h->nf)
            return pvc_fail(msg, PV_EFORMAT, "pcd: FIELDS has %d name%s but %s has %d", h->nf,
                            h->nf == 1 ? "" : "s", kw_names[kw], h->nent[kw]);
    for (int i = 0; i < h->nf; i++) {
        pv_status s = check_field(h, i, msg);
        if (s != PV_OK) return s;
    }
    pv_status s = assign_columns(h, msg);
    if (s != PV_OK) return s;

    bool hw = h->nent[KW_WIDTH] >= 0, hh = h->nent[KW_HEIGHT] >= 0, hp = h->nent[KW_POINTS] >= 0;
    if (!hw && hh) return pvc_fail(msg, PV_EFORMAT, "pcd: HEIGHT is given without WIDTH");
    if (!hw && !hp)
        return pvc_fail(msg, PV_EFORMAT, "pcd: the header has neither POINTS nor WIDTH");
    if (!hh) h->height = 1;
    if (!hw) h->width = h->points;
    int64_t wh = 0;
    bool ovf = pvc_mul_overflow(h->width, h->height, &wh);
    if (!hp) {
        if (ovf) return pvc_fail(msg, PV_EFORMAT, "pcd: WIDTH %lld x HEIGHT %lld overflows",
                                 (long long)h->width, (long long)h->height);
        h->points = wh;
    }
    if (ovf || wh != h->points)
        return pvc_fail(msg, PV_EFORMAT, "pcd: POINTS %lld but WIDTH*HEIGHT = %s%lld (%lld x %lld)",
                        (long long)h->points, ovf ? "(overflow) " : "", ovf ? 0LL : (long long)wh,
                        (long long)h->width, (long long)h->height);
    /* HEIGHT 0 (PCL's default for an empty cloud) leaves POINTS 0: report it as the empty
     * unorganized cloud (0, 1), so width * height == n with height >= 1 always holds */
    if (h->height == 0) h->width = 0, h->height = 1;
    if (h->points > PVIO_MAX_POINTS)
        return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: POINTS %lld is over the %lld-point limit",
                        (long long)h->points, (long long)PVIO_MAX_POINTS);
    if ((uint64_t)h->points * (uint64_t)h->ncols * sizeof(float) > PVIO_MAX_CLOUD_BYTES)
        return pvc_fail(msg, PV_EUNSUPPORTED, "pcd: POINTS %lld x %d columns is over the "
                        "%llu-byte limit", (long long)h->points, h->ncols,
                        (unsigned long long)PVIO_MAX_CLOUD_BYTES);
    return PV_OK;
}

/* ---- values ------------------------------------------------------------------------------- */
/* One little-endian element of a field, as float. */
static float load_le(const unsigned char *p, char type, int size)
{
    uint64_t u = 0;
    for (int i = 0; i < size; i++) u |= (uint64_t)p[i] << (8 * i);
    if (type == 'F') {
        if (size == 2) return pvc_f16_to_f32((uint16_t)u);
        if (size == 4) {
            uint32_t w = (uint32_t)u;
            float f;
            memcpy(&f, &w, 4);
            return f;
        }
        double d;
        memcpy(&d, &u, 8);
        return d2f(d);
    }
    if (type == 'U') return (float)u;
    int64_t v;
    if (size == 8) memcpy(&v, &u, 8);
    else {
        uint64_t sign = (uint64_t)1 << (8 * size - 1);
        v = (int64_t)(u ^ sign) - (int64_t)sign;            /* sign-extend */
    }
    return (float)v;
}

/* Copies every non-padding element into the cloud. Element k of field f of point i lies at
 * src + start[f] + i * stride[f] + k * size (point-major: start = off, stride = point size;
 * field-major: start = n * off, stride = field size). */
static void decode_binary(const pcd_hdr *h, const unsigned char *src, bool field_major,
                          float *out)
{
    int64_t n = h->points;
    for (int f = 0; f < h->nf; f++) {
        const pcd_field *fd = &h->f[f];
        if (fd->col < 0 || is_padding(h->names[f])) continue;
        int64_t start = field_major ? n * fd->off : fd->off;
        int64_t stride = field_major ? fd->size * fd->count : h->point_size;
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *p = src + start + i * stride;
            float *o = out + i * h->ncols + fd->col;
            for (int64_t k = 0; k < fd->count; k++) o[k] = load_le(p + k * fd->size, fd->type,
                                                                 fd->size);
        }
    }
}

/* An ascii integer of the field's type and size: optional sign, decimal digits, in range. */
static bool ascii_int(tok t, char type, int size, float *v)
{
    size_t i = 0;
    bool neg = false;
    if (i < t.n && (t.p[i] == '-' || t.p[i] == '+')) neg = t.p[i++] == '-';
    if (i == t.n) return false;
    uint64_t acc = 0;
    for (; i < t.n; i++) {
        if (t.p[i] < '0' || t.p[i] > '9') return false;
        unsigned d = (unsigned)(t.p[i] - '0');
        if (acc > (UINT64_MAX - d) / 10) return false;
        acc = acc * 10 + d;
    }
    int bits = 8 * size;
    if (type == 'U') {
        uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        if ((neg && acc != 0) || acc > max) return false;
        *v = (float)acc;
        return true;
    }
    uint64_t lim = (uint64_t)1 << (bits - 1);       /* |min|; max is lim - 1 */
    if (acc > (neg ? lim : lim - 1)) return false;
    *v = neg ? (acc == lim ? -(float)lim : -(float)(int64_t)acc) : (float)acc;
    return true;
}

static bool ascii_value(tok t, const pcd_field *f, float *v)
{
    if (f->type != 'F') return ascii_int(t, f->type, f->size, v);
    if (f->size == 8) {
        double d;
        if (!tok_double(t, &d)) return false;
        *v = d2f(d);
        return true;
    }
    return tok_float(t, v);
}

static bool blank(const char *p, const char *e)
{
    for (; p < e; p++) if (!is_space(*p)) return false;
    return true;
}

static pv_status decode_ascii(pcd_hdr *h, const char *b, size_t len, float *out, pvc_msg *msg)
{
    size_t pos = h->data_off;
    int64_t line = h->line;
    char vb[48];
    for (int64_t i = 0; i < h->points; i++) {
        const char *s, *e;
        for (;;) {                                   /* next non-blank line */
            if (pos >= len)
                return pvc_fail(msg, PV_EFORMAT, "pcd: ascii data ends after %lld of POINTS %lld "
                                "points", (long long)i, (long long)h->points);
            s = b + pos;
            const char *nl = memchr(s, '\n', len - pos);
            e = nl ? nl : b + len;
            pos = (size_t)(e - b) + (nl ? 1 : 0);
            line++;
            if (!blank(s, e)) break;
        }
        int f = 0;
        int64_t k = 0, got = 0;
        const char *p = s;
        for (;;) {
            while (p < e && is_space(*p)) p++;
            if (p == e) break;
            tok t = { p, 0 };
            while (p < e && !is_space(*p)) p++;
            t.n = (size_t)(p - t.p);
            if (got == h->nvalues)
                return pvc_fail(msg, PV_EFORMAT, "pcd: ascii point %lld (line %lld) has more "
                                "than %lld values", (long long)i, (long long)line,
                                (long long)h->nvalues);
            const pcd_field *fd = &h->f[f];
            if (!is_padding(h->names[f])) {
                float v;
                if (!ascii_value(t, fd, &v)) {
                    char nb[48];
                    return pvc_fail(msg, PV_EFORMAT, "pcd: ascii point %lld (line %lld): field "
                                    "'%s' value '%s' is not a valid %c%d value", (long long)i,
                                    (long long)line, SHOW(h->names[f], nb), SHOW(t, vb),
                                    fd->type, fd->size);
                }
                out[i * h->ncols + fd->col + k] = v;
            }
            got++;
            if (++k == fd->count) { k = 0; f++; }
        }
        if (got != h->nvalues)
            return pvc_fail(msg, PV_EFORMAT, "pcd: ascii point %lld (line %lld) has %lld values, "
                            "expected %lld", (long long)i, (long long)line, (long long)got,
                            (long long)h->nvalues);
    }
    while (pos < len) {
        const char *s = b + pos, *nl = memchr(s, '\n', len - pos);
        const char *e = nl ? nl : b + len;
        pos = (size_t)(e - b) + (nl ? 1 : 0);
        line++;
        if (!blank(s, e))
            return pvc_fail(msg, PV_EFORMAT, "pcd: ascii data has more than POINTS %lld points "
                            "(line %lld)", (long long)h->points, (long long)line);
    }
    return PV_OK;
}

/* ---- LZF ---------------------------------------------------------------------------------- */
/* liblzf's format: a control byte c < 32 is followed by c + 1 literal bytes; otherwise the
 * top 3 bits give a length L (7 means: add the next byte), the low 5 bits and the next byte a
 * distance D, and L + 2 bytes are copied from D + 1 bytes back in the output (the regions
 * may overlap, so byte by byte). Exactly cap bytes must come out of exactly n bytes. */
static pv_status lzf_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap,
                            pvc_msg *msg)
{
    size_t ip = 0, op = 0;
    while (ip < n) {
        size_t at = ip;
        unsigned c = in[ip++];
        if (c < 32) {
            size_t run = (size_t)c + 1;
            if (run > n - ip)
                return pvc_fail(msg, PV_EFORMAT, "pcd: LZF literal run of %zu bytes at compressed "
                                "byte %zu passes the end of the data (%zu bytes)", run, at, n);
            if (run > cap - op)
                return pvc_fail(msg, PV_EFORMAT, "pcd: LZF literal run at compressed byte %zu "
                                "overflows the uncompressed size %zu", at, cap);
            memcpy(out + op, in + ip, run);
            ip += run;
            op += run;
            continue;
        }
        size_t ln = c >> 5;
        if (ln == 7) {
            if (ip >= n) goto truncated;
            ln += in[ip++];
        }
        if (ip >= n) goto truncated;
        size_t back = ((size_t)(c & 31) << 8 | in[ip++]) + 1;
        ln += 2;
        if (back > op)
            return pvc_fail(msg, PV_EFORMAT, "pcd: LZF back-reference at compressed byte %zu "
                            "reaches %zu bytes back, before the start (%zu bytes written)", at,
                            back, op);
        if (ln > cap - op)
            return pvc_fail(msg, PV_EFORMAT, "pcd: LZF back-reference at compressed byte %zu "
                            "overflows the uncompressed size %zu", at, cap);
        for (size_t k = 0; k < ln; k++, op++) out[op] = out[op - back];
        continue;
    truncated:
        return pvc_fail(msg, PV_EFORMAT, "pcd: LZF back-reference at compressed byte %zu is cut "
                        "off by the end of the data", at);
    }
    if (op != cap)
        return pvc_fail(msg, PV_EFORMAT, "pcd: LZF data decompresses to %zu bytes, the header "
                        "says %zu", op, cap);
    return PV_OK;
}

/* ---- entry -------------------------------------------------------------------------------- */
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks the data section's size; *raw = the binary bytes (for compressed: inflated into *tmp). */
static pv_status binary_source(const pcd_hdr *h, const unsigned char *b, size_t len,
                               const unsigned char **raw, unsigned char **tmp, pvc_msg *msg)
{
    size_t rem = len - h->data_off;
    uint64_t need = (uint64_t)h->points * (uint64_t)h->point_size;
    const unsigned char *d = b + h->data_off;
    /* Bytes after the data are ignored: PCL itself stretches binary files by a page
     * (getpagesize() + data size) and pads binary_compressed ones to a page, with zeros. */
    if (h->data == DATA_BINARY) {
        if (rem < need)
            return pvc_fail(msg, PV_EFORMAT, "pcd: binary data is truncated: POINTS %lld x %lld "
                            "bytes = %llu bytes, the file has %zu after the header",
                            (long long)h->points, (long long)h->point_size,
                            (unsigned long long)need, rem);
        *raw = d;
        return PV_OK;
    }
    if (rem < 8)
        return pvc_fail(msg, PV_EFORMAT, "pcd: binary_compressed data is truncated: %zu bytes "
                        "after the header, the two sizes need 8", rem);
    uint32_t csize = le32(d), usize = le32(d + 4);
    if (usize != need)
        return pvc_fail(msg, PV_EFORMAT, "pcd: binary_compressed uncompressed size %u but POINTS "
                        "%lld x %lld bytes = %llu", usize, (long long)h->points,
                        (long long)h->point_size, (unsigned long long)need);
    if (csize > rem - 8)
        return pvc_fail(msg, PV_EFORMAT, "pcd: binary_compressed data is truncated: compressed "
                        "size %u but %zu bytes follow the sizes", csize, rem - 8);
    if ((uint64_t)usize > (uint64_t)csize * LZF_MAX_RATIO)
        return pvc_fail(msg, PV_EFORMAT, "pcd: binary_compressed claims %u bytes from %u "
                        "compressed bytes (LZF expands at most %dx)", usize, csize, LZF_MAX_RATIO);
    *tmp = pvc_malloc(usize ? usize : 1);
    if (!*tmp) return pvc_fail(msg, PV_ENOMEM, "pcd: out of memory for %u decompressed bytes",
                               usize);
    *raw = *tmp;
    return lzf_decode(d + 8, csize, *tmp, usize, msg);
}

pv_status pvio_pcd_parse(const void *buf, size_t len, pvio_cloud *out, pvc_msg *msg)
{
    memset(out, 0, sizeof *out);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "pcd: NULL buffer of %zu bytes", len);
    if (len == 0) return pvc_fail(msg, PV_EFORMAT, "pcd: empty input");
    pcd_hdr *h = pvc_calloc(1, sizeof *h);
    if (!h) return pvc_fail(msg, PV_ENOMEM, "pcd: out of memory for the header");
    for (int k = 0; k < KW_N; k++) h->nent[k] = -1;
    static const float identity[7] = { 0, 0, 0, 1, 0, 0, 0 };
    memcpy(h->viewpoint, identity, sizeof identity);

    const unsigned char *b = buf, *raw = NULL;
    unsigned char *tmp = NULL;
    float *data = NULL;
    pv_status s = read_header(buf, len, h, msg);
    if (s == PV_OK) s = check_header(h, msg);
    if (s != PV_OK) goto fail;
    if (h->data == DATA_ASCII) {
        /* each point needs at least one byte per value and a separator after all but the last */
        uint64_t min = h->points ? (uint64_t)h->points * (uint64_t)h->nvalues * 2 - 1 : 0;
        if (len - h->data_off < min) {
            s = pvc_fail(msg, PV_EFORMAT, "pcd: ascii data of %zu bytes is too short for POINTS "
                         "%lld x %lld values", len - h->data_off, (long long)h->points,
                         (long long)h->nvalues);
            goto fail;
        }
    } else if ((s = binary_source(h, b, len, &raw, &tmp, msg)) != PV_OK) {
        goto fail;
    }
    size_t nbytes = (size_t)h->points * (size_t)h->ncols * sizeof(float);
    if (!(data = pvc_malloc_aligned(nbytes))) {
        s = pvc_fail(msg, PV_ENOMEM, "pcd: out of memory for %zu bytes of points", nbytes);
        goto fail;
    }
    if (h->data == DATA_ASCII) s = decode_ascii(h, buf, len, data, msg);
    else decode_binary(h, raw, h->data == DATA_COMPRESSED, data);
    if (s != PV_OK) goto fail;

    out->n = h->points;
    out->ncols = h->ncols;
    memcpy(out->names, h->cols, sizeof h->cols);
    out->data = data;
    out->width = h->width;
    out->height = h->height;
    memcpy(out->viewpoint, h->viewpoint, sizeof h->viewpoint);
    pvc_free(tmp);
    pvc_free(h);
    return PV_OK;
fail:
    pvc_free_aligned(data);
    pvc_free(tmp);
    pvc_free(h);
    return s;
}
