#!/usr/bin/python3
"""hamer_ref.py: an independent PyTorch + numpy re-statement of HaMeR's per-crop regressor
(specs/hamer.md sections 2-5), the correctness reference for perceive's hamer bundle.

Written from the spec's formulas only (no code from HaMeR, smplx or manopth). Output conventions
are perceive's (src/models/hamer/hamer.h):
  - crop: integer pixel centres; ViT input pixel (row r, col c) samples the image at
      u = c + 32, k = b / 256,
      x = cx + sgn * ((u - 128) * k),  y = cy + (r - 128) * k      (sgn = +1 right, -1 left:
      a left hand is sampled mirrored about the box centre, i.e. the image mirrored about
      x = (W-1)/2), bilinear in float64:
      x0 = floor(x), fx = x - x0 (same for y),
      p = (1-fy) * ((1-fx) * I[y0,x0] + fx * I[y0,x0+1]) + fy * ((1-fx) * I[y0+1,x0] + fx * I[y0+1,x0+1])
      with pixels outside the image = 0 (black, before normalisation); rounded to the nearest
      integer, halves up (floor(p + 0.5)), when the image is not blurred, kept as float when it is.
  - box: cx = (x1+x2)/2, cy = (y1+y2)/2, wb = 2 (x2-x1), hb = 2 (y2-y1), b = max(hb, wb * 4 / 3)
    (evaluated as wb * 4.0 / 3.0); blur when d = b / 512 > 1.1 with sigma = (d - 1) / 2: the whole
    image (float64) filtered along rows (axis 0) then columns (axis 1) with the normalised
    kernel exp(-k^2 / (2 sigma^2)), |k| <= int(4 sigma + 0.5), edges replicated ('nearest').
  - normalisation (p - 255 mean) / (255 std) in float64, then float32, CHW RGB.
  - network (float32): ViT-H (patch conv padding 2, pos_embed[:,1:] + pos_embed[:,:1], pre-LN
    blocks eps 1e-6, exact GELU, attention scale 80^-0.5, last_norm) -> tokens [192,1280];
    decoder (one token = Linear(1->1024)(0) + pos_embedding, 6 layers of LN(1e-5)+SA, LN+CA to
    the tokens (scale 1/8), LN+FF (exact GELU), no final norm) -> token [1024]; readouts + init
    means -> pose96, betas, cam = (s, tx, ty).
  - rot6d: a1 = v[0:3], a2 = v[3:6], b1 = a1/max(|a1|,1e-12), b2 = normalise(a2 - (b1.a2) b1),
    b3 = b1 x b2, R = [b1 | b2 | b3] (columns).  MANO (float32): spec 5.2.
  - outputs: rotmats, pose96, betas, cam are the network's (right-hand frame). For a left hand
    (sgn = -1) vertices / keypoints_3d have x negated, global_orient / hand_pose are M R M
    (M = diag(-1,1,1)), cam_t = (sgn tx, ty, 2*5000/(256 s + 1e-9)).
    kp_n = (5000/256) * (X + tx, Y + ty) / (Z + tz) from the right-frame keypoints and the raw
    (tx, ty, tz); keypoints_2d_crop = 256 kp_n + 128 (pixels of the 256x256 crop the network saw,
    mirrored for a left hand); keypoints_2d (image pixels) = (cx + sgn b kp_n.x, cy + b kp_n.y);
    cam_t_full = (2 (cx - (W-1)/2) / bs + sgn tx, 2 (cy - (H-1)/2) / bs + ty, 2 f_full / bs)
    with f_full = 5000/256 max(W, H), bs = b s + 1e-9. Camera maths in float64.
  vertices / keypoints_3d are in the MANO frame (metres, no translation).

Usage
  hamer_ref.py --weights F.safetensors --crop CROP.npy [--is-right 1,0,...] --out OUT.npz
      CROP.npy: [256,192,3] or [B,256,192,3] RGB pixels (uint8 or float), what the ViT sees.
      No image geometry: keypoints_2d / cam_t_full are not written.
  hamer_ref.py --weights F.safetensors --image IMG.png --box x1,y1,x2,y2[,is_right] [--box ...]
               --out OUT.npz
      is_right defaults to 1 (write --box=x1,... when x1 is negative). The PNG must be 8-bit
      RGB/RGBA, non-interlaced.
  common: [--threads N] (torch intra-op threads, default 2) [--compress] [--quiet]
  hamer_ref.py --gen-random OUT.safetensors [--depth N] [--seed S]
      a random weights file in perceive's hamer.safetensors format (weights="generated"), with a
      synthetic MANO-shaped array set; for development until `perceive gen hamer` is at hand.
  hamer_ref.py --selftest          structural and numerical self-checks (parameter counts
      630,912,000 / 39,497,837 on the meta device, rot6d, MANO at rest, crop mirroring, blur)

OUT.npz keys (B = number of crops / boxes; float32 unless noted):
  crop [B,256,192,3] (pixel values, RGB)   input [B,3,256,192]   tokens [B,192,1280]
  token [B,1024]   pose96 [B,96]   betas [B,10]   cam [B,3]   rotmats [B,16,3,3]
  global_orient [B,3,3]   hand_pose [B,15,3,3]   vertices [B,778,3]   keypoints_3d [B,21,3]
  keypoints_2d_crop [B,21,2]   cam_t [B,3]   is_right [B] uint8
  image mode also: boxes [B,4]   center [B,2]   box_size [B]   sigma [B]   keypoints_2d [B,21,2]
  cam_t_full [B,3]   image_size [2] int64 (W, H)
  and weights_sha256 [32] uint8, depth int64 scalar.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hamer_st as st  # noqa: E402

# ---- constants (spec sections 0, 2, 4, 5) ----
PATCH = 256
H_IN, W_IN = 256, 192
COL0 = 32                       # ViT input column 0 = square-crop column 32
FOCAL = 5000.0
RESCALE = 2.0
BLUR_D = 1.1
MEAN255 = np.array([0.485, 0.456, 0.406], np.float64) * 255.0
STD255 = np.array([0.229, 0.224, 0.225], np.float64) * 255.0
VIT_DIM, VIT_HEADS, VIT_MLP, GRID = 1280, 16, 5120, (16, 12)
NTOK = GRID[0] * GRID[1]
DEC_DIM, DEC_HEADS, DEC_HEAD_DIM, DEC_MLP, DEC_DEPTH = 1024, 8, 64, 1024, 6
NV, NF, NJ, NKP, NBETAS, NPOSE = 778, 1538, 16, 21, 10, 96
TIP_VERTS = [744, 320, 443, 554, 671]
MANO_TO_OPENPOSE = [0, 13, 14, 15, 16, 1, 2, 3, 17, 4, 5, 6, 18, 10, 11, 12, 19, 7, 8, 9, 20]
MANO_PARENTS = [-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11, 0, 13, 14]
FORMAT = 'perceive-hamer'
FORMAT_VERSION = '1'


# ==== pre-processing (numpy float64) ====
def box_geometry(box, image_w, image_h):
    """box = (x1, y1, x2, y2, is_right) -> dict(cx, cy, b, sigma, is_right, W, H)."""
    x1, y1, x2, y2 = (float(v) for v in box[:4])
    is_right = bool(box[4]) if len(box) > 4 else True
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)) or not (x2 > x1 and y2 > y1):
        raise ValueError(f'box {box}: need finite x1 < x2 and y1 < y2')
    cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
    wb, hb = RESCALE * (x2 - x1), RESCALE * (y2 - y1)
    b = max(hb, wb * 4.0 / 3.0)
    d = b / 256.0 / 2.0
    sigma = (d - 1.0) / 2.0 if d > BLUR_D else 0.0
    return dict(cx=cx, cy=cy, b=b, sigma=sigma, is_right=is_right, W=image_w, H=image_h)


def gaussian_blur(img, sigma):
    """img [H,W,C] -> float64, separable Gaussian along axis 0 then axis 1, 'nearest' edges."""
    out = np.asarray(img, np.float64)
    if sigma <= 0:
        return out.copy()
    r = int(4.0 * sigma + 0.5)
    k = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / sigma) ** 2)
    k /= k.sum()
    for axis in (0, 1):
        n = out.shape[axis]
        acc = np.zeros_like(out)
        for t in range(-r, r + 1):
            idx = np.clip(np.arange(n) + t, 0, n - 1)
            acc += k[t + r] * np.take(out, idx, axis=axis)
        out = acc
    return out


def sample_crop(img, geom, rounded):
    """The 256x192 ViT window [256,192,3] float64 (see the module doc for the formula)."""
    h, w = img.shape[:2]
    k = geom['b'] / 256.0
    sgn = 1.0 if geom['is_right'] else -1.0
    u = np.arange(W_IN, dtype=np.float64) + COL0
    v = np.arange(H_IN, dtype=np.float64)
    xs = geom['cx'] + sgn * ((u - 128.0) * k)
    ys = geom['cy'] + (v - 128.0) * k
    x0, y0 = np.floor(xs), np.floor(ys)
    fx, fy = xs - x0, ys - y0
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    src = np.asarray(img, np.float64)

    def tap(yi, xi):
        ok = ((yi >= 0) & (yi < h))[:, None] & ((xi >= 0) & (xi < w))[None, :]
        val = src[np.clip(yi, 0, h - 1)[:, None], np.clip(xi, 0, w - 1)[None, :]]
        return np.where(ok[..., None], val, 0.0)
    fxb, fyb = fx[None, :, None], fy[:, None, None]
    top = (1.0 - fxb) * tap(y0, x0) + fxb * tap(y0, x0 + 1)
    bot = (1.0 - fxb) * tap(y0 + 1, x0) + fxb * tap(y0 + 1, x0 + 1)
    p = (1.0 - fyb) * top + fyb * bot
    return np.floor(p + 0.5) if rounded else p


def crop_tie_margin(img, geom):
    """Smallest |frac(p) - 0.5| over the crop before rounding (1 when blurred): a fixture whose
    margin is tiny would depend on the order of the bilinear sums."""
    if geom['sigma'] > 0:
        return 1.0
    p = sample_crop(img, geom, rounded=False)
    return float(np.min(np.abs(p - np.floor(p) - 0.5)))


def crop_from_image(img, geom):
    """uint8 image [H,W,3] RGB + geometry -> (crop [256,192,3] float64, blurred?)."""
    if geom['sigma'] > 0:
        return sample_crop(gaussian_blur(img, geom['sigma']), geom, rounded=False), True
    return sample_crop(img, geom, rounded=True), False


def normalise(crop):
    """[...,256,192,3] pixels -> [...,3,256,192] float32."""
    x = (np.asarray(crop, np.float64) - MEAN255) / STD255
    return np.ascontiguousarray(np.moveaxis(x, -1, -3).astype(np.float32))


# ==== the network (float32 torch); parameter names = the weights file's keys ====
class ViTAttention(nn.Module):
    def __init__(self, dim, heads, device=None):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.scale = self.hd ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=True, device=device)
        self.proj = nn.Linear(dim, dim, device=device)

    def forward(self, x):
        n, c = int(x.shape[1]), int(x.shape[2])      # fixed sizes (only the batch is dynamic)
        qkv = self.qkv(x).reshape(-1, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                     # [B, heads, N, hd]
        att = torch.softmax(torch.matmul(q * self.scale, k.transpose(-2, -1)), dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(-1, n, c)
        return self.proj(o)


class ViTMlp(nn.Module):
    def __init__(self, dim, hidden, device=None):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, device=device)
        self.fc2 = nn.Linear(hidden, dim, device=device)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, hidden, device=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6, device=device)
        self.attn = ViTAttention(dim, heads, device)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6, device=device)
        self.mlp = ViTMlp(dim, hidden, device)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, dim, device=None):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=16, stride=16, padding=2, device=device)


class ViTH(nn.Module):
    def __init__(self, depth=32, dim=VIT_DIM, heads=VIT_HEADS, hidden=VIT_MLP, device=None):
        super().__init__()
        self.patch_embed = PatchEmbed(dim, device)
        self.pos_embed = nn.Parameter(torch.zeros(1, NTOK + 1, dim, device=device))
        self.blocks = nn.ModuleList([ViTBlock(dim, heads, hidden, device) for _ in range(depth)])
        self.last_norm = nn.LayerNorm(dim, eps=1e-6, device=device)

    def forward(self, x):
        """x [B,3,256,192] normalised -> tokens [B,192,dim] (after last_norm)."""
        t = self.patch_embed.proj(x)                          # [B, dim, 16, 12]
        t = t.reshape(-1, int(t.shape[1]), NTOK).transpose(1, 2)   # token n = i * 12 + j
        t = t + (self.pos_embed[:, 1:] + self.pos_embed[:, :1])
        for blk in self.blocks:
            t = blk(t)
        return self.last_norm(t)


class PreNorm(nn.Module):
    def __init__(self, dim, fn, device=None):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5, device=device)
        self.fn = fn


class DecSelfAttention(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        inner = DEC_HEADS * DEC_HEAD_DIM
        self.to_qkv = nn.Linear(DEC_DIM, 3 * inner, bias=False, device=device)
        self.to_out = nn.ModuleDict({'0': nn.Linear(inner, DEC_DIM, device=device)})

    def forward(self, x):
        n = int(x.shape[1])
        inner = DEC_HEADS * DEC_HEAD_DIM
        qkv = self.to_qkv(x)
        q, k, v = qkv[..., :inner], qkv[..., inner:2 * inner], qkv[..., 2 * inner:]
        q, k, v = (t.reshape(-1, n, DEC_HEADS, DEC_HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * DEC_HEAD_DIM ** -0.5, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(-1, n, DEC_HEADS * DEC_HEAD_DIM)
        return self.to_out['0'](o)


class DecCrossAttention(nn.Module):
    def __init__(self, context_dim=VIT_DIM, device=None):
        super().__init__()
        inner = DEC_HEADS * DEC_HEAD_DIM
        self.to_q = nn.Linear(DEC_DIM, inner, bias=False, device=device)
        self.to_kv = nn.Linear(context_dim, 2 * inner, bias=False, device=device)
        self.to_out = nn.ModuleDict({'0': nn.Linear(inner, DEC_DIM, device=device)})

    def forward(self, x, ctx):
        n, m = int(x.shape[1]), int(ctx.shape[1])
        q = self.to_q(x).reshape(-1, n, DEC_HEADS, DEC_HEAD_DIM).transpose(1, 2)
        inner = DEC_HEADS * DEC_HEAD_DIM
        kv = self.to_kv(ctx)                                  # K = outputs 0..511, V = 512..1023
        k, v = kv[..., :inner], kv[..., inner:]
        k = k.reshape(-1, m, DEC_HEADS, DEC_HEAD_DIM).transpose(1, 2)
        v = v.reshape(-1, m, DEC_HEADS, DEC_HEAD_DIM).transpose(1, 2)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * DEC_HEAD_DIM ** -0.5, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(-1, n, DEC_HEADS * DEC_HEAD_DIM)
        return self.to_out['0'](o)


class DecFeedForward(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.net = nn.ModuleDict({'0': nn.Linear(DEC_DIM, DEC_MLP, device=device),
                                  '3': nn.Linear(DEC_MLP, DEC_DIM, device=device)})

    def forward(self, x):
        return self.net['3'](F.gelu(self.net['0'](x)))


class DecLayers(nn.Module):
    def __init__(self, depth, device=None):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.ModuleList([PreNorm(DEC_DIM, DecSelfAttention(device), device),
                           PreNorm(DEC_DIM, DecCrossAttention(device=device), device),
                           PreNorm(DEC_DIM, DecFeedForward(device), device)])
            for _ in range(depth)])


class TokenDecoder(nn.Module):
    def __init__(self, depth=DEC_DEPTH, device=None):
        super().__init__()
        self.to_token_embedding = nn.Linear(1, DEC_DIM, device=device)
        self.pos_embedding = nn.Parameter(torch.zeros(1, 1, DEC_DIM, device=device))
        self.transformer = DecLayers(depth, device)

    def forward(self, ctx):
        """ctx [B,192,1280] -> [B,1024]: the one query token after the last layer."""
        zero = torch.zeros(1, 1, 1, dtype=ctx.dtype, device=ctx.device)
        x = self.to_token_embedding(zero) + self.pos_embedding           # [1,1,1024]
        # the same token for every crop: x stays [1,1,1024] until the cross-attention's
        # batched product broadcasts it to [B,1,1024]
        for sa, ca, ff in self.transformer.layers:
            x = sa.fn(sa.norm(x)) + x
            x = ca.fn(ca.norm(x), ctx) + x
            x = ff.fn(ff.norm(x)) + x
        return x[:, 0]


class ManoHead(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.transformer = TokenDecoder(device=device)
        self.decpose = nn.Linear(DEC_DIM, NPOSE, device=device)
        self.decshape = nn.Linear(DEC_DIM, NBETAS, device=device)
        self.deccam = nn.Linear(DEC_DIM, 3, device=device)
        self.register_buffer('init_hand_pose', torch.zeros(1, NPOSE, device=device))
        self.register_buffer('init_betas', torch.zeros(1, NBETAS, device=device))
        self.register_buffer('init_cam', torch.zeros(1, 3, device=device))

    def forward(self, tokens):
        tok = self.transformer(tokens)
        pose = self.decpose(tok) + self.init_hand_pose
        betas = self.decshape(tok) + self.init_betas
        cam = self.deccam(tok) + self.init_cam
        return tok, pose, betas, cam


class HaMeRNet(nn.Module):
    """normalised crop [B,3,256,192] -> tokens [B,192,1280], token [B,1024], pose96, betas, cam."""

    def __init__(self, depth=32, device=None):
        super().__init__()
        self.backbone = ViTH(depth, device=device)
        self.mano_head = ManoHead(device)

    def forward(self, x):
        tokens = self.backbone(x)
        tok, pose, betas, cam = self.mano_head(tokens)
        return tokens, tok, pose, betas, cam


def count_params(module):
    return sum(p.numel() for p in module.parameters())


# ==== weights file ====
def mano_shapes():
    return {'mano.v_template': ((NV, 3), 'F'), 'mano.shapedirs': ((NV, 3, NBETAS), 'F'),
            'mano.posedirs': ((NV, 3, 135), 'F'), 'mano.J_regressor': ((NJ, NV), 'F'),
            'mano.weights': ((NV, NJ), 'F'), 'mano.faces': ((NF, 3), 'I'),
            'mano.parents': ((NJ,), 'I')}


def expected_shapes(depth):
    """{key: shape} of every network tensor the file must hold for this depth."""
    net = HaMeRNet(depth, device='meta')
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def _assign(root, dotted, tensor):
    *path, leaf = dotted.split('.')
    mod = root
    for p in path:
        mod = mod[int(p)] if isinstance(mod, nn.ModuleList) else \
            (mod[p] if isinstance(mod, nn.ModuleDict) else getattr(mod, p))
    if leaf in mod._parameters:
        mod._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)
    elif leaf in mod._buffers:
        mod._buffers[leaf] = tensor
    else:
        raise KeyError(dotted)


def load_weights(path):
    """-> (HaMeRNet in eval mode, mano dict of torch tensors, metadata). Checks the format,
    every key and shape (missing / unexpected ones listed by name)."""
    hdr, meta, _, _ = st.read_header(path)
    if meta.get('format') != FORMAT or meta.get('format_version') != FORMAT_VERSION:
        raise ValueError(f'{path}: metadata format={meta.get("format")!r} '
                         f'format_version={meta.get("format_version")!r}, expected '
                         f'{FORMAT!r} / {FORMAT_VERSION!r}')
    try:
        depth = int(meta['depth'])
    except (KeyError, ValueError):
        raise ValueError(f'{path}: metadata depth missing or not an integer') from None
    if not 1 <= depth <= 32:
        raise ValueError(f'{path}: depth {depth} out of range 1..32')
    want = expected_shapes(depth)
    want.update({k: s for k, (s, _) in mano_shapes().items()})
    have = {k: tuple(e['shape']) for k, e in hdr.items()}
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    bad = sorted(k for k in set(want) & set(have) if want[k] != have[k])
    if missing or extra or bad:
        def lst(v):
            return f'{v[:8]}{" ..." if len(v) > 8 else ""} ({len(v)})'
        raise ValueError(f'{path} (depth {depth}): '
                         + (f'missing {lst(missing)}; ' if missing else '')
                         + (f'unexpected {lst(extra)}; ' if extra else '')
                         + '; '.join(f'{k}: {have[k]} != {want[k]}' for k in bad[:8]))
    for k, (_, kind) in mano_shapes().items():
        dt = hdr[k]['dtype']
        if (kind == 'I') != (dt == 'I32') or (kind == 'F' and dt not in st.FLOAT_DTYPES):
            raise ValueError(f'{path}: {k} has dtype {dt}, expected {"I32" if kind == "I" else "F32"}')
    for k in want:
        if not k.startswith('mano.') and hdr[k]['dtype'] not in st.FLOAT_DTYPES:
            raise ValueError(f'{path}: {k} has dtype {hdr[k]["dtype"]}, expected F32/F16/BF16')
    arrays, _ = st.read_safetensors(path)
    net = HaMeRNet(depth, device='meta')
    for k in net.state_dict():
        _assign(net, k, torch.from_numpy(np.ascontiguousarray(arrays.pop(k), np.float32)))
    net.eval()
    mano = {k[5:]: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    par = mano['parents'].tolist()
    if par[0] != -1 or any(not (0 <= p < i) for i, p in enumerate(par) if i):
        raise ValueError(f'{path}: mano.parents must be -1 then earlier joints, got {par}')
    f = mano['faces']
    if int(f.min()) < 0 or int(f.max()) >= NV:
        raise ValueError(f'{path}: mano.faces index out of 0..{NV - 1}')
    return net, mano, meta


# ==== rot6d, MANO, camera ====
def rot6d_to_rotmat(x):
    """[B,96] -> [B,16,3,3], columns b1, b2, b3."""
    v = x.reshape(-1, NJ, 6)
    a1, a2 = v[..., 0:3], v[..., 3:6]
    b1 = a1 / torch.clamp(torch.linalg.norm(a1, dim=-1, keepdim=True), min=1e-12)
    b2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    b2 = b2 / torch.clamp(torch.linalg.norm(b2, dim=-1, keepdim=True), min=1e-12)
    b3 = torch.cross(b1, b2, dim=-1)
    return torch.stack([b1, b2, b3], dim=-1)


def mano_forward(m, rotmats, betas):
    """Spec 5.2 (float32): rotmats [B,16,3,3], betas [B,10] -> (vertices [B,778,3],
    keypoints [B,21,3] in OpenPose order, posed joints [B,16,3]), MANO frame."""
    B = rotmats.shape[0]
    v_shaped = m['v_template'][None] + torch.einsum('vcl,bl->bvc', m['shapedirs'], betas)
    J = torch.einsum('jv,bvc->bjc', m['J_regressor'], v_shaped)
    eye = torch.eye(3, dtype=rotmats.dtype)
    pf = (rotmats[:, 1:] - eye).reshape(B, 15 * 9)
    v_posed = v_shaped + torch.einsum('vck,bk->bvc', m['posedirs'], pf)
    parents = m['parents'].tolist()
    G = []
    for i in range(NJ):
        t = J[:, i] if i == 0 else J[:, i] - J[:, parents[i]]
        Ti = torch.zeros(B, 4, 4, dtype=rotmats.dtype)
        Ti[:, :3, :3] = rotmats[:, i]
        Ti[:, :3, 3] = t
        Ti[:, 3, 3] = 1.0
        G.append(Ti if i == 0 else torch.matmul(G[parents[i]], Ti))
    G = torch.stack(G, 1)                                         # [B,16,4,4]
    joints = G[:, :, :3, 3]
    A = G[:, :, :3, :].clone()                                    # [B,16,3,4]
    A[..., 3] = joints - torch.einsum('bjrc,bjc->bjr', G[:, :, :3, :3], J)
    T = torch.einsum('vj,bjrc->bvrc', m['weights'], A)             # [B,778,3,4]
    verts = torch.einsum('bvrc,bvc->bvr', T[..., :3], v_posed) + T[..., 3]
    kp = torch.cat([joints, verts[:, TIP_VERTS]], 1)[:, MANO_TO_OPENPOSE]
    return verts, kp, joints


def mirror_rot(R):
    """M R M with M = diag(-1,1,1): negates entries (0,1), (0,2), (1,0), (2,0)."""
    s = np.array([-1.0, 1.0, 1.0])
    return R * s[:, None] * s[None, :]


# ==== the whole per-crop pipeline ====
@torch.no_grad()
def run_crops(net, mano, crops, is_right, geoms=None):
    """crops [B,256,192,3] pixels; is_right [B]; geoms: per-crop box geometry (image mode) or
    None. Returns {key: array} as documented in the module doc."""
    crops = np.asarray(crops, np.float64)
    B = crops.shape[0]
    x = normalise(crops)
    tokens, tok, pose, betas, cam = net(torch.from_numpy(x))
    R = rot6d_to_rotmat(pose)
    mano32 = {k: (v.float() if v.is_floating_point() else v) for k, v in mano.items()}
    verts, kp3, _ = mano_forward(mano32, R, betas)
    sgn = np.where(np.asarray(is_right, bool), 1.0, -1.0)
    camd = cam.double().numpy()
    s, tx, ty = camd[:, 0], camd[:, 1], camd[:, 2]
    tz = 2.0 * FOCAL / (256.0 * s + 1e-9)
    kpd = kp3.double().numpy()
    fn = FOCAL / 256.0
    kp_n = fn * (kpd[..., :2] + np.stack([tx, ty], -1)[:, None]) / (kpd[..., 2:3] + tz[:, None, None])
    Rn = R.double().numpy()
    Ro = np.where(sgn[:, None, None, None] > 0, Rn, mirror_rot(Rn))
    flip = np.stack([sgn, np.ones(B), np.ones(B)], -1)[:, None]
    out = {
        'crop': crops.astype(np.float32),
        'input': x,
        'tokens': tokens.numpy(),
        'token': tok.numpy(),
        'pose96': pose.numpy(),
        'betas': betas.numpy(),
        'cam': cam.numpy(),
        'rotmats': R.numpy(),
        'global_orient': Ro[:, 0].astype(np.float32),
        'hand_pose': Ro[:, 1:].astype(np.float32),
        'vertices': (verts.double().numpy() * flip).astype(np.float32),
        'keypoints_3d': (kpd * flip).astype(np.float32),
        'keypoints_2d_crop': (256.0 * kp_n + 128.0).astype(np.float32),
        'cam_t': np.stack([sgn * tx, ty, tz], -1).astype(np.float32),
        'is_right': np.asarray(is_right, np.uint8),
    }
    if geoms is not None:
        cx = np.array([g['cx'] for g in geoms])
        cy = np.array([g['cy'] for g in geoms])
        b = np.array([g['b'] for g in geoms])
        W, H = geoms[0]['W'], geoms[0]['H']
        f_full = FOCAL / 256.0 * max(W, H)
        bs = b * s + 1e-9
        out['keypoints_2d'] = np.stack([cx[:, None] + sgn[:, None] * b[:, None] * kp_n[..., 0],
                                        cy[:, None] + b[:, None] * kp_n[..., 1]], -1).astype(np.float32)
        out['cam_t_full'] = np.stack([2.0 * (cx - (W - 1) / 2.0) / bs + sgn * tx,
                                      2.0 * (cy - (H - 1) / 2.0) / bs + ty,
                                      2.0 * f_full / bs], -1).astype(np.float32)
        out['center'] = np.stack([cx, cy], -1).astype(np.float32)
        out['box_size'] = b.astype(np.float32)
        out['sigma'] = np.array([g['sigma'] for g in geoms], np.float32)
        out['image_size'] = np.array([W, H], np.int64)
    return out


def crops_from_image(img, boxes):
    """boxes: list of (x1,y1,x2,y2,is_right) -> (crops [B,256,192,3] float64, geoms)."""
    h, w = img.shape[:2]
    geoms = [box_geometry(bx, w, h) for bx in boxes]
    crops = np.stack([crop_from_image(img, g)[0] for g in geoms])
    return crops, geoms


# ==== random weights (development only) ====
def random_weights(path, depth=2, seed=0):
    """A weights file in the hamer.safetensors format with seeded random values and synthetic
    MANO-shaped arrays (not MANO data), metadata weights="generated"."""
    rng = np.random.default_rng(seed)
    t = {}
    for k, shp in expected_shapes(depth).items():
        leaf = k.rsplit('.', 1)[-1]
        if 'norm' in k and leaf == 'weight':
            a = 1.0 + 0.1 * rng.standard_normal(shp)
        elif 'norm' in k and leaf == 'bias':
            a = 0.05 * rng.standard_normal(shp)
        elif k.endswith('init_hand_pose'):
            a = np.tile([1.0, 0.0, 0.0, 0.0, 1.0, 0.0], NJ)[None] + 0.2 * rng.standard_normal(shp)
        elif k.endswith('init_betas'):
            a = 0.3 * rng.standard_normal(shp)
        elif k.endswith('init_cam'):
            a = np.array([[4.0, 0.0, 0.0]]) + 0.05 * rng.standard_normal(shp)
        elif k.split('.')[1] in ('decpose', 'decshape', 'deccam'):
            a = 0.003 * rng.standard_normal(shp)
        else:
            fan_in = int(np.prod(shp[1:])) if len(shp) > 1 else 1
            a = rng.standard_normal(shp) * (0.02 if len(shp) == 1 or fan_in == 1 else min(0.02, fan_in ** -0.5))
        t[k] = a.astype(np.float32)
    t.update(synthetic_mano(rng))
    st.write_safetensors(path, t, {'format': FORMAT, 'format_version': FORMAT_VERSION,
                                   'weights': 'generated', 'depth': str(depth),
                                   'generator': f'hamer_ref.py --gen-random seed {seed}'})


def random_net(depth, seed):
    """HaMeRNet with seeded random weights drawn in torch (the value scheme of random_weights);
    for the self-test and hamer_export_onnx.py --random."""
    g = torch.Generator().manual_seed(seed)
    net = HaMeRNet(depth, device='meta')
    for k, v in net.state_dict().items():
        shp = tuple(v.shape)
        leaf = k.rsplit('.', 1)[-1]
        if 'norm' in k and leaf == 'weight':
            t = 1.0 + 0.1 * torch.randn(shp, generator=g)
        elif 'norm' in k and leaf == 'bias':
            t = 0.05 * torch.randn(shp, generator=g)
        elif k.endswith('init_hand_pose'):
            t = torch.tensor([1.0, 0, 0, 0, 1, 0]).repeat(NJ)[None] + 0.2 * torch.randn(shp, generator=g)
        elif k.endswith('init_betas'):
            t = 0.3 * torch.randn(shp, generator=g)
        elif k.endswith('init_cam'):
            t = torch.tensor([[4.0, 0, 0]]) + 0.05 * torch.randn(shp, generator=g)
        elif k.split('.')[1] in ('decpose', 'decshape', 'deccam'):
            t = 0.003 * torch.randn(shp, generator=g)
        else:
            fan_in = int(np.prod(shp[1:])) if len(shp) > 1 else 1
            sd = 0.02 if len(shp) == 1 or fan_in == 1 else min(0.02, fan_in ** -0.5)
            t = sd * torch.randn(shp, generator=g)
        _assign(net, k, t.float().contiguous())
    return net.eval()


def synthetic_mano(rng):
    """Hand-sized random arrays with MANO's shapes and MANO's kinematic tree (not MANO data)."""
    vt = rng.uniform([-0.09, -0.03, -0.015], [0.09, 0.03, 0.015], (NV, 3))
    jr = np.zeros((NJ, NV))
    for j in range(NJ):
        idx = rng.choice(NV, 8, replace=False)
        w = rng.random(8) + 0.1
        jr[j, idx] = w / w.sum()
    wts = np.zeros((NV, NJ))
    for v in range(NV):
        js = rng.choice(NJ, 3, replace=False)
        w = rng.random(3) + 0.05
        wts[v, js] = w / w.sum()
    faces = np.stack([rng.choice(NV, 3, replace=False) for _ in range(NF)]).astype(np.int32)
    return {'mano.v_template': vt.astype(np.float32),
            'mano.shapedirs': (0.004 * rng.standard_normal((NV, 3, NBETAS))).astype(np.float32),
            'mano.posedirs': (0.003 * rng.standard_normal((NV, 3, 135))).astype(np.float32),
            'mano.J_regressor': jr.astype(np.float32),
            'mano.weights': wts.astype(np.float32),
            'mano.faces': faces,
            'mano.parents': np.array(MANO_PARENTS, np.int32)}


# ==== self-checks ====
def selftest():
    ok = True

    def check(name, cond, detail=''):
        nonlocal ok
        print(f'selftest: {name}: {"ok" if cond else "FAIL"} {detail}')
        ok = ok and bool(cond)
    net = HaMeRNet(32, device='meta')
    nb, nh = count_params(net.backbone), count_params(net.mano_head)
    check('ViT-H parameters', nb == 630_912_000, f'{nb:,}')
    check('head parameters', nh == 39_497_837, f'{nh:,}')
    dec = count_params(net.mano_head.transformer)
    check('decoder parameters', dec == 39_386_112, f'{dec:,}')
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((4, 96)).astype(np.float32))
    R = rot6d_to_rotmat(x).double()
    err = (R.transpose(-1, -2) @ R - torch.eye(3, dtype=torch.float64)).abs().max().item()
    check('rot6d orthonormal', err < 1e-5, f'{err:.1e}')
    det = torch.linalg.det(R)
    check('rot6d det +1', (det - 1).abs().max().item() < 1e-5)
    ident = torch.tensor([1.0, 0, 0, 0, 1, 0]).repeat(NJ)[None]
    check('rot6d identity', (rot6d_to_rotmat(ident) - torch.eye(3)).abs().max().item() == 0)
    # MANO: identity rotations leave v_shaped; a global rotation rotates about J0.
    m = {k[5:]: torch.from_numpy(v).float() if v.dtype != np.int32 else torch.from_numpy(v)
         for k, v in synthetic_mano(rng).items()}
    betas = torch.from_numpy(rng.standard_normal((1, 10)).astype(np.float32))
    Rid = torch.eye(3).repeat(1, NJ, 1, 1)
    v, kp, j = mano_forward(m, Rid, betas)
    vs = m['v_template'] + torch.einsum('vcl,bl->bvc', m['shapedirs'], betas)[0]
    check('MANO rest pose', (v[0] - vs).abs().max().item() < 1e-6)
    c, s_ = math.cos(0.7), math.sin(0.7)
    Rz = torch.tensor([[c, -s_, 0], [s_, c, 0], [0, 0, 1.0]])
    Rg = Rid.clone()
    Rg[:, 0] = Rz
    v2, kp2, j2 = mano_forward(m, Rg, betas)
    J0 = (m['J_regressor'] @ vs)[0]
    want = (vs - J0) @ Rz.T + J0
    check('MANO global rotation about J0', (v2[0] - want).abs().max().item() < 1e-5)
    check('MANO keypoint order', torch.equal(kp2[0, 4], v2[0, 744]) and torch.equal(kp2[0, 1], j2[0, 13]))
    # crop: a left crop equals the right crop of the mirrored image (cx -> W-1-cx)
    img = rng.integers(0, 256, (37, 53, 3)).astype(np.uint8)
    g = box_geometry((5.3, 4.1, 30.9, 22.7, 0), 53, 37)
    gm = dict(g, cx=53 - 1 - g['cx'], is_right=True)
    a = sample_crop(img, g, False)
    bb = sample_crop(img[:, ::-1], gm, False)
    check('left crop = mirrored right crop', np.abs(a - bb).max() < 1e-9)
    # pixel centres: b = 256 and an integer centre reproduce the image (shifted) exactly
    g1 = dict(cx=20.0, cy=18.0, b=256.0, is_right=True, sigma=0.0)
    c1 = sample_crop(img, g1, True)
    check('integer pixel centres', c1[128, 96].tolist() == img[18, 20].tolist()
          and c1[129, 97].tolist() == img[19, 21].tolist() and c1[0, 0].tolist() == [0, 0, 0])
    # blur: preserves constants, kernel radius, sigma threshold
    flat = np.full((9, 11, 3), 77.0)
    check('blur keeps constants', np.abs(gaussian_blur(flat, 1.3) - 77.0).max() < 1e-12)
    check('blur threshold (b > 563.2)', box_geometry((0, 0, 211.5, 10, 1), 10, 10)['sigma'] > 0
          and box_geometry((0, 0, 211.0, 10, 1), 10, 10)['sigma'] == 0
          and box_geometry((0, 0, 10, 281.75, 1), 10, 10)['sigma'] > 0)
    imp = np.zeros((21, 21, 1))
    imp[10, 10] = 1.0
    bl = gaussian_blur(imp, 1.0)
    check('blur radius int(4 sigma + .5) = 4', bl[10, 14] > 0 and bl[10, 15] == 0 and bl[10, 6] > 0)
    # attention conventions against torch's own multi-head attention
    blk = ViTBlock(64, 4, 128)
    xa = torch.randn(2, 10, 64)
    with torch.no_grad():
        mine = blk.attn(xa)
        theirs = F.multi_head_attention_forward(
            xa.transpose(0, 1), xa.transpose(0, 1), xa.transpose(0, 1), 64, 4,
            blk.attn.qkv.weight, blk.attn.qkv.bias, None, None, False, 0.0,
            blk.attn.proj.weight, blk.attn.proj.bias, training=False, need_weights=False)[0].transpose(0, 1)
    check('ViT attention = torch MHA (head split h*80+d)', (mine - theirs).abs().max().item() < 1e-5)
    ca = DecCrossAttention(context_dim=48)
    xq, ctx = torch.randn(3, 1, DEC_DIM), torch.randn(3, 7, 48)
    inner = DEC_HEADS * DEC_HEAD_DIM
    with torch.no_grad():
        mine = ca(xq, ctx)
        qx = ca.to_q(xq)                     # torch's MHA wants the query already 512 wide
        theirs = F.multi_head_attention_forward(
            qx.transpose(0, 1), ctx.transpose(0, 1), ctx.transpose(0, 1), inner, DEC_HEADS,
            None, torch.zeros(3 * inner), None, None, False, 0.0,
            ca.to_out['0'].weight, ca.to_out['0'].bias, training=False, need_weights=False,
            use_separate_proj_weight=True, q_proj_weight=torch.eye(inner),
            k_proj_weight=ca.to_kv.weight[:inner], v_proj_weight=ca.to_kv.weight[inner:])[0].transpose(0, 1)
    check('decoder cross-attention = torch MHA (K rows 0..511, V 512..1023)',
          (mine - theirs).abs().max().item() < 1e-5)
    # patch embedding: token n = i*12 + j covers rows 16i-2..16i+13, columns 16j-2..16j+13
    pe = ViTH(depth=0, dim=8, heads=2, hidden=8)
    with torch.no_grad():
        pe.pos_embed.zero_()
        pe.last_norm = nn.Identity()
        xi = torch.randn(1, 3, H_IN, W_IN)
        tok = pe(xi)
        i, j = 15, 11
        pad = F.pad(xi, (2, 2, 2, 2))[0, :, 16 * i:16 * i + 16, 16 * j:16 * j + 16]
        man = (pe.patch_embed.proj.weight * pad).sum((1, 2, 3)) + pe.patch_embed.proj.bias
    check('patch grid (padding 2, row-major tokens)', (tok[0, i * 12 + j] - man).abs().max().item() < 1e-4)
    check('LayerNorm eps 1e-6 (ViT) / 1e-5 (decoder)', HaMeRNet(1, device='meta').backbone.blocks[0].norm1.eps == 1e-6
          and HaMeRNet(1, device='meta').mano_head.transformer.transformer.layers[0][0].norm.eps == 1e-5)
    # whole pipeline, depth 1: a left hand = the mirrored image's right hand, mirrored back
    net = random_net(1, 3)
    man = {k[5:]: (torch.from_numpy(v).float() if v.dtype != np.int32 else torch.from_numpy(v))
           for k, v in synthetic_mano(np.random.default_rng(4)).items()}
    yy, xx = np.mgrid[0:120, 0:160].astype(np.float64)
    img = np.clip(np.rint(np.stack([128 + 90 * np.sin(xx / 9 + c) * np.cos(yy / 13 - c) for c in range(3)], -1)
                          + rng.normal(0, 5, (120, 160, 3))), 0, 255).astype(np.uint8)
    Wd = 160
    box = tuple(float(np.float32(v)) for v in (30.3, 20.7, 80.9, 95.1))   # no exact rounding ties
    ca_, ga = crops_from_image(img, [box + (1,)])
    cb_, gb_ = crops_from_image(img[:, ::-1].copy(), [(Wd - 1 - box[2], box[1], Wd - 1 - box[0], box[3], 0)])
    check('mirrored crops equal', np.abs(ca_ - cb_).max() == 0, f'{np.abs(ca_ - cb_).max()}')
    oa = run_crops(net, man, ca_, [1], ga)
    ob = run_crops(net, man, cb_, [0], gb_)
    neg = np.array([-1.0, 1.0, 1.0])
    check('left hand: network outputs equal',
          all(np.array_equal(oa[k], ob[k]) for k in ('pose96', 'betas', 'cam')))
    check('left hand: vertices / keypoints_3d x negated',
          np.array_equal(oa['vertices'] * neg, ob['vertices'])
          and np.array_equal(oa['keypoints_3d'] * neg, ob['keypoints_3d']))
    check('left hand: rotations M R M',
          all(np.abs(mirror_rot(oa[k].astype(np.float64)) - ob[k]).max() < 1e-7
              for k in ('global_orient', 'hand_pose')))
    check('left hand: keypoints_2d mirrored about (W-1)/2',
          np.abs((Wd - 1) - oa['keypoints_2d'][..., 0] - ob['keypoints_2d'][..., 0]).max() < 1e-3
          and np.abs(oa['keypoints_2d'][..., 1] - ob['keypoints_2d'][..., 1]).max() < 1e-3)
    check('left hand: cam_t / cam_t_full x negated',
          np.abs(oa['cam_t'] * neg - ob['cam_t']).max() < 1e-6
          and np.abs(oa['cam_t_full'] * neg - ob['cam_t_full']).max() < 1e-4)
    # keypoints_2d ~ the full-image perspective camera applied to keypoints_3d + cam_t_full
    for o, name in ((oa, 'right'), (ob, 'left')):
        P = o['keypoints_3d'].astype(np.float64) + o['cam_t_full'][:, None].astype(np.float64)
        f_full = FOCAL / 256.0 * max(160, 120)
        proj = f_full * P[..., :2] / P[..., 2:3] + np.array([(160 - 1) / 2.0, (120 - 1) / 2.0])
        err = np.abs(proj - o['keypoints_2d']).max() / o['box_size'][0]
        check(f'{name}: keypoints_2d ~ project(keypoints_3d + cam_t_full)', err < 0.01, f'{err:.1e} of b')
        u = o['keypoints_2d_crop'][..., 0].astype(np.float64)
        sg = 1.0 if o['is_right'][0] else -1.0
        back = o['center'][0, 0] + sg * (u - 128.0) * o['box_size'][0] / 256.0
        check(f'{name}: keypoints_2d_crop maps to keypoints_2d by the crop map',
              np.abs(back - o['keypoints_2d'][..., 0]).max() < 1e-2)
    print('selftest:', 'all ok' if ok else 'FAILED')
    return ok


# ==== CLI ====
def parse_box(s):
    v = [float(t) for t in s.split(',')]
    if len(v) not in (4, 5):
        raise argparse.ArgumentTypeError(f'--box {s}: need x1,y1,x2,y2[,is_right]')
    if len(v) == 5 and v[4] not in (0.0, 1.0):
        raise argparse.ArgumentTypeError(f'--box {s}: is_right must be 0 or 1')
    return v if len(v) == 5 else v + [1.0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--weights')
    ap.add_argument('--crop')
    ap.add_argument('--is-right', help='per crop, comma-separated 0/1 (crop mode; default all 1)')
    ap.add_argument('--image')
    ap.add_argument('--box', action='append', type=parse_box, default=[])
    ap.add_argument('--out')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--compress', action='store_true')
    ap.add_argument('--quiet', action='store_true')
    ap.add_argument('--gen-random')
    ap.add_argument('--depth', type=int, default=2)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--selftest', action='store_true')
    a = ap.parse_args(argv)
    if a.selftest:
        return 0 if selftest() else 1
    if a.gen_random:
        random_weights(a.gen_random, a.depth, a.seed)
        return 0
    if not a.weights or not a.out or (a.crop is None) == (a.image is None):
        ap.error('need --weights, --out and exactly one of --crop / --image')
    if a.image and not a.box:
        ap.error('--image needs at least one --box')
    torch.set_num_threads(max(1, a.threads))
    t0 = time.time()
    net, mano, meta = load_weights(a.weights)
    t_load = time.time() - t0
    geoms = None
    if a.crop:
        crops = np.load(a.crop, allow_pickle=False)
        if crops.ndim == 3:
            crops = crops[None]
        if crops.shape[1:] != (H_IN, W_IN, 3):
            raise SystemExit(f'{a.crop}: shape {crops.shape}, expected [B,256,192,3]')
        is_right = [1] * crops.shape[0] if a.is_right is None else \
            [int(v) for v in a.is_right.split(',')]
        if len(is_right) != crops.shape[0] or any(v not in (0, 1) for v in is_right):
            raise SystemExit(f'--is-right: need {crops.shape[0]} values of 0/1')
    else:
        img = st.read_png(a.image)
        crops, geoms = crops_from_image(img, a.box)
        is_right = [int(bx[4]) for bx in a.box]
    t1 = time.time()
    out = run_crops(net, mano, crops, is_right, geoms)
    t_run = time.time() - t1
    if geoms is not None:
        out['boxes'] = np.array([bx[:4] for bx in a.box], np.float32)
    out['weights_sha256'] = np.frombuffer(bytes.fromhex(st.sha256_file(a.weights)), np.uint8)
    out['depth'] = np.array(int(meta['depth']), np.int64)
    sys.path.insert(0, os.path.join(HERE, '..', 'gen'))
    import fixture_io as fio
    fio.save_npz(a.out, out, compress=a.compress)
    if not a.quiet:
        print(f'hamer_ref: depth {meta["depth"]} ({meta.get("weights")}), {crops.shape[0]} crop(s), '
              f'load {t_load:.2f} s, forward {t_run:.2f} s ({t_run / crops.shape[0]:.2f} s/crop, '
              f'{a.threads} thread(s)) -> {a.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
