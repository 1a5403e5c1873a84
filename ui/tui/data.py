"""The TUI's reads from the store: the session list and, in ``--follow``, the rows added since the
last poll. Nothing here draws or decides what is shown; pictures come from ``vllm_diag.views``.

Every function takes an open :class:`vllm_diag.store.Store`. SQLite connections belong to the
thread that opened them, so the follow worker opens its own store (:meth:`Tail.open`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_diag.api import diagnose
from vllm_diag.errors import DiagError
from vllm_diag.model import SEVERITIES, BatchStep
from vllm_diag.store import Store


@dataclass(frozen=True)
class SessionRow:
    """One line of the sessions screen."""

    id: str
    kind: str
    status: str
    started_at: float | None
    model: str
    vllm_version: str
    gpu: str
    findings: dict[str, int]  # severity -> count
    errors: int
    steps: int
    label: str | None = None

    @property
    def started(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.started_at)) if self.started_at else "-"

    def matches(self, text: str) -> bool:
        """Case-insensitive filter over every shown column (all words must match)."""
        hay = " ".join(
            [self.id, self.kind, self.status, self.model, self.vllm_version, self.gpu, self.label or "", self.started]
        ).lower()
        return all(word in hay for word in text.lower().split())


def _gpu_name(values: dict[str, Any]) -> str:
    """The GPU as the session knows it: a pre-flight's ``gpu`` (given with ``--gpu``), a recorded
    engine's NVML ``gpus`` list, or ``-``."""
    gpu = values.get("gpu")
    if isinstance(gpu, str) and gpu:
        count = values.get("gpu_count")
        return f"{count}x {gpu}" if isinstance(count, int) and count > 1 else gpu
    gpus = values.get("gpus")
    if isinstance(gpus, list) and gpus:
        names = [g.get("name", "?") for g in gpus if isinstance(g, dict)]
        if names:
            first = names[0].removeprefix("NVIDIA ")
            return f"{len(names)}x {first}" if len(names) > 1 else first
    return "-"


def _count_by_session(store: Store, table: str) -> dict[str, int]:
    return dict(store.db.execute(f"select session_id, count(*) from {table} group by session_id").fetchall())


def session_rows(store: Store) -> list[SessionRow]:
    """Every session, newest first, with its counts (a handful of GROUP BY queries, no record load)."""
    findings: dict[str, dict[str, int]] = {}
    for sid, severity, n in store.db.execute(
        "select session_id, severity, count(*) from findings group by session_id, severity"
    ).fetchall():
        findings.setdefault(sid, {})[severity] = n
    errors = _count_by_session(store, "errors")
    steps = _count_by_session(store, "batch_steps")
    env: dict[str, dict[str, Any]] = {}
    for sid, key, value in store.db.execute(
        "select session_id, key, value from environment where key in ('gpu', 'gpus', 'gpu_count') order by pid"
    ).fetchall():
        try:
            env.setdefault(sid, {}).setdefault(key, json.loads(value) if value else None)
        except ValueError:
            continue
    rows = []
    for s in reversed(store.sessions()):
        counts = findings.get(s.id, {})
        rows.append(
            SessionRow(
                id=s.id,
                kind=s.kind,
                status=s.status,
                started_at=s.started_at,
                model=s.model or s.source or "-",
                vllm_version=s.vllm_version or "?",
                gpu=_gpu_name(env.get(s.id, {})),
                findings={sev: counts.get(sev, 0) for sev in SEVERITIES},
                errors=errors.get(s.id, 0),
                steps=steps.get(s.id, 0),
                label=s.label,
            )
        )
    return rows


def open_store(path: str | os.PathLike) -> Store:
    """Open ``path`` read-only; a missing file, another application's SQLite file or a newer schema
    is a :class:`DiagError` with one line to show."""
    return Store.open(Path(path))


@dataclass(frozen=True)
class Marks:
    """Where a loaded record ends: the largest rowids of the append-only tables, the findings'
    (count, largest id) and the status, all read in the record's own read transaction."""

    step_rowid: int
    error_rowid: int
    findings_key: tuple[int, int]
    status: str | None


def _marks(store: Store, sid: str) -> Marks:
    db = store.db
    step = db.execute("select coalesce(max(rowid), 0) from batch_steps where session_id = ?", [sid]).fetchone()[0]
    err = db.execute("select coalesce(max(rowid), 0) from errors where session_id = ?", [sid]).fetchone()[0]
    fkey = tuple(db.execute("select count(*), coalesce(max(id), 0) from findings where session_id = ?", [sid]).fetchone())
    row = db.execute("select status from sessions where id = ?", [sid]).fetchone()
    return Marks(step, err, fkey, row[0] if row else None)


def load_record(store: Store, session_id: str):
    """The session without its steps (``Store.load(steps=False)``: milliseconds however many steps
    it has), diagnosed: what the first paint shows."""
    return diagnose(store.load(session_id, steps=False), store=store)


def load_snapshot(store: Store, session_id: str):
    """``(record, marks)`` read in one read transaction (one WAL snapshot), so ``--follow`` starts
    exactly after what the record holds. The record carries the store's step summary (SQL
    GROUP BY over the trigger-kept rollup), not a million ``BatchStep`` objects."""
    conn = store.db.conn
    conn.execute("BEGIN")
    try:
        sid = store.resolve_session(session_id)
        marks = _marks(store, sid)
        record = store.load(sid, steps="summary")
    finally:
        conn.execute("COMMIT")
    # a recorded engine stores facts, not findings: the rules run on it here, as for `show --diagnose`
    return diagnose(record, store=store), marks


# ---------------------------------------------------------------------------------------- follow


@dataclass
class Delta:
    """What one poll found: rows added since the previous poll, plus changed session facts."""

    steps: list = field(default_factory=list)  # BatchStep objects (Store.steps_after), oldest first
    step_rowid: int = 0  # the rowid of the last of them
    errors: list[dict[str, Any]] = field(default_factory=list)  # errors rows
    findings_changed: bool = False
    status: str | None = None  # the session's status when it changed
    sessions_changed: bool = False

    def __bool__(self) -> bool:
        return bool(self.steps or self.errors or self.findings_changed or self.status or self.sessions_changed)


# BatchStep's fields in their order, but spec_tokens_per_req (JSON the timeline does not read)
_STEP_COLUMNS = ("step_index", "num_reqs", "num_decodes", "num_spec_decodes", "num_prefills", "num_decode_tokens",
                 "num_spec_decode_tokens", "num_prefill_tokens", "num_tokens", "null", "builder", "group_index", "at",
                 "pid")


class Tail:
    """Reads only what was added since the last poll (``rowid > last``), for ``--follow``.

    ``batch_steps`` and ``errors`` are append-only, and ``WHERE session_id = ? AND rowid > ?`` is a
    range scan of the ``session_id`` index (SQLite indexes carry the rowid), so one poll costs the
    new rows only, however long the session. Findings are replaced as a whole by their writer
    (``Store.add_findings``), so a change of their count or largest id triggers one reload.
    """

    def __init__(self, store: Store, session_id: str | None, max_rows: int = 50_000):
        self.store = store
        self.session_id = session_id
        self.max_rows = max_rows  # per poll and table; the rest comes next poll
        self.last_step_rowid = 0
        self.last_error_rowid = 0
        self.findings_key: tuple[int, int] | None = None
        self.status: str | None = None
        self.sessions_key: tuple[int, str | None] | None = None

    @classmethod
    def open(cls, path: str | os.PathLike, session_id: str | None, **kw) -> Tail:
        return cls(open_store(path), session_id, **kw)

    def close(self) -> None:
        self.store.close()

    def set_marks(self, marks: Marks) -> None:
        """Start after what a :func:`load_snapshot` record holds."""
        self.last_step_rowid = marks.step_rowid
        self.last_error_rowid = marks.error_rowid
        self.findings_key = marks.findings_key
        self.status = marks.status
        self.sessions_key = self._sessions_key()

    def start_at_end(self) -> None:
        """Skip what is already there (the screen loaded it): later polls return only new rows."""
        if self.session_id is None:
            self.sessions_key = self._sessions_key()
            return
        db = self.store.db
        self.last_step_rowid = db.execute(
            "select coalesce(max(rowid), 0) from batch_steps where session_id = ?", [self.session_id]
        ).fetchone()[0]
        self.last_error_rowid = db.execute(
            "select coalesce(max(rowid), 0) from errors where session_id = ?", [self.session_id]
        ).fetchone()[0]
        self.findings_key = self._findings_key()
        self.status = self._status()
        self.sessions_key = self._sessions_key()

    def _findings_key(self) -> tuple[int, int]:
        return tuple(
            self.store.db.execute(
                "select count(*), coalesce(max(id), 0) from findings where session_id = ?", [self.session_id]
            ).fetchone()
        )

    def _status(self) -> str | None:
        row = self.store.db.execute("select status from sessions where id = ?", [self.session_id]).fetchone()
        return row[0] if row else None

    def _sessions_key(self) -> tuple[int, str | None]:
        # count and the newest id, plus a digest of statuses (a session turning failed shows in the list)
        n, newest = self.store.db.execute("select count(*), max(id) from sessions").fetchone()
        statuses = self.store.db.execute("select group_concat(status, ',') from sessions").fetchone()[0]
        return (n, f"{newest}|{statuses}")

    def _steps_after(self) -> tuple[list[BatchStep], int]:
        """``Store.steps_after`` for the follow loop, built positionally (at 1,000 steps/s the
        generic row -> dataclass path costs more than everything else a poll does); the same rows,
        the same ``BatchStep`` objects. ``spec_tokens_per_req`` is not needed by the timeline and
        is left out."""
        cur = self.store.db.execute(
            f"select rowid, {', '.join(_STEP_COLUMNS)} from batch_steps where session_id = ? and rowid > ? "
            "order by rowid limit ?", [self.session_id, self.last_step_rowid, self.max_rows])
        rows = cur.fetchall()
        if not rows:
            return [], self.last_step_rowid
        return [BatchStep(*r[1:]) for r in rows], rows[-1][0]

    def _new_rows(self, table: str, after: int) -> list[dict[str, Any]]:
        cur = self.store.db.execute(
            f"select rowid as _rowid, * from {table} where session_id = ? and rowid > ? order by rowid limit ?",
            [self.session_id, after, self.max_rows],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def poll(self) -> Delta:
        """Everything new since the last poll, read in one read transaction (one snapshot of the
        file). The positions move on only when every read succeeded, so a poll that fails
        (a busy or briefly unreadable file) loses nothing: the next one reads the same rows."""
        # A fresh connection each poll: a reader connection kept open across a writer's
        # checkpoints can be left with a stale view of the WAL ("database disk image is malformed"
        # was seen following a live engine); opening costs about a millisecond.
        self.reopen()
        conn = self.store.db.conn
        conn.execute("BEGIN")
        try:
            delta = Delta()
            sessions_key = self._sessions_key()
            delta.sessions_changed = sessions_key != self.sessions_key
            if self.session_id is not None:
                steps, last = self._steps_after()
                errors = self._new_rows("errors", self.last_error_rowid)
                for row in errors:
                    for col in ("notes", "numbers"):
                        row[col] = json.loads(row[col]) if row.get(col) else None
                fkey = self._findings_key()
                status = self._status()
        finally:
            conn.execute("COMMIT")
        self.sessions_key = sessions_key
        if self.session_id is None:
            return delta
        if steps:
            self.last_step_rowid = last
            delta.steps, delta.step_rowid = steps, last
        if errors:
            self.last_error_rowid = errors[-1]["_rowid"]
            delta.errors = errors
        if fkey != self.findings_key:
            self.findings_key = fkey
            delta.findings_changed = True
        if status != self.status:
            self.status = status
            delta.status = status
        return delta

    def reopen(self) -> None:
        """A fresh connection at the same positions."""
        try:
            self.store.close()
        except Exception:  # the old connection may be unusable; a new one is what matters
            pass
        self.store = open_store(self.store.path)


def follow_loop(tail: Tail, interval: float, cancelled, post, failed, max_failures: int = 40) -> None:
    """Poll ``tail`` every ``interval`` seconds until ``cancelled()``; ``post(delta)`` each
    non-empty delta. A poll that raises (SQLITE_BUSY past the timeout, a page caught mid-write,
    a file being replaced) is retried on a fresh connection; ``failed(reason)`` ends the loop after
    ``max_failures`` failures in a row or when the file is gone."""
    failures = 0
    while not cancelled():
        started = time.monotonic()
        try:
            delta = tail.poll()
            failures = 0
        except Exception as exc:  # noqa: BLE001 - any read error: retry, then say why we stopped
            failures += 1
            gone = not Path(tail.store.path).exists()
            if gone or failures >= max_failures:
                failed(f"{tail.store.path}: cannot read any more ({'file removed' if gone else exc})")
                return
            try:
                tail.reopen()
            except DiagError as reopen_exc:
                if failures + 1 >= max_failures:
                    failed(str(reopen_exc))
                    return
            delta = None
        if delta:
            post(delta)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))


__all__ = ["Delta", "DiagError", "Marks", "SessionRow", "Tail", "follow_loop", "load_record", "load_snapshot", "open_store", "session_rows"]
