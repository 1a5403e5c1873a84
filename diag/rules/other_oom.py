"""other: out of memory -- CUDA/HIP OOM while loading or profiling, and the KV-cache memory checks
(``No available memory for the cache blocks``, ``To serve at least one request with the model's max seq
len …``, the CPU backend's ``Available memory on node …``)."""

from __future__ import annotations

import re

from ..model import Change, Comparison, Finding, Suggestion
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_oom"
_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|HIP out of memory|CUDA error: out of memory|out of memory\b")
_KV = re.compile(r"No available memory for the cache blocks|To serve at least one request with the model'?s'? max seq len|"
                 r"larger than the available KV cache memory|Available memory on node \d+ .* is less than desired")


def check(ctx: RuleContext) -> list[Finding]:
    if ctx.log is None:
        return []
    n = ctx.log.numbers
    args = ctx.log.args
    exc = find_exc(ctx, _KV)
    if exc is not None:
        f = Finding(rule=ID, category="other", severity="error",
                    title="Not enough memory for the KV cache at the configured max_model_len",
                    message="The engine loaded the weights but the memory left for the KV cache cannot hold one request "
                            "of max_model_len tokens (or none at all).",
                    evidence=exc_evidence(exc, 1))
        for k in ("max_model_len", "kv_cache_needed_gib", "kv_cache_available_gib", "estimated_max_model_len"):
            if k in n:
                f.numbers[k] = n[k]
        left = ctx.log.startup.get("available_kv_cache_gib")
        if isinstance(left, (int, float)) and left <= 0:
            # the profile left nothing: the weights and activations alone exceed the share of the GPU vLLM may use
            gmu = args.get("gpu_memory_utilization")
            f.title = f"No memory left for the KV cache ({left:g} GiB after the weights and activations)"
            f.message = ("The weights and activations already take more than the memory vLLM may use"
                         + (f" (gpu_memory_utilization {gmu} of the GPU)" if gmu else "")
                         + ": nothing is left for the KV cache, at any max_model_len.")
            f.numbers["available_kv_cache_gib"] = left
            if gmu:
                f.numbers["gpu_memory_utilization"] = gmu
        if isinstance(args.get("kv_cache_memory_bytes"), int):  # a budget set in bytes, not a share of the GPU
            f.numbers["kv_cache_memory_bytes"] = args["kv_cache_memory_bytes"]
        need, have = n.get("kv_cache_needed_gib"), n.get("kv_cache_available_gib")
        if need is not None and have is not None and need != have:
            f.comparisons.append(Comparison("KV cache memory for one max-length request", need, have, "GiB"))
        if isinstance(n.get("max_model_len"), int) and isinstance(n.get("estimated_max_model_len"), int):
            # exact where vLLM's GiB are rounded (small pools print "0.0 GiB ... (0.0 GiB)")
            f.comparisons.append(Comparison("tokens of one request the KV cache holds", n["max_model_len"],
                                            n["estimated_max_model_len"], "tokens"))
        return [f]
    exc = find_exc(ctx, _OOM)
    if exc is None:
        return []
    phase = "while loading the model" if any("load" in fr.function for fr in exc.frames) else "on the device"
    f = Finding(rule=ID, category="other", severity="error", title=f"Out of memory {phase}",
                message="The device ran out of memory; this is not a KV-layout or spec-decode mismatch.",
                evidence=exc_evidence(exc, 2))
    for k in ("oom_tried_gib", "gpu_total_gib", "gpu_free_gib"):
        if k in n:
            f.numbers[k] = n[k]
    if "oom_tried_gib" in n and "gpu_free_gib" in n:
        f.comparisons.append(Comparison("allocation vs free memory", n["gpu_free_gib"], n["oom_tried_gib"], "GiB"))
    gmu = args.get("gpu_memory_utilization")
    if gmu:
        f.numbers["gpu_memory_utilization"] = gmu
    return [f]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    args = ctx.log.args if ctx.log else {}
    out = []
    n = finding.numbers
    gmu = n.get("gpu_memory_utilization")
    if isinstance(n.get("available_kv_cache_gib"), (int, float)) and isinstance(gmu, (int, float)) and gmu < 0.9:
        out.append(Suggestion(title=f"raise gpu_memory_utilization from {gmu} to 0.9",
                              tradeoff="less GPU memory left for other processes on the device",
                              changes=[Change("gpu_memory_utilization", 0.9, "--gpu-memory-utilization", gmu)]))
    if "estimated_max_model_len" in n:
        out.append(Suggestion(title=f"lower max_model_len to {n['estimated_max_model_len']}",
                              tradeoff="shorter maximum context per request",
                              changes=[Change("max_model_len", n["estimated_max_model_len"], "--max-model-len",
                                              args.get("max_model_len"))]))
    tp = args.get("tensor_parallel_size") or 1
    out.append(Suggestion(title=f"shard the model over more GPUs (tensor_parallel_size {tp} -> {int(tp) * 2})",
                          tradeoff="needs twice the GPUs; adds all-reduce traffic",
                          changes=[Change("tensor_parallel_size", int(tp) * 2, "--tensor-parallel-size", tp)]))
    if args.get("max_num_seqs"):
        out.append(Suggestion(title="lower max_num_seqs", tradeoff="fewer concurrent requests (lower peak throughput)",
                              changes=[Change("max_num_seqs", max(1, int(args["max_num_seqs"]) // 2), "--max-num-seqs",
                                              args["max_num_seqs"])]))
    return out


RULE = Rule(id=ID, title="Out of memory (device OOM or KV-cache memory check)", category="other", check=check,
            reads=("log",), doc=__doc__ or "")
