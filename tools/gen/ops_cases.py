#!/usr/bin/python3
"""ops_cases.py: builds perceive's operator conformance fixtures.

Each case is a tiny ONNX model (one node, or a short chain) made with onnx.helper, plus
seeded random inputs; ONNX Runtime (tools/gen/ort_run.mjs) computes the expected outputs.
Every case becomes tests/fixtures/ops/<case>/{model.onnx, inputs.npz, expected.npz}, and
tests/fixtures/ops/cases.tsv lists them (case, ops, opset, inputs, outputs).

Conventions:
- Graph inputs and outputs take the operator schema's names (X, W, B, data, indices...;
  variadic ones get _0, _1...). Shape-like inputs (Reshape shape, Slice starts, Pad pads,
  Resize scales, TopK K...) and weights are initializers, as perceive plans static shapes.
- Opset 17 unless a case says otherwise (a few at 13 where signatures changed).
- Inputs come from numpy's default_rng(crc32(case name)) and avoid points where the spec
  leaves results to the implementation (ties in TopK/ArgMax, .5 in Round unless tested...).

Usage: ops_cases.py [--out DIR] [--only REGEX] [--list]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, mapping

import fixture_io as fio

from case_lib import *  # noqa: F401,F403  (dtype shorthands, In, K, case, gcase, CASES...)
from case_lib import _io_names, _finish, _vi  # noqa: F401


# ---- elementwise ----
def unary_cases():
    ranges = [('Neg', -3, 3), ('Abs', -3, 3), ('Sqrt', 0.01, 4), ('Exp', -4, 4),
              ('Log', 0.01, 10), ('Sin', -6, 6), ('Cos', -6, 6), ('Erf', -3, 3),
              ('Tanh', -4, 4), ('Sigmoid', -8, 8), ('Relu', -2, 2), ('Floor', -5, 5),
              ('Ceil', -5, 5), ('Round', -5, 5)]
    for op, lo, hi in ranges:
        def ins(r, lo=lo, hi=hi, dt=F32):
            x = U(r, [3, 4, 5], lo, hi, dt)
            assert not np.any(np.abs(x - np.floor(x) - 0.5) < 1e-3)  # Round: no ties
            return [In(x)]
        case(f'{snake(op)}_f32', op, ins)
    for op, lo, hi in ranges:
        if op in ('Sin', 'Cos', 'Floor', 'Ceil', 'Round'):
            continue
        case(f'{snake(op)}_f16', op, lambda r, lo=lo, hi=hi: [In(U(r, [2, 3, 4], lo, hi, F16))])
    case('reciprocal_f32', 'Reciprocal',
         lambda r: [In(U(r, [3, 4, 5], 0.2, 3) * r.choice([-1, 1], [3, 4, 5]).astype(F32))])
    case('round_f32_ties', 'Round', [In(np.array(
        [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5, 0.49999997, 1.5000001, -0.0, 2.4999998,
         -1.4999999, 1e7 + 0.5, 4.5, -4.5], F32))])
    for dt in (I64, I32, I8):
        case(f'neg_{DT_NAMES[dt]}', 'Neg', lambda r, dt=dt: [In(Iv(r, [3, 4], -100, 100, dt))])
        case(f'abs_{DT_NAMES[dt]}', 'Abs', lambda r, dt=dt: [In(Iv(r, [3, 4], -100, 100, dt))])
    for dt in (I32, I8):   # ORT 1.30 has no int64 Relu kernel
        case(f'relu_{DT_NAMES[dt]}', 'Relu', lambda r, dt=dt: [In(Iv(r, [3, 4], -100, 100, dt))])
    case('abs_u8', 'Abs', lambda r: [In(Iv(r, [3, 4], 0, 255, U8))])
    case('leaky_relu_default', 'LeakyRelu', lambda r: [In(U(r, [3, 4, 5], -3, 3))])
    case('leaky_relu_alpha', 'LeakyRelu', lambda r: [In(U(r, [3, 4, 5], -3, 3))], dict(alpha=0.2))
    case('leaky_relu_f16', 'LeakyRelu', lambda r: [In(U(r, [3, 4], -3, 3, F16))], dict(alpha=0.1))
    case('not_bool', 'Not', lambda r: [In(Bv(r, [3, 4]))])
    for opset in (13, 17):
        x = lambda r: U(r, [3, 4, 5], -2, 2)
        case(f'clip_minmax_op{opset}', 'Clip',
             lambda r: [In(x(r)), K(np.array(-0.5, F32)), K(np.array(0.7, F32))], opset=opset)
        case(f'clip_min_op{opset}', 'Clip', lambda r: [In(x(r)), K(np.array(-0.5, F32))],
             opset=opset)
        case(f'clip_max_op{opset}', 'Clip', lambda r: [In(x(r)), None, K(np.array(0.7, F32))],
             opset=opset)
        case(f'clip_none_op{opset}', 'Clip', lambda r: [In(x(r))], opset=opset)
    case('clip_relu6', 'Clip',
         lambda r: [In(U(r, [2, 3, 8], -3, 9)), K(np.array(0, F32)), K(np.array(6, F32))])
    case('clip_minmax_runtime', 'Clip',
         lambda r: [In(U(r, [3, 4], -2, 2)), In(np.array(-1.0, F32)), In(np.array(0.5, F32))])
    case('clip_i32', 'Clip',
         lambda r: [In(Iv(r, [3, 4], -50, 50, I32)), K(np.array(-10, I32)), K(np.array(20, I32))])
    case('clip_i64', 'Clip',
         lambda r: [In(Iv(r, [3, 4], -50, 50, I64)), K(np.array(-10, I64)), K(np.array(20, I64))])
    case('clip_f16', 'Clip',
         lambda r: [In(U(r, [3, 4], -2, 2, F16)), K(np.array(-1, F16)), K(np.array(1, F16))])


def activation_cases():
    # Sign: zeros (and -0.0, from negative * False) map to 0; integer Sign is exact.
    case('sign_f32', 'Sign', lambda r: [In(N(r, [3, 4]) * Bv(r, [3, 4], 0.7))])
    case('sign_f16', 'Sign', lambda r: [In(N(r, [3, 4], dt=F16) * Bv(r, [3, 4], 0.7))])
    for dt in (I64, I32, I8, U8):
        case(f'sign_{DT_NAMES[dt]}', 'Sign',
             lambda r, dt=dt: [In(Iv(r, [3, 4], 0 if dt == U8 else -9, 10, dt))])
    acts = [  # op, case prefix, attributes, input range, with an f16 case
        ('Softplus', 'softplus', {}, (-20, 20), True),
        ('Softsign', 'softsign', {}, (-5, 5), True),
        ('Elu', 'elu', {}, (-3, 3), False),
        ('Elu', 'elu_alpha', dict(alpha=0.7), (-3, 3), True),
        ('Selu', 'selu', {}, (-3, 3), True),
        ('Selu', 'selu_alpha_gamma', dict(alpha=2.0, gamma=0.5), (-3, 3), False),
        ('Celu', 'celu', {}, (-3, 3), False),          # Celu is float32-only in the schema
        ('Celu', 'celu_alpha', dict(alpha=1.7), (-3, 3), False),
        ('HardSigmoid', 'hard_sigmoid', {}, (-4, 4), False),
        ('HardSigmoid', 'hard_sigmoid_alpha_beta', dict(alpha=0.3, beta=0.4), (-4, 4), True),
        ('HardSwish', 'hard_swish', {}, (-5, 5), True),
        ('ThresholdedRelu', 'thresholded_relu', {}, (-3, 3), False),
        ('ThresholdedRelu', 'thresholded_relu_alpha', dict(alpha=0.5), (-3, 3), True),
        ('Shrink', 'shrink', {}, (-2, 2), False),
        ('Shrink', 'shrink_lambd_bias', dict(lambd=0.7, bias=0.2), (-2, 2), True)]
    for op, nm, attrs, (lo, hi), f16 in acts:
        case(f'{nm}_f32', op, lambda r, lo=lo, hi=hi: [In(U(r, [3, 4, 5], lo, hi))], attrs)
        if f16:
            case(f'{nm}_f16', op, lambda r, lo=lo, hi=hi: [In(U(r, [2, 3, 4], lo, hi, F16))],
                 attrs)
    # Softplus far from 0: ln(1 + e^x) must neither overflow (x = 100) nor lose x.
    case('softplus_f32_wide', 'Softplus', lambda r: [In(U(r, [4, 5], -100, 100))])
    # Values on the thresholds: ThresholdedRelu keeps x > alpha; Shrink zeroes |x| <= lambd.
    case('thresholded_relu_at_alpha', 'ThresholdedRelu', [In(np.array(
        [1.0, 0.99999994, 1.0000001, 2.0, -1.0, 0.0, 0.5, 3.0], F32))])
    case('shrink_at_lambd', 'Shrink', [In(np.array(
        [0.5, -0.5, 0.50000006, -0.50000006, 0.49999997, 0.0, 1.0, -1.0], F32))])
    for dt in (I64, I32, I8, U8):
        case(f'shrink_{DT_NAMES[dt]}', 'Shrink',
             lambda r, dt=dt: [In(Iv(r, [3, 5], 0 if dt == U8 else -9, 10, dt))],
             dict(lambd=3.0, bias=2.0))
    case('shrink_i32_frac_lambd', 'Shrink', lambda r: [In(Iv(r, [3, 5], -6, 7, I32))],
         dict(lambd=2.5, bias=1.0))

    special = [1.5, np.nan, np.inf, -np.inf, 0.0, -0.0, -2.0, 65504.0]
    case('isnan_f32', 'IsNaN', [In(np.array(special * 2, F32).reshape(2, 8))])
    case('isnan_f16', 'IsNaN', [In(np.array(special, F16))])
    for nm, attrs in (('default', {}), ('neg_only', dict(detect_positive=0)),
                      ('pos_only', dict(detect_negative=0)),
                      ('none', dict(detect_negative=0, detect_positive=0))):
        case(f'isinf_{nm}', 'IsInf', [In(np.array(special, F32).reshape(2, 4))], attrs)

    # Dropout at inference is the identity; the mask output is all true.
    xd = lambda r: N(r, [3, 4, 5])
    case('dropout_default', 'Dropout', lambda r: [In(xd(r))])
    case('dropout_mask', 'Dropout', lambda r: [In(xd(r))], nout=2)
    case('dropout_ratio', 'Dropout', lambda r: [In(xd(r)), K(np.array(0.25, F32))])
    case('dropout_ratio_training_false', 'Dropout',
         lambda r: [In(xd(r)), K(np.array(0.4, F32)), K(np.array(False))], nout=2)
    case('dropout_seed', 'Dropout', lambda r: [In(xd(r))], dict(seed=3))
    case('dropout_op13', 'Dropout', lambda r: [In(xd(r))], nout=2, opset=13)
    case('dropout_f16', 'Dropout', lambda r: [In(N(r, [2, 3], dt=F16)), K(np.array(0.3, F16))],
         nout=2)
    case('dropout_ratio_input', 'Dropout', lambda r: [In(xd(r)), In(np.array(0.5, F32))])

    def dropout_between(r):   # the output may share the input's bytes: a chain checks that
        nodes = [helper.make_node('Add', ['x', 'y'], ['s']),
                 helper.make_node('Dropout', ['s'], ['d', 'm']),
                 helper.make_node('Relu', ['d'], ['z'])]
        return nodes, {'x': N(r, [3, 4]), 'y': N(r, [3, 4])}, {}, ['z', 'm', 's']
    gcase('dropout_between_ops', dropout_between)


BSHAPES = {'same': ([2, 3, 4], [2, 3, 4]), 'row': ([2, 3, 4], [4]), 'mid': ([2, 1, 4], [3, 1]),
           'scalar': ([2, 3], []), 'lhs1': ([1], [2, 3]), 'outer': ([3, 1], [1, 4])}


def binary_cases():
    for op in ('Add', 'Sub', 'Mul'):
        for sh, (a, b) in BSHAPES.items():
            case(f'{snake(op)}_f32_{sh}', op, lambda r, a=a, b=b: [In(N(r, a)), In(N(r, b))])
        for dt, shs in ((I32, ('same', 'row')), (I64, ('same', 'mid')), (I8, ('same',)),
                        (U8, ('same',)), (F16, ('same', 'row'))):
            for sh in shs:
                a, b = BSHAPES[sh]
                if dt == F16:
                    ins = lambda r, a=a, b=b: [In(N(r, a, dt=F16)), In(N(r, b, dt=F16))]
                else:
                    lo, hi = (0, 15) if dt == U8 else (-11, 11)
                    ins = lambda r, a=a, b=b, dt=dt, lo=lo, hi=hi: [In(Iv(r, a, lo, hi, dt)),
                                                                    In(Iv(r, b, lo, hi, dt))]
                case(f'{snake(op)}_{DT_NAMES[dt]}_{sh}', op, ins)
    case('add_f32_const', 'Add', lambda r: [In(N(r, [2, 3, 4])), K(N(r, [3, 4]))])

    def fdiv(r, a, b):
        return [In(N(r, a)), In(U(r, b, 0.5, 2) * r.choice([-1, 1], b).astype(F32))]
    for sh in ('same', 'row', 'mid', 'scalar', 'lhs1'):
        a, b = BSHAPES[sh]
        case(f'div_f32_{sh}', 'Div', lambda r, a=a, b=b: fdiv(r, a, b))
    # Integer division truncates toward zero in ORT (C semantics); negatives on both sides.
    case('div_i32_same', 'Div', lambda r: [In(Iv(r, [3, 5], -40, 40, I32)),
                                           In(NZ(r, [3, 5], 1, 8, I32))])
    case('div_i64_mid', 'Div', lambda r: [In(Iv(r, [2, 1, 4], -40, 40, I64)),
                                          In(NZ(r, [3, 1], 1, 8, I64))])
    case('div_f16_same', 'Div', lambda r: [In(N(r, [2, 3], dt=F16)),
                                           In(U(r, [2, 3], 0.5, 2, F16))])

    case('pow_f32', 'Pow', lambda r: [In(U(r, [3, 4], 0.1, 3)), In(U(r, [3, 4], -2, 2))])
    case('pow_f32_sq_const', 'Pow', lambda r: [In(N(r, [2, 3, 4])), K(np.array(2.0, F32))])
    case('pow_f32_scalar_exp', 'Pow', lambda r: [In(U(r, [2, 3, 4], 0.1, 2)),
                                                 In(np.array(3.0, F32))])
    case('pow_f32_negbase_intexp', 'Pow',
         lambda r: [In(U(r, [3, 4], 0.2, 3) * r.choice([-1, 1], [3, 4]).astype(F32)),
                    In(Iv(r, [3, 4], -2, 4, F32))])
    case('pow_f32_i64exp', 'Pow', lambda r: [In(U(r, [2, 4], -2, 2)), In(i64(0, 1, 2, 3))])
    case('pow_f32_bcast', 'Pow', lambda r: [In(U(r, [2, 1, 4], 0.5, 2)), In(U(r, [3, 1], -1, 2))])
    case('pow_i32', 'Pow', lambda r: [In(Iv(r, [3, 4], -4, 5, I32)), In(Iv(r, [3, 4], 0, 5, I32))])
    case('pow_i64', 'Pow', lambda r: [In(Iv(r, [3, 4], -4, 5, I64)), In(Iv(r, [4], 0, 5, I64))])

    for dt in (I32, I64, I8):
        for fm in (0, 1):
            case(f'mod_{DT_NAMES[dt]}_fmod{fm}', 'Mod',
                 lambda r, dt=dt: [In(Iv(r, [3, 5], -30, 30, dt)), In(NZ(r, [3, 5], 1, 8, dt))],
                 dict(fmod=fm))
    case('mod_i64_fmod0_bcast', 'Mod',
         lambda r: [In(Iv(r, [2, 3, 4], -30, 30, I64)), In(NZ(r, [4], 1, 8, I64))], dict(fmod=0))
    case('mod_f32_fmod1', 'Mod',
         lambda r: [In(U(r, [3, 5], -10, 10)), In(U(r, [3, 5], 0.5, 3) *
                                                  r.choice([-1, 1], [3, 5]).astype(F32))],
         dict(fmod=1))
    case('mod_f32_fmod1_bcast', 'Mod',
         lambda r: [In(U(r, [2, 3, 4], -10, 10)), In(np.array(2.5, F32))], dict(fmod=1))
    case('mod_f16_fmod1', 'Mod',
         lambda r: [In(U(r, [3, 5], -10, 10, F16)), In(U(r, [3, 5], 0.5, 3, F16))], dict(fmod=1))

    for op in ('Min', 'Max'):
        s = snake(op)
        case(f'{s}_f32_same', op, lambda r: [In(N(r, [3, 4])), In(N(r, [3, 4]))])
        case(f'{s}_f32_row', op, lambda r: [In(N(r, [2, 3, 4])), In(N(r, [4]))])
        case(f'{s}_f32_3in', op, lambda r: [In(N(r, [2, 1, 4])), In(N(r, [3, 1])), In(N(r, []))])
        case(f'{s}_f32_1in', op, lambda r: [In(N(r, [3, 4]))])
        case(f'{s}_i32', op, lambda r: [In(Iv(r, [3, 4], -50, 50, I32)),
                                        In(Iv(r, [3, 4], -50, 50, I32))])
        case(f'{s}_i64_3in', op, lambda r: [In(Iv(r, [2, 3], -50, 50, I64)),
                                            In(Iv(r, [3], -50, 50, I64)),
                                            In(Iv(r, [2, 1], -50, 50, I64))])
        case(f'{s}_f16', op, lambda r: [In(N(r, [3, 4], dt=F16)), In(N(r, [3, 4], dt=F16))])
        case(f'{s}_f32_const', op, lambda r: [In(N(r, [3, 4])), K(np.array(0.25, F32))])

    # Sum, Mean: variadic, broadcasting.
    for op in ('Sum', 'Mean'):
        s = snake(op)
        case(f'{s}_f32_1in', op, lambda r: [In(N(r, [3, 4]))])
        case(f'{s}_f32_2in', op, lambda r: [In(N(r, [3, 4])), In(N(r, [3, 4]))])
        case(f'{s}_f32_3in_bcast', op, lambda r: [In(N(r, [2, 1, 4])), In(N(r, [3, 1])),
                                                  In(N(r, [4]))])
        case(f'{s}_f32_4in_scalar', op, lambda r: [In(N(r, [2, 3])), In(N(r, [])),
                                                   In(N(r, [2, 3])), In(N(r, [1, 3]))])
        case(f'{s}_f32_const', op, lambda r: [In(N(r, [2, 3, 4])), K(N(r, [3, 4]))])
        case(f'{s}_f16', op, lambda r: [In(N(r, [3, 4], dt=F16)), In(N(r, [4], dt=F16)),
                                        In(N(r, [3, 1], dt=F16))])

    # PRelu: slope broadcasts to X (unidirectionally).
    case('prelu_slope_channel', 'PRelu', lambda r: [In(N(r, [2, 3, 4, 5])), K(U(r, [3, 1, 1]))])
    case('prelu_slope_full', 'PRelu', lambda r: [In(N(r, [3, 4])), In(U(r, [3, 4]))])
    case('prelu_slope_row', 'PRelu', lambda r: [In(N(r, [2, 3, 4])), In(U(r, [4]))])
    case('prelu_slope_scalar', 'PRelu', lambda r: [In(N(r, [3, 4])), K(np.array(0.25, F32))])
    case('prelu_op13', 'PRelu', lambda r: [In(N(r, [1, 3, 2, 2])), K(U(r, [3, 1, 1]))],
         opset=13)
    case('prelu_f16', 'PRelu', lambda r: [In(N(r, [2, 3, 4], dt=F16)), In(U(r, [4], dt=F16))])
    case('prelu_i32', 'PRelu', lambda r: [In(Iv(r, [3, 5], -9, 9, I32)),
                                          In(Iv(r, [5], -3, 4, I32))])
    case('prelu_i64', 'PRelu', lambda r: [In(Iv(r, [3, 5], -9, 9)), In(Iv(r, [3, 1], -3, 4))])


def compare_cases():
    for op in ('Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual'):
        s = snake(op)
        # Integer-valued floats so that equal pairs occur.
        case(f'{s}_f32_same', op, lambda r: [In(Iv(r, [3, 4], -3, 4, F32)),
                                             In(Iv(r, [3, 4], -3, 4, F32))])
        case(f'{s}_f32_row', op, lambda r: [In(Iv(r, [2, 3, 4], -3, 4, F32)),
                                            In(Iv(r, [4], -3, 4, F32))])
        case(f'{s}_i64_same', op, lambda r: [In(Iv(r, [3, 4], -3, 4, I64)),
                                             In(Iv(r, [3, 4], -3, 4, I64))])
        case(f'{s}_i32_mid', op, lambda r: [In(Iv(r, [2, 1, 4], -3, 4, I32)),
                                            In(Iv(r, [3, 1], -3, 4, I32))])
        case(f'{s}_f16', op, lambda r: [In(Iv(r, [3, 4], -3, 4, F16)),
                                        In(Iv(r, [3, 4], -3, 4, F16))])
    case('equal_bool', 'Equal', lambda r: [In(Bv(r, [3, 4])), In(Bv(r, [3, 4]))])
    case('equal_i64_scalar_const', 'Equal', lambda r: [In(Iv(r, [3, 4], -3, 4, I64)),
                                                       K(np.array(1, I64))])
    for op in ('And', 'Or', 'Xor'):
        case(f'{snake(op)}_same', op, lambda r: [In(Bv(r, [3, 4])), In(Bv(r, [3, 4]))])
        case(f'{snake(op)}_bcast', op, lambda r: [In(Bv(r, [2, 1, 4])), In(Bv(r, [3, 1]))])
    case('where_f32_same', 'Where', lambda r: [In(Bv(r, [3, 4])), In(N(r, [3, 4])),
                                               In(N(r, [3, 4]))])
    case('where_f32_bcast', 'Where', lambda r: [In(Bv(r, [3, 1])), In(N(r, [1, 4])),
                                                In(N(r, []))])
    case('where_f32_3way', 'Where', lambda r: [In(Bv(r, [2, 1, 4])), In(N(r, [3, 1])),
                                               In(N(r, [2, 3, 1]))])
    case('where_i64', 'Where', lambda r: [In(Bv(r, [3, 4])), In(Iv(r, [3, 4], -9, 9)),
                                          In(Iv(r, [4], -9, 9))])
    case('where_i32', 'Where', lambda r: [In(Bv(r, [3, 4])), In(Iv(r, [3, 4], -9, 9, I32)),
                                          In(Iv(r, [3, 4], -9, 9, I32))])
    case('where_f16', 'Where', lambda r: [In(Bv(r, [3, 4])), In(N(r, [3, 4], dt=F16)),
                                          In(N(r, [3, 4], dt=F16))])
    case('where_const_xy', 'Where', lambda r: [In(Bv(r, [2, 3, 4])), K(np.array(-1e9, F32)),
                                               In(N(r, [2, 3, 4]))])


def cast_source(r, src, dst, shape=(3, 5)):
    """Values that every target represents (no out-of-range conversions)."""
    if src == BOOL:
        return Bv(r, shape)
    lo, hi = (0, 100) if U8 in (src, dst) else (-100, 100)
    v = r.integers(lo, hi, size=shape).astype(np.float64)
    if dst == BOOL:
        v[r.random(shape) < 0.35] = 0
    if src in (F32, F16):
        frac = r.choice([0.0, 0.25, 0.75], size=shape)
        if dst == F16 and src == F32:
            frac = r.random(shape)    # exercises float32 -> float16 rounding
        v = v + frac
        if dst == U8:
            v = np.abs(v)
    return v.astype(src)


def cast_cases():
    dts = (F32, F16, I64, I32, I8, U8, BOOL)
    for src in dts:
        for dst in dts:
            name = f'cast_{DT_NAMES[src]}_to_{DT_NAMES[dst]}'
            to = mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dst)]
            case(name, 'Cast', lambda r, s=src, d=dst: [In(cast_source(r, s, d))], dict(to=to))
    case('cast_f32_to_f16_special', 'Cast', [In(np.array(
        [0.0, -0.0, 1.0, 65504.0, 70000.0, -70000.0, 6e-8, 1e-9, np.inf, -np.inf,
         1.00048828125, 1.000732421875, 2049.0, 2051.0], F32))],
        dict(to=onnx.TensorProto.FLOAT16))

    # CastLike: the target dtype comes from the second input (whose shape does not matter).
    pairs = [(F32, F16, In), (F16, F32, In), (F32, I32, In), (F32, U8, In), (F32, BOOL, In),
             (I64, F32, K), (I32, I8, K), (U8, I64, In), (BOOL, F32, In), (F16, I64, In),
             (F32, F32, K)]
    for src, dst, kind in pairs:
        case(f'castlike_{DT_NAMES[src]}_to_{DT_NAMES[dst]}', 'CastLike',
             lambda r, s=src, d=dst, kind=kind: [In(cast_source(r, s, d)),
                                                 kind(np.zeros([2], d))])


# ---- linear algebra, convolutions ----
def conv_cases():
    def conv(name, x, w, bias=True, attrs=None, w_const=True):
        def ins(r):
            out = [In(N(r, x)), (K if w_const else In)(N(r, w, 0.3))]
            if bias:
                out.append(K(N(r, [w[0]], 0.5)))
            return out
        case(name, 'Conv', ins, attrs or {})

    conv('conv2d_basic', [1, 3, 8, 8], [4, 3, 3, 3], attrs=dict(pads=[1, 1, 1, 1]))
    conv('conv2d_nobias', [1, 3, 8, 8], [4, 3, 3, 3], bias=False)
    conv('conv2d_stride2', [1, 3, 9, 9], [4, 3, 3, 3], attrs=dict(pads=[1, 1, 1, 1],
                                                                 strides=[2, 2]))
    conv('conv2d_pads_asym', [1, 3, 7, 8], [4, 3, 3, 3], attrs=dict(pads=[0, 1, 2, 1]))
    conv('conv2d_dilation2', [1, 3, 9, 9], [4, 3, 3, 3], attrs=dict(pads=[2, 2, 2, 2],
                                                                   dilations=[2, 2]))
    conv('conv2d_dilation_rect', [1, 2, 9, 10], [3, 2, 3, 3],
         attrs=dict(dilations=[1, 3], strides=[2, 1]))
    conv('conv2d_group2', [1, 4, 6, 6], [6, 2, 3, 3], attrs=dict(pads=[1, 1, 1, 1], group=2))
    conv('conv2d_depthwise', [1, 8, 7, 7], [8, 1, 3, 3], attrs=dict(pads=[1, 1, 1, 1], group=8))
    conv('conv2d_depthwise_s2', [1, 8, 8, 8], [8, 1, 3, 3],
         attrs=dict(pads=[1, 1, 1, 1], group=8, strides=[2, 2]))
    conv('conv2d_depthwise_k5', [1, 6, 9, 9], [6, 1, 5, 5], bias=False,
         attrs=dict(pads=[2, 2, 2, 2], group=6))
    conv('conv2d_depthwise_mult2', [1, 4, 6, 6], [8, 1, 3, 3],
         attrs=dict(pads=[1, 1, 1, 1], group=4))
    conv('conv2d_same_upper', [1, 3, 8, 8], [4, 3, 3, 3], attrs=dict(auto_pad='SAME_UPPER',
                                                                    strides=[2, 2]))
    conv('conv2d_same_lower', [1, 3, 8, 8], [4, 3, 3, 3], attrs=dict(auto_pad='SAME_LOWER',
                                                                    strides=[2, 2]))
    conv('conv2d_same_upper_s1_k4', [1, 2, 6, 7], [3, 2, 4, 4], attrs=dict(auto_pad='SAME_UPPER'))
    conv('conv2d_valid', [1, 3, 8, 8], [4, 3, 3, 3], attrs=dict(auto_pad='VALID', strides=[2, 2]))
    conv('conv2d_notset', [1, 3, 6, 6], [4, 3, 3, 3], attrs=dict(auto_pad='NOTSET',
                                                                pads=[1, 1, 1, 1]))
    conv('conv2d_kernel_shape', [1, 3, 8, 8], [4, 3, 3, 3],
         attrs=dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    conv('conv2d_rect', [2, 3, 7, 9], [5, 3, 3, 1], attrs=dict(pads=[1, 0, 1, 0], strides=[1, 2]))
    conv('conv2d_1x1', [2, 6, 5, 5], [4, 6, 1, 1])
    conv('conv2d_1x1_s2', [1, 6, 6, 6], [4, 6, 1, 1], attrs=dict(strides=[2, 2]))
    conv('conv2d_k7_s2_p3', [1, 3, 16, 16], [4, 3, 7, 7], attrs=dict(pads=[3, 3, 3, 3],
                                                                    strides=[2, 2]))
    conv('conv2d_k5_batch2', [2, 3, 8, 8], [4, 3, 5, 5], attrs=dict(pads=[2, 2, 2, 2],
                                                                   strides=[2, 2]))
    conv('conv2d_w_input', [1, 3, 6, 6], [4, 3, 3, 3], attrs=dict(pads=[1, 1, 1, 1]),
         w_const=False)
    conv('conv1d_basic', [2, 3, 10], [5, 3, 3], attrs=dict(pads=[1, 1]))
    conv('conv1d_stride_dil', [1, 3, 12], [4, 3, 3], attrs=dict(pads=[2, 1], strides=[2],
                                                               dilations=[2]))
    conv('conv1d_same_upper', [1, 3, 9], [4, 3, 4], attrs=dict(auto_pad='SAME_UPPER',
                                                              strides=[2]))
    conv('conv1d_group3', [1, 6, 9], [6, 2, 3], attrs=dict(group=3, pads=[1, 1]))
    conv('conv1d_k1', [2, 4, 7], [6, 4, 1])
    case('conv2d_f16', 'Conv', lambda r: [In(N(r, [1, 3, 6, 6], dt=F16)),
                                          K(N(r, [4, 3, 3, 3], 0.3, F16))],
         dict(pads=[1, 1, 1, 1]))

    def convt(name, x, w, bias=True, attrs=None):
        def ins(r):
            out = [In(N(r, x)), K(N(r, w, 0.3))]
            if bias:
                out.append(K(N(r, [w[1] * (attrs or {}).get('group', 1)], 0.5)))
            return out
        case(name, 'ConvTranspose', ins, attrs or {})

    convt('convt2d_basic', [1, 4, 5, 5], [4, 3, 3, 3], attrs=dict(pads=[1, 1, 1, 1]))
    convt('convt2d_nopad', [1, 2, 4, 5], [2, 3, 3, 3], bias=False)
    convt('convt2d_s2_k2', [1, 4, 4, 4], [4, 3, 2, 2], bias=False, attrs=dict(strides=[2, 2]))
    convt('convt2d_s2_k3_p1_op1', [1, 4, 4, 4], [4, 3, 3, 3],
          attrs=dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]))
    convt('convt2d_s2_k4_p1', [1, 3, 4, 5], [3, 2, 4, 4], attrs=dict(strides=[2, 2],
                                                                    pads=[1, 1, 1, 1]))
    convt('convt2d_s3_rect', [1, 2, 3, 4], [2, 2, 3, 2], attrs=dict(strides=[3, 2]))
    convt('convt2d_group2', [1, 4, 4, 4], [4, 2, 3, 3], attrs=dict(group=2, pads=[1, 1, 1, 1]))
    convt('convt2d_depthwise_s2', [1, 4, 4, 4], [4, 1, 3, 3],
          attrs=dict(group=4, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]))
    convt('convt2d_dilation2', [1, 3, 4, 4], [3, 2, 3, 3], attrs=dict(dilations=[2, 2]))
    convt('convt2d_pads_asym', [1, 3, 5, 5], [3, 2, 3, 3], attrs=dict(pads=[0, 1, 2, 0]))
    convt('convt2d_same_upper', [1, 3, 4, 5], [3, 2, 3, 3], attrs=dict(auto_pad='SAME_UPPER',
                                                                      strides=[2, 2]))
    convt('convt2d_same_lower', [1, 3, 4, 5], [3, 2, 3, 3], attrs=dict(auto_pad='SAME_LOWER',
                                                                      strides=[2, 2]))
    convt('convt2d_valid', [1, 3, 4, 4], [3, 2, 3, 3], attrs=dict(auto_pad='VALID',
                                                                 strides=[2, 2]))
    convt('convt2d_output_shape', [1, 3, 4, 4], [3, 2, 3, 3],
          attrs=dict(strides=[2, 2], output_shape=[9, 10]))
    convt('convt2d_kernel_shape', [1, 2, 3, 3], [2, 2, 3, 3],
          attrs=dict(kernel_shape=[3, 3], strides=[2, 2]))
    convt('convt2d_batch2', [2, 3, 3, 4], [3, 4, 2, 2], attrs=dict(strides=[2, 2]))
    convt('convt1d', [2, 3, 6], [3, 2, 3], attrs=dict(strides=[2], pads=[1, 1],
                                                     output_padding=[1]))
    convt('convt1d_s1', [1, 2, 5], [2, 3, 4])


def matmul_cases():
    mm = [('2d', [3, 4], [4, 5]), ('batch', [2, 3, 4], [2, 4, 5]),
          ('bcast4d', [2, 1, 3, 4], [3, 4, 5]), ('bcast_b2d', [2, 3, 4], [4, 5]),
          ('bcast_a2d', [3, 4], [2, 4, 5]), ('1d_2d', [4], [4, 5]), ('2d_1d', [3, 4], [4]),
          ('1d_1d', [4], [4]), ('1d_batch', [5], [2, 5, 3]), ('batch_1d', [2, 3, 5], [5]),
          ('4d', [2, 3, 4, 5], [2, 3, 5, 2]), ('k1', [3, 1], [1, 4])]
    for sh, a, b in mm:
        case(f'matmul_{sh}', 'MatMul', lambda r, a=a, b=b: [In(N(r, a)), In(N(r, b))])
    case('matmul_const_b', 'MatMul', lambda r: [In(N(r, [2, 3, 8])), K(N(r, [8, 6]))])
    case('matmul_i32', 'MatMul', lambda r: [In(Iv(r, [3, 4], -9, 9, I32)),
                                            In(Iv(r, [4, 5], -9, 9, I32))])
    case('matmul_i64', 'MatMul', lambda r: [In(Iv(r, [2, 3, 4], -9, 9, I64)),
                                            In(Iv(r, [4, 5], -9, 9, I64))])
    case('matmul_f16', 'MatMul', lambda r: [In(N(r, [3, 4], dt=F16)), In(N(r, [4, 5], dt=F16))])

    def gemm(name, a, b, c, attrs=None, c_const=True, b_const=True):
        def ins(r):
            out = [In(N(r, a)), (K if b_const else In)(N(r, b))]
            if c is not None:
                out.append((K if c_const else In)(N(r, c)))
            return out
        case(name, 'Gemm', ins, attrs or {})
    gemm('gemm_basic', [3, 4], [4, 5], [5])
    gemm('gemm_transA', [4, 3], [4, 5], [5], dict(transA=1))
    gemm('gemm_transB', [3, 4], [5, 4], [5], dict(transB=1))
    gemm('gemm_transAB', [4, 3], [5, 4], [3, 5], dict(transA=1, transB=1))
    gemm('gemm_alpha_beta', [3, 4], [4, 5], [3, 5], dict(alpha=0.5, beta=2.0))
    gemm('gemm_alpha_only', [3, 4], [4, 5], None, dict(alpha=-1.5))
    gemm('gemm_c_scalar', [3, 4], [4, 5], [], dict(beta=0.5))
    gemm('gemm_c_col', [3, 4], [4, 5], [3, 1])
    gemm('gemm_c_row', [3, 4], [4, 5], [1, 5])
    gemm('gemm_c_1', [3, 4], [4, 5], [1])
    gemm('gemm_no_c', [3, 4], [4, 5], None)
    gemm('gemm_runtime_bc', [2, 6], [6, 3], [3], dict(transB=0), c_const=False, b_const=False)
    gemm('gemm_linear', [2, 16], [8, 16], [8], dict(transB=1, alpha=1.0, beta=1.0))

    eqs = [('bhid_bhjd_bhij', 'bhid,bhjd->bhij', [1, 2, 3, 4], [1, 2, 5, 4]),
           ('bhij_bhjd_bhid', 'bhij,bhjd->bhid', [1, 2, 3, 5], [1, 2, 5, 4]),
           ('bij_bjk_bik', 'bij,bjk->bik', [2, 3, 4], [2, 4, 5]),
           ('ij_jk_ik', 'ij,jk->ik', [3, 4], [4, 5]),
           ('bnd_dk_bnk', 'bnd,dk->bnk', [2, 3, 4], [4, 5])]
    for nm, eq, a, b in eqs:
        case(f'einsum_{nm}', 'Einsum', lambda r, a=a, b=b: [In(N(r, a)), In(N(r, b))],
             dict(equation=eq))
    case('einsum_ij_ji', 'Einsum', lambda r: [In(N(r, [3, 4]))], dict(equation='ij->ji'))
    case('einsum_bhid_bhjd_bhij_2h', 'Einsum', lambda r: [In(N(r, [2, 3, 4, 8])),
                                                          In(N(r, [2, 3, 6, 8]))],
         dict(equation='bhid,bhjd->bhij'))


# ---- normalization, softmax ----
def norm_cases():
    def bn(name, x, attrs=None, opset=17, dt=F32):
        c = x[1]
        case(name, 'BatchNormalization',
             lambda r: [In(N(r, x, dt=dt)), K(U(r, [c], 0.5, 1.5, dt)), K(N(r, [c], 0.3, dt)),
                        K(N(r, [c], 0.5, dt)), K(U(r, [c], 0.2, 2.0, dt))],
             attrs or {}, opset=opset)
    bn('batchnorm_4d', [2, 3, 4, 5])
    bn('batchnorm_eps1e3_momentum', [1, 4, 3, 3], dict(epsilon=1e-3, momentum=0.9))
    bn('batchnorm_2d', [4, 6])
    bn('batchnorm_3d', [2, 4, 7], dict(epsilon=1e-5))
    bn('batchnorm_training_mode0', [1, 3, 4, 4], dict(training_mode=0))
    bn('batchnorm_op13', [2, 3, 4, 4], dict(epsilon=1e-3), opset=13)
    bn('batchnorm_f16', [1, 3, 4, 4], dt=F16)

    def ln(name, x, axis, attrs=None, bias=True, nout=1, dt=F32):
        nshape = x[axis:] if axis >= 0 else x[len(x) + axis:]

        def ins(r):
            out = [In(N(r, x, 2.0, dt) + dt(0.5)), K(U(r, nshape, 0.5, 1.5, dt))]
            if bias:
                out.append(K(N(r, nshape, 0.3, dt)))
            return out
        a = dict(attrs or {})
        if axis != -1:
            a['axis'] = axis
        case(name, 'LayerNormalization', ins, a, nout=nout)
    ln('layernorm_last', [2, 3, 8], -1)
    ln('layernorm_axis1', [2, 3, 4], 1)
    ln('layernorm_axis_neg2', [2, 3, 4], -2)
    ln('layernorm_axis0', [2, 3, 4], 0)
    ln('layernorm_eps1e6', [1, 5, 16], -1, dict(epsilon=1e-6))
    ln('layernorm_nobias', [2, 3, 8], -1, bias=False)
    ln('layernorm_stash1', [2, 3, 8], -1, dict(stash_type=1))
    ln('layernorm_3out', [2, 3, 8], -1, nout=3)
    ln('layernorm_4d', [2, 3, 4, 5], -1)
    ln('layernorm_f16', [2, 3, 8], -1, dt=F16)

    for op in ('Softmax', 'LogSoftmax'):
        s = snake(op)
        x = lambda r: N(r, [2, 3, 4], 3.0)
        case(f'{s}_default', op, lambda r: [In(x(r))])
        for ax in (0, 1, -1, 2):
            case(f'{s}_axis{ax}'.replace('-', '_neg'), op, lambda r: [In(x(r))], dict(axis=ax))
        case(f'{s}_4d_axis2', op, lambda r: [In(N(r, [2, 3, 4, 5]))], dict(axis=2))
        case(f'{s}_op13', op, lambda r: [In(x(r))], dict(axis=1), opset=13)
        case(f'{s}_large', op, lambda r: [In(N(r, [3, 6], 100.0))])
        case(f'{s}_f16', op, lambda r: [In(N(r, [2, 5], dt=F16))])
        case(f'{s}_1d', op, lambda r: [In(N(r, [7]))])

    def inorm(name, x, attrs=None, dt=F32, sb=K):
        c = x[1]
        case(name, 'InstanceNormalization',
             lambda r: [In(N(r, x, 2.0, dt) + dt(0.5)), sb(U(r, [c], 0.5, 1.5, dt)),
                        sb(N(r, [c], 0.3, dt))], attrs or {})
    inorm('instancenorm_4d', [2, 3, 4, 5])
    inorm('instancenorm_3d_eps', [2, 4, 9], dict(epsilon=0.1))
    inorm('instancenorm_5d_inputs', [1, 2, 2, 3, 4], dict(epsilon=1e-3), sb=In)
    inorm('instancenorm_f16', [1, 2, 8], dt=F16)

    for p in (1, 2):
        for ax in (-1, 0, 1):
            case(f'lpnorm_p{p}_axis{ax}'.replace('-', 'neg'), 'LpNormalization',
                 lambda r: [In(N(r, [3, 4, 5]))], dict(p=p, axis=ax))
    case('lpnorm_default', 'LpNormalization', lambda r: [In(N(r, [3, 4]))])
    case('lpnorm_f16', 'LpNormalization', lambda r: [In(N(r, [3, 4], dt=F16))], dict(p=2))

    xm = lambda r: N(r, [2, 3, 4, 5], 2.0) + F32(0.5)
    case('mvn_default', 'MeanVarianceNormalization', lambda r: [In(xm(r))])
    case('mvn_axes_2_3', 'MeanVarianceNormalization', lambda r: [In(xm(r))], dict(axes=[2, 3]))
    case('mvn_axes_1_3', 'MeanVarianceNormalization', lambda r: [In(xm(r))], dict(axes=[1, 3]))
    case('mvn_3d_axes_0_neg1', 'MeanVarianceNormalization',
         lambda r: [In(N(r, [2, 3, 6], 2.0) + F32(0.5))], dict(axes=[0, -1]))
    case('mvn_f16', 'MeanVarianceNormalization', lambda r: [In(N(r, [2, 3, 2, 2], dt=F16))],
         dict(axes=[2, 3]))

    xh = lambda r: D(r, [3, 4, 5])
    for ax in (0, 1, 2, -1):
        case(f'hardmax_axis{ax}'.replace('-', '_neg'), 'Hardmax', lambda r: [In(xh(r))],
             dict(axis=ax))
    case('hardmax_default', 'Hardmax', lambda r: [In(xh(r))])
    case('hardmax_op13', 'Hardmax', lambda r: [In(xh(r))], dict(axis=1), opset=13)
    # Ties: the spec marks the first maximum.
    case('hardmax_ties', 'Hardmax', lambda r: [In(Iv(r, [4, 6], 0, 3, F32))], dict(axis=1))
    case('hardmax_f16', 'Hardmax', lambda r: [In(D(r, [3, 7], 0.25, F16))])


# ---- reductions, selections ----
def reduce_cases():
    x = lambda r: N(r, [2, 3, 4])
    variants = [('axis1', [1], 1), ('axis1_nokeep', [1], 0), ('axes02', [0, 2], 1),
                ('axes02_nokeep', [0, 2], 0), ('axis_neg1_nokeep', [-1], 0),
                ('all', None, 1), ('all_nokeep', None, 0)]
    for op in ('ReduceMean', 'ReduceMax', 'ReduceMin'):
        s = snake(op)
        for nm, axes, kd in variants:
            attrs = dict(keepdims=kd)
            if axes is not None:
                attrs['axes'] = axes
            case(f'{s}_{nm}', op, lambda r: [In(x(r))], attrs)
        case(f'{s}_op13_axis1', op, lambda r: [In(x(r))], dict(axes=[1], keepdims=0), opset=13)
        case(f'{s}_default_keepdims', op, lambda r: [In(x(r))], dict(axes=[2]))
        case(f'{s}_4d_spatial', op, lambda r: [In(N(r, [2, 3, 4, 5]))], dict(axes=[2, 3]))
        case(f'{s}_f16', op, lambda r: [In(N(r, [2, 3, 4], dt=F16))], dict(axes=[1]))
    for op in ('ReduceMax', 'ReduceMin'):
        for dt in (I64, I32):
            case(f'{snake(op)}_{DT_NAMES[dt]}', op,
                 lambda r, dt=dt: [In(Iv(r, [3, 4], -50, 50, dt))], dict(axes=[1], keepdims=0))
    case('reduce_mean_i32', 'ReduceMean', lambda r: [In(Iv(r, [3, 4], -50, 50, I32))],
         dict(axes=[1]))
    for opset in (13, 17):
        for nm, axes, kd in variants:
            ins = (lambda r: [In(x(r))]) if axes is None else \
                  (lambda r, axes=axes: [In(x(r)), K(np.array(axes, I64))])
            case(f'reduce_sum_op{opset}_{nm}', 'ReduceSum', ins, dict(keepdims=kd), opset=opset)
        case(f'reduce_sum_op{opset}_empty_axes_noop', 'ReduceSum',
             lambda r: [In(x(r)), K(np.zeros([0], I64))], dict(noop_with_empty_axes=1),
             opset=opset)
        case(f'reduce_sum_op{opset}_empty_axes_all', 'ReduceSum',
             lambda r: [In(x(r)), K(np.zeros([0], I64))], dict(noop_with_empty_axes=0),
             opset=opset)
    case('reduce_sum_no_axes_noop', 'ReduceSum', lambda r: [In(x(r))],
         dict(noop_with_empty_axes=1))
    case('reduce_sum_i64', 'ReduceSum', lambda r: [In(Iv(r, [3, 4], -50, 50)), K(i64(0))],
         dict(keepdims=0))
    case('reduce_sum_i32', 'ReduceSum', lambda r: [In(Iv(r, [3, 4], -50, 50, I32)), K(i64(1))])
    case('reduce_sum_f16', 'ReduceSum', lambda r: [In(N(r, [3, 4], dt=F16)), K(i64(1))])
    case('reduce_sum_4d_spatial', 'ReduceSum', lambda r: [In(N(r, [2, 3, 4, 5])), K(i64(-2, -1))])

    # The other reductions: same variants; inputs kept where each is well defined.
    ranges = {'ReduceProd': (0.5, 1.5), 'ReduceL1': (-3, 3), 'ReduceL2': (-3, 3),
              'ReduceSumSquare': (-3, 3), 'ReduceLogSum': (0.1, 3), 'ReduceLogSumExp': (-3, 3)}
    for op, (lo, hi) in ranges.items():
        s = snake(op)
        xr = lambda r, lo=lo, hi=hi: U(r, [2, 3, 4], lo, hi)
        for nm, axes, kd in variants:
            attrs = dict(keepdims=kd)
            if axes is not None:
                attrs['axes'] = axes
            case(f'{s}_{nm}', op, lambda r: [In(xr(r))], attrs)
        case(f'{s}_op13_axis1', op, lambda r: [In(xr(r))], dict(axes=[1], keepdims=0), opset=13)
        case(f'{s}_default_keepdims', op, lambda r: [In(xr(r))], dict(axes=[2]))
        case(f'{s}_4d_spatial', op, lambda r, lo=lo, hi=hi: [In(U(r, [2, 3, 4, 5], lo, hi))],
             dict(axes=[2, 3]))
        case(f'{s}_f16', op, lambda r, lo=lo, hi=hi: [In(U(r, [2, 3, 4], lo, hi, F16))],
             dict(axes=[1]))
        if op not in ('ReduceLogSum', 'ReduceLogSumExp'):   # exact integer versions
            ilo, ihi = (-3, 4) if op == 'ReduceProd' else (-9, 10)   # no overflow
            case(f'{s}_i32', op, lambda r, ilo=ilo, ihi=ihi: [In(Iv(r, [3, 4], ilo, ihi, I32))],
                 dict(axes=[1], keepdims=0))
            case(f'{s}_i64', op, lambda r, ilo=ilo, ihi=ihi: [In(Iv(r, [2, 3, 4], ilo, ihi))],
                 dict(axes=[0, 2]))
    case('reduce_log_sum_exp_large', 'ReduceLogSumExp', lambda r: [In(N(r, [3, 4], 60.0))],
         dict(axes=[1]))

    for op in ('ArgMax', 'ArgMin'):
        s = snake(op)
        dx = lambda r: D(r, [3, 4, 5])
        case(f'{s}_axis0', op, lambda r: [In(dx(r))], dict(axis=0))
        case(f'{s}_axis1_nokeep', op, lambda r: [In(dx(r))], dict(axis=1, keepdims=0))
        case(f'{s}_axis_neg1', op, lambda r: [In(dx(r))], dict(axis=-1))
        case(f'{s}_default', op, lambda r: [In(dx(r))])
        # Ties: the spec fixes the first (or, with select_last_index, the last) occurrence.
        ties = lambda r: Iv(r, [4, 6], 0, 3, F32)
        case(f'{s}_ties_first', op, lambda r: [In(ties(r))], dict(axis=1, select_last_index=0))
        case(f'{s}_ties_last', op, lambda r: [In(ties(r))], dict(axis=1, select_last_index=1))
        case(f'{s}_ties_last_axis0', op, lambda r: [In(ties(r))],
             dict(axis=0, keepdims=0, select_last_index=1))
        case(f'{s}_i32', op, lambda r: [In(D(r, [3, 5], 1, I32))], dict(axis=1))
        case(f'{s}_i64', op, lambda r: [In(D(r, [3, 5], 1, I64))], dict(axis=0))
        case(f'{s}_f16', op, lambda r: [In(D(r, [3, 5], 0.25, F16))], dict(axis=1))

    def topk(name, x, k, attrs=None, dt=F32, step=0.125):
        case(name, 'TopK', lambda r: [In(D(r, x, step, dt)), K(i64(k))], attrs or {}, nout=2)
    topk('topk_last', [3, 8], 3)
    topk('topk_smallest', [3, 8], 3, dict(largest=0))
    topk('topk_axis0', [5, 4], 2, dict(axis=0))
    topk('topk_axis1_3d', [2, 6, 3], 4, dict(axis=1))
    topk('topk_axis_neg2_smallest', [2, 6, 3], 2, dict(axis=-2, largest=0))
    topk('topk_full', [2, 5], 5)
    topk('topk_k1', [4, 7], 1)
    topk('topk_sorted1', [3, 8], 4, dict(sorted=1, largest=1))
    topk('topk_unsorted_k1', [3, 8], 1, dict(sorted=0))   # k=1: order is defined anyway
    topk('topk_i64', [3, 8], 3, dt=I64, step=1)
    topk('topk_i32', [3, 8], 3, dict(largest=0), dt=I32, step=1)
    topk('topk_1d', [40], 10)
    topk('topk_f16', [3, 8], 3, dt=F16, step=0.25)


# ---- shape manipulation ----
def shape_cases():
    x = lambda r: N(r, [2, 3, 4])

    def reshape(name, shp, xs=(2, 3, 4), attrs=None, opset=17, dt=F32):
        case(name, 'Reshape',
             lambda r: [In(Iv(r, xs, -9, 9, dt) if dt != F32 else N(r, list(xs))), K(i64(*shp))],
             attrs or {}, opset=opset)
    reshape('reshape_0_neg1', [0, -1])
    reshape('reshape_neg1', [-1])
    reshape('reshape_4_0_neg1', [4, 0, -1])
    reshape('reshape_plain', [6, 4])
    reshape('reshape_expand_rank', [2, 3, 2, 1, 2])
    reshape('reshape_allowzero_plain', [4, 6], attrs=dict(allowzero=1))
    reshape('reshape_allowzero_zero_dim', [3, 0], xs=(0, 3), attrs=dict(allowzero=1))
    reshape('reshape_allowzero0_copy', [0, 0, 2, 2], attrs=dict(allowzero=0))
    reshape('reshape_op13', [0, -1], opset=13)
    reshape('reshape_i64', [3, -1], dt=I64)
    reshape('reshape_to_scalar', [], xs=(1, 1))

    for perm in (None, [0, 2, 1], [2, 0, 1], [1, 0, 2]):
        nm = 'default' if perm is None else ''.join(map(str, perm))
        case(f'transpose_{nm}', 'Transpose', lambda r: [In(x(r))],
             {} if perm is None else dict(perm=perm))
    case('transpose_4d_0231', 'Transpose', lambda r: [In(N(r, [2, 3, 4, 5]))],
         dict(perm=[0, 2, 3, 1]))
    case('transpose_4d_0312', 'Transpose', lambda r: [In(N(r, [2, 3, 4, 5]))],
         dict(perm=[0, 3, 1, 2]))
    case('transpose_5d', 'Transpose', lambda r: [In(N(r, [2, 3, 2, 4, 2]))],
         dict(perm=[0, 3, 1, 4, 2]))
    case('transpose_6d', 'Transpose', lambda r: [In(N(r, [1, 2, 3, 2, 2, 3]))],
         dict(perm=[0, 1, 3, 5, 2, 4]))
    case('transpose_2d', 'Transpose', lambda r: [In(N(r, [5, 7]))])
    case('transpose_i64', 'Transpose', lambda r: [In(Iv(r, [2, 3, 4], -9, 9))],
         dict(perm=[1, 2, 0]))
    case('transpose_f16', 'Transpose', lambda r: [In(N(r, [2, 3, 4], dt=F16))],
         dict(perm=[2, 1, 0]))

    case('concat_axis0', 'Concat', lambda r: [In(N(r, [2, 3])), In(N(r, [1, 3]))], dict(axis=0))
    case('concat_axis1_3in', 'Concat', lambda r: [In(N(r, [2, 1, 4])), In(N(r, [2, 3, 4])),
                                                  In(N(r, [2, 2, 4]))], dict(axis=1))
    case('concat_axis_neg1', 'Concat', lambda r: [In(N(r, [2, 3, 2])), In(N(r, [2, 3, 5]))],
         dict(axis=-1))
    case('concat_i64', 'Concat',
         lambda r: [In(Iv(r, [2], -9, 9)), K(i64(-1)), In(Iv(r, [1], 0, 9))], dict(axis=0))
    case('concat_1in', 'Concat', lambda r: [In(N(r, [2, 3]))], dict(axis=1))
    case('concat_const', 'Concat', lambda r: [In(N(r, [1, 2, 3])), K(N(r, [1, 2, 3]))],
         dict(axis=0))
    case('concat_f16', 'Concat', lambda r: [In(N(r, [2, 3], dt=F16)), In(N(r, [2, 2], dt=F16))],
         dict(axis=1))
    case('concat_bool', 'Concat', lambda r: [In(Bv(r, [2, 3])), In(Bv(r, [2, 2]))], dict(axis=1))

    for opset in (13, 17):
        case(f'split_equal3_op{opset}', 'Split', lambda r: [In(N(r, [2, 6, 3]))], dict(axis=1),
             nout=3, opset=opset)
        case(f'split_explicit_op{opset}', 'Split', lambda r: [In(N(r, [2, 6, 3])), K(i64(1, 2, 3))],
             dict(axis=1), nout=3, opset=opset)
    case('split_axis_neg1', 'Split', lambda r: [In(N(r, [2, 3, 4]))], dict(axis=-1), nout=2)
    case('split_default_axis0', 'Split', lambda r: [In(N(r, [4, 3]))], nout=2)
    case('split_explicit_axis0_i64', 'Split', lambda r: [In(Iv(r, [5, 2], -9, 9)), K(i64(3, 2))],
         nout=2)
    case('split_1out', 'Split', lambda r: [In(N(r, [3, 4]))], dict(axis=1), nout=1)
    case('split_explicit_with_zero', 'Split', lambda r: [In(N(r, [2, 5])), K(i64(2, 0, 3))],
         dict(axis=1), nout=3)

    def slc(name, xs, starts, ends, axes=None, steps=None, opset=17, idt=I64, dt=F32):
        def ins(r):
            out = [In(N(r, xs) if dt == F32 else Iv(r, xs, -99, 99, dt)),
                   K(np.array(starts, idt)), K(np.array(ends, idt))]
            if axes is not None or steps is not None:
                out.append(K(np.array(axes, idt)) if axes is not None else None)
            if steps is not None:
                out.append(K(np.array(steps, idt)))
            return out
        case(name, 'Slice', ins, opset=opset)
    xs = [4, 5, 6]
    slc('slice_basic', xs, [1, 0], [3, 4], [0, 2])
    slc('slice_no_axes', xs, [1, 1, 1], [3, 4, 5])
    slc('slice_negative_idx', xs, [-3], [-1], [1])
    slc('slice_step2', xs, [0], [6], [2], [2])
    slc('slice_step3_offset', xs, [1, 0], [4, 5], [0, 1], [2, 3])
    slc('slice_reverse', xs, [-1], [INT64_MIN], [2], [-1])
    slc('slice_reverse_all_axes', xs, [-1, -1, -1], [INT64_MIN, INT64_MIN, INT64_MIN],
        [0, 1, 2], [-1, -1, -1])
    slc('slice_step_neg2', xs, [5], [0], [2], [-2])
    slc('slice_step_neg3_clamp', xs, [100], [-100], [1], [-3])
    slc('slice_clamp_big', xs, [-1000, 2], [1000, INT64_MAX], [0, 1])
    slc('slice_negative_axes', xs, [1, 2], [-1, 5], [-1, -3])
    slc('slice_empty', xs, [3], [1], [0])
    slc('slice_steps_no_axes', xs, [0, 0, 0], [4, 5, 6], None, [1, 2, 3])
    slc('slice_i32_params', xs, [1], [3], [1], [1], idt=I32)
    slc('slice_i64_data', xs, [0, 1], [2, 4], [0, 2], dt=I64)
    slc('slice_op13', xs, [1], [-1], [2], [1], opset=13)
    slc('slice_1d', [10], [2], [9], [0], [3])

    case('squeeze_no_axes_op17', 'Squeeze', lambda r: [In(N(r, [1, 3, 1, 4]))])
    for opset in (13, 17):
        case(f'squeeze_axes_op{opset}', 'Squeeze', lambda r: [In(N(r, [1, 3, 1, 4])), K(i64(0, 2))],
             opset=opset)
        case(f'squeeze_neg_axis_op{opset}', 'Squeeze',
             lambda r: [In(N(r, [1, 3, 1, 4])), K(i64(-2))], opset=opset)
        case(f'unsqueeze_axis0_op{opset}', 'Unsqueeze', lambda r: [In(N(r, [3, 4])), K(i64(0))],
             opset=opset)
        case(f'unsqueeze_neg_op{opset}', 'Unsqueeze', lambda r: [In(N(r, [3, 4])), K(i64(1, -1))],
             opset=opset)
    case('squeeze_no_axes_op13', 'Squeeze', lambda r: [In(N(r, [1, 3, 1, 4]))], opset=13)
    case('squeeze_i64', 'Squeeze', lambda r: [In(Iv(r, [3, 1], -9, 9)), K(i64(1))])
    case('unsqueeze_0_3', 'Unsqueeze', lambda r: [In(N(r, [3, 4])), K(i64(3, 0))])
    case('unsqueeze_scalar', 'Unsqueeze', lambda r: [In(Iv(r, [], -9, 9)), K(i64(0))])
    case('unsqueeze_unsorted_neg', 'Unsqueeze', lambda r: [In(N(r, [2, 3])), K(i64(-1, 0, 2))])

    for ax in (0, 1, 2, -1, 4, -3):
        case(f'flatten_axis{ax}'.replace('-', 'neg'), 'Flatten',
             lambda r: [In(N(r, [2, 3, 4, 5]))], dict(axis=ax))
    case('flatten_default', 'Flatten', lambda r: [In(N(r, [2, 3, 4]))])
    case('flatten_i64', 'Flatten', lambda r: [In(Iv(r, [2, 3, 2], -9, 9))], dict(axis=2))

    case('expand_col', 'Expand', lambda r: [In(N(r, [3, 1])), K(i64(2, 3, 4))])
    case('expand_smaller_shape', 'Expand', lambda r: [In(N(r, [2, 3])), K(i64(1, 1))])
    case('expand_vector', 'Expand', lambda r: [In(N(r, [4])), K(i64(2, 3, 4))])
    case('expand_mixed', 'Expand', lambda r: [In(N(r, [2, 1, 4])), K(i64(2, 3, 1))])
    case('expand_scalar', 'Expand', lambda r: [In(N(r, [])), K(i64(2, 3))])
    case('expand_i64', 'Expand', lambda r: [In(Iv(r, [3, 1], -9, 9)), K(i64(3, 4))])
    case('expand_bool', 'Expand', lambda r: [In(Bv(r, [1, 4])), K(i64(3, 4))])

    case('tile_2d', 'Tile', lambda r: [In(N(r, [2, 3])), K(i64(2, 2))])
    case('tile_3d', 'Tile', lambda r: [In(N(r, [2, 3, 2])), K(i64(1, 3, 2))])
    case('tile_ones', 'Tile', lambda r: [In(N(r, [2, 3])), K(i64(1, 1))])
    case('tile_i64', 'Tile', lambda r: [In(Iv(r, [3], -9, 9)), K(i64(4))])
    case('tile_bool', 'Tile', lambda r: [In(Bv(r, [2, 2])), K(i64(2, 3))])

    xp = lambda r: N(r, [1, 2, 3, 4])
    for opset in (13, 17):
        case(f'pad_constant_value_op{opset}', 'Pad',
             lambda r: [In(xp(r)), K(i64(0, 0, 1, 2, 0, 0, 2, 1)), K(np.array(1.5, F32))],
             dict(mode='constant'), opset=opset)
    case('pad_constant_default', 'Pad', lambda r: [In(xp(r)), K(i64(0, 1, 1, 0, 0, 0, 1, 2))])
    case('pad_reflect', 'Pad', lambda r: [In(xp(r)), K(i64(0, 0, 2, 1, 0, 0, 1, 3))],
         dict(mode='reflect'))
    case('pad_edge', 'Pad', lambda r: [In(xp(r)), K(i64(0, 0, 2, 1, 0, 0, 1, 3))],
         dict(mode='edge'))
    case('pad_negative', 'Pad', lambda r: [In(xp(r)), K(i64(0, 0, -1, 1, 0, 0, 1, -2))],
         dict(mode='constant'))
    case('pad_reflect_2d', 'Pad', lambda r: [In(N(r, [3, 4])), K(i64(2, 3, 1, 2))],
         dict(mode='reflect'))
    case('pad_edge_2d', 'Pad', lambda r: [In(N(r, [3, 4])), K(i64(2, 3, 4, 2))],
         dict(mode='edge'))
    case('pad_i64_constant', 'Pad', lambda r: [In(Iv(r, [2, 3], -9, 9)), K(i64(1, 0, 0, 2)),
                                               K(np.array(7, I64))])
    case('pad_constant_1d', 'Pad', lambda r: [In(N(r, [5])), K(i64(2, 3))])
    case('pad_f16', 'Pad', lambda r: [In(N(r, [2, 3], dt=F16)), K(i64(1, 1, 1, 1))])

    xs4 = lambda r: N(r, [2, 3, 4, 5])
    case('shape_default', 'Shape', lambda r: [In(xs4(r))])
    case('shape_start1', 'Shape', lambda r: [In(xs4(r))], dict(start=1))
    case('shape_end_neg1', 'Shape', lambda r: [In(xs4(r))], dict(end=-1))
    case('shape_start_neg2', 'Shape', lambda r: [In(xs4(r))], dict(start=-2))
    case('shape_clamp', 'Shape', lambda r: [In(xs4(r))], dict(start=-10, end=10))
    case('shape_start1_end3', 'Shape', lambda r: [In(xs4(r))], dict(start=1, end=3))
    case('shape_empty', 'Shape', lambda r: [In(xs4(r))], dict(start=2, end=2))
    case('shape_op13', 'Shape', lambda r: [In(xs4(r))], opset=13)
    case('shape_scalar', 'Shape', lambda r: [In(N(r, []))])
    case('size_f32', 'Size', lambda r: [In(xs4(r))])
    case('size_i64_scalar', 'Size', lambda r: [In(Iv(r, [], 0, 9))])
    case('identity_f32', 'Identity', lambda r: [In(N(r, [2, 3]))])
    case('identity_f16', 'Identity', lambda r: [In(N(r, [2, 3], dt=F16))])
    case('identity_i64', 'Identity', lambda r: [In(Iv(r, [2, 3], -9, 9))])
    case('identity_bool', 'Identity', lambda r: [In(Bv(r, [2, 3]))])

    for mode in (None, 'DCR', 'CRD'):
        nm = (mode or 'default').lower()
        attrs = dict(blocksize=2) if mode is None else dict(blocksize=2, mode=mode)
        case(f'depth_to_space_{nm}', 'DepthToSpace', lambda r: [In(N(r, [2, 8, 2, 3]))], attrs)
    case('depth_to_space_dcr_b3', 'DepthToSpace', lambda r: [In(N(r, [1, 18, 2, 2]))],
         dict(blocksize=3, mode='DCR'))
    case('depth_to_space_crd_b3', 'DepthToSpace', lambda r: [In(N(r, [1, 18, 2, 2]))],
         dict(blocksize=3, mode='CRD'))
    case('depth_to_space_u8', 'DepthToSpace', lambda r: [In(Iv(r, [1, 8, 2, 3], 0, 255, U8))],
         dict(blocksize=2, mode='CRD'))
    case('depth_to_space_f16', 'DepthToSpace', lambda r: [In(N(r, [1, 4, 2, 3], dt=F16))],
         dict(blocksize=2))
    # ORT 1.30 has DepthToSpace/SpaceToDepth kernels for u8 and i8 only among the integers.
    case('depth_to_space_i8', 'DepthToSpace',
         lambda r: [In(Iv(r, [1, 4, 2, 2], -99, 99, I8))], dict(blocksize=2))
    case('space_to_depth_b2', 'SpaceToDepth', lambda r: [In(N(r, [2, 3, 4, 6]))],
         dict(blocksize=2))
    case('space_to_depth_b3', 'SpaceToDepth', lambda r: [In(N(r, [1, 2, 6, 9]))],
         dict(blocksize=3))
    case('space_to_depth_u8', 'SpaceToDepth', lambda r: [In(Iv(r, [1, 2, 4, 4], 0, 255, U8))],
         dict(blocksize=2))
    case('space_to_depth_f16', 'SpaceToDepth', lambda r: [In(N(r, [1, 2, 4, 4], dt=F16))],
         dict(blocksize=2))
    case('space_to_depth_i8', 'SpaceToDepth', lambda r: [In(Iv(r, [1, 2, 4, 4], -99, 99, I8))],
         dict(blocksize=2))

    # Trilu: k (a constant) shifts the diagonal; k beyond the matrix keeps all or nothing.
    for up in (1, 0):
        for k in (None, 0, 2, -1, -5, 9):
            nm = 'nok' if k is None else f'k{k}'.replace('-', 'neg')
            case(f'trilu_{"upper" if up else "lower"}_{nm}', 'Trilu',
                 lambda r, k=k: [In(N(r, [2, 4, 6]))] + ([] if k is None else
                                                         [K(np.array(k, I64))]),
                 dict(upper=up))
    case('trilu_default_tall', 'Trilu', lambda r: [In(N(r, [6, 4])), K(np.array(1, I64))])
    case('trilu_lower_4d', 'Trilu', lambda r: [In(N(r, [2, 2, 3, 4])), K(np.array(-1, I64))],
         dict(upper=0))
    case('trilu_i32', 'Trilu', lambda r: [In(Iv(r, [5, 3], -9, 9, I32)), K(np.array(1, I64))],
         dict(upper=0))
    case('trilu_i64', 'Trilu', lambda r: [In(Iv(r, [3, 3], -9, 9))])
    case('trilu_bool', 'Trilu', lambda r: [In(Bv(r, [4, 4], 0.7))], dict(upper=0))
    case('trilu_f16', 'Trilu', lambda r: [In(N(r, [3, 5], dt=F16)), K(np.array(-1, I64))])

    # ReverseSequence: lengths in [0, time]; steps past a length are copied.
    case('reverse_sequence_time_major', 'ReverseSequence',
         lambda r: [In(N(r, [4, 3, 2])), In(i64(4, 1, 2))])
    case('reverse_sequence_batch_major', 'ReverseSequence',
         lambda r: [In(N(r, [3, 5, 2])), K(i64(5, 0, 3))], dict(batch_axis=0, time_axis=1))
    case('reverse_sequence_explicit_axes', 'ReverseSequence',
         lambda r: [In(N(r, [5, 2, 3])), K(i64(3, 5))], dict(batch_axis=1, time_axis=0))
    case('reverse_sequence_2d', 'ReverseSequence', lambda r: [In(N(r, [4, 3])), In(i64(2, 4, 3))])
    case('reverse_sequence_4d', 'ReverseSequence',
         lambda r: [In(N(r, [2, 4, 2, 3])), K(i64(4, 2))], dict(batch_axis=0, time_axis=1))
    case('reverse_sequence_i32', 'ReverseSequence',
         lambda r: [In(Iv(r, [3, 4], -9, 9, I32)), K(i64(2, 3, 1, 3))])
    case('reverse_sequence_f16', 'ReverseSequence',
         lambda r: [In(N(r, [4, 2, 2], dt=F16)), K(i64(3, 4))])
    case('reverse_sequence_bool', 'ReverseSequence',
         lambda r: [In(Bv(r, [3, 4])), K(i64(3, 2, 0, 1))], dict(batch_axis=1, time_axis=0))


# ---- generators, constants, indexing ----
def const_node(name, arr):
    return helper.make_node('Constant', [], [name], name=f'Constant_{name}',
                            value=numpy_helper.from_array(np.asarray(arr), name))


def generator_cases():
    case('constant_of_shape_f32', 'ConstantOfShape', [K(i64(2, 3))],
         dict(value=numpy_helper.from_array(np.array([1.25], F32))))
    case('constant_of_shape_i64', 'ConstantOfShape', [K(i64(3, 1, 2))],
         dict(value=numpy_helper.from_array(np.array([7], I64))))
    case('constant_of_shape_default', 'ConstantOfShape', [K(i64(4))])
    case('constant_of_shape_scalar', 'ConstantOfShape', [K(np.zeros([0], I64))],
         dict(value=numpy_helper.from_array(np.array([3.0], F32))))
    case('constant_of_shape_bool', 'ConstantOfShape', [K(i64(2, 2))],
         dict(value=numpy_helper.from_array(np.array([True], BOOL))))

    def shape_cos(r):
        nodes = [helper.make_node('Shape', ['x'], ['s']),
                 helper.make_node('ConstantOfShape', ['s'], ['c'],
                                  value=numpy_helper.from_array(np.array([2], I32))),
                 helper.make_node('Mul', ['c', 'y'], ['z'])]
        return nodes, {'x': N(r, [2, 3]), 'y': Iv(r, [2, 3], -5, 5, I32)}, {}, ['z']
    gcase('constant_of_shape_from_shape', shape_cos)

    case('range_f32', 'Range', [K(np.array(0, F32)), K(np.array(5, F32)), K(np.array(0.5, F32))])
    case('range_i64_neg', 'Range', [K(np.array(10, I64)), K(np.array(0, I64)),
                                    K(np.array(-3, I64))])
    case('range_i32', 'Range', [K(np.array(-5, I32)), K(np.array(7, I32)), K(np.array(4, I32))])
    case('range_f32_frac', 'Range', [K(np.array(1.5, F32)), K(np.array(-2.25, F32)),
                                     K(np.array(-0.75, F32))])
    case('range_empty', 'Range', [K(np.array(3, I64)), K(np.array(3, I64)), K(np.array(1, I64))])

    def range_add(r):
        nodes = [helper.make_node('Range', ['s', 'l', 'd'], ['rg']),
                 helper.make_node('Add', ['rg', 'x'], ['y'])]
        inits = {'s': np.array(0, I64), 'l': np.array(6, I64), 'd': np.array(1, I64)}
        return nodes, {'x': Iv(r, [2, 6], -9, 9)}, inits, ['y']
    gcase('range_then_add', range_add)

    # Constant: every value_* attribute form, each feeding an Add with an input.
    forms = [('tensor', dict(value=numpy_helper.from_array(np.arange(6, dtype=F32).reshape(2, 3)
                                                           * 0.5, 'v')), [2, 3], F32),
             ('value_float', dict(value_float=2.5), [2, 3], F32),
             ('value_floats', dict(value_floats=[1.0, -2.0, 3.5]), [2, 3], F32),
             ('value_int', dict(value_int=7), [2, 3], I64),
             ('value_ints', dict(value_ints=[1, -2, 3]), [2, 3], I64),
             ('tensor_i32_scalar', dict(value=numpy_helper.from_array(np.array(-4, I32), 'v')),
              [3], I32)]
    for nm, attrs, xs, dt in forms:
        def build(r, attrs=attrs, xs=xs, dt=dt):
            nodes = [helper.make_node('Constant', [], ['c'], name='Constant_0', **attrs),
                     helper.make_node('Add', ['x', 'c'], ['y'])]
            x = N(r, xs) if dt == F32 else Iv(r, xs, -9, 9, dt)
            return nodes, {'x': x}, {}, ['y']
        gcase(f'constant_{nm}', build)
    case('constant_alone', 'Constant', [],
         dict(value=numpy_helper.from_array(np.array([[1, 2], [3, 4]], I64), 'v')))

    def onehot(name, idx, depth, vals, attrs=None):
        case(name, 'OneHot', lambda r: [In(idx(r)), K(depth), K(vals)], attrs or {})
    idx64 = lambda r: Iv(r, [2, 3], -5, 5)
    v01 = np.array([0, 1], F32)
    onehot('onehot_last', idx64, np.array(5, I64), v01)
    onehot('onehot_axis0', idx64, np.array(5, I64), v01, dict(axis=0))
    onehot('onehot_axis1', idx64, np.array(5, I64), v01, dict(axis=1))
    onehot('onehot_axis_neg2', idx64, np.array([5], I64), np.array([-1.0, 2.5], F32),
           dict(axis=-2))
    onehot('onehot_i64_values', lambda r: Iv(r, [4], 0, 3, I64), np.array(3, I64),
           np.array([-1, 3], I64))
    onehot('onehot_i32_indices', lambda r: Iv(r, [4], -3, 3, I32), np.array(3, F32), v01)
    onehot('onehot_f32_depth', lambda r: Iv(r, [5], -4, 4), np.array(4.0, F32), v01)
    onehot('onehot_f32_all', lambda r: Iv(r, [5], 0, 4, F32), np.array(4, F32), v01)

    def cumsum(name, x, axis, attrs=None, adt=I64):
        case(name, 'CumSum', lambda r: [In(x(r)), K(np.array(axis, adt))], attrs or {})
    xc = lambda r: N(r, [3, 4])
    cumsum('cumsum_axis0', xc, 0)
    cumsum('cumsum_axis1', xc, 1)
    cumsum('cumsum_axis_neg1', xc, -1)
    cumsum('cumsum_exclusive', xc, 1, dict(exclusive=1))
    cumsum('cumsum_reverse', xc, 1, dict(reverse=1))
    cumsum('cumsum_exclusive_reverse', xc, 0, dict(exclusive=1, reverse=1))
    cumsum('cumsum_i64', lambda r: Iv(r, [2, 3, 4], -9, 9), 2, dict(reverse=1))
    cumsum('cumsum_i32_axis_i32', lambda r: Iv(r, [2, 5], -9, 9, I32), 1, adt=I32)
    cumsum('cumsum_1d', lambda r: N(r, [9]), 0, dict(exclusive=1))

    def nonzero(name, arr):
        gcase(name, lambda r: ([const_node('c', arr(r)),
                                helper.make_node('NonZero', ['c'], ['y'], name='NonZero_0')],
                               {}, {}, ['y']))
    nonzero('nonzero_f32_2d', lambda r: N(r, [3, 4]) * Bv(r, [3, 4]))
    nonzero('nonzero_bool_3d', lambda r: Bv(r, [2, 3, 4], 0.3))
    nonzero('nonzero_i64_1d', lambda r: Iv(r, [8], -2, 3))
    nonzero('nonzero_all_zero', lambda r: np.zeros([2, 3], F32))

    def nonzero_chain(r):
        nodes = [const_node('c', Bv(r, [3, 4], 0.4)),
                 helper.make_node('NonZero', ['c'], ['nz']),
                 helper.make_node('Transpose', ['nz'], ['t'], perm=[1, 0]),
                 helper.make_node('GatherND', ['x', 't'], ['y'])]
        return nodes, {'x': N(r, [3, 4])}, {}, ['y']
    gcase('nonzero_gathernd_chain', nonzero_chain)


def index_cases():
    case('gather_axis0', 'Gather', lambda r: [In(N(r, [5, 4])), In(i64(2, -1, 0))])
    case('gather_axis1_i32', 'Gather', lambda r: [In(N(r, [3, 5])), In(np.array([4, 0, 2], I32))],
         dict(axis=1))
    case('gather_scalar_idx', 'Gather', lambda r: [In(N(r, [5, 4])), In(np.array(3, I64))])
    case('gather_axis_neg1_2d_idx', 'Gather', lambda r: [In(N(r, [2, 3, 4])),
                                                         In(i64(0, 3, 1, -2).reshape(2, 2))],
         dict(axis=-1))
    case('gather_const_idx', 'Gather', lambda r: [In(N(r, [4, 3])), K(np.array(-1, I64))],
         dict(axis=0))
    case('gather_i64_data', 'Gather', lambda r: [In(Iv(r, [4], 0, 99)), K(i64(3, 0))])
    case('gather_f16', 'Gather', lambda r: [In(N(r, [4, 3], dt=F16)), In(i64(1, 3))])
    case('gather_embedding', 'Gather', lambda r: [K(N(r, [10, 6])), In(Iv(r, [2, 3], 0, 10))])

    case('gather_elements_axis1', 'GatherElements',
         lambda r: [In(N(r, [3, 4])), In(Iv(r, [3, 2], -4, 4))], dict(axis=1))
    case('gather_elements_axis0', 'GatherElements',
         lambda r: [In(N(r, [3, 4])), In(Iv(r, [2, 4], 0, 3))], dict(axis=0))
    case('gather_elements_3d', 'GatherElements',
         lambda r: [In(N(r, [2, 3, 4])), In(Iv(r, [2, 3, 2], -4, 4, I32))], dict(axis=-1))
    case('gather_elements_i64', 'GatherElements',
         lambda r: [In(Iv(r, [3, 3], -9, 9)), In(Iv(r, [3, 3], 0, 3))], dict(axis=0))

    case('gather_nd_partial', 'GatherND', lambda r: [In(N(r, [2, 3, 4])),
                                                     In(i64(0, 1, 1, -1).reshape(2, 2))])
    case('gather_nd_full', 'GatherND',
         lambda r: [In(N(r, [2, 3, 4])), In(i64(0, 1, 2, 1, 2, 3, 0, 0, -1).reshape(3, 3))])
    case('gather_nd_rank1_idx', 'GatherND', lambda r: [In(N(r, [3, 4])), In(i64(2))])
    case('gather_nd_batch1', 'GatherND',
         lambda r: [In(N(r, [2, 3, 4])), In(i64(1, 2).reshape(2, 1))], dict(batch_dims=1))
    case('gather_nd_batch1_deep', 'GatherND',
         lambda r: [In(N(r, [2, 3, 4])), In(i64(0, 1, 2, 3, 1, 0, 2, -1).reshape(2, 2, 2))],
         dict(batch_dims=1))
    case('gather_nd_batch2', 'GatherND',
         lambda r: [In(N(r, [2, 3, 4, 2])), In(Iv(r, [2, 3, 1, 1], 0, 4))], dict(batch_dims=2))
    case('gather_nd_i64', 'GatherND',
         lambda r: [In(Iv(r, [3, 3], -9, 9)), In(i64(2, 0).reshape(1, 2))])

    case('scatter_nd_rows', 'ScatterND', lambda r: [In(N(r, [4, 5])), In(i64(1, 3).reshape(2, 1)),
                                                    In(N(r, [2, 5]))])
    case('scatter_nd_elems', 'ScatterND',
         lambda r: [In(N(r, [3, 4])), In(i64(0, 1, 2, 3, 1, 0).reshape(3, 2)), In(N(r, [3]))])
    case('scatter_nd_3d', 'ScatterND',
         lambda r: [In(N(r, [2, 3, 4])), In(i64(1, 0, 0, 2).reshape(2, 2)), In(N(r, [2, 4]))])
    case('scatter_nd_negative_idx', 'ScatterND',
         lambda r: [In(N(r, [4, 3])), In(i64(-1, 0).reshape(2, 1)), In(N(r, [2, 3]))])
    case('scatter_nd_add_dups', 'ScatterND',
         lambda r: [In(N(r, [4, 3])), In(i64(1, 3, 1, 1).reshape(4, 1)), In(N(r, [4, 3]))],
         dict(reduction='add'))
    case('scatter_nd_mul_dups', 'ScatterND',
         lambda r: [In(N(r, [4, 3])), In(i64(0, 2, 0).reshape(3, 1)), In(N(r, [3, 3]))],
         dict(reduction='mul'))
    case('scatter_nd_none_explicit', 'ScatterND',
         lambda r: [In(N(r, [5])), In(i64(4, 0).reshape(2, 1)), In(N(r, [2]))],
         dict(reduction='none'))
    case('scatter_nd_i64', 'ScatterND',
         lambda r: [In(Iv(r, [4, 2], -9, 9)), In(i64(2).reshape(1, 1)), In(Iv(r, [1, 2], -9, 9))])
    case('scatter_nd_bev', 'ScatterND',
         lambda r: [K(np.zeros([6, 5, 3], F32)), In(i64(0, 1, 4, 2, 5, 4, 3, 0).reshape(4, 2)),
                    In(N(r, [4, 3]))])

    def perm_idx(r, shape, axis):
        """Indices unique along axis (each output position written once)."""
        idx = np.stack([r.permutation(shape[axis]) for _ in range(int(np.prod(shape)) //
                                                                   shape[axis])])
        idx = idx.reshape([s for i, s in enumerate(shape) if i != axis] + [shape[axis]])
        return np.moveaxis(idx, -1, axis).astype(I64)
    case('scatter_elements_axis0', 'ScatterElements',
         lambda r: [In(N(r, [3, 3])), In(perm_idx(r, [3, 3], 0)[:2]), In(N(r, [2, 3]))],
         dict(axis=0))
    case('scatter_elements_axis1', 'ScatterElements',
         lambda r: [In(N(r, [3, 4])), In(perm_idx(r, [3, 4], 1)[:, :2]), In(N(r, [3, 2]))],
         dict(axis=1))
    case('scatter_elements_negative_idx', 'ScatterElements',
         lambda r: [In(N(r, [3, 4])), In(perm_idx(r, [3, 4], 1)[:, :3] - 4), In(N(r, [3, 3]))],
         dict(axis=-1))
    case('scatter_elements_add', 'ScatterElements',
         lambda r: [In(N(r, [3, 4])), In(Iv(r, [3, 5], 0, 4)), In(N(r, [3, 5]))],
         dict(axis=1, reduction='add'))
    case('scatter_elements_mul', 'ScatterElements',
         lambda r: [In(N(r, [3, 4])), In(Iv(r, [4, 4], 0, 3)), In(N(r, [4, 4]))],
         dict(axis=0, reduction='mul'))
    case('scatter_elements_none_explicit', 'ScatterElements',
         lambda r: [In(N(r, [5])), In(i64(3, 0)), In(N(r, [2]))], dict(reduction='none'))
    case('scatter_elements_i64_3d', 'ScatterElements',
         lambda r: [In(Iv(r, [2, 3, 4], -9, 9)), In(perm_idx(r, [2, 3, 4], 2)[:, :, :2]),
                    In(Iv(r, [2, 3, 2], -9, 9))], dict(axis=2))
    case('scatter_elements_i32_idx', 'ScatterElements',
         lambda r: [In(N(r, [4, 3])), In(perm_idx(r, [4, 3], 0)[:1].astype(I32)), In(N(r, [1, 3]))],
         dict(axis=0))


# ---- pooling, resampling ----
def pool_cases():
    def mp(name, xs, attrs, nout=1, dt=F32):
        case(name, 'MaxPool', lambda r: [In(D(r, xs, 0.125 if dt == F32 else 1, dt)
                                            if dt != U8 else
                                            r.permutation(256)[:int(np.prod(xs))].reshape(xs)
                                            .astype(U8))], attrs, nout=nout)
    x = [1, 2, 8, 8]
    mp('maxpool_k2s2', x, dict(kernel_shape=[2, 2], strides=[2, 2]))
    mp('maxpool_k3s1p1', x, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    mp('maxpool_k3s2p1', x, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    mp('maxpool_k3s2_ceil', [1, 2, 8, 8], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1))
    mp('maxpool_k3s2p1_ceil', [1, 2, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                 pads=[1, 1, 1, 1], ceil_mode=1))
    mp('maxpool_k2s2_ceil_odd', [1, 1, 7, 7], dict(kernel_shape=[2, 2], strides=[2, 2],
                                                   ceil_mode=1))
    mp('maxpool_dilation2', x, dict(kernel_shape=[2, 2], dilations=[2, 2]))
    mp('maxpool_dilation2_pad_ceil', [1, 1, 9, 9], dict(kernel_shape=[3, 3], dilations=[2, 2],
                                                        strides=[2, 2], pads=[1, 1, 1, 1],
                                                        ceil_mode=1))
    mp('maxpool_same_upper', [1, 2, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                auto_pad='SAME_UPPER'))
    mp('maxpool_same_lower', [1, 2, 7, 7], dict(kernel_shape=[2, 2], strides=[2, 2],
                                                auto_pad='SAME_LOWER'))
    mp('maxpool_valid', [1, 2, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad='VALID'))
    mp('maxpool_pads_asym', [1, 2, 6, 6], dict(kernel_shape=[3, 3], pads=[0, 1, 2, 0]))
    mp('maxpool_rect', [1, 2, 6, 9], dict(kernel_shape=[2, 3], strides=[1, 2]))
    mp('maxpool_1d', [2, 3, 9], dict(kernel_shape=[3], strides=[2], pads=[1, 1]))
    mp('maxpool_k1s1', [1, 2, 3, 3], dict(kernel_shape=[1, 1]))
    mp('maxpool_indices', [2, 3, 6, 6], dict(kernel_shape=[2, 2], strides=[2, 2]), nout=2)
    mp('maxpool_indices_pad', [1, 2, 5, 5], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                 pads=[1, 1, 1, 1]), nout=2)
    mp('maxpool_indices_storage1', [1, 2, 4, 6], dict(kernel_shape=[2, 2], strides=[2, 2],
                                                      storage_order=1), nout=2)
    mp('maxpool_storage0_explicit', [1, 2, 4, 4], dict(kernel_shape=[2, 2], storage_order=0))
    mp('maxpool_i8', [1, 2, 4, 4], dict(kernel_shape=[2, 2], strides=[2, 2]), dt=I8)
    mp('maxpool_u8', [1, 2, 4, 4], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), dt=U8)
    mp('maxpool_f16', [1, 2, 4, 4], dict(kernel_shape=[2, 2], strides=[2, 2]), dt=F16)

    def ap(name, xs, attrs):
        case(name, 'AveragePool', lambda r: [In(N(r, xs))], attrs)
    ap('avgpool_k3s1p1_excl', x, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    ap('avgpool_k3s1p1_incl', x, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      count_include_pad=1))
    ap('avgpool_k2s2', x, dict(kernel_shape=[2, 2], strides=[2, 2]))
    ap('avgpool_k3s2p1_ceil_excl', [1, 2, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                      pads=[1, 1, 1, 1], ceil_mode=1))
    ap('avgpool_k3s2p1_ceil_incl', [1, 2, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                      pads=[1, 1, 1, 1], ceil_mode=1,
                                                      count_include_pad=1))
    ap('avgpool_k2s2_ceil_odd', [1, 1, 7, 7], dict(kernel_shape=[2, 2], strides=[2, 2],
                                                   ceil_mode=1))
    ap('avgpool_same_upper', [1, 2, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                auto_pad='SAME_UPPER'))
    ap('avgpool_same_lower_incl', [1, 2, 7, 7], dict(kernel_shape=[2, 2], strides=[1, 1],
                                                     auto_pad='SAME_LOWER',
                                                     count_include_pad=1))
    ap('avgpool_valid', [1, 2, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2],
                                           auto_pad='VALID'))
    ap('avgpool_pads_asym_incl', [1, 2, 6, 6], dict(kernel_shape=[3, 3], pads=[0, 1, 2, 0],
                                                    count_include_pad=1))
    ap('avgpool_pads_asym_excl', [1, 2, 6, 6], dict(kernel_shape=[3, 3], pads=[0, 1, 2, 0]))
    ap('avgpool_1d', [2, 3, 9], dict(kernel_shape=[3], strides=[2], pads=[1, 1]))
    ap('avgpool_rect', [1, 2, 6, 9], dict(kernel_shape=[2, 3], strides=[2, 3]))
    case('avgpool_f16', 'AveragePool', lambda r: [In(N(r, [1, 2, 4, 4], dt=F16))],
         dict(kernel_shape=[2, 2], strides=[2, 2]))

    case('global_avgpool_4d', 'GlobalAveragePool', lambda r: [In(N(r, [2, 3, 4, 5]))])
    case('global_avgpool_3d', 'GlobalAveragePool', lambda r: [In(N(r, [2, 3, 7]))])
    case('global_avgpool_1x1', 'GlobalAveragePool', lambda r: [In(N(r, [1, 4, 1, 1]))])
    case('global_avgpool_f16', 'GlobalAveragePool', lambda r: [In(N(r, [1, 2, 3, 3], dt=F16))])

    case('global_maxpool_4d', 'GlobalMaxPool', lambda r: [In(N(r, [2, 3, 4, 5]))])
    case('global_maxpool_3d', 'GlobalMaxPool', lambda r: [In(N(r, [2, 3, 7]))])
    case('global_maxpool_5d', 'GlobalMaxPool', lambda r: [In(N(r, [1, 2, 3, 2, 4]))])
    case('global_maxpool_1x1', 'GlobalMaxPool', lambda r: [In(N(r, [1, 4, 1, 1]))])
    case('global_maxpool_f16', 'GlobalMaxPool', lambda r: [In(N(r, [1, 2, 3, 3], dt=F16))])


def resize_cases():
    # Odd input sizes: with half_pixel and sizes, no output maps exactly onto a .5 source
    # coordinate, so nearest rounding never depends on float division details. Scales 2 and
    # 0.5 give exact coordinates (ties there are exact and fixed by nearest_mode).
    xs = [1, 2, 5, 7]
    x = lambda r: N(r, xs)
    empty = np.zeros([0], F32)

    def rs(name, attrs, scales=None, sizes=None, opset=17, xin=x):
        if scales is not None:
            ins = lambda r: [In(xin(r)), K(empty), K(np.array(scales, F32))]
        else:
            ins = lambda r: [In(xin(r)), None, None, K(np.array(sizes, I64))]
        case(name, 'Resize', ins, attrs, opset=opset)

    geoms = [('up2', [1, 1, 2, 2], None), ('down2', [1, 1, 0.5, 0.5], None),
             ('sizes_up', None, [1, 2, 8, 11]), ('sizes_down', None, [1, 2, 3, 4])]
    for nmode in ('round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'):
        for g, sc, sz in geoms:
            rs(f'resize_nearest_{nmode}_{g}', dict(mode='nearest', nearest_mode=nmode),
               sc, sz)
    rs('resize_nearest_default_attrs_up2', {}, [1, 1, 2, 2])
    rs('resize_nearest_asymmetric_floor_up2', dict(mode='nearest', nearest_mode='floor',
                                                   coordinate_transformation_mode='asymmetric'),
       [1, 1, 2, 2])
    rs('resize_nearest_asymmetric_floor_up3', dict(mode='nearest', nearest_mode='floor',
                                                   coordinate_transformation_mode='asymmetric'),
       [1, 1, 3, 3])
    rs('resize_nearest_asymmetric_rpf_sizes', dict(mode='nearest',
                                                   coordinate_transformation_mode='asymmetric'),
       None, [1, 2, 9, 11])
    rs('resize_nearest_align_corners_rpc_sizes', dict(
        mode='nearest', nearest_mode='round_prefer_ceil',
        coordinate_transformation_mode='align_corners'), None, [1, 2, 8, 10])
    rs('resize_nearest_pytorch_half_pixel_floor_up2', dict(
        mode='nearest', nearest_mode='floor',
        coordinate_transformation_mode='pytorch_half_pixel'), [1, 1, 2, 2])
    rs('resize_nearest_up2_op13', dict(mode='nearest', nearest_mode='floor',
                                       coordinate_transformation_mode='asymmetric'),
       [1, 1, 2, 2], opset=13)
    rs('resize_nearest_rect_scales', dict(mode='nearest', nearest_mode='floor',
                                          coordinate_transformation_mode='asymmetric'),
       [1, 1, 2, 3])
    for ctm in ('half_pixel', 'align_corners', 'asymmetric', 'pytorch_half_pixel'):
        for g, sc, sz in geoms:
            rs(f'resize_linear_{ctm}_{g}', dict(mode='linear', coordinate_transformation_mode=ctm),
               sc, sz)
    rs('resize_linear_pytorch_half_pixel_to1', dict(
        mode='linear', coordinate_transformation_mode='pytorch_half_pixel'), None, [1, 2, 1, 4])
    rs('resize_linear_default_ctm_up2', dict(mode='linear'), [1, 1, 2, 2])
    rs('resize_linear_scale_1_5', dict(mode='linear'), [1, 1, 1.5, 1.5])
    rs('resize_linear_op13', dict(mode='linear', coordinate_transformation_mode='align_corners'),
       None, [1, 2, 9, 13], opset=13)
    rs('resize_linear_batch2', dict(mode='linear'), [1, 1, 2, 2],
       xin=lambda r: N(r, [2, 3, 3, 4]))
    rs('resize_linear_f16', dict(mode='linear'), [1, 1, 2, 2],
       xin=lambda r: N(r, [1, 1, 3, 3], dt=F16))

    for mode in ('bilinear', 'nearest'):
        for pad in ('zeros', 'border'):
            for ac in (0, 1):
                case(f'grid_sample_{mode}_{pad}_ac{ac}', 'GridSample',
                     lambda r: [In(N(r, [1, 2, 5, 6])), In(U(r, [1, 4, 5, 2], -1.15, 1.15))],
                     dict(mode=mode, padding_mode=pad, align_corners=ac))
    case('grid_sample_default', 'GridSample',
         lambda r: [In(N(r, [2, 3, 4, 4])), In(U(r, [2, 3, 3, 2], -1.1, 1.1))])
    case('grid_sample_bilinear_const_grid', 'GridSample',
         lambda r: [In(N(r, [1, 2, 6, 6])), K(U(r, [1, 5, 7, 2], -1, 1))],
         dict(mode='bilinear', padding_mode='zeros', align_corners=0))


# ---- short chains as exporters write them ----
def chain_cases():
    def conv_bn_relu(r):
        nodes = [helper.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1]),
                 helper.make_node('BatchNormalization', ['c', 's', 'b', 'm', 'v'], ['n'],
                                  epsilon=1e-3),
                 helper.make_node('Relu', ['n'], ['y'])]
        inits = {'w': N(r, [4, 3, 3, 3], 0.3), 's': U(r, [4], 0.5, 1.5), 'b': N(r, [4], 0.2),
                 'm': N(r, [4], 0.2), 'v': U(r, [4], 0.3, 2)}
        return nodes, {'x': N(r, [1, 3, 6, 6])}, inits, ['y']
    gcase('chain_conv_bn_relu', conv_bn_relu)

    def linear_gelu(r):
        nodes = [helper.make_node('MatMul', ['x', 'w'], ['mm']),
                 helper.make_node('Add', ['mm', 'b'], ['h']),
                 helper.make_node('Div', ['h', 'sqrt2'], ['hd']),
                 helper.make_node('Erf', ['hd'], ['e']),
                 helper.make_node('Add', ['e', 'one'], ['e1']),
                 helper.make_node('Mul', ['h', 'e1'], ['g']),
                 helper.make_node('Mul', ['g', 'half'], ['y'])]
        inits = {'w': N(r, [8, 6], 0.4), 'b': N(r, [6], 0.1),
                 'sqrt2': np.array(1.4142135381698608, F32), 'one': np.array(1, F32),
                 'half': np.array(0.5, F32)}
        return nodes, {'x': N(r, [2, 3, 8])}, inits, ['y']
    gcase('chain_linear_gelu_erf', linear_gelu)

    def attention(r):
        nodes = [helper.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
                 helper.make_node('MatMul', ['q', 'kt'], ['s']),
                 helper.make_node('Mul', ['s', 'scale'], ['ss']),
                 helper.make_node('Softmax', ['ss'], ['p'], axis=-1),
                 helper.make_node('MatMul', ['p', 'v'], ['y'])]
        return (nodes, {'q': N(r, [1, 2, 5, 8]), 'k': N(r, [1, 2, 6, 8]), 'v': N(r, [1, 2, 6, 8])},
                {'scale': np.array(8 ** -0.5, F32)}, ['y'])
    gcase('chain_attention', attention)

    def dyn_reshape(r):
        nodes = [helper.make_node('Shape', ['x'], ['s']),
                 helper.make_node('Gather', ['s', 'i0'], ['d0'], axis=0),
                 helper.make_node('Unsqueeze', ['d0', 'ax0'], ['d0u']),
                 helper.make_node('Concat', ['d0u', 'm1'], ['shp'], axis=0),
                 helper.make_node('Reshape', ['x', 'shp'], ['y'])]
        inits = {'i0': np.array(0, I64), 'ax0': i64(0), 'm1': i64(-1)}
        return nodes, {'x': N(r, [2, 3, 4])}, inits, ['y']
    gcase('chain_shape_gather_reshape', dyn_reshape)

    def fpn_merge(r):
        nodes = [helper.make_node('Resize', ['c', '', 'sc'], ['u'], mode='nearest',
                                  nearest_mode='floor',
                                  coordinate_transformation_mode='asymmetric'),
                 helper.make_node('Add', ['u', 'f'], ['s']),
                 helper.make_node('Concat', ['s', 'f'], ['y'], axis=1)]
        inits = {'sc': np.array([1, 1, 2, 2], F32)}
        return nodes, {'c': N(r, [1, 2, 3, 4]), 'f': N(r, [1, 2, 6, 8])}, inits, ['y']
    gcase('chain_fpn_upsample_add_concat', fpn_merge)

    def heat_nms(r):
        nodes = [helper.make_node('Sigmoid', ['x'], ['h']),
                 helper.make_node('MaxPool', ['h'], ['m'], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1]),
                 helper.make_node('Equal', ['h', 'm'], ['eq']),
                 helper.make_node('Cast', ['eq'], ['eqf'], to=onnx.TensorProto.FLOAT),
                 helper.make_node('Mul', ['h', 'eqf'], ['k']),
                 helper.make_node('Reshape', ['k', 'flat'], ['kf']),
                 helper.make_node('TopK', ['kf', 'kk'], ['y', 'idx'], axis=-1)]
        inits = {'flat': i64(1, -1), 'kk': i64(5)}
        return nodes, {'x': D(r, [1, 2, 6, 6], 0.05)}, inits, ['y', 'idx']
    gcase('chain_heatmap_peaks_topk', heat_nms)


def build_all():
    for fn in (unary_cases, activation_cases, binary_cases, compare_cases, cast_cases,
               conv_cases, matmul_cases, norm_cases, reduce_cases, shape_cases, generator_cases,
               index_cases, pool_cases, resize_cases, chain_cases, old_opset_cases):
        fn()


# ---- opsets 7-12: the versioned forms (attributes that later became inputs, old semantics) ----
def old_opset_cases():
    x3 = lambda r: N(r, [3, 4, 5], 2.0)
    for op in ('Softmax', 'LogSoftmax', 'Hardmax'):
        s = snake(op)
        xin = (lambda r: D(r, [3, 4, 5])) if op == 'Hardmax' else x3
        # before 13 the input is coerced to 2-D at 'axis': one normalisation per row of [3, 20]
        case(f'{s}_op11_default', op, lambda r: [In(xin(r))], opset=11)
        case(f'{s}_op11_axis0', op, lambda r: [In(xin(r))], dict(axis=0), opset=11)
        case(f'{s}_op11_axis_neg2', op, lambda r: [In(xin(r))], dict(axis=-2), opset=11)
    case('clip_attrs_op7', 'Clip', lambda r: [In(N(r, [3, 4]))], dict(min=-0.5, max=0.7), opset=7)
    case('clip_min_attr_op7', 'Clip', lambda r: [In(N(r, [3, 4]))], dict(min=-0.2), opset=7)
    xp = lambda r: N(r, [1, 2, 3, 4])
    case('pad_attrs_value_op7', 'Pad', lambda r: [In(xp(r))],
         dict(pads=[0, 0, 1, 2, 0, 0, 2, 1], value=1.5), opset=7)
    case('pad_attrs_reflect_op7', 'Pad', lambda r: [In(xp(r))],
         dict(pads=[0, 0, 2, 1, 0, 0, 1, 2], mode='reflect'), opset=7)
    case('pad_attrs_edge_op7', 'Pad', lambda r: [In(xp(r))],
         dict(pads=[0, 1, 0, 2, 0, 0, 1, 0], mode='edge'), opset=7)
    case('slice_attrs_op9', 'Slice', lambda r: [In(N(r, [4, 5, 6]))],
         dict(starts=[1, -4], ends=[3, 1000], axes=[0, 2]), opset=9)
    case('slice_attrs_no_axes_op7', 'Slice', lambda r: [In(N(r, [4, 5, 6]))],
         dict(starts=[0, 1], ends=[-1, 4]), opset=7)
    case('dropout_ratio_op7', 'Dropout', lambda r: [In(N(r, [2, 3]))], dict(ratio=0.3), opset=7)
    case('dropout_ratio_op10', 'Dropout', lambda r: [In(N(r, [2, 3]))], dict(ratio=0.3), nout=2,
         opset=10)
    case('squeeze_attr_op11', 'Squeeze', lambda r: [In(N(r, [1, 3, 1, 4]))], dict(axes=[0, -2]),
         opset=11)
    case('unsqueeze_attr_op11', 'Unsqueeze', lambda r: [In(N(r, [3, 4]))], dict(axes=[0, 3]),
         opset=11)
    case('split_attr_op11', 'Split', lambda r: [In(N(r, [2, 6, 3]))], dict(axis=1, split=[1, 2, 3]),
         nout=3, opset=11)
    case('reduce_sum_attr_op11', 'ReduceSum', lambda r: [In(N(r, [2, 3, 4]))],
         dict(axes=[0, -1], keepdims=0), opset=11)
    case('reduce_mean_attr_op9', 'ReduceMean', lambda r: [In(N(r, [2, 3, 4]))], dict(axes=[1]),
         opset=9)
    case('topk_attr_op9', 'TopK', lambda r: [In(D(r, [3, 8]))], dict(k=3), nout=2, opset=9)
    case('batchnorm_spatial0_op7', 'BatchNormalization',
         lambda r: [In(N(r, [2, 3, 2])), K(U(r, [3, 2], 0.5, 1.5)), K(N(r, [3, 2], 0.3)),
                    K(N(r, [3, 2], 0.5)), K(U(r, [3, 2], 0.2, 2.0))], dict(spatial=0), opset=7)
    case('batchnorm_spatial1_op7', 'BatchNormalization',
         lambda r: [In(N(r, [2, 3, 2, 2])), K(U(r, [3], 0.5, 1.5)), K(N(r, [3], 0.3)),
                    K(N(r, [3], 0.5)), K(U(r, [3], 0.2, 2.0))], dict(spatial=1), opset=7)


# ---- writing fixtures ----
def write_fixtures(out_dir, cases, jobs):
    os.makedirs(out_dir, exist_ok=True)
    for d in os.listdir(out_dir):
        p = os.path.join(out_dir, d)
        if os.path.isdir(p) and os.path.exists(os.path.join(p, 'model.onnx')):
            shutil.rmtree(p)
    lines = []
    for c in cases:
        d = os.path.join(out_dir, c['name'])
        os.makedirs(d)
        onnx.save(c['model'], os.path.join(d, 'model.onnx'))
        fio.save_npz(os.path.join(d, 'inputs.npz'), c['inputs'])
        lines.append('\t'.join(os.path.join(d, f) for f in ('model.onnx', 'inputs.npz',
                                                            'expected.npz')))
    failures = {}
    with tempfile.TemporaryDirectory() as tmp:
        chunks = [lines[i::jobs] for i in range(jobs)]
        procs = []
        for i, ch in enumerate(chunks):
            lst = os.path.join(tmp, f'batch{i}.txt')
            with open(lst, 'w') as f:
                f.write('\n'.join(ch) + '\n')
            procs.append(subprocess.Popen(['node', fio.ORT_RUN, '--batch', lst, '--threads', '1'],
                                          stdout=subprocess.PIPE, text=True))
        for p in procs:
            out, _ = p.communicate()
            for ln in out.splitlines():
                if ln.startswith('fail '):
                    model, msg = ln[5:].split('\t', 1)
                    failures[os.path.basename(os.path.dirname(model))] = msg
    ok = []
    for c in cases:
        d = os.path.join(out_dir, c['name'])
        if c['name'] in failures:
            shutil.rmtree(d)
            continue
        fix_output_shapes(c, d)
        ok.append(c)
    with open(os.path.join(out_dir, 'cases.tsv'), 'w') as f:
        f.write('# case\tops\topset\tinputs\toutputs (generated by tools/gen/ops_cases.py)\n')
        for c in ok:
            g = c['model'].graph
            f.write('\t'.join([c['name'], ','.join(c['ops']), str(c['opset']),
                               ','.join(i.name for i in g.input) or '-',
                               ','.join(o.name for o in g.output)]) + '\n')
    return ok, failures


def fix_output_shapes(c, d):
    """Makes graph output shapes concrete from ORT's results; checks dtypes agree."""
    exp = fio.load_npz(os.path.join(d, 'expected.npz'))
    model = c['model']
    changed = False
    for o in model.graph.output:
        arr = exp[o.name]
        tt = o.type.tensor_type
        want = mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]
        if arr.dtype != want:
            raise RuntimeError(f"{c['name']}: output {o.name} is {arr.dtype}, graph says {want}")
        dims = [dd.dim_value if dd.HasField('dim_value') else None for dd in tt.shape.dim]
        if not tt.HasField('shape') or dims != list(arr.shape):
            tt.ClearField('shape')
            tt.shape.SetInParent()
            for s in arr.shape:
                tt.shape.dim.add().dim_value = s
            changed = True
        if arr.dtype.kind == 'f' and not np.all(np.isfinite(arr)) and \
                not c['name'].startswith('cast_f32_to_f16_special'):
            print(f"warning: {c['name']}: non-finite values in {o.name}", file=sys.stderr)
    if changed:
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(d, 'model.onnx'))


def dir_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(fio.ROOT, 'tests', 'fixtures', 'ops'))
    ap.add_argument('--only', help='regex: build only matching cases (no cleanup of others)')
    ap.add_argument('--list', action='store_true', help='list case names and exit')
    ap.add_argument('--jobs', type=int, default=2, help='parallel ORT processes')
    args = ap.parse_args()
    build_all()
    cases = CASES
    if args.only:
        cases = [c for c in CASES if re.search(args.only, c['name'])]
    if args.list:
        for c in cases:
            print(c['name'], ','.join(c['ops']), c['opset'])
        return 0
    out = args.out
    if args.only:
        out = tempfile.mkdtemp(prefix='ops_cases_')
    ok, failures = write_fixtures(out, cases, max(1, args.jobs))
    ops = sorted({o for c in ok for o in c['ops']})
    print(f'ops_cases: {len(ok)} cases ({len(ops)} operators) in {out}, '
          f'{dir_size(out) / 1e6:.2f} MB')
    for name, msg in sorted(failures.items()):
        print(f'ops_cases: ORT failed on {name}: {msg[:300]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
