"""block_size_inflated -- the attention block size raised by the hybrid Mamba alignment.

For hybrid models vLLM makes one attention page at least as large as one Mamba state page
(section 3.3): ``block = a x cdiv(mamba_page, a x attn_bytes_per_token)``. Qwen3-Next goes from 16
to 544 tokens, NemotronH to ~1000+, and a user's ``--block-size`` below that is silently
overridden. Consequences: KV allocation, prefix-cache hits ('align' mode) and block-table rows all
work in that granularity, and the Mamba page is padded (wasted bytes per state).

Versions: all hybrid versions (0.17+: model config; 0.20+: per worker). Evidence: predicted/recorded
config (``block_size`` vs requested) or the log line "Setting attention block size to N tokens".
Severity: warning when it overrides an explicit ``--block-size``, info otherwise.
"""

from __future__ import annotations

from ..model import Comparison, Evidence, Finding
from ._util import cfg, log_evidence, state_source
from .base import Rule, RuleContext

ID = "block_size_inflated"


def check(ctx: RuleContext) -> list[Finding]:
    requested = actual = None
    pad = None
    evidence: list[Evidence] = []
    st = ctx.state
    if st is not None and st.config.get("block_size_raised_by_mamba"):
        requested = st.environment.get("block_size_requested")
        actual = st.config.get("block_size")
        pad = st.environment.get("mamba_padding_percent")
        if ctx.log is not None and ctx.log.startup.get("mamba_padding_percent") is not None:
            pad = ctx.log.startup["mamba_padding_percent"]  # vLLM's own figure for the run, over the prediction
        evidence.append(Evidence(f"block_size {requested} -> {actual} (Mamba page {st.environment.get('mamba_page_config'):,} B, "
                                 f"{st.environment.get('attn_page_per_token_alignment')} B/token attention)", source=state_source(st)))
        if ctx.log is not None and ctx.log.startup.get("attention_block_size"):
            evidence += log_evidence(ctx, None, "attention_block_size", "mamba_padding_percent")  # the log says it too
    elif ctx.log is not None and ctx.log.startup.get("attention_block_size"):
        actual = ctx.log.startup["attention_block_size"]
        requested = ctx.log.args.get("block_size") or 16
        pad = ctx.log.startup.get("mamba_padding_percent")
        evidence += log_evidence(ctx, None, "attention_block_size", "mamba_padding_percent")
    if actual is None or requested is None or actual <= requested:
        return []
    user = bool(cfg(ctx, "user_specified_block_size")) if st is not None else ctx.log is not None and "block_size" in ctx.log.args
    msg = (f"The attention block size is {actual} tokens (requested {requested}) so that one attention page holds a Mamba "
           f"state page: KV allocation, prefix-cache hits and block tables work in {actual}-token units"
           + (f"; each Mamba page is padded by {pad}%" if pad else "") + ".")
    if user:
        msg += f" Your --block-size {requested} is overridden."
    numbers = {"block_size": actual, "requested_block_size": requested, "mamba_padding_percent": pad}
    shared = ctx.log.startup.get("shared_prefix_tokens") if ctx.log is not None else None
    if isinstance(shared, int) and shared < actual:
        # the report's shared prefix fits in less than one block: with prefix caching it never hits (the Mamba/GDN
        # state is kept only at block boundaries)
        msg += (f" The requests share a {shared}-token prefix, less than one {actual}-token block: with prefix caching "
                "it is never a cached block, so it never hits.")
        numbers["shared_prefix_tokens"] = shared
        evidence += log_evidence(ctx, None, "shared_prefix_tokens")
    return [Finding(rule=ID, category="block_size_alignment", title=f"Attention block size raised to {actual} tokens by Mamba alignment",
                    severity="warning" if user else "info", message=msg,
                    evidence=evidence,
                    comparisons=[Comparison("attention block size", expected=requested, actual=actual, unit="tokens")],
                    numbers=numbers)]


RULE = Rule(id=ID, title="Attention block size inflated by Mamba alignment", category="block_size_alignment", check=check,
            versions="all (hybrid models)", reads=("state", "log"), doc=__doc__ or "")
