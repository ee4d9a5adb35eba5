#!/usr/bin/python3
"""hamer_fixture_inputs.py: the synthetic inputs of perceive's HaMeR fixtures and the packing of
the reference outputs into tests/fixtures/hamer/ (run by tools/gen/make_hamer_fixtures.sh).

  hamer_fixture_inputs.py inputs --work DIR [--fixdir tests/fixtures/hamer]
      DIR/crops.npy    [2,256,192,3] uint8: two seeded synthetic ViT crops (smooth patterns +
                       noise); crop 0 is run as a right hand, crop 1 as a left hand
      FIXDIR/image.png 640x480 8-bit RGB, seeded shapes and gradients (own zlib PNG writer)
      DIR/boxes.args   the --box arguments for tools/ref/hamer_ref.py (BOXES below)
      and checks that no unblurred crop sample lies within 1e-7 of a rounding tie (so the
      fixture does not depend on the order of the bilinear sums).
  hamer_fixture_inputs.py pack --work DIR [--fixdir tests/fixtures/hamer]
      DIR/crops_ref.npz + DIR/image_ref.npz (hamer_ref.py outputs) -> FIXDIR/crops.npz and
      FIXDIR/image.npz (deflated, fixed timestamps).

Fixture keys (float32 unless noted; B = 2 in crops.npz, 4 in image.npz):
  both    weights_sha256 [32] uint8 (sha256 of the weights file the reference ran: the C test
          regenerates `PERCEIVE_HAMER_GEN_DEPTH=2 perceive gen hamer` and compares), depth int64 [],
          is_right [B] uint8, token_rows [4] int64 (= 0, 1, 95, 191),
          tokens_rows [B,4,1280] (tokens after last_norm, those rows only), token [B,1024],
          pose96 [B,96], betas [B,10], cam [B,3] (network outputs, right-hand frame),
          rotmats [B,16,3,3] (right-hand frame), global_orient [B,3,3], hand_pose [B,15,3,3],
          vertices [B,778,3], keypoints_3d [B,21,3] (MANO frame, left hands mirrored back),
          keypoints_2d_crop [B,21,2], cam_t [B,3]
  crops   crops [2,256,192,3] uint8 (the inputs), input [2,3,256,192] (ImageNet-normalised)
  image   boxes [4,4] (x1,y1,x2,y2 image pixels; exact in float32), image_size [2] int64 (W,H),
          center [4,2], box_size [4] (b), sigma [4] (0 = no blur), crop [4,256,192,3] (pixels the
          ViT saw: integers unless blurred), keypoints_2d [4,21,2] (image pixels),
          cam_t_full [4,3]
  image.png is the image of image.npz.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'ref'))
import fixture_io as fio  # noqa: E402
import hamer_st as st  # noqa: E402

W_IMG, H_IMG = 640, 480
# (x1, y1, x2, y2, is_right); stored as float32, so each value is rounded to float32 first.
BOXES = [
    (233.37, 141.83, 322.61, 301.27, 1),     # right, inside, height decides b (318.9)
    (521.13, 276.49, 689.71, 397.58, 0),     # left, past the right and bottom edges, width decides
    (61.71, 38.29, 597.43, 451.87, 0),       # left, b = 1428.5: blurred (sigma 0.895, radius 4)
    (-80.4, -120.7, 250.9, 330.2, 1),        # right, b = 901.8: blurred (sigma 0.38), past top/left
]
TOKEN_ROWS = [0, 1, 95, 191]
CROP_RIGHT = [1, 0]
NET_KEYS = ['token', 'pose96', 'betas', 'cam', 'rotmats', 'global_orient', 'hand_pose',
            'vertices', 'keypoints_3d', 'keypoints_2d_crop', 'cam_t']


def boxes_f32():
    return [tuple(float(np.float32(v)) for v in bx[:4]) + (bx[4],) for bx in BOXES]


def synthetic_crops():
    r = fio.rng_of('hamer/crops')
    yy, xx = np.mgrid[0:256, 0:192].astype(np.float64)
    out = []
    for i in range(2):
        ch = []
        for c in range(3):
            f = np.zeros_like(yy)
            for _ in range(4):
                kx, ky = r.uniform(-0.08, 0.08, 2)
                f += r.uniform(20, 45) * np.sin(kx * xx + ky * yy + r.uniform(0, 6.3))
            f += r.uniform(80, 170) + 0.25 * (xx - 96) * r.uniform(-1, 1)
            ch.append(f)
        img = np.stack(ch, -1)
        # a few hard-edged discs and a bar (edges matter to the patch embedding)
        for _ in range(5):
            cy, cx, rad = r.uniform(0, 256), r.uniform(0, 192), r.uniform(8, 40)
            img[(yy - cy) ** 2 + (xx - cx) ** 2 < rad ** 2] = r.uniform(0, 255, 3)
        img[100 + 40 * i:112 + 40 * i, 20:170] = r.uniform(0, 255, 3)
        img += r.normal(0, 6, img.shape)
        out.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
    return np.stack(out)


def synthetic_image():
    r = fio.rng_of('hamer/image')
    yy, xx = np.mgrid[0:H_IMG, 0:W_IMG].astype(np.float64)
    img = np.stack([40 + 150 * xx / W_IMG, 60 + 120 * yy / H_IMG,
                    200 - 100 * (xx + yy) / (W_IMG + H_IMG)], -1)
    for _ in range(18):
        cy, cx = r.uniform(0, H_IMG), r.uniform(0, W_IMG)
        ry, rx = r.uniform(10, 90, 2)
        col = r.uniform(0, 255, 3)
        img[((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1] = col
    for _ in range(10):
        y0, x0 = r.integers(0, H_IMG - 20), r.integers(0, W_IMG - 20)
        img[y0:y0 + r.integers(4, 60), x0:x0 + r.integers(4, 120)] = r.uniform(0, 255, 3)
    for k in range(6):   # thin lines: single-pixel detail for the bilinear taps and the blur
        img[37 + 71 * k, :] = (255, 255 - 40 * k, 40 * k)
        img[:, 29 + 101 * k] = (30 * k, 0, 255 - 30 * k)
    # textured patches (noise), kept small so the PNG stays small
    for y0, x0 in ((150, 250), (300, 540), (20, 20), (400, 300)):
        img[y0:y0 + 48, x0:x0 + 64] += r.normal(0, 25, (48, 64, 3))
    img[:, -3:] = (250, 10, 10)            # edges: replicated by the blur's 'nearest' mode
    img[-2:, :] = (10, 250, 10)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def cmd_inputs(a):
    import hamer_ref as ref
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.fixdir, exist_ok=True)
    np.save(os.path.join(a.work, 'crops.npy'), synthetic_crops())
    img = synthetic_image()
    png = os.path.join(a.fixdir, 'image.png')
    st.write_png(png, img)
    if not np.array_equal(st.read_png(png), img):
        raise SystemExit('hamer_fixture_inputs: PNG round trip failed')
    args = []
    for bx in boxes_f32():
        g = ref.box_geometry(bx, W_IMG, H_IMG)
        m = ref.crop_tie_margin(img, g)
        print(f'box {bx}: b {g["b"]:.3f} sigma {g["sigma"]:.4f} tie margin {m:.2e}')
        if m < 1e-7:
            raise SystemExit(f'box {bx}: a crop sample is within {m:.1e} of a rounding tie; '
                             'move the box')
        args.append('--box=' + ','.join(repr(v) for v in bx[:4]) + f',{bx[4]}')
    with open(os.path.join(a.work, 'boxes.args'), 'w') as f:
        f.write(' '.join(args) + '\n')
    with open(os.path.join(a.work, 'crops.is_right'), 'w') as f:
        f.write(','.join(str(v) for v in CROP_RIGHT) + '\n')
    print(f'inputs: {a.work}/crops.npy, {png} ({os.path.getsize(png)} bytes)')


def common(ref):
    out = {'weights_sha256': ref['weights_sha256'].astype(np.uint8),
           'depth': ref['depth'].astype(np.int64),
           'is_right': ref['is_right'].astype(np.uint8),
           'token_rows': np.array(TOKEN_ROWS, np.int64),
           'tokens_rows': ref['tokens'][:, TOKEN_ROWS].astype(np.float32)}
    for k in NET_KEYS:
        out[k] = ref[k].astype(np.float32)
    return out


def cmd_pack(a):
    c = fio.load_npz(os.path.join(a.work, 'crops_ref.npz'))
    i = fio.load_npz(os.path.join(a.work, 'image_ref.npz'))
    if not np.array_equal(c['weights_sha256'], i['weights_sha256']):
        raise SystemExit('pack: the two reference runs used different weights')
    crops = np.load(os.path.join(a.work, 'crops.npy'))
    if not np.array_equal(c['crop'], crops.astype(np.float32)):
        raise SystemExit('pack: crops_ref.npz was not made from crops.npy')
    fc = {'crops': crops, **common(c), 'input': c['input'].astype(np.float32)}
    fi = {'boxes': i['boxes'].astype(np.float32), 'image_size': i['image_size'].astype(np.int64),
          'center': i['center'], 'box_size': i['box_size'], 'sigma': i['sigma'],
          'crop': i['crop'].astype(np.float32), **common(i),
          'keypoints_2d': i['keypoints_2d'].astype(np.float32),
          'cam_t_full': i['cam_t_full'].astype(np.float32)}
    want = np.array([bx[:4] for bx in boxes_f32()], np.float32)
    if not np.array_equal(fi['boxes'], want):
        raise SystemExit('pack: image_ref.npz boxes differ from BOXES')
    total = 0
    for name, arrs in (('crops.npz', fc), ('image.npz', fi)):
        p = os.path.join(a.fixdir, name)
        fio.save_npz(p, arrs, compress=True)
        total += os.path.getsize(p)
        print(f'pack: {p}: {os.path.getsize(p)} bytes; ' +
              ', '.join(f'{k} {list(v.shape)} {v.dtype}' for k, v in arrs.items()))
    total += os.path.getsize(os.path.join(a.fixdir, 'image.png'))
    print(f'pack: fixtures total {total} bytes (sha256 of weights '
          f'{bytes(fc["weights_sha256"]).hex()[:16]}..., depth {int(fc["depth"])})')
    if total > 3 << 20:
        raise SystemExit('pack: fixtures exceed 3 MB')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('cmd', choices=['inputs', 'pack'])
    ap.add_argument('--work', required=True)
    ap.add_argument('--fixdir', default=os.path.join(fio.ROOT, 'tests', 'fixtures', 'hamer'))
    a = ap.parse_args()
    {'inputs': cmd_inputs, 'pack': cmd_pack}[a.cmd](a)


if __name__ == '__main__':
    main()
