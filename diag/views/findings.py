"""Findings view: every finding numbered once, its suggestions numbered once across the session.

``findings(record, pages=None, state_index=None, timeline=None) -> FindingsVM``.

* ``FindingVM.number`` is the finding's position (1..); ``SuggestionVM.number`` is the N of
  ``vllm-diag suggest --apply N`` (and of the TUI key / dashboard button): suggestions are
  numbered across findings in finding order, then the rule's rank.
* Each finding carries ``anchors`` into the pictures (layer, group, block-table column, step):
  the rows the page map marks for a ``kv_page_size`` finding, the mismatched column of the
  state-index view for ``state_index``, the marked steps of the timeline for batch findings,
  plus any layer/group/step its numbers name.
* Evidence is cut at ``EVIDENCE_LIMIT`` lines (``evidence_more`` says how many were left out).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Finding, SessionRecord
from .primitives import Anchor, fmt, group_anchor, layer_anchor, pairs, step_anchor

EVIDENCE_LIMIT = 6
ANCHOR_TEXT_LIMIT = 4  # anchors a one-line "see:" names (all of them stay in FindingVM.anchors)
STEP_CATEGORIES = ("mixed_batch", "spec_kernel_limit", "cudagraph_shape", "token_budget")


@dataclass(frozen=True)
class ComparisonVM:
    name: str
    expected: object
    actual: object
    unit: str | None
    text: str  # "expected 2,293,760 B, actual 1,146,880 B"


@dataclass(frozen=True)
class EvidenceVM:
    text: str
    where: str | None  # "line 150", "b.log.gz line 12", "preflight", "recorded"
    line: int | None
    source: str | None


@dataclass(frozen=True)
class ChangeVM:
    key: str
    value: object
    flag: str | None
    old: object


@dataclass(frozen=True)
class SuggestionVM:
    number: int  # N for `suggest --apply N`, a TUI key, a dashboard button
    finding: int  # the finding's number
    rank: int  # 1.. within the finding
    title: str
    tradeoff: str
    verified: bool
    verification: str | None
    diff: tuple[str, ...]
    command: str | None
    yaml: str | None
    changes: tuple[ChangeVM, ...]
    llm_kwargs: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class FindingVM:
    number: int
    rule: str
    category: str
    severity: str  # error | warning | info
    title: str
    message: str
    comparisons: tuple[ComparisonVM, ...]
    numbers: tuple[tuple[str, object], ...]
    evidence: tuple[EvidenceVM, ...]
    evidence_more: int
    missing_evidence: tuple[str, ...]
    versions: str | None
    fixed_in: str | None
    suggestions: tuple[SuggestionVM, ...]
    anchors: tuple[Anchor, ...]
    confidence: str | None = None  # high | medium | low (how sure the diagnosis is)
    basis: str | None = None  # why, in one line

    @property
    def anchor_keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.anchors)

    @property
    def anchors_shown(self) -> tuple[Anchor, ...]:
        return self.anchors[:ANCHOR_TEXT_LIMIT]

    @property
    def anchors_more(self) -> int:
        return max(0, len(self.anchors) - ANCHOR_TEXT_LIMIT)


@dataclass(frozen=True)
class ErrorEntryVM:
    """An error of the session that no finding explains (e.g. a recorded engine crash: the probes
    store errors, not findings): listed after the findings, unnumbered, anchored to the picture
    its numbers point at (the state-index column, the page-size layer)."""

    phase: str
    exc_type: str
    message: str
    location: str | None
    anchors: tuple[Anchor, ...]


@dataclass(frozen=True)
class FindingsVM:
    items: tuple[FindingVM, ...]
    suggestions: tuple[SuggestionVM, ...]  # all, by number
    config_fragments: tuple[SuggestionVM, ...]  # first YAML suggestion of each error finding
    errors: int
    warnings: int
    fails: bool
    verdict: str
    empty_text: str  # what to say when there are no findings
    unexplained: tuple[ErrorEntryVM, ...] = ()  # errors no finding explains (not numbered)

    def suggestion(self, number: int) -> SuggestionVM | None:
        return next((s for s in self.suggestions if s.number == number), None)


def numbered_suggestions(record: SessionRecord) -> list[tuple[int, Finding, object]]:
    """``(N, finding, suggestion)`` in the one numbering every front end uses."""
    out, n = [], 0
    for f in record.findings:
        for s in f.suggestions:
            n += 1
            out.append((n, f, s))
    return out


def _comparison_text(c) -> str:
    unit = f" {c.unit}" if c.unit else ""
    return f"expected {fmt(c.expected)}{unit}, actual {fmt(c.actual)}{unit}"


def _where(e, many_files: bool) -> str | None:
    if e.line:
        if many_files and e.source and e.source not in ("log", "preflight", "recorded", "predicted"):
            return f"{e.source} line {e.line}"
        return f"line {e.line}"
    return e.source


def _anchors(f: Finding, pages, state_index, timeline) -> tuple[Anchor, ...]:
    out: list[Anchor] = []
    nums = f.numbers or {}
    known_layers = set(pages.layer_names) if pages is not None else set()
    if f.category in ("kv_page_size",) and pages is not None:
        out += [layer_anchor(name) for name in pages.marked_layers]
    for key in ("layer", "layer_name", "max_page_layer"):
        name = nums.get(key)
        if isinstance(name, str) and (not known_layers or name in known_layers):
            out.append(layer_anchor(name))
    if f.category == "state_index" and state_index is not None:
        for g in state_index.groups:
            if g.mismatch is not None:
                out.append(g.anchor)
                out += list(g.marked_anchors)
    gi = nums.get("group_index")
    if isinstance(gi, int) and not isinstance(gi, bool):
        out.append(group_anchor(gi))
    step = nums.get("step") if "step" in nums else nums.get("step_index")
    if isinstance(step, int) and not isinstance(step, bool):
        out.append(step_anchor(step))  # the step the finding names (a failing step) first
    if f.category in STEP_CATEGORIES and timeline is not None:
        kinds = ("mixed",) if f.category == "mixed_batch" else ("mixed", "disagree")
        first = next((m for m in timeline.marks if m.kind in kinds), None)
        if first is not None:
            out.append(first.anchor)
    seen, uniq = set(), []
    for a in out:
        if a not in seen:
            seen.add(a)
            uniq.append(a)
    return tuple(uniq)


def findings(record: SessionRecord, pages=None, state_index=None, timeline=None) -> FindingsVM:
    many_files = record.log is not None and len(record.log.files) > 1
    items: list[FindingVM] = []
    all_sugs: list[SuggestionVM] = []
    fragments: list[SuggestionVM] = []
    n = 0
    for i, f in enumerate(record.findings, start=1):
        sugs = []
        for rank, s in enumerate(f.suggestions, start=1):
            n += 1
            sugs.append(SuggestionVM(
                number=n, finding=i, rank=rank, title=s.title, tradeoff=s.tradeoff, verified=bool(s.verified),
                verification=s.verification, diff=tuple(s.diff or ()), command=s.command, yaml=s.yaml,
                changes=tuple(ChangeVM(c.key, c.value, c.flag, c.old) for c in s.changes),
                llm_kwargs=pairs(s.llm_kwargs)))
        all_sugs += sugs
        if f.severity == "error" and sugs and (sugs[0].yaml or "").strip():
            fragments.append(sugs[0])
        ev = [EvidenceVM(text=e.text, where=_where(e, many_files), line=e.line, source=e.source) for e in f.evidence]
        items.append(FindingVM(
            number=i, rule=f.rule, category=f.category, severity=f.severity, title=f.title, message=f.message,
            comparisons=tuple(ComparisonVM(c.name, c.expected, c.actual, c.unit, _comparison_text(c)) for c in f.comparisons),
            numbers=pairs(f.numbers), evidence=tuple(ev[:EVIDENCE_LIMIT]), evidence_more=max(0, len(ev) - EVIDENCE_LIMIT),
            missing_evidence=tuple(f.missing_evidence), versions=f.versions, fixed_in=f.fixed_in, suggestions=tuple(sugs),
            anchors=_anchors(f, pages, state_index, timeline), confidence=getattr(f, "confidence", None),
            basis=getattr(f, "basis", None)))
    errors = sum(f.severity == "error" for f in record.findings)
    warnings = sum(f.severity == "warning" for f in record.findings)
    kind = record.session.kind
    if kind == "check":
        unmodelled = [it.number for it in items if it.rule == "not_modelled"]
        verdict = (f"would FAIL ({errors} error finding{'s' if errors != 1 else ''})" if errors
                   else "no finding stops this engine" if not unmodelled
                   else f"NOT MODELLED: no finding stops this engine as far as it is modelled (finding {unmodelled[0]} "
                        "lists what the pre-flight does not model)")
    elif kind == "log":
        root = record.log.root if record.log is not None else None
        if errors:
            verdict = f"failed: {errors} error finding{'s' if errors != 1 else ''}" + (
                f" (root error {root.exc_type})" if root is not None else "")
        else:
            verdict = "no error finding" + (f"; root error {root.exc_type} unexplained" if root is not None else "")
            if any(n.startswith("not modelled: ") for n in record.notes):  # e.g. a log cut off inside a traceback
                verdict = "NOT MODELLED: " + verdict + " (see the note)"
    else:
        verdict = (f"{errors} error finding{'s' if errors != 1 else ''}" if errors else "no error finding") + (
            f"; engine {record.session.status}" if record.session.status else "")
    unexplained = () if errors else _unexplained(record, pages, state_index)
    empty = ("No findings: nothing here predicts or explains a failure." if not unexplained else
             "No findings stored for this session; the errors below are not explained by a rule.")
    return FindingsVM(items=tuple(items), suggestions=tuple(all_sugs), config_fragments=tuple(fragments), errors=errors,
                      warnings=warnings, fails=errors > 0, verdict=verdict, empty_text=empty, unexplained=unexplained)


def _unexplained(record: SessionRecord, pages, state_index) -> tuple[ErrorEntryVM, ...]:
    out = []
    for e in record.state.errors:
        if e.phase == "log":
            continue  # a post-mortem names its root error with an 'other_unrecognised' finding
        anchors: list[Anchor] = []
        n = e.numbers or {}
        if "tensor_a_size" in n and state_index is not None:
            for g in state_index.mismatches:
                if {n.get("tensor_a_size"), n.get("tensor_b_size")} >= set(g.mismatch):
                    anchors += [g.anchor, *g.marked_anchors]
        if pages is not None and ("max_page_size" in n or "unify_kv_cache_spec_page_size" in (e.location or "")):
            anchors += [layer_anchor(name) for name in pages.marked_layers]
        if isinstance(n.get("layer"), str):
            anchors.append(layer_anchor(n["layer"]))
        out.append(ErrorEntryVM(phase=e.phase, exc_type=e.exc_type, message=(e.message or "").splitlines()[0][:300]
                                if e.message else "", location=e.location, anchors=tuple(dict.fromkeys(anchors))))
    return tuple(out)
