"""One diagnosis of a recorded engine session: a session without stored findings shows, in every face
that diagnoses it on open (``api.diagnose``: TUI, dashboard, fleet, ``report --diagnose``; the probes'
``/metrics`` collector), the findings ``vllm-diag diagnose`` stores -- the recorded errors read as a log,
the catalog's site diagnosis, the recorded platform and GPU, an unexplained error still named. Only the
suggestions differ: re-checked with the pre-flight when stored, listed unverified on open.

Sessions: the real GPU recordings of assets/gpu (their stored findings dropped) and sessions built here
the way the probes record them (a CPU test bed: failing mixed steps, a rejected configuration, an error
no rule knows, a clean run)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from vllm_diag import api
from vllm_diag.cli import main
from vllm_diag.model import ErrorRecord, to_jsonable
from vllm_diag.probes.metrics import SessionCollector
from vllm_diag.store import Store

from tests.test_live_mixed_batch import (
    BUILDER_TRACEBACK,
    GDN_MESSAGE,
    GDN_TRACEBACK,
    PID,
    SAMPLER_TRACEBACK,
    VLLM,
    _qwen3next_steps,
    _state,
    _step,
    _step_error,
    _write,
)

REPO = Path(__file__).resolve().parents[1]
GPU = REPO / "assets" / "gpu"
GPU_DBS = sorted(GPU.glob("*.db"))


def _built(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A session as the probes record it on the CPU test bed (``platform`` cpu, no NVML GPUs)."""
    steps = _qwen3next_steps()
    if name == "mixed_step":
        state = _state(steps=steps, errors=[_step_error(steps)])
    elif name == "known_release_bug":
        steps = [_step(1, 0, 0, 4, 36), _step(2, 1, 2, 0, 9, drafts=[3, 3])]
        state = _state(steps=steps, version="0.18.0", errors=[_step_error(
            steps, traceback=BUILDER_TRACEBACK, exc_type="AssertionError", message="num_decodes: 1, num_spec_decodes: 2",
            location=f"{VLLM}/v1/attention/backends/gdn_attn.py:233 in build", sizes=None, with_builder=False)])
    elif name == "not_mixed":
        steps = [s for s in steps if s.step_index < 7]
        state = _state(steps=steps, errors=[_step_error(steps)])
    elif name == "sampler":
        state = _state(steps=steps, errors=[_step_error(
            steps, traceback=SAMPLER_TRACEBACK, exc_type="AssertionError", message="",
            location=f"{VLLM}/v1/sample/rejection_sampler.py:388 in rejection_sample", sizes=None)])
    elif name == "profile_run":
        state = _state(steps=[], errors=[ErrorRecord(exc_type="RuntimeError", phase="profile", message=GDN_MESSAGE,
                                                     traceback=GDN_TRACEBACK, pid=PID, at=999.0)])
    elif name == "config_rejected":
        state = _state(steps=[])
        state.config["config_rejected"] = True
        state.errors = [ErrorRecord(exc_type="pydantic_core._pydantic_core.ValidationError", phase="config",
                                    message="1 validation error for SpeculativeConfig\n  Value error, num_speculative_tokens "
                                            "must be > 0", pid=PID, at=1000.0)]
    elif name == "unknown_error":
        state = _state(steps=steps, errors=[ErrorRecord(
            exc_type="KeyError", phase="step", message="'model.layers.7.mixer'", pid=PID, at=2000.0,
            location=f"{VLLM}/v1/worker/gpu_model_runner.py:4120 in _dummy_run")])
    elif name == "clean":
        state = _state(steps=steps)
    else:
        raise AssertionError(name)
    return _write(tmp_path, state, status="failed" if state.errors else "stopped")


BUILT = ["mixed_step", "known_release_bug", "not_mixed", "sampler", "profile_run", "config_rejected", "unknown_error",
         "clean"]


def _recorded(tmp_path: Path, case: str) -> tuple[Path, str]:
    """``(db, session)``: a recorded engine session with no stored findings."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if case in BUILT:
        return _built(tmp_path, case)
    db = tmp_path / case
    shutil.copyfile(GPU / case, db)
    with Store.open(db, create=True) as st:
        sid = next(s.id for s in st.sessions() if s.kind == "engine")
        st.add_findings(sid, [], replace=True)  # recorded by a vllm-diag that stored findings: as if it had not
    return db, sid


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out


def _shown(findings) -> list[dict]:
    """What a finding says, suggestions aside (re-checked when stored, listed unverified on open)."""
    out = []
    for f in findings:
        d = to_jsonable(f)
        d.pop("suggestions")
        out.append(d)
    return out


def _collected(collector: SessionCollector) -> dict:
    """The collector's ``vllm_diag_findings`` samples that are not zero: ``{(category, severity): n}``."""
    return {(s.label("category"), s.label("severity")): s.value for fam in collector.families()
            if fam.name.endswith("_findings") for s in fam.samples if s.value}


def _counts(findings) -> dict:
    counts: dict = {}
    for f in findings:
        key = (f["category"], f["severity"]) if isinstance(f, dict) else (f.category, f.severity)
        counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.parametrize("case", BUILT + [p.name for p in GPU_DBS])
def test_every_face_shows_the_findings_vllm_diag_diagnose_stores(case, tmp_path, capsys):
    pytest.importorskip("dash")
    from vllm_diag.fleet import Fleet
    from vllm_diag.ui.tui.data import load_record, load_snapshot
    from vllm_diag.ui.web.data import Sources

    db, sid = _recorded(tmp_path / "hosts", case)
    with Store.open(db) as st:
        assert st.load(sid, steps=False).findings == []
        quick = load_record(st, sid)  # the TUI's first paint (no step rows loaded)
        tui, _marks = load_snapshot(st, sid)  # the TUI's session (the timeline summarised by SQLite)
    with Fleet([tmp_path / "hosts"]) as fleet:
        src = Sources(fleet, refresh_s=0)
        [row] = [r for r in src.snapshot(force=True).rows if r.session == sid]
        page = src.load(row.db_key, row.session).record  # the dashboard's session page
    collector = _collected(SessionCollector(str(db), sid))  # vLLM's /metrics
    _, report = _cli(capsys, "report", "--db", db, sid, "--diagnose", "--markdown")
    _, shown = _cli(capsys, "show", db, sid, "--diagnose", "--json")

    rc, out = _cli(capsys, "diagnose", db, sid, "--json")
    assert rc == 0
    stored = json.loads(out)["findings"]
    for d in stored:
        d.pop("suggestions")

    assert _shown(quick.findings) == stored
    assert _shown(tui.findings) == stored
    assert _shown(page.findings) == stored
    assert [{k: d[k] for k in stored[0]} for d in json.loads(shown)["findings"]] == stored  # (+ the views' anchors)
    assert row.findings_source == "computed on open" and sum(row.findings) == len(stored)
    assert collector == _counts(stored)
    positions = [report.find(d["title"]) for d in stored]
    assert -1 not in positions and positions == sorted(positions), (positions, [d["title"] for d in stored])
    assert not quick.state.steps and tui.step_summary is not None  # each face keeps the steps it loaded
    with Store.open(db) as st:  # the stored findings win from now on, in every face
        again = st.load(sid, steps=False)
    assert _shown(again.findings) == stored and (api.diagnose(again) is again or not stored)


def test_the_step_rows_the_rules_read_are_read_on_open(tmp_path):
    """A failing mixed step after three mixed steps that ran: on open (no step rows loaded) the finding
    still counts them, and the known release bug still folds in, as from all the rows."""
    db, sid = _recorded(tmp_path, "mixed_step")
    with Store.open(db) as st:
        [f] = api.diagnose(st.load(sid, steps=False), store=st).findings
        assert f.numbers["mixed_steps_before"] == 3 and f.numbers["first_mixed_step"] == 7
        [g] = api.diagnose(st.load(sid, steps=False)).findings  # without the store: only what was loaded
        assert g.numbers["mixed_steps_before"] == 0
    db, sid = _recorded(tmp_path / "b", "known_release_bug")
    with Store.open(db) as st:
        [f] = api.diagnose(st.load(sid, steps=False), store=st).findings
    assert f.rule == "hybrid_mixed_step" and any(e.text.startswith("step 2: 1 decodes + 2 spec decodes") for e in f.evidence)


def test_a_recorded_error_reads_the_same_on_open_as_in_vllm_diag_diagnose(tmp_path, capsys):
    """The real GPU recording of a Nemotron-H capture crash (vLLM 0.26, recorded before the probes stored
    findings): on open, the finding carries the catalog's diagnosis of the recorded error -- its
    confidence and basis, the error itself as evidence -- as ``vllm-diag diagnose`` stores it."""
    db, sid = _recorded(tmp_path, "nemotronh-pc-ngram3-capture-11v12.db")
    with Store.open(db) as st:
        [f] = api.diagnose(st.load(sid, steps=False)).findings
    assert f.rule == "mamba_state_indices" and f.confidence == "medium" and "hybrid_state_width" in (f.basis or "")
    assert any(e.text.startswith("RuntimeError: ") for e in f.evidence)
    assert f.suggestions and not any(s.verified for s in f.suggestions)  # listed, not re-checked
    assert f.numbers["max_model_len"] == 512 and f.numbers["mamba_cache_mode"] == "all"


def test_an_error_no_rule_knows_is_named_on_open_too(tmp_path):
    db, sid = _recorded(tmp_path, "unknown_error")
    with Store.open(db) as st:
        findings = api.diagnose(st.load(sid, steps=False)).findings
    assert [f.rule for f in findings if f.severity == "error"] == ["other_unrecognised"]
    assert "KeyError" in findings[0].title


def test_checks_and_post_mortems_keep_what_they_found():
    """A check or a post-mortem that found nothing is not diagnosed again on open: the rules on a log's state
    would add the pre-flight guesses the post-mortem leaves out, and a check is the rules on its state."""
    from vllm_diag.postmortem.analyze import analyze_path

    record = analyze_path(str(REPO / "tests" / "fixtures" / "logs" / "seeds" / "004_56fd74f28e856ca0.log")).to_record()
    record = dataclasses.replace(record, findings=[])
    assert record.session.kind == "log" and api.diagnose(record) is record


def test_the_collector_diagnoses_again_only_when_what_it_reads_changes(tmp_path, monkeypatch):
    """/metrics while the engine serves: plain steps never re-run the diagnosis, nor do more mixed steps
    after the first; a recorded error does."""
    from vllm_diag import live

    steps = _qwen3next_steps()
    plain = [s for s in steps if s.step_index < 7]
    mixed = [s for s in steps if 7 <= s.step_index < 9]
    db, sid = _write(tmp_path, _state(steps=plain[:4]), status="running")
    calls = []
    real = live.diagnosis
    monkeypatch.setattr(live, "diagnosis", lambda *a, **k: calls.append(1) or real(*a, **k))
    collector = SessionCollector(str(db), sid)

    def add(table, rows):
        with Store.open_append(db) as st:
            st.add_rows(table, sid, PID, rows)
        return _collected(collector)

    assert _collected(collector) == {} and len(calls) == 1
    assert add("batch_steps", plain[4:]) == {} and len(calls) == 1
    assert add("batch_steps", mixed[:2]) == {} and len(calls) == 2  # the first mixed step (a known bug reads it)
    assert add("batch_steps", mixed[2:]) == {} and len(calls) == 2
    assert add("errors", [_step_error(plain + mixed)]) == {("mixed_batch", "error"): 1} and len(calls) == 3
    assert collector.collect()  # and the Prometheus side of it never raises


def test_the_fleet_diagnoses_again_for_the_first_mixed_step(tmp_path):
    """vLLM 0.18 (the GDN builder's known mixed-batch bug) still serving, no error yet: the fleet's findings
    computed on open follow the recording's first mixed step, as the collector's and the stored ones do."""
    from vllm_diag.fleet import Fleet

    steps = _qwen3next_steps()
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    db, sid = _write(hosts, _state(steps=[s for s in steps if s.step_index < 7], version="0.18.0"), status="running")
    with Fleet([hosts]) as fleet:
        [row] = fleet.refresh().rows
        assert row.findings_source == "computed on open" and row.by_category == ()
        with Store.open_append(db) as st:
            st.add_rows("batch_steps", sid, PID, [s for s in steps if s.step_index == 7])
        [row] = fleet.refresh().rows
    assert ("mixed_batch", "error", 1) in row.by_category
    assert _collected(SessionCollector(str(db), sid)) == {("mixed_batch", "error"): 1}
