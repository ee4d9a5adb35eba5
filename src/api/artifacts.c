/* Artifact lookup shared by the bundles (artifacts.h). */
#include "api/artifacts.h"
#include "api/model_api.h"
#include "io/checksum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool pva_file_exists(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISREG(st.st_mode); }

static bool has_files(const pva_spec *sp, const char *dir)
{
    char p[4300];
    for (int i = 0; i < sp->nfiles; i++)
        if (!pv_pathf(p, sizeof p, "%s/%s", dir, sp->files[i]) || !pva_file_exists(p)) return false;
    return true;
}

pv_status pva_mkdirs(const char *path, pvc_msg *msg)
{
    char p[4096];
    if (!pv_pathf(p, sizeof p, "%s", path)) return pvc_fail(msg, PV_EINPUT, "path too long: '%.200s'", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return pvc_fail(msg, PV_EINPUT, "cannot create '%s': %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return pvc_fail(msg, PV_EINPUT, "cannot create '%s': %s", p, strerror(errno));
    return PV_OK;
}

pv_status pva_write(const char *path, const void *data, size_t len, pvc_msg *msg)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len)) {
        if (f) fclose(f);
        return pvc_fail(msg, PV_EINPUT, "cannot write '%s': %s", path, strerror(errno));
    }
    if (fclose(f) != 0) return pvc_fail(msg, PV_EINPUT, "cannot write '%s'", path);
    return PV_OK;
}

pv_status pva_manifest_write(const char *dir, int nfiles, const char *const *files, pvc_msg *msg)
{
    char p[4300], hex[65], *man = pvc_malloc((size_t)nfiles * 400 + 1);
    if (!man) return pvc_fail(msg, PV_ENOMEM, "out of memory");
    size_t o = 0;
    man[0] = 0;
    pv_status s = PV_OK;
    for (int i = 0; i < nfiles && s == PV_OK; i++) {
        (void)pv_pathf(p, sizeof p, "%s/%s", dir, files[i]);
        if ((s = pvio_sha256_file(p, hex, msg)) == PV_OK)
            o += (size_t)snprintf(man + o, 400, "%s  %.300s\n", hex, files[i]);
    }
    (void)pv_pathf(p, sizeof p, "%s/MANIFEST.sha256", dir);
    if (s == PV_OK) s = pva_write(p, man, o, msg);
    pvc_free(man);
    return s;
}

static bool manifest_ok(const pva_spec *sp, const char *dir)
{
    char p[4300], line[512];
    (void)pv_pathf(p, sizeof p, "%s/MANIFEST.sha256", dir);
    FILE *f = fopen(p, "rb");
    if (!f) return false;
    int good = 0;
    while (fgets(line, sizeof line, f)) {
        char want[65], name[256], got[65];
        pvc_msg m;
        if (sscanf(line, "%64s %255s", want, name) != 2) continue;
        (void)pv_pathf(p, sizeof p, "%s/%s", dir, name);
        if (pvio_sha256_file(p, got, &m) != PV_OK || strcmp(got, want)) { fclose(f); return false; }
        good++;
    }
    fclose(f);
    return good >= sp->nfiles && has_files(sp, dir);
}

static void remove_set(const char *dir)
{
    char p[4400], line[512];
    (void)pv_pathf(p, sizeof p, "%s/MANIFEST.sha256", dir);
    FILE *f = fopen(p, "rb");
    while (f && fgets(line, sizeof line, f)) {
        char want[65], name[256];
        if (sscanf(line, "%64s %255s", want, name) == 2 && !strchr(name, '/') && pv_pathf(p, sizeof p, "%s/%s", dir, name)) remove(p);
    }
    if (f) fclose(f);
    (void)pv_pathf(p, sizeof p, "%s/MANIFEST.sha256", dir);
    remove(p);
    rmdir(dir);
}

static pv_status make_generated(const pva_spec *sp, char *dir, size_t cap, pvc_msg *msg)
{
    char base[4096];
    if (!pv_cache_root(base, sizeof base)) return pvc_fail(msg, PV_ENOWEIGHTS, "no cache directory for generated weights: set PERCEIVE_CACHE_DIR");
    if (!pv_pathf(dir, cap, "%s/generated/%s-%s", base, sp->model, sp->gen_tag))
        return pvc_fail(msg, PV_ENOWEIGHTS, "cache path too long: '%.200s'", base);
    if (has_files(sp, dir) && manifest_ok(sp, dir)) return PV_OK;
    char tmp[4300];
    (void)pv_pathf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    pv_status s = pva_mkdirs(tmp, msg);
    if (s == PV_OK) s = sp->generate(tmp, msg);
    if (s != PV_OK) { remove_set(tmp); return s; }
    if (rename(tmp, dir) != 0) {
        if (has_files(sp, dir) && manifest_ok(sp, dir)) { remove_set(tmp); return PV_OK; }   /* another process won */
        remove_set(dir);                                                                      /* a stale, broken set */
        if (rename(tmp, dir) != 0) return pvc_fail(msg, PV_EINPUT, "cannot move '%s' to '%s': %s", tmp, dir, strerror(errno));
    }
    return PV_OK;
}

static bool snapshot(const pva_spec *sp, const char *hub, const char *commit, char *dir, size_t cap)
{
    char p[4400], org[128], name[128];
    if (sscanf(sp->hf_repo, "%127[^/]/%127s", org, name) != 2) return false;
    if (!pv_pathf(p, sizeof p, "%s/models--%s--%s/snapshots/%s", hub, org, name, commit) || !has_files(sp, p)) return false;
    return pv_pathf(dir, cap, "%s", p);
}

pv_status pva_resolve(const pva_spec *sp, const char *weights_dir, bool strict, char *dir, size_t cap, char kind[16], pvc_msg *msg)
{
    char sub[4300];
    if (weights_dir) {
        (void)pv_pathf(sub, sizeof sub, "%s/%s", weights_dir, sp->model);
        if (has_files(sp, weights_dir)) (void)pv_pathf(dir, cap, "%s", weights_dir);
        else if (has_files(sp, sub)) (void)pv_pathf(dir, cap, "%s", sub);
        else return pvc_fail(msg, PV_ENOWEIGHTS, "--weights '%s': %s not found there (nor in '%s')", weights_dir, sp->files[0], sub);
        snprintf(kind, 16, "dir");
        return PV_OK;
    }
    const char *env = getenv("PERCEIVE_WEIGHTS_DIR");
    if (env && *env) {
        (void)pv_pathf(sub, sizeof sub, "%s/%s", env, sp->model);
        if (has_files(sp, sub)) { (void)pv_pathf(dir, cap, "%s", sub); snprintf(kind, 16, "dir"); return PV_OK; }
        if (has_files(sp, env)) { (void)pv_pathf(dir, cap, "%s", env); snprintf(kind, 16, "dir"); return PV_OK; }
    }
    char hub[4096];
    if (getenv("HF_HUB_CACHE") && *getenv("HF_HUB_CACHE")) (void)pv_pathf(hub, sizeof hub, "%s", getenv("HF_HUB_CACHE"));
    else if (getenv("HF_HOME") && *getenv("HF_HOME")) (void)pv_pathf(hub, sizeof hub, "%s/hub", getenv("HF_HOME"));
    else if (getenv("HOME")) (void)pv_pathf(hub, sizeof hub, "%s/.cache/huggingface/hub", getenv("HOME"));
    else hub[0] = 0;
    if (hub[0] && sp->commit && snapshot(sp, hub, sp->commit, dir, cap)) { snprintf(kind, 16, "release"); return PV_OK; }
    /* the cache's own record of what the revision resolved to when it was fetched */
    char ref[4400], commit[128] = "", org[128], name[128];
    FILE *rf = NULL;
    if (hub[0] && sscanf(sp->hf_repo, "%127[^/]/%127s", org, name) == 2 &&
        pv_pathf(ref, sizeof ref, "%s/models--%s--%s/refs/%s", hub, org, name, sp->revision))
        rf = fopen(ref, "rb");
    if (rf) {
        size_t n = fread(commit, 1, sizeof commit - 1, rf);
        fclose(rf);
        commit[n] = 0;
        commit[strcspn(commit, " \r\n")] = 0;
        bool hex = commit[0] != 0;
        for (const char *c = commit; *c; c++) hex = hex && ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'));
        if (hex && snapshot(sp, hub, commit, dir, cap)) { snprintf(kind, 16, "release"); return PV_OK; }
    }
    if (strict) {
        char list[600];
        int o = 0;
        for (int i = 0; i < sp->nfiles && o < (int)sizeof list; i++) o += snprintf(list + o, sizeof list - (size_t)o, "%s%s", i ? ", " : "", sp->files[i]);
        return pvc_fail(msg, PV_ENOWEIGHTS, "%s: release artifacts not found (--weights, PERCEIVE_WEIGHTS_DIR, the Hugging Face cache "
                        "%.200s). Fetch them: hf download %s --revision %s  (files %s%s%s)", sp->model, hub[0] ? hub : "(no HOME)",
                        sp->hf_repo, sp->revision, list, sp->note ? "; " : "", sp->note ? sp->note : "");
    }
    snprintf(kind, 16, "generated");
    return make_generated(sp, dir, cap, msg);
}
