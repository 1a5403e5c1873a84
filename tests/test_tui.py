"""The TUI (``vllm-diag tui``) driven by Textual's Pilot on real sessions: seed pre-flight checks,
analysed real crash logs, and real vLLM 0.26.0 GPU recordings. Assertions are on what the widgets
show (their text), after real key presses.

The follow-mode tests append rows with the store (as the probes do) while the app runs; the
real-engine and real-terminal (tmux) tests are in ``test_tui_tmux.py``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("textual", reason="the TUI needs the tui extra (pip install 'vllm-diag[tui]')")

from textual.widgets import DataTable, OptionList, Static, TabbedContent  # noqa: E402

from tests.tui_sessions import REPO, gpu_db, log_db, seed_db, session_id  # noqa: E402
from vllm_diag.model import BatchStep, ErrorRecord  # noqa: E402
from vllm_diag.store import Store  # noqa: E402
from vllm_diag.ui.tui.app import DiagApp  # noqa: E402
from vllm_diag.ui.tui.panes import SuggestionsPane  # noqa: E402
from vllm_diag.ui.tui.screens import HelpScreen, SessionsScreen  # noqa: E402
from vllm_diag.ui.tui.session import SessionScreen  # noqa: E402
from vllm_diag.ui.tui.timeline import TimelineChart, TimelinePane  # noqa: E402


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    return seed_db(tmp_path_factory.mktemp("tui") / "seeds.db")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    return log_db(tmp_path_factory.mktemp("tui") / "logs.db")


@pytest.fixture(scope="module")
def gpu(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gpu")


def plain(widget) -> str:
    """The text a Static or OptionList shows."""
    if isinstance(widget, OptionList):
        return "\n".join(_text(widget.get_option_at_index(i).prompt) for i in range(widget.option_count))
    if isinstance(widget, TimelineChart):
        return widget.render().plain
    return _text(widget.content)


def _text(value) -> str:
    return value.plain if hasattr(value, "plain") else str(value)


def highlighted(olist: OptionList) -> str:
    opt = olist.highlighted_option
    return _text(opt.prompt) if opt is not None else ""


async def _loaded(pilot, timeout: float = 30.0) -> SessionScreen:
    """Wait until the session screen has drawn its record (the load runs in a worker)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = pilot.app.screen
        if isinstance(screen, SessionScreen) and screen.marks is not None:  # both load steps done
            await pilot.pause(0.05)
            return screen
        await pilot.pause(0.05)
    raise AssertionError(f"session screen did not load (screen {pilot.app.screen})")


async def _rows(pilot, timeout: float = 30.0) -> None:
    """Wait until the sessions screen has read its list (a worker thread)."""
    deadline = time.monotonic() + timeout
    while not pilot.app.screen.loaded and time.monotonic() < deadline:
        await pilot.pause(0.05)
    assert pilot.app.screen.loaded


def run(app: DiagApp, scenario, size=(100, 32)):
    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.1)
            return await scenario(pilot)

    return asyncio.run(main())


# ------------------------------------------------------------------------------------ sessions


def test_sessions_screen_lists_filters_and_opens(seeds):
    async def scenario(pilot):
        app = pilot.app
        assert isinstance(app.screen, SessionsScreen)
        await _rows(pilot)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 5
        models = {str(table.get_cell_at((r, 2))) for r in range(table.row_count)}
        assert any("Qwen3-Coder-Next" in m for m in models) and any("DeepSeek-V4" in m for m in models)
        statuses = {str(table.get_cell_at((r, 0))) for r in range(table.row_count)}
        assert statuses == {"failed"}
        # filter by text: only the DeepSeek check, then open it with enter
        await pilot.press("slash", *"deepseek")
        assert table.row_count == 1
        assert "H200" in str(table.get_cell_at((0, 4))) and "0.20.2" in str(table.get_cell_at((0, 3)))
        assert str(table.get_cell_at((0, 5))) == "1/0/0"  # findings error/warning/info
        await pilot.press("enter")  # leaves the filter box for the table
        await pilot.press("enter")
        screen = await _loaded(pilot)
        assert screen.record.session.model.startswith("canada-quant/DeepSeek-V4")
        await pilot.press("escape")
        assert isinstance(app.screen, SessionsScreen)
        await pilot.press("slash", "ctrl+a", *"no-such-model")
        assert table.row_count == 0
        assert "no session matches" in plain(app.screen.query_one("#empty"))

    run(DiagApp(seeds), scenario)


def test_help_and_theme(seeds):
    async def scenario(pilot):
        app = pilot.app
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = plain(app.screen.query_one("#help-text"))
        assert "enter jumps to the picture" in text and "w writes the selected one to new files" in text
        await pilot.press("escape")
        assert isinstance(app.screen, SessionsScreen)
        assert app.theme == "textual-dark"
        await pilot.press("d")
        assert app.theme == "textual-light"

    run(DiagApp(seeds), scenario)


# ------------------------------------------------------------------------------------ findings + page map


def test_seed_43626_page_size_failure_at_a_glance(seeds):
    """The #43626 pre-flight opens on its failure; enter shows the offending Mamba layers, marked,
    with both page sizes."""
    sid = session_id(seeds, model="Qwen3-Coder-Next")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        app = pilot.app
        assert app.screen.query_one(TabbedContent).active == "findings"  # a failed session opens on its finding
        flist = screen.query_one("#finding-list", OptionList)
        first = highlighted(flist)
        assert first.startswith(" 1 ✗") and "Mamba/GDN page" in first
        detail = plain(screen.query_one("#finding-detail", Static))
        assert "1,146,880" in detail and "2,293,760" in detail and "expected" in detail
        await pilot.press("enter")
        assert app.screen.query_one(TabbedContent).active == "pages"
        pages = screen.query_one("#page-list", OptionList)
        row = highlighted(pages)
        assert row.startswith("✗ ") and "linear_attn" in row
        assert "expected 2,293,760 B, actual 1,146,880 B" in row
        assert "draft_model.model.layers.0.self_attn.attn" in plain(pages)  # the draft's larger page is there
        assert "unification failed: AssertionError" in plain(pages)
        # nothing on screen names where the package is installed (the bundled config is named by its folder)
        from vllm_diag.ui.tui.render import header_detail, header_line

        shown = header_line(screen.vm.header).plain + header_detail(screen.vm.header).plain
        assert "[bundled demo config]" in shown and str(REPO) not in shown

    run(DiagApp(seeds, session=sid), scenario)


def test_page_map_runs_of_layers(seeds):
    """The #39809 pre-flight (NemotronH: Mamba, attention and MoE layers): every run of identical
    layers drawn once as a bar, with its page in bytes."""
    sid = session_id(seeds, model="Nemotron-3-Super")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        await pilot.press("2")
        pages = plain(screen.query_one("#page-list", OptionList))
        vm = screen.vm.page_map
        assert vm.sides, vm.missing
        side = vm.sides[0]
        assert side.title in pages and f"largest page {side.max_page:,} B" in pages
        bars = [line for line in pages.splitlines() if "█" in line]
        assert len(bars) == len(side.runs)
        for r in side.rows:  # each layer's page in bytes, the largest page's ratio
            page = r.page_after if isinstance(r.page_after, int) else r.page_before
            assert f"{page:,} B" in pages

    run(DiagApp(seeds, session=sid), scenario)


def test_real_log_without_layer_specs_says_why(logs):
    sid = session_id(logs, vllm_version="0.26.0")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        await pilot.press("2")
        text = plain(screen.query_one("#page-list", OptionList))
        assert text == str(screen.vm.page_map.missing) and "per-layer KV specs" in text
        await pilot.press("4")
        assert "a log has no per-step batch composition" in plain(screen.query_one(TimelineChart))

    run(DiagApp(logs, session=sid), scenario)


# ------------------------------------------------------------------------------------ state index


def test_seed_39809_state_index_6_vs_7(seeds):
    sid = session_id(seeds, model="Nemotron-3-Super")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        flist = screen.query_one("#finding-list", OptionList)
        # the state-index finding, then enter: the state-index tab with the extra column marked
        index = next(i for i, f in enumerate(screen.vm.findings.items) if f.rule == "mamba_state_indices")
        flist.highlighted = index
        flist.focus()
        await pilot.press("enter")
        assert pilot.app.screen.query_one(TabbedContent).active == "state"
        group = highlighted(screen.query_one("#state-list", OptionList))
        assert "7 vs 6 columns" in group
        assert "state_indices_tensor_d" in group
        grid = [line for line in group.splitlines() if line.strip().startswith("slot 0")]
        assert grid and grid[0].split()[-1] == "✗" and grid[0].count("■") == 6

    run(DiagApp(seeds, session=sid), scenario)


def test_gpu_recording_11_vs_12_capture_failure(gpu):
    """The real NemotronH capture failure on vLLM 0.26.0 (the probes stored the error, no finding):
    the rules run on the recording when it opens; the session opens on that finding, and enter shows
    12 block-table columns against the 11 of the failing copy in the state-index view."""
    db = gpu_db(gpu, "nemotronh-pc-ngram3-capture-11v12")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        assert pilot.app.screen.query_one(TabbedContent).active == "findings"
        first = highlighted(screen.query_one("#finding-list", OptionList))
        detail = plain(screen.query_one("#finding-detail", Static))
        assert first.startswith(" 1 ✗") and "rule mamba_state_indices" in detail
        assert "column:0:12" in detail  # where enter goes
        # enter: the finding's anchor (the extra block-table column) in the state-index view
        await pilot.press("enter")
        assert pilot.app.screen.query_one(TabbedContent).active == "state"
        group = highlighted(screen.query_one("#state-list", OptionList))
        assert "12 vs 11 columns" in group and "8 rows × 12 columns" in group
        slot = next(line for line in group.splitlines() if line.strip().startswith("slot 0"))
        assert slot.split()[-1] == "✗" and slot.count("■") == 11

    run(DiagApp(db), scenario)


# ------------------------------------------------------------------------------------ timeline


def test_timeline_of_a_real_serving_engine(gpu):
    db = gpu_db(gpu, "qwen3next-serve-ngram3")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        app = pilot.app
        await pilot.press("4")
        pane = screen.query_one(TimelinePane)
        chart = screen.query_one(TimelineChart)
        vm = pane.vm
        assert vm.total_steps == 122 and vm.first_step == 0 and vm.last_step == 121
        title = plain(screen.query_one("#timeline-title", Static))
        assert "steps 0–121 (122 steps)" in title and "runner" in title
        text = plain(chart)
        assert "decodes" in text and "spec decodes" in text and "prefills" in text and "marks" in text
        # the cursor starts on the newest step; home goes to the runner's first step (a prefill)
        assert "step 121" in plain(screen.query_one("#timeline-cursor", Static))
        await pilot.press("home")
        cursor = plain(screen.query_one("#timeline-cursor", Static))
        runner = vm.series[0]
        assert runner.label == "runner" and runner.prefills[0] > 0
        assert cursor.startswith(f"step {runner.x[0]} ") and f"prefills {runner.prefills[0]}" in cursor
        await pilot.press("right", "right")
        assert plain(screen.query_one("#timeline-cursor", Static)).startswith(f"step {runner.x[2]} ")
        # b shows the GDN builder's own split
        await pilot.press("b")
        assert "GDNAttentionMetadataBuilder (group 0)" in plain(screen.query_one("#timeline-title", Static))
        # next_n = k + 1 = 4 against the GDN builder's decode threshold, from the recorded builder limits
        limits = plain(screen.query_one("#timeline-limits", Static))
        assert limits.startswith("next_n 4")
        await pilot.press("m")  # no mixed step in this run: says so
        assert any("no mixed step" in n.message for n in app._notifications)

    run(DiagApp(db), scenario, size=(100, 32))


def test_loaded_session_kept_out_of_full_gc_passes_while_open(gpu):
    """The loaded record is frozen out of the cyclic collector's full passes while its screen is open
    (a 1,000,000-step session: 50-70 ms pauses mid-scroll otherwise) and given back when it closes."""
    import gc

    db = gpu_db(gpu, "qwen3next-serve-ngram3")
    frozen = []

    async def scenario(pilot):
        await _loaded(pilot)
        frozen.append(gc.get_freeze_count())
        await pilot.press("escape")  # back to the sessions list: the session screen closes
        await pilot.pause(0.1)
        frozen.append(gc.get_freeze_count())

    gc.unfreeze()
    run(DiagApp(db), scenario)
    assert frozen[0] > 0 and frozen[1] == 0


def test_timeline_zoom_and_scroll_on_a_long_session(tmp_path):
    """20,000 steps (a GPU recording's steps repeated): 0 fits the session, + zooms around the
    cursor down to one step per column (the finer windows are read from the store), scrolling past
    a zoomed window's edge moves the window, - zooms back out."""
    from tests.tui_sessions import long_gpu_db

    db, sid = long_gpu_db(tmp_path, 20_000)

    async def scenario(pilot):
        screen = await _loaded(pilot)
        await pilot.press("4")
        pane = screen.query_one(TimelinePane)
        chart = screen.query_one(TimelineChart)
        title = lambda: plain(screen.query_one("#timeline-title", Static))  # noqa: E731
        assert pane.vm.total_steps == 20_000 and "steps 0–19,999 (20,000 steps)" in title()
        assert "▲ 40 mixed" in title()  # every 997th step
        loaded_width = pane.vm.width
        await pilot.press("0")
        fit = pane.vm.width
        assert fit > loaded_width and chart.n * fit >= 20_000 and chart.n <= chart.cols
        assert f"{fit:,} steps/column" in title()
        widths = [fit]
        for _ in range(6):
            await pilot.press("plus")
            deadline = time.monotonic() + 15  # the finest windows come from a worker thread
            while pane.vm.width == widths[-1] and widths[-1] > 1 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            widths.append(pane.vm.width)
        assert widths[-1] == 1 and widths == sorted(widths, reverse=True)
        assert "1 step/column" in title() and chart.n <= chart.cols
        # one step per column: the cursor line names single steps; past the window's left edge the
        # window moves to earlier steps
        cursor = plain(screen.query_one("#timeline-cursor", Static))
        assert cursor.startswith("step ") and "–" not in cursor.split()[1]
        first_before = pane.vm.first_step
        await pilot.press("home")
        await pilot.press("left")
        deadline = time.monotonic() + 15
        while pane.vm.first_step == first_before and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert pane.vm.first_step < first_before and pane.vm.width == 1
        # m jumps to the next mixed step of the window (or says there is none in it)
        for _ in range(4):
            await pilot.press("minus")
            await pilot.pause(0.2)
        assert pane.vm.width > 1
        await pilot.press("0")
        assert pane.vm.width == fit

    run(DiagApp(db, session=sid), scenario, size=(100, 32))


def test_timeline_windows_read_ahead_while_scrolling(tmp_path):
    """A zoomed window read from the store has its neighbours read ahead (in the background):
    scrolling past its edge shows the next window without reading the store, and reads the one
    after it ahead; the chart stays one widget, and its picture is the one ``render()`` gives (the
    line API draws the same lines)."""
    from tests.tui_sessions import long_gpu_db

    db, sid = long_gpu_db(tmp_path, 20_000)

    async def scenario(pilot):
        screen = await _loaded(pilot)
        await pilot.press("4")
        pane = screen.query_one(TimelinePane)
        chart = screen.query_one(TimelineChart)
        for _ in range(6):  # down to one step per column (the finer windows come from a worker)
            width = pane.vm.width
            await pilot.press("plus")
            deadline = time.monotonic() + 15
            while pane.vm.width == width and width > 1 and time.monotonic() < deadline:
                await pilot.pause(0.05)
        assert pane.vm.width == 1 and pane.zoom is not None
        reads = []
        read = pane._read_window
        pane._read_window = lambda lo, hi, cols: reads.append((lo, hi)) or read(lo, hi, cols)

        async def settled():  # the reads ahead done
            deadline = time.monotonic() + 15
            while pane._reading and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert not pane._reading

        async def past_left_edge():
            await settled()
            first, span = pane.vm.first_step, pane.zoom[1] - pane.zoom[0] + 1
            ahead = [k for k in pane._windows if k[0] < first and k[1] - k[0] + 1 == span]
            assert ahead, "the window before this one was read ahead"
            n = len(reads)
            await pilot.press("home", "left")
            assert pane.vm.first_step < first and pane.vm.width == 1
            assert (pane.vm.first_step, pane.vm.last_step) in [k[:2] for k in ahead]
            await settled()
            # one read: the window after it, ahead (the one shown came from memory, else two)
            assert len(reads) == n + 1 and reads[-1][0] < pane.vm.first_step

        await past_left_edge()
        await past_left_edge()
        assert len(screen.query(TimelineChart)) == 1
        lines = [chart.render_line(y).text.rstrip() for y in range(chart.size.height)]
        assert "\n".join(lines).rstrip() == "\n".join(x.rstrip() for x in chart.render().plain.splitlines()).rstrip()

    run(DiagApp(db, session=sid), scenario, size=(100, 32))


def test_mouse_clicks_tabs_and_rows(seeds):
    sid = session_id(seeds, model="Nemotron-3-Super")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        app = pilot.app
        await pilot.click("#--content-tab-suggestions")
        assert app.screen.query_one(TabbedContent).active == "suggestions"
        await pilot.click("#--content-tab-state")
        assert app.screen.query_one(TabbedContent).active == "state"
        await pilot.click("#--content-tab-findings")
        flist = screen.query_one("#finding-list", OptionList)
        await pilot.click("#finding-list", offset=(4, 1))
        assert flist.highlighted == 1
        assert plain(screen.query_one("#finding-detail", Static)).startswith("#2 ")

    run(DiagApp(seeds, session=sid), scenario)


# ------------------------------------------------------------------------------------ suggestions


def test_suggestion_written_with_one_key_and_never_overwritten(seeds, tmp_path):
    sid = session_id(seeds, model="Qwen3-Coder-Next")

    async def scenario(pilot):
        screen = await _loaded(pilot)
        app = pilot.app
        await pilot.press("5")
        pane = screen.query_one(SuggestionsPane)
        s = pane.current()
        assert s is not None and s.number == 1
        detail = plain(screen.query_one("#suggestion-detail", Static))
        assert "trade-off:" in detail and "re-checked:" in detail
        assert any(line.strip().startswith(("-", "+")) for line in detail.splitlines())
        await pilot.press("w")
        assert "Write suggestion 1" in plain(app.screen.query_one("#question"))
        await pilot.press("y")
        await pilot.pause(0.1)
        sh = tmp_path / f"vllm-diag-{sid}-s1.sh"
        yml = tmp_path / f"vllm-diag-{sid}-s1.yaml"
        assert sh.is_file() and yml.is_file()
        assert s.command in sh.read_text()
        before = sh.read_text()
        # the same key again: apply_suggestion refuses, the files stay as they were
        await pilot.press("w", "y")
        await pilot.pause(0.1)
        assert sh.read_text() == before
        assert any("already exists" in n.message for n in app._notifications)
        # n at the confirmation writes nothing
        await pilot.press("down")
        s2 = pane.current()
        await pilot.press("w", "n")
        assert not (tmp_path / f"vllm-diag-{sid}-s{s2.number}.sh").exists()
        # c copies the command after a confirmation
        await pilot.press("c", "y")
        assert app.clipboard == s2.command

    run(DiagApp(seeds, session=sid, out_dir=tmp_path), scenario)


def test_suggestion_files_equal_suggest_apply(seeds, tmp_path):
    """The TUI key and `vllm-diag suggest --apply N` write the same files (one function)."""
    from tests.tui_sessions import cli

    sid = session_id(seeds, model="DeepSeek-V4")
    cli_dir, tui_dir = tmp_path / "cli", tmp_path / "tui"
    cli_dir.mkdir()
    tui_dir.mkdir()
    rc, out = cli("suggest", sid, "--db", str(seeds), "--apply", "1", "--out", str(cli_dir))
    assert rc == 0, out

    async def scenario(pilot):
        await _loaded(pilot)
        await pilot.press("5", "w", "y")
        await pilot.pause(0.1)

    run(DiagApp(seeds, session=sid, out_dir=tui_dir), scenario)
    for suffix in (".sh", ".yaml"):
        name = f"vllm-diag-{sid}-s1{suffix}"
        assert (tui_dir / name).read_text() == (cli_dir / name).read_text()


# ------------------------------------------------------------------------------------ follow


def _writer(db: Path, sid: str):
    return Store.open(db, create=True)


def test_follow_shows_new_steps_and_turns_to_a_live_failure(gpu):
    """--follow on a copy of a real recording: steps appended by a writer appear (how fast: the
    benchmark); an error plus status 'failed' turns the screen to the failure."""
    db = gpu_db(gpu, "qwen3next-serve-ngram3")
    with Store.open(db, create=True) as store:  # migrate the copy once, like a live engine's writer
        sid = store.sessions()[0].id

    async def scenario(pilot):
        screen = await _loaded(pilot)
        app = pilot.app
        await pilot.press("4")
        pane = screen.query_one(TimelinePane)
        assert pane.vm.last_step == 121
        pid = pane.vm.pid  # the process whose steps the timeline draws (EngineCore)
        writer = Store.open(db, create=True)
        try:
            steps = [BatchStep(step_index=122 + i, num_reqs=4, num_decodes=2, num_spec_decodes=2, num_tokens=8, pid=pid)
                     for i in range(30)]
            writer.add_rows("batch_steps", sid, pid, steps)
            t0 = time.monotonic()  # (how fast is benchmarks/tui_scale.py's business; here: that they come)
            while pane.vm.last_step != 151 and time.monotonic() - t0 < 15:
                await pilot.pause(0.05)
            assert pane.vm.last_step == 151, "new steps did not appear"
            assert "steps 0–151 (152 steps)" in plain(screen.query_one("#timeline-title", Static))
            assert dict(pane.vm.mark_counts).get("mixed", 0) >= 30  # 2 decodes + 2 spec decodes: mixed
            assert "▲" in plain(screen.query_one(TimelineChart))
            assert "following: +30 steps" in plain(screen.query_one("#headerbar", Static))
            # the engine fails live
            writer.add_rows("errors", sid, pid, [ErrorRecord(exc_type="RuntimeError", phase="step",
                                                             message="The size of tensor a (6) must match the size of tensor b (7)")])
            writer.update_session(sid, status="failed")
            t0 = time.monotonic()
            while app.screen.query_one(TabbedContent).active != "findings" and time.monotonic() - t0 < 15:
                await pilot.pause(0.05)
            assert app.screen.query_one(TabbedContent).active == "findings"
            await pilot.pause(0.3)
            # what `vllm-diag diagnose` stores for it: the post-mortem's class of the recorded error (a shape
            # mismatch of a hybrid model under speculative decoding), the error itself as its evidence
            first = highlighted(screen.query_one("#finding-list", OptionList))
            assert "mixed decode / spec-decode batch" in first and "RuntimeError" in first
            assert "tensor a (6)" in plain(screen.query_one("#finding-detail", Static))
            assert "failed" in plain(screen.query_one("#headerbar", Static))
        finally:
            writer.close()

    run(DiagApp(db, session=sid, follow=True, poll_s=0.1), scenario)


def test_follow_waits_for_the_first_session(tmp_path):
    """An engine's DB before its session exists: --follow waits and opens the session when it appears."""
    db = tmp_path / "live.db"
    Store.open(db, create=True).close()

    async def scenario(pilot):
        app = pilot.app
        assert isinstance(app.screen, SessionsScreen)
        await _rows(pilot)
        assert "waiting" in plain(app.screen.query_one("#empty"))
        with Store.open(db, create=True) as w:
            sid = w.new_session("engine", model="/models/llama", vllm_version="0.32.0")
        t0 = time.monotonic()
        while not isinstance(app.screen, SessionScreen) and time.monotonic() - t0 < 15:
            await pilot.pause(0.05)
        screen = await _loaded(pilot)
        assert screen.session_id == sid

    run(DiagApp(db, follow=True, poll_s=0.1), scenario)


# ------------------------------------------------------------------------------------ bad databases


def _tui(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vllm_diag", "tui", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def _one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_databases_are_one_line_and_exit_2(tmp_path):
    _one_line_error(_tui(str(tmp_path / "missing.db")), "no such file")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table t (x)")
    _one_line_error(_tui(str(other)), "not a vllm-diag database")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    _one_line_error(_tui(str(text)), "not a vllm-diag database")
    empty = tmp_path / "empty.db"
    Store.open(empty, create=True).close()
    _one_line_error(_tui(str(empty)), "holds no sessions")
    newer = tmp_path / "newer.db"
    with Store.open(newer, create=True) as s:
        s.new_session("check")
    with sqlite3.connect(newer) as conn:
        conn.execute("insert into _sqlite_migrations (migration_set, name, applied_at) values ('vllm_diag', 'm999_future', 'x')")
    _one_line_error(_tui(str(newer)), "newer vllm-diag")
    _one_line_error(_tui(str(empty), "nope", "--follow"), "no session 'nope'")
    _one_line_error(_tui(env={"VLLM_DIAG_DB": ""}), "no database")


def test_without_textual_one_line_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['textual'] = None\n"
            "from vllm_diag.cli import main; sys.exit(main(['tui', sys.argv[1]]))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.db")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "pip install 'vllm-diag[tui]'"


def test_follow_reads_steps_in_the_models_field_order():
    """The follow loop builds BatchStep positionally: its column list must follow the model."""
    import dataclasses

    from vllm_diag.model import BatchStep
    from vllm_diag.ui.tui.data import _STEP_COLUMNS

    assert [c if c != "null" else "spec_tokens_per_req" for c in _STEP_COLUMNS] == \
        [f.name for f in dataclasses.fields(BatchStep)]


def test_core_does_not_import_textual():
    code = "import sys, vllm_diag.cli, vllm_diag.commands.tui; print('textual' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.stdout.strip() == "False", r.stderr
