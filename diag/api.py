"""The library facade for front ends (TUI, dashboard, scripts): open a database, list and load
sessions, run a check or a post-mortem, diagnose a recorded engine session, build the views, apply
a suggestion by the number every front end shows. Everything returns model objects or view models.

    from vllm_diag import api
    record = api.load("run.db")                 # newest session, steps aggregated by SQLite
    vm = api.views(api.diagnose(record))        # findings for a recorded session without stored ones
                                                # (pass store= when its step rows were not loaded)
    api.apply_suggestion(record, 1, "out/")     # what `vllm-diag suggest --apply 1` writes
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DiagError
from .model import SessionInfo, SessionRecord
from .recorded import diagnose
from .views import ReportVM, build, numbered_suggestions

__all__ = ["analyze", "apply_suggestion", "check", "diagnose", "load", "open_db", "sessions", "views"]


def open_db(path: str | os.PathLike, write: bool = False):
    from .store import Store

    return Store.open(path, create=write)


def sessions(path: str | os.PathLike) -> list[SessionInfo]:
    with open_db(path) as st:
        return st.sessions()


def load(path: str | os.PathLike, session: str | None = None, steps: bool | str = "summary") -> SessionRecord:
    """A session (default: the newest); ``steps="summary"`` aggregates the batch steps in SQLite."""
    with open_db(path) as st:
        return st.load(session, steps=steps)


def views(record: SessionRecord) -> ReportVM:
    return build(record)


def check(command, version: str | None = None, gpu: str | None = None, db: str | os.PathLike | None = None,
          **kwargs) -> SessionRecord:
    """Pre-flight ``command`` (a ``vllm serve`` line); stored in ``db`` when given."""
    from .preflight import run_check

    record = run_check(command, version=version, gpu=gpu, **kwargs).to_record()
    return _maybe_save(record, db)


def analyze(path: str, db: str | os.PathLike | None = None, **kwargs) -> SessionRecord:
    """Post-mortem of a log file/folder; stored in ``db`` when given."""
    from .postmortem.analyze import analyze_path

    return _maybe_save(analyze_path(path, **kwargs).to_record(), db)


def apply_suggestion(record: SessionRecord, number: int, out_dir: str | os.PathLike) -> list[Path]:
    """Write suggestion ``number`` (the N every front end shows) as ``.sh`` + ``.yaml``; never overwrites."""
    from .suggest import apply_suggestion as write

    items = numbered_suggestions(record)
    match = [s for n, _f, s in items if n == number]
    if not match:
        raise DiagError(f"no suggestion {number} in session {record.session.id}" + (f" (1..{len(items)})" if items else ""))
    return write(match[0], out_dir, stem=f"vllm-diag-{record.session.id}-s{number}")


def _maybe_save(record: SessionRecord, db) -> SessionRecord:
    if db is not None:
        with open_db(db, write=True) as st:
            st.save(record)
    return record
