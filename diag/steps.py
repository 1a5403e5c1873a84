"""Batch steps aggregated for a timeline: buckets per source (the runner, or one builder of one KV
group) of one process, marked steps, the last rows. Pure (stdlib + the model): the store computes
the same :class:`~vllm_diag.model.StepSummary` in SQL (``Store.step_summary``), records held in
memory use :func:`summarize_steps`, a live view folds new rows in with :func:`extend`.

Semantics both implement:

* the drawn process is the step writer with the lowest rank (then the lowest pid);
* buckets are ``step_index // width``; ``width`` is a power of two (:func:`bucket_width`), so
  the store's 64-step rollup merges into them and a growing timeline only ever doubles its width;
* a row is *mixed* when it has decodes and spec decodes; a builder row *disagrees* with each
  runner row of the same step and process whose (decodes, spec decodes, prefills) differ.
"""

from __future__ import annotations

from dataclasses import replace

from .model import BatchStep, ProcessInfo, StepBucket, StepMark, StepSummary

MAX_POINTS = 2000  # buckets per series at most
MARK_LIMIT = 200  # marked steps kept per kind
TAIL_ROWS = 64  # last rows kept as they are
RUNNER = "runner"


def source_of(step: BatchStep) -> str:
    return step.builder or RUNNER


def primary_pid(pids: list[int | None], processes: list[ProcessInfo]) -> int | None:
    """The process whose steps the timeline shows: the lowest rank among step writers, then the lowest pid."""
    if not pids:
        return None
    ranks = {p.pid: p.rank for p in processes}
    return min(pids, key=lambda pid: (ranks.get(pid) if ranks.get(pid) is not None else 1 << 30, pid or 0))


def bucket_width(first: int, last: int, max_points: int = MAX_POINTS) -> int:
    """Steps per bucket: the smallest power of two that draws ``first..last`` in at most about
    ``max_points`` buckets. Buckets are aligned (``step // width``), so the store's 64-step rollup
    merges into them and a live timeline only ever doubles its width."""
    span = last - first + 1
    width = 1
    while -(-span // width) > max_points:
        width *= 2
    return width


def split3(s: BatchStep) -> tuple[int, int, int]:
    return (s.num_decodes or 0, s.num_spec_decodes or 0, s.num_prefills or 0)


def window_bounds(first: int, last: int, first_step: int | None, last_step: int | None,
                  max_points: int) -> tuple[int, int, int]:
    """(width, lo, hi): the bucket width for the requested window and the window widened to whole buckets."""
    lo_req = first if first_step is None else max(first, first_step)
    hi_req = last if last_step is None else min(last, last_step)
    if hi_req < lo_req:
        hi_req = lo_req
    width = bucket_width(lo_req, hi_req, max_points)
    return width, lo_req // width * width, (hi_req // width + 1) * width - 1


def summarize_steps(steps: list[BatchStep], processes: list[ProcessInfo] = (), max_points: int = MAX_POINTS,
                    mark_limit: int = MARK_LIMIT, tail_rows: int = TAIL_ROWS, first_step: int | None = None,
                    last_step: int | None = None) -> StepSummary:
    """The same summary ``Store.step_summary`` computes in SQL, for records held in memory.
    ``first_step``/``last_step``: only that window (widened to whole buckets), at its own width."""
    if not steps:
        return StepSummary()
    pids = sorted({s.pid for s in steps}, key=lambda p: p or 0)
    pid = primary_pid(pids, list(processes))
    mine = [s for s in steps if s.pid == pid]
    width, lo, hi = window_bounds(min(s.step_index for s in mine), max(s.step_index for s in mine), first_step,
                                  last_step, max_points)
    windowed = first_step is not None or last_step is not None
    if windowed:
        steps = [s for s in steps if lo <= s.step_index <= hi]
        mine = [s for s in mine if lo <= s.step_index <= hi]
        if not mine:
            return StepSummary(width=width, pid=pid, pids=[p for p in pids if p is not None])
    first = min(s.step_index for s in mine)
    last = max(s.step_index for s in mine)
    runner: dict[int, list[tuple[int, int, int]]] = {}
    for s in mine:
        if s.builder is None:
            runner.setdefault(s.step_index, []).append(split3(s))
    buckets: dict[tuple, StepBucket] = {}
    marks: list[StepMark] = []
    counts = {"mixed": 0, "disagree": 0}
    for s in sorted(mine, key=lambda s: s.step_index):
        d, sd, p = split3(s)
        key = (s.step_index // width, source_of(s), s.group_index)
        b = buckets.get(key)
        mixed = d > 0 and sd > 0
        differing = [r for r in runner.get(s.step_index, ())] if s.builder is not None else []
        differing = [r for r in differing if r != (d, sd, p)]
        disagree = len(differing)  # (builder row, runner row) pairs that differ, as the store's triggers count them
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
        hits = [("mixed", None)] if mixed else []
        hits += [("disagree", list(r)) for r in differing]
        for kind, other in hits:
            counts[kind] += 1
            if counts[kind] <= mark_limit:
                marks.append(StepMark(step_index=s.step_index, kind=kind, source=source_of(s), group_index=s.group_index,
                                      pid=pid, num_reqs=s.num_reqs or 0, num_decodes=d, num_spec_decodes=sd,
                                      num_prefills=p, num_tokens=s.num_tokens or 0, runner=other))
    ordered = sorted(buckets.values(), key=lambda b: (b.source != RUNNER, b.source, b.group_index if b.group_index is not None
                                                      else -1, b.first_step))
    marks.sort(key=lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1))
    tail = sorted(mine, key=lambda s: s.step_index)[-tail_rows:]
    return StepSummary(total_rows=len(steps), total_steps=len({s.step_index for s in mine}), first_step=first, last_step=last,
                       width=width, pid=pid, pids=[p for p in pids if p is not None], buckets=ordered, marks=marks,
                       mark_counts=counts, tail=tail, last_rowid=0)


def _merge(m: StepBucket, b: StepBucket) -> StepBucket:
    """Two buckets of one source as one (max/sum/count are associative)."""
    return StepBucket(source=b.source, group_index=b.group_index, pid=b.pid, first_step=min(m.first_step, b.first_step),
                      last_step=max(m.last_step, b.last_step), rows=m.rows + b.rows,
                      max_reqs=max(m.max_reqs, b.max_reqs), max_decodes=max(m.max_decodes, b.max_decodes),
                      max_spec_decodes=max(m.max_spec_decodes, b.max_spec_decodes),
                      max_prefills=max(m.max_prefills, b.max_prefills), max_tokens=max(m.max_tokens, b.max_tokens),
                      sum_tokens=m.sum_tokens + b.sum_tokens, mixed=m.mixed + b.mixed, disagree=m.disagree + b.disagree)


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
    width = max(width, bucket_width(first, last))
    if width == summary.width:
        # the width holds (the common live case): the old buckets stay as they are (they are not
        # changed in place, so sharing them is safe) and only the new steps' buckets merge in, so a
        # poll costs the new rows, not the whole session's buckets
        ordered = list(summary.buckets)
        at = {(b.first_step // width, b.source, b.group_index): i for i, b in enumerate(ordered)}
        appended = False
        for b in add.buckets:
            key = (b.first_step // width, b.source, b.group_index)
            i = at.get(key)
            if i is None:
                at[key] = len(ordered)
                ordered.append(replace(b))
                appended = True
            else:
                ordered[i] = _merge(ordered[i], b)
        if appended:
            ordered.sort(key=lambda b: (b.source != RUNNER, b.source, b.group_index if b.group_index is not None else -1,
                                        b.first_step))
        merged = None
    else:
        merged = {}
        for b in list(summary.buckets) + list(add.buckets):
            key = (b.first_step // width, b.source, b.group_index)
            m = merged.get(key)
            merged[key] = replace(b) if m is None else _merge(m, b)
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
    if merged is not None:
        ordered = sorted(merged.values(), key=lambda b: (b.source != RUNNER, b.source,
                                                         b.group_index if b.group_index is not None else -1, b.first_step))
    return StepSummary(total_rows=summary.total_rows + len(new_steps), total_steps=steps_seen, first_step=first, last_step=last,
                       width=width, pid=pid, pids=pids, buckets=ordered, marks=marks, mark_counts=counts, tail=tail,
                       last_rowid=last_rowid if last_rowid is not None else summary.last_rowid)


def window(summary: StepSummary, first_step: int, last_step: int, max_points: int = MAX_POINTS) -> StepSummary | None:
    """Steps ``first_step..last_step`` of a loaded ``summary`` as ``Store.step_summary(sid,
    first_step=, last_step=, max_points=)`` gives them -- the same width, buckets (widened to whole
    buckets), step and row counts, first/last step, mark counts and marks -- merged in memory, for a
    zoomed-out view. ``None`` when the summary cannot say that window exactly, so it must be read
    from the store:

    * the window needs buckets finer than ``summary.width``;
    * its distinct steps are not known: ``summary.width`` > 1 and the drawn process's steps are not
      every step of ``first_step..last_step`` (a gap or a step recorded twice);
    * other processes recorded steps too (the store's row count counts their rows; the buckets are
      the drawn process's only);
    * the summary's marks were cut at ``MARK_LIMIT`` inside or before the window, so it holds fewer of
      the window's marks than the store's window has (``MARK_LIMIT`` of each kind).

    The last rows (``tail``) are the summary's where the window reaches the session's last step;
    a window that ends earlier has none (the summary does not hold them)."""
    if summary.first_step is None or summary.last_step is None:
        return None
    width, lo, hi = window_bounds(summary.first_step, summary.last_step, first_step, last_step, max_points)
    if width < summary.width:
        return None
    if any(p != summary.pid for p in summary.pids):
        return None
    if lo > summary.last_step or hi < summary.first_step:
        return StepSummary(width=width, pid=summary.pid, pids=list(summary.pids))
    contiguous = summary.total_steps == summary.last_step - summary.first_step + 1
    if summary.width > 1 and not contiguous:
        return None
    merged: dict[tuple, StepBucket] = {}
    stepped: set[int] = set()  # summary.width 1: one step per bucket
    for b in summary.buckets:
        if b.first_step // width * width < lo or b.first_step > hi:  # summary buckets nest in the window's
            continue
        if not contiguous:
            stepped.add(b.first_step)
        key = (b.first_step // width, b.source, b.group_index)
        m = merged.get(key)
        merged[key] = replace(b) if m is None else _merge(m, b)
    buckets = sorted(merged.values(), key=lambda b: (b.source != RUNNER, b.source,
                                                     b.group_index if b.group_index is not None else -1, b.first_step))
    if not buckets:
        return StepSummary(width=width, pid=summary.pid, pids=list(summary.pids))
    counts = {"mixed": sum(b.mixed for b in buckets), "disagree": sum(b.disagree for b in buckets)}
    marks = []
    for kind, n in counts.items():
        held = [m for m in summary.marks if m.kind == kind and lo <= m.step_index <= hi]
        # the summary holds the session's first MARK_LIMIT marks of a kind (in step order): those of
        # the window are all of them, or the store's first MARK_LIMIT of it when all of those are held
        if len(held) < min(n, MARK_LIMIT):
            return None
        marks += held[:MARK_LIMIT]
    marks.sort(key=lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1))
    first = min(b.first_step for b in buckets)
    last = max(b.last_step for b in buckets)
    steps = last - first + 1 if contiguous else len(stepped)
    tail = [s for s in summary.tail if lo <= s.step_index <= hi] if hi >= summary.last_step else []
    return replace(summary, width=width, buckets=buckets, marks=marks, first_step=first, last_step=last,
                   mark_counts=counts, total_rows=sum(b.rows for b in buckets), total_steps=steps, tail=tail)
