#!/usr/bin/python3
"""quant_models.py: quantized model fixtures (issue 12 part 3), written with onnx.helper at
opset 13 with seeded weights (committed whole: the files are small), expected outputs from
ONNX Runtime (one thread, basic graph optimizations: ORT's plain operator kernels).

  fixtures   tests/fixtures/models/quant_mlp/: the graph onnxruntime.quantization's
             quantize_dynamic writes for a two-layer MLP: per layer DynamicQuantizeLinear ->
             MatMulInteger (uint8 activations; int8 weights with zero point 0 in layer 1, uint8
             weights with a zero point in layer 2) -> Cast -> Mul(x_scale * w_scale) -> Add(bias),
             Relu between; plus a QLinearMatMul branch (int8 per-column weight scales).
             tests/fixtures/models/quant_qdq_conv/: a QDQ conv net: QuantizeLinear /
             DequantizeLinear on the activations (uint8, per tensor) and the weights (int8, per
             output channel, axis 0) around Conv + Relu; a QLinearConv (grouped, strided,
             per-channel weight scales, int32 bias) and a ConvInteger (uint8 x uint8) on x
             quantized to uint8.
quant_qdq_conv's float output y passes through a last QuantizeLinear after a float Conv: where
the conv's sum lands next to a rounding tie, the summation order moves it by one quantization
step (2 of 4096 elements at the time of writing); its tolerance.txt allows that one step.
Integer outputs are exact.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fixture_io as fio

MODELS_DIR = os.path.join(fio.ROOT, 'tests', 'fixtures', 'models')


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f'{base}_{self.n}'

    def const(self, arr, base='c'):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op_type, ins, nout=1, out=None, **attrs):
        outs = [out] if out else [self.name(op_type.lower()) for _ in range(nout)]
        self.nodes.append(helper.make_node(op_type, ins, outs, name=self.name('n_' + op_type.lower()), **attrs))
        return outs[0] if nout == 1 else outs


def quant_weights(w, dtype, axis=None):
    """Symmetric int8 (zero point 0) or asymmetric uint8 weights, per tensor or per column."""
    if dtype == np.int8:
        s = np.abs(w).max(axis=axis, keepdims=axis is not None) / 127.0
        return np.clip(np.round(w / s), -127, 127).astype(np.int8), s.astype(np.float32).reshape(-1), np.zeros(s.size, np.int8)
    lo, hi = min(w.min(), 0.0), max(w.max(), 0.0)
    s = (hi - lo) / 255.0
    z = np.uint8(np.round(-lo / s))
    return np.clip(np.round(w / s) + z, 0, 255).astype(np.uint8), np.array([s], np.float32), np.array([z], np.uint8)


def mlp():
    r = fio.rng_of('quant_mlp')
    b = Builder()

    def dyn_layer(x, cin, cout, wtype):
        w = (r.standard_normal((cin, cout)) * cin ** -0.5).astype(np.float32)
        wq, ws, wz = quant_weights(w, wtype)
        xq, xs, xz = b.op('DynamicQuantizeLinear', [x], nout=3)
        acc = b.op('MatMulInteger', [xq, b.const(wq, 'w'), xz, b.const(wz.reshape(()), 'wz')])
        f = b.op('Cast', [acc], to=TensorProto.FLOAT)
        scale = b.op('Mul', [xs, b.const(ws.reshape(()), 'ws')])
        y = b.op('Mul', [f, scale])
        return b.op('Add', [y, b.const((r.standard_normal(cout) * 0.1).astype(np.float32), 'bias')])

    h = b.op('Relu', [dyn_layer('x', 64, 96, np.int8)])
    b.op('Identity', [dyn_layer(h, 96, 32, np.uint8)], out='y')
    # QLinearMatMul branch: x quantized with fixed parameters, int8 weights with per-column scales.
    xq = b.op('QuantizeLinear', ['x', b.const(np.float32(0.03), 'xs'), b.const(np.uint8(120), 'xz')])
    w = (r.standard_normal((64, 40)) * 0.125).astype(np.float32)
    wq, ws, wz = quant_weights(w, np.int8, axis=0)
    b.op('QLinearMatMul', [xq, b.const(np.float32(0.03), 'xs'), b.const(np.uint8(120), 'xz'), b.const(wq, 'w'),
                           b.const(ws, 'ws'), b.const(wz, 'wz'), b.const(np.float32(0.05), 'ys'),
                           b.const(np.uint8(128), 'yz')], out='yq')
    g = helper.make_graph(b.nodes, 'quant_mlp', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 12, 64])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 12, 32]),
                           helper.make_tensor_value_info('yq', TensorProto.UINT8, [2, 12, 40])], b.inits)
    return g


def qdq_conv():
    r = fio.rng_of('quant_qdq_conv')
    b = Builder()

    def qdq(x, s, z):
        return b.op('DequantizeLinear', [b.op('QuantizeLinear', [x, b.const(np.float32(s), 's'), b.const(np.uint8(z), 'z')]),
                                         b.const(np.float32(s), 's'), b.const(np.uint8(z), 'z')])

    w = (r.standard_normal((16, 8, 3, 3)) * (2.0 / 72) ** 0.5).astype(np.float32)
    s = np.abs(w).reshape(16, -1).max(axis=1) / 127.0
    wq = np.clip(np.round(w / s[:, None, None, None]), -127, 127).astype(np.int8)
    wd = b.op('DequantizeLinear', [b.const(wq, 'w'), b.const(s.astype(np.float32), 'ws'), b.const(np.zeros(16, np.int8), 'wz')],
              axis=0)
    x = qdq('x', 0.025, 128)
    y = b.op('Relu', [b.op('Conv', [x, wd, b.const((r.standard_normal(16) * 0.05).astype(np.float32), 'b')],
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1])])
    yq = b.op('QuantizeLinear', [y, b.const(np.float32(0.02), 's'), b.const(np.uint8(0), 'z')])
    b.op('DequantizeLinear', [yq, b.const(np.float32(0.02), 's'), b.const(np.uint8(0), 'z')], out='y')
    # QLinearConv on x quantized to uint8 (not on yq: a float sum next to a rounding tie would make
    # an integer output differ by one): grouped (2), strided, per-channel int8 weights.
    xq = b.op('QuantizeLinear', ['x', b.const(np.float32(0.025), 's'), b.const(np.uint8(128), 'z')])
    w2 = (r.standard_normal((12, 4, 3, 3)) * 0.15).astype(np.float32)
    s2 = np.abs(w2).reshape(12, -1).max(axis=1) / 127.0
    w2q = np.clip(np.round(w2 / s2[:, None, None, None]), -127, 127).astype(np.int8)
    b.op('QLinearConv', [xq, b.const(np.float32(0.025), 's'), b.const(np.uint8(128), 'z'), b.const(w2q, 'w'),
                         b.const(s2.astype(np.float32), 'ws'), b.const(np.zeros(12, np.int8), 'wz'),
                         b.const(np.float32(0.04), 'ys'), b.const(np.uint8(100), 'yz'),
                         b.const(r.integers(-300, 300, 12).astype(np.int32), 'bias')],
         out='yc', kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=2)
    # ConvInteger on the same uint8 x with uint8 weights (both zero points non-zero).
    b.op('ConvInteger', [xq, b.const(r.integers(0, 256, (4, 8, 3, 3)).astype(np.uint8), 'w'), b.const(np.uint8(128), 'z'),
                         b.const(np.uint8(131), 'wz')], out='yi', kernel_shape=[3, 3], pads=[0, 1, 2, 1])
    g = helper.make_graph(b.nodes, 'quant_qdq_conv', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 16, 16, 16]),
                           helper.make_tensor_value_info('yc', TensorProto.UINT8, [1, 12, 8, 8]),
                           helper.make_tensor_value_info('yi', TensorProto.INT32, [1, 4, 16, 16])], b.inits)
    return g


def save(name, graph, x, tol):
    d = os.path.join(MODELS_DIR, name)
    os.makedirs(d, exist_ok=True)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='perceive-quant_models.py')
    m.ir_version = 7
    onnx.checker.check_model(m)
    path = os.path.join(d, 'model.onnx')
    onnx.save(m, path)
    with tempfile.TemporaryDirectory() as tmp:
        ip, op = os.path.join(tmp, 'in.npz'), os.path.join(tmp, 'out.npz')
        fio.save_npz(ip, x)
        ok, err = fio.ort_run(path, ip, op)
        if not ok:
            sys.exit(f'quant_models: ONNX Runtime failed on {path}: {err}')
        out = fio.load_npz(op)
    fio.save_npz(os.path.join(d, 'inputs.npz'), x, compress=True)
    fio.save_npz(os.path.join(d, 'expected.npz'), out, compress=True)
    with open(os.path.join(d, 'tolerance.txt'), 'w') as f:
        f.write(tol + '\n')
    print(f'{name}: {len(m.graph.node)} nodes, ops {",".join(sorted({n.op_type for n in m.graph.node}))}, '
          f'{os.path.getsize(path)} bytes')


def bench(out_dir, M=384, K=1024, N=1024):
    """Single-op graphs of transformer size for bench/quant.sh: <name>/{model.onnx, inputs.npz}."""
    r = fio.rng_of('quant_bench')
    a8 = r.integers(0, 256, (M, K)).astype(np.uint8)
    cases = {}
    for wname, wt in (('s8', np.int8), ('u8', np.uint8)):
        b = Builder()
        w = r.integers(-128, 128, (K, N)).astype(wt) if wt == np.int8 else r.integers(0, 256, (K, N)).astype(wt)
        b.op('MatMulInteger', ['a', b.const(w, 'w'), b.const(np.uint8(127), 'az'), b.const(wt(3), 'wz')], out='y')
        cases[f'matmulinteger_u8{wname}'] = (b, 'a', TensorProto.UINT8, a8, TensorProto.INT32)
    b = Builder()
    w = r.integers(-127, 128, (K, N)).astype(np.int8)
    b.op('QLinearMatMul', ['a', b.const(np.float32(0.02), 's'), b.const(np.uint8(128), 'z'), b.const(w, 'w'),
                           b.const(np.float32(0.01), 's'), b.const(np.int8(0), 'z'), b.const(np.float32(40.0), 's'),
                           b.const(np.uint8(128), 'z')], out='y')
    cases['qlinearmatmul_u8s8'] = (b, 'a', TensorProto.UINT8, a8, TensorProto.UINT8)
    b = Builder()   # the fp32 MatMul of the same size: the float baseline on the same machine
    b.op('MatMul', ['a', b.const((r.standard_normal((K, N)) * 0.03).astype(np.float32), 'w')], out='y')
    cases['matmul_f32'] = (b, 'a', TensorProto.FLOAT, r.standard_normal((M, K)).astype(np.float32), TensorProto.FLOAT)
    for name, (b, iname, it, x, ot) in cases.items():
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        g = helper.make_graph(b.nodes, name, [helper.make_tensor_value_info(iname, it, [M, K])],
                              [helper.make_tensor_value_info('y', ot, [M, N])], b.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)], producer_name='perceive-quant_models.py')
        m.ir_version = 7
        onnx.save(m, os.path.join(d, 'model.onnx'))
        fio.save_npz(os.path.join(d, 'inputs.npz'), {iname: x})
        print(f'{name}: {M}x{K}x{N}')


def main():
    if len(sys.argv) == 3 and sys.argv[1] == 'bench':
        bench(sys.argv[2])
        return
    if sys.argv[1:] != ['fixtures']:
        sys.exit('usage: quant_models.py fixtures | bench DIR')
    x = {'x': fio.rng_of('quant_mlp/x').standard_normal((2, 12, 64)).astype(np.float32)}
    # y: float ops on the exact integer sums (the same float operations as ORT's); yq exact.
    save('quant_mlp', mlp(), x, '1e-5 1e-5')
    x = {'x': fio.rng_of('quant_qdq_conv/x').standard_normal((1, 8, 16, 16)).astype(np.float32) * 1.5}
    # y: one output step (0.02); yc, yi exact.
    save('quant_qdq_conv', qdq_conv(), x, '2.01e-2 0')


if __name__ == '__main__':
    main()
