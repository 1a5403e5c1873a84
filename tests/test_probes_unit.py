"""Probes without an engine: redaction, process detection, the recorder's failure handling,
NVML facts with and without a GPU, hook-point resolution, and the notes added to exceptions."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from vllm_diag.model import BatchStep, LayerSpec, ProcessInfo, SessionInfo
from vllm_diag.store import Store, new_session_id
from vllm_diag.probes import adapters, gpu
from vllm_diag.probes.adapters.common import HookPoint, install_points, version_tuple
from vllm_diag.probes.hooks import Probe, shape_mismatch_details, unify_failure_details
from vllm_diag.redact import redact_argv, redact_env
from vllm_diag.probes.plugin import detect_process
from vllm_diag.probes.recorder import Recorder

REPO = Path(__file__).resolve().parents[1]


def _recorder(db, owner=True, **kw) -> Recorder:
    sid = new_session_id()
    return Recorder(str(db), SessionInfo(id=sid, kind="engine", started_at=time.time()),
                    ProcessInfo(pid=os.getpid(), role="main"), owner=owner, **kw)


# ------------------------------------------------------------------------------ redaction


def test_redact_env_and_argv():
    env = {"HF_TOKEN": "hf_abcdefghijklmnopqrstu", "OPENAI_API_KEY": "sk-x", "MY_SECRET": "s", "VLLM_API_KEY": "k",
           "VLLM_CPU_KVCACHE_SPACE": "1", "CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/root", "GH_AUTH": "x",
           "VLLM_SOMETHING": "hf_abcdefghijklmnopqrstuvwx"}
    out = redact_env(env)
    assert out["HF_TOKEN"] == out["OPENAI_API_KEY"] == out["MY_SECRET"] == out["VLLM_API_KEY"] == "<redacted>"
    assert out["GH_AUTH"] == "<redacted>" and out["VLLM_SOMETHING"] == "<redacted>"
    assert out["VLLM_CPU_KVCACHE_SPACE"] == "1" and out["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "HOME" not in out  # only engine-relevant variables are kept
    argv = ["vllm", "serve", "m", "--api-key", "abc", "--hf-token=hf_x", "--max-num-seqs", "8",
            "--some-secret", "zz", "hf_abcdefghijklmnopqrstu"]
    assert redact_argv(argv) == ["vllm", "serve", "m", "--api-key", "<redacted>", "--hf-token=<redacted>",
                                 "--max-num-seqs", "8", "--some-secret", "<redacted>", "<redacted>"]


def test_a_setting_whose_name_holds_token_is_not_a_secret():
    """--max-num-batched-tokens is a token budget, VLLM_..._TOKENS a count: a secret's name has TOKEN as a whole part."""
    argv = ["vllm", "serve", "m", "--max-num-batched-tokens", "256", "--max-tokens=64", "--hf-token", "hf_x"]
    assert redact_argv(argv) == ["vllm", "serve", "m", "--max-num-batched-tokens", "256", "--max-tokens=64",
                                 "--hf-token", "<redacted>"]
    out = redact_env({"VLLM_MAX_TOKENS_PER_STEP": "4096", "HUGGING_FACE_HUB_TOKEN": "x", "AUTHOR": "me"})
    assert out == {"VLLM_MAX_TOKENS_PER_STEP": "4096", "HUGGING_FACE_HUB_TOKEN": "<redacted>"}


@pytest.mark.parametrize(
    "name, expected",
    [("EngineCore", ("engine_core", None)), ("EngineCore_DP1", ("engine_core", 1)), ("VllmWorker-3", ("worker", 3)),
     ("ApiServer_0", ("api_server", 0)), ("MainProcess", ("main", None)), ("SomethingElse-2", ("other", 2))],
)
def test_detect_process(monkeypatch, name, expected):
    import multiprocessing

    monkeypatch.setattr(multiprocessing.current_process(), "name", name)
    assert detect_process() == expected


def test_plugin_inert_and_isolated():
    """Without VLLM_DIAG_DB register() does nothing; probes/ modules import neither vllm nor torch."""
    code = (
        "import os, sys; os.environ.pop('VLLM_DIAG_DB', None)\n"
        "import vllm_diag.probes.plugin as p, vllm_diag.probes.recorder, vllm_diag.probes.hooks, vllm_diag.probes.extract, vllm_diag.probes.gpu, vllm_diag.probes.adapters\n"
        "p.register(); assert p.current_probe() is None\n"
        "bad = [m for m in ('vllm', 'torch') if m in sys.modules]; assert not bad, bad\n"
        "print('OK')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr


# ------------------------------------------------------------------------------ recorder


def test_recorder_writes_and_marks_status(tmp_path):
    db = tmp_path / "r.db"
    rec = _recorder(db, flush_interval=0.05)
    rec.set_items("engine_config", {"block_size": 16})
    rec.add_rows("layer_specs", [LayerSpec(layer_name="l0", spec_type="FullAttentionSpec", block_size=16)])
    for i in range(5):
        rec.add_step(BatchStep(step_index=i + 1, num_reqs=1, num_decodes=1, num_tokens=1))
    assert rec.flush(10)
    rec.close()
    with Store.open(db) as store:
        r = store.load(rec.session.id)
    assert r.session.status == "ok" and r.session.ended_at
    assert r.state.config["block_size"] == 16 and len(r.state.steps) == 5 and len(r.state.layer_specs) == 1
    assert r.processes[0].role == "main"


def test_recorder_bounded_buffer_drops_oldest(tmp_path):
    rec = _recorder(tmp_path / "r.db", flush_interval=60, max_steps=10)
    for i in range(25):
        rec.add_step(BatchStep(step_index=i + 1))
    assert rec.dropped_steps == 15 and [s.step_index for s in rec._steps][0] == 16
    rec.close()
    with Store.open(tmp_path / "r.db") as store:
        r = store.load(rec.session.id)
    assert [s.step_index for s in r.state.steps] == list(range(16, 26))
    assert r.state.environment["probe_dropped_steps"] == 15


def test_recorder_steps_aside_once(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING, logger="vllm_diag.probes"):
        logging.getLogger().addHandler(logging.NullHandler())
        rec = _recorder(blocker / "r.db", flush_interval=0.05)
        rec.add_step(BatchStep(step_index=1))
        rec.flush(5)
        for i in range(100):  # everything after the failure is dropped silently
            rec.add_step(BatchStep(step_index=i))
            rec.set_items("environment", {"x": i})
        rec.close()
    lines = [r.getMessage() for r in caplog.records if "cannot write" in r.getMessage()]
    assert len(lines) == 1 and "unable to open database file" in lines[0] and "step aside" in lines[0]
    assert not rec.enabled and rec.failure


def test_recorder_errors_mark_failed(tmp_path):
    from vllm_diag.model import ErrorRecord

    rec = _recorder(tmp_path / "r.db", owner=False, flush_interval=0.05)
    rec.add_error(ErrorRecord(exc_type="AssertionError", message=""))
    assert rec.flush(10)
    with Store.open(tmp_path / "r.db") as store:
        assert store.load(rec.session.id).session.status == "failed"
    rec.close()


# ------------------------------------------------------------------------------ GPU facts


def test_gpu_facts_without_gpu():
    facts = gpu.gpu_facts()
    assert facts["gpu_count"] == "not available" and facts["gpus"] == "not available"
    assert facts["gpu_unavailable_reason"]
    assert not gpu.NA and str(gpu.NA) == "N/A" and gpu.nvml_query("nvmlDeviceGetCount") is gpu.NA


def test_gpu_facts_with_fake_nvml(monkeypatch):
    """The NVML path, against a stand-in pynvml module that reports one H100 (and fails one query)."""
    fake = types.ModuleType("pynvml")
    fake.nvmlInit = lambda: None
    fake.nvmlDeviceGetCount = lambda: 1
    fake.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)
    fake.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    fake.nvmlDeviceGetUUID = lambda h: "GPU-1"
    fake.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    fake.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=85899345920, used=1 << 20)

    def unsupported(h):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    fake.nvmlDeviceGetPowerManagementLimit = unsupported
    fake.nvmlSystemGetDriverVersion = lambda: "580.1"
    fake.nvmlSystemGetCudaDriverVersion = lambda: 13000
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(gpu, "_state", {"initialised": None, "error": None})
    facts = gpu.gpu_facts()
    assert facts["gpu_count"] == 1 and facts["cuda_driver_version"] == "13.0"
    [d] = facts["gpus"]
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d["compute_capability"] == "9.0" and d["is_hopper"] is True
    assert d["memory_total_bytes"] == 85899345920 and d["power_limit_mw"] == "not available"


# ------------------------------------------------------------------------------ adapters


def test_version_gates():
    assert version_tuple("0.32.0+cpu") == (0, 32, 0) and version_tuple("0.20.2") == (0, 20, 2)
    assert adapters.planning_module("0.33.0") == "vllm.v1.core.kv_cache_planning"
    assert adapters.planning_module("0.32.0") == adapters.planning_module("0.20.2") == "vllm.v1.core.kv_cache_utils"
    probe = types.SimpleNamespace(**{n: (lambda f: f) for n in (
        "wrap_get_kv_cache_groups", "wrap_unify", "wrap_initialize_kv_caches", "wrap_executor_specs", "wrap_flush_after",
        "wrap_runner_kv_spec", "wrap_runner_initialize_kv_cache", "wrap_execute_model", "wrap_sample_tokens",
        "wrap_idle_flush", "wrap_warmup")}, wrap_phase=lambda p: (lambda f: f),
        wrap_runner_phase=lambda p: (lambda f: f))
    names = lambda pts: {f"{p.module}:{p.qualname}" for p in pts}
    assert "vllm.v1.core.kv_cache_planning:get_kv_cache_groups_from_builder" in names(adapters.planning_points("0.33.0", probe))
    gpu_pts = names(adapters.runner_points("0.33.0", probe, is_cpu=False))
    assert "vllm.v1.worker.gpu.model_runner:GPUModelRunner.initialize_kv_cache" in gpu_pts  # model runner V2
    assert not any("worker.gpu.model_runner" in n for n in names(adapters.runner_points("0.32.0", probe, is_cpu=True)))
    assert "vllm.v1.worker.gpu_worker:warmup_kernels" in gpu_pts  # V2's warm-up steps are not the engine's
    v2_old = [p for p in adapters.runner_points("0.20.2", probe, is_cpu=False) if p.module.endswith("gpu.model_runner")]
    assert v2_old and all(p.optional for p in v2_old)  # opt-in runner before 0.22: absent is normal


def test_missing_hook_point_logs_one_line(caplog):
    mod = types.ModuleType("fake_vllm_mod")
    mod.present = lambda x: x + 1
    sys.modules["fake_vllm_mod"] = mod
    try:
        calls = []

        def factory(orig):
            def w(*a):
                calls.append(a)
                return orig(*a)
            return w

        with caplog.at_level(logging.WARNING, logger="vllm_diag.probes"):
            logging.getLogger().addHandler(logging.NullHandler())
            out = install_points([HookPoint("fake_vllm_mod", "present", factory, "x"),
                                  HookPoint("fake_vllm_mod", "gone", factory, "the gone thing"),
                                  HookPoint("no_such_module_zz", "f", factory, "y", optional=True)], "9.9.9")
            again = install_points([HookPoint("fake_vllm_mod", "present", factory, "x")], "9.9.9")
        assert out["fake_vllm_mod:present"] == "ok" and out["fake_vllm_mod:gone"].startswith("missing")
        assert out["no_such_module_zz:f"].startswith("missing")
        assert mod.present(1) == 2 and calls == [(1,)]  # wrapped once, though installed twice
        assert again["fake_vllm_mod:present"] == "ok"
        msgs = [r.getMessage() for r in caplog.records]
        assert len(msgs) == 1 and "fake_vllm_mod:gone not found in vLLM 9.9.9" in msgs[0] and "the gone thing" in msgs[0]
    finally:
        del sys.modules["fake_vllm_mod"]


# ------------------------------------------------------------------------------ hooks


def test_wrappers_return_unchanged_and_reraise_same_exception(tmp_path):
    rec = _recorder(tmp_path / "r.db", flush_interval=0.05)
    probe = Probe(rec, "0.32.0")
    sentinel = object()
    ok = probe.wrap_phase("init")(lambda *a, **k: sentinel)
    assert ok(1, x=2) is sentinel
    err = ValueError("boom")

    def bad():
        raise err

    with pytest.raises(ValueError) as info:
        probe.wrap_phase("init")(bad)()
    assert info.value is err and str(err) == "boom"
    assert any(str(tmp_path / "r.db") in n for n in err.__notes__)
    assert rec.flush(10)
    rec.close()
    with Store.open(tmp_path / "r.db") as store:
        [e] = store.load(rec.session.id).state.errors
    assert e.exc_type == "ValueError" and e.location.endswith("in bad")


def test_unify_note_from_real_032_specs(tmp_path):
    """0.32's unify raises NotImplementedError for an MLA page that does not divide the max page;
    the probe names the layer and both page sizes."""
    torch = pytest.importorskip("torch")
    from vllm.v1.core import kv_cache_utils as kcu
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec

    rec = _recorder(tmp_path / "r.db", flush_interval=0.05)
    probe = Probe(rec, "0.32.0")
    unify = probe.wrap_unify(kcu.unify_kv_cache_spec_page_size)
    specs = {
        "a": FullAttentionSpec(block_size=16, num_kv_heads=5, head_size=64, dtype=torch.bfloat16),
        "mla": MLAAttentionSpec(block_size=16, num_kv_heads=1, head_size=576, dtype=torch.bfloat16),
    }
    with pytest.raises(NotImplementedError) as info:
        unify(specs)
    note = next(n for n in info.value.__notes__ if "unify_kv_cache_spec_page_size failed" in n)
    big, small = specs["a"].page_size_bytes, specs["mla"].page_size_bytes
    assert big > small and big % small != 0
    assert "'mla'" in note and "MLAAttentionSpec" in note and f"page {small} B" in note
    assert f"largest page is {big} B (layers a)" in note
    numbers, _ = unify_failure_details(info.value, specs)
    assert numbers["offending_layer"] == "mla" and numbers["max_page_size"] == big
    rec.close()


def test_shape_mismatch_note():
    from vllm_diag.model import BlockTable, BuilderBuffer

    msg = "The size of tensor a (4) must match the size of tensor b (7) at non-singleton dimension 1"
    note, numbers = shape_mismatch_details(
        msg, [BlockTable(group_index=0, rows=4, columns=7, derivation="cdiv(512, 128) + 3")],
        [BuilderBuffer(group_index=0, builder="GDN", name="spec_state_indices_tensor", shape=[8, 4])])
    assert "dimension 1" in note and "block table of group 0 [4, 7]" in note and "GDN.spec_state_indices_tensor [8, 4]" in note
    assert numbers["tensor_a_size"] == 4 and numbers["tensor_b_size"] == 7
    assert shape_mismatch_details("something else", [], []) == (None, {})


def test_bare_assert_values_from_real_032_mamba_spec(tmp_path):
    """A MambaSpec padded below its real page (the #57721 family): 0.32's bare
    ``assert self.page_size_padded >= page_size`` gets a note with both values."""
    torch = pytest.importorskip("torch")
    from vllm.v1.kv_cache_interface import MambaSpec

    rec = _recorder(tmp_path / "r.db", flush_interval=0.05)
    probe = Probe(rec, "0.32.0")
    spec = MambaSpec(block_size=16, shapes=((4, 64), (2, 8, 8)), dtypes=(torch.bfloat16, torch.float32),
                     page_size_padded=512)
    real = 4 * 64 * 2 + 2 * 8 * 8 * 4
    with pytest.raises(AssertionError) as info:
        probe.wrap_phase("init")(lambda: spec.page_size_bytes)()
    assert str(info.value) == ""
    note = info.value.__notes__[0]
    assert "assert self.page_size_padded >= page_size" in note and "self.page_size_padded=512" in note
    assert f"page_size={real}" in note
    assert rec.flush(10)
    rec.close()
    with Store.open(tmp_path / "r.db") as store:
        [err] = store.load(rec.session.id).state.errors
    assert err.numbers["assert_values"] == {"self.page_size_padded": 512, "page_size": real}


def test_forked_child_records_as_its_own_process(tmp_path):
    """GPU hosts fork EngineCore/workers by default: the child inherits vLLM's plugins_loaded flag
    and our recorder without its thread. Its own load_general_plugins() call (as in
    EngineCore.__init__) must give it its own pid/role, hooks and writer."""
    pytest.importorskip("vllm")  # the child runs vLLM's own plugin loader
    db = tmp_path / "fork.db"
    code = r'''
import json, multiprocessing, os, sys, time
os.environ["VLLM_DIAG_DB"] = sys.argv[1]
os.environ.pop("VLLM_DIAG_SESSION", None)
import vllm.plugins as vp
vp.load_general_plugins()                      # the parent: vLLM loads our entry point
import vllm_diag.probes.plugin as pp
from vllm_diag.model import BatchStep
parent = pp.current_probe()
assert parent is not None and parent.rec.flush(20)
pid = os.fork()
if pid == 0:
    code = 1
    try:
        multiprocessing.current_process().name = "EngineCore"   # what multiprocessing sets in the child
        vp.load_general_plugins()              # EngineCore.__init__'s call; plugins_loaded is inherited
        p = pp.current_probe()
        p.rec.add_step(BatchStep(step_index=1, num_reqs=1, num_prefills=1, num_prefill_tokens=5, num_tokens=5))
        code = 0 if p.rec.flush(20) and p.rec.pid == os.getpid() else 2
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
parent.rec.add_step(BatchStep(step_index=7))
assert parent.rec.flush(20)
print("CHILD", pid, os.waitstatus_to_exitcode(status), "PARENT", os.getpid(), flush=True)
'''
    r = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    _, child, rc, _, parent = r.stdout.split()[-5:]
    assert rc == "0", r.stderr[-3000:]
    with Store.open(db) as store:
        rec = store.load()
        roles = {p.pid: p for p in rec.processes}
        assert roles[int(parent)].role == "main" and roles[int(child)].role == "engine_core"
        assert roles[int(child)].ppid == int(parent)
        steps = dict(store.db.execute("select pid, step_index from batch_steps").fetchall())
        hooks = dict(store.db.execute("select pid, value from environment where key='probe_hooks'").fetchall())
    assert steps == {int(child): 1, int(parent): 7}
    assert '"vllm.v1.engine.core:EngineCore._initialize_kv_caches":"ok"' in hooks[int(child)]
    # MP mode: the main process hooks nothing in the engine, only where vLLM validates the config and
    # where it stops the engine's processes
    assert json.loads(hooks[int(parent)]) == {"vllm.engine.arg_utils:EngineArgs.create_engine_config": "ok",
                                              "vllm.v1.engine.utils:CoreEngineProcManager.shutdown": "ok"}


def test_recorder_flushes_when_steps_pause(tmp_path):
    """A burst of steps followed by a pause is written within about half a second even with a long
    flush interval (an engine killed after its last request loses nothing)."""
    rec = _recorder(tmp_path / "r.db", flush_interval=60)
    assert rec.flush(10)
    for i in range(3):
        rec.add_step(BatchStep(step_index=i + 1, num_reqs=1))
    deadline = time.time() + 5
    n = 0
    while time.time() < deadline and n < 3:
        time.sleep(0.1)
        with Store.open(tmp_path / "r.db") as store:
            n = len(store.load(rec.session.id).state.steps)
    assert n == 3 and time.time() < deadline
    rec.close()


def test_step_split_with_async_scheduling():
    """With async scheduling (vLLM's default on GPUs) a request's output count still reads 0 at its
    first decode steps; the split compares computed tokens with the prompt length instead (seen on
    vLLM 0.26 Model Runner V2: 16 decode tokens of 8 requests counted as prefill)."""
    from types import SimpleNamespace as NS

    from vllm_diag.probes.extract import step_from_scheduler_output

    def so(new=(), cached=(), counts=None, spec=None, finished=()):
        return NS(scheduled_new_reqs=[NS(req_id=r, prompt_token_ids=[0] * p, num_computed_tokens=c) for r, p, c in new],
                  scheduled_cached_reqs=NS(req_ids=[r for r, _, _ in cached], num_computed_tokens=[c for _, c, _ in cached],
                                           num_output_tokens=[o for _, _, o in cached]),
                  num_scheduled_tokens=counts, total_num_scheduled_tokens=sum(counts.values()),
                  scheduled_spec_decode_tokens=spec or {}, finished_req_ids=set(finished))

    lens: dict = {}
    s1 = step_from_scheduler_output(1, so(new=[("a", 5, 0), ("b", 40, 8)], counts={"a": 5, "b": 16}), None, 0.0, lens)
    assert (s1.num_prefills, s1.num_prefill_tokens, s1.num_decodes) == (2, 21, 0)
    # a's first decode: output count still 0 (async); b's prompt continues (chunked prefill)
    s2 = step_from_scheduler_output(2, so(cached=[("a", 5, 0), ("b", 24, 0)], counts={"a": 1, "b": 16}), None, 0.0, lens)
    assert (s2.num_decodes, s2.num_decode_tokens, s2.num_prefills, s2.num_prefill_tokens) == (1, 1, 1, 16)
    # b's last prompt token alone is still prefill; a spec-decodes
    s3 = step_from_scheduler_output(3, so(cached=[("a", 6, 1), ("b", 39, 0)], counts={"a": 3, "b": 1}, spec={"a": [7, 7]}),
                                    None, 0.0, lens)
    assert (s3.num_spec_decodes, s3.num_spec_decode_tokens, s3.num_prefills, s3.num_prefill_tokens) == (1, 3, 1, 1)
    step_from_scheduler_output(4, so(cached=[("b", 40, 1)], counts={"b": 1}, finished=["a"]), None, 0.0, lens)
    assert lens == {"b": 40}
    # without a known prompt length (probe started mid-request), the output count decides
    s5 = step_from_scheduler_output(5, so(cached=[("z", 9, 2)], counts={"z": 1}), None, 0.0, {})
    assert s5.num_decodes == 1


def test_v2_warmup_steps_are_not_recorded(tmp_path):
    """Model Runner V2 warms its kernels up by calling execute_model on synthetic requests (vLLM 0.26
    gpu/warmup.py warmup_kernels): inside the wrapped warm-up no step row is recorded."""
    from types import SimpleNamespace as NS

    rec = _recorder(tmp_path / "r.db")
    probe = Probe(rec, "0.26.0")
    so = NS(scheduled_new_reqs=[NS(req_id="w", prompt_token_ids=[1, 2], num_computed_tokens=0)],
            scheduled_cached_reqs=NS(req_ids=[], num_computed_tokens=[], num_output_tokens=[]),
            num_scheduled_tokens={"w": 2}, total_num_scheduled_tokens=2, scheduled_spec_decode_tokens={},
            finished_req_ids=set())
    execute = probe.wrap_execute_model(lambda self_, so_, *a, **k: "out")
    warmup = probe.wrap_warmup(lambda runner, exec_fn, sample_fn: exec_fn(None, so))
    assert warmup(None, execute, None) == "out" and probe.step_index == 0
    assert execute(None, so) == "out" and probe.step_index == 1
    rec.close()


def test_an_error_in_sample_tokens_is_the_steps_error(tmp_path):
    """Since vLLM split a step into execute_model and sample_tokens (sampling, and the drafter's proposals), a fault
    surfacing in the second half -- a dense draft's index fault on a hybrid (vLLM 0.26, H200) -- is recorded as the
    step's error with the batch execute_model saw, not lost."""
    from types import SimpleNamespace as NS

    from vllm_diag.store import Store

    db = tmp_path / "r.db"
    rec = _recorder(db)
    probe = Probe(rec, "0.26.0")
    so = NS(scheduled_new_reqs=[NS(req_id="p", prompt_token_ids=list(range(40)), num_computed_tokens=0)],
            scheduled_cached_reqs=NS(req_ids=["d"], num_computed_tokens=[30], num_output_tokens=[5]),
            num_scheduled_tokens={"p": 40, "d": 4}, total_num_scheduled_tokens=44,
            scheduled_spec_decode_tokens={"d": [1, 2, 3]}, finished_req_ids=set())
    probe.wrap_execute_model(lambda self_, so_, *a, **k: None)(None, so)

    def sample_tokens(*_a, **_k):
        raise RuntimeError("CUDA error: device-side assert triggered")

    with pytest.raises(RuntimeError):
        probe.wrap_sample_tokens(sample_tokens)(None, None)
    rec.close()
    with Store.open(db) as st:
        [err] = st.load().state.errors
    assert err.phase == "step" and err.numbers["step"]["num_spec_decodes"] == 1
    assert any("1 spec decodes" in n for n in err.notes)


def test_derivations_of_the_11_vs_12_widths():
    """vLLM 0.26.0 sizes the Mamba builder's state_indices_tensor_d cdiv(512, 64) + 3 = 11 columns but
    rounds the Mamba group's block-table row up to a multiple of 128 // 64 = 2 (MultiGroupBlockTable,
    #39324): 12. vLLM 0.32 exempts Mamba (slot mapping NONE) groups from that rounding."""
    from types import SimpleNamespace as NS

    from vllm_diag.probes import extract

    mamba = NS(block_size=64, num_speculative_blocks=3, shapes=[(1, 2)], dtypes=[None])
    vc = NS(cache_config=NS(enable_prefix_caching=True, mamba_cache_mode="all"), model_config=NS(max_model_len=512),
            scheduler_config=NS(max_num_seqs=8), compilation_config=NS(max_cudagraph_capture_size=64))
    d26 = extract.block_table_derivation(mamba, vc, 512, 12, "NONE", "0.26.0", 64)
    assert "= 11" in d26 and "128 // block_size 64 = 2" in d26 and d26.endswith("-> 12")
    assert extract.block_table_derivation(mamba, vc, 512, 11, "NONE", "0.32.0", 64).endswith("= 11")
    assert "does not know" in extract.block_table_derivation(mamba, vc, 512, 13, "NONE", "0.26.0", 64)
    builder = NS(decode_cudagraph_max_bs=8, num_spec_tokens=3)
    buf = extract.buffer_derivation(builder, "state_indices_tensor_d", [8, 11], vc, mamba, "0.26.0")
    assert buf == ("rows: decode_cudagraph_max_bs = min(max_num_seqs 8, max_cudagraph_capture_size 64) = 8; "
                   "columns: mamba all: cdiv(max_model_len 512, block_size 64) + num_speculative_blocks 3 = 11")
    old = extract.buffer_derivation(builder, "state_indices_tensor_d", [8, 8], vc, mamba, "0.20.2")
    assert "no num_speculative_blocks: vLLM < 0.22" in old

    class GDNAttentionMetadataBuilder:
        decode_cudagraph_max_bs = 24
        num_spec = 2

    gdn = GDNAttentionMetadataBuilder()
    assert extract.buffer_derivation(gdn, "spec_state_indices_tensor", [24, 3], vc, mamba, "0.26.0").endswith(
        "columns: num_spec 2 + 1 = 3")
    assert "x (num_spec 2 + 1) = 72" in extract.buffer_derivation(gdn, "spec_token_indx", [72], vc, mamba, "0.26.0")


# ------------------------------------------------------------------------------ diagnosis at engine stop


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def _live_rows(db, key):
    with Store.open(db) as st:
        return dict(st.db.execute("select p.role, e.value from environment e join processes p on p.session_id = "
                                  "e.session_id and p.pid = e.pid where e.key = ?", [key]).fetchall())


@pytest.mark.parametrize("engine_diagnosed", [False, True])
def test_frontend_diagnoses_an_engine_killed_before_its_own_diagnosis(tmp_path, engine_diagnosed):
    """vLLM gives a stopping EngineCore a few seconds after SIGTERM before it kills it; on a loaded
    host its diagnosis at stop may not finish. When CoreEngineProcManager.shutdown returns, the
    API-server/LLM process diagnoses an EngineCore that is gone without having done so -- and
    nobody diagnoses twice (not at this process's exit either, nor after an EngineCore that did)."""
    from vllm_diag.probes import plugin

    db = tmp_path / "stop.db"
    front = _recorder(db)
    engine = Recorder(str(db), front.session, ProcessInfo(pid=_dead_pid(), role="engine_core"))
    if engine_diagnosed:
        engine.set_items("environment", {"live_diagnosis_last": "stop"})
    assert engine.flush(20) and front.flush(20)
    engine.enabled = False  # that process is gone: it writes nothing more

    probe = Probe(front, "0.32.0")
    probe.diagnose_on = "config"
    plugin._wire_diagnosis(probe)
    stopped = probe.wrap_engine_stopped(lambda: "stopped")
    assert stopped() == "stopped"
    front.close()

    done = _live_rows(db, "live_diagnoses")
    skipped = _live_rows(db, "live_diagnosis_skipped")
    if engine_diagnosed:
        assert done == {} and "diagnosed the engine (at its stop)" in skipped["main"]
    else:
        assert done == {"main": "1"}, (done, skipped)  # once: at the shutdown, not again at exit
        assert _live_rows(db, "live_diagnosis_last") == {"main": '"frontend-exit"'}
        assert "already" in skipped["main"]


def test_an_engine_dead_error_ending_the_main_process_is_a_serving_failure(monkeypatch):
    """The main process of an LLM() / vllm serve runs no steps (the EngineCore does): its EngineDeadError is
    the engine dying while serving, not at init (vLLM 0.26, H200: a dense draft's fault two steps in)."""
    from vllm_diag.probes import plugin

    class EngineDeadError(RuntimeError):
        pass

    seen = []
    probe = types.SimpleNamespace(step_index=0, _record_error=lambda exc, phase, notes, nums: seen.append(phase))
    monkeypatch.setattr(sys, "excepthook", lambda *a: None)
    plugin._hook_excepthook(probe)
    sys.excepthook(EngineDeadError, EngineDeadError("EngineCore encountered an issue."), None)
    sys.excepthook(ValueError, ValueError("bad flag"), None)
    assert seen == ["step", "init"]
