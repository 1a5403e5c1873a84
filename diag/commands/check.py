"""``vllm-diag check [--vllm-version V] [--gpu NAME] [--json] [--db FILE] -- vllm serve MODEL ARGS...``

Pre-flight: parse the command (pure parser by default; ``--vllm-parser`` cross-checks with vLLM's
own, ~5 s), read config.json, predict the KV plan for the target vLLM version, run the rules, print
findings with re-checked suggestions. Exit 0 when clean, 1 when a finding would stop the engine.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    p.add_argument("--state", action="store_true", help="also print the full predicted state (specs, groups, tables)")
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
    import time

    from ..preflight import as_json, run_check, summary_lines
    from ..textview import render_findings

    t0 = time.perf_counter()
    text, base = _command_text(args)
    result = run_check(text, version=args.vllm_version, gpu=args.gpu, suggest=not args.no_suggest, base_dir=base)
    if args.vllm_parser:
        from ..serve.vllm_check import cross_check_note  # imports vLLM (slow): only with --vllm-parser

        result.notes.append(cross_check_note(result.command))
    session = None
    if args.db:
        session = _store(args.db, result)
    elapsed = time.perf_counter() - t0
    if args.json:
        doc = as_json(result)
        doc["elapsed_s"] = round(elapsed, 4)
        if session:
            doc["session"] = session
        print(json.dumps(doc, indent=2))
        return result.exit_code
    print("\n".join(summary_lines(result)))
    if args.state:
        from ..textview import render_state

        print("\n".join(render_state(result.state)))
    print()
    print(render_findings(result.findings))
    yamls = [(i, f, f.suggestions[0]) for i, f in enumerate(result.findings, start=1)
             if f.severity == "error" and f.suggestions and (f.suggestions[0].yaml or "").strip()]
    for i, f, s in yamls:
        print(f"\nfinding {i}, suggestion 1 as a `vllm serve --config` fragment ({s.title}):")
        print("\n".join("   " + line for line in s.yaml.rstrip().splitlines()))
    print()
    n_err = sum(f.severity == "error" for f in result.findings)
    verdict = (f"verdict: would FAIL ({n_err} error finding{'s' if n_err != 1 else ''})" if n_err
               else "verdict: no finding stops this engine")
    print(f"{verdict}; checked in {elapsed * 1000:.0f} ms" + (f"; stored session {session} in {args.db}" if session else ""))
    return result.exit_code


def _store(db: str, result) -> str:
    from ..store import Store

    cfg = result.state.config
    with Store.open(db, create=True) as store:
        sid = store.new_session(
            "check", label="pre-flight", status="failed" if result.fails else "ok",
            vllm_version=".".join(map(str, result.version)), model=cfg.get("model"), architecture=result.facts.architecture,
            source=result.command.text)
        store.add_state(sid, result.state)
        store.add_findings(sid, result.findings)
        import time

        store.update_session(sid, ended_at=time.time())
    return sid
