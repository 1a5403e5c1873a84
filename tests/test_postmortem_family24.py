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


def test_the_compute_capability_of_nvidia_smis_query_and_of_a_reporters_shorthand():
    """``nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv`` (with or without its header) and "compute
    cap 7.0" give the capability; a finding quotes it as NVIDIA writes it."""
    from vllm_diag.postmortem import facts_from_text

    head = facts_from_text("name, compute_cap, memory.total [MiB]\nTesla V100-SXM2-32GB, 7.0, 32768 MiB\n")
    assert head.startup["compute_capability"] == [7, 0]
    bare = facts_from_text("nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader\nNVIDIA L40S, 8.9\n")
    assert bare.startup["compute_capability"] == [8, 9]
    told = facts_from_text('nvidia-smi -q | grep -i "compute cap" -> 7.5 on both\n')
    assert told.startup["compute_capability"] == [7, 5]
    # a time or a ratio after a GPU's name is no capability
    assert "compute_capability" not in facts_from_text("H100 nodes, 2.5 hours of load later it slowed down\n").startup
    an = _analyze(["4x Tesla V100-SXM2-32GB, compute capability 7.0",
                   "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                   "Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by explicitly "
                   "setting the `dtype` flag in CLI, for example: --dtype=half."])
    assert an.findings and an.findings[0].numbers.get("compute_capability") == 7.0


_FREE_MEMORY = ("(Worker_TP1 pid=20467) ERROR 11-27 09:12:36 [multiproc_executor.py:901] ValueError: Free memory on "
                "device cuda:1 (61.27/79.19 GiB) on startup is less than desired GPU memory utilization (0.92, 72.85 "
                "GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
_TABLE = ["| Processes:                                                                              |",
          "|    0   N/A  N/A      11870      C   python                                        2210MiB |",
          "|    1   N/A  N/A      11873      C   /opt/conda/envs/nb/bin/python                17832MiB |"]


def test_the_process_holding_the_gpu_that_failed_vllms_start_up_memory_check():
    """At the start-up check the engine has allocated nothing: the interpreter nvidia-smi lists on the GPU the check
    names (cuda:1) is another program -- its memory and pid are read, not the other GPU's."""
    from vllm_diag.postmortem import facts_from_text

    f = facts_from_text("\n".join([_FREE_MEMORY, "", "nvidia-smi:"] + _TABLE))
    assert (f.startup["other_process_mib"], f.startup["other_process_pid"]) == (17832, 11873)
    # the same table beside an out-of-memory error: a bare interpreter may be the engine itself
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 1 has a total capacity of "
           "79.19 GiB of which 301.06 MiB is free.")
    assert "other_process_mib" not in facts_from_text("\n".join([oom, ""] + _TABLE)).startup
    # ... unless rows of the engine's own name sit beside it
    named = _TABLE + ["|    1   N/A  N/A        403      C   VLLM::Worker_TP1                            60970MiB |"]
    assert facts_from_text("\n".join([oom, ""] + named)).startup["other_process_mib"] == 17832


def test_the_stats_lines_keep_where_the_load_and_the_hits_began():
    """A stats line's running / waiting / KV usage and the prefix-cache hit rate that changed over the log keep their
    first value beside the last."""
    from vllm_diag.postmortem import facts_from_text

    def stats(running: int, waiting: int, usage: float, hits: float) -> str:
        return (f"(APIServer pid=118) INFO 11-20 09:31:{running % 60:02d} [loggers.py:310] Engine 000: Avg prompt "
                f"throughput: 1632.4 tokens/s, Avg generation throughput: 226.9 tokens/s, Running: {running} reqs, "
                f"Waiting: {waiting} reqs, GPU KV cache usage: {usage}%, Prefix cache hit rate: {hits}%")

    st = facts_from_text("\n".join([stats(16, 0, 2.1, 0.4), stats(31, 4, 9.5, 1.2), stats(24, 2, 5.0, 0.9)])).startup
    assert (st["num_requests_running_first"], st["num_requests_waiting_first"]) == (16, 0)
    assert st["gpu_kv_cache_usage_percent_first"] == 2.1 and st["gpu_kv_cache_usage_percent"] == 5.0
    assert st["prefix_cache_hit_rate_first"] == 0.4 and st["prefix_cache_hit_rate"] == 0.9
    one = facts_from_text(stats(16, 0, 2.1, 0.4)).startup
    assert "num_requests_running_first" not in one and "prefix_cache_hit_rate_first" not in one
