"""Post-mortem, round twenty: a bare assert whose report quotes it in a sentence, mixed batches told in the report
languages, and the reporter's own fix of a quiet report. The reports are written here; vLLM's lines are in its own
formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_QWEN3_NEXT_MTP_BARE_ASSERT = [
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-num-seqs 128 "
    "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
    "(EngineCore_DP0 pid=811) INFO 02-11 09:14:02 [loggers.py:248] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
    "Avg generation throughput: 91.2 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%, "
    "Prefix cache hit rate: 0.0%",
    "(Worker_TP0 pid=902) ERROR 02-11 09:14:05 [multiproc_executor.py:822] WorkerProc hit an exception.",
    "(Worker_TP0 pid=902) ERROR 02-11 09:14:05 [multiproc_executor.py:822] AssertionError",
    "(EngineCore_DP0 pid=811) ERROR 02-11 09:14:05 [core.py:866] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=811) ERROR 02-11 09:14:05 [core.py:866] RuntimeError: Worker failed with error '', please "
    "check the stack trace above for the root cause",
]


@pytest.mark.parametrize("told", [
    # Korean: "it dies when a new request (prefill) is mixed into the same batch as the requests already decoding"
    "\uc0c8 \uc694\uccad(prefill)\uc774 \uc774\ubbf8 \ub514\ucf54\ub529 \uc911\uc778 \uc694\uccad\ub4e4\uacfc \uac19\uc740 "
    "\ubc30\uce58\uc5d0 \uc11e\uc77c \ub54c \uc8fd\ub294 \uac83 \uac19\uc2b5\ub2c8\ub2e4.",
    # Chinese: "it crashes once prefill and decode are mixed in the same batch"
    "prefill \u548c decode \u6df7\u5408\u5728\u540c\u4e00\u4e2a batch \u91cc\u5c31\u4f1a\u5d29\u3002",
    # German
    "Es st\u00fcrzt ab, sobald Prefill und Decode gemischt im selben Batch landen.",
])
def test_a_bare_assert_with_a_mixed_batch_told_in_another_language_is_the_mixed_batch_class(told):
    """A message-less AssertionError on a GDN hybrid with MTP, the report quoting `AssertionError` in a sentence of its
    own (no second error), and the mixed batch told in the report's language: the mixed-batch class, inferred."""
    lines = [told, *_QWEN3_NEXT_MTP_BARE_ASSERT,
             "`VLLM_LOGGING_LEVEL=DEBUG` \ub85c \ub2e4\uc2dc \ub3cc\ub824\ub3c4 `AssertionError` \ud55c \uc904\ub9cc "
             "\ub098\uc635\ub2c8\ub2e4."]
    lead = _analyze(lines).findings[0]
    assert (lead.category, lead.confidence) == ("mixed_batch", "low")
    assert "bare assert" in lead.title


def test_a_bare_assert_without_a_word_of_the_batch_stays_the_state_index_prior():
    """The same crash with no word of what the batch held: the configuration's prior (state indices), which names the
    mixed-batch class as the alternative."""
    lead = _analyze(["It crashes after a few requests.", *_QWEN3_NEXT_MTP_BARE_ASSERT]).findings[0]
    assert lead.category == "state_index" and "mixed-batch class" in lead.basis


_QWEN36_MTP_ALIGN = [
    "vllm serve Qwen/Qwen3.6-35B-A3B --enable-prefix-caching --mamba-cache-mode align "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
    "(EngineCore pid=88) INFO 05-02 10:00:01 [core.py:101] Initializing a V1 LLM engine (v0.29.0) with config: "
    "model='Qwen/Qwen3.6-35B-A3B', speculative_config=SpeculativeConfig(method='mtp', num_spec_tokens=3), "
    "tensor_parallel_size=1, enable_prefix_caching=True",
    "(EngineCore pid=88) INFO 05-02 10:00:09 [interface.py:1004] Setting attention block size to 1056 tokens to "
    "ensure that attention page size is >= mamba page size.",
    "(APIServer pid=1) INFO 05-02 10:20:00 [loggers.py:271] Engine 000: Avg prompt throughput: 812.0 tokens/s, Avg "
    "generation throughput: 402.2 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, Prefix cache "
    "hit rate: 38.5%",
]


@pytest.mark.parametrize("fix", [
    "Passing StandardCharsets.UTF_8 to EntityUtils.toString fixed it.",
    "Removing --chat-template (use the model's own) -> correct answers.",
    "Our gateway dropped the charset from the Content-Type header. Fixed.",
])
def test_a_quiet_report_that_the_reporters_own_fix_ends_outside_the_families_is_a_near_miss(fix):
    """No error, streaming said to be slower with MTP on a hybrid with align-mode prefix caching, and the reporter's own
    fix is a change to none of the families' settings: the symptom's cause is outside them."""
    lines = ["Streaming from Qwen3.6 arrives in bursts, slower than without MTP.", *_QWEN36_MTP_ALIGN, fix]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and lead.title.endswith("(the report's own fix)")


@pytest.mark.parametrize("fix", [
    "Restarting the server fixes it for a few minutes.",
    "--no-enable-prefix-caching fixed it.",
    "Upgrading to v0.30.0 fixed it.",
    "Setting num_speculative_tokens to 1 -> correct answers.",
    "ngram off -> same garbage.",
])
def test_a_fix_of_the_families_settings_a_restart_or_a_release_keeps_the_family(fix):
    """A restart (fresh Mamba/GDN states), a family's own toggle, a newer vLLM or an outcome that keeps the symptom
    says nothing against the families: the silent reading of the configuration stays."""
    lines = ["Answers from Qwen3.6 come back garbled after a few turns.", *_QWEN36_MTP_ALIGN, fix]
    lead = _analyze(lines).findings[0]
    assert lead.category != "other"


def test_a_question_about_which_version_fixes_it_is_no_fix():
    """'Can you tell us which version fixes it?' asks; it reports no trial (the silent family reading stays)."""
    lines = ["Answers from Qwen3.6 come back garbled after a few turns.", *_QWEN36_MTP_ALIGN,
             "Can you confirm and tell us which version fixes it?"]
    assert _analyze(lines).findings[0].category != "other"


def test_prefix_caching_off_told_before_a_colon_is_the_cache_needed():
    """"`--no-enable-prefix-caching` (same spec config): outputs correct": the failure needs prefix caching, so the
    cached states' class leads even where the model's layers lack a spec-decode path."""
    facts = facts_from_text("\n".join(["Answers turn to garbage on cache hits.", *_QWEN36_MTP_ALIGN,
                                       "- `--no-enable-prefix-caching` (same spec config): outputs correct."]))
    assert "no-enable-prefix-caching" in str(facts.startup.get("prefix_caching_needed"))


def test_a_probe_kill_with_the_runtimes_exit_137_is_the_probe():
    """The kubelet's liveness probe failed and the runtime reports the container killed (exit 137): one event, the
    probe's restart of a slow start -- not a second, unexplained error."""
    lines = ["Pod restarts forever, never serves.",
             '  Warning  Unhealthy  12m (x3 over 13m)  kubelet  Liveness probe failed: Get "http://10.4.1.9:8000/health": '
             "dial tcp 10.4.1.9:8000: connect: connection refused",
             *_QWEN36_MTP_ALIGN[:3],
             "2026-03-09T07:33:18.004Z rpc error: code = Unknown desc = container killed (exit 137)"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "probe" in lead.title


def test_prompts_said_to_share_no_prefix_take_the_cache_granularity_out():
    """A hybrid's 0 % hit rate, and the report says every prompt is a fresh document: no block size makes a cache hit
    there, so the granularity reading does not lead."""
    lines = ["TTFT for our 100k-token RAG prompts is 40-60 s. The hit rate 0.0% is expected here, every prompt is a "
             "fresh document.", *_QWEN36_MTP_ALIGN[:3],
             _QWEN36_MTP_ALIGN[3].replace("38.5%", "0.0%"), _QWEN36_MTP_ALIGN[3].replace("38.5%", "0.0%")]
    assert all(f.category != "prefix_cache_degraded" for f in _analyze(lines).findings[:1])


@pytest.mark.parametrize("verdict, cleared", [
    ("So spec decode / the 1056 block size are not it.", True),
    ("Maybe MTP is not the problem, I am not sure.", False),
])
def test_the_reporters_verdict_that_the_families_are_not_it(verdict, cleared):
    lines = ["Answers from Qwen3.6 come back garbled.", *_QWEN36_MTP_ALIGN, verdict]
    assert (_analyze(lines).findings[0].category == "other") is cleared


def test_a_symptom_kept_with_the_drafts_and_the_cache_off_clears_the_families():
    """'prefix caching off: still ~70% differ' and 'ngram off: still differ' keep the symptom with both switched off:
    the report's own tests take the hybrid/spec-decode classes out."""
    facts = facts_from_text("- prefix caching off: still ~70% differ\n- ngram off: still differ")
    assert facts.startup.get("persists_without_pc_prose") and facts.startup.get("faults_without_spec_prose")


def test_a_resumed_request_counts_past_the_ids_the_dump_elided():
    """resumed_from_preemption=[false, false, true, ...] with the req_ids list cut after two ids: the third request
    resumed after preemption all the same."""
    dump = ("(EngineCore_DP0 pid=1) ERROR 10-14 03:22:51 [dump_input.py:76] Dumping scheduler output for model "
            "execution: SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=["
            "'chatcmpl-9f1', 'chatcmpl-a07', ...], resumed_from_preemption=[false, false, true, ...], "
            "num_computed_tokens=[5000, 4100, 3000]), num_scheduled_tokens={chatcmpl-9f1: 3, chatcmpl-a07: 3}, "
            "total_num_scheduled_tokens=161)")
    batch = facts_from_text(dump).startup.get("crash_batch") or {}
    assert batch.get("num_resumed_reqs") == 1


def test_a_prompt_logged_with_its_bos_twice_is_formatted_twice():
    facts = facts_from_text("Answers are short, odd, often start with 'assistant'.\nWith --enable-log-requests the prompt "
                            "shows:\nprompt: '<|begin_of_text|><|im_start|>user\\n<|begin_of_text|><|im_start|>system\\n"
                            "You are a helpful assistant.<|im_end|>'")
    assert facts.startup.get("double_template_prose") and facts.startup.get("wrong_output_prose")


def test_a_verdict_hard_wrapped_over_two_lines_rules_the_drafts_out():
    """'Looks like batch-size-dependent / reduction order in bf16 matmuls, not spec decode.' over two lines."""
    facts = facts_from_text("Divergence starts at a near-tie token. Looks like batch-size-dependent\n"
                            "reduction order in bf16 matmuls, not spec decode.")
    assert "not spec decode" in str(facts.startup.get("families_ruled_out_prose"))


# the reporter's words, read as the fact each reading needs
_WORDS = [
    ("slow_prose", "Perf regression ticket: decode throughput at 64 concurrent users fell from ~2.1k to ~700 tok/s."),
    ("slow_prose", "Same MTP config is 40% faster on our B200 node than on H200 per GPU, expected maybe 15-20%."),
    ("varying_prefix_prose", 'Looked at the rendered prompts: the first line of the system prompt is '
                             '"Current time: 2025-10-14T12:13:58.412Z".'),
    ("varying_prefix_prose", "Every request diverges at token ~12, so no block ever matches."),
    ("varying_prefix_prose", "Moved the timestamp into the last user message and the hits came back."),
    ("client_cap_prose", 'Maintainer: "Running: 1 reqs" -- you only ever send one request at a time.'),
    ("client_cap_prose", "Our batch job uses the openai python client in a for-loop over 40k docs."),
    ("truncated_prose", "Zamba2-7B with ngram speculative decoding cuts answers after a few words"),
    ("truncated_prose", 'every answer is exactly 16 tokens, finish_reason "length".'),
    ("slow_prose", "GLM-4.6-FP8 + EAGLE: throughput worse than expected at batch > 4, looks like CUDA graphs not used"),
    ("slow_prose", "With 32 concurrency TPOT jumps from 11ms to 38ms."),
    ("slow_prose", "Decode throughput is ~11 tok/s per request, same model on 1x H100 gives 45."),
    ("truncated_prose", "--reasoning-parser kimi... we get `content: null` for about a third of math prompts."),
    ("slow_start_prose", "Scale-up takes 12+ minutes so users time out at the load balancer (504)."),
    ("capacity_prose", "Model is ~92 GiB bf16, so I expected ~35 GiB of KV, not 6.8."),
    ("cotenant_prose", "The TEI container from the search team was scheduled onto the same GPU."),
    ("cotenant_prose", "The platform team's scheduler started packing a small NCCL-heavy fine-tuning job (2 GPUs of "
                       "ours, MPS) onto the node at 01:00."),
    ("capacity_prose", 'Jamba-mini-1.7 on H200: only ~30 GB KV cache and "Maximum concurrency 2.9x", expected way more'),
    ("capacity_prose", "Qwen3-Next with MTP only gets ~3 concurrent 32k requests. I expected way more KV."),
    ("wrong_output_prose", "temperature=0 but the same eval prompt gives different answers between runs"),
    ("wrong_output_prose", 'Outputs are "!!!!!!!!" or empty after a few tokens for longer prompts.'),
    ("bf16_fine_prose", "Short prompts OK. With --dtype bfloat16 everything is fine on the same GPU."),
    ("batch_numerics_prose", "concurrency 64, VLLM_BATCH_INVARIANT=1 -> identical across 3 runs"),
    ("slow_prose", "Qwen3.6 with MTP -- streaming stalls of 1.5-3 s mid-answer whenever someone uploads a big document"),
    ("slow_prose", "Now chat users see it freeze for seconds at a time. p99 ITL 2.9 s (was ~60 ms)."),
    ("gpu_throttled_prose", "nvidia-smi dmon during slow windows: SM clock 1980 -> 1125 MHz on GPU 3 and 5, "
                            "`clocks_event_reasons.hw_power_brake_slowdown: Active`."),
    ("cause_named_prose", "So it is the online fp8 quantization of this checkpoint."),
    ("capacity_prose", "Max concurrency went from ~40 to ~6 overnight; is the mamba block budget wrong?"),
    ("hit_rate_prose", "granite-4.0-h-tiny with prefix caching: prefix caching basically never hits for my prompts."),
    ("shared_prefix_tokens", "prefix caching never hits for my prompts (~1.5k tokens shared)."),
    ("slow_prose", "throughput starts at ~1900 tok/s, after 15 min falls to ~1100 tok/s. Restart 'fixes' it."),
    ("truncated_prose", "answers always stop around 256 tokens when the client omits max_tokens."),
    ("resolved_prose", "Replica .12 was built from an older snapshot. Synced the\nmodel dir -> 20/20 identical answers, "
                       "EAGLE still on."),
    ("resolved_prose", "Solved: n8n serialises the toggle as the STRING 'false', so thinking stays on."),
    ("resolved_prose", "Turned out the UI's frequency penalty slider was at -1.2. Reset to 0 -> normal text."),
    ("capacity_prose", '"Maximum concurrency" is ~3x lower than on my workstation A100 with identical flags.'),
    ("cotenant_prose", "The device plugin has time-slicing enabled (replicas: 2), so a Jupyter pod landed on our GPU."),
    ("cotenant_prose", "On the node:\n|    0   N/A  N/A      88211      C   python3 (vllm)                    57340MiB |\n"
                       "|    0   N/A  N/A      90112      C   python (ns: ml-notebooks, pod: jlab-0)  13712MiB |"),
    ("resolved_prose", "Our gateway added a default stop sequence for every model. Removed it."),
    ("direct_fine_prose", "curl -N against the pod IP directly: every delta is valid UTF-8, no garbage (checked 2k "
                          "responses with a script)."),
    ("cotenant_prose", "GPU processes:\n|   0  3190841   C   /usr/bin/python3 (vllm, ours)          128702MiB |\n"
                       "|   0  3011207   C   text-embeddings-router                  27968MiB |"),
]


@pytest.mark.parametrize("fact, said", _WORDS)
def test_the_reporters_words_read_as(fact, said):
    assert facts_from_text(said).startup.get(fact)


def test_a_slow_start_that_vllm_says_went_to_loading_the_weights():
    """'Scale-up takes 12+ minutes' and vLLM's 'Loading weights took 672.55 seconds': the checkpoint's storage, outside
    the families, ahead of the set-up's notes."""
    lines = ["Zamba2-7B-Instruct autoscaling on L4 x1. Scale-up takes 12+ minutes so users time out (504).",
             *_QWEN36_MTP_ALIGN[:3],
             "(EngineCore pid=88) INFO 06-30 14:13:40 [default_loader.py:431] Loading weights took 672.55 seconds"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "673 s" in lead.title


@pytest.mark.parametrize("spec, read", [("", True), (" --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3}'",
                                                       False)])
def test_greedy_answers_that_vary_with_the_batch_are_its_numerics(spec, read):
    """temperature 0, answers that differ between runs only under concurrency, and 'reduction order' named: batch-variant
    numerics, outside the families -- unless drafts are on and nothing rules them out."""
    lines = ["Falcon-H1 at temperature=0 gives different answers between runs (34/500 differ between runs).",
             "vllm serve tiiuae/Falcon-H1-34B-Instruct --max-num-seqs 256" + spec,
             "Divergence always starts at a near-tie token; batch-size-dependent reduction order in bf16 matmuls."]
    lead = _analyze(lines).findings[0] if _analyze(lines).findings else None
    assert (lead is not None and lead.title.startswith("Greedy answers that vary with the batch")) is read




@pytest.mark.parametrize("flag, category", [("--no-enable-prefix-caching", "other"), ("", "prefix_cache_degraded")])
def test_a_hybrid_whose_command_turns_prefix_caching_off_is_that_choice(flag, category):
    """A 0 % hit rate the report asks about on a hybrid whose engine ran with prefix caching off: the command's own
    --no-enable-prefix-caching is that choice (outside the families); without the flag it is the hybrid's default."""
    lines = ["prefix cache hit rate always 0% on Qwen3-Next with MTP, is this the known hybrid bug?",
             f"vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 {flag}",
             "(EngineCore_DP0 pid=77) INFO 02-10 08:00:40 [core.py:97] Initializing a V1 LLM engine (v0.20.2) with config: "
             "model='Qwen/Qwen3-Next-80B-A3B-Thinking', tensor_parallel_size=4, enable_prefix_caching=False",
             "(EngineCore_DP0 pid=77) INFO 02-10 08:00:51 [interface.py:770] Setting attention block size to 272 tokens "
             "to ensure that attention page size is >= mamba page size.",
             *["(APIServer pid=1) INFO 02-10 08:20:00 [loggers.py:259] Engine 000: Avg prompt throughput: 3310.7 tokens/s, "
               "Avg generation throughput: 902.5 tokens/s, Running: 41 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.4%, "
               "Prefix cache hit rate: 0.0%"] * 2]
    assert _analyze(lines).findings[0].category == category

