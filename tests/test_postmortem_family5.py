"""Failure families, fifth part: numpy's broadcast error over per-request arrays in a hybrid model state (mixed
batch), a None where a layer expects one side of the builder's spec / non-spec split (mixed batch), two backends'
decode thresholds in conflict under drafts (kernel limit), and the warning that full CUDA graphs were dropped
under speculative decoding (kernel limit, as performance).

Every log here is written by the tests in vLLM's format; models, numbers and paths are the tests' own.
"""

from __future__ import annotations

import pytest

from vllm_diag.postmortem.analyze import analyze_text

from .test_postmortem_family3 import _first

SITE = "/usr/lib/python3.12/site-packages/vllm"


def _first_error(log: str):
    return next(f for f in analyze_text(log, "t.log").findings if f.severity == "error")


def _worker(n: int = 0) -> str:
    return f"(Worker_TP{n} pid={5100 + n}) ERROR 03-02 08:11:40 [multiproc_executor.py:790] "


def _traceback(frames: list[tuple[str, int, str, str]], error: str) -> list[str]:
    w = _worker()
    out = [f"{w}WorkerProc hit an exception.", f"{w}Traceback (most recent call last):"]
    for file, line, func, code in frames:
        out += [f'{w}  File "{SITE}/{file}", line {line}, in {func}', f"{w}    {code}"]
    return out + [f"{w}{error}"]


def _serve_log(cmd: str, spec: str | None, frames: list[tuple[str, int, str, str]], error: str) -> str:
    """``vllm serve`` (with ``--speculative-config spec`` when given) and a worker's traceback."""
    return "\n".join([cmd + (f" --speculative-config '{spec}'" if spec else "")] + _traceback(frames, error))


def _broadcast_log(error: str, spec: bool = True) -> str:
    return _serve_log("vllm serve Qwen/Qwen3.5-35B-A3B -tp 2",
                      '{"method": "mtp", "num_speculative_tokens": 2}' if spec else None, [
                          ("v1/worker/gpu/model_runner.py", 1880, "execute_model",
                           "attn_metadata = self.model_state.prepare_attn("),
                          ("v1/worker/gpu/model_states/mamba_hybrid.py", 291, "prepare_attn",
                           "num_decode_draft_tokens_np[: input_batch.num_reqs] = np.where("),
                      ], error)


def test_numpys_broadcast_error_over_the_steps_rows_in_a_hybrid_model_state_is_a_mixed_batch():
    f = _first(_broadcast_log("ValueError: operands could not be broadcast together with shapes (9,) (5,) () "))
    assert f.category == "mixed_batch" and "first dimension" in f.basis and "mamba_hybrid.py" in f.basis


def test_a_broadcast_error_without_drafts_is_not_claimed():
    no_spec = _first(_broadcast_log("ValueError: operands could not be broadcast together with shapes (9,) (5,) ",
                                    spec=False))
    assert no_spec.category == "other"


def _split_none_log(statement: str, error: str = "TypeError: 'NoneType' object is not subscriptable") -> str:
    return "\n".join(["vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code -tp 4 "
                      "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 2, "
                      "\"prompt_lookup_max\": 3}'"] + _traceback([
                          ("model_executor/models/kimi_linear.py", 360, "forward", "self.self_attn("),
                          ("model_executor/layers/kda.py", 355, "_forward", statement),
                      ], error))


def test_a_none_for_one_side_of_the_spec_split_in_a_hybrid_layer_is_a_mixed_batch():
    f = _first(_split_none_log("conv_indices = non_spec_state_indices_tensor[: attn_metadata.num_decodes]"))
    assert f.category == "mixed_batch" and "hybrid_spec_split_none" in f.basis


def test_a_none_elsewhere_in_a_hybrid_layer_is_not_a_mixed_batch():
    f = _first(_split_none_log("weight = self.conv1d.weight.view(self.conv_size, -1)",
                               "AttributeError: 'NoneType' object has no attribute 'view'"))
    assert f.category != "mixed_batch"


def _threshold_log(error: str) -> str:
    return "\n".join(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
                      "'{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 3}'",
                      "(APIServer pid=301) INFO 03-02 08:10:01 [api_server.py:1839] vLLM API server version 0.11.0"]
                     + _traceback([
                         ("v1/worker/gpu_model_runner.py", 3609, "initialize_attn_backend",
                          "self.calculate_reorder_batch_threshold()"),
                         ("v1/worker/gpu_model_runner.py", 3715, "calculate_reorder_batch_threshold", "raise ValueError("),
                     ], error))


def test_two_backends_decode_thresholds_in_conflict_under_drafts_are_a_kernel_limit():
    f = _first(_threshold_log("ValueError: Attention backend reorders decodes with threshold 1 but other backend uses "
                              "threshold 4"))
    assert f.category == "spec_kernel_limit" and f.rule == "failure_site" and f.confidence == "high"


_DOWNGRADE = ("(Worker_TP0 pid=812) WARNING 05-11 10:02:17 [compilation.py:1447] CUDAGraphMode.FULL_AND_PIECEWISE is "
              "not supported with spec-decode for attention backend FlashMLAMetadataBuilder (support: "
              "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE")


def test_full_cuda_graphs_dropped_under_drafts_are_named_when_nothing_failed():
    log = "\n".join([
        "Why is MTP slower than no MTP on DeepSeek-R1? Same load, TPOT 31 ms with MTP vs 24 ms without.",
        "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --speculative-config '{\"method\": \"deepseek_mtp\", "
        "\"num_speculative_tokens\": 2}'",
        _DOWNGRADE,
    ])
    [f] = analyze_text(log, "t.log").findings
    assert (f.category, f.severity, f.rule) == ("spec_kernel_limit", "warning", "spec_cudagraph_downgrade")
    assert "FlashMLAMetadataBuilder" in f.title and "cudagraph_mode=PIECEWISE" in f.message
    assert f.numbers["uniform_decode_query_len"] == 3 and f.numbers["cudagraph_mode"] == "PIECEWISE"
    assert f.comparisons[0].expected == 1 and f.comparisons[0].actual == 3


def test_full_cuda_graphs_dropped_for_a_gqa_backend_are_the_cuda_graph_sibling():
    """The same warning for FlashInfer's GQA decode (an Ada GPU without its TRTLLM/XQA kernels) on a GDN hybrid: no
    MLA kernel's limit, the CUDA graphs' fit to 1 + k (E)."""
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-27B -tp 2 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
        _DOWNGRADE.replace("FlashMLAMetadataBuilder", "FlashInferBackend"),
        "MTP makes generation slower on our L40S: 540 -> 460 tok/s.",
    ])
    f = analyze_text(log, "t.log").findings[0]
    assert (f.category, f.rule) == ("cudagraph_shape", "spec_cudagraph_downgrade")


def test_the_downgrade_warning_never_outranks_a_crash():
    log = "\n".join([_DOWNGRADE] + _threshold_log("ValueError: Attention backend reorders decodes with threshold 1 but "
                                                  "other backend uses threshold 4").splitlines())
    fs = analyze_text(log, "t.log").findings
    assert fs[0].severity == "error" and any(f.rule == "spec_cudagraph_downgrade" for f in fs[1:])


def _embedding_assert_log(prose: str) -> str:
    core = "(EngineCore_DP0 pid=91) ERROR 06-30 12:00:09 [core.py:1101] "
    asserts = [f"/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1422: indexSelectLargeIndex: block: [{b},0,0], thread: "
               f"[{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed." for b in (88, 89) for t in (0, 1)]
    return "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"eagle3\", \"model\": "
        "\"my-org/next-eagle3\", \"num_speculative_tokens\": 2}'", prose, *asserts,
        f"{core}EngineCore encountered a fatal error.", f"{core}Traceback (most recent call last):",
        f'{core}  File "{SITE}/v1/worker/gpu_model_runner.py", line 301, in get_output',
        f"{core}    self.async_copy_ready_event.synchronize()",
        f"{core}torch.AcceleratorError: CUDA error: device-side assert triggered",
    ])


def test_an_embedding_lookup_past_a_smaller_vocabulary_is_a_near_miss():
    """indexSelect's device assert with two vocabulary sizes in the report: token ids of the larger one looked up in
    the smaller embedding (added tokens, a foreign draft head) -- not the hybrid's state indices."""
    f = _first(_embedding_assert_log('We added tool tokens: the tokenizer now has 151680 entries, config.json still '
                                     'says "vocab_size": 151646.'))
    assert f.category == "other" and "151646, 151680" in f.basis


def test_the_same_assert_without_a_vocabulary_mismatch_keeps_the_configurations_prior():
    f = _first(_embedding_assert_log("It crashes after a few minutes of traffic."))
    assert f.category != "other"


def _short_prompt_dump_log(prompt_tokens: int) -> str:
    """A new request's whole prompt scheduled in a step of spec decodes (no prefix caching)."""
    e = "(EngineCore_DP0 pid=77) ERROR 04-09 02:10:55 "
    return "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --no-enable-prefix-caching "
        "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 3}'",
        f"{e}[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=["
        f"NewRequestData(req_id=n-1,prompt_token_ids_len={prompt_tokens},mm_features=[],block_ids=([7],),"
        "num_computed_tokens=0)], scheduled_cached_reqs=CachedRequestData(req_ids=['c-1', 'c-2'],resumed_req_ids=[],"
        "new_token_ids_lens=[],new_block_ids=[None, None],num_computed_tokens=[5120, 811],num_output_tokens=[40, 12]), "
        f"num_scheduled_tokens={{n-1: {prompt_tokens}, c-1: 4, c-2: 4}}, total_num_scheduled_tokens={prompt_tokens + 8}, "
        "scheduled_spec_decode_tokens={c-1: [5, 6, 7], c-2: [8, 9, 10]}, scheduled_encoder_inputs={}, "
        "num_common_prefix_blocks=[0])",
        f"{e}[core.py:1120] EngineCore encountered a fatal error.",
        f"{e}[core.py:1120] Traceback (most recent call last):",
        f'{e}[core.py:1120]   File "{SITE}/v1/worker/gpu_model_runner.py", line 7011, in _to_list',
        f"{e}[core.py:1120]     self.transfer_event.synchronize()",
        f"{e}[core.py:1120] torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])


def test_a_prompt_no_longer_than_one_plus_k_beside_spec_decodes_is_a_mixed_batch():
    """The builders split decodes from prefills by query length (threshold 1 + k): a 4-token prompt among
    verify rows of 4 is run as a spec decode."""
    f = _first(_short_prompt_dump_log(4))
    assert f.category == "mixed_batch" and "at most 1 + k tokens" in f.basis


def test_a_long_prompt_beside_spec_decodes_is_their_normal_path():
    f = _first(_short_prompt_dump_log(900))
    assert "at most 1 + k tokens" not in f.basis and "mixed batch" not in f.basis


def test_a_last_prefill_chunk_counted_as_a_decode_with_wrong_output_is_a_silent_mixed_batch():
    log = "\n".join([
        "Granite-4.0-H + MTP: a few long prompts come back as garbage, no error in the log.",
        'llm = LLM(model="ibm-granite/granite-4.0-h-small", max_num_batched_tokens=4096, '
        'speculative_config={"method": "mtp", "num_speculative_tokens": 3})',
        "It only happens when the prompt's last prefill chunk is 1-4 tokens: that chunk is counted as a decode.",
    ])
    f = _first(log)
    assert f.category == "mixed_batch" and "wrong output" in f.message


def test_adaptive_verification_on_a_backend_without_varying_query_lengths_is_a_kernel_limit():
    log = "\n".join(["VLLM_USE_V2_MODEL_RUNNER=1 vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2, \"enable_adaptive_verification\": true}'"]
                    + _traceback([
                        ("v1/worker/gpu/model_runner.py", 679, "initialize_kv_cache",
                         "self.adaptive_verification = maybe_create_adaptive_verification_manager("),
                        ("v1/worker/gpu/spec_decode/adaptive_verification.py", 497,
                         "maybe_create_adaptive_verification_manager", "raise ValueError("),
                    ], "ValueError: Adaptive verification replays decode cudagraphs whose per-request query lengths vary "
                       "up to 3, but FlashMLASparseBackend allows none. Pass enable_adaptive_verification=false in the "
                       "speculative config, or use a backend that does."))
    f = _first(log)
    assert f.category == "spec_kernel_limit" and f.rule == "failure_site"


def test_an_index_fault_surfacing_deep_in_a_draft_models_compiled_forward_is_the_draft_kv_layout():
    """vLLM 0.26 on an H200 (vllm serve, NemotronH + a dense Llama draft): the fault surfaces at a cuBLAS call
    nine vLLM frames below the proposer, the last one in the compile cache; the drafter still places it."""
    core = "(EngineCore pid=1528) ERROR 11-26 22:32:40 [core.py:1332] "
    frames = [("v1/worker/gpu_model_runner.py", 4602, "sample_tokens", "propose_draft_token_ids(sampled_token_ids)"),
              ("v1/worker/gpu_model_runner.py", 5212, "propose_draft_token_ids", "draft_token_ids = self.drafter.propose("),
              ("v1/spec_decode/llm_base_proposer.py", 590, "propose", "ret_hidden_states = self.model(**model_kwargs)"),
              ("model_executor/models/llama.py", 640, "forward", "model_output = self.model("),
              ("compilation/decorators.py", 507, "__call__", "output = self.compiled_callable(*args, **kwargs)"),
              ("compilation/wrapper.py", 220, "__call__", "return self._call_with_optional_nvtx_range("),
              ("compilation/caching.py", 210, "__call__", "return self.optimized_call(*args, **kwargs)"),
              ("compilation/cuda_graph.py", 244, "__call__", "return self.runnable(*args, **kwargs)"),
              ("compilation/piecewise_backend.py", 380, "__call__", "return range_entry.runnable(*args)"),
              ("compilation/compiler_interface.py", 437, "compiled_graph_wrapper", "graph_output = inductor_compiled_graph("),
              ]
    lines = ["vllm serve /models/nemotron_h14 --max-model-len 1024 --speculative-config "
             "'{\"method\": \"draft_model\", \"model\": \"/models/llama_draft_big\", \"num_speculative_tokens\": 3}'",
             "INFO 11-26 22:30:01 [model.py:623] Resolved architecture: NemotronHForCausalLM",
             "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [4,0,0], thread: [120,0,0] "
             "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
             f"{core}EngineCore encountered a fatal error.", f"{core}Traceback (most recent call last):"]
    for file, line, func, code in frames:
        lines += [f'{core}  File "{SITE}/{file}", line {line}, in {func}', f"{core}    {code}"]
    lines += [f'{core}  File "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/ab/ca533dtyzj.py", line 559, in call',
              f"{core}    extern_kernels.mm(buf1, reinterpret_tensor(arg3_1, (128, 384), (1, 128), 0), out=buf2)",
              f"{core}RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, "
              "opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, "
              "compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"]
    f = _first("\n".join(lines))
    assert f.category == "kv_page_size" and "llm_base_proposer.py:propose" in f.basis


def _rows_assert_log(spec: bool) -> str:
    return _serve_log("vllm serve ibm-ai-platform/Bamba-9B --max-model-len 4096",
                      '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}' if spec else None, [
                          ("model_executor/layers/mamba/mamba_mixer2.py", 870, "conv_ssm_forward",
                           "selective_state_update("),
                          ("model_executor/layers/mamba/ops/mamba_ssm.py", 592, "selective_state_update",
                           "assert state_batch_indices.shape[0] >= N"),
                      ], "AssertionError")


def test_a_bare_assert_of_state_rows_against_the_batch_under_drafts_is_a_mixed_batch():
    """selective_state_update's ``state_batch_indices.shape[0] >= N``: under drafts N counts 1 + k tokens a spec
    decode where the builder gave a state row per request -- the rows counted two ways, not an index width."""
    f = _first(_rows_assert_log(spec=True))
    assert f.category == "mixed_batch" and "rows counted two ways" in f.basis


def test_the_same_assert_without_drafts_stays_with_the_state_indices():
    assert _first(_rows_assert_log(spec=False)).category != "mixed_batch"


def test_what_the_process_around_vllm_reports_is_kept_as_numbers():
    """The OS error number, the HTTP status clients got, the exit status of the container or unit and a port in use:
    what an operator quotes beside the error, as startup facts."""
    text = "\n".join([
        "$ kubectl describe pod vllm-0 | grep -A3 'Last State'",
        "    Last State:     Terminated",
        "      Reason:       Error",
        "      Exit Code:    1",
        'INFO:     10.2.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "(APIServer pid=1) ERROR 06-18 14:41:37 [launcher.py:120] OSError: [Errno 98] error while attempting to bind "
        "on address ('0.0.0.0', 8000): address already in use (port 8000)",
    ])
    startup = analyze_text(text, "t.log").facts.startup
    assert (startup["exit_code"], startup["http_status"], startup["errno"], startup["port"]) == (1, 500, 98, 8000)
    # a 200 OK is no failure status, and "support" holds no port
    quiet = analyze_text('INFO: 10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\nspecial support 4096 tokens', "t.log")
    assert "http_status" not in quiet.facts.startup and "port" not in quiet.facts.startup
    # requests' raise_for_status ("401 Client Error: Unauthorized"), a worker killed by a signal (negative code)
    gated = analyze_text("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/"
                         "m/resolve/main/config.json\n(EngineCore pid=9) ERROR 12-03 04:52:18 [multiproc_executor.py:295] "
                         "Worker proc VllmWorker-5 died unexpectedly (exit code: -6), shutting down executor.", "t.log")
    assert (gated.facts.startup["http_status"], gated.facts.startup["exit_code"]) == (401, -6)
    # vLLM's warning that a low ulimit "can cause fd limit errors like `OSError: [Errno 24] ...`" is no OS error
    ulimit = analyze_text("(APIServer pid=1) WARNING 11-27 04:10:02 [system_utils.py:187] Found ulimit of 20000 and failed "
                          "to automatically increase with error current limit exceeds maximum limit. This can cause fd "
                          "limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n",
                          "t.log")
    assert "errno" not in ulimit.facts.startup


def test_the_other_errors_of_a_log_are_kept_with_their_numbers():
    """Two attempts in one report: the root stays the first error, the second attempt's error is listed with the
    numbers its message gives; a wrapper that repeats the root is not another error."""
    tb = ("(EngineCore pid={pid}) ERROR 10-19 19:0{m}:13 [core.py:1366] EngineCore failed to start.\n"
          "(EngineCore pid={pid}) ERROR 10-19 19:0{m}:13 [core.py:1366] Traceback (most recent call last):\n"
          '(EngineCore pid={pid}) ERROR 10-19 19:0{m}:13 [core.py:1366]   File "/x/vllm/v1/engine/core.py", line 145, in __init__\n'
          "(EngineCore pid={pid}) ERROR 10-19 19:0{m}:13 [core.py:1366]     kv_cache_config = self._initialize_kv_caches(c)\n"
          "(EngineCore pid={pid}) ERROR 10-19 19:0{m}:13 [core.py:1366] {err}\n")
    text = (tb.format(pid=2871, m=2, err="ValueError: Bfloat16 is only supported on GPUs with compute capability of at "
                                          "least 8.0. Your Tesla T4 GPU has compute capability 7.5.")
            + "ok so added dtype=half. Now:\n"
            + tb.format(pid=3312, m=9, err="triton.runtime.errors.OutOfResources: out of resource: shared memory, "
                                           "Required: 98304, Hardware limit: 65536. Reducing block sizes may help.")
            + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    an = analyze_text(text, "t.log")
    assert an.facts.root.exc_type == "ValueError"
    others = an.to_record().log.other_errors
    assert [e["type"] for e in others] == ["triton.runtime.errors.OutOfResources"]
    oor = next(e for e in others if e["type"].endswith("OutOfResources"))
    assert (oor["numbers"]["required"], oor["numbers"]["hardware_limit"], oor["process"]) == (98304, 65536, "EngineCore")


def test_a_preemption_storm_is_a_full_kv_cache_not_a_cold_prefix_cache():
    """Stats lines with preemptions at a full KV cache: a capacity note (other, info) with the peaks; the 0% prefix
    hit rate of the same lines is what a full pool evicting every block gives, so it is no prefix-cache finding."""
    stats = [(212, 0, None, 96.3), (197, 41, 38, 100.0), (171, 88, 112, 100.0), (164, 97, 140, 99.8), (170, 80, 127, 100.0)]
    lines = [f"(APIServer pid=1) INFO 06-24 10:20:{i}4 [loggers.py:283] Engine 000: Avg prompt throughput: 8123.0 tokens/s, "
             f"Avg generation throughput: 2710.9 tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
             + (f"Preemptions: {p}, " if p is not None else "") + f"GPU KV cache usage: {u}%, Prefix cache hit rate: 0.0%"
             for i, (r, w, p, u) in enumerate(stats)]
    an = analyze_text("\n".join(lines), "t.log")
    assert [(f.category, f.rule, f.severity) for f in an.findings] == [("other", "kv_cache_pressure", "info")]
    assert an.findings[0].numbers["num_preemptions_max"] == 140 and an.findings[0].numbers["num_requests_waiting_max"] == 97
    # the same hit rate without preemptions is still a cold prefix cache
    calm = [line.replace("Preemptions: ", "Preempted: ") for line in lines]
    assert [f.title for f in analyze_text("\n".join(calm), "t.log").findings] == ["Prefix cache never hit"]


def _update_block_table_failure(setting: str) -> str:
    return _serve_log(f"vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 8 {setting}",
                      '{"method": "mtp", "num_speculative_tokens": 3}', [
                          ("v1/worker/gpu_model_runner.py", 2053, "_build_attention_metadata",
                           "attn_metadata_i = builder.update_block_table(cached_attn_metadata[kv_cache_group_id], "
                           "blk_table_tensor)"),
                          ("v1/attention/backends/mamba_attn.py", 410, "update_block_table", "assert ("),
                      ], "AssertionError: Mismatch in number of requests when updating block table. Expected 24, got 25.")


def test_a_request_count_mismatch_of_the_mamba_builder_is_the_batch_split_without_prefix_caching():
    """update_block_table counts the step's requests against the state indices' rows: without prefix caching (one
    state row per request) the batch's requests were counted two ways -- a mixed batch; with prefix caching the rows
    come through the block table -- a state-index mismatch. Prose saying prefix caching is off counts as off."""
    assert _first(_update_block_table_failure("")).category == "mixed_batch"
    assert _first(_update_block_table_failure("--enable-prefix-caching")).category == "state_index"
    said_off = _update_block_table_failure("") + "\nPrefix caching is OFF (the default for this model)."
    assert analyze_text(said_off, "t.log").facts.startup["prefix_caching_prose"] is False
    assert _first(said_off).category == "mixed_batch"


def _dumped_update_block_table_failure(expected: int, got: int) -> str:
    """The request-count failure after a crash dump of 5 requests: 2 plain decodes and 3 spec decodes."""
    e = "(EngineCore_DP0 pid=311) ERROR 06-30 08:11:02 "
    dump = (f"{e}[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], "
            "scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b', 'c', 'd', 'e'], resumed_req_ids=set(), "
            "new_token_ids=[], new_block_ids=[None, None, None, None, None], "
            "num_computed_tokens=[812, 4410, 77, 1290, 655]), num_scheduled_tokens={'a': 4, 'b': 1, 'c': 4, 'd': 1, "
            "'e': 4}, total_num_scheduled_tokens=14, scheduled_spec_decode_tokens={'a': [11, 12, 13], "
            "'c': [21, 22, 23], 'e': [31, 32, 33]}, scheduled_encoder_inputs={})")
    log = _update_block_table_failure("--enable-prefix-caching").replace("Expected 24, got 25", f"Expected {expected}, got {got}")
    return dump + "\n" + log


def test_a_request_count_mismatch_with_prefix_caching_is_the_state_indices_whatever_the_dump_mixes():
    """With prefix caching the state rows come through the block table: the request-count check failing is the
    state indices' rows, beside a crash dump that mixes decodes with spec decodes too (the labelled reports with a
    mixed dump and prefix caching say so, none the builder's split); where the metadata counts every request of the
    step and the indices carry more rows, the basis names the padded rows."""
    split = _first(_dumped_update_block_table_failure(2, 5))
    assert split.category == "state_index"
    padded = _first(_dumped_update_block_table_failure(5, 8))
    assert padded.category == "state_index" and "padded rows" in padded.basis


def test_the_reporter_saying_the_fault_needs_prefix_caching_is_the_state_indices_over_a_mixed_dump():
    """An asynchronous fault of a hybrid with drafts whose crash dump mixes decodes with spec decodes is read as the
    builder's split -- unless the report says the fault goes away without prefix caching: a split fails without it
    too, the states prefix caching routes through the block table do not."""
    e = "(EngineCore_DP0 pid=311) ERROR 06-30 08:11:02 "
    dump = _dumped_update_block_table_failure(2, 5).split("\n")[0]
    fault = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 8 --enable-prefix-caching "
        "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'", dump,
        f"{e}[core.py:1108] EngineCore encountered a fatal error.",
        f"{e}[core.py:1108] Traceback (most recent call last):",
        f'{e}[core.py:1108]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", '
        "line 2411, in _bookkeeping_sync",
        f"{e}[core.py:1108]     valid_sampled_token_ids = self._to_list(sampled_token_ids)",
        f"{e}[core.py:1108] torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    assert _first(fault).category == "mixed_batch"
    for said in ("Without MTP no crash; without prefix caching no crash either.",
                 "Disabling prefix caching makes it go away.",
                 "It only happens with --enable-prefix-caching.",
                 "Without --enable-prefix-caching it survives 24h."):
        f = _first(fault + "\n" + said)
        assert f.category == "state_index" and "needs prefix caching" in f.basis, said
    # vLLM's own line turning prefix caching off is not the reporter's
    assert _first(fault + "\n(EngineCore_DP0 pid=311) INFO 06-30 08:10:02 [config.py:1] Hybrid or mamba-based model "
                  "detected: disabling prefix caching since it is not yet supported.").category == "mixed_batch"


def test_the_capture_estimate_and_a_stalled_broadcast_are_startup_facts():
    text = ("(Worker_TP1 pid=1873) INFO 05-26 09:18:44 [gpu_model_runner.py:6142] Estimated CUDA graph memory: 2.61 GiB total\n"
            "(EngineCore pid=88) INFO 05-06 03:02:44 [shm_broadcast.py:681] No available shared memory broadcast block "
            "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work")
    startup = analyze_text(text, "t.log").facts.startup
    assert (startup["cudagraph_memory_estimate_gib"], startup["shm_broadcast_wait_seconds"]) == (2.61, 60)


@pytest.mark.parametrize("symptom", [
    "With MTP the model gets stuck in loops after a few hundred tokens; without --speculative-config it's always fine.",
    "Our gsm8k accuracy drops from 0.95 to 0.64 once MTP is on, no error anywhere.",
    "Completions are pure garbage for some prompts, greedy decoding isn't deterministic anymore.",
    "Under load the answers of about one request in ten are garbage, the rest are fine.",
    "Some replies start in English and then switch to Chinese halfway through.",
])
def test_quiet_degradation_in_other_words_on_a_hybrid_with_drafts_is_a_low_mixed_batch(symptom):
    log = ("vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'\n" + symptom + "\n")
    f = _first_error(log)
    assert f.category == "mixed_batch" and f.confidence == "low"


def test_short_prompts_that_go_wrong_are_prefills_run_as_spec_decodes():
    log = ("vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'\n"
           "Only 3-token prompts come back as garbage; longer prompts are fine.\n")
    f = _first_error(log)
    assert f.category == "mixed_batch" and "short prompts" in f.basis and "1 + k = 4" in f.basis


@pytest.mark.parametrize("verdict", ["ERROR: Job failed: exit code 1", "Error: Process completed with exit code 1.",
                                     "Error: The command exited with status 2"])
def test_a_ci_runners_verdict_on_the_job_is_not_the_failure(verdict):
    """An eval job that fails its quality gate: the runner's last line says only that the job failed."""
    log = ("$ ./ci/eval.sh --model Qwen/Qwen3-Next-80B-A3B-Instruct --spec mtp:2\n"
           "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'\n"
           "[eval] gsm8k exact_match=0.61 -- FAIL: accuracy regression vs baseline (0.95)\n" + verdict + "\n")
    an = analyze_text(log, "t.log")
    assert not an.facts.startup.get("error_lines")
    f = next(f for f in an.findings if f.severity == "error")
    assert f.category == "mixed_batch" and f.confidence == "low"


def test_vllms_cudagraph_stats_show_decode_steps_above_the_largest_graph_running_eagerly():
    p = "(APIServer pid=1) INFO 09-30 14:22:51 [cuda_graph.py:123] "
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-27B --max-num-seqs 128 --speculative-config '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 2}' --cudagraph-metrics",
        "ITL doubles once concurrency goes above ~85.",
        f"{p}| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |",
        f"{p}|-----------------|---------------|--------------|--------------|-------|",
        f"{p}| 300             | 300           | 0            | NONE         | 120   |",
        f"{p}| 255             | 256           | 1            | FULL         | 80    |",
        f"{p}| 2048            | 2048          | 0            | NONE         | 7     |",
    ])
    f = analyze_text(log, "t.log").findings[0]
    assert (f.category, f.rule, f.severity) == ("cudagraph_shape", "spec_capture_sizes", "warning")
    assert f.numbers["eager_decode_tokens"] == 300 and f.numbers["eager_steps"] == 120  # (the 2048 prefill is no decode)
    assert f.comparisons[0].expected == 384 and f.comparisons[0].actual == 256


def test_a_one_token_last_prefill_chunk_beside_decodes_is_a_mixed_batch_without_drafts():
    log = ("vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --max-num-batched-tokens 2048\n"
           "Under concurrency some answers are pure garbage: every broken one has a prompt of 2049, 4097 or 6145 tokens, "
           "i.e. prompt_len % 2048 == 1.\n")
    f = _first_error(log)
    assert f.category == "mixed_batch" and f.confidence == "low" and f.numbers["last_chunk_tokens"] == 1
    # a dense model has no Mamba builder to split the step
    dense = log.replace("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "meta-llama/Llama-3.1-8B-Instruct")
    assert not [f for f in analyze_text(dense, "t.log").findings if f.category == "mixed_batch"]


def test_a_hybrids_prefix_cache_that_never_hits_is_a_warning_of_its_class():
    m = ("(APIServer pid=7) INFO 09-01 10:00:{s} [loggers.py:257] Engine 000: Running: 24 reqs, Waiting: 0 reqs, "
         "GPU KV cache usage: 3.1%, Prefix cache hit rate: 0.0%")
    log = "\n".join(["vllm serve Qwen/Qwen3.6-35B-A3B --enable-prefix-caching --speculative-config "
                     "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'", m.format(s="12"), m.format(s="22"),
                     "Same 6k-token system prompt for every request; without MTP the hit rate is ~85%."])
    f = analyze_text(log, "t.log").findings[0]
    assert (f.category, f.severity, f.confidence) == ("prefix_cache_degraded", "warning", "low")
    # a dense model's 0 % is a workload without shared prefixes: nothing to say
    dense = log.replace("Qwen/Qwen3.6-35B-A3B", "meta-llama/Llama-3.1-8B-Instruct")
    assert not [f for f in analyze_text(dense, "t.log").findings if f.category == "prefix_cache_degraded"]


def test_capture_sizes_quoted_in_a_question_about_slow_decodes_are_the_users():
    """No command, only the flags in the reporter's sentence: the capture sizes are still the user's choice."""
    log = ("WARNING 02-10 17:22:05 [vllm.py:1191] Truncating max_cudagraph_capture_size to 8\n"
           "why are decodes slow? --max-num-seqs 32 --speculative-config '{\"method\":\"eagle\",\"num_speculative_tokens\":2}'"
           " --compilation-config '{\"cudagraph_capture_sizes\":[1,2,4,8]}'\n")
    f = analyze_text(log, "t.log").findings[0]
    assert (f.rule, f.category, f.severity) == ("spec_capture_sizes", "cudagraph_shape", "warning")
    assert f.numbers["decode_tokens_at_max_num_seqs"] == 96


def test_a_setting_named_as_what_works_is_not_the_failing_one():
    log = ("RuntimeError: the engine died\n"
           "MTP with num_speculative_tokens 3 crashes at start-up; works with num_speculative_tokens 1.\n")
    assert analyze_text(log, "t.log").facts.args.get("num_speculative_tokens") == 3


def test_an_eval_scripts_own_quality_gate_is_the_silent_failure_it_reports():
    """The root error is the reporter's evaluation script failing its score check (no frame in vLLM or any package):
    vLLM raised nothing, the output went wrong -- the silent class, with the gate's message as evidence."""
    log = "\n".join([
        "The spec-decode accuracy gate fails for our hybrid model only.",
        "INFO 05-21 03:16:22 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: "
        "model='Qwen/Qwen3.5-9B', speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=4), "
        "enable_prefix_caching=False",
        "[eval] gsm8k exact_match=0.6801 (baseline 0.9010)",
        "Traceback (most recent call last):",
        '  File "/__w/serving/serving/ci/eval_spec.py", line 88, in <module>',
        "    main()",
        '  File "/__w/serving/serving/ci/eval_spec.py", line 80, in main',
        '    assert acc >= baseline - 0.02, f"{name}: gsm8k {acc:.4f} < baseline {baseline:.4f}"',
        "AssertionError: ngram: gsm8k 0.6801 < baseline 0.9010",
    ])
    f = _first_error(log)
    assert f.category == "mixed_batch" and f.confidence == "low"
    assert "the evaluation script's own quality gate" in f.basis


def test_a_user_scripts_error_without_a_quality_symptom_stays_unrecognised():
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-9B --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'",
        "Traceback (most recent call last):",
        '  File "/home/me/client.py", line 12, in <module>',
        "    assert resp.status_code == 200",
        "AssertionError",
    ])
    f = _first_error(log)
    assert "quality gate" not in f.basis and f.category == "other"


def test_the_non_default_args_line_opens_a_second_attempt():
    """A report of two launches, the second with its version line elided: the API server's non-default args line
    marks each launch, so the root is the second attempt's error."""
    api = "(APIServer pid=1) INFO 03-04 11:{m}:48 [utils.py:238] non-default args: {{'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct'}}"
    ec = "(EngineCore_DP0 pid=2) ERROR 03-04 11:{m}:19 [core.py:1100] "
    log = "\n".join([
        api.format(m="04"),
        ec.format(m="04") + "ValueError: Connector LMCacheConnectorV1 does not support HMA but HMA is enabled.",
        "So I added --disable-hybrid-kv-cache-manager. Now:",
        api.format(m="21"),
        "[... same startup ...]",
        ec.format(m="24") + "ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one "
                            "unified type.",
    ])
    an = analyze_text(log, "t.log")
    assert an.facts.root.message.startswith("Hybrid KV cache manager is disabled")
    assert [e["type"] for e in an.facts.other_errors] == ["ValueError"]


def test_the_dsa_indexers_next_n_gives_the_depth_where_no_command_does():
    """vLLM's DSA indexer logs next_n = num_speculative_tokens + 1 (sparse_attn_indexer.py): with no command in the
    excerpt, the DeepGEMM limit still compares the real next_n."""
    w = "(Worker_TP0 pid=560) "
    log = "\n".join([
        "num_speculative_tokens: 1 starts fine, this one is deeper:",
        w + "INFO 06-11 08:17:03 [indexer.py:896] DSA indexer decode path: use_flattening=False supports_varlen=False "
            "(next_n=4, use_fp4_cache=False)",
        w + "ERROR 06-11 08:18:54 [multiproc_executor.py:1058] RuntimeError: Assertion error (/tmp/deep-gemm/csrc/apis/../"
            "jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp:233): next_n == 1 or next_n == 2",
    ])
    an = analyze_text(log, "t.log")
    f = an.findings[0]
    assert f.category == "spec_kernel_limit"
    assert f.numbers["next_n"] == 4 and f.numbers["num_speculative_tokens"] == 3
    assert an.facts.args.get("num_speculative_tokens") is None  # "1 starts fine" is the way out, not the set-up


def test_vllms_warning_that_draft_slots_shrink_the_step_budget_is_a_token_budget_warning():
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-27B --max-num-seqs 64 --max-num-batched-tokens 2048 --speculative-config "
        "'{\"method\": \"dflash\", \"model\": \"org/drafter\", \"num_speculative_tokens\": 8}'",
        "(APIServer pid=7) WARNING 07-03 11:20:49 [vllm.py:1576] max_num_scheduled_tokens is set to 1600 based on the "
        "speculative decoding settings. This may lead to suboptimal performance. Consider increasing "
        "max_num_batched_tokens to accommodate the additional draft token slots, or decrease num_speculative_tokens or "
        "max_num_seqs.",
        "TTFT for long prompts got much worse with the drafter.",
    ])
    f = analyze_text(log, "t.log").findings[0]
    assert (f.rule, f.category, f.severity) == ("spec_token_budget", "token_budget", "warning")
    assert f.numbers["max_num_scheduled_tokens"] == 1600 and f.numbers["draft_slots_reserved"] == 448
    (c,) = f.comparisons
    assert (c.expected, c.actual) == (2048, 1600)


def test_a_ci_tests_failed_score_check_is_the_symptom_not_another_error():
    """pytest's FAILED line carries the score check (the wrong output itself) and the CI agent's exit line is its
    verdict: with nothing else failing, the hybrid + drafts report is the silent class."""
    log = "\n".join([
        "[2026-05-02T03:12:05Z] INFO 05-02 03:12:05 [utils.py:278] non-default args: {'model': "
        "'MiniMaxAI/MiniMax-M1-40k', 'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 4}}",
        "[2026-05-02T03:29:15Z] FAILED tests/evals/test_gsm8k_spec.py::test_gsm8k_ngram - AssertionError: GSM8K "
        "flexible-extract 0.4109 below threshold 0.9000 (baseline without spec decode: 0.9158)",
        "[2026-05-02T03:29:16Z] user command error: exit status 1",
    ])
    f = _first_error(log)
    assert f.category == "mixed_batch" and f.confidence == "low"
    assert "LinearAttentionMetadataBuilder" in f.basis


def test_greedy_outputs_that_diverge_from_the_run_without_drafts_are_the_wrong_output_symptom():
    log = ("vllm 0.28.0, LiquidAI/LFM2-8B-A1B, speculative_config={'method': 'ngram', 'num_speculative_tokens': 3}\n"
           "With greedy sampling the outputs diverge after a few dozen tokens from the run without spec decoding.\n")
    an = analyze_text(log, "t.log")
    assert an.facts.startup["wrong_output_prose"].startswith("outputs diverge after")
    f = next(f for f in an.findings if f.severity == "error")
    assert f.category == "mixed_batch"


def test_an_illegal_access_tied_to_a_one_token_last_chunk_on_a_hybrid_without_drafts_is_the_builders_split():
    w = "(Worker pid=9) ERROR 05-05 15:40:02 [multiproc_executor.py:822] "
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --max-num-batched-tokens 8192",
        "No speculative decoding, no prefix caching. It dies when a request is on its last 1-token chunk of an "
        "8193-token prompt and the others are plain decodes.",
        w + "Traceback (most recent call last):",
        w + '  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/streams.py", line 254, in synchronize',
        w + "    super().synchronize()",
        w + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    f = _first_error(log)
    assert (f.category, f.rule, f.confidence) == ("mixed_batch", "async_fault", "low")
    assert f.numbers["last_chunk_tokens"] == 1


def test_a_fault_first_printed_before_the_engines_timeout_stays_first_when_a_fuller_copy_comes_later():
    """Every rank's thread prints the fault, the engine then times out, and the report adds a fuller (blocking)
    traceback of the same fault: the fault is the root, not the engine's timeout."""
    w, e = "(Worker_TP0 pid=11) ", "(EngineCore pid=10) ERROR 06-02 22:08:17 [core.py:1167] "
    site = "/usr/local/lib/python3.12/dist-packages/vllm"
    log = "\n".join([
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
        w + "Exception in thread WorkerAsyncOutputCopy:",
        w + "Traceback (most recent call last):",
        w + f'  File "{site}/v1/worker/gpu_model_runner.py", line 285, in get_output',
        w + "    self.async_copy_ready_event.synchronize()",
        w + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        e + "Traceback (most recent call last):",
        e + f'  File "{site}/v1/engine/core.py", line 1158, in run_engine_core',
        e + "    engine_core.run_busy_loop()",
        e + "TimeoutError: RPC call to sample_tokens timed out.",
        "rerun with CUDA_LAUNCH_BLOCKING=1:",
        w + "Traceback (most recent call last):",
        w + f'  File "{site}/v1/worker/gpu_model_runner.py", line 3692, in _model_forward',
        w + "    return self.model(",
        w + f'  File "{site}/model_executor/layers/sparse_attn_indexer.py", line 342, in sparse_attn_indexer',
        w + "    torch.ops._C.persistent_topk(",
        w + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    an = analyze_text(log, "t.log")
    assert an.facts.root.exc_type == "torch.AcceleratorError"
    assert _first_error(log).category == "spec_kernel_limit"


def _no_backend(reasons: str) -> str:
    return _serve_log("vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --block-size 24", None, [
        ("attention/selector.py", 185, "_cached_get_attn_backend", "attention_cls = current_platform.get_attn_backend_cls("),
        ("platforms/cuda.py", 446, "get_attn_backend_cls", "raise ValueError("),
    ], "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, "
       f"dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=24, use_mla=False). Reasons: {{{reasons}}}.")


def test_a_backend_selection_that_refuses_the_block_size_is_the_alignment_sibling():
    """The reasons vLLM prints decide: every backend that loaded refusing the block size is its block-size limit
    (E); a backend refusing something else (head size, dtype) leaves it outside the families."""
    f = _first(_no_backend("FLASH_ATTN: [block_size not supported], FLASHINFER: [ImportError], "
                           "TRITON_ATTN: [block_size not supported]"))
    assert f.category == "block_size_alignment" and f.numbers["block_size"] == 24 and "FLASH_ATTN, TRITON_ATTN" in f.basis
    assert _first(_no_backend("FLASH_ATTN: [block_size not supported], TRITON_ATTN: [head_size not supported]"
                              )).category == "other"


def test_a_clients_report_of_the_servers_500_is_not_the_root_where_the_servers_error_is_in_the_log():
    """A trainer's HTTP client reporting the server's 500 (TRL's vllm_client, pasted first) is the failure seen from
    outside; the EngineCore's own traceback later in the report is the root."""
    client = "\n".join([
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/opt/conda/lib/python3.11/site-packages/trl/extras/vllm_client.py", line 274, in generate',
        '[rank0]:     raise Exception(f"Request failed: {response.status_code}, {response.text}")',
        "[rank0]: Exception: Request failed: 500, Internal Server Error",
        "Server terminal (vllm 0.29.0):"])
    log = client + "\n" + _update_block_table_failure("--enable-prefix-caching")
    an = analyze_text(log, "t.log")
    assert an.facts.root.exc_type == "AssertionError" and an.findings[0].category == "state_index"
    # alone, the client's error is still the root (nothing better in the log)
    assert analyze_text(client, "t.log").facts.root.message.startswith("Request failed: 500")
