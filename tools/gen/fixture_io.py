"""fixture_io.py: shared helpers for perceive's fixture generators (ops_cases.py, models.py).

Deterministic .npz writing (fixed zip timestamps, so regenerating gives identical bytes), the
ONNX Runtime runner (node tools/gen/ort_run.mjs) and per-case seeds.
"""
import io
import os
import subprocess
import zipfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
ORT_RUN = os.path.join(HERE, 'ort_run.mjs')


def seed_of(name):
    """Case-specific seed: CRC-32 of the case name (stable across Python runs)."""
    return zlib.crc32(name.encode('utf-8'))


def rng_of(name):
    return np.random.default_rng(seed_of(name))


def save_npz(path, arrays, compress=False):
    """Writes {name: ndarray} (in insertion order) as an .npz with fixed timestamps."""
    with zipfile.ZipFile(path, 'w') as z:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr, order="C"), version=(1, 0),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(name + '.npy', date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            z.writestr(info, buf.getvalue())


def load_npz(path):
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def ort_run(model, inputs, outputs, threads=1, timeout=600):
    """Runs ONNX Runtime on model; returns (ok, stderr text)."""
    cmd = ['node', ORT_RUN, model, inputs, outputs, '--threads', str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode == 0, p.stderr.strip()
