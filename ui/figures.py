"""Plotly figures of the three pictures, drawn from view models (``vllm_diag.views``).

Shared by the dashboard (``vllm_diag.ui.web``) and the static HTML report; plotly only, no dash.
The view models decide everything shown (rows, marks, cuts, downsampling); these functions only
draw. ``highlight`` takes a finding's anchors (``FindingVM.anchors``): the layers, block-table
columns and steps they name are drawn in gold with a label, on top of the view's own marks (red).

* :func:`page_map_figure` -- per side (recorded / predicted / log), every layer's page before
  unification (padding stacked on what the spec needs), the page after it, the largest page;
* :func:`state_index_figure` -- per KV group, the block table's columns against the compared
  state-index buffer's; the extra column marked with both widths;
* :func:`timeline_figure` -- decodes, spec decodes and prefills per step (bucket maxima when
  downsampled), mixed decode + spec-decode steps and builder disagreements marked; next_n = k + 1
  against each kernel limit in the title.
"""

from __future__ import annotations

import html
import textwrap

import plotly.graph_objects as go
from plotly.subplots import make_subplots

try:  # numpy arrays skip plotly's per-element validation and travel as base64 typed arrays
    import numpy as np
except ImportError:  # pragma: no cover - the web extra installs numpy
    np = None

from vllm_diag.views.primitives import Missing, fmt, known

RED = "#c62828"
GOLD = "#f9a825"
GREY = "#b0bec5"
PALETTE = ("#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#5d4037", "#ad1457", "#283593", "#558b2f")
ROW_PX = 18


def _arr(values):
    """A long series for a trace: a numpy array of the smallest unsigned type that holds it when
    numpy is there (a 2,000-point timeline builds in milliseconds instead of a second and travels as a
    compact base64 typed array), else a list."""
    if np is None:
        return list(values)
    a = np.asarray(values, dtype=np.int64)
    if a.size == 0 or a.min() < 0:
        return a.astype(np.float64)
    top = int(a.max())
    return a.astype(np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.uint32 if top < 1 << 32 else np.float64)


def _t(value) -> str:
    """Text from a DB for a figure: Plotly reads ``<br>``, ``<b>``, ``<a href>`` in labels and hover
    text, so ``<``, ``>`` and ``&`` are escaped and the text shows as written."""
    return html.escape(str(value), quote=False)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _keys(highlight) -> set[str]:
    return {getattr(a, "key", a) for a in (highlight or ())}


def _empty(title: str, reason) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=160, xaxis={"visible": False}, yaxis={"visible": False},
                      annotations=[{"text": "<br>".join(_t(x) for x in textwrap.wrap(str(reason), 110)),
                                    "showarrow": False, "x": 0.5, "y": 0.5,
                                    "xref": "paper", "yref": "paper"}], margin={"t": 40, "b": 10, "l": 10, "r": 10})
    return fig


def pending_figure(title: str, message: str) -> go.Figure:
    """A placeholder while a figure's data is on its way (e.g. a long session's timeline)."""
    return _empty(title, message)


# ----------------------------------------------------------------------------------- page map


def page_map_figure(vm, highlight=()) -> go.Figure:
    """Horizontal bars: one row per layer, one column per side."""
    title = "Page-size map"
    sides = [s for s in vm.sides if s.rows]
    if not sides:
        return _empty(title, vm.missing or Missing("no layer specs in this session"))
    hl = _keys(highlight)
    fig = make_subplots(rows=1, cols=len(sides), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[_t(s.title) for s in sides])
    layers = list(dict.fromkeys(_t(r.layer) for s in sides for r in s.rows))
    for col, side in enumerate(sides, start=1):
        rows = list(side.rows)
        colours, lines, hover = [], [], []
        for r in rows:
            g = r.group if isinstance(r.group, int) else -1
            colours.append(RED if r.marked else PALETTE[g % len(PALETTE)] if g >= 0 else GREY)
            lines.append(GOLD if r.anchor.key in hl else "rgba(0,0,0,0)")
            hover.append("<br>".join(_t(x) for x in (
                f"{r.layer}", f"{r.spec_type}{' (draft)' if r.is_draft else ''}, group {fmt(r.group)}",
                f"page needed {fmt(r.page_raw)} B, before unification {fmt(r.page_before)} B",
                f"after unification {fmt(r.page_after)} B; padding {fmt(r.padding_bytes)} B ({r.padding_pct:.1f} %)",
                f"ratio to largest {fmt(r.ratio_to_max)}; divides: {fmt(r.divides)}",
                f"MARKED: {r.mark_reason}" if r.marked and r.mark_reason else "",
                f"expected {fmt(r.expected)} B, actual {fmt(r.actual)} B" if r.expected is not None else "",
            ) if x))
        need = [r.page_raw if r.page_raw is not None else (r.page_before or 0) for r in rows]
        pad = [max(0, (r.page_before or 0) - n) if r.page_before is not None else 0 for r, n in zip(rows, need)]
        y = [_t(r.layer) for r in rows]
        fig.add_trace(go.Bar(y=y, x=need, orientation="h", name="page the spec needs", legendgroup="need",
                             showlegend=col == 1, marker={"color": colours, "line": {"color": lines, "width": 3}},
                             hovertext=hover, hoverinfo="text"), row=1, col=col)
        fig.add_trace(go.Bar(y=y, x=pad, orientation="h", name="padding", legendgroup="pad", showlegend=col == 1,
                             marker={"color": GREY, "line": {"color": lines, "width": 3}}, hovertext=hover,
                             hoverinfo="text"), row=1, col=col)
        after = [(r.layer, r.page_after) for r in rows if known(r.page_after)]
        if after:
            fig.add_trace(go.Scatter(y=[_t(a) for a, _ in after], x=[b for _, b in after], mode="markers",
                                     name="page after unification", legendgroup="after", showlegend=col == 1,
                                     marker={"symbol": "diamond", "size": 9, "color": "#212121"}), row=1, col=col)
        if side.max_page:
            fig.add_vline(x=side.max_page, line={"dash": "dash", "color": "#616161"}, row=1, col=col,
                          annotation_text=f"largest {side.max_page:,} B", annotation_position="top")
        for r in rows:
            if r.anchor.key in hl:
                fig.add_annotation(y=_t(r.layer), x=(r.page_before or r.page_raw or 0), text="◀ finding", showarrow=False,
                                   xanchor="left", font={"color": GOLD, "size": 12}, row=1, col=col)
    fig.update_layout(barmode="stack", title=title, height=max(260, 90 + ROW_PX * len(layers)),
                      margin={"l": 10, "r": 10, "t": 70, "b": 40}, legend={"orientation": "h", "y": -0.02, "yanchor": "top"},
                      meta={"highlight": sorted(hl), "marked": list(vm.marked_layers)})
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=layers, automargin=True)
    fig.update_xaxes(title_text="bytes per block", tickformat=",d")
    return fig


# --------------------------------------------------------------------------------- state index


def state_index_figure(vm, highlight=()) -> go.Figure:
    """One line of cells per block table and per compared state-index buffer."""
    title = "State-index view (block-table columns vs state-index buffers)"
    groups = [g for g in vm.groups if g.cells]
    if not groups:
        return _empty(title, vm.missing or Missing("no block tables or state-index buffers in this session"))
    hl = _keys(highlight)
    fig = go.Figure()
    ylabels: list[str] = []
    states = {"both": ("in block table and buffer", "#2e7d32"), "table": ("block table only", RED),
              "buffer": ("buffer only", "#ef6c00")}
    pts: dict[str, list] = {k: [[], [], []] for k in states}
    gold: list = [[], [], []]
    annotations = []
    for g in groups:
        gi = fmt(g.group_index)
        compared = next((b for b in g.buffers if b.compared), None)
        t_label = _t(f"group {gi}: block table {fmt(g.rows)} x {fmt(g.columns)}")
        ylabels.append(t_label)
        b_label = None
        if compared is not None:
            shape = "x".join(map(str, compared.shape)) if known(compared.shape) else "shape not recorded"
            b_label = _t(_cut(f"group {gi}: {compared.name}", 44) + f" ({shape})")
            ylabels.append(b_label)
        for c in g.cells:
            state = "both" if c.in_table and c.in_buffer else "table" if c.in_table else "buffer"
            colour_state = "table" if c.marked and c.in_table else state
            col_key = f"column:{gi}:{c.index}"
            tip = (f"group {gi}, column {c.index}: " + states[state][0]
                   + (f" (MARKED: table {g.mismatch[0]} vs buffer {g.mismatch[1]} columns)" if c.marked and g.mismatch else ""))
            if c.in_table:
                pts[colour_state][0].append(c.index)
                pts[colour_state][1].append(t_label)
                pts[colour_state][2].append(_t(tip) + f"<br>derivation: {_t(fmt(g.derivation))}")
                if col_key in hl:
                    gold[0].append(c.index), gold[1].append(t_label), gold[2].append(_t(tip))
            if b_label and c.in_buffer:
                pts[colour_state][0].append(c.index)
                pts[colour_state][1].append(b_label)
                pts[colour_state][2].append(_t(tip) + f"<br>{_t(compared.name)}<br>derivation: {_t(fmt(compared.derivation))}")
                if col_key in hl:
                    gold[0].append(c.index), gold[1].append(b_label), gold[2].append(_t(tip))
            if col_key in hl and not c.in_table:
                gold[0].append(c.index), gold[1].append(t_label), gold[2].append(_t(tip))
        if g.mismatch is not None:
            annotations.append({"x": max(g.marked_columns or (g.mismatch[0],)), "y": t_label, "xanchor": "left",
                                "text": f"  {g.mismatch[0]} vs {g.mismatch[1]} columns", "showarrow": False,
                                "font": {"color": RED}})
        if g.anchor.key in hl and not any(k.startswith(f"column:{gi}:") for k in hl):
            annotations.append({"x": g.cells_from - 0.5, "y": t_label, "xanchor": "left", "yshift": 14,
                                "text": "the finding's group", "showarrow": False, "font": {"color": GOLD}})
    for k, (name, colour) in states.items():
        if pts[k][0]:
            fig.add_trace(go.Scatter(x=pts[k][0], y=pts[k][1], mode="markers", name=name, hovertext=pts[k][2],
                                     hoverinfo="text", marker={"symbol": "square", "size": 16, "color": colour}))
    if gold[0]:
        fig.add_trace(go.Scatter(x=gold[0], y=gold[1], mode="markers", name="the finding's column", hovertext=gold[2],
                                 hoverinfo="text", marker={"symbol": "square-open", "size": 24, "color": GOLD,
                                                           "line": {"width": 4, "color": GOLD}}))
    fig.update_layout(title=title, height=max(260, 150 + 34 * len(ylabels)), annotations=annotations,
                      margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": -0.25, "yanchor": "top", "x": 0},
                      meta={"highlight": sorted(hl), "mismatches": [list(g.mismatch) for g in vm.mismatches]})
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(ylabels)), automargin=True)
    lo = min(c.index for g in groups for c in g.cells)
    hi = max(c.index for g in groups for c in g.cells)
    fig.update_xaxes(title_text="block-table column (1-based)", dtick=1 if hi - lo <= 40 else None,
                     range=[lo - 0.6, hi + 0.6 + max(2.5, (hi - lo) * 0.25)])  # room for the "N vs M" label
    return fig


# ----------------------------------------------------------------------------------- timeline


def timeline_figure(vm, highlight=()) -> go.Figure:
    """Requests per step (decodes, spec decodes, prefills) and tokens per step, marks on top."""
    title = "Batch timeline"
    if vm.missing is not None and not vm.series:
        return _empty(title, vm.missing)
    hl = _keys(highlight)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.06)
    per = " (max per bucket of %d steps)" % vm.width if vm.downsampled else ""
    for s in vm.series:
        dash = None if s.kind == "runner" else "dot"
        if s.kind != "runner" and s.agrees:
            continue  # builders that agree with the runner draw the same lines
        label = _t(s.label)
        for name, ys, colour in (("decodes", s.decodes, "#1565c0"), ("spec decodes", s.spec_decodes, "#6a1b9a"),
                                 ("prefills", s.prefills, "#2e7d32")):
            fig.add_trace(go.Scatter(x=_arr(s.x), y=_arr(ys), mode="lines", name=f"{name} ({label})",
                                     line={"color": colour, "dash": dash, "shape": "hv"}), row=1, col=1)
        fig.add_trace(go.Scatter(x=_arr(s.x), y=_arr(s.tokens), mode="lines", name=f"tokens ({label})",
                                 line={"color": "#616161", "dash": dash, "shape": "hv"}), row=2, col=1)
    mixed = [m for m in vm.marks if m.kind == "mixed"]
    disagree = [m for m in vm.marks if m.kind == "disagree"]
    failed = [m for m in vm.marks if m.kind == "failed"]
    top = max([1] + [max(s.decodes + s.spec_decodes + s.prefills, default=0) for s in vm.series])
    for marks, name, symbol, colour, y in ((mixed, "decodes + spec decodes mixed", "x", RED, 1.08),
                                           (disagree, "builder split differs from the runner", "triangle-down", "#ef6c00", 1.08),
                                           (failed, "failing step (recorded error)", "star", "#b71c1c", 1.2)):
        if marks:
            fig.add_trace(go.Scatter(x=[m.step for m in marks], y=[top * y] * len(marks), mode="markers", name=name,
                                     hovertext=[_t(f"step {m.step}: {m.label}: {m.text}") for m in marks], hoverinfo="text",
                                     marker={"symbol": symbol, "size": 10, "color": colour}), row=1, col=1)
    for m in vm.marks:
        if m.anchor.key in hl:
            fig.add_vline(x=m.step, line={"color": GOLD, "width": 3}, row="all", col=1)
            fig.add_annotation(x=m.step, y=top * 1.08, text=f"step {m.step}", font={"color": GOLD}, row=1, col=1,
                               showarrow=True, arrowcolor=GOLD)
    for key in hl:
        if key.startswith("step:") and not any(m.anchor.key == key for m in vm.marks):
            step = int(key.split(":", 1)[1])
            fig.add_vline(x=step, line={"color": GOLD, "width": 3}, row="all", col=1)
    limits = [f"next_n {fmt(lim.next_n)} vs {lim.name} {fmt(lim.limit)}"
              + (" OK" if lim.ok is True else " OVER" if lim.ok is False else "") for lim in vm.limits]
    sub = [f"{vm.total_steps:,} steps{per}"]
    if limits:
        sub += limits
    elif known(vm.next_n):
        sub.append(f"next_n = {vm.next_n}")
    if vm.process_note:
        sub.append(vm.process_note)
    lines: list[str] = []  # whole items per line, never a limit cut in two
    for item in sub:
        if lines and len(lines[-1]) + 3 + len(item) <= 120:
            lines[-1] += " | " + item
        else:
            lines.append(item)
    fig.update_layout(title={"text": title + "".join(f"<br><sup>{_t(x)}</sup>" for x in lines)},
                      height=420 + 20 * len(lines),
                      margin={"l": 10, "r": 10, "t": 56 + 20 * len(lines), "b": 40},
                      legend={"orientation": "h", "y": -0.2, "yanchor": "top"},
                      meta={"highlight": sorted(hl), "marked_steps": list(vm.marked_steps)})
    if failed:  # room above the other marks for the failing step's star
        fig.update_yaxes(range=[-0.05 * top, top * 1.32], row=1, col=1)
    fig.update_yaxes(title_text="requests", row=1, col=1)
    fig.update_yaxes(title_text="tokens", row=2, col=1)
    fig.update_xaxes(title_text="step", row=2, col=1)
    return fig
