"""mamba_block_budget -- max_num_seqs above the number of requests whose Mamba states fit.

Every running request of a hybrid model holds ``1 + k`` Mamba blocks (cache mode 'none') or
``2 + k`` ('align'; ``k`` = speculative tokens) in each Mamba group, whatever its length. With
``num_blocks`` KV blocks, at most ``num_blocks // blocks_per_request`` requests can run; a larger
``max_num_seqs`` only preempts/queues requests and over-sizes the CUDA-graph buffers
(``decode_cudagraph_max_bs = min(max_num_seqs, max capture size)``).

Evidence: ``num_gpu_blocks`` (recorded state / ``--num-gpu-blocks-override`` / log "# GPU blocks: N"
or "GPU KV cache size: T tokens" / block size). Versions: all. Severity: warning.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, log_evidence, spec_k, state_source
from .base import Rule, RuleContext

ID = "mamba_block_budget"


def _num_blocks(ctx: RuleContext) -> tuple[int | None, list[Evidence]]:
    for key in ("num_gpu_blocks", "num_gpu_blocks_override"):
        n = cfg(ctx, key)
        if n:
            return int(n), [Evidence(f"{key} = {n}", source=state_source(ctx.state))]
    if ctx.log is not None:
        if ctx.log.startup.get("num_gpu_blocks"):
            return int(ctx.log.startup["num_gpu_blocks"]), log_evidence(ctx, None, "num_gpu_blocks")
        tokens, block = ctx.log.startup.get("gpu_kv_cache_tokens"), ctx.log.startup.get("attention_block_size") or cfg(ctx, "block_size")
        if tokens and block:
            return int(tokens) // int(block), log_evidence(ctx, None, "gpu_kv_cache_tokens", "attention_block_size")
    return None, []


def check(ctx: RuleContext) -> list[Finding]:
    if family(ctx) not in ("gdn", "mamba2", "mamba1"):
        return []
    n, evidence = _num_blocks(ctx)
    seqs = cfg(ctx, "max_num_seqs")
    if not n or not seqs:
        return []
    k = spec_k(ctx)
    per_req = (2 + k) if cfg(ctx, "mamba_cache_mode") in ("align", "all") else (1 + k)
    fit = n // per_req
    if int(seqs) <= fit:
        return []
    return [Finding(rule=ID, category="mamba_block_budget", title=f"max_num_seqs {seqs} but only {fit} requests' Mamba states fit",
                    severity="warning",
                    message=(f"{n} KV blocks / {per_req} Mamba blocks per request = {fit} concurrent requests; "
                             f"max_num_seqs={seqs} only queues or preempts the rest and over-sizes the decode buffers."),
                    evidence=evidence, comparisons=[Comparison("max_num_seqs <= requests that fit", expected=fit, actual=int(seqs))],
                    numbers={"num_blocks": n, "blocks_per_request": per_req, "requests_that_fit": fit, "max_num_seqs": int(seqs)})]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    fit = int(finding.numbers.get("requests_that_fit") or 1)
    return [Suggestion(title=f"set max_num_seqs to {fit}", tradeoff="same real concurrency, smaller CUDA-graph buffers, no preemption churn",
                       changes=[Change("max_num_seqs", max(1, fit))])]


RULE = Rule(id=ID, title="max_num_seqs above the available Mamba blocks", category="mamba_block_budget", check=check,
            versions="all (hybrid models)", reads=("state", "log"), doc=__doc__ or "")
