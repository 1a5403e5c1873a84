"""Post-mortem, round seven. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

A = "(APIServer pid=1) INFO 05-21 23:18:43 "
W = "(Worker_TP3 pid=311) ERROR 05-21 23:19:30 [multiproc_executor.py:772] "
PKG = "/usr/local/lib/python3.12/dist-packages/vllm"


def _fp8_block_log() -> str:
    return "\n".join([
        f"{A}[utils.py:253] non-default args: {{'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct-FP8', "
        "'tensor_parallel_size': 8, 'block_size': 16}",
        f"{A}[interface.py:606] Setting attention block size to 544 tokens to ensure that attention page size is "
        ">= mamba page size.",
        f"{A}[interface.py:630] Padding mamba page size by 1.49% to ensure that mamba page size and attention page "
        "size are exactly equal.",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/model_executor/layers/linear.py", line 525, in __init__',
        f"{W}    self.quant_method.create_weights(",
        f'{W}  File "{PKG}/model_executor/layers/quantization/fp8.py", line 333, in create_weights',
        f"{W}    validate_fp8_block_shape(",
        f'{W}  File "{PKG}/model_executor/layers/quantization/utils/fp8_utils.py", line 1142, in '
        "validate_fp8_block_shape",
        f"{W}    raise ValueError(",
        f"{W}ValueError: Weight output_partition_size = 64 is not divisible by weight quantization block_n = 128.",
    ])


def test_a_raised_block_size_is_no_hint_beside_an_error_nothing_explains():
    """An fp8 checkpoint's weight blocks that do not split over eight ranks fail in weight loading, on a hybrid whose
    start-up raised the attention block size: the raise is a fact of the configuration, not this error's cause, so
    the unexplained error stands alone and says what was left out."""
    an = analyze_text(_fp8_block_log(), "x.log", use_preflight=False)
    assert [f.category for f in an.findings] == ["other"]
    assert any("left out" in m for m in an.findings[0].missing_evidence)
    clean = "\n".join(_fp8_block_log().splitlines()[:3])  # the same start-up without an error keeps the note
    assert "block_size_alignment" in [f.category for f in analyze_text(clean, "x.log", use_preflight=False).findings]
