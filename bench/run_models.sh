#!/bin/sh
# `make bench`: perceive vs ONNX Runtime on the model-shaped graphs (tests/fixtures/models),
# same filled ONNX file, same inputs, same thread count, in one run; at 1 and 2 threads.
# Needs node + tools/gen/node_modules/onnxruntime-node for the peer column
# (cd tools/gen && npm install --onnxruntime-node-install=skip).
# Usage: bench/run_models.sh [build/perceive] [iters] [models...]
set -e
PERCEIVE=${1:-build/perceive}
ITERS=${2:-5}
shift 2 2>/dev/null || shift $# 2>/dev/null
cd "$(dirname "$0")/.."
MODELS=${*:-"bev_dense vit4 cam_resnet34_fpn unseen"}
OUT=${BENCH_OUT:-build/bench}
mkdir -p "$OUT"
printf '| graph | threads | perceive p50 ms | ORT p50 ms | ratio | arena MiB | peak RSS MiB |\n|---|---|---|---|---|---|---|\n'
for m in $MODELS; do
  dir=tests/fixtures/models/$m
  seed=$(cat "$dir/seed.txt" 2>/dev/null || echo 1)
  "$PERCEIVE" onnx fill "$dir/skeleton.onnx" "$OUT/$m.onnx" --seed "$seed" >/dev/null
  for t in 1 2; do
    "$PERCEIVE" onnx bench "$OUT/$m.onnx" --inputs "$dir/inputs.npz" --iters "$ITERS" --threads "$t" \
        --json "$OUT/$m.t$t.json" >"$OUT/$m.t$t.log" 2>&1 || { echo "| $m | $t | failed: see $OUT/$m.t$t.log |"; continue; }
    /usr/bin/python3 - "$OUT/$m.t$t.json" "$m" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ort = j.get("ort_p50_ms")
print(f"| {sys.argv[2]} | {j['threads']} | {j['p50_ms']:.1f} | {ort:.1f} | {j['p50_ms']/ort:.2f} | "
      f"{j['arena_bytes']/2**20:.1f} | {j['peak_rss_bytes']/2**20:.0f} |" if ort else
      f"| {sys.argv[2]} | {j['threads']} | {j['p50_ms']:.1f} | n/a | n/a | {j['arena_bytes']/2**20:.1f} | {j['peak_rss_bytes']/2**20:.0f} |")
PY
  done
done
grep -h "^cpu:" "$OUT"/*.log | head -1
