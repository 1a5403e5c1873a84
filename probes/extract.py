"""vLLM objects -> ``vllm_diag.model`` objects, by duck typing (no vllm/torch import here).

Every function tolerates missing attributes (names move between vLLM releases): an absent value
becomes ``None``, never an exception. Properties that can themselves raise (``page_size_bytes``
asserts ``page_size_padded >= real``) are read through :func:`safe_attr`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from typing import Any

from vllm_diag.model import BatchStep, BlockTable, BuilderBuffer, KVCacheGroup, LayerSpec

_MISSING = object()

# Layer names that belong to a draft / MTP model (used when the spec carries no ``is_draft``).
_DRAFT_NAME = re.compile(r"(^|\.)(draft_model|mtp|drafter|eagle)(\.|$)")


def safe_attr(obj: Any, name: str, default: Any = None) -> Any:
    try:
        value = getattr(obj, name, _MISSING)
    except Exception:
        return default
    return default if value is _MISSING else value


def dig(obj: Any, path: str, default: Any = None) -> Any:
    """``dig(vllm_config, "cache_config.block_size")`` with ``default`` for any missing link."""
    for part in path.split("."):
        if obj is None:
            return default
        obj = safe_attr(obj, part, _MISSING)
        if obj is _MISSING:
            return default
    return obj


def plain(value: Any, depth: int = 0) -> Any:
    """JSON-safe rendering of config values: enums by name, dtypes as 'bfloat16', tuples as lists."""
    if depth > 4:
        return repr(value)
    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        seq = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [plain(v, depth + 1) for v in seq]
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    mod = type(value).__module__
    if mod == "torch" and type(value).__name__ == "dtype":
        return dtype_name(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(safe_attr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    return str(value)


def dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    text = str(dtype)
    return text[len("torch.") :] if text.startswith("torch.") else text


def is_draft_layer(name: str, spec: Any = None, draft_names: set[str] | None = None) -> bool:
    flag = safe_attr(spec, "is_draft", None) if spec is not None else None
    if isinstance(flag, bool):
        return flag
    if draft_names and name in draft_names:
        return True
    return bool(_DRAFT_NAME.search(name))


# Spec fields that have their own LayerSpec column; the rest go to ``extra``.
_SPEC_COLUMNS = {
    "block_size",
    "page_size_padded",
    "num_kv_heads",
    "head_size",
    "head_size_v",
    "dtype",
    "sliding_window",
    "mamba_type",
    "shapes",
    "dtypes",
    "mamba_cache_mode",
    "num_speculative_blocks",
    "is_draft",
}


def spec_type_name(spec: Any) -> str:
    return type(spec).__name__


def page_size(spec: Any) -> tuple[int | None, str | None]:
    """``(page_size_bytes, error)``: the property asserts padded >= real, so it may raise."""
    try:
        return int(spec.page_size_bytes), None
    except Exception as exc:  # AssertionError from a bad padding is itself a finding
        return None, f"{exc.__class__.__name__}: {exc}".rstrip(": ")


def layer_spec(name: str, spec: Any, stage: str = "layer", draft_names: set[str] | None = None) -> LayerSpec:
    page, page_err = page_size(spec)
    shapes = safe_attr(spec, "shapes")
    dtypes = safe_attr(spec, "dtypes")
    mamba_type = safe_attr(spec, "mamba_type")
    extra: dict[str, Any] = {}
    if dataclasses.is_dataclass(spec):
        for f in dataclasses.fields(spec):
            if f.name not in _SPEC_COLUMNS:
                v = plain(safe_attr(spec, f.name))
                if v is not None:
                    extra[f.name] = v
    if page_err:
        extra["page_size_error"] = page_err
    if shapes is not None:
        # the real (unpadded) state size, so padding can be told apart from state growth
        try:
            extra["mamba_state_bytes"] = sum(
                math.prod(s) * _dtype_size(d) for s, d in zip(shapes, dtypes or ())
            )
        except Exception:
            pass
    return LayerSpec(
        layer_name=name,
        spec_type=spec_type_name(spec),
        block_size=_int(safe_attr(spec, "block_size")),
        page_size_bytes=page,
        page_size_padded=_int(safe_attr(spec, "page_size_padded")),
        num_kv_heads=_int(safe_attr(spec, "num_kv_heads")),
        head_size=_int(safe_attr(spec, "head_size")),
        head_size_v=_int(safe_attr(spec, "head_size_v")),
        dtype=dtype_name(safe_attr(spec, "dtype")),
        sliding_window=_int(safe_attr(spec, "sliding_window")),
        mamba_type=None if mamba_type is None else plain(mamba_type),
        mamba_shapes=None if shapes is None else [list(map(int, s)) for s in shapes],
        mamba_dtypes=None if dtypes is None else [dtype_name(d) for d in dtypes],
        mamba_cache_mode=safe_attr(spec, "mamba_cache_mode") if shapes is not None else None,
        num_speculative_blocks=_int(safe_attr(spec, "num_speculative_blocks")),
        is_draft=is_draft_layer(name, spec, draft_names),
        stage=stage,
        extra=extra,
    )


_DTYPE_SIZES = {
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "int8": 1, "uint8": 1,
    "int32": 4, "int64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}


def _dtype_size(dtype: Any) -> int:
    size = safe_attr(dtype, "itemsize")
    if isinstance(size, int):
        return size
    return _DTYPE_SIZES[dtype_name(dtype)]


def _int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def layer_specs(specs: dict[str, Any], stage: str, draft_names: set[str] | None = None) -> list[LayerSpec]:
    return [layer_spec(name, spec, stage, draft_names) for name, spec in specs.items()]


def kv_cache_groups(groups: Any, draft_names: set[str] | None = None) -> list[KVCacheGroup]:
    out = []
    for i, g in enumerate(groups or ()):
        spec = safe_attr(g, "kv_cache_spec")
        names = list(safe_attr(g, "layer_names", ()) or ())
        page, page_err = page_size(spec) if spec is not None else (None, None)
        extra: dict[str, Any] = {}
        for key in ("is_eagle_group", "role", "host_resident", "enable_kv_transfer"):
            v = safe_attr(g, key)
            if v is not None:
                extra[key] = plain(v)
        members = safe_attr(spec, "kv_cache_specs")  # UniformTypeKVCacheSpecs
        if isinstance(members, dict):
            extra["member_spec_types"] = sorted({spec_type_name(s) for s in members.values()})
        if page_err:
            extra["page_size_error"] = page_err
        shapes = safe_attr(spec, "shapes")
        if shapes is not None:
            extra["mamba_cache_mode"] = safe_attr(spec, "mamba_cache_mode")
        out.append(
            KVCacheGroup(
                group_index=i,
                spec_type=spec_type_name(spec),
                layer_names=names,
                block_size=_int(safe_attr(spec, "block_size")),
                page_size_bytes=page,
                page_size_padded=_int(safe_attr(spec, "page_size_padded")),
                num_speculative_blocks=_int(safe_attr(spec, "num_speculative_blocks")),
                is_draft=bool(names) and all(is_draft_layer(n, None, draft_names) for n in names),
                extra=extra,
            )
        )
    return out


# --------------------------------------------------------------------------------------- config


def _version_tuple(version: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", version.split("+")[0])[:3]
    return tuple(int(n) for n in nums) + (0,) * (3 - len(nums))


def engine_config(vllm_config: Any, version: str | None = None) -> dict[str, Any]:
    """The normalised keys of ``vllm_diag.model.CONFIG_KEYS`` (plus a few extras) from a VllmConfig."""
    mc = dig(vllm_config, "model_config")
    cc = dig(vllm_config, "cache_config")
    sc = dig(vllm_config, "scheduler_config")
    pc = dig(vllm_config, "parallel_config")
    comp = dig(vllm_config, "compilation_config")
    spec = dig(vllm_config, "speculative_config")
    archs = safe_attr(mc, "architectures") or dig(mc, "hf_config.architectures") or []
    cfg: dict[str, Any] = {
        "model": safe_attr(mc, "model"),
        "architecture": archs[0] if archs else None,
        "dtype": dtype_name(safe_attr(mc, "dtype")),
        "kv_cache_dtype": safe_attr(cc, "cache_dtype"),
        "block_size": safe_attr(cc, "block_size"),
        "user_specified_block_size": safe_attr(cc, "user_specified_block_size"),
        "mamba_block_size": safe_attr(cc, "mamba_block_size"),
        "mamba_page_size_padded": safe_attr(cc, "mamba_page_size_padded"),
        "mamba_cache_mode": safe_attr(cc, "mamba_cache_mode"),
        "mamba_ssm_cache_dtype": safe_attr(cc, "mamba_ssm_cache_dtype"),
        "max_model_len": safe_attr(mc, "max_model_len"),
        "max_num_seqs": safe_attr(sc, "max_num_seqs"),
        "max_num_batched_tokens": safe_attr(sc, "max_num_batched_tokens"),
        "enable_prefix_caching": safe_attr(cc, "enable_prefix_caching"),
        "enable_chunked_prefill": safe_attr(sc, "enable_chunked_prefill"),
        "speculative_method": safe_attr(spec, "method") if spec is not None else None,
        "num_speculative_tokens": safe_attr(spec, "num_speculative_tokens") if spec is not None else None,
        "draft_model": (dig(spec, "draft_model_config.model") or safe_attr(spec, "model")) if spec is not None else None,
        "enforce_eager": safe_attr(mc, "enforce_eager"),
        "cudagraph_mode": plain(safe_attr(comp, "cudagraph_mode")),
        "cudagraph_capture_sizes": plain(safe_attr(comp, "cudagraph_capture_sizes")),
        "max_cudagraph_capture_size": safe_attr(comp, "max_cudagraph_capture_size"),
        "tensor_parallel_size": safe_attr(pc, "tensor_parallel_size"),
        "pipeline_parallel_size": safe_attr(pc, "pipeline_parallel_size"),
        "gpu_memory_utilization": safe_attr(cc, "gpu_memory_utilization"),
        "model_runner": _model_runner(vllm_config, version),
        # extras beyond CONFIG_KEYS
        "compilation_mode": plain(safe_attr(comp, "mode", safe_attr(comp, "level"))),
        "num_gpu_blocks": safe_attr(cc, "num_gpu_blocks"),
        "data_parallel_size": safe_attr(pc, "data_parallel_size"),
        "disable_hybrid_kv_cache_manager": safe_attr(sc, "disable_hybrid_kv_cache_manager"),
        "quantization": safe_attr(mc, "quantization"),
    }
    if spec is not None and cfg["draft_model"] == cfg["model"]:
        # MTP / ngram configs echo the target model; the draft is then part of the main model
        cfg["draft_model"] = None if cfg["speculative_method"] in ("ngram", "ngram_gpu", "suffix") else cfg["draft_model"]
    return {k: plain(v) for k, v in cfg.items() if v is not None}


def requested_config(engine_args: Any) -> dict[str, Any]:
    """What the user asked for (``EngineArgs``), in the normalised keys of ``engine_config``: all
    there is to record when vLLM rejects the configuration before building a ``VllmConfig``."""
    import json
    import os

    a = engine_args
    spec = safe_attr(a, "speculative_config")
    if spec is not None and not isinstance(spec, dict):
        spec = {k: safe_attr(spec, k) for k in ("method", "num_speculative_tokens", "model")}
    cfg: dict[str, Any] = {
        "model": safe_attr(a, "model"),
        "dtype": plain(safe_attr(a, "dtype")),
        "kv_cache_dtype": plain(safe_attr(a, "kv_cache_dtype")),
        "block_size": safe_attr(a, "block_size"),
        "mamba_block_size": safe_attr(a, "mamba_block_size"),
        "mamba_cache_mode": plain(safe_attr(a, "mamba_cache_mode")),
        "mamba_ssm_cache_dtype": plain(safe_attr(a, "mamba_ssm_cache_dtype")),
        "max_model_len": safe_attr(a, "max_model_len"),
        "max_num_seqs": safe_attr(a, "max_num_seqs"),
        "max_num_batched_tokens": safe_attr(a, "max_num_batched_tokens"),
        "enable_prefix_caching": safe_attr(a, "enable_prefix_caching"),
        "enable_chunked_prefill": safe_attr(a, "enable_chunked_prefill"),
        "enforce_eager": safe_attr(a, "enforce_eager"),
        "tensor_parallel_size": safe_attr(a, "tensor_parallel_size"),
        "pipeline_parallel_size": safe_attr(a, "pipeline_parallel_size"),
        "gpu_memory_utilization": safe_attr(a, "gpu_memory_utilization"),
        "quantization": safe_attr(a, "quantization"),
    }
    if isinstance(spec, dict) and spec:
        cfg["speculative_config"] = plain(spec)
        cfg["speculative_method"] = spec.get("method") or ("draft_model" if spec.get("model") else None)
        cfg["num_speculative_tokens"] = spec.get("num_speculative_tokens")
        cfg["draft_model"] = spec.get("model")
    model = cfg["model"]
    if isinstance(model, str) and os.path.isfile(os.path.join(model, "config.json")):
        try:
            with open(os.path.join(model, "config.json")) as fh:
                archs = json.load(fh).get("architectures") or []
            if archs:
                cfg["architecture"] = archs[0]
        except Exception:
            pass
    cfg["config_rejected"] = True
    return {k: plain(v) for k, v in cfg.items() if v is not None}


def _model_runner(vllm_config: Any, version: str | None) -> str | None:
    flag = safe_attr(vllm_config, "use_v2_model_runner")
    if isinstance(flag, bool):
        return "v2" if flag else "v1"
    import os

    if os.environ.get("VLLM_USE_V2_MODEL_RUNNER", "0") in ("1", "true", "True"):
        return "v2"
    return "v1"


# --------------------------------------------------------------------------------- block tables


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_table_derivation(
    spec: Any, vllm_config: Any, max_len: int, columns: int, slot_mapping_mode: str | None, version: str,
    kernel_block_size: int | None = None,
) -> str:
    """How vLLM got this width, in its own arithmetic, checked against ``columns``.

    Two steps. (1) The blocks a request needs: ``KVCacheSpec.max_num_blocks_per_req`` (0.26+; asked
    of vLLM's own spec object when it has the method), or the inline formulas of older runners.
    (2) The row the runner allocates: ``MultiGroupBlockTable`` of vLLM 0.26 rounds every group whose
    block size is <= 128 up to a multiple of ``128 // block_size`` (#39324; Mamba groups too), 0.32's
    ``get_block_table_width`` only the token-slot (attention) groups, to ``128 / gcd(128, B)``;
    runners up to 0.25 split each block into kernel blocks (``B // kernel_block_size`` columns each).
    The step that reproduces ``columns`` is the one reported; if none does, the text says so."""
    v = _version_tuple(version)
    B = _int(safe_attr(spec, "block_size")) or 0
    k = _int(safe_attr(spec, "num_speculative_blocks")) or 0
    is_mamba = safe_attr(spec, "shapes") is not None
    prefix = bool(dig(vllm_config, "cache_config.enable_prefix_caching"))
    mode = dig(vllm_config, "cache_config.mamba_cache_mode")
    if not B:
        return f"width {columns} (block size unknown)"
    if is_mamba:
        if v < (0, 22):
            n = (_cdiv(max_len, B) if prefix else 1) + k
            text = f"({'cdiv(max_model_len %d, block_size %d)' % (max_len, B) if prefix else '1 state block'}) + num_speculative_blocks {k} = {n}"
        elif mode == "align":
            n = _cdiv(max_len, B) + k
            text = f"mamba align: cdiv(max_model_len {max_len}, block_size {B}) + num_speculative_blocks {k} = {n}"
        elif mode == "all":
            n = _cdiv(max_len, B) + k
            text = f"mamba all: cdiv(max_model_len {max_len}, block_size {B}) + num_speculative_blocks {k} = {n}"
        else:
            n = 1 + k
            text = f"mamba {mode or 'none'}: 1 state block + num_speculative_blocks {k} = {n}"
    else:
        n = _cdiv(max_len, B)
        text = f"cdiv(max_model_len {max_len}, block_size {B}) = {n}"
    own = _own_max_blocks(spec, vllm_config, max_len)
    if own is not None and own != n:
        text += f" by this probe's formula, but vLLM's {type(spec).__name__}.max_num_blocks_per_req says {own}"
        n = own
    if n == columns:
        return text
    token_slot = (slot_mapping_mode or "").upper() != "NONE"
    steps = []
    if B <= 128 and (v < (0, 32) or token_slot):
        g = 128 // B
        steps.append((_cdiv(n, g) * g, f"; MultiGroupBlockTable rounds it up to a multiple of 128 // block_size {B} = {g} "
                                       f"(vLLM 0.26 block_table.py, #39324; every group with block_size <= 128)"))
    if token_slot:
        g = 128 // math.gcd(128, B)
        steps.append((_cdiv(n, g) * g, f"; get_block_table_width rounds it up to a multiple of 128 / gcd(128, {B}) = {g} "
                                       f"(token-slot groups only)"))
    if kernel_block_size and kernel_block_size < B and B % kernel_block_size == 0:
        split = B // kernel_block_size
        steps.append((n * split, f"; each block split into {split} kernel blocks of {kernel_block_size} tokens"))
    for width, why in steps:
        if width == columns:
            return f"{text}{why} -> {columns}"
    return f"{text} (vLLM's table has {columns} columns: a formula this probe does not know)"


def _own_max_blocks(spec: Any, vllm_config: Any, max_len: int) -> int | None:
    """vLLM's own ``max_num_blocks_per_req`` (0.26+), or None where it does not exist or fails."""
    fn = safe_attr(spec, "max_num_blocks_per_req")
    if not callable(fn) or vllm_config is None:
        return None
    try:
        return _int(fn(vllm_config, max_len))
    except Exception:
        return None


# Builder buffers sized by the CUDA-graph decode batch: name -> how vLLM sizes the columns.
# vLLM 0.26 v1/attention/backends/mamba_attn.py BaseMambaAttentionMetadataBuilder.__init__ and
# gdn_attn.py GDNAttentionMetadataBuilder.__init__ (same in 0.32 for the names listed).
def buffer_derivation(builder: Any, name: str, shape: list[int], vllm_config: Any, spec: Any, version: str) -> str | None:
    """How vLLM sized one persistent builder tensor, each dimension checked against ``shape``."""
    if not shape:
        return None
    bs = _int(safe_attr(builder, "decode_cudagraph_max_bs"))
    seqs = _int(dig(vllm_config, "scheduler_config.max_num_seqs"))
    cap = _int(dig(vllm_config, "compilation_config.max_cudagraph_capture_size"))
    num_spec = _int(safe_attr(builder, "num_spec_tokens"))
    if num_spec is None:
        num_spec = _int(safe_attr(builder, "num_spec"))
    num_spec = num_spec or 0
    gdn = "GDN" in type(builder).__name__
    parts: list[str] = []
    if bs is not None:
        seq_part = f"max_num_seqs {seqs} x (num_spec {num_spec} + 1)" if gdn else f"max_num_seqs {seqs}"
        bs_text = (f"decode_cudagraph_max_bs = min({seq_part}, max_cudagraph_capture_size {cap}) = {bs}"
                   if cap is not None else f"decode_cudagraph_max_bs = {seq_part} = {bs}")
    else:
        bs_text = None

    def dim(value: int, options: list[tuple[int | None, str]]) -> str:
        for want, text in options:
            if want is not None and want == value:
                return text
        return f"{value} (no formula of this probe gives it)"

    bs_opts = [(bs, bs_text or "")]
    if name == "state_indices_tensor_d" and len(shape) == 2:
        mode = dig(vllm_config, "cache_config.mamba_cache_mode")
        L = _int(dig(vllm_config, "model_config.max_model_len"))
        B = _int(safe_attr(spec, "block_size"))
        nsb = _int(safe_attr(spec, "num_speculative_blocks")) or 0
        if mode == "all" and L and B:
            cols = [(_cdiv(L, B) + nsb, f"mamba all: cdiv(max_model_len {L}, block_size {B}) + num_speculative_blocks {nsb} = "
                                        f"{_cdiv(L, B) + nsb}"),
                    (_cdiv(L, B), f"mamba all: cdiv(max_model_len {L}, block_size {B}) = {_cdiv(L, B)} "
                                  f"(no num_speculative_blocks: vLLM < 0.22, #39809)")]
        else:
            cols = [(1 + num_spec, f"1 + num_spec_tokens {num_spec} = {1 + num_spec}")]
        parts = [f"rows: {dim(shape[0], bs_opts)}", f"columns: {dim(shape[1], cols)}"]
    elif name in ("spec_state_indices_tensor",) and len(shape) == 2:
        parts = [f"rows: {dim(shape[0], bs_opts)}",
                 f"columns: {dim(shape[1], [(num_spec + 1, f'num_spec {num_spec} + 1 = {num_spec + 1}')])}"]
    elif len(shape) == 1 and bs is not None:
        parts = [dim(shape[0], bs_opts + [
            (bs + 1, f"decode_cudagraph_max_bs {bs} + 1 = {bs + 1} (query start locations)"),
            (bs * (num_spec + 1), f"decode_cudagraph_max_bs {bs} x (num_spec {num_spec} + 1) = {bs * (num_spec + 1)}"),
        ])]
    elif bs is not None and shape[0] == bs:
        parts = [f"rows: {bs_text}"]
    if not parts:
        return None
    return "; ".join(parts)


def block_tables(runner: Any, version: str, phase: str | None = None) -> list[BlockTable]:
    """Shapes of the runner's per-group block tables: V1 ``input_batch.block_table.block_tables``
    (``BlockTable`` objects), V2 ``block_tables.block_tables`` (staged tensors, block sizes in
    ``block_tables.block_sizes``)."""
    mgbt = dig(runner, "input_batch.block_table")
    tables = safe_attr(mgbt, "block_tables") or []
    v2 = safe_attr(runner, "block_tables")
    if not tables and v2 is not None and isinstance(safe_attr(v2, "block_tables"), list):
        sizes = list(safe_attr(v2, "block_sizes") or [])
        enabled = list(safe_attr(v2, "_slot_mapping_enabled") or [])
        tables = [
            _V2Table(t, sizes[i] if i < len(sizes) else None,
                     ("TOKEN_TO_KV_SLOT" if enabled[i] else "NONE") if i < len(enabled) else None)
            for i, t in enumerate(v2.block_tables)
        ]
    kv_cfg = safe_attr(runner, "kv_cache_config")
    groups = list(safe_attr(kv_cfg, "kv_cache_groups") or [])
    kernel_sizes = safe_attr(runner, "_kernel_block_sizes") or safe_attr(runner, "kernel_block_sizes")
    vllm_config = safe_attr(runner, "vllm_config")
    max_len = max(_int(safe_attr(runner, "max_model_len")) or 0, _int(safe_attr(runner, "max_encoder_len")) or 0)
    # groups without a block table (encoder-only) are skipped by vLLM; keep indices aligned
    table_groups = [i for i, g in enumerate(groups) if spec_type_name(safe_attr(g, "kv_cache_spec")) != "EncoderOnlyAttentionSpec"]
    out = []
    for j, bt in enumerate(tables):
        gi = table_groups[j] if j < len(table_groups) else j
        shape = _tensor_shape(safe_attr(bt, "block_table"))
        rows, cols = (shape + [None, None])[:2] if shape else (
            _int(safe_attr(bt, "max_num_reqs")),
            _int(safe_attr(bt, "max_num_blocks_per_req")),
        )
        mode = safe_attr(bt, "slot_mapping_mode")
        mode_s = plain(mode) if mode is not None else None
        kb = None
        if isinstance(kernel_sizes, (list, tuple)) and gi < len(kernel_sizes):
            kb = kernel_sizes[gi]
            kb = kb if isinstance(kb, int) else (kb[0] if isinstance(kb, (list, tuple)) and kb else None)
        deriv = None
        if gi < len(groups) and cols is not None:
            deriv = block_table_derivation(groups[gi].kv_cache_spec, vllm_config, max_len, cols, mode_s, version, _int(kb))
        out.append(
            BlockTable(
                group_index=gi,
                rows=int(rows) if rows is not None else 0,
                columns=int(cols) if cols is not None else 0,
                block_size=_int(safe_attr(bt, "block_size")),
                kernel_block_size=_int(kb),
                derivation=deriv,
                slot_mapping_mode=mode_s,
                phase=phase,
            )
        )
    return out


class _V2Table:
    """Model runner V2 block table, seen through the V1 ``BlockTable`` attribute names."""

    def __init__(self, tensor: Any, block_size: int | None, mode: str | None):
        self.block_table = tensor
        self.block_size = block_size
        self.slot_mapping_mode = mode


def _tensor_shape(obj: Any) -> list[int] | None:
    """Shape of a tensor, or of a CpuGpuBuffer's device tensor (no data read, no sync)."""
    if obj is None:
        return None
    for attr in ("gpu", "cpu", "np"):
        inner = safe_attr(obj, attr)
        if inner is not None and safe_attr(inner, "shape") is not None:
            return [int(x) for x in inner.shape]
    shape = safe_attr(obj, "shape")
    if shape is not None and type(obj).__name__ in ("Tensor", "Parameter", "ndarray"):
        return [int(x) for x in shape]
    return None


def _tensor_dtype(obj: Any) -> str | None:
    for attr in ("gpu", "cpu"):
        inner = safe_attr(obj, attr)
        if inner is not None and safe_attr(inner, "dtype") is not None:
            return dtype_name(inner.dtype)
    d = safe_attr(obj, "dtype")
    return dtype_name(d) if d is not None else None


def _is_buffer(obj: Any) -> bool:
    name = type(obj).__name__
    if name in ("Tensor", "Parameter"):
        return True
    return name == "CpuGpuBuffer" or (safe_attr(obj, "gpu") is not None and safe_attr(obj, "cpu") is not None
                                      and _tensor_shape(obj) is not None)


def iter_builders(runner: Any):
    """``(kv_cache_group_index, builder)`` for every attention-metadata builder of a V1 runner."""
    for gi, groups in enumerate(safe_attr(runner, "attn_groups") or []):
        for ag in groups or []:
            builders = safe_attr(ag, "metadata_builders")
            if builders is None:
                getter = safe_attr(ag, "get_metadata_builder")
                builders = [getter()] if callable(getter) else []
            for b in builders or []:
                if b is not None:
                    yield _int(safe_attr(ag, "kv_cache_group_id")) if safe_attr(ag, "kv_cache_group_id") is not None else gi, b


def builder_buffers(runner: Any, version: str = "", phase: str | None = None) -> tuple[list[BuilderBuffer], dict[str, Any]]:
    """Persistent tensors of every metadata builder (with how vLLM sized them), and each builder's
    scalar limits (``decode_cudagraph_max_bs``, ``reorder_batch_threshold``...), keyed ``"<group>:<Builder>"``."""
    runner_cfg = safe_attr(runner, "vllm_config")
    buffers: list[BuilderBuffer] = []
    scalars: dict[str, Any] = {}
    seen: set[int] = set()
    for gi, b in iter_builders(runner):
        if id(b) in seen:
            continue
        seen.add(id(b))
        bname = type(b).__name__
        try:
            attrs = vars(b)
        except TypeError:
            continue
        vcfg = safe_attr(b, "vllm_config") or runner_cfg
        spec = safe_attr(b, "kv_cache_spec")
        for name, value in attrs.items():
            if _is_buffer(value):
                shape = _tensor_shape(value)
                if shape is not None:
                    try:
                        deriv = buffer_derivation(b, name, shape, vcfg, spec, version)
                    except Exception:
                        deriv = None
                    buffers.append(BuilderBuffer(group_index=gi, builder=bname, name=name, shape=shape,
                                                 dtype=_tensor_dtype(value), phase=phase, derivation=deriv))
        key = f"{gi}:{bname}"
        for name in ("decode_cudagraph_max_bs", "reorder_batch_threshold", "num_spec", "num_speculative_tokens",
                     "use_spec_decode", "compilation_config_max_capture_size", "cudagraph_batch_sizes"):
            v = safe_attr(b, name)
            if isinstance(v, (int, bool, list, tuple)) and not isinstance(v, str):
                scalars.setdefault(key, {})[name] = plain(v)
    return buffers, scalars


# ------------------------------------------------------------------------------------ batch steps


def step_from_scheduler_output(step_index: int, so: Any, requests: Any, at: float,
                               prompt_lens: dict | None = None) -> BatchStep:
    """The runner's view of one step (before the builders split it again per group).

    A request is a spec decode when the scheduler sent draft tokens for it; a decode when it runs
    one token past its prompt; anything else (new, still in its prompt, or resumed with several
    tokens) is a prefill. "Past its prompt" compares the computed tokens with the prompt length the
    request had when it was scheduled new (``prompt_lens``, kept by the caller across steps; entries
    of finished requests are dropped here): with async scheduling (vLLM's default on GPUs) the output
    count of a request still reads 0 at its first decode steps. Without a known prompt length, a
    request that has produced output and runs one token is a decode.
    """
    counts = so.num_scheduled_tokens
    spec = so.scheduled_spec_decode_tokens or {}
    cached = so.scheduled_cached_reqs
    n_out = {}
    computed: dict = {}
    ids = safe_attr(cached, "req_ids")
    outs = safe_attr(cached, "num_output_tokens")
    if ids and outs is not None:
        n_out = dict(zip(ids, outs))
    comp = safe_attr(cached, "num_computed_tokens")
    if ids and comp is not None:
        computed = dict(zip(ids, comp))
    if prompt_lens is not None:
        for nr in safe_attr(so, "scheduled_new_reqs") or ():
            rid = safe_attr(nr, "req_id")
            plen = safe_attr(nr, "prompt_len")
            if not isinstance(plen, int):
                toks = safe_attr(nr, "prompt_token_ids")
                plen = len(toks) if toks is not None else None
            if rid is not None and isinstance(plen, int):
                prompt_lens[rid] = plen
                computed[rid] = safe_attr(nr, "num_computed_tokens") or 0
        for rid in safe_attr(so, "finished_req_ids") or ():
            prompt_lens.pop(rid, None)
    decodes = spec_decodes = prefills = 0
    dec_tok = spec_tok = pre_tok = 0
    spec_per_req = []
    for rid, n in counts.items():
        drafts = spec.get(rid)
        if drafts:
            spec_decodes += 1
            spec_tok += n
            spec_per_req.append(len(drafts))
        elif n == 1 and (computed[rid] >= prompt_lens[rid] if prompt_lens and rid in prompt_lens and rid in computed
                         else n_out.get(rid, 0) > 0):
            decodes += 1
            dec_tok += n
        else:
            prefills += 1
            pre_tok += n
    return BatchStep(
        step_index=step_index,
        num_reqs=len(counts),
        num_decodes=decodes,
        num_spec_decodes=spec_decodes,
        num_prefills=prefills,
        num_decode_tokens=dec_tok,
        num_spec_decode_tokens=spec_tok,
        num_prefill_tokens=pre_tok,
        num_tokens=so.total_num_scheduled_tokens,
        spec_tokens_per_req=spec_per_req or None,
        builder=None,
        group_index=None,
        at=at,
    )


def step_from_metadata(step_index: int, builder_name: str, group_index: int | None, md: Any, at: float) -> BatchStep | None:
    """A builder's own split (``num_decodes``/``num_spec_decodes``/``num_prefills``...) of a step."""
    nd = safe_attr(md, "num_decodes")
    npf = safe_attr(md, "num_prefills")
    if not isinstance(nd, int) and not isinstance(npf, int):
        return None
    nsd = safe_attr(md, "num_spec_decodes")
    ndt = safe_attr(md, "num_decode_tokens")
    npt = safe_attr(md, "num_prefill_tokens")
    nst = safe_attr(md, "num_spec_decode_tokens")
    nt = safe_attr(md, "num_actual_tokens")
    nr = safe_attr(md, "num_reqs")
    ints = [x if isinstance(x, int) else 0 for x in (nd, npf, nsd, ndt, npt, nst)]
    if not isinstance(nr, int):
        nr = ints[0] + ints[1] + ints[2]
    if not isinstance(nt, int):
        nt = ints[3] + ints[4] + ints[5]
    return BatchStep(
        step_index=step_index,
        num_reqs=nr,
        num_decodes=ints[0],
        num_spec_decodes=ints[2],
        num_prefills=ints[1],
        num_decode_tokens=ints[3],
        num_spec_decode_tokens=ints[5],
        num_prefill_tokens=ints[4],
        num_tokens=nt,
        builder=builder_name,
        group_index=group_index,
        at=at,
    )
