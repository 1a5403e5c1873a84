"""``vllm-diag show DB [SESSION]``: everything a session holds, as text or JSON."""

from __future__ import annotations

import json

HELP = "Show everything one session holds (default: the newest), as text or one JSON document."


def add_arguments(p) -> None:
    p.add_argument("db", metavar="DB", help="a vllm-diag SQLite database")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or unique prefix (default: newest)")
    p.add_argument("--json", action="store_true", help="print one JSON document (schema in README)")


def run(args) -> int:
    # Imported here: sqlite_utils pulls in numpy (~130 ms) and other commands must start fast.
    from ..store import Store
    from ..textview import render_session

    with Store.open(args.db) as store:
        record = store.load(args.session)
    if args.json:
        print(json.dumps(record.to_json(), indent=2))
    else:
        print(render_session(record))
    return 0
