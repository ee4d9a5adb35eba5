/* Tests for src/io/image: PNG of every colour type and bit depth (written here with libpng),
 * interlaced PNG, PNG and JPEG round trips through perceive's encoders, gray / progressive /
 * CMYK JPEG (written here with TurboJPEG), sniffing, truncation at every cut point, corrupt
 * bytes, size refusals, allocation-failure injection, and the four real HaMeR test photos
 * (skipped when ../shared/data/hands is absent). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/image.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static void expect_msg(const pvc_msg *m, const char *needle)
{
    if (!strstr(m->text, needle)) fail_msg("message '%s' lacks '%s'", m->text, needle);
}

static void assert_zeroed(const pvio_image *img)
{
    assert_int_equal(img->w, 0);
    assert_int_equal(img->h, 0);
    assert_null(img->rgb);
}

/* Decodes an exact-size copy (ASan then sees any read past the end). */
static pv_status decode_copy(const void *buf, size_t len, const char *fmt, pvio_image *img,
                             pvc_msg *msg)
{
    unsigned char *c = malloc(len ? len : 1);
    assert_non_null(c);
    if (len) memcpy(c, buf, len);
    pv_status s = pvio_image_decode(c, len, fmt, img, msg);
    free(c);
    if (s != PV_OK) assert_zeroed(img);
    return s;
}

static uint32_t g_rng = 12345;
static uint8_t rnd8(void)
{
    g_rng = g_rng * 1664525u + 1013904223u;
    return (uint8_t)(g_rng >> 24);
}

/* A smooth picture (JPEG-friendly): gradients plus a soft blob. */
static uint8_t *smooth_rgb(int w, int h)
{
    uint8_t *p = malloc((size_t)w * (size_t)h * 3);
    assert_non_null(p);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *q = p + ((size_t)y * (size_t)w + (size_t)x) * 3;
            int dx = x - w / 2, dy = y - h / 2;
            int blob = 60 - (dx * dx + dy * dy) / 8;
            q[0] = (uint8_t)(40 + 150 * x / w);
            q[1] = (uint8_t)(30 + 120 * y / h + (blob > 0 ? blob : 0));
            q[2] = (uint8_t)(200 - 100 * (x + y) / (w + h));
        }
    return p;
}

/* ---- PNG written with libpng directly ------------------------------------------------------- */
typedef struct membuf { unsigned char *p; size_t n, cap; } membuf;

static void mb_write(png_structp png, png_bytep d, size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->p = realloc(m->p, m->cap);
        if (!m->p) png_error(png, "test: out of memory");
    }
    memcpy(m->p + m->n, d, n);
    m->n += n;
}

static void mb_flush(png_structp png) { (void)png; }

typedef struct png_spec {
    int w, h, ctype, depth, interlace;
    const unsigned char *rows;      /* h rows of PNG_ROWBYTES bytes each, packed */
    const png_color *pal;
    int npal;
    const png_byte *trans;
    int ntrans;
} png_spec;

static unsigned char *make_png(const png_spec *s, size_t *len)
{
    membuf m = { NULL, 0, 0 };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing a test PNG");
    png_set_write_fn(png, &m, mb_write, mb_flush);
    png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, s->depth, s->ctype, s->interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (s->pal) png_set_PLTE(png, info, s->pal, s->npal);
    if (s->trans) png_set_tRNS(png, info, s->trans, s->ntrans, NULL);
    png_write_info(png, info);
    int ch = s->ctype == PNG_COLOR_TYPE_RGB ? 3 : s->ctype == PNG_COLOR_TYPE_RGBA ? 4 :
             s->ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    size_t rb = ((size_t)s->w * (size_t)(ch * s->depth) + 7) / 8;
    png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)s->h);
    assert_non_null(rows);
    for (int y = 0; y < s->h; y++) rows[y] = (png_bytep)(uintptr_t)(s->rows + (size_t)y * rb);
    png_write_image(png, rows);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(rows);
    *len = m.n;
    return m.p;
}

/* Decodes the spec's PNG and compares with want (w*h*3), exactly or within tol. */
static void check_png(const png_spec *s, const uint8_t *want, int tol, const char *what)
{
    size_t len;
    unsigned char *png = make_png(s, &len);
    pvio_image img;
    pvc_msg msg;
    pv_status st = decode_copy(png, len, "auto", &img, &msg);
    if (st != PV_OK) fail_msg("%s: %s", what, msg.text);
    assert_int_equal(img.w, s->w);
    assert_int_equal(img.h, s->h);
    for (size_t i = 0; i < (size_t)s->w * (size_t)s->h * 3; i++) {
        int d = (int)img.rgb[i] - (int)want[i];
        if (d > tol || d < -tol)
            fail_msg("%s: byte %zu is %d, want %d", what, i, img.rgb[i], want[i]);
    }
    pvio_image_free(&img);
    assert_zeroed(&img);
    free(png);
}

static void test_png_color_types(void **state)
{
    (void)state;
    enum { W = 13, H = 7, N = W * H };
    unsigned char rows[N * 8], want[N * 3];

    /* gray 8 */
    for (int i = 0; i < N; i++) { rows[i] = rnd8(); memset(want + 3 * i, rows[i], 3); }
    png_spec s = { W, H, PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 0, "gray8");

    /* gray 1: bits packed MSB first, rows padded to bytes */
    int rb1 = (W + 7) / 8;
    memset(rows, 0, sizeof rows);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int bit = (x * 3 + y) % 5 < 2;
            if (bit) rows[y * rb1 + x / 8] |= (unsigned char)(0x80 >> (x % 8));
            memset(want + 3 * (y * W + x), bit ? 255 : 0, 3);
        }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 0, "gray1");

    /* gray + alpha 8: alpha dropped, not composited */
    for (int i = 0; i < N; i++) {
        rows[2 * i] = rnd8();
        rows[2 * i + 1] = (unsigned char)(i * 7);
        memset(want + 3 * i, rows[2 * i], 3);
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 0, "gray+alpha8");

    /* gray 16: scaled to 8 bits (rounded) */
    for (int i = 0; i < N; i++) {
        unsigned v = (unsigned)rnd8() << 8 | rnd8();
        rows[2 * i] = (unsigned char)(v >> 8);
        rows[2 * i + 1] = (unsigned char)v;
        memset(want + 3 * i, (int)((v * 255u + 32767u) / 65535u), 3);
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 1, "gray16");

    /* palette 8 with tRNS: colours expanded, transparency dropped */
    png_color pal[16];
    png_byte trans[5] = { 0, 64, 128, 200, 255 };
    for (int k = 0; k < 16; k++) pal[k] = (png_color){ rnd8(), rnd8(), rnd8() };
    for (int i = 0; i < N; i++) {
        rows[i] = (unsigned char)(rnd8() % 16);
        want[3 * i] = pal[rows[i]].red;
        want[3 * i + 1] = pal[rows[i]].green;
        want[3 * i + 2] = pal[rows[i]].blue;
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_PALETTE, 8, PNG_INTERLACE_NONE, rows, pal, 16, trans, 5 };
    check_png(&s, want, 0, "palette8+tRNS");

    /* palette 2-bit, no tRNS */
    int rb2 = (W * 2 + 7) / 8;
    memset(rows, 0, sizeof rows);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int k = (x + 2 * y) % 4;
            rows[y * rb2 + x / 4] |= (unsigned char)(k << (6 - 2 * (x % 4)));
            want[3 * (y * W + x)] = pal[k].red;
            want[3 * (y * W + x) + 1] = pal[k].green;
            want[3 * (y * W + x) + 2] = pal[k].blue;
        }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_PALETTE, 2, PNG_INTERLACE_NONE, rows, pal, 4, NULL, 0 };
    check_png(&s, want, 0, "palette2");

    /* RGB 16 */
    for (int i = 0; i < N * 3; i++) {
        unsigned v = (unsigned)rnd8() << 8 | rnd8();
        rows[2 * i] = (unsigned char)(v >> 8);
        rows[2 * i + 1] = (unsigned char)v;
        want[i] = (unsigned char)((v * 255u + 32767u) / 65535u);
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_RGB, 16, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 1, "rgb16");

    /* RGBA 8 */
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 3; c++) want[3 * i + c] = rows[4 * i + c] = rnd8();
        rows[4 * i + 3] = rnd8();
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_RGBA, 8, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 0, "rgba8");

    /* RGB 8, Adam7 interlaced */
    for (int i = 0; i < N * 3; i++) want[i] = rows[i] = rnd8();
    s = (png_spec){ W, H, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 0, "rgb8 interlaced");

    /* RGBA 16, interlaced, 1x1 and 1-row */
    for (int i = 0; i < N * 4; i++) {
        unsigned v = (unsigned)rnd8() << 8 | rnd8();
        rows[2 * i] = (unsigned char)(v >> 8);
        rows[2 * i + 1] = (unsigned char)v;
        if (i % 4 != 3) want[i / 4 * 3 + i % 4] = (unsigned char)((v * 255u + 32767u) / 65535u);
    }
    s = (png_spec){ W, H, PNG_COLOR_TYPE_RGBA, 16, PNG_INTERLACE_ADAM7, rows, NULL, 0, NULL, 0 };
    check_png(&s, want, 1, "rgba16 interlaced");
    s.w = 1;
    s.h = 1;
    check_png(&s, want, 1, "rgba16 1x1");
}

static void test_png_roundtrip(void **state)
{
    (void)state;
    int dims[3][2] = { { 37, 23 }, { 1, 1 }, { 300, 2 } };
    for (int k = 0; k < 3; k++) {
        int w = dims[k][0], h = dims[k][1];
        uint8_t *px = malloc((size_t)w * (size_t)h * 3);
        assert_non_null(px);
        for (int i = 0; i < w * h * 3; i++) px[i] = rnd8();
        pvio_image src = { w, h, px }, img;
        void *png;
        size_t len;
        pvc_msg msg;
        assert_int_equal(pvio_image_png_encode(&src, &png, &len, &msg), PV_OK);
        assert_true(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
        const char *fmts[3] = { "auto", "png", NULL };
        for (int f = 0; f < 3; f++) {
            assert_int_equal(decode_copy(png, len, fmts[f], &img, &msg), PV_OK);
            assert_int_equal(img.w, w);
            assert_int_equal(img.h, h);
            assert_memory_equal(img.rgb, px, (size_t)w * (size_t)h * 3);
            pvio_image_free(&img);
        }
        pvc_free(png);
        free(px);
    }
}

/* ---- JPEG ------------------------------------------------------------------------------------- */
static void compare(const uint8_t *a, const uint8_t *b, size_t n, int max_tol, double mean_tol,
                    const char *what)
{
    long sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        sum += d;
        if (d > worst) worst = d;
    }
    double mean = (double)sum / (double)n;
    if (worst > max_tol || mean > mean_tol)
        fail_msg("%s: max error %d (tol %d), mean %.3f (tol %.3f)", what, worst, max_tol, mean, mean_tol);
}

/* TurboJPEG directly, for JPEG kinds perceive's encoder does not make. */
static unsigned char *tj_make(const uint8_t *px, int w, int h, int pf, int sub, int flags,
                              unsigned long *len)
{
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *jb = NULL;
    *len = 0;
    if (tjCompress2(tj, px, w, 0, h, pf, &jb, len, sub, 90, flags) != 0)
        fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    return jb;
}

static void test_jpeg_roundtrip(void **state)
{
    (void)state;
    int w = 64, h = 48;
    uint8_t *px = smooth_rgb(w, h);
    pvio_image src = { w, h, px }, img;
    pvc_msg msg;
    void *jpg;
    size_t len;
    assert_int_equal(pvio_image_jpeg_encode(&src, 95, &jpg, &len, &msg), PV_OK);
    assert_true(len > 100 && ((uint8_t *)jpg)[0] == 0xff && ((uint8_t *)jpg)[1] == 0xd8);
    const char *fmts[4] = { "auto", "jpeg", "jpg", NULL };
    for (int f = 0; f < 4; f++) {
        assert_int_equal(decode_copy(jpg, len, fmts[f], &img, &msg), PV_OK);
        assert_int_equal(img.w, w);
        assert_int_equal(img.h, h);
        compare(img.rgb, px, (size_t)w * h * 3, 24, 2.0, "jpeg q95");
        pvio_image_free(&img);
    }
    pvc_free(jpg);
    /* quality matters: q10 is smaller and further off */
    void *low;
    size_t llen;
    assert_int_equal(pvio_image_jpeg_encode(&src, 10, &low, &llen, &msg), PV_OK);
    assert_true(llen < len);
    assert_int_equal(decode_copy(low, llen, NULL, &img, &msg), PV_OK);
    compare(img.rgb, px, (size_t)w * h * 3, 80, 12.0, "jpeg q10");
    pvio_image_free(&img);
    pvc_free(low);

    /* odd sizes through 4:2:0 */
    pvio_image odd = { 5, 3, px };
    assert_int_equal(pvio_image_jpeg_encode(&odd, 90, &jpg, &len, &msg), PV_OK);
    assert_int_equal(decode_copy(jpg, len, "jpeg", &img, &msg), PV_OK);
    assert_int_equal(img.w, 5);
    assert_int_equal(img.h, 3);
    pvio_image_free(&img);
    pvc_free(jpg);

    /* progressive (TurboJPEG's flag) and grayscale JPEG */
    unsigned long tl;
    unsigned char *prog = tj_make(px, w, h, TJPF_RGB, TJSAMP_444, TJFLAG_PROGRESSIVE, &tl);
    assert_int_equal(decode_copy(prog, tl, "auto", &img, &msg), PV_OK);
    compare(img.rgb, px, (size_t)w * h * 3, 24, 2.0, "progressive");
    pvio_image_free(&img);
    tjFree(prog);
    uint8_t *gray = malloc((size_t)w * h), *gray3 = malloc((size_t)w * h * 3);
    assert_non_null(gray);
    assert_non_null(gray3);
    for (int i = 0; i < w * h; i++) { gray[i] = px[3 * i + 1]; memset(gray3 + 3 * i, gray[i], 3); }
    unsigned char *gj = tj_make(gray, w, h, TJPF_GRAY, TJSAMP_GRAY, 0, &tl);
    assert_int_equal(decode_copy(gj, tl, "auto", &img, &msg), PV_OK);
    for (int i = 0; i < w * h; i++)
        assert_true(img.rgb[3 * i] == img.rgb[3 * i + 1] && img.rgb[3 * i] == img.rgb[3 * i + 2]);
    compare(img.rgb, gray3, (size_t)w * h * 3, 12, 1.5, "gray jpeg");
    pvio_image_free(&img);
    tjFree(gj);
    free(gray);
    free(gray3);

    /* CMYK (TurboJPEG writes it as YCCK): refused */
    uint8_t *cmyk = malloc((size_t)w * h * 4);
    assert_non_null(cmyk);
    for (int i = 0; i < w * h * 4; i++) cmyk[i] = rnd8();
    unsigned char *cj = tj_make(cmyk, w, h, TJPF_CMYK, TJSAMP_444, 0, &tl);
    assert_int_equal(decode_copy(cj, tl, "auto", &img, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "CMYK");
    tjFree(cj);
    free(cmyk);
    free(px);
}

/* ---- sniffing, truncation, corruption, sizes ------------------------------------------------ */
static void *g_png, *g_jpg;
static size_t g_png_len, g_jpg_len;

static int setup_files(void **state)
{
    (void)state;
    int w = 40, h = 30;
    uint8_t *px = smooth_rgb(w, h);
    pvio_image src = { w, h, px };
    pvc_msg msg;
    if (pvio_image_png_encode(&src, &g_png, &g_png_len, &msg) != PV_OK) return -1;
    if (pvio_image_jpeg_encode(&src, 85, &g_jpg, &g_jpg_len, &msg) != PV_OK) return -1;
    free(px);
    return 0;
}

static int teardown_files(void **state)
{
    (void)state;
    pvc_free(g_png);
    pvc_free(g_jpg);
    return 0;
}

static void test_sniffing(void **state)
{
    (void)state;
    pvio_image img;
    pvc_msg msg;
    assert_int_equal(decode_copy(g_png, g_png_len, "jpeg", &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "not a JPEG file");
    assert_int_equal(decode_copy(g_jpg, g_jpg_len, "png", &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "not a PNG file");
    assert_int_equal(decode_copy(g_png, g_png_len, "bmp", &img, &msg), PV_EINPUT);
    expect_msg(&msg, "unknown format 'bmp'");
    assert_int_equal(decode_copy("GIF89a\x01\x00\x01\x00", 10, "auto", &img, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "GIF is not supported");
    assert_int_equal(decode_copy("RIFF\x10\0\0\0WEBPVP8 ", 16, NULL, &img, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "WebP");
    assert_int_equal(decode_copy("II*\0\x08\0\0\0", 8, NULL, &img, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "TIFF");
    assert_int_equal(decode_copy("hello world", 11, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "not a PNG or JPEG file (starts with 68 65 6c");
    assert_int_equal(decode_copy("", 0, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "empty");
    assert_int_equal(decode_copy("", 0, "png", &img, &msg), PV_EFORMAT);
    assert_int_equal(pvio_image_decode(NULL, 5, NULL, &img, &msg), PV_EINPUT);
    assert_int_equal(pvio_image_decode(g_png, g_png_len, NULL, NULL, &msg), PV_EINPUT);
}

static void test_truncated(void **state)
{
    (void)state;
    pvio_image img;
    pvc_msg msg;
    const struct { void *p; size_t len; const char *fmt; } f[2] = {
        { g_png, g_png_len, "png" }, { g_jpg, g_jpg_len, "jpeg" } };
    for (int k = 0; k < 2; k++) {
        for (size_t cut = 0; cut < f[k].len; cut++) {
            for (int auto_fmt = 0; auto_fmt < 2; auto_fmt++) {
                pv_status s = decode_copy(f[k].p, cut, auto_fmt ? "auto" : f[k].fmt, &img, &msg);
                if (s != PV_EFORMAT)
                    fail_msg("%s cut at %zu: status %d (%s)", f[k].fmt, cut, (int)s, msg.text);
                if (cut > 0 && !strstr(msg.text, "truncated"))
                    fail_msg("%s cut at %zu: '%s' does not say truncated", f[k].fmt, cut, msg.text);
            }
        }
    }
    /* a few exact messages */
    assert_int_equal(decode_copy(g_jpg, g_jpg_len - 20, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "image: JPEG data is truncated (libjpeg: ");
    assert_int_equal(decode_copy(g_jpg, 100, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "image: JPEG data is truncated (100 bytes end inside the headers");
    assert_int_equal(decode_copy(g_png, g_png_len / 2, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "image: PNG data is truncated");
    /* a chunk declaring more than the input holds (fuzz_image: libpng allocated the 1.6 GB an sPLT
     * asked for in a 125-byte file) is refused before libpng sees it */
    unsigned char big[33 + 8 + 16] = { 0 };
    memcpy(big, g_png, 33);                         /* signature + IHDR */
    memcpy(big + 33, "\x62\x79\x74\x65sPLT", 8);
    assert_int_equal(decode_copy(big, sizeof big, "png", &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "image: PNG data is truncated (chunk 'sPLT' at byte 33 declares 1652126821 bytes, "
               "16 are left)");
}

/* Stray bytes between JPEG segments (written by some cameras and editors) only make libjpeg warn:
 * the picture decodes to the same pixels as without them. Other damage stays an error. */
static void test_jpeg_extraneous(void **state)
{
    (void)state;
    pvio_image a, b;
    pvc_msg msg;
    assert_int_equal(pvio_image_decode(g_jpg, g_jpg_len, "jpeg", &a, &msg), PV_OK);
    /* after SOI comes a segment FF xx LL LL ...: put two stray bytes behind it */
    const unsigned char *j = g_jpg;
    size_t seg = 4 + ((size_t)j[4] << 8 | j[5]);
    unsigned char *x = malloc(g_jpg_len + 2);
    assert_non_null(x);
    memcpy(x, g_jpg, seg);
    x[seg] = 0x12;
    x[seg + 1] = 0x34;
    memcpy(x + seg + 2, j + seg, g_jpg_len - seg);
    pv_status s = pvio_image_decode(x, g_jpg_len + 2, "jpeg", &b, &msg);
    if (s != PV_OK) fail_msg("stray bytes refused: %s", msg.text);
    assert_int_equal(a.w, b.w);
    assert_int_equal(a.h, b.h);
    assert_memory_equal(a.rgb, b.rgb, (size_t)a.w * a.h * 3);
    pvio_image_free(&a);
    pvio_image_free(&b);
    free(x);
}

static void test_corrupt(void **state)
{
    (void)state;
    pvio_image img;
    pvc_msg msg;
    unsigned char *b = malloc(g_png_len > g_jpg_len ? g_png_len : g_jpg_len);
    assert_non_null(b);
    /* PNG: every flipped byte past the signature is caught (CRCs, zlib's adler32) */
    for (size_t i = 8; i < g_png_len; i++) {
        memcpy(b, g_png, g_png_len);
        b[i] ^= 0x5a;
        pv_status s = decode_copy(b, g_png_len, NULL, &img, &msg);
        if (s != PV_EFORMAT && s != PV_EINPUT)
            fail_msg("png byte %zu flipped: status %d (%s)", i, (int)s, msg.text);
    }
    memcpy(b, g_png, g_png_len);
    b[40] ^= 0x01;                                  /* inside IDAT */
    assert_int_equal(decode_copy(b, g_png_len, NULL, &img, &msg), PV_EFORMAT);
    expect_msg(&msg, "image: PNG data is corrupt (libpng: ");
    /* JPEG has no checksums: a flipped byte decodes to something or fails, never crashes */
    int ok = 0, failed = 0;
    for (size_t i = 2; i < g_jpg_len; i++) {
        memcpy(b, g_jpg, g_jpg_len);
        b[i] ^= 0x5a;
        pv_status s = decode_copy(b, g_jpg_len, NULL, &img, &msg);
        if (s == PV_OK) {
            ok++;
            pvio_image_free(&img);
        } else if (s == PV_EFORMAT || s == PV_EINPUT || s == PV_EUNSUPPORTED) {
            failed++;
            assert_true(msg.text[0] != 0);
        } else {
            fail_msg("jpeg byte %zu flipped: status %d (%s)", i, (int)s, msg.text);
        }
    }
    assert_true(ok > 0 && failed > 0);
    /* garbage after a JPEG SOI, and random bytes */
    for (int k = 0; k < 50; k++) {
        size_t n = 2 + (size_t)(rnd8() % 200);
        b[0] = 0xff;
        b[1] = 0xd8;
        for (size_t i = 2; i < n; i++) b[i] = rnd8();
        pv_status s = decode_copy(b, n, NULL, &img, &msg);
        if (s == PV_OK) pvio_image_free(&img);     /* a random JPEG may well decode */
        else assert_true(s == PV_EFORMAT || s == PV_EINPUT || s == PV_EUNSUPPORTED);
        for (size_t i = 0; i < n; i++) b[i] = rnd8();
        s = decode_copy(b, n, NULL, &img, &msg);
        if (s == PV_OK) pvio_image_free(&img);
        else assert_true(s == PV_EFORMAT || s == PV_EINPUT || s == PV_EUNSUPPORTED);
    }
    free(b);
}

static size_t find_sof(const unsigned char *b, size_t len)
{
    for (size_t i = 2; i + 9 < len; i++)
        if (b[i] == 0xff && b[i + 1] == 0xc0) return i;
    fail_msg("no SOF0 in the test JPEG");
    return 0;
}

static void test_sizes(void **state)
{
    (void)state;
    pvio_image img;
    pvc_msg msg;
    unsigned char *b = malloc(g_png_len > g_jpg_len ? g_png_len : g_jpg_len);
    assert_non_null(b);
    /* PNG IHDR: width at 16, height at 20 (big-endian) */
    memcpy(b, g_png, g_png_len);
    memset(b + 16, 0, 4);
    assert_int_equal(decode_copy(b, g_png_len, NULL, &img, &msg), PV_EINPUT);
    expect_msg(&msg, "image: PNG size 0x30 is empty");
    memcpy(b, g_png, g_png_len);
    memcpy(b + 16, "\x00\x00\x4e\x20\x00\x00\x4e\x20", 8);   /* 20000 x 20000 */
    assert_int_equal(decode_copy(b, g_png_len, NULL, &img, &msg), PV_EINPUT);
    expect_msg(&msg, "PNG size 20000x20000 is over the 100000000-pixel limit");
    memcpy(b, g_png, g_png_len);
    memcpy(b + 16, "\x7f\xff\xff\xff\x00\x00\x00\x01", 8);
    assert_int_equal(decode_copy(b, g_png_len, NULL, &img, &msg), PV_EINPUT);
    expect_msg(&msg, "2147483647x1");
    /* JPEG SOF0: FF C0, length, precision, height, width */
    size_t sof = find_sof(g_jpg, g_jpg_len);
    memcpy(b, g_jpg, g_jpg_len);
    b[sof + 5] = b[sof + 6] = 0;
    assert_int_equal(decode_copy(b, g_jpg_len, NULL, &img, &msg), PV_EINPUT);
    expect_msg(&msg, "image: JPEG size 40x0 is empty");
    memcpy(b, g_jpg, g_jpg_len);
    b[sof + 5] = b[sof + 7] = 0x2e;                 /* 12000 x 12000 */
    b[sof + 6] = b[sof + 8] = 0xe0;
    assert_int_equal(decode_copy(b, g_jpg_len, NULL, &img, &msg), PV_EINPUT);
    expect_msg(&msg, "JPEG size 12000x12000 is over the 100000000-pixel limit");
    memcpy(b, g_jpg, g_jpg_len);
    b[sof + 4] = 12;
    assert_int_equal(decode_copy(b, g_jpg_len, NULL, &img, &msg), PV_EUNSUPPORTED);
    expect_msg(&msg, "12-bit JPEG");
    free(b);

    /* encoders */
    uint8_t px[12] = { 0 };
    pvio_image e0 = { 0, 4, px }, enull = { 2, 2, NULL }, ok = { 2, 2, px }, wide = { 70000, 1, px };
    void *out = (void *)1;
    size_t len = 7;
    assert_int_equal(pvio_image_png_encode(&e0, &out, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "size 0x4");
    assert_null(out);
    assert_int_equal(len, 0);
    assert_int_equal(pvio_image_png_encode(&enull, &out, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "rgb is NULL");
    assert_int_equal(pvio_image_png_encode(NULL, &out, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_image_png_encode(&ok, NULL, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_image_jpeg_encode(&ok, 0, &out, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "quality 0 is outside 1..100");
    assert_int_equal(pvio_image_jpeg_encode(&ok, 101, &out, &len, &msg), PV_EINPUT);
    assert_int_equal(pvio_image_jpeg_encode(&wide, 90, &out, &len, &msg), PV_EINPUT);
    expect_msg(&msg, "65500");
    assert_int_equal(pvio_image_jpeg_encode(&e0, 90, &out, &len, &msg), PV_EINPUT);
    pvio_image_free(NULL);
    pvio_image z = { 0, 0, NULL };
    pvio_image_free(&z);
}

/* ---- allocation failures -------------------------------------------------------------------- */
typedef pv_status (*oom_fn)(void);
static void *g_pal_png;
static size_t g_pal_png_len;

static pv_status oom_png_decode(void)
{
    pvio_image img;
    pvc_msg msg;
    pv_status s = pvio_image_decode(g_png, g_png_len, NULL, &img, &msg);
    if (s == PV_OK && (img.w != 40 || img.h != 30)) s = PV_EINTERNAL;
    if (s != PV_OK && (img.rgb || img.w || img.h)) s = PV_EINTERNAL;
    pvio_image_free(&img);
    return s;
}

static pv_status oom_pal_decode(void)
{
    pvio_image img;
    pvc_msg msg;
    pv_status s = pvio_image_decode(g_pal_png, g_pal_png_len, "png", &img, &msg);
    pvio_image_free(&img);
    return s;
}

static pv_status oom_jpeg_decode(void)
{
    pvio_image img;
    pvc_msg msg;
    pv_status s = pvio_image_decode(g_jpg, g_jpg_len, "jpeg", &img, &msg);
    if (s != PV_OK && (img.rgb || img.w || img.h)) s = PV_EINTERNAL;
    pvio_image_free(&img);
    return s;
}

static pv_status oom_encode(void)
{
    uint8_t px[5 * 4 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 11);
    pvio_image src = { 5, 4, px };
    void *out;
    size_t len;
    pvc_msg msg;
    pv_status s = pvio_image_png_encode(&src, &out, &len, &msg);
    if (s != PV_OK) return s;
    pvc_free(out);
    s = pvio_image_jpeg_encode(&src, 80, &out, &len, &msg);
    if (s == PV_OK) pvc_free(out);
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
    enum { W = 9, H = 9 };
    unsigned char rows[W * H];
    png_color pal[3] = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } };
    png_byte trans[2] = { 0, 128 };
    for (int i = 0; i < W * H; i++) rows[i] = (unsigned char)(i % 3);
    png_spec s = { W, H, PNG_COLOR_TYPE_PALETTE, 8, PNG_INTERLACE_ADAM7, rows, pal, 3, trans, 2 };
    g_pal_png = make_png(&s, &g_pal_png_len);
    run_oom(oom_png_decode, "png decode");
    run_oom(oom_pal_decode, "palette png decode");
    run_oom(oom_jpeg_decode, "jpeg decode");
    run_oom(oom_encode, "png + jpeg encode");
    free(g_pal_png);
}

/* ---- the real test photos ------------------------------------------------------------------- */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void test_real_photos(void **state)
{
    (void)state;
    /* sizes, channel means and three pixels as Pillow (the same libjpeg-turbo) decodes them */
    static const struct {
        const char *file;
        int w, h;
        double mean[3];
        uint8_t px[3][3];
    } k[4] = {
        { "hamer_test1.jpg", 848, 565, { 175.111, 163.938, 160.143 },
          { { 224, 229, 232 }, { 245, 248, 253 }, { 129, 100, 104 } } },
        { "hamer_test2.jpg", 600, 450, { 184.477, 156.595, 132.593 },
          { { 179, 174, 171 }, { 214, 193, 148 }, { 223, 213, 211 } } },
        { "hamer_test3.jpg", 1024, 683, { 97.545, 72.447, 48.751 },
          { { 102, 102, 92 }, { 79, 38, 0 }, { 23, 30, 14 } } },
        { "hamer_test5.jpg", 1200, 1799, { 124.032, 110.972, 109.535 },
          { { 97, 98, 103 }, { 8, 6, 9 }, { 76, 77, 79 } } },
    };
    const char *root = getenv("PV_SOURCE_DIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/../shared/data/hands", root ? root : ".");
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, k[0].file);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        print_message("test_real_photos: skipped, %s is absent\n", dir);
        skip();
    }
    fclose(probe);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, k[i].file);
        size_t len = 0;
        unsigned char *b = slurp(path, &len);
        if (!b) fail_msg("cannot read %s", path);
        pvio_image img;
        pvc_msg msg;
        pv_status s = pvio_image_decode(b, len, NULL, &img, &msg);
        if (s != PV_OK) fail_msg("%s: %s", k[i].file, msg.text);
        assert_int_equal(img.w, k[i].w);
        assert_int_equal(img.h, k[i].h);
        double sum[3] = { 0, 0, 0 };
        size_t n = (size_t)img.w * (size_t)img.h;
        for (size_t p = 0; p < n; p++)
            for (int c = 0; c < 3; c++) sum[c] += img.rgb[3 * p + c];
        for (int c = 0; c < 3; c++)
            if (sum[c] / (double)n - k[i].mean[c] > 0.5 || k[i].mean[c] - sum[c] / (double)n > 0.5)
                fail_msg("%s: channel %d mean %.3f, want %.3f", k[i].file, c, sum[c] / (double)n,
                         k[i].mean[c]);
        const int at[3][2] = { { 0, 0 }, { img.h / 2, img.w / 3 }, { img.h - 1, img.w - 1 } };
        for (int q = 0; q < 3; q++)
            for (int c = 0; c < 3; c++) {
                int v = img.rgb[((size_t)at[q][0] * (size_t)img.w + (size_t)at[q][1]) * 3 + (size_t)c];
                if (abs(v - k[i].px[q][c]) > 2)
                    fail_msg("%s: pixel (%d,%d) channel %d is %d, want %d", k[i].file, at[q][1],
                             at[q][0], c, v, k[i].px[q][c]);
            }
        pvio_image_free(&img);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_color_types),
        cmocka_unit_test(test_png_roundtrip),
        cmocka_unit_test(test_jpeg_roundtrip),
        cmocka_unit_test(test_sniffing),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_jpeg_extraneous),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_real_photos),
    };
    return cmocka_run_group_tests(tests, setup_files, teardown_files);
}
