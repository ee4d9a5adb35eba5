/* hamer net: the regressor (ViT-H backbone + MANO transformer-decoder head) as an engine graph
 * built from the weight table, planned once per batch size 1..PVM_HAMER_MAX_BATCH with every
 * linear layer's packed weights shared by all plans (graph.h: share_packed). Prefix
 * pvm_hamer_net_.
 *
 * Graph (B crops, tokens kept 2-D as [B*192, 1280] so every linear layer is one GEMM):
 *   image [B,3,256,192] -> Conv 16x16/16 pad 2 -> [B,192,1280] + (pos[1:] + pos[0])
 *   32 x { x += proj(Attention(split(qkv(LN1 x)))) ; x += fc2(GELU(fc1(LN2 x))) } -> last_norm
 *   decoder: x0 = token_embedding.bias + pos_embedding (the input token is 0); 6 x {
 *     x += to_out(W_v LN_a x)          (self-attention over one token: softmax of one key is 1)
 *     x += to_out(Attention(to_q LN_b x, to_kv(context)))   8 heads x 64, scale 1/8
 *     x += net.3(GELU(net.0(LN_c x))) }
 *   pose96 = decpose(x) + init_hand_pose, betas = decshape(x) + init_betas, cam = deccam(x) + init_cam
 * The constant first decoder layer folds at plan time. */
#ifndef PVM_HAMER_NET_H
#define PVM_HAMER_NET_H

#include "models/hamer/weights.h"

typedef struct pvm_hamer_net pvm_hamer_net;

/* Outputs of one run, pointing into the plan's arena (valid until the next run). */
typedef struct pvm_hamer_net_out {
    const float *tokens;     /* [B,192,1280] after last_norm */
    const float *token;      /* [B,1024] the decoder's output token */
    const float *pose96, *betas, *cam;   /* [B,96], [B,10], [B,3] */
} pvm_hamer_net_out;

/* Builds and plans the network from w (its network tensors are taken over). */
pv_status pvm_hamer_net_create(pvm_hamer_wset *w, pvc_precision prec, int threads, pvm_hamer_net **out, pvc_msg *msg);
/* x: B crops, CHW normalised [B,3,256,192]; 1 <= B <= PVM_HAMER_MAX_BATCH. */
pv_status pvm_hamer_net_run(pvm_hamer_net *n, const float *x, int B, pvc_pool *pool, pvm_hamer_net_out *out, pvc_msg *msg);
void      pvm_hamer_net_free(pvm_hamer_net *n);
/* Plan facts: arena bytes of the largest plan, packed weight bytes, nodes. */
size_t    pvm_hamer_net_arena_bytes(const pvm_hamer_net *n);
int       pvm_hamer_net_nodes(const pvm_hamer_net *n);

#endif
