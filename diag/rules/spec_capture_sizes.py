"""spec_capture_sizes -- CUDA-graph capture sizes that do not cover speculative decode batches.

A decode step with ``k`` speculative tokens carries ``num_reqs x (k + 1)`` tokens. Full decode
graphs exist only for token counts up to ``max_cudagraph_capture_size``; when the user's explicit
capture sizes stop below ``max_num_seqs x (k + 1)``, decode steps with more than
``max_capture / (k + 1)`` requests fall back to piecewise/eager execution (slower, no error), and
sizes that are not multiples of ``k + 1`` are never used for uniform spec decodes.
Log evidence: ``Truncating max_cudagraph_capture_size to N`` (startup fact).

Versions: all. Severity: warning (performance), only when the user set the capture sizes.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, spec_k, state_source
from .base import Rule, RuleContext

ID = "spec_capture_sizes"


def check(ctx: RuleContext) -> list[Finding]:
    k = spec_k(ctx)
    if k <= 0 or cfg(ctx, "enforce_eager") or str(cfg(ctx, "cudagraph_mode") or "") in ("NONE", "PIECEWISE"):
        return []
    user = (ctx.state is not None and ctx.state.source == "predicted" and (
        ctx.state.config.get("compilation_config", {}) or {}).get("cudagraph_capture_sizes")) or None
    if ctx.log is not None and ctx.log.args.get("cudagraph_capture_sizes") and _user_set_in_log(ctx.log):
        user = ctx.log.args["cudagraph_capture_sizes"]
    if not user:
        return []
    sizes = sorted(int(s) for s in user)
    seqs = int(cfg(ctx, "max_num_seqs") or 0)
    need = seqs * (k + 1)
    useless = [s for s in sizes if s % (k + 1)]
    if max(sizes) >= need:  # covered; sizes that are not multiples of k+1 only cost capture time
        return []
    evidence = [Evidence(f"cudagraph_capture_sizes {sizes}; max_num_seqs {seqs} x (k+1={k + 1}) = {need} decode tokens",
                         source=state_source(ctx.state))]
    msg = (f"With {k} speculative tokens a full decode step has up to {need} tokens, but full CUDA graphs stop at "
           f"{max(sizes)} tokens ({max(sizes) // (k + 1)} requests); larger decode steps run without full graphs.")
    if useless:
        msg += f" Sizes {useless} are not multiples of {k + 1} and are never used for uniform spec-decode steps."
    return [Finding(rule=ID, category="cudagraph_shape", title="Capture sizes do not cover speculative decode batches",
                    severity="warning", message=msg, evidence=evidence,
                    comparisons=[Comparison("largest capture size", expected=need, actual=max(sizes), unit="tokens")],
                    numbers={"capture_sizes": sizes, "decode_tokens_at_max_num_seqs": need, "non_multiples": useless})]


def _user_set_in_log(log) -> bool:
    """The engine-config line prints vLLM's resolved sizes; only the command or the
    ``non-default args`` line says the user chose them."""
    texts = [log.command or "", (log.lines.get("non_default_args") or (0, ""))[1]]
    return any("capture_sizes" in t for t in texts)


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    k = spec_k(ctx)
    need = finding.numbers.get("decode_tokens_at_max_num_seqs") or 0
    cap = min(need, 512)
    sizes = sorted({(k + 1) * i for i in (1, 2, 4, 8, 16, 32, 64, 128, 256) if (k + 1) * i <= cap} | {cap - cap % (k + 1)})
    sizes = [s for s in sizes if s > 0]
    return [Suggestion(title=f"capture multiples of {k + 1} up to {max(sizes)} tokens",
                       tradeoff="more graphs to capture: longer startup and a little more GPU memory",
                       changes=[Change("cudagraph_capture_sizes", sizes)])]


RULE = Rule(id=ID, title="Capture sizes vs speculative decode", category="cudagraph_shape", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")
