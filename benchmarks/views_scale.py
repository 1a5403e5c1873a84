"""Benchmark: the view layer and `vllm-diag report` on a session of 1,000,000 recorded steps.

Targets (issue 9): building every view model <= 1 s, the HTML report <= 3 s, with the timeline
aggregated and downsampled by SQLite (a rollup table the store's step write path keeps up to date
per batch as the probes write; ``Store.load(sid, steps="summary")``), not by Python loops over the rows.

The session is a real vLLM 0.26.0 GPU recording (``assets/gpu/qwen3next-serve-ngram3.db``: Qwen3-Next,
4 KV groups, block tables, GDN builder buffers) with STEPS more steps appended the way the probes
write them (``Recorder._write_steps``: one executemany per flush): per step the runner's row and the GDN builder's row; every
997th step mixes decodes with spec decodes, every 10,007th builder row disagrees with the runner.

Prints each phase's time and its ratio to the target, and, for contrast, the same timeline from
every step row loaded into Python (``steps=True`` + ``summarize_steps``) and the write cost of the
rollup (rows per second with and without it; benchmarks/step_writes.py compares it with the per-row
triggers of earlier revisions). Not a test: timings vary with the machine.

    .venv/bin/python benchmarks/views_scale.py [--steps 1000000] [--runs 3] [--keep DB]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vllm_diag.model import BatchStep  # noqa: E402
from vllm_diag.probes.recorder import Recorder  # noqa: E402
from vllm_diag.store import Store  # noqa: E402
from vllm_diag.views import build, summarize_steps  # noqa: E402

SOURCE = ROOT / "assets" / "gpu" / "qwen3next-serve-ngram3.db"
BATCH = 5_000  # steps per flush (the probes' recorder writes its buffer in batches)


class _Writer:  # the attributes Recorder._write_steps reads
    pid = 0
    _STEP_SQL = Recorder._STEP_SQL


WRITER = _Writer()


def steps(first: int, n: int, pid: int) -> list[BatchStep]:
    out = []
    for i in range(first, first + n):
        d, sd, p = 8, 0, 0
        if i % 997 == 0:
            d, sd = 5, 3  # decodes next to spec decodes
        if i % 50 == 1:
            p = 1
        tokens = d + sd * 4 + p * 64
        out.append(BatchStep(step_index=i, num_reqs=d + sd + p, num_decodes=d, num_spec_decodes=sd, num_prefills=p,
                             num_decode_tokens=d, num_spec_decode_tokens=sd * 4, num_prefill_tokens=p * 64,
                             num_tokens=tokens, pid=pid))
        out.append(BatchStep(step_index=i, num_reqs=d + sd + p, num_decodes=d + (1 if i % 10_007 == 3 else 0),
                             num_spec_decodes=sd, num_prefills=p, num_decode_tokens=d, num_spec_decode_tokens=sd * 4,
                             num_prefill_tokens=p * 64, num_tokens=tokens, builder="GDNAttentionMetadataBuilder",
                             group_index=0, pid=pid))
    return out


def write(st: Store, sid: str, pid: int, first: int, n: int) -> float:
    """Append steps with the probes' own write path (``Recorder._write_steps``: one executemany per
    flush, in one transaction); returns the seconds spent."""
    t0 = time.perf_counter()
    for start in range(first, first + n, BATCH):
        Recorder._write_steps(WRITER, st, sid, steps(start, min(BATCH, first + n - start), pid))
    return time.perf_counter() - t0


def make_db(path: Path, n: int) -> tuple[str, float]:
    shutil.copy(SOURCE, path)
    with Store.open(path, create=True) as st:  # migrates: rollup tables
        sid = st.resolve_session(None)
        pid = st.db.execute("select pid from batch_steps where session_id = ? limit 1", [sid]).fetchone()[0]
        start = st.db.execute("select max(step_index) from batch_steps where session_id = ?", [sid]).fetchone()[0] + 1
        WRITER.pid = pid
        return sid, write(st, sid, pid, start, n)


def write_rate_without_rollup(path: Path, n: int) -> float:
    """Rows per second for the same inserts with no rollup (the same executemany per flush, nothing else)."""
    shutil.copy(SOURCE, path)
    with Store.open(path, create=True) as st:
        sid = st.resolve_session(None)
        t0 = time.perf_counter()
        for start in range(10_000, 10_000 + n, BATCH):
            rows = [(sid, 7, s.step_index, s.at, s.builder, s.group_index, s.num_reqs, s.num_decodes, s.num_spec_decodes,
                     s.num_prefills, s.num_decode_tokens, s.num_spec_decode_tokens, s.num_prefill_tokens, s.num_tokens, None)
                    for s in steps(start, min(BATCH, 10_000 + n - start), 7)]
            with st.transaction():
                st.db.conn.executemany(Recorder._STEP_SQL, rows)
        return 2 * n / (time.perf_counter() - t0)


def timed(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DB", help="keep the generated database here")
    ap.add_argument("--skip-python", action="store_true", help="skip the all-rows-in-Python contrast")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="vllm-diag-views-scale-"))
    db = Path(args.keep) if args.keep else tmp / "scale.db"
    print(f"building a session of {args.steps:,} steps ({2 * args.steps:,} rows) from {SOURCE.name} ...", flush=True)
    sid, write_s = make_db(db, args.steps)
    rows = sqlite3.connect(db).execute("select count(*) from batch_steps where session_id = ?", [sid]).fetchone()[0]
    print(f"  written in {write_s:.1f} s through the probes' write path, rolled up per flush "
          f"({rows / write_s:,.0f} rows/s)")
    probe = min(args.steps, 100_000)
    plain = write_rate_without_rollup(tmp / "plain.db", probe)
    print(f"  the same inserts without the rollup: {plain:,.0f} rows/s -> the rollup costs "
          f"{plain / (rows / write_s):.2f}x write time ({1e6 / (rows / write_s) - 1e6 / plain:.1f} us per row, in the "
          f"probes' background writer)")

    from vllm_diag.ui.report import render_html

    def views_only():
        with Store.open(db) as st:
            return build(st.load(sid, steps="summary"))

    def report():
        vm = views_only()
        html = render_html(vm)
        (tmp / "report.html").write_text(html)
        return vm, len(html)

    views_s, vm = timed(views_only, args.runs)
    report_s, (rvm, size) = timed(report, args.runs)
    t = vm.timeline
    print(f"\nsession: {t.total_rows:,} rows, {t.total_steps:,} steps, drawn {len(t.series)} series x "
          f"{len(t.series[0].x):,} points ({t.width} steps per point); marks {dict(t.mark_counts)}")
    result = {
        "steps": args.steps, "rows": rows,
        "views_s": round(views_s, 3), "views_target_s": 1.0, "views_ratio": round(views_s / 1.0, 3),
        "report_s": round(report_s, 3), "report_target_s": 3.0, "report_ratio": round(report_s / 3.0, 3),
        "report_bytes": size, "rollup_write_cost_ratio": round(plain / (rows / write_s), 2),
    }
    print(f"load + every view model: {views_s * 1000:.0f} ms = {result['views_ratio']:.2f} x the 1 s target")
    print(f"load + views + HTML report ({size / 1e6:.1f} MB, written): {report_s * 1000:.0f} ms = "
          f"{result['report_ratio']:.2f} x the 3 s target")
    if not args.skip_python:
        def python_rows():
            with Store.open(db) as st:
                rec = st.load(sid, steps=True)
            return summarize_steps(rec.state.steps, rec.processes)

        py_s, summary = timed(python_rows, 1)
        result["python_rows_s"] = round(py_s, 3)
        result["python_vs_sql_ratio"] = round(py_s / views_s, 1)
        same = [(b.first_step, b.max_decodes, b.sum_tokens, b.mixed, b.disagree) for b in summary.buckets] == \
            [(b.first_step, b.max_decodes, b.sum_tokens, b.mixed, b.disagree) for b in st_summary(db, sid)]
        print(f"contrast: every row loaded into Python and summarised there: {py_s:.1f} s = "
              f"{result['python_vs_sql_ratio']:.0f} x the SQL path (same buckets: {same})")
        result["same_buckets"] = same
    print(json.dumps(result))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def st_summary(db: Path, sid: str):
    with Store.open(db) as st:
        return st.step_summary(sid).buckets


if __name__ == "__main__":
    sys.exit(main())
