#!/usr/bin/python3
"""opset11_models.py: an opset-11 conv net fixture (issue 12 part 5), and the opset 9/11 check of
the model-graph fixtures.

  fixtures            tests/fixtures/models/opset11_convnet/{model.onnx, inputs.npz, expected.npz}:
                      written with onnx.helper at opset 11 with seeded weights (committed whole:
                      the file is small), expected outputs from ONNX Runtime. The graph uses the
                      opset-11 forms older exporters wrote: Conv, BatchNormalization (kept, not
                      folded), Relu, MaxPool, Clip-11 with min/max inputs, Pad-11 (pads and the
                      constant as inputs; constant and reflect), Resize-11 (nearest asymmetric
                      floor with scales and an empty roi; linear half_pixel with sizes),
                      Concat, a 1x1 Conv head.
  ops                 tests/fixtures/ops/{upsample7_nearest, upsample9_linear, resize10_nearest_down,
                      resize10_linear}: the pre-11 resampling forms (scales as an attribute or a
                      constant input, asymmetric coordinates), and resize_cubic_*: Resize-13
                      cubic with constant scales (half_pixel, align_corners, asymmetric,
                      cubic_coeff_a -0.5 with exclude_outside, downsampling), and roialign_*:
                      RoiAlign-16 max (half_pixel, adaptive sampling) and RoiAlign-10 avg, and
                      gridsample_bicubic_*: zeros/border/reflection, align_corners 0/1, ORT
                      outputs
  convert DIR         exports of tools/gen/models.py's unseen, vit4, cam_resnet34_fpn and
                      bev_dense at opsets 9 and 11 (torch.onnx.export, filled by `perceive onnx
                      fill --seed 1`) with ORT outputs, into DIR/<name>_op<N>/ as conformance
                      cases (pv_conformance fixtures DIR); a model the exporter refuses at
                      that opset is reported and skipped.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fixture_io as fio

MODELS_DIR = os.path.join(fio.ROOT, 'tests', 'fixtures', 'models')


def convnet():
    r = fio.rng_of('opset11_convnet')
    nodes, inits = [], []
    count = [0]

    def name(base):
        count[0] += 1
        return f'{base}_{count[0]}'

    def const(arr, base='c'):
        n = name(base)
        inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(op_type, ins, **attrs):
        out = name(op_type.lower())
        nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return out

    def conv_bn(x, cin, cout, k, stride=1, pad=1):
        w = const((r.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5).astype(np.float32), 'w')
        b = const((r.standard_normal(cout) * 0.05).astype(np.float32), 'b')
        y = op('Conv', [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        bn = [const(r.uniform(lo, hi, cout).astype(np.float32), 'bn')
              for lo, hi in ((0.5, 1.5), (-0.2, 0.2), (-0.2, 0.2), (0.5, 1.5))]
        return op('BatchNormalization', [y] + bn, epsilon=1e-5)

    stem = op('Relu', [conv_bn('x', 3, 16, 3)])                                   # 16 x 32 x 32
    pooled = op('MaxPool', [stem], kernel_shape=[2, 2], strides=[2, 2])          # 16 x 16 x 16
    c2 = op('Clip', [conv_bn(pooled, 16, 32, 3), const(np.float32(0), 'lo'), const(np.float32(6), 'hi')])
    padded = op('Pad', [c2, const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), 'pads'), const(np.float32(0.5), 'v')],
                mode='constant')                                                 # 32 x 18 x 18
    c3 = op('Relu', [conv_bn(padded, 32, 32, 3, stride=2, pad=0)])               # 32 x 8 x 8
    refl = op('Pad', [c3, const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), 'pads')], mode='reflect')
    c4 = op('Relu', [conv_bn(refl, 32, 32, 3, pad=0)])                           # 32 x 8 x 8
    empty = const(np.zeros(0, np.float32), 'roi')
    up_nearest = op('Resize', [c4, empty, const(np.array([1, 1, 4, 4], np.float32), 'scales')], mode='nearest',
                    coordinate_transformation_mode='asymmetric', nearest_mode='floor')   # 32 x 32 x 32
    up_linear = op('Resize', [c3, empty, const(np.zeros(0, np.float32), 'scales'),
                              const(np.array([1, 32, 32, 32], np.int64), 'sizes')], mode='linear',
                   coordinate_transformation_mode='half_pixel')                   # 32 x 32 x 32
    cat = op('Concat', [stem, up_nearest, up_linear], axis=1)                     # 80 x 32 x 32
    w = const((r.standard_normal((8, 80, 1, 1)) * 80 ** -0.5).astype(np.float32), 'w')
    nodes.append(helper.make_node('Conv', [cat, w], ['y'], name='head', kernel_shape=[1, 1]))
    g = helper.make_graph(nodes, 'opset11_convnet', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 8, 32, 32])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 11)], producer_name='perceive-opset11_models.py')
    m.ir_version = 6
    onnx.checker.check_model(m)
    return m


def run_ort(model_path, inputs, tmp):
    ip, op = os.path.join(tmp, 'in.npz'), os.path.join(tmp, 'out.npz')
    fio.save_npz(ip, inputs)
    ok, err = fio.ort_run(model_path, ip, op)
    if not ok:
        sys.exit(f'opset11_models: ONNX Runtime failed on {model_path}: {err}')
    return fio.load_npz(op)


def fixtures():
    d = os.path.join(MODELS_DIR, 'opset11_convnet')
    os.makedirs(d, exist_ok=True)
    m = convnet()
    x = {'x': fio.rng_of('opset11_convnet/x').standard_normal((1, 3, 32, 32)).astype(np.float32)}
    onnx.save(m, os.path.join(d, 'model.onnx'))
    with tempfile.TemporaryDirectory() as tmp:
        out = run_ort(os.path.join(d, 'model.onnx'), x, tmp)
    fio.save_npz(os.path.join(d, 'inputs.npz'), x, compress=True)
    fio.save_npz(os.path.join(d, 'expected.npz'), out, compress=True)
    print(f'opset11_convnet: {len(m.graph.node)} nodes, ops {",".join(sorted({n.op_type for n in m.graph.node}))}')


def old_resample_cases():
    """Upsample-7/9 and Resize-10 on a float input (ORT outputs)."""
    F = TensorProto.FLOAT
    cases = {
        'upsample7_nearest': (7, 'Upsample', None, [1, 1, 2, 3], 'nearest', [1, 2, 3, 4]),
        'upsample9_linear': (9, 'Upsample', 'scales', [1, 1, 2.5, 1.5], 'linear', [1, 2, 5, 4]),
        'resize10_nearest_down': (10, 'Resize', 'scales', [1, 1, 0.6, 0.5], 'nearest', [1, 2, 7, 9]),
        'resize10_linear': (10, 'Resize', 'scales', [1, 1, 1.5, 0.75], 'linear', [1, 2, 5, 8]),
    }
    for case, (opset, op_type, inp, scales, mode, shape) in cases.items():
        sc = np.array(scales, np.float32)
        out_shape = [int(np.floor(np.float32(d) * s)) for d, s in zip(shape, sc)]
        inits, ins, attrs = [], ['x'], {'mode': mode}
        if inp:
            inits.append(numpy_helper.from_array(sc, inp))
            ins.append(inp)
        else:
            attrs['scales'] = [float(v) for v in sc]
        g = helper.make_graph([helper.make_node(op_type, ins, ['y'], **attrs)], case,
                              [helper.make_tensor_value_info('x', F, shape)],
                              [helper.make_tensor_value_info('y', F, out_shape)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
        m.ir_version = 6
        d = os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops', case)
        os.makedirs(d, exist_ok=True)
        x = {'x': fio.rng_of(case).standard_normal(shape).astype(np.float32)}
        onnx.save(m, os.path.join(d, 'model.onnx'))
        with tempfile.TemporaryDirectory() as tmp:
            out = run_ort(os.path.join(d, 'model.onnx'), x, tmp)
        fio.save_npz(os.path.join(d, 'inputs.npz'), x)
        fio.save_npz(os.path.join(d, 'expected.npz'), out)
        print(f'{case}: {shape} -> {list(out["y"].shape)}')


def cubic_cases():
    """Resize-13 mode cubic with constant scales (the backend suite feeds them at run time)."""
    F = TensorProto.FLOAT
    cases = {
        'resize_cubic_up_half_pixel': ([1, 1, 2, 1.5], {}, [1, 2, 5, 6]),
        'resize_cubic_up_align_corners': ([1, 1, 1.8, 2], {'coordinate_transformation_mode': 'align_corners'}, [1, 2, 5, 4]),
        'resize_cubic_up_asymmetric': ([1, 1, 2, 2], {'coordinate_transformation_mode': 'asymmetric'}, [1, 1, 4, 5]),
        'resize_cubic_down_a05_exclude': ([1, 1, 0.6, 0.75], {'cubic_coeff_a': -0.5, 'exclude_outside': 1}, [1, 2, 8, 8]),
    }
    for case, (scales, attrs, shape) in cases.items():
        sc = np.array(scales, np.float32)
        out_shape = [int(np.floor(np.float32(d) * s)) for d, s in zip(shape, sc)]
        node = helper.make_node('Resize', ['x', 'roi', 'scales'], ['y'], mode='cubic', **attrs)
        g = helper.make_graph([node], case, [helper.make_tensor_value_info('x', F, shape)],
                              [helper.make_tensor_value_info('y', F, out_shape)],
                              [numpy_helper.from_array(np.zeros(0, np.float32), 'roi'), numpy_helper.from_array(sc, 'scales')])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
        m.ir_version = 7
        d = os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops', case)
        os.makedirs(d, exist_ok=True)
        x = {'x': fio.rng_of(case).standard_normal(shape).astype(np.float32)}
        onnx.save(m, os.path.join(d, 'model.onnx'))
        with tempfile.TemporaryDirectory() as tmp:
            out = run_ort(os.path.join(d, 'model.onnx'), x, tmp)
        fio.save_npz(os.path.join(d, 'inputs.npz'), x)
        fio.save_npz(os.path.join(d, 'expected.npz'), out)
        print(f'{case}: {shape} -> {list(out["y"].shape)}')


def roialign_cases():
    F = TensorProto.FLOAT
    cases = {
        'roialign16_max_adaptive': (16, {'mode': 'max', 'output_height': 3, 'output_width': 4, 'spatial_scale': 0.5}),
        'roialign10_avg': (10, {'output_height': 2, 'output_width': 3, 'sampling_ratio': 2, 'spatial_scale': 0.25}),
    }
    for case, (opset, attrs) in cases.items():
        r = fio.rng_of(case)
        x = r.standard_normal((2, 3, 9, 11)).astype(np.float32)
        # boxes in input pixels / spatial_scale, some past the border, one degenerate
        s = 1 / attrs['spatial_scale']
        rois = np.array([[1, 1, 7, 6], [0, 2, 10.5, 8.5], [-2, -1, 4, 3], [5, 5, 5, 5], [3.3, 0.7, 12, 10]],
                        np.float32) * s
        bi = np.array([0, 1, 1, 0, 1], np.int64)
        oh, ow = attrs['output_height'], attrs['output_width']
        node = helper.make_node('RoiAlign', ['x', 'rois', 'bi'], ['y'], **attrs)
        g = helper.make_graph([node], case, [helper.make_tensor_value_info('x', F, list(x.shape)),
                                             helper.make_tensor_value_info('rois', F, [5, 4])],
                              [helper.make_tensor_value_info('y', F, [5, 3, oh, ow])], [numpy_helper.from_array(bi, 'bi')])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
        m.ir_version = 7
        d = os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops', case)
        os.makedirs(d, exist_ok=True)
        feeds = {'x': x, 'rois': rois}
        onnx.save(m, os.path.join(d, 'model.onnx'))
        with tempfile.TemporaryDirectory() as tmp:
            out = run_ort(os.path.join(d, 'model.onnx'), feeds, tmp)
        fio.save_npz(os.path.join(d, 'inputs.npz'), feeds)
        fio.save_npz(os.path.join(d, 'expected.npz'), out)
        print(f'{case}: -> {list(out["y"].shape)}')


def gridsample_cases():
    F = TensorProto.FLOAT
    cases = {
        'gridsample_bicubic_border': {'padding_mode': 'border'},
        'gridsample_bicubic_reflection_align': {'padding_mode': 'reflection', 'align_corners': 1},
        'gridsample_bicubic_zeros_align': {'align_corners': 1},
    }
    for case, attrs in cases.items():
        r = fio.rng_of(case)
        x = r.standard_normal((2, 3, 5, 7)).astype(np.float32)
        grid = r.uniform(-1.4, 1.4, (2, 4, 6, 2)).astype(np.float32)   # some outside [-1, 1]
        node = helper.make_node('GridSample', ['x', 'grid'], ['y'], mode='bicubic', **attrs)
        g = helper.make_graph([node], case, [helper.make_tensor_value_info('x', F, list(x.shape)),
                                             helper.make_tensor_value_info('grid', F, list(grid.shape))],
                              [helper.make_tensor_value_info('y', F, [2, 3, 4, 6])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 16)])
        m.ir_version = 8
        d = os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops', case)
        os.makedirs(d, exist_ok=True)
        feeds = {'x': x, 'grid': grid}
        onnx.save(m, os.path.join(d, 'model.onnx'))
        with tempfile.TemporaryDirectory() as tmp:
            out = run_ort(os.path.join(d, 'model.onnx'), feeds, tmp)
        fio.save_npz(os.path.join(d, 'inputs.npz'), feeds)
        fio.save_npz(os.path.join(d, 'expected.npz'), out)
        print(f'{case}: -> {list(out["y"].shape)}')


def convert(out_root, perceive):
    import models
    nets = models.build_networks()
    for name in ('unseen', 'vit4', 'cam_resnet34_fpn', 'bev_dense'):
        for opset in (9, 11):
            case = f'{name}_op{opset}'
            models.OPSET = opset
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    models.export(name, nets, tmp)
                except Exception as e:   # the exporter's own refusal: reported, not a fixture
                    print(f'{case}: torch.onnx.export refuses: {str(e).splitlines()[0][:200]}')
                    continue
                d = os.path.join(out_root, case)
                os.makedirs(d, exist_ok=True)
                filled = os.path.join(d, 'model.onnx')
                p = subprocess.run([perceive, 'onnx', 'fill', os.path.join(tmp, name, 'skeleton.onnx'), filled,
                                    '--seed', '1'], capture_output=True, text=True)
                if p.returncode != 0:
                    print(f'{case}: perceive onnx fill failed: {p.stderr.strip()[:200]}')
                    continue
                inputs = fio.load_npz(os.path.join(tmp, name, 'inputs.npz'))
                fio.save_npz(os.path.join(d, 'inputs.npz'), inputs)
                out = run_ort(filled, inputs, tmp)
                fio.save_npz(os.path.join(d, 'expected.npz'), out)
                print(f'{case}: exported, {len(out)} outputs')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('fixtures')
    sub.add_parser('ops')
    c = sub.add_parser('convert')
    c.add_argument('dir')
    c.add_argument('--perceive', default=os.path.join(fio.ROOT, 'build', 'perceive'))
    a = ap.parse_args()
    if a.cmd == 'fixtures':
        fixtures()
    elif a.cmd == 'ops':
        old_resample_cases()
        cubic_cases()
        roialign_cases()
        gridsample_cases()
    else:
        convert(a.dir, a.perceive)


if __name__ == '__main__':
    main()
