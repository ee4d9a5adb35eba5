/* The body shared by the three raw-binary targets (fuzz_kitti.c, fuzz_nuscenes.c,
 * fuzz_f16x5.c): each defines FZ_NCOLS, FZ_DTYPE, FZ_HINT and includes this file once. */
#ifndef FZ_POINTBIN_BODY
#define FZ_POINTBIN_BODY

#include "fuzz.h"
#include "api/model_api.h"

#include <math.h>
#include <string.h>

/* Every value must be the exact conversion of its input bytes (little-endian). */
static void check_values(const pvio_cloud *c, const uint8_t *data, const char *what)
{
    for (int64_t i = 0; i < c->n * c->ncols; i++) {
        float want;
        if (FZ_DTYPE == PV_F32) {
            uint32_t u = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
                         (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;
            memcpy(&want, &u, 4);
            uint32_t got;
            memcpy(&got, &c->data[i], 4);
            FZ_CHECK(got == u, "%s: value %lld bits %08x, input %08x", what, (long long)i, got, u);
        } else {
            want = fz_half_to_float((uint16_t)(data[2 * i] | data[2 * i + 1] << 8));
            FZ_CHECK(isnan(want) ? isnan(c->data[i]) : c->data[i] == want, "%s: value %lld is %g, "
                     "expected %g", what, (long long)i, (double)c->data[i], (double)want);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t row = (size_t)FZ_NCOLS * (FZ_DTYPE == PV_F32 ? 4u : 2u);
    const uint64_t ratio = FZ_DTYPE == PV_F32 ? 1 : 2;
    pvio_cloud c;
    memset(&c, 0x5a, sizeof c);
    pvc_msg msg = { { 0 } };
    pv_status s = pvio_pointbin_parse(data, size, FZ_NCOLS, FZ_DTYPE, &c, &msg);
    fz_check_cloud(s, &c, &msg, size, ratio, FZ_HINT);
    if (size % row == 0 && size / row <= (size_t)PVIO_MAX_POINTS)
        FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "%s: refused %zu bytes (%zu rows): %s", FZ_HINT, size,
                 size / row, msg.text);
    else
        FZ_CHECK(s != PV_OK, "%s: accepted %zu bytes, not a multiple of %zu", FZ_HINT, size, row);
    if (s == PV_OK) {
        FZ_CHECK(c.n == (int64_t)(size / row) && c.ncols == FZ_NCOLS && c.height == 1,
                 "%s: %lld x %d (height %lld) from %zu bytes", FZ_HINT, (long long)c.n, c.ncols,
                 (long long)c.height, size);
        check_values(&c, data, FZ_HINT);
    }

    /* the API door with the same format name, and the generic f32 one for float32 rows */
    pv_input in = { .name = "fuzz", .format = FZ_HINT, .data = data, .len = size };
    pvio_cloud d;
    pvc_msg md = { { 0 } };
    pv_status sd = pv_input_decode(&in, &d, &md);
    fz_check_cloud(sd, &d, &md, size, ratio, FZ_HINT " input");
    FZ_CHECK((sd == PV_OK) == (s == PV_OK) || sd == PV_ENOMEM || s == PV_ENOMEM,
             "%s: pv_input_decode %s where pvio_pointbin_parse %s", FZ_HINT, pv_status_str(sd), pv_status_str(s));
    if (sd == PV_OK && s == PV_OK) {
        FZ_CHECK(d.n == c.n && d.ncols == c.ncols && memcmp(d.names, c.names, sizeof c.names) == 0 &&
                 memcmp(d.data, c.data, (size_t)c.n * (size_t)c.ncols * 4) == 0,
                 "%s: pv_input_decode and pvio_pointbin_parse disagree", FZ_HINT);
    }
    pvio_cloud_free(&d);
    if (FZ_DTYPE == PV_F32) {
        pv_input f = { .name = "fuzz", .format = "f32", .data = data, .len = size, .ncols = FZ_NCOLS };
        sd = pv_input_decode(&f, &d, &md);
        fz_check_cloud(sd, &d, &md, size, 1, FZ_HINT " as f32");
        if (sd == PV_OK && s == PV_OK)
            FZ_CHECK(d.n == c.n && memcmp(d.data, c.data, (size_t)c.n * (size_t)c.ncols * 4) == 0,
                     "%s: format f32 with %d columns disagrees", FZ_HINT, FZ_NCOLS);
        pvio_cloud_free(&d);
    }
    pvio_cloud_free(&c);
    return 0;
}

#endif
