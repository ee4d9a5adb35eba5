/* perceive CLI: `perceive bench MODEL` through the public model API.
 *
 *   perceive bench MODEL [--inputs F[,F...]] [--box x1,y1,x2,y2[,is_right]]... [--param k=v]...
 *                        [--iters N] [--threads N] [--precision fp32|bf16] [--json F]
 *                        [--weights DIR] [--strict] [--fixture DIR]
 *
 * Reports load time, first-call time, p50/p99 per stage and end to end, back-to-back throughput
 * serialized and with two callers (the model's stages overlap), peak RSS, the CPU and ISA, and
 * checks this run's output against the stored reference fixture (the bundle's check:
 * pv_model_fixture_check; without --inputs, the bundle's default input and params:
 * pv_model_bench_defaults). A disagreement fails the bench (exit 1). */
#include "perceive.h"
#include "cli.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#define MAX_INPUTS 16
#define MAX_PARAMS 32

typedef struct bopts {
    const char *model, *json, *weights, *fixture;
    const char *inputs[MAX_INPUTS];
    int ninputs, iters, threads, strict, precision;
    pv_param params[MAX_PARAMS];
    int nparams;
} bopts;

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    double pos = q * (n - 1);
    int i = (int)pos;
    return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[n - 1];
}

typedef struct feeder { pv_model *m; const pv_input *in; const pv_param *p; int np, frames, fails; } feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    for (int i = 0; i < f->frames; i++) {
        pv_result *r = NULL;
        if (pv_model_run(f->m, f->in, 1, f->p, f->np, &r) != PV_OK) f->fails++;
        pv_result_free(r);
    }
    return NULL;
}

/* Frames per second with `callers` threads each running `frames` frames. */
static double throughput(pv_model *m, const pv_input *in, const pv_param *p, int np, int callers, int frames, int *fails)
{
    pthread_t th[4];
    feeder f[4];
    double t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec + ts.tv_nsec * 1e-9;
    for (int i = 0; i < callers; i++) { f[i] = (feeder){ m, in, p, np, frames, 0 }; pthread_create(&th[i], NULL, feed, &f[i]); }
    for (int i = 0; i < callers; i++) { pthread_join(th[i], NULL); *fails += f[i].fails; }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return callers * frames / (ts.tv_sec + ts.tv_nsec * 1e-9 - t0);
}

int cli_bench(int argc, char **argv)
{
    bopts o = { .iters = 10 };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool v = i + 1 < argc;
        long long x;
        if (!strcmp(a, "--inputs") && v) {
            char *list = argv[++i];
            for (char *t = strtok(list, ","); t && o.ninputs < MAX_INPUTS; t = strtok(NULL, ",")) o.inputs[o.ninputs++] = t;
        } else if (!strcmp(a, "--iters") && v) { if (cli_parse_int(a, argv[++i], 1, 100000, &x)) return 2; o.iters = (int)x; }
        else if (!strcmp(a, "--threads") && v) { if (cli_parse_int(a, argv[++i], 1, 1024, &x)) return 2; o.threads = (int)x; }
        else if (!strcmp(a, "--json") && v) o.json = argv[++i];
        else if (!strcmp(a, "--weights") && v) o.weights = argv[++i];
        else if (!strcmp(a, "--fixture") && v) o.fixture = argv[++i];
        else if (!strcmp(a, "--strict")) o.strict = 1;
        else if ((!strcmp(a, "--box") || !strcmp(a, "--param")) && v) {
            if (o.nparams >= MAX_PARAMS) { fprintf(stderr, "perceive: bench: more than %d --box/--param\n", MAX_PARAMS); return 2; }
            char *val = argv[++i];
            if (!strcmp(a, "--box")) o.params[o.nparams++] = (pv_param){ "box", val };
            else {
                char *eq = strchr(val, '=');
                if (!eq || eq == val) { fprintf(stderr, "perceive: bench: --param '%s': want key=value\n", val); return 2; }
                *eq = 0;
                o.params[o.nparams++] = (pv_param){ val, eq + 1 };
            }
        }
        else if (!strcmp(a, "--precision") && v) { if (cli_parse_precision(argv[++i], &o.precision)) return 2; }
        else if (a[0] == '-') { fprintf(stderr, "perceive: bench: unknown option or missing value: %s\n", a); return 2; }
        else if (!o.model) o.model = a;
        else { fprintf(stderr, "perceive: bench: too many arguments: %s\n", a); return 2; }
    }
    if (!o.model) { fprintf(stderr, "usage: perceive bench MODEL [--inputs F,...] [--iters N] [--threads N] [--precision fp32|bf16] [--json F]\n"); return 2; }
    pv_bench_defaults bd;
    if (!o.ninputs) {
        if (pv_model_bench_defaults(o.model, &bd) != PV_OK) { fprintf(stderr, "perceive: bench %s: give --inputs (%s)\n", o.model, pv_last_error()); return 2; }
        o.inputs[o.ninputs++] = bd.input;
        if (!o.fixture) o.fixture = bd.fixture;
        for (int i = 0; !o.nparams && i < bd.nparams; i++) o.params[i] = bd.params[i];
        if (!o.nparams) o.nparams = bd.nparams;
    }
    void *bufs[MAX_INPUTS] = { 0 };
    pv_input ins[MAX_INPUTS];
    int rc = 1;
    pv_model *m = NULL;
    for (int i = 0; i < o.ninputs; i++) {
        size_t len;
        if (cli_read_file(o.inputs[i], &bufs[i], &len)) goto done;
        ins[i] = (pv_input){ .name = NULL, .format = cli_format_of(o.inputs[i]), .data = bufs[i], .len = len, .path = o.inputs[i] };
        if (pv_input_validate_for(o.model, &ins[i]) != PV_OK) { fprintf(stderr, "perceive: %s: %s\n", o.inputs[i], pv_last_error()); goto done; }
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t0 = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    pv_model_options mo = { .threads = o.threads, .weights_dir = o.weights, .strict = o.strict, .precision = (pv_precision)o.precision };
    if (pv_model_open(o.model, &mo, &m) != PV_OK) { fprintf(stderr, "perceive: %s\n", pv_last_error()); goto done; }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double load_ms = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6 - t0;
    const char *info = pv_model_info_json(m);
    cli_precision_note(info);
    bool generated = info && strstr(info, "\"generated\"");
    bool bf16 = info && strstr(info, "\"precision\":\t\"bf16\"");
    printf("perceive bench %s: isa %s, threads %d, precision %s, weights %s, load %.1f ms\n", o.model, pv_isa(), o.threads,
           bf16 ? "bf16" : "fp32", generated ? "GENERATED (not a trained model)" : "from artifacts", load_ms);
    FILE *jf = o.json ? fopen(o.json, "w") : NULL;
    if (o.json && !jf) { fprintf(stderr, "perceive: cannot write %s\n", o.json); goto done; }
    if (jf) fprintf(jf, "{\"model\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"precision\": \"%s\", \"weights_generated\": %s, "
                        "\"load_ms\": %.3f, \"inputs\": [",
                    o.model, pv_isa(), o.threads, bf16 ? "bf16" : "fp32", generated ? "true" : "false", load_ms);
    int disagree = 0;
    for (int k = 0; k < o.ninputs; k++) {
        double *st[6];
        for (int s = 0; s < 6; s++) st[s] = calloc((size_t)o.iters, sizeof(double));
        double first = 0;
        pv_result *keep = NULL;
        for (int it = 0; it <= o.iters; it++) {
            pv_result *r = NULL;
            if (pv_model_run(m, &ins[k], 1, o.params, o.nparams, &r) != PV_OK) { fprintf(stderr, "perceive: %s: %s\n", o.inputs[k], pv_model_errmsg(m)); goto done; }
            pv_timing t;
            pv_result_timing(r, &t);
            if (it == 0) { first = t.total; keep = r; continue; }
            double v[6] = { t.decode, t.preprocess, t.engine, t.postprocess, t.wait, t.total };
            for (int s = 0; s < 6; s++) st[s][it - 1] = v[s];
            pv_result_free(r);
        }
        static const char *const names[6] = { "decode", "preprocess", "engine", "postprocess", "wait", "total" };
        printf("%s: first call %.1f ms\n", o.inputs[k], first);
        if (jf) fprintf(jf, "%s{\"input\": \"%s\", \"first_ms\": %.3f", k ? ", " : "", o.inputs[k], first);
        for (int s = 0; s < 6; s++) {
            double p50 = pct(st[s], o.iters, 0.5), p99 = pct(st[s], o.iters, 0.99);
            printf("  %-12s p50 %9.2f ms  p99 %9.2f ms\n", names[s], p50, p99);
            if (jf) fprintf(jf, ", \"%s_p50_ms\": %.3f, \"%s_p99_ms\": %.3f", names[s], p50, names[s], p99);
        }
        int fails = 0, nf = o.iters < 4 ? 4 : o.iters;
        double serial = throughput(m, &ins[k], o.params, o.nparams, 1, nf, &fails),
               piped = throughput(m, &ins[k], o.params, o.nparams, 2, (nf + 1) / 2, &fails);
        printf("  throughput   %.2f frames/s serialized, %.2f frames/s with 2 callers (stages overlap)%s\n", serial, piped,
               fails ? " (some runs failed)" : "");
        if (jf) fprintf(jf, ", \"fps_serial\": %.4f, \"fps_2_callers\": %.4f", serial, piped);
        if (k == 0 && o.fixture) {
            char why[600];
            int a = pv_model_fixture_check(m, keep, o.fixture, why, sizeof why);
            printf("  agreement    %s: %s\n", a == 0 ? "OK" : a > 0 ? "DISAGREES" : "not checked", why);
            if (a > 0) disagree = 1;
            if (jf) fprintf(jf, ", \"agreement\": \"%s\"", a == 0 ? "ok" : a > 0 ? "disagrees" : "unchecked");
        }
        if (jf) fprintf(jf, "}");
        pv_result_free(keep);
        for (int s = 0; s < 6; s++) free(st[s]);
        if (fails) disagree = 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
    if (jf) { fprintf(jf, "], \"peak_rss_bytes\": %ld}\n", ru.ru_maxrss * 1024L); fclose(jf); }
    if (disagree) { fprintf(stderr, "perceive: bench: THE OUTPUTS DISAGREE WITH THE REFERENCE FIXTURE\n"); goto done; }
    rc = 0;
done:
    pv_model_close(m);
    for (int i = 0; i < o.ninputs; i++) free(bufs[i]);
    return rc;
}
