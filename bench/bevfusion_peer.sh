#!/bin/sh
# The BEVFusion-L whole frame against ONNX Runtime on the dense part of the same model, in one
# command (issue 11's frame goals: fp32 frame <= 0.8x ORT's dense part, bf16 <= 0.3x, sparse
# encoder <= 15 % of the fp32 frame).
#
# ONNX Runtime cannot run the whole model (its sparse-convolution ops are custom), so the peer is
# the part it can run: spatial_features [1,256,180,180] -> bbox_pred/score/label_pred/top_index,
# cut from the generated model with onnx.utils.extract_model and fed the frame's own
# spatial_features (computed by tools/ref/bevfusion_ref.py from the same points). perceive runs
# the whole frame (pv_bevfusion_bench: voxelize, sparse encoder, dense part, post-processing).
# ROUNDS alternate [ORT dense part (perceive's dense part alongside, from `onnx bench`);
# perceive frame fp32; perceive frame bf16] so every column sees the same machine load; the
# figures are medians over the rounds.
#
# Usage: bench/bevfusion_peer.sh [build/perceive] [CASE...]
#   CASE: a directory name under tests/fixtures/bevfusion whose case.json reads a file of
#   ../shared/data (default: kitti_full_000000 nuscenes_10sweep)
#   env: THREADS=2, ROUNDS=3, ITERS=3 (frames per perceive run, after one), OUT=build/bench/bevfusion_peer,
#        PRECISIONS="fp32 bf16" (bf16 skipped where the CPU has no AVX512_BF16)
# Needs /usr/bin/python3 with torch + onnx + numpy (tools/deps.sh), node and
# tools/gen/node_modules/onnxruntime-node, and the shared data files.
set -e
PERCEIVE=${1:-build/perceive}
shift 2>/dev/null || true
cd "$(dirname "$0")/.."
CASES=${*:-"kitti_full_000000 nuscenes_10sweep"}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-3}
OUT=${OUT:-build/bench/bevfusion_peer}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
FRAME_BENCH=$(dirname "$PERCEIVE")/pv_bevfusion_bench
SHARED=$(cd .. && pwd)/shared/data
PY=/usr/bin/python3
mkdir -p "$OUT"
for tool in "$FRAME_BENCH" "$PERCEIVE"; do [ -x "$tool" ] || { echo "bevfusion_peer: $tool not built (make)"; exit 1; }; done
"$PY" -c 'import torch, onnx, numpy' 2>/dev/null || { echo "bevfusion_peer: SKIP, $PY lacks torch/onnx/numpy (tools/deps.sh)"; exit 0; }
[ -d tools/gen/node_modules/onnxruntime-node ] || { echo "bevfusion_peer: SKIP, no tools/gen/node_modules/onnxruntime-node"; exit 0; }

model=$OUT/weights/bevfusion_lidar.onnx
[ -f "$model" ] || "$PERCEIVE" gen bevfusion "$OUT/weights" >/dev/null
[ -f "$OUT/dense.onnx" ] || "$PY" -c "
import onnx.utils, sys
onnx.utils.extract_model(sys.argv[1], sys.argv[2], ['spatial_features'], ['bbox_pred', 'score', 'label_pred', 'top_index'])
" "$model" "$OUT/dense.onnx"

"$PERCEIVE" version 2>/dev/null | head -1
printf 'cpu: %s, %s vCPUs; load average %s; threads %s, rounds %s, %s frames per run\n' \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$THREADS" "$ROUNDS" "$ITERS"
for c in $CASES; do
  case_json=tests/fixtures/bevfusion/$c/case.json
  [ -f "$case_json" ] || { echo "bevfusion_peer: no $case_json"; exit 1; }
  input=$(sed -n 's/.*"input": "\$SHARED\/\(.*\)".*/\1/p' "$case_json")
  fmt=$(sed -n 's/.*"format": "\(.*\)".*/\1/p' "$case_json")
  [ -f "$SHARED/$input" ] || { echo "$c: SKIP, $SHARED/$input absent"; continue; }
  # the frame's own spatial features from the independent reference (same weights, same points)
  if [ ! -f "$OUT/$c.npz" ]; then
    "$PY" tools/ref/bevfusion_ref.py run --fp32 --model "$model" --case "$case_json" --out "$OUT/ref_$c" \
      --save-spatial "$OUT/$c.npy" >/dev/null
    "$PY" -c "
import numpy as np, sys
np.savez(sys.argv[2], spatial_features=np.load(sys.argv[1]).astype(np.float32))" "$OUT/$c.npy" "$OUT/$c.npz"
  fi
  transform=nuscenes
  case $fmt in kitti) transform=kitti ;; esac
  for r in $(seq "$ROUNDS"); do
    "$PERCEIVE" onnx bench "$OUT/dense.onnx" --inputs "$OUT/$c.npz" --threads "$THREADS" --iters "$ITERS" \
      >"$OUT/$c.ort.$r.log" 2>&1
    for p in $PRECISIONS; do
      PERCEIVE_PRECISION=$p "$FRAME_BENCH" --iters "$ITERS" --threads "$THREADS" "$SHARED/$input:$fmt:$transform" \
        >"$OUT/$c.$p.$r.log" 2>&1 || true
    done
  done
done
"$PY" - "$OUT" "$ROUNDS" "$PRECISIONS" $CASES <<'PY'
import re, statistics, sys, os
out, rounds, precs, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
med = lambda xs: statistics.median(xs) if xs else float('nan')
print('| frame | precision | frame p50 ms | sparse ms (share) | dense ms | ORT dense part p50 ms | perceive dense part p50 ms (onnx bench) | frame / ORT dense | goal |')
print('|---|---|---|---|---|---|---|---|---|')
for c in cases:
    ort, pd = [], []
    for r in range(1, rounds + 1):
        f = os.path.join(out, f'{c}.ort.{r}.log')
        if not os.path.exists(f): continue
        t = open(f).read()
        m = re.search(r'onnxruntime [\d.]+ \(fp32\): p50 ([\d.]+) ms', t)
        if m: ort.append(float(m.group(1)))
        m = re.search(r'perceive: .* p50 ([\d.]+) ms', t)
        if m: pd.append(float(m.group(1)))
    for p in precs:
        tot, sp, de, ran = [], [], [], p
        for r in range(1, rounds + 1):
            f = os.path.join(out, f'{c}.{p}.{r}.log')
            if not os.path.exists(f): continue
            text = open(f).read()
            if 'running fp32' in text: ran = f'{p} (ran fp32)'   # the precision note: README --precision
            lines = text.splitlines()
            hdr = [l for l in lines if l.startswith('frame ')]
            rows = [l for l in lines if l and not l.startswith(('frame ', 'open ', 'note: ')) and len(l.split()) > 8]
            if not hdr or not rows: continue
            v = rows[-1].split()
            # columns from the right: ... sparse (rulebk) dense post total first
            tot.append(float(v[-2])); de.append(float(v[-4])); sp.append(float(v[-6]))
        if not tot:
            print(f'| {c} | {ran} | (no run: see {out}/{c}.{p}.1.log) | | | | | | |'); continue
        T, S, D, O = med(tot), med(sp), med(de), med(ort)
        goal = '<= 0.8' if p == 'fp32' else '<= 0.3'
        print(f'| {c} | {ran} | {T:.1f} | {S:.1f} ({100 * S / T:.0f} %) | {D:.1f} | {O:.1f} | {med(pd):.1f} | **{T / O:.2f}** | {goal} |')
PY
