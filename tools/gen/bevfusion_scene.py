#!/usr/bin/python3
"""bevfusion_scene.py: a synthetic lidar scene for the BEVFusion-L tests (numpy only).

Writes tests/fixtures/bevfusion/scene/:
  scene_000.pcd, scene_001.pcd  PCD v0.7, DATA binary, FIELDS x y z intensity (F 4), base_link
  poses.json                    {"frames": [{file, timestamp_s, T_world_from_ego (16, row-major)}]}
  gt.json                       ground-truth boxes per frame, in that frame's base_link
  README.md                     what this is, the command line and the scene statistics

The world: flat ground (z = 0), a main road along the ego's heading with two cross streets, bike
lanes, sidewalks, a parking lot, a truck yard, a bus depot and a plaza; N_PER_CLASS objects of
each class (CAR, TRUCK, BUS, BICYCLE, PEDESTRIAN) built from a few boxes/cylinders each, placed
without overlap within PLACE_RADIUS m, vehicles aligned to lanes or parking rows; walls and poles
as clutter. A 64-beam spinning lidar at (0, 0, 1.9) in base_link is ray-cast against it
(first hit, seeded Gaussian range noise, intensity = reflectivity x incidence, weak returns
lost, hits on the ego body dropped). Frame 1 is the same world DT s later: the ego moved
~1.5 m forward and yawed 2 deg; a few cars moved. Objects too occluded to have MIN_POINTS hits
in either frame are re-placed until every one is visible, so the GT is all "detectable"
(--check asserts the contract: boxes within CHECK_RADIUS m have >= MIN_POINTS points).

Determinism: one seeded generator drives the layout, per-frame generators the noise; the files
are byte-identical from run to run (same numpy build).

Usage:
  /usr/bin/python3 tools/gen/bevfusion_scene.py            # write the fixtures
  /usr/bin/python3 tools/gen/bevfusion_scene.py --out DIR  # write elsewhere
  /usr/bin/python3 tools/gen/bevfusion_scene.py --check [--out DIR]
      re-reads the written files (own PCD parser, no C code) and checks them: header and
      size, 50k..60k finite points per frame, integer intensity 0..255, ranges, 20k..40k
      voxels, poses rigid, GT labels/counts/num_points recomputed, >= MIN_POINTS points per
      box within CHECK_RADIUS, static boxes consistent across frames through the poses,
      directory < 2.5 MiB. Non-zero exit on failure.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
DEFAULT_OUT = os.path.join(ROOT, 'tests', 'fixtures', 'bevfusion', 'scene')
CMDLINE = '/usr/bin/python3 tools/gen/bevfusion_scene.py'

SEED = 20261130
CLASSES = ('CAR', 'TRUCK', 'BUS', 'BICYCLE', 'PEDESTRIAN')
N_PER_CLASS = 12
N_MOVING_CARS = 4
MOVING_RADIUS = 45.0         # moving cars stay this close, where their motion shows
PLACE_RADIUS = 66.0          # object centres within this distance of the first ego pose
MIN_DIST = {'CAR': 8.0, 'TRUCK': 14.0, 'BUS': 14.0, 'BICYCLE': 7.0, 'PEDESTRIAN': 7.0}
CHECK_RADIUS = 60.0          # every GT box closer than this has >= MIN_POINTS points
MIN_POINTS = 5
INSET = 0.08                 # GT box margin around the body (> 3 sigma range noise)
BOTTOM_GAP = 0.03            # bodies start this far above the ground (see make_shape)

# Lidar (base_link): 64 beams evenly spread over -25..+3 deg, 1029 azimuth steps (~0.35 deg).
LIDAR_POS = (0.0, 0.0, 1.9)
N_BEAMS = 64
ELEV_MIN_DEG, ELEV_MAX_DEG = -25.0, 3.0
N_AZIMUTH = 1029
MAX_RANGE = 120.0
RANGE_SIGMA = 0.02           # m, clipped at 3 sigma
# Weak returns are lost: P(drop) = exp(-e / SNR_E0), e = refl * (0.15 + 0.85 cos(incidence)) *
# (SNR_R0 / max(r, SNR_R0))^2, so dark ground at grazing angles thins out beyond ~50 m.
SNR_R0, SNR_E0 = 20.0, 1e-3
# The ego body in base_link, boxes (x0, x1, half width, z0, z1): cabin and lower body; base_link
# is on the ground under the rear axle. Rays that hit it are dropped, as Autoware's self
# crop-box filter drops such returns.
EGO_BODY = ((-0.8, 2.2, 0.8, 0.3, 1.45), (-1.0, 3.9, 0.95, 0.3, 0.95))

# Frames: timestamps and ego poses. The scene is built in the frame-0 ego frame ("scene");
# the world (map) frame is that one moved by T_WORLD_FROM_SCENE, so poses are non-trivial.
T0 = 1764460800.0            # 2025-11-30 00:00:00 UTC
DT = 0.1
WORLD_FROM_SCENE = (153.2, -48.7, 0.4)             # x, y, yaw (rad)
EGO1_IN_SCENE = (1.5, 0.026, math.radians(2.0))    # frame 1 ego pose in the scene frame

# BEVFusion-L voxel grid (spec section 1.4/1.5): float32 index rule.
PC_MIN = (-122.4, -122.4, -3.0)
VOXEL = (0.17, 0.17, 0.2)
GRID = (1440, 1440, 40)
MAX_VOXELS = 256000

PCD_FIELDS = ('x', 'y', 'z', 'intensity')
MAX_DIR_BYTES = int(2.5 * 1024 * 1024)


# ------------------------------------------------------------------------------------------
# Geometry helpers

def wrap_angle(a):
    """To [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def pose_matrix(x, y, yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0, x], [s, c, 0.0, y], [0.0, 0.0, 1.0, 0.0],
                     [0.0, 0.0, 0.0, 1.0]])


def rect_corners(cx, cy, hl, hw, yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    ax, ay = c * hl, s * hl
    bx, by = -s * hw, c * hw
    return np.array([[cx + ax + bx, cy + ay + by], [cx - ax + bx, cy - ay + by],
                     [cx - ax - bx, cy - ay - by], [cx + ax - bx, cy + ay - by]])


def rects_overlap(r1, r2):
    """Separating-axis test for two BEV rectangles (cx, cy, hl, hw, yaw)."""
    p1, p2 = rect_corners(*r1), rect_corners(*r2)
    for yaw in (r1[4], r2[4]):
        for ax in ((math.cos(yaw), math.sin(yaw)), (-math.sin(yaw), math.cos(yaw))):
            a = p1 @ ax
            b = p2 @ ax
            if a.max() < b.min() or b.max() < a.min():
                return False
    return True


def points_in_box(pts, box):
    """Mask of pts (N, 3) inside box (x, y, z centre, l, w, h, yaw), boundaries included."""
    x, y, z, l, w, h, yaw = box
    dx, dy = pts[:, 0] - x, pts[:, 1] - y
    c, s = math.cos(yaw), math.sin(yaw)
    lx = c * dx + s * dy
    ly = -s * dx + c * dy
    return ((np.abs(lx) <= l / 2) & (np.abs(ly) <= w / 2) & (np.abs(pts[:, 2] - z) <= h / 2))


# ------------------------------------------------------------------------------------------
# The world layout (scene frame = frame-0 base_link: x forward, y left, ground z = 0)

MAIN_LANES = ((-3.5, 0.0), (0.0, 0.0), (3.5, math.pi), (7.0, math.pi))   # (y, heading)
CROSS_A = ((29.75, -math.pi / 2), (33.25, -math.pi / 2), (36.75, math.pi / 2),
           (40.25, math.pi / 2))                                         # (x, heading)
CROSS_B = ((-45.25, math.pi / 2), (-41.75, math.pi / 2), (-38.25, -math.pi / 2),
           (-34.75, -math.pi / 2))
ROAD_Y = (-5.25, 8.75)
CROSS_A_X = (28.0, 42.0)
CROSS_B_X = (-47.0, -33.0)
BIKE_LANES = ((-6.5, 0.0), (10.0, math.pi))
SIDEWALKS = ((-70.0, 70.0, -10.25, -7.5), (-70.0, 70.0, 11.0, 13.75))   # x0, x1, y0, y1
CROSSWALK = (24.0, 27.0, -5.0, 8.5)
PARKING = (-25.0, 20.0, 17.0, 32.0)
TRUCK_YARD = (44.0, 62.0, -32.0, -14.0)
BUS_DEPOT = (-62.0, -46.0, 16.0, 38.0)
PLAZA = (-28.0, 18.0, -30.0, -14.0)
EGO_KEEPOUT = (1.0, 0.0, 4.8, 1.6, 0.0)     # BEV rect (cx, cy, hl, hw, yaw) over both ego poses

# Clutter: walls (cx, cy, length, thickness, height, yaw, reflectivity), poles (cx, cy, r, h, refl)
WALLS = ((-59.0, -13.0, 18.0, 0.3, 4.0, 0.0, 0.38), (56.0, 16.5, 20.0, 0.3, 5.0, 0.0, 0.42),
         (-2.0, 46.0, 30.0, 0.4, 3.0, 0.0, 0.30), (-6.0, -38.0, 24.0, 0.3, 2.5, 0.0, 0.35),
         (66.0, 2.0, 12.0, 0.3, 3.5, math.pi / 2, 0.33))
POLES = ((-55.0, -8.4, 0.15, 7.5, 0.45), (-25.0, -8.4, 0.15, 7.5, 0.45),
         (5.0, -8.4, 0.15, 7.5, 0.45), (50.0, -8.4, 0.15, 7.5, 0.45),
         (-52.0, 11.4, 0.15, 7.5, 0.45), (-22.0, 11.4, 0.15, 7.5, 0.45),
         (8.0, 11.4, 0.15, 7.5, 0.45), (52.0, 11.4, 0.15, 7.5, 0.45),
         (27.2, -6.0, 0.08, 3.0, 0.55), (27.2, 9.6, 0.08, 3.0, 0.55),
         (-15.0, 17.0, 0.1, 1.0, 0.5), (10.0, 17.0, 0.1, 1.0, 0.5))


def zones_for(label):
    """(weight, kind, params) zones where objects of this class are placed."""
    main = [('lane', ('x', y, hd)) for y, hd in MAIN_LANES]
    cross = [('lane', ('y', x, hd)) for x, hd in CROSS_A + CROSS_B]
    if label == 'CAR':
        return ([(0.40 / 4, *z) for z in main] + [(0.25 / 8, *z) for z in cross] +
                [(0.35, 'area', (PARKING, (math.pi / 2, -math.pi / 2), 3.0))])
    if label == 'TRUCK':
        return ([(0.35 / 4, *z) for z in main] + [(0.30 / 8, *z) for z in cross] +
                [(0.35, 'area', (TRUCK_YARD, (math.pi / 2, -math.pi / 2), 3.0))])
    if label == 'BUS':
        return ([(0.40 / 4, *z) for z in main] + [(0.25 / 8, *z) for z in cross] +
                [(0.35, 'area', (BUS_DEPOT, (0.0, math.pi), 3.0))])
    if label == 'BICYCLE':
        return ([(0.25, 'lane', ('x', y, hd)) for y, hd in BIKE_LANES] +
                [(0.10, 'area', (sw, (0.0, math.pi), 20.0)) for sw in SIDEWALKS] +
                [(0.15, 'area', (PARKING, None, 0.0)), (0.15, 'area', (PLAZA, None, 0.0))])
    return ([(0.225, 'area', (sw, None, 0.0)) for sw in SIDEWALKS] +
            [(0.15, 'area', (CROSSWALK, (math.pi / 2, -math.pi / 2), 15.0)),
             (0.25, 'area', (PLAZA, None, 0.0)), (0.15, 'area', (PARKING, None, 0.0))])


def sample_pose(rng, label):
    """A position and heading for one object of this class (not yet checked for overlap)."""
    zones = zones_for(label)
    w = np.array([z[0] for z in zones])
    kind, par = zones[int(rng.choice(len(zones), p=w / w.sum()))][1:]
    if kind == 'lane':
        axis, off, heading = par
        s = rng.uniform(-PLACE_RADIUS, PLACE_RADIUS)
        lat = off + rng.normal(0.0, 0.15)
        x, y = (s, lat) if axis == 'x' else (lat, s)
        yaw = heading + math.radians(rng.normal(0.0, 1.5))
    else:
        (x0, x1, y0, y1), yaws, sd_deg = par
        x, y = rng.uniform(x0, x1), rng.uniform(y0, y1)
        if yaws is None:
            yaw = rng.uniform(-math.pi, math.pi)
        else:
            yaw = yaws[int(rng.integers(len(yaws)))] + math.radians(rng.normal(0.0, sd_deg))
    return x, y, wrap_angle(yaw), kind == 'lane'


def make_shape(rng, label):
    """Dimensions (l, w, h) of the GT box, body parts and the BEV keep-out margins of one object.

    Parts are in the object frame (x forward, centre of the footprint at 0, ground z = 0):
    ('box', x, y, z0, z1, length, width, refl) or ('cyl', x, y, z0, z1, radius, refl).
    The body fills the GT box less INSET on the sides and the top (L x W x H below), so range
    noise (at most 3 sigma along the ray) never carries a hit outside its box: num_points counts
    every hit of the object (and the ground points inside the box)."""
    u = rng.uniform
    if label == 'CAR':
        l, w, h = u(4.2, 4.9), u(1.75, 1.95), u(1.45, 1.70)
    elif label == 'TRUCK':
        l, w, h = u(8.0, 10.0), u(2.40, 2.55), u(3.0, 3.4)
    elif label == 'BUS':
        l, w, h = u(11.5, 12.5), u(2.80, 2.95), u(3.2, 3.4)
    elif label == 'BICYCLE':
        l, w, h = u(1.7, 1.9), u(0.55, 0.65), u(1.35, 1.5)
    else:
        l, w, h = u(0.55, 0.7), u(0.55, 0.7), u(1.6, 1.9)
    L, W, H = l - 2 * INSET, w - 2 * INSET, h - INSET
    if label == 'CAR':
        paint = u(0.12, 0.65)
        zb = 0.58 * H
        parts = [('box', 0.0, 0.0, 0.22, zb, L, W, paint),
                 ('box', -0.06 * L, 0.0, zb, H, 0.52 * L, 0.90 * W, 0.07),     # cabin / glass
                 ('box', 0.38 * L, 0.0, zb, zb + 0.04, 0.18 * L, 0.9 * W, paint)]
        for sx in (0.31, -0.31):
            for sy in (1.0, -1.0):
                parts.append(('box', sx * L, sy * (W / 2 - 0.12), 0.0, 0.62, 0.62, 0.24, 0.04))
        margin = (0.6, 0.25)
    elif label == 'TRUCK':
        cab = u(0.25, 0.55)
        parts = [('box', L / 2 - 1.1, 0.0, 0.5, 2.85, 2.2, W, cab),                # cab
                 ('box', L / 2 - 1.9, 0.0, 2.2, 2.85, 0.6, 0.92 * W, 0.07),         # windscreen
                 ('box', -1.25, 0.0, 0.95, H, L - 2.5, W, u(0.35, 0.75)),           # cargo box
                 ('box', 0.0, 0.0, 0.5, 0.95, L - 0.2, 0.8 * W, 0.12)]              # chassis
        for sx in (L / 2 - 1.3, -L / 2 + 2.4, -L / 2 + 1.3):
            for sy in (1.0, -1.0):
                parts.append(('box', sx, sy * (W / 2 - 0.19), 0.0, 1.0, 1.0, 0.38, 0.04))
        margin = (0.7, 0.3)
    elif label == 'BUS':
        paint = u(0.3, 0.6)
        parts = [('box', 0.0, 0.0, 0.32, 1.15, L, W, paint),
                 ('box', 0.0, 0.0, 1.15, 2.45, L, W, 0.08),                         # windows
                 ('box', 0.0, 0.0, 2.45, H, L, W, paint)]
        for sx in (L / 2 - 2.6, -L / 2 + 3.0):
            for sy in (1.0, -1.0):
                parts.append(('box', sx, sy * (W / 2 - 0.18), 0.0, 1.0, 1.0, 0.36, 0.04))
        margin = (0.7, 0.3)
    elif label == 'BICYCLE':
        frame = u(0.2, 0.55)
        parts = [('box', 0.0, 0.0, 0.0, 0.7, L, 0.07, 0.10),                      # wheels
                 ('box', 0.0, 0.0, 0.45, 0.95, 0.55 * L, 0.06, frame),               # frame
                 ('box', 0.30 * L, 0.0, 1.0, 1.07, 0.06, W, frame),                  # handlebar
                 ('box', -0.05 * L, 0.0, 0.35, 0.90, 0.30, 0.34, u(0.1, 0.35)),      # legs
                 ('box', 0.0, 0.0, 0.90, H - 0.23, 0.36, 0.40, u(0.1, 0.45)),        # torso
                 ('cyl', 0.02 * L, 0.0, H - 0.23, H, 0.11, 0.25)]                    # head
        margin = (0.3, 0.3)
    else:
        parts = [('cyl', 0.0, 0.0, 0.0, H - 0.24, min(L, W) / 2, u(0.08, 0.45)),      # body
                 ('cyl', 0.0, 0.0, H - 0.24, H, 0.11, 0.25)]                         # head
        margin = (0.3, 0.3)
    # Parts that touch the ground start BOTTOM_GAP above it: noise along a downward ray moves a
    # hit down by at most 3 sigma x sin(25 deg) = 2.5 cm, which must not leave the box (z >= 0).
    parts = [p[:3] + (max(p[3], BOTTOM_GAP),) + p[4:] for p in parts]
    for p in parts:
        hx, hy = (p[5] / 2, p[6] / 2) if p[0] == 'box' else (p[5], p[5])
        if (abs(p[1]) + hx > L / 2 + 1e-9 or abs(p[2]) + hy > W / 2 + 1e-9 or p[3] < 0.0 or
                p[4] > H + 1e-9 or p[3] >= p[4]):
            raise AssertionError('%s part %s outside %.3f x %.3f x %.3f' % (label, p, L, W, H))
    return (l, w, h), parts, margin


class Obj:
    def __init__(self, oid, label, dims, parts, margin):
        self.id, self.label, self.dims, self.parts, self.margin = oid, label, dims, parts, margin
        self.x = self.y = self.yaw = 0.0
        self.speed = 0.0

    def pose_at(self, t):
        """(x, y, yaw) in the scene frame t seconds after frame 0."""
        return (self.x + self.speed * t * math.cos(self.yaw),
                self.y + self.speed * t * math.sin(self.yaw), self.yaw)

    def keepout(self):
        """BEV rect covering the object over both frames, with its margins."""
        l, w, _ = self.dims
        travel = self.speed * DT
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (self.x + c * travel / 2, self.y + s * travel / 2,
                l / 2 + self.margin[0] + travel / 2, w / 2 + self.margin[1], self.yaw)


def static_keepouts():
    rects = [EGO_KEEPOUT]
    for cx, cy, length, thick, _h, yaw, _r in WALLS:
        rects.append((cx, cy, length / 2 + 0.3, thick / 2 + 0.3, yaw))
    for cx, cy, r, _h, _refl in POLES:
        rects.append((cx, cy, r + 0.3, r + 0.3, 0.0))
    return rects


def place(rng, obj, others, moving):
    """Draws poses until obj fits (inside the radius, no overlap with anything)."""
    fixed = static_keepouts()
    for _ in range(10000):
        x, y, yaw, on_lane = sample_pose(rng, obj.label)
        if moving and (not on_lane or math.hypot(x, y) > MOVING_RADIUS):
            continue
        if not MIN_DIST[obj.label] <= math.hypot(x, y) <= PLACE_RADIUS:
            continue
        obj.x, obj.y, obj.yaw = x, y, yaw
        obj.speed = rng.uniform(7.0, 13.0) if moving else 0.0
        k = obj.keepout()
        if any(rects_overlap(k, r) for r in fixed):
            continue
        if any(rects_overlap(k, o.keepout()) for o in others if o is not obj):
            continue
        return
    raise RuntimeError('could not place object %d (%s)' % (obj.id, obj.label))


# ------------------------------------------------------------------------------------------
# Ray casting (scene frame)

def primitives(objs, t):
    """Boxes (M, 9): cx, cy, z0, z1, hl, hw, yaw, refl, owner; cylinders (K, 7): cx, cy, z0,
    z1, r, refl, owner. owner = object index, -1 for clutter."""
    boxes, cyls = [], []
    for cx, cy, length, thick, h, yaw, refl in WALLS:
        boxes.append((cx, cy, 0.0, h, length / 2, thick / 2, yaw, refl, -1))
    for cx, cy, r, h, refl in POLES:
        cyls.append((cx, cy, 0.0, h, r, refl, -1))
    for i, o in enumerate(objs):
        ox, oy, yaw = o.pose_at(t)
        c, s = math.cos(yaw), math.sin(yaw)
        for p in o.parts:
            px, py = ox + c * p[1] - s * p[2], oy + s * p[1] + c * p[2]
            if p[0] == 'box':
                boxes.append((px, py, p[3], p[4], p[5] / 2, p[6] / 2, yaw, p[7], i))
            else:
                cyls.append((px, py, p[3], p[4], p[5], p[6], i))
    return np.array(boxes, dtype=np.float64), np.array(cyls, dtype=np.float64)


def ground_reflectivity(x, y):
    """Asphalt, lane markings, crosswalk stripes, concrete sidewalks, gravel elsewhere."""
    on_main = (y >= ROAD_Y[0]) & (y <= ROAD_Y[1])
    on_cross = (((x >= CROSS_A_X[0]) & (x <= CROSS_A_X[1])) |
                ((x >= CROSS_B_X[0]) & (x <= CROSS_B_X[1])))
    on_lot = ((x >= PARKING[0]) & (x <= PARKING[1]) & (y >= PARKING[2]) & (y <= PARKING[3]))
    refl = np.where(on_main | on_cross | on_lot, 0.08, 0.16)
    walk = np.zeros_like(x, dtype=bool)
    for x0, x1, y0, y1 in SIDEWALKS:
        walk |= (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    refl = np.where(walk & ~on_cross, 0.24, refl)
    main_only = on_main & ~on_cross
    mark = main_only & ((np.abs(y - 1.65) < 0.06) | (np.abs(y - 1.85) < 0.06))     # double line
    dashed = (np.mod(x, 9.0) < 3.0)
    for yl in (-1.75, 5.25):
        mark |= main_only & dashed & (np.abs(y - yl) < 0.075)
    for yl in (ROAD_Y[0] + 0.2, ROAD_Y[1] - 0.2):
        mark |= main_only & (np.abs(y - yl) < 0.075)
    zebra = ((x >= CROSSWALK[0]) & (x <= CROSSWALK[1]) & on_main & (np.mod(y, 1.0) < 0.5))
    return np.where(mark | zebra, 0.6, refl)


def lidar_dirs():
    """Unit ray directions in base_link, (N_AZIMUTH * N_BEAMS, 3), azimuth-major (a column of
    64 beams, bottom to top, per azimuth step, starting behind the vehicle and turning CCW)."""
    el = np.radians(np.linspace(ELEV_MIN_DEG, ELEV_MAX_DEG, N_BEAMS))
    az = -math.pi + np.arange(N_AZIMUTH) * (2.0 * math.pi / N_AZIMUTH)
    az, el = np.meshgrid(az, el, indexing='ij')
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)
    return d.reshape(-1, 3)


def _slab(o, d, lo, hi):
    """Entry/exit ray parameters for the slab lo <= o + t d <= hi (o scalar, d array)."""
    with np.errstate(divide='ignore', invalid='ignore'):
        ta = (lo - o) / d
        tb = (hi - o) / d
    t0, t1 = np.minimum(ta, tb), np.maximum(ta, tb)
    par = d == 0.0
    if par.any():
        inside = lo <= o <= hi
        t0 = np.where(par, -np.inf if inside else np.inf, t0)
        t1 = np.where(par, np.inf if inside else -np.inf, t1)
    return t0, t1


def _rays_towards(origin, cx, cy, radius, az0):
    """Indices of the rays whose azimuth column can meet a vertical shape of this BEV bounding
    circle (rays are azimuth-major, column k at scene azimuth az0 + k * step)."""
    step = 2.0 * math.pi / N_AZIMUTH
    dist = math.hypot(cx - origin[0], cy - origin[1])
    if dist <= radius + 0.5:
        cols = np.arange(N_AZIMUTH)
    else:
        half = math.asin(radius / dist)
        mid = math.atan2(cy - origin[1], cx - origin[0])
        k0 = math.floor((mid - half - az0) / step) - 1
        k1 = math.ceil((mid + half - az0) / step) + 1
        cols = np.arange(k0, k1 + 1) % N_AZIMUTH
    return (cols[:, None] * N_BEAMS + np.arange(N_BEAMS)[None, :]).reshape(-1)


def cast(origin, dirs, az0, boxes, cyls):
    """First hit per ray (dirs from lidar_dirs() turned so column 0 is at scene azimuth az0):
    t (inf = none), owner (-2 ground, -1 clutter, >= 0 object), reflectivity, cos(incidence)."""
    n = dirs.shape[0]
    best = np.full(n, np.inf)
    owner = np.full(n, -3, dtype=np.int64)
    refl = np.zeros(n)
    cosi = np.zeros(n)
    dx, dy, dz = dirs[:, 0], dirs[:, 1], dirs[:, 2]
    ox, oy, oz = origin

    down = dz < 0.0
    tg = np.where(down, -oz / np.where(down, dz, -1.0), np.inf)
    upd = tg < best
    best[upd], owner[upd], cosi[upd] = tg[upd], -2, -dz[upd]

    for cx, cy, z0, z1, hl, hw, yaw, rf, ow in boxes:
        sel = _rays_towards(origin, cx, cy, math.hypot(hl, hw), az0)
        dx, dy, dz = dirs[sel, 0], dirs[sel, 1], dirs[sel, 2]
        c, s = math.cos(yaw), math.sin(yaw)
        lox, loy = c * (ox - cx) + s * (oy - cy), -s * (ox - cx) + c * (oy - cy)
        ldx, ldy = c * dx + s * dy, -s * dx + c * dy
        tx0, tx1 = _slab(lox, ldx, -hl, hl)
        ty0, ty1 = _slab(loy, ldy, -hw, hw)
        tz0, tz1 = _slab(oz, dz, z0, z1)
        tmin = np.maximum(np.maximum(tx0, ty0), tz0)
        tmax = np.minimum(np.minimum(tx1, ty1), tz1)
        hit = (tmax >= tmin) & (tmin > 1e-6) & (tmin < best[sel])
        if not hit.any():
            continue
        face = np.where(tmin == tx0, np.abs(ldx), np.where(tmin == ty0, np.abs(ldy), np.abs(dz)))
        idx = sel[hit]
        best[idx], owner[idx], refl[idx], cosi[idx] = tmin[hit], int(ow), rf, face[hit]

    for cx, cy, z0, z1, r, rf, ow in cyls:
        sel = _rays_towards(origin, cx, cy, r, az0)
        dx, dy, dz = dirs[sel, 0], dirs[sel, 1], dirs[sel, 2]
        px, py = ox - cx, oy - cy
        a = dx * dx + dy * dy
        b = 2.0 * (px * dx + py * dy)
        cc = px * px + py * py - r * r
        disc = b * b - 4.0 * a * cc
        ok = (disc >= 0.0) & (a > 1e-12)
        with np.errstate(invalid='ignore', divide='ignore'):
            ts = np.where(ok, (-b - np.sqrt(np.where(ok, disc, 0.0))) / (2.0 * a), np.inf)
        zs = oz + ts * dz
        side = ok & (ts > 1e-6) & (zs >= z0) & (zs <= z1)
        t = np.where(side, ts, np.inf)
        with np.errstate(invalid='ignore'):
            cs = np.abs((px + ts * dx) * dx + (py + ts * dy) * dy) / r
        for zc, ok_dir in ((z1, (oz > z1) & (dz < 0.0)), (z0, (oz < z0) & (dz > 0.0))):
            if not ok_dir.any():
                continue
            with np.errstate(divide='ignore', invalid='ignore'):
                tc = np.where(ok_dir, (zc - oz) / np.where(ok_dir, dz, 1.0), np.inf)
            qx, qy = px + tc * dx, py + tc * dy
            cap = ok_dir & (tc > 1e-6) & (qx * qx + qy * qy <= r * r) & (tc < t)
            t = np.where(cap, tc, t)
            cs = np.where(cap, np.abs(dz), cs)
        hit = t < best[sel]
        if not hit.any():
            continue
        idx = sel[hit]
        best[idx], owner[idx], refl[idx], cosi[idx] = t[hit], int(ow), rf, cs[hit]
    return best, owner, refl, cosi


def scan(objs, frame, ego):
    """One sweep from ego pose (x, y, yaw) in the scene frame. Returns the base_link points
    (N, 4) float32 (x, y, z, intensity) and the owner of each point."""
    t = frame * DT
    boxes, cyls = primitives(objs, t)
    d_ego = lidar_dirs()
    ex, ey, eyaw = ego
    c, s = math.cos(eyaw), math.sin(eyaw)
    d_scene = np.stack([c * d_ego[:, 0] - s * d_ego[:, 1], s * d_ego[:, 0] + c * d_ego[:, 1],
                        d_ego[:, 2]], axis=1)
    origin = (ex + c * LIDAR_POS[0] - s * LIDAR_POS[1], ey + s * LIDAR_POS[0] + c * LIDAR_POS[1],
              LIDAR_POS[2])
    rng = np.random.default_rng([SEED, frame, 1])
    rng_noise = rng.normal(0.0, RANGE_SIGMA, size=d_ego.shape[0])
    rng_int = rng.normal(0.0, 1.0, size=d_ego.shape[0])
    rng_drop = rng.uniform(0.0, 1.0, size=d_ego.shape[0])

    body = [(ex + c * (x0 + x1) / 2, ey + s * (x0 + x1) / 2, z0, z1, (x1 - x0) / 2, hw, eyaw,
             0.0, -4) for x0, x1, hw, z0, z1 in EGO_BODY]
    boxes = np.concatenate([boxes, np.array(body)], axis=0)
    tt, owner, refl, cosi = cast(origin, d_scene, -math.pi + eyaw, boxes, cyls)
    ground = owner == -2
    gp = np.asarray(origin)[None, :] + tt[ground, None] * d_scene[ground]
    refl[ground] = ground_reflectivity(gp[:, 0], gp[:, 1])
    rng_t = tt + np.clip(rng_noise, -3 * RANGE_SIGMA, 3 * RANGE_SIGMA)
    energy = (refl * (0.15 + 0.85 * np.clip(cosi, 0.0, 1.0)) *
              (SNR_R0 / np.maximum(np.where(np.isfinite(tt), tt, 1e9), SNR_R0)) ** 2)
    lost = rng_drop < np.exp(-energy / SNR_E0)
    keep = (np.isfinite(tt) & (tt <= MAX_RANGE) & (rng_t <= MAX_RANGE) & (owner != -4) &
            ~lost)
    pts = np.asarray(LIDAR_POS)[None, :] + rng_t[keep, None] * d_ego[keep]
    # Intensity 0..255 (uint8-like): Lambertian-ish reflectivity x incidence, 5% speckle.
    cos_k = np.clip(cosi[keep], 0.0, 1.0)
    inten = 255.0 * refl[keep] * (0.15 + 0.85 * cos_k) * (1.0 + 0.05 * rng_int[keep])
    inten = np.clip(np.rint(inten), 0.0, 255.0)
    out = np.concatenate([pts, inten[:, None]], axis=1).astype(np.float32)
    return out, owner[keep]


# ------------------------------------------------------------------------------------------
# Frames, GT, statistics

def ego_poses():
    """Per frame: (x, y, yaw) in the scene frame."""
    return [(0.0, 0.0, 0.0), EGO1_IN_SCENE]


def gt_boxes(objs, frame, ego, pts):
    """GT in the frame's base_link, with num_points counted in pts."""
    ex, ey, eyaw = ego
    c, s = math.cos(eyaw), math.sin(eyaw)
    out = []
    for o in objs:
        x, y, yaw = o.pose_at(frame * DT)
        bx, by = c * (x - ex) + s * (y - ey), -s * (x - ex) + c * (y - ey)
        vx, vy = o.speed * math.cos(yaw), o.speed * math.sin(yaw)
        l, w, h = o.dims
        def r(v, nd=4):
            return round(v, nd) + 0.0          # + 0.0: no "-0.0" in the file
        rec = {'id': o.id, 'label': o.label, 'x': r(bx), 'y': r(by), 'z': r(h / 2),
               'l': r(l), 'w': r(w), 'h': r(h), 'yaw': r(wrap_angle(yaw - eyaw), 6),
               'vx': r(c * vx + s * vy), 'vy': r(-s * vx + c * vy)}
        # Counted with the values as written, so a reader recomputes exactly this.
        box = tuple(rec[k] for k in ('x', 'y', 'z', 'l', 'w', 'h', 'yaw'))
        rec['num_points'] = int(points_in_box(pts[:, :3].astype(np.float64), box).sum())
        out.append(rec)
    return out


def voxel_keys(xyz):
    """BEVFusion voxel keys, float32 rule c = floor((p - min) / size); out-of-grid dropped."""
    p = xyz.astype(np.float32)
    keys = np.zeros(p.shape[0], dtype=np.int64)
    ok = np.ones(p.shape[0], dtype=bool)
    for d in range(3):
        q = (p[:, d] - np.float32(PC_MIN[d])) / np.float32(VOXEL[d])
        c = np.floor(q).astype(np.int64)
        ok &= (c >= 0) & (c < GRID[d])
        keys = keys * GRID[d] + c
    return keys[ok]


def voxel_stats(xyz):
    keys = voxel_keys(xyz)
    uniq, counts = np.unique(keys, return_counts=True)
    return {'points_in_range': int(keys.size), 'voxels': int(uniq.size),
            'voxels_over_cap': max(0, int(uniq.size) - MAX_VOXELS),
            'voxels_over_10_points': int((counts > 10).sum()),
            'max_points_per_voxel': int(counts.max()) if counts.size else 0}


def densify(cur_pts, past_pts, T_world_from_cur, T_world_from_past):
    """Autoware-style 2-sweep densification in float32: past points moved into the current
    frame by T = T_cur<-world . T_world<-past (computed in float64, applied in float32)."""
    T = (np.linalg.inv(T_world_from_cur) @ T_world_from_past).astype(np.float32)
    q = past_pts[:, :3] @ T[:3, :3].T + T[:3, 3]
    return np.concatenate([cur_pts[:, :3], q.astype(np.float32)], axis=0)


def visibility_failures(objs, frames):
    """Ids of objects with < MIN_POINTS own hits or GT points in some frame. Placement asks
    this of every object (not only those within CHECK_RADIUS), so every GT box is visible."""
    bad = set()
    for fr in frames:
        for o, g in zip(objs, fr['gt']):
            own = int((fr['owner'] == objs.index(o)).sum())
            if min(own, g['num_points']) < MIN_POINTS:
                bad.add(o.id)
    return bad


def build(verbose=True):
    rng = np.random.default_rng(SEED)
    objs = []
    oid = 0
    for label in CLASSES:
        for k in range(N_PER_CLASS):
            dims, parts, margin = make_shape(rng, label)
            objs.append(Obj(oid, label, dims, parts, margin))
            oid += 1
    moving = set(range(N_MOVING_CARS))          # the first cars move along their lanes
    for o in objs:
        place(rng, o, objs[:objs.index(o)], o.id in moving)

    ego = ego_poses()
    for rnd in range(60):
        frames = []
        for f in range(2):
            pts, owner = scan(objs, f, ego[f])
            frames.append({'pts': pts, 'owner': owner, 'gt': gt_boxes(objs, f, ego[f], pts)})
        for fr in frames:      # every hit of an object lies inside its own GT box (INSET)
            for i, g in enumerate(fr['gt']):
                mine = fr['pts'][fr['owner'] == i, :3].astype(np.float64)
                box = tuple(g[k] for k in ('x', 'y', 'z', 'l', 'w', 'h', 'yaw'))
                if not points_in_box(mine, box).all():
                    raise AssertionError('object %d has hits outside its box' % i)
        bad = visibility_failures(objs, frames)
        if verbose:
            print('round %d: %d objects too occluded%s' % (
                rnd, len(bad), (': ' + ' '.join(str(b) for b in sorted(bad))) if bad else ''))
        if not bad:
            return objs, frames
        for o in objs:
            if o.id in bad:
                place(rng, o, objs, o.id in moving)
    raise RuntimeError('objects still occluded after 60 rounds: %s' % sorted(bad))


def world_poses():
    Tws = pose_matrix(*WORLD_FROM_SCENE)
    return [Tws @ pose_matrix(*e) for e in ego_poses()]


# ------------------------------------------------------------------------------------------
# Files

def pcd_bytes(pts):
    n = pts.shape[0]
    head = ('# .PCD v0.7 - Point Cloud Data file format\n'
            'VERSION 0.7\n'
            'FIELDS x y z intensity\n'
            'SIZE 4 4 4 4\n'
            'TYPE F F F F\n'
            'COUNT 1 1 1 1\n'
            'WIDTH %d\n'
            'HEIGHT 1\n'
            'VIEWPOINT 0 0 0 1 0 0 0\n'
            'POINTS %d\n'
            'DATA binary\n' % (n, n))
    return head.encode('ascii') + np.ascontiguousarray(pts, dtype='<f4').tobytes()


def read_pcd(path):
    """Independent reader for the files written here (and any PCD v0.7 binary with F4 fields).
    Returns (fields, points float32 (N, F))."""
    with open(path, 'rb') as f:
        buf = f.read()
    hdr = {}
    pos = 0
    while True:
        end = buf.index(b'\n', pos)
        line = buf[pos:end].decode('ascii').strip()
        pos = end + 1
        if not line or line.startswith('#'):
            continue
        key, _, val = line.partition(' ')
        hdr[key] = val.split()
        if key == 'DATA':
            break
    fields = hdr['FIELDS']
    if hdr.get('VERSION') != ['0.7'] or hdr['DATA'] != ['binary']:
        raise ValueError('%s: VERSION %s DATA %s' % (path, hdr.get('VERSION'), hdr['DATA']))
    if hdr['SIZE'] != ['4'] * len(fields) or hdr['TYPE'] != ['F'] * len(fields):
        raise ValueError('%s: SIZE %s TYPE %s' % (path, hdr['SIZE'], hdr['TYPE']))
    if hdr.get('COUNT', ['1'] * len(fields)) != ['1'] * len(fields):
        raise ValueError('%s: COUNT %s' % (path, hdr['COUNT']))
    n = int(hdr['POINTS'][0])
    if int(hdr['WIDTH'][0]) * int(hdr['HEIGHT'][0]) != n:
        raise ValueError('%s: WIDTH*HEIGHT != POINTS %d' % (path, n))
    if len(buf) - pos != n * 4 * len(fields):
        raise ValueError('%s: %d data bytes, expected %d' % (path, len(buf) - pos,
                                                               n * 4 * len(fields)))
    pts = np.frombuffer(buf, dtype='<f4', count=n * len(fields), offset=pos)
    return fields, pts.reshape(n, len(fields)).astype(np.float32)


def fmt_frames_json(head, frames, list_key):
    """JSON with one line per list item (a box, a matrix): short, diff-friendly, deterministic."""
    out = ['{']
    for k, v in head.items():
        out.append(' %s: %s,' % (json.dumps(k), json.dumps(v)))
    out.append(' "frames": [')
    for i, fr in enumerate(frames):
        keys = [k for k in fr if k != list_key]
        line = '  {' + ', '.join('%s: %s' % (json.dumps(k), json.dumps(fr[k])) for k in keys)
        items = fr[list_key]
        if isinstance(items, list) and items and isinstance(items[0], dict):
            out.append(line + ', %s: [' % json.dumps(list_key))
            out += ['   %s%s' % (json.dumps(b), ',' if j + 1 < len(items) else '')
                    for j, b in enumerate(items)]
            out.append('  ]}' + (',' if i + 1 < len(frames) else ''))
        else:
            out.append(line + ', %s: %s}%s' % (json.dumps(list_key), json.dumps(items),
                                               ',' if i + 1 < len(frames) else ''))
    out.append(' ]')
    out.append('}')
    return '\n'.join(out) + '\n'


def write_outputs(out_dir, objs, frames):
    os.makedirs(out_dir, exist_ok=True)
    Tw = world_poses()
    names = ['scene_%03d.pcd' % f for f in range(len(frames))]
    for name, fr in zip(names, frames):
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(pcd_bytes(fr['pts']))
    poses = [{'file': names[f], 'timestamp_s': round(T0 + f * DT, 6),
              'T_world_from_ego': [float(v) for v in Tw[f].reshape(-1)]}
             for f in range(len(frames))]
    with open(os.path.join(out_dir, 'poses.json'), 'w') as f:
        f.write(fmt_frames_json({}, poses, 'T_world_from_ego'))
    head = {'frame_id': 'base_link',
            'fields': 'x y z: box centre (gravity centre, z = h/2 on flat ground), l along the '
                      'heading, yaw CCW from +x in [-pi, pi], vx vy: m/s in this frame\'s axes, '
                      'num_points: points of this frame inside the box'}
    gt = [{'file': names[f], 'timestamp_s': round(T0 + f * DT, 6), 'boxes': frames[f]['gt']}
          for f in range(len(frames))]
    with open(os.path.join(out_dir, 'gt.json'), 'w') as f:
        f.write(fmt_frames_json(head, gt, 'boxes'))
    stats = scene_stats(objs, frames, Tw)
    with open(os.path.join(out_dir, 'README.md'), 'w') as f:
        f.write(readme_text(stats))
    return stats


def scene_stats(objs, frames, Tw):
    st = {'frames': []}
    for f, fr in enumerate(frames):
        own = fr['owner']
        per_class = {}
        for label in CLASSES:
            idx = [i for i, o in enumerate(objs) if o.label == label]
            hits = int(np.isin(own, idx).sum())
            near = [g['num_points'] for g in fr['gt']
                    if g['label'] == label and math.hypot(g['x'], g['y']) < CHECK_RADIUS]
            per_class[label] = {'hits': hits, 'boxes_within_60m': len(near),
                                'min_points_within_60m': min(near) if near else None}
        st['frames'].append({'points': int(fr['pts'].shape[0]),
                             'ground': int((own == -2).sum()), 'clutter': int((own == -1).sum()),
                             'per_class': per_class, 'voxels': voxel_stats(fr['pts'][:, :3])})
    dens = densify(frames[1]['pts'], frames[0]['pts'], Tw[1], Tw[0])
    st['densified_001'] = voxel_stats(dens)
    return st


README_HEAD = """\
# Synthetic lidar scene for the BEVFusion-L tests

Made by `tools/gen/bevfusion_scene.py` (numpy only, seeded; running it again gives
byte-identical files). Regenerate and verify from the repository root:

```
{cmd}
{cmd} --check
```

No third-party data. A flat world (ground z = 0) with a main road along the ego heading, two
cross streets, bike lanes, sidewalks, a parking lot, a truck yard, a bus depot and a plaza;
{n_per} objects of each class (CAR, TRUCK, BUS, BICYCLE, PEDESTRIAN) built from boxes and
cylinders (vehicles: body, cabin or windows, wheels; bicycle: thin frame plus rider;
pedestrian: body and head cylinders), placed without overlap within {radius:.0f} m, vehicles
aligned to lanes or parking rows, the others at random yaw; {walls} walls and {poles} poles
as clutter.

Lidar: {beams} beams evenly over {el0:.0f}..{el1:+.0f} deg, {naz} azimuth steps ({step:.3f} deg),
at ({lx:.1f}, {ly:.1f}, {lz:.1f}) in base_link, max range {rmax:.0f} m. First hit (slab test for
oriented boxes, vertical cylinders with caps, the ground plane); Gaussian range noise
sigma {sigma:.2f} m, clipped at 3 sigma. Intensity = round(255 x reflectivity x (0.15 + 0.85
cos(incidence)) x (1 + 0.05 N)), clipped to 0..255 (lane markings and light paint bright,
glass and tyres dark). Weak returns are lost with P = exp(-e / {e0:g}), e = reflectivity x
(0.15 + 0.85 cos) x ({r0:.0f} / max(r, {r0:.0f}))^2, so far dark ground thins out. Rays that hit
the ego body (cabin and lower-body boxes; base_link is under the rear axle) are dropped, as
Autoware's self crop box does, which leaves the usual blind zone. Points are in scan order:
one column of 64 beams (bottom to top) per azimuth step, starting behind the vehicle and
turning CCW. No motion distortion.

| file | content |
|---|---|
| `scene_000.pcd` | frame 0: PCD v0.7, `DATA binary`, FIELDS x y z intensity (F 4), base_link |
| `scene_001.pcd` | frame 1, {dt:.1f} s later: the ego moved ({ex:.3f}, {ey:.3f}) m and yawed {eyaw:.1f} deg (in the frame-0 frame); {nmov} cars drive at 7-13 m/s, everything else is static |
| `poses.json` | `{{"frames": [{{file, timestamp_s, T_world_from_ego}}]}}`, 4x4 row-major; world = map |
| `gt.json` | per frame, boxes in that frame's base_link: id (same object in both frames), label, x y z (centre, z = h/2), l w h, yaw (CCW from +x), vx vy (m/s, this frame's axes), num_points (points of the file inside the box, boundaries included; ground points under a vehicle count too) |

Every GT box, at any distance, has at least {minpts} points in both frames: the generator
re-places objects that are too occluded. Bodies fill their GT boxes less {inset:.2f} m on the
sides and the top, so every hit of an object lies inside its box. Voxels use BEVFusion-L's
grid (range [-122.4, -122.4, -3] .. [122.4, 122.4, 5), voxel 0.17 x 0.17 x 0.2, float32
`floor((p - min) / size)`); "densified" is frame 1 plus frame 0 moved into frame 1 with
`T = inv(T_world_from_ego1) . T_world_from_ego0` (float32 points).

| | frame 0 | frame 1 |
|---|---|---|
"""


def readme_text(st):
    lines = [README_HEAD.format(
        cmd=CMDLINE, n_per=N_PER_CLASS, radius=PLACE_RADIUS, walls=len(WALLS), poles=len(POLES),
        beams=N_BEAMS, el0=ELEV_MIN_DEG, el1=ELEV_MAX_DEG, naz=N_AZIMUTH, step=360.0 / N_AZIMUTH,
        lx=LIDAR_POS[0], ly=LIDAR_POS[1], lz=LIDAR_POS[2], rmax=MAX_RANGE, sigma=RANGE_SIGMA,
        e0=SNR_E0, r0=SNR_R0, dt=DT, ex=EGO1_IN_SCENE[0], ey=EGO1_IN_SCENE[1],
        eyaw=math.degrees(EGO1_IN_SCENE[2]), nmov=N_MOVING_CARS, minpts=MIN_POINTS,
        inset=INSET).rstrip('\n')]
    f0, f1 = st['frames']
    lines.append('| points | %d | %d |' % (f0['points'], f1['points']))
    lines.append('| ground / clutter hits | %d / %d | %d / %d |'
                 % (f0['ground'], f0['clutter'], f1['ground'], f1['clutter']))
    for label in CLASSES:
        a, b = f0['per_class'][label], f1['per_class'][label]
        lines.append('| %s hits (boxes < %.0f m, min points) | %d (%d, %s) | %d (%d, %s) |'
                     % (label, CHECK_RADIUS, a['hits'], a['boxes_within_60m'],
                        a['min_points_within_60m'], b['hits'], b['boxes_within_60m'],
                        b['min_points_within_60m']))
    lines.append('| voxels (max points per voxel) | %d (%d) | %d (%d) |'
                 % (f0['voxels']['voxels'], f0['voxels']['max_points_per_voxel'],
                    f1['voxels']['voxels'], f1['voxels']['max_points_per_voxel']))
    d = st['densified_001']
    lines.append('| voxels, densified (frame 1 + frame 0) | | %d (%d points) |'
                 % (d['voxels'], d['points_in_range']))
    lines.append('')
    return '\n'.join(lines)


# ------------------------------------------------------------------------------------------
# --check: re-read the files and verify them (independent of the C code)

def check(out_dir):
    errors = []

    def req(cond, msg):
        if not cond:
            errors.append(msg)
        return cond

    with open(os.path.join(out_dir, 'poses.json')) as f:
        poses = json.load(f)
    with open(os.path.join(out_dir, 'gt.json')) as f:
        gt = json.load(f)
    req(len(poses['frames']) == 2 and len(gt['frames']) == 2, 'expected 2 frames')
    mats = []
    prev_t = -math.inf
    for pf, gf in zip(poses['frames'], gt['frames']):
        name = pf['file']
        req(gf['file'] == name, '%s: gt.json frame file %s' % (name, gf['file']))
        req(pf['timestamp_s'] > prev_t, '%s: timestamps not increasing' % name)
        prev_t = pf['timestamp_s']
        T = np.array(pf['T_world_from_ego'], dtype=np.float64)
        if not req(T.shape == (16,) and np.all(np.isfinite(T)), '%s: T_world_from_ego' % name):
            continue
        T = T.reshape(4, 4)
        mats.append(T)
        R = T[:3, :3]
        req(np.allclose(R @ R.T, np.eye(3), atol=1e-9) and abs(np.linalg.det(R) - 1) < 1e-9,
            '%s: rotation not orthonormal' % name)
        req(np.array_equal(T[3], [0, 0, 0, 1]), '%s: last row %s' % (name, T[3]))

        try:
            fields, pts = read_pcd(os.path.join(out_dir, name))
        except (OSError, ValueError, KeyError, IndexError) as e:
            req(False, '%s: unreadable: %s' % (name, e))
            continue
        req(tuple(fields) == PCD_FIELDS, '%s: FIELDS %s' % (name, fields))
        n = pts.shape[0]
        req(50000 <= n <= 60000, '%s: %d points, expected 50k..60k' % (name, n))
        req(bool(np.all(np.isfinite(pts))), '%s: non-finite values' % name)
        it = pts[:, 3]
        req(bool(np.all((it >= 0) & (it <= 255) & (it == np.rint(it)))),
            '%s: intensity not integer 0..255' % name)
        rng_ = np.linalg.norm(pts[:, :3].astype(np.float64) - np.array(LIDAR_POS), axis=1)
        req(float(rng_.max()) <= MAX_RANGE + 1e-3, '%s: range %.3f > %.0f' % (name, rng_.max(),
                                                                              MAX_RANGE))
        req(float(rng_.min()) > 1.0, '%s: point %.3f m from the sensor' % (name, rng_.min()))
        req(float(pts[:, 2].min()) > -0.2 and float(pts[:, 2].max()) < 10.0,
            '%s: z range %.3f..%.3f' % (name, pts[:, 2].min(), pts[:, 2].max()))
        vs = voxel_stats(pts[:, :3])
        req(20000 <= vs['voxels'] <= 40000, '%s: %d voxels, expected 20k..40k' % (name,
                                                                                  vs['voxels']))
        counts = {c: 0 for c in CLASSES}
        ids = [b['id'] for b in gf['boxes']]
        req(len(set(ids)) == len(ids), '%s: duplicate box ids' % name)
        for b in gf['boxes']:
            req(b['label'] in CLASSES, '%s: box %s label %s' % (name, b['id'], b['label']))
            counts[b['label']] = counts.get(b['label'], 0) + 1
            box = tuple(float(b[k]) for k in ('x', 'y', 'z', 'l', 'w', 'h', 'yaw'))
            req(all(math.isfinite(v) for v in box) and min(box[3:6]) > 0,
                '%s: box %s bad geometry' % (name, b['id']))
            req(abs(box[6]) <= math.pi + 1e-6, '%s: box %s yaw %s' % (name, b['id'], box[6]))
            npts = int(points_in_box(pts[:, :3].astype(np.float64), box).sum())
            req(npts == b['num_points'], '%s: box %s num_points %d, file has %d'
                % (name, b['id'], b['num_points'], npts))
            if math.hypot(box[0], box[1]) < CHECK_RADIUS:
                req(npts >= MIN_POINTS, '%s: box %s (%s) at %.1f m has %d points'
                    % (name, b['id'], b['label'], math.hypot(box[0], box[1]), npts))
        req(all(counts[c] == N_PER_CLASS for c in CLASSES), '%s: class counts %s' % (name, counts))
        print('%s: %d points, %d voxels (max %d points/voxel), %d boxes, all checks %s'
              % (name, n, vs['voxels'], vs['max_points_per_voxel'], len(gf['boxes']),
                 'so far pass' if not errors else 'NOT passing'))

    # Frame-to-frame consistency: static boxes map onto each other through the poses.
    if len(mats) == 2:
        T10 = np.linalg.inv(mats[1]) @ mats[0]
        b0 = {b['id']: b for b in gt['frames'][0]['boxes']}
        moved = 0
        for b in gt['frames'][1]['boxes']:
            a = b0.get(b['id'])
            if not req(a is not None, 'frame 1 box %s not in frame 0' % b['id']):
                continue
            p = T10 @ np.array([a['x'], a['y'], a['z'], 1.0])
            dist = math.hypot(p[0] - b['x'], p[1] - b['y'])
            expect = math.hypot(a['vx'], a['vy']) * DT
            req(abs(dist - expect) < 2e-3, 'box %s moved %.4f m, velocity says %.4f'
                % (b['id'], dist, expect))
            moved += expect > 0
        req(moved == N_MOVING_CARS, '%d moving boxes, expected %d' % (moved, N_MOVING_CARS))

    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    req(total < MAX_DIR_BYTES, '%s holds %d bytes, limit %d' % (out_dir, total, MAX_DIR_BYTES))
    for e in errors:
        print('FAIL: ' + e)
    print('check: %s (%d bytes in %s)' % ('OK' if not errors else '%d failures' % len(errors),
                                         total, out_dir))
    return 0 if not errors else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=DEFAULT_OUT, help='output directory')
    ap.add_argument('--check', action='store_true', help='verify the files in --out')
    args = ap.parse_args()
    if args.check:
        return check(args.out)
    objs, frames = build()
    st = write_outputs(args.out, objs, frames)
    print(readme_text(st).split('|---|---|---|\n')[-1])
    return 0


if __name__ == '__main__':
    sys.exit(main())
