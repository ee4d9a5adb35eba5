/* hamer weights: the tensors of hamer.safetensors (names and shapes of the release's state dict,
 * spec sections 3 and 4.2), reading them with every shape checked, and the seeded generator
 * that stands in for the release when it is absent. Prefix pvm_hamer_w.
 *
 * A weight set holds one float32 buffer per tensor (pvc_malloc_aligned); the network takes
 * the buffers over as it binds them (pvm_hamer_wset_take), so the weights are held once. */
#ifndef PVM_HAMER_WEIGHTS_H
#define PVM_HAMER_WEIGHTS_H

#include "models/hamer/hamer.h"

#define PVM_HAMER_DEPTH     32      /* ViT-H blocks of the release */
#define PVM_HAMER_DEC_DEPTH 6       /* decoder layers */
#define PVM_HAMER_GEN_SEED  1
#define PVM_HAMER_FILE      "hamer.safetensors"

typedef enum {
    PVM_HW_LINEAR,      /* a linear or conv weight: uniform, unit gain for its fan-in */
    PVM_HW_READOUT,     /* a readout weight: a hundredth of that (outputs near the means) */
    PVM_HW_BIAS, PVM_HW_LN_W, PVM_HW_LN_B, PVM_HW_POS,
    PVM_HW_INIT_POSE, PVM_HW_INIT_BETAS, PVM_HW_INIT_CAM
} pvm_hamer_wkind;

typedef struct pvm_hamer_wspec {
    char            name[96];
    int             rank;
    int64_t         dims[4];
    pvm_hamer_wkind kind;
    int64_t         fan_in;
} pvm_hamer_wspec;

typedef struct pvm_hamer_wset {
    pvm_hamer_wspec *spec;
    float          **data;          /* per spec; NULL once taken */
    int              n, depth;
    pvm_hamer_mano   mano;
    char             kind[16];      /* "release", "dir" (a converted or generated file), "generated" */
    int64_t          params;        /* network parameters (backbone + head, without the means) */
    char             ckpt_sha256[72], mano_sha256[72];   /* the converter's record of its sources */
} pvm_hamer_wset;

/* The network's tensors for a backbone of depth blocks (into *out, pvc_malloc'ed; count returned,
 * -1 on allocation failure). */
int  pvm_hamer_wspecs(int depth, pvm_hamer_wspec **out);

/* Seeded weights of the release's structure and a synthetic MANO-shaped template (not MANO):
 * the same bytes on every machine for a seed. */
pv_status pvm_hamer_wset_generate(int depth, uint64_t seed, pvm_hamer_wset *w, pvc_msg *msg);
/* Reads path (hamer.safetensors): the depth from the blocks present (the release has 32, and a
 * file whose metadata says weights=release must), every tensor's shape checked against the
 * architecture, float16 / bfloat16 widened to float32, every value finite, the MANO arrays
 * checked. Messages name the tensor. */
pv_status pvm_hamer_wset_load(const char *path, pvm_hamer_wset *w, pvc_msg *msg);
/* Writes w (all tensors still held) as a safetensors file with metadata. */
pv_status pvm_hamer_wset_write(const pvm_hamer_wset *w, const char *path, const char *weights_kind, pvc_msg *msg);
/* The buffer of tensor name (ownership passes to the caller), or NULL if absent / taken. */
float *pvm_hamer_wset_take(pvm_hamer_wset *w, const char *name);
/* The buffer of tensor name, still owned by w (NULL if absent / taken). */
const float *pvm_hamer_wset_get(const pvm_hamer_wset *w, const char *name);
void  pvm_hamer_wset_free(pvm_hamer_wset *w);

#endif
