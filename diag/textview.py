"""Plain-text views of sessions and findings (for `show`, `check`, `analyze`). Pure: data in, str out."""

from __future__ import annotations

import json
import time
from typing import Any

from .model import EngineState, Finding, SessionRecord


def _fmt(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "-" if value is None else str(value)


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells]


def render_finding(f: Finding, index: int | None = None) -> str:
    head = f"[{f.severity.upper()}] {f.title}  ({f.category}, rule {f.rule})"
    lines = [f"{index}. {head}" if index is not None else head]
    if f.message:
        lines.append(f"   {f.message}")
    for c in f.comparisons:
        unit = f" {c.unit}" if c.unit else ""
        lines.append(f"   {c.name}: expected {_fmt(c.expected)}{unit}, actual {_fmt(c.actual)}{unit}")
    if f.numbers and not f.comparisons:
        lines.append("   numbers: " + ", ".join(f"{k}={_fmt(v)}" for k, v in f.numbers.items()))
    for e in f.evidence[:6]:
        where = f"line {e.line}: " if e.line else (f"{e.source}: " if e.source else "")
        lines.append(f"   evidence: {where}{e.text}")
    for m in f.missing_evidence:
        lines.append(f"   missing evidence: {m}")
    if f.fixed_in:
        lines.append(f"   fixed in: {f.fixed_in}")
    for i, s in enumerate(f.suggestions, start=1):
        mark = "verified" if s.verified else "unverified"
        lines.append(f"   suggestion {i} ({mark}): {s.title} -- {s.tradeoff}")
        for d in s.diff:
            lines.append(f"      {d}")
    return "\n".join(lines)


def render_findings(findings: list[Finding]) -> str:
    if not findings:
        return "No findings: nothing here predicts or explains a failure."
    return "\n\n".join(render_finding(f, i) for i, f in enumerate(findings, start=1))


def render_state(state: EngineState) -> list[str]:
    out: list[str] = []
    if state.config:
        out.append("Engine config")
        out += [f"  {k} = {_fmt(v)}" for k, v in sorted(state.config.items())]
    if state.environment:
        out.append("Environment")
        out += [f"  {k} = {_fmt(v)}" for k, v in sorted(state.environment.items())]
    for stage in ("layer", "unified"):
        specs = state.specs(stage)
        if specs:
            out.append(f"Layer KV specs ({stage})")
            rows = [
                [s.layer_name, s.spec_type, s.block_size, s.page_size_bytes, s.page_size_padded, s.num_kv_heads,
                 s.head_size, s.dtype, s.num_speculative_blocks, "draft" if s.is_draft else ""]
                for s in specs
            ]
            out += ["  " + r for r in _table(
                ["layer", "type", "block", "page_bytes", "padded", "heads", "head", "dtype", "spec_blocks", ""], rows)]
    if state.kv_cache_groups:
        out.append("KV-cache groups")
        rows = [[g.group_index, g.spec_type, g.block_size, g.page_size_bytes, len(g.layer_names),
                 ", ".join(g.layer_names[:3]) + (" ..." if len(g.layer_names) > 3 else "")]
                for g in state.kv_cache_groups]
        out += ["  " + r for r in _table(["group", "type", "block", "page_bytes", "layers", "names"], rows)]
    if state.block_tables:
        out.append("Block tables")
        rows = [[b.group_index, f"{b.rows} x {b.columns}", b.block_size, b.derivation] for b in state.block_tables]
        out += ["  " + r for r in _table(["group", "rows x cols", "block", "derivation"], rows)]
    if state.builder_buffers:
        out.append("Builder buffers")
        rows = [[b.group_index, b.builder, b.name, "x".join(map(str, b.shape)), b.dtype] for b in state.builder_buffers]
        out += ["  " + r for r in _table(["group", "builder", "tensor", "shape", "dtype"], rows)]
    if state.steps:
        out.append(f"Batch steps ({len(state.steps)})")
        rows = [[s.step_index, s.num_reqs, s.num_decodes, s.num_spec_decodes, s.num_prefills, s.num_tokens]
                for s in state.steps[-10:]]
        out += ["  " + r for r in _table(["step", "reqs", "decodes", "spec_decodes", "prefills", "tokens"], rows)]
    for e in state.errors:
        out.append(f"Error ({e.phase}): {e.exc_type}: {e.message}")
        if e.location:
            out.append(f"  at {e.location}")
        out += [f"  note: {n}" for n in e.notes]
        if e.numbers:
            out.append("  numbers: " + ", ".join(f"{k}={_fmt(v)}" for k, v in e.numbers.items()))
    return out


def render_session(record: SessionRecord) -> str:
    s = record.session
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(s.started_at)) if s.started_at else "-"
    out = [
        f"Session {s.id}  ({s.kind}, {s.status})",
        f"  started {when}; vLLM {s.vllm_version or '?'}; model {s.model or '-'} ({s.architecture or '?'})",
    ]
    if s.source:
        out.append(f"  source: {s.source}")
    if record.processes:
        out.append("Processes")
        out += ["  " + r for r in _table(["pid", "role", "rank", "name"],
                                          [[p.pid, p.role, p.rank, p.name] for p in record.processes])]
    out += render_state(record.state)
    out.append("Findings")
    out.append(render_findings(record.findings))
    return "\n".join(out)
