#!/usr/bin/python3
"""Writes tests/fixtures/demo/{model.onnx,inputs.npz}: a small conv net (Conv+BN+Relu,
residual Add, MaxPool, Shape->Gather->Concat->Reshape, Gemm, Softmax) used by `make run` and
by the planner/allocator/loader unit tests. Expected outputs come from ONNX Runtime
(tools/gen/ort_run.mjs)."""
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else "."
rng = np.random.default_rng(7)

def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)

C = 8
inits = [
    init("w1", rng.uniform(-0.3, 0.3, (C, 3, 3, 3)).astype(np.float32)),
    init("bn_s", rng.uniform(0.8, 1.2, C).astype(np.float32)),
    init("bn_b", rng.uniform(-0.1, 0.1, C).astype(np.float32)),
    init("bn_m", rng.uniform(-0.1, 0.1, C).astype(np.float32)),
    init("bn_v", rng.uniform(0.5, 1.5, C).astype(np.float32)),
    init("w2", rng.uniform(-0.2, 0.2, (C, C, 3, 3)).astype(np.float32)),
    init("b2", rng.uniform(-0.1, 0.1, C).astype(np.float32)),
    init("wf", rng.uniform(-0.2, 0.2, (10, C * 4 * 4)).astype(np.float32)),
    init("bf", rng.uniform(-0.1, 0.1, 10).astype(np.float32)),
    init("idx0", np.array([0], dtype=np.int64)),
    init("minus1", np.array([-1], dtype=np.int64)),
]
nodes = [
    helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["n1"], name="bn1", epsilon=1e-3),
    helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c2", "r1"], ["s2"], name="residual"),
    helper.make_node("Relu", ["s2"], ["r2"], name="relu2"),
    helper.make_node("MaxPool", ["r2"], ["p2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Shape", ["p2"], ["shp"], name="shape"),
    helper.make_node("Gather", ["shp", "idx0"], ["batch"], name="batch", axis=0),
    helper.make_node("Concat", ["batch", "minus1"], ["newshape"], name="cat", axis=0),
    helper.make_node("Reshape", ["p2", "newshape"], ["flat"], name="flatten"),
    helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
]
g = helper.make_graph(nodes, "demo",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10]),
                       helper.make_tensor_value_info("r1", TensorProto.FLOAT, ["batch", C, 8, 8])],
                      inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="perceive-gen")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
