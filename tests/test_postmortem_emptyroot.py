"""Crashes whose only error is vLLM's wrapper ("Worker failed with error ''", a bare EngineDeadError, "Engine core
initialization failed ... Failed core proc(s): {}"): the worker's own error never reached the log, so the class comes
from the configuration and the report's A/B tests, said as inferred (``low``), never as a known site."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _args(model: str, spec: str, extra: str = "") -> str:
    """vLLM's non-default args line (utils.py) for a served model with a speculative config."""
    return (f"(APIServer pid=1) INFO 05-14 09:12:03 [utils.py:233] non-default args: {{'model': '{model}', "
            f"{extra}'speculative_config': {spec}}}")


_DEAD = [
    "(EngineCore_DP0 pid=88) ERROR 05-14 09:40:41 [core.py:1140] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=88) ERROR 05-14 09:40:41 [core.py:1140] RuntimeError: Worker failed with error '', please "
    "check the stack trace above for the root cause",
    "(APIServer pid=1) ERROR 05-14 09:40:41 [async_llm.py:708] AsyncLLM output_handler failed.",
    "(APIServer pid=1) ERROR 05-14 09:40:41 [async_llm.py:708] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
    "encountered an issue. See stack trace (above) for the root cause.",
]

_HYBRID_NGRAM = _args("ibm-granite/granite-4.0-h-small",
                      "{'method': 'ngram', 'num_speculative_tokens': 5, 'prompt_lookup_max': 5}", "'max_num_seqs': 48, ")


def test_a_hybrid_with_ngram_drafts_that_dies_without_its_error_reads_as_a_mixed_batch_inferred():
    an = _analyze(["Granite 4.0-H with ngram speculation dies under load; the log has nothing else.", _HYBRID_NGRAM]
                  + _DEAD + ["Without the speculative config it has run for a week: fine."])
    lead = an.findings[0]
    assert lead.category == "mixed_batch" and lead.confidence == "low"
    assert "worker's own error is not in the log" in lead.basis
    assert any("worker's own traceback" in m for m in lead.missing_evidence)
    assert lead.numbers["num_speculative_tokens"] == 5


def test_the_same_crash_whose_ab_tests_clear_the_drafts_is_a_near_miss():
    an = _analyze(["Granite 4.0-H dies under load, empty error.", _HYBRID_NGRAM] + _DEAD
                  + ["- no speculative config: still crashes",
                     "- --disable-custom-all-reduce: no more crashes in 3 days"])
    assert an.findings[0].category == "other" and an.findings[0].rule == "near_miss"
    assert not [f for f in an.findings if f.category != "other" and f.severity == "error"]


def test_a_sparse_indexer_model_at_three_drafts_reads_as_the_kernel_limit_with_next_n():
    spec = "{'method': 'deepseek_mtp', 'num_speculative_tokens': 3}"
    an = _analyze(["DeepSeek-V3.2-Exp dies on the first batch with k=3 on H100; k=1 runs.",
                   _args("deepseek-ai/DeepSeek-V3.2-Exp", spec, "'tensor_parallel_size': 8, ")] + _DEAD[2:])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.confidence == "low"
    assert lead.numbers["next_n"] == 4


def test_a_dense_model_with_drafts_gets_no_family_from_an_empty_wrapper():
    spec = "{'method': 'eagle3', 'model': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', 'num_speculative_tokens': 3}"
    an = _analyze(["Llama 3.1 8B + EAGLE3 dies after an hour.", _args("meta-llama/Llama-3.1-8B-Instruct", spec)]
                  + _DEAD)
    assert all(f.category == "other" for f in an.findings if f.severity == "error")


def test_a_hybrid_target_with_a_separate_draft_that_fails_to_start_reads_as_the_kv_layout():
    spec = "{'method': 'draft_model', 'model': 'tiiuae/Falcon-H1-1.5B-Instruct', 'num_speculative_tokens': 3}"
    an = _analyze([
        _args("tiiuae/Falcon-H1-7B-Instruct", spec),
        "(Worker pid=71) INFO 05-14 09:13:40 [gpu_worker.py:424] Available KV cache memory: 21.4 GiB",
        "(EngineCore pid=60) ERROR 05-14 09:13:41 [core.py:1136] EngineCore failed to start.",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    lead = an.findings[0]
    assert lead.category == "kv_page_size" and lead.confidence == "low"
    assert "Available KV cache memory" in lead.basis


def test_a_worker_the_oom_killer_ended_is_not_read_from_the_configuration():
    an = _analyze(["Granite 4.0-H with ngram dies.", _HYBRID_NGRAM,
                   "(EngineCore_DP0 pid=88) ERROR 05-14 09:40:40 [multiproc_executor.py:232] Worker proc VllmWorker-0 "
                   "died unexpectedly, shutting down executor. (killed by SIGKILL)"] + _DEAD)
    assert not [f for f in an.findings if f.category == "mixed_batch"]
