"""Pre-flight predictor: formulas vs worked numbers computed by hand from vLLM's source and vs vLLM's own classes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_diag.preflight.hfconfig import facts_from_config, load_model_facts
from vllm_diag.preflight.predict import (attn_bytes_per_token, mamba_shapes, parse_gpu, predict, shapes_bytes,
                                    tq_slot_size)

QWEN3_NEXT = {  # HF defaults of Qwen3-Next-80B-A3B (the dims that set the pages)
    "architectures": ["Qwen3NextForCausalLM"], "torch_dtype": "bfloat16", "hidden_size": 2048, "num_hidden_layers": 48,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4, "max_position_embeddings": 32768,
}
H100 = parse_gpu("H100")


@pytest.mark.parametrize("tp, k, kv, block, mamba_page, pad", [
    # Qwen3-Next numbers worked by hand from vLLM's MambaSpec / FullAttentionSpec page formulas (a = 16)
    (1, 0, "auto", 544, 1_097_728, 1.49),
    (1, 1, "auto", 544, 1_114_112, None),
    (1, 2, "auto", 560, 1_130_496, 1.45),
    (1, 0, "fp8", 1072, 1_097_728, None),
    (4, 0, "auto", 272, 274_432, 1.49),
    (8, 0, "auto", 144, 137_216, 7.46),
])
def test_qwen3_next_alignment_matches_worked_numbers(tp, k, kv, block, mamba_page, pad):
    facts = facts_from_config(QWEN3_NEXT)
    cfg = {"tensor_parallel_size": tp, "kv_cache_dtype": kv, "enable_prefix_caching": False}
    if k:
        cfg.update(speculative_method="ngram", num_speculative_tokens=k)
    st = predict(facts, cfg, (0, 32, 0), H100)
    assert st.config["block_size"] == block
    assert st.environment["mamba_page_config"] == mamba_page
    assert st.environment.get("mamba_padding_percent") == pad


def test_worked_numbers_other_families():
    nemo = facts_from_config({"architectures": ["NemotronHForCausalLM"], "hidden_size": 4096, "hybrid_override_pattern": "M*M-",
                              "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "mamba_num_heads": 128,
                              "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4})
    st = predict(nemo, {"enable_prefix_caching": False}, (0, 32, 0), H100)
    assert (st.environment["mamba_page_config"], st.config["block_size"]) == (4_255_744, 1040)
    granite = facts_from_config({"architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 2,
                                 "layer_types": ["mamba", "attention"], "num_attention_heads": 32, "num_key_value_heads": 8,
                                 "head_dim": 128, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 128,
                                 "mamba_d_head": 64, "mamba_d_state": 128, "mamba_d_conv": 4})
    st = predict(granite, {"enable_prefix_caching": False}, (0, 32, 0), H100)
    assert (st.environment["mamba_page_config"], st.config["block_size"]) == (2_147_840, 528)
    # Granite-4.0-H + 1 speculative token on 0.30: the config-side page omits the spec row -> MambaSpec assert
    st = predict(granite, {"enable_prefix_caching": False, "speculative_method": "ngram", "num_speculative_tokens": 1},
                 (0, 30, 0), H100)
    assert st.errors and "page_size_padded >= page_size" in st.errors[0].location
    assert st.errors[0].numbers["mamba_page_size_padded"] == 2_162_688
    st = predict(granite, {"enable_prefix_caching": False, "speculative_method": "ngram", "num_speculative_tokens": 1},
                 (0, 32, 0), H100)
    assert not st.errors


def test_turboquant_slot_size():
    assert tq_slot_size(128, "turboquant_k8v4") == 196  # 128 + (64 + 4), section 3.1
    assert tq_slot_size(256, "turboquant_4bit_nc") == 262


def test_missing_config_is_a_clear_error(tmp_path, monkeypatch):
    from vllm_diag.errors import DiagError

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(DiagError, match="not found locally or in the Hugging Face cache"):
        load_model_facts("nobody/no-such-model")
    with pytest.raises(DiagError, match="no such model folder"):
        load_model_facts(str(tmp_path / "missing"))


def test_hf_cache_layout_is_found(tmp_path, monkeypatch):
    snap = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 2, '
                                      '"num_key_value_heads": 1, "num_hidden_layers": 2}')
    (tmp_path / "hub" / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    f = load_model_facts("org/tiny")
    assert f.family == "dense" and f.source == str(snap / "config.json") and not f.bundled


# ------------------------------------------------------------------------------ vs vLLM's classes


@pytest.fixture(scope="module")
def kci():
    pytest.importorskip("vllm")
    import vllm.v1.kv_cache_interface as kci

    return kci


@pytest.mark.slow
@pytest.mark.parametrize("heads, head, kv", [(2, 256, "auto"), (1, 128, "auto"), (8, 128, "fp8"), (4, 64, "fp8_e4m3"),
                                             (2, 32, "auto")])
def test_attention_page_matches_vllm(kci, heads, head, kv):
    import torch

    dtype = torch.bfloat16 if kv == "auto" else torch.uint8
    for block in (16, 128, 544):
        spec = kci.FullAttentionSpec(block_size=block, num_kv_heads=heads, head_size=head, dtype=dtype)
        assert spec.page_size_bytes == block * attn_bytes_per_token((0, 32, 0), heads, head, kv, "bfloat16")


@pytest.mark.slow
def test_mla_page_matches_vllm(kci):
    import torch

    spec = kci.MLAAttentionSpec(block_size=64, num_kv_heads=1, head_size=576, dtype=torch.bfloat16)
    facts = facts_from_config({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_hidden_layers": 2,
                               "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64})
    st = predict(facts, {}, (0, 32, 0), H100)
    assert st.layer_specs[0].page_size_bytes == spec.page_size_bytes == 73_728


@pytest.mark.slow
@pytest.mark.parametrize("tp, k", [(1, 0), (1, 3), (4, 2), (8, 0)])
def test_mamba_shapes_and_pages_match_vllm(kci, tp, k):
    import torch

    from vllm.model_executor.layers.mamba.mamba_utils import MambaStateShapeCalculator as C

    q = facts_from_config(QWEN3_NEXT)
    g = q.gdn
    theirs = C.gated_delta_net_state_shape(tp, g["nk"], g["nv"], g["dk"], g["dv"], g["conv_kernel"], k)
    ours = mamba_shapes(q, tp, k)
    assert [sorted(s) for s in ours] == [sorted(s) for s in theirs]  # conv layout SD/DS has the same bytes
    spec = kci.MambaSpec(block_size=16, shapes=tuple(tuple(s) for s in theirs), dtypes=(torch.bfloat16, torch.bfloat16))
    assert spec.page_size_bytes == shapes_bytes(ours, ["bfloat16", "bfloat16"])
    nemo = load_model_facts("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B")
    m = nemo.mamba2
    theirs = C.mamba2_state_shape(tp, m["intermediate"], m["n_groups"], m["n_heads"], m["head_dim"], m["d_state"],
                                  m["conv_kernel"], k)
    assert [sorted(s) for s in mamba_shapes(nemo, tp, k)] == [sorted(s) for s in theirs]


def _real_specs(kci, state):
    """Our predicted layer specs -> vLLM KVCacheSpec objects (page inputs only)."""
    import torch

    dt = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "uint8": torch.uint8}
    out = {}
    for s in state.specs("layer"):
        if s.spec_type == "MambaSpec":
            out[s.layer_name] = kci.MambaSpec(block_size=s.block_size, shapes=tuple(tuple(x) for x in s.mamba_shapes),
                                              dtypes=tuple(dt[d] for d in s.mamba_dtypes), page_size_padded=s.page_size_padded,
                                              mamba_cache_mode=s.mamba_cache_mode or "none",
                                              num_speculative_blocks=s.num_speculative_blocks or 0)
        else:
            out[s.layer_name] = kci.FullAttentionSpec(block_size=s.block_size, num_kv_heads=s.num_kv_heads,
                                                      head_size=s.head_size, dtype=dt[s.dtype])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", ["qwen3_next_draft_big", "qwen3_next_mtp", "nemotron_tp4_mtp", "qwen36_tp2"])
def test_unify_and_groups_match_vllm_032(kci, case):
    """Our 0.32 unification + grouping on predicted specs == vLLM 0.32's get_kv_cache_groups on the same specs."""
    from vllm.v1.core import kv_cache_utils as kcu

    draft = None
    if case == "qwen3_next_draft_big":
        facts = facts_from_config(QWEN3_NEXT)
        draft = facts_from_config({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 2,
                                   "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256})
        cfg = {"speculative_method": "draft_model", "num_speculative_tokens": 3, "draft_model": "d"}
    elif case == "qwen3_next_mtp":
        facts = facts_from_config({**QWEN3_NEXT, "num_nextn_predict_layers": 1})
        cfg = {"speculative_method": "mtp", "num_speculative_tokens": 1}
    elif case == "nemotron_tp4_mtp":
        facts = load_model_facts("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B")
        cfg = {"speculative_method": "mtp", "num_speculative_tokens": 1, "tensor_parallel_size": 4, "kv_cache_dtype": "fp8"}
    else:
        facts = load_model_facts("Qwen/Qwen3.6-27B")
        cfg = {"tensor_parallel_size": 2}
    st = predict(facts, {**cfg, "enable_prefix_caching": False, "max_model_len": 8192}, (0, 32, 0), H100, draft=draft)
    assert not st.errors
    specs = _real_specs(kci, st)
    from vllm.config import CacheConfig

    cache_config = CacheConfig()
    cache_config.kv_cache_layout = "LBHNC"  # layer-outermost (the default layouts): no block-outermost packing
    vcfg = SimpleNamespace(scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=False),
                           cache_config=cache_config, model_config=None, parallel_config=SimpleNamespace(),
                           kv_transfer_config=None, speculative_config=None)
    groups = kcu.get_kv_cache_groups(vcfg, specs)
    assert len(groups) == len(st.kv_cache_groups)
    theirs = sorted((type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes,
                     len(g.layer_names)) for g in groups)
    ours = sorted((g.spec_type, g.block_size, g.page_size_bytes, len(g.layer_names)) for g in st.kv_cache_groups)
    assert ours == theirs
    assert sorted(tuple(sorted(g.layer_names)) for g in groups) == sorted(tuple(sorted(g.layer_names)) for g in st.kv_cache_groups)


def test_the_cpu_backends_ssm_state_dtype_follows_the_hosts_avx512_bf16():
    """vLLM 0.32's CPU platform keeps a GDN model's SSM state in float32 on hosts with AVX512-BF16 (its accelerated
    kernels) and in the model's dtype elsewhere: the attention block that covers the Mamba page follows, and a host
    whose flags are unknown is said to be assumed, not silently defaulted."""
    from vllm_diag.rules.base import GpuInfo

    facts = facts_from_config({**QWEN3_NEXT, "num_hidden_layers": 4, "torch_dtype": "bfloat16"})
    cfg = {"max_model_len": 512, "max_num_seqs": 4, "enforce_eager": True}

    def state(flag):
        st = predict(facts, dict(cfg), (0, 32, 0), GpuInfo(name="cpu", avx512_bf16=flag), entry="llm")
        return st.config.get("mamba_ssm_cache_dtype") or "auto", st.kv_cache_groups[0].page_size_bytes, st.environment.get("not_modelled") or []

    fp32, bf16, unknown = state(True), state(False), state(None)
    assert fp32[0] == "float32" and bf16[0] != "float32" and bf16[1] < fp32[1]
    assert unknown[:2] == fp32[:2] and any("AVX512-BF16" in n for n in unknown[2])
    assert not any("AVX512-BF16" in n for n in fp32[2])
