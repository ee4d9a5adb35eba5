#!/bin/sh
# Runs a Python test or example with Debian's python3, the package from the source tree and the
# library from the build tree:  run.sh LIBPERCEIVE_SO SOURCE_DIR SCRIPT [ARGS...]
# SKIP (77) without /usr/bin/python3 or python3-numpy, and in the sanitized run (PV_SANITIZED=1):
# an ASan library inside an uninstrumented python needs libasan preloaded into the interpreter and
# reports the interpreter's own allocations; the C API it calls is covered there by the C tests.
set -u
LIB=$1
SRC=$2
shift 2
PY=/usr/bin/python3
if [ "${PV_SANITIZED:-0}" = 1 ]; then
    echo "SKIP: the Python package is not run against the ASan+UBSan library (see tests/python/run.sh)"; exit 77
fi
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3 (apt-get install python3-numpy)"; exit 77; }
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: python3-numpy is not installed (apt-get install python3-numpy)"; exit 77; }
export PERCEIVE_LIB="$LIB"
export PYTHONPATH="$SRC/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
exec "$PY" "$@"
