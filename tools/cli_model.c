/* perceive CLI: the model commands, through the public model API only.
 *
 *   perceive models
 *   perceive info MODEL [--weights DIR] [--strict]
 *   perceive gen MODEL DIR
 *   perceive run MODEL FILE [--sweep FILE]... [--box x1,y1,x2,y2[,is_right]]... [--left] [--format F]
 *                [--json F] [--png F] [--param k=v]... [--weights DIR] [--strict] [--threads N]
 *                [--precision fp32|bf16] [--quiet] [--no-timing]
 *   perceive run MODEL DIR|LIST|FILE... --out DIR [--list FILE] [--recursive] [--force] [--png]
 *                [the options above but --json, --sweep]          (a batch run: cli_batch.c)
 * --box is the param box=...; --left marks the box before it as a left hand (",0").
 */
#include "perceive.h"
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PARAMS CLI_MAX_PARAMS
#define MAX_SWEEPS CLI_MAX_SWEEPS
#define MAX_BOXES  CLI_MAX_BOXES

typedef cli_mopts mopts;

/* A batch run is asked for by --out or --list; there --png is a flag (one picture per input)
 * instead of naming the one picture. */
static bool wants_batch(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "--list")) return true;
    return false;
}

static int parse_mopts(int argc, char **argv, mopts *o)
{
    memset(o, 0, sizeof *o);
    bool batch = wants_batch(argc, argv);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool v = i + 1 < argc;
        if (!strcmp(a, "--format") && v) o->format = argv[++i];
        else if (!strcmp(a, "--json") && v) o->json = argv[++i];
        else if (!strcmp(a, "--png") && batch) o->png_each = 1;
        else if (!strcmp(a, "--png") && v) o->png = argv[++i];
        else if (!strcmp(a, "--out") && v) o->out = argv[++i];
        else if (!strcmp(a, "--list") && v) o->list = argv[++i];
        else if (!strcmp(a, "--recursive")) o->recursive = 1;
        else if (!strcmp(a, "--force")) o->force = 1;
        else if (!strcmp(a, "--weights") && v) o->weights = argv[++i];
        else if (!strcmp(a, "--strict")) o->strict = 1;
        else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "--no-timing")) o->no_timing = 1;
        else if (!strcmp(a, "--precision") && v) { if (cli_parse_precision(argv[++i], &o->precision)) return -1; }
        else if (!strcmp(a, "--threads") && v) {
            long long t;
            if (cli_parse_int(a, argv[++i], 1, 1024, &t)) return -1;
            o->threads = (int)t;
        } else if (!strcmp(a, "--sweep") && v) {
            if (o->nsweeps >= MAX_SWEEPS) { fprintf(stderr, "perceive: more than %d --sweep files\n", MAX_SWEEPS); return -1; }
            o->sweeps[o->nsweeps++] = argv[++i];
        } else if (!strcmp(a, "--box") && v) {
            if (o->nboxes >= MAX_BOXES || o->nparams >= MAX_PARAMS) { fprintf(stderr, "perceive: more than %d --box\n", MAX_BOXES); return -1; }
            snprintf(o->box_text[o->nboxes], sizeof o->box_text[0], "%s", argv[++i]);
            o->last_box_param = o->nparams;
            o->params[o->nparams++] = (pv_param){ "box", o->box_text[o->nboxes++] };
        } else if (!strcmp(a, "--left")) {
            if (!o->nboxes) { fprintf(stderr, "perceive: --left marks the --box before it, and there is none\n"); return -1; }
            char *b = o->box_text[o->nboxes - 1];
            int commas = 0;
            for (const char *c = b; *c; c++) commas += *c == ',';
            if (commas != 3) { fprintf(stderr, "perceive: --left after --box '%s': want x1,y1,x2,y2 before it\n", b); return -1; }
            if (strlen(b) + 3 > sizeof o->box_text[0]) { fprintf(stderr, "perceive: --box '%s' is too long\n", b); return -1; }
            strcat(b, ",0");
        } else if (!strcmp(a, "--param") && v) {
            char *kv = argv[++i], *eq = strchr(kv, '=');
            if (!eq || eq == kv) { fprintf(stderr, "perceive: --param '%s': want key=value\n", kv); return -1; }
            if (o->nparams >= MAX_PARAMS) { fprintf(stderr, "perceive: more than %d --param\n", MAX_PARAMS); return -1; }
            *eq = 0;
            o->params[o->nparams++] = (pv_param){ kv, eq + 1 };
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "perceive: unknown option or missing value: %s\n", a);
            return -1;
        } else if (!o->model) o->model = a;
        else if (o->nfiles < CLI_MAX_FILES) o->files[o->nfiles++] = a;
        else { fprintf(stderr, "perceive: more than %d inputs on the command line (use --list FILE or a directory)\n", CLI_MAX_FILES); return -1; }
    }
    if (!o->model) { fprintf(stderr, "perceive: which model? (perceive models)\n"); return -1; }
    return 0;
}

int cli_open_model(const mopts *o, pv_model **m)
{
    pv_model_options mo = { .threads = o->threads, .weights_dir = o->weights, .strict = o->strict,
                            .precision = (pv_precision)o->precision };
    if (pv_model_open(o->model, &mo, m) != PV_OK) {
        fprintf(stderr, "perceive: %s\n", pv_last_error());
        return -1;
    }
    const char *info = pv_model_info_json(*m);
    cli_precision_note(info);
    if (!o->quiet && info && strstr(info, "\"weights\":\t\"generated\""))
        fprintf(stderr, "perceive: %s: release artifacts not found; using GENERATED weights (the release's structure, seeded "
                        "random values: NOT a trained model). `perceive info %s` shows where; --strict refuses instead.\n",
                o->model, o->model);
    return 0;
}

int cli_frame_load(const mopts *o, const char *file, bool validate, cli_frame *f, char *err, size_t errn)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i <= o->nsweeps; i++) {
        const char *path = i == 0 ? file : o->sweeps[i - 1];
        size_t len = 0;
        if (cli_load_file(path, &f->bufs[i], &len, err, errn)) {
            /* the caller names the frame's file; the message keeps a sweep's */
            size_t n = strlen(path);
            if (i == 0 && err[0] == '\'' && !strncmp(err + 1, path, n) && !strncmp(err + 1 + n, "': ", 3)) memmove(err, err + n + 4, strlen(err + n + 4) + 1);
            return -1;
        }
        f->in[f->n++] = (pv_input){ .name = i == 0 ? NULL : "sweep", .format = (i == 0 && o->format ? o->format : cli_format_of(path)),
                                    .data = f->bufs[i], .len = len, .path = path };
        if (validate && pv_input_validate_for(o->model, &f->in[f->n - 1]) != PV_OK) {
            if (i == 0) snprintf(err, errn, "%s", pv_last_error());
            else snprintf(err, errn, "%s: %s", path, pv_last_error());
            return -1;
        }
    }
    return 0;
}

void cli_frame_free(cli_frame *f)
{
    for (int i = 0; i < 1 + MAX_SWEEPS; i++) free(f->bufs[i]);
    memset(f, 0, sizeof *f);
}

int cli_frame_run(const mopts *o, pv_model *m, const cli_frame *f, pv_result **r, char *err, size_t errn)
{
    if (pv_model_run(m, f->in, f->n, o->params, o->nparams, r) == PV_OK) return 0;
    snprintf(err, errn, "%s", pv_model_errmsg(m));
    return -1;
}

int cli_result_write(const pv_result *r, const char *json, bool no_timing, const char *png, bool atomic, char *err, size_t errn)
{
    if (png) {
        void *bytes = NULL;
        size_t len = 0;
        if (pv_result_png(r, 0, &bytes, &len) != PV_OK) { snprintf(err, errn, "--png: %s", pv_last_error()); return -1; }
        int w = (atomic ? cli_save_file : cli_put_file)(png, bytes, len, err, errn);
        pv_free(bytes);
        if (w) return -1;
    }
    if (json) {
        const char *text = no_timing ? pv_result_json_stable(r) : pv_result_json(r);
        if ((atomic ? cli_save_file : cli_put_file)(json, text, strlen(text), err, errn)) return -1;
    }
    return 0;
}

int cli_result_count(const pv_result *r)
{
    const pv_object3d *objs;
    const pv_hand *hands;
    return pv_result_objects3d(r, &objs) + pv_result_hands(r, &hands);
}

int cli_models(void)
{
    for (int i = 0; i < pv_model_count(); i++) printf("%-10s %s\n", pv_model_name(i), pv_model_description(i));
    return 0;
}

int cli_gen(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: perceive gen MODEL DIR\n"); return 2; }
    if (pv_model_generate(argv[0], argv[1]) != PV_OK) { fprintf(stderr, "perceive: %s\n", pv_last_error()); return 1; }
    printf("%s: generated artifacts (seeded random weights, not a trained model) written to %s\n", argv[0], argv[1]);
    return 0;
}

int cli_info(int argc, char **argv)
{
    mopts o;
    if (parse_mopts(argc, argv, &o)) return 2;
    if (o.nfiles) { fprintf(stderr, "perceive: info %s: unexpected argument %s\n", o.model, o.files[0]); return 2; }
    pv_model *m;
    if (cli_open_model(&o, &m)) return 1;
    fputs(pv_model_info_json(m), stdout);
    putchar('\n');
    pv_model_close(m);
    return 0;
}

/* A batch when asked (--out, --list) or when the input is a directory or a list file. */
static bool is_batch(const mopts *o)
{
    if (o->out || o->list || o->nfiles > 1) return true;
    if (o->nfiles == 0) return false;
    size_t n = strlen(o->files[0]);
    struct stat st;
    return (stat(o->files[0], &st) == 0 && S_ISDIR(st.st_mode)) ||
           (n > 4 && (!strcasecmp(o->files[0] + n - 4, ".txt") || !strcasecmp(o->files[0] + n - 4, ".lst")));
}

int cli_run(int argc, char **argv)
{
    mopts o;
    if (parse_mopts(argc, argv, &o)) return 2;
    if (is_batch(&o)) return cli_batch(&o);
    if (!o.nfiles) { fprintf(stderr, "perceive: run %s: no input file\n", o.model); return 2; }
    if (o.recursive || o.force) { fprintf(stderr, "perceive: --recursive and --force are for batch runs (--out DIR)\n"); return 2; }
    const char *file = o.files[0];
    cli_frame f;
    char err[1024];
    int rc = 1;
    pv_model *m = NULL;
    pv_result *r = NULL;
    /* a bad file is refused before the model is loaded */
    if (cli_frame_load(&o, file, true, &f, err, sizeof err)) { fprintf(stderr, "perceive: %s: %s\n", file, err); goto done; }
    if (cli_open_model(&o, &m)) goto done;
    if (cli_frame_run(&o, m, &f, &r, err, sizeof err)) { fprintf(stderr, "perceive: %s: %s\n", file, err); goto done; }
    pv_timing t;
    pv_result_timing(r, &t);
    if (!o.quiet) {
        /* the bundle's summary: a first line ("3 objects", "2 hands"), then a line per item */
        const char *text = pv_result_text(r), *nl = strchr(text, '\n');
        int first = nl ? (int)(nl - text) : (int)strlen(text);
        printf("%s: %.*s (%.1f ms: pre %.1f, engine %.1f, post %.1f)\n%s", file, first, text, t.total, t.preprocess, t.engine,
               t.postprocess, nl ? nl + 1 : "");
    }
    if (cli_result_write(r, o.json, o.no_timing, o.png, false, err, sizeof err)) { fprintf(stderr, "perceive: %s\n", err); goto done; }
    rc = 0;
done:
    pv_result_free(r);
    pv_model_close(m);
    cli_frame_free(&f);
    return rc;
}
