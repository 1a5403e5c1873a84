"""Post-mortem, round fifteen: the platform's older words for the attention backend it chose, and wrong output with
drafts on an MLA decode backend. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _backend_line(words: str) -> str:
    """vllm/platforms (cuda.py, rocm.py 0.10-0.11): the backend chosen, in the platform's words."""
    return f"(Worker_TP0 pid=412) INFO 10-21 09:12:40 [rocm.py:226] Using {words} backend on V1 engine."


_MLA_EAGLE = [
    "vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8 --max-model-len 32768 \\",
    "    --speculative-config '{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 3}'",
]


def test_the_platforms_words_for_a_backend_read_as_its_enum_name():
    for words, name in (("AITER MLA", "ROCM_AITER_MLA"), ("Triton MLA", "TRITON_MLA"), ("FlashMLA", "FLASHMLA"),
                        ("Sparse MLA", "FLASHMLA_SPARSE"), ("Flash Attention", "FLASH_ATTN")):
        an = _analyze(_MLA_EAGLE + [_backend_line(words)])
        assert an.facts.startup.get("attention_backend_selected") == name, words


def test_wrong_output_with_drafts_on_an_mla_decode_backend_reads_as_the_kernel_limit():
    an = _analyze(["Since MTP went live the quality falls apart: tool calls have wrong argument names."]
                  + _MLA_EAGLE + [_backend_line("AITER MLA")])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.severity == "warning" and lead.confidence == "low"
    assert "ROCM_AITER_MLA" in lead.title and lead.numbers["decode_query_len"] == 4


def test_tool_calls_with_wrong_arguments_are_the_wrong_output_symptom():
    an = _analyze(["After the upgrade, tool calls have wrong argument names."] + _MLA_EAGLE)
    assert an.facts.startup.get("wrong_output_prose")


def test_the_same_words_on_a_dense_model_make_no_kernel_limit_finding():
    dense = ["vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 \\",
             "    --speculative-config '{\"method\": \"eagle3\", \"model\": \"/ckpt/eagle3\", \"num_speculative_tokens\": 3}'",
             _backend_line("Flash Attention")]
    an = _analyze(["Since the drafts went live the quality falls apart."] + dense)
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def test_an_mla_model_without_drafts_gets_no_kernel_limit_finding():
    an = _analyze(["The quality falls apart on long prompts.", "vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8",
                   _backend_line("AITER MLA")])
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def _truncated(size: int) -> str:
    """vLLM's warning (vllm/config/vllm.py) that it cut the largest capture size to fit the drafts."""
    return f"(EngineCore_DP0 pid=33) WARNING 12-09 16:20:44 [vllm.py:1454] Truncating max_cudagraph_capture_size to {size}"


_HYBRID_MTP = ["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-cudagraph-capture-size 6 \\",
               "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'"]


def test_a_slowdown_above_the_truncated_largest_graph_reads_as_the_capture_sizes():
    an = _analyze(["Throughput is worse than with no spec decoding once there are >1 concurrent requests."]
                  + _HYBRID_MTP + [_truncated(4)])
    assert an.facts.startup["concurrent_requests"] == 2  # more than one
    assert an.findings[0].category == "cudagraph_shape"


def test_clients_waiting_in_the_api_server_are_not_the_engines_batch():
    stats = ("(APIServer pid=1) INFO 06-30 21:22:51 [loggers.py:261] Engine 000: Avg prompt throughput: 641.2 tokens/s, "
             "Avg generation throughput: 3488.0 tokens/s, Running: 141 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.8%, "
             "Prefix cache hit rate: 12.0%")
    an = _analyze(["Throughput plateaus with 500 concurrent clients; the API server sits at 100% of one core.",
                   "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-num-seqs 512 \\",
                   "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'", _truncated(510), stats])
    assert not [f for f in an.findings if f.category == "cudagraph_shape"]  # 141 x 3 = 423 tokens fit the 510 graph


def test_a_model_named_only_in_prose_as_an_attention_only_family_is_not_a_hybrid():
    an = _analyze([
        "GLM-4.6 FP8, P/D disagg with NixlConnector, decode node TP8 with MTP k=1.",
        "(Worker_TP0 pid=301) ERROR 10-03 18:22:50 [multiproc_executor.py:851] torch.AcceleratorError: CUDA error: an "
        "illegal memory access was encountered",
        "Disagg without MTP: same IMA. Prefill node block_size 64, decode node 16; matching them fixed it."])
    assert all(f.category == "other" for f in an.findings if f.severity == "error")


def test_only_so_many_tokens_a_second_over_pcie_without_p2p_is_the_transport():
    an = _analyze([
        "Qwen3-Next on 4x L40S (PCIe). Only ~35 tok/s single stream, an H100 box does 150+.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --tensor-parallel-size 4",
        "(Worker_TP0 pid=1402) WARNING 03-30 16:05:14 [custom_all_reduce.py:154] Custom allreduce is disabled because "
        "your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
        "disable_custom_all_reduce=True explicitly."])
    lead = an.findings[0]
    assert lead.category == "other" and lead.rule == "near_miss" and "PCIe" in lead.title


def test_only_twenty_running_with_a_small_memory_share_is_the_setting():
    an = _analyze(["Requests queue with only ~20 running.",
                   "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --gpu-memory-utilization 0.6 \\",
                   "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'"])
    lead = an.findings[0]
    assert lead.category == "other" and "gpu-memory-utilization 0.6" in lead.title


def test_a_first_token_that_takes_seconds_with_a_small_step_budget_is_the_budget():
    an = _analyze(["TTFT for 60k-token documents is 9-12 s.",
                   "vllm serve nvidia/Nemotron-H-47B-Reasoning-128K --max-num-batched-tokens 1024"])
    lead = an.findings[0]
    assert lead.category == "other" and "1024-token step budget" in lead.title


def test_slowness_beside_vllms_slow_tokenizer_warning_is_the_tokenizer():
    an = _analyze([
        "Latency is terrible at low load: first token ~3 s even for 2k prompts, GPUs mostly idle.",
        "(APIServer pid=212) WARNING 02-27 15:33:01 [registry.py:223] Using a slow tokenizer. This might cause a "
        "significant slowdown. Consider using a fast tokenizer instead.",
        "vllm serve MiniMaxAI/MiniMax-M1-40k -tp 8",
        "(Worker_TP0 pid=401) INFO 02-27 15:35:10 [interface.py:502] Setting attention block size to 272 tokens to "
        "ensure that attention page size is >= mamba page size."])
    lead = an.findings[0]
    assert lead.category == "other" and "tokenizer" in lead.title
    assert not [f for f in an.findings if f.severity in ("error", "warning") and f.category != "other"]


_HYBRID_MTP_ZH = ["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-AWQ --tensor-parallel-size 2 \\",
                  "  --speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
                  "\u8f93\u51fa\u4e71\u7801\u3002"]  # "the output is garbled"


def test_a_chinese_ab_test_that_clears_the_drafts_and_names_another_checkpoint_is_a_near_miss():
    an = _analyze(_HYBRID_MTP_ZH + [
        "1. \u53bb\u6389 --speculative-config\uff1a\u8fd8\u662f\u4e71\u7801\u3002",  # without spec: still garbled
        # switched to the official FP8 checkpoint + the same MTP config: completely normal
        "2. \u6362\u6210\u5b98\u65b9 Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 + \u540c\u6837\u7684 MTP \u914d\u7f6e\uff1a"
        "\u5b8c\u5168\u6b63\u5e38\u3002"])
    assert an.facts.startup["faults_without_spec_prose"].startswith("\u53bb\u6389")
    lead = an.findings[0]
    assert lead.category == "other" and lead.rule == "near_miss"


def test_the_same_report_without_its_ab_tests_stays_a_family_reading():
    an = _analyze(_HYBRID_MTP_ZH)
    assert an.findings[0].category != "other"


def test_drafts_off_and_still_broken_reads_in_german_spanish_french():
    for said in ("Ohne MTP immer noch M\u00fcll.", "Sin MTP sigue igual.", "Sans MTP toujours pareil."):
        an = _analyze([said] + _MLA_EAGLE)
        assert an.facts.startup.get("faults_without_spec_prose"), said


def test_a_rerun_with_synchronous_launches_that_did_not_fault_is_not_a_synchronous_run():
    an = _analyze(["- CUDA_LAUNCH_BLOCKING=1: could not reproduce in 30 min (timing?)"] + _MLA_EAGLE)
    assert not an.facts.blocking_launches()


def test_requests_generating_then_a_new_prompt_is_a_mixed_batch_in_words():
    an = _analyze(["A few requests are generating, then a new request comes in whose prompt is longer than the "
                   "chunk budget; within 1-2 steps the engine is dead."] + _HYBRID_MTP)
    assert an.facts.startup.get("mixed_prose")


def test_the_smaller_of_two_truncated_graphs_and_the_batch_said_give_the_capture_cliff():
    an = _analyze(["Throughput with draft spec decoding on Nemotron-H is terrible at batch > 4.",
                   "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --max-num-seqs 2 \\",
                   "  --speculative-config '{\"method\":\"draft_model\",\"model\":\"nvidia/NVIDIA-Nemotron-Nano-9B-v2\","
                   "\"num_speculative_tokens\":4}'", _truncated(10),
                   "With --max-num-seqs 16 it says \"Truncating max_cudagraph_capture_size to 80\" and it is fast again."])
    assert an.facts.startup["concurrent_requests"] == 5
    lead = an.findings[0]
    assert lead.category == "cudagraph_shape" and lead.numbers["truncated_capture_size"] == 10


def test_a_graph_cut_to_one_requests_decode_is_a_cliff_at_any_load():
    an = _analyze(["Not a crash: Nemotron-3-Super with MTP (k=3) is slower than without spec decode.",
                   "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 \\",
                   "  --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'", _truncated(4)])
    lead = an.findings[0]
    assert lead.category == "cudagraph_shape" and "at any load above 1 request" in lead.basis


def test_wrong_output_that_reproduces_in_transformers_is_outside_vllm():
    said = ["The answers turn into garbage (repeated '!!!!').",
            "Our own AWQ in transformers (without vLLM): 7 of 20 answers with the same garbage."]
    an = _analyze(said + _HYBRID_MTP)
    lead = an.findings[0]
    assert lead.category == "other" and lead.rule == "near_miss" and "without vLLM" in lead.basis
    # the other engine being fine is no such test
    fine = _analyze([said[0], "The same prompts in transformers are fine."] + _HYBRID_MTP)
    assert fine.findings[0].category != "other"


_GRANITE = ["vllm serve ibm-granite/granite-4.0-h-tiny --max-model-len 32768 --enable-prefix-caching",
            "INFO 07-18 15:02:33 [config.py:553] Setting attention block size to 400 tokens to ensure that attention "
            "page size is >= mamba page size."]


def test_answers_cut_at_the_token_cap_are_the_requests_max_tokens():
    an = _analyze(["Answers are cut off after a couple of words on /v1/completions."] + _GRANITE + [
        '{"choices":[{"index":0,"text":" The French Revolution was a period of","finish_reason":"length"}]}'])
    lead = an.findings[0]
    assert lead.category == "other" and "token cap" in lead.title
    assert not [f for f in an.findings if f.category != "other" and f.severity in ("error", "warning")]


def test_a_pasted_output_the_reporter_truncated_is_no_symptom():
    an = _analyze(["Output of request 2 (truncated):"] + _GRANITE)
    assert "truncated_prose" not in an.facts.startup


def test_requests_waiting_for_lora_slots_are_the_schedulers_limit():
    an = _analyze([
        "Throughput collapses once more than one customer is active: Running stays at 3-5 and Waiting grows.",
        "vllm serve tiiuae/Falcon-H1-34B-Instruct -tp 2 --enable-lora --max-lora-rank 64 \\",
        "  --lora-modules cust_a=/loras/a cust_b=/loras/b cust_c=/loras/c --max-num-seqs 128"])
    lead = an.findings[0]
    assert lead.category == "other" and "3 adapters, --max-loras 1" in lead.title


def test_a_few_tokens_a_second_against_an_expectation_with_cpu_offload_is_the_offload():
    an = _analyze(["It runs at 2-3 tokens/s even with a single short request. I was expecting 60+.",
                   "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --cpu-offload-gb 56"])
    assert "CPU weight offload" in an.findings[0].title


def test_a_question_about_what_to_expect_is_no_slowness():
    an = _analyze(["We get 600 tok/s. Is CUTLASS MLA + MTP expected to be faster?"] + _MLA_EAGLE)
    assert "slow_prose" not in an.facts.startup


def test_a_comparison_with_transformers_that_differs_is_no_reproduction_outside_vllm():
    an = _analyze(["Scores are 6 points lower than our transformers baseline and answers differ run to run."]
                  + _HYBRID_MTP)
    assert "other_engine_prose" not in an.facts.startup


def test_a_mamba_capture_check_with_capture_sizes_not_multiples_of_one_plus_k_is_the_capture_sizes():
    frame = ("(Worker_TP0 pid=6150) ERROR 05-27 10:32:01 [multiproc_executor.py:861]   File \"/usr/local/lib/python3.12/"
             "dist-packages/vllm/v1/attention/backends/mamba_attn.py\", line 183, in build_for_cudagraph_capture")
    base = ["(Worker_TP0 pid=6150) ERROR 05-27 10:32:01 [multiproc_executor.py:861] Traceback (most recent call last):",
            frame,
            "(Worker_TP0 pid=6150) ERROR 05-27 10:32:01 [multiproc_executor.py:861]     assert m.max_query_len == 1 + "
            "self.num_spec_tokens  # decode-only",
            "(Worker_TP0 pid=6150) ERROR 05-27 10:32:01 [multiproc_executor.py:861] AssertionError",
            "Version: 0.24.0"]
    cmd = ("vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 --speculative-config "
           "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}'")
    given = _analyze([cmd + " --compilation-config '{\"cudagraph_capture_sizes\":[1,2,4,8,16,32,64]}'"] + base)
    assert given.findings[0].category == "cudagraph_shape" and "1, 2" in given.findings[0].title
    default = _analyze([cmd] + base)
    assert default.findings[0].category == "mixed_batch"


def test_drafts_off_with_another_switch_on_that_still_crashes_clears_the_drafts():
    an = _analyze(["- MTP off, EPLB on: crash, same timing", "- MTP on, EPLB off: 48h clean"] + _MLA_EAGLE + [
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"])
    assert an.facts.startup.get("faults_without_spec_prose")
    assert an.findings[0].category == "other"


def test_an_arrow_after_the_drafts_off_reads_as_the_outcome():
    an = _analyze(["- decode without MTP -> same crash"] + _MLA_EAGLE)
    assert an.facts.startup.get("faults_without_spec_prose")


def test_a_gateway_that_prepends_a_request_id_shown_on_the_next_line_varies_the_prefix():
    an = _analyze(_HYBRID_MTP + [
        "(APIServer pid=1) INFO 01-14 08:10:40 [loggers.py:337] Engine 000: Avg prompt throughput: 16032.4 tokens/s, "
        "Avg generation throughput: 611.7 tokens/s, Running: 14 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.1%, "
        "Prefix cache hit rate: 0.0%",
        "Prefix cache hit rate is stuck at 0%. Our gateway hook prepends a line to the system message:",
        '   "[request_id=7f2c9a1e-55aa | ts=2026-01-14T08:10:39.412Z]\\n\\nYou are Atlas, an agent..."'])
    assert "per-request value" in an.findings[0].title


def test_a_flat_throughput_beside_the_slow_tokenizer_warning_and_a_serving_engine_predicts_no_refusal():
    an = _analyze([
        "Throughput flat-lines at ~9 req/s no matter how many clients.",
        "vllm serve /models/zamba2-7b-ft --max-model-len 8192 --max-num-seqs 128",
        "(APIServer pid=811) WARNING 08-05 13:02:51 [registry.py:234] Using a slow tokenizer. This might cause a "
        "significant slowdown. Consider using a fast tokenizer instead.",
        "(EngineCore pid=1002) INFO 08-05 13:04:12 [interface.py:774] Setting attention block size to 784 tokens to "
        "ensure that attention page size is >= mamba page size.",
        "(EngineCore pid=1002) INFO 08-05 13:05:01 [kv_cache_utils.py:1795] GPU KV cache size: 54,880 tokens",
        "(APIServer pid=811) INFO 08-05 13:21:30 [loggers.py:259] Engine 000: Avg prompt throughput: 31420.6 tokens/s, "
        "Avg generation throughput: 71.8 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 14.3%, "
        "Prefix cache hit rate: 0.0%", "Version: 0.24.0"])
    assert "tokenizer" in an.findings[0].title
    assert not [f for f in an.findings if f.category == "mamba_block_budget"]


def test_an_ab_list_whose_rows_share_the_drafts_reads_the_switch_after_them():
    an = _analyze([
        "Tests:", "  ngram 3 tokens, default compile      -> crash", "  no speculation, default compile     -> crash",
        "  ngram, -O0                           -> ok",
        "vllm serve ibm-granite/granite-4.0-h-small -tp 2 --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4}'",
        "(Worker_TP0 pid=318) ERROR 12-15 10:41:57 [multiproc_executor.py:822] torch.AcceleratorError: CUDA error: "
        "misaligned address"])
    assert "-O0" in an.facts.startup.get("other_fix_prose", "")
    assert an.findings[0].category == "other"


def test_a_chat_reply_ok_and_a_switch_to_a_dense_model_are_no_fix_outside_the_families():
    an = _analyze(["maintainer: OK, can you share the full log?",
                   "- same command with Llama-3.1-8B (no linear layers) -> OK"] + _HYBRID_MTP)
    assert "other_fix_prose" not in an.facts.startup


def _stats(running: int, waiting: int, usage: float, preempted: int | None = None) -> str:
    """vLLM's periodic stats line (loggers.py), with its preemption count once requests were preempted."""
    pre = f"Preemptions: {preempted}, " if preempted is not None else ""
    return (f"(APIServer pid=1) INFO 07-14 11:52:20 [loggers.py:259] Engine 000: Avg prompt throughput: 40.1 tokens/s, "
            f"Avg generation throughput: 2331.9 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, {pre}"
            f"GPU KV cache usage: {usage}%, Prefix cache hit rate: 0.0%")


def test_a_crawl_with_the_kv_cache_full_and_requests_preempted_is_the_workload():
    an = _analyze(["Best-of n=8 with max_tokens=32768; throughput drops to a crawl after a few minutes.",
                   "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 2", _stats(212, 388, 99.7, 61)])
    assert an.facts.startup["num_preemptions_max"] == 61
    assert "KV cache full under this workload" in an.findings[0].title


def test_a_full_cache_at_far_fewer_requests_than_their_stated_size_fits_is_not_the_workload():
    an = _analyze(["Short chat, ~600 tokens/request; way fewer concurrent users than expected. The queue keeps growing.",
                   "vllm serve ibm-granite/granite-4.0-h-small --max-num-seqs 256",
                   "(EngineCore_DP0 pid=203) INFO 10-14 15:04:50 [kv_cache_utils.py:1087] GPU KV cache size: 166,400 tokens",
                   _stats(52, 141, 99.2)])
    assert an.facts.startup["request_tokens_prose"] == 600
    assert not [f for f in an.findings if "under this workload" in f.title]


def test_a_cpu_limited_pod_that_serves_slowly_is_the_cpu():
    an = _analyze(["GPU util ~35%, TTFT spikes to 4s, throughput half of what we get bare metal.",
                   'resources: limits: {cpu: "2", memory: 64Gi, nvidia.com/gpu: 2}',
                   "vllm serve nvidia/Nemotron-H-47B-Reasoning-128K -tp 2"])
    assert "host CPU" in an.findings[0].title


def test_a_queue_that_builds_up_behind_a_full_batch_with_an_idle_cache_is_the_schedulers_cap():
    an = _analyze(["Queue builds up and p99 latency is 40s+ at only 30 rps.",
                   "vllm serve ibm-granite/granite-4.0-h-small --max-num-seqs 8", _stats(8, 212, 3.1)])
    assert "by the scheduler" in an.findings[0].title


def test_a_hybrid_without_drafts_whose_fault_persists_without_prefix_caching_is_cleared():
    an = _analyze([
        "Kimi-Linear-48B-A3B-Instruct, vllm 0.26.0, TP2, LMCache via --kv-transfer-config. Illegal memory access on the "
        "first request that hits a cached prefix.",
        "With connector but --no-enable-prefix-caching: still crashes on the retrieve.",
        "MTP is not even configured here.",
        "(Worker_TP0 pid=1402) ERROR 04-17 13:20:05 [multiproc_executor.py:901] RuntimeError: CUDA error: an illegal "
        "memory access was encountered"])
    assert "spec_prose" not in an.facts.startup and an.facts.startup.get("no_spec_prose")
    assert an.findings[0].category == "other"


def test_dropping_the_drafts_and_still_crashing_reads_as_the_drafts_off_test():
    an = _analyze(["1. drop --speculative-config      -> still crashes (same place)"] + _MLA_EAGLE)
    assert an.facts.startup.get("faults_without_spec_prose")


def test_drafting_is_not_the_problem_keeps_the_drafts_in():
    an = _analyze(["Acceptance is normal for k=3, so drafting is not the problem."] + _MLA_EAGLE)
    assert "faults_without_spec_prose" not in an.facts.startup


def test_a_table_row_clean_three_of_three_with_a_switch_outside_the_families_clears_the_fault():
    an = _analyze(_HYBRID_MTP + [
        "(Worker_TP2 pid=5512) ERROR 10-14 21:07:33 [multiproc_executor.py:654] RuntimeError: CUDA error: an illegal "
        "memory access was encountered",
        "| config | result |", "|---|---|",
        "| MTP off (no --speculative-config) | IMA 3/3, later |",
        "| MTP on + --disable-custom-all-reduce | clean 3/3 (2h) |"])
    assert "--disable-custom-all-reduce" in an.facts.startup.get("other_fix_prose", "")
    assert an.findings[0].category == "other"


def test_a_smaller_load_that_is_fine_is_no_fix_outside_the_families():
    an = _analyze(["- single user chat: fine for hours", "- concurrency 1 (or --max-num-seqs 1): no crash"] + _HYBRID_MTP)
    assert "other_fix_prose" not in an.facts.startup


def test_the_drafts_off_and_it_works_in_chinese_ties_the_failure_to_the_drafts():
    an = _analyze(["\u53bb\u6389 --speculative-config \u5c31\u80fd\u6b63\u5e38\u8d77\u6765\u3002"] + _HYBRID_MTP)
    assert an.facts.startup.get("spec_tied_prose")


def test_mixed_long_prefill_and_short_decode_traffic_is_a_mixed_batch_in_words():
    an = _analyze(["Crashes mid-benchmark (mixed long prefill + short decode traffic)."] + _HYBRID_MTP)
    assert an.facts.startup.get("mixed_prose")


def test_slower_with_drafts_in_korean_on_a_sparse_indexer_model_is_the_kernel_limit():
    an = _analyze(["DeepSeek-V3.2-Exp MTP num_speculative_tokens=3 \uc73c\ub85c \uc62c\ub9ac\uba74 \uc624\ud788\ub824 "
                   "\ub290\ub824\uc9d1\ub2c8\ub2e4"] + _MLA_EAGLE)  # "raising k to 3 makes it slower"
    assert an.findings[0].category == "spec_kernel_limit"


def test_token_gaps_from_a_huge_step_budget_are_the_prefill_chunks_not_the_drafts():
    an = _analyze(["GLM-5: inter-token latency spikes to 2-3 s whenever a long prompt arrives.",
                   "vllm serve zai-org/GLM-5-FP8 -tp 8 --max-num-batched-tokens 65536 "
                   "--speculative-config.method mtp --speculative-config.num_speculative_tokens 1"])
    assert "65536-token prefill chunks" in an.findings[0].title
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def test_a_reply_that_stops_mid_sentence_at_the_token_cap_is_the_cap():
    an = _analyze(["A third of our requests come back with a reply that stops mid-sentence."] + _HYBRID_MTP + [
        '{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"length"}]}'])
    assert "token cap" in an.findings[0].title


def test_tritons_mlir_pipeline_failing_on_an_old_gpu_is_the_gpu_generation():
    an = _analyze(_HYBRID_MTP + [
        "(Worker_TP0 pid=3452) ERROR 07-19 08:53:58 [multiproc_executor.py:812] Traceback (most recent call last):",
        "(Worker_TP0 pid=3452) ERROR 07-19 08:53:58 [multiproc_executor.py:812]   File \".../vllm/model_executor/layers/"
        "fla/ops/chunk.py\", line 61, in chunk_gated_delta_rule_fwd",
        "(Worker_TP0 pid=3452) ERROR 07-19 08:53:58 [multiproc_executor.py:812] RuntimeError: PassManager::run failed"])
    assert an.findings[0].category == "other" and "Triton" in an.findings[0].title
