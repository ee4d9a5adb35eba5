/* Matrix product with constant weights through oneDNN's matmul primitive: the contender of
 * kernels/gemm_packed.h for MatMul/Gemm with a constant B. Lifecycle as conv_dnnl.h: create at
 * plan time (primitive made for one M, weights reordered once into the primitive's layout and
 * owned by the object), run per call (allocates nothing: the scratchpad and the bf16 copy of A
 * live in the caller's workspace), free with the plan.
 * fp32: f32 src/weights/dst. bf16: A is converted to bf16 at run (a oneDNN reorder into the
 * workspace), weights are bf16, dst and bias f32 (on AMX machines oneDNN 2.6 runs this on the
 * AMX tiles: brg:avx512_core_amx). pvc_isa_selected() caps oneDNN's ISA (core/cpu.c).
 * Built with PV_HAVE_DNNL only; without it create always declines. */
#ifndef PVK_DNNL_MATMUL_DNNL_H
#define PVK_DNNL_MATMUL_DNNL_H

#include "kernels/kernels.h"

typedef struct pvk_dnnl_matmul pvk_dnnl_matmul;

/* Whether the measured table in matmul_dnnl.c prefers oneDNN over gemm_packed for C[M,N] =
 * A[M,K] * B[K,N] at this precision and thread count (false without oneDNN). shared: B's copy
 * is shared by the plans of several M (graph.h share_packed); some rows leave those alone. */
bool pvk_dnnl_matmul_pick(int64_t M, int64_t N, int64_t K, pvc_precision precision, int threads, bool shared);

/* Makes the primitive for A [M, K] (row stride lda >= K) times B' = alpha * op(B) (B K x N with
 * row stride ldb, or N x K when trans_b), C [M, N] row stride ldc, optional bias [N] given at
 * run (bias true), fused activation act (applied in the primitive). threads: the OpenMP team
 * run uses (<= 0: pvc_default_threads()). *out = NULL with PV_OK when oneDNN is absent, the
 * shape or activation is one it cannot take, or only its reference implementation would run.
 * PV_ENOMEM when an allocation fails. *workspace: bytes run needs (64-byte aligned). */
pv_status pvk_dnnl_matmul_create(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                 bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                 pvc_precision precision, int threads, pvk_dnnl_matmul **out,
                                 size_t *workspace, pvc_msg *msg);
/* Reordered weights, shared by the objects of one weight made for several M (a bundle's batch
 * plans): reference counted; a holder keeps the layout it was reordered to. */
typedef struct pvk_dnnl_weights pvk_dnnl_weights;
/* As pvk_dnnl_matmul_create, but when share is given and the primitive for this M wants the
 * weights in share's layout, the object uses share's bytes (retained) instead of reordering B
 * again (B is not read then and may be NULL). When the layouts differ, *out = NULL (declined:
 * the caller keeps one copy of the weights, not one per M). */
pv_status pvk_dnnl_matmul_create_shared(int64_t M, int64_t N, int64_t K, int64_t lda, const float *B, int64_t ldb,
                                        bool trans_b, float alpha, int64_t ldc, bool bias, const pvg_act *act,
                                        pvc_precision precision, int threads, pvk_dnnl_weights *share,
                                        pvk_dnnl_matmul **out, size_t *workspace, pvc_msg *msg);
/* m's weights, retained for the caller (release with pvk_dnnl_weights_release); NULL for NULL. */
pvk_dnnl_weights *pvk_dnnl_matmul_weights(const pvk_dnnl_matmul *m);
pvk_dnnl_weights *pvk_dnnl_weights_retain(pvk_dnnl_weights *w);   /* returns w; accepts NULL */
void pvk_dnnl_weights_release(pvk_dnnl_weights *w);   /* accepts NULL */

/* C = act(A * B' + bias). A, C with the strides given at create; ws: *workspace bytes. One
 * call at a time per object. */
pv_status pvk_dnnl_matmul_run(pvk_dnnl_matmul *m, const float *A, const float *bias, float *C, void *ws);
void      pvk_dnnl_matmul_free(pvk_dnnl_matmul *m);          /* accepts NULL */
/* oneDNN's implementation name, e.g. "brg:avx512_core_amx", with the precision. */
const char *pvk_dnnl_matmul_impl(const pvk_dnnl_matmul *m);

#endif
