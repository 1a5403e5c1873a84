"""The dashboard's callbacks as plain functions (importable and unit-tested without a server).

:mod:`vllm_diag.ui.web.app` wires each one to Dash inputs/outputs and does nothing else. They take
a :class:`~vllm_diag.ui.web.data.Sources` and plain values, and return Dash components, figures
or dicts. A missing or foreign DB, an unknown session or a damaged row becomes a message on the
page (the store's one-line reason), never a stack trace.
"""

from __future__ import annotations

import urllib.parse

from dash import dcc, html

from vllm_diag.errors import DiagError
from vllm_diag.ui import figures
from vllm_diag.ui.web import components as C
from vllm_diag.ui.web.data import Sources

FLEET_PAGE_SIZE = 50


# ----------------------------------------------------------------------------------- fleet


def fleet_rows(snapshot, search: str | None = None, statuses=None, kinds=None) -> list[dict]:
    """The fleet table's records: filtered by free text (every word must appear in some column),
    status and kind; failing sessions first, then newest."""
    rows = sorted(snapshot.rows, key=lambda r: (r.findings[0] == 0 and r.status != "failed", -(r.started_at or 0)))
    words = (search or "").lower().split()
    out = []
    for r in rows:
        if statuses and r.status not in statuses:
            continue
        if kinds and r.kind not in kinds:
            continue
        rec = C.fleet_record(r)
        if words:
            hay = " ".join(str(rec[k]) for k in ("session_id", "host", "model", "vllm_version", "gpu", "kind", "status",
                                                 "db", "started")).lower()
            if not all(w in hay for w in words):
                continue
        out.append(rec)
    return out


def fleet_update(sources: Sources, search=None, statuses=None, kinds=None, known_generation=None, known_filter=None):
    """``(records, problems, summary, generation, filter)``; ``None`` for records when nothing
    changed since ``known_generation`` with the same filter (the browser keeps its table)."""
    snap = sources.snapshot()
    flt = [search or "", sorted(statuses or []), sorted(kinds or [])]
    if known_generation == snap.generation and known_filter == flt:
        return None, None, None, snap.generation, flt
    records = fleet_rows(snap, search, statuses, kinds)
    failing = sum(1 for r in snap.rows if r.findings[0] or r.status == "failed")
    summary = (f"{len(snap.rows)} sessions in {len({r.db_key for r in snap.rows})} DBs; {failing} failing or with "
               f"error findings; showing {len(records)}")
    return records, C.problems_block(snap), summary, snap.generation, flt


def compare_href(selected_ids) -> str | None:
    ids = list(selected_ids or [])
    if len(ids) != 2:
        return None
    return "/compare?" + urllib.parse.urlencode({"a": ids[0], "b": ids[1]})


# ----------------------------------------------------------------------------------- pages


def parse_path(pathname: str | None) -> tuple[str, tuple[str, ...]]:
    parts = [urllib.parse.unquote(p) for p in (pathname or "/").strip("/").split("/") if p]
    if not parts:
        return "fleet", ()
    return parts[0], tuple(parts[1:])


def session_page(sources: Sources, db_key: str, session: str, selected: int | None = None):
    try:
        loaded = sources.load_quick(db_key, session)
    except DiagError as exc:
        return C.message_page("Session not available", str(exc))
    rep = loaded.report
    fig_pages, fig_state, fig_timeline = sources.figures(loaded, selected, session_figures)
    if loaded.quick:  # a long session: the timeline's aggregation comes in a second callback
        fig_timeline = figures.pending_figure(
            "Batch timeline", f"aggregating {loaded.row.last_step + 1:,} steps ...").to_plotly_json()
    return html.Div([
        dcc.Store(id="session-ref", data={"db": db_key, "session": session}),
        dcc.Store(id="timeline-pending", data=loaded.quick),
        dcc.Store(id="session-version", data=row_version(loaded.row)),
        dcc.Store(id="selected-finding", data=selected),
        C.header_block(rep.header, loaded.row),
        html.Div([
            html.Div([html.H3("Findings"), C.findings_block(rep.findings, selected),
                      html.H3("Suggestions"), C.suggestions_block(rep.findings)],
                     className="left", style={"flex": "0 0 38%", "minWidth": "320px", "paddingRight": "12px", "boxSizing": "border-box"}),
            html.Div([
                html.Div(selection_note(rep.findings, selected), id="selection-note", className="selection-note"),
                dcc.Graph(id="fig-pages", figure=fig_pages, config={"displaylogo": False}),
                dcc.Graph(id="fig-state", figure=fig_state, config={"displaylogo": False}),
                dcc.Graph(id="fig-timeline", figure=fig_timeline, config={"displaylogo": False}),
            ], className="right", style={"flex": "1 1 0", "minWidth": "420px"}),
        ], style={"display": "flex", "flexWrap": "wrap"}),
        html.Div(dcc.Link("compare with another session", href=f"/compare?a={db_key}/{session}"), className="muted"),
    ], className="session-page")


def timeline_ready(sources: Sources, ref: dict | None, selected: int | None, pending: bool):
    """The second callback of a long session's page: its timeline (``None`` when nothing is pending)."""
    if not pending or not ref:
        return None
    try:
        loaded = sources.load(ref["db"], ref["session"])
    except DiagError as exc:
        return figures.pending_figure("Batch timeline", str(exc)).to_plotly_json()
    return sources.figures(loaded, selected, timeline_figure)[0]


def timeline_figure(loaded, selected: int | None) -> tuple:
    """The timeline alone (the second callback of a long session: its page map and state index are drawn)."""
    return (figures.timeline_figure(loaded.report.timeline, highlight_for(loaded.report.findings, selected)),)


def session_figures(loaded, selected: int | None) -> tuple:
    """The page map, state-index view and timeline of a session with finding ``selected`` lit."""
    rep = loaded.report
    hl = highlight_for(rep.findings, selected)
    return (figures.page_map_figure(rep.page_map, hl), figures.state_index_figure(rep.state_index, hl),
            figures.timeline_figure(rep.timeline, hl))


def row_version(row) -> str:
    """What the session page last drew: changes when the engine writes steps, errors or findings."""
    return f"{row.status}|{row.last_step}|{row.findings}|{row.errors}"


def session_tick(sources: Sources, ref: dict | None, selected: int | None, version: str | None):
    """The fleet's 2-second tick on a session page: ``None`` while the session is unchanged, else
    ``(timeline figure, state-index figure, status text, new version)`` for an engine that keeps writing."""
    if not ref:
        return None
    try:
        row = sources.row(ref["db"], ref["session"])
    except DiagError:
        return None
    if row_version(row) == version:
        return None
    loaded = sources.load(ref["db"], ref["session"])
    _pages, state, timeline = sources.figures(loaded, selected, session_figures)
    return timeline, state, row_version(loaded.row)


def highlight_for(fvm, selected: int | None) -> tuple:
    item = next((f for f in fvm.items if f.number == selected), None)
    return item.anchors if item is not None else ()


def selection_note(fvm, selected: int | None) -> str:
    item = next((f for f in fvm.items if f.number == selected), None)
    if item is None:
        return "click a finding to highlight its layer, column or step" if fvm.items else ""
    if not item.anchors:
        return f"finding #{item.number} points at no layer, column or step of the pictures"
    return (f"finding #{item.number}: " + ", ".join(a.key for a in item.anchors_shown)
            + (f" and {item.anchors_more} more (in gold)" if item.anchors_more else ""))


def select_finding(sources: Sources, ref: dict | None, number: int | None, card_ids: list[dict]):
    """After a click on finding ``number``: the three figures with its anchors in gold, the note,
    and the card styles (the clicked one highlighted)."""
    loaded = sources.load(ref["db"], ref["session"])
    rep = loaded.report
    pages, state, timeline = sources.figures(loaded, number, session_figures)
    by_n = {f.number: f for f in rep.findings.items}
    styles = []
    for cid in card_ids:
        f = by_n.get(cid.get("n"))
        colour = C.SEVERITY_COLOURS.get(f.severity if f else "", "#333")
        styles.append({"borderLeft": f"6px solid {colour}", "padding": "6px 10px", "margin": "6px 0", "cursor": "pointer",
                       "background": "#fffde7" if cid.get("n") == number else "#fff"})
    return pages, state, timeline, selection_note(rep.findings, number), styles


def download(sources: Sources, ref: dict | None, number: int, what: str) -> dict:
    """``dcc.Download`` data for suggestion ``number``'s YAML (``what="yaml"``) or patched command
    (``"sh"``): the text ``vllm-diag suggest --apply N`` writes, from the same function."""
    from vllm_diag.suggest import suggestion_files

    loaded = sources.load(ref["db"], ref["session"])
    match = [s for n, _f, s in loaded.suggestions if n == number]
    if not match:
        raise DiagError(f"no suggestion {number} in session {ref['session']}")
    stem = f"vllm-diag-{ref['session']}-s{number}"
    files = dict(suggestion_files(match[0], stem))
    name = f"{stem}.{'yaml' if what == 'yaml' else 'sh'}"
    return {"content": files[name], "filename": name, "type": "application/x-yaml" if what == "yaml" else "text/x-shellscript"}


# ----------------------------------------------------------------------------------- compare


def _split_key(key: str | None) -> tuple[str, str] | None:
    if not key or "/" not in key:
        return None
    db, sid = key.split("/", 1)
    return db, sid


def compare_page(sources: Sources, a: str | None, b: str | None):
    snap = sources.snapshot()
    options = [{"label": f"{r.session}  {r.host}  {r.model}  vLLM {r.vllm_version or '?'}  [{r.status}]", "value": r.key}
               for r in sorted(snap.rows, key=lambda r: -(r.started_at or 0))]
    pickers = html.Div([
        dcc.Dropdown(id="compare-a", options=options, value=a, placeholder="session A", style={"flex": "1"}),
        dcc.Dropdown(id="compare-b", options=options, value=b, placeholder="session B", style={"flex": "1"}),
    ], style={"display": "flex", "gap": "12px"})
    body = compare_body(sources, a, b)
    return html.Div([html.H2("Compare two sessions"), pickers, html.Div(body, id="compare-body")], className="compare-page")


def compare_body(sources: Sources, a: str | None, b: str | None):
    ka, kb = _split_key(a), _split_key(b)
    if ka is None or kb is None:
        return html.P("pick two sessions (or tick two rows of the fleet table)", className="muted")
    loaded = []
    for k in (ka, kb):
        try:
            loaded.append(sources.load(*k))
        except DiagError as exc:
            return C.message_page("Session not available", str(exc))
    ra, rb = (x.report for x in loaded)
    return html.Div([config_diff_table(ra.header.config, rb.header.config, ra.header.session_id, rb.header.session_id),
                     html.Div([_compare_side(x) for x in loaded], style={"display": "flex", "gap": "12px"})])


def config_diff(ca, cb) -> list[tuple[str, str, str, bool]]:
    """(key, A, B, differs) for every engine setting of either session, differing ones first."""
    da, db = dict(ca), dict(cb)
    keys = sorted(set(da) | set(db))
    rows = [(k, C.text(da[k]) if k in da else "-", C.text(db[k]) if k in db else "-") for k in keys]
    rows = [(k, x, y, x != y) for k, x, y in rows]
    return sorted(rows, key=lambda r: (not r[3], r[0]))


def config_diff_table(ca, cb, name_a: str, name_b: str):
    rows = config_diff(ca, cb)
    diff = sum(1 for r in rows if r[3])
    return html.Div([
        html.H3(f"Config diff ({diff} of {len(rows)} settings differ)"),
        html.Table([html.Thead(html.Tr([html.Th("setting"), html.Th(name_a), html.Th(name_b)])),
                    html.Tbody([html.Tr([html.Td(k), html.Td(x), html.Td(y)], className="differs" if d else "same",
                                        style={"background": "#fff4e5"} if d else {}) for k, x, y, d in rows])],
                   id="config-diff", className="config-diff"),
    ])


def kv_groups_table(page_map):
    side = next((s for s in page_map.sides if s.groups), None)
    if side is None:
        reason = next((s.groups_missing for s in page_map.sides if s.groups_missing), None) or page_map.missing
        return html.Div(f"KV groups: {C.text(reason) if reason else 'none in this session'}", className="muted")
    return html.Table([
        html.Thead(html.Tr([html.Th(x) for x in ("group", "spec", "block (tokens)", "page (B)", "layers", "draft")])),
        html.Tbody([html.Tr([html.Td(str(g.group_index)), html.Td(g.spec_type), html.Td(C.text(g.block_size)),
                             html.Td(C.text(g.page_bytes)), html.Td(str(g.layers)), html.Td("yes" if g.is_draft else "")])
                    for g in side.groups]),
    ], className="kv-groups")


def _compare_side(loaded):
    rep = loaded.report
    h = rep.header
    return html.Div([
        html.H3(dcc.Link(f"{h.session_id} ({h.kind}, {h.status})", href=C.session_href(loaded.row.db_key, h.session_id))),
        html.Div(f"{loaded.row.model} on vLLM {loaded.row.vllm_version or '?'}; {loaded.row.gpu or '-'}; "
                 f"{rep.findings.verdict}", className="muted"),
        html.H4("KV groups"), kv_groups_table(rep.page_map),
        dcc.Graph(figure=figures.page_map_figure(rep.page_map), config={"displaylogo": False}),
    ], style={"flex": "1", "minWidth": "0"}, className="compare-side")
