"""One versioned JSON document for `show`, `check` and `analyze` (``--json``): the session record,
the views' numbering and marks, and the keys the README documents for `analyze --json` (schema 1)
and `check --json`, so existing scripts keep working.

``encode(record, report=None) -> dict``; ``dumps(record) -> str``. Schema 2: schema 1's keys plus
``session``/``processes``/``state``/``findings`` (the record, as `show --json` always printed it),
``target``, ``notes``, ``log``, ``predicted``, ``rule_failures`` and ``views``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..model import SessionRecord, to_jsonable
from ..views import ReportVM, build
from ..views.primitives import Anchor, Missing

SCHEMA = 2


def _vm(value: Any) -> Any:
    """View-model values as JSON: Missing -> {"missing": reason}, Anchor -> "kind:ref"."""
    if isinstance(value, Missing):
        return {"missing": value.reason}
    if isinstance(value, Anchor):
        return value.key
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _vm(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_vm(v) for v in value]
    return value


def _views(vm: ReportVM) -> dict[str, Any]:
    return {
        "version": vm.version,
        "findings": [{"number": f.number, "rule": f.rule, "anchors": list(f.anchor_keys)} for f in vm.findings.items],
        "suggestions": [{"number": s.number, "finding": s.finding, "title": s.title} for s in vm.findings.suggestions],
        "verdict": vm.findings.verdict,
        "page_map": {
            "missing": _vm(vm.page_map.missing),
            "marked_layers": list(vm.page_map.marked_layers),
            "sides": [{"source": s.source, "max_page": s.max_page, "max_layer": s.max_layer, "unified": s.unified,
                       "rows": [_vm(r) for r in s.rows]} for s in vm.page_map.sides],
            "diffs": _vm(vm.page_map.diffs),
        },
        "state_index": {"source": vm.state_index.source, "missing": _vm(vm.state_index.missing),
                        "groups": [{k: v for k, v in _vm(g).items() if k != "cells"} for g in vm.state_index.groups]},
        "timeline": {k: _vm(getattr(vm.timeline, k)) for k in (
            "total_rows", "total_steps", "first_step", "last_step", "width", "downsampled", "pid", "pids", "marks",
            "mark_counts", "next_n", "limits", "missing")},
    }


def _compat(record: SessionRecord) -> dict[str, Any]:
    """The keys of `analyze --json` schema 1 and of `check --json` (README), from the record."""
    s, log, t, st = record.session, record.log, record.target, record.state
    args = dict(log.args) if log is not None else {}
    root = None
    if log is not None and log.root is not None:
        r = log.root
        name, line = None, r.log_line
        if log.files and r.log_line:
            cur = None
            for info in log.files:
                if info.get("first_line", 1) <= r.log_line:
                    cur = info
            if cur is not None:
                name, line = cur.get("name"), r.log_line - cur.get("first_line", 1) + 1
        root = {"type": r.exc_type, "message": r.message, "process": r.process, "file": name, "line": line,
                "frames": to_jsonable(r.frames)}
    cpu = (t is not None and t.platform == "cpu")
    gpu = {
        "name": t.gpu if t is not None else None,
        "names": list(log.gpu_names) if log is not None else ([t.gpu] if t is not None and t.gpu else []),
        "count": (log.gpu_count if log is not None else (t.gpu_count if t is not None else None)),
        "compute_capability": list(t.compute_capability) if t is not None and t.compute_capability else None,
        "platform": "cpu" if cpu else ("cuda" if (t is not None and t.gpu) else (t.platform if t is not None else None)),
    }
    preflight_note = next((n[len("pre-flight: "):] for n in record.notes if n.startswith("pre-flight: ")), None)
    return {
        "source": log.source if log is not None else s.source,
        "files": [{"name": f.get("name"), "lines": f.get("lines")} for f in (log.files if log is not None else [])],
        "skipped_files": list(log.skipped_files) if log is not None else [],
        "vllm_version": s.vllm_version,
        "vllm_version_source": t.vllm_version_source if t is not None else None,
        "command": (t.command if t is not None else None) or (log.command if log is not None else None),
        "args": to_jsonable(args),
        "model": s.model or st.config.get("model"),
        "architecture": s.architecture,
        "config_source": t.config_source if t is not None else None,
        "bundled_config": bool(t.bundled_config) if t is not None else False,
        "gpu": gpu,
        "tensor_parallel_size": args.get("tensor_parallel_size", st.config.get("tensor_parallel_size")),
        "pipeline_parallel_size": args.get("pipeline_parallel_size", st.config.get("pipeline_parallel_size")),
        "python_version": log.python_version if log is not None else None,
        "root_error": root,
        "numbers": to_jsonable(log.numbers) if log is not None else {},
        "startup": to_jsonable(log.startup) if log is not None else {},
        "preflight": {"used": record.predicted is not None or s.kind == "check", "note": preflight_note},
        "session_id": s.id,
        "total_lines": log.total_lines if log is not None else None,
        "rule_errors": [{"rule": f.rule, "error": f.error} for f in record.rule_failures],
        "exit_code": 1 if any(f.severity == "error" for f in record.findings) else 0,
    }


def encode(record: SessionRecord, report: ReportVM | None = None) -> dict[str, Any]:
    vm = report or build(record)
    numbered = {f.number: f for f in vm.findings.items}
    findings = []
    for i, f in enumerate(record.findings, start=1):
        doc = to_jsonable(f)
        doc["number"] = i
        doc["anchors"] = list(numbered[i].anchor_keys) if i in numbered else []
        for sug, svm in zip(doc["suggestions"], numbered[i].suggestions if i in numbered else ()):
            sug["number"] = svm.number
        findings.append(doc)
    out: dict[str, Any] = {"schema": SCHEMA}
    out.update(_compat(record))
    out.update({
        "session": to_jsonable(record.session),
        "processes": to_jsonable(record.processes),
        "state": to_jsonable(record.state),
        "findings": findings,
        "target": to_jsonable(record.target),
        "notes": list(record.notes),
        "log": to_jsonable(record.log),
        "predicted": to_jsonable(record.predicted),
        "rule_failures": to_jsonable(record.rule_failures),
        "views": _views(vm),
    })
    return out


def dumps(record: SessionRecord, report: ReportVM | None = None) -> str:
    return json.dumps(encode(record, report), indent=2, default=str)
