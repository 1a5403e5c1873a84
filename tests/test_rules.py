"""Rules: registry behaviour, and every rule firing from the evidence it reads (log facts, predicted
state, recorded steps) -- and staying quiet outside its versions."""

from __future__ import annotations

import pytest

from vllm_diag.model import CATEGORIES, BatchStep, EngineState, Frame, LogException, LogFacts
from vllm_diag.preflight.hfconfig import facts_from_config, load_model_facts
from vllm_diag.preflight.predict import parse_gpu, predict
from vllm_diag.rules import all_rules, run_rules
from vllm_diag.rules.base import GpuInfo, Rule, RuleContext

MINE = {"block_size_inflated", "dsa_next_n", "gdn_cudagraph_capture", "gdn_mixed_batch", "kv_page_not_divisible",
        "kv_quant_hybrid", "kv_scales_hybrid", "kv_unify_mamba_assert", "mamba2_align_long_prompt", "mamba_align_spec_cpu", "mamba_block_budget",
        "mamba_padded_smaller", "mamba_state_indices", "mamba_state_slicing", "prefix_cache_granularity",
        "spec_capture_sizes", "spec_token_budget"}


def _log(exc_type="", message="", frames=(), numbers=None, args=None, startup=None, version="0.20.2", **kw) -> LogFacts:
    root = LogException(exc_type, message, frames=[Frame(*f) for f in frames], log_line=10) if exc_type else None
    return LogFacts(vllm_version=version, root=root, exceptions=[root] if root else [], numbers=numbers or {},
                    args=args or {}, startup=startup or {}, **kw)


def _fire(ctx: RuleContext, rule: str):
    return [f for f in run_rules(ctx, strict=True) if f.rule == rule]


def test_registry_is_stable_and_complete():
    rules = all_rules()
    ids = [r.id for r in rules]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert MINE <= set(ids)
    covered = {r.category for r in rules}
    assert set(CATEGORIES) - {"other"} <= covered
    for r in rules:
        if r.id in MINE:
            assert r.category in CATEGORIES and r.doc.strip() and r.versions and "state" in r.reads and "log" in r.reads


def test_findings_sorted_by_severity_and_a_broken_rule_does_not_hide_others(monkeypatch):
    import vllm_diag.rules as registry

    def boom(ctx):
        raise RuntimeError("bug")

    broken = Rule(id="aaa_broken", title="t", category="other", check=boom)
    real = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: [broken, *real])
    st = predict(load_model_facts("Qwen/Qwen3.5-9B"), {"speculative_method": "ngram", "num_speculative_tokens": 128},
                 (0, 17, 2), parse_gpu("GH200"))
    found = registry.run_rules(RuleContext(state=st, version=(0, 17, 2)))
    sev = [f.severity for f in found]
    assert sev == sorted(sev, key=["error", "warning", "info"].index) and "error" in sev and "info" in sev
    assert found.failures == [("aaa_broken", "RuntimeError: bug")]  # returned, not kept in a module global
    assert not hasattr(registry, "last_failures")
    with pytest.raises(RuntimeError):
        registry.run_rules(RuleContext(state=st, version=(0, 17, 2)), strict=True)


# ---------------------------------------------------------------------------------- from log facts


UNIFY_FRAMES = [("vllm/v1/core/kv_cache_utils.py", 1654, "get_kv_cache_groups", "kv_cache_spec = unify_kv_cache_spec_page_size(kv_cache_spec)"),
                ("vllm/v1/core/kv_cache_utils.py", 1042, "unify_kv_cache_spec_page_size",
                 "assert new_spec.page_size_bytes == max_page_size")]


@pytest.mark.parametrize("version, fires", [("0.20.2", True), ("0.28.0", False)])
def test_unify_assert_from_log_only(version, fires):
    log = _log("AssertionError", "", UNIFY_FRAMES, args={"speculative_method": "draft_model", "num_speculative_tokens": 3},
               version=version)
    from vllm_diag.rules.base import parse_version

    got = _fire(RuleContext(log=log, version=parse_version(version)), "kv_unify_mamba_assert")
    assert bool(got) is fires
    if fires:
        assert got[0].evidence[0].line == 10 and "unify_kv_cache_spec_page_size" in got[0].evidence[1].text


def test_quantized_kv_unify_assert_goes_to_kv_quant_hybrid():
    log = _log("AssertionError", "", UNIFY_FRAMES, args={"kv_cache_dtype": "turboquant_4bit_nc"}, version="0.20.0")
    found = {f.rule for f in run_rules(RuleContext(log=log, version=(0, 20, 0)), strict=True)}
    assert "kv_quant_hybrid" in found and "kv_unify_mamba_assert" not in found


@pytest.mark.parametrize("rule, log", [
    ("kv_page_not_divisible", _log("NotImplementedError", "Layer model.layers.3.self_attn.attn: page size is not divisible by "
                                   "the maximum page size and cannot be padded. Padding is only supported for non-MLA attention layers.",
                                   numbers={"layer_name": "model.layers.3.self_attn.attn"}, version="0.32.0")),
    ("mamba_state_indices", _log("RuntimeError", "The size of tensor a (6) must match the size of tensor b (7) at non-singleton "
                                 "dimension 1", [("vllm/v1/attention/backends/mamba_attn.py", 503, "build_for_cudagraph_capture",
                                                  "self.state_indices_tensor_d[:n].copy_(x)")],
                                 numbers={"tensor_a_size": 6, "tensor_b_size": 7}, args={"num_speculative_tokens": 1},
                                 version="0.19.0")),
    ("mamba_state_slicing", _log("RuntimeError", "split_with_sizes expects split_sizes to sum exactly to 512 (input tensor's size "
                                 "at dimension 0), but got split_sizes=[256, 0]",
                                 numbers={"split_sizes": [256, 0], "split_sizes_expected_sum": 512},
                                 args={"mamba_cache_mode": "all", "num_speculative_tokens": 1}, version="0.19.0")),
    ("dsa_next_n", _log("RuntimeError", "Worker failed with error 'Assertion error (/deepgemm-src/csrc/apis/../jit_kernels/impls/"
                        "smxx_fp8_fp4_paged_mqa_logits.hpp:233): next_n == 1 or next_n == 2'",
                        numbers={"next_n_allowed": [1, 2], "next_n": 3}, args={"num_speculative_tokens": 2})),
    ("gdn_mixed_batch", _log("AssertionError", "num_decodes: 1, num_spec_decodes: 1",
                             [("vllm/v1/attention/backends/gdn_attn.py", 310, "build", "assert not (num_decodes > 0 and ...")],
                             numbers={"num_decodes": 1, "num_spec_decodes": 1}, version="0.17.2")),
    ("gdn_cudagraph_capture", _log("AssertionError", "GDN only supports decode-only full CUDAGraph capture. Make sure batch size (8) "
                                   "<= cudagraph capture sizes (8), and number of tokens (16) <= cudagraph capture sizes (8).",
                                   numbers={"capture_num_reqs": 8, "capture_size": 8, "capture_num_tokens": 16})),
    ("mamba_align_spec_cpu", _log("TypeError", "'function' object is not subscriptable",
                                  [("vllm/v1/worker/mamba_utils.py", 1226, "run_fused_precopy", "kernel[grid](...)")],
                                  version="0.32.0")),
    ("mamba_padded_smaller", _log("AssertionError", "", [("vllm/v1/kv_cache_interface.py", 536, "page_size_bytes",
                                                          "assert self.page_size_padded >= page_size")])),
    ("mamba2_align_long_prompt", _log("IndexError", "index 21 is out of bounds for dimension 0 with size 1",
                                      [("vllm/model_executor/layers/mamba/mamba_mixer2.py", 880, "conv_ssm_forward", "x")],
                                      numbers={"index": 21, "index_size": 1}, version="0.32.0")),
    ("block_size_inflated", _log(startup={"attention_block_size": 544, "mamba_padding_percent": 1.49},
                                 lines={"attention_block_size": (7, "Setting attention block size to 544 tokens")})),
    ("prefix_cache_granularity", _log(startup={"prefix_cache_hit_rate_max": 0.0, "prefix_cache_hit_rate_samples": 12},
                                      args={"enable_prefix_caching": True})),
    ("mamba_block_budget", _log(startup={"num_gpu_blocks": 40}, args={"max_num_seqs": 256, "num_speculative_tokens": 1},
                                architecture="NemotronHForCausalLM")),
    ("spec_token_budget", _log(args={"num_speculative_tokens": 7, "max_num_seqs": 512, "max_num_batched_tokens": 2048})),
    ("hybrid_kv_manager_off", _log(startup={"hybrid_kv_cache_manager_disabled": True,
                                            "gpu_kv_cache_tokens_runs": [2482214, 1320032], "gpu_kv_cache_tokens": 1320032,
                                            "hybrid_kv_cache_manager_off_reason": "a KV connector does not support it"})),
])
def test_rule_fires_from_log_facts(rule, log):
    from vllm_diag.rules.base import parse_version

    got = _fire(RuleContext(log=log, version=parse_version(log.vllm_version)), rule)
    assert got, rule
    f = got[0]
    assert f.category in CATEGORIES and f.message and (f.evidence or f.numbers)


@pytest.mark.parametrize("args", [{}, {"mamba_cache_mode": "align"}, {"enable_prefix_caching": False}])
def test_a_split_error_without_mamba_cache_mode_all_is_not_the_slicing_bug(args):
    # the token-count slicing needs prefix caching in mode "all"; other split errors go to the diagnosis
    from vllm_diag.rules.base import parse_version

    log = _log("RuntimeError", "split_with_sizes expects split_sizes to sum exactly to 10 (input tensor's size at "
               "dimension 0), but got split_sizes=[7, 2]", numbers={"split_sizes": [7, 2], "split_sizes_expected_sum": 10},
               args={**args, "num_speculative_tokens": 2}, version="0.19.0")
    assert not _fire(RuleContext(log=log, version=parse_version(log.vllm_version)), "mamba_state_slicing")


def test_a_draft_pass_that_caps_concurrency_is_read_from_vllms_own_warning():
    # vllm/config/vllm.py (0.33): "The dflash draft pass needs 12 query tokens per request within
    # max_num_batched_tokens=3072. Overriding max_num_active_seqs from 512 to 256." -- max_num_seqs left at its default
    from vllm_diag.postmortem.analyze import analyze_text

    text = ("(APIServer pid=7) INFO 02-03 04:05:06 [utils.py:261] non-default args: {'model': 'org/Hybrid-9B', "
            "'max_num_batched_tokens': 3072, 'speculative_config': {'method': 'dflash', 'num_speculative_tokens': 11}}\n"
            "(APIServer pid=7) WARNING 02-03 04:05:07 [vllm.py:2386] The dflash draft pass needs 12 query tokens per "
            "request within max_num_batched_tokens=3072. Overriding max_num_active_seqs from 512 to 256.\n")
    f = next(f for f in analyze_text(text, "t.log").findings if f.rule == "spec_token_budget")
    assert (f.category, f.severity) == ("token_budget", "warning")
    assert f.numbers["max_num_active_seqs_capped"] == 256 and f.numbers["num_lookahead_tokens"] == 12
    assert f.comparisons[0].actual == 512 * 12 and f.comparisons[0].expected == 3072


def test_rules_quiet_on_a_clean_log():
    log = _log(args={"model": "m", "max_num_seqs": 8}, startup={"gpu_kv_cache_tokens": 100000})
    assert not [f for f in run_rules(RuleContext(log=log, version=(0, 32, 0)), strict=True) if f.rule in MINE]


# ---------------------------------------------------------------------------------- from states


H100 = parse_gpu("H100")
QWEN3_NEXT_TINY = {"architectures": ["Qwen3NextForCausalLM"], "hidden_size": 256, "num_hidden_layers": 4,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "linear_num_key_heads": 2,
                   "linear_num_value_heads": 4, "linear_key_head_dim": 64, "linear_value_head_dim": 64,
                   "max_position_embeddings": 4096}


def test_gdn_full_cudagraph_capture_sizes_above_buffers():
    facts = facts_from_config(QWEN3_NEXT_TINY)
    cfg = {"max_num_seqs": 4, "speculative_method": "ngram", "num_speculative_tokens": 1, "enable_prefix_caching": False,
           "cudagraph_mode": "FULL", "cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32]}
    st = predict(facts, cfg, (0, 32, 0), H100)
    f = _fire(RuleContext(state=st, version=(0, 32, 0)), "gdn_cudagraph_capture")[0]
    assert f.numbers["gdn_buffer_tokens"] == 8 and f.comparisons[0].actual == 32
    st = predict(facts, {**cfg, "cudagraph_mode": "FULL_AND_PIECEWISE"}, (0, 32, 0), H100)
    assert not _fire(RuleContext(state=st, version=(0, 32, 0)), "gdn_cudagraph_capture")


def test_spec_capture_sizes_warning_only_for_user_sizes():
    facts = facts_from_config(QWEN3_NEXT_TINY)
    base = {"max_num_seqs": 64, "speculative_method": "mtp", "num_speculative_tokens": 2, "enable_prefix_caching": False}
    st = predict(facts, {**base, "compilation_config": {"cudagraph_capture_sizes": [1, 2, 4, 8]},
                         "cudagraph_capture_sizes": [1, 2, 4, 8]}, (0, 32, 0), H100)
    f = _fire(RuleContext(state=st), "spec_capture_sizes")[0]
    assert f.severity == "warning" and f.numbers["non_multiples"] == [1, 2, 4, 8]
    assert not _fire(RuleContext(state=predict(facts, base, (0, 32, 0), H100)), "spec_capture_sizes")


def test_mla_next_to_dense_draft_cannot_be_padded():
    ds = facts_from_config({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_hidden_layers": 3,
                            "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64})
    draft = facts_from_config({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 1024,
                               "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
                               "sliding_window": 4096})
    for v in ((0, 20, 2), (0, 32, 0)):
        st = predict(ds, {"speculative_method": "draft_model", "num_speculative_tokens": 2, "draft_model": "d"}, v, H100,
                     draft=draft)
        f = _fire(RuleContext(state=st, version=v), "kv_page_not_divisible")[0]
        assert f.numbers["spec_type"] == "MLAAttentionSpec" and f.numbers["max_page_size"] % f.numbers["page_size"] != 0


def test_granite_spec_decode_padded_page_assert_and_block_size_fix():
    granite = facts_from_config({"architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 2,
                                 "layer_types": ["mamba", "attention"], "num_attention_heads": 32, "num_key_value_heads": 8,
                                 "head_dim": 128, "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_d_state": 128})
    cfg = {"speculative_method": "ngram", "num_speculative_tokens": 1, "enable_prefix_caching": False}
    st = predict(granite, cfg, (0, 30, 0), H100)
    ctx = RuleContext(state=st, version=(0, 30, 0), gpu=H100)
    f = _fire(ctx, "mamba_padded_smaller")[0]
    assert f.comparisons[0].expected > f.comparisons[0].actual
    from vllm_diag.rules import suggestions_for

    block = next(s for s in suggestions_for(f, ctx) if s.changes[0].key == "block_size").changes[0].value
    st2 = predict(granite, {**cfg, "block_size": block}, (0, 30, 0), H100)
    assert not st2.errors and not _fire(RuleContext(state=st2, version=(0, 30, 0)), "mamba_padded_smaller")


def test_the_kv_pool_read_from_the_capacity_lines_follows_the_release():
    """vLLM before 0.23 prints "GPU KV cache size" as num_blocks // groups x block size; from 0.23 as max concurrency x
    max_model_len (a real 0.26.0 NemotronH engine: 731 tokens, 2.86x for 256 tokens, block 48 -> vLLM's own count of
    20 blocks, not 731 // 48 = 15)."""
    from vllm_diag.rules.base import parse_version

    startup = {"gpu_kv_cache_tokens": 731, "max_concurrency": 2.86, "max_concurrency_tokens": 256,
               "attention_block_size": 48}
    args = {"max_num_seqs": 64, "architecture": "NemotronHForCausalLM"}
    new = _log(args=args, startup=startup, version="0.26.0", architecture="NemotronHForCausalLM")
    assert _fire(RuleContext(log=new, version=parse_version("0.26.0")), "mamba_block_budget")[0].numbers["num_blocks"] == 20
    old = _log(args=args, startup=startup, version="0.20.2", architecture="NemotronHForCausalLM")
    assert _fire(RuleContext(log=old, version=parse_version("0.20.2")), "mamba_block_budget")[0].numbers["num_blocks"] == 15


def test_mixed_batch_from_recorded_steps():
    st = EngineState(source="recorded", vllm_version="0.17.1", config={"num_speculative_tokens": 3},
                     steps=[BatchStep(0, num_reqs=2, num_spec_decodes=2), BatchStep(1, num_reqs=2, num_decodes=1,
                                                                                    num_spec_decodes=1, builder="GDNAttentionMetadataBuilder")])
    f = _fire(RuleContext(state=st), "gdn_mixed_batch")[0]
    assert f.numbers["step"] == 1 and f.comparisons[0].actual == 1
    st.vllm_version = "0.19.0"
    assert not _fire(RuleContext(state=st), "gdn_mixed_batch")


def test_mamba_block_budget_from_recorded_blocks():
    # (200 blocks: fewer than max_num_seqs and vLLM would refuse to start -- the next test)
    st = predict(facts_from_config(QWEN3_NEXT_TINY), {"max_num_seqs": 128, "num_gpu_blocks_override": 200,
                                                      "enable_prefix_caching": False}, (0, 32, 0), H100)
    f = _fire(RuleContext(state=st), "mamba_block_budget")[0]
    # one pool for all groups: a request holds a state block in each of the 3 GDN groups and at least one attention
    # block (vLLM 0.26 on an H200: 40 blocks, 3 GDN groups x (1 + 3) + 1 -> 3 requests, where vLLM itself reports a
    # 2.5x concurrency for full-length ones; counting one group only said 10)
    assert (f.numbers["mamba_groups"], f.numbers["attention_groups"]) == (3, 1)
    assert (f.numbers["blocks_per_request"], f.numbers["requests_that_fit"]) == (4, 50)


def test_mamba_block_budget_from_a_kv_budget_in_bytes_predicts_vllms_refusal():
    """--kv-cache-memory-bytes fixes the pool before launch: blocks = bytes // page // layers per group (vLLM's
    get_num_blocks). With full CUDA graphs vLLM 0.20+ refuses max_num_seqs above the blocks (seen on an H200 with
    Granite 4.0-H: 2 MiB -> 170 blocks, refused at 256; 4 MiB -> 341 blocks, served)."""
    from vllm_diag.serve.normalise import normalise_args

    facts = facts_from_config(QWEN3_NEXT_TINY)
    budget = normalise_args({"kv_cache_memory_bytes": "4M"})["kv_cache_memory_bytes"]
    assert budget == 4 * 2**20
    st = predict(facts, {"max_num_seqs": 256, "kv_cache_memory_bytes": budget, "enable_prefix_caching": False},
                 (0, 26, 0), H100)
    page = st.kv_cache_groups[0].page_size_padded or st.kv_cache_groups[0].page_size_bytes
    layers = max(len(g.layer_names) for g in st.kv_cache_groups)
    blocks = budget // page // layers
    f = _fire(RuleContext(state=st, version=(0, 26, 0)), "mamba_block_budget")[0]
    assert f.numbers["num_blocks"] == blocks
    assert (f.severity == "error") == (blocks < 256)
    st = predict(facts, {"max_num_seqs": blocks + 1, "kv_cache_memory_bytes": budget, "enable_prefix_caching": False},
                 (0, 26, 0), H100)
    refused = _fire(RuleContext(state=st, version=(0, 26, 0)), "mamba_block_budget")[0]
    assert refused.severity == "error" and refused.numbers["mamba_cache_blocks"] == blocks
    st.config["enforce_eager"] = True  # no full CUDA graphs: no refusal, only the budget warning
    assert _fire(RuleContext(state=st, version=(0, 26, 0)), "mamba_block_budget")[0].severity == "warning"


def test_cpu_align_spec_predicted_and_quiet_without_spec():
    facts = facts_from_config(QWEN3_NEXT_TINY)
    cpu = GpuInfo(name="cpu")
    st = predict(facts, {"speculative_method": "ngram", "num_speculative_tokens": 3}, (0, 32, 0), cpu)
    assert st.config["mamba_cache_mode"] == "align" and _fire(RuleContext(state=st, gpu=cpu), "mamba_align_spec_cpu")
    st = predict(facts, {}, (0, 32, 0), cpu)
    assert not _fire(RuleContext(state=st, gpu=cpu), "mamba_align_spec_cpu")
    st = predict(facts, {"speculative_method": "ngram", "num_speculative_tokens": 3}, (0, 32, 0), H100)
    assert not _fire(RuleContext(state=st, gpu=H100), "mamba_align_spec_cpu")


def test_spec_capture_sizes_ignores_resolved_sizes_in_a_log():
    # The real 0.26.0 GPU log prints vLLM's own capture sizes [1, 2, 4, ... 64] in its engine-config
    # line; the user never chose them, so this performance rule must stay quiet.
    from pathlib import Path

    from vllm_diag.postmortem import read_facts

    log = Path(__file__).parent / "fixtures/logs/gpu/gpu_nemotronh_prefix_caching_ngram.log"
    facts, _ = read_facts(str(log))
    assert facts.args["cudagraph_capture_sizes"][-1] == 64
    assert not _fire(RuleContext(log=facts), "spec_capture_sizes")
    facts.lines["non_default_args"] = (1, "non-default args: {'compilation_config': {'cudagraph_capture_sizes': [1, 2]}}")
    facts.args["cudagraph_capture_sizes"] = [1, 2]
    assert _fire(RuleContext(log=facts), "spec_capture_sizes")


def test_mode_all_under_drafts_is_an_error_predicted_and_a_risk_where_the_engine_served():
    """The pre-flight predicts the failure (error); a recording of an engine that served without an error (Jamba's
    Mamba1 layers with --enforce-eager on vLLM 0.26.0) and a log without a failure get the same finding as a risk."""
    config = {"mamba_cache_mode": "all", "num_speculative_tokens": 3, "speculative_method": "ngram"}
    predicted = EngineState(source="predicted", vllm_version="0.26.0", config=config)
    assert _fire(RuleContext(state=predicted, version=(0, 26, 0)), "mamba_state_indices")[0].severity == "error"
    served = EngineState(source="recorded", vllm_version="0.26.0", config=config)
    f = _fire(RuleContext(state=served, version=(0, 26, 0)), "mamba_state_indices")[0]
    assert f.severity == "warning" and "recording shows no failure" in f.message


def test_a_zero_hit_rate_with_the_block_size_the_reporter_quotes():
    """vLLM sets Mamba cache mode 'align' only with prefix caching on; the block size is in the reporter's words."""
    from vllm_diag.postmortem.analyze import analyze_text

    log = ("INFO 04-02 08:41:07 [config.py:352] Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration "
           "by default when prefix caching and speculative decoding are enabled\n"
           "INFO 04-02 08:45:02 [loggers.py:251] Engine 000: Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 22.6%, "
           "Prefix cache hit rate: 0.0%\n"
           "system prompt is ~1500 tokens, block size ended up at 1056\n")
    f = analyze_text(log, "t.log").findings[0]
    assert (f.rule, f.category) == ("prefix_cache_granularity", "prefix_cache_degraded")
    assert f.numbers["granularity_tokens"] == 1056


def test_fp8_kv_scales_calibrated_on_a_hybrid_are_predicted_before_0_19_and_read_from_a_report():
    """--calculate-kv-scales on a hybrid: the scales come from a pass over uninitialised recurrent state (garbage,
    no error) until vLLM 0.19.0 turns the flag off for hybrids. The pre-flight predicts it from the command; a
    report of wrong output with that command is the same class (quantized KV on a hybrid)."""
    from vllm_diag.postmortem.analyze import analyze_text
    from vllm_diag.serve import parse_command

    facts = facts_from_config(QWEN3_NEXT_TINY)
    cfg = parse_command("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --kv-cache-dtype fp8 --calculate-kv-scales").config()
    assert cfg["calculate_kv_scales"] is True
    f = _fire(RuleContext(state=predict(facts, cfg, (0, 17, 0), H100), version=(0, 17, 0)), "kv_scales_hybrid")[0]
    assert f.category == "kv_page_size" and f.severity == "warning"
    assert not _fire(RuleContext(state=predict(facts, cfg, (0, 19, 0), H100), version=(0, 19, 0)), "kv_scales_hybrid")
    bf16 = {k: v for k, v in cfg.items() if k != "kv_cache_dtype"}
    assert not _fire(RuleContext(state=predict(facts, bf16, (0, 17, 0), H100), version=(0, 17, 0)), "kv_scales_hybrid")
    report = ("Qwen3-Next outputs garbage after a few dozen tokens, no error in the log.\n"
              "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --kv-cache-dtype fp8 --calculate-kv-scales "
              "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'\n"
              "INFO 03-02 17:40:11 [__init__.py:239] vLLM version VERSION")
    top = analyze_text(report.replace("VERSION", "0.17.0"), "t.log").findings[0]
    assert top.category == "kv_page_size" and "uninitialised" in top.title
    top = analyze_text(report.replace("VERSION", "0.20.2"), "t.log").findings[0]
    assert "uninitialised" not in top.title
