/* Conformance runner.
 *   pv_conformance fixtures DIR          every DIR/<case>/{model.onnx,inputs.npz,expected.npz}
 *                                        (or skeleton.onnx + seed.txt: filled first) must match
 *   pv_conformance backend DIR PASSLIST  ONNX backend node tests: listed cases must load, run
 *                                        and match; others must fail to load/plan with a
 *                                        message, or, if they run, still match (a wrong answer
 *                                        is a failure everywhere)
 *   pv_conformance backend DIR --list    prints the cases that pass (to refresh the list)
 * Tolerance: |a-b| <= atol + rtol*|b| for floats (defaults 1e-4, 1e-4; a case may carry
 * tolerance.txt "atol rtol"), with rtol at least one float16 ulp (2^-10) for float16 outputs
 * (a last-bit difference before the cast may round to the neighbouring half); integers and
 * bools exact, unless tolerance.txt goes on with "agree agree_bf16": the fraction of elements of
 * each integer output that must be equal at fp32 and at bf16 (argmax maps over logits that can
 * nearly tie, like METEOR's uint8 lane/depth outputs).
 *   pv_conformance fixtures DIR --precision bf16
 *                                        the same graphs at bf16: every float output must have a
 *                                        Pearson correlation >= 0.999 with the fp32 expected one
 *                                        (printed with the largest error); integer outputs exact
 *                                        (or as tolerance.txt's agree_bf16 says).
 *                                        Says SKIP when the CPU cannot run bf16. */
#include "perceive.h"
#include "graph/onnx.h"
#include "io/io.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct { double atol, rtol, agree, agree_bf16; } tol;   /* agree: see above */

static pv_precision g_precision = PV_PRECISION_FP32;   /* --precision */
#define PCC_MIN 0.999

/* Pearson correlation of the float outputs (NaN pairs skipped). 0 = PCC >= PCC_MIN. */
static int compare_pcc(const char *cs, const pv_tensor *got, const pv_tensor *want, int64_t n)
{
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, worst = 0, wmax = 0;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = pvc_get_f64(got->data, got->dtype, i), b = pvc_get_f64(want->data, want->dtype, i);
        if (isnan(a) && isnan(b)) continue;
        sa += a; sb += b; saa += a * a; sbb += b * b; sab += a * b; m++;
        worst = fmax(worst, isnan(a - b) ? INFINITY : fabs(a - b));
        wmax = fmax(wmax, fabs(b));
    }
    double va = saa - sa * sa / (double)(m ? m : 1), vb = sbb - sb * sb / (double)(m ? m : 1);
    /* a constant output has no correlation to speak of: it must then match closely */
    double pcc = va > 0 && vb > 0 ? (sab - sa * sb / (double)m) / sqrt(va * vb) : (worst <= 1e-3 * fmax(1, wmax) ? 1 : 0);
    printf("  %s: output '%s' bf16 vs fp32: pcc %.6f, max |err| %.3g (max |fp32| %.3g)\n", cs, want->name, pcc, worst, wmax);
    return pcc >= PCC_MIN ? 0 : 1;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int list_dirs(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0, cap = 64;
    char **v = malloc((size_t)cap * sizeof *v);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) || !S_ISDIR(st.st_mode)) continue;
        if (n == cap) v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_names);
    *out = v;
    return n;
}

static bool exists(const char *p) { return access(p, R_OK) == 0; }

/* 0 = match; else prints why. */
static int compare(const char *cs, const pv_tensor *got, const pv_tensor *want, tol t)
{
    if (got->dtype != want->dtype) { printf("  %s: output '%s' dtype %s, expected %s\n", cs, want->name, pv_dtype_name(got->dtype), pv_dtype_name(want->dtype)); return 1; }
    if (got->rank != want->rank) { printf("  %s: output '%s' rank %d, expected %d\n", cs, want->name, got->rank, want->rank); return 1; }
    for (int k = 0; k < got->rank; k++)
        if (got->dims[k] != want->dims[k]) { printf("  %s: output '%s' dim %d = %lld, expected %lld\n", cs, want->name, k, (long long)got->dims[k], (long long)want->dims[k]); return 1; }
    int64_t n = pv_tensor_numel(want), bad = 0, first = -1;
    double worst = 0;
    bool fl = want->dtype == PV_F32 || want->dtype == PV_F16 || want->dtype == PV_BF16;
    if (fl && g_precision == PV_PRECISION_BF16) return compare_pcc(cs, got, want, n);
    for (int64_t i = 0; i < n; i++) {
        if (fl) {
            double a = pvc_get_f64(got->data, got->dtype, i), b = pvc_get_f64(want->data, want->dtype, i);
            if (isnan(a) && isnan(b)) continue;
            if (isinf(b) && a == b) continue;
            double rtol = want->dtype == PV_F16 ? fmax(t.rtol, 1.0 / 1024) : t.rtol;
            double err = fabs(a - b), lim = t.atol + rtol * fabs(b);
            if (!(err <= lim)) { bad++; if (first < 0) first = i; }
            if (err / (lim > 0 ? lim : 1) > worst || isnan(err)) worst = isnan(err) ? INFINITY : err / lim;
        } else if (pvc_get_i64(got->data, got->dtype, i) != pvc_get_i64(want->data, want->dtype, i)) {
            bad++;
            if (first < 0) first = i;
        }
    }
    double agree = g_precision == PV_PRECISION_BF16 ? t.agree_bf16 : t.agree;
    if (bad && !fl && (double)(n - bad) >= agree * (double)n) {
        printf("  %s: output '%s': %lld of %lld elements differ (agreement %.4f >= %.4f)\n",
               cs, want->name, (long long)bad, (long long)n, (double)(n - bad) / (double)n, agree);
        return 0;
    }
    if (bad) {
        printf("  %s: output '%s': %lld of %lld elements differ (first at %lld: got %.9g want %.9g; worst err/limit %.3g)\n",
               cs, want->name, (long long)bad, (long long)n, (long long)first,
               pvc_get_f64(got->data, got->dtype, first), pvc_get_f64(want->data, want->dtype, first), worst);
        return 1;
    }
    return 0;
}

/* Large expected outputs may be stored as a sample: NAME.sampled (every stride-th element of
 * the flattened output), NAME.stride, NAME.shape. */
static int compare_sampled(const char *cs, const pv_tensor *got, const pvio_arrays *ea, const char *base, tol t)
{
    char k1[512], k2[512], k3[512];
    snprintf(k1, sizeof k1, "%s.sampled", base);
    snprintf(k2, sizeof k2, "%s.stride", base);
    snprintf(k3, sizeof k3, "%s.shape", base);
    const pvio_array *sa = pvio_arrays_find(ea, k1), *st = pvio_arrays_find(ea, k2), *sh = pvio_arrays_find(ea, k3);
    if (!sa || !st || !sh) { printf("  %s: sampled output '%s' lacks .stride or .shape\n", cs, base); return 1; }
    int64_t stride = pvc_get_i64(st->t.data, st->t.dtype, 0), rank = pv_tensor_numel(&sh->t);
    if (rank != got->rank) { printf("  %s: output '%s' rank %d, expected %lld\n", cs, base, got->rank, (long long)rank); return 1; }
    for (int k = 0; k < got->rank; k++)
        if (got->dims[k] != pvc_get_i64(sh->t.data, sh->t.dtype, k)) { printf("  %s: output '%s' dim %d differs\n", cs, base, k); return 1; }
    int64_t n = pv_tensor_numel(&sa->t);
    if (stride <= 0 || (n - 1) * stride >= pv_tensor_numel(got) + stride) { printf("  %s: bad sample stride\n", cs); return 1; }
    /* gather the sampled elements of got into a tensor shaped like the sample */
    pv_tensor g2 = sa->t;
    g2.dtype = got->dtype;
    size_t es = pv_dtype_size(got->dtype);
    g2.data = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) memcpy((char *)g2.data + i * es, (const char *)got->data + i * stride * es, es);
    pv_tensor w = sa->t;
    w.name = base;
    int rc = compare(cs, &g2, &w, t);
    free(g2.data);
    return rc;
}

/* Runs one model with inputs (by name, or by position when names are NULL) and compares
 * outputs in graph order. Returns 0 pass, 1 wrong answer, 2 refused (load/plan error). */
static int run_case(const char *cs, const char *model, const pv_tensor *ins, int nin,
                    const pv_tensor *want, int nwant, const pvio_arrays *ea, tol t, char *why, size_t wn)
{
    pv_graph *g = NULL;
    pv_graph_options go = { .threads = 2, .precision = g_precision };
    if (pv_graph_open(model, &go, &g) != PV_OK) {
        snprintf(why, wn, "%s", pv_last_error());
        return 2;
    }
    int nout = pv_graph_num_outputs(g);
    pv_tensor outs[64];
    size_t n_out = 64;
    int rc = 0;
    if (pv_graph_run(g, ins, (size_t)nin, outs, &n_out) != PV_OK) {
        snprintf(why, wn, "%s", pv_graph_errmsg(g));
        pv_graph_close(g);
        return 2;
    }
    if (ea) {                      /* fixtures: every graph output by name, maybe sampled */
        for (int i = 0; i < nout && !rc; i++) {
            const pvio_array *w = pvio_arrays_find(ea, outs[i].name);
            if (w) {
                pv_tensor wt = w->t;
                wt.name = outs[i].name;
                rc |= compare(cs, &outs[i], &wt, t);
            } else rc |= compare_sampled(cs, &outs[i], ea, outs[i].name, t);
        }
    } else {
        if (nwant != nout) { printf("  %s: %d outputs, expected %d\n", cs, nout, nwant); rc = 1; }
        for (int i = 0; i < nwant && i < nout && !rc; i++) {
            pv_tensor w2 = want[i];
            if (!w2.name || !*w2.name) w2.name = outs[i].name;
            rc |= compare(cs, &outs[i], &w2, t);
        }
    }
    pv_graph_close(g);
    return rc;
}

static tol read_tol(const char *dir)
{
    tol t = { 1e-4, 1e-4, 1, 1 };
    char p[4200];
    snprintf(p, sizeof p, "%s/tolerance.txt", dir);
    FILE *f = fopen(p, "r");
    if (f) {
        int k = fscanf(f, "%lf %lf %lf %lf", &t.atol, &t.rtol, &t.agree, &t.agree_bf16);
        if (k != 2 && k != 4) t = (tol){ 1e-4, 1e-4, 1, 1 };
        fclose(f);
    }
    return t;
}

static int fixtures(const char *root)
{
    char **cases = NULL;
    int n = list_dirs(root, &cases), pass = 0, fail = 0, skip = 0;
    if (n < 0) { printf("no fixture directory %s\n", root); return 1; }
    bool sanitized = getenv("PV_SANITIZED") != NULL;
    for (int i = 0; i < n; i++) {
        char dir[4096], model[4200], in[4200], ex[4200], sk[4200], seedp[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, cases[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        snprintf(in, sizeof in, "%s/inputs.npz", dir);
        snprintf(ex, sizeof ex, "%s/expected.npz", dir);
        snprintf(sk, sizeof sk, "%s/skeleton.onnx", dir);
        snprintf(seedp, sizeof seedp, "%s/seed.txt", dir);
        char tmpmodel[64] = "";
        if (!exists(model) && exists(sk)) {
            /* model-sized graphs: weights are regenerated from the seed, not committed */
            char slow[4200];
            snprintf(slow, sizeof slow, "%s/slow", dir);
            if (sanitized && exists(slow)) { printf("SKIP %s (too slow under sanitizers; runs in the Release pass)\n", cases[i]); skip++; continue; }
            unsigned long long seed = 1;
            FILE *f = fopen(seedp, "r");
            if (f) { if (fscanf(f, "%llu", &seed) != 1) seed = 1; fclose(f); }
            snprintf(tmpmodel, sizeof tmpmodel, "/tmp/pv_conf_%d_%d.onnx", (int)getpid(), i);
            if (pv_onnx_fill(sk, tmpmodel, seed, 1024) != PV_OK) { printf("FAIL %s: fill: %s\n", cases[i], pv_last_error()); fail++; continue; }
            snprintf(model, sizeof model, "%s", tmpmodel);
        }
        if (!exists(model) || !exists(in) || !exists(ex)) { printf("FAIL %s: incomplete fixture\n", cases[i]); fail++; continue; }
        pvio_arrays ia = { 0 }, ea = { 0 };
        pvc_msg msg = {{0}};
        if (pvio_npz_read_file(in, &ia, &msg) != PV_OK || pvio_npz_read_file(ex, &ea, &msg) != PV_OK) {
            printf("FAIL %s: %s\n", cases[i], msg.text);
            fail++;
            pvio_arrays_free(&ia);
            pvio_arrays_free(&ea);
            continue;
        }
        pv_tensor ins[64], want[64];
        int nin = ia.n < 64 ? ia.n : 64, nw = ea.n < 64 ? ea.n : 64;
        for (int k = 0; k < nin; k++) { ins[k] = ia.a[k].t; ins[k].name = ia.a[k].name; }
        for (int k = 0; k < nw; k++) { want[k] = ea.a[k].t; want[k].name = ea.a[k].name; }
        char why[1024] = "";
        double t0 = pvc_now_ms();
        int rc = run_case(cases[i], model, ins, nin, want, nw, &ea, read_tol(dir), why, sizeof why);
        if (rc == 0) { pass++; printf("ok   %s (%.0f ms)\n", cases[i], pvc_now_ms() - t0); }
        else { fail++; printf("FAIL %s%s%s\n", cases[i], rc == 2 ? ": " : "", rc == 2 ? why : ""); }
        pvio_arrays_free(&ia);
        pvio_arrays_free(&ea);
        if (tmpmodel[0]) { char d[80]; remove(tmpmodel); snprintf(d, sizeof d, "%s.data", tmpmodel); remove(d); }
    }
    for (int i = 0; i < n; i++) free(cases[i]);
    free(cases);
    printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
    return fail ? 1 : 0;
}

static int read_pb_dir(const char *dir, const char *prefix, pv_tensor *ts, char **names, int *n, char *why, size_t wn)
{
    *n = 0;
    for (int k = 0; k < 64; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, k);
        if (!exists(p)) break;
        void *buf = NULL;
        size_t len = 0;
        pvc_msg msg = {{0}};
        if (pvg_read_file(p, &buf, &len, &msg) != PV_OK) { snprintf(why, wn, "%s", msg.text); return -1; }
        pv_status s = pvg_onnx_tensor_parse(buf, len, &ts[k], &names[k], &msg);
        pvc_free(buf);
        if (s != PV_OK) { snprintf(why, wn, "%s_%d.pb: %s", prefix, k, msg.text); return -1; }
        ts[k].name = names[k];
        *n = k + 1;
    }
    return 0;
}

static void free_pb(pv_tensor *ts, char **names, int n)
{
    for (int k = 0; k < n; k++) { pvc_free_aligned(ts[k].data); pvc_free(names[k]); }
}

static int backend(const char *root, const char *passlist)
{
    bool list_mode = !strcmp(passlist, "--list");
    char **want = NULL;
    int nwant = 0;
    if (!list_mode) {
        FILE *f = fopen(passlist, "r");
        if (!f) { printf("cannot read pass list %s\n", passlist); return 1; }
        char line[512];
        int cap = 0;
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n#")] = 0;
            if (!line[0]) continue;
            if (nwant == cap) want = realloc(want, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *want);
            want[nwant++] = strdup(line);
        }
        fclose(f);
    }
    char **cases = NULL;
    int n = list_dirs(root, &cases);
    if (n < 0) {
        if (list_mode) return 1;
        printf("SKIP: %s not found (Debian package libonnx-testdata)\n0 passed, 0 failed, 1 skipped\n", root);
        return 0;
    }
    int pass = 0, fail = 0, refused = 0, unexpected = 0, listed_seen = 0;
    for (int i = 0; i < n; i++) {
        bool listed = false;
        for (int k = 0; k < nwant; k++) if (!strcmp(want[k], cases[i])) listed = true;
        listed_seen += listed;
        char dir[4096], model[4200], data[4200], why[1024] = "";
        snprintf(dir, sizeof dir, "%s/%s", root, cases[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        snprintf(data, sizeof data, "%s/test_data_set_0", dir);
        pv_tensor ins[64], outs[64];
        char *in_names[64] = {0}, *out_names[64] = {0};
        int nin = 0, nout = 0, rc;
        if (read_pb_dir(data, "input", ins, in_names, &nin, why, sizeof why) ||
            read_pb_dir(data, "output", outs, out_names, &nout, why, sizeof why)) rc = 2;
        else {
            for (int k = 0; k < nin; k++) ins[k].name = NULL;     /* by position */
            rc = run_case(cases[i], model, ins, nin, outs, nout, NULL, (tol){ 1e-5, 1e-3, 1, 1 }, why, sizeof why);
        }
        free_pb(ins, in_names, nin);
        free_pb(outs, out_names, nout);
        if (list_mode) { if (rc == 0) printf("%s\n", cases[i]); continue; }
        if (rc == 0) {
            pass++;
            if (!listed) { unexpected++; printf("note %s passes but is not in the pass list\n", cases[i]); }
        } else if (rc == 1) {
            fail++;
            printf("FAIL %s: wrong answer%s\n", cases[i], listed ? "" : " (not in the pass list: it must be refused at load)");
        } else if (listed) {
            fail++;
            printf("FAIL %s: %s\n", cases[i], why);
        } else {
            refused++;
            if (getenv("PV_VERBOSE")) printf("refused %s: %s\n", cases[i], why);
            if (!why[0]) { fail++; printf("FAIL %s: refused without a message\n", cases[i]); }
        }
    }
    if (!list_mode) {
        if (listed_seen != nwant) { printf("FAIL: %d pass-list entries do not exist under %s\n", nwant - listed_seen, root); fail++; }
        printf("backend: %d cases, %d refused with a message, %d passing not listed\n", n, refused, unexpected);
        printf("%d passed, %d failed\n", pass, fail);
    }
    for (int i = 0; i < n; i++) free(cases[i]);
    free(cases);
    for (int k = 0; k < nwant; k++) free(want[k]);
    free(want);
    return fail ? 1 : 0;
}

/* compare GOT.npz WANT.npz: every array of WANT must be in GOT and match. */
static int compare_files(const char *got_path, const char *want_path)
{
    pvio_arrays ga = { 0 }, wa = { 0 };
    pvc_msg msg = {{0}};
    if (pvio_npz_read_file(got_path, &ga, &msg) != PV_OK || pvio_npz_read_file(want_path, &wa, &msg) != PV_OK) {
        printf("FAIL: %s\n", msg.text);
        pvio_arrays_free(&ga);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < wa.n; i++) {
        const pvio_array *g = pvio_arrays_find(&ga, wa.a[i].name);
        if (!g) { printf("FAIL: %s missing in %s\n", wa.a[i].name, got_path); bad++; continue; }
        pv_tensor gt = g->t, wt = wa.a[i].t;
        gt.name = wt.name = wa.a[i].name;
        bad += compare("compare", &gt, &wt, (tol){ 1e-4, 1e-4, 1, 1 });
    }
    printf("%d passed, %d failed\n", wa.n - bad, bad);
    pvio_arrays_free(&ga);
    pvio_arrays_free(&wa);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "compare")) return compare_files(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "fixtures")) return fixtures(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "fixtures") && !strcmp(argv[3], "--precision") && !strcmp(argv[4], "bf16")) {
        pvc_precision eff;
        char why[160];
        if (pvc_precision_resolve(PV_PRECISION_BF16, &eff, why, sizeof why) != PV_OK || eff != PVC_PREC_BF16) {
            printf("SKIP: %s\n0 passed, 0 failed, 1 skipped\n", why);
            return 0;
        }
        g_precision = PV_PRECISION_BF16;
        return fixtures(argv[2]);
    }
    if (argc == 4 && !strcmp(argv[1], "backend")) return backend(argv[2], argv[3]);
    fprintf(stderr, "usage: pv_conformance fixtures DIR [--precision bf16] | backend DIR PASSLIST|--list\n");
    return 2;
}
