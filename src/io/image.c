/* Camera images: PNG through libpng with perceive's allocator and a non-printing, longjmp-ing
 * error handler; JPEG through TurboJPEG, after a small bounded walk of the JPEG markers that
 * finds the frame size (so an empty or truncated header gets a plain message). Everything that
 * changes after a setjmp lives in a struct owned by the caller of the function that calls
 * setjmp, so no local needs volatile. */
#include "io/image.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <ctype.h>
#include <string.h>
#include <turbojpeg.h>

#define JPEG_MAX_SIDE 65500          /* libjpeg's JPEG_MAX_DIMENSION */

static const uint8_t k_png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

typedef enum { FMT_PNG, FMT_JPEG } img_format;

/* width x height for a message and the limit check: PV_EINPUT unless 1..MAX_PIXELS pixels. */
static pv_status check_size(const char *kind, uint64_t w, uint64_t h, pvc_msg *msg)
{
    if (w == 0 || h == 0)
        return pvc_fail(msg, PV_EINPUT, "image: %s size %llux%llu is empty (width and height must "
                        "be at least 1)", kind, (unsigned long long)w, (unsigned long long)h);
    if (w > PVIO_IMAGE_MAX_PIXELS || h > PVIO_IMAGE_MAX_PIXELS || w * h > PVIO_IMAGE_MAX_PIXELS)
        return pvc_fail(msg, PV_EINPUT, "image: %s size %llux%llu is over the %u-pixel limit", kind,
                        (unsigned long long)w, (unsigned long long)h, PVIO_IMAGE_MAX_PIXELS);
    return PV_OK;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* ---- libpng glue -------------------------------------------------------------------------- */
/* State shared with libpng's callbacks, in both directions. */
typedef struct png_io {
    const uint8_t *in;          /* decoding: unread input */
    size_t in_left, in_len;
    uint8_t *rgb;               /* decoding: the pixels (owned here until handed out) */
    uint32_t w, h;
    uint8_t *out;               /* encoding: the stream */
    size_t out_len, out_cap;
    bool oom, truncated;
    char err[200];
} png_io;

/* libpng (and zlib through it) allocate through perceive's hook, so tests can fail them. */
static png_voidp io_alloc(png_structp png, png_alloc_size_t n)
{
    void *p = pvc_malloc(n);
    if (!p) ((png_io *)png_get_mem_ptr(png))->oom = true;
    return p;
}

static void io_free(png_structp png, png_voidp p)
{
    (void)png;
    pvc_free(p);
}

/* Never returns to libpng (whose default handler prints): records the text and jumps. */
static void io_error(png_structp png, png_const_charp text)
{
    png_io *io = png_get_error_ptr(png);
    snprintf(io->err, sizeof io->err, "%s", text ? text : "(no message)");
    png_longjmp(png, 1);
}

static void io_warning(png_structp png, png_const_charp text)
{
    (void)png;
    (void)text;
}

static void io_read(png_structp png, png_bytep dst, size_t n)
{
    png_io *io = png_get_io_ptr(png);
    if (n > io->in_left) {
        io->truncated = true;
        png_error(png, "the data ends early");
    }
    memcpy(dst, io->in, n);
    io->in += n;
    io->in_left -= n;
}

static void io_write(png_structp png, png_bytep data, size_t n)
{
    png_io *io = png_get_io_ptr(png);
    if (n > io->out_cap - io->out_len) {
        size_t cap = io->out_cap ? io->out_cap : 4096;
        while (cap - io->out_len < n) {
            if (cap > SIZE_MAX / 2) { io->oom = true; png_error(png, "the stream is too large"); }
            cap *= 2;
        }
        uint8_t *nb = pvc_realloc(io->out, cap);
        if (!nb) { io->oom = true; png_error(png, "out of memory for the PNG stream"); }
        io->out = nb;
        io->out_cap = cap;
    }
    memcpy(io->out + io->out_len, data, n);
    io->out_len += n;
}

static void io_flush(png_structp png) { (void)png; }

/* ---- PNG decoding ------------------------------------------------------------------------- */
/* The size in IHDR, checked before libpng sees the file (libpng would call 0 a format error). */
static pv_status png_precheck(const uint8_t *b, size_t len, pvc_msg *msg)
{
    if (memcmp(b, k_png_sig, PVC_MIN(len, sizeof k_png_sig)) != 0)
        return pvc_fail(msg, PV_EFORMAT, "image: not a PNG file (bad signature)");
    if (len < 24)
        return pvc_fail(msg, PV_EFORMAT, "image: PNG data is truncated (%zu bytes, the header "
                        "needs 33)", len);
    if (memcmp(b + 12, "IHDR", 4) != 0 || be32(b + 8) != 13)
        return pvc_fail(msg, PV_EFORMAT, "image: PNG does not start with a 13-byte IHDR chunk");
    return check_size("PNG", be32(b + 16), be32(b + 20), msg);
}

/* Everything after setjmp: transforms to 8-bit RGB, the pixels into io->rgb. A libpng error
 * jumps back to png_decode_run's setjmp; other refusals return. */
static pv_status png_read_pixels(png_structp png, png_infop info, png_io *io, pvc_msg *msg)
{
    png_set_read_fn(png, io, io_read);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);   /* PVIO_IMAGE_MAX_PIXELS rules */
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    pv_status s = check_size("PNG", w, h, msg);
    if (s != PV_OK) return s;
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);   /* also expands tRNS */
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_scale_16(png);
    if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    if ((ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    size_t stride = (size_t)w * 3;
    if (png_get_rowbytes(png, info) != stride || png_get_bit_depth(png, info) != 8 ||
        png_get_channels(png, info) != 3)
        return pvc_fail(msg, PV_EINTERNAL, "image: libpng's transforms gave %d channels of %d bits "
                        "(colour type %d, depth %d)", png_get_channels(png, info),
                        png_get_bit_depth(png, info), ctype, depth);
    io->rgb = pvc_malloc(stride * h);
    if (!io->rgb)
        return pvc_fail(msg, PV_ENOMEM, "image: out of memory for %ux%u RGB pixels", (unsigned)w,
                        (unsigned)h);
    /* Every pass over every row: libpng writes each pass's pixels into place (no row array). */
    for (int p = 0; p < passes; p++)
        for (png_uint_32 y = 0; y < h; y++) png_read_row(png, io->rgb + (size_t)y * stride, NULL);
    png_read_end(png, NULL);
    io->w = w;
    io->h = h;
    return PV_OK;
}

/* Kept apart from its callers: the setjmp frame holds only png and info, set before setjmp and
 * never changed, and s, set only on the paths that return normally; everything else that
 * changes lives in *io or in png_read_pixels' frame. */
static pv_status png_decode_run(png_io *io, pvc_msg *msg)
{
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, io, io_error, io_warning,
                                               io, io_alloc, io_free);
    if (!png) return pvc_fail(msg, PV_ENOMEM, "image: out of memory creating the PNG reader");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return pvc_fail(msg, PV_ENOMEM, "image: out of memory creating the PNG reader");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        if (io->oom) return pvc_fail(msg, PV_ENOMEM, "image: out of memory decoding the PNG (%s)",
                                     io->err);
        if (io->truncated)
            return pvc_fail(msg, PV_EFORMAT, "image: PNG data is truncated (%zu bytes; libpng: "
                            "%s)", io->in_len, io->err);
        return pvc_fail(msg, PV_EFORMAT, "image: PNG data is corrupt (libpng: %s)", io->err);
    }
    pv_status s = png_read_pixels(png, info, io, msg);
    png_destroy_read_struct(&png, &info, NULL);
    /* libpng shrugs off some failed allocations (an ancillary chunk dropped): refuse. */
    if (s == PV_OK && io->oom) s = pvc_fail(msg, PV_ENOMEM, "image: out of memory decoding the PNG");
    return s;
}

/* libpng allocates a known chunk's declared length (up to 2^31) before reading it: fuzz_image
 * found a 125-byte file whose sPLT asked for 1.6 GB. So every chunk must fit in the input. */
static pv_status png_chunks_fit(const uint8_t *b, size_t len, pvc_msg *msg)
{
    for (size_t at = sizeof k_png_sig; len - at >= 8; ) {
        uint32_t n = be32(b + at);
        if (n > len - at - 8) {
            char name[5] = { 0 };
            for (int i = 0; i < 4; i++) name[i] = isalpha(b[at + 4 + i]) ? (char)b[at + 4 + i] : '?';
            return pvc_fail(msg, PV_EFORMAT, "image: PNG data is truncated (chunk '%s' at byte %zu "
                            "declares %u bytes, %zu are left)", name, at, n, len - at - 8);
        }
        if (memcmp(b + at + 4, "IEND", 4) == 0) break;
        at += 8 + (size_t)n;
        if (len - at < 4) break;                    /* the CRC: libpng reports it */
        at += 4;
    }
    return PV_OK;
}

static pv_status png_decode(const uint8_t *b, size_t len, pvio_image *out, pvc_msg *msg)
{
    pv_status s = png_precheck(b, len, msg);
    if (s == PV_OK) s = png_chunks_fit(b, len, msg);
    if (s != PV_OK) return s;
    png_io io;
    memset(&io, 0, sizeof io);
    io.in = b;
    io.in_left = io.in_len = len;
    s = png_decode_run(&io, msg);
    if (s != PV_OK) {
        pvc_free(io.rgb);
        return s;
    }
    out->w = (int)io.w;
    out->h = (int)io.h;
    out->rgb = io.rgb;
    return PV_OK;
}

/* ---- JPEG decoding ------------------------------------------------------------------------ */
typedef enum { SCAN_UNKNOWN, SCAN_TRUNCATED, SCAN_FRAME } scan_result;

/* Walks the markers from SOI to the first SOS without reading past len. SCAN_FRAME: a frame
 * header (SOFn) came before SOS, its size and precision in *w, *h, *bits. SCAN_TRUNCATED: the
 * data ends before SOS. SCAN_UNKNOWN: something libjpeg must judge (EOI, no frame). Bytes
 * between segments that are no marker are skipped, as libjpeg does (with a warning). */
static scan_result jpeg_scan(const uint8_t *b, size_t len, unsigned *w, unsigned *h,
                             unsigned *bits)
{
    bool frame = false;
    size_t pos = 2;
    for (;;) {
        if (pos >= len) return SCAN_TRUNCATED;
        while (pos < len && b[pos] != 0xff) pos++;          /* stray bytes: libjpeg skips them too */
        if (pos >= len) return SCAN_TRUNCATED;
        while (pos < len && b[pos] == 0xff) pos++;          /* fill bytes */
        if (pos >= len) return SCAN_TRUNCATED;
        unsigned m = b[pos++];
        if (m == 0x01 || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) continue;   /* no length */
        if (m == 0xd9 || m == 0x00) return SCAN_UNKNOWN;
        if (len - pos < 2) return SCAN_TRUNCATED;
        unsigned seg = be16(b + pos);
        if (seg < 2) return SCAN_UNKNOWN;
        bool sof = m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
        if (sof && !frame) {
            if (len - pos < 7) return SCAN_TRUNCATED;
            *bits = b[pos + 2];
            *h = be16(b + pos + 3);
            *w = be16(b + pos + 5);
            frame = true;
        }
        if (len - pos < seg) return SCAN_TRUNCATED;
        if (m == 0xda) return frame ? SCAN_FRAME : SCAN_UNKNOWN;
        pos += seg;
    }
}

/* TurboJPEG's message for the handle as a status: truncation, memory, or corrupt data. where:
 * "header" or "image data". */
static pv_status tj_fail(tjhandle tj, const char *where, pvc_msg *msg)
{
    const char *t = tjGetErrorStr2(tj);
    if (!t) t = "(no message)";
    if (strstr(t, "remature end"))      /* "Premature end of JPEG file", "premature end of data" */
        return pvc_fail(msg, PV_EFORMAT, "image: JPEG data is truncated (libjpeg: %s)", t);
    if (strstr(t, "Insufficient memory") || strstr(t, "Memory allocation failure"))
        return pvc_fail(msg, PV_ENOMEM, "image: out of memory decoding the JPEG (libjpeg: %s)", t);
    return pvc_fail(msg, PV_EFORMAT, "image: JPEG %s is corrupt (libjpeg: %s)", where, t);
}

static pv_status jpeg_decode(const uint8_t *b, size_t len, pvio_image *out, pvc_msg *msg)
{
    if (len < 2 && (len == 0 || b[0] == 0xff))
        return pvc_fail(msg, PV_EFORMAT, "image: JPEG data is truncated (%zu bytes)", len);
    if (len < 2)
        return pvc_fail(msg, PV_EFORMAT, "image: not a JPEG file (the byte 0x%02x, not an SOI "
                        "marker)", b[0]);
    if (b[0] != 0xff || b[1] != 0xd8)
        return pvc_fail(msg, PV_EFORMAT, "image: not a JPEG file (starts with 0x%02x 0x%02x, not "
                        "an SOI marker)", b[0], b[1]);
    unsigned sw = 0, sh = 0, bits = 0;
    scan_result r = jpeg_scan(b, len, &sw, &sh, &bits);
    if (r == SCAN_TRUNCATED)
        return pvc_fail(msg, PV_EFORMAT, "image: JPEG data is truncated (%zu bytes end inside the "
                        "headers, before the image data)", len);
    if (r == SCAN_FRAME) {
        if (bits != 8)
            return pvc_fail(msg, PV_EUNSUPPORTED, "image: %u-bit JPEG samples are not supported "
                            "(8-bit are)", bits);
        pv_status s = check_size("JPEG", sw, sh, msg);
        if (s != PV_OK) return s;
    }
    tjhandle tj = tjInitDecompress();
    if (!tj) return pvc_fail(msg, PV_ENOMEM, "image: cannot create the JPEG decoder (%s)",
                             tjGetErrorStr2(NULL));
    int w = 0, h = 0, sub = 0, cs = 0;
    pv_status s = PV_OK;
    if (tjDecompressHeader3(tj, b, (unsigned long)len, &w, &h, &sub, &cs) != 0) {
        /* stray bytes between header segments (see below): the frame size from our own scan */
        const char *wt = tjGetErrorCode(tj) == TJERR_WARNING ? tjGetErrorStr2(tj) : NULL;
        if (!(wt && strstr(wt, "extraneous bytes") && r == SCAN_FRAME)) {
            s = tj_fail(tj, "header", msg);
            goto done;
        }
        w = (int)sw;
        h = (int)sh;
        cs = TJCS_YCbCr;   /* CMYK still fails below: libjpeg refuses to convert it to RGB */
    }
    if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
        s = pvc_fail(msg, PV_EUNSUPPORTED, "image: %s JPEG is not supported (convert it to RGB)",
                     cs == TJCS_CMYK ? "CMYK" : "YCCK (CMYK)");
        goto done;
    }
    if ((s = check_size("JPEG", (uint64_t)(w > 0 ? w : 0), (uint64_t)(h > 0 ? h : 0), msg)) != PV_OK)
        goto done;
    size_t stride = (size_t)w * 3;
    uint8_t *rgb = pvc_malloc(stride * (size_t)h);
    if (!rgb) {
        s = pvc_fail(msg, PV_ENOMEM, "image: out of memory for %dx%d RGB pixels", w, h);
        goto done;
    }
    /* Warnings (truncated or damaged data that libjpeg would paper over with grey) are errors,
     * but for stray bytes between segments (below); LIMITSCANS refuses progressive files with
     * absurd scan counts. */
    int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS | TJFLAG_ACCURATEDCT;
    int rc = tjDecompress2(tj, b, (unsigned long)len, rgb, w, (int)stride, h, TJPF_RGB, flags);
    /* One warning is common in real files and harmless: stray bytes between segments (cameras
     * and editors write them). Decode those again without stopping, and accept the picture when
     * stray bytes are all libjpeg complained about. */
    const char *wt = rc != 0 && tjGetErrorCode(tj) == TJERR_WARNING ? tjGetErrorStr2(tj) : NULL;
    if (wt && strstr(wt, "extraneous bytes")) {
        rc = tjDecompress2(tj, b, (unsigned long)len, rgb, w, (int)stride, h, TJPF_RGB, flags & ~TJFLAG_STOPONWARNING);
        const char *w2 = rc != 0 ? tjGetErrorStr2(tj) : NULL;
        if (rc != 0 && tjGetErrorCode(tj) == TJERR_WARNING && w2 && strstr(w2, "extraneous bytes")) rc = 0;
    }
    if (rc != 0) {
        s = tj_fail(tj, "image data", msg);
        pvc_free(rgb);
        goto done;
    }
    out->w = w;
    out->h = h;
    out->rgb = rgb;
done:
    tjDestroy(tj);
    return s;
}

/* ---- the door ----------------------------------------------------------------------------- */
/* The format the magic bytes name; PV_EUNSUPPORTED for other known image formats. */
static pv_status sniff(const uint8_t *b, size_t len, img_format *f, pvc_msg *msg)
{
    if (memcmp(b, k_png_sig, PVC_MIN(len, sizeof k_png_sig)) == 0) { *f = FMT_PNG; return PV_OK; }
    if (b[0] == 0xff && (len < 2 || b[1] == 0xd8)) { *f = FMT_JPEG; return PV_OK; }
    static const struct { const char *magic; size_t n; const char *name; } other[] = {
        { "GIF8", 4, "GIF" }, { "BM", 2, "BMP" }, { "II*\0", 4, "TIFF" }, { "MM\0*", 4, "TIFF" },
    };
    for (size_t i = 0; i < PVC_COUNTOF(other); i++)
        if (len >= other[i].n && memcmp(b, other[i].magic, other[i].n) == 0)
            return pvc_fail(msg, PV_EUNSUPPORTED, "image: %s is not supported (PNG and JPEG are)",
                            other[i].name);
    if (len >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return pvc_fail(msg, PV_EUNSUPPORTED, "image: WebP is not supported (PNG and JPEG are)");
    char hex[3 * 8 + 1] = "";
    for (size_t i = 0, k = 0; i < PVC_MIN(len, (size_t)8); i++)
        k += (size_t)snprintf(hex + k, sizeof hex - k, i ? " %02x" : "%02x", b[i]);
    return pvc_fail(msg, PV_EFORMAT, "image: not a PNG or JPEG file (starts with %s)", hex);
}

pv_status pvio_image_decode(const void *buf, size_t len, const char *format, pvio_image *out,
                            pvc_msg *msg)
{
    if (!out) return pvc_fail(msg, PV_EINPUT, "image: out is NULL");
    memset(out, 0, sizeof *out);
    if (!buf && len) return pvc_fail(msg, PV_EINPUT, "image: NULL buffer of %zu bytes", len);
    img_format f;
    if (format && strcmp(format, "png") == 0) f = FMT_PNG;
    else if (format && (strcmp(format, "jpeg") == 0 || strcmp(format, "jpg") == 0)) f = FMT_JPEG;
    else if (format && strcmp(format, "auto") != 0)
        return pvc_fail(msg, PV_EINPUT, "image: unknown format '%.40s' (png, jpeg or auto)", format);
    else if (len == 0)
        return pvc_fail(msg, PV_EFORMAT, "image: the data is empty (0 bytes)");
    else {
        pv_status s = sniff(buf, len, &f, msg);
        if (s != PV_OK) return s;
    }
    if (len == 0)
        return pvc_fail(msg, PV_EFORMAT, "image: the %s data is empty (0 bytes)",
                        f == FMT_PNG ? "PNG" : "JPEG");
    return f == FMT_PNG ? png_decode(buf, len, out, msg) : jpeg_decode(buf, len, out, msg);
}

void pvio_image_free(pvio_image *img)
{
    if (!img) return;
    pvc_free(img->rgb);
    memset(img, 0, sizeof *img);
}

/* ---- encoding ----------------------------------------------------------------------------- */
static pv_status check_image(const pvio_image *img, const char *fn, pvc_msg *msg)
{
    if (!img) return pvc_fail(msg, PV_EINPUT, "image: %s: img is NULL", fn);
    if (img->w <= 0 || img->h <= 0 ||
        (uint64_t)img->w * (uint64_t)img->h > PVIO_IMAGE_MAX_PIXELS)
        return pvc_fail(msg, PV_EINPUT, "image: %s: size %dx%d is outside 1..%u pixels", fn, img->w,
                        img->h, PVIO_IMAGE_MAX_PIXELS);
    if (!img->rgb) return pvc_fail(msg, PV_EINPUT, "image: %s: rgb is NULL", fn);
    return PV_OK;
}

/* As png_decode_run: png and info never change after setjmp, the rest lives in *io. */
/* Apart from its caller so that nothing the setjmp frame holds changes after setjmp: all of
 * that lives in *io. */
static pv_status png_encode_run(const uint8_t *rgb, int w, int h, const pvio_png_opts *o, png_io *io, pvc_msg *msg)
{
    const char *what = o->what ? o->what : "image";
    png_structp png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, io, io_error, io_warning,
                                                io, io_alloc, io_free);
    if (!png) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory creating the PNG writer", what);
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return pvc_fail(msg, PV_ENOMEM, "%s: out of memory creating the PNG writer", what);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        if (io->oom) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory encoding the PNG (%s)", what, io->err);
        return pvc_fail(msg, PV_EINTERNAL, "%s: encoding the PNG failed (libpng: %s)", what, io->err);
    }
    png_set_write_fn(png, io, io_write, io_flush);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (o->filter_none) png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    if (o->level >= 0) png_set_compression_level(png, o->level);
    if (o->software || (o->title && *o->title)) {
        png_text txt[2];
        memset(txt, 0, sizeof txt);
        int ntxt = 0;
        if (o->software) {
            txt[ntxt].compression = PNG_TEXT_COMPRESSION_NONE;
            txt[ntxt].key = (png_charp)"Software";
            txt[ntxt++].text = (png_charp)"perceive";
        }
        if (o->title && *o->title) {
            txt[ntxt].compression = PNG_TEXT_COMPRESSION_NONE;
            txt[ntxt].key = (png_charp)"Title";
            txt[ntxt++].text = (png_charp)o->title;
        }
        png_set_text(png, info, txt, ntxt);
    }
    png_write_info(png, info);
    size_t stride = (size_t)w * 3;
    for (int y = 0; y < h; y++) png_write_row(png, rgb + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    /* libpng shrugs off a few failed allocations with a warning (and less output): refuse */
    if (io->oom) return pvc_fail(msg, PV_ENOMEM, "%s: out of memory encoding the PNG", what);
    return PV_OK;
}

pv_status pvio_png_encode_rgb(const uint8_t *rgb, int w, int h, const pvio_png_opts *o, void **png, size_t *len, pvc_msg *msg)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    const char *what = o && o->what ? o->what : "image";
    if (!png || !len) return pvc_fail(msg, PV_EINPUT, "%s: png_encode: %s is NULL", what, png ? "len" : "png");
    pvio_image img = { w, h, (uint8_t *)rgb };
    pv_status s = check_image(&img, "png_encode", msg);
    if (s != PV_OK) return s;
    static const pvio_png_opts dflt = { -1, false, NULL, false, NULL };
    png_io io;
    memset(&io, 0, sizeof io);
    s = png_encode_run(rgb, w, h, o ? o : &dflt, &io, msg);
    if (s != PV_OK) {
        pvc_free(io.out);
        return s;
    }
    *png = io.out;
    *len = io.out_len;
    return PV_OK;
}

pv_status pvio_image_png_encode(const pvio_image *img, void **png, size_t *len, pvc_msg *msg)
{
    if (!img) {
        if (png) *png = NULL;
        if (len) *len = 0;
        return pvc_fail(msg, PV_EINPUT, "image: png_encode: image is NULL");
    }
    return pvio_png_encode_rgb(img->rgb, img->w, img->h, NULL, png, len, msg);
}

pv_status pvio_image_jpeg_encode(const pvio_image *img, int quality, void **jpg, size_t *len,
                                 pvc_msg *msg)
{
    if (jpg) *jpg = NULL;
    if (len) *len = 0;
    if (!jpg || !len) return pvc_fail(msg, PV_EINPUT, "image: jpeg_encode: %s is NULL",
                                      jpg ? "len" : "jpg");
    pv_status s = check_image(img, "jpeg_encode", msg);
    if (s != PV_OK) return s;
    if (img->w > JPEG_MAX_SIDE || img->h > JPEG_MAX_SIDE)
        return pvc_fail(msg, PV_EINPUT, "image: jpeg_encode: size %dx%d is over JPEG's %d pixels "
                        "a side", img->w, img->h, JPEG_MAX_SIDE);
    if (quality < 1 || quality > 100)
        return pvc_fail(msg, PV_EINPUT, "image: jpeg_encode: quality %d is outside 1..100", quality);
    tjhandle tj = tjInitCompress();
    if (!tj) return pvc_fail(msg, PV_ENOMEM, "image: cannot create the JPEG encoder (%s)",
                             tjGetErrorStr2(NULL));
    unsigned char *jb = NULL;
    unsigned long jl = 0;
    if (tjCompress2(tj, img->rgb, img->w, img->w * 3, img->h, TJPF_RGB, &jb, &jl, TJSAMP_420,
                    quality, TJFLAG_ACCURATEDCT) != 0) {
        const char *t = tjGetErrorStr2(tj);
        s = pvc_fail(msg, strstr(t, "emory") ? PV_ENOMEM : PV_EINTERNAL,
                     "image: encoding the JPEG failed (libjpeg: %s)", t);
    } else {
        uint8_t *out = pvc_malloc(jl ? (size_t)jl : 1);
        if (!out) {
            s = pvc_fail(msg, PV_ENOMEM, "image: out of memory for a %lu-byte JPEG", jl);
        } else {
            memcpy(out, jb, (size_t)jl);
            *jpg = out;
            *len = (size_t)jl;
        }
    }
    tjFree(jb);
    tjDestroy(tj);
    return s;
}
