"""Attention-kernel limits under speculative decoding (family C) and their siblings, decided by what a check
compares and where vLLM was, and the numbers an operator quotes from such logs.

Every log here is written by these tests in vLLM's format (process prefixes, worker tracebacks, the scheduler
dump, kernel check text as the libraries print it); models, numbers and wrapping differ from any report.
"""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.reader import facts_from_text
from vllm_diag.render.json import encode

W = "(Worker_TP3 pid=771) ERROR 12-01 10:11:12 [multiproc_executor.py:840] "
SITE = "/opt/conda/lib/python3.11/site-packages/vllm/"


def _tb(frames, exc: str | None, prefix: str = W) -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}']
        if code:
            out.append(f"{prefix}    {code}")
    return out + ([f"{prefix}{exc}"] if exc else [])


def _top(log: str):
    fs = analyze_text(log, use_preflight=False).findings
    return fs[0] if fs else None


# ------------------------------------------------------------------------------------------------
# a planned query length per request (what speculative decoding sets) vs the step's
# ------------------------------------------------------------------------------------------------

PLANNED = ("ValueError: qo_len per request is fixed by the captured decode wrapper: it was planned for 3 "
           "tokens per request, this step has 5")


def test_a_wrapper_planned_for_one_query_length_is_a_kernel_limit_even_when_frozen_in_a_graph():
    log = "\n".join([
        "vllm serve mistralai/Mistral-Small-3.2-24B-Instruct-2506 --speculative-config "
        "'{\"method\": \"eagle3\", \"model\": \"some-org/eagle3-head\", \"num_speculative_tokens\": 2}' "
        "--compilation-config '{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}'",
        "[...]",
        PLANNED.replace("captured decode wrapper", "decode wrapper captured in a CUDA graph"),
    ])
    top = _top(log)
    assert top.category == "spec_kernel_limit", (top.category, top.basis)
    assert top.confidence in ("low", "medium") and top.basis


def test_a_capture_size_check_stays_a_cuda_graph_shape():
    log = ("AssertionError: the padded batch size 48 is not one of the CUDA graph capture sizes; the wrapper was "
           "planned for capture sizes [1, 2, 4, 8, 16, 32]")
    top = _top(log)
    assert top is None or top.category in ("cudagraph_shape", "other")


# ------------------------------------------------------------------------------------------------
# frames only: the drafter building metadata for its own (attention) layers
# ------------------------------------------------------------------------------------------------

DRAFT_FRAMES = [
    (SITE + "v1/worker/gpu_model_runner.py", 3391, "propose_draft_token_ids", None),
    (SITE + "v1/spec_decode/eagle.py", 402, "propose", None),
    (SITE + "v1/spec_decode/eagle.py", 733, "build_per_group_and_layer_attn_metadata", None),
]


def test_drafter_metadata_frames_without_an_exception_line_are_a_kernel_limit():
    lines = [f'  File "{p}", line {n}, in {fn}' for p, n, fn, _ in DRAFT_FRAMES]
    top = _top("\n".join(lines))
    assert top.category == "spec_kernel_limit" and top.confidence == "low"
    assert "drafter" in top.basis and top.missing_evidence


def test_target_metadata_frames_of_a_dense_model_without_spec_claim_nothing():
    lines = [f'  File "{SITE}v1/worker/gpu_model_runner.py", line 2410, in _build_attention_metadata',
             f'  File "{SITE}v1/attention/backends/flash_attn.py", line 301, in build']
    top = _top("\n".join(lines))
    assert top is None or top.category == "other"


def test_drafter_frames_of_a_hybrid_model_are_not_claimed_for_the_kernels():
    cmd = ("vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}' --enable-prefix-caching")
    lines = [f'  File "{p}", line {n}, in {fn}' for p, n, fn, _ in DRAFT_FRAMES]
    top = _top("\n".join([cmd, "[...]", *lines]))
    assert top is None or top.category != "spec_kernel_limit"
