#!/bin/sh
# `make run`: the main job. Runs the BEVFusion-L lidar detector on the shipped synthetic frame
# (tests/fixtures/bevfusion/scene/scene_000.pcd: a simulated 64-beam scan with 12 objects of each
# class), prints the objects, and writes the JSON result and a bird's-eye-view PNG to build/demo/.
# Without the released weights in the cache (see README), the model is generated on first use
# (the release's structure, seeded random weights) and every output says so.
set -e
PERCEIVE=${1:-build/perceive}
cd "$(dirname "$0")/.."
mkdir -p build/demo
"$PERCEIVE" version
"$PERCEIVE" run bevfusion tests/fixtures/bevfusion/scene/scene_000.pcd \
    --json build/demo/bevfusion.json --png build/demo/bevfusion.png
echo "result: build/demo/bevfusion.json, picture: build/demo/bevfusion.png"
# HaMeR on the shipped synthetic picture with a right and a left hand box (the full 32-block
# model: without hamer.safetensors it is generated in memory, ~2.7 GB, and labelled so).
"$PERCEIVE" run hamer tests/fixtures/hamer/image.png --box 233,141,322,301 --box 521,276,689,397 --left \
    --json build/demo/hamer.json --png build/demo/hamer.png
echo "result: build/demo/hamer.json, picture: build/demo/hamer.png"
# METEOR on the shipped sample frame (eight synthetic camera images + calibration): without the
# release ONNX the model is generated into the cache on first use (348 MB, labelled so).
"$PERCEIVE" run meteor tests/fixtures/meteor/sample/manifest.json --json build/demo/meteor.json --png build/demo/meteor.png
echo "result: build/demo/meteor.json, picture: build/demo/meteor.png"
