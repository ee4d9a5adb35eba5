#!/usr/bin/python3
"""f16_models.py: float16 model fixtures (issue 12) and a float16 benchmark file.

Each graph is written with onnx.helper twice from the same seeded weights: in float16 (the
fixture's model.onnx) and the same graph converted to float32 (weights and inputs are the
float16 values widened, Cast targets FLOAT16 -> FLOAT). ONNX Runtime runs both; the fixture
holds (tests/fixtures/models/<name>/):
  model.onnx          the float16 graph (weights committed: both are small)
  inputs.npz          float16 inputs
  expected.npz        ORT's outputs of the float16 graph (what `pv_conformance fixtures` checks)
  expected_fp32.npz   ORT's outputs of the float32 graph (the accuracy reference)
  ort_error.txt       ORT float16 vs float32: per output "NAME MAX_ABS RMS" (test_f16_graphs
                      requires perceive's error to be no larger)
  tolerance.txt       perceive vs ORT on the float16 graph (TOLERANCE)

Models:
  f16_block  a pre-LN transformer block: LayerNorm, QKV MatMuls, scaled scores, Softmax done in
             float32 between explicit Casts (as mixed-precision exports write it), attention
             MatMul, output projection + residual, LayerNorm, erf-GELU MLP + residual
  f16_convnet  Conv+Relu, strided Conv+BatchNorm+Relu, depthwise Conv+Clip(f16 bounds), 1x1 Conv
             + residual Add, GlobalAveragePool, Flatten, Gemm; outputs the logits and features

Commands:
  f16_models.py fixtures            writes both fixtures and tests/fixtures/ops/f16_cast_round
                                    (needs node + onnxruntime-node)
  f16_models.py bench DIR [--dim D --seq S --layers L]
                                    DIR/{f16.onnx, f32.onnx, inputs16.npz, inputs32.npz}: a
                                    deeper transformer stack (no Casts) for timing
  f16_models.py to_f32 IN.onnx OUT.onnx
                                    the same graph converted to float32 (error reference)
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fixture_io as fio

OPSET = 17
MODELS_DIR = os.path.join(fio.ROOT, 'tests', 'fixtures', 'models')
# perceive vs ORT on the float16 graphs ("atol rtol"): the two differ by about the sum of their
# float16 errors against float32 (ORT rounds where its float16 kernels hold tensors: Reshape,
# Transpose, the graph's outputs), measured max 3.9e-3 on outputs up to 7.6
TOLERANCE = '5e-3 2e-3'


class Builder:
    """Collects nodes and initializers of one graph in float16 or float32."""

    def __init__(self, f16, rng):
        self.f16 = f16
        self.rng = rng
        self.nodes, self.inits, self.n = [], [], 0
        self.elem = TensorProto.FLOAT16 if f16 else TensorProto.FLOAT

    def name(self, base):
        self.n += 1
        return f'{base}_{self.n}'

    def const(self, arr, base='w'):
        """A float initializer: the float16 rounding of arr (widened again for float32)."""
        a = np.asarray(arr, dtype=np.float32).astype(np.float16)
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(a if self.f16 else a.astype(np.float32), nm))
        return nm

    def ints(self, vals, base='shape'):
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(vals, dtype=np.int64), nm))
        return nm

    def rand(self, shape, scale, base='w'):
        return self.const(self.rng.standard_normal(shape).astype(np.float32) * scale, base)

    def op(self, op_type, inputs, nout=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(nout)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type), **attrs))
        return outs[0] if nout == 1 else outs

    def cast_half(self, x):
        """An explicit Cast to float16 (float32 in the converted graph)."""
        return self.op('Cast', [x], to=self.elem)

    def model(self, inputs, outputs, name):
        vi = lambda n, s: helper.make_tensor_value_info(n, self.elem, s)
        g = helper.make_graph(self.nodes, name, [vi(n, s) for n, s in inputs],
                              [vi(n, s) for n, s in outputs], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET)],
                              producer_name='perceive tools/gen/f16_models.py')
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def block(b, x, d, heads, mlp, seq, casts):
    """One pre-LN transformer block on x [1, seq, d]; returns the output name."""
    dh = d // heads
    ln1 = b.op('LayerNormalization', [x, b.const(1 + 0.1 * b.rng.standard_normal(d)), b.rand([d], 0.1)],
               axis=-1, epsilon=1e-5)
    def proj(inp, n_in, n_out):
        return b.op('Add', [b.op('MatMul', [inp, b.rand([n_in, n_out], n_in ** -0.5)]), b.rand([n_out], 0.02)])
    heads_shape = b.ints([1, seq, heads, dh])
    q = b.op('Transpose', [b.op('Reshape', [proj(ln1, d, d), heads_shape])], perm=[0, 2, 1, 3])
    k = b.op('Transpose', [b.op('Reshape', [proj(ln1, d, d), heads_shape])], perm=[0, 2, 3, 1])
    v = b.op('Transpose', [b.op('Reshape', [proj(ln1, d, d), heads_shape])], perm=[0, 2, 1, 3])
    s = b.op('Mul', [b.op('MatMul', [q, k]), b.const(np.float32(dh ** -0.5))])
    if casts:   # softmax in float32 between explicit casts, as mixed-precision exports write it
        p = b.cast_half(b.op('Softmax', [b.op('Cast', [s], to=TensorProto.FLOAT)], axis=-1))
    else:
        p = b.op('Softmax', [s], axis=-1)
    a = b.op('Reshape', [b.op('Transpose', [b.op('MatMul', [p, v])], perm=[0, 2, 1, 3]), b.ints([1, seq, d])])
    h = b.op('Add', [x, proj(a, d, d)])
    ln2 = b.op('LayerNormalization', [h, b.const(1 + 0.1 * b.rng.standard_normal(d)), b.rand([d], 0.1)],
               axis=-1, epsilon=1e-5)
    u = proj(ln2, d, mlp)
    erf = b.op('Erf', [b.op('Div', [u, b.const(np.float32(np.sqrt(2.0)))])])
    gelu = b.op('Mul', [b.op('Mul', [u, b.op('Add', [erf, b.const(np.float32(1.0))])]), b.const(np.float32(0.5))])
    return b.op('Add', [h, proj(gelu, mlp, d)])


def transformer(f16, seed, d=64, heads=4, mlp=256, seq=32, layers=1, casts=True):
    b = Builder(f16, np.random.default_rng(seed))
    x = 'x'
    for _ in range(layers):
        x = block(b, x, d, heads, mlp, seq, casts)
    b.nodes.append(helper.make_node('Identity', [x], ['y'], name='out'))
    return b.model([('x', [1, seq, d])], [('y', [1, seq, d])], 'f16_block')


def convnet(f16, seed):
    b = Builder(f16, np.random.default_rng(seed))
    rng = b.rng
    def conv(x, cin, cout, k, stride=1, group=1, bias=True):
        w = b.rand([cout, cin // group, k, k], (2.0 / (cin // group * k * k)) ** 0.5)
        ins = [x, w] + ([b.rand([cout], 0.05)] if bias else [])
        return b.op('Conv', ins, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
    c1 = b.op('Relu', [conv('x', 3, 16, 3)])
    c2 = conv(c1, 16, 32, 3, stride=2, bias=False)
    bn = b.op('BatchNormalization', [c2, b.const(1 + 0.1 * rng.standard_normal(32)), b.rand([32], 0.1),
                                     b.rand([32], 0.1), b.const(0.5 + rng.random(32))], epsilon=1e-5)
    c3 = b.op('Relu', [bn])
    dw = b.op('Clip', [conv(c3, 32, 32, 3, group=32), b.const(np.float32(0)), b.const(np.float32(6))])
    feat = b.op('Add', [c3, conv(dw, 32, 32, 1)])
    b.nodes.append(helper.make_node('Identity', [feat], ['features'], name='features_out'))
    pooled = b.op('Flatten', [b.op('GlobalAveragePool', ['features'])], axis=1)
    b.op('Gemm', [pooled, b.rand([10, 32], 32 ** -0.5), b.rand([10], 0.05)], transB=1)
    b.nodes[-1].output[0] = 'logits'
    return b.model([('x', [1, 3, 32, 32])], [('logits', [1, 10]), ('features', [1, 32, 16, 16])], 'f16_convnet')


FIXTURES = {
    'f16_block': (lambda f16: transformer(f16, seed=12), {'x': (1, 32, 64)}),
    'f16_convnet': (lambda f16: convnet(f16, seed=13), {'x': (1, 3, 32, 32)}),
}


def errors(got, ref):
    d = got.astype(np.float64) - ref.astype(np.float64)
    return float(np.max(np.abs(d))), float(np.sqrt(np.mean(d * d)))


def run_ort(model, inputs, tmp, tag):
    mp, ip, op = (os.path.join(tmp, f'{tag}.{e}') for e in ('onnx', 'in.npz', 'out.npz'))
    onnx.save(model, mp)
    fio.save_npz(ip, inputs)
    ok, err = fio.ort_run(mp, ip, op)
    if not ok:
        sys.exit(f'f16_models: ONNX Runtime failed on {tag}: {err}')
    return fio.load_npz(op)


def cast_round_case():
    """tests/fixtures/ops/f16_cast_round: float32 x near 1 -> Cast(FLOAT16) -> ... - 1 -> * 1000:
    zero where the float16 value was rounded (to 1), ~0.1 * k where it was not, so a rewrite
    that rounds where ORT does not (or not where it does) fails by far. ORT (measured) rounds
    where a float16 kernel holds the tensor (y: Reshape, z: graph output of a CastLike), not
    where a compute op reads the cast directly (w: Sub)."""
    F, H = TensorProto.FLOAT, TensorProto.FLOAT16
    one = numpy_helper.from_array(np.ones((), np.float16), 'one')
    one32 = numpy_helper.from_array(np.ones((), np.float32), 'one32')
    like = numpy_helper.from_array(np.zeros((1,), np.float16), 'like')
    k = numpy_helper.from_array(np.float32(1000.0), 'k')
    shape = numpy_helper.from_array(np.array([8, 8], np.int64), 'shape')
    nodes = [helper.make_node('Cast', ['x'], ['h'], to=H),
             helper.make_node('Sub', ['h', 'one'], ['d']),
             helper.make_node('Cast', ['d'], ['df'], to=F),
             helper.make_node('Mul', ['df', 'k'], ['w']),
             helper.make_node('Reshape', ['h', 'shape'], ['hr']),
             helper.make_node('Cast', ['hr'], ['hf'], to=F),
             helper.make_node('Sub', ['hf', 'one32'], ['e']),
             helper.make_node('Mul', ['e', 'k'], ['y']),
             helper.make_node('CastLike', ['x', 'like'], ['z'])]
    g = helper.make_graph(nodes, 'f16_cast_round', [helper.make_tensor_value_info('x', F, [64])],
                          [helper.make_tensor_value_info('w', F, [64]), helper.make_tensor_value_info('y', F, [8, 8]),
                           helper.make_tensor_value_info('z', H, [64])],
                          [one, one32, like, k, shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    d = os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops', 'f16_cast_round')
    os.makedirs(d, exist_ok=True)
    x = {'x': (1 + np.arange(64, dtype=np.float32) * 1e-4).astype(np.float32)}
    with tempfile.TemporaryDirectory() as tmp:
        out = run_ort(m, x, tmp, 'cast')
    onnx.save(m, os.path.join(d, 'model.onnx'))
    fio.save_npz(os.path.join(d, 'inputs.npz'), x)
    fio.save_npz(os.path.join(d, 'expected.npz'), out)


def fixtures():
    cast_round_case()
    for name, (make, shapes) in FIXTURES.items():
        d = os.path.join(MODELS_DIR, name)
        os.makedirs(d, exist_ok=True)
        rng = fio.rng_of(name)
        x16 = {k: rng.standard_normal(s).astype(np.float16) for k, s in shapes.items()}
        x32 = {k: v.astype(np.float32) for k, v in x16.items()}
        m16, m32 = make(True), make(False)
        with tempfile.TemporaryDirectory() as tmp:
            o16 = run_ort(m16, x16, tmp, 'f16')
            o32 = run_ort(m32, x32, tmp, 'f32')
        onnx.save(m16, os.path.join(d, 'model.onnx'))
        fio.save_npz(os.path.join(d, 'inputs.npz'), x16)
        fio.save_npz(os.path.join(d, 'expected.npz'), o16)
        fio.save_npz(os.path.join(d, 'expected_fp32.npz'), o32)
        with open(os.path.join(d, 'tolerance.txt'), 'w') as f:
            f.write(TOLERANCE + '\n')
        with open(os.path.join(d, 'ort_error.txt'), 'w') as f:
            for k in o16:
                mx, rms = errors(o16[k], o32[k])
                f.write(f'{k} {mx:.9g} {rms:.9g}\n')
                print(f'{name}: {k}: ORT float16 vs float32: max |err| {mx:.3g}, rms {rms:.3g}')


def bench(out, d, seq, layers):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    x16 = rng.standard_normal((1, seq, d)).astype(np.float16)
    heads = max(1, d // 64)
    for f16, tag, x in ((True, 'f16', x16), (False, 'f32', x16.astype(np.float32))):
        m = transformer(f16, seed=7, d=d, heads=heads, mlp=4 * d, seq=seq, layers=layers, casts=False)
        onnx.save(m, os.path.join(out, f'{tag}.onnx'))
        fio.save_npz(os.path.join(out, f'inputs{tag[1:]}.npz'), {'x': x})


def to_f32(src, dst):
    """The same graph converted to float32: float16 initializers, Constant tensors, value types
    and Cast / dtype targets become float32 (the accuracy reference for a float16 file)."""
    m = onnx.load(src)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT16:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT16:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if a.name in ('to', 'dtype') and a.type == onnx.AttributeProto.INT and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
    onnx.save(m, dst)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('fixtures')
    cp = sub.add_parser('to_f32')
    cp.add_argument('src')
    cp.add_argument('dst')
    bp = sub.add_parser('bench')
    bp.add_argument('dir')
    bp.add_argument('--dim', type=int, default=384)
    bp.add_argument('--seq', type=int, default=197)
    bp.add_argument('--layers', type=int, default=4)
    a = ap.parse_args()
    if a.cmd == 'fixtures':
        fixtures()
    elif a.cmd == 'to_f32':
        to_f32(a.src, a.dst)
    else:
        bench(a.dir, a.dim, a.seq, a.layers)


if __name__ == '__main__':
    main()
