/* serve/http: the libmicrohttpd daemon, request lifecycle, admission (the bounded queue), body
 * limits, the worker slots, graceful stop. Routes decode in routes.c; counters in metrics.c. */
#include "serve/serve.h"
#include "core/core.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pvsv_server {
    pv_model          *m;
    pvsv_options       o;
    char               host[64];
    struct MHD_Daemon *d;
    pvsv_metrics      *mt;
    int                port;
    double             t_start;
    pthread_mutex_t    mu;
    pthread_cond_t     cv;
    int                inflight;    /* admitted /predict requests not yet completed */
    int                waiting;     /* admitted, body read, waiting for a worker slot */
    int                running;     /* holding a worker slot */
    int                sending;     /* answered /predict requests whose reply is not yet sent */
    bool               stopping;    /* draining: /health 503, replies close their connection */
    bool               refusing;    /* drain time is over: new /predict requests get 503 */
    bool               stopped;
    struct client     *clients;     /* o.queue slots: clients with /predict requests in flight */
    uint64_t           served_tick; /* counts worker hand-outs (client_turn's order) */
};

/* A client's /predict requests in flight (admission fairness). At most `queue` clients can have
 * one, so a table of queue slots never fills. */
#define CLIENT_KEY 64
struct client { char key[CLIENT_KEY]; int n, waiting, running; uint64_t served; };

enum { ROUTE_PREDICT, ROUTE_INFO, ROUTE_HEALTH, ROUTE_METRICS, ROUTE_ASSET, ROUTE_NONE };

/* One request's state (libmicrohttpd's per-request pointer). */
typedef struct req {
    int        route;
    bool       admitted;        /* holds an inflight slot (and one of its client's) */
    bool       sending;         /* counted in s->sending until libmicrohttpd is done with it */
    char       client[CLIENT_KEY];
    bool       failed;          /* reply is an error decided while reading; the body is drained */
    bool       timed_out;       /* the body took longer than body_timeout_s: close the connection */
    double     t_begin;         /* ms, when the headers were complete */
    pvsv_reply reply;
    char      *body;
    size_t     len, cap;
} req;

pvsv_options pvsv_defaults(void)
{
    return (pvsv_options){ .host = "127.0.0.1", .port = 8080, .workers = 2, .queue = 16, .max_connections = 0, .client_queue = 0,
                           .max_conn_per_ip = 0, .drain_s = 30, .body_timeout_s = 60, .max_body_bytes = (size_t)64 << 20, .model_threads = 0,
                           .model_load_s = 0, .quiet = 0 };
}

static void free_body(void *p) { pvc_free(p); }

static enum MHD_Result send_reply(pvsv_server *s, struct MHD_Connection *c, pvsv_reply *r, const char *allow)
{
    if (!r->body) pvsv_reply_error(r, r->code ? r->code : 500, "PV_EINTERNAL", "no reply was made");
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(r->len, r->body, free_body);
    if (!resp) return MHD_NO;
    r->body = NULL;   /* the response owns it now */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type ? r->type : "application/json");
    if (allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (r->code == 503 || r->code == 429) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    pthread_mutex_lock(&s->mu);
    bool draining = s->stopping;
    pthread_mutex_unlock(&s->mu);
    /* draining: this connection brings no further request (the balancer opens a new one,
     * which is refused, and goes elsewhere) */
    if (draining) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, r->code, resp);
    MHD_destroy_response(resp);
    pvsv_metrics_request(s->mt, r->code);
    if (r->code >= 500 && !s->o.quiet) fprintf(stderr, "perceive serve: %u\n", r->code);
    return ok;
}

static int route_of(const char *url)
{
    if (!strcmp(url, "/predict")) return ROUTE_PREDICT;
    if (!strcmp(url, "/info")) return ROUTE_INFO;
    if (!strcmp(url, "/health")) return ROUTE_HEALTH;
    if (!strcmp(url, "/metrics")) return ROUTE_METRICS;
    if (pvsv_asset_find(url)) return ROUTE_ASSET;
    return ROUTE_NONE;
}

/* ---- GET routes --------------------------------------------------------------------------- */

/* The viewer's embedded files: static bytes, handed to libmicrohttpd without a copy. */
static enum MHD_Result send_asset(pvsv_server *s, struct MHD_Connection *c, const pvsv_asset *a)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(*a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    pvsv_metrics_request(s->mt, MHD_HTTP_OK);
    return ok;
}

static void do_info(pvsv_server *s, pvsv_reply *r)
{
    const char *info = pv_model_info_json(s->m);
    cJSON *o = info ? cJSON_Parse(info) : NULL;
    if (!o) { pvsv_reply_error(r, 500, "PV_EINTERNAL", "the model's info is not available"); return; }
    cJSON *sv = cJSON_AddObjectToObject(o, "server");
    if (sv) {
        cJSON_AddStringToObject(sv, "host", s->host);
        cJSON_AddNumberToObject(sv, "port", s->port);
        cJSON_AddNumberToObject(sv, "threads", s->o.model_threads);
        cJSON_AddNumberToObject(sv, "workers", s->o.workers);
        cJSON_AddNumberToObject(sv, "queue", s->o.queue);
        cJSON_AddNumberToObject(sv, "max_connections", s->o.max_connections);
        cJSON_AddNumberToObject(sv, "client_queue", s->o.client_queue);
        cJSON_AddNumberToObject(sv, "max_conn_per_ip", s->o.max_conn_per_ip);
        cJSON_AddNumberToObject(sv, "drain_s", s->o.drain_s);
        cJSON_AddNumberToObject(sv, "body_timeout_s", s->o.body_timeout_s);
        cJSON_AddNumberToObject(sv, "max_body_mb", (double)s->o.max_body_bytes / (1 << 20));
        cJSON_AddNumberToObject(sv, "model_load_s", s->o.model_load_s);
        cJSON_AddNumberToObject(sv, "uptime_s", (pvc_now_ms() - s->t_start) / 1000.0);
        cJSON_AddStringToObject(sv, "version", PV_VERSION);
        cJSON_AddBoolToObject(sv, "viewer_3d", pvsv_viewer_has_3d());
    }
    char *t = cJSON_Print(o);
    cJSON_Delete(o);
    char *body = t ? pvc_malloc(strlen(t) + 1) : NULL;
    if (body) memcpy(body, t, strlen(t) + 1);
    cJSON_free(t);
    if (!body) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory writing /info"); return; }
    pvsv_reply_text(r, 200, "application/json", body);
}

static void do_metrics(pvsv_server *s, pvsv_reply *r)
{
    pthread_mutex_lock(&s->mu);
    int waiting = s->waiting, inflight = s->inflight;
    pthread_mutex_unlock(&s->mu);
    char *t = pvsv_metrics_text(s->mt, waiting, inflight, s->o.model_load_s);
    if (!t) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory writing /metrics"); return; }
    pvsv_reply_text(r, 200, "text/plain; version=0.0.4", t);
}

/* ---- /predict ----------------------------------------------------------------------------- */

typedef struct query_ctx { pvsv_kv kv[PVSV_MAX_QUERY]; int n; bool over; } query_ctx;

static enum MHD_Result query_item(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    query_ctx *q = cls;
    if (q->n >= PVSV_MAX_QUERY) { q->over = true; return MHD_NO; }
    q->kv[q->n++] = (pvsv_kv){ key, value };
    return MHD_YES;
}

/* The client a request counts against: X-Perceive-Client (set by the balancer), else the peer. */
static void client_key(struct MHD_Connection *c, char key[CLIENT_KEY])
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Perceive-Client");
    if (h && *h) { snprintf(key, CLIENT_KEY, "%s", h); return; }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(key, CLIENT_KEY, "?");
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, key, CLIENT_KEY);
}

/* key's slot, or a free one (n == 0) for it. Called with s->mu held; never NULL (see struct client). */
static struct client *client_find(pvsv_server *s, const char *key)
{
    struct client *free_slot = NULL;
    for (int i = 0; i < s->o.queue; i++) {
        struct client *e = &s->clients[i];
        if (e->n && !strcmp(e->key, key)) return e;
        if (!e->n && !free_slot) free_slot = e;
    }
    return free_slot;
}

/* Whether a waiting request of `who` may take a free worker now: no other waiting client has
 * fewer requests running, or as many and was served longer ago; so workers rotate between
 * clients and one with many requests queued cannot push a polite one back. s->mu held. */
static bool client_turn(const pvsv_server *s, const struct client *who)
{
    for (int i = 0; i < s->o.queue; i++) {
        const struct client *e = &s->clients[i];
        if (e == who || !e->n || !e->waiting) continue;
        if (e->running < who->running || (e->running == who->running && e->served < who->served)) return false;
    }
    return true;
}

/* Admission, s->mu held: 0, or the refusal's code (503: stopping or the queue is full, 429: the
 * client has client_queue requests in flight). take: claim the slot (the body has arrived). */
static unsigned admit_locked(pvsv_server *s, const char *key, bool take)
{
    if (s->refusing || s->inflight >= s->o.queue) return 503;
    struct client *who = client_find(s, key);
    if (who->n >= s->o.client_queue) return 429;
    if (take) {
        if (!who->n) { snprintf(who->key, sizeof who->key, "%s", key); who->waiting = who->running = 0; who->served = 0; }
        who->n++;
        s->inflight++;
    }
    return 0;
}

static void refuse(pvsv_server *s, req *rq, unsigned code)
{
    if (code == 429)
        pvsv_reply_error(&rq->reply, 429, "PV_EBUSY", "client '%.64s' already has %d /predict requests in flight (--client-queue); "
                         "retry later", rq->client, s->o.client_queue);
    else if (s->refusing) pvsv_reply_error(&rq->reply, 503, "PV_EBUSY", "the server is stopping");
    else pvsv_reply_error(&rq->reply, 503, "PV_EBUSY", "queue full: %d /predict requests in flight (--queue); retry later", s->o.queue);
    rq->failed = true;
}

static void do_predict(pvsv_server *s, struct MHD_Connection *c, req *rq)
{
    pvsv_reply *r = &rq->reply;
    query_ctx q = { .n = 0 };
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_item, &q);
    if (q.over) { pvsv_reply_error(r, 400, "PV_EINPUT", "query: more than %d parameters", PVSV_MAX_QUERY); return; }
    /* the stream key nginx hashes on may come as a header; the query's stream.id wins */
    const char *hs = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Perceive-Stream");
    bool has_id = false;
    for (int i = 0; i < q.n; i++) has_id |= !strcmp(q.kv[i].key, "stream.id");
    if (hs && *hs && !has_id) {
        if (q.n >= PVSV_MAX_QUERY) { pvsv_reply_error(r, 400, "PV_EINPUT", "query: more than %d parameters", PVSV_MAX_QUERY); return; }
        q.kv[q.n++] = (pvsv_kv){ "stream.id", hs };
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    pvsv_predict *p = pvc_malloc(sizeof *p);
    if (!p) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory for the request"); return; }
    pv_result *res = NULL;
    if (!pvsv_predict_parse(p, ct, q.kv, q.n, rq->body ? rq->body : "", rq->len, r)) goto done;
    /* a bad file is refused before it waits for a worker */
    for (int i = 0; i < p->n_in; i++) {
        pv_status st = pv_input_validate_for(pv_model_bundle(s->m), &p->in[i]);
        if (st != PV_OK) { pvsv_reply_error(r, pvsv_http_code(st), pvsv_status_name(st), "%s", pv_last_error()); goto done; }
    }
    double t0 = pvc_now_ms();
    pthread_mutex_lock(&s->mu);
    struct client *who = client_find(s, rq->client);   /* ours: admitted, so n > 0 until completed */
    s->waiting++;
    who->waiting++;
    while (s->running >= s->o.workers || !client_turn(s, who)) pthread_cond_wait(&s->cv, &s->mu);
    s->waiting--;
    who->waiting--;
    s->running++;
    who->running++;
    who->served = ++s->served_tick;
    pthread_mutex_unlock(&s->mu);
    double wait_ms = pvc_now_ms() - t0;
    pv_status st = pv_model_run(s->m, p->in, p->n_in, p->params, p->n_params, &res);
    char msg[PVC_MSG_LEN];
    if (st != PV_OK) snprintf(msg, sizeof msg, "%s", pv_model_errmsg(s->m));
    pthread_mutex_lock(&s->mu);
    s->running--;
    who->running--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (st != PV_OK) { pvsv_reply_error(r, pvsv_http_code(st), pvsv_status_name(st), "%s", msg); goto done; }
    const char *json = p->stable ? pv_result_json_stable(res) : pv_result_json(res);
    size_t n = json ? strlen(json) : 0;
    char *body = json ? pvc_malloc(n + 1) : NULL;
    if (!body) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory for the response"); goto done; }
    memcpy(body, json, n + 1);
    pvsv_reply_text(r, 200, "application/json", body);
    pv_timing t;
    pv_result_timing(res, &t);
    pvsv_metrics_timing(s->mt, &t, wait_ms);
done:
    pv_result_free(res);
    pvsv_predict_free(p);
    pvc_free(p);
}

/* First call of a /predict request (headers only): stopping, declared size, admission. */
static void predict_begin(pvsv_server *s, struct MHD_Connection *c, req *rq)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = 0;
    if (cl) {
        char *end;
        declared = strtoull(cl, &end, 10);
        if (end == cl || *end) declared = 0;   /* libmicrohttpd has already refused a malformed one */
    }
    if (declared > s->o.max_body_bytes) {
        pvsv_reply_error(&rq->reply, 413, "PV_EINPUT", "body of %llu bytes (Content-Length) is over the limit of %zu bytes (--max-body-mb)",
                         declared, s->o.max_body_bytes);
        rq->failed = true;
        return;
    }
    /* refused early when it would be refused once its body is in; the slot itself is taken
     * then (pvsv_admit), so a client trickling its body holds no slot meanwhile */
    client_key(c, rq->client);
    rq->t_begin = pvc_now_ms();
    pthread_mutex_lock(&s->mu);
    unsigned code = admit_locked(s, rq->client, false);
    pthread_mutex_unlock(&s->mu);
    if (code) { refuse(s, rq, code); return; }
    if (declared) {
        /* what has been declared is not yet sent: at most 1 MiB up front, the rest as it comes */
        size_t cap = (size_t)PVC_MIN(declared, 1ull << 20) + 1;
        rq->body = pvc_malloc(cap);
        if (!rq->body) { pvsv_reply_error(&rq->reply, 500, "PV_ENOMEM", "out of memory for a %llu-byte body", declared); rq->failed = true; return; }
        rq->cap = cap;
    }
}

/* Body bytes: stored while within the limit, drained after a failure. */
static void predict_data(pvsv_server *s, req *rq, const char *data, size_t n)
{
    if (rq->failed) return;
    if (s->o.body_timeout_s > 0 && pvc_now_ms() - rq->t_begin > s->o.body_timeout_s * 1000) {
        rq->timed_out = true;   /* the connection is closed: a trickling client gets no reply */
        return;
    }
    if (n > s->o.max_body_bytes - rq->len) {
        pvsv_reply_error(&rq->reply, 413, "PV_EINPUT", "body is over the limit of %zu bytes (--max-body-mb)", s->o.max_body_bytes);
        rq->failed = true;
        pvc_free(rq->body);
        rq->body = NULL;
        rq->len = rq->cap = 0;
        return;
    }
    if (rq->len + n + 1 > rq->cap) {
        size_t cap = rq->cap ? rq->cap : 65536;
        while (cap < rq->len + n + 1) cap *= 2;
        char *b = pvc_realloc(rq->body, cap);
        if (!b) { pvsv_reply_error(&rq->reply, 500, "PV_ENOMEM", "out of memory reading the body"); rq->failed = true; return; }
        rq->body = b;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
}

/* Gives back an admitted request's slot (and its client's). */
static void release(pvsv_server *s, req *rq)
{
    if (!rq->admitted) return;
    pthread_mutex_lock(&s->mu);
    struct client *cl = client_find(s, rq->client);
    if (cl && cl->n && !strcmp(cl->key, rq->client)) cl->n--;
    s->inflight--;
    rq->admitted = false;
    rq->sending = true;   /* pvsv_stop must not close the connection under the reply */
    s->sending++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    pvsv_server *s = cls;
    req *rq = *con_cls;
    if (!rq) {
        rq = pvc_calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        *con_cls = rq;
        rq->route = route_of(url);
        bool post = !strcmp(method, MHD_HTTP_METHOD_POST), get = !strcmp(method, MHD_HTTP_METHOD_GET);
        if (rq->route == ROUTE_NONE) {
            pvsv_reply_error(&rq->reply, 404, "PV_EINPUT", "no such path: %.100s (POST /predict, GET /, /info, /health, /metrics)", url);
            return send_reply(s, c, &rq->reply, NULL);
        }
        if (rq->route == ROUTE_PREDICT ? !post : !get) {
            const char *allow = rq->route == ROUTE_PREDICT ? "POST" : "GET";
            pvsv_reply_error(&rq->reply, 405, "PV_EINPUT", "%.16s %.100s: method not allowed (use %s)", method, url, allow);
            return send_reply(s, c, &rq->reply, allow);
        }
        if (rq->route == ROUTE_PREDICT) {
            predict_begin(s, c, rq);
            /* refused before the body is read: answered now (no 100 Continue) */
            if (rq->failed) return send_reply(s, c, &rq->reply, NULL);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (rq->route == ROUTE_PREDICT) predict_data(s, rq, upload_data, *upload_size);
        *upload_size = 0;
        return rq->timed_out ? MHD_NO : MHD_YES;
    }
    if (rq->route == ROUTE_PREDICT && !rq->failed) {
        pthread_mutex_lock(&s->mu);
        unsigned code = admit_locked(s, rq->client, true);
        pthread_mutex_unlock(&s->mu);
        if (code) refuse(s, rq, code);
        else rq->admitted = true;
    }
    if (!rq->failed) {
        if (rq->route == ROUTE_ASSET) return send_asset(s, c, pvsv_asset_find(url));
        if (rq->route == ROUTE_PREDICT) {
            do_predict(s, c, rq);
            release(s, rq);   /* before the reply leaves: a client that has it sees the slot free */
        }
        else if (rq->route == ROUTE_INFO) do_info(s, &rq->reply);
        else if (rq->route == ROUTE_METRICS) do_metrics(s, &rq->reply);
        else {
            pthread_mutex_lock(&s->mu);
            bool draining = s->stopping;
            pthread_mutex_unlock(&s->mu);
            /* draining: a balancer with health checks stops sending here */
            const char *text = draining ? "{\"status\":\"draining\"}" : "{\"status\":\"ok\"}";
            char *b = pvc_malloc(strlen(text) + 1);
            if (b) { memcpy(b, text, strlen(text) + 1); pvsv_reply_text(&rq->reply, draining ? 503 : 200, "application/json", b); }
            else pvsv_reply_error(&rq->reply, 500, "PV_ENOMEM", "out of memory");
        }
    }
    return send_reply(s, c, &rq->reply, NULL);
}

/* libmicrohttpd is done with a request (answered, or the client went away). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    pvsv_server *s = cls;
    req *rq = *con_cls;
    if (!rq) return;
    release(s, rq);
    if (rq->sending) {
        pthread_mutex_lock(&s->mu);
        s->sending--;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    pvc_free(rq->body);
    pvc_free(rq->reply.body);
    pvc_free(rq);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    pvsv_server *s = cls;
    if (s->o.quiet) return;
    fputs("perceive serve: libmicrohttpd: ", stderr);
    vfprintf(stderr, fmt, ap);
}

pv_status pvsv_start(pv_model *m, const pvsv_options *opt, pvsv_server **out)
{
    if (!out) return pvc_fail(NULL, PV_EINPUT, "pvsv_start: out is NULL");
    *out = NULL;
    if (!m) return pvc_fail(NULL, PV_EINPUT, "pvsv_start: model is NULL");
    pvsv_options o = opt ? *opt : pvsv_defaults();
    if (!o.host || !*o.host) o.host = "127.0.0.1";
    if (o.port < 0 || o.port > 65535) return pvc_fail(NULL, PV_EINPUT, "port: %d is out of range [0, 65535]", o.port);
    if (o.workers < 1 || o.workers > 256) return pvc_fail(NULL, PV_EINPUT, "workers: %d is out of range [1, 256]", o.workers);
    if (o.queue < 1 || o.queue > 100000) return pvc_fail(NULL, PV_EINPUT, "queue: %d is out of range [1, 100000]", o.queue);
    if (o.max_body_bytes < 1) return pvc_fail(NULL, PV_EINPUT, "max_body_bytes: 0");
    if (o.max_connections == 0) o.max_connections = o.queue + o.workers + 1024;
    if (o.client_queue == 0) o.client_queue = o.queue > 1 ? (o.queue + 1) / 2 : 1;
    if (o.client_queue < 1 || o.client_queue > o.queue)
        return pvc_fail(NULL, PV_EINPUT, "client_queue: %d is out of range [1, queue = %d]", o.client_queue, o.queue);
    if (o.max_conn_per_ip < 0 || o.max_conn_per_ip > 65536)
        return pvc_fail(NULL, PV_EINPUT, "max_conn_per_ip: %d is out of range [0, 65536]", o.max_conn_per_ip);
    if (!(o.body_timeout_s >= 0 && o.body_timeout_s <= 86400))
        return pvc_fail(NULL, PV_EINPUT, "body_timeout_s: %g is out of range [0, 86400]", o.body_timeout_s);
    if (!(o.drain_s >= 0 && o.drain_s <= 3600)) return pvc_fail(NULL, PV_EINPUT, "drain_s: %g is out of range [0, 3600]", o.drain_s);
    if (o.max_connections < 1 || o.max_connections > 65536)
        return pvc_fail(NULL, PV_EINPUT, "max_connections: %d is out of range [1, 65536]", o.max_connections);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o.port);
    if (inet_pton(AF_INET, o.host, &sa.sin_addr) != 1)
        return pvc_fail(NULL, PV_EINPUT, "host: '%.64s' is not a numeric IPv4 address", o.host);
    pvsv_server *s = pvc_calloc(1, sizeof *s);
    if (!s) return pvc_fail(NULL, PV_ENOMEM, "out of memory starting the server");
    s->m = m;
    s->o = o;
    snprintf(s->host, sizeof s->host, "%s", o.host);
    s->o.host = s->host;
    s->mt = pvsv_metrics_create();
    s->clients = pvc_calloc((size_t)o.queue, sizeof *s->clients);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (!s->mt || !s->clients) { pvsv_free(s); return pvc_fail(NULL, PV_ENOMEM, "out of memory starting the server"); }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    s->t_start = pvc_now_ms();
    s->d = MHD_start_daemon(flags, (uint16_t)o.port, NULL, NULL, on_request, s,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o.max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)256,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o.max_conn_per_ip,
                            MHD_OPTION_END);
    if (!s->d) {
        s->stopped = true;
        pvsv_free(s);
        return pvc_fail(NULL, PV_EINTERNAL, "cannot listen on %s:%d (in use, or not an address of this host)", o.host, o.port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : o.port;
    *out = s;
    return PV_OK;
}

int pvsv_port(const pvsv_server *s) { return s ? s->port : -1; }

void pvsv_stop(pvsv_server *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    bool done = s->stopped;
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    if (done || !s->d) return;
    /* No new connections: closing the socket now (not at the end) makes a connect fail at once
     * instead of waiting in the backlog, so a balancer retries elsewhere with nothing sent. */
    MHD_socket lsock = MHD_quiesce_daemon(s->d);
    if (lsock != MHD_INVALID_SOCKET) close(lsock);
    /* Open connections may still bring requests (served, then closed) until none is left or the
     * drain time is over; after that new requests get 503 and those in flight finish. */
    double until = pvc_now_ms() + s->o.drain_s * 1000;
    for (;;) {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        pthread_mutex_lock(&s->mu);
        bool idle = s->inflight == 0 && (!di || di->num_connections == 0);
        pthread_mutex_unlock(&s->mu);
        if (idle || pvc_now_ms() >= until) break;
        usleep(20000);
    }
    pthread_mutex_lock(&s->mu);
    s->refusing = true;
    while (s->inflight > 0 || s->sending > 0) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->d);
    s->d = NULL;
    pthread_mutex_lock(&s->mu);
    s->stopped = true;
    pthread_mutex_unlock(&s->mu);
}

void pvsv_free(pvsv_server *s)
{
    if (!s) return;
    pvsv_stop(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pvsv_metrics_free(s->mt);
    pvc_free(s->clients);
    pvc_free(s);
}
