"""kv_quant_hybrid -- a packed/quantized KV layout the hybrid alignment does not count.

Failure (vllm#41560): on hybrid GDN/Mamba models the platform picks the attention block size
from a 1-token attention page built from the *model* config (section 3.3). Before 0.22 that page
ignores TurboQuant's packed K|V slots (before 0.20 also NVFP4 and per-token-head scales), so the
Mamba page is padded to ``block_size x 2*H*D`` bytes while the real attention layers use
``block_size x H*slot`` bytes. The two pages then do not divide: unification fails at engine init
(``NotImplementedError ... not divisible`` in stock 0.20-0.22; a bare ``AssertionError`` in
``unify_kv_cache_spec_page_size`` on some TurboQuant builds).

Versions: TurboQuant < 0.22.1; NVFP4 / per-token-head < 0.20 (alignment became layout-aware).
Evidence: predicted/recorded specs + kv_cache_dtype; log: unify failure with a quantized kv dtype.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, fmt_bytes, in_range, log_evidence, log_match, state_errors, state_source, version
from .base import Rule, RuleContext

ID = "kv_quant_hybrid"


def _fixed_in(kv: str) -> tuple[int, int, int]:
    return (0, 22, 1) if kv.startswith("turboquant") else (0, 20, 0)


def check(ctx: RuleContext) -> list[Finding]:
    kv = str(cfg(ctx, "kv_cache_dtype") or "auto")
    if not (kv.startswith(("turboquant", "nvfp4")) or kv.endswith("per_token_head")):
        return []
    v = version(ctx)
    if in_range(v, None, _fixed_in(kv)) is False:
        return []
    evidence: list[Evidence] = []
    numbers: dict = {"kv_cache_dtype": kv}
    errs = state_errors(ctx, None, "unify_kv_cache_spec_page_size")
    if ctx.state is not None:
        specs = ctx.state.specs("layer")
        attn = [s for s in specs if s.spec_type in ("FullAttentionSpec", "SlidingWindowSpec") and not s.is_draft]
        mamba = [s for s in specs if s.is_mamba]
        if attn and mamba and attn[0].page_size_bytes and mamba[0].page_size_bytes:
            a, m = attn[0].page_size_bytes, mamba[0].page_size_bytes
            numbers.update(attention_page_size=a, mamba_page_size=m, block_size=attn[0].block_size)
            per_tok = ctx.state.environment.get("attn_page_per_token_alignment")
            if per_tok and attn[0].block_size:
                numbers.update(alignment_bytes_per_token=per_tok, real_bytes_per_token=a // attn[0].block_size)
            if max(a, m) % min(a, m) != 0 or errs:
                evidence.append(Evidence(f"{attn[0].layer_name} {kv} page {fmt_bytes(a)} vs Mamba page padded to {fmt_bytes(m)}",
                                         source=state_source(ctx.state)))
        for e in errs:
            evidence.append(Evidence(f"{e.exc_type} at {e.location}", source=state_source(ctx.state)))
    exc = log_match(ctx, None, function="unify_kv_cache_spec_page_size") or log_match(ctx, "NotImplementedError", text="not divisible")
    if exc is None and ctx.log is not None and ctx.log.root and "unify_kv_cache_spec_page_size" in " ".join(
            f.function for f in ctx.log.root.frames):
        exc = ctx.log.root
    if exc is not None:
        evidence += log_evidence(ctx, exc, "mamba_padding_percent")
    if not evidence:
        return []
    comps = []
    if numbers.get("alignment_bytes_per_token"):
        comps.append(Comparison("attention bytes per token (alignment assumed vs layer real)",
                                expected=numbers["alignment_bytes_per_token"], actual=numbers["real_bytes_per_token"], unit="B"))
    if numbers.get("attention_page_size"):
        comps.append(Comparison("attention page (must divide the max page)", expected=numbers["mamba_page_size"],
                                actual=numbers["attention_page_size"], unit="B"))
    fixed = ".".join(map(str, _fixed_in(kv)))
    msg = (f"--kv-cache-dtype {kv} on a hybrid model: vLLM < {fixed} aligns the attention block to the Mamba page using the "
           f"unquantized K/V layout, so the real {kv} attention page does not divide the padded Mamba page and "
           f"page-size unification fails at engine init.")
    return [Finding(rule=ID, category="kv_page_size", title=f"{kv} KV pages cannot be unified with the hybrid Mamba/GDN page",
                    severity="error", message=msg, numbers=numbers, comparisons=comps, evidence=evidence,
                    fixed_in=f"{fixed} (layout-aware hybrid alignment)",
                    missing_evidence=[] if v else [f"vLLM version (rule applies to < {fixed})"])]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    kv = str(cfg(ctx, "kv_cache_dtype") or "")
    fixed = ".".join(map(str, _fixed_in(kv)))
    return [
        Suggestion(title="use fp8 KV cache instead", changes=[Change("kv_cache_dtype", "fp8")],
                   tradeoff=f"fp8 stores ~2x the bytes per token of {kv} (fewer cached tokens); no TurboQuant accuracy loss"),
        Suggestion(title="use the model dtype for the KV cache", changes=[Change("kv_cache_dtype", "auto")],
                   tradeoff="bf16 KV: ~4x the bytes of a 4-bit layout, the smallest KV capacity of the three"),
        Suggestion(title=f"upgrade to vLLM >= {fixed}", changes=[Change("vllm_version", fixed)],
                   tradeoff=f"keeps {kv}; needs a newer vLLM build"),
    ]


RULE = Rule(id=ID, title="Quantized KV layout ignored by the hybrid block-size alignment", category="kv_page_size", check=check,
            versions="turboquant <0.22.1; nvfp4/per-token-head <0.20", fixed_in="0.22.1", reads=("state", "log"), doc=__doc__ or "")
