"""One session: a header line and five tabs (findings, page-size map, state index, timeline,
suggestions), each drawn from its view model. In ``--follow`` a thread worker feeds new rows in.

The record is read in a worker thread (its own read-only connection) inside one read
transaction, together with the follow marks (largest rowids), so the follow worker starts exactly
where the loaded record ends: no row is lost or shown twice.
"""

from __future__ import annotations

import dataclasses
import gc
import time

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from vllm_diag.errors import DiagError
from vllm_diag.views import build

from . import messages as msg
from .data import Tail, follow_loop, load_record, load_snapshot, open_store
from .panes import FindingsPane, HeaderBar, PageMapPane, StateIndexPane, SuggestionsPane, TimelinePane

TABS = (
    ("findings", "Findings", "1", "f"),
    ("pages", "Page map", "2", "p"),
    ("state", "State index", "3", "i"),
    ("timeline", "Timeline", "4", "t"),
    ("suggestions", "Suggestions", "5", "s"),
)


class SessionScreen(Screen):
    """The pictures of one session."""

    BINDINGS = [
        Binding("escape", "back", "Sessions"),
        Binding("backspace", "back", "Sessions", show=False),
        *[Binding(num, f"tab('{tid}')", label, key_display=num, show=False) for tid, label, num, _ in TABS],
        *[Binding(letter, f"tab('{tid}')", label, show=False) for tid, label, _, letter in TABS],
    ]
    DEFAULT_CSS = """
    SessionScreen HeaderBar { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    SessionScreen TabbedContent { height: 1fr; }
    SessionScreen TabPane { padding: 0; }
    SessionScreen #loading { padding: 1 2; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.record = None
        self.marks = None
        self.loaded_at = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield HeaderBar(id="headerbar")
        with TabbedContent(id="tabs"):
            with TabPane("1 Findings", id="findings"):
                yield FindingsPane()
            with TabPane("2 Page map", id="pages"):
                yield PageMapPane()
            with TabPane("3 State index", id="state"):
                yield StateIndexPane()
            with TabPane("4 Timeline", id="timeline"):
                yield TimelinePane()
            with TabPane("5 Suggestions", id="suggestions"):
                yield SuggestionsPane()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(HeaderBar).loading_text(self.session_id)
        self.load_quick()

    def on_unmount(self) -> None:
        gc.unfreeze()  # the session is closed: what was frozen at its load (see _worker_state) is collectable again

    # ---------------------------------------------------------------- loading
    # Two steps, so that a long session paints at once: the record without its steps (milliseconds
    # whatever the length: header, findings, page map, state index, suggestions), then the step
    # summary the store aggregates in SQLite (the timeline) together with the follow marks.

    @work(thread=True, exclusive=True, group="load-quick")
    def load_quick(self):
        with open_store(self.app.db_path) as store:
            return load_record(store, self.session_id)

    @work(thread=True, exclusive=True, group="load")
    def load(self) -> tuple:
        with open_store(self.app.db_path) as store:
            return load_snapshot(store, self.session_id)

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group not in ("load", "load-quick"):
            return
        if worker.state == WorkerState.SUCCESS and worker.group == "load-quick":
            if self.record is None:
                self.show(worker.result, steps_pending=True)
                self.turn_to_finding_if_failed()
            self.call_after_refresh(self.load)  # the summary after this frame is on screen
        elif worker.state == WorkerState.SUCCESS:
            record, marks = worker.result
            first = self.marks is None
            self.show(record)
            # the loaded record and its pictures live as long as the screen: out of the cyclic garbage
            # collector's full passes, which otherwise walk them all (50-70 ms on 1,000,000 steps, a stall
            # in the middle of scrolling); they are still freed by reference counting when dropped, and
            # given back to the collector when the screen closes (on_unmount)
            gc.freeze()
            if first:
                self.marks = marks
                if self.app.follow:
                    self.follow()
        elif worker.state == WorkerState.ERROR:
            error = worker.error
            text = str(error) if isinstance(error, DiagError) else f"cannot read the session ({type(error).__name__}: {error})"
            self.query_one(HeaderBar).error_text(text)
            self.app.notify(text, title="cannot open session", severity="error", timeout=15)

    def show(self, record, keep_steps: bool = False, steps_pending: bool = False) -> None:
        """Draw every tab from the record's view models (``views.build``). ``keep_steps``: the
        record was reloaded for its findings; the timeline keeps the summary --follow extended."""
        timeline_pane = self.query_one(TimelinePane)
        if keep_steps and timeline_pane.record is not None and timeline_pane.record.step_summary is not None:
            record = dataclasses.replace(record, step_summary=timeline_pane.record.step_summary)
        self.record = record
        self.loaded_at = time.time()
        vm = build(record)
        self.vm = vm
        self.query_one(HeaderBar).show(vm.header)
        self.query_one(FindingsPane).show(vm.findings, vm.header)
        self.query_one(PageMapPane).show(vm.page_map)
        self.query_one(StateIndexPane).show(vm.state_index)
        timeline_pane.show(record, vm.timeline, pending=steps_pending)
        self.query_one(SuggestionsPane).show(vm.findings, record)

    # ---------------------------------------------------------------- navigation

    def action_back(self) -> None:
        self.app.pop_screen()  # the sessions list is always under a session (also with `tui DB SESSION`)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "timeline":
            self.query_one(TimelinePane).shown_again()

    def action_tab(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id
        pane = self.query_one(f"#{tab_id}", TabPane)
        focusable = [w for w in pane.query("*") if w.can_focus]
        if focusable:
            focusable[0].focus()

    def jump_to(self, anchor) -> None:
        """Show the picture ``anchor`` points into and select its row, column or step."""
        kind = anchor.kind
        if kind == "layer":
            self.action_tab("pages")
            self.query_one(PageMapPane).select(anchor)
        elif kind in ("group", "column"):
            target = "state" if kind == "column" or self.query_one(StateIndexPane).has(anchor) else "pages"
            self.action_tab(target)
            (self.query_one(StateIndexPane) if target == "state" else self.query_one(PageMapPane)).select(anchor)
        elif kind == "step":
            self.action_tab("timeline")
            self.query_one(TimelinePane).select(anchor)

    def turn_to_finding_if_failed(self) -> None:
        """A failed session opens on its first finding (the one that stopped the engine)."""
        if self.record is None or self.record.session.status != "failed":
            return
        self.action_tab("findings")
        self.query_one(FindingsPane).select_first()

    # ---------------------------------------------------------------- follow

    @work(thread=True, exclusive=True, group="follow")
    def follow(self) -> None:
        worker = get_current_worker()
        try:
            tail = Tail.open(self.app.db_path, self.session_id)
        except DiagError as exc:
            self.post_message(msg.FollowFailed(str(exc)))
            return
        def post(delta) -> None:
            if delta.steps:
                self.post_message(msg.StepsAppended(self.session_id, delta.steps, delta.step_rowid))
            if delta.errors:
                self.post_message(msg.ErrorsAppended(self.session_id, delta.errors))
            if delta.findings_changed:
                self.post_message(msg.FindingsChanged(self.session_id))
            if delta.status:
                self.post_message(msg.StatusChanged(self.session_id, delta.status))

        try:
            tail.set_marks(self.marks)
            follow_loop(tail, self.app.poll_s, lambda: worker.is_cancelled, post,
                        lambda reason: self.post_message(msg.FollowFailed(reason)))
        finally:
            tail.close()

    def on_steps_appended(self, message: msg.StepsAppended) -> None:
        self.query_one(TimelinePane).append(message.steps, message.last_rowid)
        self.query_one(HeaderBar).live(steps=len(message.steps))

    def on_errors_appended(self, message: msg.ErrorsAppended) -> None:
        # errors change the findings and header: reload the record (rare: once per failure)
        self.query_one(TimelinePane).append_errors(message.rows)
        self.reload()

    def on_findings_changed(self, _message: msg.FindingsChanged) -> None:
        self.reload()

    def on_status_changed(self, message: msg.StatusChanged) -> None:
        self.query_one(HeaderBar).status(message.status)
        self.reload(turn=message.status == "failed")

    def on_follow_failed(self, message: msg.FollowFailed) -> None:
        self.app.notify(message.reason, title="follow stopped", severity="error", timeout=15)

    def reload(self, turn: bool = False) -> None:
        self._turn_after_reload = turn or getattr(self, "_turn_after_reload", False)
        self.reload_record()

    @work(thread=True, exclusive=True, group="reload")
    def reload_record(self) -> None:
        with open_store(self.app.db_path) as store:
            record, _marks = load_snapshot(store, self.session_id)
        self.app.call_from_thread(self._reloaded, record)

    def _reloaded(self, record) -> None:
        self.show(record, keep_steps=True)
        if getattr(self, "_turn_after_reload", False):
            self._turn_after_reload = False
            self.turn_to_finding_if_failed()


__all__ = ["SessionScreen"]
