"""Findings for a recorded engine session that has none stored: the probes record facts (specs,
groups, tables, steps, errors), not findings, so a front end that shows a recorded session runs the
rules on what was recorded. Kept apart from the views and the front ends, so the probes' own
collector can use it (``probes/metrics.py``) without reaching the presentation layers."""

from __future__ import annotations

import dataclasses

from .model import RuleFailure, SessionRecord


def diagnose(record: SessionRecord) -> SessionRecord:
    """The record with findings: its stored ones, or the rules run on the recorded state (suggestions
    listed but not re-checked: a recorded session has no command line to patch)."""
    if record.findings:
        return record
    from .rules import run_rules
    from .rules.base import GpuInfo, RuleContext, parse_version
    from .suggest import suggestions_for_finding

    gpu = None
    gpus = record.state.environment.get("gpus")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        cap = str(gpus[0].get("compute_capability") or "")
        cc = tuple(int(x) for x in cap.split(".")[:2]) if cap.replace(".", "").isdigit() and "." in cap else None
        gpu = GpuInfo(name=gpus[0].get("name"), compute_capability=cc, count=len(gpus))
    ctx = RuleContext(state=record.state, version=parse_version(record.session.vllm_version or record.state.vllm_version),
                      gpu=gpu)
    from .live import _fold_known_mixed_batch

    run = run_rules(ctx)
    findings = _fold_known_mixed_batch(list(run))  # one finding for a failing mixed step of a known release bug
    for f in findings:
        f.suggestions = list(suggestions_for_finding(f, ctx))
    return dataclasses.replace(record, findings=findings,
                               rule_failures=record.rule_failures + [RuleFailure(r, e) for r, e in run.failures])
