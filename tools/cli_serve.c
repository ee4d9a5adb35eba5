/* perceive serve: opens the model once, serves it over HTTP (src/serve) until SIGTERM/SIGINT,
 * then stops accepting, finishes the requests in flight, closes the model and exits 0.
 *
 *   perceive serve MODEL [--host 127.0.0.1] [--port 8080] [--threads N] [--workers N]
 *                  [--max-body-mb N] [--queue N] [--max-connections N] [--client-queue N]
 *                  [--max-conn-per-ip N] [--drain-s S] [--body-timeout-s S] [--weights DIR] [--strict] [--quiet]
 * SIGTERM drains (see pvsv_stop): the listening socket closes, /health says "draining" (503),
 * requests still arriving on open connections are served for up to --drain-s seconds.
 */
#include "perceive.h"
#include "cli.h"
#include "core/core.h"
#include "serve/serve.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int cli_serve(int argc, char **argv)
{
    pvsv_options o = pvsv_defaults();
    const char *model = NULL, *weights = NULL;
    int strict = 0, threads = 0, precision = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool v = i + 1 < argc;
        long long n;
        if (!strcmp(a, "--host") && v) o.host = argv[++i];
        else if (!strcmp(a, "--port") && v) { if (cli_parse_int(a, argv[++i], 0, 65535, &n)) return 2; o.port = (int)n; }
        else if (!strcmp(a, "--threads") && v) { if (cli_parse_int(a, argv[++i], 1, 1024, &n)) return 2; threads = (int)n; }
        else if (!strcmp(a, "--workers") && v) { if (cli_parse_int(a, argv[++i], 1, 256, &n)) return 2; o.workers = (int)n; }
        else if (!strcmp(a, "--queue") && v) { if (cli_parse_int(a, argv[++i], 1, 100000, &n)) return 2; o.queue = (int)n; }
        else if (!strcmp(a, "--max-connections") && v) { if (cli_parse_int(a, argv[++i], 1, 65536, &n)) return 2; o.max_connections = (int)n; }
        else if (!strcmp(a, "--client-queue") && v) { if (cli_parse_int(a, argv[++i], 1, 100000, &n)) return 2; o.client_queue = (int)n; }
        else if (!strcmp(a, "--max-conn-per-ip") && v) { if (cli_parse_int(a, argv[++i], 0, 65536, &n)) return 2; o.max_conn_per_ip = (int)n; }
        else if (!strcmp(a, "--body-timeout-s") && v) { if (cli_parse_int(a, argv[++i], 0, 86400, &n)) return 2; o.body_timeout_s = (double)n; }
        else if (!strcmp(a, "--drain-s") && v) { if (cli_parse_int(a, argv[++i], 0, 3600, &n)) return 2; o.drain_s = (double)n; }
        else if (!strcmp(a, "--max-body-mb") && v) { if (cli_parse_int(a, argv[++i], 1, 4096, &n)) return 2; o.max_body_bytes = (size_t)n << 20; }
        else if (!strcmp(a, "--weights") && v) weights = argv[++i];
        else if (!strcmp(a, "--strict")) strict = 1;
        else if (!strcmp(a, "--precision") && v) { if (cli_parse_precision(argv[++i], &precision)) return 2; }
        else if (!strcmp(a, "--quiet")) o.quiet = 1;
        else if (a[0] == '-' && a[1] == '-') { fprintf(stderr, "perceive: unknown option or missing value: %s\n", a); return 2; }
        else if (!model) model = a;
        else { fprintf(stderr, "perceive: too many arguments: %s\n", a); return 2; }
    }
    if (!model) { fprintf(stderr, "usage: perceive serve MODEL [--host H] [--port P] [--threads N] [--workers N] [--queue N] ...\n"); return 2; }
    /* SIGTERM/SIGINT are taken by sigwait below: blocked before any thread exists so every
     * model and connection thread inherits the mask */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* one connection thread per client: glibc would give each its own malloc arena and RSS would
     * creep with the number of distinct threads; a few shared arenas keep it flat */
    mallopt(M_ARENA_MAX, 4);
    double t0 = pvc_now_ms();
    pv_model *m = NULL;
    pv_model_options mo = { .threads = threads, .weights_dir = weights, .strict = strict, .precision = (pv_precision)precision };
    if (pv_model_open(model, &mo, &m) != PV_OK) { fprintf(stderr, "perceive: %s\n", pv_last_error()); return 1; }
    o.model_load_s = (pvc_now_ms() - t0) / 1000.0;
    o.model_threads = threads;
    const char *info = pv_model_info_json(m);
    cli_precision_note(info);
    if (!o.quiet && info && strstr(info, "\"weights\":\t\"generated\""))
        fprintf(stderr, "perceive: %s: release artifacts not found; serving GENERATED weights (NOT a trained model)\n", model);
    pvsv_server *s = NULL;
    if (pvsv_start(m, &o, &s) != PV_OK) {
        fprintf(stderr, "perceive: serve: %s\n", pv_last_error());
        pv_model_close(m);
        return 1;
    }
    /* one line on stdout that scripts read (the port matters with --port 0) */
    printf("perceive serve: %s listening on http://%s:%d\n", model, o.host, pvsv_port(s));
    fflush(stdout);
    if (!o.quiet)
        fprintf(stderr, "perceive serve: model loaded in %.2f s; workers %d, queue %d, max body %zu MB\n", o.model_load_s, o.workers,
                o.queue, o.max_body_bytes >> 20);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {}
    if (!o.quiet) fprintf(stderr, "perceive serve: %s: finishing requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    pvsv_stop(s);
    pvsv_free(s);
    pv_model_close(m);
    if (!o.quiet) fprintf(stderr, "perceive serve: stopped\n");
    return 0;
}
