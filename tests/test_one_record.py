"""One record: what `check` and `analyze` print is what `show` prints of the session they stored --
text and JSON -- on the seeds' pre-flight checks and on real logs (issue 9)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_preflight_seeds import SEEDS
from vllm_diag.cli import main
from vllm_diag.serve import tokenize
from vllm_diag.store import Store

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "tests" / "fixtures" / "logs"
REAL_LOGS = sorted((REPO / "assets" / "logs").glob("*.log")) + sorted((LOGS / "gpu").glob("*.log")) + \
    sorted((LOGS / "real").glob("*.log")) + [LOGS / "seeds" / "004_56fd74f28e856ca0.log", LOGS / "negative" / "cuda_oom_at_load.log"]


def run(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out


def _argv(command: str) -> list[str]:
    return [t.value for t in tokenize(command)]


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_check_prints_what_show_prints_of_its_session(name, tmp_path, capsys):
    seed = SEEDS[name]
    db = tmp_path / "d.db"
    rc, checked = run(capsys, "check", "--vllm-version", seed["version"], "--gpu", seed["gpu"], "--db", db, "--",
                      *_argv(seed["command"]))
    assert rc in (0, 1)
    with Store.open(db) as st:
        sid = st.resolve_session(None)
    assert run(capsys, "show", db, sid) == (0, checked[: -len(checked.rsplit("\n\n", 1)[-1]) - 2] + "\n")
    trailer = checked.rsplit("\n\n", 1)[-1]
    assert re.fullmatch(rf"checked in \d+ ms; stored session {sid} in {re.escape(str(db))}\n", trailer), trailer
    # --json: the same document
    db2 = tmp_path / "j.db"
    rc2, doc = run(capsys, "check", "--vllm-version", seed["version"], "--gpu", seed["gpu"], "--db", db2, "--json", "--",
                   *_argv(seed["command"]))
    assert rc2 == rc
    doc = json.loads(doc)
    assert json.loads(run(capsys, "show", db2, doc["session"]["id"], "--json")[1]) == doc
    assert doc["exit_code"] == rc and doc["state"]["source"] == "predicted" and doc["target"]["vllm_version"] == seed["version"]


@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda p: p.name)
def test_analyze_prints_what_show_prints_of_its_session(log, tmp_path, capsys):
    db = tmp_path / "d.db"
    rc, analysed = run(capsys, "analyze", log, "--db", db)
    assert rc == 0
    text, trailer = analysed.rsplit("\n\n", 1)
    assert trailer.startswith("stored as session ")
    sid = trailer.split()[3]
    assert run(capsys, "show", db, sid) == (0, text + "\n")
    rc, doc = run(capsys, "analyze", log, "--db", db, "--json")
    doc = json.loads(doc)
    assert json.loads(run(capsys, "show", db, doc["session_id"], "--json")[1]) == doc


def test_show_prints_the_startup_facts_and_the_preflight_note_analyze_printed(tmp_path, capsys):
    """The case the issue opened with: a real vLLM 0.26.0 GPU crash log."""
    db = tmp_path / "d.db"
    log = REPO / "assets" / "logs" / "nemotronh-prefix-caching-ngram-vllm0.26-gpu.log"
    run(capsys, "analyze", log, "--db", db)
    _, shown = run(capsys, "show", db)
    for text in ("mamba_padding_percent=65.16", "available_kv_cache_gib=41.38", "note      pre-flight: config.json not reachable",
                 "root error (line 150, EngineCore): AssertionError",
                 "mamba_mixer2.py:963 in conv_ssm_forward: assert block_idx_last_scheduled_token_prev_step_d is not None"):
        assert text in shown, text
    with Store.open(db) as st:
        rec = st.load()
    assert rec.log.root.frames and rec.log.startup["mamba_padding_percent"] == 65.16 and rec.notes


def test_a_record_survives_the_store_unchanged(tmp_path):
    """Store.save then load gives back what every view reads (the record of a check with a prediction)."""
    from vllm_diag.postmortem.analyze import analyze_path
    from vllm_diag.views import build

    an = analyze_path(str(LOGS / "seeds" / "004_56fd74f28e856ca0.log"))
    record = an.to_record()
    with Store.open(tmp_path / "r.db", create=True) as st:
        sid = st.save(record)
        again = st.load(sid)
    assert build(again) == build(record)
    assert again.predicted is not None and again.predicted.block_tables == record.predicted.block_tables
    assert again.log.root == record.log.root and again.target == record.target and again.notes == record.notes
