"""Post-mortem, round twenty-six: numbers an operator quotes from what a report says of its requests and its proxy --
the size of the block every request repeats, the request's token cap, the proxy's read timeout where the report says
it is unset. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text

_HIT = ("(APIServer pid=1) INFO 03-11 08:58:02 [loggers.py:236] Engine 000: Avg prompt throughput: 2231.0 tokens/s, "
        "Avg generation throughput: 412.5 tokens/s, Running: 41 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.1%, "
        "Prefix cache hit rate: 0.4%")


def _startup(lines: list[str]) -> dict:
    return facts_from_text("\n".join(lines)).startup


@pytest.mark.parametrize("said, want", [
    # a count the reporter measured beside a rounded one: the measured one
    ("Every request starts with the same system prompt + tool schema, ~1,200 tokens (measured with the tokenizer: "
     "1217), then the user turn.", 1217),
    ("Every request = fixed system prompt (1,912 tokens, verified with the tokenizer) + short user turn (100-400 "
     "tokens).", 1912),
    ("Every request = fixed instruction header (~850 tokens, identical byte-for-byte, we checked the token ids) + a "
     "document of 200-400 tokens.", 850),
    ("Prompt shape: preamble 418 tokens (chat template + system + tool schema, byte-identical across requests).", 418),
    ("Every request = the same 1,850-token instruction block + a short ticket (100-400 tokens).", 1850),
    ("I diffed 50 rendered prompts: the first 1,904 tokens are identical every time.", 1904),
])
def test_the_size_of_the_block_every_request_repeats(said, want):
    """The prefix a hybrid's prefix cache could share, in the words reporters use for it (an instruction block, a
    preamble, the first N tokens that are identical); not a ticket's or a user turn's length beside it."""
    assert _startup([said, _HIT])["shared_prefix_tokens"] == want


def test_a_rounded_prefix_size_is_refined_by_an_exact_count_later_in_the_report():
    st = _startup(["traffic: every request = same system prompt (~900 tokens, tool descriptions) + a short user turn",
                   _HIT, "", "token counts from our replay:", "  system prompt: 912 tokens (nemotron)"])
    assert st["shared_prefix_tokens"] == 912
    # ... but not by a count of something else, nor by another rounded figure
    st = _startup(["every request = same system prompt (~900 tokens) + a short user turn", _HIT,
                   "  user turn: 250 tokens", "  system prompt: ~930 tokens with the template"])
    assert st["shared_prefix_tokens"] == 900


def test_a_block_not_said_to_be_shared_is_no_shared_prefix():
    st = _startup(["system+tools: 431 tokens, then the user's document (2-6k tokens)", _HIT])
    assert "shared_prefix_tokens" not in st


@pytest.mark.parametrize("said, want", [
    ("one sample output (request with temperature 0.3, max_tokens 2048):", 2048),
    ("Client: analytics assistant calls non-streaming (`stream=false`), max_tokens 16384, thinking on.", 16384),
    ("always the long ones (max_tokens 6000-8000) and the SpecDecoding metrics look odd", 8000),
    ('        max_tokens=int(os.getenv("LLM_MAX_TOKENS", 256)),', 256),
    ('    body = {"model": m, "messages": msgs, "max_tokens": kw.get("max_new_tokens", 512)}', 512),
])
def test_the_request_token_cap_in_words_or_as_a_getters_default(said, want):
    """The cap a truncation complaint is checked against: in the reporter's words (the top of a range), or the
    default a client's getter falls back to when nothing sets it."""
    assert _startup([said])["request_params"]["max_tokens"] == want


def test_no_token_cap_is_read_from_a_sentence_without_one():
    assert "request_params" not in _startup(["Con curl yo no pongo max_tokens y ahí sale completo."])


@pytest.mark.parametrize("said, want", [
    ("  # proxy-read-timeout not set", 60),
    ("    (no proxy-read-timeout annotation; controller default)", 60),
    ("ingress annotation nginx.ingress.kubernetes.io/proxy-read-timeout isn't set", 60),
    ('    nginx.ingress.kubernetes.io/proxy-read-timeout: "600"', 600),
    ("    proxy_read_timeout 5m;", 300),
])
def test_the_proxy_read_timeout_stated_or_left_at_nginxs_default(said, want):
    assert _startup([said])["proxy_read_timeout_s"] == want


def test_a_diff_that_removes_the_read_timeout_leaves_nginxs_default():
    st = _startup(["ingress annotations diff from yesterday's deploy:",
                   '-    nginx.ingress.kubernetes.io/proxy-read-timeout: "600"',
                   '+    nginx.ingress.kubernetes.io/proxy-body-size: "32m"'])
    assert st["proxy_read_timeout_s"] == 60 and st["proxy_read_timeout_removed_s"] == 600


def test_the_layer_a_checkpoint_lacks_is_a_number_of_the_failure():
    """A quantised export that dropped the MTP (nextn) layer: the layer index is what the operator greps the
    checkpoint's index for."""
    w = "(Worker_TP2 pid=30546) ERROR 11-29 09:15:03 [multiproc_executor.py:944] "
    text = "\n".join([
        w + "Traceback (most recent call last):",
        w + '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 467, '
            "in load_weights",
        w + "    raise ValueError(",
        w + "ValueError: Following weights were not initialized from checkpoint: {'model.layers.46.enorm.weight', "
            "'model.layers.46.hnorm.weight', 'model.layers.46.eh_proj.weight'}",
    ])
    assert facts_from_text(text).numbers["weight_layer_index"] == 46


def _analyze(lines: list[str]):
    from vllm_diag.postmortem.analyze import analyze_text
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_HYBRID_START = [
    "INFO 04-21 08:02:13 [config.py:443] Warning: Prefix caching in Mamba cache 'align' mode is currently enabled. "
    "Its support for Mamba layers is experimental. Please report any issues you may observe.",
    "INFO 04-21 08:02:13 [interface.py:774] Setting attention block size to 1568 tokens to ensure that attention page "
    "size is >= mamba page size.",
    "INFO 04-21 08:02:13 [interface.py:798] Padding mamba page size by 0.52% to ensure that mamba page size and "
    "attention page size are exactly equal.",
]


def test_quoted_prompts_that_open_with_a_per_request_value_are_the_prefix_caches_near_miss():
    """Two requests' first characters, each opening with a trace id and a time before the same instructions: no two
    prompts share even their first block, on any model -- not the hybrid's block size."""
    lines = ["Prefix cache hit rate ~0% on Qwen3.5-27B (hybrid) even though every request has the same ~6000-token "
             "system prompt", "    vllm serve Qwen/Qwen3.5-27B --enable-prefix-caching --mamba-cache-mode align",
             *_HYBRID_START, _HIT, "the first chars of two requests as our gateway logs them:", "",
             '  req A: "[trace=7f3c1e0a-44b2-4d1e-9a55-0b2f6c8f1e21 ts=2026-04-21T08:41:27.118Z]\\nYou are Acme '
             'Support Assistant. Follow the policies below..."',
             '  req B: "[trace=c02e9b77-1d4f-4f0e-8c3a-e61a55f0d9a4 ts=2026-04-21T08:41:30.542Z]\\nYou are Acme '
             'Support Assistant. Follow the policies below..."']
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "per-request value" in top.title
    # a quoted prompt whose instructions come first is no such thing
    st = _startup(['  req A: "You are Acme Support Assistant. Today is 2026-04-21T08:41:27Z."'])
    assert "varying_prefix_prose" not in st


def test_a_slowdown_that_stays_with_prefix_caching_off_on_a_run_without_drafts_is_outside_the_families():
    lines = ["Impact: p50 TTFT for the chat product went 0.6s -> 19s, ~30% of chats timed out.",
             "    vllm serve tiiuae/Falcon-H1-34B-Instruct -tp 2 --max-num-seqs 128 --enable-prefix-caching",
             *_HYBRID_START, _HIT,
             "Rolled one replica back to no prefix caching at 13:50 -> no improvement on that replica."]
    result = _analyze(lines)
    assert result.facts.startup["slow_prose"].endswith("0.6s -> 19s")
    assert result.findings[0].category == "other"


_CG_TABLE = [
    "(APIServer pid=9001) INFO 12-09 17:44:20 [cuda_graph.py:117] **CUDAGraph Config Settings:**",
    "",
    "- Mode: FULL_AND_PIECEWISE",
    "- Capture sizes: [4, 8, 16, 24, 32, [...] 480, 496, 512]",
    "",
    "**CUDAGraph Stats:**",
    "",
    "| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |",
    "|-----------------|---------------|--------------|--------------|-------|",
    "| 768             | 768           | 0            | NONE         | 141   |",
    "| 448             | 448           | 0            | FULL         | 198   |",
    "| 1480            | 1480          | 0            | PIECEWISE    | 9     |",
]


def test_vllms_cuda_graph_stats_table_pasted_without_record_prefixes_shows_the_eager_decode_steps():
    """--cudagraph-metrics prints its table rows and config settings without a record prefix: the decode steps of
    768 tokens (192 requests x 4) that ran with no graph, past the 512-token largest capture, are vLLM's own numbers
    of the latency cliff -- before an inference from the setup that an MLA backend is slower with drafts."""
    lines = ["## TPOT cliff above ~128 concurrent requests - DeepSeek-V3.1 + MTP, vLLM 0.15.1",
             "TPOT jumps from ~29 ms to ~67 ms past 128 streams, a step not a slope.",
             "vllm serve deepseek-ai/DeepSeek-V3.1 -tp 8 --max-num-seqs 256 "
             "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":3}'", *_CG_TABLE]
    result = _analyze(lines)
    st = result.facts.startup
    assert st["cudagraph_eager_steps"] == [[768, 141]] and st["cudagraph_capture_size_max"] == 512
    top = result.findings[0]
    assert (top.rule, top.category) == ("spec_capture_sizes", "cudagraph_shape")
    assert top.numbers["max_cudagraph_capture_size"] == 512 and top.numbers["eager_decode_tokens"] == 768


_QWEN_NEXT_FULL = [
    "(EngineCore_DP0 pid=7) INFO 11-20 13:02:11 [interface.py:1096] Setting attention block size to 1056 tokens to "
    "ensure that attention page size is >= mamba page size.",
    "(EngineCore_DP0 pid=7) INFO 11-20 13:03:02 [kv_cache_utils.py:2327] GPU KV cache size: 598,752 tokens, "
    "Maximum concurrency for 4,096 tokens per request: 146.18x",
    "(APIServer pid=1) INFO 11-20 13:41:10 [loggers.py:335] Engine 000: Avg prompt throughput: 16480.3 tokens/s, "
    "Avg generation throughput: 2911.6 tokens/s, Running: 141 reqs, Waiting: 759 reqs, GPU KV cache usage: 99.3%",
]


def test_a_cap_on_running_requests_leads_when_the_slowness_is_time_spent_queued_for_it():
    """"never runs more than 141 ... TTFT p50 goes to 40 s": the first-token time is the queue behind the cap, so the
    capacity findings lead."""
    lines = ["vllm serve Qwen/Qwen3.5-27B-FP8 --max-model-len 4096 --max-num-seqs 1024 --enable-prefix-caching",
             "workload: short-context tagging, prompt 250-380 tok, max_tokens 48.",
             "vLLM never runs more than 141 at a time, waiting queue climbs to 760, TTFT p50 goes to 40 s.",
             *_QWEN_NEXT_FULL]
    result = _analyze(lines)
    assert result.facts.startup["request_tokens_prose"] == 250
    assert result.findings[0].category in ("mamba_block_budget", "block_size_alignment")
    # the reading of the running cap from the stats lines stands beside the rule's prediction
    assert any(f.rule == "failure_class" and f.category == "mamba_block_budget" for f in result.findings)


def test_answers_drifting_into_other_users_topics_only_in_mixed_draft_batches_is_the_mixed_batch():
    lines = ["Subject: Qwen3.5-9B + ngram: answers drift into other users' topics under load (0.20.2)",
             "  vllm serve Qwen/Qwen3.5-9B --max-num-seqs 64 --no-enable-prefix-caching "
             "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4}'",
             "So it only goes wrong when some requests in the batch have ngram drafts and others don't (mixed",
             "batch). Both \"all drafts\" and \"no drafts\" are fine."]
    result = _analyze(lines)
    assert result.facts.startup["wrong_output_prose"] == "drift into other users' topics"
    assert result.findings[0].category == "mixed_batch"


def test_vllm_bench_serve_results_are_read_run_by_run():
    lines = ["============ Serving Benchmark Result ============",
             "Successful requests:                     512",
             "Failed requests:                         0",
             "Request throughput (req/s):              8.78",
             "---------------Time per Output Token (excl. 1st token)------",
             "Mean TPOT (ms):                          71.92",
             "---------------Speculative Decoding---------------",
             "Acceptance rate (%):                     2.94",
             "Acceptance length:                       1.12",
             "==================================================",
             "", "teammate reran with our real data:",
             "Acceptance rate (%):                     61.47",
             "Acceptance length:                       3.46",
             "", "Contact:  5551234"]
    runs = _startup(lines)["bench_runs"]
    assert runs == [{"successful_requests": 512, "failed_requests": 0, "request_throughput_req_s": 8.78,
                     "mean_tpot_ms": 71.92, "acceptance_rate_pct": 2.94, "acceptance_length": 1.12},
                    {"acceptance_rate_pct": 61.47, "acceptance_length": 3.46}]


def test_a_per_token_latency_complaint_on_an_eager_run_is_the_eager_mode_not_the_benchmarks_concurrency():
    """"We expected 8-10 ms TPOT ... we get ~41 ms" at a benchmark's concurrency 8, with --enforce-eager in the
    non-default args: a load generator's concurrency caps the load, never each token's time."""
    lines = ["We expected something like 8-10 ms TPOT for a 3B-active model at low batch. We get ~41 ms median TPOT.",
             "vllm-1  | (APIServer pid=1) INFO 05-02 13:20:41 [api_utils.py:286] non-default args: {'model': "
             "'Qwen/Qwen3.5-35B-A3B', 'enforce_eager': True, 'max_num_seqs': 128, 'speculative_config': "
             "{'method': 'qwen3_5_mtp', 'num_speculative_tokens': 3}}",
             "vllm-1  | (APIServer pid=1) INFO 05-02 13:20:45 [vllm.py:1929] Cudagraph is disabled under eager mode",
             "============ Serving Benchmark Result ============",
             "Successful requests:                     200",
             "Maximum request concurrency:             8",
             "Mean TPOT (ms):                          40.77",
             "=================================================="]
    result = _analyze(lines)
    assert result.facts.startup["slow_prose"] == "expected something like 8-10 ms TPOT"
    top = result.findings[0]
    assert top.category == "other" and "eager" in top.title.lower()
    assert result.facts.startup["bench_runs"][0]["mean_tpot_ms"] == 40.77


def test_a_running_count_quoted_in_a_sentence_is_another_runs_not_this_ones_peak():
    lines = ["(APIServer pid=30114) INFO 03-05 18:31:20 [loggers.py:271] Avg prompt throughput: 1480.6 tokens/s, Avg "
             "generation throughput: 2318.4 tokens/s, Running: 212 reqs, Waiting: 611 reqs, GPU KV cache usage: 37.9%",
             "Without --speculative-config, same flags: `Running: 1024 reqs, Waiting: 0 reqs`, ~6.1k tok/s."]
    st = _startup(lines)
    assert st["num_requests_running_max"] == 212
    # a stats line pasted on its own, without its record prefix, is still read
    assert _startup(["Running: 300 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%"])["num_requests_running_max"] == 300


def _stats(running: int, waiting: int, usage: float, when: str = "09:58:14") -> str:
    return (f"(APIServer pid=7) INFO 11-28 {when} [loggers.py:315] Engine 000: Avg prompt throughput: 5311.2 tokens/s, "
            f"Avg generation throughput: 1023.9 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache "
            f"usage: {usage}%, Prefix cache hit rate: 62.4%")


def test_a_speed_that_drops_by_a_share_on_a_throttled_gpu_is_the_platform():
    lines = ["Falcon-H1 34B decode speed drops by ~40% after 10-20 min of load, then recovers, then drops again",
             "  vllm serve tiiuae/Falcon-H1-34B-Instruct --max-num-seqs 64 --enable-prefix-caching",
             "(EngineCore_DP0 pid=9) INFO 11-20 09:01:02 [config.py:504] Setting attention block size to 752 tokens to "
             "ensure that attention page size is >= mamba page size.",
             "$ nvidia-smi --query-gpu=index,temperature.gpu,power.draw,clocks.sm,clocks.max.sm,"
             "clocks_throttle_reasons.active --format=csv",
             "index, temperature.gpu, power.draw [W], clocks.sm [MHz], clocks.max.sm [MHz], clocks_throttle_reasons.active",
             "0, 88, 261.40 W, 900 MHz, 1410 MHz, 0x0000000000000048"]
    result = _analyze(lines)
    assert result.facts.startup["slow_prose"] == "speed drops by ~40%"
    assert result.findings[0].category == "other" and "throttled" in result.findings[0].title


def test_lm_evals_num_concurrent_is_the_clients_cap():
    lines = ["running never goes above 16 although --max-num-seqs is 256. Maybe mamba state slots?",
             "  vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --max-num-seqs 256 --enable-prefix-caching",
             "  lm_eval --model local-chat-completions --model_args model=nemo,base_url=http://h:8000/v1/chat/completions,"
             "num_concurrent=16,max_retries=3 --tasks ifeval",
             _stats(16, 0, 1.8), _stats(16, 0, 1.9, "09:58:24")]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "client" in top.title


def test_nccl_over_sockets_on_a_two_node_run_named_with_a_hyphen():
    lines = ["DeepSeek-V3 2-node (PP=2 x TP=8) with MTP: decode is only ~9 tok/s per user, expected 25+",
             "  vllm serve deepseek-ai/DeepSeek-V3-0324 --tensor-parallel-size 8 --pipeline-parallel-size 2 "
             "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'",
             "(RayWorkerWrapper pid=2288, ip=10.12.0.21) h100-b-01:2288:2288 [0] NCCL INFO NET/Socket : Using "
             "[0]eth0:10.12.0.21<0>"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "sockets" in top.title


def test_a_small_memory_share_explains_queueing_and_preemption_on_a_hybrid():
    """An incident's words ("queueing + preemptions at low load", an alert's "p95 TTFT > 20s") and
    --gpu-memory-utilization=0.45: the hybrid's raised blocks are few because the engine has less than half of the
    GPU, so the memory share leads."""
    lines = ["incident: falcon-h1-34b endpoint: queueing + preemptions at low load",
             "  13:05 alert: p95 TTFT > 20s on falcon-h1-34b-instruct",
             "  - --max-num-seqs=64", "  - --enable-prefix-caching", "  - --gpu-memory-utilization=0.45",
             "(EngineCore_DP0 pid=9) INFO 11-20 13:00:02 [interface.py:606] Setting attention block size to 1584 tokens "
             "to ensure that attention page size is >= mamba page size.",
             "(EngineCore_DP0 pid=9) INFO 11-20 13:00:40 [kv_cache_utils.py:1708] GPU KV cache size: 57,024 tokens",
             _stats(9, 41, 99.1, "13:12:02")]
    result = _analyze(lines)
    st = result.facts.startup
    assert st["capacity_prose"] == "queueing + preemptions" and st["slow_prose"] == "TTFT > 20s"
    assert result.findings[0].category == "other" and "gpu-memory-utilization 0.45" in result.findings[0].title


def test_a_hang_with_nothing_running_or_waiting_in_the_engine_is_outside_it():
    lines = ["[vllm 0.26.0] Jamba-Mini batch job hangs after exactly 10 documents, server idle",
             "vllm serve ai21labs/AI21-Jamba-Mini-1.7 -tp 4 --max-num-seqs 32 --enable-prefix-caching",
             _stats(0, 0, 0.0, "01:06:02"), _stats(0, 0, 0.0, "01:06:12"),
             "    adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=10, pool_block=True)"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and top.title.startswith("Hang outside the engine")
    assert "pool_maxsize=10" in top.basis
    # an engine that still holds requests while it hangs is no such thing
    busy = _analyze(lines[:2] + [_stats(12, 3, 40.0, "01:06:02")]).findings
    assert not (busy and busy[0].title.startswith("Hang outside the engine"))


def test_the_tokenizers_length_is_a_vocabulary_size():
    st = _startup(['- config.json of the ckpt: "vocab_size": 131072',
                   "- we added 8 tokens for the new tool format, len(tokenizer) = 131080."])
    assert st["vocab_sizes"] == [131072, 131080]


def test_a_range_of_prompt_sizes_in_thousands_is_the_requests_length():
    st = _startup(["Our workload is classification-ish: prompts 1.2k-1.8k tokens, outputs < 64 tokens."])
    assert st["request_tokens_prose"] == 1200
    assert _startup(["prompts ~2.5-3k tokens each"])["request_tokens_prose"] == 2500


def test_random_prompts_explain_low_acceptance_on_a_hybrid_once_prefix_caching_off_changes_nothing():
    """On a hybrid, rejected drafts can be a state restored from the prefix cache -- unless the report turned the cache
    off and the acceptance stayed the same: then the random benchmark's data is the reading."""
    lines = ["Title: Qwen3-Next MTP acceptance rate terrible on v0.26.0 (~11%)",
             "    vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 "
             "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}' --enable-prefix-caching",
             "    vllm bench serve --dataset-name random --random-input-len 1024 --num-prompts 1000",
             "(EngineCore_DP0 pid=9) INFO 11-20 09:01:02 [interface.py:606] Setting attention block size to 544 tokens "
             "to ensure that attention page size is >= mamba page size.",
             "(APIServer pid=1) INFO 11-20 09:31:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 1.23, "
             "Accepted throughput: 310.00 tokens/s, Drafted throughput: 2660.00 tokens/s, Accepted: 3100 tokens, Drafted: "
             "26600 tokens, Per-position acceptance rate: 0.170, 0.063, Avg Draft acceptance rate: 11.6%",
             _HIT,
             "Tried: num_speculative_tokens=1 (acceptance 19%), disabling prefix caching (same ~12%)."]
    result = _analyze(lines)
    assert result.facts.startup["persists_without_pc_prose"].startswith("disabling prefix caching (same ~12%")
    top = result.findings[0]
    assert top.category == "other" and "random prompts" in top.title
    # without that test, the hybrid's restored state stays a reading
    assert _analyze(lines[:-1]).findings[0].category != "other"


def test_a_tool_parsers_json_error_in_the_newer_layout_is_outside_the_families():
    w = "(APIServer pid=3318) "
    lines = ["vllm serve Qwen/Qwen3.5-35B-A3B --enable-prefix-caching --tool-call-parser hermes "
             "--speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}'",
             w + "ERROR 09-09 07:31:45 [hermes_tool_parser.py:117] Error in extracting tool call from response.",
             w + "Traceback (most recent call last):",
             w + '  File "/opt/venv/lib/python3.12/site-packages/vllm/tool_parsers/hermes_tool_parser.py", line 92, '
                 "in extract_tool_calls",
             w + "    json.loads(match[0] if match[0] else match[1])",
             w + '  File "/usr/lib/python3.12/json/decoder.py", line 356, in raw_decode',
             w + '    raise JSONDecodeError("Expecting value", s, err.value) from None',
             w + "json.decoder.JSONDecodeError: Expecting value: line 2 column 1 (char 1)",
             w + "INFO 09-09 07:31:45 [loggers.py:335] Engine 000: Avg prompt throughput: 3986.0 tokens/s, Avg generation "
                 "throughput: 1047.4 tokens/s, Running: 23 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, Prefix cache "
                 "hit rate: 31.0%"]
    assert _analyze(lines).findings[0].category == "other"


def test_curl_timings_and_nvidia_smis_process_rows_are_numbers_of_the_report():
    st = _startup(["$ curl -sN -w '\\nttfb=%{time_starttransfer}s total=%{time_total}s\\n' http://localhost:8000/v1/x",
                   "ttfb=0.094 total=4.871", "ttfb=4.902s total=4.915s",
                   "|    0   N/A  N/A      3101      C   VLLM::Worker_TP0                            70112MiB |",
                   "|    0   N/A  N/A     51207      C   /opt/conda/bin/python3                       9734MiB |"])
    assert st["curl_timings"] == [{"ttfb_s": 0.094, "total_s": 4.871}, {"ttfb_s": 4.902, "total_s": 4.915}]
    assert _startup(["TTFB: 0.42s"])["curl_timings"] == [{"ttfb_s": 0.42}]  # (the pattern's upper-case spelling)
    assert st["gpu_processes"] == [
        {"gpu": 0, "pid": 3101, "process": "VLLM::Worker_TP0", "process_mem_mib": 70112},
        {"gpu": 0, "pid": 51207, "process": "/opt/conda/bin/python3", "process_mem_mib": 9734}]


def test_a_two_core_container_limit_starves_the_engines_host_loop():
    lines = ["granite-4.0-h-small TTFT is 3-6 seconds even for short prompts with ngram spec decode + prefix caching",
             "      args: [\"--model\",\"ibm-granite/granite-4.0-h-small\",\"--enable-prefix-caching\"]",
             "      resources:", "        limits:", "          nvidia.com/gpu: 1", '          cpu: "2"',
             "(EngineCore_DP0 pid=9) INFO 11-20 09:01:02 [config.py:504] Setting attention block size to 528 tokens to "
             "ensure that attention page size is >= mamba page size."]
    result = _analyze(lines)
    assert result.facts.startup["cpu_limit_cores"] == 2
    assert result.findings[0].category == "other" and "host CPU" in result.findings[0].title
    # the share of periods the cgroup throttled, as a Prometheus ratio
    st = _startup(["container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total over the last 15min: 0.93"])
    assert "cpu_starved_prose" in st


def test_a_settings_table_gives_the_runs_flags():
    lines = ["| key                     | value                                           |",
             "|-------------------------|-------------------------------------------------|",
             "| model                   | zai-org/GLM-4.5-Air-FP8                         |",
             "| max_num_seqs            | 256                                             |",
             "| max_num_batched_tokens  | 512   (kept from the latency tuning in Q2)      |",
             '| speculative_config      | {"method":"mtp","num_speculative_tokens":4}    |',
             "| enable_prefix_caching   | true                                            |"]
    args = facts_from_text("\n".join(lines)).args
    assert args["max_num_seqs"] == 256 and args["max_num_batched_tokens"] == 512
    assert args["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 4}
    assert args["enable_prefix_caching"] is True


def test_the_settings_under_an_old_heading_are_not_the_runs():
    lines = ["Old chart args:", "  --model Qwen/Qwen3.5-122B-A10B --tensor-parallel-size 2 --reasoning-parser qwen3", "",
             "New chart args (Tuesday):", "  --model Qwen/Qwen3.5-122B-A10B --tensor-parallel-size 4"]
    args = facts_from_text("\n".join(lines)).args
    assert "reasoning_parser" not in args and args["tensor_parallel_size"] == 4


def test_a_repls_tokenizer_length_and_config_vocab_are_vocabulary_sizes():
    st = _startup(['>>> len(AutoTokenizer.from_pretrained("acme/model", revision="main"))', "65541",
                   '>>> json.load(open("/models/m/config.json"))["vocab_size"]', "65536"])
    assert st["vocab_sizes"] == [65541, 65536]


def test_the_same_stream_complete_under_curl_puts_missing_words_on_the_clients_path():
    lines = ["[Usage]: output text is missing words when MTP is on with Qwen3-Next (prefix caching + hybrid)",
             "    vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
             "Then my colleague ran the same prompt with plain curl -N and reads the raw SSE: the text there is "
             "complete and correct, nothing missing, with MTP on."]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "client's path" in top.title


def test_a_full_batch_of_decodes_that_fills_the_token_budget_leaves_no_prefill():
    """256 requests x (1 + 7) = 2048 = max_num_batched_tokens: with the batch full, no prefill token fits a step."""
    lines = ["EAGLE3 (k=7): TTFT got 10x worse, Waiting keeps growing",
             "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 256 --max-num-batched-tokens 2048 "
             "--speculative-config '{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\","
             "\"num_speculative_tokens\":7}'"]
    top = _analyze(lines).findings[0]
    assert (top.rule, top.category) == ("spec_token_budget", "token_budget") and "2048 = 2048" in top.title
    # one request fewer leaves room, and no finding
    fewer = _analyze([lines[0], lines[1].replace("--max-num-seqs 256", "--max-num-seqs 255")]).findings
    assert not any(f.rule == "spec_token_budget" for f in fewer)
