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


_START_FAILED = [
    "(EngineCore pid=90) ERROR 04-14 09:15:07 [core.py:1136] EngineCore failed to start.",
    "(EngineCore pid=90) ERROR 04-14 09:15:07 [core.py:1136] RuntimeError: Worker failed with error '', please check the "
    "stack trace above for the root cause",
    "(EngineCore pid=90) INFO 04-14 09:15:08 [multiproc_executor.py:744] Parent process exited, terminating worker queues",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


def test_an_empty_relayed_error_is_not_read_as_the_text_after_it():
    an = _analyze(_START_FAILED)
    assert an.facts.root.message.startswith("Worker failed with error ''")


def test_a_hybrid_with_mtp_that_fails_to_start_only_above_one_draft_reads_as_the_kv_layout():
    spec = "{'method': 'mtp', 'num_speculative_tokens': 2}"
    an = _analyze(["Qwen3-Next + MTP dies during startup as soon as I go to 2 speculative tokens. With 1 token it boots "
                   "fine.", _args("Qwen/Qwen3-Next-80B-A3B-Instruct", spec)] + _START_FAILED)
    assert an.facts.startup["fewer_drafts_work"] == 1
    lead = an.findings[0]
    assert lead.category == "kv_page_size" and lead.confidence == "low"


def test_a_hybrid_with_mtp_that_fails_to_start_with_nothing_tying_it_to_the_drafts_gets_no_family():
    spec = "{'method': 'mtp', 'num_speculative_tokens': 2}"
    an = _analyze(["Qwen3-Next + MTP dies during startup.", _args("Qwen/Qwen3-Next-80B-A3B-Instruct", spec)]
                  + _START_FAILED)
    assert all(f.category == "other" for f in an.findings if f.severity == "error")


def test_a_sparse_indexer_start_cancelled_above_one_draft_reads_as_the_kernel_limit():
    spec = "{'method': 'mtp', 'num_speculative_tokens': 3}"
    an = _analyze([
        "- num_speculative_tokens 1  -> starts, works", "- num_speculative_tokens 3  -> dies right after the model load",
        _args("deepseek-ai/DeepSeek-V3.2", spec, "'tensor_parallel_size': 8, "),
        "(EngineCore_DP0 pid=2190) ERROR 03-21 02:17:44 [core.py:1100] EngineCore failed to start.",
        "(EngineCore_DP0 pid=2190) ERROR 03-21 02:17:44 [core.py:1100] Traceback (most recent call last):",
        "(EngineCore_DP0 pid=2190) ERROR 03-21 02:17:44 [core.py:1100]   File \"/usr/local/lib/python3.12/dist-packages/"
        "vllm/distributed/device_communicators/shm_broadcast.py\", line 537, in acquire_read",
        "(EngineCore_DP0 pid=2190) ERROR 03-21 02:17:44 [core.py:1100]     raise RuntimeError(\"cancelled\")",
        "(EngineCore_DP0 pid=2190) ERROR 03-21 02:17:44 [core.py:1100] RuntimeError: cancelled",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.numbers["next_n"] == 4


def test_an_nccl_watchdog_timeout_before_the_wrapper_is_not_read_from_the_configuration():
    spec = "{'method': 'deepseek_mtp', 'num_speculative_tokens': 1}"
    an = _analyze([
        _args("deepseek-ai/DeepSeek-V3", spec),
        "[rank11]:[E1104 03:12:55.120311 ProcessGroupNCCL.cpp:632] [Rank 11] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=918244, OpType=ALLREDUCE, NumelIn=14336, NumelOut=14336, Timeout(ms)=600000) ran for "
        "600043 milliseconds before timing out.",
        "(EngineCore_DP0 pid=812) ERROR 11-04 03:13:01 [core.py:710] EngineCore encountered a fatal error.",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
        "root cause."])
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def test_a_hybrid_with_an_eagle_head_that_fails_to_start_empty_reads_as_the_kv_layout():
    spec = "{'method': 'eagle3', 'model': '/models/qwen35-eagle3', 'num_speculative_tokens': 3}"
    an = _analyze(["Qwen3.5 starts fine alone; with our EAGLE3 head it dies at start with an empty error.",
                   _args("Qwen/Qwen3.5-27B", spec)] + _START_FAILED)
    lead = an.findings[0]
    assert lead.category == "kv_page_size" and "attention layers of its own" in lead.basis


def test_a_hybrid_whose_kv_manager_vllm_disabled_and_that_fails_to_start_empty_reads_as_the_kv_layout():
    an = _analyze([
        _args("ibm-granite/granite-4.0-h-small", "None"),
        "(EngineCore_DP0 pid=212) WARNING 01-21 14:04:40 [kv_cache_utils.py:1163] Hybrid KV cache manager is disabled "
        "for this hybrid model, This means we do not enable any optimizations for saving KV cache memory.",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "| 4 | yes + `--no-disable-hybrid-kv-cache-manager` | ValueError at startup |"])
    lead = an.findings[0]
    assert lead.category == "kv_page_size" and "hybrid KV cache manager is disabled" in lead.basis


def test_a_cancelled_queue_beside_an_xid_13_on_a_hybrid_with_drafts_and_prefix_caching_is_the_state_class():
    spec = "{'method': 'mtp', 'num_speculative_tokens': 2}"
    an = _analyze([
        _args("Qwen/Qwen3.5-122B-A10B-FP8", spec, "'enable_prefix_caching': True, "),
        "(EngineCore pid=187) ERROR 09-02 11:41:13 [core.py:1332] EngineCore encountered a fatal error.",
        "(EngineCore pid=187) ERROR 09-02 11:41:13 [core.py:1332] RuntimeError: cancelled",
        "dmesg: NVRM: Xid (PCI:0000:9b:00): 13, pid=4242, name=VLLM::Worker_TP, Graphics Exception: ESR 0x50dc30=0x0",
        "| 2 tokens | off | stable |"])
    assert an.findings[0].category in ("state_index", "mixed_batch")
    assert an.findings[0].rule == "async_fault"


def test_a_reporters_sentence_about_the_dead_worker_is_not_an_error_line_of_the_run():
    spec = "{'method': 'mtp', 'num_speculative_tokens': 3}"
    an = _analyze([
        "- num_speculative_tokens=1 -> ran 3 hours without a problem", "- 3 -> dies every time",
        _args("deepseek-ai/DeepSeek-V3.2-Exp", spec, "'tensor_parallel_size': 8, "),
        "(EngineCore_DP0 pid=412) ERROR 03-11 14:09:51 [multiproc_executor.py:253] Worker proc VllmWorker-3 died "
        "unexpectedly, shutting down executor.",
        "(EngineCore_DP0 pid=412) ERROR 03-11 14:09:51 [core.py:949] RuntimeError: cancelled",
        "The worker that died printed nothing (stdout of that rank was already closed?). dmesg is clean, no Xid."])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.confidence == "low"


def test_a_hybrid_with_an_fp8_kv_cache_that_fails_to_start_empty_reads_as_the_kv_layout():
    an = _analyze([_args("tiiuae/Falcon-H1-34B-Instruct", "None", "'kv_cache_dtype': 'fp8', ")] + _START_FAILED)
    assert an.findings[0].category == "kv_page_size" and "kv-cache-dtype fp8" in an.findings[0].basis
