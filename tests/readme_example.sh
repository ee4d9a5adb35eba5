#!/bin/sh
# The README shows examples/detect.c verbatim (the block after "<!-- example: examples/detect.c -->").
set -eu
SRC=$1
T=$(mktemp)
trap 'rm -f "$T"' EXIT
awk '/<!-- example: examples\/detect.c -->/ { f = 1; next } f && /^```c$/ { p = 1; next } p && /^```$/ { exit } p { print }' \
    "$SRC/README.md" >"$T"
if cmp -s "$T" "$SRC/examples/detect.c"; then echo "README example matches examples/detect.c"; exit 0; fi
echo "README example differs from examples/detect.c:"; diff "$T" "$SRC/examples/detect.c" | head -20; exit 1
