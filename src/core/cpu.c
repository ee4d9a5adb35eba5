/* CPU features (cpuid + xgetbv) and the ISA choice, lowered by PERCEIVE_ISA. */
#include "core/core.h"

#include <pthread.h>
#include <stdio.h>
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
        bool amx_os = (xcr & (3u << 17)) == (3u << 17);   /* XTILECFG + XTILEDATA */
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) cpu.amx_bf16 = amx_os && (d & (1u << 22)) && (d & (1u << 24));
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) cpu.avx512_bf16 = zmm && (a & (1u << 5));
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) cpu.amx_int8 = amx_os && (d & (1u << 24)) && (d & (1u << 25));
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) cpu.avx_vnni = ymm && (a & (1u << 4));
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
    if (isa == PVC_ISA_AVX512 && cpu.avx512_bf16) isa = cpu.amx_bf16 ? PVC_ISA_AMX : PVC_ISA_AVX512_BF16;
    const char *env = getenv("PERCEIVE_ISA");
    if (env) {
        for (int i = PVC_ISA_SCALAR; i <= PVC_ISA_AMX; i++)
            if (!strcmp(env, pvc_isa_name((pvc_isa)i)) && (pvc_isa)i < isa) isa = (pvc_isa)i;   /* lower only */
    }
}

const pvc_cpu *pvc_cpu_get(void) { pthread_once(&once, detect); return &cpu; }
pvc_isa pvc_isa_selected(void) { pthread_once(&once, detect); return isa; }

const char *pvc_isa_name(pvc_isa i)
{
    static const char *const names[] = { "scalar", "avx2", "avx512", "avx512_bf16", "amx" };
    return (unsigned)i < PVC_COUNTOF(names) ? names[i] : "?";
}

const char *pvc_precision_name(pvc_precision p) { return p == PVC_PREC_BF16 ? "bf16" : "fp32"; }

pv_status pvc_precision_resolve(int requested, pvc_precision *out, char *why, size_t why_len)
{
    *out = PVC_PREC_FP32;
    if (why_len) why[0] = 0;
    if (requested == PV_PRECISION_DEFAULT) {
        const char *env = getenv("PERCEIVE_PRECISION");
        if (!env || !*env || !strcmp(env, "fp32")) return PV_OK;
        if (strcmp(env, "bf16"))
            return pvc_fail(NULL, PV_EINPUT, "PERCEIVE_PRECISION: '%s' is not one of fp32, bf16", env);
        requested = PV_PRECISION_BF16;
    }
    if (requested == PV_PRECISION_FP32) return PV_OK;
    if (requested != PV_PRECISION_BF16)
        return pvc_fail(NULL, PV_EINPUT, "precision: %d is not one of PV_PRECISION_DEFAULT, _FP32, _BF16", requested);
    pvc_isa i = pvc_isa_selected();
    if (i < PVC_ISA_AVX512_BF16)
        snprintf(why, why_len, "bf16 needs AVX512_BF16; %s (ISA %s): running fp32",
                 pvc_cpu_get()->avx512_bf16 ? "lowered by PERCEIVE_ISA" : "this CPU lacks it", pvc_isa_name(i));
#ifndef PV_HAVE_DNNL
    else snprintf(why, why_len, "bf16 needs oneDNN, which this build lacks: running fp32");
#else
    else *out = PVC_PREC_BF16;
#endif
    return PV_OK;
}

const char *pv_isa(void) { return pvc_isa_name(pvc_isa_selected()); }
