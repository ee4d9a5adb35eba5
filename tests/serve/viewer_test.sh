#!/bin/sh
# The viewer page of `perceive serve` in a real browser (tests/serve/viewer_test.mjs does the
# checks): viewer_test.sh PERCEIVE SOURCE_DIR MODEL OUT_DIR
# Starts `perceive serve MODEL` on a free loopback port, drives Debian's chromium through
# playwright-core (web/node_modules, from tools/deps.sh) with the shipped input of MODEL, and
# leaves the page's screenshot in OUT_DIR/MODEL.png. meteor: `perceive gen meteor` writes the
# generated set into a temporary folder first and the page gets the shipped sample frame
# (manifest.json + 8 JPEGs); open and one frame take minutes on a loaded machine. Exit 77 (skip, with the reason) without
# node, chromium or playwright-core, and under the ASan pass (PV_SANITIZED=1: the server side of
# GET / is covered there by the `serve` test).
set -u
PV=$1
SRC=$2
MODEL=$3
OUT=$4
[ "${PV_SANITIZED:-0}" = 1 ] && { echo "SKIP: the browser test runs in the Release pass only"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is not installed (tools/deps.sh)"; exit 77; }
CHROMIUM=${PV_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: $CHROMIUM is not installed (tools/deps.sh: apt-get install chromium)"; exit 77; }
[ -f "$SRC/web/node_modules/playwright-core/package.json" ] ||
    { echo "SKIP: playwright-core is not in web/node_modules (tools/deps.sh runs npm ci there)"; exit 77; }
case $MODEL in
    bevfusion) INPUT=$SRC/tests/fixtures/bevfusion/scene/scene_000.pcd; set -- ;;
    hamer) INPUT=$SRC/tests/fixtures/hamer/image.png; set -- 233,141,322,301 521,276,689,397,0
           export PERCEIVE_HAMER_GEN_DEPTH=2 ;;
    meteor) INPUT=$SRC/tests/fixtures/meteor/sample; set -- ;;
    *) echo "FAIL: no input known for model $MODEL"; exit 1 ;;
esac
mkdir -p "$OUT"
T=$(mktemp -d)
SP=
trap '[ -n "$SP" ] && kill -TERM $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$T"' EXIT
WEIGHTS=
if [ "$MODEL" = meteor ]; then
    "$PV" gen meteor "$T/w" >"$T/gen.out" 2>&1 || { echo "FAIL: perceive gen meteor: $(cat "$T/gen.out")"; exit 1; }
    WEIGHTS="--weights $T/w"
fi
# an ephemeral port: the server prints "... listening on http://127.0.0.1:PORT" once it serves
# shellcheck disable=SC2086 # WEIGHTS is empty or two words
"$PV" serve "$MODEL" $WEIGHTS --port 0 --threads 2 --quiet >"$T/serve.out" 2>"$T/serve.err" &
SP=$!
i=0
until PORT=$(sed -n 's/.*listening on http:[^ ]*:\([0-9]*\)$/\1/p' "$T/serve.out") && [ -n "$PORT" ]; do
    i=$((i + 1)); [ $i -gt 3000 ] && { echo "FAIL: server did not come up: $(cat "$T/serve.err")"; exit 1; }
    kill -0 $SP 2>/dev/null || { echo "FAIL: server exited: $(cat "$T/serve.err")"; exit 1; }
    sleep 0.1
done
PV_CHROMIUM=$CHROMIUM node "$SRC/tests/serve/viewer_test.mjs" "$SRC" "http://127.0.0.1:$PORT" "$MODEL" "$INPUT" "$OUT/$MODEL.png" "$@"
