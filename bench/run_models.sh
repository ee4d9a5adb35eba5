#!/bin/sh
# `make bench`: perceive vs ONNX Runtime on the model-shaped graphs (tests/fixtures/models, and the
# bench-only bench/models such as vit32 = ViT-H's 32 blocks), same filled ONNX file, same inputs,
# same thread count, at each precision; every `onnx bench` call alternates perceive's runs with
# ONNX Runtime's (fp32) for ROUNDS rounds, so both columns see the same machine load.
# Needs node + tools/gen/node_modules/onnxruntime-node for the peer column
# (cd tools/gen && npm install --onnxruntime-node-install=skip).
# Usage: bench/run_models.sh [build/perceive] [iters] [models...]
#   env: THREADS="2" (list), PRECISIONS="fp32 bf16", ROUNDS=3, BENCH_OUT=build/bench,
#        ITERS_PER_MODEL="unseen=200" (graph=iters pairs overriding iters: a 2 ms graph needs
#        hundreds of runs per round for a steady p50 on a shared box),
#        ISAS="native" (list; "avx2" adds the AVX2-only columns: the same graphs with
#        PERCEIVE_ISA=avx2, fp32 only, alternating with ORT again), GEMM=1 (0: no GEMM lines)
# Prints first the CPU line (model, family/model numbers, the ISA perceive picks, AMX yes/no)
# and, per thread count and ISA, the GEMM line: pv_gemm_bench's packed fp32 kernel on the ViT-H
# linear layers at 192 tokens, % of the FMA peak measured in the same run (and %pair, the
# steadier figure on a shared box; see bench/gemm_bench.c). Then the table: p50s, their ratio,
# and the memory check of issue 3: the peak RSS the graph adds (peak minus the RSS before it was
# opened: binary, libraries, inputs) against weights + planned arena + workspace (+10 %).
set -e
PERCEIVE=${1:-build/perceive}
ITERS=${2:-5}
shift 2 2>/dev/null || shift $# 2>/dev/null
cd "$(dirname "$0")/.."
MODELS=${*:-"bev_dense vit4 vit32 cam_resnet34_fpn unseen"}
THREADS=${THREADS:-2}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
ROUNDS=${ROUNDS:-3}
ISAS=${ISAS:-native}
ITERS_PER_MODEL=${ITERS_PER_MODEL:-unseen=200}
GEMM=${GEMM:-1}
OUT=${BENCH_OUT:-build/bench}
GEMM_BENCH=$(dirname "$PERCEIVE")/pv_gemm_bench
mkdir -p "$OUT"

# ---- the CPU line -------------------------------------------------------------------------
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
fam=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
mod=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
grep -q '^flags.* amx_bf16' /proc/cpuinfo && amx=yes || amx=no
isa=$("$PERCEIVE" version 2>/dev/null | sed -n 's/.*(isa \([a-z0-9_]*\)).*/\1/p')
printf 'cpu: %s (family %s model %s), %s vCPUs; isa picked: %s; AMX: %s; load average: %s\n' \
  "$model" "$fam" "$mod" "$(nproc)" "${isa:-unknown}" "$amx" "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- GEMM % of peak, same run ------------------------------------------------------------
gemm_line() {  # $1 threads, $2 isa (native|avx2)
  [ "$GEMM" = 1 ] && [ -x "$GEMM_BENCH" ] || return 0
  if [ "$2" = native ]; then env=""; else env="PERCEIVE_ISA=$2"; fi
  env $env "$GEMM_BENCH" -g packed -T "$1" -r 5 -S 192x3840x1280 -S 192x1280x1280 -S 192x5120x1280 \
      -S 192x1280x5120 >"$OUT/gemm.t$1.$2.log" 2>&1 || { echo "gemm ($2, $1 threads): failed, see $OUT/gemm.t$1.$2.log"; return 0; }
  /usr/bin/python3 - "$OUT/gemm.t$1.$2.log" "$1" "$2" <<'PY'
import re, sys
rows, peaks = {}, {}
names = {"192x3840x1280": "qkv", "192x1280x1280": "proj", "192x5120x1280": "mlp-up", "192x1280x5120": "mlp-down"}
for line in open(sys.argv[1]):
    f = line.split()
    m = re.match(r"FMA (\w+)\s+peak (\d) threads?\s*:\s*([\d.]+)", line)
    if m and m.group(2) == sys.argv[2]:
        peaks[m.group(1)] = m.group(3)
    if line.startswith("packed") and "bf16" not in f[1]:
        # variant, shape name, MxNxK, thr, median, %peak, best, %peak, percore, %core, %pair
        v, dims, pk, pair = f[1], f[3], f[6], f[-1]
        rows.setdefault(v, []).append(f"{names.get(dims, dims)} {pk.rstrip('%')} ({pair.rstrip('%')})")
for v, r in list(rows.items())[-1:]:   # the variant perceive picks at this ISA: the last one listed
    peak = peaks.get(v.split("_")[0])
    print(f"gemm: {v} fp32 (isa {sys.argv[3]}), {sys.argv[2]} thread(s), ViT-H layers at 192 tokens, % of this run's "
          f"FMA peak{' (' + peak + ' GFLOP/s)' if peak else ''} (%pair): " + ", ".join(r))
PY
}
for t in $THREADS; do for i in $ISAS; do gemm_line "$t" "$i"; done; done

# ---- graphs ------------------------------------------------------------------------------
avx2=no
for i in $ISAS; do [ "$i" = avx2 ] && avx2=yes; done
if [ $avx2 = yes ]; then
  printf '| graph | threads | precision | perceive p50 ms | ORT fp32 p50 ms | ratio | AVX2-only perceive p50 ms | AVX2 ORT p50 ms | AVX2 ratio | weights MiB | arena+ws MiB | graph RSS MiB (peak - before) | <= 1.1 x (w+a+ws) |\n'
  printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
else
  printf '| graph | threads | precision | perceive p50 ms | ORT fp32 p50 ms | ratio | weights MiB | arena+ws MiB | graph RSS MiB (peak - before) | <= 1.1 x (w+a+ws) |\n'
  printf '|---|---|---|---|---|---|---|---|---|---|\n'
fi
for m in $MODELS; do
  dir=tests/fixtures/models/$m
  [ -d "$dir" ] || dir=bench/models/$m
  [ -d "$dir" ] || { echo "| $m | no such graph (tests/fixtures/models or bench/models) |"; continue; }
  seed=$(cat "$dir/seed.txt" 2>/dev/null || echo 1)
  [ -s "$OUT/$m.onnx" ] && [ "$OUT/$m.onnx" -nt "$dir/skeleton.onnx" ] ||
    "$PERCEIVE" onnx fill "$dir/skeleton.onnx" "$OUT/$m.onnx" --seed "$seed" >/dev/null
  iters=$ITERS
  for kv in $ITERS_PER_MODEL; do [ "${kv%%=*}" = "$m" ] && iters=${kv#*=}; done
  for t in $THREADS; do
    for p in $PRECISIONS; do
      j=$OUT/$m.t$t.$p.json
      "$PERCEIVE" onnx bench "$OUT/$m.onnx" --inputs "$dir/inputs.npz" --iters "$iters" --rounds "$ROUNDS" \
          --threads "$t" --precision "$p" --json "$j" >"$OUT/$m.t$t.$p.log" 2>&1 ||
        { echo "| $m | $t | $p | failed: see $OUT/$m.t$t.$p.log |"; continue; }
      j2=""
      if [ $avx2 = yes ] && [ "$p" = fp32 ]; then
        j2=$OUT/$m.t$t.$p.avx2.json
        PERCEIVE_ISA=avx2 "$PERCEIVE" onnx bench "$OUT/$m.onnx" --inputs "$dir/inputs.npz" --iters "$iters" \
            --rounds "$ROUNDS" --threads "$t" --precision "$p" --json "$j2" >"$OUT/$m.t$t.$p.avx2.log" 2>&1 || j2=failed
      fi
      /usr/bin/python3 - "$j" "$m" "$avx2" "$j2" "$p" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
M = 2 ** 20
ort = j.get("ort_p50_ms")
w, a = j["const_bytes"] / M, (j["arena_bytes"] + j["workspace_bytes"]) / M
rss = (j["peak_rss_bytes"] - j.get("base_rss_bytes", 0)) / M
# a bf16 request the CPU runs as fp32 (no AVX512_BF16, or bf16 slower there: README --precision)
ran = j["precision"] if j["precision"] == sys.argv[5] else f"{sys.argv[5]} (ran {j['precision']})"
cols = [sys.argv[2], str(j["threads"]), ran, f"{j['p50_ms']:.1f}",
        f"{ort:.1f}" if ort else "n/a", f"{j['p50_ms'] / ort:.2f}" if ort else "n/a"]
if sys.argv[3] == "yes":
    if sys.argv[4] == "failed":
        cols += ["failed", "", ""]
    elif sys.argv[4]:
        k = json.load(open(sys.argv[4]))
        o2 = k.get("ort_p50_ms")
        cols += [f"{k['p50_ms']:.1f}", f"{o2:.1f}" if o2 else "n/a", f"{k['p50_ms'] / o2:.2f}" if o2 else "n/a"]
    else:
        cols += ["", "", ""]
cols += [f"{w:.0f}", f"{a:.0f}", f"{rss:.0f} ({j['peak_rss_bytes'] / M:.0f} - {j.get('base_rss_bytes', 0) / M:.0f})",
         f"{'yes' if rss <= 1.1 * (w + a) else 'NO'} ({rss / (w + a):.2f}x)"]
print("| " + " | ".join(cols) + " |")
PY
    done
  done
done
for m in $MODELS; do for t in $THREADS; do for p in $PRECISIONS; do
  [ -f "$OUT/$m.t$t.$p.log" ] && last=$OUT/$m.t$t.$p.log
done; done; done
[ -n "${last:-}" ] && grep -h "^cpu:" "$last" | sed 's/  precision:.*//'
exit 0
