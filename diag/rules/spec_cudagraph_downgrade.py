"""spec_cudagraph_downgrade -- full CUDA graphs dropped because an attention backend decodes one token at a time.

Under speculative decoding a uniform decode batch has 1 + k query tokens a request. A backend whose full CUDA
graphs support only single-token decodes (``AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE``: the DeepSeek
V3.2 sparse indexer, FlashMLA and FlashInfer-MLA builders in many releases, Mamba builders in early ones) cannot
replay a graph for them, so vLLM logs "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for
attention backend X (support: ...); setting cudagraph_mode=PIECEWISE" (or NONE) and the decode runs its
attention outside CUDA graphs. Nothing fails: decode gets slower, and the speed-up the drafts should bring can
turn into a slow-down. For an MLA / sparse-indexer backend that is the MLA decode kernel's query-length limit under
drafts, seen as performance (README family C); for a GQA backend (FlashInfer's decode on a GPU without its
TRTLLM/XQA kernels, FlashAttention) and for a hybrid's state builders (Mamba, GDN, linear attention, short
convolution) it is the CUDA graphs' fit to 1 + k: full graphs lost on uniform spec decodes (E). A kernel that then
refuses the multi-token decode outright raises, and that error is the kernel limit's.

Log only (the warning). Versions: all with ``AttentionCGSupport`` (0.11+). Severity: warning.
"""

from __future__ import annotations

import re

from ..model import Comparison, Finding, Suggestion
from ._util import log_evidence, spec_k
from .base import Rule, RuleContext

ID = "spec_cudagraph_downgrade"
# MLA decode backends and the DSA indexer: their query-length support is the family-C kernel limit
_MLA_BACKEND = re.compile(r"MLA|Indexer|Sparse|DeepseekV3", re.I)


def check(ctx: RuleContext) -> list[Finding]:
    start = ctx.log.startup if ctx.log is not None else {}
    backend = start.get("cudagraph_spec_downgrade_backend")
    if not backend:
        return []
    support = start.get("cudagraph_spec_downgrade_support") or "?"
    mode = start.get("cudagraph_spec_downgrade_mode") or "PIECEWISE"
    k = spec_k(ctx)
    numbers = {"cudagraph_mode": mode, "attention_cg_support": support}
    if k:
        numbers.update(num_speculative_tokens=k, uniform_decode_query_len=k + 1)
    mla = bool(_MLA_BACKEND.search(backend))
    return [Finding(
        rule=ID, category="spec_kernel_limit" if mla else "cudagraph_shape", severity="warning",
        title=f"Full CUDA graphs off under speculative decoding ({backend})",
        message=(f"{backend} supports full CUDA graphs for single-token decodes only ({support}); with drafts a decode "
                 f"has {'1 + k = ' + str(k + 1) if k else '1 + k'} query tokens, so vLLM set cudagraph_mode={mode} and "
                 "decode attention runs outside CUDA graphs: slower decode steps that can cancel the drafts' speed-up."),
        evidence=log_evidence(ctx, None, "cudagraph_spec_downgrade_backend"),
        comparisons=[Comparison("decode query tokens a full graph of this backend takes", expected=1,
                                actual=k + 1 if k else "1 + k")],
        numbers=numbers, confidence="high",
        basis="vLLM's own warning that it dropped full CUDA graphs for this backend under speculative decoding")]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    from ..model import Change

    return [Suggestion(title="compare against the same load without speculative decoding",
                       tradeoff="no drafts, but full CUDA graphs for decode; keep whichever serves faster",
                       changes=[Change("speculative_config", None)])]


RULE = Rule(id=ID, title="Full CUDA graphs dropped under speculative decoding", category="spec_kernel_limit",
            check=check, reads=("log",), doc=__doc__ or "")
