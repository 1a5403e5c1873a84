"""Post-mortem, round seventeen: a run told after a header inside one process id (a container restarted as pid 1,
"MTP off:" between the pasted metrics), and a batch told as requests finishing while others are mid-prefill. The
reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _stats(rate: str) -> str:
    return ("(APIServer pid=1) INFO 05-02 10:11:12 [loggers.py:302] Engine 000: Avg prompt throughput: 9000.1 tokens/s, "
            "Avg generation throughput: 800.2 tokens/s, Running: 30 reqs, Waiting: 1 reqs, GPU KV cache usage: 30.0%, "
            f"Prefix cache hit rate: {rate}%")


_ONE_PID_TWO_RUNS = [
    "Qwen3-Next with MTP: prefix cache hit rate stays at 0%, the shared system prompt is ~5k tokens. No error.",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
    "(APIServer pid=1) INFO 05-02 10:01:02 [interface.py:774] Setting attention block size to 544 tokens to ensure "
    "that attention page size is >= mamba page size.",
    _stats("0.0"), _stats("0.0"),
    "MTP off:",
    _stats("71.5"),
]


def test_a_header_between_pasted_metrics_parts_two_runs_of_one_pid():
    """Both runs are pid 1 (a container): the header "MTP off:" makes the lines after it another run, so the run with
    the drafts that never hit is told apart from the one that hits."""
    f = facts_from_text("\n".join(_ONE_PID_TWO_RUNS))
    assert f.startup["prefix_cache_zero_run_samples"] == 2
    lead = _analyze(_ONE_PID_TWO_RUNS).findings[0]
    assert lead.category == "prefix_cache_degraded" and lead.numbers["prefix_cache_hit_rate_samples"] == 2


def test_without_a_header_one_pid_is_one_run():
    lines = [x for x in _ONE_PID_TWO_RUNS if x != "MTP off:"]
    assert "prefix_cache_zero_run_samples" not in facts_from_text("\n".join(lines)).startup


def test_a_header_before_any_metrics_parts_nothing():
    lines = ["MTP on, prefix caching on:", *_ONE_PID_TWO_RUNS[1:5], _stats("40.0")]
    assert "prefix_cache_zero_run_samples" not in facts_from_text("\n".join(lines)).startup


def test_requests_finishing_while_others_are_mid_prefill_is_a_mixed_batch():
    f = facts_from_text("It happens when some requests finish while others are mid-prefill (chunked).")
    assert f.startup["mixed_prose"] == "while others are mid-prefill"
    assert not facts_from_text("The server was mid-prefill when the OOM killer fired.").startup.get("mixed_prose")


@pytest.mark.parametrize("said, words", [
    ("Crashes as soon as new prompts get admitted while others are still speculating.",
     "prompts get admitted while others are still speculating"),
    ("1200 prompts, so the scheduler is constantly mixing prefill chunks with spec decodes.",
     "mixing prefill chunks with spec decodes"),
])
def test_prompts_admitted_beside_drafting_requests_are_a_mixed_batch(said, words):
    assert facts_from_text(said).startup["mixed_prose"] == words


@pytest.mark.parametrize("said", [
    "We are mixing long and short prompts in one benchmark.",
    "The GPU idles while others are still downloading weights.",
])
def test_other_mixes_are_no_mixed_batch(said):
    assert not facts_from_text(said).startup.get("mixed_prose")
