"""Parse a ``vllm serve`` command line the way vLLM does -- without importing vLLM.

Accepted forms::

    vllm serve MODEL --flag value --flag=value --bool-flag --no-bool-flag ...
    python -m vllm.entrypoints.openai.api_server --model MODEL ...
    VAR=1 vllm serve MODEL \\
        --speculative-config '{"method": "mtp", "num_speculative_tokens": 2}' \\
        --speculative-config.num_speculative_tokens 2      # dotted form, merged like vLLM
    vllm serve MODEL --config serve.yaml                   # YAML keys = long flag names

``parse_command(text_or_argv)`` returns a :class:`ServeCommand` that keeps every original token with
its exact spelling and position, so a suggestion can patch the user's own command (same flag
spelling, JSON or dotted form as written) and show a minimal diff. ``ServeCommand.config()``
returns the normalised keys of ``vllm_diag.model.CONFIG_KEYS`` (``normalise.py``).

Values are never evaluated: JSON through ``json.loads``, YAML through ``yaml.safe_load``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .flags import flag_table
from .normalise import normalise_args
from .tokens import CommandError, Token, shell_quote, tokenize

API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")


@dataclass
class ArgItem:
    """One argument as the user wrote it."""

    dest: str  # vLLM's dest (snake_case), e.g. "speculative_config"; "model" for the positional
    value: Any  # parsed value: bool, int, float, str, dict/list (JSON), list (nargs='+')
    flag: str | None = None  # spelling used: "--speculative-config", "-sc", "--speculative_config"
    form: str = "sep"  # sep | eq | bool | dotted | positional | config
    subkeys: tuple[str, ...] = ()  # dotted form: ("num_speculative_tokens",)
    append: bool = False  # dotted form with '+'
    raw_value: str | None = None  # the value as typed (before JSON parsing)
    tokens: tuple[int, int] = (0, 0)  # token index range [start, end) in ServeCommand.tokens
    known: bool = True


@dataclass
class ServeCommand:
    text: str  # the command as given (argv lists are joined with shell quoting)
    tokens: list[Token]
    entry: str  # "serve" | "api_server" | "args"
    prefix_end: int  # index of the first token after "vllm serve" / "-m module"
    env: dict[str, str] = field(default_factory=dict)
    items: list[ArgItem] = field(default_factory=list)
    config_file: str | None = None
    config_items: list[ArgItem] = field(default_factory=list)  # from --config YAML (lower precedence)
    unknown_flags: list[str] = field(default_factory=list)

    # ----------------------------------------------------------------- values

    @property
    def multiline(self) -> bool:
        return "\n" in self.text.strip()

    def args(self) -> dict[str, Any]:
        """Merged arguments, vLLM precedence: command line > --config file; dotted forms merged
        into their JSON dicts (and JSON dicts into dotted forms) like FlexibleArgumentParser."""
        out: dict[str, Any] = {}
        for item in self.config_items + self.items:  # later wins
            if item.form == "dotted":
                continue
            out[item.dest] = copy_value(item.value)
        # vLLM turns all dotted args into one JSON arg appended at the end, i.e. they override a
        # JSON value given for the same flag (argparse keeps the last occurrence).
        dotted: dict[str, dict[str, Any]] = {}
        for item in self.config_items + self.items:
            if item.form != "dotted":
                continue
            target = dotted.setdefault(item.dest, {})
            node = target
            for k in item.subkeys[:-1]:
                node = node.setdefault(k, {})
            last = item.subkeys[-1]
            if item.append and isinstance(node.get(last), list):
                node[last] = node[last] + list(item.value)
            else:
                node[last] = copy_value(item.value)
        for dest, value in dotted.items():
            out[dest] = value  # same as vLLM: the merged dotted dict replaces an earlier JSON value
        return out

    def get(self, dest: str, default: Any = None) -> Any:
        return self.args().get(dest, default)

    @property
    def model(self) -> str | None:
        return self.args().get("model")

    def config(self) -> dict[str, Any]:
        """Normalised engine settings (keys of ``CONFIG_KEYS``) that the command sets explicitly."""
        return normalise_args(self.args())

    def find(self, dest: str) -> list[ArgItem]:
        return [it for it in self.items if it.dest == dest]

    def item_text(self, item: ArgItem) -> str:
        a, b = item.tokens
        if a >= b:
            return ""
        return self.text[self.tokens[a].start : self.tokens[b - 1].end]


def copy_value(value: Any) -> Any:
    return json.loads(json.dumps(value)) if isinstance(value, (dict, list)) else value


def human_int(text: str) -> int:
    """vLLM's human_readable_int: '32K' -> 32768, '25.6k' -> 25600, '-1'/'auto' -> -1."""
    t = text.strip()
    if t == "-1" or t.lower() == "auto":
        return -1
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", t)
    if m:
        number, suffix = m.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
        if "." in number:
            raise ValueError(f"decimals are not allowed with binary suffix {suffix}")
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1))
    return int(t)


# str-typed flags whose values vLLM reads as JSON (besides every *_config flag)
_JSONISH = {"hf_overrides", "override_generation_config", "limit_mm_per_prompt", "mm_processor_kwargs", "media_io_kwargs",
            "default_chat_template_kwargs", "override_pooler_config", "logits_processors"}


def _convert(dest: str, info: dict[str, Any] | None, raw: str, flag: str) -> Any:
    ty = (info or {}).get("type", "str")
    try:
        if ty == "int":
            return int(raw)
        if ty == "float":
            return float(raw)
        if ty == "hint":
            # (vLLM's optional_type(human_readable_int) takes "" or "None" for None)
            return None if (info or {}).get("nullable") and raw.strip() in ("", "None") else human_int(raw)
    except ValueError:
        raise CommandError(f"{flag}: expected a number, got {raw!r}") from None
    stripped = raw.strip()
    jsonish = ty == "json" or (ty == "str" and (dest.endswith("_config") or dest in _JSONISH))
    if jsonish:
        if stripped[:1] in "{[":
            try:
                return json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise CommandError(f"{flag}: not valid JSON ({exc.msg} at char {exc.pos}): {raw}") from None
    if stripped.lower() in ("none", "null") and ty == "json":
        return None
    return raw


def _dotted_value(raw: str) -> Any:
    """Value of a dotted arg, as FlexibleArgumentParser reads it: JSON, else human int, else str."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        try:
            return human_int(raw)
        except ValueError:
            return raw


def _is_python(tok: str) -> bool:
    return re.fullmatch(r"(.*/)?python[0-9.]*", tok) is not None


def parse_command(text_or_argv: str | list[str] | tuple[str, ...], base_dir: str | os.PathLike | None = None) -> ServeCommand:
    """Parse a serve command (string or argv list). ``base_dir`` resolves a relative ``--config``."""
    if isinstance(text_or_argv, (list, tuple)):
        argv = [str(a) for a in text_or_argv]
        text = " ".join(shell_quote(a) for a in argv)
    elif isinstance(text_or_argv, str):
        text = text_or_argv
    else:
        raise CommandError(f"expected a command string or argv list, got {type(text_or_argv).__name__}")
    tokens = tokenize(text)
    if not tokens:
        raise CommandError("empty command: expected `vllm serve MODEL ...`")

    # Leading environment assignments: VAR=value vllm serve ...
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[i].value) and not tokens[i].value.startswith("-"):
        k, v = tokens[i].value.split("=", 1)
        env[k] = v
        i += 1
    if i < len(tokens) and tokens[i].value == "env":
        i += 1
    entry = "args"
    vals = [t.value for t in tokens]
    if i < len(tokens) and os.path.basename(vals[i]) == "vllm":
        if i + 1 < len(tokens) and vals[i + 1] == "serve":
            entry, i = "serve", i + 2
        else:
            sub = vals[i + 1] if i + 1 < len(tokens) else ""
            raise CommandError(f"expected `vllm serve ...`, got `vllm {sub}`".rstrip())
    elif i < len(tokens) and _is_python(vals[i]):
        j = i + 1
        while j < len(tokens) and vals[j].startswith("-") and vals[j] != "-m":
            j += 1  # python flags like -u, -X ...
        if j + 1 < len(tokens) and vals[j] == "-m" and vals[j + 1] in API_SERVER_MODULES:
            entry, i = "api_server", j + 2
        else:
            raise CommandError("expected `python -m vllm.entrypoints.openai.api_server ...`")
    elif i < len(tokens) and not vals[i].startswith("-"):
        if i == 0 and len(tokens) > 1 and vals[1] == "serve":
            raise CommandError(f"expected `vllm serve ...`, got `{vals[0]} serve`")
    cmd = ServeCommand(text=text, tokens=tokens, entry=entry, prefix_end=i, env=env)
    cmd.items = _parse_items(cmd, i, allow_positional=entry in ("serve", "args"))
    cfg = [it for it in cmd.items if it.dest == "config"]
    if cfg:
        if len(cfg) > 1:
            raise CommandError("more than one --config file given")
        path = Path(str(cfg[0].value)).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        cmd.config_file = str(path)
        cmd.config_items = load_config_file(path)
    return cmd


def _parse_items(cmd: ServeCommand, start: int, allow_positional: bool) -> list[ArgItem]:
    flags, options = flag_table()
    toks = cmd.tokens
    items: list[ArgItem] = []
    i = start
    positional_seen = False
    while i < len(toks):
        tok = toks[i].value
        if tok == "--":
            i += 1
            continue
        if tok.startswith("-") and len(tok) > 1 and not _looks_negative_number(tok):
            item, i = _parse_flag(cmd, i, flags, options)
            items.append(item)
            continue
        if allow_positional and not positional_seen:
            items.append(ArgItem(dest="model", value=tok, form="positional", raw_value=tok, tokens=(i, i + 1)))
            positional_seen = True
            i += 1
            continue
        raise CommandError(f"unexpected argument {tok!r} (a value without a flag)")
    return items


def _looks_negative_number(tok: str) -> bool:
    return re.fullmatch(r"-\d+(\.\d+)?", tok) is not None


def _norm_flag(flag: str) -> str:
    """'--speculative_config' -> '--speculative-config' (only the part before the first '.')."""
    if flag.startswith("--"):
        head, dot, tail = flag[2:].partition(".")
        return "--" + head.replace("_", "-") + dot + tail
    return flag


def _parse_flag(cmd: ServeCommand, i: int, flags, options) -> tuple[ArgItem, int]:
    toks = cmd.tokens
    tok = toks[i].value
    raw_flag, eq, eq_value = tok.partition("=")
    has_eq = bool(eq)
    # -O3 / -O=3 / -O 3
    if raw_flag.startswith("-O") and not raw_flag.startswith("--"):
        if raw_flag == "-O" and not has_eq:
            if i + 1 < len(toks):
                return ArgItem("optimization_level", toks[i + 1].value, flag="-O", form="sep",
                               raw_value=toks[i + 1].value, tokens=(i, i + 2)), i + 2
            raise CommandError("-O: expected an optimization level")
        level = eq_value if has_eq else raw_flag[2:]
        return ArgItem("optimization_level", level, flag="-O", form="eq", raw_value=level, tokens=(i, i + 1)), i + 1
    norm = _norm_flag(raw_flag)
    # dotted: --speculative-config.num_speculative_tokens 2 / --compilation-config.cudagraph_capture_sizes+ 16
    if norm.startswith("-") and "." in norm:
        head, *keys = norm.split(".")
        append = keys[-1].endswith("+")
        if append:
            keys[-1] = keys[-1][:-1]
        dest = options.get(head)
        if has_eq:
            raw, end = eq_value, i + 1
        else:
            if i + 1 >= len(toks):
                raise CommandError(f"{raw_flag}: expected a value")
            raw, end = toks[i + 1].value, i + 2
        value: Any = json.loads(json.dumps(raw.split(","))) if append else _dotted_value(raw)
        known = dest is not None
        if not known:
            dest = head.lstrip("-").replace("-", "_")
            cmd.unknown_flags.append(head)
        return ArgItem(dest, value, flag=raw_flag.split(".")[0], form="dotted", subkeys=tuple(keys), append=append,
                       raw_value=raw, tokens=(i, end), known=known), end
    dest = options.get(norm)
    negated = False
    if dest is None and norm.startswith("--no-"):
        pos = options.get("--" + norm[5:])
        if pos is not None and flags[pos]["kind"] == "bool":
            dest, negated = pos, True
    if dest is None:
        # Unknown flag: vLLM would refuse it. Keep it, guess its arity like argparse would see it.
        cmd.unknown_flags.append(raw_flag)
        name = norm.lstrip("-").replace("-", "_")
        if has_eq:
            return ArgItem(name, eq_value, flag=raw_flag, form="eq", raw_value=eq_value, tokens=(i, i + 1), known=False), i + 1
        if i + 1 < len(toks) and (not toks[i + 1].value.startswith("-") or _looks_negative_number(toks[i + 1].value)):
            v = toks[i + 1].value
            return ArgItem(name, _convert(name, None, v, raw_flag), flag=raw_flag, form="sep", raw_value=v,
                           tokens=(i, i + 2), known=False), i + 2
        return ArgItem(name, True, flag=raw_flag, form="bool", tokens=(i, i + 1), known=False), i + 1
    info = flags[dest]
    kind = info["kind"]
    if kind == "bool" and norm.startswith("--no-") and "--" + norm[5:] in info["options"]:
        negated = True
    if kind in ("bool", "true", "false"):
        if has_eq:
            raise CommandError(f"{raw_flag}: takes no value (use {raw_flag} or --no-{raw_flag.lstrip('-')})")
        value = (not negated) if kind == "bool" else (kind == "true")
        return ArgItem(dest, value, flag=raw_flag, form="bool", tokens=(i, i + 1)), i + 1
    if kind == "help":
        raise CommandError("--help is not a serve configuration")
    nargs = info.get("nargs")
    if has_eq:
        value = _convert(dest, info, eq_value, raw_flag)
        if nargs in ("+", "*"):
            value = [value]
        return ArgItem(dest, value, flag=raw_flag, form="eq", raw_value=eq_value, tokens=(i, i + 1)), i + 1
    if nargs in ("+", "*"):
        j = i + 1
        vals = []
        while j < len(toks) and (not toks[j].value.startswith("-") or _looks_negative_number(toks[j].value)):
            vals.append(_convert(dest, info, toks[j].value, raw_flag))
            j += 1
        if not vals and nargs == "+":
            raise CommandError(f"{raw_flag}: expected at least one value")
        return ArgItem(dest, vals, flag=raw_flag, form="sep", raw_value=" ".join(t.value for t in toks[i + 1 : j]),
                       tokens=(i, j)), j
    if i + 1 >= len(toks) or (toks[i + 1].value.startswith("-") and not _looks_negative_number(toks[i + 1].value)
                              and not toks[i + 1].value.startswith("-{")):
        if nargs == "?":
            return ArgItem(dest, None, flag=raw_flag, form="bool", tokens=(i, i + 1)), i + 1
        raise CommandError(f"{raw_flag}: expected a value")
    raw = toks[i + 1].value
    return ArgItem(dest, _convert(dest, info, raw, raw_flag), flag=raw_flag, form="sep", raw_value=raw,
                   tokens=(i, i + 2)), i + 2


def load_config_file(path: Path) -> list[ArgItem]:
    """Items of a ``vllm serve --config`` YAML (keys = long flag names, nested dicts = JSON args)."""
    import yaml  # ~20 ms: only for `--config FILE`

    if path.suffix not in (".yaml", ".yml"):
        raise CommandError(f"--config {path}: must be a .yaml/.yml file (like vLLM requires)")
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise CommandError(f"--config {path}: no such file") from None
    except OSError as exc:
        raise CommandError(f"--config {path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise CommandError(f"--config {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise CommandError(f"--config {path}: expected a mapping of flag names to values")
    flags, options = flag_table()
    items = []
    for key, value in data.items():
        key = str(key)
        flag = _norm_flag("--" + key)
        dest = options.get(flag)
        known = dest is not None
        if dest is None:
            dest = key.replace("-", "_")
        info = flags.get(dest, {})
        if isinstance(value, str) and info.get("kind") == "value":
            value = _convert(dest, info, value, flag)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and info.get("type") == "str":
            value = str(value)
        items.append(ArgItem(dest, value, flag=flag, form="config", raw_value=None, known=known))
    return items
