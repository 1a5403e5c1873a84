"""The post-mortem pipeline: log -> LogFacts -> (pre-flight) -> rules -> suggestions -> report/store.

``analyze_path(path)`` / ``analyze_text(text)`` return an :class:`Analysis`; ``store_analysis`` writes it
as a session of kind ``log`` (an ``EngineState`` with ``source="log"``, its ``ErrorRecord``, findings and
suggestions). ``Analysis.to_record()`` is the session record every output renders (:mod:`vllm_diag.render`).
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..model import (
    CATEGORIES,
    CONFIG_KEYS,
    EngineState,
    ErrorRecord,
    Evidence,
    Finding,
    LogFacts,
    LogSummary,
    RuleFailure,
    SessionInfo,
    SessionRecord,
    Target,
    new_session_id,
)
from ..rules.base import GpuInfo, RuleContext, parse_version
from ..rules.prefix_cache_granularity import PREFILL_COMPLAINT
from .clientside import prompts_share_no_prefix
from .quietmisses import raised_block_holds_requests

MISMATCH_CATEGORIES = tuple(c for c in CATEGORIES if c != "other")
PROBE_HINT = (
    "rerun with the vllm-diag probes on (`VLLM_DIAG_DB=run.db vllm serve ...`, then `vllm-diag show run.db`) "
    "to record every layer's KV spec, the groups and the block tables"
)


@dataclass
class Analysis:
    source: str
    facts: LogFacts
    findings: list[Finding] = field(default_factory=list)
    state: EngineState = field(default_factory=lambda: EngineState(source="log"))
    predicted: EngineState | None = None
    preflight_note: str | None = None
    gpu: GpuInfo | None = None
    files: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes: int = 0
    rule_failures: list[tuple[str, str]] = field(default_factory=list)
    session_id: str | None = None

    @property
    def failed(self) -> bool:
        return self.facts.root is not None or any(f.severity == "error" for f in self.findings)

    @property
    def cut_off(self) -> str | None:
        """Why this log holds no failure to diagnose although it shows one starting: it ends inside a
        traceback (frames, no exception line) and nothing else explains it. ``None`` otherwise."""
        if self.failed:
            return None
        from .traceback import ORPHAN_TYPE

        orphans = [e for e in self.facts.exceptions if e.exc_type == ORPHAN_TYPE and e.frames]
        if not orphans:
            return None
        last = orphans[-1].frames[-1]
        where = f"{last.file.rsplit('/', 1)[-1]}:{last.line} in {last.function or '?'}"
        return (f"the log ends inside a traceback (last frame {where}, log line {orphans[-1].log_line}) before its "
                "exception line: the failure is not in this log, so it is not diagnosed -- add the lines after it")

    @property
    def version_not_modelled(self) -> str | None:
        """The log's vLLM release when it lies outside the releases the failure-site catalog was read from."""
        from ..catalog import load, vtuple

        v = vtuple(self.facts.vllm_version) if self.facts.vllm_version else None
        try:
            known = load().versions
        except Exception:  # noqa: BLE001 - no catalog: nothing to compare with
            return None
        if v is None or not known:
            return None
        first, last = vtuple(known[0]), vtuple(known[-1])
        if first is None or last is None or first <= v <= last or ("dev" in self.facts.vllm_version and v < (0, 9, 0)):
            return None  # (a source build without its tag reports "0.1.devN": no release to compare)
        side = "newer" if v > last else "older"
        return (f"vLLM {self.facts.vllm_version} is {side} than the releases the failure-site catalog was read from "
                f"({known[0]} to {known[-1]}): its sites are matched by the text of the nearest release and may have "
                f"moved or changed")

    def to_record(self, session_id: str | None = None) -> SessionRecord:
        """The analysis as the one session record every output renders and ``Store.save`` stores."""
        import socket
        import time

        f, now = self.facts, time.time()
        cpu = f.startup.get("kv_cache_device") == "CPU" or f.startup.get("device_config") == "cpu"
        cc = self.gpu.compute_capability if self.gpu and self.gpu.compute_capability else f.startup.get("compute_capability")
        info = SessionInfo(id=session_id or new_session_id(), kind="log", label=f"log {os.path.basename(self.source) or self.source}",
                           status="failed" if self.failed else "ok", started_at=now, ended_at=now,
                           vllm_version=f.vllm_version, model=f.model, architecture=f.architecture, source=self.source,
                           host=socket.gethostname())
        names = list(dict.fromkeys(f.gpu_names))
        target = Target(vllm_version=f.vllm_version, vllm_version_source="the log" if f.vllm_version else None,
                        gpu=", ".join(names) if names else None, compute_capability=list(cc) if cc else None,
                        gpu_count=f.gpu_count, gpu_source="the log" if names else None,
                        platform="cpu" if cpu else ("cuda" if names else None), command=f.command)
        log = LogSummary(source=self.source, files=[dict(x) for x in self.files], skipped_files=list(self.skipped),
                         total_lines=f.total_lines, command=f.command, args=dict(f.args), model=f.model,
                         architecture=f.architecture, gpu_names=list(f.gpu_names), gpu_count=f.gpu_count,
                         python_version=f.python_version, root=f.root, numbers=dict(f.numbers), startup=dict(f.startup),
                         other_errors=[dict(e) for e in f.other_errors])
        notes = [f"pre-flight: {self.preflight_note}"] if self.preflight_note else []
        cut_off = self.cut_off
        if cut_off:
            notes.insert(0, f"not modelled: {cut_off}")
        outside = self.version_not_modelled
        if outside:
            notes.insert(0, f"not modelled: {outside}")
        return SessionRecord(session=info, state=self.state, findings=list(self.findings), target=target, notes=notes,
                             log=log, predicted=self.predicted,
                             rule_failures=[RuleFailure(r, e) for r, e in self.rule_failures])


# ------------------------------------------------------------------------------------------------


def gpu_from_facts(facts: LogFacts) -> GpuInfo | None:
    name = facts.gpu_names[0] if facts.gpu_names else None
    if name is None and facts.startup.get("kv_cache_device") == "CPU":
        name = "cpu"  # "CPU KV cache size": the CPU backend, whose block sizes differ from CUDA's
    cc = facts.startup.get("compute_capability")
    info: GpuInfo | None = None
    if name:
        try:
            from ..preflight.predict import parse_gpu

            info = parse_gpu(name)
        except Exception:  # noqa: BLE001 - pre-flight is optional here
            info = GpuInfo(name=name)
        if info.name == "cpu":
            # the log's host, not this one: vLLM's CPU platform says when its accelerated GDN path (AVX512-BF16
            # hosts) keeps the SSM state in float32; otherwise the host's flags are not known
            info.avx512_bf16 = True if facts.startup.get("cpu_accelerated_gdn") else None
    if info is None and cc is None and facts.gpu_count is None:
        return None
    if info is None:
        info = GpuInfo(name=None)
    if cc and not info.compute_capability:
        info.compute_capability = (int(cc[0]), int(cc[1]))
    info.count = facts.gpu_count
    return info


def log_state(facts: LogFacts) -> EngineState:
    """The EngineState a log gives: normalised config, environment, and the root error."""
    config = {k: v for k, v in facts.args.items() if k in CONFIG_KEYS or k in ("speculative_config", "compilation_config", "quantization")}
    if "mamba_cache_mode" in facts.startup and "mamba_cache_mode" not in config:
        config["mamba_cache_mode"] = facts.startup["mamba_cache_mode"]
    env: dict[str, Any] = {}
    if facts.gpu_names:
        env["gpu"] = facts.gpu_names[0] if len(set(facts.gpu_names)) == 1 else facts.gpu_names
    if facts.gpu_count:
        env["gpu_count"] = facts.gpu_count
    if facts.python_version:
        env["python"] = facts.python_version
    for k in ("compute_capability", "kv_cache_device", "model_runner", "attention_block_size", "gpu_kv_cache_tokens"):
        if k in facts.startup:
            env[k] = facts.startup[k]
    state = EngineState(source="log", vllm_version=facts.vllm_version, config=config, environment=env)
    if facts.root is not None:
        r = facts.root
        last = r.last_frame
        state.errors.append(ErrorRecord(
            exc_type=r.exc_type,
            message=r.message,
            phase="log",
            traceback="\n".join(f'File "{f.file}", line {f.line}, in {f.function}' + (f"\n    {f.code}" if f.code else "")
                                for f in r.frames) or None,
            numbers=dict(facts.numbers),
            location=f"{last.file}:{last.line} in {last.function}" if last else None,
            notes=[f"log line {r.log_line}"] + ([f"process {r.process}"] if r.process else []),
        ))
    return state


def run_preflight(facts: LogFacts, version, gpu: GpuInfo | None,
                  model_dirs: Sequence[str] = ()) -> tuple[EngineState | None, str]:
    """Pre-flight prediction when the model's config.json is reachable; (state, note)."""
    try:
        from ..preflight.hfconfig import load_model_facts
        from ..preflight.predict import predict
    except ImportError:
        return None, "pre-flight predictor not available"
    model = facts.args.get("model") or facts.model
    inferred = ""
    if not model:
        # no command names the model: a repo id quoted in the text whose config.json is reachable
        for rid in facts.startup.get("repo_mentions", []):
            try:
                load_model_facts(rid, model_dirs=model_dirs)
            except Exception:  # noqa: BLE001
                continue
            model, inferred = rid, f" (model {rid} inferred from the text)"
            break
    if not model:
        return None, "no model name in the log, so no config.json to predict page sizes from"
    try:
        mfacts = load_model_facts(str(model), model_dirs=model_dirs)
    except Exception as exc:  # noqa: BLE001 - ModelConfigError and friends
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        # cut at a word, marked, so the note never ends mid-word ("... pass a local model fold")
        return None, f"config.json not reachable: {textwrap.shorten(first, 300, placeholder=' ...')}"
    draft = None
    dm = facts.args.get("draft_model")
    draft_note = ""
    for cand in [c for c in (dm, facts.args.get("draft_model_name")) if c]:
        try:
            draft = load_model_facts(str(cand), model_dirs=model_dirs)
        except Exception:  # noqa: BLE001
            continue
        if cand != dm:
            draft_note = f"; draft config from {cand} (named in the text; {dm} is not reachable here)"
        break
    config = {k: v for k, v in facts.args.items() if k in CONFIG_KEYS or k in ("speculative_config", "compilation_config")}
    config.setdefault("model", str(model))
    k_default = facts.startup.get("num_speculative_tokens_default")
    if isinstance(k_default, int) and not isinstance(k_default, bool) and "num_speculative_tokens" not in config:
        # the depth vLLM chose itself ("Defaulted num_speculative_tokens to 24 for suffix decoding")
        config["num_speculative_tokens"] = k_default
        if isinstance(config.get("speculative_config"), dict):
            config["speculative_config"] = {**config["speculative_config"], "num_speculative_tokens": k_default}
    try:
        state = predict(mfacts, config, version, gpu, draft=draft)
    except Exception as exc:  # noqa: BLE001 - a predictor bug must not stop the analysis
        return None, f"pre-flight failed: {type(exc).__name__}: {exc}"
    src = getattr(mfacts, "source", None) or "config.json"
    bundled = " (bundled demo config)" if getattr(mfacts, "bundled", False) else ""
    note = f"pre-flight predicted the KV plan from {src}{bundled}{inferred}{draft_note}"
    # what vLLM's own startup lines say it chose is what ran: the findings quote it, not the prediction
    mode = facts.startup.get("mamba_cache_mode")
    if mode in ("none", "align", "all") and state.config.get("mamba_cache_mode") not in (None, mode):
        note += f"; the log's Mamba cache mode '{mode}' replaces the predicted '{state.config['mamba_cache_mode']}'"
        state.config["mamba_cache_mode"] = mode
    logged, predicted = facts.startup.get("attention_block_size"), state.config.get("block_size")
    if isinstance(logged, int) and not isinstance(logged, bool) and state.config.get("block_size_raised_by_mamba") \
            and isinstance(predicted, int) and logged != predicted:
        # (vLLM's "Setting attention block size to N tokens")
        state.config["block_size"] = logged
        if state.config.get("mamba_cache_mode") in ("align", "all"):
            state.config["mamba_block_size"] = logged
        note += f"; the log's attention block size {logged} replaces the predicted {predicted}"
    if dm and draft is None:
        note += f"; the draft model's config.json ({dm}) was not reachable"
    return state, note


# ------------------------------------------------------------------------------------------------


def analyze_facts(facts: LogFacts, source: str = "<log>", files: list[dict] | None = None,
                  use_preflight: bool = True, model_dirs: Sequence[str] = ()) -> Analysis:
    from ..rules import run_rules

    version = parse_version(facts.vllm_version)
    gpu = gpu_from_facts(facts)
    an = Analysis(source=source, facts=facts, files=files or [], gpu=gpu)
    an.state = log_state(facts)
    if use_preflight:
        an.predicted, an.preflight_note = run_preflight(facts, version, gpu, model_dirs)
        if an.predicted is not None and not facts.architecture:
            facts.architecture = an.predicted.config.get("architecture")  # from the model's config.json
    ctx = RuleContext(state=an.predicted or an.state, log=facts, version=version, gpu=gpu)
    findings = run_rules(ctx)
    an.rule_failures = list(findings.failures)
    if an.predicted is not None:
        # the predicted plan may itself carry the error; the log's error is the one that happened
        ctx_log = RuleContext(state=an.state, log=facts, version=version, gpu=gpu)
        seen = {(f.rule, f.category) for f in findings}
        again = run_rules(ctx_log)
        for f in again:
            if (f.rule, f.category) not in seen:
                findings.append(f)
        an.rule_failures += [x for x in again.failures if x not in an.rule_failures]
    _served_despite_prediction(facts, findings)
    findings = _root_first(facts, findings)
    findings = apply_diagnosis(facts, findings)
    findings = _unexplained_root(facts, findings)
    _missing_evidence(an, findings)
    _attach_suggestions(findings, ctx)
    _localise_evidence(an, findings)
    an.findings = findings
    return an


def _served_despite_prediction(facts: LogFacts, findings: list[Finding]) -> None:
    """A failure the pre-flight predicts from the configuration before serving (a start-up refusal, a CUDA-graph capture
    failure), in a log whose engine went on to serve (its stats lines count running requests): it did not happen in
    this run, so the prediction is kept as a note after what the log shows, not as the error of the run."""
    if facts.root is not None or not isinstance(facts.startup.get("num_requests_running_max"), int):
        return
    # (a refusal at start-up, or a failure the pre-flight predicts at CUDA-graph capture: both come before serving;
    # a mixed batch's failure needs the traffic that makes one, which serving does not rule out)
    contradicted = [f for f in findings if f.severity == "error" and _preflight_only(f) and f.category != "mixed_batch"]
    for f in contradicted:
        f.severity = "info"
        f.title = f"Predicted by the pre-flight, contradicted by the log: {f.title}"
        f.basis = ((f.basis + "; ") if f.basis else "") + ("but the log shows the engine serving requests, so vLLM "
                                                           "did not refuse this start (not modelled for this release)")
    # (a contradicted prediction is a note: what the log shows goes before it)
    findings.sort(key=lambda f: any(f is c for c in contradicted))


def apply_diagnosis(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """Put the diagnosis (:mod:`.diagnose`: a matched failure site, the failure class of the frames, or an
    asynchronous fault reasoned from the configuration) first, with how sure it is and why.

    A rule's finding on the same root error and category is kept (it has the rule's numbers and
    suggestions) and gains the diagnosis' confidence, basis and evidence. When the root error is outside
    the families (``other``), findings of the hybrid/spec categories that do not explain it (pre-flight
    warnings about the configuration) are dropped: they would read as the cause of a failure they did not
    cause. Every finding then carries a confidence and a basis."""
    findings = _note_is_no_diagnosis(facts, _outside_lead_drops_notes(facts, _with_diagnosis(facts, findings)))
    _state_confidence(facts, findings)
    return findings


def _note_is_no_diagnosis(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """A report in someone's words, no error, and nothing read -- no finding at all, or only a note on the set-up (a
    hybrid's raised block) that does not speak to what the report says: the note is true of every such start, so it
    does not lead as the cause, and an empty result would read as a clean bill of health. The lead says vllm-diag read
    no failure or symptom here (not modelled), and the notes are left out. A pasted log alone keeps its notes first:
    it asks nothing else."""
    said = facts.lines.get("report_prose")
    if facts.root is not None or said is None or (not findings and facts.startup.get("error_lines")):
        return findings
    if findings:  # (nothing found at all, on a report in someone's words: say it is not read, not that all is well)
        lead = findings[0]
        # (a pre-flight warning the log does not show is a note on the configuration as well)
        if lead.category == "other" or lead.severity != "info" and not _preflight_only(lead) \
                or _answers_symptom(facts, lead):
            return findings
        if lead.rule == "block_size_inflated" and _cache_report_without_hits(facts):
            return findings  # (a report that speaks of prefix caching, on a cache that barely hits: the raised block reads it)
    new = Finding(
        rule="unexplained_report", category="other", severity="info",
        title="No failure or symptom that vllm-diag reads in this report (not modelled)",
        message=("the log shows no error, and nothing in the report's words is a symptom vllm-diag reads; the notes on "
                 "the set-up describe the configuration, not a cause"),
        numbers=dict(facts.numbers),
        evidence=[Evidence(text=said[1][:300], line=said[0])],
        missing_evidence=["the symptom in vLLM's own terms (an error, the stats lines under the load, a request and "
                          "its response), or a run with the vllm-diag probes on (VLLM_DIAG_DB=run.db)"])
    new.confidence = "low"
    new.basis = "no error in the log and no symptom vllm-diag reads in the report: not modelled"
    return _notes_left_out(new, findings)


def _cache_report_without_hits(facts: LogFacts) -> bool:
    """The report speaks of prefix caching, the cache is on and its stats lines show it hitting under 10 %, and nothing
    says the prompts share no prefix to begin with (random or unique prompts, no shared prefix stated)."""
    st = facts.startup
    rate = st.get("prefix_cache_hit_rate_max")
    no_prefix = prompts_share_no_prefix(st) or (st.get("random_prompts_prose") and not st.get("shared_prefix_tokens"))
    return (isinstance(rate, (int, float)) and rate < 10 and facts.args.get("enable_prefix_caching") is not False
            and bool(st.get("prefix_caching_prose")) and not no_prefix)


def _outside_lead_drops_notes(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """A lead outside the families (a near miss, a cause the report names) leaves out the families' notes on the
    set-up -- a raised block size, a granularity warning that does not speak to the symptom -- which beside it would
    read as a second cause; the lead says they were left out."""
    if not findings or findings[0].category != "other" or findings[0].severity not in ("error", "warning"):
        return findings
    lead = findings[0]
    root_line = facts.root.log_line if facts.root is not None else None
    # (beside a failure outside the families, a warning on the set-up that does not cite the failure explains no part
    # of it: "prefix caching is forced off" next to a start-up error that bf16 needs compute capability 8.0)
    crashed = lead.severity == "error"
    notes = [f for f in findings[1:] if f.category != "other" and not _cites(f, root_line)
             and (f.severity == "info" or (f.severity == "warning" and (crashed or not _answers_symptom(facts, f))))]
    return [lead] + _leave_out(lead, findings[1:], notes)


def _cites(f: Finding, line: int | None) -> bool:
    """Whether ``f``'s evidence quotes the log line ``line`` (the root error's)."""
    return line is not None and any(e.line == line for e in f.evidence)


def _state_confidence(facts: LogFacts, findings: list[Finding]) -> None:
    """Every finding says how sure it is and why; rules that do not say it get it from their evidence."""
    root_line = facts.root.log_line if facts.root is not None else None
    for f in findings:
        if f.confidence and f.basis:
            continue
        log_ev = [e for e in f.evidence if e.source in (None, "log")]
        cites_root = _cites(f, root_line)
        if cites_root and f.comparisons:
            conf, why = "high", "the log's root error, with expected-vs-actual values"
        elif cites_root:
            conf, why = "medium", "the log's root error (its text and frames)"
        elif log_ev:
            conf, why = "medium", "what the log states outside an error (startup, metrics or warning lines)"
        else:
            conf, why = "low", "predicted by the pre-flight from the configuration; the log itself does not show it"
        f.confidence = f.confidence or conf
        f.basis = f.basis or f"rule {f.rule}: {why}"


def _with_diagnosis(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    from .diagnose import diagnose

    try:
        d = diagnose(facts)
    except Exception as exc:  # noqa: BLE001 - a diagnosis bug must not lose the rules' findings
        if os.environ.get("VLLM_DIAG_DEBUG"):
            raise
        # (said, not swallowed: the rules' findings stand without the failure-class reading, and the output says so)
        note = Finding(rule="diagnosis_failed", category="other", severity="info",
                       title="The failure-class diagnosis failed on this log (not modelled: an internal error)",
                       message=f"{type(exc).__name__} in the diagnosis; the findings are the rules' alone -- rerun with "
                               "VLLM_DIAG_DEBUG=1 and report the traceback")
        note.confidence, note.basis = "low", "the diagnosis raised; nothing it would have read is in this output"
        return findings + [note]
    visible = facts.root is not None or any(e.frames for e in facts.exceptions) or bool(facts.startup.get("error_lines"))
    if visible:
        # the log shows a failure: pre-flight findings about the configuration that the log itself does not
        # evidence would read as its cause; they stay out (``vllm-diag check`` shows them)
        kept = [f for f in findings if f.category == "other" or any(e.source in (None, "log") for e in f.evidence)]
        if len(kept) < len(findings) and d is not None:
            d.missing.append(f"{len(findings) - len(kept)} pre-flight finding(s) about the configuration were left out: "
                             f"nothing in the log ties them to this failure (run `vllm-diag check` on the command)")
        findings = kept
    if d is None:
        return findings
    root = facts.root
    # a diagnosis outside the families, of some confidence, rules the hybrid/spec-decode findings out: an error's, and
    # a near miss read without any error (drafts never accepted: the drafter's weights)
    sure = d.category == "other" and d.confidence in ("high", "medium")
    rules_out = sure and (root is not None or d.rule == "near_miss")
    if d.severity != "error" and not (sure and d.rule == "near_miss"):
        # a degradation read without any failure: the rules' own findings of it (with their numbers) stand first
        if any(f.category == d.category for f in findings):
            if d.answers_symptom:  # (the rules' finding of the class the report's symptom reads as, first; the
                # reading of a capacity complaint after it where it adds figures of its own -- what the stats lines
                # show running against the rule's prediction)
                known = {k for f in findings if f.category == d.category for k in f.numbers} | set(facts.args)
                extra = [d.finding()] if d.category in _CAPACITY_CATEGORIES and set(d.numbers) - known else []
                return sorted(findings + extra, key=lambda f: f.category != d.category)
            return findings
        if d.answers_symptom and not any(f.severity == "error" and not _preflight_only(f) for f in findings):
            if d.confidence == "low" and any(_log_shows_slowdown(facts, f) for f in findings):
                # (vLLM's own numbers of the slowdown -- steps its CUDA-graph stats show running eagerly -- before an
                # inference from the setup)
                return _symptom_first(facts, findings) + [d.finding()]
            # (the reading of the report's own symptom before notes on the setup, and before a failure the pre-flight
            # predicts from the configuration that this log does not show)
            return [d.finding()] + findings
        if d.rule == "unexplained_symptom":
            if any(_answers_symptom(facts, f) for f in findings):
                return _symptom_first(facts, findings)  # (a rule's finding speaks to the symptom said to be unexplained)
            # (the rules' warnings are notes on the configuration that do not speak to the report's symptom)
            return _notes_left_out(d.finding(), findings, ("info", "warning"))
        if any(f.severity in ("error", "warning") for f in findings):
            return findings + [d.finding()]
        return [d.finding()] + findings
    root_line = root.log_line if root is not None else None

    def cites_root(f: Finding) -> bool:
        return _cites(f, root_line)

    same = [f for f in findings if f.category == d.category and (cites_root(f) or root is None) and f.severity == "error"]
    if same and d.category != "other":
        lead = same[0]
        lead.confidence = lead.confidence or d.confidence
        lead.basis = lead.basis or d.basis
        for k, v in d.numbers.items():
            lead.numbers.setdefault(k, v)
        lead.evidence += [e for e in d.evidence if e.source == "catalog" or e.line not in {x.line for x in lead.evidence}]
        if not lead.comparisons:  # the rule could not reconstruct the values: say what would give them
            lead.missing_evidence += [m for m in d.missing if m not in lead.missing_evidence]
        rest = [f for f in findings if f is not lead]
        return [lead] + rest
    new = d.finding()
    # (a near miss read off a line that is no exception -- an API server's 4xx body, a driver's fault report -- rules
    # the hybrid/spec-decode findings out just as well)
    if rules_out:
        kept = [f for f in findings if f.category == "other" or cites_root(f)]
        dropped = len(findings) - len(kept)
        if dropped:
            new.missing_evidence.append(
                f"{dropped} finding(s) of the hybrid/spec-decode classes were left out: they do not explain this "
                f"{'error' if d.severity == 'error' else 'finding'} (run `vllm-diag check` on the command to see them)")
        # a near miss read off another line than the root (a worker's C++ exception behind "Executor failed."):
        # an `other` rule that fired names the same cause, from its own line
        others = [f for f in kept if f.category == "other" and f.severity == "error"
                  and (cites_root(f) or (d.rule == "near_miss" and f.rule != "other_unrecognised"))]
        if others:  # an `other` rule already names this error: it leads, with the diagnosis' basis
            lead = others[0]
            if cites_root(lead) or d.severity == "error":
                lead.confidence = lead.confidence or d.confidence
                lead.basis = lead.basis or d.basis
                return [lead] + [f for f in kept if f is not lead]
            # a warning-level near miss (drafts never accepted) beside an `other` error of another matter: both stand
            return [lead, new] + [f for f in kept if f is not lead]
        return [new] + kept
    if d.category == "other" and root is not None:
        # low confidence `other`: a rule that explains the root error keeps the lead
        if any(cites_root(f) and f.severity == "error" for f in findings):
            return findings + [new]
    if root is None and d.confidence == "low" and any(f.severity == "error" and (
            not d.answers_symptom or any(e.source in (None, "log") for e in f.evidence)) for f in findings):
        # (a rule's error the log itself shows keeps the lead; one predicted from the configuration alone does not
        # outrank the reading of the symptom the report states)
        return findings + [new]
    if d.category != "other" and d.confidence in ("high", "medium") and root is not None:
        # an `other` rule that names the same exception generically ("VllmConfig rejected the configuration") beside
        # a family diagnosis of it is the same error twice
        findings = [f for f in findings if not (f.category == "other" and f.severity == "error" and cites_root(f))]
    findings = [f for f in findings if f.rule != "other_unrecognised"]
    if d.category == "other" and d.confidence == "low" and root is None:
        return _notes_left_out(new, findings)  # (a death that names no class: the set-up's notes are no reading of it)
    return [new] + findings


def _notes_left_out(lead: Finding, findings: list[Finding], severities: tuple[str, ...] = ("info",)) -> list[Finding]:
    """``lead`` -- a failure or symptom the log does not explain ('not modelled') -- first, without the rules'
    notes of a family of these ``severities`` (a hybrid's raised block size, true of every such start), which beside it
    would read as its cause; the lead says they were left out."""
    return [lead] + _leave_out(lead, findings, [f for f in findings if f.severity in severities and f.category != "other"])


def _leave_out(lead: Finding, findings: list[Finding], notes: list[Finding]) -> list[Finding]:
    """``findings`` without ``notes``; ``lead`` says which were left out and why."""
    if notes:
        lead.missing_evidence.append(f"{len(notes)} note(s) on the set-up were left out "
                                     f"({'; '.join(f.title for f in notes)}): they describe the configuration and do "
                                     "not explain this")
    return [f for f in findings if f not in notes]


def _log_shows_slowdown(facts: LogFacts, f: Finding) -> bool:
    """A rule's warning of a slowdown class, on what the log itself printed, beside a report of a slowdown."""
    st = facts.startup
    return bool(st.get("slow_prose") or st.get("spec_slower_prose")) and f.severity == "warning" \
        and f.category in _SPEED_CATEGORIES and bool(f.evidence) and all(e.source == "log" for e in f.evidence)


def _preflight_only(f: Finding) -> bool:
    """A finding whose only evidence is the pre-flight's prediction from the configuration."""
    return bool(f.evidence) and all(e.source == "preflight" for e in f.evidence)


# a slowness that is time spent waiting for a slot: first-token time, queueing
_QUEUE_TIME = re.compile(r"\bTTFT\b|\btime to first token\b|\bqueu|\bwait", re.I)
# the families' categories that can make serving slower with drafts, and those that cap how many requests run
_SPEED_CATEGORIES = ("cudagraph_shape", "token_budget")
_CAPACITY_CATEGORIES = ("mamba_block_budget", "token_budget", "block_size_alignment")


def _symptom_first(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """Among the rules' findings on a log without an error, those of the kind the report complains of go first: a
    slowdown with drafts is a capture or token-budget matter before a capacity prediction, fewer running requests a
    capacity one before a note on capture (stable otherwise; errors stay first)."""
    st = facts.startup
    slow = bool(st.get("slow_prose") or st.get("spec_slower_prose"))
    capacity = bool(st.get("capacity_prose"))
    if slow and capacity and _QUEUE_TIME.search(str(st.get("slow_prose") or "")) and not st.get("spec_slower_prose"):
        slow = False  # (time to first token from requests queued past the cap: the cap is the complaint)
    if slow == capacity:
        return findings
    wanted = _SPEED_CATEGORIES if slow else _CAPACITY_CATEGORIES
    return sorted(findings, key=lambda f: (f.severity != "error", f.category not in wanted or f.severity == "info"))


def _answers_symptom(facts: LogFacts, f: Finding) -> bool:
    """Whether a rule's warning can be the cause of a reported symptom without an error. The hybrid's prefix-cache
    granularity (its warning, or the note that the attention block was raised) is a fact of the configuration: it
    answers a report about prefix hits or time to first token, not slow decoding or wrong output on a log whose cache
    does hit."""
    granularity = f.rule == "block_size_inflated" or (
        f.rule == "prefix_cache_granularity" and "granularity_tokens" in f.numbers)  # (its block granularity findings)
    if not granularity:
        return f.severity in ("error", "warning")
    st = facts.startup
    if st.get("wrong_output_prose"):
        return False  # (how often the cache hits never makes an answer wrong, whatever else the report says of the hits)
    if f.rule == "block_size_inflated" and st.get("capacity_prose") and raised_block_holds_requests(facts):
        return True  # (fewer requests run than expected, each holding a few of the raised blocks: the block's granularity)
    if prompts_share_no_prefix(st):
        return False  # (prompts that share no prefix have nothing to hit at any granularity)
    if st.get("capacity_prose") and not (st.get("hit_rate_prose") or st.get("slow_prose") or st.get("spec_slower_prose")):
        return False  # (a report of how many requests run, not of hits or prompt time: granularity caps no concurrency)
    said = " ".join(str((facts.lines.get(k) or (0, ""))[1]) for k in ("slow_prose", "spec_slower_prose", "capacity_prose"))
    rate = st.get("prefix_cache_hit_rate_max")
    if isinstance(rate, (int, float)) and rate >= 20 and not (
            st.get("hit_rate_prose") or st.get("shared_prefix_tokens") or PREFILL_COMPLAINT.search(said)):
        return False  # (the cache hits; a report that only says prefix caching is on asks nothing of its granularity)
    if f.rule == "block_size_inflated":
        # (a note, not a warning: the report itself must be about the cache's hits, and a slowness it tells about the
        # prompt's side)
        return bool(st.get("hit_rate_prose") or st.get("prefix_caching_prose") or st.get("shared_prefix_tokens")) and (
            not (st.get("slow_prose") or st.get("spec_slower_prose")) or bool(PREFILL_COMPLAINT.search(said)))
    return bool(st.get("hit_rate_prose") or st.get("prefix_caching_prose") or st.get("shared_prefix_tokens")
                or rate == 0 or PREFILL_COMPLAINT.search(said))


def _root_first(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """Within a severity, findings whose evidence is the root error come first."""
    root = facts.root
    if root is None or root.log_line is None:
        return findings
    from ..model import SEVERITIES

    def key(f: Finding) -> tuple[int, int]:
        return SEVERITIES.index(f.severity), 0 if _cites(f, root.log_line) else 1

    return sorted(findings, key=key)


def _unexplained_root(facts: LogFacts, findings: list[Finding]) -> list[Finding]:
    """A root error no rule explains still gets named (category ``other``), with its evidence."""
    root = facts.root
    if root is None or any(f.severity == "error" for f in findings):
        return findings
    last = root.last_frame
    where = f" at {last.file.rsplit('/', 1)[-1]}:{last.line} in {last.function}" if last else ""
    f = Finding(
        rule="other_unrecognised",
        category="other",
        title=f"Unrecognised failure: {root.exc_type}{where}",
        severity="error",
        message=(root.message.splitlines()[0][:300] if root.message else "(no message)")
        + " -- no vllm-diag rule knows this error; the root exception and its frames are below.",
        numbers=dict(facts.numbers),
        evidence=[Evidence(text=f"{root.exc_type}: {root.message}".rstrip(": ")[:500], line=root.log_line)]
        + [Evidence(text=f'File "{fr.file}", line {fr.line}, in {fr.function}', line=fr.log_line) for fr in root.frames[-3:]],
    )
    f.confidence = "low"
    f.basis = "no failure site of the catalog (vLLM 0.11-0.33) and no rule matches this error; its frames are the evidence"
    # hybrid/spec-decode notes on the configuration (a raised block size) explain no error; beside an error that
    # nothing explains they would read as its cause
    notes = [x for x in findings if x.category != "other" and not any(e.line == root.log_line for e in x.evidence)]
    if notes:
        findings = [x for x in findings if x not in notes]
        f.missing_evidence.append(
            f"{len(notes)} note(s) of the hybrid/spec-decode classes on the configuration were left out: they do not "
            f"explain this error (`vllm-diag check` on the command shows them)")
    if root.exc_type.endswith("AssertionError") and not root.message:
        f.missing_evidence.append(
            "the assertion carries no values; " + PROBE_HINT
        )
    from ..model import SEVERITIES

    return sorted(findings + [f], key=lambda x: SEVERITIES.index(x.severity))


def _missing_evidence(an: Analysis, findings: list[Finding]) -> None:
    """A finding that explains the root error but has no expected-vs-actual values says what is missing."""
    root = an.facts.root
    for f in findings:
        if f.category not in MISMATCH_CATEGORIES or f.comparisons or f.missing_evidence:
            continue
        if root is None or not any(e.line == root.log_line for e in f.evidence):
            continue
        if an.predicted is not None:
            why = f"the pre-flight ran but could not reconstruct them: {an.preflight_note}"
        else:
            why = f"the pre-flight could not run: {an.preflight_note or 'no config.json reachable'}"
        f.missing_evidence.append(f"the log carries no expected-vs-actual values for this failure and {why}; "
                                  + PROBE_HINT)


def _attach_suggestions(findings: list[Finding], ctx: RuleContext) -> None:
    """Suggestions from the suggestion engine, re-checked with the pre-flight's evaluator."""
    from ..preflight import evaluate
    from ..suggest import suggestions_for_finding

    for f in findings:
        if f.suggestions:
            continue
        try:
            f.suggestions = list(suggestions_for_finding(f, ctx, evaluate=evaluate) or [])
        except Exception:  # noqa: BLE001 - a suggestion bug must not lose the finding
            if os.environ.get("VLLM_DIAG_DEBUG"):
                raise
            f.suggestions = []


def _localise_evidence(an: Analysis, findings: list[Finding]) -> None:
    """Global line numbers (folders are read as one stream) -> (file, line within the file)."""
    from ..redact import redact

    for f in findings:  # rules may cite the same line twice; log text may hold secrets
        seen: set[tuple] = set()
        uniq = []
        for e in f.evidence:
            e.text = redact(e.text)
            key = (e.line, e.text, e.source)
            if key not in seen:
                seen.add(key)
                uniq.append(e)
        f.evidence = uniq
    files = an.files
    if not files:
        return
    for f in findings:
        for e in f.evidence:
            if e.line is None or e.source not in (None, "log"):
                continue
            src, line = locate(files, e.line)
            e.source, e.line = src, line


def locate(files: list[dict], line: int) -> tuple[str | None, int]:
    cur = None
    for info in files:
        if info["first_line"] <= line:
            cur = info
        else:
            break
    if cur is None:
        return None, line
    return cur["name"], line - cur["first_line"] + 1


# ------------------------------------------------------------------------------------------------


def analyze_path(path: str, use_preflight: bool = True, model_dirs: Sequence[str] = ()) -> Analysis:
    from .reader import read_facts

    facts, info = read_facts(path)
    an = analyze_facts(facts, source=path, files=info["files"], use_preflight=use_preflight, model_dirs=model_dirs)
    an.skipped = info["skipped"]
    an.bytes = info["bytes"]
    return an


def analyze_text(text: str, source: str = "<text>", use_preflight: bool = True) -> Analysis:
    from .reader import facts_from_text

    facts = facts_from_text(text)
    return analyze_facts(facts, source=source, files=[{"name": source, "first_line": 1, "lines": facts.total_lines}],
                         use_preflight=use_preflight)


def store_analysis(an: Analysis, db: str) -> str:
    """Store the analysis as a session of kind ``log`` (``Store.save`` of ``an.to_record()``)."""
    from ..store import Store

    with Store.open(db, create=True) as st:
        sid = st.save(an.to_record())
    an.session_id = sid
    return sid
