/* Tests for src/io/points (PCD, raw point binaries, .npy clouds, format choice, NaN dropping).
 *
 * PCD files are made here by a small writer (ascii, binary, and binary_compressed through
 * the LZF compressor below), so every value is known; the decoder is checked against the
 * values the writer was given. Hostile input: a table of malformed headers and data,
 * hand-built LZF streams, every truncation of small binary / compressed / ascii files and
 * byte mutations at every offset, all parsed from exact-size heap copies so that ASan sees
 * any over-read. Allocation failures are injected into every parser.
 *
 * tests/fixtures/points/ holds small files this test wrote (PV_POINTS_WRITE_FIXTURES=1
 * regenerates them) plus one binary_compressed file converted from the ascii one by PCL's
 * own pcl_convert_pcd_ascii_binary (a check on the LZF/field-major reading against PCL).
 * The real sample files of ../shared/data/lidar are checked when present and skipped
 * otherwise (CI has no shared data). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/points.h"
#include "io/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- byte buffer (plain malloc: not counted by the allocator under test) ------------------ */
typedef struct sbuf { unsigned char *p; size_t n, cap; } sbuf;

static void sb_put(sbuf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < sizeof tmp);
    sb_put(b, tmp, (size_t)k);
}

static void sb_free(sbuf *b) { free(b->p); memset(b, 0, sizeof *b); }

/* An exact-size heap copy, so reading past len is an ASan error. */
static void *dup_exact(const void *p, size_t n)
{
    void *d = malloc(n ? n : 1);
    assert_non_null(d);
    if (n) memcpy(d, p, n);
    return d;
}

/* ---- LZF compressor: greedy, brute-force longest match within the 8 KiB window --------- */
static size_t lzf_flush(const unsigned char *in, size_t from, size_t to, unsigned char *out,
                        size_t op)
{
    while (from < to) {
        size_t run = to - from > 32 ? 32 : to - from;
        out[op++] = (unsigned char)(run - 1);
        memcpy(out + op, in + from, run);
        op += run;
        from += run;
    }
    return op;
}

/* out must hold n + n / 32 + 1 bytes. */
static size_t lzf_compress(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t ip = 0, op = 0, lit = 0;
    while (ip < n) {
        size_t best = 0, bestd = 0, maxd = ip < 8192 ? ip : 8192;
        for (size_t d = 1; d <= maxd && ip + 3 <= n; d++) {
            size_t l = 0;
            while (ip + l < n && l < 264 && in[ip + l] == in[ip - d + l]) l++;
            if (l > best) { best = l; bestd = d; }
        }
        if (best < 3) { ip++; continue; }
        op = lzf_flush(in, lit, ip, out, op);
        size_t L = best - 2, D = bestd - 1;
        if (L < 7) {
            out[op++] = (unsigned char)(L << 5 | D >> 8);
        } else {
            out[op++] = (unsigned char)(7 << 5 | D >> 8);
            out[op++] = (unsigned char)(L - 7);
        }
        out[op++] = (unsigned char)(D & 255);
        ip += best;
        lit = ip;
    }
    return lzf_flush(in, lit, n, out, op);
}

/* ---- PCD writer --------------------------------------------------------------------------- */
typedef struct tfield { const char *name; char type; int size; int count; } tfield;
enum { M_ASCII, M_BINARY, M_COMPRESSED };
static const char *const mode_names[3] = { "ascii", "binary", "binary_compressed" };

static int nvalues(const tfield *f, int nf)
{
    int k = 0;
    for (int i = 0; i < nf; i++) k += f[i].count;
    return k;
}

static void store_le(unsigned char *p, char type, int size, double v)
{
    uint64_t u = 0;
    if (type == 'F') {
        if (size == 2) u = pvc_f32_to_f16((float)v);
        else if (size == 4) { float f = (float)v; uint32_t w; memcpy(&w, &f, 4); u = w; }
        else memcpy(&u, &v, 8);
    } else if (type == 'I') {
        int64_t s = (int64_t)v;
        memcpy(&u, &s, 8);
    } else {
        u = (uint64_t)v;
    }
    for (int i = 0; i < size; i++) p[i] = (unsigned char)(u >> (8 * i));
}

static void write_ascii_value(sbuf *b, char type, int size, double v)
{
    if (type == 'F') {
        if (isnan(v)) sb_printf(b, "nan");
        else if (size == 4) sb_printf(b, "%.9g", (float)v);
        else sb_printf(b, "%.17g", v);
    } else if (type == 'I') {
        sb_printf(b, "%lld", (long long)v);
    } else {
        sb_printf(b, "%llu", (unsigned long long)v);
    }
}

static void pcd_header(sbuf *b, const tfield *f, int nf, int64_t w, int64_t h, const char *mode)
{
    sb_printf(b, "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS");
    for (int i = 0; i < nf; i++) sb_printf(b, " %s", f[i].name);
    sb_printf(b, "\nSIZE");
    for (int i = 0; i < nf; i++) sb_printf(b, " %d", f[i].size);
    sb_printf(b, "\nTYPE");
    for (int i = 0; i < nf; i++) sb_printf(b, " %c", f[i].type);
    sb_printf(b, "\nCOUNT");
    for (int i = 0; i < nf; i++) sb_printf(b, " %d", f[i].count);
    sb_printf(b, "\nWIDTH %lld\nHEIGHT %lld\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %lld\nDATA %s\n",
              (long long)w, (long long)h, (long long)(w * h), mode);
}

/* vals: w*h points x nvalues doubles, point-major. */
static void pcd_write(sbuf *b, const tfield *f, int nf, int64_t w, int64_t h,
                      const double *vals, int mode)
{
    int64_t n = w * h;
    int nv = nvalues(f, nf);
    pcd_header(b, f, nf, w, h, mode_names[mode]);
    if (mode == M_ASCII) {
        for (int64_t i = 0; i < n; i++) {
            int j = 0;
            for (int a = 0; a < nf; a++)
                for (int k = 0; k < f[a].count; k++, j++) {
                    if (j) sb_printf(b, " ");
                    write_ascii_value(b, f[a].type, f[a].size, vals[i * nv + j]);
                }
            sb_printf(b, "\n");
        }
        return;
    }
    size_t psize = 0;
    for (int a = 0; a < nf; a++) psize += (size_t)(f[a].size * f[a].count);
    size_t total = psize * (size_t)n;
    unsigned char *raw = calloc(total + 1, 1);
    assert_non_null(raw);
    size_t foff = 0;                                 /* field offset inside a point */
    for (int a = 0, j0 = 0; a < nf; j0 += f[a].count, foff += (size_t)(f[a].size * f[a].count),
         a++) {
        size_t fs = (size_t)(f[a].size * f[a].count);
        for (int64_t i = 0; i < n; i++)
            for (int k = 0; k < f[a].count; k++) {
                size_t at = mode == M_BINARY ? (size_t)i * psize + foff
                                             : foff * (size_t)n + (size_t)i * fs;
                store_le(raw + at + (size_t)k * (size_t)f[a].size, f[a].type, f[a].size,
                         vals[i * nv + j0 + k]);
            }
    }
    if (mode == M_BINARY) {
        sb_put(b, raw, total);
    } else {
        unsigned char *z = malloc(total + total / 32 + 16);
        assert_non_null(z);
        size_t zn = lzf_compress(raw, total, z);
        unsigned char sz[8];
        store_le(sz, 'U', 4, (double)zn);
        store_le(sz + 4, 'U', 4, (double)total);
        sb_put(b, sz, 8);
        sb_put(b, z, zn);
        free(z);
    }
    free(raw);
}

/* ---- values and expectations -------------------------------------------------------------- */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A value of the type for point i, element j: exact in the type; extremes at points 0, 1. */
static double gen(char type, int size, int64_t i, int j)
{
    uint64_t h = mix((uint64_t)i * 1315423911u + (uint64_t)j * 2654435761u +
                     (uint64_t)type * 97 + (uint64_t)size);
    int bits = 8 * size;
    if (type == 'F') {
        if (size == 2) return ((double)(int64_t)(h % 4001) - 2000.0) / 16.0;
        if (size == 4) return ((double)(int64_t)(h % 2000001) - 1000000.0) / 1024.0;
        return ((double)(int64_t)(h % 2000000001) - 1000000000.0) / 3.0;
    }
    if (type == 'I') {
        double lo = -ldexp(1, bits - 1), hi = bits == 64 ? ldexp(1, 62) : ldexp(1, bits - 1) - 1;
        if (i == 0) return lo;
        if (i == 1) return hi;
        return (double)(int64_t)(h % 256) - 128.0;
    }
    double hi = bits == 64 ? ldexp(1, 63) + ldexp(1, 62) : ldexp(1, bits) - 1;
    if (i == 0) return 0;
    if (i == 1) return hi;
    return (double)(h % 256);
}

static float expect(char type, int size, double v)
{
    if (type == 'F') return size == 2 ? pvc_f16_to_f32(pvc_f32_to_f16((float)v)) : (float)v;
    if (type == 'I') return (float)(int64_t)v;
    return (float)(uint64_t)v;
}

static double *gen_values(const tfield *f, int nf, int64_t n)
{
    int nv = nvalues(f, nf);
    double *v = malloc(sizeof(double) * (size_t)(n * nv + 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        for (int a = 0, j = 0; a < nf; a++)
            for (int k = 0; k < f[a].count; k++, j++)
                v[i * nv + j] = gen(f[a].type, f[a].size, i, j);
    return v;
}

/* Checks names and values against the writer's input (x, y, z first, then file order,
 * COUNT expanded to name_k, "_" skipped): an independent statement of the column rules. */
static void check_cloud(const pvio_cloud *c, const tfield *f, int nf, int64_t n,
                        const double *vals)
{
    int nv = nvalues(f, nf);
    char names[PVIO_CLOUD_MAX_COLS][PVIO_CLOUD_NAME_LEN];
    int src[PVIO_CLOUD_MAX_COLS], fld[PVIO_CLOUD_MAX_COLS], nc = 0;
    const char *xyz[3] = { "x", "y", "z" };
    for (int pass = 0; pass < 4; pass++)
        for (int a = 0, j = 0; a < nf; j += f[a].count, a++) {
            bool is_xyz = !strcmp(f[a].name, "x") || !strcmp(f[a].name, "y") ||
                          !strcmp(f[a].name, "z");
            if (pass < 3 ? strcmp(f[a].name, xyz[pass]) != 0
                         : is_xyz || !strcmp(f[a].name, "_"))
                continue;
            for (int k = 0; k < f[a].count; k++) {
                assert_true(nc < PVIO_CLOUD_MAX_COLS);
                if (f[a].count == 1) snprintf(names[nc], PVIO_CLOUD_NAME_LEN, "%s", f[a].name);
                else snprintf(names[nc], PVIO_CLOUD_NAME_LEN, "%s_%d", f[a].name, k);
                src[nc] = j + k;
                fld[nc++] = a;
            }
        }
    assert_int_equal(c->n, n);
    assert_int_equal(c->ncols, nc);
    assert_non_null(c->data);
    for (int k = 0; k < nc; k++) assert_string_equal(c->names[k], names[k]);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < nc; k++) {
            double v = vals[i * nv + src[k]];
            float want = expect(f[fld[k]].type, f[fld[k]].size, v), got = c->data[i * nc + k];
            if (isnan(want) ? !isnan(got) : memcmp(&want, &got, 4) != 0)
                fail_msg("point %lld column '%s': got %.9g, want %.9g", (long long)i, names[k],
                         got, want);
        }
}

/* Parses an exact-size copy. */
static pv_status parse_copy(const void *p, size_t n, pvio_cloud *c, pvc_msg *msg)
{
    void *d = dup_exact(p, n);
    pv_status s = pvio_pcd_parse(d, n, c, msg);
    free(d);
    return s;
}

static void roundtrip(const tfield *f, int nf, int64_t w, int64_t h, int mode)
{
    double *vals = gen_values(f, nf, w * h);
    sbuf b = { 0 };
    pcd_write(&b, f, nf, w, h, vals, mode);
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = parse_copy(b.p, b.n, &c, &msg);
    if (s != PV_OK) fail_msg("%s: %s", mode_names[mode], msg.text);
    check_cloud(&c, f, nf, w * h, vals);
    assert_int_equal(c.width, w);
    assert_int_equal(c.height, h);
    pvio_cloud_free(&c);
    assert_null(c.data);
    sb_free(&b);
    free(vals);
}

/* ---- round trips -------------------------------------------------------------------------- */
static void test_pcd_all_types(void **state)
{
    (void)state;
    /* intensity first: x, y, z must still come out as columns 0..2 */
    static const tfield f[] = {
        { "intensity", 'U', 1, 1 }, { "x", 'F', 4, 1 }, { "y", 'F', 4, 1 }, { "z", 'F', 8, 1 },
        { "h", 'F', 2, 1 }, { "d", 'F', 8, 1 }, { "i1", 'I', 1, 1 }, { "i2", 'I', 2, 1 },
        { "i4", 'I', 4, 1 }, { "i8", 'I', 8, 1 }, { "u2", 'U', 2, 1 }, { "u4", 'U', 4, 1 },
        { "u8", 'U', 8, 1 },
    };
    for (int mode = 0; mode < 3; mode++) {
        roundtrip(f, (int)PVC_COUNTOF(f), 23, 1, mode);
        roundtrip(f, (int)PVC_COUNTOF(f), 2, 1, mode);       /* extremes only */
        roundtrip(f, (int)PVC_COUNTOF(f), 300, 1, mode);
    }
}

static void test_pcd_count_and_padding(void **state)
{
    (void)state;
    static const tfield f[] = {
        { "x", 'F', 4, 1 }, { "_", 'U', 1, 3 }, { "y", 'F', 4, 1 }, { "z", 'F', 4, 1 },
        { "normal", 'F', 4, 3 }, { "hist", 'U', 2, 4 }, { "_", 'I', 4, 1 }, { "t", 'F', 8, 1 },
    };
    for (int mode = 0; mode < 3; mode++) {
        roundtrip(f, (int)PVC_COUNTOF(f), 17, 1, mode);
        double *vals = gen_values(f, (int)PVC_COUNTOF(f), 17);
        sbuf b = { 0 };
        pcd_write(&b, f, (int)PVC_COUNTOF(f), 17, 1, vals, mode);
        pvio_cloud c;
        pvc_msg msg;
        assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_OK);
        assert_int_equal(c.ncols, 11);
        assert_int_equal(pvio_cloud_col(&c, "normal_2"), 5);
        assert_int_equal(pvio_cloud_col(&c, "hist_3"), 9);
        assert_int_equal(pvio_cloud_col(&c, "t"), 10);
        assert_int_equal(pvio_cloud_col(&c, "_"), -1);
        assert_int_equal(pvio_cloud_col(&c, "normal"), -1);
        pvio_cloud_free(&c);
        sb_free(&b);
        free(vals);
    }
}

static void test_pcd_organized(void **state)
{
    (void)state;
    static const tfield f[] = {
        { "x", 'F', 4, 1 }, { "y", 'F', 4, 1 }, { "z", 'F', 4, 1 }, { "ring", 'U', 2, 1 },
    };
    for (int mode = 0; mode < 3; mode++) {
        roundtrip(f, 4, 8, 4, mode);
        double *vals = gen_values(f, 4, 20);
        vals[3 * 4 + 0] = NAN;                       /* PCL's missing returns */
        vals[7 * 4 + 2] = NAN;
        vals[19 * 4 + 1] = NAN;
        sbuf b = { 0 };
        pcd_write(&b, f, 4, 5, 4, vals, mode);
        pvio_cloud c;
        pvc_msg msg;
        assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_OK);
        check_cloud(&c, f, 4, 20, vals);
        assert_int_equal(c.width, 5);
        assert_int_equal(c.height, 4);
        int64_t dropped = -1;
        pvio_cloud_drop_nonfinite(&c, &dropped);
        assert_int_equal(dropped, 3);
        assert_int_equal(c.n, 17);
        assert_int_equal(c.width, 17);
        assert_int_equal(c.height, 1);
        for (int64_t i = 0, src = 0; i < c.n; i++, src++) {
            while (src == 3 || src == 7 || src == 19) src++;
            assert_true(c.data[i * 4 + 3] == (float)vals[src * 4 + 3]);
            assert_true(c.data[i * 4 + 0] == (float)vals[src * 4 + 0]);
        }
        pvio_cloud_free(&c);
        sb_free(&b);
        free(vals);
    }
}

static pvio_cloud parse_ok(const char *text)
{
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = parse_copy(text, strlen(text), &c, &msg);
    if (s != PV_OK) fail_msg("expected success, got %d: %s", (int)s, msg.text);
    return c;
}

static void test_pcd_header_variants(void **state)
{
    (void)state;
    /* VERSION .5: no COUNT, WIDTH, HEIGHT, VIEWPOINT */
    pvio_cloud c = parse_ok("VERSION .5\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 2\n"
                            "DATA ascii\n1 2 3\n4 5 6\n");
    assert_int_equal(c.n, 2);
    assert_int_equal(c.width, 2);
    assert_int_equal(c.height, 1);
    assert_true(c.data[5] == 6.0f && c.viewpoint[3] == 1.0f);
    pvio_cloud_free(&c);
    /* VERSION 0.6 with WIDTH only */
    c = parse_ok("VERSION 0.6\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\n"
                 "DATA ascii\n1 2 3");
    assert_int_equal(c.n, 1);
    pvio_cloud_free(&c);
    /* no VERSION, CRLF, comments and blank lines, tabs, ascii nan/inf/exponents/signs */
    c = parse_ok("# a comment\r\n\r\nFIELDS\tx y z i\r\n# another\r\nSIZE 4 4 4 1\r\n"
                 "TYPE F F F I\r\nWIDTH 2\r\nHEIGHT 2\r\nPOINTS 4\r\nDATA ascii\r\n"
                 "nan -inf 1e3 -128\r\n\r\n  +1.5\t-0 2.5E-1 +7  \r\n"
                 "1 2 3 -0\n\n\n4 5 6 127\n   \n\t\n");
    assert_int_equal(c.n, 4);
    assert_int_equal(c.width, 2);
    assert_int_equal(c.height, 2);
    assert_true(isnan(c.data[0]) && isinf(c.data[1]) && c.data[1] < 0);
    assert_true(c.data[2] == 1000.0f && c.data[3] == -128.0f);
    assert_true(c.data[4] == 1.5f && c.data[6] == 0.25f && c.data[7] == 7.0f);
    assert_true(c.data[15] == 127.0f);
    int64_t dropped = 0;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 1);
    assert_true(c.data[0] == 1.5f);
    pvio_cloud_free(&c);
    /* VIEWPOINT is recorded, not applied */
    c = parse_ok("VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\n"
                 "HEIGHT 1\nVIEWPOINT 1 -2 3.5 0.5 0.5 -0.5 0.5\nPOINTS 1\nDATA ascii\n1 2 3\n");
    static const float vp[7] = { 1, -2, 3.5f, 0.5f, 0.5f, -0.5f, 0.5f };
    assert_memory_equal(c.viewpoint, vp, sizeof vp);
    assert_true(c.data[0] == 1.0f);
    pvio_cloud_free(&c);
    /* empty clouds: ascii without a final newline, binary, compressed with zero sizes */
    c = parse_ok("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 0\nHEIGHT 1\nPOINTS 0\nDATA ascii");
    assert_int_equal(c.n, 0);
    assert_non_null(c.data);
    pvio_cloud_free(&c);
    c = parse_ok("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 0\nDATA binary\n");
    assert_int_equal(c.n, 0);
    pvio_cloud_free(&c);
    /* HEIGHT 0 (fuzz_pcd): the empty cloud comes back as (0, 1), never height 0 */
    c = parse_ok("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 5\nHEIGHT 0\nPOINTS 0\nDATA binary\n");
    assert_int_equal(c.n, 0);
    assert_int_equal(c.width, 0);
    assert_int_equal(c.height, 1);
    pvio_cloud_free(&c);
    static const char empty_z[] = "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 0\n"
                                  "DATA binary_compressed\n\0\0\0\0\0\0\0\0";
    pvc_msg msg;
    assert_int_equal(parse_copy(empty_z, sizeof empty_z - 1, &c, &msg), PV_OK);
    assert_int_equal(c.n, 0);
    pvio_cloud_free(&c);
    /* padding in ascii is skipped without being parsed */
    c = parse_ok("FIELDS x _ y z\nSIZE 4 1 4 4\nTYPE F U F F\nCOUNT 1 2 1 1\nPOINTS 1\n"
                 "DATA ascii\n1 junk junk 2 3\n");
    assert_int_equal(c.ncols, 3);
    assert_true(c.data[1] == 2.0f && c.data[2] == 3.0f);
    pvio_cloud_free(&c);
    /* binary data followed by padding, as PCL writes it */
    sbuf pb = { 0 };
    sb_printf(&pb, "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 1\nDATA binary\n");
    const float one[3] = { 1, 2, 3 };
    unsigned char pad[4000] = { 0 };
    sb_put(&pb, one, sizeof one);
    sb_put(&pb, pad, sizeof pad);
    assert_int_equal(parse_copy(pb.p, pb.n, &c, &msg), PV_OK);
    assert_true(c.n == 1 && c.data[2] == 3.0f);
    pvio_cloud_free(&c);
    sb_free(&pb);
    /* x/y/z given as F 8 and F 2; a value past float range becomes inf */
    c = parse_ok("FIELDS x y z\nSIZE 8 2 8\nTYPE F F F\nPOINTS 1\nDATA ascii\n1e300 0.5 -1e-300\n");
    assert_true(isinf(c.data[0]) && c.data[1] == 0.5f && c.data[2] == 0.0f);
    pvio_cloud_free(&c);
}

/* ---- malformed ---------------------------------------------------------------------------- */
#define XYZ   "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n"
#define WH1   "WIDTH 1\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 1\n"
#define ASC1  "DATA ascii\n1 2 3\n"
#define F3(names, sizes, types, counts) \
    "FIELDS " names "\nSIZE " sizes "\nTYPE " types "\nCOUNT " counts "\n"

typedef struct bad_case { const char *text; pv_status st; const char *sub; } bad_case;

static const bad_case bad_cases[] = {
    { "", PV_EFORMAT, "empty input" },
    { "hello world\n", PV_EFORMAT, "not a PCD header: line 1 starts with 'hello'" },
    { "\x89PNG\r\n\x1a\n", PV_EFORMAT, "not a PCD header" },
    { "VERSION 0.7\n" XYZ, PV_EFORMAT, "without a DATA line" },
    { "VERSION 0.7\n" XYZ WH1, PV_EFORMAT, "without a DATA line" },
    { "VERSION 0.8\n" XYZ WH1 ASC1, PV_EUNSUPPORTED, "VERSION '0.8'" },
    { "VERSION 0.7 0.7\n" XYZ WH1 ASC1, PV_EFORMAT, "VERSION needs 1 value, line 1 has 2" },
    { "VERSION\n" XYZ WH1 ASC1, PV_EFORMAT, "VERSION needs 1 value" },
    { "FIELDS\nSIZE 4 4 4\nTYPE F F F\n" WH1 ASC1, PV_EFORMAT, "FIELDS needs at least 1 value" },
    { F3("x y z w", "4 4 4", "F F F F", "1 1 1 1") WH1 ASC1, PV_EFORMAT,
      "FIELDS has 4 names but SIZE has 3" },
    { F3("x y z", "4 4 4", "F F", "1 1 1") WH1 ASC1, PV_EFORMAT,
      "FIELDS has 3 names but TYPE has 2" },
    { F3("x y z", "4 4 4", "F F F", "1 1 1 1") WH1 ASC1, PV_EFORMAT,
      "FIELDS has 3 names but COUNT has 4" },
    { F3("x y z", "4 3 4", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "field 'y' has SIZE '3'" },
    { F3("x y z", "4 4 0", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "field 'z' has SIZE '0'" },
    { F3("x y z", "4 4 abc", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "SIZE 'abc'" },
    { F3("x y z", "16 4 4", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "SIZE '16'" },
    { F3("x y z", "4 4 -4", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "SIZE '-4'" },
    { F3("x y z", "4 4 4", "F Q F", "1 1 1") WH1 ASC1, PV_EFORMAT, "field 'y' has TYPE 'Q'" },
    { F3("x y z", "4 4 4", "F f F", "1 1 1") WH1 ASC1, PV_EFORMAT, "TYPE 'f'" },
    { F3("x y z", "4 4 4", "F FF F", "1 1 1") WH1 ASC1, PV_EFORMAT, "TYPE 'FF'" },
    { F3("x y z", "4 4 1", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "TYPE F with SIZE 1" },
    { F3("x y z i", "4 4 4 1", "F F F U", "1 1 1 0") WH1 "DATA ascii\n1 2 3\n", PV_EFORMAT,
      "field 'i' has COUNT 0" },
    { F3("x y z i", "4 4 4 1", "F F F U", "1 1 1 -1") WH1 ASC1, PV_EFORMAT, "COUNT '-1'" },
    { F3("x y z i", "4 4 4 1", "F F F U", "1 1 1 2000000") WH1 ASC1, PV_EFORMAT,
      "COUNT '2000000'" },
    /* 19 nines overflowed the int64 accumulator before the range check (fuzz_pcd, UBSan) */
    { F3("x y z i", "4 4 4 1", "F F F U", "1 1 1 9999999999999999999") WH1 ASC1, PV_EFORMAT,
      "COUNT '9999999999999999999'" },
    { F3("x y z", "4 4 4", "F F F", "3 1 1") WH1 ASC1, PV_EFORMAT,
      "field 'x' has COUNT 3 (x, y and z need COUNT 1)" },
    { F3("x y i", "4 4 4", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "FIELDS has no 'z'" },
    { F3("a b c", "4 4 4", "F F F", "1 1 1") WH1 ASC1, PV_EFORMAT, "FIELDS has no 'x'" },
    { F3("x y z y", "4 4 4 4", "F F F F", "1 1 1 1") WH1 "DATA ascii\n1 2 3 4\n", PV_EFORMAT,
      "column name 'y' appears twice" },
    { F3("x y z a a_1", "4 4 4 4 4", "F F F F F", "1 1 1 2 1") WH1 "DATA ascii\n1 2 3 4 5 6\n",
      PV_EFORMAT, "column name 'a_1' appears twice" },
    { F3("x y z a b c d e f g h i j k l m n", "4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4",
         "F F F F F F F F F F F F F F F F F", "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1") WH1 ASC1,
      PV_EUNSUPPORTED, "more than 16 columns" },
    { F3("x y z n", "4 4 4 4", "F F F F", "1 1 1 17") WH1 ASC1, PV_EUNSUPPORTED,
      "field 'n' has COUNT 17" },
    { F3("x y z n m", "4 4 4 4 4", "F F F F F", "1 1 1 9 8") WH1 ASC1, PV_EUNSUPPORTED,
      "more than 16 columns" },
    { F3("x y z abcdefghijabcdefghijabcdefghijabcdefghij", "4 4 4 4", "F F F F", "1 1 1 1")
      WH1 ASC1, PV_EUNSUPPORTED, "longer than 31 characters" },
    { F3("x y z abcdefghijabcdefghijabcdefghij", "4 4 4 4", "F F F F", "1 1 1 2") WH1 ASC1,
      PV_EUNSUPPORTED, "longer than 31 characters" },
    { F3("x y z \x01q", "4 4 4 4", "F F F F", "1 1 1 1") WH1 ASC1, PV_EFORMAT,
      "non-printable byte" },
    { F3("x y z", "4 4 4", "F F F", "1 1 1") "WIDTH -1\nHEIGHT 1\nPOINTS 1\n" ASC1, PV_EFORMAT,
      "WIDTH '-1' is not a non-negative integer" },
    { XYZ "WIDTH abc\nHEIGHT 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "WIDTH 'abc'" },
    { XYZ "WIDTH 99999999999999999999\nHEIGHT 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "WIDTH '9999" },
    { XYZ "WIDTH 1\nHEIGHT 1.5\nPOINTS 1\n" ASC1, PV_EFORMAT, "HEIGHT '1.5'" },
    { XYZ "WIDTH 1\nHEIGHT 1\nPOINTS 0x1\n" ASC1, PV_EFORMAT, "POINTS '0x1'" },
    { XYZ "WIDTH 1 2\nHEIGHT 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "WIDTH needs 1 value" },
    { XYZ "WIDTH 100\nHEIGHT 1\nPOINTS 65536\n" ASC1, PV_EFORMAT,
      "POINTS 65536 but WIDTH*HEIGHT = 100" },
    { XYZ "WIDTH 4\nHEIGHT 2\nPOINTS 9\n" ASC1, PV_EFORMAT, "POINTS 9 but WIDTH*HEIGHT = 8" },
    { XYZ "WIDTH 4611686018427387904\nHEIGHT 4\nPOINTS 0\n" ASC1, PV_EFORMAT, "overflow" },
    { XYZ "WIDTH 4611686018427387904\nHEIGHT 4\n" ASC1, PV_EFORMAT, "overflows" },
    { XYZ "WIDTH 200000000\nHEIGHT 1\nPOINTS 200000000\n" ASC1, PV_EUNSUPPORTED,
      "POINTS 200000000 is over the 134217728-point limit" },
    { F3("x y z a b c d e f g h i j k l m", "4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4",
         "F F F F F F F F F F F F F F F F", "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1")
      "POINTS 134217728\n" ASC1, PV_EUNSUPPORTED, "byte limit" },
    { XYZ "HEIGHT 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "HEIGHT is given without WIDTH" },
    { XYZ ASC1, PV_EFORMAT, "neither POINTS nor WIDTH" },
    { XYZ "VIEWPOINT 0 0 0 1 0 0\nPOINTS 1\n" ASC1, PV_EFORMAT, "VIEWPOINT needs 7 values" },
    { XYZ "VIEWPOINT 0 0 0 nan 0 0 0\nPOINTS 1\n" ASC1, PV_EFORMAT, "VIEWPOINT value 4 'nan'" },
    { XYZ "VIEWPOINT 0 1e40 0 1 0 0 0\nPOINTS 1\n" ASC1, PV_EFORMAT, "VIEWPOINT value 2" },
    { XYZ "VIEWPOINT 0 0 0 1 0 0 zero\nPOINTS 1\n" ASC1, PV_EFORMAT, "VIEWPOINT value 7 'zero'" },
    { XYZ "POINTS 1\nDATA binary_lzf\n", PV_EUNSUPPORTED, "DATA 'binary_lzf'" },
    { XYZ "POINTS 1\nDATA ASCII\n1 2 3\n", PV_EUNSUPPORTED, "DATA 'ASCII'" },
    { XYZ "POINTS 1\nDATA\n1 2 3\n", PV_EFORMAT, "DATA needs 1 value" },
    { XYZ "WIDTH 1\nWIDTH 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "WIDTH appears twice (line 6)" },
    { "FIELDS x y z\nFIELDS x y z\n", PV_EFORMAT, "FIELDS appears twice" },
    { XYZ "COLOR 1\nPOINTS 1\n" ASC1, PV_EFORMAT, "unknown header keyword 'COLOR' on line 5" },
    { XYZ "points 1\n" ASC1, PV_EFORMAT, "unknown header keyword 'points'" },
    { "SIZE 4 4 4\nTYPE F F F\nPOINTS 1\n" ASC1, PV_EFORMAT, "no FIELDS line" },
    { "FIELDS x y z\nTYPE F F F\nPOINTS 1\n" ASC1, PV_EFORMAT, "no SIZE line" },
    { "FIELDS x y z\nSIZE 4 4 4\nPOINTS 1\n" ASC1, PV_EFORMAT, "no TYPE line" },
    { XYZ WH1 "DATA ascii\n1      2\n", PV_EFORMAT,
      "ascii point 0 (line 10) has 2 values, expected 3" },
    { XYZ WH1 "DATA ascii\n1 2 3 4\n", PV_EFORMAT, "ascii point 0 (line 10) has more than 3" },
    { XYZ WH1 "DATA ascii\n1 abc 3\n", PV_EFORMAT, "field 'y' value 'abc' is not a valid F4" },
    { XYZ WH1 "DATA ascii\n1 2 3.0.0\n", PV_EFORMAT, "value '3.0.0'" },
    { XYZ WH1 "DATA ascii\n1 2 0x\n", PV_EFORMAT, "value '0x'" },
    { XYZ WH1 "DATA ascii\n1 2 3\n4 5 6\n", PV_EFORMAT, "more than POINTS 1 points (line 11)" },
    { XYZ "POINTS 3\nDATA ascii\n1 2 3\n4 5 6\n                  \n", PV_EFORMAT,
      "ascii data ends after 2 of POINTS 3 points" },
    { XYZ "POINTS 3\nDATA ascii\n1 2 3\n4 5 6\n", PV_EFORMAT, "too short for POINTS 3" },
    { XYZ "POINTS 1000000\nDATA ascii\n1 2 3\n", PV_EFORMAT, "too short for POINTS 1000000" },
    { F3("x y z u", "4 4 4 1", "F F F U", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 256\n",
      PV_EFORMAT, "field 'u' value '256' is not a valid U1" },
    { F3("x y z u", "4 4 4 1", "F F F U", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 -1\n",
      PV_EFORMAT, "value '-1' is not a valid U1" },
    { F3("x y z u", "4 4 4 2", "F F F U", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 65536\n",
      PV_EFORMAT, "not a valid U2" },
    { F3("x y z u", "4 4 4 8", "F F F U", "1 1 1 1")
      "POINTS 1\nDATA ascii\n1 2 3 18446744073709551616\n", PV_EFORMAT, "not a valid U8" },
    { F3("x y z i", "4 4 4 1", "F F F I", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 -129\n",
      PV_EFORMAT, "value '-129' is not a valid I1" },
    { F3("x y z i", "4 4 4 1", "F F F I", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 128\n",
      PV_EFORMAT, "not a valid I1" },
    { F3("x y z i", "4 4 4 4", "F F F I", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 1.5\n",
      PV_EFORMAT, "value '1.5' is not a valid I4" },
    { F3("x y z i", "4 4 4 8", "F F F I", "1 1 1 1")
      "POINTS 1\nDATA ascii\n1 2 3 -9223372036854775809\n", PV_EFORMAT, "not a valid I8" },
    { F3("x y z i", "4 4 4 2", "F F F I", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 -\n",
      PV_EFORMAT, "value '-' is not a valid I2" },
    { F3("x y z i", "4 4 4 2", "F F F I", "1 1 1 1") "POINTS 1\nDATA ascii\n1 2 3 nan\n",
      PV_EFORMAT, "value 'nan' is not a valid I2" },
    { XYZ "POINTS 1\nDATA ascii\n1 2 "
      "1234567890123456789012345678901234567890123456789012345678901234567890"
      "1234567890123456789012345678901234567890123456789012345678901234567890\n",
      PV_EFORMAT, "field 'z' value '1234567890123456789012345678901234567...'" },
    { XYZ WH1 "DATA binary\n", PV_EFORMAT, "binary data is truncated: POINTS 1 x 12 bytes = 12 "
      "bytes, the file has 0 after the header" },
    { XYZ WH1 "DATA binary\n0123456789a", PV_EFORMAT, "is truncated" },
    { XYZ WH1 "DATA binary", PV_EFORMAT, "the file has 0 after the header" },
    { XYZ WH1 "DATA binary_compressed\n1234567", PV_EFORMAT, "the two sizes need 8" },
    { XYZ WH1 "DATA binary_compressed\n", PV_EFORMAT, "the two sizes need 8" },
};

static void test_pcd_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < PVC_COUNTOF(bad_cases); i++) {
        const bad_case *bc = &bad_cases[i];
        pvio_cloud c;
        memset(&c, 0x5a, sizeof c);
        pvc_msg msg = { { 0 } };
        pvc_alloc_test_begin(0);
        pv_status s = parse_copy(bc->text, strlen(bc->text), &c, &msg);
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (s != bc->st || !strstr(msg.text, bc->sub))
            fail_msg("case %zu: status %d (want %d), message \"%s\" (want \"%s\")", i, (int)s,
                     (int)bc->st, msg.text, bc->sub);
        if (strncmp(msg.text, "pcd: ", 5) != 0) fail_msg("case %zu: message \"%s\"", i, msg.text);
        assert_int_equal(live, 0);
        assert_int_equal(c.n, 0);
        assert_null(c.data);
    }
    print_message("%zu malformed PCD cases\n", PVC_COUNTOF(bad_cases));
}

/* A header longer than the limit, a NUL in the header, and 65 fields. */
static void test_pcd_malformed_built(void **state)
{
    (void)state;
    pvio_cloud c;
    pvc_msg msg;
    sbuf b = { 0 };
    sb_printf(&b, "VERSION 0.7\n");
    while (b.n < PVIO_PCD_MAX_HEADER + 100) sb_printf(&b, "# padding padding padding\n");
    sb_printf(&b, XYZ WH1 ASC1);
    assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "no DATA line in the first 65536 bytes"));
    sb_free(&b);

    static const char nul[] = "VERSION 0.7\nFIELDS x\0y z\nSIZE 4 4 4\n";
    assert_int_equal(parse_copy(nul, sizeof nul - 1, &c, &msg), PV_EFORMAT);

    sb_printf(&b, "FIELDS x y z");
    for (int i = 0; i < 62; i++) sb_printf(&b, " f%d", i);
    sb_printf(&b, "\nSIZE 4 4 4\n");
    assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_EUNSUPPORTED);
    assert_non_null(strstr(msg.text, "FIELDS has 65 entries, at most 64"));
    sb_free(&b);

    /* 64 fields are fine while the non-padding ones make <= 16 columns */
    const char *parts[3] = { "FIELDS x y z", "\nSIZE 4 4 4", "\nTYPE F F F" };
    for (int k = 0; k < 3; k++) {
        sb_printf(&b, "%s", parts[k]);
        for (int i = 0; i < 61; i++) sb_printf(&b, k == 0 ? " _" : k == 1 ? " 1" : " U");
    }
    sb_printf(&b, "\nPOINTS 1\nDATA binary\n");
    unsigned char pt[12 + 61] = { 0 };
    sb_put(&b, pt, sizeof pt);
    assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_OK);
    assert_int_equal(c.ncols, 3);
    pvio_cloud_free(&c);
    sb_free(&b);

    /* NULL buffer */
    assert_int_equal(pvio_pcd_parse(NULL, 5, &c, &msg), PV_EINPUT);
}

/* ---- LZF streams -------------------------------------------------------------------------- */
/* A binary_compressed file of one xyz point (12 bytes) with the given payload and sizes. */
static pv_status parse_lzf(const unsigned char *z, size_t zn, uint32_t csize, uint32_t usize,
                           const char *want)
{
    sbuf b = { 0 };
    sb_printf(&b, XYZ WH1 "DATA binary_compressed\n");
    unsigned char sz[8];
    store_le(sz, 'U', 4, csize);
    store_le(sz + 4, 'U', 4, usize);
    sb_put(&b, sz, 8);
    sb_put(&b, z, zn);
    pvio_cloud c;
    pvc_msg msg;
    pvc_alloc_test_begin(0);
    pv_status s = parse_copy(b.p, b.n, &c, &msg);
    long live = pvc_alloc_live();
    pvc_alloc_test_end();
    assert_int_equal(live, s == PV_OK ? 1 : 0);
    if (want && (s != PV_EFORMAT || !strstr(msg.text, want)))
        fail_msg("status %d, message \"%s\" (want \"%s\")", (int)s, msg.text, want);
    if (s == PV_OK) pvio_cloud_free(&c);
    sb_free(&b);
    return s;
}

static void test_pcd_lzf(void **state)
{
    (void)state;
    /* valid: 4 literals (1.0f), then a back-reference of 8 bytes at distance 4 */
    static const unsigned char ok[] = { 3, 0x00, 0x00, 0x80, 0x3f, 6 << 5, 3 };
    assert_int_equal(parse_lzf(ok, sizeof ok, sizeof ok, 12, NULL), PV_OK);
    /* the long form: 3 literals, then a copy of 9 = 7 + 0 + 2 bytes at distance 1 */
    static const unsigned char lng[] = { 2, 1, 2, 3, 7 << 5, 0, 0 };
    assert_int_equal(parse_lzf(lng, sizeof lng, sizeof lng, 12, NULL), PV_OK);
    static const unsigned char before[] = { 1 << 5, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    parse_lzf(before, sizeof before, sizeof before, 12, "before the start (0 bytes written)");
    static const unsigned char far[] = { 3, 1, 2, 3, 4, (6 << 5) | 31, 255 };
    parse_lzf(far, sizeof far, sizeof far, 12, "reaches 8192 bytes back");
    static const unsigned char far2[] = { 3, 1, 2, 3, 4, (6 << 5), 4 };
    parse_lzf(far2, sizeof far2, sizeof far2, 12, "reaches 5 bytes back");
    static const unsigned char lit_end[] = { 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
    parse_lzf(lit_end, 4, 4, 12, "literal run of 6 bytes at compressed byte 0 passes the end");
    static const unsigned char lit_over[] = { 12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    parse_lzf(lit_over, sizeof lit_over, sizeof lit_over, 12, "overflows the uncompressed size 12");
    static const unsigned char ref_over[] = { 3, 1, 2, 3, 4, 7 << 5, 0, 3 };
    parse_lzf(ref_over, sizeof ref_over, sizeof ref_over, 12, "back-reference at compressed byte 5 "
              "overflows");
    static const unsigned char cut1[] = { 3, 1, 2, 3, 4, 7 << 5 };
    parse_lzf(cut1, sizeof cut1, sizeof cut1, 12, "cut off by the end");
    static const unsigned char cut2[] = { 3, 1, 2, 3, 4, 7 << 5, 1 };
    parse_lzf(cut2, sizeof cut2, sizeof cut2, 12, "cut off by the end");
    static const unsigned char cut3[] = { 3, 1, 2, 3, 4, 1 << 5 };
    parse_lzf(cut3, sizeof cut3, sizeof cut3, 12, "cut off by the end");
    static const unsigned char shrt[] = { 3, 1, 2, 3, 4, 1 << 5, 3 };
    parse_lzf(shrt, sizeof shrt, sizeof shrt, 12, "decompresses to 7 bytes, the header says 12");
    parse_lzf(ok, sizeof ok, sizeof ok, 13, "uncompressed size 13 but POINTS 1 x 12 bytes = 12");
    parse_lzf(ok, sizeof ok, sizeof ok + 1, 12, "truncated: compressed size 8 but 7 bytes follow");
    parse_lzf(ok, sizeof ok, sizeof ok - 1, 12, "cut off by the end");
    /* bytes after the compressed data are ignored (PCL pads to a page) */
    static const unsigned char padded[] = { 3, 0x00, 0x00, 0x80, 0x3f, 6 << 5, 3, 0, 0, 0, 0 };
    assert_int_equal(parse_lzf(padded, sizeof padded, sizeof ok, 12, NULL), PV_OK);
    parse_lzf(ok, sizeof ok, 0xffffffffu, 12, "truncated");
    parse_lzf(NULL, 0, 0, 12, "claims 12 bytes from 0 compressed bytes");

    /* sizes that would allocate gigabytes from a tiny file */
    sbuf b = { 0 };
    sb_printf(&b, F3("x y z _", "4 4 4 1", "F F F U", "1 1 1 1048576")
              "POINTS 4096\nDATA binary_compressed\n");
    unsigned char sz[8] = { 7, 0, 0, 0, 0, 0, 0, 0 };
    uint64_t need = 4096ull * (12 + 1048576);
    store_le(sz + 4, 'U', 4, (double)(uint32_t)need);
    sb_put(&b, sz, 8);
    sb_put(&b, ok, sizeof ok);
    pvio_cloud c;
    pvc_msg msg;
    assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_EFORMAT);
    sb_free(&b);
    sb_printf(&b, XYZ "POINTS 1000000\nDATA binary_compressed\n");
    store_le(sz + 4, 'U', 4, 12000000.0);
    sb_put(&b, sz, 8);
    sb_put(&b, ok, sizeof ok);
    assert_int_equal(parse_copy(b.p, b.n, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "claims 12000000 bytes from 7 compressed bytes"));
    sb_free(&b);
}

/* ---- truncation and mutation -------------------------------------------------------------- */
static const tfield small_fields[] = {
    { "x", 'F', 4, 1 }, { "y", 'F', 4, 1 }, { "z", 'F', 4, 1 }, { "_", 'U', 1, 1 },
    { "intensity", 'U', 1, 1 }, { "t", 'F', 8, 1 },
};

static void small_file(sbuf *b, int mode, int64_t n)
{
    double *vals = gen_values(small_fields, 6, n);
    pcd_write(b, small_fields, 6, n, 1, vals, mode);
    free(vals);
}

static void test_pcd_truncation(void **state)
{
    (void)state;
    int64_t checked = 0;
    for (int mode = 0; mode < 3; mode++) {
        sbuf b = { 0 };
        small_file(&b, mode, 5);
        for (size_t k = 0; k < b.n; k++) {
            pvio_cloud c;
            pvc_msg msg;
            pvc_alloc_test_begin(0);
            pv_status s = parse_copy(b.p, k, &c, &msg);
            long live = pvc_alloc_live();
            pvc_alloc_test_end();
            /* an ascii prefix may still be a valid file ("3.5" cut to "3."); binary never */
            if (s == PV_OK) {
                assert_int_equal(mode, M_ASCII);
                assert_int_equal(live, 1);
                pvio_cloud_free(&c);
            } else {
                if (s != PV_EFORMAT && s != PV_EUNSUPPORTED)
                    fail_msg("%s cut at %zu: status %d: %s", mode_names[mode], k, (int)s,
                             msg.text);
                assert_int_equal(live, 0);
            }
            checked++;
        }
        sb_free(&b);
    }
    print_message("%lld truncations\n", (long long)checked);
}

static void test_pcd_mutation(void **state)
{
    (void)state;
    static const unsigned char vals[] = { 0x00, 0xff, ' ', '\n', '0', '9', 'x', 0x20, 0xe0, 0x1f };
    int64_t ok = 0, total = 0;
    for (int mode = 0; mode < 3; mode++) {
        sbuf b = { 0 };
        small_file(&b, mode, 4);
        unsigned char *m = malloc(b.n);
        assert_non_null(m);
        for (size_t at = 0; at < b.n; at++)
            for (size_t v = 0; v < sizeof vals; v++) {
                memcpy(m, b.p, b.n);
                m[at] = vals[v];
                pvio_cloud c;
                pvc_msg msg;
                pvc_alloc_test_begin(0);
                pv_status s = parse_copy(m, b.n, &c, &msg);
                long live = pvc_alloc_live();
                pvc_alloc_test_end();
                assert_int_equal(live, s == PV_OK ? 1 : 0);
                assert_true(s == PV_OK || s == PV_EFORMAT || s == PV_EUNSUPPORTED);
                if (s == PV_OK) {
                    assert_true(c.ncols >= 3 && c.n >= 0);
                    ok++;
                }
                pvio_cloud_free(&c);
                total++;
            }
        free(m);
        sb_free(&b);
    }
    print_message("%lld mutations, %lld still parse\n", (long long)total, (long long)ok);
}

/* ---- raw binaries, npy, sniffing, files --------------------------------------------------- */
static void test_pointbin(void **state)
{
    (void)state;
    float k4[3][4] = { { 1, 2, 3, 0.5f }, { -4, 5.25f, -6, 0 }, { 7, 8, 9, 1 } };
    pvio_cloud c;
    pvc_msg msg;
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 4, PV_F32, &c, &msg), PV_OK);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.ncols, 4);
    assert_string_equal(c.names[3], "intensity");
    assert_memory_equal(c.data, k4, sizeof k4);
    assert_int_equal(c.width, 3);
    assert_int_equal(c.height, 1);
    pvio_cloud_free(&c);
    /* 12 floats as 5 columns: not a multiple */
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 5, PV_F32, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "48 bytes is not a multiple of the 20-byte row"));
    assert_null(c.data);
    float n5[2][5] = { { 1, 2, 3, 40, 31 }, { 4, 5, 6, 7, 0 } };
    assert_int_equal(pvio_cloud_parse(n5, sizeof n5, "nuscenes", NULL, &c, &msg), PV_OK);
    assert_string_equal(c.names[4], "ring");
    assert_true(c.data[4] == 31.0f && c.data[9] == 0.0f);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(n5, sizeof n5, "kitti", NULL, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "hint \"nuscenes\""));
    assert_int_equal(pvio_cloud_parse(k4, sizeof k4, "nuscenes", NULL, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "hint \"kitti\""));
    uint16_t h5[2][5];
    const float hv[2][5] = { { 1.5f, -2, 3.25f, 240, 0.45f }, { 0, 0, 0, 0, 0 } };
    for (int i = 0; i < 10; i++) h5[i / 5][i % 5] = pvc_f32_to_f16(hv[i / 5][i % 5]);
    unsigned char hb[20];
    for (int i = 0; i < 10; i++) {                       /* little-endian on any host */
        hb[2 * i] = (unsigned char)(h5[i / 5][i % 5] & 255);
        hb[2 * i + 1] = (unsigned char)(h5[i / 5][i % 5] >> 8);
    }
    assert_int_equal(pvio_cloud_parse(hb, sizeof hb, "f16x5", "x.bin", &c, &msg), PV_OK);
    assert_string_equal(c.names[4], "time_lag");
    assert_true(c.data[0] == 1.5f && c.data[3] == 240.0f);
    assert_true(c.data[4] == pvc_f16_to_f32(pvc_f32_to_f16(0.45f)));
    pvio_cloud_free(&c);
    assert_int_equal(pvio_pointbin_parse(hb, 19, 5, PV_F16, &c, &msg), PV_EFORMAT);
    /* more columns: c5.., rename */
    float w7[7] = { 1, 2, 3, 4, 5, 6, 7 };
    assert_int_equal(pvio_pointbin_parse(w7, sizeof w7, 7, PV_F32, &c, &msg), PV_OK);
    assert_string_equal(c.names[6], "c6");
    assert_int_equal(pvio_cloud_set_name(&c, 4, "time_lag", &msg), PV_OK);
    assert_int_equal(pvio_cloud_col(&c, "time_lag"), 4);
    assert_int_equal(pvio_cloud_set_name(&c, 5, "x", &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_set_name(&c, 7, "q", &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_set_name(&c, -1, "q", &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_set_name(&c, 5, "", &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_set_name(&c, 5, "abcdefghijabcdefghijabcdefghijabc", &msg),
                     PV_EINPUT);
    assert_int_equal(pvio_cloud_set_name(&c, 4, "time_lag", &msg), PV_OK);   /* same column */
    pvio_cloud_free(&c);
    /* empty input is an empty cloud; bad arguments */
    assert_int_equal(pvio_pointbin_parse(NULL, 0, 4, PV_F32, &c, &msg), PV_OK);
    assert_int_equal(c.n, 0);
    assert_non_null(c.data);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_pointbin_parse(NULL, 16, 4, PV_F32, &c, &msg), PV_EINPUT);
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 2, PV_F32, &c, &msg), PV_EINPUT);
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 17, PV_F32, &c, &msg), PV_EINPUT);
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 4, PV_I32, &c, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "dtype int32"));
    assert_int_equal(pvio_pointbin_parse(k4, sizeof k4, 4, (pv_dtype)99, &c, &msg), PV_EINPUT);
}

static void npy_bytes(pv_dtype dt, int64_t n, int64_t cols, int rank, const void *data, sbuf *out)
{
    pvc_tensor t = { .dtype = dt, .rank = rank, .dims = { n, cols }, .data = (void *)data };
    void *buf;
    size_t len;
    pvc_msg msg;
    assert_int_equal(pvio_npy_serialize(&t, &buf, &len, &msg), PV_OK);
    sb_put(out, buf, len);
    pvc_free(buf);
}

static void test_npy_cloud(void **state)
{
    (void)state;
    float f[3][4] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { -1, -2, -3, -4 } };
    sbuf b = { 0 };
    npy_bytes(PV_F32, 3, 4, 2, f, &b);
    pvio_cloud c;
    pvc_msg msg;
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_OK);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.ncols, 4);
    assert_memory_equal(c.data, f, sizeof f);
    assert_string_equal(c.names[3], "intensity");
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(b.p, b.n, NULL, NULL, &c, &msg), PV_OK);   /* magic */
    pvio_cloud_free(&c);
    sb_free(&b);
    uint16_t h[2][5];
    for (int i = 0; i < 10; i++) h[i / 5][i % 5] = pvc_f32_to_f16((float)i * 0.5f);
    npy_bytes(PV_F16, 2, 5, 2, h, &b);
    assert_int_equal(pvio_cloud_parse(b.p, b.n, NULL, "s.NPY", &c, &msg), PV_OK);
    assert_string_equal(c.names[4], "time_lag");
    assert_true(c.data[9] == 4.5f);
    pvio_cloud_free(&c);
    sb_free(&b);
    npy_bytes(PV_F32, 12, 0, 1, f, &b);
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "shape [12] is not (N, C)"));
    sb_free(&b);
    npy_bytes(PV_F32, 6, 2, 2, f, &b);
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_EFORMAT);
    sb_free(&b);
    int32_t ints[6] = { 0 };
    npy_bytes(PV_I32, 2, 3, 2, ints, &b);
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_EUNSUPPORTED);
    assert_non_null(strstr(msg.text, "dtype int32"));
    sb_free(&b);
    float big[17] = { 0 };
    npy_bytes(PV_F32, 1, 17, 2, big, &b);
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_EFORMAT);
    sb_free(&b);
    npy_bytes(PV_F32, 0, 3, 2, NULL, &b);
    assert_int_equal(pvio_cloud_npy_parse(b.p, b.n, &c, &msg), PV_OK);
    assert_int_equal(c.n, 0);
    assert_non_null(c.data);
    pvio_cloud_free(&c);
    sb_free(&b);
    assert_int_equal(pvio_cloud_npy_parse("\x93NUMPY", 6, &c, &msg), PV_EFORMAT);
    assert_null(c.data);
}

static void test_sniff(void **state)
{
    (void)state;
    static const char pcd[] = "# .PCD v0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nPOINTS 1\n"
                              "DATA ascii\n1 2 3\n";
    float k[2][4] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 } };
    pvio_cloud c;
    pvc_msg msg;
    assert_int_equal(pvio_cloud_parse(pcd, strlen(pcd), NULL, NULL, &c, &msg), PV_OK);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(pcd + 12, strlen(pcd) - 12, NULL, NULL, &c, &msg), PV_OK);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(pcd, strlen(pcd), NULL, "dir/A.PCD", &c, &msg), PV_OK);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(pcd, strlen(pcd), "pcd", "scan.bin", &c, &msg), PV_OK);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_parse(k, sizeof k, NULL, "000008.bin", &c, &msg), PV_OK);
    assert_int_equal(c.ncols, 4);
    pvio_cloud_free(&c);
    /* 40 bytes: 2 rows of 5 f32 from a .pcd.bin name */
    float n5[10] = { 0 };
    assert_int_equal(pvio_cloud_parse(n5, sizeof n5, NULL, "a.pcd.bin", &c, &msg), PV_OK);
    assert_int_equal(c.ncols, 5);
    assert_int_equal(c.n, 2);
    pvio_cloud_free(&c);
    /* a .pcd name wins over content: raw floats named .pcd are refused as PCD */
    assert_int_equal(pvio_cloud_parse(k, sizeof k, NULL, "x.pcd", &c, &msg), PV_EFORMAT);
    assert_int_equal(pvio_cloud_parse(k, sizeof k, NULL, NULL, &c, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "an unnamed buffer"));
    assert_int_equal(pvio_cloud_parse(k, sizeof k, NULL, "scan.las", &c, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "'scan.las'"));
    assert_int_equal(pvio_cloud_parse(k, sizeof k, "las\x01", NULL, &c, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "unknown format hint 'las?'"));
    assert_int_equal(pvio_cloud_parse(NULL, 0, NULL, NULL, &c, &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_parse(NULL, 3, "pcd", NULL, &c, &msg), PV_EINPUT);
    assert_null(c.data);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_read_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/pv_points_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    sbuf b = { 0 };
    small_file(&b, M_COMPRESSED, 9);
    snprintf(path, sizeof path, "%s/s.pcd", dir);
    write_file(path, b.p, b.n);
    pvio_cloud c;
    pvc_msg msg;
    assert_int_equal(pvio_cloud_read_file(path, NULL, &c, &msg), PV_OK);
    double *vals = gen_values(small_fields, 6, 9);
    check_cloud(&c, small_fields, 6, 9, vals);
    free(vals);
    pvio_cloud_free(&c);
    /* a damaged file: the message starts with the path */
    write_file(path, b.p, b.n - 1);
    assert_int_equal(pvio_cloud_read_file(path, NULL, &c, &msg), PV_EFORMAT);
    char want[300];
    snprintf(want, sizeof want, "'%s': pcd: binary_compressed", path);
    assert_true(strncmp(msg.text, want, strlen(want)) == 0);
    remove(path);
    sb_free(&b);
    float k[3][4] = { { 1, 2, 3, 4 } };
    snprintf(path, sizeof path, "%s/k.bin", dir);
    write_file(path, k, sizeof k);
    assert_int_equal(pvio_cloud_read_file(path, NULL, &c, &msg), PV_OK);
    assert_int_equal(c.n, 3);
    pvio_cloud_free(&c);
    assert_int_equal(pvio_cloud_read_file(path, "f16x5", &c, &msg), PV_EFORMAT);
    remove(path);
    snprintf(path, sizeof path, "%s/missing.pcd", dir);
    assert_int_equal(pvio_cloud_read_file(path, NULL, &c, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "cannot open"));
    assert_int_equal(pvio_cloud_read_file(dir, "pcd", &c, &msg), PV_EINPUT);
    assert_int_equal(pvio_cloud_read_file(NULL, "pcd", &c, &msg), PV_EINPUT);
    assert_null(c.data);
    assert_int_equal(rmdir(dir), 0);
}

static void test_drop_nonfinite(void **state)
{
    (void)state;
    float d[6][3] = { { 1, 2, 3 }, { NAN, 0, 0 }, { 4, 5, 6 }, { 0, INFINITY, 0 },
                      { 0, 0, -INFINITY }, { 7, 8, 9 } };
    pvio_cloud c = { .n = 6, .ncols = 3, .width = 3, .height = 2 };
    c.data = pvc_malloc_aligned(sizeof d);
    memcpy(c.data, d, sizeof d);
    int64_t dropped = -1;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 3);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.height, 1);
    static const float want[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    assert_memory_equal(c.data, want, sizeof want);
    pvio_cloud_drop_nonfinite(&c, NULL);                  /* nothing to drop: unchanged */
    assert_int_equal(c.n, 3);
    c.width = 3;
    c.height = 1;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 0);
    c.data[4] = NAN;                                      /* a non-xyz column counts too */
    c.ncols = 1;                                          /* ...but only the cloud's columns */
    c.n = 9;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 1);
    assert_int_equal(c.n, 8);
    pvio_cloud_free(&c);
    pvio_cloud_drop_nonfinite(NULL, &dropped);
    assert_int_equal(dropped, 0);
    pvio_cloud_drop_nonfinite(&c, &dropped);              /* zeroed cloud */
    assert_int_equal(dropped, 0);
    assert_int_equal(pvio_cloud_col(NULL, "x"), -1);
}

/* ---- committed fixtures ------------------------------------------------------------------- */
static const char *src_dir(void)
{
    const char *s = getenv("PV_SOURCE_DIR");
    return s && *s ? s : ".";
}

static const tfield fx_fields[] = {
    { "x", 'F', 4, 1 }, { "y", 'F', 4, 1 }, { "z", 'F', 4, 1 }, { "intensity", 'F', 4, 1 },
    { "ring", 'U', 2, 1 },
};

/* 4 x 3 organized; point 5 is a PCL-style NaN return. */
static double *fx_values(void)
{
    double *v = gen_values(fx_fields, 5, 12);
    v[5 * 5 + 0] = v[5 * 5 + 1] = v[5 * 5 + 2] = NAN;
    return v;
}

static void write_fixtures(const char *dir)
{
    char path[512];
    double *v = fx_values();
    for (int mode = 0; mode < 3; mode++) {
        sbuf b = { 0 };
        pcd_write(&b, fx_fields, 5, 4, 3, v, mode);
        snprintf(path, sizeof path, "%s/small_%s.pcd", dir, mode_names[mode]);
        write_file(path, b.p, b.n);
        sb_free(&b);
    }
    /* the same points as raw rows: f32 x4, f32 x5, f16 x5, and .npy f32 x4 */
    float f5[12][5];
    uint16_t h5[12][5];
    for (int i = 0; i < 12; i++)
        for (int k = 0; k < 5; k++) {
            f5[i][k] = (float)v[i * 5 + k];
            h5[i][k] = pvc_f32_to_f16(f5[i][k]);
        }
    float f4[12][4];
    for (int i = 0; i < 12; i++) memcpy(f4[i], f5[i], sizeof f4[i]);
    snprintf(path, sizeof path, "%s/small_kitti.bin", dir);
    write_file(path, f4, sizeof f4);
    snprintf(path, sizeof path, "%s/small_nuscenes.pcd.bin", dir);
    write_file(path, f5, sizeof f5);
    snprintf(path, sizeof path, "%s/small_f16x5.bin", dir);
    write_file(path, h5, sizeof h5);
    sbuf b = { 0 };
    npy_bytes(PV_F32, 12, 4, 2, f4, &b);
    snprintf(path, sizeof path, "%s/small.npy", dir);
    write_file(path, b.p, b.n);
    sb_free(&b);
    free(v);
}

static void test_fixtures(void **state)
{
    (void)state;
    char dir[400], path[512];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/points", src_dir());
    if (getenv("PV_POINTS_WRITE_FIXTURES")) write_fixtures(dir);
    double *v = fx_values();
    static const char *const pcds[] = { "small_ascii.pcd", "small_binary.pcd",
                                        "small_binary_compressed.pcd", "small_pcl_ascii.pcd",
                                        "small_pcl_binary.pcd", "small_pcl_compressed.pcd" };
    for (size_t i = 0; i < PVC_COUNTOF(pcds); i++) {
        pvio_cloud c;
        pvc_msg msg;
        snprintf(path, sizeof path, "%s/%s", dir, pcds[i]);
        if (pvio_cloud_read_file(path, NULL, &c, &msg) != PV_OK) fail_msg("%s", msg.text);
        check_cloud(&c, fx_fields, 5, 12, v);
        assert_int_equal(c.width, 4);
        assert_int_equal(c.height, 3);
        pvio_cloud_free(&c);
    }
    static const struct { const char *name, *hint; int ncols; bool half; } raws[] = {
        { "small_kitti.bin", NULL, 4, false }, { "small_nuscenes.pcd.bin", NULL, 5, false },
        { "small_f16x5.bin", "f16x5", 5, true }, { "small.npy", NULL, 4, false },
    };
    for (size_t i = 0; i < PVC_COUNTOF(raws); i++) {
        pvio_cloud c;
        pvc_msg msg;
        snprintf(path, sizeof path, "%s/%s", dir, raws[i].name);
        if (pvio_cloud_read_file(path, raws[i].hint, &c, &msg) != PV_OK) fail_msg("%s", msg.text);
        assert_int_equal(c.n, 12);
        assert_int_equal(c.ncols, raws[i].ncols);
        for (int p = 0; p < 12; p++)
            for (int k = 0; k < raws[i].ncols; k++) {
                float want = (float)v[p * 5 + k], got = c.data[p * c.ncols + k];
                if (raws[i].half) want = pvc_f16_to_f32(pvc_f32_to_f16(want));
                assert_true(isnan(want) ? isnan(got) : got == want);
            }
        int64_t dropped;
        pvio_cloud_drop_nonfinite(&c, &dropped);
        assert_int_equal(dropped, raws[i].half ? 2 : 1);    /* ring 65535 overflows float16 */
        pvio_cloud_free(&c);
    }
    free(v);
}

/* ---- real sample files (../shared/data; absent in CI) ------------------------------------- */
static bool real_path(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/../shared/data/lidar/%s", src_dir(), name);
    return access(path, R_OK) == 0;
}

static void check_row(const pvio_cloud *c, int64_t i, const float *want)
{
    for (int k = 0; k < c->ncols; k++)
        if (c->data[i * c->ncols + k] != want[k])
            fail_msg("row %lld column %d: %.9g, want %.9g", (long long)i, k,
                     c->data[i * c->ncols + k], want[k]);
}

static void test_real_autoware_pcd(void **state)
{
    (void)state;
    char path[512];
    if (!real_path("autoware_ground_segmentation_test.pcd", path, sizeof path)) { skip(); return; }
    pvio_cloud c;
    pvc_msg msg;
    if (pvio_cloud_read_file(path, NULL, &c, &msg) != PV_OK) fail_msg("%s", msg.text);
    assert_int_equal(c.n, 65536);
    assert_int_equal(c.width, 1024);
    assert_int_equal(c.height, 64);
    assert_int_equal(c.ncols, 4);
    assert_string_equal(c.names[3], "intensity");
    check_row(&c, 286, (const float[]){ 3.5351443f, 13.340423f, 5.4857445f, 128.0f });
    check_row(&c, 40000, (const float[]){ -21.282209f, 8.1869583f, -1.9614145f, 128.0f });
    check_row(&c, 65513, (const float[]){ -5.19631f, -0.87436891f, -1.9773171f, 128.0f });
    int64_t zeros = 0;
    for (int64_t i = 0; i < c.n; i++)
        zeros += c.data[i * 4] == 0 && c.data[i * 4 + 1] == 0 && c.data[i * 4 + 2] == 0;
    assert_int_equal(zeros, 17488);
    int64_t dropped;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 0);
    assert_int_equal(c.height, 64);
    pvio_cloud_free(&c);
}

static void test_real_kitti(void **state)
{
    (void)state;
    char path[512];
    if (!real_path("kitti_000008.bin", path, sizeof path)) { skip(); return; }
    pvio_cloud c;
    pvc_msg msg;
    if (pvio_cloud_read_file(path, NULL, &c, &msg) != PV_OK) fail_msg("%s", msg.text);
    assert_int_equal(c.n, 17238);
    assert_int_equal(c.ncols, 4);
    check_row(&c, 0, (const float[]){ 21.554000854492188f, 0.02800000086426735f,
                                      0.9380000233650208f, 0.3400000035762787f });
    check_row(&c, 1000, (const float[]){ 9.322999954223633f, 3.8559999465942383f,
                                         0.43799999356269836f, 0.27000001072883606f });
    check_row(&c, 17237, (const float[]){ 6.310999870300293f, -0.0010000000474974513f,
                                          -1.6480000019073486f, 0.3199999928474426f });
    pvio_cloud_free(&c);
    /* the same bytes do not divide into nuScenes rows */
    assert_int_equal(pvio_cloud_read_file(path, "nuscenes", &c, &msg), PV_EFORMAT);
}

static void test_real_nuscenes(void **state)
{
    (void)state;
    char path[512];
    if (!real_path("nuscenes_LIDAR_TOP_1532402927647951.pcd.bin", path, sizeof path)) {
        skip();
        return;
    }
    pvio_cloud c;
    pvc_msg msg;
    if (pvio_cloud_read_file(path, NULL, &c, &msg) != PV_OK) fail_msg("%s", msg.text);
    assert_int_equal(c.n, 34688);
    assert_int_equal(c.ncols, 5);
    assert_string_equal(c.names[4], "ring");
    check_row(&c, 0, (const float[]){ -3.124373435974121f, -0.43415367603302f,
                                      -1.867192029953003f, 4, 0 });
    check_row(&c, 1000, (const float[]){ -4.923737525939941f, 0.49370765686035156f,
                                         -1.8366340398788452f, 28, 8 });
    check_row(&c, 34687, (const float[]){ -14.113669395446777f, 0.014782516285777092f,
                                          2.6591546535491943f, 40, 31 });
    pvio_cloud_free(&c);
}

static void test_real_10sweep(void **state)
{
    (void)state;
    char path[512];
    if (!real_path("nuscenes_10sweep_ff9eff4389a740848f9a56ad749a4ae8.bin", path, sizeof path)) {
        skip();
        return;
    }
    pvio_cloud c;
    pvc_msg msg;
    if (pvio_cloud_read_file(path, "f16x5", &c, &msg) != PV_OK) fail_msg("%s", msg.text);
    assert_int_equal(c.n, 271156);
    assert_int_equal(c.ncols, 5);
    assert_int_equal(pvio_cloud_col(&c, "time_lag"), 4);
    check_row(&c, 0, (const float[]){ -3.123046875f, -0.427734375f, -1.8681640625f, 17, 0 });
    check_row(&c, 1000, (const float[]){ -3.7265625f, 0.27197265625f, -1.396484375f, 25, 0 });
    check_row(&c, 271155, (const float[]){ -23.34375f, -2.056640625f, 4.31640625f, 11, 0.25f });
    int64_t key = 0;
    for (int64_t i = 0; i < c.n; i++) key += c.data[i * 5 + 4] == 0.0f;
    assert_int_equal(key, 34752);
    int64_t dropped;
    pvio_cloud_drop_nonfinite(&c, &dropped);
    assert_int_equal(dropped, 0);
    pvio_cloud_free(&c);
    /* by name alone a .bin is KITTI f32 x4, which these bytes are not */
    assert_int_equal(pvio_cloud_read_file(path, NULL, &c, &msg), PV_EFORMAT);
}

/* ---- allocation failures ------------------------------------------------------------------ */
typedef pv_status (*oom_fn)(const sbuf *b);

static pv_status oom_pcd(const sbuf *b)
{
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = pvio_pcd_parse(b->p, b->n, &c, &msg);
    if (s == PV_OK) {
        assert_true(c.n > 0);
        pvio_cloud_free(&c);
    } else {
        assert_null(c.data);
    }
    return s;
}

static pv_status oom_npy(const sbuf *b)
{
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = pvio_cloud_npy_parse(b->p, b->n, &c, &msg);
    pvio_cloud_free(&c);
    return s;
}

static pv_status oom_pointbin(const sbuf *b)
{
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = pvio_cloud_parse(b->p, b->n, "kitti", NULL, &c, &msg);
    pvio_cloud_free(&c);
    return s;
}

static const char *oom_path;
static pv_status oom_file(const sbuf *b)
{
    (void)b;
    pvio_cloud c;
    pvc_msg msg;
    pv_status s = pvio_cloud_read_file(oom_path, NULL, &c, &msg);
    pvio_cloud_free(&c);
    return s;
}

static void run_oom(oom_fn fn, const sbuf *b, const char *what)
{
    for (long k = 1;; k++) {
        pvc_alloc_test_begin(k);
        pv_status s = fn(b);
        bool failed = pvc_alloc_failed();
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0)
            fail_msg("%s: %ld blocks leaked with failure at allocation %ld", what, live, k);
        if (!failed) {
            assert_int_equal(s, PV_OK);
            assert_true(k > 1);
            break;
        }
        if (s != PV_ENOMEM)
            fail_msg("%s: failure at allocation %ld gave status %d", what, k, (int)s);
        assert_true(k < 100);
    }
}

static void test_oom(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        sbuf b = { 0 };
        small_file(&b, mode, 7);
        run_oom(oom_pcd, &b, mode_names[mode]);
        sb_free(&b);
    }
    sbuf b = { 0 };
    uint16_t h[3][5] = { { 0 } };
    npy_bytes(PV_F16, 3, 5, 2, h, &b);
    run_oom(oom_npy, &b, "npy f16");
    sb_free(&b);
    float f[2][4] = { { 0 } };
    npy_bytes(PV_F32, 2, 4, 2, f, &b);
    run_oom(oom_npy, &b, "npy f32");
    sb_free(&b);
    sb_put(&b, f, sizeof f);
    run_oom(oom_pointbin, &b, "kitti");
    sb_free(&b);
    char dir[] = "/tmp/pv_points_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/o.pcd", dir);
    small_file(&b, M_COMPRESSED, 7);
    write_file(path, b.p, b.n);
    oom_path = path;
    run_oom(oom_file, &b, "read_file");
    sb_free(&b);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcd_all_types),
        cmocka_unit_test(test_pcd_count_and_padding),
        cmocka_unit_test(test_pcd_organized),
        cmocka_unit_test(test_pcd_header_variants),
        cmocka_unit_test(test_pcd_malformed),
        cmocka_unit_test(test_pcd_malformed_built),
        cmocka_unit_test(test_pcd_lzf),
        cmocka_unit_test(test_pcd_truncation),
        cmocka_unit_test(test_pcd_mutation),
        cmocka_unit_test(test_pointbin),
        cmocka_unit_test(test_npy_cloud),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_drop_nonfinite),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_real_autoware_pcd),
        cmocka_unit_test(test_real_kitti),
        cmocka_unit_test(test_real_nuscenes),
        cmocka_unit_test(test_real_10sweep),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
