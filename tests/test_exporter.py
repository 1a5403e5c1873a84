"""``vllm-diag exporter``: the vllm_diag_* metrics of DBs over HTTP, DBs appearing later, live rows,
bad input as one line, and the missing extra."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.dashboard_sessions import GPU_LOG, analyzed_db, gpu_db
from vllm_diag.model import BatchStep
from vllm_diag.store import Store

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _run_cli(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "vllm_diag", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=REPO)


def _values(text: str) -> dict:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _one(vals, name, **labels):
    hits = [v for (n, lab), v in vals.items() if n == name and all(dict(lab).get(k) == str(x) for k, x in labels.items())]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def test_once_over_a_folder_with_a_foreign_file(tmp_path):
    hosts = tmp_path / "hosts"
    gpu_db(hosts / "h200-a", "qwen3next-serve-ngram3")
    analyzed_db(hosts / "h100-b.db", GPU_LOG)
    (hosts / "notes.db").write_text("not a database")
    r = _run_cli("exporter", str(hosts), "--once")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "vllm-diag: exporter: notes.db: notes.db: not a vllm-diag database (not an SQLite file)"
    vals = _values(r.stdout)
    sessions = {dict(lab)["session"]: dict(lab) for (n, lab), _ in vals.items() if n == "vllm_diag_session_info"}
    assert len(sessions) == 2
    log_sid = next(s for s, lab in sessions.items() if lab["kind"] == "log")
    assert _one(vals, "vllm_diag_findings", session=log_sid, category="state_index", severity="error") >= 1
    eng = next(s for s, lab in sessions.items() if lab["kind"] == "engine")
    assert _one(vals, "vllm_diag_steps_total", session=eng) == 122
    assert _one(vals, "vllm_diag_exporter_unreadable_dbs") == 1
    assert str(tmp_path) not in r.stdout  # no machine paths in the metrics


def test_max_sessions_bounds_the_session_label(tmp_path):
    db = analyzed_db(tmp_path / "a.db", GPU_LOG)
    analyzed_db(db, GPU_LOG)
    analyzed_db(db, GPU_LOG)
    r = _run_cli("exporter", str(db), "--once", "--max-sessions", "2")
    assert r.returncode == 0, r.stderr
    sessions = {dict(lab)["session"] for (n, lab), _ in _values(r.stdout).items() if n == "vllm_diag_session_info"}
    with Store.open(db) as st:
        newest = [s.id for s in st.sessions()][-2:]
    assert sessions == set(newest)


@pytest.mark.parametrize("args, message", [
    (["exporter", "nowhere.db"], "vllm-diag: nowhere.db: no such file or folder"),
    (["exporter", "x.db", "--port", "70000"], "vllm-diag: --port 70000: not a port number"),
    (["exporter", "x.db", "--max-sessions", "0"], "vllm-diag: --max-sessions must be at least 1"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, message):
    r = subprocess.run([sys.executable, "-m", "vllm_diag", *args], capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == message and r.stdout == ""


def test_without_prometheus_client_one_line_exit_2(tmp_path):
    code = ("import sys; sys.modules['prometheus_client'] = None\n"
            "from vllm_diag.cli import main; sys.exit(main(['exporter', 'x.db']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "vllm-diag: the exporter needs prometheus_client: pip install 'vllm-diag[web]'"


def _scrape(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        return _values(resp.read().decode())


def test_serves_http_picks_up_new_dbs_and_new_rows(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    live = Store.open(hosts / "live.db", create=True)
    sid = live.new_session("engine", model="m")
    live.add_rows("batch_steps", sid, 1, [BatchStep(step_index=i, num_decodes=1) for i in range(5)])
    proc = subprocess.Popen([sys.executable, "-m", "vllm_diag", "exporter", str(hosts), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        m = re.search(r"serving (http://127\.0\.0\.1:\d+/metrics)", line)
        assert m, line
        url = m.group(1)
        vals = _scrape(url)
        assert _one(vals, "vllm_diag_steps_total", session=sid) == 5
        assert _one(vals, "vllm_diag_mixed_batch_steps_total", session=sid) == 0
        # the engine keeps writing: mixed decode + spec-decode steps arrive
        live.add_rows("batch_steps", sid, 1, [BatchStep(step_index=i, num_decodes=1, num_spec_decodes=2)
                                              for i in range(5, 9)])
        vals = _scrape(url)
        assert _one(vals, "vllm_diag_steps_total", session=sid) == 9
        assert _one(vals, "vllm_diag_mixed_batch_steps_total", session=sid) == 4
        assert _one(vals, "vllm_diag_spec_decode_steps_ratio", session=sid) == pytest.approx(4 / 9)
        assert _one(vals, "vllm_diag_last_step_index", session=sid) == 8
        # a host's DB that appears later is served at the next scrape
        analyzed_db(hosts / "late.db", GPU_LOG)
        vals = _scrape(url)
        kinds = sorted(dict(lab)["kind"] for (n, lab), _ in vals.items() if n == "vllm_diag_session_info")
        assert kinds == ["engine", "log"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        live.close()
