/* perceive CLI: batch runs, `perceive run MODEL DIR|LIST|FILE... --out DIR`.
 *
 * Inputs: a directory's files whose extension names a format the model takes (sorted by name;
 * --recursive descends; hidden files and the --out directory are left out), the lines of a list
 * file (--list FILE, or a positional FILE.txt / FILE.lst: one path a line, blank lines and
 * # comments ignored, relative paths relative to the list's folder), and plain files. The same
 * file named twice runs once. Per input: OUT/NAME.json (NAME: the file name without its last
 * extension; names that collide keep the extension, then parent folders joined by "__") and,
 * with --png, OUT/NAME.png, each written to a temporary file and renamed, the JSON last.
 * Resume: an input whose JSON parses as this model's result (and whose PNG exists, with --png)
 * is skipped unless --force. OUT/summary.csv is rewritten at the end (also after Ctrl-C, which
 * stops after the current input). The model is loaded only when an input needs a run.
 * Exit: 0 every input ok or skipped, 1 an input failed (or the model did not load), 2 usage,
 * 130 interrupted. */
#include "perceive.h"
#include "cli.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- growing buffers --------------------------------------------------------------------- */
typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* RFC 4180: quoted when it holds a comma, a quote or a line break; quotes doubled. */
static void sb_csv(sbuf *b, const char *s, bool last)
{
    if (s && strpbrk(s, ",\"\r\n")) {
        sb_str(b, "\"");
        for (const char *q; (q = strchr(s, '"')); s = q + 1) { sb_add(b, s, (size_t)(q - s)); sb_str(b, "\"\""); }
        sb_str(b, s);
        sb_str(b, "\"");
    } else if (s) sb_str(b, s);
    sb_str(b, last ? "\r\n" : ",");
}

static char *dupstr(const char *s) { return s ? strdup(s) : NULL; }

/* ---- the inputs ---------------------------------------------------------------------------- */
enum { ST_PENDING, ST_OK, ST_FAILED, ST_SKIPPED, ST_NOT_RUN };
static const char *const st_name[] = { "not_run", "ok", "failed", "skipped", "not_run" };

/* summary.csv's columns; the numbers of a skipped row come from the previous summary.csv */
enum { C_INPUT, C_OUTPUT, C_STATUS, C_DECODE, C_PRE, C_ENGINE, C_POST, C_WAIT, C_TOTAL, C_OBJECTS, C_ERROR, NCOL };
static const char *const col_name[NCOL] = { "input", "output", "status", "decode_ms", "preprocess_ms", "engine_ms",
                                            "postprocess_ms", "wait_ms", "total_ms", "objects", "error" };

typedef struct item {
    char *path;          /* as given (list entries joined to the list's folder) */
    char *key;           /* realpath, for duplicates */
    char *name;          /* output name without .json */
    char *json, *png;    /* output paths */
    int   status, level;
    char *col[NCOL];     /* summary row */
} item;

typedef struct batch {
    const cli_mopts *o;
    item *v;
    int   n, cap;
    dev_t out_dev;
    ino_t out_ino;
    bool  out_exists;
    struct { char fmt[16]; bool ok; } probe[16];
    int   nprobe;
} batch;

static int add_item(batch *b, const char *path)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        item *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) { fprintf(stderr, "perceive: out of memory listing inputs\n"); return -1; }
        b->v = v;
        b->cap = cap;
    }
    item *it = &b->v[b->n];
    memset(it, 0, sizeof *it);
    char real[PATH_MAX];
    it->path = dupstr(path);
    it->key = dupstr(realpath(path, real) ? real : path);
    if (!it->path || !it->key) { free(it->path); free(it->key); fprintf(stderr, "perceive: out of memory listing inputs\n"); return -1; }
    b->n++;
    return 0;
}

/* Whether the model takes a format: its bundle is asked to decode an empty item of that format;
 * "not supported" is the one answer that means no (an empty file is otherwise merely bad). */
static bool model_takes(batch *b, const char *fmt)
{
    if (!strcmp(fmt, "auto")) return false;
    for (int i = 0; i < b->nprobe; i++)
        if (!strcmp(b->probe[i].fmt, fmt)) return b->probe[i].ok;
    pv_input in = { .format = fmt, .data = "", .len = 0 };
    bool ok = pv_input_validate_for(b->o->model, &in) != PV_EUNSUPPORTED;
    if (b->nprobe < (int)(sizeof b->probe / sizeof b->probe[0])) {
        snprintf(b->probe[b->nprobe].fmt, sizeof b->probe[0].fmt, "%s", fmt);
        b->probe[b->nprobe++].ok = ok;
    }
    return ok;
}

static int cmp_path(const void *x, const void *y) { return strcmp(((const item *)x)->path, ((const item *)y)->path); }

typedef struct ignored { int n; char first[3][256]; } ignored;

static int add_dir(batch *b, const char *dir, int depth, ignored *ign)
{
    if (depth > 64) { fprintf(stderr, "perceive: '%s': folders nested deeper than 64 (a link loop?)\n", dir); return -1; }
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "perceive: cannot read the folder '%s': %s\n", dir, strerror(errno)); return -1; }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;     /* hidden, ".", "..", and our temporary files */
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name) >= (int)sizeof path) {
            fprintf(stderr, "perceive: '%s/%s': path too long\n", dir, e->d_name);
            rc = -1;
            break;
        }
        struct stat st;
        if (stat(path, &st) != 0) continue;     /* a dangling link */
        if (S_ISDIR(st.st_mode)) {
            if (b->out_exists && st.st_dev == b->out_dev && st.st_ino == b->out_ino) continue;
            if (b->o->recursive) rc = add_dir(b, path, depth + 1, ign);
            continue;
        }
        if (!S_ISREG(st.st_mode)) continue;
        const char *fmt = b->o->format ? b->o->format : cli_format_of(path);
        if (model_takes(b, fmt)) rc = add_item(b, path);
        else if (ign->n++ < 3) snprintf(ign->first[ign->n - 1], sizeof ign->first[0], "%s", e->d_name);
    }
    closedir(d);
    return rc;
}

/* One path a line; blank lines and # comments skipped; relative to the list's folder. */
static int add_list(batch *b, const char *list)
{
    void *buf;
    size_t len;
    if (cli_read_file(list, &buf, &len)) return -1;
    char *text = buf, *folder = dupstr(list), *slash = folder ? strrchr(folder, '/') : NULL;
    if (!folder) { free(buf); return -1; }
    if (slash) slash[1] = 0; else folder[0] = 0;
    text[len] = 0;
    int rc = 0, lineno = 0;
    for (char *line = text, *next; rc == 0 && line && *line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        while (*line == ' ' || *line == '\t') line++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) line[--n] = 0;
        if (!n || line[0] == '#') continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s", line[0] == '/' ? "" : folder, line) >= (int)sizeof path) {
            fprintf(stderr, "perceive: %s:%d: path too long\n", list, lineno);
            rc = -1;
        } else rc = add_item(b, path);
    }
    free(folder);
    free(buf);
    return rc;
}

static bool is_list_name(const char *p)
{
    size_t n = strlen(p);
    return n > 4 && (!strcasecmp(p + n - 4, ".txt") || !strcasecmp(p + n - 4, ".lst"));
}

static int cmp_key(const void *x, const void *y)
{
    const item *a = *(item *const *)x, *c = *(item *const *)y;
    int r = strcmp(a->key, c->key);
    return r ? r : (a < c ? -1 : a > c);
}

/* The same file named twice (by any path) runs once, at its first place. */
static int drop_duplicates(batch *b)
{
    item **ix = malloc((size_t)b->n * sizeof *ix + 1);
    if (!ix) return -1;
    for (int i = 0; i < b->n; i++) ix[i] = &b->v[i];
    qsort(ix, (size_t)b->n, sizeof *ix, cmp_key);
    for (int i = 1; i < b->n; i++)
        if (!strcmp(ix[i]->key, ix[i - 1]->key)) ix[i]->status = -1;
    free(ix);
    int k = 0, dropped = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->v[i].status == -1) {
            if (!b->o->quiet) fprintf(stderr, "perceive: '%s' is named twice; it runs once\n", b->v[i].path);
            free(b->v[i].path);
            free(b->v[i].key);
            dropped++;
        } else b->v[k++] = b->v[i];
    }
    b->n = k;
    return dropped;
}

/* ---- output names ------------------------------------------------------------------------ */
/* level 0: the file name without its last extension; 1: the whole file name; k > 1: the k - 1
 * folders above it joined with "__" in front. Path components "." are dropped, ".." is "up". */
static int make_name(const char *path, int level, char *out, size_t cap)
{
    const char *comp[PATH_MAX / 2];
    size_t clen[PATH_MAX / 2];
    int nc = 0;
    for (const char *p = path; *p;) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        if (e > p && !(e - p == 1 && *p == '.') && nc < (int)(sizeof comp / sizeof comp[0])) { comp[nc] = p; clen[nc++] = (size_t)(e - p); }
        p = e;
    }
    if (!nc) return -1;
    int above = level > 1 ? level - 1 : 0;
    if (above > nc - 1) return -1;     /* no more folders to tell them apart */
    size_t n = 0;
    out[0] = 0;
    for (int i = nc - 1 - above; i < nc - 1; i++) {
        bool up = clen[i] == 2 && !strncmp(comp[i], "..", 2);
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%.*s__", up ? 2 : (int)clen[i], up ? "up" : comp[i]);
    }
    size_t base = clen[nc - 1];
    if (level == 0) {
        const char *dot = NULL;
        for (size_t i = 1; i < base; i++)
            if (comp[nc - 1][i] == '.') dot = comp[nc - 1] + i;
        if (dot) base = (size_t)(dot - comp[nc - 1]);
    }
    n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%.*s", (int)base, comp[nc - 1]);
    return n < cap ? 0 : -1;
}

static int cmp_name(const void *x, const void *y)
{
    const item *a = *(item *const *)x, *c = *(item *const *)y;
    int r = strcmp(a->name, c->name);
    return r ? r : (a < c ? -1 : a > c);
}

/* Every input gets the lowest level at which its name is unique (a pass raises every member of a
 * colliding group; names then are compared again); past the last folder, "~<index>" is added. */
static int assign_names(batch *b)
{
    item **ix = malloc((size_t)b->n * sizeof *ix + 1);
    if (!ix) return -1;
    for (int pass = 0;; pass++) {
        for (int i = 0; i < b->n; i++) {
            item *it = &b->v[i];
            char name[PATH_MAX];
            free(it->name);
            if (make_name(it->path, it->level, name, sizeof name)) {
                char base[PATH_MAX];
                int lv = it->level;
                while (lv > 0 && make_name(it->path, lv, base, sizeof base)) lv--;
                if (lv == 0 && make_name(it->path, 0, base, sizeof base)) snprintf(base, sizeof base, "input");
                snprintf(name, sizeof name, "%.4000s~%d", base, i);
            }
            if (!(it->name = dupstr(name))) { free(ix); return -1; }
            ix[i] = it;
        }
        qsort(ix, (size_t)b->n, sizeof *ix, cmp_name);
        bool clash = false;
        for (int i = 0; i < b->n;) {
            int j = i + 1;
            while (j < b->n && !strcmp(ix[j]->name, ix[i]->name)) j++;
            if (j - i > 1)
                for (int k = i; k < j; k++) { ix[k]->level++; clash = true; }
            i = j;
        }
        if (!clash || pass > PATH_MAX) break;
    }
    free(ix);
    for (int i = 0; i < b->n; i++) {
        item *it = &b->v[i];
        size_t n = strlen(b->o->out) + strlen(it->name) + 8;
        it->json = malloc(n);
        it->png = malloc(n);
        if (!it->json || !it->png) return -1;
        snprintf(it->json, n, "%s/%s.json", b->o->out, it->name);
        snprintf(it->png, n, "%s/%s.png", b->o->out, it->name);
        if (!(it->col[C_INPUT] = dupstr(it->path)) || !(it->col[C_OUTPUT] = dupstr(it->json))) return -1;
    }
    return 0;
}

/* ---- resume -------------------------------------------------------------------------------- */
/* Complete: the file parses as a JSON object with a "meta" object, naming this model in "model"
 * (at the top, or in meta) (a JSON cut short by a killed run does not parse; ours are renamed
 * into place only once whole). */
static bool json_complete(const char *path, const char *model)
{
    void *buf;
    size_t len;
    char err[64];
    if (cli_load_file(path, &buf, &len, err, sizeof err)) return false;
    cJSON *j = cJSON_ParseWithLength(buf, len);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "meta");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!m) m = cJSON_GetObjectItemCaseSensitive(meta, "model");
    bool ok = cJSON_IsObject(j) && cJSON_IsObject(meta) && cJSON_IsString(m) && !strcmp(m->valuestring, model);
    cJSON_Delete(j);
    free(buf);
    return ok;
}

static bool file_nonempty(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* The previous summary.csv's rows (RFC 4180), for the numbers of skipped inputs. */
typedef struct oldrow { char *col[NCOL]; } oldrow;
typedef struct oldsum { oldrow *r; int n; } oldsum;

static int cmp_oldrow(const void *x, const void *y)
{
    return strcmp(((const oldrow *)x)->col[C_INPUT], ((const oldrow *)y)->col[C_INPUT]);
}

static void oldsum_free(oldsum *s)
{
    for (int i = 0; i < s->n; i++)
        for (int c = 0; c < NCOL; c++) free(s->r[i].col[c]);
    free(s->r);
    memset(s, 0, sizeof *s);
}

/* Reads one field at *p (quoted or not); *end says whether it ended its record. */
static char *csv_field(const char **p, const char *lim, bool *end)
{
    sbuf f = { 0 };
    const char *s = *p;
    sb_str(&f, "");
    if (s < lim && *s == '"') {
        for (s++; s < lim; s++) {
            if (*s == '"' && s + 1 < lim && s[1] == '"') { sb_add(&f, "\"", 1); s++; }
            else if (*s == '"') { s++; break; }
            else sb_add(&f, s, 1);
        }
    }
    const char *e = s;
    while (e < lim && *e != ',' && *e != '\n' && *e != '\r') e++;
    sb_add(&f, s, (size_t)(e - s));
    *end = e >= lim || *e != ',';
    if (e < lim && *e == '\r') e++;
    if (e < lim) e++;
    *p = e;
    if (f.oom) { free(f.p); return NULL; }
    return f.p;
}

static void oldsum_read(const char *path, oldsum *s)
{
    memset(s, 0, sizeof *s);
    void *buf;
    size_t len;
    char err[64];
    if (cli_load_file(path, &buf, &len, err, sizeof err)) return;
    const char *p = buf, *lim = p + len;
    int map[64], ncols = 0, cap = 0;
    for (bool end = false; p < lim && !end;) {          /* the header names the columns */
        char *h = csv_field(&p, lim, &end);
        int c = 0;
        while (h && c < NCOL && strcmp(h, col_name[c])) c++;
        if (ncols < 64) map[ncols++] = c;
        free(h);
    }
    while (p < lim) {
        oldrow row = { { 0 } };
        int k = 0;
        for (bool end = false; p < lim && !end; k++) {
            char *f = csv_field(&p, lim, &end);
            if (k < ncols && map[k] < NCOL && !row.col[map[k]]) row.col[map[k]] = f;
            else free(f);
        }
        bool keep = row.col[C_INPUT] && row.col[C_STATUS] && (!strcmp(row.col[C_STATUS], "ok") || !strcmp(row.col[C_STATUS], "skipped"));
        if (keep && s->n == cap) {
            cap = cap ? 2 * cap : 64;
            oldrow *r = realloc(s->r, (size_t)cap * sizeof *r);
            if (r) s->r = r; else keep = false;
        }
        if (keep) s->r[s->n++] = row;
        else for (int c = 0; c < NCOL; c++) free(row.col[c]);
    }
    free(buf);
    if (s->n) qsort(s->r, (size_t)s->n, sizeof *s->r, cmp_oldrow);
}

static void take_old_numbers(const oldsum *s, item *it)
{
    if (!s->n) return;
    oldrow want = { { 0 } };
    want.col[C_INPUT] = it->path;
    const oldrow *r = bsearch(&want, s->r, (size_t)s->n, sizeof *s->r, cmp_oldrow);
    if (!r) return;
    for (int c = C_DECODE; c <= C_OBJECTS; c++) it->col[c] = dupstr(r->col[c]);
}

/* ---- progress -------------------------------------------------------------------------------- */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
    static const char msg[] = "\nperceive: interrupted: stopping after the current input (Ctrl-C again quits now)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

typedef struct progress {
    bool   tty, quiet, drawn;
    int    total, ran;         /* inputs; inputs run (ok or failed) */
    double t_first, t_last;    /* when the first run started, the last ended */
    double load;               /* seconds the model took to open */
} progress;

static void fmt_eta(double s, char *out, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
}

/* On a terminal: one line redrawn in place (done/total, frames/s, ETA, the input now running),
 * cut to the terminal's width so it never wraps. */
static void progress_draw(progress *p, int done, const char *current)
{
    if (!p->tty || p->quiet) return;
    char line[512], eta[32] = "--:--", rate[32] = "-";
    if (p->ran > 0 && now_s() > p->t_first) {
        double fps = p->ran / (now_s() - p->t_first);
        snprintf(rate, sizeof rate, "%.2f", fps);
        fmt_eta((p->total - done) / fps, eta, sizeof eta);
    }
    int n = snprintf(line, sizeof line, "[%d/%d] %s frames/s, ETA %s  %s", done, p->total, rate, eta, current ? current : "");
    struct winsize ws;
    int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col : 80;
    if (n >= cols) n = cols - 1;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    fprintf(stderr, "\r\033[K%.*s", n, line);
    fflush(stderr);
    p->drawn = true;
}

/* A line that stays: on a terminal it goes above the redrawn one. */
static void progress_say(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress_say(progress *p, const char *fmt, ...)
{
    if (p->drawn) { fputs("\r\033[K", stderr); p->drawn = false; }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

/* ---- the run -------------------------------------------------------------------------------- */
static char *fmt_ms(double v)
{
    char t[32];
    snprintf(t, sizeof t, "%.3f", v);
    return dupstr(t);
}

/* Reads, runs and writes one input. The model is opened on the first input that needs a run;
 * until then each input is decoded first, so bad files fail without paying for a load.
 * Returns -1 when the model did not load (the input is then not run). */
static int run_one(batch *b, pv_model **m, item *it, progress *pg, int i)
{
    const cli_mopts *o = b->o;
    char err[1024] = "";
    cli_frame f;
    pv_result *r = NULL;
    int rc = cli_frame_load(o, it->path, !*m, &f, err, sizeof err);
    if (!rc && !*m) {
        /* pv_model_open reports no progress of its own: say when the (long) load starts and ends */
        if (!o->quiet) progress_say(pg, "perceive: loading %s ...\n", o->model);
        double t0 = now_s();
        if (cli_open_model(o, m)) { cli_frame_free(&f); it->status = ST_NOT_RUN; return -1; }
        pg->load = now_s() - t0;
        if (!o->quiet) progress_say(pg, "perceive: loaded %s in %.1f s\n", o->model, pg->load);
        if (interrupted) { cli_frame_free(&f); it->status = ST_NOT_RUN; return 0; }
    }
    progress_draw(pg, i, it->path);
    double t0 = now_s();
    if (pg->ran == 0) pg->t_first = t0;
    if (!rc) rc = cli_frame_run(o, *m, &f, &r, err, sizeof err);
    if (!rc) rc = cli_result_write(r, it->json, o->no_timing, o->png_each ? it->png : NULL, true, err, sizeof err);
    pg->ran++;
    pg->t_last = now_s();
    if (rc) {
        it->status = ST_FAILED;
        it->col[C_ERROR] = dupstr(err);
        progress_say(pg, "[%d/%d] %s: FAILED: %s\n", i + 1, b->n, it->path, err);
    } else {
        pv_timing t;
        pv_result_timing(r, &t);
        double v[] = { t.decode, t.preprocess, t.engine, t.postprocess, t.wait, t.total };
        for (int c = C_DECODE; c <= C_TOTAL; c++) it->col[c] = fmt_ms(v[c - C_DECODE]);
        char cnt[16];
        snprintf(cnt, sizeof cnt, "%d", cli_result_count(r));
        it->col[C_OBJECTS] = dupstr(cnt);
        it->status = ST_OK;
        const char *text = pv_result_text(r), *nl = strchr(text, '\n');   /* the bundle's first line: "3 objects", "2 hands" */
        if (!pg->tty && !pg->quiet)
            progress_say(pg, "[%d/%d] %s: ok %.1f ms, %.*s\n", i + 1, b->n, it->path, t.total, nl ? (int)(nl - text) : (int)strlen(text), text);
    }
    pv_result_free(r);
    cli_frame_free(&f);
    return 0;
}

static int write_summary(const batch *b, const char *path)
{
    sbuf s = { 0 };
    for (int c = 0; c < NCOL; c++) sb_csv(&s, col_name[c], c == NCOL - 1);
    for (int i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        for (int c = 0; c < NCOL; c++) sb_csv(&s, c == C_STATUS ? st_name[it->status] : it->col[c] ? it->col[c] : "", c == NCOL - 1);
    }
    char err[1024] = "out of memory for the summary";
    int rc = s.oom ? -1 : cli_save_file(path, s.p, s.n, err, sizeof err);
    if (rc) fprintf(stderr, "perceive: %s: %s\n", path, err);
    free(s.p);
    return rc;
}

static int make_out_dir(batch *b)
{
    const char *out = b->o->out;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", out) >= (int)sizeof p) { fprintf(stderr, "perceive: --out: path too long\n"); return -1; }
    for (char *s = p + 1;; s++) {          /* mkdir -p */
        bool last = !*s;
        if (*s == '/' || last) {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) { fprintf(stderr, "perceive: --out: cannot make '%s': %s\n", p, strerror(errno)); return -1; }
            if (last) break;
            *s = '/';
        }
    }
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) { fprintf(stderr, "perceive: --out: '%s' is not a folder\n", out); return -1; }
    b->out_exists = true;
    b->out_dev = st.st_dev;
    b->out_ino = st.st_ino;
    return 0;
}

static int list_inputs(batch *b)
{
    const cli_mopts *o = b->o;
    if (o->list && add_list(b, o->list)) return -1;
    for (int i = 0; i < o->nfiles; i++) {
        const char *f = o->files[i];
        struct stat st;
        if (stat(f, &st) == 0 && S_ISDIR(st.st_mode)) {
            ignored ign = { 0 };
            int start = b->n;
            if (add_dir(b, f, 0, &ign)) return -1;
            qsort(b->v + start, (size_t)(b->n - start), sizeof *b->v, cmp_path);
            if (ign.n && !o->quiet)
                fprintf(stderr, "perceive: %s: left out %d file%s that %s does not take (%s%s%s%s%s%s)\n", f, ign.n, ign.n > 1 ? "s" : "",
                        o->model, ign.first[0], ign.n > 1 ? ", " : "", ign.n > 1 ? ign.first[1] : "", ign.n > 2 ? ", " : "",
                        ign.n > 2 ? ign.first[2] : "", ign.n > 3 ? ", ..." : "");
            if (b->n == start && !o->quiet) fprintf(stderr, "perceive: %s: no %s inputs in this folder\n", f, o->model);
        } else if (is_list_name(f) && !(stat(f, &st) == 0 && !S_ISREG(st.st_mode))) {
            if (add_list(b, f)) return -1;
        } else if (add_item(b, f)) return -1;
    }
    return 0;
}

static void batch_free(batch *b)
{
    for (int i = 0; i < b->n; i++) {
        item *it = &b->v[i];
        free(it->path);
        free(it->key);
        free(it->name);
        free(it->json);
        free(it->png);
        for (int c = 0; c < NCOL; c++) free(it->col[c]);
    }
    free(b->v);
}

static bool model_known(const char *name)
{
    for (int i = 0; i < pv_model_count(); i++)
        if (!strcmp(pv_model_name(i), name)) return true;
    return false;
}

int cli_batch(const cli_mopts *o)
{
    if (!model_known(o->model)) { fprintf(stderr, "perceive: model '%s' is not known (perceive models)\n", o->model); return 2; }
    if (!o->out) { fprintf(stderr, "perceive: run %s: a batch (a folder, a list or several files) needs --out DIR\n", o->model); return 2; }
    if (o->json) { fprintf(stderr, "perceive: --json names one file; a batch writes OUT/NAME.json per input (--out)\n"); return 2; }
    if (o->png) { fprintf(stderr, "perceive: --png takes no file name in a batch run (one picture per input in --out)\n"); return 2; }
    if (o->nsweeps) { fprintf(stderr, "perceive: --sweep belongs to one frame; a batch runs each input as its own frame\n"); return 2; }
    if (!o->nfiles && !o->list) { fprintf(stderr, "perceive: run %s: no inputs (a folder, a list file or files)\n", o->model); return 2; }
    batch b = { .o = o };
    oldsum old = { 0 };
    pv_model *m = NULL;
    int rc = 2;
    char summary[PATH_MAX];
    if (snprintf(summary, sizeof summary, "%s/summary.csv", o->out) >= (int)sizeof summary) { fprintf(stderr, "perceive: --out: path too long\n"); return 2; }
    if (o->format && !model_takes(&b, o->format)) {
        fprintf(stderr, "perceive: --format %s: %s does not take this format\n", o->format, o->model);
        return 2;
    }
    if (make_out_dir(&b) || list_inputs(&b) || drop_duplicates(&b) < 0) goto done;
    if (!b.n) { fprintf(stderr, "perceive: run %s: no inputs\n", o->model); goto done; }
    if (assign_names(&b)) { fprintf(stderr, "perceive: out of memory naming the outputs\n"); goto done; }
    oldsum_read(summary, &old);

    struct sigaction sa = { .sa_handler = on_sigint, .sa_flags = SA_RESETHAND }, prev;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &prev);
    progress pg = { .tty = isatty(STDERR_FILENO), .quiet = o->quiet, .total = b.n };
    double t_start = now_s();
    bool load_failed = false;
    int nok = 0, nfail = 0, nskip = 0;
    for (int i = 0; i < b.n; i++) {
        item *it = &b.v[i];
        if (interrupted || load_failed) { it->status = ST_NOT_RUN; continue; }
        if (!o->force && json_complete(it->json, o->model) && (!o->png_each || file_nonempty(it->png))) {
            it->status = ST_SKIPPED;
            take_old_numbers(&old, it);
            nskip++;
            if (!pg.tty && !pg.quiet) progress_say(&pg, "[%d/%d] %s: skipped (%s exists)\n", i + 1, b.n, it->path, it->json);
            progress_draw(&pg, i + 1, it->path);
            continue;
        }
        if (run_one(&b, &m, it, &pg, i)) { load_failed = true; continue; }
        if (it->status == ST_OK) nok++;
        else if (it->status == ST_FAILED) nfail++;
        progress_draw(&pg, i + 1, NULL);
    }
    sigaction(SIGINT, &prev, NULL);
    double wall = now_s() - t_start;
    if (pg.drawn) { fputs("\r\033[K", stderr); pg.drawn = false; }
    int w = write_summary(&b, summary);
    int nnot = b.n - nok - nfail - nskip;
    fprintf(stderr, "perceive: %d input%s: %d ok, %d skipped, %d failed", b.n, b.n > 1 ? "s" : "", nok, nskip, nfail);
    if (nnot) fprintf(stderr, ", %d not run", nnot);
    if (m) fprintf(stderr, " in %.1f s (model load %.1f s", wall, pg.load);
    if (m && pg.ran && pg.t_last > pg.t_first) fprintf(stderr, ", %.2f frames/s", pg.ran / (pg.t_last - pg.t_first));
    if (m) fprintf(stderr, ")");
    fprintf(stderr, "; summary in %s\n", summary);
    if (nfail) {
        fprintf(stderr, "perceive: failed:\n");
        for (int i = 0; i < b.n; i++)
            if (b.v[i].status == ST_FAILED) fprintf(stderr, "  %s: %s\n", b.v[i].path, b.v[i].col[C_ERROR]);
    }
    rc = interrupted ? 130 : (nfail || load_failed || w) ? 1 : 0;
done:
    pv_model_close(m);
    oldsum_free(&old);
    batch_free(&b);
    return rc;
}
