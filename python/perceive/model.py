"""Model bundles over pv_model_*: open, run (numpy arrays, paths or bytes in), results out."""
import ctypes
import json
import os
from dataclasses import dataclass

import numpy as np

from . import _lib, _png
from .errors import ClosedError, InputError

# ObjectClassification labels (pv_object3d.label)
LABELS = ("UNKNOWN", "CAR", "TRUCK", "BUS", "TRAILER", "MOTORCYCLE", "BICYCLE", "PEDESTRIAN")

# file name ending -> format, as the CLI picks it (tools/cli_util.c: cli_format_of)
_EXTENSIONS = ((".pcd.bin", "nuscenes"), (".pcd", "pcd"), (".bin", "kitti"), (".npy", "npy"), (".npz", "npz"),
               (".jpg", "jpeg"), (".jpeg", "jpeg"), (".png", "png"), (".rgb", "rgb8"))


def format_of(path):
    """The input format a file name implies ("auto": let the library sniff the bytes)."""
    low = os.fsdecode(path).lower()
    for ext, fmt in _EXTENSIONS:
        if low.endswith(ext):
            return fmt
    return "auto"


@dataclass(frozen=True)
class Object3D:
    """One pv_object3d (autoware_perception_msgs/DetectedObject as the lidar detectors fill it)."""
    label: int                       # LABELS index
    label_name: str
    orientation_availability: int    # 0 UNAVAILABLE, 1 SIGN_UNKNOWN, 2 AVAILABLE
    shape_type: int                  # 0 BOUNDING_BOX
    existence_probability: float     # the score
    position: tuple                  # box centre x, y, z (m)
    orientation: tuple               # quaternion x, y, z, w
    yaw: float                       # rad, counter-clockwise from +x
    dimensions: tuple                # length, width, height (m)
    velocity: tuple                  # vx, vy (m/s)
    class_index: int                 # the network's class
    proposal: int                    # the network's proposal index


@dataclass(frozen=True, eq=False)
class Hand:
    """One pv_hand, in the hand's own (MANO) frame; arrays are float32 copies."""
    is_right: bool
    box: np.ndarray                  # (4,) x1, y1, x2, y2 as given
    crop_center: np.ndarray          # (2,)
    crop_size: float
    cam: np.ndarray                  # (3,) weak-perspective s, tx, ty of the crop
    cam_t: np.ndarray                # (3,) crop camera translation
    cam_t_full: np.ndarray           # (3,) full-image camera translation
    focal_length_full: float
    betas: np.ndarray                # (10,) MANO shape
    global_orient: np.ndarray        # (3, 3) wrist rotation
    hand_pose: np.ndarray            # (15, 3, 3) finger joints, MANO order
    vertices: np.ndarray             # (778, 3)
    keypoints_3d: np.ndarray         # (21, 3) OpenPose order
    keypoints_2d: np.ndarray         # (21, 2) image pixels
    keypoints_2d_crop: np.ndarray    # (21, 2) pixels of the 256x256 crop


_HAND_SHAPES = {"box": (4,), "crop_center": (2,), "cam": (3,), "cam_t": (3,), "cam_t_full": (3,), "betas": (10,),
                "global_orient": (3, 3), "hand_pose": (15, 3, 3), "vertices": (_lib.PV_HAND_VERTICES, 3),
                "keypoints_3d": (_lib.PV_HAND_KEYPOINTS, 3), "keypoints_2d": (_lib.PV_HAND_KEYPOINTS, 2),
                "keypoints_2d_crop": (_lib.PV_HAND_KEYPOINTS, 2)}


@dataclass(frozen=True)
class Object2D:
    """meteor: a 2D box in camera `camera` (0..7, the slots' order), 768x432 pixels."""
    camera: int
    class_index: int
    stride: int
    score: float
    box: tuple                       # x1, y1, x2, y2


@dataclass(frozen=True, eq=False)
class EgoPath:
    """meteor: the chosen mode's waypoints (x forward, y left, m) at t = 0.5 .. 3.0 s."""
    mode: int
    waypoints: np.ndarray            # (6, 2)
    mode_logits: tuple
    steer: float
    accel: float
    brake_probability: float
    brake: bool


@dataclass(frozen=True)
class TrafficLight:
    """meteor: state 0 none, 1 green, 2 yellow, 3 red, and the four probabilities."""
    state: int
    probability: tuple


def _object(o):
    return Object3D(o.label, LABELS[o.label] if o.label < len(LABELS) else str(o.label), o.orientation_availability,
                    o.shape_type, o.existence_probability, tuple(o.position), tuple(o.orientation), o.yaw,
                    tuple(o.dimensions), tuple(o.velocity), o.class_index, o.proposal)


def _hand(h):
    arrays = {k: np.ctypeslib.as_array(getattr(h, k)).reshape(shape).copy() for k, shape in _HAND_SHAPES.items()}
    return Hand(is_right=bool(h.is_right), crop_size=h.crop_size, focal_length_full=h.focal_length_full, **arrays)


class Result:
    """One run's result. .objects (bevfusion) / .hands + .faces (hamer) are copied out of the C
    result; .to_dict() is the JSON `POST /predict` answers; .png() draws it. The C result is
    freed by .close(), by `with`, or when the object is collected."""

    def __init__(self, handle):
        self._h = handle
        L = _lib.lib
        self.model = _lib.text(L.pv_result_model(handle))
        self._json = _lib.text(L.pv_result_json(handle))
        self.text = _lib.text(L.pv_result_text(handle))
        objs = ctypes.POINTER(_lib.PvObject3d)()
        self.objects = [_object(objs[i]) for i in range(L.pv_result_objects3d(handle, ctypes.byref(objs)))]
        hands = ctypes.POINTER(_lib.PvHand)()
        self.hands = [_hand(hands[i]) for i in range(L.pv_result_hands(handle, ctypes.byref(hands)))]
        faces = ctypes.POINTER(ctypes.c_int32)()
        nf = L.pv_result_mesh_faces(handle, ctypes.byref(faces))
        self.faces = np.ctypeslib.as_array(faces, shape=(nf, 3)).copy() if nf else None
        o2 = ctypes.POINTER(_lib.PvObject2d)()
        self.objects_2d = [Object2D(o2[i].camera, o2[i].class_index, o2[i].stride, o2[i].score, tuple(o2[i].box))
                           for i in range(L.pv_result_objects2d(handle, ctypes.byref(o2)))]
        ego, tl = _lib.PvEgoPath(), _lib.PvTrafficLight()
        self.ego_path = (EgoPath(ego.mode, np.array(ego.waypoints, np.float32).reshape(6, 2), tuple(ego.mode_logits),
                                 ego.steer, ego.accel, ego.brake_probability, bool(ego.brake))
                         if L.pv_result_ego_path(handle, ctypes.byref(ego)) else None)
        self.traffic_light = (TrafficLight(tl.state, tuple(tl.probability))
                              if L.pv_result_traffic_light(handle, ctypes.byref(tl)) else None)
        d = json.loads(self._json)
        self.timing_ms = d.get("timing_ms", {})
        self.meta = d.get("meta", {})

    def grid(self, name):
        """meteor's grids as numpy copies: "lanes" uint8 [800, 500], "occupancy" uint8 [16, 200, 200],
        "risk" float32 [400, 250]; None when the result has no such grid."""
        data, dims = ctypes.c_void_p(), (ctypes.c_int64 * 3)()
        rank = _lib.lib.pv_result_grid(self._live(), name.encode(), ctypes.byref(data), dims)
        if not rank:
            return None
        shape = tuple(int(d) for d in dims[:rank])
        dt = np.float32 if name == "risk" else np.uint8
        n = int(np.prod(shape)) * np.dtype(dt).itemsize
        return np.frombuffer(ctypes.string_at(data, n), dt).reshape(shape).copy()

    def to_dict(self):
        """The result as `POST /predict` returns it (a fresh dict per call)."""
        return json.loads(self._json)

    def to_json(self, stable=False):
        """The C library's JSON text; stable=True leaves timing_ms out (equal inputs, equal bytes)."""
        if stable:
            return _lib.text(_lib.lib.pv_result_json_stable(self._live()))
        return self._json

    def png(self, width=0):
        """A picture drawn by the bundle (bevfusion: bird's-eye view `width` pixels wide; hamer: the
        image with the meshes, at most `width` wide, 0 its own width) as PNG bytes."""
        buf, n = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(_lib.lib.pv_result_png(self._live(), int(width), ctypes.byref(buf), ctypes.byref(n)))
        try:
            return ctypes.string_at(buf, n.value)
        finally:
            _lib.lib.pv_free(buf)

    def _live(self):
        if self._h is None:
            raise ClosedError("the result was closed")
        return self._h

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            _lib.lib.pv_result_free(h)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        n = "%d objects" % len(self.objects) if self.objects or not self.hands else "%d hands" % len(self.hands)
        return "<perceive.Result %s: %s, %.1f ms>" % (self.model, n, self.timing_ms.get("total", float("nan")))


# ---- inputs and params -----------------------------------------------------------------------
def _value(v):
    """A param value as the C library reads it: numbers, booleans, sequences (comma-joined)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(_value(e) for e in np.asarray(v).ravel().tolist())
    raise InputError("param value %r (%s) is not a string, number or sequence of numbers" % (v, type(v).__name__))


def _params(params):
    """dict (or (key, value) pairs) -> [(key, text)]. A list of strings or of sequences repeats the
    key once per item ({"box": ["1,2,3,4", (5, 6, 7, 8, 0)]}); numpy arrays and flat lists of
    numbers are one value."""
    items = params.items() if isinstance(params, dict) else params
    out = []
    for k, v in items:
        if not isinstance(k, str):
            raise InputError("param key %r is not a string" % (k,))
        if isinstance(v, (list, tuple)) and v and all(isinstance(e, (str, list, tuple, np.ndarray)) for e in v):
            out.extend((k, _value(e)) for e in v)
        else:
            out.append((k, _value(v)))
    return out


def _item(x, name, fmt, array, keep):
    """One pv_input for x: a numpy array (points, image or crop), a path, or bytes."""
    ncols, path = 0, None
    if isinstance(x, np.ndarray):
        what = name or "input"
        if x.ndim == 2 and x.dtype in (np.float32, np.float16, np.float64):
            if not 3 <= x.shape[1] <= 16:
                raise InputError("%s: points of shape %s: want N x 3..16 columns" % (what, x.shape))
            if fmt not in (None, "f32"):
                raise InputError("%s: format %r does not apply to a points array (f32)" % (what, fmt))
            buf = np.ascontiguousarray(x, dtype=np.float32)   # no copy when already contiguous float32
            fmt, ncols = "f32", x.shape[1]
        elif x.ndim == 3 and x.shape[2] == 3 and x.dtype == np.uint8:
            if fmt == "rgb8":   # one network crop, raw bytes (hamer's "crop" input)
                buf = np.ascontiguousarray(x)
            elif fmt in (None, "png"):
                buf = np.frombuffer(_png.encode_rgb8(x), dtype=np.uint8)
                fmt = "png"
            else:
                raise InputError("%s: format %r does not apply to an H x W x 3 uint8 image (png, rgb8)" % (what, fmt))
        else:
            raise InputError("%s: a numpy array of shape %s and dtype %s is neither points (N x 3..16 float32/float16)"
                             " nor an image (H x W x 3 uint8)" % (what, x.shape, x.dtype))
    elif isinstance(x, (bytes, bytearray, memoryview)):
        buf = np.frombuffer(x, dtype=np.uint8)
        fmt = fmt or "auto"
    elif isinstance(x, (str, os.PathLike)):
        try:
            with open(x, "rb") as f:
                buf = np.frombuffer(f.read(), dtype=np.uint8)
        except OSError as e:
            raise InputError("input '%s': %s" % (os.fsdecode(x), e.strerror or e)) from None
        fmt, path = fmt or format_of(x), os.fsencode(x)   # a manifest (meteor) names files relative to it
    else:
        raise InputError("input: %s is not a numpy array, a path or bytes" % type(x).__name__)
    keep.append(buf)
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    return _lib.PvInput(enc(name), enc(fmt), buf.ctypes.data, buf.nbytes, ncols, enc(array), path)


def _sweep(i, sw, items, params, keep):
    """sweeps[i]: {"points": ..., "time_lag_s": s, "T_current_from_sweep": 4x4} or a tuple
    (points, time_lag_s, T_current_from_sweep) or just the points (params given by the caller)."""
    if isinstance(sw, dict):
        sw = dict(sw)
        pts = sw.pop("points", None)
        if pts is None:
            raise InputError("sweeps[%d]: no 'points'" % i)
        extra = sw.items()
    elif isinstance(sw, tuple):
        if len(sw) != 3:
            raise InputError("sweeps[%d]: a tuple must be (points, time_lag_s, T_current_from_sweep)" % i)
        pts, extra = sw[0], (("time_lag_s", sw[1]), ("T_current_from_sweep", sw[2]))
    else:
        pts, extra = sw, ()
    items.append(_item(pts, "sweep", None, None, keep))
    params.extend(("sweep.%d.%s" % (i, k), _value(v)) for k, v in extra)


class Model:
    """A model bundle behind one pv_model handle. Model("bevfusion", ...) opens any bundle by name;
    perceive.BEVFusion / perceive.HaMeR / ... are the same with the name filled in."""

    bundle = None

    def __init__(self, name, weights_dir=None, threads=0, precision="fp32", strict=False):
        self._h, self._closed = None, True
        if not isinstance(name, str):
            raise InputError("model name %r is not a string" % (name,))
        opts = _lib.PvModelOptions(_lib.threads_value(threads), None if weights_dir is None else os.fsencode(weights_dir),
                                   1 if strict else 0, _lib.precision_code(precision))
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.pv_model_open(name.encode(), ctypes.byref(opts), ctypes.byref(h)))
        self._h, self._closed, self.name = h.value, False, name

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """Opens the model: artifacts from weights_dir, PERCEIVE_WEIGHTS_DIR or the Hugging Face
        cache (else generated seeded weights, labelled so; strict=True refuses)."""
        return cls(*args, **kwargs)

    def __call__(self, x, *, sweeps=None, stream=None, params=None, format=None, name=None, array=None):
        """Runs one frame. x: points (N x 3..16 float32/float16 numpy, zero-copy when contiguous
        float32), an image (H x W x 3 uint8), a path, or bytes (give format). sweeps: past clouds
        (see _sweep); stream: {"id", "timestamp_s", "T_world_from_ego", "reset"} -> stream.* params;
        params: {key: value}. Returns a Result."""
        if self._h is None:
            raise ClosedError("the model was not opened")
        keep, par = [], []
        items = [_item(x, name, format, array, keep)]
        for i, sw in enumerate(sweeps or ()):
            _sweep(i, sw, items, par, keep)
        for k, v in (stream or {}).items():
            par.append(("stream." + k, _value(v)))
        par.extend(_params(params or {}))
        c_in = (_lib.PvInput * len(items))(*items)
        c_par = (_lib.PvParam * max(len(par), 1))(*[_lib.PvParam(k.encode(), v.encode()) for k, v in par])
        out = ctypes.c_void_p()
        st = _lib.lib.pv_model_run(self._h, c_in, len(items), c_par, len(par), ctypes.byref(out))
        if st:
            _lib.check(st, _lib.text(_lib.lib.pv_model_errmsg(self._h)))
        return Result(out.value)

    def info(self):
        """What `perceive info` and GET /info say: artifacts, sha256, load time, isa."""
        p = _lib.lib.pv_model_info_json(self._h) if self._h is not None else None
        if p is None:
            raise ClosedError(_lib.last_error() or "the model handle is closed")
        return json.loads(_lib.text(p))

    @property
    def closed(self):
        return self._closed

    def close(self):
        """Idempotent; waits for runs in flight in other threads. Calls after it raise ClosedError."""
        if self._h is not None and not self._closed:
            self._closed = True
            _lib.lib.pv_model_close(self._h)   # the C shell stays valid: later calls get PV_ECLOSED

    def __del__(self):
        try:
            self.close()
        except Exception:   # interpreter shutdown: the C library closes what is left at exit
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<perceive.%s %s%s>" % (type(self).__name__, getattr(self, "name", "?"), " closed" if self._closed else "")


class BundleModel(Model):
    """Base of the per-bundle classes perceive/__init__.py makes from pv_model_name."""

    def __init__(self, weights_dir=None, threads=0, precision="fp32", strict=False):
        super().__init__(self.bundle, weights_dir=weights_dir, threads=threads, precision=precision, strict=strict)
