"""Failure families decided from the configuration where the log gives no failing frame: what the evidence allows,
how sure the finding is, and which other family the same evidence leaves open.

Every log here is written by the tests in vLLM's format (process prefixes, the engine's traceback, the serve
command); models, numbers and paths are the tests' own.
"""

from __future__ import annotations

import pytest

from vllm_diag.catalog import load
from vllm_diag.catalog.categorize import categorize
from vllm_diag.postmortem.analyze import analyze_text

W = "(Worker_TP0 pid=5120) ERROR 11-26 10:02:11 [multiproc_executor.py:873] "


def _first(log: str):
    res = analyze_text(log, "t.log")
    fs = [f for f in res.findings if f.severity == "error"]
    assert fs, "no finding"
    assert fs[0].confidence in ("high", "medium", "low") and fs[0].basis
    return fs[0]


def _ima(cmd: str) -> str:
    return "\n".join([
        cmd,
        f"{W}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"{W}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        f"{W}For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    ])


def test_async_fault_of_a_hybrid_with_drafts_names_the_class_it_cannot_rule_out():
    f = _first(_ima("vllm serve Qwen/Qwen3.5-9B --speculative-config '{\"method\": \"mtp\", "
                    "\"num_speculative_tokens\": 2}' --enable-prefix-caching"))
    assert f.category == "state_index" and f.confidence == "low"
    assert "mixed-batch class" in f.basis and "num_accepted - 1 = -1" in f.basis


def test_async_fault_of_a_hybrid_with_drafts_without_prefix_caching_also_names_it():
    f = _first(_ima("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", "
                    "\"num_speculative_tokens\": 3}'"))
    assert f.category == "state_index" and f.confidence == "low"
    assert "mixed-batch class" in f.basis


def test_async_fault_of_a_dense_model_with_drafts_stays_other():
    f = _first(_ima("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\": \"eagle3\", "
                    "\"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'"))
    assert f.category == "other"


# ------------------------------------------------------------------------------------------------
# a platform or backend that is not there is a near miss, whatever hybrid/spec words the check carries
# ------------------------------------------------------------------------------------------------

P = "/usr/local/lib/python3.12/dist-packages/vllm/"
E = "(EngineCore_DP0 pid=2210) ERROR 11-26 10:40:03 [core.py:1021] "


@pytest.mark.parametrize("site", [
    # vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend
    {"file": "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", "function": "_resolve_gdn_prefill_backend",
     "condition": "backend == 'sycl' and not current_platform.is_xpu()", "exc": "ValueError",
     "message": "GDN prefill backend 'sycl' is only supported on XPU."},
    {"file": "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", "function": "_resolve_gdn_prefill_backend",
     "condition": "", "exc": "RuntimeError",
     "message": "GDN prefill backend 'tilelang' was requested but its kernels are not importable."},
    # vllm/v1/attention/ops/merge_attn_states.py: a CPU fallback kernel
    {"file": "vllm/v1/attention/ops/merge_attn_states.py", "function": "_merge_attn_states_torch",
     "condition": "output_scale is None", "exc": "AssertionError", "message": "CPU fallback does not support FP8 output"},
    # the sparse indexer's XPU path
    {"file": "vllm/model_executor/layers/sparse_attn_indexer.py", "function": "sparse_attn_indexer",
     "condition": "q_slice.shape[0] == 0", "exc": "RuntimeError",
     "message": "XPU fp8_mqa_logits does not support FP4 Q"},
    # a CPU kernel file refusing the spec-decode path
    {"file": "vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py", "function": "cpu_gdn_attention_core",
     "condition": "attn_metadata.spec_sequence_masks is None", "exc": "AssertionError",
     "message": "speculative decode not supported in CPU GDN attention."},
    {"file": "vllm/platforms/xpu.py", "function": "XPUPlatform.check_and_update_config",
     "condition": "compilation_config.cudagraph_mode == CUDAGraphMode.NONE", "exc": "AssertionError",
     "message": "CUDA graph mode should be NONE on XPU"},
])
def test_platform_or_missing_backend_checks_are_other(site):
    assert categorize(site) == ("other", "other_platform_backend")


@pytest.mark.parametrize("site, expected", [
    # the same vocabulary without a platform: the families keep them
    ({"file": "vllm/v1/attention/backends/gdn_attn.py", "function": "GDNAttentionMetadataBuilder.build",
      "condition": "num_decodes == 0 or num_spec_decodes == 0", "exc": "AssertionError",
      "message": "num_decodes: {num_decodes}, num_spec_decodes: {num_spec_decodes}"}, "mixed_batch"),
    ({"file": "vllm/v1/core/kv_cache_utils.py", "function": "unify_kv_cache_spec_page_size",
      "condition": "", "exc": "NotImplementedError",
      "message": "The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting "
                 "block_size."}, "kv_page_size"),
])
def test_family_checks_without_a_platform_keep_their_family(site, expected):
    assert categorize(site)[0] == expected


def test_catalog_carries_the_platform_decision():
    got = [s for s in load().sites if s.function == "_resolve_gdn_prefill_backend"]
    assert got and all(s.category == "other" for s in got)


def test_xpu_indexer_refusal_of_an_mla_model_with_drafts_is_a_near_miss():
    log = "\n".join([
        "vllm serve deepseek-ai/DeepSeek-V3.2-Exp --speculative-config '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 1}' -tp 4",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "{P}model_executor/layers/sparse_attn_indexer.py", line 318, in sparse_attn_indexer',
        f"{E}    raise RuntimeError(\"XPU fp8_mqa_logits does not support FP4 Q\")",
        f"{E}RuntimeError: XPU fp8_mqa_logits does not support FP4 Q",
    ])
    f = _first(log)
    assert f.category == "other", (f.category, f.basis)


@pytest.mark.parametrize("site", [
    # vllm/v1/attention/ops/merge_attn_states.py: merging attention outputs is not a KV-cache spec merge
    {"file": "vllm/v1/attention/ops/merge_attn_states.py", "function": "merge_attn_states",
     "condition": "prefix_output.stride(1) == suffix_output.stride(1)", "exc": "AssertionError",
     "message": "merge_attn_states requires prefix_output and suffix_output to have matching head strides, got "
                "{prefix_output.stride(1)} and {suffix_output.stride(1)}"},
    {"file": "vllm/model_executor/layers/sparse_attn_indexer.py", "function": "_assert_cutedsl_dcp_merge_supported",
     "condition": "not has_cutedsl()", "exc": "RuntimeError",
     "message": "DCP sparse-indexer merge requires CuteDSL; install it or disable DCP."},
    # two flags that exclude each other (vllm/engine/arg_utils.py create_engine_config)
    {"file": "vllm/engine/arg_utils.py", "function": "EngineArgs.create_engine_config",
     "condition": "self.cudagraph_capture_sizes is not None and compilation_config.cudagraph_capture_sizes",
     "exc": "ValueError",
     "message": "cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive"},
    # the multimodal encoder's graphs and a profiler (vllm/config/compilation.py, vllm/config/vllm.py)
    {"file": "vllm/config/compilation.py", "function": "CompilationConfig.__post_init__",
     "condition": "self.cudagraph_mm_encoder and self.encoder_cudagraph_max_images_per_batch < 0", "exc": "ValueError",
     "message": "encoder_cudagraph_max_images_per_batch must be non-negative (0 = auto-infer)"},
    {"file": "vllm/config/vllm.py", "function": "VllmConfig.__post_init__",
     "condition": "self.profiler_config.profiler == 'proton'", "exc": "ValueError",
     "message": "The Proton profiler requires CUDA graphs to be disabled. Use --enforce-eager."},
])
def test_output_merges_flag_usage_and_unrelated_features_are_other(site):
    assert categorize(site)[0] == "other"


@pytest.mark.parametrize("site, expected", [
    # a KV-cache spec's merge stays the page-size / layout class
    ({"file": "vllm/v1/kv_cache_interface.py", "function": "FullAttentionSpec.merge", "condition": "",
      "exc": "AssertionError", "message": "All attention layers in the same KV cache group must be FullAttentionSpec."},
     "kv_page_size"),
    # capture sizes rounded for the drafts stay the CUDA-graph class
    ({"file": "vllm/config/compilation.py", "function": "CompilationConfig.adjust_cudagraph_sizes_for_spec_decode",
      "condition": "len(rounded_sizes) == 0", "exc": "ValueError",
      "message": "No valid cudagraph sizes after rounding to multiple of {multiple_of} (num_speculative_tokens + 1)"},
     "cudagraph_shape"),
])
def test_spec_merges_and_capture_sizes_keep_their_family(site, expected):
    assert categorize(site)[0] == expected


def test_mutually_exclusive_capture_flags_with_a_hybrid_and_drafts_are_a_near_miss():
    log = "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --cudagraph-capture-sizes 1 2 4 8 "
        "-O '{\"cudagraph_capture_sizes\": [1, 2, 4]}' --speculative-config '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 2}'",
        "Traceback (most recent call last):",
        f'  File "{P}engine/arg_utils.py", line 1712, in create_engine_config',
        "    raise ValueError(",
        "ValueError: cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
    ])
    f = _first(log)
    assert f.category == "other", (f.category, f.basis)


# ------------------------------------------------------------------------------------------------
# a GEMM of an MLA model's libraries (DeepGEMM's MoE / linear GEMMs) is not an attention kernel limit
# ------------------------------------------------------------------------------------------------

_MLA_CMD = ("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\": \"mtp\", "
            "\"num_speculative_tokens\": 2}'")


def _gemm_log(frames: list[tuple[str, int, str, str]], exc: str) -> str:
    out = [_MLA_CMD, f"{E}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{E}  File "{P}{path}", line {line}, in {fn}', f"{E}    {code}"]
    return "\n".join(out + [f"{E}{exc}"])


def test_deepgemm_moe_gemm_check_of_an_mla_model_with_drafts_is_not_a_kernel_limit():
    log = _gemm_log([("model_executor/layers/fused_moe/deep_gemm_moe.py", 288, "apply",
                      "m_grouped_fp8_gemm_nt_contiguous("),
                     ("utils/deep_gemm.py", 141, "m_grouped_fp8_gemm_nt_contiguous", "return _grouped_impl(*args)")],
                    "RuntimeError: Assertion error (csrc/apis/gemm.hpp:97): n % 64 == 0 and k % 128 == 0")
    f = _first(log)
    assert f.category == "other", (f.category, f.basis)


def test_deepgemm_linear_gemm_check_without_moe_frames_is_not_a_kernel_limit():
    log = _gemm_log([("model_executor/layers/linear.py", 560, "forward", "output = self.quant_method.apply(self, x)"),
                     ("utils/deep_gemm.py", 120, "fp8_gemm_nt", "return _fp8_gemm_nt_impl(*args)")],
                    "RuntimeError: Assertion error (csrc/apis/gemm.hpp:60): k % 128 == 0")
    assert _first(log).category == "other"


def test_deepgemm_indexer_logits_check_of_an_mla_model_with_drafts_stays_a_kernel_limit():
    log = _gemm_log([("model_executor/layers/sparse_attn_indexer.py", 240, "sparse_attn_indexer",
                      "logits = fp8_paged_mqa_logits("),
                     ("utils/deep_gemm.py", 330, "fp8_paged_mqa_logits", "return _fp8_paged_mqa_logits_impl(")],
                    "RuntimeError: Assertion error (csrc/jit_kernels/impls/smxx_fp8_paged_mqa_logits.hpp:233): "
                    "next_n == 1 or next_n == 2")
    assert _first(log).category == "spec_kernel_limit"


def test_a_gemm_kernel_is_placed_as_a_gemm_not_as_mla():
    from vllm_diag.postmortem.placement import kernel_place

    assert kernel_place("void deep_gemm::sm90_m_grouped_fp8_gemm_contiguous_kernel", None)[0] == "gemm"
    assert kernel_place("deep_gemm::sm90_fp8_paged_mqa_logits", None)[0] == "mla"


@pytest.mark.parametrize("site, expected", [
    # the GDN projection's name (mixed_qkv: q, k and v projected together) is not a mixed batch: its rank, layout
    # and head split are the model's (vllm/model_executor/layers/fla/ops/fused_recurrent.py packed decode)
    ({"file": "vllm/model_executor/layers/fla/ops/fused_recurrent.py",
      "function": "fused_recurrent_gated_delta_rule_packed_decode", "condition": "mixed_qkv.ndim != 2",
      "exc": "ValueError", "message": "`mixed_qkv` must be a 2D tensor (got ndim={mixed_qkv.ndim})."}, "other"),
    ({"file": "vllm/model_executor/layers/fla/ops/fused_recurrent.py",
      "function": "fused_recurrent_gated_delta_rule_packed_decode", "condition": "H <= 0 or HV % H != 0",
      "exc": "ValueError", "message": "Invalid head config inferred from mixed_qkv: H={H}, HV={HV}."}, "other"),
    # its rows against the step's token count are the batch's
    ({"file": "vllm/model_executor/layers/fla/ops/fused_recurrent.py",
      "function": "fused_recurrent_gated_delta_rule_packed_decode", "condition": "a.shape[0] != B or b.shape[0] != B",
      "exc": "ValueError",
      "message": "Mismatched batch sizes: mixed_qkv.shape[0]={B}, a.shape[0]={a.shape[0]}, b.shape[0]={b.shape[0]}."},
     "mixed_batch"),
    ({"file": "vllm/model_executor/layers/mamba/gdn_linear_attn.py",
      "function": "GatedDeltaNetAttention.prepare_gdn_attention_core_inputs",
      "condition": "num_tokens == mixed_qkvz.shape[0]", "exc": "AssertionError", "message": None}, "mixed_batch"),
])
def test_the_gdn_projection_name_is_not_a_mixed_batch(site, expected):
    assert categorize(site)[0] == expected


# ------------------------------------------------------------------------------------------------
# a shape error without frames: the configuration places it, the sizes can confirm the mechanism
# ------------------------------------------------------------------------------------------------


def _bare(cmd: str, err: str) -> str:
    return "\n".join([cmd, f"{W}Traceback (most recent call last):", f"{W}{err}"])


def test_bare_shape_error_whose_sizes_differ_by_the_draft_factor_is_confirmed_by_them():
    f = _first(_bare("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
                     "RuntimeError: The size of tensor a (24) must match the size of tensor b (8) at non-singleton "
                     "dimension 0"))
    assert f.category == "spec_kernel_limit" and f.confidence == "low"  # no frame places it
    assert "draft factor" in f.basis and "24 = 8 x (1 + k)" in f.basis


def test_a_factor_that_is_also_a_parallel_size_or_two_says_nothing():
    f = _first(_bare("vllm serve deepseek-ai/DeepSeek-V3.2 -dcp 3 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
                     "RuntimeError: The size of tensor a (24) must match the size of tensor b (8) at non-singleton "
                     "dimension 0"))
    assert "draft factor" not in f.basis
    f = _first(_bare("vllm serve deepseek-ai/DeepSeek-V3.2 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
                     "RuntimeError: The size of tensor a (16) must match the size of tensor b (8) at non-singleton "
                     "dimension 0"))
    assert "draft factor" not in f.basis


def test_bare_shape_error_with_other_sizes_stays_low():
    f = _first(_bare("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
                     "RuntimeError: The size of tensor a (20) must match the size of tensor b (8) at non-singleton "
                     "dimension 0"))
    assert f.category == "spec_kernel_limit" and f.confidence == "low" and "draft factor" not in f.basis


def test_bare_shape_error_without_drafts_is_not_a_family():
    f = _first(_bare("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 -dcp 4",
                     "RuntimeError: The size of tensor a (24) must match the size of tensor b (8) at non-singleton "
                     "dimension 0"))
    assert f.category == "other"


# ------------------------------------------------------------------------------------------------
# the spec-as-decode reshape of the MLA kernels: every decode must carry the same 1 + k query tokens
# ------------------------------------------------------------------------------------------------

_RESHAPE = [("v1/worker/gpu_model_runner.py", 3987, "execute_model", "model_output = self._model_forward("),
            ("model_executor/layers/attention/mla_attention.py", 790, "forward_impl",
             "attn_out, lse = self.impl.forward_mqa(mqa_q, kv_cache, attn_metadata, self)"),
            ("v1/attention/backends/mla/flashmla.py", 266, "forward_mqa",
             "q = reshape_query_for_spec_decode(q, num_decodes)"),
            ("v1/attention/backends/utils.py", 711, "reshape_query_for_spec_decode",
             "assert total_tokens % batch_size == 0, (")]


def test_spec_decode_query_reshape_of_an_mla_model_with_drafts_is_a_kernel_limit():
    log = _gemm_log(_RESHAPE, "AssertionError: total_tokens=33 is not divisible by batch_size=9")
    f = _first(log)
    assert f.category == "spec_kernel_limit", (f.category, f.basis)
    assert "reshape_query_for_spec_decode" in f.basis


def test_spec_decode_query_reshape_site_is_a_kernel_limit_in_the_catalog():
    got = [s for s in load().sites if s.function == "reshape_query_for_spec_decode" and "total_tokens" in (s.condition or "")]
    assert got and all(s.category == "spec_kernel_limit" for s in got)
    # its rank check is not: a 2-D query is a caller's bug, whatever the drafts
    rank = [s for s in load().sites if s.function == "reshape_query_for_spec_decode" and "dim()" in (s.condition or "")]
    assert rank and all(s.category == "other" for s in rank)


def test_spec_decode_query_reshape_without_drafts_in_the_configuration_is_other():
    log = "\n".join(["(APIServer pid=1) INFO 11-26 10:39:00 [utils.py:300] non-default args: {'model': "
                     "'deepseek-ai/DeepSeek-V3.2', 'tensor_parallel_size': 8}",
                     *_gemm_log(_RESHAPE, "AssertionError: total_tokens=33 is not divisible by batch_size=9")
                     .splitlines()[1:]])
    assert _first(log).category == "other"


# ------------------------------------------------------------------------------------------------
# ROCm: the HSA runtime reports a GPU page fault itself ("Memory access fault by GPU node-N"), no Python exception
# ------------------------------------------------------------------------------------------------

_HSA = ("Memory access fault by GPU node-4 (Agent handle: 0x5611aa0b3c40) on address 0x7f31d2a00000. "
        "Reason: Page not present or supervisor privilege.")
_DIED = ("(EngineCore_DP0 pid=3301) ERROR 11-26 12:00:07 [multiproc_executor.py:240] Worker proc VllmWorker-0 died "
         "unexpectedly, shutting down executor.")


def test_hsa_memory_fault_of_a_hybrid_with_drafts_is_an_async_fault_of_the_family():
    log = "\n".join(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
                     "'{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'", _HSA, _DIED,
                     "Aborted (core dumped)"])
    f = _first(log)
    assert f.category == "state_index" and f.confidence == "low" and f.rule == "async_fault"
    assert "Memory access fault by GPU node-4" in f.title and "Agent handle" not in f.title


def test_hsa_memory_fault_with_an_elided_crash_dump_of_a_mixed_batch_is_mixed_batch():
    dump = ("(EngineCore_DP0 pid=3301) ERROR 11-26 12:00:07 [dump_input.py:79] Dumping scheduler output for model "
            "execution: SchedulerOutput(..., num_scheduled_tokens={req-a: 3, req-b: 3, req-c: 1, req-d: 4000}, "
            "total_num_scheduled_tokens=4007, scheduled_spec_decode_tokens={req-a: [...], req-b: [...]}, ...)")
    log = "\n".join(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
                     "'{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'", _HSA, _DIED, dump])
    f = _first(log)
    assert f.category == "mixed_batch", (f.category, f.basis)
    assert "mixed batch" in f.basis


def test_hsa_memory_fault_of_a_dense_model_without_drafts_stays_other():
    log = "\n".join(["vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4", _HSA, _DIED])
    assert _first(log).category == "other"


# ------------------------------------------------------------------------------------------------
# what the report shows of the failing step's batch: the builder's counters, a prompt arriving mid-decode
# ------------------------------------------------------------------------------------------------

_HYB_CMD = ("vllm serve Qwen/Qwen3.5-35B-A3B --no-enable-prefix-caching --speculative-config "
            "'{\"method\": \"qwen3_5_mtp\", \"num_speculative_tokens\": 2}'")


def test_builder_counters_with_spec_decodes_and_a_prefill_make_an_async_fault_a_mixed_batch():
    log = "\n".join([_HYB_CMD, "printed in the GDN builder for the failing step:",
                     "num_prefills=1 num_decodes=0 num_spec_decodes=5 num_actual_tokens=913", *_ima("").splitlines()[1:]])
    f = _first(log)
    assert f.category == "mixed_batch", (f.category, f.basis)
    assert "num_spec_decodes=5" in f.basis


def test_builder_counters_with_spec_decodes_only_do_not():
    log = "\n".join([_HYB_CMD, "printed in the GDN builder for the failing step:",
                     "num_prefills=0 num_decodes=0 num_spec_decodes=5 num_actual_tokens=15", *_ima("").splitlines()[1:]])
    f = _first(log)
    assert f.category == "state_index" and "mixed-batch class" in f.basis


def test_a_prompt_arriving_while_other_requests_decode_with_drafts_is_a_mixed_batch():
    log = "\n".join([_HYB_CMD, "It crashes only when a long prompt comes in while the other streams are still "
                     "generating; a pure decode benchmark passes.", *_ima("").splitlines()[1:]])
    f = _first(log)
    assert f.category == "mixed_batch", (f.category, f.basis)


# ------------------------------------------------------------------------------------------------
# a hole in the Mamba state-index table (a request without its state index) is a state-index failure
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("site, expected", [
    # vllm/v1/worker/mamba_utils.py stage_mamba_state_idx_to_gpu: the state index of a scheduled request is missing
    ({"file": "vllm/v1/worker/mamba_utils.py", "function": "stage_mamba_state_idx_to_gpu",
      "condition": "state_idx is not None", "exc": "AssertionError",
      "message": "mamba_state_idx missing entry for {req_id}; preprocess_mamba must run before "
                 "stage_mamba_state_idx_to_gpu"}, "state_index"),
    # a None check of another kind in the same module stays a type narrowing
    ({"file": "vllm/v1/worker/mamba_utils.py", "function": "get_mamba_groups",
      "condition": "kv_cache_config is not None", "exc": "AssertionError", "message": None}, "other"),
])
def test_a_missing_mamba_state_index_is_state_index(site, expected):
    assert categorize(site)[0] == expected


def test_missing_state_index_of_a_hybrid_with_drafts_and_prefix_caching_is_state_index():
    frames = [("v1/worker/gpu_model_runner.py", 4188, "execute_model", "mamba_utils.stage_postprocess_inputs_to_gpu("),
              ("v1/worker/mamba_utils.py", 1190, "stage_mamba_state_idx_to_gpu", "assert state_idx is not None, (")]
    out = ["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching --mamba-cache-mode align "
           "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
           f"{W}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{W}  File "{P}{path}", line {line}, in {fn}', f"{W}    {code}"]
    out.append(f"{W}AssertionError: mamba_state_idx missing entry for 'req-77'; preprocess_mamba must run before "
               "stage_mamba_state_idx_to_gpu")
    f = _first("\n".join(out))
    assert f.category == "state_index", (f.category, f.basis)


# ------------------------------------------------------------------------------------------------
# a quantized KV cache that cannot be laid out for a hybrid model is the hybrid KV layout class (A)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("site, expected", [
    ({"file": "vllm/model_executor/layers/quantization/turboquant/config.py",
      "function": "TurboQuantConfig.get_boundary_skip_layers", "condition": "", "exc": "NotImplementedError",
      "message": "TurboQuant KV cache requires identifiable full-attention layers, but none were found in the hybrid "
                 "model config."}, "kv_page_size"),
    ({"file": "vllm/engine/arg_utils.py", "function": "EngineArgs.create_engine_config",
      "condition": "resolved_cache_dtype.startswith('turboquant_') and model_config.is_hybrid", "exc": "ValueError",
      "message": "TurboQuant KV cache is not supported for hybrid (attention + Mamba) models."}, "kv_page_size"),
    # a quantization check without the hybrid layout is not
    ({"file": "vllm/model_executor/layers/quantization/fp8.py", "function": "Fp8KVCacheMethod.process_weights",
      "condition": "", "exc": "ValueError", "message": "Only support per-tensor scaling factor for fp8 KV cache"},
     "other"),
])
def test_quantized_kv_on_a_hybrid(site, expected):
    assert categorize(site)[0] == expected


def test_quantized_kv_refusing_a_hybrid_model_at_startup_is_the_page_layout_family():
    out = ["vllm serve ibm-granite/granite-4.0-h-small --kv-cache-dtype turboquant_k4v4",
           "(APIServer pid=812) INFO 11-26 10:11:02 [model.py:617] Resolved architecture: GraniteMoeHybridForCausalLM",
           "(APIServer pid=812) Traceback (most recent call last):"]
    for path, line, fn, code in [("engine/arg_utils.py", 1702, "create_engine_config",
                                  "boundary = TurboQuantConfig.get_boundary_skip_layers(model_config)"),
                                 ("model_executor/layers/quantization/turboquant/config.py", 188,
                                  "get_boundary_skip_layers", "raise NotImplementedError(")]:
        out += [f'(APIServer pid=812)   File "{P}{path}", line {line}, in {fn}', f"(APIServer pid=812)     {code}"]
    out.append("(APIServer pid=812) NotImplementedError: TurboQuant KV cache requires identifiable full-attention "
               "layers, but none were found in the hybrid model config.")
    f = _first("\n".join(out))
    assert f.category == "kv_page_size", (f.category, f.basis)


# ------------------------------------------------------------------------------------------------
# vLLM's warning that it capped the CUDA-graph capture sizes to the Mamba cache blocks (a throughput cliff)
# ------------------------------------------------------------------------------------------------


def _rule_findings(startup: dict, args: dict) -> list:
    from vllm_diag.model import LogFacts
    from vllm_diag.rules.base import RuleContext
    from vllm_diag.rules import run_rules

    log = LogFacts(vllm_version="0.19.1", root=None, exceptions=[], numbers={}, args=args, startup=startup)
    return [f for f in run_rules(RuleContext(log=log, version=(0, 19, 1)), strict=True) if f.rule == "mamba_block_budget"]


def test_capture_sizes_capped_to_the_mamba_blocks_is_the_mamba_block_budget():
    fs = _rule_findings({"max_cudagraph_capture_size_requested": 256, "max_cudagraph_capture_size_capped": 24,
                         "mamba_cache_blocks_available": 30}, {"max_num_seqs": 256})
    assert len(fs) == 1 and fs[0].category == "mamba_block_budget" and fs[0].severity == "warning"
    assert fs[0].numbers["max_cudagraph_capture_size_capped"] == 24 and fs[0].numbers["mamba_cache_blocks"] == 30
    assert "max_num_seqs=256" in fs[0].message


def test_no_cap_in_the_log_no_capture_finding():
    assert not _rule_findings({"max_cudagraph_capture_size_requested": 256, "max_cudagraph_capture_size_capped": 256},
                              {"max_num_seqs": 256})
    assert not _rule_findings({}, {"max_num_seqs": 256})


# ------------------------------------------------------------------------------------------------
# no error, wrong output: a hybrid under speculative decoding whose report shows batches mixing draft lengths
# ------------------------------------------------------------------------------------------------

_METRICS = ("(APIServer pid=901) INFO 11-26 11:02:10 [loggers.py:248] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: 611.0 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.0%, "
            "Prefix cache hit rate: 0.0%")


def _silent(cmd: str, *prose: str):
    res = analyze_text("\n".join([cmd, *prose, _METRICS]), "t.log")
    return [f for f in res.findings if f.severity == "error"]


_SILENT_HYB = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
               "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'")


def test_wrong_output_with_ragged_drafts_on_a_hybrid_is_a_silent_mixed_batch():
    fs = _silent(_SILENT_HYB, "Some answers come back as gibberish after a while, no error in the server log.",
                 "Logging the drafts per step: the bad steps have some requests with 3 drafts and some with 0.")
    assert fs and fs[0].category == "mixed_batch" and fs[0].confidence == "low"
    assert "no error" in fs[0].basis


def test_wrong_output_without_batch_evidence_is_a_low_prior_and_on_a_dense_model_not_a_family():
    # a hybrid with drafts and no prefix caching: one state slot a request, so a quiet corruption is the path its rows
    # take -- the builders' split -- said as the low-confidence prior it is
    fs = _silent(_SILENT_HYB, "Some answers come back as gibberish, no error in the log.")
    assert fs and fs[0].category == "mixed_batch" and fs[0].confidence == "low" and "one slot" in fs[0].basis
    dense = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
             "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'")
    assert not [f for f in _silent(dense, "Some answers come back as gibberish.",
                                   "The bad steps have some requests with 3 drafts and some with 0.")
                if f.category != "other"]
    nospec = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert not [f for f in _silent(nospec, "Some answers come back as gibberish under mixed traffic.")
                if f.category != "other"]


def test_hsa_queue_abort_on_a_memory_violation_is_an_async_fault():
    log = "\n".join(["vllm serve Qwen/Qwen3.5-122B-A10B -tp 4 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
                     ":0:rocdevice.cpp            :2988: 1043877112 us:  Callback: Queue 0x7fa3b0000000 aborting with "
                     "error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond "
                     "the largest legal address. code: 0x29", _DIED])
    f = _first(log)
    assert f.category == "state_index" and f.rule == "async_fault"
    assert "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION" in f.title and "rocdevice" not in f.title


@pytest.mark.parametrize("site, expected", [
    # MXFP4's scale block is a weight-quantization block, not the KV block (models/deepseek_v4 fused_indexer_q)
    ({"file": "vllm/v1/attention/ops/deepseek_v4_ops/fused_indexer_q.py", "function": "fused_indexer_q_rope_quant",
      "condition": "index_q_head_dim % MXFP4_BLOCK_SIZE == 0", "exc": "AssertionError",
      "message": "head_dim={index_q_head_dim} must be a multiple of MXFP4 block size {MXFP4_BLOCK_SIZE}"}, "other"),
    # a KV block size that a kernel's tile must divide stays the block-size class, head_dim or not
    ({"file": "vllm/models/deepseek_v41/common/ops/indexer_k_store.py", "function": "indexer_k_norm_rope_store",
      "condition": "block_size % _BLOCK_TILE_SIZE != 0 or head_dim % _HEAD_TILE_SIZE != 0", "exc": "ValueError",
      "message": "tiled indexer K cache needs block_size ({block_size}) % {_BLOCK_TILE_SIZE} == 0 and head_dim "
                 "({head_dim}) % {_HEAD_TILE_SIZE} == 0"}, "block_size_alignment"),
    ({"file": "vllm/v1/attention/backends/triton_attn.py", "function": "TritonAttentionBackend.get_kv_cache_shape",
      "condition": "block_size % 16 != 0", "exc": "ValueError", "message": "Block size must be a multiple of 16."},
     "block_size_alignment"),
])
def test_quantization_blocks_are_not_kv_blocks(site, expected):
    assert categorize(site)[0] == expected


def test_a_printed_state_index_tensor_with_a_negative_slot_makes_an_async_fault_a_mixed_batch():
    log = "\n".join([_HYB_CMD, "debug print from the builder of the failing step:",
                     "spec_state_indices_tensor[:, 0] = tensor([ 12,  40,   7,  -1], device='cuda:0', dtype=torch.int32)",
                     *_ima("").splitlines()[1:]])
    f = _first(log)
    assert f.category == "mixed_batch", (f.category, f.basis)
    assert "-1" in f.basis


def test_printed_state_indices_without_a_negative_slot_do_not():
    log = "\n".join([_HYB_CMD, "debug print from the builder of the failing step:",
                     "spec_state_indices_tensor[:, 0] = tensor([ 12,  40,   7,  3], device='cuda:0', dtype=torch.int32)",
                     *_ima("").splitlines()[1:]])
    assert _first(log).category == "state_index"


@pytest.mark.parametrize("words", [
    "the bad steps contain requests with 3 draft tokens and requests with none in the same batch.",
    "in the bad steps the draft lengths differ from request to request.",
])
def test_other_wordings_of_ragged_drafts_with_wrong_output(words):
    fs = _silent(_SILENT_HYB, "Outputs for some requests become gibberish under concurrency; no errors.", words)
    assert fs and fs[0].category == "mixed_batch"


def test_a_worker_that_died_without_an_error_is_other_and_says_not_modelled():
    log = "\n".join(["vllm serve Qwen/Qwen3.5-27B -tp 2 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'", _DIED])
    f = _first(log)
    assert f.category == "other" and f.confidence == "low" and "not modelled" in f.basis


def test_findings_of_a_narrower_rule_are_titled_by_it():
    f = _first(_gemm_log(_RESHAPE, "AssertionError: total_tokens=33 is not divisible by batch_size=9"))
    assert f.title.startswith("Spec-as-decode kernel needs the same 1 + k query tokens in every decode")
    from vllm_diag.postmortem.diagnosis import title_of

    assert title_of("kv_page_size", "quantized_kv_on_hybrid").startswith("Quantized KV cache")
    assert title_of("kv_page_size", "kv_page_unification") == title_of("kv_page_size")


@pytest.mark.parametrize("site, expected", [
    ({"file": "vllm/config/cache.py", "function": "CacheConfig._verify_prefix_caching",
      "condition": "self.prefix_caching_hash_algo not in get_args(PrefixCachingHashAlgo)", "exc": "ValueError",
      "message": "Unknown prefix caching hash algorithm: {self.prefix_caching_hash_algo}. Must be one of "
                 "{get_args(PrefixCachingHashAlgo)}"}, "other"),
    ({"file": "vllm/config/cache.py", "function": "_layout_from_name", "condition": "", "exc": "ValueError",
      "message": "Unknown KV cache layout {layout_name}. Valid layouts: {[m.name for m in KVCacheLayout]}"}, "other"),
    # a value outside a limit is not an unknown name
    ({"file": "vllm/config/vllm.py", "function": "VllmConfig._set_max_num_scheduled_tokens", "condition": "",
      "exc": "ValueError", "message": "VllmConfig does not have enough slots to schedule a token and support the "
                                      "speculative decoding settings. Got max_num_batched_tokens={x}"}, "token_budget"),
])
def test_an_unknown_setting_name_is_a_near_miss(site, expected):
    assert categorize(site)[0] == expected


def test_a_capture_check_that_speaks_of_the_profiling_run_keeps_its_family():
    site = {"file": "vllm/v1/worker/gpu_model_runner.py", "function": "GPUModelRunner._dummy_run",
            "condition": "num_tokens <= self.max_num_tokens", "exc": "AssertionError",
            "message": "the capture size exceeds the token budget during the profiling run"}
    assert categorize(site)[0] == "cudagraph_shape"


def test_a_hybrid_check_that_mentions_values_on_the_cpu_keeps_its_family():
    site = {"file": "vllm/v1/attention/backends/gdn_attn.py", "function": "GDNAttentionMetadataBuilder.build",
            "condition": "", "exc": "AssertionError",
            "message": "spec state indices computed on CPU do not match the block table"}
    assert categorize(site)[0] == "state_index"


def test_the_kv_cache_quantization_checks_are_in_the_catalog():
    sites = [s for s in load().sites if "quantization/turboquant/" in s.file or s.file.endswith("quantization/kv_cache.py")]
    assert sites, "KV-cache quantization modules not scanned"
    layout = [s for s in sites if s.function.endswith("get_boundary_skip_layers")]
    assert layout and all(s.category == "kv_page_size" for s in layout)
    assert any(s.version_text() for s in layout)
    # a scale check of the same modules is a weights matter, not a layout one
    assert all(s.category == "other" for s in sites if "scale" in (s.condition or "") + (s.message or ""))


_NO_CAP = ("No valid cudagraph capture sizes remain after capping to Mamba cache blocks (6). The smallest capture size "
           "was 8. Disabling cudagraph capture. Consider reducing max_num_seqs or increasing available GPU memory.")


@pytest.mark.parametrize("prefix", ["(EngineCore pid=77) WARNING 04-02 10:11:12 [compilation.py:1310] ", ""])
def test_cuda_graphs_disabled_because_no_capture_size_fits_the_mamba_blocks(prefix):
    res = analyze_text("\n".join(["vllm serve Qwen/Qwen3.5-27B-FP8 --max-num-seqs 256", prefix + _NO_CAP]), "t.log")
    fs = [f for f in res.findings if f.rule == "mamba_block_budget"]
    assert fs and fs[0].category == "mamba_block_budget" and fs[0].numbers["mamba_cache_blocks"] == 6
    assert "disabled" in fs[0].title
