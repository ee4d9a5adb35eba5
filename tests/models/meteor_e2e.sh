#!/bin/sh
# METEOR end to end as a user runs it, on generated artifacts (the full graph, ~2.5 TFLOP a frame):
#   meteor_e2e.sh PERCEIVE SOURCE_DIR [LIBPERCEIVE_SO]
# `perceive gen meteor DIR` (the filled skeleton + a sample manifest with eight camera images),
# `perceive run meteor MANIFEST` (JSON shape, grids that decode to their sizes, the picture),
# the rig cache off gives the same bytes, `perceive serve meteor` answers /predict with camera
# items + calibration params (JSON + base64) with the same bytes as the CLI, keeps per-stream
# state (frame index, out-of-order refused), /info reports the spec's open points read from the
# file, and bad inputs are refused with messages (400 from the server, exit 1 from the CLI).
set -u
PV=$1
SRC=$2
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
export PERCEIVE_CACHE_DIR=$(mktemp -d)
T=$(mktemp -d)
SP=
trap '[ -n "$SP" ] && kill -TERM $SP 2>/dev/null; wait 2>/dev/null; rm -rf "$T" "$PERCEIVE_CACHE_DIR"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
MAN=$SRC/tests/fixtures/meteor/sample/manifest.json

# 1. gen
"$PV" gen meteor "$T/w" >"$T/gen.out" 2>&1 || bad "gen: $(cat "$T/gen.out")"
[ -s "$T/w/meteor_v157c3Z.onnx" ] && [ -s "$T/w/sample/manifest.json" ] && [ -s "$T/w/sample/CAM_BACK_NARROW.jpg" ] ||
    bad "gen: files missing: $(ls -R "$T/w")"
cmp -s "$T/w/sample/manifest.json" "$MAN" || bad "gen: the sample manifest differs from the shipped one (regenerate tests/fixtures/meteor/sample)"

# 2. run, twice: the rig cache on and off give the same bytes
"$PV" run meteor "$MAN" --weights "$T/w" --threads 2 --json "$T/a.json" --png "$T/a.png" >"$T/run.out" 2>"$T/run.err" ||
    bad "run: $(cat "$T/run.err")"
grep -q "objects" "$T/run.out" || bad "run: no summary: $(cat "$T/run.out")"
grep -qi "generated" "$T/run.err" || bad "run: stderr does not say the weights are generated"
"$PV" run meteor "$MAN" --weights "$T/w" --threads 2 --no-timing --json "$T/stable.json" >/dev/null 2>&1 || bad "run --no-timing"
PERCEIVE_METEOR_RIG_CACHE=0 "$PV" run meteor "$MAN" --weights "$T/w" --threads 2 --no-timing --json "$T/nocache.json" >/dev/null 2>&1 ||
    bad "run without the rig cache"
cmp -s "$T/stable.json" "$T/nocache.json" || bad "the rig cache changes the result"
"$PY" - "$T/a.json" "$T/a.png" <<'PYEOF' || bad "run: JSON shape"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("objects", "objects_2d", "unknown_objects", "lanes", "occupancy", "risk", "traffic_light", "ego_path", "meta", "timing_ms"):
    assert k in r, k
def rle_total(x):
    return sum(c for _, c in x)
lanes = r["lanes"]
rle = lanes.get("rle") or lanes.get("grid")
assert rle_total(rle) == 800 * 500, rle_total(rle)
m = r["meta"]
assert m["weights"] == "generated" and m["model"] == "meteor", m
assert all(m["cameras"][c]["present"] for c in m["cameras"]) and len(m["cameras"]) == 8
for k in ("decode", "rig", "preprocess", "engine", "postprocess", "total"):
    assert k in r["timing_ms"], k
assert open(sys.argv[2], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
PYEOF

# 2b. the same frame from Python (the package over libperceive.so), when the library is given
if [ -n "${3:-}" ] && "$PY" -c "import numpy" 2>/dev/null; then
    PERCEIVE_LIB=$3 PYTHONPATH=$SRC/python "$PY" - "$MAN" "$T/w" "$T/stable.json" <<'PYEOF' || bad "python: METEOR"
import json, sys
import perceive
with perceive.METEOR.from_pretrained(weights_dir=sys.argv[2], threads=2) as model:
    r = model(sys.argv[1])
    want = json.load(open(sys.argv[3]))
    got = r.to_dict(); got.pop("timing_ms")
    assert got == want, "to_dict differs from perceive run --json"
    assert r.grid("lanes").shape == (800, 500) and r.grid("occupancy").shape == (16, 200, 200) and r.grid("risk").shape == (400, 250)
    assert len(r.objects) == len(want["objects"]) and len(r.objects_2d) == sum(len(v) for v in want["objects_2d"].values())
    assert r.ego_path.mode == want["ego_path"]["mode"] and r.traffic_light.state == want["traffic_light"]["state_id"]
    try:
        model(b'{"cameras": []}', format="json")
        raise SystemExit("an empty manifest was accepted")
    except perceive.InputError as e:
        assert "no camera" in str(e), e
model.close()
print("python: ok")
PYEOF
fi

# 3. refusals from the CLI (before the model is loaded where possible)
printf '{"cameras": [{"name": "CAM_FRONT_WIDE", "image": "CAM_FRONT_WIDE.jpg", "K": [[0,0,1],[0,500,2],[0,0,1]], "T_cam_ego": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}]}' >"$T/badK.json"
"$PV" run meteor "$T/badK.json" --weights "$T/w" >"$T/o" 2>"$T/e" && bad "bad K accepted"
grep -q "focal" "$T/e" || bad "bad K: $(cat "$T/e")"
"$PV" run meteor "$T/nope.json" --weights "$T/w" >"$T/o" 2>"$T/e" && bad "missing manifest accepted"
PERCEIVE_CACHE_DIR=$T/empty "$PV" run meteor "$MAN" --strict >"$T/o" 2>"$T/e"
[ $? -ne 0 ] && grep -q "hf download AutowareFoundation/meteor" "$T/e" || bad "--strict: $(cat "$T/e")"

# 4. serve: camera items + K/T params, same bytes as the CLI; streams; 400s
PORT=$((20000 + $$ % 20000))
"$PV" serve meteor --weights "$T/w" --port $PORT --threads 2 --quiet 2>"$T/serve.err" &
SP=$!
i=0
until curl -sf "localhost:$PORT/health" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 1800 ] && { echo "FAIL: server did not come up: $(cat "$T/serve.err")"; exit 1; }
    kill -0 $SP 2>/dev/null || { echo "FAIL: server exited: $(cat "$T/serve.err")"; exit 1; }
    sleep 0.1
done
curl -s "localhost:$PORT/info" >"$T/info.json"
"$PY" - "$T/info.json" <<'PYEOF' || bad "/info: $(head -c 400 "$T/info.json")"
import json, sys
i = json.load(open(sys.argv[1]))
m = i.get("model_info", i)
m = m if "open_points" in json.dumps(m) else i
s = json.dumps(m)
assert '"open_points"' in s and '"rig_cache"' in s, s[:300]
PYEOF
"$PY" - "$MAN" "$T" <<'PYEOF'
import base64, json, os, sys
man = json.load(open(sys.argv[1])); d = os.path.dirname(sys.argv[1]); t = sys.argv[2]
def req(extra):
    r = {}
    for c in man["cameras"]:
        r[c["name"]] = {"format": "jpeg", "data": base64.b64encode(open(os.path.join(d, c["image"]), "rb").read()).decode()}
        r["K." + c["name"]] = c["K"]
        r["T_cam_ego." + c["name"]] = c["T_cam_ego"]
    r["v0"] = man["v0"]; r["pose"] = man["pose"]
    r.update(extra)
    return r
json.dump(req({}), open(t + "/req.json", "w"))
json.dump(req({"stream.id": "car-1", "stream.timestamp_s": 10.0}), open(t + "/s1.json", "w"))
json.dump(req({"stream.id": "car-1", "stream.timestamp_s": 10.5}), open(t + "/s2.json", "w"))
json.dump(req({"stream.id": "car-1", "stream.timestamp_s": 10.2}), open(t + "/s3.json", "w"))
bad = req({}); bad["T_cam_ego.CAM_BACK_LEFT"] = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
json.dump(bad, open(t + "/badT.json", "w"))
bad = req({}); bad["CAM_FRONT_LEFT"]["data"] = base64.b64encode(b"\xff\xd8\xff\xe0garbage").decode()
json.dump(bad, open(t + "/badimg.json", "w"))
bad = req({}); bad["K.CAM_FRONT_WIDE"] = [[500, 0, 1], [0, 0, 2], [0, 0, 1]]
json.dump(bad, open(t + "/badfocal.json", "w"))
PYEOF
post() { curl -s -o "$T/$2" -w '%{http_code}' --data-binary @"$T/$1" -H 'Content-Type: application/json' "localhost:$PORT/predict$3"; }
code=$(post req.json p1.json "?timing=0")
[ "$code" = 200 ] || bad "/predict: $code $(head -c 300 "$T/p1.json")"
cmp -s "$T/p1.json" "$T/stable.json" || bad "/predict (items + params) differs from perceive run --json"
code=$(post s1.json s1.out "?timing=0"); [ "$code" = 200 ] && grep -q '"frame":0' "$T/s1.out" || bad "stream frame 0: $code $(head -c 200 "$T/s1.out")"
code=$(post s2.json s2.out "?timing=0"); [ "$code" = 200 ] && grep -q '"frame":1' "$T/s2.out" || bad "stream frame 1: $code"
code=$(post s3.json s3.out ""); [ "$code" = 400 ] && grep -q "not after" "$T/s3.out" || bad "out-of-order frame: $code $(head -c 200 "$T/s3.out")"
code=$(post badT.json e1 ""); [ "$code" = 400 ] && grep -q "rigid" "$T/e1" || bad "bad T: $code $(head -c 200 "$T/e1")"
code=$(post badimg.json e2 ""); [ "$code" = 400 ] && grep -q "CAM_FRONT_LEFT" "$T/e2" || bad "bad image: $code $(head -c 200 "$T/e2")"
code=$(post badfocal.json e3 ""); [ "$code" = 400 ] && grep -q "focal" "$T/e3" || bad "bad focal: $code $(head -c 200 "$T/e3")"
code=$(curl -s -o "$T/e4" -w '%{http_code}' --data-binary @"$MAN" -H 'Content-Type: application/json' "localhost:$PORT/predict")
[ "$code" = 400 ] || bad "a manifest naming files sent to the server: $code $(head -c 200 "$T/e4")"
kill -TERM $SP; wait $SP; SP=
[ $fail -eq 0 ] && echo "meteor end to end: ok"
exit $fail
