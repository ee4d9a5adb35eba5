/* Fuzz target: the public input door, pv_input_decode (what pv_model_run and the server call
 * on every request item), over every format name it takes. Input layout:
 *   byte 0   format: index into formats[] below, modulo its length (includes "auto", an
 *            unknown name and NULL);
 *   byte 1   bits 0-4: ncols for "f32"; bits 5-6: npz array name (NULL, "points", "x", "");
 *   rest     the file bytes.
 * The decoded cloud must meet the cloud contract, and a failure must name the input. */
#include "fuzz.h"
#include "api/model_api.h"

#include <string.h>

static const char *const formats[] = { "auto", "pcd", "npy", "npz", "kitti", "nuscenes", "f16x5", "f32",
                                       "ply", NULL };
static const char *const arrays[] = { NULL, "points", "x", "" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t b0 = size > 0 ? data[0] : 0, b1 = size > 1 ? data[1] : 0;
    const uint8_t *body = size > 2 ? data + 2 : data;
    size_t len = size > 2 ? size - 2 : 0;
    pv_input in = { .name = "fuzz", .format = formats[b0 % (sizeof formats / sizeof formats[0])],
                    .data = len ? body : NULL, .len = len, .ncols = b1 & 31, .array = arrays[(b1 >> 5) & 3] };
    pvio_cloud c;
    memset(&c, 0x5a, sizeof c);
    pvc_msg msg = { { 0 } };
    pv_status s = pv_input_decode(&in, &c, &msg);
    /* npz entries may be deflated: the bound is the npz limit, not the input size */
    fz_check_cloud(s, &c, &msg, len, (uint64_t)1 << 40, "input");
    if (s != PV_OK)
        FZ_CHECK(strncmp(msg.text, "input 'fuzz': ", 14) == 0, "input: message '%s' does not name the input",
                 msg.text);
    pvio_cloud_free(&c);
    return 0;
}
