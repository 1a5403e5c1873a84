"""``vllm-diag analyze PATH|- [--json | --markdown] [--db FILE]``: what failed in a vLLM log, why, with
which numbers, and what config will work."""

from __future__ import annotations

import sys

HELP = "Read a vLLM log (file, folder, stdin '-', .gz) and diagnose the failure: root error, numbers, findings, fixes."


def add_arguments(p) -> None:
    p.add_argument("path", metavar="PATH", help="log file, folder of logs, or '-' for stdin (gzip detected)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON document (schema in README)")
    fmt.add_argument("--markdown", action="store_true", help="Markdown ready to paste into a vLLM GitHub issue")
    p.add_argument("--db", metavar="FILE", help="also store the analysis as a session (kind 'log') in this database")
    p.add_argument("--no-preflight", action="store_true", help="do not look up the model's config.json")
    p.add_argument("--model-dir", metavar="DIR", action="append", default=[],
                   help="look for the log's model folder (by its last path part) in DIR when the path in the log "
                        "does not exist here (repeatable; also $VLLM_DIAG_MODEL_PATH)")


def run(args) -> int:
    from ..errors import DiagError
    from ..postmortem.analyze import analyze_path, store_analysis
    from ..postmortem.report import render_json, render_markdown, render_text

    try:
        an = analyze_path(args.path, use_preflight=not args.no_preflight, model_dirs=args.model_dir)
    except MemoryError:
        raise DiagError(f"{args.path}: out of memory while reading the log") from None
    if args.db:
        store_analysis(an, args.db)
    if args.json:
        out = render_json(an)
    elif args.markdown:
        out = render_markdown(an)
    else:
        out = render_text(an)
        if an.session_id:
            out += f"\n\nstored as session {an.session_id} in {args.db}"
    sys.stdout.write(out + "\n")
    return 0
