#!/bin/sh
# bench/hamer.sh PERCEIVE [ITERS] [ROUNDS]: HaMeR at full depth (32 ViT blocks, the generator's
# seeded weights: 631 M + 39.5 M parameters) on one 256x192 crop, 1 and 2 threads:
#   perceive  `perceive bench hamer --inputs crop.rgb` at fp32 and bf16 (engine p50, first call)
#   ONNX Runtime (npm onnxruntime-node, fp32) on the same network exported from the PyTorch
#             re-statement with the same weights (tools/ref/hamer_export_onnx.py; ort_run.mjs)
#   PyTorch 1.13 (Debian) on the re-statement itself (bench/hamer_torch.py)
# ROUNDS alternate the runners so the machine's load hits all of them alike. Then the full-depth
# agreement: perceive's vertices / keypoints / rotations vs tools/ref/hamer_ref.py on the crop.
# Needs ~12 GB of RAM and disk in $HAMER_BENCH_DIR (default /tmp/hamer_bench, kept between runs).
set -eu
PV=${1:?usage: bench/hamer.sh build/perceive [ITERS] [ROUNDS]}
ITERS=${2:-3}
ROUNDS=${3:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${HAMER_BENCH_DIR:-/tmp/hamer_bench}
PY=/usr/bin/python3
mkdir -p "$W"
if [ ! -f "$W/w/hamer.safetensors" ]; then
    echo "generating the 32-block weights into $W/w"
    PERCEIVE_HAMER_GEN_DEPTH=32 "$PV" gen hamer "$W/w" >/dev/null
fi
if [ ! -f "$W/onnx/hamer.onnx" ]; then
    echo "exporting the network to ONNX ($W/onnx)"
    "$PY" "$ROOT/tools/ref/hamer_export_onnx.py" --weights "$W/w/hamer.safetensors" --out "$W/onnx" >/dev/null
fi
# one crop for everyone: uint8 pixels for perceive, the same normalised for ORT and PyTorch
"$PY" - "$W" "$ROOT" <<'PYEOF'
import os, sys
import numpy as np
W, ROOT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, 'tools', 'ref'))
import hamer_ref
r = np.random.default_rng(7)
yy, xx = np.mgrid[0:256, 0:192]
crop = np.clip(128 + 60 * np.sin(xx / 13.0)[..., None] * np.cos(yy / 17.0)[..., None] + r.normal(0, 20, (256, 192, 3)), 0, 255).astype(np.uint8)
np.save(os.path.join(W, 'crop.npy'), crop)
crop.tofile(os.path.join(W, 'crop.rgb'))
x = hamer_ref.normalise(crop[None].astype(np.float64)).astype(np.float32)
np.savez(os.path.join(W, 'inputs.npz'), input=x)
PYEOF
jget() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $CPU, $(nproc) CPUs; $("$PV" version 2>/dev/null); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| threads | runner | precision | engine p50 ms | first call ms | ratio to ORT fp32 |"
echo "|---|---|---|---|---|---|"
for T in 1 2; do
    for R in $(seq "$ROUNDS"); do
        for P in fp32 bf16; do
            "$PV" bench hamer --inputs "$W/crop.rgb" --weights "$W/w" --iters "$ITERS" --threads "$T" --precision "$P" \
                --json "$W/pv_${T}_${P}_$R.json" >"$W/pv_${T}_${P}_$R.log" 2>&1 || { cat "$W/pv_${T}_${P}_$R.log"; exit 1; }
        done
        (cd "$ROOT/tools/gen" && node ort_run.mjs "$W/onnx/hamer.onnx" "$W/inputs.npz" --bench "$ITERS" --threads "$T" \
            --json "$W/ort_${T}_$R.json" >/dev/null)
        # PyTorch's best setting on 2 cores (spec 7): one torch thread, the BLAS with T threads
        OPENBLAS_NUM_THREADS=$T "$PY" "$ROOT/bench/hamer_torch.py" --weights "$W/w/hamer.safetensors" --input "$W/inputs.npz" \
            --iters "$ITERS" --threads 1 --json "$W/torch_${T}_$R.json" >/dev/null
    done
    # medians over rounds
    "$PY" - "$W" "$T" "$ROUNDS" <<'PYEOF'
import json, sys, statistics as st
W, T, R = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(p): return json.load(open(p))
ort = st.median(load(f'{W}/ort_{T}_{r}.json')['p50_ms'] for r in range(1, R + 1))
for P in ('fp32', 'bf16'):
    js = [load(f'{W}/pv_{T}_{P}_{r}.json') for r in range(1, R + 1)]
    eng = st.median(j['inputs'][0]['engine_p50_ms'] for j in js)
    tot = st.median(j['inputs'][0]['total_p50_ms'] for j in js)
    first = st.median(j['inputs'][0]['first_ms'] for j in js)
    prec = js[0]['precision']
    print(f'| {T} | perceive | {prec} | {eng:.1f} (total {tot:.1f}) | {first:.1f} ({first / tot:.2f}x the total p50) | **{eng / ort:.2f}** |')
print(f'| {T} | ONNX Runtime {load(f"{W}/ort_{T}_1.json").get("ort_version", "")} | fp32 | {ort:.1f} | | 1.00 |')
tj = [load(f'{W}/torch_{T}_{r}.json') for r in range(1, R + 1)]
tp = st.median(j['p50_ms'] for j in tj)
print(f'| {T} | PyTorch {tj[0]["torch_version"]} (1 torch thread, {tj[0]["blas"]} with {T}, OPENBLAS_CORETYPE={tj[0]["openblas_coretype"] or "auto"}) | fp32 | {tp:.1f} | {st.median(j["first_ms"] for j in tj):.1f} | {tp / ort:.2f} |')
PYEOF
done
# full-depth agreement with the PyTorch reference
"$PV" run hamer "$W/crop.npy" --weights "$W/w" --json "$W/pv_crop.json" --threads 2 --quiet --no-timing 2>/dev/null
"$PY" "$ROOT/tools/ref/hamer_ref.py" --weights "$W/w/hamer.safetensors" --crop "$W/crop.npy" --out "$W/ref_crop.npz" --threads 2 --quiet
for P in bf16; do
    "$PV" run hamer "$W/crop.npy" --weights "$W/w" --json "$W/pv_crop_$P.json" --threads 2 --quiet --no-timing --precision $P 2>/dev/null
done
"$PY" - "$W" <<'PYEOF'
import json, sys
import numpy as np
W = sys.argv[1]
ref = np.load(f'{W}/ref_crop.npz')
def cmp(path, label):
    h = json.load(open(path))['hands'][0]
    rows = []
    for key, rk in (('vertices', 'vertices'), ('keypoints_3d', 'keypoints_3d'), ('betas', 'betas'),
                    ('global_orient', 'global_orient'), ('hand_pose', 'hand_pose'), ('keypoints_2d_crop', 'keypoints_2d_crop')):
        a = np.asarray(h[key], np.float64).ravel(); b = ref[rk][0].astype(np.float64).ravel()
        pcc = np.corrcoef(a, b)[0, 1] if a.std() > 0 and b.std() > 0 else 1.0
        rows.append(f'{key} PCC {pcc:.6f} max|d| {np.abs(a - b).max():.2e}')
    print(f'full depth, {label} vs the PyTorch reference: ' + '; '.join(rows))
cmp(f'{W}/pv_crop.json', 'perceive fp32')
cmp(f'{W}/pv_crop_bf16.json', 'perceive bf16')
PYEOF
