"""The session store: one SQLite file (WAL) holding many sessions, written by many processes.

Library first: probes, pre-flight, post-mortem and the UIs all go through ``Store``.
Writers (``Store.open(path, create=True)``) may be several processes at once (API server,
EngineCore, TP workers); each write is one short transaction and SQLite's busy timeout
serialises them, so no row is lost. Readers open the file read-only and never change it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

from .errors import DiagError, NotADiagDatabase, SessionNotFound
from .model import (
    BatchStep,
    BlockTable,
    BuilderBuffer,
    Change,
    Comparison,
    EngineState,
    ErrorRecord,
    Evidence,
    Finding,
    Frame,
    KVCacheGroup,
    LayerSpec,
    LogException,
    LogSummary,
    ProcessInfo,
    RuleFailure,
    SessionInfo,
    SessionRecord,
    StepBucket,
    StepMark,
    StepSummary,
    Suggestion,
    Target,
    from_dict,
    new_session_id,
    to_jsonable,
)
from .schema import (
    MIGRATION_SET,
    ROLLUP_SHIFT,
    SCHEMA_VERSION,
    drop_step_triggers,
    legacy_step_triggers,
    migrations,
    saturating_sum,
    roll_up_steps,
    step_rowids,
)
from .steps import MARK_LIMIT, MAX_POINTS, TAIL_ROWS, primary_pid, window_bounds

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
# Opening for writing retries SQLite's "database is locked" within this budget: the first opens of a
# fresh file race (WAL switch, migrations), and SQLite answers some of those conflicts at once,
# without waiting out the busy timeout.
OPEN_RETRY_BUDGET_S = 30.0

# batch_steps columns in the order of the tuples ``Store.add_step_rows`` takes
STEP_COLUMNS = (
    "session_id", "pid", "step_index", "at", "builder", "group_index", "num_reqs", "num_decodes",
    "num_spec_decodes", "num_prefills", "num_decode_tokens", "num_spec_decode_tokens", "num_prefill_tokens",
    "num_tokens", "spec_tokens_per_req",
)
STEP_SQL = f"insert into batch_steps ({', '.join(STEP_COLUMNS)}) values ({', '.join('?' * len(STEP_COLUMNS))})"


def is_busy_error(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED (also as the text a DiagError carries): contention, worth a retry."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (5, 6):
        return True
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


def retry_busy(fn, budget_s: float, first_delay_s: float = 0.002, max_delay_s: float = 0.2):
    """``fn()``, retried with jittered exponential back-off while SQLite reports contention, for at
    most ``budget_s`` seconds; any other error, or contention past the budget, propagates."""
    deadline = time.monotonic() + budget_s
    delay = first_delay_s
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy_error(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, max_delay_s)


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(to_jsonable(value), separators=(",", ":"))


def _loads(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return json.loads(text)



def _check_sqlite_file(path: Path) -> None:
    if not path.exists():
        raise DiagError(f"{path}: no such file")
    if path.is_dir():
        raise DiagError(f"{path}: is a directory, expected a vllm-diag database")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise DiagError(f"{path}: cannot read ({exc.strerror})") from None
    if head != SQLITE_MAGIC:
        raise NotADiagDatabase(f"{path}: not a vllm-diag database (not an SQLite file)")


class Store:
    """A vllm-diag database. Use :meth:`open`; close with :meth:`close` or a ``with`` block."""

    def __init__(self, db: sqlite_utils.Database, path: Path, readonly: bool):
        self.db = db
        self.path = path
        self.readonly = readonly

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: str | os.PathLike, create: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
             retry_budget_s: float = OPEN_RETRY_BUDGET_S) -> Store:
        """Open ``path``. ``create=True`` makes (or migrates) it for writing; otherwise it must
        already be a vllm-diag database and is opened read-only. ``busy_timeout_ms``: how long one
        statement waits for another writer; ``retry_budget_s``: how long the opening steps of a
        writer retry contention that SQLite reports at once."""
        path = Path(path)
        if create:
            # A 0-byte file is an empty SQLite database: another writer has just created it (writers
            # of one engine race to open a fresh file), or the caller made it with mkstemp.
            if path.exists() and not (path.is_file() and path.stat().st_size == 0):
                _check_sqlite_file(path)
            try:
                conn = sqlite3.connect(str(path), timeout=busy_timeout_ms / 1000, isolation_level=None)
            except sqlite3.Error as exc:
                raise DiagError(f"{path}: cannot open for writing ({exc})") from None
            store = cls(sqlite_utils.Database(conn), path, readonly=False)
            try:
                store._prepare_for_writing(busy_timeout_ms, retry_budget_s)
            except BaseException:
                conn.close()
                raise
            return store
        _check_sqlite_file(path)
        # Percent-encode the path: '?', '#' or '%' in a folder name would otherwise end the file name
        # (and drop mode=ro, so SQLite would create a file there).
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
        conn = None
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                conn.execute("select count(*) from sqlite_master").fetchone()
            except sqlite3.OperationalError as exc:
                if "unable to open" not in str(exc):
                    raise
                # A WAL database on read-only media (or in a folder we cannot write): SQLite cannot
                # create its -shm index, so read the file as immutable; nothing can be writing it.
                conn.close()
                conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None)
        except sqlite3.OperationalError as exc:
            if conn is not None:
                conn.close()
            raise DiagError(f"{path}: cannot open ({exc})") from None
        except sqlite3.DatabaseError as exc:
            if conn is None:
                raise DiagError(f"{path}: cannot open ({exc})") from None
            # not a database at all ("file is not a database"): _check_schema says so in one line
        store = cls(sqlite_utils.Database(conn), path, readonly=True)
        try:
            store._check_schema()
        except BaseException:
            # never leave a connection behind: one left open on a file that an engine is still
            # creating (rollback journal, no tables yet) spoils later reads of it in this process
            # ("database disk image is malformed" once the engine has switched it to WAL)
            conn.close()
            raise
        return store

    @classmethod
    def open_append(cls, path: str | os.PathLike, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Store:
        """A writer's connection to a database this process has already opened with
        ``open(create=True)`` (so it exists and is migrated): no schema work, no journal-mode
        change, only the connection settings. The probes open one per flush, so no connection is
        ever open while vLLM forks a process (SQLite state must not cross a fork)."""
        path = Path(path)
        _check_sqlite_file(path)
        try:
            conn = sqlite3.connect(str(path), timeout=busy_timeout_ms / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise DiagError(f"{path}: cannot open for writing ({exc})") from None
        return cls(sqlite_utils.Database(conn), path, readonly=False)

    def _prepare_for_writing(self, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                             retry_budget_s: float = OPEN_RETRY_BUDGET_S) -> None:
        conn = self.db.conn
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            retry_busy(self._prepare_once, retry_budget_s)
        except sqlite3.OperationalError as exc:  # read-only media, permissions, locked past the budget
            raise DiagError(f"{self.path}: cannot open for writing ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise NotADiagDatabase(f"{self.path}: cannot use as a vllm-diag database ({exc})") from None
        self._check_schema()

    def _prepare_once(self) -> None:
        """WAL mode and migrations. Each step either completes or changes nothing, so a step that
        meets contention is simply run again (``retry_busy``)."""
        conn = self.db.conn
        self._refuse_foreign_database()  # before WAL: never change another application's file
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            # Switching needs the file to itself: a racing opener gets "database is locked" at
            # once (no busy wait), and retries; once one switch lands, the others find WAL.
            conn.execute("PRAGMA journal_mode = wal")
        conn.execute("PRAGMA synchronous = NORMAL")
        if migrations.pending(self.db) or self._has_step_triggers():
            # BEGIN IMMEDIATE takes the write lock first, so concurrent openers of a fresh
            # file migrate one after another; the loser finds nothing pending.
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._refuse_foreign_database()
                if migrations.pending(self.db):
                    migrations.apply(self.db)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                drop_step_triggers(self.db)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _has_step_triggers(self) -> bool:
        """Per-row rollup triggers in a file migrated past m007 (a tool that re-ran m004, which creates
        them): the writers roll up each batch themselves, so a trigger would count every row twice."""
        return bool(legacy_step_triggers(self.db))

    def _refuse_foreign_database(self) -> None:
        """A SQLite file with tables but no vllm-diag migrations belongs to someone else."""
        if self.db.table_names() and not migrations.applied(self.db):
            raise NotADiagDatabase(f"{self.path}: not a vllm-diag database (an SQLite file with other tables); "
                                   "refusing to add vllm-diag tables to it")

    def _check_schema(self) -> None:
        try:
            tables = set(self.db.table_names())
            if "_sqlite_migrations" not in tables or "sessions" not in tables:
                raise NotADiagDatabase(f"{self.path}: not a vllm-diag database (no vllm-diag tables)")
            applied = self.db.execute(
                "select count(*) from _sqlite_migrations where migration_set = ?", [MIGRATION_SET]
            ).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise NotADiagDatabase(f"{self.path}: not a vllm-diag database ({exc})") from None
        if applied == 0:
            raise NotADiagDatabase(f"{self.path}: not a vllm-diag database (no vllm-diag schema)")
        if applied > SCHEMA_VERSION:
            raise DiagError(
                f"{self.path}: written by a newer vllm-diag (schema {applied} > {SCHEMA_VERSION}); upgrade vllm-diag"
            )
        # An older schema opened read-only is read as it is (recordings on read-only media, files
        # shared between versions): ``load`` leaves out what the file's tables do not have.
        self.applied_schema = applied

    @property
    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- writing

    @contextlib.contextmanager
    def transaction(self):
        """One short ``BEGIN IMMEDIATE`` transaction: the write lock is taken before anything is
        read, so a writer never holds a read snapshot that it must then upgrade (SQLite answers
        that upgrade with "database is locked" at once, without waiting). Nested uses join the
        outer transaction, so a caller can group several writes into one commit."""
        if self.readonly:
            raise DiagError(f"{self.path}: opened read-only")
        conn = self.db.conn
        if conn.in_transaction:
            yield self
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _write(self, fn) -> Any:
        """Run ``fn`` in one IMMEDIATE transaction (other writers wait on the busy timeout)."""
        with self.transaction():
            return fn()

    def new_session(self, kind: str, **fields: Any) -> str:
        info = SessionInfo(
            id=fields.pop("id", None) or new_session_id(),
            kind=kind,
            started_at=fields.pop("started_at", None) or time.time(),
            host=fields.pop("host", None) or socket.gethostname(),
            **fields,
        )
        self.ensure_session(info)
        return info.id

    def ensure_session(self, info: SessionInfo) -> None:
        """Insert the session unless a process of the same engine already did."""
        self._write(lambda: self.db["sessions"].insert(to_jsonable(info), pk="id", ignore=True))

    def update_session(self, session_id: str, **fields: Any) -> None:
        fields = {k: v for k, v in fields.items() if v is not None}
        if fields:
            self._write(lambda: self.db["sessions"].update(session_id, fields))

    def add_process(self, session_id: str, proc: ProcessInfo) -> None:
        row = {"session_id": session_id, **to_jsonable(proc)}
        self._write(lambda: self.db["processes"].upsert(row, pk=("session_id", "pid")))

    def set_items(self, table: str, session_id: str, items: dict[str, Any], pid: int = 0) -> None:
        """Key/value facts (``environment`` or ``engine_config``); values stored as JSON."""
        rows = [{"session_id": session_id, "pid": pid, "key": k, "value": _dumps(v)} for k, v in items.items()]
        self._write(lambda: self.db[table].upsert_all(rows, pk=("session_id", "pid", "key")))

    def add_state(self, session_id: str, state: EngineState, pid: int = 0) -> None:
        """Write the state's facts in one transaction (used by pre-flight, post-mortem, probes)."""

        def write() -> None:
            if state.config:
                self.db["engine_config"].upsert_all(
                    [{"session_id": session_id, "pid": pid, "key": k, "value": _dumps(v)} for k, v in state.config.items()],
                    pk=("session_id", "pid", "key"),
                )
            if state.environment:
                self.db["environment"].upsert_all(
                    [
                        {"session_id": session_id, "pid": pid, "key": k, "value": _dumps(v)}
                        for k, v in state.environment.items()
                    ],
                    pk=("session_id", "pid", "key"),
                )
            self._insert_rows("layer_specs", session_id, pid, state.layer_specs)
            self._insert_rows("kv_cache_groups", session_id, pid, state.kv_cache_groups)
            self._insert_rows("block_tables", session_id, pid, state.block_tables)
            self._insert_rows("builder_buffers", session_id, pid, state.builder_buffers)
            self._insert_rows("batch_steps", session_id, pid, state.steps)
            self._insert_rows("errors", session_id, pid, state.errors)

        self._write(write)

    def add_rows(self, table: str, session_id: str, pid: int, items: Iterable[Any]) -> None:
        """Append model objects (LayerSpec, BatchStep, ...) to ``table`` in one transaction."""
        items = list(items)
        if items:
            self._write(lambda: self._insert_rows(table, session_id, pid, items))

    def _insert_rows(self, table: str, session_id: str, pid: int, items: Iterable[Any]) -> None:
        rows = []
        for item in items:
            row = {"session_id": session_id}
            for key, value in to_jsonable(item).items():
                row[key] = value if not isinstance(value, (dict, list)) else _dumps(value)
            if row.get("pid") is None:  # the writer's pid unless the item names its own process
                row["pid"] = pid
            rows.append(row)
        if not rows:
            return
        if table == "batch_steps":
            unknown = set().union(*rows).difference(STEP_COLUMNS)
            if unknown:
                raise DiagError(f"batch_steps has no column {sorted(unknown)[0]!r}")
            self._insert_step_rows([tuple(row.get(c) for c in STEP_COLUMNS) for row in rows])
        else:
            self.db[table].insert_all(rows)

    def add_step_rows(self, rows: list[tuple]) -> None:
        """Append batch_steps rows (tuples in ``STEP_COLUMNS`` order, JSON already dumped) and roll them
        up, in one transaction (joined when the caller has one open). Every writer of batch_steps goes
        through here: the rollup (``step_rollup``, ``step_marks``) is kept per batch, not per row."""
        if rows:
            self._write(lambda: self._insert_step_rows(rows))

    def _insert_step_rows(self, rows: list[tuple]) -> None:
        conn = self.db.conn
        before = step_rowids(conn)
        conn.executemany(STEP_SQL, rows)
        roll_up_steps(conn, before)

    def add_findings(self, session_id: str, findings: Iterable[Finding], replace: bool = True) -> None:
        """Store findings with their suggestions; ``replace`` drops the session's old ones first."""
        findings = list(findings)

        def write() -> None:
            if replace:
                self.db.execute("delete from suggestions where session_id = ?", [session_id])
                self.db.execute("delete from findings where session_id = ?", [session_id])
            for finding in findings:
                data = to_jsonable(finding)
                suggestions = data.pop("suggestions")
                row = {"session_id": session_id}
                for key, value in data.items():
                    row[key] = _dumps(value) if isinstance(value, (dict, list)) else value
                finding_id = self.db["findings"].insert(row).last_pk
                for rank, sug in enumerate(suggestions, start=1):
                    srow = {"finding_id": finding_id, "session_id": session_id}
                    for key, value in sug.items():
                        srow[key] = _dumps(value) if isinstance(value, (dict, list)) else value
                    srow["rank"] = sug.get("rank") or rank
                    srow["verified"] = int(bool(sug.get("verified")))
                    self.db["suggestions"].insert(srow)

        self._write(write)

    def save(self, record: SessionRecord) -> str:
        """Store a whole record (a ``check`` or ``analyze`` session) in one transaction: the session,
        its processes, state, findings with suggestions, and the diagnosis (target, notes, log
        summary, predicted plan, rule failures). ``load`` returns an equal record."""
        sid = record.session.id or new_session_id()
        info = to_jsonable(record.session)
        info["id"] = sid
        st = record.state

        def write() -> None:
            self.db["sessions"].insert(info, pk="id", replace=True)
            for proc in record.processes:
                self.db["processes"].upsert({"session_id": sid, **to_jsonable(proc)}, pk=("session_id", "pid"))
            for table, items in (("engine_config", st.config), ("environment", st.environment)):
                if items:
                    self.db[table].insert_all([{"session_id": sid, "pid": None, "key": k, "value": _dumps(v)}
                                               for k, v in items.items()])
            for table, rows in (("layer_specs", st.layer_specs), ("kv_cache_groups", st.kv_cache_groups),
                                ("block_tables", st.block_tables), ("builder_buffers", st.builder_buffers),
                                ("batch_steps", st.steps), ("errors", st.errors)):
                self._insert_rows(table, sid, None, rows)
            self.add_findings(sid, record.findings)
            self.db["diagnoses"].insert({
                "session_id": sid,
                "target": _dumps(record.target),
                "notes": _dumps(record.notes),
                "log": _dumps(record.log),
                "predicted": _dumps(record.predicted),
                "rule_failures": _dumps(record.rule_failures),
            }, pk="session_id", replace=True)

        self._write(write)
        record.session.id = sid
        return sid

    # ---------------------------------------------------------------- reading

    def sessions(self) -> list[SessionInfo]:
        rows = self.db.execute("select * from sessions order by started_at, id").fetchall()
        cols = [d[0] for d in self.db.execute("select * from sessions limit 0").description]
        return [from_dict(SessionInfo, dict(zip(cols, r))) for r in rows]

    def session_counts(self, session_id: str) -> dict[str, int]:
        counts = {}
        for table in ("layer_specs", "kv_cache_groups", "block_tables", "batch_steps", "errors", "findings"):
            counts[table] = self.db.execute(f"select count(*) from {table} where session_id = ?", [session_id]).fetchone()[0]
        return counts

    def resolve_session(self, session_id: str | None) -> str:
        """``None`` or ``"latest"`` -> the newest session; a unique prefix -> its full id."""
        if session_id in (None, "latest", "last"):
            row = self.db.execute("select id from sessions order by started_at desc, id desc limit 1").fetchone()
            if row is None:
                raise SessionNotFound(f"{self.path}: holds no sessions")
            return row[0]
        rows = self.db.execute("select id from sessions where id = ? or id like ? || '%'", [session_id, session_id]).fetchall()
        exact = [r[0] for r in rows if r[0] == session_id]
        if exact:
            return exact[0]
        if len(rows) == 1:
            return rows[0][0]
        if not rows:
            raise SessionNotFound(f"{self.path}: no session {session_id!r} (see `vllm-diag sessions {self.path}`)")
        raise SessionNotFound(f"{self.path}: session prefix {session_id!r} is ambiguous ({len(rows)} matches)")

    def _rows(self, table: str, session_id: str, order: str = "rowid") -> list[dict[str, Any]]:
        cur = self.db.execute(f"select * from {table} where session_id = ? order by {order}", [session_id])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    @staticmethod
    def _decode(row: dict[str, Any], json_cols: Iterable[str], bool_cols: Iterable[str] = ()) -> dict[str, Any]:
        row = dict(row)
        for col in json_cols:
            if col in row:
                row[col] = _loads(row[col])
        for col in bool_cols:
            if col in row and row[col] is not None:
                row[col] = bool(row[col])
        return row

    @classmethod
    def _step(cls, row: dict[str, Any]) -> BatchStep:
        return from_dict(BatchStep, cls._decode(row, ("spec_tokens_per_req",)))

    def load(self, session_id: str | None = None, *, steps: bool | str = True) -> SessionRecord:
        """Everything one session holds, as model objects. ``steps=False`` leaves ``state.steps``
        empty (a 1,000,000-step session loads in milliseconds; read steps with SQL instead);
        ``steps="summary"`` leaves it empty too and fills ``record.step_summary`` (aggregated by
        SQLite: what the timeline view draws)."""
        sid = self.resolve_session(session_id)
        try:
            record = self._load(sid, steps=steps is True)
            if steps == "summary":
                record.step_summary = self.step_summary(sid, record.processes)
            return record
        except (ValueError, TypeError) as exc:  # bad JSON, a category/severity this version lacks
            raise DiagError(f"{self.path}: session {sid} holds a row this vllm-diag cannot read ({exc})") from None

    def _load(self, sid: str, steps: bool = True) -> SessionRecord:
        cur = self.db.execute("select * from sessions where id = ?", [sid])
        cols = [d[0] for d in cur.description]
        info_row = dict(zip(cols, cur.fetchone()))
        info = from_dict(SessionInfo, info_row)
        processes = [from_dict(ProcessInfo, r) for r in self._rows("processes", sid, "started_at, pid")]

        state = EngineState(source={"engine": "recorded", "check": "predicted", "log": "log"}.get(info.kind, "recorded"))
        state.vllm_version = info.vllm_version
        for r in self._rows("engine_config", sid, "pid, key"):
            state.config.setdefault(r["key"], _loads(r["value"]))
        for r in self._rows("environment", sid, "pid, key"):
            state.environment.setdefault(r["key"], _loads(r["value"]))
        state.layer_specs = [
            from_dict(LayerSpec, self._decode(r, ("mamba_shapes", "mamba_dtypes", "extra"), ("is_draft",)))
            for r in self._rows("layer_specs", sid)
        ]
        state.kv_cache_groups = [
            from_dict(KVCacheGroup, self._decode(r, ("layer_names", "extra"), ("is_draft",)))
            for r in self._rows("kv_cache_groups", sid)
        ]
        state.block_tables = [from_dict(BlockTable, r) for r in self._rows("block_tables", sid)]
        state.builder_buffers = [from_dict(BuilderBuffer, self._decode(r, ("shape",))) for r in self._rows("builder_buffers", sid)]
        state.steps = [
            self._step(r) for r in self._rows("batch_steps", sid, "step_index, rowid")
        ] if steps else []
        state.errors = [from_dict(ErrorRecord, self._decode(r, ("notes", "numbers"))) for r in self._rows("errors", sid, "at, rowid")]

        suggestions_by_finding: dict[int, list[Suggestion]] = {}
        for r in self._rows("suggestions", sid, "finding_id, rank"):
            r = self._decode(r, ("changes", "diff", "llm_kwargs"), ("verified",))
            sug = from_dict(Suggestion, r)
            sug.changes = [from_dict(Change, c) for c in (sug.changes or [])]
            sug.diff = sug.diff or []
            sug.llm_kwargs = sug.llm_kwargs or {}
            suggestions_by_finding.setdefault(r["finding_id"], []).append(sug)
        findings = []
        for r in self._rows("findings", sid, "id"):
            r = self._decode(r, ("numbers", "comparisons", "evidence", "missing_evidence"))
            f = from_dict(Finding, {**r, "numbers": r["numbers"] or {}, "comparisons": [], "evidence": [],
                                    "missing_evidence": r["missing_evidence"] or []})
            f.comparisons = [from_dict(Comparison, c) for c in (r["comparisons"] or [])]
            f.evidence = [from_dict(Evidence, e) for e in (r["evidence"] or [])]
            f.suggestions = suggestions_by_finding.get(r["id"], [])
            findings.append(f)
        record = SessionRecord(session=info, processes=processes, state=state, findings=findings)
        self._load_diagnosis(sid, record)
        return record

    def _load_diagnosis(self, sid: str, record: SessionRecord) -> None:
        if "diagnoses" not in self._tables():
            return  # an older schema opened read-only: no diagnosis rows yet
        row = self.db.execute("select target, notes, log, predicted, rule_failures from diagnoses where session_id = ?",
                              [sid]).fetchone()
        if row is None:
            return
        target, notes, log, predicted, failures = (_loads(x) for x in row)
        record.target = from_dict(Target, target)
        record.notes = list(notes or [])
        record.log = _log_summary(log)
        record.predicted = _engine_state(predicted)
        record.rule_failures = [from_dict(RuleFailure, f) for f in failures or []]

    def _tables(self) -> set[str]:
        if getattr(self, "_table_cache", None) is None:
            self._table_cache = set(self.db.table_names())
        return self._table_cache

    # ---------------------------------------------------------------- steps (timeline, live follow)

    def steps_after(self, session_id: str, rowid: int = 0, limit: int = 100_000) -> tuple[list[BatchStep], int]:
        """Steps written after ``rowid`` (``StepSummary.last_rowid``), oldest first, and the new last
        rowid: what a live view folds in with ``vllm_diag.views.extend``."""
        cur = self.db.execute("select rowid, * from batch_steps where session_id = ? and rowid > ? order by rowid limit ?",
                              [session_id, rowid, limit])
        cols = [d[0] for d in cur.description]
        out, last = [], rowid
        for r in cur.fetchall():
            row = dict(zip(cols, r))
            last = row.pop("rowid")
            out.append(self._step(row))
        return out, last

    def steps_the_rules_read(self, record: SessionRecord) -> list[BatchStep]:
        """The session's step rows a diagnosis reads (``vllm_diag.recorded.diagnose`` of a record loaded
        without steps), in the store's order (step, then insertion): every mixed row (decodes and spec
        decodes in one row: a runner's or a builder's own split) and every row of each recorded error's
        step -- the step the error carries, else the runner's last step at or before it."""
        db, sid = self.db, record.session.id
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
        return [self._step(row) for _, row in sorted(rows.items(), key=lambda kv: (kv[1].get("step_index") or 0, kv[0]))]

    def step_summary(self, session_id: str, processes: list[ProcessInfo] | None = None,
                     max_points: int = MAX_POINTS, first_step: int | None = None,
                     last_step: int | None = None) -> StepSummary:
        """The batch steps of a session aggregated by SQLite, as ``views.timeline.summarize_steps``
        aggregates them in Python: buckets of ``width`` steps (a power of two) per source and KV group
        of the drawn process, the first ``MARK_LIMIT`` marked steps of each kind, the last rows.
        Reads ``step_rollup``/``step_marks`` (64-step buckets, kept by ``add_step_rows`` per written
        batch) when the drawn width is 64 or more; shorter sessions, and files of an older schema, are aggregated from
        ``batch_steps`` directly."""
        rolled = "step_rollup" in self._tables()
        if processes is None:
            processes = [from_dict(ProcessInfo, r) for r in self._rows("processes", session_id, "started_at, pid")]
        if rolled:
            counts = self.db.execute("select pid, sum(rows) from step_rollup where session_id = ? group by pid",
                                     [session_id]).fetchall()
            pids = [None if p == 0 and not self._pid_zero(session_id) else p for p, _ in counts]
            total_rows = sum(n for _, n in counts)
        else:
            counts = self.db.execute("select pid, count(*) from batch_steps where session_id = ? group by pid",
                                     [session_id]).fetchall()
            pids = [p for p, _ in counts]
            total_rows = sum(n for _, n in counts)
        if not total_rows:
            return StepSummary()
        pid = primary_pid(sorted(pids, key=lambda p: p or 0), processes)
        if rolled:  # two aggregates defeat SQLite's min/max index shortcut: the rollup has them at hand
            first, last = self.db.execute("select min(first_step), max(last_step) from step_rollup "
                                          "where session_id = ? and pid = ?", [session_id, pid or 0]).fetchone()
        else:
            first, last = self.db.execute("select min(step_index), max(step_index) from batch_steps "
                                          "where session_id = ? and pid is ?", [session_id, pid]).fetchone()
        width, lo, hi = window_bounds(first, last, first_step, last_step, max_points)
        windowed = first_step is not None or last_step is not None
        if windowed:
            first, last = self.db.execute(
                "select (select step_index from batch_steps where session_id = ? and pid is ? and step_index >= ? "
                "order by step_index limit 1), (select step_index from batch_steps where session_id = ? and pid is ? "
                "and step_index <= ? order by step_index desc limit 1)", [session_id, pid, lo, session_id, pid, hi]).fetchone()
        nsteps = self.db.execute("select count(distinct step_index) from batch_steps where session_id = ? and pid is ? "
                                 "and step_index between ? and ?", [session_id, pid, lo, hi]).fetchone()[0]
        if first is None or not nsteps:
            return StepSummary(width=width, pid=pid, pids=sorted(p for p in pids if p is not None))
        shift = ROLLUP_SHIFT
        if windowed:
            if rolled and width >= 1 << shift:
                total_rows = self.db.execute("select sum(rows) from step_rollup where session_id = ? and bucket between ? and ?",
                                             [session_id, lo >> shift, hi >> shift]).fetchone()[0] or 0
            else:  # per process: (session_id, pid, step_index) is indexed, a range without pid scans the session
                total_rows = sum(self.db.execute("select count(*) from batch_steps where session_id = ? and pid is ? "
                                                 "and step_index between ? and ?", [session_id, p, lo, hi]).fetchone()[0]
                                 for p in set(pids) | ({0, None} if {0, None} & set(pids) else set()))
        if rolled and width >= 1 << shift:
            factor = width >> shift
            rows = self.db.execute(
                f"select source, group_index, min(first_step), max(last_step), sum(rows), max(max_reqs), max(max_decodes), "
                f"max(max_spec_decodes), max(max_prefills), max(max_tokens), {saturating_sum('sum_tokens')}, sum(mixed), sum(disagree) "
                f"from step_rollup where session_id = ? and pid = ? and bucket between ? and ? "
                f"group by source, group_index, bucket / ?",
                [session_id, pid or 0, lo >> shift, hi >> shift, factor]).fetchall()
        else:
            rows = self.db.execute(
                f"""select coalesce(builder, 'runner'), coalesce(group_index, -1), min(step_index), max(step_index), count(*),
                       max(coalesce(num_reqs, 0)), max(coalesce(num_decodes, 0)), max(coalesce(num_spec_decodes, 0)),
                       max(coalesce(num_prefills, 0)), max(coalesce(num_tokens, 0)), {saturating_sum('coalesce(num_tokens, 0)')},
                       sum(coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0), 0
                from batch_steps where session_id = ? and pid is ? and step_index between ? and ?
                group by 1, 2, step_index / ?""", [session_id, pid, lo, hi, width]).fetchall()
            rows = self._with_disagreements(session_id, pid, rolled, rows, lo, hi, width)
        buckets = [StepBucket(source=r[0], group_index=None if r[1] == -1 else r[1], pid=pid, first_step=r[2], last_step=r[3],
                              rows=r[4], max_reqs=r[5], max_decodes=r[6], max_spec_decodes=r[7], max_prefills=r[8],
                              max_tokens=r[9], sum_tokens=r[10], mixed=r[11], disagree=r[12]) for r in rows]
        buckets.sort(key=lambda b: (b.source != "runner", b.source, b.group_index if b.group_index is not None else -1,
                                    b.first_step))
        marks, mark_counts = self._step_marks(session_id, pid, rolled, buckets, MARK_LIMIT, lo, hi)
        cur = self.db.execute("select * from (select rowid as rowid_, * from batch_steps where session_id = ? and pid is ? "
                              "and step_index between ? and ? order by step_index desc, rowid desc limit ?) "
                              "order by step_index, rowid_", [session_id, pid, lo, hi, TAIL_ROWS])
        names = [d[0] for d in cur.description]
        tail = [self._step(dict(zip(names, r))) for r in cur.fetchall()]
        last_rowid = self.db.execute("select rowid from batch_steps where session_id = ? order by rowid desc limit 1",
                                     [session_id]).fetchone()
        return StepSummary(total_rows=total_rows, total_steps=nsteps, first_step=first, last_step=last, width=width, pid=pid,
                           pids=sorted(p for p in pids if p is not None), buckets=buckets, marks=marks, mark_counts=mark_counts,
                           tail=tail, last_rowid=last_rowid[0] if last_rowid else 0)

    def _with_disagreements(self, sid: str, pid, rolled: bool, rows: list, lo: int, hi: int, width: int) -> list:
        """Fill the buckets' disagreement counts: from step_marks (kept by the writers), or on an older
        schema by pairing each builder row with the runner rows of its step."""
        if rolled:
            counts = self.db.execute(
                "select source, group_index, step_index / ?, count(*) from step_marks where session_id = ? and pid = ? "
                "and kind = 'disagree' and step_index between ? and ? group by 1, 2, 3",
                [width, sid, pid or 0, lo, hi]).fetchall()
        else:
            counts = self.db.execute(
                """select b.builder, coalesce(b.group_index, -1), b.step_index / ?, count(*)
                from batch_steps b join batch_steps r on r.session_id = b.session_id and r.pid is b.pid
                     and r.step_index = b.step_index and r.builder is null
                where b.session_id = ? and b.pid is ? and b.builder is not null and b.step_index between ? and ?
                  and (coalesce(r.num_decodes, 0) != coalesce(b.num_decodes, 0)
                       or coalesce(r.num_spec_decodes, 0) != coalesce(b.num_spec_decodes, 0)
                       or coalesce(r.num_prefills, 0) != coalesce(b.num_prefills, 0))
                group by 1, 2, 3""", [width, sid, pid, lo, hi]).fetchall()
        by_key = {(src, g, k): n for src, g, k, n in counts}
        return [r[:12] + (by_key.get((r[0], r[1], r[2] // width), 0),) for r in rows]

    def _pid_zero(self, session_id: str) -> bool:
        return self.db.execute("select 1 from batch_steps where session_id = ? and pid = 0 limit 1",
                               [session_id]).fetchone() is not None

    def _step_marks(self, sid: str, pid, rolled: bool, buckets: list[StepBucket], limit: int, lo: int, hi: int):
        counts = {"mixed": sum(b.mixed for b in buckets), "disagree": sum(b.disagree for b in buckets)}
        if rolled:
            rows = []
            for kind in ("disagree", "mixed"):
                rows += self.db.execute(
                    "select step_index, kind, source, group_index, num_reqs, num_decodes, num_spec_decodes, num_prefills, "
                    "num_tokens, runner_decodes, runner_spec_decodes, runner_prefills from step_marks "
                    "where session_id = ? and pid = ? and kind = ? and step_index between ? and ? "
                    "order by step_index, rowid limit ?", [sid, pid or 0, kind, lo, hi, limit]).fetchall()
        else:
            rows = self.db.execute(
                "select step_index, 'mixed', coalesce(builder, 'runner'), coalesce(group_index, -1), num_reqs, num_decodes, "
                "num_spec_decodes, num_prefills, num_tokens, null, null, null from batch_steps "
                "where session_id = ? and pid is ? and coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0 "
                "and step_index between ? and ? order by step_index, rowid limit ?", [sid, pid, lo, hi, limit]).fetchall()
            rows += self.db.execute(
                "select b.step_index, 'disagree', b.builder, coalesce(b.group_index, -1), b.num_reqs, b.num_decodes, "
                "b.num_spec_decodes, b.num_prefills, b.num_tokens, r.num_decodes, r.num_spec_decodes, r.num_prefills "
                "from batch_steps b join batch_steps r on r.session_id = b.session_id and r.pid is b.pid "
                "and r.step_index = b.step_index and r.builder is null "
                "where b.session_id = ? and b.pid is ? and b.builder is not null and (coalesce(r.num_decodes, 0) != "
                "coalesce(b.num_decodes, 0) or coalesce(r.num_spec_decodes, 0) != coalesce(b.num_spec_decodes, 0) or "
                "coalesce(r.num_prefills, 0) != coalesce(b.num_prefills, 0)) and b.step_index between ? and ? "
                "order by b.step_index, b.rowid limit ?", [sid, pid, lo, hi, limit]).fetchall()
        marks = [StepMark(step_index=r[0], kind=r[1], source=r[2], group_index=None if r[3] == -1 else r[3], pid=pid,
                          num_reqs=r[4] or 0, num_decodes=r[5] or 0, num_spec_decodes=r[6] or 0, num_prefills=r[7] or 0,
                          num_tokens=r[8] or 0,
                          runner=None if r[9] is None and r[1] == "mixed" else [r[9] or 0, r[10] or 0, r[11] or 0])
                 for r in rows]
        marks.sort(key=lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1))
        return marks, counts


def _log_summary(data: dict | None) -> LogSummary | None:
    if data is None:
        return None
    out = from_dict(LogSummary, data)
    root = data.get("root")
    if root is not None:
        exc = from_dict(LogException, root)
        exc.frames = [from_dict(Frame, f) for f in root.get("frames") or []]
        out.root = exc
    return out


def _engine_state(data: dict | None) -> EngineState | None:
    if data is None:
        return None
    st = from_dict(EngineState, data)
    st.layer_specs = [from_dict(LayerSpec, x) for x in data.get("layer_specs") or []]
    st.kv_cache_groups = [from_dict(KVCacheGroup, x) for x in data.get("kv_cache_groups") or []]
    st.block_tables = [from_dict(BlockTable, x) for x in data.get("block_tables") or []]
    st.builder_buffers = [from_dict(BuilderBuffer, x) for x in data.get("builder_buffers") or []]
    st.steps = [from_dict(BatchStep, x) for x in data.get("steps") or []]
    st.errors = [from_dict(ErrorRecord, x) for x in data.get("errors") or []]
    return st
