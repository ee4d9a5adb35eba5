/* perceive CLI: shared helpers and the command entry points of tools/cli_*.c. */
#ifndef PV_CLI_H
#define PV_CLI_H

#include <stddef.h>

int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out);
/* --precision fp32|bf16 into *out (a pv_precision); prints the error. */
int cli_parse_precision(const char *v, int *out);
/* Prints a model's "precision_note" (from pv_model_info_json) to stderr when there is one. */
void cli_precision_note(const char *info_json);
/* Whole file into a malloc'ed buffer; prints the error. */
int cli_read_file(const char *path, void **buf, size_t *len);
/* "-" is stdout. Print the error. */
int cli_write_text(const char *path, const char *text);
/* The pv_input format a file name implies (.pcd, .pcd.bin nuScenes, .bin KITTI, .npy, .npz, .jpg/.jpeg,
 * .png, .rgb raw RGB8), else "auto". */
const char *cli_format_of(const char *path);
int cli_write_bytes(const char *path, const void *buf, size_t len);

int cli_models(void);
int cli_info(int argc, char **argv);
int cli_gen(int argc, char **argv);
int cli_run(int argc, char **argv);
/* perceive serve MODEL [--host H] [--port P] [--threads N] [--workers N] [--queue N] [--max-body-mb N] ... */
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);

#endif
