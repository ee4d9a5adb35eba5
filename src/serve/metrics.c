/* serve/metrics: request counters and per-stage latency histograms, written as Prometheus
 * text (exposition format 0.0.4). One mutex: updates are a handful of adds per request. */
#include "serve/serve.h"
#include "core/core.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NCODES 16
static const double bucket_s[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NBUCKETS ((int)(sizeof bucket_s / sizeof bucket_s[0]))
static const char *const stage_names[] = { "decode", "preprocess", "engine", "postprocess", "wait", "total" };
#define NSTAGES ((int)(sizeof stage_names / sizeof stage_names[0]))

typedef struct histo {
    uint64_t counts[NBUCKETS + 1];   /* the last one is +Inf */
    uint64_t n;
    double   sum_s;
} histo;

struct pvsv_metrics {
    pthread_mutex_t mu;
    unsigned codes[NCODES];
    uint64_t code_counts[NCODES];
    int      ncodes;
    histo    stage[NSTAGES];
};

pvsv_metrics *pvsv_metrics_create(void)
{
    pvsv_metrics *mt = pvc_calloc(1, sizeof *mt);
    if (!mt) return NULL;
    if (pthread_mutex_init(&mt->mu, NULL) != 0) { pvc_free(mt); return NULL; }
    return mt;
}

void pvsv_metrics_free(pvsv_metrics *mt)
{
    if (!mt) return;
    pthread_mutex_destroy(&mt->mu);
    pvc_free(mt);
}

void pvsv_metrics_request(pvsv_metrics *mt, unsigned code)
{
    pthread_mutex_lock(&mt->mu);
    int i = 0;
    while (i < mt->ncodes && mt->codes[i] != code) i++;
    if (i == mt->ncodes && mt->ncodes < NCODES) mt->codes[mt->ncodes++] = code;
    if (i < mt->ncodes) mt->code_counts[i]++;
    pthread_mutex_unlock(&mt->mu);
}

static void histo_add(histo *h, double ms)
{
    double s = ms > 0 ? ms / 1000.0 : 0.0;
    int b = 0;
    while (b < NBUCKETS && s > bucket_s[b]) b++;
    h->counts[b]++;
    h->n++;
    h->sum_s += s;
}

void pvsv_metrics_timing(pvsv_metrics *mt, const pv_timing *t, double wait_ms)
{
    const double v[NSTAGES] = { t->decode, t->preprocess, t->engine, t->postprocess, wait_ms, t->total + wait_ms };
    pthread_mutex_lock(&mt->mu);
    for (int i = 0; i < NSTAGES; i++) histo_add(&mt->stage[i], v[i]);
    pthread_mutex_unlock(&mt->mu);
}

/* A growing text buffer; on allocation failure it stays NULL and the caller gets NULL. */
typedef struct sbuf { char *p; size_t len, cap; bool oom; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = true; return; }
        if (b->p && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *q = pvc_realloc(b->p, cap);
        if (!q) { b->oom = true; return; }
        b->p = q;
        b->cap = cap;
    }
}

char *pvsv_metrics_text(pvsv_metrics *mt, int queue_depth, int inflight, double load_s)
{
    sbuf b = { 0 };
    pthread_mutex_lock(&mt->mu);
    sb_printf(&b, "# HELP perceive_requests_total HTTP requests answered, by status code.\n"
                  "# TYPE perceive_requests_total counter\n");
    for (int i = 0; i < mt->ncodes; i++)
        sb_printf(&b, "perceive_requests_total{code=\"%u\"} %llu\n", mt->codes[i], (unsigned long long)mt->code_counts[i]);
    sb_printf(&b, "# HELP perceive_request_duration_seconds Successful /predict time per stage (wait: for a worker; "
                  "total includes the wait).\n# TYPE perceive_request_duration_seconds histogram\n");
    for (int s = 0; s < NSTAGES; s++) {
        const histo *h = &mt->stage[s];
        uint64_t cum = 0;
        for (int k = 0; k < NBUCKETS; k++) {
            cum += h->counts[k];
            sb_printf(&b, "perceive_request_duration_seconds_bucket{stage=\"%s\",le=\"%g\"} %llu\n", stage_names[s], bucket_s[k],
                      (unsigned long long)cum);
        }
        sb_printf(&b, "perceive_request_duration_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n", stage_names[s],
                  (unsigned long long)h->n);
        sb_printf(&b, "perceive_request_duration_seconds_sum{stage=\"%s\"} %.6f\n", stage_names[s], h->sum_s);
        sb_printf(&b, "perceive_request_duration_seconds_count{stage=\"%s\"} %llu\n", stage_names[s], (unsigned long long)h->n);
    }
    pthread_mutex_unlock(&mt->mu);
    sb_printf(&b, "# HELP perceive_queue_depth /predict requests admitted and waiting for a worker.\n"
                  "# TYPE perceive_queue_depth gauge\nperceive_queue_depth %d\n", queue_depth);
    sb_printf(&b, "# HELP perceive_inflight /predict requests admitted and not yet answered.\n"
                  "# TYPE perceive_inflight gauge\nperceive_inflight %d\n", inflight);
    sb_printf(&b, "# HELP perceive_model_load_seconds Time pv_model_open took.\n"
                  "# TYPE perceive_model_load_seconds gauge\nperceive_model_load_seconds %.6f\n", load_s);
    if (b.oom) { pvc_free(b.p); return NULL; }
    return b.p;
}
