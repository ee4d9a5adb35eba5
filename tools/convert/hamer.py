#!/usr/bin/python3
"""hamer.py: converts HaMeR's released checkpoint and the user's MANO_RIGHT.pkl into perceive's
hamer.safetensors (one file), without torch, HaMeR, yacs, chumpy or scipy installed.

  hamer.py --ckpt hamer.ckpt --mano MANO_RIGHT.pkl --out DIR/hamer.safetensors [--dtype f32|bf16|f16]

Inputs
  hamer.ckpt      the PyTorch Lightning checkpoint (_DATA/hamer_ckpts/checkpoints/hamer.ckpt of
                  hamer_demo_data.tar.gz; 2.69 GB). Read as the zip torch.save writes
                  (<top>/data.pkl + <top>/data/<key> storages; the top folder's name varies)
                  through a restricted unpickler: only tensor rebuilds, storage classes,
                  OrderedDict, numpy arrays and inert stand-ins for hyper-parameter classes
                  (yacs CfgNode, omegaconf, Lightning) are allowed; any other global (e.g.
                  os.system) is refused with its name. Storages are read lazily: only the kept
                  tensors are materialised.
  MANO_RIGHT.pkl  from https://mano.is.tue.mpg.de (registration; non-commercial licence, no
                  redistribution: this tool writes it only into --out and prints no values).
                  A latin-1 pickle with chumpy Ch objects and scipy.sparse matrices, rebuilt by
                  stand-in classes that capture their state (nothing of chumpy / scipy runs).

Output (safetensors; keys as in src/models/hamer/hamer.h and specs/hamer.md sections 3, 4.2)
  backbone.*   ViT-H: pos_embed, patch_embed.proj.*, blocks.{0..31}.*, last_norm.*
  mano_head.*  decoder, decpose/decshape/deccam, init_hand_pose/init_betas/init_cam
  mano.*       v_template [778,3], shapedirs [778,3,10], posedirs [778,3,135],
               J_regressor [16,778] (dense), weights [778,16] (F32); faces [1538,3],
               parents [16] (I32, root -1)
  metadata     format=perceive-hamer, format_version=1, weights=release, depth=32,
               hamer_ckpt_sha256, mano_sha256, converter=tools/convert/hamer.py
  --dtype bf16|f16 stores the matrices of the network (keys ending in .weight with 2+ dims)
  in that dtype (bf16: round to nearest even); everything else stays F32.

Every expected network key and shape is checked (missing / unexpected / wrong shape listed by
name); discriminator.*, the checkpoint's own mano.* buffers and other prefixes are ignored.

Test-only options: --depth N (blocks expected, default 32), --tiny-test-dims (small widths so a
fake checkpoint stays small; see tools/convert/test_hamer_convert.py).
"""
import argparse
import codecs
import collections
import os
import pickle
import sys
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'ref'))
import hamer_st as st  # noqa: E402

NV, NF, NJ, NBETAS = 778, 1538, 16, 10
FULL_DIMS = dict(vit=1280, vit_mlp=5120, dec=1024, dec_inner=512, dec_mlp=1024, ctx=1280)
TINY_DIMS = dict(vit=16, vit_mlp=32, dec=8, dec_inner=8, dec_mlp=8, ctx=16)


class ConvertError(Exception):
    pass


# ---- the architecture's keys and shapes (spec sections 3 and 4.2) ----
def network_shapes(depth=32, dims=None):
    d = dims or FULL_DIMS
    D, M, E, I, Fm, C = d['vit'], d['vit_mlp'], d['dec'], d['dec_inner'], d['dec_mlp'], d['ctx']
    s = collections.OrderedDict()
    s['backbone.pos_embed'] = (1, 193, D)
    s['backbone.patch_embed.proj.weight'] = (D, 3, 16, 16)
    s['backbone.patch_embed.proj.bias'] = (D,)
    for i in range(depth):
        p = f'backbone.blocks.{i}.'
        for n, shp in (('norm1.weight', (D,)), ('norm1.bias', (D,)),
                       ('attn.qkv.weight', (3 * D, D)), ('attn.qkv.bias', (3 * D,)),
                       ('attn.proj.weight', (D, D)), ('attn.proj.bias', (D,)),
                       ('norm2.weight', (D,)), ('norm2.bias', (D,)),
                       ('mlp.fc1.weight', (M, D)), ('mlp.fc1.bias', (M,)),
                       ('mlp.fc2.weight', (D, M)), ('mlp.fc2.bias', (D,))):
            s[p + n] = shp
    s['backbone.last_norm.weight'] = (D,)
    s['backbone.last_norm.bias'] = (D,)
    h = 'mano_head.transformer.'
    s[h + 'to_token_embedding.weight'] = (E, 1)
    s[h + 'to_token_embedding.bias'] = (E,)
    s[h + 'pos_embedding'] = (1, 1, E)
    for l in range(6):
        p = f'{h}transformer.layers.{l}.'
        for n, shp in (('0.norm.weight', (E,)), ('0.norm.bias', (E,)),
                       ('0.fn.to_qkv.weight', (3 * I, E)),
                       ('0.fn.to_out.0.weight', (E, I)), ('0.fn.to_out.0.bias', (E,)),
                       ('1.norm.weight', (E,)), ('1.norm.bias', (E,)),
                       ('1.fn.to_kv.weight', (2 * I, C)), ('1.fn.to_q.weight', (I, E)),
                       ('1.fn.to_out.0.weight', (E, I)), ('1.fn.to_out.0.bias', (E,)),
                       ('2.norm.weight', (E,)), ('2.norm.bias', (E,)),
                       ('2.fn.net.0.weight', (Fm, E)), ('2.fn.net.0.bias', (Fm,)),
                       ('2.fn.net.3.weight', (E, Fm)), ('2.fn.net.3.bias', (E,))):
            s[p + n] = shp
    for n, k in (('decpose', 96), ('decshape', NBETAS), ('deccam', 3)):
        s[f'mano_head.{n}.weight'] = (k, E)
        s[f'mano_head.{n}.bias'] = (k,)
    s['mano_head.init_hand_pose'] = (1, 96)
    s['mano_head.init_betas'] = (1, NBETAS)
    s['mano_head.init_cam'] = (1, 3)
    return s


# ---- restricted unpickling: torch checkpoint ----
_STORAGE_DTYPES = {
    'FloatStorage': np.dtype('<f4'), 'DoubleStorage': np.dtype('<f8'),
    'HalfStorage': np.dtype('<f2'), 'BFloat16Storage': np.dtype('<u2'),
    'LongStorage': np.dtype('<i8'), 'IntStorage': np.dtype('<i4'),
    'ShortStorage': np.dtype('<i2'), 'CharStorage': np.dtype('i1'),
    'ByteStorage': np.dtype('u1'), 'BoolStorage': np.dtype('?'),
}
# Modules whose classes only carry configuration / bookkeeping: rebuilt as inert stand-ins.
_STUB_PREFIXES = ('yacs.', 'omegaconf.', 'pytorch_lightning.', 'lightning.', 'lightning_fabric.',
                  'hamer.', 'typing', 'pathlib', 'argparse')
_STUB_TORCH = ('device', 'Size', 'float32', 'float16', 'bfloat16', 'float64', 'int64', 'int32',
               'uint8', 'bool')
# builtin types that may appear as values in hyper-parameters; calling them builds plain data
_BUILTIN_TYPES = {t.__name__: t for t in (set, frozenset, slice, dict, list, tuple, int, float, str,
                                          bool, bytes, bytearray, complex, range)}


class _Stub(dict):
    """Inert stand-in for a hyper-parameter class: keeps its arguments and state as data."""
    _stub_name = '?'

    def __init__(self, *args, **kwargs):
        dict.__init__(self)
        self.stub_args = args

    def __setstate__(self, state):
        self.stub_state = state

    def __call__(self, *args, **kwargs):       # e.g. typing.Any used as a value
        return self


_stub_types = {}


def _stub(module, name):
    key = f'{module}.{name}'
    if key not in _stub_types:
        _stub_types[key] = type(name, (_Stub,), {'_stub_name': key})
    return _stub_types[key]


def _stub_reconstructor(cls, base, state):
    """copyreg._reconstructor for stand-ins only (protocol 0/1 pickles of hyper-parameters)."""
    if not (isinstance(cls, type) and issubclass(cls, _Stub)) or base not in (object, dict):
        raise ConvertError(f'checkpoint: copyreg._reconstructor for {cls!r:.60} refused')
    return cls()


class _StorageType:
    def __init__(self, name):
        self.name, self.dtype = name, _STORAGE_DTYPES[name]


class _Storage:
    """A storage of the zip, read on first use."""

    def __init__(self, zf, path, dtype, numel, is_bf16=False):
        self.zf, self.path, self.dtype, self.numel = zf, path, dtype, numel
        self.is_bf16 = is_bf16
        self._arr = None

    def array(self):
        if self._arr is None:
            try:
                raw = self.zf.read(self.path)
            except KeyError:
                raise ConvertError(f'checkpoint: storage {self.path} missing from the zip') from None
            if len(raw) < self.numel * self.dtype.itemsize:
                raise ConvertError(f'checkpoint: storage {self.path} holds {len(raw)} bytes, '
                                   f'needs {self.numel} x {self.dtype.itemsize}')
            self._arr = np.frombuffer(raw, dtype=self.dtype, count=self.numel)
        return self._arr

    def release(self):
        self._arr = None


class LazyTensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset = storage, int(offset)
        self.shape, self.stride = tuple(int(v) for v in size), tuple(int(v) for v in stride)

    def numpy(self):
        """A contiguous float32 (floats) or native copy of the tensor's elements."""
        base = self.storage.array()
        if any(d < 0 for d in self.shape) or any(s < 0 for s in self.stride):
            raise ConvertError('checkpoint: negative size or stride')
        n = int(np.prod(self.shape, dtype=np.int64))
        if n:
            last = self.offset + sum((d - 1) * s for d, s in zip(self.shape, self.stride))
            if self.offset < 0 or last >= base.size:
                raise ConvertError(f'checkpoint: tensor view [{self.offset}..{last}] outside its '
                                   f'storage of {base.size} elements')
        it = base.dtype.itemsize
        a = np.lib.stride_tricks.as_strided(base[self.offset:] if n else base, shape=self.shape,
                                            strides=[s * it for s in self.stride], writeable=False)
        if self.storage.is_bf16:
            return st.bf16_to_f32(np.ascontiguousarray(a)).reshape(self.shape)
        a = np.array(a, copy=True)
        return a.astype(np.float32) if a.dtype.kind == 'f' else a


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    if not isinstance(storage, _Storage):
        raise ConvertError('checkpoint: tensor rebuilt from something that is not a storage')
    return LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, state=None):
    return data


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in (_rebuild_tensor_v2, _rebuild_parameter):
        raise ConvertError('checkpoint: _rebuild_from_type_v2 with a disallowed function')
    return func(*args)


def _codecs_encode(obj, encoding='utf-8', errors='strict'):
    if encoding not in ('latin1', 'latin-1', 'utf-8', 'utf8'):
        raise ConvertError(f'pickle: _codecs.encode with encoding {encoding!r} refused')
    return codecs.encode(obj, encoding, errors)


_NUMPY_ALLOWED = {('numpy.core.multiarray', '_reconstruct'), ('numpy._core.multiarray', '_reconstruct'),
                  ('numpy.core.multiarray', 'scalar'), ('numpy._core.multiarray', 'scalar'),
                  ('numpy', 'ndarray'), ('numpy', 'dtype')}


def _numpy_global(module, name):
    import importlib
    mod = importlib.import_module(module)
    return getattr(mod, name)


class CheckpointUnpickler(pickle.Unpickler):
    def __init__(self, f, zf, top):
        super().__init__(f)
        self.zf, self.top, self.storages = zf, top, {}

    def find_class(self, module, name):
        if module == 'torch._utils' and name == '_rebuild_tensor_v2':
            return _rebuild_tensor_v2
        if module == 'torch._utils' and name in ('_rebuild_parameter', '_rebuild_parameter_with_state'):
            return _rebuild_parameter
        if module == 'torch._tensor' and name == '_rebuild_from_type_v2':
            return _rebuild_from_type_v2
        if module == 'torch.nn.parameter' and name == 'Parameter':
            return _stub(module, name)
        if module == 'torch' and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module == 'collections' and name == 'OrderedDict':
            return collections.OrderedDict
        if module in ('builtins', '__builtin__') and name in _BUILTIN_TYPES:
            return _BUILTIN_TYPES[name]
        if module == 'collections' and name == 'defaultdict':
            return collections.defaultdict
        if module == '_codecs' and name == 'encode':
            return _codecs_encode
        if module in ('copy_reg', 'copyreg') and name == '_reconstructor':
            return _stub_reconstructor
        if module == 'torch' and name in _STUB_TORCH:
            return _stub(module, name)
        if (module, name) in _NUMPY_ALLOWED:
            return _numpy_global(module, name)
        if module.startswith(_STUB_PREFIXES) or module in ('yacs', 'omegaconf'):
            return _stub(module, name)
        raise pickle.UnpicklingError(
            f'checkpoint references {module}.{name}, which this converter does not allow '
            f'(only tensors, storages, OrderedDict, numpy arrays and stand-ins for '
            f'yacs/omegaconf/Lightning classes); refusing to load it')

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == 'storage'):
            raise pickle.UnpicklingError(f'checkpoint: unexpected persistent id {pid!r:.80}')
        _, stype, key, _location, numel = pid
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError(f'checkpoint: storage of unsupported type {stype!r:.60}')
        key = str(key)
        if key not in self.storages:
            self.storages[key] = _Storage(self.zf, f'{self.top}/data/{key}', stype.dtype,
                                          int(numel), stype.name == 'BFloat16Storage')
        return self.storages[key]


def read_checkpoint(path):
    """-> (state_dict {name: LazyTensor or other}, zipfile). Raises ConvertError."""
    if not zipfile.is_zipfile(path):
        raise ConvertError(f'{path}: not a zip-format torch checkpoint (torch.save since 1.6); '
                           'the legacy tar/pickle format is not supported')
    zf = zipfile.ZipFile(path)
    pkls = [n for n in zf.namelist() if n.endswith('/data.pkl') and n.count('/') == 1]
    if len(pkls) != 1:
        raise ConvertError(f'{path}: expected one <top>/data.pkl in the zip, found {pkls[:4]}')
    top = pkls[0].split('/')[0]
    bo = f'{top}/byteorder'
    if bo in zf.namelist() and zf.read(bo).strip() not in (b'little', b''):
        raise ConvertError(f'{path}: big-endian checkpoint ({zf.read(bo)!r}) is not supported')
    with zf.open(pkls[0]) as f:
        try:
            obj = CheckpointUnpickler(f, zf, top).load()
        except ConvertError:
            raise
        except pickle.UnpicklingError as e:
            raise ConvertError(f'{path}: {e}') from None
        except Exception as e:            # malformed pickles raise many kinds of error
            raise ConvertError(f'{path}: cannot unpickle data.pkl: {type(e).__name__}: {e}') from None
    if isinstance(obj, dict) and 'state_dict' in obj:
        sd = obj['state_dict']
    elif isinstance(obj, dict) and any(isinstance(v, LazyTensor) for v in obj.values()):
        sd = obj                           # a bare state dict
    else:
        raise ConvertError(f'{path}: no state_dict in the checkpoint (top-level keys '
                           f'{list(obj)[:8] if isinstance(obj, dict) else type(obj).__name__})')
    return sd, zf


# ---- restricted unpickling: MANO_RIGHT.pkl ----
class _ManoStandIn:
    """Captures the pickled state of a chumpy / scipy.sparse object; nothing of theirs runs."""
    kind = '?'

    def __init__(self, *args, **kwargs):
        self.args, self.state = args, None

    def __setstate__(self, state):
        self.state = state

    def dense(self, what):
        raise ConvertError(f'MANO: {what} is a {self.kind} object, which this converter cannot '
                           'turn into an array')


class ChStandIn(_ManoStandIn):
    kind = 'chumpy.ch.Ch'

    def dense(self, what):
        s = self.state if isinstance(self.state, dict) else {}
        x = s.get('x')
        if isinstance(x, _ManoStandIn):
            return x.dense(what)
        if not isinstance(x, np.ndarray):
            raise ConvertError(f'MANO: {what} is a chumpy Ch without an array "x" '
                               f'(state keys {sorted(s)[:8]})')
        return np.asarray(x)


class SparseStandIn(_ManoStandIn):
    kind = 'scipy.sparse matrix'
    compressed_axis = 1                    # csc: indptr runs over columns

    def dense(self, what):
        s = self.state if isinstance(self.state, dict) else {}
        try:
            data, indices, indptr = (np.asarray(s[k]) for k in ('data', 'indices', 'indptr'))
            shape = tuple(int(v) for v in (s.get('_shape') or s.get('shape')))
        except (KeyError, TypeError):
            raise ConvertError(f'MANO: {what}: sparse matrix state lacks data/indices/indptr/shape '
                               f'(keys {sorted(s)[:8]})') from None
        if len(shape) != 2:
            raise ConvertError(f'MANO: {what}: sparse shape {shape}')
        major = shape[self.compressed_axis]
        if indptr.shape != (major + 1,) or indptr[0] != 0 or indptr[-1] != data.size or \
                np.any(np.diff(indptr) < 0) or indices.size != data.size or \
                (indices.size and (indices.min() < 0 or indices.max() >= shape[1 - self.compressed_axis])):
            raise ConvertError(f'MANO: {what}: inconsistent sparse structure')
        out = np.zeros(shape, np.float64)
        for j in range(major):
            lo, hi = indptr[j], indptr[j + 1]
            if self.compressed_axis == 1:
                np.add.at(out[:, j], indices[lo:hi], data[lo:hi])
            else:
                np.add.at(out[j, :], indices[lo:hi], data[lo:hi])
        return out


class CsrStandIn(SparseStandIn):
    compressed_axis = 0


_mano_types = {}


def _mano_standin(module, name):
    key = f'{module}.{name}'
    if key not in _mano_types:
        if key == 'chumpy.ch.Ch':
            base = ChStandIn
        elif name == 'csc_matrix':
            base = SparseStandIn
        elif name == 'csr_matrix':
            base = CsrStandIn
        else:
            base = _ManoStandIn
        _mano_types[key] = type(name, (base,), {'kind': key})
    return _mano_types[key]


def _reconstructor(cls, base, state):
    """copyreg._reconstructor for stand-ins only (protocol 0/1 pickles of new-style classes)."""
    if not (isinstance(cls, type) and issubclass(cls, _ManoStandIn)) or base is not object:
        raise ConvertError(f'MANO: copyreg._reconstructor for {cls!r:.60} refused')
    return cls()


class ManoUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _NUMPY_ALLOWED:
            return _numpy_global(module, name)
        if module in ('copy_reg', 'copyreg') and name == '_reconstructor':
            return _reconstructor
        if module == '_codecs' and name == 'encode':      # bytes in Python 3 protocol-2 pickles
            return _codecs_encode
        if module in ('builtins', '__builtin__') and name in ('object', 'set', 'frozenset'):
            return {'object': object, 'set': set, 'frozenset': frozenset}[name]
        if module == 'chumpy' or module.startswith('chumpy.'):
            return _mano_standin(module, name)
        if module in ('scipy.sparse.csc', 'scipy.sparse._csc', 'scipy.sparse.csr',
                      'scipy.sparse._csr') and name in ('csc_matrix', 'csr_matrix'):
            return _mano_standin(module, name)
        raise pickle.UnpicklingError(
            f'MANO pickle references {module}.{name}, which this converter does not allow '
            f'(only numpy arrays and stand-ins for chumpy.ch.Ch / scipy.sparse csc/csr); '
            f'refusing to load it')


def read_mano(path):
    """-> {mano.*: array} in the output's dtypes. Raises ConvertError; never prints values."""
    with open(path, 'rb') as f:
        try:
            d = ManoUnpickler(f, encoding='latin1').load()
        except ConvertError:
            raise
        except pickle.UnpicklingError as e:
            raise ConvertError(f'{path}: {e}') from None
        except Exception as e:
            raise ConvertError(f'{path}: cannot unpickle: {type(e).__name__}: {e}') from None
    if not isinstance(d, dict):
        raise ConvertError(f'{path}: expected a dict, got {type(d).__name__}')

    def arr(key):
        if key not in d:
            raise ConvertError(f'{path}: no {key!r} (keys: {sorted(map(str, d))})')
        v = d[key]
        return v.dense(key) if isinstance(v, _ManoStandIn) else np.asarray(v)

    def want(key, a, shape):
        if a.shape != shape:
            raise ConvertError(f'{path}: {key} has shape {a.shape}, expected {shape}')
        if a.dtype.kind not in 'fiu':
            raise ConvertError(f'{path}: {key} has dtype {a.dtype}')
        if a.dtype.kind == 'f' and not np.all(np.isfinite(a)):
            raise ConvertError(f'{path}: {key} holds non-finite values')
        return a
    sd = arr('shapedirs')
    want('shapedirs', sd, sd.shape)
    if sd.ndim != 3 or sd.shape[:2] != (NV, 3) or sd.shape[2] < NBETAS:
        raise ConvertError(f'{path}: shapedirs has shape {sd.shape}, expected ({NV}, 3, >= {NBETAS})')
    kt = arr('kintree_table')
    if kt.shape != (2, NJ):
        raise ConvertError(f'{path}: kintree_table has shape {kt.shape}, expected (2, {NJ})')
    par = kt[0].astype(np.int64)
    par[0] = -1                                        # 4294967295 (uint32 -1) in the file
    if any(not (0 <= p < i) for i, p in enumerate(par.tolist()) if i):
        raise ConvertError(f'{path}: kintree_table parents are not in topological order')
    if not np.array_equal(kt[1].astype(np.int64), np.arange(NJ)):
        raise ConvertError(f'{path}: kintree_table row 1 is not 0..{NJ - 1}')
    faces = want('f', arr('f'), (NF, 3))
    if faces.min() < 0 or faces.max() >= NV:
        raise ConvertError(f'{path}: f holds a vertex index outside 0..{NV - 1}')
    return collections.OrderedDict([
        ('mano.v_template', want('v_template', arr('v_template'), (NV, 3)).astype(np.float32)),
        ('mano.shapedirs', np.ascontiguousarray(sd[:, :, :NBETAS], np.float32)),
        ('mano.posedirs', want('posedirs', arr('posedirs'), (NV, 3, 135)).astype(np.float32)),
        ('mano.J_regressor', want('J_regressor', arr('J_regressor'), (NJ, NV)).astype(np.float32)),
        ('mano.weights', want('weights', arr('weights'), (NV, NJ)).astype(np.float32)),
        ('mano.faces', faces.astype(np.int32)),
        ('mano.parents', par.astype(np.int32)),
    ])


# ---- conversion ----
def sha256_file(path):
    return st.sha256_file(path)


def select_network(sd, depth, dims):
    """-> ordered {key: LazyTensor} for every expected key; ConvertError listing problems."""
    want = network_shapes(depth, dims)
    ours = {k: v for k, v in sd.items() if k.startswith(('backbone.', 'mano_head.'))}
    missing = [k for k in want if k not in ours]
    unexpected = sorted(k for k in ours if k not in want)
    bad, notensor = [], []
    for k in want:
        if k in ours:
            v = ours[k]
            if not isinstance(v, LazyTensor):
                notensor.append(k)
            elif v.shape != want[k]:
                bad.append(f'{k}: {list(v.shape)} != {list(want[k])}')
    if missing or unexpected or bad or notensor:
        def lst(v):
            return ', '.join(v[:12]) + (f' ... ({len(v)} in all)' if len(v) > 12 else '')
        msg = [f'checkpoint does not match HaMeR (ViT-H depth {depth} + transformer-decoder head):']
        if missing:
            msg.append(f'  missing: {lst(missing)}')
        if unexpected:
            msg.append(f'  unexpected: {lst(unexpected)}')
        if bad:
            msg.append(f'  wrong shape: {lst(bad)}')
        if notensor:
            msg.append(f'  not tensors: {lst(notensor)}')
        raise ConvertError('\n'.join(msg))
    ignored = collections.Counter(k.split('.')[0] for k in sd if k not in ours)
    return collections.OrderedDict((k, ours[k]) for k in want), ignored


def convert(ckpt, mano, out, dtype='f32', depth=32, dims=None, quiet=False):
    stdt = {'f32': 'F32', 'bf16': 'BF16', 'f16': 'F16'}[dtype]
    mano_arrays = read_mano(mano)
    sd, zf = read_checkpoint(ckpt)
    net, ignored = select_network(sd, depth, dims)
    tensors, dtypes = collections.OrderedDict(), {}
    for k, lt in net.items():
        def load(lt=lt, k=k):
            a = lt.numpy()
            if a.dtype.kind != 'f':
                raise ConvertError(f'checkpoint: {k} has dtype {a.dtype}, expected floats')
            if not np.all(np.isfinite(a)):
                raise ConvertError(f'checkpoint: {k} holds non-finite values')
            lt.storage.release()
            return a.astype(np.float32, copy=False)
        tensors[k] = (load, lt.shape, np.float32)
        if stdt != 'F32' and k.endswith('.weight') and len(lt.shape) >= 2:
            dtypes[k] = stdt
    tensors.update(mano_arrays)
    meta = collections.OrderedDict([
        ('format', 'perceive-hamer'), ('format_version', '1'), ('weights', 'release'),
        ('depth', str(depth)), ('hamer_ckpt_sha256', sha256_file(ckpt)),
        ('mano_sha256', sha256_file(mano)), ('converter', 'tools/convert/hamer.py'),
        ('dtype', dtype)])
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    st.write_safetensors(out, tensors, meta, dtypes)
    zf.close()
    if not quiet:
        n = sum(int(np.prod(s[1])) for s in tensors.values() if isinstance(s, tuple))
        print(f'hamer.py: {len(net)} network tensors ({n:,} values), {len(mano_arrays)} MANO '
              f'arrays -> {out} ({os.path.getsize(out):,} bytes, {dtype}); ignored checkpoint '
              f'entries: ' + (', '.join(f'{p}.* x{c}' for p, c in sorted(ignored.items())) or 'none'))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument('--ckpt', required=True)
    ap.add_argument('--mano', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--dtype', choices=['f32', 'bf16', 'f16'], default='f32')
    ap.add_argument('--depth', type=int, default=32, help=argparse.SUPPRESS)
    ap.add_argument('--tiny-test-dims', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--quiet', action='store_true')
    a = ap.parse_args(argv)
    try:
        convert(a.ckpt, a.mano, a.out, a.dtype, a.depth,
                TINY_DIMS if a.tiny_test_dims else FULL_DIMS, a.quiet)
    except (ConvertError, st.FormatError, OSError) as e:
        print(f'hamer.py: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
