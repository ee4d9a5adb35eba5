#!/bin/bash
# make_meteor_decode_fixtures.sh: regenerates tests/fixtures/meteor/decode/frame<k>.json, the
# numpy reference decode (tools/ref/meteor_decode_ref.py) of the five synthetic frames of
# tools/ref/meteor_decode_synth.py; tests/unit/test_meteor_decode.c regenerates the same raw
# outputs in C, decodes them and compares. Debian /usr/bin/python3 with python3-numpy; ~5 s.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
$PY tools/ref/meteor_decode_ref.py --selftest
$PY tools/ref/meteor_decode_ref.py tests/fixtures/meteor/decode
ls -l tests/fixtures/meteor/decode
