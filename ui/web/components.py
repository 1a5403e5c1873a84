"""Dash components drawn from view models (``vllm_diag.views``) and fleet rows.

Renderers only: numbers, order, cuts and marks come from the view models. Every text from a DB
(log lines, messages, config values, commands) goes into ``html`` components as a plain string, so
React escapes it: a log line holding ``<script>`` shows as that text. Nothing here uses
``dangerously_allow_html`` or raw-HTML markdown.
"""

from __future__ import annotations

import time
import urllib.parse

from dash import dcc, html

from vllm_diag.fleet import FleetRow, FleetSnapshot
from vllm_diag.views.primitives import Missing, fmt

SEVERITY_COLOURS = {"error": "#c62828", "warning": "#ef6c00", "info": "#1565c0", "none": "#2e7d32"}
STATUS_COLOURS = {"failed": "#c62828", "running": "#1565c0", "ok": "#2e7d32"}

FLEET_COLUMNS = [
    {"id": "session", "name": "session", "presentation": "markdown"},
    {"id": "host", "name": "host"},
    {"id": "model", "name": "model"},
    {"id": "vllm_version", "name": "vLLM"},
    {"id": "gpu", "name": "GPU"},
    {"id": "kind", "name": "kind"},
    {"id": "status", "name": "status"},
    {"id": "errors_f", "name": "errors", "type": "numeric"},
    {"id": "warnings_f", "name": "warnings", "type": "numeric"},
    {"id": "info_f", "name": "info", "type": "numeric"},
    {"id": "found_by", "name": "findings"},
    {"id": "last_step", "name": "last step", "type": "numeric"},
    {"id": "started", "name": "started (UTC)"},
    {"id": "db", "name": "DB"},
]


def session_href(db_key: str, session: str) -> str:
    return f"/session/{db_key}/{urllib.parse.quote(session, safe='')}"


def _md_text(text: str) -> str:
    """Text safe inside a markdown link label (the DataTable's markdown renders no raw HTML)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+-.!|" else c for c in text)


def fleet_record(r: FleetRow) -> dict:
    err, warn, info = r.findings
    return {
        "key": r.key,
        "id": r.key,
        "session": f"[{_md_text(r.session)}]({session_href(r.db_key, r.session)})",
        "session_id": r.session,
        "host": r.host,
        "model": r.model,
        "vllm_version": r.vllm_version,
        "gpu": r.gpu,
        "kind": r.kind,
        "status": r.status,
        "errors_f": err,
        "warnings_f": warn,
        "info_f": info,
        "worst": r.worst,
        "found_by": r.findings_source,
        "last_step": r.last_step if r.last_step is not None else "",
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.started_at)) if r.started_at else "",
        "db": r.db_name,
    }


def fleet_styles() -> list[dict]:
    """Row colours by the worst finding / status: failing sessions visible at a glance."""
    out = [{"if": {"filter_query": '{worst} = "error" || {status} = "failed"'}, "backgroundColor": "#fdecea"},
           {"if": {"filter_query": '{worst} = "warning"'}, "backgroundColor": "#fff4e5"},
           {"if": {"filter_query": '{status} = "failed"', "column_id": "status"}, "color": "#c62828", "fontWeight": "bold"},
           {"if": {"filter_query": "{errors_f} > 0", "column_id": "errors_f"}, "color": "#c62828", "fontWeight": "bold"}]
    return out


def problems_block(snapshot: FleetSnapshot):
    if not snapshot.problems:
        return None
    return html.Div(
        [html.Strong(f"{len(snapshot.problems)} source(s) cannot be read:"),
         html.Ul([html.Li(f"{p.name}: {p.message}", className="problem") for p in snapshot.problems])],
        className="problems", id="fleet-problems",
        style={"border": "1px solid #c62828", "padding": "6px 10px", "margin": "8px 0", "background": "#fff"},
    )


def text(value) -> str:
    return str(value) if isinstance(value, Missing) else fmt(value)


def _kv_table(pairs, cls: str, max_rows: int | None = None):
    rows = list(pairs)[:max_rows] if max_rows else list(pairs)
    return html.Table([html.Tbody([html.Tr([html.Th(str(k)), html.Td(text(v))]) for k, v in rows])], className=cls)


def header_block(h, row: FleetRow):
    badge = html.Span(h.status, className=f"status status-{h.status}",
                      style={"color": STATUS_COLOURS.get(h.status, "#333"), "fontWeight": "bold"})
    parts = [
        html.H2([f"Session {h.session_id} ", badge], id="session-title"),
        html.Div(f"{h.kind} session, started {h.started}; {row.host or '-'}; DB {row.db_name}", className="muted"),
        html.Table([html.Tbody([html.Tr([html.Th(f.label), html.Td(text(f.value))]) for f in h.facts])],
                   className="facts", id="session-facts"),
    ]
    if h.root_error is not None:
        r = h.root_error
        frames = [f"{f.file}:{f.line} in {f.function}" + (f"  |  {f.code}" if f.code else "") for f in r.tail_frames]
        parts.append(html.Div([
            html.Strong(f"{r.exc_type}: "), html.Span(r.message, className="root-message"),
            html.Span(f"  ({r.where}{', ' + r.process if r.process else ''})", className="muted"),
            html.Pre("\n".join(frames), className="frames") if frames else None,
        ], className="root-error", id="root-error"))
    for e in h.errors:
        parts.append(html.Div([
            html.Strong(f"{e.phase}: {e.exc_type}: "), html.Span(e.message, className="error-message"),
            html.Span(f"  ({e.process})" if e.process else "", className="muted"),
            html.Ul([html.Li(n) for n in e.notes]) if e.notes else None,
        ], className="recorded-error"))
    if h.notes:
        parts.append(html.Ul([html.Li(n) for n in h.notes], className="notes"))
    if h.config:
        parts.append(html.Details([html.Summary(f"engine config ({len(h.config)} settings)"),
                                   _kv_table(h.config, "config")]))
    return html.Div(parts, className="header")


def finding_card(f, selected: int | None):
    colour = SEVERITY_COLOURS.get(f.severity, "#333")
    body = [
        html.Div([html.Span(f"#{f.number}", className="finding-number"),
                  html.Span(f" {f.severity.upper()} ", style={"color": colour, "fontWeight": "bold"}),
                  html.Span(f.title, className="finding-title"),
                  html.Span(f"  [{f.rule}]", className="muted")]),
        html.Div(f.message, className="finding-message"),
    ]
    if f.comparisons:
        body.append(html.Ul([html.Li(f"{c.name}: {c.text}", className="comparison") for c in f.comparisons]))
    if f.evidence:
        ev = [html.Li((f"[{e.where}] " if e.where else "") + e.text, className="evidence") for e in f.evidence]
        if f.evidence_more:
            ev.append(html.Li(f"... and {f.evidence_more} more", className="muted"))
        body.append(html.Div([html.Div("evidence", className="label"), html.Ul(ev)]))
    if f.missing_evidence:
        body.append(html.Div("missing evidence: " + "; ".join(f.missing_evidence), className="muted"))
    if f.anchors:
        body.append(html.Div("points at: " + ", ".join(a.key for a in f.anchors_shown)
                             + (f" and {f.anchors_more} more" if f.anchors_more else ""), className="anchors"))
    meta = [x for x in (f"versions {f.versions}" if f.versions else "", f"fixed in {f.fixed_in}" if f.fixed_in else "") if x]
    if meta:
        body.append(html.Div("; ".join(meta), className="muted"))
    style = {"borderLeft": f"6px solid {colour}", "padding": "6px 10px", "margin": "6px 0", "cursor": "pointer",
             "background": "#fffde7" if selected == f.number else "#fff"}
    return html.Div(body, id={"type": "finding", "n": f.number}, n_clicks=0, className="finding", style=style,
                    title="click: highlight its layer, column or step in the pictures")


def findings_block(fvm, selected: int | None):
    head = html.Div(f"{fvm.verdict}", className="verdict", id="verdict")
    if not fvm.items:
        return html.Div([head, html.Div(fvm.empty_text, className="muted")], id="findings")
    return html.Div([head] + [finding_card(f, selected) for f in fvm.items], id="findings")


def suggestion_card(s):
    btn = {"marginRight": "6px"}
    controls = [
        html.Button(f"Download YAML (s{s.number})", id={"type": "dl-yaml", "n": s.number}, n_clicks=0, style=btn,
                    disabled=not s.yaml),
        html.Button(f"Download command (s{s.number})", id={"type": "dl-sh", "n": s.number}, n_clicks=0, style=btn,
                    disabled=not s.command),
    ]
    copies = []
    if s.command:
        copies.append(html.Span([dcc.Clipboard(content=s.command, title="copy the patched command",
                                               style={"display": "inline-block"}), " copy command"], style=btn))
    if s.yaml:
        copies.append(html.Span([dcc.Clipboard(content=s.yaml, title="copy the YAML fragment",
                                               style={"display": "inline-block"}), " copy YAML"], style=btn))
    return html.Div([
        html.Div([html.Strong(f"{s.number}. {s.title}"),
                  html.Span("  verified" if s.verified else "  not verified",
                            style={"color": "#2e7d32" if s.verified else "#ef6c00"})]),
        html.Div(f"for finding #{s.finding}; trade-off: {s.tradeoff}", className="muted"),
        html.Div(s.verification, className="muted") if s.verification else None,
        html.Pre("\n".join(s.diff), className="diff") if s.diff else None,
        html.Div(controls + copies),
        html.Div(f"same as: vllm-diag suggest SESSION --db DB --apply {s.number}", className="muted"),
    ], id={"type": "suggestion", "n": s.number}, className="suggestion",
        style={"border": "1px solid #ccc", "padding": "6px 10px", "margin": "6px 0"})


def suggestions_block(fvm):
    if not fvm.suggestions:
        return html.Div("no suggestions for this session", className="muted", id="suggestions")
    return html.Div([suggestion_card(s) for s in fvm.suggestions], id="suggestions")


def message_page(title: str, message: str):
    return html.Div([html.H2(title), html.P(message, className="page-message", id="page-message"),
                     dcc.Link("back to the fleet", href="/")], className="message")
