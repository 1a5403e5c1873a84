"""kv_page_not_divisible -- layer pages that page-size unification cannot reconcile.

Failure: ``unify_kv_cache_spec_page_size`` needs every smaller page to divide the largest (then it
scales ``block_size``) or, from 0.25/0.28, to be a paddable attention page. It raises
``NotImplementedError`` otherwise: any non-dividing page before 0.25 ("The page size of the layer
is not divisible by the maximum page size. Cannot unify by adjusting block_size."); MLA / indexer
pages (which cannot be padded) in every version -- e.g. an MLA model next to a sliding-window or
dense draft. Quantized-KV hybrids have their own rule (kv_quant_hybrid).

Versions: all (what can be padded grows: attention 0.25+, Mamba 0.26+; MLA never).
Evidence: the state's predicted/recorded error or layer pages; log: the NotImplementedError text.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, fmt_bytes, log_evidence, log_match, state_errors, state_source, version
from .base import Rule, RuleContext

ID = "kv_page_not_divisible"


def check(ctx: RuleContext) -> list[Finding]:
    kv = str(cfg(ctx, "kv_cache_dtype") or "auto")
    quant_hybrid = kv.startswith(("turboquant", "nvfp4")) or kv.endswith("per_token_head")
    numbers: dict = {}
    evidence: list[Evidence] = []
    for e in state_errors(ctx, "NotImplementedError", "unify_kv_cache_spec_page_size"):
        numbers.update(e.numbers)
        evidence.append(Evidence(f"{e.exc_type}: {e.message}", source=state_source(ctx.state)))
    exc = log_match(ctx, "NotImplementedError", text="not divisible by the maximum page size")
    if exc is not None:
        evidence += log_evidence(ctx, exc, "layer_name")
        if ctx.log:
            for k in ("layer_name", "page_size_bytes", "max_page_size"):
                if k in ctx.log.numbers:
                    numbers.setdefault(k, ctx.log.numbers[k])
    if not evidence:
        return []
    is_hybrid = bool(ctx.state and ctx.state.environment.get("is_hybrid"))
    if quant_hybrid and (is_hybrid or ctx.state is None):
        return []  # explained by kv_quant_hybrid
    page, mx = numbers.get("page_size") or numbers.get("page_size_bytes"), numbers.get("max_page_size")
    comps = [Comparison("max page % layer page", expected=0, actual=(mx % page) if page and mx else None, unit="B")] if page and mx else []
    layer = numbers.get("layer") or numbers.get("layer_name") or "?"
    msg = (f"Layer {layer} has a {fmt_bytes(page)} page that does not divide the largest page ({fmt_bytes(mx)}) and cannot be "
           f"padded ({numbers.get('spec_type') or 'this spec type'}), so KV-cache grouping fails at engine init.")
    return [Finding(rule=ID, category="kv_page_size", title="KV pages do not divide and cannot be padded", severity="error",
                    message=msg, numbers=numbers, comparisons=comps, evidence=evidence,
                    missing_evidence=[] if version(ctx) else ["vLLM version"])]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    out = []
    if cfg(ctx, "speculative_method") in ("draft_model", "eagle", "eagle3"):
        mtp = (ctx.state.environment.get("mtp_layers") if ctx.state else 0) or 0
        if mtp:
            out.append(Suggestion(title="use the model's MTP head instead of the separate draft model",
                                  tradeoff="same KV layout as the main model; acceptance differs from the draft model",
                                  changes=[Change("speculative_method", "mtp"), Change("draft_model", None)]))
        out.append(Suggestion(title="turn speculative decoding off", tradeoff="loses the draft model's decode speed-up",
                              changes=[Change("speculative_config", None)]))
    if str(finding.numbers.get("spec_type", "")) in ("FullAttentionSpec", "SlidingWindowSpec"):
        out.append(Suggestion(title="upgrade to vLLM >= 0.26.0 (pads attention and Mamba pages)",
                              tradeoff="padding wastes up to (max/page - 1) of those layers' KV memory",
                              changes=[Change("vllm_version", "0.26.0")]))
    return out


RULE = Rule(id=ID, title="KV pages that do not divide", category="kv_page_size", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")
