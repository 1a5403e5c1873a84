"""Post-mortem, round twenty-seven: a queue the step's token budget makes under speculative decoding, read from vLLM's
own stats lines; a benchmark's random prompts against the production prefix a report also describes; the operator's
own logits processors read from a multi-line docker command; and a failure outside the families keeping the set-up's
family notes out. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _stats(running: int, waiting: int, usage: float) -> str:
    return (f"(APIServer pid=7) INFO 02-03 11:20:40 [loggers.py:310] Engine 000: Avg prompt throughput: 350.0 tokens/s, "
            f"Avg generation throughput: 3900.0 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
            f"GPU KV cache usage: {usage}%, Prefix cache hit rate: 40.0%")


_DRAFT_SERVE = ("vllm serve acme/dense-70b -tp 4 --max-num-seqs 700 --max-num-batched-tokens 4096 "
                "--speculative-config '{\"model\":\"acme/dense-1b\",\"method\":\"draft_model\",\"num_speculative_tokens\":4}'")


def test_decodes_taking_most_of_the_step_budget_while_requests_wait_are_the_token_budget():
    """700 x (1 + 4) = 3500 tokens is under the 4096 budget, but at 600 running 3000 of the step's 4096 tokens
    decode, and the waiting requests' prompts get the rest while the KV cache has room: family E's token budget, from
    the stats lines."""
    lines = ["Since we added the draft model, TTFT is 15 s under load and requests sit in Waiting; KV cache is mostly free.",
             _DRAFT_SERVE, _stats(600, 80, 28.5)]
    top = _analyze(lines).findings[0]
    assert top.category == "token_budget" and top.rule == "spec_token_budget"
    assert top.numbers["decode_tokens_per_step"] == 3000 and top.numbers["prefill_tokens_per_step"] == 1096
    assert top.numbers["num_requests_waiting"] == 80


def test_no_token_budget_queue_where_the_kv_cache_is_full_nothing_waits_or_decodes_take_little():
    said = "Since we added the draft model, TTFT is 15 s under load and requests sit in Waiting."
    for stats in (_stats(600, 80, 97.0),   # a full KV cache queues requests on its own
                  _stats(600, 0, 28.5),    # nothing waits
                  _stats(300, 80, 28.5)):  # 300 x 5 = 1500 of 4096: the budget has room for prefills
        findings = _analyze([said, _DRAFT_SERVE, stats]).findings
        assert not any(f.numbers.get("decode_tokens_per_step") for f in findings), stats


_GRANITE = ["vllm serve acme/granite-h-small --enable-prefix-caching --max-num-seqs 128",
            "(APIServer pid=8) INFO 05-12 10:02:51 [interface.py:905] Setting attention block size to 416 tokens to "
            "ensure that attention page size is >= mamba page size."]


def _hits(rate: float) -> str:
    return ("(APIServer pid=8) INFO 05-12 10:21:07 [loggers.py:310] Engine 000: Avg prompt throughput: 28941.6 tokens/s, "
            "Avg generation throughput: 2460.1 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 17.0%, "
            f"Prefix cache hit rate: {rate}%")


def test_a_random_dataset_benchmark_measures_its_own_prompts_not_the_production_prefix():
    """The report describes production's shared 3,000-token system prompt, but the hit rate it quotes comes from vLLM's
    random dataset, whose prompts share nothing (its prefix length split onto the command's next line)."""
    lines = ["Production traffic has a ~3,000 token system prompt shared by all requests. With granite the prefix "
             "cache hit rate stays under 1%.", *_GRANITE,
             "  vllm bench serve --model acme/granite-h-small --dataset-name random \\",
             "      --random-input-len 3500 --random-output-len 300 --random-prefix-len 0 \\",
             "      --num-prompts 1500 --max-concurrency 64", _hits(0.4), _hits(0.4)]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "share no prefix" in top.title


def test_a_random_dataset_with_a_prefix_on_the_next_line_shares_that_prefix():
    lines = ["With granite the prefix cache hit rate stays under 1% in our benchmark.", *_GRANITE,
             "  vllm bench serve --model acme/granite-h-small --dataset-name random \\",
             "      --random-input-len 500 --random-prefix-len 300 --num-prompts 1500", _hits(0.4), _hits(0.4)]
    st = facts_from_text("\n".join(lines)).startup
    assert st["random_prefix_len"] == 300
    top = _analyze(lines).findings[0]
    assert "share no prefix" not in top.title


_DEVICE_ASSERT = [
    "(Worker_TP0 pid=210) /pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], thread: "
    "[4,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
    "(Worker_TP0 pid=210) ERROR 11-28 10:41:09 [multiproc_executor.py:1063] Traceback (most recent call last):",
    "(Worker_TP0 pid=210) ERROR 11-28 10:41:09 [multiproc_executor.py:1063]   File \"/usr/lib/python3.12/site-packages/"
    "vllm/v1/worker/gpu_model_runner.py\", line 7195, in _to_list",
    "(Worker_TP0 pid=210) ERROR 11-28 10:41:09 [multiproc_executor.py:1063]     self.transfer_event.synchronize()",
    "(Worker_TP0 pid=210) ERROR 11-28 10:41:09 [multiproc_executor.py:1063] torch.AcceleratorError: CUDA error: "
    "device-side assert triggered",
]


def test_the_operators_logits_processors_in_a_multi_line_docker_command_explain_an_index_assert():
    """The image's entrypoint is vllm serve: the flags after it are the engine's, --logits-processors among them (a
    list value, kept); a hybrid with prefix caching around it does not make the index kernel's fault the state's."""
    lines = ["Hybrid granite on 2x L40S dies with a device-side assert after a few hundred requests.",
             "docker run --gpus all vllm/vllm-openai:v0.32.0 \\",
             "  --model acme/granite-h-small --tensor-parallel-size 2 \\",
             "  --max-model-len 32768 --enable-prefix-caching \\",
             "  --logits-processors acme_lp.boost:BoostLogitsProcessor", "",
             "(EngineCore pid=57) INFO 11-28 10:01:12 [config.py:688] Mamba cache mode is set to 'align' for "
             "GraniteMoeHybridForCausalLM by default when prefix caching is enabled", *_DEVICE_ASSERT]
    assert facts_from_text("\n".join(lines)).args["logits_processors"] == ["acme_lp.boost:BoostLogitsProcessor"]
    top = _analyze(lines).findings[0]
    assert top.category == "other"


def test_a_start_up_failure_outside_the_families_leaves_the_set_ups_family_warnings_out():
    """vLLM refuses bf16 on a T4 at start-up; its startup line that prefix caching is off for the hybrid explains
    nothing of that, so it is a note left out, not a second finding of a family."""
    lines = ["vllm serve acme/jamba-mini --enable-prefix-caching --dtype bfloat16",
             "(EngineCore_DP0 pid=611) INFO 02-01 09:00:01 [config.py:297] Hybrid or mamba-based model detected: "
             "disabling prefix caching since it is not yet supported.",
             "the engine then stops with: ValueError: Bfloat16 is only supported on GPUs with compute capability of at "
             "least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly "
             "setting the `dtype` flag in CLI, for example: --dtype=half."]
    findings = _analyze(lines).findings
    assert findings[0].category == "other" and findings[0].severity == "error"
    assert all(f.category == "other" for f in findings)


def test_nvidia_smis_table_keeps_its_hottest_gpu():
    """Four GPUs under the same load, one at 89 C drawing 301 W: the one a thermal slowdown names, not the first row."""
    rows = ["| N/A   63C    P0            498W /  700W |  74210MiB /  81559MiB |     100%      Default |",
            "| N/A   89C    P0            301W /  700W |  74210MiB /  81559MiB |     100%      Default |",
            "| N/A   64C    P0            511W /  700W |  74210MiB /  81559MiB |     100%      Default |"]
    st = facts_from_text("\n".join(["nvidia-smi during load:", *rows])).startup
    assert (st["gpu_temp_c"], st["power_draw_w"]) == (89, 301)
    # nvidia-smi -q's own temperature, read first, is the GPU it was asked about: the table does not replace it
    st = facts_from_text("\n".join(["    GPU Current Temp                  : 71 C", *rows])).startup
    assert st["gpu_temp_c"] == 71


def test_a_containers_cpu_limit_as_kubectl_prints_it():
    json_line = '{"limits":{"cpu":"2","memory":"200Gi","nvidia.com/gpu":"4"},"requests":{"cpu":"2"}}'
    assert facts_from_text(json_line).startup["cpu_limit_cores"] == 2
    describe = ["kubectl describe pod (resources part):", "    Limits:", "      cpu:             2",
                "      memory:          96Gi"]
    assert facts_from_text("\n".join(describe)).startup["cpu_limit_cores"] == 2


def test_how_long_the_same_request_took_sent_straight_to_the_engine():
    for said, want in (("Direct curl to the pod IP with the same payload: returns 200 after 97 s.", 97.0),
                       ("curl directly to :8000 from the same host: finish_reason \"stop\" (3412 tokens, took 79 s)", 79.0),
                       ("same prompt straight to the pod IP (bypassing ingress): 200 OK after 68.3 s, full answer.", 68.3)):
        assert facts_from_text(said).startup["direct_request_s"] == want
    assert "direct_request_s" not in facts_from_text("we call vLLM directly from the app, it took a while").startup


def test_vllms_request_log_with_its_parameters_first_shows_the_prompts_parting_at_a_time():
    """vLLM's request log printing the sampling parameters before the prompt: two prompts that part at their first
    characters (a time the client puts first) share no cached block -- the near miss, not the hybrid's block."""
    def received(rid: str, ts: str) -> str:
        return (f"(APIServer pid=1) INFO 11-17 10:09:41 [logger.py:64] Received request chatcmpl-{rid}: params: "
                f"SamplingParams(n=1, temperature=0.2, max_tokens=768), prompt: '<|system|>\\nNow: {ts} | "
                f"req={rid}\\nYou are the support agent of Acme. Answer briefly and cite the policy.'")
    lines = ["hybrid pods show basically zero prefix cache hits although every call sends the same 3.8k-token system "
             "prompt", *_GRANITE, received("90e1c7", "2026-11-17T10:09:41.498731Z"),
             received("f2b7aa", "2026-11-17T10:09:41.877102Z"), _hits(0.4), _hits(0.3)]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "per-request value" in top.title


def test_a_wrong_output_report_is_not_answered_by_the_prefix_caches_block_granularity():
    lines = ["Falcon-H1 outputs gibberish with ngram spec decode, it keeps talking to itself.",
             "vllm serve acme/falcon-h1 --enable-prefix-caching --speculative-config "
             "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'",
             "(APIServer pid=7) INFO 11-12 16:30:02 [config.py:504] Setting attention block size to 1088 tokens to "
             "ensure that attention page size is >= mamba page size.", _hits(0.0), _hits(0.0)]
    assert not any(f.category == "prefix_cache_degraded" for f in _analyze(lines).findings[:1])


def test_an_evaluations_failed_samples_holding_the_gold_answer_are_the_graders():
    lines = ["GSM8K score dropped from 0.93 to 0.61 after enabling fp8 KV + MTP on our hybrid.",
             '{"id": "gsm8k-0113", "gold": "18", "pred": "3",',
             ' "response": "She eats 3 and bakes with 4, so 9 eggs are left: 9 * 2 = 18.\\n\\n**Answer: 18**"}']
    st = facts_from_text("\n".join(lines)).startup
    assert "gold answer 18" in st["eval_misgraded"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "grader" in top.title
    # a failed sample whose response does not end with the gold answer is the model's
    wrong = [lines[0], lines[1], ' "response": "18 eggs minus 3 eaten is 15, so **Answer: 3**"}']
    assert "eval_misgraded" not in facts_from_text("\n".join(wrong)).startup


def test_a_benchmark_of_answers_of_a_few_tokens_is_a_prefill_bound_workload():
    lines = ["Generation throughput from vLLM's log is terrible with MTP on our hybrid, and acceptance is super low.",
             "vllm serve acme/nemotron-h -tp 2 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "============ Serving Benchmark Result ============", "Successful requests:                     4000",
             "Total input tokens:                      14012877", "Total generated tokens:                  17244",
             "=================================================="]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "prefill-bound" in top.title
    assert top.numbers["generated_tokens_per_request"] == 4.31


def test_a_client_counting_one_token_per_chunk_under_drafts():
    lines = ["DeepSeek MTP makes decode SLOWER and responses shorter in our load tester",
             "vllm serve acme/dsv3 -tp 8 --speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":3}'",
             "async for chunk in stream:", "    if chunk.choices and chunk.choices[0].delta.content:",
             "        n_tokens += 1          # one chunk == one token"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "chunks as tokens" in top.title


def test_vllms_own_word_that_a_draft_path_holds_no_config_is_missing_files():
    lines = ["vllm serve acme/qwen35-moe --enable-prefix-caching --speculative-config "
             "'{\"method\":\"eagle3\",\"model\":\"/data/drafts/eagle3\",\"num_speculative_tokens\":4}'",
             "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
             "  Value error, Invalid repository ID or local directory specified: '/data/drafts/eagle3'.",
             "Please verify the following requirements:"]
    findings = _analyze(lines).findings
    assert all(f.category == "other" for f in findings)


def test_trials_told_with_a_soaks_length_and_no_crash_put_the_fault_in_the_families():
    """"--enable-prefix-caching removed -> 6h soak no crash" ends the fault with prefix caching off; beside it, a
    colleague's "the bf16 one with the same flags was ok" clears nothing."""
    lines = ["Qwen3-Next + MTP + prefix caching crashes after 20-40 min with an illegal memory access.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking-FP8 -tp 4 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
             "(Worker_TP0 pid=451) ERROR 03-04 11:49:24 [multiproc_executor.py:948] torch.AcceleratorError: CUDA error: "
             "an illegal memory access was encountered",
             "we had the bf16 one on 0.24 with the same flags and it was ok-ish",
             "Tried on staging: --enable-prefix-caching removed -> 6h soak no crash. Prefix caching on + no "
             "--speculative-config -> also no crash so far (3h). Both on -> crash in 25 min."]
    st = facts_from_text("\n".join(lines)).startup
    assert st["prefix_caching_needed"].startswith("Tried on staging")
    assert _analyze(lines).findings[0].category == "state_index"


def test_a_plain_text_transcript_sent_to_the_completions_endpoint_is_the_clients_request_format():
    lines = ["Since the move from TGI the answers ramble: the model answers, then writes \"User:\" and a new question "
             "of its own until max_tokens.",
             "vllm serve acme/qwen3-next -tp 4 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
             "(APIServer pid=2210) INFO 11-18 10:03:51 [logger.py:50] Received request cmpl-8f1c-0: prompt: 'You are "
             "HelpBot.\\n\\nUser: how do i reset my vpn token?\\nAssistant:', params: SamplingParams(n=1)",
             '(APIServer pid=2210) INFO:     10.40.3.17:51522 - "POST /v1/completions HTTP/1.1" 200 OK']
    st = facts_from_text("\n".join(lines)).startup
    assert st["completions_call"] == "POST /v1/completions" and st["plain_transcript"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "/v1/completions" in top.title
    # the server's own route table names the endpoint without any client calling it
    assert "completions_call" not in facts_from_text(
        "(APIServer pid=702) INFO:     Route: /v1/completions, Methods: POST").startup


def test_cuda_launch_blocking_left_in_the_engines_environment_slows_every_step():
    lines = ["Qwen3-Next with MTP is super slow on our new node, GPU at 260 W despite 100% util.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
             "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":3}'",
             "our shared env file:", "CUDA_LAUNCH_BLOCKING=1", "TORCH_SHOW_CPP_STACKTRACES=1"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "CUDA_LAUNCH_BLOCKING" in top.title
    # a debugging rerun told in words is no setting the slow engine ran with
    rerun = lines[:2] + ["I re-ran once with CUDA_LAUNCH_BLOCKING=1 to find the kernel"]
    assert "CUDA_LAUNCH_BLOCKING" not in _analyze(rerun).findings[0].title


def test_capture_sizes_as_vllm_keeps_them_under_drafts():
    """vLLM rounds the operator's sizes up to multiples of 1 + k and drops those past the largest: [1..128] with k=2
    keeps [3, 6, 9, 18, 33, 66], so a decode step of 32 requests (96 tokens) runs without a graph -- the capture-size
    class, not the drafts' compute at a large batch."""
    from vllm_diag.rules.spec_capture_sizes import rounded_for_drafts
    assert rounded_for_drafts([1, 2, 4, 8, 16, 32, 64, 128], 2) == [3, 6, 9, 18, 33, 66]
    assert rounded_for_drafts([1, 2], 3) == [] and rounded_for_drafts([2, 8], 3) == [4, 8]
    lines = ["Qwen3-32B + EAGLE3: TPOT triples above ~20 concurrent users and at 32 EAGLE3 is *slower* than no "
             "speculation.",
             "vllm serve Qwen/Qwen3-32B --speculative-config '{\"method\":\"eagle3\",\"model\":\"acme/eagle3\","
             "\"num_speculative_tokens\":2}' --compilation-config '{\"cudagraph_capture_sizes\":[1,2,4,8,16,32,64,128]}'",
             "(APIServer pid=1) INFO 04-20 16:50:02 [loggers.py:310] Engine 000: Avg prompt throughput: 900.0 tokens/s, "
             "Avg generation throughput: 1500.0 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 20.0%"]
    top = _analyze(lines).findings[0]
    assert top.category == "cudagraph_shape" and top.numbers["max_cudagraph_capture_size"] == 66


def test_answers_the_model_cuts_in_the_middle_are_truncated_answers():
    lines = ["granite-4.0-h-small cuts answers in the middle -- hybrid issue?",
             '   "finish_reason":"length"}],', '  "usage":{"prompt_tokens":9412,"completion_tokens":256}',
             "    resp = client.chat.completions.create(model=M, messages=msgs, temperature=0, max_tokens=256)"]
    assert facts_from_text("\n".join(lines)).startup["truncated_prose"] == "cuts answers"


def test_a_crash_dumps_draft_lists_elided_with_brackets_still_count():
    dump = ("(EngineCore pid=9) ERROR 11-19 03:12:09 [dump_input.py:79] Dumping scheduler output for model execution: "
            "SchedulerOutput(scheduled_new_reqs=[], num_scheduled_tokens={a: 4, b: 4, c: 2, [...]}, "
            "total_num_scheduled_tokens=10, scheduled_spec_decode_tokens={a: [11, 12, 13], b: [14, 15, 16], "
            "c: [17], [...]}, [...])")
    batch = facts_from_text(dump).startup["crash_batch"]
    assert batch["spec_tokens_per_req"] == [3, 3, 1] and batch["ragged_drafts"] is True


_NANO_SERVE = "vllm serve acme/nemotron-nano-hybrid --max-num-seqs 384 --enable-prefix-caching"


def _running(n: int, waiting: int, usage: float) -> str:
    return (f"(APIServer pid=5390) INFO 05-06 11:31:40 [loggers.py:262] Engine 000: Avg prompt throughput: 4381.2 "
            f"tokens/s, Avg generation throughput: 301.6 tokens/s, Running: {n} reqs, Waiting: {waiting} reqs, GPU KV "
            f"cache usage: {usage}%, Prefix cache hit rate: 12.5%")


def test_a_thread_pool_at_its_default_size_caps_the_clients_concurrency():
    lines = ["our hybrid only ever runs 8 requests at once?? I set max-num-seqs 384.", _NANO_SERVE,
             _running(8, 0, 1.2), "with cf.ThreadPoolExecutor() as ex:      # 200 docs in parallel",
             "    results = list(ex.map(summarize, docs))"]
    assert facts_from_text("\n".join(lines)).startup["client_cap_prose"] == "ThreadPoolExecutor()"
    assert _analyze(lines).findings[0].title.startswith("Concurrency capped by the client")


def test_vllms_stats_with_nothing_waiting_put_a_low_running_count_in_front_of_the_engine():
    lines = ["our hybrid only ever runs 8 requests at once?? I set max-num-seqs 384.", _NANO_SERVE,
             _running(8, 0, 1.2), _running(8, 0, 1.4)]
    assert _analyze(lines).findings[0].title.startswith("Fewer requests arrive than expected")
    # requests waiting, or a KV cache past half full, hold them in the engine
    for stats in (_running(8, 5, 1.2), _running(8, 0, 72.0)):
        assert not _analyze(lines[:2] + [stats]).findings[0].title.startswith("Fewer requests arrive")


def test_a_linear_attention_builders_query_length_check_during_capture_is_the_capture_shape():
    """The check that a batch's query is at most 1 + k tokens, raised from build_for_cudagraph_capture: the FULL graph's
    dummy batch under drafts (family E), not a mixed batch the engine served."""
    lines = ["vllm serve acme/ring-linear-flash --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":4}' "
             "--compilation-config '{\"cudagraph_mode\":\"FULL\"}'",
             "Traceback (most recent call last):",
             '  File ".../vllm/v1/worker/gpu_model_runner.py", line 6178, in _dummy_run',
             "    attn_metadata, _ = self._build_attention_metadata(",
             '  File ".../vllm/v1/attention/backends/linear_attn.py", line 172, in build_for_cudagraph_capture',
             "    assert common_attn_metadata.max_query_len <= 1 + self.num_spec_tokens, (",
             "AssertionError: Bailing linear attention only supports speculative decoding with query length <= 1 + "
             "number of speculative tokens."]
    assert _analyze(lines).findings[0].category == "cudagraph_shape"


def test_a_served_engine_contradicts_the_prediction_that_mode_all_with_drafts_dies_at_start():
    """vLLM 0.22-0.32 die in CUDA-graph capture or at the first decode with Mamba cache mode 'all' and drafts -- unless
    the log shows this engine generating tokens without an error: then the prediction is not this run's."""
    from vllm_diag.rules.base import RuleContext
    from vllm_diag.rules.mamba_state_indices import _served
    served = facts_from_text(_running(24, 0, 3.9))
    assert _served(RuleContext(state=None, log=served))
    assert not _served(RuleContext(state=None, log=facts_from_text("no stats here")))


def test_a_slow_serving_complaint_told_as_the_gpu_left_idle_or_a_ttft_range():
    for said in ("GPU sits at 30% util, TTFT 3-6 s at only 24 concurrent", "TTFT p50 3.4 s, p99 6.1 s",
                 "GPU utilization is only 30%"):
        assert facts_from_text(said).startup.get("slow_prose"), said
    assert not facts_from_text("GPU is at 95% util, all good").startup.get("slow_prose")


def test_a_per_request_value_at_the_prompts_head_comes_before_an_inferred_acceptance_loss():
    """The report's own diff of two rendered prompts (a time at the system turn's head) explains the lost hits; its
    aside that acceptance is low, on a hybrid with drafts, is no reason to infer a state fault first."""
    lines = ["granite-h prefix caching does nothing: p50 TTFT 180 ms -> 1.1 s after the switch.",
             "vllm serve acme/granite-h-tiny --enable-prefix-caching --mamba-cache-mode align "
             "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3}'",
             "INFO 11-20 09:01:12 [interface.py:933] Setting attention block size to 528 tokens to ensure that attention "
             "page size is >= mamba page size.", _hits(0.4), _hits(0.4),
             "  -<|start_of_role|>system<|end_of_role|>Current time: 2026-11-20T10:14:38.552Z. Ticket session 8f1c0a",
             "  +<|start_of_role|>system<|end_of_role|>Current time: 2026-11-20T10:14:38.919Z. Ticket session 19de77",
             "Open item: ngram acceptance is low (23.7%) for this traffic; separate ticket."]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "per-request value" in top.title


def test_a_greedy_request_that_gives_a_different_wrong_answer_is_wrong_output():
    said = "repeated identical greedy request gives different (wrong) answer on cache hit"
    assert facts_from_text(said).startup["wrong_output_prose"]


def test_a_config_validators_enum_lookup_by_a_name_it_lacks_is_a_flag_value():
    lines = ["llm = LLM(model='acme/qwen-mtp', compilation_config={'cudagraph_mode': 'FULL_DECODE'}, "
             "speculative_config={'method': 'mtp', 'num_speculative_tokens': 2})",
             "Traceback (most recent call last):",
             '  File "/venv/lib/python3.12/site-packages/vllm/config/compilation.py", line 882, in '
             "validate_cudagraph_mode_before",
             "    return CUDAGraphMode[value.upper()]",
             '  File "/usr/lib/python3.12/enum.py", line 813, in __getitem__',
             "    return cls._member_map_[name]",
             "KeyError: 'FULL_DECODE'"]
    assert _analyze(lines).findings[0].category == "other"


def test_eager_mode_explains_a_per_token_slowdown_beside_a_hang_word_elsewhere():
    """A helm value's comment ("debugging startup hang") is no hang of the serving engine; a TPOT measured is
    decoding."""
    lines = ["pool is way behind SLO since the rollout. TPOT p50 went 9ms -> 31ms, TTFT roughly same.",
             "extraArgs:", "  - --enable-prefix-caching", "  - --enforce-eager            # TEMP: debugging startup hang",
             "WARNING 02-11 09:41:02 [vllm.py:1163] Enforce eager set, disabling torch.compile and CUDAGraphs."]
    assert "eager mode" in _analyze(lines).findings[0].title


def test_a_ceiling_on_running_requests_in_the_reporters_words():
    for said in ("can't get past ~8 concurrent, throughput flat", "Engine never shows more than 8 running."):
        assert facts_from_text(said).startup.get("capacity_prose"), said


def test_prompts_vllm_logged_in_another_model_familys_chat_format():
    lines = ["After migrating from Llama-3.1-8B to granite-4.0-h-small maybe 1 of 3 answers is garbage.",
             "vllm serve ibm-granite/granite-4.0-h-small --chat-template /srv/bot/chat_template.jinja",
             "(APIServer pid=9021) DEBUG 11-29 16:44:31 [request_logger.py:53] Request chatcmpl-a81f details: prompt: "
             "'<|begin_of_text|><|start_header_id|>system<|end_header_id|>\\n\\nYou are the Acme support assistant.'"]
    st = facts_from_text("\n".join(lines)).startup
    assert st["foreign_template_tokens"].startswith("Llama 3 turn markers")
    assert _analyze(lines).findings[0].title.startswith("Prompts in another model's chat format")
    # the model's own format is no foreign one
    own = [lines[0], "vllm serve meta-llama/Llama-3.1-8B-Instruct", lines[2]]
    assert "foreign_template_tokens" not in facts_from_text("\n".join(own)).startup


def test_nginx_least_connections_balancing_spreads_a_sessions_turns():
    lines = ["TTFT p50 went from 0.4s to 2.9s after the migration; prefix cache hit rate is low on all 4 replicas.",
             "vllm serve acme/nemotron-nano --enable-prefix-caching", _hits(9.0), _hits(9.0),
             "upstream nemotron_backend {", "    least_conn;", "    server 10.42.3.17:8000;", "}"]
    assert facts_from_text("\n".join(lines)).startup["split_routing_prose"].strip() == "least_conn;"
    assert _analyze(lines).findings[0].title.startswith("Prefix cache split across replicas")


def test_a_decode_latency_above_its_target_is_slow():
    assert facts_from_text("decode latency way above estimate on the L40S box").startup.get("slow_prose")


def test_prompts_of_a_hundred_thousand_tokens_make_the_first_token_prefill_bound():
    lines = ["after rollout to all team the TTFT p50 is 14 s and p99 more than 50 s.",
             "vllm serve acme/kimi-linear -tp 2 --max-model-len 262144 --enable-prefix-caching",
             "(APIServer pid=3321) INFO 05-06 11:12:40 [loggers.py:310] Engine 000: Avg prompt throughput: 15873.2 tokens/s, "
             "Avg generation throughput: 96.4 tokens/s, Running: 6 reqs, Waiting: 11 reqs, GPU KV cache usage: 35.0%",
             "  prompt_tokens  p50   : 96,410", "  prompt_tokens  p90   : 171,228"]
    assert facts_from_text("\n".join(lines)).startup["request_tokens_prose"] == 96410
    top = _analyze(lines).findings[0]
    assert top.category == "other" and top.numbers["prefill_seconds_per_prompt"] == 6.1


def test_a_dumps_draft_dict_names_requests_its_elided_id_lists_hide():
    """The drafts' dict names requests the elided id lists do not: they are of the step, and one listed with no
    drafts is a plain decode beside the spec decodes."""
    from vllm_diag.postmortem.dump import parse_scheduler_output
    dump = ("SchedulerOutput(scheduled_new_reqs=[NewRequestData(req_id=r-1,prompt_token_ids_len=2048,...)], "
            "scheduled_cached_reqs=CachedRequestData(req_ids=[...35 ids...], [...]), num_scheduled_tokens={[...]}, "
            "total_num_scheduled_tokens=2237, scheduled_spec_decode_tokens={r-7: [10, 11, 12], r-8: [13], r-9: []}, "
            "[...])")
    batch = parse_scheduler_output(dump, 3, None)
    assert batch["num_spec_decodes"] == 2 and batch["num_decodes"] == 1 and batch["mixed"] is True


def test_the_block_size_vllms_cache_config_metric_labels_counts_the_blocks_a_short_request_holds():
    lines = ["Nemotron Nano stuck at ~94 running requests, KV cache 100%, max_num_seqs=256; requests are tiny.",
             "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --max-model-len 131072 --max-num-seqs 256",
             "(EngineCore_DP0 pid=5688) INFO 10-02 07:57:02 [kv_cache_utils.py:2327] GPU KV cache size: 148,896 tokens, "
             "Maximum concurrency for 131,072 tokens per request: 1.14x", _running(94, 1874, 100.0),
             'vllm:cache_config_info{block_size="1584",cache_dtype="auto",num_gpu_blocks="94"} 1.0']
    from vllm_diag.postmortem.quietmisses import blocks_per_running_request
    assert round(blocks_per_running_request(facts_from_text("\n".join(lines))), 2) == 1.0
