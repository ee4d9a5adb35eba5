/* Tests for src/io/safetensors: write -> open round trips over every written dtype (rank 0 and
 * empty tensors included), float16 / bfloat16 / int conversions, metadata, shape checks,
 * hand-built malformed headers (each asserting the status and the words naming the problem),
 * writer refusals, and allocation-failure injection on every allocating path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void expect_msg(const pvc_msg *m, const char *needle)
{
    if (!strstr(m->text, needle)) fail_msg("message '%s' lacks '%s'", m->text, needle);
}

static void assert_zeroed(const pvio_st *st)
{
    assert_null(st->e);
    assert_int_equal(st->n, 0);
    assert_null(st->meta_keys);
    assert_null(st->meta_vals);
    assert_int_equal(st->nmeta, 0);
    assert_null(st->base);
    assert_int_equal(st->size, 0);
    assert_null(st->map);
}

/* A temporary file name in /tmp (the file is created empty by mkstemp). */
static void tmp_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/pv_st_test_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- a fixed set of tensors ----------------------------------------------------------------- */
static float    k_f32[6] = { 0.f, 1.5f, -2.25f, 3e-8f, 1e30f, -0.f };
static uint16_t k_f16[4] = { 0x3c00, 0xc000, 0x7bff, 0x0001 };      /* 1, -2, 65504, 2^-24 */
static uint16_t k_bf16[4] = { 0x3f80, 0xc040, 0x4049, 0x0000 };     /* 1, -3, 3.140625, 0 */
static int64_t  k_i64[3] = { -5, 0, 2147483647 };
static int32_t  k_i32[1] = { -123456 };
static int8_t   k_i8[1];
static uint8_t  k_u8[5] = { 0, 1, 127, 128, 255 };
static uint8_t  k_bool[3] = { 1, 0, 1 };

static pvc_tensor mk(const char *name, pv_dtype dt, int rank, const int64_t *dims, void *data)
{
    pvc_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = data;
    return t;
}

/* 8 tensors, deliberately not in name order. */
static int fixed_set(pvc_tensor *t)
{
    static const int64_t d23[2] = { 2, 3 }, d4[1] = { 4 }, d22[2] = { 2, 2 }, d3[1] = { 3 },
                         d20[2] = { 2, 0 }, d5[1] = { 5 }, d113[3] = { 1, 1, 3 };
    int n = 0;
    t[n++] = mk("weight.f32", PV_F32, 2, d23, k_f32);
    t[n++] = mk("b.f16", PV_F16, 1, d4, k_f16);
    t[n++] = mk("a.bf16", PV_BF16, 2, d22, k_bf16);
    t[n++] = mk("z.i64", PV_I64, 1, d3, k_i64);
    t[n++] = mk("scalar.i32", PV_I32, 0, NULL, k_i32);
    t[n++] = mk("empty.i8", PV_I8, 2, d20, k_i8);
    t[n++] = mk("u8", PV_U8, 1, d5, k_u8);
    t[n++] = mk("mask \"q\"\n", PV_BOOL, 3, d113, k_bool);
    return n;
}

static const char *const k_mkeys[2] = { "format", "note" };
static const char *const k_mvals[2] = { "pt", "line one\n\"two\" \\ \x01 \xc3\xa9" };

static void check_fixed(const pvio_st *st, const pvc_tensor *t, int n)
{
    assert_int_equal(st->n, n);
    for (int i = 1; i < st->n; i++) assert_true(strcmp(st->e[i - 1].name, st->e[i].name) < 0);
    for (int i = 0; i < n; i++) {
        const pvio_st_entry *e = pvio_st_find(st, t[i].name);
        if (!e) fail_msg("tensor '%s' not found", t[i].name);
        assert_int_equal(e->dtype, t[i].dtype);
        assert_int_equal(e->rank, t[i].rank);
        for (int d = 0; d < e->rank; d++) assert_int_equal(e->dims[d], t[i].dims[d]);
        size_t nb = pvc_nbytes(&t[i]);
        assert_int_equal(e->end - e->begin, nb);
        assert_true(e->end <= st->size);
        if (nb) assert_memory_equal(st->base + e->begin, t[i].data, nb);
    }
    assert_null(pvio_st_find(st, "nope"));
    assert_int_equal(st->nmeta, 2);
    assert_string_equal(pvio_st_meta(st, "format"), "pt");
    assert_string_equal(pvio_st_meta(st, "note"), k_mvals[1]);
    assert_null(pvio_st_meta(st, "absent"));
    /* the header is padded so the data buffer starts 8-aligned */
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | st->base[i];
    assert_int_equal(hlen % 8, 0);
    assert_int_equal(st->base[8 + hlen - 1] == ' ' || st->base[8 + hlen - 1] == '}', 1);
}

static void test_roundtrip_file(void **state)
{
    (void)state;
    pvc_tensor t[8];
    int n = fixed_set(t);
    char path[64];
    tmp_path(path, sizeof path);
    pvc_msg msg;
    pv_status s = pvio_st_write_file(path, t, n, k_mkeys, k_mvals, 2, &msg);
    if (s != PV_OK) fail_msg("write: %s", msg.text);
    pvio_st st;
    s = pvio_st_open(path, &st, &msg);
    if (s != PV_OK) fail_msg("open: %s", msg.text);
    assert_non_null(st.map);
    check_fixed(&st, t, n);

    /* serialize gives the same bytes as the file */
    void *buf;
    size_t len;
    assert_int_equal(pvio_st_serialize(t, n, k_mkeys, k_mvals, 2, &buf, &len, &msg), PV_OK);
    assert_int_equal(len, st.size);
    assert_memory_equal(buf, st.base, len);
    pvio_st_close(&st);
    assert_zeroed(&st);
    pvio_st_close(&st);                             /* twice is fine */
    pvio_st_close(NULL);

    /* and parses the same from memory */
    assert_int_equal(pvio_st_parse(buf, len, &st, &msg), PV_OK);
    assert_null(st.map);
    check_fixed(&st, t, n);
    pvio_st_close(&st);
    pvc_free(buf);
    unlink(path);
}

static void test_roundtrip_no_meta_and_empty(void **state)
{
    (void)state;
    pvc_msg msg;
    void *buf;
    size_t len;
    /* nothing at all: "{}" padded */
    assert_int_equal(pvio_st_serialize(NULL, 0, NULL, NULL, 0, &buf, &len, &msg), PV_OK);
    assert_int_equal(len, 16);
    assert_memory_equal(buf, "\x08\0\0\0\0\0\0\0{}      ", 16);
    pvio_st st;
    assert_int_equal(pvio_st_parse(buf, len, &st, &msg), PV_OK);
    assert_int_equal(st.n, 0);
    assert_int_equal(st.nmeta, 0);
    assert_null(pvio_st_meta(&st, "format"));
    assert_null(pvio_st_find(&st, "x"));
    pvio_st_close(&st);
    pvc_free(buf);

    /* strided-but-contiguous descriptors and an all-empty set */
    static const int64_t d0[1] = { 0 };
    float f[6] = { 1, 2, 3, 4, 5, 6 };
    pvc_tensor t[2];
    static const int64_t d32[2] = { 3, 2 };
    t[0] = mk("x", PV_F32, 2, d32, f);
    pvc_tensor_set_contiguous(&t[0]);
    t[1] = mk("", PV_F32, 1, d0, NULL);              /* empty name and no data: allowed */
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_OK);
    assert_int_equal(pvio_st_parse(buf, len, &st, &msg), PV_OK);
    assert_int_equal(st.n, 2);
    assert_string_equal(st.e[0].name, "");
    const pvio_st_entry *e = pvio_st_find(&st, "");
    assert_non_null(e);
    assert_int_equal(e->begin, e->end);
    float out[6] = { 0 };
    assert_int_equal(pvio_st_read_f32(&st, e, NULL, &msg), PV_OK);     /* 0 floats */
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "x"), out, &msg), PV_OK);
    assert_memory_equal(out, f, sizeof f);
    pvio_st_close(&st);
    pvc_free(buf);
}

static void test_conversions(void **state)
{
    (void)state;
    pvc_tensor t[12];
    int n = fixed_set(t);
    static const uint16_t spec16[4] = { 0x7c00, 0xfc00, 0x7e00, 0x8000 };   /* inf -inf nan -0 */
    static const uint16_t specbf[2] = { 0x7f80, 0x7fc0 };                  /* inf nan */
    static const int64_t d4[1] = { 4 }, d2[1] = { 2 };
    static const int64_t big[3] = { 1, 2, 2147483648LL };
    static const int8_t neg[3] = { -128, -1, 127 };
    static const int64_t d3[1] = { 3 };
    t[n++] = mk("spec16", PV_F16, 1, d4, (void *)spec16);
    t[n++] = mk("specbf", PV_BF16, 1, d2, (void *)specbf);
    t[n++] = mk("big", PV_I64, 1, d3, (void *)big);
    t[n++] = mk("neg", PV_I8, 1, d3, (void *)neg);
    pvc_msg msg;
    void *buf;
    size_t len;
    assert_int_equal(pvio_st_serialize(t, n, NULL, NULL, 0, &buf, &len, &msg), PV_OK);
    pvio_st st;
    assert_int_equal(pvio_st_parse(buf, len, &st, &msg), PV_OK);

    float f[8];
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "weight.f32"), f, &msg), PV_OK);
    assert_memory_equal(f, k_f32, sizeof k_f32);
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "b.f16"), f, &msg), PV_OK);
    assert_true(f[0] == 1.0f && f[1] == -2.0f && f[2] == 65504.0f && f[3] == ldexpf(1.0f, -24));
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "a.bf16"), f, &msg), PV_OK);
    assert_true(f[0] == 1.0f && f[1] == -3.0f && f[2] == 3.140625f && f[3] == 0.0f);
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "spec16"), f, &msg), PV_OK);
    assert_true(isinf(f[0]) && f[0] > 0 && isinf(f[1]) && f[1] < 0 && isnan(f[2]));
    assert_true(f[3] == 0.0f && signbit(f[3]));
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "specbf"), f, &msg), PV_OK);
    assert_true(isinf(f[0]) && isnan(f[1]));

    int32_t v[8];
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "z.i64"), v, &msg), PV_OK);
    assert_true(v[0] == -5 && v[1] == 0 && v[2] == 2147483647);
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "scalar.i32"), v, &msg), PV_OK);
    assert_int_equal(v[0], -123456);
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "u8"), v, &msg), PV_OK);
    assert_true(v[0] == 0 && v[3] == 128 && v[4] == 255);
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "neg"), v, &msg), PV_OK);
    assert_true(v[0] == -128 && v[1] == -1 && v[2] == 127);
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "mask \"q\"\n"), v, &msg), PV_OK);
    assert_true(v[0] == 1 && v[1] == 0 && v[2] == 1);

    /* refusals name the tensor, the dtype, the index */
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "big"), v, &msg), PV_EFORMAT);
    expect_msg(&msg, "tensor 'big'");
    expect_msg(&msg, "value 2147483648 at index 2");
    assert_int_equal(pvio_st_read_f32(&st, pvio_st_find(&st, "u8"), f, &msg), PV_EFORMAT);
    expect_msg(&msg, "tensor 'u8' is U8");
    assert_int_equal(pvio_st_read_i32(&st, pvio_st_find(&st, "b.f16"), v, &msg), PV_EFORMAT);
    expect_msg(&msg, "tensor 'b.f16' is F16");
    /* an entry from elsewhere */
    pvio_st_entry fake = st.e[0];
    assert_int_equal(pvio_st_read_f32(&st, &fake, f, &msg), PV_EINPUT);
    assert_int_equal(pvio_st_read_f32(&st, NULL, f, &msg), PV_EINPUT);
    pvio_st_close(&st);
    pvc_free(buf);
}

static void test_expect(void **state)
{
    (void)state;
    pvc_tensor t[8];
    int n = fixed_set(t);
    pvc_msg msg;
    void *buf;
    size_t len;
    assert_int_equal(pvio_st_serialize(t, n, NULL, NULL, 0, &buf, &len, &msg), PV_OK);
    pvio_st st;
    assert_int_equal(pvio_st_parse(buf, len, &st, &msg), PV_OK);
    const pvio_st_entry *e = NULL;
    static const int64_t d23[2] = { 2, 3 }, d32[2] = { 3, 2 };
    assert_int_equal(pvio_st_expect(&st, "weight.f32", 2, d23, &e, &msg), PV_OK);
    assert_non_null(e);
    assert_string_equal(e->name, "weight.f32");
    assert_int_equal(pvio_st_expect(&st, "scalar.i32", 0, NULL, NULL, &msg), PV_OK);
    assert_int_equal(pvio_st_expect(&st, "weight.f32", 2, d32, &e, &msg), PV_EFORMAT);
    assert_null(e);
    expect_msg(&msg, "tensor 'weight.f32' has shape [2,3] (want [3,2])");
    assert_int_equal(pvio_st_expect(&st, "weight.f32", 1, d23, &e, &msg), PV_EFORMAT);
    expect_msg(&msg, "has shape [2,3] (want [2])");
    assert_int_equal(pvio_st_expect(&st, "head.w", 2, d23, &e, &msg), PV_EFORMAT);
    expect_msg(&msg, "tensor 'head.w' is missing");
    assert_int_equal(pvio_st_expect(&st, "x", 9, d23, &e, &msg), PV_EINPUT);
    pvio_st_close(&st);
    pvc_free(buf);
}

/* ---- malformed files ------------------------------------------------------------------------ */
static uint8_t g_buf[8192];

/* 8-byte length (hlen, or the JSON's length when hlen is ~0) + json + data_len bytes of 0x11. */
static size_t build(const char *json, size_t jlen, uint64_t hlen, size_t data_len)
{
    if (hlen == ~(uint64_t)0) hlen = jlen;
    assert_true(8 + jlen + data_len <= sizeof g_buf);
    for (int i = 0; i < 8; i++) g_buf[i] = (uint8_t)(hlen >> (8 * i));
    memcpy(g_buf + 8, json, jlen);
    memset(g_buf + 8 + jlen, 0x11, data_len);
    return 8 + jlen + data_len;
}

static void bad_len(size_t len, pv_status want, const char *n1, const char *n2)
{
    uint8_t *copy = malloc(len ? len : 1);        /* exact size: ASan sees any over-read */
    assert_non_null(copy);
    memcpy(copy, g_buf, len);
    pvio_st st;
    pvc_msg msg = { { 0 } };
    pv_status s = pvio_st_parse(copy, len, &st, &msg);
    if (s != want) fail_msg("status %d (want %d): %s", (int)s, (int)want, msg.text);
    expect_msg(&msg, n1);
    if (n2) expect_msg(&msg, n2);
    assert_zeroed(&st);
    free(copy);
}

static void bad(const char *json, size_t data_len, pv_status want, const char *n1, const char *n2)
{
    bad_len(build(json, strlen(json), ~(uint64_t)0, data_len), want, n1, n2);
}

#define T(name, body) "\"" name "\":" body
#define F32_2 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static void test_malformed(void **state)
{
    (void)state;
    /* lengths */
    bad_len(build("", 0, 0, 0) - 3, PV_EFORMAT, "5 bytes, shorter than the 8-byte header length", NULL);
    bad_len(0, PV_EFORMAT, "0 bytes", NULL);
    bad_len(build("{}", 2, 1000, 10), PV_EFORMAT, "header length 1000 runs past the end", "12 bytes");
    bad_len(build("{}", 2, 200000000, 0), PV_EFORMAT, "header length 200000000 is over the 100000000-byte limit", NULL);
    bad_len(build("{}", 2, ~(uint64_t)0 - 1, 0), PV_EFORMAT, "over the", NULL);
    bad_len(build("", 0, 0, 0), PV_EFORMAT, "header is empty", NULL);
    bad_len(build("{\"a\0\":1}", 8, ~(uint64_t)0, 0), PV_EFORMAT, "NUL byte at offset 3", NULL);
    /* not JSON / not an object / trailing bytes */
    bad("hello", 0, PV_EFORMAT, "not a JSON object", "'h'");
    bad("[1,2]", 0, PV_EFORMAT, "not a JSON object", NULL);
    bad("{\"a\":", 0, PV_EFORMAT, "not valid JSON", NULL);
    bad("{\"a\":{\"dtype\":\"F32\"", 0, PV_EFORMAT, "not valid JSON", NULL);
    bad("{} x", 0, PV_EFORMAT, "bytes other than spaces after the JSON object", "byte 3");
    bad("{}{}", 0, PV_EFORMAT, "bytes other than spaces", NULL);
    /* tensor objects and fields */
    bad("{" T("w", "3") "}", 0, PV_EFORMAT, "tensor 'w' is 3, not an object", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2]}") "}", 8, PV_EFORMAT,
        "tensor 'w' is missing the field 'data_offsets'", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"foo\":1}") "}", 8,
        PV_EFORMAT, "tensor 'w' has an unknown field 'foo'", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}") "}", 8,
        PV_EFORMAT, "tensor 'w' repeats the field 'dtype'", NULL);
    /* dtype */
    bad("{" T("w", "{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "tensor 'w': unknown dtype 'F33'", NULL);
    bad("{" T("w", "{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "tensor 'w': 'dtype' is 5, not a string", NULL);
    bad("{" T("w", "{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}") "}", 8,
        PV_EUNSUPPORTED, "tensor 'w': dtype F64 is not supported", NULL);
    bad("{" T("q", "{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[0,8]}") "}", 8,
        PV_EUNSUPPORTED, "tensor 'q': dtype F8_E4M3 is not supported", NULL);
    /* shape */
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "tensor 'w': 'shape'[0] is -1, not a non-negative integer", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "'shape'[1] is 1.5", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "'shape'[0] is a string", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "tensor 'w': 'shape' is a string, not an array", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,8]}") "}",
        8, PV_EFORMAT, "tensor 'w': shape [4294967296,4294967296,4] of F32 overflows", NULL);
    bad("{" T("w", "{\"dtype\":\"U8\",\"shape\":[1e300],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "'shape'[0] is 1.0000000000000001e+300", NULL);
    bad("{" T("w", "{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}") "}", 8,
        PV_EFORMAT, "'shape' has more than 8 dimensions", NULL);
    /* offsets */
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,100]}") "}", 8, PV_EFORMAT,
        "tensor 'w': 'data_offsets' end 100 is past the end of the 8-byte data buffer", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}") "}", 8, PV_EFORMAT,
        "tensor 'w': 'data_offsets' [8, 4] has begin > end", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}") "}", 8, PV_EFORMAT,
        "'data_offsets' is an array of 1 items, not an array of two integers", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{}}") "}", 8, PV_EFORMAT,
        "'data_offsets' is an object", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.5,8]}") "}", 8, PV_EFORMAT,
        "'data_offsets'[0] is 0.5", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[9007199254740992,9007199254740992]}") "}",
        8, PV_EFORMAT, "'data_offsets'[0] is 9007199254740992, not a non-negative integer below 2^53", NULL);
    bad("{" T("w", "{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}") "}", 8, PV_EFORMAT,
        "tensor 'w': shape [3] of F32 needs 12 bytes, 'data_offsets' [0, 8] hold 8", NULL);
    bad("{" T("w", "{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[0,0]}") "}", 8, PV_EFORMAT,
        "shape [] of BF16 needs 2 bytes", NULL);
    /* overlaps and duplicates */
    bad("{" T("a", F32_2) "," T("b", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}") "}",
        16, PV_EFORMAT, "tensors 'a' [0, 8) and 'b' [4, 12) overlap", NULL);
    bad("{" T("b", "{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]}") ","
        T("a", "{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,3]}") ","
        T("c", "{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[14,16]}") "}",
        16, PV_EFORMAT, "tensors 'b' [0, 16) and 'c' [14, 16) overlap", NULL);
    bad("{" T("a", F32_2) "," T("a", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}") "}",
        16, PV_EFORMAT, "tensor 'a' appears twice", NULL);
    /* metadata */
    bad("{\"__metadata__\":{\"k\":1}," T("a", F32_2) "}", 8, PV_EFORMAT,
        "metadata 'k' is 1, not a string", NULL);
    bad("{\"__metadata__\":[\"x\"]}", 0, PV_EFORMAT, "'__metadata__' is an array, not an object", NULL);
    bad("{\"__metadata__\":{},\"__metadata__\":{}}", 0, PV_EFORMAT, "'__metadata__' appears twice", NULL);
    bad("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, PV_EFORMAT, "metadata key 'k' appears twice", NULL);
    /* names in messages are cut and cleaned */
    bad("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\n\":3}", 0,
        PV_EFORMAT, "tensor 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is 3", NULL);
    bad("{\"a\\u0001b\":true}", 0, PV_EFORMAT, "tensor 'a?b' is a boolean", NULL);
}

static void test_valid_edges(void **state)
{
    (void)state;
    /* HF-style header, padding of spaces and newlines, gaps and trailing bytes allowed */
    const char *json = "  {\"__metadata__\":{\"format\":\"pt\"},"
                       T("b", "{\"dtype\":\"I32\",\"shape\":[1,1],\"data_offsets\":[12,16]}") ","
                       T("a", F32_2) "," T("e", "{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[8,8]}")
                       "} \n\t\r  ";
    size_t len = build(json, strlen(json), ~(uint64_t)0, 24);
    pvio_st st;
    pvc_msg msg;
    assert_int_equal(pvio_st_parse(g_buf, len, &st, &msg), PV_OK);
    assert_int_equal(st.n, 3);
    assert_string_equal(st.e[0].name, "a");
    assert_string_equal(st.e[1].name, "b");
    assert_string_equal(st.e[2].name, "e");
    uint64_t d0 = 8 + strlen(json);
    assert_int_equal(st.e[0].begin, d0);
    assert_int_equal(st.e[1].begin, d0 + 12);
    assert_int_equal(st.e[1].end, d0 + 16);
    assert_string_equal(pvio_st_meta(&st, "format"), "pt");
    int32_t v;
    assert_int_equal(pvio_st_read_i32(&st, &st.e[1], &v, &msg), PV_OK);
    assert_int_equal(v, 0x11111111);
    pvio_st_close(&st);

    assert_int_equal(pvio_st_parse(NULL, 3, &st, &msg), PV_EINPUT);
    assert_zeroed(&st);
}

static void test_open_errors(void **state)
{
    (void)state;
    pvio_st st;
    pvc_msg msg;
    assert_int_equal(pvio_st_open("/nonexistent/x.safetensors", &st, &msg), PV_EINPUT);
    expect_msg(&msg, "safetensors '/nonexistent/x.safetensors': cannot open");
    assert_zeroed(&st);
    assert_int_equal(pvio_st_open("/tmp", &st, &msg), PV_EINPUT);
    expect_msg(&msg, "not a regular file");
    char path[64];
    tmp_path(path, sizeof path);                    /* 0 bytes */
    assert_int_equal(pvio_st_open(path, &st, &msg), PV_EFORMAT);
    expect_msg(&msg, "0 bytes, shorter than the 8-byte");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite("\x08\0\0\0\0", 1, 5, f), 5);
    fclose(f);
    assert_int_equal(pvio_st_open(path, &st, &msg), PV_EFORMAT);
    expect_msg(&msg, "file is 5 bytes, shorter than the 8-byte");
    f = fopen(path, "wb");
    assert_non_null(f);
    size_t len = build("{\"a\":1}", 7, ~(uint64_t)0, 0);
    assert_int_equal(fwrite(g_buf, 1, len, f), len);
    fclose(f);
    assert_int_equal(pvio_st_open(path, &st, &msg), PV_EFORMAT);
    expect_msg(&msg, "tensor 'a' is 1, not an object");
    expect_msg(&msg, path);
    assert_zeroed(&st);
    unlink(path);
}

static void test_write_refusals(void **state)
{
    (void)state;
    static const int64_t d2[1] = { 2 }, dneg[1] = { -1 }, d22[2] = { 2, 2 };
    float f[4] = { 0 };
    pvc_msg msg;
    void *buf;
    size_t len;
    pvc_tensor t[2];
    t[0] = mk("a", PV_F32, 1, d2, f);
    t[1] = mk("a", PV_F32, 1, d2, f);
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor name 'a' appears twice");
    assert_null(buf);
    t[1].name = NULL;
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor 1 has no name");
    t[1].name = "__metadata__";
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "reserves");
    t[1] = mk("b", PV_DTYPE_COUNT, 1, d2, f);
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor 'b' has invalid dtype");
    t[1] = mk("b", PV_F32, 1, dneg, f);
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor 'b' has shape [-1]");
    t[1] = mk("b", PV_F32, 2, d22, f);
    t[1].strides[0] = 4;
    t[1].strides[1] = 8;                            /* transposed view */
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor 'b' is not contiguous");
    t[1] = mk("b", PV_F32, 1, d2, NULL);
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "tensor 'b' has NULL data");
    t[1] = mk("b", PV_F32, 1, d2, f);
    const char *keys[2] = { "k", "k" }, *vals[2] = { "1", "2" };
    assert_int_equal(pvio_st_serialize(t, 2, keys, vals, 2, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "metadata key 'k' appears twice");
    vals[1] = NULL;
    keys[1] = "j";
    assert_int_equal(pvio_st_serialize(t, 2, keys, vals, 2, &buf, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "metadata value 1 is NULL");
    assert_int_equal(pvio_st_serialize(t, 2, NULL, NULL, 1, &buf, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_st_serialize(t, -1, NULL, NULL, 0, &buf, &len, &msg), PV_EINPUT);

    /* a refused write leaves no file; an unwritable path is PV_EINPUT */
    char path[64];
    tmp_path(path, sizeof path);
    unlink(path);
    t[1].name = "a";
    assert_int_equal(pvio_st_write_file(path, t, 2, NULL, NULL, 0, &msg), PV_EINPUT);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0);
    assert_int_equal(pvio_st_write_file("/nonexistent/dir/x.safetensors", t, 1, NULL, NULL, 0, &msg),
                     PV_EINPUT);
    expect_msg(&msg, "cannot create");
    assert_int_equal(pvio_st_write_file(NULL, t, 1, NULL, NULL, 0, &msg), PV_EINPUT);
}

/* ---- allocation failures -------------------------------------------------------------------- */
typedef pv_status (*oom_fn)(void);
static char g_path[64];

static pv_status oom_serialize(void)
{
    pvc_tensor t[8];
    int n = fixed_set(t);
    void *buf;
    size_t len;
    pvc_msg msg;
    pv_status s = pvio_st_serialize(t, n, k_mkeys, k_mvals, 2, &buf, &len, &msg);
    if (s == PV_OK) pvc_free(buf);
    return s;
}

static pv_status oom_write_open(void)
{
    pvc_tensor t[8];
    int n = fixed_set(t);
    pvc_msg msg;
    pv_status s = pvio_st_write_file(g_path, t, n, k_mkeys, k_mvals, 2, &msg);
    if (s != PV_OK) return s;
    pvio_st st;
    s = pvio_st_open(g_path, &st, &msg);
    if (s == PV_OK) {
        if (st.n != n || st.nmeta != 2) s = PV_EINTERNAL;
        pvio_st_close(&st);
    } else if (st.e || st.map) {
        s = PV_EINTERNAL;
    }
    return s;
}

static void run_oom(oom_fn fn, const char *what)
{
    for (long k = 1;; k++) {
        pvc_alloc_test_begin(k);
        pv_status s = fn();
        bool failed = pvc_alloc_failed();
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0) fail_msg("%s: %ld blocks leaked with failure at allocation %ld", what, live, k);
        if (!failed) {
            assert_int_equal(s, PV_OK);
            assert_true(k > 1);
            break;
        }
        if (s != PV_ENOMEM) fail_msg("%s: failure at allocation %ld gave status %d", what, k, (int)s);
        assert_true(k < 1000);
    }
}

static void test_oom(void **state)
{
    (void)state;
    run_oom(oom_serialize, "serialize");
    tmp_path(g_path, sizeof g_path);
    run_oom(oom_write_open, "write + open");
    unlink(g_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_file),
        cmocka_unit_test(test_roundtrip_no_meta_and_empty),
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_expect),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_valid_edges),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
