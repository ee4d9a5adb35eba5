/* The process's one oneDNN CPU engine, shared by every oneDNN wrapper (convolutions, matrix
 * products), and the OpenMP team size around oneDNN calls. Built with PV_HAVE_DNNL only. */
#ifndef PVK_DNNL_ENGINE_H
#define PVK_DNNL_ENGINE_H

#include "core/core.h"

#ifdef PV_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

/* The engine, made once. Before making it, oneDNN's ISA is capped at pvc_isa_selected() (so
 * PERCEIVE_ISA=avx2 keeps oneDNN on AVX2 too, and =avx512_bf16 keeps it off AMX). NULL when
 * oneDNN cannot run here (PERCEIVE_ISA=scalar, or engine creation failed): callers decline. */
dnnl_engine_t pvk_dnnl_engine(void);

/* oneDNN sizes its OpenMP team from the calling thread's omp_get_max_threads() at creation and
 * at execution: enter sets it to threads and returns the previous value for leave. */
int  pvk_dnnl_team_enter(int threads);
void pvk_dnnl_team_leave(int saved, int threads);
#endif

#endif
