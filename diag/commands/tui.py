"""``vllm-diag tui [DB] [SESSION] [--follow]``: the terminal UI (Textual; the ``tui`` extra).

Without ``textual`` installed it prints one line, ``pip install 'vllm-diag[tui]'``, and exits 2.
A bad database (missing, not vllm-diag's, a newer schema, no sessions) is one line and exit 2,
checked before the screen is taken over.
"""

from __future__ import annotations

import os
import sys

from ..errors import DiagError

HELP = "Browse sessions, findings, page-size map, state indices, batch timeline and suggestions in the terminal."

INSTALL_HINT = "pip install 'vllm-diag[tui]'"


def add_arguments(p) -> None:
    p.add_argument("db", metavar="DB", nargs="?",
                   help="a vllm-diag SQLite database (default: $VLLM_DIAG_DB)")
    p.add_argument("session", metavar="SESSION", nargs="?",
                   help="open this session (id or unique prefix); default: the list, or the only session")
    p.add_argument("--follow", "-f", action="store_true",
                   help="show new steps, errors and findings while an engine writes the database")
    p.add_argument("--theme", choices=("dark", "light"), default=os.environ.get("VLLM_DIAG_TUI_THEME", "dark"),
                   help="colour theme (default: dark; `d` toggles it in the UI)")
    p.add_argument("--poll", metavar="SECONDS", type=float, default=0.5,
                   help="--follow: how often to read new rows (default: 0.5)")
    p.add_argument("--out", metavar="DIR", default=".",
                   help="folder where the suggestion key writes its files (default: .)")


def run(args) -> int:
    db = args.db or os.environ.get("VLLM_DIAG_DB")
    if not db:
        raise DiagError("no database: give DB or set VLLM_DIAG_DB")
    if not 0.05 <= args.poll <= 60:
        raise DiagError(f"--poll {args.poll}: expected 0.05 to 60 seconds")
    if not os.path.isdir(args.out):
        raise DiagError(f"--out {args.out}: no such directory")
    try:
        import textual  # noqa: F401  (the optional extra)
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    # The UI package is imported only here (core never imports ui at import time).
    from vllm_diag.ui.tui.app import run as run_tui

    return run_tui(db, session=args.session, follow=args.follow, theme=args.theme, poll_s=args.poll,
                   out_dir=args.out)
