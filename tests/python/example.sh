#!/bin/sh
# The README's Python example (examples/detect.py) prints what its C example (examples/detect.c)
# prints on the shipped frame, object for object (the timing line aside):
#   example.sh EXAMPLE_DETECT LIBPERCEIVE_SO SOURCE_DIR
set -u
CEX=$1
LIB=$2
SRC=$3
FRAME=$SRC/tests/fixtures/bevfusion/scene/scene_000.pcd
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$CEX" "$FRAME" >"$T/c" 2>"$T/cerr" || { echo "FAIL: example_detect: $(cat "$T/cerr")"; exit 1; }
"$SRC/tests/python/run.sh" "$LIB" "$SRC" "$SRC/examples/detect.py" "$FRAME" >"$T/py" 2>"$T/pyerr"
rc=$?
[ $rc = 77 ] && { cat "$T/py"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: detect.py exited $rc: $(cat "$T/pyerr")"; exit 1; }
n=$(sed -n '1s/ objects in.*//p' "$T/c")
if [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$(sed -n '1s/ objects in.*//p' "$T/py")" = "$n" ] &&
   tail -n +2 "$T/c" >"$T/c2" && tail -n +2 "$T/py" >"$T/py2" && cmp -s "$T/c2" "$T/py2"; then
    echo "detect.py and detect.c print the same $n objects"; exit 0
fi
echo "FAIL: detect.py and detect.c differ:"; diff "$T/c" "$T/py" | head -20; exit 1
