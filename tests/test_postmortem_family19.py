"""Post-mortem, round nineteen: which wrapper stands for the root, answers cut where the context window ends, notes
that answer no symptom, and the reporter's A/B tests told in more ways (a fix kept with the drafts on). The reports
are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


_GRANITE_H = [
    "vllm serve ibm-granite/granite-4.0-h-small --max-model-len 8192 "
    "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'",
    "(EngineCore pid=31) INFO 03-30 14:02:11 [core.py:109] Initializing a V1 LLM engine (v0.29.0) with config: "
    "model='ibm-granite/granite-4.0-h-small', speculative_config=SpeculativeConfig(method='ngram', num_spec_tokens=4), "
    "max_seq_len=8192, tensor_parallel_size=1, enable_prefix_caching=True",
    "(EngineCore pid=31) INFO 03-30 14:02:19 [interface.py:906] Setting attention block size to 400 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(EngineCore pid=31) INFO 03-30 14:02:19 [interface.py:930] Padding mamba page size by 0.88% to ensure that mamba "
    "page size and attention page size are exactly equal.",
]


def test_the_wrapper_that_relays_the_workers_error_is_the_root():
    """The API server's traceback ends in 'Engine core initialization failed. See root cause above'; the engine's
    'Worker failed with error '<msg>'' pasted after it carries the real error, which is the root."""
    lines = [
        "(APIServer pid=40211) Traceback (most recent call last):",
        '(APIServer pid=40211)   File ".../vllm/v1/engine/utils.py", line 1273, in wait_for_engine_startup',
        "(APIServer pid=40211)     raise RuntimeError(",
        "(APIServer pid=40211) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {'EngineCore': 1}",
        "",
        "From the one line I could still find in journald:",
        "  RuntimeError: Worker failed with error 'Layer draft_model.model.layers.0.self_attn.attn: page size is not "
        "divisible by the maximum page size and cannot be padded.', please check the stack trace above for the root "
        "cause",
    ]
    root = facts_from_text("\n".join(lines)).root
    assert root is not None and "not divisible by the maximum page size" in root.message


def test_an_answer_that_fills_the_context_window_is_cut_by_it():
    """finish_reason 'length' with the usage reaching --max-model-len: the window ended the answer, whatever the
    request's max_tokens."""
    lines = ["Outputs from Granite-4.0-H-Small stop mid-sentence at ~600 tokens for long RAG prompts.", *_GRANITE_H,
             "request: prompt_tokens=7590, max_tokens=2048",
             'response: {"finish_reason":"length","usage":{"prompt_tokens":7590,"completion_tokens":602,'
             '"total_tokens":8192}}']
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "context window" in lead.title and "8192" in lead.title


def test_an_answer_below_the_window_stays_cut_by_its_cap():
    lines = ["Outputs from Granite-4.0-H-Small stop mid-sentence.", *_GRANITE_H,
             'response: {"finish_reason":"length","usage":{"prompt_tokens":700,"completion_tokens":2048,'
             '"total_tokens":2748}}', "request: max_tokens=2048"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "token cap" in lead.title


def test_notes_on_the_setup_that_answer_no_symptom_are_left_out():
    """Wrong answers on a run without drafts that stay wrong with prefix caching off: the report's own test takes the
    hybrid's state classes out, and the hybrid's prefix-cache granularity (a warning about hits, which never makes an
    answer wrong) is left out with them."""
    lines = ["Our W4A16 quant of granite-4.0-h-tiny gives low-quality, often off-topic answers. Prefix caching on.",
             "(EngineCore_DP0 pid=611) INFO 12-22 19:04:33 [core.py:97] Initializing a V1 LLM engine (v0.20.2) with "
             "config: model='/models/granite-4.0-h-tiny-w4a16', enable_prefix_caching=True, max_seq_len=32768, ...",
             "(EngineCore_DP0 pid=611) INFO 12-22 19:04:33 [config.py:472] Setting attention block size to 528 tokens "
             "to ensure that attention page size is >= mamba page size.",
             "(EngineCore_DP0 pid=611) WARNING 12-22 19:04:33 [config.py:341] Mamba cache mode is set to 'align' for "
             "GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
             "gsm8k: bf16 0.812, our w4a16 0.341, with --no-enable-prefix-caching still 0.339."]
    findings = _analyze(lines).findings
    assert findings[0].rule == "near_miss" and "--no-enable-prefix-caching still 0.339" in findings[0].basis
    assert all(f.category == "other" for f in findings)
    assert any("were left out" in m for m in findings[0].missing_evidence)
    # without the prefix-caching test, nothing in the log explains them: 'not modelled'
    findings = _analyze(lines[:-1] + ["gsm8k: bf16 0.812, our w4a16 0.341."]).findings
    assert findings[0].rule == "unexplained_symptom" and all(f.category == "other" for f in findings)
    assert any("note(s) on the set-up were left out" in m for m in findings[0].missing_evidence)


def test_a_fix_outside_the_families_with_the_drafts_kept_on_clears_them():
    lines = ["Prefix cache hit rate stays at 0.0% on Nemotron-H with MTP?",
             "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "(APIServer pid=7) INFO 05-14 10:02:11 [interface.py:906] Setting attention block size to 1072 tokens to "
             "ensure that attention page size is >= mamba page size.",
             "(APIServer pid=7) INFO 05-14 10:21:40 [loggers.py:259] Engine 000: Avg prompt throughput: 9120.7 tokens/s, "
             "Avg generation throughput: 611.3 tokens/s, Running: 41 reqs, Waiting: 0 reqs, GPU KV cache usage: 22.0%, "
             "Prefix cache hit rate: 0.0%",
             "Moved the header line to the end of the user turn -> hit rate 68% on the same server, same flags, MTP "
             "still on."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "same flags" in lead.basis
    assert "Prefix cache hit rate stays" in lead.basis  # (the symptom quoted from its line, not a flag's value)


def test_the_same_fix_with_the_drafts_turned_off_clears_nothing_alone():
    lines = ["Prefix cache hit rate stays at 0.0% on Nemotron-H with MTP?",
             "(APIServer pid=7) INFO 05-14 10:02:11 [interface.py:906] Setting attention block size to 1072 tokens to "
             "ensure that attention page size is >= mamba page size.",
             "Disabled MTP -> hit rate 68%."]
    assert "same flags" not in _analyze(lines).findings[0].basis


@pytest.mark.parametrize("fact, said", [
    ("wrong_output_prose", "Every answer ends with the same paragraph repeated 10-20 times until max length."),
    ("wrong_output_prose", "gives low-quality, often off-topic answers on vLLM 0.20.2"),
    ("wrong_output_prose", "Outputs are fluent-ish but sprinkled with wrong subwords"),
    ("wrong_output_prose", "Model keeps writing as the *user* and answers its own question, very repetitive."),
    ("truncated_prose", "Outputs from Granite-4.0-H-Small stop mid-sentence at ~600 tokens"),
    ("capacity_prose", "Kimi-Linear-48B, 1M context, requests sit in Waiting for minutes."),
    ("faults_without_spec_prose", "Turning ngram off still repeats (just slower)."),
    ("faults_without_spec_prose", "Turned suffix decoding off: same thing."),
    ("faults_without_spec_prose", "Same garbage with --speculative-config removed."),
    ("faults_without_spec_prose", "Same behaviour without --speculative-config."),
    ("faults_without_spec_prose", "- removed `--speculative-config`: still 0.0%"),
    ("persists_without_pc_prose", "gsm8k with --no-enable-prefix-caching still 0.339"),
    ("other_fix_prose", "Removing min_tokens -> the model stops normally at EOS, no repetition."),
    ("other_fix_prose", "With the model's bundled template everything is normal."),
    ("other_fix_prose", "Moved it to the end of the user turn -> hit rate 68% on the same server."),
    ("direct_fine_prose", "If I curl vLLM directly with stream=true the concatenated text is clean."),
    ("direct_fine_prose", "curl with stream=true against the same server and piping to a file -> text is clean"),
    ("cotenant_prose", "PID 2210711 is a colleague's Jupyter kernel that never freed the GPU."),
    ("own_tokenizer_fixes", "Pointing --tokenizer at the model dir itself fixed it."),
    ("wrong_output_prose", "the 2nd turn sometimes starts with garbage like '的的的 assistant'"),
    ("wrong_output_prose", "Same prompt, temperature 0, sent 20 times -> two distinct answers"),
    ("wrong_output_prose", "answers repeat the same paragraph 3-4 times"),
    ("truncated_prose", "Open WebUI shows empty answers for about half the questions."),
    ("slow_prose", "output throughput went down from ~5.9k tok/s to ~4.6k tok/s at 64 concurrent"),
    ("spec_slower_prose", "Suffix decoding makes Granite 4.0 H Tiny slower for our story-generation service"),
    ("faults_without_spec_prose", "So it's our rollout, not MTP."),
    ("faults_without_spec_prose", "Tried removing the speculative config on this pod: still two answers."),
    ("replicas_differ_prose", "Pinning the client to one pod -> the answer is the same every time"),
    ("other_fix_prose", "Without --reasoning-parser every answer shows up."),
    ("wrong_output_prose", 'granite-4.0-h-tiny returns "!!!!!!!!!!!!" for longer prompts'),
    ("wrong_output_prose", "answer quality noticeably worse than the hosted API"),
    ("faults_without_spec_prose", "- Disabling MTP: loops still happen for the Java service."),
    ("persists_without_pc_prose", "tried --no-enable-prefix-caching on both: still 2 distinct outputs"),
    ("replicas_differ_prose", "Same request 20 times with port-forward to a single pod -> identical every time"),
    ("direct_fine_prose", "- Python client, same messages: fine."),
    ("slow_prose", "went from mtp k=1 to k=3 expecting more tok/s, got LESS. TPOT up ~18% at c=32."),
    ("faults_without_spec_prose", "So MTP isn't it."),
    ("faults_without_spec_prose", "Pointing --tokenizer back fixes it; fp8 kv / MTP don't matter."),
    ("faults_without_spec_prose", "Acceptance is unchanged and with MTP off it is just as bad."),
    ("other_engine_prose", "transformers AutoTokenizer.from_pretrained(path).decode(ids) gives the same mojibake outside vLLM."),
    ("own_tokenizer_fixes", "Pointing --tokenizer back at the original repo fixes it."),
    ("grammar_compile_prose", "py-spy dump: main thread in xgrammar GrammarCompiler.compile_json_schema, every time."),
    ("cotenant_prose", "That's a jupyter kernel from a colleague (embedding model) on the same host."),
    ("direct_fine_prose", "curl -N directly against :8000 streams smoothly (~105 tok/s per stream)."),
    ("faults_without_spec_prose", "Thought it was MTP + prefix caching, but turning both off doesn't fix it."),
    ("persists_without_pc_prose", "Thought it was MTP + prefix caching, but turning both off doesn't fix it."),
    ("faults_without_spec_prose", "Without MTP the same."),
    ("persists_without_pc_prose", "Without --enable-prefix-caching the same."),
    ("wrong_output_prose", "responses start with a long block of the model's reasoning and a stray </think>"),
    ("slow_prose", "ITL ~45 ms per token single user, expected < 15 ms."),
    ("capacity_prose", "vLLM says max concurrency 2.1x for 32k, I calculated ~7x."),
    ("direct_fine_prose", "Concatenated, that's fine."),
    ("replicas_differ_prose", "Pinned to granite-a-0: 20/20 identical answers"),
    ("replicas_differ_prose", "So it's two different deployments behind one service name."),
    ("spec_slower_prose", "MTP makes DeepSeek-V3.2-Exp *slower*, not faster, with num_speculative_tokens=3."),
    ("prompt_logprobs_prose", 'lm-eval loglikelihood tasks send "echo": true, "logprobs": 1'),
])
def test_the_reporters_words_round_nineteen(fact, said):
    assert facts_from_text(said).startup.get(fact)


@pytest.mark.parametrize("fact, said", [
    ("faults_without_spec_prose", "Turning ngram off still works fine."),
    ("persists_without_pc_prose", "with --no-enable-prefix-caching still fine"),
    ("other_fix_prose", "With MTP off everything is normal."),
    ("other_fix_prose", "With a single user everything is fine."),
])
def test_words_that_stay_fine_or_toggle_a_family(fact, said):
    """A drafts-off run that stays fine persists nothing; a family toggle (or fewer users) that fixes it is no cause
    outside the families."""
    assert not facts_from_text(said).startup.get(fact)


def test_the_prompts_first_lines_shown_with_a_per_request_value():
    lines = ["Gateway request dump, first lines of the system prompt:",
             "`You are Atlas, an assistant for ACME. Current time: 2026-06-19T14:02:07.114Z. Request-ID: 7d1f0c2e-...`"]
    assert facts_from_text("\n".join(lines)).startup.get("varying_prefix_prose")
    assert not facts_from_text("Gateway request dump, first lines of the system prompt:\n`You are Atlas.`").startup.get(
        "varying_prefix_prose")


_NGRAM_LLAMA = [
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
    "'{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":4}'",
    "(APIServer pid=1) INFO 11-03 08:29:50 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 1.07, Accepted "
    "throughput: 318.66 tokens/s, Drafted throughput: 1502.3 tokens/s, Accepted: 3187 tokens, Drafted: 15023 tokens, "
    "Avg Draft acceptance rate: 4.2%",
]


def test_copy_based_drafts_that_rarely_match_are_the_workload():
    lines = ["ngram spec decode makes our story service slower: output throughput went down from ~5.9k tok/s to ~4.6k "
             "tok/s.", *_NGRAM_LLAMA]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Copy-based drafts (ngram)" in lead.title


def test_a_model_based_drafter_with_the_same_metrics_is_not_read_as_copying():
    lines = ["EAGLE makes our story service slower: output throughput went down from ~5.9k tok/s to ~4.6k tok/s.",
             _NGRAM_LLAMA[0].replace('"ngram"', '"eagle3"').replace(',\\"prompt_lookup_max\\":4', ""), _NGRAM_LLAMA[1]]
    assert "Copy-based" not in _analyze(lines).findings[0].title


_TOPO = ["$ nvidia-smi topo -m",
         "        GPU0  GPU1  GPU2  GPU3",
         "GPU0     X    PIX   NODE  SYS",
         "GPU1    PIX    X    NODE  SYS"]


def test_gpus_without_nvlink_in_nvidia_smi_topo_are_the_slow_all_reduce():
    lines = ["DeepSeek-V3 + MTP on 4x H100 PCIe is slower than without MTP.",
             "vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 4 --speculative-config "
             "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'", *_TOPO]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "PCIe" in lead.title and "topo" in lead.basis
    nvlink = [t.replace("PIX", "NV18") for t in lines]
    assert "PCIe" not in _analyze(nvlink).findings[0].title


def test_replicas_told_apart_by_the_upstream_header():
    lines = ["DeepSeek-V3.2 + MTP: temperature=0, same prompt gives two different answers, roughly alternating.",
             "(APIServer pid=1) INFO 07-11 09:30:02 [utils.py:301] non-default args: {'model': 'deepseek-ai/DeepSeek-V3.2', "
             "'tensor_parallel_size': 8, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
             "every A came from vllm-dsv32-0, every B from vllm-dsv32-1.",
             "Directly against pod 0, 50/50 identical."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "Replicas" in lead.title


def test_a_specific_cause_says_more_than_the_ab_tests_alone():
    """The drafts off change nothing and the report shows the client's path garbling the stream: the client's path is
    named, not only 'outside the families'."""
    lines = ["Qwen3-Next + MTP: Chinese answers come back with replacement characters through our gateway.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 "
             "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
             "Same garbage with --speculative-config removed.",
             "If I curl vLLM directly with stream=true the concatenated text is clean."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "client's path" in lead.title


def test_a_hang_is_no_launch_bound_decode():
    lines = ["GLM-4.5-Air + MTP hangs forever at cuda graph capture, TP=4",
             "vllm serve zai-org/GLM-4.5-Air -tp 4 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
             "- --enforce-eager -> hangs at the first request instead",
             "- NCCL_P2P_DISABLE=1 -> starts in 4 min, MTP works, ~8% slower"]
    assert "eager mode" not in _analyze(lines).findings[0].title


def test_truncated_answers_nothing_explains_are_not_modelled():
    lines = ["MiniMax-M1: Open WebUI shows empty answers for about half the questions. No errors in the server.",
             "(APIServer pid=12) INFO 09-15 18:02:58 [config.py:377] Setting attention block size to 192 tokens to ensure "
             "that attention page size is >= mamba page size."]
    findings = _analyze(lines).findings
    assert findings[0].rule == "unexplained_symptom" and all(f.category == "other" for f in findings)


def test_a_replay_that_hits_puts_the_live_prompts_at_fault():
    lines = ["Prefix cache hit rate on Qwen3.5 is basically zero for agent traffic.",
             "vllm serve Qwen/Qwen3.5-122B-A10B -tp 4 --enable-prefix-caching "
             "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
             "(APIServer pid=1) INFO 08-11 11:02:30 [loggers.py:310] Engine 000: Avg prompt throughput: 41873.2 tokens/s, "
             "Avg generation throughput: 1712.5 tokens/s, Running: 48 reqs, Waiting: 3 reqs, GPU KV cache usage: 38.9%, "
             "Prefix cache hit rate: 1.2%",
             "- Same prompts replayed with `vllm bench serve` from a saved JSONL: Prefix cache hit rate 71.4%."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "replay" in lead.title
    # the same words with the drafts removed are the drafts' A/B test, not a replay
    assert not facts_from_text("Same prompts with MTP removed: hit rate ~85%").startup.get("replay_hits_prose")


_BLOCK_160 = ("(APIServer pid=12) INFO 09-15 18:02:58 [config.py:377] Setting attention block size to 160 tokens to "
              "ensure that attention page size is >= mamba page size.")


@pytest.mark.parametrize("lines, title", [
    (["Nemotron-Nano-9B-v2 never runs more than 14 requests at once even with max_num_seqs=256",
      "Comment from a colleague: Waiting is 0, so vLLM is not holding anything back."], "capped by the client"),
    (["MiniMax-M1 through Envoy: users see answers that repeat the first paragraph 2-3 times.", _BLOCK_160,
      "Envoy route had `retry_on: 5xx,reset` with per_try_timeout 15s."], "a proxy's retries"),
    (["Falcon-H1 community GPTQ: answers are really low quality.", _BLOCK_160, "The quant itself is the problem."],
     "the report's own finding"),
])
def test_causes_the_report_shows_outside_the_engine(lines, title):
    """Each reading of a quiet report names the cause the report shows: the client, the proxy, its own verdict."""
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and title in lead.title


@pytest.mark.parametrize("said", ["Someone on Slack said it's the chat template.", "Maybe the gateway is the problem?",
                                  "I thought the GPU was the culprit."])
def test_a_guess_or_hearsay_is_no_verdict(said):
    assert not facts_from_text(said).startup.get("cause_named_prose")


def test_a_wrong_output_a_change_outside_the_families_makes_right():
    lines = ["Jamba-1.5-Mini with ngram spec decode: Output is low quality and ends with '<|eot_id|>assistant' junk.",
             "vllm serve ai21labs/AI21-Jamba-1.5-Mini -tp 2 --chat-template ./templates/llama3.jinja "
             "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":3}'",
             "Dropping --chat-template (use the one in tokenizer_config.json) => normal answers."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other"
    # a run under other conditions (a cold cache) is no change the reporter made
    cold = lines[:2] + ["First request (cold cache) : correct answer"]
    assert "makes the output right" not in _analyze(cold).findings[0].basis


def test_float16_asked_by_the_command_for_a_model_right_in_bfloat16():
    lines = ["Qwen3.5-9B + MTP returns '!!!!!!' on long prompts, output is garbage.",
             "(APIServer pid=1) INFO 06-11 08:12:40 [utils.py:301] non-default args: {'model': 'Qwen/Qwen3.5-9B', "
             "'dtype': 'float16', 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
             "  --dtype bfloat16 (A10G supports bf16) -> fine"]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "float16 overflow" in lead.title


def test_a_quiet_reading_of_the_symptom_leads_a_crash_the_preflight_only_predicts():
    lines = ["Qwen3-Next-80B-A3B, MTP k=3, vLLM 0.17.0, 2x H200 TP2. Decode is slower with MTP than without.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --speculative-config "
             "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}' --max-num-seqs 8 "
             "--compilation-config '{\"max_cudagraph_capture_size\":64}'",
             "(EngineCore_DP0 pid=188) WARNING 04-02 12:00:41 [vllm.py:1454] Truncating max_cudagraph_capture_size to 32",
             "Under load (40 concurrent) the verify steps go eager."]
    an = analyze_text("\n".join(lines), "t.log")  # (with the pre-flight: it predicts the 0.17 GDN mixed-batch assert)
    assert an.findings[0].category == "cudagraph_shape"


def test_a_printed_mixed_step_places_a_conv_kernel_fault_without_a_config():
    w = "(Worker_TP0 pid=6231) ERROR 10-09 22:58:47 [multiproc_executor.py:671] "
    lines = ["Rerun with CUDA_LAUNCH_BLOCKING=1 (same traffic replay), tail:",
             w + '  File ".../vllm/model_executor/models/qwen3_next.py", line 452, in _forward',
             w + "    mixed_qkv_spec = causal_conv1d_update(",
             w + '  File ".../vllm/model_executor/layers/mamba/ops/causal_conv1d.py", line 1075, in causal_conv1d_update',
             w + "    _causal_conv1d_update_kernel[grid](",
             w + "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
             "I added a print before the call on the failing step:",
             "  num_prefills=1 num_decodes=0 num_spec_decodes=17  spec_state_indices_tensor[:, 0] = [ 212, 87, -1, 501 ]"]
    assert _analyze(lines).findings[0].category == "mixed_batch"


def test_a_slower_deeper_draft_on_a_flattening_indexer():
    lines = ["DeepSeek-V3.2-Exp on H200 x8, vllm 0.24.0: went from mtp k=1 to k=3 expecting more tok/s, got LESS.",
             "(Worker_TP0 pid=5521) INFO 06-02 11:03:17 [indexer.py:276] DSA indexer decode path: use_flattening=True "
             "(next_n=4, use_fp4_indexer_cache=False)"]
    assert _analyze(lines).findings[0].category == "spec_kernel_limit"


def test_grammar_compiles_that_stall_the_engine():
    lines = ["DeepSeek-V3-0324 + MTP: throughput collapses and Waiting grows when our extraction service is on.",
             "vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8 --speculative-config "
             "'{\"method\":\"mtp\",\"num_speculative_tokens\":1}' --structured-outputs-config '{\"backend\":\"xgrammar\"}'",
             "py-spy dump of EngineCore during the slow phase: main thread in xgrammar GrammarCompiler.compile_json_schema."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "grammar" in lead.title


def test_replayssm_state_buffers_under_drafts_are_the_state_class():
    """FlashInfer's ReplaySSM holds a Mamba layer's recurrent state per draft position: its refusals (buffer shorter
    than 1 + k, cache mode align) are how the state is kept under drafts, not an attention kernel's limit."""
    from vllm_diag.catalog import categorize

    site = {"file": "vllm/config/vllm.py", "function": "VllmConfig.validate_mamba_cached_kernel", "exc": "ValueError",
            "condition": "use_mamba_replayssm_spec and self.cache_config.replayssm_buffer_len < query_len",
            "message": "FlashInfer ReplaySSM speculative decoding requires --replayssm-buffer-len >= 1 + "
                       "num_speculative_tokens ({query_len}); got {self.cache_config.replayssm_buffer_len}"}
    assert categorize.categorize(site)[0] == "state_index"


def test_slower_with_deeper_drafts_told_with_emphasis():
    assert facts_from_text("DeepSeek-V3.2-Exp with MTP gets *slower* when I raise num_speculative_tokens above 1."
                           ).startup.get("spec_slower_prose")


def test_the_same_as_an_adjective_is_no_ab_outcome():
    assert not facts_from_text("without spec decode the same concurrency is smooth").startup.get(
        "faults_without_spec_prose")


def test_flags_of_a_clean_trial_in_an_ab_list_are_not_the_failing_setup():
    """'MTP on + --no-enable-prefix-caching : 0/200' is a trial that went well: the run that garbles has the cache on."""
    lines = ["vLLM 0.26.0, Qwen3.6-27B (GDN hybrid), MTP num_speculative_tokens=2, prefix caching on.",
             "No crash, but the second turn sometimes returns garbage.",
             "  MTP on  + prefix caching on : 23/200 garbled",
             "  MTP on  + --no-enable-prefix-caching : 0/200",
             "  MTP off + prefix caching on : 0/200",
             "(APIServer pid=91) INFO 04-02 15:20:11 [loggers.py:259] Engine 000: Running: 4 reqs, Waiting: 0 reqs, GPU KV "
             "cache usage: 3.0%, Prefix cache hit rate: 61.3%"]
    assert facts_from_text("\n".join(lines)).args.get("enable_prefix_caching") is not False
    assert _analyze(lines).findings[0].category == "state_index"


def test_slow_only_through_the_proxy():
    lines = ["GLM-4.5-Air with MTP: streaming feels slow/bursty in our chat UI.",
             "vllm serve zai-org/GLM-4.5-Air-FP8 -tp 4 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
             "curl -N directly against :8000 streams smoothly (~105 tok/s per stream). Through the ingress it is bursty."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "proxy" in lead.title


def test_prompt_logprobs_skip_the_prefix_cache():
    lines = ["Kimi-Linear prefix cache hit rate stays 0.0% during lm-eval, vLLM 0.32.0",
             "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 4 --enable-prefix-caching --trust-remote-code",
             "(APIServer pid=1) INFO 09-01 10:00:00 [loggers.py:259] Engine 000: Running: 256 reqs, Waiting: 811 reqs, GPU "
             "KV cache usage: 61.0%, Prefix cache hit rate: 0.0%",
             'lm-eval local-completions loglikelihood tasks send "echo": true, "logprobs": 1 for every request.']
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "prompt logprobs" in lead.title

