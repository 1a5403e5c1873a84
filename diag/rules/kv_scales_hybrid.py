"""kv_scales_hybrid -- fp8 KV scales calibrated on a hybrid's uninitialised recurrent state.

``--calculate-kv-scales`` computes each attention layer's fp8 KV scales in a calibration pass over the first
batch. On a Mamba/GDN hybrid the recurrent layers' state is still uninitialised then, so the hidden states that
reach the attention layers -- and the scales taken from them -- are wrong: every later token is stored with the
wrong scale and the output degrades into garbage, with no error (and speculative decoding's acceptance collapses).
vLLM 0.19.0 turns the flag off for hybrids itself (``HybridAttentionMambaModelConfig``: "Disabling
calculate_kv_scales for hybrid model ...", issue #37554); the flag is gone from 0.29.

Versions: before 0.19.0 (0.17.0 calibrates, 0.19.0 refuses). Severity: warning (no error; the output is wrong).
"""

from __future__ import annotations

from ..model import Change, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, state_source, version
from .base import Rule, RuleContext

ID = "kv_scales_hybrid"


FIXED_IN = (0, 19, 0)  # vLLM turns the flag off for hybrids itself


def calibrates_scales(calculate_kv_scales, kv_cache_dtype, v: tuple[int, int, int] | None) -> bool:
    """--calculate-kv-scales with an fp8 KV cache in a release that still calibrates a hybrid's scales (an unknown
    release counts as one that does; the post-mortem's silent diagnosis asks the same of a log)."""
    return (str(calculate_kv_scales).lower() in ("true", "1", "yes") and str(kv_cache_dtype or "").startswith("fp8")
            and not in_range(v, FIXED_IN))


def check(ctx: RuleContext) -> list[Finding]:
    kv = str(cfg(ctx, "kv_cache_dtype") or "auto")
    fam = family(ctx)
    v = version(ctx)
    if fam not in ("gdn", "mamba2", "mamba1") or not calibrates_scales(cfg(ctx, "calculate_kv_scales"), kv, v):
        return []
    known = v is not None
    msg = (f"--calculate-kv-scales with kv_cache_dtype {kv} on a {fam.upper()} hybrid: vLLM "
           + (".".join(map(str, v)) if known else "(version unknown; before 0.19.0)")
           + " calibrates the attention layers' fp8 KV scales in a pass where the recurrent layers' state is still "
             "uninitialised, so every token's KV is stored with a wrong scale -- garbage output, no error "
             "(vLLM 0.19.0 turns the flag off for hybrids).")
    f = Finding(rule=ID, category="kv_page_size", severity="warning",
                title="fp8 KV scales calibrated on a hybrid's uninitialised state",
                message=msg, numbers={"kv_cache_dtype": kv, "calculate_kv_scales": True},
                evidence=[Evidence(f"calculate_kv_scales = True; kv_cache_dtype = {kv}; model family {fam}",
                                   source=state_source(ctx.state) if ctx.state is not None else "log")],
                confidence="medium" if known else "low",
                basis="the configuration: a hybrid model with --calculate-kv-scales before vLLM 0.19.0"
                      + ("" if known else " (version not known: not modelled past that)"))
    return [f]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [Suggestion(title="drop --calculate-kv-scales (fp8 KV with the default scale 1.0)",
                       tradeoff="default scales: a small accuracy cost on some models, none of the corruption",
                       changes=[Change("calculate_kv_scales", None)]),
            Suggestion(title="keep the KV cache in the model's dtype", tradeoff="about twice the KV-cache memory",
                       changes=[Change("calculate_kv_scales", None), Change("kv_cache_dtype", "auto")])]


RULE = Rule(id=ID, title="fp8 KV scales calibrated on a hybrid's recurrent state", category="kv_page_size",
            check=check, versions="<0.19", fixed_in="0.19.0 (issue #37554)", reads=("state", "log"),
            doc=__doc__ or "")
