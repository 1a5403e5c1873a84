"""The buffered writer behind the probes.

Hooks hand plain ``vllm_diag.model`` objects to a :class:`Recorder`; they never touch SQLite. A daemon
thread opens the store, creates the session and process rows, and flushes the buffer every
``flush_interval`` seconds (or at once after init-time facts, errors and at exit). Per-step rows go
into a bounded ``deque``: appending one costs well under a microsecond, and when the writer falls
behind the oldest steps are dropped and counted instead of growing memory.

Any failure to write (database locked, unwritable path, full disk, not a vllm-diag file) logs one
line and turns the recorder off for the rest of the process: the engine keeps running unchanged.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import sqlite3
import threading
import time
from typing import Any

from vllm_diag.model import BatchStep, ErrorRecord, ProcessInfo, SessionInfo

logger = logging.getLogger("vllm_diag.probes")

# The probe's connection waits at most this long for another writer (our own processes hold the
# write lock for a few milliseconds; anything longer is a foreign lock and we step aside).
PROBE_BUSY_TIMEOUT_MS = int(os.environ.get("VLLM_DIAG_BUSY_TIMEOUT_MS", "5000"))
DEFAULT_FLUSH_INTERVAL = float(os.environ.get("VLLM_DIAG_FLUSH_S", "1.0"))
DEFAULT_MAX_STEPS = int(os.environ.get("VLLM_DIAG_MAX_BUFFERED_STEPS", "100000"))
EXIT_FLUSH_TIMEOUT = float(os.environ.get("VLLM_DIAG_EXIT_TIMEOUT_S", "10"))
IDLE_FLUSH_S = 0.2  # the writer checks this often whether the step stream has paused


_ABANDONED: list = []


def log_once_line(msg: str) -> None:
    """One line on the vLLM log (and stderr if logging is not configured)."""
    try:
        if logging.getLogger().handlers or logger.handlers:
            logger.warning(msg)
        else:
            import sys

            print(f"WARNING {msg}", file=sys.stderr, flush=True)
    except Exception:
        pass


class Recorder:
    def __init__(
        self,
        db_path: str,
        session: SessionInfo,
        process: ProcessInfo,
        *,
        owner: bool = False,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        max_steps: int = DEFAULT_MAX_STEPS,
    ):
        self.db_path = db_path
        self.session = session
        self.process = process
        self.pid = process.pid
        self.owner = owner
        self.flush_interval = flush_interval
        self.enabled = True
        self.failure: str | None = None
        self.dropped_steps = 0
        self.rows_written = 0
        self.flushes = 0
        self.flush_seconds = 0.0  # writer-thread CPU time spent flushing (benchmarks read it)
        self._ops: collections.deque = collections.deque()
        self._steps: collections.deque = collections.deque(maxlen=max_steps)
        self._max_steps = max_steps
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushed = threading.Condition()
        self._flush_seq = 0
        self._request_seq = 0
        self._error_seen = False
        self._store = None
        self._thread = threading.Thread(target=self._run, name="vllm-diag-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # ------------------------------------------------------------------ called by hooks

    def set_items(self, table: str, items: dict[str, Any]) -> None:
        if self.enabled and items:
            self._ops.append(("items", table, dict(items)))

    def add_rows(self, table: str, items: list) -> None:
        if self.enabled and items:
            self._ops.append(("rows", table, list(items)))

    def add_error(self, err: ErrorRecord) -> None:
        if self.enabled:
            self._error_seen = True
            self._ops.append(("rows", "errors", [err]))
            self._ops.append(("status", "failed"))
            self.flush_soon()

    def update_session(self, **fields: Any) -> None:
        if self.enabled:
            self._ops.append(("session", fields))

    def update_process(self, **fields: Any) -> None:
        changed = False
        for key, value in fields.items():
            if value is not None and getattr(self.process, key, None) != value:
                setattr(self.process, key, value)
                changed = True
        if changed and self.enabled:
            self._ops.append(("process",))

    def add_step(self, step: BatchStep) -> None:
        """Hot path: one deque append (the deque's maxlen drops the oldest when full)."""
        steps = self._steps
        if len(steps) == self._max_steps:
            self.dropped_steps += 1
        steps.append(step)

    def flush_soon(self) -> None:
        self._wake.set()

    def flush(self, timeout: float = 10.0) -> bool:
        """Ask the writer thread to flush now and wait for it (True when done)."""
        if not self.enabled or self._thread is None or not self._thread.is_alive():
            return False
        with self._flushed:
            self._request_seq += 1
            target = self._request_seq
            self._wake.set()
            return self._flushed.wait_for(lambda: self._flush_seq >= target or not self.enabled, timeout) and self.enabled

    def close(self, status: str | None = None) -> None:
        """Final flush (atexit): write what is left, mark the session's status, stop the thread."""
        if self._stop.is_set() or self._thread is None:
            return
        self._final_status = status
        self._stop.set()
        self._wake.set()
        self._thread.join(EXIT_FLUSH_TIMEOUT)

    # ------------------------------------------------------------------ fork support

    def detach_after_fork(self) -> None:
        """In a child right after ``os.fork()``: the writer thread did not survive and the
        inherited SQLite connection must not be used, so drop both and pause until
        :meth:`restart` gives this process its own identity."""
        self.enabled = False
        if self._store is not None:
            _ABANDONED.append(self._store)  # the parent's connection: never used nor closed here
        self._store = None
        self._ops = collections.deque()
        self._steps = collections.deque(maxlen=self._max_steps)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushed = threading.Condition()
        self._flush_seq = self._request_seq = 0
        self._thread = None

    def restart(self, process: ProcessInfo) -> None:
        """Become the recorder of a forked child process (``process``: its own pid/role/rank)."""
        self.process = process
        self.pid = process.pid
        self.owner = False
        self.failure = None
        self.dropped_steps = self.rows_written = self.flushes = 0
        self.flush_seconds = 0.0
        self._error_seen = False
        self.enabled = True
        self._thread = threading.Thread(target=self._run, name="vllm-diag-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ writer thread

    def _run(self) -> None:
        """Flush every ``flush_interval`` seconds, on request, at exit -- and as soon as the step
        stream pauses (no new step for ``IDLE_FLUSH_S``): an engine that finishes a burst of work
        and is then killed (vLLM terminates EngineCore/workers at shutdown) loses nothing."""
        last_flush = time.monotonic()
        last_len = -1
        while True:
            woke = self._wake.wait(min(self.flush_interval, IDLE_FLUSH_S))
            self._wake.clear()
            stopping = self._stop.is_set()
            n = len(self._steps)
            now = time.monotonic()
            idle = n > 0 and n == last_len
            last_len = n
            if not (woke or stopping or idle or self._ops or now - last_flush >= self.flush_interval):
                continue
            with self._flushed:
                seq = self._request_seq
            if self.enabled:
                try:
                    t0 = time.thread_time()
                    self._flush_once()
                    self.flush_seconds += time.thread_time() - t0
                    if stopping:
                        self._finish()
                except BaseException as exc:  # noqa: BLE001 - any failure: step aside
                    self._step_aside(exc)
            last_flush = now
            last_len = len(self._steps)
            with self._flushed:
                self._flush_seq = max(self._flush_seq, seq)
                self._flushed.notify_all()
            if stopping or not self.enabled:
                break
        if self._store is not None:
            try:
                self._store.close()
            except Exception:
                pass
            self._store = None

    def _open(self):
        from vllm_diag.store import Store

        store = Store.open(self.db_path, create=True)
        store.db.conn.execute(f"PRAGMA busy_timeout = {PROBE_BUSY_TIMEOUT_MS}")
        store.ensure_session(self.session)
        store.add_process(self.session.id, self.process)
        self._store = store
        return store

    def _flush_once(self) -> None:
        store = self._store or self._open()
        sid = self.session.id
        # Init-time facts and errors, in the order the hooks produced them.
        while self._ops:
            op = self._ops[0]
            kind = op[0]
            if kind == "items":
                store.set_items(op[1], sid, op[2], pid=self.pid)
            elif kind == "rows":
                store.add_rows(op[1], sid, self.pid, op[2])
                self.rows_written += len(op[2])
            elif kind == "session":
                store.update_session(sid, **op[1])
            elif kind == "process":
                store.add_process(sid, self.process)
            elif kind == "status":
                store.update_session(sid, status=op[1])
            self._ops.popleft()
        steps = []
        pop = self._steps.popleft
        try:
            while True:
                steps.append(pop())
        except IndexError:
            pass
        if steps:
            self._write_steps(store, sid, steps)
            self.rows_written += len(steps)
        self.flushes += 1

    _STEP_COLUMNS = (
        "session_id", "pid", "step_index", "at", "builder", "group_index", "num_reqs", "num_decodes",
        "num_spec_decodes", "num_prefills", "num_decode_tokens", "num_spec_decode_tokens", "num_prefill_tokens",
        "num_tokens", "spec_tokens_per_req",
    )
    _STEP_SQL = f"insert into batch_steps ({', '.join(_STEP_COLUMNS)}) values ({', '.join('?' * len(_STEP_COLUMNS))})"

    def _write_steps(self, store, sid: str, steps: list) -> None:
        """The per-step rows, in one ``executemany`` on the store's connection: the generic
        ``Store.add_rows`` path (dataclass -> dict -> sqlite-utils) costs ~20-60 us a row, this
        ~2 us, and it runs once a second for every step of a busy engine."""
        dumps = json.dumps
        pid = self.pid
        rows = [
            (sid, pid, s.step_index, s.at, s.builder, s.group_index, s.num_reqs, s.num_decodes, s.num_spec_decodes,
             s.num_prefills, s.num_decode_tokens, s.num_spec_decode_tokens, s.num_prefill_tokens, s.num_tokens,
             None if s.spec_tokens_per_req is None else dumps(s.spec_tokens_per_req, separators=(",", ":")))
            for s in steps
        ]
        conn = store.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(self._STEP_SQL, rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _finish(self) -> None:
        store = self._store
        if store is None:
            return
        sid = self.session.id
        extra = {"probe_flushes": self.flushes, "probe_rows_written": self.rows_written}
        if self.dropped_steps:
            extra["probe_dropped_steps"] = self.dropped_steps
        store.set_items("environment", sid, extra, pid=self.pid)
        status = getattr(self, "_final_status", None)
        if status is None and self.owner:
            failed = store.db.execute("select count(*) from errors where session_id = ?", [sid]).fetchone()[0]
            status = "failed" if (failed or self._error_seen) else "ok"
        if status is not None:
            store.update_session(sid, status=status, ended_at=time.time())
        elif self._error_seen:
            store.update_session(sid, status="failed")

    def _step_aside(self, exc: BaseException) -> None:
        self.enabled = False
        self._ops.clear()
        self._steps.clear()
        reason = _describe_failure(exc)
        self.failure = reason
        log_once_line(
            f"vllm-diag: cannot write {self.db_path} ({reason}); probes step aside for this process "
            f"(pid {self.pid}), the engine is not affected"
        )


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.OperationalError):
        return f"sqlite: {exc}"
    if isinstance(exc, OSError):
        return f"{exc.__class__.__name__}: {exc.strerror or exc}"
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0] if text else ''}".strip()
