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
