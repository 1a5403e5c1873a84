"""Wrapping helpers shared by the version adapters.

``wrap_attr`` replaces ``owner.name`` with a wrapper built by ``factory(original)``; the wrapper is
marked so a second install (plugin loaded twice, or two adapters naming the same class) is a
no-op, and the original stays reachable as ``__wrapped__``. A hook point that cannot be found is
reported with one clear log line and skipped.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..recorder import log_once_line

MARK = "__vllm_diag_wrapped__"


def version_tuple(version: str) -> tuple[int, int, int]:
    nums = re.findall(r"\d+", (version or "0").split("+")[0])[:3]
    t = tuple(int(n) for n in nums) + (0,) * (3 - len(nums))
    return t[0], t[1], t[2]


@dataclass
class HookPoint:
    """One place in vLLM the probes hook: ``module`` + ``qualname`` (``Class.method`` or ``func``)."""

    module: str
    qualname: str
    factory: Callable[[Callable], Callable]
    what: str  # what is lost without it, for the log line
    optional: bool = False  # absent in some builds by design (e.g. CPU runner on a GPU build)
    own_only: bool = False  # for methods: wrap only if the class itself defines it
    kind: str = field(default="function")


def resolve(module: str, qualname: str) -> tuple[Any, str, Any]:
    """``(owner, attr, current value)``; raises ImportError/AttributeError when absent."""
    mod = importlib.import_module(module)
    parts = qualname.split(".")
    owner = mod
    for p in parts[:-1]:
        owner = getattr(owner, p)
    return owner, parts[-1], getattr(owner, parts[-1])


def wrap_attr(owner: Any, attr: str, factory: Callable[[Callable], Callable]) -> bool:
    original = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr)
    if original is None:
        original = getattr(owner, attr)
    if getattr(original, MARK, False):
        return False
    wrapper = factory(original)
    try:
        wrapper.__wrapped__ = original
        wrapper.__name__ = getattr(original, "__name__", attr)
        wrapper.__qualname__ = getattr(original, "__qualname__", attr)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        wrapper.__module__ = getattr(original, "__module__", None)
    except (AttributeError, TypeError):
        pass
    setattr(wrapper, MARK, True)
    setattr(owner, attr, wrapper)
    return True


def install_points(points: list[HookPoint], version: str) -> dict[str, str]:
    """Install every hook point; returns ``{module:qualname: "ok" | "missing: why" | "skipped"}``."""
    result: dict[str, str] = {}
    for hp in points:
        key = f"{hp.module}:{hp.qualname}"
        try:
            owner, attr, _ = resolve(hp.module, hp.qualname)
            if hp.own_only and isinstance(owner, type) and attr not in owner.__dict__:
                result[key] = "skipped (inherited)"
                continue
            wrap_attr(owner, attr, hp.factory)
            result[key] = "ok"
        except Exception as exc:  # ImportError, AttributeError, anything at import time
            reason = f"{exc.__class__.__name__}: {exc}".splitlines()[0]
            result[key] = f"missing: {reason}"
            if not hp.optional:
                log_once_line(
                    f"vllm-diag: hook point {key} not found in vLLM {version} ({reason}); "
                    f"{hp.what} will not be recorded"
                )
    return result
