"""bevfusion_io.py: point-cloud readers and case files for the BEVFusion reference
(tools/ref/bevfusion_ref.py). numpy only; written independently of src/io.

Cloud tables are float32 [n, ncols] with columns x, y, z first, then the remaining fields in
file order (PCD) or file column order (raw binaries, .npy) -- the column numbering that
case.json's time_lag_col refers to.
"""
import json
import os

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared', 'data'))


# ---- PCD ----------------------------------------------------------------------------------
def _lzf_decompress(src, out_len):
    """LZF (liblzf format) decompression, as PCL's binary_compressed uses."""
    out = bytearray(out_len)
    i = o = 0
    n = len(src)
    while i < n:
        ctrl = src[i]
        i += 1
        if ctrl < 32:                      # literal run of ctrl + 1 bytes
            ln = ctrl + 1
            if i + ln > n or o + ln > out_len:
                raise ValueError('pcd: LZF literal run past the end')
            out[o:o + ln] = src[i:i + ln]
            i += ln
            o += ln
        else:                              # back reference
            ln = ctrl >> 5
            if ln == 7:
                ln += src[i]
                i += 1
            ref = o - ((ctrl & 0x1f) << 8) - 1 - src[i]
            i += 1
            ln += 2
            if ref < 0 or o + ln > out_len:
                raise ValueError('pcd: LZF back reference out of range')
            for _ in range(ln):            # byte by byte: the source may overlap the output
                out[o] = out[ref]
                o += 1
                ref += 1
    if o != out_len:
        raise ValueError('pcd: LZF produced %d bytes, header says %d' % (o, out_len))
    return bytes(out)


_PCD_TYPES = {('F', 2): '<f2', ('F', 4): '<f4', ('F', 8): '<f8', ('I', 1): 'i1', ('I', 2): '<i2',
              ('I', 4): '<i4', ('I', 8): '<i8', ('U', 1): 'u1', ('U', 2): '<u2', ('U', 4): '<u4',
              ('U', 8): '<u8'}


def read_pcd(path):
    """-> (float32 [n, ncols], names)."""
    buf = open(path, 'rb').read()
    pos = 0
    hdr = {}
    while True:
        end = buf.index(b'\n', pos)
        line = buf[pos:end].decode('ascii').strip()
        pos = end + 1
        if not line or line.startswith('#'):
            continue
        key, _, rest = line.partition(' ')
        hdr[key.upper()] = rest.split()
        if key.upper() == 'DATA':
            break
    fields = hdr['FIELDS']
    sizes = [int(s) for s in hdr['SIZE']]
    types = hdr['TYPE']
    counts = [int(c) for c in hdr.get('COUNT', ['1'] * len(fields))]
    npts = int(hdr['POINTS'][0]) if 'POINTS' in hdr else int(hdr['WIDTH'][0]) * int(hdr['HEIGHT'][0])
    cols = []     # (name, dtype) per scalar column in file order
    for f, s, t, c in zip(fields, sizes, types, counts):
        for k in range(c):
            cols.append((f if c == 1 else '%s_%d' % (f, k), _PCD_TYPES[(t, s)]))
    mode = hdr['DATA'][0]
    if mode == 'ascii':
        text = buf[pos:].decode('ascii').split('\n')
        rows = [ln.split() for ln in text if ln.strip()]
        vals = np.array([[float(v) for v in r] for r in rows[:npts]], dtype=np.float64)
        table = {name: vals[:, j].astype(np.dtype(dt)).astype(np.float32) for j, (name, dt) in enumerate(cols)}
    elif mode == 'binary':
        dt = np.dtype([(('c%d' % j), d) for j, (_, d) in enumerate(cols)])
        arr = np.frombuffer(buf, dtype=dt, count=npts, offset=pos)
        table = {name: arr['c%d' % j].astype(np.float32) for j, (name, _) in enumerate(cols)}
    elif mode == 'binary_compressed':
        csize, usize = np.frombuffer(buf, '<u4', 2, pos)
        raw = _lzf_decompress(buf[pos + 8:pos + 8 + int(csize)], int(usize))
        table, off = {}, 0
        for name, d in cols:                 # field-major: all values of one column together
            a = np.frombuffer(raw, np.dtype(d), npts, off)
            table[name] = a.astype(np.float32)
            off += npts * np.dtype(d).itemsize
    else:
        raise ValueError('pcd: DATA %s unsupported' % mode)
    names = ['x', 'y', 'z'] + [n for n, _ in cols if n not in ('x', 'y', 'z') and n != '_']
    return np.stack([table[n] for n in names], axis=1).astype(np.float32), names


# ---- raw binaries and .npy ----------------------------------------------------------------
def read_points(path, fmt):
    """-> float32 [n, ncols] (x, y, z first)."""
    if fmt == 'pcd':
        return read_pcd(path)[0]
    if fmt == 'kitti':
        return np.fromfile(path, '<f4').reshape(-1, 4)
    if fmt == 'nuscenes':
        return np.fromfile(path, '<f4').reshape(-1, 5)
    if fmt == 'f16x5':
        return np.fromfile(path, '<f2').reshape(-1, 5).astype(np.float32)
    if fmt == 'npy':
        return np.load(path).astype(np.float32)
    raise ValueError('unknown point format %r' % fmt)


def resolve(path):
    if path.startswith('$SHARED/'):
        return os.path.join(SHARED, path[len('$SHARED/'):])
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


def load_case(case_path):
    """case.json -> (case dict, float32 [n, 4] point features x, y, z, time_lag, info dict).

    Non-finite rows are dropped (counted). T_base_from_sensor (16 row-major floats) moves x, y, z
    in float32, each product and sum rounded to float32 in the order
    x' = ((T00 x + T01 y) + T02 z) + T03. time_lag is column time_lag_col, or 0."""
    case = json.load(open(case_path))
    raw = read_points(resolve(case['input']), case['format'])
    finite = np.isfinite(raw).all(axis=1)
    pts = raw[finite]
    xyz = pts[:, :3].astype(np.float32)
    T = case.get('T_base_from_sensor')
    if T is not None:
        T = np.asarray(T, np.float32).reshape(4, 4)
        x, y, z = xyz[:, 0], xyz[:, 1], xyz[:, 2]
        xyz = np.stack([((T[r, 0] * x + T[r, 1] * y) + T[r, 2] * z) + T[r, 3] for r in range(3)], axis=1)
    col = case.get('time_lag_col', -1)
    lag = pts[:, col].astype(np.float32) if col is not None and col >= 0 else np.zeros(len(pts), np.float32)
    feats = np.concatenate([xyz, lag[:, None]], axis=1).astype(np.float32)
    info = {'num_points_file': int(len(raw)), 'num_dropped_points': int((~finite).sum())}
    return case, feats, info
