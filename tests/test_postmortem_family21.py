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
