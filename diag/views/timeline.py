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

from dataclasses import dataclass, replace

from ..model import BatchStep, ProcessInfo, SessionRecord, StepBucket, StepMark, StepSummary
from .primitives import Anchor, Missing, step_anchor

MAX_POINTS = 2000  # buckets per series at most
MARK_LIMIT = 200  # marked steps kept per kind
TAIL_ROWS = 64  # last rows kept as they are
RECENT_STEPS = 10  # steps the text view prints
RUNNER = "runner"


# ----------------------------------------------------------------------------- summarising


def source_of(step: BatchStep) -> str:
    return step.builder or RUNNER


def primary_pid(pids: list[int | None], processes: list[ProcessInfo]) -> int | None:
    """The process whose steps the timeline shows: the lowest rank among step writers, then the lowest pid."""
    if not pids:
        return None
    ranks = {p.pid: p.rank for p in processes}
    return min(pids, key=lambda pid: (ranks.get(pid) if ranks.get(pid) is not None else 1 << 30, pid or 0))


def bucket_width(first: int, last: int, max_points: int = MAX_POINTS) -> int:
    span = last - first + 1
    return max(1, -(-span // max_points))


def _split(s: BatchStep) -> tuple[int, int, int]:
    return (s.num_decodes or 0, s.num_spec_decodes or 0, s.num_prefills or 0)


def summarize_steps(steps: list[BatchStep], processes: list[ProcessInfo] = (), max_points: int = MAX_POINTS,
                    mark_limit: int = MARK_LIMIT, tail_rows: int = TAIL_ROWS) -> StepSummary:
    """The same summary ``Store.step_summary`` computes in SQL, for records held in memory."""
    if not steps:
        return StepSummary()
    pids = sorted({s.pid for s in steps}, key=lambda p: p or 0)
    pid = primary_pid(pids, list(processes))
    mine = [s for s in steps if s.pid == pid]
    first = min(s.step_index for s in mine)
    last = max(s.step_index for s in mine)
    width = bucket_width(first, last, max_points)
    runner = {}
    for s in mine:
        if s.builder is None:
            runner.setdefault(s.step_index, _split(s))
    buckets: dict[tuple, StepBucket] = {}
    marks: list[StepMark] = []
    counts = {"mixed": 0, "disagree": 0}
    for s in sorted(mine, key=lambda s: s.step_index):
        d, sd, p = _split(s)
        key = ((s.step_index - first) // width, source_of(s), s.group_index)
        b = buckets.get(key)
        mixed = d > 0 and sd > 0
        r = runner.get(s.step_index) if s.builder is not None else None
        disagree = r is not None and r != (d, sd, p)
        if b is None:
            b = buckets[key] = StepBucket(source=source_of(s), group_index=s.group_index, pid=pid, first_step=s.step_index,
                                          last_step=s.step_index, rows=0)
        b.first_step = min(b.first_step, s.step_index)
        b.last_step = max(b.last_step, s.step_index)
        b.rows += 1
        b.max_reqs = max(b.max_reqs, s.num_reqs or 0)
        b.max_decodes = max(b.max_decodes, d)
        b.max_spec_decodes = max(b.max_spec_decodes, sd)
        b.max_prefills = max(b.max_prefills, p)
        b.max_tokens = max(b.max_tokens, s.num_tokens or 0)
        b.sum_tokens += s.num_tokens or 0
        b.mixed += mixed
        b.disagree += disagree
        for kind, hit in (("mixed", mixed), ("disagree", disagree)):
            if hit:
                counts[kind] += 1
                if counts[kind] <= mark_limit:
                    marks.append(StepMark(step_index=s.step_index, kind=kind, source=source_of(s), group_index=s.group_index,
                                          pid=pid, num_reqs=s.num_reqs or 0, num_decodes=d, num_spec_decodes=sd,
                                          num_prefills=p, num_tokens=s.num_tokens or 0,
                                          runner=list(r) if (kind == "disagree" and r is not None) else None))
    ordered = sorted(buckets.values(), key=lambda b: (b.source != RUNNER, b.source, b.group_index if b.group_index is not None
                                                      else -1, b.first_step))
    marks.sort(key=lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1))
    tail = sorted(mine, key=lambda s: s.step_index)[-tail_rows:]
    return StepSummary(total_rows=len(steps), total_steps=len({s.step_index for s in mine}), first_step=first, last_step=last,
                       width=width, pid=pid, pids=[p for p in pids if p is not None], buckets=ordered, marks=marks,
                       mark_counts=counts, tail=tail, last_rowid=0)


def extend(summary: StepSummary, new_steps: list[BatchStep], processes: list[ProcessInfo] = (),
           last_rowid: int | None = None) -> StepSummary:
    """Fold steps recorded after ``summary`` (``Store.steps_after(sid, summary.last_rowid)``) into it.

    Keeps the bucket width while the steps fit ``MAX_POINTS`` buckets, else re-buckets by merging
    neighbours (max/sum/count are associative, so merging buckets equals bucketing the rows)."""
    if not new_steps:
        return summary if last_rowid is None else replace(summary, last_rowid=last_rowid)
    if summary.total_rows == 0:
        out = summarize_steps(new_steps, processes)
        return replace(out, last_rowid=last_rowid or 0)
    pid = summary.pid
    add = summarize_steps([s for s in new_steps if s.pid == pid], processes=[ProcessInfo(pid=pid or 0, rank=0)] if pid else [],
                          max_points=1 << 62, mark_limit=MARK_LIMIT)
    # rows of the new batch whose runner row was recorded earlier cannot be compared here: they count as agreeing
    first = summary.first_step if add.first_step is None else min(summary.first_step, add.first_step)
    last = summary.last_step if add.last_step is None else max(summary.last_step, add.last_step)
    width = summary.width
    while bucket_width(first, last) > width:
        width *= 2
    merged: dict[tuple, StepBucket] = {}
    for b in list(summary.buckets) + list(add.buckets):
        key = ((b.first_step - first) // width, b.source, b.group_index)
        m = merged.get(key)
        if m is None:
            merged[key] = replace(b)
            continue
        merged[key] = StepBucket(source=b.source, group_index=b.group_index, pid=b.pid, first_step=min(m.first_step, b.first_step),
                                 last_step=max(m.last_step, b.last_step), rows=m.rows + b.rows,
                                 max_reqs=max(m.max_reqs, b.max_reqs), max_decodes=max(m.max_decodes, b.max_decodes),
                                 max_spec_decodes=max(m.max_spec_decodes, b.max_spec_decodes),
                                 max_prefills=max(m.max_prefills, b.max_prefills), max_tokens=max(m.max_tokens, b.max_tokens),
                                 sum_tokens=m.sum_tokens + b.sum_tokens, mixed=m.mixed + b.mixed, disagree=m.disagree + b.disagree)
    counts = {k: summary.mark_counts.get(k, 0) + add.mark_counts.get(k, 0) for k in ("mixed", "disagree")}
    marks = list(summary.marks)
    for m in add.marks:
        if sum(x.kind == m.kind for x in marks) < MARK_LIMIT:
            marks.append(m)
    marks.sort(key=lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1))
    pids = sorted(set(summary.pids) | {s.pid for s in new_steps if s.pid is not None})
    tail = (list(summary.tail) + sorted([s for s in new_steps if s.pid == pid], key=lambda s: s.step_index))[-TAIL_ROWS:]
    steps_seen = summary.total_steps + len({s.step_index for s in new_steps if s.pid == pid} -
                                          {s.step_index for s in summary.tail})
    ordered = sorted(merged.values(), key=lambda b: (b.source != RUNNER, b.source, b.group_index if b.group_index is not None
                                                     else -1, b.first_step))
    return StepSummary(total_rows=summary.total_rows + len(new_steps), total_steps=steps_seen, first_step=first, last_step=last,
                       width=width, pid=pid, pids=pids, buckets=ordered, marks=marks, mark_counts=counts, tail=tail,
                       last_rowid=last_rowid if last_rowid is not None else summary.last_rowid)


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
    kind: str  # mixed | disagree
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
    name: str
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
                out.append(KernelLimitVM(name=f"{builder or key} (group {gi}) reorder_batch_threshold: a request of up to "
                                         f"this many tokens is a decode", limit=thr, next_n=next_n, ok=ok,
                                         source="recorded builder attributes"))
    for f in record.findings:
        if f.category != "spec_kernel_limit":
            continue
        allowed = f.numbers.get("allowed_next_n")
        n = f.numbers.get("next_n", next_n)
        if isinstance(allowed, list) and allowed:
            lim = max(a for a in allowed if isinstance(a, int))
            ok = (n in allowed) if isinstance(n, int) else Missing("next_n unknown")
            out.append(KernelLimitVM(name=f"{f.rule}: next_n allowed {sorted(allowed)}", limit=lim,
                                     next_n=n if isinstance(n, int) else next_n, ok=ok, source=f"finding {f.rule}"))
    return tuple(out)


def timeline(record: SessionRecord) -> TimelineVM:
    summary = record.step_summary
    if summary is None:
        summary = summarize_steps(record.state.steps, record.processes)
    cfg = record.state.config if record.state.config else (record.predicted.config if record.predicted else {})
    k = cfg.get("num_speculative_tokens")
    if k is None and record.log is not None:
        k = record.log.args.get("num_speculative_tokens")
    if k is None and cfg.get("model") and not cfg.get("speculative_method") and not cfg.get("speculative_config"):
        k = 0  # a known engine config without speculative decoding
    next_n: int | Missing = (k + 1) if isinstance(k, int) and not isinstance(k, bool) else Missing(
        "num_speculative_tokens unknown")
    if isinstance(k, int) and k == 0:
        next_n = 1
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
        d, sd, p = _split(s)
        mark = "mixed" if d > 0 and sd > 0 else ""
        if s.builder is not None:
            r = runner.get(s.step_index)
            if r is not None and _split(r) == (d, sd, p):
                continue  # agrees with the runner: not printed twice
            extra = "builder only (no runner row)" if r is None else (
                "disagrees with the runner (runner %d/%d/%d)" % _split(r))
            mark = (mark + "; " if mark else "") + extra
        rows.append(TimelineRow(step=s.step_index, source=source_of(s), label=_label(source_of(s), s.group_index),
                                kind="runner" if s.builder is None else "builder", reqs=s.num_reqs or 0, decodes=d,
                                spec_decodes=sd, prefills=p, tokens=s.num_tokens or 0, mark=mark,
                                anchor=step_anchor(s.step_index)))
    return tuple(rows)
