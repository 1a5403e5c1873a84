"""Views of an :class:`~vllm_diag.postmortem.analyze.Analysis`: text, JSON (schema in the README) and a
Markdown block ready to paste into a vLLM GitHub issue. Pure: data in, str out."""

from __future__ import annotations

import json
from typing import Any

from ..model import Finding, to_jsonable
from ..textview import render_findings
from .analyze import Analysis

JSON_SCHEMA_VERSION = 1


def _gpu_json(an: Analysis) -> dict[str, Any]:
    f = an.facts
    cc = an.gpu.compute_capability if an.gpu and an.gpu.compute_capability else f.startup.get("compute_capability")
    return {
        "names": list(f.gpu_names),
        "count": f.gpu_count,
        "compute_capability": list(cc) if cc else None,
        "platform": "cpu" if _is_cpu(an) else ("cuda" if f.gpu_names else None),
    }


def _is_cpu(an: Analysis) -> bool:
    f = an.facts
    return f.startup.get("kv_cache_device") == "CPU" or f.startup.get("device_config") == "cpu"


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "category": f.category,
        "rule": f.rule,
        "title": f.title,
        "severity": f.severity,
        "message": f.message,
        "numbers": to_jsonable(f.numbers),
        "comparisons": [to_jsonable(c) for c in f.comparisons],
        "evidence": [{"line": e.line, "text": e.text, "source": e.source} for e in f.evidence],
        "suggestions": [
            {"title": s.title, "tradeoff": s.tradeoff, "command": s.command, "diff": list(s.diff),
             "changes": [to_jsonable(c) for c in s.changes], "yaml": s.yaml, "llm_kwargs": to_jsonable(s.llm_kwargs),
             "verified": s.verified, "verification": s.verification}
            for s in f.suggestions
        ],
        "missing_evidence": list(f.missing_evidence),
        "versions": f.versions,
        "fixed_in": f.fixed_in,
    }


def to_json(an: Analysis) -> dict[str, Any]:
    from .analyze import locate

    f = an.facts
    root = None
    if f.root is not None:
        r = f.root
        src, line = locate(an.files, r.log_line) if (an.files and r.log_line) else (None, r.log_line)
        root = {
            "type": r.exc_type,
            "message": r.message,
            "process": r.process,
            "file": src,
            "line": line,
            "frames": [{"file": fr.file, "line": fr.line, "function": fr.function, "code": fr.code, "log_line": fr.log_line}
                       for fr in r.frames],
        }
    return {
        "schema": JSON_SCHEMA_VERSION,
        "source": an.source,
        "files": [{"name": x["name"], "lines": x["lines"]} for x in an.files],
        "skipped_files": list(an.skipped),
        "vllm_version": f.vllm_version,
        "command": f.command,
        "args": to_jsonable(f.args),
        "model": f.model,
        "architecture": f.architecture,
        "gpu": _gpu_json(an),
        "tensor_parallel_size": f.args.get("tensor_parallel_size"),
        "pipeline_parallel_size": f.args.get("pipeline_parallel_size"),
        "python_version": f.python_version,
        "root_error": root,
        "numbers": to_jsonable(f.numbers),
        "startup": to_jsonable(f.startup),
        "preflight": {"used": an.predicted is not None, "note": an.preflight_note},
        "findings": [_finding_json(x) for x in an.findings],
        "session_id": an.session_id,
        "total_lines": f.total_lines,
        "rule_errors": [{"rule": r, "error": e} for r, e in an.rule_failures],
    }


def render_json(an: Analysis) -> str:
    return json.dumps(to_json(an), indent=2, default=str)


# ------------------------------------------------------------------------------------------------


def _root_line(an: Analysis) -> str | None:
    r = an.facts.root
    if r is None:
        return None
    msg = r.message.splitlines()[0] if r.message else ""
    text = f"{r.exc_type}: {msg}" if msg else r.exc_type
    return text[:400]


def render_text(an: Analysis) -> str:
    f = an.facts
    gpu = ", ".join(f.gpu_names) if f.gpu_names else ("none (CPU backend)" if _is_cpu(an) else "?")
    if f.gpu_count and f.gpu_names:
        gpu += f" (x{f.gpu_count})"
    out = [f"Log: {an.source}  ({f.total_lines:,} lines)"]
    out.append(f"  vLLM {f.vllm_version or '?'}; model {f.model or '?'} ({f.architecture or '?'}); GPU {gpu}")
    tp, pp = f.args.get("tensor_parallel_size"), f.args.get("pipeline_parallel_size")
    if tp or pp:
        out.append(f"  TP={tp or 1} PP={pp or 1}")
    if f.command:
        first = " ".join(f.command.replace("\\\n", " ").split())
        out.append(f"  command: {first[:300]}{' ...' if len(first) > 300 else ''}")
    root = _root_line(an)
    if root:
        r = f.root
        where = f"line {r.log_line}"
        if len(an.files) > 1 and r.log_line:
            from .analyze import locate

            src, line = locate(an.files, r.log_line)
            where = f"{src} line {line}"
        out.append(f"  root error ({where}{', ' + r.process if r.process else ''}): {root}")
        if r.last_frame:
            fr = r.last_frame
            out.append(f"    at {fr.file}:{fr.line} in {fr.function}" + (f": {fr.code}" if fr.code else ""))
    else:
        out.append("  no exception in the log")
    if f.numbers:
        out.append("  numbers: " + ", ".join(f"{k}={v}" for k, v in f.numbers.items() if not isinstance(v, str) or len(v) < 80))
    if f.startup:
        out.append("  startup: " + ", ".join(f"{k}={v}" for k, v in f.startup.items()))
    if an.preflight_note:
        out.append(f"  pre-flight: {an.preflight_note}")
    if an.skipped:
        out.append(f"  skipped (binary): {', '.join(an.skipped[:5])}")
    for rule, err in an.rule_failures:
        out.append(f"  (rule {rule} failed and was skipped: {err})")
    out.append("")
    findings = an.findings
    if len(an.files) > 1:  # a folder: say which file each evidence line is in
        import copy

        findings = copy.deepcopy(findings)
        for x in findings:
            for e in x.evidence:
                if e.source and e.source not in ("log", "preflight", "recorded"):
                    e.text = f"[{e.source}] {e.text}"
    out.append(render_findings(findings))
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(an: Analysis) -> str:
    f = an.facts
    o: list[str] = []
    o.append("### Your current environment")
    o.append("")
    o.append("| | |")
    o.append("| --- | --- |")
    rows = [
        ("vLLM version", f.vllm_version or "unknown"),
        ("GPU", (", ".join(f.gpu_names) or ("none (CPU backend)" if _is_cpu(an) else "unknown"))
         + (f" × {f.gpu_count}" if f.gpu_count and f.gpu_names else "")),
        ("Compute capability", ".".join(map(str, an.gpu.compute_capability)) if an.gpu and an.gpu.compute_capability else "unknown"),
        ("Tensor / pipeline parallel", f"{f.args.get('tensor_parallel_size') or 1} / {f.args.get('pipeline_parallel_size') or 1}"),
        ("Model", f.model or "unknown"),
        ("Architecture", f.architecture or "unknown"),
        ("Python", f.python_version or "unknown"),
    ]
    o += [f"| {k} | {_md_escape(v)} |" for k, v in rows]
    o.append("")
    if f.command:
        o.append("### Command")
        o.append("")
        o.append("```bash")
        o.append(f.command)
        o.append("```")
        o.append("")
    o.append("### 🐛 Describe the bug")
    o.append("")
    root = _root_line(an)
    if root:
        r = f.root
        o.append(f"The engine fails with `{r.exc_type}` (log line {r.log_line}" + (f", {r.process}" if r.process else "") + "):")
        o.append("")
        o.append("```text")
        for fr in r.frames[-6:]:
            o.append(f'  File "{fr.file}", line {fr.line}, in {fr.function}')
            if fr.code:
                o.append(f"    {fr.code}")
        o.append(f"{r.exc_type}: {r.message}".rstrip(": ") if r.message else r.exc_type)
        o.append("```")
        o.append("")
    else:
        o.append("No exception was raised; the startup/metrics lines below show the problem.")
        o.append("")
    comps = [c for x in an.findings for c in x.comparisons]
    if comps:
        o.append("| value | expected | actual |")
        o.append("| --- | --- | --- |")
        for c in comps:
            unit = f" {c.unit}" if c.unit else ""
            o.append(f"| {_md_escape(c.name)} | {_md_escape(c.expected)}{unit} | {_md_escape(c.actual)}{unit} |")
        o.append("")
    if f.numbers:
        o.append("Numbers in the error: " + ", ".join(f"`{k}={v}`" for k, v in f.numbers.items()
                                                      if not isinstance(v, str) or len(v) < 80))
        o.append("")
    o.append("### Diagnosis (vllm-diag)")
    o.append("")
    if not an.findings:
        o.append("No rule matched.")
    for i, x in enumerate(an.findings, 1):
        o.append(f"{i}. **{x.title}** — `{x.category}` ({x.severity}, rule `{x.rule}`)")
        if x.message:
            o.append(f"   {x.message}")
        for e in x.evidence[:4]:
            where = f"line {e.line}" if e.line else (e.source or "")
            o.append(f"   - evidence ({where}): `{_md_escape(e.text)[:200]}`")
        for m in x.missing_evidence:
            o.append(f"   - missing evidence: {m}")
        if x.fixed_in:
            o.append(f"   - fixed in: {x.fixed_in}")
        for s in x.suggestions[:3]:
            o.append(f"   - suggestion ({'verified' if s.verified else 'unverified'}): {s.title} — {s.tradeoff}")
            if s.diff:
                o.append("")
                o.append("     ```diff")
                o += [f"     {d}" for d in s.diff]
                o.append("     ```")
    o.append("")
    o.append("<sub>Generated by `vllm-diag analyze --markdown`.</sub>")
    return "\n".join(o)
