"""The view layer: pure functions from a :class:`~vllm_diag.model.SessionRecord` to frozen view
models (stdlib only; no I/O, no store, no UI imports). Everything numbered, cut, sorted or
highlighted is decided here, once, for the text/Markdown/JSON renderers, the HTML report, the TUI
and the dashboard.

``build(record) -> ReportVM`` returns all of them; each has its own function too:
``header``, ``findings``, ``page_map``, ``state_index``, ``timeline``.
"""

from __future__ import annotations

from .findings import FindingsVM, FindingVM, SuggestionVM, findings, numbered_suggestions
from .header import HeaderVM, header
from .pages import PageMapVM, page_map
from .primitives import Anchor, Missing
from .report import VIEWS_VERSION, ReportVM, build
from .state_index import StateIndexVM, state_index
from .timeline import TimelineVM, extend, summarize_steps, timeline

__all__ = [
    "Anchor", "FindingVM", "FindingsVM", "HeaderVM", "Missing", "PageMapVM", "ReportVM", "StateIndexVM", "SuggestionVM",
    "TimelineVM", "VIEWS_VERSION", "build", "extend", "findings", "header", "numbered_suggestions", "page_map",
    "state_index", "summarize_steps", "timeline",
]
