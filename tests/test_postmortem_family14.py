"""Post-mortem, round fourteen: symptoms told in words the readers did not know yet. The reports are written here;
the startup and metrics lines are in vLLM's own formats."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _block_line(tokens: int) -> str:
    """vLLM's start-up line for a hybrid's raised attention block."""
    return (f"(EngineCore pid=51) INFO 02-11 10:01:12 [config.py:520] Setting attention block size to {tokens} tokens to "
            "ensure that attention page size is >= mamba page size.")


def _padding_line(percent: str) -> str:
    """vLLM's start-up line for the Mamba state pages padded to the attention page."""
    return (f"(EngineCore pid=51) INFO 02-11 10:01:12 [config.py:549] Padding mamba page size by {percent}% to ensure that "
            "mamba page size and attention page size are exactly equal.")


def _metrics(hit_rate: float, running: int = 6) -> str:
    """vLLM's periodic stats line (loggers.py) with a prefix-cache hit rate."""
    return (f"(APIServer pid=1) INFO 11-04 10:31:12 [loggers.py:304] Engine 000: Avg prompt throughput: 412.6 tokens/s, "
            f"Avg generation throughput: 188.3 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"7.9%, Prefix cache hit rate: {hit_rate}%")


_HYBRID_EAGLE = [
    "vllm serve nvidia/Nemotron-H-8B-Base-8K --enable-prefix-caching \\",
    "   --speculative-config '{\"method\": \"eagle\", \"model\": \"/ckpt/eagle-head\", \"num_speculative_tokens\": 3}'",
    _block_line(656),
    _metrics(87.5, running=1),
]


def test_a_hybrid_that_answers_in_garbage_on_prefix_hits_with_drafts_reads_as_a_stale_state():
    said = ("Every request that reuses the shared system prompt answers in garbage (repeated tokens, mixed "
            "languages); --no-enable-prefix-caching fixes it, so does turning the drafts off.")
    an = _analyze([said] + _HYBRID_EAGLE)
    assert an.findings and an.findings[0].category == "state_index"
    assert "answers in garbage" in an.findings[0].message


def test_mixed_languages_alone_is_the_wrong_output_symptom():
    an = _analyze(["The replies mix languages after a few turns."] + _HYBRID_EAGLE)
    assert an.findings and an.findings[0].category == "state_index"


def test_the_same_words_about_a_dense_model_make_no_hybrid_finding():
    dense = ["vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-prefix-caching \\",
             "   --speculative-config '{\"method\": \"eagle\", \"model\": \"/ckpt/eagle-head\", "
             "\"num_speculative_tokens\": 3}'"]
    an = _analyze(["It answers in garbage on cache hits."] + dense)
    assert not [f for f in an.findings if f.category == "state_index"]


_MLA_SUFFIX = [
    "(EngineCore pid=611) INFO 05-14 08:02:19 [cuda.py:341] Using FLASHMLA backend.",
    "(EngineCore pid=611) INFO 05-14 08:02:19 [core.py:97] Initializing a V1 LLM engine (v0.24.0) with config: "
    "model='deepseek-ai/DeepSeek-V3', speculative_config=SpeculativeConfig(method='suffix', model=None, "
    "num_spec_tokens=8), tensor_parallel_size=8, ...",
]


def test_a_latency_figure_worse_than_no_spec_on_an_mla_model_is_the_kernel_limit_without_a_crash():
    said = "ITL goes from 21.4 ms to 20.9 ms at low load, and at 64 concurrent it's worse than no spec at all."
    an = _analyze(_MLA_SUFFIX + [said])
    d = an.findings[0] if an.findings else None
    assert d is not None and d.category == "spec_kernel_limit" and d.severity == "warning"
    assert "FLASHMLA" in d.basis and d.numbers["num_speculative_tokens"] == 8


def test_answers_worse_than_no_spec_are_not_a_slowdown():
    an = _analyze(_MLA_SUFFIX + ["The answers are worse than no spec, but the latency is fine."])
    assert not [f for f in an.findings if f.category == "spec_kernel_limit" and "slower" in f.title]


def test_a_bullet_list_of_trials_is_not_the_command():
    report = [
        "docker run --gpus all vllm/vllm-openai:v0.29.0 \\",
        "  --model Qwen/Qwen3.5-27B --max-num-seqs 32 \\",
        "  --enable-prefix-caching \\",
        "  --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        "",
        "Follow-up turns come back as garbage; the first turn of each chat is fine.",
        "",
        "- --no-enable-prefix-caching -> problem gone",
        "- keep prefix caching, remove --speculative-config -> problem gone",
        "",
        _metrics(71.4),
    ]
    an = _analyze(report)
    assert an.facts.args.get("model") == "Qwen/Qwen3.5-27B"
    assert an.findings and an.findings[0].category == "state_index"
    assert "prefix caching on" in an.findings[0].basis


def test_a_yaml_argv_list_is_still_a_command():
    manifest = ["args:", "  - --model", "  - Qwen/Qwen3.5-27B", "  - --max-num-seqs", "  - \"32\"",
                "  - --enable-prefix-caching --max-model-len 8192"]
    an = _analyze(manifest + ["Follow-up turns come back as garbage."])
    assert an.facts.args.get("model") == "Qwen/Qwen3.5-27B" and str(an.facts.args.get("max_num_seqs")) == "32"


def test_an_error_seen_on_another_run_does_not_outrank_the_logged_failure():
    log = [
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 "
        "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'",
        "[rank3]:[E1014 02:22:08.771203624 ProcessGroupNCCL.cpp:685] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=88211, OpType=ALLREDUCE, NumelIn=7340032, NumelOut=7340032, Timeout(ms)=600000) "
        "ran for 600031 milliseconds before timing out.",
        "(EngineCore_DP0 pid=48290) ERROR 10-14 02:22:09 [multiproc_executor.py:154] Worker proc VllmWorker-3 died "
        "unexpectedly, shutting down executor.",
        "",
        "The GPUs sit at 100% before it dies. We also see",
        "\"CUDA error: an illegal memory access was encountered\" on one run but not the others, so not sure.",
    ]
    an = _analyze(log)
    assert an.findings and an.findings[0].category == "other"
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def test_an_eval_bots_verdict_naming_its_task_before_the_threshold_is_wrong_output():
    report = [
        "| task   | baseline | canary | delta |",
        "| gsm8k  | 0.902    | 0.811  | -9.1  |",
        "VERDICT: FAIL (gsm8k threshold -2.0)",
        "INFO 06-02 09:14:03 [utils.py:253] non-default args: {'model': 'Qwen/Qwen3.5-35B-A3B', "
        "'enable_prefix_caching': True, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
        _metrics(71.3, running=96),
    ]
    an = _analyze(report)
    assert an.facts.startup.get("wrong_output_prose") == "FAIL (gsm8k threshold -2.0)"
    assert an.findings and an.findings[0].category == "state_index"


def test_the_error_after_the_last_pasted_command_is_the_reports_not_the_first_attempts():
    report = [
        "First I tried TP=4, which ran out of memory while loading:",
        "```",
        "(Worker_TP2 pid=18813) ERROR 03-02 07:15:41 [multiproc_executor.py:772] torch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 3.50 GiB. GPU 2 has a total capacity of 139.81 GiB of which 2.11 GiB is free.",
        "```",
        "Then the full node:",
        "```",
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 \\",
        "   --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "```",
        "(Worker_TP0 pid=22045) ERROR 03-02 07:32:24 [multiproc_executor.py:772] RuntimeError: Assertion error "
        "(/workspace/DeepGEMM/csrc/apis/../jit_kernels/impls/sm90_fp8_paged_mqa_logits.hpp:187): next_n == 1 or next_n == 2",
    ]
    an = _analyze(report)
    assert an.facts.root is not None and "next_n" in an.facts.root.message
    assert an.findings and an.findings[0].category == "spec_kernel_limit"


def test_a_command_pasted_after_the_traceback_does_not_move_the_root_error():
    report = [
        "(Worker_TP0 pid=22045) ERROR 03-02 07:32:24 [multiproc_executor.py:772] RuntimeError: Assertion error "
        "(/workspace/DeepGEMM/csrc/apis/../jit_kernels/impls/sm90_fp8_paged_mqa_logits.hpp:187): next_n == 1 or next_n == 2",
        "command:",
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
    ]
    an = _analyze(report)
    assert an.facts.root is not None and "next_n" in an.facts.root.message


_W1 = "(Worker_TP1 pid=3391) ERROR 12-04 11:06:02 [multiproc_executor.py:703] "


def _ima(command: str, *told: str) -> list[str]:
    return [command,
            _W1 + "Traceback (most recent call last):",
            _W1 + '  File ".../vllm/v1/worker/gpu_model_runner.py", line 4660, in _to_list',
            _W1 + "    self.transfer_event.synchronize()",
            _W1 + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
            _W1 + "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                  "below might be incorrect.",
            *told]


_QWEN_NEXT_MTP = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 2 --enable-prefix-caching "
                  "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'")


def test_an_async_fault_the_reporters_toggles_clear_of_the_drafts_is_a_near_miss():
    an = _analyze(_ima(_QWEN_NEXT_MTP,
                       "Update: `--disable-custom-all-reduce` -> no more crashes (ran 20h).",
                       "Also ran without MTP: crashed after 3h. So MTP is not the trigger."))
    d = an.findings[0]
    assert d.category == "other" and "--disable-custom-all-reduce" in d.basis
    assert not [f for f in an.findings if f.category != "other"]


def test_an_mla_fault_that_persists_with_the_drafts_off_has_no_class_left():
    cmd = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"
    an = _analyze(_ima(cmd, "Turning off MTP did not help; it still dies every few hours."))
    assert an.findings[0].category == "other" and "Turning off MTP did not help" in an.findings[0].basis


def test_a_hybrid_fault_that_persists_without_drafts_alone_keeps_its_configuration_reading():
    an = _analyze(_ima(_QWEN_NEXT_MTP, "Without MTP it still crashes, just later."))
    assert an.findings[0].category != "other"


def test_a_symptom_told_after_a_comma_is_no_fix():
    an = _analyze(_ima(_QWEN_NEXT_MTP, "Requests just stop coming back, no crash in the client."))
    assert "other_fix_prose" not in an.facts.startup


def test_disabling_the_drafts_still_crashes_and_a_kept_feature_is_no_toggle():
    cmd = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -dp 8 --enable-expert-parallel --enable-eplb "
           "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'")
    an = _analyze(_ima(cmd, "IMA every ~3000 steps. Disabling MTP: still crashes. Disabling EPLB (keep MTP): stable 24h."))
    assert an.facts.startup["faults_without_spec_prose"] == "Disabling MTP: still crashes"
    assert an.facts.startup["other_fix_prose"].startswith("Disabling EPLB (keep MTP)")
    assert an.findings[0].category == "other"


def test_a_title_that_says_super_slow_on_an_eager_engine_is_the_eager_near_miss():
    report = ["nemotron-h 8b + ngram spec decode super slow, ~9 tok/s",
              "vllm serve nvidia/Nemotron-H-8B-Base-8K --enforce-eager "
              "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 4}'",
              _block_line(656)]
    an = _analyze(report)
    assert an.findings[0].category == "other" and "eager" in an.findings[0].title


def test_a_super_slow_start_is_no_serving_slowdown():
    an = _analyze(["vllm serve nvidia/Nemotron-H-8B-Base-8K --enforce-eager", "super slow startup on our cluster"])
    assert "slow_prose" not in an.facts.startup


_DSA_START = [
    "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 4}'",
    "(Worker_TP0 pid=455) INFO 07-14 08:22:41 [indexer.py:306] DSA indexer decode path: use_flattening=False "
    "(next_n=5, use_fp4_indexer_cache=False)",
    "(Worker_TP0 pid=455) INFO 07-14 10:11:02 [indexer.py:306] DSA indexer decode path: use_flattening=False "
    "(next_n=2, use_fp4_indexer_cache=False)",
]


def test_wrong_output_with_the_dsa_indexer_passing_next_n_above_two_is_the_kernel_limit():
    an = _analyze(["Our long-context eval (needle + summarisation) drops from 0.81 to 0.37 with k=4; k=1 is fine."]
                  + _DSA_START)
    d = an.findings[0]
    assert d.category == "spec_kernel_limit" and d.numbers["next_n"] == 5
    assert d.message.endswith("drops from 0.81 to 0.37")


def test_the_dsa_indexer_line_alone_makes_no_finding():
    an = _analyze(_DSA_START)
    assert not [f for f in an.findings if f.category == "spec_kernel_limit" and "DSA indexer" in f.title]


def test_outputs_corrupted_and_completions_that_degrade_are_wrong_output():
    for said in ("Qwen3.6 + MTP: outputs corrupted only under concurrency",
                 "~8% of completions degrade partway through: repeated tokens, broken JSON"):
        assert _analyze([said]).facts.startup.get("wrong_output_prose"), said


def test_the_request_count_assert_on_a_batch_told_as_mixed_is_the_mixed_batch_class():
    w = "(Worker_TP0 pid=355) ERROR 10-07 03:12:44 [multiproc_executor.py:1007] "
    log = ["vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 4 --enable-prefix-caching "
           "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
           w + "Traceback (most recent call last):",
           w + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/mamba_attn.py", line 664, '
               "in update_block_table",
           w + "AssertionError: Mismatch in number of requests when updating block table. Expected 45, got 48."]
    plain = _analyze(log)
    told = _analyze(log + ["Before the crash the batch had a mix of plain decodes (no drafts yet) and spec decodes."])
    assert plain.findings[0].category == "state_index"
    assert told.findings[0].category == "mixed_batch"


def test_the_state_index_row_check_on_a_step_told_as_ragged_is_the_mixed_batch_class():
    w = "(Worker_TP2 pid=3318) ERROR 05-20 11:05:31 [multiproc_executor.py:949] "
    log = ["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",
           w + "Traceback (most recent call last):",
           w + '  File ".../vllm/model_executor/layers/mamba/ops/causal_conv1d.py", line 1157, in causal_conv1d_update',
           w + "AssertionError: ERROR: conv_state_indices should have shape (24,*) but got torch.Size([19])"]
    told = _analyze(log + ["At the crash 19 requests had ngram drafts and several without a match (0 drafts)."])
    assert told.findings[0].category == "mixed_batch"
    assert _analyze(log).findings[0].category == "state_index"


def test_a_small_kv_cache_with_state_pages_padded_and_padding_layers_is_the_page_size_class():
    report = [
        "Why is KV cache so small for Qwen3-Next on 8x H100 compared to 4x? Concurrency barely moved.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 8 --max-model-len 131072",
        _block_line(160),
        _padding_line("7.39"),
        "(EngineCore_DP0 pid=9912) WARNING 01-20 16:04:39 [kv_cache_utils.py:1048] Add 3 padding layers, may waste at "
        "most 8.33% KV cache memory",
    ]
    an = _analyze(report)
    d = an.findings[0]
    assert d.category == "kv_page_size" and "3 empty padding layers" in d.basis and "8.33%" in d.basis


_PCIE = ("(Worker_TP0 pid=702) WARNING 07-08 12:31:09 [custom_all_reduce.py:152] Custom allreduce is disabled because "
         "it's not supported on more than two PCIe-only GPUs. To silence this warning, specify "
         "disable_custom_all_reduce=True explicitly.")


def test_low_throughput_with_tp_over_pcie_is_a_near_miss():
    report = ["Low throughput Qwen3-Next-80B TP4 on 4x L40S (no NVLink)",
              "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 4", _PCIE,
              _block_line(272)]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "PCIe" in d.title and "4 GPUs" in d.basis


def test_the_pcie_warning_alone_makes_no_slowdown():
    an = _analyze(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 4", _PCIE])
    assert not [f for f in an.findings if "PCIe" in f.title]


def test_a_metrics_scrape_with_queries_and_no_hit_on_a_hybrid_is_the_prefix_cache_class():
    m = "{engine=\"0\",model_name=\"nvidia/Nemotron-H-8B-Base-8K\"}"
    report = ["Prefix cache hit rate is flat 0 on Nemotron-H with MTP though every request shares a 6k-token prompt.",
              "vllm serve nvidia/Nemotron-H-8B-Base-8K --enable-prefix-caching "
              "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
              "# TYPE vllm:prefix_cache_queries_total counter",
              f"vllm:prefix_cache_queries_total{m} 2.6143872e+07",
              "# TYPE vllm:prefix_cache_hits_total counter",
              f"vllm:prefix_cache_hits_total{m} 0.0",
              f"vllm:num_requests_running{m} 37.0"]
    an = _analyze(report)
    assert an.findings and an.findings[0].category == "prefix_cache_degraded"
    hits = [f for f in an.findings if f.category == "prefix_cache_degraded" and f.rule == "failure_class"]
    assert not hits or "26143872" in hits[0].basis.replace(",", "") or "2.61439e+07" in hits[0].basis


def test_an_ab_table_that_clears_the_drafts_makes_the_fault_a_near_miss():
    cmd = ("vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 4 "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 5, \"prompt_lookup_max\": 5}'")
    an = _analyze(_ima(cmd, "| config | result |", "|---|---|", "| as above | IMA (3/3) |",
                       "| no spec decode | IMA (2/3) |", "| `--disable-custom-all-reduce` | no crash (3/3) |"))
    assert an.facts.startup["faults_without_spec_prose"] == "no spec decode: IMA"
    assert "--disable-custom-all-reduce" in an.facts.startup["other_fix_prose"]
    assert an.findings[0].category == "other"


def test_a_fault_fine_without_a_connector_and_with_the_drafts_removed_still_there_is_a_near_miss():
    an = _analyze(_ima(_QWEN_NEXT_MTP,
                       "The decode node alone (no connector, same MTP config) is fine for hours, and P/D with "
                       "`num_speculative_tokens` removed ALSO IMAs."))
    assert an.findings[0].category == "other"


def test_bullets_where_only_an_outside_toggle_ends_the_fault_on_a_hybrid():
    an = _analyze(_ima(_QWEN_NEXT_MTP, "- no speculative config at all: **still crashes** (took 45 min)",
                       "- without `--enable-expert-parallel`: no crash in 4h"))
    assert an.facts.startup["other_fix_prose"].startswith("without `--enable-expert-parallel`")
    assert an.findings[0].category == "other"


def test_a_toggle_told_the_other_way_round_is_not_read_as_persisting():
    an = _analyze(_ima(_QWEN_NEXT_MTP, "without MTP, no crash, with MTP - crashes within minutes"))
    assert "faults_without_spec_prose" not in an.facts.startup
    assert an.findings[0].category != "other"


_QWEN_NEXT_APC_MTP = [
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
    "WARNING 02-11 02:30:17 [config.py:382] Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default "
    "when prefix caching is enabled",
]


def test_chat_shorthand_and_a_quoted_repetition_are_wrong_output():
    for said, expected in (("[2:41 AM] dev: qwen3next + mtp2 + apc = garbage after 2nd turn lol", "garbage"),
                           ('[2:41 AM] dev: 2nd turn starts spitting "the the the" and repeats half of turn 1',
                            '"the the the')):
        an = _analyze([said] + _QWEN_NEXT_APC_MTP)
        assert an.facts.startup.get("wrong_output_prose") == expected, said
        assert an.findings[0].category == "state_index", said


def test_wrong_output_told_in_other_languages():
    for said in ("第二轮对话开始输出乱码", "二回目の応答から出力が文字化けする", "a resposta começa normal e depois vira lixo",
                 "со второго сообщения ответ превращается в мусор", "la segunda respuesta sale corrompida"):
        assert _analyze([said] + _QWEN_NEXT_APC_MTP).facts.startup.get("wrong_output_prose"), said


def test_a_word_said_twice_is_no_repetition():
    assert "wrong_output_prose" not in _analyze(['we set "the the" by mistake in the prompt']).facts.startup


def test_a_sparse_indexer_model_at_k3_with_wrong_output_is_the_kernel_limit_inferred():
    report = ["DeepSeek-V3.2 with MTP: k=1 works great; with num_speculative_tokens=3 long answers get noticeably worse.",
              "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
              "(Worker_TP0 pid=4528) INFO 04-02 09:11:52 [cuda.py:341] Using FLASHMLA_SPARSE attention backend out of "
              "potential backends: ['FLASHMLA_SPARSE']"]
    d = _analyze(report).findings[0]
    assert d.category == "spec_kernel_limit" and d.numbers["next_n"] == 4 and "no 'DSA indexer decode path'" in d.basis
    one = _analyze([r.replace("num_speculative_tokens\":3", "num_speculative_tokens\":1") for r in report])
    assert not [f for f in one.findings if "DSA indexer" in f.title]


def test_forgetting_earlier_turns_and_responses_that_become_junk_are_wrong_output():
    for said in ('from turn 2 the model "forgets" the earlier turns', "it answers an older question on cache hits",
                 "about 1 in 10 responses becomes junk mid-stream (unicode soup)"):
        assert _analyze([said]).facts.startup.get("wrong_output_prose"), said


def test_a_tiny_kv_cache_under_a_low_memory_share_is_a_near_miss():
    report = ["Granite-4.0-H-Small: KV cache capacity is tiny, is the hybrid page padding eating it?",
              "(APIServer pid=1) INFO 03-30 17:45:02 [utils.py:276] non-default args: {'model': "
              "'ibm-granite/granite-4.0-h-small', 'max_model_len': 32768, 'gpu_memory_utilization': 0.45}",
              _block_line(400),
              "(EngineCore_DP0 pid=97) INFO 03-30 17:46:55 [gpu_worker.py:372] Available KV cache memory: 0.71 GiB"]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "0.45" in d.title and "0.71 GiB" in d.basis
    high = _analyze([r.replace("0.45", "0.92") for r in report])
    assert not [f for f in high.findings if "gpu-memory-utilization" in f.title]


_DSV32_MTP = ("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --enable-expert-parallel "
              "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'")


def test_a_header_aware_ab_table_clears_the_drafts_of_a_fault():
    table = ["| # | MTP | prefix caching | VLLM_USE_DEEP_GEMM | result |",
             "|---|-----|----------------|--------------------|--------|",
             "| 1 | k=1 | on  | 1 | IMA ~20 min |",
             "| 2 | off | on  | 1 | IMA ~35 min |",
             "| 3 | k=1 | on  | 0 | clean 14h |"]
    an = _analyze(_ima(_DSV32_MTP, *table))
    assert an.facts.startup["faults_without_spec_prose"] == "MTP off: IMA ~35 min"
    assert an.facts.startup["other_fix_prose"] == "VLLM_USE_DEEP_GEMM 0: clean 14h"
    assert an.findings[0].category == "other"


def test_an_ab_table_where_only_the_drafts_matter_keeps_the_family_reading():
    table = ["| MTP | prefix caching | result |", "|---|---|---|", "| k=2 | on | IMA |", "| off | on | clean 10h |"]
    an = _analyze(_ima(_QWEN_NEXT_MTP, *table))
    assert "faults_without_spec_prose" not in an.facts.startup
    assert an.findings[0].category != "other"


def test_spec_off_same_fault_and_a_sampler_toggle_with_the_drafts_kept():
    an = _analyze(_ima(_QWEN_NEXT_MTP, "<prab> tried spec off this morning, same IMA in top_k_mask_logits",
                       "<prab> VLLM_USE_FLASHINFER_SAMPLER=0 + mtp on: 18h clean"))
    assert "VLLM_USE_FLASHINFER_SAMPLER=0" in an.facts.startup["other_fix_prose"]
    assert an.findings[0].category == "other"


def _capture_sizes_error(sizes: str) -> list[str]:
    p = "(APIServer pid=5521) "
    return [f"vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8 --speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":2}}' "
            f"--compilation-config '{{\"cudagraph_capture_sizes\":{sizes}}}'",
            p + "Traceback (most recent call last):",
            p + '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 2617, in create_engine_config',
            p + "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
            p + "  Assertion failed, cudagraph_capture_sizes should contain at least one element when using cuda graph. "
                "[type=assertion_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]"]


def test_an_empty_capture_size_list_given_is_an_invalid_value_not_the_capture_class():
    assert _analyze(_capture_sizes_error("[]")).findings[0].category == "other"
    assert _analyze(_capture_sizes_error("[1, 2]")).findings[0].category == "cudagraph_shape"


_NEXT_MTP3 = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-num-seqs 128 "
              "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'")
_STATS_128 = ("(APIServer pid=200) INFO 10-30 10:20:41 [loggers.py:215] Engine 000: Avg prompt throughput: 2211.9 tokens/s, "
              "Avg generation throughput: 4108.3 tokens/s, Running: 96 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.8%, "
              "Prefix cache hit rate: 0.0%")


def test_drafts_that_make_throughput_worse_at_a_large_batch_are_a_near_miss():
    said = "MTP makes throughput WORSE at high concurrency: at 128 users output tok/s drops from ~5900 to ~4100."
    d = _analyze([said, _NEXT_MTP3, _STATS_128]).findings[0]
    assert d.category == "other" and "large batch" in d.title and "1 + k = 4" in d.basis


def test_the_same_slowdown_with_a_token_budget_below_the_drafts_stays_with_the_family():
    cmd = _NEXT_MTP3 + " --max-num-batched-tokens 256"
    an = _analyze(["MTP makes throughput WORSE at high concurrency.", cmd, _STATS_128])
    assert not [f for f in an.findings if "large batch" in f.title]


def test_few_requests_at_once_when_the_cache_holds_two_full_length_requests_is_a_near_miss():
    report = ["We only get 2-3 requests running at once, the rest wait. Is the mamba cache limiting us?",
              "vllm serve ai21labs/AI21-Jamba-Mini-1.7 -tp 2 --max-model-len 262144 --max-num-seqs 64",
              "(EngineCore_DP0 pid=96) INFO 12-01 15:32:02 [kv_cache_utils.py:1234] Maximum concurrency for 262,144 "
              "tokens per request: 2.33x"]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "262,144" in d.title


def test_kv_capacity_down_after_an_upgrade_with_state_pages_padded_is_the_page_size_class():
    report = ["granite-4.0-h-small: after bump 0.14.0 -> 0.17.0 kv capacity down ~10%. same flags. no errors.",
              "vllm serve ibm-granite/granite-4.0-h-small --max-model-len 32768 --enable-prefix-caching",
              _padding_line("0.48"),
              _padding_line("12.50")]
    assert _analyze(report).findings[0].category == "kv_page_size"


def test_throughput_below_no_spec_on_an_mla_model_is_the_kernel_limit_slowdown():
    report = ["from k=2 on the throughput collapses to below no-spec, though acceptance keeps going up",
              "llm = LLM(model=\"deepseek-ai/DeepSeek-V3.2-Exp\", tensor_parallel_size=8, "
              "speculative_config={\"method\": \"mtp\", \"num_speculative_tokens\": 3})"]
    assert _analyze(report).findings[0].category == "spec_kernel_limit"


def test_a_share_of_0_7_with_the_reporters_rerun_finding_four_times_the_kv_is_a_near_miss():
    report = ["Jamba + ngram: we get way less KV cache than a comparable dense model",
              "(APIServer pid=1) INFO 10-14 15:20:11 [utils.py:233] non-default args: {'model': "
              "'ai21labs/AI21-Jamba-Mini-1.7', 'gpu_memory_utilization': 0.7}",
              "(EngineCore_DP0 pid=2) INFO 10-14 15:23:01 [gpu_worker.py:298] Available KV cache memory: 5.31 GiB",
              "With 0.92 I get \"Available KV cache memory: 22.97 GiB\" and 33x concurrency."]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "0.7" in d.title


def test_huge_ttft_under_a_small_step_budget_is_a_near_miss():
    report = ["Zamba2-7B: long prompts have huge TTFT, even with one request in flight",
              "vllm serve Zyphra/Zamba2-7B-instruct --max-model-len 32768 --max-num-batched-tokens 512",
              _block_line(160)]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "512-token" in d.title
    wide = _analyze([r.replace("--max-num-batched-tokens 512", "--max-num-batched-tokens 16384") for r in report])
    assert not [f for f in wide.findings if "step budget" in f.title]


def test_extremely_slowly_with_cpu_offload_is_the_offload_near_miss():
    report = ["It answers correctly, just extremely slowly: 2.4 tok/s for a single request.",
              "python -m vllm.entrypoints.openai.api_server --model ai21labs/AI21-Jamba-Mini-1.7 --cpu-offload-gb 40 "
              "--enable-prefix-caching"]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "offload" in d.title


def test_a_quiet_report_whose_symptom_stays_without_drafts_and_without_prefix_caching_is_a_near_miss():
    report = ["Kimi-Linear answers are gibberish, only through our gateway.",
              "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 2 --enable-prefix-caching "
              "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4}'",
              "- turning off ngram: same behaviour", "- --no-enable-prefix-caching: same behaviour"]
    an = _analyze(report)
    assert an.facts.startup["persists_without_pc_prose"] == "--no-enable-prefix-caching: same behaviour"
    assert an.findings[0].category == "other" and "A/B" in an.findings[0].title


def test_a_hang_that_stays_without_drafts_and_ends_without_p2p_is_a_near_miss():
    report = ["DeepSeek-V3.2 + MTP just hangs after the first few requests. No crash, no traceback.",
              "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
              "- without --speculative-config: also hangs", "- NCCL_P2P_DISABLE=1: no hang (but slower)"]
    d = _analyze(report).findings[0]
    assert d.category == "other" and "NCCL_P2P_DISABLE=1" in d.basis


def test_drafts_off_alone_on_a_hybrid_with_prefix_caching_keeps_the_family_reading():
    report = ["Qwen3-Next answers are garbage on the second turn.",
              "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching "
              "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
              "- turning off MTP: same behaviour", "- --no-enable-prefix-caching: answers are fine"]
    assert _analyze(report).findings[0].category != "other"
