"""Helpers shared by the rule modules (not a rule: discovery skips names starting with '_')."""

from __future__ import annotations

import re
from typing import Any

from ..model import EngineState, ErrorRecord, Evidence, LogException
from ._modelnames import NAME_FAMILIES
from .base import RuleContext


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def version(ctx: RuleContext) -> tuple[int, int, int] | None:
    if ctx.version:
        return ctx.version
    from .base import parse_version

    if ctx.state and ctx.state.vllm_version:
        return parse_version(ctx.state.vllm_version)
    if ctx.log and ctx.log.vllm_version:
        return parse_version(ctx.log.vllm_version)
    return None


def in_range(v: tuple[int, int, int] | None, lo: tuple[int, ...] | None = None, hi: tuple[int, ...] | None = None) -> bool | None:
    """lo <= v < hi; None when the version is unknown (the rule then reports it as missing evidence)."""
    if v is None:
        return None
    if lo is not None and v < tuple(lo) + (0,) * (3 - len(lo)):
        return False
    if hi is not None and v >= tuple(hi) + (0,) * (3 - len(hi)):
        return False
    return True


def cfg(ctx: RuleContext, key: str, default: Any = None) -> Any:
    """A setting from the state's config, else from the log's arguments."""
    if ctx.state is not None and ctx.state.config.get(key) is not None:
        return ctx.state.config[key]
    if ctx.log is not None and ctx.log.args.get(key) is not None:
        return ctx.log.args[key]
    return default


def spec_k(ctx: RuleContext) -> int:
    k = cfg(ctx, "num_speculative_tokens")
    if k is None and isinstance(cfg(ctx, "speculative_config"), dict):
        k = cfg(ctx, "speculative_config").get("num_speculative_tokens")
    try:
        return int(k or 0)
    except (TypeError, ValueError):
        return 0


def architecture(ctx: RuleContext) -> str | None:
    a = cfg(ctx, "architecture")
    if a:
        return a
    if ctx.log is not None:
        return ctx.log.architecture or ctx.log.startup.get("resolved_architecture")
    return None


def family(ctx: RuleContext) -> str | None:
    if ctx.state is not None and ctx.state.environment.get("family"):
        return ctx.state.environment["family"]
    arch = architecture(ctx) or ""
    if arch.startswith(("Qwen3Next", "Qwen3_5")):
        return "gdn"
    if arch.startswith(("NemotronH", "GraniteMoeHybrid", "FalconH1", "Zamba2", "Bamba", "Plamo2")):
        return "mamba2"
    if arch.startswith("Jamba"):
        return "mamba1"
    if arch.startswith(("DeepseekV", "Kimi")):
        return "mla"
    if ctx.state is not None and any(s.is_mamba for s in ctx.state.layer_specs):
        return "mamba2"
    if not arch and ctx.log is not None and ctx.log.model:  # a log that names the model but not its architecture
        name = ctx.log.model.lower()
        for fam, rx in NAME_FAMILIES:
            if re.search(rx, name):
                return fam
    return None


def platform(ctx: RuleContext) -> str | None:
    if ctx.state is not None and ctx.state.environment.get("platform"):
        return ctx.state.environment["platform"]
    if ctx.gpu is not None and ctx.gpu.name == "cpu":
        return "cpu"
    if ctx.log is not None and ctx.log.startup.get("kv_cache_device") == "CPU":
        return "cpu"
    return None


def state_errors(ctx: RuleContext, exc_type: str | None = None, where: str | None = None) -> list[ErrorRecord]:
    if ctx.state is None:
        return []
    out = []
    for e in ctx.state.errors:
        if exc_type and not e.exc_type.endswith(exc_type):
            continue
        if where and where not in (e.location or "") and where not in (e.traceback or ""):
            continue
        out.append(e)
    return out


def log_root(ctx: RuleContext) -> LogException | None:
    if ctx.log is None:
        return None
    return ctx.log.root


def log_match(ctx: RuleContext, exc_type: str | None = None, text: str | None = None, function: str | None = None,
              code: str | None = None) -> LogException | None:
    """The root exception (or any exception) of the log matching all given parts."""
    if ctx.log is None:
        return None
    cands = ([ctx.log.root] if ctx.log.root else []) + [e for e in ctx.log.exceptions if e is not ctx.log.root]
    for e in cands:
        if exc_type and not (e.exc_type.endswith(exc_type) or exc_type in e.message):
            continue
        if text and text not in e.message:
            continue
        if function and not any(f.function == function for f in e.frames):
            continue
        if code and not any(code in (f.code or "") for f in e.frames) and code not in e.message:
            continue
        return e
    return None


def log_evidence(ctx: RuleContext, exc: LogException | None, *fact_names: str) -> list[Evidence]:
    ev: list[Evidence] = []
    if exc is not None:
        ev.append(Evidence(f"{exc.exc_type}: {exc.message}".rstrip(": ").strip(), line=exc.log_line, source="log"))
        last = exc.last_frame
        if last is not None:
            ev.append(Evidence(f'File "{last.file}", line {last.line}, in {last.function}'
                               + (f": {last.code}" if last.code else ""), line=last.log_line, source="log"))
    if ctx.log is not None:
        for name in fact_names:
            if name in ctx.log.lines:
                line, text = ctx.log.lines[name]
                ev.append(Evidence(text.strip(), line=line, source="log"))
    return ev


def state_source(state: EngineState | None) -> str:
    if state is None:
        return "log"
    return {"predicted": "preflight", "recorded": "recorded", "log": "log"}.get(state.source, state.source)


def fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n:,} B"
