"""bevfusion_post.py: Autoware BEVFusion post-processing in numpy (specs/bevfusion.md section 3,
specs/autoware_objects.md), for tools/ref/bevfusion_ref.py. Written from the spec.

Decode in float32 (the C runtime's arithmetic), then: yaw-norm gate, distance-binned per-class
score thresholds, class-agnostic circle NMS (score-descending, ties by lower proposal index),
IoU-BEV NMS (drop i if ANY earlier j overlaps; own rotated-rectangle clipping), Autoware
labels, orientation availability, quaternion, area-based class remapping.
"""
import math

import numpy as np

AW_LABELS = ['UNKNOWN', 'CAR', 'TRUCK', 'BUS', 'TRAILER', 'MOTORCYCLE', 'BICYCLE', 'PEDESTRIAN']
PEDESTRIAN = 7
CAR_LIKE = {1, 2, 3, 4}


def default_params(class_names):
    n = len(class_names)
    yaw = [0.3, 0.3, 0.3, 0.3, 0.0] if n == 5 else [0.3] * n
    bins = [50.0, 90.0, 121.0, 200.0]
    return {'class_names': list(class_names), 'circle_nms_dist_threshold': 0.5,
            'iou_nms_search_distance_2d': 10.0, 'iou_nms_threshold': 0.1,
            'yaw_norm_thresholds': yaw, 'distance_bin_upper_limits': bins,
            'score_thr': np.full((n, len(bins)), 0.1)}


def _floats(v):
    if isinstance(v, str):
        return [float(x) for x in v.split(',')]
    if isinstance(v, (list, tuple)):
        return [float(x) for x in v]
    return [float(v)]


def set_param(p, key, value):
    """The runtime parameters of src/models/bevfusion/post.h (pvm_bevfusion_param_set)."""
    n = len(p['class_names'])
    if key in ('circle_nms_dist_threshold', 'iou_nms_search_distance_2d', 'iou_nms_threshold'):
        p[key] = _floats(value)[0]
    elif key == 'yaw_norm_thresholds':
        v = _floats(value)
        assert len(v) == n, key
        p[key] = v
    elif key == 'score_threshold':
        p['score_thr'] = np.full((n, len(p['distance_bin_upper_limits'])), _floats(value)[0])
    elif key == 'detection_score_thresholds':
        v = _floats(value)
        p['score_thr'] = np.asarray(v).reshape(n, -1)
    elif key == 'distance_bin_upper_limits':
        v = _floats(value)
        assert all(a < b for a, b in zip(v, v[1:])), key
        old = p['score_thr']
        p[key] = v
        if old.shape[1] != len(v):
            p['score_thr'] = np.full((n, len(v)), float(old.flat[0]))
    else:
        raise KeyError('unknown parameter %s' % key)


# ---- rotated rectangles -------------------------------------------------------------------
def corners(x, y, l, w, yaw):
    """Counter-clockwise corners of a BEV box (length along the heading)."""
    c, s = math.cos(yaw), math.sin(yaw)
    pts = []
    for dx, dy in ((l / 2, w / 2), (-l / 2, w / 2), (-l / 2, -w / 2), (l / 2, -w / 2)):
        pts.append((x + c * dx - s * dy, y + s * dx + c * dy))
    return pts


def _area(poly):
    a = 0.0
    for i in range(len(poly)):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % len(poly)]
        a += x0 * y1 - x1 * y0
    return 0.5 * a


def _clip(subject, a, b):
    """Sutherland-Hodgman: keep the part of `subject` left of the directed edge a -> b."""
    def side(p):
        return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])

    def cut(p, q):
        sp, sq = side(p), side(q)
        t = sp / (sp - sq)
        return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))
    out = []
    for i in range(len(subject)):
        p, q = subject[i], subject[(i + 1) % len(subject)]
        ip, iq = side(p) >= 0, side(q) >= 0
        if ip and iq:
            out.append(q)
        elif ip and not iq:
            out.append(cut(p, q))
        elif not ip and iq:
            out.append(cut(p, q))
            out.append(q)
    return out


def iou_bev(a, b):
    """a, b = (x, y, l, w, yaw). Intersection / union of the rotated rectangles; union < 0.01 -> 0."""
    pa, pb = corners(*a), corners(*b)
    inter = pa
    for i in range(4):
        if not inter:
            break
        inter = _clip(inter, pb[i], pb[(i + 1) % 4])
    ia = abs(_area(inter)) if len(inter) >= 3 else 0.0
    union = a[2] * a[3] + b[2] * b[3] - ia
    return 0.0 if union < 0.01 else ia / union


# ---- the pipeline -------------------------------------------------------------------------
def postprocess(p, bbox, score, label):
    """bbox [10,P] f32, score [P] f32, label [P] i64 -> (objects, stats)."""
    P = bbox.shape[1]
    f = np.float32
    b = bbox.astype(np.float32)
    osf, vsx, vsy = f(p['out_size_factor']), f(p['voxel_size'][0]), f(p['voxel_size'][1])
    x = b[0] * osf * vsx + f(p['pc_range'][0])
    y = b[1] * osf * vsy + f(p['pc_range'][1])
    z = b[2]
    l, w, h = np.exp(b[3]), np.exp(b[4]), np.exp(b[5])
    yaw = np.arctan2(b[6], b[7]).astype(np.float32)
    norm = np.sqrt(b[6] * b[6] + b[7] * b[7])
    nclass = len(p['class_names'])
    bins2 = [f(u) * f(u) for u in p['distance_bin_upper_limits']]
    r2 = x * x + y * y
    cand = []
    # decision margins (diagnostics: how far each threshold decision is from flipping)
    mg = {'score_rel': math.inf, 'yaw_norm': math.inf, 'circle_dist': math.inf, 'iou': math.inf,
          'remap_area': math.inf}
    for i in range(P):
        c = int(label[i])
        if c < 0 or c >= nclass:
            continue
        s = float(score[i]) if norm[i] >= f(p['yaw_norm_thresholds'][c]) else 0.0
        thr_c = float(p['score_thr'][c][0])
        if float(score[i]) >= thr_c and p['yaw_norm_thresholds'][c] > 0:
            mg['yaw_norm'] = min(mg['yaw_norm'], abs(float(norm[i]) - p['yaw_norm_thresholds'][c]))
        if thr_c > 0:
            mg['score_rel'] = min(mg['score_rel'], abs(s - thr_c) / thr_c)
        bi = next((j for j, u in enumerate(bins2) if r2[i] < u), None)
        if bi is None:
            continue
        if s < f(p['score_thr'][c][bi]):
            continue
        cand.append(i)
    n_score = len(cand)
    # circle NMS, class-agnostic
    cand.sort(key=lambda i: (-float(score[i]), i))
    d2max = float(p['circle_nms_dist_threshold']) ** 2
    kept = []
    for i in cand:
        d2 = [(float(x[i]) - float(x[j])) ** 2 + (float(y[i]) - float(y[j])) ** 2 for j in kept]
        for v in d2:
            mg['circle_dist'] = min(mg['circle_dist'], abs(math.sqrt(v) - math.sqrt(d2max)))
        if all(v >= d2max for v in d2):
            kept.append(i)
    n_circle = len(kept)
    # Autoware labels (by class name), before remapping
    aw = [AW_LABELS.index(n) if n in AW_LABELS else 0 for n in p['class_names']]
    # IoU-BEV NMS: i dropped if any earlier j (kept or not) overlaps
    s2 = float(p['iou_nms_search_distance_2d']) ** 2
    thr = float(p['iou_nms_threshold'])
    final = []
    for a_, i in enumerate(kept):
        li = aw[int(label[i])]
        drop = False
        for j in kept[:a_]:
            lj = aw[int(label[j])]
            if (float(x[i]) - float(x[j])) ** 2 + (float(y[i]) - float(y[j])) ** 2 > s2:
                continue
            if li != lj and (li == PEDESTRIAN or lj == PEDESTRIAN):
                continue
            bi_ = (float(x[i]), float(y[i]), float(l[i]), float(w[i]), float(yaw[i]))
            bj_ = (float(x[j]), float(y[j]), float(l[j]), float(w[j]), float(yaw[j]))
            iou = iou_bev(bi_, bj_)
            mg['iou'] = min(mg['iou'], abs(iou - thr))
            if iou > thr:
                drop = True
                break
        if not drop:
            final.append(i)
    objs = []
    for i in final:
        c = int(label[i])
        lab = aw[c]
        area = float(f(l[i]) * f(w[i]))
        new = lab
        for col in range(8):
            if p['remap_allow'][lab][col]:
                mg['remap_area'] = min(mg['remap_area'], abs(area - p['remap_min'][lab][col]),
                                       abs(area - p['remap_max'][lab][col]))
        for col in range(8):
            if p['remap_allow'][lab][col] and p['remap_min'][lab][col] <= area <= p['remap_max'][lab][col]:
                new = col
                break
        yw = float(yaw[i])
        objs.append({'proposal': int(i), 'class_index': c, 'label_before_remap': lab, 'label': new,
                     'label_name': AW_LABELS[new], 'score': float(score[i]),
                     'orientation_availability': 1 if lab in CAR_LIKE else 0, 'shape_type': 0,
                     'xyz': [float(x[i]), float(y[i]), float(z[i])],
                     'lwh': [float(l[i]), float(w[i]), float(h[i])], 'yaw': yw,
                     'orientation': [0.0, 0.0, math.sin(yw / 2), math.cos(yw / 2)],
                     'velocity': [float(b[8][i]), float(b[9][i])]})
    st = {'proposals': P, 'after_score': n_score, 'after_circle': n_circle, 'after_iou': len(final)}
    st['decision_margins'] = {k: (None if v == math.inf else float('%.4g' % v)) for k, v in mg.items()}
    return objs, st


def selftest():
    assert abs(iou_bev((0, 0, 2, 1, 0.3), (0, 0, 2, 1, 0.3)) - 1) < 1e-9
    assert iou_bev((0, 0, 1, 1, 0), (3, 0, 1, 1, 0)) == 0
    assert abs(iou_bev((0, 0, 2, 2, 0), (1, 0, 2, 2, 0)) - 1 / 3) < 1e-9
    v = iou_bev((0, 0, 1, 1, 0), (0, 0, 1, 1, math.pi / 4))
    inter = 2 * (math.sqrt(2) - 1)
    assert abs(v - inter / (2 - inter)) < 1e-9, v
    assert abs(iou_bev((0, 0, 4, 4, 0), (0, 0, 2, 2, 0.7)) - 0.25) < 1e-9
    assert iou_bev((0, 0, 1, 1, 0), (1, 0, 1, 1, 0)) == 0          # touching edges
    assert iou_bev((0, 0, 0.05, 0.05, 0), (0, 0, 0.05, 0.05, 0)) == 0   # union < 0.01
