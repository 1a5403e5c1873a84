"""`vllm-diag check` on the five seed configurations (vLLM issues #43626, #41560, #43457, #38196, #39809): finding, numbers, re-checked suggestion.

Each seed is the user's own command from the bug report (the LLM(...) one of #38196 as its serve
equivalent), with the vLLM version and GPU the report names. The bundled demo configs
(package data, ``diag/data/configs/``) stand in for the Hugging Face config.json files.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_diag.cli import main
from vllm_diag.preflight import run_check

SEEDS = {
    "43626_dense_draft_hybrid": dict(
        version="0.20.2", gpu="RTX PRO 6000",
        command="vllm serve Qwen/Qwen3-Coder-Next-80B-A3B-NVFP4 --kv-cache-dtype fp8_e4m3 "
                "--speculative-config '{\"model\": \"LocoOperator/LocoOperator-4B\", \"num_speculative_tokens\": 3}'",
        rule="kv_unify_mamba_assert", category="kv_page_size",
        numbers={"page_size": 1_146_880, "max_page_size": 2_293_760}),
    "41560_turboquant_hybrid": dict(
        version="0.20.0", gpu="RTX 3090",
        command="""python -m vllm.entrypoints.openai.api_server \\
  --model Intel/Qwen3.6-27B-int4-AutoRound \\
  --quantization auto_round \\
  --kv-cache-dtype turboquant_4bit_nc \\
  --max-model-len 96000 \\
  --gpu-memory-utilization 0.97 \\
  --compilation-config '{"cudagraph_mode":"PIECEWISE","cudagraph_capture_sizes":[1]}' \\
  --no-scheduler-reserve-full-isl \\
  --language-model-only \\
  --skip-mm-profiling \\
  --trust-remote-code""",
        rule="kv_quant_hybrid", category="kv_page_size",
        numbers={"alignment_bytes_per_token": 2048, "real_bytes_per_token": 1048}),
    "43457_dsv4_next_n": dict(
        version="0.20.2", gpu="H200",
        command="vllm serve canada-quant/DeepSeek-V4-Flash-W4A16-FP8-MTP -tp 2 "
                "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        rule="dsa_next_n", category="spec_kernel_limit", numbers={"next_n": 3, "allowed_next_n": [1, 2]}),
    "38196_gdn_ngram_mixed": dict(
        version="0.17.2", gpu="GH200",
        command="vllm serve Qwen/Qwen3.5-9B --trust-remote-code --quantization fp8 --max-model-len 32768 "
                "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 128, "
                "\"prompt_lookup_max\": 12, \"prompt_lookup_min\": 2}'",
        rule="gdn_mixed_batch", category="mixed_batch", numbers={}),
    "39809_nemotron_pc_mtp": dict(
        version="0.19.0", gpu="B200",
        command="""vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 \\
  --enable-prefix-caching \\
  --kv-cache-dtype fp8 \\
  --dtype bfloat16 \\
  --trust-remote-code \\
  --gpu-memory-utilization 0.90 \\
  --max-model-len 21525 \\
  --tensor-parallel-size 4 \\
  --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'""",
        rule="mamba_state_indices", category="state_index",
        numbers={"state_indices_width": 6, "block_table_width": 7}),
}


@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_is_diagnosed_with_numbers_and_a_verified_suggestion(name):
    seed = SEEDS[name]
    result = run_check(seed["command"], version=seed["version"], gpu=seed["gpu"])
    assert result.exit_code == 1
    found = [f for f in result.findings if f.rule == seed["rule"]]
    assert found, [f.rule for f in result.findings]
    f = found[0]
    assert f.category == seed["category"] and f.severity == "error"
    for key, value in seed["numbers"].items():
        assert f.numbers.get(key) == value, (key, f.numbers)
    assert f.comparisons or f.numbers
    assert f.suggestions, "no suggestion survived the re-check"
    cmd_suggestions = [s for s in f.suggestions if s.diff and not s.diff[0].startswith("#")]
    assert cmd_suggestions, "only version upgrades were suggested"
    for s in f.suggestions:
        assert s.verified and seed["rule"] in s.verification and s.tradeoff
    # the first command-level suggestion, run through check again, no longer has this finding
    best = cmd_suggestions[0]
    again = run_check(best.command, version=seed["version"], gpu=seed["gpu"], suggest=False)
    assert not [g for g in again.findings if g.rule == seed["rule"]]
    assert not [g for g in again.findings if g.severity == "error" and g.rule not in {x.rule for x in result.findings}]
    # minimal diff in the user's own spelling
    for line in best.diff:
        assert line[:2] in ("- ", "+ ")
        if line.startswith("- "):
            assert line[2:] in " ".join(seed["command"].replace("\\\n", " ").split())


def test_seed_suggestion_texts_are_the_expected_ones():
    r = run_check(SEEDS["43457_dsv4_next_n"]["command"], version="0.20.2", gpu="H200")
    f = next(f for f in r.findings if f.rule == "dsa_next_n")
    assert f.suggestions[0].diff == ["- --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
                                     "+ --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"]
    assert "speculative-config:" in f.suggestions[0].yaml and "num_speculative_tokens: 1" in f.suggestions[0].yaml
    r = run_check(SEEDS["39809_nemotron_pc_mtp"]["command"], version="0.19.0", gpu="B200")
    f = next(f for f in r.findings if f.rule == "mamba_state_indices")
    assert f.suggestions[0].title.startswith("turn MTP/speculative decoding off")
    assert "~10-15% lower decode throughput, keeps prefix caching" in f.suggestions[0].tradeoff
    # Bug 2 of #39809 (token-vs-request slicing) on the same >= 70 GiB GPU: 512 rows vs 256 requests
    g = next(f for f in r.findings if f.rule == "mamba_state_slicing")
    assert (g.numbers["sliced_rows"], g.numbers["num_decodes"]) == (512, 256)


@pytest.mark.parametrize("version, fires", [("0.20.2", True), ("0.25.1", True), ("0.26.0", False), ("0.28.0", False),
                                            ("0.32.0", False)])
def test_rule_versions_follow_the_fix(version, fires):
    r = run_check(SEEDS["43626_dense_draft_hybrid"]["command"], version=version, gpu="RTX PRO 6000", suggest=False)
    assert any(f.rule == "kv_unify_mamba_assert" for f in r.findings) is fires
    assert (r.exit_code == 1) is fires


def test_dsv4_next_n_depends_on_the_gpu():
    cmd = SEEDS["43457_dsv4_next_n"]["command"]
    assert not [f for f in run_check(cmd, version="0.20.2", gpu="B200", suggest=False).findings if f.rule == "dsa_next_n"]
    unknown = [f for f in run_check(cmd, version="0.20.2", suggest=False).findings if f.rule == "dsa_next_n"]
    assert unknown and unknown[0].severity == "warning" and unknown[0].missing_evidence


# ------------------------------------------------------------------------------ CLI, store, apply


def test_cli_check_exit_codes_and_json(capsys):
    seed = SEEDS["43457_dsv4_next_n"]
    rc = main(["check", "--vllm-version", "0.20.2", "--gpu", "H200", "--json", "--", *_argv(seed["command"])])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["exit_code"] == 1 and out["findings"][0]["rule"] == "dsa_next_n"
    assert out["state"]["source"] == "predicted"
    rc = main(["check", "--vllm-version", "0.20.2", "--gpu", "H200", "--", "vllm", "serve",
               "canada-quant/DeepSeek-V4-Flash-W4A16-FP8-MTP", "-tp", "2", "--speculative-config",
               '{"method":"mtp","num_speculative_tokens":1}'])
    text = capsys.readouterr().out
    assert rc == 0 and "verdict: no finding stops this engine" in text


def _argv(command: str) -> list[str]:
    from vllm_diag.serve import tokenize

    return [t.value for t in tokenize(command)]


@pytest.mark.parametrize("argv, message", [
    (["check", "--", "vllm", "serve", "nobody/unknown-model-xyz"], "config.json not found"),
    (["check", "--", "vllm", "serve", "m", "--speculative-config", "{bad"], "not valid JSON"),
    (["check"], "no command to check"),
    (["check", "--vllm-version", "banana", "--", "vllm", "serve", "Qwen/Qwen3.5-9B"], "expected a version"),
    (["suggest", "--db", "/nonexistent/x.db"], "no such file"),
])
def test_cli_bad_input_is_one_line(argv, message, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # hermetic: no Hub request (tests/test_preflight_hub.py covers fetching)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_check_db_then_suggest_apply(tmp_path, capsys):
    db = tmp_path / "d.db"
    seed = SEEDS["39809_nemotron_pc_mtp"]
    cmdfile = tmp_path / "cmd.sh"
    cmdfile.write_text(seed["command"])
    rc = main(["check", "--vllm-version", "0.19.0", "--gpu", "B200", "--db", str(db), "--file", str(cmdfile)])
    out = capsys.readouterr().out
    assert rc == 1 and "stored session" in out
    from vllm_diag.store import Store

    with Store.open(db) as store:
        rec = store.load(None)
    assert rec.session.kind == "check" and rec.session.status == "failed"
    assert rec.state.kv_cache_groups and rec.state.builder_buffers
    assert any(f.rule == "mamba_state_indices" and f.suggestions for f in rec.findings)
    assert main(["suggest", "--db", str(db)]) == 0
    listing = capsys.readouterr().out
    assert "1. [mamba_state_indices] turn MTP/speculative decoding off" in listing
    rc = main(["suggest", rec.session.id, "--db", str(db), "--apply", "1", "--out", str(tmp_path)])
    assert rc == 0
    sh = tmp_path / f"vllm-diag-{rec.session.id}-s1.sh"
    yml = tmp_path / f"vllm-diag-{rec.session.id}-s1.yaml"
    assert sh.exists() and yml.exists()
    body = sh.read_text()
    command = "\n".join(line for line in body.splitlines() if not line.startswith("#"))
    assert "--speculative-config" not in command and "--enable-prefix-caching" in command
    assert "remove the `speculative-config` key" in yml.read_text()
    # the written command passes the same rule
    again = run_check(command, version="0.19.0", gpu="B200", suggest=False)
    assert not [f for f in again.findings if f.rule == "mamba_state_indices"]
    capsys.readouterr()
    rc = main(["suggest", rec.session.id, "--db", str(db), "--apply", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "already exists" in err and err.count("\n") == 1
    assert main(["suggest", rec.session.id, "--db", str(db), "--apply", "99", "--out", str(tmp_path)]) == 2


def test_cold_cli_check_is_fast():
    """Not the benchmark (benchmarks/check_speed.py): a guard that the default path never imports vLLM."""
    code = ("import sys, time; t=time.perf_counter(); from vllm_diag.cli import main; "
            "rc = main(['check', '--vllm-version', '0.19.0', '--gpu', 'B200', '--json', '--', 'vllm', 'serve', "
            "'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B', '--enable-prefix-caching', '--speculative-config', "
            "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}']); "
            "assert 'vllm' not in sys.modules and 'torch' not in sys.modules, 'imported vllm/torch'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]


# ------------------------------------------------------------------------------ robustness

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_MODELS = ["Qwen/Qwen3.5-9B", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B", "deepseek-ai/DeepSeek-V4-Flash",
           "Qwen/Qwen3-Coder-Next-80B-A3B", "LocoOperator/LocoOperator-4B"]
_VALUES = st.sampled_from(["0", "1", "2", "16", "-3", "32K", "auto", "fp8", "x", "{}", "[1]", "0.5", "{\"method\": \"mtp\"}"])
_FLAGS = st.sampled_from(["--max-model-len", "--block-size", "--max-num-seqs", "--tensor-parallel-size", "--kv-cache-dtype",
                          "--mamba-cache-mode", "--max-num-batched-tokens", "--gpu-memory-utilization",
                          "--speculative-config", "--compilation-config", "--speculative-config.num_speculative_tokens",
                          "--speculative-config.method", "--compilation-config.cudagraph_mode"])
_BOOLS = st.sampled_from(["--enable-prefix-caching", "--no-enable-prefix-caching", "--enforce-eager", "--trust-remote-code"])


@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(_MODELS), pairs=st.lists(st.tuples(_FLAGS, _VALUES), max_size=4),
       bools=st.lists(_BOOLS, max_size=2), version=st.sampled_from(["0.17.1", "0.19.0", "0.20.2", "0.28.0", "0.32.0"]),
       gpu=st.sampled_from(["H100", "B200", "cpu", "RTX 3090"]))
def test_check_never_crashes(model, pairs, bools, version, gpu, capsys):
    argv = ["vllm", "serve", model] + [x for p in pairs for x in p] + bools
    rc = main(["check", "--vllm-version", version, "--gpu", gpu, "--json", "--", *argv])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2)
    if rc == 2:
        assert err.startswith("vllm-diag: ") and err.count("\n") == 1
    else:
        assert json.loads(out)["exit_code"] == rc


def test_check_reads_a_yaml_config_and_patches_on_the_command_line(tmp_path, capsys):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("enable-prefix-caching: true\nkv-cache-dtype: fp8\nmax-model-len: 21525\ntensor-parallel-size: 4\n"
                   "speculative-config:\n  method: mtp\n  num_speculative_tokens: 1\n")
    r = run_check(f"vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 --config {cfg}", version="0.19.0", gpu="B200")
    f = next(f for f in r.findings if f.rule == "mamba_state_indices")
    s = next(s for s in f.suggestions if s.title.startswith("turn prefix caching off"))
    assert s.diff == ["+ --no-enable-prefix-caching"]  # CLI overrides the YAML value
    assert s.yaml.strip() == "enable-prefix-caching: false"
    rc = main(["check", "--vllm-version", "0.19.0", "--gpu", "B200", "--", "vllm", "serve",
               "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "--config", str(cfg)])
    out = capsys.readouterr().out
    assert rc == 1 and "as a `vllm serve --config` fragment" in out
