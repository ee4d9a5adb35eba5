/* Fuzz target: METEOR's request inputs (src/models/meteor/inputs.c): the manifest (JSON) and
 * the params as the server and the CLI pass them. Input layout:
 *   byte 0   mode, modulo 3:
 *            0  pvm_meteor_item_validate on a manifest item (what the server checks first);
 *            1  pvm_meteor_frame_build with the manifest item (no path: files are refused);
 *            2  pvm_meteor_frame_build with one camera item (byte 1 picks camera and format);
 *   byte 1   camera index (bits 0-2), format (bits 3-5: auto jpeg png rgb8 json NULL "bmp");
 *   bytes 2-3 the item's length L (little-endian, clamped to what is there);
 *   rest     the item's L bytes, then params as key=value lines (a key without '=' is a NULL
 *            value), at most 64.
 * Contract: on failure a bad-input status, a non-empty NUL-terminated message, the frame
 * zeroed; on success at least one camera present with a finite K, and the frame's planes set. */
#include "fuzz.h"
#include "models/meteor/meteor.h"
#include "models/meteor/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_PARAMS 64

static const char *const formats[] = { "auto", "jpeg", "png", "rgb8", "json", NULL, "bmp", "auto" };

static void check_frame(const pvm_meteor_frame *f)
{
    int present = 0;
    for (int c = 0; c < PVM_METEOR_NCAM; c++) {
        if (!f->cal.present[c]) continue;
        present++;
        FZ_CHECK(f->rgb[c] != NULL, "meteor_inputs: camera %d present without pixels", c);
        for (int j = 0; j < 9; j++) FZ_CHECK(isfinite(f->cal.K[c][j]), "meteor_inputs: camera %d K[%d] not finite", c, j);
    }
    FZ_CHECK(present >= 1, "meteor_inputs: success with no camera");
    FZ_CHECK(f->chw != NULL, "meteor_inputs: success without the planes");
    FZ_CHECK(memchr(f->stream_id, 0, sizeof f->stream_id) != NULL, "meteor_inputs: stream id not NUL-terminated");
    FZ_CHECK(isfinite(f->v0) && f->v0 >= 0 && f->v0 <= 100, "meteor_inputs: v0 %g", (double)f->v0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    int mode = data[0] % 3, cam = data[1] & 7;
    const char *fmt = formats[(data[1] >> 3) & 7];
    size_t len = size - 4, ilen = (size_t)data[2] | (size_t)data[3] << 8;
    if (ilen > len) ilen = len;
    /* the item exactly sized (ASan sees a read past it), the params NUL-terminated */
    char *item = malloc(ilen ? ilen : 1), *ptext = malloc(len - ilen + 1);
    if (!item || !ptext) { free(item); free(ptext); return 0; }
    memcpy(item, data + 4, ilen);
    memcpy(ptext, data + 4 + ilen, len - ilen);
    ptext[len - ilen] = 0;

    pv_param prm[FZ_MAX_PARAMS];
    int np = 0;
    for (char *line = ptext; *line && np < FZ_MAX_PARAMS;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *eq = strchr(line, '=');
        if (eq) *eq = 0;
        prm[np].key = line;
        prm[np].value = eq ? eq + 1 : NULL;
        np++;
        if (!nl) break;
        line = nl + 1;
    }

    pv_input it = { .data = ilen ? item : NULL, .len = ilen };
    if (mode == 2) { it.name = pvm_meteor_cam_names[cam]; it.format = fmt; }
    else { it.name = (data[1] & 1) ? "manifest" : NULL; it.format = (data[1] & 2) ? "json" : "auto"; }

    pvc_msg msg = { { 0 } };
    pv_status s;
    if (mode == 0) {
        s = pvm_meteor_item_validate(&it, &msg);
        if (s != PV_OK) fz_check_error(s, &msg, "meteor_inputs validate");
    } else {
        pvm_meteor_frame f;
        pvm_meteor_params mp;
        memset(&f, 0x5a, sizeof f);
        s = pvm_meteor_frame_build(&it, 1, prm, np, &f, &mp, &msg);
        if (s != PV_OK) {
            fz_check_error(s, &msg, "meteor_inputs build");
            FZ_CHECK(fz_all_zero(&f, sizeof f), "meteor_inputs: failed (%s) but the frame is not zeroed", msg.text);
        } else {
            check_frame(&f);
        }
        pvm_meteor_frame_free(&f);
    }
    free(item);
    free(ptext);
    return 0;
}
