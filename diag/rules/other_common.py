"""Helpers for the ``other``-category rules (post-mortem); not a rule itself (no ``RULE``).

The ``other`` rules name failures outside the KV/spec family that a log states clearly -- OOM, missing
files, NCCL timeouts, unsupported architectures, async CUDA errors, config validation. They read only
``ctx.log`` and never claim a mismatch category."""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from .base import RuleContext


def all_exceptions(log: LogFacts) -> list[LogException]:
    out = [log.root] if log.root is not None else []
    return out + [e for e in log.exceptions if e is not log.root]


def find_exc(ctx: RuleContext, pattern: re.Pattern[str], types: tuple[str, ...] = (), root_only: bool = False) -> LogException | None:
    """The root exception (preferred) or another one whose 'type: message' matches ``pattern``."""
    if ctx.log is None:
        return None
    cands = [ctx.log.root] if ctx.log.root is not None else []
    if not root_only:
        cands += [e for e in ctx.log.exceptions if e is not ctx.log.root and not e.wrapped]
    for e in cands:
        if types and not any(e.exc_type.endswith(t) for t in types):
            continue
        if pattern.search(f"{e.exc_type}: {e.message}"):
            return e
    return None


def exc_evidence(exc: LogException, frames: int = 2, limit: int = 400) -> list[Evidence]:
    """The exception line and its innermost ``frames`` frames, as log evidence."""
    first = exc.message.strip().splitlines()[0] if exc.message.strip() else ""
    ev = []
    if exc.exc_type and not exc.exc_type.startswith("("):  # "(truncated)"-style placeholders are no type
        ev.append(Evidence(text=f"{exc.exc_type}: {first}".rstrip(": ")[:limit], line=exc.log_line, source="log"))
    for fr in exc.frames[-frames:]:
        ev.append(Evidence(text=f'File "{fr.file}", line {fr.line}, in {fr.function}' + (f": {fr.code}" if fr.code else ""),
                           line=fr.log_line, source="log"))
    return ev


def fact_evidence(log: LogFacts, *names: str, limit: int = 400) -> list[Evidence]:
    """The log lines the named facts were read from."""
    out = []
    for n in names:
        if n in log.lines:
            line, text = log.lines[n]
            out.append(Evidence(text=text[:limit], line=line, source="log"))
    return out
