/* perceive CLI: shared helpers and the command entry points of tools/cli_*.c. */
#ifndef PV_CLI_H
#define PV_CLI_H

#include "perceive.h"

#include <stdbool.h>
#include <stddef.h>

int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out);
/* --precision fp32|bf16 into *out (a pv_precision); prints the error. */
int cli_parse_precision(const char *v, int *out);
/* Prints a model's "precision_note" (from pv_model_info_json) to stderr when there is one. */
void cli_precision_note(const char *info_json);
/* Whole file into a malloc'ed buffer; prints the error. */
int cli_read_file(const char *path, void **buf, size_t *len);
/* The same, with the message (naming the path) in err instead of on stderr. */
int cli_load_file(const char *path, void **buf, size_t *len, char *err, size_t errn);
/* "-" is stdout. Print the error. */
int cli_write_text(const char *path, const char *text);
/* Writes PATH.tmp.<pid> then renames it over path, so a reader (or a resumed batch) never sees
 * a partly written file under the final name; the message goes to err. */
int cli_save_file(const char *path, const void *buf, size_t len, char *err, size_t errn);
/* The pv_input format a file name implies (.pcd, .pcd.bin nuScenes, .bin KITTI, .npy, .npz, .jpg/.jpeg,
 * .png, .rgb raw RGB8), else "auto". */
const char *cli_format_of(const char *path);
int cli_write_bytes(const char *path, const void *buf, size_t len);
/* cli_write_bytes with the message in err. */
int cli_put_file(const char *path, const void *buf, size_t len, char *err, size_t errn);

/* ---- perceive run: options and the steps shared by single and batch runs (cli_model.c) ---- */
#define CLI_MAX_PARAMS 64
#define CLI_MAX_SWEEPS 16
#define CLI_MAX_BOXES  16
#define CLI_MAX_FILES  256

typedef struct cli_mopts {
    const char *model, *format, *json, *png, *weights;
    const char *files[CLI_MAX_FILES];      /* positional inputs after MODEL */
    int nfiles;
    const char *sweeps[CLI_MAX_SWEEPS];
    int nsweeps;
    pv_param params[CLI_MAX_PARAMS];
    int nparams;
    char box_text[CLI_MAX_BOXES][128];
    int nboxes, last_box_param;
    int threads, strict, quiet, no_timing, precision;
    /* batch runs (cli_batch.c): --out DIR, --list FILE, --recursive, --force, --png as a flag */
    const char *out, *list;
    int recursive, force, png_each;
} cli_mopts;

/* One frame's inputs: the file (and the --sweep files) read into memory. */
typedef struct cli_frame {
    pv_input in[1 + CLI_MAX_SWEEPS];
    void    *bufs[1 + CLI_MAX_SWEEPS];
    int      n;
} cli_frame;

/* Opens o->model with o's options; prints the error and the generated-weights warning. */
int  cli_open_model(const cli_mopts *o, pv_model **m);
/* Reads file and o's sweeps into f; with validate, each item is decoded by the model's bundle
 * first (a bad file refused before a model load). Message in err (naming a sweep's file, not
 * file: the caller does). Free with cli_frame_free. */
int  cli_frame_load(const cli_mopts *o, const char *file, bool validate, cli_frame *f, char *err, size_t errn);
void cli_frame_free(cli_frame *f);
/* Runs m on f with o's params. Message in err. */
int  cli_frame_run(const cli_mopts *o, pv_model *m, const cli_frame *f, pv_result **r, char *err, size_t errn);
/* Writes r's picture to png (when not NULL), then its JSON (stable without timing when
 * no_timing) to json (when not NULL); with atomic, through cli_save_file. Message in err. */
int  cli_result_write(const pv_result *r, const char *json, bool no_timing, const char *png, bool atomic, char *err,
                      size_t errn);
/* The item count of r's payload (objects, hands: whichever r has). */
int  cli_result_count(const pv_result *r);

/* perceive run MODEL DIR|LIST|FILE... --out DIR (cli_batch.c). */
int cli_batch(const cli_mopts *o);

int cli_models(void);
int cli_info(int argc, char **argv);
int cli_gen(int argc, char **argv);
int cli_run(int argc, char **argv);
/* perceive serve MODEL [--host H] [--port P] [--threads N] [--workers N] [--queue N] [--max-body-mb N] ... */
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);

#endif
