"""Findings for a recorded engine session on open: the probes store facts (specs, groups, tables,
steps, errors) and, at a failure or a stop, the findings of :mod:`vllm_diag.live`'s diagnosis; a
session without stored findings (still serving, killed before it could, recorded by an older
vllm-diag) gets that same diagnosis here. Kept apart from the views and the front ends, so the
probes' own collector can use it (``probes/metrics.py``) without reaching the presentation layers.

Front ends load a session without its step rows (``Store.load(steps=False)`` or ``"summary"``: a
million-step session opens in milliseconds), but a few rules read step rows: the earlier mixed steps
of a failing one, the builders' rows of the failing step, the first mixed step of a release with the
known mixed-batch bug. Given the store, :func:`diagnose` reads exactly those rows (the trigger-kept
``step_marks`` index finds the mixed ones), so the findings are the ones ``vllm-diag diagnose``
stores from all the rows; the record returned keeps the steps it was loaded with."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

from .model import BatchStep, SessionRecord

_FIELDS = tuple(BatchStep.__dataclass_fields__)


def diagnose(record: SessionRecord, suggestions: bool = True, store=None) -> SessionRecord:
    """The record with findings: its stored ones, or (a recorded engine session that has none)
    ``vllm-diag diagnose``'s findings of it -- :func:`vllm_diag.live.diagnosis`, with the suggestions
    listed but not re-checked (that runs the pre-flight once per suggestion; what ``vllm-diag
    diagnose`` stores is re-checked), or left out with ``suggestions=False``. ``store``: the open
    store the record came from, for the step rows the rules read when the record holds none. A check
    or a post-mortem keeps what it found, none included."""
    if record.findings or record.session.kind != "engine":
        return record
    from .live import diagnosis

    read = record
    if store is not None and not record.state.steps:
        read = dataclasses.replace(record, state=dataclasses.replace(record.state, steps=steps_the_rules_read(store, record)))
    diagnosed = diagnosis(read, suggestions=suggestions, recheck=False)
    return dataclasses.replace(record, findings=diagnosed.findings, rule_failures=diagnosed.rule_failures)


def steps_the_rules_read(store, record: SessionRecord) -> list[BatchStep]:
    """The session's step rows a diagnosis reads, in the store's order (step, then insertion): every
    mixed row (decodes and spec decodes in one row: a runner's or a builder's own split) and every row
    of each recorded error's step -- the step the error carries, else the runner's last step at or
    before it."""
    db, sid = store.db, record.session.id
    rows: dict[int, dict] = {}

    def add(sql: str, params: list) -> None:
        cur = db.execute(sql, params)
        cols = [d[0] for d in cur.description]
        for r in cur.fetchall():
            row = dict(zip(cols, r))
            rows[row.pop("rowid_")] = row

    try:
        # the marks first (CROSS JOIN keeps SQLite from scanning every step row of the session instead)
        add("select b.rowid as rowid_, b.* from step_marks m cross join batch_steps b on b.session_id = m.session_id "
            "and b.pid = m.pid and b.step_index = m.step_index where m.session_id = ? and m.kind = 'mixed' "
            "and coalesce(b.num_decodes, 0) > 0 and coalesce(b.num_spec_decodes, 0) > 0", [sid])
    except sqlite3.OperationalError:  # a store from before the step rollup (schema < 4): one scan instead
        add("select rowid as rowid_, * from batch_steps where session_id = ? and coalesce(num_decodes, 0) > 0 "
            "and coalesce(num_spec_decodes, 0) > 0", [sid])
    for err in record.state.errors:
        step = (err.numbers or {}).get("step")
        index = step.get("step_index") if isinstance(step, dict) else None
        pid = "" if err.pid is None else " and pid = ?"
        if not isinstance(index, int):
            at = "" if err.at is None else " and (at is null or at <= ?)"
            found = db.execute(f"select step_index from batch_steps where session_id = ? and builder is null{pid}{at} "
                               "order by step_index desc limit 1",  # the index backwards, to the first such row
                               [sid] + ([err.pid] if err.pid is not None else []) + ([err.at] if err.at is not None else [])
                               ).fetchone()
            index = found[0] if found else None
        if isinstance(index, int):
            add(f"select rowid as rowid_, * from batch_steps where session_id = ? and step_index = ?{pid}",
                [sid, index] + ([err.pid] if err.pid is not None else []))
    out = []
    for rowid, row in sorted(rows.items(), key=lambda kv: (kv[1].get("step_index") or 0, kv[0])):
        if isinstance(row.get("spec_tokens_per_req"), str):
            row["spec_tokens_per_req"] = json.loads(row["spec_tokens_per_req"])
        out.append(BatchStep(**{k: v for k, v in row.items() if k in _FIELDS}))
    return out
