"""dsa_next_n -- next_n = num_speculative_tokens + 1 above the DeepGEMM paged-MQA-logits limit.

Failure (vllm#43457): DeepSeek sparse-attention models (V3.2 DSA indexer, V4) score draft positions
with DeepGEMM's ``fp8(_fp4)_paged_mqa_logits``, called with ``next_n = k + 1``. On Hopper (sm_90)
the kernel's host assert accepts ``next_n == 1 or next_n == 2`` (newer builds also 4), so
``num_speculative_tokens = 2`` fails during ``profile_cudagraph_memory``:
``RuntimeError: Worker failed with error 'Assertion error (.../smxx_fp8_fp4_paged_mqa_logits.hpp:233):
next_n == 1 or next_n == 2'``. Blackwell (sm_100) supports any next_n natively.

Versions (section 3.7): the DeepSeek-V4 indexer path calls the kernel natively before 0.28
(#43457); V3.2's indexer flattens unsupported next_n from 0.19 on; from 0.28 both flatten on sm_90
unless next_n is in (1, 2, 4) -- next_n = 4 then needs a DeepGEMM build with 4 on sm_90.
Evidence: model (indexer), k, GPU compute capability, version; log: the kernel assert text.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import architecture, log_evidence, log_match, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "dsa_next_n"


def _cc(ctx: RuleContext) -> tuple[int, int] | None:
    if ctx.gpu is not None and ctx.gpu.compute_capability:
        return tuple(ctx.gpu.compute_capability)
    if ctx.state is not None and ctx.state.environment.get("compute_capability"):
        return tuple(ctx.state.environment["compute_capability"])
    if ctx.log is not None and ctx.log.startup.get("compute_capability"):
        return tuple(ctx.log.startup["compute_capability"])
    return None


def _has_indexer(ctx: RuleContext) -> bool:
    if ctx.state is not None and ctx.state.environment.get("has_dsa_indexer"):
        return True
    return (architecture(ctx) or "").startswith(("DeepseekV32", "DeepseekV4", "GlmMoeDsa"))


def native_next_n(ctx: RuleContext) -> tuple[set[int] | None, str]:
    """next_n values that reach the kernel natively (None = any), and why."""
    v = version(ctx)
    cc = _cc(ctx)
    arch = architecture(ctx) or ""
    if cc is not None and cc[0] == 10:
        return None, "sm_100 supports any next_n natively"
    if v is not None and v >= (0, 28, 0):
        return {1, 2, 4}, "0.28+: sm_90 runs next_n in (1, 2, 4) natively and flattens the rest"
    if arch.startswith("DeepseekV4") or v is None:
        return {1, 2}, "the DeepSeek-V4 indexer calls paged_mqa_logits natively (vllm#43457)"
    if v >= (0, 19, 0):
        return set(range(1, 3)), "flattened"  # V3.2: unsupported next_n is flattened -> safe
    return None, "0.17 flattens every multi-token decode"


def check(ctx: RuleContext) -> list[Finding]:
    k = spec_k(ctx)
    exc = log_match(ctx, None, text="next_n ==")
    if not _has_indexer(ctx) and exc is None:
        return []
    if k <= 0 and exc is None:
        return []
    cc = _cc(ctx)
    next_n = k + 1 if k > 0 else (ctx.log.numbers.get("next_n") or ctx.log.startup.get("dsa_next_n") if ctx.log else None)
    if next_n is None and exc is None:
        return []
    if k <= 0 and isinstance(next_n, int):
        k = next_n - 1  # the depth the indexer's next_n (or the kernel's) implies
    allowed, why = native_next_n(ctx)
    arch = architecture(ctx) or ""
    evidence: list[Evidence] = []
    severity = "error"
    if exc is not None:
        evidence += log_evidence(ctx, exc, "kernel_assert_file")
        if ctx.log and ctx.log.numbers.get("next_n_allowed"):
            allowed = set(ctx.log.numbers["next_n_allowed"])
    else:
        if cc is not None and cc[0] not in (9,):
            return []  # sm_100 (any next_n) or a GPU without DeepGEMM
        if allowed is None or why == "flattened":
            return []
        v = version(ctx)
        if v is not None and v >= (0, 28, 0):
            if next_n != 4:
                return []  # flattened to next_n = 1 rows on sm_90
            severity = "warning"  # native only with a DeepGEMM build that accepts 4 on sm_90
        elif next_n in allowed:
            return []
        if cc is None:
            severity = "warning"
        evidence.append(Evidence(f"{arch}: num_speculative_tokens={k} -> next_n={next_n}; GPU "
                                 f"{'sm_%d%d' % cc if cc else 'unknown'}; {why}", source=state_source(ctx.state)))
    max_ok = max(a for a in (allowed or {2}) if a != 4 or severity == "warning") if allowed else 2
    comps = [Comparison("next_n = num_speculative_tokens + 1", expected=f"in {sorted(allowed or {1, 2})}", actual=next_n)]
    msg = (f"DeepGEMM's paged_mqa_logits kernel is called with next_n = num_speculative_tokens + 1"
           + (f" = {next_n}" if next_n is not None else " (its value is not in the log)") + "; "
           + ("on Hopper it" if cc is None or cc[0] == 9 else f"this DeepGEMM build (on sm_{cc[0]}{cc[1]})")
           + f" accepts next_n in {sorted(allowed or {1, 2})}, so the engine fails during CUDA-graph memory profiling. "
           f"k={max_ok - 1} is the largest speculative depth that works here.")
    if severity == "warning" and cc is None:
        msg += " (GPU unknown: pass --gpu; Blackwell sm_100 is not affected.)"
    return [Finding(rule=ID, category="spec_kernel_limit", title=f"next_n={next_n} above the DeepGEMM paged_mqa_logits limit",
                    severity=severity, message=msg, comparisons=comps, evidence=evidence,
                    numbers={"next_n": next_n, "num_speculative_tokens": k, "allowed_next_n": sorted(allowed or {1, 2}),
                             "compute_capability": list(cc) if cc else None},
                    missing_evidence=[] if cc else ["GPU compute capability (--gpu)"])]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    allowed = [a for a in finding.numbers.get("allowed_next_n") or [1, 2] if a != 4]
    k_ok = max(allowed) - 1
    out = []
    if k_ok >= 1:
        out.append(Suggestion(
            title=f"cap speculative depth at num_speculative_tokens={k_ok} (next_n={k_ok + 1})",
            tradeoff="keeps MTP; leaves part of the speed-up (#43457: 1.49x at k=1 vs ~1.85-2.0x expected at k=2, bs=1)",
            changes=[Change("num_speculative_tokens", k_ok)]))
    out.append(Suggestion(title="turn speculative decoding off", tradeoff="no MTP speed-up at all",
                          changes=[Change("speculative_config", None)]))
    return out


RULE = Rule(id=ID, title="DeepGEMM paged_mqa_logits next_n limit (sparse-attention indexer + MTP)", category="spec_kernel_limit",
            check=check, versions="DeepSeek-V4 <0.28 on sm_90; V3.2/V4 >=0.28 next_n=4 needs DeepGEMM support",
            reads=("state", "log"), doc=__doc__ or "")
