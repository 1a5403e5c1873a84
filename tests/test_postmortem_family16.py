"""Post-mortem, round sixteen: wrong output said in more languages, "no speedup" as the drafts' slowness, answers
"cut after" a few words, and a load that fills vLLM's truncated largest CUDA graph exactly. The reports are written
here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


@pytest.mark.parametrize("said", [
    "Avec MTP + prefix caching, les réponses deviennent incohérentes dès la deuxième requête.",
    "Deuxième requête avec le même préfixe : charabia.",
    "Con MTP l'output è corrotto dopo la seconda richiesta.",
    "Met MTP geeft het model onzin terug.",
    "Z MTP model zwraca bełkot.",
    "MTP açıkken model anlamsız cevaplar veriyor.",
    "Bật MTP thì câu trả lời vô nghĩa.",
    "Dengan MTP jawaban jadi kacau.",
    "З MTP модель видає сміття.",
])
def test_wrong_output_in_more_languages(said):
    assert facts_from_text(said).startup.get("wrong_output_prose"), said


def test_a_sentence_without_a_verdict_on_the_output_is_not_wrong_output():
    assert not facts_from_text("Nous utilisons MTP avec prefix caching depuis deux semaines.").startup.get(
        "wrong_output_prose")


def test_no_speedup_with_drafts_is_the_drafts_slowness():
    f = facts_from_text("EAGLE3 gives almost no speedup on Llama-3.1-8B, vLLM 0.17.0, 1x A100 80GB")
    assert f.startup["spec_slower_prose"] == "EAGLE3 gives almost no speedup"


_EAGLE_TRUNCATED = [
    "EAGLE3 gives almost no speedup on Llama-3.1-8B, vLLM 0.17.0, 1x A100 80GB",
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 8 \\",
    "  --speculative-config '{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\","
    "\"num_speculative_tokens\":5}' --compilation-config '{\"max_cudagraph_capture_size\":64}'",
    "(EngineCore_DP0 pid=151) WARNING 03-02 13:11:58 [vllm.py:1454] Truncating max_cudagraph_capture_size to 48",
    "bench (8 concurrent, 1k in / 512 out): no spec 612 tok/s, eagle3 k=5 655 tok/s",
]


def test_a_load_that_fills_the_truncated_largest_graph_is_the_capture_size_cliff():
    """8 requests x (1 + 5) = 48 tokens, the largest graph vLLM kept: a step with a prefill chunk beside the full
    decode step no longer fits."""
    lead = _analyze(_EAGLE_TRUNCATED).findings[0]
    assert lead.category == "cudagraph_shape" and lead.confidence == "low"
    assert "fill the largest graph, 48" in lead.title and lead.numbers["decode_tokens_at_load"] == 48


def test_a_load_below_the_largest_graph_is_no_cliff():
    lines = [line.replace("8 concurrent", "4 concurrent").replace("--max-num-seqs 8", "--max-num-seqs 4")
             for line in _EAGLE_TRUNCATED]
    assert not any(f.category == "cudagraph_shape" for f in _analyze(lines).findings)


def test_a_graph_cut_by_the_step_budget_is_the_budgets_reading():
    lines = [line.replace("--max-num-seqs 8", "--max-num-seqs 8 --max-num-batched-tokens 48")
             for line in _EAGLE_TRUNCATED]
    assert not any(f.category == "cudagraph_shape" for f in _analyze(lines).findings)


def test_answers_cut_after_a_few_words_at_the_token_cap_are_a_near_miss():
    an = _analyze([
        "AI21-Jamba-Mini-1.7 + ngram on 2x A100, vLLM 0.24.0. Every answer from /v1/completions is cut after a few words.",
        '  "finish_reason": "length",',
        "(EngineCore_DP0 pid=141) INFO 01-07 12:01:49 [interface.py:774] Setting attention block size to 1424 tokens to "
        "ensure that attention page size is >= mamba page size.",
    ])
    assert [(f.category, f.rule) for f in an.findings][:1] == [("other", "near_miss")]
    assert "token cap" in an.findings[0].title


@pytest.mark.parametrize("said", [
    "Qwen3.5-27B mit MTP + Prefix Caching liefert ab dem zweiten Turn teilweise Müll.",
    "Kein Crash, nur falsche Ausgabe.",
    "Beispiel Antwort im 2. Turn: `Die Funktion gibt die Liste zurück und und und sortiert die Elemente`",
])
def test_wrong_output_in_german_and_a_quoted_answer_that_repeats_a_word(said):
    assert facts_from_text(said).startup.get("wrong_output_prose"), said


def test_a_row_of_repeated_numbers_is_no_repeated_answer():
    assert not facts_from_text("the counters read 0 0 0 0 after the restart").startup.get("wrong_output_prose")


_GRANITE_PC = [
    "(APIServer pid=1) INFO 07-22 02:14:51 [utils.py:247] non-default args: {'model': 'ibm-granite/granite-4.0-h-small', "
    "'max_model_len': 65536, 'max_num_seqs': 128, 'enable_prefix_caching': True}",
    "(APIServer pid=1) INFO 07-22 02:15:00 [config.py:625] Mamba cache mode is set to 'align' for "
    "GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
    "(EngineCore pid=88) INFO 07-22 02:16:12 [interface.py:918] Setting attention block size to 400 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(APIServer pid=1) INFO 07-22 03:02:40 [loggers.py:276] Engine 000: Avg prompt throughput: 3120.5 tokens/s, Avg "
    "generation throughput: 1874.2 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 11.9%, Prefix cache "
    "hit rate: 38.5%",
]


def test_a_slowness_the_prefix_cache_granularity_does_not_speak_to_is_unexplained_first():
    """A hybrid's raised block is a fact of the configuration; on a log whose cache hits and a report about decode
    throughput it is no cause: the symptom is said to be unexplained, and no granularity warning is raised (the
    cache hits 38.5 %)."""
    an = _analyze(["Node gpu-17 delivers ~35% lower", "throughput and higher TPOT than the others."] + _GRANITE_PC)
    assert an.findings[0].rule == "unexplained_symptom"
    assert "prefix_cache_granularity" not in [f.rule for f in an.findings]
    # a report about the prefix hits is what the granularity answers
    an = _analyze(["TTFT is much slower than expected: ~3 s for the first token."] + _GRANITE_PC)
    assert an.findings[0].rule == "prefix_cache_granularity"


def test_throttled_gpus_are_a_platform_near_miss():
    an = _analyze(["Node gpu-17 delivers ~35% lower throughput than the others."] + _GRANITE_PC + [
        "        SW Power Cap                      : Active",
        "        HW Slowdown                       : Not Active",
    ])
    lead = an.findings[0]
    assert (lead.category, lead.rule) == ("other", "near_miss") and "throttled GPUs" in lead.title
    # "Not Active" alone is no throttling
    calm = _analyze(["Node gpu-17 delivers ~35% lower throughput than the others."] + _GRANITE_PC + [
        "        SW Power Cap                      : Not Active"])
    assert calm.findings[0].rule != "near_miss"


def test_answers_cut_at_the_checkpoints_generation_config_cap():
    an = _analyze([
        "Outputs always stop at exactly 512 tokens (vLLM 0.32.0, fine-tuned Falcon-H1-7B)",
        "(APIServer pid=2231) WARNING 11-02 10:33:05 [model.py:1893] Default vLLM sampling parameters have been "
        "overridden by the model's `generation_config.json`: `{'repetition_penalty': 1.1, 'temperature': 0.3, "
        "'max_tokens': 512}`. If this is not intended, please relaunch vLLM instance with `--generation-config vllm`.",
        'response: {"choices":[{"finish_reason":"length"}],"usage":{"completion_tokens":512}}',
    ])
    lead = an.findings[0]
    assert (lead.category, lead.rule) == ("other", "near_miss") and lead.numbers["max_tokens"] == 512
    assert "generation_config.json" in lead.basis


@pytest.mark.parametrize("said", [
    "My guess is the metadata side can't deal with one request in MTP-decode and another one in prefill in the same batch.",
    "the chunked prefill of the new prompt still overlaps the decode of the first one",
    "send a second request with a ~3k token prompt while the first is still decoding",
    "crashes as soon as a 2nd request comes in mid-generation",
])
def test_a_prefill_beside_decodes_told_in_the_reporters_words_is_a_mixed_batch(said):
    assert facts_from_text(said).startup.get("mixed_prose"), said


def test_a_wrapper_only_crash_whose_report_tells_of_a_prefill_beside_decodes_is_the_mixed_batch():
    an = _analyze([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 4 --no-enable-prefix-caching \\",
        "  --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "(EngineCore pid=377) ERROR 06-02 11:30:11 [core.py:1332] RuntimeError: Worker failed with error '', please "
        "check the stack trace above for the root cause",
        "Repro: start one long generation, then send a second request while the first is still decoding.",
        "- MTP off -> fine at 32 concurrent",
    ])
    lead = an.findings[0]
    assert lead.category == "mixed_batch" and lead.confidence == "low"


@pytest.mark.parametrize("said", [
    "Senza MTP crasha ancora.", "Zonder MTP crasht het nog steeds.", "Bez MTP nadal się wywala.", "Tanpa MTP masih crash.",
    "Без MTP всё равно падает.", "Tắt MTP vẫn lỗi.", "MTP olmadan da aynı hata.", "Utan MTP kraschar den fortfarande.",
])
def test_the_fault_without_the_drafts_in_more_languages(said):
    assert facts_from_text(said).startup.get("faults_without_spec_prose"), said


@pytest.mark.parametrize("said", [
    "Senza MTP funziona.", "Zonder MTP werkt het nog steeds.", "Bez MTP działa normalnie.", "Tanpa MTP tetap lancar.",
    "Без MTP работает нормально.", "Tắt MTP thì chạy bình thường.", "MTP olmadan sorunsuz çalışıyor.",
])
def test_fine_without_the_drafts_in_more_languages_ties_them_and_does_not_clear_them(said):
    s = facts_from_text(said).startup
    assert s.get("spec_tied_prose") and not s.get("faults_without_spec_prose"), said


@pytest.mark.parametrize("said, fact", [
    ("Con MTP è più lento.", "slow_prose"), ("Met MTP is het langzamer.", "slow_prose"),
    ("Z MTP jest wolniej.", "slow_prose"), ("MTP ile çok yavaş.", "slow_prose"), ("Bật MTP thì chậm hơn.", "slow_prose"),
    ("Dengan MTP jadi lambat.", "slow_prose"), ("З MTP повільніше.", "slow_prose"),
    ("Le risposte sono troncate.", "truncated_prose"), ("Antwoorden worden afgekapt.", "truncated_prose"),
    ("Odpowiedzi są ucięte.", "truncated_prose"), ("Jawaban terpotong.", "truncated_prose"),
    ("Відповіді обриваються.", "truncated_prose"),
])
def test_slowness_and_truncation_in_more_languages(said, fact):
    assert facts_from_text(said).startup.get(fact), said


def test_a_fault_launched_by_custom_all_reduce_under_synchronous_launches_is_outside_the_families():
    """CUDA_LAUNCH_BLOCKING=1 makes the launching frame the faulting kernel's: a device communicator's (custom
    all-reduce) is a collective, whatever the MLA model and its drafts."""
    w = "(Worker_TP3 pid=5120) ERROR 05-09 05:02:44 [multiproc_executor.py:1011] "
    an = _analyze([
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
        "Reran with `CUDA_LAUNCH_BLOCKING=1`:",
        w + "Traceback (most recent call last):",
        w + '  File ".../vllm/distributed/device_communicators/cuda_communicator.py", line 201, in all_reduce',
        w + "    out = ca_comm.custom_all_reduce(input_)",
        w + '  File ".../vllm/distributed/device_communicators/custom_all_reduce.py", line 459, in custom_all_reduce',
        w + "    return self.all_reduce(input, registered=False)",
        w + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    lead = an.findings[0]
    assert lead.category == "other" and "custom_all_reduce" in lead.basis


def test_drafts_off_that_also_crashed_is_the_fault_without_them():
    said = facts_from_text("- MTP off, custom AR on  -> also crashed once (took 3h)").startup
    assert said["faults_without_spec_prose"].startswith("MTP off")


def test_cut_off_answers_is_truncation():
    assert facts_from_text("Granite-4.0-H with ngram returns cut-off answers.").startup.get("truncated_prose")


_NOTE_560 = ("(EngineCore_DP0 pid=98) INFO 02-27 10:05:44 [config.py:491] Setting attention block size to 528 tokens to "
             "ensure that attention page size is >= mamba page size.")


def test_a_timestamp_as_the_first_line_of_the_system_prompt_is_the_clients_prefix():
    an = _analyze([
        "Prefix cache hit rate is ~0% on Qwen3-Next with MTP, even though every request shares a 6k-token system prompt.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --enable-prefix-caching --mamba-cache-mode align",
        "(APIServer pid=1) INFO 06-02 09:14:30 [loggers.py:259] Engine 000: Avg prompt throughput: 9120.4 tokens/s, "
        "Running: 18 reqs, Waiting: 0 reqs, GPU KV cache usage: 22.1%, Prefix cache hit rate: 0.4%",
        'Our gateway template puts "Current time: 2026-06-02T09:14:30.118Z" as the FIRST line of the system prompt.',
    ])
    assert (an.findings[0].category, an.findings[0].rule) == ("other", "near_miss")
    assert "per-request value" in an.findings[0].title


def test_answers_cut_at_a_short_context_window_without_max_tokens():
    an = _analyze([
        "Falcon-H1-34B + draft model: answers cut off mid-sentence (v0.17.0, 2x L40S)",
        "vllm serve tiiuae/Falcon-H1-34B-Instruct -tp 2 --max-model-len 4096",
        _NOTE_560,
        'Responses stop at random places, finish_reason is "length". The client never sets max_tokens.',
    ])
    lead = an.findings[0]
    assert (lead.category, lead.rule) == ("other", "near_miss") and "context window" in lead.title


def test_another_models_tokenizer_is_a_near_miss_of_garbled_output():
    lines = [
        "Zamba2-7B-Instruct outputs mojibake after migrating to new deploy scripts (v0.11.0)",
        "python -m vllm.entrypoints.openai.api_server --model Zyphra/Zamba2-7B-instruct --tokenizer "
        "mistralai/Mistral-7B-Instruct-v0.3 --max-model-len 8192 --enable-prefix-caching",
        _NOTE_560,
    ]
    lead = _analyze(lines).findings[0]
    assert (lead.category, lead.rule) == ("other", "near_miss") and "tokenizer" in lead.title
    # the model's own organisation and family (a tokenizer fix-up repo of the same model) says nothing
    same = [lines[0], lines[1].replace("mistralai/Mistral-7B-Instruct-v0.3", "Zyphra/Zamba2-7B-instruct-tok"), lines[2]]
    assert _analyze(same).findings[0].rule != "near_miss"


def test_drafts_rejected_on_random_prompts_are_the_benchmarks_data():
    lines = [
        "DeepSeek-V3-0324, 8x H200, vLLM 0.17.0, MTP k=1 - spec decode makes things slower in our benchmark?",
        "vllm bench serve --model deepseek-ai/DeepSeek-V3-0324 --dataset-name random --random-input-len 1024",
        "(APIServer pid=1) INFO 12-03 20:10:05 [utils.py:263] non-default args: {'model': 'deepseek-ai/DeepSeek-V3-0324', "
        "'tensor_parallel_size': 8, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}}",
        "(APIServer pid=1) INFO 12-03 20:31:17 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 1.07, "
        "Accepted throughput: 193.1 tokens/s, Drafted throughput: 2794.0 tokens/s, Accepted: 1931 tokens, Drafted: 27940 "
        "tokens, Per-position acceptance rate: 0.069, Avg Draft acceptance rate: 6.9%",
    ]
    lead = _analyze(lines).findings[0]
    assert (lead.category, lead.rule) == ("other", "near_miss") and "random prompts" in lead.title
    # the same slowness on real traffic is not the benchmark's
    real = [line.replace("--dataset-name random", "--dataset-name sharegpt") for line in lines]
    assert _analyze(real).findings[0].rule != "near_miss"


def test_vllms_choice_of_an_mla_backend_makes_the_model_mla():
    """A model name the tool does not know as MLA (GLM-4.7-Flash) that vLLM runs on TRITON_MLA: slower with drafts is
    the MLA decode backend's query-length limit, not the large batch's compute."""
    an = _analyze([
        "[Performance]: MTP makes GLM-4.7-Flash slower on A100 (k=3 slower than k=1 slower than no spec)",
        "vllm serve zai-org/GLM-4.7-Flash -tp 2 --max-num-seqs 64 \\",
        "  --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        "(Worker_TP0 pid=20840) INFO 07-08 14:20:58 [cuda.py:481] Using TRITON_MLA attention backend out of potential "
        "backends: ['TRITON_MLA'].",
        "(APIServer pid=20690) INFO 07-08 14:31:17 [loggers.py:262] Engine 000: Avg prompt throughput: 3877.1 tokens/s, "
        "Avg generation throughput: 912.6 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 11.2%, "
        "Prefix cache hit rate: 0.0%",
    ])
    assert an.findings[0].category == "spec_kernel_limit"
    assert "TRITON_MLA" in an.findings[0].basis


def test_drafts_off_and_prefix_caching_off_still_garbage_clear_the_families():
    an = _analyze([
        "Qwen3.5-27B with MTP gives garbage after the first few tokens. I tried:",
        "- no `--speculative-config` -> still garbage",
        "- `--no-enable-prefix-caching` -> still garbage",
        "- `--tensor-parallel-size 2` + `--disable-custom-all-reduce` -> correct output",
        "vllm serve Qwen/Qwen3.5-27B --tensor-parallel-size 4 --speculative-config '{\"method\":\"mtp\","
        "\"num_speculative_tokens\":2}'",
        "(EngineCore pid=402) INFO 04-08 08:15:21 [config.py:451] Setting attention block size to 1056 tokens to ensure "
        "that attention page size is >= mamba page size.",
    ])
    assert (an.findings[0].category, an.findings[0].rule) == ("other", "near_miss")


@pytest.mark.parametrize("said, fact", [
    ("DeepSeek-V3.2-Exp 开 MTP,改成 3 反而比不开 MTP 还慢", "slow_prose"),
    ("Nincs összeomlás, de a válaszok egy része értelmetlen.", "wrong_output_prose"),
    ('2. kérés: "köteles köteles a bérlő bérlő 4.2 4.2 pontja pontja..."  (hibás)', "wrong_output_prose"),
])
def test_more_words_for_the_symptoms(said, fact):
    assert facts_from_text(said).startup.get(fact), said


def test_a_mixed_batch_told_over_a_hard_wrapped_sentence():
    f = facts_from_text("- The batch right before the crash had 5 requests with\n"
                        "  0 drafts (just finished prefill) and 19 requests with 3 drafts in the same decode step.")
    assert f.startup.get("mixed_prose")


def test_an_mla_start_whose_worker_ended_in_a_bare_assert_told_in_prose_is_the_kernel_limit():
    e = "(EngineCore_DP0 pid=512) ERROR 10-14 16:45:47 [core.py:708] "
    an = _analyze([
        "DeepSeek-V3.1 with MTP dies while capturing CUDA graphs. Without `--speculative-config` it starts too.",
        "vllm serve deepseek-ai/DeepSeek-V3.1 --tensor-parallel-size 8 \\",
        "  --speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'",
        e + "EngineCore failed to start.",
        e + "RuntimeError: Worker failed with error '', please check the stack trace above for the root cause",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "The worker stack trace just ends in `AssertionError` with no text, I didn't copy it.",
    ])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.numbers["next_n"] == 2


def test_a_prompt_chunked_in_while_the_others_verify_drafts_is_a_mixed_batch():
    f = facts_from_text("It always dies in the step where a new prompt gets chunked in while the other 22 are in MTP verify.")
    assert f.startup.get("mixed_prose")


def test_without_the_drafts_it_starts_ties_them():
    assert facts_from_text("Without `--speculative-config` it starts too (with graphs).").startup.get("spec_tied_prose")
    assert not facts_from_text("Without MTP it starts but crashes later.").startup.get("spec_tied_prose")


def test_a_bare_assert_whose_traceback_was_cut_reads_like_the_wrapper():
    """A message-less AssertionError with no frame of the module that asserted (the report cut them): no site to
    match, so the class comes from the configuration -- an EAGLE3 draft with its own KV pages on a hybrid at start."""
    e = "(EngineCore pid=4290) ERROR 03-02 10:16:41 [core.py:1136] "
    an = _analyze([
        "Server dies right after profiling. Same command without --speculative-config works.",
        "vllm serve Qwen/Qwen3.5-27B --tensor-parallel-size 2 \\",
        "  --speculative-config '{\"method\":\"eagle3\",\"model\":\"/models/q35-27b-eagle3\",\"num_speculative_tokens\":3}'",
        "(Worker_TP0 pid=4412) INFO 03-02 10:15:31 [interface.py:604] Setting attention block size to 800 tokens to "
        "ensure that attention page size is >= mamba page size.",
        e + "EngineCore failed to start.",
        e + "Traceback (most recent call last):",
        e + '  File ".../vllm/v1/engine/core.py", line 261, in _initialize_kv_caches',
        e + "    kv_cache_configs = get_kv_cache_configs(",
        e + "[... cut, rest is vllm internals ...]",
        e + "AssertionError",
    ])
    lead = an.findings[0]
    assert lead.category == "kv_page_size" and "bare assert" in lead.title


@pytest.mark.parametrize("said", [
    "2ターン目以降の応答が途中から崩れます。",
    "同じ単語の繰り返しや、前の会話の断片が混ざった出力になる。",
    "开了 MTP 之后输出重复。",
    "같은 단어 반복이 계속 나옵니다.",
])
def test_wrong_output_in_japanese_chinese_and_korean_words(said):
    assert facts_from_text(said).startup.get("wrong_output_prose"), said
