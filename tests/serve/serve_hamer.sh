#!/bin/sh
# `perceive serve hamer` over loopback with curl (the generator's reduced-depth twin):
#   serve_hamer.sh PERCEIVE SOURCE_DIR
# /predict with a PNG body and ?box= (repeated), and with JSON + base64 + box rows, answers the
# same bytes as `perceive run --no-timing --json`; malformed requests are 4xx naming the field;
# /info and /health answer; SIGTERM stops it cleanly.
set -u
PV=$1
SRC=$2
IMG=$SRC/tests/fixtures/hamer/image.png
export PERCEIVE_HAMER_GEN_DEPTH=2
export PERCEIVE_CACHE_DIR=${PERCEIVE_CACHE_DIR:-$(mktemp -d)}
T=$(mktemp -d)
fail=0
bad() { echo "FAIL: $*"; fail=1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PORT=$((20000 + $$ % 20000))
"$PV" serve hamer --port $PORT --threads 2 --quiet 2>"$T/serve.err" &
SP=$!
trap 'kill -TERM $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$T"' EXIT
i=0
until curl -sf "localhost:$PORT/health" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 600 ] && { echo "FAIL: server did not come up: $(cat "$T/serve.err")"; exit 1; }
    kill -0 $SP 2>/dev/null || { echo "FAIL: server exited: $(cat "$T/serve.err")"; exit 1; }
    sleep 0.1
done
curl -s "localhost:$PORT/info" | grep -q '"model":	"hamer"' || bad "/info does not name hamer"

"$PV" run hamer "$IMG" --box 233,141,322,301 --box 521,276,689,397 --left --quiet --no-timing --json "$T/api.json" 2>/dev/null ||
    bad "perceive run"
code=$(curl -s -o "$T/p1.json" -w '%{http_code}' --data-binary @"$IMG" -H 'Content-Type: image/png' \
       "localhost:$PORT/predict?timing=0&box=233,141,322,301&box=521,276,689,397,0")
[ "$code" = 200 ] || bad "/predict png: $code $(head -c 300 "$T/p1.json")"
cmp -s "$T/api.json" "$T/p1.json" || bad "/predict (png body) differs from perceive run --json"
B64=$(base64 -w0 "$IMG")
printf '{"image": {"format": "png", "data": "%s"}, "box": [[233,141,322,301,1],[521,276,689,397,0]]}' "$B64" >"$T/req.json"
code=$(curl -s -o "$T/p2.json" -w '%{http_code}' --data-binary @"$T/req.json" -H 'Content-Type: application/json' \
       "localhost:$PORT/predict?timing=0")
[ "$code" = 200 ] || bad "/predict json: $code $(head -c 300 "$T/p2.json")"
cmp -s "$T/api.json" "$T/p2.json" || bad "/predict (JSON + base64) differs from perceive run --json"
code=$(curl -s -o "$T/p3.json" -w '%{http_code}' --data-binary @"$IMG" -H 'Content-Type: image/png' \
       "localhost:$PORT/predict?box=233,141,322,301")
[ "$code" = 200 ] && grep -q '"timing_ms"' "$T/p3.json" || bad "/predict with timing: $code"

expect() {   # expect CODE SUBSTRING curl-args...
    want=$1; sub=$2; shift 2
    got=$(curl -s -o "$T/e.json" -w '%{http_code}' "$@")
    if [ "$got" != "$want" ] || ! grep -qF -- "$sub" "$T/e.json"; then bad "want $want '$sub', got $got $(head -c 300 "$T/e.json")"
    else echo "ok   $got $(head -c 160 "$T/e.json")"; fi
}
head -c 3000 "$IMG" >"$T/trunc.png"
expect 400 "truncated" --data-binary @"$T/trunc.png" -H 'Content-Type: image/png' "localhost:$PORT/predict?box=1,1,50,50"
expect 400 "box[0]" --data-binary @"$IMG" -H 'Content-Type: image/png' "localhost:$PORT/predict?box=900,1,950,50"
expect 400 "box[0]" --data-binary @"$IMG" -H 'Content-Type: image/png' "localhost:$PORT/predict?box=10,10,10,50"
expect 400 "more than 8" --data-binary @"$IMG" -H 'Content-Type: image/png' \
    "localhost:$PORT/predict?box=1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9;1,1,9,9"
expect 400 "box" --data-binary @"$IMG" -H 'Content-Type: image/png' "localhost:$PORT/predict"
expect 400 "crop" --data-binary 'abc' -H 'Content-Type: application/octet-stream' "localhost:$PORT/predict?format=rgb8"
expect 415 "format" --data-binary 'abc' -H 'Content-Type: application/octet-stream' "localhost:$PORT/predict?format=gif"
expect 400 "not a JPEG" --data-binary 'garbage' -H 'Content-Type: image/jpeg' "localhost:$PORT/predict?box=1,1,9,9"
printf '{"image": {"format": "png", "data": "!!!"}, "box": [[1,1,9,9]]}' >"$T/bad.json"
expect 400 "base64" --data-binary @"$T/bad.json" -H 'Content-Type: application/json' "localhost:$PORT/predict"
printf '{"image": {"format": "png", "data": "%s"}, "box": [[1,1,9]]}' "$B64" >"$T/bad2.json"
expect 400 "box[0]" --data-binary @"$T/bad2.json" -H 'Content-Type: application/json' "localhost:$PORT/predict"
printf '{"image": {"format": "png", "data": "%s"}, "box": [1,1,9,9,[2]]}' "$B64" >"$T/bad3.json"
expect 400 "box" --data-binary @"$T/bad3.json" -H 'Content-Type: application/json' "localhost:$PORT/predict"
curl -sf "localhost:$PORT/health" >/dev/null || bad "/health after the bad requests"
kill -TERM $SP
wait $SP
rc=$?
[ $rc = 0 ] || bad "server exit status $rc after SIGTERM"
[ $fail = 0 ] && echo "PASSED" || echo "FAILED"
exit $fail
