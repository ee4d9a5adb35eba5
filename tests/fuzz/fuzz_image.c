/* Fuzz target: camera images (pvio_image_decode, PNG and JPEG). On failure the image is zeroed
 * and the message set; on success the size is 1..PVIO_IMAGE_MAX_PIXELS, every pixel byte is
 * readable, the format named explicitly decodes the same pixels as "auto", and (for small
 * images) perceive's PNG encoder round-trips the pixels exactly. */
#include "fuzz.h"
#include "io/image.h"

#include <string.h>

#define FZ_IMAGE_RECODE_MAX (1 << 16)   /* pixels: larger results skip the PNG round trip */

static void check_image(pv_status s, const pvio_image *img, const pvc_msg *msg, const char *what)
{
    if (s != PV_OK) {
        fz_check_error(s, msg, what);
        FZ_CHECK(img->w == 0 && img->h == 0 && img->rgb == NULL,
                 "%s: failed (%s) but the image is not zeroed", what, msg->text);
        return;
    }
    FZ_CHECK(img->w >= 1 && img->h >= 1 && (uint64_t)img->w * (uint64_t)img->h <= PVIO_IMAGE_MAX_PIXELS,
             "%s: size %dx%d", what, img->w, img->h);
    FZ_CHECK(img->rgb != NULL, "%s: rgb NULL", what);
    const volatile uint8_t *p = img->rgb;
    unsigned acc = 0;
    size_t n = (size_t)img->w * (size_t)img->h * 3;
    for (size_t i = 0; i < n; i++) acc += p[i];
    (void)acc;
}

static bool same_pixels(const pvio_image *a, const pvio_image *b)
{
    return a->w == b->w && a->h == b->h &&
           memcmp(a->rgb, b->rgb, (size_t)a->w * (size_t)a->h * 3) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvio_image img;
    pvc_msg msg = { { 0 } };
    memset(&img, 0x5a, sizeof img);
    pv_status s = pvio_image_decode(data, size, "auto", &img, &msg);
    check_image(s, &img, &msg, "image auto");

    /* both explicit formats: the one the magic bytes name must agree with "auto" */
    static const char *const fmts[2] = { "png", "jpeg" };
    bool looks_png = size >= 1 && data[0] == 0x89, looks_jpeg = size >= 1 && data[0] == 0xff;
    for (int f = 0; f < 2; f++) {
        pvio_image other;
        pvc_msg m2 = { { 0 } };
        memset(&other, 0x5a, sizeof other);
        pv_status s2 = pvio_image_decode(data, size, fmts[f], &other, &m2);
        check_image(s2, &other, &m2, f ? "image jpeg" : "image png");
        bool named = f ? looks_jpeg : looks_png;
        if (named && s != PV_ENOMEM && s2 != PV_ENOMEM) {
            FZ_CHECK((s == PV_OK) == (s2 == PV_OK), "image: auto gave %d (%s), %s gave %d (%s)",
                     (int)s, msg.text, fmts[f], (int)s2, m2.text);
            if (s == PV_OK)
                FZ_CHECK(same_pixels(&img, &other), "image: auto and %s decode differently",
                         fmts[f]);
        }
        pvio_image_free(&other);
    }

    if (s == PV_OK && (size_t)img.w * (size_t)img.h <= FZ_IMAGE_RECODE_MAX) {
        void *png = NULL;
        size_t len = 0;
        pvc_msg m3 = { { 0 } };
        pv_status s3 = pvio_image_png_encode(&img, &png, &len, &m3);
        FZ_CHECK(s3 == PV_OK || s3 == PV_ENOMEM, "image: a decoded image does not encode: %s", m3.text);
        if (s3 == PV_OK) {
            pvio_image back;
            s3 = pvio_image_decode(png, len, "png", &back, &m3);
            FZ_CHECK(s3 == PV_OK || s3 == PV_ENOMEM, "image: our own PNG does not decode: %s", m3.text);
            if (s3 == PV_OK) {
                FZ_CHECK(same_pixels(&img, &back), "image: PNG round trip changed the pixels");
                pvio_image_free(&back);
            }
            pvc_free(png);
        }
    }
    pvio_image_free(&img);
    FZ_CHECK(img.w == 0 && img.h == 0 && img.rgb == NULL, "image: free did not zero");
    return 0;
}
