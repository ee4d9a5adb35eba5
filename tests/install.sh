#!/bin/sh
# `make install` into a temporary DESTDIR, then used as a user would:
#   install.sh BUILD_DIR SOURCE_DIR PREFIX LIBDIR PYTHON_DIR CC
# Checks the installed files, that libperceive.so exports perceive.h's functions and nothing else,
# builds examples/detect.c with `pkg-config --cflags --libs perceive` against the shared library
# (and with --static against libperceive.a) and runs it on the shipped frame, that the man page
# covers every command of the CLI's usage, and imports the installed Python package (PYTHONPATH
# into the DESTDIR, no PERCEIVE_LIB) and runs a graph with it.
set -u
B=$1
SRC=$2
PREFIX=$3
LIBDIR=$4
PYDIR=$5
CC=$6
FRAME=$SRC/tests/fixtures/bevfusion/scene/scene_000.pcd
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
D=$T/root
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
SAN=""
[ "${PV_SANITIZED:-0}" = 1 ] && SAN="-fsanitize=address,undefined"

if DESTDIR=$D cmake --install "$B" >"$T/log" 2>&1; then ok "cmake --install into DESTDIR"
else bad "cmake --install"; cat "$T/log"; exit 1; fi
P=$D$PREFIX
L=$P/$LIBDIR
for f in "$L/libperceive.so" "$L/libperceive.so.0" "$L/libperceive.a" "$L/pkgconfig/perceive.pc" "$P/include/perceive.h" \
         "$P/bin/perceive" "$P/share/man/man1/perceive.1" "$P/$PYDIR/perceive/__init__.py" "$P/$PYDIR/perceive/_where.py"; do
    [ -e "$f" ] || bad "installed: ${f#"$D"} is missing"
done
[ -L "$L/libperceive.so" ] && [ -L "$L/libperceive.so.0" ] && [ "$(readlink "$L/libperceive.so")" = libperceive.so.0 ] &&
    ok "soname links" || bad "soname links: $(ls -l "$L" | grep libperceive)"

# exports: every pv_ function of the header, nothing else (internal modules and pv_bundle_* stay local)
nm -D --defined-only "$L/libperceive.so" | awk '$2 ~ /^[TtWwDdBbRr]$/ { print $3 }' | sed 's/@.*//' | sort -u >"$T/exports"
grep -oE '^[A-Za-z][A-Za-z0-9_ ]*[ *]pv_[a-z0-9_]+\(' "$SRC/include/perceive.h" | sed -E 's/.*[ *](pv_[a-z0-9_]+)\($/\1/' |
    sort -u >"$T/declared"
if cmp -s "$T/exports" "$T/declared"; then ok "exports = the header's $(wc -l <"$T/declared") functions"
else bad "exports differ from the header's functions:"; diff "$T/declared" "$T/exports" | head -20; fi

# the C example through pkg-config, shared library
export PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
FLAGS=$(pkg-config --cflags --libs perceive) || bad "pkg-config perceive"
if $CC $SAN "$SRC/examples/detect.c" $FLAGS -o "$T/detect" 2>"$T/err"; then ok "cc detect.c \$(pkg-config --cflags --libs perceive): $FLAGS"
else bad "cc detect.c $FLAGS"; cat "$T/err"; fi
readelf -d "$T/detect" 2>/dev/null | grep -q 'NEEDED.*libperceive.so.0' || bad "detect does not load libperceive.so.0"
if LD_LIBRARY_PATH=$L "$T/detect" "$FRAME" >"$T/out" 2>"$T/err" && grep -Eq '^[1-9][0-9]* objects in' "$T/out"; then
    ok "installed detect: $(head -1 "$T/out")"
else bad "installed detect"; cat "$T/out" "$T/err" | head; fi

# the same program linked against libperceive.a with what perceive.pc says the archive needs: its
# Requires.private modules (their shared libraries: `pkg-config --static` would want every
# transitive static archive, which Debian's -dev packages do not all ship) and Libs.private
PC=$L/pkgconfig/perceive.pc
SFLAGS="$(pkg-config --cflags perceive) $(pkg-config --libs $(pkg-config --print-requires-private perceive)) $(sed -n 's/^Libs.private: //p' "$PC")"
if ! $CC $SAN "$SRC/examples/detect.c" "$L/libperceive.a" $SFLAGS -o "$T/detect_static" 2>"$T/err"; then
    bad "cc detect.c libperceive.a $SFLAGS"; head "$T/err"
elif readelf -d "$T/detect_static" | grep -q 'NEEDED.*libperceive'; then bad "static detect loads libperceive.so"
elif "$T/detect_static" "$FRAME" >"$T/sout" 2>"$T/err" && tail -n +2 "$T/out" >"$T/o1" && tail -n +2 "$T/sout" >"$T/o2" &&
     [ -s "$T/o1" ] && cmp -s "$T/o1" "$T/o2"; then ok "static detect (libperceive.a + perceive.pc's private deps) prints the same objects"
else bad "static detect output"; head "$T/sout" "$T/err"; fi

# the installed CLI and its man page: every command of the usage is in the SYNOPSIS
"$P/bin/perceive" version >/dev/null 2>&1 || bad "installed perceive version"
"$P/bin/perceive" 2>&1 | sed -n 's/^ *perceive \([a-z][a-z]*\( [a-z][a-z]*\)\{0,1\}\).*/\1/p' | sed 's/ [A-Z].*//' | sort -u >"$T/cmds"
miss=""
while read -r cmd; do
    grep -q "^\.B perceive $cmd\( \|\$\)" "$P/share/man/man1/perceive.1" || miss="$miss '$cmd'"
done <"$T/cmds"
[ -s "$T/cmds" ] && [ -z "$miss" ] && ok "man page has all $(wc -l <"$T/cmds") commands" || bad "man page lacks:$miss"

# the installed Python package finds the installed library by itself
PY=/usr/bin/python3
if [ "${PV_SANITIZED:-0}" = 1 ]; then echo "skip Python: not run against the ASan library (tests/python/run.sh)"
elif ! [ -x "$PY" ] || ! "$PY" -c "import numpy" 2>/dev/null; then echo "skip Python: no python3-numpy"
elif env -u PERCEIVE_LIB PYTHONPATH="$P/$PYDIR" PYTHONDONTWRITEBYTECODE=1 "$PY" - "$D" "$SRC/tests/fixtures/ops/chain_conv_bn_relu" \
        >"$T/py" 2>&1 <<'PYEOF'
import os, sys
import numpy as np
import perceive
root, case = sys.argv[1], sys.argv[2]
assert perceive.__file__.startswith(root), perceive.__file__
assert os.path.realpath(perceive.library_path).startswith(os.path.realpath(root)), perceive.library_path
assert "bevfusion" in perceive.MODELS and perceive.BEVFusion.bundle == "bevfusion"
x, want = np.load(case + "/inputs.npz")["x"], np.load(case + "/expected.npz")["y"]
with perceive.Graph(case + "/model.onnx", threads=1) as g:
    np.testing.assert_allclose(g.run({"x": x})["y"], want, atol=1e-4, rtol=1e-4)
print("installed package at", os.path.dirname(perceive.__file__), "with", perceive.library_path)
PYEOF
then ok "$(cat "$T/py")"
else bad "installed Python package"; cat "$T/py"; fi

[ $fails -eq 0 ] && echo "all passed" && exit 0
echo "$fails failed"; exit 1
