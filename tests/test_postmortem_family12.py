"""Post-mortem, round twelve: a request resumed after preemption in vLLM's crash dump (a set since 0.14), a reporter's
sentence wrapped over two lines, a last prefill chunk as short as a spec decode, vLLM's request log as the sampling
of the run, the capture-size cliff under drafts, and a quantized KV cache doubling a hybrid's block. The logs are
written here in vLLM's own formats (messages, files and lines of the release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.dump import parse_scheduler_output

_SP = "/usr/local/lib/python3.12/dist-packages"
_E = "(EngineCore pid=141) ERROR 02-11 03:47:25 "
_W = "(Worker_TP0 pid=272) ERROR 02-11 03:47:25 [multiproc_executor.py:962] "
_MTP_SERVE = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --no-enable-prefix-caching "
              "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'")


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _dump(resumed: str) -> list[str]:
    return [
        _E + "[dump_input.py:72] Dumping input data for V1 LLM engine (v0.20.2) with config: "
             "model='Qwen/Qwen3-Next-80B-A3B-Instruct', speculative_config=SpeculativeConfig(method='mtp', "
             "model='Qwen/Qwen3-Next-80B-A3B-Instruct', num_spec_tokens=2), tensor_parallel_size=4, "
             "enable_prefix_caching=False, enforce_eager=False",
        _E + "[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], "
             "scheduled_cached_reqs=CachedRequestData(req_ids=['r1', 'r2', 'r3'], "
             f"resumed_req_ids={resumed}, new_token_ids=[], all_token_ids={{}}, new_block_ids=[None, None, None], "
             "num_computed_tokens=[5121, 911, 0], num_output_tokens=[40, 12, 0]), "
             "num_scheduled_tokens={r1: 3, r2: 3, r3: 1}, total_num_scheduled_tokens=7, "
             "scheduled_spec_decode_tokens={r1: [1042, 220], r2: [11, 12]}, scheduled_encoder_inputs={}, "
             "num_common_prefix_blocks=[0, 0, 0, 0], finished_req_ids=[], free_encoder_mm_hashes=[])",
    ]


_FAULT = [
    _W + "Traceback (most recent call last):",
    _W + f'  File "{_SP}/vllm/v1/worker/gpu_model_runner.py", line 269, in get_output',
    _W + "    self.async_copy_ready_event.synchronize()",
    _W + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
]


def test_the_crash_dump_names_its_resumed_requests_as_a_set():
    """From 0.14 the dump prints CachedRequestData.resumed_req_ids as a Python set; older releases a list of flags."""
    step = parse_scheduler_output("\n".join(_dump("{'r3'}")), 2)
    assert step is not None and step["num_resumed_reqs"] == 1
    none = parse_scheduler_output("\n".join(_dump("set()")), 2)
    assert none is not None and "num_resumed_reqs" not in none


def test_a_fault_in_a_step_that_resumes_a_preempted_request_reads_as_the_state_index():
    """A GDN + MTP engine faults asynchronously in a step whose dump resumes a preempted request: its block-table row
    is replaced mid-batch, so the state slots are the reading; the same step without the resumed request, mixing
    spec decodes with a one-token row, stays the mixed-batch class."""
    resumed = _analyze([_MTP_SERVE] + _dump("{'r3'}") + _FAULT)
    top = resumed.findings[0]
    assert top.category == "state_index" and "resumed after preemption" in top.basis
    plain = _analyze([_MTP_SERVE] + _dump("set()") + _FAULT)
    assert plain.findings[0].category == "mixed_batch"


_NEMOTRON = ("vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 --tensor-parallel-size 2 "
             "--max-num-batched-tokens 8192 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'")


def test_a_wrapped_sentence_states_the_symptom_and_a_short_last_chunk_under_drafts_is_the_builders_split():
    """'... of responses are complete' / 'junk from the very first token': the symptom spans the line break. The bad
    prompts are all 1 mod the token budget, so their last prefill chunk is one token, as short as a spec decode:
    the builders take it for one (mixed batch)."""
    an = _analyze([
        "[Bug] Nemotron-3-Super + MTP: deterministic per prompt under load", "", _NEMOTRON, "",
        "About 0.3-0.5% of responses are complete",
        "junk from the very first token. Resubmitting the failed prompt alone on an idle server gives a correct answer.",
        "Prompt token counts of the bad ones: 16385, 8193, 24577 (all 1 mod 8192).",
    ])
    assert an.facts.startup["wrong_output_prose"] == "responses are complete junk"
    assert an.facts.startup["last_chunk_tokens"] == 1
    assert not an.facts.startup.get("error_lines")  # ("the failed prompt" is the reporter's adjective)
    top = an.findings[0]
    assert top.category == "mixed_batch" and "1 + 3" in top.basis


def test_a_symptom_the_reporter_has_only_read_about_is_not_the_runs():
    an = _analyze([_NEMOTRON, "Since I've read about MTP + hybrid models giving",
                   "garbage with prefix caching I'm worried about it. Throughput looks fine."])
    assert "wrong_output_prose" not in an.facts.startup


def test_the_request_log_of_the_later_run_is_the_sampling_behind_its_acceptance_drop():
    """vLLM's request log (--enable-log-requests) shows the client sampling hotter on the day acceptance fell: the
    later request's sampling, not the first one's, is the run the report is about."""
    def req(day: str, temp: str, pres: str) -> str:
        return (f"(APIServer pid=1) INFO 06-{day} 10:42:05 [request_logger.py:65] Received request chatcmpl-{day}: "
                f"params: SamplingParams(n=1, presence_penalty={pres}, frequency_penalty=0.0, repetition_penalty=1.0, "
                f"temperature={temp}, top_p=0.95, top_k=-1, max_tokens=2048), lora_request: None.")
    an = _analyze([
        "MTP acceptance dropped from ~3.1 to ~1.6 overnight, no server change",
        "vllm serve Qwen/Qwen3.5-35B-A3B --enable-prefix-caching --enable-log-requests "
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "(APIServer pid=1) INFO 06-10 10:42:07 [loggers.py:335] Engine 000: Avg prompt throughput: 2390.0 tokens/s, "
        "Avg generation throughput: 1102.3 tokens/s, Running: 21 reqs, Waiting: 0 reqs, GPU KV cache usage: 7.6%, "
        "Prefix cache hit rate: 51.9%",
        req("08", "0.3", "0.0"), req("10", "1.0", "1.5"),
    ])
    assert an.facts.startup["request_params"]["temperature"] == 0.3
    assert an.facts.startup["request_params_last"]["presence_penalty"] == 1.5
    top = an.findings[0]
    assert top.category == "other" and "presence_penalty 1.5" in top.basis


def _eagle_report(running: int) -> list[str]:
    return [
        "EAGLE3 on Llama-3.1-8B: great at low concurrency, falls off a cliff above ~100 concurrent requests",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
        "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 4}'",
        "(APIServer pid=1851) INFO 11-03 20:14:22 [loggers.py:127] Engine 000: Avg prompt throughput: 2911.3 tokens/s, "
        f"Avg generation throughput: 6102.5 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
        "18.7%, Prefix cache hit rate: 1.9%",
        "(EngineCore_DP0 pid=1997) INFO 11-03 20:01:40 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct', enforce_eager=False, compilation_config={\"level\":3,"
        "\"cudagraph_mode\":[2,1],\"cudagraph_capture_sizes\":[512,256,128,64,32,16,8,4,2,1],\"max_capture_size\":512}",
    ]


def test_a_throughput_cliff_past_the_largest_graph_under_drafts_is_the_capture_size_class():
    """EAGLE3 with k = 4: 128 running requests make decode steps of 640 tokens, above the default largest graph of
    512 -- the slowdown the reporter measures past ~100 requests."""
    an = _analyze(_eagle_report(128))
    top = an.findings[0]
    assert top.category == "cudagraph_shape"
    assert top.numbers["decode_tokens_at_load"] == 640 and top.numbers["max_cudagraph_capture_size"] == 512
    # 64 requests (320 tokens a step) fit the largest graph: the numbers do not explain that slowdown
    assert not any(f.category == "cudagraph_shape" for f in _analyze(_eagle_report(64)).findings)


def _hybrid_start(pid: int, block: int, kv: str | None) -> list[str]:
    args = "'enable_prefix_caching': True" + (f", 'kv_cache_dtype': '{kv}'" if kv else "")
    p = f"(APIServer pid={pid}) "
    return [
        p + "INFO 03-02 10:14:52 [api_utils.py:273] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
            "'tensor_parallel_size': 4, " + args + "}",
        p + "INFO 03-02 10:15:01 [model.py:623] Resolved architecture: Qwen3NextForCausalLM",
        p + "WARNING 03-02 10:15:01 [config.py:563] Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by "
            "default when prefix caching is enabled",
        p + f"INFO 03-02 10:15:01 [interface.py:906] Setting attention block size to {block} tokens to ensure that "
            "attention page size is >= mamba page size.",
    ]


def test_an_fp8_kv_cache_that_doubles_a_hybrids_block_explains_the_lost_prefix_hits():
    """Two starts of Qwen3-Next, bf16 then fp8 KV: the block doubles from 272 to 544 tokens and the reporter's prefix
    hits go away -- the hybrid's prefix-cache class leads (the hits are the symptom), the fp8 start's larger block its
    cause; the quantized-KV layout note follows."""
    an = _analyze(["The prefix cache hit rate drops to ~0 after switching to --kv-cache-dtype fp8.", ""]
                  + _hybrid_start(88213, 272, None) + [""] + _hybrid_start(90177, 544, "fp8"))
    top = an.findings[0]
    assert top.category == "prefix_cache_degraded" and "544" in top.title
    assert any(f.category == "kv_page_size" for f in an.findings[1:])
    # the same two starts, told as lost capacity: the quantized KV's layout on a hybrid
    cap = _analyze(["After switching to --kv-cache-dtype fp8 we still only fit the same number of requests.", ""]
                   + _hybrid_start(88213, 272, None) + [""] + _hybrid_start(90177, 544, "fp8"))
    assert cap.findings[0].category == "kv_page_size" and "544" in cap.findings[0].message
    # one start only (fp8 throughout): the block is the alignment's, nothing changed between runs
    one = _analyze(["The prefix cache hit rate is ~0 on our agent workload.", ""] + _hybrid_start(90177, 544, "fp8"))
    assert one.findings[0].category != "kv_page_size"


def _qwen3next_011(concurrency: int) -> list[str]:
    return [
        "MTP acceptance is great with 1 user and terrible with several (Qwen3-Next, vllm 0.11.0)",
        "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        f"We see it with {concurrency} concurrent requests.",
        "(EngineCore_DP0 pid=189) INFO 10-09 14:52:58 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct', compilation_config={\"level\":3, \"cudagraph_mode\":[2,1], "
        "\"cudagraph_capture_sizes\":[512,504,496,48,40,32,24,16,8,4,2,1], \"max_capture_size\":512}",
        "(EngineCore_DP0 pid=189) INFO 10-09 14:55:31 [gpu_model_runner.py:3480] Graph capturing finished in 47 secs, "
        "took 1.21 GiB",
        "With --enforce-eager acceptance is the same at every concurrency.",
    ]


def test_spec_decode_steps_padded_to_graphs_not_rounded_to_one_plus_k_degrade_before_0_12():
    """vLLM 0.11 captures full decode graphs at sizes that are not multiples of 1 + k: at 7 requests (21 tokens) a
    step is padded to the 24-token graph; the reporter's --enforce-eager comparison does not make the failing run eager."""
    top = _analyze(_qwen3next_011(7)).findings[0]
    assert top.category == "cudagraph_shape"
    assert top.numbers["num_scheduled_tokens"] == 21 and top.numbers["padded_num_tokens"] == 24
    # 8 requests make 24 tokens, a graph of their own size: the sizes do not explain it
    assert not any(f.category == "cudagraph_shape" for f in _analyze(_qwen3next_011(8)).findings)


def test_wrong_output_once_requests_near_max_model_len_get_fewer_drafts_is_the_builders_split():
    """Without prefix caching, a request close to max_model_len is scheduled fewer drafts than the rest: a batch of
    ragged drafts. With prefix caching's align mode the same words point at the state-index window instead."""
    lines = [
        "Nemotron-3 Super + MTP: logprobs / outputs go bad for the sequences that run close to max_model_len, and other",
        "sequences in the same batch get corrupted at the same moment. No errors.",
        "llm = LLM(model='nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4', max_model_len=16384, "
        "speculative_config={'method': 'mtp', 'num_speculative_tokens': 3})",
    ]
    an = _analyze(lines)
    top = an.findings[0]
    assert top.category == "mixed_batch" and "fewer drafts" in top.basis
    assert an.facts.startup["near_limit_prose"] == "close to max_model_len"


def _nemotron_start(block: int, padding: float) -> list[str]:
    return [
        f"INFO 01-27 15:20:44 [config.py:476] Setting attention block size to {block} tokens to ensure that attention "
        "page size is >= mamba page size.",
        f"INFO 01-27 15:20:44 [config.py:500] Padding mamba page size by {padding}% to ensure that mamba page size and "
        "attention page size are exactly equal.",
    ]


def test_capacity_lost_when_a_start_pads_the_state_pages_far_more_is_the_page_unification():
    """NemotronH with and without prefix caching: the chunk-aligned block pads every state page by 8.47 % instead of
    1.08 %, and the reporter says the server now starts preempting -- the padding is where the memory went."""
    said = ["vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --enable-prefix-caching",
            "With prefix caching on, the server starts preempting at a load it handled fine before."]
    an = _analyze(said + _nemotron_start(1312, 1.08) + [""] + _nemotron_start(1408, 8.47))
    top = an.findings[0]
    assert top.category == "kv_page_size" and top.numbers["mamba_padding_percent"] == 8.47
    # the same two starts, the report about slow prefix hits: the padding is not what it asks about
    hits = _analyze(["vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --enable-prefix-caching",
                     "The prefix cache hit rate stays at 0% and TTFT is ~3x worse."]
                    + _nemotron_start(1312, 1.08) + [""] + _nemotron_start(1408, 8.47))
    assert hits.findings[0].category != "kv_page_size"


def test_an_eval_gate_failed_by_sampling_from_the_models_generation_config_is_outside_the_families():
    """vLLM 0.17+ says 'Default vLLM sampling parameters have been overridden by the model's generation_config.json';
    the eval suite sends no temperature, so the canary samples -- and 'failed the gate' is the report's verdict, not
    an error line."""
    an = _analyze([
        "eval-gate FAILED: qnext-mtp-canary", "gen kwargs: max_gen_toks=4096   # temperature not set -> server default",
        "The canary config failed the gate twice; scores still ~2 points down.",
        "(APIServer pid=1) INFO 07-08 09:12:44 [api_utils.py:286] non-default args: {'model': "
        "'Qwen/Qwen3-Next-80B-A3B-Instruct', 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
        "(APIServer pid=1) WARNING 07-08 09:12:58 [model.py:1759] Default vLLM sampling parameters have been overridden "
        "by the model's `generation_config.json`: `{'temperature': 0.7, 'top_k': 20, 'top_p': 0.8}`. If this is not "
        "intended, please relaunch vLLM instance with `--generation-config vllm`.",
    ])
    assert an.facts.startup["generation_config_sampling"].startswith("{'temperature': 0.7")
    assert not an.facts.startup.get("error_lines")
    assert an.findings[0].category == "other" and "generation_config" in an.findings[0].title


def test_a_gateway_that_prepends_a_request_id_to_every_prompt_explains_the_lost_hits():
    an = _analyze([
        "Prefix cache hit rate on Qwen3-Next dropped from ~55% to ~3% overnight.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching",
        "Found it: the API gateway's new feature prepends a line like `Request-ID: 7f3c...; Received:",
        "2026-09-02T01:14:39.811Z` to the *start* of every system prompt.",
    ])
    assert an.findings[0].category == "other" and "per-request value" in an.findings[0].title


def test_a_dsa_indexer_that_flattens_its_decode_explains_the_slowdown_with_deeper_drafts():
    an = _analyze([
        "ITL p99 much slower on the H100 DeepSeek-V3.2 pool after num_speculative_tokens went from 1 to 3.",
        "(Worker_TP0 pid=421) INFO 06-17 14:14:02 [indexer.py:306] DSA indexer decode path: use_flattening=True "
        "(next_n=4, use_fp4_indexer_cache=False)",
        "And on Tuesday (k=1):",
        "(Worker_TP0 pid=419) INFO 06-15 09:31:40 [indexer.py:306] DSA indexer decode path: use_flattening=False "
        "(next_n=2, use_fp4_indexer_cache=False)",
    ])
    top = an.findings[0]
    assert top.category == "spec_kernel_limit" and top.numbers["next_n"] == 4


def test_a_benchmark_clients_disconnect_is_the_aftermath_not_the_root():
    """`vllm bench serve` prints aiohttp's ServerDisconnectedError above the server's own traceback: the server's
    assertion is the root."""
    an = _analyze([
        "Traceback (most recent call last):",
        '  File ".../aiohttp/client_reqrep.py", line 1112, in start',
        "    message, payload = await protocol.read()",
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected",
        "",
        "(Worker_TP0 pid=2241) ERROR 03-26 22:15:33 [multiproc_executor.py:880] Traceback (most recent call last):",
        "(Worker_TP0 pid=2241) ERROR 03-26 22:15:33 [multiproc_executor.py:880]   File \".../vllm/v1/attention/backends/"
        "utils.py\", line 652, in reshape_query_for_spec_decode",
        "(Worker_TP0 pid=2241) ERROR 03-26 22:15:33 [multiproc_executor.py:880] AssertionError: total_tokens=7 is not "
        "divisible by batch_size=3",
    ])
    assert an.facts.root.exc_type == "AssertionError"
    assert an.findings[0].category == "spec_kernel_limit"


def test_the_error_of_a_side_attempt_introduced_on_the_line_before_is_not_the_reports():
    an = _analyze([
        "Qwen3.5 prefix cache hit rate stuck at 0.0% with the same ~700-token preamble on every request.",
        "vllm serve Qwen/Qwen3.5-27B --enable-prefix-caching",
        "(APIServer pid=7) INFO 09-02 14:11:06 [interface.py:918] Setting attention block size to 784 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "I tried --block-size 16 but the log still says 784. Also tried --mamba-cache-mode all: ",
        "  ValueError: ... (didn't save it, something about all mode not supported)",
    ])
    assert an.facts.root is None
    assert an.findings[0].category in ("prefix_cache_degraded", "block_size_alignment")
    # the same at the start of a sentence
    capital = _analyze(["Qwen3.5 prefix cache hit rate stuck at 0.0%.", "Tried `--mamba-block-size 64`:",
                        "  AssertionError: In Mamba cache align mode, block_size (544) must be <= max_num_batched_tokens"])
    assert capital.facts.root is None


def test_a_check_against_an_expression_is_not_a_check_against_its_first_constant():
    from vllm_diag.postmortem.numbers import check_numbers

    assert check_numbers("assert m.max_query_len == 1 + self.num_spec_tokens") == {}
    assert check_numbers("Assertion failed: next_n <= 4")["check_threshold"] == 4


def test_two_logged_prompts_that_part_at_a_timestamp_explain_the_missing_prefix_hits():
    """vLLM's request log shows each prompt starting with the current time: they part at a digit in their first
    characters, so no block is shared -- the client's template, not the hybrid's block size."""
    def req(rid: str, sec: str) -> str:
        return (f"(APIServer pid=1) DEBUG 07-03 14:29:{sec} [request_logger.py:53] Request chatcmpl-{rid} details: prompt: "
                f"\"<|start_of_role|>system<|end_of_role|>Current date and time: Thursday, 2026-07-03 14:29:{sec} CEST. "
                "You are the company assistant ...\"")
    an = _analyze(["Is prefix caching broken for granite-4.0-h? The prefix cache hit rate is 0.4%.",
                   "vllm serve ibm-granite/granite-4.0-h-tiny --enable-prefix-caching", req("8e1f", "57"), req("21a9", "58")])
    assert "part at character" in an.facts.startup["varying_prefix_prose"]
    assert an.findings[0].category == "other" and "per-request value" in an.findings[0].title


def test_a_batch_pinned_at_its_peak_with_an_empty_kv_cache_is_the_schedulers_cap():
    stats = ("(APIServer pid=1) INFO 05-12 09:15:{s} [loggers.py:271] Engine 000: Avg prompt throughput: 3012.5 tokens/s, "
             "Avg generation throughput: 1450.1 tokens/s, Running: 16 reqs, Waiting: {w} reqs, GPU KV cache usage: 7.9%, "
             "Prefix cache hit rate: 12.0%")
    an = _analyze(["Nemotron-3-Nano + MTP: never more than 16 running requests, the rest queue up.",
                   "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 --enable-prefix-caching "
                   "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
                   stats.format(s="40", w=84), stats.format(s="50", w=86)])
    top = an.findings[0]
    assert top.category == "other" and "16 running requests" in top.title
    # the same words with the KV cache full: the pool is the limit, not the scheduler
    full = _analyze(["never more than 16 running requests, the rest queue up.",
                     stats.format(s="40", w=84).replace("7.9%", "97.9%")])
    assert not full.findings or "scheduler" not in full.findings[0].title


def test_a_symptom_reading_outranks_a_crash_predicted_from_the_configuration_alone():
    """vLLM 0.17's GDN builder could not mix decodes and spec decodes (a pre-flight prediction); the report has no
    crash, only garbage on follow-up turns that hit the prefix cache: the reading of that symptom leads."""
    lines = [
        "Qwen3-Next + MTP + prefix caching on vLLM 0.17.0: from the 2nd/3rd turn on, maybe 1 in 5 responses goes off "
        "the rails.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "(APIServer pid=1) INFO 02-11 09:03:22 [loggers.py:259] Engine 000: Avg prompt throughput: 2210.5 tokens/s, "
        "Avg generation throughput: 1644.8 tokens/s, Running: 48 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.7%, "
        "Prefix cache hit rate: 63.0%",
        "(EngineCore_DP0 pid=9) INFO 02-11 09:01:02 [core.py:97] Initializing a V1 LLM engine (v0.17.0) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct'",
    ]
    an = analyze_text("\n".join(lines), "t.log", use_preflight=True)
    assert any(f.rule == "gdn_mixed_batch" and f.severity == "error" for f in an.findings)  # the prediction stands
    assert an.findings[0].category == "state_index"


def test_the_reporters_words_for_lost_capacity_and_changed_greedy_output():
    an = _analyze(["turning on --enable-prefix-caching makes the server fit ~8x fewer requests"])
    assert an.facts.startup["capacity_prose"] == "fit ~8x fewer requests"
    an = _analyze(["ngram speculative decoding changes greedy outputs on Qwen3.5 but not on dense models"])
    assert an.facts.startup["wrong_output_prose"] == "changes greedy outputs"
    an = _analyze(["The JSON goes into `\"notes\": \"` and then emits the same 3-4 tokens until max_tokens."])
    assert an.facts.startup["wrong_output_prose"] == "emits the same 3-4 tokens"
    # (each phrase on its own line, with no other word of the cheap pre-test beside it)
    an = _analyze(["With MTP the logprobs go bad for long generations."])
    assert an.facts.startup["wrong_output_prose"] == "logprobs go bad"
    an = _analyze(["determinism check: canary run   FAIL"])
    assert an.facts.startup["wrong_output_prose"].startswith("determinism check")


def test_a_captured_request_whose_system_prompt_opens_with_a_session_id_and_time_explains_lost_hits():
    an = _analyze([
        "Prefix cache hit rate ~0 on Qwen3-Next even with a long identical system prompt.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching",
        '{"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "messages": [',
        ' {"role": "system", "content": "Session: 7f3c2a9e-11b4-4d0e-9a55-2c81f0e3d6b1 | Now: 2026-04-27T09:40:11.482Z\\n'
        'You are Atlas, an operations assistant..."},',
    ])
    assert "opens with a per-request value" in an.facts.startup["varying_prefix_prose"]
    assert an.findings[0].category == "other"


def test_a_deeper_draft_much_slower_than_a_shallower_one_on_an_mla_model_is_the_kernel_limit():
    an = _analyze(["DeepSeek-V3.2-Exp: num_speculative_tokens=3 much slower than 1 on H200 (0.14.0)",
                   "vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8 --speculative-config "
                   "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":3}'"])
    assert an.facts.startup["spec_slower_prose"] == "num_speculative_tokens=3 much slower"
    assert an.findings[0].category == "spec_kernel_limit"
