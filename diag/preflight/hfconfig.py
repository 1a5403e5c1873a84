"""config.json -> the model facts the predictor needs (no transformers, no vLLM).

Finding the file: a local folder (``MODEL/config.json``), the model search path (``--model-dir DIR``
and ``$VLLM_DIAG_MODEL_PATH``, folders separated by ``os.pathsep``: ``DIR/MODEL`` or ``DIR/<last part
of MODEL>``, for logs that name a model by a path of another machine), the Hugging Face cache layout
(``$HF_HUB_CACHE`` or ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``:
``models--org--name/snapshots/*/config.json``), then the demo configs bundled in
``vllm_diag/data/configs/`` (package data, listed in ``configs/index.json``; read with
``importlib.resources`` so it works from an installed wheel; the output says so when one is used),
then -- only when asked (``fetch=True``, as ``vllm-diag check`` does) and for a Hub id ``org/name`` --
the Hugging Face Hub through ``huggingface_hub`` (``fetch_config``: ``HF_TOKEN``, ``HF_ENDPOINT``,
``HF_HUB_OFFLINE``, a short timeout; the file lands in the Hugging Face cache).

Families (as vLLM's model registry and ``get_kv_cache_spec`` of each model class treat them):

* dense attention (Llama-like; ``layer_types`` may mark sliding-window layers),
* GDN hybrids: Qwen3-Next, Qwen3.5 / Qwen3.6 (``Qwen3_5*``, text dims under ``text_config``),
* Mamba2 hybrids: NemotronH / Nemotron-3 (``hybrid_override_pattern``), Granite-4.0-H
  (``GraniteMoeHybrid``), Falcon-H1 (parallel attention + Mamba in every layer), Mamba2 (attention-free),
* Mamba1 hybrid: Jamba,
* MLA: DeepSeek V2/V3, V3.2 (sparse attention + DSA indexer), V4 (compressed MLA + SWA, indexer).
"""

from __future__ import annotations

import glob
import importlib.resources
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import DiagError


def bundled_configs() -> importlib.resources.abc.Traversable:
    """The folder of bundled demo configs inside the installed package."""
    return importlib.resources.files("vllm_diag.data") / "configs"


class ModelConfigError(DiagError):
    """config.json missing, unreadable, or of an architecture we cannot describe."""


@dataclass
class ModelFacts:
    architecture: str
    family: str  # dense | gdn | mamba2 | mamba1 | mla | attention_free
    dtype: str = "bfloat16"
    num_layers: int = 0
    # per decoder layer: lists of cache kinds ("attention", "sliding", "gdn", "mamba2", "mamba1", "mla")
    layers: list[list[str]] = field(default_factory=list)
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None  # what the model's attention layers use (their KV spec's head size)
    config_head_size: int | None = None  # ModelConfig.get_head_size(): config head_dim, else hidden // heads
    sliding_window: int | None = None
    gdn: dict[str, int] = field(default_factory=dict)  # nk, nv, dk, dv, conv_kernel
    mamba2: dict[str, int] = field(default_factory=dict)  # intermediate, n_groups, n_heads, head_dim, d_state, conv_kernel
    mamba1: dict[str, int] = field(default_factory=dict)  # intermediate, d_state, conv_kernel
    mamba_ssm_dtype: str | None = None  # model-specified SSM state dtype (Qwen3.5 / NemotronH hooks)
    mamba_chunk_size: int | None = None
    # Does vLLM's config-side get_mamba_state_shape_from_config include num_speculative_tokens?
    config_shape_has_spec: bool = True
    config_shape_has_spec_fixed_in: tuple[int, int, int] | None = None
    mla: dict[str, Any] = field(default_factory=dict)  # kv_lora_rank, qk_rope_head_dim, index_head_dim, ...
    compress_ratios: list[int] | None = None
    mtp_layers: int = 0
    max_position_embeddings: int | None = None
    vocab_size: int | None = None
    source: str | None = None  # where config.json came from
    bundled: bool = False
    non_gated_moe: bool = False  # MoE experts with a non-gated activation (NemotronH relu2)
    not_modelled: list[str] = field(default_factory=list)  # what the reader could not describe
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # the (text) config, for model-code checks

    @property
    def is_hybrid(self) -> bool:
        kinds = {k for layer in self.layers for k in layer}
        return bool(kinds & {"gdn", "mamba2", "mamba1"}) and bool(kinds & {"attention", "sliding", "mla"})

    @property
    def has_mamba(self) -> bool:
        return self.family in ("gdn", "mamba2", "mamba1", "attention_free")

    @property
    def use_mla(self) -> bool:
        return self.family == "mla"

    @property
    def has_dsa_indexer(self) -> bool:
        return bool(self.mla.get("index_topk"))

    @property
    def mamba_type(self) -> str | None:
        return {"gdn": "gdn_attention", "mamba2": "mamba2", "mamba1": "mamba1"}.get(self.family) or (
            "mamba2" if self.mamba2 else None)

    def count(self, kind: str) -> int:
        return sum(1 for layer in self.layers for k in layer if k == kind)


# ------------------------------------------------------------------------------------------------
# Locating config.json
# ------------------------------------------------------------------------------------------------


def hf_hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def _bundled_index() -> dict[str, str]:
    try:
        return json.loads((bundled_configs() / "index.json").read_text())
    except (OSError, ValueError):
        return {}


MODEL_PATH_ENV = "VLLM_DIAG_MODEL_PATH"


def model_search_path(model_dirs: Sequence[str | os.PathLike] = ()) -> list[Path]:
    """``model_dirs`` (``--model-dir``) first, then the folders of ``$VLLM_DIAG_MODEL_PATH``."""
    env = [d for d in os.environ.get(MODEL_PATH_ENV, "").split(os.pathsep) if d]
    return [Path(d).expanduser() for d in [*model_dirs, *env]]


def _from_search_path(model: str, dirs: list[Path]) -> Path | None:
    name = model.rstrip("/")
    tails = [name.lstrip("/"), name.split("/")[-1]] if name else []
    for d in dirs:
        for tail in tails:
            cand = d / tail / "config.json"
            if cand.is_file():
                return cand
    return None


def find_config(model: str, revision: str | None = None, use_bundled: bool = True,
                model_dirs: Sequence[str | os.PathLike] = (), fetch: bool = False) -> tuple[Path, bool]:
    """Path of the model's config.json and whether it is a bundled demo config.

    Local folder, model search path, Hugging Face cache, bundled demo configs, then (``fetch``) the Hub.
    """
    p = Path(model).expanduser()
    if p.is_dir():
        if (p / "config.json").is_file():
            return p / "config.json", False
        raise ModelConfigError(f"{model}: folder has no config.json")
    if p.is_file() and p.name.endswith(".json"):
        return p, False
    dirs = model_search_path(model_dirs)
    found_in_path = _from_search_path(model, dirs)
    if found_in_path is not None:
        return found_in_path, False
    if "/" in model and not model.startswith(("/", ".", "~")):
        repo = hf_hub_cache() / ("models--" + model.replace("/", "--"))
        snaps = repo / "snapshots"
        if revision and (repo / "refs" / revision).is_file():
            rev = (repo / "refs" / revision).read_text().strip()
            cand = snaps / rev / "config.json"
            if cand.is_file():
                return cand, False
        main = repo / "refs" / "main"
        if main.is_file():
            cand = snaps / main.read_text().strip() / "config.json"
            if cand.is_file():
                return cand, False
        found = sorted(glob.glob(str(snaps / "*" / "config.json")), key=os.path.getmtime, reverse=True)
        if found:
            return Path(found[0]), False
    if use_bundled:
        index = _bundled_index()
        name = index.get(model) or index.get(model.rstrip("/").split("/")[-1])
        bundled = bundled_configs() / str(name) / "config.json" if name else None
        if bundled is not None and bundled.is_file():
            return bundled, True
    if p.is_absolute() or model.startswith((".", "~")):
        where = f" or under {', '.join(map(str, dirs))}" if dirs else ""
        raise ModelConfigError(f"{model}: no such model folder{where} (expected a folder with config.json; "
                               f"--model-dir DIR looks for the model's folder name in DIR)")
    if fetch and HUB_ID.fullmatch(model):
        return fetch_config(model, revision), False
    raise ModelConfigError(
        f"{model}: config.json not found locally or in the Hugging Face cache ({hf_hub_cache()}); "
        f"download it (`hf download {model} config.json`) or pass a local model folder"
    )


# ------------------------------------------------------------------------------------------------
# Fetching config.json from the Hugging Face Hub
# ------------------------------------------------------------------------------------------------

HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+")
HUB_TIMEOUT_ENV = "VLLM_DIAG_HUB_TIMEOUT"  # seconds per request (default 5)


def _env_on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


# A failed fetch is remembered for a minute per (endpoint, repo, revision, token): one analysis
# re-checks each suggestion through the pre-flight, and without this every re-check would wait out
# the Hub's timeouts and retries again (tens of seconds on a host that drops the packets).
_FAILED_FETCHES: dict[tuple, tuple[float, str]] = {}
FAILED_FETCH_TTL_S = 60.0


def fetch_config(repo_id: str, revision: str | None = None) -> Path:
    """Download ``config.json`` of a Hub model into the Hugging Face cache with ``huggingface_hub``.

    Honours ``HF_TOKEN`` (gated/private models), ``HF_ENDPOINT`` (mirrors, a local endpoint),
    ``HF_HUB_OFFLINE`` (no request at all) and ``HF_HUB_CACHE``/``HF_HOME``; every request has a
    short timeout (``$VLLM_DIAG_HUB_TIMEOUT``, default 5 s). Any failure is one ModelConfigError line,
    and the same failure is answered from memory for ``FAILED_FETCH_TTL_S``.
    """
    where = f"{repo_id}: config.json not found locally or in the Hugging Face cache ({hf_hub_cache()})"
    if _env_on("HF_HUB_OFFLINE"):
        raise ModelConfigError(f"{where}, and HF_HUB_OFFLINE is set, so it is not fetched from the Hub; "
                               f"unset HF_HUB_OFFLINE, or pass a local model folder")
    key = (os.environ.get("HF_ENDPOINT"), repo_id, revision, bool(os.environ.get("HF_TOKEN")), str(hf_hub_cache()))
    failed = _FAILED_FETCHES.get(key)
    if failed is not None and time.monotonic() - failed[0] < FAILED_FETCH_TTL_S:
        raise ModelConfigError(failed[1])
    try:
        return _fetch_config(repo_id, revision, where)
    except ModelConfigError as exc:
        _FAILED_FETCHES[key] = (time.monotonic(), str(exc))
        raise


def _fetch_config(repo_id: str, revision: str | None, where: str) -> Path:
    try:
        timeout = float(os.environ.get(HUB_TIMEOUT_ENV) or 5)
    except ValueError:
        raise ModelConfigError(f"{HUB_TIMEOUT_ENV}={os.environ[HUB_TIMEOUT_ENV]!r}: expected seconds") from None
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    # imported here: huggingface_hub (httpx) costs ~150 ms, and most checks find config.json locally
    try:
        from huggingface_hub import constants, get_hf_file_metadata, hf_hub_download, hf_hub_url
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - a declared dependency
        raise ModelConfigError(f"{where}; install huggingface_hub to fetch it from the Hub") from None
    constants.HF_HUB_DOWNLOAD_TIMEOUT = min(constants.HF_HUB_DOWNLOAD_TIMEOUT, int(max(1, timeout * 2)))
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.CRITICAL)  # its retry warnings would break the one-line error contract
    token = os.environ.get("HF_TOKEN") or None
    try:
        # One HEAD first, without retries: when nothing is cached, hf_hub_download retries a failed
        # HEAD with backoff for up to a minute (about 23 s against a host that does not resolve).
        get_hf_file_metadata(hf_hub_url(repo_id, "config.json", revision=revision, endpoint=endpoint),
                             token=token, timeout=timeout, endpoint=endpoint)
        path = hf_hub_download(repo_id, "config.json", revision=revision, endpoint=endpoint, etag_timeout=timeout,
                               cache_dir=str(hf_hub_cache()), token=token)
    except hf_errors.LocalEntryNotFoundError as exc:  # the Hub was not reachable (and nothing cached)
        cause = exc.__cause__ or exc.__context__
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:160] if cause else "no answer"
        raise ModelConfigError(f"{where}, and fetching it from the Hub ({endpoint}) failed: {reason}; "
                               f"pass a local model folder or set HF_HUB_OFFLINE=1") from None
    except hf_errors.GatedRepoError:
        raise ModelConfigError(f"{repo_id}: gated on the Hub ({endpoint}); accept its terms on the model page and "
                               f"set HF_TOKEN" + (" (the token given has no access)" if os.environ.get("HF_TOKEN") else "")
                               ) from None
    except hf_errors.RepositoryNotFoundError:
        raise ModelConfigError(f"{repo_id}: no such model on the Hub ({endpoint}), or it is private "
                               f"(set HF_TOKEN); config.json not found locally either") from None
    except hf_errors.RevisionNotFoundError:
        raise ModelConfigError(f"{repo_id}: revision {revision!r} not found on the Hub ({endpoint})") from None
    except hf_errors.EntryNotFoundError:
        raise ModelConfigError(f"{repo_id}: the Hub repository has no config.json ({endpoint})") from None
    except hf_errors.OfflineModeIsEnabled:
        raise ModelConfigError(f"{where}, and Hugging Face offline mode is on; pass a local model folder") from None
    except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeouts, HTTP 5xx, proxies...
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise ModelConfigError(f"{where}, and fetching it from the Hub ({endpoint}) failed: {reason}; "
                               f"pass a local model folder or set HF_HUB_OFFLINE=1") from None
    finally:
        hub_log.setLevel(level)
    return Path(path)


def load_model_facts(model: str, revision: str | None = None, hf_overrides: dict | None = None,
                     model_dirs: Sequence[str | os.PathLike] = (), fetch: bool = False) -> ModelFacts:
    path, bundled = find_config(model, revision, model_dirs=model_dirs, fetch=fetch)
    try:
        cfg = json.loads(path.read_text())
    except OSError as exc:
        raise ModelConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise ModelConfigError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ModelConfigError(f"{path}: expected a JSON object")
    if hf_overrides:
        cfg = {**cfg, **hf_overrides}
    facts = facts_from_config(cfg)
    facts.source = str(path)
    facts.bundled = bundled
    return facts


# ------------------------------------------------------------------------------------------------
# config dict -> facts
# ------------------------------------------------------------------------------------------------

GDN_ARCHS = ("Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
             "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
NEMOTRON_ARCHS = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
MLA_ARCHS = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM",
             "KimiK2ForCausalLM", "GlmMoeDsaForCausalLM")


def _get(cfg: dict, *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def _dtype(cfg: dict) -> str:
    d = _get(cfg, "torch_dtype", "dtype", default="bfloat16")
    d = str(d).replace("torch.", "")
    return {"float": "float32", "half": "float16", "bf16": "bfloat16", "fp16": "float16"}.get(d, d)


def facts_from_config(cfg: dict) -> ModelFacts:
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    f = _facts_from_config(cfg, text)
    f.raw = text
    return f


def _facts_from_config(cfg: dict, text: dict) -> ModelFacts:
    archs = cfg.get("architectures") or []
    arch = archs[0] if archs else str(cfg.get("model_type", "unknown"))
    if arch in GDN_ARCHS or text.get("linear_num_value_heads"):
        return _gdn(arch, cfg, text)
    if arch in NEMOTRON_ARCHS or "hybrid_override_pattern" in text:
        return _nemotron(arch, text)
    if arch == "GraniteMoeHybridForCausalLM" or (text.get("layer_types") and "mamba" in text.get("layer_types", [])):
        return _granite(arch, text)
    if arch == "FalconH1ForCausalLM":
        return _falcon_h1(arch, text)
    if arch == "JambaForCausalLM":
        return _jamba(arch, text)
    if arch in ("Mamba2ForCausalLM",):
        return _mamba2_only(arch, text)
    if arch == "BambaForCausalLM":
        return _bamba(arch, text)
    if arch in MLA_ARCHS or text.get("kv_lora_rank"):
        return _mla(arch, text)
    state_keys = sorted(k for k in text if any(w in k for w in ("mamba", "ssm_", "linear_", "conv_kernel", "short_conv")))
    if state_keys:
        raise ModelConfigError(f"architecture {arch!r}: its state layers ({', '.join(state_keys[:4])}) are not modelled "
                               f"by vllm-diag, so no KV plan can be predicted")
    if text.get("num_attention_heads") and text.get("hidden_size"):
        f = _dense(arch, text)
        if arch not in DENSE_ARCHS:
            f.not_modelled.append(f"architecture {arch} is not in vllm-diag's model table: read as a plain decoder "
                                  f"(every layer full attention{', sliding per layer_types' if text.get('layer_types') else ''})")
        return f
    raise ModelConfigError(f"architecture {arch!r}: not described by vllm-diag (no attention or state dims found)")


# Decoder-only architectures whose KV cache is full (or layer_types-sliding) attention in every layer.
DENSE_ARCHS = frozenset({
    "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM", "Phi3ForCausalLM",
    "OlmoForCausalLM", "Olmo2ForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM",
    "InternLM2ForCausalLM", "GPTNeoXForCausalLM", "GptOssForCausalLM", "Glm4ForCausalLM", "CohereForCausalLM",
})


def _bamba(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mamba2", dtype=_dtype(c))
    _attn_dims(f, c)
    n = int(c["num_hidden_layers"])
    attn = set(c.get("attn_layer_indices") or [])
    f.num_layers = n
    f.layers = [["attention"] if i in attn else ["mamba2"] for i in range(n)]
    f.mamba2 = _mamba2_dims(c, int(c["hidden_size"]))
    f.mamba_chunk_size = c.get("mamba_chunk_size")
    return f


# Architectures whose attention layers ignore config.json's head_dim (vLLM's model code: Jamba and
# GraniteMoeHybrid use hidden_size // num_attention_heads), while ModelConfig.get_head_size -- which the
# hybrid block-size alignment uses -- still reads head_dim.
_HIDDEN_OVER_HEADS = ("JambaForCausalLM", "GraniteMoeHybridForCausalLM")


def _attn_dims(f: ModelFacts, c: dict) -> None:
    f.num_attention_heads = _get(c, "num_attention_heads", "n_head")
    f.num_kv_heads = _get(c, "num_key_value_heads", "num_kv_heads", default=f.num_attention_heads)
    hd = _get(c, "head_dim", "attention_head_dim")
    if not hd:  # ModelConfig ignores head_dim 0/None (some configs materialise a missing one as 0)
        hd = None
    derived = c["hidden_size"] // f.num_attention_heads if f.num_attention_heads and c.get("hidden_size") else None
    f.config_head_size = hd if hd is not None else derived
    f.head_dim = derived if (f.architecture in _HIDDEN_OVER_HEADS and derived) else (hd if hd is not None else derived)
    f.max_position_embeddings = c.get("max_position_embeddings")
    f.vocab_size = c.get("vocab_size")


def _dense(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "dense", dtype=_dtype(c))
    _attn_dims(f, c)
    n = int(_get(c, "num_hidden_layers", "n_layer", default=1))
    f.num_layers = n
    types = c.get("layer_types")
    sw = c.get("sliding_window") if c.get("use_sliding_window", True) is not False else None
    f.sliding_window = sw
    if isinstance(types, list) and len(types) == n:
        f.layers = [["sliding" if t == "sliding_attention" and sw else "attention"] for t in types]
    else:
        f.layers = [["sliding" if sw and c.get("model_type") in ("mistral",) else "attention"] for _ in range(n)]
    f.mtp_layers = int(_get(c, "num_nextn_predict_layers", "mtp_num_hidden_layers", default=0) or 0)
    return f


def _gdn(arch: str, cfg: dict, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "gdn", dtype=_dtype(c) if ("torch_dtype" in c or "dtype" in c) else _dtype(cfg))
    _attn_dims(f, c)
    n = int(c["num_hidden_layers"])
    f.num_layers = n
    types = c.get("layer_types")
    if not (isinstance(types, list) and len(types) == n):
        interval = int(c.get("full_attention_interval", 4))
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    f.layers = [["attention"] if t == "full_attention" else ["gdn"] for t in types]
    f.gdn = {
        "nk": int(c["linear_num_key_heads"]), "nv": int(c["linear_num_value_heads"]),
        "dk": int(c["linear_key_head_dim"]), "dv": int(c["linear_value_head_dim"]),
        "conv_kernel": int(c.get("linear_conv_kernel_dim", 4)),
    }
    if arch.startswith("Qwen3_5"):
        f.mamba_ssm_dtype = c.get("mamba_ssm_dtype") or cfg.get("mamba_ssm_dtype")
    f.mtp_layers = int(_get(c, "num_nextn_predict_layers", "mtp_num_hidden_layers", default=0) or 0)
    return f


def _nemotron(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mamba2", dtype=_dtype(c))
    _attn_dims(f, c)
    pattern = c.get("hybrid_override_pattern")
    if not pattern and isinstance(c.get("layers_block_type"), list):
        words = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-", "moe": "E"}
        unknown = sorted({str(t) for t in c["layers_block_type"] if t not in words})
        if unknown:
            raise ModelConfigError(f"{arch}: layers_block_type {unknown} in config.json is not one vllm-diag models")
        pattern = "".join(words[t] for t in c["layers_block_type"])
    if not pattern:
        raise ModelConfigError(f"{arch}: config.json has neither hybrid_override_pattern nor layers_block_type")
    if set(pattern) - set("M*-E"):
        raise ModelConfigError(f"{arch}: hybrid_override_pattern {pattern!r} has layer kinds vllm-diag does not model")
    f.num_layers = len(pattern)
    f.layers = [["mamba2"] if ch == "M" else ["attention"] if ch == "*" else [] for ch in pattern]
    f.non_gated_moe = "E" in pattern  # NemotronHForCausalLM.is_non_gated_moe (relu2 experts)
    nh, hd = int(c["mamba_num_heads"]), int(c["mamba_head_dim"])
    f.mamba2 = {
        "intermediate": nh * hd, "n_groups": int(c.get("n_groups", 8)), "n_heads": nh, "head_dim": hd,
        "d_state": int(c["ssm_state_size"]), "conv_kernel": int(c.get("conv_kernel", 4)),
    }
    f.mamba_chunk_size = _get(c, "mamba_chunk_size", "chunk_size", default=None)
    f.mamba_ssm_dtype = c.get("mamba_ssm_cache_dtype") or "float32"  # vLLM's NemotronH hook default
    f.mtp_layers = int(_get(c, "num_nextn_predict_layers", "mtp_num_hidden_layers", default=0) or 0)
    return f


def _mamba2_dims(c: dict, hidden: int) -> dict[str, int]:
    expand = c.get("mamba_expand", 2)
    inter = c.get("mamba_d_ssm") or int(expand * hidden)
    nh = int(c.get("mamba_n_heads", inter // int(c.get("mamba_d_head", 64))))
    return {
        "intermediate": int(inter), "n_groups": int(c.get("mamba_n_groups", 1)), "n_heads": nh,
        "head_dim": int(c.get("mamba_d_head", inter // nh)), "d_state": int(c.get("mamba_d_state", 128)),
        "conv_kernel": int(c.get("mamba_d_conv", 4)),
    }


# Layer words as configs spell them: Transformers 5 writes "linear_attention"/"full_attention" (vLLM 0.32's
# GraniteMoeHybrid reads those), older checkpoints "mamba"/"attention" (older vLLM releases read those).
_STATE_WORDS = ("mamba", "linear_attention", "mamba2", "ssm")
_ATTN_WORDS = ("attention", "full_attention", "self_attention")


def _layer_word(arch: str, word: Any) -> list[str]:
    w = str(word).lower()
    if w in _STATE_WORDS:
        return ["mamba2"]
    if w in _ATTN_WORDS:
        return ["attention"]
    raise ModelConfigError(f"{arch}: layer type {word!r} in config.json is not one vllm-diag models")


def _granite(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mamba2", dtype=_dtype(c))
    _attn_dims(f, c)
    types = c.get("layer_types") or c.get("layers_block_type") or ["mamba"] * int(c["num_hidden_layers"])
    f.num_layers = len(types)
    f.layers = [_layer_word(arch, t) for t in types]
    f.mamba2 = _mamba2_dims(c, int(c["hidden_size"]))
    f.mamba_chunk_size = c.get("mamba_chunk_size")
    f.config_shape_has_spec = False
    f.config_shape_has_spec_fixed_in = (0, 32, 0)
    return f


def _falcon_h1(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mamba2", dtype=_dtype(c))
    _attn_dims(f, c)
    n = int(c["num_hidden_layers"])
    f.num_layers = n
    f.layers = [["attention", "mamba2"] for _ in range(n)]
    f.mamba2 = _mamba2_dims(c, int(c["hidden_size"]))
    f.mamba_chunk_size = c.get("mamba_chunk_size")
    f.config_shape_has_spec = False
    f.config_shape_has_spec_fixed_in = (0, 32, 0)
    return f


def _jamba(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mamba1", dtype=_dtype(c))
    _attn_dims(f, c)
    n = int(c["num_hidden_layers"])
    f.num_layers = n
    types = c.get("layers_block_type")
    if isinstance(types, list) and len(types) == n:
        f.layers = [["attention"] if str(t) in _ATTN_WORDS else ["mamba1"] for t in types]
    else:
        off, per = int(c.get("attn_layer_offset", 4)), int(c.get("attn_layer_period", 8))
        f.layers = [["attention"] if i % per == off else ["mamba1"] for i in range(n)]
    f.mamba1 = {"intermediate": int(c.get("mamba_expand", 2) * c["hidden_size"]), "d_state": int(c.get("mamba_d_state", 16)),
                "conv_kernel": int(c.get("mamba_d_conv", 4))}
    return f


def _mamba2_only(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "attention_free", dtype=_dtype(c))
    n = int(c["num_hidden_layers"])
    f.num_layers = n
    f.layers = [["mamba2"] for _ in range(n)]
    nh = int(c["num_heads"])
    f.mamba2 = {"intermediate": int(c.get("expand", 2) * c["hidden_size"]), "n_groups": int(c.get("n_groups", 1)),
                "n_heads": nh, "head_dim": int(c["head_dim"]), "d_state": int(c["state_size"]),
                "conv_kernel": int(c.get("conv_kernel", 4))}
    f.mamba_chunk_size = c.get("chunk_size")
    return f


def _mla(arch: str, c: dict) -> ModelFacts:
    f = ModelFacts(arch, "mla", dtype=_dtype(c))
    _attn_dims(f, c)
    n = int(c["num_hidden_layers"])
    f.num_layers = n
    f.mla = {
        "kv_lora_rank": int(c.get("kv_lora_rank", 512)), "qk_rope_head_dim": int(c.get("qk_rope_head_dim", 64)),
        "index_head_dim": c.get("index_head_dim"), "index_topk": c.get("index_topk"), "index_n_heads": c.get("index_n_heads"),
    }
    if arch == "DeepseekV4ForCausalLM":
        f.head_dim = int(c.get("head_dim", 512))
        f.compress_ratios = list(c.get("compress_ratios") or [])
        f.sliding_window = c.get("sliding_window")
        f.layers = [["mla"] if (f.compress_ratios and i < len(f.compress_ratios) and f.compress_ratios[i] > 1) else ["sliding"]
                    for i in range(n)]
    else:
        f.head_dim = f.mla["kv_lora_rank"] + f.mla["qk_rope_head_dim"]
        f.layers = [["mla"] for _ in range(n)]
    f.mtp_layers = int(_get(c, "num_nextn_predict_layers", default=0) or 0)
    return f
