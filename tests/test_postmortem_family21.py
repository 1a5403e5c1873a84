"""Post-mortem, round twenty-one: a symptom the same either way of a toggle, and slowness told in capitals. The
reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_GRANITE_SUFFIX_SAME_ANSWERS = [
    "Granite-4.0-H-Small + suffix decoding, vLLM 0.32.0. Different users get the same completion for the same "
    "question at temperature 0.8.",
    "vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching "
    "--speculative-config '{\"method\":\"suffix\",\"num_speculative_tokens\":8}' --max-num-seqs 32",
    "(EngineCore pid=61) INFO 08-14 09:12:33 [interface.py:614] Setting attention block size to 448 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(APIServer pid=1) INFO 08-14 09:30:02 [loggers.py:259] Engine 000: Avg prompt throughput: 902.3 tokens/s, Avg "
    "generation throughput: 288.1 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.2%, Prefix cache "
    "hit rate: 58.7%",
]


@pytest.mark.parametrize("told", [
    "Through the gateway: 20 identical answers, with MTP and the cache either way (spec on or off, prefix caching on "
    "or off).",
    "The identical answers come with or without speculative decoding, and with or without prefix caching.",
    "It happens regardless of spec decode and regardless of prefix caching.",
])
def test_a_symptom_the_same_either_way_of_both_toggles_is_outside_the_families(told):
    lead = _analyze([*_GRANITE_SUFFIX_SAME_ANSWERS, told]).findings[0]
    assert lead.category == "other"


@pytest.mark.parametrize("asked", [
    "Does it matter whether spec decode is on or off? And with or without prefix caching?",
    "Please try with and without speculative decoding, and with and without prefix caching.",
])
def test_a_toggle_asked_about_is_no_test(asked):
    facts = facts_from_text("\n".join([*_GRANITE_SUFFIX_SAME_ANSWERS, asked]))
    assert "faults_without_spec_prose" not in facts.startup and "persists_without_pc_prose" not in facts.startup


def test_slowness_told_in_capitals_is_read():
    """'MAIS LENTO' (Portuguese, shouted) under drafts whose verify steps outgrow the graph vLLM truncated: the
    capture-size class."""
    lines = [
        "Nemotron-H 47B com eagle3 ficou MAIS LENTO que sem especula\u00e7\u00e3o. vLLM 0.24.0, 1x H100.",
        "vllm serve nvidia/Nemotron-H-47B-Reasoning-128K --max-num-seqs 8 --compilation-config "
        "'{\"max_cudagraph_capture_size\": 64}' --speculative-config "
        "'{\"method\":\"eagle3\",\"model\":\"/ckpt/eagle3\",\"num_speculative_tokens\":7}'",
        "(APIServer pid=611) WARNING 06-09 11:02:21 [vllm.py:1770] Truncating max_cudagraph_capture_size to 8",
        "(APIServer pid=611) INFO 06-09 11:12:30 [loggers.py:262] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 61.4 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, "
        "Prefix cache hit rate: 0.0%",
    ]
    assert facts_from_text("\n".join(lines)).startup.get("slow_prose") == "MAIS LENTO"
    assert _analyze(lines).findings[0].category == "cudagraph_shape"


_QWEN35_MTP_PC_GARBAGE = [
    "Qwen3.5-35B-A3B, 0.17.0, 1x H200. With --enable-prefix-caching and MTP the second turn of any multi-turn chat "
    "comes out as garbage. First turn is fine.",
    "vllm serve Qwen/Qwen3.5-35B-A3B --enable-prefix-caching --max-num-seqs 128 "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
    "(APIServer pid=88) INFO 02-11 09:19:02 [loggers.py:257] Engine 000: Avg prompt throughput: 412.3 tokens/s, Avg "
    "generation throughput: 96.1 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache "
    "hit rate: 61.8%",
    "(APIServer pid=88) INFO 02-11 09:19:02 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 1.04, "
    "Accepted throughput: 1.90 tokens/s, Drafted throughput: 96.40 tokens/s, Accepted: 19 tokens, Drafted: 964 tokens, "
    "Per-position acceptance rate: 0.036, 0.004, Avg Draft acceptance rate: 2.0%",
    "A/B:",
    "- no prefix caching + MTP: correct, acceptance ~80%",
    "- prefix caching, no MTP: correct",
]


def test_drafts_rejected_only_with_prefix_caching_are_the_state_class_not_the_drafters_weights():
    """Acceptance near zero, but the report's A/B bullet has the same drafter right once prefix caching is off: not
    the drafter's weights; the output 'comes out as garbage' is the silent state class."""
    facts = facts_from_text("\n".join(_QWEN35_MTP_PC_GARBAGE))
    assert facts.startup.get("wrong_output_prose") == "comes out as garbage"
    assert facts.startup.get("prefix_caching_needed")
    assert _analyze(_QWEN35_MTP_PC_GARBAGE).findings[0].category == "state_index"


_DSV32_MTP_SLOWER = [
    "DeepSeek-V3.2 with MTP is 35% slower than without, v0.26.0 on 8x H200.",
    "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
    "(EngineCore pid=512) INFO 04-17 02:10:55 [cuda.py:370] Using FLASHMLA_SPARSE attention backend out of potential "
    "backends: ['FLASHMLA_SPARSE']",
]


def test_a_job_someone_else_started_on_the_node_is_a_cotenant():
    lines = [*_DSV32_MTP_SLOWER, "Someone on the data team started a reward-model job pinned to "
             "CUDA_VISIBLE_DEVICES=3 on our node. GPU 3 is the straggler every TP step waits on."]
    assert _analyze(lines).findings[0].category == "other"
    assert _analyze(_DSV32_MTP_SLOWER).findings[0].category == "spec_kernel_limit"


@pytest.mark.parametrize("told", [
    "Capacity much lower than expected on H100: only ~3 concurrent 64k requests.",
    "KV cache is way smaller than we expected.",
])
def test_capacity_lower_than_expected_is_the_capacity_symptom(told):
    assert facts_from_text(told).startup.get("capacity_prose")


@pytest.mark.parametrize("told", ["DeepSeek-V3.2 with MTP got 35% slower overnight, v0.26.0 on 8x H200, nothing redeployed.",
                                  "DeepSeek-V3.2 with MTP has been getting slower since Monday."])
def test_a_slowdown_that_came_with_time_is_not_the_backends_cost(told):
    """An MLA model's slower decode under drafts is the backend's cost from the start; the same deployment slowing
    down with time is something else."""
    lines = [told, *_DSV32_MTP_SLOWER[1:]]
    assert facts_from_text("\n".join(lines)).startup.get("degraded_over_time_prose")
    assert [f.category for f in _analyze(lines).findings] in ([], ["other"])


@pytest.mark.parametrize(("fact", "words"), [
    ("families_ruled_out_prose", "Setting it back to 1.0 -> acceptance 2.54. Not a vLLM bug, closing."),
    ("families_ruled_out_prose", "Not a bug, but maybe that warning should be louder."),
    ("varying_prefix_prose", "Moved the trace id into the `user` field / a header and the hit rate is 58-65% now."),
    ("cotenant_prose", "we run this next to a bge-m3 embedding server on the same H100."),
    ("capacity_prose", "why can we only run 4 requests at once and 37 wait?"),
    ("truncated_prose", "Every long answer stops at exactly ~1k tokens with finish_reason length."),
    ("wrong_output_prose", "Kimi-Linear gives a different answer every time even though we don't sample."),
    ("spec_slower_prose", "ngram speculative decoding on Qwen3.5-35B-A3B gives almost no speedup."),
])
def test_the_reporters_words(fact, words):
    assert facts_from_text(words).startup.get(fact)


@pytest.mark.parametrize("words", ["I wonder if it's not a vLLM bug after all?", "Maybe not a bug."])
def test_a_guess_at_the_verdict_is_none(words):
    assert not facts_from_text(words).startup.get("families_ruled_out_prose")


_KIMI_LINEAR_ALIGN = [
    "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code -tp 2 --enable-prefix-caching",
    "(APIServer pid=7) WARNING 04-14 08:55:36 [config.py:422] Mamba cache mode is set to 'align' for "
    "KimiLinearForCausalLM by default when prefix caching is enabled",
    "(APIServer pid=7) INFO 04-14 08:55:36 [interface.py:773] Setting attention block size to 1168 tokens to ensure "
    "that attention page size is >= mamba page size.",
]


@pytest.mark.parametrize(("rate", "warned"), [(63.1, False), (0.0, True), (12.0, True)])
def test_the_hybrid_granularity_warning_stays_out_of_a_log_whose_cache_hits(rate, warned):
    lines = [*_KIMI_LINEAR_ALIGN,
             "(APIServer pid=7) INFO 04-14 09:03:12 [loggers.py:259] Engine 000: Avg prompt throughput: 3140.7 tokens/s, "
             "Avg generation throughput: 402.3 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.8%, "
             f"Prefix cache hit rate: {rate}%"]
    rules = [f.rule for f in _analyze(lines).findings]
    assert ("prefix_cache_granularity" in rules) is warned


def test_slower_drafts_that_greedy_requests_accept_are_the_sampling():
    """Slower under MTP on an MLA model, the requests sampled at temperature 1.3, and the report's greedy run accepting
    the drafts: the sampling, not the backend's query-length limit."""
    lines = ["MTP on DeepSeek-V3.2 makes our creative-writing service SLOWER (v0.32.0, 8x B200)",
             "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
             "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "Our clients send temperature=1.3, top_p=0.98, presence_penalty=1.0."]
    assert _analyze(lines).findings[0].category == "spec_kernel_limit"
    lead = _analyze([*lines, "No errors. With temperature 0 the acceptance length is 2.6 so the MTP head works."]).findings[0]
    assert lead.category == "other" and "greedy run" in lead.basis


@pytest.mark.parametrize(("fact", "words"), [
    ("spec_slower_prose", "Turning on MTP for Qwen3-Next made our chat endpoint *slower* per token, not faster."),
    ("capacity_prose", "Jamba-mini throughput caps at ~600 tok/s no matter how many clients we add."),
    ("slow_prose", "num_speculative_tokens \u3092 2 \u306b\u3059\u308b\u3068\u30b9\u30eb\u30fc\u30d7\u30c3\u30c8\u304c"
                   "\u9006\u306b 30% \u843d\u3061\u307e\u3059\u3002"),
    ("mixed_prose", "on-call note: the batch had 2 requests finishing prefill chunks while the rest were MTP spec "
                    "decodes."),
    ("resolved_prose", "Deduped chunks -> no repeats, acceptance ~2.3."),
])
def test_more_of_the_reporters_words(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_a_fix_told_by_a_pronoun_is_of_what_the_sentence_before_names():
    """'Disabling it -> zero wrong answers' clears the families when 'it' is the gateway's response cache, and says
    the failure needs prefix caching when 'it' is prefix caching."""
    gateway = facts_from_text("Our platform team enabled the gateway semantic response cache on Oct 28. Disabling it "
                              "for this route -> zero wrong answers in 2 days of replay, with MTP and prefix caching "
                              "still on.")
    assert gateway.startup.get("resolved_prose")
    cache = facts_from_text("Prefix caching was on the whole time. Disabling it -> correct answers.")
    assert not cache.startup.get("resolved_prose")


_KIMI_LINEAR_ZERO_HITS = [
    "Kimi-Linear-48B-A3B, v0.29.0. Prefix cache hit rate is always 0.0% on this hybrid model. Is prefix caching "
    "broken for KDA layers?",
    *_KIMI_LINEAR_ALIGN,
    "(APIServer pid=301) INFO 07-21 13:11:52 [loggers.py:301] Engine 000: Avg prompt throughput: 41210.3 tokens/s, "
    "Avg generation throughput: 5102.8 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.4%, "
    "Prefix cache hit rate: 0.0%",
]


@pytest.mark.parametrize(("bench", "category"), [
    ("vllm bench serve --dataset-name random --random-input-len 2048 --num-prompts 500", "other"),
    ("vllm bench serve --dataset-name random --random-prefix-len 3000 --random-input-len 2048", "prefix_cache_degraded"),
])
def test_a_benchmarks_random_prompts_share_no_prefix(bench, category):
    """vLLM's benchmark draws random prompts afresh: no prefix to hit, unless --random-prefix-len puts one first."""
    assert _analyze([*_KIMI_LINEAR_ZERO_HITS, bench]).findings[0].category == category


def test_slow_under_wsl_is_the_platform():
    lines = ["Zamba2-7B on my RTX 4090 under WSL2 gets like 18 tok/s, friend on native Ubuntu same card gets ~70.",
             "(APIServer pid=812) INFO 09-03 22:10:04 [utils.py:302] non-default args: {'model': "
             "'Zyphra/Zamba2-7B-instruct', 'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 3}}",
             "(APIServer pid=812) WARNING 09-03 22:10:09 [interface.py:1181] Using 'pin_memory=False' as WSL is "
             "detected. This may slow down the performance.",
             "(APIServer pid=812) INFO 09-03 22:10:09 [interface.py:958] Setting attention block size to 784 tokens to "
             "ensure that attention page size is >= mamba page size."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "WSL" in lead.title


@pytest.mark.parametrize("words", [
    "Com 40-60 requisi\u00e7\u00f5es o throughput por usu\u00e1rio despenca.",
    "Con MTP el rendimiento es peor que sin speculative decoding.",
])
def test_throughput_collapsing_in_portuguese_and_spanish_is_slowness(words):
    assert facts_from_text(words).startup.get("slow_prose")


@pytest.mark.parametrize(("fact", "words"), [
    ("slow_prose", "Decode speed is ~38 tok/s single stream, half of what others report."),
    ("wrong_output_prose", "Our eval harness sends temperature=0 but answers differ run to run (~30% of items change)."),
    ("no_temperature_prose", "So temperature is\nomitted and vLLM falls back to the generation_config.json defaults."),
])
def test_still_more_of_the_reporters_words(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_a_broken_fan_is_no_error_line():
    facts = facts_from_text("The chassis fan for slot 2 had failed. After the fan swap: 79 tok/s, same config.")
    assert not facts.startup.get("error_lines")


def test_a_slow_first_token_is_not_the_drafts_verification_cost():
    """'MTP ... ~2x slower TTFT' at 96 running requests: the drafts verify during decode, so the large-batch
    verification reading does not speak to it."""
    lines = ["Nemotron-3 Super with MTP on 0.24.0 is ~2x slower TTFT than expected for our RAG traffic.",
             "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 4 --max-num-seqs 128 "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "(APIServer pid=612) INFO 05-30 13:58:40 [loggers.py:257] Engine 000: Avg prompt throughput: 21930.6 "
             "tokens/s, Avg generation throughput: 402.7 tokens/s, Running: 96 reqs, Waiting: 31 reqs, GPU KV cache "
             "usage: 61.0%, Prefix cache hit rate: 0.0%"]
    assert "compute-bound" not in " ".join(f.title for f in _analyze(lines).findings)


@pytest.mark.parametrize(("fact", "words"), [
    ("truncated_prose", "Answers often end after the first paragraph with finish_reason \"stop\"."),
    ("wrong_output_prose", "Some streamed answers contain the whole answer twice."),
    ("proxy_retry_prose", "Our ingress had proxy_read_timeout 30s and proxy_next_upstream \"error timeout\" (the default)."),
    ("ignore_eos_prose", "ignore_eos=True -- our load-test harness sets it in extra_body."),
    ("draft_weights_prose", "The uploader ran AutoAWQ over the MTP block too -> MTP head is basically noise."),
])
def test_causes_and_symptoms_of_this_round(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_another_models_tokenizer_in_a_local_folder():
    lines = ["Falcon-H1-34B-Instruct returns word salad with prefix caching on.",
             "(APIServer pid=5512) INFO 01-20 20:11:02 [utils.py:287] non-default args: {'model': "
             "'/models/Falcon-H1-34B-Instruct', 'tokenizer': '/models/Falcon3-10B-Instruct', 'enable_prefix_caching': "
             "True}"]
    assert "tokenizer" in _analyze(lines).findings[0].title
    # (folders that name no model say nothing)
    same = [lines[0], lines[1].replace("/models/Falcon-H1-34B-Instruct", "/ckpt/final").replace(
        "/models/Falcon3-10B-Instruct", "/ckpt/tok")]
    assert "tokenizer" not in _analyze(same).findings[0].title


def test_an_eagle_head_trained_for_another_model():
    lines = ["EAGLE3 makes Llama-3.3-70B slower, not faster (v0.24.0, 2x H200)",
             "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 2 --speculative-config "
             "'{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":4}'",
             "(APIServer pid=1) INFO 03-02 14:30:40 [metrics.py:121] SpecDecoding metrics: Mean acceptance length: 1.09, "
             "Accepted throughput: 63.10 tokens/s, Drafted throughput: 2799.02 tokens/s, Accepted: 631 tokens, "
             "Drafted: 28000 tokens, Avg Draft acceptance rate: 2.3%"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "another model" in lead.title
    matched = [lines[0], lines[1].replace("LLaMA3.1-Instruct-8B", "LLaMA3.3-Instruct-70B"), lines[2]]
    assert not any("another model" in f.title for f in _analyze(matched).findings)


def test_a_worker_the_hosts_oom_killer_ended():
    lines = ["Pod keeps restarting. Falcon-H1-34B + draft, 0.32.0.",
             "(EngineCore pid=118) ERROR 08-02 13:40:51 [multiproc_executor.py:1] Worker proc VllmWorker-1 died "
             "unexpectedly (exit code: -9), shutting down executor.",
             "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
             "proc(s): {'EngineCore': 1}",
             "    Last State:     Terminated",
             "      Reason:       OOMKilled"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "OOM killer" in lead.title


@pytest.mark.parametrize(("fact", "words"), [
    ("slow_prose", "Granite-4.0-H-Small TP=4 on 4x L4 throughput lower than TP=2??"),
    ("resolved_prose", "Our Go client splits UTF-8 across reads. Fixed by using bufio.Scanner on lines."),
    ("direct_fine_prose", "Perfect UTF-8. Non-streaming through our service is fine too."),
    ("unique_prompts_prose", "So the cache is fine, our prompts just never share more than the system prompt."),
])
def test_words_of_round_ninety_nine(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_drafts_slower_at_a_very_large_batch_are_compute_bound_not_the_graph_ceiling():
    """256 requests x (1 + 4) tokens outgrow the default 512-token graphs, but at that batch the GPUs are compute-bound:
    the drafts' own trade-off, unless vLLM cut the graphs short itself."""
    lines = ["EAGLE3 makes things slower at high QPS? (v0.14.0)",
             "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 256 --speculative-config "
             "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 4}'"
             " --compilation-config '{\"max_cudagraph_capture_size\": 512}'",
             "(APIServer pid=7781) INFO 01-19 10:24:44 [loggers.py:236] Engine 000: Avg prompt throughput: 3320.9 tokens/s, "
             "Avg generation throughput: 8311.7 tokens/s, Running: 256 reqs, Waiting: 188 reqs, GPU KV cache usage: 71.5%, "
             "Prefix cache hit rate: 0.0%"]
    assert "compute-bound" in _analyze(lines).findings[0].title


@pytest.mark.parametrize(("fact", "words"), [
    ("direct_fine_prose", "Sending the raw request directly to vLLM twice, an hour apart: byte-identical outputs."),
    ("slow_prose", "MTP \u0441 3 \u2014 \u043f\u0440\u043e\u043f\u0443\u0441\u043a\u043d\u0430\u044f "
                   "\u0441\u043f\u043e\u0441\u043e\u0431\u043d\u043e\u0441\u0442\u044c \u043f\u0430\u0434\u0430\u0435\u0442 "
                   "\u041d\u0418\u0416\u0415, \u0447\u0435\u043c \u0431\u0435\u0437 MTP."),
])
def test_words_of_round_ninety_nine_continued(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_a_numbered_request_of_a_repro_is_no_fix():
    """'Request 1 -> normal answer.' is the repro's first run, not a change that ended the symptom."""
    facts = facts_from_text("Repro: same 6k-token system prompt, two questions.\nRequest 1 -> normal answer.\n"
                            "Request 2 -> garbage.")
    assert not facts.startup.get("resolved_prose")


def test_a_cliff_at_the_graphs_edge_keeps_the_capture_reading_at_a_large_batch():
    lines = ["GLM-4.5-Air with MTP scales nicely up to ~128 concurrent users and then falls off a cliff.",
             "vllm serve zai-org/GLM-4.5-Air-FP8 -tp 2 --max-num-seqs 256 --speculative-config "
             "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}' --compilation-config '{\"max_cudagraph_capture_size\": 512}'",
             "(APIServer pid=5002) INFO 01-21 16:31:07 [loggers.py:248] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
             "Avg generation throughput: 6872.5 tokens/s, Running: 256 reqs, Waiting: 0 reqs, GPU KV cache usage: 30.1%, "
             "Prefix cache hit rate: 0.0%"]
    assert _analyze(lines).findings[0].category == "cudagraph_shape"


@pytest.mark.parametrize(("fact", "words"), [
    ("direct_fine_prose", "Edit: `curl -N` against /v1/chat/completions with stream=true gives perfectly fine text."),
    ("slow_prose", "granite-4.0-h-small with TP=4 gives ~half the tokens/s I get with TP=2 on two of the same cards."),
])
def test_words_of_round_one_hundred(fact, words):
    assert facts_from_text(words).startup.get(fact)


@pytest.mark.parametrize(("tokenizer", "foreign"), [
    ("ibm-granite/granite-3.3-8b-instruct", True),   # another generation of the family: another vocabulary
    ("ibm-granite/granite-4.0-h-small", False),
    ("mistralai/Mistral-7B-Instruct-v0.3", True),
])
def test_a_tokenizer_of_another_generation_of_the_family(tokenizer, foreign):
    lines = ["granite-4.0-h-small returns garbage for every prompt.",
             "INFO 01-27 16:20:08 [utils.py:263] non-default args: {'model_tag': 'ibm-granite/granite-4.0-h-small', "
             f"'model': 'ibm-granite/granite-4.0-h-small', 'tokenizer': '{tokenizer}', 'max_num_seqs': 64}}"]
    assert any("tokenizer" in f.title for f in _analyze(lines).findings) is foreign


@pytest.mark.parametrize(("fact", "words"), [
    ("spec_slower_prose", "Going to 3 MTP tokens, throughput drops BELOW the non-spec baseline."),
    ("capacity_prose", "Only ~18k tokens of KV cache and requests queue under any load."),
    ("cpu_starved_prose", "container_cpu_cfs_throttled_periods_total climbs constantly. Raised the limit to 48."),
    ("replicas_differ_prose", "The Service round-robins across both, so \"non-determinism\" = which pod answered."),
    ("draft_weights_prose", "The quant's quantization_config has no \"mtp\" in modules_to_not_convert."),
])
def test_words_of_round_one_hundred_and_one(fact, words):
    assert facts_from_text(words).startup.get(fact)


def test_prompts_the_usage_shows_cut_at_the_requests_limit():
    lines = ["Kimi-Linear misses a needle at 10% depth of a 90k-token doc.",
             "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code --max-model-len 262144",
             '  "usage": {"prompt_tokens": 32768, "completion_tokens": 41, "total_tokens": 32809}',
             "The harness config has `truncate_prompt_tokens: 32768` in its default extra_body."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "truncate_prompt_tokens" in lead.title


@pytest.mark.parametrize(("fact", "words"), [
    ("cotenant_prose", "pid 3877 is a colleague's TensorFlow notebook on the same card."),
    ("varying_prefix_prose", "Our tool router builds the tools array from a set(), so every gunicorn worker serialises "
                             "the 14 tools in a different order."),
    ("draft_weights_prose", "Found it: the quant recipe's `ignore` list only excluded `lm_head` and the gates, so the "
                            "`mtp.*` layers were\nquantized with per-tensor FP8 too."),
    ("wrong_output_prose", "Kimi-Linear-48B-A3B answers are irrelevant on long documents, fine on short ones."),
])
def test_words_of_round_one_hundred_and_two(fact, words):
    assert facts_from_text(words).startup.get(fact)
