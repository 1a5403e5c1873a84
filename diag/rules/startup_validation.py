"""startup_validation -- a configuration vLLM's own start-up checks refuse, or a kernel refuses at step 1.

Failure: the pre-flight evaluates vLLM's validation sites (``vllm_diag.preflight.validate``: the
condition and message of each check, from the failure-site catalog built from vLLM's source, with
the predicted values bound to its names), the release's ``MambaModelConfig`` (Mamba cache mode,
chunked prefill), the model registry (architectures a release removed) and the CPU kernels' checks.
Each failing check is an ``ErrorRecord`` of the predicted state with ``numbers["check"]``; this rule
turns each into a finding with vLLM's message, the condition, and the numbers it was evaluated on.

Versions: every release the catalog and the extracted defaults cover (0.11-0.33). Evidence:
predicted state only (recorded and logged failures are matched by the post-mortem rules).
"""

from __future__ import annotations

from ..model import CATEGORIES, Change, Evidence, Finding, Suggestion
from .base import Rule, RuleContext

ID = "startup_validation"
_HIDDEN = {"site", "check", "condition", "category"}


def check(ctx: RuleContext) -> list[Finding]:
    st = ctx.state
    if st is None or st.source != "predicted":
        return []
    out: list[Finding] = []
    for e in st.errors:
        key = e.numbers.get("check")
        if not key:
            continue
        cat = e.numbers.get("category") if e.numbers.get("category") in CATEGORIES else "other"
        when = "refuses this configuration at start-up" if e.phase == "init" else "fails at the first step"
        cond = e.numbers.get("condition")
        site = e.numbers.get("site")
        basis = (f"vLLM's check {site} ({e.location}) evaluated on the predicted configuration" if site else
                 f"{e.location}: {e.notes[0] if e.notes else 'predicted from the configuration'}")
        evidence = [Evidence(text=f"{e.location}: {note}", source="preflight") for note in e.notes[:2]]
        if cond and not any(cond in ev.text for ev in evidence):
            evidence.append(Evidence(text=f"condition: {cond}", source="preflight"))
        out.append(Finding(
            rule=ID, category=cat, severity="error", title=f"vLLM {when}: {e.exc_type}",
            message=e.message or f"{e.exc_type} at {e.location}",
            numbers={k: v for k, v in e.numbers.items() if k not in _HIDDEN},
            evidence=evidence, confidence="high" if site or key in ("mamba_cache_mode", "architecture") else "medium",
            basis=basis))
    return out


_FIXES = {
    "mamba_cache_mode": [Suggestion(title="keep chunked prefill on (Mamba 'align' needs it)",
                                    tradeoff="long prompts are prefilled in chunks", changes=[Change("enable_chunked_prefill", None)]),
                         Suggestion(title="turn prefix caching off (Mamba cache mode 'none')",
                                    tradeoff="no prefix reuse", changes=[Change("enable_prefix_caching", False)])],
    "mamba_block_size_needs_prefix_caching": [Suggestion(title="drop --mamba-block-size", tradeoff="none",
                                                         changes=[Change("mamba_block_size", None)])],
    "common_block_size": [Suggestion(title="let vLLM pick the block size", tradeoff="none",
                                     changes=[Change("block_size", None)])],
    "cpu_gdn_bf16": [Suggestion(title="run in bfloat16", tradeoff="bf16 activations", changes=[Change("dtype", "bfloat16")])],
    "cpu_fp8_head_size": [Suggestion(title="keep the KV cache unquantized", tradeoff="2x KV memory",
                                     changes=[Change("kv_cache_dtype", None)])],
}


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    st = ctx.state
    key = None
    if st is not None:
        key = next((e.numbers.get("check") for e in st.errors if e.message == finding.message), None)
    return [Suggestion(s.title, s.tradeoff, list(s.changes)) for s in _FIXES.get(key or "", [])]


RULE = Rule(id=ID, title="vLLM start-up validation (catalog conditions evaluated by the pre-flight)", category="other",
            check=check, versions="all", reads=("state",), doc=__doc__ or "")
