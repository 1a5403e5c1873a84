"""Live diagnosis: the rules run on a recorded engine session, and the findings are stored with it.

The probes call :func:`diagnose_and_store` from the engine's own process (the EngineCore, or the
``LLM``/API-server process when the engine runs in-process, or when vLLM rejected the configuration
before any EngineCore started) at a failure and when the engine stops -- once per engine, never per
TP/PP worker: the workers' rows are in the same session, so one diagnosis reads them all.
``vllm-diag diagnose DB [SESSION]`` does the same for any recorded session afterwards.

What the rules read:

* ``state``: the recorded engine state (config, layer specs, groups, block tables, builder buffers,
  steps, errors) -- every number in a finding comes from there;
* ``log``: the recorded errors' tracebacks (with the notes the probes added) read by the
  post-mortem's log reader, so the rules that match an error's type, text and frames work on a live
  failure exactly as on its log;
* the vLLM version and GPU the probes recorded.

This is the one diagnosis of a recorded session: ``vllm-diag diagnose`` and the probes store it
(:func:`diagnose_and_store`); the front ends (``vllm_diag.api.diagnose``: TUI, dashboard, report)
and the probes' ``/metrics`` collector show it, through :func:`vllm_diag.recorded.diagnose`, for a
session that has no stored findings. They differ only in the suggestions: re-checked with the
pre-flight here (what is stored), listed unverified on open (``recheck=False``) or left out
(``suggestions=False``).

Imports no vLLM: it runs in the engine's process, but from the probe's writer thread.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from .model import (
    CONFIG_KEYS,
    EngineState,
    Finding,
    LogFacts,
    RuleFailure,
    SessionRecord,
)
from .rules.base import GpuInfo, RuleContext, parse_version

# The probes record vLLM's platform class; the rules speak of "cuda" / "cpu" / "rocm" / ...
_PLATFORMS = {"CudaPlatform": "cuda", "NvmlCudaPlatform": "cuda", "NonNvmlCudaPlatform": "cuda", "CpuPlatform": "cpu",
              "RocmPlatform": "rocm", "XPUPlatform": "xpu", "TpuPlatform": "tpu"}


def platform_of(environment: dict[str, Any]) -> str | None:
    """"cuda" / "cpu" / ... from what the probes recorded (``vllm_platform``, ``device_type``)."""
    p = environment.get("platform")
    if p in ("cuda", "cpu", "rocm", "xpu", "tpu"):
        return p
    name = environment.get("vllm_platform")
    if name in _PLATFORMS:
        return _PLATFORMS[name]
    dev = environment.get("device_type")
    return dev if isinstance(dev, str) and dev else None


def gpu_of(environment: dict[str, Any]) -> GpuInfo | None:
    """The recorded GPU (NVML facts) as the rules' GpuInfo; ``name="cpu"`` on the CPU platform."""
    if platform_of(environment) == "cpu":
        return GpuInfo(name="cpu", count=0)
    gpus = environment.get("gpus")
    if not isinstance(gpus, list) or not gpus or not isinstance(gpus[0], dict):
        return None
    first = gpus[0]
    name = first.get("name") if isinstance(first.get("name"), str) else None
    info = None
    if name:
        try:
            from .preflight.predict import parse_gpu

            info = parse_gpu(name)
        except Exception:  # noqa: BLE001 - an unknown GPU name is still a GPU
            info = None
    info = info or GpuInfo(name=name)
    cc = first.get("compute_capability")
    if isinstance(cc, str) and "." in cc and not info.compute_capability:
        try:
            major, minor = cc.split(".", 1)
            info.compute_capability = (int(major), int(minor))
        except ValueError:
            pass
    count = environment.get("gpu_count")
    info.count = count if isinstance(count, int) else len(gpus)
    return info


def log_facts_from_errors(record: SessionRecord) -> LogFacts | None:
    """The recorded errors as the post-mortem reads a log: their tracebacks (notes included) in the
    order they were raised, so the innermost failure (a worker's, the EngineCore's) comes before
    the wrappers that re-raised it ("Engine core initialization failed")."""
    errors = sorted(record.state.errors, key=lambda e: (e.at is None, e.at or 0.0))
    texts = []
    for e in errors:
        tb = e.traceback or ""
        if not tb.strip():
            tb = f"{e.exc_type}: {e.message}"
        texts.append(tb.rstrip("\n"))
    if not texts:
        return None
    from .postmortem.reader import facts_from_text

    facts = facts_from_text("\n".join(texts) + "\n")
    st = record.state
    facts.vllm_version = facts.vllm_version or record.session.vllm_version or st.vllm_version
    for key in CONFIG_KEYS:
        if st.config.get(key) is not None:
            facts.args.setdefault(key, st.config[key])
    facts.model = facts.model or record.session.model or st.config.get("model")
    facts.architecture = facts.architecture or record.session.architecture or st.config.get("architecture")
    return facts


def recorded_context(record: SessionRecord) -> RuleContext:
    """What the rules read about a recorded session (see the module docstring)."""
    state: EngineState = copy.copy(record.state)
    state.environment = dict(record.state.environment)
    plat = platform_of(state.environment)
    if plat:
        state.environment["platform"] = plat  # older recordings hold the OS string there
    version = parse_version(record.session.vllm_version or state.vllm_version)
    return RuleContext(state=state, log=log_facts_from_errors(record), version=version, gpu=gpu_of(state.environment))


def diagnose(record: SessionRecord, suggestions: bool = True, recheck: bool = True) -> list[Finding]:
    """The findings of a recorded session: every rule on the recorded state and errors; a recorded
    error no rule explains is still named (category ``other``), with its numbers. Suggestions are
    re-checked with the pre-flight unless ``recheck=False`` (then listed, unverified)."""
    return diagnosis(record, suggestions=suggestions, recheck=recheck).findings


def diagnosis(record: SessionRecord, suggestions: bool = True, recheck: bool = True) -> SessionRecord:
    """The record with :func:`diagnose`'s findings in place of its stored ones, and the rules that
    raised (a vllm-diag bug, the other rules still ran) added to its ``rule_failures``."""
    from .rules import run_rules

    ctx = recorded_context(record)
    run = run_rules(ctx)
    findings = _fold_known_mixed_batch(list(run))
    if ctx.log is not None:
        findings = _with_site_diagnosis(ctx.log, findings)
    findings, contradicted = _recorded_batches_contradict(record, findings)
    findings = _unexplained_error(record, ctx, findings)
    if contradicted:
        lead = next((f for f in findings if f.severity == "error"), None)
        if lead is not None:
            lead.evidence += contradicted
    _rejected_values(record, findings)
    if suggestions:
        _attach_suggestions(findings, ctx, recheck)
    return dataclasses.replace(record, findings=findings,
                               rule_failures=record.rule_failures + [RuleFailure(r, e) for r, e in run.failures])


def _with_site_diagnosis(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """The post-mortem's diagnosis of the recorded error (matched vLLM failure site, failure class of
    the frames; ``postmortem.analyze.apply_diagnosis``) leads, with its confidence and basis. Findings
    that stand on recorded state alone are kept: in a live session they are measurements, not the
    pre-flight guesses that diagnosis leaves out of a log's analysis."""
    try:
        from .postmortem.analyze import apply_diagnosis
    except Exception:  # noqa: BLE001
        return findings
    from .model import SEVERITIES

    recorded = [f for f in findings if f.evidence and all(e.source == "recorded" for e in f.evidence)]
    rest = [f for f in findings if not any(f is r for r in recorded)]
    merged = sorted(apply_diagnosis(facts, rest) + recorded, key=lambda f: SEVERITIES.index(f.severity))
    # A rule finding that explains the recorded error with recorded expected-vs-actual numbers is
    # more than a failure class read from the frames: it leads.
    root_line = facts.root.log_line if facts.root is not None else None
    measured = [f for f in merged if f.severity == "error" and f.comparisons and root_line is not None
                and any(e.source == "recorded" for e in f.evidence) and any(e.line == root_line for e in f.evidence)]
    if measured and merged and not merged[0].comparisons:
        lead = measured[0]
        merged = [lead] + [f for f in merged if f is not lead]
    return merged


def _fold_known_mixed_batch(findings: list[Finding]) -> list[Finding]:
    """The failing mixed step (``hybrid_mixed_step``) and the release's known mixed-batch bug
    (``gdn_mixed_batch``, vLLM 0.17-0.18) are one failure: one finding, with the step's numbers and the
    release's fix."""
    step = next((f for f in findings if f.rule == "hybrid_mixed_step"), None)
    known = [f for f in findings if f.rule == "gdn_mixed_batch" and f.severity == "error"]
    if step is None or not known:
        return findings
    k = known[0]
    step.versions, step.fixed_in = k.versions or step.versions, k.fixed_in or step.fixed_in
    step.basis = f"{step.basis}; the known vLLM failure '{k.title}'" + (f" (fixed in {k.fixed_in})" if k.fixed_in else "")
    texts = {e.text for e in step.evidence}
    step.evidence += [e for e in k.evidence if e.text not in texts]
    for key, v in k.numbers.items():
        step.numbers.setdefault(key, v)
    return [f for f in findings if not any(f is x for x in known)]


# rules whose mixed_batch findings stand on recorded mixed steps themselves
_MIXED_FROM_STEPS = ("hybrid_mixed_step", "gdn_mixed_batch")


def _recorded_batches_contradict(record: SessionRecord, findings: list[Finding]) -> tuple[list[Finding], list]:
    """A mixed decode / spec-decode batch read from an error's frames alone (the post-mortem's failure class)
    is left out when the recording shows no such batch: the error was raised outside serving steps
    (a configuration vLLM rejected), or the recorded failing step mixes nothing in the runner's split nor in
    any builder's recorded split of it. What the recording shows is kept as evidence of the finding that
    then leads."""
    guessed = [f for f in findings if f.category == "mixed_batch" and f.rule not in _MIXED_FROM_STEPS]
    if not guessed or record.session.kind != "engine":
        return findings, []
    why = _no_mixed_batch_recorded(record)
    if why is None:
        return findings, []
    from .model import Evidence

    notes = [Evidence(text=f"not a mixed decode / spec-decode batch: {why} (the error's frames alone suggested "
                           f"\"{f.title}\")", source="recorded") for f in guessed]
    return [f for f in findings if not any(f is g for g in guessed)], notes


def _no_mixed_batch_recorded(record: SessionRecord) -> str | None:
    errors = record.state.errors
    if not errors:
        return None
    step_errors = [e for e in errors if e.phase == "step"]
    if not step_errors:
        # a configuration vLLM rejected never built a batch; start-up, profiling and capture run vLLM's own dummy
        # batches, which can mix 1-token and multi-token requests, so they contradict nothing
        if {e.phase for e in errors} == {"config"}:
            return "vLLM rejected the configuration: no batch was ever built"
        return None
    rows = []
    for e in step_errors:
        n = e.numbers or {}
        runner = n.get("step")
        if not isinstance(runner, dict) or not isinstance(runner.get("step_index"), int):
            return None  # the failing step's composition was not recorded: nothing contradicts the frames
        rows.append(("runner", runner))
        rows += [(f"{b.get('builder')} (group {b.get('group_index')})", b) for b in n.get("builder_steps") or []
                 if isinstance(b, dict) and b.get("step_index") == runner["step_index"]]
        # builder rows of that step the store holds (the error carries one per builder class)
        rows += [(f"{s.builder} (group {s.group_index})", s.__dict__) for s in record.state.steps
                 if s.builder and s.step_index == runner["step_index"] and (e.pid is None or s.pid in (None, e.pid))]
    if not any(who != "runner" for who, _ in rows):
        return None  # no builder row of that step (a builder that raised records none): its own split is unknown
    if any((r.get("num_decodes") or 0) > 0 and (r.get("num_spec_decodes") or 0) > 0 for _, r in rows):
        return None
    step = rows[0][1]["step_index"]
    splits = "; ".join(dict.fromkeys(f"{who} %d/%d/%d" % tuple(r.get(k) or 0 for k in (
        "num_decodes", "num_spec_decodes", "num_prefills")) for who, r in rows))
    return f"recorded step {step} mixes none (decodes/spec decodes/prefills: {splits})"


def _unexplained_error(record: SessionRecord, ctx: RuleContext, findings: list[Finding]) -> list[Finding]:
    if any(f.severity == "error" for f in findings):
        return findings
    root = ctx.log.root if ctx.log is not None else None
    errors = sorted(record.state.errors, key=lambda e: (e.at is None, e.at or 0.0))
    if root is None and not errors:
        return findings
    from .model import Evidence

    err = errors[0] if errors else None
    exc_type = root.exc_type if root is not None else err.exc_type
    message = root.message if root is not None else err.message
    last = root.last_frame if root is not None else None
    where = f" at {last.file.rsplit('/', 1)[-1]}:{last.line} in {last.function}" if last else (
        f" at {err.location}" if err is not None and err.location else "")
    numbers: dict[str, Any] = {}
    for e in errors:
        for k, v in (e.numbers or {}).items():
            numbers.setdefault(k, v)
    if ctx.log is not None:
        for k, v in ctx.log.numbers.items():
            numbers.setdefault(k, v)
    evidence = [Evidence(text=f"{exc_type}: {message}".rstrip(": ")[:500], source="recorded")]
    if err is not None:
        evidence.append(Evidence(text=f"recorded in phase {err.phase!r} by pid {err.pid}", source="recorded"))
        evidence += [Evidence(text=n[:500], source="recorded") for n in err.notes if not n.startswith("vllm-diag: recorded in")]
    findings.append(Finding(
        rule="other_unrecognised",
        category="other",
        title=f"Unrecognised failure: {exc_type}{where}",
        severity="error",
        message=((message or "").splitlines()[0][:300] if message else "(no message)")
        + " -- no vllm-diag rule knows this error; the recorded exception, its numbers and notes are below.",
        numbers=numbers,
        evidence=evidence,
        confidence="low",
        basis="a recorded error that no rule, catalog failure site or failure class explains",
    ))
    return findings


def _rejected_values(record: SessionRecord, findings: list[Finding]) -> None:
    """A configuration vLLM rejected: the probes recorded what was asked for (``engine_config``
    with ``config_rejected``); a finding about it that carries no numbers gets the requested values
    the error names (e.g. ``mamba_cache_mode: "all"``)."""
    config = record.state.config
    rejected = [e for e in record.state.errors if e.phase == "config"]
    if not config.get("config_rejected") or not rejected:
        return
    text = " ".join(f"{e.message} {e.traceback or ''}" for e in rejected)
    named = {k: v for k, v in config.items()
             if k not in ("config_rejected", "model", "architecture") and not isinstance(v, (dict, list))
             and (k in text or k.replace("_", "-") in text)}
    for f in findings:
        if f.severity == "error" and not f.numbers and named:
            f.numbers = dict(named)


def _attach_suggestions(findings: list[Finding], ctx: RuleContext, recheck: bool = True) -> None:
    try:
        from .preflight import evaluate
        from .suggest import suggestions_for_finding
    except Exception:  # noqa: BLE001 - suggestions are optional
        return
    for f in findings:
        if f.suggestions:
            continue
        try:
            f.suggestions = list(suggestions_for_finding(f, ctx, evaluate=evaluate if recheck else None) or [])
        except Exception:  # noqa: BLE001 - a suggestion bug must not lose the finding
            f.suggestions = []


def diagnose_and_store(store, session_id: str | None = None, suggestions: bool = True) -> list[Finding]:
    """Load the session from ``store`` (opened for writing), diagnose it, replace its findings."""
    record = store.load(session_id)
    findings = diagnose(record, suggestions=suggestions)
    store.add_findings(record.session.id, findings, replace=True)
    return findings


__all__ = ["diagnose", "diagnose_and_store", "diagnosis", "gpu_of", "log_facts_from_errors", "platform_of", "recorded_context"]
