"""``build(record) -> ReportVM``: every view of one session, in display order -- what `show`,
`check`, `analyze`, `report`, the TUI and the dashboard all draw."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import SessionRecord
from .findings import FindingsVM, findings
from .header import HeaderVM, header
from .pages import PageMapVM, page_map
from .state_index import StateIndexVM, state_index
from .timeline import TimelineVM, timeline

VIEWS_VERSION = 1  # bumped when a view model changes incompatibly (STATUS "views API")


@dataclass(frozen=True)
class ReportVM:
    version: int
    header: HeaderVM
    findings: FindingsVM
    page_map: PageMapVM
    state_index: StateIndexVM
    timeline: TimelineVM


def build(record: SessionRecord) -> ReportVM:
    pages = page_map(record)
    index = state_index(record)
    steps = timeline(record)
    return ReportVM(version=VIEWS_VERSION, header=header(record),
                    findings=findings(record, pages=pages, state_index=index, timeline=steps),
                    page_map=pages, state_index=index, timeline=steps)
