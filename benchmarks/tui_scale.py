"""The TUI at scale (issue 10): a 1,000,000-step session's first paint and timeline scrolling, and
``--follow`` on an engine writing 1,000 steps/s.

    .venv/bin/python benchmarks/tui_scale.py [--steps 1000000] [--rate 1000] [--seconds 20] [--json OUT]

The session: the real vLLM 0.26.0 GPU recording ``assets/gpu/qwen3next-serve-ngram3.db`` (a
``vllm serve`` run: a runner row and a GDN-builder row per step), its step rows repeated until
``--steps`` steps (2 rows per step), every 997th step made a mixed decode + spec-decode step so the
marks are exercised. Rows are inserted through SQLite (the store's triggers keep the step rollup
as they do for the probes). Built once into ``build/bench/`` and reused.

Measured, each in a fresh interpreter (child processes), headless (Textual's headless driver: the
screen is composed and rendered, nothing is written to a terminal):

* ``first_paint_s``: from ``DiagApp(...)`` to the first frame showing the session's data (header,
  findings, page map, state index, suggestions: the record without its steps), ``timeline_drawn_s``
  to the first frame with the timeline (the store's SQL step summary), and ``process_to_paint_s``
  from interpreter start (imports included);
* scrolling: latency of each key on the timeline (``right`` x N, ``pagedown``/``pageup``, ``end``,
  ``home``, zoom ``+``/``-``/``0``): median, p99 and max in ms. "No stalls" = max under 100 ms;
* follow: a writer process appends ``--rate`` steps/s (in batches every 0.2 s, one transaction each,
  as the probes' recorder does) to a copy of the session while the TUI follows it for ``--seconds``;
  the TUI's CPU time over that window / wall time (``cpu_fraction``; goal <= 0.05 of one core), the
  steps written vs shown at the end, and the largest lag seen (steps written but not yet shown).

Ratios and limits compare figures of one run on one machine; timings on a shared 2-core machine vary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

T0 = time.monotonic()  # interpreter start (close enough: before the heavy imports)
REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "assets" / "gpu" / "qwen3next-serve-ngram3.db"
BUILD = REPO / "build" / "bench"
COLS = ("session_id", "pid", "step_index", "at", "builder", "group_index", "num_reqs", "num_decodes", "num_spec_decodes",
        "num_prefills", "num_decode_tokens", "num_spec_decode_tokens", "num_prefill_tokens", "num_tokens",
        "spec_tokens_per_req")


# ---------------------------------------------------------------------------------------- the DB


def _pattern(conn: sqlite3.Connection, sid: str) -> tuple[list[tuple], int, int]:
    rows = conn.execute(f"select {', '.join(COLS)} from batch_steps where session_id = ? order by step_index, rowid",
                        [sid]).fetchall()
    first = min(r[2] for r in rows)
    last = max(r[2] for r in rows)
    return rows, first, last


def _rows_for(pattern: list[tuple], first: int, period: int, start: int, stop: int, t: float):
    """Rows of steps ``start .. stop - 1``, cycling the recording's steps; every 997th mixed."""
    by_step: dict[int, list[tuple]] = {}
    for r in pattern:
        by_step.setdefault(r[2] - first, []).append(r)
    for step in range(start, stop):
        for r in by_step.get(step % period, ()):
            row = list(r)
            row[2] = step
            row[3] = t + step * 1e-3
            if step % 997 == 0 and (row[7] or 0) > 0:
                row[8] = 2  # num_spec_decodes: a mixed decode + spec-decode step
            yield tuple(row)


def build_db(steps: int) -> tuple[Path, str]:
    from vllm_diag.store import Store

    BUILD.mkdir(parents=True, exist_ok=True)
    db = BUILD / f"tui-{steps}-steps.db"
    stamp = db.with_suffix(".ok")
    if db.exists() and stamp.exists():
        return db, stamp.read_text().strip()
    for p in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(SOURCE, db)
    Store.open(db, create=True).close()  # migrate: the rollup tables and their triggers
    conn = sqlite3.connect(db, isolation_level=None)
    sid = conn.execute("select id from sessions").fetchone()[0]
    pattern, first, last = _pattern(conn, sid)
    conn.execute("delete from batch_steps where session_id = ?", [sid])
    conn.execute("delete from step_rollup where session_id = ?", [sid])
    conn.execute("delete from step_marks where session_id = ?", [sid])
    t = time.time()
    chunk = 50_000
    sql = f"insert into batch_steps ({', '.join(COLS)}) values ({', '.join('?' * len(COLS))})"
    print(f"building {db.name}: {steps:,} steps ...", file=sys.stderr)
    for start in range(0, steps, chunk):
        conn.execute("begin")
        conn.executemany(sql, _rows_for(pattern, first, last - first + 1, start, min(steps, start + chunk), t))
        conn.execute("commit")
    conn.close()
    stamp.write_text(sid)
    return db, sid


# ---------------------------------------------------------------------------------------- children


async def _wait_loaded(pilot, timeout: float = 120.0, full: bool = True):
    """The session screen drawn with its record (``full=False``: the first paint, everything but
    the timeline) or with the timeline too (``full``: the step summary read, follow marks taken)."""
    from vllm_diag.ui.tui.session import SessionScreen

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = pilot.app.screen
        if isinstance(screen, SessionScreen) and screen.record is not None and (not full or screen.marks is not None):
            return screen
        await pilot.pause(0.005)
    raise SystemExit("session screen never loaded")


def child_paint_and_scroll(db: str, sid: str, keys: int) -> dict:
    from vllm_diag.ui.tui.app import DiagApp
    from vllm_diag.ui.tui.timeline import TimelineChart, TimelinePane

    out: dict = {}
    renders: list[float] = []
    original = TimelineChart.render

    def timed_render(self):  # the chart's own drawing time, apart from Pilot's round trips
        t = time.perf_counter()
        try:
            return original(self)
        finally:
            renders.append((time.perf_counter() - t) * 1000)

    TimelineChart.render = timed_render

    from textual.app import App

    frames: list[tuple[float, bool, bool]] = []  # (time, a session's data on screen, its timeline too)
    display = App._display

    def timed_display(self, screen, renderable):  # every frame Textual hands to its (headless) driver
        frames.append((time.monotonic(), getattr(screen, "record", None) is not None,
                       getattr(screen, "marks", None) is not None))
        return display(self, screen, renderable)

    App._display = timed_display

    async def main():
        t_app = time.monotonic()
        app = DiagApp(db, session=sid)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await _wait_loaded(pilot)
            await pilot.pause(0.2)
            first = next(t for t, data, _ in frames if data)
            drawn = next(t for t, _, timeline in frames if timeline)
            out["first_paint_s"] = round(first - t_app, 3)  # the first frame with the session's data
            out["process_to_paint_s"] = round(first - T0, 3)  # the same from interpreter start (imports)
            out["timeline_drawn_s"] = round(drawn - t_app, 3)  # the first frame with the timeline
            vm = screen.query_one(TimelinePane).vm
            out["total_steps"] = vm.total_steps
            out["steps_per_column"] = vm.width
            out["buckets"] = len(vm.series[0].x) if vm.series else 0
            await pilot.press("4")
            lat: dict[str, list[float]] = {}
            plan = ["home"] + ["right"] * keys + ["pagedown"] * 20 + ["pageup"] * 20 + ["end", "home"] + \
                   ["plus"] * 6 + ["right"] * 50 + ["minus"] * 6 + ["0"] + ["m"] * 5
            for key in plan:
                t = time.monotonic()
                await pilot.press(key)
                lat.setdefault(key, []).append((time.monotonic() - t) * 1000)
            every = [x for v in lat.values() for x in v]
            every.sort()
            out["keys"] = len(every)
            out["key_ms_median"] = round(statistics.median(every), 2)
            out["key_ms_p99"] = round(every[int(len(every) * 0.99) - 1], 2)
            out["key_ms_max"] = round(every[-1], 2)
            out["key_ms_max_by_key"] = {k: round(max(v), 2) for k, v in lat.items()}
            renders.sort()
            out["chart_render_ms_median"] = round(statistics.median(renders), 2) if renders else None
            out["chart_render_ms_max"] = round(renders[-1], 2) if renders else None

    asyncio.run(main())
    return out


def child_follow(db: str, sid: str, seconds: float, progress: str) -> dict:
    from vllm_diag.ui.tui.app import DiagApp
    from vllm_diag.ui.tui.timeline import TimelinePane

    out: dict = {}

    async def main():
        app = DiagApp(db, session=sid, follow=True)  # the default poll interval
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await _wait_loaded(pilot)
            await pilot.press("4")
            pane = screen.query_one(TimelinePane)
            Path(progress).write_text("ready")
            ru0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
            lags = []
            while time.monotonic() - t0 < seconds:
                await pilot.pause(0.5)
                written = _written(progress)
                if written is not None:
                    lags.append(written - (pane.vm.last_step or 0))
            ru1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
            cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
            out["wall_s"] = round(t1 - t0, 2)
            out["cpu_s"] = round(cpu, 3)
            out["cpu_fraction"] = round(cpu / (t1 - t0), 4)
            out["max_lag_steps"] = max(lags) if lags else None
            # the writer's last batch: how long until it is on screen
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not Path(progress + ".done").exists():
                await pilot.pause(0.05)
            last = int(Path(progress + ".done").read_text()) if Path(progress + ".done").exists() else None
            t_done = time.monotonic()
            while time.monotonic() < t_done + 10 and pane.vm.last_step != last:
                await pilot.pause(0.02)
            out["last_batch_shown_after_s"] = round(time.monotonic() - t_done, 3)
            out["shown_last_step"] = pane.vm.last_step

    asyncio.run(main())
    return out


def _written(progress: str) -> int | None:
    try:
        text = Path(progress).read_text()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def child_writer(db: str, sid: str, rate: int, seconds: float, progress: str) -> dict:
    """An engine's recorder: ``rate`` steps/s, a batch every 0.2 s, one transaction per batch."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("pragma journal_mode = wal")
    pattern, first, last = _pattern(conn, sid)
    start = conn.execute("select max(step_index) from batch_steps where session_id = ?", [sid]).fetchone()[0] + 1
    # the pattern of the copy: steps of the last recorded period
    pattern = [r for r in pattern if r[2] < first + 122] or pattern
    sql = f"insert into batch_steps ({', '.join(COLS)}) values ({', '.join('?' * len(COLS))})"
    while _written(progress) is None and Path(progress).read_text() != "ready":
        time.sleep(0.05)
    batch = max(1, int(rate * 0.2))
    t0 = time.monotonic()
    step = start
    n = 0
    while time.monotonic() - t0 < seconds:
        conn.execute("begin immediate")
        conn.executemany(sql, _rows_for(pattern, first, 122, step, step + batch, time.time()))
        conn.execute("commit")
        step += batch
        n += batch
        Path(progress).write_text(str(step - 1))
        time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
    conn.close()
    Path(progress + ".done").write_text(str(step - 1))
    return {"steps_written": n, "rate_achieved": round(n / (time.monotonic() - t0), 1), "last_step": step - 1}


# ---------------------------------------------------------------------------------------- main


def _child(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--rate", type=int, default=1000, help="steps/s the writer appends in the follow test")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the follow test runs")
    ap.add_argument("--keys", type=int, default=300, help="right-arrow presses on the timeline")
    ap.add_argument("--json", metavar="OUT", help="also write the figures here")
    ap.add_argument("--no-rollup-triggers", action="store_true",
                    help="follow test: drop the store's step-rollup triggers on the copy, so a slow machine's writer "
                         "can reach --rate (the TUI's follow path reads batch_steps rows, not the rollup)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, rest = a.child[0], a.child[1:]
        if kind == "paint":
            res = child_paint_and_scroll(rest[0], rest[1], int(rest[2]))
        elif kind == "follow":
            res = child_follow(rest[0], rest[1], float(rest[2]), rest[3])
        else:
            res = child_writer(rest[0], rest[1], int(rest[2]), float(rest[3]), rest[4])
        print(json.dumps(res))
        return 0

    db, sid = build_db(a.steps)
    result: dict = {"steps": a.steps, "rows": None, "machine": f"{os.cpu_count()} cores"}
    with sqlite3.connect(db) as conn:
        result["rows"] = conn.execute("select count(*) from batch_steps").fetchone()[0]
    result["open"] = _child(["--child", "paint", str(db), sid, str(a.keys)])
    print(json.dumps(result["open"], indent=2), file=sys.stderr)

    live = BUILD / "tui-follow.db"
    for p in (live, Path(str(live) + "-wal"), Path(str(live) + "-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(db, live)
    if a.no_rollup_triggers:
        with sqlite3.connect(live) as conn:
            for (name,) in conn.execute("select name from sqlite_master where type = 'trigger'").fetchall():
                conn.execute(f'drop trigger "{name}"')
    progress = BUILD / "tui-follow.progress"
    progress.write_text("")
    Path(str(progress) + ".done").unlink(missing_ok=True)
    writer = subprocess.Popen([sys.executable, __file__, "--child", "write", str(live), sid, str(a.rate), str(a.seconds),
                               str(progress)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    follow = _child(["--child", "follow", str(live), sid, str(a.seconds), str(progress)])
    wout, _ = writer.communicate(timeout=120)
    follow["writer"] = json.loads(wout.strip().splitlines()[-1])
    follow["kept_up"] = follow["shown_last_step"] == follow["writer"]["last_step"]
    follow["rollup_triggers"] = not a.no_rollup_triggers
    result["follow"] = follow
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
