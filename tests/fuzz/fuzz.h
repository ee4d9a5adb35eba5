/* tests/fuzz: libFuzzer targets for every request decoder. Prefix fz_.
 *
 * Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput for one decoder and checks the
 * decoder's documented contract on every input, not just "did not crash": on failure the
 * out-param is zeroed and the message is non-empty; on success the result's invariants hold
 * (src/io/points.h, src/io/io.h, src/models/bevfusion/post.h) and re-encoding round-trips.
 * A broken contract calls fz_fail, which prints and abort()s, so libFuzzer saves the input.
 *
 * The same sources build two ways (tests/CMakeLists.txt):
 *   fuzz_<name>_replay  with replay.c's main(): feeds every file of tests/fuzz/corpus/<name>/
 *                       (CTest `fuzz_<name>`, label fuzz; sanitizers when PERCEIVE_SANITIZE);
 *   fuzz_<name>         with libFuzzer (clang, -DPERCEIVE_FUZZ=ON; `make fuzz`).
 */
#ifndef FZ_FUZZ_H
#define FZ_FUZZ_H

#include "core/core.h"
#include "io/points.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints "fuzz contract broken: <what>" and aborts. */
_Noreturn void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define FZ_CHECK(cond, ...) do { if (!(cond)) fz_fail(__VA_ARGS__); } while (0)

/* Status s is one a decoder may return for bad input (EINPUT, EFORMAT, EUNSUPPORTED, ENOMEM)
 * and msg holds a non-empty message. */
void fz_check_error(pv_status s, const pvc_msg *msg, const char *what);
/* true when every byte of p[0..n) is zero. */
int  fz_all_zero(const void *p, size_t n);
/* The contract of a cloud decoder's result (src/io/points.h "Cloud invariants"): on failure *c
 * is zeroed; on success ncols 3..16, names x y z first, distinct, non-empty, NUL-terminated,
 * width * height == n, data non-NULL, n <= PVIO_MAX_POINTS, n * ncols * 4 <= max_ratio * len
 * + 64 (the allocation bound), and every float is read (so ASan sees a short block). */
void fz_check_cloud(pv_status s, const pvio_cloud *c, const pvc_msg *msg, size_t len,
                    uint64_t max_ratio, const char *what);
/* A decoded tensor: rank 0..PV_MAX_RANK, dims >= 0, contiguous, data non-NULL unless empty,
 * every byte read. */
void fz_check_tensor(const pvc_tensor *t, const char *what);
/* IEEE half -> float, written independently of pvc_f16_to_f32 to cross-check it. */
float fz_half_to_float(uint16_t h);

#endif
