"""vLLM's start-up validation and per-release defaults in the pre-flight (no engine).

* ``pyeval``: vLLM's conditions evaluated over a namespace, never executed; unknown names are NotModelled;
* ``versions``: defaults extracted from each release's source (prefix caching off for hybrids until 0.27,
  on from 0.28; Mamba cache modes; removed architectures);
* ``validate``: the catalog's conditions with the predicted values, and the CPU kernel checks;
* the 0.26.0 GPU recording of ``vllm serve`` on Qwen3-Next without --enable-prefix-caching;
* layer patterns in every spelling, unknown architectures -> an explicit "not modelled".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_diag.errors import DiagError
from vllm_diag.preflight import run_check
from vllm_diag.preflight.hfconfig import ModelConfigError, facts_from_config
from vllm_diag.preflight.pyeval import NotModelled, Obj, eval_expr, run_block
from vllm_diag.preflight.versions import lookup

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
REPO = Path(__file__).resolve().parents[1]

BASE = {"hidden_size": 128, "vocab_size": 512, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32}
QWEN3_NEXT = {**BASE, "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "num_hidden_layers": 4,
              "layer_types": ["linear_attention"] * 3 + ["full_attention"], "linear_num_key_heads": 1,
              "linear_num_value_heads": 2, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
              "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2}
NEMOTRON = {**BASE, "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
            "layers_block_type": ["linear_attention", "mlp", "full_attention", "mlp"], "mamba_num_heads": 8,
            "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 1, "conv_kernel": 4, "chunk_size": 128}
GRANITE = {**BASE, "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
           "num_hidden_layers": 3, "layer_types": ["linear_attention", "full_attention", "linear_attention"],
           "mamba_n_heads": 8, "mamba_d_head": 32, "mamba_d_state": 64, "mamba_n_groups": 1, "mamba_d_conv": 4,
           "mamba_expand": 2}
BAMBA = {**GRANITE, "architectures": ["BambaForCausalLM"], "model_type": "bamba", "attn_layer_indices": [1]}


def model(tmp_path: Path, cfg: dict, name: str = "m") -> str:
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def check(path: str, *flags: str, version: str = "0.32.0", gpu: str = "cpu", entry: str = "llm"):
    return run_check(["vllm", "serve", path, "--max-model-len", "512", "--max-num-seqs", "4", *flags],
                     version=version, gpu=gpu, suggest=False, entry=entry)


def errors(res) -> dict[str, str]:
    return {f.numbers.get("check") or e.numbers.get("check"): f.message
            for f in res.findings if f.rule == "startup_validation"
            for e in res.state.errors if e.message == f.message}


# ------------------------------------------------------------------------------------------ pyeval


def test_pyeval_evaluates_conditions_and_never_executes():
    env = {"cache_config": {"block_size": 144, "enable_prefix_caching": True}, "head_size": 80, "fp8_kv": True}
    assert eval_expr("cache_config.block_size % 32 != 0 and cache_config.enable_prefix_caching", env) is True
    assert eval_expr("(head_size is not None and head_size % 32 != 0 and (head_size % 16 == 0)) and (fp8_kv)", env)
    assert eval_expr("f'{head_size}x{cache_config.block_size:>5}'", env) == "80x  144"
    for unsafe in ("__import__('os').system('true')", "open('/etc/passwd')", "cache_config.__class__", "lambda: 1"):
        with pytest.raises(NotModelled):
            eval_expr(unsafe, env)
    with pytest.raises(NotModelled) as exc:
        eval_expr("model_config.is_hybrid", env)
    assert exc.value.name == "model_config"


def test_run_block_runs_vllm_config_functions_over_the_namespace():
    body = '''
model_config = vllm_config.model_config
cache_config = vllm_config.cache_config
if cache_config.enable_prefix_caching:
    if cache_config.mamba_cache_mode == "none":
        cache_config.mamba_cache_mode = "all" if model_config.supports_mamba_prefix_caching else "align"
        logger.warning("mode %s", cache_config.mamba_cache_mode)
    if cache_config.mamba_cache_mode == "align":
        assert vllm_config.scheduler_config.enable_chunked_prefill, (
            "Chunked prefill is required for mamba cache mode 'align'."
        )
'''
    vc = {"model_config": {"supports_mamba_prefix_caching": False},
          "cache_config": {"enable_prefix_caching": True, "mamba_cache_mode": "none"},
          "scheduler_config": {"enable_chunked_prefill": False}}
    res = run_block(body, {"vllm_config": Obj(vc, "vllm_config")})
    assert vc["cache_config"]["mamba_cache_mode"] == "align"  # the assignment landed in the caller's dict
    assert res.failure is not None and res.failure.exc_type == "AssertionError"
    assert res.failure.message == "Chunked prefill is required for mamba cache mode 'align'."


# ------------------------------------------------------------------------------------------ versions


def test_prefix_caching_default_per_release_comes_from_the_source():
    for v, hybrid in (((0, 26, 0), False), ((0, 27, 1), False), ((0, 28, 0), True), ((0, 32, 0), True)):
        fact = lookup("prefix_caching_default", v)
        assert fact is not None and fact.value["hybrid"] is hybrid and fact.value["decoder"] is True, v
        assert "arg_utils.py" in fact.source
    assert lookup("mamba_cache_mode", (0, 32, 0)).value["modes"] == ["align", "none"]
    assert "all" in lookup("mamba_cache_mode", (0, 26, 0)).value["modes"]
    assert lookup("removed_architectures", (0, 32, 0)).value["BambaForCausalLM"] == "0.23.0"
    assert "BambaForCausalLM" in lookup("architectures", (0, 22, 0)).value
    newer = lookup("prefix_caching_default", (0, 40, 0))
    assert newer is not None and not newer.exact and "not modelled" in newer.note
    patch = lookup("prefix_caching_default", (0, 26, 1))  # a patch release between scanned ones
    assert patch is not None and patch.value["hybrid"] is False


def test_vllm_0_26_serve_hybrid_defaults_match_the_gpu_recording():
    """0.26.0 `vllm serve` of Qwen3-Next without --enable-prefix-caching, recorded on an H200
    (assets/gpu/qwen3next-serve-ngram3.db): prefix caching off, Mamba mode none, Mamba block 512,
    state-index tables 8 x 4, attention block 288."""
    from vllm_diag.store import Store

    cmd = ("python -m vllm.entrypoints.openai.api_server --model " + str(FIXTURES / "qwen3_next_gpu") +
           " --max-model-len 512 --max-num-seqs 8 --gpu-memory-utilization 0.3 --speculative-config "
           "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4,\"prompt_lookup_min\":2}'")
    res = run_check(cmd, version="0.26.0", gpu="H200", suggest=False)
    c = res.state.config
    assert c["enable_prefix_caching"] is False and c["mamba_cache_mode"] == "none"
    assert c["mamba_block_size"] == 512 and c["block_size"] == 288
    assert "prefix_cache_granularity" not in {f.rule for f in res.findings}
    with Store.open(REPO / "assets" / "gpu" / "qwen3next-serve-ngram3.db") as store:
        real = store.load(None).state
    ours = sorted((g.spec_type, g.block_size, g.page_size_bytes, len(g.layer_names)) for g in res.state.kv_cache_groups)
    theirs = sorted({(g.group_index, g.spec_type, g.block_size, g.page_size_bytes, len(g.layer_names))
                     for g in real.kv_cache_groups})
    assert ours == sorted(t[1:] for t in theirs)
    assert sorted([b.rows, b.columns] for b in res.state.block_tables) == sorted(
        [b.rows, b.columns] for b in {(b.group_index, b.rows, b.columns): b for b in real.block_tables}.values())
    on = run_check(cmd.replace("--max-model-len", "--enable-prefix-caching --max-model-len"), version="0.26.0",
                   gpu="H200", suggest=False)
    assert on.state.config["mamba_cache_mode"] == "align"  # Qwen3-Next has no Mamba prefix-caching support: align
    assert run_check(cmd, version="0.32.0", gpu="H200", suggest=False).state.config["enable_prefix_caching"] is True


# ------------------------------------------------------------------------------------------ validation


def test_chunked_prefill_off_with_align_mode_is_refused(tmp_path):
    res = check(model(tmp_path, NEMOTRON), "--no-enable-chunked-prefill")
    msgs = errors(res)
    assert msgs["mamba_cache_mode"] == "Chunked prefill is required for mamba cache mode 'align'."
    assert res.fails
    f = next(f for f in res.findings if f.rule == "startup_validation")
    assert f.confidence == "high" and "enable_chunked_prefill" in " ".join(e.text for e in f.evidence)
    # prefix caching off: mode 'none', nothing to assert
    assert not errors(check(model(tmp_path, NEMOTRON), "--no-enable-chunked-prefill", "--no-enable-prefix-caching"))


@pytest.mark.parametrize("flags, key, text", [
    (["--block-size", "144"], "common_block_size", "No common block size for 144"),
    (["--kv-cache-dtype", "fp8"], "cpu_fp8_head_size", "FP8 KV cache requires head_size divisible by 32"),
    (["--mamba-block-size", "256", "--no-enable-prefix-caching"], "mamba_block_size_needs_prefix_caching",
     "--mamba-block-size can only be set with --enable-prefix-caching"),
    (["--dtype", "float16"], "cpu_gdn_bf16", "CPU GDN attention requires BF16"),
])
def test_catalog_conditions_evaluated_on_the_predicted_config(tmp_path, flags, key, text):
    llama = {**BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2}
    # a hybrid's alignment raises the block to a multiple of 32 on its own: a dense model keeps --block-size 144
    cfg = {"common_block_size": llama, "cpu_fp8_head_size": {**QWEN3_NEXT, "head_dim": 80}}.get(key, QWEN3_NEXT)
    res = check(model(tmp_path, cfg), *flags)
    msgs = errors(res)
    assert key in msgs and text in msgs[key], res.findings
    err = next(e for e in res.state.errors if e.numbers.get("check") == key)
    if key != "common_block_size":  # the others carry the catalog's own condition text
        assert err.numbers.get("site") and err.numbers["condition"]
    # the same command with the offending flag dropped passes that check
    assert key not in errors(check(model(tmp_path, cfg, "ok")))


def test_cpu_kernel_checks_and_gpu_untouched(tmp_path):
    res = check(model(tmp_path, {**QWEN3_NEXT, "linear_key_head_dim": 32, "linear_value_head_dim": 32}))
    assert "Unexpected head dim size, 32" in errors(res)["cpu_gdn_head_dim"]
    res = check(model(tmp_path, {**QWEN3_NEXT, "linear_conv_kernel_dim": 3}, "c3"))
    assert "cpu_gdn_conv_width" in errors(res)
    res = check(model(tmp_path, {**NEMOTRON, "layers_block_type": ["linear_attention", "moe", "full_attention"]}, "moe"))
    assert "is_act_and_mul=False" in errors(res)["cpu_non_gated_moe"]
    gpu = check(model(tmp_path, {**NEMOTRON, "layers_block_type": ["linear_attention", "moe", "full_attention"]}, "moe"),
                gpu="H100", entry="serve")
    assert not errors(gpu)  # CUDA runs non-gated MoE and has its own GDN kernels


def test_removed_architecture_per_release(tmp_path):
    path = model(tmp_path, BAMBA)
    res = check(path)
    assert "was supported in vLLM until v0.23.0" in errors(res)["architecture"]
    assert "architecture" not in errors(check(path, version="0.22.1", gpu="H100", entry="serve"))


# ------------------------------------------------------------------------------------------ reading


def test_layer_patterns_in_every_spelling():
    t5 = facts_from_config(GRANITE)
    old = facts_from_config({**GRANITE, "layer_types": ["mamba", "attention", "mamba"]})
    assert t5.layers == old.layers == [["mamba2"], ["attention"], ["mamba2"]]
    words = facts_from_config(NEMOTRON)
    pattern = facts_from_config({**{k: v for k, v in NEMOTRON.items() if k != "layers_block_type"},
                                 "hybrid_override_pattern": "M-*-"})
    old_words = facts_from_config({**NEMOTRON, "layers_block_type": ["mamba", "mlp", "attention", "mlp"]})
    assert words.layers == pattern.layers == old_words.layers == [["mamba2"], [], ["attention"], []]
    with pytest.raises(ModelConfigError, match="not one vllm-diag models"):
        facts_from_config({**GRANITE, "layer_types": ["linear_attention", "sparse_attention", "mamba"]})
    # Jamba and GraniteMoeHybrid layers use hidden // heads; ModelConfig (the alignment) reads head_dim
    g = facts_from_config({**GRANITE, "head_dim": 128})
    assert (g.head_dim, g.config_head_size) == (32, 128)


def test_unknown_architecture_is_not_modelled(tmp_path):
    plain = {**BASE, "architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "num_hidden_layers": 2}
    res = check(model(tmp_path, plain))
    nm = [f for f in res.findings if f.rule == "not_modelled"]
    assert nm and "Starcoder2ForCausalLM" in nm[0].message and nm[0].severity == "warning"
    fancy = check(model(tmp_path, {**plain, "architectures": ["FancyNewForCausalLM"]}, "fancy"))
    assert "are not supported for now" in errors(fancy)["architecture"]  # not in vLLM 0.32's registry
    from vllm_diag.views import build

    assert build(res.to_record()).findings.verdict.startswith("NOT MODELLED")
    with pytest.raises(DiagError, match="state layers .* are not modelled"):
        check(model(tmp_path, {**plain, "mamba_d_state": 16, "architectures": ["FancyHybridForCausalLM"]}, "h"))
    # a release newer than the newest scanned one: its defaults are assumed, and said so
    newer = check(model(tmp_path, QWEN3_NEXT, "q"), version="0.40.0", gpu="H100", entry="serve")
    assert any("newer than the newest release scanned" in f.message for f in newer.findings if f.rule == "not_modelled")


def test_preflight_sites_are_the_catalogs_rows():
    """diag/data/preflight_sites.json is a copy of the catalog rows the bindings use (loading the whole
    catalog costs ~0.4 s per check); rerun scripts/extract_vllm_defaults.py --sites-only when it drifts."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("extract_vllm_defaults", REPO / "scripts" / "extract_vllm_defaults.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from vllm_diag.preflight.validate import BINDINGS, sites

    fresh = mod.preflight_sites()["bindings"]
    assert json.loads(json.dumps(fresh)) == sites()
    assert all(fresh[b.key] for b in BINDINGS), [b.key for b in BINDINGS if not fresh[b.key]]


def test_prefix_match_unit_against_the_group_block_sizes(tmp_path):
    llama = {**BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2}
    one = check(model(tmp_path, llama), "--prefix-match-unit", "64")  # one group of 128-token blocks
    assert "with a single KV cache group, prefix-cache hits land on the block size (128)" in \
        errors(one)["prefix_match_unit_single"]
    assert "prefix_match_unit_single" not in errors(check(model(tmp_path, llama), "--prefix-match-unit", "128"))
    hybrid = model(tmp_path, QWEN3_NEXT, "q")
    sizes = sorted({g.block_size for g in check(hybrid).state.kv_cache_groups})
    bad = next(u for u in (256, 512, 96) if any(b % u for b in sizes))
    res = check(hybrid, "--prefix-match-unit", str(bad))
    assert f"Invalid prefix_match_unit={bad}" in errors(res)["prefix_match_unit_multi"]
    assert eval_expr("any((bs % hash_block_size != 0 for bs in hashing_sizes))",
                     {"hashing_sizes": sizes, "hash_block_size": bad})
    assert not errors(check(hybrid, "--prefix-match-unit", "32"))


def test_scheduler_and_speculative_checks_from_the_catalog(tmp_path):
    llama = model(tmp_path, {**BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2})
    res = check(llama, "--max-num-batched-tokens", "2")  # 4 sequences need at least 4 tokens per step
    msg = errors(res)["SchedulerConfig.verify_max_model_len"]
    assert "max_num_batched_tokens (2)" in msg and "max_num_seqs (4)" in msg
    res = check(llama, "--max-num-batched-tokens", "256", "--no-enable-chunked-prefill")
    assert "is smaller than max_model_len (512)" in errors(res)["SchedulerConfig.verify_max_model_len"]
    res = check(llama, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 0}')
    assert "greater than zero (0)" in errors(res)["SpeculativeConfig._verify_args"]
    assert not errors(check(llama, "--max-num-batched-tokens", "1024"))


def test_layer_words_each_release_reads(tmp_path):
    """Granite's model code reads 'attention'/'mamba' up to 0.25, both spellings 0.26-0.31, and only the
    Transformers 5 words from 0.32 (ALL_DECODER_LAYER_TYPES, extracted per release)."""
    t5 = model(tmp_path, GRANITE)
    old = model(tmp_path, {**GRANITE, "layer_types": ["mamba", "attention", "mamba"]}, "old")
    nm = lambda r: " ".join(f.message for f in r.findings if f.rule == "not_modelled")  # noqa: E731
    assert "layer_types" in nm(check(t5, version="0.22.1", gpu="H100", entry="serve"))
    assert "layer_types" not in nm(check(t5, version="0.28.0", gpu="H100", entry="serve"))
    assert "layer_types" not in nm(check(old, version="0.32.0"))  # its Transformers (>= 5.16) maps the old words
    # (NemotronH MoE 'E' layers arrived in 0.11.1; the pre-flight covers >= 0.17, so the word check is exercised
    # directly on the release table)
    from vllm_diag.preflight.hfconfig import facts_from_config as ffc
    from vllm_diag.preflight.predict import _layer_words_check

    moe = ffc({**NEMOTRON, "layers_block_type": ["linear_attention", "moe", "full_attention"]})
    assert _layer_words_check(moe, (0, 11, 0), {})[0].message == "'E'"
    assert not _layer_words_check(moe, (0, 17, 0), {})
