"""A read-only index of the sessions in many vllm-diag DBs: the dashboard's fleet page and
``vllm-diag exporter`` read it.

Sources are DB files and folders (a folder of per-host DBs, searched recursively for ``*.db``,
``*.sqlite``, ``*.sqlite3``); a DB that appears in a folder later is picked up at the next
:meth:`Fleet.refresh`. Every DB is opened read-only through :class:`vllm_diag.store.Store`; a
missing, foreign or too-new file becomes a :class:`SourceProblem` with the store's one-line reason.

A refresh costs O(new rows), not a rescan: per DB, ``PRAGMA data_version`` (a constant-time check)
says whether anything was committed since the last look; only then are the small tables re-read
(sessions, findings and errors counts, GPU facts) and, for ``batch_steps``, only the rows after the
last rowid seen (``rowid > ?``, a range of the table's b-tree). The last step of a session seen for
the first time is read from the end of its ``session_id`` index (O(log n)), so a 1,000,000-step
session costs no more than a short one.

SQLite connections belong to the thread that opened them: all long-lived connections live on one
worker thread, and every public method is safe to call from any thread (Dash serves each request
on its own thread). :meth:`Fleet.open_store` hands a caller its own short-lived read-only store.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import DiagError
from .model import CATEGORIES, SEVERITIES

DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


@dataclass(frozen=True)
class FleetRow:
    """One session of the fleet (what the fleet table shows)."""

    db_key: str  # opaque id of the DB file (URLs carry this, never a path)
    db_name: str  # the file's name relative to the source it came from
    session: str
    kind: str
    status: str
    host: str
    model: str
    vllm_version: str
    gpu: str
    label: str
    started_at: float | None
    findings: tuple[int, int, int]  # error, warning, info
    by_category: tuple[tuple[str, str, int], ...]  # (category, severity, n), non-zero only
    errors: int
    last_step: int | None
    findings_source: str = "stored"  # stored | computed on open (rules run on a recorded engine's state)

    @property
    def key(self) -> str:
        return f"{self.db_key}/{self.session}"

    @property
    def worst(self) -> str:
        for sev, n in zip(SEVERITIES, self.findings):
            if n:
                return sev
        return "none"


@dataclass(frozen=True)
class SourceProblem:
    name: str  # the file or folder as given (relative names stay relative)
    message: str


@dataclass(frozen=True)
class FleetSnapshot:
    generation: int  # grows by one whenever any row or problem changed
    rows: tuple[FleetRow, ...] = ()
    problems: tuple[SourceProblem, ...] = ()
    refreshed_at: float = 0.0
    rows_read: int = 0  # batch_steps rows the last refresh read (benchmarks check O(new rows))

    def row(self, db_key: str, session: str) -> FleetRow | None:
        return next((r for r in self.rows if r.db_key == db_key and r.session == session), None)


def db_key_for(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]


def _gpu_from_env(values: dict[str, Any]) -> str:
    from .metrics import gpu_name

    return gpu_name(values)


@dataclass
class _Db:
    path: Path
    name: str
    key: str
    store: Any = None
    problem: str | None = None
    stat: tuple | None = None
    data_version: int | None = None
    last_rowid: int = 0
    sessions: list[dict] = field(default_factory=list)
    findings: dict = field(default_factory=dict)  # sid -> {(cat, sev): n}
    errors: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)  # sid -> {key: value}
    last_step: dict = field(default_factory=dict)  # sid -> int
    computed: dict = field(default_factory=dict)  # sid -> (state key, {(cat, sev): n}) from api.diagnose
    rows: tuple = ()


class Fleet:
    """``Fleet(["hosts/", "one.db"])``; ``refresh()`` then ``snapshot()``; ``close()`` at the end."""

    def __init__(self, sources: list[str | os.PathLike]):
        if not sources:
            raise DiagError("give at least one DB file or folder")
        self.sources = [Path(s) for s in sources]
        self._dbs: dict[Path, _Db] = {}
        self._problems: list[SourceProblem] = []
        self._snapshot = FleetSnapshot(generation=0)
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-diag-fleet")
        self._closed = False

    # ------------------------------------------------------------------ public (any thread)

    def refresh(self) -> FleetSnapshot:
        """Pick up new DBs and new rows; returns the new snapshot."""
        return self._call(self._refresh)

    def snapshot(self) -> FleetSnapshot:
        return self._snapshot

    def path_for(self, db_key: str) -> Path | None:
        """The file behind ``db_key`` (only DBs found among the sources; anything else is None)."""
        with self._lock:
            for db in self._dbs.values():
                if db.key == db_key and db.problem is None:
                    return db.path
        return None

    def open_store(self, db_key: str):
        """A new read-only :class:`~vllm_diag.store.Store` of ``db_key`` for the calling thread
        (close it). Unknown keys raise DiagError; nothing outside the sources is ever opened."""
        from .store import Store

        path = self.path_for(db_key)
        if path is None:
            raise DiagError("no such database among the dashboard's sources")
        return Store.open(path)

    def metric_families(self, max_sessions: int = 100):
        """The ``vllm_diag_*`` families of the newest ``max_sessions`` sessions (records without
        steps, incremental step tallies; both cached until their DB changes)."""
        return self._call(lambda: self._metric_families(max_sessions))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._pool.submit(self._close_all).result(timeout=10)
        finally:
            self._pool.shutdown(wait=False)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ worker thread only

    def _call(self, fn):
        if self._closed:
            raise DiagError("the fleet index is closed")
        return self._pool.submit(fn).result()

    def _close_all(self) -> None:
        for db in self._dbs.values():
            if db.store is not None:
                db.store.close()
                db.store = None

    def _discover(self) -> tuple[list[tuple[Path, str]], list[SourceProblem]]:
        found: list[tuple[Path, str]] = []
        problems: list[SourceProblem] = []
        for src in self.sources:
            if src.is_dir():
                try:
                    files = sorted(p for p in src.rglob("*") if p.suffix in DB_SUFFIXES and p.is_file())
                except OSError as exc:
                    problems.append(SourceProblem(str(src), f"cannot list ({exc.strerror})"))
                    continue
                found += [(p, str(p.relative_to(src))) for p in files]
            elif src.exists():
                found.append((src, src.name))
            else:
                problems.append(SourceProblem(str(src), "no such file or folder"))
        return found, problems

    def _refresh(self) -> FleetSnapshot:
        found, problems = self._discover()
        seen = set()
        rows_read = 0
        changed = False
        for path, name in found:
            rp = path.resolve()
            if rp in seen:
                continue
            seen.add(rp)
            db = self._dbs.get(rp)
            if db is None:
                db = _Db(path=rp, name=name, key=db_key_for(rp))
                with self._lock:
                    self._dbs[rp] = db
                changed = True
            n, ch = self._refresh_db(db)
            rows_read += n
            changed |= ch
        for rp in list(self._dbs):
            if rp not in seen:  # removed from the folder
                db = self._dbs[rp]
                if db.store is not None:
                    db.store.close()
                with self._lock:
                    del self._dbs[rp]
                changed = True
        dbs = sorted(self._dbs.values(), key=lambda d: d.name)
        problems += [SourceProblem(d.name, d.problem) for d in dbs if d.problem]
        changed |= problems != self._problems
        self._problems = problems
        old = self._snapshot
        if changed:
            rows = tuple(r for d in dbs for r in d.rows)
            snap = FleetSnapshot(old.generation + 1, rows, tuple(problems), time.time(), rows_read)
        else:
            snap = replace(old, refreshed_at=time.time(), rows_read=rows_read)
        self._snapshot = snap
        return snap

    def _refresh_db(self, db: _Db) -> tuple[int, bool]:
        """(step rows read, anything changed)."""
        from .store import Store

        try:
            st = db.path.stat()
            stat = (st.st_ino, st.st_dev)
        except OSError:
            stat = None
        if db.store is not None and stat != db.stat:  # replaced or removed: start again
            db.store.close()
            db.store, db.data_version, db.last_rowid = None, None, 0
        if db.store is None:
            try:
                db.store = Store.open(db.path)
                db.problem = None
            except DiagError as exc:
                msg = str(exc).replace(str(db.path), db.name)
                changed = msg != db.problem
                db.problem, db.rows = msg, ()
                return 0, changed
            db.stat = stat
            db.last_step.clear()
        conn = db.store.db.conn
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if version == db.data_version:
                return 0, False
            db.data_version = version
            return self._read_db(db, conn), True
        except Exception as exc:  # a damaged file or a schema we cannot read: one line on the page
            db.problem = f"{db.name}: cannot read ({type(exc).__name__}: {exc})"
            db.rows = ()
            db.store.close()
            db.store = None
            return 0, True

    def _read_db(self, db: _Db, conn) -> int:
        cur = conn.execute("select * from sessions")
        cols = [d[0] for d in cur.description]
        db.sessions = [dict(zip(cols, r)) for r in cur.fetchall()]
        db.findings = {}
        for sid, cat, sev, n in conn.execute(
            "select session_id, category, severity, count(*) from findings group by 1, 2, 3"
        ):
            db.findings.setdefault(sid, {})[(cat, sev)] = n
        db.errors = dict(conn.execute("select session_id, count(*) from errors group by 1").fetchall())
        for sid, key, value in conn.execute(
            "select session_id, key, value from environment where key in ('gpu', 'gpus', 'gpu_count')"
        ):
            try:
                db.env.setdefault(sid, {}).setdefault(key, json.loads(value) if value else None)
            except ValueError:
                pass
        rows_read = 0
        if db.last_rowid == 0:
            top = conn.execute("select max(rowid) from batch_steps").fetchone()[0] or 0
            for s in db.sessions:
                r = conn.execute(
                    "select step_index from batch_steps where session_id = ? and rowid <= ? order by rowid desc limit 1",
                    [s["id"], top],
                ).fetchone()
                if r is not None:
                    db.last_step[s["id"]] = r[0]
            db.last_rowid = top
        else:
            for sid, last, top, n in conn.execute(
                # NOT INDEXED: a range of the table's rowids (SQLite would otherwise walk the whole
                # session_id index to produce the groups in order)
                "select session_id, max(step_index), max(rowid), count(*) from batch_steps not indexed "
                "where rowid > ? group by session_id",
                [db.last_rowid],
            ):
                db.last_step[sid] = max(last, db.last_step.get(sid, last))
                db.last_rowid = max(db.last_rowid, top)
                rows_read += n
        self._diagnose_on_open(db, conn)
        db.rows = tuple(self._row(db, s) for s in db.sessions)
        return rows_read

    def _diagnose_on_open(self, db: _Db, conn) -> None:
        """Findings of recorded engine sessions that have none stored (recorded before the probes
        stored their own), from ``vllm_diag.api.diagnose`` -- the one function every front end
        uses. Re-run only when the session's state changes (status, errors, planning rows) or its
        first mixed step is recorded (a release's known mixed-batch bug reads it), never for other
        new steps."""
        todo = [s for s in db.sessions if s.get("kind") == "engine" and s["id"] not in db.findings]
        if not todo:
            return
        marks = tuple(conn.execute(f"select max(rowid) from {t}").fetchone()[0] for t in
                      ("engine_config", "layer_specs", "kv_cache_groups", "block_tables", "builder_buffers", "errors"))
        from . import api

        for s in todo:
            try:
                mixed = conn.execute("select exists(select 1 from step_marks where session_id = ? and kind = 'mixed')",
                                     [s["id"]]).fetchone()[0]
            except sqlite3.OperationalError:  # a store from before the step rollup
                mixed = None
            key = (s.get("status"), db.errors.get(s["id"], 0), marks, mixed)
            if db.computed.get(s["id"], (None,))[0] == key:
                continue
            try:
                record = api.diagnose(db.store.load(s["id"], steps=False), store=db.store)
            except Exception:  # a row this version cannot read: the session page says which
                db.computed[s["id"]] = (key, {})
                continue
            counts: dict = {}
            for f in record.findings:
                counts[(f.category, f.severity)] = counts.get((f.category, f.severity), 0) + 1
            db.computed[s["id"]] = (key, counts)

    def _row(self, db: _Db, s: dict) -> FleetRow:
        sid = s["id"]
        counts = db.findings.get(sid)
        source = "stored"
        if counts is None and sid in db.computed:
            counts, source = db.computed[sid][1], "computed on open"
        counts = counts or {}
        by_sev = tuple(sum(n for (c, sv), n in counts.items() if sv == sev) for sev in SEVERITIES)
        by_cat = tuple((c, sv, counts[(c, sv)]) for c in CATEGORIES for sv in SEVERITIES if counts.get((c, sv)))
        return FleetRow(
            db_key=db.key,
            db_name=db.name,
            session=sid,
            kind=s.get("kind") or "",
            status=s.get("status") or "",
            host=s.get("host") or "",
            model=s.get("model") or "",
            vllm_version=s.get("vllm_version") or "",
            gpu=_gpu_from_env(db.env.get(sid, {})),
            label=s.get("label") or "",
            started_at=s.get("started_at"),
            findings=by_sev,  # type: ignore[arg-type]
            by_category=by_cat,
            errors=db.errors.get(sid, 0),
            last_step=db.last_step.get(sid),
            findings_source=source,
        )

    # metrics: records (no steps) and tallies, cached per DB data_version
    _metric_cache: dict

    def _metric_families(self, max_sessions: int):
        from . import api, metrics

        if not hasattr(self, "_metric_cache"):
            self._metric_cache = {}
        self._refresh()
        rows = sorted(self._snapshot.rows, key=lambda r: (r.started_at or 0, r.session), reverse=True)[:max_sessions]
        per = []
        keep = set()
        for row in rows:
            db = next((d for d in self._dbs.values() if d.key == row.db_key), None)
            if db is None or db.store is None:
                continue
            ck = (db.key, row.session)
            keep.add(ck)
            cached = self._metric_cache.get(ck)
            if cached is None or cached[0] != db.data_version:
                try:
                    record = api.diagnose(db.store.load(row.session, steps=False), store=db.store)
                except DiagError:  # a row this version cannot read: the fleet page says so; skip here
                    continue
                tally = metrics.read_step_tally(db.store.db, row.session, cached[2] if cached else None)
                cached = (db.data_version, record, tally)
                self._metric_cache[ck] = cached
            per.append(metrics.session_families(cached[1], cached[2]))
        for ck in list(self._metric_cache):
            if ck not in keep:
                del self._metric_cache[ck]
        return metrics.merge_families(per)
