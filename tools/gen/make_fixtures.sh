#!/bin/sh
# make_fixtures.sh: regenerates perceive's reference fixtures (`make check-reference`).
#   tests/fixtures/ops/<case>/     tools/gen/ops_cases.py (models, inputs, ORT outputs)
#   tests/fixtures/models/<name>/  tools/gen/models.py: skeleton.onnx + inputs.npz from torch;
#                                  expected.npz = ORT on `perceive onnx fill --seed 1` output
# Needs Debian's python3-torch, python3-onnx, python3-numpy, node + npm (onnxruntime-node is
# installed into tools/gen/node_modules on first use), and build/perceive for the fill step.
# Environment: PYTHON (default /usr/bin/python3), PERCEIVE (default build/perceive).
# Exit status 3: everything was regenerated except model expected outputs (no working fill).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GEN="$ROOT/tools/gen"
PY="${PYTHON:-/usr/bin/python3}"
PERCEIVE="${PERCEIVE:-$ROOT/build/perceive}"
SEED=1
MODELS="bev_dense vit4 cam_resnet34_fpn unseen meteor_lift meteor_heads"

if [ ! -f "$GEN/node_modules/onnxruntime-node/package.json" ]; then
    # The CPU library ships inside the package; skip the script that fetches GPU binaries.
    (cd "$GEN" && npm ci --no-audit --no-fund --onnxruntime-node-install=skip)
fi

cd "$GEN"
"$PY" ops_cases.py
"$PY" quant_models.py fixtures     # tests/fixtures/models/quant_*: whole models, ORT outputs
"$PY" models.py export $MODELS
"$PY" f16_models.py fixtures     # float16 graphs: weights committed, no fill step

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
unfilled=""
for m in $MODELS; do
    d="$ROOT/tests/fixtures/models/$m"
    mkdir "$tmp/$m"    # the filled model may come with an external data file
    if [ -x "$PERCEIVE" ] &&
       "$PERCEIVE" onnx fill "$d/skeleton.onnx" "$tmp/$m/filled.onnx" --seed "$SEED"; then
        "$PY" models.py expected "$m" "$tmp/$m/filled.onnx" "$d/expected.npz"
        rm -rf "${tmp:?}/$m"
    else
        unfilled="$unfilled $m"
    fi
done
if [ -n "$unfilled" ]; then
    echo "make_fixtures: '$PERCEIVE onnx fill' unavailable or failed; expected.npz not" \
         "regenerated for:$unfilled" >&2
    exit 3
fi
echo "make_fixtures: done"
