"""perceive: published perception models on CPUs, from Python (ctypes over libperceive.so).

    import perceive
    with perceive.BEVFusion.from_pretrained(threads=2) as model:
        result = model(points)              # N x 3..16 float32 numpy array, a path, or bytes
        print(len(result.objects), result.timing_ms["total"])
        body = result.to_dict()             # what POST /predict answers

One class per model bundle the library has (pv_model_name: BEVFusion, HaMeR, ...), made at import,
so a new bundle appears here without code changes; Model(name, ...) opens any of them.
"""
from . import _lib
from .errors import (ClosedError, FormatError, InputError, InternalError, OutOfMemoryError, PerceiveError,
                     UnsupportedError, WeightsError)
from .graph import Graph, TensorInfo
from .model import LABELS, BundleModel, EgoPath, Hand, Model, Object2D, Object3D, Result, TrafficLight, format_of

__version__ = "0.1.0"
__all__ = ["PerceiveError", "InputError", "WeightsError", "FormatError", "OutOfMemoryError", "UnsupportedError",
           "ClosedError", "InternalError", "Graph", "TensorInfo", "Model", "Result", "Object3D", "Object2D", "EgoPath",
           "TrafficLight", "Hand", "LABELS", "format_of", "models", "isa", "library_path", "MODELS"]


def _class_name(name, description):
    """The bundle's name as its description spells it ("bevfusion" -> "BEVFusion" in "Autoware
    BEVFusion-L ..."), else upper case."""
    i = (description or "").lower().find(name.lower())
    spelled = description[i:i + len(name)] if i >= 0 else ""
    return spelled if spelled.isidentifier() and spelled != name else name.upper()


def models():
    """[(name, description)] of the bundles this library has."""
    L = _lib.lib
    return [(_lib.text(L.pv_model_name(i)), _lib.text(L.pv_model_description(i))) for i in range(L.pv_model_count())]


def isa():
    """The instruction set the kernels were picked for ("avx512", "avx2", "scalar")."""
    return _lib.text(_lib.lib.pv_isa())


library_path = _lib.path

MODELS = {}
for _name, _desc in models():
    _cls = type(_class_name(_name, _desc), (BundleModel,), {"bundle": _name, "__doc__": _desc, "__module__": __name__})
    MODELS[_name] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _name, _desc, _cls
