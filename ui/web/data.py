"""What the dashboard reads: the fleet snapshot and, per session, the record and its view models.

``Sources`` wraps a :class:`vllm_diag.fleet.Fleet` (read-only, O(new rows) refresh) and caches
``views.build(record)`` per session, keyed by the session's fleet row: when the engine writes new
steps or the status changes, the row changes and the next request rebuilds; 20 browsers on the same
session share one build. Records are loaded with ``steps="summary"``: the timeline of a
1,000,000-step session comes from SQLite's GROUP BY, never from a million Python objects.

Nothing here draws; nothing here decides what a view shows (``vllm_diag.views`` does).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from vllm_diag.errors import DiagError
from vllm_diag.fleet import Fleet, FleetRow, FleetSnapshot

# Sessions with more steps than this paint first without their timeline (record loaded without steps,
# milliseconds); the timeline's SQL aggregation then arrives in a second callback.
QUICK_STEPS = 100_000
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
DB_KEY = re.compile(r"^[0-9a-f]{12}$")


@dataclass(frozen=True)
class Loaded:
    row: FleetRow
    record: object  # SessionRecord (steps summarised)
    report: object  # views.ReportVM
    suggestions: tuple  # views.numbered_suggestions(record): (N, Finding, Suggestion)
    quick: bool = False  # loaded without its steps: the timeline comes in a second callback


class Sources:
    def __init__(self, fleet: Fleet, refresh_s: float = 2.0, cache_size: int = 64):
        self.fleet = fleet
        self.refresh_s = refresh_s
        self._refresh_lock = threading.Lock()
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()
        self._figures: OrderedDict = OrderedDict()
        self._quick: OrderedDict = OrderedDict()
        self._cache_lock = threading.Lock()
        self._build_locks: dict = {}
        self._last_refresh = 0.0

    def snapshot(self, force: bool = False) -> FleetSnapshot:
        """The fleet, refreshed when older than ``refresh_s`` (one caller refreshes, the others
        read the current snapshot meanwhile)."""
        if force or time.monotonic() - self._last_refresh >= self.refresh_s:
            if self._refresh_lock.acquire(blocking=force):
                try:
                    self.fleet.refresh()
                    self._last_refresh = time.monotonic()
                finally:
                    self._refresh_lock.release()
        return self.fleet.snapshot()

    def row(self, db_key: str, session: str) -> FleetRow:
        if not DB_KEY.match(db_key or "") or not SESSION_ID.match(session or ""):
            raise DiagError("no such session among the dashboard's databases")
        row = self.snapshot().row(db_key, session)
        if row is None:
            row = self.snapshot(force=True).row(db_key, session)
        if row is None:
            raise DiagError("no such session among the dashboard's databases")
        return row

    def figures(self, loaded: Loaded, selected: int | None, build) -> tuple:
        """``build(loaded, selected)``'s figures as plain dicts, cached per session version and
        selected finding: 20 browsers on one session share one build and one conversion."""
        key = (build.__name__, loaded.row.db_key, loaded.row.session, loaded.row, selected, loaded.quick)
        with self._cache_lock:
            hit = self._figures.get(key)
            if hit is not None:
                self._figures.move_to_end(key)
                return hit
        figs = tuple(f.to_plotly_json() for f in build(loaded, selected))
        with self._cache_lock:
            self._figures[key] = figs
            while len(self._figures) > 4 * self.cache_size:
                self._figures.popitem(last=False)
        return figs

    def load_quick(self, db_key: str, session: str) -> Loaded:
        """What the first paint needs: the full :meth:`load` when it is cached or the session is short;
        for a long session the record without its steps (header, findings, page map, state index)."""
        from vllm_diag import api, views

        row = self.row(db_key, session)
        if row.last_step is None or row.last_step < QUICK_STEPS:
            return self.load(db_key, session)
        with self._cache_lock:
            for cache, k in ((self._cache, (db_key, session)), (self._quick, (db_key, session))):
                hit = cache.get(k)
                if hit is not None and hit.row == row:
                    return hit
        with self.fleet.open_store(db_key) as store:
            record = api.diagnose(store.load(session, steps=False), store=store)
        loaded = Loaded(row, record, views.build(record), tuple(views.numbered_suggestions(record)), quick=True)
        with self._cache_lock:
            self._quick[(db_key, session)] = loaded
            while len(self._quick) > self.cache_size:
                self._quick.popitem(last=False)
        # the page's next request is this session's timeline: start its aggregation now (the
        # timeline callback then waits on the same build instead of starting it ~0.1-0.2 s later)
        threading.Thread(target=self._load_quietly, args=(db_key, session), daemon=True).start()
        return loaded

    def _load_quietly(self, db_key: str, session: str) -> None:
        try:
            self.load(db_key, session)
        except DiagError:
            pass  # the timeline callback's own load reports it on the page

    def load(self, db_key: str, session: str) -> Loaded:
        """Record + view models of one session (cached until its fleet row changes)."""
        from vllm_diag import api, views

        row = self.row(db_key, session)
        key = (db_key, session)
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None and hit.row == row:
                self._cache.move_to_end(key)
                return hit
            lock = self._build_locks.setdefault(key, threading.Lock())
        with lock:  # one build per session at a time; the others wait for it
            with self._cache_lock:
                hit = self._cache.get(key)
                if hit is not None and hit.row == row:
                    return hit
            with self.fleet.open_store(db_key) as store:
                record = store.load(session, steps="summary")
                record = api.diagnose(record, store=store)  # a recorded engine without stored findings: the rules, on open
            report = views.build(record)
            loaded = Loaded(row, record, report, tuple(views.numbered_suggestions(record)))
            with self._cache_lock:
                self._cache[key] = loaded
                self._cache.move_to_end(key)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            return loaded
