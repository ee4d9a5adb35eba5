/* Convolution through oneDNN (libdnnl): the fast twin of the im2col + GEMM path of
 * graph/ops/conv.c, which stays as the reference and as the fallback for everything this one
 * declines. Lifecycle: create at plan time (primitive made, weights reordered once into the
 * primitive's layout and owned by the object), run per call (allocates nothing: scratchpad and
 * any layout buffers live in the caller's workspace), free when the plan goes.
 * Built with PV_HAVE_DNNL only; without it create always declines. */
#ifndef PVK_DNNL_CONV_DNNL_H
#define PVK_DNNL_CONV_DNNL_H

#include "kernels/kernels.h"

#include <string.h>

typedef struct pvk_dnnl_conv pvk_dnnl_conv;

/* One f32 convolution, dims in ONNX order: X [batch, cin, in...], W [cout, cin/group, k...],
 * Y [batch, cout, out...]; the first nsp entries of the spatial arrays are used. dil >= 1
 * (ONNX meaning). Pads may differ per side.
 * transposed: ConvTranspose instead, W [cin, cout/group, k...]; out = (in - 1) * stride +
 * (k - 1) * dil + 1 - pad_begin - pad_end, so output_padding / output_shape arrive folded into
 * pad_end (negative pad_end: declined). */
typedef struct pvk_dnnl_conv_desc {
    bool    transposed;
    int     nsp;                      /* 1..3 */
    int64_t batch, cin, cout, group;
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad_begin[3], pad_end[3];
    bool    bias;                     /* B [cout] given at run */
    pvg_act act;                      /* fused activation, applied in the primitive */
    bool    bf16;                     /* bf16 X and W inside the primitive (X converted while
                                         reordering, W once at create), fp32 accumulation,
                                         bias and Y; always BLOCKED. Declined (fp32 path) when
                                         oneDNN has no bf16 kernel for the shape */
    bool    winograd;                 /* Winograd F(4,3) (3x3, stride 1, no dilation): perceive's
                                         own kernel (kernels/winograd.h) where it takes the shape,
                                         else oneDNN's; declined where neither has one. With bf16:
                                         the own kernel in fp32 (see pvk_dnnl_winograd_pick), else
                                         bf16 direct */
    bool    dst_bf16;                 /* bf16 Y inside the primitive (set by the layout pass for a
                                         bf16 producer feeding a bf16 consumer) */
} pvk_dnnl_conv_desc;

/* Where a convolution runs. NCHW: the primitive reads and writes perceive's NCHW tensors
 * directly. BLOCKED: the primitive picks its layouts (nhwc / nChw16c) and run reorders X and Y
 * through the workspace; the JIT direct kernels (brgconv) need it. */
typedef enum { PVK_DNNL_OFF = 0, PVK_DNNL_AUTO, PVK_DNNL_NCHW, PVK_DNNL_BLOCKED } pvk_dnnl_mode;

/* True when this binary is linked with oneDNN and it may run here (not under PERCEIVE_ISA=scalar). */
bool pvk_dnnl_available(void);
/* From the environment, read at each call (tests and benches switch it in-process):
 * PERCEIVE_DNNL=0 off, unset or 1 AUTO (the shape table in conv_dnnl.c decides between im2col,
 * NCHW and BLOCKED), nchw / blocked force that layout wherever oneDNN can run the shape.
 * Always OFF without oneDNN. */
pvk_dnnl_mode pvk_dnnl_mode_get(void);
/* PERCEIVE_WINOGRAD: 1 = Winograd for every fp32 3x3 stride-1 convolution oneDNN has a Winograd
 * kernel for, 0 = never, unset = where the measured table in conv_dnnl.c says it pays and stays
 * within the fp32 conformance tolerance. bf16 descs: true below AMX where perceive's own fp32
 * Winograd takes the shape (unless PERCEIVE_WINOGRAD=0). perceive's kernel unless
 * PERCEIVE_WINOGRAD_OWN=0: then oneDNN's Winograd kernel, and bf16 descs stay bf16 direct. */
bool pvk_dnnl_winograd_pick(const pvk_dnnl_conv_desc *d);

/* What AUTO chooses for d by the measured table (OFF = perceive's im2col path). bf16 descs are
 * always BLOCKED (the im2col path is fp32). */
pvk_dnnl_mode pvk_dnnl_conv_pick(const pvk_dnnl_conv_desc *d);

/* Makes the primitive for d, w: the constant weights in ONNX layout. threads: the team size run
 * will use (oneDNN fixes it at creation; <= 0 means pvc_default_threads()). *out = NULL with
 * PV_OK when declined (mode OFF, the table prefers im2col, an activation or shape oneDNN cannot
 * take, or oneDNN has only its reference implementation): the caller uses its own kernel.
 * PV_ENOMEM when an allocation fails. *workspace: bytes run needs (64-byte aligned). */
pv_status pvk_dnnl_conv_create(const pvk_dnnl_conv_desc *d, const float *w, int threads,
                               pvk_dnnl_mode mode, pvk_dnnl_conv **out, size_t *workspace,
                               pvc_msg *msg);
/* y = act(conv(x, w) + bias); bias may be NULL when d->bias was false. ws: *workspace bytes,
 * 64-byte aligned. One call at a time per object. */
pv_status pvk_dnnl_conv_run(pvk_dnnl_conv *c, const float *x, const float *bias, float *y, void *ws);
void      pvk_dnnl_conv_free(pvk_dnnl_conv *c);   /* accepts NULL */
/* pvk_dnnl_conv_run on a Conv/ConvTranspose node: X = in[0], optional B = in[2], Y = out[0]. */
static inline pv_status pvk_dnnl_conv_exec(pvk_dnnl_conv *c, const pvg_exec *x)
{
    const float *bias = x->nin > 2 && x->in[2].rank >= 0 ? x->in[2].data : NULL;
    return pvk_dnnl_conv_run(c, x->in[0].data, bias, x->out[0].data, x->ws);
}
/* The layout pass (pvg_op.link): producer's Y is consumer's X and nothing else reads it. When the
 * layout producer's primitive writes Y in is the one consumer's reads X in, and it fits in the
 * plain tensor's bytes, both drop their reorder and the tensor between them holds that layout.
 * A bf16 producer feeding a bf16 consumer is remade to write bf16 (what the consumer would round
 * its input to anyway: same numbers). Returns true when linked; false leaves both unchanged
 * (except for PV_ENOMEM while remaking, which also leaves the producer working as before). */
bool pvk_dnnl_conv_link(pvk_dnnl_conv *producer, pvk_dnnl_conv *consumer);
/* Whether run skips the reorder of X (linked to its producer) / of Y (linked to its consumer). */
bool pvk_dnnl_conv_linked_in(const pvk_dnnl_conv *c);
bool pvk_dnnl_conv_linked_out(const pvk_dnnl_conv *c);

/* The object a prepared Conv / ConvTranspose node holds (NULL: its own path runs): both keep
 * it as the first member of their params. For benches and profiles. */
static inline pvk_dnnl_conv *pvk_dnnl_conv_of_params(const void *params)
{
    pvk_dnnl_conv *c;
    memcpy(&c, params, sizeof c);
    return c;
}
/* One producer and its n consumers (n > 1: a feature map several branches read), all linked or
 * none. A consumer that wants another X layout is remade to read the producer's where oneDNN has
 * a JIT kernel for it; ws (NULL or n entries): the consumers' planned workspace bytes, which
 * such a remake may raise (the planner allocates the workspace after this pass). */
bool pvk_dnnl_conv_link_all(pvk_dnnl_conv *producer, pvk_dnnl_conv *const *consumers, int n, size_t *ws);
/* pvg_op.link for Conv and ConvTranspose: links the nodes' oneDNN objects when every consumer is
 * a Conv or ConvTranspose too. */
static inline bool pvk_dnnl_conv_link_params(void *params, const pvg_node *const *consumers, void *const *consumer_params,
                                             int n, size_t *consumer_ws)
{
    enum { MAXC = 8 };
    pvk_dnnl_conv *c[MAXC];
    if (n < 1 || n > MAXC) return false;
    for (int i = 0; i < n; i++) {
        if (strcmp(consumers[i]->op_type, "Conv") && strcmp(consumers[i]->op_type, "ConvTranspose")) return false;
        if (consumers[i]->domain && consumers[i]->domain[0]) return false;
        c[i] = pvk_dnnl_conv_of_params(consumer_params[i]);
    }
    return pvk_dnnl_conv_link_all(pvk_dnnl_conv_of_params(params), c, n, consumer_ws);
}
/* oneDNN's implementation name and the layout, e.g. "brgconv:avx512_core/blocked". */
const char *pvk_dnnl_conv_impl(const pvk_dnnl_conv *c);

#endif
