"""Post-mortem, round twenty-four. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _qwen3next_011_bars(concurrency: int) -> list[str]:
    """vLLM 0.11.0 at start-up, its capture seen only by the progress bars (the log was cut before 'Graph capturing
    finished'); the reporter quotes --enforce-eager as the comparison run."""
    w = "(EngineCore_DP0 pid=189) "
    return [
        "MTP acceptance is great with 1 user and terrible with several (Qwen3-Next, vllm 0.11.0)",
        "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        f"We see it with {concurrency} concurrent requests.",
        w + "INFO 10-09 14:52:58 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
            "model='Qwen/Qwen3-Next-80B-A3B-Instruct', compilation_config={\"level\":3, \"cudagraph_mode\":[2,1], "
            "\"cudagraph_capture_sizes\":[512,504,496,48,40,32,24,16,8,4,2,1], \"max_capture_size\":512}",
        w + "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:21<00:00,  3.1it/s]",
        w + "Capturing CUDA graphs (decode, FULL): 100%|##########| 67/67 [00:12<00:00,  5.4it/s]",
        "With --enforce-eager acceptance is the same at every concurrency.",
    ]


def test_a_run_whose_capture_bars_show_graphs_was_not_eager_whatever_the_report_compares():
    """The capture bars alone show the failing run captured its graphs: the --enforce-eager the reporter quotes is
    the comparison, so the 0.11 capture sizes not rounded to 1 + k still explain 7 requests (21 tokens, padded to 24)."""
    top = _analyze(_qwen3next_011_bars(7)).findings[0]
    assert top.category == "cudagraph_shape"
    assert top.numbers["num_scheduled_tokens"] == 21 and top.numbers["padded_num_tokens"] == 24
    # the comparison run without the bars (and without the capture's memory): eager, nothing captured to pad
    eager = [line for line in _qwen3next_011_bars(7) if "Capturing" not in line]
    assert not any(f.category == "cudagraph_shape" for f in _analyze(eager).findings)
