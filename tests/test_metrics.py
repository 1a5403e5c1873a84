"""vllm_diag.metrics: the vllm_diag_* families from real sessions, the incremental step tally, and
the Prometheus text exposition (names, types, bounded labels)."""

from __future__ import annotations

import re

import pytest

from tests.dashboard_sessions import GPU_LOG, SEED_43626, analyzed_db, checked_db, gpu_db
from vllm_diag import metrics as M
from vllm_diag.model import CATEGORIES, SEVERITIES, BatchStep
from vllm_diag.store import Store


def _value(fams, name, **labels):
    hits = [s.value for f in fams if f.name == name for s in f.samples
            if all(s.label(k) == str(v) for k, v in labels.items())]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def _samples(fams, name):
    return [s for f in fams if f.name == name for s in f.samples]


def test_gpu_recording_groups_tables_state_indices_and_steps(tmp_path):
    db = gpu_db(tmp_path, "qwen3next-serve-ngram3")
    with Store.open(db) as st:
        rec = st.load(steps=False)
        assert rec.state.steps == []  # loaded without its 243 step rows
        tally = M.read_step_tally(st.db, rec.session.id)
        raw = st.db.execute("select count(distinct step_index), max(step_index) from batch_steps").fetchone()
        full = st.load()
    fams = M.session_families(rec, tally)
    sid = rec.session.id
    info = _samples(fams, "vllm_diag_session_info")[0]
    assert dict(info.labels) == {"session": sid, "host": "vm", "model_name": rec.session.model,
                                 "vllm_version": "0.26.0", "kind": "engine", "status": "ok", "gpu": "H200"}
    assert rec.session.model.endswith("qwen3_next")
    assert _value(fams, "vllm_diag_kv_cache_groups", session=sid) == 4
    # three GDN groups of 512-token blocks and the attention group of 288, all 73,728-byte pages
    for g in (0, 1, 2):
        assert _value(fams, "vllm_diag_kv_cache_block_size_tokens", group=g, spec_type="MambaSpec") == 512
        assert _value(fams, "vllm_diag_block_table_columns", group=g) == 4  # (1) + num_speculative_blocks 3
        assert _value(fams, "vllm_diag_state_index_columns", group=g, buffer="spec_state_indices_tensor") == 4
    assert _value(fams, "vllm_diag_kv_cache_block_size_tokens", group=3, spec_type="FullAttentionSpec") == 288
    assert _value(fams, "vllm_diag_block_table_columns", group=3) == 2  # cdiv(512, 288)
    assert {s.value for s in _samples(fams, "vllm_diag_kv_cache_page_size_bytes")} == {73728}
    assert _value(fams, "vllm_diag_block_table_rows", group=0) == 8
    # steps: SQL tally == the same count over the loaded steps == plain SQL
    assert tally.steps == raw[0] == 122 and tally.last_step == raw[1] == 121
    same = M.tally_steps(full.state.steps)
    assert (same.steps, same.mixed_steps, same.spec_steps, same.last_step) == (
        tally.steps, tally.mixed_steps, tally.spec_steps, tally.last_step)
    assert _value(fams, "vllm_diag_steps_total", session=sid) == 122
    assert _value(fams, "vllm_diag_last_step_index", session=sid) == 121
    # every category x severity pair is present, all zero (no stored findings for this engine)
    found = _samples(fams, "vllm_diag_findings")
    assert len(found) == len(CATEGORIES) * len(SEVERITIES) and {s.value for s in found} == {0}


def test_tp2_rows_of_both_ranks_count_once(tmp_path):
    db = gpu_db(tmp_path, "nemotronh-serve-tp2")
    with Store.open(db) as st:
        rec = st.load(steps=False)
        tally = M.read_step_tally(st.db, rec.session.id)
        pids = st.db.execute("select count(distinct pid), count(*) from batch_steps").fetchone()
    assert pids[0] >= 2 and pids[1] == 270  # both TP ranks wrote every step
    fams = M.session_families(rec, tally)
    assert tally.steps == 68
    assert _value(fams, "vllm_diag_kv_cache_groups", session=rec.session.id) == 2
    assert _value(fams, "vllm_diag_block_table_columns", group=1) == 12
    assert len(_samples(fams, "vllm_diag_block_table_columns")) == 2  # not one per rank
    info = _samples(fams, "vllm_diag_session_info")[0]
    assert info.label("gpu") == "2x H200"


def test_failed_capture_recording_errors_by_phase(tmp_path):
    db = gpu_db(tmp_path, "nemotronh-pc-ngram3-capture-11v12")
    with Store.open(db) as st:
        rec = st.load(steps=False)
        phases = dict(st.db.execute("select phase, count(*) from errors group by phase").fetchall())
        tally = M.read_step_tally(st.db, rec.session.id)
    fams = M.session_families(rec, tally)
    assert sum(phases.values()) >= 1
    for phase, n in phases.items():
        assert _value(fams, "vllm_diag_errors_total", phase=phase) == n
    assert _samples(fams, "vllm_diag_session_info")[0].label("status") == "failed"
    assert tally.steps == 0
    assert _samples(fams, "vllm_diag_spec_decode_steps_ratio") == []  # no steps: no ratio, not 0/0
    assert _samples(fams, "vllm_diag_last_step_index") == []


def test_findings_of_an_analysed_log_and_a_seed_check(tmp_path):
    db = analyzed_db(tmp_path / "a.db", GPU_LOG)
    db = checked_db(db, SEED_43626, "0.20.2", "RTX PRO 6000")
    per = []
    with Store.open(db) as st:
        for info in st.sessions():
            rec = st.load(info.id, steps=False)
            per.append(M.session_families(rec, M.read_step_tally(st.db, info.id)))
            for cat in CATEGORIES:
                for sev in SEVERITIES:
                    n = sum(1 for f in rec.findings if f.category == cat and f.severity == sev)
                    assert _value(per[-1], "vllm_diag_findings", session=info.id, category=cat, severity=sev) == n
    fams = M.merge_families(per)
    # the seed #43626 pre-flight: the page-size unification error; the GPU log: the state-index error
    kinds = {s.label("kind"): s.label("session") for s in _samples(fams, "vllm_diag_session_info")}
    assert _value(fams, "vllm_diag_findings", session=kinds["check"], category="kv_page_size", severity="error") == 1
    assert _value(fams, "vllm_diag_findings", session=kinds["log"], category="state_index", severity="error") >= 1
    # #43626 dies in page-size unification: the prediction never forms KV groups, and says so with 0
    assert _value(fams, "vllm_diag_kv_cache_groups", session=kinds["check"]) == 0


def _write_steps(store, sid, pid, rows):
    store.add_rows("batch_steps", sid, pid, [BatchStep(**r) for r in rows])


def test_incremental_tally_equals_full_count(tmp_path):
    """Rows arrive in flushes from two ranks (the second lagging one flush behind): the incremental
    tally after every flush equals a full count of the distinct steps written so far."""
    db = tmp_path / "live.db"
    store = Store.open(db, create=True)
    sid = store.new_session("engine")
    reader = Store.open(db)
    tally = None
    written = []
    kinds = [dict(num_decodes=2), dict(num_spec_decodes=1), dict(num_decodes=1, num_spec_decodes=2),
             dict(num_prefills=1)]
    for flush in range(8):
        rows = [dict(step_index=i, **kinds[i % 4]) for i in range(flush * 5, flush * 5 + 5)]
        _write_steps(store, sid, 100, rows)
        if flush:  # rank 1 writes the previous flush's steps now
            _write_steps(store, sid, 101, [dict(step_index=i, **kinds[i % 4]) for i in range((flush - 1) * 5, flush * 5)])
        written += rows
        tally = M.read_step_tally(reader.db, sid, tally)
        full = M.tally_steps([BatchStep(**r) for r in written])
        assert (tally.steps, tally.mixed_steps, tally.spec_steps, tally.last_step) == (
            full.steps, full.mixed_steps, full.spec_steps, full.last_step)
    assert tally.steps == 40 and tally.mixed_steps == 10 and tally.spec_steps == 20
    again = M.read_step_tally(reader.db, sid, tally)
    assert again == tally  # nothing new: nothing changes
    fams = M.session_families(reader.load(sid, steps=False), tally)
    assert _value(fams, "vllm_diag_spec_decode_steps_ratio", session=sid) == pytest.approx(0.5)
    assert _value(fams, "vllm_diag_mixed_batch_steps_total", session=sid) == 10
    reader.close()
    store.close()


NAME = re.compile(r"^vllm_diag_[a-z0-9_]+$")


def test_prometheus_exposition_names_types_and_bounded_labels(tmp_path):
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    db = gpu_db(tmp_path, "qwen3next-serve-ngram3")
    with Store.open(db) as st:
        rec = st.load(steps=False)
        fams = M.session_families(rec, M.read_step_tally(st.db, rec.session.id))

    class C:
        def collect(self):
            return M.to_prometheus(fams)

    reg = prometheus_client.CollectorRegistry()
    reg.register(C())
    text = prometheus_client.generate_latest(reg).decode()
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    for f in fams:
        assert NAME.match(f.name), f.name
        base = f.name.removesuffix("_total") if f.kind == "counter" else f.name
        assert parsed[base].type == f.kind
        if f.kind == "counter":
            assert f.name.endswith("_total")
            assert f"# TYPE {f.name} counter" in text and f"{f.name}{{" in text
    # base units: sizes in bytes, blocks in tokens; no label carries paths of the command line/env
    assert 'vllm_diag_kv_cache_page_size_bytes{' in text and "argv" not in text and "VLLM_DIAG_DB" not in text
    label_names = {k for f in fams for s in f.samples for k, _ in s.labels}
    assert label_names <= {"session", "host", "model_name", "vllm_version", "kind", "status", "gpu", "category",
                           "severity", "phase", "group", "spec_type", "draft", "builder", "buffer"}
    assert {s.label("category") for s in _samples(fams, "vllm_diag_findings")} == set(CATEGORIES)
    assert {s.label("phase") for s in _samples(fams, "vllm_diag_errors_total")} == set(M.ERROR_PHASES)
