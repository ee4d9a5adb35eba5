"""Deterministic synthetic METEOR engine outputs for the host-decode fixtures.

The same generator is written a second time in C (tests/unit/test_meteor_decode.c); both must
produce bit-identical float32 arrays, so it uses only:
  * a counter-based splitmix64 (integer only): u(seed, i) = mix(seed + (i + 1) * GOLDEN), taken
    as (z >> 40) * 2**-23 - 1, exactly representable in float32, in [-1, 1);
  * float32 additions of products by powers of two (exact products, one rounding);
  * camera poses from cos/sin of double angles (libm on both sides) rounded to float32.

The scene (5 frames) plants structure that exercises every rule of the decode: overlapping boxes
for the NMS (IoU and intersection/smaller), a suppression chain, scores next to the thresholds,
boxes at the x range limits, a border peak, a plateau, more than 64 candidates, yaw flips, a
stationary head that is unhealthy on one frame, 2D crowds past the top-48 cut with road paint,
clipped logits, unknown obstacles for the ground ray and the depth fallback (range and |y|
limits, duplicates across cameras), lanes with thin classes and road edges, a pose jump, a frame
without lane logits and one without a pose, ego mode logits around the hysteresis boundaries.
"""
import math

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1
NFRAMES = 5

DET_H, DET_W = 400, 250
BEV_H, BEV_W = 800, 500
S2D = [(108, 192, 4), (54, 96, 8), (27, 48, 16)]

# poses (x, y, yaw) per frame; None: no pose
POSES = [(0.0, 0.0, 0.0), (2.0, 0.0, 0.05), (3.5, 0.25, 0.0625), (40.0, 0.0, 0.0625), None]
LANE_LOGITS = [True, True, False, True, True]
CROSSWALK_ROW = [300, 310, 317, 500, 505]
CAM_ABSENT = {1: [7]}          # frame -> absent camera slots

# cameras: position (x, y, z) in the ego frame, yaw (rad), focal (px); K at 768x432
CAMS = [((1.5, 0.0, 1.5), 0.0, 400.0), ((1.25, 0.5, 1.5), 0.96, 400.0), ((1.25, -0.5, 1.5), -0.96, 400.0),
        ((-1.0, 0.0, 1.5), math.pi, 400.0), ((0.0, 0.75, 1.5), 2.2, 400.0), ((0.0, -0.75, 1.5), -2.2, 400.0),
        ((1.625, 0.0, 1.5), 0.0, 800.0), ((-1.0, 0.0, 1.5), math.pi, 800.0)]


def seed_of(frame, array_id):
    return (0x5EED0000 + frame * 1000 + array_id) & M64


def uniform(seed, n):
    """u(seed, i) for i < n as float32 in [-1, 1)."""
    with np.errstate(over="ignore"):
        i = np.arange(1, n + 1, dtype=np.uint64)
        z = np.uint64(seed) + i * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)).astype(np.float32)


def noise(seed, shape, base, amp):
    n = int(np.prod(shape))
    return (np.float32(base) + np.float32(amp) * uniform(seed, n)).reshape(shape).astype(np.float32)


# ---- 3D objects: (frames, cls, r, c, logit, o0, o1, log l, log w, sin, cos, stat, mode, vx, vy) ----
ALL = (0, 1, 2, 3, 4)


def objects3d(frame):
    a_yaw = [(0.0, 1.0), (0.125, -1.0), (-0.125, -1.0), (1.0, 0.0), (0.25, 1.0)][frame]
    obs = [
        (ALL, 0, 150, 125, 2.0, 0.25, 0.5, 1.5, 0.625, a_yaw[0], a_yaw[1], 2.0, 1, 0.5, 0.125),     # A
        (ALL, 0, 152, 125, 1.5, 0.25, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),               # B: IoU with A
        (ALL, 0, 156, 125, 1.25, 0.5, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),               # C: chain
        (ALL, 0, 200, 60, 1.75, 0.5, 0.5, 2.0, 1.0, 0.0, 1.0, 2.0, 2, 0.0625, 0.0),                # E: big
        (ALL, 0, 203, 60, 0.5, 0.5, 0.5, 0.25, 0.0, 0.5, 1.0, -2.0, 0, 0.5, 0.25),                 # D: inside E
        (ALL, 1, 150, 126, 0.75, 0.25, 0.25, -0.5, -0.5, 0.0, 1.0, 2.0, 0, 0.0625, 0.0),           # F: VRU on A
        (ALL, 0, 250, 30, -0.609375, 0.5, 0.5, 1.5, 0.625, 0.25, 1.0, -2.0, 1, 0.5, 0.0),          # G: keep
        (ALL, 0, 250, 200, -0.625, 0.5, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 1, 0.5, 0.0),             # H: below
        ((1, 2, 4), 1, 260, 40, -1.71875, 0.5, 0.5, -0.5, -0.5, 0.0, 1.0, -2.0, 0, 0.25, 0.25),    # I: VRU keep
        (ALL, 0, 4, 100, 1.0, 0.75, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),                 # x = 78.1
        (ALL, 0, 5, 180, 1.0, 0.0, 0.5, 1.5, 0.625, 0.0, 1.0, 2.0, 0, 0.5, 0.0),                   # x = 78.0
        (ALL, 0, 395, 90, 1.0, 0.0, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),                 # x = -78.0
        (ALL, 0, 395, 150, 1.0, 0.25, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),               # x = -78.1
        (ALL, 1, 300, 0, -1.0, 0.5, 0.5, -0.5, -0.5, 0.0, 1.0, -2.0, 0, 0.0625, 0.0),              # K: border
        (ALL, 0, 320, 200, 1.0, 0.5, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),                # L: plateau
        (ALL, 0, 320, 201, 1.0, 0.5, 0.5, 1.5, 0.625, 0.0, 1.0, -2.0, 0, 0.5, 0.0),
        ((0,), 1, 207, 64, 0.25, 0.5, 0.5, -0.5, -0.5, 1.0, 1.0, -2.0, 0, 0.25, 0.0),              # R
        ((1,), 1, 202, 64, 0.25, 0.5, 0.5, -0.5, -0.5, 1.25, 1.0, -2.0, 0, 0.25, 0.0),             # Q
    ]
    out = [o[1:] for o in obs if frame in o[0]]
    if frame in (0, 3):  # weak VRUs: more than 64 candidates in all
        for i in range(10):
            for j in range(8):
                out.append((1, 40 + 10 * i, 152 + 12 * j, -1.5 + (i * 8 + j) / 256.0, 0.5, 0.5, -0.5, -0.5, 0.0, 1.0,
                            -2.0, 0, 0.25, 0.0))
    return out


# ---- 2D peaks: (cam, scale, cls, r, c, logit, o0, o1, log w, log h) ----
def objects2d(frame):
    out = [
        (0, 1, 0, 27, 48, 1.5, 0.5, 0.5, 1.0, 2.0),        # unknown: ground ray ~19 m
        (0, 0, 0, 30, 90, 1.0, 0.0, 0.0, 2.0, 2.5),        # unknown above the horizon: depth fallback
        (0, 2, 0, 13, 24, 0.5, 0.5, 0.0, 0.5, 0.234375),   # ground ray ~60.8 m from ego: depth fallback
        (6, 1, 0, 32, 48, 2.0, 0.0, 0.0, 1.0, 2.0),        # same obstacle as the first, higher score
        (1, 1, 0, 27, 48, 1.25, 0.0, 0.0, 1.0, 1.3125),    # ground ray at |y| > 25: dropped
        (3, 1, 0, 10, 40, 1.0, 0.0, 0.0, 1.0, 1.5),        # depth 55 m: dropped
        (3, 0, 9, 0, 0, -0.5, 0.25, 0.25, 1.0, 1.0),       # border peak
        (4, 1, 1, 20, 30, 60.0, 0.5, 0.5, 2.0, 1.5),       # clipped to 50: a tie, two peaks
        (4, 1, 1, 20, 31, 55.0, 0.5, 0.5, 2.0, 1.5),
        (4, 0, 6, 50, 100, 0.75, 0.5, 0.5, 1.5, 2.5),
        (5, 0, 2, 60, 60, 1.25, 0.25, 0.75, 3.0, 2.5),
        (6, 0, 8, 20, 96, 0.875, 0.5, 0.5, 1.0, 1.5),
        (7, 1, 3, 25, 50, 1.5, 0.5, 0.5, 2.5, 2.0),
    ]
    for i in range(5):   # road paint above a crowd of 45 cars in one camera and scale
        out.append((2, 2, 7, 1 + 3 * i, 20, 3.0, 0.5, 0.5, 0.5, 0.5))
    for i in range(9):
        for j in range(5):
            out.append((2, 2, 1, 1 + 3 * i, 2 + 3 * j, 2.0 - (i * 5 + j) / 64.0, 0.5, 0.5, 0.5, 0.5))
    return out


DEPTH_PATCHES = [(0, 17, 45, "ramp"), (3, 11, 40, 55.0)]   # (cam, row, col, values) 5x5 around
OCC_BLOCKS = [(2, 2, 6, 90, 101, 98, 103), (1, 3, 5, 120, 125, 60, 70), (4, 2, 7, 80, 82, 150, 152)]
TL = [[0.5, 2.0, -1.0, 0.25], [0.5, 0.25, 1.75, 0.0], [-1.0, -1.0, -1.0, -1.0], [0.0, 0.0, 0.5, 3.0],
      [2.0, 0.0, 0.0, 0.0]]
MODE_LOGITS = [[0.0, 0.875, -1.0], [0.0, 1.25, 0.0], [0.0, 1.5, 0.0], [0.0, 0.8125, 0.0], [0.0, 0.5, 1.375]]
BRAKE = [-1.0, 0.25, 0.0, 2.0, -0.5]


def calib(frame):
    K = np.zeros((8, 9), np.float32)
    T = np.zeros((8, 16), np.float32)
    for i, ((px, py, pz), yaw, f) in enumerate(CAMS):
        K[i] = np.array([f, 0, 384, 0, f, 216, 0, 0, 1], np.float32)
        c, s = math.cos(yaw), math.sin(yaw)
        R = [[s, -c, 0.0], [0.0, 0.0, -1.0], [c, s, 0.0]]   # rows: camera x (right), y (down), z (forward)
        t = [-(R[k][0] * px + R[k][1] * py + R[k][2] * pz) for k in range(3)]
        M = [R[0] + [t[0]], R[1] + [t[1]], R[2] + [t[2]], [0.0, 0.0, 0.0, 1.0]]
        T[i] = np.array(M, np.float64).astype(np.float32).reshape(16)
    present = [c not in CAM_ABSENT.get(frame, []) for c in range(8)]
    return K, T, present


def lane_logits(frame):
    """[9][800][500] logits and the argmax grid."""
    r = np.arange(BEV_H)[:, None] * np.ones((1, BEV_W), np.int64)
    c = np.ones((BEV_H, 1), np.int64) * np.arange(BEV_W)[None, :]
    add = np.zeros((9, BEV_H, BEV_W), np.float32)
    amp = np.full((BEV_H, BEV_W), 0.25, np.float32)
    band = np.zeros((BEV_H, BEV_W), np.int64)
    for lo, hi, k in [(100, 140, 2), (140, 143, 6), (143, 357, 1), (357, 360, 6), (360, 400, 2), (400, 450, 8)]:
        band[(c >= lo) & (c < hi)] = k
    road = band == 1
    line = road & (((c >= 200) & (c < 202)) | ((c >= 250) & (c < 252)) | ((c >= 300) & (c < 302)))
    cw = CROSSWALK_ROW[frame]
    cross = road & (r >= cw) & (r < cw + 15)
    stop = road & (r >= cw - 3) & (r < cw) & (c < 250)
    plain = ~line & ~cross & ~stop
    for k in range(9):
        add[k][plain & (band == k)] = 3.0
    dash = line & ~cross & ~stop & ((r // 25) % 2 == 0)
    gap = line & ~cross & ~stop & ((r // 25) % 2 == 1)
    add[4][dash] = 2.0
    add[1][dash] = 1.5
    add[1][gap] = 1.75
    add[4][gap] = 1.5
    amp[line] = 0.125
    add[3][cross] = 3.0
    add[5][stop] = 3.0
    sel = (r >= 600) & (r < 610) & (c >= 160) & (c < 170)
    add[:, sel] = 0.0
    add[7][sel] = 3.0
    sel = (r >= 100) & (r < 200) & (c >= 470) & (c < 473)      # isolated road edge
    add[:, sel] = 0.0
    add[6][sel] = 3.0
    sel = (r >= 240) & (r < 246) & (c >= 455) & (c < 460)      # road touching an edge diagonally
    add[:, sel] = 0.0
    add[1][sel] = 3.0
    add[:, 246, 460] = 0.0
    add[6][246, 460] = 3.0
    sel = (r >= 400) & (r < 440) & (c >= 150) & (c < 190)      # ambiguous road / sidewalk
    add[:, sel] = 0.0
    add[1][sel] = 2.0
    add[2][sel] = 2.0
    amp[sel] = 1.0
    u = uniform(seed_of(frame, 1), 9 * BEV_H * BEV_W).reshape(9, BEV_H, BEV_W)
    lg = ((np.float32(-1.0) + amp[None] * u) + add).astype(np.float32)
    return lg, np.argmax(lg, axis=0).astype(np.uint8)


def plant_peak(m, r, c, v):
    h, w = m.shape
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if (dr or dc) and 0 <= r + dr < h and 0 <= c + dc < w:
                m[r + dr, c + dc] = np.float32(v - 1.0)


def frame_raw(frame):
    """All decode inputs of one frame as a dict of numpy arrays (+ calib, pose)."""
    d = {}
    d["lane_logit"], d["lane"] = lane_logits(frame)
    if not LANE_LOGITS[frame]:
        d["lane_logit"] = None
    hm = noise(seed_of(frame, 2), (2, DET_H, DET_W), -6.0, 0.5)
    reg = noise(seed_of(frame, 3), (6, DET_H, DET_W), 0.0, 0.125)
    traj = noise(seed_of(frame, 4), (39, DET_H, DET_W), 0.0, 0.125)
    healthy = frame != 2
    stat = noise(seed_of(frame, 5), (DET_H, DET_W), 0.0 if healthy else 0.25, 1.0 if healthy else 0.0078125)
    obs = objects3d(frame)
    for o in obs:                       # neighbours first, then the peaks (plateaus stay plateaus)
        plant_peak(hm[o[0]], o[1], o[2], o[3])
    for (cls, r, c, lg, o0, o1, ll, lw, s, co, st, mode, vx, vy) in obs:
        hm[cls, r, c] = lg
        reg[:, r, c] = [o0, o1, ll, lw, s, co]
        if healthy:
            stat[r, c] = st
        for m in range(3):
            traj[36 + m, r, c] = 1.0 if m == mode else 0.0
            mvx, mvy = (vx, vy) if m == mode else (0.25, -0.25)
            for k in range(6):
                traj[m * 12 + k * 2, r, c] = np.float32(k + 1) * np.float32(mvx)
                traj[m * 12 + k * 2 + 1, r, c] = np.float32(k + 1) * np.float32(mvy)
    d["hm"], d["reg"], d["traj"], d["stationary"] = hm, reg, traj, stat
    d["hm2d"], d["reg2d"] = [], []
    for s, (h, w, _) in enumerate(S2D):
        hm2 = noise(seed_of(frame, 10 + s), (8, 10, h, w), -8.0, 0.5)
        rg2 = noise(seed_of(frame, 20 + s), (8, 4, h, w), 0.0, 0.125)
        pl = [p for p in objects2d(frame) if p[1] == s]
        for (cam, _, cls, r, c, lg, o0, o1, lw, lh) in pl:
            plant_peak(hm2[cam, cls], r, c, lg)
        for (cam, _, cls, r, c, lg, o0, o1, lw, lh) in pl:
            hm2[cam, cls, r, c] = lg
            rg2[cam, :, r, c] = [o0, o1, lw, lh]
        d["hm2d"].append(hm2)
        d["reg2d"].append(rg2)
    ego = np.zeros(42, np.float32)
    sp, cv = [8.0, 7.0, 7.0], [0.0, 0.0625, -0.0625]
    for m in range(3):
        for k in range(6):
            ego[m * 12 + k * 2] = np.float32(k + 1) * np.float32(0.5 * sp[m])
            ego[m * 12 + k * 2 + 1] = np.float32((k + 1) * (k + 1)) * np.float32(cv[m])
    ego[36:39] = MODE_LOGITS[frame]
    ego[39] = 0.0625 * frame
    ego[40] = 0.5 - 0.25 * frame
    ego[41] = BRAKE[frame]
    d["ego"] = ego
    occ = noise(seed_of(frame, 6), (10, 16, 200, 200), -2.0, 0.5)
    occ[0] = noise(seed_of(frame, 7), (16, 200, 200), 2.0, 0.5)
    blocks = OCC_BLOCKS + [(3, 2, 4, 100 + 3 * frame, 104 + 3 * frame, 30, 34)]
    for (k, z0, z1, r0, r1, c0, c1) in blocks:
        occ[k, z0:z1, r0:r1, c0:c1] = 4.0
    d["occ"] = occ
    risk = np.full((DET_H, DET_W), -6.0, np.float32)
    risk[50 + 5 * frame:80 + 5 * frame, 100:150] = 1.0
    for c in range(DET_W):
        risk[200:220, c] = -3.0 + 0.5 * (c // 25)
    d["risk"] = risk
    d["tl"] = np.array(TL[frame], np.float32)
    dm = np.full((8, 54, 96), 40.0, np.float32)
    for (cam, r, c, v) in DEPTH_PATCHES:
        for i in range(25):
            dm[cam, r - 2 + i // 5, c - 2 + i % 5] = 12.0 + 0.25 * i if v == "ramp" else v
    d["depth_mean"] = dm
    d["K"], d["T"], d["present"] = calib(frame)
    d["pose"] = POSES[frame]
    return d
