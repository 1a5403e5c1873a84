"""spec_cudagraph_downgrade -- full CUDA graphs dropped because an attention backend decodes one token at a time.

Under speculative decoding a uniform decode batch has 1 + k query tokens a request. A backend whose full CUDA
graphs support only single-token decodes (``AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE``: the DeepSeek
V3.2 sparse indexer, FlashMLA and FlashInfer-MLA builders in many releases, Mamba builders in early ones) cannot
replay a graph for them, so vLLM logs "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for
attention backend X (support: ...); setting cudagraph_mode=PIECEWISE" (or NONE) and the decode runs its
attention outside CUDA graphs. Nothing fails: decode gets slower, and the speed-up the drafts should bring can
turn into a slow-down. For an MLA / sparse-indexer backend, and for any attention backend of a model without
recurrent layers (FlashInfer's GQA decode on a GPU without its TRTLLM/XQA kernels, FlashAttention), that is the
attention kernel's query-length limit under drafts, seen as performance (README family C); on a hybrid (Mamba, GDN,
linear attention, short convolution), whose state builders' graphs replay the same decodes, it is the CUDA-graph
sibling: capture vs 1 + k (E).

Log only (the warning). Versions: all with ``AttentionCGSupport`` (0.11+). Severity: warning.
"""

from __future__ import annotations

import re

from ..model import Comparison, Finding, Suggestion
from ._modelnames import HYBRID_MODEL, MAYBE_RECURRENT
from ._util import architecture, family, log_evidence, spec_k
from .base import Rule, RuleContext

ID = "spec_cudagraph_downgrade"
# MLA decode backends and the DSA indexer: their query-length support is the family-C kernel limit
_MLA_BACKEND = re.compile(r"MLA|Indexer|Sparse|DeepseekV3", re.I)
# the metadata builders of a hybrid's recurrent layers
_STATE_BUILDER = re.compile(r"Mamba|GDN|GatedDeltaNet|Linear|ShortConv|KDA|Lightning|RecoverSSM", re.I)


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
    attention = bool(_MLA_BACKEND.search(backend)) or not _STATE_BUILDER.search(backend) and _dense_model(ctx)
    return [Finding(
        rule=ID, category="spec_kernel_limit" if attention else "cudagraph_shape", severity="warning",
        title=f"Full CUDA graphs off under speculative decoding ({backend})",
        message=(f"{backend} supports full CUDA graphs for single-token decodes only ({support}); with drafts a decode "
                 f"has {'1 + k = ' + str(k + 1) if k else '1 + k'} query tokens, so vLLM set cudagraph_mode={mode} and "
                 "decode attention runs outside CUDA graphs: slower decode steps that can cancel the drafts' speed-up."),
        evidence=log_evidence(ctx, None, "cudagraph_spec_downgrade_backend"),
        comparisons=[Comparison("decode query tokens a full graph of this backend takes", expected=1,
                                actual=k + 1 if k else "1 + k")],
        numbers=numbers, confidence="high",
        basis="vLLM's own warning that it dropped full CUDA graphs for this backend under speculative decoding")]


def _dense_model(ctx: RuleContext) -> bool:
    """The log names the model and it has no recurrent layers (an unknown model is not assumed dense)."""
    names = " ".join(n for n in (architecture(ctx), ctx.log.model if ctx.log is not None else None) if n)
    return bool(names) and family(ctx) not in ("gdn", "mamba2", "mamba1") and not (HYBRID_MODEL.search(names) or MAYBE_RECURRENT.search(names))


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    from ..model import Change

    return [Suggestion(title="compare against the same load without speculative decoding",
                       tradeoff="no drafts, but full CUDA graphs for decode; keep whichever serves faster",
                       changes=[Change("speculative_config", None)])]


RULE = Rule(id=ID, title="Full CUDA graphs dropped under speculative decoding", category="spec_kernel_limit",
            check=check, reads=("log",), doc=__doc__ or "")
