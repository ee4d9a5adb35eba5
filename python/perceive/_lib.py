"""Loads libperceive.so and declares the C API (include/perceive.h) for ctypes.

Where the library is looked up, in order: the PERCEIVE_LIB environment variable (the file, or a
directory holding libperceive.so), next to the package as `make install` lays it out (the
relative path _where.py records), the source tree's build/ directory, then the system loader.
ctypes.CDLL releases the GIL for the duration of every foreign call, so runs in two Python
threads proceed at once (the C API is thread-safe).
"""
import ctypes
import os

from . import errors

PV_MAX_RANK = 8
PV_HAND_VERTICES, PV_HAND_FACES, PV_HAND_KEYPOINTS = 778, 1538, 21
SONAME = "libperceive.so.0"


class PvTensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * PV_MAX_RANK), ("strides", ctypes.c_int64 * PV_MAX_RANK),
                ("data", ctypes.c_void_p)]


class PvGraphOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("no_fuse", ctypes.c_int), ("precision", ctypes.c_int)]


class PvGraphStats(ctypes.Structure):
    _fields_ = [("arena_bytes", ctypes.c_size_t), ("workspace_bytes", ctypes.c_size_t),
                ("const_bytes", ctypes.c_size_t), ("nodes_total", ctypes.c_int), ("nodes_run", ctypes.c_int),
                ("plans", ctypes.c_int), ("folded", ctypes.c_int), ("bn_folded", ctypes.c_int),
                ("act_fused", ctypes.c_int), ("attn_fused", ctypes.c_int), ("precision", ctypes.c_char_p),
                ("precision_note", ctypes.c_char_p), ("gelu_fused", ctypes.c_int),
                ("eltwise_act_fused", ctypes.c_int), ("f16_lifted", ctypes.c_int)]


class PvModelOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("weights_dir", ctypes.c_char_p), ("strict", ctypes.c_int),
                ("precision", ctypes.c_int)]


class PvInput(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("format", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("len", ctypes.c_size_t), ("ncols", ctypes.c_int), ("array", ctypes.c_char_p),
                ("path", ctypes.c_char_p)]


class PvParam(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class PvObject3d(ctypes.Structure):
    _fields_ = [("label", ctypes.c_uint8), ("orientation_availability", ctypes.c_uint8),
                ("shape_type", ctypes.c_uint8), ("existence_probability", ctypes.c_float),
                ("position", ctypes.c_float * 3), ("orientation", ctypes.c_float * 4), ("yaw", ctypes.c_float),
                ("dimensions", ctypes.c_float * 3), ("velocity", ctypes.c_float * 2),
                ("class_index", ctypes.c_int32), ("proposal", ctypes.c_int32)]


class PvHand(ctypes.Structure):
    _fields_ = [("is_right", ctypes.c_int), ("box", ctypes.c_float * 4), ("crop_center", ctypes.c_float * 2),
                ("crop_size", ctypes.c_float), ("cam", ctypes.c_float * 3), ("cam_t", ctypes.c_float * 3),
                ("cam_t_full", ctypes.c_float * 3), ("focal_length_full", ctypes.c_float),
                ("betas", ctypes.c_float * 10), ("global_orient", ctypes.c_float * 9),
                ("hand_pose", ctypes.c_float * (15 * 9)), ("vertices", ctypes.c_float * (PV_HAND_VERTICES * 3)),
                ("keypoints_3d", ctypes.c_float * (PV_HAND_KEYPOINTS * 3)),
                ("keypoints_2d", ctypes.c_float * (PV_HAND_KEYPOINTS * 2)),
                ("keypoints_2d_crop", ctypes.c_float * (PV_HAND_KEYPOINTS * 2))]


class PvObject2d(ctypes.Structure):
    _fields_ = [("camera", ctypes.c_int32), ("class_index", ctypes.c_int32), ("stride", ctypes.c_int32),
                ("score", ctypes.c_float), ("box", ctypes.c_float * 4)]


class PvEgoPath(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int32), ("waypoints", ctypes.c_float * 12), ("mode_logits", ctypes.c_float * 3),
                ("steer", ctypes.c_float), ("accel", ctypes.c_float), ("brake_probability", ctypes.c_float),
                ("brake", ctypes.c_int32)]


class PvTrafficLight(ctypes.Structure):
    _fields_ = [("state", ctypes.c_int32), ("probability", ctypes.c_float * 4)]


class PvTiming(ctypes.Structure):
    _fields_ = [(k, ctypes.c_double) for k in ("decode", "preprocess", "engine", "postprocess", "wait", "total")]


_P = ctypes.POINTER
_vp, _cp, _int, _sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
# name: (restype, argtypes); pv_status is returned as int
_PROTOS = {
    "pv_status_str": (_cp, [_int]),
    "pv_last_error": (_cp, []),
    "pv_isa": (_cp, []),
    "pv_graph_open": (_int, [_cp, _P(PvGraphOptions), _P(_vp)]),
    "pv_graph_num_inputs": (_int, [_vp]),
    "pv_graph_num_outputs": (_int, [_vp]),
    "pv_graph_input": (_int, [_vp, _int, _P(PvTensor)]),
    "pv_graph_output": (_int, [_vp, _int, _P(PvTensor)]),
    "pv_graph_run": (_int, [_vp, _P(PvTensor), _sz, _P(PvTensor), _P(_sz)]),
    "pv_graph_stats_get": (_int, [_vp, _P(PvGraphStats)]),
    "pv_graph_errmsg": (_cp, [_vp]),
    "pv_graph_close": (None, [_vp]),
    "pv_model_open": (_int, [_cp, _P(PvModelOptions), _P(_vp)]),
    "pv_model_count": (_int, []),
    "pv_model_name": (_cp, [_int]),
    "pv_model_description": (_cp, [_int]),
    "pv_model_run": (_int, [_vp, _P(PvInput), _int, _P(PvParam), _int, _P(_vp)]),
    "pv_model_errmsg": (_cp, [_vp]),
    "pv_model_bundle": (_cp, [_vp]),
    "pv_model_info_json": (_cp, [_vp]),
    "pv_model_close": (None, [_vp]),
    "pv_result_model": (_cp, [_vp]),
    "pv_result_objects3d": (_int, [_vp, _P(_P(PvObject3d))]),
    "pv_result_hands": (_int, [_vp, _P(_P(PvHand))]),
    "pv_result_mesh_faces": (_int, [_vp, _P(_P(ctypes.c_int32))]),
    "pv_result_objects2d": (_int, [_vp, _P(_P(PvObject2d))]),
    "pv_result_grid": (_int, [_vp, _cp, _P(_vp), _P(ctypes.c_int64)]),
    "pv_result_ego_path": (_int, [_vp, _P(PvEgoPath)]),
    "pv_result_traffic_light": (_int, [_vp, _P(PvTrafficLight)]),
    "pv_result_json": (_cp, [_vp]),
    "pv_result_json_stable": (_cp, [_vp]),
    "pv_result_text": (_cp, [_vp]),
    "pv_result_timing": (None, [_vp, _P(PvTiming)]),
    "pv_result_png": (_int, [_vp, _int, _P(_vp), _P(_sz)]),
    "pv_result_free": (None, [_vp]),
    "pv_free": (None, [_vp]),
}


def _candidates():
    env = os.environ.get("PERCEIVE_LIB")
    if env:
        # an explicit choice is the only one: a wrong path must fail, not load another library
        return [os.path.join(env, "libperceive.so") if os.path.isdir(env) else env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    try:  # written by `make install`: the library directory relative to the installed package
        from . import _where
        out.append(os.path.normpath(os.path.join(here, _where.LIBDIR_FROM_PACKAGE, SONAME)))
    except ImportError:
        pass
    out.append(os.path.join(here, SONAME))
    out.append(os.path.normpath(os.path.join(here, "..", "..", "build", "libperceive.so")))
    out.append(SONAME)  # the system loader (ldconfig, LD_LIBRARY_PATH)
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _PROTOS.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        return lib, path
    raise ImportError("perceive: libperceive.so not found; set PERCEIVE_LIB to its path (tried: %s)"
                      % "; ".join(tried))


lib, path = _load()


def text(p):
    """A C string (bytes or None) as str."""
    return None if p is None else p.decode("utf-8", "replace")


def last_error():
    return text(lib.pv_last_error()) or ""


def check(status, message=None):
    """Raises the exception for a failed pv_status (message: the handle's, else pv_last_error)."""
    if status != errors.PV_OK:
        raise errors.error_for(status, message if message is not None else last_error())


PRECISIONS = {None: 0, "default": 0, "fp32": 1, "bf16": 2}


def precision_code(precision):
    try:
        return PRECISIONS[precision]
    except (KeyError, TypeError):
        raise errors.InputError("precision: %r is not one of fp32, bf16, default" % (precision,)) from None


def threads_value(threads):
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise errors.InputError("threads: %r is not an integer" % (threads,))
    return threads
