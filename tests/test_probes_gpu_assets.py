"""The GPU recordings in ``assets/gpu/`` checked again, without a GPU.

``scripts/gpu-check`` ran the matrix on vLLM 0.26.0 (PyPI CUDA 13 wheel) on an H200 and the TP=2 jobs
on two H200s; ``scripts/gpu_assets.py`` kept each run's DB, logs and result (``*.json``: vLLM's own
objects -- KV-cache groups, layer specs, block tables, every metadata builder's tensors, config, the
probe's step count -- as the worker reported them through ``collective_rpc`` in that run). Here the
same checks run on those files: what the probes recorded equals what vLLM held, no process lost its
rows, the live diagnosis ran once per engine.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "assets" / "gpu"

RUNS = [  # (file prefix, job name, tensor-parallel size of the job list)
    ("h200-", "llama-v2-mp", 1),
    ("h200-", "llama-v1-inproc", 1),
    ("h200-", "qwen3next-mtp2", 1),
    ("h200-", "qwen3next-ngram3-mp", 1),
    ("h200-", "nemotronh-pc-ngram3", 1),
    ("h200-", "qwen3next-draft-big", 1),
    ("h200-", "nemotronh-serve", 1),
    ("h200x2-", "nemotronh-serve-tp2", 2),
    ("h200x2-", "llama-llm-mp-tp2", 2),
]


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("prefix,name,tp", RUNS, ids=[p + n for p, n, _ in RUNS])
def test_recorded_gpu_run_passes_its_checks(prefix, name, tp, tmp_path):
    g = _gpu_check()
    job = next(j for j in g.jobs(tp) if j.name == name)
    stem = ASSETS / f"{prefix}{name}"
    db = tmp_path / f"{name}.db"
    shutil.copy(f"{stem}.db", db)
    res = json.loads(Path(f"{stem}.json").read_text())
    log = "".join(Path(f"{stem}{s}").read_text() for s in (".log", ".server.log") if Path(f"{stem}{s}").is_file())
    checks = g.check(job, res, db, log)
    failed = [c for c in checks if not c[1]]
    assert not failed, failed
    names = {c[0] for c in checks}
    assert "processes" in names and "diagnosed once per engine" in names
    if job.mode == "llm" and job.expect == "ok":
        assert len(res["snapshots"]) == tp  # one per rank, each compared above
        assert any(n.endswith("builder_buffers") for n in names) and any(n.endswith("block_tables") for n in names)


def test_tp2_rows_from_every_rank_and_one_diagnosis():
    import sqlite3

    conn = sqlite3.connect(f"file:{ASSETS / 'h200x2-nemotronh-serve-tp2.db'}?mode=ro", uri=True)
    try:
        roles = conn.execute("select role, rank from processes order by role, rank").fetchall()
        tables = dict(conn.execute("select p.rank, count(*) from block_tables b join processes p using (session_id, pid) "
                                   "where p.role = 'worker' group by p.rank").fetchall())
        steps = dict(conn.execute("select p.rank, count(*) from batch_steps s join processes p using (session_id, pid) "
                                  "where p.role = 'worker' and s.builder is null group by p.rank").fetchall())
        diag = conn.execute("select pid from environment where key = 'live_diagnoses'").fetchall()
    finally:
        conn.close()
    assert roles == [("api_server", None), ("engine_core", None), ("worker", 0), ("worker", 1)]
    assert set(tables) == {0, 1} and all(tables.values())
    assert set(steps) == {0, 1} and steps[0] == steps[1] > 0
    assert len(diag) == 1


def test_assets_hold_no_machine_paths():
    for f in ASSETS.iterdir():
        data = f.read_bytes()
        assert b"/tmp/" not in data and b"/work/" not in data, f.name
