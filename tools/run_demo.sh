#!/bin/sh
# `make run`: the main job. Until the lidar detector lands, it runs the shipped demo graph
# (tests/fixtures/demo: a small conv net exported the way torch/onnx export models) through
# `perceive onnx run` and prints its outputs.
set -e
PERCEIVE=${1:-build/perceive}
cd "$(dirname "$0")/.."
"$PERCEIVE" version
"$PERCEIVE" onnx info tests/fixtures/demo/model.onnx
"$PERCEIVE" onnx run tests/fixtures/demo/model.onnx --inputs tests/fixtures/demo/inputs.npz \
    --outputs build/demo_outputs.npz
echo "outputs written to build/demo_outputs.npz"
