"""Failure families of the hybrid / spec-decode classes, second part: the KV block against the step's token budget,
hybrid prefix caching that vLLM turned off, the Mamba kernels' row checks on a mixed batch, builders without a
speculative-decoding path.

Every log here is written by the tests in vLLM's format (process prefixes, the engine's traceback, the serve
command); models, numbers and paths are the tests' own.
"""

from __future__ import annotations

import pytest

from vllm_diag.catalog import load
from vllm_diag.catalog.categorize import categorize
from vllm_diag.postmortem.analyze import analyze_text

E = "(EngineCore_DP0 pid=412) ERROR 05-02 14:20:07 [core.py:1101] "
A = "(APIServer pid=77) "


def _findings(log: str):
    return analyze_text(log, "t.log").findings


def _first(log: str):
    fs = [f for f in _findings(log) if f.severity == "error"]
    assert fs, "no finding"
    assert fs[0].confidence in ("high", "medium", "low") and fs[0].basis
    return fs[0]


# ------------------------------------------------------------------------------------------------
# the KV block a hybrid raised for its Mamba state against max_num_batched_tokens (Mamba 'align' mode)
# ------------------------------------------------------------------------------------------------

def _align_budget_log(model: str, block: int, budget: int, startup: bool = True) -> str:
    return "\n".join([
        f"vllm serve {model} --enable-prefix-caching --max-num-batched-tokens {budget} --max-model-len 8192",
        *([f"{A}INFO 05-02 14:19:30 [config.py:212] Setting attention block size to {block} tokens to ensure that "
           "attention page size is >= mamba page size."] if startup else []),
        f"{E}EngineCore failed to start.",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "/opt/venv/lib/python3.11/site-packages/vllm/v1/engine/core.py", line 281, in _initialize_kv_caches',
        f"{E}    vllm_config.validate_block_size()",
        f'{E}  File "/opt/venv/lib/python3.11/site-packages/vllm/config/vllm.py", line 1738, in validate_block_size',
        f"{E}    assert block_size <= self.scheduler_config.max_num_batched_tokens, (",
        f"{E}AssertionError: In Mamba cache align mode, block_size ({block}) must be <= max_num_batched_tokens "
        f"({budget}).",
    ])


def test_the_align_mode_block_vs_token_budget_sites_are_token_budget():
    site = {"file": "vllm/config/vllm.py", "function": "VllmConfig.validate_block_size", "exc": "AssertionError",
            "condition": "block_size <= self.scheduler_config.max_num_batched_tokens",
            "message": "In Mamba cache align mode, block_size ({block_size}) must be <= max_num_batched_tokens "
                       "({self.scheduler_config.max_num_batched_tokens}).",
            "guards": ["self.cache_config.mamba_cache_mode == 'align'"]}
    assert categorize(site) == ("token_budget", "block_size_vs_token_budget")
    cats = {s.category for s in load().all_sites() if s.rule == "block_size_vs_token_budget"}
    assert cats == {"token_budget"}


def test_a_hybrid_block_larger_than_the_token_budget_is_a_sibling_without_drafts():
    f = _first(_align_budget_log("tiiuae/Falcon-H1-34B-Instruct", 2128, 1024))
    assert f.category == "token_budget" and f.confidence == "high"
    assert "token budget" in f.title and "Speculative" not in f.title
    assert f.numbers.get("block_size") == 2128 and f.numbers.get("max_num_batched_tokens") == 1024


def test_the_same_check_on_a_model_stated_dense_is_not_the_family():
    f = _first(_align_budget_log("meta-llama/Llama-3.1-8B-Instruct", 2128, 1024, startup=False))
    assert f.category == "other"


# ------------------------------------------------------------------------------------------------
# vLLM turned prefix caching off for a hybrid without support for it (0.11-0.17): a sibling, said by vLLM itself
# ------------------------------------------------------------------------------------------------

_PC_OFF = {
    "0.11": "Hybrid or mamba-based model detected: disabling prefix caching since it is not yet supported.",
    "0.15": "Hybrid or mamba-based model detected without support for prefix caching: disabling.",
}


def _pc_off_log(version: str, tail: list[str]) -> str:
    return "\n".join([
        f"vllm serve Zyphra/Zamba2-7B-instruct --enable-prefix-caching --max-model-len 16384  # vLLM {version}.0",
        f"{A}INFO 03-07 09:11:02 [config.py:301] {_PC_OFF[version]}",
        *tail,
    ])


_METRICS = [f"{A}INFO 03-07 09:2{i}:10 [loggers.py:248] Engine 000: Avg prompt throughput: 5120.0 tokens/s, Avg "
            f"generation throughput: 140.2 tokens/s, Running: {i + 3} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"1{i}.0%, Prefix cache hit rate: 0.0%" for i in range(2)]


@pytest.mark.parametrize("version", sorted(_PC_OFF))
def test_prefix_caching_turned_off_for_a_hybrid_is_the_degraded_prefix_cache(version):
    fs = [f for f in _findings(_pc_off_log(version, _METRICS)) if f.category != "other"]
    assert fs and fs[0].category == "prefix_cache_degraded" and fs[0].title == "Prefix caching is forced off"
    assert fs[0].confidence == "high" and "startup line" in fs[0].basis
    assert any("disabling" in e.text for e in fs[0].evidence)


def test_prefix_caching_turned_off_does_not_explain_a_crash():
    crash = [f"{E}Traceback (most recent call last):",
             f'{E}  File "/opt/venv/lib/python3.11/site-packages/vllm/v1/worker/gpu_worker.py", line 270, in '
             "determine_available_memory",
             f"{E}    self.model_runner.profile_run()",
             f"{E}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
             "of 23.64 GiB of which 1.12 GiB is free."]
    fs = _findings(_pc_off_log("0.15", crash))
    assert all(f.category == "other" for f in fs)


def test_a_hybrid_log_without_that_line_has_no_prefix_finding():
    log = "\n".join(["vllm serve Zyphra/Zamba2-7B-instruct --enable-prefix-caching --max-model-len 16384", *_METRICS])
    assert not [f for f in _findings(log) if f.category == "prefix_cache_degraded"]


# ------------------------------------------------------------------------------------------------
# a V0-era release (before 0.9) has none of the V1 machinery the families describe
# ------------------------------------------------------------------------------------------------

def _v0_log(version: str) -> str:
    p = "ERROR 08-14 16:40:02 engine.py:160] "
    return "\n".join([
        f"INFO 08-14 16:39:50 api_server.py:528] vLLM API server version {version}",
        f"INFO 08-14 16:39:51 llm_engine.py:237] Initializing an LLM engine (v{version}) with config: "
        "model='ai21labs/AI21-Jamba-1.5-Large', speculative_config=None, tensor_parallel_size=8, "
        "enable_prefix_caching=True",
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/usr/lib/python3.10/site-packages/vllm/model_executor/models/jamba.py", line 402, in __init__',
        f"{p}    assert not cache_config.enable_prefix_caching, \\",
        f"{p}AssertionError: Jamba currently does not support prefix caching",
    ])


def test_a_v0_era_release_is_outside_the_families():
    f = _first(_v0_log("0.7.2"))
    assert f.category == "other" and f.confidence == "low" and "not modelled" in f.basis


def test_the_same_check_on_a_v1_release_keeps_its_family():
    assert _first(_v0_log("0.11.0")).category != "other"


# ------------------------------------------------------------------------------------------------
# a kernel library without a kernel variant for the decode's query length (the parameters it prints)
# ------------------------------------------------------------------------------------------------

def _missing_kernel_log(spec: str, q: int) -> str:
    w = "(Worker_TP1 pid=9031) ERROR 04-11 21:03:17 [multiproc_executor.py:871] "
    return "\n".join([
        f"vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --kv-cache-dtype fp8 {spec}".rstrip(),
        f"{w}Traceback (most recent call last):",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/mla/flashinfer_mla.py", '
        "line 188, in forward_mqa",
        f"{w}    o = trtllm_batch_decode_with_kv_cache_mla(",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/flashinfer/mla.py", line 611, in '
        "trtllm_batch_decode_with_kv_cache_mla",
        f"{w}    run_func(",
        f"{w}RuntimeError: Check failed: (false) is false: Missing TRTLLM-GEN kernel (decode): qkvLayout=PagedKv, "
        "maskType=Causal, kernelType=Generation, tileScheduler=Static, multiCtasKvMode=0, headDimPerCtaV=512, "
        f"headDimQk=576, headDimV=512, tileSizeKv=64, numTokensPerPage=32, qSeqLen={q}, dtypeQ=e4m3, dtypeKv=e4m3",
    ])


def test_a_missing_kernel_variant_for_the_draft_query_length_is_a_spec_kernel_limit():
    f = _first(_missing_kernel_log("--speculative-config '{\"method\": \"eagle3\", \"model\": \"lmsys/k2-eagle3\", "
                                   "\"num_speculative_tokens\": 2}'", 3))
    assert f.category == "spec_kernel_limit" and "query length per request" in f.basis


def test_a_missing_kernel_variant_without_drafts_is_not_the_family():
    assert _first(_missing_kernel_log("", 1)).category == "other"


# ------------------------------------------------------------------------------------------------
# a worker ended by a C++ exception: the engine's "Executor failed." only wraps it; the what() line is the error
# ------------------------------------------------------------------------------------------------

def _cxx_abort_log(spec: str, what: str) -> str:
    e = "(EngineCore pid=233) ERROR 09-03 11:40:19 [core.py:1188] "
    return "\n".join([
        f"VLLM_ROCM_USE_AITER=1 vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --max-model-len 16384 {spec}".rstrip(),
        "(Worker_TP2 pid=601) terminate called after throwing an instance of 'std::runtime_error'",
        f"(Worker_TP2 pid=601)   what():  {what}",
        "(EngineCore pid=233) ERROR 09-03 11:40:19 [multiproc_executor.py:291] Worker proc VllmWorker-2 died "
        "unexpectedly, shutting down executor.",
        f"{e}EngineCore failed to start.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 361, in '
        "collective_rpc",
        f'{e}    raise RuntimeError("Executor failed.")',
        f"{e}RuntimeError: Executor failed.",
    ])


def test_a_cxx_kernel_lookup_abort_behind_executor_failed_is_read():
    f = _first(_cxx_abort_log("--speculative-config '{\"method\": \"eagle3\", \"model\": \"lmsys/k2-eagle3\", "
                              "\"num_speculative_tokens\": 2}'",
                              "[AITER] /opt/aiter/csrc/py_itfs_cu/asm_mla.cu:198 fail to get kernel for "
                              "mla_decode_stage1: q_type=bf16 kv_type=bf16 gqa_ratio=8 max_seqlen_q=3, supported "
                              "max_seqlen_q in {1}"))
    assert f.category == "spec_kernel_limit" and "C++ exception" in f.basis


def test_a_cxx_watchdog_abort_behind_executor_failed_stays_other():
    f = _first(_cxx_abort_log("--speculative-config '{\"method\": \"eagle3\", \"model\": \"lmsys/k2-eagle3\", "
                              "\"num_speculative_tokens\": 2}'",
                              "[PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with "
                              "exception: [Rank 2] Watchdog caught collective operation timeout: "
                              "WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=7168) ran for 600000 milliseconds"))
    assert f.category == "other"
    assert f.rule == "other_nccl_timeout" and "C++ exception" in f.basis


def test_a_cxx_out_of_memory_behind_executor_failed_is_named_with_its_numbers():
    f = _first(_cxx_abort_log("--speculative-config '{\"method\": \"eagle3\", \"model\": \"lmsys/k2-eagle3\", "
                              "\"num_speculative_tokens\": 2}'",
                              "CUDA out of memory. Tried to allocate 3.50 GiB. GPU 2 has a total capacity of 79.19 GiB "
                              "of which 1.25 GiB is free."))
    assert (f.category, f.rule) == ("other", "near_miss") and f.title.startswith("Out of memory")
    assert "an out of memory failure" in f.basis
    assert (f.numbers["oom_tried_gib"], f.numbers["gpu_free_gib"]) == (3.5, 1.25)


# ------------------------------------------------------------------------------------------------
# Ray: the executor's own note after a worker's exception, an actor that died of a CUDA fault
# ------------------------------------------------------------------------------------------------

_RAY_CMD = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 -pp 2 --distributed-executor-backend ray "
            "--enable-prefix-caching --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'")


def test_the_ray_executor_note_is_not_the_error():
    r = "(RayWorkerWrapper pid=7310, ip=10.1.0.8) ERROR 02-14 03:11:40 [ray_utils.py:91] "
    log = "\n".join([
        _RAY_CMD,
        f"{r}Error executing method 'sample_tokens'. This might cause deadlock in distributed execution.",
        f"{r}Traceback (most recent call last):",
        f'{r}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1502, in '
        "_update_states_after_model_execute",
        f"{r}    mamba_utils.postprocess_mamba(",
        f'{r}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/mamba_utils.py", line 121, in '
        "collect_mamba_copy_meta",
        f"{r}    dest_block_id = block_ids[dest_block_idx]",
        f"{r}IndexError: list index out of range",
        f"{r}Error executing method 'sample_tokens'. This might cause deadlock in distributed execution.",
    ])
    assert _first(log).category == "state_index"


def _actor_died_log(worker_lines: list[str]) -> str:
    e = "(EngineCore_DP0 pid=880) ERROR 02-14 03:11:41 [core.py:1102] "
    return "\n".join([
        _RAY_CMD,
        f"{e}EngineCore encountered a fatal error.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/ray_executor.py", line 128, in result',
        f"{e}    return super().result()",
        f"{e}ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        *[f"(RayWorkerWrapper pid=7311) {t}" for t in worker_lines],
    ])


def test_a_ray_actor_that_died_of_a_cuda_fault_is_reasoned_as_the_fault():
    f = _first(_actor_died_log([
        "[rank3]:[E214 03:11:40.120391 ProcessGroupNCCL.cpp:2057] [PG ID 2 PG GUID 3 Rank 3] Process group watchdog "
        "thread terminated with exception: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect."]))
    assert f.category == "state_index" and f.confidence == "low" and "worker's death" in f.basis


def test_a_ray_actor_that_died_without_a_fault_stays_other():
    f = _first(_actor_died_log(["[rank3]:[E214 03:11:40.120391 ProcessGroupNCCL.cpp:1805] [PG ID 2 PG GUID 3 Rank 3] "
                                "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=881, OpType=ALLREDUCE) "
                                "ran for 600046 milliseconds before timing out."]))
    assert f.category == "other"


# ------------------------------------------------------------------------------------------------
# synchronous launches: PyTorch's indexing kernel faults in the statement that launched it
# ------------------------------------------------------------------------------------------------

def _sync_gather_log(code: str) -> str:
    e = "(EngineCore_DP0 pid=5302) ERROR 08-21 10:02:44 [core.py:1190] "
    return "\n".join([
        "CUDA_LAUNCH_BLOCKING=1 vllm serve tiiuae/Falcon-H1-34B-Instruct --enable-prefix-caching "
        "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'",
        "Our traffic is mixed batches: spec decodes and plain decodes in the same step.",
        "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [0,0,0], thread: [3,0,0] "
        "Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/mamba/mamba_mixer2.py", '
        "line 961, in conv_ssm_forward",
        f"{e}    {code}",
        f"{e}torch.AcceleratorError: CUDA error: device-side assert triggered",
    ])


def test_a_synchronous_gather_of_the_state_indices_is_the_state_index_class():
    f = _first(_sync_gather_log("state_indices_d_in = state_indices_tensor_d.gather(1, offsets)"))
    assert f.category == "state_index" and "synchronous" in f.basis


def test_a_synchronous_gather_of_the_batch_rows_is_the_mixed_batch_class():
    f = _first(_sync_gather_log("last_tok = query_start_loc_d.gather(0, num_accepted_tokens - 1)"))
    assert f.category == "mixed_batch" and "synchronous" in f.basis


# ------------------------------------------------------------------------------------------------
# a Mamba kernel's row check on 2-D (spec-decode) state indices: the rows of a mixed batch, not the index width
# ------------------------------------------------------------------------------------------------

def _conv_rows_log(k: int, got: str) -> str:
    e = "(EngineCore_DP0 pid=2718) ERROR 01-30 18:22:05 [core.py:1077] "
    return "\n".join([
        "vllm serve ibm-granite/granite-4.0-h-tiny --max-num-seqs 48 "
        f"--speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": {k}, \"prompt_lookup_max\": 3}}'",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/mamba/ops/causal_conv1d.py", '
        "line 1131, in causal_conv1d_update",
        f"{e}    assert batch == conv_state_indices.shape[0], (",
        f"{e}AssertionError: ERROR: conv_state_indices should have shape (6,*) but got torch.Size({got})",
    ])


def test_spec_decode_state_index_rows_short_of_the_batch_are_a_mixed_batch():
    f = _first(_conv_rows_log(2, "[4, 3]"))
    assert f.category == "mixed_batch" and "rows differ" in f.basis
    assert f.numbers.get("spec_rows") == 4 and f.numbers.get("state_index_width") == 3


@pytest.mark.parametrize("got", ["[4]", "[4, 5]"])
def test_other_state_index_shapes_stay_state_index(got):
    assert _first(_conv_rows_log(2, got)).category == "state_index"


# ------------------------------------------------------------------------------------------------
# wrong output with no error under speculative decoding: the configuration and vLLM's own warnings decide
# ------------------------------------------------------------------------------------------------

_HIT = ("(APIServer pid=41) INFO 06-12 09:30:11 [loggers.py:259] Engine 000: Avg prompt throughput: 410.2 tokens/s, "
        "Avg generation throughput: 88.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, "
        "Prefix cache hit rate: {rate}%")


def _silent_log(model: str, spec: str, extra: list[str], symptom: str = "the answer turns into garbage after a "
                                                                           "few sentences; nothing in the log") -> str:
    return "\n".join([f"vllm serve {model} {spec}", symptom, *extra])


_MTP = "--enable-prefix-caching --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"
_NGRAM = "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'"


def test_silent_garbage_on_prefix_hits_of_a_hybrid_with_drafts_is_the_state_index():
    f = _first(_silent_log("Qwen/Qwen3-Next-80B-A3B-Instruct", _MTP, [_HIT.format(rate="0.0"), _HIT.format(rate="38.5")]))
    assert f.category == "state_index" and f.confidence == "low" and "38.5%" in f.basis


def test_silent_garbage_of_a_hybrid_whose_prefix_cache_never_hit_is_the_builders_split_not_the_state_index():
    # prefix caching on, but no state was ever restored from a cached block: the state index is out, the rows' paths stay
    f = _first(_silent_log("Qwen/Qwen3-Next-80B-A3B-Instruct", _MTP, [_HIT.format(rate="0.0")]))
    assert f.category == "mixed_batch" and f.confidence == "low"


def test_silent_garbage_with_prefix_caching_on_and_no_hit_rate_is_the_state_index():
    f = _first(_silent_log("Qwen/Qwen3-Next-80B-A3B-Instruct", _MTP + " --mamba-cache-mode align", []))
    assert f.category == "state_index" and f.confidence == "low" and "prefix caching is on" in f.basis


def test_silent_garbage_of_lightning_attention_with_drafts_is_the_builder_split():
    f = _first(_silent_log("MiniMaxAI/MiniMax-Text-01 -tp 8 --trust-remote-code", _NGRAM, []))
    assert f.category == "mixed_batch" and "LinearAttentionMetadataBuilder" in f.basis


def test_silent_garbage_of_lightning_attention_without_drafts_names_no_class():
    assert not [f for f in _findings(_silent_log("MiniMaxAI/MiniMax-Text-01 -tp 8", "", [])) if f.severity == "error"]


def test_the_mla_uneven_query_warning_under_drafts_is_the_kernel_limit():
    w = "(Worker_TP2 pid=7702) WARNING 06-12 09:31:40 [flashinfer_mla.py:201] "
    f = _first(_silent_log("deepseek-ai/DeepSeek-V3-0324 -tp 8", _NGRAM,
                           [f"{w}FlashInferMLAImpl got a query of uneven length.",
                            "(Worker_TP2 pid=7702)                 This usually indicates an issue in batch reordering"],
                           symptom="accuracy on our eval drops from 0.91 to 0.52, completions are word salad"))
    assert f.category == "spec_kernel_limit" and f.confidence == "medium" and "uneven length" in f.basis


# ------------------------------------------------------------------------------------------------
# FlashMLA's tile-scheduler metadata (rows follow max_query_len x heads) against its CUDA-graph buffer
# ------------------------------------------------------------------------------------------------

def test_flashmla_tile_scheduler_metadata_vs_its_buffer_is_a_spec_kernel_limit_site():
    sites = [s for s in load().all_sites() if s.file.endswith("mla/flashmla.py")
             and "tile_scheduler_metadata" in (s.condition or "") and "<=" in (s.condition or "")]
    assert sites and {s.category for s in sites} == {"spec_kernel_limit"}


def _tile_log(spec: str) -> str:
    w = "(Worker_TP3 pid=6120) ERROR 05-27 12:09:33 [multiproc_executor.py:998] "
    return "\n".join([
        f"vllm serve deepseek-ai/DeepSeek-V3.1 -tp 8 --kv-cache-dtype fp8 {spec}".rstrip(),
        f"{w}Traceback (most recent call last):",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 6702, in '
        "_warmup_and_capture",
        f"{w}    self._dummy_run(",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/mla/flashmla.py", line 199, in '
        "_build_decode",
        f"{w}    assert n <= self.cg_buf_tile_scheduler_metadata.size(0)",
        f"{w}AssertionError",
    ])


def test_the_tile_scheduler_buffer_assert_under_drafts_is_the_kernel_limit():
    f = _first(_tile_log("--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"))
    assert f.category == "spec_kernel_limit"


def test_the_tile_scheduler_buffer_assert_without_drafts_is_not_the_family():
    assert _first(_tile_log("")).category == "other"


# ------------------------------------------------------------------------------------------------
# Ray Serve replica prefixes (names with colons): the engine's traceback inside them is read
# ------------------------------------------------------------------------------------------------

def test_an_engine_error_inside_ray_serve_replica_prefixes_is_the_root():
    r = "(ServeReplica:chat:LLMServer:zamba2-7b pid=3301) "
    e = f"{r}(EngineCore_DP0 pid=3388) ERROR 11-02 08:15:40 [core.py:940] "
    log = "\n".join([
        f"{r}INFO 11-02 08:15:01 [utils.py:253] non-default args: {{'model': 'Zyphra/Zamba2-7B-instruct', "
        "'kv_events_config': {'enable_kv_cache_events': True}}",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/home/ray/anaconda3/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", line 1198, '
        "in unify_hybrid_kv_cache_specs",
        f"{e}    raise ValueError(",
        f"{e}ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified "
        "type.",
        f"{r}RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}",
        "(ServeController pid=3100) ray.serve._private.deployment_state.DeploymentUnavailableError: The deployment "
        "LLMServer:zamba2-7b failed to start 3 times in a row. Last error: RuntimeError('Engine core initialization "
        "failed. See root cause above. Failed core proc(s): {}')",
    ])
    assert _first(log).category == "kv_page_size"


# ------------------------------------------------------------------------------------------------
# an asynchronous fault whose crash dump shows a request (re)starting from cached blocks
# ------------------------------------------------------------------------------------------------

def _dump_ima_log(resumed: str, third: int = 301) -> str:
    e = "(EngineCore_DP0 pid=612) ERROR 03-03 22:14:09 "
    return "\n".join([
        "vllm serve Qwen/Qwen3.5-27B -tp 2 --enable-prefix-caching "
        "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        f"{e}[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], "
        "scheduled_cached_reqs=CachedRequestData(req_ids=['r-11', 'r-12', 'r-13'],"
        f"resumed_req_ids=[{resumed}],new_token_ids_lens=[],new_block_ids=[None, None, [[90, 91], [92]]],"
        "num_computed_tokens=[2210, 517, 4224],num_output_tokens=[88, 40, 0]), num_scheduled_tokens={r-11: 4, "
        f"r-12: 4, r-13: {third}}}, total_num_scheduled_tokens={8 + third}, scheduled_spec_decode_tokens={{r-11: [11, 12, 13], "
        "r-12: [21, 22, 23]}, scheduled_encoder_inputs={}, num_common_prefix_blocks=[0, 0])",
        f"{e}[core.py:1120] EngineCore encountered a fatal error.",
        f"{e}[core.py:1120] Traceback (most recent call last):",
        f'{e}[core.py:1120]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", '
        "line 7011, in _to_list",
        f"{e}[core.py:1120]     self.transfer_event.synchronize()",
        f"{e}[core.py:1120] torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])


def test_an_async_fault_with_a_resumed_request_from_cached_blocks_is_the_state_index():
    f = _first(_dump_ima_log("'r-13'"))
    assert f.category == "state_index" and "cached blocks at 4224" in f.basis


def test_the_same_step_with_a_plain_decode_beside_the_spec_decodes_is_mixed():
    # gdn_attn.py (0.23) build: "num_decodes and num_spec_decodes are mutually exclusive" -- a decode without
    # drafts in a spec-decode step is the mixed batch
    assert _first(_dump_ima_log("", third=1)).category == "mixed_batch"


def test_a_prefill_beside_spec_decodes_is_no_mixed_batch():
    # prefill chunks always share steps with spec decodes (the builders' normal path): prefix caching's prior stays
    assert _first(_dump_ima_log("")).category == "state_index"


# ------------------------------------------------------------------------------------------------
# a mask over the step's spec-decode tokens that does not fit the tokens: the rows of the batch
# ------------------------------------------------------------------------------------------------

def test_a_spec_token_mask_that_does_not_fit_the_tokens_is_a_mixed_batch():
    e = "(EngineCore_DP0 pid=300) ERROR 05-05 10:00:00 [core.py:1000] "
    log = "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 2}'",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/qwen3_next.py", line 612, in '
        "_forward_core",
        f"{e}    mixed_qkv_spec = mixed_qkv[spec_token_masks]",
        f"{e}IndexError: The shape of the mask [8] at index 0 does not match the shape of the indexed tensor [6, 4096]",
    ])
    assert _first(log).category == "mixed_batch"


@pytest.mark.parametrize("prose", [
    "The output is garbled only when several requests run concurrently; a single request is always fine.",
    "With 1 concurrent request it's fine, with 16 concurrent requests the answers become gibberish.",
])
def test_silent_garbage_only_with_other_requests_in_flight_is_a_mixed_batch(prose):
    f = _first(_silent_log("Qwen/Qwen3.5-35B-A3B", "--speculative-config '{\"method\": \"mtp\", "
                           "\"num_speculative_tokens\": 2}'", [], symptom=prose))
    assert f.category == "mixed_batch" and f.confidence == "low" and "other requests" in f.basis


def test_silent_garbage_for_every_request_names_no_class():
    log = _silent_log("Qwen/Qwen3.5-35B-A3B", "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
                      [], symptom="Answers are gibberish for every request, even a lone one.")
    assert not [f for f in _findings(log) if f.severity == "error"]


def test_a_prompt_arriving_while_others_are_decoding_is_mixed_batch_evidence():
    e = "(EngineCore_DP0 pid=300) ERROR 05-05 10:00:00 [core.py:1000] "
    log = "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 2}'",
        "It crashes as soon as a new prompt arrives while the other requests are decoding.",
        f"{e}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    f = _first(log)
    assert f.category == "mixed_batch" and f.confidence == "low"
