"""mamba_state_slicing -- per-request block indices sliced by the token count.

Failure (vllm#39809 "Bug 2", visible once Bug 1 is patched): for CUDA-graph capture in Mamba cache
mode "all" the builder slices the per-request ``block_idx_last_scheduled_token`` /
``block_idx_last_computed_token`` buffers by ``num_decode_tokens`` instead of the number of
requests. With ``k`` speculative tokens a decode batch of ``t`` tokens has ``t/(k+1)`` requests, but
the slice keeps ``min(t, buffer)`` rows; the mixer then splits by ``[num_decodes, num_prefills]``:
``RuntimeError: split_with_sizes expects split_sizes to sum exactly to 512 ... got split_sizes=[256, 0]``.
It only shows when the buffer (``min(max_num_seqs, max_cudagraph_capture_size)``) is larger than
``t/(k+1)`` -- e.g. max_num_seqs 1024 (the default on >= 70 GiB GPUs) with capture size 512.

Versions: 0.17 - 0.21 (mode "all"; the same fix series as PR #41233). Evidence: config + capture
sizes + buffer (predicted/recorded); log: the split_with_sizes message.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, in_range, log_evidence, log_match, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "mamba_state_slicing"


def check(ctx: RuleContext) -> list[Finding]:
    v = version(ctx)
    if in_range(v, (0, 17), (0, 22)) is False:
        return []
    k = spec_k(ctx)
    evidence: list[Evidence] = []
    numbers: dict = {}
    comps: list[Comparison] = []
    st = ctx.state
    if st is not None and k > 0 and cfg(ctx, "mamba_cache_mode") == "all" and "FULL" in str(cfg(ctx, "cudagraph_mode") or ""):
        buf = next((b for b in st.builder_buffers if b.name == "block_idx_last_scheduled_token"), None)
        t = int(cfg(ctx, "max_cudagraph_capture_size") or 0)
        if buf is not None and t:
            rows = min(t, buf.shape[0])
            reqs = t // (k + 1)
            if rows != reqs:
                numbers.update(capture_tokens=t, num_decodes=reqs, sliced_rows=rows, buffer_rows=buf.shape[0],
                               max_num_seqs=cfg(ctx, "max_num_seqs"), num_speculative_tokens=k)
                comps.append(Comparison("block_idx rows passed to the mixer (= num_decodes)", expected=reqs, actual=rows))
                evidence.append(Evidence(f"{buf.builder}.{buf.name} [{buf.shape[0]}]; capture size {t} tokens = {reqs} "
                                         f"requests x {k + 1}", source=state_source(st)))
    # the log's split error is this mechanism only where its set-up can hold: prefix caching in Mamba cache mode
    # "all" (stated, or prefix caching on with the mode unstated); any other split error in hybrid code is the
    # diagnosis' business (a decode/prefill split of a mixed batch)
    mode, pc = cfg(ctx, "mamba_cache_mode"), cfg(ctx, "enable_prefix_caching")
    exc = log_match(ctx, "RuntimeError", text="split_with_sizes") if (mode == "all" or (mode is None and pc)) else None
    if exc is not None and ctx.log is not None:
        evidence += log_evidence(ctx, exc)
        sizes, total = ctx.log.numbers.get("split_sizes"), ctx.log.numbers.get("split_sizes_expected_sum")
        if not comps and sizes and total is not None:
            comps.append(Comparison("rows split by [num_decodes, num_prefills]", expected=sum(sizes), actual=total))
            numbers.update(split_sizes=sizes, tensor_rows=total)
    if not evidence:
        return []
    msg = ("Mamba cache mode 'all' + speculative decoding: the per-request block-index buffers are sliced by the token "
           "count during CUDA-graph capture, so the mixer receives more rows than decode requests "
           "(shows up after the state-index width bug is patched).")
    return [Finding(rule=ID, category="state_index", title="Per-request Mamba block indices sliced by token count",
                    severity="error", message=msg, numbers=numbers, comparisons=comps, evidence=evidence,
                    missing_evidence=[] if v else ["vLLM version (rule applies to 0.17-0.21)"])]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    k = spec_k(ctx)
    t = int(cfg(ctx, "max_cudagraph_capture_size") or 512)
    out = [Suggestion(title="turn prefix caching off (Mamba cache mode 'none')",
                      tradeoff="keeps speculative decoding; no prefix reuse", changes=[Change("enable_prefix_caching", False)])]
    if k:
        out.append(Suggestion(title=f"cap max_num_seqs at {max(1, t // (k + 1))} so the buffer equals the decode requests",
                              tradeoff=f"at most {max(1, t // (k + 1))} concurrent requests",
                              changes=[Change("max_num_seqs", max(1, t // (k + 1)))]))
        out.append(Suggestion(title="turn MTP/speculative decoding off", tradeoff="~10-15% lower decode throughput",
                              changes=[Change("speculative_config", None)]))
    return out


RULE = Rule(id=ID, title="Mamba block indices sliced by tokens instead of requests", category="state_index", check=check,
            versions=">=0.17,<0.22", fixed_in="0.22 (with PR #41233)", reads=("state", "log"), doc=__doc__ or "")
