"""Failure families decided from the configuration where the log gives no failing frame: what the evidence allows,
how sure the finding is, and which other family the same evidence leaves open.

Every log here is written by the tests in vLLM's format (process prefixes, the engine's traceback, the serve
command); models, numbers and paths are the tests' own.
"""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

W = "(Worker_TP0 pid=5120) ERROR 11-26 10:02:11 [multiproc_executor.py:873] "


def _first(log: str):
    res = analyze_text(log, "t.log")
    fs = [f for f in res.findings if f.severity == "error"]
    assert fs, "no finding"
    assert fs[0].confidence in ("high", "medium", "low") and fs[0].basis
    return fs[0]


def _ima(cmd: str) -> str:
    return "\n".join([
        cmd,
        f"{W}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"{W}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        f"{W}For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    ])


def test_async_fault_of_a_hybrid_with_drafts_names_the_class_it_cannot_rule_out():
    f = _first(_ima("vllm serve Qwen/Qwen3.5-9B --speculative-config '{\"method\": \"mtp\", "
                    "\"num_speculative_tokens\": 2}' --enable-prefix-caching"))
    assert f.category == "state_index" and f.confidence == "low"
    assert "mixed-batch class" in f.basis and "num_accepted - 1 = -1" in f.basis


def test_async_fault_of_a_hybrid_with_drafts_without_prefix_caching_also_names_it():
    f = _first(_ima("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", "
                    "\"num_speculative_tokens\": 3}'"))
    assert f.category == "state_index" and f.confidence == "low"
    assert "mixed-batch class" in f.basis


def test_async_fault_of_a_dense_model_with_drafts_stays_other():
    f = _first(_ima("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\": \"eagle3\", "
                    "\"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'"))
    assert f.category == "other"
