"""Page-size map: every layer (main model and draft) grouped by KV-cache group, its page before and
after vLLM's page-size unification (``unify_kv_cache_spec_page_size``), the padding, its ratio to the
largest page and whether it divides it; the layers that break unification marked, with the expected
vs actual page. Predicted and recorded plans side by side when the session has both.

``page_map(record) -> PageMapVM``. Reads only the record: the layer specs of ``record.state`` and of
``record.predicted``, the KV-cache groups, the errors' numbers and the ``kv_page_size`` findings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import EngineState, LayerSpec, SessionRecord
from .primitives import Anchor, Missing, known, layer_anchor

SOURCE_LABELS = {"recorded": "recorded by the probes", "predicted": "predicted by the pre-flight", "log": "read from the log"}


@dataclass(frozen=True)
class PageRow:
    layer: str
    group: int | Missing  # KV-cache group index
    spec_type: str
    is_draft: bool
    block_before: int | None
    block_after: int | Missing | None
    page_raw: int | None  # what the layer's spec needs (page_size_bytes)
    page_before: int | None  # before unification (padded when the spec pads, e.g. Mamba)
    page_after: int | Missing  # after unification
    padding_bytes: int  # page_raw up to the padded page (the spec's own padding, or unification's for a state page)
    padding_pct: float  # of page_raw
    ratio_to_max: float | Missing
    divides: bool | Missing  # max page % this page == 0
    marked: bool
    mark_reason: str | None
    expected: int | None  # the page it should have had
    actual: int | None  # the page it has
    anchor: Anchor


@dataclass(frozen=True)
class PageGroup:
    group_index: int
    spec_type: str
    block_size: int | None
    page_bytes: int | None
    layers: int
    is_draft: bool


@dataclass(frozen=True)
class PageRun:
    """Consecutive rows that differ only by layer name (text output prints one line per run; a
    marked run is marked for the same reason)."""

    rows: tuple[int, ...]  # indexes into PageSide.rows
    label: str  # "model.layers.N.linear_attn, N in 0-2,4-6 (6 layers)" or the one layer name


@dataclass(frozen=True)
class PageSide:
    source: str  # recorded | predicted | log
    title: str
    rows: tuple[PageRow, ...]
    groups: tuple[PageGroup, ...]
    groups_missing: Missing | None
    max_page: int | None
    max_layer: str | None
    unified: bool  # the side has the after-unification stage
    after_missing: Missing | None  # why "after" is unknown when it is
    runs: tuple[PageRun, ...]
    marked_layers: tuple[str, ...]


@dataclass(frozen=True)
class PageDiff:
    layer: str
    predicted: int | Missing
    recorded: int | Missing


@dataclass(frozen=True)
class PageMapVM:
    sides: tuple[PageSide, ...]  # the session's own state first, then the prediction
    diffs: tuple[PageDiff, ...]  # layers whose page differs between predicted and recorded (both present)
    compared: int  # layers present on both sides
    missing: Missing | None  # why there is no page map at all

    @property
    def marked_layers(self) -> tuple[str, ...]:
        out: list[str] = []
        for side in self.sides:
            out += [n for n in side.marked_layers if n not in out]
        return tuple(out)

    @property
    def layer_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.layer for side in self.sides for r in side.rows))


def _dedupe(specs: list[LayerSpec]) -> list[LayerSpec]:
    seen: dict[str, LayerSpec] = {}
    for s in specs:
        seen.setdefault(s.layer_name, s)
    return list(seen.values())


def _page(s: LayerSpec | None) -> int | None:
    if s is None:
        return None
    return s.page_size_padded or s.page_size_bytes


def _unify_error(st: EngineState):
    for e in st.errors:
        loc = (e.location or "") + " " + (e.traceback or "") + " " + " ".join(e.notes or [])
        if "unify_kv_cache_spec_page_size" in loc or "page size" in (e.message or "").lower() or (
                "max_page_size" in (e.numbers or {})):
            return e
    return None


def _offenders(record: SessionRecord, st: EngineState) -> list[tuple[str, int | None, int | None, str]]:
    """(layer, expected, actual, reason) named by the state's error or a kv_page_size finding."""
    out = []
    err = _unify_error(st)
    sources = []
    if err is not None:
        sources.append((err.numbers or {}, f"{err.exc_type} at {err.location or 'unification'}"))
    for f in record.findings:
        if f.category == "kv_page_size":
            sources.append((f.numbers or {}, f"finding {f.rule}"))
    for nums, why in sources:
        layer = nums.get("layer") or nums.get("layer_name")
        page = nums.get("page_size") if nums.get("page_size") is not None else nums.get("page_size_bytes")
        mx = nums.get("max_page_size")
        if isinstance(layer, str):
            out.append((layer, mx if isinstance(mx, int) else None, page if isinstance(page, int) else None, why))
    return out


def _side(record: SessionRecord, st: EngineState) -> PageSide | None:
    before = _dedupe(st.specs("layer"))
    after = {s.layer_name: s for s in _dedupe(st.specs("unified"))}
    if not before and after:
        before = list(after.values())
    if not before:
        return None
    groups_src = st.kv_cache_groups
    gpid = groups_src[0].pid if groups_src else None
    groups = [g for g in groups_src if g.pid == gpid]
    group_of: dict[str, int] = {}
    for g in groups:
        for name in g.layer_names:
            group_of.setdefault(name, g.group_index)
    if groups:
        groups_missing = None
    else:
        err = next(iter(st.errors), None)
        groups_missing = Missing(
            f"no KV-cache groups: the engine failed before grouping ({err.exc_type})" if err is not None else
            ("not predicted" if st.source == "predicted" else "not recorded (the engine did not reach get_kv_cache_groups)"))
    pages_before = [p for p in (_page(s) for s in before) if p]
    mx = max(pages_before) if pages_before else None
    max_layer = next((s.layer_name for s in before if _page(s) == mx), None)
    unified = bool(after)
    err = _unify_error(st)
    if unified:
        after_missing = None
    elif err is not None:
        after_missing = Missing(f"unification failed: {err.exc_type}{': ' + err.message if err.message else ''}"
                                f" at {err.location or '?'}")
    elif st.source == "predicted":
        after_missing = Missing("the pre-flight did not predict the unified stage")
    else:
        after_missing = Missing("not recorded (the engine did not reach unify_kv_cache_spec_page_size)")
    offenders = _offenders(record, st)
    off_pages = {}
    for layer, exp, act, why in offenders:
        spec = next((s for s in before if s.layer_name == layer), None)
        if spec is not None:
            off_pages[(spec.spec_type, _page(spec), spec.is_draft)] = (layer, exp, act, why)
    mx_after = max((_page(s) or 0 for s in after.values()), default=0) or None
    rows: list[PageRow] = []
    for s in before:
        page_before = _page(s)
        a = after.get(s.layer_name)
        page_after: int | Missing = _page(a) if a is not None and _page(a) else (after_missing or Missing("not recorded"))
        raw = s.page_size_bytes
        padded_to = page_before
        if a is not None and s.is_mamba and a.block_size == s.block_size and known(page_after) and raw:
            padded_to = max(page_before or 0, page_after)  # unification padded the state page (same block size)
        pad = (padded_to - raw) if (padded_to and raw and padded_to > raw) else 0
        pct = round(100.0 * pad / raw, 2) if raw and pad else 0.0
        ref = page_after if known(page_after) else page_before
        ratio: float | Missing = round(ref / (mx_after if known(page_after) and mx_after else mx), 4) if (ref and mx) else \
            Missing("page size unknown")
        divides: bool | Missing = (mx % page_before == 0) if (mx and page_before) else Missing("page size unknown")
        marked, reason, exp, act = False, None, None, None
        hit = off_pages.get((s.spec_type, page_before, s.is_draft))
        if hit is not None:
            layer, exp, act, why = hit
            marked = True
            exp = exp if exp is not None else mx
            act = act if act is not None else page_before
            reason = (f"{s.spec_type} page {act:,} B cannot become the largest page {exp:,} B ({why}, "
                      f"named layer {layer})") if exp and act else f"{why}, named layer {layer}"
        elif divides is False:
            marked, exp, act = True, mx, page_before
            reason = f"the largest page {mx:,} B is not a multiple of this page {page_before:,} B ({mx % page_before:,} B left over)"
        elif unified and known(page_after) and mx_after and page_after != mx_after:
            marked, exp, act = True, mx_after, page_after
            reason = f"after unification this page is {page_after:,} B, the others {mx_after:,} B"
        rows.append(PageRow(
            layer=s.layer_name, group=group_of.get(s.layer_name, groups_missing or Missing("layer in no KV-cache group")),
            spec_type=s.spec_type, is_draft=bool(s.is_draft), block_before=s.block_size,
            block_after=(a.block_size if a is not None else (after_missing or Missing("not recorded"))),
            page_raw=raw, page_before=page_before, page_after=page_after, padding_bytes=pad, padding_pct=pct,
            ratio_to_max=ratio, divides=divides, marked=marked, mark_reason=reason, expected=exp, actual=act,
            anchor=layer_anchor(s.layer_name)))
    order = {name: i for i, name in enumerate(r.layer for r in rows)}
    # by KV-cache group; layers of no known group by what would group them (draft, type, page)
    rows.sort(key=lambda r: (r.group, r.is_draft, order[r.layer]) if isinstance(r.group, int) else
              (1 << 30, r.is_draft, r.spec_type, r.page_before or 0, order[r.layer]))
    pgroups = tuple(PageGroup(g.group_index, g.spec_type, g.block_size, g.page_size_padded or g.page_size_bytes,
                              len(g.layer_names), bool(g.is_draft)) for g in sorted(groups, key=lambda g: g.group_index))
    return PageSide(source=st.source, title=SOURCE_LABELS.get(st.source, st.source), rows=tuple(rows), groups=pgroups,
                    groups_missing=groups_missing, max_page=mx, max_layer=max_layer, unified=unified,
                    after_missing=after_missing, runs=_runs(rows),
                    marked_layers=tuple(r.layer for r in rows if r.marked))


def _run_key(r: PageRow) -> tuple:
    return (r.group, r.spec_type, r.is_draft, r.block_before, r.block_after, r.page_raw, r.page_before, r.page_after,
            r.divides, r.marked)


def _runs(rows: list[PageRow]) -> tuple[PageRun, ...]:
    runs: list[list[int]] = []
    for i, r in enumerate(rows):
        if runs and _run_key(rows[runs[-1][-1]]) == _run_key(r) and rows[runs[-1][-1]].mark_reason == r.mark_reason:
            runs[-1].append(i)
        else:
            runs.append([i])
    return tuple(PageRun(tuple(idx), _label([rows[i].layer for i in idx])) for idx in runs)


def _label(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    templates = {re.sub(r"\d+", "N", n) for n in names}
    if len(templates) == 1:
        nums = [re.findall(r"\d+", n) for n in names]
        varying = [i for i in range(len(nums[0])) if len({x[i] for x in nums}) > 1]
        if len(varying) == 1:
            idx = varying[0]
            parts = re.split(r"(\d+)", names[0])
            k = -1
            for j, p in enumerate(parts):
                if p.isdigit():
                    k += 1
                    if k == idx:
                        parts[j] = "N"
            return f"{''.join(parts)}, N in {_ranges(sorted(int(x[idx]) for x in nums))} ({len(names)} layers)"
    return f"{names[0]} ... {names[-1]} ({len(names)} layers)"


def _ranges(values: list[int]) -> str:
    out = []
    start = prev = values[0]
    for v in values[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


def page_map(record: SessionRecord) -> PageMapVM:
    sides = []
    own = _side(record, record.state)
    if own is not None:
        sides.append(own)
    if record.predicted is not None:
        pred = _side(record, record.predicted)
        if pred is not None:
            sides.append(pred)
    diffs: list[PageDiff] = []
    compared = 0
    rec = next((s for s in sides if s.source == "recorded"), None)
    pre = next((s for s in sides if s.source == "predicted"), None)
    if rec is not None and pre is not None:
        pmap = {r.layer: r for r in pre.rows}
        for r in rec.rows:
            p = pmap.get(r.layer)
            if p is None:
                continue
            compared += 1
            pa = p.page_after if known(p.page_after) else p.page_before
            ra = r.page_after if known(r.page_after) else r.page_before
            if pa != ra:
                diffs.append(PageDiff(r.layer, pa, ra))
    missing = None
    if not sides:
        kind = record.session.kind
        if kind == "log":
            note = next((n for n in record.notes if "pre-flight" in n or "config.json" in n), None)
            missing = Missing("the log does not list per-layer KV specs and no pre-flight prediction is stored"
                              + (f" ({note})" if note else ""))
        elif kind == "check":
            missing = Missing("the pre-flight predicted no layer specs for this model")
        else:
            missing = Missing("no layer specs recorded (the probes did not reach get_kv_cache_spec)")
    return PageMapVM(sides=tuple(sides), diffs=tuple(diffs), compared=compared, missing=missing)
