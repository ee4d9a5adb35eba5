#!/usr/bin/python3
"""models.py: model-shaped agreement fixtures for perceive (tests/fixtures/models/<name>/).

Each model is written in torch, exported with torch.onnx.export (opset 17, eval mode,
do_constant_folding=True) with random weights, and committed as a *skeleton*: every float
initializer loses its data (name, dims and data_type stay), so the file is a few KB, with two
exceptions that are semantics rather than weights: tensors of at most KEEP_MAX elements
(scalar constants an exporter may store as initializers), the running mean/variance of a
BatchNormalization the exporter did not fold (a random variance can be negative: NaNs), and
initializers holding a buffer a module lists in `structural` (structure, not weights: METEOR's
ground points and pooling matrices). A module's `fill_hints` {parameter: (lo, hi)} become
"fill=uniform:LO:HI" doc_strings that `onnx fill` honours. Large Constant nodes keep their data.
A fixture folder may carry a hand-written tolerance.txt (see tests/ops/conformance.c).
`perceive onnx fill SKELETON FILLED --seed 1` fills the data-less ones with seeded values;
ONNX Runtime then runs FILLED on the committed inputs.npz.

Commands:
  models.py export [NAME...]         skeleton.onnx + inputs.npz for each model
  models.py expected NAME FILLED OUT  ORT outputs of FILLED (raw, from ort_run.mjs) ->
                                      the committed expected.npz (see below)
  models.py testfill SKELETON OUT     a Python stand-in for `perceive onnx fill` (tests of
                                      this tool only; fixtures must use the C fill)

expected.npz holds each output under its graph name when it has at most FULL_MAX elements.
Larger outputs (and the inputs that would be too large to commit, see make_input) are stored
as a strided sample so that the fixtures stay small:
  <name>.sampled  float32 1-D, = output.reshape(-1)[::stride]
  <name>.stride   int64 scalar (a prime, so samples walk across rows, columns and channels)
  <name>.shape    int64 1-D, the full output shape
"""
import argparse
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

import fixture_io as fio
import meteor_blocks

KEEP_MAX = 16          # float initializers up to this many elements keep their data
FULL_MAX = 32768       # outputs up to this many elements are stored whole
OPSET = 17
MODELS_DIR = os.path.join(fio.ROOT, 'tests', 'fixtures', 'models')


def _torch():
    import torch  # imported lazily: `expected` and `testfill` do not need torch
    return torch


# ---- the networks ----
def build_networks():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class ConvBNReLU(nn.Sequential):
        def __init__(self, cin, cout, k=3, s=1, eps=1e-3, groups=1, act='relu'):
            layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                      nn.BatchNorm2d(cout, eps=eps)]
            layers.append(nn.ReLU() if act == 'relu' else nn.GELU())
            super().__init__(*layers)

    class BevDense(nn.Module):
        """BEVFusion-L SECOND + SECONDFPN + dense heatmap head (spec 2.4-2.6)."""
        def __init__(self):
            super().__init__()
            self.block1 = nn.Sequential(ConvBNReLU(256, 128),
                                        *[ConvBNReLU(128, 128) for _ in range(5)])
            self.block2 = nn.Sequential(ConvBNReLU(128, 256, s=2),
                                        *[ConvBNReLU(256, 256) for _ in range(5)])
            self.up1 = ConvBNReLU(128, 256, k=1)
            self.up2 = nn.Sequential(nn.ConvTranspose2d(256, 256, 2, 2, bias=False),
                                     nn.BatchNorm2d(256, eps=1e-3), nn.ReLU())
            self.shared_conv = nn.Conv2d(512, 128, 3, 1, 1, bias=True)
            self.heat1 = ConvBNReLU(128, 128, eps=1e-5)
            self.heat2 = nn.Conv2d(128, 5, 3, 1, 1, bias=True)

        def forward(self, x):
            b1 = self.block1(x)
            b2 = self.block2(b1)
            f = torch.cat([self.up1(b1), self.up2(b2)], dim=1)
            return torch.sigmoid(self.heat2(self.heat1(self.shared_conv(f))))

    class VitBlock(nn.Module):
        """ViT-H block: pre-LN, MHSA with explicit MatMul/Softmax, erf GELU MLP."""
        def __init__(self, dim=1280, heads=16, mlp=5120):
            super().__init__()
            self.heads = heads
            self.scale = (dim // heads) ** -0.5
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.qkv = nn.Linear(dim, 3 * dim, bias=True)
            self.proj = nn.Linear(dim, dim)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.fc1 = nn.Linear(dim, mlp)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(mlp, dim)

        def forward(self, x):
            b, n, c = x.shape
            h = self.norm1(x)
            qkv = self.qkv(h).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = torch.matmul(q * self.scale, k.transpose(-2, -1)).softmax(dim=-1)
            o = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, c)
            x = x + self.proj(o)
            return x + self.fc2(self.act(self.fc1(self.norm2(x))))

    class Vit4(nn.Module):
        def __init__(self, depth=4):
            super().__init__()
            self.blocks = nn.Sequential(*[VitBlock() for _ in range(depth)])

        def forward(self, x):
            return self.blocks(x)

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, s):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, s, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if s != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, s, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            y = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(y)) + idt)

    class ResNet34FPN(nn.Module):
        """ResNet-34 (BasicBlocks [3,4,6,3]) + FPN (256 ch) -> P2..P5."""
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for cout, n, s in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                blocks = [BasicBlock(cin, cout, s)] + [BasicBlock(cout, cout, 1)
                                                       for _ in range(n - 1)]
                layers.append(nn.Sequential(*blocks))
                cin = cout
            self.layers = nn.ModuleList(layers)
            self.lateral = nn.ModuleList([nn.Conv2d(c, 256, 1) for c in (64, 128, 256, 512)])
            self.output = nn.ModuleList([nn.Conv2d(256, 256, 3, 1, 1) for _ in range(4)])

        def forward(self, x):
            feats = []
            x = self.stem(x)
            for layer in self.layers:
                x = layer(x)
                feats.append(x)
            lat = [m(f) for m, f in zip(self.lateral, feats)]
            p = [None] * 4
            p[3] = lat[3]
            for i in (2, 1, 0):
                up = F.interpolate(p[i + 1], size=lat[i].shape[-2:], mode='nearest')
                p[i] = lat[i] + up
            return tuple(m(v) for m, v in zip(self.output, p))

    class InvertedResidual(nn.Module):
        """MobileNet-style block: expand, depthwise, squeeze-excite, project, residual."""
        def __init__(self, c, e=2):
            super().__init__()
            self.expand = ConvBNReLU(c, c * e, k=1, act='gelu')
            self.dw = ConvBNReLU(c * e, c * e, k=3, groups=c * e, act='gelu')
            self.se1 = nn.Conv2d(c * e, c * e // 4, 1)
            self.se2 = nn.Conv2d(c * e // 4, c * e, 1)
            self.project = nn.Sequential(nn.Conv2d(c * e, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            h = self.dw(self.expand(x))
            s = torch.sigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(h, 1)))))
            return x + self.project(h * s)

    class Unseen(nn.Module):
        """A small UNet-ish net with depthwise convs, erf GELU, SE, bilinear Resize, concat,
        max pooling and a classification head; never tuned for."""
        def __init__(self):
            super().__init__()
            self.stem = ConvBNReLU(3, 24, s=2, act='gelu')
            self.enc1 = InvertedResidual(24)
            self.down2 = nn.Sequential(ConvBNReLU(24, 24, k=3, s=2, groups=24, act='gelu'),
                                       ConvBNReLU(24, 48, k=1))
            self.enc2 = InvertedResidual(48)
            self.pool = nn.MaxPool2d(2, 2)
            self.mix3 = ConvBNReLU(48, 96, k=1, act='gelu')
            self.enc3 = InvertedResidual(96)
            self.dec2 = ConvBNReLU(96 + 48, 48)
            self.dec1 = ConvBNReLU(48 + 24, 24)
            self.head = nn.Conv2d(24, 8, 1)
            self.cls = nn.Linear(96, 10)

        def forward(self, x):
            e1 = self.enc1(self.stem(x))
            e2 = self.enc2(self.down2(e1))
            e3 = self.enc3(self.mix3(self.pool(e2)))
            d2 = self.dec2(torch.cat([F.interpolate(e3, scale_factor=2.0, mode='bilinear',
                                                    align_corners=False), e2], 1))
            d1 = self.dec1(torch.cat([F.interpolate(d2, scale_factor=2.0, mode='bilinear',
                                                    align_corners=False), e1], 1))
            seg = F.interpolate(self.head(d1), scale_factor=2.0, mode='bilinear',
                                align_corners=True)
            logits = self.cls(torch.flatten(F.adaptive_avg_pool2d(e3, 1), 1))
            return seg, torch.softmax(logits, dim=-1)

    return {
        'bev_dense': (BevDense, [('bev_features', [1, 256, 180, 180])], ['heatmap']),
        'vit4': (Vit4, [('tokens', [1, 192, 1280])], ['tokens_out']),
        # bench only (bench/models): ViT-H's full depth, 32 blocks (2.5 GB of fp32 weights once filled)
        'vit32': (lambda: Vit4(32), [('tokens', [1, 192, 1280])], ['tokens_out']),
        'cam_resnet34_fpn': (ResNet34FPN, [('image', [1, 3, 432, 768])],
                             ['p2', 'p3', 'p4', 'p5']),
        'unseen': (Unseen, [('image', [1, 3, 128, 160])], ['seg_logits', 'class_probs']),
        **meteor_blocks.networks(torch),
    }


MODEL_NAMES = ['bev_dense', 'vit4', 'cam_resnet34_fpn', 'unseen', 'meteor_lift', 'meteor_heads']


# ---- inputs: seeded, and low-entropy enough to commit compressed ----
def make_input(model, name, shape):
    r = fio.rng_of(f'{model}/{name}')
    v = meteor_blocks.make_input(r, model, name, shape)
    if v is not None:
        return v
    if model == 'bev_dense':
        # A BEV feature map after the sparse encoder: ReLU'd features in ~4% of the cells
        # (clustered like LiDAR returns), zeros elsewhere; values on a 1/16 grid.
        _, c, h, w = shape
        occ = np.zeros((h, w), bool)
        for _ in range(30):
            cy, cx = r.integers(0, h), r.integers(0, w)
            ry, rx = r.integers(2, 9, size=2)
            yy, xx = np.ogrid[:h, :w]
            blob = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
            occ |= blob & (r.random((h, w)) < 0.7)
        v = np.maximum(r.standard_normal((c, h, w)), 0) * occ
        return (np.round(np.minimum(v, 3) * 8) / 8).astype(np.float32)[None]
    if model in ('vit4', 'vit32'):
        return (np.round(r.standard_normal(shape) * 8) / 8).astype(np.float32)
    # Images: smooth random fields (upsampled coarse noise) on the 8-bit grid, normalized
    # with the ImageNet mean/std like a camera pipeline would.
    _, c, h, w = shape
    coarse = r.random((c, h // 8 + 2, w // 8 + 2))
    img = np.kron(coarse, np.ones((8, 8)))[:, :h, :w]
    img = np.round(np.clip(img + 0.08 * r.standard_normal((c, h, w)) * (r.random((c, h, w)) <
                                                                        0.03), 0, 1) * 255)
    mean = np.array([0.485, 0.456, 0.406])[:c, None, None]
    std = np.array([0.229, 0.224, 0.225])[:c, None, None]
    return ((img / 255 - mean) / std).astype(np.float32)[None]


# ---- export and skeletons ----
def _holds(arr, values):
    """True when initializer data arr equals one of values (as stored, or transposed)."""
    for v in values:
        if arr.size == v.size and (np.array_equal(arr.ravel(), v.ravel()) or
                                   (arr.ndim == 2 and np.array_equal(arr.T.ravel(), v.ravel()))):
            return True
    return False


def strip_initializers(model, structural=()):
    """Clears the data of float initializers (except the ones the module doc names, and those
    holding one of the `structural` arrays: ground points, pooling matrices)."""
    keep = set()
    for n in model.graph.node:
        if n.op_type == 'BatchNormalization':
            keep.update(n.input[3:5])
    stripped = kept = 0
    for t in model.graph.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                               onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE):
            continue
        if (t.name in keep or int(np.prod(t.dims, dtype=np.int64)) <= KEEP_MAX or
                (structural and _holds(numpy_helper.to_array(t), structural))):
            kept += 1
            continue
        t.ClearField('raw_data')
        t.ClearField('float_data')
        t.ClearField('double_data')
        t.ClearField('int32_data')
        stripped += 1
    return stripped, kept


def export(name, nets, out_root=None):
    torch = _torch()
    cls, inputs, outputs = nets[name]
    torch.manual_seed(fio.seed_of(name))
    net = cls().eval()
    # Non-trivial norm parameters, so that BN folding is exercised and no two parameters are
    # equal (the exporter would merge equal initializers behind Identity nodes).
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    args = tuple(torch.zeros(s) for _, s in inputs)
    # torch 1.13 warns about every Constant it exports; the warning carries no information.
    warnings.filterwarnings('ignore', message='The shape inference of prim::Constant')
    out_dir = os.path.join(out_root or MODELS_DIR, name)
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, 'full.onnx')
        with torch.no_grad():
            torch.onnx.export(net, args, full, opset_version=OPSET, do_constant_folding=True,
                              training=torch.onnx.TrainingMode.EVAL,
                              input_names=[n for n, _ in inputs], output_names=outputs)
        model = onnx.load(full)
    structural = [getattr(net, b).numpy() for b in getattr(net, 'structural', ())]
    stripped, kept = strip_initializers(model, structural)
    hints = dict(getattr(net, 'fill_hints', {}))
    for t in model.graph.initializer:
        if t.name in hints:
            t.doc_string = 'fill=uniform:%g:%g' % hints.pop(t.name)
    if hints:
        raise SystemExit(f'models: {name}: fill hints name no initializer: {", ".join(hints)}')
    model.producer_name = 'perceive-models.py'
    onnx.save(model, os.path.join(out_dir, 'skeleton.onnx'))
    feeds = {n: make_input(name, n, s) for n, s in inputs}
    fio.save_npz(os.path.join(out_dir, 'inputs.npz'), feeds, compress=True)
    ops = sorted({n.op_type for n in model.graph.node})
    print(f'models: {name}: {len(model.graph.node)} nodes, ops {",".join(ops)}; '
          f'{stripped} initializers stripped, {kept} small ones kept')


# ---- expected outputs ----
def _prime_at_least(n):
    n = max(2, int(n))
    while any(n % p == 0 for p in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def sample_outputs(arrays):
    """{name: full array} -> the committed expected.npz contents (see the module doc)."""
    out = {}
    for k, v in arrays.items():
        if v.size <= FULL_MAX:
            out[k] = v
            continue
        stride = _prime_at_least(np.ceil(v.size / FULL_MAX))
        out[k + '.sampled'] = np.ascontiguousarray(v.reshape(-1)[::stride])
        out[k + '.stride'] = np.array(stride, np.int64)
        out[k + '.shape'] = np.array(v.shape, np.int64)
    return out


def expected(name, filled, out_path):
    d = os.path.join(MODELS_DIR, name)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, 'out.npz')
        # One thread: the expected values must not depend on the machine's core count.
        ok, err = fio.ort_run(filled, os.path.join(d, 'inputs.npz'), raw, threads=1,
                              timeout=3600)
        if not ok:
            raise SystemExit(f'models: ORT failed on {filled}: {err}')
        outs = fio.load_npz(raw)
    for k, v in outs.items():
        if v.dtype.kind == 'f' and not np.all(np.isfinite(v)):
            raise SystemExit(f'models: {name}: output {k} has non-finite values')
        v64 = v.astype(np.float64)
        print(f'models: {name}: {k} {list(v.shape)} mean {v64.mean():.4g} std {v64.std():.4g}')
    fio.save_npz(out_path, sample_outputs(outs), compress=True)


def testfill(skeleton, out_path, seed=1, gain=3.0):
    """Python stand-in for `perceive onnx fill`: uniform +-sqrt(gain/fan_in)."""
    model = onnx.load(skeleton)
    r = np.random.default_rng(seed)
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT or t.raw_data or t.float_data:
            continue
        dims = list(t.dims)
        fan_in = int(np.prod(dims[1:])) if len(dims) > 1 else dims[0]
        a = np.sqrt(gain / max(fan_in, 1))
        v = r.uniform(-a, a, size=dims).astype(np.float32)
        t.raw_data = v.tobytes()
    onnx.save(model, out_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    e = sub.add_parser('export')
    e.add_argument('names', nargs='*', default=MODEL_NAMES)
    e.add_argument('--out-dir', help='write <name>/ here instead of tests/fixtures/models (bench-only graphs)')
    x = sub.add_parser('expected')
    x.add_argument('name')
    x.add_argument('filled')
    x.add_argument('out')
    t = sub.add_parser('testfill')
    t.add_argument('skeleton')
    t.add_argument('out')
    t.add_argument('--seed', type=int, default=1)
    t.add_argument('--gain', type=float, default=3.0, help='values in +-sqrt(gain/fan_in)')
    a = ap.parse_args()
    if a.cmd == 'export':
        nets = build_networks()
        for n in a.names:
            if n not in nets:
                raise SystemExit(f'models: unknown model {n} (have {", ".join(MODEL_NAMES)})')
            export(n, nets, a.out_dir)
    elif a.cmd == 'expected':
        expected(a.name, a.filled, a.out)
    else:
        testfill(a.skeleton, a.out, a.seed, a.gain)
    return 0


if __name__ == '__main__':
    sys.exit(main())
