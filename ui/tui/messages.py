"""Typed messages of the TUI (toolong style): the follow worker posts them from its thread, the
screens handle them on the UI thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class StepsAppended(Message):
    """Steps (``BatchStep``) written since the last poll, oldest first; ``last_rowid`` is the
    rowid of the last one (``StepSummary.last_rowid`` after folding them in)."""

    session_id: str
    steps: list = field(default_factory=list)
    last_rowid: int = 0


@dataclass
class ErrorsAppended(Message):
    """``errors`` rows written since the last poll."""

    session_id: str
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FindingsChanged(Message):
    """The session's findings were (re)written: reload the record."""

    session_id: str


@dataclass
class StatusChanged(Message):
    """The session's status changed (``running`` -> ``ok`` | ``failed``)."""

    session_id: str
    status: str


@dataclass
class SessionsChanged(Message):
    """A session was added or changed status: refresh the list. Floods merge into one."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SessionsChanged)


@dataclass
class FollowFailed(Message):
    """The follow worker cannot read the database any more (deleted, replaced, corrupted)."""

    reason: str


@dataclass
class SuggestionApplied(Message):
    """Suggestion ``number`` was written to ``paths``."""

    number: int
    paths: list[str] = field(default_factory=list)
