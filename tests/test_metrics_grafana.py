"""The Grafana dashboard (assets/grafana/vllm-diag.json): every vllm_diag_* series it plots exists,
every vLLM series it plots is one vLLM registers, and every query is valid PromQL (Debian's
``promtool check rules``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vllm_diag import metrics as M

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "assets" / "grafana" / "vllm-diag.json"


def _exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def _concrete(expr: str) -> str:
    return expr.replace("$session", ".*").replace("$model_name", ".*")


def test_panels_use_declared_vllm_diag_series():
    declared = {f.name for f in M.declared_families()}
    used = {name for e in _exprs() for name in re.findall(r"\bvllm_diag_[a-z0-9_]+", e)}
    assert used and used <= declared, used - declared
    # each of the signals has a panel
    for name in ("vllm_diag_findings", "vllm_diag_kv_cache_groups", "vllm_diag_kv_cache_page_size_bytes",
                 "vllm_diag_block_table_columns", "vllm_diag_state_index_columns", "vllm_diag_mixed_batch_steps_total",
                 "vllm_diag_spec_decode_steps_ratio"):
        assert name in used, name


def test_panels_use_series_vllm_registers():
    import importlib.util

    spec = importlib.util.find_spec("vllm")  # its files, without importing it (~6 s)
    if spec is None or spec.origin is None:
        pytest.skip("checks the vLLM series names against the installed vLLM (the cpu extra)")
    root = Path(spec.origin).parent
    used = {name for e in _exprs() for name in re.findall(r"\bvllm:[a-z0-9_]+", e)}
    assert used
    sources = "\n".join(p.read_text(errors="replace") for p in (root / "v1" / "metrics").glob("*.py"))
    sources += "\n".join(p.read_text(errors="replace") for p in (root / "v1" / "spec_decode").glob("*.py"))
    for name in used:
        base = name.removesuffix("_total")  # prometheus_client adds _total to counters
        assert f'"{base}"' in sources, name


def test_every_query_is_valid_promql(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool (Debian's prometheus package) is needed; scripts/setup-env.sh installs it")
    rules = {"groups": [{"name": "grafana-panels", "rules": [
        {"record": f"vllm_diag:panel_query_{i}", "expr": _concrete(e)} for i, e in enumerate(_exprs())]}]}
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(_exprs())} rules found" in r.stdout
