"""Any ONNX file the engine runs, over pv_graph_*: numpy arrays in, numpy arrays (copies) out."""
import ctypes
import os
import threading
from dataclasses import dataclass

import numpy as np

from . import _lib
from .errors import ClosedError, InputError, UnsupportedError

# pv_dtype order (include/perceive.h); bf16 has no numpy type: outputs are widened to float32
_DTYPES = (np.float32, np.float16, None, np.int64, np.int32, np.int8, np.uint8, np.bool_)
_DTYPE_NAMES = ("float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
PV_BF16 = 2


def _code_of(dtype):
    for code, t in enumerate(_DTYPES):
        if t is not None and np.dtype(t) == dtype:
            return code
    return None


@dataclass(frozen=True)
class TensorInfo:
    """A declared graph input or output: dims of -1 are dynamic."""
    name: str
    dtype: str
    shape: tuple


class Graph:
    """An ONNX graph planned by perceive's engine. graph.run({"x": array}) -> {name: array}.
    Runs on one Graph are serialized (outputs live in the graph's arena until the next run);
    open one Graph per thread to run in parallel."""

    def __init__(self, path, threads=0, precision="fp32", no_fuse=False):
        self._h = None
        opts = _lib.PvGraphOptions(_lib.threads_value(threads), 1 if no_fuse else 0, _lib.precision_code(precision))
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.pv_graph_open(os.fsencode(path), ctypes.byref(opts), ctypes.byref(h)))
        self._h, self._lock, self.path = h.value, threading.Lock(), os.fsdecode(path)
        self.inputs = [self._desc(_lib.lib.pv_graph_input, i) for i in range(_lib.lib.pv_graph_num_inputs(self._h))]
        self.outputs = [self._desc(_lib.lib.pv_graph_output, i) for i in range(_lib.lib.pv_graph_num_outputs(self._h))]

    def _desc(self, fn, i):
        t = _lib.PvTensor()
        self._check(fn(self._h, i, ctypes.byref(t)))
        name = _lib.text(t.name) or ""
        dtype = _DTYPE_NAMES[t.dtype] if 0 <= t.dtype < len(_DTYPE_NAMES) else str(t.dtype)
        return TensorInfo(name, dtype, tuple(t.dims[k] for k in range(t.rank)))

    def _check(self, status):
        if status:
            _lib.check(status, _lib.text(_lib.lib.pv_graph_errmsg(self._h)))

    def _tensor(self, name, x, keep):
        declared = next((d for d in self.inputs if d.name == name), None) if name is not None else None
        a = np.asarray(x)
        if declared is not None and declared.dtype != a.dtype.name and declared.dtype != "bfloat16":
            want = np.dtype(declared.dtype)
            if not np.can_cast(a.dtype, want, "same_kind"):
                raise InputError("input '%s': dtype %s cannot become the graph's %s" % (name, a.dtype, want))
            a = a.astype(want)
        code = _code_of(a.dtype)
        if code is None:
            raise UnsupportedError("input '%s': dtype %s is not one perceive runs (%s)"
                                   % (name, a.dtype, ", ".join(n for n in _DTYPE_NAMES if n != "bfloat16")))
        if a.ndim > _lib.PV_MAX_RANK:
            raise InputError("input '%s': rank %d is above %d" % (name, a.ndim, _lib.PV_MAX_RANK))
        a = np.ascontiguousarray(a)   # no copy when already contiguous
        keep.append(a)
        t = _lib.PvTensor(None if name is None else name.encode(), code, a.ndim)
        for k, d in enumerate(a.shape):
            t.dims[k] = d
        t.data = a.ctypes.data
        return t

    @staticmethod
    def _copy_out(t):
        """A numpy copy of an output that lives in the graph's arena."""
        code = t.dtype
        shape = tuple(t.dims[k] for k in range(t.rank))
        elem = 2 if code == PV_BF16 else (np.dtype(_DTYPES[code]).itemsize if 0 <= code < len(_DTYPES) else 0)
        if not elem:
            raise UnsupportedError("output '%s': dtype %d has no numpy type" % (_lib.text(t.name), code))
        strides = tuple(t.strides[k] for k in range(t.rank))
        if not any(strides):   # all zero: contiguous row-major
            strides = tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * elem for k in range(t.rank))
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            base = np.empty(shape, np.uint16 if code == PV_BF16 else _DTYPES[code])
        else:
            extent = sum((d - 1) * s for d, s in zip(shape, strides)) + elem
            raw = (ctypes.c_char * extent).from_address(t.data)
            base = np.ndarray(shape, np.uint16 if code == PV_BF16 else _DTYPES[code], raw, 0, strides).copy()
        if code == PV_BF16:   # bf16 is the top half of a float32
            return (base.astype(np.uint32) << 16).view(np.float32)
        return base

    def run(self, inputs):
        """inputs: {name: array} (or a list, matched by position). Returns {output name: array}."""
        keep = []
        if isinstance(inputs, dict):
            names = [d.name for d in self.inputs]
            for k in inputs:
                if k not in names:
                    raise InputError("input '%s' is not one of the graph's inputs (%s)" % (k, ", ".join(names)))
            ts = [self._tensor(k, v, keep) for k, v in inputs.items()]
        else:
            names = [d.name for d in self.inputs]
            ts = [self._tensor(names[i] if i < len(names) else None, v, keep) for i, v in enumerate(inputs)]
        c_in = (_lib.PvTensor * max(len(ts), 1))(*ts)
        with self._lock:
            h = self._live()
            n_out = ctypes.c_size_t(max(len(self.outputs), 1))
            c_out = (_lib.PvTensor * n_out.value)()
            self._check(_lib.lib.pv_graph_run(h, c_in, len(ts), c_out, ctypes.byref(n_out)))
            return {_lib.text(c_out[i].name) or str(i): self._copy_out(c_out[i]) for i in range(n_out.value)}

    __call__ = run

    def stats(self):
        """Plan facts of the last run's variant (pv_graph_stats)."""
        st = _lib.PvGraphStats()
        with self._lock:
            self._check(_lib.lib.pv_graph_stats_get(self._live(), ctypes.byref(st)))
        return {k: _lib.text(getattr(st, k)) if t is ctypes.c_char_p else getattr(st, k) for k, t in st._fields_}

    def _live(self):
        if self._h is None:
            raise ClosedError("the graph is closed")
        return self._h

    def close(self):
        """Idempotent; calls after it raise ClosedError."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            h, self._h = self._h, None
            if h is not None:
                _lib.lib.pv_graph_close(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<perceive.Graph %s: %d inputs, %d outputs%s>" % (self.path, len(self.inputs), len(self.outputs),
                                                                  "" if self._h else ", closed")
