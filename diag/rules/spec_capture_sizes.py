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

import re

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
    only_max = False
    if not user and ctx.log is not None and isinstance(ctx.log.args.get("max_cudagraph_capture_size"), int) \
            and _user_set_in_log(ctx.log, "max"):
        user, only_max = [ctx.log.args["max_cudagraph_capture_size"]], True  # vLLM fills the sizes up to the cap
    if not user:
        return _eager_steps(ctx, k)
    sizes = sorted(int(s) for s in user)
    seqs = int(cfg(ctx, "max_num_seqs") or 0)
    assumed = not seqs
    if assumed:
        seqs = _DEFAULT_MAX_NUM_SEQS  # (not in the log: vLLM's default serves at least this many at once)
    need = seqs * (k + 1)
    useless = [] if only_max else [s for s in sizes if s % (k + 1)]
    rounded = sizes if only_max else rounded_for_drafts(sizes, k)
    top = max(rounded or sizes)
    if top >= need:  # covered; sizes that are not multiples of k+1 only cost capture time
        return []
    evidence = [Evidence(f"cudagraph_capture_sizes {sizes}; max_num_seqs {seqs}{' (vLLM default, not in the log)' if assumed else ''}"
                         f" x (k+1={k + 1}) = {need} decode tokens", source=state_source(ctx.state))]
    msg = (f"With {k} speculative tokens a full decode step has up to {need} tokens, but full CUDA graphs stop at "
           f"{top} tokens ({top // (k + 1)} requests); larger decode steps run without full graphs.")
    if rounded != sizes:
        msg += (f" vLLM rounds the sizes up to multiples of {k + 1} and drops those past {max(sizes)}: "
                f"{rounded} are captured.")
    numbers = {"capture_sizes": sizes, "decode_tokens_at_max_num_seqs": need, "non_multiples": useless}
    if rounded != sizes:
        numbers.update(captured_sizes=rounded, max_cudagraph_capture_size=top, requests_with_graphs=top // (k + 1))
    return [Finding(rule=ID, category="cudagraph_shape", title="Capture sizes do not cover speculative decode batches",
                    severity="warning", message=msg, evidence=evidence,
                    comparisons=[Comparison("largest capture size", expected=need, actual=top, unit="tokens")],
                    numbers=numbers)]


def rounded_for_drafts(sizes: list[int], k: int, cap: int | None = None) -> list[int]:
    """The capture sizes vLLM keeps under drafts (0.15+, CompilationConfig.adjust_cudagraph_sizes_for_spec_decode):
    each rounded up to a multiple of 1 + k, those past the cap (the largest size given) dropped."""
    m, cap = k + 1, cap or max(sizes)
    kept = sorted({-(-s // m) * m for s in sizes if -(-s // m) * m <= cap})
    return kept or ([m] if m <= cap else [])


# vLLM's smallest default max_num_seqs on a GPU (0.11+: 256; more for the API server on large GPUs in later releases)
_DEFAULT_MAX_NUM_SEQS = 256


def _eager_steps(ctx: RuleContext, k: int) -> list[Finding]:
    """vLLM's own CUDA-graph stats (``--cudagraph-metrics``) show decode steps above the largest graph running without
    any (mode NONE) under drafts: with the default sizes (capped at 512 tokens) a step of more than 512 / (1 + k)
    requests has no graph -- the latency cliff past that concurrency."""
    st = ctx.log.startup if ctx.log is not None else {}
    eager = [r for r in st.get("cudagraph_eager_steps") or [] if isinstance(r, list) and len(r) == 2]
    full_max = st.get("cudagraph_full_max_tokens")
    printed = st.get("cudagraph_capture_size_max")  # (the metrics' own "Capture sizes: [...]")
    cap = max(int(cfg(ctx, "max_cudagraph_capture_size") or 0), int(full_max or 0), int(printed or 0))
    seqs = int(cfg(ctx, "max_num_seqs") or 0)
    # uniform decode steps: n x (1 + k) tokens, at most max_num_seqs requests (a longer step is a prefill chunk)
    above = [(t, n) for t, n in eager if cap and t > cap and t % (k + 1) == 0 and (not seqs or t <= seqs * (k + 1))]
    if not above:
        return []
    steps = sum(n for _, n in above)
    need = seqs * (k + 1) if seqs else max(t for t, _ in above)
    msg = (f"vLLM's CUDA-graph stats show {steps} decode steps of {', '.join(str(t) for t, _ in above[:4])} tokens "
           f"running without any graph (mode NONE): with {k} speculative tokens a step of n requests has n x {k + 1} "
           f"tokens, and the largest graph covers {cap} tokens ({cap // (k + 1)} requests), so decode steps past that "
           f"concurrency run eagerly -- a latency cliff, no error")
    return [Finding(rule=ID, category="cudagraph_shape", title=f"Decode steps above {cap} tokens run without CUDA graphs",
                    severity="warning", message=msg,
                    evidence=[Evidence(f"cudagraph stats: {above[:4]} (tokens, steps) in mode NONE; largest graph {cap}",
                                       source="log", line=(ctx.log.lines.get("cudagraph_eager_steps") or (None,))[0])],
                    comparisons=[Comparison("largest capture size", expected=need, actual=cap, unit="tokens")],
                    numbers={"max_cudagraph_capture_size": cap, "eager_decode_tokens": above[0][0], "eager_steps": steps,
                             "decode_tokens_at_max_num_seqs": need, "num_speculative_tokens": k})]


def _user_set_in_log(log, what: str = "sizes") -> bool:
    """The engine-config line prints vLLM's resolved sizes; only the command, the ``non-default args`` line or
    the reporter's own text (flags quoted in a sentence) says the user chose them (``what``: the sizes, or only
    their cap, ``--max-cudagraph-capture-size``)."""
    texts = [log.command or "", (log.lines.get("non_default_args") or (0, ""))[1]]
    if what == "max":
        return any(re.search(r"max[-_]cudagraph[-_]capture[-_]size", t) for t in texts)
    return any("capture_sizes" in t for t in texts) or "cudagraph_capture_sizes" in (
        log.startup.get("printed_values") or {})


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    k = spec_k(ctx)
    if "eager_steps" in finding.numbers:  # default sizes, capped: raise the cap to the largest decode step
        need = int(finding.numbers["decode_tokens_at_max_num_seqs"])
        return [Suggestion(title=f"raise max_cudagraph_capture_size to {need} ({need // (k + 1)} requests x {k + 1})",
                           tradeoff="more graphs to capture: longer startup and more GPU memory for the graphs",
                           changes=[Change("max_cudagraph_capture_size", need)])]
    need = finding.numbers.get("decode_tokens_at_max_num_seqs") or 0
    cap = min(need, 512)
    sizes = sorted({(k + 1) * i for i in (1, 2, 4, 8, 16, 32, 64, 128, 256) if (k + 1) * i <= cap} | {cap - cap % (k + 1)})
    sizes = [s for s in sizes if s > 0]
    return [Suggestion(title=f"capture multiples of {k + 1} up to {max(sizes)} tokens",
                       tradeoff="more graphs to capture: longer startup and a little more GPU memory",
                       changes=[Change("cudagraph_capture_sizes", sizes)])]


RULE = Rule(id=ID, title="Capture sizes vs speculative decode", category="cudagraph_shape", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")
