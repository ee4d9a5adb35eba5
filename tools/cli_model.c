/* perceive CLI: the model commands, through the public model API only.
 *
 *   perceive models
 *   perceive info MODEL [--weights DIR] [--strict]
 *   perceive gen MODEL DIR
 *   perceive run MODEL FILE [--sweep FILE]... [--box x1,y1,x2,y2[,is_right]]... [--left] [--format F]
 *                [--json F] [--png F] [--param k=v]... [--weights DIR] [--strict] [--threads N]
 *                [--precision fp32|bf16] [--quiet] [--no-timing]
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

#define MAX_PARAMS 64
#define MAX_SWEEPS 16
#define MAX_BOXES  16

typedef struct mopts {
    const char *model, *file, *format, *json, *png, *weights;
    const char *sweeps[MAX_SWEEPS];
    int nsweeps;
    pv_param params[MAX_PARAMS];
    int nparams;
    char box_text[MAX_BOXES][128];
    int nboxes, last_box_param;
    int threads, strict, quiet, no_timing, precision;
} mopts;

static int parse_mopts(int argc, char **argv, mopts *o)
{
    memset(o, 0, sizeof *o);
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool v = i + 1 < argc;
        if (!strcmp(a, "--format") && v) o->format = argv[++i];
        else if (!strcmp(a, "--json") && v) o->json = argv[++i];
        else if (!strcmp(a, "--png") && v) o->png = argv[++i];
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
        } else if (npos == 0) { o->model = a; npos++; }
        else if (npos == 1) { o->file = a; npos++; }
        else { fprintf(stderr, "perceive: too many arguments: %s\n", a); return -1; }
    }
    if (!o->model) { fprintf(stderr, "perceive: which model? (perceive models)\n"); return -1; }
    return 0;
}

static int open_model(const mopts *o, pv_model **m)
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
    pv_model *m;
    if (open_model(&o, &m)) return 1;
    fputs(pv_model_info_json(m), stdout);
    putchar('\n');
    pv_model_close(m);
    return 0;
}

int cli_run(int argc, char **argv)
{
    mopts o;
    if (parse_mopts(argc, argv, &o)) return 2;
    if (!o.file) { fprintf(stderr, "perceive: run %s: no input file\n", o.model); return 2; }
    pv_input in[1 + MAX_SWEEPS];
    void *bufs[1 + MAX_SWEEPS] = { 0 };
    int n_in = 0, rc = 1;
    pv_model *m = NULL;
    pv_result *r = NULL;
    for (int i = 0; i <= o.nsweeps; i++) {
        const char *path = i == 0 ? o.file : o.sweeps[i - 1];
        size_t len = 0;
        if (cli_read_file(path, &bufs[i], &len)) goto done;
        in[n_in++] = (pv_input){ .name = i == 0 ? NULL : "sweep", .format = (i == 0 && o.format ? o.format : cli_format_of(path)),
                                 .data = bufs[i], .len = len };
        /* a bad file is refused before the model is loaded */
        if (pv_input_validate_for(o.model, &in[n_in - 1]) != PV_OK) { fprintf(stderr, "perceive: %s: %s\n", path, pv_last_error()); goto done; }
    }
    if (open_model(&o, &m)) goto done;
    if (pv_model_run(m, in, n_in, o.params, o.nparams, &r) != PV_OK) {
        fprintf(stderr, "perceive: %s: %s\n", o.file, pv_model_errmsg(m));
        goto done;
    }
    pv_timing t;
    pv_result_timing(r, &t);
    if (!o.quiet) {
        /* the bundle's summary: a first line ("3 objects", "2 hands"), then a line per item */
        const char *text = pv_result_text(r), *nl = strchr(text, '\n');
        int first = nl ? (int)(nl - text) : (int)strlen(text);
        printf("%s: %.*s (%.1f ms: pre %.1f, engine %.1f, post %.1f)\n%s", o.file, first, text, t.total, t.preprocess, t.engine,
               t.postprocess, nl ? nl + 1 : "");
    }
    if (o.json && cli_write_text(o.json, o.no_timing ? pv_result_json_stable(r) : pv_result_json(r))) goto done;
    if (o.png) {
        void *png = NULL;
        size_t len = 0;
        if (pv_result_png(r, 0, &png, &len) != PV_OK) { fprintf(stderr, "perceive: --png: %s\n", pv_last_error()); goto done; }
        int w = cli_write_bytes(o.png, png, len);
        pv_free(png);
        if (w) goto done;
    }
    rc = 0;
done:
    pv_result_free(r);
    pv_model_close(m);
    for (int i = 0; i <= o.nsweeps; i++) free(bufs[i]);
    return rc;
}
