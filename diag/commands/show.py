"""``vllm-diag show DB [SESSION]``: everything a session holds, as text or JSON -- the same text
`check` and `analyze` printed when they stored it."""

from __future__ import annotations

HELP = "Show everything one session holds (default: the newest), as text or one JSON document."


def add_arguments(p) -> None:
    p.add_argument("db", metavar="DB", help="a vllm-diag SQLite database")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or unique prefix (default: newest)")
    p.add_argument("--json", action="store_true", help="print one JSON document (schema in README)")
    p.add_argument("--details", action="store_true", help="also print the engine config and environment")
    p.add_argument("--diagnose", action="store_true",
                   help="run the rules on a session with no stored findings (a recorded engine; not stored)")


def run(args) -> int:
    # Imported here: sqlite_utils pulls in numpy (~130 ms) and other commands must start fast.
    from ..render.json import dumps
    from ..render.text import render_text
    from ..store import Store
    from ..views import build

    with Store.open(args.db) as store:
        # text: the timeline is aggregated by SQLite (a 1,000,000-step session prints in well under a second)
        record = store.load(args.session, steps=True if args.json else "summary")
        if args.diagnose:
            from ..api import diagnose

            record = diagnose(record, store=store)
    if args.json:
        print(dumps(record))
    else:
        print(render_text(build(record), details=args.details))
    return 0
