/* A plain main() for the fuzz targets, so the corpora run in `make test` without libFuzzer.
 *
 *     fuzz_<name>_replay DIR_OR_FILE...
 *
 * Every regular file named (or inside a named directory, not recursive; sorted) is fed to
 * LLVMFuzzerTestOneInput once with perceive's allocator in test mode, and must leave no live
 * block behind; then again with allocation k failing, for every k the first run made (an
 * injected failure must give an error, leak nothing and break no contract). Exits 1 when no
 * input was found, so a missing corpus is a failure, not a silent pass. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* OOM sweep cap per input: the corpora are small, this only bounds a pathological seed. */
#define REPLAY_MAX_SWEEP 2000

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *b = malloc(cap);
    for (;;) {
        if (!b) break;
        if (n == cap) {
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *len = n;
    return b;
}

static void run_one(const char *path)
{
    size_t len = 0;
    unsigned char *buf = slurp(path, &len);
    if (!buf) { fprintf(stderr, "replay: cannot read %s\n", path); exit(1); }
    /* an exact-size copy, so ASan catches a read one past the input */
    unsigned char *data = malloc(len ? len : 1);
    if (!data) exit(1);
    memcpy(data, buf, len);
    free(buf);

    pvc_alloc_test_begin(0);
    LLVMFuzzerTestOneInput(data, len);
    long count = pvc_alloc_count(), live = pvc_alloc_live();
    pvc_alloc_test_end();
    if (live != 0) fz_fail("%s: %ld perceive block(s) still live after the call", path, live);
    long sweep = count < REPLAY_MAX_SWEEP ? count : REPLAY_MAX_SWEEP;
    for (long k = 1; k <= sweep; k++) {
        pvc_alloc_test_begin(k);
        LLVMFuzzerTestOneInput(data, len);
        live = pvc_alloc_live();
        pvc_alloc_test_end();
        if (live != 0) fz_fail("%s: allocation %ld failing leaves %ld block(s) live", path, k, live);
    }
    free(data);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    long files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: no such path %s\n", argv[i]); return 1; }
        if (!S_ISDIR(st.st_mode)) { run_one(argv[i]); files++; continue; }
        DIR *d = opendir(argv[i]);
        if (!d) { fprintf(stderr, "replay: cannot open %s\n", argv[i]); return 1; }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                char **nn = realloc(names, cap * sizeof *names);
                if (!nn) return 1;
                names = nn;
            }
            size_t k = strlen(argv[i]) + strlen(e->d_name) + 2;
            if (!(names[n] = malloc(k))) return 1;
            snprintf(names[n++], k, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, cmp_str);
        for (size_t j = 0; j < n; j++) {
            if (stat(names[j], &st) == 0 && S_ISREG(st.st_mode)) { run_one(names[j]); files++; }
            free(names[j]);
        }
        free(names);
    }
    if (files == 0) { fprintf(stderr, "replay: no input files\n"); return 1; }
    printf("replay: %ld input(s) passed, each also with every allocation failing in turn\n", files);
    return 0;
}
