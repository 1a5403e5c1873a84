"""gdn_mixed_batch -- the GDN builder rejects batches mixing decodes and spec decodes.

Failure (vllm#38196, also #34845): in 0.17.x ``GDNAttentionMetadataBuilder.build`` asserts
``not (num_decodes > 0 and num_spec_decodes > 0)``. With speculative decoding (ngram with partial
rejections, or a last prefill chunk of length 1 next to spec decodes) a step holds both, and the
engine dies after the first requests: ``AssertionError: num_decodes: 1, num_spec_decodes: 1``.

Versions: 0.17.x (fixed in 0.19.0 by PR #34871, which reclassifies such decodes as prefills).
Evidence: GDN model + k > 0 + version (predicted); recorded batch steps with both kinds; log: the
assert message.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, log_evidence, log_match, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "gdn_mixed_batch"


def check(ctx: RuleContext) -> list[Finding]:
    v = version(ctx)
    if in_range(v, (0, 17), (0, 19)) is False:
        return []
    evidence: list[Evidence] = []
    numbers: dict = {}
    comps: list[Comparison] = []
    k = spec_k(ctx)
    st = ctx.state
    if st is not None and st.steps:
        mixed = [s for s in st.steps if s.num_decodes > 0 and s.num_spec_decodes > 0
                 and (s.builder is None or "GDN" in s.builder)]
        if mixed:
            s = mixed[0]
            numbers.update(step=s.step_index, num_decodes=s.num_decodes, num_spec_decodes=s.num_spec_decodes)
            comps.append(Comparison("decodes next to spec decodes in one step", expected=0, actual=s.num_decodes))
            evidence.append(Evidence(f"step {s.step_index}: {s.num_decodes} decodes + {s.num_spec_decodes} spec decodes "
                                     f"({s.builder or 'GDN builder'})", source=state_source(st)))
    elif st is not None and st.source == "predicted" and family(ctx) == "gdn" and k > 0 and v is not None:
        evidence.append(Evidence(f"GDN model, {cfg(ctx, 'speculative_method')} with num_speculative_tokens={k}, vLLM "
                                 f"{'.'.join(map(str, v))}", source="preflight"))
        numbers.update(num_speculative_tokens=k, speculative_method=cfg(ctx, "speculative_method"),
                       gdn_layers=sum(1 for s in st.specs("layer") if s.is_mamba))
        comps.append(Comparison("vLLM version (builder accepts decodes + spec decodes together)", expected=">= 0.19.0",
                                actual=".".join(map(str, v))))
    exc = log_match(ctx, "AssertionError", text="num_spec_decodes")
    if exc is not None and ctx.log is not None:
        evidence += log_evidence(ctx, exc)
        nd, ns = ctx.log.numbers.get("num_decodes"), ctx.log.numbers.get("num_spec_decodes")
        if nd is not None and not comps:
            numbers.update(num_decodes=nd, num_spec_decodes=ns)
            comps.append(Comparison("decodes next to spec decodes in one step", expected=0, actual=nd))
    if not evidence:
        return []
    msg = ("vLLM 0.17's GDN metadata builder assumes a step has either plain decodes or speculative decodes, never both; "
           "a partially rejected draft (or a 1-token last prefill chunk) produces both and kills the engine after the first "
           "requests.")
    return [Finding(rule=ID, category="mixed_batch", title="GDN builder cannot mix decodes and spec decodes (vLLM 0.17)",
                    severity="error", message=msg, numbers=numbers, comparisons=comps, evidence=evidence,
                    missing_evidence=[] if v else ["vLLM version (rule applies to 0.17.x)"])]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [
        Suggestion(title="upgrade to vLLM >= 0.19.0 (PR #34871 reclassifies those decodes)",
                   tradeoff="keeps speculative decoding; needs a newer vLLM build", changes=[Change("vllm_version", "0.19.0")]),
        Suggestion(title="turn speculative decoding off", tradeoff="loses the ngram/MTP decode speed-up",
                   changes=[Change("speculative_config", None)]),
    ]


RULE = Rule(id=ID, title="GDN decodes + spec decodes in one batch", category="mixed_batch", check=check,
            versions=">=0.17,<0.19", fixed_in="0.19.0 (PR #34871)", reads=("state", "log"), doc=__doc__ or "")
