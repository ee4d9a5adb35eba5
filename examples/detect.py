"""detect.py: run BEVFusion-L on one lidar file and print the objects (the README's Python example;
it prints what examples/detect.c prints, and tests/python/example.sh checks that it does).
    PYTHONPATH=python python3 examples/detect.py cloud.pcd       (or an N x 3..16 float32 .npy)"""
import sys

import numpy as np
import perceive

src = sys.argv[1]
points = np.load(src) if src.endswith(".npy") else src        # a numpy array (zero-copy), a path, or bytes
try:
    with perceive.BEVFusion.from_pretrained(threads=2) as model:   # weights: PERCEIVE_WEIGHTS_DIR, the HF cache, or generated
        result = model(points, params={"score_threshold": 0.2})
except perceive.PerceiveError as e:                                 # InputError, WeightsError, FormatError, ...
    sys.exit("detect: %s" % e)
print("%d objects in %.1f ms" % (len(result.objects), result.timing_ms["total"]))
for o in result.objects:
    print("label %u score %.3f at (%.2f, %.2f, %.2f) size %.2f x %.2f x %.2f yaw %.3f" % (
        o.label, o.existence_probability, *o.position, *o.dimensions, o.yaw))
body = result.to_dict()                                             # what POST /predict answers
assert len(body["objects"]) == len(result.objects)
