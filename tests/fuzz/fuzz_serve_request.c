/* Fuzz target: the server's /predict request decoder (pvsv_predict_parse, src/serve/serve.h):
 * raw point-cloud bodies by Content-Type or ?format=, and JSON bodies with base64 arrays,
 * sweeps and params. Input layout:
 *   line 1   Content-Type (empty: none)
 *   line 2   query, "k=v&k=v" (at most PVSV_MAX_QUERY pairs; "k" alone has a NULL value)
 *   rest     the body.
 * A refused request must carry a 4xx reply (500 only for PV_ENOMEM) whose body is the JSON
 * {"error": ..., "status": ...}; an accepted one must hold 1..PVSV_MAX_INPUTS inputs, each
 * of which pv_input_decode then handles within the cloud contract. */
#include "fuzz.h"
#include "api/model_api.h"
#include "serve/serve.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Splits [b, e) at the first '\n': a fresh NUL-terminated copy; *next is past the newline. */
static char *take_line(const uint8_t *b, const uint8_t *e, const uint8_t **next)
{
    const uint8_t *nl = memchr(b, '\n', (size_t)(e - b));
    const uint8_t *end = nl ? nl : e;
    char *s = malloc((size_t)(end - b) + 1);
    if (!s) abort();
    memcpy(s, b, (size_t)(end - b));
    s[end - b] = 0;
    *next = nl ? nl + 1 : e;
    return s;
}

static void check_reply(const pvsv_reply *r)
{
    FZ_CHECK((r->code >= 400 && r->code < 500) || r->code == 500, "serve: refused with HTTP %u", r->code);
    FZ_CHECK(r->body && r->len == strlen(r->body), "serve: error reply without a body");
    cJSON *o = cJSON_Parse(r->body);
    if (!o) return;                                  /* cJSON itself out of memory */
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
    FZ_CHECK(cJSON_IsString(err) && err->valuestring[0] && cJSON_IsString(st),
             "serve: error body is not {\"error\", \"status\"}: %.200s", r->body);
    if (r->code == 500) FZ_CHECK(strcmp(st->valuestring, "PV_ENOMEM") == 0, "serve: 500 for %s: %.200s",
                                 st->valuestring, r->body);
    cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *ctype = take_line(p, end, &p);
    char *query = take_line(p, end, &p);
    /* an exact-size body copy: ASan sees any read past it */
    size_t blen = (size_t)(end - p);
    uint8_t *body = malloc(blen ? blen : 1);
    if (!body) abort();
    memcpy(body, p, blen);

    pvsv_kv kv[PVSV_MAX_QUERY];
    int nq = 0;
    for (char *s = query; *s && nq < PVSV_MAX_QUERY;) {
        char *amp = strchr(s, '&');
        if (amp) *amp = 0;
        char *eq = strchr(s, '=');
        if (eq) *eq = 0;
        kv[nq++] = (pvsv_kv){ s, eq ? eq + 1 : NULL };
        if (!amp) break;
        s = amp + 1;
    }

    pvsv_predict *req = malloc(sizeof *req);
    if (!req) abort();
    pvsv_reply r = { 0 };
    bool ok = pvsv_predict_parse(req, ctype[0] ? ctype : NULL, kv, nq, blen ? body : NULL, blen, &r);
    if (!ok) {
        check_reply(&r);
    } else {
        FZ_CHECK(req->n_in >= 1 && req->n_in <= PVSV_MAX_INPUTS, "serve: accepted with %d inputs", req->n_in);
        FZ_CHECK(req->n_params >= 0 && req->n_params <= PVSV_MAX_PARAMS, "serve: %d params", req->n_params);
        for (int i = 0; i < req->n_params; i++)
            FZ_CHECK(req->params[i].key && req->params[i].value, "serve: param %d has a NULL key or value", i);
        for (int i = 0; i < req->n_in; i++) {
            FZ_CHECK(req->in[i].data || req->in[i].len == 0, "serve: input %d: NULL data of %zu bytes", i,
                     req->in[i].len);
            pvio_cloud c;
            pvc_msg m = { { 0 } };
            pv_status s = pv_input_decode(&req->in[i], &c, &m);
            fz_check_cloud(s, &c, &m, req->in[i].len, (uint64_t)1 << 40, "serve input");
            pvio_cloud_free(&c);
        }
    }
    pvsv_predict_free(req);
    pvc_free(r.body);
    free(req);
    free(body);
    free(query);
    free(ctype);
    return 0;
}
