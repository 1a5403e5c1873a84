"""Batch timeline: per step, decodes, spec decodes, prefills and tokens -- the runner's split and,
where they disagree with it, each metadata builder's; steps that mix decodes with spec decodes
marked; next_n = k + 1 against each kernel limit in play. Long sessions are downsampled into
buckets (the store does it with SQL ``GROUP BY``; :func:`summarize_steps` is the same in Python for
in-memory records).

``timeline(record) -> TimelineVM``; ``extend(summary, new_steps)`` folds steps recorded since
``summary.last_rowid`` into a summary for live follow (see STATUS "views API").

Rows: the runner writes one row per step without a builder (``builder`` None); each attention-
metadata builder writes its own row (``builder`` = class name, ``group_index``). The view calls the
first ``runner`` and the others by builder and group, so a step never prints twice unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import SessionRecord, StepBucket, StepSummary
from ..steps import (  # noqa: F401 - re-exported: the timeline's summarising is part of the views API
    MARK_LIMIT,
    MAX_POINTS,
    RUNNER,
    TAIL_ROWS,
    split3,
    bucket_width,
    extend,
    primary_pid,
    source_of,
    summarize_steps,
    window,
)
from .primitives import Anchor, Missing, spec_tokens, step_anchor

RECENT_STEPS = 10  # steps the text view prints

# ----------------------------------------------------------------------------- the view model


@dataclass(frozen=True)
class TimelineSeries:
    source: str  # "runner" or a builder class name
    group_index: int | None
    label: str  # "runner", "GDNAttentionMetadataBuilder (group 0)"
    kind: str  # runner | builder
    x: tuple[int, ...]  # first step of each bucket
    x_last: tuple[int, ...]  # last step of each bucket
    decodes: tuple[int, ...]  # max per bucket
    spec_decodes: tuple[int, ...]
    prefills: tuple[int, ...]
    tokens: tuple[int, ...]
    mixed: tuple[int, ...]  # marked rows per bucket
    disagree: tuple[int, ...]
    disagrees: int  # rows of this builder that disagree with the runner

    @property
    def agrees(self) -> bool:
        return self.disagrees == 0


@dataclass(frozen=True)
class StepMarkVM:
    step: int
    kind: str  # failed | mixed | disagree
    source: str
    label: str  # "GDNAttentionMetadataBuilder (group 0)"
    text: str  # "2 decodes + 3 spec decodes in one step"
    anchor: Anchor


@dataclass(frozen=True)
class TimelineRow:
    """One printed row: the runner's row of a step, or a builder's row where it disagrees."""

    step: int
    source: str
    label: str
    kind: str  # runner | builder
    reqs: int
    decodes: int
    spec_decodes: int
    prefills: int
    tokens: int
    mark: str  # "" | "mixed" | "disagrees with runner (runner 8/0/0)" | "builder only"
    anchor: Anchor


@dataclass(frozen=True)
class KernelLimitVM:
    name: str  # "GDNAttentionMetadataBuilder (group 0) reorder_batch_threshold"
    meaning: str  # what the limit is
    limit: int | Missing
    next_n: int | Missing
    ok: bool | Missing
    source: str


@dataclass(frozen=True)
class TimelineVM:
    total_rows: int
    total_steps: int
    first_step: int | None
    last_step: int | None
    width: int  # steps per bucket
    downsampled: bool
    pid: int | None
    pids: tuple[int, ...]
    process_note: str | None  # "rows of pid 1192 (rank 1) not drawn"
    series: tuple[TimelineSeries, ...]
    marks: tuple[StepMarkVM, ...]
    mark_counts: tuple[tuple[str, int], ...]
    recent: tuple[TimelineRow, ...]
    next_n: int | Missing
    limits: tuple[KernelLimitVM, ...]
    missing: Missing | None
    last_rowid: int

    @property
    def marked_steps(self) -> tuple[int, ...]:
        return tuple(sorted({m.step for m in self.marks}))


def _label(source: str, group: int | None) -> str:
    return RUNNER if source == RUNNER else f"{source} (group {group if group is not None else '?'})"


def _limits(record: SessionRecord, next_n) -> tuple[KernelLimitVM, ...]:
    out: list[KernelLimitVM] = []
    cfg = dict(record.state.config)
    if record.predicted is not None:
        for k, v in record.predicted.config.items():
            cfg.setdefault(k, v)
    bl = cfg.get("builder_limits")
    if isinstance(bl, dict):
        for key, limits in sorted(bl.items()):
            if not isinstance(limits, dict):
                continue
            thr = limits.get("reorder_batch_threshold")
            if isinstance(thr, int) and not isinstance(thr, bool):
                gi, _, builder = str(key).partition(":")
                ok = (next_n <= thr) if isinstance(next_n, int) else Missing("k unknown")
                out.append(KernelLimitVM(name=f"{builder or key} (group {gi}) reorder_batch_threshold",
                                         meaning="a request of up to this many tokens is batched as a decode",
                                         limit=thr, next_n=next_n, ok=ok, source="recorded builder attributes"))
    for f in record.findings:
        if f.category != "spec_kernel_limit":
            continue
        allowed = f.numbers.get("allowed_next_n")
        n = f.numbers.get("next_n", next_n)
        if isinstance(allowed, list) and allowed:
            lim = max(a for a in allowed if isinstance(a, int))
            ok = (n in allowed) if isinstance(n, int) else Missing("next_n unknown")
            out.append(KernelLimitVM(name=f"{f.rule} next_n", meaning=f"the kernel accepts next_n in {sorted(allowed)}",
                                     limit=lim,
                                     next_n=n if isinstance(n, int) else next_n, ok=ok, source=f"finding {f.rule}"))
    return tuple(out)


def timeline(record: SessionRecord) -> TimelineVM:
    summary = record.step_summary
    if summary is None:
        summary = summarize_steps(record.state.steps, record.processes)
    k = spec_tokens(record)
    next_n: int | Missing = k + 1 if k is not None else Missing("num_speculative_tokens unknown")
    limits = _limits(record, next_n)
    if summary.total_rows == 0:
        kind = record.session.kind
        reason = {"check": "a pre-flight check runs no steps",
                  "log": "a log has no per-step batch composition; record the engine with the probes (VLLM_DIAG_DB)"}.get(
            kind, "no step recorded (the engine stopped before its first step, or the probes were off)")
        return TimelineVM(0, 0, None, None, 1, False, None, (), None, (), (), (), (), next_n, limits, Missing(reason), 0)
    by_series: dict[tuple, list[StepBucket]] = {}
    for b in summary.buckets:
        by_series.setdefault((b.source, b.group_index), []).append(b)
    series = []
    for (source, group), bs in by_series.items():
        bs = sorted(bs, key=lambda b: b.first_step)
        series.append(TimelineSeries(
            source=source, group_index=group, label=_label(source, group), kind="runner" if source == RUNNER else "builder",
            x=tuple(b.first_step for b in bs), x_last=tuple(b.last_step for b in bs), decodes=tuple(b.max_decodes for b in bs),
            spec_decodes=tuple(b.max_spec_decodes for b in bs), prefills=tuple(b.max_prefills for b in bs),
            tokens=tuple(b.max_tokens for b in bs), mixed=tuple(b.mixed for b in bs), disagree=tuple(b.disagree for b in bs),
            disagrees=sum(b.disagree for b in bs)))
    series.sort(key=lambda s: (s.kind != "runner", s.source, s.group_index if s.group_index is not None else -1))
    marks = []
    for m in summary.marks:
        label = _label(m.source, m.group_index)
        if m.kind == "mixed":
            text = f"{m.num_decodes} decodes + {m.num_spec_decodes} spec decodes in one step ({label})"
        else:
            r = m.runner or [0, 0, 0]
            text = (f"{label} splits {m.num_decodes}/{m.num_spec_decodes}/{m.num_prefills} (decodes/spec/prefills), "
                    f"the runner {r[0]}/{r[1]}/{r[2]}")
        marks.append(StepMarkVM(step=m.step_index, kind=m.kind, source=m.source, label=label, text=text,
                                anchor=step_anchor(m.step_index)))
    marks = _failed_marks(record) + marks  # the step a recorded error happened in leads, whatever the mark limit kept
    recent = _recent(summary)
    others = [p for p in summary.pids if p != summary.pid]
    ranks = {p.pid: p.rank for p in record.processes}
    note = None
    if others:
        note = (f"drawn: pid {summary.pid}" + (f" (rank {ranks[summary.pid]})" if ranks.get(summary.pid) is not None else "")
                + "; also recorded steps: " + ", ".join(f"pid {p}" + (f" (rank {ranks[p]})" if ranks.get(p) is not None else "")
                                                         for p in others))
    return TimelineVM(
        total_rows=summary.total_rows, total_steps=summary.total_steps, first_step=summary.first_step,
        last_step=summary.last_step, width=summary.width, downsampled=summary.width > 1, pid=summary.pid,
        pids=tuple(summary.pids), process_note=note, series=tuple(series), marks=tuple(marks),
        mark_counts=tuple(sorted(summary.mark_counts.items())), recent=recent, next_n=next_n, limits=limits, missing=None,
        last_rowid=summary.last_rowid)


def _failed_marks(record: SessionRecord) -> list[StepMarkVM]:
    """A step a recorded error happened in (the probes attach the runner's row of that step to the error,
    ``numbers["step"]``): marked ``failed`` with the error and the runner's split, so a long session whose
    mixed/disagree marks were cut at ``MARK_LIMIT`` still marks the step that failed."""
    out: list[StepMarkVM] = []
    seen: set[int] = set()
    for e in record.state.errors:
        s = (e.numbers or {}).get("step") if e.phase == "step" else None
        if not isinstance(s, dict) or not isinstance(s.get("step_index"), int) or s["step_index"] in seen:
            continue
        i = s["step_index"]
        seen.add(i)
        d, sd, p = (int(s.get(k) or 0) for k in ("num_decodes", "num_spec_decodes", "num_prefills"))
        first = (e.message or "").strip().splitlines()[0][:120] if (e.message or "").strip() else ""
        text = (f"{e.exc_type.rsplit('.', 1)[-1]}{': ' + first if first else ''} -- the runner's split "
                f"{d}/{sd}/{p} (decodes/spec/prefills)" + ("; decodes + spec decodes mixed" if d and sd else ""))
        out.append(StepMarkVM(step=i, kind="failed", source=RUNNER, label=RUNNER, text=text, anchor=step_anchor(i)))
    return out


def _recent(summary: StepSummary) -> tuple[TimelineRow, ...]:
    tail = summary.tail
    if not tail:
        return ()
    steps = sorted({s.step_index for s in tail})[-RECENT_STEPS:]
    keep = set(steps)
    runner = {s.step_index: s for s in tail if s.builder is None}
    rows = []
    for s in sorted(tail, key=lambda s: s.step_index):
        if s.step_index not in keep:
            continue
        d, sd, p = split3(s)
        mark = "mixed" if d > 0 and sd > 0 else ""
        if s.builder is not None:
            r = runner.get(s.step_index)
            if r is not None and split3(r) == (d, sd, p):
                continue  # agrees with the runner: not printed twice
            extra = "builder only (no runner row)" if r is None else (
                "disagrees with the runner (runner %d/%d/%d)" % split3(r))
            mark = (mark + "; " if mark else "") + extra
        rows.append(TimelineRow(step=s.step_index, source=source_of(s), label=_label(source_of(s), s.group_index),
                                kind="runner" if s.builder is None else "builder", reqs=s.num_reqs or 0, decodes=d,
                                spec_decodes=sd, prefills=p, tokens=s.num_tokens or 0, mark=mark,
                                anchor=step_anchor(s.step_index)))
    return tuple(rows)
