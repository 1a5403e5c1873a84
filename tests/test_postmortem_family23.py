"""Post-mortem, round twenty-three: a launcher's name in front of vLLM's records, an exception message that stops at
the next record of another level, several engines' stats lines of one moment, text encoded twice, a hybrid whose
requests each hold one raised block, a latency cliff told as such, and the numbers of a proxy's timeout, a GPU's
compute capability and a co-tenant's memory. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def test_a_short_name_before_each_record_is_a_process_prefix():
    """'W2 ERROR 12-03 ...' (a launcher naming worker 2): the traceback behind it is read, so the kernel's check --
    not the engine's wrapper -- is the root error."""
    rec = "W2 ERROR 12-03 16:53:05 [multiproc_executor.py:852] "
    lead = _analyze([
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 4 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        rec + "WorkerProc failed to start.",
        rec + "Traceback (most recent call last):",
        rec + '  File ".../vllm/model_executor/layers/sparse_attn_indexer.py", line 324, in sparse_attn_indexer',
        rec + "    logits = fp8_fp4_paged_mqa_logits(",
        rec + '  File ".../vllm/utils/deep_gemm.py", line 606, in fp8_fp4_paged_mqa_logits',
        rec + "    return _fp8_fp4_paged_mqa_logits_impl(",
        rec + "RuntimeError: Assertion error (/build/DeepGEMM/csrc/jit_kernels/impls/smxx_fp8_paged_mqa_logits.hpp:233): "
              "next_n == 1 or next_n == 2",
        "EngineCore ERROR 12-03 16:53:06 [core.py:1120] EngineCore failed to start.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]).findings[0]
    assert lead.category == "spec_kernel_limit"


def test_a_prose_word_before_a_level_is_not_a_prefix():
    facts = facts_from_text("we saw INFO 12-03 16:53:05 lines only")
    assert facts.exceptions == []


_TOOL_PARSER_ERROR = [
    "vllm serve Qwen/Qwen3-Coder-Next --enable-prefix-caching --tool-call-parser hermes --enable-auto-tool-choice",
    "(APIServer pid=7711) ERROR 11-29 08:14:22 [hermes_tool_parser.py:117] Error in extracting tool call from response.",
    "(APIServer pid=7711) ERROR 11-29 08:14:22 [hermes_tool_parser.py:117] Traceback (most recent call last):",
    '(APIServer pid=7711) ERROR 11-29 08:14:22 [hermes_tool_parser.py:117]   File ".../vllm/tool_parsers/'
    'hermes_tool_parser.py", line 92, in extract_tool_calls',
    '(APIServer pid=7711) ERROR 11-29 08:14:22 [hermes_tool_parser.py:117]   File "/usr/lib/python3.12/json/decoder.py", '
    "line 356, in raw_decode",
    "(APIServer pid=7711) ERROR 11-29 08:14:22 [hermes_tool_parser.py:117] json.decoder.JSONDecodeError: Expecting value: "
    "line 2 column 1 (char 1)",
    '(APIServer pid=7711) INFO:     10.8.3.21:51844 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "(APIServer pid=7711) INFO 11-29 08:14:25 [loggers.py:...] Engine 000: Avg prompt throughput: 21877.1 tokens/s, Avg "
    "generation throughput: 964.0 tokens/s, Running: 14 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.7%, Prefix cache "
    "hit rate: 91.3%",
]


def test_an_info_record_after_an_error_records_exception_is_not_its_message():
    """The access line and the stats line after the JSONDecodeError are the next records (INFO, not ERROR): the
    message stays 'Expecting value ...', and nothing reads the stats line's prefix-cache words as the error's."""
    facts = facts_from_text("\n".join(_TOOL_PARSER_ERROR))
    exc = next(e for e in facts.exceptions if e.exc_type.endswith("JSONDecodeError"))
    assert exc.message == "Expecting value: line 2 column 1 (char 1)"
    assert _analyze(_TOOL_PARSER_ERROR).findings[0].category == "other"


def _replica(name: str, at: str, running: int, waiting: int) -> str:
    return (f"  {name} | (APIServer pid=7) INFO 11-22 10:31:{at} [loggers.py:315] Engine 000: Avg prompt throughput: "
            f"612.4 tokens/s, Avg generation throughput: 337.8 tokens/s, Running: {running} reqs, Waiting: {waiting} "
            "reqs, GPU KV cache usage: 61.3%, Prefix cache hit rate: 41.2%")


_JAMBA_REPLICAS = [
    "4 replicas of Jamba-Mini behind Envoy; with 250 concurrent users the queue explodes and p95 TTFT goes to 90 s.",
    "vllm serve ai21labs/AI21-Jamba-Mini-1.7 --tensor-parallel-size 2 --kv-cache-dtype fp8 --enable-prefix-caching "
    "--max-num-seqs 256",
    "  jamba-0 | (APIServer pid=7) INFO 11-22 10:00:03 [interface.py:933] Setting attention block size to 2128 tokens "
    "to ensure that attention page size is >= mamba page size.",
]


def test_one_engine_queueing_while_another_idles_is_the_router():
    lines = [*_JAMBA_REPLICAS, _replica("jamba-0", "20", 212, 34), _replica("jamba-1", "19", 1, 0),
             _replica("jamba-2", "21", 2, 0)]
    facts = facts_from_text("\n".join(lines))
    assert "212 requests with 34 waiting" in facts.startup["replica_imbalance"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "one of several engines" in lead.title


def test_one_engine_over_time_is_no_imbalance():
    """The same engine's stats lines ten seconds apart, busy then quiet: one engine's load changing, not replicas."""
    lines = [*_JAMBA_REPLICAS, _replica("jamba-0", "10", 212, 34), _replica("jamba-0", "20", 1, 0)]
    assert "replica_imbalance" not in facts_from_text("\n".join(lines)).startup


def test_balanced_engines_are_no_imbalance():
    lines = [*_JAMBA_REPLICAS, _replica("jamba-0", "20", 60, 3), _replica("jamba-1", "19", 55, 0)]
    assert "replica_imbalance" not in facts_from_text("\n".join(lines)).startup


_MLA_MTP_EVAL = [
    "DeepSeek-V3.2 + MTP produces weird characters on our German eval, acceptance also bad.",
    "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
    "(EngineCore_DP0 pid=771) INFO 11-25 14:02:31 [cuda.py:538] Using FLASHMLA_SPARSE attention backend out of "
    "potential backends: ['FLASHMLA_SPARSE'].",
]


def test_utf8_read_as_latin1_is_the_data_not_the_kernel():
    row = '4471,de,"Guten Tag, ich habe eine Frage zur RÃ¼ckerstattung fÃ¼r meine Bestellung."'
    facts = facts_from_text("\n".join([*_MLA_MTP_EVAL, row]))
    assert "fÃ¼r" in facts.startup["mojibake_text"]
    lead = _analyze([*_MLA_MTP_EVAL, row]).findings[0]
    assert lead.category == "other" and "encoded twice" in lead.title


def test_one_accented_word_is_no_mojibake():
    assert "mojibake_text" not in facts_from_text("Ã la carte: the menu item Ã is fine").startup


_NEMOTRON_ONE_BLOCK_EACH = [
    "Running never goes above 141 although max-num-seqs is 256; our requests are ~700 tokens each.",
    "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --max-model-len 16384 --max-num-seqs 256",
    "(APIServer pid=61) INFO 11-23 08:15:40 [interface.py:911] Setting attention block size to 1056 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(EngineCore_DP0 pid=188) INFO 11-23 08:17:05 [kv_cache_utils.py:1869] GPU KV cache size: 148,896 tokens, Maximum "
    "concurrency for 16,384 tokens per request: 9.09x",
    "(APIServer pid=61) INFO 11-23 09:40:12 [loggers.py:310] Engine 000: Avg prompt throughput: 13870.4 tokens/s, Avg "
    "generation throughput: 4087.3 tokens/s, Running: 141 reqs, Waiting: 259 reqs, Preemptions: 3, GPU KV cache "
    "usage: 100.0%, Prefix cache hit rate: 0.0%",
]


def test_a_full_cache_of_one_block_per_request_is_the_block_not_the_load():
    """141 running requests fill 148,896 tokens: 1,056 tokens each, one raised block apiece although each has ~700
    tokens -- the hybrid's block granularity caps the concurrency, not the workload's size."""
    lead = _analyze(_NEMOTRON_ONE_BLOCK_EACH).findings[0]
    assert lead.category == "mamba_block_budget"


_CLIFF = [
    "### TPOT cliff above ~100 concurrent requests with Qwen3-Next FP8 + MTP (k=4) on H200",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --max-num-seqs 256 --speculative-config "
    "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":4}'",
    "(EngineCore_DP0 pid=5521) INFO 11-08 10:31:18 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: "
    "model='Qwen/Qwen3-Next-80B-A3B-Instruct-FP8', compilation_config={'cudagraph_capture_sizes': [5, 10, 20, 500], "
    "'max_cudagraph_capture_size': 500}",
    "(APIServer pid=5400) INFO 11-08 11:02:10 [loggers.py:271] Engine 000: Avg prompt throughput: 6215.4 tokens/s, Avg "
    "generation throughput: 3104.9 tokens/s, Running: 128 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.8%",
]


def test_a_tpot_cliff_is_slowness_and_the_graphs_edge_reads_it():
    assert facts_from_text("Throughput actually goes *down* from 96 to 128.").startup.get("slow_prose")
    lead = _analyze(_CLIFF).findings[0]
    assert lead.category == "cudagraph_shape" and lead.numbers["max_cudagraph_capture_size"] == 500


def test_a_proxys_read_timeout_is_a_number():
    assert facts_from_text("    proxy_read_timeout 60s;").startup["proxy_read_timeout_s"] == 60
    assert facts_from_text('nginx.ingress.kubernetes.io/proxy-read-timeout: "600"').startup["proxy_read_timeout_s"] == 600
    assert facts_from_text("proxy_read_timeout 2m;").startup["proxy_read_timeout_s"] == 120


def test_a_compute_capability_in_words_is_the_gpus():
    assert facts_from_text('nvidia-smi -q says "Compute Capability 7.0" if that matters.').startup[
        "compute_capability"] == [7, 0]


def test_a_cotenants_memory_is_a_number():
    smi = [
        "|    1   N/A  N/A     88213      C   python                                      17262MiB |",
        "|    1   N/A  N/A       403      C   /usr/bin/python3 -m vllm.entrypoints.openai.api_server    60970MiB |",
    ]
    facts = facts_from_text("\n".join(smi))
    assert facts.startup.get("other_process_mib") == 17262


_GRANITE_STARTUP = [
    "(EngineCore_DP0 pid=702) INFO 11-25 01:00:27 [interface.py:912] Setting attention block size to 1200 tokens to "
    "ensure that attention page size is >= mamba page size.",
    "(APIServer pid=611) INFO 11-25 01:14:50 [loggers.py:310] Engine 000: Avg prompt throughput: 912.7 tokens/s, Avg "
    "generation throughput: 143.2 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.4%, Prefix cache "
    "hit rate: 77.9%",
]


def test_a_raised_block_note_is_no_diagnosis_of_a_report_it_does_not_answer():
    """Someone's words (host RAM grows every hour, prefix caching on) and a cache that hits 78 %: the raised block is
    true of every such start and answers nothing said, so the lead says nothing here is read (not modelled) and the
    note is left out."""
    lines = ["Host RAM of our pod grows by about 1.5 GB every hour until the OOM killer ends it; we enabled prefix "
             "caching for the hybrid model.", *_GRANITE_STARTUP]
    findings = _analyze(lines).findings
    assert findings[0].category == "other" and findings[0].rule == "unexplained_report"
    assert "not modelled" in findings[0].title
    assert not any(f.rule == "block_size_inflated" for f in findings)


def test_a_pasted_log_alone_keeps_its_note_first():
    """Two startup lines and nothing else: the note is all a reader asked for, so it stays the lead."""
    assert _analyze(_GRANITE_STARTUP[:1]).findings[0].rule == "block_size_inflated"


def test_a_shared_prefix_told_over_a_wrapped_line_is_read():
    """'Every request starts with the same' / 'system prompt + tool schema, ~1,200 tokens' -- the prefix is stated, so
    the chunks 'different every time' after it are no report of prompts that share nothing."""
    lines = [
        "Subject: prefix caching does nothing on Nemotron-H (0% hit rate)",
        "vllm serve nvidia/NVIDIA-Nemotron-H-47B-Reasoning-128K -tp 4 --enable-prefix-caching --max-num-seqs 48",
        "Every request starts with the same",
        "system prompt + tool schema, ~1,200 tokens, then user question + retrieved chunks (different every time).",
        "(APIServer pid=9013) INFO 11-10 10:01:22 [config.py:604] Setting attention block size to 1584 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "(APIServer pid=9013) INFO 11-10 14:20:41 [loggers.py:310] Engine 000: Avg prompt throughput: 9120.4 tokens/s, "
        "Avg generation throughput: 611.3 tokens/s, Running: 29 reqs, Waiting: 0 reqs, GPU KV cache usage: 38.2%, "
        "Prefix cache hit rate: 0.0%",
    ]
    assert facts_from_text("\n".join(lines)).startup["shared_prefix_tokens"] == 1200
    assert _analyze(lines).findings[0].category == "block_size_alignment"


def test_an_eval_score_falling_and_rambling_answers_are_wrong_output():
    assert facts_from_text("Quality eval went from 81% -> 47% since the upgrade.").startup.get("wrong_output_prose")
    assert facts_from_text("accuracy dropped from 0.71 to 0.52 on gsm8k").startup.get("wrong_output_prose")
    assert facts_from_text("The model rambles and answers its own follow-up questions").startup.get("wrong_output_prose")
    assert not facts_from_text("the eval score is 47% on this model").startup.get("wrong_output_prose")


def test_drafts_named_before_their_state_in_an_ab_test():
    said = facts_from_text("Edit: tried --speculative-config removed -> output still weird but slower.").startup
    assert said.get("faults_without_spec_prose")
    assert not facts_from_text("MTP off -> still works fine").startup.get("faults_without_spec_prose")


_HOT = [
    "Title: Qwen3-Next + MTP outputs gibberish after ~100 tokens, acceptance also terrible",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching --speculative-config "
    "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
    "(APIServer pid=2210) INFO 11-27 09:31:24 [loggers.py:310] Engine 000: Avg prompt throughput: 3877.0 tokens/s, Avg "
    "generation throughput: 598.4 tokens/s, Running: 19 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.8%, Prefix cache "
    "hit rate: 43.0%",
]


def test_gibberish_at_temperature_1_9_is_the_sampling():
    lead = _analyze([*_HOT, '{"temperature": 1.9, "top_p": 1.0, "max_tokens": 2048}']).findings[0]
    assert lead.category == "other" and "temperature 1.9" in lead.title


def test_a_hot_temperature_with_a_top_p_cut_is_no_sampling_reading():
    lead = _analyze([*_HOT, '{"temperature": 1.9, "top_p": 0.8, "max_tokens": 2048}']).findings[0]
    assert "temperature" not in lead.title


def test_a_full_cache_of_three_raised_blocks_per_request_is_left_to_the_block():
    """Five running requests fill 18,688 tokens: ~3.2 blocks of 1,168 each -- few enough that the raised block may be
    what holds the 178 waiting back, so the workload reading steps aside for the Mamba block budget's."""
    lines = [
        "only 4-5 requests ever run, the rest queue; max-num-seqs is 128",
        "vllm serve tiiuae/Falcon-H1-34B-Instruct --max-model-len 16384 --max-num-seqs 128",
        "(APIServer pid=8) INFO 11-20 09:00:01 [interface.py:912] Setting attention block size to 1168 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "(EngineCore_DP0 pid=88) INFO 11-20 09:02:41 [kv_cache_utils.py:1868] GPU KV cache size: 18,688 tokens, Maximum "
        "concurrency for 16,384 tokens per request: 1.14x",
        "(APIServer pid=8) INFO 11-20 09:30:02 [loggers.py:310] Engine 000: Avg prompt throughput: 1290.1 tokens/s, Avg "
        "generation throughput: 152.0 tokens/s, Running: 5 reqs, Waiting: 187 reqs, GPU KV cache usage: 100.0%, Prefix "
        "cache hit rate: 0.0%",
    ]
    assert _analyze(lines).findings[0].category == "mamba_block_budget"


def test_a_command_or_an_exception_is_no_report_in_someones_words():
    """The command and the exception are the log's; only a sentence of the reporter's makes a report (whose note
    then does not lead on its own)."""
    for line in ("vllm serve someorg/MiniMax-M1-80k-AWQ -tp 4 --quantization awq_marlin --max-model-len 65536",
                 "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"):
        assert "report_prose" not in facts_from_text(line).lines
    assert "report_prose" in facts_from_text("The answers get worse every day since we moved to the new cluster.").lines


def test_the_platforms_own_numbers_are_read():
    text = "\n".join([
        "| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: 12.2     |",
        "|    0   N/A  N/A          131077      C   python3 train_probe.py                  7204MiB |",
        "|    1   N/A  N/A     71204      C   /opt/conda/bin/python                     21346MiB   |",
        "nr_periods 41877",
        "nr_throttled 39102",
        "Nov 17 03:12:55 hgx-b12 kernel: NVRM: Xid (PCI:0000:ab:00): 94, pid=533, name=VLLM::Worker_TP, Contained: SM",
    ])
    st = facts_from_text(text).startup
    assert (st["driver_version"], st["driver_cuda_version"]) == ("535.183.01", 12.2)
    # (a bare interpreter may be the engine itself; a program of its own is another's)
    assert st["other_process_mib"] == 7204
    assert (st["nr_periods"], st["nr_throttled"], st["xid"]) == (41877, 39102, 94)


def test_a_rate_that_changed_keeps_its_first_value():
    line = ("(APIServer pid=88) INFO 11-20 {} [loggers.py:310] Engine 000: Avg prompt throughput: {} tokens/s, Avg "
            "generation throughput: {} tokens/s, Running: 40 reqs, Waiting: 0 reqs, GPU KV cache usage: 20.0%")
    st = facts_from_text("\n".join([line.format("10:14:22", 5210.7, 1912.4), line.format("14:37:51", 2288.1, 846.0)])).startup
    assert (st["generation_throughput_tok_s_first"], st["generation_throughput_tok_s"]) == (1912.4, 846.0)
    assert "generation_throughput_tok_s_first" not in facts_from_text(line.format("10:14:22", 1.0, 2.0)).startup


def _stats(at: str, hit: float, running: int = 20, prefix: str = "") -> str:
    return (f"{prefix}(APIServer pid=1) INFO 09-02 09:40:{at} [loggers.py:310] Engine 000: Avg prompt throughput: 38110.2 "
            f"tokens/s, Avg generation throughput: 402.6 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache "
            f"usage: 33.0%, Prefix cache hit rate: {hit}%")


def test_round_robin_across_replicas_splits_the_prefix_cache_whatever_share_is_left():
    """Four replicas behind a ROUND_ROBIN load balancer hit ~25 % where one replica replaying the same traffic hits
    78 %: the router spreads a conversation's turns, so the reading holds above the 20 % a cache that never hits
    shows."""
    lines = ["kimi-linear prefix cache hit rate low (~25%) with multi-turn agent traffic, 4 replicas behind envoy",
             "    lb_policy: ROUND_ROBIN", _stats("12", 24.1, prefix="  replica-0 "), _stats("14", 26.8, prefix="  replica-1 "),
             "staging has 1 replica and the same agent replay gets:", _stats("55", 78.6)]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "split across replicas" in lead.title


def test_a_benchmark_that_starts_fine_then_degrades_is_slowness():
    assert facts_from_text("benchmark starts fine then degrades:").startup.get("slow_prose")


def test_two_interpreters_on_one_gpu_are_an_engine_and_a_neighbour():
    rows = ["|    0   N/A  N/A          412877      C   python3                                 68920MiB |",
            "|    0   N/A  N/A          530114      C   /opt/conda/bin/python                   10104MiB |"]
    assert "10,104 MiB" in facts_from_text("\n".join(rows)).startup["cotenant_prose"]
    assert "cotenant_prose" not in facts_from_text(rows[0]).startup


def test_a_fault_in_a_foreign_namespaces_kernel_is_that_librarys():
    lines = [
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "========= Invalid __global__ read of size 16 bytes",
        "=========     at void acme_kernels::fused_qknorm_partial_rope_kernel<__nv_bfloat16, 64, true>(...)+0x1c0",
        "(Worker_TP0 pid=77) ERROR 11-28 03:12:40 [multiproc_executor.py:1039] RuntimeError: CUDA error: an illegal memory "
        "access was encountered",
    ]
    assert _analyze(lines).findings[0].category == "other"


def test_the_request_that_samples_hot_is_the_one_whose_drafts_are_rejected():
    """The production request (temperature 1.35, penalties) is logged before the greedy benchmark's: the sampling one
    is read, whichever comes last."""
    req = ("(APIServer pid=9) INFO 01-14 {} [logger.py:47] Received request chatcmpl-{}: prompt: 'You are Aria, a playful "
           "companion[...]', params: SamplingParams(n=1, presence_penalty={}, frequency_penalty=0.0, "
           "repetition_penalty={}, temperature={}, top_p=1.0, top_k=0, min_p=0.0, max_tokens=1024)")
    lines = ["Title: Qwen3-Next MTP acceptance is terrible in prod but fine on my laptop benchmark",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
             "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
             req.format("10:33:09", "prod1", 0.6, 1.15, 1.35), req.format("09:21:31", "bench1", 0.0, 1.0, 0.0)]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "sampling" in lead.title


def test_a_description_and_its_verdict_are_no_trial():
    said = facts_from_text("Workload is document rewriting (long input, output copies the input) -> perfect for ngram, "
                           "right.").startup
    assert "resolved_prose" not in said and "other_fix_prose" not in said


def test_a_full_cache_without_the_hybrid_manager_is_its_layout():
    lines = [
        "TTFT p99 went from 2 s to 19 s after we plugged in our KV connector; requests queue.",
        "vllm serve openai/gpt-oss-120b --kv-transfer-config '{\"kv_connector\":\"ShmKVConnector\",\"kv_role\":\"kv_both\"}'",
        "(EngineCore_DP0 pid=40) WARNING 10-02 08:00:11 [vllm.py:1180] Turning off hybrid kv cache manager because "
        "`--kv-transfer-config` selects a KV connector that does not support it.",
        "(APIServer pid=1) INFO 10-02 09:00:10 [loggers.py:310] Engine 000: Avg prompt throughput: 9000.1 tokens/s, Avg "
        "generation throughput: 800.2 tokens/s, Running: 40 reqs, Waiting: 31 reqs, Preemptions: 12, GPU KV cache "
        "usage: 99.2%, Prefix cache hit rate: 10.0%",
    ]
    assert _analyze(lines).findings[0].category == "kv_page_size"


def test_a_record_whose_location_lost_its_line_number_is_still_a_record():
    """'[multiproc_executor.py]' with the ':N' cut: the traceback behind it is read, so vLLM's Mamba-block check is the
    root error, not the engine's wrapper."""
    rec = "(Worker_TP0 pid=276) ERROR 11-25 13:40:34 [multiproc_executor.py] "
    lines = [
        "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 --max-num-seqs 512",
        rec + "Traceback (most recent call last):",
        rec + '  File ".../vllm/config/compilation.py", line 1549, in resolve_cudagraph_mode_and_sizes',
        rec + "    raise ValueError(",
        rec + "ValueError: max_num_seqs (512) exceeds available Mamba cache blocks (389). Each decode sequence requires "
              "one Mamba cache block, so CUDA graph capture cannot proceed.",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    assert _analyze(lines).findings[0].category == "mamba_block_budget"


def test_nvidia_smi_csv_throttle_reasons_are_read():
    text = "\n".join([
        "index, temperature.gpu, clocks.sm [MHz], clocks.max.sm [MHz], clocks_event_reasons.hw_thermal_slowdown, "
        "clocks_event_reasons.sw_thermal_slowdown",
        "0, 61, 1980, 1980, Not Active, Not Active",
        "2, 88, 1140, 1980, Active, Active",
    ])
    st = facts_from_text(text).startup
    assert "GPU 2" in st["gpu_throttled_prose"] and (st["gpu_temp_c"], st["sm_clock_mhz"]) == (88, 1140)
    calm = facts_from_text("\n".join(text.splitlines()[:2]))
    assert "gpu_throttled_prose" not in calm.startup


def test_wrong_output_is_never_answered_by_the_caches_granularity():
    lines = ["granite tiny gives weird output since the template change; prefix cache hit rate is fine though.",
             "(EngineCore_DP0 pid=5) INFO 11-25 01:00:27 [interface.py:912] Setting attention block size to 208 tokens "
             "to ensure that attention page size is >= mamba page size."]
    assert _analyze(lines).findings[0].category == "other"


def test_drafts_rejected_on_random_prompts_of_a_hybrid_that_accepts_them_elsewhere():
    """A hybrid whose drafts are rejected on `--dataset-name random` (10 %) and accepted on real conversations by the
    same server (67 %): no state fault rejects them, the benchmark's tokens do."""
    metric = ("(APIServer pid=7) INFO 06-19 {} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {}, "
              "Accepted: 4537 tokens, Drafted: 43911 tokens, Avg Draft acceptance rate: {}%")
    lines = ["MTP on Qwen3.5 looks broken?? acceptance ~10% and tput is WORSE than no spec.",
             "vllm bench serve --dataset-name random --random-input-len 1024 --num-prompts 500",
             "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             metric.format("09:41:03", 1.31, 10.3), "on real conversations the same server:",
             metric.format("10:02:27", 3.02, 67.3)]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "random prompts" in lead.title


def test_throughput_worse_than_without_drafts_is_slower_with_drafts():
    assert facts_from_text("acceptance ~10% and tput is WORSE than no spec.").startup.get("spec_slower_prose")
    assert facts_from_text("latency is higher than with no drafts").startup.get("spec_slower_prose")


def test_requests_that_hang_until_a_proxy_timeout_are_the_proxy():
    lines = ["DeepSeek-V2-Lite + ngram: long non-streaming requests hang and then the client gets a 504.",
             "vllm serve deepseek-ai/DeepSeek-V2-Lite --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\""
             ":3,\"prompt_lookup_max\":4}'",
             "    proxy_read_timeout 60s;"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "timeout" in lead.title


def test_a_ceiling_on_running_requests_is_a_capacity_complaint():
    for told in ("We set --max-num-seqs 256 but it never runs more than ~190.",
                 "qwen3-next queueing at only ~190 concurrent, max-num-seqs is 256"):
        assert facts_from_text(told).startup.get("capacity_prose")


def test_the_raised_block_answers_a_ceiling_of_requests_that_each_hold_a_few_blocks():
    """191 running requests fill 393,216 tokens (~2,060 each, under four 544-token blocks) at a 0.6 memory share: the
    block granularity, not the share, is what the report's own arithmetic leaves (256 x 600 tokens fit 2.5 times)."""
    lines = ["We set --max-num-seqs 256 but it never runs more than ~190; our chats are short (~600 tokens).",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 2 --max-num-seqs 256 --gpu-memory-utilization 0.6",
             "(APIServer pid=1) INFO 11-20 09:00:03 [interface.py:906] Setting attention block size to 544 tokens to "
             "ensure that attention page size is >= mamba page size.",
             "(EngineCore_DP0 pid=80) INFO 11-20 09:02:41 [kv_cache_utils.py:1868] GPU KV cache size: 393,216 tokens",
             "(APIServer pid=1) INFO 11-20 09:30:02 [loggers.py:310] Engine 000: Avg prompt throughput: 5290.1 tokens/s, "
             "Avg generation throughput: 3152.0 tokens/s, Running: 191 reqs, Waiting: 40 reqs, Preemptions: 31, GPU KV "
             "cache usage: 100.0%, Prefix cache hit rate: 0.0%"]
    assert _analyze(lines).findings[0].category in ("block_size_alignment", "mamba_block_budget")


def test_a_placeholder_for_the_records_line_number_keeps_it_a_record():
    rec = "(Worker_TP0 pid=53240) ERROR 12-09 10:02:45 [multiproc_executor.py:xxx] "
    lines = [
        "vllm serve Qwen/Qwen3-32B -tp 4 --speculative-config '{\"method\":\"eagle3\",\"model\":\"x/eagle3\","
        "\"num_speculative_tokens\":2}' --compilation-config '{\"pass_config\":{\"enable_sequence_parallelism\":true}}'",
        rec + "Traceback (most recent call last):",
        rec + '  File ".../vllm/config/compilation.py", line 1201, in adjust_cudagraph_sizes_for_spec_decode',
        rec + "    raise ValueError(",
        rec + "ValueError: Can't determine cudagraph shapes that are both a multiple of 3 (num_speculative_tokens + 1) "
              "required by spec-decode and 4 (tensor_parallel_size) required by sequence parallelism please adjust "
              "num_speculative_tokens or disable sequence parallelism",
    ]
    assert _analyze(lines).findings[0].category == "cudagraph_shape"


def test_an_index_out_of_bounds_beside_the_operators_logits_processors_is_theirs():
    lines = [
        "vllm serve deepseek-ai/DeepSeek-V2-Lite-Chat --speculative-config '{\"method\":\"ngram\","
        "\"num_speculative_tokens\":4,\"prompt_lookup_max\":5}' --logits-processors safety_lp.processors:BlockedTokens",
        "../aten/src/ATen/native/cuda/ScatterGatherKernel.cu:367: operator(): block: [0,0,0], thread: [12,0,0] Assertion "
        "`idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.",
        "(EngineCore_DP0 pid=77) ERROR 01-21 06:25:03 [core.py:1512] torch.AcceleratorError: CUDA error: device-side "
        "assert triggered",
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "logits processors" in lead.basis
    # (without processors of the operator's own, the index fault is read from the configuration as before)
    assert "logits processors" not in (_analyze([lines[0].split(" --logits")[0], *lines[1:]]).findings[0].basis or "")


def test_the_worst_hit_rate_the_metrics_lines_show_is_kept():
    line = ("(APIServer pid=1) INFO 11-03 09:40:{} [loggers.py:335] Engine 000: Avg prompt throughput: 4412.8 tokens/s, "
            "Avg generation throughput: 905.1 tokens/s, Running: 29 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.2%, "
            "Prefix cache hit rate: {}%")
    st = facts_from_text("\n".join([line.format("12", 3.9), line.format("22", 2.1), line.format("32", 5.0)])).startup
    assert (st["prefix_cache_hit_rate_min"], st["prefix_cache_hit_rate_max"]) == (2.1, 5.0)
    assert "prefix_cache_hit_rate_min" not in facts_from_text(line.format("12", 3.9)).startup


def test_metrics_cache_labels_and_numeric_environment_settings_are_facts():
    st = facts_from_text("\n".join([
        'vllm:cache_config_info{block_size="544",cache_dtype="auto",enable_prefix_caching="True",'
        'gpu_memory_utilization="0.85",num_gpu_blocks="783"} 1.0',
        "env: LMCACHE_CHUNK_SIZE=256 LMCACHE_LOCAL_CPU=True CUDA_VISIBLE_DEVICES=0,1",
    ])).startup
    assert st["cache_config"] == {"block_size": 544, "gpu_memory_utilization": 0.85, "num_gpu_blocks": 783}
    # (a device list is no number; a boolean is no number)
    assert st["env_numbers"] == {"lmcache_chunk_size": 256}


def test_a_throughput_halved_is_slowness():
    assert facts_from_text("Throughput dropped by half after ~20 min of the load test").startup.get("slow_prose")
    assert facts_from_text("tok/s fell by 40% since Monday").startup.get("slow_prose")


_GLM_MTP = [
    "MTP on GLM-4.7-Flash gives basically nothing on our A100s, same thing without --speculative-config.",
    "Things I tried: --max-num-seqs 8, num_speculative_tokens 1 (a bit better), --enforce-eager (much worse, as expected).",
    "vllm serve zai-org/GLM-4.7-Flash -tp 2 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
    "(Worker_TP0 pid=7890) WARNING 05-19 13:41:38 [compilation.py:1458] CUDAGraphMode.FULL_AND_PIECEWISE is not supported "
    "with spec-decode for attention backend TritonMLABackend (support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); "
    "setting cudagraph_mode=PIECEWISE",
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 35/35 [00:09<00:00,  3.71it/s]",
]


def test_drafts_that_bring_nothing_are_no_eager_run_and_no_cleared_family():
    """'--enforce-eager (much worse)' is a trial, and the run captured graphs: not an eager run. 'Same without the
    drafts' is what 'MTP gives nothing' means: it confirms the complaint rather than clearing the families."""
    lead = _analyze(_GLM_MTP).findings[0]
    assert lead.rule == "spec_cudagraph_downgrade"


def test_gibberish_answers_to_random_token_prompts_are_the_benchmarks():
    lines = ["Jamba + ngram: the outputs are word salad and acceptance is low.",
             "vllm bench serve --dataset-name random --random-input-len 2048 --num-prompts 400",
             "vllm serve ai21labs/AI21-Jamba-Mini-1.7 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\""
             ":5,\"prompt_lookup_max\":4}'"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "random-token prompts" in lead.title


def test_an_exception_hard_wrapped_at_a_column_keeps_its_message():
    """A paste wrapped at a fixed width: 'ValueError: Hybrid' / 'KV cache manager is disabled but fail' / 'ed to ...' --
    the unprefixed lines after a line that ran to the column are the rest of the message, so vLLM's site matches."""
    rec = "2026-04-10 07:43:19 (EngineCore_DP0 pid=274) ERROR 04-10 07:43:19 [core.py:1231] "
    lines = [
        "vllm serve ibm-granite/granite-4.0-h-small --kv-transfer-config '{\"kv_connector\":\"LMCacheConnectorV1\","
        "\"kv_role\":\"kv_both\"}'",
        rec + "Traceback (most recent call last):",
        rec + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 1493, in unify_hyb',
        "rid_kv_cache_specs",
        (rec + "ValueError: Hybrid")[:99],
        "KV cache manager is disabled but failed to convert the KV cache specs to one unified type.",
    ]
    assert len(lines[4]) >= 78
    assert _analyze(lines).findings[0].category == "kv_page_size"


def test_short_requests_that_each_hold_many_pages_are_the_hybrids_not_a_neighbours():
    """~5k tokens of cache per running request on a report of short prompts: the rest is what the hybrid pins per
    request (a state page in each Mamba group), not the small process that shares the card."""
    lines = [
        'Title: granite-4.0-h-tiny only runs ~31 requests at a time, max-num-seqs 128 ignored? KV "full" with short prompts',
        "We share the card with a small embedding service.",
        "vllm serve ibm-granite/granite-4.0-h-tiny --max-num-seqs 128",
        "(APIServer pid=1207) INFO 11-22 08:10:11 [interface.py:905] Setting attention block size to 528 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "(EngineCore_DP0 pid=1290) INFO 11-22 08:11:20 [kv_cache_utils.py:2177] GPU KV cache size: 159,283 tokens",
        "(APIServer pid=1207) INFO 11-22 08:31:00 [loggers.py:301] Engine 000: Avg prompt throughput: 1240.2 tokens/s, Avg "
        "generation throughput: 611.0 tokens/s, Running: 32 reqs, Waiting: 99 reqs, Preemptions: 3, GPU KV cache usage: "
        "99.4%, Prefix cache hit rate: 0.0%",
    ]
    assert _analyze(lines).findings[0].category in ("block_size_alignment", "mamba_block_budget")


def test_a_cache_that_never_hits_keeps_the_note_only_for_a_report_about_the_cache():
    stats = ("(APIServer pid=1) INFO 11-22 08:31:00 [loggers.py:301] Engine 000: Avg prompt throughput: 1240.2 tokens/s, "
             "Avg generation throughput: 611.0 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.4%, "
             "Prefix cache hit rate: 0.0%")
    note = ("(APIServer pid=1) INFO 11-22 08:10:11 [interface.py:905] Setting attention block size to 272 tokens to "
            "ensure that attention page size is >= mamba page size.")
    json_report = "qwen3-next thinking + mtp returns broken json ~1 in 5 requests, we parse the content with json.loads"
    assert _analyze([json_report, note, stats]).findings[0].rule == "unexplained_report"
    cache_report = "We enabled prefix caching on qwen3-next for our agents and it does nothing at all for us"
    assert _analyze([cache_report, note, stats]).findings[0].rule == "block_size_inflated"


def test_acceptance_said_to_be_healthy_is_no_complaint():
    assert not facts_from_text("acceptance is healthy (2.88 mean len), kv only 2%").startup.get("acceptance_prose")
    assert facts_from_text("acceptance only 3% since monday").startup.get("acceptance_prose")


def test_a_ceiling_of_running_requests_is_no_question_of_the_caches_granularity():
    """'only ever runs 16 requests at once' on a hybrid whose cache barely hits: how many requests run is not what the
    prefix-cache granularity decides, so its warning does not lead (the symptom is said to be unexplained)."""
    lines = [
        "### Granite-4.0-H only ever runs 16 requests at once, max_num_seqs ignored for hybrid models?",
        "vllm serve ibm-granite/granite-4.0-h-small --max-num-seqs 256 --enable-prefix-caching --mamba-cache-mode all",
        "(APIServer pid=1) INFO 11-22 08:10:11 [interface.py:905] Setting attention block size to 512 tokens to ensure "
        "that attention page size is >= mamba page size.",
        "(APIServer pid=1) INFO 11-22 08:31:00 [loggers.py:301] Engine 000: Avg prompt throughput: 1240.2 tokens/s, Avg "
        "generation throughput: 1111.0 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.4%, Prefix "
        "cache hit rate: 2.1%",
    ]
    assert facts_from_text("\n".join(lines)).startup.get("capacity_prose")
    assert _analyze(lines).findings[0].category == "other"


def test_a_report_nothing_is_read_in_is_said_to_be_not_modelled_not_clean():
    """A chat export about a latency regression, no error and nothing vllm-diag reads: the result says so, instead of
    an empty list that reads as all well."""
    lines = ["[10:02] priya.k: qwen3.5-35b-a3b canary on the new H100 pool is way off. TPOT p50 42ms, p99 71ms.",
             "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"]
    assert "report_prose" in facts_from_text("\n".join(lines)).lines
    lead = _analyze(lines).findings[0]
    assert lead.rule == "unexplained_report" and "not modelled" in lead.title
    assert _analyze(lines[1:]).findings == []  # (a command alone asks nothing)
