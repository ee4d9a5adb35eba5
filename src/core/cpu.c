/* CPU features (cpuid + xgetbv) and the ISA choice, lowered by PERCEIVE_ISA. */
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static pvc_cpu cpu;
static pvc_isa isa;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) || defined(__i386__)
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        bool osxsave = c & (1u << 27);
        uint64_t xcr = osxsave ? xgetbv0() : 0;
        bool ymm = (xcr & 6) == 6, zmm = (xcr & 0xe6) == 0xe6;
        cpu.fma = ymm && (c & (1u << 12));
        cpu.f16c = ymm && (c & (1u << 29));
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            cpu.avx2 = ymm && (b & (1u << 5));
            cpu.avx512f = zmm && (b & (1u << 16));
            cpu.avx512bw = zmm && (b & (1u << 30));
            cpu.avx512dq = zmm && (b & (1u << 17));
            cpu.avx512vl = zmm && (b & (1u << 31));
            cpu.avx512_vnni = zmm && (c & (1u << 11));
        }
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) cpu.avx512_bf16 = zmm && (a & (1u << 5));
    }
    unsigned brand[12] = {0};
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2], &brand[4 * i + 3]);
        memcpy(cpu.brand, brand, sizeof brand);
        cpu.brand[sizeof cpu.brand - 1] = 0;
    }
#endif
    isa = (cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq && cpu.fma) ? PVC_ISA_AVX512
        : (cpu.avx2 && cpu.fma) ? PVC_ISA_AVX2 : PVC_ISA_SCALAR;
    const char *env = getenv("PERCEIVE_ISA");
    if (env) {
        pvc_isa want = !strcmp(env, "scalar") ? PVC_ISA_SCALAR : !strcmp(env, "avx2") ? PVC_ISA_AVX2
                     : !strcmp(env, "avx512") ? PVC_ISA_AVX512 : isa;
        if (want < isa) isa = want;    /* can lower, never raise past the hardware */
    }
}

const pvc_cpu *pvc_cpu_get(void) { pthread_once(&once, detect); return &cpu; }
pvc_isa pvc_isa_selected(void) { pthread_once(&once, detect); return isa; }

const char *pvc_isa_name(pvc_isa i)
{
    return i == PVC_ISA_AVX512 ? "avx512" : i == PVC_ISA_AVX2 ? "avx2" : "scalar";
}

const char *pv_isa(void) { return pvc_isa_name(pvc_isa_selected()); }
