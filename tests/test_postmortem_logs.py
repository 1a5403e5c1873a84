"""End to end on logs: the five seed bug reports, real failing CPU engines (captured from their own
output), every wrapper/prefix variant of those, and negative logs that must stay ``other``."""

from __future__ import annotations

import json

import os
from pathlib import Path

import pytest

from vllm_diag.model import CATEGORIES
from vllm_diag.postmortem.analyze import analyze_facts, analyze_path
from vllm_diag.postmortem.reader import facts_from_bytes
from tests.fixtures.logs.seeds.extract import extract
from tests.fixtures.logs.variants import VARIANTS

LOGS = Path(__file__).parent / "fixtures" / "logs"
# the original seed pages, when a checkout has them (set VLLM_DIAG_SEEDS_DIR); the fixtures are their excerpts
SEEDS_SRC = Path(os.environ.get("VLLM_DIAG_SEEDS_DIR", "")) if os.environ.get("VLLM_DIAG_SEEDS_DIR") else None
MISMATCH = set(CATEGORIES) - {"other"}

# seed -> (category of the first finding, root exception type, numbers that must be read, facts)
SEEDS = {
    "000_a62ee88866094543": ("kv_page_size", "AssertionError", {"num_speculative_tokens": 3},
                             {"vllm_version": "0.20.2", "gpu": "RTX PRO 6000 Blackwell", "kv_cache_dtype": "fp8_e4m3",
                              "frame": ("unify_kv_cache_spec_page_size", 1042)}),
    "001_8b8c48f7a3e85366": ("kv_page_size", "AssertionError", {},
                             {"vllm_version": "0.20.0", "gpu": "RTX 3090", "kv_cache_dtype": "turboquant_4bit_nc",
                              "architecture": "Qwen3_5ForConditionalGeneration", "frame": ("unify_kv_cache_spec_page_size", 1030)}),
    "002_92ecc0d74b2a3bfc": ("spec_kernel_limit", "RuntimeError", {"next_n": 3, "next_n_allowed": [1, 2], "kernel_assert_line": 233},
                             {"gpu": "H200", "tensor_parallel_size": 2, "num_speculative_tokens": 2}),
    "003_147e25c431f470c3": ("mixed_batch", "AssertionError", {"num_decodes": 1, "num_spec_decodes": 1},
                             {"vllm_version": "0.17.2.dev0+g95c0f928c.d20260313", "gpu": "GH200", "speculative_method": "ngram",
                              "num_speculative_tokens": 128, "frame": ("build", 310)}),
    "004_56fd74f28e856ca0": ("state_index", "RuntimeError", {"tensor_a_size": 6, "tensor_b_size": 7, "mismatch_dim": 1},
                             {"vllm_version": "0.19.0", "gpu": "B200", "tensor_parallel_size": 4, "speculative_method": "mtp",
                              "enable_prefix_caching": True}),
}


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_fixture_is_verbatim(seed):
    if SEEDS_SRC is None or not SEEDS_SRC.is_dir():
        pytest.skip("seed pages not available (set VLLM_DIAG_SEEDS_DIR to check the excerpts against them)")
    assert (LOGS / "seeds" / f"{seed}.log").read_text() == extract((SEEDS_SRC / f"{seed}.txt").read_text())


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_diagnosis(seed):
    category, exc_type, numbers, facts = SEEDS[seed]
    an = analyze_path(str(LOGS / "seeds" / f"{seed}.log"))
    f = an.facts
    assert f.root is not None and f.root.exc_type == exc_type
    for k, v in numbers.items():
        assert f.numbers.get(k) == v, k
    if "vllm_version" in facts:
        assert f.vllm_version == facts["vllm_version"]
    assert facts["gpu"] in f.gpu_names[0]
    for key in ("kv_cache_dtype", "architecture", "tensor_parallel_size", "num_speculative_tokens", "speculative_method",
                "enable_prefix_caching"):
        if key in facts:
            assert f.args.get(key) == facts[key], key
    if "frame" in facts:
        assert (f.root.last_frame.function, f.root.last_frame.line) == facts["frame"]
    top = an.findings[0]
    assert top.category == category, [(x.category, x.rule) for x in an.findings]
    assert top.severity == "error"
    assert top.suggestions, "a finding on a seed log comes with at least one suggestion"
    assert any(e.line == f.root.log_line for e in top.evidence)
    assert top.numbers or top.comparisons or top.missing_evidence


# ---------------------------------------------------------------- real CPU engines
REAL = {
    # log -> (root type, first finding category, rule or None, numbers)
    "qwen3next_ngram_prefix_caching": ("TypeError", "state_index", None, {"num_speculative_tokens": 3}),
    "nemotronh_prefix_caching_long_prompt": ("IndexError", "state_index", "mamba2_align_long_prompt",
                                             {"index_dim": 0, "index_size": 1}),
    "unknown_architecture": ("ValidationError", "other", "other_unsupported_arch", {}),
    "missing_tokenizer": ("ValueError", "other", "other_missing_files", {}),
    "qwen3next_mamba_block_size_no_pc": ("ValidationError", "other", None, {}),
}


def test_a_real_pydantic_error_ends_at_its_further_information_line():
    """The real engine's refusal of --mamba-block-size without prefix caching, and a report's next run pasted after
    it: pydantic's error ends at its "For further information" line, so the next run's start-up line is not part of
    the message."""
    real = (LOGS / "real" / "qwen3next_mamba_block_size_no_pc.log").read_text()
    rerun = ("=== rerun with --enable-prefix-caching ===\n(APIServer pid=9) INFO 11-30 07:20:01 [interface.py:905] Setting "
             "attention block size to 272 tokens to ensure that attention page size is >= mamba page size.")
    root = facts_from_bytes((real.rstrip("\n") + "\n" + rerun).encode()).root
    assert root.message.splitlines()[-1].startswith("For further information visit https://errors.pydantic.dev")
    assert "--mamba-block-size can only be set with --enable-prefix-caching" in root.message


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_engine_log(name):
    exc_type, category, rule, numbers = REAL[name]
    an = analyze_path(str(LOGS / "real" / f"{name}.log"))
    f = an.facts
    assert f.root.exc_type.endswith(exc_type)
    for k, v in numbers.items():
        assert f.numbers[k] == v
    assert an.findings and an.findings[0].severity == "error"
    if category:
        assert an.findings[0].category == category
    if rule:
        assert an.findings[0].rule == rule


def test_real_multiprocess_log_facts():
    f = analyze_path(str(LOGS / "real" / "qwen3next_ngram_prefix_caching.log")).facts
    assert f.vllm_version == "0.32.0"
    assert f.root.process == "Worker" and f.root.last_frame.function == "run_fused_precopy"
    assert f.args["speculative_method"] == "ngram" and f.args["enable_prefix_caching"] is True
    assert f.architecture == "Qwen3NextForCausalLM" and f.startup["mamba_cache_mode"] == "align"
    assert f.startup["kv_cache_device"] == "CPU"


def test_successful_engine_has_no_findings():
    an = analyze_path(str(LOGS / "real" / "llama_ok.log"))
    assert an.facts.root is None and not an.findings and not an.failed
    assert an.facts.startup["gpu_kv_cache_tokens"] > 0


# ---------------------------------------------------------------- real GPU engine (vLLM 0.26.0, H200)
def test_gpu_engine_log():
    """NemotronH + prefix caching (Mamba cache mode 'all') + ngram k=3 on vLLM 0.26.0: a bare assert in
    mamba_mixer2 at the first step (tests/fixtures/logs/capture_gpu.py)."""
    an = analyze_path(str(LOGS / "gpu" / "gpu_nemotronh_prefix_caching_ngram.log"))
    f = an.facts
    assert f.vllm_version == "0.26.0" and f.architecture == "NemotronHForCausalLM"
    assert f.root.exc_type == "AssertionError" and f.root.process == "EngineCore"
    assert (f.root.last_frame.function, f.root.last_frame.line) == ("conv_ssm_forward", 963)
    assert f.numbers["assert_condition"] == "block_idx_last_scheduled_token_prev_step_d is not None"
    assert f.args["enable_prefix_caching"] is True and f.args["speculative_method"] == "ngram"
    assert f.startup["mamba_cache_mode"] == "all" and f.startup["kv_cache_device"] == "GPU"
    top = an.findings[0]
    assert top.severity == "error" and any(e.line == f.root.log_line for e in top.evidence)
    assert (top.category, top.rule) == ("state_index", "mamba_state_indices")
    # vLLM's own resolved capture sizes are in the log; no performance warning may come from them
    assert not any(x.rule == "spec_capture_sizes" for x in an.findings)


def test_cpu_log_preflight_uses_the_cpu_backend(testbed_models):
    """The CPU log says 'Setting attention block size to 640'; the pre-flight must predict the same
    (CPU backend: block 128 granularity), not the CUDA 288. The log names its model by a path of the
    machine that recorded it (``/models/qwen3_next``); ``model_dirs`` finds the test bed's copy."""
    log = str(LOGS / "real" / "qwen3next_ngram_prefix_caching.log")
    an = analyze_path(log, model_dirs=[str(testbed_models["qwen3_next"].parent)])
    assert an.predicted is not None, an.preflight_note
    assert an.facts.startup["attention_block_size"] == 640
    assert an.gpu is not None and an.gpu.name == "cpu"
    # the log's host ran the accelerated GDN path (AVX512-BF16): its SSM state is float32, whatever this host has
    assert an.facts.startup["cpu_accelerated_gdn"] is True and an.gpu.avx512_bf16 is True
    inflated = [x for x in an.findings if x.rule == "block_size_inflated"][0]
    assert (inflated.comparisons[0].expected, inflated.comparisons[0].actual) == (128, 640)
    granularity = [x for x in an.findings if x.rule == "prefix_cache_granularity"][0]
    assert granularity.numbers["granularity_tokens"] == 640


def test_gpu_success_log_has_no_error_findings():
    an = analyze_path(str(LOGS / "gpu" / "gpu_llama_no_kv_memory.log"))
    assert an.facts.root is None and not [x for x in an.findings if x.severity == "error"]
    assert an.facts.startup["gpu_kv_cache_tokens"] == 624736


def test_a_kv_cache_too_small_for_one_request_compares_tokens_where_vllm_rounds_the_gib():
    """A real TP=2 engine with 128 KiB of KV memory per rank: vLLM prints "0.0 GiB ... (0.0 GiB)", so the finding
    compares the request's tokens with the tokens the pool holds (1024 vs 512) and keeps the byte budget."""
    top = analyze_path(str(LOGS / "gpu" / "gpu_llama_kv_cache_too_small_tp2.log")).findings[0]
    assert top.rule == "other_oom" and top.numbers["kv_cache_memory_bytes"] == 131072
    assert [(c.expected, c.actual, c.unit) for c in top.comparisons] == [(1024, 512, "tokens")]


# ---------------------------------------------------------------- variants
GPU_FAILURES = sorted(p.stem for p in LOGS.glob("gpu/*.json") if "expected_category" in json.loads(p.read_text()))


@pytest.mark.parametrize("name", GPU_FAILURES)
def test_real_gpu_failures_get_their_family(name):
    """vLLM 0.26.0 on an H200 with the project's tiny hybrid models (the .json says how each engine ran): start-up
    validation errors, a bare assert of Mamba cache mode 'all' under drafts with CUDA graphs off, and a dense draft
    model's index fault on NemotronH (asynchronous, and again with CUDA_LAUNCH_BLOCKING=1) are diagnosed in their
    family from the log alone."""
    meta = json.loads((LOGS / "gpu" / f"{name}.json").read_text())
    an = analyze_path(str(LOGS / "gpu" / f"{name}.log"))
    top = an.findings[0]
    assert an.facts.vllm_version in (None, meta["vllm_version"]) and top.severity == "error"  # (a config error: no banner)
    assert top.category == meta["expected_category"], (name, top.category, top.title)
    if "dense_draft" in name:  # the draft's architecture, resolved second, is not the model's
        assert an.facts.architecture == "NemotronHForCausalLM"
    if "blocking" in name:  # synchronous launches: the drafter's statement launched it, no rerun asked for
        assert "launched" in top.basis and not any("CUDA_LAUNCH_BLOCKING=1" in m for m in top.missing_evidence)


def test_the_probes_note_gives_a_bare_page_assert_its_numbers():
    """A real padded-Mamba-page assert with the probes' note in the log ("failed with self.page_size_padded=24576,
    page_size=25088"): the finding states both pages and asks for no values it already has."""
    top = analyze_path(str(LOGS / "gpu" / "gpu_falconh1_ngram5_padded_mamba_page.log")).findings[0]
    assert top.rule == "mamba_padded_smaller" and "25,088 B" in top.message and "24,576 B" in top.message
    assert not any("carries no values" in m for m in top.missing_evidence)


GPU_SERVED = sorted(p.stem for p in LOGS.glob("gpu/*.json") if json.loads(p.read_text()).get("served"))


@pytest.mark.parametrize("name", GPU_SERVED)
def test_real_gpu_runs_that_served_get_no_error_finding(name):
    """Engines that served all their traffic on vLLM 0.26.0 although their configuration asked for Mamba cache mode
    'all' under drafts: Qwen3-Next falls back to 'align' (the log says so, and that mode is what ran), and Jamba's
    Mamba1 layers ran with --enforce-eager. A risk may be flagged, never an error."""
    an = analyze_path(str(LOGS / "gpu" / f"{name}.log"))
    assert an.facts.root is None and not [f for f in an.findings if f.severity == "error"], \
        [(f.severity, f.title) for f in an.findings]
    if "falls_back" in name:
        assert an.facts.args["mamba_cache_mode"] == "align" and an.facts.startup["requested_mamba_cache_mode"] == "all"


# (every real GPU log too: a fault printed by the worker and again by the engine, with or without PyTorch's
# "Search for `cudaError...'" lines, reads the same whichever copy a variant puts first)
VARIANT_LOGS = sorted(LOGS.glob("real/*.log")) + sorted(LOGS.glob("seeds/*.log")) + sorted(LOGS.glob("gpu/*.log"))


def _summary(data: bytes):
    f = facts_from_bytes(data)
    an = analyze_facts(f, use_preflight=False)
    return (f.root.exc_type if f.root else None, f.root.message[:120] if f.root else None,
            [(x.category, x.rule) for x in an.findings], sorted((k, str(v)) for k, v in f.numbers.items()),
            f.vllm_version, f.model, f.args.get("num_speculative_tokens"),
            [fr.function for fr in f.root.frames] if f.root else None)


@pytest.fixture(scope="module")
def baselines():
    return {p: _summary(p.read_bytes()) for p in VARIANT_LOGS}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_read_the_same(variant, baselines):
    for p in VARIANT_LOGS:
        out = VARIANTS[variant](p.read_text())
        data = out if isinstance(out, bytes) else out.encode()
        assert _summary(data) == baselines[p], f"{variant} changed the analysis of {p.name}"


# ---------------------------------------------------------------- negative logs
NEGATIVE = {
    "negative/cuda_oom_at_load.log": "other_oom",
    "negative/nccl_watchdog_timeout.log": "other_nccl_timeout",
    "real/missing_tokenizer.log": "other_missing_files",
    "real/unknown_architecture.log": "other_unsupported_arch",
}


@pytest.mark.parametrize("rel", sorted(NEGATIVE))
def test_negative_logs_are_other(rel):
    an = analyze_path(str(LOGS / rel))
    assert an.findings
    assert an.findings[0].rule == NEGATIVE[rel]
    assert all(x.category == "other" for x in an.findings), [(x.category, x.rule) for x in an.findings]
    assert not MISMATCH & {x.category for x in an.findings}


def test_oom_numbers():
    an = analyze_path(str(LOGS / "negative" / "cuda_oom_at_load.log"))
    assert an.facts.root.exc_type == "torch.OutOfMemoryError" and an.facts.root.process == "Worker_TP1"
    assert an.findings[0].numbers == {"oom_tried_gib": 1.96, "gpu_total_gib": 79.19, "gpu_free_gib": 1.02,
                                      "gpu_memory_utilization": 0.95}


def test_nccl_numbers():
    an = analyze_path(str(LOGS / "negative" / "nccl_watchdog_timeout.log"))
    n = an.findings[0].numbers
    assert n["nccl_timeout_ms"] == 600000 and n["nccl_ran_ms"] == 600047 and n["tensor_parallel_size"] == 8


def test_preflight_fills_numbers_of_a_bare_assert():
    """Seed 000 has a bare AssertionError; the draft path (/draft) is private, but the text names the draft
    (LocoOperator/LocoOperator-4B) and the main model, so the pre-flight reconstructs both page sizes."""
    an = analyze_path(str(LOGS / "seeds" / "000_a62ee88866094543.log"))
    assert an.predicted is not None and "LocoOperator/LocoOperator-4B" in an.preflight_note
    top = an.findings[0]
    assert top.comparisons and not top.missing_evidence
    c = top.comparisons[0]
    assert c.expected != c.actual and c.unit == "B"


def test_preflight_off_leaves_missing_evidence():
    an = analyze_path(str(LOGS / "seeds" / "000_a62ee88866094543.log"), use_preflight=False)
    top = an.findings[0]
    assert top.category == "kv_page_size" and top.missing_evidence
    assert "VLLM_DIAG_DB=" in top.missing_evidence[0]


def test_failure_without_traceback_from_startup_and_metrics_lines():
    """No exception at all: the real Qwen3-Next engine start (align mode, attention block raised to 640)
    followed by metrics lines whose prefix-cache hit rate stays at 0 %."""
    real = (LOGS / "real" / "qwen3next_ngram_prefix_caching.log").read_text().split("\n")
    startup = real[: next(i for i, ln in enumerate(real) if "ENGINE_READY" in ln)]
    metrics = [f"(APIServer pid=1) INFO 11-26 02:{10 + i // 6:02d}:{i % 6}0 [loggers.py:257] Engine 000: Avg prompt "
               f"throughput: 812.4 tokens/s, Avg generation throughput: 95.1 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
               f"GPU KV cache usage: 4.1%, Prefix cache hit rate: 0.0%" for i in range(30)]
    from vllm_diag.postmortem.analyze import analyze_text

    an = analyze_text("\n".join(startup + metrics) + "\n")
    f = an.facts
    assert f.root is None
    assert f.startup["attention_block_size"] == 640 and f.startup["mamba_cache_mode"] == "align"
    assert f.startup["prefix_cache_hit_rate"] == 0.0 and f.startup["prefix_cache_hit_rate_max"] == 0.0
    assert f.startup["prefix_cache_hit_rate_samples"] == 30
    degraded = [x for x in an.findings if x.category == "prefix_cache_degraded"]
    assert degraded, [(x.category, x.rule) for x in an.findings]
    # the evidence points at the metrics lines of this log
    assert any(e.line and e.line > len(startup) for x in degraded for e in x.evidence)


def test_an_lfm2_fault_under_drafts_is_a_spec_decode_batch_on_a_layer_without_the_path():
    """LFM2 + ngram on vLLM 0.26.0: an illegal memory access in the decode graph's replay, and vLLM's crash dump shows
    eight spec decodes with three drafts each (not a mixed batch; the capture progress bar's "mixed prefill-decode" is
    no prose about one). LFM2's short convolution has no spec-decode path before 0.29: the builder's spec-decode rows
    reach a layer that never reads them -- the builder-vs-batch class, inferred from the model and the release."""
    an = analyze_path(str(LOGS / "gpu" / "gpu_lfm2_ngram_async_fault.log"))
    top = an.findings[0]
    assert "mixed_prose" not in an.facts.startup
    assert top.category == "mixed_batch" and top.confidence == "low"
    assert "short-convolution layers have no speculative-decoding path before vLLM 0.29.0" in top.basis


def test_a_separate_draft_model_in_mamba_cache_mode_all_that_served_is_no_warning():
    """A real vLLM 0.26.0 NemotronH engine in mode 'all' with a dense draft model (k = 2) served both rounds of
    mixed prompts: the mode-'all' prediction is stated as not modelled for a separate draft (info), not a risk."""
    an = analyze_path(str(LOGS / "gpu" / "gpu5_nemotronh_pc_draft_big_k2.log"))
    assert not [f for f in an.findings if f.severity == "error"]
    mode_all = [f for f in an.findings if f.rule == "mamba_state_indices"]
    assert mode_all and mode_all[0].severity == "info" and "Not modelled for a separate draft model" in mode_all[0].message
