"""Pre-flight vs real vLLM 0.26.0 engines on Hopper GPUs (H100 and H200, CUDA graphs on).

``tests/preflight_gpu/results_vllm0.26.0_hopper.json`` was recorded on the lent GPU machine by
``tests/preflight_gpu/run_gpu.py`` (the test-bed models, the PyPI vLLM 0.26.0 wheel; 5 engines on an H100 80GB, 2 on an H200):
each engine's KV-cache groups, V1 block tables, Mamba/GDN builder buffers, cache/scheduler/CUDA-graph
settings, or the error that stopped it. Here the predictor (version 0.26.0, GPU H100, LLM defaults)
must reproduce every number, and the rules must flag the engine that failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_diag.preflight.hfconfig import load_model_facts
from vllm_diag.preflight.predict import parse_gpu, predict
from vllm_diag.rules import run_rules
from vllm_diag.rules.base import RuleContext
from vllm_diag.serve import normalise_args

RECORDS = json.loads((Path(__file__).parent / "preflight_gpu" / "results_vllm0.26.0_hopper.json").read_text())
H100 = parse_gpu("H100")
V = (0, 26, 0)


def _predict(rec, models):
    name = Path(rec["model"]).name
    model = str(models[name])
    kwargs = {k: v for k, v in rec["kwargs"].items() if k not in ("gpu_memory_utilization", "kv_cache_memory_bytes")}
    spec = kwargs.get("speculative_config")
    if isinstance(spec, dict) and spec.get("model"):
        spec = dict(spec, model=str(models[Path(spec["model"]).name]))
        kwargs["speculative_config"] = spec
    cfg = normalise_args({"model": model, **kwargs})
    draft = load_model_facts(cfg["draft_model"]) if cfg.get("draft_model") else None
    return predict(load_model_facts(model), cfg, V, H100, draft=draft, entry="llm")


def test_records_come_from_the_expected_engine():
    assert RECORDS and all(r.get("vllm") == "0.26.0" and ("H100" in r.get("gpu", "") or "H200" in r.get("gpu", "")) for r in RECORDS.values())


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_prediction_matches_recorded_gpu_engine(testbed_models, name):
    rec = RECORDS[name]
    st = _predict(rec, testbed_models)
    assert not st.errors
    assert sorted([g.spec_type, g.block_size, g.page_size_bytes, sorted(g.layer_names)] for g in st.kv_cache_groups) == \
        sorted(g[:4] for g in rec["groups"])
    assert sorted([b.rows, b.columns] for b in st.block_tables) == sorted(rec["block_tables"])
    assert st.config["mamba_page_size_padded"] == rec["cache"]["mamba_page_size_padded"]
    assert st.config["mamba_cache_mode"] == rec["cache"]["mamba_cache_mode"]
    assert st.config["cudagraph_capture_sizes"] == rec["compilation"]["cudagraph_capture_sizes"]
    assert st.config["max_cudagraph_capture_size"] == rec["compilation"]["max_cudagraph_capture_size"]
    assert st.config["max_num_batched_tokens"] == rec["scheduler"]["max_num_batched_tokens"]
    real_bufs = {b[2]: b[3] for b in rec["builder_buffers"] if isinstance(b[3], list)}
    ours = {b.name: b.shape for b in st.builder_buffers}
    for tensor in ("state_indices_tensor_d", "spec_state_indices_tensor", "non_spec_state_indices_tensor",
                   "num_accepted_tokens", "block_idx_last_scheduled_token", "block_idx_last_computed_token",
                   "decode_num_accepted_tokens", "spec_sequence_masks", "spec_token_indx", "non_spec_token_indx",
                   "spec_query_start_loc", "non_spec_query_start_loc"):
        if tensor in ours or tensor in real_bufs:
            assert ours.get(tensor) == real_bufs.get(tensor), tensor


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_rules_flag_exactly_the_engines_that_failed(testbed_models, name):
    rec = RECORDS[name]
    st = _predict(rec, testbed_models)
    errors = [f for f in run_rules(RuleContext(state=st, version=V, gpu=H100), strict=True) if f.severity == "error"]
    if "error" in rec:
        assert [f.rule for f in errors] == ["mamba_state_indices"], rec["error"]
        assert "prev_step" in rec["traceback_tail"]
    else:
        assert not errors and len(rec["generated"]) == 8
