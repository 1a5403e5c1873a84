"""kv_quant_hybrid_capacity -- a quantized KV cache on a hybrid raises the block, not the requests that fit.

A hybrid's KV page is one page for every group (section 3.3): its size is set by the Mamba/GDN state,
which ``--kv-cache-dtype`` does not shrink. An fp8 KV cache halves the attention bytes per token, so
vLLM doubles the attention block (272 -> 544 tokens on Qwen3-Next at TP 4) to keep the attention page
as large as the state page. The KV memory holds the same number of pages, every request still needs
its state blocks, and the 'GPU KV cache size' in tokens doubles on paper only: the requests that fit at
once, and the throughput, stay where they were.

Versions: every hybrid release (the alignment is in all of them). Evidence: the log's "Setting attention
block size to N tokens" with a quantized KV dtype in the command -- warning when two starts of the log
show the block raised between them, info otherwise; no finding beside an error.
"""

from __future__ import annotations

from ..model import Comparison, Finding
from ._util import cfg, log_evidence
from .base import Rule, RuleContext

ID = "kv_quant_hybrid_capacity"

# KV cache dtypes that pack or quantize the attention bytes per token (the post-mortem reads the same list)
QUANTIZED_KV_DTYPES = ("fp8", "int8", "nvfp4", "fp4", "turboquant")


def check(ctx: RuleContext) -> list[Finding]:
    log = ctx.log
    if log is None or log.root is not None or not log.startup.get("attention_block_size"):
        return []
    kv = str(cfg(ctx, "kv_cache_dtype") or "")
    if not kv.lower().startswith(QUANTIZED_KV_DTYPES):
        return []
    block = log.startup["attention_block_size"]
    runs = [b for b in log.startup.get("attention_block_size_runs") or [] if isinstance(b, int)]
    before = None
    if len(runs) >= 2 and runs[-2] != runs[-1]:
        # two starts, the quantized one with the larger block (a report may paste the run without fp8 second)
        before, block = min(runs[-2:]), max(runs[-2:])
    numbers = {"kv_cache_dtype": kv, "block_size": block}
    comparisons = []
    msg = (f"--kv-cache-dtype {kv} shrinks the attention bytes per token, but a hybrid's KV page is sized by its "
           f"Mamba/GDN state, which the KV dtype does not shrink: vLLM keeps one page for every group by raising the "
           f"attention block to {block} tokens")
    if before is not None:
        numbers["block_size_before"] = before
        msg += f" (from {before} in the run before)"
        comparisons.append(Comparison("attention block size", expected=before, actual=block, unit="tokens"))
        tokens = [t for t in log.startup.get("gpu_kv_cache_tokens_runs") or [] if isinstance(t, int)]
        if len(tokens) >= 2:
            numbers.update(gpu_kv_cache_tokens_before=min(tokens[-2:]), gpu_kv_cache_tokens=max(tokens[-2:]))
    msg += (". The KV memory holds the same number of pages and every request still needs its state blocks, so the "
            "requests that fit at once do not grow; the 'GPU KV cache size' in tokens grows on paper only. Quantizing "
            "the state (--mamba-ssm-cache-dtype where the model allows it) or more KV memory is what adds requests.")
    if before is not None and log.startup.get("mamba_cache_mode") in ("align", "all"):
        msg += f" Prefix-cache hits, too, now come only at {block}-token block boundaries (from {before})."
    return [Finding(rule=ID, category="kv_page_size",
                    title=f"{kv} KV cache on a hybrid: the attention block grows to {block} tokens, not the capacity",
                    # (a warning where two starts show it, or where the report says the capacity did not grow)
                    severity="warning" if before is not None or log.startup.get("capacity_prose") else "info",
                    message=msg, numbers=numbers,
                    comparisons=comparisons,
                    evidence=log_evidence(ctx, None, "attention_block_size", "gpu_kv_cache_tokens"))]


RULE = Rule(id=ID, title="Quantized KV cache on a hybrid: a larger block, not more requests", category="kv_page_size",
            check=check, versions="all (hybrid models)", reads=("log",), doc=__doc__ or "")
