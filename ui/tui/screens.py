"""Screens: the sessions list, one session (five tabs), help, and a yes/no confirmation."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Input, Label, Static
from textual.worker import get_current_worker

from vllm_diag.errors import DiagError

from . import messages as msg
from .data import SessionRow, Tail, follow_loop, open_store, session_rows

# -------------------------------------------------------------------------------------- sessions


class SessionsScreen(Screen):
    """Every session of the database: kind, status, model, vLLM, GPU, findings, steps; filter; open."""

    BINDINGS = [
        Binding("enter", "open", "Open", show=True, priority=False),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("r", "refresh", "Refresh"),
    ]
    DEFAULT_CSS = """
    SessionsScreen #filter { height: 3; }
    SessionsScreen #empty { height: 1; padding: 0 1; }
    SessionsScreen DataTable { height: 1fr; }
    """

    COLUMNS = ("status", "kind", "model", "vLLM", "GPU", "E/W/I", "errors", "steps", "started (UTC)", "id")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[SessionRow] = []
        self.loaded = False  # the first read of the list is done
        self.waiting = False  # --follow on a DB without sessions: open the first one that appears

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="filter: words in any column (status, model, version, GPU, id...)", id="filter")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Label("", id="empty", classes="muted")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*self.COLUMNS)
        table.focus()
        # counting a long session's steps takes a moment: when a session opens on top of the list
        # at start, read the list after that session's first frame
        self.set_timer(1.0 if self.app.start_session else 0.01, self.reload)
        if self.app.follow:
            with open_store(self.app.db_path) as store:
                self.waiting = not store.sessions()
            self.follow_sessions()

    def reload(self) -> None:
        """Read the list in a thread (counting a long session's steps takes a moment) and fill."""
        self.read_rows()

    @work(thread=True, exclusive=True, group="sessions")
    def read_rows(self) -> None:
        try:
            with open_store(self.app.db_path) as store:
                rows = session_rows(store)
        except DiagError as exc:
            self.app.call_from_thread(self.app.notify, str(exc), title="cannot read the sessions", severity="error")
            return
        self.app.call_from_thread(self._rows_read, rows)

    def _rows_read(self, rows: list[SessionRow]) -> None:
        self.rows = rows
        self.loaded = True
        self.fill()
        if self.app.follow and len(self.rows) == 1 and self.app.screen is self and self.waiting:
            self.waiting = False
            self.open_session(self.rows[0].id)  # the engine we were waiting for has started

    def fill(self) -> None:
        table = self.query_one(DataTable)
        current = None
        if table.row_count and table.cursor_row < table.row_count:
            current = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        table.clear()
        text = self.query_one("#filter", Input).value
        shown = [r for r in self.rows if r.matches(text)]
        for r in shown:
            table.add_row(
                Text(r.status, style=_STATUS_STYLE.get(r.status, "")),
                r.kind,
                _ellipsis(r.model, 34),
                r.vllm_version,
                r.gpu,
                _severity_counts(r.findings),
                str(r.errors) if r.errors else "-",
                f"{r.steps:,}" if r.steps else "-",
                r.started,
                r.id,
                key=r.id,
            )
        if current is not None and current in {r.id for r in shown}:
            table.move_cursor(row=table.get_row_index(current))
        empty = self.query_one("#empty", Label)
        if not self.loaded:
            empty.update("reading the sessions ...")
        elif not self.rows:
            empty.update("no sessions yet: waiting for an engine, `check --db` or `analyze --db` to write one")
        elif not shown:
            empty.update(f"no session matches {text!r} (escape clears the filter)")
        else:
            empty.update(f"{len(shown)} of {len(self.rows)} sessions; enter opens one")

    @on(Input.Changed, "#filter")
    def _filter_changed(self) -> None:
        self.fill()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_session(event.row_key.value)

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            self.open_session(table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value)

    def open_session(self, sid: str) -> None:
        from .session import SessionScreen

        self.app.push_screen(SessionScreen(sid))

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        self.query_one(DataTable).focus()

    def action_refresh(self) -> None:
        self.reload()

    # follow: the list changes when a session appears or changes status

    @work(thread=True, exclusive=True, group="follow-sessions")
    def follow_sessions(self) -> None:
        worker = get_current_worker()
        try:
            tail = Tail.open(self.app.db_path, None)
        except DiagError as exc:
            self.post_message(msg.FollowFailed(str(exc)))
            return
        def post(delta) -> None:
            if delta.sessions_changed:
                self.post_message(msg.SessionsChanged())

        try:
            tail.start_at_end()
            follow_loop(tail, self.app.poll_s, lambda: worker.is_cancelled, post,
                        lambda reason: self.post_message(msg.FollowFailed(reason)))
        finally:
            tail.close()

    def on_sessions_changed(self, _message: msg.SessionsChanged) -> None:
        self.reload()

    def on_follow_failed(self, message: msg.FollowFailed) -> None:
        self.app.notify(message.reason, title="follow stopped", severity="error", timeout=10)


_STATUS_STYLE = {"failed": "bold red", "ok": "green", "running": "yellow"}


def _severity_counts(counts: dict[str, int]) -> Text:
    text = Text()
    for sev, style in (("error", "bold red"), ("warning", "yellow"), ("info", "cyan")):
        if text:
            text.append("/", style="dim")
        n = counts.get(sev, 0)
        text.append(str(n), style=style if n else "dim")
    return text


def _ellipsis(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]


# -------------------------------------------------------------------------------------- help


HELP_TEXT = """\
[b]vllm-diag tui[/b]: one database, its sessions, and the pictures of one session.

[b]Everywhere[/b]
  ?          this help (escape closes it)
  q          quit
  d          light / dark theme
  tab        next widget; the mouse works too (click tabs, rows, scroll)

[b]Sessions[/b]
  / or type  filter by words in any column;  escape clears
  enter      open the session under the cursor
  r          reload the list

[b]A session[/b]
  1 f  Findings      enter jumps to the picture the finding is about
  2 p  Page-size map  bars of each layer's page against the unified page
  3 i  State index    block-table columns vs the builders' state-index buffers
  4 t  Timeline       decodes / spec decodes / prefills per step
  5 s  Suggestions    w writes the selected one to new files, c copies its command
  escape / backspace  back to the sessions

[b]Timeline[/b]
  left right     move the cursor one column;  shift+left/right or pgup/pgdn: a screen
  + -            zoom in / out (steps per column);  0 fits the whole session
  home end       first / last step;  m next mixed step;  e next error step

[b]--follow[/b]
  new steps, errors and findings appear within a second; a session that fails
  while you watch turns to its finding. The timeline keeps to the newest steps
  while its cursor is at the end.
"""


class HelpScreen(ModalScreen):
    """Key bindings and what each screen shows."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", key_display="?"),
        Binding("q", "dismiss", "Close", show=False),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP_TEXT, id="help-text", markup=True)
            bindings = [b for b in self.under.BINDINGS if isinstance(b, Binding) and b.description]
            if bindings:
                lines = ", ".join(f"{b.key_display or b.key}: {b.description}" for b in bindings)
                yield Static(f"[b]This screen[/b]: {lines}", markup=True, classes="muted")

    def action_dismiss(self) -> None:
        self.dismiss()


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; y/enter says yes, n/escape says no."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("enter", "answer(True)", "Yes", show=False),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 76; max-width: 100%; height: auto; max-height: 100%;
        border: thick $warning; background: $panel; padding: 0 1;
    }
    ConfirmScreen #buttons { height: 1; color: $text-muted; }
    """

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"), id="question")
            if self.detail:
                yield Static(Text(self.detail), id="detail")
            yield Static("y / enter: yes     n / escape: no", id="buttons")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


__all__ = ["ConfirmScreen", "HelpScreen", "SessionsScreen"]
