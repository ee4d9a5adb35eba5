#!/bin/sh
# CLI: every `perceive onnx` command on the shipped demo graph, outputs checked against ONNX
# Runtime's (tests/fixtures/demo/expected.npz); usage errors exit 2, bad files exit 1 with a
# message naming the file.
set -u
PERCEIVE=$1
CONF=$2
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
check() {   # check NAME EXPECTED_STATUS COMMAND...
  name=$1; want=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  cp "$T/err" "$T/lasterr"
  if [ "$got" = "$want" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name: exit $got, expected $want"; cat "$T/err"; fi
}
D=tests/fixtures/demo
check version 0 "$PERCEIVE" version
check info 0 "$PERCEIVE" onnx info $D/model.onnx
check run 0 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz --outputs "$T/out.npz" --threads 2
check run-matches-ort 0 "$CONF" compare "$T/out.npz" $D/expected.npz
check bench 0 "$PERCEIVE" onnx bench $D/model.onnx --inputs $D/inputs.npz --iters 3 --no-peer --json "$T/b.json"
check bench-json 0 grep -q '"p50_ms"' "$T/b.json"
check bench-json-isa 0 grep -q '"isa"' "$T/b.json"
check fill 0 "$PERCEIVE" onnx fill tests/fixtures/models/unseen/skeleton.onnx "$T/filled.onnx" --seed 1 --external-threshold 256
check fill-external 0 test -s "$T/filled.onnx.data"
check filled-runs 0 "$PERCEIVE" onnx run "$T/filled.onnx" --inputs tests/fixtures/models/unseen/inputs.npz
# --precision: bf16 runs (or says why it runs fp32); outputs stay close to ONNX Runtime's fp32 ones
check bench-precision 0 "$PERCEIVE" onnx bench $D/model.onnx --inputs $D/inputs.npz --iters 2 --no-peer --precision bf16 --json "$T/p.json"
check bench-precision-json 0 grep -Eq '"precision": "(bf16|fp32)"' "$T/p.json"
check fp32-precision 0 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz --precision fp32 --outputs "$T/f.npz"
check fp32-precision-matches 0 "$CONF" compare "$T/f.npz" $D/expected.npz
check bf16-lowered 0 env PERCEIVE_ISA=avx2 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz --precision bf16
check bf16-lowered-note 0 grep -q "running fp32" "$T/lasterr"
check bad-precision 2 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz --precision fp16
check bad-precision-msg 0 grep -q "fp16" "$T/lasterr"
check bad-precision-env 1 env PERCEIVE_PRECISION=int8 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz
check bad-precision-env-msg 0 grep -q "PERCEIVE_PRECISION" "$T/lasterr"
check no-args 2 "$PERCEIVE"
check bad-cmd 2 "$PERCEIVE" onnx frobnicate
check bad-threads 2 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/inputs.npz --threads zero
check missing-model 1 "$PERCEIVE" onnx run "$T/nope.onnx" --inputs $D/inputs.npz
check missing-model-msg 0 grep -q "nope.onnx" "$T/lasterr"
check bad-inputs 1 "$PERCEIVE" onnx run $D/model.onnx --inputs $D/model.onnx
check skeleton-refused 1 "$PERCEIVE" onnx run tests/fixtures/models/unseen/skeleton.onnx --inputs tests/fixtures/models/unseen/inputs.npz
check skeleton-msg 0 grep -q "has no data" "$T/lasterr"
printf 'x' > "$T/in.npz"
check truncated-npz 1 "$PERCEIVE" onnx run $D/model.onnx --inputs "$T/in.npz"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
