"""``vllm-diag report [SESSION] --db FILE -o report.html [--markdown]``: one self-contained HTML file
(the header, the findings with numbered suggestions, the page-size map, the state-index view and the
batch timeline as Plotly figures, plotly.js inlined: it opens offline) or Markdown for a GitHub issue.
Built from the same view models as `show`; HTML needs the ``web`` extra (plotly)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import DiagError

HELP = "Write one session as a self-contained HTML report (Plotly figures, opens offline) or as Markdown."


def add_arguments(p) -> None:
    p.add_argument("session", metavar="SESSION", nargs="?", help="session id or unique prefix (default: newest)")
    p.add_argument("--db", metavar="FILE", required=True, help="the vllm-diag database holding the session")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="file to write (default: vllm-diag-SESSION.html, or stdout with --markdown)")
    p.add_argument("--markdown", action="store_true", help="Markdown for a vLLM GitHub issue instead of HTML")
    p.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    p.add_argument("--diagnose", action="store_true",
                   help="run the rules on a session with no stored findings (a recorded engine; not stored)")


def _html_renderer():
    try:
        from ..ui.report import render_html
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "plotly":
            raise DiagError("report needs plotly for the HTML figures: pip install 'vllm-diag[web]' "
                               "(or use --markdown)") from None
        raise
    return render_html


def run(args) -> int:
    render_html = None if args.markdown else _html_renderer()  # before any work: a missing extra is one line
    from ..store import Store
    from ..views import build

    with Store.open(args.db) as store:
        record = store.load(args.session, steps="summary")  # the timeline aggregated by SQLite
        if args.diagnose:
            from ..api import diagnose

            record = diagnose(record, store=store)
    vm = build(record)
    if args.markdown:
        from ..render.markdown import render_markdown

        text = render_markdown(vm)
        if not args.output:
            sys.stdout.write(text + "\n")
            return 0
    else:
        text = render_html(vm)
    out = Path(args.output or f"vllm-diag-{record.session.id}.html")
    if out.exists() and not args.force:
        raise DiagError(f"{out}: already exists (pass --force to overwrite)")
    if not out.parent.is_dir():
        raise DiagError(f"{out.parent}: no such directory")
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DiagError(f"{out}: cannot write ({exc.strerror})") from None
    print(f"wrote {out} ({len(text.encode()):,} bytes; session {record.session.id}, {len(vm.findings.items)} findings)")
    return 0
