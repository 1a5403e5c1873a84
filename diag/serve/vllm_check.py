"""Cross-check the pure parser with vLLM's own (opt-in: imports vLLM, about 16 s cold).

``vllm_parse_args(cmd)`` parses the command's arguments with vLLM's ``FlexibleArgumentParser`` +
``make_arg_parser``; ``compare_with_vllm(cmd)`` returns the keys on which the two disagree and
``cross_check_note(cmd)`` the one-line note ``check --vllm-parser`` prints.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from ..errors import DiagError
from .parse import ServeCommand


def vllm_parse_args(cmd: ServeCommand) -> dict[str, Any]:
    """Parse the command's arguments with vLLM's FlexibleArgumentParser + make_arg_parser.

    Returns the namespace as a dict (only values that differ from vLLM's defaults, plus ``model``).
    Raises DiagError when vLLM is not installed or rejects the command.
    """
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415
        try:
            from vllm.entrypoints.launchers.cli_args import make_arg_parser  # noqa: PLC0415
        except ImportError:  # older layouts
            from vllm.entrypoints.openai.cli_args import make_arg_parser  # noqa: PLC0415
    except ImportError as exc:
        raise DiagError(f"--vllm-parser needs vLLM installed ({exc})") from None
    argv = [t.value for t in cmd.tokens[cmd.prefix_end :]]
    if cmd.entry == "serve":
        argv = ["serve", *argv]
        parser = FlexibleArgumentParser(prog="vllm")
        sub = parser.add_subparsers(dest="subcommand")
        make_arg_parser(sub.add_parser("serve", prog="vllm serve"))
    else:
        parser = make_arg_parser(FlexibleArgumentParser(prog="api_server"))
    defaults = vars(parser.parse_args(["serve"] if cmd.entry == "serve" else []))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(parser.parse_args(argv))
    except SystemExit:
        msg = err.getvalue().strip().splitlines()
        raise DiagError(f"vLLM's parser rejected the command: {msg[-1] if msg else 'error'}") from None
    except Exception as exc:  # vLLM raises ValueError for some inputs
        raise DiagError(f"vLLM's parser rejected the command: {exc}") from None
    out = {k: v for k, v in ns.items() if defaults.get(k) != v}
    if ns.get("model_tag"):
        out["model"] = ns["model_tag"]
    out.pop("model_tag", None)
    out.pop("subcommand", None)
    out.pop("config", None)
    return out




def _norm(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def compare_with_vllm(cmd: ServeCommand) -> list[tuple[str, Any, Any]]:
    """``(key, vLLM's value, ours)`` for every argument vLLM's parser reads differently."""
    theirs = vllm_parse_args(cmd)
    ours = cmd.args()
    return [(k, theirs.get(k), ours.get(k)) for k in sorted(theirs)
            if k != "config" and _norm(theirs.get(k)) != _norm(ours.get(k))]


def cross_check_note(cmd: ServeCommand) -> str:
    diffs = compare_with_vllm(cmd)
    if not diffs:
        return "vLLM's parser agrees with the pure parser"
    return "vLLM's parser differs on: " + ", ".join(f"{k} (vLLM {a!r} vs {b!r})" for k, a, b in diffs)
