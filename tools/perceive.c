/* perceive: the command-line tool. A thin caller of the public API (include/perceive.h) plus
 * the file formats of src/io.
 *
 *   perceive onnx run FILE.onnx --inputs IN.npz [--outputs OUT.npz] [--threads N] [--precision P] [--no-fuse]
 *   perceive onnx bench FILE.onnx --inputs IN.npz [--iters N] [--rounds R] [--threads N] [--precision P]
 *                                 [--json F] [--no-peer] [--no-fuse]
 *   perceive onnx fill IN.onnx OUT.onnx [--seed S] [--external-threshold BYTES]
 *   perceive onnx info FILE.onnx
 *   perceive version
 * and the model commands of cli_model.c (models, info, run).
 */
#include "perceive.h"
#include "cli.h"
#include "io/io.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  perceive models\n"
            "  perceive info MODEL [--weights DIR] [--strict]\n"
            "  perceive gen MODEL DIR\n"
            "  perceive run MODEL FILE [--sweep FILE]... [--format F] [--json F|-] [--png F] [--param k=v]...\n"
            "               [--weights DIR] [--strict] [--threads N] [--precision fp32|bf16] [--quiet] [--no-timing]\n"
            "  perceive run MODEL DIR|LIST.txt|FILE... --out DIR [--list FILE] [--recursive] [--force] [--png]\n"
            "               [--format F] [--param k=v]... [--box B]... [the model options above] [--quiet] [--no-timing]\n"
            "  perceive serve MODEL [--host 127.0.0.1] [--port 8080] [--threads N] [--workers N] [--queue N]\n"
            "               [--max-body-mb N] [--max-connections N] [--client-queue N] [--max-conn-per-ip N]\n"
            "               [--drain-s S] [--body-timeout-s S] [--weights DIR] [--strict] [--precision P] [--quiet]\n"
            "  perceive bench MODEL [--inputs F,...] [--iters N] [--threads N] [--precision fp32|bf16] [--json F]\n"
            "               [--weights DIR] [--fixture DIR]\n"
            "  perceive onnx run FILE.onnx --inputs IN.npz [--outputs OUT.npz] [--threads N] [--precision fp32|bf16] [--no-fuse]\n"
            "  perceive onnx bench FILE.onnx --inputs IN.npz [--iters N] [--rounds R] [--threads N] [--precision fp32|bf16]\n"
            "                      [--json F] [--no-peer] [--no-fuse]\n"
            "  perceive onnx fill IN.onnx OUT.onnx [--seed S] [--external-threshold BYTES]\n"
            "  perceive onnx info FILE.onnx\n"
            "  perceive version\n");
}

typedef struct opts {
    const char *inputs, *outputs, *json;
    int threads, iters, no_peer, no_fuse, precision, rounds;
    unsigned long long seed;
    long long ext_threshold;
    const char *pos[4];
    int npos;
} opts;

static int parse_opts(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->iters = 20;
    o->seed = 1;
    o->ext_threshold = 1024;
    o->rounds = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--inputs") && has_val) o->inputs = argv[++i];
        else if (!strcmp(a, "--outputs") && has_val) o->outputs = argv[++i];
        else if (!strcmp(a, "--json") && has_val) o->json = argv[++i];
        else if (!strcmp(a, "--no-peer")) o->no_peer = 1;
        else if (!strcmp(a, "--no-fuse")) o->no_fuse = 1;
        else if (!strcmp(a, "--threads") && has_val) { if (cli_parse_int(a, argv[++i], 1, 1024, &v)) return -1; o->threads = (int)v; }
        else if (!strcmp(a, "--precision") && has_val) { if (cli_parse_precision(argv[++i], &o->precision)) return -1; }
        else if (!strcmp(a, "--rounds") && has_val) { if (cli_parse_int(a, argv[++i], 1, 1000, &v)) return -1; o->rounds = (int)v; }
        else if (!strcmp(a, "--iters") && has_val) { if (cli_parse_int(a, argv[++i], 1, 1000000, &v)) return -1; o->iters = (int)v; }
        else if (!strcmp(a, "--seed") && has_val) { if (cli_parse_int(a, argv[++i], 0, LLONG_MAX, &v)) return -1; o->seed = (unsigned long long)v; }
        else if (!strcmp(a, "--external-threshold") && has_val) { if (cli_parse_int(a, argv[++i], 0, LLONG_MAX, &v)) return -1; o->ext_threshold = v; }
        else if (a[0] == '-' && a[1] == '-') { fprintf(stderr, "perceive: unknown option or missing value: %s\n", a); return -1; }
        else if (o->npos < 4) o->pos[o->npos++] = a;
        else { fprintf(stderr, "perceive: too many arguments: %s\n", a); return -1; }
    }
    return 0;
}

/* Loads IN.npz and makes input descriptors by name. */
static int load_inputs(const char *path, pvio_arrays *arrs, pv_tensor **ins)
{
    pvc_msg msg = {{0}};
    if (pvio_npz_read_file(path, arrs, &msg) != PV_OK) {
        fprintf(stderr, "perceive: %s: %s\n", path, msg.text);
        return -1;
    }
    *ins = calloc((size_t)arrs->n + 1, sizeof **ins);
    if (!*ins) return -1;
    for (int i = 0; i < arrs->n; i++) {
        (*ins)[i] = arrs->a[i].t;
        (*ins)[i].name = arrs->a[i].name;
    }
    return 0;
}

static void print_summary(const pv_tensor *t)
{
    printf("%s: %s [", t->name, pv_dtype_name(t->dtype));
    for (int k = 0; k < t->rank; k++) printf(k ? ",%lld" : "%lld", (long long)t->dims[k]);
    printf("]");
    int64_t n = pv_tensor_numel(t);
    if (n > 0) {
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = pvc_get_f64(t->data, t->dtype, i);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
        }
        printf(" min %.6g max %.6g mean %.6g  first:", lo, hi, sum / (double)n);
        for (int64_t i = 0; i < n && i < 6; i++) printf(" %.6g", pvc_get_f64(t->data, t->dtype, i));
    }
    printf("\n");
}

static int open_graph(const char *file, const opts *o, pv_graph **g)
{
    pv_graph_options go = { .threads = o->threads, .no_fuse = o->no_fuse, .precision = (pv_precision)o->precision };
    if (pv_graph_open(file, &go, g) != PV_OK) {
        fprintf(stderr, "perceive: %s\n", pv_last_error());
        return -1;
    }
    pv_graph_stats st;
    if (pv_graph_stats_get(*g, &st) == PV_OK && st.precision_note[0]) fprintf(stderr, "perceive: note: %s\n", st.precision_note);
    return 0;
}

static int cmd_run(const opts *o)
{
    if (o->npos != 1 || !o->inputs) { usage(stderr); return 2; }
    pvio_arrays arrs = { 0 };
    pv_tensor *ins = NULL;
    pv_graph *g = NULL;
    int rc = 1;
    if (load_inputs(o->inputs, &arrs, &ins) || open_graph(o->pos[0], o, &g)) goto done;
    size_t n_out = (size_t)pv_graph_num_outputs(g);
    pv_tensor *outs = calloc(n_out + 1, sizeof *outs);
    if (!outs) goto done;
    if (pv_graph_run(g, ins, (size_t)arrs.n, outs, &n_out) != PV_OK) {
        fprintf(stderr, "perceive: %s\n", pv_graph_errmsg(g));
        free(outs);
        goto done;
    }
    for (size_t i = 0; i < n_out; i++) print_summary(&outs[i]);
    rc = 0;
    if (o->outputs) {
        pvio_arrays w = { calloc(n_out + 1, sizeof(pvio_array)), (int)n_out };
        if (!w.a) { free(outs); rc = 1; goto done; }
        for (size_t i = 0; i < n_out; i++) { w.a[i].name = (char *)outs[i].name; w.a[i].t = outs[i]; }
        pvc_msg msg = {{0}};
        if (pvio_npz_write_file(o->outputs, &w, false, &msg) != PV_OK) {
            fprintf(stderr, "perceive: %s: %s\n", o->outputs, msg.text);
            rc = 1;
        }
        free(w.a);
    }
    free(outs);
done:
    pv_graph_close(g);
    pvio_arrays_free(&arrs);
    free(ins);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, int n, double q)
{
    int k = (int)ceil(q * n) - 1;
    if (k < 0) k = 0;
    if (k >= n) k = n - 1;
    return sorted[k];
}

/* ONNX Runtime's p50 on the same file, inputs and threads, via tools/gen/ort_run.mjs under
 * node; -1 when node or the package is not there. */
static double ort_peer(const char *file, const char *inputs, int threads, int iters, char *ver, size_t vn)
{
    char runner[PATH_MAX + 64] = "";
    const char *env = getenv("PERCEIVE_ORT_RUNNER");
    if (env) snprintf(runner, sizeof runner, "%s", env);
    else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return -1;
        exe[n] = 0;
        char *s = strrchr(exe, '/');
        if (s) *s = 0;
        snprintf(runner, sizeof runner, "%s/../tools/gen/ort_run.mjs", exe);
    }
    if (access(runner, R_OK) != 0) return -1;
    char tmpl[] = "/tmp/perceive-ort-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return -1;
    close(fd);
    char cmd[3 * PATH_MAX + 256];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' /dev/null --threads %d --bench %d --json '%s' >/dev/null 2>&1",
             runner, file, inputs, threads, iters, tmpl);
    double p50 = -1;
    if (system(cmd) == 0) {
        FILE *f = fopen(tmpl, "r");
        char buf[1024] = "";
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
            const char *k = strstr(buf, "\"p50_ms\"");
            if (k && (k = strchr(k, ':'))) p50 = strtod(k + 1, NULL);
            const char *v = strstr(buf, "\"ort_version\"");
            if (v && (v = strchr(v, ':')) && (v = strchr(v, '"'))) {
                size_t i = 0;
                for (v++; *v && *v != '"' && i + 1 < vn; v++) ver[i++] = *v;
                ver[i] = 0;
            }
        }
    }
    remove(tmpl);
    return p50;
}

/* Resident bytes now (/proc/self/statm), 0 when unknown. */
static long long rss_now(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, res = 0;
    if (!f) return 0;
    if (fscanf(f, "%lld %lld", &size, &res) != 2) res = 0;
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

static int cmd_bench(const opts *o)
{
    if (o->npos != 1 || !o->inputs) { usage(stderr); return 2; }
    pvio_arrays arrs = { 0 };
    pv_tensor *ins = NULL, *outs = NULL;
    pv_graph *g = NULL;
    double *t = NULL;
    int rc = 1;
    if (load_inputs(o->inputs, &arrs, &ins)) goto done;
    long long base_rss = rss_now();     /* binary, libraries and inputs: before the graph */
    double t0 = pvc_now_ms();
    if (open_graph(o->pos[0], o, &g)) goto done;
    double load_ms = pvc_now_ms() - t0;
    size_t cap = (size_t)pv_graph_num_outputs(g), n_out = cap;
    outs = calloc(cap + 1, sizeof *outs);
    t = calloc((size_t)o->iters * (size_t)o->rounds, sizeof *t);
    if (!outs || !t) goto done;
    t0 = pvc_now_ms();
    if (pv_graph_run(g, ins, (size_t)arrs.n, outs, &n_out) != PV_OK) {     /* plans + warms */
        fprintf(stderr, "perceive: %s\n", pv_graph_errmsg(g));
        goto done;
    }
    double first_ms = pvc_now_ms() - t0;
    /* rounds alternate perceive's iterations with the peer's (a subprocess on the same file,
     * inputs and threads), so drifting machine load hits both columns alike */
    int threads = o->threads ? o->threads : pvc_default_threads(), n = 0;
    double ort_round[1000], ort = -1;
    int ort_rounds = 0;
    char ver[64] = "";
    for (int r = 0; r < o->rounds; r++) {
        for (int i = 0; i < o->iters; i++) {
            n_out = cap;
            double s = pvc_now_ms();
            if (pv_graph_run(g, ins, (size_t)arrs.n, outs, &n_out) != PV_OK) {
                fprintf(stderr, "perceive: %s\n", pv_graph_errmsg(g));
                goto done;
            }
            t[n++] = pvc_now_ms() - s;
        }
        if (!o->no_peer) {
            double p = ort_peer(o->pos[0], o->inputs, threads, o->iters, ver, sizeof ver);
            if (p > 0) ort_round[ort_rounds++] = p;
        }
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double p50 = percentile(t, n, 0.5), p99 = percentile(t, n, 0.99);
    if (ort_rounds) {
        qsort(ort_round, (size_t)ort_rounds, sizeof *ort_round, cmp_double);
        ort = percentile(ort_round, ort_rounds, 0.5);
    }
    pv_graph_stats st;
    pv_graph_stats_get(g, &st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const pvc_cpu *cpu = pvc_cpu_get();
    printf("cpu: %s  isa: %s  threads: %d  precision: %s\n", cpu->brand[0] ? cpu->brand : "unknown", pv_isa(), threads,
           st.precision);
    printf("perceive: load %.1f ms, first run %.1f ms, p50 %.3f ms, p99 %.3f ms over %d iters%s\n",
           load_ms, first_ms, p50, p99, n, o->rounds > 1 ? " (all rounds)" : "");
    printf("memory: arena %.1f MiB, workspace %.1f MiB, constants %.1f MiB, peak RSS %.1f MiB (%.1f MiB before the graph)\n",
           st.arena_bytes / 1048576.0, st.workspace_bytes / 1048576.0, st.const_bytes / 1048576.0, ru.ru_maxrss / 1024.0,
           base_rss / 1048576.0);
    if (!o->no_peer) {
        if (ort > 0) printf("onnxruntime %s (fp32): p50 %.3f ms%s  ratio perceive/ort %.3f\n", ver, ort,
                            ort_rounds > 1 ? " (median of the rounds' p50s)" : "", p50 / ort);
        else printf("onnxruntime: not available (node + tools/gen/node_modules/onnxruntime-node)\n");
    }
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        if (!f) { fprintf(stderr, "perceive: cannot write %s: %s\n", o->json, strerror(errno)); goto done; }
        fprintf(f, "{\"model\": \"%s\", \"p50_ms\": %.4f, \"p99_ms\": %.4f, \"iters\": %d, \"threads\": %d, "
                   "\"isa\": \"%s\", \"cpu\": \"%s\", \"load_ms\": %.2f, \"first_ms\": %.2f, "
                   "\"arena_bytes\": %zu, \"workspace_bytes\": %zu, \"const_bytes\": %zu, \"peak_rss_bytes\": %lld, "
                   "\"base_rss_bytes\": %lld, \"precision\": \"%s\", \"rounds\": %d",
                o->pos[0], p50, p99, n, threads, pv_isa(), cpu->brand, load_ms, first_ms,
                st.arena_bytes, st.workspace_bytes, st.const_bytes, (long long)ru.ru_maxrss * 1024, base_rss, st.precision, o->rounds);
        if (ort > 0) fprintf(f, ", \"ort_p50_ms\": %.4f, \"ort_version\": \"%s\", \"ratio\": %.4f", ort, ver, p50 / ort);
        fprintf(f, "}\n");
        fclose(f);
    }
    rc = 0;
done:
    pv_graph_close(g);
    pvio_arrays_free(&arrs);
    free(ins);
    free(outs);
    free(t);
    return rc;
}

static int cmd_fill(const opts *o)
{
    if (o->npos != 2) { usage(stderr); return 2; }
    if (pv_onnx_fill(o->pos[0], o->pos[1], o->seed, (size_t)o->ext_threshold) != PV_OK) {
        fprintf(stderr, "perceive: %s\n", pv_last_error());
        return 1;
    }
    printf("wrote %s (seed %llu)\n", o->pos[1], o->seed);
    return 0;
}

static int cmd_info(const opts *o)
{
    if (o->npos != 1) { usage(stderr); return 2; }
    pv_graph *g = NULL;
    if (open_graph(o->pos[0], o, &g)) return 1;
    for (int io = 0; io < 2; io++) {
        int n = io ? pv_graph_num_outputs(g) : pv_graph_num_inputs(g);
        for (int i = 0; i < n; i++) {
            pv_tensor d;
            if (io) pv_graph_output(g, i, &d); else pv_graph_input(g, i, &d);
            printf("%s %s: %s [", io ? "output" : "input", d.name, d.rank >= 0 ? pv_dtype_name(d.dtype) : "?");
            for (int k = 0; k < d.rank; k++) printf(k ? ",%lld" : "%lld", (long long)d.dims[k]);
            printf("]\n");
        }
    }
    pv_graph_stats st;
    pv_graph_stats_get(g, &st);
    printf("nodes after load-time passes: %d, constants %.1f MiB\n", st.nodes_total, st.const_bytes / 1048576.0);
    printf("passes: %d folded to constants, %d BatchNorm folded, %d activations fused, %d attention blocks fused, "
           "%d GELU chains fused, %d activations fused into element-wise ops\n",
           st.folded, st.bn_folded, st.act_fused, st.attn_fused, st.gelu_fused, st.eltwise_act_fused);
    printf("precision: %s%s%s\n", st.precision, st.precision_note[0] ? " - " : "", st.precision_note);
    if (st.f16_lifted) printf("float16: computed in float32 (%d values, weights and casts rewritten)\n", st.f16_lifted);
    pv_graph_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(argc < 2 ? stderr : stdout); return argc < 2 ? 2 : 0; }
    if (!strcmp(argv[1], "version")) { printf("perceive %s (isa %s)\n", PV_VERSION, pv_isa()); return 0; }
    if (!strcmp(argv[1], "models")) return cli_models();
    if (!strcmp(argv[1], "info")) return cli_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "run")) return cli_run(argc - 2, argv + 2);
    if (!strcmp(argv[1], "gen")) return cli_gen(argc - 2, argv + 2);
    if (!strcmp(argv[1], "serve")) return cli_serve(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench")) return cli_bench(argc - 2, argv + 2);
    if (strcmp(argv[1], "onnx") || argc < 3) { usage(stderr); return 2; }
    opts o;
    if (parse_opts(argc - 3, argv + 3, &o)) return 2;
    const char *cmd = argv[2];
    if (!strcmp(cmd, "run")) return cmd_run(&o);
    if (!strcmp(cmd, "bench")) return cmd_bench(&o);
    if (!strcmp(cmd, "fill")) return cmd_fill(&o);
    if (!strcmp(cmd, "info")) return cmd_info(&o);
    usage(stderr);
    return 2;
}
