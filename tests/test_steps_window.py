"""Zoom windows merged in memory from a loaded step summary (``steps.window``) say exactly what
the store's window of the same range says -- the window's step and row counts, buckets and marks --
or ``None`` (the window is read from the store) where the loaded summary cannot say it: marks cut at
``MARK_LIMIT`` before the window, steps it cannot count, other processes' rows. Sessions are built
through the Store API (the triggers keep the rollup and the marks, as when the probes append rows).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from vllm_diag.model import BatchStep, ProcessInfo
from vllm_diag.steps import MARK_LIMIT, window
from vllm_diag.store import Store

GDN = "GDNAttentionMetadataBuilder"
STEPS = 60_000


def _rows(n: int, mixed_every: int, disagree_every: int, start: int = 0, skip=()) -> list[BatchStep]:
    """A runner row per step (decodes + spec decodes every ``mixed_every`` steps), a builder row
    every 4th step, splitting differently from the runner every ``disagree_every`` steps."""
    out = []
    for i in range(start, n):
        if i in skip:
            continue
        mixed = i % mixed_every == 3
        d, sd = (3, 2) if mixed else (4, 0)
        out.append(BatchStep(step_index=i, num_reqs=4 + i % 5, num_decodes=d, num_spec_decodes=sd,
                             num_tokens=4 + i % 7))
        if i % 4 == 0 or i % disagree_every == 0:
            bd = d + 1 if i % disagree_every == 0 else d
            out.append(BatchStep(step_index=i, num_reqs=4 + i % 5, num_decodes=bd, num_spec_decodes=sd,
                                 num_tokens=4 + i % 7, builder=GDN, group_index=0))
    return out


def _session(store: Store, rows: list[BatchStep], pid: int = 0) -> str:
    sid = store.new_session("engine")
    for i in range(0, len(rows), 20_000):
        store.add_rows("batch_steps", sid, pid, rows[i:i + 20_000])
    return sid


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Session ``dense``: marks over the whole range, far beyond ``MARK_LIMIT`` of each kind;
    ``sparse``: fewer marks than the limit (every window's marks are held); ``gaps``: steps missing."""
    path = tmp_path_factory.mktemp("steps-window") / "w.db"
    with Store.open(path, create=True) as store:
        ids = {"dense": _session(store, _rows(STEPS, 13, 52)),
               "sparse": _session(store, _rows(STEPS, 997, 1499)),
               "gaps": _session(store, _rows(STEPS, 997, 1499, skip=set(range(30_000, 30_500))))}
    return path, ids


def _key(m):
    return m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1


def _equal(mem, sql):
    assert (mem.total_rows, mem.total_steps, mem.first_step, mem.last_step, mem.width, mem.pid, mem.pids) == \
        (sql.total_rows, sql.total_steps, sql.first_step, sql.last_step, sql.width, sql.pid, sql.pids)
    assert mem.buckets == sql.buckets
    assert mem.mark_counts == sql.mark_counts
    assert sorted(mem.marks, key=_key) == sorted(sql.marks, key=_key)


# (first, last, columns): coarse windows (the summary's 32-step buckets merged), early, late, at the
# end, not aligned to any bucket
RANGES = [(0, 2047, 4), (0, 16_383, 32), (1000, 9000, 16), (20_000, 51_000, 60), (41_000, 59_999, 37),
          (57_345, 59_999, 5), (0, STEPS - 1, 100), (30_100, 30_900, 25), (59_000, 70_000, 1)]


@pytest.mark.parametrize("first,last,cols", RANGES)
def test_window_in_memory_equals_the_store_window(db, first, last, cols):
    path, ids = db
    with Store.open(path) as store:
        for name in ("dense", "sparse"):
            loaded = store.step_summary(ids[name])
            assert loaded.width == 32
            sql = store.step_summary(ids[name], max_points=cols, first_step=first, last_step=last)
            mem = window(loaded, first, last, cols)
            if name == "sparse" or sql.last_step < 13 * MARK_LIMIT:  # every mark of the window held
                assert mem is not None, (name, first, last)
            if mem is None:  # the summary's marks were cut before the window: it is read from the store
                held = [m for m in loaded.marks if m.kind == "mixed" and sql.first_step <= m.step_index]
                assert loaded.mark_counts["mixed"] > MARK_LIMIT and len(held) < sql.mark_counts["mixed"]
                continue
            _equal(mem, sql)
            assert mem.total_steps == sql.last_step - sql.first_step + 1 < STEPS or (first, last) == (0, STEPS - 1)
            if sql.last_step == loaded.last_step:  # a window at the end has the session's last rows
                assert [(s.step_index, s.builder) for s in mem.tail] == [(s.step_index, s.builder) for s in sql.tail]
            else:
                assert mem.tail == []


def test_late_window_of_a_session_with_cut_marks_is_read_from_the_store(db):
    """Past the steps the summary's first ``MARK_LIMIT`` marks reach, the summary holds none of a
    window's marks: the window is not merged in memory (its mark texts would be missing)."""
    path, ids = db
    with Store.open(path) as store:
        loaded = store.step_summary(ids["dense"])
        assert len([m for m in loaded.marks if m.kind == "mixed"]) == MARK_LIMIT
        assert max(m.step_index for m in loaded.marks if m.kind == "mixed") < 13 * MARK_LIMIT
        assert window(loaded, 40_000, 49_999, 40) is None
        sql = store.step_summary(ids["dense"], max_points=40, first_step=40_000, last_step=49_999)
        assert sql.total_steps == 10_240 and sql.marks and all(39_936 <= m.step_index <= 50_175 for m in sql.marks)
        # the whole session at a coarser width holds the first MARK_LIMIT of each kind, as the store's
        _equal(window(loaded, 0, STEPS - 1, 50), store.step_summary(ids["dense"], max_points=50, first_step=0,
                                                                     last_step=STEPS - 1))


def test_window_steps_it_cannot_count_or_other_processes_rows(db, tmp_path):
    path, ids = db
    with Store.open(path) as store:
        gaps = store.step_summary(ids["gaps"])
        assert gaps.total_steps == STEPS - 500 and gaps.width == 32
        assert window(gaps, 20_000, 40_000, 20) is None  # distinct steps not known from 32-step buckets
        short = store.step_summary(ids["gaps"], first_step=29_000, last_step=31_999)
        assert short.width == 2
    steps = _rows(1500, 7, 11, skip={100, 101, 102})
    with Store.open(tmp_path / "small.db", create=True) as store:
        sid = _session(store, steps)
        loaded = store.step_summary(sid)  # one step per bucket: the window counts them
        assert loaded.width == 1
        for first, last, cols in ((0, 1499, 20), (90, 400, 10), (96, 103, 1)):
            mem = window(loaded, first, last, cols)
            assert mem is not None
            _equal(mem, store.step_summary(sid, max_points=cols, first_step=first, last_step=last))
        assert window(loaded, 0, 1499, 3000) is None or window(loaded, 0, 1499, 3000).width == 1
        other = _session(store, _rows(1500, 7, 11), pid=11)
        two = store.step_summary(other, [ProcessInfo(pid=11, rank=0)])
        assert window(two, 0, 1499, 20) is not None
        store.add_rows("batch_steps", other, 12, _rows(1500, 7, 11))
        two = store.step_summary(other, [ProcessInfo(pid=11, rank=0), ProcessInfo(pid=12, rank=1)])
        assert two.pids == [11, 12] and window(two, 0, 1499, 20) is None  # the store counts pid 12's rows too


# ------------------------------------------------------------------------------------------ TUI

pytest.importorskip("textual", reason="the TUI needs the tui extra (pip install 'vllm-diag[tui]')")


def test_tui_late_zoomed_window_title_and_cursor_marks(db):
    """Zoomed in at the end of the ``dense`` session (marks beyond the summary's mark limit): the title
    counts the window's steps, and the cursor line on a mixed column names its marked step."""
    from textual.widgets import Static
    from vllm_diag.ui.tui.app import DiagApp
    from vllm_diag.ui.tui.session import SessionScreen
    from vllm_diag.ui.tui.timeline import TimelineChart, TimelinePane

    path, ids = db
    sid = ids["dense"]
    seen = {}

    async def wait(pilot, cond, what):
        deadline = time.monotonic() + 30
        while not cond() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert cond(), what

    async def scenario(pilot):
        await wait(pilot, lambda: isinstance(pilot.app.screen, SessionScreen) and pilot.app.screen.marks is not None,
                   "session loaded")
        screen = pilot.app.screen
        await pilot.press("4")
        pane = screen.query_one(TimelinePane)
        chart = screen.query_one(TimelineChart)
        title = lambda: screen.query_one("#timeline-title", Static).content.plain
        cursor = lambda: screen.query_one("#timeline-cursor", Static).content.plain
        await pilot.press("0", "end", "plus")
        await wait(pilot, lambda: pane.zoom is not None and pane.vm.total_steps < STEPS, "a zoomed window shown")
        seen["zoom"], seen["vm"], seen["title"], seen["cols"] = pane.zoom, pane.vm, title(), chart.cols
        await pilot.press("home", "m")
        await pilot.pause(0.1)
        seen["cursor"], seen["column"] = cursor(), chart.cursor

    async def main():
        async with DiagApp(path, session=sid).run_test(size=(100, 32)) as pilot:
            await pilot.pause(0.1)
            await scenario(pilot)

    asyncio.run(main())
    lo, hi = seen["zoom"]
    vm = seen["vm"]
    with Store.open(path) as store:
        sql = store.step_summary(sid, max_points=seen["cols"], first_step=lo, last_step=hi)
        loaded = store.step_summary(sid)
    # coarser than the loaded summary's buckets (a window merged in memory before), past the marks it holds
    assert vm.width > loaded.width and lo > 13 * MARK_LIMIT
    assert sql.width == vm.width and (sql.first_step, sql.last_step) == (vm.first_step, vm.last_step)
    assert f"steps {sql.first_step:,}–{sql.last_step:,} ({sql.total_steps:,} steps)" in seen["title"]
    assert f"({STEPS:,} steps)" not in seen["title"]
    assert f"▲ {sql.mark_counts['mixed']:,} mixed" in seen["title"]
    runner = next(s for s in vm.series if s.source == "runner")
    first, last = runner.x[seen["column"]], runner.x_last[seen["column"]]
    # the cursor line names the column's first mark in the view's order (disagree before mixed)
    mark = min((m for m in sql.marks if first <= m.step_index <= last), key=_key)
    assert mark.step_index not in {m.step_index for m in loaded.marks}
    text = ("3 decodes + 2 spec decodes in one step (runner)" if mark.kind == "mixed" else
            f"{GDN} (group 0) splits {mark.num_decodes}/{mark.num_spec_decodes}/0 (decodes/spec/prefills), the runner 4/")
    assert f"\n  step {mark.step_index:,}: {text}" in seen["cursor"]
    assert any(m.kind == "mixed" and first <= m.step_index <= last for m in sql.marks)  # m moved to a mixed column
