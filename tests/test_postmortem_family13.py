"""Post-mortem, round thirteen: what a pod's own events say. The logs are written here in vLLM's and the kubelet's
own formats."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

_START = [
    "args: [\"--model\", \"Qwen/Qwen3-Next-80B-A3B-Instruct\", \"--tensor-parallel-size\", \"4\", "
    "\"--speculative-config\", \"{\\\"method\\\":\\\"qwen3_next_mtp\\\",\\\"num_speculative_tokens\\\":2}\"]",
    "livenessProbe:",
    "  httpGet: {path: /health, port: 8000}",
    "  initialDelaySeconds: 240",
    "  periodSeconds: 20",
    "  failureThreshold: 4",
    "(Worker_TP0 pid=201) INFO 03-02 11:20:41 [gpu_model_runner.py:4118] Model loading took 37.80 GiB memory and "
    "251.402117 seconds",
    "(Worker_TP0 pid=201) INFO 03-02 11:22:02 [backends.py:609] Dynamo bytecode transform time: 31.20 s",
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  12%|#2        | 8/67 [00:03<00:21,  2.7it/s]",
]


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def test_a_container_killed_by_its_liveness_probe_mid_start_is_a_near_miss_with_the_probes_numbers():
    events = [
        "  Warning  Unhealthy  4m10s (x4 over 5m30s)  kubelet  Liveness probe failed: Get "
        "\"http://10.4.1.9:8000/health\": dial tcp 10.4.1.9:8000: connect: connection refused",
        "  Normal   Killing    4m10s                  kubelet  Container vllm failed liveness probe, will be restarted",
        "    Last State:     Terminated",
        "      Exit Code:    137",
        "    Restart Count:  5",
    ]
    an = _analyze(_START + events)
    d = an.findings[0] if an.findings else None
    assert d is not None and d.category == "other" and d.rule == "near_miss"
    assert "probe" in d.title
    for name, value in (("probe_initial_delay_seconds", 240), ("probe_period_seconds", 20),
                        ("probe_failure_threshold", 4), ("restart_count", 5), ("exit_code", 137)):
        assert d.numbers[name] == value, name
    assert abs(d.numbers["model_loading_seconds"] - 251.402117) < 1e-6


def test_a_failing_readiness_probe_alone_is_not_a_kill():
    events = ["  Warning  Unhealthy  40s (x9 over 3m)  kubelet  Readiness probe failed: Get "
              "\"http://10.4.1.9:8000/health\": dial tcp 10.4.1.9:8000: connect: connection refused"]
    an = _analyze(_START + events)
    d = an.findings[0] if an.findings else None
    assert d is None or "probe" not in d.title


_W = "(Worker_TP1 pid=388) ERROR 05-14 09:02:11 [multiproc_executor.py:839] "
_SP = "/usr/local/lib/python3.12/site-packages"


def _split_crash(file: str, function: str, line: int, code: str, sizes: str, rows: int) -> list[str]:
    return [
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3}'",
        _W + "Traceback (most recent call last):",
        _W + f'  File "{_SP}/vllm/v1/worker/gpu_model_runner.py", line 1781, in _prepare_inputs',
        _W + "    attn_metadata_i = builder.build(",
        _W + f'  File "{_SP}/vllm/{file}", line {line}, in {function}',
        _W + f"    {code}",
        _W + f'  File "{_SP}/torch/functional.py", line 222, in split',
        _W + "    return tensor.split(split_size_or_sections, dim)",
        _W + f"RuntimeError: split_with_sizes expects split_sizes to sum exactly to {rows} (input tensor's size at "
             f"dimension 0), but got split_sizes=[{sizes}]",
    ]


def test_a_builders_state_index_split_names_its_parts_decodes_and_prefills():
    an = _analyze(_split_crash("v1/attention/backends/mamba_attn.py", "build", 330,
                               "state_indices_tensor_d, state_indices_tensor_p = torch.split(", "13, 2", 16))
    assert (an.facts.numbers["num_decodes"], an.facts.numbers["num_prefills"]) == (13, 2)
    assert an.facts.numbers["split_sizes_expected_sum"] == 16


def test_a_mixers_split_is_per_token_and_another_split_is_left_unnamed():
    mixer = _analyze(_split_crash("model_executor/layers/mamba/mamba_mixer2.py", "forward_cuda", 640,
                                  "dt_d, dt_p = torch.split(", "40, 512", 560))
    assert (mixer.facts.numbers["num_decode_tokens"], mixer.facts.numbers["num_prefill_tokens"]) == (40, 512)
    other = _analyze(_split_crash("model_executor/layers/rotary_embedding.py", "forward", 88,
                                  "q, k = torch.split(", "64, 64", 160))
    assert "num_decodes" not in other.facts.numbers and "num_decode_tokens" not in other.facts.numbers


def test_cached_requests_elided_to_their_count_still_count_beside_a_new_one():
    from vllm_diag.postmortem.dump import parse_scheduler_output

    step = parse_scheduler_output(
        "SchedulerOutput(scheduled_new_reqs=[NewRequestData(req_id=cmpl-7,prompt_token_ids_len=5120,...)], "
        "scheduled_cached_reqs=CachedRequestData(req_ids=[...64 ids...], ...), num_scheduled_tokens={...}, "
        "total_num_scheduled_tokens=4420, scheduled_spec_decode_tokens={...})")
    assert step["num_reqs"] == 65 and step["num_new_reqs"] == 1 and step["num_cached_reqs"] == 64


def test_what_vllm_says_it_chose_at_startup_replaces_the_pre_flights_prediction():
    """The pre-flight predicts the Mamba cache mode and the raised attention block from config.json; vLLM's own
    startup lines say what ran, and the findings quote those."""
    a = "(APIServer pid=1) WARNING 09-03 08:14:45 "
    an = analyze_text("\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --enable-prefix-caching",
        a + "[config.py:367] Mamba cache mode is set to 'all' for Qwen3NextForCausalLM by default when prefix "
            "caching is enabled",
        a + "[interface.py:606] Setting attention block size to 1088 tokens to ensure that attention page size is "
            ">= mamba page size.",
        a + "[interface.py:630] Padding mamba page size by 0.37% to ensure that mamba page size and attention page "
            "size are exactly equal.",
        "Prefix cache hit rate stays at 0.0% although every request shares a 900-token system prompt.",
    ]), "t.log")
    assert an.predicted is not None and "replaces the predicted" in an.preflight_note
    assert an.predicted.config["mamba_cache_mode"] == "all" and an.predicted.config["block_size"] == 1088
    raised = next(f for f in an.findings if f.rule == "block_size_inflated")
    assert raised.numbers["block_size"] == 1088 and raised.numbers["mamba_padding_percent"] == 0.37


_FP8_KV_RUN = [
    "Qwen3.5-27B with MTP (k=2) and prefix caching, --kv-cache-dtype fp8: accuracy on our long-document QA eval dropped from 71% to 58% after the switch.",
    "(EngineCore pid=90) INFO 04-02 10:01:02 [cache.py:211] Using fp8 data type to store kv cache. It reduces the GPU "
    "memory footprint and boosts the performance. Meanwhile, it may cause accuracy drop without a proper scaling factor.",
    "(EngineCore pid=90) WARNING 04-02 10:03:40 [kv_cache.py:147] Using KV cache scaling factor 1.0 for fp8_e4m3. If this "
    "is unintended, verify that k/v_scale scaling factors are properly set in the checkpoint.",
    "vllm serve Qwen/Qwen3.5-27B --kv-cache-dtype fp8 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}'",
]


def test_a_quality_loss_that_grows_with_the_context_under_an_uncalibrated_fp8_kv_cache_is_numerics_even_with_drafts():
    an = _analyze(_FP8_KV_RUN + ["The drop grows with context length; short prompts look fine."])
    top = an.findings[0]
    assert an.facts.startup["kv_scale_default_dtype"] == "fp8_e4m3"
    assert top.category == "other" and "fp8" in top.title and "grows with" in top.basis


def test_the_same_loss_without_a_length_dependence_stays_with_the_families_under_drafts():
    an = _analyze(_FP8_KV_RUN)
    assert "length_dependent_prose" not in an.facts.startup
    assert not an.findings or "fp8" not in an.findings[0].title


def test_the_reporters_words_for_a_deeper_draft_losing_to_no_drafts_and_for_another_requests_text():
    slow = _analyze(["With 3 spec tokens it's *slower than no MTP at all*, with 1 it is 1.6x faster."])
    assert slow.facts.startup["spec_slower_prose"]
    wrong = _analyze(["At concurrency 64 outputs sometimes switch topic mid-answer or copy numbers from another question."])
    assert wrong.facts.startup["wrong_output_prose"].startswith("switch topic mid")
    fewer = _analyze(["KV cache reported way smaller than I expected for a model with 12 attention layers."])
    assert fewer.facts.startup["capacity_prose"].startswith("KV cache")


def test_a_switch_the_reporter_says_is_off_is_off():
    assert _analyze(["No crash, no warnings. `--enable-prefix-caching` is OFF."]).facts.args["enable_prefix_caching"] is False
    assert "enforce_eager" not in _analyze(["--enforce-eager: disabled"]).facts.args
    assert _analyze(["vllm serve m --enable-prefix-caching --max-num-seqs 8"]).facts.args["enable_prefix_caching"] is True


def test_a_batch_that_stops_below_max_num_seqs_is_not_the_schedulers_cap():
    stats = ("(APIServer pid=9) INFO 05-06 13:09:22 [loggers.py:259] Engine 000: Avg prompt throughput: 1011.6 tokens/s, "
             "Avg generation throughput: 706.4 tokens/s, Running: {r} reqs, Waiting: 344 reqs, GPU KV cache usage: 23.1%, "
             "Prefix cache hit rate: 0.5%")
    capped = _analyze(["vllm serve m --max-num-seqs 28", stats.format(r=28), "Running never gets above ~28."])
    assert capped.findings and "max_num_seqs" in capped.findings[0].title
    below = _analyze(["vllm serve m --max-num-seqs 512", stats.format(r=28), "Running never gets above ~28."])
    assert not below.findings or "max_num_seqs" not in below.findings[0].title


def test_page_sizes_a_reporter_printed_are_numbers_of_the_failure_by_role():
    from vllm_diag.postmortem.numbers import quoted_page_sizes

    assert quoted_page_sizes("page_size_bytes per spec type: {'SlidingWindowSpec': 49152, "
                             "'FullAttentionSpec(draft)': 65536}") == {"sliding_window_page_size": 49152,
                                                                        "draft_page_size": 65536}
    assert quoted_page_sizes("page_sizes={73728, 28672}") == {"page_sizes": [73728, 28672]}
    assert quoted_page_sizes("attention layers of the 80B have page_size_bytes 1114112 (block 544)") == {
        "attention_page_size": 1114112}
    assert quoted_page_sizes("the draft is fine at 2,048 tokens") == {}
    an = _analyze(["NotImplementedError: The page size of the layer is not divisible by the maximum page size. "
                   "Cannot unify by adjusting block_size.",
                   "I added a print: the target layers are 16384 bytes/page."])
    assert an.facts.numbers["target_page_size"] == 16384


def test_a_dump_list_cut_after_its_first_ids_counts_its_stated_length():
    from vllm_diag.postmortem.dump import parse_scheduler_output

    def step(ids: str) -> dict:
        return parse_scheduler_output(
            "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=" + ids + "), "
            "num_scheduled_tokens={'b-1': 3, 'b-2': 3, 'b-3': 2, ...}, total_num_scheduled_tokens=136)", spec_k=2)

    assert step("['b-1', 'b-2', ... 46 total]")["num_reqs"] == 46
    assert step("['b-1', 'b-2', ... 44 more]")["num_reqs"] == 46
    assert step("['b-1', 'b-2', 'b-3']")["num_reqs"] == 3


def test_a_hang_whose_report_says_the_first_all_reduce_never_completes_is_the_transport():
    an = _analyze([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "(EngineCore_DP0 pid=22101) INFO 12-29 19:41:45 [shm_broadcast.py:542] No available shared memory broadcast "
        "block found in 60 seconds. This typically happens when some processes are hanging.",
        "The server hangs forever at startup; the first all_reduce never completes.",
    ])
    top = an.findings[0]
    assert top.category == "other" and "collective" in top.title and "all_reduce never completes" in top.basis


def test_a_gates_verdict_and_a_count_of_failed_requests_are_not_error_lines():
    an = _analyze(["Canary quality gate failed, p50 latency gate passed.",
                   "No errors, no restarts, 0 failed requests. The reasoning goes off the rails after a few thousand tokens."])
    assert not an.facts.startup.get("error_lines")
    assert an.facts.startup["wrong_output_prose"]


def test_a_gateway_that_sends_no_temperature_leaves_the_sampling_to_the_generation_config():
    an = _analyze([
        "(APIServer pid=1) WARNING 05-12 09:24:41 [model.py:1893] Default vLLM sampling parameters have been overridden "
        "by the model's `generation_config.json`: `{'temperature': 1.0, 'top_k': 0, 'top_p': 1.0}`. If this is not "
        "intended, please relaunch vLLM instance with `--generation-config vllm`.",
        "Canary quality gate failed after the new revision. Our gateway doesn't send temperature/top_p for this "
        "product, it relies on server defaults.",
    ])
    top = an.findings[0]
    assert top.category == "other" and "generation_config" in top.title


def test_the_kubelets_events_pasted_indented_still_name_the_probe_kill():
    an = _analyze(_START + ["  Events:",
                            "    Normal   Killing    2m3s (x6 over 41m)   kubelet  Container vllm failed liveness probe, "
                            "will be restarted"])
    assert an.findings[0].category == "other" and "probe" in an.findings[0].title


_DSR1_MTP = ("vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8 --speculative-config "
             "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":2}'")


def test_a_tail_that_got_worse_under_drafts_on_an_mla_model_is_the_kernel_limit_but_a_slow_load_is_not():
    tail = _analyze([_DSR1_MTP, "Canary = MTP, stable = no spec. p50 looks like a win, the tail is terrible."])
    assert tail.findings[0].category == "spec_kernel_limit"
    load = _analyze([_DSR1_MTP, "The weights are on NFS, the first load after a restart is slow."])
    assert not load.findings or load.findings[0].category != "spec_kernel_limit"


def test_an_eval_diffs_fail_verdict_is_the_wrong_output():
    an = _analyze(["ruler_niah_16k  acc  0.962  0.713  -0.249   <-- FAIL (threshold -0.02)"])
    assert an.facts.startup["wrong_output_prose"].endswith("FAIL (threshold -0.02)")


def test_a_side_run_told_in_a_chat_export_is_not_the_reports_symptom():
    an = _analyze(["[10:03] dmitri.k: fp8 KV buys us nothing on nemotron, max concurrency stays at 32x.",
                   "[10:15] dmitri.k: tried --mamba-ssm-cache-dtype bfloat16 and concurrency went up a lot but "
                   "accuracy dropped on long generations"])
    assert "wrong_output_prose" not in an.facts.startup


def test_scores_that_drop_under_concurrency_are_the_output_not_the_capacity():
    an = _analyze(["Under our eval harness at concurrency 128 the scores drop and accuracy drops only under load."])
    assert "capacity_prose" not in an.facts.startup
    assert an.facts.startup["wrong_output_prose"] in ("scores drop", "accuracy drops")
    worse = _analyze(["vLLM answers are noticeably worse and change between runs."])
    assert worse.facts.startup["wrong_output_prose"] == "answers are noticeably worse"


def test_a_stack_dump_told_in_words_names_the_collective():
    an = _analyze(["The server hangs at startup; py-spy dump on Worker_TP0 shows it inside ncclAllReduce called from "
                   "GroupCoordinator.all_reduce."])
    assert an.findings[0].category == "other" and "collective" in an.findings[0].title


_RL_RESET = [
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching --speculative-config "
    "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
    "(APIServer pid=1) INFO 01-12 10:00:00 [api_server.py:1839] vLLM API server version 0.16.0",
    "Qwen3-Next rollouts come back as garbage after an in-flight weight update.",
    "    llm.collective_rpc(\"update_weights_from_ipc\", args=(handles,))",
    "    llm.reset_prefix_cache(reset_running_requests=True)",
    "The garbage completions are always among the requests that were running when we reset.",
    "(APIServer pid=1) INFO 01-12 10:21:40 [loggers.py:236] Engine 000: Avg prompt throughput: 912.4 tokens/s, Avg "
    "generation throughput: 1766.0 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.0%, Prefix "
    "cache hit rate: 40.0%",
]


def test_garbage_after_a_reset_of_running_requests_on_a_hybrid_is_a_stale_state_index_before_0_17():
    an = _analyze(_RL_RESET)
    assert an.facts.startup["reset_running_requests"] is True
    top = an.findings[0]
    assert top.category == "state_index" and "reset of running requests" in top.title
    later = _analyze([line.replace("0.16.0", "0.17.0") for line in _RL_RESET])
    assert not later.findings or "reset of running requests" not in later.findings[0].title


def test_a_start_up_refusal_predicted_for_an_engine_the_log_shows_serving_is_only_a_note():
    an = analyze_text("\n".join(_RL_RESET), "t.log")  # (with the pre-flight: its table says 0.16 refuses this start)
    predicted = [f for f in an.findings if f.rule == "startup_validation"]
    assert predicted and all(f.severity == "info" and "contradicted by the log" in f.title for f in predicted)
    assert an.findings[0].category == "state_index"
