#!/usr/bin/python3
"""hamer_st.py: the small file formats of perceive's HaMeR tools, in plain Python + numpy.

safetensors (read and write; no `safetensors` package):
    8-byte little-endian header length N, then N bytes of JSON
    {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {str: str}}
    (padded with spaces to a multiple of 8), then the data: each tensor's bytes, little-endian,
    row-major, at [begin, end) counted from the first byte after the header, with no gaps.
    Dtypes handled: F32, F16, BF16 (numpy has no bfloat16: read as F32, written with
    round-to-nearest-even), F64, I32, I64, U8, I8, BOOL.

    read_safetensors(path, as_f32=True, names=None) -> (dict name -> np.ndarray, metadata dict)
    write_safetensors(path, tensors, metadata, dtypes=None)    streams tensors (ndarrays or
        (callable, shape, dtype) tuples) in the order given; `dtypes` maps a name to the stored
        dtype ('F32', 'BF16', 'F16', 'I32', ...), default from the array.
    sha256_file(path)

PNG (zlib only; for the fixture image):
    read_png(path) -> uint8 [H, W, 3] RGB. Accepts 8-bit RGB (colour type 2) and RGBA (6, alpha
        dropped), non-interlaced, every filter type; refuses anything else with a message that
        says what the file is. CRCs are checked.
    write_png(path, rgb) writes 8-bit RGB, non-interlaced, each row with the filter (0-4) whose
        output has the smallest sum of absolute values, zlib level 9; deterministic bytes.
"""
import hashlib
import json
import os
import struct
import zlib

import numpy as np

# ---- safetensors ----
_NP_OF = {'F32': np.dtype('<f4'), 'F16': np.dtype('<f2'), 'F64': np.dtype('<f8'),
          'I32': np.dtype('<i4'), 'I64': np.dtype('<i8'), 'U8': np.dtype('u1'),
          'I8': np.dtype('i1'), 'BOOL': np.dtype('?'), 'BF16': np.dtype('<u2')}
_ST_OF = {np.dtype('float32'): 'F32', np.dtype('float16'): 'F16', np.dtype('float64'): 'F64',
          np.dtype('int32'): 'I32', np.dtype('int64'): 'I64', np.dtype('uint8'): 'U8',
          np.dtype('int8'): 'I8', np.dtype('bool'): 'BOOL'}
FLOAT_DTYPES = ('F32', 'F16', 'BF16')


class FormatError(ValueError):
    pass


def bf16_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even; NaNs stay NaNs."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    if nan.any():
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def read_header(path):
    """(header dict without __metadata__, metadata dict, data start offset, file size)."""
    size = os.path.getsize(path)
    with open(path, 'rb') as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise FormatError(f'{path}: shorter than the 8-byte header length')
        (n,) = struct.unpack('<Q', raw)
        if n > size - 8 or n > 100 << 20:
            raise FormatError(f'{path}: header length {n} does not fit the file ({size} bytes)')
        try:
            hdr = json.loads(f.read(n).decode('utf-8'))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise FormatError(f'{path}: header is not JSON: {e}') from None
    if not isinstance(hdr, dict):
        raise FormatError(f'{path}: header is not a JSON object')
    meta = hdr.pop('__metadata__', None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise FormatError(f'{path}: __metadata__ must map strings to strings')
    return hdr, meta, 8 + n, size


def read_safetensors(path, as_f32=True, names=None):
    """Reads every tensor (or those in `names`). Floats come back as float32 when as_f32
    (BF16 always does); data are copies, not views of the file."""
    hdr, meta, start, size = read_header(path)
    data_len = size - start
    spans = []
    for name, e in hdr.items():
        try:
            dt, shape, (b, en) = e['dtype'], [int(d) for d in e['shape']], e['data_offsets']
        except (KeyError, TypeError, ValueError):
            raise FormatError(f'{path}: tensor {name!r}: malformed entry {e!r}') from None
        if dt not in _NP_OF:
            raise FormatError(f'{path}: tensor {name!r}: unsupported dtype {dt}')
        nbytes = _NP_OF[dt].itemsize * int(np.prod(shape, dtype=np.int64))
        if not (0 <= b <= en <= data_len) or en - b != nbytes:
            raise FormatError(f'{path}: tensor {name!r}: data_offsets [{b}, {en}] do not hold '
                              f'{dt} {shape} ({nbytes} bytes) in a {data_len}-byte data section')
        spans.append((b, en, name))
    spans.sort()
    pos = 0
    for b, en, name in spans:
        if b != pos:
            raise FormatError(f'{path}: data section has a gap or overlap at {name!r} '
                              f'(offset {b}, expected {pos})')
        pos = en
    if pos != data_len:
        raise FormatError(f'{path}: {data_len - pos} trailing bytes after the last tensor')
    out = {}
    with open(path, 'rb') as f:
        for name, e in hdr.items():
            if names is not None and name not in names:
                continue
            dt = e['dtype']
            b, en = e['data_offsets']
            a = np.empty(e['shape'], dtype=_NP_OF[dt])
            f.seek(start + b)
            if en > b and f.readinto(memoryview(a.reshape(-1).view(np.uint8))) != en - b:
                raise FormatError(f'{path}: short read in {name!r}')
            if dt == 'BF16':
                a = bf16_to_f32(a).reshape(e['shape'])
            elif as_f32 and dt in ('F16', 'F64'):
                a = a.astype(np.float32)
            out[name] = a
    return out, meta


def _stored(arr, dt):
    if dt == 'BF16':
        return f32_to_bf16(np.asarray(arr, dtype=np.float32))
    return np.ascontiguousarray(arr, dtype=_NP_OF[dt])


def write_safetensors(path, tensors, metadata=None, dtypes=None):
    """tensors: ordered {name: ndarray, or a (callable, shape, numpy dtype) tuple whose callable
    returns the array only when its bytes are written (so a converter never holds every tensor
    at once)}."""
    dtypes = dtypes or {}
    entries, off = {}, 0
    plan = []
    for name, t in tensors.items():
        if isinstance(t, tuple):
            fn, shape, npdt = t
        else:
            a = np.asarray(t)
            fn, shape, npdt = (lambda a=a: a), a.shape, a.dtype
        dt = dtypes.get(name) or _ST_OF.get(np.dtype(npdt))
        if dt is None:
            raise FormatError(f'{name}: no safetensors dtype for numpy {npdt}')
        nbytes = _NP_OF[dt].itemsize * int(np.prod(shape, dtype=np.int64))
        entries[name] = {'dtype': dt, 'shape': [int(d) for d in shape],
                         'data_offsets': [off, off + nbytes]}
        plan.append((name, fn, tuple(shape), dt, nbytes))
        off += nbytes
    hdr = dict(entries)
    if metadata:
        hdr = {'__metadata__': {str(k): str(v) for k, v in metadata.items()}, **hdr}
    hb = json.dumps(hdr, separators=(',', ':')).encode('utf-8')
    hb += b' ' * (-(8 + len(hb)) % 8)
    tmp = path + '.tmp'
    try:
        with open(tmp, 'wb') as f:
            f.write(struct.pack('<Q', len(hb)))
            f.write(hb)
            for name, fn, shape, dt, nbytes in plan:
                a = np.asarray(fn())
                if a.shape != shape:
                    raise FormatError(f'{name}: shape changed between passes {shape} -> {a.shape}')
                b = _stored(a, dt).tobytes()
                assert len(b) == nbytes
                f.write(b)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return h.hexdigest()
            h.update(b)


# ---- PNG ----
_PNG_SIG = b'\x89PNG\r\n\x1a\n'


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != _PNG_SIG:
        raise FormatError(f'{path}: not a PNG file (bad signature)')
    pos, ihdr, idat = 8, None, []
    while pos < len(data):
        if pos + 8 > len(data):
            raise FormatError(f'{path}: truncated chunk header at byte {pos}')
        n, typ = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if len(body) != n or pos + 12 + n > len(data):
            raise FormatError(f'{path}: truncated {typ!r} chunk')
        (crc,) = struct.unpack('>I', data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(typ + body) & 0xFFFFFFFF != crc:
            raise FormatError(f'{path}: CRC mismatch in {typ!r} chunk')
        pos += 12 + n
        if typ == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif typ == b'IDAT':
            idat.append(body)
        elif typ == b'IEND':
            break
        elif typ == b'PLTE' or not (typ[0] & 0x20):
            if typ != b'PLTE':
                raise FormatError(f'{path}: unknown critical chunk {typ!r}')
    if ihdr is None:
        raise FormatError(f'{path}: no IHDR chunk')
    w, h, depth, ctype, comp, filt, inter = ihdr
    kinds = {0: 'greyscale', 2: 'RGB', 3: 'palette', 4: 'greyscale+alpha', 6: 'RGBA'}
    if depth != 8 or ctype not in (2, 6) or inter != 0 or comp != 0 or filt != 0:
        raise FormatError(
            f'{path}: {depth}-bit {kinds.get(ctype, f"colour type {ctype}")}'
            f'{", interlaced" if inter else ""} PNG is not supported: only 8-bit RGB or RGBA, '
            f'non-interlaced (convert it, e.g. to 8-bit RGB)')
    if w == 0 or h == 0 or w * h > 1 << 28:
        raise FormatError(f'{path}: bad size {w}x{h}')
    ch = 3 if ctype == 2 else 4
    stride = w * ch
    try:
        raw = zlib.decompress(b''.join(idat))
    except zlib.error as e:
        raise FormatError(f'{path}: bad zlib data: {e}') from None
    if len(raw) != h * (stride + 1):
        raise FormatError(f'{path}: image data is {len(raw)} bytes, expected {h * (stride + 1)}')
    rows = np.frombuffer(raw, np.uint8).reshape(h, stride + 1)
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        ft, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if ft == 0:
            cur = line
        elif ft == 1:                          # running sum per channel, modulo 256
            cur = (np.cumsum(line.reshape(w, ch), axis=0) & 255).reshape(stride)
        elif ft == 2:
            cur = (line + prev) & 255
        elif ft == 3:
            cur = line.copy()
            for x in range(stride):
                left = cur[x - ch] if x >= ch else 0
                cur[x] = (cur[x] + ((left + prev[x]) >> 1)) & 255
        elif ft == 4:
            cur = line.copy()
            for x in range(stride):
                a = cur[x - ch] if x >= ch else 0
                c = prev[x - ch] if x >= ch else 0
                cur[x] = (cur[x] + _paeth(a, prev[x], c)) & 255
        else:
            raise FormatError(f'{path}: row {y} has filter type {ft} (PNG defines 0-4)')
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)[:, :, :3].copy()


def _filter_rows(img):
    """Per row: the filtered bytes with the smallest sum of |signed byte| (libpng's heuristic)."""
    h, stride = img.shape
    a = img.astype(np.int32)
    left = np.zeros_like(a)
    left[:, 3:] = a[:, :-3]
    up = np.zeros_like(a)
    up[1:] = a[:-1]
    ul = np.zeros_like(a)
    ul[1:, 3:] = a[:-1, :-3]
    p = left + up - ul
    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - ul)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, ul))
    cands = [a, a - left, a - up, a - ((left + up) >> 1), a - paeth]
    out = bytearray()
    for y in range(h):
        best, bcost = 0, None
        for k, c in enumerate(cands):
            v = c[y] & 255
            cost = int(np.minimum(v, 256 - v).sum())
            if bcost is None or cost < bcost:
                best, bcost = k, cost
        out.append(best)
        out += (cands[best][y] & 255).astype(np.uint8).tobytes()
    return bytes(out)


def write_png(path, rgb):
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise FormatError(f'write_png: need [H, W, 3] uint8, got {rgb.shape}')
    h, w, _ = rgb.shape

    def chunk(typ, body):
        return struct.pack('>I', len(body)) + typ + body + \
            struct.pack('>I', zlib.crc32(typ + body) & 0xFFFFFFFF)
    raw = _filter_rows(rgb.reshape(h, w * 3))
    png = _PNG_SIG + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + \
        chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b'')
    with open(path, 'wb') as f:
        f.write(png)
