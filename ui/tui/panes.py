"""The five tabs of a session and its header bar. Each pane takes the record, asks
``vllm_diag.views`` for its view model and draws it with ``render``; lists are OptionLists (one
line or block per option, rendered lazily), so the mouse and keys work the same everywhere."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from vllm_diag.errors import DiagError
from vllm_diag.views.primitives import Anchor, known

from . import render
from .timeline import TimelinePane

# ------------------------------------------------------------------------------------ header


class HeaderBar(Static):
    """One or two lines: kind, status, vLLM, GPU, model; in --follow the live step count."""

    def on_mount(self) -> None:
        self.vm = None
        self.live_text: str | None = None
        self.new_steps = 0

    def loading_text(self, sid: str) -> None:
        self.update(Text(f"loading session {sid} ...", style="dim"))

    def error_text(self, text: str) -> None:
        self.update(Text(text, style="bold red"))

    def show(self, vm) -> None:
        self.vm = vm
        self._draw()

    def live(self, steps: int) -> None:
        self.new_steps += steps
        self.live_text = f"● following: +{self.new_steps:,} steps"
        self._draw()

    def status(self, status: str) -> None:
        self.live_text = f"● following: session {status}"
        self._draw()

    def _draw(self) -> None:
        if self.vm is not None:
            live = self.live_text if self.app.follow else None
            if self.app.follow and live is None:
                live = "● following"
            self.update(render.header_line(self.vm, live))


# ------------------------------------------------------------------------------------ findings


class FindingsPane(Vertical):
    """The numbered findings (and, where no finding explains them, the recorded errors); the
    selected one in full below; enter jumps to the picture it is anchored to."""

    BINDINGS = [Binding("enter", "jump", "Show in picture", show=True)]
    DEFAULT_CSS = """
    FindingsPane #finding-list { height: auto; max-height: 40%; min-height: 3; border: none; }
    FindingsPane #finding-scroll { height: 1fr; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def compose(self) -> ComposeResult:
        yield OptionList(id="finding-list", classes="picture")
        with VerticalScroll(id="finding-scroll"):
            yield Static(id="finding-detail")

    def on_mount(self) -> None:
        self.vm = None
        self.header = None
        self.entries: dict[str, object] = {}

    def show(self, vm, header) -> None:
        self.header = header
        self.vm = vm
        self.entries = {}
        options: list[Option] = []
        for f in self.vm.items:
            self.entries[f"f{f.number}"] = f
            options.append(Option(render.finding_label(f), id=f"f{f.number}"))
        # errors no finding explains (a recorded crash before any rule ran on it), unnumbered, anchored
        for i, e in enumerate(self.vm.unexplained):
            self.entries[f"e{i}"] = e
            options.append(Option(render.error_label(e), id=f"e{i}"))
        olist = self.query_one("#finding-list", OptionList)
        keep = olist.highlighted_option.id if olist.highlighted_option is not None else None
        olist.clear_options()
        if options:
            olist.add_options(options)
            olist.highlighted = next((i for i, o in enumerate(options) if o.id == keep), 0)
        else:
            self._detail_empty()

    def _detail_empty(self) -> None:
        text = Text(self.vm.empty_text + "\n\n", style="bold")
        text.append_text(render.header_detail(self.header))
        self.query_one("#finding-detail", Static).update(text)

    @on(OptionList.OptionHighlighted, "#finding-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        entry = self.entries.get(event.option.id)
        detail = self.query_one("#finding-detail", Static)
        if entry is None:
            return
        if event.option.id.startswith("f"):
            detail.update(render.finding_detail(entry))
        else:  # the header's record of the same error carries its notes and numbers
            same = next((e for e in self.header.errors
                         if e.exc_type == entry.exc_type and e.message == entry.message), None)
            detail.update(render.error_detail(entry, same))
        self.query_one("#finding-scroll").scroll_home(animate=False)

    @on(OptionList.OptionSelected, "#finding-list")
    def _selected(self, _event: OptionList.OptionSelected) -> None:
        self.action_jump()

    def selected(self):
        olist = self.query_one("#finding-list", OptionList)
        opt = olist.highlighted_option
        return self.entries.get(opt.id) if opt is not None else None

    def action_jump(self) -> None:
        entry = self.selected()
        anchors = getattr(entry, "anchors", ())
        if not anchors:
            self.app.notify("this finding points at no picture", timeout=4)
            return
        self.screen.jump_to(anchors[0])

    def select_first(self) -> None:
        """Highlight the first error finding (or recorded error) and focus the list."""
        olist = self.query_one("#finding-list", OptionList)
        if not olist.option_count:
            return
        index = 0
        if self.vm is not None:
            for i, f in enumerate(self.vm.items):
                if f.severity == "error":
                    index = i
                    break
        olist.highlighted = index
        olist.focus()


# ------------------------------------------------------------------------------------ pictures


class PicturePane(Vertical):
    """A picture drawn from one view model into an OptionList (``LIST_ID``): redrawn on resize, and
    ``select(anchor)`` moves to the option the anchor names (``anchor_to_option``, filled by ``_draw``)."""

    LIST_ID = ""
    PICTURE = ""

    def on_mount(self) -> None:
        self.vm = None
        self.anchor_to_option: dict[str, str] = {}
        self._width = 0

    def show(self, vm) -> None:
        self.vm = vm
        self._draw()

    def on_resize(self) -> None:
        if self.vm is not None and self.size.width != self._width:
            self._draw()

    def _draw(self) -> None:
        raise NotImplementedError

    def _fallback_option(self, anchor: Anchor) -> str | None:
        """The option for an anchor that names no option of its own (none by default)."""
        return None

    def has(self, anchor: Anchor) -> bool:
        return anchor.key in self.anchor_to_option

    def select(self, anchor: Anchor) -> bool:
        oid = self.anchor_to_option.get(anchor.key) or self._fallback_option(anchor)
        if oid is None:
            self.app.notify(f"{anchor.key} is not in the {self.PICTURE}", timeout=4)
            return False
        olist = self.query_one(f"#{self.LIST_ID}", OptionList)
        olist.highlighted = olist.get_option_index(oid)
        olist.focus()
        return True


# ------------------------------------------------------------------------------------ page map


class PageMapPane(PicturePane):
    """Per side (recorded / predicted) and KV-cache group, each layer's page as a bar against the
    largest page; padding ``▒``; the layer that breaks unification marked ``✗`` with its numbers."""

    DEFAULT_CSS = """
    PageMapPane #page-legend { height: 1; }
    PageMapPane #page-list { height: 1fr; border: none; }
    """

    def compose(self) -> ComposeResult:
        yield Static(render.page_legend(), id="page-legend")
        yield OptionList(id="page-list", classes="picture")

    LIST_ID = "page-list"
    PICTURE = "page map"

    def _draw(self) -> None:
        olist = self.query_one("#page-list", OptionList)
        width = max(40, (olist.size.width or self.size.width or 80) - 2)
        self._width = self.size.width
        keep = olist.highlighted_option.id if olist.highlighted_option is not None else None
        olist.clear_options()
        self.anchor_to_option = {}
        vm = self.vm
        if vm.missing is not None and not vm.sides:
            olist.add_option(Option(Text(str(vm.missing), style="italic"), disabled=True))
            return
        options: list[Option] = []
        first_marked = None
        for si, side in enumerate(vm.sides):
            options.append(Option(render.page_side_title(side), disabled=True))
            last_group = object()
            for ri, run in enumerate(side.runs):
                row = side.rows[run.rows[0]]
                if row.group != last_group:
                    last_group = row.group
                    options.append(Option(render.page_group_title(side, row.group), disabled=True))
                oid = f"s{si}r{ri}"
                for idx in run.rows:
                    self.anchor_to_option.setdefault(side.rows[idx].anchor.key, oid)
                options.append(Option(render.page_run_line(side, run, width), id=oid))
                if row.marked and first_marked is None:
                    first_marked = oid
        if vm.diffs:
            text = Text(f"predicted vs recorded: {len(vm.diffs)} of {vm.compared} layers differ\n", style="bold")
            for d in vm.diffs:
                text.append(f"  {d.layer}: predicted {d.predicted} B, recorded {d.recorded} B\n")
            options.append(Option(text, disabled=True))
        olist.add_options(options)
        ids = [o.id for o in options]
        target = keep if keep is not None and keep in ids else first_marked
        if target is not None:
            olist.highlighted = ids.index(target)
        else:
            olist.highlighted = next((i for i, o in enumerate(options) if not o.disabled), None)

    def _fallback_option(self, anchor: Anchor) -> str | None:
        if anchor.kind != "group":
            return None
        return next((o for k, o in self.anchor_to_option.items() if self._group_of(k) == anchor.ref), None)  # its first row

    def _group_of(self, key: str) -> str | None:
        layer = key.partition(":")[2]
        for side in self.vm.sides:
            for r in side.rows:
                if r.layer == layer and known(r.group):
                    return str(r.group)
        return None


# ------------------------------------------------------------------------------------ state index


class StateIndexPane(PicturePane):
    """Per KV-cache group: the block table (rows × columns and its derivation) against each
    builder's state-index buffer; a grid of request slots × columns with the mismatched column ✗."""

    DEFAULT_CSS = """
    StateIndexPane #state-source { height: auto; max-height: 2; padding: 0 1; }
    StateIndexPane #state-list { height: 1fr; border: none; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="state-source", classes="muted")
        yield OptionList(id="state-list", classes="picture")

    LIST_ID = "state-list"
    PICTURE = "state-index view"

    def _draw(self) -> None:
        vm = self.vm
        olist = self.query_one("#state-list", OptionList)
        width = max(40, (olist.size.width or self.size.width or 80) - 2)
        self._width = self.size.width
        source = Text("source: ", style="dim")
        source.append(vm.source, style="dim")
        self.query_one("#state-source", Static).update(source)
        keep = olist.highlighted_option.id if olist.highlighted_option is not None else None
        olist.clear_options()
        self.anchor_to_option = {}
        if not vm.groups:
            olist.add_option(Option(Text(str(vm.missing or "no block tables"), style="italic"), disabled=True))
            return
        options = []
        first_marked = None
        for i, g in enumerate(vm.groups):
            text = render.state_group_title(g)
            text.append("\n")
            if g.cells:  # the picture first: it fits 80x24 above the derivations
                text.append_text(render.state_grid(g, width))
            text.append_text(render.state_derivations(g))
            oid = f"g{i}"
            self.anchor_to_option[g.anchor.key] = oid
            for a in g.marked_anchors:
                self.anchor_to_option[a.key] = oid
            options.append(Option(text, id=oid))
            if g.mismatch is not None and first_marked is None:
                first_marked = oid
        options.append(Option(render.state_legend(), disabled=True))
        olist.add_options(options)
        ids = [o.id for o in options]
        target = keep if keep is not None and keep in ids else (first_marked or "g0")
        olist.highlighted = ids.index(target)


# ------------------------------------------------------------------------------------ suggestions


class SuggestionsPane(Vertical):
    """Every suggestion, numbered as ``suggest --apply N``: the diff of the user's command, the YAML,
    the trade-off, whether it was re-checked. ``w`` writes it to new files, ``c`` copies the command."""

    BINDINGS = [
        Binding("w", "write", "Write files"),
        Binding("c", "copy", "Copy command"),
    ]
    DEFAULT_CSS = """
    SuggestionsPane #suggestion-list { height: auto; max-height: 35%; min-height: 3; border: none; }
    SuggestionsPane #suggestion-scroll { height: 1fr; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def compose(self) -> ComposeResult:
        yield OptionList(id="suggestion-list", classes="picture")
        with VerticalScroll(id="suggestion-scroll"):
            yield Static(id="suggestion-detail")

    def on_mount(self) -> None:
        self.vm = None
        self.record = None

    def show(self, vm, record) -> None:
        self.record = record
        self.vm = vm
        olist = self.query_one("#suggestion-list", OptionList)
        keep = olist.highlighted
        olist.clear_options()
        if not self.vm.suggestions:
            olist.add_option(Option(Text("no suggestions stored for this session", style="italic"), disabled=True))
            self.query_one("#suggestion-detail", Static).update(Text(
                "Suggestions are made by `check` and `analyze` for their findings; "
                "this session has none.", style="dim"))
            return
        olist.add_options([Option(render.suggestion_label(s), id=f"s{s.number}") for s in self.vm.suggestions])
        olist.highlighted = keep if keep is not None and keep < olist.option_count else 0

    @on(OptionList.OptionHighlighted, "#suggestion-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        s = self.current()
        if s is not None:
            self.query_one("#suggestion-detail", Static).update(render.suggestion_detail(s))

    def current(self):
        if self.vm is None:
            return None
        opt = self.query_one("#suggestion-list", OptionList).highlighted_option
        if opt is None or opt.id is None:
            return None
        return self.vm.suggestion(int(opt.id[1:]))

    def action_write(self) -> None:
        from .screens import ConfirmScreen

        s = self.current()
        if s is None:
            self.app.notify("no suggestion selected", severity="warning", timeout=4)
            return
        stem = f"vllm-diag-{self.record.session.id}-s{s.number}"
        out = self.app.out_dir
        question = f"Write suggestion {s.number} to new files?"
        detail = f"{out / (stem + '.sh')}\n{out / (stem + '.yaml')}\n(never overwrites: an existing file stops it)"

        def done(yes: bool | None) -> None:
            if yes:
                self.write(s.number, stem)

        self.app.push_screen(ConfirmScreen(question, detail), done)

    def write(self, number: int, stem: str) -> None:
        """Suggestion N to ``<stem>.sh`` and ``<stem>.yaml``: ``vllm_diag.api.apply_suggestion``, which
        writes through ``vllm_diag.suggest.apply_suggestion`` like ``vllm-diag suggest --apply N``."""
        from vllm_diag.api import apply_suggestion

        from .messages import SuggestionApplied

        try:
            paths = apply_suggestion(self.record, number, self.app.out_dir)
        except DiagError as exc:
            self.app.notify(str(exc), title="not written", severity="error", timeout=10)
            return
        self.app.notify("wrote " + ", ".join(str(p) for p in paths), title=f"suggestion {number}", timeout=8)
        self.post_message(SuggestionApplied(number, [str(p) for p in paths]))

    def action_copy(self) -> None:
        from .screens import ConfirmScreen

        s = self.current()
        if s is None or not s.command:
            self.app.notify("this suggestion has no command to copy", severity="warning", timeout=4)
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.app.copy_to_clipboard(s.command)
                self.app.notify("copied to the clipboard (OSC 52: your terminal must allow it)",
                                title=f"suggestion {s.number}", timeout=6)

        self.app.push_screen(ConfirmScreen(f"Copy the command of suggestion {s.number}?", s.command), done)


__all__ = ["FindingsPane", "HeaderBar", "PageMapPane", "StateIndexPane", "SuggestionsPane", "TimelinePane"]
