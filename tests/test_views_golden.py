"""Golden files of the pure view layer: the text, Markdown and view-model JSON of real sessions
(vLLM 0.26.0 GPU recordings, the seed #43626 pre-flight), rendered from records, no I/O in the views.

A deliberate change of a view or renderer: rerun with ``VLLM_DIAG_UPDATE_GOLDEN=1`` and review the diff
of tests/golden/ like code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_preflight_seeds import SEEDS
from vllm_diag.render.json import _views
from vllm_diag.render.markdown import render_markdown
from vllm_diag.render.text import render_text
from vllm_diag.store import Store
from vllm_diag.views import build

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("VLLM_DIAG_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} missing: run with VLLM_DIAG_UPDATE_GOLDEN=1 once"
    assert text == path.read_text(), f"{name} differs from its golden file (VLLM_DIAG_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize("name", ["qwen3next-serve-ngram3", "nemotronh-pc-ngram3-capture-11v12", "nemotronh-serve-tp2"])
def test_gpu_recordings(name):
    with Store.open(REPO / "assets" / "gpu" / f"{name}.db") as st:
        vm = build(st.load(steps="summary"))
    check_golden(f"{name}.txt", render_text(vm, details=True) + "\n")
    check_golden(f"{name}.md", render_markdown(vm) + "\n")
    check_golden(f"{name}.views.json", json.dumps(_views(vm), indent=1, default=str) + "\n")


def test_seed_43626_preflight():
    from vllm_diag.preflight import run_check

    seed = SEEDS["43626_dense_draft_hybrid"]
    record = run_check(seed["command"], version=seed["version"], gpu=seed["gpu"]).to_record(session_id="golden")
    record.session.started_at = record.session.ended_at = 1_795_000_000.0
    record.session.host = "host"
    vm = build(record)
    check_golden("seed-43626-check.txt", render_text(vm) + "\n")
    check_golden("seed-43626-check.views.json", json.dumps(_views(vm), indent=1, default=str) + "\n")
