"""Patch the user's own command: the suggestions' diff, ``--config`` YAML and ``LLM(...)`` kwargs.

``patch_command(cmd, changes) -> Patch`` applies ``Change(key, value)``s (value ``None`` removes) in
the user's notation: flags keep their spelling; a JSON-valued flag is edited in place (same spacing
and quoting); dotted forms stay dotted; new settings are appended as long flags (dotted when the
user already used dotted forms for that flag). Each flag form has one edit function below.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .flags import flag_table, long_flag
from .parse import ArgItem, ServeCommand, copy_value, parse_command
from .tokens import shell_quote

# normalised key -> (vLLM dest, path inside a JSON-valued flag)
KEY_LOCATIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "num_speculative_tokens": ("speculative_config", ("num_speculative_tokens",)),
    "speculative_method": ("speculative_config", ("method",)),
    "draft_model": ("speculative_config", ("model",)),
    "cudagraph_mode": ("compilation_config", ("cudagraph_mode",)),
    "cudagraph_capture_sizes": ("compilation_config", ("cudagraph_capture_sizes",)),
    "max_cudagraph_capture_size": ("compilation_config", ("max_cudagraph_capture_size",)),
}


@dataclass
class Patch:
    """Result of applying changes to a command: new text, minimal diff, YAML and LLM kwargs."""

    text: str
    diff: list[str]
    yaml: str
    llm_kwargs: dict[str, Any]
    command: ServeCommand


def patch_command(cmd: ServeCommand, changes: list[Any]) -> Patch:
    """Apply ``Change``s one after the other; the diff compares the original and final arguments."""
    base_dir = os.path.dirname(cmd.config_file) if cmd.config_file else None
    cur = cmd
    touched: dict[str, Any] = {}
    for ch in changes:
        edit = _Edits(cur)
        _apply_change(edit, ch.key, ch.value)
        touched.update(edit.touched)
        cur = parse_command(edit.render(), base_dir=base_dir)
    merged = cur.args()
    yaml_data: dict[str, Any] = {}
    llm_kwargs: dict[str, Any] = {}
    for dest in touched:
        if dest == "model":
            continue
        val = merged.get(dest)
        yaml_data[long_flag(dest)[2:]] = val
        llm_kwargs[dest] = val
    return Patch(text=cur.text, diff=_item_diff(cmd, cur), yaml=_yaml_fragment(yaml_data), llm_kwargs=llm_kwargs, command=cur)


# ------------------------------------------------------------------------------------------------
# Edits on one parsed command
# ------------------------------------------------------------------------------------------------


@dataclass
class _Edits:
    cmd: ServeCommand
    replaced: list[tuple[int, int, str]] = field(default_factory=list)  # token range [a, b) -> new raw text
    removed: set[int] = field(default_factory=set)  # indexes into cmd.items
    appended: list[str] = field(default_factory=list)
    touched: dict[str, Any] = field(default_factory=dict)  # dest -> new value

    def remove(self, item: ArgItem) -> None:
        self.removed.add(self.cmd.items.index(item))

    def replace(self, item: ArgItem, text: str) -> None:
        self.replaced.append((item.tokens[0], item.tokens[1], text))

    def render(self) -> str:
        return _apply_edits(self.cmd, self.replaced, self.removed, self.appended)


def _apply_change(edit: _Edits, key: str, value: Any) -> None:
    dest, path = KEY_LOCATIONS.get(key, (key, ()))
    if key in ("compilation_config", "speculative_config"):
        dest, path = key, ()
    flags, _ = flag_table()
    items = edit.cmd.find(dest)
    info = flags.get(dest, {"kind": "value", "options": [long_flag(dest)]})
    if path:
        _edit_json_key(edit, dest, path, value, items)
        return
    edit.touched[dest] = value
    if value is None:
        for it in items:
            edit.remove(it)
    elif info["kind"] in ("bool", "true", "false"):
        _edit_bool_flag(edit, dest, info, value, items)
    else:
        _edit_value_flag(edit, dest, info, value, items)


def _edit_bool_flag(edit: _Edits, dest: str, info: dict[str, Any], value: Any, items: list[ArgItem]) -> None:
    """``--flag`` / ``--no-flag`` (store_true flags can only be dropped to turn them off)."""
    spell = next((it.flag for it in reversed(items) if it.form == "bool" and it.flag), None)
    base = long_flag(dest) if spell is None else spell
    if base.startswith("--no-") and "--" + base[5:] in info["options"]:
        base = "--" + base[5:]
    if value:
        text: str | None = base
    elif info["kind"] == "bool":
        text = "--no-" + (base[2:] if base.startswith("--") else long_flag(dest)[2:])
    else:
        text = None
    if not items:
        if text is not None:
            edit.appended.append(text)
        return
    for it in items[:-1]:
        edit.remove(it)
    if text is None:
        edit.remove(items[-1])
    else:
        edit.replace(items[-1], text)


def _fmt_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _edit_value_flag(edit: _Edits, dest: str, info: dict[str, Any], value: Any, items: list[ArgItem]) -> None:
    """``--flag value`` / ``--flag=value`` / the positional model / ``nargs='+'`` lists."""
    rendered = _fmt_scalar(value)
    if isinstance(value, list) and info.get("nargs") in ("+", "*"):
        tokens = " ".join(shell_quote(str(v)) for v in value)
    else:
        tokens = shell_quote(rendered)
    if not items:
        edit.appended.append(f"{long_flag(dest)} {tokens}")
        return
    last = items[-1]
    if last.form == "positional":
        new_text = tokens
    elif last.form == "eq":
        new_text = f"{last.flag}={shell_quote(rendered)}"
    else:
        new_text = f"{last.flag} {tokens}"
    edit.replace(last, new_text)


def _edit_json_key(edit: _Edits, dest: str, path: tuple[str, ...], value: Any, items: list[ArgItem]) -> None:
    """A key inside a JSON-valued flag (speculative/compilation config), in the form the user used."""
    current = edit.cmd.args().get(dest)
    new_obj = copy_value(current) if isinstance(current, dict) else {}
    _set_path(new_obj, path, value)
    edit.touched[dest] = new_obj
    dotted = [it for it in items if it.form == "dotted"]
    json_items = [it for it in items if it.form in ("sep", "eq")]
    if dotted:
        _edit_dotted(edit, dest, path, value, dotted)
    elif json_items:
        _edit_json_text_flag(edit, path, value, json_items)
    elif value is not None or new_obj or current is not None:
        edit.appended.append(f"{long_flag(dest)} {shell_quote(json.dumps(new_obj, separators=(', ', ': ')))}")


def _edit_dotted(edit: _Edits, dest: str, path: tuple[str, ...], value: Any, dotted: list[ArgItem]) -> None:
    """``--speculative-config.num_speculative_tokens 2``: stays dotted."""
    cmd = edit.cmd
    same = [it for it in dotted if it.subkeys == path]
    if not same:
        if value is not None:
            flag0 = dotted[-1].flag or long_flag(dest)
            edit.appended.append(f"{flag0}.{'.'.join(path)} {shell_quote(_fmt_scalar(value))}")
        return
    for it in same[:-1]:
        edit.remove(it)
    it = same[-1]
    if value is None:
        edit.remove(it)
        return
    first = cmd.tokens[it.tokens[0]]
    flag_txt = first.raw(cmd.text).split("=", 1)[0]
    sep = "=" if "=" in first.value else " "
    edit.replace(it, f"{flag_txt}{sep}{shell_quote(_fmt_scalar(value))}")


def _edit_json_text_flag(edit: _Edits, path: tuple[str, ...], value: Any, json_items: list[ArgItem]) -> None:
    """``--speculative-config '{...}'``: the JSON text edited in place, quote style kept."""
    cmd = edit.cmd
    it = json_items[-1]
    for other in json_items[:-1]:
        edit.remove(other)
    new_raw = _edit_json_text(it.raw_value or "{}", path, it.value, value)
    vtok = cmd.tokens[it.tokens[1] - 1].raw(cmd.text)
    quote = '"' if it.form == "sep" and vtok.startswith('"') else "'"
    sep = "=" if it.form == "eq" else " "
    edit.replace(it, f"{it.flag}{sep}{shell_quote(new_raw, quote)}")


def _json_style(raw: str) -> tuple[str, str]:
    item_sep = ", " if re.search(r",\s", raw) else ","
    key_sep = ": " if re.search(r":\s", raw) else ":"
    return item_sep, key_sep


def _set_path(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = d
    for k in path[:-1]:
        node = node.setdefault(k, {})
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


_JSON_SCALAR = r'(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|true|false|null)'


def _edit_json_text(raw: str, path: tuple[str, ...], old_obj: Any, value: Any) -> str:
    """Change one key of a JSON text keeping the user's spacing; falls back to re-serialising."""
    if len(path) == 1 and isinstance(old_obj, dict) and path[0] in old_obj:
        key = path[0]
        m = re.compile(r'("%s"\s*:\s*)%s' % (re.escape(key), _JSON_SCALAR)).search(raw)
        if m and json.loads(m.group(2)) == old_obj[key]:
            if value is None:  # drop '"key": v' and one adjacent comma
                s, e = m.start(), m.end()
                after = re.match(r"\s*,\s*", raw[e:])
                if after:
                    new = raw[:s] + raw[e + after.end():]
                else:
                    before = re.search(r",\s*$", raw[:s])
                    new = raw[: before.start()] + raw[e:] if before else raw[:s] + raw[e:]
            else:
                new = raw[: m.start(2)] + json.dumps(value) + raw[m.end(2):]
            expect = dict(old_obj)
            _set_path(expect, path, value)
            try:
                if json.loads(new) == expect:
                    return new
            except json.JSONDecodeError:
                pass
    obj = copy_value(old_obj) if isinstance(old_obj, dict) else {}
    _set_path(obj, path, value)
    item_sep, key_sep = _json_style(raw)
    return json.dumps(obj, separators=(item_sep, key_sep))


# ------------------------------------------------------------------------------------------------
# Rendering: text, diff, YAML
# ------------------------------------------------------------------------------------------------


def _item_key(item: ArgItem) -> tuple:
    return (item.dest, item.subkeys if item.form == "dotted" else (), item.form == "positional")


def _item_diff(old: ServeCommand, new: ServeCommand) -> list[str]:
    """'-'/'+' lines for the arguments that differ between two commands (original order)."""
    def items(c: ServeCommand) -> dict[tuple, list[str]]:
        out: dict[tuple, list[str]] = {}
        for it in c.items:
            out.setdefault(_item_key(it), []).append(_collapse(c.item_text(it)))
        return out

    a, b = items(old), items(new)
    diff: list[str] = []
    for key, texts in a.items():
        if b.get(key) == texts:
            continue
        diff += [f"- {t}" for t in texts]
        diff += [f"+ {t}" for t in b.get(key, [])]
    for key, texts in b.items():
        if key not in a:
            diff += [f"+ {t}" for t in texts]
    return diff


def _collapse(text: str) -> str:
    return re.sub(r"\s*\\\r?\n\s*", " ", text).strip()


def _yaml_fragment(data: dict[str, Any]) -> str:
    import yaml  # ~20 ms: imported when a suggestion is rendered, not on every `check`

    lines = []
    keep = {k: v for k, v in data.items() if v is not None}
    if keep:
        lines.append(yaml.safe_dump(keep, sort_keys=False, default_flow_style=False).rstrip())
    for k, v in data.items():
        if v is None:
            lines.append(f"# remove the `{k}` key")
    return "\n".join(lines) + "\n"


def _apply_edits(cmd: ServeCommand, edits, removed: set[int], appended: list[str]) -> str:
    text = cmd.text
    spans: list[tuple[int, int, str]] = []
    for a, b, new in edits:
        spans.append((cmd.tokens[a].start, cmd.tokens[b - 1].end, new))
    for idx in removed:
        it = cmd.items[idx]
        a, b = it.tokens
        s, e = cmd.tokens[a].start, cmd.tokens[b - 1].end
        line_start = text.rfind("\n", 0, s) + 1
        line_end = text.find("\n", e)
        line_end = len(text) if line_end < 0 else line_end
        before, after = text[line_start:s], text[e:line_end]
        if before.strip() == "" and after.strip() in ("", "\\") and line_start > 0:
            # the item is alone on its line: drop the whole line
            if after.strip() == "":
                spans.append((line_start - 1, line_end, ""))
            else:
                spans.append((line_start, min(line_end + 1, len(text)), ""))
        else:
            ws = s
            while ws > 0 and text[ws - 1] in " \t":
                ws -= 1
            spans.append((ws, e, ""))
    for s, e, new in sorted(spans, key=lambda x: x[0], reverse=True):
        text = text[:s] + new + text[e:]
    text = text.rstrip()
    if text.endswith("\\"):
        text = text[:-1].rstrip()
    if appended:
        if cmd.multiline:
            indent = re.match(r"\s*", cmd.text.strip().splitlines()[-1]).group(0) or "  "
            for a in appended:
                text += " \\\n" + indent + a
        else:
            text += " " + " ".join(appended)
    return text
