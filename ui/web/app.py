"""``create_app(sources, token=None, loopback_only=True) -> dash.Dash`` and ``serve(...)``.

One Dash app, no page registry (``dash.register_page`` has import-time side effects): a
``dcc.Location`` drives :func:`vllm_diag.ui.web.callbacks.page`, and every callback below only
unpacks Dash's inputs and calls a plain function of :mod:`vllm_diag.ui.web.callbacks`.
``app.server`` is the Flask app (a WSGI server can serve it); :func:`serve` runs werkzeug's
threaded server. Dash serves its own component bundles from the installed package
(``serve_locally``): nothing is fetched from the network and no folder of ours is served.

Plotly.js: where ``dcc.Graph`` fetches plotly.js once the first graph is on the page (Dash's URL
``_dash-component-suites/plotly/package_data/plotly.min.js``), the dashboard answers with plotly.js's
*basic* bundle (scatter, bar, pie; 1.2 MB, shipped next to this file with its MIT licence, the same
plotly.js version as the Python ``plotly`` package) instead of the full 4.8 MB one: Chromium spent
1.5-2 s of main thread evaluating the full bundle on the 2-core machine, about 0.2 s on the basic
one. Not preloaded: with the bundle at hand Chromium evaluates it and draws the charts in the tasks
right after the page's, and header + findings then paint with the charts (0.8 -> 1.3 s on a cold
server) instead of ahead of them. The figures (``ui/figures.py``, the same as the report's) use only scatter
and bar traces.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import dash
from dash.exceptions import DependencyException
from dash import ALL, Input, Output, State, ctx, dash_table, dcc, html

from vllm_diag.ui.web import callbacks as cb
from vllm_diag.ui.web import components as C
from vllm_diag.ui.web import security
from vllm_diag.ui.web.data import Sources

REFRESH_MS = 2000
PLOTLY_JS = Path(__file__).with_name("plotly-basic.min.js")
PLOTLY_JS_VERSION = "4.1.1"  # the bundle's header line; tests check it against the Python plotly package's
PLOTLY_JS_ROUTE = "/_dash-component-suites/plotly/package_data/plotly.min.js"  # window._dashPlotlyJSURL
NO_ASSETS = "/nonexistent/vllm-diag-serves-no-assets"
STYLE = {"fontFamily": "system-ui, sans-serif", "fontSize": "14px", "margin": "0 12px"}
# Dash's page template with a few rules of our own (no assets folder is served)
INDEX = """<!DOCTYPE html>
<html>
<head>{%metas%}<title>{%title%}</title>{%favicon%}{%css%}
<style>
th, td { padding: 2px 8px; text-align: left; vertical-align: top; }
.muted { color: #555; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f8fa; padding: 4px 6px; }
.finding-number { font-weight: bold; margin-right: 4px; }
.finding, .suggestion, .recorded-error, .root-error, .notes { overflow-wrap: anywhere; }
.selection-note { color: #8d6e00; font-weight: bold; min-height: 1.2em; }
</style>
</head>
<body>{%app_entry%}<footer>{%config%}{%scripts%}{%renderer%}</footer></body>
</html>"""


def _fleet_layout():
    return html.Div([
        html.H2("Fleet"),
        html.Div([
            dcc.Input(id="fleet-search", type="search", placeholder="search host, model, vLLM, GPU, session...",
                      debounce=False, style={"width": "320px"}),
            dcc.Dropdown(id="fleet-status", options=["failed", "running", "ok"], multi=True, placeholder="status",
                         style={"width": "220px"}),
            dcc.Dropdown(id="fleet-kind", options=["engine", "log", "check"], multi=True, placeholder="kind",
                         style={"width": "220px"}),
            dcc.Link("compare the 2 ticked sessions", id="compare-link", href="/compare", style={"alignSelf": "center"}),
        ], style={"display": "flex", "gap": "12px", "alignItems": "center"}),
        html.Div(id="fleet-summary", className="muted", style={"margin": "6px 0"}),
        html.Div(id="fleet-problems-slot"),
        dcc.Store(id="fleet-gen"), dcc.Store(id="fleet-filter"),
        dash_table.DataTable(
            id="fleet-table", columns=C.FLEET_COLUMNS, data=[], sort_action="native", filter_action="native",
            page_action="native", page_size=cb.FLEET_PAGE_SIZE, row_selectable="multi", markdown_options={"html": False},
            style_data_conditional=C.fleet_styles(), style_cell={"textAlign": "left", "padding": "4px 8px",
                                                                 "maxWidth": "320px", "overflow": "hidden",
                                                                 "textOverflow": "ellipsis"},
            style_header={"fontWeight": "bold"},
            css=[{"selector": ".dash-cell p", "rule": "margin: 0"}],
        ),
    ], className="fleet-page")


def page(sources: Sources, pathname: str | None, search: str | None):
    """The page for a URL (also called by tests)."""
    name, rest = cb.parse_path(pathname)
    if name == "fleet":
        return _fleet_layout()
    if name == "session" and len(rest) == 2:
        return cb.session_page(sources, rest[0], rest[1])
    if name == "compare":
        q = dict(urllib.parse.parse_qsl((search or "").lstrip("?")))
        return cb.compare_page(sources, q.get("a"), q.get("b"))
    return C.message_page("Not found", f"no page {pathname!s}")


def create_app(sources: Sources, *, token: str | None = None, loopback_only: bool = True) -> dash.Dash:
    app = dash.Dash(
        __name__,
        title="vllm-diag",
        serve_locally=True,
        # a folder that does not exist: Dash serves nothing from the working directory or the package
        assets_folder=NO_ASSETS,
        assets_ignore=".*",
        include_assets_files=False,
        suppress_callback_exceptions=True,
        update_title=None,
    )
    app.index_string = INDEX.replace("__PLOTLY_JS_ROUTE__", PLOTLY_JS_ROUTE)
    security.install(app.server, token=token, loopback_only=loopback_only)

    plotly_js = PLOTLY_JS.read_bytes()

    @app.server.route(PLOTLY_JS_ROUTE)
    def _plotly_js():  # one fixed file of the package; a static rule wins over Dash's component-suites rule
        from flask import Response

        return Response(plotly_js, mimetype="text/javascript",
                        headers={"Cache-Control": "no-cache"})  # unversioned URL: revalidated

    @app.server.errorhandler(DependencyException)
    def _no_such_bundle(_exc):  # "/_dash-component-suites/../x": not a file of ours, not a crash
        return "not found\n", 404, {"Content-Type": "text/plain"}

    app.layout = html.Div([
        dcc.Location(id="url"),
        html.Div([html.Strong("vllm-diag", style={"marginRight": "16px"}), dcc.Link("Fleet", href="/"), " | ",
                  dcc.Link("Compare", href="/compare")],
                 style={"padding": "8px 0", "borderBottom": "1px solid #ddd"}),
        dcc.Interval(id="tick", interval=REFRESH_MS),
        dcc.Download(id="download"),
        html.Div(id="page"),
    ], style=STYLE)

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def _route(pathname, search):
        return page(sources, pathname, search)

    @app.callback(
        Output("fleet-table", "data"), Output("fleet-problems-slot", "children"), Output("fleet-summary", "children"),
        Output("fleet-gen", "data"), Output("fleet-filter", "data"),
        Input("tick", "n_intervals"), Input("fleet-search", "value"), Input("fleet-status", "value"),
        Input("fleet-kind", "value"), State("fleet-gen", "data"), State("fleet-filter", "data"),
    )
    def _fleet(_n, search, statuses, kinds, gen, flt):
        records, problems, summary, gen2, flt2 = cb.fleet_update(sources, search, statuses, kinds, gen, flt)
        if records is None:
            return dash.no_update, dash.no_update, dash.no_update, dash.no_update, dash.no_update
        return records, problems, summary, gen2, flt2

    @app.callback(Output("compare-link", "href"), Input("fleet-table", "selected_row_ids"), prevent_initial_call=True)
    def _compare_link(ids):
        return cb.compare_href(ids) or "/compare"

    @app.callback(Output("compare-body", "children"), Input("compare-a", "value"), Input("compare-b", "value"),
                  prevent_initial_call=True)
    def _compare(a, b):
        return cb.compare_body(sources, a, b)

    @app.callback(
        Output("fig-pages", "figure"), Output("fig-state", "figure"), Output("fig-timeline", "figure"),
        Output("selection-note", "children"), Output({"type": "finding", "n": ALL}, "style"),
        Output("selected-finding", "data"),
        Input({"type": "finding", "n": ALL}, "n_clicks"), State("session-ref", "data"),
        State({"type": "finding", "n": ALL}, "id"), prevent_initial_call=True,
    )
    def _select(clicks, ref, ids):
        trig = ctx.triggered_id
        if not isinstance(trig, dict) or not any(clicks or []):
            return (dash.no_update,) * 6
        number = trig.get("n")
        return (*cb.select_finding(sources, ref, number, ids), number)

    @app.callback(
        Output("fig-timeline", "figure", allow_duplicate=True), Output("fig-state", "figure", allow_duplicate=True),
        Output("session-version", "data"),
        Input("tick", "n_intervals"), State("session-ref", "data"), State("selected-finding", "data"),
        State("session-version", "data"), prevent_initial_call=True,
    )
    def _session_tick(_n, ref, selected, version):
        out = cb.session_tick(sources, ref, selected, version)
        return (dash.no_update,) * 3 if out is None else out

    @app.callback(
        Output("fig-timeline", "figure", allow_duplicate=True), Output("timeline-pending", "data"),
        Input("timeline-pending", "data"), State("session-ref", "data"), State("selected-finding", "data"),
        prevent_initial_call="initial_duplicate",
    )
    def _timeline(pending, ref, selected):
        fig = cb.timeline_ready(sources, ref, selected, pending)
        return (dash.no_update, dash.no_update) if fig is None else (fig, False)

    @app.callback(
        Output("download", "data"),
        Input({"type": "dl-yaml", "n": ALL}, "n_clicks"), Input({"type": "dl-sh", "n": ALL}, "n_clicks"),
        State("session-ref", "data"), prevent_initial_call=True,
    )
    def _download(_y, _s, ref):
        trig = ctx.triggered_id
        if not isinstance(trig, dict) or not (ctx.triggered and ctx.triggered[0].get("value")):
            return dash.no_update
        return cb.download(sources, ref, trig["n"], "yaml" if trig["type"] == "dl-yaml" else "sh")

    return app


def serve(app: dash.Dash, host: str, port: int):
    """Werkzeug's threaded WSGI server (one thread per request); returns it (``serve_forever``)."""
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request (the fleet polls every 2 s)
    return make_server(host, port, app.server, threaded=True)
