"""ReportVM -> terminal text: what `show`, `check` and `analyze` print (the same for one session)."""

from __future__ import annotations

from ..views import ReportVM
from ..views.primitives import Missing, fmt, fmt_bytes, known

INDENT = "  "


def _table(headers: list[str], rows: list[list[object]], indent: str = INDENT) -> list[str]:
    cells = [[c if isinstance(c, str) else fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(r: list[str]) -> str:
        return (indent + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells]


def _pairs(pairs) -> str:
    return ", ".join(f"{k}={fmt(v)}" for k, v in pairs)


def header_lines(vm: ReportVM) -> list[str]:
    h = vm.header
    out = [f"Session {h.session_id}  ({h.kind}, {h.status})" + (f"  {h.label}" if h.label else "")]
    out += [f"{INDENT}{f.label:<9} {fmt(f.value)}" for f in h.facts]
    out += [f"{INDENT}{'note':<9} {note}" for note in h.notes]
    r = h.root_error
    if r is not None:
        text = f"{r.exc_type}: {r.message}" if r.message else r.exc_type
        out.append(f"{INDENT}root error ({r.where}{', ' + r.process if r.process else ''}): {text}")
        if r.last_frame:
            fr = r.last_frame
            out.append(f"{INDENT}  at {fr.file}:{fr.line} in {fr.function}" + (f": {fr.code}" if fr.code else ""))
    elif h.kind == "log":
        out.append(f"{INDENT}no exception in the log")
    if h.numbers:
        out.append(f"{INDENT}numbers: {_pairs(h.numbers)}")
    if h.startup:
        out.append(f"{INDENT}startup: {_pairs(h.startup)}")
    for e in h.errors:
        who = f", {e.process}" if e.process else ""
        out.append(f"Error ({e.phase}{who}): {e.exc_type}: {e.message}".rstrip(": ") if e.message else
                   f"Error ({e.phase}{who}): {e.exc_type}")
        if e.location:
            out.append(f"{INDENT}at {e.location}")
        out += [f"{INDENT}note: {n}" for n in e.notes]
        if e.numbers:
            out.append(f"{INDENT}numbers: {_pairs(e.numbers)}")
    if h.processes:
        out.append("Processes")
        out += _table(["pid", "role", "rank", "name"], [[p.pid, p.role, p.rank, p.name] for p in h.processes])
    return out


def detail_lines(vm: ReportVM) -> list[str]:
    h = vm.header
    out = []
    if h.config:
        out.append("Engine config")
        out += [f"{INDENT}{k} = {fmt(v)}" for k, v in h.config]
    if h.environment:
        out.append("Environment")
        out += [f"{INDENT}{k} = {fmt(v)}" for k, v in h.environment]
    return out


def findings_lines(vm: ReportVM) -> list[str]:
    fv = vm.findings
    out = ["Findings"]
    if not fv.items:
        out.append(fv.empty_text)
        for x in fv.unexplained:
            out.append(f"- {x.exc_type} ({x.phase}){': ' + x.message if x.message else ''}"
                       + (f"  see: {', '.join(a.key for a in x.anchors)}" if x.anchors else ""))
        return out
    for f in fv.items:
        if f is not fv.items[0]:
            out.append("")
        out.append(f"{f.number}. [{f.severity.upper()}] {f.title}  ({f.category}, rule {f.rule})")
        if f.message:
            out.append(f"   {f.message}")
        if f.confidence or f.basis:
            out.append(f"   confidence: {f.confidence or '?'}" + (f" -- {f.basis}" if f.basis else ""))
        for c in f.comparisons:
            out.append(f"   {c.name}: {c.text}")
        if f.numbers and not f.comparisons:
            out.append(f"   numbers: {_pairs(f.numbers)}")
        for e in f.evidence:
            out.append(f"   evidence: {e.where + ': ' if e.where else ''}{e.text}")
        if f.evidence_more:
            out.append(f"   evidence: ... {f.evidence_more} more")
        out += [f"   missing evidence: {m}" for m in f.missing_evidence]
        if f.anchors:
            out.append("   see: " + ", ".join(a.key for a in f.anchors_shown)
                       + (f" and {f.anchors_more} more" if f.anchors_more else ""))
        if f.fixed_in:
            out.append(f"   fixed in: {f.fixed_in}")
        for s in f.suggestions:
            out.append(f"   suggestion {s.number} ({'verified' if s.verified else 'unverified'}): {s.title} -- {s.tradeoff}")
            out += [f"      {d}" for d in s.diff]
    for s in fv.config_fragments:
        out.append("")
        out.append(f"finding {s.finding}, suggestion {s.number} as a `vllm serve --config` fragment ({s.title}):")
        out += ["   " + line for line in (s.yaml or "").rstrip().splitlines()]
    return out


def page_lines(vm: ReportVM) -> list[str]:
    pm = vm.page_map
    if pm.missing is not None:
        return [f"Page-size map: {fmt(pm.missing)}"]
    out = []
    for side in pm.sides:
        biggest = f"largest page {fmt_bytes(side.max_page)}" + (f" ({side.max_layer})" if side.max_layer else "")
        out.append(f"Page-size map ({side.title}; {biggest})")
        if side.groups_missing is not None:
            out.append(f"{INDENT}groups: {fmt(side.groups_missing)}")
        if side.after_missing is not None:
            out.append(f"{INDENT}after unification: {fmt(side.after_missing)}")
        rows = []
        for run in side.runs:
            r = side.rows[run.rows[0]]
            rows.append([
                fmt(r.group) if known(r.group) else "?", run.label, r.spec_type + (" (draft)" if r.is_draft else ""),
                fmt(r.block_before), fmt(r.page_before),
                fmt(r.page_after) if known(r.page_after) else "?", (f"{r.padding_bytes:,} ({r.padding_pct}%)"
                                                                    if r.padding_bytes else "0"),
                fmt(r.ratio_to_max) if known(r.ratio_to_max) else "?", fmt(r.divides) if known(r.divides) else "?",
                ">> " + (r.mark_reason or "marked") if r.marked else ""])
        out += _table(["group", "layers", "type", "block", "page B", "after B", "padding B", "/max", "divides", ""], rows)
    if pm.compared:
        if pm.diffs:
            out.append(f"{INDENT}predicted vs recorded: {len(pm.diffs)} of {pm.compared} layers differ: "
                       + "; ".join(f"{d.layer} {fmt(d.predicted)} vs {fmt(d.recorded)}" for d in pm.diffs[:5]))
        else:
            out.append(f"{INDENT}predicted vs recorded: all {pm.compared} layers agree")
    return out


def state_index_lines(vm: ReportVM) -> list[str]:
    si = vm.state_index
    if si.missing is not None:
        return [f"State index: {fmt(si.missing)}"]
    out = [f"State index (from {si.source})"]
    for g in si.groups:
        head = (f"{INDENT}group {fmt(g.group_index) if known(g.group_index) else '?'} {fmt(g.spec_type)}: block table "
                f"{fmt(g.rows)} x {fmt(g.columns)}")
        out.append(head + f"  = {fmt(g.derivation)}" + (f" [{g.derivation_source}]" if g.derivation_source else ""))
        for b in g.buffers:
            shape = "x".join(map(str, b.shape)) if known(b.shape) else fmt(b.shape)
            verdict = "" if not b.compared else ("  matches" if b.matches is True else
                                                 ("  MISMATCH" if b.matches is False else f"  {fmt(b.matches)}"))
            name = f"{b.builder}.{b.name}" if known(b.builder) else f"{b.name} ({b.builder.reason})"
            out.append(f"{INDENT}  {name} [{shape}]: {fmt(b.columns)} column(s) = {fmt(b.derivation)}{verdict}")
        if g.mismatch is not None:
            lo = g.cells_from
            marks = " ".join((f"[{c.index}]" if c.marked else str(c.index)) for c in g.cells)
            out.append(f"{INDENT}  columns {'... ' if lo > 1 else ''}{marks}: block table {g.mismatch[0]} vs buffer "
                       f"{g.mismatch[1]}; marked {', '.join(str(c) for c in g.marked_columns)}")
    return out


def timeline_lines(vm: ReportVM) -> list[str]:
    t = vm.timeline
    limits = "; ".join(f"{lim.name} = {fmt(lim.limit)} ({'ok' if lim.ok is True else ('EXCEEDED' if lim.ok is False else fmt(lim.ok))})"
                       for lim in t.limits)
    nn = f"next_n = k + 1 = {fmt(t.next_n)}" + (f"; {limits}" if limits else "")
    if t.missing is not None:
        return [f"Batch timeline: {fmt(t.missing)}", f"{INDENT}{nn}"]
    out = [f"Batch timeline ({t.total_rows:,} rows, {t.total_steps:,} steps {t.first_step}..{t.last_step}"
           + (f", {t.width} steps per point" if t.downsampled else "") + ")"]
    out.append(f"{INDENT}{nn}")
    if t.process_note:
        out.append(f"{INDENT}{t.process_note}")
    for s in t.series:
        if s.kind == "builder":
            out.append(f"{INDENT}{s.label}: " + ("agrees with the runner on every step" if s.agrees
                                                 else f"disagrees with the runner on {s.disagrees} row(s)"))
    counts = dict(t.mark_counts)
    out.append(f"{INDENT}mixed decode + spec-decode rows: {counts.get('mixed', 0)}; builder rows that disagree: "
               f"{counts.get('disagree', 0)}")
    for m in t.marks[:10]:
        out.append(f"{INDENT}step {m.step} ({m.kind}): {m.text}")
    if len(t.marks) > 10:
        out.append(f"{INDENT}... {len(t.marks) - 10} more marked rows")
    if t.recent:
        out.append(f"{INDENT}last steps")
        out += _table(["step", "source", "reqs", "decodes", "spec", "prefills", "tokens", "mark"],
                      [[r.step, r.label, r.reqs, r.decodes, r.spec_decodes, r.prefills, r.tokens, r.mark] for r in t.recent],
                      indent=INDENT * 2)
    return out


def render_text(vm: ReportVM, details: bool = False) -> str:
    out = header_lines(vm)
    if details:
        out += detail_lines(vm)
    out.append("")
    out += findings_lines(vm)
    out.append("")
    out += page_lines(vm)
    out += state_index_lines(vm)
    out += timeline_lines(vm)
    out.append("")
    out.append(f"verdict: {vm.findings.verdict}")
    return "\n".join(out)


__all__ = ["render_text", "Missing"]
