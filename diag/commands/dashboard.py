"""``vllm-diag dashboard [DB... | DIR] [--host 127.0.0.1] [--port N] [--token T]``

A browser dashboard (Dash + Plotly) over vllm-diag DBs: the fleet (one row per session of every DB
given; a folder of per-host DBs; DBs appearing later are picked up), each session's findings,
suggestions (download or copy; nothing is ever run) and pictures, and two sessions side by side.
DBs are opened read-only. Binds 127.0.0.1 unless ``--host`` says otherwise; any other address needs
a token (``--token`` or ``VLLM_DIAG_DASHBOARD_TOKEN``) that every request must carry.

Needs the ``web`` extra (``pip install 'vllm-diag[web]'``).
"""

from __future__ import annotations

import os
import sys

from ..errors import DiagError

HELP = "Browser dashboard over vllm-diag DBs (fleet, sessions, suggestions, compare); read-only."
DEFAULT_PORT = 8470
INSTALL_HINT = "the dashboard needs dash and plotly: pip install 'vllm-diag[web]'"


def add_arguments(p) -> None:
    p.add_argument("sources", metavar="DB|DIR", nargs="*",
                   help="vllm-diag databases or folders of them (default: $VLLM_DIAG_DB)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--token", default=None,
                   help="require this token on every request (default: $VLLM_DIAG_DASHBOARD_TOKEN); "
                        "needed for a non-loopback --host")


def run(args) -> int:
    try:
        import dash  # noqa: F401
        import plotly  # noqa: F401
    except ImportError:
        raise DiagError(INSTALL_HINT) from None
    return _run(args)


def _run(args) -> int:
    from vllm_diag.fleet import Fleet
    from vllm_diag.ui.web import security
    from vllm_diag.ui.web.app import create_app, serve
    from vllm_diag.ui.web.data import Sources

    sources = list(args.sources) or ([os.environ["VLLM_DIAG_DB"]] if os.environ.get("VLLM_DIAG_DB") else [])
    if not sources:
        raise DiagError("give DB files or folders (or set VLLM_DIAG_DB)")
    if not 0 <= args.port <= 65535:
        raise DiagError(f"--port {args.port}: not a port number")
    token = args.token if args.token is not None else (os.environ.get(security.TOKEN_ENV) or None)
    problem = security.bind_error(args.host, token)
    if problem:
        raise DiagError(problem)
    fleet = Fleet(sources)
    try:
        snap = fleet.refresh()
        if not snap.rows and all(p.message == "no such file or folder" for p in snap.problems):
            raise DiagError("; ".join(f"{p.name}: {p.message}" for p in snap.problems))
        for p in snap.problems:
            print(f"vllm-diag: dashboard: {p.name}: {p.message}", file=sys.stderr)
        app = create_app(Sources(fleet), token=token, loopback_only=security.is_loopback(args.host))
        try:
            server = serve(app, args.host, args.port)
        except (OSError, SystemExit) as exc:
            raise DiagError(f"cannot listen on {args.host}:{args.port} ({getattr(exc, 'strerror', None) or exc})") from None
        host = f"[{args.host}]" if ":" in args.host else args.host
        note = " (add ?token=... to the URL once)" if token else ""
        print(f"vllm-diag dashboard: {len(snap.rows)} sessions; open http://{host}:{server.server_port}/{note} "
              "(Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        finally:
            server.server_close()
    finally:
        fleet.close()
    return 0
