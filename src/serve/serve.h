/* serve: the HTTP server of `perceive serve` (libmicrohttpd). Prefix pvsv_.
 *
 * A thin caller of the public model API (include/perceive.h): one opened pv_model, shared by
 * every request. Example (serve until told to stop):
 *
 *     pv_model *m;  pv_model_open("bevfusion", NULL, &m);
 *     pvsv_options o = pvsv_defaults();
 *     o.port = 0;                                  // ephemeral: ask pvsv_port
 *     pvsv_server *s;
 *     if (pvsv_start(m, &o, &s) != PV_OK) { fprintf(stderr, "%s\n", pv_last_error()); return 1; }
 *     printf("listening on %d\n", pvsv_port(s));
 *     ... wait for SIGTERM ...
 *     pvsv_stop(s);                                // stop accepting, finish in-flight requests
 *     pvsv_free(s);
 *     pv_model_close(m);
 *
 * Endpoints
 *   POST /predict  body = the model's main input as a file: a point cloud (Content-Type
 *                  application/x-pcd, application/x-npy, application/x-npz, application/x-kitti,
 *                  application/x-nuscenes, application/x-f16x5) for bevfusion, an image
 *                  (image/jpeg, image/png) for hamer, or application/octet-stream with ?format=;
 *                  or application/json {"points" | "image" | "crop": {"format", "data" (base64),
 *                  "array", "ncols"}, "sweeps": [{"format", "data", "time_lag_s",
 *                  "T_current_from_sweep"}...], "params": {key: string | number | bool |
 *                  [numbers] | [[numbers]...]}, other keys: params too (hamer's "box":
 *                  [[x1, y1, x2, y2, is_right]...])}; an array of rows becomes "a,b;c,d".
 *                  ?format= overrides the type; ?timing=0 returns pv_result_json_stable; every
 *                  other query key is a runtime param (pv_param; repeat box= for several hands).
 *                  200: pv_result_json.
 *   GET /info      pv_model_info_json + "server" {threads, workers, queue, max_body_mb, uptime_s}
 *   GET /health    {"status":"ok"}; 503 {"status":"draining"} once pvsv_stop has begun
 *   GET /metrics   Prometheus text (requests by code, stage histograms, queue depth, inflight,
 *                  model load time)
 *   GET /          the viewer page (web/index.html): upload a file, see the result; GET
 *                  /viewer/<file> its script, style sheet and three.js (viewer.c)
 * Errors: {"error": message, "status": name}; 400 bad input (PV_EINPUT, PV_EFORMAT), 404, 405,
 * 413 body over max_body_bytes (from Content-Length before reading, and while reading), 415
 * unknown format or content type (PV_EUNSUPPORTED), 429 (+ Retry-After) the client already has
 * client_queue /predict requests in flight, 503 (+ Retry-After) more than `queue` /predict
 * requests in flight (both answered before the body is read), 500 only for PV_EINTERNAL /
 * PV_ENOMEM.
 * Streams: the X-Perceive-Stream header is the stream.id param when the query has none.
 *
 * Concurrency: libmicrohttpd runs one thread per connection (at most max_connections); a
 * /predict request is checked for admission at its headers (refused before its body is read)
 * and holds an admission slot (of `queue`, at most client_queue per client) from its complete
 * body to its response, so slow uploads hold none; it runs the model while holding one of
 * `workers` worker slots, given in turn to the waiting clients with the fewest running (fair
 * between clients), so pre-processing of one request can overlap another's engine stage
 * inside pv_model_run.
 */
#ifndef PVSV_SERVE_H
#define PVSV_SERVE_H

#include "perceive.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pvsv_options {
    const char *host;            /* numeric IPv4 address to bind ("127.0.0.1") */
    int         port;            /* 0: ephemeral (see pvsv_port) */
    int         workers;         /* concurrent pv_model_run calls (>= 1) */
    int         queue;           /* /predict requests in flight (waiting + running) before 503 */
    int         max_connections; /* open connections (0: queue + workers + 1024, so that hundreds of
                                  * slow clients cannot lock /health out) */
    int         client_queue;    /* /predict requests one client may have in flight before 429
                                  * (0: half the queue, at least 1); the client is the
                                  * X-Perceive-Client header (nginx sets it) or the peer address */
    int         max_conn_per_ip; /* open connections from one address (0: no limit) */
    double      drain_s;         /* pvsv_stop: how long open connections may still bring requests */
    double      body_timeout_s;  /* a /predict body must arrive within this long after its headers,
                                  * however it trickles (0: no limit); else the connection closes */
    size_t      max_body_bytes;  /* request body limit (413 above) */
    int         model_threads;   /* reported in /info: the threads the model was opened with */
    double      model_load_s;    /* reported in /info and /metrics */
    int         quiet;           /* 1: no log lines on stderr */
} pvsv_options;

typedef struct pvsv_server pvsv_server;

pvsv_options pvsv_defaults(void);

/* Starts serving m (borrowed: it must outlive the server). PV_EINPUT for bad options (the
 * message names the option), PV_EINTERNAL with the reason when the socket cannot be bound. */
pv_status pvsv_start(pv_model *m, const pvsv_options *opt, pvsv_server **out);
int       pvsv_port(const pvsv_server *s);
/* Graceful stop (drain, for rolling restarts behind a balancer): the listening socket is closed
 * at once (new connections are refused, so a balancer tries another replica with nothing sent),
 * /health answers 503 "draining"; requests on connections already open are still served, each
 * answered with Connection: close; once no request is in flight and no connection is open (or
 * drain_s has passed, after which new requests get 503), in-flight requests finish and the
 * daemon stops. Idempotent. */
void      pvsv_stop(pvsv_server *s);
void      pvsv_free(pvsv_server *s);   /* stops first if needed; accepts NULL */

/* ---- internals shared by http.c, routes.c, metrics.c -------------------------------------- */

/* A reply: status code, content type, body (pvc-allocated, owned by the reply). */
typedef struct pvsv_reply {
    unsigned    code;
    const char *type;
    char       *body;
    size_t      len;
} pvsv_reply;

/* {"error": msg, "status": name} with code. Never fails (falls back to a static body). */
void pvsv_reply_error(pvsv_reply *r, unsigned code, const char *status_name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Takes text (pvc-allocated) as the body. */
void pvsv_reply_text(pvsv_reply *r, unsigned code, const char *type, char *text);
/* HTTP code for a pv_status, and the status name used in error bodies. */
unsigned    pvsv_http_code(pv_status s);
const char *pvsv_status_name(pv_status s);

/* Query key/value pairs of a request (URL-decoded, borrowed from the connection). */
typedef struct pvsv_kv { const char *key, *value; } pvsv_kv;
#define PVSV_MAX_QUERY 64

/* A decoded /predict request: inputs and params point into the body, the query or `own`. */
#define PVSV_MAX_INPUTS 17
#define PVSV_MAX_PARAMS 128
typedef struct pvsv_predict {
    pv_input in[PVSV_MAX_INPUTS];
    int      n_in;
    pv_param params[PVSV_MAX_PARAMS];
    int      n_params;
    bool     stable;          /* ?timing=0 */
    void    *own[4 * PVSV_MAX_INPUTS + 2 * PVSV_MAX_PARAMS]; /* decoded buffers and strings */
    int      n_own;
} pvsv_predict;

/* Builds the request from content type (may be NULL), query and body. On failure fills r with
 * the 4xx error and returns false. pvsv_predict_free releases it either way. */
bool pvsv_predict_parse(pvsv_predict *p, const char *content_type, const pvsv_kv *query, int nq,
                        const void *body, size_t len, pvsv_reply *r);
void pvsv_predict_free(pvsv_predict *p);

/* Strict base64 (RFC 4648, padding optional, white space skipped): pvc-allocated bytes. */
pv_status pvsv_base64_decode(const char *s, size_t n, unsigned char **out, size_t *out_len, char *err, size_t errlen);

/* The viewer page (GET /) and its scripts, embedded at build time (viewer.c). `len` points at
 * the generated array's size. pvsv_asset_find: the asset served at url ("/" is the page), or
 * NULL. pvsv_viewer_has_3d: whether three.js was embedded. */
typedef struct pvsv_asset {
    const char          *path, *type;
    const unsigned char *data;
    const size_t        *len;
} pvsv_asset;
const pvsv_asset *pvsv_asset_find(const char *url);
bool              pvsv_viewer_has_3d(void);

/* Metrics (one set per server). */
typedef struct pvsv_metrics pvsv_metrics;
pvsv_metrics *pvsv_metrics_create(void);
void          pvsv_metrics_free(pvsv_metrics *mt);
void          pvsv_metrics_request(pvsv_metrics *mt, unsigned code);
/* Stage times of a successful run (ms, from pv_result_timing) and the server's wait (ms). */
void          pvsv_metrics_timing(pvsv_metrics *mt, const pv_timing *t, double wait_ms);
/* Prometheus text exposition (pvc-allocated). */
char         *pvsv_metrics_text(pvsv_metrics *mt, int queue_depth, int inflight, double load_s);

#endif
