"""``vllm-diag suggest [SESSION] --db FILE [--apply N] [--out DIR]``

Lists the suggestions stored for a session (by ``check --db`` or ``analyze --db``), numbered 1..N
across its findings; ``--apply N`` writes suggestion N's patched command (``.sh``) and YAML
(``.yaml``) to new files in ``--out`` (default: the current directory), never overwriting.
"""

from __future__ import annotations

import json

from ..errors import DiagError

HELP = "List the stored suggestions of a session, or write one (--apply N) as a patched command + YAML."


def add_arguments(p) -> None:
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or unique prefix (default: newest)")
    p.add_argument("--db", metavar="FILE", required=True, help="the vllm-diag database holding the session")
    p.add_argument("--apply", metavar="N", type=int, help="write suggestion N (see the list) to new files")
    p.add_argument("--out", metavar="DIR", default=".", help="folder for --apply files (default: .)")
    p.add_argument("--json", action="store_true", help="print the suggestions as JSON")


def numbered(record) -> list[tuple[int, object, object]]:
    """``(N, finding, suggestion)``: the one numbering of the views (the N every front end shows)."""
    from ..views import numbered_suggestions

    return numbered_suggestions(record)


def run(args) -> int:
    from ..model import to_jsonable
    from ..store import Store
    from ..suggest import apply_suggestion

    with Store.open(args.db) as store:
        record = store.load(args.session)
    items = numbered(record)
    sid = record.session.id
    if args.apply is not None:
        if not items:
            raise DiagError(f"session {sid} has no stored suggestions")
        match = [t for t in items if t[0] == args.apply]
        if not match:
            raise DiagError(f"no suggestion {args.apply} in session {sid} (1..{len(items)})")
        _n, finding, sug = match[0]
        paths = apply_suggestion(sug, args.out, stem=f"vllm-diag-{sid}-s{args.apply}")
        print(f"wrote {', '.join(str(p) for p in paths)}  ({finding.rule}: {sug.title})")
        return 0
    if args.json:
        print(json.dumps([{"n": n, "rule": f.rule, "finding": f.title, **to_jsonable(s)} for n, f, s in items], indent=2))
        return 0
    if not items:
        print(f"session {sid}: no suggestions stored")
        return 0
    for n, f, s in items:
        mark = "verified" if s.verified else "unverified"
        print(f"{n}. [{f.rule}] {s.title} ({mark})")
        print(f"   trade-off: {s.tradeoff}")
        for d in s.diff:
            print(f"   {d}")
    print(f"\napply one: vllm-diag suggest {sid} --db {args.db} --apply N [--out DIR]")
    return 0
