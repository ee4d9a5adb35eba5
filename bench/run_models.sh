#!/bin/sh
# `make bench`: perceive vs ONNX Runtime on the model-shaped graphs (tests/fixtures/models, and the
# bench-only bench/models such as vit32 = ViT-H's 32 blocks), same filled ONNX file, same inputs,
# same thread count, at each precision; every `onnx bench` call alternates perceive's runs with
# ONNX Runtime's (fp32) for ROUNDS rounds, so both columns see the same machine load.
# Needs node + tools/gen/node_modules/onnxruntime-node for the peer column
# (cd tools/gen && npm install --onnxruntime-node-install=skip).
# Usage: bench/run_models.sh [build/perceive] [iters] [models...]
#   env: THREADS="2" (list), PRECISIONS="fp32 bf16", ROUNDS=3, BENCH_OUT=build/bench
# Columns: p50s, their ratio, and the memory check of issue 3: the peak RSS the graph adds (peak
# minus the RSS before it was opened: binary, libraries, inputs) against weights + planned arena +
# workspace (+10 %).
set -e
PERCEIVE=${1:-build/perceive}
ITERS=${2:-5}
shift 2 2>/dev/null || shift $# 2>/dev/null
cd "$(dirname "$0")/.."
MODELS=${*:-"bev_dense vit4 vit32 cam_resnet34_fpn unseen"}
THREADS=${THREADS:-2}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
ROUNDS=${ROUNDS:-3}
OUT=${BENCH_OUT:-build/bench}
mkdir -p "$OUT"
printf '| graph | threads | precision | perceive p50 ms | ORT fp32 p50 ms | ratio | weights MiB | arena+ws MiB | graph RSS MiB (peak - before) | <= 1.1 x (w+a+ws) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for m in $MODELS; do
  dir=tests/fixtures/models/$m
  [ -d "$dir" ] || dir=bench/models/$m
  [ -d "$dir" ] || { echo "| $m | no such graph (tests/fixtures/models or bench/models) |"; continue; }
  seed=$(cat "$dir/seed.txt" 2>/dev/null || echo 1)
  [ -s "$OUT/$m.onnx" ] && [ "$OUT/$m.onnx" -nt "$dir/skeleton.onnx" ] ||
    "$PERCEIVE" onnx fill "$dir/skeleton.onnx" "$OUT/$m.onnx" --seed "$seed" >/dev/null
  for t in $THREADS; do
    for p in $PRECISIONS; do
      j=$OUT/$m.t$t.$p.json
      "$PERCEIVE" onnx bench "$OUT/$m.onnx" --inputs "$dir/inputs.npz" --iters "$ITERS" --rounds "$ROUNDS" \
          --threads "$t" --precision "$p" --json "$j" >"$OUT/$m.t$t.$p.log" 2>&1 ||
        { echo "| $m | $t | $p | failed: see $OUT/$m.t$t.$p.log |"; continue; }
      /usr/bin/python3 - "$j" "$m" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
M = 2 ** 20
ort = j.get("ort_p50_ms")
w, a = j["const_bytes"] / M, (j["arena_bytes"] + j["workspace_bytes"]) / M
rss = (j["peak_rss_bytes"] - j.get("base_rss_bytes", 0)) / M
print(f"| {sys.argv[2]} | {j['threads']} | {j['precision']} | {j['p50_ms']:.1f} | "
      f"{ort:.1f} | {j['p50_ms'] / ort:.2f} | " if ort else
      f"| {sys.argv[2]} | {j['threads']} | {j['precision']} | {j['p50_ms']:.1f} | n/a | n/a | ", end="")
print(f"{w:.0f} | {a:.0f} | {rss:.0f} ({j['peak_rss_bytes'] / M:.0f} - {j.get('base_rss_bytes', 0) / M:.0f}) | "
      f"{'yes' if rss <= 1.1 * (w + a) else 'NO'} ({rss / (w + a):.2f}x) |")
PY
    done
  done
done
for m in $MODELS; do for t in $THREADS; do for p in $PRECISIONS; do
  [ -f "$OUT/$m.t$t.$p.log" ] && last=$OUT/$m.t$t.$p.log
done; done; done
[ -n "${last:-}" ] && grep -h "^cpu:" "$last" | sed 's/  precision:.*//'
