"""Generated tiny-model variants: architecture x config numbers x serve flags.

``sample(rng, arch=None) -> Variant`` draws one configuration; ``generate(seed, n)`` draws ``n``.
A ``Variant`` holds the model's config.json (as Transformers 5 writes it, sometimes re-spelled the
way older checkpoints spell the layer pattern), an optional draft model's config.json, and the
``LLM(...)`` keyword arguments. ``write_variant(v, root)`` writes the model folders (config.json,
generation_config.json and the test bed's 512-token tokenizer; no weights: engines run with
``load_format="dummy"``). ``Variant.key`` is a hash of what defines it, so a matrix can skip
configurations already run.

The space deliberately includes values the engine refuses (head sizes the CPU attention backend
does not support, block sizes off the kernel alignment, FP8 KV with head sizes not divisible by 32,
removed cache modes, architectures this version dropped, ...): the start/fail verdict is half of
what the pre-flight is scored on.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VOCAB = 512
COMMON = {"vocab_size": VOCAB, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3, "tie_word_embeddings": False,
          "max_position_embeddings": 4096, "rms_norm_eps": 1e-5}
HIDDEN = 128

ARCHS = ("llama", "qwen3", "qwen3_next", "qwen3_5", "nemotron_h", "mamba2", "falcon_h1", "granitemoehybrid", "jamba",
         "bamba")


@dataclass
class Variant:
    arch: str
    config: dict[str, Any]
    llm_kwargs: dict[str, Any]
    draft_config: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # how it was drawn (for reports)

    @property
    def key(self) -> str:
        blob = json.dumps([self.config, self.llm_kwargs, self.draft_config], sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:12]

    @property
    def name(self) -> str:
        return f"{self.arch}-{self.key}"

    def to_json(self) -> dict[str, Any]:
        return {"arch": self.arch, "config": self.config, "llm_kwargs": self.llm_kwargs,
                "draft_config": self.draft_config, "notes": self.notes, "key": self.key}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Variant:
        return cls(d["arch"], d["config"], d["llm_kwargs"], d.get("draft_config"), list(d.get("notes") or []))


# ------------------------------------------------------------------------------------------------
# config.json per architecture
# ------------------------------------------------------------------------------------------------


def _attn(rng: random.Random, head_dims=(32, 64, 128), odd: float = 0.08) -> dict[str, Any]:
    heads = rng.choice((2, 4, 8))
    kv = rng.choice([d for d in (1, 2, 4, 8) if heads % d == 0])
    hd = rng.choice(head_dims)
    if rng.random() < odd:
        hd = rng.choice((16, 48, 80, 96, 40))  # some the CPU backend refuses, some it takes
    return {"num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd}


def _dtype(rng: random.Random) -> str:
    return rng.choices(("bfloat16", "float16", "float32"), (6, 2, 1))[0]


def _llama(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 3)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN, "intermediate_size": 256,
           "num_hidden_layers": n, "hidden_act": "silu", **_attn(rng, (32, 64, 128, 256)), **COMMON}
    return cfg


def _qwen3(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 3)
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": HIDDEN, "intermediate_size": 256,
           "num_hidden_layers": n, "hidden_act": "silu", **_attn(rng), **COMMON}
    if rng.random() < 0.3:  # sliding-window layers (layer_types), as Qwen3 configs allow
        cfg["use_sliding_window"] = True
        cfg["sliding_window"] = rng.choice((64, 128, 256))
        cfg["max_window_layers"] = rng.randint(0, n)
        cfg["layer_types"] = ["sliding_attention" if i >= cfg["max_window_layers"] else "full_attention" for i in range(n)]
    return cfg


def _pattern(rng: random.Random, n: int, state: str, attn: str, extra: tuple[str, ...] = ()) -> list[str]:
    """A layer list with at least one state layer and (usually) one attention layer."""
    while True:
        kinds = [rng.choice((state, state, attn) + extra) for _ in range(n)]
        if state in kinds and (attn in kinds or rng.random() < 0.1):
            return kinds


def _gdn_dims(rng: random.Random) -> dict[str, Any]:
    nk = rng.choice((1, 2))
    nv = nk * rng.choice((1, 2))
    dk = rng.choice((64, 128, 128))
    dv = rng.choice((64, 128, 128))
    if rng.random() < 0.06:
        dk = dv = 32  # the CPU GDN kernel refuses head dim 32
    return {"linear_num_key_heads": nk, "linear_num_value_heads": nv, "linear_key_head_dim": dk,
            "linear_value_head_dim": dv, "linear_conv_kernel_dim": rng.choice((2, 3, 4, 4))}


def _qwen3_next(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 5)
    types = _pattern(rng, n, "linear_attention", "full_attention")
    cfg = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": HIDDEN,
           "intermediate_size": 256, "num_hidden_layers": n, "layer_types": types, **_attn(rng, (32, 64, 128)),
           **_gdn_dims(rng), "decoder_sparse_step": 1, "num_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "mlp_only_layers": [], **COMMON}
    if rng.random() < 0.25:  # older spelling: no layer_types, full_attention_interval only
        interval = rng.choice((2, 3, 4))
        cfg.pop("layer_types")
        cfg["full_attention_interval"] = interval
    if rng.random() < 0.4:
        cfg["num_nextn_predict_layers"] = 1
    return cfg


def _qwen3_5(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 5)
    types = _pattern(rng, n, "linear_attention", "full_attention")
    cfg = {"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "hidden_size": HIDDEN,
           "intermediate_size": 256, "num_hidden_layers": n, "layer_types": types, **_attn(rng, (32, 64, 128)),
           **_gdn_dims(rng), **COMMON}
    if rng.random() < 0.3:
        cfg["mamba_ssm_dtype"] = rng.choice(("float32", "bfloat16"))
    return cfg


def _mamba2_heads(rng: random.Random, inter: int) -> tuple[int, int]:
    head_dim = rng.choice([d for d in (16, 32, 64) if inter % d == 0])
    return inter // head_dim, head_dim


def _nemotron_h(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 6)
    kinds = _pattern(rng, n, "mamba", "attention", ("mlp", "moe"))
    t5 = {"mamba": "linear_attention", "attention": "full_attention", "mlp": "mlp", "moe": "moe"}
    inter = rng.choice((128, 256))
    nh, hd = _mamba2_heads(rng, inter)
    groups = rng.choice([g for g in (1, 2, 4) if nh % g == 0])
    cfg = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": HIDDEN,
           "intermediate_size": 256, "layers_block_type": [t5[k] for k in kinds], **_attn(rng, (32, 64, 128)),
           "mamba_num_heads": nh, "mamba_head_dim": hd, "ssm_state_size": rng.choice((16, 32, 64, 128)),
           "n_groups": groups, "conv_kernel": rng.choice((2, 3, 4, 4)), "expand": 2, "chunk_size": rng.choice((64, 128, 256)),
           "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
           "moe_shared_expert_intermediate_size": 64, "n_group": 1, "topk_group": 1, "mamba_ssm_cache_dtype": "float32",
           "layer_norm_epsilon": 1e-5, **COMMON}
    if rng.random() < 0.35:  # the pre-Transformers-5 spelling
        cfg.pop("layers_block_type")
        cfg["hybrid_override_pattern"] = "".join({"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}[k] for k in kinds)
        cfg["num_hidden_layers"] = n
    elif rng.random() < 0.3:  # Transformers 5 list with the older words
        cfg["layers_block_type"] = kinds
    return cfg


def _mamba2(rng: random.Random) -> dict[str, Any]:
    inter = HIDDEN * 2
    nh, hd = _mamba2_heads(rng, inter)
    groups = rng.choice([g for g in (1, 2, 4) if nh % g == 0])
    return {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": HIDDEN, "num_hidden_layers":
            rng.randint(1, 3), "num_heads": nh, "head_dim": hd, "state_size": rng.choice((16, 32, 64, 128)), "expand": 2,
            "n_groups": groups, "conv_kernel": rng.choice((2, 3, 4, 4)), "chunk_size": rng.choice((64, 128, 256)),
            "layer_norm_epsilon": 1e-5, **COMMON}


def _mamba2_block(rng: random.Random, prefix: str = "mamba_") -> dict[str, Any]:
    inter = HIDDEN * 2
    nh, hd = _mamba2_heads(rng, inter)
    groups = rng.choice([g for g in (1, 2) if nh % g == 0])
    return {f"{prefix}n_heads": nh, f"{prefix}d_head": hd, f"{prefix}d_state": rng.choice((16, 32, 64, 128)),
            f"{prefix}n_groups": groups, f"{prefix}d_conv": rng.choice((2, 3, 4, 4)), f"{prefix}expand": 2,
            f"{prefix}chunk_size": rng.choice((64, 128, 256))}


def _falcon_h1(rng: random.Random) -> dict[str, Any]:
    m = _mamba2_block(rng)
    return {"architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "hidden_size": HIDDEN,
            "intermediate_size": 256, "num_hidden_layers": rng.randint(1, 3), **_attn(rng, (32, 64, 128)), **m,
            "mamba_d_ssm": m["mamba_n_heads"] * m["mamba_d_head"], "mamba_rms_norm": False,
            "mamba_norm_before_gate": True, **COMMON}


def _granite(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 5)
    kinds = _pattern(rng, n, "mamba", "attention")
    t5 = {"mamba": "linear_attention", "attention": "full_attention"}
    words = kinds if rng.random() < 0.3 else [t5[k] for k in kinds]  # older checkpoints: "mamba"/"attention"
    return {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": HIDDEN,
            "intermediate_size": 256, "num_hidden_layers": n, "layer_types": words, **_attn(rng, (32, 64, 128)),
            **_mamba2_block(rng), "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 128,
            "position_embedding_type": rng.choice(("rope", "nope")), **COMMON}


def _jamba(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 4)
    period = rng.randint(2, n)
    offset = rng.randrange(period)
    return {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": HIDDEN, "intermediate_size": 256,
            "num_hidden_layers": n, **_attn(rng, (32, 64, 128)), "attn_layer_period": period, "attn_layer_offset": offset,
            "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 2, "num_experts_per_tok": 1,
            "mamba_d_state": rng.choice((8, 16, 32)), "mamba_d_conv": rng.choice((2, 3, 4, 4)), "mamba_expand": 2,
            "mamba_dt_rank": 8, "use_mamba_kernels": False, **COMMON}


def _bamba(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(2, 4)
    m = _mamba2_block(rng)
    return {"architectures": ["BambaForCausalLM"], "model_type": "bamba", "hidden_size": HIDDEN, "intermediate_size": 256,
            "num_hidden_layers": n, **_attn(rng, (32, 64)), **m, "attn_layer_indices": [n - 1], **COMMON}


BUILDERS = {"llama": _llama, "qwen3": _qwen3, "qwen3_next": _qwen3_next, "qwen3_5": _qwen3_5, "nemotron_h": _nemotron_h,
            "mamba2": _mamba2, "falcon_h1": _falcon_h1, "granitemoehybrid": _granite, "jamba": _jamba, "bamba": _bamba}
ARCH_WEIGHTS = {"llama": 2, "qwen3": 1, "qwen3_next": 3, "qwen3_5": 2, "nemotron_h": 3, "mamba2": 1, "falcon_h1": 2,
                "granitemoehybrid": 2, "jamba": 1, "bamba": 0.3}
MTP_ARCHS = ("qwen3_next", "qwen3_5")


def draft_config(rng: random.Random) -> dict[str, Any]:
    cfg = _llama(rng)
    cfg["num_hidden_layers"] = 1
    return cfg


# ------------------------------------------------------------------------------------------------
# Flags
# ------------------------------------------------------------------------------------------------


def _flags(rng: random.Random, arch: str, cfg: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    kw: dict[str, Any] = {"max_model_len": rng.choice((256, 512, 512, 1024, 2048)), "max_num_seqs": rng.choice((2, 4, 4, 8)),
                          "dtype": _dtype(rng)}
    if rng.random() < 0.35:
        kw["block_size"] = rng.choice((16, 32, 48, 64, 96, 128, 144, 256, 512, 1024))
    if rng.random() < 0.25:
        kw["kv_cache_dtype"] = rng.choice(("fp8", "fp8_e4m3", "fp8_e5m2"))
    r = rng.random()
    if r < 0.3:
        kw["enable_prefix_caching"] = True
    elif r < 0.6:
        kw["enable_prefix_caching"] = False
    hybrid = arch not in ("llama", "qwen3")
    if hybrid and rng.random() < 0.25:
        kw["mamba_cache_mode"] = rng.choice(("align", "none", "all"))
    if hybrid and rng.random() < 0.1:
        kw["mamba_block_size"] = rng.choice((64, 128, 256, 512))
    if rng.random() < 0.12:
        kw["enable_chunked_prefill"] = False
    draft = None
    r = rng.random()
    if r < 0.22:
        kw["speculative_config"] = {"method": "ngram", "num_speculative_tokens": rng.randint(1, 4),
                                    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    elif r < 0.34:
        draft = draft_config(rng)
        kw["speculative_config"] = {"model": "@draft", "num_speculative_tokens": rng.randint(1, 3)}
    elif r < 0.42 and arch in MTP_ARCHS:
        cfg["num_nextn_predict_layers"] = 1
        kw["speculative_config"] = {"method": "mtp", "num_speculative_tokens": rng.randint(1, 2)}
    # later additions draw from a generator seeded by what is drawn so far, so the variants of a seed
    # drawn before them stay the same (their engine results stay cached)
    extra = random.Random(json.dumps([arch, cfg, kw], sort_keys=True))
    if kw.get("enable_prefix_caching") is not False and extra.random() < 0.12:
        kw["prefix_match_unit"] = extra.choice((16, 32, 64, 128, 256))
    return kw, draft


def sample(rng: random.Random, arch: str | None = None) -> Variant:
    if arch is None:
        names = list(ARCH_WEIGHTS)
        arch = rng.choices(names, [ARCH_WEIGHTS[n] for n in names])[0]
    cfg = BUILDERS[arch](rng)
    cfg["torch_dtype"] = "bfloat16"
    kw, draft = _flags(rng, arch, cfg)
    return Variant(arch, cfg, kw, draft)


def generate(seed: int, n: int, archs: tuple[str, ...] | None = None) -> list[Variant]:
    rng = random.Random(seed)
    out: list[Variant] = []
    seen: set[str] = set()
    while len(out) < n:
        v = sample(rng, rng.choice(archs) if archs else None)
        if v.key not in seen:
            seen.add(v.key)
            out.append(v)
    return out


# ------------------------------------------------------------------------------------------------
# Model folders
# ------------------------------------------------------------------------------------------------


def tokenizer_dir(cache: Path) -> Path:
    """The test bed's tokenizer files, saved once under ``cache/_tokenizer``."""
    target = cache / "_tokenizer"
    if not (target / "tokenizer.json").is_file():
        from tests.testbed.models import make_tokenizer

        tmp = cache / "_tokenizer.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        make_tokenizer().save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    return target


def _write_model(cfg: dict[str, Any], folder: Path, tok: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (folder / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3}))
    for f in tok.iterdir():
        if f.is_file():
            shutil.copyfile(f, folder / f.name)


def write_variant(v: Variant, root: Path) -> tuple[Path, dict[str, Any]]:
    """Write the model (and draft) folders under ``root``; return (model dir, LLM kwargs with real paths)."""
    tok = tokenizer_dir(root)
    model = root / v.name
    _write_model(v.config, model, tok)
    kw = json.loads(json.dumps(v.llm_kwargs))
    spec = kw.get("speculative_config")
    if v.draft_config is not None and isinstance(spec, dict) and spec.get("model") == "@draft":
        draft = root / f"{v.name}-draft"
        _write_model(v.draft_config, draft, tok)
        spec["model"] = str(draft)
    return model, kw
