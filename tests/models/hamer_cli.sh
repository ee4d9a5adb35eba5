#!/bin/sh
# `perceive run|info|gen hamer` as a user runs them, on the generator's reduced-depth twin
# (PERCEIVE_HAMER_GEN_DEPTH=2: the same code path as the 32-block model, CI-sized):
#   hamer_cli.sh PERCEIVE SOURCE_DIR
# Checks the JSON shape, stable bytes, the picture, the crop input, --weights with a generated
# file (same bytes as in memory), --strict, and that every malformed input is refused with a
# message naming what is wrong (exit 1, nothing printed to stdout).
set -u
PV=$1
SRC=$2
IMG=$SRC/tests/fixtures/hamer/image.png
export PERCEIVE_HAMER_GEN_DEPTH=2
export PERCEIVE_CACHE_DIR=${PERCEIVE_CACHE_DIR:-$(mktemp -d)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
say() { echo "$*"; }
bad() { echo "FAIL: $*"; fail=1; }
PY=/usr/bin/python3

# 1. an image with a right and a left box
"$PV" run hamer "$IMG" --box 233,141,322,301 --box 521,276,689,397 --left --json "$T/a.json" --png "$T/a.png" --threads 2 \
    >"$T/out" 2>"$T/err" || { bad "run: $(cat "$T/err")"; }
grep -q "2 hands" "$T/out" || bad "run: summary lacks '2 hands': $(cat "$T/out")"
grep -q "GENERATED" "$T/err" || bad "run: stderr does not say the weights are generated"
if [ -x "$PY" ]; then
    "$PY" - "$T/a.json" <<'PYEOF' || bad "run: JSON shape"
import json, sys
r = json.load(open(sys.argv[1]))
h = r["hands"]
assert len(h) == 2 and h[0]["is_right"] is True and h[1]["is_right"] is False, [x["is_right"] for x in h]
for x in h:
    assert len(x["vertices"]) == 778 and all(len(v) == 3 for v in x["vertices"])
    assert len(x["keypoints_3d"]) == 21 and len(x["keypoints_2d"]) == 21 and len(x["keypoints_2d_crop"]) == 21
    assert len(x["hand_pose"]) == 15 and len(x["global_orient"]) == 3 and len(x["betas"]) == 10
    assert len(x["cam_t"]) == 3 and len(x["cam_t_full"]) == 3 and len(x["box"]) == 4
assert r["meta"]["weights"] == "generated" and r["meta"]["depth"] == 2 and r["meta"]["num_hands"] == 2
t = r["timing_ms"]
for k in ("decode", "crop", "engine", "skinning", "total"):
    assert k in t, k
PYEOF
fi
[ "$(head -c 8 "$T/a.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || bad "run --png: not a PNG"

# 2. stable bytes: the same input twice without timing
"$PV" run hamer "$IMG" --box 233,141,322,301 --quiet --no-timing --json "$T/s1.json" --threads 2 2>/dev/null || bad "stable run 1"
"$PV" run hamer "$IMG" --param box=233,141,322,301,1 --quiet --no-timing --json "$T/s2.json" --threads 1 2>/dev/null || bad "stable run 2"
cmp -s "$T/s1.json" "$T/s2.json" || bad "--no-timing JSON differs between runs (and thread counts)"

# 3. a crop (raw RGB8, 256 rows x 192 columns)
head -c 147456 /dev/urandom >"$T/c.rgb"
"$PV" run hamer "$T/c.rgb" --json "$T/c.json" --quiet 2>"$T/err" || bad "crop run: $(cat "$T/err")"
grep -q '"input":"crop"' "$T/c.json" || bad "crop run: meta.input is not crop"

# 4. generated weights written to a directory load with --weights and give the same bytes
"$PV" gen hamer "$T/w" >/dev/null || bad "gen hamer"
"$PV" run hamer "$IMG" --box 233,141,322,301 --weights "$T/w" --quiet --no-timing --json "$T/s3.json" 2>/dev/null || bad "run --weights"
cmp -s "$T/s1.json" "$T/s3.json" || bad "--weights DIR (generated file) differs from the in-memory generated weights"
"$PV" info hamer --weights "$T/w" >"$T/info" 2>/dev/null || bad "info"
grep -q '"sha256":' "$T/info" && grep -q '"depth":	2' "$T/info" || bad "info lacks sha256 / depth: $(cat "$T/info")"

# 5. perceive bench: the default input (the fixture image, its four boxes) agrees with the reference
(cd "$SRC" && "$PV" bench hamer --iters 1 --threads 2 --json "$T/bench.json") >"$T/bench.out" 2>&1 || bad "bench: $(cat "$T/bench.out")"
grep -q "agreement    OK: 4 hands" "$T/bench.out" || bad "bench: no agreement line: $(cat "$T/bench.out")"
grep -q '"engine_p50_ms"' "$T/bench.json" || bad "bench --json lacks the stage split"

# 6. refusals: exit 1, a message naming the problem
refuse() {   # refuse "what" "expected substring" args...
    what=$1; want=$2; shift 2
    if "$PV" "$@" >"$T/out" 2>"$T/err"; then bad "$what: accepted"; return; fi
    grep -qF -- "$want" "$T/err" || bad "$what: message lacks '$want': $(cat "$T/err")"
    [ -s "$T/out" ] && bad "$what: printed to stdout: $(cat "$T/out")"
    say "ok   refused $what: $(head -c 200 "$T/err")"
}
head -c 2000 "$IMG" >"$T/trunc.png"
refuse "truncated PNG" "image" run hamer "$T/trunc.png" --box 10,10,50,50
printf 'not an image at all' >"$T/junk.jpg"
refuse "junk JPEG" "image" run hamer "$T/junk.jpg" --box 10,10,50,50
refuse "box outside the image" "box[0]" run hamer "$IMG" --box 700,10,800,50
refuse "zero-area box" "box[0]" run hamer "$IMG" --box 100,100,100,150
refuse "inverted box" "box[1]" run hamer "$IMG" --box 10,10,50,50 --box 60,60,40,80
refuse "NaN box" "box[0]" run hamer "$IMG" --box nan,1,2,3
refuse "three numbers" "box[0]" run hamer "$IMG" --box 1,2,3
refuse "is_right 2" "is_right" run hamer "$IMG" --box 1,2,30,40,2
refuse "9 boxes" "more than 8" run hamer "$IMG" --box 1,1,9,9 --box 1,1,9,9 --box 1,1,9,9 --box 1,1,9,9 --box 1,1,9,9 \
    --box 1,1,9,9 --box 1,1,9,9 --box 1,1,9,9 --box 1,1,9,9
refuse "no box" "box" run hamer "$IMG"
head -c 1000 /dev/urandom >"$T/short.rgb"
refuse "wrong-sized crop" "crop" run hamer "$T/short.rgb"
refuse "a crop with boxes" "crop" run hamer "$T/c.rgb" --box 1,1,9,9
refuse "unknown param" "not known" run hamer "$IMG" --box 1,1,9,9 --param colour=red
touch "$T/hamer.ckpt"
refuse "--weights with an unconverted checkpoint" "convert" run hamer "$IMG" --box 1,1,9,9 --weights "$T"
mkdir -p "$T/empty"
refuse "--strict without weights" "no hamer.safetensors" run hamer "$IMG" --box 1,1,9,9 --strict --weights "$T/empty"
PERCEIVE_WEIGHTS_DIR= PERCEIVE_CACHE_DIR="$T/empty" HOME="$T/empty" XDG_CACHE_HOME= \
    refuse "--strict with nothing anywhere" "not found" run hamer "$IMG" --box 1,1,9,9 --strict

[ $fail = 0 ] && echo "PASSED" || echo "FAILED"
exit $fail
