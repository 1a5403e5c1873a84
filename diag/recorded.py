"""Findings for a recorded engine session on open: the probes store facts (specs, groups, tables,
steps, errors) and, at a failure or a stop, the findings of :mod:`vllm_diag.live`'s diagnosis; a
session without stored findings (still serving, killed before it could, recorded by an older
vllm-diag) gets that same diagnosis here. Kept apart from the views and the front ends, so the
probes' own collector can use it (``probes/metrics.py``) without reaching the presentation layers."""

from __future__ import annotations

from .model import SessionRecord


def diagnose(record: SessionRecord, suggestions: bool = True) -> SessionRecord:
    """The record with findings: its stored ones, or (a recorded engine session that has none)
    ``vllm-diag diagnose``'s findings of it -- :func:`vllm_diag.live.diagnosis`, with the suggestions
    listed but not re-checked (that runs the pre-flight once per suggestion; what ``vllm-diag
    diagnose`` stores is re-checked), or left out with ``suggestions=False``. A check or a
    post-mortem keeps what it found, none included."""
    if record.findings or record.session.kind != "engine":
        return record
    from .live import diagnosis

    return diagnosis(record, suggestions=suggestions, recheck=False)
