#!/bin/sh
# Quantized matmuls of transformer size (384 x 1024 x 1024): perceive vs ONNX Runtime on the same
# ONNX file, inputs and thread count; `perceive onnx bench` alternates perceive's runs with ORT's
# for ROUNDS rounds (both see the same machine load) and reports the medians of the rounds' p50s.
# Graphs (tools/gen/quant_models.py bench): MatMulInteger u8 x s8 and u8 x u8 (constant weights,
# zero points), QLinearMatMul u8 x s8, and the fp32 MatMul of the same size as the float baseline.
# Needs /usr/bin/python3 with onnx and tools/gen/node_modules/onnxruntime-node for the peer.
# Usage: bench/quant.sh [build/perceive]   env: THREADS="1 2", ITERS=20, ROUNDS=5, BENCH_OUT=build/bench
set -e
PERCEIVE=${1:-build/perceive}
cd "$(dirname "$0")/.."
THREADS=${THREADS:-"1 2"}
ITERS=${ITERS:-20}
ROUNDS=${ROUNDS:-5}
OUT=${BENCH_OUT:-build/bench}/quant
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -f "$OUT/matmul_f32/model.onnx" ] || (cd tools/gen && /usr/bin/python3 quant_models.py bench "$OUT" >/dev/null)
printf '| graph (384x1024x1024) | threads | perceive p50 ms | ORT p50 ms | ratio | perceive GOP/s |\n|---|---|---|---|---|---|\n'
for m in matmulinteger_u8s8 matmulinteger_u8u8 qlinearmatmul_u8s8 matmul_f32; do
  for t in $THREADS; do
    j=$OUT/$m.t$t.json
    "$PERCEIVE" onnx bench "$OUT/$m/model.onnx" --inputs "$OUT/$m/inputs.npz" --iters "$ITERS" --rounds "$ROUNDS" \
        --threads "$t" --json "$j" >"$OUT/$m.t$t.log" 2>&1 || { echo "| $m | $t | failed: see $OUT/$m.t$t.log |"; continue; }
    /usr/bin/python3 - "$j" "$m" "$t" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ort = j.get("ort_p50_ms")
ops = 2 * 384 * 1024 * 1024
print(f"| {sys.argv[2]} | {sys.argv[3]} | {j['p50_ms']:.2f} | " + (f"{ort:.2f} | {j['p50_ms'] / ort:.2f} | " if ort else "n/a | n/a | ")
      + f"{ops / j['p50_ms'] / 1e6:.0f} |")
PY
  done
done
for t in $THREADS; do grep -h "^cpu:" "$OUT/matmul_f32.t$t.log" 2>/dev/null | sed 's/  precision:.*//'; done
