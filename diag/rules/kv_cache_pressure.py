"""other: the KV cache ran full while serving and the scheduler preempted running requests (recomputing them later):
a capacity limit of the workload against the KV blocks, read from the engine's stats lines. Not a failure of the
hybrid / spec-decode families; it also explains a prefix cache that never hits (full pools evict every cached block)."""

from __future__ import annotations

from ..model import Comparison, Finding
from ._util import cfg, log_evidence
from .base import Rule, RuleContext

ID = "kv_cache_pressure"
FULL_PERCENT = 99.0


def kv_cache_full(ctx: RuleContext) -> bool:
    """The stats lines show preempted requests at a (nearly) full KV cache."""
    st = ctx.log.startup if ctx.log is not None else {}
    preempted = st.get("num_preemptions_max") or 0
    usage = st.get("gpu_kv_cache_usage_percent_max")
    return preempted > 0 and isinstance(usage, (int, float)) and usage >= FULL_PERCENT


def check(ctx: RuleContext) -> list[Finding]:
    if ctx.log is None or ctx.log.root is not None or not kv_cache_full(ctx):
        return []
    st = ctx.log.startup
    numbers = {"num_preemptions_max": st["num_preemptions_max"], "gpu_kv_cache_usage_percent_max": st[
        "gpu_kv_cache_usage_percent_max"]}
    for key in ("num_requests_waiting_max", "gpu_kv_cache_tokens", "max_concurrency"):
        if st.get(key) is not None:
            numbers[key] = st[key]
    seqs = cfg(ctx, "max_num_seqs")
    if seqs is not None:
        numbers["max_num_seqs"] = seqs
    comps = []
    if st.get("max_concurrency") is not None and isinstance(seqs, int):
        comps.append(Comparison("requests the KV cache holds at max_model_len vs max_num_seqs",
                                expected=seqs, actual=st["max_concurrency"]))
    return [Finding(
        rule=ID, category="other", severity="info", title="KV cache full: the scheduler preempts requests",
        message=(f"The stats lines show the GPU KV cache at {st['gpu_kv_cache_usage_percent_max']:g}% with up to "
                 f"{st['num_preemptions_max']} preempted requests: the running requests need more KV blocks than the "
                 "cache holds, so requests are preempted and recomputed (latency, not a crash). Lower max_num_seqs, "
                 "raise gpu_memory_utilization or add GPUs; prefix-cache hits also vanish while the pool is full."),
        numbers=numbers, comparisons=comps,
        evidence=log_evidence(ctx, None, "num_preemptions_max", "gpu_kv_cache_usage_percent_max", "gpu_kv_cache_tokens"),
        confidence="high", basis="the engine's own stats lines (preemptions at a full KV cache)")]


RULE = Rule(id=ID, title="KV cache full, requests preempted", category="other", check=check, versions="all",
            reads=("log",), doc=__doc__ or "")
