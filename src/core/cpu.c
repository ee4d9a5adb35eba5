/* CPU features (cpuid + xgetbv) and the ISA choice, lowered by PERCEIVE_ISA. */
#include "core/core.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
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

/* ---- the bf16 dot-product rate ---------------------------------------------------------------- */
/* Whether bf16 pays is a property of the core, not of its flags: AMD Zen 5 runs bf16 well ahead
 * of fp32 (BENCHMARKS.md), while an Intel Xeon (family 6 model 207, AMX not exposed to the VM)
 * measured one vdpbf16ps every two cycles: half its fp32 multiply-add rate, so the model graphs
 * at bf16 took 1.04-1.6x their fp32 time there. So it is measured: 12 independent chains of one
 * instruction, n iterations, the asm barrier keeping each sum in a register. */
#if defined(__x86_64__) && defined(__GNUC__)
/* One timed loop: twelve named sums (an array would live in memory and the loop would time store
 * forwarding), step(a) one instruction on sum a, the asm barrier keeping it in a register. */
#define CHAINS(OP) OP(a0) OP(a1) OP(a2) OP(a3) OP(a4) OP(a5) OP(a6) OP(a7) OP(a8) OP(a9) OP(a10) OP(a11)
#define TIMED_LOOP(name, isa, setup, step)                                                                  \
    __attribute__((target(isa))) static double name(int n)                                                  \
    {                                                                                                       \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,     \
               a8 = a0, a9 = a0, a10 = a0, a11 = a0;                                                        \
        setup;                                                                                              \
        double t = pvc_now_ms();                                                                            \
        for (int i = 0; i < n; i++) { CHAINS(step) }                                                        \
        t = pvc_now_ms() - t;                                                                               \
        volatile float sink = _mm512_reduce_add_ps(_mm512_add_ps(a0, a11));                                \
        (void)sink;                                                                                         \
        return t;                                                                                           \
    }
#define DP(a) a = _mm512_dpbf16_ps(a, one, one); __asm__ volatile("" : "+v"(a));
#define FM(a) a = _mm512_fmadd_ps(one, one, a); __asm__ volatile("" : "+v"(a));
TIMED_LOOP(time_dpbf16, "avx512f,avx512bf16", __m512bh one = (__m512bh)_mm512_set1_epi32(0x3f803f80), DP)   /* bf16 pairs (1, 1) */
TIMED_LOOP(time_fma, "avx512f,fma", __m512 one = _mm512_set1_ps(1.0f), FM)
#undef FM
#undef DP
#undef TIMED_LOOP
#undef CHAINS
#endif

static double bf16_rate;
static pthread_once_t rate_once = PTHREAD_ONCE_INIT;

static void measure_bf16_rate(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const pvc_cpu *c = pvc_cpu_get();
    if (!(c->avx512f && c->avx512_bf16 && c->fma)) return;
    double dp = 1e30, fm = 1e30;
    for (int r = 0; r < 5; r++) {   /* interleaved, so a frequency change or a preemption hits both */
        dp = fmin(dp, time_dpbf16(2048));
        fm = fmin(fm, time_fma(2048));
    }
    if (dp > 0 && fm > 0) bf16_rate = 2.0 * fm / dp;
#endif
}

double pvc_bf16_dot_rate(void)
{
    pthread_once(&rate_once, measure_bf16_rate);
    return bf16_rate;
}

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
    const char *force = getenv("PERCEIVE_BF16");
    if (force && *force && strcmp(force, "auto") && strcmp(force, "force"))
        return pvc_fail(NULL, PV_EINPUT, "PERCEIVE_BF16: '%s' is not one of auto, force", force);
    pvc_isa i = pvc_isa_selected();
    if (i < PVC_ISA_AVX512_BF16)
        snprintf(why, why_len, "bf16 needs AVX512_BF16; %s (ISA %s): running fp32",
                 pvc_cpu_get()->avx512_bf16 ? "lowered by PERCEIVE_ISA" : "this CPU lacks it", pvc_isa_name(i));
#ifndef PV_HAVE_DNNL
    else snprintf(why, why_len, "bf16 needs oneDNN, which this build lacks: running fp32");
#else
    else if (i < PVC_ISA_AMX && !(force && !strcmp(force, "force")) && pvc_bf16_dot_rate() < PVC_BF16_MIN_RATE)
        snprintf(why, why_len, "bf16 dot products run %.2fx the fp32 multiply-add rate here (measured; bf16 pays from "
                 "%.2fx): running fp32 (PERCEIVE_BF16=force: bf16)", pvc_bf16_dot_rate(), PVC_BF16_MIN_RATE);
    else *out = PVC_PREC_BF16;
#endif
    return PV_OK;
}

const char *pv_isa(void) { return pvc_isa_name(pvc_isa_selected()); }
