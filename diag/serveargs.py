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
returns the normalised keys of ``vllm_diag.model.CONFIG_KEYS``.

Flag knowledge (which flags take a value, which are booleans, short aliases) comes from
``diag/data/vllm_flags.json``, dumped from vLLM's own serve parser (``make_arg_parser``);
``tests/test_serveargs.py`` cross-checks this parser against vLLM's over a corpus of commands.
Values are never evaluated: JSON through ``json.loads``, YAML through ``yaml.safe_load``.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import DiagError

_FLAGS_FILE = importlib.resources.files("vllm_diag.data") / "vllm_flags.json"

# Flags of older vLLM versions (not in the 0.32 parser) that users still paste.
_LEGACY_FLAGS: dict[str, dict[str, Any]] = {
    "cuda_graph_sizes": {"options": ["--cuda-graph-sizes"], "kind": "value", "type": "int", "nargs": "+"},
    "num_speculative_tokens": {"options": ["--num-speculative-tokens"], "kind": "value", "type": "int"},
    "speculative_model": {"options": ["--speculative-model"], "kind": "value", "type": "str"},
    "disable_log_requests": {"options": ["--disable-log-requests"], "kind": "true"},
    "use_v2_block_manager": {"options": ["--use-v2-block-manager"], "kind": "true"},
    "num_lookahead_slots": {"options": ["--num-lookahead-slots"], "kind": "value", "type": "int"},
}

API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")


class CommandError(DiagError):
    """The command line cannot be read (bad quoting, bad JSON, missing value, unreadable --config)."""


@lru_cache(maxsize=1)
def flag_table() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(dest -> flag info, option string -> dest) for vLLM's serve parser (plus legacy flags)."""
    try:
        data = json.loads(_FLAGS_FILE.read_text())
    except (OSError, ValueError) as exc:  # packaging error, not user error
        raise DiagError(f"cannot read the vLLM flag table {_FLAGS_FILE}: {exc}") from None
    flags: dict[str, dict[str, Any]] = dict(data["flags"])
    for dest, info in _LEGACY_FLAGS.items():
        flags.setdefault(dest, info)
    options: dict[str, str] = {}
    for dest, info in flags.items():
        for opt in info["options"]:
            options[opt] = dest
    return flags, options


def flag_table_version() -> str | None:
    try:
        return json.loads(_FLAGS_FILE.read_text()).get("vllm_version")
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------
# Shell-like tokenizer that remembers where each token came from
# ------------------------------------------------------------------------------------------------


@dataclass
class Token:
    value: str
    start: int  # offset of the raw token in the source text
    end: int

    def raw(self, text: str) -> str:
        return text[self.start : self.end]


def tokenize(text: str) -> list[Token]:
    """POSIX-shell-like split: quotes, backslash escapes, backslash-newline continuations,
    ``#`` comments. Raises CommandError on an unterminated quote."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n;":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] in "\r\n":
            i += 2
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start = i
        buf: list[str] = []
        while i < n:
            c = text[i]
            if c in " \t\r\n;":
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2
                    continue
                if i + 1 < n:
                    buf.append(text[i + 1])
                    i += 2
                    continue
                i += 1
                continue
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0:
                    raise CommandError(f"unterminated single quote at offset {i} of the command")
                buf.append(text[i + 1 : j])
                i = j + 1
                continue
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`\n':
                        if text[j + 1] != "\n":
                            buf.append(text[j + 1])
                        j += 2
                        continue
                    buf.append(text[j])
                    j += 1
                if j >= n:
                    raise CommandError(f"unterminated double quote at offset {i} of the command")
                i = j + 1
                continue
            buf.append(c)
            i += 1
        tokens.append(Token("".join(buf), start, i))
    return tokens


_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./\-]+$")


def shell_quote(value: str, prefer: str = "'") -> str:
    """Quote for a POSIX shell, preferring the user's quote style."""
    if value and _SAFE.match(value):
        return value
    if prefer == '"' and not re.search(r'["\\$`]', value):
        return f'"{value}"'
    return "'" + value.replace("'", "'\"'\"'") + "'"


# ------------------------------------------------------------------------------------------------
# Parsed arguments
# ------------------------------------------------------------------------------------------------


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
            out[item.dest] = _copy(item.value)
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
                node[last] = _copy(item.value)
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


def _copy(value: Any) -> Any:
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
            return human_int(raw)
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
    import yaml

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


# ------------------------------------------------------------------------------------------------
# Normalisation to CONFIG_KEYS
# ------------------------------------------------------------------------------------------------

_DIRECT = (
    "model", "dtype", "kv_cache_dtype", "block_size", "mamba_block_size", "mamba_cache_mode", "mamba_ssm_cache_dtype",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching", "enable_chunked_prefill",
    "enforce_eager", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
)
# Extra (non-CONFIG_KEYS) settings the predictor and rules read.
_EXTRA = (
    "quantization", "trust_remote_code", "hf_overrides", "attention_backend", "max_cudagraph_capture_size",
    "data_parallel_size", "decode_context_parallel_size", "disable_hybrid_kv_cache_manager", "language_model_only",
    "num_gpu_blocks_override", "kv_cache_dtype_skip_layers", "revision", "tokenizer", "use_replayssm",
)


def _speculative_method(spec: dict[str, Any]) -> str | None:
    method = spec.get("method")
    if method:
        return str(method)
    model = spec.get("model")
    if not model:
        return None
    low = str(model).lower()
    for key in ("eagle3", "eagle", "mtp", "medusa", "mlp_speculator"):
        if key in low:
            return key
    if low in ("ngram", "[ngram]"):
        return "ngram"
    return "draft_model"


def normalise_args(args: dict[str, Any]) -> dict[str, Any]:
    """vLLM dest names -> ``CONFIG_KEYS`` (+ a few extras); only what the arguments set."""
    out: dict[str, Any] = {}
    for key in _DIRECT + _EXTRA:
        if key in args and args[key] is not None:
            out[key] = args[key]
    if "block_size" in out:
        out["user_specified_block_size"] = True
    if isinstance(out.get("max_model_len"), int) and out["max_model_len"] < 0:
        out.pop("max_model_len")  # 'auto'
    spec = args.get("speculative_config")
    if isinstance(spec, dict):
        out["speculative_config"] = spec
        method = _speculative_method(spec)
        if method:
            out["speculative_method"] = method
        if spec.get("num_speculative_tokens") is not None:
            out["num_speculative_tokens"] = spec["num_speculative_tokens"]
        if spec.get("model") and method not in ("ngram", "mtp", "suffix"):
            out["draft_model"] = spec["model"]
    elif args.get("speculative_model"):  # pre-0.10 flags
        out["speculative_method"] = _speculative_method({"model": args["speculative_model"]})
        out["draft_model"] = args["speculative_model"]
        if args.get("num_speculative_tokens") is not None:
            out["num_speculative_tokens"] = args["num_speculative_tokens"]
    comp = args.get("compilation_config")
    if isinstance(comp, dict):
        out["compilation_config"] = comp
        if comp.get("cudagraph_mode") is not None:
            out["cudagraph_mode"] = str(comp["cudagraph_mode"]).upper()
        if comp.get("cudagraph_capture_sizes") is not None:
            out["cudagraph_capture_sizes"] = sorted(int(x) for x in comp["cudagraph_capture_sizes"])
        if comp.get("max_cudagraph_capture_size") is not None:
            out["max_cudagraph_capture_size"] = int(comp["max_cudagraph_capture_size"])
    elif isinstance(comp, (int, str)) and str(comp).isdigit():
        out["optimization_level"] = int(comp)
    if args.get("cudagraph_capture_sizes"):
        out["cudagraph_capture_sizes"] = sorted(int(x) for x in args["cudagraph_capture_sizes"])
    elif args.get("cuda_graph_sizes"):
        out["cudagraph_capture_sizes"] = sorted(int(x) for x in args["cuda_graph_sizes"])
    if args.get("optimization_level") is not None:
        out["optimization_level"] = args["optimization_level"]
    return out


# ------------------------------------------------------------------------------------------------
# vLLM's own parser (opt-in; imports vLLM, ~4-6 s)
# ------------------------------------------------------------------------------------------------


def vllm_parse_args(cmd: ServeCommand) -> dict[str, Any]:
    """Parse the command's arguments with vLLM's FlexibleArgumentParser + make_arg_parser.

    Returns the namespace as a dict (only values that differ from vLLM's defaults, plus ``model``).
    Raises DiagError when vLLM is not installed or rejects the command.
    """
    import contextlib
    import io

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: PLC0415
        try:
            from vllm.entrypoints.launchers.cli_args import make_arg_parser  # noqa: PLC0415
        except ImportError:  # older layouts
            from vllm.entrypoints.openai.cli_args import make_arg_parser  # noqa: PLC0415
    except ImportError as exc:
        raise DiagError(f"--vllm-parser needs vLLM installed ({exc})") from None
    argv = [t.value for t in cmd.tokens[cmd.prefix_end :]]
    if cmd.entry == "serve":
        argv = ["serve", *argv]
        parser = FlexibleArgumentParser(prog="vllm")
        sub = parser.add_subparsers(dest="subcommand")
        make_arg_parser(sub.add_parser("serve", prog="vllm serve"))
    else:
        parser = make_arg_parser(FlexibleArgumentParser(prog="api_server"))
    defaults = vars(parser.parse_args(["serve"] if cmd.entry == "serve" else []))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(parser.parse_args(argv))
    except SystemExit:
        msg = err.getvalue().strip().splitlines()
        raise DiagError(f"vLLM's parser rejected the command: {msg[-1] if msg else 'error'}") from None
    except Exception as exc:  # vLLM raises ValueError for some inputs
        raise DiagError(f"vLLM's parser rejected the command: {exc}") from None
    out = {k: v for k, v in ns.items() if defaults.get(k) != v}
    if ns.get("model_tag"):
        out["model"] = ns["model_tag"]
    out.pop("model_tag", None)
    out.pop("subcommand", None)
    out.pop("config", None)
    return out


# ------------------------------------------------------------------------------------------------
# Patching the user's own command (used by vllm_diag.suggest)
# ------------------------------------------------------------------------------------------------

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


def _long_flag(dest: str) -> str:
    flags, _ = flag_table()
    info = flags.get(dest)
    if info:
        longs = [o for o in info["options"] if o.startswith("--") and not o.startswith("--no-")]
        if longs:
            return longs[0]
    return "--" + dest.replace("_", "-")


def _fmt_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


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


def _edit_json_text(raw: str, path: tuple[str, ...], old_obj: Any, value: Any) -> str:
    """Change one key of a JSON text keeping the user's spacing; falls back to re-serialising."""
    if len(path) == 1 and isinstance(old_obj, dict):
        key = path[0]
        if key in old_obj:
            old_val = json.dumps(old_obj[key])
            # the old value as typed: match any JSON scalar after "key":
            pat = re.compile(r'("%s"\s*:\s*)(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|true|false|null)' % re.escape(key))
            m = pat.search(raw)
            if m and json.loads(m.group(2)) == json.loads(old_val):
                if value is None:
                    # drop '"key": v' and one adjacent comma
                    s, e = m.start(), m.end()
                    after = re.match(r"\s*,\s*", raw[e:])
                    if after:
                        new = raw[:s] + raw[e + after.end():]
                    else:
                        before = re.search(r",\s*$", raw[:s])
                        new = raw[: before.start()] + raw[e:] if before else raw[:s] + raw[e:]
                else:
                    new = raw[: m.start(2)] + json.dumps(value) + raw[m.end(2):]
                try:
                    expect = dict(old_obj)
                    _set_path(expect, path, value)
                    if json.loads(new) == expect:
                        return new
                except json.JSONDecodeError:
                    pass
    obj = _copy(old_obj) if isinstance(old_obj, dict) else {}
    _set_path(obj, path, value)
    item_sep, key_sep = _json_style(raw)
    return json.dumps(obj, separators=(item_sep, key_sep))


def patch_command(cmd: ServeCommand, changes: list[Any]) -> Patch:
    """Apply ``Change``s (key, value; value None removes) to the user's command, in their notation.

    Flags keep the user's spelling; a JSON-valued flag is edited in place (same spacing and
    quoting); dotted forms stay dotted; new settings are appended as long flags (dotted when the
    user already used dotted forms for that flag). Changes are applied one after the other; the
    diff compares the original and final arguments. Returns the new text, a minimal '-'/'+' diff,
    a YAML fragment for ``--config`` and the equivalent ``LLM(...)`` keyword arguments.
    """
    base_dir = os.path.dirname(cmd.config_file) if cmd.config_file else None
    cur = cmd
    touched: dict[str, Any] = {}
    for ch in changes:
        text, t = _patch_step(cur, [ch])
        touched.update(t)
        cur = parse_command(text, base_dir=base_dir)
    merged = cur.args()
    yaml_data: dict[str, Any] = {}
    llm_kwargs: dict[str, Any] = {}
    for dest in touched:
        val = merged.get(dest)
        if dest == "model":
            continue
        yaml_data[_long_flag(dest)[2:]] = val
        llm_kwargs[dest] = val
    return Patch(text=cur.text, diff=_item_diff(cmd, cur), yaml=_yaml_fragment(yaml_data), llm_kwargs=llm_kwargs, command=cur)


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


def _patch_step(cmd: ServeCommand, changes: list[Any]) -> tuple[str, dict[str, Any]]:
    """Apply ``Change``s (key, value; value None removes) to the user's command, in their notation.

    Flags keep the user's spelling; a JSON-valued flag is edited in place (same spacing and
    quoting); dotted forms stay dotted; new settings are appended as long flags (dotted when the
    user already used dotted forms for that flag). Returns the new text, a minimal '-'/'+' diff, a
    YAML fragment for ``--config`` and the equivalent ``LLM(...)`` keyword arguments.
    """
    flags, _ = flag_table()
    edits: list[tuple[int, int, str]] = []  # (token start, token end, new raw text); start==end -> append
    removed: set[int] = set()
    appended: list[str] = []
    diff: list[str] = []
    merged = cmd.args()
    touched_dests: dict[str, Any] = {}

    for ch in changes:
        key, value = ch.key, ch.value
        dest, path = KEY_LOCATIONS.get(key, (key, ()))
        if key == "compilation_config" or key == "speculative_config":
            dest, path = key, ()
        items = cmd.find(dest)
        info = flags.get(dest, {"kind": "value", "options": [_long_flag(dest)]})
        if not path:
            new_val = value
            touched_dests[dest] = new_val
            if value is None:
                for it in items:
                    idx = cmd.items.index(it)
                    removed.add(idx)
                    diff.append(f"- {_collapse(cmd.item_text(it))}")
                continue
            if info["kind"] in ("bool", "true", "false"):
                spell = None
                for it in items:
                    if it.form == "bool" and it.flag:
                        spell = it.flag
                base = _long_flag(dest) if spell is None else spell
                if base.startswith("--no-") and "--" + base[5:] in info["options"]:
                    base = "--" + base[5:]
                if value:
                    text = base
                elif info["kind"] == "bool":
                    text = "--no-" + base[2:] if base.startswith("--") else "--no-" + _long_flag(dest)[2:]
                else:
                    text = None
                if items:
                    last = items[-1]
                    for it in items[:-1]:
                        removed.add(cmd.items.index(it))
                        diff.append(f"- {_collapse(cmd.item_text(it))}")
                    if text is None:
                        removed.add(cmd.items.index(last))
                        diff.append(f"- {_collapse(cmd.item_text(last))}")
                    else:
                        edits.append((last.tokens[0], last.tokens[1], text))
                        diff.append(f"- {_collapse(cmd.item_text(last))}")
                        diff.append(f"+ {text}")
                elif text is not None:
                    appended.append(text)
                    diff.append(f"+ {text}")
                continue
            rendered = _fmt_scalar(value)
            if isinstance(value, list) and info.get("nargs") in ("+", "*"):
                rendered_tokens = " ".join(shell_quote(str(v)) for v in value)
            else:
                rendered_tokens = shell_quote(rendered)
            if items:
                last = items[-1]
                if last.form == "positional":
                    new_text = rendered_tokens
                elif last.form == "eq":
                    new_text = f"{last.flag}={shell_quote(rendered)}"
                else:
                    new_text = f"{last.flag} {rendered_tokens}"
                edits.append((last.tokens[0], last.tokens[1], new_text))
                diff.append(f"- {_collapse(cmd.item_text(last))}")
                diff.append(f"+ {new_text}")
            else:
                text = f"{_long_flag(dest)} {rendered_tokens}"
                appended.append(text)
                diff.append(f"+ {text}")
            continue

        # A key inside a JSON-valued flag (speculative/compilation config).
        current = merged.get(dest)
        new_obj = _copy(current) if isinstance(current, dict) else {}
        _set_path(new_obj, path, value)
        touched_dests[dest] = new_obj
        dotted = [it for it in items if it.form == "dotted"]
        json_items = [it for it in items if it.form in ("sep", "eq")]
        same = [it for it in dotted if it.subkeys == path]
        if dotted:
            if same:
                for it in same[:-1]:
                    removed.add(cmd.items.index(it))
                    diff.append(f"- {_collapse(cmd.item_text(it))}")
                it = same[-1]
                if value is None:
                    removed.add(cmd.items.index(it))
                    diff.append(f"- {_collapse(cmd.item_text(it))}")
                else:
                    flag_txt = cmd.tokens[it.tokens[0]].raw(cmd.text).split("=", 1)[0]
                    new_text = (f"{flag_txt}={shell_quote(_fmt_scalar(value))}" if "=" in cmd.tokens[it.tokens[0]].value
                                else f"{flag_txt} {shell_quote(_fmt_scalar(value))}")
                    edits.append((it.tokens[0], it.tokens[1], new_text))
                    diff.append(f"- {_collapse(cmd.item_text(it))}")
                    diff.append(f"+ {new_text}")
            elif value is not None:
                flag0 = dotted[-1].flag or _long_flag(dest)
                text = f"{flag0}.{'.'.join(path)} {shell_quote(_fmt_scalar(value))}"
                appended.append(text)
                diff.append(f"+ {text}")
            continue
        if json_items:
            it = json_items[-1]
            for other in json_items[:-1]:
                removed.add(cmd.items.index(other))
                diff.append(f"- {_collapse(cmd.item_text(other))}")
            raw = it.raw_value or "{}"
            new_raw = _edit_json_text(raw, path, it.value, value)
            quote = "'"
            vtok = cmd.tokens[it.tokens[1] - 1].raw(cmd.text)
            if it.form == "sep" and vtok.startswith('"'):
                quote = '"'
            if it.form == "eq":
                new_text = f"{it.flag}={shell_quote(new_raw, quote)}"
            else:
                new_text = f"{it.flag} {shell_quote(new_raw, quote)}"
            edits.append((it.tokens[0], it.tokens[1], new_text))
            diff.append(f"- {_collapse(cmd.item_text(it))}")
            diff.append(f"+ {new_text}")
            continue
        if value is None and not new_obj and current is None:
            continue
        text = f"{_long_flag(dest)} {shell_quote(json.dumps(new_obj, separators=(', ', ': ')))}"
        appended.append(text)
        diff.append(f"+ {text}")

    return _apply_edits(cmd, edits, removed, appended), touched_dests


def _collapse(text: str) -> str:
    return re.sub(r"\s*\\\r?\n\s*", " ", text).strip()


def _yaml_fragment(data: dict[str, Any]) -> str:
    import yaml

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
            spans.append((line_start - 1 if after.strip() == "" else line_start, line_end if after.strip() == "" else min(line_end + 1, len(text)), ""))
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
