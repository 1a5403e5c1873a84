"""Post-mortem, round nine. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

_API = "(APIServer pid=4410) INFO 01-15 09:31:49 "
_HIT_ZERO = [
    "Our Qwen3-Next deployment never reuses the shared system prompt: TTFT is the same for every request.",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --enable-prefix-caching",
    f"{_API}[utils.py:253] non-default args: {{'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
    "'enable_prefix_caching': True, 'tensor_parallel_size': 4}",
    f"{_API}[config.py:344] Hybrid or mamba-based model detected without support for prefix caching: disabling.",
    "(APIServer pid=4410) INFO 01-15 09:52:35 [loggers.py:237] Engine 000: Avg prompt throughput: 14877.0 tokens/s, "
    "Avg generation throughput: 410.1 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 28.2%, "
    "Prefix cache hit rate: 0.0%",
]
_REFUSAL = '"ValueError: --mamba-block-size can only be set with --enable-prefix-caching"'


def test_an_error_the_reporter_got_on_a_side_attempt_is_not_the_failure_the_report_is_about():
    """"I also tried X -> <error>" tells of another attempt: the report is about what its log shows (prefix caching
    forced off, a 0 % hit rate), not the refusal the side attempt met."""
    log = "\n".join(_HIT_ZERO + [f"I also tried --mamba-block-size 272 -> {_REFUSAL}, odd since I pass the flag."])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "prefix_cache_degraded"


def test_the_same_refusal_told_as_what_happened_is_still_the_failure():
    log = "\n".join(_HIT_ZERO[:3] + [f"Starting it with --mamba-block-size 272 fails at once: {_REFUSAL}"])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "other" and top.severity == "error"
    assert "--mamba-block-size can only be set with --enable-prefix-caching" in top.message


# one phrase for each branch of the wrong-output words (symptom_words.WRONG_OUTPUT), in the cases reporters write them
_WRONG_OUTPUT_PHRASES = [
    "the output is GARBLED", "outputs are gibberish", "Corrupted output on long prompts", "repeated phrases everywhere",
    "it switches language mid sentence", "the model answers nonsense", "the reply is unrelated to the conversation",
    "it answers a different question", "JSON output becomes invalid", "outputs fail json.loads", "invalid JSON",
    "generations fall into loops", "repeated fragments", "the output degrades", "it returns garbage",
    "word salad", "broken outputs", "answers come back as junk", "random junk", "junk tokens", "wrong answers",
    "incorrect outputs", "the accuracy gate fails", "gsm8k 0.71 < baseline", "outputs diverge from the eager run",
    "it degrades into repetition", "pure garbage", "completions are all garbage", "answers for cached prompts are garbage",
    "it switches to Chinese", "greedy with temperature 0 is not deterministic", "gets stuck in a loop",
    "repetitive output", "goes off the rails", "plausible but wrong.", "it repeats the question",
    "accuracy depends on concurrency", "then it starts looping", "and then loops forever", "repeats itself",
    "slightly-off answers", "MATH500 drops by ten points", "AIME25 collapsed", "a quality regression",
    "regression vs baseline", "identical for the first 50 tokens and then diverge",
    "different (worse) answers than without speculation", "long answers become repetitive", "they lose the thread",
    "returns different / degraded text", "it flips to Chinese mid-sentence", "it repeats a phrase",
    "the answer is sometimes subtly wrong",
]


def test_every_branch_of_the_wrong_output_words_passes_the_cheap_test_before_it():
    """The prose reader only runs the wrong-output regex on lines holding one of its hint words: a branch whose
    words are not among the hints would never be read."""
    from vllm_diag.postmortem.symptom_words import WRONG_OUTPUT

    for phrase in _WRONG_OUTPUT_PHRASES:
        assert WRONG_OUTPUT.search(phrase), phrase
        log = f"Qwen3-Next with MTP (num_speculative_tokens=2) on vLLM 0.26.0: {phrase}"
        assert analyze_text(log, "t.log", use_preflight=False).facts.startup.get("wrong_output_prose"), phrase


_W = "(Worker_TP1 pid=4120) ERROR 05-28 02:41:17 [multiproc_executor.py:987] "
_E = "(EngineCore_DP0 pid=3907) ERROR 05-28 02:41:17 "
_GDN_PKG = "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/mamba"


def _rocm_fault_log(dump: str) -> str:
    return "\n".join([
        ":0:rocdevice.cpp            :3020: 52310874712 us:  Callback: Queue 0x7f2a64800000 aborting with error : "
        "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal "
        "address. code: 0x29",
        f"{_W}WorkerProc hit an exception.",
        f"{_W}Traceback (most recent call last):",
        f'{_W}  File "{_GDN_PKG}/gdn_linear_attn.py", line 688, in _forward_core',
        f"{_W}    core_attn_out_spec, last_recurrent_state = fused_recurrent_gated_delta_rule(",
        f"{_W}RuntimeError: Triton Error [HIP]:  Code: 1, Messsage: invalid argument",
        f"{_E}[dump_input.py:72] Dumping input data for V1 LLM engine (v0.23.0) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct', speculative_config=SpeculativeConfig(method='mtp', "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct', num_spec_tokens=3), ",
        f"{_E}[dump_input.py:79] Dumping scheduler output for model execution: {dump}",
    ])


def test_a_runtime_launch_error_after_the_device_faulted_is_read_as_the_fault():
    """On ROCm the HSA runtime reports the memory fault itself; the Python error is the next Triton launch on the dead
    queue ("invalid argument"): the fault is the failure, reasoned from the configuration (GDN + MTP)."""
    dump = ("SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b'], "
            "num_computed_tokens=[900, 950]), num_scheduled_tokens={a: 4, b: 4}, total_num_scheduled_tokens=8, "
            "scheduled_spec_decode_tokens={a: [1, 2, 3], b: [4, 5, 6]}, ...)")
    top = analyze_text(_rocm_fault_log(dump), "t.log", use_preflight=False).findings[0]
    assert top.rule == "async_fault" and top.category in ("state_index", "mixed_batch")


def test_a_dump_whose_lists_were_elided_to_their_lengths_still_tells_the_batch():
    """req_ids=[...27 ids...] and scheduled_spec_decode_tokens={...26 entries...} with 105 tokens at k = 3:
    26 x (1 + 3) + 1 -- one plain decode beside 26 spec decodes, the mixed batch."""
    dump = ("SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=[...27 ids...], "
            "...), num_scheduled_tokens={...}, total_num_scheduled_tokens=105, "
            "scheduled_spec_decode_tokens={...26 entries...}, ...)")
    an = analyze_text(_rocm_fault_log(dump), "t.log", use_preflight=False)
    batch = an.facts.startup["crash_batch"]
    assert (batch["num_reqs"], batch["num_spec_decodes"], batch["num_decodes"], batch["mixed"]) == (27, 26, 1, True)
    assert an.findings[0].category == "mixed_batch"


def test_flashinfers_head_size_256_guard_at_block_16_is_a_dense_kernel_bug():
    """The guard fires at block size 16, the dense default; a hybrid's attention block is raised far above it."""
    log = "\n".join([
        "gemma-2-9b-it with an eagle draft on a B200, FLASHINFER backend:",
        f"{_E}[core.py:936] EngineCore failed to start.",
        f"{_E}[core.py:936] Traceback (most recent call last):",
        f'{_E}[core.py:936]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/flashinfer.py", '
        "line 617, in __init__",
        f"{_E}[core.py:936]     assert kv_cache_spec.block_size != 16, (",
        f"{_E}[core.py:936] AssertionError: There is a bug in FlashInfer block_size 16 head size 256 support. Please "
        "avoid this combination by passing --block-size 32 or --block-size 64.",
    ])
    assert analyze_text(log, "t.log", use_preflight=False).findings[0].category == "other"


def test_align_mode_refusing_drafts_is_the_state_bookkeeping_under_prefix_caching_and_drafts():
    """vLLM 0.14-0.17 refuse drafts in Mamba cache mode 'align' (the aligned state copies keep no slots for rejected
    drafts): the Mamba state under prefix caching + speculative decoding (B), not prefix caching merely unavailable."""
    pkg = "/usr/local/lib/python3.12/dist-packages/vllm"
    log = "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 --enable-prefix-caching "
        "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'",
        "Traceback (most recent call last):",
        f'  File "{pkg}/config/vllm.py", line 1301, in try_verify_and_update_config',
        "    HybridAttentionMambaModelConfig.verify_and_update_config(self)",
        f'  File "{pkg}/model_executor/models/config.py", line 357, in verify_and_update_config',
        "    assert not vllm_config.speculative_config, (",
        "AssertionError: Mamba cache mode 'align' is currently not compatible with speculative decoding.",
    ])
    assert analyze_text(log, "t.log", use_preflight=False).findings[0].category == "state_index"


def test_an_illegal_access_after_ragged_spec_decodes_on_the_trtllm_decode_is_the_kernels_limit():
    """A dense model with MTP on Blackwell's TRTLLM decode (one query length a request): the crash dump shows spec
    decodes of 4, 2 and 3 tokens in the faulting step -- the kernel's query-length limit under drafts."""
    w = "(Worker_TP1 pid=1187) ERROR 12-09 04:18:33 [multiproc_executor.py:822] "
    e = "(EngineCore_DP0 pid=1050) ERROR 12-09 04:18:33 "
    runner = "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py"
    log = "\n".join([
        "(Worker_TP0 pid=1186) INFO 12-09 03:51:47 [cuda.py:411] Using FLASHINFER attention backend out of potential "
        "backends: ['FLASHINFER', 'FLASH_ATTN']",
        "(Worker_TP0 pid=1186) INFO 12-09 03:51:47 [flashinfer.py:280] Using TRTLLM attention (query is quantized).",
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{runner}", line 2611, in _bookkeeping_sync',
        f"{w}    valid_sampled_token_ids = self._to_list(sampled_token_ids)",
        f'{w}  File "{runner}", line 5359, in _to_list',
        f"{w}    self.transfer_event.synchronize()",
        f"{w}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"{e}[dump_input.py:72] Dumping input data for V1 LLM engine (v0.12.0) with config: model='zai-org/GLM-4.5-Air-FP8', "
        "speculative_config=SpeculativeConfig(method='mtp', model='zai-org/GLM-4.5-Air-FP8', num_spec_tokens=3), ",
        f"{e}[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], "
        "scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b', 'c'], num_computed_tokens=[310, 288, 402]), "
        "num_scheduled_tokens={a: 4, b: 2, c: 3}, total_num_scheduled_tokens=9, "
        "scheduled_spec_decode_tokens={a: [1, 2, 3], b: [4], c: [5, 6]}, ...)",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert (top.rule, top.category) == ("async_fault", "spec_kernel_limit")
    assert "(2, 3, 4 tokens) on the TRTLLM decode" in top.basis


def test_a_journald_capture_in_another_locale_and_an_rpc_timeout_after_a_workers_fault():
    """journald writes the month as the host's locale does ("mar 18", "fév. 02"); the engine's "RPC call to
    sample_tokens timed out" five minutes later only says the worker stopped answering -- the worker's fault is the
    failure."""
    j = "mar 18 14:22:07 b200-n03 vllm[88412]: "
    w = f"{j}(Worker_TP5 pid=88618) "
    e = f"{j}(EngineCore_DP0 pid=88480) ERROR 03-18 14:27:09 [core.py:1102] "
    pkg = "/opt/vllm/.venv/lib/python3.12/site-packages/vllm"
    log = "\n".join([
        "vllm serve nvidia/DeepSeek-R1-0528-FP4 -tp 8 --speculative-config "
        "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":2}'",
        f"{w}Exception in thread WorkerAsyncOutputCopy:",
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{pkg}/v1/worker/gpu_model_runner.py", line 250, in get_output',
        f"{w}    self.async_copy_ready_event.synchronize()",
        f"{w}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"{e}EngineCore encountered a fatal error.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "{pkg}/v1/executor/multiproc_executor.py", line 370, in get_response',
        f'{e}    raise TimeoutError(f"RPC call to {{method}} timed out.") from e',
        f"{e}TimeoutError: RPC call to sample_tokens timed out.",
    ])
    an = analyze_text(log, "t.log", use_preflight=False)
    assert an.facts.root.message.startswith("CUDA error: an illegal memory access")
    assert an.findings[0].rule == "async_fault" and an.findings[0].category == "spec_kernel_limit"


def test_an_fp8_kv_cache_on_a_hybrid_doubles_the_block_not_the_requests_that_fit():
    """Two starts of a Qwen3-Next server, bf16 then fp8 KV (the flag quoted in backticks): the attention block goes
    from 272 to 544 tokens, the 'GPU KV cache size' in tokens doubles, the concurrency does not."""
    api, core = "(APIServer pid=1) INFO 02-24 10:11:40 ", "(EngineCore_DP0 pid=278) INFO 02-24 10:14:03 "
    start = [f"{api}[interface.py:671] Setting attention block size to {{b}} tokens to ensure that attention page "
             "size is >= mamba page size.",
             f"{core}[kv_cache_utils.py:1993] GPU KV cache size: {{t}} tokens, Maximum concurrency for 65,536 tokens "
             "per request: 54.00x"]
    log = "\n".join(["Qwen/Qwen3-Next-80B-A3B-Instruct, TP=4. Run 1 (default kv dtype):"]
                    + [x.format(b=272, t="3,538,992") for x in start] + ["", "Run 2 (`--kv-cache-dtype fp8`):"]
                    + [x.format(b=544, t="7,077,984") for x in start]
                    + ["", "Same throughput and the server never runs more than 190 requests at a time."])
    an = analyze_text(log, "t.log", use_preflight=False)
    assert an.facts.args["kv_cache_dtype"] == "fp8"  # (not "fp8`")
    top = an.findings[0]
    assert (top.rule, top.category, top.severity) == ("kv_quant_hybrid_capacity", "kv_page_size", "warning")
    assert (top.numbers["block_size_before"], top.numbers["block_size"]) == (272, 544)
    assert top.numbers["gpu_kv_cache_tokens"] == 7077984


def test_no_kv_memory_at_all_names_the_share_of_the_gpu_and_raises_it_first():
    """"Available KV cache memory: -18.25 GiB": the weights and activations exceed gpu_memory_utilization's share of
    the GPU -- no max_model_len fits, the share is what to change."""
    e = "(EngineCore pid=1989) ERROR 11-27 20:38:42 [core.py:1330] "
    pkg = "/opt/venv/lib/python3.12/site-packages/vllm"
    log = "\n".join([
        "vllm serve /models/llama -tp 2 --gpu-memory-utilization 0.01",
        "(Worker_TP0 pid=2001) INFO 11-27 20:38:42 [gpu_worker.py:560] Available KV cache memory: -18.25 GiB",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "{pkg}/v1/core/kv_cache_utils.py", line 758, in _check_enough_kv_cache_memory',
        f"{e}    raise ValueError(",
        f"{e}ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "other" and top.numbers["available_kv_cache_gib"] == -18.25
    assert top.title.startswith("No memory left for the KV cache")
    assert top.suggestions[0].title == "raise gpu_memory_utilization from 0.01 to 0.9"


def test_an_mla_decode_without_decode_metadata_under_drafts_is_the_backends_decode_limit():
    """Triton MLA's forward_mqa asserting its decode metadata under MTP: the builder and the forward disagree on which
    requests are decodes once a decode carries 1 + k tokens (C, read from the configuration: medium, not high)."""
    w = "(Worker_TP1 pid=4410) ERROR 08-14 12:31:07 [multiproc_executor.py:1007] "
    log = "\n".join([
        "vllm serve zai-org/GLM-4.7-Flash -tp 2 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        f'{w}  File "/home/u/env/lib/python3.12/site-packages/vllm/v1/attention/backends/mla/triton_mla.py", line 225, '
        "in forward_mqa",
        f"{w}    assert attn_metadata.decode is not None",
        f"{w}AssertionError",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert (top.category, top.confidence) == ("spec_kernel_limit", "medium")
    without = log.replace(" --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'", "")
    assert analyze_text(without, "t.log", use_preflight=False).findings[0].category == "other"


def test_an_elided_dump_that_filled_the_token_budget_infers_no_hidden_spec_decodes():
    """{..., 'a': 2, ...} with total_num_scheduled_tokens equal to max_num_batched_tokens: the step was full, so the
    hidden rows hold a prefill chunk -- 2046 hidden tokens are not 682 spec decodes of 1 + 2."""
    from vllm_diag.postmortem.dump import parse_scheduler_output

    dump = "num_scheduled_tokens={..., 'cmpl-7c1d': 2, ...}, total_num_scheduled_tokens=2048"
    assert parse_scheduler_output(dump, spec_k=2)["num_spec_decodes"] == 682  # (nothing says the step was full)
    full = parse_scheduler_output(dump, spec_k=2, token_budget=2048)
    assert full["num_spec_decodes"] == 0 and "elided_spec_decodes" not in full


_LOCKED = ("AssertionError: Workspace is locked but allocation from 'triton_mla.py:254:forward_mqa' requires 1033.00 MB, "
           "current size is 258.25 MB. Workspace growth is not allowed after locking.")


def test_a_locked_workspace_asked_for_1_plus_k_times_its_size_by_an_mla_kernel_under_drafts():
    pkg = "/opt/venv/lib/python3.12/site-packages/vllm"
    tb = ["Traceback (most recent call last):",
          f'  File "{pkg}/v1/attention/backends/mla/triton_mla.py", line 254, in forward_mqa',
          "    attn_logits = current_workspace_manager().get_simultaneous(",
          f'  File "{pkg}/v1/worker/workspace.py", line 157, in _ensure_workspace_size',
          "    raise AssertionError(", _LOCKED]
    drafts = "vllm serve zai-org/GLM-4.7-Flash --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"
    top = analyze_text("\n".join([drafts] + tb), "t.log", use_preflight=False).findings[0]
    assert (top.rule, top.category) == ("workspace_locked", "spec_kernel_limit")
    assert (top.numbers["required_mb"], top.numbers["current_mb"], top.numbers["triton_mla_line"]) == (1033.0, 258.25, 254)
    assert "1033 MB is 4 x 258.25 MB, and 1 + k = 4" in top.message
    plain = analyze_text("\n".join(["vllm serve zai-org/GLM-4.7-Flash"] + tb), "t.log", use_preflight=False).findings[0]
    assert (plain.rule, plain.category) == ("workspace_locked", "other")


def test_requests_failing_while_the_engine_serves_are_named_not_blamed_on_the_hybrid():
    """A NemotronH server whose structured-output requests fail in the API server (a missing package): the access
    log's 500s and AsyncLLM's reason lead as an `other` error; the hybrid's raised block stays a note."""
    api = "(APIServer pid=711) INFO 11-27 21:19:35 "
    lines = [f"{api}[interface.py:671] Setting attention block size to 80 tokens to ensure that attention page size "
             "is >= mamba page size."]
    for i in range(3):
        lines += [f"{api}[async_llm.py:631] Request cmpl-{i} failed due to ModuleNotFoundError: No module named "
                  "'lmformatenforcer'.",
                  f'(APIServer pid=711) INFO:     127.0.0.1:4963{i} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error']
    lines.append('(APIServer pid=711) INFO:     127.0.0.1:49700 - "POST /v1/completions HTTP/1.1" 400 Bad Request')
    top = analyze_text("\n".join(lines), "t.log", use_preflight=False).findings[0]
    assert (top.rule, top.category, top.severity) == ("other_request_errors", "other", "error")
    assert top.numbers == {"http_400_responses": 1, "http_500_responses": 3, "requests_failed": 3}
    assert "No module named 'lmformatenforcer'" in top.title
    grammar = [f"(EngineCore pid=850) ERROR 11-27 22:13:06 [scheduler.py:1748] Unexpected: grammar rejected tokens [405] "
               "for request cmpl-b2-0. Terminating request.",
               '(APIServer pid=681) INFO:     127.0.0.1:4963 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error']
    top = analyze_text("\n".join(lines[:1] + grammar), "t.log", use_preflight=False).findings[0]
    assert (top.rule, top.severity) == ("other_request_errors", "error") and "grammar rejected" in top.title
    rejected = analyze_text("\n".join(lines[:1] + lines[-1:]), "t.log", use_preflight=False).findings[0]
    assert (rejected.category, rejected.severity) == ("other", "warning") and "HTTP 4xx" in rejected.title


_JSON_RECORD = ('{"timestamp": "2026-05-11T04:51:37.855Z", "level": "ERROR", "logger": "vllm.v1.engine.core", '
                '"message": "EngineCore failed to start.", "exc_info": "Traceback (most recent call last):\\n  File '
                '\\"/usr/local/lib/python3.12/dist-packages/vllm/config/vllm.py\\", line 1187, in validate_block_size\\n'
                '    assert self.cache_config.block_size <= self.scheduler_config.max_num_batched_tokens, (\\n'
                'AssertionError: In Mamba cache align mode, block_size (1072) must be <= max_num_batched_tokens (1024)."}')


def test_a_json_log_record_behind_vllms_process_prefix_and_inside_export_layers():
    """vLLM with a JSON formatter prints '(EngineCore_DP0 pid=220) {"level": ..., "exc_info": "Traceback ..."}'; log
    exports wrap that again -- a CSV cell with its quotes doubled, a markdown table cell, a shipper's JSON envelope.
    Each reads as the record vLLM would print in a terminal, its traceback line by line."""
    import json as _json

    prefixed = f"(EngineCore_DP0 pid=220) {_JSON_RECORD}"
    forms = {
        "prefixed": prefixed,
        "csv": '"2026-05-11T04:51:37.855Z","gpu-node-17","vllm","error","' + prefixed.replace('"', '""') + '"',
        "markdown": f"| 2026-05-11 04:51:37 | qwen3next-0 | vllm | {prefixed} |",
        "envelope": _json.dumps({"timestamp": "2026-05-11T04:51:37.855Z", "log": prefixed}),
        # (python-json-logger with renamed fields: "msg", "process_name")
        "msg": _JSON_RECORD.replace('"message"', '"msg"'),
    }
    for name, line in forms.items():
        an = analyze_text("vllm 0.26.0, Qwen3-Next\n\n" + line + "\n", "t.log", use_preflight=False)
        assert an.facts.root is not None, name
        assert an.facts.root.message.startswith("In Mamba cache align mode, block_size (1072)"), name
        assert [f.function for f in an.facts.root.frames] == ["validate_block_size"], name
        assert an.findings[0].category == "token_budget", name


def test_a_container_the_oom_killer_ended_is_a_near_miss_not_the_hybrids_notes():
    log = "\n".join([
        "qwen3-next-mtp pods OOMKilled during startup after the node pool migration",
        "(APIServer pid=1) INFO 05-12 08:10:52 [interface.py:606] Setting attention block size to 272 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "    Reason:       OOMKilled",
        "    Exit Code:    137",
        "[Tue May 12 08:12:58 2026] Memory cgroup out of memory: Killed process 1718 (python3) total-vm:412311804kB",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert (top.category, top.rule) == ("other", "near_miss") and "OOM killer" in top.title
    assert "Killed process 1718" in top.message


def test_an_older_api_error_body_stays_an_error_body_not_a_shipped_record():
    """vLLM's older error body {"object": "error", "message": ..., "type": "BadRequestError"} has a "message" key like
    a shipper's record, but no level, logger or time: it stays the client's error (a near miss with its numbers)."""
    log = "\n".join([
        '(APIServer pid=1) INFO:     10.8.0.14:38301 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
        '{"object": "error", "message": "This model\'s maximum context length is 65536 tokens. However, you requested '
        '70000 tokens", "type": "BadRequestError", "param": null, "code": 400}',
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert (top.category, top.rule) == ("other", "near_miss") and "BadRequestError" in top.title


def test_numbers_named_by_the_words_before_them_and_by_the_tensor_a_template_measures():
    """"Scheduler metadata size 97 exceeds buffer size 65": each size is the words before it (not "exceeds buffer
    size: 97"); "block_size 16 head size 256": the head size is 256. A template's hole "state_indices_tensor.shape[0]"
    is that tensor's rows, not "shape"; "metadata.num_prefills + metadata.num_decodes" is their sum."""
    from vllm_diag.catalog.match import hole_name
    from vllm_diag.postmortem.numbers import phrase_numbers

    got = phrase_numbers("Scheduler metadata size 97 exceeds buffer size 65")
    assert (got["scheduler_metadata_size"], got["buffer_size"]) == (97, 65) and "exceeds_buffer_size" not in got
    got = phrase_numbers("index_copy_(): Number of indices (99) should be equal to source.size(dim) (96)")
    assert (got["num_indices"], got["source_size"]) == (99, 96)
    got = phrase_numbers("There is a bug in FlashInfer block_size 16 head size 256 support.")
    assert (got["block_size"], got["head_size"]) == (16, 256)
    assert hole_name("state_indices_tensor.shape[0]") == "state_indices_tensor_rows"
    assert hole_name("x.size(1)") == "x_width"
    assert hole_name("metadata.num_prefills + metadata.num_decodes") == "num_prefills_plus_num_decodes"


def test_the_decisive_startup_line_is_quoted_by_its_place_and_a_dump_counts_its_decode_tokens():
    api = "(APIServer pid=1) "
    log = "\n".join([
        f"{api}WARNING 12-16 09:40:10 [config.py:618] Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model",
        f"{api}INFO 12-16 09:40:11 [config.py:345] Hybrid or mamba-based model detected without support for prefix "
        "caching: disabling.",
    ])
    assert analyze_text(log, "t.log", use_preflight=False).facts.startup["config_line"] == 345
    from vllm_diag.postmortem.dump import parse_scheduler_output

    batch = parse_scheduler_output("scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b', 'c'], "
                                   "num_computed_tokens=[50, 60, 70]), num_scheduled_tokens={a: 4, b: 3, c: 1}, "
                                   "total_num_scheduled_tokens=8, scheduled_spec_decode_tokens={a: [1, 2, 3], b: [4, 5]}",
                                   spec_k=3)
    assert batch["num_decode_tokens"] == 8 and (batch["num_spec_decodes"], batch["num_decodes"]) == (2, 1)


def test_the_shared_prefix_size_said_before_its_noun_or_as_the_system_prompts_size():
    for words, n in (("all with the same 350-token system prompt + short user turns", 350),
                     ("every request starts with the same ~900-token system prompt + tool schema", 900),
                     ("Our system prompt is ~420 tokens, user turns are short.", 420)):
        st = analyze_text(f"Qwen3-Next, prefix cache hit rate 0%\n\n{words}\n", "t.log", use_preflight=False).facts.startup
        assert (st["shared_prefix_tokens"], st["system_prompt_tokens"]) == (n, n), words


def test_more_tokens_accepted_than_drafted_on_a_hybrid_is_the_mixed_batch_bookkeeping():
    e = "(EngineCore_DP0 pid=96) ERROR 09-30 11:58:47 [core.py:1376] "
    tb = [f"{e}Traceback (most recent call last):",
          f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/metrics.py", line 45, in observe_draft',
          f"{e}    assert num_accepted_tokens <= self.num_spec_tokens",
          f"{e}AssertionError"]
    spec = "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"
    hybrid = analyze_text("\n".join([f"vllm serve Qwen/Qwen3.5-27B {spec}"] + tb), "t.log", use_preflight=False)
    assert hybrid.findings[0].category == "mixed_batch"
    dense = analyze_text("\n".join([f"vllm serve meta-llama/Llama-3.1-8B-Instruct {spec}"] + tb), "t.log",
                         use_preflight=False)
    assert dense.findings[0].category == "other"


def test_a_deeper_draft_said_slower_and_a_benchmark_count_that_is_no_depth():
    """"num_speculative_tokens=3 is ~2.5x SLOWER than num_speculative_tokens=1" on DeepSeek-V3.2 is the MLA decode's
    query-length limit without a crash; benchmark_serving's "Draft tokens: 137002" is no speculative depth."""
    log = "\n".join([
        "DeepSeek-V3.2-Exp: num_speculative_tokens=3 is ~2.5x SLOWER than num_speculative_tokens=1 (H200, vLLM 0.14.0)",
        "",
        "vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8 --speculative-config "
        "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":3}'",
        "",
        "Draft tokens:                            137002",
    ])
    an = analyze_text(log, "t.log", use_preflight=False)
    assert (an.facts.startup.get("spec_prose") or {}).get("k") != 137002
    top = an.findings[0]
    assert (top.category, top.severity, top.numbers["num_speculative_tokens"]) == ("spec_kernel_limit", "warning", 3)


def test_what_another_release_does_is_a_side_note_not_the_failure():
    """"upgrading to 0.17.0 turns this into a crash instead (AssertionError ...)": the report is the silent corruption
    on the release it runs, not the other release's crash."""
    log = "\n".join([
        "Qwen3-Next + MTP (num_speculative_tokens=2) on vLLM 0.14.0: under load some answers become garbage.",
        "",
        "- upgrading to 0.17.0 turns this into a crash instead (AssertionError num_decodes/num_spec_decodes in "
        "gdn_attn.py)",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "mixed_batch" and "silent" in top.title


def test_prefix_hits_at_zero_because_each_request_carries_its_own_cache_salt_is_a_near_miss():
    log = "\n".join([
        "Qwen3-Next behind our gateway: prefix cache hit rate is 0% although every request shares a system prompt.",
        "",
        "(APIServer pid=1) INFO 03-02 10:00:10 [interface.py:606] Setting attention block size to 544 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "(APIServer pid=1) INFO 03-02 10:30:10 [loggers.py:310] Engine 000: Avg prompt throughput: 18211.3 tokens/s, "
        "Avg generation throughput: 402.6 tokens/s, Running: 31 reqs, Waiting: 0 reqs, GPU KV cache usage: 14.9%, "
        "Prefix cache hit rate: 0.0%",
        "",
        'request body: {"model": "qwen3-next", "cache_salt": "b1e0f0a2-6d7c", "messages": [...]}',
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert (top.category, top.rule) == ("other", "near_miss") and "cache_salt" in top.title


def test_a_short_catalog_text_inside_a_longer_message_is_no_match_of_that_site():
    """FlashInfer's kernel check whose message is only "internal error" is not what "Request cmpl-8 failed with an
    internal error during generation" (the API server's note) reports."""
    from vllm_diag.catalog.match import match_message

    msg = "Request cmpl-8b7a459f5019a2ad failed with an internal error during generation"
    assert not [m for m in match_message(msg) if m.score >= 0.75 and m.site.message == "internal error"]
