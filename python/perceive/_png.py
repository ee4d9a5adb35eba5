"""A minimal PNG encoder (8-bit RGB, no filtering) for handing numpy images to the C library,
which reads images as JPEG or PNG files (hamer's "image" input)."""
import struct
import zlib

import numpy as np


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_rgb8(img):
    """img: H x W x 3 uint8 -> PNG bytes (filter type 0 on every row, zlib level 1: fast, lossless)."""
    h, w = img.shape[0], img.shape[1]
    rows = np.zeros((h, 1 + 3 * w), dtype=np.uint8)   # column 0: each row's filter byte (0, None)
    rows[:, 1:] = img.reshape(h, 3 * w)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)   # 8-bit, colour type 2 (RGB)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + _chunk(b"IEND", b""))
