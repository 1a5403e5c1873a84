"""No lost records when many processes write one session at once (real processes, no engine).

vLLM runs the API server / ``LLM`` process, the EngineCore and every TP/PP worker as separate
processes, started by ``spawn`` or by ``fork``, and each writes its own rows into one DB. These
tests start such writers at the same instant, many times, on a fresh file each time (the first
opens race to create the tables and switch the file to WAL), and check every writer's rows:

* spawned writers released together by a start time;
* writers forked while the parent's writer thread is opening / writing the file (what vLLM's
  ``fork`` start method does on GPU hosts; SQLite lock state inherited across a fork used to
  lose a child's rows without any error);
* a foreign connection holding the write lock for longer than one attempt's busy timeout: the
  rows wait in memory and are retried, not dropped.

Each round runs in a fresh interpreter so "first open of the file in this process" really is first.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

_COMMON = r"""
import json, os, sys, threading, time
from vllm_diag.model import BatchStep, LayerSpec, ProcessInfo, SessionInfo
from vllm_diag.probes.recorder import Recorder

def make(db, role, owner=False, flush_interval=1.0):
    s = SessionInfo(id="s-conc", kind="engine", started_at=time.time())
    return Recorder(db, s, ProcessInfo(pid=os.getpid(), role=role), owner=owner, flush_interval=flush_interval)

def write(rec, n_steps, tag):
    rec.set_items("environment", {"tag": tag})
    rec.add_rows("layer_specs", [LayerSpec(layer_name=f"{tag}.l{i}", spec_type="FullAttentionSpec") for i in range(3)])
    for i in range(n_steps):
        rec.add_step(BatchStep(step_index=i + 1, num_reqs=1, num_tokens=1))
    rec.flush_soon()
"""

_SPAWN_ROUND = _COMMON + r"""
import multiprocessing as mp

def writer(db, t0, k, n_steps):
    rec = make(db, f"w{k}")
    while time.time() < t0:
        pass
    write(rec, n_steps, f"w{k}")
    rec.close()
    sys.stdout.write(json.dumps({"pid": os.getpid(), "failure": rec.failure, "retries": rec.retries}) + "\n")
    sys.stdout.flush()

if __name__ == "__main__":
    db, n, n_steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctx = mp.get_context("spawn")
    t0 = time.time() + 2.0  # every writer has imported and started its writer thread by then
    ps = [ctx.Process(target=writer, args=(db, t0, k, n_steps)) for k in range(n)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    print("EXIT " + json.dumps([p.exitcode for p in ps]), flush=True)
"""

_FORK_ROUND = _COMMON + r"""
import multiprocessing as mp

REC = None

def child(n_steps):
    REC.restart(ProcessInfo(pid=os.getpid(), role="worker", ppid=os.getppid()))
    write(REC, n_steps, f"c{os.getpid()}")
    REC.close()
    sys.stdout.write(json.dumps({"pid": os.getpid(), "failure": REC.failure}) + "\n")
    sys.stdout.flush()

if __name__ == "__main__":
    db, n, n_steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    REC = make(db, "main", owner=True, flush_interval=0.001)
    os.register_at_fork(after_in_child=lambda: REC.detach_after_fork())  # what the plugin does
    stop = time.time() + 1.0
    def feed():  # the parent keeps writing while its children are forked
        i = 0
        while time.time() < stop:
            i += 1
            REC.add_step(BatchStep(step_index=i, num_reqs=1, num_tokens=1))
            REC.flush_soon()
            time.sleep(0.0005)
        print("PARENT_STEPS " + str(i), flush=True)
    th = threading.Thread(target=feed)
    th.start()
    ctx = mp.get_context("fork")
    ps = []
    for k in range(n):  # the first fork lands while the parent's writer opens the fresh file
        p = ctx.Process(target=child, args=(n_steps,))
        p.start()
        ps.append(p)
        time.sleep(0.02)
    for p in ps:
        p.join(120)
    th.join()
    REC.close()
    print("EXIT " + json.dumps([p.exitcode for p in ps] + [REC.failure]), flush=True)
"""


def _run(script: str, *args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``script`` as a file (spawned children import their target from it) in a fresh interpreter."""
    e = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    path = Path(args[0]).with_suffix(".py")
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, env=e, timeout=timeout)


def _rows(db: Path) -> dict:
    conn = sqlite3.connect(db)
    try:
        q = lambda sql: conn.execute(sql).fetchall()
        return {
            "processes": {r[0]: r[1] for r in q("select pid, role from processes where session_id='s-conc'")},
            "steps": dict(q("select pid, count(*) from batch_steps group by pid")),
            "specs": dict(q("select pid, count(*) from layer_specs group by pid")),
            "env": dict(q("select pid, count(*) from environment where key='tag' group by pid")),
            "sessions": q("select count(*) from sessions")[0][0],
            "integrity": q("pragma integrity_check")[0][0],
        }
    finally:
        conn.close()


ROUNDS = int(os.environ.get("VLLM_DIAG_CONCURRENCY_ROUNDS", "12"))


def test_spawned_writers_started_together_lose_nothing(tmp_path):
    """6 spawned writers released at the same instant onto a fresh file, ROUNDS times."""
    n, n_steps = 6, 200
    for r in range(ROUNDS):
        db = tmp_path / f"spawn{r}.db"
        out = _run(_SPAWN_ROUND, str(db), str(n), str(n_steps))
        assert out.returncode == 0, out.stderr[-3000:]
        reports = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        assert len(reports) == n and all(rep["failure"] is None for rep in reports), (r, reports, out.stderr[-2000:])
        got = _rows(db)
        pids = {rep["pid"] for rep in reports}
        assert set(got["processes"]) == pids, (r, got)
        assert got["steps"] == {p: n_steps for p in pids}, (r, got)
        assert got["specs"] == {p: 3 for p in pids} and got["env"] == {p: 1 for p in pids}, (r, got)
        assert got["sessions"] == 1 and got["integrity"] == "ok"


def test_forked_writers_lose_nothing(tmp_path):
    """A parent writing continuously forks 3 writers, the first during its own first open of a
    fresh file, ROUNDS times; every child's rows and all the parent's steps are in the file."""
    n, n_steps = 3, 50
    for r in range(ROUNDS):
        db = tmp_path / f"fork{r}.db"
        out = _run(_FORK_ROUND, str(db), str(n), str(n_steps))
        assert out.returncode == 0, out.stderr[-3000:]
        reports = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        exit_line = next(line for line in out.stdout.splitlines() if line.startswith("EXIT "))
        assert json.loads(exit_line[5:]) == [0] * n + [None], out.stdout
        assert len(reports) == n and all(rep["failure"] is None for rep in reports), (r, reports)
        parent_steps = int(next(line for line in out.stdout.splitlines() if line.startswith("PARENT_STEPS ")).split()[1])
        got = _rows(db)
        children = {rep["pid"] for rep in reports}
        assert set(got["processes"]) == children | {p for p, role in got["processes"].items() if role == "main"}, got
        assert len(got["processes"]) == n + 1, (r, got)
        assert {p: got["steps"].get(p) for p in children} == {p: n_steps for p in children}, (r, got)
        parent = next(p for p, role in got["processes"].items() if role == "main")
        assert got["steps"][parent] == parent_steps, (r, got)
        assert got["integrity"] == "ok"


_HELD_LOCK = _COMMON + r"""
if __name__ == "__main__":
    import sqlite3
    db = sys.argv[1]
    rec = make(db, "main", owner=True)
    write(rec, 100, "first")
    assert rec.flush(30), rec.failure
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for 3 s (> 10 busy timeouts)
    write(rec, 100, "second")
    time.sleep(3.0)
    holder.execute("COMMIT")
    holder.close()
    ok = rec.flush(30)
    rec.close()
    print("RESULT " + json.dumps({"ok": ok, "failure": rec.failure, "retries": rec.retries}), flush=True)
"""


def test_lock_held_longer_than_busy_timeout_is_retried(tmp_path):
    db = tmp_path / "held.db"
    out = _run(_HELD_LOCK, str(db), env={"VLLM_DIAG_BUSY_TIMEOUT_MS": "200", "VLLM_DIAG_LOCK_BUDGET_S": "30"})
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert res["ok"] and res["failure"] is None and res["retries"] >= 1, res
    assert "cannot write" not in out.stderr
    got = _rows(db)
    assert sum(got["steps"].values()) == 200 and sum(got["specs"].values()) == 6


@pytest.mark.parametrize("budget", ["1"])
def test_lock_held_past_the_budget_steps_aside_once(tmp_path, budget):
    """Contention that outlasts VLLM_DIAG_LOCK_BUDGET_S: one log line, the recorder steps aside."""
    script = _COMMON + r"""
if __name__ == "__main__":
    import sqlite3
    db = sys.argv[1]
    rec = make(db, "main", owner=True)
    write(rec, 10, "first")
    assert rec.flush(30)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    write(rec, 10, "second")
    deadline = time.time() + 20
    while rec.enabled and time.time() < deadline:
        time.sleep(0.05)
    print("RESULT " + json.dumps({"enabled": rec.enabled, "failure": rec.failure}), flush=True)
    holder.execute("ROLLBACK")
"""
    out = _run(script, str(tmp_path / "stuck.db"), env={"VLLM_DIAG_BUSY_TIMEOUT_MS": "100", "VLLM_DIAG_LOCK_BUDGET_S": budget})
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert res["enabled"] is False and "locked" in res["failure"], res
    assert out.stderr.count("cannot write") == 1, out.stderr
