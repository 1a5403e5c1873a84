"""The Textual application: ``DiagApp(db, session=None, follow=False)``.

Screens (``screens.py``): the sessions list, one session (tabs: findings, page-size map,
state-index view, batch timeline, suggestions), help and confirmations. In ``--follow`` a thread
worker polls the database for rows added since the last poll and posts typed messages
(``messages.py``); nothing else runs off the UI thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from vllm_diag.errors import DiagError

from .data import open_store

THEMES = {"dark": "textual-dark", "light": "textual-light"}


class DiagApp(App):
    """vllm-diag's terminal UI over one database."""

    TITLE = "vllm-diag"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("d", "toggle_theme", "Light/dark"),
    ]
    CSS = """
    Screen { background: $surface; }
    .muted { color: $text-muted; }
    /* the pictures keep their own colours (red = the mismatch): a light cursor, readable titles */
    .picture > .option-list--option-highlighted { background: $primary 25%; color: $foreground; text-style: none; }
    .picture:focus > .option-list--option-highlighted { background: $primary 40%; color: $foreground; text-style: none; }
    .picture > .option-list--option-disabled { color: $foreground; }
    """

    def __init__(
        self,
        db: str | os.PathLike,
        session: str | None = None,
        follow: bool = False,
        poll_s: float = 0.5,
        theme: str = "dark",
        out_dir: str | os.PathLike = ".",
    ):
        super().__init__()
        self.db_path = Path(db)
        self.session_arg = session
        self.follow = follow
        self.poll_s = poll_s
        self.out_dir = Path(out_dir)
        self.start_session: str | None = None
        self.theme = THEMES.get(theme, theme)
        self.sub_title = str(self.db_path)

    # ---------------------------------------------------------------- start-up

    def on_mount(self) -> None:
        from .screens import SessionsScreen
        from .session import SessionScreen

        # connections are opened for a read and closed (none stays open while engines write)
        with open_store(self.db_path) as store:
            n = len(store.sessions())
            sid = store.resolve_session(self.session_arg) if self.session_arg is not None or n == 1 else None
        self.start_session = sid  # opened on top of the list at start
        self.push_screen(SessionsScreen())
        if sid is not None:
            self.push_screen(SessionScreen(sid))

    # ---------------------------------------------------------------- actions

    def action_help(self) -> None:
        from .screens import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_toggle_theme(self) -> None:
        self.theme = THEMES["light"] if self.theme == THEMES["dark"] else THEMES["dark"]


def preflight_db(db: str | os.PathLike, session: str | None, follow: bool) -> None:
    """Everything that can go wrong before the first paint, as one :class:`DiagError` line: a
    missing file, not a vllm-diag database, a newer schema, no sessions (unless following, where
    the engine may not have started its session yet), an unknown session."""
    with open_store(db) as store:
        sessions = store.sessions()
        if not sessions and not follow:
            raise DiagError(f"{db}: holds no sessions (nothing to show; --follow waits for one)")
        if session is not None:
            store.resolve_session(session)


def run(db: str | os.PathLike, session: str | None = None, follow: bool = False, theme: str = "dark",
        poll_s: float = 0.5, out_dir: str | os.PathLike = ".") -> int:
    preflight_db(db, session, follow)
    app = DiagApp(db, session=session, follow=follow, theme=theme, poll_s=poll_s, out_dir=out_dir)
    result = app.run()
    if app.return_code:
        return app.return_code
    return int(result or 0)
