#!/usr/bin/python3
"""case_lib.py: the case-building library of ops_cases.py: dtype shorthands, seeded data
helpers, In (graph input) / K (initializer) markers, case() for one-node models, gcase() for
short chains, and the CASES registry they append to."""
import re

import numpy as np
import onnx
from onnx import helper, numpy_helper, mapping

import fixture_io as fio

F32, F16, I64, I32, I8, U8, BOOL = (np.float32, np.float16, np.int64, np.int32, np.int8,
                                    np.uint8, np.bool_)
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class In:
    """A graph input, fed from inputs.npz."""
    def __init__(self, arr):
        self.arr = np.asarray(arr)


class K:
    """An initializer: a constant at plan time."""
    def __init__(self, arr):
        self.arr = np.asarray(arr)


CASES = []   # dicts: name, model, inputs, ops, opset


# ---- data helpers (r is the case's numpy Generator) ----
def U(r, shape, lo=-1.0, hi=1.0, dt=F32):
    return r.uniform(lo, hi, size=shape).astype(dt)


def N(r, shape, s=1.0, dt=F32):
    return (r.standard_normal(size=shape) * s).astype(dt)


def D(r, shape, step=0.125, dt=F32):
    """Distinct, exactly representable values (no ties), shuffled."""
    n = int(np.prod(shape, dtype=np.int64))
    v = (r.permutation(n) - n // 2) * step
    return v.reshape(shape).astype(dt)


def Iv(r, shape, lo, hi, dt=I64):
    """Integers in [lo, hi)."""
    return r.integers(lo, hi, size=shape).astype(dt)


def NZ(r, shape, lo, hi, dt=I64):
    """Non-zero integers with |v| in [lo, hi), random sign."""
    v = r.integers(lo, hi, size=shape) * r.choice([-1, 1], size=shape)
    return v.astype(dt)


def Bv(r, shape, p=0.5):
    return r.random(size=shape) < p


def i64(*v):
    return np.array(v, dtype=I64)


# ---- model building ----
def _io_names(formals, n, prefix_taken=()):
    """Names for n actual parameters following the schema's formal parameters."""
    names = []
    variadic = bool(formals) and str(formals[-1].option).endswith('Variadic')
    for i in range(n):
        if i < len(formals) - (1 if variadic else 0):
            names.append(formals[i].name)
        else:
            base = formals[-1].name
            base = base[:-2] if base.endswith('_0') else base
            names.append(f'{base}_{i - len(formals) + 1}')
    return [x if x not in prefix_taken else x + '_out' for x in names]


def _vi(name, arr):
    return helper.make_tensor_value_info(name, mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype],
                                         list(arr.shape))


def _finish(name, nodes, feeds, inits, outputs, opset, ops):
    """Builds the ModelProto (outputs typed by ONNX shape inference) and registers it."""
    g_inputs = [_vi(k, v) for k, v in feeds.items()]
    g_inits = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    g_outputs = []
    for o in outputs:
        vi = onnx.ValueInfoProto()
        vi.name = o
        g_outputs.append(vi)
    graph = helper.make_graph(nodes, name, g_inputs, g_outputs, g_inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)],
                              producer_name='perceive-ops_cases')
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.value_info[:]
    for o in model.graph.output:
        if not o.type.tensor_type.elem_type:
            raise RuntimeError(f'{name}: no type inferred for output {o.name}')
    if all(o.type.tensor_type.HasField('shape') for o in model.graph.output):
        onnx.checker.check_model(model)   # else checked once ORT gave the shapes
    if any(c['name'] == name for c in CASES):
        raise RuntimeError(f'duplicate case {name}')
    CASES.append(dict(name=name, model=model, inputs=feeds, ops=ops, opset=opset))


def case(name, op, ins, attrs=None, nout=1, opset=17):
    """One-node case. ins: list (or callable(rng) -> list) of In / K / None (absent)."""
    r = fio.rng_of(name)
    if callable(ins):
        ins = ins(r)
    schema = onnx.defs.get_schema(op, opset)
    in_names = _io_names(schema.inputs, len(ins))
    out_names = _io_names(schema.outputs, nout, prefix_taken=set(in_names))
    feeds, inits, node_in = {}, {}, []
    for nm, v in zip(in_names, ins):
        if v is None:
            node_in.append('')
        elif isinstance(v, In):
            feeds[nm] = v.arr
            node_in.append(nm)
        else:
            inits[nm] = v.arr
            node_in.append(nm)
    while node_in and node_in[-1] == '':
        node_in.pop()
    node = helper.make_node(op, node_in, out_names, name=f'{op}_0', **(attrs or {}))
    _finish(name, [node], feeds, inits, out_names, opset, [op])


def gcase(name, build, opset=17):
    """Multi-node case: build(rng) -> (nodes, feeds dict, inits dict, output names)."""
    nodes, feeds, inits, outs = build(fio.rng_of(name))
    ops = []
    for n in nodes:
        if n.op_type not in ops:
            ops.append(n.op_type)
    _finish(name, nodes, feeds, inits, outs, opset, ops)


def snake(op):
    return re.sub(r'(?<!^)(?=[A-Z])', '_', op).lower()


DT_NAMES = {F32: 'f32', F16: 'f16', I64: 'i64', I32: 'i32', I8: 'i8', U8: 'u8', BOOL: 'bool'}
