/* Fuzz target: .npy images (pvio_npy_parse) and .npy point clouds (pvio_cloud_npy_parse).
 * A parsed array must serialize and parse back to the same dtype, shape and bytes; the image
 * must end where the data ends, so the data never exceeds the input. */
#include "fuzz.h"
#include "io/io.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvc_tensor t;
    pvc_msg msg = { { 0 } };
    memset(&t, 0x5a, sizeof t);
    pv_status s = pvio_npy_parse(data, size, &t, &msg);
    if (s != PV_OK) {
        fz_check_error(s, &msg, "npy");
        FZ_CHECK(t.data == NULL && t.rank == 0 && t.name == NULL && fz_all_zero(t.dims, sizeof t.dims) &&
                 fz_all_zero(t.strides, sizeof t.strides), "npy: failed (%s) but the tensor is not zeroed", msg.text);
    } else {
        fz_check_tensor(&t, "npy");
        FZ_CHECK(pvc_nbytes(&t) <= size, "npy: %zu data bytes from a %zu-byte image", pvc_nbytes(&t), size);
        void *img = NULL;
        size_t len = 0;
        pvc_msg m2 = { { 0 } };
        pv_status s2 = pvio_npy_serialize(&t, &img, &len, &m2);
        if (s2 == PV_OK) {
            pvc_tensor u;
            pv_status s3 = pvio_npy_parse(img, len, &u, &m2);
            FZ_CHECK(s3 == PV_OK || s3 == PV_ENOMEM, "npy: re-parse of the serialized array failed: %s", m2.text);
            if (s3 == PV_OK) {
                FZ_CHECK(u.dtype == t.dtype && u.rank == t.rank, "npy: round trip changed dtype or rank");
                FZ_CHECK(memcmp(u.dims, t.dims, sizeof(t.dims[0]) * (size_t)t.rank) == 0,
                         "npy: round trip changed the shape");
                FZ_CHECK(pvc_nbytes(&t) == 0 || memcmp(u.data, t.data, pvc_nbytes(&t)) == 0,
                         "npy: round trip changed the data");
                pvio_tensor_free_data(&u);
            }
            pvc_free(img);
        } else {
            /* bfloat16 has no NumPy dtype, but the reader never produces it */
            FZ_CHECK(s2 == PV_ENOMEM, "npy: a parsed array does not serialize: %s", m2.text);
        }
        pvio_tensor_free_data(&t);
    }

    /* the same bytes as a point cloud: (N, C) float32 / float16 */
    pvio_cloud c;
    memset(&c, 0x5a, sizeof c);
    pvc_msg mc = { { 0 } };
    pv_status sc = pvio_cloud_npy_parse(data, size, &c, &mc);
    fz_check_cloud(sc, &c, &mc, size, 2, "npy cloud");
    if (sc == PV_OK) FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "npy cloud: parsed an image pvio_npy_parse refused");
    pvio_cloud_free(&c);
    return 0;
}
