#!/bin/sh
# `perceive run MODEL DIR|LIST --out DIR` (batch runs) as a user runs them:
#   cli_batch.sh PERCEIVE SOURCE_DIR
# A folder with the shipped bevfusion frame twice, a corrupt frame (its name has a comma: CSV
# quoting) and two files bevfusion does not take: the JSONs equal the single run's, the failure
# is listed with its message, exit 1, summary.csv rows; a second run skips both (the model is not
# even loaded); a truncated JSON is recomputed; a list file with relative paths, a comment, a
# duplicate and two inputs of the same name; hamer over two images with --box and --png, --list
# with --force, --recursive; usage errors; Ctrl-C stops after the current input with the summary
# written (exit 130).
set -u
PV=$1
SRC=$2
FRAME=$SRC/tests/fixtures/bevfusion/scene/scene_000.pcd
IMG=$SRC/tests/fixtures/hamer/image.png
export PERCEIVE_HAMER_GEN_DEPTH=2
export PERCEIVE_CACHE_DIR=${PERCEIVE_CACHE_DIR:-$(mktemp -d)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
mtime() { stat -c %y "$1" 2>/dev/null; }

IN=$T/in
OUT=$T/out
mkdir -p "$IN" "$T/in2"
cp "$FRAME" "$IN/a.pcd"
cp "$FRAME" "$IN/b.pcd"
cp "$FRAME" "$T/in2/a.pcd"
head -c 120 "$FRAME" >"$IN/bad,1.pcd"          # header cut short
echo "not a point cloud" >"$IN/notes.txt"       # a format bevfusion does not take: left out
cp "$IMG" "$IN/photo.png"                        # likewise

"$PV" run bevfusion "$FRAME" --json "$T/single.json" --no-timing --quiet 2>"$T/err" || { bad "single run"; cat "$T/err"; }
nobj=$(grep -c '"label_id"' "$T/single.json")

# 1. the folder: 2 JSONs equal to the single run, the failure listed, exit 1, summary rows
"$PV" run bevfusion "$IN" --out "$OUT" --no-timing >"$T/out1" 2>"$T/err1"
rc=$?
[ $rc -eq 1 ] && ok "exit 1 when an input failed" || { bad "exit $rc (want 1)"; cat "$T/err1"; }
if cmp -s "$T/single.json" "$OUT/a.json" && cmp -s "$T/single.json" "$OUT/b.json"; then ok "batch JSONs == single-run JSON"
else bad "batch JSONs differ from the single run"; fi
[ -e "$OUT/bad,1.json" ] && bad "a JSON for the corrupt input"
ls "$OUT" | grep -Eq '^(notes|photo)' && bad "outputs for files bevfusion does not take: $(ls "$OUT")"
grep -q "left out 2 files that bevfusion does not take" "$T/err1" && ok "unsupported files left out" || bad "no 'left out' line"
grep -q "^\[1/3\] $IN/a.pcd: ok .* ms, $nobj objects" "$T/err1" && grep -q "^\[2/3\] $IN/b.pcd: ok" "$T/err1" &&
    grep -q "^\[3/3\] $IN/bad,1.pcd: FAILED: .*pcd" "$T/err1" && ok "plain progress lines" || { bad "progress lines"; cat "$T/err1"; }
sed -n '/^perceive: failed:/,$p' "$T/err1" | grep -q "^  $IN/bad,1.pcd: .*pcd" && ok "failure listed at the end" || bad "failure not listed at the end"
[ -s "$T/out1" ] && bad "batch printed to stdout: $(cat "$T/out1")"
S=$OUT/summary.csv
tr -d '\r' <"$S" >"$T/s1"
[ "$(head -1 "$T/s1")" = "input,output,status,decode_ms,preprocess_ms,engine_ms,postprocess_ms,wait_ms,total_ms,objects,error" ] &&
    [ "$(wc -l <"$T/s1")" -eq 4 ] && ok "summary header, 3 rows" || { bad "summary shape"; cat "$S"; }
for f in a b; do
    grep -Eq "^$IN/$f.pcd,$OUT/$f.json,ok,([0-9]+\.[0-9]{3},){6}$nobj,$" "$T/s1" && ok "summary row $f: ok, timings, $nobj objects" ||
        { bad "summary row $f"; cat "$S"; }
done
grep -Eq "^\"$IN/bad,1.pcd\",\"$OUT/bad,1.json\",failed,,,,,,,,.*pcd" "$T/s1" && ok "summary row of the failure (RFC 4180 quoting)" ||
    { bad "summary failure row"; cat "$S"; }
[ "$(head -c 200 "$S" | od -An -c | grep -c '\\r')" -ge 1 ] && ok "summary lines end with CRLF" || bad "summary without CRLF"

# 2. again: both skipped, nothing recomputed (same mtimes; the bad file fails before any load)
ma=$(mtime "$OUT/a.json"); mb=$(mtime "$OUT/b.json")
"$PV" run bevfusion "$IN" --out "$OUT" --no-timing >/dev/null 2>"$T/err2"
rc=$?
if [ $rc -eq 1 ] && grep -q "^\[1/3\] $IN/a.pcd: skipped" "$T/err2" && grep -q "^\[2/3\] $IN/b.pcd: skipped" "$T/err2" &&
   [ "$ma" = "$(mtime "$OUT/a.json")" ] && [ "$mb" = "$(mtime "$OUT/b.json")" ] && ! grep -q "loading bevfusion" "$T/err2"; then
    ok "resume: both skipped, nothing recomputed, no model load"
else bad "resume (rc $rc)"; cat "$T/err2"; fi
# skipped rows keep the previous run's numbers
tr -d '\r' <"$S" >"$T/s2"
for f in a b; do
    n1=$(grep "^$IN/$f.pcd," "$T/s1" | cut -d, -f4-10); n2=$(grep "^$IN/$f.pcd," "$T/s2" | cut -d, -f4-10)
    grep -q "^$IN/$f.pcd,$OUT/$f.json,skipped," "$T/s2" && [ -n "$n1" ] && [ "$n1" = "$n2" ] && ok "skipped row $f keeps its numbers" ||
        { bad "skipped row $f"; cat "$S"; }
done

# 3. a truncated JSON (as a killed writer would leave) is recomputed; without failures exit 0
rm "$IN/bad,1.pcd" "$OUT/summary.csv"
head -c 300 "$T/single.json" >"$OUT/a.json"
mb=$(mtime "$OUT/b.json")
"$PV" run bevfusion "$IN" --out "$OUT" --no-timing >/dev/null 2>"$T/err3"
rc=$?
if [ $rc -eq 0 ] && grep -q "^\[1/2\] $IN/a.pcd: ok" "$T/err3" && grep -q "^\[2/2\] $IN/b.pcd: skipped" "$T/err3" &&
   cmp -s "$T/single.json" "$OUT/a.json" && [ "$mb" = "$(mtime "$OUT/b.json")" ]; then ok "truncated JSON recomputed, exit 0"
else bad "truncated JSON (rc $rc)"; cat "$T/err3"; fi
# without a previous summary.csv a skipped row has empty numbers
tr -d '\r' <"$OUT/summary.csv" | grep -q "^$IN/b.pcd,$OUT/b.json,skipped,,,,,,,,$" && ok "skipped row without a previous summary: empty numbers" ||
    { bad "skipped row without a previous summary"; cat "$OUT/summary.csv"; }
ls "$OUT" | grep -q "\.tmp\." && bad "temporary files left in --out: $(ls "$OUT")"

# 4. a list file: relative paths (to the list's folder), comments, blank lines, a duplicate, two
#    inputs named a.pcd (names keep their folders), a missing file (listed inputs are not filtered)
mkdir -p "$T/lists"
printf '# frames\n\n../in/a.pcd\n  ../in2/a.pcd  \r\n%s\n../in/missing.pcd\n' "$IN/a.pcd" >"$T/lists/frames.txt"
"$PV" run bevfusion "$T/lists/frames.txt" --out "$T/out2" --no-timing >/dev/null 2>"$T/err4"
rc=$?
if [ $rc -eq 1 ] && cmp -s "$T/single.json" "$T/out2/in__a.pcd.json" && cmp -s "$T/single.json" "$T/out2/in2__a.pcd.json" &&
   [ "$(tr -d '\r' <"$T/out2/summary.csv" | wc -l)" -eq 4 ] && grep -q "named twice" "$T/err4" &&
   grep -q "missing.pcd,.*,failed,.*No such file" "$T/out2/summary.csv"; then ok "list file: relative paths, duplicate, name collision, missing file"
else bad "list file (rc $rc): $(ls "$T/out2")"; cat "$T/err4"; fi

# 5. hamer over two images with the same boxes, with pictures
mkdir -p "$T/hands"
cp "$IMG" "$T/hands/one.png"; cp "$IMG" "$T/hands/two.png"; cp "$FRAME" "$T/hands/frame.pcd"
"$PV" run hamer "$IMG" --box 233,141,322,301 --box 521,276,689,397 --left --json "$T/hand.json" --no-timing --quiet 2>/dev/null ||
    bad "hamer single run"
if "$PV" run hamer "$T/hands" --out "$T/hout" --box 233,141,322,301 --box 521,276,689,397 --left --png --no-timing >/dev/null 2>"$T/err6" &&
   cmp -s "$T/hand.json" "$T/hout/one.json" && cmp -s "$T/hand.json" "$T/hout/two.json" &&
   [ "$(head -c 8 "$T/hout/one.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && [ -s "$T/hout/two.png" ] &&
   grep -q "2 hands" "$T/err6" && grep -q "left out 1 file that hamer does not take (frame.pcd)" "$T/err6" &&
   [ "$(tr -d '\r' <"$T/hout/summary.csv" | grep -c ',ok,.*,2,$')" -eq 2 ]; then ok "hamer batch with --box and --png"
else bad "hamer batch"; cat "$T/err6"; fi
# --list FILE (paths relative to its folder) and --force: everything recomputed
printf 'one.png\ntwo.png\n' >"$T/hands/pics.lst"
m1=$(mtime "$T/hout/one.json")
"$PV" run hamer --list "$T/hands/pics.lst" --out "$T/hout" --box 233,141,322,301 --box 521,276,689,397 --left --png --no-timing --force \
    >/dev/null 2>"$T/err5"
[ "$(grep -c ': ok ' "$T/err5")" -eq 2 ] && [ "$m1" != "$(mtime "$T/hout/one.json")" ] && cmp -s "$T/hand.json" "$T/hout/one.json" &&
    ok "--list, --force recomputes" || { bad "--list --force"; cat "$T/err5"; }
# --png makes a missing picture a reason to run again
rm "$T/hout/two.png"
"$PV" run hamer "$T/hands" --out "$T/hout" --box 233,141,322,301 --box 521,276,689,397 --left --png --no-timing >/dev/null 2>"$T/err7"
grep -q "one.png: skipped" "$T/err7" && grep -q "two.png: ok" "$T/err7" && [ -s "$T/hout/two.png" ] && ok "--png: a missing picture reruns" ||
    { bad "--png resume"; cat "$T/err7"; }

# --recursive: sub-folders too (same file names keep their folders), the --out folder inside the
# input folder is not read back as input (its PNGs would be hamer inputs)
mkdir -p "$T/hands/sub"
cp "$IMG" "$T/hands/sub/one.png"
for pass in 1 2; do
    "$PV" run hamer "$T/hands" --recursive --out "$T/hands/res" --box 233,141,322,301 --png --no-timing >/dev/null 2>"$T/err9"
    echo "rc $?" >>"$T/err9"
done
if grep -q "rc 0" "$T/err9" && grep -q "^\[1/3\] $T/hands/one.png: skipped" "$T/err9" && grep -q "^\[2/3\] $T/hands/sub/one.png: skipped" "$T/err9" &&
   grep -q "^\[3/3\] $T/hands/two.png: skipped" "$T/err9" && [ -s "$T/hands/res/hands__one.png.json" ] && [ -s "$T/hands/res/sub__one.png.json" ] &&
   [ -s "$T/hands/res/two.json" ]; then ok "--recursive, --out inside the input folder"
else bad "--recursive: $(ls "$T/hands/res")"; cat "$T/err9"; fi

# 6. usage errors: exit 2 with a message
usage() {   # usage "what" "expected substring" args...
    what=$1; want=$2; shift 2
    "$PV" "$@" >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$want" "$T/err" && ok "refused: $what" || { bad "$what (rc $rc)"; cat "$T/err"; }
}
usage "a folder without --out" "needs --out" run bevfusion "$IN"
usage "--json in a batch" "--json" run bevfusion "$IN" --out "$T/o3" --json x.json
usage "--sweep in a batch" "--sweep" run bevfusion "$IN" --out "$T/o3" --sweep "$FRAME"
usage "an unknown model" "not known" run nosuchmodel "$IN" --out "$T/o3"
usage "a missing list" "list.txt" run bevfusion "$T/list.txt" --out "$T/o3"

# 7. Ctrl-C: stops after the current input, summary written, exit 130
mkdir -p "$T/many"
for i in 1 2 3 4; do cp "$FRAME" "$T/many/f$i.pcd"; done
"$PV" run bevfusion "$T/many" --out "$T/o4" --no-timing >/dev/null 2>"$T/err8" &
pid=$!
n=0
while ! grep -q "loaded bevfusion" "$T/err8" && kill -0 $pid 2>/dev/null && [ $n -lt 6000 ]; do sleep 0.1; n=$((n + 1)); done
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && grep -q "interrupted" "$T/err8" && grep -q ",not_run," "$T/o4/summary.csv" &&
   [ "$(tr -d '\r' <"$T/o4/summary.csv" | wc -l)" -eq 5 ]; then ok "Ctrl-C: exit 130, summary with not_run rows"
else bad "Ctrl-C (rc $rc)"; cat "$T/err8"; cat "$T/o4/summary.csv"; fi

[ $fails -eq 0 ] && echo "all passed" && exit 0
echo "$fails failed"; exit 1
