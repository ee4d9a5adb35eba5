/* serve/routes: replies, status mapping, and the /predict request decoder (content type or
 * ?format= for raw files; JSON with base64 data; query and JSON runtime params). Everything
 * here treats the request as hostile: every failure is a 4xx reply naming the field. */
#include "serve/serve.h"
#include "core/core.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- replies ------------------------------------------------------------------------------ */

static char *dup_str(const char *s, size_t n)
{
    char *d = pvc_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void pvsv_reply_text(pvsv_reply *r, unsigned code, const char *type, char *text)
{
    pvc_free(r->body);
    r->code = code;
    r->type = type;
    r->body = text;
    r->len = text ? strlen(text) : 0;
}

void pvsv_reply_error(pvsv_reply *r, unsigned code, const char *status_name, const char *fmt, ...)
{
    char msg[PVC_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *text = NULL;
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "error", msg) && cJSON_AddStringToObject(o, "status", status_name)) {
        char *t = cJSON_PrintUnformatted(o);
        if (t) text = dup_str(t, strlen(t));
        cJSON_free(t);
    }
    cJSON_Delete(o);
    /* out of memory: a fixed body still tells the client what happened */
    pvsv_reply_text(r, code, "application/json", text);
    if (!text) {
        static const char fallback[] = "{\"error\":\"out of memory writing the error\",\"status\":\"PV_ENOMEM\"}";
        r->body = dup_str(fallback, sizeof fallback - 1);
        r->len = r->body ? sizeof fallback - 1 : 0;
    }
}

unsigned pvsv_http_code(pv_status s)
{
    switch (s) {
    case PV_OK: return 200;
    case PV_EINPUT: case PV_EFORMAT: return 400;
    case PV_EUNSUPPORTED: return 415;
    case PV_ECLOSED: return 503;
    case PV_ENOWEIGHTS: case PV_ENOMEM: case PV_EINTERNAL: return 500;
    }
    return 500;
}

const char *pvsv_status_name(pv_status s)
{
    switch (s) {
    case PV_OK: return "PV_OK";
    case PV_EINPUT: return "PV_EINPUT";
    case PV_ENOWEIGHTS: return "PV_ENOWEIGHTS";
    case PV_EFORMAT: return "PV_EFORMAT";
    case PV_ENOMEM: return "PV_ENOMEM";
    case PV_EUNSUPPORTED: return "PV_EUNSUPPORTED";
    case PV_ECLOSED: return "PV_ECLOSED";
    case PV_EINTERNAL: return "PV_EINTERNAL";
    }
    return "PV_EINTERNAL";
}

/* ---- base64 ------------------------------------------------------------------------------- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

pv_status pvsv_base64_decode(const char *s, size_t n, unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    unsigned char *d = pvc_malloc(n / 4 * 3 + 3);
    if (!d) { snprintf(err, errlen, "out of memory decoding %zu base64 characters", n); return PV_ENOMEM; }
    size_t o = 0, pad = 0, pad_at = 0;
    uint32_t acc = 0;
    int nacc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') { if (!pad++) pad_at = i; continue; }
        int v = b64_value(c);
        if (v < 0 || pad) {
            if (v < 0) snprintf(err, errlen, "byte 0x%02x at offset %zu is not base64", c, i);
            else snprintf(err, errlen, "data after the '=' padding at offset %zu", pad_at);
            pvc_free(d);
            return PV_EINPUT;
        }
        acc = acc << 6 | (uint32_t)v;
        if (++nacc == 4) {
            d[o++] = (unsigned char)(acc >> 16);
            d[o++] = (unsigned char)(acc >> 8);
            d[o++] = (unsigned char)acc;
            acc = 0;
            nacc = 0;
        }
    }
    /* a trailing group of 2 or 3 characters carries 1 or 2 bytes; padding must complete it */
    if (nacc == 1 || (pad && (size_t)nacc + pad != 4) || pad > 2) {
        snprintf(err, errlen, "truncated base64 (%d characters in the last group, %zu '=')", nacc, pad);
        pvc_free(d);
        return PV_EINPUT;
    }
    if (nacc == 2) d[o++] = (unsigned char)(acc >> 4);
    if (nacc == 3) { d[o++] = (unsigned char)(acc >> 10); d[o++] = (unsigned char)(acc >> 2); }
    *out = d;
    *out_len = o;
    return PV_OK;
}

/* ---- /predict ----------------------------------------------------------------------------- */

static const char *const raw_formats[] = { "pcd", "npy", "npz", "kitti", "nuscenes", "f16x5", "jpeg", "png", "rgb8", "auto" };

static bool format_known(const char *f, bool allow_f32)
{
    for (size_t i = 0; i < sizeof raw_formats / sizeof raw_formats[0]; i++)
        if (!strcmp(f, raw_formats[i])) return true;
    return allow_f32 && !strcmp(f, "f32");
}

/* The media type (lower-cased, parameters and blanks stripped) into buf. */
static void media_type(const char *ct, char *buf, size_t n)
{
    size_t o = 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    for (; *ct && *ct != ';' && *ct != ' ' && *ct != '\t' && o + 1 < n; ct++)
        buf[o++] = (char)((*ct >= 'A' && *ct <= 'Z') ? *ct - 'A' + 'a' : *ct);
    buf[o] = 0;
}

/* Point-cloud formats by media type; "" means the type needs ?format=. */
static const char *format_of_type(const char *mt)
{
    static const struct { const char *type, *fmt; } t[] = {
        { "application/x-pcd", "pcd" }, { "application/pcd", "pcd" }, { "application/x-npy", "npy" },
        { "application/npy", "npy" }, { "application/x-npz", "npz" }, { "application/zip", "npz" },
        { "application/x-kitti", "kitti" }, { "application/x-nuscenes", "nuscenes" }, { "application/x-f16x5", "f16x5" },
        { "image/jpeg", "jpeg" }, { "image/png", "png" },
        { "application/octet-stream", "" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(mt, t[i].type)) return t[i].fmt;
    return NULL;
}

static char *own(pvsv_predict *p, char *s)
{
    if (!s) return NULL;
    if (p->n_own >= (int)(sizeof p->own / sizeof p->own[0])) { pvc_free(s); return NULL; }
    p->own[p->n_own++] = s;
    return s;
}

static bool add_param(pvsv_predict *p, const char *k, const char *v, pvsv_reply *r)
{
    if (p->n_params >= PVSV_MAX_PARAMS) {
        pvsv_reply_error(r, 400, "PV_EINPUT", "params: more than %d", PVSV_MAX_PARAMS);
        return false;
    }
    p->params[p->n_params++] = (pv_param){ k, v };
    return true;
}

/* A number as the shortest text that reads back to the same double. */
static void num_text(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
}

/* A JSON param value as the text the model API takes. NULL + reply on a bad value. */
static char *dup_or_reply(const char *s, size_t n, const char *key, pvsv_reply *r)
{
    char *t = dup_str(s, n);
    if (!t) pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading param '%.64s'", key);
    return t;
}

static char *json_param_text(const cJSON *v, const char *key, pvsv_reply *r)
{
    char num[40];
    if (cJSON_IsString(v)) return dup_or_reply(v->valuestring, strlen(v->valuestring), key, r);
    if (cJSON_IsBool(v)) return dup_or_reply(cJSON_IsTrue(v) ? "true" : "false", cJSON_IsTrue(v) ? 4 : 5, key, r);
    if (cJSON_IsNumber(v)) {
        if (!isfinite(v->valuedouble)) { pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s': number is not finite", key); return NULL; }
        num_text(v->valuedouble, num, sizeof num);
        return dup_or_reply(num, strlen(num), key, r);
    }
    if (cJSON_IsArray(v) && v->child && cJSON_IsArray(v->child)) {
        /* rows of numbers (e.g. boxes): "a,b,c;d,e,f" */
        int n = cJSON_GetArraySize(v);
        if (n > 64) { pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s': %d rows (want at most 64)", key, n); return NULL; }
        size_t cap = 1, o = 0;
        char **rows = pvc_calloc((size_t)n, sizeof *rows);
        if (!rows) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading param '%.64s'", key); return NULL; }
        int i = 0;
        bool ok = true;
        for (const cJSON *e = v->child; e && ok; e = e->next, i++) {
            if (!cJSON_IsArray(e) || (e->child && cJSON_IsArray(e->child))) {
                pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s'[%d]: want an array of numbers", key, i);
                ok = false;
            } else if ((rows[i] = json_param_text(e, key, r)) != NULL) cap += strlen(rows[i]) + 1;
            else ok = false;
        }
        char *t = ok ? pvc_malloc(cap) : NULL;
        if (ok && !t) pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading param '%.64s'", key);
        if (t) {
            t[0] = 0;
            for (int k = 0; k < n; k++) o += (size_t)snprintf(t + o, cap - o, "%s%s", k ? ";" : "", rows[k]);
        }
        for (int k = 0; k < n; k++) pvc_free(rows[k]);
        pvc_free(rows);
        return t;
    }
    if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        if (n < 1 || n > 64) { pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s': array of %d numbers (want 1..64)", key, n); return NULL; }
        size_t cap = (size_t)n * (sizeof num + 1);
        char *t = pvc_malloc(cap);
        if (!t) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading param '%.64s'", key); return NULL; }
        size_t o = 0;
        int i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
                pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s'[%d]: want a finite number", key, i);
                pvc_free(t);
                return NULL;
            }
            num_text(e->valuedouble, num, sizeof num);
            o += (size_t)snprintf(t + o, cap - o, "%s%s", i ? "," : "", num);
        }
        return t;
    }
    pvsv_reply_error(r, 400, "PV_EINPUT", "param '%.64s': want a string, number, boolean, array of numbers or array of rows", key);
    return NULL;
}

static bool own_param(pvsv_predict *p, const char *key, const cJSON *v, pvsv_reply *r)
{
    char *k = own(p, dup_str(key, strlen(key)));
    if (!k) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading params"); return false; }
    char *t = json_param_text(v, key, r);
    if (!t) return false;
    if (!own(p, t)) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading params"); return false; }
    return add_param(p, k, t, r);
}

/* One JSON input item {"format", "data", "array", "ncols"} (+ sweep fields, checked by the caller). */
static bool json_input(pvsv_predict *p, const cJSON *o, const char *what, const char *name, const char *dflt_fmt,
                       const char *const *extra, pvsv_reply *r)
{
    if (!cJSON_IsObject(o)) { pvsv_reply_error(r, 400, "PV_EINPUT", "%s: want an object {\"format\", \"data\"}", what); return false; }
    for (const cJSON *c = o->child; c; c = c->next) {
        bool ok = !strcmp(c->string, "format") || !strcmp(c->string, "data") || !strcmp(c->string, "array") || !strcmp(c->string, "ncols");
        for (int i = 0; extra && extra[i]; i++) ok |= !strcmp(c->string, extra[i]);
        if (!ok) { pvsv_reply_error(r, 400, "PV_EINPUT", "%s: key '%.64s' is not known (format, data, array, ncols%s)", what, c->string,
                                    extra ? ", time_lag_s, T_current_from_sweep" : ""); return false; }
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "format"), *d = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "array"), *nc = cJSON_GetObjectItemCaseSensitive(o, "ncols");
    if (f && !cJSON_IsString(f)) { pvsv_reply_error(r, 400, "PV_EINPUT", "%s.format: want a string", what); return false; }
    const char *fmt = f ? f->valuestring : dflt_fmt;
    if (!fmt) { pvsv_reply_error(r, 415, "PV_EUNSUPPORTED", "%s.format is missing (pcd, npy, npz, kitti, nuscenes, f16x5, f32, jpeg, png, rgb8, auto)", what); return false; }
    if (!format_known(fmt, true)) {
        pvsv_reply_error(r, 415, "PV_EUNSUPPORTED", "%s.format '%.64s' is not supported (pcd, npy, npz, kitti, nuscenes, f16x5, f32, jpeg, png, rgb8, auto)",
                         what, fmt);
        return false;
    }
    if (!cJSON_IsString(d)) { pvsv_reply_error(r, 400, "PV_EINPUT", "%s.data: want a base64 string", what); return false; }
    if (a && !cJSON_IsString(a)) { pvsv_reply_error(r, 400, "PV_EINPUT", "%s.array: want a string", what); return false; }
    int ncols = 0;
    if (nc) {
        if (!cJSON_IsNumber(nc) || nc->valuedouble != floor(nc->valuedouble) || nc->valuedouble < 3 || nc->valuedouble > 16) {
            pvsv_reply_error(r, 400, "PV_EINPUT", "%s.ncols: want an integer 3..16", what);
            return false;
        }
        ncols = (int)nc->valuedouble;
    }
    unsigned char *bytes = NULL;
    size_t nbytes = 0;
    char err[160];
    pv_status s = pvsv_base64_decode(d->valuestring, strlen(d->valuestring), &bytes, &nbytes, err, sizeof err);
    if (s != PV_OK) { pvsv_reply_error(r, pvsv_http_code(s), pvsv_status_name(s), "%s.data: %s", what, err); return false; }
    char *fo = own(p, dup_str(fmt, strlen(fmt)));
    char *ao = a ? own(p, dup_str(a->valuestring, strlen(a->valuestring))) : NULL;
    if (!own(p, (char *)bytes) || !fo || (a && !ao)) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading %s", what); return false; }
    p->in[p->n_in++] = (pv_input){ .name = name, .format = fo, .data = bytes, .len = nbytes, .ncols = ncols, .array = ao };
    return true;
}

static bool parse_json(pvsv_predict *p, const char *dflt_fmt, const void *body, size_t len, pvsv_reply *r)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    bool ok = false;
    /* only white space may follow the value */
    for (const char *q = end; root && q && q < (const char *)body + len; q++)
        if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t') {
            pvsv_reply_error(r, 400, "PV_EINPUT", "request JSON: bytes after the object (at byte %zu of %zu)", (size_t)(q - (const char *)body), len);
            cJSON_Delete(root);
            return false;
        }
    if (!root) {
        /* end, not cJSON_GetErrorPtr(): that is one global for every thread (a race between
         * workers parsing at once); on failure cJSON sets end to the error's position */
        const char *at = end;
        size_t off = at && at >= (const char *)body && at <= (const char *)body + len ? (size_t)(at - (const char *)body) : len;
        pvsv_reply_error(r, 400, "PV_EINPUT", "request JSON does not parse (near byte %zu of %zu)", off, len);
        return false;
    }
    if (!cJSON_IsObject(root)) { pvsv_reply_error(r, 400, "PV_EINPUT", "request JSON: want an object {\"points\" | \"image\" | ..., \"params\"}"); goto done; }
    /* an object value is an input item named by its key (points, image, crop: the model says
     * which it takes); "sweeps" and "params" are what they say; any other key is a param */
    int ninputs = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (!strcmp(c->string, "sweeps") || !strcmp(c->string, "params")) continue;
        if (cJSON_IsObject(c)) {
            if (p->n_in >= PVSV_MAX_INPUTS - 1) { pvsv_reply_error(r, 400, "PV_EINPUT", "request JSON: more than %d inputs", PVSV_MAX_INPUTS - 1); goto done; }
            char *name = own(p, dup_str(c->string, strlen(c->string)));
            if (!name) { pvsv_reply_error(r, 500, "PV_ENOMEM", "out of memory reading the request"); goto done; }
            if (!json_input(p, c, name, name, dflt_fmt, NULL, r)) goto done;
            ninputs++;
        } else if (!own_param(p, c->string, c, r)) goto done;
    }
    if (!ninputs) { pvsv_reply_error(r, 400, "PV_EINPUT", "request JSON: no input object ({\"NAME\": {\"format\", \"data\"}} with NAME one of the model's inputs, e.g. points, image, crop)"); goto done; }
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sweeps");
    if (sw) {
        if (!cJSON_IsArray(sw)) { pvsv_reply_error(r, 400, "PV_EINPUT", "sweeps: want an array"); goto done; }
        int n = cJSON_GetArraySize(sw);
        if (n > PVSV_MAX_INPUTS - 1) { pvsv_reply_error(r, 400, "PV_EINPUT", "sweeps: %d items (at most %d)", n, PVSV_MAX_INPUTS - 1); goto done; }
        static const char *const sweep_keys[] = { "time_lag_s", "T_current_from_sweep", NULL };
        int i = 0;
        for (const cJSON *e = sw->child; e; e = e->next, i++) {
            char what[32], key[48];
            snprintf(what, sizeof what, "sweeps[%d]", i);
            if (!json_input(p, e, what, "sweep", dflt_fmt, sweep_keys, r)) goto done;
            for (int k = 0; k < 2; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, sweep_keys[k]);
                snprintf(key, sizeof key, "sweep.%d.%s", i, sweep_keys[k]);
                if (v && !own_param(p, key, v, r)) goto done;
            }
        }
    }
    const cJSON *prm = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (prm) {
        if (!cJSON_IsObject(prm)) { pvsv_reply_error(r, 400, "PV_EINPUT", "params: want an object {key: value}"); goto done; }
        for (const cJSON *c = prm->child; c; c = c->next)
            if (!own_param(p, c->string, c, r)) goto done;
    }
    ok = true;
done:
    cJSON_Delete(root);
    return ok;
}

bool pvsv_predict_parse(pvsv_predict *p, const char *content_type, const pvsv_kv *query, int nq, const void *body, size_t len,
                        pvsv_reply *r)
{
    memset(p, 0, sizeof *p);
    const char *fmt = NULL;
    for (int i = 0; i < nq; i++) {
        const char *k = query[i].key, *v = query[i].value ? query[i].value : "";
        if (!strcmp(k, "format")) {
            if (!format_known(v, false)) {
                pvsv_reply_error(r, 415, "PV_EUNSUPPORTED", "format '%.64s' is not supported (pcd, npy, npz, kitti, nuscenes, f16x5, jpeg, png, rgb8, auto)", v);
                return false;
            }
            fmt = v;
        } else if (!strcmp(k, "timing")) {
            if (!strcmp(v, "0") || !strcmp(v, "false")) p->stable = true;
            else if (!strcmp(v, "1") || !strcmp(v, "true")) p->stable = false;
            else { pvsv_reply_error(r, 400, "PV_EINPUT", "timing '%.64s': want 0 or 1", v); return false; }
        } else if (!add_param(p, k, v, r)) return false;
    }
    char mt[80] = "";
    if (content_type) media_type(content_type, mt, sizeof mt);
    if (!strcmp(mt, "application/json")) return parse_json(p, fmt, body, len, r);
    if (!fmt) {
        const char *f = mt[0] ? format_of_type(mt) : NULL;
        if (!f) {
            pvsv_reply_error(r, 415, "PV_EUNSUPPORTED", "Content-Type '%.64s' is not an input type (application/x-pcd, "
                             "application/x-npy, application/x-npz, application/x-kitti, application/x-nuscenes, image/jpeg, image/png, "
                             "application/json, or application/octet-stream with ?format=)", content_type ? content_type : "(none)");
            return false;
        }
        if (!*f) {
            pvsv_reply_error(r, 415, "PV_EUNSUPPORTED", "Content-Type application/octet-stream needs ?format= (pcd, npy, npz, kitti, "
                             "nuscenes, f16x5, auto)");
            return false;
        }
        fmt = f;
    }
    p->in[p->n_in++] = (pv_input){ .name = NULL, .format = fmt, .data = body, .len = len };   /* the model's main input */
    return true;
}

void pvsv_predict_free(pvsv_predict *p)
{
    for (int i = 0; i < p->n_own; i++) pvc_free(p->own[i]);
    p->n_own = 0;
}
