"""spec_token_budget -- speculative tokens exhausting max_num_batched_tokens.

Each decoding request schedules ``k + 1`` tokens per step (k draft tokens to verify plus one). With
``max_num_seqs x (k + 1) > max_num_batched_tokens`` at most ``budget // (k + 1)`` requests decode
per step and prefills starve (at ``=`` a full batch of decodes leaves no prefill token a step); with
``k + 1 > budget`` not even one request fits (vLLM rejects or truncates drafts). Typical trap: ngram
with ``num_speculative_tokens: 128`` (vllm#38196's config).

Evidence: config (predicted defaults included) or log arguments. Versions: all.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, spec_k, state_source
from .base import Rule, RuleContext

ID = "spec_token_budget"


def check(ctx: RuleContext) -> list[Finding]:
    capped = _capped_by_draft_pass(ctx) or _slots_reserved_for_drafting(ctx)
    if capped:
        return capped
    k = spec_k(ctx)
    budget, seqs = cfg(ctx, "max_num_batched_tokens"), cfg(ctx, "max_num_seqs")
    if k <= 0 or not budget or not seqs:
        return []
    budget, seqs = int(budget), int(seqs)
    need = seqs * (k + 1)
    if need < budget:
        return _decodes_crowd_out_prefills(ctx, k, budget)
    fit = budget // (k + 1)
    sev = "error" if fit < 1 else "warning"
    if need == budget:  # (a full batch of decodes takes the whole step: no token is left for a prefill)
        msg = (f"{seqs} requests x (k+1 = {k + 1}) = {need} tokens per decode step, all of max_num_batched_tokens "
               f"{budget}: with the batch full no prefill token fits a step, so new requests wait for running ones to "
               "finish (time to first token grows with the load).")
    else:
        msg = (f"{seqs} requests x (k+1 = {k + 1}) = {need} tokens per decode step, but max_num_batched_tokens is "
               f"{budget}: only {fit} requests can decode per step"
               + (" -- not even one." if fit < 1 else "; prefills wait behind them."))
    relation = "=" if need == budget else ">"
    return [Finding(rule=ID, category="token_budget", severity=sev, message=msg,
                    title=f"Speculative tokens exhaust the batch budget ({need} {relation} {budget})",
                    evidence=[Evidence(f"num_speculative_tokens {k}, max_num_seqs {seqs}, max_num_batched_tokens {budget}",
                                       source=state_source(ctx.state))],
                    comparisons=[Comparison("max_num_seqs x (k+1) <= max_num_batched_tokens", expected=budget, actual=need, unit="tokens")],
                    numbers={"num_speculative_tokens": k, "max_num_seqs": seqs, "max_num_batched_tokens": budget,
                             "requests_per_step": fit})]


def decodes_fill_half_budget(running: int, k: int, budget: int) -> bool:
    """The running decodes' k + 1 tokens each take half the step's token budget or more: what is left for the prefills
    that admit new requests is the budget's, not the memory's, limit."""
    return running * (k + 1) * 2 >= budget


def _decodes_crowd_out_prefills(ctx: RuleContext, k: int, budget: int) -> list[Finding]:
    """The stats lines' own batch: the running decodes' k + 1 tokens each take half the step's budget or more while
    requests wait and the KV cache has room, so the prefills that would admit the waiting requests get what is
    left -- a queue the token budget makes, not the memory."""
    st = ctx.log.startup if ctx.log is not None else {}
    if ctx.log is None or ctx.log.root is not None:
        return []
    running, waiting = st.get("num_requests_running_max"), st.get("num_requests_waiting_max")
    usage = st.get("gpu_kv_cache_usage_percent_max")
    if not (isinstance(running, int) and isinstance(waiting, int) and waiting > 0):
        return []
    if not isinstance(usage, (int, float)) or usage >= 80:
        return []  # a full KV cache queues requests on its own
    decode = running * (k + 1)
    if not decodes_fill_half_budget(running, k, budget) or decode >= budget:
        return []
    left = budget - decode
    msg = (f"{running} running requests x (k+1 = {k + 1}) = {decode} of max_num_batched_tokens {budget} tokens a "
           f"step go to decoding; prefills get the other {left}, so the {waiting} waiting requests' prompts are prefilled at "
           f"most {left} tokens a step while the KV cache is only {usage:g}% used (time to first token grows "
           "with the load).")
    return [Finding(rule=ID, category="token_budget", severity="warning",
                    title=f"Speculative decodes take {decode} of the step's {budget} tokens; prefills queue",
                    message=msg,
                    evidence=[Evidence(f"stats: Running {running} reqs, Waiting {waiting} reqs, KV cache usage "
                                       f"{usage:g}%; num_speculative_tokens {k}, max_num_batched_tokens {budget}",
                                       source="log")],
                    comparisons=[Comparison("running x (k+1) <= half of max_num_batched_tokens",
                                            expected=budget // 2, actual=decode, unit="tokens")],
                    numbers={"num_speculative_tokens": k, "max_num_batched_tokens": budget,
                             "num_requests_running": running, "num_requests_waiting": waiting,
                             "decode_tokens_per_step": decode, "prefill_tokens_per_step": left,
                             "gpu_kv_cache_usage_percent": usage})]


def _capped_by_draft_pass(ctx: RuleContext) -> list[Finding]:
    """vLLM's own word that a parallel drafter's pass (DFlash / DSpark, 0.33+) lowered the concurrent requests: each
    request takes num_lookahead_tokens query rows of max_num_batched_tokens in the draft pass."""
    st = ctx.log.startup if ctx.log is not None else {}
    capped, asked = st.get("max_num_active_seqs_capped"), st.get("max_num_active_seqs_requested")
    rows, budget = st.get("num_lookahead_tokens"), st.get("draft_pass_max_num_batched_tokens")
    if not all(isinstance(v, int) for v in (capped, asked, rows, budget)):
        return []
    method = st.get("draft_pass_method") or "parallel drafter's"
    msg = (f"the {method} draft pass takes {rows} query tokens a request, and max_num_batched_tokens is {budget}: "
           f"{budget} // {rows} = {capped} requests fit, so vLLM lowered max_num_active_seqs from {asked} to {capped}. "
           f"Requests beyond {capped} wait in the queue however much KV cache is free.")
    return [Finding(rule=ID, category="token_budget", severity="warning",
                    title=f"Draft pass caps concurrent requests at {capped} (of {asked})", message=msg,
                    evidence=[Evidence(f"vLLM: the {method} draft pass needs {rows} query tokens per request within "
                                       f"max_num_batched_tokens={budget}; max_num_active_seqs {asked} -> {capped}",
                                       source="log")],
                    comparisons=[Comparison("max_num_active_seqs x num_lookahead_tokens <= max_num_batched_tokens",
                                            expected=budget, actual=asked * rows, unit="tokens")],
                    numbers={"num_lookahead_tokens": rows, "max_num_batched_tokens": budget,
                             "max_num_active_seqs": asked, "max_num_active_seqs_capped": capped,
                             "requests_per_step": capped})]


def _slots_reserved_for_drafting(ctx: RuleContext) -> list[Finding]:
    """vLLM's own word that the drafter's extra slots came off the step's budget (VllmConfig
    ._set_max_num_scheduled_tokens: max_num_batched_tokens - max_num_new_slots_for_drafting x max_num_seqs): every step
    schedules fewer tokens than max_num_batched_tokens, so a long prompt's prefill takes more steps (time to first
    token) -- no error, unless the budget left is zero or less (vLLM's ValueError, a catalog site)."""
    st = ctx.log.startup if ctx.log is not None else {}
    if ctx.log is None or ctx.log.root is not None:
        return []  # a slow-down: beside a failure it explains nothing (vLLM warns below 8192 tokens on most engines)
    left = st.get("max_num_scheduled_tokens_reduced")
    budget = cfg(ctx, "max_num_batched_tokens")
    if not isinstance(left, int) or left <= 0:
        return []
    seqs, k = cfg(ctx, "max_num_seqs"), spec_k(ctx)
    budget = int(budget) if budget else None
    if budget is not None and left >= budget:
        # vLLM's warning with the step still scheduling the whole budget the log states (vLLM 0.26.0 printed
        # "max_num_scheduled_tokens is set to 1024" beside max_num_batched_tokens=1024): nothing was held back
        return []
    reserved = budget - left if budget else None
    msg = (f"vLLM set max_num_scheduled_tokens to {left}: the drafter's extra slots per request x max_num_seqs"
           + (f" = {reserved} of max_num_batched_tokens {budget}" if reserved else "")
           + f" are held back for drafting, so a step schedules at most {left} tokens"
           + (f" ({budget / left:.1f}x the steps for a long prompt's prefill: time to first token)" if budget else "")
           + ". No error.")
    numbers = {"max_num_scheduled_tokens": left, "max_num_batched_tokens": budget, "draft_slots_reserved": reserved,
               "max_num_seqs": int(seqs) if seqs else None, "num_speculative_tokens": k or None}
    return [Finding(rule=ID, category="token_budget", severity="warning",
                    title=f"Draft slots shrink the step's token budget to {left}" + (f" (of {budget})" if budget else ""),
                    message=msg,
                    evidence=[Evidence(f"vLLM: max_num_scheduled_tokens is set to {left} based on the speculative "
                                       f"decoding settings", source="log",
                                       line=(ctx.log.lines.get("max_num_scheduled_tokens_reduced") or (None,))[0])],
                    comparisons=([Comparison("max_num_scheduled_tokens", expected=budget, actual=left, unit="tokens")]
                                 if budget else []),
                    numbers={k2: v for k2, v in numbers.items() if v is not None})]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    if "draft_slots_reserved" in finding.numbers:  # give the drafter's slots back on top of the budget asked for
        budget = int(finding.numbers["max_num_batched_tokens"])
        reserved = int(finding.numbers["draft_slots_reserved"])
        return [Suggestion(title=f"raise max_num_batched_tokens to {budget + reserved}",
                           tradeoff="larger steps: more activation memory, higher per-step latency",
                           changes=[Change("max_num_batched_tokens", budget + reserved)])]
    if "max_num_scheduled_tokens" in finding.numbers:
        return []
    if "decode_tokens_per_step" in finding.numbers:  # room for prefills beside the decodes the stats showed
        target = max(8192, 2 * int(finding.numbers["decode_tokens_per_step"]))
        return [Suggestion(title=f"raise max_num_batched_tokens to {target}",
                           tradeoff="larger steps: more activation memory, higher per-step latency",
                           changes=[Change("max_num_batched_tokens", target)])]
    if "num_lookahead_tokens" in finding.numbers:
        rows, asked = int(finding.numbers["num_lookahead_tokens"]), int(finding.numbers["max_num_active_seqs"])
        return [Suggestion(title=f"raise max_num_batched_tokens to {asked * rows}",
                           tradeoff="larger steps: more activation memory, higher per-step latency",
                           changes=[Change("max_num_batched_tokens", asked * rows)])]
    k = int(finding.numbers["num_speculative_tokens"])
    seqs = int(finding.numbers["max_num_seqs"])
    budget = int(finding.numbers["max_num_batched_tokens"])
    out = []
    k_fit = budget // seqs - 1
    if k_fit >= 1:
        out.append(Suggestion(title=f"lower num_speculative_tokens to {min(k_fit, k - 1)}",
                              tradeoff="shorter drafts: fewer tokens accepted per step when drafts are good",
                              changes=[Change("num_speculative_tokens", min(k_fit, k - 1))]))
    out.append(Suggestion(title=f"raise max_num_batched_tokens to {seqs * (k + 1)}",
                          tradeoff="larger steps: more activation memory, higher per-step latency",
                          changes=[Change("max_num_batched_tokens", seqs * (k + 1))]))
    if budget // (k + 1) >= 1:
        out.append(Suggestion(title=f"lower max_num_seqs to {budget // (k + 1)}", tradeoff="fewer concurrent requests",
                              changes=[Change("max_num_seqs", budget // (k + 1))]))
    return out


RULE = Rule(id=ID, title="Speculative tokens vs max_num_batched_tokens", category="token_budget", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")
