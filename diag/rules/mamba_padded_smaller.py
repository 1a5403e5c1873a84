"""mamba_padded_smaller -- the layer's Mamba page is larger than the page the config padded to.

Failure: the platform pads every Mamba page to ``mamba_page_size_padded`` computed from the
model's config-side state shapes. Several models (GraniteMoeHybrid, FalconH1, Zamba2, Bamba, Plamo2
in 0.17-0.30; fixed by 0.32.0, PR #47635 / issue #57721) leave ``num_speculative_tokens`` out of
the config-side conv shape while the layer includes it, so with speculative decoding the layer's
page exceeds the padded page: bare ``AssertionError`` at ``assert self.page_size_padded >= page_size``
(kv_cache_interface.py, MambaSpec.page_size_bytes). It fires iff the extra conv rows
``k x conv_dim x dtype`` exceed the rounding slack ``attention page - config Mamba page``.

Versions: 0.17 - 0.30 for those models. Evidence: predicted/recorded state error or layer specs;
log: AssertionError whose frame is ``page_size_bytes`` with ``page_size_padded >= page_size``.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cdiv, fmt_bytes, log_evidence, log_match, spec_k, state_errors, state_source
from .base import Rule, RuleContext

ID = "mamba_padded_smaller"


def check(ctx: RuleContext) -> list[Finding]:
    numbers: dict = {}
    evidence: list[Evidence] = []
    for e in state_errors(ctx, "AssertionError", "page_size_padded >= page_size"):
        numbers.update(e.numbers)
        evidence.append(Evidence(f"{e.exc_type} at {e.location}", source=state_source(ctx.state)))
    exc = log_match(ctx, "AssertionError", code="page_size_padded >= page_size")
    if exc is not None:
        evidence += log_evidence(ctx, exc, "mamba_padding_percent")
    if not evidence:
        return []
    # a prediction names them mamba_*; the assert's own operands (the probes' note in a log) page_size / page_size_padded
    real = numbers.get("mamba_page_size", numbers.get("page_size"))
    padded = numbers.get("mamba_page_size_padded", numbers.get("page_size_padded"))
    comps = [Comparison("MambaSpec page_size_padded >= layer page", expected=real, actual=padded, unit="B")] if real else []
    msg = (f"The Mamba layers' state page ({fmt_bytes(real)}, including {spec_k(ctx)} speculative conv rows) is larger than "
           f"the page vLLM padded to from the model config ({fmt_bytes(padded)}), which left the speculative rows out.")
    return [Finding(rule=ID, category="kv_page_size", title="Mamba page larger than its padded page (config omits spec rows)",
                    severity="error", message=msg, numbers=numbers, comparisons=comps, evidence=evidence)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    out = []
    env = ctx.state.environment if ctx.state else {}
    real = finding.numbers.get("mamba_page_size", finding.numbers.get("page_size"))
    per_tok = env.get("attn_page_per_token_alignment")
    a = env.get("alignment_kernel_block") or 16
    if real and per_tok:
        block = a * cdiv(real, a * per_tok)
        out.append(Suggestion(title=f"raise the attention block size to {block} so the padded page covers the speculative rows",
                              tradeoff=f"prefix caching and KV allocation in {block}-token blocks (coarser granularity)",
                              changes=[Change("block_size", block)]))
    out.append(Suggestion(title="turn speculative decoding off", tradeoff="loses the speculative decode speed-up",
                          changes=[Change("speculative_config", None)]))
    out.append(Suggestion(title="upgrade to vLLM >= 0.32.0 (config-side shapes include the speculative rows)",
                          tradeoff="needs a newer vLLM build", changes=[Change("vllm_version", "0.32.0")]))
    return out


RULE = Rule(id=ID, title="Mamba page larger than the config-derived padded page", category="kv_page_size", check=check,
            versions=">=0.17,<0.32 (Granite-4.0-H, Falcon-H1, Zamba2, Bamba, Plamo2)", fixed_in="0.32.0 (PR #47635)",
            reads=("state", "log"), doc=__doc__ or "")
