"""SVG snapshots of the TUI (pytest-textual-snapshot) at 80x24 and 120x40, one class per screen,
on real sessions: the seed #43626 pre-flight and the real vLLM 0.26.0 GPU recordings.

The baselines live in ``tests/__snapshots__/test_tui_snapshots/``. After an intended change of the
look (or of a view model's text), look at the new pictures and accept them with
``pytest tests/test_tui_snapshots.py --snapshot-update``; a failing run writes a side-by-side
report (``snapshot_report.html``).
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("textual", reason="the TUI needs the tui extra (pip install 'vllm-diag[tui]')")
pytest.importorskip("pytest_textual_snapshot")

from tests.tui_sessions import gpu_db, seed_db, session_id  # noqa: E402
from vllm_diag.ui.tui.app import DiagApp  # noqa: E402
from vllm_diag.ui.tui.screens import SessionsScreen  # noqa: E402
from vllm_diag.ui.tui.session import SessionScreen  # noqa: E402

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.fixture(scope="module")
def dbdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("snap")
    seed_db(d / "seeds.db")
    for name in ("nemotronh-pc-ngram3-capture-11v12", "qwen3next-serve-ngram3"):
        gpu_db(d, name)
    return d


@pytest.fixture
def in_dbdir(dbdir, monkeypatch):
    monkeypatch.chdir(dbdir)  # the header shows the DB path as given: relative, the same every run
    return dbdir


async def loaded(pilot) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if isinstance(pilot.app.screen, SessionScreen) and pilot.app.screen.marks is not None:
            break
        await pilot.pause(0.05)
    # the sessions list under the session is read a moment later (a worker): wait for it too
    lists = [s for s in pilot.app.screen_stack if isinstance(s, SessionsScreen)]
    while lists and not lists[0].loaded and time.monotonic() < deadline:
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def app_for(db: str, session: str | None = None, theme: str = "dark") -> DiagApp:
    return DiagApp(db, session=session, theme=theme)


@pytest.mark.parametrize("size", SIZES)
class TestFindings:
    def test_seed_43626_findings(self, snap_compare, in_dbdir, size):
        sid = session_id(in_dbdir / "seeds.db", model="Qwen3-Coder-Next")
        assert snap_compare(app_for("seeds.db", sid), terminal_size=size, run_before=loaded)

    def test_gpu_capture_failure_opens_on_its_error(self, snap_compare, in_dbdir, size):
        assert snap_compare(app_for("nemotronh-pc-ngram3-capture-11v12.db"), terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
class TestPageMap:
    def test_seed_43626_enter_shows_the_offending_layer(self, snap_compare, in_dbdir, size):
        sid = session_id(in_dbdir / "seeds.db", model="Qwen3-Coder-Next")
        assert snap_compare(app_for("seeds.db", sid), press=["enter"], terminal_size=size, run_before=loaded)

    def test_light_theme(self, snap_compare, in_dbdir, size):
        sid = session_id(in_dbdir / "seeds.db", model="Qwen3-Coder-Next")
        assert snap_compare(app_for("seeds.db", sid, theme="light"), press=["enter"], terminal_size=size,
                            run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
class TestStateIndex:
    def test_gpu_11_vs_12(self, snap_compare, in_dbdir, size):
        assert snap_compare(app_for("nemotronh-pc-ngram3-capture-11v12.db"), press=["3"], terminal_size=size,
                            run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
class TestTimeline:
    def test_gpu_serving_engine(self, snap_compare, in_dbdir, size):
        assert snap_compare(app_for("qwen3next-serve-ngram3.db"), press=["4", "home", "right", "right"],
                            terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
class TestSuggestions:
    def test_seed_43626_suggestion_1(self, snap_compare, in_dbdir, size):
        sid = session_id(in_dbdir / "seeds.db", model="Qwen3-Coder-Next")
        assert snap_compare(app_for("seeds.db", sid), press=["5"], terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
class TestSessions:
    def test_sessions_of_a_gpu_recording(self, snap_compare, in_dbdir, size):
        # one session: the app opens it; escape goes back to the list (ids and times are the recording's)
        assert snap_compare(app_for("qwen3next-serve-ngram3.db"), press=["escape"], terminal_size=size,
                            run_before=loaded)
