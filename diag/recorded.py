"""Findings for a recorded engine session on open: the probes store facts (specs, groups, tables,
steps, errors) and, at a failure or a stop, the findings of :mod:`vllm_diag.live`'s diagnosis; a
session without stored findings (still serving, killed before it could, recorded by an older
vllm-diag) gets that same diagnosis here. Kept apart from the views and the front ends, so the
probes' own collector can use it (``probes/metrics.py``) without reaching the presentation layers.

Front ends load a session without its step rows (``Store.load(steps=False)`` or ``"summary"``: a
million-step session opens in milliseconds), but a few rules read step rows: the earlier mixed steps
of a failing one, the builders' rows of the failing step, the first mixed step of a release with the
known mixed-batch bug. Given the store, :func:`diagnose` reads exactly those rows (the trigger-kept
``step_marks`` index finds the mixed ones), so the findings are the ones ``vllm-diag diagnose``
stores from all the rows; the record returned keeps the steps it was loaded with."""

from __future__ import annotations

import dataclasses

from .model import SessionRecord


def diagnose(record: SessionRecord, suggestions: bool = True, store=None) -> SessionRecord:
    """The record with findings: its stored ones, or (a recorded engine session that has none)
    ``vllm-diag diagnose``'s findings of it -- :func:`vllm_diag.live.diagnosis`, with the suggestions
    listed but not re-checked (that runs the pre-flight once per suggestion; what ``vllm-diag
    diagnose`` stores is re-checked), or left out with ``suggestions=False``. ``store``: the open
    store the record came from, for the step rows the rules read when the record holds none. A check
    or a post-mortem keeps what it found, none included."""
    if record.findings or record.session.kind != "engine":
        return record
    from .live import diagnosis

    read = record
    if store is not None and not record.state.steps:
        read = dataclasses.replace(record, state=dataclasses.replace(record.state, steps=store.steps_the_rules_read(record)))
    diagnosed = diagnosis(read, suggestions=suggestions, recheck=False)
    return dataclasses.replace(record, findings=diagnosed.findings, rule_failures=diagnosed.rule_failures)
