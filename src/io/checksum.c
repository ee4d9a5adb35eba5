/* io/checksum: SHA-256 through OpenSSL's EVP digest interface. */
#include "io/checksum.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

static void to_hex(const unsigned char *d, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) { hex[2 * i] = digits[d[i] >> 4]; hex[2 * i + 1] = digits[d[i] & 15]; }
    hex[64] = 0;
}

void pvio_sha256_hex(const void *buf, size_t len, char hex[65])
{
    unsigned char d[32];
    unsigned int n = 0;
    EVP_Digest(buf, len, d, &n, EVP_sha256(), NULL);
    to_hex(d, hex);
}

pv_status pvio_sha256_file(const char *path, char hex[65], pvc_msg *msg)
{
    hex[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return pvc_fail(msg, PV_EINPUT, "'%s': %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) { fclose(f); return pvc_fail(msg, PV_ENOMEM, "out of memory hashing '%s'", path); }
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(ctx, buf, n);
    bool err = ferror(f);
    fclose(f);
    unsigned char d[32];
    unsigned int dn = 0;
    EVP_DigestFinal_ex(ctx, d, &dn);
    EVP_MD_CTX_free(ctx);
    if (err) return pvc_fail(msg, PV_EINPUT, "'%s': read error", path);
    to_hex(d, hex);
    return PV_OK;
}
