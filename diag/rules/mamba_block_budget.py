"""mamba_block_budget -- max_num_seqs above the number of requests whose Mamba states fit.

Every running request of a hybrid model holds ``1 + k`` Mamba blocks (cache mode 'none') or
``2 + k`` ('align'; ``k`` = speculative tokens) in each Mamba group, whatever its length, and at least one
block in each attention group; the groups share one pool of ``num_blocks`` KV blocks. At most
``num_blocks // blocks_per_request`` requests can run (a pool size read from the log's token count is
already per group); a larger
``max_num_seqs`` only preempts/queues requests and over-sizes the CUDA-graph buffers
(``decode_cudagraph_max_bs = min(max_num_seqs, max capture size)``).

Evidence: ``num_gpu_blocks`` (recorded state / ``--num-gpu-blocks-override`` / log "# GPU blocks: N"
or "GPU KV cache size: T tokens" / block size). Versions: all. Severity: warning.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, log_evidence, log_root, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "mamba_block_budget"


def _num_blocks(ctx: RuleContext) -> tuple[int | None, list[Evidence]]:
    for key in ("num_gpu_blocks", "num_gpu_blocks_override"):
        n = cfg(ctx, key)
        if n:
            return int(n), [Evidence(f"{key} = {n}", source=state_source(ctx.state))]
    budget = cfg(ctx, "kv_cache_memory_bytes")
    pool = _pool_page(ctx)
    if isinstance(budget, int) and budget > 0 and pool is not None:
        # a KV budget set in bytes: vLLM's get_num_blocks, available // page // the largest group's layer count
        page, layers = pool
        return budget // page // layers, [Evidence(f"kv_cache_memory_bytes {budget:,} // page {page:,} B // {layers} "
                                                   f"layer(s) per group = {budget // page // layers} blocks",
                                                   source=state_source(ctx.state))]
    if ctx.log is not None:
        if isinstance(ctx.log.numbers.get("mamba_cache_blocks"), int):  # vLLM's own count, in its error (0.20+)
            return ctx.log.numbers["mamba_cache_blocks"], log_evidence(ctx, log_root(ctx))
        if ctx.log.startup.get("num_gpu_blocks"):
            return int(ctx.log.startup["num_gpu_blocks"]), log_evidence(ctx, None, "num_gpu_blocks")
        tokens, block = ctx.log.startup.get("gpu_kv_cache_tokens"), ctx.log.startup.get("attention_block_size") or cfg(ctx, "block_size")
        conc, per_req = ctx.log.startup.get("max_concurrency"), ctx.log.startup.get("max_concurrency_tokens")
        if conc and per_req and block and in_range(version(ctx), (0, 23)):
            # from 0.23 vLLM's token count is the group-aware capacity (kv_cache_utils: max concurrency x max_model_len),
            # no longer num_blocks // groups x block size: concurrency = num_blocks / the blocks a max-length request
            # holds in all groups (get_max_concurrency_for_kv_cache_config) -- cdiv(len, block) in each attention group
            # and MambaSpec.max_memory_usage_bytes' pages in each Mamba group; with the groups unknown, one of each
            attn_blocks = -(-int(per_req) // int(block))
            mamba_groups, attn_groups = _pool_groups(ctx)
            mode, k = cfg(ctx, "mamba_cache_mode"), spec_k(ctx)
            mamba_blocks = attn_blocks + k if mode == "all" else (2 + k if mode == "align" else 1 + k)
            per_request = (attn_groups * attn_blocks + mamba_groups * mamba_blocks) if mamba_groups else attn_blocks + 1
            blocks = round(float(conc) * per_request)
            return blocks, log_evidence(ctx, None, "max_concurrency", "attention_block_size")
        if tokens and block:
            return int(tokens) // int(block), log_evidence(ctx, None, "gpu_kv_cache_tokens", "attention_block_size")
    return None, []


def _capture_capped(ctx: RuleContext) -> list[Finding]:
    """vLLM's own warning (vllm/config/compilation.py adjust_cudagraph_sizes_for_mamba_cache, 0.18-0.19): the
    CUDA-graph capture sizes were capped to the Mamba cache blocks that fit, so every decode batch above the cap
    runs without CUDA graphs while max_num_seqs still admits more requests -- a throughput cliff, not a crash."""
    st = ctx.log.startup if ctx.log is not None else {}
    capped, requested = st.get("max_cudagraph_capture_size_capped"), st.get("max_cudagraph_capture_size_requested")
    blocks = st.get("mamba_cache_blocks_available")
    seqs = cfg(ctx, "max_num_seqs")
    if capped == 0 and isinstance(blocks, int):  # no capture size fits: vLLM turned CUDA graphs off
        nums = {"max_cudagraph_capture_size_capped": 0, "mamba_cache_blocks": blocks}
        if isinstance(st.get("smallest_cudagraph_capture_size"), int):
            nums["smallest_cudagraph_capture_size"] = st["smallest_cudagraph_capture_size"]
        if isinstance(seqs, int):
            nums["max_num_seqs"] = seqs
        return [Finding(rule=ID, category="mamba_block_budget",
                        title=f"CUDA graphs disabled: no capture size fits the {blocks} Mamba cache blocks",
                        severity="warning",
                        message=(f"only {blocks} Mamba cache blocks fit, fewer than the smallest CUDA-graph capture size, "
                                 "so vLLM runs every step without CUDA graphs -- expect slow decoding"
                                 + (f" (max_num_seqs={seqs})" if isinstance(seqs, int) else "")),
                        evidence=log_evidence(ctx, None, "max_cudagraph_capture_size_capped"), numbers=nums)]
    if not isinstance(capped, int) or not isinstance(requested, int) or capped >= requested:
        return []
    nums = {"max_cudagraph_capture_size_requested": requested, "max_cudagraph_capture_size_capped": capped}
    if isinstance(blocks, int):
        nums["mamba_cache_blocks"] = blocks
    if isinstance(seqs, int):
        nums["max_num_seqs"] = seqs
    return [Finding(rule=ID, category="mamba_block_budget",
                    title=f"CUDA graphs capped at batch {capped} (of {requested}) to fit the Mamba cache blocks",
                    severity="warning",
                    message=(f"only {blocks if isinstance(blocks, int) else 'a few'} Mamba cache blocks fit, so vLLM "
                             f"captured CUDA graphs up to batch {capped} instead of {requested}: decode batches above "
                             f"{capped} run without them"
                             + (f" while max_num_seqs={seqs} still admits more requests" if isinstance(seqs, int) else "")
                             + " -- expect a throughput drop past that concurrency"),
                    evidence=log_evidence(ctx, None, "max_cudagraph_capture_size_capped"),
                    comparisons=[Comparison("capture sizes <= Mamba cache blocks", expected=requested, actual=capped)],
                    numbers=nums)]


def check(ctx: RuleContext) -> list[Finding]:
    capped = _capture_capped(ctx)
    if capped:
        return capped
    if family(ctx) not in ("gdn", "mamba2", "mamba1"):
        return []
    n, evidence = _num_blocks(ctx)
    seqs = cfg(ctx, "max_num_seqs")
    if not n or not seqs:
        return []
    refusal = _capture_refusal(ctx, n, int(seqs), evidence)
    if refusal:
        return refusal
    k = spec_k(ctx)
    per_group = (2 + k) if cfg(ctx, "mamba_cache_mode") in ("align", "all") else (1 + k)
    mamba_groups, attn_groups = _pool_groups(ctx)
    if mamba_groups:
        # the groups share one block pool (the hybrid allocator): a request holds per_group blocks in each Mamba
        # group and at least one in each attention group
        per_req = mamba_groups * per_group + attn_groups
        how = (f"{mamba_groups} Mamba group(s) x {per_group} blocks" + (f" + {attn_groups} attention block(s)"
                                                                        if attn_groups else ""))
    else:  # a pool size from the log's token count is already per group
        per_req, how = per_group, f"{per_group} Mamba blocks"
    fit = n // per_req
    if int(seqs) <= fit:
        return []
    numbers = {"num_blocks": n, "blocks_per_request": per_req, "requests_that_fit": fit, "max_num_seqs": int(seqs)}
    if mamba_groups:
        numbers.update(mamba_groups=mamba_groups, attention_groups=attn_groups)
    return [Finding(rule=ID, category="mamba_block_budget", title=f"max_num_seqs {seqs} but only {fit} requests' Mamba states fit",
                    severity="warning",
                    message=(f"{n} KV blocks / ({how}) per request = {fit} concurrent requests at most; "
                             f"max_num_seqs={seqs} only queues or preempts the rest and over-sizes the decode buffers."),
                    evidence=evidence, comparisons=[Comparison("max_num_seqs <= requests that fit", expected=fit, actual=int(seqs))],
                    numbers=numbers)]


def _capture_refusal(ctx: RuleContext, n: int, seqs: int, evidence: list[Evidence]) -> list[Finding]:
    """vLLM 0.20+ (CompilationConfig.resolve_cudagraph_mode_and_sizes) refuses to start when full CUDA graphs are on
    and max_num_seqs exceeds the KV pool's blocks: each decode sequence of the graphs needs one Mamba block. Predicted
    here where the pool is known before launch; a log that shows the refusal has it as its own error."""
    if seqs <= n or in_range(version(ctx), (0, 20)) is not True or cfg(ctx, "enforce_eager"):
        return []
    if str(cfg(ctx, "cudagraph_mode") or "").upper() in ("NONE", "PIECEWISE"):
        return []
    if ctx.log is not None and ctx.log.root is not None:
        return []
    if ctx.log is not None and ctx.log.startup.get("num_requests_running") is not None:
        return []  # the engine's stats lines show it serving: it did not refuse, the pool read from the log is off
    if ctx.log is not None and any(ctx.log.startup.get(k) for k in ("capacity_prose", "slow_prose", "spec_slower_prose",
                                                                     "hit_rate_prose", "wrong_output_prose")):
        return []  # the reporter tells how it serves (too few requests, too slow, wrong answers): it did not refuse
    if ctx.log is not None and ctx.log.startup.get("error_lines"):
        return []  # the log shows how the engine ended, and it is not the refusal (a ValueError with its own message)
    return [Finding(rule=ID, category="mamba_block_budget", title=f"max_num_seqs {seqs} exceeds the {n} Mamba cache blocks",
                    severity="error",
                    message=(f"With full CUDA graphs each decode sequence needs one Mamba cache block; {n} blocks fit, "
                             f"max_num_seqs is {seqs}: vLLM refuses to start ('max_num_seqs ({seqs}) exceeds available "
                             f"Mamba cache blocks ({n})')."),
                    evidence=evidence, comparisons=[Comparison("max_num_seqs <= Mamba cache blocks", expected=n, actual=seqs)],
                    numbers={"num_blocks": n, "mamba_cache_blocks": n, "max_num_seqs": seqs, "requests_that_fit": n})]


def _pool_page(ctx: RuleContext) -> tuple[int, int] | None:
    """(the one page size all groups share, the largest group's layer count) of the recorded or predicted plan;
    ``None`` when unknown or when the groups' pages differ (a packed layout this rule does not model)."""
    groups = ctx.state.kv_cache_groups if ctx.state is not None else []
    pages = {g.page_size_padded or g.page_size_bytes for g in groups}
    if not groups or len(pages) != 1 or not next(iter(pages)):
        return None
    return int(next(iter(pages))), max(len(g.layer_names) for g in groups) or 1


def _pool_groups(ctx: RuleContext) -> tuple[int, int]:
    """(Mamba groups, attention groups) of the recorded or predicted KV-cache plan; (0, 0) when unknown."""
    groups = ctx.state.kv_cache_groups if ctx.state is not None else []
    kinds = {g.group_index: g.spec_type for g in groups if not g.is_draft}
    mamba = sum(1 for t in kinds.values() if "Mamba" in (t or ""))
    return mamba, len(kinds) - mamba


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    if "max_cudagraph_capture_size_capped" in finding.numbers:
        cap = int(finding.numbers["max_cudagraph_capture_size_capped"]) or int(finding.numbers.get("mamba_cache_blocks") or 1)
        return [Suggestion(title=f"set max_num_seqs to {cap}", tradeoff="every decode batch runs in a CUDA graph; "
                           "fewer concurrent requests (or free GPU memory for more Mamba blocks)",
                           changes=[Change("max_num_seqs", max(1, cap))])]
    fit = int(finding.numbers.get("requests_that_fit") or 1)
    return [Suggestion(title=f"set max_num_seqs to {fit}", tradeoff="same real concurrency, smaller CUDA-graph buffers, no preemption churn",
                       changes=[Change("max_num_seqs", max(1, fit))])]


RULE = Rule(id=ID, title="max_num_seqs above the available Mamba blocks", category="mamba_block_budget", check=check,
            versions="all (hybrid models)", reads=("state", "log"), doc=__doc__ or "")
