/* core: status + messages, the allocator hook, tensor helpers, threads, cpu features, timers.
 * Everything else in perceive builds on this header. Prefix pvc_. */
#ifndef PVC_CORE_H
#define PVC_CORE_H

#include "perceive.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- messages ----------------------------------------------------------------------------- */
#define PVC_MSG_LEN 512
typedef struct pvc_msg { char text[PVC_MSG_LEN]; } pvc_msg;

/* Formats a message into m (if non-NULL) and into this thread's last-error buffer; returns s. */
pv_status pvc_fail(pvc_msg *m, pv_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pvc_set_last_error(const char *text);

/* ---- allocator ---------------------------------------------------------------------------- */
void *pvc_malloc(size_t n);
void *pvc_calloc(size_t count, size_t size);   /* overflow-checked */
void *pvc_realloc(void *p, size_t n);
void  pvc_free(void *p);
char *pvc_strdup(const char *s);
/* Aligned (64-byte) blocks for arenas and weights; freed with pvc_free_aligned. */
void *pvc_malloc_aligned(size_t n);
void  pvc_free_aligned(void *p);

/* Test mode (SQLite's test_malloc idea): fail allocation number fail_at (1-based, counted
 * from this call; 0 disables) and count live blocks. */
void   pvc_alloc_test_begin(long fail_at);
void   pvc_alloc_test_end(void);
long   pvc_alloc_live(void);      /* blocks allocated and not freed since test_begin */
long   pvc_alloc_count(void);     /* allocations attempted since test_begin */
bool   pvc_alloc_failed(void);    /* did the injected failure fire */

/* ---- tensors ------------------------------------------------------------------------------ */
typedef pv_tensor pvc_tensor;
int64_t pvc_numel(const pvc_tensor *t);
size_t  pvc_nbytes(const pvc_tensor *t);
void    pvc_tensor_set_contiguous(pvc_tensor *t);
bool    pvc_tensor_is_contiguous(const pvc_tensor *t);
bool    pvc_same_shape(const pvc_tensor *a, const pvc_tensor *b);
/* "[1,3,224,224]" into buf. */
const char *pvc_shape_str(const pvc_tensor *t, char *buf, size_t n);
bool    pvc_mul_overflow(int64_t a, int64_t b, int64_t *out);

float    pvc_f16_to_f32(uint16_t h);
uint16_t pvc_f32_to_f16(float f);
float    pvc_bf16_to_f32(uint16_t h);
uint16_t pvc_f32_to_bf16(float f);       /* round to nearest even */
/* Element i of any dtype as double / int64 (for Cast, shape arithmetic and tests). */
double   pvc_get_f64(const void *data, pv_dtype t, int64_t i);
int64_t  pvc_get_i64(const void *data, pv_dtype t, int64_t i);
void     pvc_set_f64(void *data, pv_dtype t, int64_t i, double v);
void     pvc_set_i64(void *data, pv_dtype t, int64_t i, int64_t v);
bool     pvc_dtype_is_float(pv_dtype t);
bool     pvc_dtype_is_int(pv_dtype t);    /* signed/unsigned integers, not bool */

/* ---- threads ------------------------------------------------------------------------------ */
/* One pool for the process. fn(ctx, begin, end, tid) is called on disjoint chunks of [0, n). */
typedef void (*pvc_range_fn)(void *ctx, int64_t begin, int64_t end, int tid);
typedef struct pvc_pool pvc_pool;
pv_status pvc_pool_create(int threads, pvc_pool **out);
void      pvc_pool_free(pvc_pool *p);
int       pvc_pool_threads(const pvc_pool *p);
/* grain: minimum chunk length. p may be NULL (runs inline). */
void      pvc_parallel_for(pvc_pool *p, int64_t n, int64_t grain, pvc_range_fn fn, void *ctx);
int       pvc_default_threads(void);   /* PERCEIVE_THREADS or the number of online CPUs */

/* ---- cpu ---------------------------------------------------------------------------------- */
typedef struct pvc_cpu {
    bool avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16, avx512_vnni;
    bool amx_bf16;          /* AMX tiles + AMX-BF16, and the OS saves tile state (XCR0 17/18) */
    bool avx_vnni;          /* AVX-VNNI: VEX-encoded vpdpbusd on ymm (cpuid 7.1 eax bit 4) */
    bool amx_int8;          /* AMX tiles + AMX-INT8, and the OS saves tile state */
    char brand[64];
} pvc_cpu;
const pvc_cpu *pvc_cpu_get(void);
/* ISA levels, each a superset of the one before. AVX512 = F+BW+VL+DQ+FMA; AVX512_BF16 adds
 * vdpbf16ps; AMX adds AMX-BF16 tiles (only oneDNN uses them). Kernel tables compare with <=. */
typedef enum {
    PVC_ISA_SCALAR = 0, PVC_ISA_AVX2, PVC_ISA_AVX512, PVC_ISA_AVX512_BF16, PVC_ISA_AMX
} pvc_isa;
/* From cpuid, lowered by PERCEIVE_ISA (scalar, avx2, avx512, avx512_bf16, amx); it caps oneDNN
 * too. */
pvc_isa     pvc_isa_selected(void);
const char *pvc_isa_name(pvc_isa i);
/* Multiply-adds per second of vdpbf16ps over those of vfmadd231ps (zmm, 12 independent sums, best
 * of 5 short runs each, measured once per process on first call: about 0.3 ms); 0 where the CPU
 * has no AVX512_BF16. Per instruction vdpbf16ps does twice the work, so 2 is the ideal: AMD Zen 5
 * measures about that; Intel cores without exposed AMX can measure 0.5 (bf16 then loses). */
double      pvc_bf16_dot_rate(void);

/* ---- precision ---------------------------------------------------------------------------- */
/* What convolutions and matrix products compute in. BF16: bf16 weights and activations,
 * fp32 accumulation and fp32 tensors between operators; everything else stays fp32. */
typedef enum { PVC_PREC_FP32 = 0, PVC_PREC_BF16 } pvc_precision;
const char *pvc_precision_name(pvc_precision p);
/* The precision a run gets for a request (pv_precision, PV_PRECISION_DEFAULT = PERCEIVE_PRECISION
 * or fp32): BF16 needs pvc_isa_selected() >= AVX512_BF16 and oneDNN, and below AMX a
 * pvc_bf16_dot_rate() of at least PVC_BF16_MIN_RATE (else bf16 runs slower than fp32; PERCEIVE_BF16=
 * force skips this check); otherwise FP32 with the reason in why (else why = ""). An unknown
 * request or PERCEIVE_PRECISION / PERCEIVE_BF16 value: PV_EINPUT naming it. */
#define PVC_BF16_MIN_RATE 1.25
pv_status   pvc_precision_resolve(int requested, pvc_precision *out, char *why, size_t why_len);

/* ---- time --------------------------------------------------------------------------------- */
double pvc_now_ms(void);               /* monotonic */

#define PVC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PVC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PVC_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

#endif
