"""mamba_padding_waste -- Mamba/GDN state pages padded far beyond the state to match a large attention page.

A hybrid keeps one page size for every KV-cache group: vLLM raises the attention block until an attention page holds
a Mamba state page, then pads the state page up to it ("Padding mamba page size by N% to ensure that mamba page size
and attention page size are exactly equal"). With vLLM's own choice the padding is a few percent; an attention block
forced larger (``--block-size 2048``, a prefix-caching chunk alignment, a drafter's larger page) pads every state page
by tens of percent, and that memory holds nothing: fewer blocks, fewer requests at once, no error. The hybrid KV
layout class (README family A).

Log only. Versions: every hybrid release. Evidence: the largest padding the log states (of every start it holds),
at least 20 %, with a block size the user set or against another start of the log that pads less than half as
much (vLLM's own choice pads a small state -- LFM2's short convolutions -- by a third: nothing to undo); no finding
beside an error.
"""

from __future__ import annotations

from ..model import Comparison, Finding
from ._util import cfg, log_evidence
from .base import Rule, RuleContext

ID = "mamba_padding_waste"
_WASTEFUL_PERCENT = 20.0  # vLLM's own alignment pads by a few percent (1-9 % on the hybrids of 0.11-0.33)


def check(ctx: RuleContext) -> list[Finding]:
    log = ctx.log
    if log is None or log.root is not None:
        return []
    runs = [p for p in log.startup.get("mamba_padding_percent_runs") or [log.startup.get("mamba_padding_percent")]
            if isinstance(p, (int, float))]
    if not runs or max(runs) < _WASTEFUL_PERCENT:
        return []
    worst = max(runs)
    least = min(runs)
    block = cfg(ctx, "block_size")
    if not block and least * 2 > worst:
        return []  # vLLM's own choice (small states -- LFM2's short convolutions -- pad by a third): nothing to undo
    numbers = {"mamba_padding_percent": worst}
    msg = (f"vLLM padded every Mamba/GDN state page by {worst:g}% to match the attention page"
           + (f" (--block-size {block})" if block else "")
           + ": that share of the state memory holds nothing, so the KV memory holds fewer blocks and fewer requests at "
             "once, without an error")
    comparisons = []
    if least < worst:
        numbers["mamba_padding_percent_least"] = least
        msg += f" (the log's other start pads by {least:g}%)"
        comparisons.append(Comparison("Mamba page padding", expected=least, actual=worst, unit="%"))
        tokens = [t for t in log.startup.get("gpu_kv_cache_tokens_runs") or [] if isinstance(t, int)]
        if len(tokens) >= 2:
            numbers["gpu_kv_cache_tokens_runs"] = tokens
    msg += ". Leave the block size to vLLM (it picks the smallest attention block that holds a state page)."
    return [Finding(rule=ID, category="kv_page_size", severity="warning",
                    title=f"Mamba state pages padded by {worst:g}% to a larger attention page",
                    message=msg, numbers=numbers, comparisons=comparisons,
                    evidence=log_evidence(ctx, None, "mamba_padding_percent", "attention_block_size",
                                          "gpu_kv_cache_tokens"),
                    confidence="medium", basis="vLLM's own 'Padding mamba page size by N%' line")]


RULE = Rule(id=ID, title="Mamba state pages padded to a much larger attention page", category="kv_page_size",
            check=check, versions="all (hybrid models)", reads=("log",), doc=__doc__ or "")
