"""gdn_cudagraph_capture -- full CUDA-graph capture sizes above the GDN builder's buffers.

Failure: the GDN builder sizes its persistent buffers for
``bs = min(max_num_seqs * (k + 1), max_cudagraph_capture_size)`` tokens and, when capturing full
CUDA graphs, asserts ``num_reqs <= bs and num_tokens <= bs``:
``AssertionError: GDN only supports decode-only full CUDAGraph capture. Make sure batch size (r) <=
cudagraph capture sizes (bs), and number of tokens (t) <= cudagraph capture sizes (bs).``
``cudagraph_mode`` FULL (full graphs for mixed batches too) with capture sizes above ``bs`` -- e.g.
explicit ``cudagraph_capture_sizes`` larger than ``max_num_seqs * (k + 1)`` -- trips it at startup.
FULL_AND_PIECEWISE / FULL_DECODE_ONLY capture only uniform decode batches, which fit.

Versions: all with GDN (0.17+). Evidence: config (mode, capture sizes, max_num_seqs, k) and the GDN
buffer shape; log: the assert text with its numbers.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, log_evidence, log_match, spec_k, state_source
from .base import Rule, RuleContext

ID = "gdn_cudagraph_capture"


def check(ctx: RuleContext) -> list[Finding]:
    evidence: list[Evidence] = []
    numbers: dict = {}
    comps: list[Comparison] = []
    k = spec_k(ctx)
    mode = str(cfg(ctx, "cudagraph_mode") or "")
    st = ctx.state
    if st is not None and family(ctx) == "gdn" and mode == "FULL" and not cfg(ctx, "enforce_eager"):
        sizes = cfg(ctx, "cudagraph_capture_sizes") or []
        seqs = int(cfg(ctx, "max_num_seqs") or 0)
        bs = min(seqs * (k + 1), int(cfg(ctx, "max_cudagraph_capture_size") or 0))
        over = [s for s in sizes if s > bs]
        if over and seqs:
            numbers.update(gdn_buffer_tokens=bs, max_capture_size=max(sizes), max_num_seqs=seqs, num_speculative_tokens=k)
            comps.append(Comparison("largest full-graph capture size <= GDN buffer", expected=bs, actual=max(sizes), unit="tokens"))
            evidence.append(Evidence(f"cudagraph_mode FULL, capture sizes up to {max(sizes)}; GDN buffers sized "
                                     f"min({seqs} x {k + 1}, {cfg(ctx, 'max_cudagraph_capture_size')}) = {bs}", source=state_source(st)))
    exc = log_match(ctx, "AssertionError", text="GDN only supports decode-only full CUDAGraph capture")
    if exc is not None and ctx.log is not None:
        evidence += log_evidence(ctx, exc)
        n = ctx.log.numbers
        if not comps and n.get("capture_size") is not None:
            comps.append(Comparison("tokens in the captured batch <= GDN buffer", expected=n["capture_size"],
                                    actual=n.get("capture_num_tokens"), unit="tokens"))
            numbers.update({k2: n[k2] for k2 in ("capture_num_reqs", "capture_size", "capture_num_tokens") if k2 in n})
    if not evidence:
        return []
    msg = ("Full CUDA graphs are captured for batches larger than the GDN builder's persistent buffers "
           "(min(max_num_seqs x (k+1), max capture size) tokens); GDN supports only decode-only full graphs within that size.")
    return [Finding(rule=ID, category="cudagraph_shape", title="CUDA-graph capture sizes exceed the GDN decode buffers",
                    severity="error", message=msg, numbers=numbers, comparisons=comps, evidence=evidence)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [
        Suggestion(title="capture full graphs for decode batches only (FULL_AND_PIECEWISE)",
                   tradeoff="mixed prefill/decode batches run piecewise graphs (vLLM's default for hybrids)",
                   changes=[Change("cudagraph_mode", "FULL_AND_PIECEWISE")]),
        Suggestion(title="run without CUDA graphs (--enforce-eager)", tradeoff="lower decode throughput, faster startup",
                   changes=[Change("enforce_eager", True)]),
    ]


RULE = Rule(id=ID, title="GDN full CUDA-graph capture sizes", category="cudagraph_shape", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")
