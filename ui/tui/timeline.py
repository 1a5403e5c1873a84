"""The batch timeline: decodes / spec decodes / prefills per step as bar rows, mixed steps and
builder disagreements marked, next_n against the kernel limits, a cursor, scroll and zoom.

One widget draws only what fits the terminal (one column = one bucket of the view model), whatever
the session's length: never one widget per step. The buckets come from ``vllm_diag.views.timeline``
(downsampled in SQLite by the store); zooming asks the store for the window on screen, in a thread.
"""

from __future__ import annotations

import dataclasses

from rich.segment import Segment
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import get_current_worker

from vllm_diag.model import BatchStep, StepSummary
from vllm_diag.views.primitives import Missing, fmt
from vllm_diag.views.timeline import bucket_width, extend, timeline, window

from . import render

LABEL_W = 13  # 'spec decodes' + a space
WINDOWS_KEPT = 16  # zoomed windows read from the store, kept for panning and zooming back
LEVELS = " ▁▂▃▄▅▆▇█"
DISAGREE = "bright_blue"  # builder rows that disagree with the runner
CURSOR = "on bright_black"  # the cursor column's background (an ANSI colour: fine without true colour)
SERIES_ROWS = (("decodes", "decodes", "green"), ("spec_decodes", "spec decodes", "yellow"),
               ("prefills", "prefills", "cyan"))


def _bar_cells(value: int, top: int, rows: int) -> list[str]:
    """A vertical bar of ``rows`` cells (bottom first) for ``value`` against ``top``: eighths."""
    if top <= 0 or value <= 0:
        return [" "] * rows
    eighths = max(1, round(value / top * rows * 8))
    out = []
    for r in range(rows):
        n = min(8, max(0, eighths - 8 * r))
        out.append(LEVELS[n])
    return out


def chart_lines(vm, series_index: int, start: int, width: int, height: int, cursor: int | None) -> list[Text]:
    """The chart as ``height`` lines of ``width`` cells: per series row the bars of buckets
    ``start .. start + width - LABEL_W - 1`` of ``vm.series[series_index]``; a marks row; an axis."""
    lines: list[Text] = []
    s = vm.series[series_index]
    cols = max(1, width - LABEL_W)
    idx = range(start, min(len(s.x), start + cols))
    rows_each = max(1, min(8, (height - 2) // 3))
    for attr, label, style in SERIES_ROWS:
        values = getattr(s, attr)
        top = max((values[i] for i in idx), default=0)
        grid = [_bar_cells(values[i], top, rows_each) for i in idx]
        for r in reversed(range(rows_each)):
            line = Text()
            if r == rows_each - 1:  # the label, then the window's maximum (the bars' full height)
                line.append(f"{label:<{LABEL_W}}"[:LABEL_W], style="bold")
            elif r == rows_each - 2:
                line.append(f"max {fmt(top)}".rjust(LABEL_W - 1)[-(LABEL_W - 1):] + " ", style="dim")
            else:
                line.append(" " * LABEL_W)
            row = "".join(cells[r] for cells in grid)
            c = cursor - start if cursor is not None and 0 <= cursor - start < len(row) else None
            if c is None:  # one styled run per row: cheap however wide the terminal
                line.append(row, style=style)
            else:
                line.append(row[:c], style=style)
                line.append(row[c], style=f"{style} {CURSOR}")
                line.append(row[c + 1:], style=style)
            lines.append(line)
    marks = Text(f"{'marks':<{LABEL_W}}", style="bold")
    run_glyphs, run_style = [], None
    for i in idx:  # runs of one style (mostly blanks) appended at once
        glyph, style = " ", ""
        if s.mixed[i]:
            glyph, style = "▲", render.MARK
        elif s.disagree[i]:
            glyph, style = "◆", DISAGREE
        if cursor is not None and i == cursor:
            style += " " + CURSOR
            glyph = glyph if glyph != " " else "▴"
        if style != run_style and run_glyphs:
            marks.append("".join(run_glyphs), style=run_style)
            run_glyphs = []
        run_glyphs.append(glyph)
        run_style = style
    if run_glyphs:
        marks.append("".join(run_glyphs), style=run_style)
    lines.append(marks)
    lines.append(axis_line(s, idx, cols))
    return lines[:height] if height > 0 else lines


def axis_line(s, idx: range, cols: int) -> Text:
    """Step numbers under the bars, one label every ~12 columns."""
    cells = [" "] * cols
    if len(idx):
        pos = 0
        while pos < len(idx):
            label = f"|{s.x[idx[pos]]:,}"
            if pos + len(label) <= cols:
                cells[pos:pos + len(label)] = list(label)
            pos += max(12, len(label) + 2)
    return Text(f"{'step':<{LABEL_W}}", style="bold") + Text("".join(cells), style="dim")


def cursor_text(vm, series_index: int, cursor: int | None) -> Text:
    """What the cursor column holds: its steps, the maxima, marks, and the mark texts of the view."""
    text = Text()
    if cursor is None or not vm.series:
        return text
    s = vm.series[series_index]
    if not 0 <= cursor < len(s.x):
        return text
    first, last = s.x[cursor], s.x_last[cursor]
    text.append(f"step {first:,}" if first == last else f"steps {first:,}–{last:,}", style="bold")
    text.append(f"  decodes {s.decodes[cursor]}  spec decodes {s.spec_decodes[cursor]}  prefills {s.prefills[cursor]}"
                f"  tokens {s.tokens[cursor]:,}")
    if first != last:
        text.append("  (max per step)", style="dim")
    if s.mixed[cursor]:
        text.append(f"  ▲ {s.mixed[cursor]} mixed", style=render.MARK)
    if s.disagree[cursor]:
        text.append(f"  ◆ {s.disagree[cursor]} disagree", style=DISAGREE)
    for m in vm.marks:
        if first <= m.step <= last:
            text.append(f"\n  step {m.step:,}: {m.text}", style=render.MARK if m.kind in ("mixed", "failed") else DISAGREE)
            break
    return text


def limits_text(vm) -> Text:
    """next_n = k + 1 against each kernel limit in play (from the view)."""
    text = Text("next_n ", style="bold")
    text.append_text(Text(str(vm.next_n), style="italic dim") if isinstance(vm.next_n, Missing) else Text(fmt(vm.next_n)))
    if not vm.limits:
        text.append("  (no kernel limit in play for this session)", style="dim")
    for lim in vm.limits:
        ok = lim.ok
        glyph, style = ("✓", "green") if ok is True else (("✗", render.MARK) if ok is False else ("?", "yellow"))
        text.append(f"  {glyph} ", style=style)
        text.append(f"limit {fmt(lim.limit)}", style=style)
        text.append(f" {lim.name}", style="dim")
    return text


def _update(static: Static, text: Text) -> None:
    """``Static.update`` without a layout pass when the text keeps its height on screen (a cursor
    step): a layout pass re-arranges and re-renders the whole screen, a plain refresh only this widget."""
    before = getattr(static, "_shown", None)
    if before is not None and before[0].plain == text.plain and before[0].spans == text.spans:
        return  # unchanged: nothing to draw
    width = static.content_size.width
    rows = len(text.wrap(static.app.console, width)) if width > 0 else -1
    static._shown = (text, rows, width)
    static.update(text, layout=before is None or rows < 0 or before[1:] != (rows, width))


class CursorMoved(Message):
    """The chart's cursor moved (or its data changed): redraw the detail line."""


class ZoomRequested(Message):
    """+ / - / 0 on the chart: 1 zooms in, -1 out, 0 fits the whole session."""

    def __init__(self, direction: int) -> None:
        super().__init__()
        self.direction = direction


class TimelineChart(Widget, can_focus=True):
    """Bars of one series of the timeline view model; one column per bucket."""

    BINDINGS = [
        Binding("left", "move(-1)", "←", show=False),
        Binding("right", "move(1)", "→", show=False),
        Binding("shift+left,pageup", "page(-1)", "Page ←", show=False),
        Binding("shift+right,pagedown", "page(1)", "Page →", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("plus,equals_sign", "zoom(1)", "Zoom", key_display="+/-"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False),
        Binding("0", "fit", "Fit", show=False),
        Binding("m", "next_mark('mixed')", "Next mixed"),
        Binding("b", "next_series", "Builder", show=True),
    ]
    DEFAULT_CSS = """
    TimelineChart { height: 1fr; min-height: 8; }
    TimelineChart:focus { background-tint: $foreground 3%; }
    """

    cursor: reactive[int | None] = reactive(None)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.vm = None
        self.series_index = 0
        self.start = 0
        self.follow_end = True  # keep to the newest steps while the cursor is at the end
        self.windowed = False  # showing a zoomed window (the pane fetches neighbours at its edges)
        self.pending = False  # the step summary is still being read
        self._strips: list[Strip] = []  # the drawn lines, for the state in ``_strips_key``
        self._strips_key: tuple | None = None

    # ---------------------------------------------------------------- data

    def set_vm(self, vm) -> None:
        self.vm = vm
        if not vm.series:
            self.cursor = None
            self.refresh()
            return
        self.series_index = min(self.series_index, len(vm.series) - 1)
        n = len(vm.series[self.series_index].x)
        if self.cursor is None or self.follow_end:
            self.cursor = n - 1
        self.cursor = min(self.cursor, n - 1)
        self._keep_cursor_visible()
        self.refresh()

    @property
    def n(self) -> int:
        return len(self.vm.series[self.series_index].x) if self.vm and self.vm.series else 0

    @property
    def cols(self) -> int:
        return max(1, self.size.width - LABEL_W)

    def _keep_cursor_visible(self) -> None:
        if self.cursor is None:
            return
        if self.follow_end:  # show the newest steps, right-aligned
            self.start = max(0, self.n - self.cols)
        if self.cursor < self.start:
            self.start = self.cursor
        elif self.cursor >= self.start + self.cols:
            self.start = self.cursor - self.cols + 1
        self.start = max(0, min(self.start, max(0, self.n - self.cols)))

    def on_resize(self) -> None:
        self._keep_cursor_visible()

    # ---------------------------------------------------------------- drawing

    def render(self) -> Text:
        if self.vm is None or self.pending:
            return Text("reading the steps (SQLite aggregates them) ...", style="dim")
        if not self.vm.series:
            return Text(str(self.vm.missing or "no steps"), style="italic")
        lines = chart_lines(self.vm, self.series_index, self.start, self.size.width, self.size.height, self.cursor)
        return Text("\n").join(lines)

    def render_line(self, y: int) -> Strip:
        """The chart's lines as strips straight from Rich segments (Textual's line API): a cursor step
        redraws the chart in about a third of the time of ``render()``'s text, which Textual turns into
        its own content and wraps line by line. The loading and "no steps" texts go through ``render()``."""
        if self.vm is None or self.pending or not self.vm.series:
            return super().render_line(y)
        width, height = self.size
        base = self.visual_style.rich_style  # the focus tint and the theme are in it
        key = (self.vm, self.series_index, self.start, self.cursor, width, height, base)
        if self._strips_key is None or self._strips_key[0] is not self.vm or self._strips_key[1:] != key[1:]:
            console = self.app.console
            strips = []
            for line in chart_lines(self.vm, self.series_index, self.start, width, height, self.cursor):
                segments = Segment.apply_style(line.render(console), base)
                strips.append(Strip(segments, line.cell_len).crop_extend(0, width, base))
            self._strips, self._strips_key = strips, key
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, base)

    def watch_cursor(self) -> None:
        self.post_message(CursorMoved())

    # ---------------------------------------------------------------- keys

    def _move_to(self, index: int) -> None:
        if not self.n:
            return
        self.cursor = max(0, min(self.n - 1, index))
        self.follow_end = self.cursor == self.n - 1
        self._keep_cursor_visible()
        self.refresh()

    def action_move(self, delta: int) -> None:
        cur = self.cursor or 0
        if self.windowed and ((delta < 0 and cur == 0) or (delta > 0 and cur >= self.n - 1)):
            self.post_message(EdgeReached(delta))  # a zoomed window: the pane moves the window
            return
        self._move_to(cur + delta)

    def action_page(self, direction: int) -> None:
        if self.windowed:
            self.post_message(EdgeReached(direction * 2))
            return
        self.start = max(0, min(max(0, self.n - self.cols), self.start + direction * self.cols))
        self._move_to((self.cursor or 0) + direction * self.cols)

    def action_edge(self, end: int) -> None:
        self._move_to(self.n - 1 if end else 0)

    def action_next_mark(self, kind: str) -> None:
        if not self.n:
            return
        s = self.vm.series[self.series_index]
        flags = s.mixed if kind == "mixed" else s.disagree
        cur = self.cursor or 0
        for i in list(range(cur + 1, self.n)) + list(range(0, cur + 1)):
            if flags[i]:
                self._move_to(i)
                return
        self.app.notify(f"no {kind} step in this session", timeout=3)

    def action_next_series(self) -> None:
        if self.vm and len(self.vm.series) > 1:
            self.series_index = (self.series_index + 1) % len(self.vm.series)
            self.set_vm(self.vm)
            self.post_message(CursorMoved())

    def action_zoom(self, direction: int) -> None:
        self.post_message(ZoomRequested(direction))

    def action_fit(self) -> None:
        self.post_message(ZoomRequested(0))

    def cursor_step(self) -> int | None:
        if not self.n or self.cursor is None:
            return None
        s = self.vm.series[self.series_index]
        return (s.x[self.cursor] + s.x_last[self.cursor]) // 2

    def visible_steps(self) -> tuple[int, int] | None:
        if not self.n:
            return None
        s = self.vm.series[self.series_index]
        return s.x[self.start], s.x_last[min(self.n - 1, self.start + self.cols - 1)]

    def goto_step(self, step: int) -> bool:
        if not self.n:
            return False
        s = self.vm.series[self.series_index]
        for i, (a, b) in enumerate(zip(s.x, s.x_last)):
            if a <= step <= b:
                self._move_to(i)
                return True
        return False


class EdgeReached(Message):
    """The cursor tried to leave a zoomed window (-1/1: a step, -2/2: a page)."""

    def __init__(self, direction: int) -> None:
        super().__init__()
        self.direction = direction


class TimelinePane(Vertical):
    """Title line, the chart, what the cursor is on, next_n vs the kernel limits."""

    DEFAULT_CSS = """
    TimelinePane #timeline-title { height: 1; padding: 0 1; }
    TimelinePane #timeline-cursor { height: auto; max-height: 3; padding: 0 1; }
    TimelinePane #timeline-limits { height: auto; max-height: 2; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="timeline-title")
        yield TimelineChart(id="timeline-chart")
        yield Static(id="timeline-cursor")
        yield Static(id="timeline-limits")

    def on_mount(self) -> None:
        self.record = None  # the record with the whole session's step summary (extended by --follow)
        self.vm = None
        self.zoom: tuple[int, int] | None = None  # (first, last) step of a zoomed window; None: the summary
        self._windows: dict[tuple, StepSummary] = {}  # windows read from the store, newest last (see _zoom_to)
        self._reading: set[tuple] = set()  # windows being read ahead

    def show(self, record, vm, pending: bool = False) -> None:
        """``pending``: the record came without its step summary (it is being read): say so."""
        if pending:
            self.query_one(TimelineChart).pending = True
            self.query_one(TimelineChart).refresh()
            return
        self.query_one(TimelineChart).pending = False
        self.record = record
        if self.zoom is None:
            self._set(vm)
        else:
            self._zoom_to(*self.zoom)

    def append(self, steps: list[BatchStep], last_rowid: int) -> None:
        """--follow: fold the new steps into the summary (``views.timeline.extend``), redraw."""
        if self.record is None or not steps:
            return
        summary = self.record.step_summary or StepSummary()
        summary = extend(summary, steps, self.record.processes, last_rowid=last_rowid)
        self.record = dataclasses.replace(self.record, step_summary=summary)
        chart = self.query_one(TimelineChart)
        if not self.is_visible_tab():
            self.stale = True  # rebuilt when the tab is shown: a hidden picture costs nothing
            return
        if self.zoom is None:
            self._set(timeline(self.record))
        elif chart.follow_end:  # a zoomed window on the newest steps moves with them
            lo, hi = self.zoom
            self._zoom_to(max(summary.first_step, summary.last_step - (hi - lo)), summary.last_step)
        else:
            self._title()

    def is_visible_tab(self) -> bool:
        from textual.widgets import TabbedContent

        tabs = self.screen.query(TabbedContent)
        return not tabs or tabs.first().active == "timeline"

    def shown_again(self) -> None:
        """The timeline tab became active: draw what --follow folded in while it was hidden."""
        if getattr(self, "stale", False) and self.record is not None:
            self.stale = False
            if self.zoom is None:
                self._set(timeline(self.record))
            else:
                summary = self.record.step_summary
                lo, hi = self.zoom
                self._zoom_to(max(summary.first_step, summary.last_step - (hi - lo)), summary.last_step)

    def append_errors(self, rows: list[dict]) -> None:
        pass  # errors reload the record (the findings and header change); steps stay as they are

    def _set(self, vm) -> None:
        self.vm = vm
        self.query_one(TimelineChart).set_vm(vm)
        self._title()
        self._detail()
        _update(self.query_one("#timeline-limits", Static), limits_text(vm))

    def _title(self) -> None:
        vm = self.vm
        text = Text()
        if vm.missing is None:
            chart = self.query_one(TimelineChart)
            s = vm.series[chart.series_index]
            text.append(f"steps {fmt(vm.first_step)}–{fmt(vm.last_step)}", style="bold")
            text.append(f" ({vm.total_steps:,} steps)")
            text.append(f"  {vm.width:,} step{'s' if vm.width != 1 else ''}/column", style="dim")
            text.append(f"  {s.label}", style="bold cyan")
            counts = dict(vm.mark_counts)
            if counts.get("mixed"):
                text.append(f"  ▲ {counts['mixed']:,} mixed", style=render.MARK)
            if counts.get("disagree"):
                text.append(f"  ◆ {counts['disagree']:,} disagree", style=DISAGREE)
            if vm.process_note:
                text.append(f"  {vm.process_note}", style="dim")
        _update(self.query_one("#timeline-title", Static), text)

    def _detail(self) -> None:
        chart = self.query_one(TimelineChart)
        _update(self.query_one("#timeline-cursor", Static), cursor_text(self.vm, chart.series_index, chart.cursor))

    def on_cursor_moved(self, _message) -> None:
        if self.vm is not None:
            self._title()
            self._detail()

    # ---------------------------------------------------------------- zoom and windows

    def on_zoom_requested(self, message: ZoomRequested) -> None:
        """``+`` shows a quarter of the steps on screen around the cursor, ``-`` four times as many,
        ``0`` the whole session; one column is one bucket of the view (never binned here)."""
        summary = self.record.step_summary if self.record is not None else None
        if summary is None or summary.first_step is None:
            return
        chart = self.query_one(TimelineChart)
        first, last = summary.first_step, summary.last_step
        if message.direction == 0:
            self._zoom_to(first, last, chart.cursor_step())
            return
        self._travel = 0  # scrolling starts afresh at the new width
        target = self._zoom_target(message.direction)
        if isinstance(target, str):
            self.app.notify(target, timeout=3)
        elif target is not None:
            self._zoom_to(*target)

    def _zoom_target(self, direction: int) -> tuple[int, int, int] | str | None:
        """(lo, hi, centre) of the window ``+`` (1) or ``-`` (-1) shows next, or why there is none."""
        summary = self.record.step_summary
        chart = self.query_one(TimelineChart)
        first, last = summary.first_step, summary.last_step
        visible = chart.visible_steps()
        if visible is None:
            return None
        span = visible[1] - visible[0] + 1
        if direction > 0:
            if span <= chart.cols:
                return "one step per column: zoomed in all the way"
            new_span = max(chart.cols, span // 4)
        else:
            if visible == (first, last) or span >= last - first + 1:
                return "the whole session is on screen"
            new_span = min(last - first + 1, span * 4)
        center = chart.cursor_step() if chart.cursor_step() is not None else (visible[0] + visible[1]) // 2
        lo = max(first, center - new_span // 2)
        hi = min(last, lo + new_span - 1)
        lo = max(first, hi - new_span + 1)
        return lo, hi, center

    def on_edge_reached(self, message: EdgeReached) -> None:
        """Scrolling past a zoomed window: the next window, half (a step) or all (a page) of a width on."""
        if self.zoom is None or self.record is None or self.record.step_summary is None:
            return
        summary = self.record.step_summary
        lo, hi = self.zoom
        span = hi - lo + 1
        shift = (span // 2 if abs(message.direction) == 1 else span) * (1 if message.direction > 0 else -1)
        new_lo = max(summary.first_step, min(lo + shift, summary.last_step - span + 1))
        if new_lo == lo:
            return
        chart = self.query_one(TimelineChart)
        keep = chart.cursor_step()
        target = (keep + (1 if message.direction > 0 else -1) * (span // chart.cols or 1)) if keep is not None else None
        self._travel = shift
        self._zoom_to(new_lo, new_lo + span - 1, target)

    def _zoom_to(self, lo: int, hi: int, keep_step: int | None = None) -> None:
        """Show steps ``lo..hi`` in about one bucket per column: merged from the loaded summary
        (``views.timeline.window``) when it holds that window exactly, else read from the store for
        that window (``Store.step_summary(first_step=, last_step=)``) in a thread."""
        summary = self.record.step_summary
        chart = self.query_one(TimelineChart)
        cols = chart.cols
        whole = lo <= summary.first_step and hi >= summary.last_step
        self.zoom = None if whole and bucket_width(lo, hi, cols) <= summary.width else (lo, hi)
        # window() is None where the loaded summary cannot say the window exactly (finer buckets, its
        # step count, marks cut at MARK_LIMIT before it ...): then the store is read
        win = window(summary, lo, hi, cols) if bucket_width(lo, hi, cols) >= summary.width else None
        if win is not None:
            self._show_window(win, keep_step)
        elif not self.app.db_path:
            self.app.notify("this window needs the session's file, which is not open", timeout=3)
        elif (key := self._window_key(lo, hi, cols)) in self._windows:  # read before (or ahead): no SQL
            self._show_window(self._windows[key], keep_step)
        else:
            self._fetch_window(lo, hi, cols, keep_step, key)

    def _window_key(self, lo: int, hi: int, cols: int) -> tuple:
        """A window read from the store is valid as long as the summary it was read for (--follow
        extends the summary: a new last rowid)."""
        return lo, hi, cols, self.record.step_summary.last_rowid

    def _remember(self, key: tuple, win: StepSummary) -> None:
        self._reading.discard(key)
        if key[3] != self.record.step_summary.last_rowid:
            self._windows.clear()  # steps came in since: every window read before is stale
            return
        self._windows.pop(key, None)
        self._windows[key] = win
        while len(self._windows) > WINDOWS_KEPT:
            del self._windows[next(iter(self._windows))]

    def _read_window(self, lo: int, hi: int, cols: int) -> StepSummary:
        from .data import open_store

        with open_store(self.app.db_path) as store:
            return store.step_summary(self.record.session.id, self.record.processes, max_points=cols, first_step=lo,
                                      last_step=hi)

    @work(thread=True, exclusive=True, group="timeline-window")
    def _fetch_window(self, lo: int, hi: int, cols: int, keep_step: int | None, key: tuple) -> None:
        win = self._read_window(lo, hi, cols)
        self.app.call_from_thread(self._remember, key, win)
        self.app.call_from_thread(self._show_window, win, keep_step)

    def _read_ahead(self) -> None:
        """A zoomed window is on screen: read the windows the next keys most likely show, in the
        background -- the next one in the direction of scrolling, the one behind, ``+``'s around the
        cursor -- so that scrolling on and zooming in show them without a wait."""
        summary = self.record.step_summary
        lo, hi = self.zoom
        span = hi - lo + 1
        shift = getattr(self, "_travel", span // 2) or span // 2
        wanted = []
        for step in (shift, -shift):
            a = max(summary.first_step, min(lo + step, summary.last_step - span + 1))
            if a != lo:
                wanted.append((a, a + span - 1))
        target = self._zoom_target(1)
        if isinstance(target, tuple):
            wanted.insert(1, target[:2])
        cols = self.query_one(TimelineChart).cols
        todo = [(a, b, key) for a, b in wanted if (key := self._window_key(a, b, cols)) not in self._windows
                and key not in self._reading and window(summary, a, b, cols) is None]
        if todo:
            self._reading.update(key for _, _, key in todo)
            self._fetch_ahead(todo, cols)

    @work(thread=True, exclusive=True, group="timeline-ahead")
    def _fetch_ahead(self, todo: list[tuple], cols: int) -> None:
        worker = get_current_worker()
        for lo, hi, key in todo:
            win = None
            if not worker.is_cancelled:  # a newer window's reads replace these
                try:
                    win = self._read_window(lo, hi, cols)
                except Exception:  # noqa: BLE001 - only a read ahead: the window is read when it is shown
                    win = None
            if win is None:
                self.app.call_from_thread(self._reading.discard, key)
            else:
                self.app.call_from_thread(self._remember, key, win)

    def _show_window(self, win: StepSummary, keep_step: int | None) -> None:
        if self.record is None:
            return
        chart = self.query_one(TimelineChart)
        chart.windowed = self.zoom is not None
        following = chart.follow_end
        vm = timeline(dataclasses.replace(self.record, step_summary=win))
        chart.follow_end = following and keep_step is None
        self._set(vm)
        if keep_step is not None:
            chart.goto_step(min(max(keep_step, win.first_step or 0), win.last_step or 0))
        if self.zoom is not None and self.app.db_path:
            self._read_ahead()

    def select(self, anchor) -> bool:
        chart = self.query_one(TimelineChart)
        chart.focus()
        try:
            step = int(anchor.ref)
        except ValueError:
            return False
        if not chart.goto_step(step):
            self.app.notify(f"step {step} is not in the timeline", timeout=4)
            return False
        return True


__all__ = ["TimelineChart", "TimelinePane", "chart_lines", "cursor_text", "limits_text"]
