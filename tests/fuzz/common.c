/* Contract checks shared by the fuzz targets (fuzz.h). */
#include "fuzz.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz contract broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

int fz_all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) if (b[i]) return 0;
    return 1;
}

void fz_check_error(pv_status s, const pvc_msg *msg, const char *what)
{
    FZ_CHECK(s == PV_EINPUT || s == PV_EFORMAT || s == PV_EUNSUPPORTED || s == PV_ENOMEM,
             "%s: failed with status %d (%s), not a bad-input status", what, (int)s, pv_status_str(s));
    FZ_CHECK(memchr(msg->text, 0, sizeof msg->text) != NULL, "%s: message not NUL-terminated", what);
    FZ_CHECK(msg->text[0] != 0, "%s: failed (%s) with an empty message", what, pv_status_str(s));
}

/* Reads every byte so that ASan reports a block shorter than its claimed size. */
static unsigned touch(const void *p, size_t n)
{
    const volatile unsigned char *b = p;
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++) acc += b[i];
    return acc;
}

void fz_check_cloud(pv_status s, const pvio_cloud *c, const pvc_msg *msg, size_t len,
                    uint64_t max_ratio, const char *what)
{
    if (s != PV_OK) {
        fz_check_error(s, msg, what);
        /* field by field: padding bytes are not part of the contract */
        int zero = c->n == 0 && c->ncols == 0 && fz_all_zero(c->names, sizeof c->names) && c->data == NULL &&
                   c->width == 0 && c->height == 0 && fz_all_zero(c->viewpoint, sizeof c->viewpoint);
        FZ_CHECK(zero, "%s: failed (%s) but the cloud is not zeroed", what, msg->text);
        return;
    }
    FZ_CHECK(c->ncols >= 3 && c->ncols <= PVIO_CLOUD_MAX_COLS, "%s: ncols %d", what, c->ncols);
    FZ_CHECK(c->n >= 0 && c->n <= PVIO_MAX_POINTS, "%s: n %lld", what, (long long)c->n);
    FZ_CHECK(c->data != NULL, "%s: data NULL for n %lld", what, (long long)c->n);
    FZ_CHECK(c->width >= 0 && c->height >= 1 && c->width * c->height == c->n,
             "%s: width %lld x height %lld != n %lld", what, (long long)c->width, (long long)c->height,
             (long long)c->n);
    static const char *const xyz[3] = { "x", "y", "z" };
    for (int i = 0; i < c->ncols; i++) {
        const char *nm = c->names[i];
        size_t k = strnlen(nm, PVIO_CLOUD_NAME_LEN);
        FZ_CHECK(k > 0 && k < PVIO_CLOUD_NAME_LEN, "%s: column %d name empty or not NUL-terminated", what, i);
        if (i < 3) FZ_CHECK(strcmp(nm, xyz[i]) == 0, "%s: column %d is '%s', not '%s'", what, i, nm, xyz[i]);
        for (int j = 0; j < i; j++)
            FZ_CHECK(strcmp(c->names[j], nm) != 0, "%s: columns %d and %d are both '%s'", what, j, i, nm);
        FZ_CHECK(pvio_cloud_col(c, nm) == i, "%s: pvio_cloud_col('%s') != %d", what, nm, i);
    }
    for (int i = c->ncols; i < PVIO_CLOUD_MAX_COLS; i++)
        FZ_CHECK(c->names[i][0] == 0, "%s: unused column name %d is '%.31s'", what, i, c->names[i]);
    uint64_t bytes = (uint64_t)c->n * (uint64_t)c->ncols * 4u;
    FZ_CHECK(bytes <= max_ratio * (uint64_t)len + 64, "%s: %llu bytes of floats from a %zu-byte input "
             "(bound %llu x len)", what, (unsigned long long)bytes, len, (unsigned long long)max_ratio);
    (void)touch(c->data, (size_t)bytes);
}

void fz_check_tensor(const pvc_tensor *t, const char *what)
{
    FZ_CHECK(t->dtype >= PV_F32 && t->dtype <= PV_BOOL, "%s: dtype %d", what, (int)t->dtype);
    FZ_CHECK(t->rank >= 0 && t->rank <= PV_MAX_RANK, "%s: rank %d", what, t->rank);
    for (int i = 0; i < t->rank; i++) FZ_CHECK(t->dims[i] >= 0, "%s: dim %d is %lld", what, i, (long long)t->dims[i]);
    FZ_CHECK(pvc_tensor_is_contiguous(t), "%s: not contiguous", what);
    FZ_CHECK(t->data != NULL || pvc_nbytes(t) == 0, "%s: data NULL for %zu bytes", what, pvc_nbytes(t));
    FZ_CHECK(pv_dtype_size(t->dtype) > 0, "%s: dtype %d has no size", what, (int)t->dtype);
    (void)touch(t->data, pvc_nbytes(t));
}

float fz_half_to_float(uint16_t h)
{
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexpf((float)m, -24);            /* subnormal: m x 2^-24 */
    else v = ldexpf((float)(m + 1024), e - 25);            /* (1 + m/1024) x 2^(e-15) */
    return sign ? -v : v;
}
