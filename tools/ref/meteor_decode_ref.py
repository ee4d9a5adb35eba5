#!/usr/bin/python3
"""METEOR host decode, re-stated in numpy from ../shared/specs/meteor.md sections 1.5, 4, 5 and
the readings perceive picks for section 12 (README "METEOR conventions"). It is the reference the
C decode (src/models/meteor/decode.c) is checked against; it shares no code with it.

    meteor_decode_ref.py OUT_DIR     writes OUT_DIR/frame<k>.json for the synthetic frames of
                                     meteor_decode_synth.py (the fixtures of
                                     tests/unit/test_meteor_decode.c)
    meteor_decode_ref.py --selftest  checks the pieces on hand-made values

Payload keys: README "METEOR result".
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meteor_decode_synth as synth  # noqa: E402

CAMERAS = ["CAM_FRONT_WIDE", "CAM_FRONT_LEFT", "CAM_FRONT_RIGHT", "CAM_BACK_WIDE", "CAM_BACK_LEFT",
           "CAM_BACK_RIGHT", "CAM_FRONT_NARROW", "CAM_BACK_NARROW"]
LANE_CLASSES = ["unlabeled", "road", "sidewalk", "crosswalk", "laneline", "stopline", "road_edge", "marking",
                "parking_lot"]
CLASSES_2D = ["obs", "car", "truck", "bus", "bicycle", "motorcycle", "ped", "road_paint", "traffic_light",
              "traffic_sign"]
OCC_CLASSES = ["free", "obstacle", "vehicle", "two_wheeler", "pedestrian", "class_5", "class_6", "class_7",
               "class_8", "class_9"]
TL_NAMES = ["none", "green", "yellow", "red"]

PARAMS = dict(cand_3d=0.15, keep_vehicle=0.35, keep_vru=0.15, nms_iou=0.3, nms_ios=0.6, yaw_match_m=2.5,
              yaw_alpha=0.4, th_2d=0.30, hide_2d=7, lane_decay=0.7, mode_hysteresis=0.35, straight_lead=1.0,
              stat_logit=0.0)


def f32(v):
    return float(np.float32(v))


def logit_of(t):
    """'sigmoid(x) > t' becomes 'x > logit(t)': the float32 threshold, logit taken in double."""
    t = f32(t)
    return np.float32(math.log(t / (1.0 - t)))


def sig(x):
    return 1.0 / (1.0 + math.exp(-float(x)))


def wrap(a):
    """angle in (-pi, pi]"""
    a = math.remainder(a, 2.0 * math.pi)
    return math.pi if a <= -math.pi else a


def peaks(m, thr):
    """cells above thr whose in-map 3x3 neighbours are none strictly greater"""
    h, w = m.shape
    p = np.full((h + 2, w + 2), -np.inf, np.float32)
    p[1:-1, 1:-1] = m
    nb = np.full((h, w), -np.inf, np.float32)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if dr != 1 or dc != 1:
                nb = np.maximum(nb, p[dr:dr + h, dc:dc + w])
    rr, cc = np.nonzero((m > thr) & (m >= nb))
    return rr, cc


def ranked(cands, k):
    """(logit, cls, r, c) sorted by logit desc, then (cls, r, c) asc, first k"""
    return sorted(cands, key=lambda t: (-float(t[0]), t[1], t[2], t[3]))[:k]


# ---- rotated rectangles: corners, then the overlap as the hull of inside corners and crossings ----
def corners(x, y, l, w, yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return [(x + c * a - s * b, y + s * a + c * b) for a, b in ((l / 2, w / 2), (-l / 2, w / 2), (-l / 2, -w / 2),
                                                                   (l / 2, -w / 2))]


def inside(pt, poly):
    for i in range(4):
        (x0, y0), (x1, y1) = poly[i], poly[(i + 1) % 4]
        if (x1 - x0) * (pt[1] - y0) - (y1 - y0) * (pt[0] - x0) < -1e-12:
            return False
    return True


def seg_cross(p0, p1, q0, q1):
    d = (p1[0] - p0[0]) * (q1[1] - q0[1]) - (p1[1] - p0[1]) * (q1[0] - q0[0])
    if d == 0:
        return None
    t = ((q0[0] - p0[0]) * (q1[1] - q0[1]) - (q0[1] - p0[1]) * (q1[0] - q0[0])) / d
    u = ((q0[0] - p0[0]) * (p1[1] - p0[1]) - (q0[1] - p0[1]) * (p1[0] - p0[0])) / d
    if 0 <= t <= 1 and 0 <= u <= 1:
        return (p0[0] + t * (p1[0] - p0[0]), p0[1] + t * (p1[1] - p0[1]))
    return None


def overlap(a, b):
    A, B = corners(*a), corners(*b)
    pts = [p for p in A if inside(p, B)] + [p for p in B if inside(p, A)]
    for i in range(4):
        for j in range(4):
            q = seg_cross(A[i], A[(i + 1) % 4], B[j], B[(j + 1) % 4])
            if q is not None:
                pts.append(q)
    if len(pts) < 3:
        return 0.0
    cx = sum(p[0] for p in pts) / len(pts)
    cy = sum(p[1] for p in pts) / len(pts)
    pts.sort(key=lambda p: math.atan2(p[1] - cy, p[0] - cx))
    s = sum(pts[i][0] * pts[(i + 1) % len(pts)][1] - pts[(i + 1) % len(pts)][0] * pts[i][1] for i in range(len(pts)))
    return abs(s) / 2.0


class Stream:
    def __init__(self):
        self.tracks = []          # (cls, x, y, yaw) of the previous frame
        self.pose = None
        self.acc = None           # [9][800][500] float32
        self.hist = []            # up to two uint8 grids in the previous frame's cells
        self.mode = None
        self.ribbon = None


# ---- 3D boxes ------------------------------------------------------------------------------------
def boxes3d(raw, P, st):
    hm, reg, traj, stat = raw["hm"], raw["reg"], raw["traj"], raw["stationary"]
    cands = []
    thr = logit_of(P["cand_3d"])
    for k in (0, 1):
        rr, cc = peaks(hm[k], thr)
        cands += [(hm[k, r, c], k, int(r), int(c)) for r, c in zip(rr, cc)]
    cands = ranked(cands, 64)
    keep = [logit_of(P["keep_vehicle"]), logit_of(P["keep_vru"])]
    s64 = stat.astype(np.float64)
    healthy = bool(s64.std() >= 0.05 and s64.max() - s64.min() >= 0.2)
    kept = []
    for v, k, r, c in cands:
        if not v > keep[k]:
            continue
        o = [float(reg[j, r, c]) for j in range(6)]
        x = 80.0 - (r + o[0]) * 0.4
        y = 50.0 - (c + o[1]) * 0.4
        if not -78.0 <= x <= 78.0:
            continue
        bx = dict(cls=k, score=f32(sig(v)), row=r, col=c, x=f32(x), y=f32(y), l=f32(math.exp(o[2])),
                  w=f32(math.exp(o[3])), yaw_raw=f32(math.atan2(o[4], o[5])))
        rect = (bx["x"], bx["y"], bx["l"], bx["w"], bx["yaw_raw"])
        sup = False
        for q in kept:
            if q["cls"] != k:
                continue
            other = (q["x"], q["y"], q["l"], q["w"], q["yaw_raw"])
            inter = overlap(rect, other)
            a1, a2 = bx["l"] * bx["w"], q["l"] * q["w"]
            if inter / (a1 + a2 - inter) > f32(P["nms_iou"]) or inter / min(a1, a2) > f32(P["nms_ios"]):
                sup = True
                break
        if sup:
            continue
        ml = [traj[36 + m, r, c] for m in range(3)]
        mode = int(np.argmax(ml))
        if healthy:
            bx["stationary"] = bool(stat[r, c] > np.float32(P["stat_logit"]))
        else:
            bx["stationary"] = math.hypot(float(traj[mode * 12 + 10, r, c]), float(traj[mode * 12 + 11, r, c])) < 0.5
        bx["from_head"] = healthy
        if k == 0:
            bx["mode"] = mode
            bx["future"] = [(f32(x + float(traj[mode * 12 + 2 * j, r, c])), f32(y + float(traj[mode * 12 + 2 * j + 1, r, c])))
                            for j in range(6)]
        bx["yaw"] = bx["yaw_raw"]
        kept.append(bx)
    if st is not None:
        for bx in kept:
            best = None
            for (k, tx, ty, tyaw) in st.tracks:
                d = math.hypot(bx["x"] - tx, bx["y"] - ty)
                if k == bx["cls"] and d <= f32(P["yaw_match_m"]) and (best is None or d < best[0]):
                    best = (d, tyaw)
            if best is not None:
                old = best[1]
                if abs(wrap(bx["yaw_raw"] - old)) > math.pi / 2:
                    old = wrap(old + math.pi)
                bx["yaw"] = f32(wrap(old + f32(P["yaw_alpha"]) * wrap(bx["yaw_raw"] - old)))
        st.tracks = [(b["cls"], b["x"], b["y"], b["yaw"]) for b in kept]
    return kept, healthy


# ---- 2D boxes and unknown obstacles ---------------------------------------------------------------
def boxes2d(raw, P):
    out = []
    thr = logit_of(P["th_2d"])
    for cam in range(8):
        if not raw["present"][cam]:
            continue
        for s, (h, w, stride) in enumerate(synth.S2D):
            hm = np.clip(raw["hm2d"][s][cam], -50.0, 50.0).astype(np.float32)
            cands = []
            for k in range(10):
                rr, cc = peaks(hm[k], thr)
                cands += [(hm[k, r, c], k, int(r), int(c)) for r, c in zip(rr, cc)]
            rg = raw["reg2d"][s][cam]
            for v, k, r, c in ranked(cands, 48):
                if k == P["hide_2d"]:
                    continue
                out.append(dict(cam=cam, scale=s, cls=k, score=f32(sig(v)),
                                cx=f32((c + float(rg[1, r, c])) * stride), cy=f32((r + float(rg[0, r, c])) * stride),
                                w=f32(math.exp(float(rg[2, r, c])) * stride), h=f32(math.exp(float(rg[3, r, c])) * stride)))
    return out


def camera_ray(K, T, u, v):
    """camera centre and the direction through pixel (u, v), ego frame"""
    Ti = np.linalg.inv(np.asarray(T, np.float64).reshape(4, 4))
    K = [float(q) for q in K]
    d_cam = np.array([(u - K[2]) / K[0], (v - K[5]) / K[4], 1.0])
    return Ti[:3, 3], Ti[:3, :3] @ d_cam


def unknowns(raw, b2):
    cands = []
    for i, b in enumerate(b2):
        if b["cls"] != 0:
            continue
        K, T = raw["K"][b["cam"]], raw["T"][b["cam"]]
        pt, ray = None, False
        o, d = camera_ray(K, T, b["cx"], b["cy"] + 0.5 * b["h"])
        if d[2] < 0 and o[2] > 0:
            g = o + (-o[2] / d[2]) * d
            if 1.5 < math.hypot(g[0], g[1]) < 60.0:
                pt, ray = (g[0], g[1]), True
        if pt is None:
            u, v = b["cx"], b["cy"] + 0.35 * b["h"]
            gr = min(max(int(math.floor(v / 8.0)), 0), 53)
            gc = min(max(int(math.floor(u / 8.0)), 0), 95)
            win = raw["depth_mean"][b["cam"], max(gr - 2, 0):gr + 3, max(gc - 2, 0):gc + 3].astype(np.float64)
            win = win[np.isfinite(win)]
            if win.size:
                dist = float(np.median(win))
                if 1.5 < dist < 50.0:
                    o, d = camera_ray(K, T, u, v)
                    g = o + dist * d / np.linalg.norm(d)
                    pt = (g[0], g[1])
        if pt is None or abs(pt[0]) > 60.0 or abs(pt[1]) > 25.0:
            continue
        cands.append(dict(box=i, cam=b["cam"], score=b["score"], x=f32(pt[0]), y=f32(pt[1]), ray=ray))
    cands.sort(key=lambda q: (-q["score"], q["cam"], q["box"]))
    kept = []
    for q in cands:
        if all(math.hypot(q["x"] - k["x"], q["y"] - k["y"]) >= 1.5 for k in kept):
            kept.append(q)
    return kept


# ---- lanes -----------------------------------------------------------------------------------------
def warp_source(prev, cur):
    """flat index of the previous cell under each current cell (-1: outside), and the reset flag"""
    dx, dy = cur[0] - prev[0], cur[1] - prev[1]
    tx = math.cos(prev[2]) * dx + math.sin(prev[2]) * dy
    ty = -math.sin(prev[2]) * dx + math.cos(prev[2]) * dy
    dyaw = wrap(cur[2] - prev[2])
    if abs(tx) + abs(ty) >= 10.0 or abs(dyaw) >= 0.5:
        return None
    x = 80.0 - (np.arange(800, dtype=np.float64) + 0.5) * 0.2
    y = 50.0 - (np.arange(500, dtype=np.float64) + 0.5) * 0.2
    X, Y = np.meshgrid(x, y, indexing="ij")
    ca, sa = math.cos(dyaw), math.sin(dyaw)
    xp = ca * X - sa * Y + tx
    yp = sa * X + ca * Y + ty
    r = np.floor((80.0 - xp) / 0.2)
    c = np.floor((50.0 - yp) / 0.2)
    ok = (r >= 0) & (r < 800) & (c >= 0) & (c < 500)
    src = np.where(ok, r * 500 + c, -1).astype(np.int64).reshape(-1)
    return src


def gather(grid_flat, src, fill):
    out = np.full(src.shape, fill, grid_flat.dtype)
    ok = src >= 0
    out[ok] = grid_flat[src[ok]]
    return out


def lanes(raw, P, st):
    g = raw["lane"].copy().reshape(-1)
    pose = raw["pose"]
    if st is None:
        return g, False
    if pose is None:
        st.pose, st.acc, st.hist = None, None, []
        return g, False
    src = warp_source(st.pose, pose) if st.pose is not None else None
    if src is None:
        st.acc, st.hist = None, []
    tail = np.arange(800 * 500) >= 175 * 500
    cur = g.copy()
    if raw["lane_logit"] is not None:
        L = raw["lane_logit"].reshape(9, -1).astype(np.float64)
        m = L.max(axis=0)
        lp = (L - (m + np.log(np.exp(L - m).sum(axis=0)))).astype(np.float32)
        if st.acc is not None:
            warped = np.stack([gather(st.acc[k], src, np.float32(0.0)) for k in range(9)])
            acc = (lp + np.float32(P["lane_decay"]) * warped).astype(np.float32)
        else:
            acc = lp
        st.acc = acc
        best = np.argmax(acc, axis=0)
        thin = lambda a: (a >= 3) & (a <= 6)  # noqa: E731
        sel = tail & ~thin(cur) & ~thin(best)
        g[sel] = best[sel]
    else:
        st.acc = None
        if len(st.hist) == 2:
            a, b = gather(st.hist[0], src, 0), gather(st.hist[1], src, 0)
            area = np.isin(a, [1, 2, 8])
            sel = tail & (src >= 0) & (a == b) & area & np.isin(cur, [0, 1, 2, 8])
            g[sel] = a[sel]
    st.hist = [g.copy()] + ([gather(st.hist[0], src, 0)] if st.hist else [])
    st.pose = pose
    return g, True


def thin_road_edge(g):
    g = g.reshape(800, 500).copy()
    drv = np.isin(g, [1, 3, 4, 5])
    touch = np.zeros_like(drv)
    touch[1:, :] |= drv[:-1, :]
    touch[:-1, :] |= drv[1:, :]
    touch[:, 1:] |= drv[:, :-1]
    touch[:, :-1] |= drv[:, 1:]
    g[(g == 6) & ~touch] = 0
    return g.reshape(-1)


# ---- ego plan ----------------------------------------------------------------------------------------
def ego_mode(logits, prev, P):
    lg = [np.float32(v) for v in logits]
    if prev is not None:
        lg[prev] = np.float32(lg[prev] + np.float32(P["mode_hysteresis"]))
    other = 1 if lg[1] >= lg[2] else 2
    mode = other if np.float32(lg[other] - lg[0]) >= np.float32(P["straight_lead"]) else 0
    return mode, [float(v) for v in lg]


# ---- JSON ---------------------------------------------------------------------------------------------
def rle(flat):
    flat = np.asarray(flat).reshape(-1)
    edges = np.flatnonzero(np.diff(flat.astype(np.int64))) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [flat.size]])
    return [[int(flat[s]), int(e - s)] for s, e in zip(starts, ends)]


def path(p):
    return [[0.5 * (k + 1), float(p[k][0]), float(p[k][1])] for k in range(6)]


def decode(raw, st, P=PARAMS):
    b3, healthy = boxes3d(raw, P, st)
    b2 = boxes2d(raw, P)
    unk = unknowns(raw, b2)
    lane, fused = lanes(raw, P, st)
    lane = thin_road_edge(lane)
    occ = np.argmax(raw["occ"], axis=0).astype(np.uint8)
    risk = (1.0 / (1.0 + np.exp(-raw["risk"].astype(np.float64)))).astype(np.float32)
    tl = raw["tl"].astype(np.float64)
    e = np.exp(tl - tl.max())
    tlp = e / e.sum()
    ego = raw["ego"]
    mode, adj = ego_mode(ego[36:39], st.mode if st is not None else None, P)
    wp = [(float(ego[mode * 12 + 2 * k]), float(ego[mode * 12 + 2 * k + 1])) for k in range(6)]
    if st is not None and st.ribbon is not None:
        rib = [tuple(float(np.float32(0.55) * np.float32(o) + np.float32(0.45) * np.float32(n)) for o, n in zip(ro, w))
               for ro, w in zip(st.ribbon, wp)]
    else:
        rib = wp
    if st is not None:
        st.mode, st.ribbon = mode, rib

    objs = []
    for b in b3:
        v = b["cls"] == 0
        objs.append({
            "label": "CAR" if v else "PEDESTRIAN", "label_id": 1 if v else 7, "class": "vehicle" if v else "vru",
            "existence_probability": b["score"],
            "kinematics": {"position": [b["x"], b["y"], 0.0],
                           "orientation": [0.0, 0.0, f32(math.sin(b["yaw"] / 2)), f32(math.cos(b["yaw"] / 2))],
                           "yaw": b["yaw"], "yaw_raw": b["yaw_raw"]},
            "shape": {"type": 0, "dimensions": [b["l"], b["w"], None]},
            "stationary": b["stationary"], "stationary_source": "head" if b["from_head"] else "traj",
            "cell": [b["row"], b["col"]],
            "future": {"mode": b["mode"], "waypoints": path(b["future"])} if v else None,
        })
    o2 = {}
    first = {}
    for cam in range(8):
        lst = []
        for i, b in enumerate(b2):
            if b["cam"] == cam:
                first.setdefault(cam, i)
                lst.append({"label": CLASSES_2D[b["cls"]], "label_id": b["cls"], "score": b["score"],
                            "box": [b["cx"], b["cy"], b["w"], b["h"]], "stride": synth.S2D[b["scale"]][2]})
        o2[CAMERAS[cam]] = lst
    un = [{"position": [q["x"], q["y"], 0.0], "score": q["score"], "camera": CAMERAS[q["cam"]],
           "box": q["box"] - first[q["cam"]], "source": "ground_ray" if q["ray"] else "depth_mean"} for q in unk]
    q = np.clip(np.floor(255.0 * risk.astype(np.float64) + 0.5), 0, 255).astype(np.uint8)
    return {
        "objects": objs,
        "objects_2d": o2,
        "unknown_objects": un,
        "lanes": {"classes": LANE_CLASSES,
                  "grid": {"rows": 800, "cols": 500, "cell_m": 0.2, "x_row0_edge": 80.0, "y_col0_edge": 50.0},
                  "fused": fused, "class_counts": [int(v) for v in np.bincount(lane, minlength=9)], "rle": rle(lane)},
        "occupancy": {"classes": OCC_CLASSES,
                      "grid": {"z_bins": 16, "z_min": -1.0, "dz": 0.4, "rows": 200, "cols": 200, "cell_m": 0.4,
                               "x_row0_edge": 40.0, "y_col0_edge": 40.0},
                      "class_counts": [int(v) for v in np.bincount(occ.reshape(-1), minlength=10)],
                      "rle": rle(occ)},
        "risk": {"grid": {"rows": 400, "cols": 250, "cell_m": 0.2, "x_row0_edge": 40.0, "y_col0_edge": 25.0},
                 "max": float(risk.max()), "mean": float(risk.astype(np.float64).mean()),
                 "quantization": "round(255 * sigmoid)", "rle": rle(q)},
        "traffic_light": {"state": TL_NAMES[int(np.argmax(raw["tl"]))], "state_id": int(np.argmax(raw["tl"])),
                          "probabilities": {TL_NAMES[k]: f32(tlp[k]) for k in range(4)}},
        "ego_path": {"mode": mode, "mode_logits": adj, "waypoints": path(wp), "ribbon": path(rib),
                     "steer": float(ego[39]), "accel": float(ego[40]), "brake": bool(ego[41] > logit_of(0.5)),
                     "brake_probability": f32(sig(ego[41]))},
        "decode": {"stationary_head_healthy": healthy, "lanes_fused": fused},
    }


def dump(obj):
    """compact JSON; floats with 9 significant digits (as the C writer)"""
    def conv(v):
        if isinstance(v, float):
            return float("%.9g" % v) if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v
    return json.dumps(conv(obj), separators=(",", ":"))


def selftest():
    # overlap of known rectangles
    assert abs(overlap((0, 0, 2, 2, 0), (1, 0, 2, 2, 0)) - 2.0) < 1e-12
    assert abs(overlap((0, 0, 1, 1, 0), (0, 0, 1, 1, math.pi / 4)) - 2 * (math.sqrt(2) - 1)) < 1e-12
    assert overlap((0, 0, 1, 1, 0), (3, 0, 1, 1, 0)) == 0.0
    assert abs(overlap((0, 0, 4, 2, 0.3), (0, 0, 1, 1, 1.0)) - 1.0) < 1e-12
    # border peaks count, zero padding does not
    m = np.full((3, 3), -5.0, np.float32)
    m[0, 0] = -1.0
    assert list(zip(*peaks(m, np.float32(-2.0)))) == [(0, 0)]
    # hysteresis before the straight-preference test
    assert ego_mode([0.0, 1.25, 0.0], 0, PARAMS)[0] == 0
    assert ego_mode([0.0, 1.25, 0.0], None, PARAMS)[0] == 1
    assert ego_mode([0.0, 0.8125, 0.0], 1, PARAMS)[0] == 1
    assert warp_source((0, 0, 0), (10.0, 0, 0)) is None and warp_source((0, 0, 0), (9.9, 0, 0)) is not None
    assert warp_source((0, 0, 0), (0, 0, 0.5)) is None
    print("meteor_decode_ref selftest: ok")


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--selftest":
        selftest()
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    st = Stream()
    for f in range(synth.NFRAMES):
        raw = synth.frame_raw(f)
        with open(os.path.join(out, "frame%d.json" % f), "w") as fh:
            fh.write(dump(decode(raw, st)) + "\n")


if __name__ == "__main__":
    main()
