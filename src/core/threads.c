/* The process's one threading runtime: work described as data (range, grain, function), split
 * into chunks taken from an atomic counter; the calling thread works too; nested parallel_for
 * calls run inline.
 * Two builds of the same API: with oneDNN (PV_HAVE_DNNL), whose Debian build runs on OpenMP, the
 * pool is an OpenMP team (libgomp's threads serve both, never two pools spinning on the same
 * cores); without it, a fixed pthread pool of T-1 workers. */
#include "core/core.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

int pvc_default_threads(void)
{
    const char *e = getenv("PERCEIVE_THREADS");
    if (e) {
        int t = atoi(e);
        if (t > 0 && t <= 1024) return t;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ~4 chunks per thread balances uneven rows without much counter traffic. */
static int64_t chunk_size(int threads, int64_t n, int64_t grain)
{
    int64_t chunk = (n + (int64_t)threads * 4 - 1) / ((int64_t)threads * 4);
    return chunk < grain ? grain : chunk;
}

#ifdef PV_HAVE_DNNL
#include <omp.h>

struct pvc_pool { int threads; };

pv_status pvc_pool_create(int threads, pvc_pool **out)
{
    *out = NULL;
    if (threads <= 0) threads = pvc_default_threads();
    if (threads > 1024) return pvc_fail(NULL, PV_EINPUT, "threads: %d is more than 1024", threads);
    pvc_pool *p = pvc_calloc(1, sizeof *p);
    if (!p) return pvc_fail(NULL, PV_ENOMEM, "out of memory creating the thread pool");
    p->threads = threads;
    *out = p;
    return PV_OK;
}

void pvc_pool_free(pvc_pool *p) { pvc_free(p); }

int pvc_pool_threads(const pvc_pool *p) { return p ? p->threads : 1; }

void pvc_parallel_for(pvc_pool *p, int64_t n, int64_t grain, pvc_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    /* inside a team (ours or the caller's): inline, as a nested team would only oversubscribe */
    if (!p || p->threads == 1 || n <= grain || omp_in_parallel()) { fn(ctx, 0, n, 0); return; }
    int64_t chunk = chunk_size(p->threads, n, grain);
    atomic_llong next = 0;
    #pragma omp parallel num_threads(p->threads)
    {
        int tid = omp_get_thread_num();
        for (;;) {
            int64_t b = atomic_fetch_add(&next, chunk);
            if (b >= n) break;
            fn(ctx, b, b + chunk < n ? b + chunk : n, tid);
        }
    }
}

#else
#include <pthread.h>

struct pvc_pool {
    int             threads;
    pthread_t      *workers;
    pthread_mutex_t mu;
    pthread_cond_t  wake, done;
    /* current job */
    pvc_range_fn    fn;
    void           *ctx;
    int64_t         n, chunk;
    atomic_llong    next;
    int             active;      /* workers still inside the current job */
    unsigned long   generation;
    bool            stop;
    pthread_mutex_t run_mu;      /* one job at a time */
};

static _Thread_local int in_job;

static void work(pvc_pool *p, int tid)
{
    in_job = 1;
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) break;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->ctx, b, e, tid);
    }
    in_job = 0;
}

typedef struct { pvc_pool *p; int tid; } worker_arg;

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    pvc_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p, tid);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

pv_status pvc_pool_create(int threads, pvc_pool **out)
{
    *out = NULL;
    if (threads <= 0) threads = pvc_default_threads();
    if (threads > 1024) return pvc_fail(NULL, PV_EINPUT, "threads: %d is more than 1024", threads);
    pvc_pool *p = pvc_calloc(1, sizeof *p);
    if (!p) return pvc_fail(NULL, PV_ENOMEM, "out of memory creating the thread pool");
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (threads > 1) {
        p->workers = pvc_calloc((size_t)threads - 1, sizeof *p->workers);
        if (!p->workers) { pvc_pool_free(p); return pvc_fail(NULL, PV_ENOMEM, "out of memory creating the thread pool"); }
        for (int i = 0; i < threads - 1; i++) {
            worker_arg *wa = malloc(sizeof *wa);   /* freed by the worker; outside the hook on purpose */
            if (!wa) { p->threads = i + 1; pvc_pool_free(p); return pvc_fail(NULL, PV_ENOMEM, "out of memory creating the thread pool"); }
            wa->p = p;
            wa->tid = i + 1;
            if (pthread_create(&p->workers[i], NULL, worker_main, wa) != 0) {
                free(wa);
                p->threads = i + 1;
                pvc_pool_free(p);
                return pvc_fail(NULL, PV_EINTERNAL, "cannot start thread %d", i + 1);
            }
        }
    }
    *out = p;
    return PV_OK;
}

void pvc_pool_free(pvc_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->workers && i < p->threads - 1; i++) pthread_join(p->workers[i], NULL);
    pvc_free(p->workers);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pvc_free(p);
}

int pvc_pool_threads(const pvc_pool *p) { return p ? p->threads : 1; }

void pvc_parallel_for(pvc_pool *p, int64_t n, int64_t grain, pvc_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->threads == 1 || in_job || n <= grain) { fn(ctx, 0, n, 0); return; }
    pthread_mutex_lock(&p->run_mu);
    int64_t chunk = chunk_size(p->threads, n, grain);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->active = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_mu);
}

#endif
