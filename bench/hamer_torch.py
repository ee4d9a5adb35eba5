#!/usr/bin/python3
"""hamer_torch.py: times the PyTorch re-statement of HaMeR's network (tools/ref/hamer_ref.py:
ViT-H backbone + decoder head, no crop, no MANO) on one normalised crop, for BENCHMARKS.md.

  hamer_torch.py --weights F.safetensors --input inputs.npz --iters N --threads T --json OUT

inputs.npz: {input: [1,3,256,192] float32} (tools/ref/hamer_export_onnx.py writes it). One
warm-up forward, then N timed ones under torch.no_grad(); writes {p50_ms, first_ms, iters,
threads, torch_version, blas} to OUT.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools', 'ref'))
import hamer_ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--weights', required=True)
    ap.add_argument('--input', required=True)
    ap.add_argument('--iters', type=int, default=3)
    ap.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    ap.add_argument('--json', required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    net, _, meta = hamer_ref.load_weights(a.weights)
    x = torch.from_numpy(np.load(a.input)['input'].astype(np.float32))
    times = []
    with torch.no_grad():
        t0 = time.perf_counter()
        net(x)
        first = (time.perf_counter() - t0) * 1e3
        for _ in range(a.iters):
            t0 = time.perf_counter()
            net(x)
            times.append((time.perf_counter() - t0) * 1e3)
    # Debian's torch calls the system BLAS (libblas.so.3, an alternative): say which one ran
    blas = 'unknown'
    for line in open('/proc/self/maps'):
        if 'libblas' in line or 'libopenblas' in line:
            path = line.split()[-1]
            blas = 'OpenBLAS' if 'openblas' in os.path.realpath(path) else 'reference BLAS' if 'blas/' in path else path
            break
    json.dump({'p50_ms': float(np.median(times)), 'first_ms': first, 'iters': a.iters, 'threads': a.threads,
               'torch_version': torch.__version__, 'blas': blas, 'depth': int(meta['depth']),
               'openblas_coretype': os.environ.get('OPENBLAS_CORETYPE', ''),
               'openblas_num_threads': os.environ.get('OPENBLAS_NUM_THREADS', '')}, open(a.json, 'w'))
    print(f'hamer_torch: threads {a.threads}: p50 {np.median(times):.1f} ms (first {first:.1f} ms)')


if __name__ == '__main__':
    main()
