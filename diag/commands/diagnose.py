"""``vllm-diag diagnose DB [SESSION]``: run the rules on a recorded engine session and store the findings.

The probes do this themselves at a failure and when the engine stops; this command redoes it (a
session recorded by an older vllm-diag, an engine killed before it could, or newer rules).
"""

from __future__ import annotations

import json

HELP = "Run the rules on a recorded engine session (default: the newest) and store its findings."


def add_arguments(p) -> None:
    p.add_argument("db", metavar="DB", help="a vllm-diag SQLite database written by the probes")
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or unique prefix (default: newest)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--no-suggestions", action="store_true", help="skip the (re-checked) suggestions")


def run(args) -> int:
    from ..errors import DiagError
    from ..live import diagnose_and_store
    from ..model import to_jsonable
    from ..store import Store

    with Store.open(args.db) as ro:  # one clear line for a missing / foreign file before any write
        sid = ro.resolve_session(args.session)
        kind = ro.load(sid, steps=False).session.kind
    if kind != "engine":
        raise DiagError(f"{args.db}: session {sid} is a {kind} session; `diagnose` reads sessions the probes recorded")
    with Store.open(args.db, create=True) as store:
        findings = diagnose_and_store(store, sid, suggestions=not args.no_suggestions)
    if args.json:
        print(json.dumps({"session": sid, "findings": [to_jsonable(f) for f in findings]}, indent=2))
        return 0
    if not findings:
        print(f"{sid}: no findings")
    for f in findings:
        nums = ", ".join(f"{k}={v}" for k, v in f.numbers.items() if not isinstance(v, (dict, list)))
        print(f"{f.severity:<7} {f.category:<22} {f.title}" + (f"  [{nums}]" if nums else ""))
    print(f"stored {len(findings)} finding(s) in session {sid}; `vllm-diag show {args.db} {sid}` prints them")
    return 0
