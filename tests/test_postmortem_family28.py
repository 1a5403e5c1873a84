"""Post-mortem, round twenty-eight: pydantic's error ending at its own "For further information" line, a client's
transport error for a stream a proxy cut, Envoy's access log, latency said in 초 / 秒, the Mamba 'all' cache mode's
blocks, the stat logger's num_gpu_blocks line, and drafts lost only in the intervals that prefill prompts. The reports
are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_REMOVED_ARCH = [
    "$ vllm serve acme/old-hybrid --trust-remote-code --enable-prefix-caching",
    "(APIServer pid=55) Traceback (most recent call last):",
    '(APIServer pid=55)   File "/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1955, in create_model_config',
    "(APIServer pid=55)     return ModelConfig(",
    '(APIServer pid=55)   File "/venv/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", line 121, in __init__',
    "(APIServer pid=55)     s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
    "(APIServer pid=55) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
    "(APIServer pid=55)   Value error, Model architecture Phi4FlashForCausalLM was supported in vLLM until v0.10.2, and is "
    "not supported anymore. Please use an older version of vLLM if you want to use this model architecture. "
    "[type=value_error, input_value=ArgsKwargs((), {'model': ...}), input_type=ArgsKwargs]",
    "(APIServer pid=55)     For further information visit https://errors.pydantic.dev/2.12/v/value_error",
    ">>> server exited rc=1 after 9.8s, skipping bench",
    "=== [4/5] acme/other-hybrid | prefix_caching=on ===",
    "(APIServer pid=56) INFO 12-05 16:40:20 [interface.py:1096] Setting attention block size to 432 tokens to ensure "
    "that attention page size is >= mamba page size.",
]


def test_a_pydantic_error_ends_at_its_further_information_line():
    """The next run's start-up lines after pydantic's last line are not the error's message: the removed architecture
    is the error, outside the families (not the page sizes a later run printed)."""
    facts = facts_from_text("\n".join(_REMOVED_ARCH))
    root = facts.exceptions[-1]
    assert "supported in vLLM until v0.10.2" in root.message and "page size" not in root.message
    top = _analyze(_REMOVED_ARCH).findings[0]
    assert top.category == "other"


def test_a_multi_error_pydantic_message_keeps_its_next_error():
    lines = ["pydantic_core._pydantic_core.ValidationError: 2 validation errors for SpeculativeConfig",
             "num_speculative_tokens",
             "  Input should be greater than 0 [type=greater_than, input_value=0, input_type=int]",
             "    For further information visit https://errors.pydantic.dev/2.12/v/greater_than",
             "method",
             "  Input should be 'ngram' or 'mtp' [type=literal_error, input_value='mpt', input_type=str]"]
    message = facts_from_text("\n".join(lines)).exceptions[-1].message
    assert "greater than 0" in message and "literal_error" in message


def test_the_removed_architecture_message_alone_is_a_near_miss():
    from vllm_diag.postmortem.nearmiss import near_miss

    assert near_miss("Model architecture Phi4FlashForCausalLM was supported in vLLM until v0.10.2, and is not "
                     "supported anymore.") == "unsupported architecture"


_CUT_STREAM = [
    "Long summaries die with `httpx.RemoteProtocolError: peer closed connection without sending complete message body "
    "(incomplete chunked read)`. It started the day we enabled MTP + prefix caching on this model.",
    "vllm serve acme/hybrid-397b -tp 8 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
    "(APIServer pid=1) INFO 12-04 09:13:03 [async_llm.py:721] Aborted request(s) chatcmpl-b81f.",
    '[2025-12-04T09:12:03.548Z] "POST /v1/chat/completions HTTP/1.1" 200 UT response_timeout 186421 1187 60001 - '
    '"10.60.4.21" "python-httpx/0.28.1" "c1f0" "llm-gw.internal" "10.60.12.37:8000"',
]


def test_a_stream_cut_by_envoys_route_timeout_is_the_proxy_not_the_drafts():
    """The client's transport error is the symptom, Envoy's UT flag at 60,001 ms the cause: outside the families."""
    top = _analyze(_CUT_STREAM).findings[0]
    assert top.category == "other" and "proxy" in top.title
    facts = facts_from_text("\n".join(_CUT_STREAM))
    assert facts.startup["envoy_response_flags"] == "UT"
    assert facts.startup["duration_ms"] == 60001 and facts.startup["bytes_sent"] == 1187
    assert facts.startup["request_time_s"] == 60.001


def test_a_clients_transport_error_alone_is_a_near_miss_not_the_prefix_cache_it_mentions():
    top = _analyze(_CUT_STREAM[:2]).findings[0]
    assert top.category == "other"


def test_latency_said_in_seconds_written_cho_or_byo_is_slow():
    for said in ("피크 시간에 TTFT p50 이 20초 넘게 나옵니다", "TTFT 平均 12 秒 かかります"):
        assert facts_from_text(said).startup.get("slow_prose"), said
    assert not facts_from_text("TTFT 가 0.4초 정도").startup.get("slow_prose")


def _stats(running: int, waiting: int, usage: float, prompt: float = 3000.0) -> str:
    return (f"(APIServer pid=388) INFO 11-21 12:31:50 [loggers.py:225] Engine 000: Avg prompt throughput: {prompt} "
            f"tokens/s, Avg generation throughput: 221.4 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
            f"GPU KV cache usage: {usage}%, Prefix cache hit rate: 46.0%")


_ALL_MODE = [
    "Stuck at ~43 running requests, never goes above ~43 while 200 wait; prompts ~600 tokens each.",
    "vllm serve acme/granite-h-small --max-num-seqs 256 --enable-prefix-caching",
    "(EngineCore_DP0 pid=602) WARNING 11-21 12:04:19 [config.py:422] Mamba cache mode is set to 'all' for "
    "GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
    "(EngineCore_DP0 pid=602) INFO 11-21 12:04:19 [interface.py:774] Setting attention block size to 528 tokens to "
    "ensure that attention page size is >= mamba page size.",
    "(EngineCore_DP0 pid=602) INFO 11-21 12:05:19 [kv_cache_utils.py:2146] GPU KV cache size: 339,968 tokens",
    _stats(43, 212, 99.1),
    'vllm:cache_config_info{block_size="528",enable_prefix_caching="True",mamba_cache_mode="all",num_gpu_blocks="862"} 1.0',
]


def test_the_all_cache_mode_holds_a_state_per_block_of_tokens_in_every_mamba_group():
    """In 'all' mode each Mamba group holds a block per 528 tokens, as attention does: a 600-token request holds 2 per
    group; 862 blocks at 99 % over 43 requests is ~20 each, 2 for attention and ~9 groups x 2 for the states."""
    top = _analyze(_ALL_MODE).findings[0]
    assert top.category == "mamba_block_budget"
    assert top.numbers["state_blocks_per_group"] == 2 and top.numbers["num_gpu_blocks"] == 862
    assert "~9 group(s) x 2" in top.basis


def test_the_stat_loggers_num_gpu_blocks_line_gives_the_pool():
    line = ("Mar 30 13:04:03 h vllm[9120]: (APIServer pid=9120) INFO 03-30 13:04:03 [loggers.py] Engine 000: vllm "
            "cache_config_info with initialization after num_gpu_blocks is: 273")
    facts = facts_from_text(line)
    assert facts.startup["cache_config"]["num_gpu_blocks"] == 273 and facts.numbers["num_gpu_blocks"] == 273


def test_a_conversations_tokens_total_is_the_request_length():
    facts = facts_from_text("a chat workload (short convs, mostly 1-2k tokens total) on the new model")
    assert facts.startup["request_tokens_prose"] == 1000


def _spec(length: float) -> str:
    return (f"(APIServer pid=2001) INFO 11-27 14:10:20 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
            f"{length}, Accepted throughput: 1019.21 tokens/s, Drafted throughput: 3253.50 tokens/s, Accepted: 10192 "
            "tokens, Drafted: 32535 tokens, Avg Draft acceptance rate: 31.3%")


def _acceptance_report(model: str, tail: float) -> list[str]:
    return ["MTP acceptance falls apart under load, quality is fine.",
            f"vllm serve {model} -tp 2 --no-enable-prefix-caching "
            "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
            "(EngineCore_DP0 pid=2210) INFO 11-27 13:50:41 [interface.py:912] Setting attention block size to 1056 "
            "tokens to ensure that attention page size is >= mamba page size." if "Next" in model else "",
            _stats(32, 0, 3.1, 6231.7), _spec(1.94), _stats(32, 0, 3.3, 5870.2), _spec(2.07),
            _stats(19, 0, 2.0, 0.0), _spec(tail)]


def test_drafts_lost_only_in_the_intervals_that_prefill_are_the_mixed_batch_on_a_hybrid():
    facts = facts_from_text("\n".join(_acceptance_report("Qwen/Qwen3-Next-80B-A3B", 3.21)))
    assert "1.94-2.07" in facts.startup["acceptance_by_prefill"] and "vs 3.21" in facts.startup["acceptance_by_prefill"]
    top = _analyze(_acceptance_report("Qwen/Qwen3-Next-80B-A3B", 3.21)).findings[0]
    assert top.category == "mixed_batch"


def test_no_mixed_batch_from_the_metrics_when_the_tail_is_close_or_the_model_is_dense():
    assert "acceptance_by_prefill" not in facts_from_text("\n".join(_acceptance_report("Qwen/Qwen3-Next-80B-A3B", 2.3))).startup
    findings = _analyze(_acceptance_report("acme/dense-70b", 3.21)).findings
    assert not any(f.category == "mixed_batch" for f in findings)


def test_thinking_in_a_content_with_escaped_quotes_is_read():
    line = ('     "content": "Okay, the vendor is \\"Hartmann GmbH\\", the total ... wait\\n</think>\\n\\n{\\"vendor\\": '
            '\\"Hartmann GmbH\\"}",')
    assert "</think>" in facts_from_text(line).startup["thinking_in_content"]


def test_the_answer_in_the_reasoning_field_is_read_as_the_answer_returned_as_reasoning():
    line = ('{"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[],"reasoning":"The capital of '
            'Australia is Canberra."},"finish_reason":"stop"}')
    assert "Canberra" in facts_from_text(line).startup["answer_as_reasoning"]


def test_collect_envs_padded_fields_give_the_torch_build_and_the_driver():
    lines = ["PyTorch version              : 2.11.0+cu130", "CUDA used to build PyTorch   : 13.0",
             "Nvidia driver version        : 550.144.03"]
    st = facts_from_text("\n".join(lines)).startup
    assert st["torch_cuda_tag"] == 130 and st["torch_cuda_version"] == 13.0 and st["driver_version"] == "550.144.03"


def test_an_indented_kubernetes_event_after_a_prefixed_exception_is_not_its_message():
    lines = ["2026-11-18T07:21:16.42Z (EngineCore_DP0 pid=212) Traceback (most recent call last):",
             '2026-11-18T07:21:16.42Z (EngineCore_DP0 pid=212)   File "/venv/vllm/v1/core/kv_cache_utils.py", line 1120, '
             "in unify_kv_cache_spec_page_size",
             "2026-11-18T07:21:16.42Z (EngineCore_DP0 pid=212)     raise NotImplementedError(",
             "2026-11-18T07:21:16.43Z (EngineCore_DP0 pid=212) NotImplementedError: Layer model.layers.3.self_attn.attn: "
             "page size is not divisible by the maximum page size and cannot be padded.",
             "2026-11-18T07:21:16.44Z (APIServer pid=1) Traceback (most recent call last):",
             '2026-11-18T07:21:17.27Z (APIServer pid=1)   File "/usr/local/bin/vllm", line 10, in <module>',
             "2026-11-18T07:21:18.79Z (APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause "
             "above. Failed core proc(s): {}",
             "2026-11-18T07:21:20.20Z   kubelet  Back-off restarting failed container vllm in pod serve-x8wqp",
             '2026-11-18T07:21:25.45Z  kubelet  Readiness probe failed: Get "http://10.2.14.7:8000/health": dial tcp '
             "10.2.14.7:8000: connect: connection refused"]
    assert facts_from_text("\n".join(lines)).exceptions[-1].message.endswith("{}")
    assert _analyze(lines).findings[0].category == "kv_page_size"


def test_acceptance_said_to_be_the_same_is_no_acceptance_complaint():
    said = "Spec decode acceptance looks the same on both, KV usage is low, nothing preempted."
    assert not facts_from_text(said).startup.get("acceptance_prose")
    assert facts_from_text("MTP acceptance halves as soon as there is prefill traffic").startup.get("acceptance_prose")


_EAGER_PROD = [
    "Prod gives only ~1/3 of the decode tok/s we get on the staging box, same image and GPUs.",
    "EXTRA_ARGS is `--enforce-eager` (added last month while someone debugged a startup hang).",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enforce-eager "
    "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
    '(staging log has "Graph capturing finished in 31 secs, took 1.12 GiB" at this point, prod has nothing)',
]


def test_a_share_of_another_setups_rate_is_slow_and_a_quoted_capture_line_is_another_runs():
    """The staging run's capture line quoted in a sentence does not make the eager prod run one with graphs."""
    assert facts_from_text(_EAGER_PROD[0]).startup.get("slow_prose")
    top = _analyze(_EAGER_PROD).findings[0]
    assert top.category == "other" and "eager" in top.title


def test_a_clients_per_turn_log_lines_show_the_prompts_doubling():
    lines = [f"session=7f3a turn={i + 1} prompt_tokens={n}   completion_tokens=97   cached_tokens=0"
             for i, n in enumerate((2210, 4698, 9689, 19630))]
    assert "2,210 -> 4,698 -> 9,689" in facts_from_text("\n".join(lines)).startup["prompt_growth"]


def test_a_record_with_its_timestamp_but_no_logger_location_is_still_a_record():
    from vllm_diag.postmortem.lines import clean_line

    line = clean_line("(Worker_TP0 pid=8) ERROR 09-03 17:24:14 torch.OutOfMemoryError: CUDA out of memory.", 1)
    assert line.level == "ERROR" and line.text.startswith("torch.OutOfMemoryError")
    frame = clean_line('(Worker_TP0 pid=8) ERROR 09-03 17:24:14   File "x.py", line 3, in f', 2)
    assert frame.text == '  File "x.py", line 3, in f'


def test_an_error_the_engine_relays_is_read_from_its_cause():
    """The engine relays the worker's RuntimeError, which the worker raised from torch's out-of-memory error: the cause
    is the root, with the allocation's numbers."""
    w = "(Worker_TP0 pid=8) ERROR 09-03 17:24:14"
    lines = [f"{w} Traceback (most recent call last):",
             f'{w}   File ".../vllm/v1/sample/sampler.py", line 287, in sample',
             f"{w} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.89 GiB. GPU 0 has a total capacity "
             "of 139.81 GiB of which 1.07 GiB is free.",
             f"{w}", f"{w} The above exception was the direct cause of the following exception:", f"{w}",
             f"{w} Traceback (most recent call last):",
             f'{w}   File ".../vllm/v1/worker/gpu_model_runner.py", line 6321, in _dummy_sampler_run',
             f"{w}     raise RuntimeError(",
             f"{w} RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests.",
             "(EngineCore_DP0 pid=7) RuntimeError: Worker failed with error 'CUDA out of memory occurred when warming up "
             "sampler with 1024 dummy requests.', please check the stack trace above for the root cause"]
    facts = facts_from_text("\n".join(lines))
    assert facts.root is not None and facts.root.exc_type == "torch.OutOfMemoryError"
    top = _analyze(lines).findings[0]
    assert top.category == "other" and top.numbers["oom_tried_gib"] == 1.89 and top.numbers["gpu_free_gib"] == 1.07


def test_proxy_timeouts_left_at_their_defaults_are_nginxs_60_seconds():
    facts = facts_from_text("- ingress annotations on the llm.internal Ingress: none for proxy timeouts (defaults).")
    assert facts.startup["proxy_read_timeout_s"] == 60


def test_an_elision_naming_the_calls_left_out_with_an_arrow_keeps_the_traceback():
    w = "(Worker_TP1 pid=8817) ERROR 11-29 05:02:40 [multiproc_executor.py:1047]"
    lines = [f'{w}   File ".../vllm/v1/worker/mamba_utils.py", line 1364, in postprocess_mamba_align_gpu',
             f"{w}     ctx.run_fused_postprocess(",
             f"{w}   [... mamba_utils.py run_fused_postprocess -> triton/runtime/jit.py launcher frames ...]",
             f"{w} torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
    root = facts_from_text("\n".join(lines)).exceptions[-1]
    assert [f.function for f in root.frames] == ["postprocess_mamba_align_gpu"]


def test_a_line_of_several_flags_beside_a_flag_with_unquoted_json_keeps_each_flag():
    lines = ["deployment args:",
             "  --model nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 -tp 2 --enable-prefix-caching --max-num-seqs 96",
             '  --speculative-config {"method":"eagle3","model":"/models/drafts/eagle3","num_speculative_tokens":3}']
    args = facts_from_text("\n".join(lines)).args
    assert args["model"] == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    assert args["tensor_parallel_size"] == 2 and args["max_num_seqs"] == 96 and args["num_speculative_tokens"] == 3


def test_drafts_lost_in_the_intervals_of_heavy_prefill_against_those_of_light_chat_prefill():
    """Chat prompts prefill a little in every interval; the batch job's long prompts a lot: the heavy intervals are
    the ones that lose the drafts."""
    lines = ["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 "
             "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":3}'",
             _stats(38, 0, 3.0, 1822.4), _spec(2.74), _stats(61, 7, 41.8, 33870.6), _spec(1.48),
             _stats(35, 0, 2.7, 1610.0), _spec(2.71)]
    said = facts_from_text("\n".join(lines)).startup["acceptance_by_prefill"]
    assert "1.48 in the intervals that prefilled the most" in said and "2.71-2.74" in said


def test_the_same_workload_fine_without_the_drafts_does_not_rule_them_out():
    for said, cleared in (("Same thing without EAGLE3 is smooth (no cliff).", False),
                          ("Same behaviour without --speculative-config, still slow.", True)):
        facts = facts_from_text(said + "\nvllm serve acme/qwen3-next-80b --speculative-config "
                                "'{\"method\":\"eagle3\",\"model\":\"acme/eagle3\",\"num_speculative_tokens\":2}'")
        assert bool(facts.startup.get("faults_without_spec_prose")) is cleared, said


def test_the_graph_capture_time_is_read():
    line = ("(EngineCore_DP0 pid=233) INFO 08-14 06:12:21 [gpu_model_runner.py:6845] Graph capturing finished in 21 "
            "secs, took 0.81 GiB")
    assert facts_from_text(line).startup["cudagraph_capture_secs"] == 21


def test_the_kernels_oom_kill_line_gives_the_process_and_its_memory():
    st = facts_from_text("[Sat Nov 22 03:44:07 2026] Out of memory: Killed process 60912 (python3) "
                         "total-vm:96047040kB, anon-rss:91926408kB, file-rss:0kB").startup
    assert st["oom_killed_pid"] == 60912 and st["oom_killed_process"] == "python3" and st["anon_rss_kb"] == 91926408


def test_a_bare_torch_version_line_gives_its_cuda_build():
    st = facts_from_text('$ python -c "import torch; print(torch.__version__, torch.version.cuda)"\n2.10.0+cu130 13.0').startup
    assert st["torch_cuda_tag"] == 130 and st["torch_cuda_version"] == 13.0


def test_the_memory_profilers_free_memory_check_gives_both_readings():
    from vllm_diag.postmortem.numbers import message_numbers

    assert message_numbers("Error in memory profiling. Initial free memory 38.12 GiB, current free memory 41.87 GiB.") \
        == {"initial_free_memory_gib": 38.12, "current_free_memory_gib": 41.87}


def test_one_request_at_a_time_is_the_client_not_the_engine():
    """Serving said slow while every stats line runs one request with none waiting: the client sends them one after
    another."""
    lines = ["Nemotron 3 Nano is super slow on GH200 -- 140 tok/s total, the job ETA is 9 days.",
             "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --max-num-seqs 512 --enable-prefix-caching",
             _stats(1, 0, 0.1, 402.7), _stats(1, 0, 0.1, 389.9)]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "none waiting" in top.title
    busy = _analyze(lines[:2] + [_stats(60, 0, 12.0, 402.7)]).findings
    assert not any("none waiting" in f.title for f in busy[:1])


def test_latency_said_to_be_high_is_slow_and_an_answer_in_reasoning_told_in_words_is_read():
    assert facts_from_text("TPOT is very high (~68 ms) even at low load").startup.get("slow_prose")
    told = ('for every request the response JSON has "content": null and the whole answer text is inside '
            '"reasoning_content".')
    assert facts_from_text(told).startup.get("answer_as_reasoning")


def test_a_gateway_routes_timeout_is_read_as_the_proxys():
    st = facts_from_text("route config: `timeout: 60s` (default for all routes, nobody changed it)").startup
    assert st["route_timeout_s"] == 60 and "timeout: 60s" in st["proxy_timeout_prose"]


def test_the_hosts_iommu_refusing_the_gpus_dma_is_the_platform_not_the_hybrid():
    lines = ["TP=2 on a KVM guest: the first request hangs; hybrid Mamba + prefix caching on.",
             "vllm serve tiiuae/Falcon-H1-34B-Instruct --tensor-parallel-size 2 --enable-prefix-caching",
             "[ 8123.442150] NVRM: Xid (PCI:0000:00:05): 31, pid=4410, name=python3, Ch 00000008, intr 00000000. MMU "
             "Fault: ENGINE CE3 HUBCLIENT_CE1 faulted @ 0x7f2a_c0000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
             "[2391.118] DMAR: [DMA Write NO_PASID] Request device [3b:00.0] fault addr 0x38e000000000 [fault reason "
             "0x05] PTE Write access is not set"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "IOMMU" in top.title


def test_newer_ncclS_named_ib_completion_status_and_vendor_error_are_read():
    line = ("gpu-b14:19822:20511 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            "10.40.2.13<45811> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=524288 vendor_err=129")
    numbers = facts_from_text(line).numbers
    assert numbers["ib_completion_status"] == 12 and numbers["ib_vendor_err"] == 129


def test_each_known_xid_is_also_named_by_its_meaning():
    lines = ["NVRM: Xid (PCI:0000:47:00): 48, pid=90517, name=VLLM::Worker_TP, An uncorrectable double bit error (DBE)",
             "NVRM: Xid (PCI:0000:47:00): 63, pid=90517, name=VLLM::Worker_TP, Row Remapper: New row marked for remapping"]
    st = facts_from_text("\n".join(lines)).startup
    assert st["xids"] == [48, 63] and st["xid_double_bit_ecc"] == 48 and st["xid_row_remap"] == 63


def test_older_gpus_carry_their_compute_capability():
    from vllm_diag.preflight.predict import parse_gpu

    assert parse_gpu("Tesla V100-SXM2-32GB").compute_capability == (7, 0)
    assert parse_gpu("Tesla T4").compute_capability == (7, 5)
    assert parse_gpu("NVIDIA A40").compute_capability == (8, 6)


def test_the_smi_header_gives_the_drivers_cuda_after_collect_envs_driver_line():
    text = ("Nvidia driver version        : 535.247.01\n"
            "nvidia-smi header: `NVIDIA-SMI 535.247.01   Driver Version: 535.247.01   CUDA Version: 12.2`")
    st = facts_from_text(text).startup
    assert st["driver_version"] == "535.247.01" and st["driver_cuda_version"] == 12.2


def test_a_different_comma_wrong_answer_is_wrong_output():
    said = "Qwen3.5 with MTP + prefix caching: second identical request (greedy) gives different, wrong answer"
    assert facts_from_text(said).startup.get("wrong_output_prose") == "gives different, wrong answer"


def test_speed_at_half_or_low_in_korean_chinese_and_japanese_is_slow():
    for said in ("생성 속도가 절반 정도밖에 안 나옵니다", "MTP 처리량이 이상하게 낮습니다", "速度只有一半", "スループットが半分になった"):
        assert facts_from_text(said).startup.get("slow_prose"), said
