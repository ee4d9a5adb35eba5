#!/bin/sh
# The METEOR structure graph (../shared/data/meteor/meteor_skeleton.onnx, 2,052 nodes) filled
# with seeded weights, run by perceive and by ONNX Runtime on the same file and inputs:
# per-output max |error| and both runtimes' wall time. Not a CI test (minutes per frame).
# Usage: bench/meteor.sh [build/perceive] [threads]
set -e
PERCEIVE=${1:-build/perceive}
THREADS=${2:-2}
cd "$(dirname "$0")/.."
SKEL=${METEOR_SKELETON:-../shared/data/meteor/meteor_skeleton.onnx}
OUT=${BENCH_OUT:-build/bench}/meteor
mkdir -p "$OUT"
[ -f "$SKEL" ] || { echo "meteor: $SKEL not found, skipping"; exit 0; }
"$PERCEIVE" onnx fill "$SKEL" "$OUT/meteor.onnx" --seed 1
/usr/bin/python3 - "$OUT/inputs.npz" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(3)
imgs = rng.integers(0, 256, (1, 8, 3, 432, 768), dtype=np.uint8)
K = np.zeros((1, 8, 3, 3), np.float32)
K[0, :, 0, 0] = K[0, :, 1, 1] = 500.0
K[0, :, 0, 2], K[0, :, 1, 2], K[0, :, 2, 2] = 384.0, 216.0, 1.0
T = np.zeros((1, 8, 4, 4), np.float32)
for c in range(8):                      # cameras around the car, optical axis outwards
    yaw = c * np.pi / 4
    fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0]); right = np.array([np.sin(yaw), -np.cos(yaw), 0.0])
    down = np.array([0.0, 0.0, -1.0])
    R = np.stack([right, down, fwd], 1)  # camera axes (x right, y down, z forward) in ego
    T[0, c, :3, :3] = R
    T[0, c, :3, 3] = [1.0 + 0.5 * np.cos(yaw), 0.5 * np.sin(yaw), 1.6]
    T[0, c, 3, 3] = 1.0
np.savez(sys.argv[1], imgs=imgs, K=K, T_cam_ego=T, v0=np.array([10.0], np.float32))
PY
start=$(date +%s.%N)
PERCEIVE_THREADS=$THREADS "$PERCEIVE" onnx run "$OUT/meteor.onnx" --inputs "$OUT/inputs.npz" --outputs "$OUT/perceive.npz" --threads "$THREADS" > "$OUT/perceive.log"
mid=$(date +%s.%N)
node tools/gen/ort_run.mjs "$OUT/meteor.onnx" "$OUT/inputs.npz" "$OUT/ort.npz" --threads "$THREADS" --opt all
end=$(date +%s.%N)
/usr/bin/python3 - "$OUT" "$start" "$mid" "$end" "$THREADS" <<'PY'
import sys, numpy as np
d, s, m, e, t = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
a, b = np.load(f"{d}/perceive.npz"), np.load(f"{d}/ort.npz")
print(f"perceive {m - s:.1f} s, onnxruntime {e - m:.1f} s (process wall time incl. load, {t} threads)")
print("| output | shape | dtype | max abs err | max abs ref | mismatches (ints) |")
print("|---|---|---|---|---|---|")
for k in b.files:
    x, y = a[k], b[k]
    if x.dtype.kind == "f":
        err = float(np.max(np.abs(x.astype(np.float64) - y))) if x.size else 0.0
        print(f"| {k} | {list(y.shape)} | {y.dtype} | {err:.3g} | {float(np.max(np.abs(y))) if y.size else 0:.3g} | |")
    else:
        print(f"| {k} | {list(y.shape)} | {y.dtype} | | | {int(np.sum(x != y))} of {y.size} |")
PY
