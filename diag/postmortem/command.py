"""Serve arguments out of what a log shows: pasted commands, ``LLM(...)`` calls, loose ``--flags``,
``non-default args: {…}`` and the ``Initializing a V1 LLM engine … with config:`` line.

Command lines are parsed with :mod:`vllm_diag.serve` (the pure serve parser over vLLM's flag table); values are never
evaluated (JSON via ``json``, Python reprs via :mod:`vllm_diag.postmortem.pylit`). Every function returns
normalised keys (``vllm_diag.model.CONFIG_KEYS`` plus snake_case extras) and never raises.
"""

from __future__ import annotations

import re
from typing import Any

from .pylit import LiteralError, parse_kwargs, parse_literal

_ENGINE_KEYS = {
    "model": "model",
    "tokenizer": None,
    "dtype": "dtype",
    "max_seq_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size",
    "decode_context_parallel_size": "decode_context_parallel_size",
    "prefill_context_parallel_size": "prefill_context_parallel_size",
    "enforce_eager": "enforce_eager",
    "kv_cache_dtype": "kv_cache_dtype",
    "enable_prefix_caching": "enable_prefix_caching",
    "enable_chunked_prefill": "enable_chunked_prefill",
    "quantization": "quantization",
    "trust_remote_code": "trust_remote_code",
    "load_format": "load_format",
    "seed": "seed",
}


# parallel sizes under the short names reporters give them (``--tp 2`` in a Helm values list; vLLM's own aliases
# are single-dash ``-tp``): read as the setting they stand for
_SHORT_SIZES = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
                "dcp": "decode_context_parallel_size", "pcp": "prefill_context_parallel_size"}


def _normalise(dest_args: dict[str, Any]) -> dict[str, Any]:
    dest_args = dict(dest_args)
    for short, full in _SHORT_SIZES.items():
        v = dest_args.pop(short, None)
        if v is not None and full not in dest_args and re.fullmatch(r"\d{1,4}", str(v).strip()):
            dest_args[full] = int(str(v).strip())
    try:
        from ..serve import normalise_args
    except ImportError:  # pragma: no cover - vllm_diag.serve is part of the package
        return dict(dest_args)
    try:
        out = normalise_args(dest_args)
    except Exception:  # noqa: BLE001 - a log value of an unexpected type must not stop the analysis
        out = {}
    for k, v in dest_args.items():  # keep every flag (snake_case), normalised keys win
        if k not in out and v is not None and not isinstance(v, (dict, list)) or k in ("speculative_config", "compilation_config",
                                                                                   "kv_transfer_config", "logits_processors"):
            out.setdefault(k, v)
    return out


def args_from_dest_dict(d: dict[str, Any]) -> dict[str, Any]:
    """``non-default args`` (vLLM dest names) -> normalised keys."""
    d = dict(d)
    if "model_tag" in d and "model" not in d:
        d["model"] = d.pop("model_tag")
    for key in ("speculative_config", "compilation_config"):
        v = d.get(key)
        if isinstance(v, str):
            try:
                d[key] = parse_literal(v)
            except LiteralError:
                pass
    return _normalise(d)


def args_from_engine_config(kw: dict[str, Any]) -> dict[str, Any]:
    """``Initializing a V1 LLM engine (vX) with config: model='…', …`` -> normalised keys."""
    out: dict[str, Any] = {}
    for k, v in kw.items():
        name = _ENGINE_KEYS.get(k)
        if name:
            if isinstance(v, str) and v.startswith("torch."):
                v = v[len("torch."):]
            if isinstance(v, str) and re.fullmatch(r"-?\d+\s*(?:\.\.\.|\u2026)", v.strip()):
                v = int(re.match(r"-?\d+", v.strip()).group(0))  # "tensor_parallel_size=1 ..." (the rest elided)
            out[name] = v
    spec = kw.get("speculative_config")
    if isinstance(spec, str) and "(" in spec:
        inner = parse_kwargs(spec[spec.index("(") + 1 : spec.rindex(")")] if ")" in spec else spec)
        if inner.get("method"):
            out["speculative_method"] = str(inner["method"])
        k = inner.get("num_spec_tokens", inner.get("num_speculative_tokens"))
        if isinstance(k, int):
            out["num_speculative_tokens"] = k
        if inner.get("model") and str(inner.get("method")) in ("draft_model", "eagle", "eagle3"):
            out["draft_model"] = str(inner["model"])
    comp = kw.get("compilation_config")
    if isinstance(comp, dict):
        mode = comp.get("cudagraph_mode")
        if isinstance(mode, str):
            m = re.search(r"CUDAGraphMode\.(\w+)", mode)
            out["cudagraph_mode"] = (m.group(1) if m else mode).upper()
        sizes = comp.get("cudagraph_capture_sizes")
        if isinstance(sizes, list) and all(isinstance(x, int) for x in sizes):
            out["cudagraph_capture_sizes"] = sorted(sizes)
        mx = comp.get("max_cudagraph_capture_size", comp.get("max_capture_size"))  # max_capture_size: vLLM <= 0.10
        if isinstance(mx, int):
            out["max_cudagraph_capture_size"] = mx
    if out.get("kv_cache_dtype") == "auto":
        out["kv_cache_dtype"] = "auto"
    return out


# the engine built from Python: LLM(...), or its arguments EngineArgs(...) / AsyncEngineArgs(...) (same keywords)
ENGINE_CALL = re.compile(r"\b(?:LLM|(?:Async)?EngineArgs)\(")


def args_from_llm_call(text: str) -> dict[str, Any]:
    """``LLM(model="x", speculative_config={...}, ...)`` (or ``AsyncEngineArgs(...)``) from a pasted Python snippet."""
    m = ENGINE_CALL.search(text)
    if m is None:
        return {}
    body = text[m.end():]
    lines = []
    for ln in body.splitlines():
        lines.append(_strip_comment(ln))
    body = "\n".join(lines)
    depth, end = 1, len(body)
    quote = None
    for i, c in enumerate(body):
        if quote:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                end = i
                break
    kw = parse_kwargs(body[:end])
    if not kw:
        return {}
    return _normalise(kw)


def _strip_comment(line: str) -> str:
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return line[:i]
    return line


def parse_serve_command(text: str) -> tuple[str, dict[str, Any]] | None:
    """(command text as kept, normalised args) for a pasted ``vllm serve`` / api_server command.
    Prose after the command (``vllm serve --x 1 crashes with …``) is cut off; None if unreadable."""
    try:
        from ..serve import parse_command
    except ImportError:  # pragma: no cover
        return None
    if "`" in text:  # a command quoted as inline code in prose ("with `vllm serve m --x 1`")
        text = text.split("`", 1)[0].rstrip()
    if "{" in text or "[" in text:
        text = quote_json_groups(text)
    candidates = [text]
    # a command inside a sentence: keep the longest prefix that parses with only flags/values
    words = text.split(" ")
    for cut in range(len(words) - 1, 1, -1):
        if len(candidates) > 40:
            break
        candidates.append(" ".join(words[:cut]))
    for cand in candidates:
        try:
            cmd = parse_command(cand)
            args = cmd.args()
        except Exception:  # noqa: BLE001 - CommandError or anything odd in a pasted command
            continue
        if cmd.unknown_flags and cand is text and len(candidates) > 1:
            # prose words became positionals/unknown flags: try shorter prefixes first
            pass
        positional = [it for it in cmd.items if it.form == "positional"]
        if positional and cmd.entry == "serve" and cmd.tokens and positional[0].tokens[0] != cmd.prefix_end:
            continue
        if positional and not re.fullmatch(r"[\w.\-/~:@]+", str(positional[0].value)):
            continue
        if len(positional) == 1 and cmd.entry == "serve" and positional[0].tokens[0] != cmd.prefix_end:
            continue
        extra_pos = [it for it in cmd.items if it.form == "positional"][1:]
        if extra_pos:
            continue
        return cand, _normalise(args)
    return None


def args_from_flags(text: str, inline: list[tuple[str, str | None]], lines: list[str] | None = None) -> dict[str, Any]:
    """Loose ``--flag value`` lines (and known flags quoted inside prose) -> normalised keys. ``lines`` are
    flag lines read one by one (YAML ``args:`` lists: ``--flag=value`` with unquoted JSON) when the
    joined ``text`` does not parse."""
    out: dict[str, Any] = {}
    # continuation backslashes of a pasted multi-line command are shell syntax, not part of a value
    lines = [re.sub(r"\s*\\\s*$", "", ln) for ln in (lines or [])]
    text = re.sub(r"\s\\(?=\s|$)", " ", text)
    try:
        from ..serve import flag_table, parse_command
    except ImportError:  # pragma: no cover
        return out
    try:
        _, options = flag_table()
    except Exception:  # noqa: BLE001
        return out
    pieces: list[str] = []
    for flag, val in inline:
        base = flag.split(".", 1)[0]
        if base in options or base.replace("_", "-") in options:
            if val is None:
                pieces.append(flag)
            elif val[:1] in ("'", '"'):
                pieces.append(f"{flag} {val}")
            else:
                pieces.append(f"{flag} {_quote(val)}")
    inline_text = " ".join(pieces)
    parsed: dict[str, Any] = {}  # (each text parsed once: the fallback's test and the reading share it)

    def parse(chunk: str | list[str]) -> Any:
        """vLLM's parser's (command, args) for a chunk, or None where it refuses it."""
        if isinstance(chunk, str) and chunk in parsed:
            return parsed[chunk]
        try:
            cmd = parse_command(chunk)
            result = (cmd, cmd.args())
        except Exception:  # noqa: BLE001
            result = None
        if isinstance(chunk, str):
            parsed[chunk] = result
        return result

    chunks: list[Any] = [c for c in (text, inline_text) if c.strip()]
    if parse(text) is None:  # read the lines as separate argv items instead
        # (the inline flags stay a chunk of their own, also when there are no flag lines at all)
        # (a line of several flags that parses on its own stays whole: "--model m -tp 2 --max-num-seqs 96")
        chunks = [ln if parse(ln) is not None else [ln] if ln.startswith("--") and "=" in ln.split(" ", 1)[0]
                  else ln.split(None, 1) for ln in (lines or [])] + ([inline_text] if inline_text.strip() else [])
    if len(pieces) > 1:  # one inline flag the parser refuses must not lose the others
        chunks += pieces
    for chunk in chunks:
        result = parse(chunk)
        if result is None:
            continue
        cmd, args = result
        if not any(it.dest == "model" and it.form != "positional" for it in cmd.items):
            args.pop("model", None)
        for k, v in _normalise(args).items():
            out.setdefault(k, v)
    # last resort: each ``--flag value`` pair on its own (one bad flag or an unquoted JSON value with
    # spaces around it must not lose the others), with brace groups kept whole
    for ln in lines or []:
        toks = _split_keep_braces(ln)
        i = 0
        while i < len(toks):
            if not toks[i].startswith("--"):
                i += 1
                continue
            pair = [toks[i]]
            if i + 1 < len(toks) and not toks[i + 1].startswith("--"):
                pair.append(toks[i + 1])
            i += len(pair)
            base = pair[0].split("=", 1)[0].split(".", 1)[0]
            if base not in options and base.replace("_", "-") not in options:
                continue
            try:
                args = parse_command(pair).args()
            except Exception:  # noqa: BLE001
                continue
            args.pop("model", None)
            for k, v in _normalise(args).items():
                out.setdefault(k, v)
    return out


def quote_json_groups(line: str) -> str:
    """A JSON value printed unquoted in a command (a CI script's echo, a printed argv, a YAML ``args:`` list):
    ``--speculative-config {"method":"mtp","num_speculative_tokens":2}`` as the shell would have needed it,
    in single quotes, so the command parses as its author meant it."""
    out: list[str] = []
    i, n, quote = 0, len(line), None
    while i < n:
        ch = line[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "{[" and (i == 0 or line[i - 1] in " =\t"):
            depth, j = 0, i
            while j < n:
                depth += line[j] in "{["
                depth -= line[j] in "}]"
                if depth == 0:
                    break
                j += 1
            group = line[i:j + 1]
            if depth == 0 and '"' in group and "'" not in group:
                out.append(f"'{group}'")
                i = j + 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_keep_braces(line: str) -> list[str]:
    """Whitespace split that keeps ``{...}`` / ``[...]`` groups and quoted strings as one token (quotes dropped)."""
    toks: list[str] = []
    cur = ""
    depth = 0
    quote = None
    for ch in line.strip():
        if quote:
            if ch == quote:
                quote = None
                if depth:
                    cur += ch
            else:
                cur += ch
            continue
        if ch in "'\"" :
            quote = ch
            if depth:
                cur += ch
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
        if ch.isspace() and depth == 0:
            if cur:
                toks.append(cur)
            cur = ""
            continue
        cur += ch
    if cur:
        toks.append(cur)
    return toks


def _quote(val: str) -> str:
    if re.fullmatch(r"[\w.\-/:@,+=]+", val):
        return val
    return "'" + val.replace("'", "") + "'"
