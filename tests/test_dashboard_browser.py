"""The dashboard end to end in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``
driven by selenium; no browser download): open the fleet, open the failing GPU session, click its
finding and its suggestion's download, check what is shown and what lands on disk; compare two
sessions; a log's ``<script>`` shows as text; a token-protected dashboard refuses a browser without
the token and works with it. A screenshot of each view is written to ``$VLLM_DIAG_SCREENS`` (or the
test's temporary folder)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("dash")
pytest.importorskip("selenium")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.dashboard_sessions import REAL_LOGS, DashboardServer, analyzed_db, fleet_dir, start_browser  # noqa: E402
from vllm_diag.suggest import suggestion_files  # noqa: E402

pytestmark = pytest.mark.slow

EVIL = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    root = fleet_dir(tmp_path_factory.mktemp("fleet") / "hosts")
    log = tmp_path_factory.mktemp("logs") / "evil.log"
    lines = (REAL_LOGS / "missing_tokenizer.log").read_text().splitlines()
    idx = max(i for i, line in enumerate(lines) if "Error" in line and ":" in line)
    lines[idx] += " " + EVIL
    log.write_text("\n".join(lines) + "\n")
    analyzed_db(root / "evil-host.db", log)
    return root


@pytest.fixture
def screens(tmp_path):
    d = Path(os.environ.get("VLLM_DIAG_SCREENS") or tmp_path / "screens")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def browser(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = start_browser(downloads)
    driver.downloads = downloads
    yield driver
    driver.quit()


def _wait(driver, cond, timeout=20):
    return WebDriverWait(driver, timeout).until(cond)


def _shot(driver, path: Path, full: bool = True) -> Path:
    if full:  # the whole page, not just the window
        h = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1500, min(max(1000, h + 40), 4000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1500, 1000)
    assert path.stat().st_size > 10_000
    return path


def test_fleet_session_finding_suggestion_compare(hosts, browser, screens):
    srv = DashboardServer([hosts])
    try:
        d = browser
        d.get(srv.url + "/")
        _wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#fleet-table td")))
        _wait(d, lambda d: "sessions in" in d.find_element(By.ID, "fleet-summary").text)
        table = d.find_element(By.ID, "fleet-table").text
        snap = srv.sources.snapshot()
        failing = next(r for r in snap.rows if r.kind == "engine" and r.status == "failed")
        assert failing.session in table and "2x H200" in table and "RTX PRO 6000" in table
        # failing sessions are on top and tinted
        first_row = d.find_elements(By.CSS_SELECTOR, "#fleet-table tr")[2]
        assert "failed" in first_row.text
        _shot(d, screens / "dashboard-fleet.png")
        # search narrows the table
        d.find_element(By.ID, "fleet-search").send_keys("2x H200")
        _wait(d, lambda d: "showing 1" in d.find_element(By.ID, "fleet-summary").text)
        box = d.find_element(By.ID, "fleet-search")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)  # (clear() bypasses React's change event)
        box.send_keys(failing.session)
        _wait(d, lambda d: "showing 1" in d.find_element(By.ID, "fleet-summary").text)

        # open the failing GPU session (the 11-vs-12 capture failure)
        d.find_element(By.LINK_TEXT, failing.session).click()
        _wait(d, EC.presence_of_element_located((By.ID, "findings")))
        _wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#fig-state .main-svg")))
        assert d.current_url.endswith(f"/session/{failing.db_key}/{failing.session}")
        title = d.find_element(By.ID, "session-title").text
        assert failing.session in title and "failed" in title
        rep = srv.sources.load(failing.db_key, failing.session).report
        target = next(f for f in rep.findings.items if f.rule == "mamba_state_indices")
        cards = d.find_elements(By.CSS_SELECTOR, ".finding")
        assert [c.text.split()[0] for c in cards] == [f"#{f.number}" for f in rep.findings.items]
        _shot(d, screens / "dashboard-session.png")

        # click the state-index finding: its column is named and drawn in gold
        card = next(c for c in cards if c.text.startswith(f"#{target.number} "))
        card.click()
        _wait(d, lambda d: "column:0:12" in d.find_element(By.ID, "selection-note").text)
        gold = d.execute_script(
            "const g = document.querySelector('#fig-state .js-plotly-plot');"
            "const t = g.data.find(t => t.name === \"the finding's column\"); return t ? t.x : null;")
        assert gold and 12 in gold
        highlight = d.execute_script("return document.querySelector('#fig-state .js-plotly-plot').layout.meta.highlight")
        assert highlight == sorted(target.anchor_keys)
        assert "12 vs 11 columns" in d.find_element(By.ID, "fig-state").text
        d.execute_script("document.getElementById('fig-state').scrollIntoView()")
        _shot(d, screens / "dashboard-session-finding-clicked.png")

        # the suggestions of an engine recorded through LLM(...) have no serve command to patch: their
        # buttons are disabled (the dashboard never makes up a command)
        for s_vm in target.suggestions:
            assert not d.find_element(By.XPATH, f"//button[normalize-space()='Download YAML (s{s_vm.number})']").is_enabled()

        # the failing seed #43626 pre-flight: click its finding (the Mamba layers light up in the page map),
        # then one click downloads suggestion 1's YAML -- the text suggest --apply 1 writes
        seed = next(r for r in snap.rows if r.kind == "check")
        d.get(srv.url + "/")
        _wait(d, EC.presence_of_element_located((By.LINK_TEXT, seed.session))).click()
        _wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#fig-pages .main-svg")))
        seed_rep = srv.sources.load(seed.db_key, seed.session).report
        f1 = seed_rep.findings.items[0]
        assert f1.rule == "kv_unify_mamba_assert"
        d.find_element(By.CSS_SELECTOR, ".finding").click()
        _wait(d, lambda d: f1.anchors[0].key in d.find_element(By.ID, "selection-note").text)
        lit = d.execute_script(
            "const g = document.querySelector('#fig-pages .js-plotly-plot'); const t = g.data[0];"
            "return t.y.filter((y, i) => t.marker.line.color[i] === '#f9a825');")
        assert set(lit) == {a.ref for a in f1.anchors if a.kind == "layer"}
        assert sum(1 for y in lit if y.endswith("linear_attn")) == 36  # every Mamba/GDN layer of #43626
        _shot(d, screens / "dashboard-seed-43626-finding-clicked.png")
        n = f1.suggestions[0].number
        button = d.find_element(By.XPATH, f"//button[normalize-space()='Download YAML (s{n})']")
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        stem = f"vllm-diag-{seed.session}-s{n}"
        path = d.downloads / f"{stem}.yaml"
        _wait(d, lambda _d: path.exists() and path.stat().st_size > 0, timeout=20)
        sug = next(s for k, _f, s in srv.sources.load(seed.db_key, seed.session).suggestions if k == n)
        assert path.read_text() == dict(suggestion_files(sug, stem))[f"{stem}.yaml"]
        assert "num_speculative_tokens" in path.read_text()
        d.find_element(By.XPATH, f"//button[normalize-space()='Download command (s{n})']").click()
        sh = d.downloads / f"{stem}.sh"
        _wait(d, lambda _d: sh.exists() and sh.stat().st_size > 0, timeout=20)
        assert sh.read_text() == dict(suggestion_files(sug, stem))[f"{stem}.sh"]
        box = d.find_element(By.XPATH, "//*[@id='suggestions']/div[1]")
        assert f1.suggestions[0].title in box.text and "--apply 1" in box.text
        d.execute_script("document.getElementById('suggestions').scrollIntoView()")
        _shot(d, screens / "dashboard-suggestions.png", full=False)

        # compare: the failing GPU session next to the same model served on two GPUs
        ok = next(r for r in snap.rows if r.gpu == "2x H200")
        d.get(srv.url + f"/compare?a={failing.key}&b={ok.key}")
        _wait(d, EC.presence_of_element_located((By.ID, "config-diff")))
        _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".compare-side .main-svg")) >= 2)
        diff = d.find_element(By.ID, "config-diff").text
        assert "tensor_parallel_size" in diff or "num_speculative_tokens" in diff
        sides = d.find_elements(By.CSS_SELECTOR, ".compare-side")
        assert failing.session in sides[0].text and ok.session in sides[1].text
        assert all("MambaSpec" in s.text for s in sides)
        _shot(d, screens / "dashboard-compare.png")

        # a log line with <script>: shown as text, never run
        evil = next(r for r in srv.sources.snapshot(force=True).rows if r.db_name == "evil-host.db")
        d.get(srv.url + f"/session/{evil.db_key}/{evil.session}")
        _wait(d, EC.presence_of_element_located((By.ID, "findings")))
        _wait(d, lambda d: "<script>window.__pwned=1</script>" in d.find_element(By.TAG_NAME, "body").text)
        assert d.execute_script("return window.__pwned === undefined")
        assert not d.find_elements(By.XPATH, "//img[@src='x']")
        _shot(d, screens / "dashboard-script-as-text.png", full=False)

        # a URL for a DB that is not among the sources: a message, not a stack trace
        d.get(srv.url + "/session/0123456789ab/nothing")
        _wait(d, lambda d: "no such session among the dashboard's databases" in d.find_element(By.TAG_NAME, "body").text)
        assert "Traceback" not in d.page_source
    finally:
        srv.close()


def test_fleet_refreshes_while_an_engine_writes(hosts, browser, tmp_path):
    from vllm_diag.model import BatchStep
    from vllm_diag.store import Store

    root = tmp_path / "live"
    root.mkdir()
    shutil.copyfile(hosts / "qwen3next-serve-ngram3.db", root / "h1.db")
    srv = DashboardServer([root])
    try:
        d = browser
        d.get(srv.url + "/")
        _wait(d, lambda d: "121" in d.find_element(By.ID, "fleet-table").text)
        st = Store.open(root / "h1.db", create=True)
        sid = st.resolve_session(None)
        st.add_rows("batch_steps", sid, 9, [BatchStep(step_index=122 + i, num_decodes=1) for i in range(40)])
        _wait(d, lambda d: "161" in d.find_element(By.ID, "fleet-table").text, timeout=15)
        shutil.copyfile(hosts / "preflight-host.db", root / "h2.db")  # a host appears
        _wait(d, lambda d: "RTX PRO 6000" in d.find_element(By.ID, "fleet-table").text, timeout=15)
        st.close()
    finally:
        srv.close()


def test_token_protected_dashboard_in_the_browser(hosts, browser, screens):
    token = "browser-token-" + "z" * 12
    srv = DashboardServer([hosts], token=token)
    try:
        d = browser
        d.get(srv.url + "/")
        _wait(d, lambda d: "token required" in d.find_element(By.TAG_NAME, "body").text)
        assert not d.find_elements(By.ID, "fleet-table")
        d.get(srv.url + f"/?token={token}")
        _wait(d, EC.presence_of_element_located((By.CSS_SELECTOR, "#fleet-table td")))
        assert "token" not in d.current_url  # the redirect dropped it; the HttpOnly cookie carries it
        assert d.execute_script("return document.cookie") == ""
    finally:
        srv.close()
