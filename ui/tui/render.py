"""View model -> Rich ``Text``: how each picture looks in a terminal. Pure functions (no Textual),
so tests can check them line by line.

What is shown, numbered, marked or cut is decided by ``vllm_diag.views``; this module only picks
glyphs, colours and layout for a given width. Colours are named ANSI colours (red, yellow, green,
cyan, magenta), which every terminal has, so nothing depends on true colour; marks also carry a
glyph (``✗``, ``▲``, ``◆``), never colour alone.
"""

from __future__ import annotations

from rich.text import Text

from vllm_diag.views.primitives import Missing, fmt, fmt_bytes, known

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
SEVERITY_GLYPH = {"error": "✗", "warning": "!", "info": "i"}
STATUS_STYLE = {"failed": "bold red", "ok": "green", "running": "yellow"}
MARK = "bold red"
DRAFT = "bright_blue"
BAR_FULL, BAR_PAD, BAR_EMPTY = "█", "▒", "·"


def _v(value) -> str:
    return fmt(value)


def _missing(value) -> Text:
    return Text(str(value), style="italic dim") if isinstance(value, Missing) else Text(fmt(value))


def clip(text: str, width: int) -> str:
    """Fit one cell of a fixed-width column: ``…`` in the middle keeps both ends of a value."""
    if width <= 1 or len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def clip_name(name: str, width: int) -> str:
    """Fit a layer name: keep its end (the layer number and kind), drop the front first. A run's
    label (``model.layers.N.linear_attn, N in 0-2,4-6 (36 layers)``) keeps its template and count
    and gives up the middle of its ranges."""
    if len(name) <= width:
        return name
    head, sep, rest = name.partition(", N in ")
    if sep and rest.endswith(")") and " (" in rest:
        ranges, _, count = rest.rpartition(" (")
        fixed = len(head) + len(sep) + len(count) + 2
        if fixed + 5 <= width:
            return f"{head}{sep}{clip(ranges, width - fixed)} ({count}"
        name = f"{head} ({count}"
        if len(name) <= width:
            return name
    for prefix in ("model.", "draft_model.model.", "draft_model."):
        if name.startswith(prefix) and len(name) - len(prefix) + 1 <= width:
            return "…" + name[len(prefix):]
    return "…" + name[len(name) - width + 1:]


# ------------------------------------------------------------------------------------ header


def header_line(vm, live: str | None = None) -> Text:
    """``engine failed · ● following · <the header's facts in the view's order>`` (the bar shows
    the first two lines; every fact is in the findings tab when the session has no findings)."""
    text = Text()
    text.append(vm.kind, style="bold")
    text.append(" ")
    text.append(vm.status, style=STATUS_STYLE.get(vm.status, ""))
    if live:
        text.append("  ·  ", style="dim")
        text.append(live, style="bold green")
    for f in vm.facts:
        text.append("  ·  ", style="dim")
        if f.label != "model":
            text.append(f"{f.label} ", style="dim")
        text.append_text(_missing(f.value))
    return text


def header_detail(vm) -> Text:
    """Every fact of the header (the findings tab shows it when a session has no findings)."""
    text = Text()
    text.append(f"session {vm.session_id}", style="bold")
    text.append(f"  ({vm.kind}, {vm.status}, started {vm.started}; state {vm.state_source})\n", style="dim")
    for f in vm.facts:
        text.append(f"{f.label:>9}  ", style="bold")
        text.append_text(_missing(f.value))
        text.append("\n")
    for note in vm.notes:
        text.append("     note  ", style="bold")
        text.append(note + "\n", style="dim")
    return text


# ------------------------------------------------------------------------------------ findings


def finding_label(f) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{f.number:>2} ", style="bold")
    text.append(SEVERITY_GLYPH.get(f.severity, "?") + " ", style=SEVERITY_STYLE.get(f.severity, ""))
    text.append(f.title)
    return text


def error_label(e) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" ✗ ", style=MARK)
    text.append(f"{e.exc_type}: ", style="bold red")
    text.append(e.message.splitlines()[0] if e.message else "")
    text.append(f"  [{e.phase}]", style="dim")
    return text


def finding_detail(f) -> Text:
    text = Text()
    text.append(f"#{f.number} ", style="bold")
    text.append(f.severity.upper(), style=SEVERITY_STYLE.get(f.severity, ""))
    text.append(f"  {f.title}\n", style="bold")
    text.append(f"rule {f.rule} · {f.category}", style="dim")
    if f.versions:
        text.append(f" · vLLM {f.versions}", style="dim")
    if f.fixed_in:
        text.append(f" · fixed in {f.fixed_in}", style="dim")
    text.append("\n")
    if f.confidence:
        text.append("confidence ", style="dim")
        text.append(f.confidence, style={"high": "green", "medium": "yellow", "low": "red"}.get(f.confidence, ""))
        if f.basis:
            text.append(f": {f.basis}", style="dim")
        text.append("\n")
    if f.message:
        text.append("\n" + f.message.strip() + "\n")
    if f.comparisons:
        text.append("\nexpected vs actual\n", style="bold")
        for c in f.comparisons:
            text.append(f"  {c.name}: ", style="bold")
            unit = f" {c.unit}" if c.unit else ""
            text.append("expected ")
            text.append(f"{_v(c.expected)}{unit}", style="green")
            text.append(", actual ")
            text.append(f"{_v(c.actual)}{unit}", style=MARK)
            text.append("\n")
    if f.evidence:
        text.append("\nevidence\n", style="bold")
        for e in f.evidence:
            if e.where:
                text.append(f"  {e.where:>10}  ", style="cyan")
            else:
                text.append("  " + " " * 10 + "  ")
            text.append(e.text.strip() + "\n")
        if f.evidence_more:
            text.append(f"  ... {f.evidence_more} more evidence line(s)\n", style="dim")
    if f.missing_evidence:
        text.append("\nnot known\n", style="bold")
        for m in f.missing_evidence:
            text.append(f"  {m}\n", style="italic dim")
    if f.anchors:
        text.append("\nenter: show ", style="dim")
        text.append(", ".join(a.key for a in f.anchors[:4]), style="dim")
        if len(f.anchors) > 4:
            text.append(f" (+{len(f.anchors) - 4})", style="dim")
        text.append("\n")
    if f.suggestions:
        text.append(f"\n{len(f.suggestions)} suggestion(s): ", style="bold")
        text.append(", ".join(f"#{s.number} {s.title}" for s in f.suggestions))
        text.append("  (tab 5)\n", style="dim")
    return text


def error_detail(e, recorded=None) -> Text:
    """An error no finding explains (``ErrorEntryVM``), with the notes and numbers of the header's
    record of it (``ErrorVM``) when there is one."""
    text = Text()
    text.append(f"{e.exc_type}", style="bold red")
    process = getattr(recorded, "process", None)
    text.append(f"  ({e.phase}{', ' + process if process else ''}; no finding explains it yet)\n", style="dim")
    text.append(e.message.strip() + "\n")
    if e.location:
        text.append(f"  at {e.location}\n", style="cyan")
    for n in getattr(recorded, "notes", ()):
        text.append(f"  note: {n}\n", style="yellow")
    numbers = getattr(recorded, "numbers", ())
    if numbers:
        text.append("\nnumbers\n", style="bold")
        for k, v in numbers:
            text.append(f"  {k} = {clip(_v(v), 200)}\n")
    if e.anchors:
        text.append("\nenter: show ", style="dim")
        text.append(", ".join(a.key for a in e.anchors[:4]), style="dim")
        text.append("\n")
    return text


# ------------------------------------------------------------------------------------ page map


def page_bar(row, max_page: int | None, width: int) -> Text:
    """The layer's page against the largest (unified) page: the page ``█``, the part of it that is
    the view's ``padding_bytes`` ``▒``, the rest of the largest page ``·``. Lengths are
    proportional; a page too small to see gets one cell."""
    text = Text()
    page = row.page_after if known(row.page_after) else row.page_before
    if not (max_page and page):
        text.append(BAR_EMPTY * width, style="dim")
        return text
    full = max(1, round(width * min(page, max_page) / max_page))
    pad = round(width * min(row.padding_bytes or 0, page) / max_page)
    raw = max(1, full - pad) if full > pad else full
    style = MARK if row.marked else (DRAFT if row.is_draft else "green")
    text.append(BAR_FULL * raw, style=style)
    text.append(BAR_PAD * (full - raw), style="yellow" if not row.marked else MARK)
    text.append(BAR_EMPTY * (width - full), style="dim")
    return text


def page_side_title(side) -> Text:
    text = Text()
    text.append(side.title, style="bold underline")
    if side.max_page:
        text.append(f"  largest page {side.max_page:,} B", style="bold")
        if side.max_layer:
            text.append(f" ({side.max_layer})", style="dim")
    if side.after_missing is not None:
        text.append("\n  after unification: ", style="dim")
        text.append(str(side.after_missing), style="italic red" if "failed" in side.after_missing.reason else "italic dim")
    return text


def page_group_title(side, group_index) -> Text:
    text = Text()
    g = next((g for g in side.groups if g.group_index == group_index), None)
    if g is not None:
        text.append(f"group {g.group_index}", style="bold")
        text.append(f"  {g.spec_type}", style=DRAFT if g.is_draft else "")
        text.append(f"  {'draft' if g.is_draft else 'main'}", style=DRAFT if g.is_draft else "dim")
        text.append(f"  block {fmt(g.block_size)}  page {fmt_bytes(g.page_bytes)}  {g.layers} layer(s)", style="dim")
    elif isinstance(group_index, Missing):
        text.append("no group  ", style="bold")
        text.append(str(group_index), style="italic dim")
    else:
        text.append(f"group {group_index}", style="bold")
    return text


def page_run_line(side, run, width: int) -> Text:
    """One run of identical layers (or one marked layer): name, bar, page, padding, ratio."""
    row = side.rows[run.rows[0]]
    longest = max((len(r.label) for r in side.runs), default=10)
    name_w = max(14, min(longest, int(width * 0.42)))
    bar_w = max(8, width - name_w - 32)
    text = Text()
    text.append("✗ " if row.marked else ("◆ " if row.is_draft else "  "), style=MARK if row.marked else DRAFT)
    text.append(clip_name(run.label, name_w).ljust(name_w), style=MARK if row.marked else (DRAFT if row.is_draft else ""))
    text.append(" ")
    text.append_text(page_bar(row, side.max_page, bar_w))
    text.append(" ")
    page = row.page_after if known(row.page_after) else row.page_before
    nums = f"{fmt(page)} B" if page else "?"
    if row.page_before and known(row.page_after) and row.page_after != row.page_before:
        nums = f"{row.page_before:,}→{row.page_after:,} B"
    text.append(nums.rjust(22), style=MARK if row.marked else "")
    ratio = f"{row.ratio_to_max:.2f}" if isinstance(row.ratio_to_max, float) else "?"
    text.append(f" {ratio:>5}", style="dim")
    indent = "    "
    if row.padding_bytes:
        text.append(f"\n{indent}padding {row.padding_bytes:,} B ({row.padding_pct:g} % of {row.page_raw:,} B)",
                    style="yellow")
    if row.marked:
        text.append(f"\n{indent}")
        if row.expected is not None and row.actual is not None:
            text.append(f"expected {row.expected:,} B, actual {row.actual:,} B", style=MARK)
        if row.mark_reason:
            text.append(f"\n{indent}{row.mark_reason}", style="red")
    return text


def page_legend() -> Text:
    text = Text("  ", style="dim")
    text.append(BAR_FULL, style="green")
    text.append(" page  ", style="dim")
    text.append(BAR_PAD, style="yellow")
    text.append(" padding  ", style="dim")
    text.append(BAR_EMPTY + " up to the largest page  ", style="dim")
    text.append("◆ draft  ", style=DRAFT)
    text.append("✗ breaks unification", style=MARK)
    return text


# ------------------------------------------------------------------------------------ state index


def state_group_title(g) -> Text:
    text = Text()
    gi = g.group_index if known(g.group_index) else "?"
    text.append(f"group {gi}", style="bold")
    text.append("  ")
    text.append_text(_missing(g.spec_type))
    text.append("  block table ")
    text.append(f"{fmt(g.rows)} rows × {fmt(g.columns)} columns", style="bold")
    if g.mismatch is not None:
        t, b = g.mismatch
        text.append(f"   ✗ {t} vs {b} columns", style=MARK)
    return text


def state_derivations(g) -> Text:
    text = Text()
    text.append("  block table  ", style="bold")
    text.append_text(_missing(g.derivation))
    text.append(f"  [{g.derivation_source}]\n", style="dim")
    for b in g.buffers:
        style = MARK if b.compared and b.matches is False else ""
        text.append(f"  {'✗' if style else ' '} ", style=MARK)
        text.append(f"{b.name}", style=style or "bold")
        shape = "×".join(str(x) for x in b.shape) if known(b.shape) else str(b.shape)
        text.append(f" [{shape}]", style="dim")
        text.append(" of ", style="dim")
        text.append_text(_missing(b.builder))
        text.append("\n      ")
        text.append_text(_missing(b.derivation))
        text.append("\n")
    return text


def state_grid(g, max_width: int) -> Text:
    """One row per request slot, one cell per block-table column: ``■`` in both, ``✗`` in only one
    (the mismatched column). Columns and slots come from the view (it cuts wide tables to the last
    columns and draws ``slots_shown`` slots)."""
    text = Text()
    if not g.cells:
        return text
    cells = list(g.cells)
    label_w = 9
    cell_w = 3 if label_w + 3 * len(cells) <= max_width else 2
    if label_w + cell_w * len(cells) > max_width:  # keep the last columns: the mismatch is at the end
        cells = cells[-max(1, (max_width - label_w) // cell_w):]
    text.append("col".rjust(label_w - 1) + " ", style="dim")
    if cells[0].index > 1:
        text.append("…", style="dim")
    for c in cells:
        text.append(str(c.index).rjust(cell_w)[-cell_w:], style=MARK if c.marked else "dim")
    text.append("\n")
    shown = g.slots_shown
    for r in range(shown):
        text.append(f"slot {r}".rjust(label_w - 1) + " ", style="dim")
        if cells[0].index > 1:
            text.append(" ")
        for c in cells:
            if c.marked:
                glyph, style = "✗", MARK
            elif c.in_table and c.in_buffer:
                glyph, style = "■", "green"
            elif c.in_table:
                glyph, style = "□", "cyan"
            else:
                glyph, style = "·", "dim"
            text.append(glyph.rjust(cell_w), style=style)
        text.append("\n")
    if g.slots_more:
        text.append(f"{'':{label_w}}... {g.slots_more} more slot(s), all alike\n", style="dim")
    return text


def state_legend() -> Text:
    text = Text("  ", style="dim")
    text.append("■", style="green")
    text.append(" block table and buffer  ", style="dim")
    text.append("□", style="cyan")
    text.append(" block table only  ", style="dim")
    text.append("✗", style=MARK)
    text.append(" the mismatched column", style="dim")
    return text


# ------------------------------------------------------------------------------------ suggestions


def suggestion_label(s) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{s.number:>2} ", style="bold")
    text.append("✓ " if s.verified else "? ", style="green" if s.verified else "yellow")
    text.append(s.title)
    text.append(f"  (finding {s.finding})", style="dim")
    return text


def suggestion_detail(s) -> Text:
    text = Text()
    text.append(f"suggestion {s.number}: ", style="bold")
    text.append(s.title + "\n", style="bold")
    text.append("re-checked: ", style="bold")
    if s.verified:
        text.append("yes, the failure is gone", style="green")
    else:
        text.append("not verified", style="yellow")
    if s.verification:
        text.append(f" ({s.verification})", style="dim")
    text.append("\ntrade-off: ", style="bold")
    text.append(s.tradeoff + "\n")
    if s.diff:
        text.append("\nyour command\n", style="bold")
        for line in s.diff:
            style = "green" if line.startswith("+") else ("red" if line.startswith("-") else "")
            text.append(f"  {line}\n", style=style)
    if s.yaml:
        text.append("\nvllm serve --config fragment\n", style="bold")
        for line in s.yaml.rstrip("\n").splitlines():
            text.append(f"  {line}\n", style="cyan")
    if s.llm_kwargs:
        text.append("\nLLM(...) keyword arguments\n", style="bold")
        text.append("  " + ", ".join(f"{k}={fmt(v)}" for k, v in s.llm_kwargs) + "\n")
    text.append("\nw: write to new files   c: copy the command", style="dim")
    return text
