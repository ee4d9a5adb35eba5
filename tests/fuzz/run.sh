#!/bin/bash
# `make fuzz`: builds the libFuzzer targets with clang into $FUZZ_BUILD (default build-fuzz)
# and runs each for $FUZZ_SECONDS (default 60). Working corpora grow in $FUZZ_BUILD/corpus/<t>
# (seeded from tests/fuzz/corpus/<t>, which is never written); crashes, leaks, UB reports and
# broken contracts are saved as $FUZZ_BUILD/crashes/<t>-<kind>-<sha1>. Exits 1 if any target
# found something. FUZZ_TARGETS="npy pcd" limits the run; FUZZ_JOBS runs that many at once;
# FUZZ_RUNS=N stops each target after N executions (FUZZ_SECONDS still caps the time).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-build-fuzz}
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
runs=${FUZZ_RUNS:--1}
cc=${FUZZ_CC:-}
cd "$root"

if [ -z "$cc" ]; then
    for c in clang-14 clang; do
        if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
    done
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe/t.c"
if [ -z "$cc" ] || ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" >/dev/null 2>&1; then
    echo "make fuzz: needs clang with the libFuzzer runtime (${cc:-no clang found})." >&2
    echo "  Debian 12: sudo apt-get install clang-14 libclang-rt-14-dev" >&2
    echo "  (or FUZZ_CC=/path/to/clang make fuzz)" >&2
    exit 2
fi

# oneDNN stays off: its OpenMP runtime is not what the decoders need, and clang would want libomp.
# ccache when present: the ASan+coverage library is the slow part of a rebuild.
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache"
# shellcheck disable=SC2086
CC=$cc cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERCEIVE_SANITIZE=ON -DPERCEIVE_FUZZ=ON \
    -DPERCEIVE_DNNL=OFF $launcher >/dev/null
cmake --build "$build" --target fuzz_targets -j"$(nproc)"

all=$(cd tests/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
targets=${FUZZ_TARGETS:-$all}
# -max_len per format: a little above the largest seed, enough for every header and a few rows
max_len() {
    case $1 in
        kitti|nuscenes|f16x5|params) echo 1024 ;;
        npz|input|serve_request) echo 8192 ;;
        meteor_inputs|onnx) echo 8192 ;;
        *) echo 4096 ;;
    esac
}
mkdir -p "$build/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_one() {
    t=$1
    mkdir -p "$build/corpus/$t"
    dict=""
    [ -f "tests/fuzz/dict/$t.dict" ] && dict="-dict=tests/fuzz/dict/$t.dict"
    # onnx: a tiny model may plan a huge arena (RELIABILITY.md, fuzzing find 6, open): allocations
    # over 1 GiB fail (PV_ENOMEM, which the contract allows) instead of stopping the run as an OOM
    extra=""
    asan=$ASAN_OPTIONS
    [ "$t" = onnx ] && extra="-malloc_limit_mb=4096" && asan="$ASAN_OPTIONS:max_allocation_size_mb=1024"
    echo "== fuzz_$t for ${secs}s (max_len $(max_len "$t"))"
    # shellcheck disable=SC2086
    if ASAN_OPTIONS=$asan "$build/fuzz/fuzz_$t" $extra -max_total_time="$secs" -runs="$runs" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" $dict \
        "$build/corpus/$t" "tests/fuzz/corpus/$t" > "$build/fuzz_$t.log" 2>&1; then
        echo "   fuzz_$t: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz_$t.log" | grep -o '[0-9]*$') runs, log $build/fuzz_$t.log)"
    else
        echo "   fuzz_$t: FOUND A PROBLEM; see $build/fuzz_$t.log and $build/crashes/$t-*" >&2
        return 1
    fi
}
status=0
if [ "$jobs" -le 1 ]; then
    for t in $targets; do run_one "$t" || status=1; done
else
    pids=""
    for t in $targets; do
        run_one "$t" & pids="$pids $!"
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
    done
    for p in $pids; do wait "$p" || status=1; done
fi
if [ $status -ne 0 ]; then
    echo "make fuzz: crashes saved:" >&2
    ls -1 "$build/crashes" >&2
    echo "reproduce one: $build/fuzz/fuzz_<target> $build/crashes/<file>" >&2
fi
exit $status
