/* io/image: decoding camera images (PNG, JPEG) to 8-bit RGB, and encoding them back for tests
 * and fixtures. Prefix pvio_image_.
 *
 * Example (decode whatever the bytes are, then write the pixels as PNG):
 *
 *     pvio_image img = {0};
 *     pvc_msg msg;
 *     if (pvio_image_decode(bytes, nbytes, "auto", &img, &msg) != PV_OK) { puts(msg.text); return; }
 *     printf("%dx%d, first pixel %u %u %u\n", img.w, img.h, img.rgb[0], img.rgb[1], img.rgb[2]);
 *     void *png; size_t len;
 *     if (pvio_image_png_encode(&img, &png, &len, &msg) == PV_OK) { save(png, len); pvc_free(png); }
 *     pvio_image_free(&img);
 *
 * Decoding: PNG through libpng (every colour type and bit depth: gray, gray+alpha, palette with or
 * without tRNS, RGB, RGBA, 1..16 bits, interlaced), JPEG through libjpeg-turbo's TurboJPEG
 * (baseline and progressive, gray, YCbCr; accurate DCT and smooth chroma upsampling, as
 * libjpeg's defaults). Results are 8-bit RGB: gray is replicated, palettes expanded, 16-bit
 * samples scaled (rounded) to 8 bits, alpha and tRNS dropped (not composited), gamma and colour
 * profiles ignored. Refusals: CMYK/YCCK JPEG and (sniffed) GIF, BMP, TIFF, WebP are
 * PV_EUNSUPPORTED; truncated or corrupt data is PV_EFORMAT with the decoder's message ("image:
 * JPEG data is truncated (libjpeg: Premature end of JPEG file)"), libjpeg warnings included; a
 * width or height of 0 or more than PVIO_IMAGE_MAX_PIXELS pixels is PV_EINPUT naming the size.
 * The decoders never print and never exit: their error handlers are replaced.
 *
 * Memory: the pixels, and libpng's (and zlib's) working memory, come from perceive's allocator
 * (pvc_malloc); TurboJPEG allocates its working memory with libc's malloc.
 * Ownership: inputs are borrowed for the call; on failure every out-param is left zeroed.
 */
#ifndef PVIO_IMAGE_H
#define PVIO_IMAGE_H

#include "core/core.h"

#define PVIO_IMAGE_MAX_PIXELS (100u * 1000u * 1000u)

/* w x h pixels, rgb: h * w * 3 bytes, row-major RGB, owned (pvc_malloc). */
typedef struct pvio_image { int w, h; uint8_t *rgb; } pvio_image;

/* Decodes buf[0..len) into *out. format: "png", "jpeg" (or "jpg"), or "auto" / NULL to sniff
 * the magic bytes. Any other format: PV_EINPUT naming it. */
pv_status pvio_image_decode(const void *buf, size_t len, const char *format, pvio_image *out,
                            pvc_msg *msg);
/* Frees img->rgb and zeroes *img; accepts a zeroed image and NULL. */
void      pvio_image_free(pvio_image *img);

/* Encodes img (w, h >= 1, at most PVIO_IMAGE_MAX_PIXELS, rgb non-NULL) as an 8-bit RGB PNG
 * into a fresh *png (pvc_malloc) of *len bytes. */
/* How pvio_png_encode_rgb writes: zlib level (-1: libpng's default), filter_none (else libpng's
 * adaptive filters), a tEXt "Title" (NULL/"": none), a tEXt "Software: perceive" chunk, and the
 * prefix of messages ("image" when NULL). Every PNG perceive writes goes through it. */
typedef struct pvio_png_opts { int level; bool filter_none; const char *title; bool software; const char *what; } pvio_png_opts;
/* RGB8 (w x h, row-major) as PNG into a pvc_malloc'ed buffer; o NULL: the defaults. */
pv_status pvio_png_encode_rgb(const uint8_t *rgb, int w, int h, const pvio_png_opts *o, void **png, size_t *len,
                              pvc_msg *msg);
pv_status pvio_image_png_encode(const pvio_image *img, void **png, size_t *len, pvc_msg *msg);
/* Encodes img as a baseline JPEG with 4:2:0 chroma subsampling at quality 1..100 into a fresh
 * *jpg (pvc_malloc) of *len bytes. JPEG holds at most 65500 pixels a side. */
pv_status pvio_image_jpeg_encode(const pvio_image *img, int quality, void **jpg, size_t *len,
                                 pvc_msg *msg);

#endif
