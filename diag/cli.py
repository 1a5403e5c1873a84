"""``vllm-diag`` command line: a thin layer over the library.

Subcommands live in ``diag/commands/<name>.py``, each exposing ``HELP``, ``add_arguments(parser)``
and ``run(args) -> int``; only the chosen one is imported (vLLM's CLI works the same way).
Every user error is one ``vllm-diag: ...`` line on stderr and exit code 2, never a traceback;
an unexpected exception is one line and exit code 3 (``VLLM_DIAG_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__
from .errors import DiagError

INTERNAL_ERROR = 3  # exit code for a vllm-diag bug (user errors are 2, findings that stop an engine 1)

# name -> module under vllm_diag.commands (import deferred until the command runs)
COMMANDS = {
    "sessions": "sessions",
    "show": "show",
    "check": "check",
    "analyze": "analyze",
    "suggest": "suggest",
    "diagnose": "diagnose",
    "report": "report",
    "tui": "tui",
    "dashboard": "dashboard",
    "exporter": "exporter",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"vllm-diag: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vllm-diag",
        description="Diagnose vLLM engines: probes, pre-flight checks, crash-log post-mortems, safe configs.",
    )
    parser.add_argument("--version", action="version", version=f"vllm-diag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = _command_module(module_name)
        if module is None:
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _command_module(module_name: str):
    try:
        return importlib.import_module(f"vllm_diag.commands.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"vllm_diag.commands.{module_name}":
            return None  # command not built yet in this checkout
        raise


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args) or 0)
    except DiagError as exc:
        print(f"vllm-diag: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("vllm-diag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        print(f"vllm-diag: {args.command}: out of memory", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug (or a damaged DB row): one line, the traceback only on request
        if os.environ.get("VLLM_DIAG_DEBUG"):
            raise
        print(
            f"vllm-diag: {args.command}: internal error ({type(exc).__name__}: {exc}); "
            "rerun with VLLM_DIAG_DEBUG=1 and report the traceback",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
