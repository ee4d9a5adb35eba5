#!/bin/bash
# make_hamer_fixtures.sh: regenerates tests/fixtures/hamer/ (crops.npz, image.npz, image.png) from
# the PyTorch reference tools/ref/hamer_ref.py on the C generator's reduced-depth weights.
#
#   tools/gen/make_hamer_fixtures.sh [--weights F.safetensors]
#
#   PERCEIVE=path/to/perceive   the C binary whose `gen hamer` makes the weights (default build/perceive)
#   THREADS=N                   torch threads for the reference (default 2)
#
# Steps (Debian /usr/bin/python3 with python3-torch, python3-numpy):
#  1. weights: `PERCEIVE_HAMER_GEN_DEPTH=2 perceive gen hamer DIR`, twice, and the two files must be
#     byte-identical (the generator is deterministic; the C test regenerates the file and compares
#     its sha256 with the fixtures' weights_sha256). --weights F uses F instead (development only:
#     the C test then reports the fixtures as stale).
#  2. tools/ref/hamer_ref.py --selftest (parameter counts, conventions, left = mirrored right).
#  3. tools/gen/hamer_fixture_inputs.py inputs: two synthetic 256x192 crops, the 640x480 PNG and
#     its four boxes (right inside; left past the edges; two blurred, b > 563.2).
#  4. the reference on the crops (crop 1 as a left hand) and on the image + boxes.
#  5. hamer_fixture_inputs.py pack: the committed npz files (keys: see its docstring), < 3 MB.
# Takes about a minute (depth 2; ~8 s per crop with Debian's reference BLAS).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
PV=${PERCEIVE:-$ROOT/build/perceive}
FIX=tests/fixtures/hamer
THREADS=${THREADS:-2}
WEIGHTS=
while [ $# -gt 0 ]; do
    case "$1" in
        --weights) WEIGHTS=$2; shift 2 ;;
        --weights=*) WEIGHTS=${1#--weights=}; shift ;;
        *) echo "make_hamer_fixtures: unknown argument $1" >&2; exit 2 ;;
    esac
done
WORK=$(mktemp -d /tmp/hamer_fix.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ -n "$WEIGHTS" ]; then
    W=$WEIGHTS
    echo "make_hamer_fixtures: using $W (development; not the C generator's file)"
else
    [ -x "$PV" ] || { echo "make_hamer_fixtures: no perceive binary at $PV (set PERCEIVE=)" >&2; exit 1; }
    for d in gen1 gen2; do
        PERCEIVE_HAMER_GEN_DEPTH=2 "$PV" gen hamer "$WORK/$d" >/dev/null
    done
    W=$WORK/gen1/hamer.safetensors
    [ -f "$W" ] || { echo "make_hamer_fixtures: perceive gen hamer wrote no $W" >&2; ls "$WORK/gen1" >&2; exit 1; }
    cmp -s "$W" "$WORK/gen2/hamer.safetensors" ||
        { echo "make_hamer_fixtures: perceive gen hamer is not deterministic (two runs differ)" >&2; exit 1; }
    rm -rf "$WORK/gen2"
fi

$PY tools/ref/hamer_ref.py --selftest >"$WORK/selftest.log" ||
    { cat "$WORK/selftest.log"; echo "make_hamer_fixtures: reference self-test failed" >&2; exit 1; }
$PY tools/gen/hamer_fixture_inputs.py inputs --work "$WORK" --fixdir "$FIX"
# shellcheck disable=SC2046
$PY tools/ref/hamer_ref.py --weights "$W" --crop "$WORK/crops.npy" --is-right "$(cat "$WORK/crops.is_right")" \
    --out "$WORK/crops_ref.npz" --threads "$THREADS"
# shellcheck disable=SC2046
$PY tools/ref/hamer_ref.py --weights "$W" --image "$FIX/image.png" $(cat "$WORK/boxes.args") \
    --out "$WORK/image_ref.npz" --threads "$THREADS"
$PY tools/gen/hamer_fixture_inputs.py pack --work "$WORK" --fixdir "$FIX"
echo "make_hamer_fixtures: done ($FIX)"
