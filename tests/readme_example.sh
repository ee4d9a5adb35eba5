#!/bin/sh
# The README shows examples/detect.c and examples/detect.py verbatim (the fenced block after
# "<!-- example: examples/detect.c -->", resp. "<!-- example: examples/detect.py -->").
set -eu
SRC=$1
T=$(mktemp)
trap 'rm -f "$T"' EXIT
fails=0
for pair in detect.c:c detect.py:python; do
    file=examples/${pair%%:*}
    lang=${pair##*:}
    awk -v mark="<!-- example: $file -->" -v fence="\`\`\`$lang" \
        '$0 == mark { f = 1; next } f && $0 == fence { p = 1; next } p && /^```$/ { exit } p { print }' "$SRC/README.md" >"$T"
    if cmp -s "$T" "$SRC/$file"; then echo "README example matches $file"
    else echo "README example differs from $file:"; diff "$T" "$SRC/$file" | head -20; fails=$((fails + 1)); fi
done
exit $fails
