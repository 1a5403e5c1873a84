"""``vllm-diag sessions DB``: one line per session."""

from __future__ import annotations

import json
import time

HELP = "List the sessions a vllm-diag database holds, one line each."


def add_arguments(p) -> None:
    p.add_argument("db", metavar="DB", help="a vllm-diag SQLite database")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of text")


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) if ts else "-"


def run(args) -> int:
    # Imported here: sqlite_utils pulls in numpy (~130 ms) and other commands must start fast.
    from ..model import to_jsonable
    from ..store import Store

    with Store.open(args.db) as store:
        sessions = store.sessions()
        if args.json:
            out = []
            for s in sessions:
                out.append({**to_jsonable(s), "counts": store.session_counts(s.id)})
            print(json.dumps(out, indent=2))
            return 0
        if not sessions:
            print(f"{args.db}: no sessions")
            return 0
        for s in sessions:
            counts = store.session_counts(s.id)
            print(
                f"{s.id}  {s.kind:<6}  {s.status:<7}  {_when(s.started_at)}  "
                f"vllm {s.vllm_version or '?'}  {s.model or s.source or '-'}  "
                f"findings={counts['findings']} errors={counts['errors']} steps={counts['batch_steps']}"
            )
    return 0
