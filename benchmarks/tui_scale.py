"""The TUI at scale (issue 10): a 1,000,000-step session's first paint and timeline scrolling, and
``--follow`` on an engine writing 1,000 steps/s.

    .venv/bin/python benchmarks/tui_scale.py [--steps 1000000] [--rate 1000] [--seconds 20] [--json OUT]

The session: the real vLLM 0.26.0 GPU recording ``assets/gpu/qwen3next-serve-ngram3.db`` (a
``vllm serve`` run: a runner row and a GDN-builder row per step), its step rows repeated until
``--steps`` steps (2 rows per step), every 997th step made a mixed decode + spec-decode step so the
marks are exercised. Rows are written through the store's step write path (``Store.add_step_rows``:
the rows and their rollup, as the probes write them). Built once into ``build/bench/`` and reused.

Measured, each in a fresh interpreter (child processes), headless (Textual's headless driver: the
screen is composed and rendered, nothing is written to a terminal):

* ``first_paint_s``: from ``DiagApp(...)`` to the first frame showing the session's data (header,
  findings, page map, state index, suggestions: the record without its steps), ``timeline_drawn_s``
  to the first frame with the timeline (the store's SQL step summary), and ``process_to_paint_s``
  from interpreter start (imports included);
* scrolling: latency of each key on the timeline (``right`` x N, ``pagedown``/``pageup``, ``end``,
  ``home``, zoom ``+``/``-``/``0``, ``m``): median, p99 and max in ms. "No stalls" = max under 100 ms.
  ``key_ms`` is Pilot's ``press``: it returns once the app has handled the key and the whole process
  (worker threads included) has been idle for a moment, so it has a floor of its own -- ``x`` (a key
  bound to nothing) measures that floor. ``frame_ms``: from the key to the last frame drawn before
  ``press`` returned (the key's picture on screen, a zoom's worker read included);
  ``loop_stall_ms_max``: the longest the event loop did not run while the keys were pressed (how long
  the UI could not take a key); ``chart_render_ms``: the chart widget's ``render_lines``;
* ``--compare-rev REV``: the same measurement of the code of another git revision (its ``diag``,
  ``ui``, ``probes`` exported with ``git archive`` into ``build/bench/rev-REV/``), in the same run,
  alternating with the working tree's (``--repeat N`` times; each figure the median of the runs), so
  the two can be compared as ratios; the follow test too;
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
sys.path.insert(0, str(REPO))
from benchmarks.revision import export_revision  # noqa: E402
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
    conn.close()
    t = time.time()
    chunk = 50_000
    print(f"building {db.name}: {steps:,} steps ...", file=sys.stderr)
    with Store.open(db, create=True) as st:  # the store's step write path: the rows and their rollup
        for start in range(0, steps, chunk):
            st.add_step_rows(list(_rows_for(pattern, first, last - first + 1, start, min(steps, start + chunk), t)))
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
    import vllm_diag
    from vllm_diag.ui.tui.app import DiagApp
    from vllm_diag.ui.tui.timeline import TimelineChart, TimelinePane

    out: dict = {"code": str(Path(vllm_diag.__file__).resolve().parent.relative_to(REPO))}
    renders: list[float] = []
    original = TimelineChart.render_lines

    def timed_render(self, crop):  # the chart's own drawing time, apart from Pilot's round trips
        t = time.perf_counter()
        try:
            return original(self, crop)
        finally:
            renders.append((time.perf_counter() - t) * 1000)

    TimelineChart.render_lines = timed_render

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
            await pilot.pause(0.2)
            lat: dict[str, list[float]] = {}
            shown: dict[str, list[float]] = {}
            stalls: list[float] = []
            ticking = True

            async def ticker():  # how late the event loop comes back to a 2 ms sleep: the UI's stalls
                while ticking:
                    t = time.monotonic()
                    await asyncio.sleep(0.002)
                    stalls.append((time.monotonic() - t - 0.002) * 1000)

            tick = asyncio.create_task(ticker())
            plan = ["x"] * 10 + ["home"] + ["right"] * keys + ["pagedown"] * 20 + ["pageup"] * 20 + ["end", "home"] + \
                   ["plus"] * 6 + ["right"] * 50 + ["minus"] * 6 + ["0"] + ["m"] * 5
            stall_by_key: dict[str, float] = {}
            slow: list[list] = []  # presses over 200 ms: [#, key, key_ms, frame_ms, stall_ms]
            for i, key in enumerate(plan):
                t, n0 = time.monotonic(), len(stalls)
                await pilot.press(key)
                lat.setdefault(key, []).append((time.monotonic() - t) * 1000)
                stall_by_key[key] = max([stall_by_key.get(key, 0.0), *stalls[n0:]])
                drawn = [f for f, _, _ in frames if f >= t]
                if drawn:
                    shown.setdefault(key, []).append((drawn[-1] - t) * 1000)
                if lat[key][-1] > 200:
                    slow.append([i, key, round(lat[key][-1], 1), round((drawn[-1] - t) * 1000, 1) if drawn else None,
                                 round(max(stalls[n0:], default=0.0), 1)])
            out["slow_presses"] = slow
            ticking = False
            await tick
            floor = lat.pop("x")
            out["noop_key_ms_median"] = round(statistics.median(floor), 2)  # Pilot's own floor
            out["noop_frame_ms_median"] = round(statistics.median(shown.pop("x")), 2) if shown.get("x") else None
            every_shown = sorted(x for v in shown.values() for x in v)
            out["frame_ms_median"] = round(statistics.median(every_shown), 2)
            out["frame_ms_p99"] = round(every_shown[int(len(every_shown) * 0.99) - 1], 2)
            out["frame_ms_max"] = round(every_shown[-1], 2)
            out["frame_ms_by_key"] = {k: {"median": round(statistics.median(v), 2), "max": round(max(v), 2)}
                                      for k, v in shown.items()}
            out["loop_stall_ms_max"] = round(max(stalls), 2)
            out["loop_stall_ms_max_by_key"] = {k: round(v, 2) for k, v in stall_by_key.items()}
            every = [x for v in lat.values() for x in v]
            every.sort()
            out["keys"] = len(every)
            out["key_ms_median"] = round(statistics.median(every), 2)
            out["key_ms_p99"] = round(every[int(len(every) * 0.99) - 1], 2)
            out["key_ms_max"] = round(every[-1], 2)
            out["key_ms_max_by_key"] = {k: round(max(v), 2) for k, v in lat.items()}
            out["key_ms_by_key"] = {k: {"median": round(statistics.median(v), 2),
                                        "p99": round(sorted(v)[max(0, -(-len(v) * 99 // 100) - 1)], 2),
                                        "max": round(max(v), 2)} for k, v in lat.items()}
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
    # a file of schema 7+ is rolled up by its writers, per batch (the store's write path); a file built
    # before that (readable by older revisions) by its per-row triggers, or not at all (--no-rollup-triggers)
    store = None
    if conn.execute("select count(*) from _sqlite_migrations").fetchone()[0] >= 7:
        from vllm_diag.store import Store

        store = Store.open_append(db)
    while _written(progress) is None and Path(progress).read_text() != "ready":
        time.sleep(0.05)
    batch = max(1, int(rate * 0.2))
    t0 = time.monotonic()
    step = start
    n = 0
    while time.monotonic() - t0 < seconds:
        rows = list(_rows_for(pattern, first, 122, step, step + batch, time.time()))
        if store is not None:
            store.add_step_rows(rows)
        else:
            conn.execute("begin immediate")
            conn.executemany(sql, rows)
            conn.execute("commit")
        step += batch
        n += batch
        Path(progress).write_text(str(step - 1))
        time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
    conn.close()
    if store is not None:
        store.close()
    Path(progress + ".done").write_text(str(step - 1))
    return {"steps_written": n, "rate_achieved": round(n / (time.monotonic() - t0), 1), "last_step": step - 1}


# ---------------------------------------------------------------------------------------- main


def _child(args: list[str], pythonpath: Path | None = None) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:  # another revision's vllm_diag, found before the installed (editable) one
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=REPO, env=env)
    if r.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _median_of(runs: list[dict]):
    """Each figure as the median of the runs' (dicts: per key; other values: the first run's)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: _median_of([r[k] for r in runs if isinstance(r, dict) and k in r]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool) and all(isinstance(r, (int, float)) for r in runs):
        return round(statistics.median(runs), 3)
    return first


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
    ap.add_argument("--compare-rev", metavar="REV",
                    help="also measure opening and scrolling with the code of this git revision, in this run, first")
    ap.add_argument("--no-follow", action="store_true", help="skip the follow test")
    ap.add_argument("--repeat", type=int, default=1,
                    help="open and scroll this many times (alternating with --compare-rev); figures are medians of the runs")
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
    runs: dict[str, list[dict]] = {"open_at_rev": [], "open": []}
    for _ in range(a.repeat):  # alternately, so that a busy spell on a shared machine hits both
        for name, code in ([("open_at_rev", export_revision(a.compare_rev))] if a.compare_rev else []) + [("open", None)]:
            runs[name].append(_child(["--child", "paint", str(db), sid, str(a.keys)], pythonpath=code))
            print(json.dumps(runs[name][-1]), file=sys.stderr)
    for name, got in runs.items():
        if got:
            result[name] = _median_of(got)
            if a.repeat > 1:
                result[name]["runs"] = a.repeat
    if a.compare_rev:
        result["compare_rev"] = a.compare_rev
        before, after = result["open_at_rev"], result["open"]
        result["ratios_rev_over_now"] = {k: round(before[k] / after[k], 2) for k in (
            "first_paint_s", "key_ms_median", "key_ms_p99", "key_ms_max", "frame_ms_median", "frame_ms_p99",
            "frame_ms_max", "loop_stall_ms_max", "chart_render_ms_median") if before.get(k) and after.get(k)}
    if a.no_follow:
        print(json.dumps(result, indent=2))
        if a.json:
            Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
        return 0

    for name, code in ([("follow_at_rev", export_revision(a.compare_rev))] if a.compare_rev else []) + [("follow", None)]:
        result[name] = _follow(db, sid, a, code)
        print(json.dumps(result[name], indent=2), file=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0


def _follow(db: Path, sid: str, a, code: Path | None) -> dict:
    """The follow test on a fresh copy of the session (``code``: another revision's package)."""
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
    follow = _child(["--child", "follow", str(live), sid, str(a.seconds), str(progress)], pythonpath=code)
    wout, _ = writer.communicate(timeout=120)
    follow["writer"] = json.loads(wout.strip().splitlines()[-1])
    follow["kept_up"] = follow["shown_last_step"] == follow["writer"]["last_step"]
    follow["rollup_triggers"] = not a.no_rollup_triggers
    return follow


if __name__ == "__main__":
    sys.exit(main())
