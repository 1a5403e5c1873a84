"""Post-mortem, round twenty-five: the numbers of what reports paste beside vLLM's log (nvidia-smi, a proxy's access
log, a JSON error, a traceback with the reporter's elisions) and two readings of slow or capped serving. The reports
are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def test_a_bracketed_elision_inside_a_traceback_keeps_the_frames_before_it():
    """"[...]" and "[... model forward, torch.compile frames ...]" stand for frames the reporter cut: the frames
    printed before them are still the same traceback, so the vLLM kernel that launched the failing Triton kernel is
    its innermost vLLM frame."""
    w = "(EngineCore_DP0 pid=40399) ERROR 10-28 15:31:52 [core.py:708] "
    text = [
        w + "Traceback (most recent call last):",
        w + '  File "/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3392, in profile_run',
        w + "    hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)",
        w + "  [... model forward, torch.compile frames ...]",
        w + '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/layers/mamba/ops/ssd_chunk_scan.py", '
            "line 467, in _chunk_scan_fwd",
        w + "    _chunk_scan_fwd_kernel[grid](",
        w + "  [...]",
        w + '  File "/venv/lib/python3.12/site-packages/triton/compiler/compiler.py", line 488, in _init_handles',
        w + '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")',
        w + "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: "
            "98304. Reducing block sizes or `num_stages` may help.",
    ]
    facts = facts_from_text("\n".join(text))
    assert [f.line for f in facts.root.frames] == [3392, 467, 488]
    assert facts.numbers["ssd_chunk_scan_line"] == 467 and facts.numbers["gpu_model_runner_line"] == 3392
    # an elision on its own, outside a traceback, is no part of the message before it
    plain = facts_from_text("ValueError: bad value\n   [...]\n")
    assert plain.root.message == "bad value"


def test_nvidia_smi_q_max_clocks_and_temperature_thresholds():
    """nvidia-smi -q prints the SM clock in its Clocks section and again under Max Clocks: the first is the clock the
    GPU ran at, the second its ceiling; the slowdown and shutdown temperatures are the throttling thresholds."""
    facts = facts_from_text("\n".join([
        "nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE -i 1",
        "    Temperature",
        "        GPU Current Temp                  : 89 C",
        "        GPU Shutdown Temp                 : 95 C",
        "        GPU Slowdown Temp                 : 87 C",
        "    Applications Clocks",
        "        Graphics                          : 1755 MHz",
        "        SM                                : 1755 MHz",
        "    Clocks",
        "        Graphics                          : 885 MHz",
        "        SM                                : 885 MHz",
        "    Max Clocks",
        "        Graphics                          : 1980 MHz",
        "        SM                                : 1980 MHz",
    ]))
    st = facts.startup
    assert (st["gpu_temp_c"], st["slowdown_temp_c"], st["shutdown_temp_c"]) == (89, 87, 95)
    assert (st["sm_clock_mhz"], st["max_sm_clock_mhz"]) == (885, 1980)


def test_the_throttled_row_of_a_query_gpu_csv():
    """A --query-gpu CSV: the row whose clocks_event_reasons.active mask has a thermal bit (0x40 HW thermal, 0x20 SW
    thermal) is the throttled GPU, and its temperature and clocks are the numbers; a healthy table says nothing."""
    head = ("index, temperature.gpu, power.draw [W], clocks.sm [MHz], clocks.max.sm [MHz], "
            "clocks_event_reasons.active")
    facts = facts_from_text("\n".join([head, "0, 61, 402.10 W, 1980 MHz, 1980 MHz, 0x0000000000000000",
                                       "1, 91, 198.77 W, 975 MHz, 1980 MHz, 0x0000000000000060"]))
    st = facts.startup
    assert "GPU 1" in st["gpu_throttled_prose"] and "0x0000000000000060" in st["gpu_throttled_prose"]
    assert (st["gpu_temp_c"], st["sm_clock_mhz"], st["max_sm_clock_mhz"], st["power_draw_w"]) == (91, 975, 1980, 198)
    assert st["throttled_gpu_index"] == 1
    # no reason column: a GPU at 85 C or more and under 70 % of its top clock is throttled; a busy cool one is not
    bare = facts_from_text("index, temperature.gpu, clocks.sm [MHz], clocks.max.sm [MHz]\n0, 62, 2490 MHz, 2520 MHz\n"
                           "1, 91, 1035 MHz, 2520 MHz\n")
    assert bare.startup["throttled_gpu_index"] == 1 and bare.startup["sm_clock_mhz"] == 1035
    calm = facts_from_text(head + "\n0, 70, 350.00 W, 1980 MHz, 1980 MHz, 0x0000000000000004\n")  # SW power cap only
    assert "gpu_throttled_prose" not in calm.startup and "throttled_gpu_index" not in calm.startup


def test_a_proxy_access_logs_timings_for_the_first_failed_request():
    """nginx with named timings and ingress-nginx's default format: the request and upstream times of the first
    request the proxy failed (a 504 at 60.001 s is its 60 s read timeout); answered requests say nothing."""
    named = facts_from_text("\n".join([
        '10.44.7.19 - - [18/Apr/2026:10:21:02 +0000] "POST /v1/chat/completions HTTP/1.1" 200 8817 "-" '
        '"python-httpx/0.27.2" rt=12.300 uct=0.001 urt=12.299',
        '10.44.7.19 - - [18/Apr/2026:10:22:07 +0000] "POST /v1/chat/completions HTTP/1.1" 504 160 "-" '
        '"python-httpx/0.27.2" rt=60.001 uct=0.001 urt=60.001',
    ]))
    assert (named.startup["request_time_s"], named.startup["upstream_response_time_s"],
            named.startup["upstream_connect_time_s"]) == (60.001, 60.001, 0.001)
    ingress = facts_from_text(
        '10.20.9.175 - - [28/Nov/2026:15:00:43 +0000] "POST /v1/chat/completions HTTP/1.1" 504 562 "-" '
        '"python-httpx/0.28.1" 11779 60.001 [llm-r1-8000] [] 10.8.3.21:8000 0 60.000 504 0d3c\n')
    assert (ingress.startup["request_time_s"], ingress.startup["upstream_response_time_s"]) == (60.001, 60.0)
    assert facts_from_text("    proxy_buffer_size 64k;\n").startup["proxy_buffer_size_k"] == 64
    assert facts_from_text('nginx.ingress.kubernetes.io/proxy-buffer-size: "256k"\n').startup["proxy_buffer_size_k"] == 256
    ok = facts_from_text('1.2.3.4 - - [x] "POST /v1/completions HTTP/1.1" 200 10 "-" "curl/8" rt=1.2 urt=1.2\n')
    assert "request_time_s" not in ok.startup


def test_pythons_json_error_position():
    """A tool-call parser failing on the model's text: json's "line L column C (char P)" are where the parse
    stopped, not a count of columns."""
    w = "(APIServer pid=90211) ERROR 11-21 17:40:09 [hermes_tool_parser.py:117] "
    facts = facts_from_text("\n".join([
        w + "Error in extracting tool call from response.",
        w + "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 59 (char 58)",
    ]))
    assert (facts.numbers["json_line"], facts.numbers["json_column"], facts.numbers["json_char"]) == (1, 59, 58)
    assert facts.numbers.get("column") is None


def test_the_system_prompts_size_in_the_reporters_words():
    for text, n in [("Our traffic: system prompt is ~620 tokens (same for everyone), then short turns.", 620),
                    ("our agent has a ~6500 token system prompt (tool schemas)", 6500),
                    ("a 6.5k-token system prompt", 6500)]:
        assert facts_from_text(text + "\n").startup["system_prompt_tokens"] == n, text
    same = facts_from_text("system prompt (same for everyone, 812 tokens w/ chat template)\n").startup
    assert same["system_prompt_tokens"] == same["shared_prefix_tokens"] == 812  # the same for all: a shared prefix
    assert "shared_prefix_tokens" not in facts_from_text("a 6.5k-token system prompt\n").startup
    # the number of the turns after it is not the system prompt's
    assert "system_prompt_tokens" not in facts_from_text("system prompt, then user turns of 200 tokens\n").startup


def _slow_tp4(env_line: str) -> list[str]:
    w, t = "(EngineCore_DP0 pid=1) ", "(Worker_TP0 pid=214) "
    return [
        "single-stream decode is ~27 tok/s, the model card / blog numbers suggest ~3x that with MTP on H100. no errors.",
        "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 --tensor-parallel-size 4 --enable-prefix-caching "
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        env_line,
        w + "INFO 11-26 07:51:40 [interface.py:911] Setting attention block size to 1056 tokens to ensure that "
            "attention page size is >= mamba page size.",
        t + "INFO 11-26 07:51:58 [pynccl.py:103] vLLM is using nccl==2.28.3",
        "(APIServer pid=1) INFO 11-26 08:10:44 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
        "generation throughput: 27.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix "
        "cache hit rate: 0.0%",
        "nvidia-smi topo -m on the node shows NV18 between all 4 GPUs, so nvlink is there.",
    ]


def test_slow_tensor_parallel_decode_with_peer_to_peer_turned_off_in_the_environment():
    """A deployment's environment setting NCCL_P2P_DISABLE=1 on an NVLink node: every all-reduce goes through host
    memory. With the reporter's words that decode is slow against the model card, that is the slowdown -- outside the
    families -- whether the setting is a manifest's entry or NCCL's own INFO line."""
    for env in ('    - {name: NCCL_P2P_DISABLE, value: "1"}',
                "vllm-0:214:214 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
                "export NCCL_P2P_DISABLE=1"):
        top = _analyze(_slow_tp4(env)).findings[0]
        assert top.category == "other" and "NCCL_P2P_DISABLE=1" in top.title, env
    # without the setting (and without vLLM's own word that custom all-reduce is off) nothing says P2P
    assert not any("P2P" in f.title for f in _analyze(_slow_tp4("")).findings)


def test_a_running_count_held_far_below_max_num_seqs_by_state_blocks_under_drafts():
    """"Running never passes ~106" with short chats, KV usage at 99 % and num_gpu_blocks 1488 on a GDN hybrid under
    MTP k=3: each request holds ~14 blocks -- far more than its ~2k tokens need -- which is the Mamba groups' 1 + k
    state blocks each (family E), not the workload."""
    e, a = "(EngineCore_DP0 pid=877) ", "(APIServer pid=702) "
    text = [
        "Qwen3.5-35B-A3B + MTP caps at ~106 running requests, KV cache full with tiny contexts (vllm 0.20.2, 1x H100)",
        "workload: short chats, prompt ~1.5k tokens, output <= 400 tokens. Running never passes ~106.",
        "vllm serve Qwen/Qwen3.5-35B-A3B-FP8 --max-model-len 4096 --max-num-seqs 256 "
        "--speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":3}'",
        e + "INFO 02-09 10:11:31 [interface.py:607] Setting attention block size to 1056 tokens to ensure that "
            "attention page size is >= mamba page size.",
        e + "INFO 02-09 10:12:38 [kv_cache_utils.py:1708] GPU KV cache size: 1,571,328 tokens",
        e + "INFO 02-09 10:12:38 [kv_cache_utils.py:1710] Maximum concurrency for 4,096 tokens per request: 183.60x",
        a + "INFO 02-09 11:30:04 [loggers.py:224] Engine 000: Avg prompt throughput: 6012.5 tokens/s, Avg generation "
            "throughput: 3870.2 tokens/s, Running: 106 reqs, Waiting: 214 reqs, GPU KV cache usage: 99.3%, Prefix cache "
            "hit rate: 0.0%",
    ]
    facts = facts_from_text("\n".join(text))
    assert facts.startup["capacity_prose"]
    top = _analyze(text).findings[0]
    assert top.category == "mamba_block_budget"
    assert top.numbers["num_speculative_tokens"] == 3 and top.numbers["num_requests_running_at_full"] == 106


def test_the_cuda_of_a_driver_too_old_a_torch_build_and_a_containers_cpu_limit():
    """PyTorch's "driver ... too old (found version 12020)" is the driver's CUDA as CUDA encodes it, kept apart from
    nvidia-smi's "CUDA Version: 12.2" of the same report; pip's torch wheel tag is the CUDA it was built for; a pod's
    CPU limit, inline or in a limits block, is in cores."""
    facts = facts_from_text("\n".join([
        "| NVIDIA-SMI 535.183.01   Driver Version: 535.183.01   CUDA Version: 12.2 |",
        "torch                     2.11.0+cu130",
        "(Worker_TP0 pid=5) ERROR 11-02 10:00:01 [multiproc_executor.py:597] RuntimeError: The NVIDIA driver on your "
        "system is too old (found version 12020). Please update your GPU driver.",
        "resources:",
        "  limits:",
        "    nvidia.com/gpu: 1",
        '    cpu: "3500m"',
    ]))
    st = facts.startup
    assert st["driver_cuda_version"] == 12.2 and st["driver_cuda_version_found"] == 12020
    assert (st["torch_cuda_tag"], st["torch_cuda_version"]) == (130, 13.0)
    assert st["cpu_limit_cores"] == 3.5
    assert facts_from_text('    limits:   {nvidia.com/gpu: 2, cpu: "2", memory: 96Gi}\n').startup["cpu_limit_cores"] == 2
    assert "cpu_limit_cores" not in facts_from_text("  requests:\n    cpu: 8\n").startup  # a request is no limit


def test_shared_memory_ecc_counts_and_a_proxys_error_page():
    """df's /dev/shm row and docker's --shm-size are the container's shared memory in MiB; nvidia-smi -q's first ECC
    section gives the volatile error counts; a proxy's error page names the status the client got."""
    shm = facts_from_text("Filesystem      Size  Used Avail Use% Mounted on\n"
                          "shm              64M   61M  3.0M  96% /dev/shm\n")
    assert shm.startup["shm_size_mb"] == 64
    assert facts_from_text("docker run --gpus all --shm-size=16g vllm/vllm-openai\n").startup["shm_size_mb"] == 16384
    ecc = facts_from_text("\n".join(["    ECC Errors", "        Volatile",
                                     "            SRAM Uncorrectable            : 3",
                                     "            DRAM Correctable              : 214",
                                     "            DRAM Uncorrectable            : 2",
                                     "        Aggregate",
                                     "            DRAM Uncorrectable            : 17"]))
    assert (ecc.startup["dram_correctable"], ecc.startup["dram_uncorrectable"], ecc.startup["sram_uncorrectable"]) \
        == (214, 2, 3)
    page = facts_from_text("openai.InternalServerError: <html>\n<head><title>504 Gateway Time-out</title></head>\n")
    assert page.startup["http_status"] == 504
    assert facts_from_text("request_time=60.001 status=504\n").startup["http_status"] == 504


def test_the_block_table_request_mismatch_in_vllms_own_quantities():
    """mamba_attn.py asserts num_prefills + num_decodes == state_indices_tensor.shape[0]; its message's "Expected"
    and "got" are those two."""
    facts = facts_from_text("(Worker_TP0 pid=7) ERROR 11-02 10:00:01 [multiproc_executor.py:597] AssertionError: "
                            "Mismatch in number of requests when updating block table. Expected 17, got 24.\n")
    assert (facts.numbers["num_reqs"], facts.numbers["state_indices_rows"]) == (17, 24)


def _flashinfer_mtp_slower(words: str) -> list[str]:
    e = "(EngineCore pid=142) "
    return [
        f"Qwen3.5-27B on one H100, vllm 0.26.0. MTP makes decode slower for us: TPOT 21 ms without, 28 ms with k=3 "
        f"({words}).",
        "vllm serve Qwen/Qwen3.5-27B --max-model-len 32768 --max-num-seqs 64 --attention-backend FLASHINFER "
        "--enable-prefix-caching --speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":3}'",
        "(APIServer pid=1) INFO 10-09 07:55:14 [interface.py:905] Setting attention block size to 2112 tokens to ensure "
        "that attention page size is >= mamba page size.",
        e + "WARNING 10-09 07:57:32 [compilation.py:1443] CUDAGraphMode.FULL_AND_PIECEWISE is not supported with "
            "spec-decode for attention backend FlashInferBackend (support: "
            "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE",
        "(APIServer pid=1) INFO 10-09 08:20:31 [loggers.py:310] Engine 000: Avg prompt throughput: 2210.4 tokens/s, Avg "
        "generation throughput: 1082.7 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 22.1%, Prefix "
        "cache hit rate: 18.5%",
    ]


def test_slower_with_drafts_leads_with_the_capture_the_drafts_cost_not_a_word_that_acceptance_is_fine():
    """"acceptance ~2.9 mean len, so it's not the drafts being bad" says acceptance is fine; with MTP slower and vLLM's
    warning that the full graphs were dropped under spec decode, that warning answers the complaint, before the
    configuration's capacity and prefix-cache notes."""
    facts = facts_from_text("\n".join(_flashinfer_mtp_slower("acceptance ~2.9 mean len, so it's not the drafts being bad")))
    assert "acceptance_prose" not in facts.startup
    top = _analyze(_flashinfer_mtp_slower("acceptance ~2.9 mean len, so it's not the drafts being bad")).findings[0]
    assert top.category == "cudagraph_shape"
    # acceptance said to be bad is still a complaint about acceptance
    bad = facts_from_text("acceptance is fine with 1 user and terrible with several\n")
    assert bad.startup.get("acceptance_prose")


def test_acceptance_lost_only_when_structured_output_requests_are_in_the_mix_on_a_hybrid():
    """Free chat alone and json_schema alone accept well; served together acceptance collapses for both: the grammar
    cuts drafts per request, so a step mixes draft counts in the GDN builder's spec-decode rows (family D)."""
    text = [
        "MTP acceptance tanks when json_schema requests are in the mix (Qwen3.5-122B-A10B, 0.30.0)",
        "* chat only -> mean acceptance length ~2.9 (k=3); json_schema only -> ~3.1",
        "* both together -> 1.6 for both kinds; one request at a time -> 2.9 again",
        "vllm serve Qwen/Qwen3.5-122B-A10B-FP8 -tp 4 --max-model-len 32768 --speculative-config "
        "'{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":3}' --structured-outputs-config '{\"backend\":\"xgrammar\"}'",
        "(APIServer pid=1880) INFO 11-25 08:00:15 [interface.py:933] Setting attention block size to 1056 tokens to "
        "ensure that attention page size is >= mamba page size.",
        "(APIServer pid=1880) INFO 11-25 09:51:30 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 1.64, "
        "Accepted throughput: 631.70 tokens/s, Drafted throughput: 2960.30 tokens/s, Accepted: 6317 tokens, Drafted: "
        "29603 tokens",
        "Prefix caching is off on purpose.",
    ]
    assert _analyze(text).findings[0].category == "mixed_batch"


def test_the_rules_findings_of_the_complained_kind_go_first_on_a_log_without_an_error():
    """A slowdown with drafts puts a capture finding before a capacity prediction; fewer running requests the reverse;
    a report of both (or neither) keeps the rules' order."""
    from vllm_diag.model import Finding
    from vllm_diag.postmortem.analyze import _symptom_first

    def findings():
        return [Finding(rule="mamba_block_budget", category="mamba_block_budget", severity="warning", title="cap"),
                Finding(rule="prefix_cache_granularity", category="prefix_cache_degraded", severity="warning", title="pc"),
                Finding(rule="spec_cudagraph_downgrade", category="cudagraph_shape", severity="warning", title="cg")]

    slow = facts_from_text("MTP makes decode slower, TPOT 28 ms vs 21 ms without it\n")
    assert [f.title for f in _symptom_first(slow, findings())] == ["cg", "cap", "pc"]
    capped = facts_from_text("Running never passes ~40 even though max_num_seqs is 256\n")
    assert [f.title for f in _symptom_first(capped, findings())] == ["cap", "pc", "cg"]
    assert [f.title for f in _symptom_first(facts_from_text("hello\n"), findings())] == ["cap", "pc", "cg"]


def test_the_latencies_a_report_quotes_and_nvidia_smis_gpu_row():
    """PromQL over vLLM's histograms and the reporter's own "TTFT p50 4.8s, p99 19s" / "85ms TPOT" keep the report's
    unit in their names; nvidia-smi's GPU row gives utilisation and memory, its process table the engine's share; the
    worker prefix of the root error is its tensor-parallel rank."""
    facts = facts_from_text("\n".join([
        "histogram_quantile(0.99, rate(vllm:time_to_first_token_seconds_bucket[5m]))   = 0.94",
        "histogram_quantile(0.99, rate(vllm:e2e_request_latency_seconds_bucket[5m])) = 41.2",
        "symptom: TTFT p50 4.8s, p99 19s at only 20 users; ~11 tok/s per stream, 85ms TPOT",
        "| N/A   71C    P0            341W /  350W |   46012MiB /  46068MiB |    100%      Default |",
        "|    0   N/A  N/A          118842      C   python3                                 45938MiB |",
        "(Worker_TP5 pid=5526) ERROR 11-02 10:00:01 [multiproc_executor.py:597] RuntimeError: NCCL error: unhandled "
        "system error",
    ]))
    q = facts.startup["quoted_latencies"]
    assert (q["ttft_p99_s"], q["e2e_latency_p99_s"], q["ttft_p50_s"], q["tpot_ms"]) == (0.94, 41.2, 4.8, 85.0)
    st = facts.startup
    assert (st["gpu_util_pct"], st["gpu_memory_used_mib"], st["gpu_memory_total_mib"]) == (100, 46012, 46068)
    assert st["engine_process_mib"] == 45938 and facts.numbers["failed_tp_rank"] == 5
    # "TP=2" or a throughput figure is no latency
    assert "quoted_latencies" not in facts_from_text("TP=2, 1,390 out tok/s at 32 concurrent\n").startup


def test_prompts_that_double_every_turn_are_the_client_resending_its_history():
    """A gateway's usage table for one conversation of short messages whose prompt tokens double each turn: the TTFT
    complaint is the client's history, not the hybrid's block size or the drafts; a table that grows by a turn's
    length says nothing."""
    table = ["turn  prompt_tokens  completion_tokens", "1     1,204          311", "2     3,015          288",
             "3     7,406          402", "4     17,930         276"]
    text = ["TTFT on the qwen3-next support bot is terrible since the new frontend went live, p50 7.8s.",
            "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 2 --enable-prefix-caching "
            "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
            "(APIServer pid=7741) INFO 06-02 08:11:27 [interface.py:911] Setting attention block size to 544 tokens to "
            "ensure that attention page size is >= mamba page size.",
            "(APIServer pid=7741) INFO 06-02 10:42:17 [loggers.py:262] Engine 000: Avg prompt throughput: 41388.2 "
            "tokens/s, Avg generation throughput: 212.6 tokens/s, Running: 17 reqs, Waiting: 9 reqs, GPU KV cache usage: "
            "71.4%, Prefix cache hit rate: 9.1%", *table]
    facts = facts_from_text("\n".join(text))
    assert facts.startup["prompt_tokens_last"] == 17930 and "over 4 turns" in facts.startup["prompt_growth"]
    top = _analyze(text).findings[0]
    assert top.category == "other" and "history" in top.title
    steady = ["turn | prompt_tokens | completion_tokens", "1 | 1,204 | 311", "2 | 1,530 | 288", "3 | 1,911 | 402"]
    assert "prompt_growth" not in facts_from_text("\n".join(steady)).startup
    assert facts_from_text("the new frontend makes prompts double every turn\n").startup["prompt_growth"]


def test_a_per_request_header_after_any_templates_system_marker():
    """Granite's <|start_of_role|>system<|end_of_role|> opens the system turn as ChatML's <|im_start|>system does: a
    session UUID and timestamp right after it make every prompt differ from its first block."""
    facts = facts_from_text("req a1f3: <|start_of_role|>system<|end_of_role|>[session 7f2c91e0-55b3-4a0e-9d1e-0f3b7c3b2a11"
                            " | 2026-03-03 11:28:51.204 UTC]\n")
    assert "7f2c91e0" in facts.startup["varying_prefix_prose"]


def test_the_kubelets_back_off_after_a_probe_kill_is_the_same_event():
    """kubectl describe: the liveness probe failed, the kubelet killed the container (exit 137) and backs off before
    restarting it -- the back-off is no second error, so the start slower than the probe is the reading."""
    text = [
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":3}'",
        "  livenessProbe:  httpGet /health :8000, initialDelaySeconds: 300, periodSeconds: 10, failureThreshold: 3",
        "2026-02-03T10:05:12Z (APIServer pid=1) INFO 02-03 10:05:12 [launcher.py:137] Shutting down FastAPI HTTP server.",
        "Events:",
        "  Warning  Unhealthy  4m58s (x3 over 5m18s)  kubelet  Liveness probe failed: Get \"http://10.42.7.19:8000/health\": "
        "dial tcp 10.42.7.19:8000: connect: connection refused",
        "  Normal   Killing    4m58s                  kubelet  Container vllm failed liveness probe, will be restarted",
        "  Warning  BackOff    2m11s (x6 over 9m40s)  kubelet  Back-off restarting failed container vllm in pod qwen3-0",
        "    Last State:     Terminated",
        "    Exit Code:    137",
    ]
    top = _analyze(text).findings[0]
    assert top.category == "other" and "probe" in top.title and top.numbers["probe_initial_delay_seconds"] == 300


def test_greedy_answers_that_change_on_the_second_identical_request():
    for words in ("greedy output changes on the second identical request (prefix cache hit), no errors",
                  "~15% of prompts produce a different second answer"):
        assert facts_from_text(words + "\n").startup.get("wrong_output_prose"), words
    assert not facts_from_text("the output changes with the temperature setting\n").startup.get("wrong_output_prose")


def test_the_page_sizes_a_reporters_own_arithmetic_ends_on():
    """A reporter's arithmetic is read for the page size each role ends on -- not a factor (x528), a token count
    (@400 tok), a per-token size (1280 B/token) or a context length -- and kept apart from the numbers the rules
    compare."""
    facts = facts_from_text("\n".join([
        "My math: target attention is 8 kv heads x 128 dim, so 4096 B/token, x528 = 2162688 B per block; our drafter "
        "is 5 x 64 -> 1280 B/token, x528 = 675840 B. 2162688 / 675840 = 3.2.",
        "| draft attn (kv_heads 2/rank, head_dim 96, bf16) | 16 | 400 | 307200 |",
        "  MLA layer fp8: 2048 * 576 B                  = 1179648 B",
        "the draft model runs at 2048 tokens max, target 32768 context",
    ]))
    pages = facts.startup["reporter_page_sizes"]
    assert pages == {"target_page_size": 2162688, "draft_page_size": 675840, "mla_page_size": 1179648}
    assert "draft_page_size" not in facts.numbers


def test_a_record_whose_timestamp_and_location_the_reporter_replaced_by_an_elision():
    """"(Worker_TP0 pid=88512) ERROR ... AssertionError: ..." is a record with its header elided: the assert is the
    root error, not the engine's wrapper after it."""
    w = "(Worker_TP0 pid=88512) ERROR ... "
    text = [
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-num-seqs 32 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}' -O '{\"cudagraph_capture_sizes\":[128]}'",
        w + "Traceback (most recent call last):",
        w + '  File ".../vllm/v1/attention/backends/gdn_attn.py", line 522, in build_for_cudagraph_capture',
        w + "    assert (",
        w + "AssertionError: GDN only supports decode-only full CUDAGraph capture. Make sure batch size (43) <= "
            "cudagraph capture sizes (96), and number of tokens (128) <= cudagraph capture sizes (96).",
        "(EngineCore_DP0 pid=88390) ERROR ... EngineCore failed to start.",
        "(APIServer pid=88121) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {}",
    ]
    facts = facts_from_text("\n".join(text))
    assert facts.root.exc_type == "AssertionError" and facts.root.message.startswith("GDN only supports")
    assert _analyze(text).findings[0].category == "cudagraph_shape"


def test_the_answer_returned_as_reasoning_content_with_thinking_switched_off():
    """content=None beside reasoning_content='Canberra', thinking off for the request, a --reasoning-parser on the
    server: the parser read the whole answer as thinking -- not the hybrid's state or the drafts."""
    text = [
        "Qwen3.5 hybrid (GDN) + MTP returns empty content when I disable thinking. I suspect the mamba state with "
        "prefix caching gives wrong tokens.",
        "vllm serve Qwen/Qwen3.5-35B-A3B -tp 4 --enable-prefix-caching --speculative-config "
        "'{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}' --reasoning-parser deepseek_r1",
        '    extra_body={"chat_template_kwargs": {"enable_thinking": False}},',
        "ChatCompletionMessage(content=None, refusal=None, role='assistant', tool_calls=None, "
        "reasoning_content='Canberra')",
        "(APIServer pid=61001) INFO 12-03 18:40:51 [loggers.py:251] Engine 000: Avg prompt throughput: 3311.2 tokens/s, "
        "Avg generation throughput: 905.6 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.8%, "
        "Prefix cache hit rate: 83.0%",
    ]
    top = _analyze(text).findings[0]
    assert top.category == "other" and "reasoning_content" in top.title
    # without a reasoning parser on the server, nothing moved the answer there: not this reading
    plain = [t.replace(" --reasoning-parser deepseek_r1", "") for t in text]
    assert "reasoning_content" not in _analyze(plain).findings[0].title


def _stats(gen: float, running: int) -> str:
    return (f"(APIServer pid=1) INFO 11-26 10:0{running % 10}:00 [loggers.py:310] Engine 000: Avg prompt throughput: "
            f"2100.0 tokens/s, Avg generation throughput: {gen} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV "
            f"cache usage: 40.0%, Prefix cache hit rate: 44.0%")


def test_generation_throughput_halving_at_the_same_load_is_a_slowdown_in_vllms_own_numbers():
    """A report in French (no English word for slow) whose stats lines halve at the same 48 running requests, with
    nvidia-smi showing the GPU hot and far below its top clock: the throttled GPU, not the hybrid's cache."""
    text = ["Falcon-H1-34B + ngram : le d\u00e9bit s'\u00e9croule apr\u00e8s ~20 min",
            "vllm serve tiiuae/Falcon-H1-34B-Instruct --enable-prefix-caching --speculative-config "
            "'{\"method\":\"ngram\",\"num_speculative_tokens\":4}'",
            "(EngineCore_DP0 pid=7) INFO 11-26 09:58:00 [interface.py:773] Setting attention block size to 1600 tokens to "
            "ensure that attention page size is >= mamba page size.",
            _stats(1893.4, 48), _stats(921.8, 48),
            "name, temperature.gpu, clocks.sm [MHz], clocks.max.sm [MHz]",
            "NVIDIA H100 NVL, 89, 915 MHz, 1785 MHz"]
    facts = facts_from_text("\n".join(text))
    assert "1893.4 -> 921.8" in facts.startup["throughput_fell"]
    assert "throttled" in _analyze(text).findings[0].title
    # a fall while the load changed (a ramp-down) is no slowdown
    ramp = facts_from_text("\n".join([_stats(1893.4, 48), _stats(921.8, 20)]))
    assert "throughput_fell" not in ramp.startup


def test_token_ids_past_the_embeddings_rows_a_repl_shows():
    """The reporter's REPL: config.vocab_size and the embedding weight's shape answer 131072 on the next line, and the
    request carries ids 131072 and 131073 -- an index-select past the table is the client's token ids, not the
    hybrid's state."""
    facts = facts_from_text("\n".join([
        "I captured the failing request body: it contains ids 131072 and 131073 (tokens we added during SFT).",
        '>>> AutoConfig.from_pretrained("/models/x", trust_remote_code=True).vocab_size',
        "131072",
        '>>> f.get_slice("backbone.embeddings.weight").get_shape()',
        "[131072, 4480]",
    ]))
    assert facts.startup["vocab_sizes"] == [131072] and facts.startup["prompt_token_id_max"] == 131073
    e = "(EngineCore_DP0 pid=9117) ERROR 12-01 15:47:09 [core.py:1332] "
    crash = [
        "Nemotron-Nano-9B-v2 finetune: device-side assert with ngram spec decode + prefix caching",
        "vllm serve /models/x --enable-prefix-caching --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":4}'",
        e + "torch.AcceleratorError: CUDA error: device-side assert triggered",
        "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1553: indexSelectLargeIndex: block: [112,0,0], thread: [64,0,0] "
        "Assertion `srcIndex < srcSelectDimSize` failed.",
        "I captured the failing request body: it contains token ids 131072 and 131073.",
        '>>> AutoConfig.from_pretrained("/models/x").vocab_size',
        "131072",
    ]
    top = _analyze(crash).findings[0]
    assert top.category == "other"


def test_an_on_call_note_is_no_setting_switched_on():
    """"on-call note: no errors, no preemptions" states the symptom's context, not a trial whose fix took the
    families out."""
    facts = facts_from_text("on-call note: no errors, no preemptions, GPU at 100% util.\n")
    assert "resolved_prose" not in facts.startup
    assert facts_from_text("--tool-call-parser hermes on: no errors, everything fine.\n").startup.get("resolved_prose")


def test_random_prompts_on_a_hybrid_whose_drafts_the_reporter_saw_accepted_on_real_prompts():
    """Drafts rejected (19.6 %) in a --dataset-name random benchmark, while the reporter saw acceptance length 2.6 on
    hand-written prompts to the same server: the benchmark's data, not a hybrid's state fault. A blog's claim of what
    acceptance should be is no such run."""
    text = [
        "Qwen3-Next MTP acceptance rate very low (~20%) on 0.15.1, much worse than blog numbers",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "vllm bench serve --dataset-name random --random-input-len 1024 --ignore-eos",
        "(APIServer pid=88213) INFO 02-11 09:21:43 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 1.39, "
        "Accepted throughput: 1392.30 tokens/s, Drafted throughput: 7118.60 tokens/s, Accepted: 13923 tokens, Drafted: "
        "71186 tokens, Avg Draft acceptance rate: 19.6%",
        "In the chat UI by hand the server log showed Mean acceptance length 2.6x - 2.8x.",
    ]
    assert "random prompts" in _analyze(text).findings[0].title
    blog = [t for t in text if "chat UI" not in t] + ["Blog/recipes say acceptance length ~2.5+ with 2 spec tokens."]
    assert "acceptance_length_told_max" not in facts_from_text("\n".join(blog)).startup


def test_mamba_page_padding_does_not_explain_a_slowdown_the_platform_does():
    """A slow TP=4 decode with vLLM's own word that custom all-reduce is off for four PCIe-only GPUs: padding of the
    state pages costs capacity, not step time, so the all-reduce reading leads."""
    t = "(Worker_TP0 pid=21044) "
    text = [
        "Qwen3-Next on 4x L40S: only ~38 tok/s per user, the blog shows way more",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "(EngineCore_DP0 pid=7) INFO 03-02 10:14:02 [interface.py:631] Padding mamba page size by 40.12% to ensure that "
        "mamba page size and attention page size are exactly equal.",
        t + "WARNING 03-02 10:15:31 [custom_all_reduce.py:153] Custom allreduce is disabled because it's not supported "
            "on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
    ]
    assert "PCIe" in _analyze(text).findings[0].title
