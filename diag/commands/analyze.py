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
    from ..postmortem.analyze import analyze_path
    from ..render.json import dumps
    from ..render.markdown import render_markdown
    from ..render.text import render_text
    from ..views import build

    try:
        an = analyze_path(args.path, use_preflight=not args.no_preflight, model_dirs=args.model_dir)
    except MemoryError:
        raise DiagError(f"{args.path}: out of memory while reading the log") from None
    record = an.to_record()
    if args.db:
        from ..store import Store

        with Store.open(args.db, create=True) as store:
            an.session_id = store.save(record)
    if args.json:
        out = dumps(record)
    elif args.markdown:
        out = render_markdown(build(record))
    else:
        # the same text `vllm-diag show DB SESSION` prints for the stored session
        out = render_text(build(record))
        if an.session_id:
            out += f"\n\nstored as session {an.session_id} in {args.db}"
    sys.stdout.write(out + "\n")
    if an.cut_off:  # the report (and --db) keep what was read; the exit status says nothing was diagnosed
        sys.stderr.write(f"vllm-diag: {args.path}: {an.cut_off}\n")
        return 2
    return 0
