/* The shared oneDNN engine and the ISA cap (see dnnl_engine.h). */
#include "kernels/dnnl/dnnl_engine.h"

#ifdef PV_HAVE_DNNL
#include <omp.h>
#include <pthread.h>

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void)
{
    dnnl_cpu_isa_t cap;
    switch (pvc_isa_selected()) {
    case PVC_ISA_SCALAR:      return;    /* oneDNN has no scalar-only code: stay out */
    case PVC_ISA_AVX2:        cap = dnnl_cpu_isa_avx2; break;
    case PVC_ISA_AVX512:      cap = dnnl_cpu_isa_avx512_core; break;
    case PVC_ISA_AVX512_BF16: cap = dnnl_cpu_isa_avx512_core_bf16; break;
    default:                  cap = dnnl_cpu_isa_all; break;
    }
    /* fails only when a primitive was made before (not by this project): keep oneDNN's own */
    (void)dnnl_set_max_cpu_isa(cap);
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

dnnl_engine_t pvk_dnnl_engine(void)
{
    pthread_once(&engine_once, engine_init);
    return engine;
}

int pvk_dnnl_team_enter(int threads)
{
    int saved = omp_get_max_threads();
    if (saved != threads) omp_set_num_threads(threads);
    return saved;
}

void pvk_dnnl_team_leave(int saved, int threads)
{
    if (saved != threads) omp_set_num_threads(saved);
}
#else
typedef int pvk_dnnl_engine_unused;   /* ISO C: a translation unit must not be empty */
#endif
