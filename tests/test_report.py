"""`vllm-diag report`: one self-contained HTML file (plotly.js inlined, nothing fetched) built from the
view models, parsed here for each finding's numbers and the marked layer / column / step; Markdown;
the one-line answer without plotly; the report opened offline in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.test_preflight_seeds import SEEDS
from vllm_diag.cli import main
from vllm_diag.serve import tokenize
from vllm_diag.store import Store

REPO = Path(__file__).resolve().parents[1]
GPU = REPO / "assets" / "gpu"


class Page(HTMLParser):
    """Elements by id, class and data-* attributes, with their text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.stack: list[dict] = []
        self.scripts: list[dict] = []
        self.links: list[dict] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        el = {"tag": tag, "attrs": a, "text": ""}
        if tag == "script":
            self.scripts.append(a)
        if tag in ("link", "img", "iframe"):
            self.links.append(a)
        self.elements.append(el)
        if tag not in ("meta", "br", "img", "link", "input"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            el = self.stack.pop()
            if el["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def by_id(self, ident: str) -> dict:
        found = [e for e in self.elements if e["attrs"].get("id") == ident]
        assert len(found) == 1, (ident, len(found))
        return found[0]

    def having(self, cls: str, tag: str | None = None) -> list[dict]:
        return [e for e in self.elements if cls in (e["attrs"].get("class") or "").split() and (tag is None or e["tag"] == tag)]


def _report(db: Path, tmp: Path, *extra: str) -> str:
    out = tmp / "report.html"
    assert main(["report", "--db", str(db), "-o", str(out), *extra]) == 0
    return out.read_text()


@pytest.fixture(scope="module")
def seed_43626_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("r") / "check.db"
    seed = SEEDS["43626_dense_draft_hybrid"]
    assert main(["check", "--vllm-version", seed["version"], "--gpu", seed["gpu"], "--db", str(db), "--",
                 *[t.value for t in tokenize(seed["command"])]]) == 1
    return db


def test_self_contained_offline(seed_43626_db, tmp_path, capsys):
    text = _report(seed_43626_db, tmp_path)
    page = Page(text)
    assert all("src" not in s for s in page.scripts), "a script is loaded from somewhere"
    assert not [a for a in page.links if any(str(v).startswith(("http:", "https:", "//")) for v in a.values())]
    assert text.count('class="plotly-graph-div"') == 1 and text.count("<script") == 2  # plotly.js once, one figure
    assert 'src="http' not in text and "<link" not in text
    assert len(page.having("figure", "div")) == 1  # the page map (a check runs no steps and has no block tables)
    assert "wrote " in capsys.readouterr().out


def test_seed_43626_page_size_failure_at_a_glance(seed_43626_db, tmp_path):
    page = Page(_report(seed_43626_db, tmp_path))
    glance = page.by_id("glance")
    assert "would FAIL (1 error finding)" in glance["text"] and "expected 2,293,760 B, actual 1,146,880 B" in glance["text"]
    f1 = page.by_id("finding-1")
    assert f1["attrs"]["data-rule"] == "kv_unify_mamba_assert"
    expected = [e["text"].strip() for e in page.having("expected") if e["tag"] == "td"]
    actual = [e["text"].strip() for e in page.having("actual") if e["tag"] == "td"]
    assert expected[0] == "2,293,760 B" and actual[0] == "1,146,880 B"
    anchors = json.loads(f1["attrs"]["data-anchors"])
    assert "layer:model.layers.0.linear_attn" in anchors
    # every anchor of every finding names an element of the page
    ids = {e["attrs"].get("id") for e in page.elements}
    from vllm_diag.views.primitives import Anchor

    for f in page.elements:
        if f["attrs"].get("data-anchors"):
            for key in json.loads(f["attrs"]["data-anchors"]):
                assert Anchor.parse(key).html_id in ids, key
    row = page.by_id("a-layer-model-layers-0-linear_attn")
    assert "marked" in row["attrs"]["class"] and "1,146,880" in row["text"] and "2,293,760" in row["text"]
    marked = [e["attrs"]["data-layer"] for e in page.having("marked", "tr") if "data-layer" in e["attrs"]]
    assert len(marked) == 36 and all(m.endswith(".linear_attn") for m in marked)  # all GDN layers, no attention, no draft
    draft = page.by_id("a-layer-draft_model-model-layers-0-self_attn-attn")
    assert "marked" not in draft["attrs"]["class"] and "2,293,760" in draft["text"]
    assert [int(e["attrs"]["data-number"]) for e in page.having("suggestion")] == [1, 2, 3]


def test_recorded_state_index_mismatch_11_vs_12(tmp_path):
    db = tmp_path / "gpu.db"
    shutil.copy(GPU / "nemotronh-pc-ngram3-capture-11v12.db", db)
    page = Page(_report(db, tmp_path))
    cell = page.by_id("a-column-0-12")
    assert cell["attrs"]["class"] == "mk" and cell["text"] == "12"
    assert [e["attrs"]["data-column"] for e in page.having("mk", "td")] == ["12"]
    assert "block table 12 columns vs buffer 11 columns" in " ".join(page.by_id("glance")["text"].split())
    assert "The size of tensor a (11) must match the size of tensor b (12)" in page.by_id("glance")["text"] + "".join(
        e["text"] for e in page.having("unexplained"))
    assert len(page.having("figure", "div")) == 2  # page map, state index (no steps: the capture failed)


def test_timeline_of_a_served_tp2_engine_marks_the_disagreeing_steps(tmp_path):
    db = tmp_path / "tp2.db"
    shutil.copy(GPU / "nemotronh-serve-tp2.db", db)
    page = Page(_report(db, tmp_path))
    marked = sorted(int(e["attrs"]["data-step"]) for e in page.having("marked", "tr") if "data-step" in e["attrs"])
    assert len(marked) == 3 and page.by_id(f"a-step-{marked[0]}")
    assert len(page.having("figure", "div")) == 3


def test_log_text_is_escaped(tmp_path):
    log = tmp_path / "evil.log"
    log.write_text("INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.20.2\n"
                   "Traceback (most recent call last):\n"
                   '  File "/x/vllm/v1/engine/core.py", line 1, in run\n'
                   "    run()\n"
                   "RuntimeError: <script>window.__pwned=1</script><img src=x onerror=alert(2)>\n")
    db = tmp_path / "d.db"
    assert main(["analyze", str(log), "--db", str(db)]) == 0
    text = _report(db, tmp_path)
    assert "<script>window.__pwned" not in text and "<img src=x" not in text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text


def test_markdown_and_refusals(seed_43626_db, tmp_path, capsys):
    assert main(["report", "--db", str(seed_43626_db), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "### Diagnosis (vllm-diag)" in md and "| MambaSpec page after unification | 2,293,760 B | 1,146,880 B |" in md
    assert "**MambaSpec page 1,146,880 B cannot become the largest page 2,293,760 B" in md
    out = tmp_path / "r.html"
    out.write_text("keep")
    assert main(["report", "--db", str(seed_43626_db), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err and out.read_text() == "keep"


def test_without_plotly_one_line_exit_2(seed_43626_db, tmp_path):
    code = ("import sys; sys.modules['plotly'] = None; from vllm_diag.cli import main; "
            f"sys.exit(main(['report', '--db', {str(seed_43626_db)!r}, '-o', {str(tmp_path / 'x.html')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "pip install 'vllm-diag[web]'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.html").exists()


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.mark.slow
def test_the_report_draws_offline_in_headless_chromium(seed_43626_db, tmp_path):
    """Loaded from file:// with the network off: the page-size figure draws and the marked rows are there."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.fail("Debian's chromium and chromium-driver are needed (scripts/setup-env.sh installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    html_path = tmp_path / "report.html"
    html_path.write_text(_report(seed_43626_db, tmp_path))
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='vllm-diag-report-')}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                    "downloadThroughput": 0, "uploadThroughput": 0})
        driver.get(html_path.as_uri())
        # (Plotly draws after the load event; on a busy machine that can be a moment later)
        from selenium.webdriver.support.ui import WebDriverWait

        count_bars = ("return [...document.querySelectorAll('.js-plotly-plot')].map(d => d.querySelectorAll('.bars path')"
                      ".length)")
        WebDriverWait(driver, 20).until(lambda d: (d.execute_script(count_bars) or [0])[0] > 0)
        drawn = driver.execute_script(count_bars)
        assert drawn and drawn[0] >= 84  # one bar per layer (main model and draft)
        reds = driver.execute_script("return document.querySelectorAll('tr.marked').length")
        assert reds == 36
        entries = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [u for u in entries if re.match(r"https?:", u)], entries
        png = tmp_path / "report.png"
        driver.save_screenshot(str(png))
        assert png.stat().st_size > 10_000
    finally:
        driver.quit()


def test_markdown_evidence_that_quotes_backticks_stays_one_code_span():
    """A log line that quotes a flag in backticks (a reporter's bullet) is shown whole: the span's fence is longer than
    any run of backticks inside it."""
    from vllm_diag.postmortem.analyze import analyze_text
    from vllm_diag.render.markdown import render_markdown
    from vllm_diag.views import build

    text = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --speculative-config "
        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'",
        "- `\"num_speculative_tokens\": 1`: survived 2h load test",
        "- same load, no speculative config: fine",
        "(EngineCore pid=118) ERROR 07-02 13:47:41 [core.py:1140] RuntimeError: Worker failed with error '', please "
        "check the stack trace above for the root cause"])
    md = render_markdown(build(analyze_text(text, "t.log", use_preflight=False).to_record()))
    line = next(x for x in md.splitlines() if "survived 2h" in x)
    assert line.endswith("``- `\"num_speculative_tokens\": 1`: survived 2h load test``"), line
