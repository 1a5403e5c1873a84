"""ReportVM -> one self-contained HTML page: the header, an at-a-glance box, the findings with their
numbered suggestions, and the three pictures (page-size map, state-index view, batch timeline) as
Plotly figures (``vllm_diag.ui.figures``, shared with the dashboard) next to plain HTML tables.

Every value that comes from a log, a command line or a recording is escaped. plotly.js is inlined
once; no script, style or font is loaded from the network. The pictures' rows, columns and steps
carry the anchors' ids (``Anchor.html_id``), so a finding links to its place in the pictures.
"""

from __future__ import annotations

import html
import json

from plotly.offline import get_plotlyjs

from vllm_diag.views import ReportVM
from vllm_diag.views.primitives import fmt, fmt_bytes, known

from .. import figures

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#212121;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#eceff1}tr.marked td{background:#ffebee;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.facts td:first-child{color:#546e7a;white-space:nowrap}.missing{color:#8d6e63;font-style:italic}
.glance{border:2px solid #c62828;background:#fff;border-radius:6px;padding:10px 14px;margin:12px 0}
.glance.ok{border-color:#2e7d32}.verdict{font-weight:700;font-size:16px}
.finding{background:#fff;border:1px solid #ddd;border-left:6px solid #90a4ae;border-radius:4px;padding:8px 12px;margin:10px 0}
.finding.error{border-left-color:#c62828}.finding.warning{border-left-color:#ef6c00}.finding.info{border-left-color:#1565c0}
.sev{font-weight:700;text-transform:uppercase;font-size:12px;margin-right:6px}.rule{color:#607d8b;font-size:12px}
pre{background:#263238;color:#eceff1;padding:8px 10px;border-radius:4px;overflow-x:auto;font-size:12px}
.cells td{width:22px;height:22px;padding:0;text-align:center;font-size:11px}.cells td.in{background:#a5d6a7}
.cells td.mk{background:#c62828;color:#fff;font-weight:700}.cells td.out{background:#eceff1}
a{color:#1565c0}code{background:#eceff1;padding:0 3px;border-radius:3px}
.figure{background:#fff;border:1px solid #ddd;border-radius:4px;margin:8px 0}
"""


def e(value: object) -> str:
    """Escaped text of a value (Missing says why)."""
    text = fmt(value)
    cls = ' class="missing"' if not known(value) and value is not None else ""
    return f"<span{cls}>{html.escape(text)}</span>" if cls else html.escape(text)


def _figure(fig, div_id: str) -> str:
    # plotly.js is inlined once in <head>; each figure is a div and a Plotly.newPlot call
    return ('<div class="figure">' + fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False,
                                                 div_id=div_id, config={"displaylogo": False, "responsive": True})
            + "</div>")


def _anchor_link(a) -> str:
    return f'<a href="#{html.escape(a.html_id)}"><code>{html.escape(a.key)}</code></a>'


def _header(vm: ReportVM) -> list[str]:
    h = vm.header
    o = [f"<h1>vllm-diag report: session {html.escape(h.session_id)}</h1>",
         f"<p>{html.escape(h.kind)} session, {html.escape(h.status)}; started {html.escape(h.started)}</p>",
         '<table class="facts">']
    o += [f"<tr><td>{html.escape(f.label)}</td><td>{e(f.value)}</td></tr>" for f in h.facts]
    o += [f"<tr><td>note</td><td>{html.escape(n)}</td></tr>" for n in h.notes]
    if h.numbers:
        o.append("<tr><td>numbers</td><td>" + ", ".join(f"{html.escape(k)}={e(v)}" for k, v in h.numbers) + "</td></tr>")
    if h.startup:
        o.append("<tr><td>startup</td><td>" + ", ".join(f"{html.escape(k)}={e(v)}" for k, v in h.startup) + "</td></tr>")
    o.append("</table>")
    r = h.root_error
    if r is not None:
        lines = [f'  File "{fr.file}", line {fr.line}, in {fr.function}' + (f"\n    {fr.code}" if fr.code else "")
                 for fr in r.tail_frames]
        lines.append(f"{r.exc_type}: {r.message}" if r.message else r.exc_type)
        o.append(f"<h3>Root error ({html.escape(r.where)}{', ' + html.escape(r.process) if r.process else ''})</h3>")
        o.append("<pre>" + html.escape("\n".join(lines)) + "</pre>")
    for err in h.errors:
        o.append(f"<h3>Error ({html.escape(err.phase)}{', ' + html.escape(err.process) if err.process else ''}): "
                 f"{html.escape(err.exc_type)}</h3>")
        body = [f"{err.exc_type}: {err.message}" if err.message else err.exc_type]
        if err.location:
            body.append(f"  at {err.location}")
        body += [f"  note: {n}" for n in err.notes]
        if err.numbers:
            body.append("  numbers: " + ", ".join(f"{k}={fmt(v)}" for k, v in err.numbers))
        o.append("<pre>" + html.escape("\n".join(body)) + "</pre>")
    return o


def _glance(vm: ReportVM) -> list[str]:
    fv = vm.findings
    failed = fv.fails or vm.header.status == "failed"
    o = [f'<div class="glance{"" if failed else " ok"}" id="glance">',
         f'<div class="verdict">verdict: {html.escape(fv.verdict)}</div>']
    lead = next((f for f in fv.items if f.severity == "error"), None)
    if lead is not None:
        o.append(f'<p><a href="#finding-{lead.number}">finding {lead.number}</a>: {html.escape(lead.title)}</p>')
        if lead.comparisons:
            o.append("<ul>" + "".join(f"<li>{html.escape(c.name)}: {html.escape(c.text)}</li>" for c in lead.comparisons)
                     + "</ul>")
    marked = vm.page_map.marked_layers
    if marked:
        o.append(f"<p>page-size map: {len(marked)} layer(s) marked, first "
                 f'<a href="#{html.escape(_layer_id(marked[0]))}"><code>{html.escape(marked[0])}</code></a></p>')
    for g in vm.state_index.mismatches:
        col = g.marked_anchors[0] if g.marked_anchors else g.anchor
        o.append(f"<p>state index: group {e(g.group_index)} block table {e(g.columns)} columns vs buffer "
                 f"{g.mismatch[1]} columns; extra column {_anchor_link(col)}</p>")
    if vm.timeline.marks:
        m = vm.timeline.marks[0]
        o.append(f"<p>timeline: {len(vm.timeline.marks)} marked row(s), {'failing step' if m.kind == 'failed' else 'first'} "
                 f"{_anchor_link(m.anchor)}: "
                 f"{html.escape(m.text)}</p>")
    o.append("</div>")
    return o


def _layer_id(name: str) -> str:
    from vllm_diag.views.primitives import layer_anchor

    return layer_anchor(name).html_id


def _findings(vm: ReportVM) -> list[str]:
    fv = vm.findings
    o = ["<h2>Findings</h2>"]
    if not fv.items:
        o.append(f"<p>{html.escape(fv.empty_text)}</p>")
        for x in fv.unexplained:
            o.append(f'<div class="finding error unexplained"><b>{html.escape(x.exc_type)}</b> ({html.escape(x.phase)})'
                     f"{': ' + html.escape(x.message) if x.message else ''}"
                     + (f"<br>at <code>{html.escape(x.location)}</code>" if x.location else "")
                     + (f"<br>where: {', '.join(_anchor_link(a) for a in x.anchors)}" if x.anchors else "") + "</div>")
    for f in fv.items:
        o.append(f'<div class="finding {html.escape(f.severity)}" id="finding-{f.number}" data-number="{f.number}" '
                 f'data-rule="{html.escape(f.rule)}" data-anchors="{html.escape(json.dumps(list(f.anchor_keys)))}">')
        o.append(f'<div><span class="sev">{f.number}. {html.escape(f.severity)}</span><b>{html.escape(f.title)}</b> '
                 f'<span class="rule">({html.escape(f.category)}, rule {html.escape(f.rule)})</span></div>')
        if f.message:
            o.append(f"<p>{html.escape(f.message)}</p>")
        if f.confidence or f.basis:
            o.append(f'<p class="confidence">confidence: {html.escape(f.confidence or "?")}'
                     + (f" &mdash; {html.escape(f.basis)}" if f.basis else "") + "</p>")
        if f.comparisons:
            o.append('<table class="comparisons"><tr><th>value</th><th>expected</th><th>actual</th></tr>')
            for c in f.comparisons:
                unit = f" {c.unit}" if c.unit else ""
                o.append(f'<tr><td>{html.escape(c.name)}</td><td class="num expected">{e(c.expected)}{html.escape(unit)}</td>'
                         f'<td class="num actual">{e(c.actual)}{html.escape(unit)}</td></tr>')
            o.append("</table>")
        elif f.numbers:
            o.append("<p>numbers: " + ", ".join(f"{html.escape(k)}={e(v)}" for k, v in f.numbers) + "</p>")
        if f.evidence:
            o.append("<ul>" + "".join(f"<li>evidence{' (' + html.escape(x.where) + ')' if x.where else ''}: "
                                      f"<code>{html.escape(x.text)}</code></li>" for x in f.evidence)
                     + (f"<li>... {f.evidence_more} more</li>" if f.evidence_more else "") + "</ul>")
        for m in f.missing_evidence:
            o.append(f'<p class="missing">missing evidence: {html.escape(m)}</p>')
        if f.anchors:
            o.append("<p>where: " + ", ".join(_anchor_link(a) for a in f.anchors_shown)
                     + (f" and {f.anchors_more} more" if f.anchors_more else "") + "</p>")
        if f.fixed_in:
            o.append(f"<p>fixed in: {html.escape(f.fixed_in)}</p>")
        for s in f.suggestions:
            o.append(f'<div class="suggestion" id="suggestion-{s.number}" data-number="{s.number}">'
                     f"<b>suggestion {s.number}</b> ({'verified' if s.verified else 'unverified'}): "
                     f"{html.escape(s.title)} &mdash; {html.escape(s.tradeoff)}"
                     f" <code>vllm-diag suggest {html.escape(vm.header.session_id)} --db DB --apply {s.number}</code>")
            if s.diff:
                o.append("<pre>" + html.escape("\n".join(s.diff)) + "</pre>")
            o.append("</div>")
        o.append("</div>")
    for s in fv.config_fragments:
        o.append(f"<h3>finding {s.finding}, suggestion {s.number} as a <code>vllm serve --config</code> fragment</h3>")
        o.append("<pre>" + html.escape(s.yaml or "") + "</pre>")
    return o


def _pages(vm: ReportVM, highlight) -> list[str]:
    pm = vm.page_map
    o = ["<h2>Page-size map</h2>"]
    if pm.missing is not None:
        return o + [f"<p>{e(pm.missing)}</p>"]
    o.append(_figure(figures.page_map_figure(pm, highlight), "fig-page-map"))
    for side in pm.sides:
        o.append(f"<h3>{html.escape(side.title)}: largest page {e(fmt_bytes(side.max_page))}"
                 f"{' (' + html.escape(side.max_layer) + ')' if side.max_layer else ''}</h3>")
        if side.groups_missing is not None:
            o.append(f"<p>groups: {e(side.groups_missing)}</p>")
        if side.after_missing is not None:
            o.append(f"<p>after unification: {e(side.after_missing)}</p>")
        o.append(f'<table class="page-map" data-source="{html.escape(side.source)}"><tr><th>group</th><th>layer</th>'
                 "<th>type</th><th>block</th><th>page before (B)</th><th>page after (B)</th><th>padding (B)</th>"
                 "<th>ratio to largest</th><th>divides</th><th>mark</th></tr>")
        for r in side.rows:
            row_id = r.anchor.html_id if side is pm.sides[0] else f"{r.anchor.html_id}-{side.source}"
            o.append(f'<tr id="{html.escape(row_id)}" class="{"marked" if r.marked else ""}" '
                     f'data-layer="{html.escape(r.layer)}">'
                     f"<td>{e(r.group)}</td><td>{html.escape(r.layer)}</td>"
                     f"<td>{html.escape(r.spec_type)}{' (draft)' if r.is_draft else ''}</td><td class=num>{e(r.block_before)}</td>"
                     f'<td class="num page-before">{e(r.page_before)}</td><td class="num">{e(r.page_after)}</td>'
                     f"<td class=num>{r.padding_bytes:,} ({r.padding_pct}%)</td><td class=num>{e(r.ratio_to_max)}</td>"
                     f"<td>{e(r.divides)}</td><td>{html.escape(r.mark_reason or '')}"
                     + (f" (expected {r.expected:,} B, actual {r.actual:,} B)" if r.marked and r.expected and r.actual else "")
                     + "</td></tr>")
        o.append("</table>")
    if pm.compared:
        o.append(f"<p>predicted vs recorded: {len(pm.diffs)} of {pm.compared} layers differ</p>")
    return o


def _state_index(vm: ReportVM, highlight) -> list[str]:
    si = vm.state_index
    o = ["<h2>State-index view</h2>"]
    if si.missing is not None:
        return o + [f"<p>{e(si.missing)}</p>"]
    o.append(f"<p>source: {html.escape(si.source)}</p>")
    o.append(_figure(figures.state_index_figure(si, highlight), "fig-state-index"))
    for g in si.groups:
        o.append(f'<h3 id="{html.escape(g.anchor.html_id)}">group {e(g.group_index)} {e(g.spec_type)}: block table '
                 f"{e(g.rows)} x {e(g.columns)} = <code>{e(g.derivation)}</code> [{html.escape(g.derivation_source)}]</h3>")
        if g.buffers:
            o.append("<table><tr><th>builder</th><th>buffer</th><th>shape</th><th>columns</th><th>derivation</th>"
                     "<th>vs block table</th></tr>")
            for b in g.buffers:
                shape = "x".join(map(str, b.shape)) if known(b.shape) else fmt(b.shape)
                verdict = "" if not b.compared else ("matches" if b.matches is True else
                                                     ("MISMATCH" if b.matches is False else fmt(b.matches)))
                o.append(f'<tr class="{"marked" if b.matches is False else ""}"><td>{e(b.builder)}</td>'
                         f"<td>{html.escape(b.name)}</td><td>{html.escape(shape)}</td><td class=num>{e(b.columns)}</td>"
                         f"<td><code>{e(b.derivation)}</code></td><td>{html.escape(verdict)}</td></tr>")
            o.append("</table>")
        if g.cells:
            gi = g.group_index if isinstance(g.group_index, int) else -1
            cells = []
            for c in g.cells:
                cls = "mk" if c.marked else ("in" if c.in_table and c.in_buffer else "out")
                cells.append(f'<td id="a-column-{gi}-{c.index}" class="{cls}" data-column="{c.index}" '
                             f'title="column {c.index}: table {"yes" if c.in_table else "no"}, buffer '
                             f'{"yes" if c.in_buffer else "no"}">{c.index}</td>')
            o.append(f'<table class="cells" data-group="{gi}"><tr>' + "".join(cells) + "</tr></table>")
            if g.mismatch is not None:
                o.append(f"<p><b>column {', '.join(map(str, g.marked_columns))}</b> is in the block table "
                         f"({g.mismatch[0]} columns) but not in the buffer ({g.mismatch[1]} columns).</p>")
    return o


def _timeline(vm: ReportVM, highlight) -> list[str]:
    t = vm.timeline
    o = ["<h2>Batch timeline</h2>"]
    nn = f"next_n = k + 1 = {e(t.next_n)}"
    if t.limits:
        nn += "; " + "; ".join(f"{html.escape(lim.name)} = {e(lim.limit)} ({html.escape(lim.meaning)}): "
                               + ("ok" if lim.ok is True else ("EXCEEDED" if lim.ok is False else e(lim.ok)))
                               for lim in t.limits)
    if t.missing is not None:
        return o + [f"<p>{e(t.missing)}</p>", f"<p>{nn}</p>"]
    o.append(f"<p>{t.total_rows:,} rows, {t.total_steps:,} steps {t.first_step}..{t.last_step}"
             + (f"; {t.width} steps per point (downsampled by SQLite)" if t.downsampled else "") + f"; {nn}</p>")
    if t.process_note:
        o.append(f"<p>{html.escape(t.process_note)}</p>")
    o.append(_figure(figures.timeline_figure(t, highlight), "fig-timeline"))
    if t.marks:
        o.append('<table class="marks"><tr><th>step</th><th>kind</th><th>source</th><th>what</th></tr>')
        seen = set()
        for m in t.marks:
            rid = m.anchor.html_id if m.anchor not in seen else ""
            seen.add(m.anchor)
            o.append(f'<tr class="marked"{f" id={html.escape(rid)!r}" if rid else ""} data-step="{m.step}"><td>{m.step}</td>'
                     f"<td>{html.escape(m.kind)}</td><td>{html.escape(m.label)}</td><td>{html.escape(m.text)}</td></tr>")
        o.append("</table>")
    if t.recent:
        o.append("<h3>last steps</h3><table><tr><th>step</th><th>source</th><th>reqs</th><th>decodes</th><th>spec decodes</th>"
                 "<th>prefills</th><th>tokens</th><th>mark</th></tr>")
        for r in t.recent:
            o.append(f'<tr class="{"marked" if r.mark else ""}"><td>{r.step}</td><td>{html.escape(r.label)}</td>'
                     f"<td class=num>{r.reqs}</td><td class=num>{r.decodes}</td><td class=num>{r.spec_decodes}</td>"
                     f"<td class=num>{r.prefills}</td><td class=num>{r.tokens}</td><td>{html.escape(r.mark)}</td></tr>")
        o.append("</table>")
    return o


def render_html(vm: ReportVM) -> str:
    lead = next((f for f in vm.findings.items if f.severity == "error"), None)
    highlight = lead.anchors if lead is not None else ()
    body = (_header(vm) + _glance(vm) + _findings(vm) + _pages(vm, highlight) + _state_index(vm, highlight)
            + _timeline(vm, highlight))
    title = f"vllm-diag report {vm.header.session_id}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}</style>"
            f'<script type="text/javascript">{get_plotlyjs()}</script>'
            f'</head><body><main data-session="{html.escape(vm.header.session_id)}" data-views-version="{vm.version}">'
            + "\n".join(body) + "</main></body></html>\n")
