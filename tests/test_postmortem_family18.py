"""Post-mortem, round eighteen: quiet reports on hybrids whose cause is the platform or the router -- another process
on the engine's GPU, replicas that share no prefix cache. The reports are written here; vLLM's lines are in its own
formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_HYBRID_START = [
    "vllm serve ibm-granite/granite-4.0-h-small -tp 2 --max-model-len 65536 --max-num-seqs 64",
    "(APIServer pid=7) INFO 03-19 08:01:44 [utils.py:261] non-default args: {'model': 'ibm-granite/granite-4.0-h-small', "
    "'max_model_len': 65536, 'tensor_parallel_size': 2, 'max_num_seqs': 64}",
    "(APIServer pid=7) INFO 03-19 08:01:51 [interface.py:606] Setting attention block size to 2128 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(APIServer pid=7) INFO 03-19 08:01:51 [interface.py:630] Padding mamba page size by 0.05% to ensure that mamba "
    "page size and attention page size are exactly equal.",
    "(EngineCore_DP0 pid=9) INFO 03-19 08:04:00 [kv_cache_utils.py:1311] GPU KV cache size: 125,552 tokens",
    "(EngineCore_DP0 pid=9) INFO 03-19 08:04:00 [kv_cache_utils.py:1316] Maximum concurrency for 65,536 tokens per "
    "request: 1.92x",
]


def _stats(rate: str) -> str:
    return ("(APIServer pid=7) INFO 05-02 16:20:31 [loggers.py:259] Engine 000: Avg prompt throughput: 9921.4 tokens/s, "
            "Avg generation throughput: 644.0 tokens/s, Running: 22 reqs, Waiting: 0 reqs, GPU KV cache usage: 31.5%, "
            f"Prefix cache hit rate: {rate}%")


@pytest.mark.parametrize("said", [
    "GPU0 on that box is shared with our team's embedding service.",
    "Turns out another inference process was running on the same GPUs.",
    "nvidia-smi shows a python pid holding 16 GiB on GPU0.",
    "We are a co-tenant on these cards with the batch jobs.",
])
def test_another_process_on_the_gpu_explains_lost_capacity(said):
    lines = ["Granite-4.0-H only gets ~2x concurrency at 64k, hybrid allocator wasting memory?", *_HYBRID_START, said]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Another process" in lead.title


def test_the_capacity_complaint_alone_keeps_a_hybrid_reading():
    """Without the other process the same report is not read as the platform."""
    lines = ["Granite-4.0-H only gets ~2x concurrency at 64k, hybrid allocator wasting memory?", *_HYBRID_START]
    assert facts_from_text("\n".join(lines)).startup.get("capacity_prose")
    assert "Another process" not in _analyze(lines).findings[0].title


@pytest.mark.parametrize("said", [
    "The cluster is dedicated, no other process is on the node.",
    "Our service shares its config with the staging app.",
])
def test_words_that_are_no_other_process_on_the_gpu(said):
    assert "cotenant_prose" not in facts_from_text(said).startup


def test_a_report_that_tells_how_the_engine_serves_predicts_no_refusal():
    """0.20+ refuses to start when max_num_seqs exceeds the Mamba blocks; a report of how the engine serves (too few
    requests at once) says it started, so the refusal is not predicted from a pool read off its token count."""
    start = _HYBRID_START[:-1]  # (the concurrency line would read the report as long requests first)
    told = _analyze(["vLLM 0.26.0", "Granite-4.0-H only gets ~2x concurrency at 64k, where did the memory go?", *start])
    assert [(f.severity, f.category) for f in told.findings][0] == ("warning", "mamba_block_budget")
    cut = _analyze(["vLLM 0.26.0", *start])  # a start cut before its end: the refusal is what comes
    assert [(f.severity, f.category) for f in cut.findings][0] == ("error", "mamba_block_budget")


@pytest.mark.parametrize("said", [
    "Your Service is plain kube-proxy (round robin over 4 pods).",
    "Turn N+1 of a conversation lands on a different pod than turn N.",
    "Fixed by adding session affinity on the conversation id.",
    "We put a router with consistent hashing in front of the replicas.",
])
def test_replicas_without_affinity_explain_a_low_hit_rate(said):
    lines = ["Granite-4.0-H: prefix cache hit rate only 5-9% on multi-turn chat, expected 60%+.", *_HYBRID_START,
             _stats("6.8"), _stats("7.1"), said]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "replicas" in lead.title


@pytest.mark.parametrize("said", [
    "Same traffic, same router with session affinity, and the hit rate is 0% since the upgrade.",
    "llm-d with precise prefix-cache-aware routing enabled.",
])
def test_a_router_that_keeps_affinity_is_not_the_cause(said):
    assert "split_routing_prose" not in facts_from_text(said).startup


_DIED = [
    "granite-4.0-h-small + ngram restarts in a loop on our k8s cluster (vllm 0.29.0).",
    "(APIServer pid=1) INFO 06-02 11:05:41 [utils.py:301] non-default args: {'model': 'ibm-granite/granite-4.0-h-small', "
    "'max_model_len': 131072, 'max_num_seqs': 512, 'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 4}}",
    "(EngineCore pid=61) INFO 06-02 11:05:52 [interface.py:919] Setting attention block size to 400 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(EngineCore pid=61) INFO 06-02 11:06:53 [kv_cache_utils.py:1288] GPU KV cache size: 94,400 tokens",
    "(APIServer pid=1) ERROR 06-02 11:07:02 [core_client.py:610] Engine core proc EngineCore died unexpectedly, "
    "shutting down client.",
]


@pytest.mark.parametrize("kill", ["    Last State:     Terminated", "      Reason:       OOMKilled",
                                  "[812.4] Memory cgroup out of memory: Killed process 61 (python3)"])
def test_a_silent_death_the_host_killed_for_memory_is_a_near_miss(kill):
    lines = [*_DIED, "$ kubectl describe pod vllm-granite-7c9f", kill]
    lead = _analyze(lines).findings[0]
    if "OOM" in kill or "Killed process" in kill:
        assert lead.category == "other" and "host memory" in lead.title
    else:  # no kill in sight: the death names no class, and the Mamba refusal is not what ended the log
        assert lead.category != "mamba_block_budget"


@pytest.mark.parametrize("template", ["Current date and time: {{CURRENT_DATETIME}}", "Today is {{ current_date }}."])
def test_a_date_in_the_prompt_template_explains_no_prefix_hits(template):
    lines = ["Prefix cache hit rate on Qwen3-Next with MTP is basically zero behind Open WebUI.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
             _HYBRID_START[2], _stats("0.3"), f"Our system prompt has \"{template}\" as its FIRST line."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "per-request value" in lead.title


def test_a_request_that_keeps_only_the_prompts_tail_explains_wrong_answers():
    lines = ["Qwen3.6-27B with ngram ignores our system instructions on long RAG prompts, answers in Chinese.",
             "vllm serve Qwen/Qwen3.6-27B -tp 2 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'",
             _HYBRID_START[2],
             "(APIServer pid=8) INFO 11-20 19:30:14 [logger.py:49] Received request chatcmpl-b1d2: params: "
             "SamplingParams(n=1, temperature=0.2, max_tokens=1024, truncate_prompt_tokens=4096), prompt_token_ids: [1]"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and lead.numbers["truncate_prompt_tokens"] == 4096
    assert "truncate_prompt_tokens" not in _analyze(lines[:-1]).findings[0].title  # without the request, no such reading


@pytest.mark.parametrize("said", ["The model ignores our system instructions.", "It answers in Chinese half the time.",
                                  "It forgets the JSON format after a few turns."])
def test_instructions_ignored_is_wrong_output(said):
    assert facts_from_text(said).startup.get("wrong_output_prose")


def test_a_memory_share_does_not_explain_waiting_beside_an_empty_cache():
    """A small --gpu-memory-utilization holds back no request while the stats lines show the KV cache nearly empty:
    the drafts' tokens within the batch budget cap the batch (the token-budget class)."""
    lines = ["Nemotron-H with ngram: only ~16 requests ever run, the rest sit in Waiting even though KV cache usage is "
             "tiny. max_num_seqs is 64.",
             "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --max-num-seqs 64 --max-num-batched-tokens 128 "
             "--gpu-memory-utilization 0.55 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":7,"
             "\"prompt_lookup_max\":4}'",
             "(EngineCore pid=151) INFO 07-02 11:21:40 [gpu_worker.py:452] Available KV cache memory: 22.18 GiB",
             "(APIServer pid=88) INFO 07-02 11:31:40 [loggers.py:271] Engine 000: Avg prompt throughput: 310.4 tokens/s, "
             "Avg generation throughput: 221.7 tokens/s, Running: 16 reqs, Waiting: 48 reqs, GPU KV cache usage: 1.9%, "
             "Prefix cache hit rate: 0.0%"]
    assert _analyze(lines).findings[0].category == "token_budget"


@pytest.mark.parametrize("said", ["TPOT ~85 ms per token on H100 with ngram, colleague's deployment gets ~14 ms.",
                                  "Node B gives ~55% of the throughput of node A with the identical image."])
def test_slowness_told_against_another_deployment(said):
    assert facts_from_text(said).startup.get("slow_prose")


def test_the_reporters_trial_with_the_models_own_tokenizer_names_the_tokenizer():
    lines = ["Granite-4.0-H-Tiny output turns into garbage after the first few sentences. vLLM 0.14.0.",
             "vllm serve /models/granite-4.0-h-tiny --tokenizer /models/tokenizers/granite --enable-prefix-caching",
             _HYBRID_START[2],
             "Dropping --tokenizer (use the one shipped with the checkpoint) -> perfect output."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "tokenizer" in lead.title
    # (a local tokenizer path without the trial says nothing of its vocabulary)
    assert "tokenizer" not in _analyze(lines[:-1]).findings[0].title


def test_an_unexplained_symptom_leaves_the_setups_notes_out():
    """A symptom nothing explains leads as 'not modelled'; the hybrid's raised block size, an informational note true
    of every such start, is left out (and said to be) rather than listed beside it as if it were the cause."""
    lines = ["MiniMax-M1 community AWQ quant gives repetitive gibberish after ~2k tokens. vLLM 0.26.0.",
             "vllm serve someorg/MiniMax-M1-80k-AWQ -tp 4 --quantization awq_marlin --max-model-len 65536",
             "(EngineCore pid=190) INFO 08-11 13:21:30 [interface.py:612] Setting attention block size to 256 tokens to "
             "ensure that attention page size is >= mamba page size."]
    findings = _analyze(lines).findings
    assert [f.rule for f in findings] == ["unexplained_symptom"]
    assert any("Attention block size raised" in m for m in findings[0].missing_evidence)
    quiet = _analyze(lines[1:])  # no symptom: the note is all there is to say
    assert [f.category for f in quiet.findings] == ["block_size_alignment"]


def test_another_teams_job_on_the_gpu_explains_a_slowdown():
    lines = ["Nemotron-H decode throughput dropped from ~2400 to ~1100 tok/s this week, no config change.",
             *_HYBRID_START[1:4],
             "pid 48812 is a training job from another team started via MPS on our GPU on Monday."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Another process" in lead.title


def test_an_api_server_pegged_at_one_core_explains_a_plateau():
    lines = ["Qwen3.6-27B + eagle3: throughput plateaus at ~3.5k tok/s no matter how many clients.",
             *_HYBRID_START[1:4],
             "top inside the pod: the APIServer process sits at 100% of one core (python), EngineCore ~90%."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "host CPU" in lead.title


def test_a_death_that_names_no_class_leaves_the_setups_notes_out():
    lines = [*_HYBRID_START[1:4], "(Worker_TP2 pid=161) Bus error (core dumped)",
             "(EngineCore_DP0 pid=92) ERROR 11-03 10:17:01 [multiproc_executor.py:154] Worker proc VllmWorker-2 died "
             "unexpectedly, shutting down executor."]
    findings = _analyze(lines).findings
    assert [f.title for f in findings] == ["Process died without an error message"]
    assert any("note(s) on the set-up were left out" in m for m in findings[0].missing_evidence)


def test_a_synchronous_fault_in_the_mamba_state_copy_is_the_state_index_class():
    """CUDA_LAUNCH_BLOCKING=1 puts the illegal access in the worker's align-mode copy of the Mamba states (mamba_utils):
    the state indices / block ids it copies by, not the model's own layers (Kimi-Linear's KDA layers, which before
    0.27 have no spec-decode path, would otherwise be read as the mixed-batch class)."""
    w = "(Worker_TP1 pid=9920) ERROR 10-02 09:13:44 [multiproc_executor.py:870] "
    lines = ["Random crash with Kimi-Linear + MTP + prefix caching, vLLM 0.24.0. CUDA_LAUNCH_BLOCKING=1 gives:",
             w + "Traceback (most recent call last):",
             w + '  File ".../vllm/v1/worker/gpu_model_runner.py", line 1522, in _update_states_after_model_execute',
             w + "    mamba_utils.postprocess_mamba_align_gpu(",
             w + '  File ".../vllm/v1/worker/mamba_utils.py", line 214, in batch_memcpy',
             w + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
             "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 4 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"]
    assert _analyze(lines).findings[0].category == "state_index"
    # the fault launched in the KDA layer's own forward instead: the layer without a spec-decode path
    in_layer = [lines[0], lines[1], w + '  File ".../vllm/model_executor/layers/kda.py", line 214, in forward', *lines[5:]]
    assert _analyze(in_layer).findings[0].category == "mixed_batch"


def test_an_ab_table_that_counts_the_faulty_runs():
    """A table whose outcome column is named for the fault counts its runs: '21/40' with the drafts and prefix caching
    off still fails, '0/40' with another checkpoint is clean -- the checkpoint, not the families."""
    lines = ["Qwen3-Next AWQ + MTP + prefix caching: output turns into \"!!!!!!!!\" after ~200 tokens.",
             "vllm serve someuser/Qwen3-Next-80B-A3B-Instruct-AWQ-4bit -tp 2 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
             _HYBRID_START[2],
             "| checkpoint | MTP | prefix cache | garbage |",
             "| someuser/...-AWQ-4bit | on | on | 23/40 |",
             "| someuser/...-AWQ-4bit | off | off | 21/40 |",
             "| Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 | on | on | 0/40 |"]
    f = facts_from_text("\n".join(lines))
    assert f.startup["faults_without_spec_prose"] == "MTP off: garbage 21/40"
    assert f.startup["other_fix_prose"].endswith("garbage 0/40")
    assert _analyze(lines).findings[0].category == "other"
    every_run_clean = [x.replace("21/40", "0/40") for x in lines]  # (the drafts off fixes it: no clearing)
    assert "faults_without_spec_prose" not in facts_from_text("\n".join(every_run_clean)).startup


@pytest.mark.parametrize("said, title", [
    (["Falcon-H1: long-document requests stop streaming halfway, no error to the client.",
      "Our ingress (AWS ALB in front of nginx) has idle_timeout 60 s."], "proxy"),
    (["Nemotron-H + ngram produces garbled CJK in streamed answers.",
      "curl -N straight to :8000 with the same request -> text is perfect, 20/20 runs."], "client's path"),
    (["MiniMax-M1: answers are often nonsense, the model replies as if it were the user.",
      '{"messages":[{"role":"user","content":"<beginning_of_sentence>system ai_setting=assistant\\nYou are a helper."}]}'],
     "Prompt formatted twice"),
    (["Jamba only gets ~6x concurrency at 256k context.",
      "The node is on a MIG profile: nvidia-smi -L shows MIG 3g.40gb Device 0."], "MIG slice"),
])
def test_quiet_causes_on_the_client_and_the_platform(said, title):
    lines = [said[0], *_HYBRID_START[1:4], said[1]]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and title in lead.title
    assert title not in _analyze([said[0], *_HYBRID_START[1:4]]).findings[0].title


def test_a_hybrid_that_hits_once_the_drafts_are_off_is_the_prefix_cache_class():
    """One metrics line at 0 % is enough where the report's own run without the drafts hits: prefix caching is on,
    and the drafts are what keeps the hybrid's states from the block boundaries a hit needs."""
    lines = ["granite-4.0-h-small + eagle, vllm 0.24.0, L40S x2", _stats("0.0"),
             "every request shares a 3k token system prompt. same server without --speculative-config shows ~70% hit "
             "rate."]
    f = facts_from_text("\n".join(lines))
    assert f.startup["hits_without_spec_prose"].startswith("without --speculative-config")
    assert _analyze(lines).findings[0].category == "prefix_cache_degraded"
    assert not _analyze(lines[:2]).findings  # (one line at 0 % alone says nothing)


@pytest.mark.parametrize("params, name", [("frequency_penalty=-1.6, repetition_penalty=1.0", "frequency_penalty"),
                                          ("presence_penalty=0.0, repetition_penalty=0.8", "repetition_penalty")])
def test_sampling_that_rewards_repeats_explains_loops(params, name):
    lines = ["Nemotron-H with ngram: answers loop badly (\"the the the\").", *_HYBRID_START[1:4],
             "(APIServer pid=3204) INFO 02-11 16:52:13 [logger.py:49] Received request chatcmpl-8f1c: params: "
             f"SamplingParams(n=1, {params}, temperature=0.8, max_tokens=4096)"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and name in lead.title


@pytest.mark.parametrize("said", ["curl straight to :8000 with stream=true, same prompt, 200 times: never duplicated.",
                                  "Curl is fine.", "`curl -N` directly against vLLM gives clean text."])
def test_the_same_request_straight_to_the_server(said):
    assert facts_from_text(said).startup.get("direct_fine_prose")


def test_the_drafts_off_and_still_the_same_answer():
    f = facts_from_text("Without response_format the model writes 12.5. With MTP off, still {\"answer\": 12}.")
    assert f.startup["faults_without_spec_prose"] == "With MTP off, still"


def test_a_reporters_elision_after_a_config_value_is_no_part_of_it():
    from vllm_diag.postmortem.pylit import parse_kwargs

    assert parse_kwargs("model='x', enable_prefix_caching=True ...") == {"model": "x", "enable_prefix_caching": True}
    assert parse_kwargs("a=fp8 ..., b=2") == {"a": "fp8", "b": 2}
    assert parse_kwargs("a=foo...bar") == {"a": "foo...bar"}


def test_the_flags_of_a_clean_ab_row_are_a_trial():
    """'| off (--no-enable-prefix-caching) | 3 | fine |' is a run that went well: prefix caching stays on in the failing
    set-up (vLLM's align-mode line says so), and the garbage on cache hits is the state-index class."""
    lines = ["Qwen3.5-35B-A3B + MTP: second identical request returns garbage (only when prefix caching is on)",
             "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "(EngineCore pid=212) INFO 07-21 08:01:31 [config.py:625] Mamba cache mode is set to 'align' for "
             "Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
             _stats("49.7"),
             "| prefix caching | MTP | result |", "|---|---|---|", "| on | 3 | garbage on cache hit |",
             "| off (`--no-enable-prefix-caching`) | 3 | fine |"]
    f = facts_from_text("\n".join(lines))
    assert f.args.get("enable_prefix_caching") is not False
    assert _analyze(lines).findings[0].category == "state_index"
    failing = lines[:-1] + ["| off (`--no-enable-prefix-caching`) | 3 | garbage too |"]
    assert facts_from_text("\n".join(failing)).args.get("enable_prefix_caching") is False


@pytest.mark.parametrize("fact, said", [
    ("capacity_prose", 'Under 40 concurrent users half of them sit in "Waiting".'),
    ("slow_prose", "TTFT goes to 30-60 s under load."),
    ("cpu_starved_prose", 'Pod limit was cpu: "4" from an old template.'),
    ("cpu_starved_prose", "py-spy shows the workers throttled (nr_throttled climbing)."),
    ("cpu_starved_prose", "the pod's cpu.max is 400000 100000 (4 CPUs)"),
    ("wrong_output_prose", "Qwen3.5 + MTP returns broken Chinese characters in streaming mode."),
    ("prefix_caching_needed", "Same prompts with `--no-enable-prefix-caching`: outputs correct, acceptance ~38%."),
])
def test_the_reporters_words_round_eighteen(fact, said):
    assert facts_from_text(said).startup.get(fact)


@pytest.mark.parametrize("said", ["same server without --speculative-config shows ~70% hit rate",
                                  "before (no spec) the hit rate was ~71%", "with MTP disabled the hit rate is 65%"])
def test_a_prefix_cache_that_hits_once_the_drafts_are_off(said):
    assert facts_from_text(said).startup.get("hits_without_spec_prose")


def test_a_hit_rate_without_the_drafts_at_zero_is_no_such_run():
    assert not facts_from_text("without MTP the hit rate is 0% as well").startup.get("hits_without_spec_prose")


def test_a_bfloat16_model_cast_to_float16_explains_wrong_answers_before_an_mla_reading():
    lines = ["DeepSeek-V3 with MTP 1: math answers are wrong or degrade into \"!!!!!!\" on long outputs.",
             "(APIServer pid=1) INFO 10-09 10:02:33 [utils.py:233] non-default args: {'model': "
             "'deepseek-ai/DeepSeek-V3-0324', 'dtype': 'float16', 'tensor_parallel_size': 8, 'speculative_config': "
             "{'method': 'deepseek_mtp', 'num_speculative_tokens': 1}}",
             "(APIServer pid=1) WARNING 10-09 10:02:40 [model.py:1733] Casting torch.bfloat16 to torch.float16.",
             "(Worker_PP0_TP0 pid=402) INFO 10-09 10:06:11 [cuda.py:366] Using Triton MLA backend on V1 engine."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "float16" in lead.title
    assert _analyze([x for x in lines if "Casting" not in x]).findings[0].category != "other"


def test_stop_strings_of_the_request_explain_cut_answers():
    lines = ["Granite-4.0-H returns truncated answers, usually cut right before a code block. finish_reason is stop.",
             *_HYBRID_START[1:4],
             "(APIServer pid=88) INFO 09-30 11:15:02 [logger.py:49] Received request chatcmpl-7f1c: params: "
             "SamplingParams(n=1, temperature=0.2, stop=['\\n\\n', 'Human:', '```'], stop_token_ids=[], max_tokens=2048)"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "stop strings" in lead.title
    no_stop = lines[:-1] + [lines[-1].replace("stop=['\\n\\n', 'Human:', '```'], ", "")]
    assert "stop strings" not in _analyze(no_stop).findings[0].title


@pytest.mark.parametrize("said", ["Note the prompt_token_ids start with [1, 1, ...].",
                                  "the tokenizer adds BOS again on /v1/completions"])
def test_a_doubled_bos_is_a_prompt_formatted_twice(said):
    assert facts_from_text(said).startup.get("double_template_prose")


def test_a_repeated_first_token_that_is_no_bos_pair():
    assert not facts_from_text("prompt_token_ids: [1, 2, 3]").startup.get("double_template_prose")


def test_the_drafts_and_prefix_caching_off_in_one_trial():
    f = facts_from_text("- no MTP, no prefix caching, same AWQ checkpoint -> still loops (7/20 prompts)")
    assert f.startup.get("faults_without_spec_prose") and f.startup.get("persists_without_pc_prose")
    # (a toggle whose outcome is the fault gone, turned round after it, is no such trial)
    assert not facts_from_text("without MTP, no crash - with MTP: crashes").startup.get("faults_without_spec_prose")


def test_a_comma_ends_the_clause_that_names_another_release():
    f = facts_from_text("Kimi-Linear AWQ gives worse answers than the BF16 model, vLLM 0.32.0, RTX 6000 Ada x2")
    assert f.vllm_version == "0.32.0"
    assert facts_from_text("slower than vLLM 0.11.0 was").vllm_version is None


def test_wrong_answers_without_the_drafts_and_without_cached_states_name_no_drafts_class():
    lines = ["Kimi-Linear-48B-A3B AWQ (community quant) gives noticeably worse answers than the BF16 model, vLLM "
             "0.32.0, tp=2, ngram spec decode k=3.", "Eval: AWQ-4bit here = 58.9. Same with spec decode off (58.7).",
             "(APIServer pid=3) INFO 11-03 18:02:17 [utils.py:318] non-default args: {'model': "
             "'someorg/Kimi-Linear-48B-A3B-Instruct-AWQ', 'tensor_parallel_size': 2, 'speculative_config': "
             "{'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 3}}"]
    assert _analyze(lines).findings[0].rule == "unexplained_symptom"


@pytest.mark.parametrize("fact, said", [
    ("own_tokenizer_fixes", "Dropping --tokenizer fixes the text and ngram acceptance goes to ~2.1."),
    ("faults_without_spec_prose", "Without --speculative-config the output is still garbled (just slower)."),
    ("wrong_output_prose", "streamed answers come out with duplicated / missing words"),
    ("wrong_output_prose", "Japanese prompts from our Java gateway get nonsense back"),
    ("wrong_output_prose", "Nemotron-H + ngram spec decode is not deterministic"),
    ("cotenant_prose", "nvidia-smi on the node shows a second process (python, 9.8 GiB, 35-60% SM) on GPUs 0-7"),
    ("cotenant_prose", "Granite-4.0-H-Small on an H100 shared with an embedding server."),
    ("capacity_prose", '"Maximum concurrency" is tiny and requests queue'),
    ("slow_prose", "Jamba-1.5-Mini TPOT is ~70ms on an A100 80GB with vllm 0.14.0, expected ~15ms."),
    ("slow_prose", "throughput is a third of the model card"),
    ("slow_prose", "Latency spikes, lots of preemptions."),
    ("truncated_prose", "`content` comes back empty / cut off for a lot of requests"),
    ("direct_fine_prose", "Same request from Python requests -> 'Die Änderungen' in the log and a good answer."),
    ("replicas_differ_prose", "Each replica alone is perfectly repeatable."),
    ("faults_without_spec_prose", "Tried: no MTP -> same gibberish on long prompts."),
])
def test_the_reporters_words_round_eighteen_late(fact, said):
    assert facts_from_text(said).startup.get(fact)


def test_replicas_that_answer_differently_are_the_deployment():
    lines = ["DeepSeek-V3-0324, vLLM 0.20.2, 2 replicas (TP8, MTP 1). temperature=0 yet the same prompt gives two "
             "different answers, roughly alternating. Is MLA + fp8 kv non-deterministic with MTP?",
             "(Worker_TP0 pid=745) INFO 05-02 14:21:02 [cuda.py:387] Using FLASHMLA attention backend.",
             "Each replica alone is perfectly repeatable. dsv3-b pulled the repo HEAD; dsv3-a runs an older snapshot."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Replicas" in lead.title
    assert "Replicas" not in _analyze(lines[:2]).findings[0].title


def test_a_bare_assert_joined_to_the_raw_copys_process_header_is_still_bare():
    """'AssertionError' followed by the raw traceback copy's 'Process EngineCore_DP0:' line, at the start of a hybrid
    with an fp8 KV cache: the bare assert without its site, read from the configuration (the page-size class)."""
    e = "(EngineCore_DP0 pid=274) ERROR 05-14 09:15:41 [core.py:1108] "
    lines = ["Qwen3.5-27B: MTP alone starts, fp8 KV alone starts, both together -> engine dies during KV cache init.",
             "vllm serve Qwen/Qwen3.5-27B -tp 2 --kv-cache-dtype fp8 "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
             e + "EngineCore failed to start.", e + "Traceback (most recent call last):",
             e + '  File ".../vllm/v1/engine/core.py", line 1082, in run_engine_core',
             e + "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)", e + "  ...",
             e + "AssertionError", "(EngineCore_DP0 pid=274) Process EngineCore_DP0:",
             "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above."]
    assert _analyze(lines).findings[0].category == "kv_page_size"


@pytest.mark.parametrize("fact, said", [
    ("cotenant_prose", "a colleague's Jupyter kernel that got scheduled on the same GPU"),
    ("direct_fine_prose", "Same request with curl -N and stream=true: text is clean."),
    ("direct_fine_prose", "Curl from the box is perfect."),
    ("slow_prose", "Throughput of MiniMax-M1 drops by ~40% after the first ~15 min of load test."),
    ("wrong_output_prose", "Qwen3.6 + MTP gives weird answers through our gateway"),
    ("faults_without_spec_prose", "- --speculative-config removed: same weird words through the gateway"),
])
def test_the_reporters_words_round_eighteen_last(fact, said):
    assert facts_from_text(said).startup.get(fact)


@pytest.mark.parametrize("fact, said", [
    ("wrong_output_prose", "the same prompt 20 times with temperature=0 gets 3-4 different answers"),
    ("faults_without_spec_prose", "- spec decode off: still 3 distinct answers out of 20"),
    ("persists_without_pc_prose", "- prefix caching off: still differs"),
    ("faults_without_spec_prose", "with MTP off it still happens (less often)"),
    ("finish_reason_length", 'all long answers stop at exactly 2048 tokens with finish_reason "length"'),
    ("slow_prose", "P99 latency explodes at 200 concurrent users"),
    ("slow_prose", "why is qwen3-next + mtp so slow on 0.20.2?"),
    ("direct_fine_prose", "Non-streaming and curl -N are correct"),
])
def test_the_reporters_words_round_eighteen_final(fact, said):
    assert facts_from_text(said).startup.get(fact)


@pytest.mark.parametrize("said", ["MTP off: still works fine", "- prefix caching off: still fine", "MTP off, still ok"])
def test_an_outcome_that_stays_fine_is_no_persisting_fault(said):
    f = facts_from_text(said)
    assert not f.startup.get("faults_without_spec_prose") and not f.startup.get("persists_without_pc_prose")
