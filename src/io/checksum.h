/* io/checksum: SHA-256 of files and buffers (OpenSSL libcrypto), as lowercase hex. */
#ifndef PVIO_CHECKSUM_H
#define PVIO_CHECKSUM_H

#include "core/core.h"

void      pvio_sha256_hex(const void *buf, size_t len, char hex[65]);
/* PV_EINPUT naming the path when it cannot be read. */
pv_status pvio_sha256_file(const char *path, char hex[65], pvc_msg *msg);

#endif
