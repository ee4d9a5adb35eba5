/* Fuzz target: PCD files (pvio_pcd_parse), ascii, binary and binary_compressed. Also checks
 * that content sniffing (pvio_cloud_parse without hint or name) decodes a PCD the same way,
 * and that pvio_cloud_drop_nonfinite keeps the invariants and leaves only finite values. */
#include "fuzz.h"

#include <math.h>
#include <string.h>

/* LZF expands at most 88x and every decoded byte becomes at most 4 bytes of float. */
#define PCD_MAX_RATIO (88u * 4u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvio_cloud c;
    memset(&c, 0x5a, sizeof c);
    pvc_msg msg = { { 0 } };
    pv_status s = pvio_pcd_parse(data, size, &c, &msg);
    fz_check_cloud(s, &c, &msg, size, PCD_MAX_RATIO, "pcd");
    if (s != PV_OK)
        FZ_CHECK(strncmp(msg.text, "pcd: ", 5) == 0, "pcd: message '%s' does not start with 'pcd: '", msg.text);

    /* sniffing: a buffer that decodes as PCD must decode identically through pvio_cloud_parse
     * when the sniffer picks PCD (it may pick npy for a buffer starting with the npy magic) */
    pvio_cloud d;
    pvc_msg md = { { 0 } };
    pv_status sd = pvio_cloud_parse(data, size, NULL, NULL, &d, &md);
    fz_check_cloud(sd, &d, &md, size, PCD_MAX_RATIO, "pcd via sniffing");
    if (s == PV_OK && sd == PV_OK && d.ncols == c.ncols && d.n == c.n &&
        memcmp(d.names, c.names, sizeof c.names) == 0) {
        size_t nb = (size_t)c.n * (size_t)c.ncols * sizeof(float);
        FZ_CHECK(memcmp(d.data, c.data, nb) == 0, "pcd: sniffed decode differs from the direct one");
    }
    pvio_cloud_free(&d);

    if (s == PV_OK) {
        int64_t n0 = c.n, dropped = -1;
        pvio_cloud_drop_nonfinite(&c, &dropped);
        FZ_CHECK(dropped >= 0 && dropped <= n0 && c.n == n0 - dropped, "pcd: drop_nonfinite dropped %lld of "
                 "%lld, n now %lld", (long long)dropped, (long long)n0, (long long)c.n);
        FZ_CHECK(c.width * c.height == c.n, "pcd: after drop_nonfinite width %lld x height %lld != n %lld",
                 (long long)c.width, (long long)c.height, (long long)c.n);
        for (int64_t i = 0; i < c.n * c.ncols; i++)
            FZ_CHECK(isfinite(c.data[i]), "pcd: value %lld is not finite after drop_nonfinite", (long long)i);
    }
    pvio_cloud_free(&c);
    return 0;
}
