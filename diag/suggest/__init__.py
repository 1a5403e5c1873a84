"""Suggestions: concrete configs that avoid a finding, in the user's own notation, re-checked.

For each finding, the rule's module proposes candidate ``Change`` lists (``vllm_diag.rules.<rule>.suggest``).
Here each candidate becomes

* a patched command (``vllm_diag.serve.patch_command``: same flag spelling, JSON edited in place or
  dotted as written), a minimal ``-``/``+`` diff, a YAML fragment for ``--config`` and ``LLM(...)``
  keyword arguments, and
* a re-check: the patched command is predicted again (same model, GPU; the candidate's vLLM version
  when it is an upgrade) and all rules run. A candidate is dropped when the finding's rule still
  fires or a new error appears; it is ``verified`` when the original failure was reproduced by the
  pre-flight and is gone after the change.

``apply_suggestion(suggestion, out_dir, stem)`` writes the patched command (``.sh``) and YAML
(``.yaml``) to new files, never overwriting -- the library call behind ``vllm-diag suggest --apply``
and the TUI/dashboard buttons.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import DiagError
from ..model import Change, Finding, Suggestion
from ..rules.base import GpuInfo, RuleContext, parse_version
from ..serve import ServeCommand, parse_command, patch_command

VERSION_KEY = "vllm_version"


def _vstr(v: tuple[int, int, int]) -> str:
    return ".".join(map(str, v))


# The pre-flight's ``evaluate(cmd, version, gpu, facts=None) -> (state, findings, facts, draft, notes)``
# (``vllm_diag.preflight.evaluate``), passed in by the caller: the pre-flight's ``run_check`` and the
# post-mortem call this module, so this module never imports the pre-flight (no import cycle).
Evaluate = Callable[..., tuple]


def recheck(cmd: ServeCommand, changes: list[Change], version: tuple[int, int, int], gpu: GpuInfo | None,
            facts=None, *, evaluate: Evaluate) -> tuple[Any, list[Finding], tuple[int, int, int], Any]:
    """Patch + predict + rules. Returns (patch or None, findings, version used, state)."""
    ver_changes = [c for c in changes if c.key == VERSION_KEY]
    cmd_changes = [c for c in changes if c.key != VERSION_KEY]
    new_version = version
    if ver_changes:
        v = parse_version(str(ver_changes[-1].value))
        if v is None:
            raise DiagError(f"bad version in suggestion: {ver_changes[-1].value}")
        new_version = v
    patch = patch_command(cmd, cmd_changes) if cmd_changes else None
    new_cmd = patch.command if patch else cmd
    state, findings, _f, _d, _n = evaluate(new_cmd, new_version, gpu, facts=facts if not cmd_changes or _same_model(cmd, new_cmd) else None)
    return patch, findings, new_version, state


def _same_model(a: ServeCommand, b: ServeCommand) -> bool:
    ca, cb = a.config(), b.config()
    return ca.get("model") == cb.get("model") and ca.get("hf_overrides") == cb.get("hf_overrides")


def build(finding: Finding, candidates: list[Suggestion], cmd: ServeCommand | None, version: tuple[int, int, int] | None,
          gpu: GpuInfo | None, baseline: list[Finding] | None, reproduced: bool, facts=None,
          evaluate: Evaluate | None = None) -> list[Suggestion]:
    """Patch, re-check and rank the candidates for one finding."""
    kept: list[Suggestion] = []
    base_errors = {f.rule for f in (baseline or []) if f.severity == "error"}
    for cand in candidates:
        ver = [c for c in cand.changes if c.key == VERSION_KEY]
        if ver and version is not None:
            target = parse_version(str(ver[-1].value))
            if target is None or target <= version:
                continue  # not an upgrade from here
        if cmd is None or version is None or evaluate is None:
            cand.verified = False
            cand.verification = ("not re-checked: no command line to patch" if evaluate is not None else
                                 "not re-checked: no pre-flight evaluator given")
            cand.diff = _diff_for_changes(cand.changes)
            kept.append(cand)
            continue
        try:
            patch, findings, new_version, _state = recheck(cmd, cand.changes, version, gpu, facts, evaluate=evaluate)
        except DiagError as exc:
            cand.verified = False
            cand.verification = f"dropped: re-check failed ({exc})"
            continue
        still = [f for f in findings if f.rule == finding.rule and f.severity in ("error", finding.severity)]
        new_errors = [f for f in findings if f.severity == "error" and f.rule not in base_errors]
        if still or new_errors:
            continue
        if patch is not None:
            cand.command = patch.text
            cand.diff = list(patch.diff)
            cand.yaml = patch.yaml
            cand.llm_kwargs = patch.llm_kwargs
        else:
            cand.command = cmd.text
            cand.diff = []
            cand.yaml = ""
        if ver:
            cand.diff.append(f"# run with vLLM >= {ver[-1].value}")
            cand.yaml = (cand.yaml or "") + f"# requires vLLM >= {ver[-1].value}\n"
        remaining = sorted({f.rule for f in findings if f.severity == "error"})
        cand.verified = reproduced
        cand.verification = (
            f"re-checked with vLLM {_vstr(new_version)}: {finding.rule} no longer fires"
            + (f"; still failing: {', '.join(remaining)}" if remaining else "; no error findings left")
            if reproduced else
            f"re-checked with vLLM {_vstr(new_version)}: no pre-flight error, but the pre-flight did not reproduce "
            f"this failure from the config alone"
        )
        kept.append(cand)
    for rank, s in enumerate(kept, start=1):
        s.rank = rank
    return kept


def _diff_for_changes(changes: list[Change]) -> list[str]:
    out = []
    for c in changes:
        if c.key == VERSION_KEY:
            out.append(f"# run with vLLM >= {c.value}")
        elif c.value is None:
            out.append(f"- {c.key}")
        else:
            out.append(f"+ {c.key} = {c.value}")
    return out


def attach_suggestions(result, evaluate: Evaluate) -> None:
    """Fill ``finding.suggestions`` for a pre-flight ``CheckResult`` (re-checked with ``evaluate``)."""
    from ..rules import suggestions_for

    ctx = RuleContext(state=result.state, version=result.version, gpu=result.gpu)
    for f in result.findings:
        cands = suggestions_for(f, ctx)
        if cands:
            f.suggestions = build(f, cands, result.command, result.version, result.gpu, result.findings, reproduced=True,
                                  facts=result.facts, evaluate=evaluate)


def command_from_args(args: dict[str, Any]) -> ServeCommand | None:
    """Rebuild a ``vllm serve`` command from normalised arguments (e.g. a log's ``non-default args``)."""
    from ..serve import flag_table

    model = args.get("model")
    if not model:
        return None
    flags, _ = flag_table()
    argv = ["vllm", "serve", str(model)]
    spec = args.get("speculative_config")
    for key, value in args.items():
        if key in ("model", "architecture", "speculative_method", "num_speculative_tokens", "draft_model",
                   "cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "user_specified_block_size"):
            continue
        info = flags.get(key)
        if info is None or value is None:
            continue
        opt = next((o for o in info["options"] if o.startswith("--") and not o.startswith("--no-")), None)
        if opt is None:
            continue
        if info["kind"] == "bool":
            argv.append(opt if value else "--no-" + opt[2:])
        elif info["kind"] == "true":
            if value:
                argv.append(opt)
        elif isinstance(value, (dict, list)) and info.get("nargs") not in ("+", "*"):
            import json

            argv += [opt, json.dumps(value)]
        elif isinstance(value, list):
            argv += [opt, *map(str, value)]
        else:
            argv += [opt, str(value)]
    if not isinstance(spec, dict) and args.get("num_speculative_tokens"):
        import json

        s = {"num_speculative_tokens": args["num_speculative_tokens"]}
        if args.get("speculative_method"):
            s["method"] = args["speculative_method"]
        if args.get("draft_model"):
            s["model"] = args["draft_model"]
        argv += ["--speculative-config", json.dumps(s)]
    try:
        return parse_command(argv)
    except DiagError:
        return None


def suggestions_for_finding(finding: Finding, ctx: RuleContext, cmd: ServeCommand | None = None,
                            evaluate: Evaluate | None = None) -> list[Suggestion]:
    """Suggestions for a finding from any source (used by ``analyze``): the command comes from
    ``cmd``, else the log's command line, else the log's arguments. Re-checked with the pre-flight's
    ``evaluate`` (``vllm_diag.preflight.evaluate``); without it the candidates are listed unverified."""
    from ..rules import run_rules, suggestions_for

    cands = suggestions_for(finding, ctx)
    if not cands:
        return []
    if cmd is None and ctx.log is not None:
        if ctx.log.command:
            try:
                cmd = parse_command(ctx.log.command)
            except DiagError:
                cmd = None
        if cmd is None and ctx.log.args:
            cmd = command_from_args(ctx.log.args)
    baseline: list[Finding] = []
    reproduced = False
    if cmd is not None and ctx.version is not None and evaluate is not None:
        try:
            _state, baseline, _f, _d, _n = evaluate(cmd, ctx.version, ctx.gpu)
            reproduced = any(f.rule == finding.rule for f in baseline)
        except DiagError:
            cmd = None
    elif ctx.state is not None and ctx.state.source == "predicted":
        baseline = run_rules(RuleContext(state=ctx.state, version=ctx.version, gpu=ctx.gpu))
    return build(finding, cands, cmd, ctx.version, ctx.gpu, baseline, reproduced, evaluate=evaluate)


# ------------------------------------------------------------------------------------------------
# Applying a suggestion
# ------------------------------------------------------------------------------------------------


def suggestion_files(suggestion: Suggestion, stem: str = "vllm-diag-suggestion") -> list[tuple[str, str]]:
    """``[(<stem>.sh, patched command), (<stem>.yaml, --config fragment)]``: the text of the files
    ``apply_suggestion`` writes (the dashboard's download buttons serve the same text)."""
    if not suggestion.command and not suggestion.yaml:
        raise DiagError("this suggestion has no patched command or YAML to write")
    header = [f"# vllm-diag suggestion: {suggestion.title}", f"# trade-off: {suggestion.tradeoff}"]
    if suggestion.verification:
        header.append(f"# {suggestion.verification}")
    header += [f"# {d}" for d in suggestion.diff]
    return [(f"{stem}.sh", "#!/bin/sh\n" + "\n".join(header) + "\n" + (suggestion.command or "") + "\n"),
            (f"{stem}.yaml", "\n".join(header) + "\n" + (suggestion.yaml or ""))]


def apply_suggestion(suggestion: Suggestion, out_dir: str | os.PathLike, stem: str = "vllm-diag-suggestion") -> list[Path]:
    """Write ``<stem>.sh`` (the patched command) and ``<stem>.yaml`` (the ``--config`` fragment) in
    ``out_dir``. Refuses (DiagError, one line) if a target exists; never overwrites."""
    files = suggestion_files(suggestion, stem)
    out = Path(out_dir)
    if not out.is_dir():
        raise DiagError(f"{out}: no such directory")
    for name, _text in files:
        if (out / name).exists():
            raise DiagError(f"{out / name}: already exists, not overwriting (choose another --out or remove it)")
    written = []
    try:
        for name, text in files:
            with open(out / name, "x") as fh:
                fh.write(text)
            written.append(out / name)
    except FileExistsError as exc:
        for p in written:
            p.unlink()
        raise DiagError(f"{exc.filename}: already exists, not overwriting") from None
    except OSError as exc:
        for p in written:
            p.unlink()
        raise DiagError(f"cannot write suggestion files in {out}: {exc.strerror}") from None
    return written


__all__ = ["apply_suggestion", "attach_suggestions", "build", "command_from_args", "recheck", "suggestion_files",
           "suggestions_for_finding"]
