"""hybrid_kv_manager_off -- the hybrid KV cache manager turned off on a model that needs it (or, 0.29+, an MLA
model whose sliding-window layers' pages cannot be unified with its own: "KV cache page sizes cannot be unified;
treating sliding-window layers as full attention for cache allocation").

vLLM's hybrid KV cache manager keeps one KV-cache group per layer type (full attention, sliding window, Mamba/GDN)
with its own block bookkeeping. Turned off -- by ``--disable-hybrid-kv-cache-manager``, or by vLLM itself when a KV
connector does not support it ("Turning off hybrid kv cache manager because `--kv-transfer-config` selects a KV
connector that does not support it") -- every layer's spec must unify into one full-attention layout: sliding-window
layers keep KV for the whole context (the KV capacity falls: fewer tokens, lower concurrency, preemptions), and a
Mamba/GDN hybrid cannot be laid out at all. vLLM says so itself: "Hybrid KV cache manager is disabled for this hybrid
model". The hybrid KV layout class (README family A).

Log only. Versions: all with the hybrid manager (0.10+). Severity: warning (an error when the log also failed).
"""

from __future__ import annotations

from ..model import Comparison, Finding, Suggestion
from ._util import log_evidence
from .base import Rule, RuleContext

ID = "hybrid_kv_manager_off"


def check(ctx: RuleContext) -> list[Finding]:
    st = ctx.log.startup if ctx.log is not None else {}
    fallback = bool(st.get("kv_page_unify_fallback"))
    if not (st.get("hybrid_kv_cache_manager_disabled") or fallback) or ctx.log.root is not None:
        return []  # (a failure is the diagnosis' business: it reads the same fact)
    why = st.get("hybrid_kv_cache_manager_off_reason")
    runs = [t for t in st.get("gpu_kv_cache_tokens_runs") or [] if isinstance(t, int)]
    numbers: dict = {}
    comps = []
    if len(runs) >= 2 and runs[-1] < runs[0]:
        numbers.update(kv_cache_tokens_before=runs[0], kv_cache_tokens_after=runs[-1])
        comps.append(Comparison("GPU KV cache size", expected=runs[0], actual=runs[-1], unit="tokens"))
    elif isinstance(st.get("gpu_kv_cache_tokens"), int):
        numbers["gpu_kv_cache_tokens"] = st["gpu_kv_cache_tokens"]
    if st.get("max_concurrency") is not None:
        numbers["max_concurrency"] = st["max_concurrency"]
    if fallback and not st.get("hybrid_kv_cache_manager_disabled"):
        return [Finding(rule=ID, category="kv_page_size", severity="warning",
                        title="KV pages not unified: sliding-window layers laid out as full attention",
                        message="vLLM could not unify the KV page sizes (an MLA model beside sliding-window layers, a "
                                "drafter's among them) and laid every sliding-window layer out as full attention: they "
                                "keep KV for the whole context, so the cache holds fewer tokens than the layers need"
                                + (f" ({st['gpu_kv_cache_tokens']:,} tokens in this log)"
                                   if isinstance(st.get("gpu_kv_cache_tokens"), int) else "") + ".",
                        numbers=numbers, comparisons=comps,
                        evidence=log_evidence(ctx, None, "kv_page_unify_fallback", "gpu_kv_cache_tokens"),
                        confidence="high", basis="vLLM's own warning that the KV cache page sizes cannot be unified")]
    msg = ("vLLM ran this hybrid model with the hybrid KV cache manager off"
           + (f" ({why})" if why else "")
           + ": every layer's KV spec is unified into one full-attention layout, so sliding-window layers keep KV for "
             "the whole context and the cache holds fewer tokens"
           + (f" ({runs[0]:,} -> {runs[-1]:,} tokens in this log)" if "kv_cache_tokens_after" in numbers else "")
           + "; a Mamba/GDN hybrid cannot be laid out at all that way.")
    return [Finding(rule=ID, category="kv_page_size", severity="warning",
                    title="Hybrid KV cache manager off: every layer laid out as full attention",
                    message=msg, numbers=numbers, comparisons=comps,
                    evidence=log_evidence(ctx, None, "hybrid_kv_cache_manager_disabled",
                                          "hybrid_kv_cache_manager_off_reason", "gpu_kv_cache_tokens"),
                    confidence="high", basis="vLLM's own warning that the hybrid KV cache manager is disabled for "
                                             "this hybrid model")]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    from ..model import Change

    if ctx.log is not None and not ctx.log.startup.get("hybrid_kv_cache_manager_disabled"):
        return []  # (pages not unified: the layers' own layout, which no flag changes)
    return [Suggestion(title="use a KV connector that supports the hybrid KV cache manager, or none",
                       tradeoff="without the connector: no KV offload / transfer; with a supporting one: a change of "
                                "deployment",
                       changes=[Change("kv_transfer_config", None)])]


RULE = Rule(id=ID, title="Hybrid KV cache manager turned off", category="kv_page_size", check=check, versions="all",
            reads=("log",), doc=__doc__ or "")
