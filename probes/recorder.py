"""The buffered writer behind the probes.

Hooks hand plain ``vllm_diag.model`` objects to a :class:`Recorder`; they never touch SQLite. A daemon
thread flushes the buffer every ``flush_interval`` seconds (or at once after init-time facts, errors,
when the step stream pauses and at exit). Per-step rows go into a bounded ``deque``: appending one
costs well under a microsecond, and when the writer falls behind the oldest steps are dropped and
counted instead of growing memory.

Many processes write one file (API server, EngineCore, every TP/PP worker, spawned or forked), so:

* each flush is one connection and one short ``BEGIN IMMEDIATE`` transaction (session, process,
  facts and steps of that flush commit together or not at all), and the connection is closed
  again: no read snapshot is ever held, and no SQLite connection is open when vLLM forks a
  process (a forked child that inherits SQLite's in-process lock state can lose its rows
  silently). A fork waits for a flush in progress to end (``os.register_at_fork``);
* contention (``database is locked``/busy) is retried with back-off for ``VLLM_DIAG_LOCK_BUDGET_S``
  seconds; the rows stay buffered meanwhile;
* anything else (unwritable path, full disk, not a vllm-diag file) -- or contention past the budget --
  logs one line and turns the recorder off for the rest of the process: the engine keeps running.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from typing import Any, Callable

from vllm_diag.model import BatchStep, ErrorRecord, ProcessInfo, SessionInfo

logger = logging.getLogger("vllm_diag.probes")

# One attempt to write waits at most this long for another writer (our own processes hold the write
# lock for a few milliseconds); contention is then retried, with back-off, for LOCK_BUDGET_S.
PROBE_BUSY_TIMEOUT_MS = int(os.environ.get("VLLM_DIAG_BUSY_TIMEOUT_MS", "1000"))
LOCK_BUDGET_S = float(os.environ.get("VLLM_DIAG_LOCK_BUDGET_S", "60"))
DEFAULT_FLUSH_INTERVAL = float(os.environ.get("VLLM_DIAG_FLUSH_S", "1.0"))
DEFAULT_MAX_STEPS = int(os.environ.get("VLLM_DIAG_MAX_BUFFERED_STEPS", "100000"))
EXIT_FLUSH_TIMEOUT = float(os.environ.get("VLLM_DIAG_EXIT_TIMEOUT_S", "10"))
IDLE_FLUSH_S = 0.2  # the writer checks this often whether the step stream has paused

FORK_WAIT_S = 30.0  # a fork waits at most this long for a flush in progress


# ------------------------------------------------------------------------------------ fork safety
#
# vLLM forks EngineCore and workers on GPU hosts. SQLite keeps per-file lock state in process
# memory; a child forked while a connection is open inherits that state without the locks behind
# it, and its own connection to the same file then misbehaves (seen: rows of forked writers lost
# without an error). So connections live only inside a flush, and a fork waits for the flush.

_LIVE: "weakref.WeakSet[Recorder]" = weakref.WeakSet()
_FORK_HOOKS = {"installed": False}


def _before_fork() -> None:
    for rec in list(_LIVE):
        try:
            rec._fork_held = rec._conn_lock.acquire(timeout=FORK_WAIT_S)
        except Exception:
            rec._fork_held = False


def _after_fork_parent() -> None:
    for rec in list(_LIVE):
        if getattr(rec, "_fork_held", False):
            rec._fork_held = False
            rec._conn_lock.release()


def _after_fork_child() -> None:
    for rec in list(_LIVE):
        rec._conn_lock = threading.Lock()
        # a connection was open in the parent at the fork (a flush outlived FORK_WAIT_S): this
        # child must not open the file at all
        rec._fork_tainted = not getattr(rec, "_fork_held", False)
        rec._fork_held = False


def _install_fork_hooks() -> None:
    if not _FORK_HOOKS["installed"] and hasattr(os, "register_at_fork"):
        _FORK_HOOKS["installed"] = True
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child)


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
        self.retries = 0  # flush attempts that met contention and were retried
        self.flush_seconds = 0.0  # writer-thread CPU time spent flushing (benchmarks read it)
        self.on_diagnose: Callable[[Any, str], None] | None = None  # set by the probe
        # at exit: True (the engine's own process diagnoses once more), "frontend" (an API-server/LLM
        # process whose engine ran elsewhere: diagnoses only when that engine stopped without doing so)
        self.diagnose_at_exit: bool | str = False
        self._undiagnosed = False  # rows written since the last diagnosis
        self._ops: collections.deque = collections.deque()
        self._steps: collections.deque = collections.deque(maxlen=max_steps)
        self._pending: list = []  # steps taken from the deque whose flush has not committed yet
        self._max_steps = max_steps
        self._conn_lock = threading.Lock()  # held while a connection is open (see _before_fork)
        self._fork_held = False
        self._fork_tainted = False
        self._prepared = False  # this process has opened the file once with schema checks
        self._joined = False  # session and process rows are in the file
        self._busy_since: float | None = None
        self._last_ok = True
        self._new_thread_state()
        _install_fork_hooks()
        _LIVE.add(self)
        self._thread.start()
        atexit.register(self.close)

    def _new_thread_state(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushed = threading.Condition()
        self._flush_seq = 0
        self._request_seq = 0
        self._error_seen = False
        self._thread = threading.Thread(target=self._run, name="vllm-diag-writer", daemon=True)

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

    def request_diagnosis(self, reason: str) -> None:
        """Run ``on_diagnose`` on the writer thread right after the next flush commits."""
        if self.enabled and self.on_diagnose is not None:
            self._ops.append(("diagnose", reason))
            self.flush_soon()

    def add_step(self, step: BatchStep) -> None:
        """Hot path: one deque append (the deque's maxlen drops the oldest when full)."""
        steps = self._steps
        if len(steps) == self._max_steps:
            self.dropped_steps += 1
        steps.append(step)

    def flush_soon(self) -> None:
        self._wake.set()

    def flush(self, timeout: float = 10.0) -> bool:
        """Ask the writer thread to flush now and wait for it (True when everything buffered
        before the call is on disk)."""
        if not self.enabled or self._thread is None or not self._thread.is_alive():
            return False
        if threading.current_thread() is self._thread:
            return False
        with self._flushed:
            self._request_seq += 1
            target = self._request_seq
            self._wake.set()
            done = self._flushed.wait_for(lambda: self._flush_seq >= target or not self.enabled, timeout)
            return bool(done and self.enabled and self._last_ok)

    def close(self, status: str | None = None) -> None:
        """Final flush (atexit): write what is left, mark the session's status, stop the thread."""
        if self._stop.is_set() or self._thread is None:
            return
        self._final_status = status
        if self.enabled and self.on_diagnose is not None:
            if self.diagnose_at_exit == "frontend":
                self._ops.append(("diagnose", "frontend-exit"))  # on_diagnose decides whether it is needed
            elif self.diagnose_at_exit and (self._undiagnosed or self._steps or any(op[0] != "diagnose" for op in self._ops)):
                self._ops.append(("diagnose", "exit"))
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(EXIT_FLUSH_TIMEOUT)

    # ------------------------------------------------------------------ fork support

    def detach_after_fork(self) -> None:
        """In a child right after ``os.fork()``: the writer thread did not survive; drop what the
        parent had buffered and pause until :meth:`restart` gives this process its identity."""
        self.enabled = False
        self._ops = collections.deque()
        self._steps = collections.deque(maxlen=self._max_steps)
        self._pending = []
        self._thread = None

    def restart(self, process: ProcessInfo) -> None:
        """Become the recorder of a forked child process (``process``: its own pid/role/rank)."""
        self.process = process
        self.pid = process.pid
        self.owner = False
        self.failure = None
        self.dropped_steps = self.rows_written = self.flushes = self.retries = 0
        self.flush_seconds = 0.0
        self._joined = False
        self._busy_since = None
        self._last_ok = True
        self._new_thread_state()
        if self._fork_tainted:
            self.enabled = False
            self.failure = "forked while the parent process was writing the database"
            log_once_line(f"vllm-diag: pid {self.pid} was forked during a write to {self.db_path}; "
                          "its rows are not recorded (the engine is not affected)")
            return
        self.enabled = True
        self._thread.start()

    # ------------------------------------------------------------------ writer thread

    def _run(self) -> None:
        """Flush every ``flush_interval`` seconds, on request, at exit -- and as soon as the step
        stream pauses (no new step for ``IDLE_FLUSH_S``): an engine that finishes a burst of work
        and is then killed (vLLM terminates EngineCore/workers at shutdown) loses nothing."""
        last_flush = time.monotonic()
        last_len = -1
        retry_at = 0.0
        while True:
            wait = min(self.flush_interval, IDLE_FLUSH_S)
            if retry_at:
                wait = max(0.0, min(wait, retry_at - time.monotonic()))
            woke = self._wake.wait(wait)
            self._wake.clear()
            stopping = self._stop.is_set()
            n = len(self._steps)
            now = time.monotonic()
            idle = n > 0 and n == last_len
            last_len = n
            due = retry_at and now >= retry_at
            if not (woke or stopping or idle or due or self._ops or now - last_flush >= self.flush_interval):
                continue
            if retry_at and not (due or stopping):
                continue  # backing off after contention; requests wait for the retry
            with self._flushed:
                seq = self._request_seq
            retry_at = 0.0
            if self.enabled:
                try:
                    t0 = time.thread_time()
                    self._flush_with_retry(stopping)
                    self.flush_seconds += time.thread_time() - t0
                    self._busy_since = None
                    self._last_ok = True
                except _Busy:
                    self.retries += 1
                    self._last_ok = False
                    retry_at = time.monotonic() + min(0.05 * 2 ** min(self.retries, 5), 2.0) * (0.5 + random.random())
                except BaseException as exc:  # noqa: BLE001 - any other failure: step aside
                    self._last_ok = False
                    self._step_aside(exc)
            last_flush = now
            last_len = len(self._steps)
            if not retry_at:
                with self._flushed:
                    self._flush_seq = max(self._flush_seq, seq)
                    self._flushed.notify_all()
            if stopping or not self.enabled:
                with self._flushed:
                    self._flush_seq = max(self._flush_seq, self._request_seq)
                    self._flushed.notify_all()
                break

    def _flush_with_retry(self, stopping: bool) -> None:
        """One flush; contention raises :class:`_Busy` (retry later) until the budget is spent.
        At exit the remaining time is short, so contention is retried here, for at most half
        the exit timeout."""
        deadline = time.monotonic() + min(LOCK_BUDGET_S, EXIT_FLUSH_TIMEOUT / 2) if stopping else None
        while True:
            try:
                self._flush_once(stopping)
                return
            except Exception as exc:
                if not _is_busy(exc):
                    raise
                now = time.monotonic()
                if self._busy_since is None:
                    self._busy_since = now
                if now - self._busy_since >= LOCK_BUDGET_S or (deadline is not None and now >= deadline):
                    raise
                if deadline is None:
                    raise _Busy() from exc
                self.retries += 1
                time.sleep(0.02 + 0.05 * random.random())

    def _connect(self):
        from vllm_diag.store import Store

        if not self._prepared:
            store = Store.open(self.db_path, create=True, busy_timeout_ms=PROBE_BUSY_TIMEOUT_MS,
                               retry_budget_s=min(LOCK_BUDGET_S, 30.0))
            self._prepared = True
            return store
        return Store.open_append(self.db_path, busy_timeout_ms=PROBE_BUSY_TIMEOUT_MS)

    def _flush_once(self, stopping: bool = False) -> None:
        """Everything buffered, in one transaction on a connection opened for this flush only."""
        ops = list(itertools.islice(self._ops, 0, len(self._ops)))
        pop = self._steps.popleft
        try:
            while True:
                self._pending.append(pop())
        except IndexError:
            pass
        if len(self._pending) > self._max_steps:  # the writer has been blocked: keep the newest
            cut = len(self._pending) - self._max_steps
            self.dropped_steps += cut
            del self._pending[:cut]
        steps = self._pending
        if not ops and not steps and self._joined and not stopping:
            return
        diagnose = [op[1] for op in ops if op[0] == "diagnose"]
        written = 0
        with self._conn_lock:
            store = self._connect()
            try:
                sid = self.session.id
                with store.transaction():
                    if not self._joined:
                        store.ensure_session(self.session)
                        store.add_process(sid, self.process)
                    for op in ops:
                        kind = op[0]
                        if kind == "items":
                            store.set_items(op[1], sid, op[2], pid=self.pid)
                        elif kind == "rows":
                            store.add_rows(op[1], sid, self.pid, op[2])
                            written += len(op[2])
                        elif kind == "session":
                            store.update_session(sid, **op[1])
                        elif kind == "process":
                            store.add_process(sid, self.process)
                        elif kind == "status":
                            store.update_session(sid, status=op[1])
                    if steps:
                        self._write_steps(store, sid, steps)
                        written += len(steps)
                    if stopping:
                        self._finish(store)
                # committed: drop what was written
                self._joined = True
                for _ in ops:
                    self._ops.popleft()
                self._pending = []
                self.rows_written += written
                self.flushes += 1
                if written or any(op[0] != "diagnose" for op in ops):
                    self._undiagnosed = True
                if diagnose:
                    self._undiagnosed = False
                    self._diagnose(store, diagnose[-1])
            finally:
                store.close()

    def _diagnose(self, store, reason: str) -> None:
        try:
            self.on_diagnose(store, reason)
        except Exception as exc:  # noqa: BLE001 - a diagnosis bug must not stop the recording
            log_once_line(f"vllm-diag: live diagnosis failed ({exc.__class__.__name__}: {exc}); the recording is complete, "
                          f"run `vllm-diag diagnose {self.db_path}` later")

    # the order of vllm_diag.store.STEP_COLUMNS (the store is imported only when a flush opens it)
    _STEP_COLUMNS = (
        "session_id", "pid", "step_index", "at", "builder", "group_index", "num_reqs", "num_decodes",
        "num_spec_decodes", "num_prefills", "num_decode_tokens", "num_spec_decode_tokens", "num_prefill_tokens",
        "num_tokens", "spec_tokens_per_req",
    )
    _STEP_SQL = f"insert into batch_steps ({', '.join(_STEP_COLUMNS)}) values ({', '.join('?' * len(_STEP_COLUMNS))})"

    def _write_steps(self, store, sid: str, steps: list) -> None:
        """The per-step rows as tuples, inserted and rolled up by ``Store.add_step_rows`` inside the
        flush's transaction (one ``executemany`` and a few set-based rollup statements): the generic
        ``Store.add_rows`` path (dataclass -> dict) costs ~20-60 us a row, this ~2 us plus the rollup,
        and it runs once a second for every step of a busy engine."""
        dumps = json.dumps
        pid = self.pid
        rows = [
            (sid, pid, s.step_index, s.at, s.builder, s.group_index, s.num_reqs, s.num_decodes, s.num_spec_decodes,
             s.num_prefills, s.num_decode_tokens, s.num_spec_decode_tokens, s.num_prefill_tokens, s.num_tokens,
             None if s.spec_tokens_per_req is None else dumps(s.spec_tokens_per_req, separators=(",", ":")))
            for s in steps
        ]
        store.add_step_rows(rows)

    def _finish(self, store) -> None:
        sid = self.session.id
        extra = {"probe_flushes": self.flushes + 1, "probe_rows_written": self.rows_written}
        if self.dropped_steps:
            extra["probe_dropped_steps"] = self.dropped_steps
        if self.retries:
            extra["probe_lock_retries"] = self.retries
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
        self._pending = []
        reason = _describe_failure(exc)
        self.failure = reason
        log_once_line(
            f"vllm-diag: cannot write {self.db_path} ({reason}); probes step aside for this process "
            f"(pid {self.pid}), the engine is not affected"
        )


class _Busy(Exception):
    """A flush met contention and will be retried."""


def _is_busy(exc: BaseException) -> bool:
    from vllm_diag.store import is_busy_error

    return is_busy_error(exc)


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.OperationalError):
        return f"sqlite: {exc}"
    if isinstance(exc, OSError):
        return f"{exc.__class__.__name__}: {exc.strerror or exc}"
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0] if text else ''}".strip()
