/* Where a bundle's artifacts come from (DESIGN.md section 6), for bundles whose release is a set
 * of files: --weights DIR (or DIR/<model>), PERCEIVE_WEIGHTS_DIR (or .../<model>), the Hugging
 * Face cache (snapshots/<pinned commit>, else the commit refs/<revision> records), else a
 * generated set in perceive's cache, built once beside and renamed into place (concurrent
 * first uses never see half a set) and checked against its MANIFEST.sha256 on reuse.
 * Prefix pva_. */
#ifndef PVA_ARTIFACTS_H
#define PVA_ARTIFACTS_H

#include "core/core.h"

#define PVA_MAX_FILES 8

typedef struct pva_spec {
    const char *model;                  /* "meteor": the sub-folder and the generated folder's prefix */
    const char *hf_repo;                /* "AutowareFoundation/meteor" */
    const char *revision;               /* tag or branch the fetch command names */
    const char *commit;                 /* pinned snapshot, or NULL (then only refs/<revision>) */
    int         nfiles;                 /* required files (optional ones are the bundle's business) */
    const char *files[PVA_MAX_FILES];
    const char *gen_tag;                /* distinguishes generated sets (skeleton hash, seed) */
    pv_status (*generate)(const char *dir, pvc_msg *msg);   /* writes files[] into dir */
    const char *note;                   /* appended to the --strict message (checksums), or NULL */
} pva_spec;

/* dir: the folder holding every file; kind: "dir", "release" or "generated". strict refuses
 * generated sets with PV_ENOWEIGHTS naming the files and the fetch command. */
pv_status pva_resolve(const pva_spec *sp, const char *weights_dir, bool strict, char *dir, size_t cap,
                      char kind[16], pvc_msg *msg);

bool      pva_file_exists(const char *path);
pv_status pva_mkdirs(const char *path, pvc_msg *msg);
pv_status pva_write(const char *path, const void *data, size_t len, pvc_msg *msg);
/* MANIFEST.sha256 of files[] in dir (written by the generator, checked on reuse). */
pv_status pva_manifest_write(const char *dir, int nfiles, const char *const *files, pvc_msg *msg);

#endif
