"""Match an error read out of a log against the catalog's failure sites.

Three ways, strongest first:

* **message** -- the message against each site's template (literal text, holes for the values), after
  whitespace is normalised (re-indented, hard-wrapped lines) and with reporters' elisions (``...``)
  allowed: a template whose literal pieces appear in order covers the message; the holes give the values
  (``batch size (12)`` -> ``{m.num_reqs} = 12``);
* **condition** -- a bare ``AssertionError`` shows only the frame and its source line: the frame's file
  (by its last path parts, so ``.../`` trimmed paths work) and function, and the ``assert`` line against
  each site's condition there; a ``raise X(`` line against the function's raises of type X;
* **line** -- the innermost frame's line is a site's line in the log's release (or in any scanned release):
  an excerpt that cut the source line or the exception line still names its statement;
* **kernel** -- a kernel check's text (``Assertion error (<file>:<line>): <cond>``, FlashInfer/TVM
  ``Check failed: (<cond>) is false: <msg>``) against the kernel sites.

A frame that only names a function the catalog knows is a weaker hint (``function``), used when nothing
else matches. :func:`match_exception` returns the matches best first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from . import Catalog, Site, load

_WS = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…|\[\.\.\.[^\]]*\])\s*")


def norm(text: str) -> str:
    return _WS.sub(" ", text or "").strip()


def _nows(text: str) -> str:
    return _WS.sub("", text or "")


@dataclass
class SiteMatch:
    site: Site
    how: str  # "message" | "condition" | "raise" | "kernel" | "function"
    score: float  # 0..1
    values: dict[str, str] = field(default_factory=dict)  # hole expression -> text in the log
    frame: Any = None  # the model.Frame that matched, if any
    version_ok: bool | None = None  # the site exists in the log's vLLM version (None: unknown)
    note: str = ""

    @property
    def numbers(self) -> dict[str, Any]:
        """Hole values that are numbers (or lists of numbers), keyed by a readable name."""
        out: dict[str, Any] = {}
        for expr, text in self.values.items():
            name = hole_name(expr.split("#", 1)[0])
            val = _value(text)
            if not name or val is None:
                continue
            key, i = name, 2
            while key in out and out[key] != val:  # two holes of one name ({key} ... {key}): keep both
                key, i = f"{name}_{i}", i + 1
            out[key] = val
        return out


def hole_name(expr: str) -> str:
    """``m.num_reqs`` -> ``num_reqs``; ``self.decode_cudagraph_max_bs`` -> ``decode_cudagraph_max_bs``;
    ``len(x)`` -> ``len_x``; anything else -> a snake_case squeeze of it."""
    e = expr.strip()
    m = re.fullmatch(r"len\(([\w.]+)\)", e)
    if m:
        return "len_" + m.group(1).rsplit(".", 1)[-1]
    m = re.fullmatch(r"[\w.]+", e)
    if m:
        return e.rsplit(".", 1)[-1]
    # a tensor's dimension ("state_indices_tensor.shape[0]", "x.size(1)"): its rows / width, named by the tensor
    m = re.fullmatch(r"([\w.]+)\.(?:shape\[|size\()\s*(-?\d)\s*[\])]", e)
    if m:
        return m.group(1).rsplit(".", 1)[-1] + {"0": "_rows", "1": "_width"}.get(m.group(2), f"_dim{m.group(2)}")
    # a sum of counts ("metadata.num_prefills + metadata.num_decodes")
    if re.fullmatch(r"[\w.]+(?:\s*\+\s*[\w.]+)+", e):
        return "_plus_".join(p.strip().rsplit(".", 1)[-1] for p in e.split("+"))[:60]
    m = re.fullmatch(r"([\w.]+)\[[^\]]*\]", e)
    if m:
        return m.group(1).rsplit(".", 1)[-1]
    s = re.sub(r"\W+", "_", e).strip("_")
    return s[:40]


_NUM = re.compile(r"^-?\d+(?:\.\d+)?$")


def _value(text: str) -> Any:
    t = text.strip().strip("'\"").rstrip(".,;")
    if _NUM.match(t.replace(",", "")) and not (t.count(",") and "." in t):
        v = t.replace(",", "")
        return float(v) if "." in v else int(v)
    if t.startswith(("[", "(")) and t.endswith(("]", ")")):
        items = [x.strip() for x in t[1:-1].split(",") if x.strip()]
        if items and all(_NUM.match(x) for x in items):
            return [float(x) if "." in x else int(x) for x in items]
    return None


# ------------------------------------------------------------------------------------------------
# message index
# ------------------------------------------------------------------------------------------------


class _Index:
    def __init__(self, cat: Catalog):
        self.entries: list[tuple[tuple[str, ...], Site, list[str]]] = []  # (anchors, site, literal pieces in order)
        for s in cat.all_sites():
            if not s.message:
                continue
            pieces = [norm(p) for p in _pieces(s.message)]
            pieces = [p for p in pieces if p]
            lit = sum(len(p) for p in pieces)
            if lit < 12:  # "{x}" or "Unsupported: {x}": too little text to recognise a message by
                continue
            longest = max(pieces, key=len)
            first = next((p for p in pieces if len(p) >= 12), longest)
            # the first long piece survives a message cut at its end; the longest one a message cut at its start
            self.entries.append(((first, longest) if first != longest else (longest,), s, pieces))


def _pieces(template: str) -> list[str]:
    from . import _HOLE

    return [p.replace("{{", "{").replace("}}", "}") for p in _HOLE.split(template)]


_INDEX: dict[int, _Index] = {}


def _index(cat: Catalog) -> _Index:
    idx = _INDEX.get(id(cat))
    if idx is None:
        _INDEX.clear()
        idx = _INDEX[id(cat)] = _Index(cat)
    return idx


def _coverage(pieces: list[str], msg: str) -> float:
    """Share of the template's literal text found in order in ``msg`` (pieces may be cut by an elision).
    Less than 20 characters found is no match (0): a phrase as common as ``not supported`` or ``must be`` says
    nothing about which check failed."""
    total = sum(len(p) for p in pieces)
    pos = 0
    found = 0
    for p in pieces:
        i = msg.find(p, pos)
        if i >= 0:
            found += len(p)
            pos = i + len(p)
            continue
        # a piece cut by the end of the (truncated) message, or by an elision: its longest head found
        words = p.split(" ")
        for k in range(len(words) - 1, 0, -1):
            head = " ".join(words[:k])
            if len(head) >= 8 and msg.find(head, pos) >= 0:
                found += len(head)
                pos = msg.find(head, pos) + len(head)
                break
    if found < 20:
        return 0.0
    return found / total if total else 0.0


def match_message(message: str, exc_type: str = "", cat: Catalog | None = None, limit: int = 5) -> list[SiteMatch]:
    cat = cat or load()
    msg = norm(message)
    if len(msg) < 8:
        return []
    short = exc_type.rsplit(".", 1)[-1]
    out: list[SiteMatch] = []
    for anchors, site, pieces in _index(cat).entries:
        if not any(a in msg for a in anchors):
            continue
        rx = site.template_regex()
        values: dict[str, str] = {}
        score = 0.0
        m = rx.search(msg) if rx is not None else None
        if m is not None:
            holes = site.holes()
            for i, h in enumerate(holes):
                v = m.groupdict().get(f"h{i}")
                if v is None:
                    continue
                key = h if h not in values or values[h] == v else f"{h}#{i}"
                values[key] = v
            score = 1.0
            # a template that is all holes around a short text matches too easily
            lit = sum(len(p) for p in pieces)
            if lit < 25:
                # (and a short text found inside a much longer message -- "internal error" in "Request cmpl-8 failed
                # with an internal error during generation" -- is that message's words, not that site's)
                score = 0.8 if (m.end() - m.start()) * 5 >= len(msg) * 3 else 0.6
        else:
            cov = _coverage(pieces, msg)
            if cov < 0.6:
                continue
            score = 0.5 + 0.4 * cov
        if short and site.exc and short != site.exc.rsplit(".", 1)[-1] and short not in ("RuntimeError", "Exception"):
            score -= 0.1
        out.append(SiteMatch(site=site, how="kernel" if site.kind == "kernel" else "message", score=round(score, 3),
                             values=values))
    # longest literal text first among equal scores (a more specific template wins)
    out.sort(key=lambda x: (-x.score, -sum(len(p) for p in x.site.literals())))
    return _dedupe(out)[:limit]


def _dedupe(matches: Iterable[SiteMatch]) -> list[SiteMatch]:
    """The same text at several sites (the same check in several releases or backends): keep them all,
    but one per (file, function, category) so the list stays short."""
    seen: set[tuple] = set()
    out = []
    for m in matches:
        key = (m.site.file, m.site.function, m.site.category, m.site.message, m.site.condition)
        if key in seen:
            continue
        seen.add(key)
        out.append(m)
    return out


# ------------------------------------------------------------------------------------------------
# frames
# ------------------------------------------------------------------------------------------------


def vllm_path(file: str) -> str:
    """A frame's file as a path inside vLLM (``vllm/v1/...``) when it is one; trimmed paths keep their tail."""
    f = file.replace("\\", "/")
    i = f.rfind("/vllm/")
    if i >= 0:
        return f[i + 1:]
    if f.startswith("vllm/"):
        return f
    i = max(f.rfind("site-packages/"), f.rfind("dist-packages/"))
    if i >= 0:  # an installed kernel package (flashinfer/decode.py, aiter/mla.py)
        return f[i + len("site-packages/"):]
    f = re.sub(r"^(?:\.\.\.|…)/*", "", f)
    return f


def _same_file(frame_file: str, site_file: str) -> bool:
    a = vllm_path(frame_file)
    if a == site_file:
        return True
    # trimmed (".../core/kv_cache_utils.py", "kv_cache_utils.py"): the frame's tail must end the site's path
    return site_file.endswith("/" + a) or site_file.endswith(a) and a.endswith(".py")


def _assert_condition(code: str) -> str | None:
    c = code.strip()
    if not c.startswith("assert "):
        return None
    c = c[len("assert "):].strip()
    # drop the message part: the last top-level ", " outside brackets/quotes
    depth, quote, cut = 0, None, None
    for i, ch in enumerate(c):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            cut = i
            break
    cond = c[:cut] if cut is not None else c
    return cond.rstrip("\\ ").strip()


def frame_releases(frames: Sequence[Any], cat: Catalog) -> set[str] | None:
    """The scanned releases in which every function of the traceback that has catalog sites exists (each
    function's releases: those of its sites); None when no frame tells (or they never coexist)."""
    common: set[str] | None = None
    for fr in frames:
        sites = [s for s in cat.in_function(fr.file, fr.function) if _same_file(fr.file, s.file)]
        if not sites:
            continue
        rel: set[str] = set()
        for s in sites:
            rel |= set(s.release_lines(cat.versions))
        common = rel if common is None else common & rel
    return common or None


def match_line(fr: Any, sites: list[Site], cat: Catalog, version: str | None = None,
               releases: set[str] | None = None) -> list[SiteMatch]:
    """Sites of the frame's function whose statement is at the frame's line: in the log's release when it is
    known (``high``), else in any scanned release (weaker when releases disagree about what is there). For
    an innermost frame whose source line an excerpt cut, or whose ``assert`` spans several lines."""
    if not fr.line:
        return []
    out: list[SiteMatch] = []
    if version and any(s.exists_in(version) for s in sites):
        rel = _release_of(version, cat)
        for s in sites:
            if rel is not None and s.release_lines(cat.versions).get(rel) == fr.line:
                out.append(SiteMatch(site=s, how="line", score=0.9, frame=fr, note=f"line {fr.line} in {rel}"))
        if out:
            return out
    hits = [(s, [v for v, ln in s.release_lines(cat.versions).items() if ln == fr.line]) for s in sites]
    hits = [(s, rels) for s, rels in hits if rels]
    if releases:  # the releases the traceback's other functions allow
        narrowed = [(s, [v for v in rels if v in releases]) for s, rels in hits]
        narrowed = [(s, rels) for s, rels in narrowed if rels]
        hits = narrowed or hits
    if not hits:
        return []
    cats = {s.category for s, _ in hits}
    score = 0.8 if len(cats) == 1 else 0.6
    for s, rels in hits:
        span = rels[0] if len(rels) == 1 else f"{rels[0]}-{rels[-1]}"
        out.append(SiteMatch(site=s, how="line", score=score, frame=fr, note=f"line {fr.line} in {span}"))
    return out


def _release_of(version: str, cat: Catalog) -> str | None:
    """The scanned release a version string names (``0.15.0rc1`` -> ``0.15.0``), if scanned."""
    from . import vtuple

    v = vtuple(version)
    if v is None:
        return None
    return next((r for r in cat.versions if vtuple(r) == v[:3]), None)


_RAISE_LITERAL = re.compile(r"""raise\s+[\w.]+\(\s*[rf]{0,2}(["'])(.{12,}?)(?:\1|$)""")


def _raise_literal(code: str) -> str:
    """The message template a ``raise X(f"...")`` source line prints (whitespace dropped; '' if none)."""
    m = _RAISE_LITERAL.match(code.strip())
    return _nows(m.group(2)) if m else ""


def match_frames(frames: Sequence[Any], exc_type: str = "", message: str = "", cat: Catalog | None = None,
                 version: str | None = None) -> list[SiteMatch]:
    """Sites at the frames of a traceback (innermost first)."""
    cat = cat or load()
    out: list[SiteMatch] = []
    short = exc_type.rsplit(".", 1)[-1]
    releases: set[str] | None = None
    for depth, fr in enumerate(reversed(list(frames))):
        if fr.file.endswith((".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc")):  # a kernel source frame
            cond = kernel_condition(fr.code or "")
            if cond:
                want = _nows(cond)
                base = fr.file.rsplit("/", 1)[-1]
                for s in cat.kernel_sites:
                    if s.condition and _nows(s.condition) == want and s.file.rsplit("/", 1)[-1] == base:
                        out.append(SiteMatch(site=s, how="kernel", score=0.9, frame=fr))
            continue
        if fr.function in ("?", "", None):  # a pasted "path.py:line": the whole file, by condition only
            sites = [s for s in cat.in_file(fr.file) if _same_file(fr.file, s.file)]
            cond = _assert_condition(fr.code or "")
            if cond:
                want = _nows(cond)
                for s in sites:
                    if s.kind == "assert" and s.condition and _nows(s.condition) == want:
                        out.append(SiteMatch(site=s, how="condition", score=0.9, frame=fr))
            continue
        sites = [s for s in cat.in_function(fr.file, fr.function) if _same_file(fr.file, s.file)]
        code = fr.code or ""
        cond = _assert_condition(code)
        if not sites and cond is None:
            continue
        weight = 1.0 if depth == 0 else max(0.5, 1.0 - 0.15 * depth)
        if cond is not None:
            want = _nows(cond)
            hits = [s for s in sites if s.kind == "assert" and s.condition and (
                _nows(s.condition) == want or (want.endswith("(") or len(want) > 20) and _nows(s.condition).startswith(want))]
            if not hits:
                # (a nested function's assert under its enclosing function's name, a frame written from memory: the
                # asserts of the functions nested in it, by condition)
                hits = [s for s in cat.in_file(fr.file) if _same_file(fr.file, s.file) and s.kind == "assert"
                        and fr.function in s.function.split(".")[:-1] and s.condition and _nows(s.condition) == want]
            # one condition asserted with several messages across releases (AITER's shuffle-layout asserts): the
            # frame's line number picks the ones at that line in some release
            at_line = [s for s in hits if fr.line and fr.line in s.release_lines(cat.versions).values()]
            hits = at_line or hits
            for s in hits:
                out.append(SiteMatch(site=s, how="condition", score=round(0.95 * weight, 3), frame=fr))
            if hits:
                continue
        if not sites:
            continue
        if depth == 0 and (not code.strip() or code.strip().startswith(("assert", "raise"))):
            # the innermost frame without a usable source line: the statement at its line in the release
            releases = frame_releases(frames, cat) if not version else None
            hits = match_line(fr, sites, cat, version, releases)
            hits = [h for h in hits if not short or short == "AssertionError" and h.site.kind == "assert"
                    or h.site.exc.rsplit(".", 1)[-1] == short or short.startswith("(")]
            if hits:
                out += hits
                continue
        m = re.match(r"raise\s+([\w.]+)", code.strip())
        if m:
            name = m.group(1).rsplit(".", 1)[-1]
            hits = [s for s in sites if s.kind == "raise" and s.exc.rsplit(".", 1)[-1] == name]
            said = _raise_literal(code)
            if said and len(hits) > 1:  # the source line's message template tells the raises of one function apart
                hits = [s for s in hits if s.message and _nows(s.message).startswith(said)] or hits
            if hits:
                one = len({(s.message, s.category) for s in hits}) == 1  # one statement, or its copies in sibling classes
                for s in hits:
                    sc = 0.8 if one else 0.6
                    out.append(SiteMatch(site=s, how="raise", score=round(sc * weight, 3), frame=fr))
                continue
        # the function is known: a weaker hint (its sites' categories)
        if depth <= 3:
            for s in sites:
                if not short or short == "AssertionError" and s.kind == "assert" or s.exc.rsplit(".", 1)[-1] == short:
                    out.append(SiteMatch(site=s, how="function", score=round(0.35 * weight, 3), frame=fr))
    out.sort(key=lambda x: -x.score)
    return _dedupe(out)


# ------------------------------------------------------------------------------------------------
# kernel checks
# ------------------------------------------------------------------------------------------------

_CXX_CHECK = re.compile(r"(TVM_FFI_ICHECK(?:_(EQ|NE|LE|LT|GE|GT))?|FLASHINFER_CHECK|TORCH_CHECK|TLLM_CHECK(?:_WITH_INFO)?)\s*\((.*)\)")
_CXX_OPS = {"EQ": "==", "NE": "!=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}


def kernel_condition(code: str) -> str | None:
    """``TVM_FFI_ICHECK_GT(num_tokens, 64)`` -> ``num_tokens > 64`` (the form the catalog keeps)."""
    m = _CXX_CHECK.search(code)
    if not m:
        return None
    args = [a.strip() for a in m.group(3).split(",")]
    if m.group(2) and len(args) >= 2:
        return f"{args[0]} {_CXX_OPS[m.group(2)]} {args[1]}"
    return args[0] if args else None


_KERNEL_ASSERT = re.compile(r"Assertion error\s*\(([^)]*?)([\w.\-]+\.(?:hpp|cuh|cu|h|cpp|cc))(?::(\d+))?\)\s*:\s*(.+?)\s*$", re.S)
_TVM_CHECK = re.compile(r"Check failed:?\s*\(?(.+?)\)?\s+is false\s*:?\s*(.*)$", re.S)


def match_kernel(message: str, cat: Catalog | None = None) -> list[SiteMatch]:
    cat = cat or load()
    msg = norm(message)
    out: list[SiteMatch] = []
    m = _KERNEL_ASSERT.search(msg)
    cond = None
    kfile = None
    if m:
        kfile, cond = m.group(2), m.group(4).rstrip("'\". ")
    else:
        t = _TVM_CHECK.search(msg)
        if t:
            cond = t.group(1)
    if cond is None:
        return []
    want = _nows(cond)
    for s in cat.kernel_sites:
        if not s.condition:
            continue
        sc = _nows(s.condition)
        if sc == want or (len(sc) > 6 and want.startswith(sc)):
            score = 0.95 if (kfile is None or s.file.endswith(kfile)) else 0.85
            out.append(SiteMatch(site=s, how="kernel", score=score, values={"condition": cond}))
    out.sort(key=lambda x: -x.score)
    return out


# ------------------------------------------------------------------------------------------------


def match_exception(exc_type: str, message: str, frames: Sequence[Any] = (), version: str | None = None,
                    cat: Catalog | None = None) -> list[SiteMatch]:
    """All matches for one error, best first; ``version_ok`` says whether each site exists in ``version``."""
    cat = cat or load()
    out = match_kernel(message, cat) + match_message(message, exc_type, cat) + match_frames(frames, exc_type, message, cat,
                                                                                          version)
    # a message match confirmed by a frame in the same function is the strongest evidence
    fr_funcs = {(vllm_path(f.file).rsplit("/", 1)[-1], f.function.rsplit(".", 1)[-1]) for f in frames}
    for m in out:
        if m.how in ("message",) and (m.site.basename, m.site.short_function) in fr_funcs:
            m.score = min(1.0, m.score + 0.05)
            m.note = "message and frame agree"
        if version:
            m.version_ok = m.site.exists_in(version)
            if m.version_ok is False and m.how != "kernel":
                m.score = round(m.score - 0.05, 3)
    # (one text raised in two functions, both matched in full: the function the frames name decides)
    out.sort(key=lambda x: (-x.score, x.note != "message and frame agree"))
    return _dedupe(out)
