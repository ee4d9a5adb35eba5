#!/bin/bash
# make_bevfusion_fixtures.sh: regenerates the BEVFusion-L generated artifacts and test fixtures.
#
#   tools/gen/make_bevfusion_fixtures.sh [--no-calibrate] [--no-ort] [CASE...]
#
#   PERCEIVE=path/to/perceive   the C binary used for `perceive onnx fill` (default build/perceive)
#
# Steps (Debian /usr/bin/python3 with torch, onnx, numpy, yaml; node for the ORT check):
#  1. calibration: skeleton with placeholder statistics -> C fill (seed 1) -> tools/ref/bevfusion_ref.py
#     calibrate on the synthetic scene -> tests/fixtures/bevfusion/calib.npz (BN running mean/var,
#     the dense heatmap bias, the refined class-logit bias). --no-calibrate reuses the committed file.
#  2. src/models/bevfusion/skeleton.onnx (BatchNormalization form) and
#     tests/fixtures/bevfusion/skeleton_muladd.onnx (sparse BNs as Mul/Add), both from calib.npz.
#  3. C fill of skeleton.onnx (seed 1), checked against the hints; the reference writes
#     expected.npz / expected.json into each case dir: scene always, the real frames only when
#     ../shared/data/lidar exists (their case.json names files there; no points are committed).
#  4. checks (scene): the graph's sparse part walked node by node (custom ops from their attributes,
#     both BN forms) equals the reference's own encoder plan; ONNX Runtime runs the filled model's
#     VFE/indices, to-dense and dense parts against the reference; the muladd constants match.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
PV=${PERCEIVE:-$ROOT/build/perceive}
FIX=tests/fixtures/bevfusion
CALIB=$FIX/calib.npz
SKEL=src/models/bevfusion/skeleton.onnx
CALIBRATE=1
ORT=1
CASES=()
for a in "$@"; do
    case "$a" in
        --no-calibrate) CALIBRATE=0 ;;
        --no-ort) ORT=0 ;;
        -*) echo "unknown option $a" >&2; exit 2 ;;
        *) CASES+=("$a") ;;
    esac
done
[ -x "$PV" ] || { echo "make_bevfusion_fixtures: no perceive binary at $PV (set PERCEIVE=)" >&2; exit 1; }
[ -f $FIX/scene/scene_000.pcd ] || { echo "make_bevfusion_fixtures: $FIX/scene/scene_000.pcd missing (run tools/gen/bevfusion_scene.py)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/bevfusion_fix.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

$PY tools/ref/bevfusion_checks.py cases >/dev/null
$PY tools/ref/bevfusion_ref.py selftest

if [ $CALIBRATE = 1 ] || [ ! -f $CALIB ]; then
    $PY tools/gen/bevfusion_gen.py --out "$WORK/uncal.onnx"
    "$PV" onnx fill "$WORK/uncal.onnx" "$WORK/uncal_filled.onnx" --seed 1 >/dev/null
    $PY tools/ref/bevfusion_ref.py calibrate --model "$WORK/uncal_filled.onnx" --case $FIX/scene/case.json --stats $CALIB
fi
$PY tools/gen/bevfusion_gen.py --out $SKEL --calib $CALIB
$PY tools/gen/bevfusion_gen.py --out $FIX/skeleton_muladd.onnx --calib $CALIB --bn-form muladd
"$PV" onnx fill $SKEL "$WORK/filled.onnx" --seed 1 >/dev/null
$PY tools/ref/bevfusion_checks.py fillcheck $SKEL "$WORK/filled.onnx"
$PY tools/ref/bevfusion_checks.py muladd $FIX/skeleton_muladd.onnx "$WORK/filled.onnx"

[ ${#CASES[@]} -gt 0 ] || CASES=(scene nuscenes_1sweep kitti_full_000000 nuscenes_10sweep)
for c in "${CASES[@]}"; do
    if [ "$c" != scene ] && [ ! -d ../shared/data/lidar ]; then
        echo "$c: skipped (../shared/data/lidar not present)"
        continue
    fi
    [ -f $FIX/$c/case.json ] || { echo "$c: no case.json" >&2; exit 1; }
    extra=()
    if [ "$c" = scene ]; then
        extra=(--save-spatial "$WORK/spatial.npy" --save-voxels "$WORK/voxels.npz")
    fi
    $PY tools/ref/bevfusion_ref.py run --model "$WORK/filled.onnx" --case $FIX/$c/case.json "${extra[@]}"
done

if [ -f "$WORK/voxels.npz" ]; then
    $PY tools/ref/bevfusion_checks.py sparsewalk "$WORK/filled.onnx" "$WORK/voxels.npz"
    "$PV" onnx fill $FIX/skeleton_muladd.onnx "$WORK/filled_muladd.onnx" --seed 1 >/dev/null
    $PY tools/ref/bevfusion_checks.py sparsewalk "$WORK/filled_muladd.onnx" "$WORK/voxels.npz"
fi
if [ $ORT = 1 ] && [ -f "$WORK/spatial.npy" ]; then
    $PY tools/ref/bevfusion_ort_check.py --model "$WORK/filled.onnx" --spatial "$WORK/spatial.npy" \
        --voxels "$WORK/voxels.npz" --work "$WORK/ort"
fi
echo "make_bevfusion_fixtures: done"
