"""Post-mortem, round twenty-two: capacity told in a user's words, a slowdown that came with time beside a neighbour
on the GPU, ROCm without AITER, and garbled streams a client decodes. The reports are written here; vLLM's lines are
in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_FALCON_H1_FULL_CACHE = [
    "vllm serve tiiuae/Falcon-H1-7B-Instruct --max-model-len 32768 --max-num-seqs 64",
    "(APIServer pid=31) INFO 10-21 07:55:14 [config.py:377] Setting attention block size to 784 tokens to ensure that "
    "attention page size is >= mamba page size.",
    "(APIServer pid=31) INFO 10-21 07:55:14 [config.py:398] Padding mamba page size by 0.52% to ensure that mamba page "
    "size and attention page size are exactly equal.",
    "(EngineCore_DP0 pid=98) INFO 10-21 07:57:48 [kv_cache_utils.py:1087] GPU KV cache size: 151,424 tokens",
    "(APIServer pid=31) INFO 10-21 08:20:11 [loggers.py:127] Engine 000: Avg prompt throughput: 1210.3 tokens/s, Avg "
    "generation throughput: 88.4 tokens/s, Running: 4 reqs, Waiting: 23 reqs, GPU KV cache usage: 98.1%, Prefix cache "
    "hit rate: 0.0%",
]


@pytest.mark.parametrize("told", [
    "We can only serve ~4 users with this, is the hybrid KV broken?",
    "max_num_seqs is 64 but it never runs more than 4 at a time.",
    "It serves far fewer concurrent requests than our sizing spreadsheet says.",
    "max_num_seqs 64 can never be reached.",
])
def test_capacity_in_a_users_words_is_read(told):
    facts = facts_from_text("\n".join([*_FALCON_H1_FULL_CACHE, told]))
    assert facts.startup.get("capacity_prose")


def test_a_full_cache_of_long_requests_is_the_load_not_the_raised_block():
    """Four running requests fill 98 % of 151k tokens (~37k tokens each, 47 blocks of 784): the raised block is not
    what holds the others back, the workload's tokens are -- outside the families, and the block note no lead."""
    lead = _analyze([*_FALCON_H1_FULL_CACHE, "We can only serve ~4 users with this, is the hybrid KV broken? Our "
                     "prompts are long RAG contexts."]).findings[0]
    assert lead.category == "other" and "KV cache full" in lead.title


def test_more_gpus_less_throughput_is_slowness():
    facts = facts_from_text("Jamba with TP=4 gives lower output throughput than TP=2 on the same box.")
    assert facts.startup.get("slow_prose")


@pytest.mark.parametrize("told", [
    'Answers loop ("Sure! Sure! Sure! ...") after ~200 tokens.',
    "On the second turn the model starts producing repeated tokens / garbage.",
])
def test_looping_or_garbage_output_is_wrong_output(told):
    assert facts_from_text(told).startup.get("wrong_output_prose")


def test_a_loop_over_things_is_no_wrong_output():
    assert not facts_from_text("Our client answers loop over the list of prompts in order.").startup.get(
        "wrong_output_prose")


def test_acceptance_falling_is_read_across_a_decimal_point():
    facts = facts_from_text("Acceptance on turn 1 requests is ~2.6 mean length, it collapses once the hit rate rises.")
    assert facts.startup.get("acceptance_prose")


def test_negative_penalties_behind_loops_lead_outside_the_families():
    lines = [
        "Nemotron-H 8B + ngram: answers loop after ~200 tokens. vLLM 0.17.0.",
        "vllm serve nvidia/Nemotron-H-8B-Reasoning-128K --enable-prefix-caching "
        "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'",
        "(APIServer pid=77) INFO 02-03 14:20:16 [config.py:545] Setting attention block size to 528 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "Our UI sends the request with \"frequency_penalty\": -1.8 since last week's release.",
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "frequency_penalty" in lead.title


_DSV32_MTP_NEIGHBOUR = [
    "DeepSeek-V3.2-Exp + MTP: generation throughput dropped ~40% overnight, no config change.",
    "vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
    "(EngineCore_DP0 pid=3321) INFO 02-11 07:55:10 [cuda.py:410] Using FLASHMLA_SPARSE attention backend out of "
    "potential backends: ['FLASHMLA_SPARSE']",
    "(APIServer pid=3102) INFO 02-11 09:10:44 [loggers.py:259] Engine 000: Avg prompt throughput: 3900.1 tokens/s, Avg "
    "generation throughput: 1105.0 tokens/s, Running: 60 reqs, Waiting: 4 reqs, GPU KV cache usage: 20.1%, Prefix "
    "cache hit rate: 41.0%",
    "Someone on another team started a fine-tuning job pinned to GPU 5 on our node.",
]


def test_a_slowdown_overnight_is_degradation_over_time():
    facts = facts_from_text("\n".join(_DSV32_MTP_NEIGHBOUR))
    assert facts.startup.get("degraded_over_time_prose")


def test_a_neighbour_on_the_gpu_explains_a_slowdown_that_came_with_time():
    """Neither the drafts' kernel limit (the drafts ran for weeks) nor an idle cache's scheduler limit: what changed
    overnight is the job on one of the TP group's GPUs."""
    lead = _analyze(_DSV32_MTP_NEIGHBOUR).findings[0]
    assert lead.category == "other" and "Another process" in lead.title


def test_without_the_neighbour_the_mla_drafts_stay_the_reading():
    lines = [line.replace(" overnight, no config change", " with MTP on compared with MTP off")
             for line in _DSV32_MTP_NEIGHBOUR[:-1]]
    assert _analyze(lines).findings[0].category == "spec_kernel_limit"


_ROCM_DSV3_MTP = [
    "[ROCm] DeepSeek-V3 + MTP: TPOT is ~95 ms at 32 concurrent, far worse than expected on MI300X.",
    "args: vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8 --speculative-config "
    "'{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
    "(Worker_TP0 pid=4620) INFO 06-03 12:41:02 [rocm.py:612] Using TRITON_MLA backend out of potential backends: "
    "['TRITON_MLA'].",
]


def test_rocm_without_aiter_is_the_platforms_setting():
    told = "We dropped VLLM_ROCM_USE_AITER from the manifest when we cleaned it up last month."
    lead = _analyze([*_ROCM_DSV3_MTP, told]).findings[0]
    assert lead.category == "other" and "AITER" in lead.title


def test_aiter_turned_off_as_a_fix_is_no_missing_aiter():
    facts = facts_from_text("Setting VLLM_ROCM_USE_AITER_MLA=0 makes it faster.")
    assert "aiter_dropped_prose" not in facts.startup


_QWEN35_MTP_STREAM = [
    "Qwen3.5 + MTP: streamed Chinese answers show \ufffd replacement characters in about 1 of 20 responses.",
    "vllm serve Qwen/Qwen3.5-122B-A10B -tp 4 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
    "(APIServer pid=1) INFO 05-02 10:01:02 [loggers.py:259] Engine 000: Avg prompt throughput: 2101.0 tokens/s, Avg "
    "generation throughput: 901.2 tokens/s, Running: 40 reqs, Waiting: 0 reqs, GPU KV cache usage: 11.0%, Prefix cache "
    "hit rate: 62.5%",
]


@pytest.mark.parametrize("told", [
    "The server's SSE events are valid UTF-8 (we checked with tcpdump).",
    "Switched the Java client to a stateful decoder -> no more \ufffd.",
    "The same request with stream=false, or curl -N reading the raw SSE, never has the replacement chars.",
])
def test_a_stream_right_on_the_wire_puts_the_garbling_on_the_clients_path(told):
    lead = _analyze([*_QWEN35_MTP_STREAM, told]).findings[0]
    assert lead.category == "other" and "client" in lead.title


_GRANITE_H_NGRAM = [
    "vllm serve ibm-granite/granite-4.0-h-small --max-num-seqs 32 "
    "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'",
    "(EngineCore pid=61) INFO 08-14 09:12:33 [interface.py:614] Setting attention block size to 448 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(EngineCore pid=61) INFO 08-14 09:13:40 [kv_cache_utils.py:1305] GPU KV cache size: 220,864 tokens",
]


def test_an_acceptance_complaint_the_log_does_not_explain_is_not_modelled_not_the_block_note():
    """Nothing read explains the acceptance the reporter quotes; the raised block is a note on the set-up, left out
    with a word, not the lead."""
    lead = _analyze([*_GRANITE_H_NGRAM, "Why is ngram acceptance so low on our chat traffic?"]).findings[0]
    assert lead.category == "other" and "not modelled" in lead.title
    assert any("Attention block size raised" in m for m in lead.missing_evidence)


def _stats(running: int, usage: float) -> str:
    return (f"(APIServer pid=1) INFO 08-14 09:30:02 [loggers.py:259] Engine 000: Avg prompt throughput: 902.3 tokens/s, "
            f"Avg generation throughput: 288.1 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"{usage}%, Prefix cache hit rate: 0.0%")


def test_capacity_of_long_requests_is_not_the_raised_block():
    """Eight running requests hold ~16k tokens each (36 blocks of 448): the raised block wastes at most one block a
    request, so it does not explain the complaint."""
    lead = _analyze([*_GRANITE_H_NGRAM, _stats(8, 60.0), "Expected hundreds of concurrent requests."]).findings[0]
    assert lead.category == "other" and "not modelled" in lead.title


def test_capacity_of_short_requests_keeps_the_raised_block():
    """Three hundred requests of ~440 tokens each: every one takes a whole 448-token block, the note that explains it."""
    lead = _analyze([*_GRANITE_H_NGRAM, _stats(300, 60.0), "Expected thousands of concurrent requests."]).findings[0]
    assert lead.rule == "block_size_inflated"


def test_tensor_parallel_slower_on_pcie_without_nvlink_is_the_links():
    lines = [
        "Granite-4.0-H-Small: tensor-parallel 4 is SLOWER than tensor-parallel 2 on our L40S box (PCIe Gen4, no NVLink).",
        "vllm serve ibm-granite/granite-4.0-h-small --tensor-parallel-size 4 --max-num-seqs 128",
        "(APIServer pid=77) INFO 02-27 11:05:22 [config.py:541] Setting attention block size to 784 tokens to ensure "
        "that attention page size is >= mamba page size.",
    ]
    facts = facts_from_text("\n".join(lines))
    assert facts.startup.get("slow_prose") and facts.startup.get("gpu_link_no_nvlink") == "no NVLink"
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "PCIe" in lead.title


def test_the_same_setup_fast_elsewhere_is_slowness_here():
    facts = facts_from_text("Same image on my workstation (same L40S) does ~1450 tok/s gen with identical flags. "
                            "In the cluster it is 400 tok/s.")
    assert facts.startup.get("slow_prose")


def test_a_log_record_of_another_logger_does_not_continue_the_exception_message():
    """The stats lines after a tool parser's JSONDecodeError are records of their own: its message stays its own (the
    metrics' 'Prefix cache hit rate' words do not make a prefix-caching failure of it)."""
    lines = [
        "(APIServer pid=1) ERROR 11-14 09:31:55 [hermes_tool_parser.py:117] Error in extracting tool call from response.",
        "(APIServer pid=1) ERROR 11-14 09:31:55 [hermes_tool_parser.py:117] Traceback (most recent call last):",
        '(APIServer pid=1) ERROR 11-14 09:31:55 [hermes_tool_parser.py:117]   File "/usr/local/lib/python3.12/'
        'dist-packages/vllm/tool_parsers/hermes_tool_parser.py", line 101, in extract_tool_calls',
        "(APIServer pid=1) ERROR 11-14 09:31:55 [hermes_tool_parser.py:117] json.decoder.JSONDecodeError: Expecting "
        "value: line 1 column 1 (char 0)",
        "(APIServer pid=1) INFO 11-14 09:32:01 [loggers.py:271] Engine 000: Avg prompt throughput: 6120.4 tokens/s, Avg "
        "generation throughput: 589.9 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.3%, Prefix "
        "cache hit rate: 71.9%",
    ]
    an = _analyze(lines)
    assert an.facts.root.message == "Expecting value: line 1 column 1 (char 0)"
    assert an.findings[0].category == "other"


def test_the_stats_lines_throughput_is_read():
    facts = facts_from_text("(APIServer pid=1) INFO 12-02 10:31:00 [loggers.py:236] Engine 000: Avg prompt throughput: "
                            "0.0 tokens/s, Avg generation throughput: 18.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
                            "GPU KV cache usage: 0.4%, Prefix cache hit rate: 0.0%")
    assert facts.startup["generation_throughput_tok_s"] == 18.3 and facts.startup["prompt_throughput_tok_s"] == 0.0


def test_a_bind_failures_port_and_a_cuda_error_code_are_numbers():
    from vllm_diag.postmortem.numbers import message_numbers

    assert message_numbers("[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): [errno 98] address "
                           "already in use") == {"errno": 98, "port": 8000}
    assert message_numbers("Error 803: system has unsupported display driver / cuda driver combination")[
        "cuda_error_code"] == 803


_GRANITE_NGRAM_BARE_ASSERT = [
    "vllm serve ibm-granite/granite-4.0-h-small --speculative-config "
    "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":5}'",
    "(EngineCore_DP0 pid=4388) ERROR 06-11 09:15:41 [core.py:1102] EngineCore failed to start.",
    "(EngineCore_DP0 pid=4388) ERROR 06-11 09:15:41 [core.py:1102] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=4388) ERROR 06-11 09:15:41 [core.py:1102]   File ".../vllm/v1/worker/gpu_worker.py", line 388, '
    "in determine_available_memory",
    "(EngineCore_DP0 pid=4388) ERROR 06-11 09:15:41 [core.py:1102]     cudagraph_memory_estimate = "
    "self.model_runner.profile_cudagraph_memory()",
    "(EngineCore_DP0 pid=4388) ERROR 06-11 09:15:41 [core.py:1102] AssertionError",
]


def test_a_failure_that_stays_with_enforce_eager_is_no_cuda_graph_shape():
    assert _analyze(_GRANITE_NGRAM_BARE_ASSERT).findings[0].category == "cudagraph_shape"
    told = "- `--enforce-eager` -> still fails, a bit later (after \"Available KV cache memory\")"
    assert facts_from_text(told).startup.get("persists_eager_prose")
    assert _analyze([*_GRANITE_NGRAM_BARE_ASSERT, told]).findings[0].category != "cudagraph_shape"


def test_a_reading_outside_the_families_leaves_the_families_notes_out():
    lines = [
        "Falcon-H1-34B AWQ: noticeably dumber answers than BF16 (ignores instructions), fp8 KV on.",
        "vllm serve someorg/Falcon-H1-34B-Instruct-AWQ --quantization awq_marlin --kv-cache-dtype fp8 "
        "--max-model-len 16384",
        "(APIServer pid=1) INFO 01-27 16:03:13 [config.py:543] Setting attention block size to 816 tokens to ensure "
        "that attention page size is >= mamba page size.",
    ]
    findings = _analyze(lines).findings
    assert findings[0].category == "other" and all(f.category == "other" for f in findings)
    assert any("note(s) on the set-up were left out" in m for m in findings[0].missing_evidence)


@pytest.mark.parametrize("told", [
    "Low EAGLE3 acceptance after switching to our fine-tuned checkpoint.",
    "EAGLE-3 acceptance only ~18% in prod, ~65% in the benchmark.",
    "EAGLE gets mean acceptance ~1.3 on our traffic vs 2.8 in our staging benchmark.",
    "The speedup disappeared after the launch (acceptance length 3.4 -> 1.5).",
    "MTP acceptance much lower than advertised.",
    "MTP is useless? acceptance ~8% on our traffic.",
])
def test_acceptance_complaints_in_a_users_words_are_read(told):
    assert facts_from_text(told).startup.get("acceptance_prose")


def test_an_acceptance_figure_without_a_complaint_is_none():
    assert not facts_from_text("Draft acceptance rate is 72%, as in the benchmark.").startup.get("acceptance_prose")


@pytest.mark.parametrize("told, key", [
    ("Streaming comes in big bursts every ~2s.", "slow_prose"),
    ('Streaming from the model with ngram is "bursty": nothing for 2-3 s, then a paragraph.', "slow_prose"),
    ("Answers for our internal assistant end after the first paragraph.", "truncated_prose"),
    ("The model only returns 16 tokens from /v1/completions.", "truncated_prose"),
    ("Answers in our docs bot stop right before the first markdown heading.", "truncated_prose"),
    ("Responses never stop, they keep writing assistant turns.", "wrong_output_prose"),
    ("Every answer ends with pages of repetition after the real answer.", "wrong_output_prose"),
    ("The tool-call JSON ends in thousands of newlines until max_tokens.", "wrong_output_prose"),
    ("temperature=0 gives different answers each run.", "wrong_output_prose"),
    ("Under load the Waiting count keeps growing.", "capacity_prose"),
    ("Requests queue forever at ~25 concurrent users.", "capacity_prose"),
])
def test_symptoms_in_a_users_words_are_read(told, key):
    assert facts_from_text(told).startup.get(key)


_DSV3_EAGLE_BURSTS = [
    "DeepSeek-V3-0324 + EAGLE (8x H200): streaming is bursty, first token after ~9 s, then big chunks.",
    "vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8 --speculative-config "
    "'{\"method\":\"eagle\",\"model\":\"/ckpt/eagle\",\"num_speculative_tokens\":2}'",
]


def test_a_bunched_stream_is_no_mla_decode_kernel_limit():
    assert _analyze(_DSV3_EAGLE_BURSTS).findings[0].category != "spec_kernel_limit"


def test_a_stream_smooth_past_the_ingress_is_the_proxys():
    lead = _analyze([*_DSV3_EAGLE_BURSTS, "kubectl port-forward svc/dsv3 8000 -> tokens stream smoothly, TTFT 0.4 s."]
                    ).findings[0]
    assert lead.category == "other" and "proxy" in lead.title


_TOKEN_CAP = [
    "Falcon-H1 34B with ngram returns truncated answers (16 tokens).",
    "vllm serve tiiuae/Falcon-H1-34B-Instruct --max-model-len 16384 "
    "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'",
    "  print(resp.choices[0].finish_reason, resp.usage.completion_tokens)   ->   length 16",
]
_JIT_WITHOUT_NVCC = [
    "vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
    "(Worker_TP0 pid=533) ERROR 12-15 03:29:40 [multiproc_executor.py:703] Traceback (most recent call last):",
    '(Worker_TP0 pid=533) ERROR 12-15 03:29:40 [multiproc_executor.py:703]   File "/usr/local/lib/python3.12/'
    'site-packages/flashinfer/decode.py", line 2440, in trtllm_batch_decode_with_kv_cache_mla',
    "(Worker_TP0 pid=533) ERROR 12-15 03:29:40 [multiproc_executor.py:703] RuntimeError: Could not find nvcc and "
    "default cuda_home='/usr/local/cuda' doesn't exist",
]
_EAGER_AFTER_A_HANG = [
    "DeepSeek-V3.2 + MTP only ~9 tok/s per request on 8xH200.",
    "I added `--enforce-eager` a while ago while debugging a startup hang.",
    "vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 8 --enforce-eager "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
]


@pytest.mark.parametrize("lines, named", [
    (_TOKEN_CAP, "token cap"),  # a printed finish_reason of length
    (_JIT_WITHOUT_NVCC, "JIT toolchain"),  # the image lacks nvcc, not the kernel's query-length limit
    (_EAGER_AFTER_A_HANG, "eager"),  # a measured decode rate under --enforce-eager, whatever hang came before
])
def test_causes_outside_the_families_lead(lines, named):
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and named in lead.title


@pytest.mark.parametrize("told, key", [
    ("TTFT for 100k-token prompts is 40+ seconds, decode is fine.", "slow_prose"),
    ("p99 ITL spikes to several seconds every few minutes.", "slow_prose"),
    ('Looks like streams "freeze" and then resume.', "slow_prose"),
    ("Every night around 03:30 generation throughput halves for ~40 minutes.", "slow_prose"),
    ("TPOT 60ms at batch 1, people report ~20ms.", "slow_prose"),
    ("Node gpu-07 has half the generation throughput of the others.", "slow_prose"),
    ("Decodes at ~19 tok/s for one user, the model card says it should be much faster.", "slow_prose"),
    ("TTFT goes from 300ms to 20s+ once we pass ~30 concurrent chats.", "slow_prose"),
    ("Why is ngram speculative decoding making Llama-3.3-70B SLOWER?", "spec_slower_prose"),
    ("Requests queue even though max_num_seqs=256.", "capacity_prose"),
    ("After ~200 tokens the model starts repeating the same sentence until max_tokens.", "wrong_output_prose"),
])
def test_more_symptoms_in_a_users_words_are_read(told, key):
    assert facts_from_text(told).startup.get(key)


def test_turns_spread_across_pods_split_the_prefix_cache():
    facts = facts_from_text("kube-proxy spreads the turns of one conversation across the 4 pods; added "
                            "sessionAffinity: ClientIP.")
    assert facts.startup.get("split_routing_prose")


def test_application_clocks_held_are_a_throttled_gpu():
    assert facts_from_text("        Applications Clocks Setting       : Active").startup.get("gpu_throttled_prose")


def test_the_block_note_answers_a_report_about_hits_not_one_about_slower_decoding():
    """A slow first token with prefix caching on is the raised block's (hits only at its boundaries); a node that
    decodes slower while its hit rate is the same as the others' is not."""
    base = [*_GRANITE_H_NGRAM, _stats(8, 20.0)]
    hits = _analyze([*base, "With prefix caching on, TTFT goes from 0.3 s to 2.1 s; the shared system prompt never hits."])
    assert hits.findings[0].rule == "block_size_inflated"
    slower = _analyze([*base, "Node B is 2.3x slower than node A. Acceptance and hit rate are the same."])
    assert slower.findings[0].category == "other"


def test_an_outside_error_leaves_the_families_notes_out():
    lines = [
        *_GRANITE_H_NGRAM,
        "(Worker_TP0 pid=301) ERROR 02-27 11:36:03 [multiproc_executor.py:671] torch.distributed.DistBackendError: "
        "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version "
        "2.21.5",
    ]
    assert all(f.category == "other" for f in _analyze(lines).findings)


def test_a_slow_question_after_a_rate_and_pairs_showing_sys_are_read():
    facts = facts_from_text("Qwen3.5-27B MTP on 4x RTX 4090: 14 tok/s, is GDN + MTP slow on consumer cards?\n"
                            "nvidia-smi topo -m shows SYS between every pair.")
    assert facts.startup.get("slow_prose") and facts.startup.get("gpu_link_no_nvlink")


def test_reasoning_that_spends_max_tokens_explains_empty_answers():
    lines = [
        "our service gets `\"content\": \"\"` or a half sentence back for 40% of questions on qwen3.5 + MTP.",
        "vllm serve Qwen/Qwen3.5-35B-A3B --reasoning-parser qwen3 --enable-prefix-caching "
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        "-- update: the client's default options set maxTokens=1024. thinking eats it all.",
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Reasoning" in lead.title


@pytest.mark.parametrize("told", [
    "Our outputs are mostly 32-char hex ids and hashes copied from the prompt.",
    "The speedup went away after we launched our Japanese product.",
    "Ran the same server against ShareGPT: the server is fine on normal text.",
])
def test_low_acceptance_on_text_a_drafter_cannot_predict_is_the_workload(told):
    lines = [
        "MTP acceptance on Qwen3-Next is terrible for our workload, we see ~20%.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
        "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "(APIServer pid=1) INFO 05-02 10:01:02 [loggers.py:259] Engine 000: Avg prompt throughput: 2101.0 tokens/s, "
        "Avg generation throughput: 901.2 tokens/s, Running: 40 reqs, Waiting: 0 reqs, GPU KV cache usage: 11.0%, "
        "Prefix cache hit rate: 62.5%",
        told,
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "cannot predict" in lead.title


@pytest.mark.parametrize("told", [
    "It crashes as soon as several requests are decoding with *different* numbers of ngram drafts.",
    "Only when some requests are in their first decode step (no drafts yet) while others already have 4 drafts each.",
])
def test_drafted_rows_beside_undrafted_ones_are_a_mixed_batch(told):
    assert facts_from_text(told).startup.get("mixed_prose")


def test_nvidia_smi_q_telemetry_is_read():
    facts = facts_from_text("\n".join([
        "    GPU Current Temp                      : 89 C",
        "        Current Power Limit               : 450.00 W",
        "    Clocks",
        "        SM                                : 1095 MHz",
        "    Max Clocks",
        "        SM                                : 1980 MHz",
    ]))
    assert (facts.startup["gpu_temp_c"], facts.startup["power_limit_w"], facts.startup["sm_clock_mhz"]) == (89, 450.0, 1095)


@pytest.mark.parametrize("told", [
    "But disabling prefix caching AND MTP still repeats for the same requests.",
    "Without MTP and without prefix caching: same garbage.",
])
def test_both_switched_off_and_the_symptom_stays(told):
    facts = facts_from_text(told)
    assert facts.startup.get("faults_without_spec_prose") and facts.startup.get("persists_without_pc_prose")


def test_an_outcome_that_is_fine_is_no_symptom_staying():
    """'Without MTP + prefix caching also fine' says both off is fine: no test that takes the families out."""
    facts = facts_from_text("Same command with `--no-enable-prefix-caching` has run 14h. Without MTP + prefix caching "
                            "also fine.")
    assert "persists_without_pc_prose" not in facts.startup


def test_apc_off_is_a_family_toggle_not_a_fix_elsewhere():
    lines = [
        "Qwen3-Next + MTP + prefix caching gives garbage on the 2nd turn. A/B:",
        "- MTP on,  APC on  -> garbage ~30% of 2nd turns",
        "- MTP on,  APC off -> fine",
        "- MTP off, APC on  -> fine",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
        "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":3}'",
    ]
    an = _analyze(lines)
    assert "resolved_prose" not in an.facts.startup and an.findings[0].category != "other"


@pytest.mark.parametrize("told, key", [
    ("Latency degrades badly after ~20 concurrent users: p50 TPOT 35ms -> 400ms, some requests take minutes.",
     "slow_prose"),
    ("Decodes at ~19 tok/s per request, TP=2 on the same box is faster than TP=4.", "slow_prose"),
    ("Qwen3.5 MTP gives me 31 tok/s single-stream on an H200, the model card says >150.", "slow_prose"),
    ('The server "hangs" at startup for ~30 minutes, k8s liveness probe kills it.', "slow_start_prose"),
])
def test_still_more_symptoms_in_a_users_words_are_read(told, key):
    assert facts_from_text(told).startup.get(key)


def test_a_load_cut_short_is_timed_by_the_progress_bars_pace():
    lines = [
        'Kimi-Linear server "hangs" at startup for ~30 minutes, k8s liveness probe kills it. Weights on an NFS PVC.',
        "Loading safetensors checkpoint shards:   5% Completed | 1/20 [01:31<28:59, 91.55s/it]",
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "loading the weights took 1,831 s" in lead.title
