#!/usr/bin/python3
"""hamer_export_onnx.py: exports the HaMeR network of tools/ref/hamer_ref.py (ViT-H backbone +
transformer-decoder head; no crop, no MANO) to ONNX, for benchmarks against ONNX Runtime.

  hamer_export_onnx.py --weights F.safetensors --out DIR [--batch B] [--check] [--threads N]
  hamer_export_onnx.py --random [--depth N] [--seed S] --out DIR [--batch B] [--check]
  hamer_export_onnx.py ... --skeleton --out DIR

Writes
  DIR/hamer.onnx        opset 17, eval, constant folding; input `input` [batch,3,256,192] float32
                        (the ImageNet-normalised crop, hamer_ref.py's `input`), outputs
                        `tokens` [batch,192,1280] (after last_norm), `pose96` [batch,96],
                        `betas` [batch,10], `cam` [batch,3]; the batch axis is dynamic.
                        Weights above 1.5 GB (depth >= ~18) go to DIR/hamer.onnx.data (one
                        external-data file next to the model; perceive's importer and ORT read it).
  DIR/inputs.npz        {input: [B,3,256,192]} (a seeded synthetic crop, normalised), B = --batch
                        (default 1): the feed for `perceive onnx run|bench` and tools/gen/ort_run.mjs.
  --skeleton            instead of hamer.onnx: DIR/skeleton.onnx with the float initializers'
                        data stripped (tools/gen/models.py's rule) + inputs.npz + seed.txt, the
                        layout bench/run_models.sh expects (copy DIR to bench/models/<name>;
                        `perceive onnx fill` refills it with seeded values).
  --check               runs ONNX Runtime (node tools/gen/ort_run.mjs; needs
                        `cd tools/gen && npm install --onnxruntime-node-install=skip`) on
                        inputs.npz and compares every output with the torch module
                        (max |diff| / max |ref| per output, must be < 1e-3).

Benchmark use (same way as bench/run_models.sh runs its graphs):
  build/perceive onnx bench DIR/hamer.onnx --inputs DIR/inputs.npz --threads 2 --iters 5 --json F
  node tools/gen/ort_run.mjs DIR/hamer.onnx DIR/inputs.npz --bench 5 --json F --threads 2
Full depth with --random takes ~2.7 GB of RAM for the module plus the export's copy.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'gen'))
import hamer_ref as ref  # noqa: E402
import fixture_io as fio  # noqa: E402

OPSET = 17
EXTERNAL_ABOVE = 1.5e9


class Exportable(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        tokens, _tok, pose, betas, cam = self.net(x)
        return tokens, pose, betas, cam


def make_inputs(batch):
    r = fio.rng_of('hamer/onnx_input')
    yy, xx = np.mgrid[0:256, 0:192].astype(np.float64)
    crops = []
    for _ in range(batch):
        img = np.stack([128 + 60 * np.sin(xx * r.uniform(0.02, 0.1) + yy * r.uniform(0.02, 0.1)
                                          + r.uniform(0, 6)) for _ in range(3)], -1)
        crops.append(np.clip(np.rint(img + r.normal(0, 4, img.shape)), 0, 255))
    return ref.normalise(np.stack(crops))


def export(net, out_dir, batch, skeleton=False):
    os.makedirs(out_dir, exist_ok=True)
    x = torch.from_numpy(make_inputs(batch))
    warnings.filterwarnings('ignore', message='The shape inference of prim::Constant')
    warnings.filterwarnings('ignore', category=torch.jit.TracerWarning)   # int(shape): fixed sizes
    nbytes = sum(p.numel() * 4 for p in net.parameters())
    names = ['tokens', 'pose96', 'betas', 'cam']
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        raw = os.path.join(tmp, 'raw.onnx')
        with torch.no_grad():
            torch.onnx.export(Exportable(net), (x,), raw, opset_version=OPSET,
                              do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
                              input_names=['input'], output_names=names,
                              dynamic_axes={'input': {0: 'batch'}, **{n: {0: 'batch'} for n in names}})
        model = onnx.load(raw, load_external_data=True)
    model.producer_name = 'perceive-hamer_export_onnx.py'
    for f in ('hamer.onnx', 'hamer.onnx.data', 'skeleton.onnx'):
        if os.path.exists(os.path.join(out_dir, f)):
            os.remove(os.path.join(out_dir, f))
    if skeleton:
        import models as gen_models          # tools/gen/models.py: one stripping rule
        stripped, kept = gen_models.strip_initializers(model)
        path = os.path.join(out_dir, 'skeleton.onnx')
        onnx.save(model, path)
        with open(os.path.join(out_dir, 'seed.txt'), 'w') as f:
            f.write('1\n')
        print(f'export: {path}: {stripped} initializers stripped, {kept} kept')
    else:
        path = os.path.join(out_dir, 'hamer.onnx')
        if nbytes > EXTERNAL_ABOVE:
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location='hamer.onnx.data', size_threshold=1024)
        else:
            onnx.save(model, path)
        onnx.checker.check_model(path)
    fio.save_npz(os.path.join(out_dir, 'inputs.npz'), {'input': x.numpy()}, compress=True)
    ops = sorted({n.op_type for n in model.graph.node})
    print(f'export: {path}: {len(model.graph.node)} nodes, ops {",".join(ops)}; '
          f'{nbytes / 2**20:.0f} MiB of weights; inputs.npz batch {batch}')
    return x


def check(net, x, out_dir, threads):
    with torch.no_grad():
        want = dict(zip(['tokens', 'pose96', 'betas', 'cam'], (t.numpy() for t in Exportable(net)(x))))
    got_path = os.path.join(out_dir, 'ort_out.npz')
    cmd = ['node', os.path.join(HERE, '..', 'gen', 'ort_run.mjs'), os.path.join(out_dir, 'hamer.onnx'),
           os.path.join(out_dir, 'inputs.npz'), got_path, '--threads', str(threads)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f'check: ONNX Runtime failed: {p.stderr.strip()[-800:]}')
        return False
    got = fio.load_npz(got_path)
    os.remove(got_path)
    ok = True
    for k, w in want.items():
        d = float(np.max(np.abs(got[k] - w))) / max(float(np.max(np.abs(w))), 1e-30)
        ok &= got[k].shape == w.shape and d < 1e-3
        print(f'check: {k} {list(w.shape)}: max|ORT - torch| / max|torch| = {d:.2e}')
    print(f'check: ONNX Runtime {"agrees" if ok else "DISAGREES"} ({time.time() - t0:.1f} s)')
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument('--weights')
    src.add_argument('--random', action='store_true')
    ap.add_argument('--depth', type=int, default=32)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--out', required=True)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--skeleton', action='store_true')
    ap.add_argument('--check', action='store_true')
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(max(1, a.threads))
    if a.weights:
        net = ref.load_weights(a.weights)[0]
    else:
        if not 1 <= a.depth <= 32:
            ap.error('--depth must be 1..32')
        net = ref.random_net(a.depth, a.seed)
    x = export(net, a.out, a.batch, a.skeleton)
    if a.check and not a.skeleton:
        return 0 if check(net, x, a.out, a.threads) else 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
