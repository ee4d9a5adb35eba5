#!/usr/bin/python3
"""Writes tests/fixtures/malformed/*.onnx: models that are valid protobuf but wrong ONNX
(cycles, absurd dims, undefined inputs, bad data sizes, wrong attribute types, unsupported
opset/op/dtype). The loader must answer each with an error status and a message."""
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else "."

def save(name, nodes, inputs, outputs, inits=(), opset=17, check=False):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(f"{out}/{name}.onnx", "wb") as f:
        f.write(m.SerializeToString())

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])

save("cycle", [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
               helper.make_node("Identity", ["a"], ["y"])], [X], [Y])
save("self_loop", [helper.make_node("Add", ["x", "y"], ["y"])], [X], [Y])
big = TensorProto()
big.name = "w"; big.data_type = TensorProto.FLOAT; big.dims.extend([1 << 40, 1 << 40]); big.raw_data = b"\0" * 16
save("absurd_dims", [helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [big])
neg = TensorProto()
neg.name = "w"; neg.data_type = TensorProto.FLOAT; neg.dims.extend([2, -3]); neg.raw_data = b"\0" * 24
save("negative_dims", [helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [neg])
short = TensorProto()
short.name = "w"; short.data_type = TensorProto.FLOAT; short.dims.extend([2, 3]); short.raw_data = b"\0" * 10
save("short_raw_data", [helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [short])
save("undefined_input", [helper.make_node("Add", ["x", "nowhere"], ["y"])], [X], [Y])
save("unknown_op", [helper.make_node("FancyOp", ["x"], ["y"])], [X], [Y])
save("custom_domain_unregistered", [helper.make_node("ImplicitGemm", ["x"], ["y"], domain="autoware")], [X], [Y])
# below 7, an operator whose form changed since (Add-6: the broadcast attribute)
save("old_opset", [helper.make_node("Add", ["x", "x"], ["y"], broadcast=0)], [X], [Y], opset=6)
save("future_opset", [helper.make_node("Relu", ["x"], ["y"])], [X], [Y], opset=99)
save("bad_attr_type", [helper.make_node("Softmax", ["x"], ["y"], axis="one")], [X], [Y])
save("unknown_attr", [helper.make_node("Relu", ["x"], ["y"], flavour=3)], [X], [Y])
save("double_input", [helper.make_node("Relu", ["x"], ["y"])],
     [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])], [Y])
save("no_outputs", [helper.make_node("Relu", ["x"], ["y"])], [X], [])
save("output_not_produced", [helper.make_node("Relu", ["x"], ["z"])], [X], [Y])
save("duplicate_output", [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Abs", ["x"], ["y"])], [X], [Y])
save("rank9_input", [helper.make_node("Relu", ["x"], ["y"])],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 9)], [Y])
ext = TensorProto()
ext.name = "w"; ext.data_type = TensorProto.FLOAT; ext.dims.extend([2, 3])
ext.data_location = TensorProto.EXTERNAL
e = ext.external_data.add(); e.key = "location"; e.value = "../../etc/passwd"
save("external_escape", [helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [ext])
ext2 = TensorProto()
ext2.name = "w"; ext2.data_type = TensorProto.FLOAT; ext2.dims.extend([2, 3])
ext2.data_location = TensorProto.EXTERNAL
e = ext2.external_data.add(); e.key = "location"; e.value = "missing.bin"
save("external_missing", [helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [ext2])
save("reshape_bad_shape", [helper.make_node("Reshape", ["x", "s"], ["y"])], [X], [Y],
     [numpy_helper.from_array(np.array([4, 4], dtype=np.int64), "s")])
save("conv_bad_weight_rank", [helper.make_node("Conv", ["x", "w"], ["y"])], [X], [Y],
     [numpy_helper.from_array(np.zeros((3,), dtype=np.float32), "w")])
with open(f"{out}/not_protobuf.onnx", "wb") as f:
    f.write(b"\xff\xff\xff\xff this is not a protobuf message \x00\x01")
with open(f"{out}/empty.onnx", "wb") as f:
    pass
# field 7 (graph) with wrong wire type (varint instead of length-delimited)
with open(f"{out}/wrong_wire_type.onnx", "wb") as f:
    f.write(bytes([0x08, 0x08, 0x38, 0x05]))
