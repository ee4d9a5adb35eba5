/* `perceive serve` over loopback with a real client (libcurl):
 *   serve_test PERCEIVE_BIN SOURCE_DIR
 * In-process (pvsv_start on an ephemeral port, the model opened once): every endpoint, /predict
 * byte-identical to pv_model_run's stable JSON (raw and JSON+base64 bodies), > 100 malformed
 * requests each answered 4xx with a message while the server stays up, the bounded queue (503),
 * concurrent clients on interleaved streams. Child process (`perceive serve`): SIGTERM with
 * requests in flight (they complete with 200, exit status 0).
 * Needs PERCEIVE_CACHE_DIR (the generated model lands there on first use). */
#include "perceive.h"
#include "serve/serve.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static const char *src_dir;
static pv_model *model;

/* ---- client --------------------------------------------------------------------------------- */

typedef struct buf { char *p; size_t n; } buf;

static size_t on_body(char *d, size_t sz, size_t nm, void *ud)
{
    buf *b = ud;
    size_t n = sz * nm;
    char *q = realloc(b->p, b->n + n + 1);
    if (!q) return 0;
    memcpy(q + b->n, d, n);
    b->p = q;
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

typedef struct resp { long code; buf body; } resp;

/* One request; headers is a NULL-terminated list (may be NULL). body NULL: GET (or method). */
static resp http(int port, const char *method, const char *path, const char *const *headers, const void *body, size_t len)
{
    resp r = { 0, { NULL, 0 } };
    CURL *c = curl_easy_init();
    char url[4096];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    struct curl_slist *hl = NULL;
    for (int i = 0; headers && headers[i]; i++) hl = curl_slist_append(hl, headers[i]);
    /* small bodies go without the 100-continue round trip; large ones keep curl's default, so a
     * refusal from the headers (413, 503) arrives before the body is sent */
    if (len <= ((size_t)1 << 20)) hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (method) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (curl_easy_perform(c) != CURLE_OK) r.code = -1;
    else curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (!r.body.p) r.body.p = calloc(1, 1);
    return r;
}

static resp post(int port, const char *path, const char *ctype, const void *body, size_t len)
{
    char h[256];
    snprintf(h, sizeof h, "Content-Type: %s", ctype);
    const char *hs[] = { ctype ? h : "Content-Type:", NULL };
    return http(port, NULL, path, hs, body, len);
}

static void *read_file(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", src_dir, rel);
    FILE *f = fopen(path, "rb");
    if (!f) { printf("cannot open %s\n", path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { printf("cannot read %s\n", path); exit(1); }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static char *b64(const void *data, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = data;
    char *o = malloc(n / 3 * 4 + 8), *p = o;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *p++ = a[v >> 18]; *p++ = a[v >> 12 & 63]; *p++ = a[v >> 6 & 63]; *p++ = a[v & 63];
    }
    if (n - i == 1) { uint32_t v = (uint32_t)s[i] << 16; *p++ = a[v >> 18]; *p++ = a[v >> 12 & 63]; *p++ = '='; *p++ = '='; }
    if (n - i == 2) { uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8; *p++ = a[v >> 18]; *p++ = a[v >> 12 & 63]; *p++ = a[v >> 6 & 63]; *p++ = '='; }
    *p = 0;
    return o;
}

/* A JSON error body with a non-empty message. */
static bool is_error_json(const char *body)
{
    cJSON *o = cJSON_Parse(body);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error"), *s = cJSON_GetObjectItemCaseSensitive(o, "status");
    bool ok = cJSON_IsString(e) && e->valuestring[0] && cJSON_IsString(s) && s->valuestring[0];
    cJSON_Delete(o);
    return ok;
}

static long metric(int port, const char *name)
{
    resp r = http(port, NULL, "/metrics", NULL, NULL, 0);
    long v = -1;
    const char *p = r.body.p;
    size_t n = strlen(name);
    while (p && (p = strstr(p, name))) {
        if ((p == r.body.p || p[-1] == '\n') && p[n] == ' ') { v = strtol(p + n + 1, NULL, 10); break; }
        p += n;
    }
    free(r.body.p);
    return v;
}

/* ---- the model in-process ------------------------------------------------------------------- */

static char *run_stable(const pv_input *in, int n_in, const pv_param *p, int np)
{
    pv_result *r = NULL;
    if (pv_model_run(model, in, n_in, p, np, &r) != PV_OK) { printf("pv_model_run: %s\n", pv_last_error()); return NULL; }
    char *s = strdup(pv_result_json_stable(r));
    pv_result_free(r);
    return s;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_endpoints(int port)
{
    resp r = http(port, NULL, "/health", NULL, NULL, 0);
    CHECK(r.code == 200 && !strcmp(r.body.p, "{\"status\":\"ok\"}"), "/health: %ld %s", r.code, r.body.p);
    free(r.body.p);
    r = http(port, NULL, "/info", NULL, NULL, 0);
    cJSON *o = cJSON_Parse(r.body.p);
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(o, "server");
    CHECK(r.code == 200 && cJSON_GetObjectItemCaseSensitive(o, "model") && cJSON_GetObjectItemCaseSensitive(o, "artifacts") &&
          cJSON_GetObjectItemCaseSensitive(sv, "workers") && cJSON_GetObjectItemCaseSensitive(sv, "queue") &&
          cJSON_GetObjectItemCaseSensitive(sv, "uptime_s") && cJSON_GetObjectItemCaseSensitive(sv, "threads"),
          "/info: %ld %.300s", r.code, r.body.p);
    cJSON_Delete(o);
    free(r.body.p);
    r = http(port, NULL, "/metrics", NULL, NULL, 0);
    CHECK(r.code == 200 && strstr(r.body.p, "perceive_requests_total{code=\"200\"}") &&
          strstr(r.body.p, "# TYPE perceive_request_duration_seconds histogram") &&
          strstr(r.body.p, "perceive_request_duration_seconds_bucket{stage=\"engine\",le=\"+Inf\"}") &&
          strstr(r.body.p, "perceive_queue_depth 0") && strstr(r.body.p, "perceive_inflight 0") &&
          strstr(r.body.p, "perceive_model_load_seconds"), "/metrics: %ld %.4000s", r.code, r.body.p);
    free(r.body.p);
    /* the viewer page and its script are embedded (the browser test drives them: tests/serve/viewer_test.sh) */
    r = http(port, NULL, "/", NULL, NULL, 0);
    CHECK(r.code == 200 && r.body.p && strstr(r.body.p, "<!doctype html>") && strstr(r.body.p, "/viewer/viewer.js"),
          "GET /: %ld %.200s", r.code, r.body.p ? r.body.p : "");
    free(r.body.p);
    r = http(port, NULL, "/viewer/viewer.js", NULL, NULL, 0);
    CHECK(r.code == 200 && r.body.p && strstr(r.body.p, "renderers"), "GET /viewer/viewer.js: %ld", r.code);
    free(r.body.p);
    r = http(port, NULL, "/viewer/meteor.js", NULL, NULL, 0);   /* viewer.js imports it */
    CHECK(r.code == 200 && r.body.p && strstr(r.body.p, "meteorRenderer"), "GET /viewer/meteor.js: %ld", r.code);
    free(r.body.p);
    struct { const char *method, *path; long code; } cases[] = {
        { "GET", "/predict", 405 }, { "PUT", "/predict", 405 }, { "POST", "/health", 405 }, { "DELETE", "/info", 405 },
        { "GET", "/nope", 404 }, { "GET", "/predict/", 404 }, { "GET", "/viewer/nope.js", 404 },
        { "POST", "/", 405 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = http(port, cases[i].method, cases[i].path, NULL, NULL, 0);
        CHECK(r.code == cases[i].code && is_error_json(r.body.p), "%s %s: %ld %s", cases[i].method, cases[i].path, r.code, r.body.p);
        free(r.body.p);
    }
}

static void test_identity(int port)
{
    size_t n;
    void *pcd = read_file("tests/fixtures/bevfusion/scene/scene_000.pcd", &n);
    pv_input in = { .name = "points", .format = "pcd", .data = pcd, .len = n };
    pv_param prm[] = { { "score_threshold", "0.15" } };
    char *want = run_stable(&in, 1, prm, 1);
    CHECK(want != NULL, "in-process run");
    resp r = post(port, "/predict?timing=0&score_threshold=0.15", "application/x-pcd", pcd, n);
    CHECK(r.code == 200 && want && !strcmp(r.body.p, want), "raw /predict?timing=0 differs from pv_result_json_stable (%ld, %zu vs %zu bytes)",
          r.code, r.body.n, want ? strlen(want) : 0);
    free(r.body.p);
    /* the same frame as JSON + base64; the default reply carries timing_ms and the same objects */
    char *d = b64(pcd, n);
    size_t jl = strlen(d) + 200;
    char *j = malloc(jl);
    snprintf(j, jl, "{\"points\": {\"format\": \"pcd\", \"data\": \"%s\"}, \"params\": {\"score_threshold\": 0.15}}", d);
    r = post(port, "/predict", "application/json; charset=utf-8", j, strlen(j));
    const char *tm = strstr(r.body.p, "\"timing_ms\"");
    CHECK(r.code == 200 && tm && want && !strncmp(r.body.p, want, (size_t)(strstr(want, "\n}") ? strstr(want, "\n}") - want : 0)),
          "JSON /predict: %ld, timing_ms %s", r.code, tm ? "present" : "missing");
    free(r.body.p);
    free(j);
    free(d);
    free(want);
    free(pcd);
}

static bool wait_metric(int port, const char *name, long want, bool at_least);

typedef struct mcase { const char *path, *ctype; const void *body; size_t len; const char *extra_header; bool json_reply; } mcase;

static int nmalformed;

static void expect_4xx(int port, const mcase *m, const char *what)
{
    char h[256];
    snprintf(h, sizeof h, "Content-Type: %s", m->ctype ? m->ctype : "");
    const char *hs[] = { m->ctype ? h : "Content-Type:", m->extra_header, NULL };
    resp r = http(port, NULL, m->path, hs, m->body ? m->body : "", m->len);
    bool ok = r.code >= 400 && r.code < 500 && r.code != 404 && r.code != 405 && r.body.n > 0 &&
              (!m->json_reply || is_error_json(r.body.p));
    CHECK(ok, "malformed '%s' (%s): %ld %.300s", what, m->path, r.code, r.body.p);
    if (getenv("PV_SERVE_VERBOSE")) printf("  %ld %-40s %.150s\n", r.code, what, r.body.p);
    free(r.body.p);
    nmalformed++;
}

#define M(path, ctype, body, len, what) do { mcase m_ = { path, ctype, body, len, NULL, true }; expect_4xx(port, &m_, what); } while (0)

/* A tiny valid KITTI cloud (4 points) for the param cases: refused before any compute. */
static const float tiny[16] = { 1, 2, 0, 0.5f, 3, 4, 0, 0.5f, 5, 6, 0.5f, 0.5f, -7, 8, 0, 0.5f };
#define POSE "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1"

static void malformed_params(int port)
{
    static const char *const q[] = {
        "no_such_param=1", "score_threshold=abc", "score_threshold=-1", "score_threshold=nan", "score_threshold=inf",
        "score_threshold=", "score_threshold=0.3.4", "score_threshold=1e999", "circle_nms_dist_threshold=x",
        "T_base_from_sensor=1,2,3", "T_base_from_sensor=nan,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1",
        "T_base_from_sensor=inf,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1", "T_base_from_sensor=" POSE ",1",
        "timing=2", "timing=yes", "time_lag_column=99", "time_lag_column=x", "time_lag_column=-5",
        "sweep.0.time_lag_s=0.1", "sweep.x.time_lag_s=1", "sweep.0.nope=1", "sweep.99.time_lag_s=1",
        "stream.foo=1", "stream.reset=maybe", "stream.timestamp_s=1",
        "stream.id=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        "&stream.timestamp_s=1&stream.T_world_from_ego=" POSE,
        "stream.id=%01bad&stream.timestamp_s=1&stream.T_world_from_ego=" POSE,
        "stream.id=&stream.timestamp_s=1&stream.T_world_from_ego=" POSE,
        "stream.id=a%20b%0A&stream.timestamp_s=1&stream.T_world_from_ego=" POSE,
        "stream.id=s1&stream.timestamp_s=1",
        "stream.id=s1&stream.timestamp_s=nan&stream.T_world_from_ego=" POSE,
        "stream.id=s1&stream.timestamp_s=inf&stream.T_world_from_ego=" POSE,
        "stream.id=s1&stream.timestamp_s=1&stream.T_world_from_ego=2,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1",
        "stream.id=s1&stream.timestamp_s=1&stream.T_world_from_ego=1,0,0,inf,0,1,0,0,0,0,1,0,0,0,0,1",
        "stream.id=s1&stream.timestamp_s=1&stream.T_world_from_ego=1,0,0,0,0,1,0,0,0,0,1,0,0,0,0",
        "stream.id=s1&stream.timestamp_s=1&stream.T_world_from_ego=1,0,0,0,0,1,0,0,0,0,1,0,1,0,0,1",
        "stream.id=s1&stream.timestamp_s=1&stream.T_world_from_ego=-1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1",
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "/predict?%s", q[i]);
        M(path, "application/x-kitti", tiny, sizeof tiny, q[i]);
    }
    /* too many query parameters */
    char path[4096] = "/predict?";
    for (int i = 0; i < 80; i++) snprintf(path + strlen(path), sizeof path - strlen(path), "p%d=1&", i);
    M(path, "application/x-kitti", tiny, sizeof tiny, "80 query params");
}

static void malformed_bodies(int port, const void *pcd, size_t pcd_len)
{
    /* content types and formats */
    static const char *const types[] = { "text/plain", "image/png", "application/xml", "multipart/form-data; boundary=x",
                                         "application/octet-stream", "application/x-unknown", "application/x-pcd2", "" };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) M("/predict", types[i], tiny, sizeof tiny, types[i]);
    M("/predict", NULL, tiny, sizeof tiny, "no Content-Type");
    static const char *const fmts[] = { "/predict?format=xyz", "/predict?format=PCD", "/predict?format=", "/predict?format=f32",
                                        "/predict?format=pcd%00" };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) M(fmts[i], "application/octet-stream", tiny, sizeof tiny, fmts[i]);
    /* truncated PCD bodies */
    static const size_t cuts[] = { 0, 1, 10, 60, 100, 150, 400, 4096, 65536, 300000 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "pcd truncated to %zu bytes", cuts[i]);
        M("/predict", "application/x-pcd", pcd, cuts[i], what);
    }
    M("/predict", "application/x-pcd", pcd, pcd_len - 1, "pcd missing its last byte");
    /* bad PCD headers */
    static const char *const pcds[] = {
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.8\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y\nSIZE 4 4\nTYPE F F\nCOUNT 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 2\nHEIGHT 1\nPOINTS 5\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA binary_lzf\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE X F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 3 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH -1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 two 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2\n",
        "VERSION 0.7\nFIELDS x x z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 99999999999\nHEIGHT 99999999999\nPOINTS 1\nDATA binary\n",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA binary\n\x01\x02",
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA binary_compressed\n\x10\x01\x01\x01\x20\x01\x01\x01",
    };
    for (size_t i = 0; i < sizeof pcds / sizeof pcds[0]; i++) {
        char what[48];
        snprintf(what, sizeof what, "bad pcd header #%zu", i);
        M("/predict", "application/x-pcd", pcds[i], strlen(pcds[i]), what);
    }
    /* bad npy: a 128-byte header (magic, version, length, dict) and 32 data bytes */
    static const struct { const char *magic; int ver, hlen; const char *dict; } npys[] = {
        { "\x93NUMPZ", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 99), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4' 'fortran_order': False 'shape': (2, 4)" },
        { "\x93NUMPY", 1, -1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 9, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 1, 0xffff, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 1, 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (100, 4), }" },
        { "\x93NUMPY", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), 'extra': 1, }" },
        { "\x93NUMPY", 1, -1, "{'descr': '|O', 'fortran_order': False, 'shape': (2, 4), }" },
    };
    for (size_t i = 0; i < sizeof npys / sizeof npys[0]; i++) {
        unsigned char npy[160];
        memset(npy, ' ', 128);
        memset(npy + 128, 0, 32);
        memcpy(npy, npys[i].magic, 6);
        npy[6] = (unsigned char)npys[i].ver;
        npy[7] = 0;
        int hl = npys[i].hlen < 0 ? 118 : npys[i].hlen;
        npy[8] = (unsigned char)(hl & 255);
        npy[9] = (unsigned char)(hl >> 8);
        memcpy(npy + 10, npys[i].dict, strlen(npys[i].dict));
        npy[127] = '\n';
        char what[48];
        snprintf(what, sizeof what, "bad npy #%zu", i);
        M("/predict", "application/x-npy", npy, sizeof npy, what);
    }
    M("/predict", "application/x-npy", "\x93NUMPY", 6, "npy magic only");
    M("/predict?format=npy", "application/octet-stream", tiny, sizeof tiny, "KITTI bytes as npy");
    /* bad npz */
    M("/predict", "application/x-npz", "PK\x03\x04garbage-garbage-garbage", strlen("PK\x03\x04garbage-garbage-garbage"), "npz garbage");
    M("/predict", "application/x-npz", tiny, sizeof tiny, "npz: not a zip");
    M("/predict", "application/zip", "", 0, "npz empty");
    /* raw binaries with a size that is not whole points */
    M("/predict", "application/x-kitti", tiny, 17, "kitti 17 bytes");
    M("/predict", "application/x-nuscenes", tiny, 18, "nuscenes 18 bytes");
    M("/predict", "application/x-f16x5", tiny, 7, "f16x5 7 bytes");
    M("/predict?format=kitti", "application/octet-stream", tiny, 15, "kitti 15 bytes");
    M("/predict?format=auto", "application/octet-stream", tiny, sizeof tiny, "auto cannot tell raw floats");
}

static void malformed_json(int port)
{
    char t64[128];
    char *e = b64(tiny, sizeof tiny);
    snprintf(t64, sizeof t64, "%s", e);
    free(e);
    static const char *const plain[] = {
        "{", "[]", "null", "\"points\"", "", "{\"points\": 1}", "{}", "{\"points\": {}}", "{\"pts\": {}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": 5}}", "{\"points\": {\"format\": 7, \"data\": \"\"}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"!!!!\"}}", "{\"points\": {\"format\": \"kitti\", \"data\": \"a\"}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"ab=c\"}}", "{\"points\": {\"format\": \"kitti\", \"data\": \"====\"}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAAA===\"}}", "{\"points\": {\"format\": \"kitti\", \"data\": \"AA\\u00e9A\"}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA-_AA\"}}", "{\"points\": {\"data\": \"AAAA\"}}",
        "{\"points\": {\"format\": \"xyz\", \"data\": \"AAAA\"}}", "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\", \"extra\": 1}}",
        "{\"points\": {\"format\": \"f32\", \"data\": \"AAAA\", \"ncols\": 2}}",
        "{\"points\": {\"format\": \"f32\", \"data\": \"AAAA\", \"ncols\": 3.5}}",
        "{\"points\": {\"format\": \"f32\", \"data\": \"AAAA\", \"ncols\": \"4\"}}",
        "{\"points\": {\"format\": \"npz\", \"data\": \"AAAA\", \"array\": 3}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\"}, \"params\": []}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\"}, \"sweeps\": {}}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\"}, \"sweeps\": [1]}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\"}, \"extra\": 1}",
        "{\"points\": {\"format\": \"kitti\", \"data\": \"AAAA\"}} trailing",
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) M("/predict", "application/json", plain[i], strlen(plain[i]), plain[i]);
    /* a valid cloud with bad params, sweeps or types */
    static const char *const with_cloud[] = {
        "\"params\": {\"score_threshold\": \"high\"}", "\"params\": {\"score_threshold\": [1, 2]}",
        "\"params\": {\"score_threshold\": true}", "\"params\": {\"score_threshold\": null}",
        "\"params\": {\"score_threshold\": {\"v\": 1}}", "\"params\": {\"score_threshold\": 1e999}",
        "\"params\": {\"score_threshold\": -1e999}", "\"params\": {\"no_such\": 1}",
        "\"params\": {\"T_base_from_sensor\": [1, 0, 0]}", "\"params\": {\"T_base_from_sensor\": [1, \"0\", 0]}",
        "\"params\": {\"T_base_from_sensor\": []}", "\"params\": {\"stream.id\": 5, \"stream.timestamp_s\": 1}",
        "\"params\": {\"stream.id\": \"j1\", \"stream.timestamp_s\": \"soon\", \"stream.T_world_from_ego\": [" POSE "]}",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"%s\"}]",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"%s\", \"time_lag_s\": 0.1}]",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"%s\", \"time_lag_s\": 0.1, \"T_current_from_sweep\": [1, 2]}]",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"%s\", \"time_lag_s\": \"x\", \"T_current_from_sweep\": [" POSE "]}]",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"AAA\", \"time_lag_s\": 0.1, \"T_current_from_sweep\": [" POSE "]}]",
        "\"sweeps\": [{\"format\": \"kitti\", \"data\": \"%s\", \"time_lag_s\": 0.1, \"T_current_from_sweep\": [" POSE "], \"x\": 1}]",
        "\"sweeps\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]",
    };
    for (size_t i = 0; i < sizeof with_cloud / sizeof with_cloud[0]; i++) {
        char part[1024], body[2048];
        snprintf(part, sizeof part, with_cloud[i], t64);
        snprintf(body, sizeof body, "{\"points\": {\"format\": \"kitti\", \"data\": \"%s\"}, %s}", t64, part);
        M("/predict", "application/json", body, strlen(body), with_cloud[i]);
    }
}

static void malformed_sizes(int port, const void *pcd, size_t pcd_len)
{
    /* declared sizes over the limit are refused from the header, before the body */
    static const char *const cl[] = { "Content-Length: 99999999999999", "Content-Length: 4194305", "Content-Length: 1099511627776" };
    for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++) {
        mcase m = { "/predict", "application/x-pcd", tiny, sizeof tiny, cl[i], true };
        expect_4xx(port, &m, cl[i]);
    }
    /* malformed or overflowing declared lengths: libmicrohttpd itself answers (400 / 413) */
    static const char *const mcl[] = { "Content-Length: 12abc", "Content-Length: 18446744073709551616", "Content-Length: -5" };
    for (size_t i = 0; i < sizeof mcl / sizeof mcl[0]; i++) {
        mcase m = { "/predict", "application/x-pcd", tiny, sizeof tiny, mcl[i], false };
        expect_4xx(port, &m, mcl[i]);
    }
    /* a chunked body (no declared length) that grows past the limit: refused while reading */
    size_t big = ((size_t)4 << 20) + 4096;
    char *b = malloc(big);
    for (size_t off = 0; off < big; off += pcd_len) memcpy(b + off, pcd, big - off < pcd_len ? big - off : pcd_len);
    mcase ch = { "/predict", "application/x-pcd", b, big, "Transfer-Encoding: chunked", true };
    expect_4xx(port, &ch, "chunked body over the limit");
    mcase sz = { "/predict", "application/x-pcd", b, big, NULL, true };
    expect_4xx(port, &sz, "body over the limit");
    free(b);
}

static void test_malformed(int port)
{
    size_t n;
    void *pcd = read_file("tests/fixtures/bevfusion/scene/scene_000.pcd", &n);
    nmalformed = 0;
    malformed_params(port);
    malformed_bodies(port, pcd, n);
    malformed_json(port);
    malformed_sizes(port, pcd, n);
    CHECK(nmalformed >= 100, "only %d malformed requests", nmalformed);
    resp r = http(port, NULL, "/health", NULL, NULL, 0);
    CHECK(r.code == 200, "/health after %d malformed requests: %ld", nmalformed, r.code);
    free(r.body.p);
    /* a request's slot is released once its response is sent, just after the client has it */
    CHECK(wait_metric(port, "perceive_inflight", 0, false), "inflight after the malformed requests");
    printf("malformed: %d requests, each 4xx with a message\n", nmalformed);
    free(pcd);
}

/* Non-finite points are dropped (Autoware's behaviour, counted in meta.num_dropped_points); a
 * frame of only non-finite points still runs. Non-finite values anywhere else are 400 (above). */
static void test_nonfinite_points(int port)
{
    float pts[16];
    memcpy(pts, tiny, sizeof pts);
    pts[0] = NAN;
    pts[5] = INFINITY;
    resp r = post(port, "/predict?timing=0", "application/x-kitti", pts, sizeof pts);
    CHECK(r.code == 200 && strstr(r.body.p, "\"num_dropped_points\":\t2"), "NaN/Inf points: %ld %.200s", r.code, r.body.p);
    free(r.body.p);
}

/* ---- bounded queue --------------------------------------------------------------------------- */

typedef struct job { int port; const char *path, *ctype; const void *body; size_t len; long code; char *reply; } job;

static void *job_run(void *arg)
{
    job *j = arg;
    resp r = post(j->port, j->path, j->ctype, j->body, j->len);
    j->code = r.code;
    j->reply = r.body.p;
    return NULL;
}

/* Polls /metrics until name >= want (at_least) or == want. */
static bool wait_metric(int port, const char *name, long want, bool at_least)
{
    for (int i = 0; i < 6000; i++) {
        long v = metric(port, name);
        if (at_least ? v >= want : v == want) return true;
        usleep(5000);
    }
    return false;
}

static void test_queue(void)
{
    pvsv_options o = pvsv_defaults();
    o.port = 0;
    o.queue = 1;
    o.workers = 1;
    o.quiet = 1;
    pvsv_server *s = NULL;
    CHECK(pvsv_start(model, &o, &s) == PV_OK, "second server: %s", pv_last_error());
    if (!s) return;
    int port = pvsv_port(s);
    size_t n;
    void *pcd = read_file("tests/fixtures/bevfusion/scene/scene_000.pcd", &n);
    job a = { port, "/predict", "application/x-pcd", pcd, n, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, job_run, &a);
    CHECK(wait_metric(port, "perceive_inflight", 1, true), "the first request was never admitted");
    resp r = post(port, "/predict", "application/x-pcd", pcd, n);
    CHECK(r.code == 503 && is_error_json(r.body.p), "queue full: %ld %s", r.code, r.body.p);
    free(r.body.p);
    pthread_join(t, NULL);
    CHECK(a.code == 200, "the admitted request: %ld", a.code);
    free(a.reply);
    pvsv_free(s);
    free(pcd);
}

/* ---- concurrent streams ---------------------------------------------------------------------- */

typedef struct stream_job { int port; const char *id; char *bodies[2]; size_t lens[2]; char *paths[2]; long codes[2]; char *replies[2]; } stream_job;

static void *stream_run(void *arg)
{
    stream_job *j = arg;
    for (int f = 0; f < 2; f++) {
        resp r = post(j->port, j->paths[f], "application/x-pcd", j->bodies[f], j->lens[f]);
        j->codes[f] = r.code;
        j->replies[f] = r.body.p;
    }
    return NULL;
}

static void pose_text(const cJSON *frame, char *ts, size_t tsn, char *pose, size_t pn)
{
    snprintf(ts, tsn, "%.17g", cJSON_GetObjectItemCaseSensitive(frame, "timestamp_s")->valuedouble);
    size_t o = 0;
    int i = 0;
    for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(frame, "T_world_from_ego")->child; e; e = e->next, i++)
        o += (size_t)snprintf(pose + o, pn - o, "%s%.17g", i ? "," : "", e->valuedouble);
}

static void test_streams(int port)
{
    size_t n;
    char *pj = read_file("tests/fixtures/bevfusion/scene/poses.json", &n);
    pj[n] = 0;
    cJSON *poses = cJSON_Parse(pj);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(poses, "frames");
    CHECK(cJSON_GetArraySize(frames) >= 2, "poses.json frames");
    if (cJSON_GetArraySize(frames) < 2) { cJSON_Delete(poses); free(pj); return; }
    char ts[2][64], pose[2][1024];
    void *pcd[2];
    size_t len[2];
    for (int f = 0; f < 2; f++) {
        const cJSON *fr = cJSON_GetArrayItem(frames, f);
        pose_text(fr, ts[f], sizeof ts[f], pose[f], sizeof pose[f]);
        char rel[256];
        snprintf(rel, sizeof rel, "tests/fixtures/bevfusion/scene/%s", cJSON_GetObjectItemCaseSensitive(fr, "file")->valuestring);
        pcd[f] = read_file(rel, &len[f]);
    }
    /* the serialized reference: one stream, frame 0 then frame 1, in-process */
    char *want[2];
    for (int f = 0; f < 2; f++) {
        pv_input in = { .name = "points", .format = "pcd", .data = pcd[f], .len = len[f] };
        pv_param p[] = { { "stream.id", "ref" }, { "stream.timestamp_s", ts[f] }, { "stream.T_world_from_ego", pose[f] } };
        want[f] = run_stable(&in, 1, p, 3);
    }
    CHECK(want[1] && strstr(want[1], "\"sweeps\":\t2"), "reference second frame has 2 sweeps");
    stream_job jobs[2] = { { port, "A", { 0 }, { 0 }, { 0 }, { 0 }, { 0 } }, { port, "B", { 0 }, { 0 }, { 0 }, { 0 }, { 0 } } };
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        for (int f = 0; f < 2; f++) {
            jobs[k].bodies[f] = pcd[f];
            jobs[k].lens[f] = len[f];
            jobs[k].paths[f] = malloc(4096);
            snprintf(jobs[k].paths[f], 4096, "/predict?timing=0&stream.id=%s&stream.timestamp_s=%s&stream.T_world_from_ego=%s", jobs[k].id, ts[f],
                     pose[f]);
        }
        pthread_create(&t[k], NULL, stream_run, &jobs[k]);
    }
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < 2; f++) {
            /* meta.stream names the stream: the reference's id stands in for the job's */
            char id[32], *at;
            snprintf(id, sizeof id, "\"id\":\t\"%s\"", jobs[k].id);
            if (jobs[k].replies[f] && (at = strstr(jobs[k].replies[f], id)) != NULL) {
                char *fixed = malloc(strlen(jobs[k].replies[f]) + 8);
                sprintf(fixed, "%.*s\"id\":\t\"ref\"%s", (int)(at - jobs[k].replies[f]), jobs[k].replies[f], at + strlen(id));
                free(jobs[k].replies[f]);
                jobs[k].replies[f] = fixed;
            }
            CHECK(jobs[k].codes[f] == 200 && want[f] && !strcmp(jobs[k].replies[f], want[f]),
                  "stream %s frame %d: %ld, %s the serialized result", jobs[k].id, f, jobs[k].codes[f],
                  want[f] && jobs[k].replies[f] && !strcmp(jobs[k].replies[f], want[f]) ? "equals" : "differs from");
            free(jobs[k].replies[f]);
            free(jobs[k].paths[f]);
        }
    for (int f = 0; f < 2; f++) { free(want[f]); free(pcd[f]); }
    cJSON_Delete(poses);
    free(pj);
}

/* ---- SIGTERM with requests in flight (child process) ------------------------------------------ */

static void test_sigterm(const char *bin)
{
    int fds[2];
    if (pipe(fds)) { CHECK(0, "pipe"); return; }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = { (char *)bin, "serve", "bevfusion", "--port", "0", "--queue", "8", "--workers", "2", "--quiet", NULL };
    pid_t pid;
    int e = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    CHECK(e == 0, "spawn %s: %s", bin, strerror(e));
    if (e) { close(fds[0]); return; }
    FILE *f = fdopen(fds[0], "r");
    char line[512] = "";
    int port = 0;
    if (fgets(line, sizeof line, f)) {
        const char *c = strrchr(line, ':');
        port = c ? atoi(c + 1) : 0;
    }
    CHECK(port > 0, "child port from '%s'", line);
    if (port > 0) {
        size_t n;
        void *pcd = read_file("tests/fixtures/bevfusion/scene/scene_000.pcd", &n);
        job jobs[3];
        pthread_t t[3];
        for (int k = 0; k < 3; k++) {
            jobs[k] = (job){ port, "/predict", "application/x-pcd", pcd, n, 0, NULL };
            pthread_create(&t[k], NULL, job_run, &jobs[k]);
        }
        CHECK(wait_metric(port, "perceive_inflight", 3, true), "three requests in flight");
        kill(pid, SIGTERM);
        for (int k = 0; k < 3; k++) {
            pthread_join(t[k], NULL);
            CHECK(jobs[k].code == 200, "in-flight request %d across SIGTERM: %ld %.200s", k, jobs[k].code, jobs[k].reply);
            free(jobs[k].reply);
        }
        free(pcd);
    } else kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exit status %d", st);
    if (port > 0) {
        resp r = http(port, NULL, "/health", NULL, NULL, 0);
        CHECK(r.code == -1, "the stopped server still answers (%ld)", r.code);
        free(r.body.p);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: serve_test PERCEIVE_BIN SOURCE_DIR\n"); return 2; }
    src_dir = argv[2];
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pv_model_options mo = { .threads = 0 };
    if (pv_model_open("bevfusion", &mo, &model) != PV_OK) { printf("FAIL pv_model_open: %s\n", pv_last_error()); return 1; }
    pvsv_options o = pvsv_defaults();
    o.port = 0;
    o.queue = 8;
    o.workers = 2;
    o.max_body_bytes = (size_t)4 << 20;
    o.quiet = 1;
    pvsv_server *s = NULL;
    if (pvsv_start(model, &o, &s) != PV_OK) { printf("FAIL pvsv_start: %s\n", pv_last_error()); return 1; }
    int port = pvsv_port(s);
    printf("in-process server on port %d\n", port);
    pvsv_options bad = o;
    bad.host = "localhost.example";
    pvsv_server *s2 = NULL;
    CHECK(pvsv_start(model, &bad, &s2) == PV_EINPUT && strstr(pv_last_error(), "host"), "bad host refused");
    test_identity(port);
    test_endpoints(port);
    test_malformed(port);
    test_nonfinite_points(port);
    test_streams(port);
    test_queue();
    resp r = http(port, NULL, "/metrics", NULL, NULL, 0);
    CHECK(strstr(r.body.p, "perceive_requests_total{code=\"400\"}") && strstr(r.body.p, "perceive_requests_total{code=\"415\"}") &&
          strstr(r.body.p, "perceive_requests_total{code=\"413\"}"), "/metrics counts the refusals");
    free(r.body.p);
    pvsv_stop(s);
    pvsv_free(s);
    pv_model_close(model);
    test_sigterm(argv[1]);
    curl_global_cleanup();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
