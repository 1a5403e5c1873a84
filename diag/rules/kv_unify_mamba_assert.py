"""kv_unify_mamba_assert -- a Mamba/GDN page smaller than another layer's page, vLLM < 0.26.

Failure (vllm#43626): ``unify_kv_cache_spec_page_size`` makes every smaller page equal to the
largest by scaling the layer's ``block_size``. A ``MambaSpec`` page does not depend on the block
size, so it stays as it was and the bare ``assert new_spec.page_size_bytes == max_page_size``
fails (kv_cache_utils.py:1042 in 0.20.2). The largest page usually belongs to a dense draft model
(or an MTP/draft layer of another dtype) next to a hybrid main model whose Mamba page was padded
only up to the *main* attention page.

Versions: 0.17 - 0.25 (PR #45207 pads the Mamba page instead; vLLM-internals.md saw it in 0.28.0, and a
real vLLM 0.26.0 on an H200 already pads: tests/preflight_gpu, qwen3_next + llama_draft_big).
Evidence: predicted/recorded layer specs (Mamba page < max page, divisible) or the state's error;
log: bare AssertionError in ``unify_kv_cache_spec_page_size``.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, fmt_bytes, in_range, log_evidence, log_match, spec_k, state_errors, state_source, version
from .base import Rule, RuleContext

ID = "kv_unify_mamba_assert"


_PADDED = "page_size_padded >= page_size"


def check(ctx: RuleContext) -> list[Finding]:
    v = version(ctx)
    applies = in_range(v, (0, 17), (0, 26))
    if applies is False:
        return []
    numbers: dict = {}
    evidence: list[Evidence] = []
    # (the padded-page assert inside page_size_bytes also runs under unify: mamba_padded_smaller's failure)
    errs = [e for e in state_errors(ctx, "AssertionError", "unify_kv_cache_spec_page_size")
            if e.numbers.get("spec_type") in (None, "MambaSpec") and _PADDED not in (e.traceback or "")]
    if errs:
        numbers.update(errs[0].numbers)
        evidence.append(Evidence(f"{errs[0].exc_type} at {errs[0].location}", source=state_source(ctx.state)))
    elif ctx.state is not None and ctx.state.layer_specs:
        specs = ctx.state.specs("layer")
        pages = [s.page_size_bytes for s in specs if s.page_size_bytes]
        if pages:
            mx = max(pages)
            small = [s for s in specs if s.is_mamba and s.page_size_bytes and s.page_size_bytes < mx and mx % s.page_size_bytes == 0]
            if small and applies:
                big = next(s for s in specs if s.page_size_bytes == mx)
                numbers.update(layer=small[0].layer_name, page_size=small[0].page_size_bytes, max_page_size=mx,
                               max_page_layer=big.layer_name, spec_type="MambaSpec")
                evidence.append(Evidence(f"{small[0].layer_name} MambaSpec page {fmt_bytes(small[0].page_size_bytes)}; "
                                         f"{big.layer_name} page {fmt_bytes(mx)}", source=state_source(ctx.state)))
    exc = log_match(ctx, "AssertionError", function="unify_kv_cache_spec_page_size")
    if exc is not None:
        cond = str(ctx.log.numbers.get("assert_condition") or "") + " " + " ".join(f.code or "" for f in exc.frames)
        if ("page_size_bytes == max_page_size" in cond or not exc.message.strip()) and _PADDED not in cond:
            evidence += log_evidence(ctx, exc, "assert_condition")
            for k in ("page_size_bytes", "max_page_size"):
                if k in ctx.log.numbers and k not in numbers:
                    numbers[k if k != "page_size_bytes" else "page_size"] = ctx.log.numbers[k]
    if not evidence:
        return []
    # The bare unify assert with a quantized KV layout belongs to kv_quant_hybrid, unless the numbers show
    # a MambaSpec as the smaller page.
    kv = str(cfg(ctx, "kv_cache_dtype") or "")
    quant = kv.startswith(("turboquant", "nvfp4")) or kv.endswith("per_token_head")
    if quant and numbers.get("spec_type") != "MambaSpec":
        return []
    page, mx = numbers.get("page_size"), numbers.get("max_page_size")
    big_layer = str(numbers.get("max_page_layer") or "")
    who = "the draft model's attention layers" if big_layer.startswith(("draft", "mtp")) else f"layer {big_layer or '?'}"
    msg = (f"Page-size unification cannot make the Mamba/GDN page ({fmt_bytes(page)}) equal to the largest page "
           f"({fmt_bytes(mx)}, {who}): vLLM < 0.26 scales block_size, which does not change a MambaSpec page, "
           f"so `assert new_spec.page_size_bytes == max_page_size` fails at engine init (after weights load).")
    comps = []
    if page and mx:
        comps.append(Comparison("MambaSpec page after unification", expected=mx, actual=page, unit="B"))
        comps.append(Comparison("max page / Mamba page", expected=1, actual=round(mx / page, 3)))
    missing = [] if v else ["vLLM version (rule applies to < 0.26)"]
    return [Finding(rule=ID, category="kv_page_size", title="Mamba/GDN page cannot be unified with a larger (draft) attention page",
                    severity="error", message=msg, numbers={k: numbers[k] for k in numbers if k != "spec_type"},
                    comparisons=comps, evidence=evidence, missing_evidence=missing)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    out = []
    method = cfg(ctx, "speculative_method")
    mtp = (ctx.state.environment.get("mtp_layers") if ctx.state else 0) or 0
    k = spec_k(ctx)
    if method in ("draft_model", "eagle", "eagle3") and mtp:
        out.append(Suggestion(
            title="use the model's own MTP head instead of the separate draft model",
            tradeoff="no draft weights to load; acceptance rate differs from the dense draft (MTP usually accepts as well or better)",
            changes=[Change("speculative_method", "mtp"), Change("draft_model", None),
                     Change("num_speculative_tokens", max(1, min(k, mtp if mtp > 1 else k)))]))
    if method:
        out.append(Suggestion(title="turn speculative decoding off",
                              tradeoff="loses the speculative-decoding decode speed-up (the #43626 report measured ~2x decode TPS)",
                              changes=[Change("speculative_config", None)]))
    out.append(Suggestion(title="upgrade to vLLM >= 0.26.0 (pads the Mamba page instead, PR #45207)",
                          tradeoff="keeps the draft model; needs a newer vLLM build/image",
                          changes=[Change("vllm_version", "0.26.0")]))
    return out


RULE = Rule(id=ID, title="Mamba page vs larger draft page in page-size unification", category="kv_page_size", check=check,
            versions=">=0.17,<0.26", fixed_in="0.26.0 (PR #45207; padding seen on a real 0.26.0)", reads=("state", "log"), doc=__doc__ or "")
