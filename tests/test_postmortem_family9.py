"""Post-mortem, round nine. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

_API = "(APIServer pid=4410) INFO 01-15 09:31:49 "
_HIT_ZERO = [
    "Our Qwen3-Next deployment never reuses the shared system prompt: TTFT is the same for every request.",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --enable-prefix-caching",
    f"{_API}[utils.py:253] non-default args: {{'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
    "'enable_prefix_caching': True, 'tensor_parallel_size': 4}",
    f"{_API}[config.py:344] Hybrid or mamba-based model detected without support for prefix caching: disabling.",
    "(APIServer pid=4410) INFO 01-15 09:52:35 [loggers.py:237] Engine 000: Avg prompt throughput: 14877.0 tokens/s, "
    "Avg generation throughput: 410.1 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV cache usage: 28.2%, "
    "Prefix cache hit rate: 0.0%",
]
_REFUSAL = '"ValueError: --mamba-block-size can only be set with --enable-prefix-caching"'


def test_an_error_the_reporter_got_on_a_side_attempt_is_not_the_failure_the_report_is_about():
    """"I also tried X -> <error>" tells of another attempt: the report is about what its log shows (prefix caching
    forced off, a 0 % hit rate), not the refusal the side attempt met."""
    log = "\n".join(_HIT_ZERO + [f"I also tried --mamba-block-size 272 -> {_REFUSAL}, odd since I pass the flag."])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "prefix_cache_degraded"


def test_the_same_refusal_told_as_what_happened_is_still_the_failure():
    log = "\n".join(_HIT_ZERO[:3] + [f"Starting it with --mamba-block-size 272 fails at once: {_REFUSAL}"])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "other" and top.severity == "error"


# one phrase for each branch of the wrong-output words (prose._WRONG_OUTPUT), in the cases reporters write them
_WRONG_OUTPUT_PHRASES = [
    "the output is GARBLED", "outputs are gibberish", "Corrupted output on long prompts", "repeated phrases everywhere",
    "it switches language mid sentence", "the model answers nonsense", "the reply is unrelated to the conversation",
    "it answers a different question", "JSON output becomes invalid", "outputs fail json.loads", "invalid JSON",
    "generations fall into loops", "repeated fragments", "the output degrades", "it returns garbage",
    "word salad", "broken outputs", "answers come back as junk", "random junk", "junk tokens", "wrong answers",
    "incorrect outputs", "the accuracy gate fails", "gsm8k 0.71 < baseline", "outputs diverge from the eager run",
    "it degrades into repetition", "pure garbage", "completions are all garbage", "answers for cached prompts are garbage",
    "it switches to Chinese", "greedy with temperature 0 is not deterministic", "gets stuck in a loop",
    "repetitive output", "goes off the rails", "plausible but wrong.", "it repeats the question",
    "accuracy depends on concurrency", "then it starts looping", "and then loops forever", "repeats itself",
    "slightly-off answers", "MATH500 drops by ten points", "AIME25 collapsed", "a quality regression",
    "regression vs baseline",
]


def test_every_branch_of_the_wrong_output_words_passes_the_cheap_test_before_it():
    """The prose reader only runs the wrong-output regex on lines holding one of its hint words: a branch whose
    words are not among the hints would never be read."""
    from vllm_diag.postmortem.prose import _WRONG_OUTPUT

    for phrase in _WRONG_OUTPUT_PHRASES:
        assert _WRONG_OUTPUT.search(phrase), phrase
        log = f"Qwen3-Next with MTP (num_speculative_tokens=2) on vLLM 0.26.0: {phrase}"
        assert analyze_text(log, "t.log", use_preflight=False).facts.startup.get("wrong_output_prose"), phrase
