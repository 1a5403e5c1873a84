"""``vllm-diag check [--vllm-version V] [--gpu NAME] [--json] [--db FILE] -- vllm serve MODEL ARGS...``

Pre-flight: parse the command (pure parser by default; ``--vllm-parser`` cross-checks with vLLM's
own, ~5 s), read config.json, predict the KV plan for the target vLLM version, run the rules, print
findings with re-checked suggestions. Exit 0 when clean, 1 when a finding would stop the engine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import DiagError

HELP = "Pre-flight check of a `vllm serve` command: predict the KV plan and failures before launch."


def add_arguments(p) -> None:
    p.add_argument("--vllm-version", metavar="V", help="target vLLM version (default: the installed one, else the newest known)")
    p.add_argument("--gpu", metavar="NAME", help="GPU name or sm_XY (H100, H200, B200, 'RTX PRO 6000', sm_90, cpu)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--db", metavar="FILE", help="store a `check` session (state, findings, suggestions) in this database")
    p.add_argument("--file", metavar="PATH", help="read the command from a file ('-' = stdin) instead of after `--`")
    p.add_argument("--vllm-parser", action="store_true",
                   help="also parse with vLLM's own argument parser (imports vLLM, ~5 s) and report differences")
    p.add_argument("--no-suggest", action="store_true", help="skip suggestions")
    p.add_argument("--state", "--details", dest="state", action="store_true",
                   help="also print the predicted engine config and environment")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- vllm serve MODEL ...",
                   help="the command to check, after `--`")


def _command_text(args) -> tuple[str | list[str], str | None]:
    argv = list(args.command or [])
    if argv and argv[0] == "--":
        argv = argv[1:]
    if args.file:
        if argv:
            raise DiagError("give the command either after `--` or with --file, not both")
        if args.file == "-":
            return sys.stdin.read(), None
        path = Path(args.file)
        try:
            return path.read_text(), str(path.parent)
        except OSError as exc:
            raise DiagError(f"{path}: cannot read ({exc.strerror})") from None
    if not argv:
        raise DiagError("no command to check: `vllm-diag check -- vllm serve MODEL ...`")
    if len(argv) == 1 and (" " in argv[0] or "\n" in argv[0]):
        return argv[0], None  # the whole command quoted as one argument
    return argv, None


def run(args) -> int:
    from ..preflight import run_check
    from ..render.json import dumps
    from ..render.text import render_text
    from ..views import build

    t0 = time.perf_counter()
    text, base = _command_text(args)
    result = run_check(text, version=args.vllm_version, gpu=args.gpu, suggest=not args.no_suggest, base_dir=base)
    if args.vllm_parser:
        from ..serve.vllm_check import cross_check_note  # imports vLLM (slow): only with --vllm-parser

        result.notes.append(cross_check_note(result.command))
    record = result.to_record()
    if args.db:
        from ..store import Store  # sqlite_utils pulls numpy (~130 ms): only when storing

        with Store.open(args.db, create=True) as store:
            store.save(record)
    if args.json:
        print(dumps(record))
        return result.exit_code
    # the same text `vllm-diag show DB SESSION` prints for the stored session, then what only this run knows
    print(render_text(build(record), details=args.state))
    elapsed = time.perf_counter() - t0
    print(f"\nchecked in {elapsed * 1000:.0f} ms" + (f"; stored session {record.session.id} in {args.db}" if args.db else ""))
    return result.exit_code
