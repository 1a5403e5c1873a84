"""The view layer on real sessions: GPU recordings of vLLM 0.26.0 (assets/gpu), pre-flight checks of
the seeds, analysed real logs. Pure functions: a record in, frozen view models out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_diag.model import BatchStep, SessionInfo, SessionRecord
from vllm_diag.store import Store
from vllm_diag.views import Anchor, Missing, build, extend, summarize_steps
from vllm_diag.views.state_index import explain_width

REPO = Path(__file__).resolve().parents[1]
GPU = REPO / "assets" / "gpu"


def load(name: str) -> SessionRecord:
    with Store.open(GPU / f"{name}.db") as st:  # schema 1, read-only: older files still open
        return st.load()


@pytest.fixture(scope="module")
def qwen():
    return load("qwen3next-serve-ngram3")


@pytest.fixture(scope="module")
def capture_11v12():
    return load("nemotronh-pc-ngram3-capture-11v12")


@pytest.fixture(scope="module")
def tp2():
    return load("nemotronh-serve-tp2")


def test_view_models_are_frozen(qwen):
    vm = build(qwen)
    with pytest.raises(dataclasses.FrozenInstanceError):
        vm.header.kind = "x"  # type: ignore[misc]
    hash(vm.page_map)  # hashable all the way down: safe to cache and to share between threads


def test_page_map_of_a_served_qwen3_next(qwen):
    pm = build(qwen).page_map
    [side] = pm.sides
    assert side.source == "recorded" and side.unified and side.max_page == 73_728
    assert [r.layer for r in side.rows] == ["model.layers.0.linear_attn", "model.layers.1.linear_attn",
                                             "model.layers.2.linear_attn", "model.layers.3.self_attn.attn"]
    assert [r.group for r in side.rows] == [0, 1, 2, 3]
    assert all(r.page_before == r.page_after == 73_728 and r.divides is True and r.ratio_to_max == 1.0 for r in side.rows)
    assert not pm.marked_layers and [g.spec_type for g in side.groups] == ["MambaSpec"] * 3 + ["FullAttentionSpec"]


def test_state_index_of_a_served_qwen3_next(qwen):
    si = build(qwen).state_index
    assert si.source.startswith("recorded") and not si.mismatches
    g0 = si.groups[0]
    assert (g0.rows, g0.columns, g0.derivation) == (8, 4, "(1) + num_speculative_blocks 3 = 4")
    spec = next(b for b in g0.buffers if b.name == "spec_state_indices_tensor")
    assert spec.shape == (32, 4) and spec.matches is True and spec.compared
    assert [c.index for c in g0.cells] == [1, 2, 3, 4] and not any(c.marked for c in g0.cells)


def test_timeline_tells_runner_and_builder_rows_apart(qwen):
    t = build(qwen).timeline
    assert t.total_rows == 243 and t.width == 1 and not t.downsampled
    labels = [s.label for s in t.series]
    assert labels == ["runner", "GDNAttentionMetadataBuilder (group 0)"]
    runner, gdn = t.series
    assert len(runner.x) == 121 and len(gdn.x) == 122 and gdn.agrees
    # each step once: the builder agrees with the runner, so only the runner's row is printed
    steps = [r.step for r in t.recent]
    assert steps == sorted(set(steps)) and all(r.kind == "runner" for r in t.recent) and len(steps) == 10
    assert t.next_n == 4 and t.limits and all(lim.limit == 4 and lim.ok is True for lim in t.limits)


def test_timeline_marks_a_builder_that_disagrees_and_names_the_drawn_rank(tp2):
    t = build(tp2).timeline
    assert t.pids == (1191, 1192) and t.pid == 1191 and "rank 1" in t.process_note
    assert dict(t.mark_counts)["disagree"] == 3 and dict(t.mark_counts)["mixed"] == 0
    bad = [r for r in t.recent if r.kind == "builder"]
    assert bad and all("disagrees with the runner" in r.mark for r in bad)
    assert t.next_n == 1  # no speculative decoding: next_n = 1


def test_state_index_11_vs_12_from_the_errors_numbers(capture_11v12):
    """The capture crash: block_tables/builder_buffers hold no rows; the probe's numbers do."""
    vm = build(capture_11v12)
    si = vm.state_index
    assert "numbers the probes attached to RuntimeError" in si.source
    [g] = si.mismatches
    assert (g.group_index, g.spec_type, g.rows, g.columns, g.mismatch) == (0, "MambaSpec", 8, 12, (12, 11))
    assert g.marked_columns == (12,) and Anchor("column", "0:12") in g.marked_anchors
    [buf] = g.buffers
    assert buf.columns == 11 and isinstance(buf.builder, Missing) and "tensor a (11)" in buf.name
    assert "num_speculative_blocks 3 = 11" in buf.derivation and "= 12" in g.derivation
    assert "not recorded" in g.derivation_source
    assert [c.index for c in g.cells if c.marked] == [12] and g.cells[-1].in_table and not g.cells[-1].in_buffer
    assert isinstance(vm.timeline.missing, Missing) and vm.page_map.sides[0].source == "recorded"


def test_explain_width():
    assert explain_width(7, 21525, 4224, 1) == ("cdiv(max_model_len 21525, block_size 4224) = 6 + num_speculative_blocks 1 = 7")
    assert explain_width(6, 21525, 4224, 1) == "cdiv(max_model_len 21525, block_size 4224) = 6"
    assert explain_width(9, 21525, 4224, 1) is None and explain_width(6, None, 4224, 1) is None


def _steps(n: int, pid: int = 7) -> list[BatchStep]:
    out = []
    for i in range(n):
        mixed = i % 97 == 5
        out.append(BatchStep(step_index=i, num_reqs=4, num_decodes=2 if mixed else 4, num_spec_decodes=2 if mixed else 0,
                             num_tokens=4 + (i % 3), pid=pid))
        out.append(BatchStep(step_index=i, num_reqs=4, num_decodes=4, num_spec_decodes=0, num_tokens=4 + (i % 3),
                             builder="GDNAttentionMetadataBuilder", group_index=0, pid=pid))
    return out


def test_downsampling_and_extend_agree_with_one_summary():
    steps = _steps(5000)
    whole = summarize_steps(steps, max_points=1000)
    assert whole.width == 8 and len([b for b in whole.buckets if b.source == "runner"]) == 625  # widths are powers of two
    assert whole.mark_counts == {"mixed": 52, "disagree": 52}
    part = summarize_steps(steps[:6000], max_points=1000)
    grown = extend(part, steps[6000:])
    runner = lambda s: [(b.first_step, b.max_decodes, b.sum_tokens, b.mixed) for b in s.buckets if b.source == "runner"]  # noqa: E731
    assert sum(b.sum_tokens for b in grown.buckets) == sum(b.sum_tokens for b in whole.buckets)
    assert sum(b.mixed for b in grown.buckets if b.source == "runner") == 52
    assert grown.last_step == 4999 and grown.total_rows == 10_000
    assert runner(grown)[0][0] == 0


def test_empty_record_says_why_everything_is_missing():
    vm = build(SessionRecord(session=SessionInfo(id="x", kind="engine")))
    assert isinstance(vm.page_map.missing, Missing) and isinstance(vm.state_index.missing, Missing)
    assert isinstance(vm.timeline.missing, Missing) and "no step recorded" in vm.timeline.missing.reason
    assert not vm.findings.items and vm.findings.verdict.startswith("no error finding")


# ------------------------------------------------------------------ SQL and Python summaries agree


def _same(a, b):
    key = lambda m: (m.kind, m.step_index, m.source, m.group_index if m.group_index is not None else -1)  # noqa: E731
    assert (a.total_rows, a.total_steps, a.first_step, a.last_step, a.width, a.pid, a.pids) == \
        (b.total_rows, b.total_steps, b.first_step, b.last_step, b.width, b.pid, b.pids)
    assert a.buckets == b.buckets
    assert sorted(a.marks, key=key) == sorted(b.marks, key=key) and a.mark_counts == b.mark_counts
    rows = lambda t: sorted((s.step_index, s.builder or "") for s in t)  # noqa: E731 - within a step: write order
    assert rows(a.tail) == rows(b.tail)


@pytest.mark.parametrize("name", ["qwen3next-serve-ngram3", "nemotronh-serve-tp2"])
def test_sql_summary_equals_python_on_real_recordings(name, tmp_path):
    import shutil

    with Store.open(GPU / f"{name}.db") as st:  # schema 1: aggregated from batch_steps directly
        rec = st.load()
        old = st.step_summary(rec.session.id, rec.processes)
    py = summarize_steps(rec.state.steps, rec.processes)
    _same(old, py)
    copy = tmp_path / "x.db"
    shutil.copy(GPU / f"{name}.db", copy)
    with Store.open(copy, create=True) as st:  # migrated: rollup + marks backfilled
        new = st.step_summary(rec.session.id, rec.processes)
        small = st.step_summary(rec.session.id, rec.processes, max_points=1)  # width >= 64: the rollup path
    _same(new, py)
    _same(small, summarize_steps(rec.state.steps, rec.processes, max_points=1))


def test_triggers_keep_the_rollup_as_rows_arrive(tmp_path):
    """Rows written in any order (builder before runner and after), through the probes' add_rows."""
    steps = _steps(3000)
    with Store.open(tmp_path / "s.db", create=True) as st:
        sid = st.new_session("engine")
        for i in range(0, len(steps), 500):
            chunk = steps[i:i + 500]
            st.add_rows("batch_steps", sid, 7, chunk[1::2] + chunk[0::2])  # builders first, then runners
        for width_points in (2000, 10):
            _same(st.step_summary(sid, [], max_points=width_points), summarize_steps(steps, [], max_points=width_points))
        rows, last = st.steps_after(sid, 0, limit=10)
        more, last2 = st.steps_after(sid, last)
        assert len(rows) == 10 and len(more) == 5990 and last2 > last
        rec = st.load(sid, steps="summary")
    assert rec.state.steps == [] and rec.step_summary.total_rows == 6000
    t = build(rec).timeline
    assert t.total_steps == 3000 and dict(t.mark_counts) == {"mixed": 31, "disagree": 31}
    assert t.marks[0].kind == "disagree" and t.marks[0].step == 5 and "the runner 2/2/0" in t.marks[0].text


def test_windows_agree_between_sql_and_python(tmp_path):
    from vllm_diag.steps import window

    steps = _steps(3000)
    with Store.open(tmp_path / "w.db", create=True) as st:
        sid = st.new_session("engine")
        st.add_rows("batch_steps", sid, 7, steps)
        for first, last, points in ((100, 900, 2000), (100, 2900, 10), (2990, 5000, 50), (None, 40, 8)):
            sql = st.step_summary(sid, [], max_points=points, first_step=first, last_step=last)
            _same(sql, summarize_steps(steps, [], max_points=points, first_step=first, last_step=last))
        zoomed_out = window(st.step_summary(sid, [], max_points=600), 0, 2999, max_points=100)
    whole = summarize_steps(steps, [], max_points=100)
    assert zoomed_out.width == whole.width and zoomed_out.buckets == whole.buckets


def test_api_diagnoses_a_recorded_crash_and_anchors_it():
    """The probes store facts, not findings: api.diagnose runs the rules on the recorded state."""
    from vllm_diag import api

    record = api.load(GPU / "nemotronh-pc-ngram3-capture-11v12.db")
    assert record.findings == [] and build(record).findings.unexplained[0].anchors == (Anchor("group", "0"),
                                                                                       Anchor("column", "0:12"))
    diagnosed = api.diagnose(record)
    [f] = api.views(diagnosed).findings.items
    assert f.rule == "mamba_state_indices" and f.anchor_keys == ("group:0", "column:0:12")
    assert f.suggestions and not any(s.verified for s in f.suggestions)
    assert api.diagnose(diagnosed) is diagnosed


def test_state_index_compares_what_the_builder_copies():
    """GDN and Mamba builders copy ``block_table[:, :1 + k]`` into their decode buffers; only a Mamba
    decode buffer in cache mode 'all' takes the whole row. A 1 + k wide buffer beside a 30-column row
    is the normal layout, not a mismatch; the 6-vs-7 of vllm#39809 (mode 'all') still is one."""
    from vllm_diag import api

    plain = build(api.check("vllm serve Qwen/Qwen3.5-9B --max-model-len 16000", version="0.26.0", gpu="H100")).state_index
    assert not plain.mismatches
    spec = next(b for g in plain.groups for b in g.buffers if b.name == "spec_state_indices_tensor")
    assert spec.columns == 1 and spec.matches is True and "1 + num_speculative_tokens 0" in spec.derivation

    mtp = ("vllm serve Qwen/Qwen3.5-9B --max-model-len 16000 "
           "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'")
    assert not build(api.check(mtp, version="0.26.0", gpu="H100")).state_index.mismatches

    seed = ("vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 --enable-prefix-caching --kv-cache-dtype fp8 "
            "--max-model-len 21525 -tp 4 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'")
    [g] = build(api.check(seed, version="0.19.0", gpu="B200")).state_index.mismatches
    assert g.mismatch == (7, 6)
