/* perceive CLI: argument and file helpers. */
#include "cli.h"
#include "perceive.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || !end || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "perceive: %s: '%s' is not an integer in [%lld, %lld]\n", flag, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_parse_precision(const char *v, int *out)
{
    if (!strcmp(v, "fp32")) *out = PV_PRECISION_FP32;
    else if (!strcmp(v, "bf16")) *out = PV_PRECISION_BF16;
    else { fprintf(stderr, "perceive: --precision: '%s' is not one of fp32, bf16\n", v); return -1; }
    return 0;
}

void cli_precision_note(const char *info)
{
    const char *k = info ? strstr(info, "\"precision_note\"") : NULL;
    if (!k || !(k = strchr(k + 16, '"'))) return;
    const char *e = strchr(k + 1, '"');
    if (e) fprintf(stderr, "perceive: note: %.*s\n", (int)(e - k - 1), k + 1);
}

int cli_load_file(const char *path, void **buf, size_t *len, char *err, size_t errn)
{
    *buf = NULL;
    *len = 0;
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errn, "'%s': %s", path, f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    *buf = malloc((size_t)st.st_size + 1);
    if (!*buf) { fclose(f); snprintf(err, errn, "'%s': out of memory", path); return -1; }
    *len = fread(*buf, 1, (size_t)st.st_size, f);
    bool bad = ferror(f) || *len != (size_t)st.st_size;
    fclose(f);
    if (bad) { free(*buf); *buf = NULL; snprintf(err, errn, "'%s': read error", path); return -1; }
    return 0;
}

int cli_read_file(const char *path, void **buf, size_t *len)
{
    char err[1024];
    if (!cli_load_file(path, buf, len, err, sizeof err)) return 0;
    fprintf(stderr, "perceive: %s\n", err);
    return -1;
}

int cli_save_file(const char *path, const void *buf, size_t len, char *err, size_t errn)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errn, "'%s': path too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) == 0) return 0;
    snprintf(err, errn, "cannot write '%s': %s", path, strerror(errno));
    remove(tmp);
    return -1;
}

int cli_put_file(const char *path, const void *buf, size_t len, char *err, size_t errn)
{
    if (!strcmp(path, "-")) {
        if (fwrite(buf, 1, len, stdout) == len) return 0;
        snprintf(err, errn, "cannot write to stdout: %s", strerror(errno));
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) {
        snprintf(err, errn, "cannot write '%s': %s", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    if (fclose(f) != 0) { snprintf(err, errn, "cannot write '%s': %s", path, strerror(errno)); return -1; }
    return 0;
}

int cli_write_bytes(const char *path, const void *buf, size_t len)
{
    char err[1024];
    if (!cli_put_file(path, buf, len, err, sizeof err)) return 0;
    fprintf(stderr, "perceive: %s\n", err);
    return -1;
}

int cli_write_text(const char *path, const char *text) { return cli_write_bytes(path, text, strlen(text)); }

const char *cli_format_of(const char *path)
{
    static const struct { const char *ext, *fmt; } t[] = { { ".pcd.bin", "nuscenes" }, { ".pcd", "pcd" }, { ".bin", "kitti" },
                                                          { ".npy", "npy" }, { ".npz", "npz" },
                                                          { ".jpg", "jpeg" }, { ".jpeg", "jpeg" }, { ".png", "png" },
                                                          { ".rgb", "rgb8" }, { ".json", "json" } };
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t e = strlen(t[i].ext);
        if (n >= e && !strcasecmp(path + n - e, t[i].ext)) return t[i].fmt;
    }
    return "auto";
}
