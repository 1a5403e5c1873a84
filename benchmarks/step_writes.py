"""Benchmark: the store's step write path (the probes' background writer), rows per second, with the
step rollup kept by per-row triggers (another revision, ``--compare-rev``) and per written batch (this
tree), next to the same inserts with no rollup at all.

    .venv/bin/python benchmarks/step_writes.py [--compare-rev REV] [--prefill 100000] [--steps 50000]
                                               [--batch 50,500] [--repeat 3] [--json OUT]

Each measurement runs in a fresh interpreter (``--compare-rev``: with that revision's ``vllm_diag``
exported by ``benchmarks/revision.py`` first on ``PYTHONPATH``), alternating revision / this tree /
no rollup ``--repeat`` times; figures are medians. A child:

* opens a new file with ``Store.open(create=True)`` (its own schema) and pre-fills ``--prefill``
  steps through its own write path (the rollup's lookups grow with the session);
* writes ``--steps`` more steps as the probes' recorder flushes them: per flush a connection of its
  own (``Store.open_append``), one transaction, ``Recorder._write_steps`` (the step rows of the
  flush), ``--batch`` steps a flush. The rows: ``benchmarks/views_scale.py``'s pattern, a runner
  row and a GDN builder row per step, every 997th step mixed (decodes + spec decodes), every
  10,007th builder row disagreeing with the runner's;
* reports rows per second of wall time and of the writer's CPU time (``thread_time``: on a shared
  machine the less noisy of the two). A reader connection holds the file open meanwhile (as a TUI or
  dashboard following the session does): otherwise each flush's close, the last connection's,
  checkpoints the WAL with an fsync, whose wait -- the same work in every mode -- follows the disk's
  other users and swamped the wall times (``--no-reader`` measures that way).

``plain``: this tree's file with the rows inserted by the same ``executemany`` and no rollup (what
writing cost before the rollup existed), the floor the batch rollup is measured against. Ratios
compare figures of one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _steps(first: int, n: int, pid: int) -> list:
    from benchmarks.views_scale import steps

    return steps(first, n, pid)


def child(path: str, mode: str, prefill: int, n: int, batch: int, reader: bool = True) -> dict:
    from vllm_diag.probes.recorder import Recorder
    from vllm_diag.store import Store

    class Writer:  # what Recorder._write_steps reads of a recorder
        pid = 4242
        _STEP_SQL = Recorder._STEP_SQL

    w = Writer()

    def plain_write(store, sid, steps):  # the same rows, the same executemany, no rollup
        rows = [(sid, w.pid, s.step_index, s.at, s.builder, s.group_index, s.num_reqs, s.num_decodes, s.num_spec_decodes,
                 s.num_prefills, s.num_decode_tokens, s.num_spec_decode_tokens, s.num_prefill_tokens, s.num_tokens, None)
                for s in steps]
        store.db.conn.executemany(Recorder._STEP_SQL, rows)

    with Store.open(path, create=True) as st:
        sid = st.new_session("engine")
        if mode == "plain":
            for (name,) in st.db.execute("select name from sqlite_master where type = 'trigger'").fetchall():
                st.db.execute(f'drop trigger "{name}"')
        write = plain_write if mode == "plain" else (lambda store, s, steps: Recorder._write_steps(w, store, s, steps))
        for first in range(0, prefill, 50_000):
            with st.transaction():
                write(st, sid, _steps(first, min(50_000, prefill - first), w.pid))
        schema = st.db.execute("select count(*) from _sqlite_migrations").fetchone()[0]
        triggers = st.db.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0]
    batches = [_steps(first, min(batch, prefill + n - first), w.pid) for first in range(prefill, prefill + n, batch)]
    rows = sum(len(b) for b in batches)
    held = Store.open(path) if reader else None
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for steps in batches:  # as Recorder._flush_once: a connection and a transaction per flush
        with Store.open_append(path) as st, st.transaction():
            write(st, sid, steps)
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    if held is not None:
        held.close()
    with Store.open(path) as st:  # the rollup the writes left behind (the same in every mode but plain)
        rollup = st.db.execute("select count(*), coalesce(sum(rows), 0), coalesce(sum(mixed), 0), "
                               "coalesce(sum(disagree), 0) from step_rollup").fetchone() if mode != "plain" else None
        marks = st.db.execute("select count(*) from step_marks").fetchone()[0] if mode != "plain" else None
    return {"mode": mode, "schema": schema, "triggers": triggers, "rows": rows, "flushes": len(batches),
            "rows_per_s": round(rows / wall), "rows_per_cpu_s": round(rows / cpu), "us_per_row_cpu": round(1e6 * cpu / rows, 2),
            "rollup": list(rollup) if rollup else None, "marks": marks}


def _child(args: list[str], pythonpath: Path | None) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:  # another revision's vllm_diag, found before the installed (editable) one
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=REPO, env=env,
                       check=False)
    if r.returncode != 0:
        raise SystemExit(f"child {args[1]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare-rev", metavar="REV", help="also measure this git revision's write path, in this run")
    ap.add_argument("--prefill", type=int, default=100_000, help="steps in the session before the measured writes")
    ap.add_argument("--steps", type=int, default=50_000, help="steps written and timed (2 rows a step)")
    ap.add_argument("--batch", default="50,500", help="steps per flush, comma-separated (default 50,500)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per mode; figures are medians")
    ap.add_argument("--json", metavar="OUT", help="also write the figures here")
    ap.add_argument("--no-reader", action="store_true",
                    help="no reader holds the file open: every flush's close checkpoints the WAL (fsync)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        path, mode, prefill, n, batch, reader = a.child
        print(json.dumps(child(path, mode, int(prefill), int(n), int(batch), reader == "reader")))
        return 0
    try:
        batches = [int(b) for b in a.batch.split(",")]
        if not batches or min(batches) < 1 or a.steps < 1 or a.prefill < 0 or a.repeat < 1:
            raise ValueError
    except ValueError:
        print(f"step_writes: --batch wants positive integers (got {a.batch!r}); --steps, --repeat >= 1, --prefill >= 0",
              file=sys.stderr)
        return 2
    modes: list[tuple[str, Path | None]] = []
    if a.compare_rev:
        from benchmarks.revision import export_revision

        modes.append(("at_rev", export_revision(a.compare_rev)))
    modes += [("now", None), ("plain", None)]
    result: dict = {"machine": f"{os.cpu_count()} cores", "prefill_steps": a.prefill, "steps": a.steps,
                    "reader_held": not a.no_reader,
                    "compare_rev": a.compare_rev, "by_batch": {}}
    tmp = Path(tempfile.mkdtemp(prefix="vllm-diag-step-writes-"))
    for batch in batches:
        runs: dict[str, list[dict]] = {name: [] for name, _ in modes}
        for i in range(a.repeat):
            for name, code in modes:
                db = tmp / f"{name}-{batch}-{i}.db"
                got = _child([str(db), "plain" if name == "plain" else "rollup", str(a.prefill), str(a.steps), str(batch),
                              "none" if a.no_reader else "reader"], code)
                runs[name].append(got)
                print(json.dumps({"batch": batch, "run": name, **got}), file=sys.stderr)
                for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                    p.unlink(missing_ok=True)
        fig = {name: {k: statistics.median(r[k] for r in got) for k in ("rows_per_s", "rows_per_cpu_s", "us_per_row_cpu")}
               | {"schema": got[0]["schema"], "triggers": got[0]["triggers"], "rollup": got[0]["rollup"],
                  "marks": got[0]["marks"]}
               for name, got in runs.items()}
        if "at_rev" in fig:
            assert fig["at_rev"]["rollup"] == fig["now"]["rollup"] and fig["at_rev"]["marks"] == fig["now"]["marks"], \
                "the two revisions left different rollups"
            fig["now_over_rev"] = {k: round(fig["now"][k] / fig["at_rev"][k], 2) for k in ("rows_per_s", "rows_per_cpu_s")}
        fig["plain_over_now"] = {k: round(fig["plain"][k] / fig["now"][k], 2) for k in ("rows_per_s", "rows_per_cpu_s")}
        result["by_batch"][str(batch)] = fig
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
